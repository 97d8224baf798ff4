//! The schedd's side of its claims: the match records of HTCondor's
//! schedd and the part of its shadows that decides, as one pure state
//! machine that the personal pool and the simulator both drive.
//!
//! A claim's life, in HTCondor's conversation:
//!
//! 1. The negotiator sends the schedd a match (PERMISSION_AND_AD):
//!    [`Claims::matched`] records a claim and asks the startd for it
//!    (REQUEST_CLAIM, [`startd::Event::RequestClaim`]).
//! 2. The startd grants it ([`startd::Action::ClaimGranted`]; the negotiator's
//!    accountant is charged) or refuses it (the job is idle again).
//! 3. Each time the claim is Claimed/Idle ([`startd::Action::ClaimIdle`]) the
//!    schedd runs a job on it (ACTIVATE_CLAIM): first the job it was
//!    matched for, then, while the claim is younger than CLAIM_WORKLIFE, the
//!    same submitter's next idle job that the slot takes (claim reuse,
//!    `negotiator::reuse`); with none, it releases the claim
//!    (RELEASE_CLAIM).
//! 4. The starter reports the job started, suspended, resumed, and how it
//!    ended ([`StarterReport`]); this module turns that into the queue's
//!    [`JobEvent`] (HTCondor's hold codes for a job that could not start).
//! 5. A job held or removed while it runs has its claim released
//!    ([`Claims::jobs_changed`]); the startd ends the claim
//!    ([`startd::Action::ClaimEnded`]) and the accountant stops charging.
//!    A job its owner vacates (condor_vacate_job, [`Claims::vacate`]) is
//!    evicted by its machine, and the starter's report makes it idle.
//!
//! Every call takes the messages and `now` and returns a [`Ready`]: what to
//! send to which startd, what happened to which job (for the caller to
//! apply to its queue and store), what to charge, and whether a
//! negotiation cycle is wanted. The caller applies the job events and then
//! tells this module which jobs changed ([`Claims::jobs_changed`]), which
//! keeps the per-submitter index of idle jobs the negotiator is offered.
//!
//! **Architecture invariant:** pure, like the rest of this crate: no clock,
//! no I/O; it reads the queue it is given and never changes it.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use classad::{ClassAd, Env, Value};
use negotiator::accountant::Accountant;
use negotiator::limits::ConcurrencyLimits;
use negotiator::reuse;
use startd::{Action, ClaimRequest, Event};

use rustc_hash::FxHashMap;

use crate::claim_ids::ByClaim;
use crate::dedicated::{self, ShutdownPolicy};
use crate::job::{attr, HoldCode, JobId, JobStatus};
use crate::queue::{status_of, JobEvent, JobQueue, RunReport};
use crate::userlog::ExitHow;

/// The accounting name of a job's submitter, as HTCondor's schedd
/// advertises it: `AccountingGroup@domain` for a job in an accounting
/// group (`group_a.alice@domain`), else `User` (owner@domain), else its
/// Owner.
pub fn submitter_of(job: &ClassAd) -> String {
    // The common case, with nothing evaluated (every match and every job
    // that becomes idle asks).
    if let Some(user) = crate::index::plain_submitter(job) {
        return user.to_string();
    }
    let env = Env::at(0);
    let text = |name: &str| match job.eval_attr(name, &env) {
        Value::Str(s) if !s.is_empty() => Some(s.to_string()),
        _ => None,
    };
    let user = text(attr::USER)
        .or_else(|| text(attr::OWNER))
        .unwrap_or_else(|| "unknown".into());
    match text("AccountingGroup") {
        Some(group) => match user.split_once('@') {
            Some((_, domain)) => format!("{group}@{domain}"),
            None => group,
        },
        None => user,
    }
}

/// A match the negotiator made for one of this schedd's jobs.
#[derive(Clone, Debug)]
pub struct MatchInfo {
    pub job: JobId,
    /// The startd the slot belongs to: where the claim's messages go.
    pub startd: String,
    pub slot: String,
    /// The negotiator preempts the slot's claim for user priority.
    pub by_user_priority: bool,
    /// What the match counts against the submitter's fair share.
    pub cost: f64,
    /// Pslot preemption: the dynamic slots to make room from.
    pub preempt_dynamic: Vec<String>,
    /// The slot's ParallelSchedulingGroup, where it has one.
    pub group: Option<String>,
}

/// Why a starter could not start a job (HTCondor's hold code for it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StartFailure {
    /// PREPARE_JOB failed: HookPrepareJobFailure (19).
    Hook,
    /// Input files could not be brought: TransferInputError (13).
    Input,
    /// Anything else: FailedToCreateProcess (6).
    Other,
}

impl StartFailure {
    pub fn hold_code(self) -> HoldCode {
        match self {
            StartFailure::Hook => HoldCode(19),
            StartFailure::Input => HoldCode(13),
            StartFailure::Other => HoldCode(6),
        }
    }
}

/// How a run ended, as its starter says.
#[derive(Clone, Debug, PartialEq)]
pub enum RunEnd {
    /// The job's process exited by itself.
    Exited(ExitHow),
    /// It exited, but its output could not be brought back
    /// (TransferOutputError, 12, with the errno as subcode).
    OutputFailed { reason: String, subcode: i64 },
    /// It was taken off the machine (vacated, killed, its claim lost).
    Evicted { reason: Option<String> },
    /// The kernel killed it for going over its cgroup memory limit:
    /// JobOutOfResources (34), subcode [`OUT_OF_MEMORY_SUBCODE`]. Held,
    /// not run again, as HTCondor's starter asks.
    OutOfMemory { reason: String },
}

/// HTCondor's subcode of JobOutOfResources for memory
/// (`OUT_OF_RESOURCES_SUB_CODE::Memory`).
pub const OUT_OF_MEMORY_SUBCODE: i64 = 102;

/// What a starter says about the job it runs on a claim.
#[derive(Clone, Debug)]
pub enum StarterReport {
    Started {
        claim_id: String,
        host: String,
        /// `slot@host`.
        slot: String,
    },
    StartFailed {
        claim_id: String,
        reason: String,
        failure: StartFailure,
        /// HoldReasonSubCode (for input: the errno, or the URL plugin's
        /// exit status shifted left by 8, as HTCondor's file transfer).
        subcode: i64,
    },
    Suspended {
        claim_id: String,
        num_pids: i64,
    },
    Unsuspended {
        claim_id: String,
    },
    Ended {
        claim_id: String,
        end: RunEnd,
        report: RunReport,
    },
}

impl StarterReport {
    /// The claim the report is about.
    pub fn claim_id(&self) -> &str {
        match self {
            StarterReport::Started { claim_id, .. }
            | StarterReport::StartFailed { claim_id, .. }
            | StarterReport::Suspended { claim_id, .. }
            | StarterReport::Unsuspended { claim_id }
            | StarterReport::Ended { claim_id, .. } => claim_id,
        }
    }
}

