//! A pool of many hosts (issue 15): a central manager (collector and
//! negotiator), an access point (schedd) and execute points (startds),
//! each host its own `ferrocondor master` with its own state directory
//! and configuration, talking HTCondor's protocol across the test bed's
//! network (`common/bed.rs`). Only the central manager holds the pool's
//! signing key; every host holds a token for the daemons' identity, which
//! only the central manager can verify: access points and execute points
//! talk in sessions it brokers (the slots' claim ids, the schedd's
//! capability). An execute point whose token the pool did not sign is
//! refused by the collector and never runs a job.
//!
//! The hosts are network namespaces (`common/hosts.rs`); where they
//! cannot be made the test says `skipped:` and passes. The hosts share
//! the machine's file system: jobs here read and write their files in
//! place (a shared FILESYSTEM_DOMAIN).

#[path = "common/bed.rs"]
mod bed;
mod common;
#[path = "../src/testbed.rs"]
mod hosts;

use std::time::Duration;

use bed::{jobs, running_on, until, Pool, AP, CM, FAST};
use common::out;

/// The execute points with the pool's token.
const EPS: [usize; 3] = [2, 3, 4];
/// An execute point whose token another key signed.
const ROGUE: usize = 5;

#[test]
fn a_pool_of_a_central_manager_an_access_point_and_three_execute_points_runs_jobs_on_all() {
    // Hosts 2-4 execute points with the pool's token, host 5 without.
    let Some(pool) = Pool::new("pool-of-hosts", 6, &[ROGUE], "") else {
        return;
    };
    let slots = pool.wait_slots(6);
    println!("slots:\n{slots}");
    for &i in &EPS {
        let mine: Vec<&str> = slots
            .lines()
            .filter(|l| l.contains(&format!("@ep{i}@")))
            .collect();
        assert_eq!(mine.len(), 2, "host {i}: {slots}");
        assert!(
            mine.iter()
                .all(|l| l.contains(&format!("<{}:", pool.hosts.addr(i)))),
            "the slots of host {i} give its address: {slots}"
        );
    }
    assert!(!slots.contains(&format!("ep{ROGUE}")), "{slots}");

    // Jobs submitted on the access point run on the execute points, each
    // writing where it ran.
    pool.submit("jobs.sub", &jobs("jobs.log", 1, 24, 2400));
    pool.wait_done(1, 24, 120);
    let mut ran_on = std::collections::BTreeMap::new();
    for p in 0..24 {
        let runs = pool.lines(&format!("runs.1.{p}"));
        assert_eq!(runs.len(), 1, "job {p} ran once: {runs:?}");
        let host = pool
            .host_in(&runs[0])
            .unwrap_or_else(|| panic!("job {p} says: {runs:?}"));
        *ran_on.entry(host).or_insert(0) += 1;
    }
    println!("jobs per host: {ran_on:?}");
    assert!(
        ran_on.keys().all(|h| EPS.contains(h)),
        "jobs ran only on the execute points with the pool's token: {ran_on:?}"
    );
    assert_eq!(ran_on.len(), 3, "every execute point ran jobs: {ran_on:?}");
    // The history says where each job ran, by its slot and its startd's
    // address.
    let o = pool.on(AP, &["history", "-af", "LastRemoteHost", "StartdIpAddr"]);
    for line in out(&o).lines() {
        assert!(line.starts_with("slot") && line.contains("@ep"), "{line}");
        assert!(
            pool.host_in(line).is_some_and(|h| EPS.contains(&h)),
            "{line}"
        );
    }

    // `q -better-analyze` on the access point looks at the whole pool: a
    // job no slot can take says how many slots of the pool it considered.
    pool.submit(
        "big.sub",
        "executable = /bin/true\nrequest_memory = 10000000\nqueue\n",
    );
    let o = pool.on(AP, &["q", "-better-analyze", "2.0"]);
    let analysis = out(&o);
    println!("{analysis}");
    assert!(
        analysis.contains("Of 6 slots"),
        "the pool's six slots: {analysis}"
    );
    assert!(analysis.contains("Memory"), "{analysis}");

    // The rogue execute point never got in: its startd could not
    // authenticate to the collector, and says so.
    let rogue = pool.log(ROGUE);
    assert!(rogue.contains("not reachable"), "{rogue}");

    // The sessions the central manager brokers (a slot's ClaimId, the
    // schedd's Capability) are private: no tool sees them.
    for args in [&["status", "-l"][..], &["status", "-schedd", "-l"]] {
        let text = out(&pool.on(AP, args));
        assert!(text.contains("MyAddress"), "{args:?}: {text}");
        assert!(
            !text.contains("ClaimId") && !text.contains("Capability"),
            "{args:?}: {text}"
        );
    }
    // The access point has no key to verify a token with, so a daemon's
    // token from an execute point is no way in, nor is a made-up session:
    // both refused, and the access point's log says why.
    let schedd = daemons::role_transport::read_address(
        &pool.all[AP].state.join("roles").join("SCHEDD.address"),
    )
    .expect("the schedd's address");
    let token = std::fs::read_to_string(
        pool.all[EPS[0]]
            .config
            .parent()
            .unwrap()
            .join("tokens.d")
            .join("pool"),
    )
    .unwrap();
    let (by_token, by_forged) = pool.hosts.within(EPS[0], || {
        let timeout = Duration::from_secs(10);
        let o = cedar::client::ClientOptions {
            methods: vec![cedar::auth::Method::Token],
            timeout,
            ..Default::default()
        }
        .with_token(token.trim())
        .unwrap();
        let cmd = cedar::commands::FC_ROLE_MESSAGES;
        let by_token = cedar::client::connect(&schedd, cmd, &o, None).err();
        let forged = cedar::capability::Capability::mint("<10.231.0.3:1>#1", &[cmd]);
        let by_forged = cedar::client::resume_session(&schedd, cmd, &forged, timeout).err();
        (
            by_token.map(|e| e.to_string()),
            by_forged.map(|e| e.to_string()),
        )
    });
    assert!(by_token.is_some(), "a token the access point cannot verify");
    assert!(
        by_forged
            .as_deref()
            .is_some_and(|e| e.contains("SID_NOT_FOUND")),
        "{by_forged:?}"
    );
    until(20, "the access point's refusals in its log", || {
        let log = pool.log(AP);
        (log.contains("could not set up security for FC_ROLE_MESSAGES")
            && log.contains("which this daemon does not have"))
        .then_some(())
        .ok_or(log)
    });

    // An execute point shut down withdraws its slots at once
    // (INVALIDATE_STARTD_ADS), not after CLASSAD_LIFETIME.
    let mut pool = pool;
    if let Some(mut m) = pool.masters[4].take() {
        m.stop();
    }
    pool.wait_slots(4);
}

