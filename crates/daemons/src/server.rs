//! The personal pool's process: the state directory, the socket, the axum
//! routes over the [`Node`] (the access point, execute point and central
//! manager), the timers (startd polls, negotiation cycles, periodic job
//! policy, keep-alives), waiting on jobs and hooks, and shutdown.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::body::Bytes;
use axum::extract::{ConnectInfo, DefaultBodyLimit, State};
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde::de::DeserializeOwned;
use serde::Serialize;
use tokio::sync::Notify;
use wire::api;

use crate::admin::Reloaded;
use crate::execute::{Node, NodeConfig, Work};
use crate::identity::Peer;
use crate::schedd_service::{ApiError, PoolConfig, Schedd};

/// Why the pool could not start or run.
#[derive(Debug)]
pub enum Error {
    /// Another pool holds this state directory.
    AlreadyRunning { state_dir: PathBuf },
    /// The job queue could not be opened.
    Store(store::Error),
    /// The execute point or the central manager could not be set up.
    Setup(String),
    Io {
        path: PathBuf,
        op: &'static str,
        source: std::io::Error,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::AlreadyRunning { state_dir } => write!(
                f,
                "a pool is already running on {} (its job queue is locked); \
                 stop it with `ferrocondor pool down` first",
                state_dir.display()
            ),
            Error::Store(e) => write!(f, "{e}"),
            Error::Setup(e) => write!(f, "{e}"),
            Error::Io { path, op, source } => write!(f, "{}: {op}: {source}", path.display()),
        }
    }
}

impl std::error::Error for Error {}

/// The real clock, read here so the cores stay pure.
pub(crate) fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// A personal pool that is set up (queue open, socket bound) and ready to
/// [`Pool::run`].
/// Reads the configuration again, for `condor_reconfig`.
pub type Reload = Box<dyn Fn() -> Result<Reloaded, String> + Send + Sync>;

pub struct Pool {
    node: Node,
    reload: Option<Reload>,
    listener: std::os::unix::net::UnixListener,
    socket: PathBuf,
    periodic_interval: u64,
}

