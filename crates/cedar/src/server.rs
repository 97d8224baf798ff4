//! The server's side of HTCondor's security handshake (DaemonCore's
//! `DC_AUTHENTICATE`), over a [`Sock`]:
//!
//! 1. The client sends `DC_AUTHENTICATE` and its policy ad (the command it
//!    wants, what it asks of authentication, encryption and integrity, its
//!    methods), or a resumption (`UseSession`, `Sid`) of a session this
//!    daemon gave it before. A client may also send a command bare, with no
//!    handshake; that is taken only where this daemon asks nothing of the
//!    command's level.
//! 2. The server decides ([`crate::policy`]) and, when the client asks
//!    (`Enact = "NO"`), answers with the decision.
//! 3. With authentication: the method negotiation (the client's bitmask of
//!    methods, the server's choice; a failed method is dropped and the
//!    next tried) and the method's own exchange ([`crate::auth`]).
//! 4. The post-authentication ad: the session's id, the commands it may be
//!    resumed for, the authorization's outcome, the user.
//!
//! Then the command's payload follows, which is the caller's.
//!
//! Sessions without a key are resumable only when nobody authenticated in
//! them: a 25.x client that resumes an authenticated session the server
//! never keyed fails (see `docs/cedar`), so until keys are agreed such a
//! session's `ValidCommands` is empty and each command authenticates anew.

use std::collections::HashMap;
use std::sync::Mutex;

use classad::{ClassAd, Value};

use crate::ad::{
    flag_attr as yes, get_ad, int_attr as int, put_ad, string_attr as text, PutOptions,
};
use crate::auth::{self, Method};
use crate::commands;
use crate::crypto::{KeyExchange, SessionKey, StreamCipher};
use crate::policy::{Decision, Policy};
use crate::sock::{Sock, SockError};

/// HTCondor's authorization levels (DaemonCore's `DCpermission`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Level {
    /// Anyone, always (no checks at all).
    Allow,
    Read,
    Write,
    Negotiator,
    Administrator,
    Config,
    Daemon,
    AdvertiseStartd,
    AdvertiseSchedd,
    AdvertiseMaster,
}

impl Level {
    /// The level HTCondor names so (`READ`, `WRITE`, ...).
    pub fn from_name(name: &str) -> Option<Level> {
        Level::ALL
            .into_iter()
            .find(|l| l.name().eq_ignore_ascii_case(name.trim()))
    }

    /// Every level, ALLOW first (the ones a configuration sets are the
    /// others: [`Level::CONFIGURED`]).
    pub const ALL: [Level; 10] = [
        Level::Allow,
        Level::Read,
        Level::Write,
        Level::Negotiator,
        Level::Administrator,
        Level::Config,
        Level::Daemon,
        Level::AdvertiseStartd,
        Level::AdvertiseSchedd,
        Level::AdvertiseMaster,
    ];

    /// The levels a configuration speaks of (`SEC_<LEVEL>_*`,
    /// `ALLOW_<LEVEL>`): all but ALLOW.
    pub const CONFIGURED: &'static [Level] = {
        let (_, rest) = Level::ALL.split_at(1);
        rest
    };

    fn bit(self) -> u16 {
        1 << (self as u16)
    }

    /// The levels this one implies (DaemonCore's permission hierarchy):
    /// WRITE implies READ, ADMINISTRATOR and DAEMON imply WRITE and READ,
    /// the others READ.
    pub fn implied(self) -> &'static [Level] {
        match self {
            Level::Allow | Level::Read => &[],
            Level::Administrator | Level::Daemon => &[Level::Write, Level::Read],
            _ => &[Level::Read],
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Level::Allow => "ALLOW",
            Level::Read => "READ",
            Level::Write => "WRITE",
            Level::Negotiator => "NEGOTIATOR",
            Level::Administrator => "ADMINISTRATOR",
            Level::Config => "CONFIG",
            Level::Daemon => "DAEMON",
            Level::AdvertiseStartd => "ADVERTISE_STARTD",
            Level::AdvertiseSchedd => "ADVERTISE_SCHEDD",
            Level::AdvertiseMaster => "ADVERTISE_MASTER",
        }
    }
}