#[test]
fn jobs_of_an_execute_point_that_dies_or_is_cut_off_past_the_lease_run_again_elsewhere_once() {
    let Some(mut pool) = Pool::new("pool-failures", 5, &[], FAST) else {
        return;
    };
    pool.wait_slots(6);

    // An execute point dies while its jobs run: they run again on the
    // others once their lease (20 s) is over, and each completes once.
    pool.submit("a.sub", &jobs("a.log", 10, 6, 20));
    let placed = running_on(&pool, 1, 6);
    let victims: Vec<u32> = placed
        .iter()
        .filter(|(_, h)| *h == 4)
        .map(|(p, _)| *p)
        .collect();
    assert_eq!(victims.len(), 2, "{placed:?}");
    pool.crash(4);
    pool.wait_done(1, 6, 150);
    for p in 0..6u32 {
        let runs = pool.lines(&format!("runs.1.{p}"));
        let done = pool.lines(&format!("done.1.{p}"));
        assert_eq!(done.len(), 1, "job 1.{p} completed once: {done:?}");
        let events = pool.events("a.log", &format!("1.{p}"));
        if victims.contains(&p) {
            assert_eq!(runs.len(), 2, "job 1.{p} ran again: {runs:?}");
            assert_eq!(pool.host_in(&runs[0]), Some(4));
            assert_ne!(pool.host_in(&runs[1]), Some(4));
            assert!(events.contains(&"024".to_string()), "1.{p}: {events:?}");
        } else {
            assert_eq!(runs.len(), 1, "job 1.{p}: {runs:?}");
            assert!(!events.contains(&"024".to_string()), "1.{p}: {events:?}");
        }
        assert_eq!(
            events.iter().filter(|e| *e == "005").count(),
            1,
            "1.{p}: {events:?}"
        );
    }
    let log = pool.lines("a.log").join("\n");
    assert!(
        log.contains("Job disconnected too long: JobLeaseDuration (20 seconds) expired"),
        "{log}"
    );
    // The host comes back.
    pool.start(4);
    pool.wait_slots(6);

    // A short network cut (8 s, under the 20 s lease): the jobs there go
    // on and complete, once.
    pool.submit("b.sub", &jobs("b.log", 16, 6, 20));
    let placed = running_on(&pool, 2, 6);
    let cut: Vec<u32> = placed
        .iter()
        .filter(|(_, h)| *h == 2)
        .map(|(p, _)| *p)
        .collect();
    pool.hosts.unplug(2);
    std::thread::sleep(Duration::from_secs(8));
    pool.hosts.plug(2);
    pool.wait_done(2, 6, 120);
    for p in 0..6u32 {
        let runs = pool.lines(&format!("runs.2.{p}"));
        assert_eq!(runs.len(), 1, "job 2.{p} ran once: {runs:?}");
        assert_eq!(pool.lines(&format!("done.2.{p}")).len(), 1);
        let events = pool.events("b.log", &format!("2.{p}"));
        assert!(!events.contains(&"024".to_string()), "2.{p}: {events:?}");
    }
    println!("short cut of host 2 while {cut:?} ran there");
    pool.wait_slots(6);

    // A long one (30 s, past the lease): the execute point kills its jobs
    // when their lease ends, the access point gives them up and they run
    // again elsewhere, each completing once.
    pool.submit("c.sub", &jobs("c.log", 25, 6, 20));
    let placed = running_on(&pool, 3, 6);
    let cut: Vec<u32> = placed
        .iter()
        .filter(|(_, h)| *h == 3)
        .map(|(p, _)| *p)
        .collect();
    pool.hosts.unplug(3);
    std::thread::sleep(Duration::from_secs(30));
    pool.hosts.plug(3);
    pool.wait_done(3, 6, 150);
    for p in 0..6u32 {
        let runs = pool.lines(&format!("runs.3.{p}"));
        let done = pool.lines(&format!("done.3.{p}"));
        assert_eq!(done.len(), 1, "job 3.{p} completed once: {done:?} {runs:?}");
        let events = pool.events("c.log", &format!("3.{p}"));
        if cut.contains(&p) {
            assert_eq!(runs.len(), 2, "job 3.{p} ran again: {runs:?}");
            assert_eq!(pool.host_in(&runs[0]), Some(3));
            assert!(events.contains(&"024".to_string()), "3.{p}: {events:?}");
        } else {
            assert_eq!(runs.len(), 1, "job 3.{p}: {runs:?}");
        }
    }
}

