//! The only code that touches a user's files: input transfer into the
//! sandbox, output transfer back to the job's initial directory, the job's
//! standard streams, and opening a user's job event log.
//!
//! Everything here runs with the user's credentials: [`crate::user_priv`]
//! calls it in a helper process that has dropped to the user before it
//! opens anything (when the daemon is root), or in the daemon itself when
//! the daemon is that user. So a name the user gave (an input file, an
//! output path, a symlink the job made) can reach only what the user could
//! reach anyway. On top of that, names inside the sandbox are resolved
//! beneath it (`openat2` with `RESOLVE_BENEATH`: no `..`, no absolute
//! path, no symlink out of it), output names that are absolute or hold
//! `..` are refused as HTCondor refuses them, and only regular files and
//! directories are transferred: a FIFO, a device or a socket is refused
//! without being read (opened non-blocking, checked with `fstat`).
//!
//! **Architecture Invariant:** no other module of the workspace opens,
//! creates, reads or writes a path that a user named (the tidy test
//! `user_paths_are_touched_only_by_the_transfer_module` keeps it so).

use std::collections::BTreeMap;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Component, Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rustix::fs::{self as rfs, Mode, OFlags, ResolveFlags};
use serde::{Deserialize, Serialize};

use crate::url_plugin::{self, Capabilities, Transfer};

/// Names the starter itself puts in a sandbox; never output.
pub const EXECUTABLE: &str = "condor_exec.exe";
pub const STDOUT: &str = "_condor_stdout";
pub const STDERR: &str = "_condor_stderr";
pub const JOB_AD: &str = ".job.ad";
pub const MACHINE_AD: &str = ".machine.ad";

/// How deep a transferred directory tree may go: a bound on the work one
/// job can ask for (and on a symlink loop in its input).
const MAX_DEPTH: usize = 64;

/// Size and modification time (seconds, nanoseconds) of each top-level
/// file of the sandbox, to tell new and changed output from input.
pub type Snapshot = BTreeMap<String, (u64, i64, i64)>;

/// One failed file operation: the path and what went wrong.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failure {
    /// The path as the user named it (or the sandbox name).
    pub path: PathBuf,
    /// Where it was going, for output.
    pub to: Option<PathBuf>,
    pub message: String,
    /// The operating system's error number, when it was one.
    pub errno: Option<i32>,
}

impl Failure {
    fn io(path: &Path, e: io::Error) -> Failure {
        Failure {
            path: path.to_path_buf(),
            to: None,
            message: e.to_string(),
            errno: e.raw_os_error(),
        }
    }

    fn refused(path: &Path, why: impl Into<String>) -> Failure {
        Failure {
            path: path.to_path_buf(),
            to: None,
            message: why.into(),
            errno: None,
        }
    }

    fn to(mut self, to: &Path) -> Failure {
        self.to = Some(to.to_path_buf());
        self
    }

    /// As an `io::Error`, for callers that report one.
    pub fn to_io_error(&self) -> io::Error {
        match self.errno {
            Some(n) => io::Error::from_raw_os_error(n),
            None => io::Error::new(io::ErrorKind::InvalidInput, self.message.clone()),
        }
    }
}

/// What to put into a fresh sandbox before the job starts.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct InputRequest {
    pub sandbox: PathBuf,
    /// The job's initial directory: relative names are taken from it.
    pub iwd: PathBuf,
    /// The job's program, copied in as [`EXECUTABLE`] (transfer_executable).
    pub executable: Option<String>,
    /// transfer_input_files (and the `input` file); `name/` copies a
    /// directory's contents.
    pub inputs: Vec<String>,
    /// Files the starter writes for the job (`.job.ad`, `.machine.ad`):
    /// name and text.
    pub ads: Vec<(String, String)>,
    /// URLs of transfer_input_files, fetched by the plugins (or the
    /// built-in `file://`) after the plain inputs.
    #[serde(default)]
    pub urls: Vec<String>,
    /// FILETRANSFER_PLUGINS.
    #[serde(default)]
    pub plugins: Vec<PathBuf>,
    /// How long each plugin run may take before it is killed.
    #[serde(default)]
    pub plugin_deadline: Duration,
}

/// What to copy back after the job.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct OutputRequest {
    pub sandbox: PathBuf,
    pub iwd: PathBuf,
    /// transfer_output_files; `None`: every new or changed top-level file.
    pub named: Option<Vec<String>>,
    /// The sandbox as input transfer left it.
    pub before: Snapshot,
    /// Standard streams: the sandbox file and where the job wants it
    /// (relative to `iwd` unless absolute).
    pub streams: Vec<(String, String)>,
}

/// Opens (creating if needed) the file a user named for appending, such as
/// the job event log. Refuses anything but a regular file.
pub fn open_append(path: &Path) -> Result<OwnedFd, Failure> {
    if !path.is_absolute() {
        return Err(Failure::refused(path, "the path is not absolute"));
    }
    let fd = rfs::open(
        path,
        OFlags::WRONLY
            | OFlags::APPEND
            | OFlags::CREATE
            | OFlags::NOCTTY
            | OFlags::NONBLOCK
            | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o644),
    )
    .map_err(|e| Failure::io(path, e.into()))?;
    must_be_regular(&fd, path)?;
    Ok(fd)
}

