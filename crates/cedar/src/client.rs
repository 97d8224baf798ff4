//! The client's side of HTCondor's security handshake (what a 25.x
//! client's `SecMan::startCommand` does), over a [`Sock`]:
//!
//! 1. `DC_AUTHENTICATE` and our policy ad: the command, what we ask of
//!    authentication, encryption and integrity, our methods, our ECDH key
//!    (`Enact = "NO"`: the server decides and tells us).
//! 2. The server's decision. With authentication: our bitmask of methods,
//!    its choice, the method's exchange (FS, CLAIMTOBE, TOKEN), a failed
//!    method dropped and the next tried; then the server's `hasKey` (0).
//! 3. The session key from ECDH; AES-GCM on for the rest of the
//!    connection; the server's post-authentication ad (the session id,
//!    the commands it may be resumed for, our user, the verdict).
//!
//! Or, with a session the [`SessionCache`] holds for this address and
//! command, a resumption (`UseSession`): the server's short answer, and
//! AES-GCM on with the cached key. The command's payload follows either
//! way, and is the caller's.
//!
//! This module must never send a command's payload on a connection whose
//! handshake failed, never take a key the ECDH exchange did not make, and
//! never resume a session that has no key (a server that cannot encrypt
//! it would see a plaintext command as the session's user).

use std::collections::HashMap;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use classad::{ClassAd, Value};

use crate::ad::{get_ad, int_attr as int, put_ad, string_attr as text, PutOptions};
use crate::auth::{self, Failure, Method};
use crate::commands;
use crate::crypto::{KeyExchange, SessionKey, StreamCipher};
use crate::policy::{split_list, Requirement};
use crate::sinful::Sinful;
use crate::sock::{Sock, SockError};
use crate::token;

/// What this client asks of a connection and how it authenticates.
#[derive(Clone, Debug)]
pub struct ClientOptions {
    pub authentication: Requirement,
    pub encryption: Requirement,
    pub integrity: Requirement,
    /// Our methods in order (FS, TOKEN, CLAIMTOBE). TOKEN is offered only
    /// with a token in [`ClientOptions::tokens`].
    pub methods: Vec<Method>,
    /// The name CLAIMTOBE claims (`user@domain`, or `user`).
    pub claim_to_be: Option<String>,
    /// Tokens we may send; the first the server would take is sent.
    pub tokens: Vec<token::Candidate>,
    /// Seconds a new session lasts (the server may shorten it).
    pub session_duration: i64,
    pub session_lease: i64,
    /// The deadline of each read and write, and of the connect.
    pub timeout: Duration,
    /// `Subsystem` in our policy ad (`TOOL`, `SCHEDD`, ...).
    pub subsystem: String,
}

impl Default for ClientOptions {
    /// HTCondor's client defaults: everything OPTIONAL, FS then TOKEN, a
    /// 60 s session, 20 s deadlines.
    fn default() -> Self {
        ClientOptions {
            authentication: Requirement::Optional,
            encryption: Requirement::Optional,
            integrity: Requirement::Optional,
            methods: vec![Method::Fs, Method::Token],
            claim_to_be: None,
            tokens: Vec::new(),
            session_duration: 60,
            session_lease: 3600,
            timeout: crate::sock::DEFAULT_TIMEOUT,
            subsystem: "TOOL".into(),
        }
    }
}

