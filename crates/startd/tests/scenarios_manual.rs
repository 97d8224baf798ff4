//! The manual's example policies, driven through the engine: each test
//! loads the example files of `examples/config/` with the real
//! configuration crate (an admin's root file that includes them by
//! absolute path, after their base), runs a day in the life of the
//! machine, and asserts what the manual says happens
//! (`policy-configuration.rst`, "Examples of Policy Configuration";
//! `startd-policy-v6.8.txt`, section 3.5.10).

mod common;

use classad::ClassAd;
use common::examples::*;
use common::*;
use startd::Event;

/// A vanilla job of `owner` (cluster `cluster`), with more attributes.
fn vanilla(owner: &str, cluster: i64, more: &str) -> ClassAd {
    let more = if more.is_empty() {
        String::new()
    } else {
        format!("; {more}")
    };
    ad(&format!(
        "[ ClusterId = {cluster}; ProcId = 0; Owner = \"{owner}\"; JobUniverse = 5; \
           ImageSize = 1000; RequestCpus = 1; RequestMemory = 512{more} ]"
    ))
}

fn release(slot: &str, claim: &str) -> Event {
    Event::ReleaseClaim {
        slot: slot.into(),
        claim_id: claim.into(),
    }
}

// ===========================================================================
// Test-job policy (test-job.conf)

/// policy-configuration.rst, "Test-job Policy Example" (and v6.8
/// 3.5.10.2): "Suppose we want the machine to behave normally, except if
/// user coltrane submits a job. In that case, we want that job to start
/// regardless of what is happening on the machine. We do not want the job
/// suspended, vacated or killed."
fn coltrane_runs_whatever_the_machine_does(base: &str) {
    let mut s = machine_at(&[base, "test-job.conf"], 2, 0, T0);
    s.tick(T0, away(1200, &[]));
    assert_eq!(pair_of(&s, "slot1"), "Unclaimed/Idle", "{base}");

    // "behave normally": alice's job starts while nobody is at the
    // machine, and is suspended when the owner comes back.
    let alice = vanilla("alice", 1, "");
    claim_and_run(&mut s, "slot2", "c-alice", &alice, T0).unwrap();
    let r = poll(&mut s, T0 + 100, typing(5, 1.0, &[0.0, 1.0]));
    assert_eq!(of(&r, "slot2"), [14], "{base}: {:?}", r.transitions);

    // With the owner typing and compiling, nobody else's job starts ...
    let bob = vanilla("bob", 2, "");
    assert!(!accepts(&s, "slot1", &bob, T0 + 110), "{base}");
    // ... but coltrane's does, at once.
    let coltrane = vanilla("coltrane", 3, "");
    let r = claim_and_run(&mut s, "slot1", "c-coltrane", &coltrane, T0 + 110)
        .unwrap_or_else(|e| panic!("{base}: coltrane's job refused: {e}"));
    assert_eq!(of(&r, "slot1"), [5, 11], "{base}: {:?}", r.transitions);

    // An hour of the owner at the keyboard: coltrane's job is never
    // suspended, vacated or killed; alice's goes the normal way
    // (suspended, evicted after MaxSuspendTime, killed).
    let mut alices = Vec::new();
    for t in (T0 + 120..T0 + 3720).step_by(60) {
        let r = poll(&mut s, t, typing(5, 1.0, &[1.0, 0.0]));
        assert!(of(&r, "slot1").is_empty(), "{base}: {:?}", r.transitions);
        alices.extend(of(&r, "slot2"));
    }
    assert_eq!(pair_of(&s, "slot1"), "Claimed/Busy", "{base}");
    assert_eq!(alices, [16, 18, 21], "{base}");
}

#[test]
fn test_job_over_the_v68_default_policy() {
    coltrane_runs_whatever_the_machine_does("v68-default.conf");
}

#[test]
fn test_job_over_todays_desktop_policy() {
    coltrane_runs_whatever_the_machine_does("use POLICY : Desktop");
}

/// The same five lines over today's default policy ("Preemption is
/// disabled as a default. Always desire to start jobs."): there the normal
/// policy already starts everything and disturbs nothing, so coltrane's
/// jobs and everybody else's run alike.
#[test]
fn test_job_over_todays_default_policy() {
    let mut s = machine_at(&["default.conf", "test-job.conf"], 2, 0, T0);
    s.tick(T0, typing(5, 1.0, &[]));
    let coltrane = vanilla("coltrane", 1, "");
    let alice = vanilla("alice", 2, "");
    claim_and_run(&mut s, "slot1", "c1", &coltrane, T0).unwrap();
    claim_and_run(&mut s, "slot2", "c2", &alice, T0).unwrap();
    for t in (T0 + 60..T0 + 3600).step_by(60) {
        let r = poll(&mut s, t, typing(5, 1.0, &[1.0, 1.0]));
        assert!(r.transitions.is_empty(), "{:?}", r.transitions);
    }
}

