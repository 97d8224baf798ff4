//! The Bologna Batch System's Addendum #2 (`docs/bologna-batch-system.txt`):
//! ALICE BB servers, requirements 10 to 13, simulated with the write-up's
//! configuration as shipped in `examples/config/` (v68-default.conf,
//! bologna-infn-pool.conf, bologna-server.conf, then bologna-alice.conf on
//! the ALICE servers; bologna-negotiator.conf on the central manager).
//!
//! An ALICE server has two CPUs and four slots: slots 1-2 short-running,
//! 3-4 ALICE slots. Jobs come through condor_submit as the write-up's
//! scripts run it: `bbs_submit_short` / `bbs_submit_long` as in
//! `bologna.rs`, and `bbs_submit_alice`, which adds `+BolognaBatchJob =
//! True`, `+LongRunningJob = True`, `+app = "ALICE"`, the file-transfer
//! lines and `universe = vanilla`; the ALICE user's own submit file says
//! `Requirements = (BolognaBatchGroup == "ALICE")`. The scripts'
//! `_CONDOR_APPEND_REQ_VANILLA` is the `bbs` schedd's APPEND_REQ_VANILLA.

mod common;

use common::*;
use serde_json::{json, Value};
use sim::{JobRecord, Report};

/// What `bbs_submit_alice` adds, as the write-up prints it ("identical to
/// the bbs_submit_long script, except for one additional line"; the
/// printed listing has no periodic_remove, which spares long jobs anyway).
fn alice_append() -> Value {
    json!([
        "+BolognaBatchJob = True",
        "+LongRunningJob = True",
        "+app = \"ALICE\"",
        "should_transfer_files = IF_NEEDED",
        "when_to_transfer_output = ON_EXIT",
        "universe = vanilla"
    ])
}

/// A short (or long) BB job, `n` of them in one submission.
fn bb(user: &str, long: bool, n: u32, at: i64, runtime: i64) -> Value {
    json!({"user": user, "schedd": "bbs", "append": bb_append(long),
           "submit": format!("universe = vanilla\nexecutable = /bin/sleep\nqueue {n}"),
           "at": at, "runtime": runtime})
}

/// `n` ALICE jobs: the user's submit file carries the requirement the
/// write-up tells ALICE users to add; bbs_submit_alice does the rest.
fn alice(user: &str, n: u32, at: i64, runtime: i64) -> Value {
    json!({"user": user, "schedd": "bbs", "append": alice_append(),
           "submit": format!("universe = vanilla\nexecutable = /bin/sleep\nRequirements = (BolognaBatchGroup == \"ALICE\")\nqueue {n}"),
           "at": at, "runtime": runtime})
}

/// The pool: `alices` ALICE BB servers, `servers` ordinary BB servers,
/// `infn` ordinary INFN machines.
fn pool(alices: u32, servers: u32, infn: u32, jobs: Value, duration: i64) -> Value {
    let mut machines = vec![
        json!({"class": "alice", "count": alices, "cpus": 2, "memory": 8192,
                                   "hostname": "alice{n}.bo.infn.it",
                                   "config": [example("bologna-server.conf"),
                                              example("bologna-alice.conf")]}),
    ];
    if servers > 0 {
        machines.push(
            json!({"class": "bbs", "count": servers, "cpus": 2, "memory": 8192,
                             "hostname": "bbs{n}.bo.infn.it",
                             "config": [example("bologna-server.conf")]}),
        );
    }
    if infn > 0 {
        machines.push(
            json!({"class": "infn", "count": infn, "cpus": 1, "memory": 4096,
                             "hostname": "pc{n}.infn.it"}),
        );
    }
    json!({
        "seed": 10,
        "duration": duration,
        "config": [
            {"text": "SLOTS_CONNECTED_TO_KEYBOARD = 1000\nSLOTS_CONNECTED_TO_CONSOLE = 1000"},
            example("v68-default.conf"),
            example("bologna-infn-pool.conf")
        ],
        "negotiator_config": [example("bologna-negotiator.conf")],
        "machines": machines,
        "schedds": [
            {"name": "bbs", "config": [example("bologna-server.conf"),
                                       {"text": "APPEND_REQ_VANILLA = (BolognaBatchServer == True)"}]},
            {"name": "bologna", "config": [example("bologna-server.conf")]}
        ],
        "jobs": jobs,
        "intervals": {"NEGOTIATOR_INTERVAL": 60, "PERIODIC_EXPR_INTERVAL": 60}
    })
}

