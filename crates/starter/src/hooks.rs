//! Running job hooks: ads in old syntax on standard input, separated by
//! `-----` lines (job-hooks-v7.txt), the output gathered.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use classad::ClassAd;

use crate::procs::User;

/// Makes `cmd`'s child change to `user` before it execs: supplementary
/// groups, gid, uid, with raw system calls (the child of a many-threaded
/// daemon may make only system calls), then enters `dir` as the user.
fn become_user(cmd: &mut Command, user: &User, dir: &Path) -> Result<(), String> {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::process::CommandExt;
    let (uid, gid, groups) = (user.uid, user.gid, user.groups.clone());
    let dir = std::ffi::CString::new(dir.as_os_str().as_bytes())
        .map_err(|_| format!("`{}` holds a NUL byte", dir.display()))?;
    // SAFETY: the closure makes only system calls on data made before the
    // fork.
    unsafe {
        cmd.pre_exec(move || {
            let check = |r: libc::c_long| {
                if r < 0 {
                    Err(std::io::Error::last_os_error())
                } else {
                    Ok(())
                }
            };
            check(libc::syscall(
                libc::SYS_setgroups,
                groups.len(),
                groups.as_ptr(),
            ))?;
            check(libc::syscall(libc::SYS_setresgid, gid, gid, gid))?;
            check(libc::syscall(libc::SYS_setresuid, uid, uid, uid))?;
            check(libc::syscall(libc::SYS_chdir, dir.as_ptr()))?;
            Ok(())
        });
    }
    Ok(())
}

/// The text a hook reads: each ad in old syntax, `-----` between them.
pub fn hook_input(ads: &[&ClassAd]) -> String {
    let mut s = String::new();
    for (i, ad) in ads.iter().enumerate() {
        if i > 0 {
            s.push_str("-----\n");
        }
        s.push_str(&classad::unparse::ad_to_old_syntax(ad));
    }
    s
}

/// A hook started and not yet waited for.
pub(crate) struct HookRun {
    pub path: PathBuf,
    child: Child,
    writer: Option<JoinHandle<()>>,
    stdout: Option<JoinHandle<Vec<u8>>>,
    stderr: Option<JoinHandle<Vec<u8>>>,
}

pub(crate) struct HookOutput {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

fn drain(mut r: impl Read + Send + 'static) -> JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = r.read_to_end(&mut v);
        v
    })
}

impl HookRun {
    /// Starts `path args...` in `dir` with `input` on its standard input
    /// (written from a thread, so a hook that does not read cannot block
    /// the starter); `capture` keeps its output.
    ///
    /// With `user`, the hook runs as that user (groups, gid, uid), as
    /// HTCondor's starter runs its job hooks as the job's user: the hook
    /// works in the job's sandbox, where the job may have left symlinks.
    pub fn start(
        path: &Path,
        args: &[&str],
        dir: &Path,
        input: String,
        capture: bool,
        user: Option<&User>,
    ) -> Result<HookRun, String> {
        let out = || {
            if capture {
                Stdio::piped()
            } else {
                Stdio::null()
            }
        };
        let mut tries = 0;
        let mut child = loop {
            let mut cmd = Command::new(path);
            cmd.args(args)
                .stdin(Stdio::piped())
                .stdout(out())
                .stderr(out());
            match user {
                Some(u) => become_user(&mut cmd, u, dir)?,
                None => {
                    cmd.current_dir(dir);
                }
            }
            let r = cmd.spawn();
            match r {
                Ok(c) => break c,
                // Held open for writing by a fork in another thread for a
                // moment (a script just written): try again.
                Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) && tries < 20 => {
                    tries += 1;
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(e) => return Err(format!("cannot run it: {e}")),
            }
        };
        let mut stdin = child.stdin.take();
        let writer = std::thread::spawn(move || {
            if let Some(w) = stdin.as_mut() {
                // A hook may exit without reading: a broken pipe is fine.
                let _ = w.write_all(input.as_bytes());
            }
        });
        let stdout = child.stdout.take().map(drain);
        let stderr = child.stderr.take().map(drain);
        Ok(HookRun {
            path: path.to_path_buf(),
            child,
            writer: Some(writer),
            stdout,
            stderr,
        })
    }

    pub fn try_done(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(Some(_)) | Err(_))
    }

    /// Waits for the hook, killing it after `timeout`.
    pub fn wait(mut self, timeout: Option<Duration>) -> Result<HookOutput, String> {
        let start = Instant::now();
        let mut pause = Duration::from_micros(200);
        let status = loop {
            match self.child.try_wait() {
                Ok(Some(s)) => break s,
                Ok(None) => {}
                Err(e) => return Err(format!("cannot wait for it: {e}")),
            }
            if timeout.is_some_and(|t| start.elapsed() >= t) {
                let _ = self.child.kill();
                let _ = self.child.wait();
                return Err(format!(
                    "it did not finish within {:?} and was killed",
                    timeout.unwrap_or_default()
                ));
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(20));
        };
        if let Some(w) = self.writer.take() {
            let _ = w.join();
        }
        let text = |h: Option<JoinHandle<Vec<u8>>>| {
            h.and_then(|h| h.join().ok())
                .map(|v| String::from_utf8_lossy(&v).into_owned())
                .unwrap_or_default()
        };
        Ok(HookOutput {
            status,
            stdout: text(self.stdout.take()),
            stderr: text(self.stderr.take()),
        })
    }
}

/// Why a waited-for hook failed, for error messages: its status and the
/// start of what it wrote to standard error.
pub fn describe_failure(out: &HookOutput) -> String {
    let err = out.stderr.trim();
    let err: String = err.chars().take(500).collect();
    if err.is_empty() {
        format!("it exited with {}", out.status)
    } else {
        format!("it exited with {}: {err}", out.status)
    }
}

/// The ad updates a hook printed (old syntax), merged into `ad`.
pub fn merge_output(ad: &mut ClassAd, stdout: &str) -> Result<(), String> {
    if stdout.trim().is_empty() {
        return Ok(());
    }
    let stream = classad::reader::read_ads(stdout, classad::reader::Syntax::Old);
    for read in &stream.ads {
        if let Some(e) = &read.dropped {
            return Err(format!("its output is not a ClassAd: {e}"));
        }
        ad.update(&read.ad);
    }
    if let classad::reader::Stop::Error(e) = stream.stop {
        return Err(format!("its output is not a ClassAd: {e}"));
    }
    Ok(())
}
