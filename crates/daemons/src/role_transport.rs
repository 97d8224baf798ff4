//! The roles' transport between processes (`ferrocondor master`, and the
//! daemons of a pool of many hosts): HTCondor's wire protocol. Each
//! process serves its roles on its command port; a role's messages for a
//! role of another process go there as ferrocondor's own command
//! [`cedar::commands::FC_ROLE_MESSAGES`], at the DAEMON level (authenticated
//! as HTCondor authenticates daemons to each other: FS on one host, a token
//! of the pool's across hosts; by default only the pool's own user and
//! root hold DAEMON), encrypted when the session is.
//!
//! One connection per destination daemon, kept: after the handshake every
//! CEDAR message on it is one role message: the destination role and the
//! daemon's name (empty for the pool's one daemon of the role), the
//! sender's command port (where answers go) and its daemon's name, and the
//! message as a [`crate::local_protocol`] line. Messages from one process
//! to one daemon arrive in the order sent. A role that cannot be reached (starting,
//! restarting, its host gone) loses what is sent to it meanwhile, as a
//! datagram would be lost: the roles resend what matters (the startd its
//! ads every poll, the negotiator its cycle and its ad, the schedd its
//! keep-alives).
//!
//! Where a daemon is: where its last message came from (the sender's
//! port); else where the sender was told it is (a match names the
//! startd's address); else, on this host, the address its process wrote
//! in the roles directory; else COLLECTOR_HOST (the collector) or the
//! daemon's ad at the collector (`MyAddress`; a startd's by its slots'
//! names, `slotN@NAME`).
//!
//! A message between an access point and an execute point, or from the
//! negotiator to either, travels in a session the central manager
//! brokered (`claim_sessions`: a slot's claim id, a schedd's capability
//! for the negotiator) where there is one, so that only the central
//! manager needs the pool's signing key; the others authenticate with
//! their tokens to the central manager only. A message may carry slots'
//! sessions handed on with matches (a last string: `slot@startd`, tab,
//! the capability, a line each).
//!
//! Touches only the roles directory of the pool's state directory (the
//! address files, and the schedd's claims' sessions in
//! [`CLAIM_SESSIONS`]) and the collector's address file (the tidy test's
//! list).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use cedar::capability::Capability;
use cedar::client::{ClientOptions, SessionCache};
use cedar::commands as cmd;
use cedar::{Decoder, Sinful, Sock};

use crate::claim_sessions::{Broker, SavedClaim};
use crate::local_protocol::{decode, encode};
use crate::roles::{Dest, Message, RoleName};

/// The largest role message (a schedd's requests for a big queue are the
/// largest), within what one authenticated DAEMON connection may send.
pub const MAX_MESSAGE: usize = 512 << 20;

/// Where the transport finds the other roles.
#[derive(Clone, Debug)]
pub struct Peers {
    /// How this daemon authenticates to the others (the SEC_CLIENT_*
    /// settings, tokens).
    pub client: ClientOptions,
    /// COLLECTOR_HOST, when it names a port.
    pub collector_host: Option<String>,
    /// The collector's address file (COLLECTOR_ADDRESS_FILE).
    pub collector_file: PathBuf,
    /// This host's processes write their command port's address here, one
    /// file per role (`<ROLE>.address`).
    pub roles_dir: PathBuf,
}

/// The file in which a process of this host says where `role` listens.
pub fn address_file(roles_dir: &Path, role: RoleName) -> PathBuf {
    roles_dir.join(format!("{}.address", role.daemon_name()))
}

/// Writes where this process's `roles` listen, each file the address and
/// the daemon's name (written aside, then renamed, so a reader never sees
/// half an address).
pub fn write_addresses(
    roles_dir: &Path,
    roles: &[(RoleName, Option<&str>)],
    address: &str,
) -> std::io::Result<()> {
    crate::statedir::private_dir(roles_dir)?;
    for &(role, name) in roles {
        let file = address_file(roles_dir, role);
        let tmp = file.with_extension("new");
        std::fs::write(&tmp, format!("{address}\n{}\n", name.unwrap_or("")))?;
        std::fs::rename(&tmp, &file)?;
    }
    Ok(())
}

