//! The personal pool's process: the state directory, the socket, the four
//! roles (`roles`: collector, negotiator, schedd, startd, each on its own
//! thread, talking by messages), the tools' requests carried to the role
//! that answers them, waiting on jobs and hooks, and shutdown.
//!
//! Every local user may connect, so no one user may hold up the others:
//! each connection is served by hyper under limits (one user's open
//! connections, the time to send a request's headers and body, the size
//! of a body, the time an answer may wait to be read), and queries are
//! evaluated on snapshots the schedd hands out, off its thread, within a
//! time limit and a few at once for each user. The constants below say
//! each limit and why it is what it is.

use std::collections::HashMap;
use std::convert::Infallible;
use std::fmt;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper::body::{Body as _, Bytes, Incoming};
use hyper::header::{HeaderValue, CONTENT_LENGTH, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use serde::de::DeserializeOwned;
use serde::Serialize;
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};
use wire::api;

use crate::admin::{Reloaded, SlotsQuery};
use crate::collector_role::CollectorRole;
use crate::execute::{NodeConfig, StartdRole, Work};
use crate::identity::Peer;
use crate::negotiator_role::NegotiatorRole;
use crate::roles::{AdminRequest, Message, Outbox, RoleGone, RoleName, Roles, Router};
use crate::schedd_role::{ScheddIntervals, ScheddRole};
use crate::schedd_service::{to_json, ApiError, Budget, ParsedSubmission, PoolConfig, Schedd};

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
/// Every role: a personal pool runs them all in one process.
const ALL_ROLES: [RoleName; 4] = [
    RoleName::Collector,
    RoleName::Negotiator,
    RoleName::Schedd,
    RoleName::Startd,
];

/// Reads the configuration again, for `condor_reconfig`.
pub type Reload = Box<dyn Fn() -> Result<Reloaded, String> + Send + Sync>;

pub struct Pool {
    roles: Roles,
    reload: Option<Reload>,
    /// The tools' socket, where the schedd runs.
    tools: Option<(std::os::unix::net::UnixListener, PathBuf)>,
    /// Under `ferrocondor master`: the directory of the roles' sockets
    /// (the other roles run in processes of their own).
    roles_dir: Option<PathBuf>,
    /// HTCondor's wire protocol on TCP, for HTCondor's clients.
    port: Option<crate::command_port::CommandPort>,
}

fn interval(c: &config::Config, name: &str, default: i64) -> Result<u64, String> {
    Ok(c.integer_or(name, default)
        .map_err(|e| e.to_string())?
        .max(1) as u64)
}

/// The roles named in `wanted`, built in the order safety needs: the
/// startd first (it kills whatever a dead pool left running), then the
/// schedd (which puts the jobs that were running back to idle).
fn build_roles(
    wanted: &[RoleName],
    schedd: Option<Schedd>,
    node: NodeConfig,
    periodic_interval: u64,
    state_dir: &Path,
    now: i64,
) -> Result<Roles, String> {
    use negotiator::accountant::Accountant;
    use negotiator::collector::CollectorStore;
    use negotiator::cycle::Policy;
    use negotiator::limits::ConcurrencyLimits;
    let mut roles = Roles::default();
    if wanted.contains(&RoleName::Startd) {
        roles.startd = Some(StartdRole::new(&node, state_dir, now)?);
    }
    let cm = &node.negotiator;
    let limits =
        ConcurrencyLimits::from_config(cm).map_err(|e| format!("concurrency limits: {e}"))?;
    let poll = interval(&node.startd, "POLLING_INTERVAL", 5)?;
    if let Some(schedd) = schedd {
        let mut notes = Vec::new();
        let local_startd = roles.startd.as_ref().map(|s| s.name().to_string());
        roles.schedd = Some(ScheddRole::new(
            schedd,
            &node.hostname,
            local_startd.as_deref(),
            limits.clone(),
            ScheddIntervals {
                periodic: periodic_interval.max(1),
                alive: interval(&node.startd, "ALIVE_INTERVAL", 300)?,
                update: poll,
                unused_claim: interval(&node.startd, "UNUSED_CLAIM_TIMEOUT", 600)?,
            },
            now,
            &mut notes,
        ));
        for n in notes {
            eprintln!("ferrocondor: {n}");
        }
    }
    if wanted.contains(&RoleName::Negotiator) {
        let policy = Policy::from_config(cm).map_err(|e| format!("negotiator: {e}"))?;
        let mut accountant = Accountant::from_config(cm).map_err(|e| format!("accountant: {e}"))?;
        // The figures a previous pool left (priorities, factors, usage).
        if let Some(saved) = crate::accounting::load(state_dir)? {
            accountant = accountant.with_state(saved);
        }
        roles.negotiator = Some(
            NegotiatorRole::new(
                accountant,
                limits,
                policy,
                interval(cm, "NEGOTIATOR_INTERVAL", 60)?,
                state_dir.to_path_buf(),
            )
            .named(&node.hostname),
        );
    }
    if wanted.contains(&RoleName::Collector) {
        let cc = &node.collector;
        let collector = CollectorStore::from_config(cc).map_err(|e| format!("collector: {e}"))?;
        let mut role = CollectorRole::new(collector, poll, &node.hostname);
        let (hosts, types) = crate::pool_history::view_settings(cc)?;
        role = role.forwarding_to(hosts, types);
        if cc
            .boolean("KEEP_POOL_HISTORY")
            .map_err(|e| format!("collector: {e}"))?
            .unwrap_or(false)
        {
            let dir = cc
                .get("POOL_HISTORY_DIR")
                .map_err(|e| format!("collector: {e}"))?
                .filter(|d| !d.trim().is_empty())
                .map(std::path::PathBuf::from)
                .unwrap_or_else(|| state_dir.join("ViewHist"));
            let storage = cc
                .integer_or("POOL_HISTORY_MAX_STORAGE", 10_000_000)
                .map_err(|e| format!("collector: {e}"))?
                .max(1) as u64;
            let every = cc
                .duration("POOL_HISTORY_SAMPLING_INTERVAL")
                .map_err(|e| format!("collector: {e}"))?
                .unwrap_or(60)
                .max(1) as u64;
            role = role.keeping_history(crate::pool_history::PoolHistory::open(
                &dir, storage, every,
            )?);
        }
        roles.collector = Some(role);
    }
    Ok(roles)
}

/// Opens the job queue in `state_dir` (refused if another schedd has it)
/// and binds `<state_dir>/pool.sock`, open to every local user (who may
/// then act only on their own jobs).
fn open_schedd(
    state_dir: &Path,
    config: PoolConfig,
) -> Result<(Schedd, std::os::unix::net::UnixListener, PathBuf), Error> {
    let queue_file = state_dir.join(crate::QUEUE_FILE);
    crate::statedir::private_file(&queue_file).map_err(|source| Error::Io {
        path: queue_file.clone(),
        op: "making the job queue private to the pool",
        source,
    })?;
    let socket = state_dir.join(wire::SOCKET_NAME);
    let address = format!("<unix:{}>", socket.display());
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
    Ok((schedd, listener, socket))
}

impl Pool {
    /// Creates `state_dir` if needed, opens the job queue in it (refused
    /// if another pool has it), restores the queue, and binds
    /// `<state_dir>/pool.sock`, open to every local user (who may then act
    /// only on their own jobs).
    pub fn up(state_dir: &Path, config: PoolConfig, node: NodeConfig) -> Result<Pool, Error> {
        Pool::start(state_dir, config, node, &ALL_ROLES, false)
    }

    /// One role of a pool whose roles run in processes of their own
    /// (`ferrocondor daemon ROLE`, started by `ferrocondor master`): it
    /// talks to the others through their sockets in `<state>/roles`.
    pub fn daemon(
        state_dir: &Path,
        config: PoolConfig,
        node: NodeConfig,
        role: RoleName,
    ) -> Result<Pool, Error> {
        Pool::start(state_dir, config, node, &[role], true)
    }

