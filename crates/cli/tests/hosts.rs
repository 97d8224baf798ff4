//! A pool's tools on another host (issue 15's test bed, first use): a
//! personal pool runs on host A, listening on A's address; a user on host
//! B, with a configuration that names only COLLECTOR_HOST and a token
//! the pool's owner signed, submits, watches, removes and finds the
//! history of jobs that run on A. Without a token, B may read but not
//! submit: FS proves only a user of the pool's own host, and host B
//! shares A's file system here (as a cluster's hosts may share /tmp by
//! mistake), so only a check of where the peer is keeps B out.
//!
//! The hosts are network namespaces (`common/hosts.rs`); where they
//! cannot be made the test says `skipped:` and passes.

#[path = "common/bed.rs"]
mod bed;
mod common;
#[path = "../src/testbed.rs"]
mod hosts;

use std::path::Path;
use std::process::Command;

use bed::{both, dir_for, tool, until};
use common::{err, me, out, scratch, write, PoolProcess};
use hosts::Hosts;

const A: usize = 0;
const B: usize = 1;

#[test]
fn a_pools_tools_work_from_another_host_with_a_token() {
    let Some(hosts) = Hosts::or_skip(2) else {
        return;
    };
    let a = hosts.addr(A);
    // For a person debugging by hand: `ip netns exec NAME ...` while it runs.
    println!(
        "host A: {} ({a}), host B: {} ({})",
        hosts.name(A),
        hosts.name(B),
        hosts.addr(B)
    );
    let base = scratch("hosts");
    let user = me();

    // Host A: a personal pool whose command port is COLLECTOR_HOST's,
    // on A's address, with a signing key (so it takes TOKEN beside FS).
    let state = dir_for(&base, "a-state");
    let a_home = dir_for(&base, "a-home");
    let a_config = base.join("a.config");
    write(
        &a_config,
        &format!(
            "COLLECTOR_HOST = {a}:9618\n\
             UID_DOMAIN = hosts.test\n\
             SEC_DEFAULT_AUTHENTICATION_METHODS = FS, TOKEN\n\
             NUM_CPUS = 2\n\
             POLLING_INTERVAL = 1\n\
             NEGOTIATOR_INTERVAL = 2\n\
             UPDATE_INTERVAL = 1\n\
             PERIODIC_EXPR_INTERVAL = 1\n"
        ),
    );
    let on_a = |args: &[&str]| {
        let mut c = tool(&a_config, &a_home, args);
        c.env("FERROCONDOR_STATE", &state);
        hosts.output(A, &mut c)
    };
    let o = on_a(&["token", "create-key"]);
    assert!(o.status.success(), "{}", both(&o));
    // The pool's owner signs a token for the user, who takes it to B.
    let o = on_a(&[
        "token",
        "create",
        "-identity",
        &format!("{user}@hosts.test"),
    ]);
    assert!(o.status.success(), "{}", both(&o));
    let token = out(&o);

    let pool = PoolProcess::spawn_by(
        &state,
        tool(&a_config, &a_home, &[]),
        &["pool", "up"],
        |c| hosts.spawn(A, c),
    );
    until(20, "the pool on A", || {
        let o = on_a(&["status", "-af", "Name"]);
        (o.status.success() && !out(&o).is_empty())
            .then_some(())
            .ok_or_else(|| format!("{}\n{}", both(&o), pool.daemon_log()))
    });

    // Host B: a configuration of one line, no pool, no address file.
    let b_config = base.join("b.config");
    write(&b_config, &format!("COLLECTOR_HOST = {a}:9618\n"));
    let stranger_home = dir_for(&base, "b-home-without-token");
    let b_home = dir_for(&base, "b-home");
    let tokens = dir_for(&dir_for(&b_home, ".condor"), "tokens.d");
    write(&tokens.join("pool"), &token);
    std::fs::set_permissions(
        tokens.join("pool"),
        std::os::unix::fs::PermissionsExt::from_mode(0o600),
    )
    .unwrap();
    let work = dir_for(&base, "work");
    let on_b = |home: &Path, args: &[&str]| {
        let mut c = tool(&b_config, home, args);
        c.current_dir(&work);
        hosts.output(B, &mut c)
    };

    // The schedd's ad names where B can reach it.
    let o = on_b(&stranger_home, &["status", "-schedd", "-af", "MyAddress"]);
    assert!(o.status.success(), "{}", both(&o));
    assert_eq!(out(&o).trim(), format!("<{a}:9618?noUDP>"));

    // Without a token: reading works, submitting is refused, and says why.
    let o = on_b(&stranger_home, &["status", "-af", "Name", "State"]);
    assert!(o.status.success(), "{}", both(&o));
    assert!(out(&o).contains("Unclaimed"), "{}", both(&o));
    write(
        &work.join("job.sub"),
        &format!(
            "executable = /bin/sh\n\
             arguments = \"-c '{ip} -4 -o addr show dev eth0'\"\n\
             should_transfer_files = NO\n\
             output = job.out\n\
             error = job.err\n\
             queue\n",
            ip = ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"]
                .iter()
                .find(|p| Path::new(p).exists())
                .unwrap()
        ),
    );
    let o = on_b(&stranger_home, &["submit", "job.sub"]);
    assert!(!o.status.success(), "{}", both(&o));
    let refusal = err(&o);
    println!("without a token, from B: {refusal}");
    assert!(refusal.contains("could not authenticate"), "{refusal}");
    assert!(refusal.contains("own host"), "{refusal}");
    assert!(refusal.contains("no token"), "{refusal}");

    // With the token: submitted, owned by the token's user, run on A.
    let o = on_b(&b_home, &["submit", "job.sub"]);
    assert!(o.status.success(), "{}", both(&o));
    assert!(
        out(&o).contains("1 job(s) submitted to cluster 1"),
        "{}",
        both(&o)
    );
    let o = on_b(&b_home, &["q", "-af", "Owner", "User"]);
    assert!(o.status.success(), "{}", both(&o));
    let q = out(&o);
    assert!(
        q.is_empty() || q.trim() == format!("{user} {user}@hosts.test"),
        "{q}"
    );
    until(30, "job 1.0 in the history", || {
        let o = on_b(
            &b_home,
            &["history", "1.0", "-af", "JobStatus", "ExitCode", "Owner"],
        );
        (out(&o).trim() == format!("4 0 {user}"))
            .then_some(())
            .ok_or_else(|| format!("{}\n{}", both(&o), pool.daemon_log()))
    });
    let ran = std::fs::read_to_string(work.join("job.out")).unwrap_or_default();
    assert!(
        ran.contains(&format!("inet {a}/24")),
        "the job ran on A: {ran}"
    );

    // rm from B: a running job is removed, and B sees it in the history.
    write(
        &work.join("long.sub"),
        "executable = /bin/sleep\narguments = 300\nshould_transfer_files = NO\nqueue\n",
    );
    let o = on_b(&b_home, &["submit", "long.sub"]);
    assert!(o.status.success(), "{}", both(&o));
    until(30, "job 2.0 running", || {
        let o = on_b(&b_home, &["q", "2.0", "-af", "JobStatus"]);
        (out(&o).trim() == "2")
            .then_some(())
            .ok_or_else(|| both(&o))
    });
    // Without the token, B may not remove it.
    let o = on_b(&stranger_home, &["rm", "2.0"]);
    assert!(!o.status.success(), "{}", both(&o));
    let o = on_b(&b_home, &["rm", "2.0"]);
    assert!(o.status.success(), "{}", both(&o));
    assert_eq!(out(&o), "Job 2.0 marked for removal\n");
    until(30, "job 2.0 removed", || {
        let o = on_b(&b_home, &["history", "2.0", "-af", "JobStatus"]);
        (out(&o).trim() == "3")
            .then_some(())
            .ok_or_else(|| both(&o))
    });

    // On A itself FS still proves the user: a local tool without a token
    // may write (here: remove nothing, and be allowed to ask).
    let o = on_a(&["rm", "-constraint", "false"]);
    assert!(
        !both(&o).contains("could not authenticate"),
        "a tool on A without a token: {}",
        both(&o)
    );
    drop(pool);
    drop(hosts);
}

