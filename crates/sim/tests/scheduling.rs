//! How the negotiator fills a pool, run through the simulator.

mod common;

use common::*;
use serde_json::json;

/// Jobs that can never match (`request_memory = 2 TB`) do not hold the
/// submitter's other jobs back: from the first negotiation cycle on, its
/// later cluster of short jobs fills all four machines, as HTCondor skips
/// an autocluster that cannot match. (The simulator used to offer only as
/// many of a submitter's jobs per cycle as the pool had cores, so the
/// unmatchable jobs took three of the four places and three machines
/// stayed Unclaimed for a cycle while jobs waited.)
#[test]
fn an_unmatchable_job_does_not_hold_back_the_submitter_s_other_jobs() {
    let r = run(json!({
        "seed": 1,
        "duration": 3600,
        "config": [{"text": "START = True\nSUSPEND = False\nPREEMPT = False\nKILL = False\nRunBenchmarks = False\nUID_DOMAIN = pool"}],
        "machines": [{"class": "node", "count": 4, "cpus": 1, "memory": 2048}],
        "jobs": [
            {"user": "alice", "at": 0, "runtime": 100000,
             "submit": "universe = vanilla\nexecutable = /bin/sleep\nrequest_memory = 2 TB\nqueue 3"},
            {"user": "alice", "at": 10, "runtime": 1200,
             "submit": "universe = vanilla\nexecutable = /bin/sleep\nqueue 8"}
        ],
        "intervals": {"NEGOTIATOR_INTERVAL": 60, "POLLING_INTERVAL": 5},
        "sample_interval": 60
    }));
    let d = dump(&r);
    // From the first cycle (at 60 s) every machine runs a short job,
    // until the second half of them is done.
    let busy: Vec<(i64, u64)> = r
        .samples
        .iter()
        .filter(|s| s.time - r.start >= 60 && s.time - r.start <= 2400)
        .map(|s| (s.time - r.start, s.running_jobs))
        .collect();
    assert!(!busy.is_empty(), "{d}");
    assert!(busy.iter().all(|&(_, n)| n == 4), "{busy:?}\n{d}");
    assert_eq!(events(&r, "alice", "started on").len(), 8, "{d}");
    assert_eq!(r.summary.jobs_completed, 8, "{d}");
    // The huge jobs never start.
    for job in ["1.0", "1.1", "1.2"] {
        let story = job_story(&r, "alice", job);
        assert!(!story.is_empty(), "{d}");
        assert!(story.iter().all(|e| !e.contains("started")), "{d}");
    }
}
