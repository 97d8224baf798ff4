//! The startd side of the Bologna Batch System
//! (`docs/bologna-batch-system.txt`), driven through the engine with the
//! example files `examples/config/bologna-*.conf` over the INFN pool's
//! policy (`v68-default.conf`, `bologna-infn-pool.conf`), loaded by the
//! real configuration crate: which jobs start on which slots, what
//! suspends or preempts them, and how they are niced. Requirements 2 and 9
//! are the schedd's and the negotiator's; requirement 9's startd part
//! (RANK) is here.

mod common;

use classad::{ClassAd, Env};
use common::examples::*;
use common::*;
use startd::Startd;

const POOL: [&str; 2] = ["v68-default.conf", "bologna-infn-pool.conf"];
const SERVER: [&str; 3] = [
    "v68-default.conf",
    "bologna-infn-pool.conf",
    "bologna-server.conf",
];

/// The write-up's dual-CPU server: six slots (1-2 short-running, 3-6
/// long-running), in Bologna (UTC+1).
fn server(now: i64) -> Startd {
    let s = machine_at(&SERVER, 2, 3600, now);
    assert_eq!(s.slots().len(), 6, "NUM_CPUS = 6");
    s
}

fn single_cpu_server(now: i64) -> Startd {
    let s = machine_at(
        &[SERVER[0], SERVER[1], SERVER[2], "bologna-single-cpu.conf"],
        1,
        3600,
        now,
    );
    assert_eq!(s.slots().len(), 2, "NUM_CPUS = 2");
    s
}

/// An ALICE server: four slots on two CPUs (1-2 short-running, 3-4 ALICE).
fn alice_server(now: i64) -> Startd {
    let s = machine_at(
        &[SERVER[0], SERVER[1], SERVER[2], "bologna-alice.conf"],
        2,
        3600,
        now,
    );
    assert_eq!(s.slots().len(), 4, "NUM_CPUS = 4");
    s
}

/// A job as a schedd in Bologna queues it: vanilla, stamped with
/// SUBMIT_SITE_DOMAIN (requirement 2's footnote), with `more`.
fn job(owner: &str, cluster: i64, domain: &str, more: &str) -> ClassAd {
    ad(&format!(
        "[ ClusterId = {cluster}; ProcId = 0; Owner = \"{owner}\"; JobUniverse = 5; \
           ImageSize = 250000; RequestCpus = 1; RequestMemory = 1024; \
           SUBMIT_SITE_DOMAIN = \"{domain}\"; {more} ]"
    ))
}

/// A short BB job, as bbs_submit_short submits it (Addendum 1).
fn short_bb(owner: &str, cluster: i64) -> ClassAd {
    job(
        owner,
        cluster,
        "bo.infn.it",
        "BolognaBatchJob = True; \
         Requirements = (OpSys == \"LINUX\") && (BolognaBatchServer == True); \
         PeriodicRemove = ( LongRunningJob =!= True && (RemoteWallClockTime > 60*60) )",
    )
}

/// A long BB job, as bbs_submit_long submits it.
fn long_bb(owner: &str, cluster: i64) -> ClassAd {
    job(
        owner,
        cluster,
        "bo.infn.it",
        "BolognaBatchJob = True; LongRunningJob = True; \
         Requirements = (OpSys == \"LINUX\") && (BolognaBatchServer == True); \
         PeriodicRemove = ( LongRunningJob =!= True && (RemoteWallClockTime > 60*60) )",
    )
}

/// An ALICE job, as bbs_submit_alice submits it, with the group
/// requirement of requirement 10.
fn alice_job(owner: &str, cluster: i64) -> ClassAd {
    job(
        owner,
        cluster,
        "bo.infn.it",
        "BolognaBatchJob = True; LongRunningJob = True; app = \"ALICE\"; \
         Requirements = (OpSys == \"LINUX\") && (BolognaBatchServer == True) \
                        && (BolognaBatchGroup == \"ALICE\")",
    )
}