impl ClientOptions {
    /// The options a tool's configuration gives (`get` looks a parameter
    /// up): SEC_CLIENT_* then SEC_DEFAULT_* for the levels and methods,
    /// the tokens in SEC_TOKEN_DIRECTORY (else `~/.condor/tokens.d`, else
    /// SEC_TOKEN_SYSTEM_DIRECTORY), SEC_CLAIMTOBE_USER and
    /// SEC_CLAIMTOBE_INCLUDE_DOMAIN with UID_DOMAIN.
    pub fn from_lookup(get: &dyn Fn(&str) -> Option<String>, hostname: &str) -> ClientOptions {
        let get = |n: &str| get(n).filter(|v| !v.trim().is_empty());
        let level = |what: &str| {
            get(&format!("SEC_CLIENT_{what}"))
                .or_else(|| get(&format!("SEC_DEFAULT_{what}")))
                .and_then(|v| Requirement::parse(&v))
                .unwrap_or(Requirement::Optional)
        };
        let mut o = ClientOptions {
            authentication: level("AUTHENTICATION"),
            encryption: level("ENCRYPTION"),
            integrity: level("INTEGRITY"),
            ..ClientOptions::default()
        };
        if let Some(list) = get("SEC_CLIENT_AUTHENTICATION_METHODS")
            .or_else(|| get("SEC_DEFAULT_AUTHENTICATION_METHODS"))
        {
            o.methods = split_list(&list).filter_map(Method::from_name).collect();
        }
        let uid_domain = get("UID_DOMAIN").unwrap_or_else(|| hostname.to_string());
        let user = get("SEC_CLAIMTOBE_USER").or_else(|| {
            // SAFETY: geteuid cannot fail.
            auth::user_name(unsafe { libc::geteuid() })
        });
        let include_domain = get("SEC_CLAIMTOBE_INCLUDE_DOMAIN")
            .is_none_or(|v| v.trim().to_ascii_lowercase().starts_with('t'));
        o.claim_to_be = user.map(|u| {
            if include_domain && !u.contains('@') {
                format!("{u}@{uid_domain}")
            } else {
                u
            }
        });
        let dir = get("SEC_TOKEN_DIRECTORY").map(PathBuf::from).or_else(|| {
            let home = std::env::var_os("HOME").filter(|h| !h.is_empty())?;
            let d = PathBuf::from(home).join(".condor/tokens.d");
            d.is_dir().then_some(d)
        });
        let dir = dir.or_else(|| get("SEC_TOKEN_SYSTEM_DIRECTORY").map(PathBuf::from));
        if let Some(d) = dir {
            o.tokens = token::find_tokens(&d, Some(&o.subsystem));
        }
        o
    }

    /// A token given by value (HTCondor's security context), tried first.
    pub fn with_token(mut self, jwt: &str) -> Result<ClientOptions, token::TokenError> {
        let t = token::Token::parse(jwt)?;
        self.tokens.insert(
            0,
            token::Candidate {
                token: t,
                source: "given".into(),
            },
        );
        Ok(self)
    }
}

/// What the handshake established.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Session {
    /// The server's id for the session.
    pub sid: String,
    /// Who the server says we are (`user@domain`), if we authenticated.
    pub user: Option<String>,
    /// The method that authenticated us.
    pub method: Option<String>,
    /// The commands the session may be resumed for.
    pub valid_commands: Vec<i32>,
    /// Whether this connection resumed a cached session.
    pub resumed: bool,
    /// Whether the connection is encrypted (AES-GCM).
    pub encrypted: bool,
    /// The server's `RemoteVersion`.
    pub server_version: Option<String>,
}

/// A session the server gave us, for resumption.
#[derive(Clone, Debug)]
struct Cached {
    session: Session,
    key: SessionKey,
    expires: Instant,
}

/// Sessions for resumption, by the server's address and command, as a
/// 25.x client keeps them. The caller keeps one for as long as it talks
/// to the same servers (a tool: its run; a daemon: its life).
#[derive(Default)]
pub struct SessionCache {
    map: Mutex<HashMap<(String, i32), Cached>>,
}

/// The most sessions a cache keeps; past it, the oldest go.
const MAX_CACHED: usize = 4096;

impl SessionCache {
    pub fn new() -> SessionCache {
        SessionCache::default()
    }

