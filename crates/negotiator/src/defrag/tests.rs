//! The defrag policy against the manual's example and defrag.cpp's rules.

use super::*;
use config::{load, FixedHost, LoadOptions, MemFiles, Root};

/// 2023-11-14 22:00:00 UTC: the start of an hour.
const HOUR: i64 = 1_700_000_000 / 3600 * 3600;

fn policy(text: &str) -> DefragPolicy {
    let config = load(
        &LoadOptions::new("DEFRAG", Root::File("condor_config".into())),
        &MemFiles::new().with(
            "condor_config",
            &format!("FULL_HOSTNAME = cm.example.org\n{text}\n"),
        ),
        &FixedHost::empty(),
    )
    .unwrap();
    DefragPolicy::from_config(&config).unwrap()
}

/// A partitionable slot of `total` cores with `free` of them unclaimed.
fn pslot(host: &str, free: i64, total: i64, extra: &str) -> ClassAd {
    ClassAd::parse(&format!(
        "[ Name = \"slot1@{host}\"; SlotID = 1; PartitionableSlot = true; \
           Cpus = {free}; TotalSlotCpus = {total}; {extra} ]"
    ))
    .unwrap()
}

fn draining(host: &str, free: i64, total: i64, by: &str) -> ClassAd {
    pslot(
        host,
        free,
        total,
        &format!("Draining = true; DrainReason = \"{by}\";"),
    )
}

const ME: &str = "Defrag DEFRAG@cm.example.org";

fn drained(plan: &DefragPlan) -> Vec<&str> {
    plan.drain.iter().map(|d| d.machine.as_str()).collect()
}

#[test]
fn defaults_are_htcondors_and_drain_nothing() {
    let p = policy("");
    assert_eq!(p.interval, 600);
    assert_eq!(p.draining_per_hour, 0.0);
    assert_eq!(p.max_concurrent_draining, -1);
    assert_eq!(p.max_whole_machines, -1);
    assert!(p.requirements.is_none());
    assert_eq!(p.schedule, Schedule::Graceful);
    // LOCALNAME is the subsystem, so HTCondor names it DEFRAG@host.
    assert_eq!(p.name, "DEFRAG@cm.example.org");
    let mut d = Defrag::new(p);
    let ads = vec![pslot("a", 1, 8, "")];
    d.poll(&ads, HOUR);
    let plan = d.poll(&ads, HOUR + 3600);
    assert!(plan.drain.is_empty(), "{plan:?}");
}

#[test]
fn the_quota_splits_into_interval_hour_and_day() {
    // The manual's example: one an hour, polled hourly.
    let q = policy("DEFRAG_INTERVAL = 3600\nDEFRAG_DRAINING_MACHINES_PER_HOUR = 1.0").quota();
    assert_eq!((q.per_poll, q.per_hour, q.per_day), (1, 0, 0));
    // One an hour polled every 10 minutes: nothing per poll, one an hour.
    let q = policy("DEFRAG_DRAINING_MACHINES_PER_HOUR = 1").quota();
    assert_eq!((q.per_poll, q.per_hour, q.per_day), (0, 1, 0));
    // 0.25 an hour: six a day.
    let q = policy("DEFRAG_DRAINING_MACHINES_PER_HOUR = 0.25").quota();
    assert_eq!((q.per_poll, q.per_hour, q.per_day), (0, 0, 6));
    // 13 an hour every 10 minutes: 2 per poll and 1 more each hour.
    let q = policy("DEFRAG_DRAINING_MACHINES_PER_HOUR = 13").quota();
    assert_eq!((q.per_poll, q.per_hour, q.per_day), (2, 1, 0));
}

#[test]
fn prorate_gives_the_share_of_the_period_left() {
    assert_eq!(prorate(1, 0, 3600, 600), 1);
    assert_eq!(prorate(1, 2400, 3600, 600), 1);
    assert_eq!(prorate(1, 3000, 3600, 600), 0);
    assert_eq!(prorate(6, 43200, 86400, 600), 3);
    assert_eq!(prorate(6, 0, 86400, 600), 6);
}

