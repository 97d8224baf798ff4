//! `ferrocondor master`: the pool's four roles as four processes on one
//! machine, talking over their command ports (HTCondor's protocol), restarted when they die.

mod common;

use std::path::Path;
use std::time::Duration;

use common::{alive, ok, run, scratch, wait_for, write, PoolProcess};

const CONFIG: &[(&str, &str)] = &[
    (
        "DAEMON_LIST",
        "MASTER, COLLECTOR, NEGOTIATOR, SCHEDD, STARTD",
    ),
    ("NUM_CPUS", "2"),
    ("POLLING_INTERVAL", "1"),
    ("NEGOTIATOR_INTERVAL", "2"),
    ("UPDATE_INTERVAL", "1"),
    // Restart a dead daemon after 1 s (0 + 1.0 to any power).
    ("MASTER_BACKOFF_CONSTANT", "0"),
    ("MASTER_BACKOFF_FACTOR", "1.0"),
];

/// The pid the master last started `role` with, from its log.
fn pid_of(log: &str, role: &str) -> Option<i32> {
    let needle = format!("started the {role} (pid ");
    let at = log.rfind(&needle)? + needle.len();
    log[at..].split(')').next()?.parse().ok()
}

fn completed(state: &Path, dir: &Path) -> usize {
    let h = run(state, dir, &["history", "-af", "JobStatus"]);
    ok(h).lines().filter(|l| l.trim() == "4").count()
}

#[test]
fn the_master_runs_four_roles_that_form_a_pool_and_restarts_one_that_dies() {
    let dir = scratch("master");
    let state = dir.join("state");
    let mut pool = PoolProcess::master(&state, CONFIG);
    // Four processes, one per role, each on its own command port, which
    // it writes for this host's other processes to find.
    let log = pool.daemon_log();
    let pids: Vec<i32> = ["STARTD", "COLLECTOR", "NEGOTIATOR", "SCHEDD"]
        .iter()
        .map(|r| pid_of(&log, r).unwrap_or_else(|| panic!("no {r} started:\n{log}")))
        .collect();
    assert!(pids.iter().all(|&p| alive(p)), "{log}");
    let unique: std::collections::BTreeSet<i32> = pids.iter().copied().collect();
    assert_eq!(unique.len(), 4, "four processes: {pids:?}");
    let mut ports = std::collections::BTreeSet::new();
    for r in ["STARTD", "COLLECTOR", "NEGOTIATOR", "SCHEDD"] {
        let file = state.join("roles").join(format!("{r}.address"));
        wait_for(10, "the role's address", || file.exists().then_some(()));
        let address = std::fs::read_to_string(&file).unwrap();
        assert!(address.starts_with("<127.0.0.1:"), "{r}: {address}");
        ports.insert(address);
    }
    assert_eq!(ports.len(), 4, "a port per process: {ports:?}");

    // A working pool: jobs submitted to the schedd run on the startd,
    // matched by the negotiator over the collector's slot ads.
    write(&dir.join("a.sub"), "executable = /bin/true\nqueue 3\n");
    ok(run(&state, &dir, &["submit", "a.sub"]));
    wait_for(30, "the first three jobs to complete", || {
        (completed(&state, &dir) == 3).then_some(())
    });

    // The tools reach the other processes' roles through the schedd:
    // `status` the collector, `userprio` the negotiator.
    let status = ok(run(&state, &dir, &["status", "-af", "Name", "State"]));
    assert_eq!(status.lines().count(), 2, "{status}");
    assert!(status.lines().all(|l| l.starts_with("slot")), "{status}");
    let prio = ok(run(&state, &dir, &["userprio"]));
    assert!(prio.contains("Number of users:"), "{prio}");
    // `reconfig` goes through the master to every daemon.
    let said = ok(run(&state, &dir, &["reconfig"]));
    assert!(said.contains("Reconfig"), "{said}");
    wait_for(10, "every daemon to read its configuration again", || {
        let log = pool.daemon_log();
        (log.matches("read its configuration again").count() >= 4).then_some(())
    });

    // The negotiator and the collector die; the master starts them again.
    for role in ["NEGOTIATOR", "COLLECTOR"] {
        let old = pid_of(&pool.daemon_log(), role).unwrap();
        // SAFETY: a plain signal to a process this test's pool started.
        unsafe { libc::kill(old, libc::SIGKILL) };
        let new = wait_for(20, "the master to restart the role", || {
            pid_of(&pool.daemon_log(), role).filter(|&p| p != old && alive(p))
        });
        assert_ne!(new, old);
        assert!(
            pool.daemon_log()
                .contains(&format!("the {role} exited (signal: 9")),
            "{}",
            pool.daemon_log()
        );
    }

    // Nothing lost: the queue kept its jobs, and new ones run.
    write(&dir.join("b.sub"), "executable = /bin/true\nqueue 3\n");
    ok(run(&state, &dir, &["submit", "b.sub"]));
    wait_for(40, "all six jobs to complete", || {
        (completed(&state, &dir) == 6).then_some(())
    });

    // `pool down` takes the whole pool down: every role, then the master.
    ok(run(&state, &dir, &["pool", "down"]));
    let master = pool.child.as_mut().unwrap();
    wait_for(30, "the master to exit", || {
        master.try_wait().ok().flatten()
    });
    let log = pool.daemon_log();
    for r in ["STARTD", "COLLECTOR", "NEGOTIATOR", "SCHEDD"] {
        let p = pid_of(&log, r).unwrap();
        wait_for(10, "every role to be gone", || (!alive(p)).then_some(()));
    }
    assert!(log.contains("every daemon is down"), "{log}");
    std::thread::sleep(Duration::from_millis(10));
    let _ = std::fs::remove_dir_all(&dir);
}