/// A set of levels (a credential's limits), small enough to travel in
/// every [`Peer`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LevelSet(u16);

impl LevelSet {
    pub fn insert(&mut self, l: Level) {
        self.0 |= l.bit();
    }

    pub fn contains(self, l: Level) -> bool {
        self.0 & l.bit() != 0
    }

    /// The levels HTCondor names (`READ`, `WRITE`, ...); unknown names
    /// are left out (HTCondor drops them too).
    pub fn from_names<S: AsRef<str>>(names: &[S]) -> LevelSet {
        let mut set = LevelSet::default();
        for l in names.iter().filter_map(|n| Level::from_name(n.as_ref())) {
            set.insert(l);
        }
        set
    }

    pub fn names(self) -> Vec<&'static str> {
        Level::ALL
            .iter()
            .filter(|l| self.contains(**l))
            .map(|l| l.name())
            .collect()
    }
}

/// Who is on the other end, as far as the handshake could tell.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Peer {
    /// `user@domain`, when the peer authenticated.
    pub user: Option<String>,
    /// The method that authenticated it (`FS`, `TOKEN`, ...).
    pub method: Option<String>,
    pub addr: std::net::SocketAddr,
    /// The levels its credential is limited to (a token's scopes,
    /// HTCondor's `LimitAuthorization`), or `None`. The handshake refuses
    /// a command outside them before the daemon's own authorization.
    pub limits: Option<LevelSet>,
    /// The id of the registered session the peer resumed
    /// ([`Sessions::register`]: a claim's, a capability's), if it came in
    /// by one. Such a peer proved it holds that session's key and nothing
    /// else: the daemon authorizes it for what the session is for.
    pub brokered: Option<String>,
}

impl Peer {
    /// The name refusals and logs use: `user@domain from ip`, or
    /// `an unauthenticated client at ip`.
    pub fn describe(&self) -> String {
        match &self.user {
            Some(u) => format!("{u} (from {})", self.addr.ip()),
            None => format!("an unauthenticated client at {}", self.addr.ip()),
        }
    }

    /// Why `level` is outside this peer's limits, if it is: a level is
    /// inside when a limit is it or implies it (ALLOW always is).
    pub fn outside_limits(&self, level: Level) -> Option<String> {
        let limits = self.limits?;
        let inside = level == Level::Allow
            || Level::ALL
                .iter()
                .filter(|l| limits.contains(**l))
                .any(|l| *l == level || l.implied().contains(&level));
        (!inside).then(|| format!("its token is limited to {}", limits.names().join(",")))
    }

    /// The user part of `user@domain`.
    pub fn user_name(&self) -> Option<&str> {
        self.user
            .as_deref()
            .map(|u| u.split('@').next().unwrap_or(u))
    }
}

/// What the daemon tells the handshake about itself.
pub trait Daemon {
    /// The level a command needs here, or `None` for a command this daemon
    /// does not serve.
    fn level(&self, command: i32) -> Option<Level>;
    /// Every command of a level (a session's `ValidCommands`).
    fn commands_at(&self, level: Level) -> Vec<i32>;
    /// What this daemon asks of a level's commands.
    fn policy(&self, level: Level) -> Policy;
    /// What it asks of one command (a command that acts for a user may
    /// require authentication beyond its level's setting).
    fn policy_for_command(&self, _command: i32, level: Level) -> Policy {
        self.policy(level)
    }
    /// Whether `peer` may run commands of `level`; the refusal says which
    /// setting refused.
    fn authorize(&self, peer: &Peer, level: Level) -> Result<(), String>;
    /// How methods authenticate here (FS's directory, the domain, ...).
    fn auth_settings(&self) -> &auth::Settings;
    /// `$CondorVersion: ... $`, sent as `RemoteVersion`.
    fn version(&self) -> &str;
    /// TRUST_DOMAIN, for clients choosing a token (the settings' own,
    /// unless the daemon says otherwise).
    fn trust_domain(&self) -> Option<&str> {
        Some(self.auth_settings().trust_domain.as_str())
    }
}