#[test]
fn the_hourly_carry_drains_once_an_hour_and_not_at_the_first_poll() {
    let mut d = Defrag::new(policy("DEFRAG_DRAINING_MACHINES_PER_HOUR = 1"));
    let ads: Vec<ClassAd> = (0..6).map(|i| pslot(&format!("n{i}"), 1, 8, "")).collect();
    let mut per_poll = Vec::new();
    // Polls every 10 minutes for three hours, from 5 minutes into an hour.
    for k in 0..18 {
        per_poll.push(d.poll(&ads, HOUR + 300 + 600 * k).drain.len());
    }
    // The first poll has no previous one: nothing. Then one at the first
    // poll of each new hour.
    assert_eq!(
        per_poll,
        vec![0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0]
    );
    assert_eq!(d.stats.drain_successes, 2);
}

#[test]
fn whole_per_poll_quota_drains_that_many_each_poll() {
    let mut d = Defrag::new(policy(
        "DEFRAG_INTERVAL = 3600\nDEFRAG_DRAINING_MACHINES_PER_HOUR = 2",
    ));
    let ads: Vec<ClassAd> = (0..6).map(|i| pslot(&format!("n{i}"), 1, 8, "")).collect();
    let plan = d.poll(&ads, HOUR + 10);
    assert_eq!(drained(&plan), vec!["n0", "n1"]);
    assert_eq!(plan.drain[0].reason, ME);
    assert!(plan.drain[0].resume_on_completion);
    assert_eq!(plan.drain[0].how, Schedule::Graceful);
}

#[test]
fn an_interval_over_an_hour_drains_nothing_as_in_htcondor() {
    let mut d = Defrag::new(policy(
        "DEFRAG_INTERVAL = 7200\nDEFRAG_DRAINING_MACHINES_PER_HOUR = 2",
    ));
    let plan = d.poll(&[pslot("a", 1, 8, "")], HOUR);
    assert!(plan.drain.is_empty());
    assert!(
        plan.why.contains("DEFRAG_DRAINING_MACHINES_PER_HOUR"),
        "{}",
        plan.why
    );
}

#[test]
fn max_concurrent_draining_counts_only_this_daemons_drains() {
    let text = "DEFRAG_INTERVAL = 3600\nDEFRAG_DRAINING_MACHINES_PER_HOUR = 10\n\
                DEFRAG_MAX_CONCURRENT_DRAINING = 2\nDEFRAG_CANCEL_REQUIREMENTS =";
    let mut d = Defrag::new(policy(text));
    let ads = vec![
        draining("a", 2, 8, ME),
        draining("b", 2, 8, "by the admin"),
        pslot("c", 1, 8, ""),
        pslot("d", 1, 8, ""),
    ];
    let plan = d.poll(&ads, HOUR);
    assert_eq!(plan.draining, 1);
    // One draining is under the limit of 2, and HTCondor checks the limit
    // once per poll: the quota (10) then drains every candidate.
    assert_eq!(drained(&plan), vec!["c", "d"]);
    let ads = vec![
        draining("a", 2, 8, ME),
        pslot("b", 1, 8, "Draining = true;"),
        pslot("c", 1, 8, ""),
    ];
    let plan = d.poll(&ads, HOUR + 3600);
    assert!(plan.drain.is_empty());
    assert!(
        plan.why.contains("DEFRAG_MAX_CONCURRENT_DRAINING=2"),
        "{}",
        plan.why
    );
    assert_eq!(d.stats.machines_draining_peak, 2);
}

