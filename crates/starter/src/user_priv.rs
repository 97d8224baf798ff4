//! File work with a user's credentials, HTCondor's "user priv".
//!
//! A daemon started by root never touches a user's files as root: each
//! piece of file work ([`crate::transfer`]) runs in a helper process that
//! drops to the user (supplementary groups, gid, uid, in that order, and
//! checks that root cannot be regained) before it opens anything. A
//! daemon that is not root already is the user whose jobs it runs (it
//! runs every job as itself), so it does the work in its own thread.
//!
//! The helper is this very program: `/proc/self/exe` started with
//! [`HELPER_ARG`] as its only argument. An entry in `.init_array` (run by
//! the C runtime before `main`, so before any thread exists) notices that
//! argument and serves one request: it reads the request (JSON) on its
//! standard input, drops privileges, does the work, writes the answer on
//! its standard output (a Unix socket, so a file it opened for the daemon,
//! such as a job event log, can be handed back with `SCM_RIGHTS`) and
//! exits. So every program that links this crate, the `ferrocondor` binary
//! and the test binaries alike, can serve as the helper, and the daemon
//! needs no second executable. The helper is started with `posix_spawn`
//! (no `pre_exec`), which costs the daemon no fork of its address space.
//!
//! Every request has a deadline; a helper that outlives it (a hung network
//! file system, a FUSE mount a user made) is killed.

use std::ffi::CStr;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, FromRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::procs::User;
use crate::transfer::{self, Entry, Failure, InputRequest, OutputRequest, Snapshot};
use crate::url_plugin::Capabilities;

/// The argument that makes this program the file helper.
pub const HELPER_ARG: &str = "--ferrocondor-user-priv-helper";

/// The largest request a helper reads (the job and machine ads are the
/// bulk of one).
const MAX_REQUEST: u64 = 64 << 20;

#[derive(Debug, Serialize, Deserialize)]
enum Op {
    Input(InputRequest),
    Output(OutputRequest),
    OpenAppend(PathBuf),
    /// Asks FILETRANSFER_PLUGINS `-classad`, with this long to answer.
    QueryPlugins(Vec<PathBuf>, Duration),
    /// Transfers between hosts ([`transfer::list_input`] and the rest).
    ListInput {
        iwd: PathBuf,
        executable: Option<String>,
        inputs: Vec<String>,
    },
    OpenFiles {
        beneath: Option<PathBuf>,
        paths: Vec<PathBuf>,
    },
    CreateInput {
        sandbox: PathBuf,
        entries: Vec<Entry>,
    },
    ListOutput(OutputRequest),
    CreateOutput {
        iwd: PathBuf,
        entries: Vec<Entry>,
    },
}

#[derive(Debug, Serialize, Deserialize)]
enum Answer {
    Input(Result<(Snapshot, u64), Failure>),
    Output(transfer::Output),
    /// The descriptors travel beside the answer.
    Opened(Result<(), Failure>),
    Plugins(Vec<Capabilities>, Vec<String>),
    ListedInput(Result<Vec<(Entry, Option<PathBuf>)>, Failure>),
    ListedOutput(Vec<(Entry, Option<String>)>, transfer::Output),
    /// Which entries' files were made (their descriptors travel beside),
    /// and what failed.
    Created(Vec<bool>, Vec<Failure>),
}

/// The most descriptors one answer hands back (one SCM_RIGHTS message).
pub const MAX_FDS: usize = 200;

#[derive(Debug, Serialize, Deserialize)]
struct Request {
    uid: u32,
    gid: u32,
    groups: Vec<u32>,
    op: Op,
}

/// Fills a sandbox as `user` (`None`: as this process's own user): the
/// sandbox then, and the bytes transferred in.
pub fn input(
    user: Option<&User>,
    req: InputRequest,
    deadline: Duration,
) -> Result<(Snapshot, u64), Failure> {
    let shown = req.sandbox.clone();
    match user {
        None => transfer::input(&req),
        Some(u) => match call(u, Op::Input(req), deadline) {
            Ok((Answer::Input(r), _)) => r,
            Ok(_) => Err(helper_failure(
                &shown,
                "the helper answered another request",
            )),
            Err(why) => Err(helper_failure(&shown, &why)),
        },
    }
}

