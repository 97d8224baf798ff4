//! The store itself: opening (pragmas, lock, migrations), submission,
//! updates, removal into the history, and reading back.

use std::borrow::Borrow;
use std::collections::BTreeSet;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use classad::name::same_name;
use classad::{AttrName, ClassAd, Expr, Value};
use rusqlite::types::Value as SqlValue;
use rusqlite::{params, Connection, ErrorCode, OpenFlags, OptionalExtension, TransactionBehavior};

use crate::error::{BadName, Error, Result};
use crate::schema::{APPLICATION_ID, MIGRATIONS, SCHEMA_VERSION};

/// A job's identity in the queue, HTCondor's `cluster.proc`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct JobId {
    pub cluster: u32,
    pub proc: u32,
}

impl JobId {
    pub fn new(cluster: u32, proc: u32) -> JobId {
        JobId { cluster, proc }
    }
}

impl fmt::Display for JobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.cluster, self.proc)
    }
}

/// A queued job as read back from disk: its ad, the job's own attributes
/// chained to its cluster's (which the cluster's jobs share).
#[derive(Clone, Debug)]
pub struct Job {
    pub id: JobId,
    pub ad: ClassAd,
}

/// One change to the queue. A slice of them given to [`Store::apply`] is
/// committed all together or not at all.
#[derive(Clone, Debug)]
pub enum Op {
    /// Sets an attribute of one job (HTCondor's SetAttribute).
    Set {
        job: JobId,
        name: String,
        expr: Expr,
    },
    /// Deletes an attribute of one job; deleting an absent one is no error.
    Delete { job: JobId, name: String },
    /// Takes a job out of the queue and writes its final ad to the history,
    /// as entering the history at `now` (epoch seconds; the caller's clock,
    /// so the simulator and the tests decide what time it is).
    ToHistory { job: JobId, now: i64 },
    /// [`Op::ToHistory`] with the job's final ad given: `ad` is the
    /// stored ad with the batch's changes (the schedd's queue in memory
    /// is the queue on disk), so its history ad is written from it, and
    /// nothing of the job is read back or written only to be deleted. A
    /// chained ad's parent is its cluster's ad. The job's other ops in
    /// the batch are taken to be in `ad` already.
    ToHistoryAs {
        job: JobId,
        now: i64,
        ad: Arc<ClassAd>,
    },
}

impl Op {
    pub fn set(job: JobId, name: &str, expr: Expr) -> Op {
        Op::Set {
            job,
            name: name.to_string(),
            expr,
        }
    }

    pub fn delete(job: JobId, name: &str) -> Op {
        Op::Delete {
            job,
            name: name.to_string(),
        }
    }

    pub fn to_history(job: JobId, now: i64) -> Op {
        Op::ToHistory { job, now }
    }

    pub fn to_history_as(job: JobId, now: i64, ad: Arc<ClassAd>) -> Op {
        Op::ToHistoryAs { job, now, ad }
    }

    /// The job the op is about.
    pub fn job(&self) -> JobId {
        match self {
            Op::Set { job, .. }
            | Op::Delete { job, .. }
            | Op::ToHistory { job, .. }
            | Op::ToHistoryAs { job, .. } => *job,
        }
    }

    fn leaves(&self) -> bool {
        matches!(self, Op::ToHistory { .. } | Op::ToHistoryAs { .. })
    }
}

/// Which history records to read. Every field narrows; the default is all.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HistoryQuery {
    pub cluster: Option<u32>,
    pub proc: Option<u32>,
    /// The job's `Owner` (exact, case-sensitive as user names are).
    pub owner: Option<String>,
    /// The job's `Owner` in any ASCII case, as ClassAd's `==` compares
    /// strings: what a constraint `Owner == "x"` narrows to (see
    /// [`HistoryQuery::narrowed_by`]).
    pub owner_any_case: Option<String>,
    /// Entered the history at or after this time (epoch seconds).
    pub since: Option<i64>,
    /// Entered the history before this time (epoch seconds).
    pub until: Option<i64>,
    /// At most this many records, newest first.
    pub limit: Option<usize>,
}

impl HistoryQuery {
    /// The query narrowed by what a job constraint says of the owner, so
    /// that the store reads only the part of the history that holds the
    /// owner's records (`history_owners`) rather than the caller parsing
    /// every record: a top-level
    /// conjunct `Owner == "x"` (or `"x" == Owner`, `MY.Owner`) keeps the
    /// records whose Owner is `x` in any ASCII case, `Owner =?= "x"`
    /// those whose Owner is exactly `x`. It only narrows: the caller
    /// still evaluates `constraint` on every record it gets. A record
    /// whose Owner is not a string literal (the schedd writes it as one
    /// for every job) has no stored owner, so a narrowed query skips it.
    pub fn narrowed_by(mut self, constraint: &Expr) -> HistoryQuery {
        if self.owner.is_none() && self.owner_any_case.is_none() {
            match owner_in(constraint) {
                Some((owner, true)) => self.owner = Some(owner),
                Some((owner, false)) => self.owner_any_case = Some(owner),
                None => {}
            }
        }
        self
    }
}

/// The owner a constraint requires of every job it selects, and whether
/// exactly (`=?=`) or in any case (`==`): the first top-level conjunct
/// that compares `Owner` with a string literal.
fn owner_in(e: &Expr) -> Option<(String, bool)> {
    use classad::expr::BinOp;
    let is_owner = |e: &Expr| match e {
        Expr::Attr(n) => n.is("Owner"),
        Expr::Select(base, n) => {
            n.is("Owner")
                && matches!(&**base, Expr::Attr(b) if b.special() == classad::name::Special::My)
        }
        _ => false,
    };
    match e {
        Expr::Paren(inner) => owner_in(inner),
        Expr::Binary(BinOp::And, both) => owner_in(&both.0).or_else(|| owner_in(&both.1)),
        Expr::Binary(op @ (BinOp::Eq | BinOp::MetaEq), both) => {
            let (a, b) = (&both.0, &both.1);
            let literal = match (a, b) {
                (Expr::Lit(Value::Str(s)), o) | (o, Expr::Lit(Value::Str(s))) if is_owner(o) => s,
                _ => return None,
            };
            Some((literal.to_string(), *op == BinOp::MetaEq))
        }
        _ => None,
    }
}

/// A job in the history.
#[derive(Clone, Debug)]
pub struct HistoryRecord {
    pub id: JobId,
    /// The ad's `Owner`, when it was a string literal.
    pub owner: Option<String>,
    /// When the job entered the history (the `now` of its `ToHistory`).
    pub entered: i64,
    pub ad: ClassAd,
}

/// A history record as stored: its ad still text (see
/// [`Store::history_page`]).
#[derive(Clone, Debug)]
pub struct HistoryRow {
    /// Its place in the history: later records have larger ones.
    pub seq: i64,
    pub id: JobId,
    pub owner: Option<String>,
    pub entered: i64,
    /// The ad, in new ClassAd syntax.
    pub text: String,
}

impl HistoryRow {
    /// The record with its ad parsed; `path` names the store in the error
    /// of a record that does not parse.
    pub fn parse(self, path: &Path) -> Result<HistoryRecord> {
        let ad = ClassAd::parse(&self.text).map_err(|e| Error::Corrupt {
            path: path.to_path_buf(),
            what: format!("the history ad of job {}", self.id),
            message: e.to_string(),
        })?;
        Ok(HistoryRecord {
            id: self.id,
            owner: self.owner,
            entered: self.entered,
            ad,
        })
    }
}

/// A factory cluster as stored (late materialization): its digest, item
/// rows, the next ProcId it makes, how many in all, whether paused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FactoryRecord {
    pub cluster: u32,
    pub digest: String,
    pub items: Vec<String>,
    pub next_proc: u32,
    pub total: u32,
    pub paused: bool,
}

/// The job queue and its history in one SQLite file. See the crate docs for
/// the guarantees.
pub struct Store {
    conn: Connection,
    path: PathBuf,
    /// The next cluster id `reserve_cluster` hands out. On disk the counter
    /// moves only when a cluster is submitted (in that transaction), so a
    /// reservation costs no disk write; a reservation lost in a crash was
    /// never acknowledged, so handing its id out again is harmless.
    next_cluster: u32,
    /// Ids handed out and not yet submitted: each may be submitted once.
    reserved: BTreeSet<u32>,
}

/// The write-ahead log's size, in pages, at which a commit checkpoints
/// it itself (see [`Store::checkpoint`]).
const WAL_CHECKPOINT_PAGES: i64 = 16_384;

/// The largest cluster id: HTCondor's ids are C `int`s.
const MAX_CLUSTER: u32 = i32::MAX as u32;

/// The stored text of an expression, as HTCondor prints it.
fn unparse(e: &Expr) -> String {
    let mut s = String::new();
    classad::unparse::expr_into(&mut s, e);
    s
}

fn ad_text(ad: &ClassAd) -> String {
    let mut s = String::new();
    classad::unparse::ad_into(&mut s, ad);
    s
}

fn owner_of(ad: &ClassAd) -> Option<String> {
    match ad.get("Owner") {
        Some(Expr::Lit(Value::Str(s))) => Some(s.to_string()),
        _ => None,
    }
}

/// SQLite's "someone else holds the lock" codes.
fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
    )
}

/// The error of a failed step of opening: another holder of the lock is
/// [`Error::Locked`], anything else names the step.
fn open_err(path: &Path, op: &str) -> impl FnOnce(rusqlite::Error) -> Error {
    let path = path.to_path_buf();
    let op = op.to_string();
    move |source| {
        if is_busy(&source) {
            Error::Locked { path }
        } else {
            Error::Sqlite { path, op, source }
        }
    }
}