/// An ordinary job of the INFN pool, from Padova.
fn infn_job(owner: &str, cluster: i64) -> ClassAd {
    job(
        owner,
        cluster,
        "pd.infn.it",
        "Requirements = (OpSys == \"LINUX\")",
    )
}

/// Nobody at the console for an hour; the jobs' loads by slot.
fn idle(jobs: &[f64]) -> startd::Readings {
    away(3600, jobs)
}

// ===========================================================================
// Requirement 1

/// "1. Bologna Batch Jobs are specially-designated jobs which may run only
/// on specially-designated Bologna Batch Servers." Servers publish
/// `BolognaBatchServer = True` (STARTD_EXPRS); a BB job's Requirements
/// "(BolognaBatchServer == True)" matches their slots and no other
/// machine's.
#[test]
fn req1_bb_jobs_match_only_bb_servers() {
    let mut s = server(T0);
    s.tick(T0, idle(&[]));
    let env = Env::at(T0);
    let bb = short_bb("rossi", 1);
    for i in 0..6 {
        assert_eq!(published(&s, i, "BolognaBatchServer", T0), "true");
    }
    assert!(classad::matching::symmetric_match(
        &bb,
        &s.slot_ad(0, T0),
        &env
    ));
    // A machine of the INFN pool that is not a BB server.
    let mut p = machine_at(&POOL, 2, 3600, T0);
    p.tick(T0, idle(&[]));
    assert_eq!(published(&p, 0, "BolognaBatchServer", T0), "undefined");
    assert!(!classad::matching::requirements_met(
        &bb,
        &p.slot_ad(0, T0),
        &env
    ));
    // Ordinary jobs can still match that machine.
    assert!(classad::matching::symmetric_match(
        &infn_job("bianchi", 2),
        &p.slot_ad(0, T0),
        &env
    ));
}

// ===========================================================================
// Requirement 3

/// "3. Bologna Batch Jobs must be vanilla-universe jobs ... and thus once
/// they start they must not be preempted for other jobs." "we modified
/// each Bologna Batch Server's WANT_SUSPEND_VANILLA and PREEMPT
/// expressions ... so that INFN's default preemption policy would only
/// affect non-Bologna Batch Jobs." The owner comes back and stays: the
/// INFN job next to the BB job is suspended, then evicted after
/// MaxSuspendTime; the BB job runs on untouched.
#[test]
fn req3_infns_policy_evicts_other_jobs_never_bb_jobs() {
    let mut s = server(T0);
    s.tick(T0, idle(&[]));
    claim_and_run(&mut s, "slot1", "c-bb", &short_bb("rossi", 1), T0).unwrap();
    claim_and_run(&mut s, "slot2", "c-infn", &infn_job("bianchi", 2), T0).unwrap();
    let r = poll(&mut s, T0 + 600, typing(5, 1.0, &[1.0, 1.0]));
    assert!(of(&r, "slot1").is_empty(), "{:?}", r.transitions);
    assert_eq!(of(&r, "slot2"), [14], "{:?}", r.transitions);
    let r = poll_until(&mut s, T0 + 660, T0 + 1201, 60, |_| {
        typing(5, 1.0, &[1.0, 0.0])
    });
    assert!(r.transitions.is_empty(), "{:?}", r.transitions);
    let r = poll(&mut s, T0 + 1201, typing(5, 1.0, &[1.0, 0.0]));
    assert!(of(&r, "slot1").is_empty(), "{:?}", r.transitions);
    assert_eq!(of(&r, "slot2"), [16, 18], "{:?}", r.transitions);
    assert!(asks(&r, "slot2", "vacate"));
    assert_eq!(pair_of(&s, "slot1"), "Claimed/Busy");
}

