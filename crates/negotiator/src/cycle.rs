//! The negotiation cycle, as HTCondor's negotiator runs it, as a pure
//! function from a snapshot to a plan.
//!
//! Inputs: the slot ads, the idle jobs of each submitter, the submitters'
//! priorities ([`Priorities`]), the concurrency limits ([`Limits`]), the
//! negotiator's policy ([`Policy`], read from the configuration) and `now`.
//! Output: a [`Plan`]: the matches (plain, or preempting a claim for the
//! machine's RANK or for user priority, with the preempted user), and for
//! every autocluster left with idle jobs, why (HTCondor's rejection reason
//! plus Nomad-style counts of what each step dropped, the basis of
//! `q -better-analyze`). Nothing is committed: the caller sends the matches.
//!
//! The shape follows `matchmaker.cpp` (read for semantics, not copied):
//!
//! - **Pie spins.** Submitters are served in order of effective priority,
//!   lowest (best) first. Each spin gives each submitter its share of the
//!   pool (`share = (1/prio) / Σ(1/prio)` of the total slot weight) less
//!   what it already uses; spins repeat while a spin made a match or a
//!   submitter ran out of jobs. Within its limit a submitter may round up
//!   once per spin (the crumbs rule). Past its limit it may still take
//!   slots whose RANK strictly prefers its job (startd RANK preemption is
//!   not charged against fair share).
//! - **Jobs** of a submitter go in its order: `JobPrio` descending, then
//!   `QDate`, `ClusterId`, `ProcId`. A job that finds nothing rejects its
//!   whole autocluster for the rest of the spin, as the schedd does.
//! - **Autoclusters** ([`crate::autocluster`]): one sorted candidate list
//!   (HTCondor's MatchList) per submitter and autocluster, built once from
//!   slot classes, popped for each job. Classes that differ only in what a
//!   negotiator rank reads that reads nothing of the job (the default
//!   `PREEMPTION_RANK` reads each claim's `TotalJobRuntime`) are evaluated
//!   once per group, each class keeping its own value of that rank.
//! - **Candidates**: a symmetric match; unclaimed slots, and claimed slots
//!   only by preemption: RANK (`MY.Rank > MY.CurrentRank`) or user priority
//!   (the running user's priority at least `PRIORITY_DELTA` worse,
//!   `PREEMPTION_REQUIREMENTS` true with MY = slot and TARGET = job, and
//!   `MY.Rank >= MY.CurrentRank`). Sorted by `NEGOTIATOR_PRE_JOB_RANK`, the
//!   job's Rank, `NEGOTIATOR_POST_JOB_RANK`, then no preemption before RANK
//!   preemption before priority preemption, then `PREEMPTION_RANK`; larger
//!   is better in each.
//! - **Trimming**: `NEGOTIATOR_CONSIDER_PREEMPTION = false` drops claimed
//!   slots; claimed slots with `RetirementTimeRemaining > 0` are dropped
//!   unless `NEGOTIATOR_CONSIDER_EARLY_PREEMPTION`; with
//!   `ALLOW_PSLOT_PREEMPTION` dynamic slots are preempted only through
//!   their partitionable slot.
//! - **Partitionable slots** stay on offer while they have room
//!   ([`crate::pslot`]).

use std::borrow::Cow;
use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use classad::same::same_expr;
use classad::{AttrName, ClassAd, Env, Expr, Value};
use config::{Config, ParamError};
use rustc_hash::FxHashMap;

use crate::autocluster::{references, target_free, Clusters, SignificantAttrs};
use crate::pslot;

/// What claims and preemption read of a slot (significant for slot classes).
const CLAIM_NAMES: [&str; 11] = [
    "Cpus",
    "Memory",
    "Disk",
    "CurrentRank",
    "RemoteUser",
    "AccountingGroup",
    "PreemptingUser",
    "PreemptingAccountingGroup",
    "RemoteUserPrio",
    "PartitionableSlot",
    "MachineResources",
];

/// How much worse (numerically larger) the running user's effective
/// priority must be before a better user may preempt it for priority; the
/// `PriorityDelta` of HTCondor's matchmaker, which is not configurable.
pub const PRIORITY_DELTA: f64 = 0.5;

/// HTCondor's "no value" for a negotiator rank: `-FLT_MAX`.
const NO_RANK: f64 = -(f32::MAX as f64);

/// What the cycle needs from the accountant.
pub trait Priorities {
    /// The submitter's effective user priority; lower is better.
    fn effective_priority(&self, submitter: &str) -> f64;
    /// The weighted resources the submitter's claims use at the start of
    /// the cycle (counted against its fair share).
    fn resources_in_use(&self, submitter: &str) -> f64;
}

/// What the cycle needs from the concurrency limits.
pub trait Limits {
    /// Whether matching `job` to `machine` stays within every limit the job
    /// names (its `ConcurrencyLimits`, evaluated against the machine).
    fn fits(&self, job: &ClassAd, machine: &ClassAd) -> bool;
    /// Counts the match against the limits.
    fn take(&mut self, job: &ClassAd, machine: &ClassAd);
    /// The limits that stop the match, for the rejection reason.
    fn exceeded(&self, _job: &ClassAd, _machine: &ClassAd) -> Vec<String> {
        Vec::new()
    }
}

/// No concurrency limits at all.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoLimits;

impl Limits for NoLimits {
    fn fits(&self, _job: &ClassAd, _machine: &ClassAd) -> bool {
        true
    }
    fn take(&mut self, _job: &ClassAd, _machine: &ClassAd) {}
}

/// The negotiator's configuration, read once per cycle.
#[derive(Clone, Debug)]
pub struct Policy {
    pub consider_preemption: bool,
    pub consider_early_preemption: bool,
    pub allow_pslot_preemption: bool,
    pub ignore_user_priorities: bool,
    pub use_slot_weights: bool,
    pub pre_job_rank: Option<Expr>,
    pub post_job_rank: Option<Expr>,
    pub preemption_requirements: Option<Expr>,
    pub preemption_rank: Option<Expr>,
    pub slot_weight: Option<Expr>,
    pub slot_constraint: Option<Expr>,
    pub job_constraint: Option<Expr>,
}

impl Policy {
    /// Reads the negotiator's parameters (HTCondor's defaults apply).
    pub fn from_config(config: &Config) -> Result<Policy, ParamError> {
        Ok(Policy {
            consider_preemption: config
                .boolean("NEGOTIATOR_CONSIDER_PREEMPTION")?
                .unwrap_or(true),
            consider_early_preemption: config
                .boolean("NEGOTIATOR_CONSIDER_EARLY_PREEMPTION")?
                .unwrap_or(false),
            allow_pslot_preemption: config.boolean("ALLOW_PSLOT_PREEMPTION")?.unwrap_or(false),
            ignore_user_priorities: config
                .boolean("NEGOTIATOR_IGNORE_USER_PRIORITIES")?
                .unwrap_or(false),
            use_slot_weights: config
                .boolean("NEGOTIATOR_USE_SLOT_WEIGHTS")?
                .unwrap_or(true),
            pre_job_rank: config.expression("NEGOTIATOR_PRE_JOB_RANK")?,
            post_job_rank: config.expression("NEGOTIATOR_POST_JOB_RANK")?,
            preemption_requirements: config.expression("PREEMPTION_REQUIREMENTS")?,
            preemption_rank: config.expression("PREEMPTION_RANK")?,
            slot_weight: config.expression("SLOT_WEIGHT")?,
            slot_constraint: config.expression("NEGOTIATOR_SLOT_CONSTRAINT")?,
            job_constraint: config.expression("NEGOTIATOR_JOB_CONSTRAINT")?,
        })
    }
}

/// One submitter's idle jobs, in any order (the cycle sorts them).
#[derive(Clone, Debug)]
pub struct SubmitterJobs<'a> {
    pub name: String,
    pub jobs: Vec<&'a ClassAd>,
    /// The jobs' autoclusters as their schedds keep them, if they do.
    pub kept: Option<Arc<KeptIds>>,
}

impl<'a> SubmitterJobs<'a> {
    /// Jobs whose autoclusters the cycle finds itself.
    pub fn new(name: impl Into<String>, jobs: Vec<&'a ClassAd>) -> SubmitterJobs<'a> {
        SubmitterJobs {
            name: name.into(),
            jobs,
            kept: None,
        }
    }
}

/// A submitter's jobs' autoclusters as their schedds filed them
/// ([`crate::autocluster_ids::AutoclusterIds`]), so that the cycle keys
/// one job per autocluster instead of every job. Jobs of one id must be
/// alike in every name of `names`; the cycle uses the ids only when every
/// name it finds significant is among them (a slot or a policy that reads
/// something new makes it key every job, as without ids).
#[derive(Clone, Debug, Default)]
pub struct KeptIds {
    /// One per job, in the order of [`SubmitterJobs::jobs`] (ids from
    /// several schedds made distinct by the caller).
    pub ids: Vec<u64>,
    /// The names, folded to lower case, every schedd's ids were made over.
    pub names: HashSet<String>,
}

impl KeptIds {
    /// Whether jobs alike over `names` are alike over `attrs`.
    fn covers(&self, attrs: &SignificantAttrs) -> bool {
        attrs
            .names()
            .iter()
            .all(|n| self.names.contains(&n.as_str().to_ascii_lowercase()))
    }
}

/// What a caller that keeps the slot ads between cycles (the simulator's
/// collector) knows of them, so that a cycle need not look every ad up
/// again to find its slot class: each ad's generation, as the startd
/// gives it (`startd::Startd::ad_generation`: two ads of a slot published
/// under one generation differ only in attributes `changes_with_time`
/// names; no two slots share a generation).
#[derive(Clone, Copy)]
pub struct SlotGenerations<'g> {
    /// One per slot ad, in the order of the cycle's slot ads.
    pub generations: &'g [u64],
    /// Whether an attribute may change while its ad keeps its generation.
    pub changes_with_time: &'g dyn Fn(&str) -> bool,
}

/// Slot class keys kept from one cycle to the next ([`SlotGenerations`]),
/// what the cycle reads of each slot ad before anything else
/// ([`LoadedSlot`], with its own SlotWeight where that lasts), and each
/// slot's cores for the offer cap ([`KeptSlotKeys::pool_cores`]).
///
/// What is kept of a slot is the part of its key over the significant
/// names that do not change with time (those that do are looked up every
/// cycle), and the token of the slot cluster it fell in. It is kept only
/// from a cycle in which no slot taught the cycle another significant
/// name (every name its expressions read was significant already), and
/// used only while the cycle starts its slot keys from those very names
/// and the slot's ad is the one published under the same generation:
/// then looking the ad up again would give the same part, and no name
/// beyond them. Slots kept in one cluster are alike over those names for
/// as long as their generations stay, so the first of them a cycle meets
/// is compared, and the others only over the names that move with time.
#[derive(Clone, Debug, Default)]
pub struct KeptSlotKeys {
    /// The significant names the kept keys are over, in the cycle's order.
    names: Vec<AttrName>,
    /// By slot index (validated by the generation, so a slot that moved
    /// is merely keyed again).
    slots: Vec<Option<KeptSlotKey>>,
    /// Cluster tokens are never reused: a slot keeps its cluster's token
    /// while other cycles make other clusters.
    next_cluster: u64,
    /// What the cycle reads of each slot ad whatever the policy and the
    /// priorities (see [`LoadedSlot`]), by slot index.
    loaded: Vec<Option<LoadedSlot>>,
    /// Each slot's cores for the offer cap, with the generation they
    /// were read under, by slot index (see [`KeptSlotKeys::pool_cores`]).
    cores: Vec<Option<(u64, f64)>>,
}

impl KeptSlotKeys {
    /// [`crate::matchmaker::pool_cores`] of `ads`, each slot's figure
    /// kept while its generation stays where its Cpus lasts
    /// ([`crate::lasting`]): the offer cap is worked out before every
    /// cycle, from every slot ad.
    pub(crate) fn pool_cores(
        &mut self,
        ads: &[ClassAd],
        generations: SlotGenerations<'_>,
        env: &Env,
    ) -> f64 {
        let g = generations;
        if g.generations.len() != ads.len() || (g.changes_with_time)("Cpus") {
            return crate::matchmaker::pool_cores(ads, env);
        }
        self.cores.resize(ads.len(), None);
        let cores = &mut self.cores;
        // Summed in the same order as pool_cores sums them.
        ads.iter()
            .enumerate()
            .map(|(i, ad)| {
                let generation = g.generations[i];
                match cores[i] {
                    Some((at, c)) if at == generation => c,
                    _ => {
                        let c = crate::matchmaker::slot_cores(ad, env);
                        let lasts = match ad.get("Cpus") {
                            None => true,
                            Some(e) => crate::lasting::lasting(e, ad, g.changes_with_time),
                        };
                        cores[i] = lasts.then_some((generation, c));
                        c
                    }
                }
            })
            .sum()
    }
}

/// What a cycle reads of a slot ad before anything else, kept while its
/// generation stays: only where every attribute it comes from is a literal
/// (or missing), so that it reads neither the clock nor anything else.
#[derive(Clone, Debug)]
struct LoadedSlot {
    generation: u64,
    /// Shared with the cycle's [`Slot`] (a slot's name and user are not
    /// copied for every slot of every cycle).
    name: Option<Arc<str>>,
    remote_user: Option<Arc<str>>,
    partitionable: bool,
    dynamic: bool,
    current_rank: f64,
    /// [`rank_preemption_possible`] at that CurrentRank.
    rank_preemption: bool,
    has_parent: bool,
    /// What its Requirements, Rank, Start and SlotWeight read (shared
    /// with the slot before it where alike, so that the cycle learns
    /// them once per run of alike slots, not once per slot).
    refs: Arc<[AttrName]>,
    /// Its own SlotWeight.
    weight: OwnWeight,
}