impl Store {
    /// Opens the queue at `path`, creating it if absent, and brings its
    /// schema up to date. Holds the file exclusively until the store is
    /// dropped: a second `open` of the same file, from any process, is
    /// [`Error::Locked`].
    pub fn open(path: impl AsRef<Path>) -> Result<Store> {
        let path = path.as_ref().to_path_buf();
        let existed = path.exists();
        let sql = |op: &str| open_err(&path, op);
        let conn = Connection::open_with_flags(
            &path,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(sql("opening the job queue"))?;
        // No waiting for a lock: the only other holder can be another
        // process that owns this queue, and it will not let go.
        conn.busy_timeout(Duration::ZERO)
            .map_err(sql("setting the busy timeout"))?;
        // Exclusive before WAL, so the WAL index lives in this process's
        // memory (no -shm file) and no other process can open the queue.
        conn.pragma_update(None, "locking_mode", "EXCLUSIVE")
            .map_err(sql("taking the job queue's lock"))?;
        let mode: String = conn
            .pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))
            .map_err(sql("switching to write-ahead logging"))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(Error::NotAStore {
                path,
                why: format!("it cannot use write-ahead logging (journal mode stayed {mode})"),
            });
        }
        // FULL: the WAL is fsynced at every commit, so a commit that has
        // returned survives a power failure, not only a crash of this
        // process (NORMAL would give only the latter).
        conn.pragma_update(None, "synchronous", "FULL")
            .map_err(sql("setting synchronous=FULL"))?;
        // 16 MiB of page cache (SQLite's default is 2 MiB): a big
        // transaction (a cluster of 100,000 jobs submitted or removed)
        // otherwise spills pages to the log and reads them back again.
        conn.pragma_update(None, "cache_size", -16384)
            .map_err(sql("setting the page cache size"))?;
        // The log is copied into the file (checkpointed) when the schedd
        // has time (`Store::checkpoint`), not by the commit that crosses
        // SQLite's 1,000 pages: that commit's caller waited for the copy
        // and its fsync too (a removal of 100,000 jobs writes 4,600
        // pages). Past 64 MiB the commit checkpoints anyway, so the log
        // stays bounded when no one calls.
        conn.pragma_update(None, "wal_autocheckpoint", WAL_CHECKPOINT_PAGES)
            .map_err(sql("setting the checkpoint threshold"))?;
        conn.set_prepared_statement_cache_capacity(32);

        let mut store = Store {
            conn,
            path: path.clone(),
            next_cluster: 1,
            reserved: BTreeSet::new(),
        };
        store.migrate()?;
        // A write now takes the exclusive lock at once (exclusive mode keeps
        // it), rather than at the first submission, so a second schedd is
        // refused at open.
        store
            .conn
            .execute(
                "UPDATE counters SET value = value WHERE name = 'next_cluster'",
                [],
            )
            .map_err(sql("taking the job queue's lock"))?;
        let next: i64 = store
            .conn
            .query_row(
                "SELECT value FROM counters WHERE name = 'next_cluster'",
                [],
                |r| r.get(0),
            )
            .map_err(sql("reading the next cluster id"))?;
        store.next_cluster = u32::try_from(next)
            .ok()
            .filter(|n| (1..=MAX_CLUSTER + 1).contains(n))
            .ok_or_else(|| Error::Corrupt {
                path: store.path.clone(),
                what: "the next cluster id".into(),
                message: format!("{next} is not a cluster id"),
            })?;
        if !existed {
            store.sync_parent_dir()?;
        }
        Ok(store)
    }

    /// A new file's directory entry must be durable too, or a power failure
    /// could lose the whole queue. (SQLite syncs the directory for the WAL
    /// it creates, but not for the main file.)
    fn sync_parent_dir(&self) -> Result<()> {
        let dir = match self.path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        std::fs::File::open(&dir)
            .and_then(|f| f.sync_all())
            .map_err(|source| Error::Io {
                path: dir,
                op: "syncing the directory of a new job queue".into(),
                source,
            })
    }

    /// Names the path and the step; allocates only on failure, as it sits
    /// on every row read.
    fn err(&self, op: &'static str) -> impl FnOnce(rusqlite::Error) -> Error + '_ {
        move |source| Error::Sqlite {
            path: self.path.clone(),
            op: op.to_string(),
            source,
        }
    }

    /// Applies the migrations this file lacks, each in its own transaction.
    fn migrate(&mut self) -> Result<()> {
        let path = self.path.clone();
        let sql = |op: &str| open_err(&path, op);
        let (version, app) = identity(&self.conn, &path)?;
        if version == 0 {
            let tables: i64 = self
                .conn
                .query_row("SELECT count(*) FROM sqlite_schema", [], |r| r.get(0))
                .map_err(sql("reading the schema"))?;
            if tables > 0 || (app != 0 && app != APPLICATION_ID) {
                return Err(Error::NotAStore {
                    path,
                    why: "it is an SQLite database with tables of its own".into(),
                });
            }
        } else {
            ours(&path, app, version)?;
        }
        if version < 0 {
            return Err(Error::NotAStore {
                path,
                why: format!("its schema version is {version}"),
            });
        }
        for (i, migration) in MIGRATIONS.iter().enumerate().skip(version as usize) {
            let tx = self
                .conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(sql("starting a schema migration"))?;
            tx.execute_batch(migration)
                .map_err(sql("migrating the schema"))?;
            tx.pragma_update(None, "user_version", i as i64 + 1)
                .map_err(sql("recording the schema version"))?;
            tx.pragma_update(None, "application_id", APPLICATION_ID)
                .map_err(sql("recording the application id"))?;
            tx.commit().map_err(sql("committing a schema migration"))?;
        }
        Ok(())
    }

    /// Copies what the write-ahead log holds into the database file
    /// (SQLite's passive checkpoint). Commits are durable without it;
    /// call it when nothing waits (the schedd does at each periodic
    /// pass), so that the commit of a big batch, whose caller waits for
    /// it, does not copy the log too. Returns how many pages the log
    /// held.
    pub fn checkpoint(&mut self) -> Result<i64> {
        self.conn
            .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| r.get::<_, i64>(1))
            .map_err(self.err("checkpointing the write-ahead log"))
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The schema version this build writes.
    pub fn schema_version() -> i64 {
        SCHEMA_VERSION
    }

    /// The id the next `reserve_cluster` will return.
    pub fn next_cluster_id(&self) -> u32 {
        self.next_cluster
    }

    /// Hands out a new cluster id, for the caller to build the cluster's ads
    /// with (`$(Cluster)`) and then pass to [`Store::submit_cluster`]. Ids
    /// only grow, also across restarts; no disk write happens here.
    pub fn reserve_cluster(&mut self) -> Result<u32> {
        let cluster = self.next_cluster;
        if cluster > MAX_CLUSTER {
            return Err(Error::Corrupt {
                path: self.path.clone(),
                what: "the next cluster id".into(),
                message: "every cluster id has been used".into(),
            });
        }
        self.next_cluster = cluster + 1;
        self.reserved.insert(cluster);
        Ok(cluster)
    }

    /// Queues a whole cluster: `procs[i]` becomes job `cluster.i`. One
    /// transaction: when this returns `Ok` every proc with every attribute
    /// is on disk (fsynced); on `Err` (or a crash before return) none is.
    pub fn submit_cluster(&mut self, cluster: u32, procs: &[ClassAd]) -> Result<()> {
        self.submit_procs(cluster, procs)
    }

    /// [`Store::submit_cluster`] of the queue's own (shared) job ads: the
    /// schedd's proc ads chained to one cluster ad are written as they
    /// are, the cluster ad once and each proc's own attributes.
    pub fn submit_shared(&mut self, cluster: u32, procs: &[Arc<ClassAd>]) -> Result<()> {
        self.submit_procs(cluster, procs)
    }

    fn submit_procs<A: Borrow<ClassAd>>(&mut self, cluster: u32, procs: &[A]) -> Result<()> {
        if !self.reserved.contains(&cluster) {
            return Err(Error::NotReserved {
                path: self.path.clone(),
                cluster,
            });
        }
        if procs.is_empty() {
            return Err(Error::EmptyCluster {
                path: self.path.clone(),
                cluster,
            });
        }
        let layout = Layout::of(procs);
        let empty_name = |p: usize| Error::BadAttribute {
            path: self.path.clone(),
            op: "submitting a cluster",
            job: JobId::new(cluster, p as u32),
            why: BadName::Empty,
        };
        if layout.cluster.iter().any(|(n, _)| n.is_empty()) {
            return Err(empty_name(0));
        }

        let op = format!("submitting cluster {cluster}");
        let path = &self.path;
        let sql = |source| Error::Sqlite {
            path: path.clone(),
            op: op.clone(),
            source,
        };
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(sql)?;
        {
            let mut cluster_attr = tx
                .prepare_cached(
                    "INSERT INTO cluster_attrs (cluster, name, expr) VALUES (?1, ?2, ?3)",
                )
                .map_err(sql)?;
            for (name, text) in &layout.cluster {
                cluster_attr
                    .execute(params![cluster, name, text])
                    .map_err(sql)?;
            }
            let mut jobs = Rows::new(&tx, "INSERT INTO jobs (cluster, proc) VALUES ", 2);
            let mut job_attrs = Rows::new(
                &tx,
                "INSERT INTO job_attrs (cluster, proc, name, expr) VALUES ",
                4,
            );
            let cluster_value = SqlValue::Integer(i64::from(cluster));
            for p in 0..procs.len() {
                let proc = SqlValue::Integer(p as i64);
                jobs.push([cluster_value.clone(), proc.clone()])
                    .map_err(sql)?;
                for (name, text) in layout.proc(procs, p) {
                    if name.is_empty() {
                        return Err(empty_name(p));
                    }
                    let text = text.map_or(SqlValue::Null, SqlValue::Text);
                    job_attrs
                        .push([
                            cluster_value.clone(),
                            proc.clone(),
                            SqlValue::Text(name),
                            text,
                        ])
                        .map_err(sql)?;
                }
            }
            jobs.flush().map_err(sql)?;
            job_attrs.flush().map_err(sql)?;
            cluster_used(&tx, cluster).map_err(sql)?;
        }
        tx.commit().map_err(sql)?;
        self.reserved.remove(&cluster);
        Ok(())
    }

    /// Queues a factory cluster (late materialization): its cluster ad,
    /// the factory, and the jobs it made at once (chained to the cluster
    /// ad; may be none), in one transaction, as [`Store::submit_cluster`].
    pub fn submit_factory(
        &mut self,
        cluster_ad: &ClassAd,
        factory: &FactoryRecord,
        procs: &[Arc<ClassAd>],
    ) -> Result<()> {
        let cluster = factory.cluster;
        if !self.reserved.contains(&cluster) {
            return Err(Error::NotReserved {
                path: self.path.clone(),
                cluster,
            });
        }
        let op = format!("submitting factory cluster {cluster}");
        let path = &self.path;
        let sql = |source| Error::Sqlite {
            path: path.clone(),
            op: op.clone(),
            source,
        };
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(sql)?;
        {
            let mut cluster_attr = tx
                .prepare_cached(
                    "INSERT INTO cluster_attrs (cluster, name, expr) VALUES (?1, ?2, ?3)",
                )
                .map_err(sql)?;
            for (name, e) in cluster_ad.iter() {
                if name.as_str().is_empty() {
                    return Err(Error::BadAttribute {
                        path: path.clone(),
                        op: "submitting a factory",
                        job: JobId::new(cluster, 0),
                        why: BadName::Empty,
                    });
                }
                cluster_attr
                    .execute(params![cluster, name.as_str(), unparse(e)])
                    .map_err(sql)?;
            }
            tx.prepare_cached(
                "INSERT INTO factories (cluster, digest, items, rows, next_proc, total, paused) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )
            .map_err(sql)?
            .execute(params![
                cluster,
                factory.digest,
                factory.items.join("\n"),
                factory.items.len() as i64,
                factory.next_proc,
                factory.total,
                factory.paused
            ])
            .map_err(sql)?;
            insert_procs(&tx, path, cluster, procs).map_err(|e| e.into_store(path, &op))?;
            cluster_used(&tx, cluster).map_err(sql)?;
        }
        tx.commit().map_err(sql)?;
        self.reserved.remove(&cluster);
        Ok(())
    }

    /// Jobs a factory made (chained to its cluster ad, which is stored
    /// already), with the factory's next ProcId after them, in one
    /// transaction: a job is made once, whatever crashes when.
    pub fn materialize(
        &mut self,
        cluster: u32,
        procs: &[Arc<ClassAd>],
        next_proc: u32,
    ) -> Result<()> {
        let op = format!("materializing jobs of factory cluster {cluster}");
        let path = &self.path;
        let sql = |source| Error::Sqlite {
            path: path.clone(),
            op: op.clone(),
            source,
        };
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(sql)?;
        let changed = tx
            .prepare_cached("UPDATE factories SET next_proc = ?2 WHERE cluster = ?1")
            .map_err(sql)?
            .execute(params![cluster, next_proc])
            .map_err(sql)?;
        if changed != 1 {
            return Err(Error::Corrupt {
                path: path.clone(),
                what: format!("factory cluster {cluster}"),
                message: "no such factory".into(),
            });
        }
        insert_procs(&tx, path, cluster, procs).map_err(|e| e.into_store(path, &op))?;
        tx.commit().map_err(sql)
    }

    /// Pauses or resumes a factory (JobMaterializePaused).
    pub fn pause_factory(&mut self, cluster: u32, paused: bool) -> Result<()> {
        self.conn
            .prepare_cached("UPDATE factories SET paused = ?2 WHERE cluster = ?1")
            .and_then(|mut st| st.execute(params![cluster, paused]))
            .map(|_| ())
            .map_err(self.err("pausing a factory"))
    }

    /// [`Store::apply`] of `ops` and, in the same transaction, attributes
    /// set in clusters' ads (`(cluster, name, value)`: an edit of a
    /// factory's cluster after its submission, which the jobs it makes
    /// later read).
    pub fn apply_with_cluster_attrs(
        &mut self,
        ops: &[Op],
        cluster_attrs: &[(u32, String, Expr)],
    ) -> Result<()> {
        let path = &self.path;
        let sql = |op: &str| {
            let op = op.to_string();
            move |source| Error::Sqlite {
                path: path.clone(),
                op,
                source,
            }
        };
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(sql("starting an update"))?;
        apply_all(&tx, path, ops)?;
        {
            let mut st = tx
                .prepare_cached(
                    "INSERT INTO cluster_attrs (cluster, name, expr) VALUES (?1, ?2, ?3) \
                     ON CONFLICT (cluster, name) DO UPDATE SET expr = excluded.expr",
                )
                .map_err(sql("editing a cluster ad"))?;
            for (cluster, name, e) in cluster_attrs {
                st.execute(params![cluster, name.as_str(), unparse(e)])
                    .map_err(sql("editing a cluster ad"))?;
            }
        }
        tx.commit().map_err(sql("committing an update"))
    }

    /// Ends a factory (all made and gone, or removed): its row, and its
    /// cluster's attributes when none of its jobs is left.
    pub fn remove_factory(&mut self, cluster: u32) -> Result<()> {
        let path = self.path.clone();
        let sql = |source| Error::Sqlite {
            path: path.clone(),
            op: format!("removing factory cluster {cluster}"),
            source,
        };
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(sql)?;
        tx.execute("DELETE FROM factories WHERE cluster = ?1", params![cluster])
            .map_err(sql)?;
        tx.execute(
            "DELETE FROM cluster_attrs WHERE cluster = ?1 \
             AND NOT EXISTS (SELECT 1 FROM jobs WHERE cluster = ?1)",
            params![cluster],
        )
        .map_err(sql)?;
        tx.commit().map_err(sql)
    }

    /// Every factory, with its cluster's ad: what the schedd reads at
    /// startup.
    pub fn load_factories(&self) -> Result<Vec<(FactoryRecord, ClassAd)>> {
        let op = "reading the factories";
        let mut out = Vec::new();
        let mut st = self
            .conn
            .prepare(
                "SELECT cluster, digest, items, rows, next_proc, total, paused FROM factories \
                 ORDER BY cluster",
            )
            .map_err(self.err(op))?;
        let mut rows = st.query([]).map_err(self.err(op))?;
        while let Some(row) = rows.next().map_err(self.err(op))? {
            let cluster: u32 = row.get(0).map_err(self.err(op))?;
            let items_text: String = row.get(2).map_err(self.err(op))?;
            let n: i64 = row.get(3).map_err(self.err(op))?;
            let items = if n == 0 {
                Vec::new()
            } else {
                items_text.split('\n').map(str::to_string).collect()
            };
            let record = FactoryRecord {
                cluster,
                digest: row.get(1).map_err(self.err(op))?,
                items,
                next_proc: row.get(4).map_err(self.err(op))?,
                total: row.get(5).map_err(self.err(op))?,
                paused: row.get(6).map_err(self.err(op))?,
            };
            let mut ad = ClassAd::new();
            for (name, text) in cluster_texts(&self.conn, cluster).map_err(self.err(op))? {
                let expr = parse_stored(&self.path, &text, || {
                    format!("attribute {name} of cluster {cluster}")
                })?;
                ad.insert(name.as_str(), expr);
            }
            out.push((record, ad));
        }
        Ok(out)
    }

    /// Applies `ops` in order, in one transaction: all of them or, on any
    /// error (a job not in the queue, an empty attribute name, the disk),
    /// none. Batch the changes of one scheduling pass: each call costs one
    /// fsync.
    pub fn apply(&mut self, ops: &[Op]) -> Result<()> {
        let path = &self.path;
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|source| Error::Sqlite {
                path: path.clone(),
                op: "starting an update".into(),
                source,
            })?;
        apply_all(&tx, path, ops)?;
        tx.commit().map_err(|source| Error::Sqlite {
            path: path.clone(),
            op: "committing an update".into(),
            source,
        })
    }

    /// [`Store::apply`] without waiting for the disk: the transaction is
    /// in the write-ahead log when this returns, so a crash of this
    /// process loses nothing, but a power failure or an operating-system
    /// crash may lose the last few (SQLite's `synchronous=NORMAL`). For
    /// what the execute side reports (a job started, exited): losing one
    /// of those means a job runs again, never a job lost. Submissions and
    /// users' requests go through [`Store::apply`].
    pub fn apply_unsynced(&mut self, ops: &[Op]) -> Result<()> {
        let path = self.path.clone();
        let pragma = |conn: &Connection, level: &str| {
            conn.pragma_update(None, "synchronous", level)
                .map_err(|source| Error::Sqlite {
                    path: path.clone(),
                    op: format!("setting synchronous={level}"),
                    source,
                })
        };
        pragma(&self.conn, "NORMAL")?;
        let done = self.apply(ops);
        pragma(&self.conn, "FULL")?;
        done
    }

    /// Sets and deletes attributes of one job, atomically.
    pub fn update_job(&mut self, job: JobId, set: &[(&str, Expr)], delete: &[&str]) -> Result<()> {
        let ops: Vec<Op> = set
            .iter()
            .map(|(n, e)| Op::set(job, n, e.clone()))
            .chain(delete.iter().map(|n| Op::delete(job, n)))
            .collect();
        self.apply(&ops)
    }

    /// Moves jobs from the queue into the history, atomically.
    pub fn move_to_history(&mut self, jobs: &[JobId], now: i64) -> Result<()> {
        let ops: Vec<Op> = jobs.iter().map(|&j| Op::to_history(j, now)).collect();
        self.apply(&ops)
    }

    /// One job's ad, or `None` when it is not in the queue.
    pub fn job(&self, job: JobId) -> Result<Option<ClassAd>> {
        read_job(&self.conn, &self.path, job)
    }

    /// How many jobs are queued.
    pub fn queue_len(&self) -> Result<usize> {
        self.conn
            .query_row("SELECT count(*) FROM jobs", [], |r| r.get::<_, i64>(0))
            .map(|n| n as usize)
            .map_err(self.err("counting the queued jobs"))
    }

    /// Every queued job, in (cluster, proc) order: what the schedd reads at
    /// startup. Each job's ad is its proc ad chained to its cluster's ad
    /// (read once, shared by the cluster's jobs), as the schedd keeps it.
    pub fn load_queue(&self) -> Result<Vec<Job>> {
        let op = "reading the queue";
        let mut clusters: Vec<(u32, ClassAd)> = Vec::new();
        {
            let mut st = self
                .conn
                .prepare("SELECT cluster, name, expr FROM cluster_attrs ORDER BY cluster")
                .map_err(self.err(op))?;
            let mut rows = st.query([]).map_err(self.err(op))?;
            while let Some(row) = rows.next().map_err(self.err(op))? {
                let cluster: u32 = row.get(0).map_err(self.err(op))?;
                let name: String = row.get(1).map_err(self.err(op))?;
                let text: String = row.get(2).map_err(self.err(op))?;
                let expr = parse_stored(&self.path, &text, || {
                    format!("attribute {name} of cluster {cluster}")
                })?;
                if clusters.last().map(|c| c.0) != Some(cluster) {
                    clusters.push((cluster, ClassAd::new()));
                }
                clusters
                    .last_mut()
                    .expect("pushed above")
                    .1
                    .insert(name.as_str(), expr);
            }
        }
        let clusters: Vec<(u32, Arc<ClassAd>)> = clusters
            .into_iter()
            .map(|(c, ad)| (c, Arc::new(ad)))
            .collect();
        let mut jobs: Vec<Job> = Vec::new();
        let mut st = self
            .conn
            .prepare(
                "SELECT j.cluster, j.proc, a.name, a.expr FROM jobs j \
                 LEFT JOIN job_attrs a ON a.cluster = j.cluster AND a.proc = j.proc \
                 ORDER BY j.cluster, j.proc",
            )
            .map_err(self.err(op))?;
        let mut rows = st.query([]).map_err(self.err(op))?;
        let mut next_cluster_ad = 0;
        while let Some(row) = rows.next().map_err(self.err(op))? {
            let id = JobId::new(
                row.get(0).map_err(self.err(op))?,
                row.get(1).map_err(self.err(op))?,
            );
            if jobs.last().map(|j| j.id) != Some(id) {
                // Both queries run in cluster order: walk the clusters along.
                while next_cluster_ad < clusters.len() && clusters[next_cluster_ad].0 < id.cluster {
                    next_cluster_ad += 1;
                }
                let ad = match clusters.get(next_cluster_ad) {
                    Some((c, ad)) if *c == id.cluster => ClassAd::chained_to(Arc::clone(ad)),
                    _ => ClassAd::new(),
                };
                jobs.push(Job { id, ad });
            }
            let name: Option<String> = row.get(2).map_err(self.err(op))?;
            let text: Option<String> = row.get(3).map_err(self.err(op))?;
            let ad = &mut jobs.last_mut().expect("pushed above").ad;
            overlay(&self.path, ad, id, name, text)?;
        }
        for job in &mut jobs {
            job.ad.shrink_to_fit();
        }
        Ok(jobs)
    }

    /// History records matching `q`, newest first.
    pub fn history(&self, q: &HistoryQuery) -> Result<Vec<HistoryRecord>> {
        self.history_rows(q, None)?
            .into_iter()
            .map(|row| row.parse(&self.path))
            .collect()
    }

    /// One page of the history records matching `q`, newest first, as
    /// stored (the ad's text, unparsed): at most `page` of them, older
    /// than the record `before` (a [`HistoryRow::seq`] of the previous
    /// page; `None` starts at the newest). A reader that reads page by
    /// page, and parses and selects between pages, need not hold whatever
    /// guards the store for long.
    pub fn history_page(
        &self,
        q: &HistoryQuery,
        before: Option<i64>,
        page: usize,
    ) -> Result<Vec<HistoryRow>> {
        let q = one_page(q, page);
        self.history_rows(&q, before)
    }

    fn history_rows(&self, q: &HistoryQuery, before: Option<i64>) -> Result<Vec<HistoryRow>> {
        history_rows(&self.conn, &self.path, q, before)
    }

    /// Forgets history records that entered before `before`; returns how
    /// many (HTCondor rotates its history file for the same reason).
    pub fn prune_history(&mut self, before: i64) -> Result<usize> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|source| Error::Sqlite {
                path: self.path.clone(),
                op: "pruning the history".into(),
                source,
            })?;
        let pruned = tx
            .execute("DELETE FROM history WHERE entered < ?1", params![before])
            .and_then(|n| {
                // Shared records no row names any more go too.
                tx.execute(
                    "DELETE FROM history_shared WHERE id NOT IN \
                     (SELECT shared FROM history WHERE shared IS NOT NULL)",
                    [],
                )?;
                // So do the owners with no row left (the others' bounds
                // stay: wider than their rows, never narrower).
                tx.execute(
                    "DELETE FROM history_owners WHERE last < \
                     (SELECT coalesce(min(seq), 9223372036854775807) FROM history)",
                    [],
                )?;
                Ok(n)
            })
            .and_then(|n| tx.commit().map(|_| n));
        pruned.map_err(|source| Error::Sqlite {
            path: self.path.clone(),
            op: "pruning the history".into(),
            source,
        })
    }
}