/// Requirement 3's "double-check the universe of a job claiming to be a
/// Bologna Batch Job before believing it to be one": a job that says
/// BolognaBatchJob = True but is not vanilla is an ordinary job, which a
/// busy server does not start.
#[test]
fn req3_only_vanilla_jobs_are_bb_jobs() {
    let mut s = server(T0);
    s.tick(T0, typing(5, 1.0, &[]));
    let vanilla = short_bb("rossi", 1);
    let mut other = short_bb("rossi", 2);
    other.insert_value("JobUniverse", 1_i64);
    assert!(accepts(&s, "slot1", &vanilla, T0));
    assert!(!accepts(&s, "slot1", &other, T0));
}

// ===========================================================================
// Requirement 4 (and requirement 9's startd part)

/// "4. Bologna Batch Servers prefer Bologna Batch Jobs over other Condor
/// jobs, and will start Bologna Batch Jobs regardless of system load or
/// console activity." Whether a slot takes the job (START against the
/// job, as the negotiator and the claim see it).
#[test]
fn req4_bb_jobs_are_accepted_whatever_the_machine_does() {
    let mut s = server(T0);
    s.tick(T0, typing(5, 1.5, &[]));
    assert!(accepts(&s, "slot1", &short_bb("rossi", 1), T0));
    assert!(!accepts(&s, "slot1", &infn_job("bianchi", 2), T0));
    // "INFN_START ... simply contains the default Condor START policy used
    // for non-BB jobs": an idle machine takes them.
    s.tick(T0 + 1200, idle(&[]));
    assert!(accepts(&s, "slot1", &infn_job("bianchi", 2), T0 + 1200));
}

/// Requirement 4, all the way to a running job: a BB job claimed while
/// the owner types and compiles starts, and keeps running.
#[test]
fn req4_bb_jobs_start_and_run_while_the_owner_works() {
    let mut s = server(T0);
    s.tick(T0, typing(5, 1.5, &[]));
    let r = claim_and_run(&mut s, "slot1", "c-bb", &short_bb("rossi", 1), T0)
        .expect("the BB job starts while the owner works");
    assert_eq!(of(&r, "slot1"), [5, 11], "{:?}", r.transitions);
    let r = poll_until(&mut s, T0 + 60, T0 + 3600, 60, |_| typing(5, 1.5, &[1.0]));
    assert!(r.transitions.is_empty(), "{:?}", r.transitions);
}

/// An idle BB server with a short BB job on slot 2 and an INFN job on
/// slot 1, both running; then a BB job's claim for slot 1.
fn bb_claim_on_an_infn_job() -> (Startd, ClassAd, startd::Ready) {
    let mut s = server(T0);
    s.tick(T0, idle(&[]));
    claim_and_run(&mut s, "slot2", "c-bb", &short_bb("rossi", 1), T0).unwrap();
    poll(&mut s, T0 + 600, idle(&[0.0, 1.0]));
    // The machine is idle enough for INFN jobs, but one may not take slot
    // 2 from the BB job.
    let infn = infn_job("bianchi", 2);
    assert!(accepts(&s, "slot1", &infn, T0 + 610));
    let e = s
        .handle(request("slot2", "c-infn2", infn.clone()), T0 + 610)
        .unwrap_err();
    assert!(e.reason.contains("RANK"), "{e}");
    claim_and_run(&mut s, "slot1", "c-infn", &infn, T0 + 610).unwrap();
    poll(&mut s, T0 + 700, idle(&[1.0, 1.0]));
    let bb = short_bb("neri", 3);
    let r = s
        .handle(request("slot1", "c-bb2", bb.clone()), T0 + 710)
        .unwrap();
    (s, bb, r)
}

