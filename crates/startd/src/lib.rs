//! # startd — the execute point's policy engine
//!
//! How a machine's owner decides when remote jobs may start, are
//! suspended, resumed, vacated or killed, as HTCondor's manual describes it
//! (`policy-configuration.rst`, `startd-policy-v6.8.txt`): the machine's
//! resources divided into slots, each slot's state and activity, the
//! numbered transitions between them, and the slot ads the startd
//! publishes.
//!
//! **Architecture invariant:** this crate is pure. Its inputs are the
//! configuration, the host's readings, events and `now`; its outputs are
//! slot ads and a list of actions for the daemon to carry out (start a
//! starter, suspend a job, send a signal, run a hook). It never reads the
//! clock, the machine or a socket, and never runs a program.
//!
//! Start reading at `engine` (the state machine: `Startd::tick` and
//! `Startd::handle`), then `resources` and `layout` (what the slots are).

pub mod carve;
pub mod engine;
mod grants;
pub mod layout;
pub mod loadavg;
pub mod policy;
pub mod publish;
mod quiet;
pub mod resources;
pub mod slot;
pub mod state;
pub mod vm_host;

#[cfg(test)]
mod test_support;

pub use engine::{
    Action, ClaimRequest, DrainFigures, DrainHow, Event, Readings, Ready, Refusal, SetupError,
    ShutdownHow, Startd,
};
pub use publish::{AdsEpoch, MachineInfo};
pub use slot::SlotResources;
pub use state::{Activity, Cause, Pair, State, Transition};