impl Pool {
    /// Creates `state_dir` if needed, opens the job queue in it (refused
    /// if another pool has it), restores the queue, and binds
    /// `<state_dir>/pool.sock`, open to every local user (who may then act
    /// only on their own jobs).
    pub fn up(state_dir: &Path, config: PoolConfig, node: NodeConfig) -> Result<Pool, Error> {
        // Nothing in the state directory is trusted before it is checked.
        crate::statedir::prepare(state_dir).map_err(|e| Error::Setup(e.to_string()))?;
        let queue_file = state_dir.join(crate::QUEUE_FILE);
        crate::statedir::private_file(&queue_file).map_err(|source| Error::Io {
            path: queue_file.clone(),
            op: "making the job queue private to the pool",
            source,
        })?;
        let socket = state_dir.join(wire::SOCKET_NAME);
        let address = format!("<unix:{}>", socket.display());
        let periodic_interval = config.periodic_interval;
        // The queue's lock first: only its holder may touch the socket.
        let schedd = match Schedd::open(&queue_file, config, address) {
            Ok(s) => s,
            Err(store::Error::Locked { .. }) => {
                return Err(Error::AlreadyRunning {
                    state_dir: state_dir.to_path_buf(),
                })
            }
            Err(e) => return Err(Error::Store(e)),
        };
        let io = |op| {
            let path = socket.clone();
            move |source| Error::Io { path, op, source }
        };
        // A socket left by a pool that died: we hold the lock, so it is stale.
        match std::fs::remove_file(&socket) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io("removing a stale socket")(e)),
        }
        let listener = crate::statedir::bind_socket(&socket).map_err(io("binding the socket"))?;
        listener
            .set_nonblocking(true)
            .map_err(io("setting up the socket"))?;
        let node = Node::new(schedd, node, state_dir, now()).map_err(Error::Setup)?;
        Ok(Pool {
            node,
            reload: None,
            listener,
            socket,
            periodic_interval,
        })
    }

    /// How `condor_reconfig` reads the configuration again (without one,
    /// it is refused).
    pub fn with_reload(mut self, reload: Reload) -> Pool {
        self.reload = Some(reload);
        self
    }

    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// How many jobs the queue held at start.
    pub fn jobs(&self) -> usize {
        self.node.schedd.queue().len()
    }

    /// Serves until SIGTERM, SIGINT or a shutdown request, then removes
    /// the socket and closes the queue.
    pub fn run(self) -> Result<(), Error> {
        let socket = self.socket.clone();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .max_blocking_threads(BLOCKING_THREADS)
            .build()
            .map_err(|source| Error::Io {
                path: socket.clone(),
                op: "starting the runtime",
                source,
            })?;
        let result = runtime.block_on(self.serve());
        let _ = std::fs::remove_file(&socket);
        result
    }

    async fn serve(self) -> Result<(), Error> {
        let socket = self.socket.clone();
        let listener =
            tokio::net::UnixListener::from_std(self.listener).map_err(|source| Error::Io {
                path: socket.clone(),
                op: "listening on the socket",
                source,
            })?;
        let intervals = (
            self.node.poll_interval,
            self.node.negotiator_interval,
            self.node.alive_interval,
        );
        let shared = Arc::new(Shared {
            node: Mutex::new(self.node),
            shutdown: Notify::new(),
            reschedule: Notify::new(),
            reload: self.reload,
        });
        let app = Router::new()
            .route(api::PATH_HELLO, post(hello))
            .route(api::PATH_NEW_CLUSTER, post(new_cluster))
            .route(api::PATH_SUBMIT, post(submit))
            .route(api::PATH_QUERY, post(query))
            .route(api::PATH_ACT, post(act))
            .route(api::PATH_HISTORY, post(history))
            .route(api::PATH_SHUTDOWN, post(shutdown))
            .route(api::PATH_SLOTS, post(slots))
            .route(api::PATH_STARTD, post(startd_command))
            .route(api::PATH_USERPRIO, post(userprio))
            .route(api::PATH_RECONFIG, post(reconfig))
            .fallback(unknown)
            .layer(DefaultBodyLimit::max(256 << 20))
            .with_state(shared.clone());

        every(&shared, self.periodic_interval, false, |node, now| {
            if let Err(e) = node.schedd.periodic(now) {
                eprintln!("ferrocondor: {e}");
            }
        });
        // The first poll at once: the slots are Unclaimed (or Owner) from
        // the start, not after POLLING_INTERVAL.
        every(&shared, intervals.0, true, |node, now| node.poll(now));
        every(&shared, intervals.2, false, |node, now| {
            node.keep_alive(now)
        });
        // The negotiator: every NEGOTIATOR_INTERVAL, and at once when a
        // submission or a finished job leaves idle jobs (the schedd's
        // reschedule).
        let cycle = shared.clone();
        let negotiator_interval = Duration::from_secs(intervals.1);
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = cycle.reschedule.notified() => {}
                    _ = tokio::time::sleep(negotiator_interval) => {}
                }
                run_on(&cycle, |node, now| {
                    node.negotiate(now);
                });
            }
        });

        let stop = shared.clone();
        let stopped = async move {
            use tokio::signal::unix::{signal, SignalKind};
            let (Ok(mut term), Ok(mut int)) = (
                signal(SignalKind::terminate()),
                signal(SignalKind::interrupt()),
            ) else {
                stop.shutdown.notified().await;
                return;
            };
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
                _ = stop.shutdown.notified() => {}
            }
        };
        let served = axum::serve(listener, app.into_make_service_with_connect_info::<Peer>())
            .with_graceful_shutdown(stopped)
            .await
            .map_err(|source| Error::Io {
                path: socket,
                op: "serving",
                source,
            });
        // Jobs still running are killed; the queue keeps them as running,
        // so the next start evicts them to idle and they run again.
        shared.lock().kill_all();
        served
    }
}

/// Threads for the blocking work (starting and finishing jobs, hooks):
/// enough that a slow hook or a big output transfer does not hold up the
/// others, few enough that they do not crowd a small machine (measured
/// with `ferrocondor bench throughput`: 8 did as well as 16, and better
/// than 4 or tokio's default 512).
const BLOCKING_THREADS: usize = 8;

