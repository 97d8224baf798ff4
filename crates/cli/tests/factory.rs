//! Late materialization in the personal pool, end to end: `submit` of a
//! description with `max_materialize` queues a factory; the schedd keeps
//! at most that many jobs present, makes the next as one leaves, goes on
//! after a restart, and ends it when all are done; `q -factory` shows it;
//! `hold`/`release` of the cluster pause and resume it, `rm` ends it.

mod common;

use std::time::{Duration, Instant};

use common::{err, ok, out, run, scratch, write, PoolProcess};

fn until(secs: u64, what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The ids of the cluster's jobs in the queue.
fn queued(state: &std::path::Path, dir: &std::path::Path, cluster: u32) -> Vec<String> {
    ok(run(
        state,
        dir,
        &[
            "q",
            "-af",
            "ProcId",
            "-constraint",
            &format!("ClusterId == {cluster}"),
        ],
    ))
    .lines()
    .map(str::to_string)
    .collect()
}

#[test]
fn a_factory_keeps_its_limit_survives_a_restart_pauses_and_ends() {
    let dir = scratch("factory");
    let state = dir.join("state");
    write(
        &dir.join("f.sub"),
        "executable = /bin/sh\narguments = \"-c 'sleep 0.3; echo $(x) $(Process)'\"\n\
         output = out.$(Process)\nmax_materialize = 2\nqueue x in (a, b, c, d, e)\n",
    );
    write(
        &dir.join("slow.sub"),
        "executable = /bin/sleep\narguments = 600\nmax_materialize = 1\nqueue 3\n",
    );
    let config = [("NUM_CPUS", "4")];
    let mut pool = PoolProcess::start(&state, &config);
    let said = ok(run(&state, &dir, &["submit", "f.sub"]));
    assert!(said.contains("5 job(s) submitted to cluster 1."), "{said}");
    let slow = ok(run(&state, &dir, &["submit", "slow.sub"]));
    assert!(slow.contains("3 job(s) submitted to cluster 2."), "{slow}");
    // Never more than two of cluster 1 at once, until all five are done.
    let mut most = 0;
    until(60, "cluster 1's five jobs", || {
        let q = queued(&state, &dir, 1);
        most = most.max(q.len());
        let h = ok(run(
            &state,
            &dir,
            &["history", "-af", "ProcId", "-constraint", "ClusterId == 1"],
        ));
        h.lines().count() == 5 && q.is_empty()
    });
    assert!((1..=2).contains(&most), "{most} jobs of cluster 1 at once");
    for (p, x) in ["a", "b", "c", "d", "e"].iter().enumerate() {
        let text = std::fs::read_to_string(dir.join(format!("out.{p}"))).unwrap();
        assert_eq!(text, format!("{x} {p}\n"));
    }
    // The slow factory: one job present, the factory listed.
    let f = ok(run(&state, &dir, &["q", "-factory"]));
    let line = f
        .lines()
        .find(|l| l.trim_start().starts_with("2."))
        .unwrap_or_else(|| panic!("{f}"));
    let cols: Vec<&str> = line.split_whitespace().collect();
    // ID OWNER DATE TIME LIMIT PRESNT RUN IDLE HOLD NEXTID MODE DIGEST
    assert_eq!(
        (cols[4], cols[5], cols[9], cols[10]),
        ("1", "1", "1", "Norm"),
        "{f}"
    );
    assert!(!f.lines().any(|l| l.trim_start().starts_with("1.")), "{f}");
    // A restart: the factory goes on from where it was.
    pool.kill();
    let mut pool = PoolProcess::start(&state, &config);
    assert_eq!(queued(&state, &dir, 2), vec!["0"]);
    // rm of its job: the factory makes the next.
    ok(run(&state, &dir, &["rm", "2.0"]));
    until(20, "job 2.1", || queued(&state, &dir, 2) == vec!["1"]);
    // hold of the cluster pauses the factory: removing 2.1 makes no 2.2.
    ok(run(&state, &dir, &["hold", "2"]));
    let f = ok(run(&state, &dir, &["q", "-factory"]));
    assert!(f.contains(" Held "), "{f}");
    ok(run(&state, &dir, &["rm", "2.1"]));
    std::thread::sleep(Duration::from_secs(1));
    assert!(queued(&state, &dir, 2).is_empty());
    // With none of its jobs present, condor_q's default view has no row
    // for it and counts no job of it (it asks for jobs, not cluster ads).
    let q = ok(run(&state, &dir, &["q"]));
    assert!(!q.contains("ID: 2 "), "{q}");
    assert!(q.contains("Total for query: 0 jobs;"), "{q}");
    ok(run(&state, &dir, &["release", "2"]));
    until(20, "job 2.2", || queued(&state, &dir, 2) == vec!["2"]);
    // rm of the cluster ends the factory.
    ok(run(&state, &dir, &["rm", "2"]));
    until(20, "cluster 2 to leave", || {
        queued(&state, &dir, 2).is_empty()
    });
    let f = run(&state, &dir, &["q", "-factory"]);
    assert!(
        !out(&f).lines().any(|l| l.trim_start().starts_with("2.")),
        "{}{}",
        out(&f),
        err(&f)
    );
    pool.kill();
}

/// `q -af` of cluster `cluster`'s jobs: one line per job.
fn jobs_af(
    state: &std::path::Path,
    dir: &std::path::Path,
    cluster: u32,
    attrs: &[&str],
) -> Vec<String> {
    let constraint = format!("ClusterId == {cluster}");
    let mut args = vec!["q", "-af"];
    args.extend_from_slice(attrs);
    args.extend_from_slice(&["-constraint", &constraint]);
    ok(run(state, dir, &args))
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn hold_true_reaches_the_jobs_random_values_are_drawn_once_and_submit_factory_forces_one() {
    let dir = scratch("factory-hold");
    let state = dir.join("state");
    write(
        &dir.join("held.sub"),
        "executable = /bin/sleep\narguments = 600\nhold = true\nmax_materialize = 2\nqueue 4\n",
    );
    write(
        &dir.join("random.sub"),
        "executable = /bin/sleep\narguments = $RANDOM_INTEGER(1,1000000000)\nhold = true\n\
         max_materialize = 3\nqueue 3\n",
    );
    write(
        &dir.join("plain.sub"),
        "executable = /bin/sleep\narguments = 600\nhold = true\nqueue 3\n",
    );
    let mut pool = PoolProcess::start(&state, &[("NUM_CPUS", "2")]);
    let said = ok(run(&state, &dir, &["submit", "held.sub"]));
    assert!(said.contains("4 job(s) submitted to cluster 1."), "{said}");
    // Each job the factory makes is held, as an ordinary `hold = true`
    // job is, and held jobs count toward the limit.
    let held = || {
        jobs_af(
            &state,
            &dir,
            1,
            &["ProcId", "JobStatus", "HoldReasonCode", "HoldReason"],
        )
    };
    until(20, "two held jobs", || held().len() == 2);
    assert_eq!(
        held(),
        vec![
            "0 5 15 submitted on hold at user's request",
            "1 5 15 submitted on hold at user's request"
        ]
    );
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(held().len(), 2, "held jobs are present: the limit is 2");
    ok(run(&state, &dir, &["rm", "1.0"]));
    until(20, "job 1.2, held", || {
        held()
            .iter()
            .any(|l| l == "2 5 15 submitted on hold at user's request")
    });
    // Released, a job runs: the factory's jobs are ordinary held jobs.
    ok(run(&state, &dir, &["release", "1.1"]));
    until(20, "job 1.1 to run", || {
        jobs_af(&state, &dir, 1, &["ProcId", "JobStatus"]).contains(&"1 2".to_string())
    });
    // The default view: 1.0 is done, 1.1 runs, 1.2 is held, 1.3 is not
    // made yet (not done: condor_q counts a factory's DONE as the jobs
    // made less those in the queue).
    let q = ok(run(&state, &dir, &["q"]));
    let row: Vec<&str> = q
        .lines()
        .find(|l| l.contains("ID: 1 "))
        .unwrap_or_else(|| panic!("{q}"))
        .split_whitespace()
        .collect();
    // OWNER ID: 1 DATE TIME DONE RUN IDLE HOLD TOTAL JOB_IDS
    assert_eq!(&row[5..], ["1", "1", "_", "1", "4", "1.1-2"], "{q}");

    // $RANDOM_INTEGER() is drawn once for the factory: every job has it.
    let said = ok(run(&state, &dir, &["submit", "random.sub"]));
    assert!(said.contains("3 job(s) submitted to cluster 2."), "{said}");
    until(20, "three jobs of cluster 2", || {
        jobs_af(&state, &dir, 2, &["Args"]).len() == 3
    });
    let args = jobs_af(&state, &dir, 2, &["Args"]);
    assert!(args.iter().all(|a| a == &args[0]), "{args:?}");

    // submit -factory: a factory without max_materialize, all its jobs
    // made at once; q -factory lists it.
    let said = ok(run(&state, &dir, &["submit", "-factory", "plain.sub"]));
    assert!(said.contains("3 job(s) submitted to cluster 3."), "{said}");
    until(20, "three jobs of cluster 3", || {
        jobs_af(&state, &dir, 3, &["ProcId"]).len() == 3
    });
    let f = ok(run(&state, &dir, &["q", "-factory"]));
    let line = f
        .lines()
        .find(|l| l.trim_start().starts_with("3."))
        .unwrap_or_else(|| panic!("{f}"));
    let cols: Vec<&str> = line.split_whitespace().collect();
    // ID OWNER DATE TIME LIMIT PRESNT RUN IDLE HOLD NEXTID MODE DIGEST
    assert_eq!(
        (cols[4], cols[5], cols[8], cols[9]),
        ("3", "3", "3", "3"),
        "{f}"
    );

    // max_idle counts held jobs too (HTCondor's jobs not running): one
    // job submitted held, no more.
    write(
        &dir.join("idle.sub"),
        "executable = /bin/sleep\narguments = 600\nhold = true\nmax_idle = 1\nqueue 3\n",
    );
    let said = ok(run(&state, &dir, &["submit", "idle.sub"]));
    assert!(said.contains("3 job(s) submitted to cluster 4."), "{said}");
    until(20, "job 4.0", || {
        jobs_af(&state, &dir, 4, &["ProcId"]).len() == 1
    });
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(
        jobs_af(&state, &dir, 4, &["ProcId", "JobStatus"]),
        vec!["0 5"]
    );
    pool.kill();
}