/// A session this daemon gave a client.
#[derive(Clone, Debug)]
struct Session {
    peer_user: Option<String>,
    method: Option<String>,
    limits: Option<LevelSet>,
    commands: Vec<i32>,
    key: SessionKey,
    /// Where the session was made: it is resumed only from there (a
    /// registered session was made nowhere: its key is the proof).
    peer_ip: Option<std::net::IpAddr>,
    /// A registered session (not made by a handshake here).
    brokered: bool,
    expires: i64,
    lease: Option<i64>,
    last_used: i64,
}

/// The session cache: bounded, expired sessions dropped as they are met.
pub struct Sessions {
    map: Mutex<HashMap<String, Session>>,
    prefix: String,
}

/// The most sessions a daemon keeps; past it the least recently used go
/// (their clients start a new session, nothing worse).
pub const MAX_SESSIONS: usize = 20_000;

/// Slack on a session's expiry, as HTCondor's SEC_SESSION_DURATION_SLOP.
const SESSION_SLOP: i64 = 20;

impl Sessions {
    pub fn new(hostname: &str) -> Sessions {
        Sessions {
            map: Mutex::new(HashMap::new()),
            prefix: format!("{hostname}:{}", std::process::id()),
        }
    }

    /// A new session's id: the host and process (for people reading
    /// logs), then 128 random bits, so that no one can name a session
    /// they were not given. (A counter or a time would let a peer guess
    /// another's session and resume it.)
    fn new_id(&self) -> String {
        let mut r = [0u8; 16];
        getrandom::fill(&mut r).expect("the system's random source");
        let hex: String = r.iter().map(|b| format!("{b:02x}")).collect();
        format!("{}:{hex}", self.prefix)
    }

    fn insert(&self, id: String, s: Session) {
        let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        if map.len() >= MAX_SESSIONS {
            let now = s.last_used;
            map.retain(|_, v| v.expires > now);
            if map.len() >= MAX_SESSIONS {
                if let Some(oldest) = map
                    .iter()
                    .min_by_key(|(_, v)| v.last_used)
                    .map(|(k, _)| k.clone())
                {
                    map.remove(&oldest);
                }
            }
        }
        map.insert(id, s);
    }

    fn resume(&self, id: &str, now: i64) -> Option<Session> {
        let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        let live = match map.get(id) {
            Some(s) => s.expires > now && s.lease.is_none_or(|l| s.last_used + l > now),
            None => return None,
        };
        if !live {
            map.remove(id);
            return None;
        }
        let s = map.get_mut(id)?;
        s.last_used = now;
        Some(s.clone())
    }

