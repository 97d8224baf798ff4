//! The daemon's command port: HTCondor's wire protocol (CEDAR) on TCP, so
//! that HTCondor's own clients (the `htcondor` Python bindings, the
//! `htcondor` tool) and other daemons talk to the roles this process runs.
//!
//! One listener per process, for every role the process runs (the command
//! numbers of the collector's, the schedd's, the negotiator's and the
//! startd's commands do not overlap); each role's ad names it as its
//! `MyAddress`. A connection gets a thread of its own for its handshake
//! ([`cedar::server::accept`]) and its command; each request reaches a role
//! as a call on the role's thread, as the tools' requests do.
//!
//! Served here: the collector's queries, updates and invalidations; the
//! schedd's job queries, ACT_ON_JOBS, history, RESCHEDULE and the job-queue
//! protocol (QMGMT) that `Schedd.submit` and `Schedd.edit` speak.
//!
//! **Never trusted from a client:** who it is (the Owner of a job is the
//! authenticated user), which jobs it may touch (the schedd's own checks),
//! how much it sends (every message has the socket's bound, every
//! connection a deadline on each read).

use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

pub(crate) use cedar::ad::{flag_attr as bool_attr, int_attr as int, string_attr as text};
use cedar::commands as cmd;
use cedar::policy::{Policy, Requirement};
use cedar::server::{Accepted, Daemon, Level, Peer, Sessions};
use cedar::{get_ad, put_ad, PutOptions, Sinful, Sock, SockError};
use classad::{ClassAd, Value};
use negotiator::collector::AdType;
use schedd::JobStatus;
use wire::api::{
    ActRequest, Action, DrainHow, HistoryRequest, JobSpec, QueryRequest, Selection, StartdCommand,
    Totals, UserprioRequest,
};

use crate::roles::{RoleName, Router};
use crate::schedd_role::ScheddRole;
use crate::schedd_service::{ApiError, Budget};
use crate::server::QUERY_TIME_LIMIT;

pub use cedar::{CONDOR_PLATFORM, CONDOR_VERSION};

/// The most connections served at once; past it a new one is closed at
/// once (its client retries), so a flood cannot take every thread.
const MAX_CONNECTIONS: usize = 256;

/// The most from one peer: one host, or one local user (every local
/// user's tools come from the loopback address, so on this host each user
/// counts apart): no one can take every slot.
const MAX_CONNECTIONS_PER_PEER: usize = 64;

/// A connection's handshake: its messages are small (a policy ad, a
/// token), and each must come within this (twice it for a whole message).
const HANDSHAKE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);
const HANDSHAKE_MAX_MESSAGE: usize = 64 << 10;

/// After the handshake: a request's message (an ad, a queue-management
/// call; a job's attributes travel one a message) is far smaller.
const REQUEST_MAX_MESSAGE: usize = 1 << 20;

/// What the command port needs from the configuration.
#[derive(Clone, Debug)]
pub struct PortConfig {
    /// Where to listen (`COLLECTOR_HOST`'s port where the collector runs
    /// here; else any free port on the host's address).
    pub listen: SocketAddr,
    /// Files that get this port's address as HTCondor writes them
    /// (COLLECTOR_ADDRESS_FILE, SCHEDD_ADDRESS_FILE).
    pub address_files: Vec<PathBuf>,
    pub hostname: String,
    pub auth: cedar::auth::Settings,
    /// Authentication methods in order, per level
    /// (SEC_<LEVEL>_AUTHENTICATION_METHODS, else
    /// SEC_DEFAULT_AUTHENTICATION_METHODS, else FS and TOKEN).
    pub methods: Vec<(Level, Vec<String>)>,
    /// SEC_<LEVEL>_AUTHENTICATION|ENCRYPTION|INTEGRITY, resolved.
    pub levels: Vec<(Level, [Requirement; 3])>,
    /// The users allowed the daemon-to-daemon and administrative levels
    /// when no ALLOW list says otherwise (the pool's own user and root),
    /// `user` names without domain.
    pub operators: Vec<String>,
    /// ALLOW_<LEVEL> and DENY_<LEVEL>.
    pub authorization: cedar::authz::Authorization,
    /// MAX_JOBS_PER_SUBMISSION: the most jobs one QMGMT submission makes.
    pub max_jobs_per_submission: usize,
    /// Where the roles of other processes are, and how to reach them.
    pub peers: crate::role_transport::Peers,
}

fn requirement(c: &config::Config, name: &str) -> Result<Option<Requirement>, String> {
    match c.get(name).map_err(|e| e.to_string())? {
        None => Ok(None),
        Some(v) if v.trim().is_empty() => Ok(None),
        Some(v) => Requirement::parse(&v).map(Some).ok_or_else(|| {
            format!("{name} = {v}: expected REQUIRED, PREFERRED, OPTIONAL or NEVER")
        }),
    }
}

impl PortConfig {
    /// Reads the port's settings. `collector_here`: the collector runs in
    /// this process, so the port is COLLECTOR_HOST's.
    pub fn from_config(
        c: &config::Config,
        state_dir: &Path,
        collector_here: bool,
        schedd_here: bool,
    ) -> Result<PortConfig, String> {
        let get = |n: &str| c.get(n).ok().flatten().filter(|v| !v.trim().is_empty());
        let hostname = get("FULL_HOSTNAME").unwrap_or_else(|| "localhost".into());
        let collector = get("COLLECTOR_HOST").unwrap_or_else(|| "127.0.0.1".into());
        // A COLLECTOR_HOST that names no port gets a free one (its address
        // file says which), so pools on one machine do not collide; one
        // that names a port (9618 for a pool of many hosts) gets it.
        let collector = Sinful::parse(&collector, 0).map_err(|e| format!("COLLECTOR_HOST: {e}"))?;
        let ip = listen_ip(
            &collector,
            get("NETWORK_INTERFACE").and_then(|i| i.parse().ok()),
            collector_here,
        );
        let port = if collector_here { collector.port } else { 0 };
        let mut address_files = Vec::new();
        if collector_here {
            address_files.push(
                get("COLLECTOR_ADDRESS_FILE")
                    .map(PathBuf::from)
                    .unwrap_or_else(|| state_dir.join(".collector_address")),
            );
        }
        if schedd_here {
            address_files.push(
                get("SCHEDD_ADDRESS_FILE")
                    .map(PathBuf::from)
                    .unwrap_or_else(|| state_dir.join(".schedd_address")),
            );
        }
        let default_methods =
            get("SEC_DEFAULT_AUTHENTICATION_METHODS").unwrap_or_else(|| "FS,TOKEN".into());
        let methods_of = |list: &str| -> Vec<String> {
            // Methods this daemon cannot carry out (KERBEROS, SSL, ...) are
            // left out: a client is never offered what would fail.
            list.split([',', ' '])
                .filter(|m| !m.is_empty())
                .map(cedar::policy::canonical_method)
                .filter(|m| cedar::auth::Method::from_name(m).is_some())
                .collect()
        };
        let methods = Level::CONFIGURED
            .iter()
            .map(|&l| {
                let own = get(&format!("SEC_{}_AUTHENTICATION_METHODS", l.name()));
                (l, methods_of(own.as_deref().unwrap_or(&default_methods)))
            })
            .collect();
        // Secure by default, as HTCondor 9+: reads need nothing, anything
        // that changes the pool needs an authenticated user; encryption
        // and integrity whenever a client asks (every session is keyed).
        let defaults = |level: Level| -> [Requirement; 3] {
            let auth = if level == Level::Read {
                Requirement::Optional
            } else {
                Requirement::Required
            };
            [auth, Requirement::Optional, Requirement::Optional]
        };
        let mut levels = Vec::new();
        for &level in Level::CONFIGURED {
            let mut r = defaults(level);
            for (i, what) in ["AUTHENTICATION", "ENCRYPTION", "INTEGRITY"]
                .iter()
                .enumerate()
            {
                let own = requirement(c, &format!("SEC_{}_{what}", level.name()))?;
                let default = requirement(c, &format!("SEC_DEFAULT_{what}"))?;
                if let Some(v) = own.or(default) {
                    r[i] = v;
                }
            }
            // Reads stay open unless SEC_READ_AUTHENTICATION says otherwise
            // (HTCondor's templates set it OPTIONAL beside a REQUIRED default).
            levels.push((level, r));
        }
        // SAFETY: getuid cannot fail.
        let me = unsafe { libc::getuid() };
        let mut operators = vec!["root".to_string()];
        if let Some(name) = crate::identity::user_name(me) {
            if !operators.contains(&name) {
                operators.push(name);
            }
        }
        let subsystem = if collector_here {
            "COLLECTOR"
        } else if schedd_here {
            "SCHEDD"
        } else {
            "STARTD"
        };
        let authorization = cedar::authz::Authorization::from_lookup(&get, subsystem);
        let max_jobs_per_submission = c
            .integer_or("MAX_JOBS_PER_SUBMISSION", 20_000)
            .map_err(|e| e.to_string())?
            .clamp(1, 1_000_000) as usize;
        let peers = crate::role_transport::Peers {
            client: cedar::client::ClientOptions::from_lookup(&get, &hostname),
            collector_host: get("COLLECTOR_HOST"),
            collector_file: get("COLLECTOR_ADDRESS_FILE")
                .map(PathBuf::from)
                .unwrap_or_else(|| state_dir.join(".collector_address")),
            roles_dir: state_dir.join("roles"),
        };
        Ok(PortConfig {
            max_jobs_per_submission,
            peers,
            authorization,
            listen: SocketAddr::new(ip, port),
            address_files,
            auth: cedar::auth::Settings::from_lookup(&get, &hostname).with_state_dir(state_dir),
            hostname,
            methods,
            levels,
            operators,
        })
    }
}