/// A slot ad's own `SlotWeight`, as [`lit_number`] reads it.
#[derive(Clone, Copy, Debug)]
enum OwnWeight {
    /// The same in every ad of its generation and whatever the cycle
    /// writes into the ad ([`crate::lasting`]): read once.
    Lasting(Option<f64>),
    /// Read from the ad every cycle.
    Read,
}

/// Where [`LoadedSlot`] comes from.
const LOADED_NAMES: [&str; 13] = [
    "Name",
    "PreemptingAccountingGroup",
    "PreemptingUser",
    "AccountingGroup",
    "RemoteUser",
    "PartitionableSlot",
    "DynamicSlot",
    "CurrentRank",
    "Rank",
    "ParentSlotName",
    "Requirements",
    "Start",
    "SlotWeight",
];

/// The expressions whose references the cycle learns from every slot.
const SLOT_EXPRESSIONS: [&str; 4] = ["Requirements", "Rank", "Start", "SlotWeight"];

/// [`LOADED_NAMES`] made once, so that reading a slot afresh (at every
/// change of its state) folds and hashes none of them again.
struct LoadedNames {
    name: AttrName,
    /// Whose claim it is, in the order HTCondor picks it: a preempting
    /// claim's first, then the accounting group, then the remote user.
    users: [AttrName; 4],
    partitionable: AttrName,
    dynamic: AttrName,
    current_rank: AttrName,
    parent: AttrName,
    /// [`SLOT_EXPRESSIONS`], in that order (Rank second).
    expressions: [AttrName; 4],
}

impl LoadedNames {
    fn get() -> &'static LoadedNames {
        static NAMES: std::sync::OnceLock<LoadedNames> = std::sync::OnceLock::new();
        NAMES.get_or_init(|| LoadedNames {
            name: AttrName::new("Name"),
            users: [
                "PreemptingAccountingGroup",
                "PreemptingUser",
                "AccountingGroup",
                "RemoteUser",
            ]
            .map(AttrName::new),
            partitionable: AttrName::new("PartitionableSlot"),
            dynamic: AttrName::new("DynamicSlot"),
            current_rank: AttrName::new("CurrentRank"),
            parent: AttrName::new("ParentSlotName"),
            expressions: SLOT_EXPRESSIONS.map(AttrName::new),
        })
    }
}

impl LoadedSlot {
    /// What the cycle reads of `ad` first, with whether it may be kept
    /// (every attribute it came from a literal or missing). `last_refs`
    /// are the references read of the slot before it; `changes_with_time`
    /// is given where it may be kept at all.
    fn read(
        ad: &ClassAd,
        generation: u64,
        env: &Env,
        last_refs: Option<&Arc<[AttrName]>>,
        changes_with_time: Option<&dyn Fn(&str) -> bool>,
    ) -> (LoadedSlot, bool) {
        // Each attribute looked up once, as lit_string and lit_number
        // would read it, noting whether it was a literal or missing.
        let names = LoadedNames::get();
        let mut keepable = true;
        let mut read = |name: &AttrName| -> Value {
            match ad.lookup_name(name) {
                None => Value::Undefined,
                Some(Expr::Lit(v)) => v.clone(),
                Some(_) => {
                    keepable = false;
                    ad.eval_attr(name.as_str(), env)
                }
            }
        };
        let text = |v: Value| v.as_str().map(Arc::<str>::from);
        let name = text(read(&names.name));
        // The user a claim belongs to, as HTCondor picks it.
        let remote_user = names.users.iter().find_map(|a| text(read(a)));
        let partitionable = read(&names.partitionable).is_true();
        let dynamic = read(&names.dynamic).is_true();
        let current_rank = read(&names.current_rank).as_number().unwrap_or(0.0);
        let expressions = names.expressions.each_ref().map(|n| ad.lookup_name(n));
        let mut refs = Vec::new();
        for x in expressions.into_iter().flatten() {
            crate::autocluster::references(x, &mut refs);
        }
        let [_, rank, _, slot_weight] = expressions;
        // Spelled alike too: the cycle learns a name as first spelled.
        let alike = |l: &[AttrName]| {
            l.len() == refs.len() && l.iter().zip(&refs).all(|(a, b)| a.as_str() == b.as_str())
        };
        let refs: Arc<[AttrName]> = match last_refs {
            Some(l) if alike(l) => Arc::clone(l),
            _ => refs.into(),
        };
        let weight = match changes_with_time.filter(|c| !c("SlotWeight")) {
            Some(c) => match slot_weight {
                None => OwnWeight::Lasting(None),
                Some(e) if crate::lasting::lasting(e, ad, c) => {
                    OwnWeight::Lasting(bound_number(ad, e, "SlotWeight", env))
                }
                Some(_) => OwnWeight::Read,
            },
            None => OwnWeight::Read,
        };
        let loaded = LoadedSlot {
            generation,
            name,
            remote_user,
            partitionable,
            dynamic,
            current_rank,
            rank_preemption: rank_preemption_possible_of(rank, current_rank),
            has_parent: ad.lookup_name(&names.parent).is_some(),
            refs,
            weight,
        };
        (loaded, keepable)
    }
}

#[derive(Clone, Copy, Debug)]
struct KeptSlotKey {
    generation: u64,
    /// The part of its key over the names that do not change with time.
    key: u64,
    /// Its cluster's token (none for a partitionable slot, a class of
    /// its own).
    cluster: Option<u64>,
}

/// The slot generations of a cycle with what was kept from the last.
struct Keeping<'k> {
    generations: SlotGenerations<'k>,
    kept: &'k mut KeptSlotKeys,
}

/// How a match gets its slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MatchKind {
    /// An unclaimed slot (or room in a partitionable slot).
    Plain,
    /// The slot's RANK prefers the new job strictly to its current one.
    RankPreemption,
    /// The running user's priority is worse, and PREEMPTION_REQUIREMENTS allows it.
    PriorityPreemption,
}

/// A claim the match preempts.
#[derive(Clone, Debug, PartialEq)]
pub struct Preempted {
    /// Index of the claimed slot in the cycle's slot list.
    pub slot: usize,
    pub slot_name: String,
    /// The user whose claim is preempted.
    pub user: String,
}

/// One match of the plan.
#[derive(Clone, Debug, PartialEq)]
pub struct Match {
    /// Index of the submitter in the cycle's input.
    pub submitter: usize,
    /// Index of the job in that submitter's `jobs`.
    pub job: usize,
    pub cluster: i64,
    pub proc: i64,
    /// Index of the slot in the cycle's slot list.
    pub slot: usize,
    pub slot_name: String,
    pub kind: MatchKind,
    /// Claims this match preempts: the slot's own claim, or dynamic slots
    /// of a partitionable slot (pslot preemption).
    pub preempted: Vec<Preempted>,
    /// What the match counts against the submitter's fair share.
    pub cost: f64,
    /// The autocluster (an index into [`Plan::autoclusters`]).
    pub autocluster: usize,
    /// For a partitionable slot: what the match takes from it.
    pub takes: Vec<pslot::Take>,
}

/// Why an autocluster's jobs did not match, as HTCondor words its
/// rejection (most specific first).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reason {
    /// `NEGOTIATOR_JOB_CONSTRAINT` is not true for the job.
    JobConstraint,
    /// "concurrency limit NAME reached".
    ConcurrencyLimit(Vec<String>),
    /// "PREEMPTION_REQUIREMENTS == False".
    PreemptionRequirements,
    /// "insufficient priority".
    InsufficientPriority,
    /// "submitter limit exceeded": the submitter used its fair share.
    SubmitterLimit,
    /// "no match found".
    NoMatch,
}

/// What each step dropped, counted in slots (Nomad's AllocMetric).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Metrics {
    /// Slots considered (after the cycle's trimming).
    pub slots_considered: u64,
    /// The job's Requirements were not true for the slot.
    pub job_requirements: u64,
    /// The slot's Requirements (START) were not true for the job.
    pub slot_requirements: u64,
    /// A partitionable slot had too little left for the job's request.
    pub insufficient_resources: u64,
    /// Claimed by a user whose priority is not worse enough.
    pub preempt_priority: u64,
    /// PREEMPTION_REQUIREMENTS was not true.
    pub preempt_requirements: u64,
    /// The slot's RANK prefers its current job.
    pub preempt_rank: u64,
    /// Claimed slots this submitter cannot preempt at all (the slot's RANK
    /// is a constant no higher than CurrentRank and user-priority
    /// preemption is impossible), dropped without evaluating Requirements.
    pub claimed_not_preemptable: u64,
    /// Candidates refused because a concurrency limit was full.
    pub concurrency_limit: u64,
    /// Candidates refused because the submitter had used its share.
    pub submitter_limit: u64,
    /// Candidates that matched.
    pub candidates: u64,
}

/// An autocluster: jobs of one submitter alike in every significant attribute.
#[derive(Clone, Debug, PartialEq)]
pub struct Autocluster {
    pub submitter: usize,
    /// Indexes of its jobs in the submitter's `jobs`.
    pub jobs: Vec<usize>,
}

/// An autocluster left with idle jobs, and why.
#[derive(Clone, Debug, PartialEq)]
pub struct Unmatched {
    pub autocluster: usize,
    pub submitter: usize,
    /// How many of its jobs stay idle.
    pub idle: usize,
    pub reason: Reason,
    pub metrics: Metrics,
}

/// Figures about the cycle as a whole.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CycleStats {
    pub pie_spins: u32,
    pub slots: usize,
    /// Slots dropped before matching (constraint, preemption off, retirement).
    pub slots_trimmed: usize,
    pub slot_classes: usize,
    pub idle_jobs: usize,
    pub autoclusters: usize,
    /// Candidate lists built (one per autocluster asked for a slot).
    pub match_lists_built: usize,
    /// Jobs keyed by this cycle: every idle job, or, where the schedds
    /// kept their autoclusters ([`KeptIds`]), one job per autocluster.
    pub jobs_keyed: usize,
    /// Submitters whose kept autoclusters were not used: they were filed
    /// over fewer names than the cycle reads (a slot or a policy reads
    /// something new), so the cycle keyed their jobs itself.
    pub kept_ids_dropped: usize,
    /// Slot ads looked up for their class keys: every slot offered, less
    /// those whose keys were kept from the last cycle ([`KeptSlotKeys`]).
    pub slots_keyed: usize,
    /// Total slot weight of the pool (the pie).
    pub pool_size: f64,
}

/// The result of a cycle.
#[derive(Clone, Debug, Default)]
pub struct Plan {
    pub matches: Vec<Match>,
    pub autoclusters: Vec<Autocluster>,
    pub unmatched: Vec<Unmatched>,
    pub stats: CycleStats,
    /// The names the jobs were told apart by: what the schedds are told
    /// before the next cycle, to keep their autoclusters against
    /// ([`crate::autocluster_ids::AutoclusterIds`]).
    pub significant: Vec<String>,
}

/// HTCondor's preemption states, ordered as its sort prefers them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum State {
    Priority = 0,
    Rank = 1,
    None = 2,
}

/// Whether the cycle offers a slot at all (before it knows whether any
/// claim may be preempted).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Offered {
    Yes,
    No,
    /// A claim, unless it has retirement time left.
    UnlessRetiring,
}

/// One slot as the cycle sees it.
struct Slot<'a> {
    ad: Cow<'a, ClassAd>,
    name: Arc<str>,
    remote_user: Option<Arc<str>>,
    partitionable: bool,
    /// Claimed dynamic slots pslot preemption may take, for a partitionable slot.
    children: Vec<usize>,
    weight: f64,
    current_rank: f64,
    /// [`rank_preemption_possible`] as the slot was loaded.
    rank_preemption: bool,
    taken: bool,
    /// Bumped whenever a partitionable slot's ad changes.
    version: u32,
    /// Its class, if it is offered at all.
    class: Option<usize>,
}

/// Slots alike in every significant attribute (a partitionable slot is
/// always a class of its own: its ad changes as it is divided).
struct Class {
    members: Vec<usize>,
    /// Members before this one are taken (taking is for good in a cycle).
    cursor: usize,
    /// Members not taken.
    live: usize,
    claimed: bool,
    partitionable: bool,
    /// The negotiator's ranks that are constants of this class's slots
    /// (see [`Group`]).
    fixed: Fixed,
}

/// Values of `NEGOTIATOR_PRE_JOB_RANK`, `NEGOTIATOR_POST_JOB_RANK` and
/// `PREEMPTION_RANK` that read nothing of the job for a class's slots, so
/// they are evaluated once per cycle instead of once per autocluster.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Fixed {
    pre: Option<f64>,
    post: Option<f64>,
    preempt: Option<f64>,
}

impl Fixed {
    /// `ranks` (evaluated with another class of the group) with this
    /// class's constants.
    fn apply(&self, mut ranks: Ranks) -> Ranks {
        if let Some(v) = self.pre {
            ranks.pre = v;
        }
        if let Some(v) = self.post {
            ranks.post = v;
        }
        if ranks.state != State::None {
            if let Some(v) = self.preempt {
                ranks.preempt = v;
            }
        }
        ranks
    }
}