    pub fn len(&self) -> usize {
        self.map.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Registers a session made without a handshake (HTCondor's
    /// non-negotiated session): a client that resumes `cap`'s id and
    /// encrypts with its key is `user`, with `limits`, for the commands
    /// `cap` names, until `expires` (epoch seconds; [`Sessions::extend`]
    /// moves it). Registering an id again replaces it.
    pub fn register(
        &self,
        cap: &crate::capability::Capability,
        user: &str,
        limits: Option<LevelSet>,
        expires: i64,
        now: i64,
    ) {
        self.insert(
            cap.id().to_string(),
            Session {
                peer_user: Some(user.to_string()),
                method: Some("MATCH".into()),
                limits,
                commands: cap.commands(),
                key: cap.key(),
                peer_ip: None,
                brokered: true,
                expires,
                lease: None,
                last_used: now,
            },
        );
    }

    /// A registered session lasts until `expires` now (a claim's lease
    /// was renewed); false when it is gone.
    pub fn extend(&self, id: &str, expires: i64) -> bool {
        let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        match map.get_mut(id) {
            Some(s) if s.brokered => {
                s.expires = expires;
                true
            }
            _ => false,
        }
    }

    /// Forgets a registered session (its claim ended): resuming it is
    /// refused from now on.
    pub fn unregister(&self, id: &str) {
        let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        if map.get(id).is_some_and(|s| s.brokered) {
            map.remove(id);
        }
    }
}

/// A command accepted for serving.
#[derive(Debug)]
pub struct Accepted {
    pub command: i32,
    pub level: Level,
    pub peer: Peer,
    /// For a bare command (no handshake), the rest of its first message:
    /// the command's payload begins there.
    pub bare_payload: Option<Vec<u8>>,
    /// DC_SEC_QUERY (`condor_ping`): the client asks whether it may run
    /// `command`, and the daemon answers that without running it.
    pub sec_query: bool,
}

/// Why a connection ended in the handshake. Every refusal names who,
/// which command, which level and why, for the daemon's log.
#[derive(Debug)]
pub enum Refused {
    Sock(SockError),
    /// The client sent something the protocol does not allow here.
    Protocol(String),
    /// The command is not served here.
    UnknownCommand {
        command: i32,
        peer: Peer,
    },
    /// The security policies cannot agree, or authentication failed.
    Security {
        command: i32,
        peer: Peer,
        reason: String,
    },
    /// Authenticated (or not), but not allowed this command's level.
    Denied {
        command: i32,
        level: Level,
        peer: Peer,
        reason: String,
    },
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::Sock(e) => write!(f, "{e}"),
            Refused::Protocol(e) => write!(f, "{e}"),
            Refused::UnknownCommand { command, peer } => write!(
                f,
                "{} asked for {}, which this daemon does not serve",
                peer.describe(),
                commands::describe(*command)
            ),
            Refused::Security {
                command,
                peer,
                reason,
            } => write!(
                f,
                "{} could not set up security for {}: {reason}",
                peer.describe(),
                commands::describe(*command)
            ),
            Refused::Denied {
                command,
                level,
                peer,
                reason,
            } => write!(
                f,
                "{} is not allowed {} ({} level): {reason}",
                peer.describe(),
                commands::describe(*command),
                level.name()
            ),
        }
    }
}

impl std::error::Error for Refused {}

impl From<SockError> for Refused {
    fn from(e: SockError) -> Self {
        Refused::Sock(e)
    }
}

impl From<crate::DecodeError> for Refused {
    fn from(e: crate::DecodeError) -> Self {
        Refused::Sock(SockError::Decode(e))
    }
}

