//! What the security tests need around a pool started by root: two
//! throwaway users (`fcsec-alice`, `fcsec-bob`), a scratch tree with a
//! directory and files only root may touch, a root pool, and the tools run
//! as one of the users.
//!
//! Included with `#[path = "common/users.rs"] mod users;` beside `mod
//! common;` (it uses `crate::common`).
//!
//! The users are created once per machine and left in place: test
//! binaries (`security`, `crash_as_user`) may run at the same time, each
//! using them, and no binary can know when the last one is done with
//! them. They have no home, no password and no login shell, so leaving
//! them is harmless, and creating them again is a no-op.
#![allow(dead_code)]

use std::io::Read;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::common::PoolProcess;

/// Whether the tests run as root.
pub fn is_root() -> bool {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// True (and says so) when the test cannot run: it needs root.
pub fn skip_unless_root() -> bool {
    if is_root() {
        return false;
    }
    eprintln!("skipped: needs root to create throwaway users");
    true
}

/// A throwaway user.
#[derive(Clone, Debug)]
pub struct User {
    pub name: &'static str,
    pub uid: u32,
    pub gid: u32,
}

pub const ALICE: &str = "fcsec-alice";
pub const BOB: &str = "fcsec-bob";

pub fn alice() -> &'static User {
    &users()[0]
}

pub fn bob() -> &'static User {
    &users()[1]
}

fn users() -> &'static [User; 2] {
    static USERS: OnceLock<[User; 2]> = OnceLock::new();
    USERS.get_or_init(|| {
        assert!(is_root(), "throwaway users need root");
        // One creator at a time across test binaries too (useradd takes
        // its own lock on the passwd file, and fails rather than waits).
        let lock_path = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fcsec-users.lock");
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .unwrap_or_else(|e| panic!("{}: {e}", lock_path.display()));
        // SAFETY: flock on a descriptor we own; released when it closes.
        unsafe {
            use std::os::fd::AsRawFd;
            libc::flock(lock.as_raw_fd(), libc::LOCK_EX);
        }
        let made = [ensure_user(ALICE), ensure_user(BOB)];
        drop(lock);
        made
    })
}

/// The user's uid and gid, from the user database.
fn lookup(name: &str) -> Option<(u32, u32)> {
    let o = Command::new("getent")
        .args(["passwd", name])
        .output()
        .ok()?;
    let line = String::from_utf8_lossy(&o.stdout).into_owned();
    let f: Vec<&str> = line.trim().split(':').collect();
    Some((f.get(2)?.parse().ok()?, f.get(3)?.parse().ok()?))
}

