//! condor_defrag in a simulated pool (policy-configuration.rst,
//! "Defragmenting Dynamic Slots"; the rules of HTCondor's defrag.cpp):
//! partitionable slots fragmented by a steady stream of 1-core jobs never
//! have room for an 8-core job until the defrag daemon drains a machine,
//! and it drains no more machines an hour, nor at once, than its
//! configuration allows. The scenario is `scenarios/defrag.json`.

mod common;

use common::*;
use serde_json::Value;
use sim::Report;

fn scenario_file() -> Value {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios");
    let text = std::fs::read_to_string(format!("{dir}/defrag.json")).unwrap();
    let mut v: Value = serde_json::from_str(&text).unwrap();
    v["base_dir"] = Value::from(dir);
    v
}

/// When each 8-core job first started (a later drain may evict one, and
/// it starts again).
fn whole_starts(r: &Report) -> Vec<i64> {
    let mut first = std::collections::BTreeMap::new();
    for e in events(r, "whole", "started") {
        first.entry(e.job.clone()).or_insert(e.time - r.start);
    }
    first.into_values().collect()
}

/// The times (seconds in) of the defrag daemon's drains.
fn drains(r: &Report) -> Vec<i64> {
    r.notes
        .iter()
        .filter(|n| n.contains("defrag: graceful draining of"))
        .map(|n| n.split(':').next().unwrap().parse::<i64>().unwrap() - r.start)
        .collect()
}

#[test]
fn without_defrag_whole_machine_jobs_wait_for_ever() {
    let mut v = scenario_file();
    v.as_object_mut().unwrap().remove("defrag");
    let r = run(v);
    assert!(whole_starts(&r).is_empty(), "{}", dump(&r));
    assert!(r.summary.defrag.is_empty());
    assert!(r.summary.jobs_running_at_end >= 30, "{}", r.to_text());
}

#[test]
fn with_defrag_whole_machine_jobs_start_within_the_quota() {
    let r = run(scenario_file());
    let starts = whole_starts(&r);
    assert_eq!(starts.len(), 4, "{}\n{}", r.to_text(), r.notes.join("\n"));
    let drains = drains(&r);
    assert!(!drains.is_empty());
    // The quota: 2 an hour polled every 10 minutes is nothing per poll and
    // 2 at the first poll of each clock hour (none at the very first poll).
    let mut per_hour = std::collections::BTreeMap::new();
    for t in &drains {
        *per_hour.entry((r.start + t) / 3600).or_insert(0) += 1;
    }
    assert!(per_hour.values().all(|&n| n <= 2), "{per_hour:?}");
    assert!(
        drains.iter().all(|t| t % 600 == 0 && *t > 600),
        "{drains:?}"
    );
    // Each whole-machine job starts after a drain.
    assert!(
        starts.iter().all(|s| *s > drains[0]),
        "{starts:?} {drains:?}"
    );
    // The summary carries the daemon ad's figures.
    let d = &r.summary.defrag;
    assert_eq!(d["DrainSuccesses"], drains.len() as f64);
    assert!(d["MachinesDrainingPeak"] <= 2.0, "{d:?}");
    for name in [
        "MachinesDraining",
        "WholeMachines",
        "WholeMachinesPeak",
        "DrainedMachines",
        "AvgDrainingBadput",
        "AvgDrainingUnclaimed",
        "MeanDrainedArrival",
        "DrainFailures",
    ] {
        assert!(d.contains_key(name), "{name} missing: {d:?}");
    }
    assert!(r.to_text().contains("defrag: "), "{}", r.to_text());
    assert!(r.to_json().contains("\"DrainSuccesses\""));
}

#[test]
fn max_concurrent_draining_holds_back_the_quota() {
    // One drain a poll would be allowed, but only one machine may drain at
    // once, and graceful drains take long: jobs keep two hours of
    // retirement.
    let mut v = scenario_file();
    v["defrag"]["config"][0]["text"] = Value::from(
        "DEFRAG_INTERVAL = 600\nDEFRAG_DRAINING_MACHINES_PER_HOUR = 6\n\
         DEFRAG_MAX_CONCURRENT_DRAINING = 1",
    );
    v["config"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!({"text": "MAXJOBRETIREMENTTIME = 7200"}));
    let r = run(v);
    let d = &r.summary.defrag;
    let drains = drains(&r);
    assert_eq!(
        d["MachinesDrainingPeak"],
        1.0,
        "{d:?}\n{}",
        r.notes.join("\n")
    );
    // The quota alone would drain at each of the 23 polls after the
    // first; a drain takes up to two hours.
    assert!(
        (2..12).contains(&drains.len()),
        "{drains:?}\n{}",
        r.notes.join("\n")
    );
    assert!(drains.windows(2).all(|w| w[1] - w[0] >= 1200), "{drains:?}");
}