// ===========================================================================
// Time-of-day policies (time-of-day.conf, v68-time-of-day.conf)

/// A machine in Bologna (UTC+1 in November): epoch seconds of local time
/// on a day of November 2023 (the 14th was a Tuesday).
fn bologna(day: i64, hour: i64, minute: i64) -> i64 {
    utc(2023, 11, day, hour, minute) - 3600
}

/// policy-configuration.rst, "Time of Day Policy": "assume regular work
/// hours at your site are from 8:00am until 5:00pm, Monday through
/// Friday ... To force HTCondor jobs to stay off of your machines during
/// work hours: START = $(AfterHours)". ClockMin and ClockDay are the
/// machine's local time.
#[test]
fn time_of_day_starts_jobs_only_after_hours() {
    assert_eq!(utc(2023, 11, 14, 22, 13) + 20, T0);
    let start = bologna(14, 21, 0);
    let mut s = machine_at(&["default.conf", "time-of-day.conf"], 1, 3600, start);
    let job = vanilla("alice", 1, "");
    for (day, hour, minute, starts) in [
        (14, 21, 0, true),   // Tuesday evening
        (15, 7, 59, true),   // Wednesday, just before work
        (15, 8, 0, false),   // 8:00am
        (15, 12, 0, false),  // noon
        (15, 16, 59, false), // just before 5:00pm
        (15, 17, 0, true),   // 5:00pm
        (17, 16, 30, false), // Friday afternoon
        (18, 12, 0, true),   // Saturday noon
        (19, 10, 0, true),   // Sunday morning
        (20, 7, 0, true),    // Monday 7:00am
        (20, 8, 0, false),   // Monday 8:00am
    ] {
        let t = bologna(day, hour, minute);
        s.tick(t, away(3600, &[]));
        assert_eq!(
            accepts(&s, "slot1", &job, t),
            starts,
            "November {day}, {hour:02}:{minute:02} local (ClockMin {}, ClockDay {})",
            published(&s, 0, "ClockMin", t),
            published(&s, 0, "ClockDay", t)
        );
    }
    let t = bologna(15, 8, 0);
    assert_eq!(published(&s, 0, "ClockMin", t), "480");
    assert_eq!(published(&s, 0, "ClockDay", t), "3");
}

/// The same policy only keeps jobs from starting: "This MachineBusy macro
/// is convenient if other than the default SUSPEND and PREEMPT expressions
/// are used." With the default ones, a job that started before 8:00 is
/// not disturbed; once it is done, the claim starts no other job during
/// work hours (START is false: transition 10).
#[test]
fn time_of_day_lets_a_running_job_finish_then_stays_off() {
    let start = bologna(21, 7, 0);
    let mut s = machine_at(&["default.conf", "time-of-day.conf"], 1, 3600, start);
    s.tick(start, away(3600, &[]));
    let job = vanilla("alice", 1, "");
    claim_and_run(&mut s, "slot1", "c1", &job, bologna(21, 7, 30)).unwrap();
    let r = poll_until(&mut s, bologna(21, 7, 35), bologna(21, 12, 30), 300, |_| {
        away(3600, &[1.0])
    });
    assert!(r.transitions.is_empty(), "{:?}", r.transitions);
    let r = s.handle(exited("slot1"), bologna(21, 12, 30)).unwrap();
    assert_eq!(of(&r, "slot1"), [12, 10, 22, 1], "{:?}", r.transitions);
    assert!(!accepts(&s, "slot1", &job, bologna(21, 12, 30)));
}

/// The MachineBusy of time-of-day.conf ("Consider the machine busy during
/// work hours, or if the keyboard or CPU are busy"), used by a SUSPEND of
/// the site's own, as the manual suggests: a job running at 8:00 is
/// suspended, and resumes at 5:00pm.
#[test]
fn time_of_day_machine_busy_in_a_sites_own_suspend() {
    let start = bologna(14, 21, 0);
    let own = "WANT_SUSPEND = True\nSUSPEND = $(MachineBusy)\nCONTINUE = ($(MachineBusy)) == False";
    let mut s = machine_at(&["default.conf", "time-of-day.conf", own], 1, 3600, start);
    s.tick(start, away(3600, &[]));
    claim_and_run(
        &mut s,
        "slot1",
        "c1",
        &vanilla("alice", 1, ""),
        bologna(14, 22, 0),
    )
    .unwrap();
    let r = poll_until(&mut s, bologna(14, 22, 5), bologna(15, 8, 0), 60, |_| {
        away(3600, &[1.0])
    });
    assert!(r.transitions.is_empty(), "{:?}", r.transitions);
    let r = poll(&mut s, bologna(15, 8, 0), away(3600, &[1.0]));
    assert_eq!(of(&r, "slot1"), [14]);
    assert!(asks(&r, "slot1", "suspend"));
    let r = poll_until(&mut s, bologna(15, 8, 1), bologna(15, 17, 0), 60, |_| {
        away(3600, &[0.0])
    });
    assert!(r.transitions.is_empty(), "{:?}", r.transitions);
    let r = poll(&mut s, bologna(15, 17, 0), away(3600, &[0.0]));
    assert_eq!(of(&r, "slot1"), [15]);
    assert!(asks(&r, "slot1", "continue"));
}

