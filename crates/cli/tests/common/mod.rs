//! The personal pool as the end-to-end tests run it: `pool up` as a child
//! process on a scratch state directory, the tools against it.
//!
//! A pool started by root runs each job as its owner and never runs a job
//! as root (HTCondor's rule), so when the tests run as root the pool and
//! the tools run as the unprivileged user `nobody`; otherwise as the user
//! running the tests.
#![allow(dead_code)]

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_ferrocondor")
}

/// The uid and gid the pool and tools run as: `nobody` when we are root.
pub fn run_as() -> Option<(u32, u32)> {
    // SAFETY: geteuid cannot fail.
    (unsafe { libc::geteuid() } == 0).then_some((65534, 65534))
}

/// Whatever this test thread starts from now on runs at nice 0, when the
/// test may lower its priority (root): tests of JOB_RENICE_INCREMENT
/// read the jobs' absolute nice values, which a test run under `nice`
/// would shift (15 for 5) and cap (19 for 15). Linux keeps a nice value
/// per thread, and children take their parent thread's.
pub fn at_normal_priority() {
    if run_as().is_some() {
        // SAFETY: changes this thread's nice value only.
        unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, 0) };
    }
}

/// A fresh scratch directory that the pool's user may write, removed when
/// dropped (see [`Scratch`]).
pub fn scratch(name: &str) -> Scratch {
    let d = std::env::temp_dir().join(format!("ferrocondor-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    if let Some((uid, gid)) = run_as() {
        std::os::unix::fs::chown(&d, Some(uid), Some(gid)).unwrap();
    }
    Scratch(d)
}

/// A test's scratch directory: when dropped after the test passed, the
/// tree is removed (whoever owns what the pool made in it: the tests run
/// as root or as its owner), with the pool's log beside it
/// ([`PoolProcess::spawn_by`]); a test that panics keeps it, its path
/// printed, to look at. Declare it before the pool that runs on it, so
/// the pool is stopped first. Removal errors are ignored.
pub struct Scratch(PathBuf);

impl Scratch {
    /// Takes charge of `dir` (made by the caller).
    pub fn adopt(dir: PathBuf) -> Scratch {
        Scratch(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<std::ffi::OsStr> for Scratch {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.0.as_os_str()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("scratch directory kept: {}", self.0.display());
            return;
        }
        let _ = std::fs::remove_dir_all(&self.0);
        let _ = std::fs::remove_file(self.0.with_extension("daemon.log"));
    }
}

/// Writes a file the pool's user owns.
pub fn write(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
    if let Some((uid, gid)) = run_as() {
        std::os::unix::fs::chown(path, Some(uid), Some(gid)).unwrap();
    }
}

/// A command as the pool's user, with a configuration of only `env`.
pub fn command(state: &Path, env: &[(&str, &str)]) -> Command {
    let mut c = Command::new(bin());
    c.env("FERROCONDOR_STATE", state)
        .env("CONDOR_CONFIG", "ONLY_ENV");
    for (k, v) in env {
        c.env(format!("_CONDOR_{k}"), v);
    }
    if let Some((uid, gid)) = run_as() {
        c.uid(uid).gid(gid);
    }
    c
}

/// A running `pool up`, killed (SIGKILL) when dropped, whatever happened.
pub struct PoolProcess {
    pub child: Option<Child>,
    pub state: PathBuf,
    log: PathBuf,
}

impl PoolProcess {
    /// Starts a pool on `state` configured by `env` (`NAME`, value pairs
    /// given as `_CONDOR_NAME`), and waits until it answers.
    pub fn start(state: &Path, env: &[(&str, &str)]) -> PoolProcess {
        PoolProcess::up(state, command(state, env))
    }

    /// Runs `pool up` on `state` with the command `c` (its user and
    /// configuration set), its standard error kept in a log beside the
    /// state directory, and waits until the pool answers.
    pub fn up(state: &Path, c: Command) -> PoolProcess {
        let p = PoolProcess::spawn(state, c);
        p.wait_up();
        p
    }

    /// Like [`PoolProcess::up`], without waiting.
    pub fn spawn(state: &Path, c: Command) -> PoolProcess {
        PoolProcess::spawn_as(state, c, &["pool", "up"])
    }

    /// `ferrocondor master` on `state` configured by `env`: each role a
    /// process of its own. Waits until its schedd answers.
    pub fn master(state: &Path, env: &[(&str, &str)]) -> PoolProcess {
        let p = PoolProcess::spawn_as(state, command(state, env), &["master"]);
        p.wait_up();
        p
    }

    /// Runs `ferrocondor <how> --state <state>` with the command `c`.
    fn spawn_as(state: &Path, c: Command, how: &[&str]) -> PoolProcess {
        PoolProcess::spawn_by(state, c, how, |c| c.spawn().unwrap())
    }

    /// Like [`PoolProcess::spawn_as`], the command spawned by `spawn` (on
    /// another host of the test bed, say). Does not wait.
    pub fn spawn_by(
        state: &Path,
        mut c: Command,
        how: &[&str],
        spawn: impl FnOnce(&mut Command) -> Child,
    ) -> PoolProcess {
        let log = state.with_extension("daemon.log");
        let stderr = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .unwrap();
        c.args(how)
            .arg("--state")
            .arg(state)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr);
        let child = spawn(&mut c);
        PoolProcess {
            child: Some(child),
            state: state.to_path_buf(),
            log,
        }
    }

    /// Waits (at most 20 s) until the pool answers `q`.
    pub fn wait_up(&self) {
        let p = self;
        let state = &self.state;
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let o = run(state, &std::env::temp_dir(), &["q", "-af", "ClusterId"]);
            if o.status.success() {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "the pool did not come up: {}\n{}",
                err(&o),
                p.daemon_log()
            );
            std::thread::sleep(Duration::from_millis(25));
        }
    }

    /// What the daemon wrote on its standard error.
    pub fn daemon_log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for PoolProcess {
    fn drop(&mut self) {
        self.stop();
    }
}

impl PoolProcess {
    /// A graceful stop (SIGTERM: the pool kills the jobs it runs), then
    /// SIGKILL if it is still there after ten seconds: a test that fails
    /// leaves no job behind.
    pub fn stop(&mut self) {
        if let Some(c) = self.child.as_mut() {
            // SAFETY: a plain signal to our own child.
            unsafe { libc::kill(c.id() as i32, libc::SIGTERM) };
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = c.try_wait() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        self.kill();
    }
}

/// Runs a tool against the pool in `state`, from `cwd`.
pub fn run(state: &Path, cwd: &Path, args: &[&str]) -> Output {
    command(state, &[])
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap()
}

pub fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn ok(o: Output) -> String {
    assert!(o.status.success(), "failed: {}{}", out(&o), err(&o));
    out(&o)
}

/// The user the pool names the tests' jobs' owner.
pub fn me() -> String {
    let mut c = Command::new("id");
    c.arg("-un");
    if let Some((uid, gid)) = run_as() {
        c.uid(uid).gid(gid);
    }
    let o = c.output().unwrap();
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

/// Polls `f` every 50 ms until it gives `Some`, for at most `secs`.
pub fn wait_for<T>(secs: u64, what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(t) = f() {
            return t;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A command as the pool's user whose configuration is the file `config`
/// (CONDOR_CONFIG) with `env` over it, for policies written as files.
pub fn command_with_config(state: &Path, config: &Path, env: &[(&str, &str)]) -> Command {
    let mut c = command(state, env);
    c.env("CONDOR_CONFIG", config);
    c
}

impl PoolProcess {
    /// Like [`PoolProcess::start`], with the configuration file `config`
    /// read first (`env` overrides it).
    pub fn start_with_config(state: &Path, config: &Path, env: &[(&str, &str)]) -> PoolProcess {
        PoolProcess::up(state, command_with_config(state, config, env))
    }
}

/// Writes an executable script the pool's user owns.
/// `examples/config/<name>`, absolute: the configuration files the tests
/// load as an admin would.
pub fn example_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/config")
        .join(name)
        .canonicalize()
        .unwrap_or_else(|e| panic!("examples/config/{name}: {e}"))
}

/// [`example_path`] as text (for an `include :` line).
pub fn example(name: &str) -> String {
    example_path(name).display().to_string()
}

pub fn write_script(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    write(path, text);
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Whether process `pid` exists and is not a zombie.
pub fn alive(pid: i32) -> bool {
    proc_state(pid).is_some_and(|s| s != 'Z' && s != 'X')
}

/// The state letter of `/proc/<pid>/stat` (`R`, `S`, `T`, `Z`, ...).
pub fn proc_state(pid: i32) -> Option<char> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    text[text.rfind(')')? + 1..].trim_start().chars().next()
}

/// Whether `pid` is stopped: SIGSTOP (state `T`), or frozen in a cgroup
/// v2 (`frozen 1` in its cgroup's `cgroup.events`).
pub fn stopped(pid: i32) -> bool {
    if proc_state(pid) == Some('T') {
        return true;
    }
    let Ok(cg) = std::fs::read_to_string(format!("/proc/{pid}/cgroup")) else {
        return false;
    };
    cg.lines().filter_map(|l| l.strip_prefix("0::")).any(|p| {
        ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"]
            .iter()
            .any(|root| {
                std::fs::read_to_string(format!("{root}{p}/cgroup.events"))
                    .is_ok_and(|e| e.lines().any(|l| l.trim() == "frozen 1"))
            })
    })
}

/// The pids written one a line into `path` (empty until it exists).
pub fn read_pids(path: &Path) -> Vec<i32> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}
