//! One test per numbered transition of HTCondor's manual
//! (`policy-configuration.rst`, "State and Activity Transitions"), named
//! by its number, plus the timers: match timeout, killing timeout, claim
//! lease, retirement and vacate arithmetic, claim worklife.

mod common;

use common::*;
use startd::{Action, Cause, DrainHow, Event, ShutdownHow};

/// A desktop-like policy driven by the keyboard, with suspension.
const DESKTOP: &str = "
IS_OWNER = (START =?= False)
START = KeyboardIdle > 15 * 60
WANT_SUSPEND = True
SUSPEND = KeyboardIdle < 60
CONTINUE = KeyboardIdle > 5 * 60
PREEMPT = (Activity == \"Suspended\") && (time() - EnteredCurrentActivity) > 10 * 60
KILL = (time() - EnteredCurrentActivity) > 10 * 60
MaxJobRetirementTime = 0
";

fn busy_desktop() -> startd::Startd {
    let mut s = startd(DESKTOP, 1);
    s.tick(T0, readings(3600, 0.0));
    run_job(&mut s, job("alice"), T0);
    s
}

#[test]
fn t01_owner_to_unclaimed_when_is_owner_is_false() {
    let mut s = startd("", 1);
    let r = s.tick(T0, readings(0, 0.0));
    assert_eq!(numbers(&r), vec![1]);
    assert_eq!(
        r.transitions[0].cause,
        Cause::Expr {
            name: "IS_OWNER".into(),
            value: "false".into()
        }
    );
    assert_eq!(pair(&s, 0), "Unclaimed/Idle");
}

#[test]
fn t02_unclaimed_to_owner_when_start_is_false() {
    let mut s = startd(DESKTOP, 1);
    assert_eq!(numbers(&s.tick(T0, readings(3600, 0.0))), vec![1]);
    let r = s.tick(T0 + 5, readings(10, 0.0));
    assert_eq!(numbers(&r), vec![2]);
    assert_eq!(pair(&s, 0), "Owner/Idle");
    // And the Owner state holds while START stays false.
    assert!(s.tick(T0 + 10, readings(20, 0.0)).transitions.is_empty());
}

#[test]
fn t03_t04_benchmarks_run_when_unclaimed() {
    let mut s = startd("RunBenchmarks = LastBenchmark == 0", 1);
    let r = s.tick(T0, readings(0, 0.0));
    assert_eq!(numbers(&r), vec![1, 3]);
    assert!(r
        .actions
        .iter()
        .any(|a| matches!(a, Action::RunBenchmarks { slot } if slot == "slot1")));
    assert_eq!(pair(&s, 0), "Unclaimed/Benchmarking");
    let r = s
        .handle(
            Event::BenchmarksDone {
                slot: "slot1".into(),
                mips: 5000,
                kflops: 900_000,
            },
            T0 + 30,
        )
        .unwrap();
    assert_eq!(numbers(&r), vec![4]);
    assert_eq!(pair(&s, 0), "Unclaimed/Idle");
    // LastBenchmark is now set, so they do not run again.
    assert!(s.tick(T0 + 60, readings(0, 0.0)).transitions.is_empty());
    let ad = s.slot_ad(0, T0 + 60);
    assert_eq!(
        ad.eval_attr("Mips", &classad::Env::default()).to_string(),
        "5000"
    );
}

#[test]
fn t05_unclaimed_to_claimed_when_the_schedd_claims_first() {
    let mut s = startd("", 1);
    s.tick(T0, readings(0, 0.0));
    let r = s.handle(request("slot1", "c1", job("alice")), T0).unwrap();
    assert_eq!(numbers(&r), vec![5]);
    assert_eq!(pair(&s, 0), "Claimed/Idle");
}

#[test]
fn t06_unclaimed_to_matched() {
    let mut s = startd("", 1);
    s.tick(T0, readings(0, 0.0));
    let r = s
        .handle(
            Event::Matched {
                slot: "slot1".into(),
            },
            T0,
        )
        .unwrap();
    assert_eq!(numbers(&r), vec![6]);
    // While Matched, the slot tells the negotiator it wants no other job.
    let ad = s.slot_ad(0, T0);
    assert_eq!(
        ad.eval_attr("Requirements", &classad::Env::default())
            .to_string(),
        "false"
    );
}

#[test]
fn t07_unclaimed_to_backfill() {
    let mut s = startd(
        "ENABLE_BACKFILL = True\nSTART_BACKFILL = KeyboardIdle > 300",
        1,
    );
    let r = s.tick(T0, readings(60, 0.0));
    assert_eq!(numbers(&r), vec![1]);
    let r = s.tick(T0 + 5, readings(600, 0.0));
    assert_eq!(numbers(&r), vec![7]);
    assert!(r
        .actions
        .iter()
        .any(|a| matches!(a, Action::StartBackfill { .. })));
}

#[test]
fn t08_matched_to_owner_when_start_turns_false() {
    let mut s = startd(DESKTOP, 1);
    s.tick(T0, readings(3600, 0.0));
    s.handle(
        Event::Matched {
            slot: "slot1".into(),
        },
        T0,
    )
    .unwrap();
    let r = s.tick(T0 + 5, readings(5, 0.0));
    assert_eq!(numbers(&r), vec![8]);
    assert_eq!(
        r.transitions[0].cause,
        Cause::Expr {
            name: "START".into(),
            value: "false".into()
        }
    );
    assert_eq!(pair(&s, 0), "Owner/Idle");
}

#[test]
fn t08_match_timeout_then_straight_back_to_unclaimed() {
    let mut s = startd("MATCH_TIMEOUT = 120", 1);
    s.tick(T0, readings(0, 0.0));
    s.handle(
        Event::Matched {
            slot: "slot1".into(),
        },
        T0,
    )
    .unwrap();
    assert!(s.tick(T0 + 119, readings(0, 0.0)).transitions.is_empty());
    let r = s.tick(T0 + 120, readings(0, 0.0));
    // 8 to Owner on the timer, then 1 at once: START is not false.
    assert_eq!(numbers(&r), vec![8, 1]);
    assert!(matches!(&r.transitions[0].cause, Cause::Timer(t) if t.contains("MATCH_TIMEOUT")));
}

#[test]
fn t09_matched_to_claimed() {
    let mut s = startd("", 1);
    s.tick(T0, readings(0, 0.0));
    s.handle(
        Event::Matched {
            slot: "slot1".into(),
        },
        T0,
    )
    .unwrap();
    let r = s
        .handle(request("slot1", "c1", job("alice")), T0 + 1)
        .unwrap();
    assert_eq!(numbers(&r), vec![9]);
}

#[test]
fn claims_are_refused_when_start_is_false_for_the_job() {
    let mut s = startd("START = Owner == \"alice\"", 1);
    s.tick(T0, readings(0, 0.0));
    let e = s
        .handle(request("slot1", "c1", job("bob")), T0)
        .unwrap_err();
    assert_eq!(e.reason, "START is false for this job");
    assert_eq!(pair(&s, 0), "Unclaimed/Idle");
    s.handle(request("slot1", "c1", job("alice")), T0).unwrap();
}

#[test]
fn t10_claimed_idle_to_preempting_when_start_turns_false_then_22_to_owner() {
    let mut s = startd(DESKTOP, 1);
    s.tick(T0, readings(3600, 0.0));
    s.handle(request("slot1", "c1", job("alice")), T0).unwrap();
    let r = s.tick(T0 + 5, readings(5, 0.0));
    // No job was running, so Preempting ends at once.
    assert_eq!(numbers(&r), vec![10, 22]);
    assert!(r
        .actions
        .iter()
        .any(|a| matches!(a, Action::ClaimEnded { claim_id, .. } if claim_id == "c1")));
    assert_eq!(pair(&s, 0), "Owner/Idle");
}

#[test]
fn t11_t12_a_job_runs_and_exits() {
    let mut s = startd("JOB_RENICE_INCREMENT = 10", 1);
    s.tick(T0, readings(0, 0.0));
    s.handle(request("slot1", "c1", job("alice")), T0).unwrap();
    let r = s
        .handle(activate("slot1", "c1", job("alice")), T0 + 2)
        .unwrap();
    assert_eq!(numbers(&r), vec![11]);
    assert!(r
        .actions
        .iter()
        .any(|a| matches!(a, Action::StartJob { nice: 10, .. })));
    let ad = s.slot_ad(0, T0 + 2);
    assert_eq!(
        ad.eval_attr("JobId", &classad::Env::default()).to_string(),
        "\"1.0\""
    );
    assert_eq!(
        ad.eval_attr("RemoteOwner", &classad::Env::default())
            .to_string(),
        "\"alice\""
    );
    let r = s.handle(exited("slot1"), T0 + 100).unwrap();
    assert_eq!(numbers(&r), vec![12]);
    assert_eq!(pair(&s, 0), "Claimed/Idle");
    let ad = s.slot_ad(0, T0 + 100);
    assert_eq!(
        ad.eval_attr("TotalClaimRunTime", &classad::Env::default())
            .to_string(),
        "98"
    );
}

#[test]
fn t13_busy_to_retiring_when_preempt_is_true_and_suspension_is_not_wanted() {
    let mut s = startd(
        "WANT_SUSPEND = False\nPREEMPT = KeyboardIdle < 60\nMaxJobRetirementTime = 3600",
        1,
    );
    s.tick(T0, readings(3600, 0.0));
    run_job(&mut s, job("alice"), T0);
    let r = s.tick(T0 + 10, readings(5, 0.0));
    assert_eq!(numbers(&r), vec![13]);
    assert_eq!(pair(&s, 0), "Claimed/Retiring");
}

#[test]
fn t14_t15_suspend_and_continue() {
    let mut s = busy_desktop();
    let r = s.tick(T0 + 10, readings(5, 0.0));
    assert_eq!(numbers(&r), vec![14]);
    assert!(r
        .actions
        .iter()
        .any(|a| matches!(a, Action::SuspendJob { .. })));
    let r = s.tick(T0 + 400, readings(301, 0.0));
    assert_eq!(numbers(&r), vec![15]);
    assert!(r
        .actions
        .iter()
        .any(|a| matches!(a, Action::ContinueJob { .. })));
    // Suspension does not count as run time.
    let ad = s.slot_ad(0, T0 + 400);
    assert_eq!(
        ad.eval_attr("TotalJobSuspendTime", &classad::Env::default())
            .to_string(),
        "390"
    );
    assert_eq!(
        ad.eval_attr("TotalJobRunTime", &classad::Env::default())
            .to_string(),
        "10"
    );
}

#[test]
fn t16_suspended_to_retiring_when_preempt_turns_true() {
    let mut s = busy_desktop();
    s.tick(T0 + 10, readings(5, 0.0));
    // Ten minutes suspended: the desktop PREEMPT fires; with no retirement
    // time, Preempting follows at once (18).
    let r = s.tick(T0 + 10 + 601, readings(5, 0.0));
    assert_eq!(numbers(&r), vec![16, 18]);
    assert_eq!(pair(&s, 0), "Preempting/Vacating");
}

#[test]
fn t17_suspended_retirement_runs_out() {
    // A better claim arrives while the job is suspended: retirement starts
    // with the hour the machine grants. Then the machine's
    // MaxJobRetirementTime shrinks during the suspension (the manual: "only
    // possible if MaxJobRetirementTime decreases during the suspension");
    // suspension does not count, so the job has run 10 s of its new 0.
    let policy = |retire: &str| {
        format!(
            "RunBenchmarks = False\nSLOTS_CONNECTED_TO_KEYBOARD = 1000\nRANK = (TARGET.Owner == \"boss\") * 10\n\
             WANT_SUSPEND = True\nSUSPEND = KeyboardIdle < 60\nCONTINUE = False\n\
             MaxJobRetirementTime = {retire}\nMachineMaxVacateTime = 0"
        )
    };
    let mut s = startd(&policy("3600"), 1);
    s.tick(T0, readings(3600, 0.0));
    run_job(&mut s, job("alice"), T0);
    s.tick(T0 + 10, readings(5, 0.0));
    assert_eq!(pair(&s, 0), "Claimed/Suspended");
    s.handle(request("slot1", "c2", job("boss")), T0 + 20)
        .unwrap();
    assert_eq!(pair(&s, 0), "Claimed/Suspended");
    assert!(s.tick(T0 + 25, readings(5, 0.0)).transitions.is_empty());
    s.reconfigure(&config(&policy("0"))).unwrap();
    let r = s.tick(T0 + 30, readings(5, 0.0));
    assert_eq!(numbers(&r)[0], 17);
    assert!(r
        .actions
        .iter()
        .any(|a| matches!(a, Action::ContinueJob { .. })));
}

#[test]
fn t18_retirement_ends_when_the_job_exits() {
    let mut s = startd(
        "WANT_SUSPEND = False\nPREEMPT = KeyboardIdle < 60\nMaxJobRetirementTime = 3600",
        1,
    );
    s.tick(T0, readings(3600, 0.0));
    run_job(&mut s, job("alice"), T0);
    s.tick(T0 + 10, readings(5, 0.0));
    let r = s.handle(exited("slot1"), T0 + 500).unwrap();
    // 18 to Preempting, then 22 to Owner; IS_OWNER is false (the
    // default), so 1 back to Unclaimed.
    assert_eq!(numbers(&r), vec![18, 22, 1]);
}

#[test]
fn t18_retirement_ends_when_its_time_is_used() {
    let mut s = startd(
        "WANT_SUSPEND = False\nPREEMPT = KeyboardIdle < 60\nMaxJobRetirementTime = 3600\nMachineMaxVacateTime = 600",
        1,
    );
    s.tick(T0, readings(3600, 0.0));
    run_job(&mut s, job("alice"), T0);
    s.tick(T0 + 10, readings(5, 0.0));
    // Vacating starts 600 s before the end of the hour, so that it ends
    // with it.
    assert!(s.tick(T0 + 2999, readings(5, 0.0)).transitions.is_empty());
    let r = s.tick(T0 + 3000, readings(5, 0.0));
    assert_eq!(numbers(&r), vec![18]);
    assert!(r
        .actions
        .iter()
        .any(|a| matches!(a, Action::VacateJob { .. })));
    assert_eq!(s.slots()[0].vacate_deadline, Some(T0 + 3600));
}

fn rank_preemption() -> startd::Startd {
    let mut s = startd(
        "RANK = (TARGET.Owner == \"boss\") * 10\nMaxJobRetirementTime = 300\nMachineMaxVacateTime = 60",
        1,
    );
    s.tick(T0, readings(3600, 0.0));
    run_job(&mut s, job("alice"), T0);
    s
}

#[test]
fn t19_unretire_when_the_preempting_claim_goes_away() {
    let mut s = rank_preemption();
    let r = s
        .handle(request("slot1", "c2", job("boss")), T0 + 10)
        .unwrap();
    assert_eq!(numbers(&r), vec![13]);
    let r = s
        .handle(
            Event::ReleaseClaim {
                slot: "slot1".into(),
                claim_id: "c2".into(),
            },
            T0 + 20,
        )
        .unwrap();
    assert_eq!(numbers(&r), vec![19]);
    assert_eq!(pair(&s, 0), "Claimed/Busy");
}

#[test]
fn rank_preemption_needs_a_strictly_better_rank() {
    let mut s = rank_preemption();
    let e = s
        .handle(request("slot1", "c2", job("carol")), T0 + 10)
        .unwrap_err();
    assert!(e.reason.contains("not better"), "{e}");
    assert_eq!(pair(&s, 0), "Claimed/Busy");
}

#[test]
fn t20_retiring_to_suspended() {
    let mut s = startd(
        "WANT_SUSPEND = True\nSUSPEND = KeyboardIdle < 60\nCONTINUE = KeyboardIdle > 300\nRANK = (TARGET.Owner == \"boss\") * 10\nMaxJobRetirementTime = 3600",
        1,
    );
    s.tick(T0, readings(3600, 0.0));
    run_job(&mut s, job("alice"), T0);
    s.handle(request("slot1", "c2", job("boss")), T0 + 10)
        .unwrap();
    let r = s.tick(T0 + 20, readings(5, 0.0));
    assert_eq!(numbers(&r), vec![20]);
    // Continuing goes back to Retiring (16), not Busy.
    let r = s.tick(T0 + 400, readings(400, 0.0));
    assert_eq!(numbers(&r), vec![16]);
}

#[test]
fn t21_kill_while_vacating() {
    let mut s = busy_desktop();
    s.tick(T0 + 10, readings(5, 0.0));
    s.tick(T0 + 10 + 601, readings(5, 0.0));
    assert_eq!(pair(&s, 0), "Preempting/Vacating");
    let r = s.tick(T0 + 10 + 601 + 601, readings(5, 0.0));
    assert_eq!(numbers(&r), vec![21]);
    assert!(
        matches!(&r.transitions[0].cause, Cause::Expr { name, value } if name == "KILL" && value == "true")
    );
    assert!(r
        .actions
        .iter()
        .any(|a| matches!(a, Action::KillJob { .. })));
}

#[test]
fn t21_vacate_time_runs_out() {
    let mut s = startd(
        "WANT_SUSPEND = False\nPREEMPT = KeyboardIdle < 60\nMachineMaxVacateTime = 120",
        1,
    );
    s.tick(T0, readings(3600, 0.0));
    run_job(&mut s, job("alice"), T0);
    let r = s.tick(T0 + 10, readings(5, 0.0));
    assert_eq!(numbers(&r), vec![13, 18]);
    assert!(s.tick(T0 + 129, readings(5, 0.0)).transitions.is_empty());
    let r = s.tick(T0 + 130, readings(5, 0.0));
    assert_eq!(numbers(&r), vec![21]);
    assert!(matches!(&r.transitions[0].cause, Cause::Timer(_)));
}

#[test]
fn t22_vacated_job_gone_slot_to_owner() {
    let mut s = busy_desktop();
    s.tick(T0 + 10, readings(5, 0.0));
    s.tick(T0 + 611, readings(5, 0.0));
    let r = s.handle(exited("slot1"), T0 + 620).unwrap();
    assert_eq!(numbers(&r), vec![22]);
    assert_eq!(pair(&s, 0), "Owner/Idle");
}

#[test]
fn t23_vacated_for_a_better_claim_then_claimed_idle_with_it() {
    let mut s = rank_preemption();
    s.handle(request("slot1", "c2", job("boss")), T0 + 10)
        .unwrap();
    // 300 s retirement less 60 s vacating: Preempting at 240 s of run time.
    let r = s.tick(T0 + 240, readings(3600, 0.0));
    assert_eq!(numbers(&r), vec![18]);
    let r = s.handle(exited("slot1"), T0 + 250).unwrap();
    assert_eq!(numbers(&r), vec![23]);
    assert_eq!(pair(&s, 0), "Claimed/Idle");
    assert_eq!(s.slots()[0].claim.as_ref().unwrap().id, "c2");
    assert_eq!(
        s.slot_ad(0, T0 + 250)
            .eval_attr("CurrentRank", &classad::Env::default())
            .to_string(),
        "1.000000000000000E+01"
    );
}

#[test]
fn t24_killed_for_a_better_claim() {
    let mut s = rank_preemption();
    s.handle(request("slot1", "c2", job("boss")), T0 + 10)
        .unwrap();
    s.tick(T0 + 240, readings(3600, 0.0));
    let r = s.tick(T0 + 300, readings(3600, 0.0));
    assert_eq!(numbers(&r), vec![21]);
    let r = s.handle(exited("slot1"), T0 + 305).unwrap();
    assert_eq!(numbers(&r), vec![24]);
    assert_eq!(pair(&s, 0), "Claimed/Idle");
}

#[test]
fn t25_killed_then_owner() {
    let mut s = startd(
        "WANT_SUSPEND = False\nWANT_VACATE = False\nPREEMPT = KeyboardIdle < 60",
        1,
    );
    s.tick(T0, readings(3600, 0.0));
    run_job(&mut s, job("alice"), T0);
    let r = s.tick(T0 + 10, readings(5, 0.0));
    assert_eq!(numbers(&r), vec![13, 18]);
    assert_eq!(pair(&s, 0), "Preempting/Killing");
    let r = s.handle(exited("slot1"), T0 + 12).unwrap();
    assert_eq!(numbers(&r), vec![25, 1]);
}

#[test]
fn killing_timeout_kills_the_starter_tree_once() {
    let mut s = startd("WANT_SUSPEND = False\nWANT_VACATE = False\nPREEMPT = KeyboardIdle < 60\nKILLING_TIMEOUT = 30", 1);
    s.tick(T0, readings(3600, 0.0));
    run_job(&mut s, job("alice"), T0);
    s.tick(T0 + 10, readings(5, 0.0));
    let r = s.tick(T0 + 39, readings(5, 0.0));
    assert!(!r
        .actions
        .iter()
        .any(|a| matches!(a, Action::KillStarterTree { .. })));
    let r = s.tick(T0 + 40, readings(5, 0.0));
    assert!(r
        .actions
        .iter()
        .any(|a| matches!(a, Action::KillStarterTree { .. })));
    let r = s.tick(T0 + 45, readings(5, 0.0));
    assert!(r.actions.is_empty());
}

fn backfill() -> startd::Startd {
    let mut s = startd(
        "ENABLE_BACKFILL = True\nSTART_BACKFILL = KeyboardIdle > 300\nEVICT_BACKFILL = KeyboardIdle < 60",
        1,
    );
    s.tick(T0, readings(600, 0.0));
    s.handle(
        Event::BackfillStarted {
            slot: "slot1".into(),
        },
        T0,
    )
    .unwrap();
    assert_eq!(pair(&s, 0), "Backfill/Busy");
    s
}

#[test]
fn t26_t27_backfill_client_starts_and_exits_on_its_own() {
    let mut s = startd("ENABLE_BACKFILL = True\nSTART_BACKFILL = True", 1);
    s.tick(T0, readings(600, 0.0));
    let r = s
        .handle(
            Event::BackfillStarted {
                slot: "slot1".into(),
            },
            T0 + 1,
        )
        .unwrap();
    assert_eq!(numbers(&r), vec![26]);
    let r = s
        .handle(
            Event::BackfillExited {
                slot: "slot1".into(),
            },
            T0 + 2,
        )
        .unwrap();
    assert_eq!(numbers(&r), vec![27]);
}

#[test]
fn t28_t29_t30_evict_backfill() {
    let mut s = backfill();
    let r = s.tick(T0 + 10, readings(5, 0.0));
    assert_eq!(numbers(&r), vec![28]);
    assert!(r
        .actions
        .iter()
        .any(|a| matches!(a, Action::KillBackfill { .. })));
    let r = s
        .handle(
            Event::BackfillExited {
                slot: "slot1".into(),
            },
            T0 + 12,
        )
        .unwrap();
    assert_eq!(numbers(&r), vec![29, 30, 1]);
    assert_eq!(pair(&s, 0), "Unclaimed/Idle");
}

#[test]
fn t31_backfill_to_claimed() {
    let mut s = backfill();
    let r = s
        .handle(request("slot1", "c1", job("alice")), T0 + 10)
        .unwrap();
    assert_eq!(numbers(&r), vec![28]);
    let r = s
        .handle(
            Event::BackfillExited {
                slot: "slot1".into(),
            },
            T0 + 12,
        )
        .unwrap();
    assert_eq!(numbers(&r), vec![29, 31]);
    assert_eq!(pair(&s, 0), "Claimed/Idle");
}

#[test]
fn t32_backfill_to_matched() {
    let mut s = backfill();
    let r = s
        .handle(
            Event::Matched {
                slot: "slot1".into(),
            },
            T0 + 10,
        )
        .unwrap();
    assert_eq!(numbers(&r), vec![28]);
    let r = s
        .handle(
            Event::BackfillExited {
                slot: "slot1".into(),
            },
            T0 + 12,
        )
        .unwrap();
    assert_eq!(numbers(&r), vec![29, 32]);
    assert_eq!(pair(&s, 0), "Matched/Idle");
}

fn drain(s: &mut startd::Startd, resume: bool, now: i64) -> startd::Ready {
    s.handle(
        Event::Drain {
            how: DrainHow::Graceful,
            resume_on_completion: resume,
            start_expr: None,
            reason: "test".into(),
        },
        now,
    )
    .unwrap()
}

/// A drain's CheckExpr is evaluated in every slot's published ad (the
/// draining estimates included), as HTCondor's `ResMgr::startDraining`.
#[test]
fn a_drain_s_check_expression_must_hold_on_every_slot() {
    let mut s = startd("", 2);
    s.tick(T0, readings(0, 0.0));
    let check = |s: &mut startd::Startd, text: &str| {
        s.drain_check(&classad::parse_expr(text).unwrap(), T0 + 1)
    };
    let e = check(&mut s, "SlotID == 1").unwrap_err();
    assert!(
        e.starts_with("Draining check expression is false on slot2@"),
        "{e}"
    );
    let e = check(&mut s, "NoSuchAttr").unwrap_err();
    assert!(e.contains("does not evaluate to a bool"), "{e}");
    check(&mut s, "ExpectedMachineGracefulDrainingCompletion >= 0").unwrap();
    // Already draining: the drain itself refuses.
    drain(&mut s, false, T0 + 2);
    check(&mut s, "false").unwrap();
}

#[test]
fn t36_t37_t33_draining_owner_and_unclaimed_slots() {
    let mut s = startd("SLOT2_IS_OWNER = True", 2);
    s.tick(T0, readings(0, 0.0));
    assert_eq!(
        (pair(&s, 0).as_str(), pair(&s, 1).as_str()),
        ("Unclaimed/Idle", "Owner/Idle")
    );
    let r = drain(&mut s, false, T0 + 1);
    let mut n = numbers(&r);
    n.sort();
    assert_eq!(n, vec![33, 33, 36, 37]);
    assert!(r.actions.iter().any(|a| matches!(a, Action::DrainComplete)));
    assert_eq!(pair(&s, 0), "Drained/Idle");
}

#[test]
fn t34_drain_cancelled_after_it_completed() {
    let mut s = startd("", 1);
    s.tick(T0, readings(0, 0.0));
    drain(&mut s, false, T0 + 1);
    let r = s.handle(Event::CancelDrain, T0 + 2).unwrap();
    assert_eq!(numbers(&r), vec![34, 1]);
}

#[test]
fn t34_drain_finalized_by_itself_when_asked_to_resume() {
    let mut s = startd("", 1);
    s.tick(T0, readings(0, 0.0));
    let r = drain(&mut s, true, T0 + 1);
    assert_eq!(numbers(&r), vec![37, 33, 34, 1]);
}

#[test]
fn t35_drain_cancelled_while_a_slot_still_retires() {
    let mut s = startd("MaxJobRetirementTime = 3600", 2);
    s.tick(T0, readings(0, 0.0));
    s.handle(request("slot2", "c1", job("alice")), T0).unwrap();
    s.handle(activate("slot2", "c1", job("alice")), T0).unwrap();
    let r = drain(&mut s, false, T0 + 1);
    let n = numbers(&r);
    assert!(n.contains(&37) && n.contains(&13), "{n:?}");
    assert_eq!(pair(&s, 0), "Drained/Retiring");
    let r = s.handle(Event::CancelDrain, T0 + 2).unwrap();
    assert!(numbers(&r).contains(&35), "{:?}", numbers(&r));
}

#[test]
fn draining_gives_running_jobs_their_retirement_then_drains_their_slot() {
    let mut s = startd("MaxJobRetirementTime = 3600\nMachineMaxVacateTime = 0", 1);
    s.tick(T0, readings(0, 0.0));
    run_job(&mut s, job("alice"), T0);
    let r = drain(&mut s, false, T0 + 1);
    assert_eq!(numbers(&r), vec![13]);
    // While draining, nothing new matches.
    assert_eq!(
        s.slot_ad(0, T0 + 1)
            .eval_attr("Requirements", &classad::Env::default())
            .to_string(),
        "false"
    );
    let r = s.handle(exited("slot1"), T0 + 100).unwrap();
    assert_eq!(numbers(&r), vec![18, 22, 36, 33]);
}

#[test]
fn lease_expiry_drops_the_claim() {
    let mut s = startd("", 1);
    s.tick(T0, readings(0, 0.0));
    let mut j = job("alice");
    j.insert_value("JobLeaseDuration", 1200i64);
    s.handle(request("slot1", "c1", j.clone()), T0).unwrap();
    s.handle(activate("slot1", "c1", j), T0).unwrap();
    s.handle(
        Event::KeepAlive {
            claim_id: "c1".into(),
        },
        T0 + 1000,
    )
    .unwrap();
    assert!(s.tick(T0 + 2200, readings(0, 0.0)).transitions.is_empty());
    let r = s.tick(T0 + 2201, readings(0, 0.0));
    assert_eq!(numbers(&r), vec![13, 18]);
    assert!(matches!(&r.transitions[0].cause, Cause::Timer(t) if t.contains("lease")));
}

#[test]
fn lease_without_job_lease_duration_is_alives_missed_times_alive_interval() {
    let mut s = startd("MAX_CLAIM_ALIVES_MISSED = 3\nALIVE_INTERVAL = 100", 1);
    s.tick(T0, readings(0, 0.0));
    s.handle(request("slot1", "c1", job("alice")), T0).unwrap();
    assert!(s.tick(T0 + 300, readings(0, 0.0)).transitions.is_empty());
    assert_eq!(
        numbers(&s.tick(T0 + 301, readings(0, 0.0))),
        vec![10, 22, 1]
    );
}

#[test]
fn claim_worklife_stops_new_jobs_and_releases_the_idle_claim() {
    let mut s = startd("CLAIM_WORKLIFE = 600", 1);
    s.tick(T0, readings(0, 0.0));
    s.handle(request("slot1", "c1", job("alice")), T0).unwrap();
    s.handle(activate("slot1", "c1", job("alice")), T0).unwrap();
    s.handle(
        Event::KeepAlive {
            claim_id: "c1".into(),
        },
        T0 + 700,
    )
    .unwrap();
    // The job in progress finishes; the claim is past its worklife, so it
    // takes no new job and is released.
    let r = s.handle(exited("slot1"), T0 + 700).unwrap();
    assert_eq!(numbers(&r), vec![12, 10, 22, 1]);
    assert!(matches!(&r.transitions[1].cause, Cause::Timer(t) if t.contains("CLAIM_WORKLIFE")));
}

#[test]
fn vacate_time_from_the_job_and_retirement_converted_into_vacate_time() {
    // The job asks for less than the machine grants: the job's wins.
    let mut s = startd(
        "WANT_SUSPEND = False\nPREEMPT = KeyboardIdle < 60\nMachineMaxVacateTime = 600",
        1,
    );
    s.tick(T0, readings(3600, 0.0));
    let mut j = job("alice");
    j.insert_value("JobMaxVacateTime", 30i64);
    run_job(&mut s, j, T0);
    s.tick(T0 + 10, readings(5, 0.0));
    assert_eq!(s.slots()[0].vacate_deadline, Some(T0 + 40));

    // The job asks for more: it gets it only out of retirement time left.
    let mut s = startd(
        "WANT_SUSPEND = False\nPREEMPT = KeyboardIdle < 60\nMachineMaxVacateTime = 60\nMaxJobRetirementTime = 1000",
        1,
    );
    s.tick(T0, readings(3600, 0.0));
    let mut j = job("alice");
    j.insert_value("JobMaxVacateTime", 300i64);
    run_job(&mut s, j, T0);
    s.tick(T0 + 10, readings(5, 0.0));
    assert_eq!(pair(&s, 0), "Claimed/Retiring");
    // Preempting starts 300 s before the retirement ends, with 300 s to vacate.
    assert!(s.tick(T0 + 699, readings(5, 0.0)).transitions.is_empty());
    assert_eq!(numbers(&s.tick(T0 + 700, readings(5, 0.0))), vec![18]);
    assert_eq!(s.slots()[0].vacate_deadline, Some(T0 + 1000));
}

#[test]
fn the_job_may_ask_for_less_retirement_never_more() {
    let mut s = startd("WANT_SUSPEND = False\nPREEMPT = KeyboardIdle < 60\nMaxJobRetirementTime = 600\nMachineMaxVacateTime = 0", 1);
    s.tick(T0, readings(3600, 0.0));
    let mut j = job("alice");
    j.insert_value("MaxJobRetirementTime", 100i64);
    run_job(&mut s, j, T0);
    s.tick(T0 + 10, readings(5, 0.0));
    assert_eq!(s.slots()[0].retirement_limit, Some(100));

    let mut s = startd(
        "WANT_SUSPEND = False\nPREEMPT = KeyboardIdle < 60\nMaxJobRetirementTime = 600",
        1,
    );
    s.tick(T0, readings(3600, 0.0));
    let mut j = job("alice");
    j.insert_value("MaxJobRetirementTime", 5000i64);
    run_job(&mut s, j, T0);
    s.tick(T0 + 10, readings(5, 0.0));
    assert_eq!(s.slots()[0].retirement_limit, Some(600));
}

#[test]
fn shutdown_peaceful_waits_fast_kills() {
    let mut s = startd("MaxJobRetirementTime = 10", 1);
    s.tick(T0, readings(0, 0.0));
    run_job(&mut s, job("alice"), T0);
    let r = s
        .handle(Event::Shutdown(ShutdownHow::Peaceful), T0 + 1)
        .unwrap();
    assert_eq!(numbers(&r), vec![13]);
    assert_eq!(s.slots()[0].retirement_limit, None);
    assert!(s
        .tick(T0 + 100_000, readings(0, 0.0))
        .transitions
        .is_empty());
    let r = s
        .handle(Event::Shutdown(ShutdownHow::Fast), T0 + 100_001)
        .unwrap();
    assert!(
        r.actions
            .iter()
            .any(|a| matches!(a, Action::KillJob { .. })),
        "{:?}",
        r.actions
    );
    let r = s.handle(exited("slot1"), T0 + 100_002).unwrap();
    assert!(
        r.actions
            .iter()
            .any(|a| matches!(a, Action::ShutdownComplete)),
        "{:?}",
        r.actions
    );
}

#[test]
fn every_transition_records_slot_states_number_and_cause() {
    let mut s = busy_desktop();
    let r = s.tick(T0 + 10, readings(5, 0.0));
    let t = &r.transitions[0];
    assert_eq!(
        t.to_string(),
        "slot1: Claimed/Busy -> Claimed/Suspended (transition 14): SUSPEND is true"
    );
    assert_eq!(t.at, T0 + 10);
}

#[test]
fn a_claimed_slot_judges_start_against_its_claims_job() {
    // START reads the job: locally it is false (=?= makes it so), but a
    // claimed slot evaluates it against the job it was claimed for, so the
    // claim stands (the Bologna long-running slots depend on this).
    let mut s = startd("START = TARGET.Owner =?= \"alice\"", 1);
    s.tick(T0, readings(0, 0.0));
    s.handle(request("slot1", "c1", job("alice")), T0).unwrap();
    assert!(s.tick(T0 + 5, readings(0, 0.0)).transitions.is_empty());
    assert_eq!(pair(&s, 0), "Claimed/Idle");
}

#[test]
fn slots_not_connected_to_the_keyboard_see_it_idle_since_the_startd_started_plus_a_boost() {
    let mut s = startd("SLOTS_CONNECTED_TO_KEYBOARD = 1\nSLOTS_CONNECTED_TO_CONSOLE = 1\nDISCONNECTED_KEYBOARD_IDLE_BOOST = 1200", 2);
    s.tick(T0 + 100, readings(5, 0.0));
    let env = classad::Env::at(T0 + 100);
    assert_eq!(
        s.slot_ad(0, T0 + 100)
            .eval_attr("KeyboardIdle", &env)
            .to_string(),
        "5"
    );
    assert_eq!(
        s.slot_ad(1, T0 + 100)
            .eval_attr("KeyboardIdle", &env)
            .to_string(),
        "1300"
    );
    assert_eq!(
        s.slot_ad(1, T0 + 100)
            .eval_attr("ConsoleIdle", &env)
            .to_string(),
        "1300"
    );
}

#[test]
fn running_jobs_attributes_and_per_slot_startd_attrs_are_published() {
    let mut s = startd(
        "STARTD_JOB_ATTRS = ImageSize, Owner\nSTARTD_ATTRS = Site\nSite = \"main\"\nSLOT1_STARTD_ATTRS = Site, Fast\nFast = True",
        2,
    );
    s.tick(T0, readings(0, 0.0));
    run_job(&mut s, job("alice"), T0);
    let env = classad::Env::at(T0);
    let a1 = s.slot_ad(0, T0);
    let a2 = s.slot_ad(1, T0);
    assert_eq!(a1.eval_attr("ImageSize", &env).to_string(), "1000");
    assert_eq!(a1.eval_attr("Owner", &env).to_string(), "\"alice\"");
    assert_eq!(a1.eval_attr("Fast", &env).to_string(), "true");
    assert_eq!(a2.eval_attr("Fast", &env).to_string(), "undefined");
    assert_eq!(a2.eval_attr("Site", &env).to_string(), "\"main\"");
    assert_eq!(a2.eval_attr("ImageSize", &env).to_string(), "undefined");
}

#[test]
fn the_slot_ad_says_what_draining_would_cost() {
    let mut s = startd("MaxJobRetirementTime = 3600\nMachineMaxVacateTime = 600", 2);
    s.tick(T0, readings(0, 0.0));
    run_job(&mut s, job("alice"), T0);
    s.tick(T0 + 1000, readings(0, 0.0));
    let env = classad::Env::at(T0 + 1000);
    let mut ads = s.published_ads(T0 + 1000);
    let running = ads.remove(0);
    let ad = ads.remove(0);
    let get = |n: &str| ad.eval_attr(n, &env).to_string();
    // Graceful: the job keeps the 2600 s of retirement left, then 600 s to
    // vacate; its 3600 s of work are lost if it does not finish.
    assert_eq!(
        get("ExpectedMachineGracefulDrainingCompletion"),
        (T0 + 1000 + 2600 + 600).to_string()
    );
    assert_eq!(get("ExpectedMachineGracefulDrainingBadput"), "3600");
    // Quick: only the vacate time; 1000 s of work lost.
    assert_eq!(
        get("ExpectedMachineQuickDrainingCompletion"),
        (T0 + 1000 + 600).to_string()
    );
    assert_eq!(get("ExpectedMachineQuickDrainingBadput"), "1000");
    // What the negotiator reads for early preemption: on the slot with the
    // job only.
    assert_eq!(get("RetirementTimeRemaining"), "undefined");
    assert_eq!(
        running
            .eval_attr("RetirementTimeRemaining", &env)
            .to_string(),
        "2600"
    );
    s.handle(
        Event::Drain {
            how: DrainHow::Quick,
            resume_on_completion: false,
            start_expr: None,
            reason: "defrag".into(),
        },
        T0 + 1001,
    )
    .unwrap();
    let ad = s.slot_ad(0, T0 + 1001);
    assert_eq!(
        ad.eval_attr("LastDrainStartTime", &env).to_string(),
        (T0 + 1001).to_string()
    );
    assert_eq!(ad.eval_attr("Draining", &env).to_string(), "true");
}

#[test]
fn backfill_starts_the_configured_program() {
    let mut s = startd(
        "ENABLE_BACKFILL = True\nSTART_BACKFILL = True\nBACKFILL_SYSTEM = BOINC\nBOINC_Executable = /usr/bin/boinc_client\nBOINC_Owner = nobody",
        1,
    );
    let r = s.tick(T0, readings(600, 0.0));
    let program = r.actions.iter().find_map(|a| match a {
        Action::StartBackfill { program, .. } => program.clone(),
        _ => None,
    });
    let program = program.expect("the backfill program");
    assert_eq!(program.system, "BOINC");
    assert_eq!(program.executable.as_deref(), Some("/usr/bin/boinc_client"));
    assert_eq!(program.owner.as_deref(), Some("nobody"));
}

#[test]
fn the_slot_ad_counts_time_in_each_state_and_activity() {
    let mut s = startd("", 1);
    s.tick(T0 + 50, readings(0, 0.0));
    run_job(&mut s, job("alice"), T0 + 100);
    let env = classad::Env::at(T0 + 400);
    let ad = s.slot_ad(0, T0 + 400);
    assert_eq!(ad.eval_attr("TotalTimeOwnerIdle", &env).to_string(), "50");
    assert_eq!(
        ad.eval_attr("TotalTimeUnclaimedIdle", &env).to_string(),
        "50"
    );
    assert_eq!(
        ad.eval_attr("TotalTimeClaimedBusy", &env).to_string(),
        "300"
    );
}

#[test]
fn a_submitted_jobs_default_requirements_match_the_slot() {
    // What condor_submit writes into every job (oracle case s01).
    let mut s = startd(
        "FILESYSTEM_DOMAIN = example.org\nUID_DOMAIN = example.org",
        1,
    );
    s.tick(T0, readings(0, 0.0));
    let job = ad("[ RequestDisk = 1; RequestMemory = 1; FileSystemDomain = \"elsewhere\"; \
        Requirements = (TARGET.Arch == \"X86_64\") && (TARGET.OpSys == \"LINUX\") && (TARGET.Disk >= RequestDisk) \
        && (TARGET.Memory >= RequestMemory) && ((TARGET.FileSystemDomain == MY.FileSystemDomain) || (TARGET.HasFileTransfer)) ]");
    let slot = s.slot_ad(0, T0);
    let env = classad::Env::at(T0);
    assert_eq!(
        classad::eval::eval_attr(&job, Some(&slot), "Requirements", &env).to_string(),
        "true"
    );
    assert_eq!(
        slot.eval_attr("UidDomain", &env).to_string(),
        "\"example.org\""
    );
}

#[test]
fn the_running_jobs_concurrency_limits_are_published() {
    let mut s = startd("", 1);
    s.tick(T0, readings(0, 0.0));
    let mut j = job("alice");
    j.insert_value("ConcurrencyLimits", "matlab,license:2");
    run_job(&mut s, j, T0);
    let env = classad::Env::at(T0);
    assert_eq!(
        s.slot_ad(0, T0)
            .eval_attr("ConcurrencyLimits", &env)
            .to_string(),
        "\"matlab,license:2\""
    );
    s.handle(exited("slot1"), T0 + 10).unwrap();
    assert_eq!(
        s.slot_ad(0, T0 + 10)
            .eval_attr("ConcurrencyLimits", &env)
            .to_string(),
        "undefined"
    );
}