/// "Bologna Batch Servers prefer Bologna Batch Jobs" (RANK = $(IsBBJob)),
/// which covers requirement 9 on the startd: "other jobs must never
/// preempt Bologna Batch Jobs, and Bologna Batch Jobs must always
/// immediately preempt other jobs." An INFN job's claim on a slot running
/// a BB job is refused; a BB job's claim on a slot running an INFN job
/// evicts it at once (INFN gives no retirement time).
#[test]
fn req4_req9_bb_jobs_preempt_other_jobs_and_are_never_preempted() {
    let (s, _, r) = bb_claim_on_an_infn_job();
    assert_eq!(of(&r, "slot1"), [13, 18], "{:?}", r.transitions);
    assert!(asks(&r, "slot1", "vacate"));
    assert_eq!(pair_of(&s, "slot1"), "Preempting/Vacating");
    assert_eq!(pair_of(&s, "slot2"), "Claimed/Busy");
}

/// The same, to the end: once the INFN job is gone, the BB job runs on
/// the slot, at nice 5 (its claim survives Claimed/Idle although two jobs
/// have just loaded the machine beyond INFN_START: START is evaluated
/// against the claim's job).
#[test]
fn req4_req9_the_preempting_bb_job_then_runs() {
    let (mut s, bb, _) = bb_claim_on_an_infn_job();
    let r = s.handle(exited("slot1"), T0 + 720).unwrap();
    assert_eq!(of(&r, "slot1"), [23], "{:?}", r.transitions);
    let r = s.handle(activate("slot1", "c-bb2", bb), T0 + 720).unwrap();
    assert_eq!(of(&r, "slot1"), [11]);
    assert_eq!(nice_of(&r, "slot1"), 5);
    assert_eq!(published_number(&s, 0, "CurrentRank", T0 + 720), 1.0);
}

/// Requirement 9 when a schedd reuses its claim for its next job (as it
/// does while the claim is younger than CLAIM_WORKLIFE): the claim takes
/// the rank of the job it now runs (HTCondor's activate_claim updates
/// the claim's rank), so an INFN job started on a claim first made for a
/// BB job is preempted by a BB job at once, and a BB job started on a
/// claim first made for an INFN job is not taken by another INFN job.
#[test]
fn req9_a_reused_claim_takes_the_rank_of_the_job_it_runs() {
    let mut s = server(T0);
    s.tick(T0, idle(&[]));
    // A BB job's claim, then an INFN job on it.
    claim_and_run(&mut s, "slot1", "c-bb", &short_bb("rossi", 1), T0).unwrap();
    assert_eq!(published_number(&s, 0, "CurrentRank", T0), 1.0);
    s.handle(exited("slot1"), T0 + 60).unwrap();
    s.handle(activate("slot1", "c-bb", infn_job("bianchi", 2)), T0 + 60)
        .unwrap();
    assert_eq!(pair_of(&s, "slot1"), "Claimed/Busy");
    assert_eq!(published_number(&s, 0, "CurrentRank", T0 + 60), 0.0);
    let r = s
        .handle(request("slot1", "c-bb2", short_bb("neri", 3)), T0 + 70)
        .unwrap();
    assert_eq!(of(&r, "slot1"), [13, 18], "{:?}", r.transitions);
    // An INFN job's claim, then a BB job on it.
    claim_and_run(&mut s, "slot2", "c-infn", &infn_job("bianchi", 4), T0 + 70).unwrap();
    assert_eq!(published_number(&s, 1, "CurrentRank", T0 + 70), 0.0);
    s.handle(exited("slot2"), T0 + 80).unwrap();
    s.handle(activate("slot2", "c-infn", short_bb("rossi", 5)), T0 + 80)
        .unwrap();
    assert_eq!(published_number(&s, 1, "CurrentRank", T0 + 80), 1.0);
    let e = s
        .handle(request("slot2", "c-infn2", infn_job("bianchi", 6)), T0 + 90)
        .unwrap_err();
    assert!(e.reason.contains("RANK"), "{e}");
    assert_eq!(pair_of(&s, "slot2"), "Claimed/Busy");
}

// ===========================================================================
// Requirements 5 and 6

