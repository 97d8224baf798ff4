//! Slot class keys, and what a cycle reads of a slot ad first (its name,
//! claim, CurrentRank, what its expressions read), kept from one cycle to
//! the next (issue 16): a cycle
//! given the slot ads' generations makes the plan a cycle that looks
//! every ad up again makes, whatever changed between the cycles: a slot's
//! ad (a new generation), a figure that moves with the clock under one
//! generation, the significant names (the jobs read something new, a
//! slot teaches the cycle a name), the users' priorities under a claim.
//!
//! Each case is a run of cycles; every cycle is negotiated twice, keeping
//! keys across the run and from scratch, and the plans must be equal; the
//! number of slot ads the keeping cycle looked up says what was kept.

mod common;

use classad::ClassAd;
use common::*;
use negotiator::cycle::{
    negotiate_capped, negotiate_keeping, KeptSlotKeys, NoLimits, Plan, Policy, Priorities,
    SlotGenerations, SubmitterJobs,
};

/// One user's priority, the same for everyone else.
struct Prios(f64);

impl Priorities for Prios {
    fn effective_priority(&self, submitter: &str) -> f64 {
        if submitter == "bad" {
            self.0
        } else {
            0.5
        }
    }
    fn resources_in_use(&self, _submitter: &str) -> f64 {
        0.0
    }
}

/// A slot: its generation and its ad's text (between the brackets, after
/// what every slot has).
fn slot(generation: u64, name: &str, rest: &str) -> (u64, ClassAd) {
    (
        generation,
        ad(&format!(
            "[Name = \"{name}\"; Cpus = 1; Disk = 1000; Requirements = true; \
              Rank = 0; CurrentRank = 0; {rest}]"
        )),
    )
}

fn unclaimed(generation: u64, name: &str, rest: &str) -> (u64, ClassAd) {
    slot(generation, name, &format!("State = \"Unclaimed\"; {rest}"))
}

fn jobs(owner: &str, n: usize, requirements: &str) -> Vec<ClassAd> {
    (0..n)
        .map(|p| {
            ad(&format!(
                "[Owner = \"{owner}\"; ClusterId = 1; ProcId = {p}; QDate = {}; JobPrio = 0; \
                  RequestCpus = 1; RequestMemory = 1; RequestDisk = 1; \
                  Requirements = {requirements}; Rank = TARGET.Memory]",
                NOW - 100
            ))
        })
        .collect()
}