/// Runs the server's side of the handshake on a fresh connection.
// A refusal names the peer in full for the log, and is made at most once
// a connection: its size costs nothing worth boxing it for.
#[allow(clippy::result_large_err)]
pub fn accept(
    sock: &mut Sock,
    daemon: &dyn Daemon,
    sessions: &Sessions,
    now: i64,
) -> Result<Accepted, Refused> {
    let first = sock.recv()?;
    let mut d = sock.decoder(&first);
    let cmd = d.get_i32()?;
    let anonymous = Peer {
        user: None,
        method: None,
        addr: sock.peer(),
        limits: None,
        brokered: None,
    };
    if cmd != commands::DC_AUTHENTICATE {
        // A bare command: allowed only where the level asks for nothing.
        let level = daemon.level(cmd).ok_or(Refused::UnknownCommand {
            command: cmd,
            peer: anonymous.clone(),
        })?;
        let p = daemon.policy_for_command(cmd, level);
        if level != Level::Allow
            && (p.authentication == crate::policy::Requirement::Required
                || p.encryption == crate::policy::Requirement::Required
                || p.integrity == crate::policy::Requirement::Required)
        {
            return Err(Refused::Security {
                command: cmd,
                peer: anonymous,
                reason: format!(
                    "it was sent without security negotiation, and this daemon requires authentication, encryption or integrity at {} level",
                    level.name()
                ),
            });
        }
        if level != Level::Allow {
            daemon
                .authorize(&anonymous, level)
                .map_err(|reason| Refused::Denied {
                    command: cmd,
                    level,
                    peer: anonymous.clone(),
                    reason,
                })?;
        }
        let rest = first[d.position()..].to_vec();
        return Ok(Accepted {
            command: cmd,
            level,
            peer: anonymous,
            bare_payload: Some(rest),
            sec_query: false,
        });
    }
    let info = get_ad(&mut d)?;
    d.finish()?;
    let real = int(&info, "Command").ok_or_else(|| {
        Refused::Protocol(format!(
            "{} sent DC_AUTHENTICATE without a Command",
            anonymous.describe()
        ))
    })? as i32;
    // DC_SEC_QUERY asks "may I run AuthCommand?" without running it.
    let command = if real == commands::DC_SEC_QUERY {
        int(&info, "AuthCommand").unwrap_or(-1) as i32
    } else {
        real
    };
    let sec_query = real == commands::DC_SEC_QUERY;
    if yes(&info, "UseSession") {
        return resume(sock, daemon, sessions, &info, command, now)
            .map(|a| Accepted { sec_query, ..a });
    }
    let level = daemon.level(command);
    let policy = daemon.policy_for_command(command, level.unwrap_or(Level::Read));
    let mut decision = policy.decide(&info).map_err(|e| Refused::Security {
        command,
        peer: anonymous.clone(),
        reason: e.to_string(),
    })?;
    // Offer only methods this daemon can carry out now (TOKEN needs a
    // signing key), so the client never picks one bound to fail.
    let settings = daemon.auth_settings();
    decision
        .auth_methods
        .retain(|m| Method::from_name(m).is_some_and(|m| settings.can_serve(m)));
    // The key agreement: a 25.x client always offers its ECDH key; with
    // AES in common we answer with ours, and the session is keyed (AES-GCM
    // on for the rest of the connection, whatever Encryption says).
    let exchange = match text(&info, "ECDHPublicKey") {
        Some(peer_key) if decision.crypto_methods.iter().any(|m| m == "AES") => {
            Some((KeyExchange::new(), peer_key))
        }
        _ => None,
    };
    if exchange.is_none() && decision.needs_key() {
        return Err(Refused::Security {
            command,
            peer: anonymous,
            reason: "it needs encryption or integrity but offered no AES key agreement (ECDHPublicKey and CryptoMethods AES)".into(),
        });
    }
    let enact = text(&info, "Enact").unwrap_or_default();
    if enact.eq_ignore_ascii_case("NO") {
        let mut reply = decision.reply_ad(daemon.version(), daemon.trust_domain());
        reply.insert_value("NegotiatedSession", true);
        if decision.auth_methods.iter().any(|m| m == "TOKEN") {
            // For the client's choice of token: only those signed with a
            // key we have.
            let names = settings.keys().names();
            if !names.is_empty() {
                reply.insert_value("IssuerKeys", names.join(",").as_str());
            }
        }
        match &exchange {
            Some((kx, _)) => {
                reply.insert_value("CryptoMethods", "AES");
                reply.insert_value("CryptoMethodsList", "AES");
                reply.insert_value("ECDHPublicKey", kx.public_base64().as_str());
            }
            None => {
                reply.remove("CryptoMethods");
                reply.remove("CryptoMethodsList");
            }
        }
        let mut e = sock.encoder();
        put_ad(&mut e, &reply, &PutOptions::default());
        sock.send(&e)?;
    }
    if decision.authentication && decision.auth_required && decision.auth_methods.is_empty() {
        let offered = text(&info, "AuthMethods").unwrap_or_default();
        return Err(Refused::Security {
            command,
            peer: anonymous,
            reason: format!(
                "authentication is required and no method is in common (the client offers {}, this daemon takes {})",
                if offered.is_empty() { "none" } else { offered.as_str() },
                policy.auth_methods.join(",")
            ),
        });
    }
    let mut peer = anonymous;
    let mut tried = false;
    if decision.authentication {
        tried = true;
        match authenticate(sock, daemon, &decision, now) {
            Ok((who, method)) => {
                peer.user = Some(who.user);
                peer.method = Some(method);
                peer.limits = who.limits.as_deref().map(LevelSet::from_names);
                // "No key follows": keys come from the ECDH agreement.
                let mut e = sock.encoder();
                e.put_int(0);
                sock.send(&e)?;
            }
            Err(AuthFailure::Sock(e)) => return Err(e.into()),
            Err(AuthFailure::Fatal(reason)) => {
                // Dropping the connection is the only answer the client
                // gets (it waits for hasKey).
                sock.close();
                return Err(Refused::Security {
                    command,
                    peer,
                    reason: format!("authentication failed: {reason}"),
                });
            }
            Err(AuthFailure::Failed(reason)) => {
                if decision.auth_required {
                    return Err(Refused::Security {
                        command,
                        peer,
                        reason: format!("authentication failed: {reason}"),
                    });
                }
            }
        }
    }
    let key = match exchange {
        Some((kx, peer_key)) => {
            let key = kx.finish(&peer_key).map_err(|reason| Refused::Security {
                command,
                peer: peer.clone(),
                reason,
            })?;
            sock.start_cipher(Box::new(StreamCipher::new(&key)));
            Some(key)
        }
        None => None,
    };
    // The post-authentication ad, and the session.
    let sid = sessions.new_id();
    let (code, outcome) = match level {
        None => ("CMD_NOT_FOUND", None),
        Some(l) => match peer
            .outside_limits(l)
            .map_or_else(|| daemon.authorize(&peer, l), Err)
        {
            Ok(()) => ("AUTHORIZED", Some(Ok(l))),
            Err(reason) => ("DENIED", Some(Err((l, reason)))),
        },
    };
    // The commands the session may be resumed for (never empty: a 25.x
    // client refuses that).
    let mut valid: Vec<i32> = level.map(|l| daemon.commands_at(l)).unwrap_or_default();
    if !valid.contains(&command) {
        valid.push(command);
    }
    let mut pa = ClassAd::new();
    if let Some(u) = &peer.user {
        pa.insert_value("User", u.as_str());
    }
    if tried {
        pa.insert_value("TriedAuthentication", true);
    }
    pa.insert_value("Sid", sid.as_str());
    let list = valid
        .iter()
        .map(|c| c.to_string())
        .collect::<Vec<_>>()
        .join(",");
    pa.insert_value("ValidCommands", list.as_str());
    pa.insert_value("ReturnCode", code);
    let mut e = sock.encoder();
    put_ad(&mut e, &pa, &PutOptions::default());
    sock.send(&e)?;
    match outcome {
        None => Err(Refused::UnknownCommand { command, peer }),
        Some(Err((level, reason))) => Err(Refused::Denied {
            command,
            level,
            peer,
            reason,
        }),
        Some(Ok(level)) => {
            // Only a keyed session may be resumed (a 25.x client resuming
            // an unkeyed one misbehaves); an unkeyed one is forgotten, and
            // its resumption answered SID_NOT_FOUND.
            if let Some(key) = key {
                let expires = now + decision.session_duration.max(0) + SESSION_SLOP;
                sessions.insert(
                    sid,
                    Session {
                        peer_user: peer.user.clone(),
                        method: peer.method.clone(),
                        limits: peer.limits,
                        commands: valid,
                        key,
                        peer_ip: Some(peer.addr.ip()),
                        brokered: false,
                        expires,
                        lease: decision
                            .session_lease
                            .filter(|l| *l > 0)
                            .map(|l| l + SESSION_SLOP),
                        last_used: now,
                    },
                );
            }
            Ok(Accepted {
                command,
                level,
                peer,
                bare_payload: None,
                sec_query,
            })
        }
    }
}

