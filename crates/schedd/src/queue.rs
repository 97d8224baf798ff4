//! The job queue: clusters of procs, each a job ad, and the state machine
//! that moves jobs between HTCondor's statuses as things happen to them.
//!
//! ```text
//!              submit (hold = true → Held)
//!                 │
//!                 ▼      matched + started       suspended
//!   ┌──────────► Idle ─────────────────► Running ◄────────► Suspended
//!   │  evicted,   ▲ ▲ requeued              │  │ output transfer  │
//!   │  released   │ │ (OnExitRemove false)  │  ▼ begins           │
//!   │             │ └───────────────── Transferring Output          │
//!   │             │                         │  exited (any active)  │
//!   │           Held ◄── held (any but Removed/Completed) ──────────┘
//!   │                                       ▼
//!   └─────────────────────────────── Completed / Removed
//! ```
//!
//! Every change returns a [`Change`]: the job, the status it left and the
//! one it entered, the job event log entry to write, the attributes that
//! changed (so the store can persist just those), and whether the job must
//! be taken off its machine. The queue never acts: the daemon writes the
//! log, persists, and kills shadows.
//!
//! The attributes follow HTCondor's schedd and shadow: `EnteredCurrentStatus`
//! and `LastJobStatus` on every status change; `JobStartDate` (first run),
//! `JobCurrentStartDate`, `NumShadowStarts`/`JobRunCount`, `NumJobStarts`
//! when a job starts; `RemoteWallClockTime` and `CumulativeSlotTime` grow by
//! the run's length whenever a run ends (evicted, held, removed, exited),
//! `CommittedTime` only when the run's work is kept (exit, checkpoint);
//! `CumulativeSuspensionTime` grows when a suspension ends; hold reasons
//! move to `LastHoldReason*` on release.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use classad::{AttrName, ClassAd, Env, Expr, Value};

use crate::authz::{self, Refusal, SuperUsers};
use crate::index::{self, Candidates, JobIndex, JobKey, StatusCounts, Terms};
use crate::job::names::{self, Name};
use crate::job::{attr, HoldCode, JobId, JobStatus};
use crate::policy::{self, ExitDecision, PolicyAction, SystemPolicy};
use crate::submit_policy::{SubmitPolicy, SubmitRefused};
use crate::userlog::{EndedBy, ExitHow, LogEvent, Rusage, Usage};

/// What an execute point reported about one run: CPU used, bytes moved by
/// file transfer, and the resources table for the event log.
#[derive(Clone, Debug, Default)]
pub struct RunReport {
    pub remote_user_cpu: i64,
    pub remote_sys_cpu: i64,
    pub bytes_sent: f64,
    pub bytes_received: f64,
    pub resources: Option<ClassAd>,
    /// The largest memory the job's processes held, KiB, as the starter
    /// measured it: the job's `ImageSize` and `ResidentSetSize` become at
    /// least these (its `MemoryUsage` is computed from them).
    pub image_size_kib: Option<i64>,
    pub resident_set_size_kib: Option<i64>,
}

impl PartialEq for RunReport {
    fn eq(&self, o: &RunReport) -> bool {
        self.remote_user_cpu == o.remote_user_cpu
            && self.remote_sys_cpu == o.remote_sys_cpu
            && self.bytes_sent == o.bytes_sent
            && self.bytes_received == o.bytes_received
            && crate::userlog::same_ad(&self.resources, &o.resources)
            && self.image_size_kib == o.image_size_kib
            && self.resident_set_size_kib == o.resident_set_size_kib
    }
}

/// Something that happened to a job.
#[derive(Clone, Debug, PartialEq)]
pub enum JobEvent {
    /// The negotiator matched the job to a slot (no status change).
    Matched,
    /// The job began running on `slot` of the startd at `host`, on the
    /// claim `claim` (kept in the job while it runs, for reconnecting).
    Started {
        host: String,
        slot: String,
        claim: Option<String>,
    },
    /// The access point lost word of the running job's execute point
    /// (022); it runs on there as far as anyone knows.
    Disconnected {
        reason: String,
        startd: String,
        address: String,
    },
    /// Word of the running job came back (023): after a disconnection,
    /// or a restart of the access point.
    Reconnected {
        startd: String,
        address: String,
    },
    /// The running job could not be reconnected to (024): its lease
    /// expired, or its execute point no longer has it. It is idle again.
    ReconnectFailed {
        reason: String,
        startd: String,
    },
    /// The startd suspended the job.
    Suspended {
        num_pids: i64,
    },
    /// The startd resumed it.
    Unsuspended,
    /// The job left its machine unfinished (preempted, vacated, claim
    /// lost) and is idle again.
    Evicted {
        checkpointed: bool,
        reason: Option<String>,
        report: RunReport,
    },
    /// The job's process ended and it began sending its output back.
    TransferOutputStarted,
    /// The job's process ended (and its output, if any, is back): the exit
    /// policy decides whether it completes, runs again, is held or removed.
    Exited {
        how: ExitHow,
        report: RunReport,
    },
    /// Something put the job on hold (the startd's `WANT_HOLD`, a shadow
    /// or starter error, a tool).
    Held {
        reason: String,
        code: HoldCode,
        subcode: i64,
    },
    Released {
        reason: String,
    },
    Removed {
        reason: String,
    },
}

impl JobEvent {
    fn name(&self) -> &'static str {
        match self {
            JobEvent::Matched => "matched",
            JobEvent::Started { .. } => "started",
            JobEvent::Disconnected { .. } => "disconnected",
            JobEvent::Reconnected { .. } => "reconnected",
            JobEvent::ReconnectFailed { .. } => "reconnect failed",
            JobEvent::Suspended { .. } => "suspended",
            JobEvent::Unsuspended => "unsuspended",
            JobEvent::Evicted { .. } => "evicted",
            JobEvent::TransferOutputStarted => "transferring output",
            JobEvent::Exited { .. } => "exited",
            JobEvent::Held { .. } => "held",
            JobEvent::Released { .. } => "released",
            JobEvent::Removed { .. } => "removed",
        }
    }
}

/// What a user asks of a job with a tool (`condor_hold`, `condor_release`,
/// `condor_rm`). `None` reasons become HTCondor's `via condor_hold (by
/// user alice)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UserAction {
    Hold {
        reason: Option<String>,
        subcode: i64,
    },
    Release {
        reason: Option<String>,
    },
    Remove {
        reason: Option<String>,
    },
}