/// The address this process's command port listens on, and so the one
/// its ads give as `MyAddress`: what other hosts must be able to reach.
///
/// - The collector's process: COLLECTOR_HOST's address (a name resolved),
///   where the pool's hosts look for it; else NETWORK_INTERFACE.
/// - Another process: NETWORK_INTERFACE; else this host's address on the
///   way to the collector (the kernel's choice of source address for it;
///   no packet is sent), so a daemon on another host than the central
///   manager is reachable from there.
///
/// Else loopback: a personal pool (no COLLECTOR_HOST, or one on loopback)
/// stays on loopback, reachable from this host only.
fn listen_ip(collector: &Sinful, interface: Option<IpAddr>, collector_here: bool) -> IpAddr {
    let loopback = || IpAddr::from(std::net::Ipv4Addr::LOCALHOST);
    let collector_ip = || {
        collector.socket_addr().map(|a| a.ip()).or_else(|| {
            use std::net::ToSocketAddrs;
            let all: Vec<SocketAddr> = (collector.host.as_str(), collector.port)
                .to_socket_addrs()
                .ok()?
                .collect();
            all.iter()
                .find(|a| a.is_ipv4())
                .or(all.first())
                .map(|a| a.ip())
        })
    };
    if collector_here {
        return collector_ip().or(interface).unwrap_or_else(loopback);
    }
    interface
        .or_else(|| {
            let to = collector_ip()?;
            let any: IpAddr = if to.is_ipv4() {
                std::net::Ipv4Addr::UNSPECIFIED.into()
            } else {
                std::net::Ipv6Addr::UNSPECIFIED.into()
            };
            let probe = std::net::UdpSocket::bind(SocketAddr::new(any, 0)).ok()?;
            // A UDP connect only picks the route and the source address.
            probe
                .connect(SocketAddr::new(to, collector.port.max(1)))
                .ok()?;
            Some(probe.local_addr().ok()?.ip())
        })
        .unwrap_or_else(loopback)
}

/// A bound command port.
pub struct CommandPort {
    listener: TcpListener,
    sinful: Sinful,
    config: PortConfig,
    /// The sessions clients resume here (the handshake's, and the ones
    /// the central manager brokers: `claim_sessions`).
    sessions: Arc<Sessions>,
}

impl CommandPort {
    pub fn bind(config: PortConfig) -> std::io::Result<CommandPort> {
        let listener = TcpListener::bind(config.listen)?;
        let local = listener.local_addr()?;
        // TCP only: this pool takes no UDP commands, and `noUDP` tells
        // clients to send RESCHEDULE and updates by TCP.
        let sinful = Sinful::new(local).with_param("noUDP", None);
        let sessions = Arc::new(Sessions::new(&config.hostname));
        Ok(CommandPort {
            listener,
            sinful,
            config,
            sessions,
        })
    }

    /// The sessions clients resume here, for registering brokered ones.
    pub fn sessions(&self) -> Arc<Sessions> {
        self.sessions.clone()
    }

    /// Where the other processes' roles are.
    pub fn peers(&self) -> &crate::role_transport::Peers {
        &self.config.peers
    }

    /// The address clients use, `<ip:port?noUDP>`.
    pub fn address(&self) -> String {
        self.sinful.to_string()
    }

    /// Writes the address files (as HTCondor's daemons do: the address,
    /// then the version and platform lines; written aside, then renamed).
    pub fn write_address_files(&self) -> std::io::Result<()> {
        let text = format!("{}\n{CONDOR_VERSION}\n{CONDOR_PLATFORM}\n", self.address());
        for f in &self.config.address_files {
            let tmp = f.with_extension("new");
            std::fs::write(&tmp, &text)?;
            std::fs::rename(&tmp, f)?;
        }
        Ok(())
    }

    /// The address files written (removed when the pool stops).
    pub fn address_files(&self) -> &[PathBuf] {
        &self.config.address_files
    }

    /// Serves until the process ends, on a thread of its own.
    pub fn serve(
        self,
        router: Router,
        reconfig: Reconfigure,
    ) -> std::io::Result<std::thread::JoinHandle<()>> {
        let daemon = Arc::new(PortDaemon {
            sessions: self.sessions,
            signing_key: std::sync::atomic::AtomicBool::new(false),
            router,
            reconfig,
            config: self.config,
            address: self.sinful.to_string(),
        });
        let live = Arc::new(Slots::default());
        let listener = self.listener;
        std::thread::Builder::new()
            .name("command-port".into())
            .spawn(move || {
                for conn in listener.incoming() {
                    let Ok(stream) = conn else { continue };
                    let Ok(peer) = stream.peer_addr() else {
                        continue;
                    };
                    // Past the limits the connection is closed at once (its
                    // client retries); no peer can take every slot.
                    let Some(slot) = Slots::take(&live, Holder::of(&stream, peer)) else {
                        continue;
                    };
                    let d = daemon.clone();
                    let _ = std::thread::Builder::new()
                        .name("command".into())
                        .spawn(move || {
                            // The slot is given back when the thread ends,
                            // however it ends.
                            let _slot = slot;
                            d.connection(stream);
                        });
                }
            })
    }
}

/// Whose a connection is, for sharing out the slots: a local user (a
/// peer on this host, by its socket's owner), else the host it comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Holder {
    LocalUser(u32),
    Host(std::net::IpAddr),
}

impl Holder {
    fn of(stream: &TcpStream, peer: SocketAddr) -> Holder {
        if let Ok(local) = stream.local_addr() {
            if peer.ip().is_loopback() || peer.ip() == local.ip() {
                if let Some(uid) = crate::peer_user::owner(peer, local) {
                    return Holder::LocalUser(uid);
                }
            }
        }
        Holder::Host(peer.ip())
    }
}

/// The connections being served: in all, and from each peer.
#[derive(Default)]
struct Slots {
    total: AtomicUsize,
    by_peer: std::sync::Mutex<std::collections::HashMap<Holder, usize>>,
}

/// One connection's place in [`Slots`], given back when dropped.
struct Slot {
    slots: Arc<Slots>,
    holder: Holder,
}

