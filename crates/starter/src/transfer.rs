//! The only code that touches a user's files: input transfer into the
//! sandbox, output transfer back to the job's initial directory, the job's
//! standard streams, URL transfers both ways (the FILETRANSFER_PLUGINS it
//! runs, the built-in `file://` copies and `http(s)://` requests), and
//! opening a user's job event log.
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
    /// A failed plugin run: HTCondor's HoldReasonSubCode for it
    /// ([`url_plugin::upload_subcode`], [`url_plugin::download_subcode`]);
    /// for an upload `to` is the URL.
    #[serde(default)]
    pub subcode: Option<i64>,
}

impl Failure {
    fn io(path: &Path, e: io::Error) -> Failure {
        Failure {
            path: path.to_path_buf(),
            to: None,
            message: e.to_string(),
            errno: e.raw_os_error(),
            subcode: None,
        }
    }

    fn refused(path: &Path, why: impl Into<String>) -> Failure {
        Failure {
            path: path.to_path_buf(),
            to: None,
            message: why.into(),
            errno: None,
            subcode: None,
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
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
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
    /// The most an `http(s)://` input may bring (the slot's disk);
    /// `None`: no bound but the deadline.
    #[serde(default)]
    pub url_max_bytes: Option<u64>,
}

/// What to copy back after the job.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct OutputRequest {
    pub sandbox: PathBuf,
    pub iwd: PathBuf,
    /// transfer_output_files; `None`: every new or changed top-level file.
    pub named: Option<Vec<String>>,
    /// The sandbox as input transfer left it.
    pub before: Snapshot,
    /// Standard streams: the sandbox file and where the job wants it
    /// (relative to `iwd` unless absolute; a URL is uploaded there).
    pub streams: Vec<(String, String)>,
    /// OutputDestination: every output file goes to this URL + `/` +
    /// its name (the streams unless they name a URL themselves stay).
    #[serde(default)]
    pub destination: Option<String>,
    /// TransferOutputRemaps, read ([`url_plugin::parse_remaps`]); the
    /// targets that are URLs are uploaded there.
    #[serde(default)]
    pub remaps: Vec<(String, String)>,
    /// FILETRANSFER_PLUGINS, for the uploads.
    #[serde(default)]
    pub plugins: Vec<PathBuf>,
    /// How long each upload may take before it is killed (from the start
    /// of output transfer).
    #[serde(default)]
    pub plugin_deadline: Duration,
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
    let fail =
        |(url, why): (String, String)| Failure::refused(Path::new(&url_plugin::shown(&url)), why);
    let plugin_fail = |url: &str, why: String, subcode: i64| Failure {
        subcode: Some(subcode),
        ..fail((url.to_string(), why))
    };
    let env = plugin_env(&req.sandbox, req.ads.iter().any(|(n, _)| n == MACHINE_AD));
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
    let mut fetched = 0u64;
    for t in &plan.http {
        let f = create_beneath(sandbox, &t.name, 0o644)
            .map_err(|e| fail((t.url.clone(), format!("{}: {e}", t.name))))?;
        let left = req
            .url_max_bytes
            .map_or(u64::MAX, |m| m.saturating_sub(fetched));
        fetched += crate::http::get(&t.url, &mut File::from(f), left, until)
            .map_err(|why| fail((t.url.clone(), why)))?;
    }
    bytes += fetched;
    for (i, group) in &plan.by_plugin {
        let c = &plugins[*i];
        bytes += if c.multi_file {
            run_multi_file(c, group, &req.sandbox, sandbox, &env, until, false)
                .map_err(|p| plugin_fail(&p.url, p.why, p.subcode))?
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
                .map_err(|e| {
                    let subcode = url_plugin::download_subcode(None, None, e.timed_out);
                    plugin_fail(&t.url, e.why, subcode)
                })?;
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
                    let subcode = url_plugin::download_subcode(r.status, r.signal, false);
                    return Err(plugin_fail(&t.url, why, subcode));
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
        let asked = run_plugin(p, &["-classad".into()], cwd, env, until, true)
            .map_err(|e| e.why)
            .and_then(|r| {
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
fn plugin_env(sandbox: &Path, machine_ad: bool) -> Vec<(String, String)> {
    let at = |n: &str| sandbox.join(n).to_string_lossy().into_owned();
    let mut env = vec![
        ("_CONDOR_JOB_AD".to_string(), at(JOB_AD)),
        (
            "_CONDOR_SCRATCH_DIR".to_string(),
            sandbox.to_string_lossy().into_owned(),
        ),
    ];
    if machine_ad {
        env.push(("_CONDOR_MACHINE_AD".to_string(), at(MACHINE_AD)));
    }
    env
}

/// A plugin run that failed: the URL it failed for, why, and its
/// HoldReasonSubCode ([`url_plugin::upload_subcode`],
/// [`url_plugin::download_subcode`]).
struct PluginFailure {
    url: String,
    why: String,
    subcode: i64,
}

/// One run of a multi-file plugin for `group` (`upload`: with
/// `-upload`, the sandbox files going to the URLs): writes the
/// `-infile`, runs it, reads the `-outfile` back (bounded) and judges it.
fn run_multi_file(
    c: &Capabilities,
    group: &[Transfer],
    sandbox_path: &Path,
    sandbox: BorrowedFd<'_>,
    env: &[(String, String)],
    until: Instant,
    upload: bool,
) -> Result<u64, PluginFailure> {
    let first = group.first().map(|t| t.url.clone()).unwrap_or_default();
    let io_fail = |what: &str, e: io::Error| PluginFailure {
        url: first.clone(),
        why: format!("{what}: {e}"),
        subcode: e.raw_os_error().map_or(0, i64::from),
    };
    let input = create_beneath(sandbox, PLUGIN_IN, 0o600).map_err(|e| io_fail(PLUGIN_IN, e))?;
    io::Write::write_all(
        &mut File::from(input),
        url_plugin::infile(group, sandbox_path).as_bytes(),
    )
    .map_err(|e| io_fail(PLUGIN_IN, e))?;
    let _ = rfs::unlinkat(sandbox, PLUGIN_OUT, rfs::AtFlags::empty());
    let mut args = vec![
        "-infile".to_string(),
        sandbox_path.join(PLUGIN_IN).to_string_lossy().into_owned(),
        "-outfile".to_string(),
        sandbox_path.join(PLUGIN_OUT).to_string_lossy().into_owned(),
    ];
    if upload {
        args.push("-upload".to_string());
    }
    let ran = run_plugin(&c.plugin, &args, sandbox_path, env, until, false);
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
    let subcode_of = if upload {
        url_plugin::upload_subcode
    } else {
        url_plugin::download_subcode
    };
    let ran = ran.map_err(|e| PluginFailure {
        url: first.clone(),
        subcode: subcode_of(None, None, e.timed_out),
        why: e.why,
    })?;
    let subcode = subcode_of(ran.status, ran.signal, false);
    let results = match answer {
        Ok(text) if text.len() as u64 > MAX_PLUGIN_ANSWER => {
            return Err(PluginFailure {
                url: first,
                why: format!(
                    "plugin `{}` wrote an -outfile over {MAX_PLUGIN_ANSWER} bytes",
                    c.plugin.display()
                ),
                subcode,
            })
        }
        Ok(text) => url_plugin::read_outfile(&text).map_err(|e| PluginFailure {
            url: first.clone(),
            why: format!("plugin `{}`: {e}", c.plugin.display()),
            subcode,
        })?,
        Err(_) => Vec::new(),
    };
    url_plugin::judge(&c.plugin, group, &results, ran.status).map_err(|(url, why)| PluginFailure {
        url,
        why,
        subcode,
    })
}

/// How long a plugin's pipes are read after it ended and its process
/// group was killed.
const PIPE_GRACE: Duration = Duration::from_secs(2);

/// One of a plugin's pipes, read on a thread of its own: at most `limit`
/// bytes kept, the rest read and dropped (so the plugin never blocks on
/// a full pipe).
struct PipeReader {
    kept: std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
    closed: std::sync::mpsc::Receiver<()>,
}

fn read_pipe(pipe: Option<Box<dyn io::Read + Send>>, limit: u64) -> PipeReader {
    let kept = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let (tx, closed) = std::sync::mpsc::channel();
    let into = kept.clone();
    std::thread::spawn(move || {
        if let Some(mut p) = pipe {
            let mut buf = [0u8; 8192];
            loop {
                match io::Read::read(&mut p, &mut buf) {
                    Ok(0) => break,
                    Ok(n) => {
                        let mut v = into.lock().unwrap_or_else(|e| e.into_inner());
                        let room = usize::try_from(limit)
                            .unwrap_or(usize::MAX)
                            .saturating_sub(v.len());
                        v.extend_from_slice(&buf[..n.min(room)]);
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
        }
        let _ = tx.send(());
    });
    PipeReader { kept, closed }
}

impl PipeReader {
    /// What was kept once the pipe closed, or by `until` if it did not.
    fn take(self, until: Instant) -> Vec<u8> {
        let _ = self
            .closed
            .recv_timeout(until.saturating_duration_since(Instant::now()));
        std::mem::take(&mut *self.kept.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// How a plugin run ended: its exit code (`None`: killed by a signal),
/// the signal, its standard output (when asked for) and the start of its
/// standard error.
struct PluginRun {
    status: Option<i32>,
    signal: Option<i32>,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
}

/// A plugin that could not be run to its end: why, and whether it was
/// killed at its deadline.
struct RunFailure {
    why: String,
    timed_out: bool,
}

impl From<String> for RunFailure {
    fn from(why: String) -> RunFailure {
        RunFailure {
            why,
            timed_out: false,
        }
    }
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
) -> Result<PluginRun, RunFailure> {
    use std::os::unix::process::CommandExt;
    use std::os::unix::process::ExitStatusExt;
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
    let out = read_pipe(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn io::Read + Send>),
        MAX_PLUGIN_ANSWER + 1,
    );
    let err = read_pipe(
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
            break Err(RunFailure {
                why: format!(
                    "plugin `{}` did not finish in time and was killed",
                    plugin.display()
                ),
                timed_out: true,
            });
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    // SAFETY: signals the plugin's own process group (its leader not yet
    // reaped).
    unsafe { libc::kill(-pgid, libc::SIGKILL) };
    let status = match child.wait() {
        Ok(s) => finished.map(|()| s),
        Err(e) => Err(format!("waiting for plugin `{}`: {e}", plugin.display()).into()),
    };
    // A process the plugin left in a session of its own may still hold
    // the pipes: what came by then is taken, and it is not waited for.
    let grace = Instant::now() + PIPE_GRACE;
    let stdout = out.take(grace);
    let stderr = err.take(grace);
    let status = status?;
    if stdout.len() as u64 > MAX_PLUGIN_ANSWER {
        return Err(format!(
            "plugin `{}` printed over {MAX_PLUGIN_ANSWER} bytes",
            plugin.display()
        )
        .into());
    }
    Ok(PluginRun {
        status: status.code(),
        signal: status.signal(),
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

/// What output transfer has to do, decided from the request and the
/// sandbox: files to copy back (sandbox name, a directory's contents
/// only, where it goes: relative to the job's initial directory unless
/// absolute; `None` for its own name there), streams to copy back
/// (sandbox name, destination), uploads to URLs; and what was refused
/// on the way.
struct OutputPlan {
    copies: Vec<(String, bool, Option<String>)>,
    streams: Vec<(String, String)>,
    uploads: Vec<Transfer>,
    failures: Vec<Failure>,
}

fn plan_output(req: &OutputRequest, sandbox: BorrowedFd<'_>) -> OutputPlan {
    let mut plan = OutputPlan {
        copies: Vec::new(),
        streams: Vec::new(),
        uploads: Vec::new(),
        failures: Vec::new(),
    };
    let names: Vec<(String, bool)> = match &req.named {
        Some(list) => list
            .iter()
            .map(|n| (n.trim_end_matches('/').to_string(), n.ends_with('/')))
            .collect(),
        None => {
            let now = snapshot(sandbox);
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
        if let Some(url) = url_plugin::output_url(&name, req.destination.as_deref(), &req.remaps) {
            match upload_source(sandbox, &name) {
                Ok(()) => plan.uploads.push(Transfer { url, name }),
                Err(f) => plan.failures.push(f.to(Path::new(&url))),
            }
            continue;
        }
        let renamed = url_plugin::remapped_path(&name, req.destination.as_deref(), &req.remaps)
            .map(str::to_string);
        plan.copies.push((name, contents_only, renamed));
    }
    for (file, to) in &req.streams {
        if url_plugin::scheme(to).is_some() {
            match upload_source(sandbox, file) {
                Ok(()) => plan.uploads.push(Transfer {
                    url: to.clone(),
                    name: file.clone(),
                }),
                // The job's stream was never made: nothing to send.
                Err(f) if f.errno == Some(libc::ENOENT) => {}
                Err(f) => plan.failures.push(f.to(Path::new(to))),
            }
            continue;
        }
        plan.streams.push((file.clone(), to.clone()));
    }
    plan
}

/// Copies the job's output back: the named files (or every new or changed
/// top-level file), then the standard streams; those whose destination is
/// a URL (OutputDestination, a TransferOutputRemaps URL, a stream named
/// by a URL) are uploaded after, by the plugin for the URL's scheme. Each
/// failure is reported; the rest still goes back.
pub fn output(req: &OutputRequest) -> Output {
    // The uploads' deadline counts from here, as the helper's does.
    let started = Instant::now();
    let sandbox = match open_sandbox(&req.sandbox) {
        Ok(s) => s,
        Err(f) => {
            return Output {
                failures: vec![f],
                bytes: 0,
            }
        }
    };
    let plan = plan_output(req, sandbox.as_fd());
    let mut failures = plan.failures;
    let mut bytes = 0;
    for (name, contents_only, renamed) in &plan.copies {
        match copy_out(
            sandbox.as_fd(),
            name,
            *contents_only,
            &req.iwd,
            renamed.as_deref(),
        ) {
            Ok(n) => bytes += n,
            Err(f) => failures.push(f),
        }
    }
    for (file, to) in &plan.streams {
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
    if !plan.uploads.is_empty() {
        let until = started + req.plugin_deadline;
        bytes += url_output(req, sandbox.as_fd(), plan.uploads, until, &mut failures);
    }
    Output { failures, bytes }
}

// ---- transfers between hosts ------------------------------------------
//
// When the job's access point is another host, its files travel on the
// wire: the access point lists and opens the input as the job's user, the
// execute point creates it beneath the sandbox as the job's user; output
// the other way. The daemons move the bytes between descriptors these
// functions opened (handed over by the user-priv helper), so no daemon
// opens a path a user named.

/// One directory or file a transfer between hosts moves.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// Input: where it goes beneath the sandbox (`dir/file`). Output:
    /// where it goes, as the job named it (relative to its initial
    /// directory unless absolute).
    pub name: String,
    pub dir: bool,
    /// Permission bits (files only).
    pub mode: u32,
    /// Bytes (files only).
    pub size: u64,
}

/// The most directories and files one transfer between hosts moves (a
/// bound on what a job's lists, or a peer, can ask a daemon to hold).
pub const MAX_ENTRIES: usize = 100_000;

/// Input, on the access point: what [`input`] would copy into a sandbox
/// (the executable, the input files and directory trees), listed in
/// order (a directory before what it holds), each entry with the path it
/// is read from (none for a directory). Run as the job's user.
pub fn list_input(
    iwd: &Path,
    executable: Option<&str>,
    inputs: &[String],
) -> Result<Vec<(Entry, Option<PathBuf>)>, Failure> {
    let mut out = Vec::new();
    if let Some(cmd) = executable {
        let from = resolve(iwd, cmd);
        let (fd, kind) = open_source(&from)?;
        if !kind.is_file() {
            return Err(Failure::refused(
                &from,
                "the executable is not a regular file",
            ));
        }
        let size = rfs::fstat(&fd).map_or(0, |s| s.st_size.max(0) as u64);
        out.push((
            Entry {
                name: EXECUTABLE.into(),
                dir: false,
                mode: 0o755,
                size,
            },
            Some(from),
        ));
    }
    for item in inputs {
        let contents_only = item.ends_with('/');
        let from = resolve(iwd, item.trim_end_matches('/'));
        list_in(&from, contents_only, "", 0, &mut out)?;
    }
    Ok(out)
}

/// [`copy_in`]'s walk, listing instead of copying.
fn list_in(
    from: &Path,
    contents_only: bool,
    prefix: &str,
    depth: usize,
    out: &mut Vec<(Entry, Option<PathBuf>)>,
) -> Result<(), Failure> {
    if depth > MAX_DEPTH {
        return Err(Failure::refused(
            from,
            format!("the directory tree is deeper than {MAX_DEPTH} levels"),
        ));
    }
    if out.len() >= MAX_ENTRIES {
        return Err(Failure::refused(
            from,
            format!("more than {MAX_ENTRIES} files and directories to transfer"),
        ));
    }
    let (fd, kind) = open_source(from)?;
    let name = from
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| Failure::refused(from, "the path names no file"))?;
    let here = format!("{prefix}{name}");
    let st = rfs::fstat(&fd).map_err(|e| Failure::io(from, e.into()))?;
    if kind.is_file() {
        out.push((
            Entry {
                name: here,
                dir: false,
                mode: st.st_mode & 0o777,
                size: st.st_size.max(0) as u64,
            },
            Some(from.to_path_buf()),
        ));
        return Ok(());
    }
    let inner = if contents_only {
        prefix.to_string()
    } else {
        out.push((
            Entry {
                name: here.clone(),
                dir: true,
                mode: 0o755,
                size: 0,
            },
            None,
        ));
        format!("{here}/")
    };
    for entry in list(&fd).map_err(|e| Failure::io(from, e))? {
        list_in(&from.join(entry), false, &inner, depth + 1, out)?;
    }
    Ok(())
}

/// Opens each of `paths` for reading, as this process's user: regular
/// files only (the access point's side of an input transfer; `beneath`
/// the execute point's, for output, names taken beneath the sandbox).
pub fn open_files(beneath: Option<&Path>, paths: &[PathBuf]) -> Result<Vec<OwnedFd>, Failure> {
    let dir = beneath.map(open_sandbox).transpose()?;
    paths
        .iter()
        .map(|p| {
            let fd = match &dir {
                Some(d) => {
                    let name = p.to_string_lossy();
                    check_output_name(&name).map_err(|why| Failure::refused(p, why))?;
                    open_beneath(d.as_fd(), &name, OFlags::RDONLY).map_err(|e| Failure::io(p, e))?
                }
                None => {
                    let (fd, kind) = open_source(p)?;
                    if !kind.is_file() {
                        return Err(Failure::refused(p, "it is not a regular file"));
                    }
                    fd
                }
            };
            must_be_regular(&fd, p)?;
            Ok(fd)
        })
        .collect()
}

/// Input, on the execute point: makes the listed directories and creates
/// the listed files beneath the sandbox, as [`input`] would, and opens
/// each file for writing, in order. The names come from another host:
/// none may be absolute, hold `..` or lead out of the sandbox.
pub fn create_input(sandbox: &Path, entries: &[Entry]) -> Result<Vec<OwnedFd>, Failure> {
    let dir = open_sandbox(sandbox)?;
    let mut fds = Vec::new();
    for e in entries {
        let shown = Path::new(&e.name);
        check_output_name(&e.name).map_err(|why| Failure::refused(shown, why))?;
        if e.dir {
            let (parent, base) = match e.name.rsplit_once('/') {
                Some((p, b)) => (
                    Some(
                        open_beneath(
                            dir.as_fd(),
                            p,
                            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW,
                        )
                        .map_err(|err| Failure::io(shown, err))?,
                    ),
                    b,
                ),
                None => (None, e.name.as_str()),
            };
            let at = parent.as_ref().map_or(dir.as_fd(), |p| p.as_fd());
            make_dir_beneath(at, base).map_err(|err| Failure::io(shown, err))?;
        } else {
            let fd = create_beneath(dir.as_fd(), &e.name, e.mode & 0o777)
                .map_err(|err| Failure::io(shown, err))?;
            fds.push(fd);
        }
    }
    Ok(fds)
}

/// Output, on the execute point, for an access point on another host:
/// what [`output`] would copy back, listed (each entry named by where it
/// goes, with the sandbox name it is read from; a directory before what
/// it holds), the uploads to URLs done as [`output`] does them. The
/// returned [`Output`] holds the failures so far and the bytes uploaded.
pub fn list_output(req: &OutputRequest) -> (Vec<(Entry, Option<String>)>, Output) {
    let started = Instant::now();
    let sandbox = match open_sandbox(&req.sandbox) {
        Ok(s) => s,
        Err(f) => {
            return (
                Vec::new(),
                Output {
                    failures: vec![f],
                    bytes: 0,
                },
            )
        }
    };
    let plan = plan_output(req, sandbox.as_fd());
    let mut failures = plan.failures;
    let mut listed = Vec::new();
    for (name, contents_only, renamed) in &plan.copies {
        let shown = Path::new(name);
        if let Err(why) = check_output_name(name) {
            failures.push(Failure::refused(shown, why));
            continue;
        }
        let base = shown.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let to = match renamed {
            Some(r) => r.clone(),
            None if *contents_only => String::new(),
            None => base.to_string(),
        };
        if let Err(f) = list_out(sandbox.as_fd(), name, *contents_only, &to, 0, &mut listed) {
            failures.push(f.to(Path::new(&to)));
        }
    }
    for (file, to) in &plan.streams {
        match open_beneath(sandbox.as_fd(), file, OFlags::RDONLY) {
            Ok(fd) => match must_be_regular(&fd, Path::new(file)) {
                Ok(()) => listed.push((
                    Entry {
                        name: to.clone(),
                        dir: false,
                        mode: 0o644,
                        size: rfs::fstat(&fd).map_or(0, |s| s.st_size.max(0) as u64),
                    },
                    Some(file.clone()),
                )),
                Err(f) => failures.push(f.to(Path::new(to))),
            },
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {}
            Err(e) => failures.push(Failure::io(Path::new(file), e).to(Path::new(to))),
        }
    }
    let mut bytes = 0;
    if !plan.uploads.is_empty() {
        let until = started + req.plugin_deadline;
        bytes += url_output(req, sandbox.as_fd(), plan.uploads, until, &mut failures);
    }
    (listed, Output { failures, bytes })
}

/// [`copy_out`]'s walk, listing instead of copying: sandbox name `name`
/// going to `to` (empty: the job's directory itself, for a directory's
/// contents).
fn list_out(
    sandbox: BorrowedFd<'_>,
    name: &str,
    contents_only: bool,
    to: &str,
    depth: usize,
    out: &mut Vec<(Entry, Option<String>)>,
) -> Result<(), Failure> {
    let shown = Path::new(name);
    if depth > MAX_DEPTH || out.len() >= MAX_ENTRIES {
        return Err(Failure::refused(
            shown,
            "the output is too deep or has too many files to transfer",
        ));
    }
    let fd = open_beneath(sandbox, name, OFlags::RDONLY).map_err(|e| {
        if e.raw_os_error() == Some(libc::EXDEV) || e.raw_os_error() == Some(libc::ELOOP) {
            Failure::refused(
                shown,
                "it leads out of the job's sandbox (a symbolic link); refused",
            )
        } else {
            Failure::io(shown, e)
        }
    })?;
    let st = rfs::fstat(&fd).map_err(|e| Failure::io(shown, e.into()))?;
    match rfs::FileType::from_raw_mode(st.st_mode) {
        rfs::FileType::RegularFile => {
            out.push((
                Entry {
                    name: to.to_string(),
                    dir: false,
                    mode: 0o644,
                    size: st.st_size.max(0) as u64,
                },
                Some(name.to_string()),
            ));
            Ok(())
        }
        rfs::FileType::Directory => {
            if !contents_only {
                out.push((
                    Entry {
                        name: to.to_string(),
                        dir: true,
                        mode: 0o755,
                        size: 0,
                    },
                    None,
                ));
            }
            for entry in list(&fd).map_err(|e| Failure::io(shown, e))? {
                let inner_to = if to.is_empty() {
                    entry.clone()
                } else {
                    format!("{}/{entry}", to.trim_end_matches('/'))
                };
                list_out(
                    sandbox,
                    &format!("{name}/{entry}"),
                    false,
                    &inner_to,
                    depth + 1,
                    out,
                )?;
            }
            Ok(())
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

/// Output, on the access point: makes the listed directories and creates
/// (or truncates) the listed files where the job wants them (relative to
/// `iwd` unless absolute), as [`output`] would, and opens each file for
/// writing, in order (`None` where one could not be made; its failure is
/// in the list).
pub fn create_output(iwd: &Path, entries: &[Entry]) -> (Vec<Option<OwnedFd>>, Vec<Failure>) {
    let mut fds = Vec::new();
    let mut failures = Vec::new();
    for e in entries {
        let to = if e.name.is_empty() {
            iwd.to_path_buf()
        } else {
            resolve(iwd, &e.name)
        };
        let shown = Path::new(&e.name);
        if e.dir {
            match std::fs::create_dir(&to) {
                Ok(()) => {}
                Err(err) if err.kind() == io::ErrorKind::AlreadyExists && to.is_dir() => {}
                Err(err) => failures.push(Failure::io(shown, err).to(&to)),
            }
            continue;
        }
        match create_plain(&to) {
            Ok(fd) => fds.push(Some(fd)),
            Err(err) => {
                failures.push(Failure::io(shown, err).to(&to));
                fds.push(None);
            }
        }
    }
    (fds, failures)
}

/// Whether sandbox file `name` may go to a URL: a regular file beneath
/// the sandbox (a directory goes only to the job's directory).
fn upload_source(sandbox: BorrowedFd<'_>, name: &str) -> Result<(), Failure> {
    let shown = Path::new(name);
    check_output_name(name).map_err(|why| Failure::refused(shown, why))?;
    let fd = open_beneath(sandbox, name, OFlags::RDONLY).map_err(|e| Failure::io(shown, e))?;
    let st = rfs::fstat(&fd).map_err(|e| Failure::io(shown, e.into()))?;
    match rfs::FileType::from_raw_mode(st.st_mode) {
        rfs::FileType::RegularFile => Ok(()),
        rfs::FileType::Directory => Err(Failure::refused(
            shown,
            "it is a directory; only files are uploaded to a URL (name the files)",
        )),
        other => Err(Failure::refused(
            shown,
            format!("it is {}, not a regular file", describe(other)),
        )),
    }
}

/// Uploads sandbox files to their URLs: `file://` copied and
/// `http(s)://` PUT by the starter, the rest by the plugin for each
/// scheme (multi-file with `-upload`, or `plugin PATH URL`), as this
/// process's user (the job's). Each failure is pushed with HTCondor's
/// subcode; the bytes uploaded are returned.
fn url_output(
    req: &OutputRequest,
    sandbox: BorrowedFd<'_>,
    uploads: Vec<Transfer>,
    until: Instant,
    failures: &mut Vec<Failure>,
) -> u64 {
    let name_of: BTreeMap<String, String> = uploads
        .iter()
        .map(|t| (t.url.clone(), t.name.clone()))
        .collect();
    let mut fail = |url: &str, why: String, subcode: i64| {
        let name = name_of.get(url).cloned().unwrap_or_default();
        failures.push(Failure {
            path: PathBuf::from(name),
            to: Some(PathBuf::from(url_plugin::shown(url))),
            message: why,
            errno: None,
            subcode: Some(subcode),
        });
    };
    let machine_ad = rfs::statat(sandbox, MACHINE_AD, rfs::AtFlags::SYMLINK_NOFOLLOW).is_ok();
    let env = plugin_env(&req.sandbox, machine_ad);
    let (plugins, unusable) = if req.plugins.is_empty() {
        (Vec::new(), Vec::new())
    } else {
        query_plugins(&req.plugins, &req.sandbox, &env, until)
    };
    let plan = match url_plugin::plan_transfers(uploads, &plugins) {
        Ok(p) => p,
        Err((url, mut why)) => {
            if !unusable.is_empty() {
                why = format!("{why}; unusable plugins: {}", unusable.join("; "));
            }
            fail(&url, why, 0);
            return 0;
        }
    };
    let mut bytes = 0;
    for t in &plan.builtin {
        let r = url_plugin::file_url_path(&t.url)
            .map_err(|e| Failure::refused(Path::new(&t.name), e))
            .and_then(|to| {
                let src = open_beneath(sandbox, &t.name, OFlags::RDONLY)
                    .map_err(|e| Failure::io(Path::new(&t.name), e))?;
                copy_out_fd(src, Path::new(&t.name), false, &to, 0)
            });
        match r {
            Ok(n) => bytes += n,
            Err(f) => fail(&t.url, f.message, f.errno.map_or(0, i64::from)),
        }
    }
    for t in &plan.http {
        let r = open_beneath(sandbox, &t.name, OFlags::RDONLY)
            .map_err(|e| format!("{}: {e}", t.name))
            .and_then(|fd| {
                let len = rfs::fstat(&fd).map_or(0, |st| st.st_size.max(0) as u64);
                crate::http::put(&t.url, File::from(fd), len, until)
            });
        match r {
            Ok(n) => bytes += n,
            Err(why) => fail(&t.url, why, 0),
        }
    }
    for (i, group) in &plan.by_plugin {
        let c = &plugins[*i];
        if c.multi_file {
            match run_multi_file(c, group, &req.sandbox, sandbox, &env, until, true) {
                Ok(n) => bytes += n,
                Err(p) => fail(&p.url, p.why, p.subcode),
            }
            continue;
        }
        for t in group {
            let local = req.sandbox.join(&t.name).to_string_lossy().into_owned();
            let ran = run_plugin(
                &c.plugin,
                &[local, t.url.clone()],
                &req.sandbox,
                &env,
                until,
                false,
            );
            match ran {
                Err(e) => fail(
                    &t.url,
                    e.why,
                    url_plugin::upload_subcode(None, None, e.timed_out),
                ),
                Ok(r) if r.status == Some(0) => {
                    bytes += open_beneath(sandbox, &t.name, OFlags::RDONLY)
                        .and_then(|f| Ok(rfs::fstat(&f)?.st_size.max(0) as u64))
                        .unwrap_or(0);
                }
                Ok(r) => {
                    let mut why = format!(
                        "plugin `{}` failed: it exited with {}",
                        c.plugin.display(),
                        describe_exit(r.status)
                    );
                    let said = String::from_utf8_lossy(&r.stderr).trim().to_string();
                    if !said.is_empty() {
                        why = format!("{why}: {said}");
                    }
                    fail(
                        &t.url,
                        why,
                        url_plugin::upload_subcode(r.status, r.signal, false),
                    );
                }
            }
        }
    }
    bytes
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
/// under its base name, or to where TransferOutputRemaps renames it
/// (`renamed`, relative to the job's directory unless absolute);
/// `contents_only` copies a directory's contents.
fn copy_out(
    sandbox: BorrowedFd<'_>,
    name: &str,
    contents_only: bool,
    iwd: &Path,
    renamed: Option<&str>,
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
    let to = match renamed {
        Some(r) => resolve(iwd, r),
        None if contents_only => iwd.to_path_buf(),
        None => iwd.join(base),
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
            url_max_bytes: None,
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
if [ "$5" = -upload ]; then
  id -u > plugin.uid
  sed -e 's/.*Url = "zkm:\/\/\([^"]*\)".*LocalFileName = "\([^"]*\)".*/\1 \2/' "$2" | while read name local; do
    mkdir -p "$(dirname "{store}/$name")"
    case "$name" in
      fail*) echo "[ TransferSuccess = false; TransferUrl = \"zkm://$name\"; TransferFileName = \"$local\"; TransferError = \"zkm: cannot store $name\" ]" >> "$4" ;;
      *) cp "$local" "{store}/$name" && echo "[ TransferSuccess = true; TransferUrl = \"zkm://$name\"; TransferFileName = \"$local\"; TransferTotalBytes = $(wc -c < "$local") ]" >> "$4" ;;
    esac
  done
  grep -q 'TransferSuccess = false' "$4" && exit 3
  exit 0
fi
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
case \"$2\" in zkm://fail*) echo \"cannot store $2\" >&2; exit 5;; zkm://*) cp \"$1\" \"{store}/${{2#zkm://}}\"; exit $?;; esac
                 cp \"{store}/${{1#zkm://}}\" \"$2\" || {{ echo \"cannot fetch $1\" >&2; exit 4; }}
",
                store = store.display()
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
        // HTCondor's HoldReasonSubCode for it: the exit status << 8.
        assert_eq!(f.subcode, Some(4 << 8));

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
    fn url_outputs_are_uploaded_by_the_plugin_for_their_scheme() {
        let (t, iwd, sandbox) = dirs();
        let store = t.path().join("store");
        std::fs::create_dir(&store).unwrap();
        let multi = zkm_plugin(t.path(), &store, true);
        let (snap, _) = input(&input_req(&iwd, &sandbox, &[])).unwrap();
        std::fs::write(sandbox.join("a.txt"), "aaa").unwrap();
        std::fs::write(sandbox.join("b.txt"), "bb").unwrap();
        std::fs::create_dir(sandbox.join("dir")).unwrap();
        std::fs::write(sandbox.join(STDOUT), "out").unwrap();
        std::fs::write(sandbox.join(STDERR), "err").unwrap();

        // OutputDestination: every output file goes there under its name;
        // a stream goes back unless it names a URL itself.
        let out = output(&OutputRequest {
            sandbox: sandbox.clone(),
            iwd: iwd.clone(),
            named: None,
            before: snap.clone(),
            streams: vec![
                (STDOUT.into(), "job.out".into()),
                (STDERR.into(), "zkm://results/job.err".into()),
            ],
            destination: Some("zkm://results".into()),
            plugins: vec![multi.clone()],
            plugin_deadline: Duration::from_secs(20),
            ..Default::default()
        });
        assert!(out.failures.is_empty(), "{out:?}");
        let stored = |n: &str| std::fs::read_to_string(store.join(n)).unwrap();
        assert_eq!(stored("results/a.txt"), "aaa");
        assert_eq!(stored("results/b.txt"), "bb");
        assert_eq!(stored("results/job.err"), "err");
        assert_eq!(std::fs::read_to_string(iwd.join("job.out")).unwrap(), "out");
        assert!(!iwd.join("a.txt").exists() && !iwd.join("job.err").exists());
        assert_eq!(out.bytes, 3 + 2 + 3 + 3);
        assert!(!sandbox.join(PLUGIN_IN).exists() && !sandbox.join(PLUGIN_OUT).exists());

        // A remap to a URL sends that file there; the rest come back.
        let named = |names: &[&str], remaps: &str, plugins: Vec<PathBuf>| OutputRequest {
            sandbox: sandbox.clone(),
            iwd: iwd.clone(),
            named: Some(names.iter().map(|n| n.to_string()).collect()),
            remaps: url_plugin::parse_remaps(remaps),
            plugins,
            plugin_deadline: Duration::from_secs(20),
            ..Default::default()
        };
        let out = output(&named(
            &["a.txt", "b.txt"],
            "b.txt = zkm://place/b2.txt",
            vec![multi.clone()],
        ));
        assert!(out.failures.is_empty(), "{out:?}");
        assert_eq!(stored("place/b2.txt"), "bb");
        assert_eq!(std::fs::read_to_string(iwd.join("a.txt")).unwrap(), "aaa");

        // A failed upload: the plugin's TransferError, HTCondor's subcode
        // (its exit status 3, shifted left by 8), the file and the URL.
        let out = output(&named(
            &["a.txt"],
            "a.txt = zkm://fail/a.txt",
            vec![multi.clone()],
        ));
        assert_eq!(out.failures.len(), 1, "{out:?}");
        let f = &out.failures[0];
        assert_eq!(f.subcode, Some(3 << 8));
        assert_eq!(f.path, Path::new("a.txt"));
        assert_eq!(f.to.as_deref(), Some(Path::new("zkm://fail/a.txt")));
        assert!(f.message.contains("zkm: cannot store fail/a.txt"), "{f:?}");

        // The one-file-a-run form: `plugin PATH URL`.
        let single = zkm_plugin(t.path(), &store, false);
        let out = output(&named(
            &["a.txt", "b.txt"],
            "a.txt = zkm://single.txt; b.txt = zkm://fail-b",
            vec![single],
        ));
        assert_eq!(stored("single.txt"), "aaa");
        assert_eq!(out.failures.len(), 1, "{out:?}");
        assert_eq!(out.failures[0].subcode, Some(5 << 8));
        assert!(
            out.failures[0]
                .message
                .contains("cannot store zkm://fail-b"),
            "{out:?}"
        );

        // A scheme nobody serves, a directory, a file the job did not make.
        let out = output(&named(
            &["a.txt", "dir", "gone"],
            "a.txt = nope://x; dir = zkm://d; gone = zkm://g",
            vec![multi],
        ));
        assert_eq!(out.failures.len(), 3, "{out:?}");
        assert!(out.failures[0].message.contains("directory"), "{out:?}");
        assert_eq!(out.failures[1].errno, Some(libc::ENOENT), "{out:?}");
        assert!(
            out.failures[2]
                .message
                .contains("no file transfer plugin serves the `nope` scheme"),
            "{out:?}"
        );
    }

    #[test]
    fn plain_remaps_rename_output_in_the_job_directory() {
        let (t, iwd, sandbox) = dirs();
        std::fs::write(sandbox.join("a.txt"), "a").unwrap();
        std::fs::create_dir(sandbox.join("d")).unwrap();
        std::fs::write(sandbox.join("d/f"), "f").unwrap();
        std::fs::write(sandbox.join("b.txt"), "b").unwrap();
        std::fs::create_dir(iwd.join("sub")).unwrap();
        let abs = t.path().join("elsewhere.txt");
        let out = output(&OutputRequest {
            sandbox: sandbox.clone(),
            iwd: iwd.clone(),
            named: Some(vec!["a.txt".into(), "d/f".into(), "b.txt".into()]),
            remaps: url_plugin::parse_remaps(&format!(
                "a.txt = sub/renamed.txt; f = g; b.txt = {}",
                abs.display()
            )),
            ..Default::default()
        });
        assert!(out.failures.is_empty(), "{out:?}");
        assert_eq!(
            std::fs::read_to_string(iwd.join("sub/renamed.txt")).unwrap(),
            "a"
        );
        assert_eq!(std::fs::read_to_string(iwd.join("g")).unwrap(), "f");
        assert_eq!(std::fs::read_to_string(&abs).unwrap(), "b");
        assert!(!iwd.join("a.txt").exists() && !iwd.join("f").exists());
    }

    type Files = std::sync::Arc<std::sync::Mutex<BTreeMap<String, Vec<u8>>>>;

    /// A small HTTP/1.1 server on 127.0.0.1 for the tests: GET serves
    /// `files`, PUT stores into them (403 under `/readonly/`).
    fn http_server(files: Files) -> String {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}", l.local_addr().unwrap());
        std::thread::spawn(move || {
            for c in l.incoming().flatten() {
                let files = files.clone();
                std::thread::spawn(move || serve_one(c, &files));
            }
        });
        base
    }

    fn serve_one(mut c: std::net::TcpStream, files: &Files) -> io::Result<()> {
        use io::{BufRead, Read, Write};
        let mut r = io::BufReader::new(c.try_clone()?);
        let mut line = String::new();
        r.read_line(&mut line)?;
        let mut parts = line.split_whitespace();
        let method = parts.next().unwrap_or("").to_string();
        let target = parts.next().unwrap_or("");
        let path = target.split('?').next().unwrap_or("").to_string();
        let mut len = 0usize;
        loop {
            let mut h = String::new();
            r.read_line(&mut h)?;
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            if let Some((k, v)) = h.split_once(':') {
                if k.eq_ignore_ascii_case("content-length") {
                    len = v.trim().parse().unwrap_or(0);
                }
            }
        }
        let (status, body) = match method.as_str() {
            "GET" => match files.lock().unwrap().get(&path) {
                Some(b) => ("200 OK", b.clone()),
                None => ("404 Not Found", b"no such file".to_vec()),
            },
            "PUT" => {
                let mut b = vec![0; len];
                r.read_exact(&mut b)?;
                if path.starts_with("/readonly/") {
                    ("403 Forbidden", Vec::new())
                } else {
                    files.lock().unwrap().insert(path, b);
                    ("201 Created", Vec::new())
                }
            }
            _ => ("405 Method Not Allowed", Vec::new()),
        };
        write!(
            c,
            "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        )?;
        c.write_all(&body)
    }

    #[test]
    fn http_urls_are_fetched_and_put_by_the_starter_itself() {
        let files = Files::default();
        files
            .lock()
            .unwrap()
            .insert("/data/in.txt".into(), b"from the web\n".to_vec());
        let base = http_server(files.clone());
        let (_t, iwd, sandbox) = dirs();
        let mut req = input_req(&iwd, &sandbox, &[]);
        req.urls = vec![format!("{base}/data/in.txt?version=2")];
        let (_, bytes) = input(&req).unwrap();
        assert_eq!(
            std::fs::read_to_string(sandbox.join("in.txt")).unwrap(),
            "from the web\n"
        );
        assert_eq!(bytes, 13);

        // The server's answer names a failure; the slot's disk bounds a
        // download.
        req.urls = vec![format!("{base}/missing.txt")];
        let f = input(&req).unwrap_err();
        assert!(f.message.contains("404"), "{f:?}");
        req.urls = vec![format!("{base}/data/in.txt")];
        req.url_max_bytes = Some(4);
        let f = input(&req).unwrap_err();
        assert!(f.message.contains("larger than 4 bytes"), "{f:?}");
        // https goes through rustls: a server that speaks no TLS is an
        // error, not a panic.
        req.url_max_bytes = None;
        req.urls = vec![base.replace("http://", "https://") + "/data/in.txt"];
        let f = input(&req).unwrap_err();
        assert!(f.message.contains("https://127.0.0.1"), "{f:?}");

        // Output goes up by PUT, where the remap says.
        std::fs::write(sandbox.join("out.txt"), "result").unwrap();
        let put = |remaps: String| {
            output(&OutputRequest {
                sandbox: sandbox.clone(),
                iwd: iwd.clone(),
                named: Some(vec!["out.txt".into()]),
                remaps: url_plugin::parse_remaps(&remaps),
                plugin_deadline: Duration::from_secs(20),
                ..Default::default()
            })
        };
        let out = put(format!("out.txt = {base}/up/out.txt"));
        assert!(out.failures.is_empty(), "{out:?}");
        assert_eq!(out.bytes, 6);
        assert_eq!(files.lock().unwrap()["/up/out.txt"], b"result");
        let out = put(format!("out.txt = {base}/readonly/out.txt"));
        assert_eq!(out.failures.len(), 1, "{out:?}");
        assert!(out.failures[0].message.contains("403"), "{out:?}");
        assert!(!iwd.join("out.txt").exists());
    }

    #[test]
    fn an_http_server_that_never_answers_is_given_up_at_the_deadline() {
        // Connections queue in the backlog and are never answered.
        let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let (_t, iwd, sandbox) = dirs();
        let mut req = input_req(&iwd, &sandbox, &[]);
        req.urls = vec![format!("http://{}/x", silent.local_addr().unwrap())];
        req.plugin_deadline = Duration::from_secs(2);
        let started = Instant::now();
        let f = input(&req).unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(10));
        assert!(f.message.contains("did not finish in time"), "{f:?}");
    }

    /// A plugin that leaves a process in a session of its own holding its
    /// pipes is not waited for past a short grace.
    #[test]
    fn a_plugin_s_leftover_holding_its_pipes_does_not_hold_the_starter() {
        use std::os::unix::fs::PermissionsExt;
        let t = tempfile::tempdir().unwrap();
        let plugin = t.path().join("leaver");
        std::fs::write(
            &plugin,
            "#!/bin/sh\nsetsid -f sh -c ': > left; exec sleep 12'\n\
             while [ ! -e left ]; do sleep 0.01; done\n\
             printf 'PluginType = \"FileTransfer\"\\nSupportedMethods = \"zkm\"\\n'\n",
        )
        .unwrap();
        std::fs::set_permissions(&plugin, std::fs::Permissions::from_mode(0o755)).unwrap();
        let started = Instant::now();
        let (usable, unusable) = query_plugins(
            &[plugin],
            t.path(),
            &[],
            Instant::now() + Duration::from_secs(60),
        );
        // Its leftover lives 12 s; the starter waits 2 s for the pipes.
        assert!(
            started.elapsed() < Duration::from_secs(6),
            "{:?}",
            started.elapsed()
        );
        assert_eq!(usable.len(), 1, "{unusable:?}");
        assert_eq!(usable[0].methods, ["zkm"]);
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
            ..Default::default()
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
            ..Default::default()
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
