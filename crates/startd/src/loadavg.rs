//! Handing the machine's load average out to its slots (the manual's
//! "Load Average for Multi-core Machines").
//!
//! The operating system knows one load average for the whole machine
//! (`TotalLoadAvg`); HTCondor knows how much of it its own jobs make on
//! each slot (`CondorLoadAvg`, from the processes it tracks). What is left
//! is the owner's load, and it is handed out in steps of at most 1.0:
//! first to slots in the Owner state, then Unclaimed, Matched, Claimed
//! (lowest machine Rank first) and the rest; the last slot takes whatever
//! is still left, which can put it above 1.0. A slot's `LoadAvg` is its
//! HTCondor load plus the owner load it was given.
//!
//! HTCondor 10 and later step by the slot's whole CPUs instead of 1.0 and
//! drop what is left after the last slot; we follow the manual, which is
//! what the single-CPU policies of the manual were written against.

/// Where a slot stands in the order owner load is handed out in: HTCondor
/// sorts slots by state, in this order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum LoadState {
    Owner,
    Unclaimed,
    Matched,
    Claimed,
    Preempting,
    Backfill,
    Drained,
}

/// What the assignment needs to know about a slot.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SlotLoadInput {
    /// `SlotID`, and the dynamic slot's number (0 for others): ties are
    /// broken in slot order.
    pub id: u32,
    pub sub_id: u32,
    pub state: LoadState,
    /// The machine's Rank of the claim (`CurrentRank`); orders Claimed and
    /// Preempting slots, lowest first.
    pub rank: f64,
    /// The load HTCondor's own processes make on this slot.
    pub condor_load: f64,
}

/// A slot's load averages.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SlotLoad {
    /// `CondorLoadAvg` (before rounding).
    pub condor_load: f64,
    /// The owner load handed to this slot.
    pub owner_load: f64,
}

impl SlotLoad {
    /// `LoadAvg` as published: owner and HTCondor load, to hundredths.
    pub fn load_avg(&self) -> f64 {
        hundredths(self.owner_load + self.condor_load)
    }

    /// `CondorLoadAvg` as published, to hundredths.
    pub fn condor_load_avg(&self) -> f64 {
        hundredths(self.condor_load)
    }
}

/// A load rounded to hundredths, as HTCondor publishes loads.
pub fn hundredths(x: f64) -> f64 {
    let y = x * 100.0;
    // Most loads are whole hundredths already (no load, or whole CPUs of
    // jobs), and `round` is a library call on the baseline x86-64 target;
    // a value that survives the trip through an integer is whole, and
    // rounds to itself.
    if (y as i64) as f64 == y {
        return y / 100.0;
    }
    y.round() / 100.0
}

/// `TotalCondorLoadAvg`: the load of all HTCondor's processes.
pub fn total_condor_load(slots: &[SlotLoadInput]) -> f64 {
    slots.iter().map(|s| s.condor_load).sum()
}

/// The owner's load: what of `total_load` HTCondor's processes
/// (`total_condor`, see [`total_condor_load`]) do not make, never below 0.
pub fn owner_load(total_load: f64, total_condor: f64) -> f64 {
    (total_load - total_condor).max(0.0)
}

/// Whether who gets the owner's load depends on the order of the slots:
/// not when there is none to hand out, nor when one slot takes it all. A
/// caller can then skip [`assign_load`]'s sort (and the inputs it sorts):
/// every slot's owner load is 0, or the one slot's is all of it.
pub fn order_matters(owner: f64, slots: usize) -> bool {
    owner > 0.0 && slots > 1
}

/// Hands `total_load` (the machine's load average, `TotalLoadAvg`) out to
/// the slots. The answer is in the order of `slots`.
pub fn assign_load(total_load: f64, slots: &[SlotLoadInput]) -> Vec<SlotLoad> {
    let mut out: Vec<SlotLoad> = slots
        .iter()
        .map(|s| SlotLoad {
            condor_load: s.condor_load,
            owner_load: 0.0,
        })
        .collect();
    let mut owner = owner_load(total_load, total_condor_load(slots));
    if !order_matters(owner, slots.len()) {
        if let [only] = out.as_mut_slice() {
            only.owner_load = owner;
        }
        return out;
    }
    let mut order: Vec<usize> = (0..slots.len()).collect();
    order.sort_by(|&a, &b| {
        let (x, y) = (&slots[a], &slots[b]);
        x.state
            .cmp(&y.state)
            .then_with(|| {
                if matches!(x.state, LoadState::Claimed | LoadState::Preempting) {
                    x.rank.total_cmp(&y.rank)
                } else {
                    std::cmp::Ordering::Equal
                }
            })
            .then_with(|| (x.id, x.sub_id).cmp(&(y.id, y.sub_id)))
    });

    let Some((&last, rest)) = order.split_last() else {
        return out;
    };
    let mut next = last;
    for &i in rest {
        if owner <= 1.0 {
            next = i;
            break;
        }
        out[i].owner_load = 1.0;
        owner -= 1.0;
    }
    // The next slot takes the rest: under 1.0, or everything still left
    // when it is the last slot.
    out[next].owner_load = owner;
    out
}