impl Slots {
    fn take(slots: &Arc<Slots>, holder: Holder) -> Option<Slot> {
        let mut by_peer = slots.by_peer.lock().unwrap_or_else(|e| e.into_inner());
        let mine = by_peer.entry(holder).or_insert(0);
        if *mine >= MAX_CONNECTIONS_PER_PEER
            || slots.total.load(Ordering::SeqCst) >= MAX_CONNECTIONS
        {
            if *mine == 0 {
                by_peer.remove(&holder);
            }
            return None;
        }
        *mine += 1;
        slots.total.fetch_add(1, Ordering::SeqCst);
        Some(Slot {
            slots: slots.clone(),
            holder,
        })
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut by_peer = self.slots.by_peer.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = by_peer.get_mut(&self.holder) {
            *n -= 1;
            if *n == 0 {
                by_peer.remove(&self.holder);
            }
        }
        self.slots.total.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Reads the process's configuration again for its roles, all or none:
/// what became of it, or why the configuration in force stays.
pub type Reconfigure = Arc<dyn Fn() -> Result<String, String> + Send + Sync>;

pub(crate) struct PortDaemon {
    sessions: Arc<Sessions>,
    /// The pool's signing key was found (tokens can be handed out).
    signing_key: std::sync::atomic::AtomicBool,
    router: Router,
    reconfig: Reconfigure,
    config: PortConfig,
    address: String,
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// Which role serves a command, and at which level.
fn route(command: i32) -> Option<(RoleName, Level)> {
    use Level::{
        Administrator, AdvertiseMaster, AdvertiseSchedd, AdvertiseStartd, Daemon, Negotiator, Read,
        Write,
    };
    use RoleName::{Collector, Schedd, Startd};
    Some(match command {
        cmd::QUERY_STARTD_ADS
        | cmd::QUERY_SCHEDD_ADS
        | cmd::QUERY_MASTER_ADS
        | cmd::QUERY_SUBMITTOR_ADS
        | cmd::QUERY_COLLECTOR_ADS
        | cmd::QUERY_ANY_ADS
        | cmd::QUERY_NEGOTIATOR_ADS
        | cmd::QUERY_MULTIPLE_ADS
        | QUERY_GENERIC_ADS
        | QUERY_ACCOUNTING_ADS => (Collector, Read),
        c if negotiator::pool_history::query_of(c).is_some() => (Collector, Read),
        cmd::UPDATE_STARTD_AD | cmd::INVALIDATE_STARTD_ADS => (Collector, AdvertiseStartd),
        cmd::UPDATE_SCHEDD_AD
        | cmd::UPDATE_SUBMITTOR_AD
        | cmd::INVALIDATE_SCHEDD_ADS
        | cmd::INVALIDATE_SUBMITTOR_ADS => (Collector, AdvertiseSchedd),
        cmd::UPDATE_MASTER_AD | cmd::INVALIDATE_MASTER_ADS => (Collector, AdvertiseMaster),
        cmd::UPDATE_NEGOTIATOR_AD | cmd::INVALIDATE_NEGOTIATOR_ADS => (Collector, Negotiator),
        cmd::UPDATE_AD_GENERIC
        | cmd::INVALIDATE_ADS_GENERIC
        | cmd::UPDATE_COLLECTOR_AD
        | cmd::INVALIDATE_COLLECTOR_ADS => (Collector, Daemon),
        cmd::QUERY_JOB_ADS | cmd::QUERY_SCHEDD_HISTORY => (Schedd, Read),
        cmd::QUERY_JOB_ADS_WITH_AUTH => (Schedd, Read),
        cmd::ACT_ON_JOBS | cmd::QMGMT_WRITE_CMD | cmd::RESCHEDULE => (Schedd, Write),
        cmd::GET_PRIORITY | cmd::GET_PRIORITY_ROLLUP => (RoleName::Negotiator, Read),
        // Changing the accountant is an administrator's (HTCondor lets any
        // WRITE user set a factor; a factor decides everyone's share).
        cmd::SET_PRIORITY | cmd::SET_PRIORITYFACTOR | cmd::RESET_USAGE => {
            (RoleName::Negotiator, Administrator)
        }
        // HTCondor's startd takes it from anyone on this host (ALLOW,
        // then the peer checked).
        crate::kbdd::X_EVENT_NOTIFICATION => (Startd, Level::Allow),
        cmd::DRAIN_JOBS
        | cmd::CANCEL_DRAIN_JOBS
        | cmd::VACATE_ALL_CLAIMS
        | cmd::VACATE_ALL_FAST
        | cmd::VACATE_CLAIM
        | cmd::VACATE_CLAIM_FAST => (Startd, Administrator),
        _ => return None,
    })
}

/// Commands that must authenticate whatever the level's setting (HTCondor
/// registers them with force-authentication): they act for a user.
fn forces_authentication(command: i32) -> bool {
    matches!(
        command,
        cmd::ACT_ON_JOBS
            | cmd::QMGMT_WRITE_CMD
            | cmd::QUERY_JOB_ADS_WITH_AUTH
            | cmd::DC_GET_SESSION_TOKEN
            | cmd::FC_ROLE_MESSAGES
            | cmd::FC_FILE_TRANSFER
    )
}

/// How long a connection of role messages may stay silent: a role sends
/// at least every poll or keep-alive; past this the connection is closed
/// and its sender opens a new one for its next message.
const ROLE_MESSAGES_IDLE: std::time::Duration = std::time::Duration::from_secs(3600);

const QUERY_GENERIC_ADS: i32 = 74;
const QUERY_ACCOUNTING_ADS: i32 = 78;

impl PortDaemon {
    fn here(&self, role: RoleName) -> bool {
        match role {
            RoleName::Collector => self.router.collector().is_ok(),
            RoleName::Negotiator => self.router.negotiator().is_ok(),
            RoleName::Schedd => self.router.schedd().is_ok(),
            RoleName::Startd => self.router.startd().is_ok(),
            RoleName::Defrag => false,
        }
    }

    fn connection(&self, stream: TcpStream) {
        let Ok(mut sock) = Sock::new(stream) else {
            return;
        };
        // Before anyone is known, little time and little memory.
        sock.set_max_message(HANDSHAKE_MAX_MESSAGE);
        if sock.set_timeout(HANDSHAKE_TIMEOUT).is_err() {
            return;
        }
        let accepted = match cedar::server::accept(&mut sock, self, &self.sessions, now()) {
            Ok(a) => a,
            Err(e) => {
                // Closed connections before a command are ordinary (port
                // probes, clients giving up); refusals are worth a line.
                if !matches!(e, cedar::server::Refused::Sock(SockError::Closed { .. })) {
                    eprintln!("ferrocondor: command port: {e}");
                }
                sock.close();
                return;
            }
        };
        let (command, peer) = (accepted.command, accepted.peer.describe());
        sock.set_max_message(REQUEST_MAX_MESSAGE);
        if sock.set_timeout(cedar::sock::DEFAULT_TIMEOUT).is_err() {
            return;
        }
        if let Err(e) = self.serve(&mut sock, accepted) {
            if !matches!(
                e,
                SockError::Closed {
                    inside_message: false
                }
            ) {
                eprintln!(
                    "ferrocondor: command port: {} from {peer}: {e}",
                    cmd::describe(command)
                );
            }
        }
        sock.close();
    }

    /// FC_ROLE_MESSAGES: another process's roles' messages for the roles
    /// here, one a CEDAR message, until the sender closes the connection
    /// (`role_transport`). The handshake authorized the DAEMON level.
    fn role_messages(&self, sock: &mut Sock, a: &mut Accepted) -> Result<(), SockError> {
        sock.set_max_message(crate::role_transport::MAX_MESSAGE);
        sock.set_timeout(ROLE_MESSAGES_IDLE)
            .map_err(|e| SockError::Io {
                doing: "setting the deadline",
                source: e,
            })?;
        let mut first = a.bare_payload.take().filter(|p| !p.is_empty());
        loop {
            let msg = match first.take() {
                Some(m) => m,
                None => match sock.recv_next()? {
                    Some(m) => m,
                    None => return Ok(()),
                },
            };
            let mut d = sock.decoder(&msg);
            match crate::role_transport::get_message(&mut d) {
                // Only for a daemon of this process: a message is never
                // passed on (no relay, no loop between processes), and one
                // for another daemon of the role (an address gone stale:
                // another startd listens there now) is not taken.
                Ok(m) if !self.router.is_here(&m.to) => eprintln!(
                    "ferrocondor: a role message from {} for the {}{}, which does not run \
                     here, was dropped",
                    a.peer.describe(),
                    m.to.role.daemon_name().to_lowercase(),
                    m.to.name.map(|n| format!(" {n}")).unwrap_or_default()
                ),
                Ok(m) => {
                    // A peer in a brokered session (a claim's, the
                    // negotiator's) may say only what the session is for.
                    if let Err(refused) = self.router.admit(&a.peer, &m) {
                        eprintln!(
                            "ferrocondor: a role message from {} was refused: {}",
                            a.peer.describe(),
                            refused.why
                        );
                        // Where the sender waits for an answer (a claim
                        // request), it is told, in the same session.
                        if let Some(answer) = refused.answer {
                            self.router
                                .heard_from(m.from, m.from_name.as_deref(), &m.reply_to);
                            let back = crate::roles::Dest {
                                role: m.from,
                                name: m.from_name.clone(),
                                at: Some(m.reply_to.clone()),
                            };
                            self.router.deliver(m.to.role, back, *answer);
                        }
                        continue;
                    }
                    self.router
                        .heard_from(m.from, m.from_name.as_deref(), &m.reply_to);
                    self.router.deliver(m.from, m.to, m.message);
                }
                Err(e) => eprintln!(
                    "ferrocondor: a role message from {} was dropped: {e}",
                    a.peer.describe()
                ),
            }
        }
    }

    /// The command's payload, first message: what came with a bare command,
    /// or the next message.
    fn first_message(sock: &mut Sock, a: &mut Accepted) -> Result<Vec<u8>, SockError> {
        match a.bare_payload.take() {
            Some(p) if !p.is_empty() => Ok(p),
            _ => sock.recv(),
        }
    }

    fn serve(&self, sock: &mut Sock, mut a: Accepted) -> Result<(), SockError> {
        if a.sec_query {
            // `condor_ping`: the handshake authorized the command; say so,
            // run nothing.
            let mut reply = ClassAd::new();
            reply.insert_value("AuthorizationSucceeded", true);
            let mut e = sock.encoder();
            put_ad(&mut e, &reply, &PutOptions::default());
            return sock.send(&e);
        }
        match a.command {
            // DC_NOP and the DC_NOP_<LEVEL> that `condor_ping -authz`
            // sends: the handshake was the point.
            c if nop_level(c).is_some() => Ok(()),
            cmd::DC_RECONFIG | cmd::DC_RECONFIG_FULL => {
                // condor_reconfig sent to a daemon: this process reads its
                // configuration again, for all its roles or none. HTCondor
                // answers nothing (its tools do not read on); we answer
                // an ad that says how it went, which our tool reads, as
                // a broken file is the admin's to hear of at once.
                let mut ad = ClassAd::new();
                match (self.reconfig)() {
                    Ok(message) => {
                        eprintln!("ferrocondor: {message}");
                        ad.insert_value("Result", true);
                    }
                    Err(why) => {
                        eprintln!("ferrocondor: reconfig: {why}");
                        ad.insert_value("Result", false);
                        ad.insert_value("ErrorString", why.as_str());
                    }
                }
                let mut e = sock.encoder();
                put_ad(&mut e, &ad, &PutOptions::default());
                // A client that did not wait for the answer is no failure.
                let _ = sock.send(&e);
                Ok(())
            }
            cmd::DC_OFF_GRACEFUL | cmd::DC_OFF_FAST | cmd::DC_OFF_PEACEFUL => {
                // condor_off (`pool down`): this process stops as on
                // SIGTERM (running jobs are killed and run again at the
                // next start); under a master the whole pool goes down,
                // the master stopping every daemon.
                if let Some(pid) = std::env::var(crate::master::MASTER_PID_ENV)
                    .ok()
                    .and_then(|p| p.parse::<libc::pid_t>().ok())
                {
                    // SAFETY: kill with a pid and a valid signal.
                    unsafe { libc::kill(pid, libc::SIGTERM) };
                }
                // SAFETY: kill with our own pid and a valid signal.
                unsafe { libc::kill(libc::getpid(), libc::SIGTERM) };
                Ok(())
            }
            cmd::DC_GET_SESSION_TOKEN => {
                let msg = Self::first_message(sock, &mut a)?;
                self.session_token(sock, &a.peer, &msg)
            }
            cmd::FC_ROLE_MESSAGES => self.role_messages(sock, &mut a),
            cmd::FC_FILE_TRANSFER => {
                let msg = Self::first_message(sock, &mut a)?;
                // The claim core says which job runs on the claim; the
                // queue gives its ad. A starter in a claim's session asks
                // only for that claim's job.
                let brokered = a.peer.brokered.clone();
                let who = a.peer.describe();
                let lookup = |claim: &str, job: schedd::JobId| -> Option<ClassAd> {
                    if let Some(sid) = &brokered {
                        if !self.router.claim_in_session(claim, sid) {
                            eprintln!(
                                "ferrocondor: {who} asked for the files of job {job} on a claim \
                                 that is not its session's; refused"
                            );
                            return None;
                        }
                    }
                    let claim = claim.to_string();
                    self.on_schedd(move |s, _, _| s.job_on_claim(&claim, job))
                        .ok()
                        .flatten()
                };
                crate::file_transfer::serve(sock, &msg, &lookup)
            }
            cmd::RESCHEDULE => {
                let _ = self.on_schedd(|s, _, out| {
                    out.send(RoleName::Negotiator, crate::roles::Message::Reschedule);
                    s.publish(out);
                });
                Ok(())
            }
            cmd::QUERY_JOB_ADS | cmd::QUERY_JOB_ADS_WITH_AUTH => {
                let msg = Self::first_message(sock, &mut a)?;
                self.query_jobs(sock, &a.peer, &msg)
            }
            cmd::QUERY_SCHEDD_HISTORY => {
                let msg = Self::first_message(sock, &mut a)?;
                self.history(sock, &a.peer, &msg)
            }
            cmd::ACT_ON_JOBS => {
                let msg = Self::first_message(sock, &mut a)?;
                self.act(sock, &a.peer, &msg)
            }
            cmd::QMGMT_WRITE_CMD => crate::qmgmt::serve(self, sock, &a.peer),
            cmd::GET_PRIORITY | cmd::GET_PRIORITY_ROLLUP => self.priorities(sock),
            cmd::SET_PRIORITY | cmd::SET_PRIORITYFACTOR | cmd::RESET_USAGE => {
                let msg = Self::first_message(sock, &mut a)?;
                self.change_priorities(sock, a.command, &msg)
            }
            cmd::DRAIN_JOBS | cmd::CANCEL_DRAIN_JOBS => {
                let msg = Self::first_message(sock, &mut a)?;
                self.drain(sock, a.command, &msg)
            }
            cmd::VACATE_ALL_CLAIMS | cmd::VACATE_ALL_FAST => self
                .startd_command(StartdCommand::Vacate {
                    slot: None,
                    fast: a.command == cmd::VACATE_ALL_FAST,
                })
                .map(|_| ())
                .map_err(|e| SockError::Protocol(e.message)),
            cmd::VACATE_CLAIM | cmd::VACATE_CLAIM_FAST => {
                let msg = Self::first_message(sock, &mut a)?;
                let mut d = sock.decoder(&msg);
                let name = d.get_str()?;
                d.finish()?;
                // `slot1@host` names the slot of this machine.
                let slot = name.split('@').next().unwrap_or(&name).to_string();
                self.startd_command(StartdCommand::Vacate {
                    slot: Some(slot),
                    fast: a.command == cmd::VACATE_CLAIM_FAST,
                })
                .map(|_| ())
                .map_err(|e| SockError::Protocol(e.message))
            }
            c if is_update(c) || is_invalidate(c) => {
                let mut msg = Self::first_message(sock, &mut a)?;
                let mut command = c;
                loop {
                    self.update(sock, command, &a.peer, &msg)?;
                    // Over TCP a client may send more: `[int cmd][ad]`
                    // each, and DC_NOP at the end.
                    let Some(next) = sock.recv_next()? else {
                        return Ok(());
                    };
                    msg = next;
                    let mut d = sock.decoder(&msg);
                    command = d.get_i32()?;
                    if command == cmd::DC_NOP {
                        return Ok(());
                    }
                    let level = route(command).map(|(_, l)| l);
                    if level != Some(a.level) {
                        return Err(SockError::Protocol(format!(
                            "{} sent {} on a connection authorized for {}",
                            a.peer.describe(),
                            cmd::describe(command),
                            a.level.name()
                        )));
                    }
                    msg = msg[d.position()..].to_vec();
                }
            }
            crate::kbdd::X_EVENT_NOTIFICATION => {
                // Only the keyboard daemon of this host may say the
                // keyboard was used.
                let local = sock.local().map(|a| a.ip());
                let peer = sock.peer().ip();
                if !local.is_ok_and(|l| cedar::auth::on_this_host(peer, l)) {
                    return Err(SockError::Protocol(format!(
                        "X_EVENT_NOTIFICATION from {peer}, not from this host: ignored"
                    )));
                }
                let startd = self
                    .router
                    .startd()
                    .map_err(|e| SockError::Protocol(e.to_string()))?;
                let _ = startd.call_blocking(|s, now, _| s.x_event(now));
                Ok(())
            }
            c if negotiator::pool_history::query_of(c).is_some() => {
                let msg = Self::first_message(sock, &mut a)?;
                self.history_query(sock, c, &msg)
            }
            c if route(c).is_some_and(|(r, _)| r == RoleName::Collector) => {
                let msg = Self::first_message(sock, &mut a)?;
                self.collector_query(sock, c, &msg)
            }
            other => Err(SockError::Protocol(format!(
                "{} is not served on this port",
                cmd::describe(other)
            ))),
        }
    }

    /// Runs `f` on the schedd's thread; the claim core then takes in what
    /// changed.
    pub(crate) fn on_schedd<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut ScheddRole, i64, &mut crate::roles::Outbox) -> T + Send + 'static,
    ) -> Result<T, ApiError> {
        let schedd = self.router.schedd().map_err(|e| ApiError {
            status: 503,
            message: e.to_string(),
        })?;
        // The caller has its answer once `f` has run (a submission once
        // it is on disk); the claims' account of the jobs it changed
        // follows on the schedd's thread, before anything else reaches it.
        schedd
            .call_blocking_then(f, |s, now, out| s.queue_changed(out, now))
            .map_err(|e| ApiError {
                status: 503,
                message: e.to_string(),
            })
    }

    // ---- the collector ------------------------------------------------

    fn collector_query(&self, sock: &mut Sock, command: i32, msg: &[u8]) -> Result<(), SockError> {
        let query = request_ad(sock, msg)?;
        let target = text(&query, "TargetType").unwrap_or_default();
        let kind = match command {
            cmd::QUERY_STARTD_ADS | cmd::QUERY_MULTIPLE_ADS => Some(AdType::Startd),
            cmd::QUERY_SCHEDD_ADS => Some(AdType::Schedd),
            cmd::QUERY_MASTER_ADS => Some(AdType::Master),
            cmd::QUERY_SUBMITTOR_ADS => Some(AdType::Submitter),
            cmd::QUERY_COLLECTOR_ADS => Some(AdType::Collector),
            cmd::QUERY_NEGOTIATOR_ADS => Some(AdType::Negotiator),
            QUERY_ACCOUNTING_ADS => Some(AdType::Accounting),
            QUERY_GENERIC_ADS => Some(AdType::from_my_type(&target)),
            _ if target.is_empty() || target.eq_ignore_ascii_case("Any") => None,
            _ => Some(AdType::from_my_type(&target)),
        };
        let constraint = query.get("Requirements").cloned();
        let projection = projection_of(&query);
        let limit = int(&query, "LimitResults").filter(|l| *l > 0);
        let address = self.address.clone();
        // Slot ads up to date when the startd runs here, and the access
        // point's and its submitters' when the schedd does (as `status`
        // answers): each role's update reaches the collector's inbox
        // before this query does.
        if matches!(kind, None | Some(AdType::Startd)) {
            if let Ok(startd) = self.router.startd() {
                let _ = startd.call_blocking(|s, now, out| {
                    s.publish_slots(now);
                    s.flush(out);
                });
            }
        }
        if matches!(kind, None | Some(AdType::Schedd) | Some(AdType::Submitter)) {
            if let Ok(schedd) = self.router.schedd() {
                let _ = schedd.call_blocking(|s, _, out| s.publish(out));
            }
        }
        let collector = self
            .router
            .collector()
            .map_err(|e| SockError::Protocol(e.to_string()))?;
        let (all, at) = collector
            .call_blocking(move |c, now, _| {
                let mut ads = c.snapshot(kind.as_ref(), now);
                if kind.is_none() || kind == Some(AdType::Collector) {
                    ads.push(c.own_ad(&address, now));
                }
                (ads, now)
            })
            .map_err(|e| SockError::Protocol(e.to_string()))?;
        // The constraint evaluated here, not on the collector's thread,
        // within the query time limit.
        let env = classad::Env::at(at);
        let budget = Budget::new(QUERY_TIME_LIMIT);
        let total = all.len();
        let mut ads = Vec::new();
        for (i, ad) in all.into_iter().enumerate() {
            if limit.is_some_and(|l| ads.len() as i64 >= l) {
                break;
            }
            if let Err(e) = budget.check(i, Some(total)) {
                // HTCondor's collector protocol has no error answer: the
                // client sees the connection end, and fails the query
                // rather than take part of an answer for all of it.
                return Err(SockError::Protocol(e.message));
            }
            if constraint
                .as_ref()
                .is_none_or(|c| negotiator::collector::constraint_holds(c, &ad, &env))
            {
                ads.push(ad);
            }
        }
        let names: Vec<classad::AttrName> = with_references(&projection, &ads);
        let opts = PutOptions {
            exclude_private: true,
            projection: (!projection.is_empty()).then_some(names.as_slice()),
            ..Default::default()
        };
        let mut e = sock.encoder();
        for ad in &ads {
            e.put_int(1);
            put_ad(&mut e, ad, &opts);
        }
        e.put_int(0);
        sock.send(&e)
    }

    /// A view collector's history query (`condor_stats`): the range, the
    /// form (raw lines or percentages of the range) and the name, then
    /// the answer's lines and an empty one, as HTCondor's view server.
    fn history_query(&self, sock: &mut Sock, command: i32, msg: &[u8]) -> Result<(), SockError> {
        let mut d = sock.decoder(msg);
        let from = d.get_int()?;
        let to = d.get_int()?;
        let raw = d.get_int()? != 0;
        let arg = d.get_str()?;
        d.finish()?;
        let collector = self
            .router
            .collector()
            .map_err(|e| SockError::Protocol(e.to_string()))?;
        let dir = collector
            .call_blocking(|c, _, _| c.history_dir())
            .map_err(|e| SockError::Protocol(e.to_string()))?;
        let lines = dir
            .map(|dir| crate::pool_history::answer(&dir, command, from, to, raw, &arg))
            .unwrap_or_default();
        let mut e = sock.encoder();
        for l in &lines {
            e.put_str(l);
        }
        e.put_str("");
        sock.send(&e)
    }

    fn update(&self, sock: &Sock, command: i32, peer: &Peer, msg: &[u8]) -> Result<(), SockError> {
        let mut d = sock.decoder(msg);
        let ad = get_ad(&mut d)?;
        // A startd's update may carry its private ad second.
        if d.remaining() > 0 {
            let _private = get_ad(&mut d)?;
        }
        d.finish()?;
        let collector = self
            .router
            .collector()
            .map_err(|e| SockError::Protocol(e.to_string()))?;
        let who = peer.describe();
        if is_invalidate(command) {
            let kind = invalidated_type(command, &ad);
            // An invalidation names what it removes; one that names
            // nothing would remove every ad of the type.
            let Some(constraint) = ad.get("Requirements").cloned() else {
                return Err(SockError::Protocol(format!(
                    "{who} sent {} without Requirements (it would remove every {} ad)",
                    cmd::describe(command),
                    kind.my_type()
                )));
            };
            let _ = collector.call_blocking(move |c, now, _| {
                c.invalidate_matching(&kind, Some(&constraint), now)
            });
        } else {
            let kind = updated_type(command, &ad);
            let _ = collector.call_blocking(move |c, now, out| {
                if let Err(e) = c.update(kind, ad, now) {
                    out.note(format!("collector: an ad from {who} was refused: {e}"));
                }
            });
        }
        Ok(())
    }

    pub(crate) fn max_jobs_per_submission(&self) -> usize {
        self.config.max_jobs_per_submission
    }

    /// The local user a peer is, for what is done in a user's name (jobs,
    /// operators): an authenticated `user@domain` of this pool's domain
    /// (UID_DOMAIN, or the TRUST_DOMAIN its tokens name). An anonymous
    /// peer, or one of another domain, is no local user.
    pub(crate) fn local_user<'p>(&self, peer: &'p Peer) -> Option<&'p str> {
        let full = peer.user.as_deref()?;
        let (user, domain) = full.rsplit_once('@')?;
        let ours = domain.eq_ignore_ascii_case(&self.config.auth.uid_domain)
            || domain.eq_ignore_ascii_case(&self.config.auth.trust_domain);
        (ours && !user.is_empty() && full != cedar::auth::ANONYMOUS_USER).then_some(user)
    }

    // ---- tokens ---------------------------------------------------------

    /// DC_GET_SESSION_TOKEN (`condor_token_fetch`): a token for the user
    /// this session authenticated, signed by the pool's key, limited to
    /// the levels asked for (and to the session's own limits).
    fn session_token(&self, sock: &mut Sock, peer: &Peer, msg: &[u8]) -> Result<(), SockError> {
        let req = request_ad(sock, msg)?;
        let mut reply = ClassAd::new();
        let refuse = |reply: &mut ClassAd, code: i64, why: &str| {
            reply.insert_value("ErrorCode", code);
            reply.insert_value("ErrorString", why);
        };
        let asked: Vec<String> = text(&req, "LimitAuthorization")
            .map(|l| {
                split_names(&l)
                    .iter()
                    .map(|s| s.to_ascii_uppercase())
                    .collect()
            })
            .unwrap_or_default();
        let mut authz = asked.clone();
        if let Some(limits) = &peer.limits {
            let names: Vec<&str> = limits.names();
            authz = if asked.is_empty() {
                names.iter().map(|n| n.to_string()).collect()
            } else {
                asked
                    .into_iter()
                    .filter(|a| names.contains(&a.as_str()))
                    .collect()
            };
        }
        // A token for a proven user of this pool; never for a name a
        // client only claimed (CLAIMTOBE).
        let user = peer
            .user
            .as_deref()
            .filter(|_| self.local_user(peer).is_some())
            .filter(|_| peer.method.as_deref() != Some("CLAIMTOBE"));
        match (user, text(&req, "RequestedKey")) {
            (None, _) => refuse(
                &mut reply,
                2,
                "Server did not successfully authenticate session.",
            ),
            (Some(_), Some(k)) if k != cedar::token::POOL => {
                refuse(&mut reply, 3, "Server will not sign with requested key.")
            }
            (Some(_), _) if peer.limits.is_some() && authz.is_empty() => refuse(
                &mut reply,
                4,
                "Session doesn't allow requested authorization levels.",
            ),
            (Some(user), _) => {
                let keys = self.config.auth.keys();
                let signed = keys
                    .load(cedar::token::POOL)
                    .map_err(|e| e.to_string())
                    .and_then(|key| {
                        cedar::token::create(
                            &cedar::token::NewToken {
                                subject: user,
                                issuer: &self.config.auth.trust_domain,
                                kid: cedar::token::POOL,
                                now: now(),
                                lifetime: int(&req, "TokenLifetime").filter(|l| *l >= 0),
                                authz: &authz,
                            },
                            &key,
                        )
                    });
                match signed {
                    Ok(t) => reply.insert_value("Token", t.as_str()),
                    Err(e) => refuse(&mut reply, 1, &e),
                }
            }
        }
        let mut e = sock.encoder();
        put_ad(&mut e, &reply, &PutOptions::default());
        sock.send(&e)
    }

    // ---- the negotiator and the startd ----------------------------------

    fn accountant(&self, req: UserprioRequest) -> Result<wire::api::UserprioAnswer, SockError> {
        let negotiator = self
            .router
            .negotiator()
            .map_err(|e| SockError::Protocol(e.to_string()))?;
        negotiator
            .call_blocking(move |n, now, out| n.userprio(&req, now, out))
            .map_err(|e| SockError::Protocol(e.to_string()))
    }

    /// GET_PRIORITY: the accountant's table as HTCondor's negotiator sends
    /// it, one numbered group of attributes per submitter.
    fn priorities(&self, sock: &mut Sock) -> Result<(), SockError> {
        let table = self.accountant(UserprioRequest::default())?;
        let mut ad = ClassAd::new();
        ad.insert_value("LastUpdate", table.last_update);
        ad.insert_value("NumSubmittors", table.rows.len() as i64);
        for (i, r) in table.rows.iter().enumerate() {
            let n = i + 1;
            ad.insert_value(&format!("Name{n}"), r.name.as_str());
            ad.insert_value(&format!("Priority{n}"), r.effective_priority);
            ad.insert_value(&format!("PriorityFactor{n}"), r.priority_factor);
            ad.insert_value(
                &format!("ResourcesUsed{n}"),
                r.resources_used.round() as i64,
            );
            ad.insert_value(&format!("WeightedResourcesUsed{n}"), r.resources_used);
            let seconds = r.accumulated_usage_hours * 3600.0;
            ad.insert_value(&format!("AccumulatedUsage{n}"), seconds);
            ad.insert_value(&format!("WeightedAccumulatedUsage{n}"), seconds);
            ad.insert_value(&format!("BeginUsageTime{n}"), r.begin_usage_time);
            ad.insert_value(&format!("LastUsageTime{n}"), r.last_usage_time);
            ad.insert_value(&format!("IsAccountingGroup{n}"), r.is_group);
            ad.insert_value(&format!("AccountingGroup{n}"), r.name.as_str());
        }
        let mut e = sock.encoder();
        let opts = PutOptions {
            no_types: true,
            ..Default::default()
        };
        put_ad(&mut e, &ad, &opts);
        sock.send(&e)
    }

    /// SET_PRIORITY, SET_PRIORITYFACTOR, RESET_USAGE: no answer.
    fn change_priorities(&self, sock: &Sock, command: i32, msg: &[u8]) -> Result<(), SockError> {
        let mut d = sock.decoder(msg);
        let user = d.get_str()?;
        let mut req = UserprioRequest::default();
        match command {
            cmd::SET_PRIORITY => req.set_priority = Some((user, d.get_double()?)),
            cmd::SET_PRIORITYFACTOR => {
                let f = d.get_double()?;
                if !(f.is_finite() && f >= 1.0) {
                    return Err(SockError::Protocol(format!(
                        "a priority factor of {f} for {user}: factors are 1 or more"
                    )));
                }
                req.set_factor = Some((user, f));
            }
            _ => req.reset_usage = Some(user),
        }
        d.finish()?;
        self.accountant(req).map(|_| ())
    }

    fn startd_command(&self, c: StartdCommand) -> Result<wire::api::StartdAnswer, ApiError> {
        let startd = self.router.startd().map_err(|e| ApiError {
            status: 503,
            message: e.to_string(),
        })?;
        startd
            .call_blocking(move |s, now, out| {
                let r = s.startd_command(c, now);
                s.flush(out);
                r
            })
            .map_err(|e| ApiError {
                status: 503,
                message: e.to_string(),
            })?
    }

    /// DRAIN_JOBS, CANCEL_DRAIN_JOBS.
    fn drain(&self, sock: &mut Sock, command: i32, msg: &[u8]) -> Result<(), SockError> {
        let req = request_ad(sock, msg)?;
        let c = if command == cmd::CANCEL_DRAIN_JOBS {
            StartdCommand::CancelDrain
        } else {
            StartdCommand::Drain {
                how: match int(&req, "HowFast").unwrap_or(0) {
                    n if n >= 20 => DrainHow::Fast,
                    n if n >= 10 => DrainHow::Quick,
                    _ => DrainHow::Graceful,
                },
                resume_on_completion: int(&req, "ResumeOnCompletion").unwrap_or(0) == 1,
                start: req.get("StartExpr").map(classad::unparse::expr_to_string),
                reason: text(&req, "DrainReason"),
                check: req.get("CheckExpr").map(classad::unparse::expr_to_string),
            }
        };
        let mut reply = ClassAd::new();
        match self.startd_command(c) {
            Ok(_) => {
                reply.insert_value("Result", true);
                if command == cmd::DRAIN_JOBS {
                    reply.insert_value("RequestID", "1");
                }
            }
            Err(e) => {
                reply.insert_value("Result", false);
                // HTCondor's DRAINING_CHECK_EXPR_FAILED for a CheckExpr
                // that does not hold.
                let code = if e.status == crate::admin::DRAIN_CHECK_FAILED {
                    10003
                } else {
                    1
                };
                reply.insert_value("ErrorCode", code);
                reply.insert_value("ErrorString", e.message.as_str());
            }
        }
        let mut e = sock.encoder();
        put_ad(&mut e, &reply, &PutOptions::default());
        sock.send(&e)
    }

    // ---- the schedd ---------------------------------------------------

    /// A history query: read page by page on the schedd's thread,
    /// evaluated here within the query time limit.
    fn history_answer(
        &self,
        user: String,
        request: HistoryRequest,
    ) -> Result<Result<wire::api::HistoryAnswer, ApiError>, ApiError> {
        let mut scan =
            self.on_schedd(move |s, now, _| s.schedd.history_scan(&user, request, now))?;
        let schedd = self.router.schedd().map_err(|e| ApiError {
            status: 503,
            message: e.to_string(),
        })?;
        let budget = Budget::new(QUERY_TIME_LIMIT);
        while scan.wants_more() {
            let (back, rows) = schedd
                .call_blocking(move |s, _, _| {
                    let rows = s.schedd.history_page(&scan);
                    (scan, rows)
                })
                .map_err(|e| ApiError {
                    status: 503,
                    message: e.to_string(),
                })?;
            scan = back;
            if let Err(e) = rows.and_then(|rows| scan.take(rows, &budget)) {
                return Ok(Err(e));
            }
        }
        Ok(Ok(scan.answer()))
    }

    fn query_jobs(&self, sock: &mut Sock, peer: &Peer, msg: &[u8]) -> Result<(), SockError> {
        let req = request_ad(sock, msg)?;
        let (constraint, projection) = (constraint_of(&req), projection_of(&req));
        let limit = int(&req, "LimitResults").filter(|l| *l >= 0);
        let summary_only = bool_attr(&req, "SummaryOnly");
        let server_time = bool_attr(&req, "SendServerTime");
        // condor_q -factory: the factories' cluster ads too (or alone).
        let include_cluster_ads = bool_attr(&req, "IncludeClusterAd");
        let no_proc_ads = bool_attr(&req, "NoProcAds");
        let user = self.local_user(peer).unwrap_or("").to_string();
        let asker = user.clone();
        let now_t = now();
        let mut final_ad = ClassAd::new();
        final_ad.insert_value("Owner", 0);
        final_ad.insert_value("MyType", "Summary");
        final_ad.insert_value("ServerTime", now_t);
        // `condor_q -totals` asks for the summary alone: the queue's
        // counters answer it when the constraint names only the owner and
        // statuses, with no job looked at.
        if summary_only {
            let (asker, constraint) = (asker.clone(), constraint.clone());
            let counted = self
                .on_schedd(move |s, _, _| s.schedd.query_counts(&asker, constraint.as_deref()))
                .ok()
                .flatten();
            if let Some((selected, mine, all)) = counted {
                final_ad.insert_value("ErrorCode", 0);
                let n = |s: JobStatus| selected.of(s) as i64;
                let counts = [
                    selected.jobs() as i64,
                    n(JobStatus::Idle),
                    n(JobStatus::Running),
                    n(JobStatus::Removed),
                    n(JobStatus::Completed),
                    n(JobStatus::Held),
                    n(JobStatus::Suspended),
                ];
                summary_counts(&mut final_ad, counts, &user, mine, all);
                let mut e = sock.encoder();
                put_ad(&mut e, &final_ad, &PutOptions::default());
                return sock.send(&e);
            }
        }
        let factory_ads = if include_cluster_ads && !summary_only {
            let (asker, constraint) = (asker.clone(), constraint.clone());
            self.on_schedd(move |s, now, _| {
                s.schedd
                    .factory_ads_matching(&asker, constraint.as_deref(), now)
            })
            .and_then(|r| r)
        } else {
            Ok(Vec::new())
        };
        let request = QueryRequest {
            selection: Selection {
                constraint,
                ..Selection::default()
            },
            projection: Vec::new(),
        };
        // The queue's snapshot on the schedd's thread (only the jobs the
        // queue's index leaves possible); the constraint evaluated here,
        // within the query time limit, so no user's query holds up the
        // schedd.
        let answer = self
            .on_schedd(move |s, now, _| s.schedd.query_snapshot(&asker, request, now))
            .and_then(|q| q.select(&Budget::new(QUERY_TIME_LIMIT)));
        match answer {
            Ok((selected, mine, all)) => {
                final_ad.insert_value("ErrorCode", 0);
                let mut counts = [0i64; 7];
                let names = attr_names(&projection);
                let opts = PutOptions {
                    exclude_private: true,
                    projection: (!projection.is_empty()).then_some(names.as_slice()),
                    server_time: server_time.then_some(now_t),
                    ..Default::default()
                };
                // One ad a message, written a batch at a time.
                let mut batch = Vec::new();
                let mut sent = 0i64;
                for ad in factory_ads.iter().flatten() {
                    let mut e = sock.encoder();
                    put_ad(&mut e, ad, &opts);
                    batch.push(e);
                }
                for ad in &selected {
                    count_status(&mut counts, ad);
                    if summary_only || no_proc_ads || limit.is_some_and(|l| sent >= l) {
                        continue;
                    }
                    let mut e = sock.encoder();
                    match job_projection(ad, &names).filter(|_| !projection.is_empty()) {
                        Some(more) => put_ad(
                            &mut e,
                            ad,
                            &PutOptions {
                                projection: Some(more.as_slice()),
                                ..opts
                            },
                        ),
                        None => put_ad(&mut e, ad, &opts),
                    }
                    batch.push(e);
                    sent += 1;
                    if batch.len() == 256 {
                        sock.send_all(&batch)?;
                        batch.clear();
                    }
                }
                sock.send_all(&batch)?;
                summary_counts(&mut final_ad, counts, &user, mine, all);
            }
            Err(e) => {
                final_ad.insert_value("ErrorCode", 1);
                final_ad.insert_value("ErrorString", e.message.as_str());
            }
        }
        let mut e = sock.encoder();
        put_ad(&mut e, &final_ad, &PutOptions::default());
        sock.send(&e)
    }

    fn history(&self, sock: &mut Sock, peer: &Peer, msg: &[u8]) -> Result<(), SockError> {
        let req = request_ad(sock, msg)?;
        let (constraint, projection) = (constraint_of(&req), projection_of(&req));
        let matches = int(&req, "NumJobMatches").filter(|n| *n >= 0);
        let user = self.local_user(peer).unwrap_or("").to_string();
        let request = HistoryRequest {
            selection: Selection {
                constraint,
                ..Selection::default()
            },
            limit: matches.map(|m| m as usize),
            ..HistoryRequest::default()
        };
        let answer = self.history_answer(user, request);
        let mut e = sock.encoder();
        let mut final_ad = ClassAd::new();
        final_ad.insert_value("Owner", 0);
        match answer.and_then(|a| a) {
            Ok(answer) => {
                let names = attr_names(&projection);
                let opts = PutOptions {
                    exclude_private: true,
                    projection: (!projection.is_empty()).then_some(names.as_slice()),
                    ..Default::default()
                };
                let mut n = 0i64;
                for text in answer.ads.iter() {
                    let Ok(ad) = ClassAd::parse(text) else {
                        continue;
                    };
                    put_ad(&mut e, &ad, &opts);
                    n += 1;
                }
                final_ad.insert_value("NumJobMatches", n);
                final_ad.insert_value("MalformedAds", 0);
                final_ad.insert_value("AdCount", n);
            }
            Err(err) => {
                final_ad.insert_value("ErrorCode", 1);
                final_ad.insert_value("ErrorString", err.message.as_str());
                final_ad.insert_value("NumJobMatches", 0);
            }
        }
        put_ad(&mut e, &final_ad, &PutOptions::default());
        sock.send(&e)
    }

    fn act(&self, sock: &mut Sock, peer: &Peer, msg: &[u8]) -> Result<(), SockError> {
        let req = request_ad(sock, msg)?;
        let action_code = int(&req, "JobAction").unwrap_or(0);
        let mut result = ClassAd::new();
        result.insert_value("JobAction", action_code);
        result.insert_value(
            "ActionResultType",
            int(&req, "ActionResultType").unwrap_or(2),
        );
        let (action, reason_attr) = match action_code {
            1 => (Some(Action::Hold), "HoldReason"),
            2 => (Some(Action::Release), "ReleaseReason"),
            3 | 4 => (Some(Action::Remove), "RemoveReason"),
            5 => (Some(Action::Vacate), "VacateReason"),
            6 => (Some(Action::VacateFast), "VacateReason"),
            _ => (None, ""),
        };
        let mut totals = [0i64; 7];
        let mut total_ads = 0i64;
        let user = self.local_user(peer).unwrap_or("").to_string();
        let asked: Vec<JobSpec> = text(&req, "ActionIds")
            .map(|ids| {
                ids.split(',')
                    .filter_map(|s| JobSpec::parse(s.trim()))
                    .collect()
            })
            .unwrap_or_default();
        let outcome: Result<wire::api::ActAnswer, ApiError> = match action {
            None => Err(ApiError::bad_request(format!(
                "JobAction {action_code} is not carried out by this schedd (hold 1, release 2, remove 3 and 4, vacate 5 and 6 are)"
            ))),
            Some(action) => {
                let mut selection = Selection::default();
                if req.get("ActionIds").is_some() {
                    selection.ids = asked.clone();
                    if selection.ids.is_empty() {
                        selection.constraint = Some("false".into());
                    }
                } else {
                    selection.constraint = Some(
                        req.get("ActionConstraint")
                            .map(classad::unparse::expr_to_string)
                            .unwrap_or_else(|| "true".into()),
                    );
                }
                let reason = text(&req, reason_attr);
                let request = ActRequest {
                    action,
                    selection,
                    reason,
                };
                let who = user.clone();
                // Which jobs: chosen on a snapshot off the schedd's thread
                // (within the query time limit), acted on on it.
                let (selecting, asked) = (request.clone(), who.clone());
                self.on_schedd(move |s, now, _| s.schedd.act_snapshot(&asked, &selecting, now))
                    .and_then(|sel| sel.select(&Budget::new(QUERY_TIME_LIMIT)))
                    .and_then(|targets| {
                        self.on_schedd(move |s, now, _| {
                            let jobs = s.schedd.queue().len() as i64;
                            s.act_on(&who, &request, targets, now).map(|a| (a, jobs))
                        })
                    })
                    .and_then(|a| a)
                .map(|(a, jobs)| {
                    total_ads = jobs;
                    a
                })
            }
        };
        // AR_LONG (2): each job's result as `job_<cluster>_<proc>`, as
        // HTCondor's schedd answers; totals always.
        let long = int(&req, "ActionResultType") == Some(2);
        match &outcome {
            Ok(a) => {
                totals[1] = a.done.len() as i64;
                for f in &a.failed {
                    totals[f.code.clamp(0, 6) as usize] += 1;
                }
                // Jobs asked for by id that are not in the queue.
                let missing: Vec<String> = asked
                    .iter()
                    .filter(|j| j.proc.is_some())
                    .map(|j| j.to_string())
                    .filter(|j| !a.done.contains(j) && !a.failed.iter().any(|f| &f.job == j))
                    .collect();
                totals[2] += missing.len() as i64;
                if long {
                    let done = a.done.iter().map(|j| (j.as_str(), 1));
                    let failed = a.failed.iter().map(|f| (f.job.as_str(), f.code));
                    let missing = missing.iter().map(|j| (j.as_str(), 2));
                    for (job, code) in done.chain(failed).chain(missing) {
                        if let Some((c, p)) = job.split_once('.') {
                            result.insert_value(&format!("job_{c}_{p}"), code);
                        }
                    }
                }
            }
            Err(_) => totals[0] = 1,
        }
        let ok = totals[1] > 0;
        result.insert_value("ActionResult", ok as i64);
        result.insert_value("TotalJobAds", total_ads);
        result.insert_value("IsQueueSuperUser", false);
        for (i, n) in totals.iter().enumerate() {
            result.insert_value(&format!("result_total_{i}"), *n);
        }
        if let Err(e) = &outcome {
            result.insert_value("ErrorString", e.message.as_str());
        }
        let mut e = sock.encoder();
        put_ad(&mut e, &result, &PutOptions::default());
        sock.send(&e)?;
        if ok {
            // The client's "still here", then ours: the change is on disk.
            let confirm = sock.recv()?;
            let mut d = sock.decoder(&confirm);
            let _ = d.get_int()?;
            let mut e = sock.encoder();
            e.put_int(1);
            sock.send(&e)?;
        }
        Ok(())
    }
}