/// Classes that differ only in attributes read by negotiator ranks that
/// read nothing of the job (the default `PREEMPTION_RANK` reads the
/// claim's `TotalJobRuntime`, which differs from slot to slot): they match
/// every job alike, so an autocluster evaluates one slot of the group and
/// gives each class its own constants ([`Fixed`]). Each class stays an entry
/// of the candidate list of its own, so the order of candidates is what
/// evaluating every class would give. A class whose ranks read the job is a
/// group of its own.
struct Group {
    classes: Vec<usize>,
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct Ranks {
    pre: f64,
    job: f64,
    post: f64,
    state: State,
    preempt: f64,
}

impl Ranks {
    /// Better first, as HTCondor's MatchList sort.
    fn order(&self, other: &Ranks) -> Ordering {
        let f = |a: f64, b: f64| b.total_cmp(&a);
        f(self.pre, other.pre)
            .then(f(self.job, other.job))
            .then(f(self.post, other.post))
            .then(other.state.cmp(&self.state))
            .then(f(self.preempt, other.preempt))
    }
}

struct Entry {
    class: usize,
    ranks: Ranks,
    /// The partitionable slot's version this entry was evaluated at.
    version: u32,
    /// Dynamic slots to preempt (pslot preemption).
    dslots: Vec<usize>,
    dead: bool,
}

impl Entry {
    /// Allowed when only RANK preemption is (past the fair share).
    fn rank_preempts(&self) -> bool {
        self.ranks.state == State::Rank || !self.dslots.is_empty()
    }
}

struct MatchList {
    entries: Vec<Entry>,
    head: usize,
    rank_entries: usize,
}

/// Per submitter and autocluster: the representative job and progress.
struct Ac {
    submitter: usize,
    job: ClassAd,
    jobs: Vec<usize>,
    list: Option<MatchList>,
    metrics: Metrics,
    /// Rejected for the rest of this spin.
    rejected_in_spin: Option<u32>,
    /// Rejected for the rest of the cycle (nothing can change that).
    done: Option<Reason>,
    last_reason: Option<Reason>,
    /// Whether `ConcurrencyLimits` is a literal (its limits do not depend on the machine).
    literal_limits: bool,
    job_constraint_ok: bool,
}

enum Reject {
    JobRequirements,
    SlotRequirements,
    Resources,
    PreemptPriority,
    PreemptRequirements,
    PreemptRank,
}

/// Runs one negotiation cycle.
pub fn negotiate(
    slot_ads: &[ClassAd],
    submitters: &[SubmitterJobs<'_>],
    priorities: &dyn Priorities,
    limits: &mut dyn Limits,
    policy: &Policy,
    now: i64,
) -> Plan {
    negotiate_capped(
        slot_ads,
        submitters,
        priorities,
        limits,
        policy,
        usize::MAX,
        now,
    )
}

/// Runs one negotiation cycle in which each autocluster offers at most
/// `per_autocluster` of its jobs (the first in the submitter's order): a
/// cycle cannot match more jobs of one autocluster than the pool has
/// slots, so the rest need not be matched one by one. The jobs left out
/// still count as idle in the plan's `unmatched`.
pub fn negotiate_capped(
    slot_ads: &[ClassAd],
    submitters: &[SubmitterJobs<'_>],
    priorities: &dyn Priorities,
    limits: &mut dyn Limits,
    policy: &Policy,
    per_autocluster: usize,
    now: i64,
) -> Plan {
    negotiate_keeping(
        slot_ads,
        None,
        submitters,
        priorities,
        limits,
        policy,
        per_autocluster,
        now,
    )
}

/// [`negotiate_capped`], where the caller knows the slot ads'
/// generations (`keeping`): slot class keys are then kept in its
/// [`KeptSlotKeys`] from one call to the next, and the plan is the one
/// [`negotiate_capped`] makes.
#[allow(clippy::too_many_arguments)]
pub fn negotiate_keeping(
    slot_ads: &[ClassAd],
    keeping: Option<(SlotGenerations<'_>, &mut KeptSlotKeys)>,
    submitters: &[SubmitterJobs<'_>],
    priorities: &dyn Priorities,
    limits: &mut dyn Limits,
    policy: &Policy,
    per_autocluster: usize,
    now: i64,
) -> Plan {
    Cycle::new(
        slot_ads,
        keeping.map(|(generations, kept)| Keeping { generations, kept }),
        submitters,
        priorities,
        policy,
        per_autocluster,
        now,
    )
    .run(limits)
}

struct Cycle<'a, 'p> {
    env: Env,
    policy: &'p Policy,
    priorities: &'p dyn Priorities,
    submitters: &'p [SubmitterJobs<'a>],
    slots: Vec<Slot<'a>>,
    classes: Vec<Class>,
    /// Class indexes usable at all (after trimming).
    usable: Vec<usize>,
    /// The usable classes, grouped by what matching reads (see [`Group`]).
    groups: Vec<Group>,
    acs: Vec<Ac>,
    /// For each submitter: (job index, autocluster) in the submitter's order.
    queues: Vec<Vec<(usize, usize)>>,
    prio: Vec<f64>,
    usage: HashMap<String, f64>,
    /// Whether any claimed slot could ever be preempted this cycle.
    preemption_possible: bool,
    stats: CycleStats,
    matches: Vec<Match>,
    /// How many jobs an autocluster offers at most.
    per_autocluster: usize,
    /// For each autocluster, its jobs left out by that cap.
    not_offered: Vec<usize>,
    /// The names the jobs were told apart by (for [`Plan::significant`]).
    significant: Vec<String>,
}

fn lit_number(ad: &ClassAd, name: &str, env: &Env) -> Option<f64> {
    match ad.get(name) {
        Some(e) => bound_number(ad, e, name, env),
        None => None,
    }
}

/// [`lit_number`] of a name made once.
fn named_number(ad: &ClassAd, name: &AttrName, env: &Env) -> Option<f64> {
    match ad.lookup_name(name) {
        Some(e) => bound_number(ad, e, name.as_str(), env),
        None => None,
    }
}

/// What a submitter's jobs are ordered by (`JobPrio` descending, then
/// `QDate`, `ClusterId`, `ProcId`), made once: read of every idle job of
/// every cycle.
fn job_order_names() -> &'static [AttrName; 4] {
    static NAMES: std::sync::OnceLock<[AttrName; 4]> = std::sync::OnceLock::new();
    NAMES.get_or_init(|| ["JobPrio", "QDate", "ClusterId", "ProcId"].map(AttrName::new))
}

/// [`lit_number`] of `name`, already looked up: bound to `e` in `ad`.
fn bound_number(ad: &ClassAd, e: &Expr, name: &str, env: &Env) -> Option<f64> {
    match e {
        Expr::Lit(v) => v.as_number(),
        _ => ad.eval_attr(name, env).as_number(),
    }
}

fn lit_string(ad: &ClassAd, name: &str, env: &Env) -> Option<String> {
    match ad.get(name) {
        Some(Expr::Lit(Value::Str(s))) => Some(s.to_string()),
        Some(_) => ad.eval_attr(name, env).as_str().map(str::to_string),
        None => None,
    }
}

fn is_true(v: &Value) -> bool {
    v.as_bool() == Some(true)
}

fn rank_value(e: Option<&Expr>, slot: &ClassAd, job: &ClassAd, env: &Env) -> f64 {
    match e {
        Some(e) => classad::eval_expr(e, Some(slot), Some(job), env)
            .as_number()
            .unwrap_or(NO_RANK),
        None => NO_RANK,
    }
}

impl<'a, 'p> Cycle<'a, 'p> {
    fn new(
        slot_ads: &'a [ClassAd],
        keeping: Option<Keeping<'_>>,
        submitters: &'p [SubmitterJobs<'a>],
        priorities: &'p dyn Priorities,
        policy: &'p Policy,
        per_autocluster: usize,
        now: i64,
    ) -> Cycle<'a, 'p> {
        let env = Env::at(now);
        let mut cycle = Cycle {
            env,
            policy,
            priorities,
            submitters,
            slots: Vec::new(),
            classes: Vec::new(),
            usable: Vec::new(),
            groups: Vec::new(),
            acs: Vec::new(),
            queues: Vec::new(),
            prio: Vec::new(),
            usage: HashMap::new(),
            preemption_possible: false,
            stats: CycleStats::default(),
            matches: Vec::new(),
            per_autocluster: per_autocluster.max(1),
            not_offered: Vec::new(),
            significant: Vec::new(),
        };
        cycle.prio = submitters
            .iter()
            .map(|s| priorities.effective_priority(&s.name))
            .collect();
        for s in submitters {
            cycle
                .usage
                .insert(s.name.clone(), priorities.resources_in_use(&s.name));
        }
        let mut attrs = cycle.significant_roots(&[]);
        let mut slot_refs = SignificantAttrs::new();
        let mut keeping = keeping;
        let trimmed = cycle.load_slots(slot_ads, &mut slot_refs, keeping.as_mut());
        for n in slot_refs.names() {
            attrs.add(n.as_str());
        }
        cycle.build_autoclusters(&mut attrs);
        cycle.build_classes(&mut attrs, &trimmed, keeping);
        cycle.build_groups(&slot_refs);
        cycle
    }

    /// The names every expression of the match reads, to start from,
    /// leaving out what the policy expressions in `skip` read.
    fn significant_roots(&self, skip: &[&Expr]) -> SignificantAttrs {
        let mut attrs = SignificantAttrs::new();
        for name in [
            "Requirements",
            "Rank",
            "RequestCpus",
            "RequestMemory",
            "RequestDisk",
            "ConcurrencyLimits",
            "WantPslotPreemption",
        ] {
            attrs.add(name);
        }
        let p = self.policy;
        for e in [
            &p.pre_job_rank,
            &p.post_job_rank,
            &p.preemption_requirements,
            &p.preemption_rank,
            &p.job_constraint,
        ]
        .into_iter()
        .flatten()
        .filter(|e| !skip.iter().any(|s| std::ptr::eq(*s, *e)))
        {
            attrs.add_references(e);
        }
        attrs
    }

    fn weight_of(&self, ad: &ClassAd) -> f64 {
        self.own_weight_of(ad, OwnWeight::Read)
    }

    /// [`Cycle::weight_of`] where the slot's own SlotWeight may be kept.
    fn own_weight_of(&self, ad: &ClassAd, own: OwnWeight) -> f64 {
        if !self.policy.use_slot_weights {
            return 1.0;
        }
        let own = match own {
            OwnWeight::Lasting(w) => w,
            OwnWeight::Read => lit_number(ad, "SlotWeight", &self.env),
        };
        if let Some(w) = own {
            return w;
        }
        match &self.policy.slot_weight {
            Some(e) => ad.eval(e, &self.env).as_number().unwrap_or(1.0),
            None => 1.0,
        }
    }

    /// Reads the slots, adds what preemption policy reads to claimed ones
    /// (RemoteUserPrio, RemoteUserResourcesInUse; CurrentRank from
    /// PreemptingRank) and decides which are offered at all. Returns
    /// that, for each slot; `refs` learns what the slots' Requirements, Rank,
    /// Start and SlotWeight read.
    fn load_slots(
        &mut self,
        ads: &'a [ClassAd],
        refs: &mut SignificantAttrs,
        mut keeping: Option<&mut Keeping<'_>>,
    ) -> Vec<Offered> {
        let env = self.env.clone();
        let mut trimmed = Vec::with_capacity(ads.len());
        // What is read of a slot first is kept while its generation stays,
        // unless the startd may change one of those attributes under it.
        let generations = keeping
            .as_ref()
            .map(|k| k.generations)
            .filter(|g| g.generations.len() == ads.len())
            .filter(|g| !LOADED_NAMES.iter().any(|n| (g.changes_with_time)(n)));
        if let (Some(k), true) = (keeping.as_mut(), generations.is_some()) {
            k.kept.loaded.resize(ads.len(), None);
        }
        self.slots.reserve(ads.len());
        // The references the slot before learnt the cycle (alike slots
        // share them: see LoadedSlot::read).
        let mut last_refs: Option<Arc<[AttrName]>> = None;
        for (i, ad) in ads.iter().enumerate() {
            let kept = match (&generations, keeping.as_ref()) {
                (Some(g), Some(k)) => k.kept.loaded[i]
                    .as_ref()
                    .filter(|l| l.generation == g.generations[i]),
                _ => None,
            };
            let fresh = match kept {
                Some(_) => None,
                None => {
                    let generation = generations.as_ref().map_or(0, |g| g.generations[i]);
                    let (l, keepable) = LoadedSlot::read(
                        ad,
                        generation,
                        &env,
                        last_refs.as_ref(),
                        generations.as_ref().map(|g| g.changes_with_time),
                    );
                    Some((l, keepable && generations.is_some()))
                }
            };
            let loaded = match (&fresh, kept) {
                (Some((l, _)), _) => l,
                (None, Some(l)) => l,
                (None, None) => unreachable!("read when not kept"),
            };
            let name = loaded
                .name
                .clone()
                .unwrap_or_else(|| Arc::from(format!("slot#{i}")));
            let remote = loaded.remote_user.clone();
            let partitionable = loaded.partitionable;
            let dynamic = loaded.dynamic;
            let mut current_rank = loaded.current_rank;
            let loaded_rank = (loaded.current_rank, loaded.rank_preemption);
            // A claim nobody can preempt (no priority preemption configured,
            // a constant Rank no better than its CurrentRank, not a dynamic
            // slot pslot preemption might take) needs no preemption
            // attributes: no copy of its ad, every cycle.
            let preemptible = self.priority_preemption_configured()
                || loaded.rank_preemption
                || loaded.has_parent;
            let own_weight = loaded.weight;
            if !last_refs
                .as_ref()
                .is_some_and(|l| Arc::ptr_eq(l, &loaded.refs))
            {
                for n in loaded.refs.iter() {
                    refs.add_name(n);
                }
                last_refs = Some(Arc::clone(&loaded.refs));
            }
            if let (Some((l, true)), Some(k)) = (fresh, keeping.as_mut()) {
                k.kept.loaded[i] = Some(l);
            }
            let mut ad = Cow::Borrowed(ad);
            if let Some(user) = &remote {
                if self.policy.consider_preemption && preemptible {
                    let owned = ad.to_mut();
                    owned.insert_value("RemoteUserPrio", self.priorities.effective_priority(user));
                    owned.insert_value(
                        "RemoteUserResourcesInUse",
                        self.priorities.resources_in_use(user),
                    );
                    // A claim already waiting to preempt this one must be
                    // beaten too.
                    if let Some(r) = lit_number(owned, "PreemptingRank", &env) {
                        owned.insert_value("CurrentRank", r);
                        current_rank = r;
                    }
                }
            }
            // Read of the slot's Rank at its CurrentRank with what was
            // loaded, unless a waiting claim's rank took its place.
            let rank_preemption = if current_rank.to_bits() == loaded_rank.0.to_bits() {
                loaded_rank.1
            } else {
                rank_preemption_possible(&ad, current_rank)
            };
            let weight = self.own_weight_of(&ad, own_weight);
            self.stats.pool_size += weight;
            let constraint_ok = match &self.policy.slot_constraint {
                Some(c) => is_true(&ad.eval(c, &env)),
                None => true,
            };
            let claimed = remote.is_some();
            let trim = !constraint_ok
                || (claimed && !self.policy.consider_preemption)
                || (claimed && dynamic && self.policy.allow_pslot_preemption);
            trimmed.push(if trim {
                Offered::No
            } else if claimed && !self.policy.consider_early_preemption {
                // A claim with retirement time left is not offered; its
                // RetirementTimeRemaining (a clock figure, read from the
                // ad) is read only if the claim could be preempted at all.
                Offered::UnlessRetiring
            } else {
                Offered::Yes
            });
            self.slots.push(Slot {
                ad,
                name,
                remote_user: remote,
                partitionable,
                children: Vec::new(),
                weight,
                current_rank,
                rank_preemption,
                taken: false,
                version: 0,
                class: None,
            });
        }
        // Dynamic slots pslot preemption may take: claimed, no retirement
        // time left (whatever NEGOTIATOR_CONSIDER_EARLY_PREEMPTION says), not
        // already being preempted.
        if self.policy.allow_pslot_preemption && self.policy.consider_preemption {
            // Only here are slots looked up by name: not a map of ten
            // thousand names every cycle for nothing.
            let by_name: HashMap<&str, usize> = self
                .slots
                .iter()
                .enumerate()
                .map(|(i, s)| (&*s.name, i))
                .collect();
            let mut children = Vec::new();
            for i in 0..self.slots.len() {
                let s = &self.slots[i];
                if s.remote_user.is_none() {
                    continue;
                }
                let Some(parent) = lit_string(&s.ad, "ParentSlotName", &env) else {
                    continue;
                };
                let retiring =
                    lit_number(&s.ad, "RetirementTimeRemaining", &env).unwrap_or(0.0) > 0.0;
                let preempting = lit_string(&s.ad, "State", &env).as_deref() == Some("Preempting");
                if retiring || preempting {
                    continue;
                }
                if let Some(&p) = by_name.get(parent.as_str()) {
                    if self.slots[p].partitionable {
                        children.push((p, i));
                    }
                }
            }
            for (p, i) in children {
                self.slots[p].children.push(i);
            }
        }
        self.stats.slots = self.slots.len();
        trimmed
    }

    /// Whether a claimed slot has retirement time left.
    fn retiring(&self, s: &Slot<'_>) -> bool {
        lit_number(&s.ad, "RetirementTimeRemaining", &self.env).unwrap_or(0.0) > 0.0
    }

    /// Can any submitter ever preempt this claimed slot? Only by RANK when
    /// the slot's Rank is not a constant at or below its CurrentRank, and
    /// by priority only when PREEMPTION_REQUIREMENTS is not the constant
    /// False.
    fn rank_preemption_possible(&self, s: &Slot<'_>) -> bool {
        rank_preemption_possible(&s.ad, s.current_rank)
    }

    fn priority_preemption_configured(&self) -> bool {
        priority_preemption_configured(self.policy)
    }
}

/// A negotiator rank that may be a constant of each slot: it reads some
/// attribute, and nothing of the job by its text.
fn may_be_constant(e: Option<&Expr>) -> Option<&Expr> {
    e.filter(|e| {
        let mut refs = Vec::new();
        references(e, &mut refs);
        !refs.is_empty() && target_free(e, None)
    })
}

/// Slots grouped by what they bind to the significant names, compared
/// exactly (as [`Clusters`] groups ads), each slot's bindings looked up
/// once: a cluster keeps its first member's, where comparing through
/// [`SignificantAttrs::alike`] would look both ads up again for every slot
/// of a pool, every cycle.
struct SlotClusters<'n, 's> {
    names: &'n [AttrName],
    /// (A fast hash: looked up for every slot of every cycle; never
    /// iterated, so the order of nothing depends on it.)
    by_key: FxHashMap<u64, Vec<usize>>,
    /// For each cluster, its first member's bindings.
    bound: Vec<Vec<Option<&'s Expr>>>,
    scratch: Vec<Option<&'s Expr>>,
    /// For each kept cluster token and part of the key over the names
    /// that move with time, the clusters its slots fell in this cycle.
    of_token: FxHashMap<(u64, u64), Vec<usize>>,
}

impl<'n, 's> SlotClusters<'n, 's> {
    fn new(names: &'n [AttrName]) -> Self {
        SlotClusters {
            names,
            by_key: FxHashMap::default(),
            bound: Vec::new(),
            scratch: Vec::new(),
            of_token: FxHashMap::default(),
        }
    }

    /// The cluster of `ad` (key `key`), kept in the cluster `token` by
    /// the last cycle, alike over every name that does not change with
    /// time with the slots kept there: the first of them met is compared
    /// as [`SlotClusters::assign`] does, and each other joins a cluster of
    /// one of them that binds the names that move with time
    /// (`moving_names`, their part of its key `moving`) as it does.
    /// `moving_bound`, if known, is what `ad` binds to each of those
    /// names (looked up as its key was made).
    fn assign_kept(
        &mut self,
        token: u64,
        moving: u64,
        key: u64,
        ad: &'s ClassAd,
        moving_names: &[usize],
        moving_bound: Option<&[Option<&'s Expr>]>,
    ) -> usize {
        if let Some(ids) = self.of_token.get(&(token, moving)) {
            for &id in ids {
                let alike = moving_names.iter().enumerate().all(|(m, &j)| {
                    let here = match moving_bound {
                        Some(b) => b[m],
                        None => ad.lookup_name(&self.names[j]),
                    };
                    match (self.bound[id][j], here) {
                        (None, None) => true,
                        (Some(x), Some(y)) => same_expr(x, y),
                        _ => false,
                    }
                });
                if alike {
                    return id;
                }
            }
        }
        let id = self.assign(key, ad);
        let ids = self.of_token.entry((token, moving)).or_default();
        if !ids.contains(&id) {
            ids.push(id);
        }
        id
    }

    /// The cluster of `ad`, whose key is `key`, made if new.
    fn assign(&mut self, key: u64, ad: &'s ClassAd) -> usize {
        self.assign_bound(key, ad, None)
    }

    /// [`SlotClusters::assign`] where `bound`, if known, is what `ad`
    /// binds to each name (looked up as its key was made), so that a slot
    /// keyed afresh is not looked up twice.
    fn assign_bound(
        &mut self,
        key: u64,
        ad: &'s ClassAd,
        bound: Option<&[Option<&'s Expr>]>,
    ) -> usize {
        self.scratch.clear();
        match bound {
            Some(b) if b.len() == self.names.len() => self.scratch.extend_from_slice(b),
            _ => self
                .scratch
                .extend(self.names.iter().map(|n| ad.lookup_name(n))),
        }
        let ids = self.by_key.entry(key).or_default();
        for &id in ids.iter() {
            let alike = self.bound[id]
                .iter()
                .zip(&self.scratch)
                .all(|(a, b)| match (a, b) {
                    (None, None) => true,
                    (Some(x), Some(y)) => same_expr(x, y),
                    _ => false,
                });
            if alike {
                return id;
            }
        }
        let id = self.bound.len();
        self.bound.push(self.scratch.clone());
        ids.push(id);
        id
    }
}

/// The keys of the ads `of(i)` for each of `candidates` (indexed as the
/// ads), over the names `attrs` has once it learnt what every one of
/// them reads. Names only grow, so a key is stale only if the set grew
/// after it was computed: those alone are computed again (the slots of a
/// pool share their expressions, so the set grows at the first slots and
/// a second pass over ten thousand ads would change nothing).
fn slot_keys<'s>(
    attrs: &mut SignificantAttrs,
    candidates: &[usize],
    of: impl Fn(usize) -> &'s ClassAd,
) -> SlotKeys<'s> {
    let len = candidates.iter().max().map_or(0, |m| m + 1);
    let mut keys = vec![0u64; len];
    // The number of names each key was computed over.
    let mut over = vec![0usize; len];
    let mut stale: Vec<usize> = candidates.to_vec();
    while !stale.is_empty() {
        for &i in &stale {
            let (k, grew) = attrs.key_of(of(i));
            keys[i] = k;
            // A key whose computation grew the set is incomplete.
            over[i] = if grew { 0 } else { attrs.len() };
        }
        let now = attrs.len();
        stale = candidates
            .iter()
            .copied()
            .filter(|&i| over[i] != now)
            .collect();
    }
    SlotKeys {
        lasting: Vec::new(),
        moving: vec![0; len],
        moving_names: Vec::new(),
        moving_bound: Vec::new(),
        bound: Vec::new(),
        bound_at: Vec::new(),
        full: keys,
        keyed: candidates.len(),
    }
}

/// The slots' keys ([`slot_keys`]), indexed as the slot ads.
struct SlotKeys<'s> {
    /// What a slot is classed by: the mix of the two parts below.
    full: Vec<u64>,
    /// Over the names that do not change with time (what may be kept).
    lasting: Vec<u64>,
    /// Over the names that do.
    moving: Vec<u64>,
    /// The indexes of those names among the significant ones.
    moving_names: Vec<usize>,
    /// What each slot binds to those names, `moving_names.len()` a slot
    /// (empty where the names grew while the keys were made: then they
    /// are looked up again).
    moving_bound: Vec<Option<&'s Expr>>,
    /// What each slot looked up afresh binds to every significant name, in
    /// their order, found as its key was made (none where the names grew
    /// while the keys were made), at `bound_at` (by slot index,
    /// [`NOT_BOUND`] for a slot not looked up).
    bound: Vec<Option<&'s Expr>>,
    bound_at: Vec<u32>,
    /// Slot ads looked up for their lasting part.
    keyed: usize,
}

/// [`SlotKeys::bound_at`] of a slot whose bindings are not known.
const NOT_BOUND: u32 = u32::MAX;

impl<'s> SlotKeys<'s> {
    /// What slot `i` binds to the names that move with time, if known.
    fn moving_bound(&self, i: usize) -> Option<&[Option<&'s Expr>]> {
        let n = self.moving_names.len();
        if n == 0 {
            return Some(&[]);
        }
        self.moving_bound.get(i * n..(i + 1) * n)
    }