/// "5. ... Bologna Batch Jobs are assumed to be short-running unless they
/// are explicitly labeled as long-running" and "6. A short-running
/// Bologna Batch Job must not be forced to wait for the completion of a
/// long-running Bologna Batch Job": "we assigned each Condor virtual
/// machine (VM) ... a predefined role of running either long-running jobs
/// or short-running jobs" and "only short-running VMs would start non-BB
/// jobs". Which slot takes which job.
#[test]
fn req5_req6_each_kind_of_job_has_slots_of_its_own() {
    let mut s = server(T0);
    s.tick(T0, idle(&[]));
    let short = short_bb("rossi", 1);
    let long = long_bb("rossi", 2);
    let infn = infn_job("bianchi", 3);
    for slot in ["slot1", "slot2"] {
        assert!(accepts(&s, slot, &short, T0), "{slot}");
        assert!(!accepts(&s, slot, &long, T0), "{slot}");
        assert!(accepts(&s, slot, &infn, T0), "{slot}");
    }
    for slot in ["slot3", "slot4", "slot5", "slot6"] {
        assert!(!accepts(&s, slot, &short, T0), "{slot}");
        assert!(accepts(&s, slot, &long, T0), "{slot}");
        assert!(!accepts(&s, slot, &infn, T0), "{slot}");
    }
}

/// Requirement 6 with jobs running: four long BB jobs fill the
/// long-running slots of a dual-CPU server; short BB jobs still start at
/// once on the short-running slots ("we configured more total Condor VMs
/// on Bologna Batch Servers than there are actual CPUs"). The long jobs
/// run at nice 15 (requirement 7), are not evicted when the owner comes
/// back (requirement 3), and have no time limit (requirement 8 is for
/// short jobs).
#[test]
fn req6_short_bb_jobs_never_wait_for_long_ones() {
    let mut s = server(T0);
    s.tick(T0, idle(&[]));
    for (i, slot) in ["slot3", "slot4", "slot5", "slot6"].iter().enumerate() {
        let r = claim_and_run(
            &mut s,
            slot,
            &format!("c-long{i}"),
            &long_bb("rossi", 10 + i as i64),
            T0,
        )
        .unwrap_or_else(|e| panic!("the long BB job on {slot} is refused: {e}"));
        assert_eq!(nice_of(&r, slot), 15, "requirement 7");
    }
    let loads = [0.0, 0.0, 1.0, 1.0, 1.0, 1.0];
    poll(&mut s, T0 + 60, idle(&loads));
    for (i, slot) in ["slot1", "slot2"].iter().enumerate() {
        let r = claim_and_run(
            &mut s,
            slot,
            &format!("c-short{i}"),
            &short_bb("neri", 20 + i as i64),
            T0 + 120,
        )
        .unwrap_or_else(|e| panic!("the short BB job on {slot} waits: {e}"));
        assert_eq!(nice_of(&r, slot), 5, "requirement 7");
    }
    // The owner comes back for an hour and a half: no BB job is disturbed
    // (until the short ones' hour is up).
    let r = poll_until(&mut s, T0 + 180, T0 + 120 + 3600, 60, |_| {
        typing(5, 1.0, &[1.0; 6])
    });
    assert!(r.transitions.is_empty(), "{:?}", r.transitions);
    // The long jobs run on for a week.
    let r = poll_until(&mut s, T0 + 3800, T0 + 7 * 86_400, 1500, |_| {
        idle(&[0.0, 0.0, 1.0, 1.0, 1.0, 1.0])
    });
    assert!(
        r.transitions
            .iter()
            .all(|t| t.slot == "slot1" || t.slot == "slot2"),
        "{:?}",
        r.transitions
    );
    for slot in ["slot3", "slot4", "slot5", "slot6"] {
        assert_eq!(pair_of(&s, slot), "Claimed/Busy", "{slot}");
    }
}

// ===========================================================================
// Requirement 7