/// The roles' messages between the master's processes travel on their
/// command ports at the DAEMON level: a user who is not the pool's (here
/// one the pool takes on their word, CLAIMTOBE, so that the test needs no
/// second account) is refused and the pool serves on; the pool's own user
/// (FS) is let in.
#[test]
fn only_the_pool_s_own_user_may_send_the_roles_messages() {
    let dir = scratch("master-daemon-level");
    let state = dir.join("state");
    let mut config = CONFIG.to_vec();
    config.push(("SEC_DEFAULT_AUTHENTICATION_METHODS", "FS, CLAIMTOBE"));
    let _pool = PoolProcess::master(&state, &config);
    let file = state.join("roles").join("SCHEDD.address");
    wait_for(20, "the schedd's address", || file.exists().then_some(()));
    let addr = daemons::role_transport::read_address(&file).unwrap();

    let stranger = cedar::client::ClientOptions {
        methods: vec![cedar::auth::Method::ClaimToBe],
        claim_to_be: Some("mallory".into()),
        ..cedar::client::ClientOptions::default()
    };
    let refused = cedar::client::connect(&addr, cedar::commands::FC_ROLE_MESSAGES, &stranger, None);
    match refused {
        Err(cedar::client::ClientError::Denied { user, .. }) => {
            assert!(
                user.as_deref().unwrap_or("").starts_with("mallory"),
                "{user:?}"
            )
        }
        Err(e) => panic!("refused, but not by authorization: {e}"),
        Ok(_) => panic!("mallory may send the roles' messages"),
    }
    // The pool's own user (this test's, by FS) may.
    let (sock, _) = cedar::client::connect(
        &addr,
        cedar::commands::FC_ROLE_MESSAGES,
        &cedar::client::ClientOptions::default(),
        None,
    )
    .expect("the pool's own user is a daemon of it");
    drop(sock);
    // The pool still works.
    write(&dir.join("a.sub"), "executable = /bin/true\nqueue\n");
    ok(run(&state, &dir, &["submit", "a.sub"]));
    wait_for(30, "the job to complete", || {
        (completed(&state, &dir) == 1).then_some(())
    });
    let _ = std::fs::remove_dir_all(&dir);
}