/// startd-policy-v6.8.txt 3.5.10.3: "START = $(AfterHours) && $(CPUIdle)
/// && KeyboardIdle > $(StartIdleTime)" ... "you might also want to avoid
/// suspending jobs during work hours, so that in the morning, if a job is
/// running, it will be immediately preempted, instead of being suspended
/// for some length of time: WANT_SUSPEND = $(AfterHours)".
#[test]
fn v68_time_of_day_suspends_at_night_and_preempts_in_the_morning() {
    let start = bologna(14, 21, 0);
    let mut s = machine_at(
        &["v68-default.conf", "v68-time-of-day.conf"],
        1,
        3600,
        start,
    );
    s.tick(start, away(3600, &[]));
    let job = vanilla("alice", 1, "");
    // Only after hours, and only when the machine is idle.
    assert!(accepts(&s, "slot1", &job, start));
    s.tick(bologna(14, 21, 30), typing(5, 0.0, &[]));
    assert!(!accepts(&s, "slot1", &job, bologna(14, 21, 30)));
    s.tick(bologna(15, 10, 0), away(3600, &[]));
    assert!(!accepts(&s, "slot1", &job, bologna(15, 10, 0)));

    let mut s = machine_at(
        &["v68-default.conf", "v68-time-of-day.conf"],
        1,
        3600,
        start,
    );
    s.tick(start, away(3600, &[]));
    claim_and_run(&mut s, "slot1", "c1", &job, bologna(14, 22, 0)).unwrap();
    let r = poll_until(&mut s, bologna(14, 22, 5), bologna(14, 23, 0), 300, |_| {
        away(3600, &[1.0])
    });
    assert!(r.transitions.is_empty(), "{:?}", r.transitions);
    // At night the owner drops by: the job is suspended, as the default
    // policy does, and continues once they have left.
    let r = poll(&mut s, bologna(14, 23, 0), typing(5, 0.0, &[1.0]));
    assert_eq!(of(&r, "slot1"), [14]);
    let r = poll(&mut s, bologna(14, 23, 10), away(301, &[0.0]));
    assert_eq!(of(&r, "slot1"), [15]);
    // In the morning the owner comes in: the job is not suspended but
    // preempted at once (no retirement time), and vacated.
    let arrive = bologna(15, 8, 30);
    let r = poll_until(&mut s, bologna(14, 23, 15), arrive, 300, |t| {
        away(t - bologna(14, 23, 5), &[1.0])
    });
    assert!(r.transitions.is_empty(), "{:?}", r.transitions);
    let r = poll(&mut s, arrive, typing(5, 0.0, &[1.0]));
    assert_eq!(of(&r, "slot1"), [13, 18], "{:?}", r.transitions);
    assert!(asks(&r, "slot1", "vacate"));
    assert!(!asks(&r, "slot1", "suspend"));
    assert_eq!(pair_of(&s, "slot1"), "Preempting/Vacating");
    // KILL: "$(ActivityTimer) > $(MaxVacateTime)" (10 minutes).
    let r = poll(&mut s, arrive + 599, typing(5, 0.0, &[1.0]));
    assert!(r.transitions.is_empty(), "{:?}", r.transitions);
    let r = poll(&mut s, arrive + 601, typing(5, 0.0, &[1.0]));
    assert_eq!(of(&r, "slot1"), [21]);
    assert!(asks(&r, "slot1", "kill"));
}

// ===========================================================================
// Desktop / non-desktop (desktop.conf, v68-desktop.conf, desktop-local.conf)