    fn start(
        state_dir: &Path,
        config: PoolConfig,
        node: NodeConfig,
        wanted: &[RoleName],
        separate: bool,
    ) -> Result<Pool, Error> {
        // Nothing in the state directory is trusted before it is checked.
        crate::statedir::prepare(state_dir).map_err(|e| Error::Setup(e.to_string()))?;
        let periodic_interval = config.periodic_interval;
        let (schedd, tools) = if wanted.contains(&RoleName::Schedd) {
            let (schedd, listener, socket) = open_schedd(state_dir, config)?;
            (Some(schedd), Some((listener, socket)))
        } else {
            (None, None)
        };
        let roles = build_roles(wanted, schedd, node, periodic_interval, state_dir, now())
            .map_err(Error::Setup)?;
        Ok(Pool {
            roles,
            reload: None,
            tools,
            roles_dir: separate.then(|| state_dir.join("roles")),
            port: None,
        })
    }

    /// Opens the command port (HTCondor's wire protocol on TCP) for the
    /// roles this process runs, and writes its address files.
    pub fn with_command_port(
        mut self,
        config: crate::command_port::PortConfig,
    ) -> Result<Pool, Error> {
        let listen = config.listen;
        let port = crate::command_port::CommandPort::bind(config).map_err(|source| Error::Io {
            path: PathBuf::from(listen.to_string()),
            op: "listening for HTCondor's clients (the command port)",
            source,
        })?;
        port.write_address_files().map_err(|source| Error::Io {
            path: PathBuf::from("the address files"),
            op: "writing the command port's address",
            source,
        })?;
        if let Some(s) = self.roles.schedd.as_mut() {
            s.set_address(port.address());
        }
        if let Some(n) = self.roles.negotiator.as_mut() {
            n.set_address(port.address());
        }
        if let Some(s) = self.roles.startd.as_mut() {
            s.set_address(port.address());
        }
        if let Some(c) = self.roles.collector.as_mut() {
            c.start_forwarding(port.peers().client.clone(), &port.address());
        }
        self.port = Some(port);
        Ok(self)
    }

    /// The command port's address, `<ip:port?noUDP>`.
    pub fn command_address(&self) -> Option<String> {
        self.port.as_ref().map(|p| p.address())
    }

    /// How `condor_reconfig` reads the configuration again (without one,
    /// it is refused).
    pub fn with_reload(mut self, reload: Reload) -> Pool {
        self.reload = Some(reload);
        self
    }

    /// The tools' socket, where this process runs the schedd.
    pub fn socket(&self) -> Option<&Path> {
        self.tools.as_ref().map(|(_, p)| p.as_path())
    }

    /// How many jobs the queue held at start.
    pub fn jobs(&self) -> usize {
        self.roles
            .schedd
            .as_ref()
            .map_or(0, |s| s.schedd.queue().len())
    }

