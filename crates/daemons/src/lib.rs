//! # daemons — the shells that carry out the cores' decisions
//!
//! Today: the personal pool's access point. [`Pool::up`] opens the job
//! queue (the `store` crate, under a state directory), restores it into the
//! pure `schedd::JobQueue`, and serves the `wire` API over a Unix-domain
//! socket with hyper, until SIGTERM, SIGINT or a shutdown request.
//!
//! **Architecture Invariant:** the daemons decide nothing. Who may act on a
//! job, what a hold or a removal changes, what periodic policy does, what
//! the submit requirements refuse and what the job event log says are the
//! `schedd` crate's answers; this crate reads the clock, the socket's peer
//! and the disk, feeds them in, and carries the answers out: it stores each
//! change (acknowledged only once the store has it on disk) and then writes
//! the log text it was given.
//!
//! **Architecture Invariant:** nothing is acknowledged to a client before
//! it is on disk, and a change the store refuses is undone in memory too,
//! so the queue in memory is always the queue on disk.
//!
//! Start at [`Pool::up`] and [`schedd_service::Schedd`].

mod accounting;
pub mod admin;
pub mod collector_role;
mod event_logs;
pub mod execute;
mod identity;
mod leftovers;
pub mod local_protocol;
mod local_transport;
pub mod master;
pub mod negotiator_role;
pub mod roles;
pub mod schedd_role;
pub mod schedd_service;
mod server;
mod statedir;

pub use admin::Reloaded;
pub use execute::{NodeConfig, StartdRole};
pub use schedd_service::{ApiError, PoolConfig, Schedd};
pub use server::{set_memory_release, Error, Pool};

/// The job queue's file inside a state directory.
pub const QUEUE_FILE: &str = "queue.db";