/// Fills the sandbox: the starter's ads, the executable, the input files.
/// Returns the sandbox as it is then, and the bytes transferred in (the
/// executable's and the input files'; the job's "Bytes Received").
pub fn input(req: &InputRequest) -> Result<(Snapshot, u64), Failure> {
    // The plugins' deadline counts from here, as the helper's does.
    let started = Instant::now();
    let sandbox = open_sandbox(&req.sandbox)?;
    let mut bytes = 0;
    for (name, text) in &req.ads {
        let f = create_beneath(sandbox.as_fd(), name, 0o644)
            .map_err(|e| Failure::io(&req.sandbox.join(name), e))?;
        io::Write::write_all(&mut File::from(f), text.as_bytes())
            .map_err(|e| Failure::io(&req.sandbox.join(name), e))?;
    }
    if let Some(cmd) = &req.executable {
        let from = resolve(&req.iwd, cmd);
        let src = open_source(&from)?;
        if !src.1.is_file() {
            return Err(Failure::refused(
                &from,
                "the executable is not a regular file",
            ));
        }
        let dst = create_beneath(sandbox.as_fd(), EXECUTABLE, 0o755)
            .map_err(|e| Failure::io(&from, e))?;
        bytes += copy_file(src.0, dst).map_err(|e| Failure::io(&from, e))?;
    }
    for item in &req.inputs {
        let contents_only = item.ends_with('/');
        let from = resolve(&req.iwd, item.trim_end_matches('/'));
        bytes += copy_in(&from, contents_only, sandbox.as_fd(), 0)?;
    }
    if !req.urls.is_empty() {
        bytes += url_input(req, sandbox.as_fd(), started + req.plugin_deadline)?;
    }
    Ok((snapshot(sandbox.as_fd()), bytes))
}

/// The most a plugin may print for `-classad`, or write to its
/// `-outfile` (it runs as the user: its answer is bounded).
const MAX_PLUGIN_ANSWER: u64 = 1 << 20;
/// How much of a plugin's standard error is kept for a message.
const MAX_PLUGIN_STDERR: u64 = 4096;
/// The plugin's `-infile` and `-outfile`, in the sandbox (removed after).
const PLUGIN_IN: &str = ".condor_plugin_in";
const PLUGIN_OUT: &str = ".condor_plugin_out";

/// Fetches the URL inputs: asks each plugin `-classad` once, then runs
/// each plugin the URLs need once (multi-file) or once a URL, in the
/// sandbox, as this process's user (the job's: see `user_priv`).
fn url_input(req: &InputRequest, sandbox: BorrowedFd<'_>, until: Instant) -> Result<u64, Failure> {
    let fail = |(url, why): (String, String)| Failure::refused(Path::new(&url), why);
    let env = plugin_env(req);
    let (plugins, unusable) = query_plugins(&req.plugins, &req.sandbox, &env, until);
    let plan = url_plugin::plan(&req.urls, &plugins).map_err(|(url, mut why)| {
        if !unusable.is_empty() {
            why = format!("{why}; unusable plugins: {}", unusable.join("; "));
        }
        fail((url, why))
    })?;
    let mut bytes = 0;
    for t in &plan.builtin {
        let from = url_plugin::file_url_path(&t.url).map_err(|e| fail((t.url.clone(), e)))?;
        bytes += copy_in(&from, false, sandbox, 0).map_err(|mut f| {
            f.message = format!("{} (from {})", f.message, t.url);
            f
        })?;
    }
    for (i, group) in &plan.by_plugin {
        let c = &plugins[*i];
        bytes += if c.multi_file {
            run_multi_file(c, group, req, sandbox, until).map_err(fail)?
        } else {
            let mut n = 0;
            for t in group {
                let local = req.sandbox.join(&t.name).to_string_lossy().into_owned();
                let r = run_plugin(
                    &c.plugin,
                    &[t.url.clone(), local],
                    &req.sandbox,
                    &env,
                    until,
                    false,
                )
                .map_err(|why| fail((t.url.clone(), why)))?;
                if r.status != Some(0) {
                    let mut why = format!(
                        "plugin `{}` failed: it exited with {}",
                        c.plugin.display(),
                        describe_exit(r.status)
                    );
                    let said = String::from_utf8_lossy(&r.stderr).trim().to_string();
                    if !said.is_empty() {
                        why = format!("{why}: {said}");
                    }
                    return Err(fail((t.url.clone(), why)));
                }
                n += open_beneath(sandbox, &t.name, OFlags::RDONLY)
                    .and_then(|f| Ok(rfs::fstat(&f)?.st_size.max(0) as u64))
                    .unwrap_or(0);
            }
            n
        };
    }
    Ok(bytes)
}

/// Asks each plugin `-classad` (in `cwd`, with `env`): what the usable
/// ones serve, and why each other one is unusable (missing, failing, a
/// bad answer: HTCondor's starter leaves such a plugin out too).
pub fn query_plugins(
    plugins: &[PathBuf],
    cwd: &Path,
    env: &[(String, String)],
    until: Instant,
) -> (Vec<Capabilities>, Vec<String>) {
    let mut usable = Vec::new();
    let mut unusable = Vec::new();
    for p in plugins {
        let asked = run_plugin(p, &["-classad".into()], cwd, env, until, true).and_then(|r| {
            if r.status != Some(0) {
                return Err(format!("it exited with {}", describe_exit(r.status)));
            }
            url_plugin::read_capabilities(p, &String::from_utf8_lossy(&r.stdout))
        });
        match asked {
            Ok(c) => usable.push(c),
            Err(why) => unusable.push(format!("`{}`: {why}", p.display())),
        }
    }
    (usable, unusable)
}

