//! # daemons — the shells that carry out the cores' decisions
//!
//! A pool's four roles, as HTCondor's daemons: the collector
//! ([`collector_role`]), the negotiator ([`negotiator_role`]), the schedd
//! ([`schedd_role`], around [`schedd_service::Schedd`], the job queue kept
//! equal to its store) and the startd ([`execute`], the execute point and
//! its starters). Each owns its state and talks to the others only by
//! [`roles::Message`]s. [`Pool::up`] runs all four in one process (the
//! personal pool), each on a thread of its own, and serves the `wire` API
//! over a Unix-domain socket with hyper; [`Pool::daemon`] runs one, its
//! messages to the others going over their command ports
//! ([`role_transport`], [`local_protocol`]),
//! and [`master`] runs the roles DAEMON_LIST names as processes of their
//! own.
//!
//! **Architecture Invariant:** the daemons decide nothing. Who may act on a
//! job, what a hold or a removal changes, what periodic policy does, what
//! the submit requirements refuse and what the job event log says are the
//! `schedd` crate's answers; what becomes of a claim is `schedd::claims`'
//! and the `startd` engine's; this crate reads the clock, the socket's peer
//! and the disk, feeds them in, and carries the answers out: it stores each
//! change (acknowledged only once the store has it on disk) and then writes
//! the log text it was given.
//!
//! **Architecture Invariant:** nothing is acknowledged to a client before
//! it is on disk, and a change the store refuses is undone in memory too,
//! so the queue in memory is always the queue on disk.
//!
//! **Architecture Invariant:** no lock is shared between roles; a role's
//! state is touched only on its own thread.
//!
//! Start at [`roles`], then [`Pool::up`] and [`schedd_role::ScheddRole`].

mod accounting;
pub mod admin;
pub mod claim_sessions;
pub mod collector_role;
pub mod command_port;
pub mod defrag_role;
mod event_logs;
pub mod execute;
pub mod file_transfer;
mod identity;
pub mod kbdd;
mod leftovers;
pub mod local_protocol;
pub mod master;
pub mod negotiator_role;
mod peer_user;
pub mod pool_history;
mod qmgmt;
pub mod role_transport;
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