struct Shared {
    node: Mutex<Node>,
    shutdown: Notify,
    reschedule: Notify,
    reload: Option<Reload>,
}

impl Shared {
    /// The node; a request that panicked left it consistent (each change
    /// is stored before memory is trusted), so a poisoned lock is taken.
    fn lock(&self) -> std::sync::MutexGuard<'_, Node> {
        self.node.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Runs `f` on the node under the lock, then carries out the work it left.
fn run_on<T>(shared: &Arc<Shared>, f: impl FnOnce(&mut Node, i64) -> T) -> T {
    let (out, work, notes) = {
        let mut node = shared.lock();
        let t = now();
        let out = f(&mut node, t);
        node.queue_changed(t);
        (out, node.take_work(), node.take_notes())
    };
    for n in notes {
        eprintln!("ferrocondor: {n}");
    }
    dispatch(shared, work);
    out
}

/// Runs `f` every `secs` seconds (first at once if `now`).
fn every(
    shared: &Arc<Shared>,
    secs: u64,
    at_once: bool,
    f: impl Fn(&mut Node, i64) + Send + 'static,
) {
    let shared = shared.clone();
    tokio::spawn(async move {
        let mut timer = tokio::time::interval(Duration::from_secs(secs.max(1)));
        timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        timer.tick().await;
        if at_once {
            run_on(&shared, &f);
        }
        loop {
            timer.tick().await;
            run_on(&shared, &f);
        }
    });
}

/// Starts what the node asked for: waiting on a job's exit, finishing a
/// job, running a hook, a negotiation cycle.
fn dispatch(shared: &Arc<Shared>, work: Vec<Work>) {
    for w in work {
        let shared = shared.clone();
        match w {
            Work::Reschedule => shared.reschedule.notify_one(),
            Work::Watch { slot, run, fd } => {
                tokio::spawn(async move {
                    let fd = fd.and_then(|fd| {
                        // SAFETY: an OwnedFd is a valid open descriptor and
                        // stays the same one until the AsyncFd drops it.
                        unsafe {
                            tokio::io::unix::AsyncFd::register_with_interest(
                                fd,
                                tokio::io::Interest::READABLE,
                            )
                        }
                        .ok()
                    });
                    loop {
                        match &fd {
                            Some(fd) => match fd.readable().await {
                                Ok(mut guard) => guard.clear_ready(),
                                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
                            },
                            // No pidfd (an old kernel): look now and then.
                            None => tokio::time::sleep(Duration::from_millis(50)).await,
                        }
                        if run_on(&shared, |node, _| node.exited(&slot, run)) {
                            break;
                        }
                    }
                });
            }
            Work::Start {
                slot,
                run,
                spec,
                running_dir,
            } => {
                tokio::spawn(async move {
                    let at = slot.clone();
                    let result = tokio::task::spawn_blocking(move || {
                        let started = starter::Starter::start(*spec);
                        // Recorded before anything else, so a pool that dies
                        // now still has it killed at its next start.
                        if let Ok(p) = &started {
                            crate::execute::record_running(&running_dir, &at, p.pid());
                        }
                        started
                    })
                    .await;
                    let result = result.unwrap_or_else(|e| {
                        Err(starter::StartError::Ad(format!("the starter failed: {e}")))
                    });
                    run_on(&shared, |node, now| node.started(&slot, run, result, now));
                });
            }
            Work::Finish { slot, run, job } => {
                tokio::spawn(async move {
                    let report = tokio::task::spawn_blocking(move || job.finish()).await;
                    match report {
                        Ok(report) => {
                            run_on(&shared, |node, now| node.finished(&slot, run, report, now))
                        }
                        Err(e) => eprintln!("ferrocondor: {slot}: finishing the job failed: {e}"),
                    }
                });
            }
            Work::Hook {
                slot,
                program,
                args,
                input,
                fetch,
            } => {
                tokio::spawn(async move {
                    let shown = program.display().to_string();
                    let out =
                        tokio::task::spawn_blocking(move || run_hook(&program, &args, &input))
                            .await
                            .unwrap_or_else(|e| Err(e.to_string()));
                    if fetch {
                        run_on(&shared, |node, now| node.hook_done(slot, out, now));
                    } else if let Err(e) = out {
                        eprintln!("ferrocondor: {slot}: hook {shown}: {e}");
                    }
                });
            }
        }
    }
}

/// Runs a startd hook with `input` on its standard input; its standard
/// output, or why it failed.
fn run_hook(program: &Path, args: &[String], input: &str) -> Result<String, String> {
    use std::io::Write as _;
    let mut child = std::process::Command::new(program)
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .spawn()
        .map_err(|e| format!("cannot run it: {e}"))?;
    if let Some(mut stdin) = child.stdin.take() {
        // A hook that does not read its input is not an error.
        let _ = stdin.write_all(input.as_bytes());
    }
    let out = child
        .wait_with_output()
        .map_err(|e| format!("waiting for it: {e}"))?;
    if !out.status.success() {
        return Err(format!("it exited with {}", out.status));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.status).unwrap_or(StatusCode::BAD_REQUEST);
        (
            status,
            Json(api::ErrorBody {
                error: self.message,
            }),
        )
            .into_response()
    }
}

