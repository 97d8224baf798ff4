//! The parallel universe on a pool of hosts (issue 15): a job with
//! `machine_count = 3` runs on three execute points at once, under the
//! access point's dedicated scheduler. Three execute points are configured
//! as the manual's dedicated resources (`examples/config/dedicated-only.conf`,
//! naming this access point's dedicated scheduler), a fourth is not, and
//! never gets a node. Each node writes which node it is, the node count
//! its starter gave it and where it runs, then waits until every node has
//! started (the hosts share a file system): a node that ran alone would
//! wait in vain. A second job shows the teardown: node 0 exits at once,
//! the other nodes' long sleeps are stopped and their machines free.
//!
//! The hosts are network namespaces (`common/bed.rs`); where they cannot
//! be made the test says `skipped:` and passes.

#[path = "common/bed.rs"]
mod bed;
mod common;
#[path = "../src/testbed.rs"]
mod hosts;

use std::path::Path;

use bed::{until, Pool, AP, FAST};
use common::out;

/// The dedicated execute points, and one that is not.
const DEDICATED: [usize; 3] = [2, 3, 4];
const PLAIN: usize = 5;

fn host_config(i: usize) -> String {
    match i {
        AP => "SCHEDD_NAME = ap1@hosts.test\n".into(),
        _ if DEDICATED.contains(&i) => format!(
            "NUM_CPUS = 1\n\
             include : {}\n\
             DedicatedScheduler = \"DedicatedScheduler@ap1@hosts.test\"\n",
            common::example("dedicated-only.conf")
        ),
        PLAIN => "NUM_CPUS = 1\n".into(),
        _ => String::new(),
    }
}

/// Each node: `start.N` (its _CONDOR_PROCNO, _CONDOR_NPROCS, $(Node) and
/// its address), then, once every node has started, `seen.N` (how many
/// had) and, after node 0 waits a little, `done.N`.
fn node_script(ip: &str, tag: &str, rest_sleep: u32) -> String {
    format!(
        "#!/bin/sh\n\
         n=$1\n\
         echo \"$_CONDOR_PROCNO $_CONDOR_NPROCS $n\" > {tag}start.$n\n\
         {ip} -4 -o addr show dev eth0 >> {tag}start.$n\n\
         i=0\n\
         while [ \"$(ls {tag}start.* | wc -l)\" -lt 3 ] && [ $i -lt 240 ]; do sleep 0.25; i=$((i+1)); done\n\
         ls {tag}start.* | wc -l > {tag}seen.$n\n\
         if [ \"$_CONDOR_PROCNO\" = 0 ]; then sleep 2; else sleep {rest_sleep}; fi\n\
         echo done > {tag}done.$n\n"
    )
}

fn ip_tool() -> &'static str {
    ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .unwrap()
}

fn submit_text(script: &str, log: &str) -> String {
    format!(
        "universe = parallel\n\
         executable = {script}\n\
         arguments = $(Node)\n\
         machine_count = 3\n\
         should_transfer_files = NO\n\
         log = {log}\n\
         queue\n"
    )
}

fn write_script(pool: &Pool, name: &str, text: &str) {
    common::write_script(&pool.base.join("work").join(name), text);
}

#[test]
fn a_parallel_job_with_machine_count_three_runs_on_three_execute_points_at_once() {
    let Some(pool) = Pool::with_hosts("parallel-hosts", 6, &[], FAST, |i, _| host_config(i)) else {
        return;
    };
    let slots = pool.wait_slots(4);
    println!("slots:\n{slots}");
    let o = pool.on(AP, &["status", "-af", "Name", "DedicatedScheduler"]);
    println!("{}", out(&o));
    assert_eq!(
        out(&o)
            .lines()
            .filter(|l| l.contains("\"DedicatedScheduler@ap1@hosts.test\"")
                || l.ends_with("DedicatedScheduler@ap1@hosts.test"))
            .count(),
        3,
        "three execute points name the dedicated scheduler: {}",
        out(&o)
    );

    write_script(&pool, "node.sh", &node_script(ip_tool(), "", 0));
    let cluster = pool.submit_with("par.sub", &submit_text("node.sh", "par.log"), &[]);
    pool.wait_done(cluster, 1, 120);
    let mut hosts = Vec::new();
    for n in 0..3 {
        let start = pool.lines(&format!("start.{n}"));
        assert_eq!(
            start.first().map(String::as_str),
            Some(format!("{n} 3 {n}").as_str()),
            "node {n}: _CONDOR_PROCNO, _CONDOR_NPROCS and $(Node): {start:?}"
        );
        let host = start
            .get(1)
            .and_then(|l| pool.host_in(l))
            .unwrap_or_else(|| panic!("node {n} says: {start:?}"));
        hosts.push(host);
        assert_eq!(
            pool.lines(&format!("seen.{n}")),
            vec!["3".to_string()],
            "node {n} saw every node start: they ran at once"
        );
        assert_eq!(pool.lines(&format!("done.{n}")), vec!["done".to_string()]);
    }
    hosts.sort();
    assert_eq!(hosts, DEDICATED, "one node on each dedicated execute point");
    // The job log: submitted, started once, ended once.
    let id = format!("{cluster}.0");
    let events = pool.events("par.log", &id);
    assert_eq!(events, ["000", "001", "005"], "{events:?}");
    let o = pool.on(
        AP,
        &[
            "history",
            &cluster.to_string(),
            "-af",
            "JobUniverse",
            "MaxHosts",
        ],
    );
    assert_eq!(out(&o).trim(), "11 3");

    // Torn down together: node 0 exits after 2 s; nodes 1 and 2 would
    // sleep 300 s, and are stopped when it does.
    write_script(&pool, "teardown.sh", &node_script(ip_tool(), "t", 300));
    let cluster = pool.submit_with("t.sub", &submit_text("teardown.sh", "t.log"), &[]);
    pool.wait_done(cluster, 1, 120);
    assert_eq!(pool.lines("tdone.0"), vec!["done".to_string()]);
    until(60, "the other nodes' machines to be free", || {
        let o = pool.on(AP, &["status", "-af", "Name", "State"]);
        let text = out(&o);
        let claimed = text.lines().filter(|l| l.contains("Claimed")).count();
        (claimed == 0)
            .then_some(())
            .ok_or_else(|| format!("{text}\n{}", pool.logs()))
    });
    for n in 1..3 {
        assert!(
            pool.lines(&format!("tdone.{n}")).is_empty(),
            "node {n} was stopped with node 0, not left to finish"
        );
    }
}
