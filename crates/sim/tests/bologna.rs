//! The Bologna Batch System (`docs/bologna-batch-system.txt`) simulated
//! whole, with the write-up's configuration as shipped in
//! `examples/config/` (v68-default.conf, bologna-infn-pool.conf,
//! bologna-server.conf, bologna-negotiator.conf): one test per
//! requirement, 1 to 9, each a small pool run on the real cores.
//!
//! The pool: Bologna Batch Servers (two CPUs, six slots: 1-2 short-running,
//! 3-6 long-running) and ordinary INFN machines. Jobs come through
//! condor_submit as the write-up's scripts run it: `bbs_submit_short` and
//! `bbs_submit_long` add `+BolognaBatchJob = True` (and `+LongRunningJob =
//! True`), vanilla universe and the periodic_remove, and set
//! `_CONDOR_APPEND_REQ_VANILLA` (here: the `bbs` schedd's configuration
//! holds APPEND_REQ_VANILLA, since a scenario's schedd has one
//! configuration; plain jobs go through the `bologna` schedd). Every slot
//! watches the keyboard (SLOTS_CONNECTED_TO_KEYBOARD), as on the 6.8
//! machines the write-up ran on.

mod common;

use common::*;
use serde_json::{json, Value};
use sim::Report;

/// A short (or long) BB job submitted from Bologna, arriving at `at`.
fn bb(user: &str, long: bool, at: Value, runtime: i64) -> Value {
    json!({"user": user, "schedd": "bbs", "append": bb_append(long), "at": at, "runtime": runtime})
}

/// An ordinary vanilla job from Bologna's plain schedd.
fn plain(user: &str, at: Value, runtime: i64) -> Value {
    json!({"user": user, "schedd": "bologna", "at": at, "runtime": runtime})
}

/// The pool: `servers` BB servers, `infn` ordinary machines; owners and
/// jobs as given; the central manager with bologna-negotiator.conf.
fn pool(servers: u32, infn: u32, owners: Value, jobs: Value, duration: i64, extra: &str) -> Value {
    let mut machines = vec![
        json!({"class": "bbs", "count": servers, "cpus": 2, "memory": 8192,
                                    "hostname": "bbs{n}.bo.infn.it",
                                    "config": [example("bologna-server.conf"), {"text": extra}]}),
    ];
    if infn > 0 {
        machines.push(
            json!({"class": "infn", "count": infn, "cpus": 1, "memory": 4096,
                             "hostname": "pc{n}.infn.it", "config": [{"text": extra}]}),
        );
    }
    json!({
        "seed": 5,
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
            {"name": "bologna", "config": [example("bologna-server.conf")]},
            {"name": "roma", "config": [{"text": "UID_DOMAIN = roma1.infn.it\nSUBMIT_SITE_DOMAIN = \"roma1.infn.it\"\nSUBMIT_EXPRS = SUBMIT_SITE_DOMAIN\nAPPEND_REQ_VANILLA = (BolognaBatchServer == True)"}]}
        ],
        "owners": owners,
        "jobs": jobs,
        "intervals": {"NEGOTIATOR_INTERVAL": 60, "PERIODIC_EXPR_INTERVAL": 60}
    })
}

fn starts<'a>(r: &'a Report, user: &str) -> Vec<&'a sim::JobRecord> {
    events(r, user, "started on")
}

#[test]
fn req1_bb_jobs_run_only_on_bb_servers() {
    let r = run(pool(
        1,
        3,
        json!([]),
        json!([
            bb("anna", false, json!(0), 600),
            bb("anna", true, json!(0), 600),
            bb("anna", false, json!(700), 600),
            plain("paolo", json!(0), 600)
        ]),
        3600,
        "",
    ));
    let d = dump(&r);
    let bb_starts = starts(&r, "anna");
    assert_eq!(bb_starts.len(), 3, "{d}");
    assert!(
        bb_starts
            .iter()
            .all(|e| e.what.contains("@bbs1.bo.infn.it")),
        "{d}"
    );
    // An ordinary job may run anywhere its Requirements allow.
    assert_eq!(starts(&r, "paolo").len(), 1, "{d}");
    assert_eq!(r.summary.jobs_completed, 4, "{d}");
}

#[test]
fn req2_only_users_in_bologna_may_submit_bb_jobs() {
    // The server's owner is at the keyboard all day: only a genuine BB job
    // starts. Rome's job says it is a BB job, but its schedd stamped it
    // with SUBMIT_SITE_DOMAIN = "roma1.infn.it", so the server does not
    // believe it.
    let owners = json!([{"machines": "bbs", "from": 0, "to": 7200, "keyboard": true, "load": 1.0}]);
    let mut fake = bb("marco", false, json!(0), 600);
    fake["schedd"] = json!("roma");
    let r = run(pool(
        1,
        0,
        owners,
        json!([bb("anna", false, json!(0), 600), fake]),
        7200,
        "",
    ));
    let d = dump(&r);
    assert_eq!(starts(&r, "anna").len(), 1, "{d}");
    assert!(starts(&r, "marco").is_empty(), "{d}");
    assert_eq!(r.summary.jobs_idle_at_end, 1, "{d}");
}