/// Brings a job's output back as `user` (`None`: as this process's user).
pub fn output(user: Option<&User>, req: OutputRequest, deadline: Duration) -> transfer::Output {
    let shown = req.sandbox.clone();
    let failed = |why: &str| transfer::Output {
        failures: vec![helper_failure(&shown, why)],
        bytes: 0,
    };
    match user {
        None => transfer::output(&req),
        Some(u) => match call(u, Op::Output(req), deadline) {
            Ok((Answer::Output(o), _)) => o,
            Ok(_) => failed("the helper answered another request"),
            Err(why) => failed(&why),
        },
    }
}

/// Opens `path` for appending as `user` (`None`: as this process's user)
/// and hands the descriptor back: a job event log, written by the daemon
/// through a descriptor the user opened.
pub fn open_append(
    user: Option<&User>,
    path: &Path,
    deadline: Duration,
) -> Result<OwnedFd, Failure> {
    match user {
        None => transfer::open_append(path),
        Some(u) => match call(u, Op::OpenAppend(path.to_path_buf()), deadline) {
            Ok((Answer::Opened(Ok(())), fds)) if fds.len() == 1 => {
                Ok(fds.into_iter().next().expect("one"))
            }
            Ok((Answer::Opened(Err(f)), _)) => Err(f),
            Ok(_) => Err(helper_failure(path, "the helper sent no descriptor")),
            Err(why) => Err(helper_failure(path, &why)),
        },
    }
}

/// Asks each of `plugins` `-classad` as `user` (`None`: as this
/// process's user): what the usable ones serve, and why each other one
/// is unusable. The execute point advertises the schemes
/// (HasFileTransferPluginMethods); a daemon that is root asks as an
/// unprivileged user, never as root.
pub fn query_plugins(
    user: Option<&User>,
    plugins: &[PathBuf],
    deadline: Duration,
) -> Result<(Vec<Capabilities>, Vec<String>), String> {
    // The plugins are killed a little before the helper.
    let inner = deadline.saturating_sub((deadline / 10).min(Duration::from_secs(5)));
    match user {
        None => Ok(transfer::query_plugins(
            plugins,
            Path::new("/"),
            &[],
            Instant::now() + inner,
        )),
        Some(u) => match call(u, Op::QueryPlugins(plugins.to_vec(), inner), deadline)? {
            (Answer::Plugins(c, why), _) => Ok((c, why)),
            _ => Err("the helper answered another request".into()),
        },
    }
}

/// Lists a job's input as `user` (`None`: as this process's user), on
/// the access point of a transfer between hosts
/// ([`transfer::list_input`]).
pub fn list_input(
    user: Option<&User>,
    iwd: &Path,
    executable: Option<&str>,
    inputs: &[String],
    deadline: Duration,
) -> Result<Vec<(Entry, Option<PathBuf>)>, Failure> {
    match user {
        None => transfer::list_input(iwd, executable, inputs),
        Some(u) => {
            let op = Op::ListInput {
                iwd: iwd.to_path_buf(),
                executable: executable.map(str::to_string),
                inputs: inputs.to_vec(),
            };
            match call(u, op, deadline) {
                Ok((Answer::ListedInput(r), _)) => r,
                Ok(_) => Err(helper_failure(iwd, "the helper answered another request")),
                Err(why) => Err(helper_failure(iwd, &why)),
            }
        }
    }
}

/// Opens files for reading as `user`: at most [`MAX_FDS`] at a time
/// ([`transfer::open_files`]).
pub fn open_files(
    user: Option<&User>,
    beneath: Option<&Path>,
    paths: &[PathBuf],
    deadline: Duration,
) -> Result<Vec<OwnedFd>, Failure> {
    let shown = beneath.unwrap_or(Path::new("/"));
    if paths.len() > MAX_FDS {
        return Err(helper_failure(shown, "too many files at once"));
    }
    match user {
        None => transfer::open_files(beneath, paths),
        Some(u) => {
            let op = Op::OpenFiles {
                beneath: beneath.map(Path::to_path_buf),
                paths: paths.to_vec(),
            };
            match call(u, op, deadline) {
                Ok((Answer::Opened(Ok(())), fds)) if fds.len() == paths.len() => Ok(fds),
                Ok((Answer::Opened(Err(f)), _)) => Err(f),
                Ok(_) => Err(helper_failure(shown, "the helper sent other descriptors")),
                Err(why) => Err(helper_failure(shown, &why)),
            }
        }
    }
}