/// The namespaces of the test bed, as `ip netns list` would show them.
fn beds() -> Vec<String> {
    std::fs::read_dir("/run/netns")
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("fchosts-"))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_bed_is_gone_after_its_test_panics_and_a_dead_runs_bed_is_removed() {
    // A bed of a run that was killed: the pid of a process that is gone.
    let mut gone = Command::new("true").spawn().unwrap();
    let dead = gone.id();
    gone.wait().unwrap();
    let stale = format!("fchosts-{dead}-0-h0");
    let made = Command::new("ip")
        .args(["netns", "add", &stale])
        .output()
        .map(|o| o.status.success());
    let Some(hosts) = Hosts::or_skip(1) else {
        return;
    };
    if made.unwrap_or(false) {
        assert!(!beds().contains(&stale), "{:?}", beds());
    }
    let names = vec![hosts.name(0).to_string()];
    drop(hosts);
    let panicked = std::panic::catch_unwind(|| {
        let hosts = Hosts::new(2).unwrap();
        let names: Vec<String> = (0..2).map(|i| hosts.name(i).to_string()).collect();
        assert!(names.iter().all(|n| beds().contains(n)));
        // A process still running on a host goes with it: an orphan, as a
        // job a killed daemon leaves (the shell that made it has ended).
        let o = hosts.output(
            1,
            Command::new("sh").args(["-c", "sleep 300 >/dev/null 2>&1 & echo $!"]),
        );
        let orphan = out(&o).trim().to_string();
        assert!(common::alive(orphan.parse().unwrap()));
        panic!("{orphan} {}", names.join(" "));
    });
    let Err(payload) = panicked else {
        unreachable!()
    };
    let said: Vec<String> = payload
        .downcast_ref::<String>()
        .unwrap()
        .split(' ')
        .map(str::to_string)
        .collect();
    let orphan: i32 = said[0].parse().unwrap();
    assert!(!common::alive(orphan), "the orphan {orphan} is still there");
    let left = beds();
    assert!(
        said[1..].iter().chain(&names).all(|n| !left.contains(n)),
        "{left:?}"
    );
}
