//! The two sides of the security handshake against each other, on
//! 127.0.0.1: cedar's server (a small daemon) in a thread, cedar's client
//! connecting. Each test is well under a second.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use cedar::auth::{Method, Settings};
use cedar::client::{connect, ClientError, ClientOptions, SessionCache};
use cedar::policy::{Policy, Requirement};
use cedar::server::{accept, Daemon, Level, Peer, Sessions};
use cedar::token::{self, Candidate, NewToken, SigningKey, Token};
use cedar::{Sinful, Sock};

const QUERY: i32 = 5; // READ
const WRITE: i32 = 1112; // WRITE, authentication required
const ADMIN: i32 = 60011; // ADMINISTRATOR, only for "boss"
const TRUST: &str = "test.domain";

struct TestDaemon {
    settings: Settings,
    methods: Vec<String>,
    /// Whether to tell clients our TRUST_DOMAIN (off: they cannot filter
    /// tokens, so the server's own check is what refuses).
    tell_trust_domain: bool,
}

impl Daemon for TestDaemon {
    fn level(&self, command: i32) -> Option<Level> {
        match command {
            QUERY => Some(Level::Read),
            WRITE => Some(Level::Write),
            ADMIN => Some(Level::Administrator),
            _ => None,
        }
    }
    fn commands_at(&self, level: Level) -> Vec<i32> {
        [QUERY, WRITE, ADMIN]
            .into_iter()
            .filter(|c| self.level(*c) == Some(level))
            .collect()
    }
    fn policy(&self, level: Level) -> Policy {
        Policy {
            authentication: if level == Level::Read {
                Requirement::Optional
            } else {
                Requirement::Required
            },
            encryption: Requirement::Optional,
            integrity: Requirement::Optional,
            auth_methods: self.methods.clone(),
            crypto_methods: vec!["AES".into()],
            session_duration: 3600,
            session_lease: 3600,
        }
    }
    fn authorize(&self, peer: &Peer, level: Level) -> Result<(), String> {
        match level {
            Level::Read => Ok(()),
            Level::Administrator if peer.user_name() == Some("boss") => Ok(()),
            Level::Administrator => Err("ALLOW_ADMINISTRATOR takes only boss".into()),
            _ if peer.user.is_some() => Ok(()),
            _ => Err("not authenticated".into()),
        }
    }
    fn auth_settings(&self) -> &Settings {
        &self.settings
    }
    fn version(&self) -> &str {
        cedar::CONDOR_VERSION
    }
    fn trust_domain(&self) -> Option<&str> {
        self.tell_trust_domain
            .then_some(self.settings.trust_domain.as_str())
    }
}

/// A server on 127.0.0.1: each connection's handshake, then an echo of
/// one integer plus one. What each connection came to is sent on the
/// channel (the user, or the refusal).
struct Server {
    addr: SocketAddr,
    outcomes: mpsc::Receiver<Result<Option<String>, String>>,
    dir: PathBuf,
}