/// policy-configuration.rst, "Desktop/Non-Desktop Policy" (and v6.8
/// 3.5.10.4): "you might not want keyboard activity to have any effect on
/// the dedicated machines ... Desktop machines, on the other hand, should
/// do whatever is necessary to remain responsive to the user." With
/// `IsDesktop = True` in a desktop's local configuration; "In all other
/// cases, the default policy described above will ignore keyboard
/// activity."
fn desktop_and_cluster_node(base: &str) {
    let job = vanilla("alice", 1, "");

    // A desktop.
    let mut d = machine(&[base, "desktop-local.conf"], T0);
    d.tick(T0, typing(5, 0.0, &[]));
    assert_eq!(published(&d, 0, "IsDesktop", T0), "true", "{base}");
    // "the user is not active (if a desktop)": no job while they type.
    assert!(!accepts(&d, "slot1", &job, T0), "{base}");
    let t = T0 + 1000;
    d.tick(t, away(950, &[]));
    claim_and_run(&mut d, "slot1", "c1", &job, t).unwrap();
    // "suspend if this is a desktop and the user is active"
    let r = poll(&mut d, t + 100, typing(3, 0.0, &[1.0]));
    assert_eq!(of(&r, "slot1"), [14], "{base}: {:?}", r.transitions);
    // "Continue jobs if: the CPU is idle, AND we've been suspended more
    // than 5 minutes AND the keyboard has been idle for long enough"
    let r = poll(&mut d, t + 300, away(200, &[0.0]));
    assert!(r.transitions.is_empty(), "{base}: {:?}", r.transitions);
    let r = poll(&mut d, t + 401, away(301, &[0.0]));
    assert_eq!(of(&r, "slot1"), [15], "{base}: {:?}", r.transitions);

    // A cluster node: the same policy, no local line.
    let mut n = machine(&[base], T0);
    n.tick(T0, typing(5, 0.0, &[]));
    assert_eq!(published(&n, 0, "IsDesktop", T0), "undefined", "{base}");
    // Someone logged in to debug: jobs start all the same ...
    claim_and_run(&mut n, "slot1", "c1", &job, T0).unwrap();
    // ... and an hour of typing does not disturb them.
    for k in 1..=60 {
        let r = poll(&mut n, T0 + 60 * k, typing(2, 0.0, &[1.0]));
        assert!(r.transitions.is_empty(), "{base}: {:?}", r.transitions);
    }
    // "Suspend jobs if: The CPU has been busy for more than 2 minutes,
    // AND the job has been running for more than 90 seconds": a program
    // of the admin's loads the CPU (0.6) from T0+3700.
    let busy = T0 + 3700;
    for dt in [0, 60, 120] {
        let r = poll(&mut n, busy + dt, typing(2, 0.6, &[1.0]));
        assert!(r.transitions.is_empty(), "{base}: {:?}", r.transitions);
    }
    let r = poll(&mut n, busy + 121, typing(2, 0.6, &[1.0]));
    assert_eq!(of(&r, "slot1"), [14], "{base}: {:?}", r.transitions);
    // The CPU is idle again; after 5 minutes suspended the job continues,
    // keyboard or no keyboard.
    let r = poll(&mut n, busy + 300, typing(2, 0.0, &[0.0]));
    assert!(r.transitions.is_empty(), "{base}: {:?}", r.transitions);
    let r = poll(&mut n, busy + 422, typing(2, 0.0, &[0.0]));
    assert_eq!(of(&r, "slot1"), [15], "{base}: {:?}", r.transitions);
}

#[test]
fn desktop_suspends_for_the_keyboard_a_cluster_node_does_not() {
    desktop_and_cluster_node("desktop.conf");
}

#[test]
fn v68_desktop_suspends_for_the_keyboard_a_cluster_node_does_not() {
    desktop_and_cluster_node("v68-desktop.conf");
}

// ===========================================================================
// Disabling preemption (disable-preemption.conf)

/// The file's first measure alone (as the manual first presents it): the
/// two days of retirement, pasted into the root file over the v6.8
/// default policy.
fn retirement_only() -> String {
    example_up_to(
        "disable-preemption.conf",
        "# No preemption because of machine activity.",
    )
}