/// DC_NOP (anyone) and DC_NOP_<LEVEL> (who may run commands of the
/// level): commands that do nothing, to test a session.
fn nop_level(command: i32) -> Option<Level> {
    Some(match command {
        cmd::DC_NOP => Level::Allow,
        cmd::DC_NOP_READ => Level::Read,
        cmd::DC_NOP_WRITE => Level::Write,
        cmd::DC_NOP_NEGOTIATOR => Level::Negotiator,
        cmd::DC_NOP_ADMINISTRATOR => Level::Administrator,
        cmd::DC_NOP_CONFIG => Level::Config,
        cmd::DC_NOP_DAEMON => Level::Daemon,
        cmd::DC_NOP_ADVERTISE_STARTD => Level::AdvertiseStartd,
        cmd::DC_NOP_ADVERTISE_SCHEDD => Level::AdvertiseSchedd,
        cmd::DC_NOP_ADVERTISE_MASTER => Level::AdvertiseMaster,
        _ => return None,
    })
}

fn is_update(c: i32) -> bool {
    matches!(
        c,
        cmd::UPDATE_STARTD_AD
            | cmd::UPDATE_SCHEDD_AD
            | cmd::UPDATE_MASTER_AD
            | cmd::UPDATE_SUBMITTOR_AD
            | cmd::UPDATE_COLLECTOR_AD
            | cmd::UPDATE_NEGOTIATOR_AD
            | cmd::UPDATE_AD_GENERIC
    )
}

