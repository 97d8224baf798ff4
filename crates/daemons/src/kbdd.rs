//! The keyboard daemon (`KBDD` in DAEMON_LIST, HTCondor's condor_kbdd):
//! a process beside the startd that watches what the startd cannot see
//! from its own readings (tty access times, input interrupts): the
//! graphical sessions' idle time (logind's IdleHint and IdleSinceHint,
//! which GNOME, KDE and other desktops keep) and the input devices
//! (`/dev/input/event*`: any key, button or motion event). Every
//! [`POLL`] it looks; when someone was active since the last look it
//! sends the startd X_EVENT_NOTIFICATION, as HTCondor's kbdd does, and
//! the startd counts that moment as the keyboard's and the console's
//! last use ([`with_x_event`]): KeyboardIdle and ConsoleIdle are the
//! smaller of its own readings and the time since the last notification.
//! A machine without a session keeps the startd's own readings.
//!
//! What counts as activity ([`Detector`]) and how a notification changes
//! the readings ([`with_x_event`]) are pure; [`Sources`] reads the
//! machine, and [`run`] is the loop. Touches only `/dev/input` (read) and
//! the roles' address file of the startd (the tidy test's list).

use std::io::Read;
use std::path::Path;
use std::time::Duration;

/// HTCondor's command number (SCHED_VERS + 27).
pub use cedar::commands::X_EVENT_NOTIFICATION;

/// How often the kbdd looks (HTCondor's kbdd: every 5 s).
pub const POLL: Duration = Duration::from_secs(5);

/// One look at the machine.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Look {
    /// Seconds since a graphical session was last used, the least over
    /// the sessions; `None` where there is no session to ask.
    pub session_idle: Option<u64>,
    /// Input events (keys, buttons, motion) since the last look.
    pub input_events: u64,
}

/// Decides, look after look, whether someone used the machine since the
/// previous look.
#[derive(Clone, Debug, Default)]
pub struct Detector {
    last_session_idle: Option<u64>,
}

impl Detector {
    /// Whether `look`, taken `interval` seconds after the previous one,
    /// shows activity: an input event, a session idle for less than the
    /// interval, or a session whose idle time went back (used and idle
    /// again in between).
    pub fn active(&mut self, look: &Look, interval: u64) -> bool {
        let session = match (look.session_idle, self.last_session_idle) {
            (Some(now), Some(before)) => now < interval || now < before,
            (Some(now), None) => now < interval,
            (None, _) => false,
        };
        self.last_session_idle = look.session_idle;
        look.input_events > 0 || session
    }
}

/// The startd's readings with the kbdd's word: the keyboard and the
/// console were used at `last_x_event` (HTCondor's sysapi takes the
/// smaller idle time).
pub fn with_x_event(
    mut readings: startd::Readings,
    last_x_event: Option<i64>,
    now: i64,
) -> startd::Readings {
    if let Some(t) = last_x_event {
        let idle = (now - t).max(0);
        readings.keyboard_idle = readings.keyboard_idle.min(idle);
        readings.console_idle = readings.console_idle.min(idle);
    }
    readings
}

/// logind's answer for one session (`loginctl show-session`), as the
/// seconds it has been idle at `now` (epoch seconds): `None` for a
/// session that is not graphical and active.
pub fn session_idle(show: &str, now: i64) -> Option<u64> {
    let get = |name: &str| {
        show.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix('='))
            .map(str::trim)
    };
    let graphical = matches!(get("Type"), Some("x11" | "wayland" | "mir"));
    if !graphical || get("Active") == Some("no") {
        return None;
    }
    match get("IdleHint") {
        Some("no") => Some(0),
        Some("yes") => {
            // Microseconds since the epoch.
            let since: i64 = get("IdleSinceHint")?.parse().ok()?;
            Some((now - since / 1_000_000).max(0) as u64)
        }
        _ => None,
    }
}

/// What the machine offers to look at.
pub struct Sources {
    /// The input devices, opened without blocking; their events queue up
    /// between looks.
    inputs: Vec<std::fs::File>,
    /// Whether `loginctl` answers (logind runs).
    logind: bool,
}

/// An input event's size on a 64-bit Linux (`struct input_event`: a
/// timeval, type, code, value).
const EVENT_SIZE: usize = 24;
const EV_KEY: u16 = 1;
const EV_REL: u16 = 2;
const EV_ABS: u16 = 3;

