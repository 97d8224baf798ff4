//! The keyboard daemon (`KBDD` in DAEMON_LIST, added by
//! `examples/config/kbdd.conf`) on real processes: the master runs it
//! beside the startd; `ferrocondor kbdd --once --notify`
//! (HTCondor's `condor_kbdd -once:true`) tells the startd the keyboard
//! was used, and the slots' KeyboardIdle and ConsoleIdle drop from what
//! the startd's own readings say to the seconds since then.
//!
//! Seeing real activity needs a graphical session (logind) or input
//! devices (/dev/input); where the machine has neither, that part says
//! `skipped:` (the detection is unit-tested in `daemons::kbdd` with a fake
//! idle source).

mod common;

use std::path::Path;

use common::{command_with_config, ok, run, scratch, wait_for, write, PoolProcess};

#[test]
fn the_master_runs_the_keyboard_daemon_and_its_word_makes_the_keyboard_recent() {
    let dir = scratch("kbdd");
    let state = dir.join("state");
    let readings = dir.join("readings");
    // The startd's own readings: nobody has touched the machine for a day.
    write(&readings, "KeyboardIdle = 86400\nConsoleIdle = 86400\n");
    // The pool's file, as an admin writes it: the daemons, then the
    // example that adds the keyboard daemon.
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/config/kbdd.conf");
    let config = dir.join("condor_config");
    write(
        &config,
        &format!(
            "DAEMON_LIST = MASTER, COLLECTOR, NEGOTIATOR, SCHEDD, STARTD\n\
             NUM_CPUS = 2\n\
             include : {}\n",
            example.display()
        ),
    );
    let readings_path = readings.display().to_string();
    let pool = PoolProcess::spawn_by(
        &state,
        command_with_config(
            &state,
            &config,
            &[
                ("POLLING_INTERVAL", "1"),
                ("UPDATE_INTERVAL", "1"),
                ("STARTD_READINGS_FILE", &readings_path),
            ],
        ),
        &["master"],
        |c| c.spawn().unwrap(),
    );
    pool.wait_up();
    let watching = wait_for(20, "the keyboard daemon to start", || {
        let log = pool.daemon_log();
        log.lines()
            .find(|l| l.starts_with("ferrocondor kbdd: watching"))
            .map(str::to_string)
    });
    let log = pool.daemon_log();
    assert!(log.contains("started the keyboard daemon (pid "), "{log}");
    assert!(!log.contains("does not run yet"), "{log}");

    let idle = || -> Vec<(i64, i64)> {
        ok(run(
            &state,
            &dir,
            &["status", "-af", "KeyboardIdle", "ConsoleIdle"],
        ))
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace().map(|x| x.parse::<i64>().ok());
            Some((f.next()??, f.next()??))
        })
        .collect()
    };
    wait_for(20, "the slots to say what the startd reads", || {
        let v = idle();
        (v.len() == 2 && v.iter().all(|&(k, c)| k >= 86400 && c >= 86400)).then_some(())
    });

    if watching.contains("0 input device(s), no logind") {
        println!(
            "skipped: no graphical session (logind) and no input devices here ({watching}); \
             real activity is not seen, the detection is unit-tested in daemons::kbdd"
        );
    }

    // The keyboard daemon's word, as HTCondor's `condor_kbdd -once:true`.
    let o = run(&state, &dir, &["kbdd", "--once", "--notify"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    wait_for(
        20,
        "KeyboardIdle and ConsoleIdle to count from the kbdd's word",
        || {
            let v = idle();
            (v.len() == 2 && v.iter().all(|&(k, c)| k < 60 && c < 60)).then_some(())
        },
    );
}