fn is_invalidate(c: i32) -> bool {
    matches!(
        c,
        cmd::INVALIDATE_STARTD_ADS
            | cmd::INVALIDATE_SCHEDD_ADS
            | cmd::INVALIDATE_MASTER_ADS
            | cmd::INVALIDATE_SUBMITTOR_ADS
            | cmd::INVALIDATE_COLLECTOR_ADS
            | cmd::INVALIDATE_NEGOTIATOR_ADS
            | cmd::INVALIDATE_ADS_GENERIC
    )
}

fn updated_type(c: i32, ad: &ClassAd) -> AdType {
    match c {
        cmd::UPDATE_STARTD_AD => AdType::Startd,
        cmd::UPDATE_SCHEDD_AD => AdType::Schedd,
        cmd::UPDATE_MASTER_AD => AdType::Master,
        cmd::UPDATE_SUBMITTOR_AD => AdType::Submitter,
        cmd::UPDATE_COLLECTOR_AD => AdType::Collector,
        cmd::UPDATE_NEGOTIATOR_AD => AdType::Negotiator,
        _ => AdType::of(ad).unwrap_or_else(|| AdType::Other("Generic".into())),
    }
}

fn invalidated_type(c: i32, ad: &ClassAd) -> AdType {
    match c {
        cmd::INVALIDATE_STARTD_ADS => AdType::Startd,
        cmd::INVALIDATE_SCHEDD_ADS => AdType::Schedd,
        cmd::INVALIDATE_MASTER_ADS => AdType::Master,
        cmd::INVALIDATE_SUBMITTOR_ADS => AdType::Submitter,
        cmd::INVALIDATE_COLLECTOR_ADS => AdType::Collector,
        cmd::INVALIDATE_NEGOTIATOR_ADS => AdType::Negotiator,
        _ => AdType::from_my_type(&text(ad, "TargetType").unwrap_or_else(|| "Generic".into())),
    }
}

