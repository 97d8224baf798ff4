//! The cycle with the real accountant and concurrency limits, read from a
//! configuration: priorities decide who goes first, and a pool-wide limit
//! holds across submitters.

mod common;

use classad::ClassAd;
use common::*;
use negotiator::accountant::Accountant;
use negotiator::cycle::{negotiate, Policy, SubmitterJobs};
use negotiator::limits::{ConcurrencyLimits, CycleLimits};

fn slot(n: usize) -> ClassAd {
    ClassAd::parse(&format!(
        "[ MyType = \"Machine\"; Name = \"slot1@node{n}\"; Machine = \"node{n}\"; State = \"Unclaimed\"; \
           Activity = \"Idle\"; Cpus = 1; Memory = 4096; Disk = 1000000; Arch = \"X86_64\"; OpSys = \"LINUX\"; \
           Requirements = true; Rank = 0; CurrentRank = 0.0; SlotID = 1 ]"
    ))
    .unwrap()
}

fn job(owner: &str, proc: i64, limits: &str) -> ClassAd {
    ClassAd::parse(&format!(
        "[ MyType = \"Job\"; Owner = \"{owner}\"; ClusterId = 1; ProcId = {proc}; QDate = {NOW}; JobPrio = 0; \
           RequestCpus = 1; RequestMemory = 1024; RequestDisk = 1000; ConcurrencyLimits = \"{limits}\"; \
           Requirements = TARGET.Memory >= RequestMemory; Rank = 0 ]"
    ))
    .unwrap()
}

#[test]
fn the_accountants_priorities_and_the_configured_limits_drive_a_cycle() {
    let c = config("LICENSE_LIMIT = 3\nDEFAULT_PRIO_FACTOR = 1");
    let mut accountant = Accountant::from_config(&c).unwrap();
    // alice has used the pool much more than bob: bob goes first.
    accountant.set_priority("alice@example.org", 50.0);
    accountant.set_priority("bob@example.org", 1.0);
    let mut limits = ConcurrencyLimits::from_config(&c).unwrap();
    let policy = Policy::from_config(&c).unwrap();

    let slots: Vec<ClassAd> = (0..6).map(slot).collect();
    let alice: Vec<ClassAd> = (0..4).map(|p| job("alice", p, "license")).collect();
    let bob: Vec<ClassAd> = (0..4).map(|p| job("bob", p, "license")).collect();
    let submitters = vec![
        SubmitterJobs::new("alice@example.org", alice.iter().collect()),
        SubmitterJobs::new("bob@example.org", bob.iter().collect()),
    ];
    let plan = negotiate(
        &slots,
        &submitters,
        &accountant,
        &mut CycleLimits::new(&mut limits, NOW),
        &policy,
        NOW,
    );
    // Only three jobs may hold the license at once, and bob's come first.
    assert_eq!(plan.matches.len(), 3, "{:?}", plan.matches);
    assert!(
        plan.matches.iter().all(|m| m.submitter == 1),
        "{:?}",
        plan.matches
    );
    // The limit was counted: nothing more fits.
    assert_eq!(limits.in_use("license"), 3.0);
}