/// Creates the user `name` unless it exists: an ordinary user (a uid
/// from UID_MIN up, as the people who submit jobs have), with no home and
/// no login shell.
fn ensure_user(name: &'static str) -> User {
    let shell = if Path::new("/usr/sbin/nologin").exists() {
        "/usr/sbin/nologin"
    } else {
        "/bin/false"
    };
    let mut last = String::new();
    for _ in 0..100 {
        if let Some((uid, gid)) = lookup(name) {
            return User { name, uid, gid };
        }
        // --user-group: a group of its own, so the two users share none.
        let o = Command::new("useradd")
            .args([
                "--no-create-home",
                "--home-dir",
                "/nonexistent",
                "--shell",
                shell,
                "--user-group",
                name,
            ])
            .output()
            .unwrap_or_else(|e| panic!("useradd: {e}"));
        if o.status.success() {
            continue;
        }
        // Busy passwd or group file (another useradd): try again.
        last = String::from_utf8_lossy(&o.stderr).into_owned();
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("could not create the user {name}: {last}");
}

/// Runs `c` as `user`: its uid and gid, and no supplementary group (std's
/// `Command::uid` clears the groups when root drops to another uid), with
/// the environment a login would give the user's name.
pub fn as_user(c: &mut Command, user: &User) {
    c.uid(user.uid)
        .gid(user.gid)
        .env("USER", user.name)
        .env("LOGNAME", user.name)
        .env("HOME", "/nonexistent");
}

pub fn chown(path: &Path, user: &User) {
    std::os::unix::fs::chown(path, Some(user.uid), Some(user.gid)).unwrap();
}

pub fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// A test's scratch tree, removed when dropped after the test passed:
///
/// - `base`: root's, 0755, under the temporary directory;
/// - `alice`, `bob`: each user's working directory (theirs, 0755);
/// - `rootonly`: root's, 0755, nobody else may write it; in it `decoy`
///   (root, 0600, holding `secret`) and `decoy.sh` (root, 0700, a script
///   that would leave `marker` in alice's directory if it ran);
/// - `state`: where the pool's state directory goes (made by the pool).
pub struct Scratch {
    pub base: PathBuf,
    pub alice: PathBuf,
    pub bob: PathBuf,
    pub rootonly: PathBuf,
    pub decoy: PathBuf,
    pub decoy_script: PathBuf,
    pub marker: PathBuf,
    pub state: PathBuf,
    pub secret: String,
}

impl Scratch {
    pub fn new(name: &str) -> Scratch {
        let (a, b) = (alice(), bob());
        let base = std::env::temp_dir().join(format!("fcsec-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(&base).unwrap();
        chmod(&base, 0o755);
        let mkdir = |p: &Path, owner: Option<&User>, mode: u32| {
            std::fs::create_dir(p).unwrap();
            if let Some(u) = owner {
                chown(p, u);
            }
            chmod(p, mode);
        };
        let alice_dir = base.join("alice");
        let bob_dir = base.join("bob");
        let rootonly = base.join("rootonly");
        mkdir(&alice_dir, Some(a), 0o755);
        mkdir(&bob_dir, Some(b), 0o755);
        mkdir(&rootonly, None, 0o755);
        // The pool's state directory: root's, 0755 whatever the umask.
        mkdir(&base.join("state"), None, 0o755);
        let secret = format!("fcsec-SECRET-{name}-{}-do-not-leak", std::process::id());
        let decoy = rootonly.join("decoy");
        std::fs::write(&decoy, format!("{secret}\n")).unwrap();
        chmod(&decoy, 0o600);
        let marker = alice_dir.join("DECOY-SCRIPT-RAN");
        let decoy_script = rootonly.join("decoy.sh");
        std::fs::write(
            &decoy_script,
            format!(
                "#!/bin/sh\n# {secret}\necho DECOY-SCRIPT-RAN\necho ran > {}\nexit 0\n",
                marker.display()
            ),
        )
        .unwrap();
        chmod(&decoy_script, 0o700);
        Scratch {
            state: base.join("state"),
            base,
            alice: alice_dir,
            bob: bob_dir,
            rootonly,
            decoy,
            decoy_script,
            marker,
            secret,
        }
    }

    /// Writes a file in `user`'s directory, theirs, with `mode`.
    pub fn user_file(&self, user: &User, name: &str, text: &str, mode: u32) -> PathBuf {
        let dir = self.dir_of(user);
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        chown(&p, user);
        chmod(&p, mode);
        p
    }

    pub fn dir_of(&self, user: &User) -> &Path {
        if user.uid == alice().uid {
            &self.alice
        } else {
            &self.bob
        }
    }

    /// A symbolic link `name -> target` in `user`'s directory, theirs.
    pub fn user_symlink(&self, user: &User, name: &str, target: &Path) -> PathBuf {
        let p = self.dir_of(user).join(name);
        std::os::unix::fs::symlink(target, &p).unwrap();
        std::os::unix::fs::lchown(&p, Some(user.uid), Some(user.gid)).unwrap();
        p
    }

    /// What the root-only directory holds, to compare before and after.
    pub fn rootonly_snapshot(&self) -> Vec<(String, u32, u32, Vec<u8>)> {
        snapshot(&self.rootonly)
    }

    /// Checks the root-only directory is as `before`, and that nothing in
    /// `user`'s directory belongs to root.
    pub fn assert_untouched(&self, before: &[(String, u32, u32, Vec<u8>)], what: &str) {
        let after = self.rootonly_snapshot();
        let show = |s: &[(String, u32, u32, Vec<u8>)]| {
            s.iter()
                .map(|(n, uid, mode, data)| {
                    format!(
                        "\n  {n} uid {uid} mode {mode:o} {:?}",
                        String::from_utf8_lossy(&data[..data.len().min(80)])
                    )
                })
                .collect::<String>()
        };
        assert!(
            before == after.as_slice(),
            "{what}: the root-only directory {} changed\nbefore:{}\nafter:{}",
            self.rootonly.display(),
            show(before),
            show(&after)
        );
        for dir in [&self.alice, &self.bob] {
            let rooted = owned_by_root(dir);
            assert!(
                rooted.is_empty(),
                "{what}: the pool created files as root in a user's directory: {rooted:?}"
            );
        }
    }

    /// Fails if the secret is in any file alice (or bob) owns or may read
    /// in their directories.
    pub fn assert_secret_kept(&self, what: &str) {
        for dir in [&self.alice, &self.bob] {
            let found = files_containing(dir, &self.secret);
            assert!(
                found.is_empty(),
                "{what}: the root-only decoy's secret reached a user's files: {found:?}"
            );
        }
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        // A failed test keeps its tree to look at (as `common::Scratch`).
        if std::thread::panicking() {
            eprintln!("scratch directory kept: {}", self.base.display());
            return;
        }
        let _ = std::fs::remove_dir_all(&self.base);
    }
}

/// Each entry of `dir` (not following links): name, owner, mode, and for
/// a regular file its content (the link's target for a link).
pub fn snapshot(dir: &Path) -> Vec<(String, u32, u32, Vec<u8>)> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| {
                    let m = std::fs::symlink_metadata(e.path()).unwrap();
                    let data = if m.file_type().is_symlink() {
                        std::fs::read_link(e.path())
                            .map(|t| t.display().to_string().into_bytes())
                            .unwrap_or_default()
                    } else if m.is_file() {
                        std::fs::read(e.path()).unwrap_or_default()
                    } else {
                        Vec::new()
                    };
                    (
                        e.file_name().to_string_lossy().into_owned(),
                        m.uid(),
                        m.mode(),
                        data,
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// The regular files under `dir` (not following links) holding `needle`.
pub fn files_containing(dir: &Path, needle: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    walk(dir, &mut |p, m| {
        if m.is_file() {
            let mut data = Vec::new();
            if std::fs::File::open(p)
                .and_then(|mut f| f.read_to_end(&mut data))
                .is_ok()
                && data.windows(needle.len()).any(|w| w == needle.as_bytes())
            {
                found.push(p.to_path_buf());
            }
        }
    });
    found
}

/// Everything under `dir` (not following links) that root owns.
pub fn owned_by_root(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    walk(dir, &mut |p, m| {
        if m.uid() == 0 {
            found.push(p.to_path_buf());
        }
    });
    found
}

fn walk(dir: &Path, f: &mut dyn FnMut(&Path, &std::fs::Metadata)) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        let Ok(m) = std::fs::symlink_metadata(&p) else {
            continue;
        };
        f(&p, &m);
        if m.is_dir() {
            walk(&p, f);
        }
    }
}

/// A command of the binary against the pool in `state`, configured by
/// `env` only (`_CONDOR_NAME` settings), as root or as `user`.
pub fn command(state: &Path, user: Option<&User>, env: &[(&str, &str)]) -> Command {
    let mut c = Command::new(crate::common::bin());
    c.env("FERROCONDOR_STATE", state)
        .env("CONDOR_CONFIG", "ONLY_ENV")
        .stdin(Stdio::null());
    for (k, v) in env {
        c.env(format!("_CONDOR_{k}"), v);
    }
    if let Some(u) = user {
        as_user(&mut c, u);
    }
    c
}

/// Runs a tool as `user` from `cwd`.
pub fn tool(state: &Path, user: &User, cwd: &Path, args: &[&str]) -> Output {
    command(state, Some(user), &[])
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap()
}

/// A tool's output when it succeeded; a failure fails the test.
pub fn tool_ok(state: &Path, user: &User, cwd: &Path, args: &[&str]) -> String {
    let o = tool(state, user, cwd, args);
    assert!(
        o.status.success(),
        "{} {args:?} failed: {}{}",
        user.name,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Runs `c` for at most `limit`: how long it took and its output, or
/// `None` (and it is killed) when it ran past the limit.
pub fn timed(mut c: Command, limit: Duration) -> (Duration, Option<Output>) {
    let t = Instant::now();
    let mut child = c
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    loop {
        if let Ok(Some(_)) = child.try_wait() {
            let took = t.elapsed();
            return (took, child.wait_with_output().ok());
        }
        if t.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return (t.elapsed(), None);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A child process killed (SIGKILL) and reaped when dropped.
pub struct KillOnDrop(pub Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A running `pool up` (as root unless a user is given), the harness's
/// [`PoolProcess`]: SIGTERM when dropped, then SIGKILL if it is still
/// there after ten seconds, then whatever its jobs left is reaped.
pub struct Pool {
    pub proc: PoolProcess,
    pub state: PathBuf,
    /// The pool process's pid, kept after it is killed.
    started: u32,
}

impl Pool {
    /// `pool up --state STATE` as root, configured by `env`, once it
    /// answers.
    pub fn start(state: &Path, env: &[(&str, &str)]) -> Pool {
        let p = Pool::spawn(state, None, env);
        p.proc.wait_up();
        p
    }

    /// Like [`Pool::start`], with the soft limit on open files at
    /// `nofile` (the hard limit unchanged), as a service manager commonly
    /// starts daemons (1024).
    pub fn start_with_nofile(state: &Path, env: &[(&str, &str)], nofile: u64) -> Pool {
        let mut c = command(state, None, env);
        // SAFETY: runs between fork and exec: two system calls.
        unsafe {
            c.pre_exec(move || {
                let mut lim: libc::rlimit = std::mem::zeroed();
                libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim);
                lim.rlim_cur = nofile.min(lim.rlim_max);
                libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
                Ok(())
            });
        }
        let p = Pool::wrap(state, PoolProcess::spawn(state, c));
        p.proc.wait_up();
        p
    }

    /// Like [`Pool::start`], with the configuration file `config` read
    /// first (`env` overrides it).
    pub fn start_with_config(state: &Path, config: &Path, env: &[(&str, &str)]) -> Pool {
        let mut c = command(state, None, env);
        c.env("CONDOR_CONFIG", config);
        let p = Pool::wrap(state, PoolProcess::spawn(state, c));
        p.proc.wait_up();
        p
    }

    /// `pool up` as `user` (root when `None`), not waiting for anything.
    pub fn spawn(state: &Path, user: Option<&User>, env: &[(&str, &str)]) -> Pool {
        Pool::wrap(state, PoolProcess::spawn(state, command(state, user, env)))
    }

    fn wrap(state: &Path, proc: PoolProcess) -> Pool {
        Pool {
            started: proc.pid(),
            proc,
            state: state.to_path_buf(),
        }
    }

    /// What the daemon wrote on its standard error.
    pub fn daemon_log(&self) -> String {
        self.proc.daemon_log()
    }

    pub fn pid(&self) -> u32 {
        self.proc.pid()
    }

    pub fn kill(&mut self) {
        self.proc.kill();
    }

    /// Waits for the pool process to exit by itself: its status, or
    /// `None` if it is still running after `secs`.
    pub fn exit_within(&mut self, secs: u64) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + Duration::from_secs(secs);
        let c = self.proc.child.as_mut()?;
        loop {
            if let Ok(Some(s)) = c.try_wait() {
                self.proc.child = None;
                return Some(s);
            }
            if Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn tool(&self, user: &User, cwd: &Path, args: &[&str]) -> Output {
        tool(&self.state, user, cwd, args)
    }

    /// Submits `text` (written as `file` in `user`'s `dir`) as `user`:
    /// the cluster, or the tool's refusal.
    pub fn submit(&self, user: &User, dir: &Path, file: &str, text: &str) -> Result<u32, String> {
        let p = dir.join(file);
        std::fs::write(&p, text).unwrap();
        chown(&p, user);
        let o = self.tool(user, dir, &["submit", file]);
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        if !o.status.success() {
            return Err(format!("{out}{}", String::from_utf8_lossy(&o.stderr)));
        }
        out.lines()
            .find_map(|l| {
                l.split_once(" job(s) submitted to cluster ")
                    .and_then(|(_, c)| c.trim_end_matches('.').parse().ok())
            })
            .ok_or_else(|| format!("submit said: {out}"))
    }

    /// `q JOB -af ATTRS` as `user`, trimmed; empty once the job left.
    pub fn q(&self, user: &User, job: &str, attrs: &[&str]) -> String {
        let mut args = vec!["q", job, "-af"];
        args.extend_from_slice(attrs);
        tool_ok(&self.state, user, Path::new("/"), &args)
            .trim()
            .to_string()
    }

    /// `history JOB -af ATTRS` as `user`, trimmed.
    pub fn history(&self, user: &User, job: &str, attrs: &[&str]) -> String {
        let mut args = vec!["history", job, "-af"];
        args.extend_from_slice(attrs);
        tool_ok(&self.state, user, Path::new("/"), &args)
            .trim()
            .to_string()
    }

    /// Waits (at most `secs`) until the job is held or has left the
    /// queue, and says which.
    pub fn outcome(&self, user: &User, job: &str, secs: u64) -> Outcome {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            let q = self.q(user, job, &["JobStatus", "HoldReasonCode", "HoldReason"]);
            if let Some(rest) = q.strip_prefix("5 ") {
                return Outcome::Held(rest.to_string());
            }
            if q.is_empty() {
                let h = self.history(user, job, &["JobStatus", "ExitCode"]);
                if !h.is_empty() {
                    let f: Vec<&str> = h.split_whitespace().collect();
                    return Outcome::Left {
                        status: f[0].parse().unwrap_or(0),
                        exit_code: f.get(1).and_then(|c| c.parse().ok()),
                    };
                }
            }
            if Instant::now() > deadline {
                return Outcome::Pending(q);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        self.proc.stop();
        reap(&self.state, self.started);
    }
}

/// Kills what a pool (of pid `pid`, on `state`) left running when it did
/// not stop by itself: every process whose `_CONDOR_SCRATCH_DIR` is under
/// its EXECUTE, and whatever is in the cgroups it made for its jobs
/// (named after its pid); removes those cgroups. Nothing to do after a
/// pool that stopped well.
fn reap(state: &Path, pid: u32) {
    if pid == 0 {
        return;
    }
    let scratch = format!("_CONDOR_SCRATCH_DIR={}/", state.join("execute").display());
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(p) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        let env = std::fs::read(format!("/proc/{p}/environ")).unwrap_or_default();
        if p as u32 != std::process::id()
            && env
                .split(|&b| b == 0)
                .any(|v| v.starts_with(scratch.as_bytes()))
        {
            // SAFETY: a plain signal to a process of a job of this test's pool.
            unsafe { libc::kill(p, libc::SIGKILL) };
        }
    }
    let Ok(root) = cgroup_root() else {
        return;
    };
    let mark = format!("dir_{pid}_");
    for e in std::fs::read_dir(&root).into_iter().flatten().flatten() {
        if !e.file_name().to_string_lossy().contains(&mark) {
            continue;
        }
        let cg = e.path();
        let _ = std::fs::write(cg.join("cgroup.kill"), "1");
        for p in std::fs::read_to_string(cg.join("cgroup.procs"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().parse::<i32>().ok())
        {
            // SAFETY: a plain signal to a process in a job's cgroup.
            unsafe { libc::kill(p, libc::SIGKILL) };
        }
        let deadline = Instant::now() + Duration::from_secs(2);
        while std::fs::remove_dir(&cg).is_err() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Where a job ended up.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Held: `HoldReasonCode HoldReason`.
    Held(String),
    /// Left the queue: its JobStatus (4 completed, 3 removed) and
    /// ExitCode.
    Left { status: u32, exit_code: Option<i64> },
    /// Still idle or running after the wait: its `q` line.
    Pending(String),
}

impl Outcome {
    /// Held, or ended without success (removed, or a non-zero exit).
    pub fn held_or_failed(&self) -> bool {
        match self {
            Outcome::Held(_) => true,
            Outcome::Left { status, exit_code } => *status != 4 || *exit_code != Some(0),
            Outcome::Pending(_) => false,
        }
    }
}

/// (ppid, process group, session) of a live process.
pub fn proc_ids(pid: i32) -> Option<(i32, i32, i32)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let f: Vec<&str> = text[text.rfind(')')? + 2..].split_whitespace().collect();
    Some((
        f.get(1)?.parse().ok()?,
        f.get(2)?.parse().ok()?,
        f.get(3)?.parse().ok()?,
    ))
}

/// The start time of a process, in clock ticks since boot (field 22 of
/// `/proc/<pid>/stat`).
pub fn start_ticks(pid: i32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    text[text.rfind(')')? + 2..]
        .split_whitespace()
        .nth(19)?
        .parse()
        .ok()
}

/// The live children of `pid`.
pub fn children(pid: i32) -> Vec<i32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&p| proc_ids(p).is_some_and(|(ppid, _, _)| ppid == pid))
        .collect()
}

/// Where the jobs' cgroups go: the cgroup v2 this process is in (found
/// as the starter finds it: the cgroup2 mount, then the `0::` line of
/// /proc/self/cgroup).
pub fn cgroup_root() -> Result<PathBuf, String> {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").map_err(|e| e.to_string())?;
    let mount = mountinfo
        .lines()
        .find_map(|l| {
            let (left, right) = l.split_once(" - ")?;
            (right.split_whitespace().next()? == "cgroup2")
                .then(|| left.split_whitespace().nth(4).map(PathBuf::from))?
        })
        .ok_or("no cgroup v2 hierarchy is mounted")?;
    let own = std::fs::read_to_string("/proc/self/cgroup").map_err(|e| e.to_string())?;
    let rel = own
        .lines()
        .find_map(|l| l.strip_prefix("0::"))
        .ok_or("this process is in no cgroup v2")?
        .trim()
        .trim_start_matches('/')
        .to_string();
    Ok(if rel.is_empty() {
        mount
    } else {
        mount.join(rel)
    })
}

/// [`cgroup_root`], if this process may make a cgroup there.
pub fn writable_cgroup() -> Result<PathBuf, String> {
    let dir = cgroup_root()?;
    let probe = dir.join(format!("fcsec-probe-{}", std::process::id()));
    std::fs::create_dir(&probe).map_err(|e| format!("cannot create {}: {e}", probe.display()))?;
    let ok = probe.join("cgroup.procs").exists();
    let _ = std::fs::remove_dir(&probe);
    if ok {
        Ok(dir)
    } else {
        Err(format!("{} is not a cgroup v2 directory", dir.display()))
    }
}