    /// What slot `i` binds to every significant name, if it was looked up
    /// afresh and the names did not grow.
    fn bound(&self, i: usize, names: usize) -> Option<&[Option<&'s Expr>]> {
        let at = *self.bound_at.get(i)?;
        if at == NOT_BOUND {
            return None;
        }
        let at = at as usize;
        self.bound.get(at..at + names)
    }
}

/// [`slot_keys`] for a cycle that keeps keys ([`KeptSlotKeys`]): each key
/// in two parts, one over the names that do not change with time, taken
/// from `known(i)` when it was kept over the names `attrs` starts with
/// (as long as the set does not grow), and one over the names that do,
/// `changes_with_time`, looked up every cycle (an ad may change them
/// under one generation).
fn kept_slot_keys<'s>(
    attrs: &mut SignificantAttrs,
    candidates: &[usize],
    of: impl Fn(usize) -> &'s ClassAd,
    known: impl Fn(usize) -> Option<u64>,
    changes_with_time: &dyn Fn(&str) -> bool,
) -> SlotKeys<'s> {
    let len = candidates.iter().max().map_or(0, |m| m + 1);
    let mut keys = SlotKeys {
        full: vec![0; len],
        lasting: vec![0; len],
        moving: vec![0; len],
        moving_names: Vec::new(),
        moving_bound: Vec::new(),
        bound: Vec::new(),
        bound_at: vec![NOT_BOUND; len],
        keyed: 0,
    };
    // Whether each significant name changes with time, asked once per
    // name and round (a name learnt on the way is asked as it is met).
    let moves_of = |attrs: &SignificantAttrs| -> Vec<bool> {
        attrs
            .names()
            .iter()
            .map(|n| changes_with_time(n.as_str()))
            .collect()
    };
    let mut moves = moves_of(attrs);
    // The bindings of the names that move, as the first round finds them:
    // kept only if no name was learnt (then they are over the final names).
    let stride = moves.iter().filter(|m| **m).count();
    let mut bound: Vec<Option<&'s Expr>> = vec![None; len * stride];
    let mut scratch = Vec::with_capacity(stride);
    let mut lasting_scratch = Vec::with_capacity(attrs.len());
    let mut over = vec![0usize; len];
    let mut first = true;
    let mut rounds = 0;
    let mut stale: Vec<usize> = candidates.to_vec();
    while !stale.is_empty() {
        rounds += 1;
        for &i in &stale {
            let kept = if first { known(i) } else { None };
            lasting_scratch.clear();
            let (lasting, grew_l) = match kept {
                Some(k) => (k, false),
                None => {
                    keys.keyed += usize::from(first);
                    let out = first.then_some(&mut lasting_scratch);
                    attrs.key_over(of(i), false, &moves, changes_with_time, out)
                }
            };
            // Nothing moves: no second pass over the names.
            let (moving, grew_m) = if moves.len() == attrs.len() && !moves.contains(&true) {
                scratch.clear();
                (0, false)
            } else {
                scratch.clear();
                let k = attrs.key_over(of(i), true, &moves, changes_with_time, Some(&mut scratch));
                if first && scratch.len() == stride {
                    bound[i * stride..(i + 1) * stride].copy_from_slice(&scratch);
                }
                k
            };
            keys.lasting[i] = lasting;
            keys.moving[i] = moving;
            keys.full[i] = lasting ^ moving.rotate_left(32).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            over[i] = if grew_l || grew_m { 0 } else { attrs.len() };
            // Both parts' bindings, merged back into the names' order
            // (kept only if no name was learnt: see below).
            if first
                && kept.is_none()
                && !(grew_l || grew_m)
                && lasting_scratch.len() + scratch.len() == attrs.len()
                && moves.len() == attrs.len()
            {
                keys.bound_at[i] = u32::try_from(keys.bound.len()).unwrap_or(NOT_BOUND);
                let (mut l, mut m) = (lasting_scratch.iter(), scratch.iter());
                for &moved in &moves {
                    let b = if moved { m.next() } else { l.next() };
                    keys.bound.push(b.copied().flatten());
                }
            }
        }
        first = false;
        moves = moves_of(attrs);
        let now = attrs.len();
        stale = candidates
            .iter()
            .copied()
            .filter(|&i| over[i] != now)
            .collect();
    }
    keys.moving_names = (0..attrs.len()).filter(|&j| moves[j]).collect();
    if rounds == 1 && keys.moving_names.len() == stride {
        keys.moving_bound = bound;
    } else {
        keys.bound.clear();
        keys.bound_at.clear();
    }
    keys
}