/// One change to one job.
#[derive(Clone, Debug, PartialEq)]
pub struct Change {
    pub job: JobId,
    /// The status before; `None` for a job just submitted.
    pub from: Option<JobStatus>,
    pub to: JobStatus,
    /// The entry for the job's event log, if this change writes one.
    pub log: Option<LogEvent>,
    /// The attributes set or deleted, in the order they changed (none for
    /// a submission: the whole job is new).
    pub attributes: Vec<String>,
    /// The job is running (or suspended, or transferring output) and must
    /// be taken off its machine.
    pub stop: bool,
}

/// Why the queue refused an event or a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum QueueError {
    NoSuchJob(JobId),
    /// The event makes no sense in the job's status (a release of a job
    /// that is not held).
    WrongStatus {
        job: JobId,
        status: JobStatus,
        event: &'static str,
    },
    NotPermitted(Refusal),
}

impl fmt::Display for QueueError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            QueueError::NoSuchJob(id) => write!(f, "job {id} is not in the queue"),
            QueueError::WrongStatus { job, status, event } => write!(
                f,
                "job {job} cannot be {event}: it is {}",
                status.name().to_ascii_lowercase()
            ),
            QueueError::NotPermitted(r) => r.fmt(f),
        }
    }
}

impl std::error::Error for QueueError {}

/// A successful submission.
#[derive(Clone, Debug, PartialEq)]
pub struct Submitted {
    pub cluster: i64,
    pub jobs: Vec<JobId>,
    /// One per job: the submit event (and its status).
    pub changes: Vec<Change>,
    /// The last submit warning that failed, if any (HTCondor reports one).
    pub warning: Option<String>,
    /// Transform statements that were skipped, with why (for the
    /// schedd's log; the jobs were queued without them).
    pub notes: Vec<String>,
}

/// The schedd's job queue.
///
/// Each job ad is shared (`Arc`), so a [`JobQueue::snapshot`] costs one
/// reference count per job and copies no ad; an edit copies the one ad it
/// changes, and only while a snapshot still holds it (`Arc::make_mut`).
/// Cloning the queue is as cheap. That lets the daemon answer queries
/// from a snapshot, away from the lock every other request needs.
///
/// It also keeps the index and the counters of its jobs (`index`): every
/// change to a job goes through the queue, which files the job again.
#[derive(Clone, Debug, Default)]
pub struct JobQueue {
    jobs: BTreeMap<JobId, Queued>,
    index: JobIndex,
    /// The next cluster id to hand out.
    next_cluster: i64,
    /// The local zone (seconds east of UTC) for policy expressions that
    /// format times.
    pub utc_offset: i32,
}

/// A job in the queue: its ad, and where the index files it (what
/// [`JobKey::of`] its ad says, kept so that a change to the job need not
/// read it again: every change to an ad goes through the queue).
#[derive(Clone, Debug)]
struct Queued {
    ad: Arc<ClassAd>,
    key: JobKey,
}

/// What a submission's jobs are chained to.
enum Parent {
    /// Nothing: whole job ads.
    None,
    /// A cluster ad submitted with them.
    New(ClassAd),
    /// A factory's cluster ad, already shared.
    Existing(Arc<ClassAd>),
}

/// About how many attributes a job's run writes into its ad (matched,
/// started, ended): room for them is made at once.
const RUN_ATTRIBUTES: usize = 24;

/// Edits one job ad and remembers what it touched.
struct Edit<'a> {
    ad: &'a mut ClassAd,
    /// The names set or deleted, each once, in the order they changed
    /// (spelled out as the change's `attributes` at the end), and their
    /// bits (`Name::bit`): which are among them.
    touched: Vec<&'static Name>,
    touched_bits: u64,
}

impl<'a> Edit<'a> {
    fn new(ad: &'a mut ClassAd) -> Edit<'a> {
        Edit {
            ad,
            touched: Vec::new(),
            touched_bits: 0,
        }
    }
}

impl Edit<'_> {
    // Names made once (`names`): the ad finds them by their hash and
    // their interned text, and the set of those touched is a word, where
    // a name's text was hashed, interned, copied and searched for in a
    // list at every write.
    fn touch(&mut self, name: &'static Name) {
        if self.touched_bits & name.bit == 0 {
            self.touched_bits |= name.bit;
            self.touched.push(name);
        }
    }
    fn set(&mut self, name: &'static Name, v: impl Into<Value>) {
        self.ad
            .insert(AttrName::clone(name), Expr::from_value(v.into()));
        self.touch(name);
    }
    fn remove(&mut self, name: &'static Name) {
        // By the name made once: a name the job does not have (ExitSignal
        // at an exit by code) costs one lookup by its hash.
        if self.ad.remove_name(name).is_some() {
            self.touch(name);
        }
    }
    fn int(&self, name: &AttrName) -> Option<i64> {
        literal_named(self.ad, name).and_then(|v| match v {
            Value::Int(i) => Some(i),
            Value::Real(r) => Some(r as i64),
            Value::Bool(b) => Some(b as i64),
            _ => None,
        })
    }
    fn string(&self, name: &AttrName) -> Option<String> {
        literal_named(self.ad, name).and_then(|v| v.as_str().map(str::to_string))
    }
    fn number(&self, name: &AttrName) -> Option<f64> {
        literal_named(self.ad, name).and_then(|v| v.as_number())
    }
    fn increment(&mut self, name: &'static Name) -> i64 {
        let n = self.int(name).unwrap_or(0) + 1;
        self.set(name, n);
        n
    }
    /// Adds `by` seconds to a time total, keeping its type: HTCondor keeps
    /// `RemoteWallClockTime` as a real and the slot times as integers.
    fn add_time(&mut self, name: &'static Name, by: i64) {
        match literal_named(self.ad, name) {
            Some(Value::Real(r)) => self.set(name, r + by as f64),
            Some(Value::Int(i)) => self.set(name, i + by),
            _ => self.set(name, by as f64),
        }
    }
    fn status(&self) -> JobStatus {
        self.int(&names::JOB_STATUS)
            .and_then(JobStatus::from_number)
            .unwrap_or(JobStatus::Idle)
    }
    fn set_status(&mut self, to: JobStatus, now: i64) {
        let from = self.status();
        self.set(&names::LAST_JOB_STATUS, from.number());
        self.set(&names::JOB_STATUS, to.number());
        self.set(&names::ENTERED_CURRENT_STATUS, now);
    }
    /// The attributes touched, as a [`Change`] lists them.
    fn attributes(&self) -> Vec<String> {
        self.touched
            .iter()
            .map(|n| n.as_str().to_string())
            .collect()
    }
}