fn starts<'a>(r: &'a Report, user: &str) -> Vec<&'a JobRecord> {
    events(r, user, "started on")
}

fn on_alice_slot(e: &&JobRecord) -> bool {
    e.what.contains("slot3@alice") || e.what.contains("slot4@alice")
}

fn on_short_slot(e: &&JobRecord) -> bool {
    e.what.contains("slot1@alice") || e.what.contains("slot2@alice")
}

#[test]
fn req10_alice_jobs_run_only_on_alice_bb_servers() {
    // The write-up: "10. There is a third type of Bologna Batch Job, an
    // ALICE Job, which may run only on specially-designated ALICE BB
    // Servers."
    //
    // Four ALICE jobs, one ALICE server (two ALICE slots), an ordinary BB
    // server with its four long-running slots free and two idle INFN
    // machines: two ALICE jobs run on the ALICE slots, the other two wait
    // for them rather than take the free long slots (where START alone
    // would let a long BB job in) or an INFN machine.
    let r = run(pool(1, 1, 2, json!([alice("sara", 4, 0, 1800)]), 5400));
    let d = dump(&r);
    let s = starts(&r, "sara");
    assert_eq!(s.len(), 4, "{d}");
    assert!(s.iter().all(on_alice_slot), "{d}");
    // Two at once, two after the first two are done.
    let early: Vec<_> = s.iter().filter(|e| e.time - r.start <= 60).collect();
    assert_eq!(early.len(), 2, "{d}");
    assert!(
        s.iter()
            .all(|e| e.time - r.start <= 60 || e.time - r.start >= 60 + 1800),
        "{d}"
    );
    assert_eq!(events(&r, "sara", "completed").len(), 4, "{d}");
    // Nothing of theirs was even matched elsewhere.
    assert!(
        events(&r, "sara", "matched to")
            .iter()
            .all(|e| e.what.contains("@alice1.bo.infn.it")),
        "{d}"
    );
}

#[test]
fn req11_an_alice_job_never_waits_for_other_bb_jobs_on_an_alice_server() {
    // The write-up: "11. An ALICE Job must not be forced to wait for the
    // completion of another Bologna Batch Job before starting on a ALICE
    // BB Server."
    //
    // Short BB jobs (four of 50 minutes, submitted first) fill the ALICE
    // server's short slots; the other two queue behind them. Two
    // ALICE jobs arriving at 20 minutes start at the next negotiation, on
    // the ALICE slots, while the BB jobs run on, untouched.
    let r = run(pool(
        1,
        0,
        0,
        json!([bb("anna", false, 4, 0, 3000), alice("sara", 2, 1200, 1800)]),
        3600,
    ));
    let d = dump(&r);
    let a = starts(&r, "anna");
    let first: Vec<_> = a.iter().filter(|e| e.time - r.start <= 60).collect();
    assert_eq!(first.len(), 2, "{d}");
    assert!(a.iter().all(on_short_slot), "{d}");
    let s = starts(&r, "sara");
    assert_eq!(s.len(), 2, "{d}");
    assert!(s.iter().all(on_alice_slot), "{d}");
    assert!(s.iter().all(|e| e.time - r.start <= 1200 + 61), "{d}");
    // ... while the first BB jobs are still running: none has finished.
    let bb_done = events(&r, "anna", "completed");
    assert!(
        bb_done
            .iter()
            .all(|e| e.time > s[0].time && e.time > s[1].time),
        "{d}"
    );
    // Nobody was evicted, suspended or pushed aside for anybody.
    assert!(events(&r, "", "evicted").is_empty(), "{d}");
    assert!(events(&r, "", "suspended").is_empty(), "{d}");
    // The short BB jobs finished their 3000 s, the ALICE jobs their 1800 s.
    assert_eq!(bb_done.len(), 2, "{d}");
    assert!(bb_done.iter().all(|e| e.time - r.start == 60 + 3000), "{d}");
    assert_eq!(events(&r, "sara", "completed").len(), 2, "{d}");
}

