//! # store — the job queue and its history on disk (SQLite), crash-safe
//!
//! The schedd's memory of every job: a durable job queue (jobs named by
//! HTCondor's `cluster.proc`, each a ClassAd), the history that jobs move
//! into when they leave the queue, and the cluster-id counter. It is an I/O
//! crate: it owns one SQLite file and nothing else. It knows ClassAds as
//! text to keep, not as policy: it never evaluates an expression, never
//! reads the clock (times are arguments), and knows no job state machine;
//! those are the pure `schedd` crate's. It must never acknowledge what is
//! not on disk, and never leave half of anything there.
//!
//! Start at [`Store`]: [`Store::open`], then [`Store::reserve_cluster`] and
//! [`Store::submit_cluster`] to queue, [`Store::apply`] to change jobs and
//! move them into the history, [`Store::load_queue`] at startup and
//! [`Store::history`] to look back. The layout and its reasons are in
//! `schema.rs`.
//!
//! ## Guarantees
//!
//! * **Acknowledged means on disk.** Every public operation that writes is
//!   one SQLite transaction in WAL mode with `synchronous=FULL`: the WAL is
//!   fsynced before the commit returns, so when `submit_cluster` or `apply`
//!   returns `Ok`, the change survives a crash of the process and a power
//!   failure (on a disk that honours fsync).
//! * **All or nothing.** A cluster is submitted with all its procs and all
//!   their attributes, or not at all; a batch of [`Op`]s applies whole or
//!   not at all. An error (bad input, a job not in the queue, a full disk)
//!   rolls the transaction back and changes nothing. `tests/crash.rs` kills
//!   a writer with SIGKILL 50 times and checks this.
//! * **Ids are never reused.** The next cluster id only grows, on disk,
//!   in the same transaction as the submission, also when every job has left.
//! * **One owner.** The file is locked exclusively while a [`Store`] holds
//!   it; a second open, from any process, is [`Error::Locked`].
//! * **Versioned.** The schema version is `PRAGMA user_version`; migrations
//!   run at open, each in its own transaction; a file from a newer
//!   ferrocondor is [`Error::TooNew`], never read.

mod error;
mod queue;
mod schema;

pub use error::{BadName, Error, Result};
pub use queue::{
    FactoryRecord, HistoryFile, HistoryQuery, HistoryRecord, HistoryRow, Job, JobId, Op, Store,
};
pub use schema::SCHEMA_VERSION;
