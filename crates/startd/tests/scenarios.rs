//! Whole policies from HTCondor's manual, driven through the engine with
//! the real configuration crate, asserting what the manual says happens.

mod common;

use common::*;
use startd::{Action, Readings};

fn with_job_load(idle: i64, total: f64, job: f64) -> Readings {
    Readings {
        keyboard_idle: idle,
        console_idle: idle,
        load_avg: total,
        condor_load: vec![job],
    }
}

/// The classic desktop policy (`use POLICY : Desktop`), as the manual
/// tells it: the owner comes back, the job is suspended; the owner leaves,
/// it continues; the owner stays, after MaxSuspendTime it is vacated, then
/// killed when its vacate time is up.
#[test]
fn desktop_owner_returns_suspend_continue_preempt_vacate_kill() {
    let mut s = startd("use POLICY : Desktop", 1);
    // Keyboard idle for 20 minutes: willing to run jobs.
    assert_eq!(numbers(&s.tick(T0, readings(1200, 0.0))), vec![1]);
    run_job(&mut s, job("alice"), T0);

    // The owner types: the (small, vanilla) job is suspended at once.
    let r = s.tick(T0 + 100, with_job_load(5, 1.0, 1.0));
    assert_eq!(numbers(&r), vec![14]);
    assert!(r
        .actions
        .iter()
        .any(|a| matches!(a, Action::SuspendJob { .. })));

    // Five quiet minutes later (ContinueIdleTime), it continues.
    assert!(s
        .tick(T0 + 300, with_job_load(200, 0.0, 0.0))
        .transitions
        .is_empty());
    let r = s.tick(T0 + 402, with_job_load(302, 0.0, 0.0));
    assert_eq!(numbers(&r), vec![15]);

    // The owner comes back and stays: suspended again...
    assert_eq!(
        numbers(&s.tick(T0 + 500, with_job_load(2, 1.0, 1.0))),
        vec![14]
    );
    // ... and after MaxSuspendTime (10 minutes) suspended, evicted: no
    // retirement time (MaxJobRetirementTime = 0), so straight on to
    // vacating the vanilla job.
    assert!(s
        .tick(T0 + 1100, with_job_load(2, 0.0, 0.0))
        .transitions
        .is_empty());
    let r = s.tick(T0 + 1101, with_job_load(2, 0.0, 0.0));
    assert_eq!(numbers(&r), vec![16, 18]);
    assert!(r
        .actions
        .iter()
        .any(|a| matches!(a, Action::VacateJob { .. })));
    assert_eq!(pair(&s, 0), "Preempting/Vacating");

    // KILL is False in the desktop policy, so the vacate time
    // (MachineMaxVacateTime, 10 minutes) decides when it is killed.
    assert!(s
        .tick(T0 + 1700, with_job_load(2, 0.0, 0.0))
        .transitions
        .is_empty());
    let r = s.tick(T0 + 1701, with_job_load(2, 0.0, 0.0));
    assert_eq!(numbers(&r), vec![21]);
    assert!(r
        .actions
        .iter()
        .any(|a| matches!(a, Action::KillJob { .. })));

    // The job is gone; the owner is still typing, so the slot is the
    // owner's.
    let r = s.handle(exited("slot1"), T0 + 1705).unwrap();
    assert_eq!(numbers(&r), vec![25]);
    assert!(s.tick(T0 + 1710, readings(2, 0.0)).transitions.is_empty());
    assert_eq!(pair(&s, 0), "Owner/Idle");
    // Fifteen idle minutes later the machine offers itself again.
    assert_eq!(numbers(&s.tick(T0 + 2700, readings(950, 0.0))), vec![1]);
}

/// With the desktop policy a CPU kept busy by the owner (non-HTCondor load
/// of HighLoad or more) for two minutes suspends a job that has run for
/// more than 90 seconds (the CpuBusy latch measures the two minutes).
#[test]
fn desktop_busy_cpu_suspends_after_two_minutes() {
    let mut s = startd("use POLICY : Desktop", 1);
    s.tick(T0, readings(1200, 0.0));
    run_job(&mut s, job("alice"), T0);
    // The job's own load does not count.
    assert!(s
        .tick(T0 + 60, with_job_load(1200, 1.0, 1.0))
        .transitions
        .is_empty());
    // The owner's program adds 0.6 of load from T0+100.
    assert!(s
        .tick(T0 + 100, with_job_load(1200, 1.6, 1.0))
        .transitions
        .is_empty());
    assert!(s
        .tick(T0 + 220, with_job_load(1200, 1.6, 1.0))
        .transitions
        .is_empty());
    let r = s.tick(T0 + 221, with_job_load(1200, 1.6, 1.0));
    assert_eq!(numbers(&r), vec![14]);
}

/// The machine attributes the policies read, as the slot publishes them.
#[test]
fn the_slot_ad_carries_what_policies_read() {
    let mut s = startd(
        "use POLICY : Desktop\nSTARTD_ATTRS = $(STARTD_ATTRS) Site\nSite = \"INFN\"",
        2,
    );
    s.tick(T0, readings(1200, 0.5));
    let ad = s.slot_ad(1, T0);
    let env = classad::Env::at(T0);
    let get = |n: &str| ad.eval_attr(n, &env).to_string();
    assert_eq!(get("Name"), "\"slot2@exec.example.org\"");
    assert_eq!(get("SlotID"), "2");
    assert_eq!(get("VirtualMachineID"), "2");
    assert_eq!(get("State"), "\"Unclaimed\"");
    assert_eq!(get("Activity"), "\"Idle\"");
    assert_eq!(get("KeyboardIdle"), "1200");
    assert_eq!(get("TotalLoadAvg"), "5.000000000000000E-01");
    assert_eq!(get("Site"), "\"INFN\"");
    assert_eq!(get("Requirements"), "true");
    assert_eq!(get("CpuBusyValue"), "0");
    // 2023-11-14 22:13:20 UTC was a Tuesday.
    assert_eq!(get("ClockDay"), "2");
    assert_eq!(get("ClockMin"), "1333");
    // The policy is in the ad under its own names.
    assert_eq!(get("IS_OWNER"), "false");
}