/// v6.8 3.5.10.5: "When we want to kick a job off, let it run
/// uninterrupted for up to 2 days before forcing it to vacate.
/// MAXJOBRETIREMENTTIME = $(HOUR) * 24 * 2". Here the default policy
/// evicts a job suspended for longer than MaxSuspendTime (PREEMPT): it
/// retires instead, "Time spent in suspension does not count against the
/// job" (policy-configuration.rst, MAXJOBRETIREMENTTIME), and "a preempted
/// job will be soft-killed X seconds before the end of its retirement
/// time, so that hard-killing of the job will not happen until the end of
/// the retirement time".
#[test]
fn disable_preemption_a_preempt_eviction_waits_two_days() {
    let first = retirement_only();
    assert!(first.contains("MAXJOBRETIREMENTTIME = $(HOUR) * 24 * 2"));
    let mut s = machine(&["v68-default.conf", &first], T0);
    s.tick(T0, away(1200, &[]));
    claim_and_run(&mut s, "slot1", "c1", &vanilla("alice", 1, ""), T0).unwrap();
    // The owner comes back after 1000 s of run time: suspended.
    let r = poll(&mut s, T0 + 1000, typing(5, 0.0, &[1.0]));
    assert_eq!(of(&r, "slot1"), [14]);
    // Still there after MaxSuspendTime: PREEMPT. The job retires (16) and,
    // the owner being still at the keyboard, stays suspended (20); it is
    // not vacated.
    let r = poll(&mut s, T0 + 1600, typing(5, 0.0, &[0.0]));
    assert!(r.transitions.is_empty(), "{:?}", r.transitions);
    let r = poll(&mut s, T0 + 1601, typing(5, 0.0, &[0.0]));
    assert_eq!(of(&r, "slot1"), [16, 20], "{:?}", r.transitions);
    assert!(!asks(&r, "slot1", "vacate"));
    // The owner leaves: the job runs on in retirement.
    let r = poll(&mut s, T0 + 2001, away(301, &[0.0]));
    assert_eq!(of(&r, "slot1"), [16], "{:?}", r.transitions);
    assert_eq!(pair_of(&s, "slot1"), "Claimed/Retiring");
    // 1000 s ran before the suspension; the job is soft-killed when its
    // run time reaches two days less the 10-minute vacate time, at
    // T0 + 2001 + (172800 - 600 - 1000).
    let soft = T0 + 2001 + 172_800 - 600 - 1000;
    let r = poll_until(&mut s, T0 + 2100, soft, 300, |t| {
        away(t - T0 - 1700, &[1.0])
    });
    assert!(r.transitions.is_empty(), "{:?}", r.transitions);
    let r = poll(&mut s, soft - 1, away(soft - T0, &[1.0]));
    assert!(r.transitions.is_empty(), "{:?}", r.transitions);
    let r = poll(&mut s, soft, away(soft - T0, &[1.0]));
    assert_eq!(of(&r, "slot1"), [18], "{:?}", r.transitions);
    assert!(asks(&r, "slot1", "vacate"));
    // Hard-killed at the end of the retirement time, not before.
    let r = poll(&mut s, soft + 599, away(soft - T0, &[1.0]));
    assert!(r.transitions.is_empty(), "{:?}", r.transitions);
    let r = poll(&mut s, soft + 600, away(soft - T0, &[1.0]));
    assert_eq!(of(&r, "slot1"), [21], "{:?}", r.transitions);
    assert!(asks(&r, "slot1", "kill"));
}

/// v6.8 3.5.10.5: "the use of MAXJOBRETIREMENTTIME limits the killing of
/// jobs, but it does not prevent the preemption of resource claims ... it
/// is ... simply a way of forcing preempting claims to wait until an
/// existing job finishes or runs out of time." A machine that ranks its
/// owner's jobs first (the RANK line is this test's) accepts boss's claim
/// on a busy slot; alice's job retires, finishes on its own a day later,
/// and only then does boss's claim get the slot.
#[test]
fn disable_preemption_a_rank_eviction_waits_for_the_job() {
    let first = retirement_only();
    let mut s = machine(
        &[
            "v68-default.conf",
            &first,
            "RANK = TARGET.Owner == \"boss\"",
        ],
        T0,
    );
    s.tick(T0, away(1200, &[]));
    claim_and_run(&mut s, "slot1", "c-alice", &vanilla("alice", 1, ""), T0).unwrap();
    let boss = vanilla("boss", 2, "");
    let r = s
        .handle(request("slot1", "c-boss", boss.clone()), T0 + 3600)
        .unwrap();
    assert_eq!(of(&r, "slot1"), [13]);
    assert!(!asks(&r, "slot1", "vacate") && !asks(&r, "slot1", "kill"));
    let r = poll_until(&mut s, T0 + 3660, T0 + 108_000, 300, |t| {
        away(t - T0 + 1200, &[1.0])
    });
    assert!(r.transitions.is_empty(), "{:?}", r.transitions);
    assert_eq!(pair_of(&s, "slot1"), "Claimed/Retiring");
    let r = s.handle(exited("slot1"), T0 + 108_000).unwrap();
    assert_eq!(of(&r, "slot1"), [18, 23], "{:?}", r.transitions);
    assert!(r.actions.iter().any(|a| matches!(a,
        startd::Action::ClaimEnded { claim_id, .. } if claim_id == "c-alice")));
    let r = s
        .handle(activate("slot1", "c-boss", boss), T0 + 108_000)
        .unwrap();
    assert_eq!(of(&r, "slot1"), [11]);
}