/// Whole job ads of one cluster split as HTCondor's client splits them
/// for the schedd: the cluster ad holds the attributes of the first job
/// that every job has with the same text (never `ProcId`), and each job's
/// proc ad the rest of its own. [`JobQueue::submit_cluster`] takes them.
pub fn split_cluster(ads: Vec<ClassAd>) -> (ClassAd, Vec<ClassAd>) {
    let Some(first) = ads.first() else {
        return (ClassAd::new(), ads);
    };
    let text = classad::unparse::expr_to_string;
    let mut common: Vec<(classad::AttrName, String, bool)> = first
        .iter_inserted()
        .filter(|(n, _)| !n.as_str().eq_ignore_ascii_case(attr::PROC_ID))
        .map(|(n, e)| (n.clone(), text(e), true))
        .collect();
    for ad in &ads[1..] {
        for (name, t, shared) in common.iter_mut().filter(|c| c.2) {
            *shared = ad.lookup_name(name).is_some_and(|e| text(e) == *t);
        }
    }
    let mut cluster = ClassAd::new();
    for (name, _, shared) in &common {
        if *shared {
            if let Some(e) = first.lookup_name(name) {
                cluster.insert(name.clone(), e.clone());
            }
        }
    }
    let procs = ads
        .into_iter()
        .map(|ad| {
            let mut own = ClassAd::new();
            for (n, e) in ad.iter_inserted() {
                if cluster.lookup_name(n).is_none() {
                    own.insert(n.clone(), e.clone());
                }
            }
            own
        })
        .collect();
    (cluster, procs)
}

/// The integer every ad of `ads` holds itself as `name`'s literal, if they
/// all hold the same one.
fn same_literal_int(ads: &[ClassAd], name: &str) -> Option<i64> {
    let mut same = None;
    for ad in ads {
        match ad
            .own()
            .find(|(n, _)| n.as_str().eq_ignore_ascii_case(name))
        {
            Some((_, Expr::Lit(Value::Int(v)))) if !matches!(same, Some(s) if s != *v) => {
                same = Some(*v)
            }
            _ => return None,
        }
    }
    same
}

/// The value of a literal attribute (what the queue itself wrote).
fn literal(ad: &ClassAd, name: &str) -> Option<Value> {
    value_of(ad, ad.get(name)?)
}

/// [`literal`] of a name made once (`names`).
fn literal_named(ad: &ClassAd, name: &AttrName) -> Option<Value> {
    value_of(ad, ad.lookup_name(name)?)
}

/// A literal's value, or what an expression evaluates to when that is
/// neither undefined nor an error.
fn value_of(ad: &ClassAd, e: &Expr) -> Option<Value> {
    match e {
        Expr::Lit(v) => Some(v.clone()),
        e => {
            let v = ad.eval(e, &Env::default());
            (!v.is_undefined() && !v.is_error()).then_some(v)
        }
    }
}

/// The status a job ad records.
pub fn status_of(ad: &ClassAd) -> Option<JobStatus> {
    match literal_named(ad, &names::JOB_STATUS)? {
        Value::Int(n) => JobStatus::from_number(n),
        _ => None,
    }
}

impl JobQueue {
    pub fn new() -> JobQueue {
        JobQueue {
            jobs: BTreeMap::new(),
            index: JobIndex::default(),
            next_cluster: 1,
            utc_offset: 0,
        }
    }

    /// A queue holding `jobs` again (after a restart, from the store). New
    /// clusters are numbered after the highest one seen, and after
    /// `next_cluster` if that is higher.
    pub fn restore(jobs: Vec<ClassAd>, next_cluster: i64) -> JobQueue {
        let mut q = JobQueue::new();
        q.next_cluster = next_cluster.max(1);
        for ad in jobs {
            let (Some(c), Some(p)) = (
                literal(&ad, attr::CLUSTER_ID).and_then(|v| v.as_int()),
                literal(&ad, attr::PROC_ID).and_then(|v| v.as_int()),
            ) else {
                continue;
            };
            q.next_cluster = q.next_cluster.max(c + 1);
            q.put(JobId::new(c, p), Arc::new(ad));
        }
        q
    }

    /// Queues (or replaces) job `id`, filed in the index.
    fn put(&mut self, id: JobId, ad: Arc<ClassAd>) {
        let key = JobKey::of(id, &ad);
        let queued = Queued {
            ad,
            key: key.clone(),
        };
        if let Some(old) = self.jobs.insert(id, queued) {
            self.index.remove(id, &old.key);
        }
        self.index.insert(id, &key);
    }

    fn env(&self, now: i64) -> Env {
        Env {
            utc_offset: self.utc_offset,
            ..Env::at(now)
        }
    }

    /// Hands out the id for a new cluster (what `condor_submit` asks the
    /// schedd for before it builds the job ads).
    pub fn new_cluster(&mut self) -> i64 {
        let c = self.next_cluster;
        self.next_cluster += 1;
        c
    }

    /// The cluster id the next [`JobQueue::new_cluster`] will give.
    pub fn next_cluster(&self) -> i64 {
        self.next_cluster
    }

    pub fn job(&self, id: JobId) -> Option<&ClassAd> {
        self.jobs.get(&id).map(|q| &*q.ad)
    }

    /// Changes job `id`'s ad with `f` (copied first while a snapshot holds
    /// it: `Arc::make_mut`) and files the job again in the index.
    pub(crate) fn edit_job<R>(
        &mut self,
        id: JobId,
        f: impl FnOnce(&mut ClassAd) -> R,
    ) -> Option<R> {
        let queued = self.jobs.get_mut(&id)?;
        let ad = Arc::make_mut(&mut queued.ad);
        let r = f(ad);
        let after = JobKey::of(id, ad);
        self.index.rekey(id, &queued.key, &after);
        queued.key = after;
        Some(r)
    }