/// The summary ad's counts: of the jobs selected (`Jobs`, `Idle`, ...,
/// in that order), the whole queue's and the asker's own (HTCondor's
/// `Allusers*` and `My*`, condor_q's last two totals lines).
fn summary_counts(ad: &mut ClassAd, counts: [i64; 7], user: &str, mine: Totals, all: Totals) {
    for (name, n) in [
        "Jobs",
        "Idle",
        "Running",
        "Removed",
        "Completed",
        "Held",
        "Suspended",
    ]
    .iter()
    .zip(counts)
    {
        ad.insert_value(name, n);
    }
    let mut prefixes = vec![("Allusers", all)];
    if !user.is_empty() {
        ad.insert_value("MyName", user);
        prefixes.push(("My", mine));
    }
    for (prefix, t) in prefixes {
        for (name, n) in [
            ("Jobs", t.jobs),
            ("Idle", t.idle),
            ("Running", t.running),
            ("Removed", t.removed),
            ("Completed", t.completed),
            ("Held", t.held),
            ("Suspended", t.suspended),
        ] {
            ad.insert_value(&format!("{prefix}{name}"), n as i64);
        }
    }
}

fn count_status(counts: &mut [i64; 7], ad: &ClassAd) {
    counts[0] += 1;
    let slot = match int(ad, "JobStatus") {
        Some(1) => 1,
        Some(2) => 2,
        Some(3) => 3,
        Some(4) => 4,
        Some(5) => 5,
        Some(7) => 6,
        _ => return,
    };
    counts[slot] += 1;
}