    fn get(&self, addr: &str, command: i32) -> Option<Cached> {
        let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        let key = (addr.to_string(), command);
        match map.get(&key) {
            Some(c) if c.expires > Instant::now() => Some(c.clone()),
            Some(_) => {
                map.remove(&key);
                None
            }
            None => None,
        }
    }

    fn insert(&self, addr: &str, c: Cached) {
        let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        if map.len() + c.session.valid_commands.len() > MAX_CACHED {
            let now = Instant::now();
            map.retain(|_, v| v.expires > now);
            while map.len() + c.session.valid_commands.len() > MAX_CACHED {
                let Some(oldest) = map
                    .iter()
                    .min_by_key(|(_, v)| v.expires)
                    .map(|(k, _)| k.clone())
                else {
                    break;
                };
                map.remove(&oldest);
            }
        }
        for cmd in &c.session.valid_commands {
            map.insert((addr.to_string(), *cmd), c.clone());
        }
    }

    /// Forgets a session (the server no longer has it).
    pub fn forget(&self, sid: &str) {
        let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        map.retain(|_, v| v.session.sid != sid);
    }

    pub fn len(&self) -> usize {
        self.map.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Why a connection could not be set up. Each says what the server did
/// and, where we can tell, why.
#[derive(Debug)]
pub enum ClientError {
    /// The TCP connection itself.
    Connect {
        addr: String,
        source: std::io::Error,
    },
    Sock(SockError),
    /// The server closed the connection without a decision: it does not
    /// serve the command, or our policies cannot agree.
    Closed {
        addr: String,
        command: i32,
    },
    /// Every method we share with the server failed, and it requires one.
    Authentication(String),
    /// The server authenticated us (or not) and refused the command.
    Denied {
        code: String,
        user: Option<String>,
        method: Option<String>,
    },
    /// The server broke the protocol, or asked for what we refuse.
    Protocol(String),
}

impl std::fmt::Display for ClientError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClientError::Connect { addr, source } => write!(f, "cannot connect to {addr}: {source}"),
            ClientError::Sock(e) => write!(f, "{e}"),
            ClientError::Closed { addr, command } => write!(
                f,
                "{addr} closed the connection during security negotiation for {} (it does not serve the command, or its security policy and ours cannot agree)",
                commands::describe(*command)
            ),
            ClientError::Authentication(why) => write!(f, "could not authenticate: {why}"),
            ClientError::Denied { code, user, method } => write!(
                f,
                "the server answered {code} for {}{}",
                user.as_deref().unwrap_or("an unauthenticated client"),
                method.as_deref().map(|m| format!(" (authenticated by {m})")).unwrap_or_default()
            ),
            ClientError::Protocol(e) => f.write_str(e),
        }
    }
}

impl std::error::Error for ClientError {}

impl From<SockError> for ClientError {
    fn from(e: SockError) -> Self {
        ClientError::Sock(e)
    }
}

impl From<crate::DecodeError> for ClientError {
    fn from(e: crate::DecodeError) -> Self {
        ClientError::Sock(SockError::Decode(e))
    }
}

/// YES / NO in the server's decision; anything else is missing.
fn decided(ad: &ClassAd, name: &str) -> Result<bool, ClientError> {
    match text(ad, name).map(|s| s.to_ascii_uppercase()) {
        Some(s) if s == "YES" => Ok(true),
        Some(s) if s == "NO" => Ok(false),
        _ => Err(ClientError::Protocol(format!(
            "the server's decision has no {name} (YES or NO)"
        ))),
    }
}

fn resolve(addr: &Sinful, timeout: Duration) -> Result<(SocketAddr, Sock), ClientError> {
    let shown = addr.to_string();
    let candidates: Vec<SocketAddr> = match addr.socket_addr() {
        Some(a) => vec![a],
        None => (addr.host.as_str(), addr.port)
            .to_socket_addrs()
            .map_err(|source| ClientError::Connect {
                addr: shown.clone(),
                source,
            })?
            .collect(),
    };
    let mut last = None;
    for a in candidates {
        match Sock::connect(a, timeout) {
            Ok(s) => return Ok((a, s)),
            Err(e) => last = Some(e),
        }
    }
    Err(ClientError::Connect {
        addr: shown,
        source: last.unwrap_or_else(|| std::io::Error::other("the name has no address")),
    })
}

