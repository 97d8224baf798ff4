//! What the engine remembers about one slot: its state and activity with
//! their entry times, the claim on it (and a claim waiting to preempt it),
//! the running job, and the timers the manual's transitions read.

use classad::ClassAd;

use crate::policy::Policy;
use crate::state::{Activity, Pair, State};

pub use crate::layout::SlotResources;

/// Whether a slot is an ordinary one, a partitionable slot dynamic slots
/// are carved from, or one of those dynamic slots.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SlotKind {
    Static,
    Partitionable,
    /// Carved from the partitionable slot named `parent`, as its number
    /// `sub_id` (`slot1_2`).
    Dynamic {
        parent: String,
        sub_id: u32,
    },
}

/// A claim: a schedd's right to run jobs on a slot.
#[derive(Clone, Debug)]
pub struct Claim {
    pub id: String,
    /// The schedd holding it (published as ClientMachine / RemoteScheddName).
    pub schedd: String,
    /// The submitter (RemoteUser) and the job's owner (RemoteOwner).
    pub user: String,
    pub owner: String,
    /// The job ad the claim was requested for.
    pub request: ClassAd,
    /// The machine's RANK for that job (published as CurrentRank).
    pub rank: f64,
    /// When the claim was made, and when its lease was last renewed.
    pub claimed_at: i64,
    pub last_alive: i64,
    /// Seconds without a keep-alive after which the claim is dropped.
    pub lease: i64,
    /// Seconds this claim has spent with a job suspended, and running one.
    pub suspend_time: i64,
    pub run_time: i64,
    /// For a claim made for fetched work (job hooks): the hook keyword.
    pub fetched: Option<String>,
    /// The claim's job has not been started yet (fetched work starts by
    /// itself once the slot is Claimed/Idle).
    pub pending_start: bool,
    /// Its schedd has been told the claim is idle (ready for a job) since
    /// it last became idle ([`crate::Action::ClaimIdle`], once per time).
    pub(crate) told_idle: bool,
    pub(crate) told_idle_at: i64,
    /// A job has been activated on the claim.
    pub(crate) ran_job: bool,
}

/// Why a claim is being retired or preempted; decides where the slot goes
/// afterwards and whether it may be undone (transition 19).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Retirement {
    /// The PREEMPT expression (the owner came back): ends in Owner.
    Preempt,
    /// A better claim is waiting (machine RANK or user priority): ends in
    /// Claimed/Idle with the new claim; undone if the new claim goes away.
    Preempted,
    /// `condor_vacate`, a lost lease, a released claim: ends in Owner.
    Vacate,
    /// Draining: ends in Owner, then Drained.
    Drain,
    /// The startd is shutting down.
    Shutdown,
}

/// One slot's running state.
#[derive(Clone, Debug)]
pub struct Slot {
    /// Slot number (SlotID) and type.
    pub id: u32,
    pub slot_type: Option<u32>,
    /// `slot1`, ...
    pub name: String,
    pub kind: SlotKind,
    /// What the slot has now (for a partitionable slot: what is left), and
    /// what it was given.
    pub resources: SlotResources,
    pub provisioned: SlotResources,
    pub policy: Policy,
    pub state: State,
    pub activity: Activity,
    pub entered_state: i64,
    pub entered_activity: i64,
    pub claim: Option<Claim>,
    /// A claim accepted to preempt the current one, waiting for it to go.
    pub preempting: Option<Claim>,
    /// The job running on the claim, and when it started.
    pub job: Option<ClassAd>,
    /// What the slot ad publishes of the running job, read once when it
    /// starts (meaningful only while `job` is there).
    pub job_facts: JobFacts,
    pub job_start: Option<i64>,
    /// Seconds the current job has spent suspended, and since when it is
    /// suspended now.
    pub job_suspended_total: i64,
    pub suspended_since: Option<i64>,
    /// Why the current claim is retiring or being preempted.
    pub retirement: Option<Retirement>,
    /// The retirement time granted (seconds of job run time), fixed when
    /// retirement starts; `None`: no limit (peaceful shutdown).
    pub retirement_limit: Option<i64>,
    /// In Preempting/Vacating: when vacating must end (then Killing).
    pub vacate_deadline: Option<i64>,
    /// In Preempting/Killing: whether the starter tree was already killed.
    pub killed_tree: bool,
    /// A starter is running a job on this slot.
    pub starter: bool,
    /// When the last benchmark ran (0: never), and its figures.
    pub last_benchmark: i64,
    pub mips: Option<i64>,
    pub kflops: Option<i64>,
    /// A backfill client runs on this slot.
    pub backfill_running: bool,
    /// In Backfill: why the client is being killed (where to go next).
    pub backfill_exit: Option<BackfillExit>,
    /// Latched expressions: (name, last value, when it changed).
    pub latches: Vec<(String, classad::Value, i64)>,
    /// Built-in CPU busy tracking: since when the CPU has been busy.
    pub cpu_busy_since: Option<i64>,
    /// The slot's share of the machine's load (published LoadAvg) and the
    /// share HTCondor's jobs cause (CondorLoadAvg).
    pub load_avg: f64,
    pub condor_load_avg: f64,
    /// Total claim time figures, published as TotalClaimRunTime etc.
    pub total_job_run_time: i64,
    pub total_job_suspend_time: i64,
    /// Job hooks: the keyword of this slot's hooks (if it fetches work),
    /// whether a fetch is under way, and when the last one finished.
    pub hook_keyword: Option<String>,
    pub fetching: bool,
    pub last_fetch: Option<i64>,
    /// Retirement time the running job has left, as last published
    /// (RetirementTimeRemaining; the negotiator reads it for early
    /// preemption).
    pub retirement_remaining: Option<i64>,
    /// Seconds spent in each state and activity before the current one
    /// (published as TotalTime<State><Activity>).
    pub time_in: Vec<(Pair, i64)>,
    /// The slot's ad, kept between polls and brought up to date in place
    /// (`publish`); empty until first built.
    pub ad: ClassAd,
    /// The generation of the ad last published (see
    /// [`crate::engine::Startd::ad_generation`]).
    pub ad_generation: u64,
    /// The generation `ad` was last written under (`None`: being built).
    pub(crate) ad_stamp: Option<u64>,
    /// The facts the slot's ads were last written from, and their generation.
    pub(crate) facts: Option<Box<crate::publish::Generation>>,
    /// Whether polls can change nothing for now (`quiet`), and what its
    /// state's policy was last judged to read.
    pub(crate) quiet: Option<crate::quiet::Quiet>,
    pub(crate) steady: Option<crate::quiet::Steady>,
    /// The running job's retirement and vacate grants, while they hold.
    pub(crate) grants: Option<crate::grants::KeptGrants>,
    /// Where the refreshes of `ad` found its parts last time.
    pub(crate) places: crate::publish::Places,
}

