//! A slot's facts written in groups: a refresh of an ad written under the
//! facts just before writes only the groups that changed since (the
//! state, the claim, the job, ...). Every such refresh is checked here
//! against a whole one (debug builds, `REFRESH_CHECK_EVERY` at 1), and
//! after every step each slot's ad must say what an ad built afresh says:
//! a group left out, or a group written without one it depends on, leaves
//! a stale attribute that one of the two catches.

mod common;

use common::*;
use startd::engine::DrainHow;
use startd::resources::HostReadings;
use startd::{AdsEpoch, Event, Startd};

/// Each slot's own ad and its published ads against ads built afresh (a
/// copy of the startd whose ads were forgotten).
fn check_fresh(
    s: &mut Startd,
    copies: &mut Vec<classad::ClassAd>,
    epoch: &mut AdsEpoch,
    now: i64,
    what: &str,
) {
    let mut fresh = s.clone();
    fresh.set_file_transfer_methods(None);
    for i in 0..s.slots().len() {
        assert_eq!(
            lines(&s.slot_ad(i, now)),
            lines(&fresh.slot_ad(i, now)),
            "{what}: slot {i}'s own ad"
        );
    }
    // Publishing swaps the caller's copies (written under older
    // generations) with the slots' ads: both are refreshed in groups.
    let extra = classad::ClassAd::new();
    s.republish(now, &extra, copies, epoch);
    let want = fresh.published_ads(now);
    assert_eq!(copies.len(), want.len(), "{what}: number of ads");
    for (k, (got, want)) in copies.iter().zip(&want).enumerate() {
        assert_eq!(lines(got), lines(want), "{what}: published ad {k}");
    }
}

enum Step {
    Event(Event),
    Tick(f64),
}

fn run(mut s: Startd, steps: &[(i64, Step)]) {
    startd::publish::REFRESH_CHECK_EVERY.store(1, std::sync::atomic::Ordering::Relaxed);
    let mut copies = Vec::new();
    let mut epoch = AdsEpoch::default();
    check_fresh(&mut s, &mut copies, &mut epoch, T0, "at first");
    for (k, (at, step)) in steps.iter().enumerate() {
        match step {
            Step::Event(ev) => {
                s.receive(ev.clone(), *at);
            }
            Step::Tick(load) => {
                s.tick(*at, readings(0, *load));
            }
        }
        check_fresh(&mut s, &mut copies, &mut epoch, *at, &format!("step {k}"));
        // A poll between events, and the ads again: a generation later.
        s.tick(*at + 1, readings(0, 0.0));
        check_fresh(
            &mut s,
            &mut copies,
            &mut epoch,
            *at + 2,
            &format!("step {k}, polled"),
        );
    }
}

fn release(slot: &str, claim: &str) -> Step {
    Step::Event(Event::ReleaseClaim {
        slot: slot.into(),
        claim_id: claim.into(),
    })
}

fn limited_job(owner: &str) -> classad::ClassAd {
    let mut j = job(owner);
    j.insert_value("ConcurrencyLimits", "license");
    j.insert_value("Cmd", "/bin/sleep");
    j
}

#[test]
fn static_slots_written_in_groups_say_what_a_whole_rewrite_says() {
    let s = startd(
        "START = True\n\
         RunBenchmarks = LastBenchmark == 0\n\
         STARTD_LATCH_EXPRS = HighLoad\n\
         HighLoad = LoadAvg > 0.5\n\
         STARTD_JOB_ATTRS = Cmd\n\
         RANK = Owner == \"bob\"\n\
         STARTD_SLOT_ATTRS = State",
        2,
    );
    run(
        s,
        &[
            (T0 + 5, Step::Tick(0.0)),
            (
                T0 + 8,
                Step::Event(Event::BenchmarksDone {
                    slot: "slot1".into(),
                    mips: 5000,
                    kflops: 900_000,
                }),
            ),
            (
                T0 + 10,
                Step::Event(request("slot1", "c1", limited_job("alice"))),
            ),
            (
                T0 + 20,
                Step::Event(activate("slot1", "c1", limited_job("alice"))),
            ),
            // The latch moves with the load.
            (T0 + 40, Step::Tick(0.9)),
            (T0 + 60, Step::Tick(0.1)),
            (T0 + 300, Step::Event(exited("slot1"))),
            (T0 + 305, Step::Event(activate("slot1", "c1", job("alice")))),
            (T0 + 306, Step::Event(exited("slot1"))),
            (T0 + 310, release("slot1", "c1")),
            (T0 + 320, Step::Event(request("slot2", "c2", job("bob")))),
            (T0 + 330, Step::Event(activate("slot2", "c2", job("bob")))),
            // A claim by a better-ranked user preempts.
            (T0 + 340, Step::Event(request("slot1", "c3", job("bob")))),
            (
                T0 + 350,
                Step::Event(activate("slot1", "c3", limited_job("bob"))),
            ),
            (
                T0 + 400,
                Step::Event(Event::Vacate {
                    slot: Some("slot1".into()),
                    fast: true,
                }),
            ),
            (T0 + 410, Step::Event(exited("slot1"))),
            (
                T0 + 500,
                Step::Event(Event::Drain {
                    how: DrainHow::Graceful,
                    resume_on_completion: true,
                    start_expr: None,
                    reason: "test".into(),
                }),
            ),
            (T0 + 600, Step::Event(exited("slot2"))),
            (T0 + 610, release("slot2", "c2")),
            (T0 + 620, Step::Tick(0.0)),
            (T0 + 700, Step::Event(Event::CancelDrain)),
            (T0 + 710, Step::Event(request("slot2", "c4", job("carol")))),
            (T0 + 720, release("slot2", "c4")),
        ],
    );
}

#[test]
fn dynamic_slots_written_in_groups_say_what_a_whole_rewrite_says() {
    let c =
        config("RunBenchmarks = False\nuse FEATURE : PartitionableSlot\nSTARTD_JOB_ATTRS = Cmd");
    let host = HostReadings::simple(8, 16384, 100_000_000, 0);
    let mut s =
        Startd::from_config(&c, "exec.example.org", &host, T0).unwrap_or_else(|e| panic!("{e}"));
    s.tick(T0, readings(0, 0.0));
    run(
        s,
        &[
            (
                T0 + 10,
                Step::Event(request("slot1", "c1", limited_job("alice"))),
            ),
            (
                T0 + 20,
                Step::Event(activate("slot1_1", "c1", limited_job("alice"))),
            ),
            (T0 + 30, Step::Event(request("slot1", "c2", job("bob")))),
            (T0 + 40, Step::Event(activate("slot1_2", "c2", job("bob")))),
            (T0 + 300, Step::Event(exited("slot1_1"))),
            (T0 + 310, release("slot1_1", "c1")),
            (T0 + 320, Step::Event(exited("slot1_2"))),
            (
                T0 + 330,
                Step::Event(activate("slot1_2", "c2", limited_job("bob"))),
            ),
            (T0 + 340, Step::Event(exited("slot1_2"))),
            (T0 + 350, release("slot1_2", "c2")),
        ],
    );
}