/// "7. ... the short-running job processes should run at a lower (better)
/// OS priority than the long-running jobs": "short-running BB jobs should
/// run with OS priority 5, while long-running BB jobs, along with all
/// non-BB jobs, should be run at OS priority 15" (JOB_RENICE_INCREMENT, in
/// the StartJob action). Long BB jobs' nice: see
/// `req6_short_bb_jobs_never_wait_for_long_ones`.
#[test]
fn req7_short_bb_jobs_run_at_nice_5_others_at_15() {
    let mut s = server(T0);
    s.tick(T0, idle(&[]));
    let r = claim_and_run(&mut s, "slot1", "c-bb", &short_bb("rossi", 1), T0).unwrap();
    assert_eq!(nice_of(&r, "slot1"), 5);
    let r = claim_and_run(&mut s, "slot2", "c-infn", &infn_job("bianchi", 2), T0).unwrap();
    assert_eq!(nice_of(&r, "slot2"), 15);
}

// ===========================================================================
// Requirement 8

/// "8. A short-running Bologna Batch Job may only run for one hour, after
/// which point it should be killed and removed from the queue." "we
/// modified each batch server's PREEMPT expression to preempt
/// short-running batch jobs at the appropriate time" and
/// SHORT_RUNNING_VM_START "so that short-running jobs preempted because
/// they've run too long will not restart anywhere".
#[test]
fn req8_a_short_bb_job_is_evicted_after_one_hour_and_never_restarts() {
    let mut s = server(T0);
    s.tick(T0, idle(&[]));
    let bb = short_bb("rossi", 1);
    claim_and_run(&mut s, "slot1", "c-bb", &bb, T0).unwrap();
    let r = poll_until(&mut s, T0 + 60, T0 + 3601, 60, |_| idle(&[1.0]));
    assert!(r.transitions.is_empty(), "{:?}", r.transitions);
    // One hour and a second: preempted, with no retirement time; vacated
    // (WANT_VACATE_VANILLA), then killed after INFN's MaxVacateTime.
    let r = poll(&mut s, T0 + 3601, idle(&[1.0]));
    assert_eq!(of(&r, "slot1"), [13, 18], "{:?}", r.transitions);
    assert!(asks(&r, "slot1", "vacate"));
    let r = poll_until(&mut s, T0 + 3660, T0 + 4200, 60, |_| idle(&[1.0]));
    assert!(r.transitions.is_empty(), "{:?}", r.transitions);
    let r = poll(&mut s, T0 + 4202, idle(&[1.0]));
    assert_eq!(of(&r, "slot1"), [21], "{:?}", r.transitions);
    assert!(asks(&r, "slot1", "kill"));
    let r = s.handle(exited("slot1"), T0 + 4205).unwrap();
    assert_eq!(of(&r, "slot1"), [25, 1], "{:?}", r.transitions);
    // Back in the queue with its hour used up, it starts nowhere.
    let mut used = bb.clone();
    used.insert_value("RemoteWallClockTime", 3601.0);
    for slot in ["slot1", "slot2", "slot3", "slot4", "slot5", "slot6"] {
        assert!(!accepts(&s, slot, &used, T0 + 4300), "{slot}");
    }
    // A short job evicted earlier for another reason may come back.
    let mut early = bb;
    early.insert_value("RemoteWallClockTime", 1800.0);
    assert!(accepts(&s, "slot1", &early, T0 + 4300));
}

// ===========================================================================
// The single-CPU server (requirement 6)