/// One cycle of a case.
struct Step {
    slots: Vec<(u64, ClassAd)>,
    /// Each submitter's name and jobs.
    jobs: Vec<(&'static str, Vec<ClassAd>)>,
    /// The priority of user `bad`.
    bad_prio: f64,
    /// Slot ads the keeping cycle must look up.
    keyed: usize,
}

fn step(slots: Vec<(u64, ClassAd)>, jobs: Vec<(&'static str, Vec<ClassAd>)>, keyed: usize) -> Step {
    Step {
        slots,
        jobs,
        bad_prio: 0.5,
        keyed,
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

/// Runs the case; returns the plans.
fn check(policy: &Policy, steps: &[Step]) -> Vec<Plan> {
    let mut kept = KeptSlotKeys::default();
    let mut plans = Vec::new();
    for (n, s) in steps.iter().enumerate() {
        let ads: Vec<ClassAd> = s.slots.iter().map(|(_, a)| a.clone()).collect();
        let generations: Vec<u64> = s.slots.iter().map(|(g, _)| *g).collect();
        let subs: Vec<SubmitterJobs<'_>> = s
            .jobs
            .iter()
            .map(|(who, jobs)| SubmitterJobs::new(*who, jobs.iter().collect()))
            .collect();
        let prios = Prios(s.bad_prio);
        let fresh = negotiate_capped(&ads, &subs, &prios, &mut NoLimits, policy, usize::MAX, NOW);
        let keeping = negotiate_keeping(
            &ads,
            Some((
                SlotGenerations {
                    generations: &generations,
                    changes_with_time: &changes_with_time,
                },
                &mut kept,
            )),
            &subs,
            &prios,
            &mut NoLimits,
            policy,
            usize::MAX,
            NOW,
        );
        same_plan(&keeping, &fresh, n);
        assert_eq!(
            keeping.stats.slots_keyed, s.keyed,
            "cycle {n}: slots looked up"
        );
        plans.push(fresh);
    }
    plans
}

#[test]
fn a_slot_whose_ad_changed_is_keyed_again_and_the_others_are_kept() {
    let pool = |g3: u64, mem3: i64| {
        vec![
            unclaimed(1, "a", "Memory = 1024"),
            unclaimed(2, "b", "Memory = 2048"),
            unclaimed(3 + g3, "c", &format!("Memory = {mem3}")),
            unclaimed(4, "d", "Memory = 1024"),
            slot(
                5,
                "p",
                "State = \"Unclaimed\"; PartitionableSlot = true; Cpus = 2; Memory = 4096",
            ),
        ]
    };
    let big = || vec![("u", jobs("u", 3, "TARGET.Memory >= 2048"))];
    check(
        &policy(""),
        &[
            step(pool(0, 1024), big(), 5),
            step(pool(0, 1024), big(), 0),
            // c grew: a new generation, looked up again, and now it fits.
            step(pool(10, 4096), big(), 1),
            step(pool(10, 4096), big(), 0),
            // and back, under yet another generation.
            step(pool(20, 1024), big(), 1),
        ],
    );
}

#[test]
fn figures_that_move_with_the_clock_are_read_every_cycle() {
    // Under one generation KeyboardIdle may change: a and b alike in the
    // first cycle, not in the second. What else the key reads is kept.
    let pool = |idle_a: i64| {
        vec![
            unclaimed(1, "a", &format!("Memory = 1024; KeyboardIdle = {idle_a}")),
            unclaimed(2, "b", "Memory = 1024; KeyboardIdle = 100"),
        ]
    };
    // The jobs read it...
    let away = || vec![("u", jobs("u", 2, "TARGET.KeyboardIdle > 600"))];
    let plans = check(
        &policy(""),
        &[step(pool(100), away(), 2), step(pool(1000), away(), 0)],
    );
    assert_eq!(plans[0].matches.len(), 0);
    assert_eq!(plans[1].matches.len(), 1);
    // ...or the slots' START does.
    let pool = |idle_a: i64| {
        vec![
            unclaimed(
                1,
                "a",
                &format!("Memory = 1024; KeyboardIdle = {idle_a}; Start = KeyboardIdle > 600; Requirements = START"),
            ),
            unclaimed(
                2,
                "b",
                "Memory = 1024; KeyboardIdle = 100; Start = KeyboardIdle > 600; Requirements = START",
            ),
        ]
    };
    let any = || vec![("u", jobs("u", 2, "true"))];
    let plans = check(
        &policy(""),
        &[step(pool(100), any(), 2), step(pool(1000), any(), 0)],
    );
    assert_eq!(plans[0].matches.len(), 0);
    assert_eq!(plans[1].matches.len(), 1);
    // Read by nothing, it changes nothing.
    let plain = || vec![("u", jobs("u", 1, "TARGET.Memory >= 1024"))];
    let pool = |idle_a: i64| {
        vec![
            unclaimed(1, "a", &format!("Memory = 1024; KeyboardIdle = {idle_a}")),
            unclaimed(2, "b", "Memory = 1024; KeyboardIdle = 100"),
        ]
    };
    check(
        &policy(""),
        &[step(pool(100), plain(), 2), step(pool(1000), plain(), 0)],
    );
}

#[test]
fn keys_over_other_significant_names_are_not_kept() {
    let pool = || {
        vec![
            unclaimed(1, "a", "Memory = 1024; HasGpu = false"),
            unclaimed(2, "b", "Memory = 1024; HasGpu = true"),
            unclaimed(3, "c", "Memory = 1024; HasGpu = false"),
        ]
    };
    let plain = || vec![("u", jobs("u", 1, "TARGET.Memory >= 1024"))];
    let gpu = || vec![("u", jobs("u", 1, "TARGET.HasGpu"))];
    check(
        &policy(""),
        &[
            step(pool(), plain(), 3),
            step(pool(), plain(), 0),
            // The jobs read HasGpu now: a, b and c were one class.
            step(pool(), gpu(), 3),
            step(pool(), gpu(), 0),
            step(pool(), plain(), 3),
        ],
    );
}

#[test]
fn nothing_is_kept_from_a_cycle_a_slot_taught_a_name() {
    // IsFast reads Mips, which only the slots' expressions name: the cycle
    // learns it from the first slot it keys.
    let pool = |mips_b: i64, gb: u64| {
        vec![
            unclaimed(1, "a", "Memory = 1024; Mips = 50; IsFast = Mips > 100"),
            unclaimed(
                2 + gb,
                "b",
                &format!("Memory = 1024; Mips = {mips_b}; IsFast = Mips > 100"),
            ),
            unclaimed(3, "c", "Memory = 1024; Mips = 50; IsFast = Mips > 100"),
        ]
    };
    let fast = || vec![("u", jobs("u", 2, "TARGET.IsFast"))];
    check(
        &policy(""),
        &[
            step(pool(50, 0), fast(), 3),
            step(pool(50, 0), fast(), 3),
            step(pool(500, 10), fast(), 3),
        ],
    );
}

#[test]
fn a_claim_the_cycle_writes_priorities_into_is_keyed_every_cycle() {
    // Priority preemption (PREEMPTION_REQUIREMENTS left to its default):
    // the claims' ads carry the running user's priority, which moves
    // from cycle to cycle under one generation.
    let claimed = |generation: u64, name: &str| {
        slot(
            generation,
            name,
            "Memory = 1024; State = \"Claimed\"; RemoteUser = \"bad@pool\"; \
             RemoteOwner = \"bad\"; TotalJobRunTime = 100",
        )
    };
    let pool = || {
        vec![
            claimed(1, "x"),
            unclaimed(2, "a", "Memory = 1024"),
            claimed(3, "y"),
            unclaimed(4, "b", "Memory = 1024"),
        ]
    };
    let want = || vec![("good", jobs("good", 4, "TARGET.Memory >= 1024"))];
    // a is claimed too, under a new generation, and freed again.
    let busier = || {
        vec![
            claimed(1, "x"),
            claimed(20, "a"),
            claimed(3, "y"),
            unclaimed(4, "b", "Memory = 1024"),
        ]
    };
    let freed = || {
        vec![
            claimed(1, "x"),
            unclaimed(30, "a", "Memory = 1024"),
            claimed(3, "y"),
            unclaimed(4, "b", "Memory = 1024"),
        ]
    };
    let mut steps = vec![
        step(pool(), want(), 4),
        step(pool(), want(), 2),
        step(pool(), want(), 2),
        step(busier(), want(), 3),
        step(freed(), want(), 3),
    ];
    steps[1].bad_prio = 100.0;
    steps[2].bad_prio = 0.6;
    steps[3].bad_prio = 100.0;
    steps[4].bad_prio = 100.0;
    check(
        &policy("PREEMPTION_REQUIREMENTS = RemoteUserPrio > SubmitterUserPrio * 1.2"),
        &steps,
    );
}