/// Removes this process's address files (at shutdown).
pub fn remove_addresses(roles_dir: &Path, roles: &[RoleName]) {
    for &role in roles {
        let _ = std::fs::remove_file(address_file(roles_dir, role));
    }
}

/// The file in the roles directory where a schedd keeps the sessions of
/// its claims (private: it holds their keys), so that a restarted schedd
/// reconnects to its running jobs in them.
pub const CLAIM_SESSIONS: &str = "claim_sessions";

/// One role message as it travels: to whom, where the sender listens and
/// which daemon it is, the message, and the slots' sessions handed on
/// with it.
pub fn put_message(
    e: &mut cedar::Encoder,
    to: &Dest,
    reply_to: &str,
    from: Option<&str>,
    line: &str,
    handed: &[(String, String)],
) {
    e.put_str(to.role.daemon_name())
        .put_str(to.name.as_deref().unwrap_or(""))
        .put_str(reply_to)
        .put_str(from.unwrap_or(""))
        .put_str(line);
    if !handed.is_empty() {
        let text: String = handed
            .iter()
            .map(|(slot, cap)| format!("{slot}\t{cap}\n"))
            .collect();
        e.put_str(&text);
    }
}

/// A role message as it arrived.
#[derive(Debug)]
pub struct Arrived {
    /// The daemon it is for.
    pub to: Dest,
    /// Where the sender listens, and its daemon's name.
    pub reply_to: String,
    pub from_name: Option<String>,
    /// The sender's role, and the message.
    pub from: RoleName,
    pub message: Message,
    /// Slots' sessions handed on with it (`slot@startd`, capability).
    pub handed: Vec<(String, String)>,
}

/// A role message read back.
pub fn get_message(d: &mut Decoder<'_>) -> Result<Arrived, String> {
    let mut next = || d.get_str().map_err(|e| e.to_string());
    let to = next()?;
    let to_name = next()?;
    let reply_to = next()?;
    let from_name = next()?;
    let line = next()?;
    let handed = if d.remaining() > 0 {
        d.get_str()
            .map_err(|e| e.to_string())?
            .lines()
            .filter_map(|l| l.split_once('\t'))
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    } else {
        Vec::new()
    };
    d.finish().map_err(|e| e.to_string())?;
    let role = crate::local_protocol::role_named(&to)
        .ok_or_else(|| format!("a message for an unknown role {to:?}"))?;
    let some = |s: String| (!s.is_empty()).then_some(s);
    let (from, message) = decode(&line)?;
    Ok(Arrived {
        to: Dest {
            role,
            name: some(to_name),
            at: None,
        },
        reply_to,
        from_name: some(from_name),
        from,
        message,
        handed,
    })
}

/// How the transport keys a daemon: its role, and its name where it has
/// one (names compare without case, as HTCondor's daemon names).
type Key = (RoleName, Option<String>);

/// A sender: the daemon, and the brokered session its messages travel in
/// (by id).
type Outlet = (Key, Option<String>);

fn key(role: RoleName, name: Option<&str>) -> Key {
    (role, name.map(str::to_ascii_lowercase))
}

/// The other processes' daemons, reached through their command ports.
///
/// Each destination daemon has a sender of its own (a thread, started
/// when there is something to send and ended after a minute with
/// nothing), with a bounded queue: a role hands its messages over and
/// goes on, so a daemon that is slow or cut off (a connect that waits
/// for its timeout) holds up no role and no other destination, and
/// messages for one daemon still leave in order. A full queue loses
/// what does not fit, as a down daemon loses what is sent to it.
pub struct Remote {
    finder: Arc<Finder>,
    /// A destination's sender per session its messages travel in.
    outlets: Mutex<HashMap<Outlet, mpsc::SyncSender<Outgoing>>>,
    /// Messages handed over and not yet sent (or given up).
    pending: Arc<std::sync::atomic::AtomicUsize>,
}

/// The most ads a query for a startd's VM-host peers takes: a host's
/// slots and its inner machines', with room to spare.
pub const PEER_ADS_LIMIT: i64 = 4096;

