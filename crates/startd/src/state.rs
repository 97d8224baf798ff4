//! Slot states and activities, and the record of a transition between
//! them, named as HTCondor names them.

use std::fmt;

/// A slot's state (HTCondor's "machine state").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum State {
    /// In use by its owner, or not willing to run jobs.
    Owner,
    /// Willing to run jobs, and running none.
    Unclaimed,
    /// Matched by the negotiator to a schedd that has not claimed it yet.
    Matched,
    /// Claimed by a schedd.
    Claimed,
    /// Getting rid of the job of a claim that is being preempted.
    Preempting,
    /// Running backfill work while otherwise idle.
    Backfill,
    /// Being drained, or drained.
    Drained,
}

/// A slot's activity within its state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Activity {
    Idle,
    Benchmarking,
    Busy,
    Suspended,
    Retiring,
    Vacating,
    Killing,
}

impl State {
    pub fn name(self) -> &'static str {
        match self {
            State::Owner => "Owner",
            State::Unclaimed => "Unclaimed",
            State::Matched => "Matched",
            State::Claimed => "Claimed",
            State::Preempting => "Preempting",
            State::Backfill => "Backfill",
            State::Drained => "Drained",
        }
    }

    /// The name as the string value a slot ad publishes, made once: a
    /// slot's every move publishes its state, and allocates nothing for it.
    pub fn value(self) -> classad::Value {
        classad::Value::Str(match self {
            State::Owner => arcstr::literal!("Owner"),
            State::Unclaimed => arcstr::literal!("Unclaimed"),
            State::Matched => arcstr::literal!("Matched"),
            State::Claimed => arcstr::literal!("Claimed"),
            State::Preempting => arcstr::literal!("Preempting"),
            State::Backfill => arcstr::literal!("Backfill"),
            State::Drained => arcstr::literal!("Drained"),
        })
    }
}

impl Activity {
    /// The name as a published string value, made once (see [`State::value`]).
    pub fn value(self) -> classad::Value {
        classad::Value::Str(match self {
            Activity::Idle => arcstr::literal!("Idle"),
            Activity::Benchmarking => arcstr::literal!("Benchmarking"),
            Activity::Busy => arcstr::literal!("Busy"),
            Activity::Suspended => arcstr::literal!("Suspended"),
            Activity::Retiring => arcstr::literal!("Retiring"),
            Activity::Vacating => arcstr::literal!("Vacating"),
            Activity::Killing => arcstr::literal!("Killing"),
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Activity::Idle => "Idle",
            Activity::Benchmarking => "Benchmarking",
            Activity::Busy => "Busy",
            Activity::Suspended => "Suspended",
            Activity::Retiring => "Retiring",
            Activity::Vacating => "Vacating",
            Activity::Killing => "Killing",
        }
    }
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl fmt::Display for Activity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A state and an activity: what `condor_status` shows for a slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Pair(pub State, pub Activity);

/// `TotalTime<State><Activity>` for every pair, indexed by the enums'
/// order: refreshed on every poll, so spelled once here rather than
/// formatted each time.
const TOTAL_TIME: [[&str; 7]; 7] = [
    [
        "TotalTimeOwnerIdle",
        "TotalTimeOwnerBenchmarking",
        "TotalTimeOwnerBusy",
        "TotalTimeOwnerSuspended",
        "TotalTimeOwnerRetiring",
        "TotalTimeOwnerVacating",
        "TotalTimeOwnerKilling",
    ],
    [
        "TotalTimeUnclaimedIdle",
        "TotalTimeUnclaimedBenchmarking",
        "TotalTimeUnclaimedBusy",
        "TotalTimeUnclaimedSuspended",
        "TotalTimeUnclaimedRetiring",
        "TotalTimeUnclaimedVacating",
        "TotalTimeUnclaimedKilling",
    ],
    [
        "TotalTimeMatchedIdle",
        "TotalTimeMatchedBenchmarking",
        "TotalTimeMatchedBusy",
        "TotalTimeMatchedSuspended",
        "TotalTimeMatchedRetiring",
        "TotalTimeMatchedVacating",
        "TotalTimeMatchedKilling",
    ],
    [
        "TotalTimeClaimedIdle",
        "TotalTimeClaimedBenchmarking",
        "TotalTimeClaimedBusy",
        "TotalTimeClaimedSuspended",
        "TotalTimeClaimedRetiring",
        "TotalTimeClaimedVacating",
        "TotalTimeClaimedKilling",
    ],
    [
        "TotalTimePreemptingIdle",
        "TotalTimePreemptingBenchmarking",
        "TotalTimePreemptingBusy",
        "TotalTimePreemptingSuspended",
        "TotalTimePreemptingRetiring",
        "TotalTimePreemptingVacating",
        "TotalTimePreemptingKilling",
    ],
    [
        "TotalTimeBackfillIdle",
        "TotalTimeBackfillBenchmarking",
        "TotalTimeBackfillBusy",
        "TotalTimeBackfillSuspended",
        "TotalTimeBackfillRetiring",
        "TotalTimeBackfillVacating",
        "TotalTimeBackfillKilling",
    ],
    [
        "TotalTimeDrainedIdle",
        "TotalTimeDrainedBenchmarking",
        "TotalTimeDrainedBusy",
        "TotalTimeDrainedSuspended",
        "TotalTimeDrainedRetiring",
        "TotalTimeDrainedVacating",
        "TotalTimeDrainedKilling",
    ],
];

impl Pair {
    /// The attribute that publishes the total time spent in this pair.
    pub fn total_time_attr(self) -> &'static str {
        TOTAL_TIME[self.0 as usize][self.1 as usize]
    }

    /// [`Pair::total_time_attr`] as a name made once (each refresh of a
    /// slot ad writes it; see `Refresher::value_named`).
    pub fn total_time_name(self) -> &'static classad::AttrName {
        static NAMES: std::sync::OnceLock<Vec<Vec<classad::AttrName>>> = std::sync::OnceLock::new();
        let names = NAMES.get_or_init(|| {
            TOTAL_TIME
                .iter()
                .map(|row| row.iter().map(|n| classad::AttrName::new(n)).collect())
                .collect()
        });
        &names[self.0 as usize][self.1 as usize]
    }
}

