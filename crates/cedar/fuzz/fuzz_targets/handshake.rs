//! Any bytes, sent by a "client" to `cedar::server::accept`: the server
//! reads them from memory (a read past their end finds the connection
//! closed) and its answers are thrown away. The daemon takes every level
//! as OPTIONAL, with CLAIMTOBE and FS. The handshake must end, in Ok or
//! Err, for every input.
//!
//! The session cache lives across inputs, so a resumption can meet a
//! session an earlier input made (only keyed sessions are kept, and a
//! fuzzer cannot finish an ECDH exchange, so in practice it stays empty).

#![no_main]

use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::sync::OnceLock;

use cedar::auth::Settings;
use cedar::policy::{Policy, Requirement};
use cedar::server::{accept, Daemon, Level, Peer, Sessions};
use cedar::Sock;
use libfuzzer_sys::fuzz_target;

/// Reads come from the input; writes go nowhere.
struct Client {
    input: io::Cursor<Vec<u8>>,
}

impl Read for Client {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.input.read(buf)
    }
}

impl Write for Client {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

struct FuzzDaemon {
    settings: Settings,
}

/// A few commands at a few levels, the rest unknown.
fn level_of(command: i32) -> Option<Level> {
    match command {
        5 | 6 | 48 => Some(Level::Read),
        0..=2 => Some(Level::AdvertiseStartd),
        1000..=1010 => Some(Level::Write),
        60020..=60029 => Some(Level::Allow),
        60030..=60039 => Some(Level::Administrator),
        _ => None,
    }
}

impl Daemon for FuzzDaemon {
    fn level(&self, command: i32) -> Option<Level> {
        level_of(command)
    }

    fn commands_at(&self, level: Level) -> Vec<i32> {
        [0, 1, 2, 5, 6, 48, 1000, 1001, 60020, 60030]
            .into_iter()
            .filter(|c| level_of(*c) == Some(level))
            .collect()
    }

    fn policy(&self, _level: Level) -> Policy {
        Policy {
            authentication: Requirement::Optional,
            encryption: Requirement::Optional,
            integrity: Requirement::Optional,
            auth_methods: vec!["FS".into(), "CLAIMTOBE".into()],
            crypto_methods: vec!["AES".into()],
            session_duration: 3600,
            session_lease: 3600,
        }
    }

    fn authorize(&self, peer: &Peer, level: Level) -> Result<(), String> {
        match level {
            Level::Allow | Level::Read => Ok(()),
            _ if peer.user.is_some() => Ok(()),
            _ => Err(format!(
                "{} level needs an authenticated user",
                level.name()
            )),
        }
    }

    fn auth_settings(&self) -> &Settings {
        &self.settings
    }

    fn version(&self) -> &str {
        cedar::CONDOR_VERSION
    }

    fn trust_domain(&self) -> Option<&str> {
        Some("fuzz.example")
    }
}

fn fixtures() -> &'static (FuzzDaemon, Sessions) {
    static F: OnceLock<(FuzzDaemon, Sessions)> = OnceLock::new();
    F.get_or_init(|| {
        // FS checks a directory under FS_LOCAL_DIR that nobody made.
        let fs_dir = std::env::temp_dir().to_string_lossy().into_owned();
        let get = |name: &str| match name {
            "UID_DOMAIN" => Some("fuzz.example".to_string()),
            "FS_LOCAL_DIR" => Some(fs_dir.clone()),
            _ => None,
        };
        let settings = Settings::from_lookup(&get, "fuzzhost");
        (FuzzDaemon { settings }, Sessions::new("fuzzhost"))
    })
}

fuzz_target!(|data: &[u8]| {
    let (daemon, sessions) = fixtures();
    let local: SocketAddr = "127.0.0.1:9618".parse().expect("an address");
    let peer: SocketAddr = "127.0.0.1:40000".parse().expect("an address");
    let client = Client {
        input: io::Cursor::new(data.to_vec()),
    };
    let mut sock = Sock::over(client, local, peer);
    // Every outcome is fine but a panic or a hang; what it says must print.
    let said = match accept(&mut sock, daemon, sessions, 1_700_000_000) {
        Ok(a) => format!(
            "accepted {} at {:?} from {}",
            a.command,
            a.level,
            a.peer.describe()
        ),
        Err(e) => format!("refused: {e}"),
    };
    // CEDAR_FUZZ_SAY=1: say each input's outcome (to check the seeds).
    static SAY: OnceLock<bool> = OnceLock::new();
    if *SAY.get_or_init(|| std::env::var_os("CEDAR_FUZZ_SAY").is_some()) {
        eprintln!("{said}");
    }
    sock.close();
});