/// How many messages may wait for one destination.
const QUEUE: usize = 4096;

/// How long a destination's sender waits for more before it ends (and
/// its connection with it): longer than the pool's usual intervals
/// (ALIVE_INTERVAL, UPDATE_INTERVAL: 300 s), so that a daemon talked to
/// regularly keeps its connection.
const SENDER_IDLE: Duration = Duration::from_secs(900);

/// A sender's stack: it encodes and sends, nothing deep.
const SENDER_STACK: usize = 1 << 20;

/// A message waiting to leave: the sender's name and the encoded line.
struct Outgoing {
    from_name: Option<String>,
    to: Dest,
    line: String,
    /// The brokered session it travels in.
    session: Option<Capability>,
    handed: Vec<(String, String)>,
}

/// Where the other daemons are, and how to reach them (shared by the
/// senders).
struct Finder {
    peers: Peers,
    sessions: SessionCache,
    /// This process's command port, where answers come back.
    me: String,
    /// Where each daemon was last heard from, or found.
    addresses: Mutex<HashMap<Key, Sinful>>,
    /// The sessions the central manager brokers.
    broker: Broker,
    /// One writer of the claims' sessions at a time (role threads and the
    /// command port's both note claims).
    saving: Mutex<()>,
}

fn epoch() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

impl Remote {
    /// `sessions` are the command port's (the brokered sessions are
    /// registered there); a schedd's claims' sessions kept in the roles
    /// directory are taken back.
    pub fn new(peers: Peers, me: &str, sessions: Arc<cedar::server::Sessions>) -> Remote {
        let now = epoch();
        let broker = Broker::new(sessions, me, now);
        if let Some(saved) = read_claim_sessions(&peers.roles_dir.join(CLAIM_SESSIONS)) {
            broker.restore(saved, now);
        }
        Remote {
            finder: Arc::new(Finder {
                peers,
                sessions: SessionCache::new(),
                me: me.to_string(),
                addresses: Mutex::new(HashMap::new()),
                broker,
                saving: Mutex::new(()),
            }),
            outlets: Mutex::new(HashMap::new()),
            pending: Arc::new(std::sync::atomic::AtomicUsize::new(0)),
        }
    }

    /// Whether a role message that came on a connection of `peer` may be
    /// taken (see [`Broker::admit`]), noting the sessions it brings.
    pub fn admit(
        &self,
        peer: &cedar::server::Peer,
        m: &Arrived,
    ) -> Result<(), crate::claim_sessions::Refusal> {
        let now = epoch();
        let b = &self.finder.broker;
        let admitted = match &peer.brokered {
            Some(sid) => b
                .admit(sid, (m.from, m.from_name.as_deref()), &m.message, now)
                .map(|()| b.received_in_session(&m.message, &m.handed, now)),
            None => {
                b.received(&m.message, &m.handed, now);
                Ok(())
            }
        };
        self.finder.save_claims(now);
        admitted
    }

    /// The brokered session a claim's conversations travel in (a
    /// starter's file transfer), if it has one.
    pub fn claim_session(&self, claim: &str) -> Option<Capability> {
        self.finder.broker.claim_session(claim)
    }

    /// Whether `claim` was requested in the brokered session `sid`.
    pub fn claim_in_session(&self, claim: &str, sid: &str) -> bool {
        self.finder.broker.claim_in_session(claim, sid)
    }