/// One ad's attributes as stored text, in its order.
type Texts<'a> = Vec<(&'a AttrName, String)>;

/// What a submission writes: the cluster's attributes (stored once) and
/// each proc's own, as text (`None`: the proc deletes the cluster's).
/// A proc's are made as it is written, so a million procs never have all
/// their texts in memory at once.
struct Layout<'a> {
    cluster: Vec<(String, String)>,
    /// For whole ads: every proc's texts, and which the cluster holds.
    whole: Option<(Vec<Texts<'a>>, Shared)>,
}

impl<'a> Layout<'a> {
    fn of<A: Borrow<ClassAd>>(procs: &'a [A]) -> Layout<'a> {
        let first = procs[0].borrow();
        // The schedd's jobs: proc ads chained to one cluster ad. That ad
        // is the cluster's, each proc ad's own attributes its own.
        if let Some(parent) = first.parent() {
            if procs
                .iter()
                .all(|p| p.borrow().parent().is_some_and(|q| Arc::ptr_eq(q, parent)))
            {
                let cluster = parent
                    .iter_inserted()
                    .map(|(n, e)| (n.to_string(), unparse(e)))
                    .collect();
                return Layout {
                    cluster,
                    whole: None,
                };
            }
        }
        // Whole ads: what every proc has with the same text is the
        // cluster's.
        let texts: Vec<Texts<'a>> = procs
            .iter()
            .map(|ad| {
                ad.borrow()
                    .iter_inserted()
                    .map(|(n, e)| (n, unparse(e)))
                    .collect()
            })
            .collect();
        let shared = Shared::find(&texts);
        let cluster = texts[0]
            .iter()
            .enumerate()
            .filter(|(k, _)| shared.common[*k])
            .map(|(_, (n, t))| (n.to_string(), t.clone()))
            .collect();
        Layout {
            cluster,
            whole: Some((texts, shared)),
        }
    }

    /// Proc `p`'s own attributes.
    fn proc<A: Borrow<ClassAd>>(&self, procs: &[A], p: usize) -> Vec<(String, Option<String>)> {
        match &self.whole {
            Some((texts, shared)) => texts[p]
                .iter()
                .enumerate()
                .filter(|(k, (n, _))| !shared.is_common(&texts[0], *k, n))
                .map(|(_, (n, t))| (n.to_string(), Some(t.clone())))
                .collect(),
            None => {
                let ad = procs[p].borrow();
                ad.own()
                    .map(|(n, e)| (n.to_string(), Some(unparse(e))))
                    .chain(ad.hidden().iter().map(|n| (n.to_string(), None)))
                    .collect()
            }
        }
    }
}

/// Which attributes of a cluster's first proc every proc shares, with the
/// same expression text: those are stored once, for the cluster.
struct Shared {
    common: Vec<bool>,
}

impl Shared {
    fn find(texts: &[Vec<(&AttrName, String)>]) -> Shared {
        let first = &texts[0];
        let mut common = vec![true; first.len()];
        for other in &texts[1..] {
            for (k, (name, text)) in first.iter().enumerate() {
                if common[k] {
                    common[k] = lookup(other, k, name).is_some_and(|t| t == text);
                }
            }
        }
        Shared { common }
    }