    /// Job `id`'s ad as the queue shares it: it stays as it is now, whatever
    /// the queue does to the job later.
    pub fn shared_job(&self, id: JobId) -> Option<Arc<ClassAd>> {
        self.jobs.get(&id).map(|q| Arc::clone(&q.ad))
    }

    pub fn status(&self, id: JobId) -> Option<JobStatus> {
        // As the index files it: the same as `status_of` its ad.
        self.jobs.get(&id).and_then(|q| q.key.status())
    }

    /// Every job, in id order.
    pub fn jobs(&self) -> impl Iterator<Item = (JobId, &ClassAd)> {
        self.jobs.iter().map(|(id, q)| (*id, &*q.ad))
    }

    /// Every job as it is now, in id order, to read without the queue:
    /// one reference count per job, no ad copied. Later changes to the
    /// queue do not reach it (the queue copies an ad it edits while a
    /// snapshot holds it).
    pub fn snapshot(&self) -> Vec<(JobId, Arc<ClassAd>)> {
        self.jobs
            .iter()
            .map(|(id, q)| (*id, Arc::clone(&q.ad)))
            .collect()
    }

    pub fn len(&self) -> usize {
        self.jobs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.jobs.is_empty()
    }

    /// Takes a job out of the queue (into history: the daemon decides when
    /// a completed or removed job leaves).
    pub fn forget(&mut self, id: JobId) -> Option<Arc<ClassAd>> {
        let q = self.jobs.remove(&id)?;
        self.index.remove(id, &q.key);
        Some(q.ad)
    }

    /// The jobs in the queue by `JobStatus`, from the queue's counters.
    pub fn counts(&self) -> StatusCounts {
        self.index.total()
    }

    /// Cluster `cluster`'s jobs, by `JobStatus` (kept as they change:
    /// no scan).
    pub fn cluster_counts(&self, cluster: i64) -> StatusCounts {
        self.index.cluster(cluster)
    }

    /// The jobs whose `Owner` is `owner` (exactly), by `JobStatus`.
    pub fn owner_counts(&self, owner: &str) -> StatusCounts {
        self.index.owner(owner)
    }

    /// Each submitter with jobs in the queue (`claims::submitter_of`:
    /// the accounting group or the user) and its jobs by `JobStatus`.
    pub fn submitter_counts(&self) -> BTreeMap<String, StatusCounts> {
        self.index.submitters()
    }

    /// The jobs `constraint` selects, counted by `JobStatus`, when the
    /// counters alone know them (its conjuncts only name `Owner` and
    /// statuses); `None` when the jobs must be evaluated.
    pub fn count_matching(&self, constraint: &Expr) -> Option<StatusCounts> {
        self.index.count(&Terms::of(constraint))
    }

    /// The jobs `constraint` may select, in id order, with their ads as
    /// [`JobQueue::snapshot`] shares them: every job when the constraint's
    /// top-level conjuncts name none of `ClusterId`, `Owner` and
    /// `JobStatus`, else those the index gives. Every job the constraint
    /// is true of is among them; the caller evaluates it on each.
    pub fn snapshot_matching(&self, constraint: &Expr) -> Vec<(JobId, Arc<ClassAd>)> {
        let cluster_len =
            |c: i64, limit: usize| self.jobs.range(index::cluster_range(c)).take(limit).count();
        match self.index.candidates(&Terms::of(constraint), cluster_len) {
            Candidates::All => self.snapshot(),
            Candidates::Cluster(c, others) => {
                let mut out = self.snapshot_cluster(c);
                if !others.is_empty() {
                    out.extend(self.lookup(&others));
                    out.sort_unstable_by_key(|(id, _)| *id);
                }
                out
            }
            Candidates::Jobs(ids) => self.lookup(&ids).collect(),
        }
    }

    /// The procs of cluster `cluster`, in id order, shared as
    /// [`JobQueue::snapshot`] shares them.
    pub fn snapshot_cluster(&self, cluster: i64) -> Vec<(JobId, Arc<ClassAd>)> {
        self.jobs
            .range(index::cluster_range(cluster))
            .map(|(id, q)| (*id, Arc::clone(&q.ad)))
            .collect()
    }

    fn lookup<'a>(&'a self, ids: &'a [JobId]) -> impl Iterator<Item = (JobId, Arc<ClassAd>)> + 'a {
        ids.iter()
            .filter_map(|id| Some((*id, Arc::clone(&self.jobs.get(id)?.ad))))
    }

    /// The procs of cluster `cluster`, in id order.
    pub fn cluster_jobs(&self, cluster: i64) -> impl Iterator<Item = (JobId, &ClassAd)> {
        self.jobs
            .range(index::cluster_range(cluster))
            .map(|(id, q)| (*id, &*q.ad))
    }

    /// Queues one cluster of job ads (from the `submit` crate) for
    /// `submitter`: sets `Owner`, applies the job transforms, checks the
    /// submit requirements (one failing job refuses the whole cluster),
    /// and returns one submit change per job. `host` is the schedd's
    /// address for the submit event; `schedd_ad` is MY for the submit
    /// requirements. Nothing is queued when it fails.
    ///
    /// The ads are whole jobs, kept as given (no cluster ad is shared:
    /// see [`JobQueue::submit_cluster`] for that).
    pub fn submit(
        &mut self,
        ads: Vec<ClassAd>,
        submitter: &str,
        policy: &SubmitPolicy,
        schedd_ad: &ClassAd,
        host: &str,
        now: i64,
    ) -> Result<Submitted, SubmitRefused> {
        self.submit_jobs(Parent::None, ads, submitter, policy, schedd_ad, host, now)
    }

    /// [`JobQueue::submit`] of a cluster as HTCondor's schedd keeps it: the
    /// attributes every job shares once, in `cluster_ad` (with
    /// `ClusterId`), and per job a proc ad of what differs (with its
    /// `ProcId`), chained to the cluster ad. A job reads as the cluster ad
    /// overlaid by its proc ad; what the queue or a user changes later is
    /// written into the proc ad alone. The cluster ad costs its memory
    /// once, not once a job.
    #[allow(clippy::too_many_arguments)]
    pub fn submit_cluster(
        &mut self,
        cluster_ad: ClassAd,
        procs: Vec<ClassAd>,
        submitter: &str,
        policy: &SubmitPolicy,
        schedd_ad: &ClassAd,
        host: &str,
        now: i64,
    ) -> Result<Submitted, SubmitRefused> {
        self.submit_jobs(
            Parent::New(cluster_ad),
            procs,
            submitter,
            policy,
            schedd_ad,
            host,
            now,
        )
    }