/// See [`Cycle::rank_preemption_possible`].
fn rank_preemption_possible(ad: &ClassAd, current_rank: f64) -> bool {
    rank_preemption_possible_of(ad.get("Rank"), current_rank)
}

/// [`rank_preemption_possible`] of a slot whose Rank is `rank`.
fn rank_preemption_possible_of(rank: Option<&Expr>, current_rank: f64) -> bool {
    match pslot::literal(rank) {
        Some(v) => v.as_number().unwrap_or(0.0) > current_rank,
        None => rank.is_some(),
    }
}

/// See [`Cycle::priority_preemption_configured`].
fn priority_preemption_configured(policy: &Policy) -> bool {
    match &policy.preemption_requirements {
        Some(e) => match pslot::literal(Some(e)) {
            Some(v) => is_true(v),
            None => true,
        },
        None => true,
    }
}

impl<'a, 'p> Cycle<'a, 'p> {
    fn build_autoclusters(&mut self, attrs: &mut SignificantAttrs) {
        let env = self.env.clone();
        let [prio, qdate, cluster, proc] = job_order_names();
        // Each submitter's jobs in its order.
        let mut orders = Vec::new();
        for s in self.submitters {
            let mut keyed: Vec<(f64, f64, f64, f64, usize)> = s
                .jobs
                .iter()
                .enumerate()
                .map(|(i, j)| {
                    let n = |a: &AttrName| named_number(j, a, &env).unwrap_or(0.0);
                    (-n(prio), n(qdate), n(cluster), n(proc), i)
                })
                .collect();
            keyed.sort_by(|a, b| {
                a.0.total_cmp(&b.0)
                    .then(a.1.total_cmp(&b.1))
                    .then(a.2.total_cmp(&b.2))
                    .then(a.3.total_cmp(&b.3))
                    .then(a.4.cmp(&b.4))
            });
            orders.push(keyed.into_iter().map(|k| k.4).collect::<Vec<_>>());
            self.stats.idle_jobs += s.jobs.len();
        }
        // Where a submitter's schedds kept autoclusters, each job stands
        // for itself only if it is the first of its kept autocluster in
        // the submitter's order; the others take that first job's key and
        // autocluster (alike over the schedds' names, so alike over the
        // cycle's, as long as those cover the cycle's).
        let mut first_of: Vec<Option<Vec<usize>>> = self
            .submitters
            .iter()
            .zip(&orders)
            .map(|(s, order)| {
                let kept = s.kept.as_ref().filter(|k| k.ids.len() == s.jobs.len())?;
                // (A fast hash: asked for every job; never iterated.)
                let mut first: FxHashMap<u64, usize> = FxHashMap::default();
                let mut of = vec![0; s.jobs.len()];
                for &ji in order {
                    of[ji] = *first.entry(kept.ids[ji]).or_insert(ji);
                }
                Some(of)
            })
            .collect();
        // Keys, learning the closure of significant names; all computed
        // again while the set grows.
        let mut keys: Vec<Vec<u64>> = self
            .submitters
            .iter()
            .map(|s| vec![0; s.jobs.len()])
            .collect();
        loop {
            let mut stale = false;
            for (si, s) in self.submitters.iter().enumerate() {
                for (ji, j) in s.jobs.iter().enumerate() {
                    if first_of[si].as_ref().is_some_and(|of| of[ji] != ji) {
                        continue;
                    }
                    let (k, grew) = attrs.key_of(j);
                    keys[si][ji] = k;
                    stale |= grew;
                    self.stats.jobs_keyed += 1;
                }
            }
            if stale {
                continue;
            }
            // Kept ids made over fewer names than the cycle reads are no
            // use: those jobs are keyed one by one.
            let mut dropped = false;
            for (si, s) in self.submitters.iter().enumerate() {
                if first_of[si].is_some() && !s.kept.as_ref().is_some_and(|k| k.covers(attrs)) {
                    first_of[si] = None;
                    dropped = true;
                    self.stats.kept_ids_dropped += 1;
                }
            }
            if !dropped {
                break;
            }
        }
        for (si, of) in first_of.iter().enumerate() {
            if let Some(of) = of {
                for ji in 0..of.len() {
                    keys[si][ji] = keys[si][of[ji]];
                }
            }
        }
        self.significant = attrs
            .names()
            .iter()
            .map(|n| n.as_str().to_string())
            .collect();
        for (si, s) in self.submitters.iter().enumerate() {
            let mut clusters = Clusters::default();
            let mut ac_of_first: FxHashMap<usize, usize> = FxHashMap::default();
            let base = self.acs.len();
            let mut queue = Vec::with_capacity(s.jobs.len());
            for &ji in &orders[si] {
                let id = match &first_of[si] {
                    Some(of) => *ac_of_first
                        .entry(of[ji])
                        .or_insert_with(|| clusters.assign(attrs, keys[si][ji], ji, |i| s.jobs[i])),
                    None => clusters.assign(attrs, keys[si][ji], ji, |i| s.jobs[i]),
                };
                if base + id == self.acs.len() {
                    self.acs.push(self.new_ac(si, s.jobs[ji]));
                    self.not_offered.push(0);
                }
                if self.acs[base + id].jobs.len() >= self.per_autocluster {
                    self.not_offered[base + id] += 1;
                    continue;
                }
                self.acs[base + id].jobs.push(ji);
                queue.push((ji, base + id));
            }
            self.queues.push(queue);
        }
        self.stats.autoclusters = self.acs.len();
    }

    /// The representative job of an autocluster, with what HTCondor adds
    /// to a request before matching it.
    fn new_ac(&self, si: usize, job: &ClassAd) -> Ac {
        let mut j = job.clone();
        let name = &self.submitters[si].name;
        let prio = self.prio[si];
        j.insert_value("SubmitterUserPrio", prio);
        j.insert_value("SubmittorPrio", prio);
        j.insert_value(
            "SubmitterUserResourcesInUse",
            self.usage.get(name).copied().unwrap_or(0.0),
        );
        let literal_limits = matches!(j.get("ConcurrencyLimits"), None | Some(Expr::Lit(_)));
        let job_constraint_ok = match &self.policy.job_constraint {
            Some(c) => is_true(&j.eval(c, &self.env)),
            None => true,
        };
        Ac {
            submitter: si,
            job: j,
            jobs: Vec::new(),
            list: None,
            metrics: Metrics::default(),
            rejected_in_spin: None,
            done: None,
            last_reason: None,
            literal_limits,
            job_constraint_ok,
        }
    }

    fn build_classes(
        &mut self,
        attrs: &mut SignificantAttrs,
        trimmed: &[Offered],
        keeping: Option<Keeping<'_>>,
    ) {
        for name in CLAIM_NAMES {
            attrs.add(name);
        }
        self.preemption_possible = self.policy.consider_preemption
            && (self.priority_preemption_configured()
                || self
                    .slots
                    .iter()
                    .any(|s| s.remote_user.is_some() && s.rank_preemption)
                || self.slots.iter().any(|s| !s.children.is_empty()));
        let candidates: Vec<usize> = (0..self.slots.len())
            .filter(|&i| trimmed[i] != Offered::No)
            .filter(|&i| self.slots[i].remote_user.is_none() || self.preemption_possible)
            .filter(|&i| trimmed[i] != Offered::UnlessRetiring || !self.retiring(&self.slots[i]))
            .collect();
        self.stats.slots_trimmed = self.slots.len() - candidates.len();
        let keeping = keeping.filter(|k| k.generations.generations.len() == self.slots.len());
        // What is kept of each slot, if still true of it: kept over these
        // very names, and its ad is the one published under the same
        // generation (not one the cycle wrote preemption figures into).
        let kept: Vec<Option<KeptSlotKey>> = match &keeping {
            Some(k) if k.kept.names == attrs.names() => self
                .slots
                .iter()
                .zip(k.generations.generations)
                .enumerate()
                .map(|(i, (s, &g))| {
                    let e = k.kept.slots.get(i).copied().flatten()?;
                    (e.generation == g && matches!(s.ad, Cow::Borrowed(_))).then_some(e)
                })
                .collect(),
            _ => Vec::new(),
        };
        let kept_at = |i: usize| kept.get(i).copied().flatten();
        let names_before = attrs.len();
        let keys = match &keeping {
            Some(k) => kept_slot_keys(
                attrs,
                &candidates,
                |i| &self.slots[i].ad,
                |i| kept_at(i).map(|e| e.key),
                k.generations.changes_with_time,
            ),
            None => slot_keys(attrs, &candidates, |i| &self.slots[i].ad),
        };
        self.stats.slots_keyed = keys.keyed;
        // A slot taught the cycle a name: what was kept over fewer names
        // says nothing of likeness over these, and nothing is kept.
        let grew = attrs.len() != names_before;
        // Each slot's cluster first (the slots' ads are borrowed while
        // their bindings are compared), then the classes in slot order.
        let (cluster, clusters_made): (Vec<Option<usize>>, usize) = {
            let attrs_len = attrs.len();
            let mut clusters = SlotClusters::new(attrs.names());
            let cluster = candidates
                .iter()
                .map(|&i| {
                    let s = &self.slots[i];
                    if s.partitionable {
                        return None;
                    }
                    let token = kept_at(i).and_then(|e| e.cluster).filter(|_| !grew);
                    Some(match token {
                        Some(t) => clusters.assign_kept(
                            t,
                            keys.moving[i],
                            keys.full[i],
                            &s.ad,
                            &keys.moving_names,
                            keys.moving_bound(i),
                        ),
                        None => {
                            clusters.assign_bound(keys.full[i], &s.ad, keys.bound(i, attrs_len))
                        }
                    })
                })
                .collect();
            (cluster, clusters.bound.len())
        };
        if let Some(k) = keeping.filter(|_| !grew) {
            let store = k.kept;
            if store.names != attrs.names() {
                store.names = attrs.names().to_vec();
                store.slots.clear();
            }
            store.slots.resize(self.slots.len(), None);
            let base = store.next_cluster;
            store.next_cluster += clusters_made as u64;
            for (&i, c) in candidates.iter().zip(&cluster) {
                if matches!(self.slots[i].ad, Cow::Borrowed(_)) {
                    store.slots[i] = Some(KeptSlotKey {
                        generation: k.generations.generations[i],
                        key: keys.lasting[i],
                        cluster: c.map(|c| base + c as u64),
                    });
                }
            }
        }
        // Each cluster's class, by cluster (numbered from 0).
        let mut class_of: Vec<Option<usize>> = vec![None; clusters_made];
        for (&i, cluster) in candidates.iter().zip(cluster) {
            let s = &self.slots[i];
            if s.partitionable {
                self.slots[i].class = Some(self.classes.len());
                self.classes.push(Class {
                    members: vec![i],
                    cursor: 0,
                    live: 1,
                    claimed: false,
                    partitionable: true,
                    fixed: Fixed::default(),
                });
                continue;
            }
            let slots = &self.slots;
            let Some(id) = cluster else { continue };
            let class = *class_of[id].get_or_insert_with(|| {
                self.classes.push(Class {
                    members: Vec::new(),
                    cursor: 0,
                    live: 0,
                    claimed: slots[i].remote_user.is_some(),
                    partitionable: false,
                    fixed: Fixed::default(),
                });
                self.classes.len() - 1
            });
            self.classes[class].members.push(i);
            self.classes[class].live += 1;
            self.slots[i].class = Some(class);
        }
        self.usable = (0..self.classes.len()).collect();
        self.stats.slot_classes = self.classes.len();
    }

