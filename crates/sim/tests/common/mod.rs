//! What the simulation tests share: the disk as the simulator's files, the
//! example configurations' paths, and small readers of the report.

#![allow(dead_code)]

use std::path::PathBuf;

use config::FileError;
use serde_json::{json, Value};
use sim::{Report, Scenario};

/// The real disk (tests may read it; the crate itself may not).
pub struct Disk;

impl sim::Files for Disk {
    fn read(&self, path: &str) -> Result<String, FileError> {
        std::fs::read_to_string(path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => FileError::NotFound,
            _ => FileError::Other(format!("{path}: {e}")),
        })
    }
}

/// The absolute path of an example configuration file.
pub fn example(name: &str) -> String {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/config");
    dir.canonicalize()
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .join(name)
        .to_string_lossy()
        .into_owned()
}

pub fn scenario(v: serde_json::Value) -> Scenario {
    Scenario::from_value(&v).unwrap_or_else(|e| panic!("{e}"))
}

pub fn run(v: serde_json::Value) -> Report {
    sim::simulate(&scenario(v), &Disk).unwrap_or_else(|e| panic!("{e}"))
}

/// The events of one job (`cluster.proc` of a user), as "time: what".
pub fn job_story(r: &Report, user_prefix: &str, job: &str) -> Vec<String> {
    r.job_events
        .iter()
        .filter(|e| e.user.starts_with(user_prefix) && e.job == job)
        .map(|e| format!("{}: {}", e.time - r.start, e.what))
        .collect()
}

/// Every job event of users starting with `user_prefix` that contains `what`.
pub fn events<'a>(r: &'a Report, user_prefix: &str, what: &str) -> Vec<&'a sim::JobRecord> {
    r.job_events
        .iter()
        .filter(|e| e.user.starts_with(user_prefix) && e.what.contains(what))
        .collect()
}

/// The whole report as text, for failure messages.
pub fn dump(r: &Report) -> String {
    let mut s = String::new();
    for t in &r.transitions {
        s.push_str(&format!(
            "{} {} {} -> {} ({}) {}\n",
            t.time - r.start,
            t.slot,
            t.from,
            t.to,
            t.number,
            t.cause
        ));
    }
    for e in &r.job_events {
        s.push_str(&format!(
            "{} {} {} {}\n",
            e.time - r.start,
            e.user,
            e.job,
            e.what
        ));
    }
    for n in r.notes.iter().take(30) {
        s.push_str(&format!("note: {n}\n"));
    }
    s
}

/// The Bologna write-up's periodic_remove: a short BB job goes after an hour.
pub const PERIODIC_REMOVE: &str =
    "periodic_remove = ( LongRunningJob =!= True && (RemoteWallClockTime > 60*60) )";

/// What `bbs_submit_short` (`long` false) or `bbs_submit_long` adds to a
/// submit file (`condor_submit -a`).
pub fn bb_append(long: bool) -> Value {
    let mut a = vec![
        "+BolognaBatchJob = True".to_string(),
        "should_transfer_files = IF_NEEDED".into(),
        "when_to_transfer_output = ON_EXIT".into(),
        "universe = vanilla".into(),
        PERIODIC_REMOVE.into(),
    ];
    if long {
        a.insert(1, "+LongRunningJob = True".into());
    }
    json!(a)
}