#[allow(clippy::result_large_err)]
fn resume(
    sock: &mut Sock,
    daemon: &dyn Daemon,
    sessions: &Sessions,
    info: &ClassAd,
    command: i32,
    now: i64,
) -> Result<Accepted, Refused> {
    let sid = text(info, "Sid").ok_or_else(|| {
        Refused::Protocol(format!(
            "{} asked to resume a session without naming it",
            sock.peer().ip()
        ))
    })?;
    let want_response = match info.eval_attr("ResumeResponse", &classad::Env::default()) {
        Value::Bool(b) => b,
        _ => false,
    };
    let anonymous = Peer {
        user: None,
        method: None,
        addr: sock.peer(),
        limits: None,
        brokered: None,
    };
    let session = sessions.resume(&sid, now);
    // The session must be for this command and resumed from the address
    // it was made from: an id alone does not prove who holds it.
    let from = sock.peer().ip();
    let Some(session) =
        session.filter(|s| s.commands.contains(&command) && s.peer_ip.is_none_or(|ip| ip == from))
    else {
        if want_response {
            let mut ad = ClassAd::new();
            ad.insert_value("ReturnCode", "SID_NOT_FOUND");
            let mut e = sock.encoder();
            put_ad(&mut e, &ad, &PutOptions::default());
            sock.send(&e)?;
        }
        return Err(Refused::Security {
            command,
            peer: anonymous,
            reason: format!("it resumed session {sid}, which this daemon does not have (or not for this command)"),
        });
    };
    let peer = Peer {
        user: session.peer_user.clone(),
        method: session.method.clone(),
        addr: sock.peer(),
        limits: session.limits,
        brokered: session.brokered.then(|| sid.clone()),
    };
    let level = daemon.level(command).ok_or(Refused::UnknownCommand {
        command,
        peer: peer.clone(),
    })?;
    if want_response {
        let mut ad = ClassAd::new();
        ad.insert_value("ReturnCode", "AUTHORIZED");
        ad.insert_value("RemoteVersion", daemon.version());
        ad.insert_value("Nonce", auth::nonce().as_str());
        let mut e = sock.encoder();
        put_ad(&mut e, &ad, &PutOptions::default());
        sock.send(&e)?;
    }
    // The cached key, a fresh IV and counters for this connection.
    sock.start_cipher(Box::new(StreamCipher::new(&session.key)));
    if let Some(reason) = peer.outside_limits(level) {
        return Err(Refused::Denied {
            command,
            level,
            peer,
            reason,
        });
    }
    daemon
        .authorize(&peer, level)
        .map_err(|reason| Refused::Denied {
            command,
            level,
            peer: peer.clone(),
            reason,
        })?;
    Ok(Accepted {
        command,
        level,
        peer,
        bare_payload: None,
        sec_query: false,
    })
}

