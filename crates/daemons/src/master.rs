//! `ferrocondor master`: runs the daemons `DAEMON_LIST` names, each as a
//! process of its own (`ferrocondor daemon ROLE`), and restarts one that
//! dies, with condor_master's back-off: it waits MASTER_BACKOFF_CONSTANT
//! plus MASTER_BACKOFF_FACTOR to the power of the restarts so far (at
//! most MASTER_BACKOFF_CEILING) seconds, and forgets the count once the
//! daemon has stayed up MASTER_RECOVER_FACTOR seconds. SIGTERM or SIGINT
//! stops every daemon (SIGTERM, then SIGKILL after a grace period) and
//! then the master; so does a `pool down` to its schedd. SIGHUP (what
//! `reconfig` to its schedd sends) is passed to every daemon, which reads
//! its configuration again.
//!
//! The startd starts first and the others once it listens, because it
//! kills whatever a dead pool left running before the schedd puts those
//! jobs back to idle.

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::roles::RoleName;

/// The environment variable that tells a daemon its master's pid.
pub const MASTER_PID_ENV: &str = "FERROCONDOR_MASTER_PID";

/// condor_master's restart back-off.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Backoff {
    pub constant: u64,
    pub factor: f64,
    pub ceiling: u64,
    pub recover: u64,
}

impl Backoff {
    pub fn from_config(c: &config::Config) -> Result<Backoff, String> {
        let secs = |name: &str, default: i64| -> Result<u64, String> {
            Ok(c.integer_or(name, default)
                .map_err(|e| e.to_string())?
                .max(0) as u64)
        };
        let factor = c
            .real("MASTER_BACKOFF_FACTOR")
            .map_err(|e| e.to_string())?
            .unwrap_or(2.0);
        Ok(Backoff {
            constant: secs("MASTER_BACKOFF_CONSTANT", 9)?,
            factor: if factor.is_finite() && factor >= 1.0 {
                factor
            } else {
                2.0
            },
            ceiling: secs("MASTER_BACKOFF_CEILING", 3600)?,
            recover: secs("MASTER_RECOVER_FACTOR", 300)?,
        })
    }

    /// Seconds to wait before a daemon's restart when it has already been
    /// restarted `restarts` times without recovering.
    pub fn delay(&self, restarts: u32) -> u64 {
        let grown = self.factor.powi(restarts.min(64) as i32);
        let d = self.constant as f64 + grown;
        (d.min(self.ceiling as f64)).max(0.0) as u64
    }
}

/// The roles `DAEMON_LIST` names, in the order they start; MASTER is the
/// master itself, and a daemon ferrocondor does not have yet is named in
/// the notes and not started.
pub fn daemon_list(c: &config::Config) -> Result<(Vec<RoleName>, Vec<String>), String> {
    let names = c.list("DAEMON_LIST").map_err(|e| e.to_string())?;
    let mut roles = Vec::new();
    let mut notes = Vec::new();
    for n in names {
        match crate::local_protocol::role_named(&n) {
            Some(r) if !roles.contains(&r) => roles.push(r),
            Some(_) => {}
            None if n.eq_ignore_ascii_case("MASTER") => {}
            // The keyboard daemon is no role: `kbdd::supervise` runs it.
            None if n.eq_ignore_ascii_case("KBDD") => {}
            None => notes.push(format!(
                "DAEMON_LIST names {n}, which ferrocondor does not run yet; it is not started"
            )),
        }
    }
    // The startd first: see the module's documentation.
    roles.sort_by_key(|r| match r {
        RoleName::Startd => 0,
        RoleName::Collector => 1,
        RoleName::Negotiator => 2,
        RoleName::Schedd => 3,
        RoleName::Defrag => 4,
    });
    Ok((roles, notes))
}

static STOP: AtomicBool = AtomicBool::new(false);
static RECONFIG: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

extern "C" fn on_hangup(_: libc::c_int) {
    RECONFIG.store(true, Ordering::SeqCst);
}

struct Daemon {
    role: RoleName,
    child: Option<Child>,
    started: Instant,
    restarts: u32,
    restart_at: Option<Instant>,
}