#[test]
fn max_whole_machines_stops_draining_and_whole_machines_are_skipped() {
    let text = "DEFRAG_INTERVAL = 3600\nDEFRAG_DRAINING_MACHINES_PER_HOUR = 10\n\
                DEFRAG_MAX_WHOLE_MACHINES = 2";
    let mut d = Defrag::new(policy(text));
    let ads = vec![
        pslot("a", 8, 8, ""),
        pslot("b", 1, 8, ""),
        pslot("c", 3, 8, ""),
    ];
    let plan = d.poll(&ads, HOUR);
    assert_eq!(plan.whole, 1);
    // a is whole already: not drained.
    assert_eq!(drained(&plan), vec!["b", "c"]);
    let ads = vec![
        pslot("a", 8, 8, ""),
        pslot("b", 8, 8, ""),
        pslot("c", 3, 8, ""),
    ];
    let plan = d.poll(&ads, HOUR + 3600);
    assert!(plan.drain.is_empty());
    assert!(
        plan.why.contains("DEFRAG_MAX_WHOLE_MACHINES=2"),
        "{}",
        plan.why
    );
    // A machine made whole by another defrag daemon is not ours to count.
    let ads = vec![
        pslot("a", 8, 8, "DrainReason = \"Defrag other\";"),
        pslot("b", 8, 8, ""),
        pslot("c", 3, 8, ""),
    ];
    let plan = d.poll(&ads, HOUR + 7200);
    assert_eq!(plan.whole, 1);
}

#[test]
fn rank_orders_the_candidates_and_requirements_filter_them() {
    let text = "DEFRAG_INTERVAL = 3600\nDEFRAG_DRAINING_MACHINES_PER_HOUR = 2\n\
                DEFRAG_REQUIREMENTS = Memory >= 1024";
    let mut d = Defrag::new(policy(text));
    let badput = |h: &str, b: i64, mem: i64| {
        pslot(
            h,
            1,
            8,
            &format!("ExpectedMachineGracefulDrainingBadput = {b}; Memory = {mem};"),
        )
    };
    let ads = vec![
        badput("costly", 9000, 4096),
        badput("cheap", 100, 4096),
        badput("small", 0, 512),
        badput("middling", 3000, 4096),
    ];
    // The default DEFRAG_RANK prefers the least badput.
    let plan = d.poll(&ads, HOUR);
    assert_eq!(drained(&plan), vec!["cheap", "middling"]);
    assert_eq!(
        plan.drain[0].check_expr,
        "ExpectedMachineGracefulDrainingCompletion <= 1200 && ExpectedMachineGracefulDrainingBadput <= 1325"
    );
    let mut d = Defrag::new(policy(&format!("{text}\nDEFRAG_RANK = Memory * 0 + ExpectedMachineGracefulDrainingBadput\nDEFRAG_DRAINING_SCHEDULE = quick")));
    let plan = d.poll(&ads, HOUR);
    assert_eq!(drained(&plan), vec!["costly", "middling"]);
    assert_eq!(plan.drain[0].how, Schedule::Quick);
    assert!(plan.drain[0].check_expr.starts_with("ExpectedMachineQuick"));
}

#[test]
fn only_partitionable_slots_count_and_a_machine_once() {
    let text = "DEFRAG_INTERVAL = 3600\nDEFRAG_DRAINING_MACHINES_PER_HOUR = 5";
    let mut d = Defrag::new(policy(text));
    let ads = vec![
        ClassAd::parse("[ Name = \"slot1@static\"; SlotID = 1; Cpus = 1; TotalSlotCpus = 1 ]")
            .unwrap(),
        pslot("offline", 1, 8, "Offline = true;"),
        pslot("twice", 1, 8, ""),
        ClassAd::parse(
            "[ Name = \"slot2@twice\"; SlotID = 2; PartitionableSlot = true; Cpus = 1; TotalSlotCpus = 8 ]",
        )
        .unwrap(),
    ];
    let plan = d.poll(&ads, HOUR);
    assert_eq!(drained(&plan), vec!["twice"]);
}