    /// Serves until SIGTERM, SIGINT or a shutdown request, then removes
    /// the socket and closes the queue.
    pub fn run(self) -> Result<(), Error> {
        raise_open_files_limit();
        let socket = self
            .socket()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("(no socket)"));
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .max_blocking_threads(BLOCKING_THREADS)
            .build()
            .map_err(|source| Error::Io {
                path: socket.clone(),
                op: "starting the runtime",
                source,
            })?;
        let tools = self.socket().map(Path::to_path_buf);
        let result = runtime.block_on(self.serve());
        if let Some(socket) = tools {
            let _ = std::fs::remove_file(&socket);
        }
        result
    }

    async fn serve(self) -> Result<(), Error> {
        let socket = self
            .socket()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("(no socket)"));
        let listener =
            match self.tools {
                Some((l, path)) => Some(tokio::net::UnixListener::from_std(l).map_err(
                    |source| Error::Io {
                        path,
                        op: "listening on the socket",
                        source,
                    },
                )?),
                None => None,
            };
        // Under a master (or on a host of a pool of many), the other
        // processes' roles are reached through their command ports.
        let remote = match (&self.roles_dir, &self.port) {
            (Some(_), Some(port)) => Some(Arc::new(crate::role_transport::Remote::new(
                port.peers().clone(),
                &port.address(),
                port.sessions(),
            ))),
            _ => None,
        };
        let own_address = self.port.as_ref().map(|p| p.address());
        let local: Vec<RoleName> = [
            (RoleName::Collector, self.roles.collector.is_some()),
            (RoleName::Negotiator, self.roles.negotiator.is_some()),
            (RoleName::Schedd, self.roles.schedd.is_some()),
            (RoleName::Startd, self.roles.startd.is_some()),
        ]
        .into_iter()
        .filter_map(|(r, here)| here.then_some(r))
        .collect();
        let (router, inboxes) = crate::roles::router(&self.roles, remote);
        let address_files = self
            .port
            .as_ref()
            .map(|p| p.address_files().to_vec())
            .unwrap_or_default();
        let master = self
            .roles_dir
            .as_ref()
            .and_then(|_| std::env::var(crate::master::MASTER_PID_ENV).ok())
            .and_then(|p| p.parse().ok());
        let shared = Arc::new(Shared {
            router: router.clone(),
            master,
            shutdown: Notify::new(),
            reload: self.reload,
            connections: Arc::new(Connections::new()),
            queries: PerUser::new(QUERIES_PER_USER),
            submissions: PerUser::new(SUBMISSIONS_READ_PER_USER),
            threads: QueryThreads::new().map_err(|source| Error::Io {
                path: socket.clone(),
                op: "starting the query threads",
                source,
            })?,
        });
        if let Some(port) = self.port {
            // condor_reconfig over the command port: done before the
            // answer, which says whether the new configuration took.
            let handle = tokio::runtime::Handle::current();
            let for_reconfig = shared.clone();
            let reconfig: crate::command_port::Reconfigure = Arc::new(move || {
                handle
                    .block_on(reconfigure_here(&for_reconfig))
                    .map(|a| a.message)
                    .map_err(|e| e.message)
            });
            port.serve(router.clone(), reconfig)
                .map_err(|source| Error::Io {
                    path: socket.clone(),
                    op: "starting the command port",
                    source,
                })?;
        }
        // Under a master, this host's other processes find these roles
        // by the address files (and the master knows they are up).
        if let (Some(dir), Some(address)) = (&self.roles_dir, &own_address) {
            let named: Vec<(RoleName, Option<&str>)> =
                local.iter().map(|&r| (r, router.name_of(r))).collect();
            crate::role_transport::write_addresses(dir, &named, address).map_err(|source| {
                Error::Io {
                    path: dir.clone(),
                    op: "writing where the roles listen",
                    source,
                }
            })?;
        }
        // Each role on its own thread; the startd's work (starters, hooks)
        // on this runtime.
        let runtime = tokio::runtime::Handle::current();
        let for_work = router.clone();
        let mut roles = self.roles;
        // A job whose schedd is another process's has its files moved by
        // its starter through that schedd (file_transfer).
        if let (Some(startd), true) = (roles.startd.as_mut(), router.has_remote()) {
            let r = router.clone();
            startd.set_shadows(Arc::new(move |schedd, claim_id, job| {
                let to = crate::roles::Dest::named(RoleName::Schedd, schedd);
                let (address, client) = r.locate(&to)?;
                Some(starter::shadow::ShadowRef(Arc::new(
                    crate::file_transfer::CedarShadow {
                        address,
                        client,
                        session: r.claim_session(claim_id),
                        claim_id: claim_id.to_string(),
                        job,
                    },
                )))
            }));
        }
        let threads = crate::roles::spawn(
            roles,
            &router,
            inboxes,
            Arc::new(move |work| {
                let _guard = runtime.enter();
                dispatch(&for_work, work);
            }),
            now,
        );

        // SIGHUP: read the configuration again (a master's reconfig).
        let hup = shared.clone();
        tokio::spawn(async move {
            use tokio::signal::unix::{signal, SignalKind};
            let Ok(mut hangups) = signal(SignalKind::hangup()) else {
                return;
            };
            while hangups.recv().await.is_some() {
                match reconfigure_here(&hup).await {
                    Ok(a) => eprintln!("ferrocondor: {}", a.message),
                    Err(e) => eprintln!("ferrocondor: reconfig: {}", e.message),
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
        tokio::pin!(stopped);
        let graceful = GracefulShutdown::new();
        let mut complained: Option<Instant> = None;
        loop {
            let Some(listener) = &listener else {
                // No tools' socket here (a role of a master's pool without
                // the schedd): only a signal ends it.
                (&mut stopped).await;
                break;
            };
            let accepted = tokio::select! {
                a = listener.accept() => a,
                () = &mut stopped => break,
            };
            match accepted {
                Ok((stream, _)) => serve_connection(&shared, &graceful, stream),
                Err(e) => {
                    // Out of descriptors (or memory) is not the end: the
                    // clients wait in the listen queue until connections
                    // close. Said once a minute, not at every try.
                    if complained.is_none_or(|t| t.elapsed() >= Duration::from_secs(60)) {
                        eprintln!("ferrocondor: accepting a connection: {e} (trying again)");
                        complained = Some(Instant::now());
                    }
                    if out_of_resources(&e) {
                        tokio::time::sleep(ACCEPT_BACKOFF).await;
                    }
                }
            }
        }
        // No new connections; the requests under way finish (for a while).
        drop(listener);
        let _ = tokio::time::timeout(SHUTDOWN_GRACE, graceful.shutdown()).await;
        // Jobs still running are killed; the queue keeps them as running,
        // so the next start evicts them to idle and they run again. The
        // accountant keeps its figures.
        if let Ok(startd) = router.startd() {
            let _ = startd
                .call(|s, _, out| {
                    s.kill_all();
                    s.withdraw(out);
                })
                .await;
        }
        if let Ok(schedd) = router.schedd() {
            let _ = schedd.call(|s, _, out| s.withdraw(out)).await;
        }
        if let Ok(negotiator) = router.negotiator() {
            let _ = negotiator.call(|n, now, out| n.shut_down(now, out)).await;
        }
        // What the roles said last (the withdrawals) leaves before the
        // process ends.
        let r = router.clone();
        let _ = tokio::task::spawn_blocking(move || r.flush(SHUTDOWN_GRACE)).await;
        router.stop();
        if let Some(dir) = &self.roles_dir {
            crate::role_transport::remove_addresses(dir, &local);
        }
        drop(shared);
        let _ = tokio::task::spawn_blocking(move || {
            for t in threads {
                let _ = t.join();
            }
        })
        .await;
        // Down, the queue closed: the tools find no address to try (`pool
        // down` waits for this).
        for f in address_files {
            let _ = std::fs::remove_file(f);
        }
        Ok(())
    }
}

/// Threads for the blocking work (starting and finishing jobs, hooks):
/// enough that a slow hook or a big output transfer does not hold up the
/// others, few enough that they do not crowd a small machine (measured
/// with `ferrocondor bench throughput`: 8 did as well as 16, and better
/// than 4 or tokio's default 512). Queries do not use them: they run on
/// threads of their own ([`QueryThreads`]), so no user's queries can keep
/// a job from starting.
const BLOCKING_THREADS: usize = 8;

/// How long a connection may take to send a request's headers, counted
/// from when it opens (or from the end of its previous answer). A tool
/// sends its headers in one write as soon as it connects, so 10 seconds
/// is generous even on a machine deep in swap; a connection that sends
/// half a request, or nothing, is closed after it.
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a request's body may take to arrive, from its headers on. The
/// largest body, a 256 MiB submission, takes well under a second over a
/// Unix socket (a tool has it ready in memory before it connects); a body
/// slower than this is cut off with 408.
const BODY_TIMEOUT: Duration = Duration::from_secs(30);

/// A client that stops reading its answer: the connection is closed when
/// this long passes with no byte of the answer taken. (A tool reads the
/// answer as fast as it comes.)
const WRITE_STALL_TIMEOUT: Duration = Duration::from_secs(30);

/// Connections one user may have open at once. A tool uses one connection
/// a request, and a person's scripts rarely run more than a few tools at
/// once; beyond this, a new connection is closed at once, so one user's
/// thousands of idle connections cost the pool 32 descriptors and keep no
/// one else out. Root and the pool's own user are not counted: they may
/// stop the pool anyway, so a limit protects nothing from them, and the
/// pool's own tools (its owner's scripts, `bench`) must never be turned
/// away by their own idle connections.
const CONNECTIONS_PER_USER: usize = 32;

/// How long one query (`q`, `history`, `status`, the selection of `rm`,
/// `hold`, `release`) may evaluate its constraint: a query over a big
/// queue or history with a plain constraint takes milliseconds, one that
/// takes 10 seconds is refused ("the constraint took too long ...") so
/// that it does not occupy the machine. Checked between one ad and the
/// next; an ad whose evaluation alone takes longer (classad's own cost
/// limit bounds that) is answered at the limit, and its thread ends when
/// the ad is done.
pub(crate) const QUERY_TIME_LIMIT: Duration = Duration::from_secs(10);

/// The most query threads at once: far more than the users of a machine
/// have queries at once ([`QUERIES_PER_USER`] each); past it, a query
/// waits for a thread (within its time limit).
const QUERY_THREADS: usize = 256;

/// Queries one user may have evaluating at once. Each evaluates on a
/// thread of its own, without the pool's lock; two let a person run `q`
/// in one terminal while another waits on a slow `history`, and keep one
/// user's expensive constraints to two threads (a third waits, then is
/// refused when its time is up).
const QUERIES_PER_USER: usize = 2;

/// Submissions one user may have on the way in at once (read and parsed):
/// only a submission may be big (up to `wire::api::MAX_SUBMIT_BYTES`), so
/// this bounds the memory one user's submissions take together.
const SUBMISSIONS_READ_PER_USER: usize = 1;

/// After an error accepting a connection for want of descriptors or
/// memory, the accept loop waits this long before trying again (instead
/// of spinning, or giving up).
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// How long the requests under way may take to finish at shutdown.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// A request or answer at least this big is followed, once its connection
/// closes, by handing the memory it took back to the system (see
/// [`set_memory_release`]).
const RELEASE_AFTER_BYTES: usize = 8 << 20;

/// How the process hands freed memory back to the system, when its
/// allocator keeps it (the `ferrocondor` binary's mimalloc does).
static MEMORY_RELEASE: OnceLock<fn()> = OnceLock::new();

/// Sets how freed memory is handed back to the system after a large
/// request: the allocator is the binary's choice, so the binary says.
/// Without it, nothing is done.
pub fn set_memory_release(release: fn()) {
    let _ = MEMORY_RELEASE.set(release);
}

/// Hands memory freed back to the system, if the binary said how. The
/// allocator keeps what a thread freed with that thread, so this is called
/// on the thread that freed a large request's memory: the runtime's, once
/// the connection is closed, and a query thread, once it is done with a
/// large submission or answer.
fn release_memory() {
    if let Some(release) = MEMORY_RELEASE.get() {
        release();
    }
}

/// An answer serialized on a query thread; its parts, freed there, handed
/// back to the system when it is large.
fn released_if_large(answer: Result<Vec<u8>, ApiError>) -> Result<Vec<u8>, ApiError> {
    if answer
        .as_ref()
        .is_ok_and(|a| a.len() >= RELEASE_AFTER_BYTES)
    {
        release_memory();
    }
    answer
}

/// Raises this process's soft limit on open files to its hard limit, so
/// that many connections at once (each a descriptor) do not run the pool
/// out of descriptors.
fn raise_open_files_limit() {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit only read and write `lim`.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 && lim.rlim_cur < lim.rlim_max {
            lim.rlim_cur = lim.rlim_max;
            if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                eprintln!(
                    "ferrocondor: cannot raise the limit on open files to {}: {}",
                    lim.rlim_max,
                    std::io::Error::last_os_error()
                );
            }
        }
    }
}