/// Where a slot goes once its backfill client has been killed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BackfillExit {
    /// EVICT_BACKFILL, vacate or shutdown: to Owner (30).
    Owner,
    /// Matched for a job (32).
    Matched,
    /// Claimed for a job (31).
    Claimed,
}

impl Slot {
    pub fn new(
        id: u32,
        slot_type: Option<u32>,
        resources: SlotResources,
        policy: Policy,
        now: i64,
    ) -> Slot {
        Slot {
            id,
            slot_type,
            name: format!("slot{id}"),
            kind: SlotKind::Static,
            provisioned: resources.clone(),
            resources,
            policy,
            state: State::Owner,
            activity: Activity::Idle,
            entered_state: now,
            entered_activity: now,
            claim: None,
            preempting: None,
            job: None,
            job_facts: JobFacts::default(),
            job_start: None,
            job_suspended_total: 0,
            suspended_since: None,
            retirement: None,
            retirement_limit: None,
            vacate_deadline: None,
            killed_tree: false,
            starter: false,
            last_benchmark: 0,
            mips: None,
            kflops: None,
            backfill_running: false,
            backfill_exit: None,
            latches: Vec::new(),
            cpu_busy_since: None,
            load_avg: 0.0,
            condor_load_avg: 0.0,
            total_job_run_time: 0,
            total_job_suspend_time: 0,
            hook_keyword: None,
            fetching: false,
            last_fetch: None,
            retirement_remaining: None,
            time_in: Vec::new(),
            ad: ClassAd::new(),
            ad_generation: 0,
            ad_stamp: None,
            quiet: None,
            steady: None,
            grants: None,
            places: Default::default(),
            facts: None,
        }
    }

    pub fn pair(&self) -> Pair {
        Pair(self.state, self.activity)
    }

    /// Seconds the current job has run, not counting suspension (what
    /// retirement time is measured against).
    pub fn job_run_time(&self, now: i64) -> i64 {
        let Some(start) = self.job_start else {
            return 0;
        };
        let suspended_now = self.suspended_since.map_or(0, |s| now - s);
        (now - start - self.job_suspended_total - suspended_now).max(0)
    }
}

/// The running job's identity as the slot ad publishes it.
#[derive(Clone, Debug, Default)]
pub struct JobFacts {
    /// `JobId`: "cluster.proc".
    pub id: Option<String>,
    pub universe: Option<i64>,
    /// `ConcurrencyLimits`, which the negotiator counts from slot ads.
    pub concurrency_limits: Option<classad::Value>,
}

impl JobFacts {
    pub fn of(job: &ClassAd) -> JobFacts {
        let env = classad::Env::default();
        let int = |a: &str| match job.eval_attr(a, &env) {
            classad::Value::Int(i) => Some(i),
            _ => None,
        };
        JobFacts {
            id: match (int("ClusterId"), int("ProcId")) {
                (Some(c), Some(p)) => Some(format!("{c}.{p}")),
                _ => None,
            },
            universe: int("JobUniverse"),
            concurrency_limits: match job.eval_attr("ConcurrencyLimits", &env) {
                v @ classad::Value::Str(_) => Some(v),
                _ => None,
            },
        }
    }
}
