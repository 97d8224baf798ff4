//! The state directory: checked before the pool trusts anything in it,
//! its files private, and the socket made where no one can swap it.
//!
//! The pool keeps its job queue, its accountant's figures and its records
//! of running jobs here, and reads them back as truth at start; whoever
//! could write here could queue jobs as anyone, kill processes through a
//! forged record, or take the queue's lock. So, as HTCondor refuses a
//! spool directory that others may write, the pool refuses to start when
//! the directory, or any directory above it up to the first one root
//! owns, belongs to someone else or may be written by someone else (a
//! sticky directory such as `/tmp` is fine: others may not rename what is
//! in it). The files in it are created 0600; the socket, which every local
//! user may connect to, gets its mode in a private directory before it is
//! renamed into place, never by a `chmod` of a path someone could swap.

use std::fs;
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Why the state directory is refused.
#[derive(Debug)]
pub struct Unsafe {
    pub path: PathBuf,
    pub why: String,
}

impl std::fmt::Display for Unsafe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "refusing the state directory: {} {}; a pool trusts what is in its state \
             directory, so no other user may be able to change it",
            self.path.display(),
            self.why
        )
    }
}

fn me() -> u32 {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() }
}

fn user(uid: u32) -> String {
    crate::identity::user_name(uid).unwrap_or_else(|| format!("uid {uid}"))
}

/// Makes the state directory if needed (0755: local users reach the
/// socket in it) and checks it and the directories above it.
pub fn prepare(dir: &Path) -> Result<(), Unsafe> {
    let io_err = |path: &Path, e: io::Error| Unsafe {
        path: path.to_path_buf(),
        why: format!("cannot be made or read: {e}"),
    };
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o755)
        .create(dir)
        .map_err(|e| io_err(dir, e))?;
    let real = fs::canonicalize(dir).map_err(|e| io_err(dir, e))?;
    check_chain(&real, me(), &|p: &Path| {
        fs::metadata(p).map(|m| (m.uid(), m.mode()))
    })
}

/// Checks `dir` (owned by `uid`, written by no one else) and its parents up
/// to the first one root owns. `stat` gives a path's owner and mode.
fn check_chain(
    dir: &Path,
    uid: u32,
    stat: &dyn Fn(&Path) -> io::Result<(u32, u32)>,
) -> Result<(), Unsafe> {
    let refuse = |path: &Path, why: String| Unsafe {
        path: path.to_path_buf(),
        why,
    };
    let (owner, mode) = stat(dir).map_err(|e| refuse(dir, format!("cannot be read: {e}")))?;
    if owner != uid {
        return Err(refuse(
            dir,
            format!(
                "belongs to {}, not to {}, who runs the pool",
                user(owner),
                user(uid)
            ),
        ));
    }
    if mode & 0o022 != 0 {
        return Err(refuse(
            dir,
            format!("may be written by other users (mode {:o})", mode & 0o7777),
        ));
    }
    let mut here = dir.parent();
    while let Some(p) = here {
        let (owner, mode) = stat(p).map_err(|e| refuse(p, format!("cannot be read: {e}")))?;
        let sticky = mode & 0o1000 != 0;
        if owner != 0 && owner != uid {
            return Err(refuse(
                p,
                format!(
                    "(above the state directory) belongs to {}, who could replace what is below it",
                    user(owner)
                ),
            ));
        }
        if mode & 0o022 != 0 && !sticky {
            return Err(refuse(
                p,
                format!(
                    "(above the state directory) may be written by other users (mode {:o}), \
                     who could replace what is below it",
                    mode & 0o7777
                ),
            ));
        }
        if owner == 0 {
            break;
        }
        here = p.parent();
    }
    Ok(())
}

/// Makes `path` a private file of the pool's (0600) before anyone writes
/// it: created if missing, its mode set through its descriptor if it is
/// there. A symlink there is refused.
pub fn private_file(path: &Path) -> io::Result<()> {
    let f = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)?;
    f.set_permissions(fs::Permissions::from_mode(0o600))
}

/// Makes `dir` a private directory of the pool's (0700).
pub fn private_dir(dir: &Path) -> io::Result<()> {
    match fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            let d = fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW)
                .open(dir)?;
            d.set_permissions(fs::Permissions::from_mode(0o700))
        }
        Err(e) => Err(e),
    }
}