    /// Jobs a factory materialized (late materialization): proc ads
    /// chained to the factory's cluster ad `parent`, already in the
    /// queue's keeping (its Owner set at the factory's submission).
    /// Transforms and submit requirements apply to each, as at a submission.
    #[allow(clippy::too_many_arguments)]
    pub fn materialize(
        &mut self,
        parent: Arc<ClassAd>,
        procs: Vec<ClassAd>,
        submitter: &str,
        policy: &SubmitPolicy,
        schedd_ad: &ClassAd,
        host: &str,
        now: i64,
    ) -> Result<Submitted, SubmitRefused> {
        self.submit_jobs(
            Parent::Existing(parent),
            procs,
            submitter,
            policy,
            schedd_ad,
            host,
            now,
        )
    }

    /// The cluster ad of a factory whose jobs have all left: the ad a
    /// cluster is submitted with, made shared as the queue keeps it
    /// (Owner, EnteredCurrentStatus), for the factory to chain its jobs to.
    pub fn factory_cluster_ad(mut cluster_ad: ClassAd, submitter: &str, now: i64) -> Arc<ClassAd> {
        cluster_ad.insert_value(attr::OWNER, submitter);
        cluster_ad.insert_value(attr::ENTERED_CURRENT_STATUS, now);
        Arc::new(cluster_ad)
    }

    #[allow(clippy::too_many_arguments)]
    fn submit_jobs(
        &mut self,
        parent: Parent,
        ads: Vec<ClassAd>,
        submitter: &str,
        policy: &SubmitPolicy,
        schedd_ad: &ClassAd,
        host: &str,
        now: i64,
    ) -> Result<Submitted, SubmitRefused> {
        let env = self.env(now);
        let mut cluster = None;
        let mut prepared = Vec::with_capacity(ads.len());
        let mut seen = std::collections::HashSet::with_capacity(ads.len());
        let mut warning = None;
        let mut notes = Vec::new();
        // The schedd, not the submitter's tool, says whose job it is: once,
        // in the cluster ad, when there is one.
        // What every job enters the queue with goes there too (its status,
        // when every proc ad says the same, and when it entered it): a job
        // costs only what is its own until something happens to it.
        let (same_status, shared) = match parent {
            Parent::None => (None, None),
            Parent::Existing(p) => (None, Some(p)),
            Parent::New(mut c) => {
                let same_status = same_literal_int(&ads, attr::JOB_STATUS);
                c.insert_value(attr::OWNER, submitter);
                if let Some(s) = same_status {
                    c.insert_value(attr::JOB_STATUS, s);
                }
                c.insert_value(attr::ENTERED_CURRENT_STATUS, now);
                (same_status, Some(Arc::new(c)))
            }
        };
        for mut ad in ads {
            if let Some(parent) = &shared {
                ad.remove(attr::OWNER);
                if same_status.is_some() {
                    ad.remove(attr::JOB_STATUS);
                }
                ad.chain_to(Arc::clone(parent));
            }
            let c = literal(&ad, attr::CLUSTER_ID).and_then(|v| v.as_int());
            let p = literal(&ad, attr::PROC_ID).and_then(|v| v.as_int());
            let (Some(c), Some(p)) = (c, p) else {
                return Err(SubmitRefused::Malformed(
                    "a job ad has no integer ClusterId and ProcId".into(),
                ));
            };
            if *cluster.get_or_insert(c) != c {
                return Err(SubmitRefused::Malformed(format!(
                    "one submission holds jobs of clusters {} and {c}",
                    cluster.unwrap_or(c)
                )));
            }
            let id = JobId::new(c, p);
            // A set, not a search of those prepared: a cluster of 100,000
            // procs made that search 5e9 comparisons.
            if self.jobs.contains_key(&id) || !seen.insert(id) {
                return Err(SubmitRefused::Malformed(format!(
                    "job {id} is already in the queue"
                )));
            }
            // A job enters the queue Idle, or Held (`hold = true`): any
            // other status would claim a run, a removal or a completion
            // that never happened. HTCondor's schedd refuses such an
            // initial JobStatus ("SetAttribute violation: Attempt to set
            // initial JobStatus"), and so does this queue.
            if let Some(e) = ad.get(attr::JOB_STATUS) {
                if !matches!(status_of(&ad), Some(JobStatus::Idle | JobStatus::Held)) {
                    return Err(SubmitRefused::Malformed(format!(
                        "job {id}: JobStatus = {} may not be submitted: a job enters the queue \
                         Idle (1), or Held (5) when submitted with `hold = true`",
                        classad::unparse::expr_to_string(e)
                    )));
                }
            }
            if shared.is_none() {
                ad.insert_value(attr::OWNER, submitter);
            }
            notes.extend(policy.transforms.apply(&mut ad, &env));
            if let Some(w) = policy.requirements.check(&ad, schedd_ad, &env)? {
                warning = Some(w);
            }
            prepared.push((id, ad));
        }
        let Some(cluster) = cluster else {
            return Err(SubmitRefused::Malformed("no jobs to submit".into()));
        };
        self.next_cluster = self.next_cluster.max(cluster + 1);
        // Sized once: growing them copies them, and for a million jobs
        // the changes alone are hundreds of megabytes.
        let mut jobs = Vec::with_capacity(prepared.len());
        let mut changes = Vec::with_capacity(prepared.len());
        for (id, mut ad) in prepared {
            let to = status_of(&ad).unwrap_or(JobStatus::Idle);
            // Written unless the job already reads so (through its cluster
            // ad): the same ad either way, and nothing copied per job.
            for (name, value) in [
                (attr::JOB_STATUS, to.number()),
                (attr::ENTERED_CURRENT_STATUS, now),
            ] {
                if !matches!(ad.get(name), Some(Expr::Lit(Value::Int(v))) if *v == value) {
                    ad.insert_value(name, value);
                }
            }
            let log = LogEvent::Submit {
                host: host.to_string(),
                log_notes: literal(&ad, attr::SUBMIT_EVENT_NOTES)
                    .and_then(|v| v.as_str().map(str::to_string)),
                user_notes: literal(&ad, attr::SUBMIT_EVENT_USER_NOTES)
                    .and_then(|v| v.as_str().map(str::to_string)),
                warnings: warning.clone(),
            };
            // A job's memory is mostly its proc ad's when its cluster ad
            // is shared: keep no spare room in it.
            ad.shrink_to_fit();
            self.put(id, Arc::new(ad));
            jobs.push(id);
            changes.push(Change {
                job: id,
                from: None,
                to,
                log: Some(log),
                // The whole job is new: the store takes it whole
                // (`Store::submit_cluster`), not attribute by attribute,
                // and a list of every name of a million jobs would cost
                // more than the jobs.
                attributes: Vec::new(),
                stop: false,
            });
        }
        Ok(Submitted {
            cluster,
            jobs,
            changes,
            warning,
            notes,
        })
    }

