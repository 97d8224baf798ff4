//! # negotiator — the central manager's core
//!
//! Pure: takes the collector's ads, the accountant's state, the
//! configuration and `now`; returns a plan of matches. Never touches a
//! socket, a file or the clock. Start at [`matchmaker::negotiation_cycle`],
//! the one entry point the pool and the simulator call.

pub mod accountant;
pub mod analyze;
pub mod autocluster;
pub mod autocluster_ids;
pub mod collector;
pub mod cycle;
pub mod defrag;
pub mod groups;
mod lasting;
pub mod limits;
pub mod matchmaker;
pub mod pool_history;
pub mod pslot;
pub mod reuse;