/// Binds the pool's socket at `path`, open to every local user (0666):
/// made and given its mode in a fresh private directory beside it, then
/// renamed into place, so the mode is never set on a path another user
/// could have swapped.
pub fn bind_socket(path: &Path) -> io::Result<std::os::unix::net::UnixListener> {
    let parent = path.parent().unwrap_or(Path::new("."));
    let private = parent.join(format!(".socket.{}", std::process::id()));
    let _ = fs::remove_dir_all(&private);
    fs::DirBuilder::new().mode(0o700).create(&private)?;
    let result = (|| {
        let inside = private.join("s");
        let listener = std::os::unix::net::UnixListener::bind(&inside)?;
        fs::set_permissions(&inside, fs::Permissions::from_mode(0o666))?;
        fs::rename(&inside, path)?;
        Ok(listener)
    })();
    let _ = fs::remove_dir_all(&private);
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn world(entries: &[(&str, u32, u32)]) -> impl Fn(&Path) -> io::Result<(u32, u32)> {
        let map: BTreeMap<PathBuf, (u32, u32)> = entries
            .iter()
            .map(|(p, u, m)| (PathBuf::from(p), (*u, *m)))
            .collect();
        move |p: &Path| {
            map.get(p)
                .copied()
                .ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))
        }
    }

    #[test]
    fn a_private_chain_up_to_root_is_accepted() {
        let w = world(&[
            ("/home/alice/state", 1000, 0o40755),
            ("/home/alice", 1000, 0o40700),
            ("/home", 0, 0o40755),
        ]);
        assert!(check_chain(Path::new("/home/alice/state"), 1000, &w).is_ok());
        // Under a sticky, world-writable directory that root owns.
        let w = world(&[("/tmp/s", 1000, 0o40755), ("/tmp", 0, 0o41777)]);
        assert!(check_chain(Path::new("/tmp/s"), 1000, &w).is_ok());
    }

    #[test]
    fn another_owner_or_writer_anywhere_up_the_chain_is_refused() {
        let cases = [
            // The directory belongs to someone else.
            (
                vec![("/srv/state", 1001, 0o40755), ("/srv", 0, 0o40755)],
                "/srv/state",
                "belongs to",
            ),
            // World-writable.
            (
                vec![("/srv/state", 1000, 0o40777), ("/srv", 0, 0o40755)],
                "/srv/state",
                "may be written",
            ),
            // Group-writable.
            (
                vec![("/srv/state", 1000, 0o40775), ("/srv", 0, 0o40755)],
                "/srv/state",
                "may be written",
            ),
            // A parent another user may write (not sticky).
            (
                vec![
                    ("/srv/x/state", 1000, 0o40755),
                    ("/srv/x", 1000, 0o40777),
                    ("/srv", 0, 0o40755),
                ],
                "/srv/x",
                "may be written",
            ),
            // A parent of another user's.
            (
                vec![
                    ("/srv/x/state", 1000, 0o40755),
                    ("/srv/x", 1001, 0o40755),
                    ("/srv", 0, 0o40755),
                ],
                "/srv/x",
                "belongs to",
            ),
            // Root's own parent that anyone may write, not sticky.
            (
                vec![("/srv/state", 1000, 0o40755), ("/srv", 0, 0o40777)],
                "/srv",
                "may be written",
            ),
        ];
        for (entries, at, why) in cases {
            let w = world(&entries);
            let dir = Path::new(entries[0].0);
            let e = check_chain(dir, 1000, &w).unwrap_err();
            assert_eq!(e.path, Path::new(at), "{e}");
            assert!(e.to_string().contains(why), "{e}");
        }
    }

    #[test]
    fn private_files_and_the_socket_get_their_modes() {
        let t = tempfile::tempdir().unwrap();
        let f = t.path().join("queue.db");
        fs::write(&f, "").unwrap();
        fs::set_permissions(&f, fs::Permissions::from_mode(0o644)).unwrap();
        private_file(&f).unwrap();
        assert_eq!(fs::metadata(&f).unwrap().mode() & 0o777, 0o600);
        std::os::unix::fs::symlink(&f, t.path().join("link")).unwrap();
        assert!(private_file(&t.path().join("link")).is_err());
        let sock = t.path().join("pool.sock");
        let _l = bind_socket(&sock).unwrap();
        assert_eq!(fs::symlink_metadata(&sock).unwrap().mode() & 0o777, 0o666);
        assert_eq!(
            fs::read_dir(t.path()).unwrap().count(),
            3,
            "no private dir left"
        );
    }
}
