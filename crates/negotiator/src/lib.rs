//! # negotiator — the central manager's core (being written; issue 6)
//!
//! Pure: takes the collector's ads, the accountant's state, the
//! configuration and `now`; returns a plan of matches. Never touches a
//! socket, a file or the clock.

pub mod accountant;
pub mod analyze;
pub mod autocluster;
pub mod collector;
pub mod cycle;
pub mod groups;
pub mod limits;
pub mod pslot;
pub mod reuse;
