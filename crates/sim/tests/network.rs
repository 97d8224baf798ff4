//! The claim protocol over a network that delays and loses messages, and
//! the administrators' commands: what the startd's timers (MATCH_TIMEOUT,
//! the claim lease) and the schedd's (an unanswered claim request) do
//! about a lost message, and `vacate` and `drain` at a time.

mod common;

use common::*;
use serde_json::{json, Value};

fn pool(extra: Value) -> Value {
    let mut v = json!({
        "seed": 1,
        "duration": 7200,
        "config": [{"text": "START = True\nSUSPEND = False\nPREEMPT = False\nKILL = False\nRunBenchmarks = False\nUID_DOMAIN = pool\nMATCH_TIMEOUT = 120"}],
        "machines": [{"class": "node", "count": 1, "cpus": 1, "memory": 2048}],
        "intervals": {"NEGOTIATOR_INTERVAL": 60, "POLLING_INTERVAL": 5, "ALIVE_INTERVAL": 60}
    });
    for (k, x) in extra.as_object().unwrap() {
        v[k] = x.clone();
    }
    v
}

#[test]
fn a_lost_claim_request_ends_in_match_timeout_and_the_job_runs_later() {
    let r = run(pool(json!({
        "jobs": [{"user": "alice", "at": 0, "runtime": 600}],
        "network": {"lose": {"request_claim": 1}}
    })));
    let d = dump(&r);
    // The slot was matched, never claimed, and went back after
    // MATCH_TIMEOUT.
    let timed_out: Vec<_> = r
        .transitions
        .iter()
        .filter(|t| t.from == "Matched/Idle" && t.cause.contains("MATCH_TIMEOUT"))
        .collect();
    assert_eq!(timed_out.len(), 1, "{d}");
    assert_eq!(r.summary.messages_lost, 1, "{d}");
    // The schedd gave the unanswered request up; the job was matched
    // again, ran once and completed.
    assert_eq!(events(&r, "alice", "had no answer").len(), 1, "{d}");
    assert_eq!(events(&r, "alice", "started on").len(), 1, "{d}");
    assert_eq!(r.summary.jobs_completed, 1, "{d}");
}

#[test]
fn lost_keep_alives_end_the_claim_at_its_lease_and_the_job_runs_again() {
    let r = run(pool(json!({
        "jobs": [{"user": "alice", "at": 0, "runtime": 3000}],
        "network": {"lose": {"alive": 1000000}}
    })));
    let d = dump(&r);
    let expired: Vec<_> = r
        .transitions
        .iter()
        .filter(|t| t.cause.contains("claim lease expired"))
        .collect();
    assert!(!expired.is_empty(), "{d}");
    // The running job lost its claim, was evicted, and ran again.
    assert!(!events(&r, "alice", "evicted").is_empty(), "{d}");
    assert!(events(&r, "alice", "started on").len() >= 2, "{d}");
}

#[test]
fn a_network_that_delays_and_drops_messages_still_runs_every_job_and_is_reproducible() {
    let scenario = pool(json!({
        "duration": 43200,
        "machines": [{"class": "node", "count": 4, "cpus": 1, "memory": 2048}],
        "jobs": [{"user": "alice", "every": {"interval": 300, "count": 20}, "runtime": 600}],
        "network": {"delay": [0, 20], "drop": 0.2}
    }));
    let r = run(scenario.clone());
    let d = dump(&r);
    assert!(r.summary.messages_lost > 0, "{d}");
    assert_eq!(r.summary.jobs_completed, 20, "{d}");
    // Same scenario, same seed: the same report.
    assert_eq!(run(scenario).to_text(), r.to_text());
}

#[test]
fn a_job_that_ignores_the_soft_kill_is_killed_after_the_vacate_time() {
    let r = run(pool(json!({
        "config": [{"text": "START = True\nSUSPEND = False\nPREEMPT = False\nKILL = False\nRunBenchmarks = False\nUID_DOMAIN = pool\nMachineMaxVacateTime = 120"}],
        "jobs": [{"user": "alice", "at": 0, "runtime": 5000, "ignores_soft_kill": true}],
        "commands": [{"at": 600, "machines": "node", "vacate": {}}]
    })));
    let d = dump(&r);
    let vacating = r
        .transitions
        .iter()
        .position(|t| t.to == "Preempting/Vacating")
        .unwrap_or_else(|| panic!("never vacated:\n{d}"));
    let killing = r
        .transitions
        .iter()
        .position(|t| t.from == "Preempting/Vacating" && t.to == "Preempting/Killing")
        .unwrap_or_else(|| panic!("never killed:\n{d}"));
    assert!(killing > vacating, "{d}");
    let t = &r.transitions;
    assert!(t[killing].time - t[vacating].time >= 120, "{d}");
    assert!(r.notes.iter().any(|n| n.contains("vacate on node")), "{d}");
    // A job that heeds its soft kill leaves while Vacating.
    let heeds = run(pool(json!({
        "config": [{"text": "START = True\nSUSPEND = False\nPREEMPT = False\nKILL = False\nRunBenchmarks = False\nUID_DOMAIN = pool\nMachineMaxVacateTime = 120"}],
        "jobs": [{"user": "alice", "at": 0, "runtime": 5000}],
        "commands": [{"at": 600, "machines": "node", "vacate": {}}]
    })));
    assert!(heeds
        .transitions
        .iter()
        .any(|t| t.to == "Preempting/Vacating"));
    assert!(
        !heeds
            .transitions
            .iter()
            .any(|t| t.to == "Preempting/Killing"),
        "{}",
        dump(&heeds)
    );
}