    /// Applies something that happened to job `id` at `now`.
    pub fn apply(
        &mut self,
        id: JobId,
        event: JobEvent,
        now: i64,
        system: &SystemPolicy,
    ) -> Result<Change, QueueError> {
        let env = self.env(now);
        let queued = self.jobs.get_mut(&id).ok_or(QueueError::NoSuchJob(id))?;
        let mut e = Edit::new(Arc::make_mut(&mut queued.ad));
        // A job's proc ad is kept at its smallest while it waits (a queue
        // holds hundreds of thousands); the first run writes a score of
        // attributes into it, which then find their room at once.
        if matches!(event, JobEvent::Matched | JobEvent::Started { .. }) {
            e.ad.reserve(RUN_ATTRIBUTES);
        }
        let from = e.status();
        let wrong = |event: &JobEvent| QueueError::WrongStatus {
            job: id,
            status: from,
            event: event.name(),
        };
        let mut stop = false;
        let log = match &event {
            JobEvent::Matched => {
                if from != JobStatus::Idle {
                    return Err(wrong(&event));
                }
                e.set(&names::LAST_MATCH_TIME, now);
                e.increment(&names::NUM_JOB_MATCHES);
                None
            }
            JobEvent::Started { host, slot, claim } => {
                if from != JobStatus::Idle {
                    return Err(wrong(&event));
                }
                let shadows = e.increment(&names::NUM_SHADOW_STARTS);
                e.set(&names::JOB_RUN_COUNT, shadows);
                e.increment(&names::NUM_JOB_STARTS);
                if e.int(&names::JOB_START_DATE).unwrap_or(0) <= 0 {
                    e.set(&names::JOB_START_DATE, now);
                }
                e.set(&names::JOB_CURRENT_START_DATE, now);
                e.set(&names::JOB_CURRENT_START_EXECUTING_DATE, now);
                e.set(&names::SHADOW_BDAY, now);
                e.set(&names::REMOTE_HOST, slot.as_str());
                e.set(&names::CURRENT_HOSTS, 1);
                e.set(&names::STARTD_IP_ADDR, host.as_str());
                if let Some(c) = claim {
                    e.set(&names::CLAIM_ID, c.as_str());
                }
                e.set_status(JobStatus::Running, now);
                Some(LogEvent::Execute {
                    host: host.clone(),
                    slot_name: Some(slot.clone()).filter(|s| !s.is_empty()),
                })
            }
            JobEvent::Disconnected {
                reason,
                startd,
                address,
            } => {
                if !from.is_active() {
                    return Err(wrong(&event));
                }
                e.set(&names::JOB_DISCONNECTED_DATE, now);
                Some(LogEvent::Disconnected {
                    reason: reason.clone(),
                    startd_name: startd.clone(),
                    startd_addr: address.clone(),
                })
            }
            JobEvent::Reconnected { startd, address } => {
                if !from.is_active() {
                    return Err(wrong(&event));
                }
                e.remove(&names::JOB_DISCONNECTED_DATE);
                Some(LogEvent::Reconnected {
                    startd_name: startd.clone(),
                    startd_addr: address.clone(),
                    starter_addr: address.clone(),
                })
            }
            JobEvent::ReconnectFailed { reason, startd } => {
                if !from.is_active() {
                    return Err(wrong(&event));
                }
                // The run's time is not committed: the job starts over.
                end_run(&mut e, now, false, &RunReport::default());
                e.remove(&names::JOB_DISCONNECTED_DATE);
                e.set(&names::LAST_VACATE_TIME, now);
                e.set_status(JobStatus::Idle, now);
                Some(LogEvent::ReconnectFailed {
                    reason: reason.clone(),
                    startd_name: startd.clone(),
                })
            }
            JobEvent::Suspended { num_pids } => {
                if from != JobStatus::Running {
                    return Err(wrong(&event));
                }
                e.set(&names::LAST_SUSPENSION_TIME, now);
                e.increment(&names::TOTAL_SUSPENSIONS);
                e.set_status(JobStatus::Suspended, now);
                Some(LogEvent::Suspended {
                    num_pids: *num_pids,
                })
            }
            JobEvent::Unsuspended => {
                if from != JobStatus::Suspended {
                    return Err(wrong(&event));
                }
                end_suspension(&mut e, now);
                e.set_status(JobStatus::Running, now);
                Some(LogEvent::Unsuspended)
            }
            JobEvent::Evicted {
                checkpointed,
                reason,
                report,
            } => {
                if !from.is_active() {
                    return Err(wrong(&event));
                }
                let usage = end_run(&mut e, now, *checkpointed, report);
                e.set(&names::LAST_VACATE_TIME, now);
                e.set_status(JobStatus::Idle, now);
                Some(LogEvent::Evicted {
                    checkpointed: *checkpointed,
                    usage,
                    requeued: None,
                    reason: reason.clone(),
                })
            }
            JobEvent::TransferOutputStarted => {
                if from != JobStatus::Running {
                    return Err(wrong(&event));
                }
                e.set(&names::JOB_CURRENT_START_TRANSFER_OUTPUT_DATE, now);
                e.set_status(JobStatus::TransferringOutput, now);
                None
            }
            JobEvent::Exited { how, report } => {
                if !from.is_active() {
                    return Err(wrong(&event));
                }
                if from == JobStatus::TransferringOutput {
                    e.set(&names::JOB_CURRENT_FINISH_TRANSFER_OUTPUT_DATE, now);
                }
                let usage = end_run(&mut e, now, true, report);
                e.increment(&names::NUM_JOB_COMPLETIONS);
                record_exit(&mut e, how);
                match policy::at_exit(e.ad, system, &env) {
                    ExitDecision::Complete => {
                        e.set(&names::COMPLETION_DATE, now);
                        e.set_status(JobStatus::Completed, now);
                        Some(LogEvent::Terminated {
                            how: how.clone(),
                            usage,
                            ended_by: Some(EndedBy::ItsOwnAccord {
                                when: now,
                                how: how.clone(),
                            }),
                        })
                    }
                    ExitDecision::Requeue { reason } => {
                        e.set_status(JobStatus::Idle, now);
                        Some(LogEvent::Evicted {
                            checkpointed: false,
                            usage,
                            requeued: Some(how.clone()),
                            reason: Some(reason),
                        })
                    }
                    ExitDecision::Hold {
                        reason,
                        code,
                        subcode,
                    } => Some(hold(&mut e, &reason, code, subcode, now)),
                    ExitDecision::Remove { reason } => Some(remove(&mut e, &reason, now)),
                }
            }
            JobEvent::Held {
                reason,
                code,
                subcode,
            } => {
                if matches!(
                    from,
                    JobStatus::Held | JobStatus::Removed | JobStatus::Completed
                ) {
                    return Err(wrong(&event));
                }
                if from.is_active() {
                    end_run(&mut e, now, false, &RunReport::default());
                    e.set(&names::LAST_VACATE_TIME, now);
                    stop = true;
                }
                Some(hold(&mut e, reason, *code, *subcode, now))
            }
            JobEvent::Released { reason } => {
                if from != JobStatus::Held {
                    return Err(wrong(&event));
                }
                if let Some(r) = e.string(&names::HOLD_REASON) {
                    e.set(&names::LAST_HOLD_REASON, r);
                }
                if let Some(c) = e.int(&names::HOLD_REASON_CODE) {
                    e.set(&names::LAST_HOLD_REASON_CODE, c);
                }
                if let Some(c) = e.int(&names::HOLD_REASON_SUBCODE) {
                    e.set(&names::LAST_HOLD_REASON_SUBCODE, c);
                }
                e.remove(&names::HOLD_REASON);
                e.remove(&names::HOLD_REASON_CODE);
                e.remove(&names::HOLD_REASON_SUBCODE);
                e.set(&names::RELEASE_REASON, reason.as_str());
                e.set_status(JobStatus::Idle, now);
                Some(LogEvent::Released {
                    reason: Some(reason.clone()),
                })
            }
            JobEvent::Removed { reason } => {
                if matches!(from, JobStatus::Removed | JobStatus::Completed) {
                    return Err(wrong(&event));
                }
                if from.is_active() {
                    end_run(&mut e, now, false, &RunReport::default());
                    stop = true;
                }
                Some(remove(&mut e, reason, now))
            }
        };
        let to = e.status();
        // An event writes none of what files the job but its status.
        let after = queued.key.with_status_of(e.ad);
        debug_assert_eq!(after, JobKey::of(id, e.ad));
        self.index.rekey(id, &queued.key, &after);
        queued.key = after;
        Ok(Change {
            job: id,
            from: Some(from),
            to,
            log,
            attributes: e.attributes(),
            stop,
        })
    }

