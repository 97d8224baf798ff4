//! The sandbox directory under EXECUTE. The starter makes it (EXECUTE is
//! the daemon's own directory) and gives it, still empty, to the job's
//! user; what goes into it and comes out of it is [`crate::transfer`]'s
//! work, done as the user.

use std::fs;
use std::io;
use std::os::unix::fs::DirBuilderExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// A fresh sandbox name: HTCondor's `dir_<pid>`, made unique within the
/// process too.
pub fn fresh_name() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!(
        "dir_{}_{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Makes the sandbox, private (0700).
pub fn create(path: &Path) -> io::Result<()> {
    fs::DirBuilder::new().mode(0o700).create(path)
}

/// Gives the (still empty) sandbox to the job's user, through its
/// descriptor, so that nothing can be swapped in between.
pub fn give_to(path: &Path, owner: Option<(u32, u32)>) -> io::Result<()> {
    if let Some((uid, gid)) = owner {
        let dir = rustix::fs::open(
            path,
            rustix::fs::OFlags::RDONLY
                | rustix::fs::OFlags::DIRECTORY
                | rustix::fs::OFlags::NOFOLLOW
                | rustix::fs::OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
        )?;
        rustix::fs::fchown(
            &dir,
            Some(rustix::fs::Uid::from_raw(uid)),
            Some(rustix::fs::Gid::from_raw(gid)),
        )?;
    }
    Ok(())
}

/// Removes a sandbox and all the job left in it. The standard library's
/// `remove_dir_all` opens each directory without following symlinks and
/// unlinks relative to it, so nothing the job made leads it elsewhere.
pub fn remove(path: &Path) -> io::Result<()> {
    fs::remove_dir_all(path)
}