/// The accountant's side of a claim (the negotiator's accountant charges
/// a submitter for the slots its claims hold).
#[derive(Clone, Debug, PartialEq)]
pub enum Charge {
    Add {
        submitter: String,
        claim_id: String,
        cost: f64,
    },
    Remove {
        claim_id: String,
    },
}

impl Charge {
    /// Tells the accountant.
    pub fn apply(self, accountant: &mut Accountant, now: i64) {
        match self {
            Charge::Add {
                submitter,
                claim_id,
                cost,
            } => accountant.add_match(&submitter, &claim_id, cost, now),
            Charge::Remove { claim_id } => {
                accountant.remove_match(&claim_id, now);
            }
        }
    }
}

/// Why the schedd stops a running job (the starter's way of ending it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    Hold,
    Remove,
}

/// What the caller must do after a call.
#[derive(Debug, Default)]
pub struct Ready {
    /// Messages for startds, by startd name, in order.
    pub to_startd: Vec<(String, Event)>,
    /// What happened to jobs, for the queue (in order).
    pub job_events: Vec<(JobId, JobEvent)>,
    /// Jobs whose run is over: a completed or removed one may now leave
    /// the queue for its history.
    pub runs_ended: Vec<JobId>,
    /// Runs to stop because their job was held or removed: the startd
    /// the run is on, the claim id, how (the shadow tells its starter).
    pub stops: Vec<(String, String, Stop)>,
    pub charges: Vec<Charge>,
    /// Things to say about a job that are not queue events (a claim
    /// refused, a claim lost before its job started).
    pub job_notes: Vec<(JobId, String)>,
    /// Idle jobs may have somewhere to run: a negotiation cycle is wanted.
    pub reschedule: bool,
}

/// The runs in flight, by claim and by job (a parallel job has one run
/// per node).
#[derive(Clone, Debug)]
struct Runs {
    by_claim: ByClaim<JobId>,
    by_job: BTreeMap<JobId, BTreeSet<String>>,
}

impl Runs {
    fn new(prefix: Arc<str>) -> Runs {
        Runs {
            by_claim: ByClaim::new(prefix),
            by_job: BTreeMap::new(),
        }
    }

    fn insert(&mut self, claim_id: String, job: JobId) {
        if let Some(old) = self.by_claim.insert(claim_id.clone(), job) {
            self.unlink(old, &claim_id);
        }
        self.by_job.entry(job).or_default().insert(claim_id);
    }

    fn unlink(&mut self, job: JobId, claim_id: &str) {
        if let Some(set) = self.by_job.get_mut(&job) {
            set.remove(claim_id);
            if set.is_empty() {
                self.by_job.remove(&job);
            }
        }
    }

    fn remove(&mut self, claim_id: &str) -> Option<JobId> {
        let job = self.by_claim.remove(claim_id)?;
        self.unlink(job, claim_id);
        Some(job)
    }

    fn get(&self, claim_id: &str) -> Option<&JobId> {
        self.by_claim.get(claim_id)
    }

    fn contains_key(&self, claim_id: &str) -> bool {
        self.by_claim.contains_key(claim_id)
    }

    /// The claims `job` runs on (one, or a parallel job's nodes').
    fn claims_of(&self, job: JobId) -> Vec<String> {
        self.by_job
            .get(&job)
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default()
    }
}

/// A parallel job's claims, one per node (HTCondor's dedicated
/// scheduler's allocation): held until every node has one, then all
/// activated together; torn down together.
#[derive(Clone, Debug)]
struct Gang {
    /// How many machines it runs on (MaxHosts).
    nodes: usize,
    /// The claims made for it, in the order they came; at activation the
    /// n-th is node n.
    claims: Vec<String>,
    /// Those found idle, ready to run a node.
    idle: BTreeSet<String>,
    /// The ParallelSchedulingGroup its first claim chose, where the job
    /// wants one group.
    group: Option<String>,
    /// When its first claim was made: an allocation not complete after
    /// UNUSED_CLAIM_TIMEOUT gives its claims back.
    since: i64,
    /// Its nodes were activated.
    running: bool,
    /// Node 0's end, kept under WAIT_FOR_ALL until the other nodes end.
    node0_end: Option<(RunEnd, RunReport)>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// REQUEST_CLAIM sent, no answer yet.
    Requested,
    /// Granted; waiting for the slot to be idle.
    Granted,
    /// ACTIVATE_CLAIM sent for `job`.
    Activating,
    /// Its job runs.
    Running,
    /// Its job was evicted: the startd is ending the claim; no reuse.
    Ending,
    /// RELEASE_CLAIM sent.
    Released,
}

#[derive(Clone, Debug)]
struct Claim {
    startd: String,
    slot: String,
    submitter: String,
    /// The job the claim was made for, then the one activated on it.
    job: Option<JobId>,
    phase: Phase,
    /// When it entered its phase (requested, activated, released, ended).
    since: i64,
    cost: f64,
    /// When the startd or its starter last said anything of the claim:
    /// the job's lease runs from there.
    last_heard: i64,
    /// The running job's JobLeaseDuration (seconds; 0 before a job runs).
    lease: i64,
    /// No word for a while: the job log says it is disconnected (022).
    disconnected: bool,
    /// Re-made at a restart of the access point from the job's ad: the
    /// startd's first word reconnects to it (023).
    reconnecting: bool,
    /// The startd said it holds no such claim (at this time).
    gone_since: Option<i64>,
}

/// Where the job's startd listens (its StartdIpAddr), for the job log.
fn startd_address(queue: &JobQueue, job: JobId) -> String {
    queue
        .job(job)
        .map(|ad| match ad.eval_attr(attr::STARTD_IP_ADDR, &Env::at(0)) {
            Value::Str(s) => s.to_string(),
            _ => String::new(),
        })
        .unwrap_or_default()
}

/// Whether `claim_id` runs a parallel job's node other than node 0 (whose
/// starter speaks for the job: its start, suspension, disconnection).
fn secondary_node(gangs: &BTreeMap<JobId, Gang>, claim_id: &str, job: JobId) -> bool {
    gangs
        .get(&job)
        .and_then(|g| g.claims.iter().position(|c| c == claim_id))
        .is_some_and(|node| node > 0)
}

/// JobLeaseDuration where a job has none (HTCondor's condor_submit
/// default).
const DEFAULT_LEASE: i64 = 2400;

/// A job's lease: its JobLeaseDuration, where that is a positive number.
fn lease_of(job: &ClassAd) -> i64 {
    match job.eval_attr("JobLeaseDuration", &Env::at(0)) {
        Value::Int(n) if n > 0 => n,
        Value::Real(r) if r >= 1.0 => r as i64,
        _ => DEFAULT_LEASE,
    }
}