/// A plugin's environment for a job: where the job's and the machine's
/// ads are, and the sandbox.
fn plugin_env(req: &InputRequest) -> Vec<(String, String)> {
    let at = |n: &str| req.sandbox.join(n).to_string_lossy().into_owned();
    let mut env = vec![
        ("_CONDOR_JOB_AD".to_string(), at(JOB_AD)),
        (
            "_CONDOR_SCRATCH_DIR".to_string(),
            req.sandbox.to_string_lossy().into_owned(),
        ),
    ];
    if req.ads.iter().any(|(n, _)| n == MACHINE_AD) {
        env.push(("_CONDOR_MACHINE_AD".to_string(), at(MACHINE_AD)));
    }
    env
}

/// One run of a multi-file plugin for `group`: writes the `-infile`,
/// runs it, reads the `-outfile` back (bounded) and judges it.
fn run_multi_file(
    c: &Capabilities,
    group: &[Transfer],
    req: &InputRequest,
    sandbox: BorrowedFd<'_>,
    until: Instant,
) -> Result<u64, (String, String)> {
    let first = group.first().map(|t| t.url.clone()).unwrap_or_default();
    let io_fail = |what: &str, e: io::Error| (first.clone(), format!("{what}: {e}"));
    let input = create_beneath(sandbox, PLUGIN_IN, 0o600).map_err(|e| io_fail(PLUGIN_IN, e))?;
    io::Write::write_all(
        &mut File::from(input),
        url_plugin::infile(group, &req.sandbox).as_bytes(),
    )
    .map_err(|e| io_fail(PLUGIN_IN, e))?;
    let _ = rfs::unlinkat(sandbox, PLUGIN_OUT, rfs::AtFlags::empty());
    let args = [
        "-infile".to_string(),
        req.sandbox.join(PLUGIN_IN).to_string_lossy().into_owned(),
        "-outfile".to_string(),
        req.sandbox.join(PLUGIN_OUT).to_string_lossy().into_owned(),
    ];
    let ran = run_plugin(
        &c.plugin,
        &args,
        &req.sandbox,
        &plugin_env(req),
        until,
        false,
    );
    let answer = open_beneath(sandbox, PLUGIN_OUT, OFlags::RDONLY).and_then(|f| {
        let f = File::from(f);
        if rfs::FileType::from_raw_mode(rfs::fstat(&f)?.st_mode) != rfs::FileType::RegularFile {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        let mut text = String::new();
        io::Read::read_to_string(&mut io::Read::take(f, MAX_PLUGIN_ANSWER + 1), &mut text)?;
        Ok(text)
    });
    let _ = rfs::unlinkat(sandbox, PLUGIN_IN, rfs::AtFlags::empty());
    let _ = rfs::unlinkat(sandbox, PLUGIN_OUT, rfs::AtFlags::empty());
    let ran = ran.map_err(|why| (first.clone(), why))?;
    let results = match answer {
        Ok(text) if text.len() as u64 > MAX_PLUGIN_ANSWER => {
            return Err((
                first,
                format!(
                    "plugin `{}` wrote an -outfile over {MAX_PLUGIN_ANSWER} bytes",
                    c.plugin.display()
                ),
            ))
        }
        Ok(text) => url_plugin::read_outfile(&text).map_err(|e| {
            (
                first.clone(),
                format!("plugin `{}`: {e}", c.plugin.display()),
            )
        })?,
        Err(_) => Vec::new(),
    };
    url_plugin::judge(&c.plugin, group, &results, ran.status)
}

/// How a plugin run ended: its exit code (`None`: killed by a signal),
/// its standard output (when asked for) and the start of its standard
/// error.
struct PluginRun {
    status: Option<i32>,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
}

fn describe_exit(status: Option<i32>) -> String {
    match status {
        Some(n) => format!("status {n}"),
        None => "a signal".into(),
    }
}

/// Runs a plugin in the sandbox with a bounded answer, in a process group
/// of its own that is killed at `until` (and once it exits, so nothing it
/// left behind holds the pipes).
fn run_plugin(
    plugin: &Path,
    args: &[String],
    cwd: &Path,
    env: &[(String, String)],
    until: Instant,
    want_stdout: bool,
) -> Result<PluginRun, String> {
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new(plugin);
    cmd.args(args)
        .current_dir(cwd)
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(if want_stdout {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stderr(Stdio::piped())
        .process_group(0);
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot run plugin `{}`: {e}", plugin.display()))?;
    let pgid = child.id() as i32;
    let bounded = |pipe: Option<Box<dyn io::Read + Send>>, limit: u64| {
        std::thread::spawn(move || {
            let mut kept = Vec::new();
            if let Some(mut p) = pipe {
                let _ = io::Read::read_to_end(&mut io::Read::take(&mut p, limit), &mut kept);
                let _ = io::copy(&mut p, &mut io::sink());
            }
            kept
        })
    };
    let out = bounded(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn io::Read + Send>),
        MAX_PLUGIN_ANSWER + 1,
    );
    let err = bounded(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn io::Read + Send>),
        MAX_PLUGIN_STDERR,
    );
    // The plugin is waited for without being reaped (WNOWAIT): while it is
    // not reaped its pid, which is its group's id, cannot be given to
    // another process, so the group kill below reaches only its own.
    let pid = child.id() as libc::id_t;
    let exited = || {
        // SAFETY: an all-zero siginfo_t is valid; waitid fills it.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: waits on our own child, leaving it to be reaped below.
        let rc = unsafe {
            libc::waitid(
                libc::P_PID,
                pid,
                &mut info,
                libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
            )
        };
        // SAFETY: si_pid is set when waitid found the child exited.
        rc == 0 && unsafe { info.si_pid() } != 0
    };
    let finished = loop {
        if exited() {
            break Ok(());
        }
        if Instant::now() >= until {
            break Err(format!(
                "plugin `{}` did not finish in time and was killed",
                plugin.display()
            ));
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    // SAFETY: signals the plugin's own process group (its leader not yet
    // reaped).
    unsafe { libc::kill(-pgid, libc::SIGKILL) };
    let status = match child.wait() {
        Ok(s) => finished.map(|()| s),
        Err(e) => Err(format!("waiting for plugin `{}`: {e}", plugin.display())),
    };
    let stdout = out.join().unwrap_or_default();
    let stderr = err.join().unwrap_or_default();
    let status = status?;
    if stdout.len() as u64 > MAX_PLUGIN_ANSWER {
        return Err(format!(
            "plugin `{}` printed over {MAX_PLUGIN_ANSWER} bytes",
            plugin.display()
        ));
    }
    Ok(PluginRun {
        status: status.code(),
        stdout,
        stderr,
    })
}

/// What output transfer did: what failed, and the bytes it brought back
/// (the job's "Bytes Sent").
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Output {
    pub failures: Vec<Failure>,
    pub bytes: u64,
}

/// Copies the job's output back: the named files (or every new or changed
/// top-level file), then the standard streams. Each failure is reported;
/// the rest still goes back.
pub fn output(req: &OutputRequest) -> Output {
    let sandbox = match open_sandbox(&req.sandbox) {
        Ok(s) => s,
        Err(f) => {
            return Output {
                failures: vec![f],
                bytes: 0,
            }
        }
    };
    let mut failures = Vec::new();
    let mut bytes = 0;
    let names: Vec<(String, bool)> = match &req.named {
        Some(list) => list
            .iter()
            .map(|n| (n.trim_end_matches('/').to_string(), n.ends_with('/')))
            .collect(),
        None => {
            let now = snapshot(sandbox.as_fd());
            now.iter()
                .filter(|(name, stat)| {
                    ![EXECUTABLE, STDOUT, STDERR, JOB_AD, MACHINE_AD].contains(&name.as_str())
                        && req.before.get(*name) != Some(stat)
                })
                .map(|(n, _)| (n.clone(), false))
                .collect()
        }
    };
    for (name, contents_only) in names {
        match copy_out(sandbox.as_fd(), &name, contents_only, &req.iwd) {
            Ok(n) => bytes += n,
            Err(f) => failures.push(f),
        }
    }
    for (file, to) in &req.streams {
        let to = resolve(&req.iwd, to);
        let shown = Path::new(file);
        let src = match open_beneath(sandbox.as_fd(), file, OFlags::RDONLY) {
            Ok(s) => s,
            // The job's stream was never made: nothing to bring back.
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => continue,
            Err(e) => {
                failures.push(Failure::io(shown, e).to(&to));
                continue;
            }
        };
        let r = must_be_regular(&src, shown).and_then(|()| {
            let dst = create_plain(&to).map_err(|e| Failure::io(shown, e))?;
            copy_file(src, dst).map_err(|e| Failure::io(shown, e))
        });
        match r {
            Ok(n) => bytes += n,
            Err(f) => failures.push(f.to(&to)),
        }
    }
    Output { failures, bytes }
}

/// A relative name taken from `base`; an absolute one as it is.
pub fn resolve(base: &Path, name: &str) -> PathBuf {
    let p = Path::new(name);
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        base.join(p)
    }
}

/// Whether an output name stays inside the sandbox: relative, no `..`.
/// HTCondor refuses the others.
pub fn check_output_name(name: &str) -> Result<(), String> {
    let p = Path::new(name);
    if name.is_empty() {
        return Err("an empty name".into());
    }
    if p.is_absolute() {
        return Err(format!(
            "`{name}` is an absolute path; output is named relative to the job's sandbox"
        ));
    }
    if p.components().any(|c| matches!(c, Component::ParentDir)) {
        return Err(format!(
            "`{name}` holds `..`; output must stay inside the job's sandbox"
        ));
    }
    Ok(())
}

fn open_sandbox(path: &Path) -> Result<OwnedFd, Failure> {
    rfs::open(
        path,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| Failure::io(path, e.into()))
}

/// Opens `name` beneath `dir`: no absolute path, no `..` out of it, no
/// symlink that leads out of it, no magic link; never blocks on a FIFO.
fn open_beneath(dir: BorrowedFd<'_>, name: &str, flags: OFlags) -> io::Result<OwnedFd> {
    let flags = flags | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
    let how = ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS;
    // openat2 takes a mode only with O_CREAT.
    let mode = if flags.contains(OFlags::CREATE) {
        Mode::from_raw_mode(0o644)
    } else {
        Mode::empty()
    };
    match rfs::openat2(dir, name, flags, mode, how) {
        Err(rustix::io::Errno::NOSYS) => open_beneath_by_steps(dir, name, flags),
        r => r.map_err(io::Error::from),
    }
}

/// For kernels without `openat2` (before 5.6): one component at a time,
/// following no symlink at all.
fn open_beneath_by_steps(dir: BorrowedFd<'_>, name: &str, flags: OFlags) -> io::Result<OwnedFd> {
    let parts: Vec<&str> = name
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    if name.starts_with('/') || parts.contains(&"..") || parts.is_empty() {
        return Err(io::Error::from_raw_os_error(libc::EXDEV));
    }
    let mut here: Option<OwnedFd> = None;
    for (i, part) in parts.iter().enumerate() {
        let at = here.as_ref().map_or(dir, |f| f.as_fd());
        let last = i + 1 == parts.len();
        let f = if last {
            flags | OFlags::NOFOLLOW
        } else {
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC
        };
        let fd = rfs::openat(at, *part, f, Mode::from_raw_mode(0o644))?;
        here = Some(fd);
    }
    here.ok_or_else(|| io::Error::from_raw_os_error(libc::ENOENT))
}

/// Creates (or truncates) a regular file beneath `dir`.
fn create_beneath(dir: BorrowedFd<'_>, name: &str, mode: u32) -> io::Result<OwnedFd> {
    let fd = open_beneath(
        dir,
        name,
        OFlags::WRONLY | OFlags::CREATE | OFlags::TRUNC | OFlags::NOFOLLOW,
    )?;
    let st = rfs::fstat(&fd)?;
    if rfs::FileType::from_raw_mode(st.st_mode) != rfs::FileType::RegularFile {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    rfs::fchmod(&fd, Mode::from_raw_mode(mode))?;
    Ok(fd)
}

/// Creates (or truncates) a file the user named, where the user's own
/// rights allow it; refuses to write into anything but a regular file.
fn create_plain(path: &Path) -> io::Result<OwnedFd> {
    let fd = rfs::open(
        path,
        OFlags::WRONLY
            | OFlags::CREATE
            | OFlags::TRUNC
            | OFlags::NONBLOCK
            | OFlags::NOCTTY
            | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o644),
    )?;
    let st = rfs::fstat(&fd)?;
    if rfs::FileType::from_raw_mode(st.st_mode) != rfs::FileType::RegularFile {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("`{}` is not a regular file", path.display()),
        ));
    }
    Ok(fd)
}