/// Makes a batch of input entries beneath the sandbox as `user` and
/// opens its files for writing ([`transfer::create_input`]; at most
/// [`MAX_FDS`] files a batch).
pub fn create_input(
    user: Option<&User>,
    sandbox: &Path,
    entries: &[Entry],
    deadline: Duration,
) -> Result<Vec<OwnedFd>, Failure> {
    let files = entries.iter().filter(|e| !e.dir).count();
    if files > MAX_FDS {
        return Err(helper_failure(sandbox, "too many files at once"));
    }
    match user {
        None => transfer::create_input(sandbox, entries),
        Some(u) => {
            let op = Op::CreateInput {
                sandbox: sandbox.to_path_buf(),
                entries: entries.to_vec(),
            };
            match call(u, op, deadline) {
                Ok((Answer::Opened(Ok(())), fds)) if fds.len() == files => Ok(fds),
                Ok((Answer::Opened(Err(f)), _)) => Err(f),
                Ok(_) => Err(helper_failure(sandbox, "the helper sent other descriptors")),
                Err(why) => Err(helper_failure(sandbox, &why)),
            }
        }
    }
}

/// Lists a job's output as `user`, for an access point on another host
/// (URL uploads done on the way: [`transfer::list_output`]).
pub fn list_output(
    user: Option<&User>,
    req: OutputRequest,
    deadline: Duration,
) -> (Vec<(Entry, Option<String>)>, transfer::Output) {
    let shown = req.sandbox.clone();
    let failed = |why: &str| {
        (
            Vec::new(),
            transfer::Output {
                failures: vec![helper_failure(&shown, why)],
                bytes: 0,
            },
        )
    };
    match user {
        None => transfer::list_output(&req),
        Some(u) => match call(u, Op::ListOutput(req), deadline) {
            Ok((Answer::ListedOutput(l, o), _)) => (l, o),
            Ok(_) => failed("the helper answered another request"),
            Err(why) => failed(&why),
        },
    }
}

/// Makes a batch of output entries where the job wants them as `user`
/// and opens its files for writing ([`transfer::create_output`]; at most
/// [`MAX_FDS`] files a batch).
pub fn create_output(
    user: Option<&User>,
    iwd: &Path,
    entries: &[Entry],
    deadline: Duration,
) -> (Vec<Option<OwnedFd>>, Vec<Failure>) {
    let files = entries.iter().filter(|e| !e.dir).count();
    let all_failed = |why: &str| {
        (
            (0..files).map(|_| None).collect(),
            vec![helper_failure(iwd, why)],
        )
    };
    if files > MAX_FDS {
        return all_failed("too many files at once");
    }
    match user {
        None => transfer::create_output(iwd, entries),
        Some(u) => {
            let op = Op::CreateOutput {
                iwd: iwd.to_path_buf(),
                entries: entries.to_vec(),
            };
            match call(u, op, deadline) {
                Ok((Answer::Created(made, failures), fds))
                    if made.len() == files && fds.len() == made.iter().filter(|m| **m).count() =>
                {
                    let mut fds = fds.into_iter();
                    let out = made
                        .into_iter()
                        .map(|m| if m { fds.next() } else { None })
                        .collect();
                    (out, failures)
                }
                Ok(_) => all_failed("the helper sent other descriptors"),
                Err(why) => all_failed(&why),
            }
        }
    }
}

fn helper_failure(path: &Path, why: &str) -> Failure {
    Failure {
        path: path.to_path_buf(),
        to: None,
        message: format!("the file helper failed: {why}"),
        errno: None,
        subcode: None,
    }
}

