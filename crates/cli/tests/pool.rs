//! The personal pool end to end, on the real binary: `pool up` as a child
//! process, the tools against it, a SIGKILL and a restart on the same
//! state directory.

mod common;

use common::{err, me, ok, run, scratch, write, PoolProcess};

/// No slot ever starts a job: these tests are about the queue.
const QUEUE_ONLY: &[(&str, &str)] = &[("START", "False")];

#[test]
fn queue_hold_release_remove_and_survive_a_sigkill() {
    let dir = scratch("life");
    let state = dir.join("state");
    let mut pool = PoolProcess::start(&state, QUEUE_ONLY);
    let t = |args: &[&str]| run(&state, &dir, args);

    write(
        &dir.join("job.sub"),
        "executable = /bin/sleep\narguments = 60\nlog = job.log\nqueue 3\n",
    );
    let s = ok(t(&["submit", "job.sub"]));
    assert!(s.contains("3 job(s) submitted to cluster 1."), "{s}");

    // The batch view: one line, 3 idle jobs of this user.
    let q = ok(t(&["q"]));
    assert!(q.contains("-- Schedd: "), "{q}");
    assert!(q.contains("OWNER") && q.contains("JOB_IDS"), "{q}");
    let row = q
        .lines()
        .find(|l| l.contains("ID: 1"))
        .unwrap_or_else(|| panic!("{q}"));
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(cells[0], me(), "{row}");
    assert_eq!(cells[cells.len() - 1], "1.0-2", "{row}");
    assert_eq!(cells[cells.len() - 3], "_", "HOLD {row}");
    assert_eq!(cells[cells.len() - 4], "3", "IDLE {row}");
    assert!(
        q.contains("Total for query: 3 jobs; 0 completed, 0 removed, 3 idle"),
        "{q}"
    );

    // Hold one: -hold shows it with its reason.
    assert_eq!(
        ok(t(&["hold", "1.1", "-reason", "waiting for input"])),
        "Job 1.1 held\n"
    );
    let h = ok(t(&["q", "-hold"]));
    let held: Vec<&str> = h
        .lines()
        .filter(|l| l.trim_start().starts_with("1."))
        .collect();
    assert_eq!(held.len(), 1, "{h}");
    assert!(
        held[0].contains("1.1") && held[0].ends_with("waiting for input"),
        "{h}"
    );
    // Holding it again is refused, and says why.
    let again = t(&["hold", "1.1"]);
    assert_eq!(again.status.code(), Some(1));
    assert!(
        err(&again).contains("Job 1.1 already held"),
        "{}",
        err(&again)
    );

    assert_eq!(ok(t(&["release", "1.1"])), "Job 1.1 released\n");
    assert_eq!(ok(t(&["rm", "1.2"])), "Job 1.2 marked for removal\n");
    assert_eq!(
        ok(t(&["q", "-af", "ClusterId", "ProcId", "JobStatus"])),
        "1 0 1\n1 1 1\n"
    );

    // The removed job is in the history.
    let hist = ok(t(&[
        "history",
        "-af",
        "ClusterId",
        "ProcId",
        "JobStatus",
        "RemoveReason",
    ]));
    assert_eq!(hist, format!("1 2 3 via condor_rm (by user {})\n", me()));

    // -json parses, and -nobatch lists each job.
    let json: serde_json::Value = serde_json::from_str(&ok(t(&["q", "-json"]))).unwrap();
    assert_eq!(json.as_array().map(Vec::len), Some(2), "{json}");
    assert_eq!(json[1]["LastHoldReason"], "waiting for input");
    let nb = ok(t(&["q", "-nobatch"]));
    assert!(
        nb.contains(" ID      OWNER            SUBMITTED     RUN_TIME ST PRI SIZE CMD"),
        "{nb}"
    );
    assert_eq!(
        nb.lines().filter(|l| l.contains("sleep 60")).count(),
        2,
        "{nb}"
    );

    // The job event log, in HTCondor's format.
    let log = std::fs::read_to_string(dir.join("job.log")).unwrap();
    assert_eq!(log.matches("Job submitted from host:").count(), 3, "{log}");
    assert!(
        log.contains("012 (001.001.000)") && log.contains("013 (001.001.000)"),
        "{log}"
    );
    assert!(log.contains("009 (001.002.000)"), "{log}");

    // A second pool on the same state directory is refused.
    let second = common::command(&state, &[])
        .args(["pool", "up", "--state"])
        .arg(&state)
        .output()
        .unwrap();
    assert_eq!(second.status.code(), Some(2));
    assert!(
        err(&second).contains("a pool is already running on"),
        "{}",
        err(&second)
    );

    // SIGKILL, then up again on the same directory: the same jobs, once each.
    pool.kill();
    let _pool = PoolProcess::start(&state, QUEUE_ONLY);
    assert_eq!(
        ok(t(&["q", "-af", "ClusterId", "ProcId", "JobStatus"])),
        "1 0 1\n1 1 1\n"
    );
    assert_eq!(ok(t(&["history", "-af", "ClusterId", "ProcId"])), "1 2\n");
    // Cluster ids are not reused after the restart.
    let s = ok(t(&["submit", "job.sub"]));
    assert!(s.contains("3 job(s) submitted to cluster 2."), "{s}");
    // A constraint, and rm by cluster.
    assert_eq!(
        ok(t(&["q", "-constraint", "ClusterId == 2", "-af", "ProcId"])),
        "0\n1\n2\n"
    );
    // -totals: the schedd's counters (the summary ad alone), which the
    // restart rebuilt; a constraint on the status, and one on the cluster
    // that the schedd evaluates.
    let totals = ok(t(&["q", "-totals"]));
    assert!(
        totals.contains("Total for query: 5 jobs; 0 completed, 0 removed, 5 idle, 0 running"),
        "{totals}"
    );
    assert!(
        totals.contains("Total for all users: 5 jobs; 0 completed, 0 removed, 5 idle"),
        "{totals}"
    );
    let held = ok(t(&["q", "-totals", "-hold"]));
    assert!(held.contains("Total for query: 0 jobs;"), "{held}");
    let one = ok(t(&["q", "-totals", "1"]));
    assert!(one.contains("Total for query: 2 jobs;"), "{one}");
    assert_eq!(
        ok(t(&["rm", "2"])),
        "All jobs in cluster 2 have been marked for removal\n"
    );
    assert_eq!(
        ok(t(&["history", "-limit", "1", "-af", "ClusterId"])),
        "2\n"
    );

    // pool down stops it cleanly.
    let down = ok(run(&state, &dir, &["pool", "down"]));
    assert!(down.contains("is down"), "{down}");
    assert!(!state.join(".schedd_address").exists());
}

