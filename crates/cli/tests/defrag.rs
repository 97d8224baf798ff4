//! The defrag daemon in a real pool: `ferrocondor master` with DEFRAG in
//! DAEMON_LIST, configured by `examples/config/defrag.conf` (with short
//! intervals and a two-core machine), drains a partitionable slot that a
//! one-core job fragments, and advertises its daemon ad at the collector.

mod common;

use std::path::Path;

use common::{command_with_config, ok, run, scratch, wait_for, write, PoolProcess};

/// The slot ads' values of `attrs`, one line per slot.
fn af(state: &Path, dir: &Path, attrs: &[&str]) -> Vec<String> {
    let mut args = vec!["status", "-af"];
    args.extend_from_slice(attrs);
    ok(run(state, dir, &args))
        .lines()
        .map(str::to_string)
        .collect()
}

fn job_status(state: &Path, dir: &Path, id: &str) -> String {
    ok(run(state, dir, &["q", id, "-af", "JobStatus"]))
        .trim()
        .to_string()
}

/// The collector's ads of `MyType` `target` (a generic query, as
/// `condor_status -any` makes).
fn collector_ads(state: &Path, target: &str) -> Vec<classad::ClassAd> {
    let file = state.join(".collector_address");
    let Some(addr) = daemons::role_transport::read_address(&file) else {
        return Vec::new();
    };
    let opts = cedar::client::ClientOptions::default();
    let Ok((mut sock, _)) =
        cedar::client::connect(&addr, cedar::commands::QUERY_ANY_ADS, &opts, None)
    else {
        return Vec::new();
    };
    let mut q = classad::ClassAd::new();
    q.insert_value("MyType", "Query");
    q.insert_value("TargetType", target);
    q.insert_value("Requirements", true);
    let mut e = sock.encoder();
    cedar::put_ad(&mut e, &q, &cedar::PutOptions::default());
    sock.send(&e).unwrap();
    let mut found = Vec::new();
    loop {
        let msg = sock.recv().unwrap();
        let mut d = sock.decoder(&msg);
        while d.remaining() != 0 {
            if d.get_int().unwrap() == 0 {
                return found;
            }
            found.push(cedar::get_ad(&mut d).unwrap());
        }
    }
}

fn int(ad: &classad::ClassAd, name: &str) -> i64 {
    cedar::ad::int_attr(ad, name).unwrap_or(-1)
}