    /// Groups the usable classes (see [`Group`]). For each class, the
    /// negotiator ranks that read nothing of the job for its slots are
    /// constants ([`Fixed`]); classes with the same such ranks are grouped
    /// by the attributes everything else reads (found as for the classes,
    /// without those ranks). A class with none is a group of its own.
    fn build_groups(&mut self, slot_refs: &SignificantAttrs) {
        let p = self.policy;
        // NEGOTIATOR_PRE_JOB_RANK, NEGOTIATOR_POST_JOB_RANK, PREEMPTION_RANK
        // (read only for claimed slots).
        let ranks = [
            may_be_constant(p.pre_job_rank.as_ref()),
            may_be_constant(p.post_job_rank.as_ref()),
            if self.classes.iter().any(|c| c.claimed) {
                may_be_constant(p.preemption_rank.as_ref())
            } else {
                None
            },
        ];
        // For each usable class, the ranks constant for it (a bit each).
        let mut masks = vec![0u8; self.classes.len()];
        if ranks.iter().any(Option::is_some) {
            let empty = ClassAd::new();
            for &c in &self.usable {
                let class = &self.classes[c];
                if class.partitionable {
                    continue;
                }
                let ad: &ClassAd = &self.slots[class.members[0]].ad;
                let mut mask = 0u8;
                let mut values = [None; 3];
                for (k, e) in ranks.iter().enumerate() {
                    let Some(e) = e else { continue };
                    if k == 2 && !class.claimed {
                        // Never read: leave out what it reads.
                        mask |= 1 << k;
                    } else if target_free(e, Some(ad)) {
                        mask |= 1 << k;
                        values[k] = Some(rank_value(Some(e), ad, &empty, &self.env));
                    }
                }
                if values.iter().any(Option::is_some) {
                    masks[c] = mask;
                    self.classes[c].fixed = Fixed {
                        pre: values[0],
                        post: values[1],
                        preempt: values[2],
                    };
                }
            }
        }
        let mut by_mask: Vec<u8> = self.usable.iter().map(|&c| masks[c]).collect();
        by_mask.sort_unstable();
        by_mask.dedup();
        let mut group_of: HashMap<(u8, bool, usize), usize> = HashMap::new();
        let mut group_of_class = vec![usize::MAX; self.classes.len()];
        for mask in by_mask.into_iter().filter(|m| *m != 0) {
            let skip: Vec<&Expr> = (0..3)
                .filter(|k| mask & (1 << k) != 0)
                .filter_map(|k| ranks[k])
                .collect();
            let mut attrs = self.significant_roots(&skip);
            for n in slot_refs.names() {
                attrs.add(n.as_str());
            }
            // What the jobs read, through what they bind; an autocluster's
            // first job stands for all of its jobs.
            loop {
                let mut grew = false;
                for ac in &self.acs {
                    grew |= attrs
                        .key_of(self.submitters[ac.submitter].jobs[ac.jobs[0]])
                        .1;
                }
                if !grew {
                    break;
                }
            }
            for name in CLAIM_NAMES {
                attrs.add(name);
            }
            let members: Vec<usize> = self
                .usable
                .iter()
                .copied()
                .filter(|c| masks[*c] == mask)
                .collect();
            // Keys of the classes' slots (alike within a class), learning
            // what their attributes read.
            let mut keys = vec![0u64; members.len()];
            loop {
                let mut stale = false;
                for (key, &c) in keys.iter_mut().zip(&members) {
                    let (k, grew) = attrs.key_of(&self.slots[self.classes[c].members[0]].ad);
                    *key = k;
                    stale |= grew;
                }
                if !stale {
                    break;
                }
            }
            let mut clusters = [Clusters::default(), Clusters::default()];
            let (classes, slots) = (&self.classes, &self.slots);
            for (&c, &key) in members.iter().zip(&keys) {
                let claimed = classes[c].claimed;
                let id = clusters[claimed as usize]
                    .assign(&attrs, key, c, |k| &slots[classes[k].members[0]].ad);
                let next = group_of.len();
                group_of_class[c] = *group_of.entry((mask, claimed, id)).or_insert(next);
            }
        }
        // Groups in the order of their first classes.
        let mut index: HashMap<usize, usize> = HashMap::new();
        for &c in &self.usable {
            let g = match group_of_class[c] {
                usize::MAX => None,
                g => Some(g),
            };
            let at = match g.and_then(|g| index.get(&g)) {
                Some(&at) => at,
                None => {
                    self.groups.push(Group {
                        classes: Vec::new(),
                    });
                    if let Some(g) = g {
                        index.insert(g, self.groups.len() - 1);
                    }
                    self.groups.len() - 1
                }
            };
            self.groups[at].classes.push(c);
        }
        // A group's classes in the order their constants rank them (the
        // candidate lists come out nearly sorted).
        let classes = &self.classes;
        for g in &mut self.groups {
            g.classes.sort_by(|a, b| {
                let (x, y) = (&classes[*a].fixed, &classes[*b].fixed);
                let f = |a: Option<f64>, b: Option<f64>| {
                    b.unwrap_or(NO_RANK).total_cmp(&a.unwrap_or(NO_RANK))
                };
                f(x.pre, y.pre)
                    .then(f(x.post, y.post))
                    .then(f(x.preempt, y.preempt))
                    .then(classes[*a].members[0].cmp(&classes[*b].members[0]))
            });
        }
    }

    /// Evaluates slot `si` (as it is now) for autocluster `ac`.
    fn evaluate(&self, ac: usize, si: usize) -> Result<(Ranks, Vec<usize>), Reject> {
        let env = &self.env;
        let job = &self.acs[ac].job;
        let sub = self.acs[ac].submitter;
        let slot = &self.slots[si];
        let ad: &ClassAd = &slot.ad;
        if slot.partitionable {
            return self.evaluate_pslot(ac, si);
        }
        if !classad::matching::requirements_met(job, ad, env) {
            return Err(Reject::JobRequirements);
        }
        if !classad::matching::requirements_met(ad, job, env) {
            return Err(Reject::SlotRequirements);
        }
        let state = match &slot.remote_user {
            None => State::None,
            Some(user) => self.preemption_state(ad, job, user, self.prio[sub])?,
        };
        Ok((self.ranks(ad, job, state), Vec::new()))
    }

    fn preemption_state(
        &self,
        slot: &ClassAd,
        job: &ClassAd,
        user: &str,
        prio: f64,
    ) -> Result<State, Reject> {
        let env = &self.env;
        let new_rank = classad::eval::eval_attr(slot, Some(job), "Rank", env).as_number();
        let current = lit_number(slot, "CurrentRank", env);
        let (gt, ge) = match (new_rank, current) {
            (Some(n), Some(c)) => (n > c, n >= c),
            _ => (false, false),
        };
        if gt {
            return Ok(State::Rank);
        }
        if self.priorities.effective_priority(user) >= prio + PRIORITY_DELTA {
            if let Some(req) = &self.policy.preemption_requirements {
                if !is_true(&classad::eval_expr(req, Some(slot), Some(job), env)) {
                    return Err(Reject::PreemptRequirements);
                }
            }
            if !ge {
                return Err(Reject::PreemptRank);
            }
            return Ok(State::Priority);
        }
        Err(Reject::PreemptPriority)
    }

    fn ranks(&self, slot: &ClassAd, job: &ClassAd, state: State) -> Ranks {
        let env = &self.env;
        let p = self.policy;
        Ranks {
            pre: rank_value(p.pre_job_rank.as_ref(), slot, job, env),
            job: classad::matching::rank(job, slot, env),
            post: rank_value(p.post_job_rank.as_ref(), slot, job, env),
            state,
            preempt: if state == State::None {
                NO_RANK
            } else {
                rank_value(p.preemption_rank.as_ref(), slot, job, env)
            },
        }
    }

    /// A partitionable slot: enough room (under its consumption policy, if
    /// any) and a symmetric match with the requests replaced by what the
    /// policy takes; else, with ALLOW_PSLOT_PREEMPTION, its dynamic slots
    /// lowest CurrentRank first until it would match.
    fn evaluate_pslot(&self, ac: usize, si: usize) -> Result<(Ranks, Vec<usize>), Reject> {
        let env = &self.env;
        let job = &self.acs[ac].job;
        let slot = &self.slots[si];
        let plain = self.pslot_match(job, &slot.ad);
        let err = match plain {
            Ok(()) => return Ok((self.ranks(&slot.ad, job, State::None), Vec::new())),
            Err(e) => e,
        };
        let wants = job
            .eval_attr("WantPslotPreemption", env)
            .as_bool()
            .unwrap_or(true);
        if !(self.policy.allow_pslot_preemption
            && self.policy.consider_preemption
            && wants
            && !slot.children.is_empty())
        {
            return Err(err);
        }
        let new_rank = classad::eval::eval_attr(&slot.ad, Some(job), "Rank", env)
            .as_number()
            .unwrap_or(0.0);
        let mut kids: Vec<usize> = slot
            .children
            .iter()
            .copied()
            .filter(|c| !self.slots[*c].taken)
            .collect();
        kids.sort_by(|a, b| {
            self.slots[*a]
                .current_rank
                .total_cmp(&self.slots[*b].current_rank)
                .then(a.cmp(b))
        });
        let resources = pslot::assets(&slot.ad, env);
        let mut mutated = slot.ad.clone().into_owned();
        let prio = self.prio[self.acs[ac].submitter];
        let mut taken = Vec::new();
        for k in kids {
            let d = &self.slots[k];
            if d.current_rank > new_rank {
                break;
            }
            if d.current_rank == new_rank {
                // Equal RANK: only for user priority, under
                // PREEMPTION_REQUIREMENTS (HTCondor's
                // PREEMPTION_REQUIREMENTS_PSLOT defaults to it), judged
                // with the dynamic slot as MY.
                let Some(req) = &self.policy.preemption_requirements else {
                    continue;
                };
                let user = d.remote_user.as_deref().unwrap_or("");
                if self.priorities.effective_priority(user) < prio + PRIORITY_DELTA {
                    continue;
                }
                if !is_true(&classad::eval_expr(req, Some(&d.ad), Some(job), env)) {
                    continue;
                }
            }
            pslot::give_back(&mut mutated, &d.ad, &resources, env);
            taken.push(k);
            if self.pslot_match(job, &mutated).is_ok() {
                return Ok((self.ranks(&slot.ad, job, State::None), taken));
            }
        }
        Err(err)
    }

    fn pslot_match(&self, job: &ClassAd, slot: &ClassAd) -> Result<(), Reject> {
        let env = &self.env;
        let takes = pslot::consumption(job, slot, env).ok_or(Reject::Resources)?;
        if !pslot::sufficient(slot, &takes, env) {
            return Err(Reject::Resources);
        }
        let job = if pslot::supports_policy(slot, env) {
            Cow::Owned(pslot::override_requests(job, &takes))
        } else {
            Cow::Borrowed(job)
        };
        if !classad::matching::requirements_met(&job, slot, env) {
            return Err(Reject::JobRequirements);
        }
        if !classad::matching::requirements_met(slot, &job, env) {
            return Err(Reject::SlotRequirements);
        }
        Ok(())
    }

    fn count(metrics: &mut Metrics, r: &Reject, n: u64) {
        match r {
            Reject::JobRequirements => metrics.job_requirements += n,
            Reject::SlotRequirements => metrics.slot_requirements += n,
            Reject::Resources => metrics.insufficient_resources += n,
            Reject::PreemptPriority => metrics.preempt_priority += n,
            Reject::PreemptRequirements => metrics.preempt_requirements += n,
            Reject::PreemptRank => metrics.preempt_rank += n,
        }
    }

    /// The autocluster's candidate list: one slot of each group of slot
    /// classes evaluated, an entry for each class.
    fn build_list(&mut self, ac: usize) {
        let sub = self.acs[ac].submitter;
        let prio = self.prio[sub];
        let prio_configured = self.priority_preemption_configured();
        let mut metrics = Metrics::default();
        let mut entries = Vec::new();
        for group in &self.groups {
            let live: usize = group.classes.iter().map(|&c| self.classes[c].live).sum();
            if live == 0 {
                continue;
            }
            let live = live as u64;
            let first = group
                .classes
                .iter()
                .map(|&c| &self.classes[c])
                .find(|c| c.live > 0)
                .expect("a live class");
            let rep = first.members[first.cursor..]
                .iter()
                .copied()
                .find(|m| !self.slots[*m].taken)
                .unwrap_or(first.members[0]);
            metrics.slots_considered += live;
            if first.claimed {
                let s = &self.slots[rep];
                let user = s.remote_user.as_deref().unwrap_or("");
                let by_prio = prio_configured
                    && self.priorities.effective_priority(user) >= prio + PRIORITY_DELTA;
                if !by_prio && !self.rank_preemption_possible(s) {
                    metrics.claimed_not_preemptable += live;
                    continue;
                }
            }
            match self.evaluate(ac, rep) {
                Ok((ranks, dslots)) => {
                    metrics.candidates += live;
                    for &c in &group.classes {
                        let class = &self.classes[c];
                        if class.live == 0 {
                            continue;
                        }
                        entries.push(Entry {
                            class: c,
                            ranks: class.fixed.apply(ranks),
                            version: self.slots[rep].version,
                            dslots: dslots.clone(),
                            dead: false,
                        });
                    }
                }
                Err(r) => Self::count(&mut metrics, &r, live),
            }
        }
        entries.sort_by(|a, b| {
            a.ranks
                .order(&b.ranks)
                .then(self.classes[a.class].members[0].cmp(&self.classes[b.class].members[0]))
        });
        let rank_entries = entries.iter().filter(|e| e.rank_preempts()).count();
        self.acs[ac].metrics = metrics;
        self.acs[ac].list = Some(MatchList {
            entries,
            head: 0,
            rank_entries,
        });
        self.stats.match_lists_built += 1;
    }

    /// Takes a slot for good (this cycle).
    fn take(&mut self, slot: usize) {
        let s = &mut self.slots[slot];
        if !s.taken {
            s.taken = true;
            if let Some(c) = s.class {
                self.classes[c].live -= 1;
            }
        }
    }