fn must_be_regular(fd: &OwnedFd, path: &Path) -> Result<(), Failure> {
    let st = rfs::fstat(fd).map_err(|e| Failure::io(path, e.into()))?;
    let kind = rfs::FileType::from_raw_mode(st.st_mode);
    if kind != rfs::FileType::RegularFile {
        return Err(Failure::refused(
            path,
            format!("it is {}, not a regular file", describe(kind)),
        ));
    }
    Ok(())
}

fn describe(kind: rfs::FileType) -> &'static str {
    match kind {
        rfs::FileType::RegularFile => "a regular file",
        rfs::FileType::Directory => "a directory",
        rfs::FileType::Symlink => "a symbolic link",
        rfs::FileType::Fifo => "a FIFO",
        rfs::FileType::Socket => "a socket",
        rfs::FileType::CharacterDevice => "a character device",
        rfs::FileType::BlockDevice => "a block device",
        _ => "of an unknown kind",
    }
}

/// What a source is, once open.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    File,
    Dir,
}

impl Kind {
    fn is_file(self) -> bool {
        self == Kind::File
    }
}

/// Opens a source the user named (anywhere the user may read), refusing
/// anything but a regular file or a directory before it is opened for
/// reading (a device is never opened, a FIFO never waited on).
fn open_source(path: &Path) -> Result<(OwnedFd, Kind), Failure> {
    let kind_of = |mode: u32| match rfs::FileType::from_raw_mode(mode) {
        rfs::FileType::RegularFile => Ok(Kind::File),
        rfs::FileType::Directory => Ok(Kind::Dir),
        other => Err(Failure::refused(
            path,
            format!(
                "it is {}; only files and directories are transferred",
                describe(other)
            ),
        )),
    };
    let before = rfs::stat(path).map_err(|e| Failure::io(path, e.into()))?;
    kind_of(before.st_mode)?;
    let fd = rfs::open(
        path,
        OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| Failure::io(path, e.into()))?;
    let st = rfs::fstat(&fd).map_err(|e| Failure::io(path, e.into()))?;
    if (st.st_dev, st.st_ino) != (before.st_dev, before.st_ino) {
        return Err(Failure::refused(
            path,
            "it changed while it was being opened",
        ));
    }
    Ok((fd, kind_of(st.st_mode)?))
}