/// Every state and activity, in the enums' order.
const STATES: [State; 7] = [
    State::Owner,
    State::Unclaimed,
    State::Matched,
    State::Claimed,
    State::Preempting,
    State::Backfill,
    State::Drained,
];
const ACTIVITIES: [Activity; 7] = [
    Activity::Idle,
    Activity::Benchmarking,
    Activity::Busy,
    Activity::Suspended,
    Activity::Retiring,
    Activity::Vacating,
    Activity::Killing,
];

impl Pair {
    /// `State/Activity`, as [`Pair`] displays, made once per pair: a
    /// simulated day records hundreds of thousands of transitions.
    pub fn text(self) -> &'static str {
        static TEXTS: std::sync::OnceLock<Vec<Vec<String>>> = std::sync::OnceLock::new();
        let texts = TEXTS.get_or_init(|| {
            TOTAL_TIME
                .iter()
                .enumerate()
                .map(|(s, row)| {
                    (0..row.len())
                        .map(|a| Pair(STATES[s], ACTIVITIES[a]).to_string())
                        .collect()
                })
                .collect()
        });
        &texts[self.0 as usize][self.1 as usize]
    }
}

impl fmt::Display for Pair {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.0, self.1)
    }
}

/// What made a transition happen.
#[derive(Clone, Debug, PartialEq)]
pub enum Cause {
    /// A policy expression of the slot, and the value it had (printed as
    /// a ClassAd literal: `true`, `undefined`, `42`).
    Expr { name: String, value: String },
    /// Something that happened: a match, a claim, a command, a job exit.
    Event(String),
    /// A timer ran out: `what` says which, with the numbers.
    Timer(String),
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Cause::Expr { name, value } => write!(f, "{name} is {value}"),
            Cause::Event(e) => f.write_str(e),
            Cause::Timer(t) => f.write_str(t),
        }
    }
}

/// One transition of one slot, numbered as in HTCondor's manual
/// (`policy-configuration.rst`, "State and Activity Transitions").
#[derive(Clone, Debug, PartialEq)]
pub struct Transition {
    pub slot: String,
    pub from: Pair,
    pub to: Pair,
    /// The transition's number in the manual (1 to 37).
    pub number: u8,
    pub cause: Cause,
    /// When it happened (epoch seconds).
    pub at: i64,
}

impl fmt::Display for Transition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} -> {} (transition {}): {}",
            self.slot, self.from, self.to, self.number, self.cause
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_pair_has_its_text() {
        for s in STATES {
            for a in ACTIVITIES {
                assert_eq!(Pair(s, a).text(), Pair(s, a).to_string());
                assert_eq!(Pair(s, a).text(), format!("{}/{}", s.name(), a.name()));
            }
        }
    }

    #[test]
    fn each_published_value_is_the_name() {
        for s in STATES {
            assert_eq!(s.value().as_str(), Some(s.name()));
        }
        for a in ACTIVITIES {
            assert_eq!(a.value().as_str(), Some(a.name()));
        }
    }
}