impl Sources {
    /// Opens what there is: each readable `/dev/input/event*`, and logind
    /// if `loginctl` answers.
    pub fn open() -> Sources {
        use std::os::unix::fs::OpenOptionsExt;
        let mut inputs = Vec::new();
        if let Ok(dir) = std::fs::read_dir("/dev/input") {
            let mut names: Vec<_> = dir
                .flatten()
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with("event"))
                })
                .collect();
            names.sort();
            for p in names {
                if let Ok(f) = std::fs::OpenOptions::new()
                    .read(true)
                    .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
                    .open(&p)
                {
                    inputs.push(f);
                }
            }
        }
        let logind = std::process::Command::new("loginctl")
            .args(["list-sessions", "--no-legend"])
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .output()
            .is_ok_and(|o| o.status.success());
        Sources { inputs, logind }
    }

    /// What was found, for the log and for tests that need a session.
    pub fn describe(&self) -> String {
        format!(
            "{} input device(s), {}",
            self.inputs.len(),
            if self.logind {
                "logind's sessions"
            } else {
                "no logind"
            }
        )
    }

    /// Whether there is anything to watch.
    pub fn any(&self) -> bool {
        !self.inputs.is_empty() || self.logind
    }

    /// One look at `now`.
    pub fn look(&mut self, now: i64) -> Look {
        let mut events = 0;
        let mut buf = [0u8; EVENT_SIZE * 64];
        for f in &mut self.inputs {
            // Drain what queued since the last look.
            while let Ok(n) = f.read(&mut buf) {
                if n == 0 {
                    break;
                }
                for ev in buf[..n].chunks_exact(EVENT_SIZE) {
                    let kind = u16::from_ne_bytes([ev[16], ev[17]]);
                    if matches!(kind, EV_KEY | EV_REL | EV_ABS) {
                        events += 1;
                    }
                }
            }
        }
        Look {
            session_idle: self.logind.then(|| logind_idle(now)).flatten(),
            input_events: events,
        }
    }
}

