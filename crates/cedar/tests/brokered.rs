//! Sessions registered on both sides without a handshake (HTCondor's
//! non-negotiated sessions, `cedar::capability`): a server that has no
//! signing key and no method in common with the client still serves a
//! client that resumes a session both were given, and refuses one with
//! the wrong key, an unknown id or an expired session.

use std::net::TcpListener;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use cedar::auth::Settings;
use cedar::capability::Capability;
use cedar::client::{resume_session, ClientError};
use cedar::policy::{Policy, Requirement};
use cedar::server::{accept, Daemon, Level, LevelSet, Peer, Sessions};
use cedar::{Sinful, Sock};

const CLAIM_CMD: i32 = 95000; // DAEMON
const OTHER_CMD: i32 = 60011; // DAEMON too, not in the session's list
const NOW: i64 = 1_000_000;

/// A daemon with no methods at all: only registered sessions get in.
struct NoKeys {
    settings: Settings,
}

impl Daemon for NoKeys {
    fn level(&self, command: i32) -> Option<Level> {
        matches!(command, CLAIM_CMD | OTHER_CMD).then_some(Level::Daemon)
    }
    fn commands_at(&self, level: Level) -> Vec<i32> {
        [CLAIM_CMD, OTHER_CMD]
            .into_iter()
            .filter(|c| self.level(*c) == Some(level))
            .collect()
    }
    fn policy(&self, _level: Level) -> Policy {
        Policy {
            authentication: Requirement::Required,
            encryption: Requirement::Required,
            integrity: Requirement::Required,
            auth_methods: Vec::new(),
            crypto_methods: vec!["AES".into()],
            session_duration: 3600,
            session_lease: 3600,
        }
    }
    fn authorize(&self, peer: &Peer, level: Level) -> Result<(), String> {
        match (&peer.brokered, level) {
            (Some(_), Level::Daemon) => Ok(()),
            _ => Err("only a claim's session".into()),
        }
    }
    fn auth_settings(&self) -> &Settings {
        &self.settings
    }
    fn version(&self) -> &str {
        cedar::CONDOR_VERSION
    }
}

/// What a connection came to: the session it resumed and its user, or
/// the refusal.
type Outcome = Result<(Option<String>, Option<String>), String>;

/// A server whose sessions the test registers; each connection's
/// handshake, then an echo of one integer plus one. What each connection
/// came to (the session it resumed and the user, or the refusal) is sent
/// on the channel.
struct Server {
    addr: Sinful,
    sessions: Arc<Sessions>,
    outcomes: mpsc::Receiver<Outcome>,
}

fn server(now: i64) -> Server {
    let get = |n: &str| match n {
        "UID_DOMAIN" => Some("test.domain".to_string()),
        _ => None,
    };
    let daemon = Arc::new(NoKeys {
        settings: Settings::from_lookup(&get, "host"),
    });
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = Sinful::new(listener.local_addr().unwrap());
    let sessions = Arc::new(Sessions::new("host"));
    let (tx, rx) = mpsc::channel();
    let s = sessions.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            let (daemon, sessions, tx) = (daemon.clone(), s.clone(), tx.clone());
            std::thread::spawn(move || {
                let mut sock = Sock::new(stream).unwrap();
                sock.set_timeout(Duration::from_secs(5)).unwrap();
                match accept(&mut sock, &*daemon, &sessions, now) {
                    Ok(a) => {
                        let who = (a.peer.brokered.clone(), a.peer.user.clone());
                        let served = sock.recv().and_then(|msg| {
                            let mut d = sock.decoder(&msg);
                            let n = d.get_int()?;
                            let mut e = sock.encoder();
                            e.put_int(n + 1);
                            sock.send(&e)
                        });
                        let _ = tx.send(served.map(|()| who).map_err(|e| e.to_string()));
                    }
                    Err(e) => {
                        let _ = tx.send(Err(e.to_string()));
                    }
                }
            });
        }
    });
    Server {
        addr,
        sessions,
        outcomes: rx,
    }
}

impl Server {
    fn outcome(&self) -> Outcome {
        self.outcomes
            .recv_timeout(Duration::from_secs(5))
            .expect("the server reports every connection")
    }
}

fn echo(sock: &mut Sock, n: i64) -> Result<i64, cedar::SockError> {
    let mut e = sock.encoder();
    e.put_int(n);
    sock.send(&e)?;
    let msg = sock.recv()?;
    let mut d = sock.decoder(&msg);
    Ok(d.get_int()?)
}