/// Runs one request in a helper process that drops to `user`.
fn call(user: &User, op: Op, deadline: Duration) -> Result<(Answer, Vec<OwnedFd>), String> {
    if user.uid == 0 {
        return Err("file work for a user is never done as root".into());
    }
    // Keeps the constructor below in every program that can start a
    // helper (a linker drops an unreferenced object file).
    std::hint::black_box(HELPER_ENTRY as usize);
    let request = serde_json::to_vec(&Request {
        uid: user.uid,
        gid: user.gid,
        groups: user.groups.clone(),
        op,
    })
    .map_err(|e| format!("encoding the request: {e}"))?;
    let (ours, theirs) = UnixStream::pair().map_err(|e| format!("making a socket pair: {e}"))?;
    let mut child = Command::new("/proc/self/exe")
        .arg(HELPER_ARG)
        .env_clear()
        .stdin(Stdio::piped())
        .stdout(Stdio::from(OwnedFd::from(theirs)))
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("starting it: {e}"))?;
    let started = Instant::now();
    let result = (|| {
        let mut stdin = child.stdin.take().ok_or("no standard input")?;
        stdin
            .write_all(&request)
            .map_err(|e| format!("sending the request: {e}"))?;
        drop(stdin);
        receive(&ours, started + deadline)
    })();
    if result.is_err() {
        let _ = child.kill();
    }
    let status = child.wait().map_err(|e| format!("waiting for it: {e}"))?;
    let (bytes, fds) = result?;
    if !status.success() && bytes.is_empty() {
        return Err(format!("it exited with {status}"));
    }
    // The descriptors come with a NUL of their own before the answer.
    let text = &bytes[bytes.iter().take_while(|b| **b == 0).count()..];
    let answer: Answer =
        serde_json::from_slice(text).map_err(|e| format!("reading its answer: {e}"))?;
    Ok((answer, fds))
}

/// Reads the helper's answer (and the descriptors it sent) until it
/// closes its end, or until `until`.
fn receive(sock: &UnixStream, until: Instant) -> Result<(Vec<u8>, Vec<OwnedFd>), String> {
    use rustix::net::{recvmsg, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags};
    use std::mem::MaybeUninit;
    let mut bytes = Vec::new();
    let mut fds = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err("it did not answer in time".into());
        }
        sock.set_read_timeout(Some(left))
            .map_err(|e| format!("setting a timeout: {e}"))?;
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(MAX_FDS))];
        let mut control = RecvAncillaryBuffer::new(&mut space);
        let got = recvmsg(
            sock,
            &mut [io::IoSliceMut::new(&mut buf)],
            &mut control,
            RecvFlags::CMSG_CLOEXEC,
        );
        let got = match got {
            Ok(g) => g,
            Err(rustix::io::Errno::INTR) => continue,
            Err(rustix::io::Errno::AGAIN) => return Err("it did not answer in time".into()),
            Err(e) => return Err(format!("reading its answer: {e}")),
        };
        for msg in control.drain() {
            if let RecvAncillaryMessage::ScmRights(got) = msg {
                fds.extend(got);
            }
        }
        if got.bytes == 0 {
            return Ok((bytes, fds));
        }
        bytes.extend_from_slice(&buf[..got.bytes]);
        if bytes.len() as u64 > MAX_REQUEST {
            return Err("its answer is too long".into());
        }
    }
}

type InitEntry = extern "C" fn(libc::c_int, *const *const libc::c_char, *const *const libc::c_char);

/// The C runtime calls this with `argc` and `argv` before `main`.
#[used]
#[link_section = ".init_array"]
static HELPER_ENTRY: InitEntry = helper_entry;

extern "C" fn helper_entry(
    argc: libc::c_int,
    argv: *const *const libc::c_char,
    _envp: *const *const libc::c_char,
) {
    if argc != 2 || argv.is_null() {
        return;
    }
    // SAFETY: the C runtime passes argc valid C strings in argv.
    let arg = unsafe { CStr::from_ptr(*argv.add(1)) };
    if arg.to_bytes() != HELPER_ARG.as_bytes() {
        return;
    }
    let code = std::panic::catch_unwind(serve).unwrap_or(3);
    // SAFETY: ends this process; nothing of it is needed any more.
    unsafe { libc::_exit(code) }
}