#[test]
fn a_drain_at_a_time_evicts_the_job_and_leaves_the_slot_drained() {
    let r = run(pool(json!({
        "jobs": [{"user": "alice", "at": 0, "runtime": 5000}],
        "commands": [{"at": 600, "machines": "node", "drain": {"how": "quick"}}]
    })));
    let d = dump(&r);
    assert!(r.transitions.iter().any(|t| t.to == "Drained/Idle"), "{d}");
    assert_eq!(events(&r, "alice", "evicted").len(), 1, "{d}");
    // Drained, the machine takes no job: the job waits to the end.
    assert_eq!(r.summary.jobs_completed, 0, "{d}");
    assert_eq!(r.summary.jobs_idle_at_end, 1, "{d}");
}

#[test]
fn bad_commands_and_networks_are_refused_with_where() {
    let bad = |extra: Value| {
        sim::Scenario::from_value(&pool(extra))
            .and_then(|s| sim::simulate(&s, &sim::MemFiles::new()))
            .unwrap_err()
            .to_string()
    };
    let e = bad(json!({"commands": [{"at": 1, "machines": "node", "vacate": {}, "drain": {}}]}));
    assert!(
        e.contains("commands[0]") && e.contains("exactly one"),
        "{e}"
    );
    let e = bad(json!({"commands": [{"at": 1, "machines": "nowhere", "vacate": {}}]}));
    assert!(e.contains("commands[0]") && e.contains("nowhere"), "{e}");
    let e = bad(json!({"network": {"drop": 2}}));
    assert!(e.contains("network.drop"), "{e}");
    let e = bad(json!({"network": {"lose": {"telepathy": 1}}}));
    assert!(e.contains("network.lose") && e.contains("telepathy"), "{e}");
}

#[test]
fn a_lost_activation_is_sent_again_when_the_startd_says_the_claim_is_still_idle() {
    let r = run(pool(json!({
        "jobs": [{"user": "alice", "at": 0, "runtime": 600}],
        "network": {"lose": {"activate_claim": 1}}
    })));
    let d = dump(&r);
    assert_eq!(r.summary.messages_lost, 1, "{d}");
    // The claim stayed Claimed/Idle until the startd's reminder; then the
    // schedd activated it again, and the job ran once.
    let started = events(&r, "alice", "started on");
    assert_eq!(started.len(), 1, "{d}");
    assert!(started[0].time - r.start >= 60 + 60, "{d}");
    assert_eq!(r.summary.jobs_completed, 1, "{d}");
}

#[test]
fn fetch_work_hooks_get_the_scenario_s_scripted_jobs_in_turn() {
    let r = run(pool(json!({
        "config": [{"text": "START = True\nSUSPEND = False\nPREEMPT = False\nKILL = False\nRunBenchmarks = False\nUID_DOMAIN = pool\nSTARTD_JOB_HOOK_KEYWORD = FETCH\nFETCH_HOOK_FETCH_WORK = /usr/libexec/fetch\nFETCH_HOOK_REPLY_FETCH = /usr/libexec/reply\nFetchWorkDelay = 30"}],
        "fetch_work": [{"machines": "node", "jobs": [
            {"ad": "[ Owner = \"carol\"; Cmd = \"/bin/sleep\"; RequestCpus = 1 ]", "runtime": 600},
            {"ad": "[ Owner = \"dave\"; Cmd = \"/bin/sleep\"; RequestCpus = 1 ]", "runtime": 300}
        ]}]
    })));
    let d = dump(&r);
    let carol_started = events(&r, "carol", "started fetched work on slot1@node");
    let carol_done = events(&r, "carol", "fetched work exited");
    let dave_started = events(&r, "dave", "started fetched work");
    let dave_done = events(&r, "dave", "fetched work exited");
    assert_eq!(carol_started.len(), 1, "{d}");
    assert_eq!(carol_done.len(), 1, "{d}");
    assert_eq!(dave_started.len(), 1, "{d}");
    assert_eq!(dave_done.len(), 1, "{d}");
    assert_eq!(carol_done[0].time - carol_started[0].time, 600, "{d}");
    assert!(dave_started[0].time >= carol_done[0].time, "{d}");
    // With no more work, the slot's claim ends (the hook returned none).
    assert!(
        r.transitions.iter().any(|t| t.cause.contains("no work")),
        "{d}"
    );
}