/// Copies one file's bytes; how many.
fn copy_file(src: OwnedFd, dst: OwnedFd) -> io::Result<u64> {
    let (mut src, mut dst) = (File::from(src), File::from(dst));
    io::copy(&mut src, &mut dst)
}

/// Copies a file or a directory tree the user named into the directory
/// `dest` (beneath the sandbox); `contents_only` copies a directory's
/// contents, as `name/` does in HTCondor's transfer lists.
fn copy_in(
    from: &Path,
    contents_only: bool,
    dest: BorrowedFd<'_>,
    depth: usize,
) -> Result<u64, Failure> {
    if depth > MAX_DEPTH {
        return Err(Failure::refused(
            from,
            format!("the directory tree is deeper than {MAX_DEPTH} levels"),
        ));
    }
    let (fd, kind) = open_source(from)?;
    let name = from
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| Failure::refused(from, "the path names no file"))?;
    if kind.is_file() {
        let mode = rfs::fstat(&fd).map_or(0o644, |s| s.st_mode & 0o777);
        let dst = create_beneath(dest, name, mode).map_err(|e| Failure::io(from, e))?;
        return copy_file(fd, dst).map_err(|e| Failure::io(from, e));
    }
    let target = if contents_only {
        None
    } else {
        Some(make_dir_beneath(dest, name).map_err(|e| Failure::io(from, e))?)
    };
    let into = target.as_ref().map_or(dest, |t| t.as_fd());
    let mut bytes = 0;
    for entry in list(&fd).map_err(|e| Failure::io(from, e))? {
        bytes += copy_in(&from.join(entry), false, into, depth + 1)?;
    }
    Ok(bytes)
}