#[test]
fn req3_bb_jobs_are_never_suspended_or_preempted_when_the_owner_returns() {
    // Both kinds run while the machine is idle; the owner comes back at
    // 30 minutes: INFN's policy suspends (then preempts) the plain job,
    // the BB jobs run on untouched.
    let owners =
        json!([{"machines": "bbs", "from": 1800, "to": 7200, "keyboard": true, "load": 1.0}]);
    let r = run(pool(
        1,
        0,
        owners,
        json!([
            bb("anna", true, json!(0), 5400),
            bb("anna", false, json!(0), 3000),
            plain("paolo", json!(0), 5400)
        ]),
        7200,
        "",
    ));
    let d = dump(&r);
    assert_eq!(starts(&r, "paolo").len(), 1, "{d}");
    assert!(!events(&r, "paolo", "suspended").is_empty(), "{d}");
    assert!(events(&r, "anna", "suspended").is_empty(), "{d}");
    assert!(events(&r, "anna", "evicted").is_empty(), "{d}");
    assert_eq!(events(&r, "anna", "completed").len(), 2, "{d}");
}

#[test]
fn req4_bb_servers_start_bb_jobs_whatever_the_load_and_console() {
    let owners = json!([{"machines": "bbs", "from": 0, "to": 7200, "keyboard": true, "load": 2.0}]);
    let r = run(pool(
        1,
        0,
        owners,
        json!([
            bb("anna", false, json!(300), 600),
            bb("anna", true, json!(300), 600),
            plain("paolo", json!(0), 600)
        ]),
        7200,
        "",
    ));
    let d = dump(&r);
    let s = starts(&r, "anna");
    assert_eq!(s.len(), 2, "{d}");
    // At the first negotiation after they arrive.
    assert!(s.iter().all(|e| e.time - r.start <= 360), "{d}");
    // Everybody else waits for the owner to leave.
    assert!(starts(&r, "paolo").is_empty(), "{d}");
}

#[test]
fn req5_bb_jobs_are_short_unless_labelled_long() {
    let r = run(pool(
        1,
        0,
        json!([]),
        json!([
            bb("anna", false, json!(0), 600),
            bb("anna", false, json!(0), 600),
            bb("lucia", true, json!(0), 600),
            bb("lucia", true, json!(0), 600)
        ]),
        3600,
        "",
    ));
    let d = dump(&r);
    let short = |e: &&sim::JobRecord| e.what.contains("slot1@") || e.what.contains("slot2@");
    assert_eq!(starts(&r, "anna").len(), 2, "{d}");
    assert!(starts(&r, "anna").iter().all(short), "{d}");
    assert_eq!(starts(&r, "lucia").len(), 2, "{d}");
    assert!(!starts(&r, "lucia").iter().any(short), "{d}");
}

#[test]
fn req6_a_short_bb_job_never_waits_for_long_ones() {
    // Eight long jobs fill the four long slots and queue; a short job
    // arriving later starts at the next negotiation all the same.
    let r = run(pool(
        1,
        0,
        json!([]),
        json!([{"user": "lucia", "schedd": "bbs", "append": bb_append(true),
                "submit": "universe = vanilla\nexecutable = /bin/sleep\nqueue 8", "at": 0, "runtime": 7200},
               bb("anna", false, json!(900), 600)]),
        3600,
        "",
    ));
    let d = dump(&r);
    assert_eq!(starts(&r, "lucia").len(), 4, "{d}");
    let a = starts(&r, "anna");
    assert_eq!(a.len(), 1, "{d}");
    assert!(a[0].time - r.start <= 960, "{d}");
    assert_eq!(r.summary.wait_by_user["lucia@bo.infn.it"].jobs, 4, "{d}");
}

#[test]
fn req7_short_bb_jobs_run_at_nice_5_long_and_other_jobs_at_15() {
    let r = run(pool(
        1,
        0,
        json!([]),
        json!([
            bb("anna", false, json!(0), 600),
            bb("lucia", true, json!(0), 600),
            plain("paolo", json!(0), 600)
        ]),
        3600,
        "",
    ));
    let d = dump(&r);
    assert!(starts(&r, "anna")[0].what.ends_with("(nice 5)"), "{d}");
    assert!(starts(&r, "lucia")[0].what.ends_with("(nice 15)"), "{d}");
    assert!(starts(&r, "paolo")[0].what.ends_with("(nice 15)"), "{d}");
}