/// The helper: one request from standard input, as the user it names.
fn serve() -> i32 {
    let mut text = Vec::new();
    if io::stdin()
        .take(MAX_REQUEST)
        .read_to_end(&mut text)
        .is_err()
    {
        return 2;
    }
    let Ok(req) = serde_json::from_slice::<Request>(&text) else {
        return 2;
    };
    if let Err(why) = become_user(req.uid, req.gid, &req.groups) {
        // Nothing was opened; say why on the answer channel.
        let failure = Failure {
            path: PathBuf::from("/"),
            to: None,
            message: format!("cannot change to uid {}: {why}", req.uid),
            errno: None,
            subcode: None,
        };
        let answer = match req.op {
            Op::Input(_) => Answer::Input(Err(failure)),
            Op::Output(_) => Answer::Output(transfer::Output {
                failures: vec![failure],
                bytes: 0,
            }),
            Op::OpenAppend(_) | Op::OpenFiles { .. } | Op::CreateInput { .. } => {
                Answer::Opened(Err(failure))
            }
            Op::QueryPlugins(..) => Answer::Plugins(Vec::new(), vec![failure.message]),
            Op::ListInput { .. } => Answer::ListedInput(Err(failure)),
            Op::ListOutput(_) => Answer::ListedOutput(
                Vec::new(),
                transfer::Output {
                    failures: vec![failure],
                    bytes: 0,
                },
            ),
            Op::CreateOutput { .. } => Answer::Created(Vec::new(), vec![failure]),
        };
        let _ = reply(&answer, Vec::new());
        return 1;
    }
    let (answer, fds) = match &req.op {
        Op::Input(r) => (Answer::Input(transfer::input(r)), Vec::new()),
        Op::Output(r) => (Answer::Output(transfer::output(r)), Vec::new()),
        Op::QueryPlugins(plugins, within) => {
            let (c, why) =
                transfer::query_plugins(plugins, Path::new("/"), &[], Instant::now() + *within);
            (Answer::Plugins(c, why), Vec::new())
        }
        Op::OpenAppend(p) => match transfer::open_append(p) {
            Ok(fd) => (Answer::Opened(Ok(())), vec![fd]),
            Err(f) => (Answer::Opened(Err(f)), Vec::new()),
        },
        Op::ListInput {
            iwd,
            executable,
            inputs,
        } => (
            Answer::ListedInput(transfer::list_input(iwd, executable.as_deref(), inputs)),
            Vec::new(),
        ),
        Op::OpenFiles { beneath, paths } if paths.len() <= MAX_FDS => {
            match transfer::open_files(beneath.as_deref(), paths) {
                Ok(fds) => (Answer::Opened(Ok(())), fds),
                Err(f) => (Answer::Opened(Err(f)), Vec::new()),
            }
        }
        Op::CreateInput { sandbox, entries }
            if entries.iter().filter(|e| !e.dir).count() <= MAX_FDS =>
        {
            match transfer::create_input(sandbox, entries) {
                Ok(fds) => (Answer::Opened(Ok(())), fds),
                Err(f) => (Answer::Opened(Err(f)), Vec::new()),
            }
        }
        Op::ListOutput(r) => {
            let (listed, output) = transfer::list_output(r);
            (Answer::ListedOutput(listed, output), Vec::new())
        }
        Op::CreateOutput { iwd, entries }
            if entries.iter().filter(|e| !e.dir).count() <= MAX_FDS =>
        {
            let (fds, failures) = transfer::create_output(iwd, entries);
            let made = fds.iter().map(Option::is_some).collect();
            (
                Answer::Created(made, failures),
                fds.into_iter().flatten().collect(),
            )
        }
        Op::OpenFiles { .. } | Op::CreateInput { .. } | Op::CreateOutput { .. } => return 2,
    };
    match reply(&answer, fds) {
        Ok(()) => 0,
        Err(_) => 1,
    }
}

/// Drops to the user for good: supplementary groups, gid, uid; then
/// checks that the process cannot become root again. The helper is
/// single-threaded here (before `main`), so libc's calls are enough.
fn become_user(uid: u32, gid: u32, groups: &[u32]) -> Result<(), String> {
    if uid == 0 {
        return Err("file work for a user is never done as root".into());
    }
    let check = |rc: libc::c_int, what: &str| {
        if rc == 0 {
            Ok(())
        } else {
            Err(format!("{what}: {}", io::Error::last_os_error()))
        }
    };
    // SAFETY: plain system calls with valid arguments.
    unsafe {
        // SAFETY: the uid the daemon runs as: only root may change groups.
        if libc::geteuid() == 0 {
            check(libc::setgroups(groups.len(), groups.as_ptr()), "setgroups")?;
        }
        check(libc::setresgid(gid, gid, gid), "setresgid")?;
        check(libc::setresuid(uid, uid, uid), "setresuid")?;
        if libc::getuid() != uid || libc::geteuid() != uid || libc::getegid() != gid {
            return Err("the new ids did not take".into());
        }
        if libc::setuid(0) == 0 {
            return Err("root could be regained".into());
        }
        libc::umask(0o022);
        check(libc::chdir(c"/".as_ptr()), "chdir /")?;
    }
    Ok(())
}