/// Makes directory `name` beneath `dir` (or takes the one there) and
/// opens it.
fn make_dir_beneath(dir: BorrowedFd<'_>, name: &str) -> io::Result<OwnedFd> {
    match rfs::mkdirat(dir, name, Mode::from_raw_mode(0o755)) {
        Ok(()) | Err(rustix::io::Errno::EXIST) => {}
        Err(e) => return Err(e.into()),
    }
    open_beneath(
        dir,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW,
    )
}

/// The names in an open directory (not `.` and `..`), sorted.
fn list(dir: &OwnedFd) -> io::Result<Vec<String>> {
    let mut names = Vec::new();
    for entry in rfs::Dir::read_from(dir)? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name != "." && name != ".." {
            names.push(name);
        }
    }
    names.sort();
    Ok(names)
}

/// The sandbox's top-level regular files (symlinks not followed).
fn snapshot(sandbox: BorrowedFd<'_>) -> Snapshot {
    let mut s = Snapshot::new();
    let Ok(fd) = rfs::openat(
        sandbox,
        ".",
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    ) else {
        return s;
    };
    for name in list(&fd).unwrap_or_default() {
        if let Ok(st) = rfs::statat(sandbox, name.as_str(), rfs::AtFlags::SYMLINK_NOFOLLOW) {
            if rfs::FileType::from_raw_mode(st.st_mode) == rfs::FileType::RegularFile {
                s.insert(
                    name,
                    (st.st_size as u64, st.st_mtime, st.st_mtime_nsec as i64),
                );
            }
        }
    }
    s
}

/// Copies `name` (beneath the sandbox) to the job's initial directory,
/// under its base name; `contents_only` copies a directory's contents.
fn copy_out(
    sandbox: BorrowedFd<'_>,
    name: &str,
    contents_only: bool,
    iwd: &Path,
) -> Result<u64, Failure> {
    let shown = Path::new(name);
    check_output_name(name).map_err(|why| Failure::refused(shown, why))?;
    let src = open_beneath(sandbox, name, OFlags::RDONLY).map_err(|e| {
        if e.raw_os_error() == Some(libc::EXDEV) || e.raw_os_error() == Some(libc::ELOOP) {
            Failure::refused(
                shown,
                "it leads out of the job's sandbox (a symbolic link); refused",
            )
        } else {
            Failure::io(shown, e)
        }
    })?;
    let base = shown
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| Failure::refused(shown, "the name has no file name"))?;
    let to = if contents_only {
        iwd.to_path_buf()
    } else {
        iwd.join(base)
    };
    copy_out_fd(src, shown, contents_only, &to, 0).map_err(|f| f.to(&to))
}

