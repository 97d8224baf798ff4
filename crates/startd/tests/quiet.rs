//! Polls a quiet slot skips (`startd::quiet`) must never change what a
//! slot does: a policy that reads the clock, a figure that moves with it
//! (directly or through another attribute of the slot or of the job), or
//! another slot's state is still judged at every poll, and the claim's
//! lease still runs out on time while the policy itself reads nothing
//! that moves.

mod common;

use common::*;
use startd::{Cause, Event};

/// IS_OWNER as HTCondor's desktop policies have it (its default is False).
const OWNER: &str = "IS_OWNER = (START =?= False)\n";

/// Polls every `step` seconds from `from` to `to` (inclusive), keyboard
/// idle since T0 - 3600; the transitions' numbers of each poll that had
/// any, with its time.
fn poll(s: &mut startd::Startd, from: i64, to: i64, step: i64) -> Vec<(i64, Vec<u8>)> {
    let mut out = Vec::new();
    let mut now = from;
    while now <= to {
        let r = s.tick(now, readings(now - T0 + 3600, 0.0));
        if !r.transitions.is_empty() {
            out.push((now, numbers(&r)));
        }
        now += step;
    }
    out
}

#[test]
fn a_start_that_reads_the_clock_is_judged_at_every_poll() {
    for start in [
        format!("START = time() < {}", T0 + 1000),
        format!("START = CurrentTime < {}", T0 + 1000),
        // Through an attribute of the slot ad.
        format!(
            "START = Open\nOpen = CurrentTime < {}\nSTARTD_ATTRS = Open",
            T0 + 1000
        ),
    ] {
        let mut s = startd(&format!("{OWNER}{start}"), 1);
        let moves = poll(&mut s, T0, T0 + 2000, 100);
        assert_eq!(moves, vec![(T0, vec![1]), (T0 + 1000, vec![2])], "{start}");
    }
}

#[test]
fn a_start_that_reads_a_figure_that_moves_is_judged_at_every_poll() {
    // KeyboardIdle moves with the clock: 3600 s at T0, 5600 s at T0+2000.
    for start in [
        "START = KeyboardIdle < 4600",
        "START = Quiet\nQuiet = MY.KeyboardIdle < 4600\nSTARTD_ATTRS = Quiet",
        "START = TotalTimeUnclaimedIdle < 1000",
    ] {
        let mut s = startd(&format!("{OWNER}{start}"), 1);
        let moves = poll(&mut s, T0, T0 + 2000, 100);
        assert_eq!(moves, vec![(T0, vec![1]), (T0 + 1000, vec![2])], "{start}");
    }
}

#[test]
fn a_busy_slot_whose_policy_reads_nothing_that_moves_still_loses_an_expired_lease() {
    let mut s = startd("", 1);
    s.tick(T0, readings(3600, 0.0));
    let mut j = job("alice");
    j.insert_value("JobLeaseDuration", 1200i64);
    run_job(&mut s, j, T0);
    // Quiet polls, then a keep-alive (which moves the lease's end later).
    assert!(poll(&mut s, T0 + 100, T0 + 900, 100).is_empty());
    s.handle(
        Event::KeepAlive {
            claim_id: "c1".into(),
        },
        T0 + 1000,
    )
    .unwrap();
    assert!(poll(&mut s, T0 + 1100, T0 + 2200, 100).is_empty());
    let r = s.tick(T0 + 2201, readings(5801, 0.0));
    assert_eq!(numbers(&r), vec![13, 18]);
    assert!(matches!(&r.transitions[0].cause, Cause::Timer(t) if t.contains("lease")));
}

#[test]
fn a_busy_slot_preempts_when_the_jobs_own_clock_reading_attribute_turns() {
    let mut s = startd(
        "PREEMPT = TARGET.Overdue =?= True\nMaxJobRetirementTime = 0",
        1,
    );
    s.tick(T0, readings(3600, 0.0));
    let mut j = job("alice");
    j.insert(
        "Overdue",
        classad::parse_expr(&format!("CurrentTime > {}", T0 + 1000)).unwrap(),
    );
    run_job(&mut s, j, T0);
    let moves = poll(&mut s, T0 + 100, T0 + 2000, 100);
    assert_eq!(moves.first().map(|m| m.0), Some(T0 + 1100), "{moves:?}");
    assert_eq!(moves[0].1[0], 13);
}

#[test]
fn an_idle_slot_that_reads_another_slots_state_follows_it() {
    // slot1 will not start jobs while slot2 runs one.
    let mut s = startd(
        &format!(
            "{OWNER}STARTD_SLOT_ATTRS = State\nSTART = SlotID != 1 || slot2_State =!= \"Claimed\""
        ),
        2,
    );
    assert!(!poll(&mut s, T0, T0 + 600, 100).is_empty());
    assert_eq!(pair(&s, 0), "Unclaimed/Idle");
    s.handle(request("slot2", "c2", job("bob")), T0 + 650)
        .unwrap();
    s.handle(activate("slot2", "c2", job("bob")), T0 + 650)
        .unwrap();
    let moves = poll(&mut s, T0 + 700, T0 + 1000, 100);
    assert_eq!(moves, vec![(T0 + 700, vec![2])]);
    assert_eq!(pair(&s, 0), "Owner/Idle");
}

#[test]
fn a_reconfigured_start_is_judged_at_the_next_poll() {
    let base = "RunBenchmarks = False\nSLOTS_CONNECTED_TO_KEYBOARD = 1000\nSLOTS_CONNECTED_TO_CONSOLE = 1000\n";
    let mut s = startd(&format!("{OWNER}START = True"), 1);
    assert_eq!(poll(&mut s, T0, T0 + 600, 100), vec![(T0, vec![1])]);
    s.reconfigure(&config(&format!("{base}{OWNER}START = False")))
        .unwrap();
    assert_eq!(
        poll(&mut s, T0 + 700, T0 + 900, 100),
        vec![(T0 + 700, vec![2])]
    );
}