#[test]
fn cancel_requirements_cancel_drains_that_made_a_whole_machine() {
    let text = "DEFRAG_INTERVAL = 3600\nDEFRAG_DRAINING_MACHINES_PER_HOUR = 5";
    let mut d = Defrag::new(policy(text));
    let ads = vec![
        // Whole while draining (our drain): cancelled, the default
        // DEFRAG_CANCEL_REQUIREMENTS being the whole-machine expression.
        draining("done", 8, 8, ME),
        // Someone else's drain: left alone.
        draining("theirs", 8, 8, "by the admin"),
        draining("halfway", 4, 8, ME),
    ];
    let plan = d.poll(&ads, HOUR);
    assert_eq!(plan.cancel, vec!["done"]);
    assert!(plan.drain.is_empty());
    let ad = d.ad(HOUR);
    assert!(ad
        .get("RecentCancelsList")
        .unwrap()
        .to_string()
        .contains("\"done\""));
    // Without cancel requirements nothing is cancelled.
    let mut d = Defrag::new(policy(&format!("{text}\nDEFRAG_CANCEL_REQUIREMENTS =")));
    assert!(d.poll(&ads, HOUR).cancel.is_empty());
}

#[test]
fn the_daemon_ad_carries_htcondors_figures() {
    let text = "DEFRAG_INTERVAL = 3600\nDEFRAG_DRAINING_MACHINES_PER_HOUR = 1";
    let mut d = Defrag::new(policy(text));
    let cost = "DaemonStartTime = 1000; LastHeardFrom = 2000; TotalCpus = 8; \
                TotalMachineDrainingBadput = 800; TotalMachineDrainingUnclaimedTime = 400;";
    let ads = vec![pslot("a", 1, 8, cost), pslot("b", 8, 8, "")];
    let plan = d.poll(&ads, HOUR);
    assert_eq!(drained(&plan), vec!["a"]);
    // a drains; next poll it is whole: a drained arrival.
    let ads = vec![draining("a", 8, 8, ME), pslot("b", 8, 8, "")];
    d.poll(&ads, HOUR + 3600);
    let ads = vec![pslot("a", 1, 8, ""), pslot("b", 1, 8, "")];
    d.poll(&ads, HOUR + 7200);
    let ad = d.ad(HOUR + 7200);
    let env = Env::at(HOUR + 7200);
    let num = |n: &str| ad.eval_attr(n, &env).as_number().unwrap();
    assert_eq!(ad.eval_attr("MyType", &env).as_str(), Some("Defrag"));
    assert_eq!(num("DrainSuccesses"), 2.0);
    assert_eq!(num("DrainFailures"), 0.0);
    assert_eq!(num("MachinesDraining"), 0.0);
    assert_eq!(num("MachinesDrainingPeak"), 1.0);
    assert_eq!(num("WholeMachines"), 0.0);
    assert_eq!(num("WholeMachinesPeak"), 2.0);
    // b, whole at the first poll, only starts the clock; a arrives whole
    // at the second, and at the third a is no longer draining (drained and
    // claimed between polls counts too): two arrivals.
    assert_eq!(num("DrainedMachines"), 2.0);
    assert!(num("MeanDrainedArrival") > 0.0);
    for n in [
        "RecentDrainSuccesses",
        "RecentDrainFailures",
        "AvgDrainingBadput",
        "AvgDrainingUnclaimed",
        "MeanDrainedArrivalSD",
        "RecentDrainsList",
    ] {
        assert!(ad.get(n).is_some(), "{n} missing");
    }
    d.drain_failed();
    assert_eq!(d.stats.drain_failures, 1);
}

#[test]
fn average_draining_cost_is_per_core_of_the_pool() {
    let mut d = Defrag::new(policy("DEFRAG_INTERVAL = 3600"));
    let cost = "DaemonStartTime = 1000; LastHeardFrom = 2000; TotalCpus = 8; \
                TotalMachineDrainingBadput = 800; TotalMachineDrainingUnclaimedTime = 400;";
    d.poll(&[pslot("a", 1, 8, cost)], HOUR);
    assert!((d.stats.avg_draining_badput - 0.1).abs() < 1e-9);
    assert!((d.stats.avg_draining_unclaimed - 0.05).abs() < 1e-9);
}