fn closed_is_refusal(e: SockError, addr: &Sinful, command: i32) -> ClientError {
    match e {
        SockError::Closed { .. } => ClientError::Closed {
            addr: addr.to_string(),
            command,
        },
        other => ClientError::Sock(other),
    }
}

/// Connects to `addr` for `command`: a resumed session when `cache`
/// holds one, else a new one (cached when the server keyed it). The
/// returned [`Sock`] carries the command's payload next.
pub fn connect(
    addr: &Sinful,
    command: i32,
    opts: &ClientOptions,
    cache: Option<&SessionCache>,
) -> Result<(Sock, Session), ClientError> {
    let cache_key = addr.to_string();
    if let Some(cached) = cache.and_then(|c| c.get(&cache_key, command)) {
        let (_, mut sock) = resolve(addr, opts.timeout)?;
        sock.set_timeout(opts.timeout).map_err(|e| {
            ClientError::Sock(SockError::Io {
                doing: "setting the deadline",
                source: e,
            })
        })?;
        match resume(&mut sock, addr, command, &cached) {
            Ok(session) => return Ok((sock, session)),
            Err(Resume::Gone) => {
                // The server forgot it (restarted, expired): a new
                // session, as HTCondor's client makes on its next call.
                if let Some(c) = cache {
                    c.forget(&cached.session.sid);
                }
            }
            Err(Resume::Failed(e)) => return Err(e),
        }
    }
    let (_, mut sock) = resolve(addr, opts.timeout)?;
    let _ = sock.set_timeout(opts.timeout);
    let (session, key) = new_session(&mut sock, addr, command, opts)?;
    if let (Some(cache), Some((key, seconds))) = (cache, key) {
        let expires = Instant::now() + Duration::from_secs(seconds);
        cache.insert(
            &cache_key,
            Cached {
                session: session.clone(),
                key,
                expires,
            },
        );
    }
    Ok((sock, session))
}

/// Connects to `addr` for `command` in the session `cap` names (one
/// registered on both sides without a handshake:
/// [`crate::capability`]), with no other authentication. A server that
/// does not have the session (never given, expired, its claim over)
/// answers SID_NOT_FOUND, which is [`ClientError::Denied`].
pub fn resume_session(
    addr: &Sinful,
    command: i32,
    cap: &crate::capability::Capability,
    timeout: Duration,
) -> Result<(Sock, Session), ClientError> {
    let (_, mut sock) = resolve(addr, timeout)?;
    let _ = sock.set_timeout(timeout);
    let cached = Cached {
        session: Session {
            sid: cap.id().to_string(),
            user: None,
            method: Some("MATCH".into()),
            valid_commands: cap.commands(),
            resumed: true,
            encrypted: true,
            server_version: None,
        },
        key: cap.key(),
        expires: Instant::now() + timeout,
    };
    match resume(&mut sock, addr, command, &cached) {
        Ok(session) => Ok((sock, session)),
        Err(Resume::Gone) => Err(ClientError::Denied {
            code: "SID_NOT_FOUND".into(),
            user: None,
            method: Some(format!("MATCH, session {}", cap.public())),
        }),
        Err(Resume::Failed(e)) => Err(e),
    }
}

enum Resume {
    /// SID_NOT_FOUND: try a new session.
    Gone,
    Failed(ClientError),
}