    /// Whether the attribute at position `k` of a proc, named `name`, is
    /// stored for the cluster.
    fn is_common(&self, first: &[(&AttrName, String)], k: usize, name: &AttrName) -> bool {
        match first.get(k) {
            Some((n, _)) if same_name(n.as_str(), name.as_str()) => self.common[k],
            _ => first
                .iter()
                .position(|(n, _)| same_name(n.as_str(), name.as_str()))
                .is_some_and(|i| self.common[i]),
        }
    }
}

/// The text of `name` in `attrs`, looked for first at position `k`: the
/// procs of one submission list their attributes in the same order.
fn lookup<'a>(attrs: &'a [(&AttrName, String)], k: usize, name: &AttrName) -> Option<&'a String> {
    match attrs.get(k) {
        Some((n, t)) if same_name(n.as_str(), name.as_str()) => Some(t),
        _ => attrs
            .iter()
            .find(|(n, _)| same_name(n.as_str(), name.as_str()))
            .map(|(_, t)| t),
    }
}

fn parse_stored(path: &Path, text: &str, what: impl FnOnce() -> String) -> Result<Expr> {
    classad::parse_expr(text).map_err(|e| Error::Corrupt {
        path: path.to_path_buf(),
        what: what(),
        message: e.to_string(),
    })
}

/// Puts one `job_attrs` row over a job's ad: a value replaces, a NULL
/// deletes the cluster's attribute for this job.
fn overlay(
    path: &Path,
    ad: &mut ClassAd,
    id: JobId,
    name: Option<String>,
    text: Option<String>,
) -> Result<()> {
    let Some(name) = name else {
        return Ok(());
    };
    match text {
        Some(text) => {
            let expr = parse_stored(path, &text, || format!("attribute {name} of job {id}"))?;
            ad.insert(name.as_str(), expr);
        }
        None => {
            ad.remove(&name);
        }
    }
    Ok(())
}

fn job_exists(conn: &Connection, job: JobId) -> rusqlite::Result<bool> {
    conn.prepare_cached("SELECT 1 FROM jobs WHERE cluster = ?1 AND proc = ?2")?
        .query_row(params![job.cluster, job.proc], |_| Ok(()))
        .optional()
        .map(|r| r.is_some())
}

fn read_job(conn: &Connection, path: &Path, job: JobId) -> Result<Option<ClassAd>> {
    let sql = |source| Error::Sqlite {
        path: path.to_path_buf(),
        op: format!("reading job {job}"),
        source,
    };
    if !job_exists(conn, job).map_err(sql)? {
        return Ok(None);
    }
    let mut ad = ClassAd::new();
    let mut st = conn
        .prepare_cached("SELECT name, expr FROM cluster_attrs WHERE cluster = ?1")
        .map_err(sql)?;
    let mut rows = st.query(params![job.cluster]).map_err(sql)?;
    while let Some(row) = rows.next().map_err(sql)? {
        let name: String = row.get(0).map_err(sql)?;
        let text: String = row.get(1).map_err(sql)?;
        let expr = parse_stored(path, &text, || {
            format!("attribute {name} of cluster {}", job.cluster)
        })?;
        ad.insert(name.as_str(), expr);
    }
    let mut st = conn
        .prepare_cached("SELECT name, expr FROM job_attrs WHERE cluster = ?1 AND proc = ?2")
        .map_err(sql)?;
    let mut rows = st.query(params![job.cluster, job.proc]).map_err(sql)?;
    while let Some(row) = rows.next().map_err(sql)? {
        overlay(
            path,
            &mut ad,
            job,
            row.get(0).map_err(sql)?,
            row.get(1).map_err(sql)?,
        )?;
    }
    Ok(Some(ad))
}

/// Applies `ops` inside the caller's transaction. Ops on different jobs
/// commute (a job's rows are its own; its cluster's ad goes only with its
/// last job), so each job's ops are taken together, in their order. A job
/// whose ops end by moving it to the history (a removal, a completion) is
/// moved in bulk with the others: its history ad is made from the stored
/// texts and its last changes, without writing those changes first, and
/// the rows of consecutive procs leave in one statement. Any other job's
/// ops are applied one by one.
fn apply_all(conn: &Connection, path: &Path, ops: &[Op]) -> Result<()> {
    let op = "noting where the history's owners are";
    let last = if ops.iter().any(Op::leaves) {
        Some(last_history_seq(conn).map_err(sql_err(path, op))?)
    } else {
        None
    };
    apply_each(conn, path, ops)?;
    match last {
        Some(last) => note_history_owners(conn, last).map_err(sql_err(path, op)),
        None => Ok(()),
    }
}

/// The `seq` of the newest history row, 0 with none.
fn last_history_seq(conn: &Connection) -> rusqlite::Result<i64> {
    conn.prepare_cached("SELECT coalesce(max(seq), 0) FROM history")?
        .query_row([], |r| r.get(0))
}