/// Reads the request, learns who asks, runs `f` on the node.
fn handle<Req, Ans>(
    shared: &Arc<Shared>,
    peer: Peer,
    body: &[u8],
    f: impl FnOnce(&mut Node, &str, Req) -> Result<Ans, ApiError>,
) -> Response
where
    Req: DeserializeOwned,
    Ans: Serialize,
{
    let user = match peer.user() {
        Ok(u) => u,
        Err(why) => return ApiError::forbidden(format!("who are you? {why}")).into_response(),
    };
    let body = if body.iter().all(u8::is_ascii_whitespace) {
        &b"{}"[..]
    } else {
        body
    };
    let req: Req = match serde_json::from_slice(body) {
        Ok(r) => r,
        Err(e) => return ApiError::bad_request(format!("malformed request: {e}")).into_response(),
    };
    match run_on(shared, |node, _| f(node, &user, req)) {
        Ok(a) => Json(a).into_response(),
        Err(e) => e.into_response(),
    }
}

async fn hello(
    State(s): State<Arc<Shared>>,
    ConnectInfo(p): ConnectInfo<Peer>,
    body: Bytes,
) -> Response {
    handle(&s, p, &body, |n, user, _: api::Empty| {
        Ok(n.schedd.hello(user))
    })
}

async fn new_cluster(
    State(s): State<Arc<Shared>>,
    ConnectInfo(p): ConnectInfo<Peer>,
    body: Bytes,
) -> Response {
    handle(&s, p, &body, |n, user, _: api::Empty| {
        may_submit(p, user)?;
        n.schedd.new_cluster(user)
    })
}

/// A pool started by a user runs every job as that user, so only that user
/// may submit to it (another user's job would run with their rights); a
/// pool started by root runs each job as its owner, and takes anyone's.
fn may_submit(peer: Peer, user: &str) -> Result<(), ApiError> {
    // SAFETY: geteuid and getuid cannot fail.
    let (euid, me) = unsafe { (libc::geteuid(), libc::getuid()) };
    if euid == 0 || peer.uid == Some(me) || peer.uid == Some(0) {
        return Ok(());
    }
    Err(ApiError::forbidden(format!(
        "permission denied: this pool runs every job as {}, who started it, so only they may \
         submit to it ({user} may not); a pool started by root runs each job as its owner",
        crate::identity::user_name(me).unwrap_or_else(|| format!("uid {me}"))
    )))
}

async fn submit(
    State(s): State<Arc<Shared>>,
    ConnectInfo(p): ConnectInfo<Peer>,
    body: Bytes,
) -> Response {
    handle(&s, p, &body, |n, user, req: api::SubmitRequest| {
        may_submit(p, user)?;
        n.schedd.submit(user, req, now())
    })
}

async fn query(
    State(s): State<Arc<Shared>>,
    ConnectInfo(p): ConnectInfo<Peer>,
    body: Bytes,
) -> Response {
    handle(&s, p, &body, |n, user, req: api::QueryRequest| {
        n.schedd.query(user, &req, now())
    })
}