fn resume(
    sock: &mut Sock,
    addr: &Sinful,
    command: i32,
    cached: &Cached,
) -> Result<Session, Resume> {
    let fail = |e: ClientError| Resume::Failed(e);
    let mut ad = ClassAd::new();
    ad.insert_value("UseSession", "YES");
    ad.insert_value("Sid", cached.session.sid.as_str());
    ad.insert_value("Command", command as i64);
    ad.insert_value("ConnectSinful", addr.to_string().as_str());
    ad.insert_value("RemoteVersion", crate::CONDOR_VERSION);
    ad.insert_value("CryptoMethods", "AES");
    ad.insert_value("Nonce", auth::nonce().as_str());
    ad.insert_value("ResumeResponse", true);
    let mut e = sock.encoder();
    e.put_int(commands::DC_AUTHENTICATE as i64);
    put_ad(&mut e, &ad, &PutOptions::default());
    sock.send(&e).map_err(|e| fail(e.into()))?;
    let msg = sock
        .recv()
        .map_err(|e| fail(closed_is_refusal(e, addr, command)))?;
    let mut d = sock.decoder(&msg);
    let reply = get_ad(&mut d).map_err(|e| fail(e.into()))?;
    d.finish().map_err(|e| fail(e.into()))?;
    match text(&reply, "ReturnCode").as_deref() {
        Some("AUTHORIZED") => {}
        Some("SID_NOT_FOUND") => return Err(Resume::Gone),
        other => {
            return Err(fail(ClientError::Denied {
                code: other.unwrap_or("no answer").to_string(),
                user: cached.session.user.clone(),
                method: cached.session.method.clone(),
            }))
        }
    }
    sock.start_cipher(Box::new(StreamCipher::new(&cached.key)));
    Ok(Session {
        resumed: true,
        encrypted: true,
        server_version: text(&reply, "RemoteVersion").or(cached.session.server_version.clone()),
        ..cached.session.clone()
    })
}