/// Notes in `history_owners` the owners of the history rows after
/// `last`: a new owner's first row, every owner's last. Once per batch,
/// in its transaction: a read of the batch's rows (just written, so in
/// the page cache) and a row per owner.
fn note_history_owners(conn: &Connection, last: i64) -> rusqlite::Result<()> {
    let mut seen: std::collections::HashMap<String, (i64, i64)> = Default::default();
    {
        let mut st = conn.prepare_cached(
            "SELECT seq, owner FROM history WHERE seq > ?1 AND owner IS NOT NULL ORDER BY seq",
        )?;
        let mut rows = st.query(params![last])?;
        while let Some(row) = rows.next()? {
            let seq: i64 = row.get(0)?;
            let owner = row.get_ref(1)?.as_str().map_err(|e| {
                rusqlite::Error::FromSqlConversionFailure(1, rusqlite::types::Type::Text, e.into())
            })?;
            match seen.get_mut(owner) {
                Some(bounds) => bounds.1 = seq,
                None => {
                    seen.insert(owner.to_string(), (seq, seq));
                }
            }
        }
    }
    let mut upsert = conn.prepare_cached(
        "INSERT INTO history_owners (owner, first, last) VALUES (?1, ?2, ?3) \
         ON CONFLICT (owner) DO UPDATE SET last = max(last, excluded.last)",
    )?;
    for (owner, (first, last)) in &seen {
        upsert.execute(params![owner, first, last])?;
    }
    Ok(())
}

/// [`apply_all`] but for the owners' bounds.
fn apply_each(conn: &Connection, path: &Path, ops: &[Op]) -> Result<()> {
    if ops.len() < 2 {
        return ops.iter().try_for_each(|op| apply_one(conn, path, op));
    }
    // Each job's ops in their order: one list sorted by job (stably, so
    // in linear time when the caller gave them job by job), a slice a job.
    let mut order: Vec<(JobId, usize)> = ops
        .iter()
        .enumerate()
        .map(|(i, op)| (op.job(), i))
        .collect();
    order.sort_by_key(|&(job, _)| job);
    let flat: Vec<&Op> = order.iter().map(|&(_, i)| &ops[i]).collect();
    let mut leaving: Vec<(JobId, &[&Op])> = Vec::new();
    let mut leaving_as: Vec<(JobId, i64, &Arc<ClassAd>)> = Vec::new();
    let mut start = 0;
    while start < flat.len() {
        let job = order[start].0;
        let end = start + order[start..].iter().take_while(|o| o.0 == job).count();
        let list = &flat[start..end];
        start = end;
        let once = list.iter().filter(|op| op.leaves()).count() == 1;
        match list.last() {
            Some(Op::ToHistory { .. }) if once => leaving.push((job, list)),
            Some(Op::ToHistoryAs { now, ad, .. }) if once => leaving_as.push((job, *now, ad)),
            _ => {
                for op in list {
                    apply_one(conn, path, op)?;
                }
            }
        }
    }
    if !leaving.is_empty() {
        move_to_history(conn, path, &leaving)?;
    }
    if !leaving_as.is_empty() {
        move_ads_to_history(conn, path, &leaving_as)?;
    }
    let mut clusters: Vec<u32> = leaving
        .iter()
        .map(|j| j.0.cluster)
        .chain(leaving_as.iter().map(|j| j.0.cluster))
        .collect();
    clusters.sort_unstable();
    clusters.dedup();
    drop_emptied_clusters(conn, path, &clusters)
}

/// A history row's text of a job's own attributes, as [`history_text`]
/// writes it (in HTCondor's order, each expression as the unparser
/// prints it), written straight from the expressions; and, when `Owner`
/// is among them, what it gives for the row's owner (the string, or
/// `None` when it is not a string literal).
fn own_text<'a>(attrs: &mut [(&'a AttrName, &'a Expr)]) -> (String, Option<Option<String>>) {
    attrs.sort_by(|a, b| classad::name::htcondor_order(a.0.as_str(), b.0.as_str()));
    let mut text = String::with_capacity(8 + attrs.len() * 40);
    text.push_str("[ ");
    let mut owner = None;
    for (i, (n, e)) in attrs.iter().enumerate() {
        if i > 0 {
            text.push_str("; ");
        }
        classad::unparse::name_into(&mut text, n.as_str());
        text.push_str(" = ");
        classad::unparse::expr_into(&mut text, e);
        if n.as_str().eq_ignore_ascii_case("Owner") {
            owner = Some(match e {
                Expr::Lit(Value::Str(s)) => Some(s.to_string()),
                _ => None,
            });
        }
    }
    text.push_str(" ]");
    (text, owner)
}

/// The clusters among `clusters` whose last proc has left: their ad goes
/// with it (the id stays used: the counter never goes back), unless the
/// cluster is a factory that has more to make.
fn drop_emptied_clusters(conn: &Connection, path: &Path, clusters: &[u32]) -> Result<()> {
    for &c in clusters {
        let sql = |source| Error::Sqlite {
            path: path.to_path_buf(),
            op: format!("moving the jobs of cluster {c} to the history"),
            source,
        };
        let others = conn
            .prepare_cached("SELECT 1 FROM jobs WHERE cluster = ?1 LIMIT 1")
            .map_err(sql)?
            .query_row(params![c], |_| Ok(()))
            .optional()
            .map_err(sql)?
            .is_some();
        if !others && !is_factory(conn, c).map_err(sql)? {
            conn.prepare_cached("DELETE FROM cluster_attrs WHERE cluster = ?1")
                .map_err(sql)?
                .execute(params![c])
                .map_err(sql)?;
        }
    }
    Ok(())
}