/// A request's one ad, the whole of its message.
fn request_ad(sock: &Sock, msg: &[u8]) -> Result<ClassAd, SockError> {
    let mut d = sock.decoder(msg);
    let ad = get_ad(&mut d)?;
    d.finish()?;
    Ok(ad)
}

/// A request's `Requirements`, as text for the schedd's query.
fn constraint_of(req: &ClassAd) -> Option<String> {
    req.get("Requirements")
        .map(classad::unparse::expr_to_string)
}

/// A request's `Projection`: a string of names (spaces for the collector,
/// newlines for job queries) or, from history queries, a list of them.
fn projection_of(req: &ClassAd) -> Vec<String> {
    match req.get("Projection") {
        Some(classad::Expr::List(items)) => items
            .iter()
            .filter_map(|e| match e {
                classad::Expr::Lit(Value::Str(s)) => Some(s.to_string()),
                _ => None,
            })
            .collect(),
        _ => text(req, "Projection")
            .map(|p| split_names(&p))
            .unwrap_or_default(),
    }
}

/// Attribute names of a projection, however the client separated them.
fn split_names(p: &str) -> Vec<String> {
    p.split([' ', ',', '\n', '\t', '\r'])
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// The projection, with the attributes its expressions name inside the ad
/// (as HTCondor's collector sends them, so a projected expression still
/// evaluates).
fn attr_names(projection: &[String]) -> Vec<classad::AttrName> {
    projection
        .iter()
        .map(|n| classad::AttrName::from(n.as_str()))
        .collect()
}

/// The projection of one job ad, when an attribute asked for is an
/// expression: the names asked for and, transitively, the ad's attributes
/// those expressions read (`MemoryUsage` brings `ResidentSetSize`), since
/// the client evaluates them. `None` when every one asked for is a literal
/// (the common case), and the names alone do.
fn job_projection(ad: &ClassAd, names: &[classad::AttrName]) -> Option<Vec<classad::AttrName>> {
    let computed = |e: &classad::Expr| !matches!(e, classad::Expr::Lit(_));
    if !names
        .iter()
        .any(|n| ad.get(n.as_str()).is_some_and(computed))
    {
        return None;
    }
    let mut out = names.to_vec();
    let mut i = 0;
    while i < out.len() {
        if let Some(e) = ad.get(out[i].as_str()).filter(|e| computed(e)) {
            let mut refs = Vec::new();
            negotiator::autocluster::references(e, &mut refs);
            for r in refs {
                if ad.contains(r.as_str()) && !out.iter().any(|x| x.matches(&r)) {
                    out.push(r);
                }
            }
        }
        i += 1;
    }
    Some(out)
}

fn with_references(projection: &[String], ads: &[ClassAd]) -> Vec<classad::AttrName> {
    let mut names: Vec<classad::AttrName> = Vec::new();
    let mut add = |n: &str| {
        if !names.iter().any(|x| x.as_str().eq_ignore_ascii_case(n)) {
            names.push(classad::AttrName::from(n));
        }
    };
    for p in projection {
        add(p);
    }
    for ad in ads.iter().take(1) {
        for p in projection {
            if let Some(e) = ad.get(p) {
                let mut refs = Vec::new();
                negotiator::autocluster::references(e, &mut refs);
                for r in refs.iter().filter(|r| ad.contains(r.as_str())) {
                    add(r.as_str());
                }
            }
        }
    }
    names
}

impl Daemon for PortDaemon {
    fn level(&self, command: i32) -> Option<Level> {
        if let Some(level) = nop_level(command) {
            return Some(level);
        }
        if matches!(
            command,
            cmd::DC_RECONFIG
                | cmd::DC_RECONFIG_FULL
                | cmd::DC_OFF_GRACEFUL
                | cmd::DC_OFF_FAST
                | cmd::DC_OFF_PEACEFUL
        ) {
            return Some(Level::Administrator);
        }
        if command == cmd::FC_ROLE_MESSAGES {
            // Only where roles of other processes talk to these: a daemon
            // of `ferrocondor master` or of a pool of many hosts.
            return self.router.has_remote().then_some(Level::Daemon);
        }
        if command == cmd::FC_FILE_TRANSFER {
            // A starter of another process fetches or sends the files of
            // a job of this schedd.
            return (self.router.has_remote() && self.router.schedd().is_ok())
                .then_some(Level::Daemon);
        }
        if command == cmd::DC_GET_SESSION_TOKEN {
            // Any user this daemon authenticated may have a token for
            // themselves (HTCondor registers it at DAEMON with every
            // level as an alternative); only where a key can sign it.
            // Looked for (a read of the key file) until found, then
            // remembered: every handshake asks, through `commands_at`.
            if !self.signing_key.load(Ordering::Relaxed) {
                let keys = self.config.auth.keys();
                if keys.load(cedar::token::POOL).is_err() {
                    return None;
                }
                self.signing_key.store(true, Ordering::Relaxed);
            }
            return Some(Level::Read);
        }
        let (role, level) = route(command)?;
        self.here(role).then_some(level)
    }

    fn commands_at(&self, level: Level) -> Vec<i32> {
        use negotiator::pool_history::commands as hist;
        let all = [
            cmd::QUERY_STARTD_ADS,
            cmd::QUERY_SCHEDD_ADS,
            cmd::QUERY_MASTER_ADS,
            cmd::QUERY_SUBMITTOR_ADS,
            cmd::QUERY_COLLECTOR_ADS,
            cmd::QUERY_ANY_ADS,
            cmd::QUERY_NEGOTIATOR_ADS,
            cmd::QUERY_MULTIPLE_ADS,
            QUERY_GENERIC_ADS,
            QUERY_ACCOUNTING_ADS,
            crate::kbdd::X_EVENT_NOTIFICATION,
            hist::QUERY_HIST_STARTD,
            hist::QUERY_HIST_STARTD_LIST,
            hist::QUERY_HIST_SUBMITTOR,
            hist::QUERY_HIST_SUBMITTOR_LIST,
            hist::QUERY_HIST_GROUPS,
            hist::QUERY_HIST_GROUPS_LIST,
            hist::QUERY_HIST_SUBMITTORGROUPS,
            hist::QUERY_HIST_SUBMITTORGROUPS_LIST,
            cmd::UPDATE_STARTD_AD,
            cmd::INVALIDATE_STARTD_ADS,
            cmd::UPDATE_SCHEDD_AD,
            cmd::UPDATE_SUBMITTOR_AD,
            cmd::INVALIDATE_SCHEDD_ADS,
            cmd::INVALIDATE_SUBMITTOR_ADS,
            cmd::UPDATE_MASTER_AD,
            cmd::INVALIDATE_MASTER_ADS,
            cmd::UPDATE_NEGOTIATOR_AD,
            cmd::INVALIDATE_NEGOTIATOR_ADS,
            cmd::UPDATE_AD_GENERIC,
            cmd::INVALIDATE_ADS_GENERIC,
            cmd::QUERY_JOB_ADS,
            cmd::QUERY_SCHEDD_HISTORY,
            cmd::QUERY_JOB_ADS_WITH_AUTH,
            cmd::ACT_ON_JOBS,
            cmd::QMGMT_WRITE_CMD,
            cmd::RESCHEDULE,
            cmd::GET_PRIORITY,
            cmd::GET_PRIORITY_ROLLUP,
            cmd::SET_PRIORITY,
            cmd::SET_PRIORITYFACTOR,
            cmd::RESET_USAGE,
            cmd::DRAIN_JOBS,
            cmd::CANCEL_DRAIN_JOBS,
            cmd::VACATE_ALL_CLAIMS,
            cmd::VACATE_ALL_FAST,
            cmd::VACATE_CLAIM,
            cmd::VACATE_CLAIM_FAST,
            cmd::DC_GET_SESSION_TOKEN,
            cmd::DC_NOP_READ,
            cmd::DC_NOP_WRITE,
            cmd::DC_NOP_NEGOTIATOR,
            cmd::DC_NOP_ADMINISTRATOR,
            cmd::DC_NOP_CONFIG,
            cmd::DC_NOP_DAEMON,
            cmd::DC_NOP_ADVERTISE_STARTD,
            cmd::DC_NOP_ADVERTISE_SCHEDD,
            cmd::DC_NOP_ADVERTISE_MASTER,
            cmd::DC_RECONFIG,
            cmd::DC_RECONFIG_FULL,
            cmd::DC_OFF_GRACEFUL,
            cmd::DC_OFF_FAST,
            cmd::DC_OFF_PEACEFUL,
        ];
        all.into_iter()
            .filter(|c| self.level(*c) == Some(level))
            .collect()
    }

    fn policy(&self, level: Level) -> Policy {
        let [authentication, encryption, integrity] = self
            .config
            .levels
            .iter()
            .find(|(l, _)| *l == level)
            .map(|(_, r)| *r)
            .unwrap_or([Requirement::Optional; 3]);
        Policy {
            authentication,
            encryption,
            integrity,
            auth_methods: self
                .config
                .methods
                .iter()
                .find(|(l, _)| *l == level)
                .map(|(_, m)| m.clone())
                .unwrap_or_default(),
            crypto_methods: vec!["AES".into()],
            session_duration: 3600 * 24,
            session_lease: 3600,
        }
    }

    fn policy_for_command(&self, command: i32, level: Level) -> Policy {
        let mut p = self.policy(level);
        if forces_authentication(command) {
            p.authentication = Requirement::Required;
        }
        p
    }

    fn authorize(&self, peer: &Peer, level: Level) -> Result<(), String> {
        if level == Level::Allow {
            return Ok(());
        }
        // A peer in a brokered session proved it holds the session's key
        // and nothing more: DAEMON for the commands the session names,
        // each message then judged by what the session is for
        // (`claim_sessions`).
        if peer.brokered.is_some() {
            return match level {
                Level::Daemon => Ok(()),
                _ => Err(format!(
                    "a brokered session is for the roles' messages only, not the {} level",
                    level.name()
                )),
            };
        }
        // The configuration's lists decide where they bear on the level.
        let configured = self.config.authorization.decide(
            level,
            peer.user.as_deref(),
            peer.addr.ip(),
            // Host names in the lists match a peer by its name only where
            // we know it: a peer on this host (loopback, or our own
            // address) is this host; any other matches by address alone
            // (no name lookup yet).
            if peer.addr.ip().is_loopback() || peer.addr.ip() == self.config.listen.ip() {
                std::slice::from_ref(&self.config.hostname)
            } else {
                &[]
            },
        );
        if let Some(verdict) = configured {
            return verdict;
        }
        // Otherwise, secure defaults: anyone reads; writing takes an
        // authenticated user; the rest, the pool's own user or root.
        match level {
            Level::Allow | Level::Read => Ok(()),
            Level::Write => match self.local_user(peer) {
                Some(_) => Ok(()),
                None => Err(
                    "ALLOW_WRITE is not set, and by default only authenticated users may write"
                        .into(),
                ),
            },
            _ => match self.local_user(peer) {
                Some(u) if self.config.operators.iter().any(|o| o == u) => Ok(()),
                _ => Err(format!(
                    "ALLOW_{} is not set, and by default only the pool's own user and root have it",
                    level.name()
                )),
            },
        }
    }

    fn auth_settings(&self) -> &cedar::auth::Settings {
        &self.config.auth
    }

    fn version(&self) -> &str {
        CONDOR_VERSION
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn a_personal_pool_listens_on_loopback_and_a_named_collector_where_it_is_named() {
        let c = |s: &str| Sinful::parse(s, 0).unwrap();
        // The built-in personal pool: no address, or loopback.
        assert_eq!(listen_ip(&c("127.0.0.1"), None, true), ip("127.0.0.1"));
        assert_eq!(listen_ip(&c("127.0.0.1:0"), None, false), ip("127.0.0.1"));
        // A central manager named by its address listens there.
        assert_eq!(listen_ip(&c("192.0.2.1:9618"), None, true), ip("192.0.2.1"));
        // A name is resolved (here to loopback).
        assert!(listen_ip(&c("localhost:9618"), None, true).is_loopback());
        // Another daemon of the host: NETWORK_INTERFACE when set.
        assert_eq!(
            listen_ip(&c("192.0.2.1:9618"), Some(ip("192.0.2.9")), false),
            ip("192.0.2.9")
        );
    }
}