    /// Waits (at most `within`) until every message handed over has been
    /// sent or given up (a daemon going down says its last words).
    pub fn flush(&self, within: Duration) {
        let until = std::time::Instant::now() + within;
        while self.pending.load(std::sync::atomic::Ordering::Acquire) > 0
            && std::time::Instant::now() < until
        {
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// The daemon `name` of `role` answers at `address` (its last message
    /// came from there). It is also where the role's unnamed messages go
    /// (the answer to a request goes where the request came from). A
    /// sender whose connection is to another address (a process that
    /// restarted) makes a new one.
    pub fn heard_from(&self, role: RoleName, name: Option<&str>, address: &str) {
        let Ok(a) = Sinful::parse(address, 0) else {
            return;
        };
        let mut known = self
            .finder
            .addresses
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        known.insert(key(role, None), a.clone());
        if name.is_some() {
            known.insert(key(role, name), a);
        }
    }

    /// Where the daemon `to` listens (as last heard, or found), and how
    /// this process authenticates to it: for a conversation of its own
    /// (a job's files).
    pub fn locate(&self, to: &Dest) -> Result<(Sinful, ClientOptions), String> {
        let k = key(to.role, to.name.as_deref());
        let a = self.finder.address_of(to, &k, false)?;
        Ok((a, self.finder.peers.client.clone()))
    }

    /// The startd ads the pool's collector holds that `constraint` picks
    /// (QUERY_STARTD_ADS with this process's daemon credentials, at most
    /// [`PEER_ADS_LIMIT`] of them). Blocks, each read for at most the
    /// client's deadline.
    pub fn query_startd_ads(
        &self,
        constraint: &classad::Expr,
    ) -> Result<Vec<classad::ClassAd>, String> {
        let collector = self.finder.collector()?;
        let fail = |e: &dyn std::fmt::Display| format!("asking the collector at {collector}: {e}");
        let (mut sock, _) = cedar::client::connect(
            &collector,
            cmd::QUERY_STARTD_ADS,
            &self.finder.peers.client,
            Some(&self.finder.sessions),
        )
        .map_err(|e| fail(&e))?;
        let mut q = classad::ClassAd::new();
        q.insert_value("MyType", "Query");
        q.insert_value("TargetType", "Machine");
        q.insert("Requirements", constraint.clone());
        q.insert_value("LimitResults", PEER_ADS_LIMIT);
        cedar::ad::query_collector(&mut sock, &q).map_err(|e| fail(&e))
    }

    /// Hands `msg` from this process's `from` (named `from_name`) to the
    /// sender for `to`; a daemon that cannot be reached loses it (said in
    /// the daemon's log).
    pub fn send(&self, from: RoleName, from_name: Option<&str>, to: &Dest, msg: &Message) {
        let now = epoch();
        let mut brokered = self.finder.broker.outgoing(from, to, msg, now);
        self.finder.save_claims(now);
        let replaced = brokered.replaced.take();
        let msg = replaced.as_ref().unwrap_or(msg);
        let line = match encode(from, msg) {
            Ok(l) => l,
            Err(e) => {
                eprintln!(
                    "ferrocondor: a message for the {} cannot travel: {e}",
                    describe(to)
                );
                return;
            }
        };
        let k = key(to.role, to.name.as_deref());
        let mut out = Outgoing {
            from_name: from_name.map(str::to_string),
            to: to.clone(),
            line,
            session: brokered.session,
            handed: brokered.handed,
        };
        let k = (k, out.session.as_ref().map(|c| c.id().to_string()));
        let mut outlets = self.outlets.lock().unwrap_or_else(|p| p.into_inner());
        // A sender that ended (idle) is started again.
        for _ in 0..2 {
            let tx = outlets.entry(k.clone()).or_insert_with(|| {
                start_sender(self.finder.clone(), k.clone(), self.pending.clone())
            });
            self.pending
                .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
            let handed = tx.try_send(out);
            if handed.is_err() {
                self.pending
                    .fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
            }
            match handed {
                Ok(()) => return,
                Err(mpsc::TrySendError::Full(_)) => {
                    eprintln!(
                        "ferrocondor: {QUEUE} messages wait for the {}; a message is lost",
                        describe(to)
                    );
                    return;
                }
                Err(mpsc::TrySendError::Disconnected(back)) => {
                    out = back;
                    outlets.remove(&k);
                }
            }
        }
    }
}

/// A destination's sender: its thread keeps one connection, made again
/// when the destination is heard from elsewhere or a send fails.
fn start_sender(
    finder: Arc<Finder>,
    k: Outlet,
    pending: Arc<std::sync::atomic::AtomicUsize>,
) -> mpsc::SyncSender<Outgoing> {
    let (tx, rx) = mpsc::sync_channel::<Outgoing>(QUEUE);
    let spawned = std::thread::Builder::new()
        .name("role-sender".into())
        .stack_size(SENDER_STACK)
        .spawn(move || {
            let mut conn: Option<(Sock, Sinful)> = None;
            while let Ok(out) = rx.recv_timeout(SENDER_IDLE) {
                finder.deliver(&k.0, &out, &mut conn);
                pending.fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
            }
            // Idle: the thread ends; messages that came meanwhile fail to
            // hand over and start a new sender.
        });
    if let Err(e) = spawned {
        eprintln!("ferrocondor: no sender thread for a destination: {e}");
    }
    tx
}

impl Finder {
    /// Writes down the schedd's claims' sessions when they changed
    /// (aside, then renamed; private, for they hold keys).
    fn save_claims(&self, now: i64) {
        let _one = self.saving.lock().unwrap_or_else(|p| p.into_inner());
        let Some(saved) = self.broker.claims_to_save(now) else {
            return;
        };
        let file = self.peers.roles_dir.join(CLAIM_SESSIONS);
        let text: String = saved
            .iter()
            .map(|c| format!("{}\t{}\t{}\n", c.claim_id, c.slot, c.capability))
            .collect();
        let written = (|| {
            use std::io::Write;
            use std::os::unix::fs::OpenOptionsExt;
            crate::statedir::private_dir(&self.peers.roles_dir)?;
            let tmp = file.with_extension("new");
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o600)
                .open(&tmp)?;
            f.write_all(text.as_bytes())?;
            f.sync_all()?;
            std::fs::rename(&tmp, &file)
        })();
        if let Err(e) = written {
            eprintln!(
                "ferrocondor: cannot write the claims' sessions to {}: {e}",
                file.display()
            );
        }
    }

    /// Where `k` was last heard from, or found.
    fn known(&self, k: &Key) -> Option<Sinful> {
        self.addresses
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(k)
            .cloned()
    }

    /// Sends one message on the kept connection `conn`, made (again)
    /// where needed: a kept connection may be to a process that has since
    /// gone, so one more try on a new one, the address looked for again.
    fn deliver(&self, k: &Key, out: &Outgoing, conn: &mut Option<(Sock, Sinful)>) {
        // The destination was heard from elsewhere (it restarted).
        let known = self.known(k);
        if let (Some((_, at)), Some(known)) = (conn.as_ref(), known.as_ref()) {
            if at != known {
                *conn = None;
            }
        }
        let mut why = String::new();
        for attempt in 0..2 {
            if conn.is_none() {
                match self.connect(&out.to, k, out.session.as_ref(), attempt > 0) {
                    Ok(c) => *conn = Some(c),
                    Err(e) => {
                        why = e;
                        continue;
                    }
                }
            }
            let (s, _) = conn.as_mut().expect("made above");
            let mut e = s.encoder();
            put_message(
                &mut e,
                &out.to,
                &self.me,
                out.from_name.as_deref(),
                &out.line,
                &out.handed,
            );
            match s.send(&e) {
                Ok(()) => return,
                Err(e) => {
                    why = e.to_string();
                    *conn = None;
                }
            }
        }
        eprintln!(
            "ferrocondor: the {} is not reachable ({why}); a message is lost",
            describe(&out.to)
        );
    }

    /// A new connection to `to`'s process, its handshake done.
    /// In the brokered `session` where there is one, else with this
    /// process's own credentials.
    fn connect(
        &self,
        to: &Dest,
        k: &Key,
        session: Option<&Capability>,
        look_again: bool,
    ) -> Result<(Sock, Sinful), String> {
        let addr = self.address_of(to, k, look_again)?;
        let made = match session {
            Some(cap) => cedar::client::resume_session(
                &addr,
                cmd::FC_ROLE_MESSAGES,
                cap,
                self.peers.client.timeout,
            )
            .map_err(|e| format!("in session {}: {e}", cap.public())),
            None => cedar::client::connect(
                &addr,
                cmd::FC_ROLE_MESSAGES,
                &self.peers.client,
                Some(&self.sessions),
            )
            .map_err(|e| e.to_string()),
        };
        let (sock, _) = made.map_err(|e| {
            // Looked for again at the next message.
            self.addresses
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(k);
            format!("{addr}: {e}")
        })?;
        Ok((sock, addr))
    }

    /// Where `to` listens: as last heard, else where the sender was told
    /// it is, else found; after a failed try, found again first.
    fn address_of(&self, to: &Dest, k: &Key, look_again: bool) -> Result<Sinful, String> {
        let told = to
            .at
            .as_deref()
            .and_then(|a| Sinful::parse(a, 0).ok())
            .filter(|a| a.port != 0);
        if !look_again {
            if let Some(a) = self.known(k).or_else(|| told.clone()) {
                return Ok(a);
            }
        }
        let found = match (self.find(to), told) {
            (Ok(a), _) => a,
            (Err(_), Some(a)) => a,
            (Err(e), None) => return Err(e),
        };
        self.addresses
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(k.clone(), found.clone());
        Ok(found)
    }

    fn find(&self, to: &Dest) -> Result<Sinful, String> {
        // A process of this host says where it listens (and, for a named
        // daemon, which one it is).
        let file = address_file(&self.peers.roles_dir, to.role);
        if let Some((a, name)) = read_address_file(&file) {
            let same = match (&to.name, &name) {
                (Some(wanted), Some(n)) => wanted.eq_ignore_ascii_case(n),
                (Some(_), None) => false,
                (None, _) => true,
            };
            if same {
                return Ok(a);
            }
        }
        let collector = self.collector()?;
        if to.role == RoleName::Collector {
            return Ok(collector);
        }
        let command = match to.role {
            RoleName::Negotiator => cmd::QUERY_NEGOTIATOR_ADS,
            RoleName::Schedd => cmd::QUERY_SCHEDD_ADS,
            _ => cmd::QUERY_STARTD_ADS,
        };
        let ads = query_addresses(&collector, command, &self.peers.client, &self.sessions)?;
        ads.into_iter()
            .find(|(ad_name, _)| match &to.name {
                None => true,
                // A startd is found by its slots, `slotN@NAME`.
                Some(n) if to.role == RoleName::Startd => ad_name
                    .split_once('@')
                    .is_some_and(|(_, startd)| startd.eq_ignore_ascii_case(n)),
                Some(n) => ad_name.eq_ignore_ascii_case(n),
            })
            .map(|(_, a)| a)
            .ok_or_else(|| format!("the collector at {collector} knows no {}", describe(to)))
    }

    fn collector(&self) -> Result<Sinful, String> {
        if let Some(h) = &self.peers.collector_host {
            let first = h.split([',', ' ']).find(|s| !s.is_empty()).unwrap_or("");
            if let Ok(a) = Sinful::parse(first, 0) {
                if a.port != 0 {
                    return Ok(a);
                }
            }
        }
        read_address(&self.peers.collector_file).ok_or_else(|| {
            format!(
                "no collector: COLLECTOR_HOST names no port and {} has no address",
                self.peers.collector_file.display()
            )
        })
    }
}

/// A daemon as the log names it: `startd ep1@host`, `collector`.
fn describe(to: &Dest) -> String {
    let role = to.role.daemon_name().to_lowercase();
    match &to.name {
        Some(n) => format!("{role} {n}"),
        None => role,
    }
}

/// An address file: its address, and the daemon's name on the second
/// line where there is one.
fn read_address_file(file: &Path) -> Option<(Sinful, Option<String>)> {
    let text = std::fs::read_to_string(file).ok()?;
    let mut lines = text.lines();
    let a = Sinful::parse(lines.next()?.trim(), 0)
        .ok()
        .filter(|a| a.port != 0)?;
    let name = lines
        .next()
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(str::to_string);
    Some((a, name))
}

/// The schedd's claims' sessions as [`Finder::save_claims`] wrote them.
fn read_claim_sessions(file: &Path) -> Option<Vec<SavedClaim>> {
    let text = std::fs::read_to_string(file).ok()?;
    Some(
        text.lines()
            .filter_map(|l| {
                let mut f = l.splitn(3, '\t');
                Some(SavedClaim {
                    claim_id: f.next()?.to_string(),
                    slot: f.next()?.to_string(),
                    capability: f.next()?.to_string(),
                })
            })
            .collect(),
    )
}

/// The first line of an address file, when it is an address (the second
/// names the daemon).
pub fn read_address(file: &Path) -> Option<Sinful> {
    read_address_file(file).map(|(a, _)| a)
}

/// The `Name` and `MyAddress` of each ad a collector query gives.
fn query_addresses(
    collector: &Sinful,
    command: i32,
    client: &ClientOptions,
    sessions: &SessionCache,
) -> Result<Vec<(String, Sinful)>, String> {
    let fail = |e: &dyn std::fmt::Display| format!("asking the collector at {collector}: {e}");
    let (mut sock, _) =
        cedar::client::connect(collector, command, client, Some(sessions)).map_err(|e| fail(&e))?;
    let mut q = classad::ClassAd::new();
    q.insert_value("MyType", "Query");
    q.insert_value("Requirements", true);
    q.insert_value("Projection", "Name,MyAddress");
    let ads = cedar::ad::query_collector(&mut sock, &q).map_err(|e| fail(&e))?;
    Ok(ads
        .iter()
        .filter_map(|ad| {
            let a =
                cedar::ad::string_attr(ad, "MyAddress").and_then(|t| Sinful::parse(&t, 0).ok())?;
            Some((cedar::ad::string_attr(ad, "Name").unwrap_or_default(), a))
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_role_message_travels_with_whom_it_is_for_and_where_answers_go() {
        let msg = Message::Negotiate {
            cycle: 7,
            significant: vec!["RequestMemory".into()],
        };
        let line = encode(RoleName::Negotiator, &msg).unwrap();
        let mut e = cedar::Encoder::new();
        let to = Dest::named(RoleName::Startd, "ep1@host");
        put_message(
            &mut e,
            &to,
            "<127.0.0.1:4242?noUDP>",
            Some("cm"),
            &line,
            &[],
        );
        let mut d = Decoder::new(e.as_bytes());
        let back = get_message(&mut d).unwrap();
        assert_eq!(back.to, to);
        assert_eq!(back.reply_to, "<127.0.0.1:4242?noUDP>");
        assert_eq!(back.from_name.as_deref(), Some("cm"));
        assert_eq!(back.from, RoleName::Negotiator);
        assert!(matches!(
            back.message,
            Message::Negotiate { cycle: 7, ref significant } if significant == &["RequestMemory"]
        ));
        // The pool's one collector: no name either way.
        let mut e = cedar::Encoder::new();
        put_message(
            &mut e,
            &Dest::role(RoleName::Collector),
            "x",
            None,
            &line,
            &[("slot1@ep".into(), "id#[]key".into())],
        );
        let back = get_message(&mut Decoder::new(e.as_bytes())).unwrap();
        assert_eq!((back.to.name, back.from_name), (None, None));
        assert_eq!(back.handed, vec![("slot1@ep".into(), "id#[]key".into())]);
        // A message for a role that is none is refused with its name.
        let mut e = cedar::Encoder::new();
        e.put_str("BOGUS")
            .put_str("")
            .put_str("x")
            .put_str("")
            .put_str(&line);
        let err = get_message(&mut Decoder::new(e.as_bytes())).err().unwrap();
        assert!(err.contains("BOGUS"), "{err}");
    }

    #[test]
    fn addresses_are_written_aside_and_read_back_with_the_daemon_s_name() {
        let dir = std::env::temp_dir().join(format!("fc-role-addr-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        write_addresses(
            &dir,
            &[
                (RoleName::Startd, Some("ep1@host")),
                (RoleName::Collector, None),
            ],
            "<127.0.0.1:5151?noUDP>",
        )
        .unwrap();
        let (a, name) = read_address_file(&address_file(&dir, RoleName::Startd)).unwrap();
        assert_eq!((a.port, name.as_deref()), (5151, Some("ep1@host")));
        let (_, name) = read_address_file(&address_file(&dir, RoleName::Collector)).unwrap();
        assert_eq!(name, None);
        assert!(read_address(&address_file(&dir, RoleName::Schedd)).is_none());
        remove_addresses(&dir, &[RoleName::Startd]);
        assert!(read_address(&address_file(&dir, RoleName::Startd)).is_none());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