/// Moves jobs (in id order, each with the time it leaves and its final
/// ad) to the history, as [`move_to_history`] does from the stored rows,
/// with the same records: the jobs of a cluster leaving together share
/// one record of their cluster's ad (and of what every one of them holds
/// alike of its own, a removal's attributes), each row holds the rest of
/// the job's own; a job alone, or one that hides an attribute of its
/// cluster, has its whole ad in its row. The jobs' rows are deleted by
/// range, a run of consecutive procs at a time; a job not in the queue
/// fails the batch.
fn move_ads_to_history(
    conn: &Connection,
    path: &Path,
    leaving: &[(JobId, i64, &Arc<ClassAd>)],
) -> Result<()> {
    const MOVING: &str = "moving a job to the history";
    let sql_for = |job: JobId| {
        move |source| Error::Sqlite {
            path: path.to_path_buf(),
            op: format!("{MOVING} of job {job}"),
            source,
        }
    };
    let mut insert = conn
        .prepare_cached(
            "INSERT INTO history (cluster, proc, owner, entered, ad, shared) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )
        .map_err(sql_for(leaving[0].0))?;
    let mut text = String::new();
    let mut start = 0;
    while start < leaving.len() {
        // The jobs of one cluster.
        let c = leaving[start].0.cluster;
        let end = start
            + leaving[start..]
                .iter()
                .take_while(|j| j.0.cluster == c)
                .count();
        let jobs = &leaving[start..end];
        start = end;
        let first = jobs[0].0;
        // Those chained to the first one's cluster ad, hiding none of it,
        // share a record when two or more leave together.
        let parent = jobs[0].2.parent().filter(|_| jobs.len() > 1);
        let sharing = |ad: &ClassAd| {
            ad.hidden().is_empty()
                && matches!((parent, ad.parent()), (Some(p), Some(q)) if Arc::ptr_eq(p, q))
        };
        // What every sharing job holds alike of its own.
        let mut common: Vec<(String, String)> = Vec::new();
        let mut sharers = jobs.iter().filter(|j| sharing(j.2));
        if let Some((_, _, ad)) = sharers.next() {
            common = ad.own().map(|(n, e)| (n.to_string(), unparse(e))).collect();
        }
        for (_, _, ad) in sharers {
            if common.is_empty() {
                break;
            }
            common.retain(|(name, want)| {
                match ad.own().find(|(n, _)| same_name(n.as_str(), name)) {
                    Some((_, e)) => {
                        text.clear();
                        classad::unparse::expr_into(&mut text, e);
                        text == *want
                    }
                    None => false,
                }
            });
        }
        let in_common = |name: &str| common.iter().any(|(n, _)| same_name(n, name));
        let mut record: Option<(i64, Option<String>)> = None;
        let mut own: Vec<(&AttrName, &Expr)> = Vec::new();
        for &(job, now, ad) in jobs {
            if !sharing(ad) {
                insert
                    .execute(params![
                        job.cluster,
                        job.proc,
                        owner_of(ad),
                        now,
                        ad_text(ad),
                        None::<i64>
                    ])
                    .map_err(sql_for(job))?;
                continue;
            }
            let (id, shared_owner) = match &record {
                Some(r) => r.clone(),
                None => {
                    let mut texts: Vec<(String, String)> = parent
                        .expect("a sharing job has its cluster's ad")
                        .iter_inserted()
                        .map(|(n, e)| (n.to_string(), unparse(e)))
                        .collect();
                    texts.sort_by(|a, b| classad::name::htcondor_order(&a.0, &b.0));
                    let common: Vec<(String, Option<String>)> = common
                        .iter()
                        .map(|(n, t)| (n.clone(), Some(t.clone())))
                        .collect();
                    let (shared, owner) = history_text(path, first, &texts, &common)?;
                    conn.prepare_cached("INSERT INTO history_shared (ad) VALUES (?1)")
                        .map_err(sql_for(job))?
                        .execute(params![shared])
                        .map_err(sql_for(job))?;
                    let r = (conn.last_insert_rowid(), owner);
                    record = Some(r.clone());
                    r
                }
            };
            own.clear();
            own.extend(ad.own().filter(|(n, _)| !in_common(n.as_str())));
            let (row, own_owner) = own_text(&mut own);
            let owner = match own_owner {
                Some(owner) => owner,
                None => shared_owner,
            };
            insert
                .execute(params![job.cluster, job.proc, owner, now, row, id])
                .map_err(sql_for(job))?;
        }
        // The rows of each run of consecutive procs, by range; each job
        // must have been queued.
        let mut k = 0;
        while k < jobs.len() {
            let lo = jobs[k].0.proc;
            let n = jobs[k..]
                .iter()
                .enumerate()
                .take_while(|(i, j)| j.0.proc.checked_sub(lo) == Some(*i as u32))
                .count();
            let hi = jobs[k + n - 1].0.proc;
            let run = &jobs[k..k + n];
            k += n;
            let sql = sql_for(run[0].0);
            let gone = conn
                .prepare_cached("DELETE FROM jobs WHERE cluster = ?1 AND proc BETWEEN ?2 AND ?3")
                .map_err(sql)?
                .execute(params![c, lo, hi])
                .map_err(sql_for(run[0].0))?;
            if gone != n {
                // Which one was not there (the batch is undone anyway).
                let missing = run
                    .iter()
                    .map(|j| j.0)
                    .find(|&j| !job_exists(conn, j).unwrap_or(false))
                    .unwrap_or(run[0].0);
                return Err(Error::NoSuchJob {
                    path: path.to_path_buf(),
                    op: MOVING,
                    job: missing,
                });
            }
            conn.prepare_cached(
                "DELETE FROM job_attrs WHERE cluster = ?1 AND proc BETWEEN ?2 AND ?3",
            )
            .map_err(sql_for(run[0].0))?
            .execute(params![c, lo, hi])
            .map_err(sql_for(run[0].0))?;
        }
    }
    Ok(())
}

/// Moves `leaving` jobs (in id order, each with its ops, the last its
/// `ToHistory`) to the history: one history row each, the rest in bulk.
/// The jobs of a cluster that leave together share one record of their
/// cluster's attributes (`history_shared`); each row holds the job's own.
fn move_to_history(conn: &Connection, path: &Path, leaving: &[(JobId, &[&Op])]) -> Result<()> {
    let sql_for = |job: JobId, what: &'static str| {
        move |source| Error::Sqlite {
            path: path.to_path_buf(),
            op: format!("{what} of job {job}"),
            source,
        }
    };
    const MOVING: &str = "moving a job to the history";
    let what_of = |op: &Op| match op {
        Op::Set { .. } => "setting an attribute",
        Op::Delete { .. } => "deleting an attribute",
        Op::ToHistory { .. } | Op::ToHistoryAs { .. } => MOVING,
    };
    // Runs of consecutive procs of a cluster: read, and deleted, with one
    // statement a run.
    let mut runs: Vec<(u32, u32, u32, usize)> = Vec::new();
    for (i, (job, _)) in leaving.iter().enumerate() {
        match runs.last_mut() {
            Some((c, _, hi, _)) if *c == job.cluster && job.proc == *hi + 1 => *hi = job.proc,
            _ => runs.push((job.cluster, job.proc, job.proc, i)),
        }
    }
    let mut insert = conn
        .prepare_cached(
            "INSERT INTO history (cluster, proc, owner, entered, ad, shared) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )
        .map_err(sql_for(leaving[0].0, MOVING))?;
    // The cluster being moved: its attributes' texts (in HTCondor's
    // order), and its shared history record once written.
    let mut cluster: Option<Leaving> = None;
    for (r, &(c, lo, hi, start)) in runs.iter().enumerate() {
        let first_job = JobId::new(c, lo);
        // Jobs of this cluster leaving in this batch, this run and those
        // after it: a shared record pays only for two or more.
        let together: usize = runs[r..]
            .iter()
            .take_while(|run| run.0 == c)
            .map(|run| (run.2 - run.1 + 1) as usize)
            .sum();
        if cluster.as_ref().map(|k| k.cluster) != Some(c) {
            let texts = cluster_texts(conn, c).map_err(sql_for(first_job, MOVING))?;
            let owner = owner_text(path, first_job, &texts)?;
            cluster = Some(Leaving {
                cluster: c,
                texts,
                record: None,
                owner,
                common: common_changes(&leaving[start..start + together]),
            });
        }
        // Each queued job of the run with its own rows, read as the jobs
        // are moved (a run may be a million procs: never all in memory).
        let mut st = conn
            .prepare_cached(
                "SELECT j.proc, a.name, a.expr FROM jobs j \
                 LEFT JOIN job_attrs a ON a.cluster = j.cluster AND a.proc = j.proc \
                 WHERE j.cluster = ?1 AND j.proc BETWEEN ?2 AND ?3 ORDER BY j.proc",
            )
            .map_err(sql_for(first_job, MOVING))?;
        let mut rows = st
            .query(params![c, lo, hi])
            .map_err(sql_for(first_job, MOVING))?;
        let next = |rows: &mut rusqlite::Rows<'_>| -> Result<Option<StoredRow>> {
            let Some(row) = rows.next().map_err(sql_for(first_job, MOVING))? else {
                return Ok(None);
            };
            Ok(Some((
                row.get(0).map_err(sql_for(first_job, MOVING))?,
                row.get(1).map_err(sql_for(first_job, MOVING))?,
                row.get(2).map_err(sql_for(first_job, MOVING))?,
            )))
        };
        let mut pending = next(&mut rows)?;
        for (job, ops) in &leaving[start..start + (hi - lo + 1) as usize] {
            let job = *job;
            let first = what_of(ops[0]);
            for op in ops.iter() {
                if let Op::Set { name, .. } | Op::Delete { name, .. } = op {
                    if name.is_empty() {
                        return Err(Error::BadAttribute {
                            path: path.to_path_buf(),
                            op: what_of(op),
                            job,
                            why: BadName::Empty,
                        });
                    }
                }
            }
            if pending.as_ref().map(|r| r.0) != Some(job.proc) {
                return Err(Error::NoSuchJob {
                    path: path.to_path_buf(),
                    op: first,
                    job,
                });
            }
            let Leaving {
                texts: shared,
                record,
                owner: cluster_owner,
                common,
                ..
            } = cluster.as_mut().expect("read above");
            // The job's own rows, then its changes in this batch over
            // them; what every job of the cluster leaving with it changes
            // alike (`common`) is left out, as it is the last word on
            // those attributes (it goes in the shared record, or back in
            // below for a job kept whole).
            let in_common = |name: &str| common.iter().any(|(n, _)| same_name(n, name));
            let mut own: Vec<(String, Option<String>)> = Vec::new();
            while let Some((p, name, text)) = pending.take() {
                if p != job.proc {
                    pending = Some((p, name, text));
                    break;
                }
                if let Some(name) = name.filter(|n| !in_common(n)) {
                    own.push((name, text));
                }
                pending = next(&mut rows)?;
            }
            let mut now = 0;
            for op in ops.iter() {
                let (name, text) = match op {
                    Op::Set { name, .. } | Op::Delete { name, .. } if in_common(name) => continue,
                    Op::Set { name, expr, .. } => (name, Some(unparse(expr))),
                    Op::Delete { name, .. } => (name, None),
                    Op::ToHistory { now: n, .. } | Op::ToHistoryAs { now: n, .. } => {
                        now = *n;
                        continue;
                    }
                };
                match own.iter_mut().find(|(n, _)| same_name(n, name)) {
                    Some(slot) => slot.1 = text,
                    None => own.push((name.clone(), text)),
                }
            }
            // A job that deletes one of its cluster's attributes is kept
            // whole (the shared record cannot say that).
            let hides = own
                .iter()
                .any(|(n, t)| t.is_none() && shared.iter().any(|(s, _)| same_name(s, n)));
            if together < 2 || hides {
                own.extend(common.iter().map(|(n, t)| (n.clone(), Some(t.clone()))));
                let (whole, owner) = history_text(path, job, shared, &own)?;
                insert
                    .execute(params![
                        job.cluster,
                        job.proc,
                        owner,
                        now,
                        whole,
                        None::<i64>
                    ])
                    .map_err(sql_for(job, MOVING))?;
                continue;
            }
            let id = match *record {
                Some(id) => id,
                None => {
                    let common: Vec<(String, Option<String>)> = common
                        .iter()
                        .map(|(n, t)| (n.clone(), Some(t.clone())))
                        .collect();
                    let (text, owner) = history_text(path, job, shared, &common)?;
                    conn.prepare_cached("INSERT INTO history_shared (ad) VALUES (?1)")
                        .map_err(sql_for(job, MOVING))?
                        .execute(params![text])
                        .map_err(sql_for(job, MOVING))?;
                    let id = conn.last_insert_rowid();
                    *record = Some(id);
                    // The shared record's Owner is the cluster's, unless
                    // the jobs all changed it.
                    *cluster_owner = owner;
                    id
                }
            };
            own.retain(|(_, t)| t.is_some());
            let (text, own_owner) = history_text(path, job, &[], &own)?;
            let owner = if own.iter().any(|(n, _)| n.eq_ignore_ascii_case("Owner")) {
                own_owner
            } else {
                cluster_owner.clone()
            };
            insert
                .execute(params![job.cluster, job.proc, owner, now, text, id])
                .map_err(sql_for(job, MOVING))?;
        }
        drop(rows);
        drop(st);
        conn.prepare_cached("DELETE FROM job_attrs WHERE cluster = ?1 AND proc BETWEEN ?2 AND ?3")
            .map_err(sql_for(first_job, MOVING))?
            .execute(params![c, lo, hi])
            .map_err(sql_for(first_job, MOVING))?;
        conn.prepare_cached("DELETE FROM jobs WHERE cluster = ?1 AND proc BETWEEN ?2 AND ?3")
            .map_err(sql_for(first_job, MOVING))?
            .execute(params![c, lo, hi])
            .map_err(sql_for(first_job, MOVING))?;
    }
    Ok(())
}

/// Why writing procs failed.
enum InsertError {
    Sql(rusqlite::Error),
    Empty(JobId),
}

impl InsertError {
    fn into_store(self, path: &Path, op: &str) -> Error {
        match self {
            InsertError::Sql(source) => Error::Sqlite {
                path: path.to_path_buf(),
                op: op.to_string(),
                source,
            },
            InsertError::Empty(job) => Error::BadAttribute {
                path: path.to_path_buf(),
                op: "materializing a job",
                job,
                why: BadName::Empty,
            },
        }
    }
}

/// Writes proc ads chained to their (stored) cluster ad: each job's row
/// and its own attributes.
fn insert_procs(
    conn: &Connection,
    _path: &Path,
    cluster: u32,
    procs: &[Arc<ClassAd>],
) -> std::result::Result<(), InsertError> {
    let mut job = conn
        .prepare_cached("INSERT INTO jobs (cluster, proc) VALUES (?1, ?2)")
        .map_err(InsertError::Sql)?;
    let mut job_attr = conn
        .prepare_cached("INSERT INTO job_attrs (cluster, proc, name, expr) VALUES (?1, ?2, ?3, ?4)")
        .map_err(InsertError::Sql)?;
    for ad in procs {
        let proc = match ad.get("ProcId") {
            Some(Expr::Lit(Value::Int(p))) => *p as u32,
            _ => return Err(InsertError::Empty(JobId::new(cluster, 0))),
        };
        job.execute(params![cluster, proc])
            .map_err(InsertError::Sql)?;
        let own = ad
            .own()
            .map(|(n, e)| (n.to_string(), Some(unparse(e))))
            .chain(ad.hidden().iter().map(|n| (n.to_string(), None)));
        for (name, text) in own {
            if name.is_empty() {
                return Err(InsertError::Empty(JobId::new(cluster, proc)));
            }
            job_attr
                .execute(params![cluster, proc, name, text])
                .map_err(InsertError::Sql)?;
        }
    }
    Ok(())
}