/// The whole file over the v6.8 default policy: "#Disable preemption by
/// machine activity. PREEMPT = False" and "#Disable preemption by machine
/// RANK by ranking all jobs equally. RANK = 0". The owner's return still
/// suspends a job (suspension is not preemption), but however long they
/// stay, the job is not evicted; and no other job's claim displaces it.
#[test]
fn disable_preemption_no_claim_is_preempted() {
    let mut s = machine(&["v68-default.conf", "disable-preemption.conf"], T0);
    s.tick(T0, away(1200, &[]));
    claim_and_run(&mut s, "slot1", "c-alice", &vanilla("alice", 1, ""), T0).unwrap();
    let e = s
        .handle(request("slot1", "c-bob", vanilla("bob", 2, "")), T0 + 60)
        .unwrap_err();
    assert!(e.reason.contains("RANK"), "{e}");
    let r = poll(&mut s, T0 + 100, typing(5, 0.0, &[1.0]));
    assert_eq!(of(&r, "slot1"), [14]);
    for k in 1..=60 {
        let r = poll(&mut s, T0 + 100 + 60 * k, typing(5, 0.0, &[0.0]));
        assert!(r.transitions.is_empty(), "{:?}", r.transitions);
    }
    let r = poll(&mut s, T0 + 4000, away(301, &[0.0]));
    assert_eq!(of(&r, "slot1"), [15]);
}

// ===========================================================================
// Job suspension with two slots (two-slot-suspension.conf, v6.8) and with
// suspendable slot pairs (suspendable-slots.conf)

/// v6.8 3.5.10.6: "The second virtual machine (called VM2 in the example)
/// is set to run jobs whenever it can, and suspend these jobs when VM1 is
/// utilized." "Only start jobs on VM1 if the job is marked as a
/// high-priority job"; "Only suspend jobs on VM2. Suspend if there is
/// keyboard activity or if a job starts on VM1"; CONTINUE "(KeyboardIdle >
/// $(ContinueIdleTime)) && (vm1_Activity != "Busy")".
#[test]
fn two_slot_suspension_v68_vm2_yields_to_vm1() {
    let mut s = machine(&["v68-default.conf", "two-slot-suspension.conf"], T0);
    assert_eq!(s.slots().len(), 2, "NUM_CPUS = 2 on a one-CPU machine");
    s.tick(T0, away(1200, &[]));
    let background = vanilla("alice", 1, "");
    let urgent = vanilla("boss", 2, "IsHighPrioJob = True");
    // VM1 takes only high-priority jobs; VM2 anything, while VM1 is idle.
    assert!(!accepts(&s, "slot1", &background, T0));
    claim_and_run(&mut s, "slot2", "c-bg", &background, T0).unwrap();
    assert_eq!(published(&s, 1, "vm1_Activity", T0), "\"Idle\"");
    // The owner types: VM2's job is suspended; they leave, it continues
    // after ContinueIdleTime.
    let r = poll(&mut s, T0 + 100, typing(5, 0.0, &[0.0, 1.0]));
    assert_eq!(of(&r, "slot2"), [14]);
    let r = poll(&mut s, T0 + 300, away(100, &[0.0, 0.0]));
    assert!(r.transitions.is_empty(), "{:?}", r.transitions);
    let r = poll(&mut s, T0 + 501, away(301, &[0.0, 0.0]));
    assert_eq!(of(&r, "slot2"), [15]);
    // VM1 gets a high-priority job: VM2's job is suspended.
    let r = claim_and_run(&mut s, "slot1", "c-hp", &urgent, T0 + 600)
        .expect("VM1 runs the high-priority job");
    assert_eq!(of(&r, "slot1"), [5, 11], "{:?}", r.transitions);
    assert_eq!(published(&s, 1, "vm1_Activity", T0 + 600), "\"Busy\"");
    let r = poll(&mut s, T0 + 601, away(401, &[1.0, 1.0]));
    assert_eq!(of(&r, "slot2"), [14]);
    assert!(of(&r, "slot1").is_empty());
    // The owner types while VM1 runs: VM1's job is not suspended.
    let r = poll(&mut s, T0 + 650, typing(5, 0.0, &[1.0, 0.0]));
    assert!(r.transitions.is_empty(), "{:?}", r.transitions);
    // VM1's job is done and the keyboard quiet: VM2's job resumes.
    let r = s.handle(exited("slot1"), T0 + 900).unwrap();
    assert_eq!(of(&r, "slot1"), [12]);
    let r = poll(&mut s, T0 + 960, away(310, &[0.0, 0.0]));
    assert_eq!(of(&r, "slot2"), [15], "{:?}", r.transitions);
}