fn daemon_only() -> Option<LevelSet> {
    let mut l = LevelSet::default();
    l.insert(Level::Daemon);
    Some(l)
}

/// The error of a connection that should not have been made.
fn refused<T>(r: Result<T, ClientError>) -> ClientError {
    match r {
        Ok(_) => panic!("the connection was made"),
        Err(e) => e,
    }
}

const T: Duration = Duration::from_secs(5);

#[test]
fn a_session_registered_on_both_sides_is_resumed_without_a_handshake() {
    let s = server(NOW);
    // The server's side made it; the client got it through a third party.
    let cap = Capability::mint("<127.0.0.1:1>#1", &[CLAIM_CMD]);
    s.sessions
        .register(&cap, "claim@test.domain", daemon_only(), NOW + 60, NOW);
    let given = Capability::parse(&cap.to_string()).unwrap();
    let (mut sock, session) = resume_session(&s.addr, CLAIM_CMD, &given, T).unwrap();
    assert!(session.resumed && session.encrypted);
    assert_eq!(session.sid, cap.id());
    assert_eq!(echo(&mut sock, 41).unwrap(), 42);
    assert_eq!(
        s.outcome(),
        Ok((Some(cap.id().to_string()), Some("claim@test.domain".into())))
    );
    // Again, on a new connection: a session is for many.
    let (mut sock, _) = resume_session(&s.addr, CLAIM_CMD, &given, T).unwrap();
    assert_eq!(echo(&mut sock, 1).unwrap(), 2);
    assert!(s.outcome().is_ok());
}

#[test]
fn a_wrong_key_an_unknown_id_an_expired_or_forgotten_session_are_refused() {
    let s = server(NOW);
    let cap = Capability::mint("<127.0.0.1:1>#1", &[CLAIM_CMD]);
    s.sessions
        .register(&cap, "claim@test.domain", daemon_only(), NOW + 60, NOW);

    // The right id with another key: the server cannot read what the
    // client sends, and serves nothing.
    let text = cap.to_string();
    let (public, _) = text.rsplit_once(']').unwrap();
    let forged = Capability::parse(&format!("{public}]{}", "ab".repeat(32))).unwrap();
    assert_eq!(forged.id(), cap.id());
    let (mut sock, _) = resume_session(&s.addr, CLAIM_CMD, &forged, T).unwrap();
    assert!(echo(&mut sock, 1).is_err());
    assert!(s.outcome().is_err());

    // A session nobody registered.
    let unknown = Capability::mint("<127.0.0.1:1>#1", &[CLAIM_CMD]);
    let e = refused(resume_session(&s.addr, CLAIM_CMD, &unknown, T));
    assert!(
        matches!(&e, ClientError::Denied { code, .. } if code == "SID_NOT_FOUND"),
        "{e}"
    );
    let why = s.outcome().unwrap_err();
    assert!(why.contains("does not have"), "{why}");

    // A command the session is not for.
    let e = refused(resume_session(&s.addr, OTHER_CMD, &cap, T));
    assert!(matches!(&e, ClientError::Denied { .. }), "{e}");
    assert!(s.outcome().is_err());

    // Forgotten (its claim ended).
    s.sessions.unregister(cap.id());
    let e = refused(resume_session(&s.addr, CLAIM_CMD, &cap, T));
    assert!(matches!(&e, ClientError::Denied { .. }), "{e}");
    assert!(s.outcome().is_err());

    // Expired: registered until before the server's now.
    let old = Capability::mint("<127.0.0.1:1>#1", &[CLAIM_CMD]);
    s.sessions
        .register(&old, "claim@test.domain", daemon_only(), NOW - 1, NOW - 100);
    let e = refused(resume_session(&s.addr, CLAIM_CMD, &old, T));
    assert!(matches!(&e, ClientError::Denied { .. }), "{e}");
    assert!(s.outcome().is_err());
    // Extending a session that is gone says so.
    assert!(!s.sessions.extend(old.id(), NOW + 60));
}

#[test]
fn without_a_session_a_server_with_no_method_refuses_with_a_reason() {
    let s = server(NOW);
    let o = cedar::client::ClientOptions {
        timeout: T,
        ..Default::default()
    };
    let e = refused(cedar::client::connect(&s.addr, CLAIM_CMD, &o, None));
    assert!(!e.to_string().is_empty());
    let why = s.outcome().unwrap_err();
    assert!(why.contains("no method is in common"), "{why}");
}