/// Whether `cluster` is a factory's (late materialization).
fn is_factory(conn: &Connection, cluster: u32) -> rusqlite::Result<bool> {
    conn.prepare_cached("SELECT 1 FROM factories WHERE cluster = ?1")?
        .query_row(params![cluster], |_| Ok(()))
        .optional()
        .map(|r| r.is_some())
}

/// Cluster ids up to `cluster` are used for good: the counter a restarted
/// schedd hands out new clusters from moves past it, in the submission's
/// transaction.
fn cluster_used(tx: &rusqlite::Transaction<'_>, cluster: u32) -> rusqlite::Result<()> {
    tx.prepare_cached("UPDATE counters SET value = max(value, ?1) WHERE name = 'next_cluster'")?
        .execute(params![i64::from(cluster) + 1])?;
    Ok(())
}

/// How many rows one INSERT of a submission writes.
const ROWS_PER_INSERT: usize = 64;

/// A submission's rows of one table, written many to an INSERT: each
/// statement opens and closes its cursors and checks its parameters, a
/// cost that one row a statement paid 300,000 times for 100,000 jobs.
struct Rows<'t> {
    tx: &'t rusqlite::Transaction<'t>,
    /// `INSERT INTO t (columns) VALUES `.
    head: &'static str,
    /// Columns a row.
    width: usize,
    /// The whole statement of ROWS_PER_INSERT rows, made once.
    full: String,
    values: Vec<SqlValue>,
}

impl<'t> Rows<'t> {
    fn new(tx: &'t rusqlite::Transaction<'t>, head: &'static str, width: usize) -> Rows<'t> {
        Rows {
            tx,
            head,
            width,
            full: Rows::sql(head, width, ROWS_PER_INSERT),
            values: Vec::with_capacity(width * ROWS_PER_INSERT),
        }
    }

    fn sql(head: &str, width: usize, rows: usize) -> String {
        let row = format!("({})", vec!["?"; width].join(","));
        format!("{head}{}", vec![row; rows].join(","))
    }

    fn push<const N: usize>(&mut self, row: [SqlValue; N]) -> rusqlite::Result<()> {
        debug_assert_eq!(N, self.width);
        self.values.extend(row);
        if self.values.len() == self.width * ROWS_PER_INSERT {
            self.flush()?;
        }
        Ok(())
    }

    /// Writes the rows gathered.
    fn flush(&mut self) -> rusqlite::Result<()> {
        let rows = self.values.len() / self.width;
        if rows == 0 {
            return Ok(());
        }
        let mut st = if rows == ROWS_PER_INSERT {
            self.tx.prepare_cached(&self.full)?
        } else {
            self.tx
                .prepare_cached(&Rows::sql(self.head, self.width, rows))?
        };
        for (i, v) in self.values.drain(..).enumerate() {
            st.raw_bind_parameter(i + 1, v)?;
        }
        st.raw_execute()?;
        Ok(())
    }
}

/// A job's row as [`move_to_history`] reads it: its proc, and one of its
/// attributes (none when it has no row of its own), `None` text deleting.
type StoredRow = (u32, Option<String>, Option<String>);

/// The cluster whose jobs [`move_to_history`] is moving.
struct Leaving {
    cluster: u32,
    /// Its attributes' texts, in HTCondor's order.
    texts: Vec<(String, String)>,
    /// Its shared history record, once written.
    record: Option<i64>,
    /// Its `Owner`, when a string (its shared record's, once written).
    owner: Option<String>,
    /// What every job of it leaving in the batch sets alike, last.
    common: Vec<(String, String)>,
}

/// The attributes every one of `jobs` (each with its ops) sets last to
/// the same text: a removal's RemoveReason, JobStatus,
/// EnteredCurrentStatus, ... are the same for every job of a removed
/// cluster. They are stored once, in the jobs' shared history record,
/// not in each job's row. Each op's text is made once here for the first
/// job and compared for the others.
fn common_changes(jobs: &[(JobId, &[&Op])]) -> Vec<(String, String)> {
    /// The op that has the last word on `name` among `ops`.
    fn last<'o>(ops: &[&'o Op], name: &str) -> Option<&'o Op> {
        ops.iter()
            .rev()
            .find(|op| match op {
                Op::Set { name: n, .. } | Op::Delete { name: n, .. } => same_name(n, name),
                Op::ToHistory { .. } | Op::ToHistoryAs { .. } => false,
            })
            .copied()
    }
    let Some(((_, first), rest)) = jobs.split_first() else {
        return Vec::new();
    };
    let mut common: Vec<(String, String)> = Vec::new();
    for op in first.iter() {
        if let Op::Set { name, .. } = op {
            if name.is_empty() || common.iter().any(|(n, _)| same_name(n, name)) {
                continue;
            }
            if let Some(Op::Set { expr, .. }) = last(first, name) {
                common.push((name.clone(), unparse(expr)));
            }
        }
    }
    let mut text = String::new();
    for (_, ops) in rest {
        if common.is_empty() {
            break;
        }
        common.retain(|(name, want)| match last(ops, name) {
            Some(Op::Set { expr, .. }) => {
                text.clear();
                classad::unparse::expr_into(&mut text, expr);
                text == *want
            }
            _ => false,
        });
    }
    common
}

/// The `Owner` of stored texts, when it is a string.
fn owner_text(path: &Path, job: JobId, texts: &[(String, String)]) -> Result<Option<String>> {
    let Some((n, t)) = texts.iter().find(|(n, _)| n.eq_ignore_ascii_case("Owner")) else {
        return Ok(None);
    };
    match parse_stored(path, t, || format!("attribute {n} of job {job}"))? {
        Expr::Lit(Value::Str(s)) => Ok(Some(s.to_string())),
        _ => Ok(None),
    }
}

/// A cluster's stored attributes, in HTCondor's order (the history ad's).
fn cluster_texts(conn: &Connection, cluster: u32) -> rusqlite::Result<Vec<(String, String)>> {
    let mut st = conn.prepare_cached("SELECT name, expr FROM cluster_attrs WHERE cluster = ?1")?;
    let mut rows = st.query(params![cluster])?;
    let mut out: Vec<(String, String)> = Vec::new();
    while let Some(row) = rows.next()? {
        out.push((row.get(0)?, row.get(1)?));
    }
    out.sort_by(|a, b| classad::name::htcondor_order(&a.0, &b.0));
    Ok(out)
}

/// A job's history ad as text, made from its cluster's stored texts
/// (sorted) overlaid by its own (`None` deletes), and its `Owner` when
/// that is a string: what [`ad_text`] and [`owner_of`] give of the ad
/// [`read_job`] reads (the stored texts are the unparser's, which reads
/// back to itself), without parsing every attribute of every job.
fn history_text(
    path: &Path,
    job: JobId,
    cluster: &[(String, String)],
    own: &[(String, Option<String>)],
) -> Result<(String, Option<String>)> {
    let mut attrs: Vec<(&str, &str)> = Vec::with_capacity(cluster.len() + own.len());
    for (n, t) in cluster {
        match own.iter().find(|(o, _)| same_name(o, n)) {
            Some((_, Some(t))) => attrs.push((n, t)),
            Some((_, None)) => {}
            None => attrs.push((n, t)),
        }
    }
    let mut extra: Vec<(&str, &str)> = own
        .iter()
        .filter(|(o, _)| !cluster.iter().any(|(n, _)| same_name(o, n)))
        .filter_map(|(o, t)| Some((o.as_str(), t.as_deref()?)))
        .collect();
    if !extra.is_empty() {
        // Both in order: merged, not sorted again.
        extra.sort_by(|a, b| classad::name::htcondor_order(a.0, b.0));
        let shared = std::mem::take(&mut attrs);
        let (mut a, mut b) = (shared.into_iter().peekable(), extra.into_iter().peekable());
        while let (Some(x), Some(y)) = (a.peek(), b.peek()) {
            if classad::name::htcondor_order(x.0, y.0).is_le() {
                attrs.extend(a.next());
            } else {
                attrs.extend(b.next());
            }
        }
        attrs.extend(a);
        attrs.extend(b);
    }
    let mut text = String::with_capacity(
        attrs
            .iter()
            .map(|(n, t)| n.len() + t.len() + 5)
            .sum::<usize>()
            + 4,
    );
    text.push_str("[ ");
    let mut owner = None;
    for (i, (n, t)) in attrs.iter().enumerate() {
        if i > 0 {
            text.push_str("; ");
        }
        classad::unparse::name_into(&mut text, n);
        text.push_str(" = ");
        text.push_str(t);
        if n.eq_ignore_ascii_case("Owner") {
            let e = parse_stored(path, t, || format!("attribute {n} of job {job}"))?;
            if let Expr::Lit(Value::Str(s)) = e {
                owner = Some(s.to_string());
            }
        }
    }
    text.push_str(" ]");
    Ok((text, owner))
}