/// The server's state directory goes with it when the test passed; a
/// failed test keeps it to look at.
impl Drop for Server {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("scratch directory kept: {}", self.dir.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("cedar-handshake-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn server(name: &str, methods: &[&str], tell_trust_domain: bool) -> Server {
    let dir = scratch(name);
    let keys = dir.join("passwords.d");
    std::fs::create_dir_all(&keys).unwrap();
    write_private(&keys.join("POOL"), &[42u8; 64]);
    let get = |n: &str| match n {
        "UID_DOMAIN" => Some(TRUST.to_string()),
        _ => None,
    };
    let settings = Settings::from_lookup(&get, "host").with_state_dir(&dir);
    let daemon = Arc::new(TestDaemon {
        settings,
        methods: methods.iter().map(|m| m.to_string()).collect(),
        tell_trust_domain,
    });
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let sessions = Arc::new(Sessions::new("host"));
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            let (daemon, sessions, tx) = (daemon.clone(), sessions.clone(), tx.clone());
            std::thread::spawn(move || {
                let mut sock = Sock::new(stream).unwrap();
                sock.set_timeout(Duration::from_secs(5)).unwrap();
                match accept(&mut sock, &*daemon, &sessions, 1_000_000) {
                    Ok(a) => {
                        let _ = tx.send(Ok(a.peer.user.clone()));
                        let Ok(msg) = sock.recv() else { return };
                        let mut d = sock.decoder(&msg);
                        let n = d.get_int().unwrap_or(0);
                        let mut e = sock.encoder();
                        e.put_int(n + 1);
                        let _ = sock.send(&e);
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
        outcomes: rx,
        dir,
    }
}

fn write_private(path: &std::path::Path, bytes: &[u8]) {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .unwrap();
    f.write_all(bytes).unwrap();
}

impl Server {
    fn sinful(&self) -> Sinful {
        Sinful::new(self.addr)
    }

    fn outcome(&self) -> Result<Option<String>, String> {
        self.outcomes
            .recv_timeout(Duration::from_secs(5))
            .expect("the server reports every connection")
    }

    /// A token signed with this server's pool key.
    fn token(
        &self,
        subject: &str,
        issuer: &str,
        lifetime: Option<i64>,
        authz: &[String],
    ) -> String {
        let key = std::fs::read(self.dir.join("passwords.d/POOL")).unwrap();
        token::create(
            &NewToken {
                subject,
                issuer,
                kid: token::POOL,
                now: 1_000_000,
                lifetime,
                authz,
            },
            &SigningKey::from_file_bytes(&key, true, false),
        )
        .unwrap()
    }
}

fn opts(methods: &[Method]) -> ClientOptions {
    ClientOptions {
        methods: methods.to_vec(),
        timeout: Duration::from_secs(5),
        ..ClientOptions::default()
    }
}

fn with_token(mut o: ClientOptions, jwt: &str) -> ClientOptions {
    o.tokens = vec![Candidate {
        token: Token::parse(jwt).unwrap(),
        source: "test".into(),
    }];
    o
}

/// Sends `n`, reads the server's `n + 1`: the payload crosses the
/// connection both ways (encrypted where the session is keyed).
fn echo(sock: &mut Sock, n: i64) -> Result<i64, cedar::SockError> {
    let mut e = sock.encoder();
    e.put_int(n);
    sock.send(&e)?;
    let msg = sock.recv()?;
    let mut d = sock.decoder(&msg);
    Ok(d.get_int()?)
}

/// The error of a connection that should not have been made.
fn refused<T>(r: Result<T, ClientError>) -> ClientError {
    match r {
        Ok(_) => panic!("the connection was made"),
        Err(e) => e,
    }
}

fn me() -> String {
    // SAFETY: geteuid cannot fail.
    cedar::auth::user_name(unsafe { libc::geteuid() }).unwrap()
}

#[test]
fn a_read_needs_no_authentication_and_is_still_encrypted() {
    let s = server("read", &["FS"], true);
    let (mut sock, session) = connect(&s.sinful(), QUERY, &opts(&[Method::Fs]), None).unwrap();
    assert_eq!(session.user, None);
    assert!(session.encrypted && !session.resumed);
    assert!(session.valid_commands.contains(&QUERY));
    assert_eq!(echo(&mut sock, 41).unwrap(), 42);
    assert_eq!(s.outcome(), Ok(None));
}

#[test]
fn fs_authenticates_the_calling_user() {
    let s = server("fs", &["FS"], true);
    let (mut sock, session) = connect(&s.sinful(), WRITE, &opts(&[Method::Fs]), None).unwrap();
    let want = format!("{}@{TRUST}", me());
    assert_eq!(session.user.as_deref(), Some(want.as_str()));
    assert_eq!(session.method.as_deref(), Some("FS"));
    assert_eq!(echo(&mut sock, 1).unwrap(), 2);
    assert_eq!(s.outcome(), Ok(Some(want)));
}

#[test]
fn claimtobe_where_the_server_takes_it() {
    let s = server("claim", &["CLAIMTOBE"], true);
    let mut o = opts(&[Method::ClaimToBe]);
    o.claim_to_be = Some("alice".into());
    let (_, session) = connect(&s.sinful(), WRITE, &o, None).unwrap();
    assert_eq!(session.user.as_deref(), Some("alice@test.domain"));
    // A server that does not list CLAIMTOBE does not take it (it may
    // close at once or fail the negotiation: either way, no session).
    let s = server("claim-not", &["FS"], true);
    let _ = refused(connect(&s.sinful(), WRITE, &o, None));
    assert!(s.outcome().is_err());
}

#[test]
fn a_token_authenticates_its_subject_and_its_scopes_limit_it() {
    let s = server("token", &["TOKEN", "FS"], true);
    let jwt = s.token("carol@test.domain", TRUST, Some(600), &[]);
    let o = with_token(opts(&[Method::Token]), &jwt);
    let (mut sock, session) = connect(&s.sinful(), WRITE, &o, None).unwrap();
    assert_eq!(session.user.as_deref(), Some("carol@test.domain"));
    assert_eq!(session.method.as_deref(), Some("TOKEN"));
    assert_eq!(echo(&mut sock, 7).unwrap(), 8);
    assert_eq!(s.outcome(), Ok(Some("carol@test.domain".into())));
    // A READ-only token may read, not write.
    let jwt = s.token("carol@test.domain", TRUST, None, &["READ".into()]);
    let o = with_token(opts(&[Method::Token]), &jwt);
    let e = refused(connect(&s.sinful(), WRITE, &o, None));
    assert!(
        matches!(&e, ClientError::Denied { code, .. } if code == "DENIED"),
        "{e}"
    );
    let why = s.outcome().unwrap_err();
    assert!(why.contains("limited to READ"), "{why}");
}

#[test]
fn bad_tokens_are_refused_with_their_cause_and_the_next_method_is_tried() {
    // Without the trust domain told, the client sends what it has, and
    // the server's own checks refuse.
    let s = server("badtoken", &["TOKEN", "FS"], false);
    let cases = [
        (
            s.token("dave@test.domain", "elsewhere", None, &[]),
            "issued for another trust domain",
        ),
        (
            s.token("dave@test.domain", TRUST, Some(-10), &[]),
            "expired",
        ),
        (
            token::create(
                &NewToken {
                    subject: "dave@test.domain",
                    issuer: TRUST,
                    kid: token::POOL,
                    now: 1_000_000,
                    lifetime: None,
                    authz: &[],
                },
                &SigningKey::from_file_bytes(&[1u8; 64], true, false),
            )
            .unwrap(),
            "signed by a key this pool does not have",
        ),
        (
            token::create(
                &NewToken {
                    subject: "dave@test.domain",
                    issuer: TRUST,
                    kid: "OTHER",
                    now: 1_000_000,
                    lifetime: None,
                    authz: &[],
                },
                &SigningKey::from_file_bytes(&[1u8; 64], false, false),
            )
            .unwrap(),
            // The server lists the keys it has (IssuerKeys): the client
            // does not send a token signed with another.
            "the client has no token for this pool",
        ),
    ];
    for (jwt, cause) in &cases {
        // TOKEN alone: refused, and the server says why.
        let o = with_token(opts(&[Method::Token]), jwt);
        let e = refused(connect(&s.sinful(), WRITE, &o, None));
        assert!(matches!(e, ClientError::Authentication(_)), "{e}");
        let why = s.outcome().unwrap_err();
        assert!(why.contains(cause), "{cause}: {why}");
        // With FS behind it: FS is tried next and succeeds.
        let o = with_token(opts(&[Method::Token, Method::Fs]), jwt);
        let (_, session) = connect(&s.sinful(), WRITE, &o, None).unwrap();
        assert_eq!(session.method.as_deref(), Some("FS"));
        s.outcome().unwrap();
    }
}

#[test]
fn a_session_is_resumed_with_its_user() {
    let s = server("resume", &["FS"], true);
    let cache = SessionCache::new();
    let o = opts(&[Method::Fs]);
    let (mut sock, first) = connect(&s.sinful(), WRITE, &o, Some(&cache)).unwrap();
    assert_eq!(echo(&mut sock, 1).unwrap(), 2);
    s.outcome().unwrap();
    assert!(!cache.is_empty());
    let (mut sock, again) = connect(&s.sinful(), WRITE, &o, Some(&cache)).unwrap();
    assert!(again.resumed && again.encrypted);
    assert_eq!(again.sid, first.sid);
    assert_eq!(again.user, first.user);
    assert_eq!(echo(&mut sock, 10).unwrap(), 11);
    assert_eq!(s.outcome(), Ok(first.user.clone()));
    // Another command of the same level rides the same session; one of
    // another level does not.
    let (_, other) = connect(&s.sinful(), QUERY, &o, Some(&cache)).unwrap();
    assert!(!other.resumed);
    s.outcome().unwrap();
}

#[test]
fn a_refused_command_says_so() {
    let s = server("deny", &["FS"], true);
    let e = refused(connect(&s.sinful(), ADMIN, &opts(&[Method::Fs]), None));
    assert!(
        matches!(&e, ClientError::Denied { code, user: Some(_), .. } if code == "DENIED"),
        "{e}"
    );
    assert!(s
        .outcome()
        .unwrap_err()
        .contains("ALLOW_ADMINISTRATOR takes only boss"));
    // A command the server does not serve: closed, said so.
    let e = refused(connect(&s.sinful(), 4242, &opts(&[Method::Fs]), None));
    assert!(
        e.to_string().contains("closed the connection") || matches!(e, ClientError::Denied { .. }),
        "{e}"
    );
}

/// Relays bytes between a client and the server, flipping one byte of
/// the server's second packet (its first encrypted one: the post-auth
/// ad).
fn tampering_proxy(server: SocketAddr) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let (client, _) = listener.accept().unwrap();
        let upstream = TcpStream::connect(server).unwrap();
        let (mut c_read, mut u_write) =
            (client.try_clone().unwrap(), upstream.try_clone().unwrap());
        std::thread::spawn(move || {
            let _ = std::io::copy(&mut c_read, &mut u_write);
        });
        let (mut u_read, mut c_write) = (upstream, client);
        use std::io::{Read, Write};
        let mut packet = 0;
        loop {
            let mut h = [0u8; 5];
            if u_read.read_exact(&mut h).is_err() {
                return;
            }
            let n = u32::from_be_bytes([h[1], h[2], h[3], h[4]]) as usize;
            let mut body = vec![0u8; n];
            if u_read.read_exact(&mut body).is_err() {
                return;
            }
            packet += 1;
            if packet == 2 {
                let last = body.len() - 1;
                body[last / 2] ^= 0x40;
            }
            if c_write
                .write_all(&h)
                .and_then(|()| c_write.write_all(&body))
                .is_err()
            {
                return;
            }
        }
    });
    addr
}

#[test]
fn a_tampered_packet_is_refused_and_the_server_serves_on() {
    let s = server("tamper", &["FS"], true);
    let proxy = tampering_proxy(s.addr);
    let e = refused(connect(
        &Sinful::new(proxy),
        QUERY,
        &opts(&[Method::Fs]),
        None,
    ));
    assert!(e.to_string().contains("integrity check"), "{e}");
    s.outcome().unwrap();
    let (mut sock, _) = connect(&s.sinful(), QUERY, &opts(&[Method::Fs]), None).unwrap();
    assert_eq!(echo(&mut sock, 99).unwrap(), 100);
}