enum AuthFailure {
    Sock(SockError),
    Failed(String),
    /// Failed where the client cannot be told but by closing.
    Fatal(String),
}

/// The method negotiation and the chosen method's exchange; a method that
/// fails is dropped from the client's offer and the next is tried, as
/// HTCondor does. Returns `user@domain` and the method's name.
fn authenticate(
    sock: &mut Sock,
    daemon: &dyn Daemon,
    decision: &Decision,
    now: i64,
) -> Result<(auth::Authenticated, String), AuthFailure> {
    let ours: Vec<Method> = decision
        .auth_methods
        .iter()
        .filter_map(|m| Method::from_name(m))
        .collect();
    let mut failures: Vec<String> = Vec::new();
    let mut client_mask: Option<i64> = None;
    loop {
        // Each round, the client says what it can still do.
        let msg = sock.recv().map_err(AuthFailure::Sock)?;
        let mut d = sock.decoder(&msg);
        let mask = d
            .get_int()
            .map_err(|e| AuthFailure::Sock(SockError::Decode(e)))?;
        d.finish()
            .map_err(|e| AuthFailure::Sock(SockError::Decode(e)))?;
        let mask = client_mask.map_or(mask, |m| m & mask);
        let chosen = ours.iter().copied().find(|m| mask & m.bit() != 0);
        let mut e = sock.encoder();
        e.put_int(chosen.map_or(0, |m| m.bit()));
        sock.send(&e).map_err(AuthFailure::Sock)?;
        let Some(method) = chosen else {
            let offered = Method::names_in(mask);
            return Err(AuthFailure::Failed(if failures.is_empty() {
                format!(
                    "no method in common (the client offered {}, this daemon takes {})",
                    if offered.is_empty() {
                        "none".into()
                    } else {
                        offered.join(",")
                    },
                    decision.auth_methods.join(",")
                )
            } else {
                failures.join("; ")
            }));
        };
        match auth::server(method, sock, daemon.auth_settings(), now) {
            Ok(who) => return Ok((who, method.name().to_string())),
            Err(auth::Failure::Sock(e)) => return Err(AuthFailure::Sock(e)),
            Err(auth::Failure::Fatal(why)) => {
                failures.push(format!("{}: {why}", method.name()));
                return Err(AuthFailure::Fatal(failures.join("; ")));
            }
            Err(auth::Failure::Refused(why)) => {
                failures.push(format!("{}: {why}", method.name()));
                client_mask = Some(mask & !method.bit());
            }
        }
    }
}