    /// The next available slot of a class, if any.
    fn available(&mut self, class: usize) -> Option<usize> {
        let c = &mut self.classes[class];
        while c.cursor < c.members.len() {
            let m = c.members[c.cursor];
            if !self.slots[m].taken {
                return Some(m);
            }
            c.cursor += 1;
        }
        None
    }

    /// What a match with `slot` would cost, and what it takes from a
    /// partitionable slot (after giving back preempted dynamic slots).
    fn cost(
        &self,
        ac: usize,
        slot: usize,
        dslots: &[usize],
    ) -> (f64, Vec<pslot::Take>, Option<ClassAd>) {
        let s = &self.slots[slot];
        if !s.partitionable {
            return (s.weight, Vec::new(), None);
        }
        let env = &self.env;
        let mut ad = s.ad.clone().into_owned();
        let resources = pslot::assets(&ad, env);
        for d in dslots {
            pslot::give_back(&mut ad, &self.slots[*d].ad, &resources, env);
        }
        let before = self.weight_of(&ad);
        let takes = pslot::consumption(&self.acs[ac].job, &ad, env).unwrap_or_default();
        pslot::deduct(&mut ad, &takes, env);
        let after = self.weight_of(&ad);
        (before - after, takes, Some(ad))
    }

    /// Pops the best candidate for a job of `ac`, as HTCondor's
    /// matchmakingAlgorithm with a MatchList does.
    #[allow(clippy::too_many_arguments)]
    fn pick(
        &mut self,
        ac: usize,
        job: &ClassAd,
        only_rank: bool,
        used: f64,
        limit: f64,
        pie_left: f64,
        limits: &dyn Limits,
    ) -> Result<(usize, usize), Reason> {
        if self.acs[ac].list.is_none() {
            self.build_list(ac);
        }
        let mut list = self.acs[ac].list.take().expect("built above");
        let mut saw_limit = false;
        let mut saw_concurrency = false;
        let mut concurrency: Vec<String> = Vec::new();
        let mut found = None;
        if only_rank && list.rank_entries == 0 {
            self.acs[ac].list = Some(list);
            return Err(self.fail_reason(ac, false));
        }
        let mut i = list.head;
        while i < list.entries.len() {
            if list.entries[i].dead {
                if i == list.head {
                    list.head += 1;
                }
                i += 1;
                continue;
            }
            let class = list.entries[i].class;
            let Some(slot) = self.available(class) else {
                list.entries[i].dead = true;
                continue;
            };
            if self.classes[class].partitionable
                && list.entries[i].version != self.slots[slot].version
            {
                // The partitionable slot was divided since: judge it again
                // and put it back where it now belongs.
                let old = list.entries.remove(i);
                if old.rank_preempts() {
                    list.rank_entries -= 1;
                }
                if let Ok((ranks, dslots)) = self.evaluate(ac, slot) {
                    let e = Entry {
                        class,
                        ranks,
                        version: self.slots[slot].version,
                        dslots,
                        dead: false,
                    };
                    let pos = i + list.entries[i..]
                        .iter()
                        .position(|x| e.ranks.order(&x.ranks) == Ordering::Less)
                        .unwrap_or(list.entries.len() - i);
                    if e.rank_preempts() {
                        list.rank_entries += 1;
                    }
                    list.entries.insert(pos, e);
                }
                continue;
            }
            let (rank_ok, state, dslots) = {
                let e = &list.entries[i];
                (e.rank_preempts(), e.ranks.state, e.dslots.clone())
            };
            if only_rank && !rank_ok {
                i += 1;
                continue;
            }
            if dslots.iter().any(|d| self.slots[*d].taken) {
                // A dynamic slot it counted on went to another match:
                // judge the partitionable slot again.
                list.entries[i].version = u32::MAX;
                continue;
            }
            let (cost, _, _) = self.cost(ac, slot, &dslots);
            if state != State::Rank && !permits(cost, used, limit, pie_left) {
                saw_limit = true;
                self.acs[ac].metrics.submitter_limit += 1;
                i += 1;
                continue;
            }
            if !limits.fits(job, &self.slots[slot].ad) {
                saw_concurrency = true;
                self.acs[ac].metrics.concurrency_limit += 1;
                for l in limits.exceeded(job, &self.slots[slot].ad) {
                    if !concurrency.contains(&l) {
                        concurrency.push(l);
                    }
                }
                if self.acs[ac].literal_limits {
                    break;
                }
                i += 1;
                continue;
            }
            found = Some((slot, i));
            break;
        }
        let out = match found {
            Some(m) => Ok(m),
            None if saw_concurrency => Err(Reason::ConcurrencyLimit(concurrency)),
            None => Err(self.fail_reason(ac, saw_limit)),
        };
        self.acs[ac].list = Some(list);
        out
    }

    /// When nothing matched and claimed slots were dropped unevaluated
    /// (nobody of this priority could preempt them), find the first one
    /// whose Requirements match, so the reason says what HTCondor would:
    /// "insufficient priority" or "PREEMPTION_REQUIREMENTS == False".
    fn refine_reason(&mut self, ac: usize) {
        let m = &self.acs[ac].metrics;
        if m.candidates > 0 || m.claimed_not_preemptable == 0 {
            return;
        }
        let prio = self.prio[self.acs[ac].submitter];
        let job = &self.acs[ac].job;
        for &c in &self.usable {
            let class = &self.classes[c];
            if !class.claimed {
                continue;
            }
            let Some(&rep) = class.members[class.cursor..]
                .iter()
                .find(|m| !self.slots[**m].taken)
            else {
                continue;
            };
            let s = &self.slots[rep];
            if !(classad::matching::requirements_met(job, &s.ad, &self.env)
                && classad::matching::requirements_met(&s.ad, job, &self.env))
            {
                continue;
            }
            let user = s.remote_user.as_deref().unwrap_or("");
            let m = &mut self.acs[ac].metrics;
            if self.priorities.effective_priority(user) >= prio + PRIORITY_DELTA {
                m.preempt_requirements += 1;
            } else {
                m.preempt_priority += 1;
            }
            return;
        }
    }

    fn fail_reason(&mut self, ac: usize, saw_limit: bool) -> Reason {
        self.refine_reason(ac);
        let m = &self.acs[ac].metrics;
        if m.preempt_requirements > 0 {
            Reason::PreemptionRequirements
        } else if m.preempt_priority > 0 {
            Reason::InsufficientPriority
        } else if saw_limit {
            Reason::SubmitterLimit
        } else {
            Reason::NoMatch
        }
    }

    /// Makes the match: takes the slot (or divides the partitionable
    /// slot), moves usage, counts the limits.
    fn apply(
        &mut self,
        ac: usize,
        job_index: usize,
        slot: usize,
        entry: usize,
        limits: &mut dyn Limits,
    ) -> f64 {
        let sub = self.acs[ac].submitter;
        let job: &ClassAd = self.submitters[sub].jobs[job_index];
        let (ranks, dslots) = {
            let e = &self.acs[ac].list.as_ref().expect("list").entries[entry];
            (e.ranks, e.dslots.clone())
        };
        let (cost, takes, divided) = self.cost(ac, slot, &dslots);
        limits.take(job, &self.slots[slot].ad);
        let mut preempted = Vec::new();
        let mut kind = match ranks.state {
            State::None => MatchKind::Plain,
            State::Rank => MatchKind::RankPreemption,
            State::Priority => MatchKind::PriorityPreemption,
        };
        if let Some(ad) = divided {
            let weight = self.weight_of(&ad);
            let new_rank =
                classad::eval::eval_attr(&ad, Some(&self.acs[ac].job), "Rank", &self.env)
                    .as_number()
                    .unwrap_or(0.0);
            let s = &mut self.slots[slot];
            s.ad = Cow::Owned(ad);
            s.version += 1;
            s.weight = weight;
            if !dslots.is_empty() {
                // RANK preemption when every dynamic slot taken ranks below
                // the new job; an equal one was taken for user priority.
                kind = if dslots
                    .iter()
                    .all(|d| self.slots[*d].current_rank < new_rank)
                {
                    MatchKind::RankPreemption
                } else {
                    MatchKind::PriorityPreemption
                };
            }
        } else {
            self.take(slot);
        }
        let victims: Vec<usize> = if slot_is_claimed(&self.slots[slot]) {
            vec![slot]
        } else {
            dslots.clone()
        };
        for v in victims {
            self.take(v);
            let user = self.slots[v]
                .remote_user
                .as_deref()
                .unwrap_or_default()
                .to_string();
            let w = self.slots[v].weight;
            *self.usage.entry(user.clone()).or_insert(0.0) -= w;
            preempted.push(Preempted {
                slot: v,
                slot_name: self.slots[v].name.to_string(),
                user,
            });
        }
        // The submitter's name copied only the first time it is charged.
        let name = &self.submitters[sub].name;
        match self.usage.get_mut(name) {
            Some(u) => *u += cost.max(0.0),
            None => {
                // (Added to 0.0, as a first charge always was: a charge
                // of -0.0 is kept as 0.0.)
                self.usage.insert(name.clone(), 0.0 + cost.max(0.0));
            }
        }
        let env = &self.env;
        self.matches.push(Match {
            submitter: sub,
            job: job_index,
            cluster: named_number(job, &job_order_names()[2], env).unwrap_or(0.0) as i64,
            proc: named_number(job, &job_order_names()[3], env).unwrap_or(0.0) as i64,
            slot,
            slot_name: self.slots[slot].name.to_string(),
            kind,
            preempted,
            cost,
            autocluster: ac,
            takes,
        });
        cost
    }

    /// One submitter's turn in a spin: its jobs in order until its limit
    /// (then only RANK preemption) or its jobs run out. Returns the weight
    /// matched and whether it has anything left to try.
    fn negotiate_submitter(
        &mut self,
        sub: usize,
        limit: f64,
        mut pie_left: f64,
        spin: u32,
        limits: &mut dyn Limits,
    ) -> (f64, bool) {
        let mut used = 0.0;
        let queue = std::mem::take(&mut self.queues[sub]);
        let mut left = Vec::with_capacity(queue.len());
        let mut stop = false;
        for &(job_index, ac) in &queue {
            if stop {
                left.push((job_index, ac));
                continue;
            }
            let state = &self.acs[ac];
            if state.done.is_some() || state.rejected_in_spin == Some(spin) {
                left.push((job_index, ac));
                continue;
            }
            if !state.job_constraint_ok {
                self.acs[ac].done = Some(Reason::JobConstraint);
                left.push((job_index, ac));
                continue;
            }
            let only_rank = used >= limit;
            if only_rank && !self.policy.consider_preemption {
                stop = true;
                left.push((job_index, ac));
                continue;
            }
            let job: &ClassAd = self.submitters[sub].jobs[job_index];
            match self.pick(ac, job, only_rank, used, limit, pie_left, limits) {
                Ok((slot, entry)) => {
                    let cost = self.apply(ac, job_index, slot, entry, limits);
                    used += cost;
                    pie_left -= cost;
                }
                Err(reason) => {
                    // Nothing the cycle does frees a slot or a limit, so
                    // only a rejection for fair share can change next spin.
                    let retry = matches!(reason, Reason::SubmitterLimit) || only_rank;
                    if retry {
                        self.acs[ac].rejected_in_spin = Some(spin);
                    } else {
                        self.acs[ac].done = Some(reason.clone());
                    }
                    self.acs[ac].last_reason = Some(reason);
                    left.push((job_index, ac));
                }
            }
        }
        let active = left.iter().any(|(_, ac)| self.acs[*ac].done.is_none());
        self.queues[sub] = left;
        (used, active)
    }

    fn run(mut self, limits: &mut dyn Limits) -> Plan {
        let mut active: Vec<usize> = (0..self.submitters.len())
            .filter(|s| !self.queues[*s].is_empty())
            .collect();
        // Best priority first; ties by name, for a deterministic order.
        active.sort_by(|a, b| {
            self.prio[*a]
                .total_cmp(&self.prio[*b])
                .then(self.submitters[*a].name.cmp(&self.submitters[*b].name))
        });
        let pool = self.stats.pool_size;
        let mut spin = 0u32;
        while !active.is_empty() {
            spin += 1;
            // Shares: proportional to 1/priority.
            let inv: Vec<f64> = active
                .iter()
                .map(|s| 1.0 / self.prio[*s].max(f64::MIN_POSITIVE))
                .collect();
            let total_inv: f64 = inv.iter().sum();
            let limits_now: Vec<f64> = active
                .iter()
                .zip(&inv)
                .map(|(s, w)| {
                    if self.policy.ignore_user_priorities {
                        return pool;
                    }
                    let share = w / total_inv * pool;
                    let usage = self
                        .usage
                        .get(&self.submitters[*s].name)
                        .copied()
                        .unwrap_or(0.0);
                    (share - usage).max(0.0)
                })
                .collect();
            let mut pie_left: f64 = limits_now.iter().sum();
            if !self.policy.consider_preemption && pie_left <= 0.0 {
                break;
            }
            let matches_before = self.matches.len();
            let count_before = active.len();
            let mut still = Vec::new();
            for (k, &s) in active.iter().enumerate() {
                let (used, more) =
                    self.negotiate_submitter(s, limits_now[k], pie_left, spin, limits);
                pie_left -= used;
                if more {
                    still.push(s);
                }
            }
            active = still;
            let progressed = self.matches.len() > matches_before || active.len() < count_before;
            if !progressed {
                break;
            }
        }
        self.stats.pie_spins = spin;
        self.finish()
    }