/// The keyboard's part of the 6.8 two-slot story: VM2's background job,
/// suspended by the owner's keyboard and resumed after ContinueIdleTime,
/// with VM1 refusing ordinary jobs and each slot publishing its Activity
/// to the other (vm1_Activity, vm2_Activity).
#[test]
fn two_slot_suspension_v68_vm2_yields_to_the_keyboard() {
    let mut s = machine(&["v68-default.conf", "two-slot-suspension.conf"], T0);
    assert_eq!(s.slots().len(), 2);
    s.tick(T0, away(1200, &[]));
    let background = vanilla("alice", 1, "");
    assert!(!accepts(&s, "slot1", &background, T0));
    assert!(accepts(
        &s,
        "slot1",
        &vanilla("boss", 2, "IsHighPrioJob = True"),
        T0
    ));
    claim_and_run(&mut s, "slot2", "c-bg", &background, T0).unwrap();
    assert_eq!(published(&s, 1, "vm1_Activity", T0), "\"Idle\"");
    assert_eq!(published(&s, 0, "vm2_Activity", T0), "\"Busy\"");
    let r = poll(&mut s, T0 + 100, typing(5, 0.0, &[0.0, 1.0]));
    assert_eq!(of(&r, "slot2"), [14]);
    let r = poll(&mut s, T0 + 300, away(100, &[0.0, 0.0]));
    assert!(r.transitions.is_empty(), "{:?}", r.transitions);
    let r = poll(&mut s, T0 + 501, away(301, &[0.0, 0.0]));
    assert_eq!(of(&r, "slot2"), [15]);
}

/// policy-configuration.rst, "Job Suspension": "If the currently running
/// job is one that identifies itself as suspendable, and the potentially
/// running job identifies itself as nonsuspendable, the currently running
/// job is suspended, in favor of running the nonsuspendable one" ... "If
/// the currently running job is one that identifies itself as
/// nonsuspendable, and the potentially running job identifies itself as
/// suspendable, the currently running job continues running." "A job that
/// identifies itself as suspendable will be suspended, which means it is
/// frozen in place, and will later be unfrozen when the preempting job is
/// finished." Two cores: slots 1-2 nonsuspendable, 3-4 their suspendable
/// partners.
#[test]
fn suspendable_slot_yields_to_its_partner() {
    let mut s = machine_at(&["suspendable-slots.conf"], 2, 0, T0);
    assert_eq!(s.slots().len(), 4, "NUM_CPUS = $(DETECTED_CORES)*2");
    s.tick(T0, away(1200, &[]));
    let alice = vanilla("alice", 1, "");
    let carol = vanilla("carol", 2, "IsSuspendableJob = True");
    assert_eq!(published(&s, 2, "IsSuspendableSlot", T0), "true");
    assert_eq!(published(&s, 0, "IsSuspendableSlot", T0), "false");
    // Each kind of job on its own kind of slot.
    assert!(!accepts(&s, "slot1", &carol, T0));
    assert!(!accepts(&s, "slot3", &alice, T0));

    // Case 4: a nonsuspendable job runs on slot 1; a suspendable job does
    // not start on its partner, slot 3 (slot 4, whose partner is idle,
    // would take it).
    claim_and_run(&mut s, "slot1", "c-alice", &alice, T0).unwrap();
    assert_eq!(
        published(&s, 2, "NonSuspendableSlotState", T0),
        "\"Claimed\""
    );
    assert!(!accepts(&s, "slot3", &carol, T0 + 10));
    assert!(accepts(&s, "slot4", &carol, T0 + 10));
    s.handle(exited("slot1"), T0 + 100).unwrap();
    let r = s.handle(release("slot1", "c-alice"), T0 + 100).unwrap();
    assert_eq!(of(&r, "slot1"), [10, 22, 1], "{:?}", r.transitions);

    // Slot 1 idle: carol's suspendable job starts on slot 3.
    claim_and_run(&mut s, "slot3", "c-carol", &carol, T0 + 200).unwrap();
    // Case 1: bob's nonsuspendable job arrives on slot 1; carol's job is
    // suspended in its favour.
    claim_and_run(&mut s, "slot1", "c-bob", &vanilla("bob", 3, ""), T0 + 300).unwrap();
    let r = poll(&mut s, T0 + 305, away(1500, &[1.0, 0.0, 1.0, 0.0]));
    assert_eq!(of(&r, "slot3"), [14], "{:?}", r.transitions);
    assert!(asks(&r, "slot3", "suspend"));
    // While bob's schedd holds slot 1's claim (Claimed, even between its
    // jobs), carol's job stays frozen.
    s.handle(exited("slot1"), T0 + 900).unwrap();
    let r = poll(&mut s, T0 + 905, away(2100, &[0.0, 0.0, 0.0, 0.0]));
    assert!(of(&r, "slot3").is_empty(), "{:?}", r.transitions);
    // Bob's work is finished and his claim released: carol's job is
    // unfrozen.
    s.handle(release("slot1", "c-bob"), T0 + 1000).unwrap();
    let r = poll(&mut s, T0 + 1005, away(2200, &[0.0, 0.0, 0.0, 0.0]));
    assert_eq!(of(&r, "slot3"), [15], "{:?}", r.transitions);
    assert!(asks(&r, "slot3", "continue"));
    assert_eq!(pair_of(&s, "slot3"), "Claimed/Busy");
}

// ===========================================================================
// Interactive jobs (policy-configuration.rst, "Configuration for
// Interactive Jobs"; no example file: the manual's lines over default.conf)