/// "on a single-CPU server we configured two Condor VMs, both for
/// short-running jobs" (IsShortRunningVM = True, IsLongRunningVM = False).
#[test]
fn req6_a_single_cpu_server_has_two_short_running_slots() {
    let mut s = single_cpu_server(T0);
    s.tick(T0, idle(&[]));
    let long = long_bb("rossi", 1);
    for slot in ["slot1", "slot2"] {
        assert!(!accepts(&s, slot, &long, T0), "{slot}");
        assert!(accepts(&s, slot, &infn_job("bianchi", 2), T0), "{slot}");
    }
    let r = claim_and_run(&mut s, "slot1", "c1", &short_bb("rossi", 3), T0).unwrap();
    assert_eq!(nice_of(&r, "slot1"), 5);
    let r = claim_and_run(&mut s, "slot2", "c2", &short_bb("neri", 4), T0).unwrap();
    assert_eq!(nice_of(&r, "slot2"), 5);
    let r = poll_until(&mut s, T0 + 60, T0 + 3600, 60, |_| idle(&[1.0, 1.0]));
    assert!(r.transitions.is_empty(), "{:?}", r.transitions);
}

// ===========================================================================
// ALICE servers (Addendum 2, requirements 10 to 13)

/// "10. There is a third type of Bologna Batch Job, an ALICE Job, which
/// may run only on specially-designated ALICE BB Servers." ALICE servers
/// publish BolognaBatchGroup = "ALICE"; ALICE jobs require it. "we simply
/// created a new type of Condor VM ..., an ALICE VM, which would only run
/// ALICE Jobs", and "By defining only ALICE VMs and short-running BB job
/// VMs on ALICE BB Servers, omitting any long-running BB job VMs, we have
/// already prevented long-running BB Jobs from starting".
#[test]
fn req10_req12_alice_slots_short_slots_and_no_long_jobs() {
    let mut s = alice_server(T0);
    s.tick(T0, idle(&[]));
    let env = Env::at(T0);
    let alice = alice_job("ferrari", 1);
    let short = short_bb("rossi", 2);
    let long = long_bb("rossi", 3);
    let infn = infn_job("bianchi", 4);
    for i in 0..4 {
        assert_eq!(published(&s, i, "BolognaBatchGroup", T0), "\"ALICE\"");
        assert_eq!(published(&s, i, "BolognaBatchServer", T0), "true");
    }
    assert!(classad::matching::symmetric_match(
        &alice,
        &s.slot_ad(2, T0),
        &env
    ));
    // Not on an ordinary BB server, not even on its long-running slots.
    let mut plain = server(T0);
    plain.tick(T0, idle(&[]));
    assert!(!classad::matching::requirements_met(
        &alice,
        &plain.slot_ad(2, T0),
        &env
    ));
    // ALICE slots take ALICE jobs only; short slots never take them.
    for slot in ["slot3", "slot4"] {
        assert!(accepts(&s, slot, &alice, T0), "{slot}");
        assert!(!accepts(&s, slot, &short, T0), "{slot}");
        assert!(!accepts(&s, slot, &infn, T0), "{slot}");
    }
    for slot in ["slot1", "slot2"] {
        assert!(!accepts(&s, slot, &alice, T0), "{slot}");
        assert!(accepts(&s, slot, &short, T0), "{slot}");
    }
    for slot in ["slot1", "slot2", "slot3", "slot4"] {
        assert!(!accepts(&s, slot, &long, T0), "{slot}");
    }
}

/// "12. ALICE BB Servers ... will start short-running BB Jobs when no
/// ALICE jobs are running": with no ALICE job, both short slots take
/// short BB jobs (NumVMsBusy leaves the slot's own state out, "because the
/// START expression ... is evaluated not only by the negotiator at
/// matchmaking time, but also by the startd itself after a match has been
/// made"); they run at nice 10 here (requirement 13's
/// JOB_RENICE_INCREMENT).
#[test]
fn req12_with_no_alice_job_both_short_slots_run_short_jobs() {
    let mut s = alice_server(T0);
    s.tick(T0, idle(&[]));
    let r = claim_and_run(&mut s, "slot1", "c1", &short_bb("rossi", 1), T0).unwrap();
    assert_eq!(nice_of(&r, "slot1"), 10);
    assert_eq!(published(&s, 1, "vm1_State", T0), "\"Claimed\"");
    let r = claim_and_run(&mut s, "slot2", "c2", &short_bb("neri", 2), T0).unwrap();
    assert_eq!(nice_of(&r, "slot2"), 10);
    assert_eq!(pair_of(&s, "slot1"), "Claimed/Busy");
    assert_eq!(pair_of(&s, "slot2"), "Claimed/Busy");
}

