//! A slot's figures kept from one cycle to the next with its class key
//! (issue 16): its own SlotWeight, read once per generation where what it
//! reads does not move with the clock and is not written by the cycle,
//! and its cores for the offer cap. A cycle given the slot ads'
//! generations (`negotiation_cycle_keeping`, as the simulator runs it)
//! makes the plan a cycle that reads every ad again
//! (`negotiation_cycle`) makes, whatever changed between the cycles: a
//! slot's figures under a new generation, a clock figure its weight reads
//! under one generation, the clock itself, the priorities the cycle writes
//! into a claim.
//!
//! Each case is a run of cycles; every cycle is negotiated twice, keeping
//! across the run and from scratch, and the plans must be equal (the
//! matches' costs and the pool's size are the slots' weights).

mod common;

use classad::ClassAd;
use common::*;
use negotiator::accountant::Accountant;
use negotiator::cycle::{KeptSlotKeys, Plan, Policy, SlotGenerations, SubmitterJobs};
use negotiator::limits::ConcurrencyLimits;
use negotiator::matchmaker::{negotiation_cycle, negotiation_cycle_keeping};

/// A slot: its generation and its ad (after what every slot has).
fn slot(generation: u64, name: &str, rest: &str) -> (u64, ClassAd) {
    (
        generation,
        ad(&format!(
            "[Name = \"{name}\"; Memory = 1024; Disk = 1000; Requirements = true; \
              Rank = 0; CurrentRank = 0; {rest}]"
        )),
    )
}

fn unclaimed(generation: u64, name: &str, rest: &str) -> (u64, ClassAd) {
    slot(generation, name, &format!("State = \"Unclaimed\"; {rest}"))
}

fn jobs(owner: &str, n: usize) -> Vec<ClassAd> {
    (0..n)
        .map(|p| {
            ad(&format!(
                "[Owner = \"{owner}\"; ClusterId = 1; ProcId = {p}; QDate = {}; JobPrio = 0; \
                  RequestCpus = 1; RequestMemory = 1; RequestDisk = 1; \
                  Requirements = TARGET.Memory >= 1; Rank = 0]",
                NOW - 100
            ))
        })
        .collect()
}

/// One cycle of a case.
struct Step {
    slots: Vec<(u64, ClassAd)>,
    now: i64,
    /// The priority of user `bad` (`good` has 1).
    bad_prio: f64,
}

fn step(slots: Vec<(u64, ClassAd)>) -> Step {
    Step {
        slots,
        now: NOW,
        bad_prio: 5.0,
    }
}

fn same_plan(kept: &Plan, fresh: &Plan, n: usize) {
    assert_eq!(kept.matches, fresh.matches, "cycle {n}: matches");
    assert_eq!(kept.unmatched, fresh.unmatched, "cycle {n}: unmatched");
    assert_eq!(kept.autoclusters, fresh.autoclusters, "cycle {n}");
    assert_eq!(kept.significant, fresh.significant, "cycle {n}");
    let mut stats = kept.stats.clone();
    stats.slots_keyed = fresh.stats.slots_keyed;
    assert_eq!(stats, fresh.stats, "cycle {n}: figures");
}

/// Runs the case (users `good` and `bad`, 6 jobs each); returns the plans.
fn check(config_text: &str, steps: &[Step]) -> Vec<Plan> {
    let c = config(config_text);
    let policy = Policy::from_config(&c).unwrap();
    let good = jobs("good", 6);
    let bad = jobs("bad", 6);
    let subs = vec![
        SubmitterJobs::new("good@pool", good.iter().collect()),
        SubmitterJobs::new("bad@pool", bad.iter().collect()),
    ];
    let mut kept = KeptSlotKeys::default();
    let mut plans = Vec::new();
    for (n, s) in steps.iter().enumerate() {
        let ads: Vec<ClassAd> = s.slots.iter().map(|(_, a)| a.clone()).collect();
        let generations: Vec<u64> = s.slots.iter().map(|(g, _)| *g).collect();
        let mut accountant = Accountant::from_config(&c).unwrap();
        accountant.set_priority("good@pool", 1.0);
        accountant.set_priority("bad@pool", s.bad_prio);
        let limits = ConcurrencyLimits::from_config(&c).unwrap();
        let fresh = negotiation_cycle(
            &ads,
            &subs,
            &mut accountant.clone(),
            &mut limits.clone(),
            &policy,
            s.now,
        );
        let keeping = negotiation_cycle_keeping(
            &ads,
            Some((
                SlotGenerations {
                    generations: &generations,
                    changes_with_time: &changes_with_time,
                },
                &mut kept,
            )),
            &subs,
            &mut accountant.clone(),
            &mut limits.clone(),
            &policy,
            s.now,
        );
        same_plan(&keeping, &fresh, n);
        plans.push(fresh);
    }
    plans
}

/// The sum of the weights of the slots matched.
fn cost(plan: &Plan) -> f64 {
    plan.matches.iter().map(|m| m.cost).sum()
}