/// The least idle time of logind's graphical sessions.
fn logind_idle(now: i64) -> Option<u64> {
    let list = std::process::Command::new("loginctl")
        .args(["list-sessions", "--no-legend"])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    let ids: Vec<String> = String::from_utf8_lossy(&list.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect();
    ids.iter()
        .filter_map(|id| {
            let o = std::process::Command::new("loginctl")
                .args([
                    "show-session",
                    id,
                    "-p",
                    "Type",
                    "-p",
                    "Active",
                    "-p",
                    "IdleHint",
                    "-p",
                    "IdleSinceHint",
                ])
                .stdin(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .output()
                .ok()?;
            session_idle(&String::from_utf8_lossy(&o.stdout), now)
        })
        .min()
}

/// The startd's address on this host, from the address file its process
/// writes in the roles directory (`<state>/roles/STARTD.address`).
pub fn startd_address(roles_dir: &Path) -> Result<cedar::Sinful, String> {
    let file = crate::role_transport::address_file(roles_dir, crate::roles::RoleName::Startd);
    let text = std::fs::read_to_string(&file).map_err(|e| {
        format!(
            "no startd's address in {} ({e}): the kbdd tells the startd that `ferrocondor master` runs on this host",
            file.display()
        )
    })?;
    let first = text.lines().next().unwrap_or("");
    cedar::Sinful::parse(first, 0).map_err(|e| format!("{}: {e}", file.display()))
}

/// Sends one X_EVENT_NOTIFICATION to the startd at `addr`: the command
/// alone, no payload (the handshake carries it).
pub fn notify(addr: &cedar::Sinful, client: &cedar::client::ClientOptions) -> Result<(), String> {
    cedar::client::connect(addr, X_EVENT_NOTIFICATION, client, None)
        .map(|_| ())
        .map_err(|e| format!("{addr}: {e}"))
}

/// Whether DAEMON_LIST names the keyboard daemon.
pub fn wanted(c: &config::Config) -> Result<bool, String> {
    Ok(c.list("DAEMON_LIST")
        .map_err(|e| e.to_string())?
        .iter()
        .any(|n| n.eq_ignore_ascii_case("KBDD")))
}

/// How long the master waits before it starts a keyboard daemon that
/// exited again.
const RESTART_AFTER: Duration = Duration::from_secs(10);

/// Under `ferrocondor master`: runs `program daemon KBDD --state
/// state_dir` on a thread of the master's, started again when it exits.
/// The keyboard daemon ends by itself once the master is gone.
pub fn supervise(program: std::path::PathBuf, state_dir: std::path::PathBuf) {
    let spawned = std::thread::Builder::new()
        .name("kbdd-supervisor".into())
        .spawn(move || loop {
            let child = std::process::Command::new(&program)
                .args(["daemon", "KBDD", "--state"])
                .arg(&state_dir)
                .env(crate::master::MASTER_PID_ENV, std::process::id().to_string())
                .spawn();
            match child {
                Ok(mut c) => {
                    eprintln!(
                        "ferrocondor master: started the keyboard daemon (pid {})",
                        c.id()
                    );
                    let status = c.wait();
                    eprintln!(
                        "ferrocondor master: the keyboard daemon exited ({}); restarting it in {} s",
                        status.map_or_else(|e| e.to_string(), |s| s.to_string()),
                        RESTART_AFTER.as_secs()
                    );
                }
                Err(e) => eprintln!("ferrocondor master: could not start the keyboard daemon: {e}"),
            }
            std::thread::sleep(RESTART_AFTER);
        });
    if let Err(e) = spawned {
        eprintln!("ferrocondor master: no thread for the keyboard daemon: {e}");
    }
}

/// How the kbdd runs (HTCondor's `-once` and `-once:true`).
#[derive(Clone, Copy, Debug, Default)]
pub struct Options {
    /// Look once, then exit.
    pub once: bool,
    /// Tell the startd of activity whatever is seen (with `once`: one
    /// notification, then exit).
    pub always_notify: bool,
}

/// The kbdd's loop: look every [`POLL`], tell the startd (found by
/// `startd` at each notification, so a restarted startd is found again)
/// when someone was active. Ends with `once`, or when the master that
/// started it (`master`, its parent's pid) is gone.
pub fn run(
    options: Options,
    mut startd: impl FnMut() -> Result<cedar::Sinful, String>,
    client: &cedar::client::ClientOptions,
    master: Option<i32>,
) -> Result<(), String> {
    let mut sources = Sources::open();
    eprintln!("ferrocondor kbdd: watching {}", sources.describe());
    let mut detector = Detector::default();
    let now = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs() as i64)
            .unwrap_or(0)
    };
    let mut said = false;
    loop {
        let look = sources.look(now());
        let active = detector.active(&look, POLL.as_secs());
        if active || options.always_notify {
            match startd().and_then(|a| notify(&a, client)) {
                Ok(()) => said = false,
                Err(e) if options.once => return Err(e),
                Err(e) => {
                    if !said {
                        eprintln!("ferrocondor kbdd: could not tell the startd: {e}");
                    }
                    said = true;
                }
            }
        }
        if options.once {
            return Ok(());
        }
        std::thread::sleep(POLL);
        // The master is gone once this process is no longer its child.
        // SAFETY: getppid cannot fail.
        if master.is_some_and(|pid| unsafe { libc::getppid() } != pid) {
            return Ok(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake idle source: the looks a session and devices would give.
    fn looks(d: &mut Detector, seq: &[(Option<u64>, u64)]) -> Vec<bool> {
        seq.iter()
            .map(|&(session_idle, input_events)| {
                d.active(
                    &Look {
                        session_idle,
                        input_events,
                    },
                    5,
                )
            })
            .collect()
    }

    #[test]
    fn activity_is_an_input_event_or_a_session_used_since_the_last_look() {
        let mut d = Detector::default();
        assert_eq!(
            looks(
                &mut d,
                &[
                    (Some(600), 0), // idle for ten minutes
                    (Some(605), 0), // still idle
                    (Some(2), 0),   // used two seconds ago
                    (Some(7), 0),   // idle again
                    (Some(12), 0),
                    (Some(9), 0),   // used in between, idle again
                    (None, 3),      // no session, but keys typed
                    (None, 0),      // nothing to see
                    (Some(100), 0)  // a session appears, long idle
                ]
            ),
            [false, false, true, false, false, true, true, false, false]
        );
    }

    #[test]
    fn the_startd_counts_the_kbdd_s_word_as_the_keyboard_s_and_console_s_last_use() {
        let r = startd::Readings {
            keyboard_idle: 5000,
            console_idle: 40,
            ..Default::default()
        };
        let seen = with_x_event(r.clone(), Some(990), 1000);
        assert_eq!((seen.keyboard_idle, seen.console_idle), (10, 10));
        let long_ago = with_x_event(r.clone(), Some(100), 1000);
        assert_eq!((long_ago.keyboard_idle, long_ago.console_idle), (900, 40));
        assert_eq!(with_x_event(r.clone(), None, 1000), r);
    }

    #[test]
    fn logind_says_how_long_a_graphical_session_is_idle() {
        let now = 1_000_000;
        let show = |t: &str, active: &str, hint: &str, since: i64| {
            format!("Type={t}\nActive={active}\nIdleHint={hint}\nIdleSinceHint={since}\n")
        };
        assert_eq!(session_idle(&show("wayland", "yes", "no", 0), now), Some(0));
        assert_eq!(
            session_idle(&show("x11", "yes", "yes", (now - 300) * 1_000_000), now),
            Some(300)
        );
        assert_eq!(session_idle(&show("tty", "yes", "no", 0), now), None);
        assert_eq!(session_idle(&show("x11", "no", "no", 0), now), None);
    }
}