#[test]
fn running_jobs_survive_restarts_of_the_access_point_and_the_central_manager() {
    let Some(mut pool) = Pool::new("pool-restarts", 5, &[], FAST) else {
        return;
    };
    pool.wait_slots(6);

    // The access point dies and comes back while its jobs run: it
    // reconnects to them (023), and each completes once, not run again.
    pool.submit("a.sub", &jobs("a.log", 12, 4, 30));
    running_on(&pool, 1, 4);
    pool.crash(AP);
    std::thread::sleep(Duration::from_secs(2));
    pool.start(AP);
    pool.wait_done(1, 4, 120);
    for p in 0..4u32 {
        assert_eq!(
            pool.lines(&format!("runs.1.{p}")).len(),
            1,
            "1.{p} ran once"
        );
        assert_eq!(pool.lines(&format!("done.1.{p}")).len(), 1);
        let events = pool.events("a.log", &format!("1.{p}"));
        assert!(events.contains(&"023".to_string()), "1.{p}: {events:?}");
        for never in ["024", "004"] {
            assert!(!events.contains(&never.to_string()), "1.{p}: {events:?}");
        }
        assert_eq!(
            events.iter().filter(|e| *e == "001").count(),
            1,
            "1.{p}: {events:?}"
        );
    }
    let log = pool.lines("a.log").join("\n");
    assert!(log.contains("Job reconnected to slot"), "{log}");

    // The central manager dies: the running jobs go on and complete; new
    // jobs start once it is back.
    pool.submit("b.sub", &jobs("b.log", 8, 2, 30));
    running_on(&pool, 2, 2);
    pool.crash(CM);
    pool.wait_done(2, 2, 60);
    pool.start(CM);
    pool.submit("c.sub", &jobs("c.log", 1, 2, 30));
    pool.wait_done(3, 2, 90);
}