/// The schedd's claims and its idle jobs by submitter.
#[derive(Clone, Debug)]
pub struct Claims {
    schedd: String,
    id_prefix: String,
    alive_interval: i64,
    /// The pool's concurrency limits (the negotiator's configuration): a
    /// reused claim skips the negotiator, so the schedd must not break them.
    limits: ConcurrencyLimits,
    seq: u64,
    claims: ByClaim<Claim>,
    /// Activated runs not yet over, by claim id: a run outlives its claim
    /// when the startd ends the claim while the starter is still at work.
    runs: Runs,
    /// Each submitter's idle jobs not on a claim, in its order: JobPrio
    /// (higher first), then job id.
    idle: BTreeMap<String, BTreeSet<(i64, JobId)>>,
    idle_key: FxHashMap<JobId, (String, i64)>,
    /// Jobs on a claim (requested, activating or running).
    on_claim: BTreeSet<JobId>,
    /// Runs that outlived their claim (the startd ended it while the
    /// starter was at work): when their starter last said anything, their
    /// lease, and `slot@startd`. A run whose last report never comes is
    /// given up when its lease ends, as a silent claim's is.
    orphans: ByClaim<(i64, i64, String)>,
    /// The latest `now` it was given (for when a claim is released).
    clock: i64,
    /// The dedicated scheduler's name (`DedicatedScheduler@<schedd>`):
    /// the submitter parallel jobs' claims are made and charged as.
    scheduler: String,
    /// Parallel jobs' allocations, by job.
    gangs: BTreeMap<JobId, Gang>,
    /// UNUSED_CLAIM_TIMEOUT: how long a parallel job's incomplete
    /// allocation holds its claims.
    unused_claim_timeout: i64,
}

/// UNUSED_CLAIM_TIMEOUT's default (HTCondor's dedicated scheduler).
pub const DEFAULT_UNUSED_CLAIM_TIMEOUT: i64 = 600;

fn job_prio(ad: &ClassAd) -> i64 {
    ad.eval_attr("JobPrio", &Env::at(0)).as_int().unwrap_or(0)
}

impl Claims {
    /// The claims of the schedd named `schedd` (what its claim requests
    /// say); claim ids are `<id_prefix>#<n>`.
    pub fn new(
        schedd: &str,
        id_prefix: &str,
        alive_interval: i64,
        limits: ConcurrencyLimits,
    ) -> Claims {
        // Every id this schedd makes starts so (see `claim_ids`).
        let prefix: Arc<str> = Arc::from(format!("{id_prefix}#"));
        Claims {
            schedd: schedd.to_string(),
            id_prefix: id_prefix.to_string(),
            alive_interval,
            limits,
            seq: 0,
            claims: ByClaim::new(Arc::clone(&prefix)),
            runs: Runs::new(Arc::clone(&prefix)),
            idle: BTreeMap::new(),
            idle_key: FxHashMap::default(),
            on_claim: BTreeSet::new(),
            orphans: ByClaim::new(prefix),
            clock: 0,
            scheduler: dedicated::scheduler_name(schedd),
            gangs: BTreeMap::new(),
            unused_claim_timeout: DEFAULT_UNUSED_CLAIM_TIMEOUT,
        }
    }

    /// UNUSED_CLAIM_TIMEOUT (seconds; at least one keep-alive round).
    pub fn set_unused_claim_timeout(&mut self, seconds: i64) {
        self.unused_claim_timeout = seconds.max(1);
    }

    /// Who a job's claims are made as: its submitter, or for a parallel
    /// job the dedicated scheduler (as HTCondor's schedd claims
    /// dedicated machines).
    fn submitter(&self, job: &ClassAd) -> String {
        if dedicated::is_parallel(job) {
            self.scheduler.clone()
        } else {
            submitter_of(job)
        }
    }

    /// What the negotiator is offered for the idle job `id`: its ad, or
    /// for a parallel job one node request per machine it still needs.
    pub fn requests_for(&self, id: JobId, ad: Arc<ClassAd>) -> Vec<Arc<ClassAd>> {
        if !dedicated::is_parallel(&ad) {
            return vec![ad];
        }
        let (held, group) = match self.gangs.get(&id) {
            Some(g) if g.running => return Vec::new(),
            Some(g) => (g.claims.len(), g.group.as_deref()),
            None => (0, None),
        };
        let wanted = dedicated::machine_count(&ad).saturating_sub(held);
        if wanted == 0 {
            return Vec::new();
        }
        let req = Arc::new(dedicated::node_request(&ad, &self.scheduler, group));
        vec![req; wanted]
    }

    /// The node a claim runs of its parallel job, and how many nodes the
    /// job has.
    pub fn node_of(&self, claim_id: &str) -> Option<(usize, usize)> {
        let j = self.runs.get(claim_id)?;
        let g = self.gangs.get(j)?;
        let node = g.claims.iter().position(|c| c == claim_id)?;
        Some((node, g.nodes))
    }

    /// The parallel job the claim was made for, while its allocation is
    /// being gathered.
    fn gathering(&self, claim_id: &str) -> Option<JobId> {
        let j = self.claims.get(claim_id)?.job?;
        let g = self.gangs.get(&j)?;
        (!g.running && g.claims.iter().any(|c| c == claim_id)).then_some(j)
    }

    /// The claim no longer serves its parallel job's allocation (refused,
    /// ended, given back); an allocation with no claims left is gone.
    fn leave_gang(&mut self, claim_id: &str, job: JobId) {
        if let Some(g) = self.gangs.get_mut(&job) {
            if g.running {
                return;
            }
            g.claims.retain(|c| c != claim_id);
            g.idle.remove(claim_id);
            if g.claims.is_empty() {
                self.gangs.remove(&job);
            }
        }
    }

    /// A parallel job's allocation ends: every node still running is
    /// stopped (`stop`), every claim given back, the job off its claims.
    fn end_gang(&mut self, job: JobId, stop: Stop, queue: &JobQueue, ready: &mut Ready) {
        let Some(g) = self.gangs.remove(&job) else {
            return;
        };
        for claim_id in g.claims {
            if self.runs.remove(&claim_id).is_some() {
                if let Some(c) = self.claims.get(&claim_id) {
                    ready.stops.push((c.startd.clone(), claim_id.clone(), stop));
                }
            }
            if let Some(c) = self.claims.get_mut(&claim_id) {
                c.job = None;
            }
            self.release(&claim_id, ready);
        }
        self.free(job, queue);
    }
    /// New concurrency limits (after a reconfiguration).
    pub fn set_limits(&mut self, limits: ConcurrencyLimits) {
        self.limits = limits;
    }

    /// Whether any job waits for a slot.
    pub fn has_idle_jobs(&self) -> bool {
        !self.idle.is_empty()
    }

    /// How many jobs wait for a slot.
    pub fn idle_count(&self) -> usize {
        self.idle.values().map(BTreeSet::len).sum()
    }

    /// Each submitter's idle jobs, in its order (what the schedd offers
    /// the negotiator), submitters by name.
    pub fn idle_jobs(&self) -> impl Iterator<Item = (&str, impl Iterator<Item = JobId> + '_)> {
        self.idle
            .iter()
            .map(|(who, set)| (who.as_str(), set.iter().map(|&(_, j)| j)))
    }