/// Errors of `accept` that pass once something is closed.
fn out_of_resources(e: &std::io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM)
    )
}

struct Shared {
    router: Router,
    /// The master that runs this daemon, if one does.
    master: Option<u32>,
    shutdown: Notify,
    reload: Option<Reload>,
    connections: Arc<Connections>,
    queries: PerUser,
    submissions: PerUser,
    threads: QueryThreads,
}

/// The connections open, by the peer's uid (`None`: the kernel did not
/// say).
struct Connections {
    open: Mutex<HashMap<Option<u32>, usize>>,
    /// Root and the pool's own user: not limited.
    exempt: [u32; 2],
}

impl Connections {
    fn new() -> Connections {
        // SAFETY: getuid cannot fail.
        let me = unsafe { libc::getuid() };
        Connections {
            open: Mutex::new(HashMap::new()),
            exempt: [0, me],
        }
    }

    /// A place for one more connection of `uid`, or none when that user
    /// has [`CONNECTIONS_PER_USER`] open already.
    fn admit(self: &Arc<Self>, uid: Option<u32>) -> Option<ConnectionSlot> {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let n = open.entry(uid).or_insert(0);
        let exempt = uid.is_some_and(|u| self.exempt.contains(&u));
        if !exempt && *n >= CONNECTIONS_PER_USER {
            return None;
        }
        *n += 1;
        Some(ConnectionSlot {
            connections: self.clone(),
            uid,
        })
    }

    #[cfg(test)]
    fn count(&self, uid: Option<u32>) -> usize {
        let open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        open.get(&uid).copied().unwrap_or(0)
    }
}

/// One open connection, counted until it is dropped.
struct ConnectionSlot {
    connections: Arc<Connections>,
    uid: Option<u32>,
}

impl Drop for ConnectionSlot {
    fn drop(&mut self) {
        let mut open = self
            .connections
            .open
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if let Some(n) = open.get_mut(&self.uid) {
            *n -= 1;
            if *n == 0 {
                open.remove(&self.uid);
            }
        }
    }
}

/// A few of something for each user (by uid): queries evaluating,
/// submissions being read.
struct PerUser {
    each: usize,
    users: Mutex<HashMap<Option<u32>, Arc<Semaphore>>>,
}

impl PerUser {
    fn new(each: usize) -> PerUser {
        PerUser {
            each,
            users: Mutex::new(HashMap::new()),
        }
    }

    /// One of `uid`'s places, waiting for one until `until`; `None` if
    /// none came free by then.
    async fn acquire(
        &self,
        uid: Option<u32>,
        until: Option<Instant>,
    ) -> Option<OwnedSemaphorePermit> {
        let semaphore = {
            let mut users = self.users.lock().unwrap_or_else(|p| p.into_inner());
            users
                .entry(uid)
                .or_insert_with(|| Arc::new(Semaphore::new(self.each)))
                .clone()
        };
        match until {
            Some(t) => tokio::time::timeout_at(t.into(), semaphore.acquire_owned())
                .await
                .ok()?
                .ok(),
            None => semaphore.acquire_owned().await.ok(),
        }
    }
}

/// Serves one connection with hyper: its user counted (and refused, by
/// closing it at once, beyond [`CONNECTIONS_PER_USER`]), its headers due
/// within [`HEADER_READ_TIMEOUT`], its answers taken within
/// [`WRITE_STALL_TIMEOUT`].
fn serve_connection(
    shared: &Arc<Shared>,
    graceful: &GracefulShutdown,
    stream: tokio::net::UnixStream,
) {
    let uid = stream.peer_cred().ok().map(|c| c.uid());
    let Some(slot) = shared.connections.admit(uid) else {
        // Dropping the stream closes it.
        return;
    };
    let peer = Peer { uid };
    let large = Arc::new(AtomicBool::new(false));
    let service = {
        let shared = shared.clone();
        let large = large.clone();
        hyper::service::service_fn(move |req| {
            let shared = shared.clone();
            let large = large.clone();
            async move { Ok::<_, Infallible>(respond(&shared, peer, req, &large).await) }
        })
    };
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT);
    let conn =
        graceful.watch(http.serve_connection(StallGuard::new(TokioIo::new(stream)), service));
    tokio::spawn(async move {
        let _ = conn.await;
        drop(slot);
        if large.load(Ordering::Relaxed) {
            release_memory();
        }
    });
}

/// A connection's stream whose writes may stall for at most
/// [`WRITE_STALL_TIMEOUT`].
struct StallGuard<T> {
    io: T,
    stalled: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl<T> StallGuard<T> {
    fn new(io: T) -> StallGuard<T> {
        StallGuard { io, stalled: None }
    }

    /// The write could not proceed: an error once it has not for too long.
    fn stall<R>(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Result<R>> {
        let timer = self
            .stalled
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(WRITE_STALL_TIMEOUT)));
        match timer.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "the client stopped reading its answer",
            ))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn progress<R>(
        &mut self,
        p: Poll<std::io::Result<R>>,
        cx: &mut Context<'_>,
    ) -> Poll<std::io::Result<R>> {
        match p {
            Poll::Pending => self.stall(cx),
            ready => {
                self.stalled = None;
                ready
            }
        }
    }
}

impl<T: hyper::rt::Read + Unpin> hyper::rt::Read for StallGuard<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_read(cx, buf)
    }
}

impl<T: hyper::rt::Write + Unpin> hyper::rt::Write for StallGuard<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        let p = Pin::new(&mut this.io).poll_write(cx, buf);
        this.progress(p, cx)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let p = Pin::new(&mut this.io).poll_flush(cx);
        this.progress(p, cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        let p = Pin::new(&mut this.io).poll_write_vectored(cx, bufs);
        this.progress(p, cx)
    }
}

/// Runs `f` on the schedd's thread; the claim core then takes in what
/// changed in the queue (a request that changes jobs needs no more).
async fn on_schedd<T: Send + 'static>(
    shared: &Arc<Shared>,
    f: impl FnOnce(&mut ScheddRole, i64) -> T + Send + 'static,
) -> Result<T, ApiError> {
    shared
        .router
        .schedd()
        .map_err(gone)?
        .call(move |s, now, out| {
            let t = f(s, now);
            s.queue_changed(out, now);
            t
        })
        .await
        .map_err(gone)
}

/// Runs `f` on the startd's thread, carrying out what it leaves.
fn on_startd<T: Send + 'static>(
    router: &Router,
    f: impl FnOnce(&mut StartdRole, i64) -> T + Send + 'static,
) -> impl Future<Output = Result<T, RoleGone>> {
    let startd = router.startd().cloned();
    async move {
        startd?
            .call(move |s, now, out: &mut Outbox| {
                let t = f(s, now);
                s.flush(out);
                t
            })
            .await
    }
}

fn gone(e: RoleGone) -> ApiError {
    match e {
        RoleGone::Stopped(_) => ApiError {
            status: 503,
            message: format!("the pool is shutting down ({e})"),
        },
        RoleGone::Elsewhere(_) => ApiError {
            status: 501,
            message: e.to_string(),
        },
    }
}