const PREFER_INTERACTIVE: &str = "RANK = ( (MY.SlotID == 1) && (TARGET.InteractiveJob =?= True) )";

/// Two slots running batch jobs under the manual's RANK over default.conf;
/// then an interactive job's claim for slot 1.
fn interactive_claim_on_slot_1() -> (startd::Startd, ClassAd, startd::Ready) {
    let mut s = machine_at(&["default.conf", PREFER_INTERACTIVE], 2, 0, T0);
    s.tick(T0, away(1200, &[]));
    claim_and_run(&mut s, "slot1", "c-b1", &vanilla("alice", 1, ""), T0).unwrap();
    claim_and_run(&mut s, "slot2", "c-b2", &vanilla("alice", 1, ""), T0).unwrap();
    let interactive = vanilla("bob", 2, "InteractiveJob = True");
    // Slot 2 does not prefer it to its batch job.
    let e = s
        .handle(request("slot2", "c-int2", interactive.clone()), T0 + 60)
        .unwrap_err();
    assert!(e.reason.contains("RANK"), "{e}");
    let r = s
        .handle(request("slot1", "c-int", interactive.clone()), T0 + 60)
        .unwrap();
    (s, interactive, r)
}

/// "As an example, presume that slot 1 prefers interactive jobs. Set the
/// machine's RANK to show the preference: RANK = ( (MY.SlotID == 1) &&
/// (TARGET.InteractiveJob =?= True) )". An interactive job's claim
/// preempts a batch job on slot 1 at once (default.conf gives no
/// retirement time), not on slot 2; once the batch job is gone the
/// interactive job runs on slot 1.
#[test]
fn interactive_jobs_are_preferred_on_slot_1() {
    let (mut s, interactive, r) = interactive_claim_on_slot_1();
    assert_eq!(of(&r, "slot1"), [13, 18], "{:?}", r.transitions);
    assert_eq!(pair_of(&s, "slot2"), "Claimed/Busy");
    let r = s.handle(exited("slot1"), T0 + 62).unwrap();
    assert_eq!(
        r.transitions.last().map(|t| t.to.to_string()),
        Some("Claimed/Idle".to_string()),
        "{:?}",
        r.transitions
    );
    let r = s
        .handle(activate("slot1", "c-int", interactive), T0 + 62)
        .unwrap();
    assert_eq!(of(&r, "slot1"), [11]);
    assert_eq!(published_number(&s, 0, "CurrentRank", T0 + 62), 1.0);
}

/// How the batch job leaves: policy-configuration.rst, RANK: "If this
/// expression evaluates to a higher number for a pending resource request
/// than it does for the current request, the machine may preempt the
/// current request (enters the Preempting/Vacating state)", and
/// WANT_VACATE "is checked only when the PREEMPT expression is True and
/// the machine enters the Preempting state". default.conf's WANT_VACATE =
/// False therefore does not apply to a RANK preemption: the batch job is
/// vacated (soft-killed), and the slot goes to the new claim by transition
/// 23.
#[test]
fn interactive_preemption_vacates_the_batch_job() {
    let (mut s, _, r) = interactive_claim_on_slot_1();
    assert_eq!(of(&r, "slot1"), [13, 18], "{:?}", r.transitions);
    assert_eq!(pair_of(&s, "slot1"), "Preempting/Vacating");
    assert!(asks(&r, "slot1", "vacate"));
    assert!(!asks(&r, "slot1", "kill"));
    let r = s.handle(exited("slot1"), T0 + 62).unwrap();
    assert_eq!(of(&r, "slot1"), [23], "{:?}", r.transitions);
}

/// "Or, if slot 1 should be reserved for interactive jobs: START = (
/// (MY.SlotID == 1) && (TARGET.InteractiveJob =?= True) )".
#[test]
fn interactive_jobs_only_on_a_reserved_slot_1() {
    let start = "START = ( (MY.SlotID == 1) && (TARGET.InteractiveJob =?= True) )";
    let mut s = machine_at(&["default.conf", start], 2, 0, T0);
    s.tick(T0, away(1200, &[]));
    assert!(!accepts(&s, "slot1", &vanilla("alice", 1, ""), T0));
    let interactive = vanilla("bob", 2, "InteractiveJob = True");
    let r = claim_and_run(&mut s, "slot1", "c-int", &interactive, T0)
        .expect("slot 1 runs the interactive job");
    assert_eq!(of(&r, "slot1"), [5, 11], "{:?}", r.transitions);
    let r = poll(&mut s, T0 + 60, away(1260, &[1.0, 0.0]));
    assert!(r.transitions.is_empty(), "{:?}", r.transitions);
    assert_eq!(pair_of(&s, "slot1"), "Claimed/Busy");
}