fn new_session(
    sock: &mut Sock,
    addr: &Sinful,
    command: i32,
    opts: &ClientOptions,
) -> Result<(Session, Option<(SessionKey, u64)>), ClientError> {
    let kx = KeyExchange::new();
    let methods: Vec<Method> = opts
        .methods
        .iter()
        .copied()
        .filter(|m| *m != Method::Token || !opts.tokens.is_empty())
        .collect();
    let mut ad = ClassAd::new();
    ad.insert_value("Command", command as i64);
    if command == commands::DC_AUTHENTICATE || command == commands::DC_SEC_QUERY {
        ad.insert_value("AuthCommand", command as i64);
    }
    // Servers older than 23.10 read only Authentication, which HTCondor
    // raises to what encryption and integrity need.
    let legacy_auth = opts.authentication.max(opts.encryption).max(opts.integrity);
    ad.insert_value("Authentication", legacy_auth.as_str());
    ad.insert_value("AuthenticationNew", opts.authentication.as_str());
    ad.insert_value("Encryption", opts.encryption.as_str());
    ad.insert_value("Integrity", opts.integrity.as_str());
    let names: Vec<&str> = methods.iter().map(|m| m.name()).collect();
    if !names.is_empty() {
        ad.insert_value("AuthMethods", names.join(",").as_str());
    }
    ad.insert_value("CryptoMethods", "AES");
    ad.insert_value("ECDHPublicKey", kx.public_base64().as_str());
    ad.insert_value("NewSession", "YES");
    ad.insert_value("NegotiatedSession", true);
    ad.insert_value("OutgoingNegotiation", "PREFERRED");
    ad.insert_value("Enact", "NO");
    ad.insert_value(
        "SessionDuration",
        opts.session_duration.to_string().as_str(),
    );
    ad.insert_value("SessionLease", opts.session_lease);
    ad.insert_value("RemoteVersion", crate::CONDOR_VERSION);
    ad.insert_value("ConnectSinful", addr.to_string().as_str());
    ad.insert_value("Subsystem", opts.subsystem.as_str());
    ad.insert_value("ServerPid", std::process::id() as i64);
    let mut e = sock.encoder();
    e.put_int(commands::DC_AUTHENTICATE as i64);
    put_ad(&mut e, &ad, &PutOptions::default());
    sock.send(&e)?;
    // M2: the decision.
    let msg = sock
        .recv()
        .map_err(|e| closed_is_refusal(e, addr, command))?;
    let mut d = sock.decoder(&msg);
    let decision = get_ad(&mut d)?;
    d.finish()?;
    let authentication = decided(&decision, "Authentication")?;
    let encryption = decided(&decision, "Encryption")?;
    let _integrity = decided(&decision, "Integrity")?;
    let mut user_method: Option<String> = None;
    if authentication {
        let list = text(&decision, "AuthMethodsList")
            .or_else(|| text(&decision, "AuthMethods"))
            .unwrap_or_default();
        let theirs: Vec<Method> = split_list(&list).filter_map(Method::from_name).collect();
        let required = !matches!(
            decision.eval_attr("AuthRequired", &classad::Env::default()),
            Value::Bool(false)
        );
        match authenticate(sock, &theirs, &methods, opts, &decision) {
            Ok(m) => {
                // hasKey: keys come from ECDH, never from the method.
                let msg = sock.recv()?;
                let mut d = sock.decoder(&msg);
                let has_key = d.get_int()?;
                d.finish()?;
                if has_key != 0 {
                    return Err(ClientError::Protocol(
                        "the server sent a method-wrapped key (legacy); ferrocondor takes only ECDH keys".into(),
                    ));
                }
                user_method = Some(m.name().to_string());
            }
            Err(AuthError::Sock(e)) => return Err(e.into()),
            Err(AuthError::Failed(why)) if required => {
                return Err(ClientError::Authentication(why))
            }
            Err(AuthError::Failed(_)) => {}
        }
    }
    // The key: ECDH when the server answered with its half and AES.
    let key = match text(&decision, "ECDHPublicKey") {
        Some(theirs)
            if text(&decision, "CryptoMethods").is_some_and(|c| {
                split_list(&c)
                    .next()
                    .is_some_and(|m| m.eq_ignore_ascii_case("AES"))
            }) =>
        {
            Some(kx.finish(&theirs).map_err(ClientError::Protocol)?)
        }
        _ => None,
    };
    match &key {
        Some(k) => sock.start_cipher(Box::new(StreamCipher::new(k))),
        None if encryption => {
            return Err(ClientError::Protocol(
                "the server wants encryption but gave no key (no ECDHPublicKey with AES)".into(),
            ))
        }
        None => {}
    }
    // M3: the verdict and the session.
    let msg = sock
        .recv()
        .map_err(|e| closed_is_refusal(e, addr, command))?;
    let mut d = sock.decoder(&msg);
    let post = get_ad(&mut d)?;
    d.finish()?;
    let user = text(&post, "User");
    let code = text(&post, "ReturnCode").unwrap_or_default();
    if code != "AUTHORIZED" {
        return Err(ClientError::Denied {
            code: if code.is_empty() {
                "no verdict".into()
            } else {
                code
            },
            user,
            method: user_method,
        });
    }
    let sid = text(&post, "Sid").ok_or_else(|| {
        ClientError::Protocol("the server's answer has no session id (Sid)".into())
    })?;
    let valid_commands: Vec<i32> = text(&post, "ValidCommands")
        .unwrap_or_default()
        .split(',')
        .filter_map(|c| c.trim().parse().ok())
        .collect();
    if valid_commands.is_empty() {
        return Err(ClientError::Protocol(
            "the server's answer lists no ValidCommands".into(),
        ));
    }
    // The server's duration is the one that counts (it may be shorter).
    let seconds = int(&decision, "SessionDuration")
        .unwrap_or(opts.session_duration)
        .min(opts.session_duration)
        .max(0) as u64;
    let encrypted = key.is_some();
    Ok((
        Session {
            sid,
            user,
            method: user_method,
            valid_commands,
            resumed: false,
            encrypted,
            server_version: text(&decision, "RemoteVersion"),
        },
        key.map(|k| (k, seconds)),
    ))
}