    /// How many claims the schedd holds or has asked for.
    pub fn len(&self) -> usize {
        self.claims.len()
    }

    pub fn is_empty(&self) -> bool {
        self.claims.is_empty()
    }

    /// The jobs on this schedd's claims (requested, starting or running).
    pub fn jobs_on_claims(&self) -> impl Iterator<Item = JobId> + '_ {
        self.on_claim.iter().copied()
    }

    /// The concurrency limits with what the jobs on claims hold taken.
    pub fn limits_in_use(&self, queue: &JobQueue, now: i64) -> ConcurrencyLimits {
        let jobs = self.on_claim.iter().filter_map(|&j| queue.job(j));
        reuse::limits_in_use(&self.limits, jobs, now)
    }

    // ---- the idle index -----------------------------------------------

    /// Brings the idle index up to date for `id`; true if it is idle now.
    fn refresh(&mut self, id: JobId, queue: &JobQueue) -> bool {
        if let Some((who, prio)) = self.idle_key.remove(&id) {
            if let Some(set) = self.idle.get_mut(&who) {
                set.remove(&(-prio, id));
                if set.is_empty() {
                    self.idle.remove(&who);
                }
            }
        }
        if self.on_claim.contains(&id) {
            return false;
        }
        let Some(ad) = queue
            .job(id)
            .filter(|ad| status_of(ad) == Some(JobStatus::Idle))
        else {
            return false;
        };
        let who = self.submitter(ad);
        let prio = job_prio(ad);
        self.idle
            .entry(who.clone())
            .or_default()
            .insert((-prio, id));
        self.idle_key.insert(id, (who, prio));
        true
    }

    /// The job is on no claim any more; idle again if the queue says so.
    fn free(&mut self, id: JobId, queue: &JobQueue) {
        self.on_claim.remove(&id);
        self.refresh(id, queue);
    }

    /// The queue changed these jobs (the caller applied events, a user
    /// acted, periodic policy ran, jobs were submitted): the idle index
    /// follows, and a job that was held or removed while it runs has its
    /// run stopped and its claim released. Asks for a cycle when a job
    /// became idle.
    pub fn jobs_changed(&mut self, ids: &[JobId], queue: &JobQueue) -> Ready {
        let mut ready = Ready::default();
        let mut fresh = false;
        let stop_of = |j: JobId| match queue.status(j) {
            Some(JobStatus::Held) => Some(Stop::Hold),
            Some(JobStatus::Removed | JobStatus::Completed) | None => Some(Stop::Remove),
            _ => None,
        };
        for &id in ids {
            // A parallel job's allocation ends together: all its nodes
            // when it is held or removed while they run, all its claims
            // when it stops being idle before they do.
            if let Some(g) = self.gangs.get(&id) {
                let stop = match (g.running, stop_of(id)) {
                    (true, stop) => stop,
                    (false, _) if queue.status(id) != Some(JobStatus::Idle) => Some(Stop::Remove),
                    _ => None,
                };
                if let Some(stop) = stop {
                    self.end_gang(id, stop, queue, &mut ready);
                }
            }
            fresh |= self.refresh(id, queue);
        }
        // Most changed jobs run on and keep running: their claims are
        // copied out only when their run is to stop.
        let mut stopped: Vec<(String, Stop)> = Vec::new();
        for &j in ids {
            let Some(claims) = self.runs.by_job.get(&j) else {
                continue;
            };
            if let Some(stop) = stop_of(j) {
                stopped.extend(claims.iter().map(|c| (c.clone(), stop)));
            }
        }
        for (claim_id, stop) in stopped {
            let startd = self
                .claims
                .get(&claim_id)
                .map(|c| c.startd.clone())
                .unwrap_or_default();
            ready.stops.push((startd, claim_id.clone(), stop));
            self.release(&claim_id, &mut ready);
        }
        ready.reschedule = fresh;
        ready
    }

    /// condor_vacate_job (ACT_ON_JOBS with JA_VACATE_JOBS or
    /// JA_VACATE_FAST_JOBS): the machine of each of `jobs` that runs is
    /// asked to evict it, gracefully (its soft kill signal and vacate
    /// time) or, with `fast`, at once. Its claim ends with the eviction;
    /// the starter's report of it puts the job back to idle (event 004),
    /// as when the machine's own policy evicts it. A job with no run has
    /// nothing to vacate (HTCondor: no effect).
    pub fn vacate(&self, jobs: &[JobId], fast: bool) -> Ready {
        let mut ready = Ready::default();
        for c in jobs
            .iter()
            .flat_map(|&j| self.runs.claims_of(j))
            .filter_map(|id| self.claims.get(&id))
        {
            ready.to_startd.push((
                c.startd.clone(),
                Event::Vacate {
                    slot: Some(c.slot.clone()),
                    fast,
                },
            ));
        }
        ready
    }

    // ---- the negotiator's matches --------------------------------------

    /// The negotiator matched `m.job` to a slot: claim it.
    pub fn matched(&mut self, m: MatchInfo, queue: &JobQueue, now: i64) -> Ready {
        self.clock = self.clock.max(now);
        let mut ready = Ready::default();
        if queue.status(m.job) != Some(JobStatus::Idle) || self.on_claim.contains(&m.job) {
            return ready;
        }
        let Some(ad) = queue.job(m.job) else {
            return ready;
        };
        // A parallel job's match is for one of its nodes: the claim is
        // asked for with the node request's ad (the execute point's START
        // reads its Scheduler) and held until every node has one.
        let parallel = dedicated::is_parallel(ad);
        let mut first = true;
        let mut job = None;
        if parallel {
            let g = self.gangs.entry(m.job).or_insert_with(|| Gang {
                nodes: dedicated::machine_count(ad),
                claims: Vec::new(),
                idle: BTreeSet::new(),
                group: None,
                since: now,
                running: false,
                node0_end: None,
            });
            if g.running || g.claims.len() >= g.nodes {
                return ready;
            }
            // All nodes in one ParallelSchedulingGroup, where the job
            // asks for that: the first match chooses the group; the job's
            // later node requests ask for it, and a match elsewhere made
            // before they did is not claimed.
            if dedicated::wants_one_group(ad) {
                let Some(group) = m.group.clone() else {
                    return ready;
                };
                match &g.group {
                    Some(chosen) if *chosen != group => return ready,
                    Some(_) => {}
                    None => g.group = Some(group),
                }
            }
            first = g.claims.is_empty();
            job = Some(dedicated::node_request(
                ad,
                &self.scheduler,
                g.group.as_deref(),
            ));
        }
        self.seq += 1;
        let claim_id = format!("{}#{}", self.id_prefix, self.seq);
        let submitter = self.submitter(ad);
        let request = ClaimRequest {
            claim_id: claim_id.clone(),
            job: job.unwrap_or_else(|| ad.clone()),
            schedd: self.schedd.clone(),
            user: submitter.clone(),
            alive_interval: Some(self.alive_interval),
            by_user_priority: m.by_user_priority,
            preempt_dynamic: m.preempt_dynamic,
        };
        if first {
            ready.job_events.push((m.job, JobEvent::Matched));
        }
        self.claims.insert(
            claim_id.clone(),
            Claim {
                startd: m.startd.clone(),
                slot: m.slot.clone(),
                submitter,
                job: Some(m.job),
                phase: Phase::Requested,
                since: now,
                cost: m.cost,
                last_heard: now,
                lease: 0,
                disconnected: false,
                reconnecting: false,
                gone_since: None,
            },
        );
        if let Some(g) = self.gangs.get_mut(&m.job).filter(|_| parallel) {
            // Still idle (offered for its other nodes) until all start.
            g.claims.push(claim_id.clone());
        } else {
            self.on_claim.insert(m.job);
            self.refresh(m.job, queue);
        }
        ready.to_startd.push((
            m.startd,
            Event::RequestClaim {
                slot: m.slot,
                request: Box::new(request),
            },
        ));
        ready
    }

    // ---- what the startds say ------------------------------------------

    /// What a startd said about one of this schedd's claims; other
    /// actions are not the schedd's and change nothing.
    pub fn startd_said(&mut self, action: Action, queue: &JobQueue, now: i64) -> Ready {
        self.clock = self.clock.max(now);
        let mut ready = Ready::default();
        match &action {
            Action::ClaimGranted { claim_id, .. }
            | Action::ClaimIdle { claim_id, .. }
            | Action::ActivationRefused { claim_id, .. }
            | Action::ClaimAlive {
                claim_id,
                alive: true,
                ..
            } => self.heard(claim_id, queue, now, &mut ready),
            _ => {}
        }
        match action {
            Action::ClaimAlive {
                claim_id,
                alive: false,
                ..
            } => {
                // Its job's last report may still be on its way (the
                // answer and the report travel apart): the run is given
                // up only if nothing comes within an ALIVE_INTERVAL.
                if let Some(c) = self.claims.get_mut(&claim_id) {
                    c.gone_since.get_or_insert(now);
                }
            }
            Action::ClaimGranted { slot, claim_id, .. } => {
                if let Some(c) = self.claims.get_mut(&claim_id) {
                    c.slot = slot;
                    if c.phase == Phase::Requested {
                        c.phase = Phase::Granted;
                    }
                    ready.charges.push(Charge::Add {
                        submitter: c.submitter.clone(),
                        claim_id,
                        cost: c.cost,
                    });
                }
            }
            Action::ClaimRefused {
                slot,
                claim_id,
                reason,
                ..
            } => {
                if let Some(c) = self.claims.remove(&claim_id) {
                    if let Some(j) = c.job {
                        self.leave_gang(&claim_id, j);
                        self.free(j, queue);
                        ready
                            .job_notes
                            .push((j, format!("claim of {slot}@{} refused: {reason}", c.startd)));
                    }
                }
            }
            Action::ClaimIdle {
                slot,
                claim_id,
                slot_ad,
                claimed_at,
                worklife,
                ..
            } => self.claim_idle(
                &slot,
                &claim_id,
                slot_ad.as_deref(),
                (claimed_at, worklife),
                queue,
                now,
                &mut ready,
            ),
            Action::ActivationRefused {
                claim_id, reason, ..
            } => {
                if let Some(j) = self.runs.remove(&claim_id) {
                    self.free(j, queue);
                    ready
                        .job_notes
                        .push((j, format!("the startd would not run it: {reason}")));
                }
                if let Some(c) = self.claims.get_mut(&claim_id) {
                    c.job = None;
                }
                self.release(&claim_id, &mut ready);
            }
            Action::ClaimEnded {
                claim_id, reason, ..
            } => {
                ready.charges.push(Charge::Remove {
                    claim_id: claim_id.clone(),
                });
                if let Some(c) = self.claims.remove(&claim_id) {
                    // A job whose activation was sent has a run in flight
                    // (its starter reports how it ended; its lease goes
                    // on); one still waiting for its claim is idle again.
                    if self.runs.contains_key(&claim_id) {
                        let lease = if c.lease > 0 { c.lease } else { DEFAULT_LEASE };
                        self.orphans.insert(
                            claim_id.clone(),
                            (now, lease, format!("{}@{}", c.slot, c.startd)),
                        );
                    }
                    if let (Some(j), false) = (c.job, self.runs.contains_key(&claim_id)) {
                        self.leave_gang(&claim_id, j);
                        self.free(j, queue);
                        ready.job_notes.push((
                            j,
                            format!(
                                "the claim on {}@{} ended before the job started: {reason}",
                                c.slot, c.startd
                            ),
                        ));
                    }
                }
                ready.reschedule = self.has_idle_jobs();
            }
            _ => {}
        }
        ready
    }

    /// The claim is idle: run its job, or the submitter's next one, or
    /// release it.
    #[allow(clippy::too_many_arguments)]
    fn claim_idle(
        &mut self,
        slot: &str,
        claim_id: &str,
        slot_ad: Option<&ClassAd>,
        (claimed_at, worklife): (i64, Option<i64>),
        queue: &JobQueue,
        now: i64,
        ready: &mut Ready,
    ) {
        let Some(c) = self.claims.get_mut(claim_id) else {
            // Not a claim of ours (any more): give it back.
            return;
        };
        c.slot = slot.to_string();
        match c.phase {
            // Still idle after it was released: the release was lost.
            Phase::Released => return self.send_release(claim_id, ready),
            // Idle while its job runs, as far as this schedd knows: the
            // job's last report is on its way, or was lost (the startd
            // keeps it and sends it again with its answer to the next
            // keep-alive; the job's lease ends the wait).
            Phase::Running if self.runs.contains_key(claim_id) => return,
            Phase::Ending | Phase::Running => {
                return self.release(claim_id, ready);
            }
            // Still idle after it was activated: the activation was lost
            // (one the startd refused would have said so). Its job is
            // activated again, if it is still idle.
            Phase::Activating => {
                if let Some(j) = self.runs.remove(claim_id) {
                    self.on_claim.remove(&j);
                    let c = self.claims.get_mut(claim_id).expect("found above");
                    c.job = Some(j);
                }
            }
            Phase::Requested | Phase::Granted => {}
        }
        if let Some(j) = self.gathering(claim_id) {
            return self.gang_member_idle(claim_id, j, queue, now, ready);
        }
        let c = self.claims.get_mut(claim_id).expect("found above");
        // The job it was made for, if it is still idle; else the
        // submitter's next job the slot takes, while the claim is young.
        let original = c.job.take();
        let submitter = c.submitter.clone();
        let first = original.filter(|&j| queue.status(j) == Some(JobStatus::Idle));
        if let (Some(j), None) = (original, first) {
            self.free(j, queue);
        }
        let next = first.or_else(|| {
            // Reuse needs the slot as it is now; without it (the claim's
            // own job left before it ran) the claim is given back.
            let slot_ad = slot_ad?;
            if !reuse::claim_young(worklife, claimed_at, now) {
                return None;
            }
            let idle = self.idle.get(&submitter)?;
            let candidates = idle
                .iter()
                .take(reuse::CANDIDATES)
                .filter_map(|&(_, j)| queue.job(j).map(|ad| (j, ad)));
            reuse::next_job(slot_ad, candidates, || self.limits_in_use(queue, now), now)
        });
        let job = next.and_then(|j| queue.job(j).map(|ad| (j, ad.clone())));
        let Some((j, ad)) = job else {
            return self.release(claim_id, ready);
        };
        let c = self.claims.get_mut(claim_id).expect("found above");
        c.job = Some(j);
        c.phase = Phase::Activating;
        c.since = now;
        c.lease = lease_of(&ad);
        c.last_heard = now;
        let startd = c.startd.clone();
        self.runs.insert(claim_id.to_string(), j);
        self.on_claim.insert(j);
        self.refresh(j, queue);
        ready.to_startd.push((
            startd,
            Event::Activate {
                slot: slot.to_string(),
                claim_id: claim_id.to_string(),
                job: Box::new(ad),
            },
        ));
    }

    /// A claim of a parallel job's allocation is idle: once every node
    /// has one, all nodes are activated together, each with its own ad
    /// (`dedicated::node_ad`).
    fn gang_member_idle(
        &mut self,
        claim_id: &str,
        job: JobId,
        queue: &JobQueue,
        now: i64,
        ready: &mut Ready,
    ) {
        let ad = match queue.job(job) {
            Some(ad) if queue.status(job) == Some(JobStatus::Idle) => ad.clone(),
            _ => return self.end_gang(job, Stop::Remove, queue, ready),
        };
        if let Some(c) = self.claims.get_mut(claim_id) {
            c.phase = Phase::Granted;
        }
        let g = self.gangs.get_mut(&job).expect("gathering");
        g.idle.insert(claim_id.to_string());
        if g.idle.len() < g.nodes {
            return;
        }
        g.running = true;
        let (nodes, members) = (g.nodes, g.claims.clone());
        let lease = lease_of(&ad);
        for (node, id) in members.iter().enumerate() {
            let Some(c) = self.claims.get_mut(id) else {
                continue;
            };
            c.job = Some(job);
            c.phase = Phase::Activating;
            c.since = now;
            c.lease = lease;
            c.last_heard = now;
            let (startd, slot) = (c.startd.clone(), c.slot.clone());
            self.runs.insert(id.clone(), job);
            ready.to_startd.push((
                startd,
                Event::Activate {
                    slot,
                    claim_id: id.clone(),
                    job: Box::new(dedicated::node_ad(&ad, &self.scheduler, node, nodes)),
                },
            ));
        }
        self.on_claim.insert(job);
        self.refresh(job, queue);
    }

    /// Gives the claim back (RELEASE_CLAIM), once.
    fn release(&mut self, claim_id: &str, ready: &mut Ready) {
        let Some(c) = self.claims.get_mut(claim_id) else {
            return;
        };
        if c.phase == Phase::Released {
            return;
        }
        c.phase = Phase::Released;
        c.since = self.clock;
        self.send_release(claim_id, ready);
    }

    /// RELEASE_CLAIM for a claim (again, when the startd still holds it).
    fn send_release(&mut self, claim_id: &str, ready: &mut Ready) {
        let Some(c) = self.claims.get(claim_id) else {
            return;
        };
        ready.to_startd.push((
            c.startd.clone(),
            Event::ReleaseClaim {
                slot: c.slot.clone(),
                claim_id: claim_id.to_string(),
            },
        ));
    }

    /// Every ALIVE_INTERVAL: keep-alives for the claims the schedd holds
    /// (the startds' claim leases), and an end to claims whose messages
    /// were lost: a claim request with no answer after
    /// [`Claims::request_timeout`] is given up (its job idle again, a
    /// release sent in case it was granted after all); a released or
    /// evicted claim the startd never said ended is forgotten after
    /// [`Claims::forget_after`] (the startd's lease has ended it by then).
    pub fn keep_alive(&mut self, queue: &JobQueue, now: i64) -> Ready {
        self.clock = self.clock.max(now);
        let mut ready = Ready::default();
        self.check_leases(queue, now, &mut ready);
        let (request_timeout, forget_after) = (self.request_timeout(), self.forget_after());
        let unanswered: Vec<String> = self
            .claims
            .iter()
            .filter(|(_, c)| c.phase == Phase::Requested && now - c.since >= request_timeout)
            .map(|(id, _)| id.clone())
            .collect();
        for id in unanswered {
            let c = self.claims.get_mut(&id).expect("listed above");
            if let Some(j) = c.job.take() {
                ready.job_notes.push((
                    j,
                    format!(
                        "the claim request for {}@{} had no answer in {request_timeout} s; \
                         the job waits for another match",
                        c.slot, c.startd
                    ),
                ));
                self.leave_gang(&id, j);
                self.free(j, queue);
                ready.reschedule = true;
            }
            self.release(&id, &mut ready);
        }
        // A parallel job that could not get all its machines within
        // UNUSED_CLAIM_TIMEOUT gives back the claims it holds, so that
        // two jobs each holding part of what both need do not wait for
        // ever; it asks again.
        let stale: Vec<(JobId, usize, usize)> = self
            .gangs
            .iter()
            .filter(|(_, g)| !g.running && now - g.since >= self.unused_claim_timeout)
            .map(|(&j, g)| (j, g.claims.len(), g.nodes))
            .collect();
        for (j, held, nodes) in stale {
            ready.job_notes.push((
                j,
                format!(
                    "held {held} of the {nodes} machines it needs for {} s                      (UNUSED_CLAIM_TIMEOUT); claims given back, asking again",
                    self.unused_claim_timeout
                ),
            ));
            self.end_gang(j, Stop::Remove, queue, &mut ready);
            ready.reschedule = true;
        }
        let forgotten: Vec<String> = self
            .claims
            .iter()
            .filter(|(id, c)| {
                matches!(c.phase, Phase::Released | Phase::Ending)
                    && now - c.since >= forget_after
                    && !self.runs.contains_key(id)
            })
            .map(|(id, _)| id.clone())
            .collect();
        for id in forgotten {
            self.claims.remove(&id);
            ready.charges.push(Charge::Remove { claim_id: id });
        }
        for (id, c) in self.claims.iter() {
            if c.phase == Phase::Released {
                continue;
            }
            ready.to_startd.push((
                c.startd.clone(),
                Event::KeepAlive {
                    claim_id: id.clone(),
                },
            ));
        }
        ready
    }

    /// The leases of the running jobs (HTCondor's JobLeaseDuration, as
    /// its shadow keeps it): a job whose execute point has said nothing
    /// for two keep-alive rounds is disconnected (022); one silent for
    /// longer than its lease (and a round more, by which time the
    /// execute point, which counts the lease from the last keep-alive it
    /// had, has killed it) is given up and runs again elsewhere (024), as
    /// is one whose startd says it holds no such claim.
    fn check_leases(&mut self, queue: &JobQueue, now: i64, ready: &mut Ready) {
        let round = self.alive_interval.max(1);
        let mut lost = Vec::new();
        // Every run is looked at every round, and nearly all are fine: the
        // runs and the claims are walked side by side (both are in claim
        // id order) rather than each run's claim looked up, and the queue
        // is asked of the job's status only for a run that is late.
        let mut claims = self.claims.keyed_mut().peekable();
        for (key, &j) in self.runs.by_claim.keyed() {
            let claim_id = key.as_str();
            while claims.next_if(|(k, _)| *k < key).is_some() {}
            let Some((_, c)) = claims.next_if(|(k, _)| *k == key) else {
                continue;
            };
            let silent = now - c.last_heard;
            let late = c.gone_since.is_some_and(|t| now - t >= round)
                || silent > c.lease + round
                || (!c.disconnected && !c.reconnecting && silent > 2 * round);
            if !late || !queue.status(j).is_some_and(JobStatus::is_active) {
                continue;
            }
            if c.gone_since.is_some_and(|t| now - t >= round) {
                lost.push((
                    claim_id.to_string(),
                    "Claim not found at execution machine".to_string(),
                ));
            } else if silent > c.lease + round {
                lost.push((
                    claim_id.to_string(),
                    format!(
                        "Job disconnected too long: JobLeaseDuration ({} seconds) expired",
                        c.lease
                    ),
                ));
            } else if !c.disconnected
                && !c.reconnecting
                && silent > 2 * round
                && !secondary_node(&self.gangs, claim_id, j)
            {
                c.disconnected = true;
                // Named only here: every claim is checked every round.
                let startd = format!("{}@{}", c.slot, c.startd);
                ready.job_events.push((
                    j,
                    JobEvent::Disconnected {
                        reason: format!("No word from the execute point for {silent} seconds"),
                        address: startd_address(queue, j),
                        startd,
                    },
                ));
            }
        }
        drop(claims);
        // Runs that outlived their claim.
        let runs = &self.runs;
        self.orphans.retain(|id, _| runs.contains_key(id));
        for (claim_id, (heard, lease, _)) in self.orphans.iter() {
            let active = self
                .runs
                .get(claim_id)
                .is_some_and(|&j| queue.status(j).is_some_and(JobStatus::is_active));
            if active && now - heard > lease + round {
                lost.push((
                    claim_id.clone(),
                    format!(
                        "Job disconnected too long: JobLeaseDuration ({lease} seconds) expired"
                    ),
                ));
            }
        }
        for (claim_id, reason) in lost {
            self.give_up(&claim_id, reason, queue, ready);
        }
    }

    /// The startd or a starter said something of `claim_id`: its lease
    /// starts again, and a job that was disconnected (or is being
    /// reconnected after a restart) is reconnected (023).
    fn heard(&mut self, claim_id: &str, queue: &JobQueue, now: i64, ready: &mut Ready) {
        if let Some((heard, _, _)) = self.orphans.get_mut(claim_id) {
            *heard = now;
        }
        let Some(c) = self.claims.get_mut(claim_id) else {
            return;
        };
        c.last_heard = now;
        c.gone_since = None;
        if !(c.disconnected || c.reconnecting) {
            return;
        }
        c.disconnected = false;
        c.reconnecting = false;
        let startd = format!("{}@{}", c.slot, c.startd);
        if let Some(&j) = self.runs.get(claim_id) {
            if queue.status(j).is_some_and(JobStatus::is_active) {
                ready.job_events.push((
                    j,
                    JobEvent::Reconnected {
                        startd,
                        address: startd_address(queue, j),
                    },
                ));
            }
        }
    }

    /// A running job's execute point is given up (its lease expired, or
    /// it no longer has the claim): the job is idle again (024), the claim
    /// forgotten (a release goes in case the startd still holds it).
    fn give_up(&mut self, claim_id: &str, reason: String, queue: &JobQueue, ready: &mut Ready) {
        let Some(j) = self.runs.remove(claim_id) else {
            return;
        };
        self.on_claim.remove(&j);
        let startd = self
            .claims
            .get(claim_id)
            .map(|c| format!("{}@{}", c.slot, c.startd))
            .or_else(|| self.orphans.remove(claim_id).map(|(_, _, s)| s))
            .unwrap_or_default();
        ready
            .job_events
            .push((j, JobEvent::ReconnectFailed { reason, startd }));
        self.send_release(claim_id, ready);
        self.claims.remove(claim_id);
        ready.charges.push(Charge::Remove {
            claim_id: claim_id.to_string(),
        });
        ready.reschedule = true;
        // One node lost is the parallel job's end on every node.
        self.end_gang(j, Stop::Remove, queue, ready);
    }

    /// At a restart of the access point: job `job` ran on `claim_id` at
    /// the startd `startd` (slot `slot`) when the last one stopped, and,
    /// as far as anyone knows, runs there still. The claim is made again,
    /// running, and a keep-alive asks the startd for it at once; its
    /// answer reconnects the job (023), or says the claim is gone (024,
    /// the job runs again), and silence until the lease ends gives it up.
    pub fn reconnect(
        &mut self,
        job: JobId,
        claim_id: &str,
        (startd, slot): (&str, &str),
        queue: &JobQueue,
        now: i64,
    ) -> Ready {
        self.clock = self.clock.max(now);
        let mut ready = Ready::default();
        let Some(ad) = queue.job(job) else {
            return ready;
        };
        self.claims.insert(
            claim_id.to_string(),
            Claim {
                startd: startd.to_string(),
                slot: slot.to_string(),
                submitter: submitter_of(ad),
                job: Some(job),
                phase: Phase::Running,
                since: now,
                cost: 1.0,
                last_heard: now,
                lease: lease_of(ad),
                disconnected: false,
                reconnecting: true,
                gone_since: None,
            },
        );
        self.runs.insert(claim_id.to_string(), job);
        self.on_claim.insert(job);
        self.refresh(job, queue);
        ready.to_startd.push((
            startd.to_string(),
            Event::KeepAlive {
                claim_id: claim_id.to_string(),
            },
        ));
        ready
    }

    /// The job whose run is on `claim_id` (being activated, running, or
    /// ending): what a starter on another host may transfer files for.
    pub fn job_of(&self, claim_id: &str) -> Option<JobId> {
        self.runs.get(claim_id).copied()
    }

    /// How long a claim request waits for the startd's answer.
    pub fn request_timeout(&self) -> i64 {
        self.alive_interval.max(60)
    }

    /// How long a released or evicted claim is kept waiting for the
    /// startd's word that it ended: longer than the startd's claim lease
    /// (MAX_CLAIM_ALIVES_MISSED, 6, keep-alives).
    pub fn forget_after(&self) -> i64 {
        8 * self.alive_interval.max(1)
    }

    // ---- what the starters say -----------------------------------------

    /// What the starter running a claim's job said. Reports about claims
    /// that are not this schedd's (fetched work) change nothing.
    pub fn starter_said(&mut self, report: StarterReport, queue: &JobQueue, now: i64) -> Ready {
        self.clock = self.clock.max(now);
        let mut ready = Ready::default();
        self.heard(report.claim_id(), queue, now, &mut ready);
        match report {
            StarterReport::Started {
                claim_id,
                host,
                slot,
            } => {
                let Some(&j) = self.runs.get(&claim_id) else {
                    return ready;
                };
                if let Some(c) = self.claims.get_mut(&claim_id) {
                    if c.phase == Phase::Activating {
                        c.phase = Phase::Running;
                    }
                }
                // A parallel job starts once, with its node 0.
                if secondary_node(&self.gangs, &claim_id, j) {
                    return ready;
                }
                ready.job_events.push((
                    j,
                    JobEvent::Started {
                        host,
                        slot,
                        claim: Some(claim_id),
                    },
                ));
            }
            StarterReport::StartFailed {
                claim_id,
                reason,
                failure,
                subcode,
            } => {
                let Some(j) = self.runs.remove(&claim_id) else {
                    return ready;
                };
                ready.job_events.push((
                    j,
                    JobEvent::Held {
                        reason,
                        code: failure.hold_code(),
                        subcode,
                    },
                ));
                self.on_claim.remove(&j);
                if let Some(c) = self.claims.get_mut(&claim_id) {
                    c.job = None;
                }
                // Given back, as HTCondor's schedd does when its shadow
                // could not start the job (reuse would likely fail alike);
                // a parallel job's other nodes are stopped.
                self.release(&claim_id, &mut ready);
                self.end_gang(j, Stop::Hold, queue, &mut ready);
            }
            StarterReport::Suspended { claim_id, num_pids } => {
                if let Some(&j) = self
                    .runs
                    .get(&claim_id)
                    .filter(|&&j| !secondary_node(&self.gangs, &claim_id, j))
                {
                    ready.job_events.push((j, JobEvent::Suspended { num_pids }));
                }
            }
            StarterReport::Unsuspended { claim_id } => {
                if let Some(&j) = self
                    .runs
                    .get(&claim_id)
                    .filter(|&&j| !secondary_node(&self.gangs, &claim_id, j))
                {
                    if queue.status(j) == Some(JobStatus::Suspended) {
                        ready.job_events.push((j, JobEvent::Unsuspended));
                    }
                }
            }
            StarterReport::Ended {
                claim_id,
                end,
                report,
            } => {
                if let Some(&j) = self
                    .runs
                    .get(&claim_id)
                    .filter(|j| self.gangs.contains_key(j))
                {
                    self.node_ended(&claim_id, j, (end, report), queue, now, &mut ready);
                    return ready;
                }
                // A job's last report comes after its start: one for a
                // claim whose next job is being activated is the previous
                // job's, sent again (the startd repeats it to a schedd
                // that may have been away), and was had.
                if self
                    .claims
                    .get(&claim_id)
                    .is_some_and(|c| c.phase == Phase::Activating)
                {
                    return ready;
                }
                let Some(j) = self.runs.remove(&claim_id) else {
                    return ready;
                };
                if let Some(ev) = exit_event(queue.status(j), end.clone(), report) {
                    ready.job_events.push((j, ev));
                }
                ready.runs_ended.push(j);
                self.on_claim.remove(&j);
                if let Some(c) = self.claims.get_mut(&claim_id) {
                    c.job = None;
                    if c.phase != Phase::Released {
                        c.since = now;
                        c.phase = match end {
                            RunEnd::Evicted { .. } => Phase::Ending,
                            _ => Phase::Granted,
                        };
                    }
                }
            }
        }
        ready
    }
}