#[test]
fn req12_alice_servers_start_no_long_bb_jobs_and_short_ones_only_when_no_alice_jobs_run() {
    // The write-up: "12. ALICE BB Servers will not start long-running BB
    // Jobs, but will start short-running BB Jobs when no ALICE jobs are
    // running."
    //
    // On a pool of one ALICE server: two ALICE jobs run from the start
    // (on both CPUs) for 30 minutes. A long BB job never starts there; a
    // short BB job arriving at 10 minutes waits while the ALICE jobs run
    // and starts at the first negotiation after they are gone.
    let r = run(pool(
        1,
        0,
        0,
        json!([
            alice("sara", 2, 0, 1800),
            bb("lucia", true, 1, 0, 600),
            bb("anna", false, 1, 600, 600)
        ]),
        3600,
    ));
    let d = dump(&r);
    let s = starts(&r, "sara");
    assert_eq!(s.len(), 2, "{d}");
    let alice_done = events(&r, "sara", "completed");
    assert_eq!(alice_done.len(), 2, "{d}");
    let last_alice = alice_done.iter().map(|e| e.time).max().unwrap();
    // No long BB job ever starts on an ALICE server.
    assert!(starts(&r, "lucia").is_empty(), "{d}");
    // The short one: not while ALICE jobs run, then at once.
    let a = starts(&r, "anna");
    assert_eq!(a.len(), 1, "{d}");
    assert!(on_short_slot(&a[0]), "{d}");
    assert!(a[0].time >= last_alice, "{d}");
    assert!(a[0].time - last_alice <= 61, "{d}");
    assert_eq!(events(&r, "anna", "completed").len(), 1, "{d}");
    assert_eq!(r.summary.jobs_idle_at_end, 1, "{d}");
}

#[test]
fn req12_an_idle_alice_server_starts_short_bb_jobs_at_once_and_long_ones_never() {
    // Requirement 12 on an ALICE server with no ALICE job at all: two short
    // BB jobs start at the first negotiation, on the short slots; a long
    // BB job submitted with them never starts (an ALICE server has no
    // long-running slots, and its ALICE slots take ALICE jobs only).
    let r = run(pool(
        1,
        0,
        0,
        json!([bb("anna", false, 2, 0, 600), bb("lucia", true, 1, 0, 600)]),
        1800,
    ));
    let d = dump(&r);
    let a = starts(&r, "anna");
    assert_eq!(a.len(), 2, "{d}");
    assert!(a.iter().all(on_short_slot), "{d}");
    assert!(a.iter().all(|e| e.time - r.start <= 60), "{d}");
    assert_eq!(events(&r, "anna", "completed").len(), 2, "{d}");
    assert!(events(&r, "lucia", "matched").is_empty(), "{d}");
    assert_eq!(r.summary.jobs_idle_at_end, 1, "{d}");
}

