//! The manual's RANK story (policy-configuration.rst, "The RANK
//! Expression"): on Jimmy Garrison's machine `bass`, a stranger's job runs,
//! Elvin Jones's job preempts it (RANK 1 > 0), then Jimmy's preempts
//! Elvin's (RANK 10 > 1) and runs to completion.

mod common;

use common::*;
use serde_json::json;

const RANK: &str = "RANK = (Owner == \"coltrane\") + (Owner == \"tyner\") \\\n    + ((Owner == \"garrison\") * 10) + (Owner == \"jones\")";

#[test]
fn elvin_preempts_a_stranger_then_jimmy_preempts_elvin_on_bass() {
    let r = run(json!({
        "seed": 1,
        "duration": 7200,
        "config": [example("default.conf"), {"text": "UID_DOMAIN = jazz.example.org"}],
        "machines": [{"class": "bass", "cpus": 1, "config": [{"text": RANK}]}],
        "jobs": [
            {"user": "miles", "at": 0, "runtime": 10000},
            {"user": "jones", "at": 600, "runtime": 10000},
            {"user": "garrison", "at": 1200, "runtime": 3000}
        ]
    }));
    let d = dump(&r);
    let started = |who: &str| events(&r, who, "started on slot1@bass");
    let evicted = |who: &str| events(&r, who, "evicted (machine RANK)");
    // The stranger's job starts at once and is evicted for Elvin's.
    assert_eq!(started("miles").len(), 1, "{d}");
    assert_eq!(evicted("miles").len(), 1, "{d}");
    let jones_start = started("jones");
    assert!(!jones_start.is_empty(), "{d}");
    assert!(evicted("miles")[0].time <= jones_start[0].time, "{d}");
    // Elvin's is evicted for Jimmy's, which completes.
    assert_eq!(evicted("jones").len(), 1, "{d}");
    assert_eq!(started("garrison").len(), 1, "{d}");
    assert_eq!(events(&r, "garrison", "completed").len(), 1, "{d}");
    assert!(
        started("garrison")[0].time >= evicted("jones")[0].time,
        "{d}"
    );
    // The startd says why: a claim the machine ranks higher (transition 13
    // to Retiring, with no retirement time, then 18 to Vacating).
    let causes: Vec<&str> = r
        .transitions
        .iter()
        .filter(|t| t.from == "Claimed/Busy" && t.number == 13)
        .map(|t| t.cause.as_str())
        .collect();
    assert_eq!(causes.len(), 2, "{d}");
    assert!(causes[0].contains("ranks higher (1 > 0)"), "{d}");
    assert!(causes[1].contains("ranks higher (10 > 1)"), "{d}");
    assert_eq!(r.summary.preemptions.get("machine RANK"), Some(&2), "{d}");
    // Jimmy's job ran its 3000 s; then Elvin's starts over (vanilla jobs
    // do not checkpoint), and the stranger's still waits.
    assert_eq!(r.summary.jobs_completed, 1, "{d}");
    assert_eq!(started("jones").len(), 2, "{d}");
    assert_eq!(r.summary.badput_cpu_seconds, 540.0 + 599.0, "{d}");
}

#[test]
fn the_same_seed_gives_the_same_report_byte_for_byte() {
    let s = json!({
        "seed": 9,
        "duration": 3600,
        "config": [example("default.conf")],
        "machines": [{"class": "bass", "cpus": 2, "config": [{"text": RANK}]}],
        "jobs": [
            {"user": "miles", "every": {"interval": 120, "count": 20}, "runtime": {"exponential": 400}},
            {"user": "jones", "every": {"start": 300, "interval": 300, "count": 8}, "runtime": {"uniform": [100, 900]}}
        ]
    });
    let a = run(s.clone());
    let b = run(s);
    assert_eq!(a.to_json(), b.to_json());
    assert_eq!(a.to_html(), b.to_html());
    assert!(a.summary.jobs_completed > 0);
}

#[test]
fn the_shipped_scenario_file_tells_the_same_story_and_reports_it() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios");
    let text = std::fs::read_to_string(format!("{dir}/rank-story.json")).unwrap();
    let mut s = sim::Scenario::from_json(&text).unwrap();
    s.base_dir = dir.to_string();
    let r = sim::simulate(&s, &Disk).unwrap();
    assert_eq!(
        r.summary.preemptions.get("machine RANK"),
        Some(&2),
        "{}",
        dump(&r)
    );
    let html = r.to_html();
    assert!(html.starts_with("<!DOCTYPE html>") && html.matches("<svg").count() == 3);
    let json: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
    assert_eq!(json["summary"]["jobs_completed"], 1);
    assert_eq!(
        json["transitions"].as_array().unwrap().len(),
        r.transitions.len()
    );
}
