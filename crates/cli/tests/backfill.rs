//! Backfill that runs a program, on a personal pool started by root
//! (issue 18), configured by `examples/config/backfill.conf` and
//! `examples/config/backfill-boinc.conf` (on top of `v68-default.conf`): an
//! idle slot goes Backfill/Busy with the BOINC client running as
//! BOINC_Owner (an ordinary user, `fcsec-alice`) in BOINC_InitialDir with
//! BOINC_Arguments and BOINC_Environment, its output in BOINC_Output; a
//! real job makes the startd stop it (SIGTERM) and the job runs; the idle
//! slot backfills again; the owner's return (EVICT_BACKFILL) sends it
//! SIGTERM, which this time it ignores, and KILLING_TIMEOUT later it is
//! killed, and the slot leaves Backfill and does not backfill while the
//! owner is there.
//!
//! Needs root (BOINC_Owner and the throwaway users); without, the test
//! says it is skipped.

mod common;
#[path = "common/users.rs"]
mod users;

use std::path::{Path, PathBuf};

use common::{alive, wait_for};
use users::{alice, skip_unless_root, Outcome, Pool, Scratch};

/// The client: who and how it was started, then work until SIGTERM
/// (which it ignores once `stubborn` exists in its directory).
const CLIENT: &str = r#"#!/bin/sh
echo "$$ $(id -u) $FC_BOINC_MARK $HOME $*" >> started
echo "client $$ at work"
trap 'if [ -e stubborn ]; then echo ignored >> signals; else echo term >> signals; exit 0; fi' TERM
while :; do sleep 0.2; done
"#;

fn lines(p: &Path) -> Vec<String> {
    std::fs::read_to_string(p)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn an_idle_slot_runs_the_boinc_client_which_a_job_and_the_owner_evict() {
    if skip_unless_root() {
        return;
    }
    let a = alice();
    let s = Scratch::new("backfill");
    let home: PathBuf = s.alice.join("boinc");
    std::fs::create_dir(&home).unwrap();
    users::chown(&home, a);
    let client = s.user_file(a, "client.sh", CLIENT, 0o755);
    let readings = s.state.with_extension("readings");
    std::fs::write(&readings, "KeyboardIdle = 100000\nTotalLoadAvg = 0\n").unwrap();
    let config = s.state.with_extension("config");
    std::fs::write(
        &config,
        format!(
            "include : {}\ninclude : {}\ninclude : {}\n\
             START_BACKFILL = KeyboardIdle > 60\nKILLING_TIMEOUT = 2\nNUM_CPUS = 1\n\
             SLOTS_CONNECTED_TO_KEYBOARD = 1\n\
             POLLING_INTERVAL = 1\nNEGOTIATOR_INTERVAL = 2\nUPDATE_INTERVAL = 1\n\
             PERIODIC_EXPR_INTERVAL = 1\n\
             STARTD_READINGS_FILE = {}\n\
             BOINC_HOME = {}\nBOINC_Executable = {}\nBOINC_Owner = {}\n\
             BOINC_Environment = HOME=$(BOINC_HOME) FC_BOINC_MARK=m1\n",
            common::example("v68-default.conf"),
            common::example("backfill.conf"),
            common::example("backfill-boinc.conf"),
            readings.display(),
            home.display(),
            client.display(),
            a.name,
        ),
    )
    .unwrap();
    let pool = Pool::start_with_config(&s.state, &config, &[]);
    let slot = |pool: &Pool| {
        let o = pool.tool(a, &s.alice, &["status", "-af", "State", "Activity"]);
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    };
    let started = home.join("started");
    let first = wait_for(20, "the backfill client, the slot Backfill/Busy", || {
        let l = lines(&started);
        (l.len() == 1 && slot(&pool) == "Backfill Busy").then(|| l[0].clone())
    });
    // As BOINC_Owner, with BOINC_Environment and BOINC_Arguments.
    let f: Vec<&str> = first.split_whitespace().collect();
    assert_eq!(f[1], a.uid.to_string(), "{first}");
    assert_eq!(f[2], "m1", "{first}");
    assert_eq!(f[3], home.display().to_string(), "{first}");
    assert_eq!(f[4..6], ["--dir", &home.display().to_string()], "{first}");
    assert!(f.contains(&"--attach_project"), "{first}");
    let pid1: i32 = f[0].parse().unwrap();
    assert!(alive(pid1));
    wait_for(5, "BOINC_Output", || {
        std::fs::read_to_string(home.join("boinc.out"))
            .unwrap_or_default()
            .contains(&format!("client {pid1} at work"))
            .then_some(())
    });

    // A real job: the client is asked to stop, the job runs.
    let c = pool
        .submit(
            a,
            &s.alice,
            "job.sub",
            "executable = /bin/echo\narguments = hello\noutput = job.out\nqueue\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
    match pool.outcome(a, &format!("{c}.0"), 30) {
        Outcome::Left { status: 4, .. } => {}
        o => panic!("{o:?}\n{}", pool.daemon_log()),
    }
    assert_eq!(lines(&home.join("signals")), ["term"]);
    assert!(!alive(pid1));
    assert_eq!(
        std::fs::read_to_string(s.alice.join("job.out")).unwrap(),
        "hello\n"
    );

    // Idle again: backfill again.
    let second = wait_for(20, "the client started again", || {
        let l = lines(&started);
        (l.len() == 2 && slot(&pool) == "Backfill Busy").then(|| l[1].clone())
    });
    let pid2: i32 = second.split_whitespace().next().unwrap().parse().unwrap();

    // The owner is back: SIGTERM, ignored; killed after KILLING_TIMEOUT.
    std::fs::write(home.join("stubborn"), "").unwrap();
    std::fs::write(&readings, "KeyboardIdle = 0\nTotalLoadAvg = 0\n").unwrap();
    let t = std::time::Instant::now();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while lines(&home.join("signals")).last().map(String::as_str) != Some("ignored") {
        assert!(
            std::time::Instant::now() < deadline,
            "the client was not asked to stop: slot {}, signals {:?}\n{}",
            slot(&pool),
            lines(&home.join("signals")),
            pool.daemon_log()
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(alive(pid2), "the client ignores SIGTERM");
    wait_for(15, "the client killed after KILLING_TIMEOUT", || {
        (!alive(pid2)).then_some(())
    });
    assert!(
        t.elapsed().as_secs_f64() >= 1.5,
        "killed before KILLING_TIMEOUT"
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    // Out of Backfill (to Owner, HTCondor's transition 30; this policy's
    // IS_OWNER then lets it go Unclaimed).
    while slot(&pool).starts_with("Backfill") {
        assert!(
            std::time::Instant::now() < deadline,
            "the slot is still {}\n{}",
            slot(&pool),
            pool.daemon_log()
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // The owner is still there: no backfill.
    std::thread::sleep(std::time::Duration::from_secs(2));
    assert_eq!(lines(&started).len(), 2, "{}", pool.daemon_log());
    assert!(!slot(&pool).starts_with("Backfill"), "{}", slot(&pool));
    let log = pool.daemon_log();
    assert!(log.contains("backfill client BOINC started"), "{log}");
    assert!(log.contains("outlived KILLING_TIMEOUT"), "{log}");
}