    /// A user's request (`condor_hold`, `condor_release`, `condor_rm`):
    /// refused unless `user` owns the job or is a queue super user.
    pub fn user_action(
        &mut self,
        user: &str,
        super_users: &SuperUsers,
        id: JobId,
        action: UserAction,
        now: i64,
    ) -> Result<Change, QueueError> {
        let ad = &self.jobs.get(&id).ok_or(QueueError::NoSuchJob(id))?.ad;
        let verb = match action {
            UserAction::Hold { .. } => "hold",
            UserAction::Release { .. } => "release",
            UserAction::Remove { .. } => "remove",
        };
        authz::may_act(user, id, ad, super_users, verb).map_err(QueueError::NotPermitted)?;
        let via = |tool: &str, reason: Option<String>| {
            reason
                .filter(|r| !r.is_empty())
                .unwrap_or_else(|| format!("via {tool} (by user {user})"))
        };
        let event = match action {
            UserAction::Hold { reason, subcode } => JobEvent::Held {
                reason: via("condor_hold", reason),
                code: HoldCode::USER_REQUEST,
                subcode,
            },
            UserAction::Release { reason } => JobEvent::Released {
                reason: via("condor_release", reason),
            },
            UserAction::Remove { reason } => JobEvent::Removed {
                reason: via("condor_rm", reason),
            },
        };
        self.apply(id, event, now, &SystemPolicy::none())
    }

    /// The schedd's periodic evaluation of job policy at `now`, over every
    /// job in the queue. For a job with a machine, `RemoteWallClockTime`
    /// counts the current run while the expressions are evaluated, as the
    /// shadow counts it, so `RemoteWallClockTime > 3600` fires during the
    /// run rather than after it.
    pub fn evaluate_periodic(&mut self, now: i64, system: &SystemPolicy) -> Vec<Change> {
        let env = self.env(now);
        let mut decisions = Vec::new();
        for (id, Queued { ad, .. }) in &self.jobs {
            let Some(status) = status_of(ad) else {
                continue;
            };
            if matches!(status, JobStatus::Completed | JobStatus::Removed) {
                continue;
            }
            // Jobs held while their input is spooled are left alone.
            if status == JobStatus::Held
                && literal(ad, attr::HOLD_REASON_CODE).and_then(|v| v.as_int())
                    == Some(HoldCode::SPOOLING_INPUT.0)
            {
                continue;
            }
            let decision = if status.is_active() {
                let mut running = ClassAd::clone(ad);
                let mut e = Edit::new(&mut running);
                let run = current_run(&e, now);
                e.add_time(&names::REMOTE_WALL_CLOCK_TIME, run);
                policy::periodic(&running, status, system, &env)
            } else {
                policy::periodic(ad, status, system, &env)
            };
            if let Some(d) = decision {
                decisions.push((*id, d));
            }
        }
        let mut changes = Vec::new();
        for (id, d) in decisions {
            let event = match d {
                PolicyAction::Hold {
                    reason,
                    code,
                    subcode,
                } => JobEvent::Held {
                    reason,
                    code,
                    subcode,
                },
                PolicyAction::Release { reason } => JobEvent::Released { reason },
                PolicyAction::Remove { reason } => JobEvent::Removed { reason },
            };
            if let Ok(c) = self.apply(id, event, now, system) {
                changes.push(c);
            }
        }
        changes
    }
}