async fn act(
    State(s): State<Arc<Shared>>,
    ConnectInfo(p): ConnectInfo<Peer>,
    body: Bytes,
) -> Response {
    handle(&s, p, &body, |n, user, req: api::ActRequest| {
        n.schedd.act(user, &req, now())
    })
}

async fn history(
    State(s): State<Arc<Shared>>,
    ConnectInfo(p): ConnectInfo<Peer>,
    body: Bytes,
) -> Response {
    handle(&s, p, &body, |n, user, req: api::HistoryRequest| {
        n.schedd.history(user, &req, now())
    })
}

/// Any local user may stop a personal pool only if they own it: the
/// daemon's own user, or a queue super user.
async fn shutdown(
    State(s): State<Arc<Shared>>,
    ConnectInfo(p): ConnectInfo<Peer>,
    body: Bytes,
) -> Response {
    let shared = s.clone();
    let response = handle(&s, p, &body, |_, user, _: api::Empty| {
        // SAFETY: getuid cannot fail.
        let me = unsafe { libc::getuid() };
        if p.uid == Some(me) || p.uid == Some(0) {
            Ok(api::Empty {})
        } else {
            Err(ApiError::forbidden(format!(
                "permission denied: {user} may not shut down a pool run by {}",
                crate::identity::user_name(me).unwrap_or_else(|| format!("uid {me}"))
            )))
        }
    });
    if response.status().is_success() {
        shared.shutdown.notify_one();
    }
    response
}

/// Whether the peer may administer the pool: the pool's own user, root,
/// or a queue super user.
fn admin(node: &Node, peer: Peer, user: &str) -> Result<(), ApiError> {
    // SAFETY: getuid cannot fail.
    let me = unsafe { libc::getuid() };
    if peer.uid == Some(me) || peer.uid == Some(0) || node.schedd.is_super_user(user) {
        Ok(())
    } else {
        Err(ApiError::forbidden(format!(
            "permission denied: {user} may not administer a pool run by {}",
            crate::identity::user_name(me).unwrap_or_else(|| format!("uid {me}"))
        )))
    }
}

async fn slots(
    State(s): State<Arc<Shared>>,
    ConnectInfo(p): ConnectInfo<Peer>,
    body: Bytes,
) -> Response {
    handle(&s, p, &body, |n, _, req: api::SlotsRequest| {
        n.slots(&req, now())
    })
}

async fn startd_command(
    State(s): State<Arc<Shared>>,
    ConnectInfo(p): ConnectInfo<Peer>,
    body: Bytes,
) -> Response {
    handle(&s, p, &body, |n, user, req: api::StartdCommand| {
        admin(n, p, user)?;
        n.startd_command(req, now())
    })
}

async fn userprio(
    State(s): State<Arc<Shared>>,
    ConnectInfo(p): ConnectInfo<Peer>,
    body: Bytes,
) -> Response {
    handle(&s, p, &body, |n, user, req: api::UserprioRequest| {
        let changes =
            req.set_factor.is_some() || req.set_priority.is_some() || req.reset_usage.is_some();
        if changes {
            admin(n, p, user)?;
        }
        Ok(n.userprio(&req, now()))
    })
}

async fn reconfig(
    State(s): State<Arc<Shared>>,
    ConnectInfo(p): ConnectInfo<Peer>,
    body: Bytes,
) -> Response {
    let shared = s.clone();
    handle(&s, p, &body, |n, user, _: api::Empty| {
        admin(n, p, user)?;
        let reload = shared.reload.as_ref().ok_or_else(|| {
            ApiError::bad_request(
                "this pool was started without a way to read its configuration again",
            )
        })?;
        let new = reload().map_err(|e| {
            ApiError::bad_request(format!("the configuration was not changed: {e}"))
        })?;
        n.reconfigure(new)
    })
}

async fn unknown(uri: Uri) -> Response {
    ApiError {
        status: 404,
        message: format!("no such request: {} (this pool speaks API v1)", uri.path()),
    }
    .into_response()
}