    fn finish(self) -> Plan {
        let mut plan = Plan {
            stats: self.stats,
            significant: self.significant,
            ..Plan::default()
        };
        let mut idle = self.not_offered.clone();
        idle.resize(self.acs.len(), 0);
        for q in &self.queues {
            for (_, ac) in q {
                idle[*ac] += 1;
            }
        }
        for (i, ac) in self.acs.into_iter().enumerate() {
            if idle[i] > 0 {
                let reason = ac
                    .done
                    .clone()
                    .or(ac.last_reason.clone())
                    .unwrap_or(Reason::SubmitterLimit);
                plan.unmatched.push(Unmatched {
                    autocluster: i,
                    submitter: ac.submitter,
                    idle: idle[i],
                    reason,
                    metrics: ac.metrics.clone(),
                });
            }
            plan.autoclusters.push(Autocluster {
                submitter: ac.submitter,
                jobs: ac.jobs,
            });
        }
        plan.matches = self.matches;
        plan
    }
}

fn slot_is_claimed(s: &Slot<'_>) -> bool {
    s.remote_user.is_some() && !s.partitionable
}

/// HTCondor's SubmitterLimitPermits: within the limit, or the first match
/// of the spin rounding up when the pie still has (nearly) that much left.
fn permits(cost: f64, used: f64, limit: f64, pie_left: f64) -> bool {
    used + cost <= limit || (used <= 0.0 && limit > 0.0 && pie_left >= 0.99 * cost)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_700_000_000;

    struct Prios(Vec<(&'static str, f64)>);

    impl Priorities for Prios {
        fn effective_priority(&self, submitter: &str) -> f64 {
            self.0
                .iter()
                .find(|(n, _)| *n == submitter)
                .map_or(0.5, |p| p.1)
        }
        fn resources_in_use(&self, _submitter: &str) -> f64 {
            0.0
        }
    }

    fn policy(text: &str) -> Policy {
        let config = config::load(
            &config::LoadOptions::new("NEGOTIATOR", config::Root::File("condor_config".into())),
            &config::MemFiles::new().with("condor_config", text),
            &config::FixedHost::empty(),
        )
        .unwrap();
        Policy::from_config(&config).unwrap()
    }

    fn claimed(name: &str, user: &str, runtime: i64) -> ClassAd {
        ClassAd::parse(&format!(
            "[Name = \"{name}\"; SlotID = 1; Cpus = 1; Memory = 1024; Disk = 1000; \
              Requirements = true; Rank = 0; CurrentRank = 0; State = \"Claimed\"; \
              RemoteUser = \"{user}@pool\"; RemoteOwner = \"{user}\"; TotalJobRunTime = {runtime}]"
        ))
        .unwrap()
    }

    fn unclaimed(name: &str, idle: i64) -> ClassAd {
        ClassAd::parse(&format!(
            "[Name = \"{name}\"; SlotID = 1; Cpus = 1; Memory = 1024; Disk = 1000; \
              Requirements = true; Rank = 0; CurrentRank = 0; State = \"Unclaimed\"; \
              KeyboardIdle = {idle}]"
        ))
        .unwrap()
    }

    fn jobs(n: usize) -> Vec<ClassAd> {
        (0..n)
            .map(|p| {
                ClassAd::parse(&format!(
                    "[Owner = \"good\"; ClusterId = 1; ProcId = {p}; QDate = {}; JobPrio = 0; \
                      RequestCpus = 1; RequestMemory = 1; RequestDisk = 1; \
                      Requirements = true; Rank = 0]",
                    NOW - 100
                ))
                .unwrap()
            })
            .collect()
    }

    fn prios() -> Prios {
        Prios(vec![
            ("good@pool", 0.5),
            ("bad@pool", 10.0),
            ("worse@pool", 20.0),
        ])
    }

    /// The slots matched, in the order the jobs got them, and the number of
    /// slot groups the cycle evaluated.
    fn order(slots: &[ClassAd], n: usize, pol: &Policy) -> (Vec<String>, usize) {
        let jobs = jobs(n);
        let subs = vec![SubmitterJobs::new("good@pool", jobs.iter().collect())];
        let groups = Cycle::new(slots, None, &subs, &prios(), pol, usize::MAX, NOW)
            .groups
            .len();
        let plan = negotiate(slots, &subs, &prios(), &mut NoLimits, pol, NOW);
        let names = plan.matches.iter().map(|m| m.slot_name.clone()).collect();
        (names, groups)
    }

    #[test]
    fn slot_clusters_group_as_clusters_do_even_when_keys_collide() {
        let ads: Vec<ClassAd> = [
            "[Cpus = 1; Memory = 10; Start = true]",
            "[Cpus = 1; Memory = 20; Start = true]",
            "[Cpus = 1; Memory = 10; Start = true; Other = 5]",
            "[Cpus = 1; Start = true]",
            "[Cpus = 1; Memory = 20; Start = true]",
            "[Cpus = 1; Start = true]",
            "[Cpus = 1; Memory = 10; Start = Cpus > 0]",
        ]
        .iter()
        .map(|t| ClassAd::parse(t).unwrap())
        .collect();
        let mut attrs = SignificantAttrs::new();
        for n in ["Cpus", "Memory", "Start"] {
            attrs.add(n);
        }
        // The same key for every ad (a collision each time), and the real
        // ones: the exact comparison decides either way.
        for same_key in [true, false] {
            let mut old = Clusters::default();
            let mut keys = Vec::new();
            for ad in &ads {
                keys.push(if same_key { 7 } else { attrs.key_of(ad).0 });
            }
            let want: Vec<usize> = (0..ads.len())
                .map(|i| old.assign(&attrs, keys[i], i, |j| &ads[j]))
                .collect();
            let mut new = SlotClusters::new(attrs.names());
            let got: Vec<usize> = (0..ads.len())
                .map(|i| new.assign(keys[i], &ads[i]))
                .collect();
            assert_eq!(got, want);
            assert_eq!(got, [0, 1, 0, 2, 1, 2, 3]);
            // Given each ad's bindings, as its key was made: the same.
            let mut given = SlotClusters::new(attrs.names());
            let got: Vec<usize> = (0..ads.len())
                .map(|i| {
                    let b: Vec<_> = attrs
                        .names()
                        .iter()
                        .map(|n| ads[i].lookup_name(n))
                        .collect();
                    given.assign_bound(keys[i], &ads[i], Some(&b))
                })
                .collect();
            assert_eq!(got, want);
        }
    }

    #[test]
    fn slot_keys_are_over_every_name_learnt_even_from_later_slots() {
        // Only the last slot's Start reads Site, and only through Start:
        // the first two differ in Site, so their keys must differ, though
        // their own keys were first computed before Site was significant.
        // The keys are those of computing every key again until nothing
        // more is learnt.
        let ads: Vec<ClassAd> = [
            "[Site = \"a\"; Cpus = 1; Start = true]",
            "[Site = \"b\"; Cpus = 1; Start = true]",
            "[Site = \"a\"; Cpus = 1; Start = Site == \"a\"; Missing = Later]",
            "[Site = \"a\"; Cpus = 1; Start = true]",
        ]
        .iter()
        .map(|t| ClassAd::parse(t).unwrap())
        .collect();
        let roots = || {
            let mut a = SignificantAttrs::new();
            a.add("Start");
            a
        };
        let candidates = [0, 1, 2, 3];
        let mut attrs = roots();
        let keys = slot_keys(&mut attrs, &candidates, |i| &ads[i]).full;
        let mut again = roots();
        let mut want = vec![0u64; ads.len()];
        loop {
            let mut grew = false;
            for &i in &candidates {
                let (k, g) = again.key_of(&ads[i]);
                want[i] = k;
                grew |= g;
            }
            if !grew {
                break;
            }
        }
        assert_eq!(keys, want);
        assert!(attrs.contains("Site"));
        assert_ne!(keys[0], keys[1]);
        assert_eq!(keys[0], keys[3]);
    }

    #[test]
    fn a_target_free_preemption_rank_orders_victims_within_one_group() {
        // Alike for matching, different in TotalJobRuntime: one class each,
        // one group; the default PREEMPTION_RANK takes the least run time
        // first, and the worse user's claims before the better one's.
        let slots = vec![
            claimed("b300", "bad", 300),
            claimed("b100", "bad", 100),
            claimed("w500", "worse", 500),
            claimed("b200", "bad", 200),
            claimed("w50", "worse", 50),
        ];
        let pol = policy("PREEMPTION_REQUIREMENTS = True\n");
        let (names, groups) = order(&slots, 5, &pol);
        assert_eq!(names, ["w50", "w500", "b100", "b200", "b300"]);
        assert_eq!(groups, 2, "one group per user, not one per run time");
    }

    #[test]
    fn classes_of_groups_interleave_by_their_own_constants() {
        // Two groups whose PREEMPTION_RANKs interleave.
        let slots = vec![
            claimed("w30", "worse", 30),
            claimed("b20", "bad", 20),
            claimed("w15", "worse", 15),
            claimed("b10", "bad", 10),
        ];
        let pol = policy("PREEMPTION_REQUIREMENTS = True\nPREEMPTION_RANK = 0 - TotalJobRunTime\n");
        let (names, groups) = order(&slots, 4, &pol);
        assert_eq!(names, ["b10", "w15", "b20", "w30"]);
        assert_eq!(groups, 2);
    }

    #[test]
    fn a_preemption_rank_reading_the_job_keeps_a_group_per_class() {
        let slots = vec![
            claimed("b300", "bad", 300),
            claimed("b100", "bad", 100),
            claimed("b200", "bad", 200),
        ];
        let pol = policy(
            "PREEMPTION_REQUIREMENTS = True\nPREEMPTION_RANK = TARGET.QDate - TotalJobRunTime\n",
        );
        let (names, groups) = order(&slots, 3, &pol);
        assert_eq!(names, ["b100", "b200", "b300"]);
        assert_eq!(groups, 3);
    }

    #[test]
    fn a_target_free_pre_job_rank_orders_unclaimed_slots_of_one_group() {
        let slots = vec![
            unclaimed("i5", 5),
            unclaimed("i9", 9),
            unclaimed("i1", 1),
            unclaimed("i7", 7),
        ];
        let pol = policy("NEGOTIATOR_PRE_JOB_RANK = KeyboardIdle\n");
        let (names, groups) = order(&slots, 3, &pol);
        assert_eq!(names, ["i9", "i7", "i5"]);
        assert_eq!(groups, 1);
        // Read through an attribute the job may define: one group each.
        let pol = policy("NEGOTIATOR_PRE_JOB_RANK = KeyboardIdle + Missing\n");
        let (_, groups) = order(&slots, 3, &pol);
        assert_eq!(groups, 4);
    }

    #[test]
    fn kept_slot_keys_give_every_binding_of_a_slot_looked_up_afresh() {
        let ads: Vec<ClassAd> = [
            "[Cpus = 1; KeyboardIdle = 5; Start = true]",
            "[Cpus = 2; Start = KeyboardIdle > 3; KeyboardIdle = 9]",
            "[Cpus = 1; KeyboardIdle = 5; Start = true]",
        ]
        .iter()
        .map(|t| ClassAd::parse(t).unwrap())
        .collect();
        let clock = |n: &str| n.eq_ignore_ascii_case("KeyboardIdle");
        let mut attrs = SignificantAttrs::new();
        for n in ["Cpus", "KeyboardIdle", "Start"] {
            attrs.add(n);
        }
        // Slot 1 was kept from the last cycle: only the others are looked up.
        let keys = kept_slot_keys(
            &mut attrs,
            &[0, 1, 2],
            |i| &ads[i],
            |i| (i == 1).then_some(42),
            &clock,
        );
        let names = attrs.len();
        // Compared by address: the very expressions of the ads.
        let at = |b: Option<&[Option<&Expr>]>| -> Option<Vec<Option<*const Expr>>> {
            b.map(|b| b.iter().map(|e| e.map(|e| e as *const Expr)).collect())
        };
        for i in [0, 2] {
            let want: Vec<_> = attrs
                .names()
                .iter()
                .map(|n| ads[i].lookup_name(n))
                .collect();
            assert_eq!(at(keys.bound(i, names)), at(Some(&want)), "slot {i}");
        }
        assert!(keys.bound(1, names).is_none());
        // A slot that teaches the cycle a name: nothing is given (the
        // bindings of the first round are over fewer names).
        let ads: Vec<ClassAd> = ["[Cpus = 1; Start = true]", "[Cpus = 1; Start = Site == 1]"]
            .iter()
            .map(|t| ClassAd::parse(t).unwrap())
            .collect();
        let mut attrs = SignificantAttrs::new();
        attrs.add("Start");
        let keys = kept_slot_keys(&mut attrs, &[0, 1], |i| &ads[i], |_| None, &clock);
        assert!(attrs.contains("Site"));
        assert!(keys.bound(0, attrs.len()).is_none());
        assert!(keys.bound(1, attrs.len()).is_none());
    }

    #[test]
    fn a_loaded_slot_belongs_to_the_preempting_claim_first_then_the_group() {
        let read = |text: &str| {
            let ad = ClassAd::parse(text).unwrap();
            LoadedSlot::read(&ad, 0, &Env::at(NOW), None, None).0
        };
        let l = read("[Name = \"s1\"; RemoteUser = \"u\"; AccountingGroup = \"g.u\"; Rank = 3]");
        assert_eq!(l.name.as_deref(), Some("s1"));
        assert_eq!(l.remote_user.as_deref(), Some("g.u"));
        assert!(l.rank_preemption);
        let l = read("[RemoteUser = \"u\"; PreemptingUser = \"p\"; CurrentRank = 5; Rank = 3]");
        assert_eq!(l.name, None);
        assert_eq!(l.remote_user.as_deref(), Some("p"));
        assert_eq!(l.current_rank, 5.0);
        assert!(!l.rank_preemption);
        assert!(!l.has_parent);
    }
}