/// Seconds the current run has lasted (since the shadow started).
fn current_run(e: &Edit<'_>, now: i64) -> i64 {
    let start = e
        .int(&names::SHADOW_BDAY)
        .or_else(|| e.int(&names::JOB_CURRENT_START_DATE))
        .unwrap_or(now);
    (now - start).max(0)
}

fn end_suspension(e: &mut Edit<'_>, now: i64) {
    let since = e.int(&names::LAST_SUSPENSION_TIME).unwrap_or(0);
    if since > 0 {
        e.add_time(&names::CUMULATIVE_SUSPENSION_TIME, (now - since).max(0));
        e.set(&names::LAST_SUSPENSION_TIME, 0i64);
    }
}

/// Ends the current run: the wall clock, CPU and byte totals grow, the
/// machine is forgotten. `committed` says the run's work is kept (it
/// exited, or checkpointed), so `CommittedTime` grows too. Returns the
/// usage figures for the event log.
fn end_run(e: &mut Edit<'_>, now: i64, committed: bool, report: &RunReport) -> Usage {
    if e.status() == JobStatus::Suspended {
        end_suspension(e, now);
    }
    // The run's claim is no longer the job's.
    e.remove(&names::CLAIM_ID);
    let run = current_run(e, now);
    e.add_time(&names::REMOTE_WALL_CLOCK_TIME, run);
    e.add_time(&names::CUMULATIVE_SLOT_TIME, run);
    if committed {
        e.add_time(&names::COMMITTED_TIME, run);
        e.add_time(&names::COMMITTED_SLOT_TIME, run);
        e.add_time(&names::REMOTE_USER_CPU, report.remote_user_cpu);
        e.add_time(&names::REMOTE_SYS_CPU, report.remote_sys_cpu);
    }
    e.add_time(&names::CUMULATIVE_REMOTE_USER_CPU, report.remote_user_cpu);
    e.add_time(&names::CUMULATIVE_REMOTE_SYS_CPU, report.remote_sys_cpu);
    let total_sent = e.number(&names::BYTES_SENT).unwrap_or(0.0) + report.bytes_sent;
    let total_received = e.number(&names::BYTES_RECVD).unwrap_or(0.0) + report.bytes_received;
    e.set(&names::BYTES_SENT, total_sent);
    e.set(&names::BYTES_RECVD, total_received);
    for (name, kib) in [
        (&names::IMAGE_SIZE, report.image_size_kib),
        (&names::RESIDENT_SET_SIZE, report.resident_set_size_kib),
    ] {
        if let Some(kib) = kib {
            let before = e.int(name).unwrap_or(0);
            if kib > before {
                e.set(name, kib);
            }
        }
    }
    if let Some(host) = e.string(&names::REMOTE_HOST) {
        e.set(&names::LAST_REMOTE_HOST, host);
    }
    e.remove(&names::REMOTE_HOST);
    e.set(&names::CURRENT_HOSTS, 0);
    e.remove(&names::SHADOW_BDAY);
    let cpu = |name: &AttrName| e.number(name).unwrap_or(0.0) as i64;
    Usage {
        run_remote: Rusage {
            user_secs: report.remote_user_cpu,
            sys_secs: report.remote_sys_cpu,
        },
        run_local: Rusage::default(),
        total_remote: Rusage {
            user_secs: cpu(&names::CUMULATIVE_REMOTE_USER_CPU),
            sys_secs: cpu(&names::CUMULATIVE_REMOTE_SYS_CPU),
        },
        total_local: Rusage::default(),
        run_sent_bytes: report.bytes_sent,
        run_received_bytes: report.bytes_received,
        total_sent_bytes: total_sent,
        total_received_bytes: total_received,
        resources: report.resources.clone(),
    }
}

/// `ExitBySignal` with `ExitCode` or `ExitSignal` (the other removed), and
/// the old `ExitStatus`, as the shadow records an exit.
fn record_exit(e: &mut Edit<'_>, how: &ExitHow) {
    match how {
        ExitHow::Code(c) => {
            e.set(&names::EXIT_BY_SIGNAL, false);
            e.set(&names::EXIT_CODE, *c);
            e.set(&names::EXIT_STATUS, *c);
            e.remove(&names::EXIT_SIGNAL);
        }
        ExitHow::Signal { signal, core_file } => {
            e.set(&names::EXIT_BY_SIGNAL, true);
            e.set(&names::EXIT_SIGNAL, *signal);
            e.remove(&names::EXIT_CODE);
            e.set(&names::JOB_CORE_DUMPED, core_file.is_some());
        }
    }
}

fn hold(e: &mut Edit<'_>, reason: &str, code: HoldCode, subcode: i64, now: i64) -> LogEvent {
    e.set(&names::HOLD_REASON, reason);
    e.set(&names::HOLD_REASON_CODE, code.0);
    e.set(&names::HOLD_REASON_SUBCODE, subcode);
    e.increment(&names::NUM_HOLDS);
    // NumHoldsByReason = [ JobPolicy = 2; UserRequest = 1 ]
    let mut by_reason = match e.ad.lookup_name(&names::NUM_HOLDS_BY_REASON) {
        Some(classad::Expr::Ad(a)) => (**a).clone(),
        _ => ClassAd::new(),
    };
    let label = code.label();
    let n = match by_reason.get(label) {
        Some(classad::Expr::Lit(Value::Int(n))) => *n,
        _ => 0,
    };
    by_reason.insert_value(label, n + 1);
    e.ad.insert(
        names::NUM_HOLDS_BY_REASON.clone(),
        classad::Expr::Ad(std::sync::Arc::new(by_reason)),
    );
    e.touch(&names::NUM_HOLDS_BY_REASON);
    e.set_status(JobStatus::Held, now);
    LogEvent::Held {
        reason: Some(reason.to_string()),
        code: code.0,
        subcode,
    }
}

fn remove(e: &mut Edit<'_>, reason: &str, now: i64) -> LogEvent {
    e.set(&names::REMOVE_REASON, reason);
    e.set_status(JobStatus::Removed, now);
    LogEvent::Aborted {
        reason: Some(reason.to_string()),
    }
}