/// "11. An ALICE Job must not be forced to wait for the completion of
/// another Bologna Batch Job before starting on a ALICE BB Server", and
/// "13. Short-running BB Jobs already running on an ALICE BB Server when
/// an ALICE Job arrives will be allowed to run to completion, at a higher
/// (worse) OS priority than the ALICE Job" (JOB_RENICE_INCREMENT =
/// ( ( $(IsAliceBBJob) =!= True ) * 10 )). Then requirement 12: with ALICE
/// jobs on both CPUs, no short BB job starts.
#[test]
fn req11_req13_alice_jobs_start_at_once_short_jobs_finish_niced() {
    let mut s = alice_server(T0);
    s.tick(T0, idle(&[]));
    // Two short BB jobs fill the short slots (and both CPUs).
    let r = claim_and_run(&mut s, "slot1", "c-s1", &short_bb("rossi", 1), T0).unwrap();
    assert_eq!(nice_of(&r, "slot1"), 10);
    claim_and_run(&mut s, "slot2", "c-s2", &short_bb("neri", 2), T0).unwrap();
    poll(&mut s, T0 + 60, idle(&[1.0, 1.0]));
    // ALICE jobs arrive: they start at once, at nice 0.
    for (i, slot) in ["slot3", "slot4"].iter().enumerate() {
        let r = claim_and_run(
            &mut s,
            slot,
            &format!("c-a{i}"),
            &alice_job("ferrari", 10 + i as i64),
            T0 + 120,
        )
        .unwrap_or_else(|e| panic!("the ALICE job waits on {slot}: {e}"));
        assert_eq!(of(&r, slot), [5, 11], "{:?}", r.transitions);
        assert_eq!(nice_of(&r, slot), 0);
    }
    // The short BB jobs are not preempted: they run to completion (within
    // their hour).
    let r = poll_until(&mut s, T0 + 180, T0 + 1800, 60, |_| idle(&[1.0; 4]));
    assert!(r.transitions.is_empty(), "{:?}", r.transitions);
    // Slot 1's job is done. ALICE jobs now run on both CPUs: its claim
    // may start no other short job (START, evaluated against the claim's
    // job, counts three other claimed slots), so it is closed ...
    let r = s.handle(exited("slot1"), T0 + 1800).unwrap();
    assert_eq!(of(&r, "slot1"), [12, 10, 22, 1], "{:?}", r.transitions);
    // ... and no new short BB job starts there.
    s.tick(T0 + 1860, idle(&[0.0, 1.0, 1.0, 1.0]));
    assert!(!accepts(&s, "slot1", &short_bb("verdi", 3), T0 + 1860));
}

/// Requirement 12, "prevents a short-running BB Job from starting unless
/// the machine has idle CPUs": with one ALICE job running, one short BB
/// job starts, a second does not.
#[test]
fn req12_short_jobs_start_only_while_a_cpu_is_free() {
    let mut s = alice_server(T0);
    s.tick(T0, idle(&[]));
    claim_and_run(&mut s, "slot3", "c-a", &alice_job("ferrari", 1), T0)
        .expect("the ALICE job starts");
    s.tick(T0 + 60, idle(&[0.0, 0.0, 1.0, 0.0]));
    let short = short_bb("rossi", 2);
    assert!(accepts(&s, "slot1", &short, T0 + 60));
    claim_and_run(&mut s, "slot1", "c-s1", &short, T0 + 60).expect("one short BB job starts");
    s.tick(T0 + 120, idle(&[1.0, 0.0, 1.0, 0.0]));
    assert!(!accepts(&s, "slot2", &short_bb("neri", 3), T0 + 120));
}