impl Claims {
    /// A parallel job's node ended (HTCondor's parallel shadow): its
    /// claim is given back; the job ends when node 0 exits (or, under
    /// `ParallelShutdownPolicy = "WAIT_FOR_ALL"`, when every node has),
    /// with node 0's exit, the nodes still running stopped then; a node
    /// evicted or failed ends the job on every node.
    fn node_ended(
        &mut self,
        claim_id: &str,
        job: JobId,
        (end, report): (RunEnd, RunReport),
        queue: &JobQueue,
        now: i64,
        ready: &mut Ready,
    ) {
        let node = self
            .gangs
            .get(&job)
            .and_then(|g| g.claims.iter().position(|c| c == claim_id));
        self.runs.remove(claim_id);
        if let Some(c) = self.claims.get_mut(claim_id) {
            c.job = None;
            c.since = now;
        }
        self.release(claim_id, ready);
        let wait_for_all = queue
            .job(job)
            .is_some_and(|ad| dedicated::shutdown_policy(ad) == ShutdownPolicy::WaitForAll);
        let others_run = !self.runs.claims_of(job).is_empty();
        let Some(g) = self.gangs.get_mut(&job) else {
            return;
        };
        let finish = match end {
            RunEnd::Exited(_) if node == Some(0) => {
                if wait_for_all && others_run {
                    g.node0_end = Some((end, report));
                    None
                } else {
                    Some((end, report))
                }
            }
            RunEnd::Exited(_) if wait_for_all && !others_run => g.node0_end.take(),
            RunEnd::Exited(_) => None,
            _ => Some((end, report)),
        };
        if let Some((end, report)) = finish {
            if let Some(ev) = exit_event(queue.status(job), end, report) {
                ready.job_events.push((job, ev));
            }
            ready.runs_ended.push(job);
            self.end_gang(job, Stop::Remove, queue, ready);
        }
    }
}

/// What a run's end means for its job, given its status now: none for a
/// job already held, removed or completed (the schedd ended the run);
/// else evicted back to idle, held for output that could not come back
/// (12) or for going over its memory (34), or exited (the queue's exit
/// policy decides the rest).
pub fn exit_event(status: Option<JobStatus>, end: RunEnd, report: RunReport) -> Option<JobEvent> {
    match status {
        None | Some(JobStatus::Held | JobStatus::Removed | JobStatus::Completed) => None,
        Some(_) => Some(match end {
            RunEnd::Evicted { reason } => JobEvent::Evicted {
                checkpointed: false,
                reason,
                report,
            },
            RunEnd::OutputFailed { reason, subcode } => JobEvent::Held {
                reason,
                code: HoldCode(12),
                subcode,
            },
            RunEnd::OutOfMemory { reason } => JobEvent::Held {
                reason,
                code: HoldCode::JOB_OUT_OF_RESOURCES,
                subcode: OUT_OF_MEMORY_SUBCODE,
            },
            RunEnd::Exited(how) => JobEvent::Exited { how, report },
        }),
    }
}
