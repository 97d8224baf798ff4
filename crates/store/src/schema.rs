//! The schema and its migrations.
//!
//! The schema version is SQLite's `PRAGMA user_version`: it lives in the
//! database header, so it changes in the same transaction as the tables it
//! describes. `MIGRATIONS[i]` takes a database from version `i` to `i + 1`;
//! each runs in its own transaction at open, so a crash mid-migration leaves
//! the previous version intact. Migrations are append-only: never edit one
//! that has shipped, add the next.
//!
//! `PRAGMA application_id` marks the file as ours, so that pointing the
//! schedd at some other SQLite database is an error rather than a migration
//! that scribbles tables into it.

/// "FCJQ" (ferrocondor job queue) as a big-endian integer.
pub const APPLICATION_ID: i32 = 0x4643_4A51;

/// The version this build writes: the number of migrations.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// Version 1, the layout, and why:
///
/// * A job's ad is its cluster's attributes (`cluster_attrs`) overlaid with
///   its own (`job_attrs`), as HTCondor's cluster and proc ads: the
///   attributes every proc of a submitted cluster shares are written once,
///   so a 1,000-proc cluster costs little more than one job (see the
///   benchmark). A `job_attrs` row with a NULL `expr` deletes, for that job,
///   an attribute its cluster has.
/// * One row per attribute, holding the unparsed expression, so an update
///   of a few attributes writes a few small rows rather than rewriting an
///   ad; names compare case-insensitively (`NOCASE` is ASCII folding, as
///   ClassAd names), and the first spelling is kept.
/// * `WITHOUT ROWID` keeps the rows of one job (and one cluster) together in
///   key order, so reading a job back is one short range scan.
/// * `jobs` says which procs exist: a job whose attributes are all its
///   cluster's has no `job_attrs` row at all.
/// * History is write-once: a whole ad as one text, indexed by job, owner
///   and the time it entered the history.
/// * `counters.next_cluster` only grows, and survives the removal of every
///   job, so a cluster id is never handed out twice.
const V1: &str = "
CREATE TABLE counters (
    name  TEXT PRIMARY KEY NOT NULL,
    value INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO counters (name, value) VALUES ('next_cluster', 1);

CREATE TABLE jobs (
    cluster INTEGER NOT NULL,
    proc    INTEGER NOT NULL,
    PRIMARY KEY (cluster, proc)
) WITHOUT ROWID;

CREATE TABLE cluster_attrs (
    cluster INTEGER NOT NULL,
    name    TEXT NOT NULL COLLATE NOCASE,
    expr    TEXT NOT NULL,
    PRIMARY KEY (cluster, name)
) WITHOUT ROWID;

CREATE TABLE job_attrs (
    cluster INTEGER NOT NULL,
    proc    INTEGER NOT NULL,
    name    TEXT NOT NULL COLLATE NOCASE,
    expr    TEXT,
    PRIMARY KEY (cluster, proc, name)
) WITHOUT ROWID;

CREATE TABLE history (
    seq     INTEGER PRIMARY KEY,
    cluster INTEGER NOT NULL,
    proc    INTEGER NOT NULL,
    owner   TEXT,
    entered INTEGER NOT NULL,
    ad      TEXT NOT NULL
);
CREATE INDEX history_by_job ON history (cluster, proc);
CREATE INDEX history_by_owner ON history (owner, entered);
CREATE INDEX history_by_time ON history (entered);
";

/// Version 2: the jobs of a cluster that leave for the history together
/// (a removal of the cluster, its completions in one pass) share one
/// record of the cluster's attributes, written once (`history_shared`,
/// an ad in new syntax), and each of their history rows names it in
/// `shared` and holds in `ad` only the job's own attributes: a history
/// row is then a few hundred bytes, not the whole ad, which made the
/// removal of a 100,000-job cluster write 300 MB. A row whose `shared` is
/// NULL holds the whole ad, as in version 1. The reader puts the two back
/// together (the job's own over the shared ones), so what it gives is
/// the whole ad as before.
const V2: &str = "
ALTER TABLE history ADD COLUMN shared INTEGER;
CREATE TABLE history_shared (
    id INTEGER PRIMARY KEY,
    ad TEXT NOT NULL
);
";

/// Version 3: late materialization's factories. A factory cluster keeps
/// its submit digest, its item rows (joined by newlines; `rows` says how
/// many, so no rows and one empty row differ), the next ProcId it makes
/// and how many it makes in all, and whether it is paused. Its cluster's
/// attributes (`cluster_attrs`) stay while the factory lasts, also when
/// none of its jobs is in the queue. The row is written in the
/// submission's transaction, and `next_proc` moves in the transaction
/// that adds the jobs it made, so no job is made twice or lost.
const V3: &str = "
CREATE TABLE factories (
    cluster   INTEGER PRIMARY KEY,
    digest    TEXT NOT NULL,
    items     TEXT NOT NULL,
    rows      INTEGER NOT NULL,
    next_proc INTEGER NOT NULL,
    total     INTEGER NOT NULL,
    paused    INTEGER NOT NULL DEFAULT 0
);
";

/// Version 4: the history keeps one index, by job. Every history read
/// is newest first (`ORDER BY seq DESC`), so a read by owner or by time
/// walks the rows from the newest and stops at its page, as
/// condor_history reads its file from the end; the index by owner made
/// SQLite fetch and sort every row of the owner before the first page
/// (200-400 ms for a page of 1,000 out of 100,000), and the two indexes
/// were half the cost of writing a history row (a removed 100,000-job
/// cluster writes 100,000 rows in the transaction that acknowledges the
/// `rm`). The index by job stays: one job's record out of millions is
/// found without a walk.
const V4: &str = "
DROP INDEX history_by_owner;
DROP INDEX history_by_time;
";

/// Version 5: where each owner's records are in the history, as the
/// first and last `seq` of their rows (`history_owners`), so that a read
/// by owner walks, newest first, only the part of the history that holds
/// the owner's records, and a read for an owner with none walks nothing.
/// An owner with 10 old records among 1,000,000 was a walk of every row
/// (`benches/history_owner.rs`); an index by owner would have found them
/// at once too, but it is one more entry to write for every row, and the
/// removal of a big cluster writes 100,000 rows in the transaction that
/// acknowledges the `rm` (`benches/remove.rs`: 9% more log, and slower).
/// This is one row per owner, written once per batch: for each owner of
/// the rows the batch added, its first row (when new) and its last.
/// The rows of an owner that is not a string literal (NULL) are not
/// kept. Pruning the history leaves the bounds wide, never narrow.
const V5: &str = "
CREATE TABLE history_owners (
    owner TEXT PRIMARY KEY NOT NULL,
    first INTEGER NOT NULL,
    last  INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO history_owners (owner, first, last)
    SELECT owner, min(seq), max(seq) FROM history WHERE owner IS NOT NULL GROUP BY owner;
";

/// Every migration, oldest first.
pub const MIGRATIONS: &[&str] = &[V1, V2, V3, V4, V5];