#[test]
fn tools_without_a_pool_say_how_to_start_one() {
    let dir = scratch("none");
    let state = dir.join("nothing-here");
    for args in [&["q"][..], &["rm", "1"], &["history"], &["pool", "down"]] {
        let o = run(&state, &dir, args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert_eq!(
            err(&o),
            format!(
                "no pool is running at {}: start one with `ferrocondor pool up`\n",
                state.display()
            ),
            "{args:?}"
        );
    }
}

#[test]
fn malformed_requests_get_a_clear_error_and_the_pool_stays_up() {
    use std::io::{Read, Write};
    let dir = scratch("bad");
    let state = dir.join("state");
    let _pool = PoolProcess::start(&state, QUEUE_ONLY);
    // Garbage on the command port: the connection is closed, the pool
    // serves on.
    let address = std::fs::read_to_string(state.join(".schedd_address")).unwrap();
    let address = address.lines().next().unwrap();
    let hostport = address
        .trim_start_matches('<')
        .split(['?', '>'])
        .next()
        .unwrap();
    for raw in [
        &b"POST /v1/jobs/query HTTP/1.1\r\nHost: x\r\n\r\n"[..],
        &[0u8, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0xea, 0x61][..],
        &[1u8, 0xff, 0xff, 0xff, 0x7f][..],
    ] {
        let mut s = std::net::TcpStream::connect(hostport).unwrap();
        s.set_read_timeout(Some(std::time::Duration::from_secs(30)))
            .unwrap();
        s.write_all(raw).unwrap();
        let _ = s.shutdown(std::net::Shutdown::Write);
        let mut answer = Vec::new();
        // Closed (EOF or reset) within the deadline, not left hanging.
        let _ = s.read_to_end(&mut answer);
    }
    // A constraint that does not parse is refused by name, as typed.
    let o = run(&state, &dir, &["q", "-constraint", "JobStatus =="]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        err(&o).starts_with("-constraint:1:") && err(&o).contains("| JobStatus ==\n"),
        "{}",
        err(&o)
    );
    ok(run(&state, &dir, &["q"]));
}

/// A pool started by a user runs every job as that user, so it takes
/// submissions only from that user (and root); another user is refused and
/// told why. (As root the harness runs the pool as nobody, and uid 1 is
/// another user; otherwise only the pool's own user is at hand.)
#[test]
fn a_user_s_pool_takes_jobs_only_from_that_user() {
    let dir = scratch("mine");
    let state = dir.join("state");
    let _pool = PoolProcess::start(&state, QUEUE_ONLY);
    write(&dir.join("job.sub"), "executable = /bin/true\nqueue\n");
    let mine = run(&state, &dir, &["submit", "job.sub"]);
    assert!(ok(mine).contains("1 job(s) submitted"));
    if common::run_as().is_some() {
        use std::os::unix::process::CommandExt;
        let o = std::process::Command::new(common::bin())
            .env("FERROCONDOR_STATE", &state)
            .env("CONDOR_CONFIG", "ONLY_ENV")
            .args(["submit", "job.sub"])
            .uid(1)
            .gid(1)
            .current_dir(&dir)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{}", err(&o));
        assert!(
            err(&o).contains("permission denied: this pool runs every job as nobody"),
            "{}",
            err(&o)
        );
        assert_eq!(ok(run(&state, &dir, &["q", "-af", "ClusterId"])), "1\n");
    }
}
