//! The manual's "Load Average for Multi-core Machines": HTCondor's own load
//! goes to the slots that make it; the rest is the owner's, handed out in
//! steps of at most 1.0, Owner-state slots first.

use startd::loadavg::{
    assign_load, hundredths, order_matters, owner_load, total_condor_load, LoadState, SlotLoadInput,
};

fn slot(id: u32, state: LoadState, condor_load: f64) -> SlotLoadInput {
    SlotLoadInput {
        id,
        sub_id: 0,
        state,
        rank: 0.0,
        condor_load,
    }
}

fn owner_loads(total: f64, slots: &[SlotLoadInput]) -> Vec<f64> {
    assign_load(total, slots)
        .iter()
        .map(|l| l.owner_load)
        .collect()
}

use LoadState::*;

/// "a 4-core machine with 3 CPU-bound processes running at the same time
/// will have a load of 3.0": with no HTCondor jobs it is all owner load,
/// at most 1.0 per slot, Owner-state slots first.
#[test]
fn manual_owner_load_goes_to_owner_slots_first_in_steps_of_one() {
    let slots = [
        slot(1, Unclaimed, 0.0),
        slot(2, Owner, 0.0),
        slot(3, Unclaimed, 0.0),
        slot(4, Owner, 0.0),
    ];
    assert_eq!(owner_loads(3.0, &slots), [1.0, 1.0, 0.0, 1.0]);
}

/// "First, HTCondor assigns the known HTCondor load average to each node
/// that is generating load. If there is any load average left in the
/// total system load, it is considered an owner load."
#[test]
fn manual_condor_load_first_then_the_rest_as_owner_load() {
    let slots = [
        slot(1, Claimed, 1.0),
        slot(2, Claimed, 0.9),
        slot(3, Owner, 0.0),
        slot(4, Unclaimed, 0.0),
    ];
    let loads = assign_load(3.4, &slots);
    let owner: Vec<f64> = loads.iter().map(|l| hundredths(l.owner_load)).collect();
    assert_eq!(owner, [0.0, 0.0, 1.0, 0.5]);
    let avg: Vec<f64> = loads.iter().map(|l| l.load_avg()).collect();
    assert_eq!(avg, [1.0, 0.9, 1.0, 0.5]);
    assert_eq!(loads[1].condor_load_avg(), 0.9);
    assert_eq!(hundredths(total_condor_load(&slots)), 1.9);
}

/// "If HTCondor runs out of total load average before it runs out of
/// slots, all the remaining machines believe that they have no load
/// average at all."
#[test]
fn manual_slots_left_when_the_load_runs_out_have_none() {
    let slots = [
        slot(1, Owner, 0.0),
        slot(2, Owner, 0.0),
        slot(3, Owner, 0.0),
    ];
    assert_eq!(owner_loads(1.25, &slots), [1.0, 0.25, 0.0]);
    assert_eq!(owner_loads(0.0, &slots), [0.0, 0.0, 0.0]);
}

/// "If, instead, HTCondor runs out of slots and it still has owner load
/// remaining, HTCondor starts assigning that load to HTCondor nodes as
/// well, giving individual nodes with a load average higher than 1.0."
#[test]
fn manual_owner_load_left_over_goes_past_one() {
    let slots = [slot(1, Claimed, 1.0), slot(2, Owner, 0.0)];
    let loads = assign_load(5.0, &slots);
    // The Owner slot first (1.0), then the claimed slot takes the rest.
    assert_eq!(loads[1].owner_load, 1.0);
    assert_eq!(loads[0].owner_load, 3.0);
    assert_eq!(loads[0].load_avg(), 4.0);
}

#[test]
fn claimed_slots_with_the_lowest_rank_come_first() {
    let mut a = slot(1, Claimed, 0.0);
    a.rank = 10.0;
    let mut b = slot(2, Claimed, 0.0);
    b.rank = 1.0;
    let c = slot(3, Matched, 0.0);
    assert_eq!(owner_loads(1.5, &[a, b, c]), [0.0, 0.5, 1.0]);
}

#[test]
fn the_load_below_condor_load_is_no_owner_load() {
    // A total below HTCondor's own (the two are sampled apart) is no
    // owner load at all.
    let slots = [slot(1, Claimed, 1.0), slot(2, Unclaimed, 0.0)];
    assert_eq!(owner_loads(0.5, &slots), [0.0, 0.0]);
    assert!(assign_load(1.0, &[]).is_empty());
}

#[test]
fn loads_are_published_to_hundredths() {
    assert_eq!(hundredths(0.456), 0.46);
    assert_eq!(hundredths(1.0 / 3.0), 0.33);
}

/// A machine with one slot: that slot is also the last, so it takes all
/// the owner load, past 1.0 too, whatever its state.
#[test]
fn a_single_slot_takes_all_the_owner_load() {
    for state in [Owner, Unclaimed, Claimed, Drained] {
        let loads = assign_load(2.75, &[slot(1, state, 1.0)]);
        assert_eq!(loads[0].owner_load, 1.75);
        assert_eq!(loads[0].load_avg(), 2.75);
        assert_eq!(loads[0].condor_load_avg(), 1.0);
    }
}

/// The owner's load is what HTCondor's processes do not make; the order
/// slots are served in only matters when there is some to share.
#[test]
fn the_order_of_the_slots_matters_only_with_owner_load_to_share() {
    assert_eq!(owner_load(3.0, 1.25), 1.75);
    assert_eq!(owner_load(1.0, 1.25), 0.0);
    assert!(order_matters(0.5, 2));
    assert!(!order_matters(0.0, 4));
    assert!(!order_matters(2.0, 1));
    let slots = [
        slot(1, Claimed, 1.0),
        slot(2, Owner, 0.0),
        slot(3, Owner, 0.0),
    ];
    assert_eq!(owner_loads(1.0, &slots), [0.0, 0.0, 0.0]);
}

#[test]
fn whole_hundredths_and_zeros_are_published_as_they_are() {
    for x in [0.0, 1.0, 2.5, 0.01, 16.0, 1e300, -3.0] {
        assert_eq!(hundredths(x), (x * 100.0).round() / 100.0, "{x}");
    }
    assert!(hundredths(-0.0).is_sign_negative());
    assert!(hundredths(f64::NAN).is_nan());
    assert_eq!(hundredths(0.005), 0.01);
    assert_eq!(hundredths(-0.456), -0.46);
}
