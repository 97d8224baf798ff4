//! What can go wrong, in words a person can act on: every error names the
//! database file and what the store was doing.

use std::fmt;
use std::path::PathBuf;

use crate::JobId;

/// The store's errors. Whatever the error, the operation that returned it
/// changed nothing on disk: each public operation is one transaction.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// SQLite refused or failed (disk full, I/O error, a damaged file, ...).
    #[error("{}: {op}: {source}", .path.display())]
    Sqlite {
        path: PathBuf,
        /// What the store was doing, e.g. "submitting cluster 12".
        op: String,
        #[source]
        source: rusqlite::Error,
    },
    /// A file-system operation outside SQLite failed.
    #[error("{}: {op}: {source}", .path.display())]
    Io {
        path: PathBuf,
        op: String,
        #[source]
        source: std::io::Error,
    },
    /// Another process (a second schedd?) holds the queue open. Two writers
    /// on one queue would each believe their in-memory copy is the truth.
    #[error("{}: the job queue is in use by another process", .path.display())]
    Locked { path: PathBuf },
    /// The file was written by a newer ferrocondor, whose schema this one
    /// does not know; reading it could misread jobs, so we refuse.
    #[error(
        "{}: the job queue has schema version {found}, newer than this ferrocondor understands \
         (up to {supported}); run the newer ferrocondor or restore an older queue",
        .path.display()
    )]
    TooNew {
        path: PathBuf,
        found: i64,
        supported: i64,
    },
    /// The file is an SQLite database, but not a ferrocondor job queue.
    #[error("{}: not a ferrocondor job queue ({why})", .path.display())]
    NotAStore { path: PathBuf, why: String },
    /// An update or removal named a job that is not in the queue.
    #[error("{}: {op}: job {job} is not in the queue", .path.display())]
    NoSuchJob {
        path: PathBuf,
        op: &'static str,
        job: JobId,
    },
    /// `submit_cluster` was given a cluster id that `reserve_cluster` did not
    /// hand out (or that was already submitted).
    #[error(
        "{}: submitting cluster {cluster}: the cluster id was not reserved by this store \
         (or was already submitted)",
        .path.display()
    )]
    NotReserved { path: PathBuf, cluster: u32 },
    /// A cluster must have at least one proc.
    #[error("{}: submitting cluster {cluster}: a cluster needs at least one proc", .path.display())]
    EmptyCluster { path: PathBuf, cluster: u32 },
    /// An attribute name that no ClassAd can hold.
    #[error("{}: {op}: job {job}: {why}", .path.display())]
    BadAttribute {
        path: PathBuf,
        op: &'static str,
        job: JobId,
        why: BadName,
    },
    /// Text the store wrote earlier no longer parses: the file was changed
    /// behind the store's back, or damaged.
    #[error("{}: {what} does not parse: {message}", .path.display())]
    Corrupt {
        path: PathBuf,
        what: String,
        message: String,
    },
}

/// Why an attribute name was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BadName {
    Empty,
}

impl fmt::Display for BadName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BadName::Empty => f.write_str("an attribute name must not be empty"),
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