#[test]
fn a_slot_weight_follows_its_figures_under_a_new_generation() {
    // c's Cpus (which its SlotWeight reads, through a name of its own)
    // grows under a new generation, and shrinks again.
    let pool = |gc: u64, cpus_c: i64| {
        vec![
            unclaimed(1, "a", "Cpus = 1; SlotWeight = Cpus"),
            unclaimed(2, "b", "Cpus = 2; SlotWeight = Cpus"),
            unclaimed(
                3 + gc,
                "c",
                &format!("Cpus = {cpus_c}; Factor = Cpus * 2; SlotWeight = Factor / 2"),
            ),
            unclaimed(4, "d", "Cpus = 1; SlotWeight = Cpus"),
        ]
    };
    let plans = check(
        "",
        &[
            step(pool(0, 1)),
            step(pool(0, 1)),
            step(pool(10, 8)),
            step(pool(10, 8)),
            step(pool(20, 1)),
        ],
    );
    assert_eq!(plans[0].stats.pool_size, 5.0);
    assert_eq!(plans[2].stats.pool_size, 12.0);
    assert_eq!(plans[4].stats.pool_size, 5.0);
    assert_eq!(cost(&plans[3]), 12.0);
}

#[test]
fn a_slot_weight_reading_the_clock_is_read_every_cycle() {
    // Under one generation KeyboardIdle may change, and the clock does.
    let pool = |idle_a: i64| {
        vec![
            unclaimed(
                1,
                "a",
                &format!(
                    "Cpus = 1; KeyboardIdle = {idle_a}; SlotWeight = KeyboardIdle > 600 ? 4 : 1"
                ),
            ),
            unclaimed(
                2,
                "b",
                "Cpus = 1; Away = KeyboardIdle > 600; KeyboardIdle = 100; \
                 SlotWeight = Away ? 4 : 1",
            ),
            unclaimed(
                3,
                "c",
                &format!("Cpus = 1; SlotWeight = time() > {} ? 3 : 1", NOW + 60),
            ),
            unclaimed(4, "d", "Cpus = 1; SlotWeight = CurrentTime > 0 ? 2 : 1"),
        ]
    };
    let mut steps = vec![step(pool(100)), step(pool(1000)), step(pool(100))];
    steps[2].now = NOW + 300;
    let plans = check("", &steps);
    assert_eq!(plans[0].stats.pool_size, 5.0);
    assert_eq!(plans[1].stats.pool_size, 8.0);
    assert_eq!(plans[2].stats.pool_size, 7.0);
}

#[test]
fn a_slot_weight_reading_what_the_cycle_writes_is_read_every_cycle() {
    // Priority preemption is on: the claims' ads carry the running user's
    // priority, which moves from cycle to cycle under one generation (the
    // accountant's priority times its default factor of 1000).
    let claimed = |generation: u64, name: &str| {
        slot(
            generation,
            name,
            "Cpus = 1; State = \"Claimed\"; RemoteUser = \"bad@pool\"; RemoteOwner = \"bad\"; \
             TotalJobRunTime = 100; SlotWeight = RemoteUserPrio > 10000 ? 3 : 1",
        )
    };
    let pool = || {
        vec![
            claimed(1, "x"),
            unclaimed(2, "a", "Cpus = 1; SlotWeight = Cpus"),
            claimed(3, "y"),
        ]
    };
    let mut steps = vec![step(pool()), step(pool()), step(pool())];
    steps[1].bad_prio = 50.0;
    steps[2].bad_prio = 2.0;
    let plans = check("PREEMPTION_REQUIREMENTS = True", &steps);
    assert_eq!(plans[0].stats.pool_size, 3.0);
    assert_eq!(plans[1].stats.pool_size, 7.0);
    assert_eq!(plans[2].stats.pool_size, 3.0);
}

#[test]
fn the_negotiators_slot_weight_applies_where_a_slot_has_none() {
    let pool = |gb: u64, cpus_b: i64| {
        vec![
            unclaimed(1, "a", "Cpus = 2"),
            unclaimed(2 + gb, "b", &format!("Cpus = {cpus_b}")),
            unclaimed(3, "c", "Cpus = 1; SlotWeight = 10"),
        ]
    };
    let plans = check(
        "SLOT_WEIGHT = Cpus * 2",
        &[step(pool(0, 1)), step(pool(0, 1)), step(pool(10, 3))],
    );
    assert_eq!(plans[0].stats.pool_size, 16.0);
    assert_eq!(plans[2].stats.pool_size, 20.0);
}

#[test]
fn the_offer_cap_follows_a_partitionable_slots_cores() {
    // One partitionable slot: a cycle offers each autocluster as many
    // jobs as the pool has cores, read again under a new generation and,
    // where they move with the clock, every cycle.
    let pslot = |generation: u64, cpus: &str| {
        slot(
            generation,
            "p",
            &format!("State = \"Unclaimed\"; PartitionableSlot = true; Memory = 4096; {cpus}"),
        )
    };
    let plans = check(
        "",
        &[
            step(vec![pslot(1, "Cpus = 1")]),
            step(vec![pslot(1, "Cpus = 1")]),
            step(vec![pslot(2, "Cpus = 4")]),
            step(vec![pslot(2, "Cpus = 4")]),
            step(vec![pslot(
                3,
                "KeyboardIdle = 100; Cpus = KeyboardIdle > 600 ? 4 : 2",
            )]),
            step(vec![pslot(
                3,
                "KeyboardIdle = 1000; Cpus = KeyboardIdle > 600 ? 4 : 2",
            )]),
        ],
    );
    let matched: Vec<usize> = plans.iter().map(|p| p.matches.len()).collect();
    assert_eq!(matched, [1, 1, 4, 4, 2, 4]);
}