#[test]
fn req8_a_short_bb_job_is_evicted_after_an_hour_and_removed() {
    let r = run(pool(
        1,
        0,
        json!([]),
        json!([bb("anna", false, json!(0), 3 * 3600)]),
        4 * 3600,
        "",
    ));
    let d = dump(&r);
    assert_eq!(starts(&r, "anna").len(), 1, "{d}");
    let removed = events(&r, "anna", "removed");
    assert_eq!(removed.len(), 1, "{d}");
    // Out within the hour, a poll and a periodic pass, and never again.
    let start = starts(&r, "anna")[0].time;
    assert!(removed[0].time - start <= 3600 + 120, "{d}");
    assert_eq!(r.summary.jobs_removed, 1, "{d}");
    assert_eq!(r.summary.jobs_completed, 0, "{d}");
}

#[test]
fn req9_bb_jobs_preempt_other_jobs_at_once() {
    // Plain jobs fill both short slots while the machine is idle; a short
    // BB job arriving at 20 minutes takes one at once (RANK: 1 > 0).
    let r = run(pool(
        1,
        0,
        json!([]),
        json!([
            plain("paolo", json!(0), 7200),
            plain("paolo", json!(0), 7200),
            bb("anna", false, json!(1200), 600)
        ]),
        3600,
        "",
    ));
    let d = dump(&r);
    let a = starts(&r, "anna");
    assert_eq!(a.len(), 1, "{d}");
    assert!(a[0].time - r.start <= 1200 + 61, "{d}");
    assert_eq!(
        events(&r, "paolo", "evicted (machine RANK)").len(),
        1,
        "{d}"
    );
}

/// Requirement 9's other half, in a pool where INFN's own rule does
/// preempt: a hog's long jobs run on INFN machines and on the BB server;
/// after two hours a user of far better priority comes. On the INFN
/// machines the negotiator preempts the hog (PREEMPTION_REQUIREMENTS); on
/// the BB server nothing is preempted.
fn req9_others(extra: &str) -> Report {
    let mut jobs = vec![
        json!({"user": "hog", "schedd": "bologna",
               "submit": "universe = vanilla\nexecutable = /bin/sleep\nrequirements = regexp(\"^pc\", Machine)\nqueue 2",
               "at": 0, "runtime": 20000}),
        json!({"user": "hog", "schedd": "bbs", "append": bb_append(true),
               "submit": "universe = vanilla\nexecutable = /bin/sleep\nqueue 4", "at": 0, "runtime": 20000}),
        bb("hog", false, json!(0), 3000),
    ];
    jobs.push(json!({"user": "fast", "schedd": "bologna", "submit": "universe = vanilla\nexecutable = /bin/sleep\nqueue 6",
                     "at": 9000, "runtime": 3000}));
    let mut s = pool(1, 2, json!([]), json!(jobs), 12000, extra);
    s["priority_factors"] = json!({"hog@bo.infn.it": 100000.0, "fast@bo.infn.it": 1.0});
    run(s)
}

#[test]
fn req9_bb_jobs_are_never_preempted_by_other_jobs() {
    let r = req9_others("");
    let d = dump(&r);
    // INFN's rule works on the ordinary machines ...
    let evicted = events(&r, "hog", "evicted");
    assert!(!evicted.is_empty(), "{d}");
    assert!(
        evicted.iter().all(|e| e.what.contains("user priority")),
        "{d}"
    );
    // ... and the hog's BB jobs on the server were never touched.
    let hogs_bb_runs: Vec<_> = r
        .job_events
        .iter()
        .filter(|e| e.user.starts_with("hog") && e.schedd == "bbs" && e.what.contains("evicted"))
        .collect();
    assert!(hogs_bb_runs.is_empty(), "{d}");
    assert_eq!(evicted.len(), 2, "{d}");
}

#[test]
fn req9_holds_as_well_with_the_running_jobs_attribute_published() {
    // With STARTD_JOB_ATTRS publishing BolognaBatchJob, the negotiator's
    // unscoped BolognaBatchJob reads the running job as the write-up
    // means; the outcome is the same (the servers' RANK already protects
    // BB jobs: a non-BB candidate's Rank 0 is below CurrentRank 1).
    let r = req9_others("STARTD_JOB_ATTRS = $(STARTD_JOB_ATTRS) BolognaBatchJob");
    let d = dump(&r);
    assert_eq!(events(&r, "hog", "evicted").len(), 2, "{d}");
    assert!(r
        .job_events
        .iter()
        .all(|e| !(e.user.starts_with("hog") && e.schedd == "bbs" && e.what.contains("evicted"))));
}
