//! The sandbox's files: input copied in, output copied back.

use std::collections::HashMap;
use std::fs;
use std::io;
use std::os::unix::fs::{chown, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::FinishProblem;

/// Names the starter itself puts in a sandbox; never output.
pub const EXECUTABLE: &str = "condor_exec.exe";
pub const STDOUT: &str = "_condor_stdout";
pub const STDERR: &str = "_condor_stderr";
pub const JOB_AD: &str = ".job.ad";
pub const MACHINE_AD: &str = ".machine.ad";

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

/// Copies a file or a directory tree; `name/` copies a directory's
/// contents, as HTCondor's transfer does.
pub fn copy_into(src: &Path, trailing_slash: bool, dest_dir: &Path) -> io::Result<()> {
    let meta = fs::metadata(src)?;
    if meta.is_dir() {
        let target = if trailing_slash {
            dest_dir.to_path_buf()
        } else {
            let name = src.file_name().ok_or(io::ErrorKind::InvalidInput)?;
            let t = dest_dir.join(name);
            fs::create_dir_all(&t)?;
            t
        };
        for entry in fs::read_dir(src)? {
            copy_into(&entry?.path(), false, &target)?;
        }
        Ok(())
    } else {
        let name = src.file_name().ok_or(io::ErrorKind::InvalidInput)?;
        fs::copy(src, dest_dir.join(name)).map(|_| ())
    }
}

/// Gives a tree to the job's user.
pub fn chown_tree(path: &Path, uid: u32, gid: u32) -> io::Result<()> {
    chown(path, Some(uid), Some(gid))?;
    if fs::symlink_metadata(path)?.is_dir() {
        for entry in fs::read_dir(path)? {
            chown_tree(&entry?.path(), uid, gid)?;
        }
    }
    Ok(())
}

pub fn make_executable(path: &Path) -> io::Result<()> {
    let mut perm = fs::metadata(path)?.permissions();
    perm.set_mode(perm.mode() | 0o755);
    fs::set_permissions(path, perm)
}

/// Size and modification time of each top-level file, to tell new and
/// changed output from input.
pub type Snapshot = HashMap<String, (u64, i64, i64)>;

pub fn snapshot(dir: &Path) -> Snapshot {
    let mut s = Snapshot::new();
    if let Ok(rd) = fs::read_dir(dir) {
        for e in rd.flatten() {
            if let (Ok(m), Some(name)) = (e.metadata(), e.file_name().to_str()) {
                s.insert(name.to_string(), (m.size(), m.mtime(), m.mtime_nsec()));
            }
        }
    }
    s
}

/// Copies the job's output from the sandbox to `iwd`: the files named in
/// `TransferOutput`, or else every new or changed top-level file.
pub fn transfer_output(
    sandbox: &Path,
    iwd: &Path,
    named: Option<&[String]>,
    before: &Snapshot,
    owner: Option<(u32, u32)>,
) -> Vec<FinishProblem> {
    let mut problems = Vec::new();
    let names: Vec<(String, bool)> = match named {
        Some(list) => list
            .iter()
            .map(|n| (n.trim_end_matches('/').to_string(), n.ends_with('/')))
            .collect(),
        None => {
            let now = snapshot(sandbox);
            let mut v: Vec<(String, bool)> = now
                .iter()
                .filter(|(name, stat)| {
                    ![EXECUTABLE, STDOUT, STDERR, JOB_AD, MACHINE_AD].contains(&name.as_str())
                        && before.get(*name) != Some(stat)
                        && sandbox.join(name).is_file()
                })
                .map(|(n, _)| (n.clone(), false))
                .collect();
            v.sort();
            v
        }
    };
    for (name, slash) in names {
        let from = sandbox.join(&name);
        if !from.exists() {
            problems.push(FinishProblem::MissingOutput {
                name,
                sandbox: sandbox.to_path_buf(),
            });
            continue;
        }
        let to = iwd.join(from.file_name().unwrap_or_default());
        let r = copy_into(&from, slash, iwd).and_then(|()| match owner {
            Some((uid, gid)) if !slash => chown_tree(&to, uid, gid),
            _ => Ok(()),
        });
        if let Err(source) = r {
            problems.push(FinishProblem::Output { from, to, source });
        }
    }
    problems
}

/// Copies a standard stream the job wrote in the sandbox to where the job
/// asked for it.
pub fn transfer_stream(
    from: &Path,
    to: PathBuf,
    owner: Option<(u32, u32)>,
) -> Option<FinishProblem> {
    let r = fs::copy(from, &to).and_then(|_| match owner {
        Some((uid, gid)) => chown(&to, Some(uid), Some(gid)),
        None => Ok(()),
    });
    r.err().map(|source| FinishProblem::Output {
        from: from.to_path_buf(),
        to,
        source,
    })
}