/// Starts what the startd asked for: waiting on a job's exit, starting
/// and finishing a job, running a hook; each outcome goes back to it.
fn dispatch(router: &Router, work: Vec<Work>) {
    for w in work {
        let router = router.clone();
        match w {
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
                        let slot = slot.clone();
                        let done = on_startd(&router, move |s, _| s.exited(&slot, run)).await;
                        if done.unwrap_or(true) {
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
                    let _ =
                        on_startd(&router, move |s, now| s.started(&slot, run, result, now)).await;
                });
            }
            Work::Finish { slot, run, job } => {
                tokio::spawn(async move {
                    let report = tokio::task::spawn_blocking(move || job.finish()).await;
                    match report {
                        Ok(report) => {
                            let _ = on_startd(&router, move |s, now| {
                                s.finished(&slot, run, report, now)
                            })
                            .await;
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
                        let _ = on_startd(&router, move |s, now| s.hook_done(slot, out, now)).await;
                    } else if let Err(e) = out {
                        eprintln!("ferrocondor: {slot}: hook {shown}: {e}");
                    }
                });
            }
            Work::QueryPlugins {
                settings,
                root,
                asked,
            } => {
                tokio::spawn(async move {
                    let answer = tokio::task::spawn_blocking(move || {
                        let mut notes = Vec::new();
                        let methods = crate::execute::url_methods(&settings, root, &mut notes);
                        (methods, notes)
                    })
                    .await;
                    match answer {
                        Ok((methods, notes)) => {
                            let _ = on_startd(&router, move |s, now| {
                                s.plugins_heard(asked, methods, notes, now)
                            })
                            .await;
                        }
                        Err(e) => eprintln!("ferrocondor: asking FILETRANSFER_PLUGINS failed: {e}"),
                    }
                });
            }
            Work::QueryPeers { constraint } => {
                tokio::spawn(async move {
                    let asking = router.clone();
                    let answer =
                        tokio::task::spawn_blocking(move || asking.query_startd_ads(&constraint))
                            .await
                            .unwrap_or_else(|e| Err(e.to_string()));
                    let _ = on_startd(&router, move |s, now| s.peers_heard(answer, now)).await;
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

// ---- requests ---------------------------------------------------------

type Answer = Response<Full<Bytes>>;

/// An answer of JSON bytes.
fn json_answer(status: StatusCode, body: Vec<u8>) -> Answer {
    let mut r = Response::new(Full::new(Bytes::from(body)));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r
}

fn refusal(e: ApiError) -> Answer {
    let status = StatusCode::from_u16(e.status).unwrap_or(StatusCode::BAD_REQUEST);
    let body = serde_json::to_vec(&api::ErrorBody { error: e.message }).unwrap_or_default();
    json_answer(status, body)
}

/// `a` as JSON, or the refusal.
fn answer<T: Serialize>(a: Result<T, ApiError>) -> Answer {
    match a.and_then(|a| to_json(&a)) {
        Ok(body) => json_answer(StatusCode::OK, body),
        Err(e) => refusal(e),
    }
}

/// An answer already serialized (by the thread that evaluated it).
fn serialized(a: Result<Vec<u8>, ApiError>) -> Answer {
    match a {
        Ok(body) => json_answer(StatusCode::OK, body),
        Err(e) => refusal(e),
    }
}

/// The API's endpoints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Route {
    Hello,
    NewCluster,
    Submit,
    Query,
    Act,
    History,
    Shutdown,
    Slots,
    Startd,
    Userprio,
    Reconfig,
}

impl Route {
    fn of(path: &str) -> Option<Route> {
        Some(match path {
            api::PATH_HELLO => Route::Hello,
            api::PATH_NEW_CLUSTER => Route::NewCluster,
            api::PATH_SUBMIT => Route::Submit,
            api::PATH_QUERY => Route::Query,
            api::PATH_ACT => Route::Act,
            api::PATH_HISTORY => Route::History,
            api::PATH_SHUTDOWN => Route::Shutdown,
            api::PATH_SLOTS => Route::Slots,
            api::PATH_STARTD => Route::Startd,
            api::PATH_USERPRIO => Route::Userprio,
            api::PATH_RECONFIG => Route::Reconfig,
            _ => return None,
        })
    }
}

/// One request: where it goes, who asks, its body (bounded in size and
/// time), then the endpoint. `large` is set when the request or its
/// answer was big enough that memory should be handed back afterwards.
async fn respond(
    shared: &Arc<Shared>,
    peer: Peer,
    req: Request<Incoming>,
    large: &AtomicBool,
) -> Answer {
    let path = req.uri().path().to_string();
    let Some(route) = Route::of(&path) else {
        return refusal(ApiError {
            status: 404,
            message: format!("no such request: {path} (this pool speaks API v1)"),
        });
    };
    if req.method() != Method::POST {
        return refusal(ApiError {
            status: 405,
            message: format!("{path} takes POST, not {}", req.method()),
        });
    }
    let user = match peer.user() {
        Ok(u) => u,
        Err(why) => return refusal(ApiError::forbidden(format!("who are you? {why}"))),
    };
    // Only a submission may be big, and only from someone who may submit:
    // anyone else is refused before the body is read.
    if route == Route::Submit {
        if let Err(e) = may_submit(peer, &user) {
            return refusal(e);
        }
    }
    let (body, permit) = match read_body(shared, peer, &path, req).await {
        Ok(b) => b,
        Err(e) => return refusal(e),
    };
    if body.len() >= RELEASE_AFTER_BYTES {
        large.store(true, Ordering::Relaxed);
    }
    let answer = match route {
        Route::Hello => {
            handle(shared, &user, &body, |n, user, _: api::Empty| {
                Ok(n.schedd.hello(user))
            })
            .await
        }
        Route::NewCluster => {
            handle(shared, &user, &body, move |n, user, _: api::Empty| {
                may_submit(peer, user)?;
                n.schedd.new_cluster(user)
            })
            .await
        }
        Route::Submit => submit(shared, &user, body, permit).await,
        Route::Query => query(shared, peer, &user, &body).await,
        Route::Act => act(shared, peer, &user, &body).await,
        Route::History => history(shared, peer, &user, &body).await,
        Route::Shutdown => shutdown(shared, peer, &user, &body),
        Route::Slots => slots(shared, peer, &body).await,
        Route::Startd => startd_command(shared, peer, &user, &body).await,
        Route::Userprio => userprio(shared, peer, &user, &body).await,
        Route::Reconfig => reconfig(shared, peer, &user, &body).await,
    };
    let answered = answer.body().size_hint().exact().unwrap_or(0);
    if answered >= RELEASE_AFTER_BYTES as u64 {
        large.store(true, Ordering::Relaxed);
    }
    answer
}

/// The body of `req`: refused when its length says it is over the
/// endpoint's limit (before a byte of it is read), cut off when it grows
/// over it or takes longer than [`BODY_TIMEOUT`]. A submission waits for
/// the user's place to be read ([`SUBMISSIONS_READ_PER_USER`]), which it
/// keeps (the permit returned) until its ads are parsed.
async fn read_body(
    shared: &Arc<Shared>,
    peer: Peer,
    path: &str,
    req: Request<Incoming>,
) -> Result<(Vec<u8>, Option<OwnedSemaphorePermit>), ApiError> {
    let limit = api::body_limit(path);
    let declared = req
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(too_large(path, declared));
    }
    let deadline = Instant::now() + BODY_TIMEOUT;
    let slow = || ApiError {
        status: 408,
        message: format!(
            "the request's body did not arrive within {} seconds of its headers, so the pool \
             stopped waiting for it",
            BODY_TIMEOUT.as_secs()
        ),
    };
    let permit = if path == api::PATH_SUBMIT {
        let p = shared.submissions.acquire(peer.uid, Some(deadline)).await;
        Some(p.ok_or_else(slow)?)
    } else {
        None
    };
    let mut body = Limited::new(req.into_body(), limit);
    // The declared length is at most the limit, and only a submission
    // (from someone who may submit) may declare much.
    let mut bytes = Vec::with_capacity(declared.unwrap_or(0) as usize);
    loop {
        let frame = tokio::time::timeout_at(deadline.into(), body.frame())
            .await
            .map_err(|_| slow())?;
        match frame {
            None => break,
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    bytes.extend_from_slice(&data);
                }
            }
            Some(Err(e)) if e.is::<LengthLimitError>() => return Err(too_large(path, None)),
            Some(Err(e)) => return Err(ApiError::bad_request(format!("reading the request: {e}"))),
        }
    }
    Ok((bytes, permit))
}

fn too_large(path: &str, size: Option<u64>) -> ApiError {
    ApiError {
        status: 413,
        message: api::too_large(path, size),
    }
}

/// A request's JSON (an empty body is `{}`).
fn decode<Req: DeserializeOwned>(body: &[u8]) -> Result<Req, ApiError> {
    let body = if body.iter().all(u8::is_ascii_whitespace) {
        &b"{}"[..]
    } else {
        body
    };
    serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("malformed request: {e}")))
}