/// Writes the answer on standard output (a Unix socket), after the
/// descriptors if any (sent with a NUL byte of their own).
fn reply(answer: &Answer, fds: Vec<OwnedFd>) -> io::Result<()> {
    use rustix::net::{sendmsg, SendAncillaryBuffer, SendAncillaryMessage, SendFlags};
    use std::mem::MaybeUninit;
    let bytes = serde_json::to_vec(answer).map_err(io::Error::other)?;
    // SAFETY: descriptor 1 is the socket the daemon gave; it is ours to use
    // and is closed when the process exits.
    let out = unsafe { OwnedFd::from_raw_fd(1) };
    let sock = UnixStream::from(out);
    if !fds.is_empty() {
        let borrowed: Vec<_> = fds.iter().map(|f| f.as_fd()).collect();
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(MAX_FDS))];
        let mut control = SendAncillaryBuffer::new(&mut space);
        if !control.push(SendAncillaryMessage::ScmRights(&borrowed)) {
            return Err(io::Error::other("too many descriptors for one message"));
        }
        let sent = sendmsg(
            &sock,
            &[io::IoSlice::new(&[0])],
            &mut control,
            SendFlags::empty(),
        )?;
        if sent != 1 {
            return Err(io::Error::other("the descriptors were not sent"));
        }
    }
    (&sock).write_all(&bytes)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// As root, the helper is started from this test binary itself (its
    /// `.init_array` entry serves the request); otherwise the work is done
    /// in this process.
    #[test]
    fn a_helper_opens_a_log_as_the_user_and_hands_back_the_descriptor() {
        let t = tempfile::tempdir().unwrap();
        // SAFETY: geteuid cannot fail.
        let root = unsafe { libc::geteuid() } == 0;
        let user = root.then(|| crate::procs::lookup_user("nobody").unwrap());
        if root {
            // nobody may write here, and nowhere else under the tempdir.
            std::fs::set_permissions(
                t.path(),
                std::os::unix::fs::PermissionsExt::from_mode(0o777),
            )
            .unwrap();
        }
        let log = t.path().join("job.log");
        let fd = open_append(user.as_ref(), &log, Duration::from_secs(10)).unwrap();
        std::fs::File::from(fd).write_all(b"000 event\n").unwrap();
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "000 event\n");
        if root {
            use std::os::unix::fs::MetadataExt;
            assert_eq!(
                std::fs::metadata(&log).unwrap().uid(),
                65534,
                "made by the user"
            );
            // A file only root may write stays out of reach.
            let private = t.path().join("private");
            std::fs::create_dir(&private).unwrap();
            std::fs::set_permissions(
                &private,
                std::os::unix::fs::PermissionsExt::from_mode(0o755),
            )
            .unwrap();
            let e = open_append(user.as_ref(), &private.join("x"), Duration::from_secs(10))
                .unwrap_err();
            assert_eq!(e.errno, Some(libc::EACCES), "{e:?}");
            assert!(!private.join("x").exists());
        }
    }

    /// A transfer between hosts, both ends here: the access point lists
    /// and opens the input as the user, the execute point creates it
    /// beneath the sandbox as the user, the bytes move between the
    /// descriptors; output the other way, into the job's directory.
    #[test]
    fn files_move_between_descriptors_the_user_opened_on_each_side() {
        use std::io::Read;
        use std::os::unix::fs::MetadataExt;
        let t = tempfile::tempdir().unwrap();
        // SAFETY: geteuid cannot fail.
        let root = unsafe { libc::geteuid() } == 0;
        let user = root.then(|| crate::procs::lookup_user("nobody").unwrap());
        let iwd = t.path().join("iwd");
        let sandbox = t.path().join("sandbox");
        for d in [&iwd, &sandbox] {
            std::fs::create_dir(d).unwrap();
            if root {
                std::os::unix::fs::chown(d, Some(65534), Some(65534)).unwrap();
            }
        }
        std::fs::create_dir(iwd.join("data")).unwrap();
        std::fs::write(iwd.join("data/a.txt"), "alpha").unwrap();
        std::fs::write(iwd.join("prog.sh"), "#!/bin/sh\n").unwrap();
        std::fs::write(iwd.join("in.txt"), "input").unwrap();
        let d = Duration::from_secs(10);
        let listed = list_input(
            user.as_ref(),
            &iwd,
            Some("prog.sh"),
            &["in.txt".into(), "data".into()],
            d,
        )
        .unwrap();
        let names: Vec<&str> = listed.iter().map(|(e, _)| e.name.as_str()).collect();
        assert_eq!(names, ["condor_exec.exe", "in.txt", "data", "data/a.txt"]);
        let sources: Vec<PathBuf> = listed.iter().filter_map(|(_, p)| p.clone()).collect();
        let readers = open_files(user.as_ref(), None, &sources, d).unwrap();
        let entries: Vec<Entry> = listed.iter().map(|(e, _)| e.clone()).collect();
        let writers = create_input(user.as_ref(), &sandbox, &entries, d).unwrap();
        assert_eq!(readers.len(), writers.len());
        for (r, w) in readers.into_iter().zip(writers) {
            std::io::copy(&mut std::fs::File::from(r), &mut std::fs::File::from(w)).unwrap();
        }
        assert_eq!(
            std::fs::read_to_string(sandbox.join("data/a.txt")).unwrap(),
            "alpha"
        );
        assert_eq!(
            std::fs::read_to_string(sandbox.join("in.txt")).unwrap(),
            "input"
        );
        let exe = std::fs::metadata(sandbox.join("condor_exec.exe")).unwrap();
        assert_eq!(exe.mode() & 0o777, 0o755);
        if root {
            assert_eq!(exe.uid(), 65534, "made by the user");
        }
        // A name from the other host that leads out is refused.
        let bad = Entry {
            name: "../escape".into(),
            dir: false,
            mode: 0o644,
            size: 0,
        };
        assert!(create_input(user.as_ref(), &sandbox, &[bad], d).is_err());
        assert!(!t.path().join("escape").exists());

        // Output: a new file and the stream, back into the job's directory.
        std::fs::write(sandbox.join("result.txt"), "result").unwrap();
        std::fs::write(sandbox.join(transfer::STDOUT), "printed").unwrap();
        let (listed, done) = list_output(
            user.as_ref(),
            OutputRequest {
                sandbox: sandbox.clone(),
                iwd: iwd.clone(),
                named: Some(vec!["result.txt".into()]),
                streams: vec![(transfer::STDOUT.into(), "job.out".into())],
                ..OutputRequest::default()
            },
            d,
        );
        assert!(done.failures.is_empty(), "{:?}", done.failures);
        let names: Vec<&str> = listed.iter().map(|(e, _)| e.name.as_str()).collect();
        assert_eq!(names, ["result.txt", "job.out"]);
        let sources: Vec<PathBuf> = listed
            .iter()
            .filter_map(|(_, s)| s.as_ref().map(PathBuf::from))
            .collect();
        let readers = open_files(user.as_ref(), Some(&sandbox), &sources, d).unwrap();
        let entries: Vec<Entry> = listed.iter().map(|(e, _)| e.clone()).collect();
        let (writers, failures) = create_output(user.as_ref(), &iwd, &entries, d);
        assert!(failures.is_empty(), "{failures:?}");
        for (r, w) in readers.into_iter().zip(writers) {
            let mut text = String::new();
            std::fs::File::from(r).read_to_string(&mut text).unwrap();
            std::io::Write::write_all(&mut std::fs::File::from(w.unwrap()), text.as_bytes())
                .unwrap();
        }
        assert_eq!(
            std::fs::read_to_string(iwd.join("result.txt")).unwrap(),
            "result"
        );
        assert_eq!(
            std::fs::read_to_string(iwd.join("job.out")).unwrap(),
            "printed"
        );
    }

    #[test]
    fn the_helper_is_never_root() {
        let root_user = User {
            name: "root".into(),
            uid: 0,
            gid: 0,
            groups: vec![0],
        };
        let e = open_append(
            Some(&root_user),
            Path::new("/tmp/x"),
            Duration::from_secs(5),
        )
        .unwrap_err();
        assert!(e.message.contains("never done as root"), "{e:?}");
    }
}