/// Jobs whose files move between the hosts: the access point reads each
/// job's executable and input (a file and a directory tree) as the job's
/// user and sends them; the execute point makes them in the job's sandbox
/// as the job's user; the output (a file, a directory, the standard
/// streams) comes back the same way into the job's directory.
#[test]
fn jobs_with_input_and_output_files_run_on_other_hosts_with_their_files_moved_there_and_back() {
    let count: usize = std::env::var("FC_TRANSFER_JOBS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(500);
    let Some(pool) = Pool::new("pool-transfer", 5, &[], "") else {
        return;
    };
    pool.wait_slots(6);
    let work = pool.base.join("work");
    common::write(
        &work.join("job.sh"),
        "#!/bin/sh\n\
         # Where the job runs, what it was given, what it makes.\n\
         pwd\n\
         n=$1\n\
         cat in.txt data/a.txt data/deeper/b.txt > out.$n.txt\n\
         echo \"job $n\" >> out.$n.txt\n\
         mkdir -p results.$n && echo made > results.$n/inside.txt\n\
         echo \"to stderr $n\" >&2\n",
    );
    std::fs::set_permissions(
        work.join("job.sh"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    common::write(&work.join("in.txt"), "input\n");
    bed::dir_for(&work, "data");
    bed::dir_for(&work.join("data"), "deeper");
    common::write(&work.join("data/a.txt"), "alpha\n");
    common::write(&work.join("data/deeper/b.txt"), "beta\n");
    pool.submit(
        "t.sub",
        &format!(
            "executable = job.sh\n\
             arguments = $(Process)\n\
             should_transfer_files = YES\n\
             when_to_transfer_output = ON_EXIT\n\
             transfer_input_files = in.txt, data\n\
             transfer_output_files = out.$(Process).txt, results.$(Process)\n\
             output = stdout.$(Process)\n\
             error = stderr.$(Process)\n\
             log = t.log\n\
             queue {count}\n"
        ),
    );
    pool.wait_done(1, count, 60 + count as u64);
    for p in 0..count {
        let out = std::fs::read_to_string(work.join(format!("out.{p}.txt"))).unwrap_or_default();
        assert_eq!(out, format!("input\nalpha\nbeta\njob {p}\n"), "job 1.{p}");
        let inside = std::fs::read_to_string(work.join(format!("results.{p}/inside.txt")))
            .unwrap_or_default();
        assert_eq!(inside, "made\n", "job 1.{p}");
        let err = std::fs::read_to_string(work.join(format!("stderr.{p}"))).unwrap_or_default();
        assert_eq!(err, format!("to stderr {p}\n"), "job 1.{p}");
        // It ran in a sandbox of an execute point, not in the job's
        // directory.
        let pwd = std::fs::read_to_string(work.join(format!("stdout.{p}"))).unwrap_or_default();
        assert!(
            pwd.contains("/state/execute/") && !pwd.starts_with(work.to_str().unwrap()),
            "job 1.{p} ran in {pwd:?}"
        );
    }
    let o = pool.on(AP, &["history", "1.0", "-af", "BytesRecvd", "BytesSent"]);
    println!("1.0 bytes received and sent: {}", out(&o).trim());
    let f: Vec<f64> = out(&o)
        .split_whitespace()
        .filter_map(|x| x.parse().ok())
        .collect();
    assert!(f.len() == 2 && f[0] > 0.0 && f[1] > 0.0, "{}", out(&o));
}

/// Two access points (SCHEDD_NAME `ap1` and `ap2`) share the execute
/// points: the negotiator asks each schedd for its requests in every
/// cycle and sends each its own matches; both users' jobs run, each on
/// the execute points, and each access point's history has its own.
#[test]
fn two_access_points_share_the_execute_points() {
    const AP2: usize = 2;
    let Some(pool) = Pool::with_access_points("pool-two-aps", 5, &[AP, AP2], &[], "") else {
        return;
    };
    // Hosts 3 and 4 execute: four slots.
    pool.wait_slots(4);
    // Each schedd advertises itself as it starts; the slots may come
    // first.
    bed::until(30, "both schedds at the collector", || {
        let o = pool.on(AP, &["status", "-schedd", "-af", "Name"]);
        let names = out(&o);
        (names.contains("ap1@") && names.contains("ap2@"))
            .then_some(())
            .ok_or(names)
    });
    pool.submit_on(AP, "one.sub", &jobs("one.log", 1, 6, 2400));
    pool.submit_on(AP2, "two.sub", &jobs("two.log", 1, 6, 2400));
    pool.wait_done_on(AP, 1, 6, 120);
    pool.wait_done_on(AP2, 1, 6, 120);
    for p in 0..6 {
        // Both clusters are 1, one at each schedd: each job wrote its own
        // line once (runs.1.N gets one line from each schedd's job).
        let runs = pool.lines(&format!("runs.1.{p}"));
        assert_eq!(runs.len(), 2, "1.{p} at each schedd ran once: {runs:?}");
        assert!(
            runs.iter().all(|l| pool.host_in(l).is_some_and(|h| h >= 3)),
            "{runs:?}"
        );
    }
    for log in ["one.log", "two.log"] {
        for p in 0..6 {
            let events = pool.events(log, &format!("1.{p}"));
            assert_eq!(events, ["000", "001", "005"], "{log} 1.{p}");
        }
        // Submitted from the schedd's command port, where other hosts
        // reach it.
        let text = pool.lines(log).join("\n");
        let ap = if log == "one.log" { AP } else { AP2 };
        assert!(
            text.contains(&format!(
                "Job submitted from host: <{}:",
                pool.hosts.addr(ap)
            )),
            "{text}"
        );
    }
}

/// The second form of the bed (`testbed.rs`): the same pool, each host an
/// address of its own on loopback, which needs no privilege, so this runs
/// wherever the tests do (and as root here, to keep it tested). Jobs run
/// on every execute point, once each, and the history says where; an
/// execute point that dies (its master and every process under it killed)
/// loses its jobs to the others, each completing once. What this form
/// cannot show (a network cut, a host whose token the pool did not sign:
/// every host is "this host" to FS authentication) stays with the
/// namespace form above.
#[test]
fn the_same_pool_on_loopback_addresses_runs_jobs_on_every_execute_point() {
    let mut pool = Pool::on_loopback("pool-on-loopback", 5, FAST);
    assert!(pool.hosts.is_loopback());
    let slots = pool.wait_slots(6);
    println!("slots:\n{slots}");
    for &i in &EPS {
        assert!(
            slots.contains(&format!("@ep{i}@"))
                && slots.contains(&format!("<{}:", pool.hosts.addr(i))),
            "host {i} listens on its own address: {slots}"
        );
    }
    pool.submit("jobs.sub", &jobs("jobs.log", 1, 12, 20));
    pool.wait_done(1, 12, 120);
    let mut ran_on = std::collections::BTreeSet::new();
    for p in 0..12 {
        let runs = pool.lines(&format!("runs.1.{p}"));
        assert_eq!(runs.len(), 1, "job {p} ran once: {runs:?}");
        ran_on.insert(pool.host_in(&runs[0]).unwrap_or_else(|| panic!("{runs:?}")));
    }
    assert_eq!(
        ran_on.into_iter().collect::<Vec<_>>(),
        EPS,
        "every execute point ran jobs"
    );

    // An execute point dies while jobs run: they run again elsewhere.
    pool.submit("long.sub", &jobs("long.log", 8, 6, 6));
    let placed = running_on(&pool, 2, 6);
    let victim = placed[0].1;
    let lost: Vec<u32> = placed
        .iter()
        .filter(|(_, h)| *h == victim)
        .map(|(p, _)| *p)
        .collect();
    pool.crash(victim);
    println!("host {victim} crashed with jobs {lost:?}");
    pool.wait_done(2, 6, 180);
    for p in 0..6 {
        let done = pool.lines(&format!("done.2.{p}"));
        assert_eq!(done.len(), 1, "job 2.{p} completed once: {done:?}");
    }
    for p in lost {
        let runs = pool.lines(&format!("runs.2.{p}"));
        assert!(runs.len() >= 2, "job 2.{p} ran again: {runs:?}");
        assert_ne!(pool.host_in(runs.last().unwrap()), Some(victim), "{runs:?}");
    }
}