/// Reads the request and runs `f` on the schedd's thread.
async fn handle<Req, Ans>(
    shared: &Arc<Shared>,
    user: &str,
    body: &[u8],
    f: impl FnOnce(&mut ScheddRole, &str, Req) -> Result<Ans, ApiError> + Send + 'static,
) -> Answer
where
    Req: DeserializeOwned + Send + 'static,
    Ans: Serialize + Send + 'static,
{
    let user = user.to_string();
    match decode(body) {
        Ok(req) => answer(
            on_schedd(shared, move |s, _| f(s, &user, req))
                .await
                .and_then(|a| a),
        ),
        Err(e) => refusal(e),
    }
}

/// Runs `f` on one of the query threads ([`QueryThreads`]), away from the
/// runtime's thread and without the pool's lock, holding `permit` (one of
/// the user's places) until it is done. Its answer is awaited until
/// `budget` runs out (and a moment more, for `f`'s own refusal to
/// arrive); after that the request is refused, and `f` ends on its own
/// when the ad it is evaluating is done (its permit with it).
async fn off_thread<T: Send + 'static>(
    threads: &QueryThreads,
    permit: Option<OwnedSemaphorePermit>,
    budget: Budget,
    f: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    let task = threads.handle().spawn_blocking(move || {
        let out = f();
        drop(permit);
        out
    });
    let out = match budget.until() {
        Some(t) => tokio::time::timeout_at((t + Duration::from_millis(250)).into(), task)
            .await
            .map_err(|_| budget.exhausted(None, None))?,
        None => task.await,
    };
    out.unwrap_or_else(|e| {
        Err(ApiError {
            status: 500,
            message: format!("the request failed: {e}"),
        })
    })
}

/// The threads queries are evaluated on: a blocking pool of their own (a
/// runtime that runs nothing else), apart from [`BLOCKING_THREADS`] so
/// that queries never keep a job from starting, and reused from one query
/// to the next (a thread made for each query cost about 80 µs a query).
/// How many run at once is bounded by [`QUERIES_PER_USER`] for each user.
struct QueryThreads {
    runtime: Option<tokio::runtime::Runtime>,
}

impl QueryThreads {
    fn new() -> std::io::Result<QueryThreads> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .thread_name("ferrocondor-query")
            .max_blocking_threads(QUERY_THREADS)
            .thread_keep_alive(Duration::from_secs(60))
            .build()?;
        Ok(QueryThreads {
            runtime: Some(runtime),
        })
    }

    fn handle(&self) -> &tokio::runtime::Handle {
        match &self.runtime {
            Some(r) => r.handle(),
            None => unreachable!("the query threads are there until dropped"),
        }
    }
}

impl Drop for QueryThreads {
    /// A query still evaluating one ad is not waited for.
    fn drop(&mut self) {
        if let Some(r) = self.runtime.take() {
            r.shutdown_background();
        }
    }
}

/// A query's request decoded, its budget, and one of the user's
/// [`QUERIES_PER_USER`] places, waited for within the budget.
async fn query_request<R: DeserializeOwned>(
    shared: &Arc<Shared>,
    peer: Peer,
    body: &[u8],
) -> Result<(R, Budget, OwnedSemaphorePermit), ApiError> {
    let req: R = decode(body)?;
    let budget = Budget::new(QUERY_TIME_LIMIT);
    match shared.queries.acquire(peer.uid, budget.until()).await {
        Some(p) => Ok((req, budget, p)),
        None => Err(ApiError {
            status: 429,
            message: format!(
                "you have {QUERIES_PER_USER} queries evaluating already (the most one user may \
                 have at once), and none finished within {} seconds; try again when they have",
                QUERY_TIME_LIMIT.as_secs()
            ),
        }),
    }
}

async fn submit(
    shared: &Arc<Shared>,
    user: &str,
    body: Vec<u8>,
    permit: Option<OwnedSemaphorePermit>,
) -> Answer {
    // Reading a big cluster's ads takes a while: not on the runtime's
    // thread, not under the lock.
    let parsed = off_thread(&shared.threads, permit, Budget::unlimited(), move || {
        let large = body.len() >= RELEASE_AFTER_BYTES;
        let parsed = decode(&body).and_then(ParsedSubmission::parse);
        drop(body);
        if large {
            release_memory();
        }
        parsed
    })
    .await;
    let user = user.to_string();
    match parsed {
        Ok(p) => answer(
            on_schedd(shared, move |n, now| n.schedd.submit_parsed(&user, p, now))
                .await
                .and_then(|a| a),
        ),
        Err(e) => refusal(e),
    }
}

/// `q`: the queue's snapshot taken under the lock, evaluated off it.
async fn query(shared: &Arc<Shared>, peer: Peer, user: &str, body: &[u8]) -> Answer {
    let (req, budget, permit) = match query_request::<api::QueryRequest>(shared, peer, body).await {
        Ok(r) => r,
        Err(e) => return refusal(e),
    };
    let user = user.to_string();
    let q = match on_schedd(shared, move |s, now| {
        s.schedd.query_snapshot(&user, req, now)
    })
    .await
    {
        Ok(q) => q,
        Err(e) => return refusal(e),
    };
    if q.is_cheap() {
        return answer(q.run(&budget));
    }
    serialized(
        off_thread(&shared.threads, Some(permit), budget, move || {
            released_if_large(to_json(&q.run(&budget)?))
        })
        .await,
    )
}

/// `history`: read page by page, each page under the lock, evaluated off
/// it.
async fn history(shared: &Arc<Shared>, peer: Peer, user: &str, body: &[u8]) -> Answer {
    let (req, budget, permit) = match query_request::<api::HistoryRequest>(shared, peer, body).await
    {
        Ok(r) => r,
        Err(e) => return refusal(e),
    };
    let user = user.to_string();
    let mut scan =
        match on_schedd(shared, move |s, now| s.schedd.history_scan(&user, req, now)).await {
            Ok(scan) => scan,
            Err(e) => return refusal(e),
        };
    let schedd = match shared.router.schedd() {
        Ok(s) => s.clone(),
        Err(e) => return refusal(gone(e)),
    };
    serialized(
        off_thread(&shared.threads, Some(permit), budget, move || {
            while scan.wants_more() {
                // Each page read from the store on the schedd's thread.
                let (back, rows) = schedd
                    .call_blocking(move |s, _, _| {
                        let rows = s.schedd.history_page(&scan);
                        (scan, rows)
                    })
                    .map_err(gone)?;
                scan = back;
                scan.take(rows?, &budget)?;
            }
            released_if_large(to_json(&scan.answer()))
        })
        .await,
    )
}