enum AuthError {
    Sock(SockError),
    Failed(String),
}

/// The method negotiation from our side: our mask of the methods we
/// share, the server's choice, the method; a failed method is dropped
/// and the rest offered again, as HTCondor's client does.
fn authenticate(
    sock: &mut Sock,
    theirs: &[Method],
    ours: &[Method],
    opts: &ClientOptions,
    decision: &ClassAd,
) -> Result<Method, AuthError> {
    let mut left: Vec<Method> = theirs
        .iter()
        .copied()
        .filter(|m| ours.contains(m))
        .collect();
    let mut failures: Vec<String> = Vec::new();
    loop {
        let mask = left.iter().fold(0, |m, x| m | x.bit());
        let mut e = sock.encoder();
        e.put_int(mask);
        sock.send(&e).map_err(AuthError::Sock)?;
        let msg = sock.recv().map_err(AuthError::Sock)?;
        let mut d = sock.decoder(&msg);
        let chosen = d
            .get_int()
            .map_err(|e| AuthError::Sock(SockError::Decode(e)))?;
        d.finish()
            .map_err(|e| AuthError::Sock(SockError::Decode(e)))?;
        let Some(method) = left.iter().copied().find(|m| m.bit() == chosen) else {
            // The usual reason a tool on another host fails: it has no
            // token (so it did not offer TOKEN, and the server's list
            // does not name it either).
            if !failures.is_empty()
                && opts.methods.contains(&Method::Token)
                && opts.tokens.is_empty()
            {
                failures.push(
                    "TOKEN: this client has no token (SEC_TOKEN_DIRECTORY, else \
                     ~/.condor/tokens.d; the pool's administrator makes one with \
                     `token create`)"
                        .into(),
                );
            }
            return Err(AuthError::Failed(if failures.is_empty() {
                format!(
                    "no method in common (we offer {}, the server takes {})",
                    ours.iter().map(|m| m.name()).collect::<Vec<_>>().join(","),
                    theirs
                        .iter()
                        .map(|m| m.name())
                        .collect::<Vec<_>>()
                        .join(",")
                )
            } else {
                failures.join("; ")
            }));
        };
        let outcome = match method {
            Method::Fs => auth::fs_client(sock),
            Method::ClaimToBe => {
                auth::claim_to_be_client(sock, opts.claim_to_be.as_deref().unwrap_or(""))
            }
            Method::Token => {
                let td = text(decision, "TrustDomain");
                let keys: Option<Vec<String>> = text(decision, "IssuerKeys")
                    .map(|k| split_list(&k).map(str::to_string).collect());
                let chosen = token::choose(&opts.tokens, td.as_deref(), keys.as_deref());
                token::client(sock, chosen).map(|_| ())
            }
            Method::Anonymous => {
                // The server says yes; there is nothing to send.
                let reply = sock.recv().map_err(Failure::Sock);
                reply.and_then(|m| {
                    let mut d = sock.decoder(&m);
                    match d.get_int() {
                        Ok(1) => Ok(()),
                        Ok(_) => Err(Failure::Refused("the server refused".into())),
                        Err(e) => Err(Failure::Sock(SockError::Decode(e))),
                    }
                })
            }
            other => Err(Failure::Refused(format!(
                "{} is not carried out here",
                other.name()
            ))),
        };
        match outcome {
            Ok(()) => return Ok(method),
            Err(Failure::Sock(e)) => return Err(AuthError::Sock(e)),
            Err(Failure::Refused(why)) | Err(Failure::Fatal(why)) => {
                failures.push(format!("{}: {why}", method.name()));
                left.retain(|m| *m != method);
            }
        }
    }
}