#[test]
fn the_defrag_daemon_drains_a_fragmented_machine_and_advertises_its_figures() {
    let dir = scratch("defrag");
    let state = dir.join("state");
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/config/defrag.conf");
    let conf = dir.join("condor_config");
    // The central manager's file as an admin writes it: the pool's
    // daemons, one two-core partitionable slot, and the example included.
    write(
        &conf,
        &format!(
            "DAEMON_LIST = MASTER, COLLECTOR, NEGOTIATOR, SCHEDD, STARTD\n\
             NUM_CPUS = 2\n\
             NUM_SLOTS_TYPE_1 = 1\n\
             SLOT_TYPE_1 = 100%\n\
             SLOT_TYPE_1_PARTITIONABLE = TRUE\n\
             MAXJOBRETIREMENTTIME = 3600\n\
             include : {}\n",
            example.canonicalize().unwrap().display()
        ),
    );
    // Short intervals for the test; this machine is small, and a poll may
    // drain more than the example's one an hour.
    let env: &[(&str, &str)] = &[
        ("POLLING_INTERVAL", "1"),
        ("NEGOTIATOR_INTERVAL", "2"),
        ("UPDATE_INTERVAL", "1"),
        // Longer than a job takes to be matched, claimed and started: a
        // poll that falls between a claim and its job's start drains a
        // machine whose job then never starts (as in HTCondor).
        ("DEFRAG_INTERVAL", "15"),
        ("DEFRAG_UPDATE_INTERVAL", "2"),
        ("DEFRAG_DRAINING_MACHINES_PER_HOUR", "3600"),
        (
            "DEFRAG_REQUIREMENTS",
            "PartitionableSlot && TotalSlotCpus >= 2",
        ),
        ("DEFRAG_NAME", "defrag@test"),
    ];
    let c = command_with_config(&state, &conf, env);
    let mut pool = PoolProcess::spawn_by(&state, c, &["master"], |c| c.spawn().unwrap());
    pool.wait_up();
    let log = pool.daemon_log();
    assert!(log.contains("started the DEFRAG"), "{log}");

    // The daemon ad is at the collector from the first poll: one whole
    // machine, nothing draining, nothing drained.
    let ad = wait_for(20, "the defrag daemon's ad", || {
        collector_ads(&state, "Defrag").into_iter().next()
    });
    assert_eq!(
        cedar::ad::string_attr(&ad, "Name").as_deref(),
        Some("defrag@test")
    );
    assert_eq!(int(&ad, "DrainSuccesses"), 0, "{ad:?}");

    // A one-core job fragments the machine: half its cores are claimed.
    // The machine lets jobs retire for an hour (MAXJOBRETIREMENTTIME).
    write(
        &dir.join("a.sub"),
        "executable = /bin/sleep\narguments = 600\nrequest_cpus = 1\nqueue\n",
    );
    ok(run(&state, &dir, &["submit", "a.sub"]));
    wait_for(30, "the job to run", || {
        (job_status(&state, &dir, "1.0") == "2").then_some(())
    });

    // The defrag daemon drains it gracefully: the job keeps running,
    // retiring; the slots say why they drain.
    wait_for(40, "the defrag daemon to drain the machine", || {
        let rows = af(&state, &dir, &["Name", "Activity", "DrainReason"]);
        rows.iter()
            .any(|r| r.ends_with("Retiring Defrag defrag@test"))
            .then_some(rows)
    });
    assert_eq!(job_status(&state, &dir, "1.0"), "2");

    // While it drains, START is DEFRAG_DRAINING_START_EXPR: a job that
    // does not say MaxJobRetirementTime = 0 is not started there, though a
    // core is free.
    write(
        &dir.join("b.sub"),
        "executable = /bin/sleep\narguments = 600\nrequest_cpus = 1\nqueue\n",
    );
    ok(run(&state, &dir, &["submit", "b.sub"]));
    std::thread::sleep(std::time::Duration::from_secs(8));
    assert_eq!(job_status(&state, &dir, "2.0"), "1");
    assert_eq!(job_status(&state, &dir, "1.0"), "2");

    // The daemon ad's figures: one drain, one machine draining.
    let ad = wait_for(20, "the figures of the drain", || {
        collector_ads(&state, "Defrag")
            .into_iter()
            .find(|ad| int(ad, "MachinesDraining") == 1)
    });
    assert_eq!(int(&ad, "DrainSuccesses"), 1, "{ad:?}");
    assert_eq!(int(&ad, "DrainFailures"), 0, "{ad:?}");
    assert_eq!(int(&ad, "WholeMachines"), 0, "{ad:?}");
    assert!(ad.get("AvgDrainingBadput").is_some(), "{ad:?}");
    let drains = ad
        .get("RecentDrainsList")
        .map(classad::unparse::expr_to_string)
        .unwrap_or_default();
    assert!(drains.contains("graceful"), "{drains}");
    // `status -any` shows it among the collector's ads, `-l` its figures.
    let any = ok(run(&state, &dir, &["status", "-any"]));
    assert!(
        any.lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>() == ["Defrag", "defrag@test"]),
        "{any}"
    );
    let long = ok(run(
        &state,
        &dir,
        &[
            "status",
            "-any",
            "-constraint",
            "MyType == \"Defrag\"",
            "-af",
            "DrainSuccesses",
            "MachinesDraining",
        ],
    ));
    assert_eq!(long.trim(), "1 1", "{long}");

    // Down: the master stops the defrag daemon with the rest.
    ok(run(&state, &dir, &["rm", "1.0", "2.0"]));
    ok(run(&state, &dir, &["pool", "down"]));
    let master = pool.child.as_mut().unwrap();
    wait_for(30, "the master to exit", || {
        master.try_wait().ok().flatten()
    });
    let log = pool.daemon_log();
    assert!(log.contains("ferrocondor defrag: down"), "{log}");
    let _ = std::fs::remove_dir_all(&dir);
}