/// `rm`, `hold`, `release`: the jobs selected on a snapshot off the lock,
/// then acted on under it.
async fn act(shared: &Arc<Shared>, peer: Peer, user: &str, body: &[u8]) -> Answer {
    let (req, budget, permit) = match query_request::<api::ActRequest>(shared, peer, body).await {
        Ok(r) => r,
        Err(e) => return refusal(e),
    };
    let (who, request) = (user.to_string(), req.clone());
    let selection = match on_schedd(shared, move |s, now| {
        s.schedd.act_snapshot(&who, &request, now)
    })
    .await
    {
        Ok(s) => s,
        Err(e) => return refusal(e),
    };
    let targets = off_thread(&shared.threads, Some(permit), budget, move || {
        selection.select(&budget)
    })
    .await;
    let user = user.to_string();
    match targets {
        Ok(t) => answer(
            on_schedd(shared, move |n, now| n.act_on(&user, &req, t, now))
                .await
                .and_then(|a| a),
        ),
        Err(e) => refusal(e),
    }
}

/// `status`: the collector's ads published and copied under the lock,
/// evaluated off it.
async fn slots(shared: &Arc<Shared>, peer: Peer, body: &[u8]) -> Answer {
    let (req, budget, permit) = match query_request::<api::SlotsRequest>(shared, peer, body).await {
        Ok(r) => r,
        Err(e) => return refusal(e),
    };
    // Up to date, as the startd and the schedd update the collector
    // before it answers (each call returns once its role's messages are
    // in the collector's inbox, ahead of the query).
    let router = &shared.router;
    let q = if router.collector().is_ok() {
        let fresh = async {
            on_startd(router, |s, now| s.publish_slots(now)).await?;
            router.schedd()?.call(|s, _, out| s.publish(out)).await?;
            router
                .collector()?
                .call(move |c, now, _| SlotsQuery::new(req, now, |kind| c.ads(kind, now)))
                .await
        };
        match fresh.await {
            Ok(q) => q,
            Err(e) => return refusal(gone(e)),
        }
    } else {
        // The collector runs in a process of its own: its ads as they
        // are (the startd updates them every poll).
        let ad_type = req.ad_type.clone();
        let texts = match ask(shared, RoleName::Collector, AdminRequest::Ads { ad_type }).await {
            Ok(t) => t,
            Err(e) => return refusal(e),
        };
        let ads = match serde_json::from_str::<Vec<String>>(&texts).map(|ts| {
            ts.iter()
                .filter_map(|t| classad::ClassAd::parse(t).ok())
                .collect::<Vec<_>>()
        }) {
            Ok(a) => a,
            Err(e) => {
                return refusal(ApiError {
                    status: 502,
                    message: format!("the collector's answer did not read: {e}"),
                })
            }
        };
        SlotsQuery::new(req, now(), |_| ads)
    };
    serialized(
        off_thread(&shared.threads, Some(permit), budget, move || {
            released_if_large(to_json(&q.run(&budget)?))
        })
        .await,
    )
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

/// Any local user may stop a personal pool only if they own it: the
/// daemon's own user, or a queue super user.
fn shutdown(shared: &Arc<Shared>, peer: Peer, user: &str, body: &[u8]) -> Answer {
    let response = match decode::<api::Empty>(body) {
        Err(e) => refusal(e),
        Ok(_) => {
            // SAFETY: getuid cannot fail.
            let me = unsafe { libc::getuid() };
            if peer.uid == Some(me) || peer.uid == Some(0) {
                answer(Ok(api::Empty {}))
            } else {
                refusal(ApiError::forbidden(format!(
                    "permission denied: {user} may not shut down a pool run by {}",
                    crate::identity::user_name(me).unwrap_or_else(|| format!("uid {me}"))
                )))
            }
        }
    };
    if response.status().is_success() {
        // Under a master, the whole pool goes down: the master stops
        // every daemon (this one too).
        if let Some(pid) = shared.master {
            // SAFETY: kill with a pid and a valid signal.
            unsafe {
                libc::kill(pid as libc::pid_t, libc::SIGTERM);
            }
        }
        shared.shutdown.notify_one();
    }
    response
}

/// Whether the peer may administer the pool: the pool's own user, root,
/// or a queue super user.
async fn admin(shared: &Arc<Shared>, peer: Peer, user: &str) -> Result<(), ApiError> {
    // SAFETY: getuid cannot fail.
    let me = unsafe { libc::getuid() };
    if peer.uid == Some(me) || peer.uid == Some(0) {
        return Ok(());
    }
    let who = user.to_string();
    if on_schedd(shared, move |s, _| s.schedd.is_super_user(&who)).await? {
        return Ok(());
    }
    Err(ApiError::forbidden(format!(
        "permission denied: {user} may not administer a pool run by {}",
        crate::identity::user_name(me).unwrap_or_else(|| format!("uid {me}"))
    )))
}

/// `condor_vacate`, `condor_drain`: the startd carries them out.
async fn startd_command(shared: &Arc<Shared>, peer: Peer, user: &str, body: &[u8]) -> Answer {
    let req: api::StartdCommand = match decode(body) {
        Ok(r) => r,
        Err(e) => return refusal(e),
    };
    if let Err(e) = admin(shared, peer, user).await {
        return refusal(e);
    }
    if shared.router.startd().is_err() {
        let asked = ask(
            shared,
            RoleName::Startd,
            AdminRequest::Startd { command: req },
        )
        .await;
        return answer(asked.and_then(|json| from_role::<api::StartdAnswer>(&json)));
    }
    let done = on_startd(&shared.router, move |s, now| s.startd_command(req, now)).await;
    answer(done.map_err(gone).and_then(|a| a))
}

/// How long a tool's request waits for a role in another process.
const REMOTE_ANSWER_TIMEOUT: Duration = Duration::from_secs(10);

/// Asks the role `to`, in another process, and waits for its answer.
async fn ask(
    shared: &Arc<Shared>,
    to: RoleName,
    request: AdminRequest,
) -> Result<String, ApiError> {
    let answers = shared.router.answers.clone();
    let (id, rx) = answers.wait();
    // Sending writes to another process's socket, which may block: not on
    // the thread that serves every request.
    let router = shared.router.clone();
    let _ = tokio::task::spawn_blocking(move || {
        router.deliver(RoleName::Schedd, to, Message::Admin { id, request })
    })
    .await;
    match tokio::time::timeout(REMOTE_ANSWER_TIMEOUT, rx).await {
        Ok(Ok(Ok(json))) => Ok(json),
        Ok(Ok(Err((status, message)))) => Err(ApiError { status, message }),
        _ => {
            answers.forget(id);
            Err(ApiError {
                status: 504,
                message: format!(
                    "the {} did not answer within {} seconds (is it running?)",
                    to.daemon_name().to_lowercase(),
                    REMOTE_ANSWER_TIMEOUT.as_secs()
                ),
            })
        }
    }
}

/// A role's JSON answer read back.
fn from_role<T: DeserializeOwned>(json: &str) -> Result<T, ApiError> {
    serde_json::from_str(json).map_err(|e| ApiError {
        status: 502,
        message: format!("a role's answer did not read: {e}"),
    })
}

/// `condor_userprio`: the negotiator's accountant (changed only by an
/// administrator).
async fn userprio(shared: &Arc<Shared>, peer: Peer, user: &str, body: &[u8]) -> Answer {
    let req: api::UserprioRequest = match decode(body) {
        Ok(r) => r,
        Err(e) => return refusal(e),
    };
    let changes =
        req.set_factor.is_some() || req.set_priority.is_some() || req.reset_usage.is_some();
    if changes {
        if let Err(e) = admin(shared, peer, user).await {
            return refusal(e);
        }
    }
    let Ok(negotiator) = shared.router.negotiator() else {
        let asked = ask(
            shared,
            RoleName::Negotiator,
            AdminRequest::Userprio { request: req },
        )
        .await;
        return answer(asked.and_then(|json| from_role::<api::UserprioAnswer>(&json)));
    };
    let rows = negotiator
        .call(move |n, now, out| n.userprio(&req, now, out))
        .await;
    answer(rows.map_err(gone))
}

/// `condor_reconfig`: the new configuration for every role, or (on any
/// error) none of it. Claims, running jobs, the queue and the accountant's
/// figures stay; the timers keep their intervals.
async fn reconfig(shared: &Arc<Shared>, peer: Peer, user: &str, body: &[u8]) -> Answer {
    if let Err(e) = decode::<api::Empty>(body) {
        return refusal(e);
    }
    if let Err(e) = admin(shared, peer, user).await {
        return refusal(e);
    }
    // Under a master, every daemon reads its own configuration again, as
    // condor_reconfig asks condor_master to tell each daemon (SIGHUP).
    if let Some(pid) = shared.master {
        // SAFETY: kill with a pid and a valid signal.
        let sent = unsafe { libc::kill(pid as libc::pid_t, libc::SIGHUP) } == 0;
        return if sent {
            answer(Ok(api::ReconfigAnswer {
                message: "the master asked every daemon to read its configuration again \
                          (each keeps its configuration if the new one is broken, and says \
                          so in its log)"
                    .into(),
            }))
        } else {
            refusal(ApiError {
                status: 502,
                message: format!("the master (pid {pid}) could not be told"),
            })
        };
    }
    answer(reconfigure_here(shared).await)
}

/// `condor_reconfig` for the roles of this process: the new configuration
/// for every one of them, or (on any error) none of it. Claims, running
/// jobs, the queue and the accountant's figures stay; the timers keep
/// their intervals.
async fn reconfigure_here(shared: &Arc<Shared>) -> Result<api::ReconfigAnswer, ApiError> {
    let Some(reload) = shared.reload.as_ref() else {
        return Err(ApiError::bad_request(
            "this pool was started without a way to read its configuration again",
        ));
    };
    let new = reload()
        .map_err(|e| ApiError::bad_request(format!("the configuration was not changed: {e}")))?;
    // Everything that can be refused is checked before any role changes:
    // the central manager's part here, then the startd's (it reads every
    // slot's policy before it changes any).
    let cm = new.central_manager()?;
    let view = match new.collector_view() {
        Ok(v) => v,
        Err(e) => {
            return Err(ApiError::bad_request(format!(
                "the configuration was not changed: {e}"
            )))
        }
    };
    let Reloaded {
        pool,
        startd,
        negotiator: _,
        collector: _,
    } = new;
    let r = &shared.router;
    if r.startd().is_ok() {
        match on_startd(r, move |s, _| s.reconfigure(startd)).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                return Err(ApiError::bad_request(format!(
                    "the configuration was not changed: startd: {e}"
                )))
            }
            Err(e) => return Err(gone(e)),
        }
    }
    // CONDOR_VIEW_HOST read again: the collector forwards where it now says.
    if let Ok(collector) = r.collector() {
        let _ = collector
            .call(move |c, _, _| c.forward_again(view.0, view.1))
            .await;
    }
    let limits = cm.limits.clone();
    if let Ok(negotiator) = r.negotiator() {
        let _ = negotiator
            .call(move |n, _, _| n.reconfigure(cm.policy, cm.accountant, cm.limits))
            .await;
    }
    if let Ok(schedd) = r.schedd() {
        let _ = schedd
            .call(move |s, _, _| {
                s.schedd.set_config(pool);
                s.set_limits(limits);
            })
            .await;
    }
    Ok(api::ReconfigAnswer {
        message: "the pool read its configuration again".into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_user_gets_32_connections_and_the_next_is_refused_at_once() {
        let c = Arc::new(Connections::new());
        // A uid that is neither root nor the pool's own user.
        // SAFETY: getuid cannot fail.
        let me = unsafe { libc::getuid() };
        let other = if me == 4242 { 4243 } else { 4242 };
        let mut held: Vec<ConnectionSlot> = (0..CONNECTIONS_PER_USER)
            .map(|_| c.admit(Some(other)).expect("within the limit"))
            .collect();
        assert!(c.admit(Some(other)).is_none(), "the 33rd is refused");
        assert_eq!(c.count(Some(other)), CONNECTIONS_PER_USER);
        // Another user is not held up by the first one's connections.
        assert!(c.admit(Some(other + 100)).is_some());
        // Closing one makes room for one.
        held.pop();
        assert!(c.admit(Some(other)).is_some());
        drop(held);
        assert_eq!(c.count(Some(other)), 0);
        // A peer the kernel did not name is limited like a user.
        let anon: Vec<_> = (0..CONNECTIONS_PER_USER)
            .filter_map(|_| c.admit(None))
            .collect();
        assert_eq!(anon.len(), CONNECTIONS_PER_USER);
        assert!(c.admit(None).is_none());
    }

    #[test]
    fn root_and_the_pools_own_user_are_not_limited() {
        let c = Arc::new(Connections::new());
        // SAFETY: getuid cannot fail.
        let me = unsafe { libc::getuid() };
        for uid in [0, me] {
            let held: Vec<_> = (0..3 * CONNECTIONS_PER_USER)
                .map(|_| c.admit(Some(uid)).expect("not limited"))
                .collect();
            assert_eq!(c.count(Some(uid)), held.len());
        }
    }

    #[test]
    fn a_user_has_two_queries_at_once_and_a_third_waits_then_gives_up() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let q = PerUser::new(QUERIES_PER_USER);
            let soon = || Some(Instant::now() + Duration::from_millis(50));
            let a = q.acquire(Some(1000), soon()).await.expect("first");
            let _b = q.acquire(Some(1000), soon()).await.expect("second");
            assert!(q.acquire(Some(1000), soon()).await.is_none());
            // Someone else's queries are theirs.
            assert!(q.acquire(Some(1001), soon()).await.is_some());
            drop(a);
            assert!(q.acquire(Some(1000), soon()).await.is_some());
        });
    }

    #[test]
    fn a_query_over_its_budget_is_answered_at_the_limit_and_keeps_its_place() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let places = PerUser::new(1);
            let permit = places.acquire(Some(7), None).await.unwrap();
            let budget = Budget::new(Duration::from_millis(100));
            let (tx, rx) = std::sync::mpsc::channel::<()>();
            let t0 = Instant::now();
            // An evaluation that does not look at its budget (one ad's
            // evaluation that takes long).
            let threads = QueryThreads::new().unwrap();
            let out = off_thread(&threads, Some(permit), budget, move || {
                let _ = rx.recv();
                Ok(())
            })
            .await;
            let e = out.unwrap_err();
            assert!(
                e.message
                    .contains("the constraint took too long to evaluate")
                    && e.message.contains("it was still evaluating one ad"),
                "{e:?}"
            );
            assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
            // The thread still runs, so the user's place is still taken.
            let soon = Some(Instant::now() + Duration::from_millis(50));
            assert!(places.acquire(Some(7), soon).await.is_none());
            tx.send(()).unwrap();
            let later = Some(Instant::now() + Duration::from_secs(5));
            assert!(places.acquire(Some(7), later).await.is_some());
        });
    }

    #[test]
    fn the_soft_limit_on_open_files_is_raised_to_the_hard_one() {
        raise_open_files_limit();
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit only writes `lim`.
        assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) }, 0);
        assert_eq!(lim.rlim_cur, lim.rlim_max);
    }

    #[test]
    fn running_out_of_descriptors_is_waited_out() {
        for errno in [libc::EMFILE, libc::ENFILE, libc::ENOBUFS, libc::ENOMEM] {
            assert!(out_of_resources(&std::io::Error::from_raw_os_error(errno)));
        }
        assert!(!out_of_resources(&std::io::Error::from_raw_os_error(
            libc::ECONNABORTED
        )));
    }
}