fn apply_one(conn: &Connection, path: &Path, op: &Op) -> Result<()> {
    let (job, what) = match op {
        Op::Set { job, .. } => (*job, "setting an attribute"),
        Op::Delete { job, .. } => (*job, "deleting an attribute"),
        Op::ToHistory { job, .. } | Op::ToHistoryAs { job, .. } => {
            (*job, "moving a job to the history")
        }
    };
    let sql = |source| Error::Sqlite {
        path: path.to_path_buf(),
        op: format!("{what} of job {job}"),
        source,
    };
    let missing = || Error::NoSuchJob {
        path: path.to_path_buf(),
        op: what,
        job,
    };
    let check_name = |name: &str| {
        if name.is_empty() {
            Err(Error::BadAttribute {
                path: path.to_path_buf(),
                op: what,
                job,
                why: BadName::Empty,
            })
        } else {
            Ok(())
        }
    };
    match op {
        Op::ToHistoryAs { now, ad, .. } => {
            move_ads_to_history(conn, path, &[(job, *now, ad)])?;
            drop_emptied_clusters(conn, path, &[job.cluster])?;
        }
        Op::Set { name, expr, .. } => {
            check_name(name)?;
            if !job_exists(conn, job).map_err(sql)? {
                return Err(missing());
            }
            conn.prepare_cached(
                "INSERT INTO job_attrs (cluster, proc, name, expr) VALUES (?1, ?2, ?3, ?4) \
                 ON CONFLICT (cluster, proc, name) DO UPDATE SET expr = excluded.expr",
            )
            .map_err(sql)?
            .execute(params![job.cluster, job.proc, name, unparse(expr)])
            .map_err(sql)?;
        }
        Op::Delete { name, .. } => {
            check_name(name)?;
            if !job_exists(conn, job).map_err(sql)? {
                return Err(missing());
            }
            let in_cluster = conn
                .prepare_cached("SELECT 1 FROM cluster_attrs WHERE cluster = ?1 AND name = ?2")
                .map_err(sql)?
                .query_row(params![job.cluster, name], |_| Ok(()))
                .optional()
                .map_err(sql)?
                .is_some();
            if in_cluster {
                // The cluster still has it for the other procs: hide it here.
                conn.prepare_cached(
                    "INSERT INTO job_attrs (cluster, proc, name, expr) VALUES (?1, ?2, ?3, NULL) \
                     ON CONFLICT (cluster, proc, name) DO UPDATE SET expr = NULL",
                )
                .map_err(sql)?
                .execute(params![job.cluster, job.proc, name])
                .map_err(sql)?;
            } else {
                conn.prepare_cached(
                    "DELETE FROM job_attrs WHERE cluster = ?1 AND proc = ?2 AND name = ?3",
                )
                .map_err(sql)?
                .execute(params![job.cluster, job.proc, name])
                .map_err(sql)?;
            }
        }
        Op::ToHistory { now, .. } => {
            let ad = read_job(conn, path, job)?.ok_or_else(missing)?;
            conn.prepare_cached(
                "INSERT INTO history (cluster, proc, owner, entered, ad) VALUES (?1, ?2, ?3, ?4, ?5)",
            )
            .map_err(sql)?
            .execute(params![job.cluster, job.proc, owner_of(&ad), now, ad_text(&ad)])
            .map_err(sql)?;
            conn.prepare_cached("DELETE FROM job_attrs WHERE cluster = ?1 AND proc = ?2")
                .map_err(sql)?
                .execute(params![job.cluster, job.proc])
                .map_err(sql)?;
            conn.prepare_cached("DELETE FROM jobs WHERE cluster = ?1 AND proc = ?2")
                .map_err(sql)?
                .execute(params![job.cluster, job.proc])
                .map_err(sql)?;
            let others = conn
                .prepare_cached("SELECT 1 FROM jobs WHERE cluster = ?1 LIMIT 1")
                .map_err(sql)?
                .query_row(params![job.cluster], |_| Ok(()))
                .optional()
                .map_err(sql)?
                .is_some();
            if !others && !is_factory(conn, job.cluster).map_err(sql)? {
                // The last proc has left: the cluster's ad goes with it (its
                // id stays used: the counter never goes back), unless the
                // cluster is a factory.
                conn.prepare_cached("DELETE FROM cluster_attrs WHERE cluster = ?1")
                    .map_err(sql)?
                    .execute(params![job.cluster])
                    .map_err(sql)?;
            }
        }
    }
    Ok(())
}

fn history_rows(
    conn: &Connection,
    path: &Path,
    q: &HistoryQuery,
    before: Option<i64>,
) -> Result<Vec<HistoryRow>> {
    let op = "reading the history";
    let compact = schema_of(conn).map_err(sql_err(path, op))? >= 2;
    let mut sql = String::from(if compact {
        "SELECT seq, cluster, proc, owner, entered, ad, shared FROM history WHERE 1"
    } else {
        "SELECT seq, cluster, proc, owner, entered, ad, NULL FROM history WHERE 1"
    });
    let mut args: Vec<rusqlite::types::Value> = Vec::new();
    let mut clause = |text: &str, v: rusqlite::types::Value| {
        args.push(v);
        sql.push_str(&format!(" AND {text} ?{}", args.len()));
    };
    if let Some(c) = q.cluster {
        clause("cluster =", i64::from(c).into());
    }
    if let Some(p) = q.proc {
        clause("proc =", i64::from(p).into());
    }
    if let Some(o) = &q.owner {
        clause("owner =", o.clone().into());
    }
    if let Some(o) = &q.owner_any_case {
        clause("owner COLLATE NOCASE =", o.clone().into());
    }
    // Where the owner's rows are: the walk is only that part of the
    // history, and none at all for an owner with no record.
    if q.owner.is_some() || q.owner_any_case.is_some() {
        match owner_bounds(conn, q).map_err(sql_err(path, op))? {
            Some((first, last)) => {
                if let Some(first) = first {
                    clause("seq >=", first.into());
                    clause("seq <=", last.into());
                }
            }
            None => return Ok(Vec::new()),
        }
    }
    if let Some(t) = q.since {
        clause("entered >=", t.into());
    }
    if let Some(t) = q.until {
        clause("entered <", t.into());
    }
    if let Some(s) = before {
        clause("seq <", s.into());
    }
    sql.push_str(" ORDER BY seq DESC");
    if let Some(n) = q.limit {
        sql.push_str(&format!(" LIMIT {}", n.min(i64::MAX as usize)));
    }
    let mut st = conn.prepare(&sql).map_err(sql_err(path, op))?;
    let mut rows = st
        .query(rusqlite::params_from_iter(args))
        .map_err(sql_err(path, op))?;
    let mut out = Vec::new();
    // The shared records these rows name, each read and parsed once.
    let mut shared: std::collections::HashMap<i64, Arc<ClassAd>> = Default::default();
    while let Some(row) = rows.next().map_err(sql_err(path, op))? {
        let id = JobId::new(
            row.get(1).map_err(sql_err(path, op))?,
            row.get(2).map_err(sql_err(path, op))?,
        );
        let mut text: String = row.get(5).map_err(sql_err(path, op))?;
        if let Some(record) = row.get::<_, Option<i64>>(6).map_err(sql_err(path, op))? {
            let base = match shared.get(&record) {
                Some(ad) => Arc::clone(ad),
                None => {
                    let t: String = conn
                        .prepare_cached("SELECT ad FROM history_shared WHERE id = ?1")
                        .map_err(sql_err(path, op))?
                        .query_row(params![record], |r| r.get(0))
                        .map_err(sql_err(path, op))?;
                    let ad = Arc::new(ClassAd::parse(&t).map_err(|e| Error::Corrupt {
                        path: path.to_path_buf(),
                        what: format!("the shared history ad {record}"),
                        message: e.to_string(),
                    })?);
                    shared.insert(record, Arc::clone(&ad));
                    ad
                }
            };
            // The whole ad: the job's own attributes over the shared ones.
            let mut own = ClassAd::parse(&text).map_err(|e| Error::Corrupt {
                path: path.to_path_buf(),
                what: format!("the history ad of job {id}"),
                message: e.to_string(),
            })?;
            own.chain_to(base);
            text = ad_text(&own);
        }
        out.push(HistoryRow {
            seq: row.get(0).map_err(sql_err(path, op))?,
            id,
            owner: row.get(3).map_err(sql_err(path, op))?,
            entered: row.get(4).map_err(sql_err(path, op))?,
            text,
        });
    }
    Ok(out)
}

/// The first and last `seq` of the rows of the owner `q` asks for, from
/// `history_owners`: `Some((None, _))` where the store has no such table
/// (a read-only file of an older schema: every row may be the owner's),
/// `None` where the owner has no row.
fn owner_bounds(
    conn: &Connection,
    q: &HistoryQuery,
) -> rusqlite::Result<Option<(Option<i64>, i64)>> {
    if schema_of(conn)? < 5 {
        return Ok(Some((None, 0)));
    }
    let (sql, owner) = match (&q.owner, &q.owner_any_case) {
        (Some(o), _) => (
            "SELECT min(first), max(last) FROM history_owners WHERE owner = ?1",
            o,
        ),
        (None, Some(o)) => (
            "SELECT min(first), max(last) FROM history_owners WHERE owner = ?1 COLLATE NOCASE",
            o,
        ),
        (None, None) => return Ok(Some((None, 0))),
    };
    let (first, last): (Option<i64>, Option<i64>) = conn
        .prepare_cached(sql)?
        .query_row(params![owner], |r| Ok((r.get(0)?, r.get(1)?)))?;
    Ok(match (first, last) {
        (Some(first), Some(last)) => Some((Some(first), last)),
        _ => None,
    })
}

/// The schema version of the file `conn` reads.
fn schema_of(conn: &Connection) -> rusqlite::Result<i64> {
    conn.query_row("SELECT user_version FROM pragma_user_version", [], |r| {
        r.get(0)
    })
}

/// The failure of a read step on `path`, named.
fn sql_err<'p>(path: &'p Path, op: &'static str) -> impl FnOnce(rusqlite::Error) -> Error + 'p {
    move |source| Error::Sqlite {
        path: path.to_path_buf(),
        op: op.to_string(),
        source,
    }
}

/// `q` limited to one page of `page` records.
fn one_page(q: &HistoryQuery, page: usize) -> HistoryQuery {
    HistoryQuery {
        limit: Some(q.limit.map_or(page, |n| n.min(page))),
        ..q.clone()
    }
}

/// A queue file's schema version and application id.
fn identity(conn: &Connection, path: &Path) -> Result<(i64, i32)> {
    let sql = |op: &str| open_err(path, op);
    let version: i64 = conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .map_err(sql("reading the schema version"))?;
    let app: i32 = conn
        .pragma_query_value(None, "application_id", |r| r.get(0))
        .map_err(sql("reading the application id"))?;
    Ok((version, app))
}

/// Whether a file that holds a schema is one of ours, in a version this
/// build reads.
fn ours(path: &Path, app: i32, version: i64) -> Result<()> {
    if app != APPLICATION_ID {
        return Err(Error::NotAStore {
            path: path.to_path_buf(),
            why: format!("its application id is {app:#x}, not {APPLICATION_ID:#x}"),
        });
    }
    if version > SCHEMA_VERSION {
        return Err(Error::TooNew {
            path: path.to_path_buf(),
            found: version,
            supported: SCHEMA_VERSION,
        });
    }
    Ok(())
}

/// A job queue's history read by someone other than its schedd, while no
/// schedd holds the file (condor_history reads the history file itself,
/// so it works with the pool down). Read-only: it never migrates, never
/// writes, and a running schedd's exclusive lock makes it
/// [`Error::Locked`] (ask the schedd then).
pub struct HistoryFile {
    conn: Connection,
    path: PathBuf,
}

impl HistoryFile {
    /// Opens the queue at `path` for reading its history.
    pub fn open(path: impl AsRef<Path>) -> Result<HistoryFile> {
        let path = path.as_ref().to_path_buf();
        let sql = |op: &str| open_err(&path, op);
        let conn = Connection::open_with_flags(
            &path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(sql("opening the job queue to read its history"))?;
        conn.busy_timeout(Duration::ZERO)
            .map_err(sql("setting the busy timeout"))?;
        let (version, app) = identity(&conn, &path)?;
        ours(&path, app, version)?;
        Ok(HistoryFile { conn, path })
    }

    /// As [`Store::history_page`].
    pub fn history_page(
        &self,
        q: &HistoryQuery,
        before: Option<i64>,
        page: usize,
    ) -> Result<Vec<HistoryRow>> {
        let q = one_page(q, page);
        history_rows(&self.conn, &self.path, &q, before).map_err(|e| match e {
            Error::Sqlite { ref source, .. } if is_busy(source) => Error::Locked {
                path: self.path.clone(),
            },
            e => e,
        })
    }
}