/// Runs `roles` as `program daemon ROLE --state state_dir` until SIGTERM
/// or SIGINT. Lines for the master's log go to standard error.
pub fn run(program: &Path, state_dir: &Path, roles: &[RoleName], backoff: Backoff) {
    // Alone in its cgroup, the master moves into a leaf before it starts
    // the daemons, as systemd's DelegateSubgroup=leaf puts HTCondor's
    // master: the startd then makes job cgroups beside it, where cgroup
    // v2 lets them have memory limits.
    if let Ok(Some(leaf)) = starter::move_to_leaf() {
        eprintln!(
            "ferrocondor master: moved into the cgroup `{}` (the startd's jobs go beside it)",
            leaf.display()
        );
    }
    // SAFETY: the handler only stores to an atomic.
    unsafe {
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGHUP, on_hangup as *const () as libc::sighandler_t);
    }
    let spawn = |role: RoleName| -> Option<Child> {
        let c = Command::new(program)
            .arg("daemon")
            .arg(role.daemon_name())
            .arg("--state")
            .arg(state_dir)
            .env(MASTER_PID_ENV, std::process::id().to_string())
            .spawn();
        match c {
            Ok(c) => {
                eprintln!(
                    "ferrocondor master: started the {} (pid {})",
                    role.daemon_name(),
                    c.id()
                );
                Some(c)
            }
            Err(e) => {
                eprintln!(
                    "ferrocondor master: could not start the {}: {e}",
                    role.daemon_name()
                );
                None
            }
        }
    };
    let roles_dir = state_dir.join("roles");
    // Addresses a pool that died left say nothing of the daemons to come.
    crate::role_transport::remove_addresses(&roles_dir, roles);
    let mut daemons: Vec<Daemon> = Vec::new();
    for &role in roles {
        let child = spawn(role);
        let failed = child.is_none();
        daemons.push(Daemon {
            role,
            child,
            started: Instant::now(),
            restarts: 0,
            restart_at: failed.then(|| Instant::now() + Duration::from_secs(backoff.delay(0))),
        });
        // The startd kills what a dead pool left before the schedd starts.
        if role == RoleName::Startd {
            let up = crate::role_transport::address_file(&roles_dir, role);
            let until = Instant::now() + Duration::from_secs(30);
            while !up.exists() && Instant::now() < until && !STOP.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
    while !STOP.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(100));
        // condor_reconfig: every daemon reads its configuration again.
        if RECONFIG.swap(false, Ordering::SeqCst) {
            eprintln!("ferrocondor master: reconfig: telling every daemon");
            for d in &daemons {
                if let Some(c) = &d.child {
                    // SAFETY: kill with a child's pid and a valid signal.
                    unsafe {
                        libc::kill(c.id() as libc::pid_t, libc::SIGHUP);
                    }
                }
            }
        }
        let now = Instant::now();
        for d in &mut daemons {
            if let Some(c) = d.child.as_mut() {
                if let Ok(Some(status)) = c.try_wait() {
                    d.child = None;
                    if now.duration_since(d.started) >= Duration::from_secs(backoff.recover) {
                        d.restarts = 0;
                    }
                    let wait = backoff.delay(d.restarts);
                    eprintln!(
                        "ferrocondor master: the {} exited ({status}); restarting it in {wait} s",
                        d.role.daemon_name()
                    );
                    d.restart_at = Some(now + Duration::from_secs(wait));
                }
            }
            if d.child.is_none() && d.restart_at.is_some_and(|t| t <= now) {
                d.restart_at = None;
                d.restarts += 1;
                d.started = now;
                d.child = spawn(d.role);
                if d.child.is_none() {
                    d.restart_at = Some(now + Duration::from_secs(backoff.delay(d.restarts)));
                }
            }
        }
    }
    // Down: every daemon gets SIGTERM (the startd kills its jobs, the
    // schedd closes its queue), the schedd last; then SIGKILL.
    for d in daemons.iter().rev() {
        if let Some(c) = &d.child {
            // SAFETY: kill with a child's pid and a valid signal.
            unsafe {
                libc::kill(c.id() as libc::pid_t, libc::SIGTERM);
            }
        }
    }
    let until = Instant::now() + Duration::from_secs(30);
    for d in &mut daemons {
        if let Some(c) = d.child.as_mut() {
            while Instant::now() < until {
                if let Ok(Some(_)) = c.try_wait() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
    }
    eprintln!("ferrocondor master: every daemon is down");
}

/// The program to run the daemons with: this one.
pub fn this_program() -> PathBuf {
    std::env::current_exe().unwrap_or_else(|_| PathBuf::from("ferrocondor"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_back_off_grows_from_the_constant_to_the_ceiling() {
        let b = Backoff {
            constant: 9,
            factor: 2.0,
            ceiling: 3600,
            recover: 300,
        };
        assert_eq!(b.delay(0), 10);
        assert_eq!(b.delay(1), 11);
        assert_eq!(b.delay(3), 17);
        assert_eq!(b.delay(20), 3600);
        assert_eq!(b.delay(1000), 3600);
    }

    fn cfg(text: &str) -> config::Config {
        config::load(
            &config::LoadOptions::new("MASTER", config::Root::File("c".into())),
            &config::MemFiles::new().with("c", text),
            &config::FixedHost::empty(),
        )
        .unwrap()
    }

    #[test]
    fn daemon_list_starts_the_startd_first_and_names_what_it_cannot_run() {
        let (roles, notes) = daemon_list(&cfg(
            "DAEMON_LIST = MASTER, SCHEDD, COLLECTOR, KBDD NEGOTIATOR STARTD\n",
        ))
        .unwrap();
        assert_eq!(
            roles,
            vec![
                RoleName::Startd,
                RoleName::Collector,
                RoleName::Negotiator,
                RoleName::Schedd
            ]
        );
        assert!(notes.is_empty(), "KBDD is run (kbdd::supervise): {notes:?}");
        assert!(crate::kbdd::wanted(&cfg(
            "DAEMON_LIST = MASTER, SCHEDD, COLLECTOR, KBDD NEGOTIATOR STARTD\n"
        ))
        .unwrap());
    }

    #[test]
    fn use_role_templates_make_the_daemon_list() {
        let (roles, _) = daemon_list(&cfg(
            "use ROLE : CentralManager\nuse ROLE : Submit\nuse ROLE : Execute\n",
        ))
        .unwrap();
        assert_eq!(roles.len(), 4, "{roles:?}");
        let (roles, _) = daemon_list(&cfg("use ROLE : Execute\n")).unwrap();
        assert_eq!(roles, vec![RoleName::Startd]);
    }
}