fn copy_out_fd(
    src: OwnedFd,
    shown: &Path,
    contents_only: bool,
    to: &Path,
    depth: usize,
) -> Result<u64, Failure> {
    let st = rfs::fstat(&src).map_err(|e| Failure::io(shown, e.into()))?;
    match rfs::FileType::from_raw_mode(st.st_mode) {
        rfs::FileType::RegularFile => {
            let dst = create_plain(to).map_err(|e| Failure::io(shown, e))?;
            copy_file(src, dst).map_err(|e| Failure::io(shown, e))
        }
        rfs::FileType::Directory => {
            if depth > MAX_DEPTH {
                return Err(Failure::refused(
                    shown,
                    format!("the directory tree is deeper than {MAX_DEPTH} levels"),
                ));
            }
            if !contents_only {
                match std::fs::create_dir(to) {
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists && to.is_dir() => {}
                    Err(e) => return Err(Failure::io(shown, e)),
                }
            }
            let mut bytes = 0;
            for entry in list(&src).map_err(|e| Failure::io(shown, e))? {
                let inner = shown.join(&entry);
                let fd = open_beneath(src.as_fd(), &entry, OFlags::RDONLY).map_err(|e| {
                    if e.raw_os_error() == Some(libc::EXDEV) {
                        Failure::refused(&inner, "it leads out of the job's sandbox; refused")
                    } else {
                        Failure::io(&inner, e)
                    }
                })?;
                bytes += copy_out_fd(fd, &inner, false, &to.join(&entry), depth + 1)?;
            }
            Ok(bytes)
        }
        other => Err(Failure::refused(
            shown,
            format!(
                "it is {}; only files and directories are transferred",
                describe(other)
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dirs() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let t = tempfile::tempdir().unwrap();
        let iwd = t.path().join("iwd");
        let sandbox = t.path().join("sandbox");
        std::fs::create_dir(&iwd).unwrap();
        std::fs::create_dir(&sandbox).unwrap();
        (t, iwd, sandbox)
    }

    fn input_req(iwd: &Path, sandbox: &Path, inputs: &[&str]) -> InputRequest {
        InputRequest {
            sandbox: sandbox.to_path_buf(),
            iwd: iwd.to_path_buf(),
            executable: None,
            inputs: inputs.iter().map(|s| s.to_string()).collect(),
            ads: vec![(JOB_AD.into(), "A = 1\n".into())],
            urls: Vec::new(),
            plugins: Vec::new(),
            plugin_deadline: Duration::from_secs(20),
        }
    }

    /// A shell-script plugin for the invented `zkm` scheme (the manual's
    /// example): `zkm://NAME` is copied from `store`; `zkm://fail-*`
    /// fails with a message; `zkm://hang` never ends.
    fn zkm_plugin(dir: &Path, store: &Path, multi: bool) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let path = dir.join(if multi { "zkm_plugin" } else { "zkm_old" });
        let body = if multi {
            format!(
                r#"#!/bin/sh
if [ "$1" = -classad ]; then
  printf 'PluginVersion = "0.1"\nPluginType = "FileTransfer"\nSupportedMethods = "zkm"\nMultipleFileSupport = true\n'
  exit 0
fi
[ "$1" = -infile ] && [ "$3" = -outfile ] || exit 9
pwd > plugin.cwd
rc=0
: > "$4"
sed -e 's/.*Url = "zkm:\/\/\([^"]*\)".*LocalFileName = "\([^"]*\)".*/\1 \2/' "$2" | while read name local; do
  [ "$name" = hang ] && sleep 100
  if cp "{store}/$name" "$local" 2>/dev/null; then
    echo "[ TransferSuccess = true; TransferUrl = \"zkm://$name\"; TransferTotalBytes = $(wc -c < "$local") ]" >> "$4"
  else
    echo "[ TransferSuccess = false; TransferUrl = \"zkm://$name\"; TransferError = \"zkm: no thing called $name\" ]" >> "$4"
  fi
done
grep -q 'TransferSuccess = false' "$4" && exit 1
exit 0
"#,
                store = store.display()
            )
        } else {
            format!(
                "#!/bin/sh
[ \"$1\" = -classad ] && {{ echo 'PluginType = \"FileTransfer\"'; echo 'SupportedMethods = \"zkm\"'; exit 0; }}
                 cp \"{}/${{1#zkm://}}\" \"$2\" || {{ echo \"cannot fetch $1\" >&2; exit 4; }}
",
                store.display()
            )
        };
        std::fs::write(&path, body).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    #[test]
    fn url_inputs_are_fetched_by_the_plugin_for_their_scheme() {
        let (t, iwd, sandbox) = dirs();
        let store = t.path().join("store");
        std::fs::create_dir(&store).unwrap();
        std::fs::write(store.join("thing.txt"), "zkm data\n").unwrap();
        std::fs::write(store.join("other"), "12").unwrap();
        std::fs::write(iwd.join("local.txt"), "plain file\n").unwrap();
        let mut req = input_req(&iwd, &sandbox, &[]);
        req.plugins = vec![
            t.path().join("missing_plugin"),
            zkm_plugin(t.path(), &store, true),
        ];
        req.urls = vec![
            "zkm://thing.txt".into(),
            "zkm://other".into(),
            format!("file://{}", iwd.join("local.txt").display()),
        ];
        let (snap, bytes) = input(&req).unwrap();
        assert_eq!(
            std::fs::read_to_string(sandbox.join("thing.txt")).unwrap(),
            "zkm data\n"
        );
        assert_eq!(
            std::fs::read_to_string(sandbox.join("other")).unwrap(),
            "12"
        );
        assert_eq!(
            std::fs::read_to_string(sandbox.join("local.txt")).unwrap(),
            "plain file\n"
        );
        assert_eq!(bytes, 9 + 2 + 11);
        // It ran in the sandbox; its -infile and -outfile are gone.
        assert_eq!(
            std::fs::read_to_string(sandbox.join("plugin.cwd"))
                .unwrap()
                .trim(),
            sandbox.to_str().unwrap()
        );
        assert!(!snap.contains_key(PLUGIN_IN) && !snap.contains_key(PLUGIN_OUT));

        // A failed transfer names the URL and says what the plugin said.
        let (_t2, iwd2, sandbox2) = dirs();
        let mut req = input_req(&iwd2, &sandbox2, &[]);
        req.plugins = vec![zkm_plugin(t.path(), &store, true)];
        req.urls = vec!["zkm://thing.txt".into(), "zkm://nothing".into()];
        let f = input(&req).unwrap_err();
        assert_eq!(f.path, Path::new("zkm://nothing"));
        assert!(f.message.contains("zkm: no thing called nothing"), "{f:?}");

        // The one-URL-a-run form: its exit status and standard error.
        let mut req = input_req(&iwd2, &sandbox2, &[]);
        req.plugins = vec![zkm_plugin(t.path(), &store, false)];
        req.urls = vec!["zkm://other".into()];
        input(&req).unwrap();
        assert_eq!(
            std::fs::read_to_string(sandbox2.join("other")).unwrap(),
            "12"
        );
        req.urls = vec!["zkm://absent".into()];
        let f = input(&req).unwrap_err();
        assert!(
            f.message.contains("status 4") && f.message.contains("cannot fetch zkm://absent"),
            "{f:?}"
        );

        // A scheme nobody serves; the plugins that could not answer are named.
        req.plugins = vec![t.path().join("missing_plugin")];
        let f = input(&req).unwrap_err();
        assert!(
            f.message
                .contains("no file transfer plugin serves the `zkm` scheme"),
            "{f:?}"
        );
        assert!(f.message.contains("missing_plugin"), "{f:?}");
    }

    #[test]
    fn a_plugin_that_hangs_is_killed_at_its_deadline() {
        let (t, iwd, sandbox) = dirs();
        let mut req = input_req(&iwd, &sandbox, &[]);
        req.plugins = vec![zkm_plugin(t.path(), t.path(), true)];
        req.urls = vec!["zkm://hang".into()];
        req.plugin_deadline = Duration::from_secs(2);
        let started = Instant::now();
        let f = input(&req).unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(10));
        assert!(f.message.contains("did not finish in time"), "{f:?}");
    }

    #[test]
    fn input_copies_files_trees_and_ads_and_snapshots_the_sandbox() {
        let (_t, iwd, sandbox) = dirs();
        std::fs::write(iwd.join("a"), "aa").unwrap();
        std::fs::create_dir_all(iwd.join("d/e")).unwrap();
        std::fs::write(iwd.join("d/e/f"), "ff").unwrap();
        let (snap, bytes) = input(&input_req(&iwd, &sandbox, &["a", "d", "d/"])).unwrap();
        // a, d/e/f and e/f: the starter's own ad is not the job's input.
        assert_eq!(bytes, 6);
        assert_eq!(std::fs::read_to_string(sandbox.join("a")).unwrap(), "aa");
        assert_eq!(
            std::fs::read_to_string(sandbox.join("d/e/f")).unwrap(),
            "ff"
        );
        assert_eq!(std::fs::read_to_string(sandbox.join("e/f")).unwrap(), "ff");
        assert_eq!(
            std::fs::read_to_string(sandbox.join(JOB_AD)).unwrap(),
            "A = 1\n"
        );
        assert!(snap.contains_key("a") && snap.contains_key(JOB_AD));
        assert!(
            !snap.contains_key("d"),
            "directories are not in the snapshot"
        );
    }

    #[test]
    fn a_fifo_as_input_is_refused_without_blocking() {
        let (_t, iwd, sandbox) = dirs();
        let fifo = iwd.join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid C string.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        let e = input(&input_req(&iwd, &sandbox, &["fifo"])).unwrap_err();
        assert!(e.message.contains("FIFO"), "{e:?}");
        let e = input(&input_req(&iwd, &sandbox, &["/dev/zero"])).unwrap_err();
        assert!(e.message.contains("character device"), "{e:?}");
    }

    #[test]
    fn output_refuses_names_and_symlinks_that_leave_the_sandbox() {
        let (t, iwd, sandbox) = dirs();
        let outside = t.path().join("outside");
        std::fs::create_dir(&outside).unwrap();
        std::fs::write(outside.join("secret"), "s3cret").unwrap();
        std::os::unix::fs::symlink(outside.join("secret"), sandbox.join("link")).unwrap();
        std::os::unix::fs::symlink(&outside, sandbox.join("dirlink")).unwrap();
        std::fs::write(sandbox.join("good"), "g").unwrap();
        let req = OutputRequest {
            sandbox: sandbox.clone(),
            iwd: iwd.clone(),
            named: Some(vec![
                "link".into(),
                "dirlink/".into(),
                "dirlink/secret".into(),
                "../outside/secret".into(),
                outside.join("secret").display().to_string(),
                "good".into(),
            ]),
            before: Snapshot::new(),
            streams: vec![],
        };
        let out = output(&req);
        assert_eq!(out.bytes, 1, "only `good` went back");
        let failures = out.failures;
        assert_eq!(failures.len(), 5, "{failures:#?}");
        assert!(failures[3].message.contains(".."), "{:?}", failures[3]);
        assert!(
            failures[4].message.contains("absolute"),
            "{:?}",
            failures[4]
        );
        assert_eq!(std::fs::read_to_string(iwd.join("good")).unwrap(), "g");
        assert!(!iwd.join("secret").exists() && !iwd.join("link").exists());
    }

    #[test]
    fn output_takes_new_and_changed_files_and_streams() {
        let (_t, iwd, sandbox) = dirs();
        let (snap, _) = input(&input_req(&iwd, &sandbox, &[])).unwrap();
        std::fs::write(sandbox.join("new"), "n").unwrap();
        std::fs::write(sandbox.join(STDOUT), "out").unwrap();
        let out = output(&OutputRequest {
            sandbox: sandbox.clone(),
            iwd: iwd.clone(),
            named: None,
            before: snap,
            streams: vec![
                (STDOUT.into(), "job.out".into()),
                (STDERR.into(), "job.err".into()),
            ],
        });
        assert!(out.failures.is_empty(), "{out:?}");
        assert_eq!(out.bytes, 4, "`new` and the output stream");
        assert_eq!(std::fs::read_to_string(iwd.join("new")).unwrap(), "n");
        assert_eq!(std::fs::read_to_string(iwd.join("job.out")).unwrap(), "out");
        assert!(!iwd.join(JOB_AD).exists());
        assert!(
            !iwd.join("job.err").exists(),
            "a stream never written is not made"
        );
    }

    #[test]
    fn open_append_refuses_what_is_not_a_regular_file() {
        let (_t, iwd, _) = dirs();
        let log = iwd.join("log");
        let fd = open_append(&log).unwrap();
        io::Write::write_all(&mut File::from(fd), b"x\n").unwrap();
        assert!(open_append(&iwd).is_err());
        assert!(open_append(Path::new("/dev/null")).is_err());
        assert!(open_append(Path::new("relative")).is_err());
    }
}
