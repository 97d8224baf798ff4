//! The personal pool's process: the state directory, the socket, the axum
//! routes over [`Schedd`], the periodic timer, and shutdown.

use std::fmt;
use std::os::unix::fs::PermissionsExt;
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

use crate::identity::Peer;
use crate::schedd_service::{ApiError, PoolConfig, Schedd};

/// Why the pool could not start or run.
#[derive(Debug)]
pub enum Error {
    /// Another pool holds this state directory.
    AlreadyRunning { state_dir: PathBuf },
    /// The job queue could not be opened.
    Store(store::Error),
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
            Error::Io { path, op, source } => write!(f, "{}: {op}: {source}", path.display()),
        }
    }
}

impl std::error::Error for Error {}

/// The real clock, read here so the cores stay pure.
fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// A personal pool that is set up (queue open, socket bound) and ready to
/// [`Pool::run`].
pub struct Pool {
    schedd: Schedd,
    listener: std::os::unix::net::UnixListener,
    socket: PathBuf,
    periodic_interval: u64,
}

impl Pool {
    /// Creates `state_dir` if needed, opens the job queue in it (refused
    /// if another pool has it), restores the queue, and binds
    /// `<state_dir>/pool.sock`, open to every local user (who may then act
    /// only on their own jobs).
    pub fn up(state_dir: &Path, config: PoolConfig) -> Result<Pool, Error> {
        std::fs::create_dir_all(state_dir).map_err(|source| Error::Io {
            path: state_dir.to_path_buf(),
            op: "creating the state directory",
            source,
        })?;
        let socket = state_dir.join(wire::SOCKET_NAME);
        let address = format!("<unix:{}>", socket.display());
        let periodic_interval = config.periodic_interval;
        // The queue's lock first: only its holder may touch the socket.
        let schedd = match Schedd::open(&state_dir.join(crate::QUEUE_FILE), config, address) {
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
        let listener =
            std::os::unix::net::UnixListener::bind(&socket).map_err(io("binding the socket"))?;
        std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o666))
            .map_err(io("opening the socket to local users"))?;
        listener
            .set_nonblocking(true)
            .map_err(io("setting up the socket"))?;
        Ok(Pool {
            schedd,
            listener,
            socket,
            periodic_interval,
        })
    }

    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// How many jobs the queue held at start.
    pub fn jobs(&self) -> usize {
        self.schedd.queue().len()
    }

    /// Serves until SIGTERM, SIGINT or a shutdown request, then removes
    /// the socket and closes the queue.
    pub fn run(self) -> Result<(), Error> {
        let socket = self.socket.clone();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
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
        let shared = Arc::new(Shared {
            schedd: Mutex::new(self.schedd),
            shutdown: Notify::new(),
        });
        let app = Router::new()
            .route(api::PATH_HELLO, post(hello))
            .route(api::PATH_NEW_CLUSTER, post(new_cluster))
            .route(api::PATH_SUBMIT, post(submit))
            .route(api::PATH_QUERY, post(query))
            .route(api::PATH_ACT, post(act))
            .route(api::PATH_HISTORY, post(history))
            .route(api::PATH_SHUTDOWN, post(shutdown))
            .fallback(unknown)
            .layer(DefaultBodyLimit::max(256 << 20))
            .with_state(shared.clone());

        let periodic = shared.clone();
        let interval = Duration::from_secs(self.periodic_interval);
        tokio::spawn(async move {
            let mut timer = tokio::time::interval(interval);
            timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            timer.tick().await;
            loop {
                timer.tick().await;
                let mut schedd = periodic.lock();
                if let Err(e) = schedd.periodic(now()) {
                    eprintln!("ferrocondor: {e}");
                }
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
        axum::serve(listener, app.into_make_service_with_connect_info::<Peer>())
            .with_graceful_shutdown(stopped)
            .await
            .map_err(|source| Error::Io {
                path: socket,
                op: "serving",
                source,
            })
    }
}

struct Shared {
    schedd: Mutex<Schedd>,
    shutdown: Notify,
}

impl Shared {
    /// The schedd; a request that panicked left it consistent (each change
    /// is stored before memory is trusted), so a poisoned lock is taken.
    fn lock(&self) -> std::sync::MutexGuard<'_, Schedd> {
        self.schedd.lock().unwrap_or_else(|p| p.into_inner())
    }
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

/// Reads the request, learns who asks, runs `f` on the schedd.
fn handle<Req, Ans>(
    shared: &Shared,
    peer: Peer,
    body: &[u8],
    f: impl FnOnce(&mut Schedd, &str, Req) -> Result<Ans, ApiError>,
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
    let mut schedd = shared.lock();
    match f(&mut schedd, &user, req) {
        Ok(a) => Json(a).into_response(),
        Err(e) => e.into_response(),
    }
}

async fn hello(
    State(s): State<Arc<Shared>>,
    ConnectInfo(p): ConnectInfo<Peer>,
    body: Bytes,
) -> Response {
    handle(&s, p, &body, |sd, user, _: api::Empty| Ok(sd.hello(user)))
}

async fn new_cluster(
    State(s): State<Arc<Shared>>,
    ConnectInfo(p): ConnectInfo<Peer>,
    body: Bytes,
) -> Response {
    handle(&s, p, &body, |sd, user, _: api::Empty| sd.new_cluster(user))
}

async fn submit(
    State(s): State<Arc<Shared>>,
    ConnectInfo(p): ConnectInfo<Peer>,
    body: Bytes,
) -> Response {
    handle(&s, p, &body, |sd, user, req: api::SubmitRequest| {
        sd.submit(user, req, now())
    })
}

async fn query(
    State(s): State<Arc<Shared>>,
    ConnectInfo(p): ConnectInfo<Peer>,
    body: Bytes,
) -> Response {
    handle(&s, p, &body, |sd, user, req: api::QueryRequest| {
        sd.query(user, &req, now())
    })
}

async fn act(
    State(s): State<Arc<Shared>>,
    ConnectInfo(p): ConnectInfo<Peer>,
    body: Bytes,
) -> Response {
    handle(&s, p, &body, |sd, user, req: api::ActRequest| {
        sd.act(user, &req, now())
    })
}

async fn history(
    State(s): State<Arc<Shared>>,
    ConnectInfo(p): ConnectInfo<Peer>,
    body: Bytes,
) -> Response {
    handle(&s, p, &body, |sd, user, req: api::HistoryRequest| {
        sd.history(user, &req, now())
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

async fn unknown(uri: Uri) -> Response {
    ApiError {
        status: 404,
        message: format!("no such request: {} (this pool speaks API v1)", uri.path()),
    }
    .into_response()
}