#[test]
fn req13_running_short_bb_jobs_finish_at_a_worse_nice_than_alice_jobs() {
    // The write-up: "13. Short-running BB Jobs already running on an
    // ALICE BB Server when an ALICE Job arrives will be allowed to run to
    // completion, at a higher (worse) OS priority than the ALICE Job."
    //
    // Two short BB jobs run on the ALICE server's short slots; two ALICE
    // jobs arrive at 10 minutes and start at once (four jobs on two CPUs).
    // The BB jobs are neither suspended nor evicted and complete their
    // 40 minutes; they run niced 10, the ALICE jobs at 0.
    let r = run(pool(
        1,
        0,
        0,
        json!([bb("anna", false, 2, 0, 2400), alice("sara", 2, 600, 2400)]),
        3600,
    ));
    let d = dump(&r);
    let a = starts(&r, "anna");
    let s = starts(&r, "sara");
    assert_eq!(a.len(), 2, "{d}");
    assert_eq!(s.len(), 2, "{d}");
    assert!(s.iter().all(|e| e.time - r.start <= 600 + 61), "{d}");
    assert!(events(&r, "anna", "suspended").is_empty(), "{d}");
    assert!(events(&r, "anna", "evicted").is_empty(), "{d}");
    let done = events(&r, "anna", "completed");
    assert_eq!(done.len(), 2, "{d}");
    assert!(done.iter().all(|e| e.time - r.start >= 2400), "{d}");
    // The OS priorities: worse (higher nice) for the BB jobs. (The startd
    // evaluates JOB_RENICE_INCREMENT with the slot as MY and the job as
    // TARGET, so the write-up's TARGET.app reads the job.)
    assert!(a.iter().all(|e| e.what.ends_with("(nice 10)")), "{d}");
    assert!(s.iter().all(|e| e.what.ends_with("(nice 0)")), "{d}");
    // The startd never left Claimed/Busy for them: no transition out of
    // Busy on the short slots before the jobs completed.
    let first_done = done.iter().map(|e| e.time).min().unwrap();
    assert!(
        r.transitions.iter().all(|t| !(t.slot.starts_with("slot1@")
            || t.slot.starts_with("slot2@"))
            || t.from != "Claimed/Busy"
            || t.time >= first_done),
        "{d}"
    );
}

#[test]
fn req10_alice_slots_run_only_alice_jobs() {
    // Requirement 10 seen from the ALICE slots: on an idle ALICE server
    // (nobody at the keyboard for an hour) four short BB jobs, a long BB
    // job and an ordinary INFN job queue up together. The two ALICE slots
    // stay free all the while: the short jobs take turns on the short
    // slots, the long job never starts, the ordinary job gets a short
    // slot when one is free. An ALICE job arriving at 50 minutes takes an
    // ALICE slot at once: they were free for it.
    let mut s = pool(
        1,
        0,
        0,
        json!([
            bb("anna", false, 4, 0, 900),
            bb("lucia", true, 1, 0, 900),
            {"user": "paolo", "schedd": "bologna", "at": 0, "runtime": 900},
            alice("sara", 1, 3000, 600)
        ]),
        5400,
    );
    s["initial_idle"] = json!(3600);
    let r = run(s);
    let d = dump(&r);
    let alice_slot = |slot: &str| slot.starts_with("slot3@") || slot.starts_with("slot4@");
    // Nobody but the ALICE user was matched to, or started on, an ALICE slot.
    for e in &r.job_events {
        if e.what.contains("matched to") || e.what.contains("started on") {
            assert_eq!(
                on_alice_slot(&e),
                e.user.starts_with("sara"),
                "{}: {}\n{d}",
                e.user,
                e.what
            );
        }
    }
    // Before the ALICE job came the ALICE slots were never even matched.
    assert!(
        r.transitions.iter().all(|t| !alice_slot(&t.slot)
            || t.time - r.start >= 3000
            || !(t.to.starts_with("Matched") || t.to.starts_with("Claimed"))),
        "{d}"
    );
    // The other jobs went through the short slots instead.
    let a = starts(&r, "anna");
    assert_eq!(a.len(), 4, "{d}");
    assert!(a.iter().all(on_short_slot), "{d}");
    assert_eq!(events(&r, "anna", "completed").len(), 4, "{d}");
    assert!(starts(&r, "lucia").is_empty(), "{d}");
    let p = starts(&r, "paolo");
    assert!(!p.is_empty(), "{d}");
    assert!(p.iter().all(on_short_slot), "{d}");
    // The ALICE job: at once, on an ALICE slot, at nice 0.
    let s = starts(&r, "sara");
    assert_eq!(s.len(), 1, "{d}");
    assert!(on_alice_slot(&s[0]), "{d}");
    assert!(s[0].time - r.start <= 3000 + 60, "{d}");
    assert!(s[0].what.ends_with("(nice 0)"), "{d}");
}
