//! The negotiator's one entry point: a negotiation cycle over what the
//! collector holds and what the schedds offer, as HTCondor's
//! `negotiationTime` runs it. The personal pool and the simulator both
//! call [`negotiation_cycle`] and nothing below it, so what they decide is
//! the same:
//!
//! - **Grouped or flat.** With accounting groups configured the cycle runs
//!   group by group, each within its quota ([`crate::groups`]); otherwise
//!   once over every submitter ([`crate::cycle`]).
//! - **What a submitter offers.** Every idle job, sorted into autoclusters;
//!   an autocluster offers at most as many jobs as the pool could run at
//!   once (more could not match in one cycle), so a queue of a hundred
//!   thousand alike jobs costs one autocluster of that many, and a job
//!   that can never match holds no other job back. (HTCondor's schedd
//!   offers its requests autocluster by autocluster for the same reason.)
//! - **A plan, always:** the matches, and for every autocluster left idle
//!   the reason (`q -better-analyze` and the simulator's report read it).

use classad::{ClassAd, Env};

use crate::accountant::Accountant;
use std::collections::HashSet;
use std::sync::Arc;

use crate::cycle::{
    negotiate_keeping, KeptIds, KeptSlotKeys, Plan, Policy, SlotGenerations, SubmitterJobs,
};
use crate::groups::negotiate_by_group;
use crate::limits::{ConcurrencyLimits, CycleLimits};

/// The pool's size in cores, from the slot ads (a partitionable slot
/// counts what it has left, its dynamic slots the rest).
pub fn pool_cores(slot_ads: &[ClassAd], env: &Env) -> f64 {
    slot_ads.iter().map(|a| slot_cores(a, env)).sum()
}

/// One slot's part of [`pool_cores`].
pub(crate) fn slot_cores(ad: &ClassAd, env: &Env) -> f64 {
    ad.eval_attr("Cpus", env)
        .as_number()
        .unwrap_or(1.0)
        .max(0.0)
}

/// How many jobs of one autocluster a cycle over these slots could match
/// at most: one per slot, or one per core for partitionable slots.
pub fn offer_cap(slot_ads: &[ClassAd], env: &Env) -> usize {
    cap_of(pool_cores(slot_ads, env), slot_ads.len())
}

/// [`offer_cap`] of a pool of `slots` slot ads and `cores` cores.
fn cap_of(cores: f64, slots: usize) -> usize {
    let cores = cores.ceil().max(0.0) as usize;
    cores.max(slots).max(1)
}

/// One negotiation cycle. `submitters` hold each submitter's idle jobs (in
/// any order; the cycle sorts them); `limits` are the concurrency limits
/// with what running jobs hold already taken, and come back with this
/// cycle's matches taken too.
pub fn negotiation_cycle(
    slot_ads: &[ClassAd],
    submitters: &[SubmitterJobs<'_>],
    accountant: &mut Accountant,
    limits: &mut ConcurrencyLimits,
    policy: &Policy,
    now: i64,
) -> Plan {
    negotiation_cycle_keeping(slot_ads, None, submitters, accountant, limits, policy, now)
}

/// [`negotiation_cycle`] over slot ads whose generations the caller
/// knows, keeping their class keys in `keeping` from one cycle to the
/// next ([`KeptSlotKeys`]); the plan is the same. A cycle by accounting
/// group keeps nothing (each group's cycle starts from other names).
pub fn negotiation_cycle_keeping(
    slot_ads: &[ClassAd],
    mut keeping: Option<(SlotGenerations<'_>, &mut KeptSlotKeys)>,
    submitters: &[SubmitterJobs<'_>],
    accountant: &mut Accountant,
    limits: &mut ConcurrencyLimits,
    policy: &Policy,
    now: i64,
) -> Plan {
    let env = Env::at(now);
    let cores = match &mut keeping {
        Some((generations, kept)) => kept.pool_cores(slot_ads, *generations, &env),
        None => pool_cores(slot_ads, &env),
    };
    let cap = cap_of(cores, slot_ads.len());
    if accountant.groups.groups.len() > 1 {
        // Each submitter's demand, in cores, over what it offers: an
        // autocluster's jobs past the cap could not run this cycle anyway.
        let demand: Vec<f64> = submitters
            .iter()
            .map(|s| {
                let mut per_ac = std::collections::HashMap::<u64, usize>::new();
                s.jobs
                    .iter()
                    .filter(|j| {
                        let n = per_ac.entry(shape(j)).or_insert(0);
                        *n += 1;
                        *n <= cap
                    })
                    .map(|j| j.eval_attr("RequestCpus", &env).as_number().unwrap_or(1.0))
                    .sum()
            })
            .collect();
        let pool_size = cores;
        negotiate_by_group(
            slot_ads, submitters, &demand, accountant, limits, policy, pool_size, cap, now,
        )
    } else {
        negotiate_keeping(
            slot_ads,
            keeping,
            submitters,
            &*accountant,
            &mut CycleLimits::new(limits, now),
            policy,
            cap,
            now,
        )
    }
}

/// A cheap stand-in for a job's autocluster when counting demand: what it
/// asks for and what it requires.
fn shape(job: &ClassAd) -> u64 {
    use crate::autocluster::{hash_expr, Fnv};
    use std::hash::Hasher;
    let mut h = Fnv::default();
    for name in [
        "Requirements",
        "RequestCpus",
        "RequestMemory",
        "RequestDisk",
    ] {
        if let Some(e) = job.get(name) {
            hash_expr(e, &mut h);
        }
        h.write_u8(0);
    }
    h.finish()
}

/// One submitter's request at one schedd: its idle jobs, each with the
/// caller's key for it (a job id; the simulator's (schedd, job id)).
pub struct Request<'a, K> {
    pub submitter: String,
    pub jobs: Vec<(K, &'a ClassAd)>,
    /// The jobs' autoclusters as their schedds keep them
    /// ([`crate::autocluster_ids::AutoclusterIds`]), when every schedd
    /// offering them did.
    pub kept: Option<Arc<KeptIds>>,
}

/// One submitter's request gathered from every schedd that offers its
/// jobs, with their kept autoclusters while every one of those schedds
/// keeps them.
pub struct Offer<'a, K> {
    jobs: Vec<(K, &'a ClassAd)>,
    kept: Option<KeptIds>,
    named: bool,
}

impl<'a, K> Default for Offer<'a, K> {
    fn default() -> Self {
        Offer {
            jobs: Vec::new(),
            kept: Some(KeptIds::default()),
            named: false,
        }
    }
}

impl<'a, K> Offer<'a, K> {
    /// Schedd number `schedd`'s jobs for the submitter, with their
    /// autoclusters and the names they were filed over, if it keeps them.
    /// Ids of two schedds are kept apart by the schedd's number in the
    /// high half; the names are those every schedd's ids cover.
    pub fn add(
        &mut self,
        schedd: usize,
        jobs: impl IntoIterator<Item = (K, &'a ClassAd)>,
        autoclusters: Option<(&[u32], &[String])>,
    ) {
        let before = self.jobs.len();
        self.jobs.extend(jobs);
        let added = self.jobs.len() - before;
        match (self.kept.as_mut(), autoclusters) {
            (Some(kept), Some((ids, names))) if ids.len() == added => {
                kept.ids
                    .extend(ids.iter().map(|&i| ((schedd as u64) << 32) | u64::from(i)));
                let names = names.iter().map(|n| n.to_ascii_lowercase());
                if self.named {
                    let theirs: HashSet<String> = names.collect();
                    kept.names.retain(|n| theirs.contains(n));
                } else {
                    kept.names = names.collect();
                    self.named = true;
                }
            }
            _ => self.kept = None,
        }
    }

    pub fn request(self, submitter: &str) -> Request<'a, K> {
        Request {
            submitter: submitter.to_string(),
            jobs: self.jobs,
            kept: self.kept.map(Arc::new),
        }
    }
}

/// A match, as the schedd hears of it (PERMISSION_AND_AD).
#[derive(Clone, Debug, PartialEq)]
pub struct Granted<K> {
    pub job: K,
    /// The slot: an index into the cycle's slot ads.
    pub slot: usize,
    pub kind: crate::cycle::MatchKind,
    /// What the match counts against the submitter's fair share.
    pub cost: f64,
    /// Pslot preemption: the dynamic slots (indices into the slot ads)
    /// to make room from; a match on a claimed slot preempts only that
    /// slot's own claim, which is not listed.
    pub preempt_dynamic: Vec<usize>,
}

/// The negotiator between cycles: its accountant, the pool's configured
/// concurrency limits, its policy. The personal pool's negotiator role
/// and the simulator run their cycles through [`Negotiator::cycle`].
pub struct Negotiator {
    pub accountant: Accountant,
    pub limits: ConcurrencyLimits,
    pub policy: Policy,
    /// The names the last cycle told jobs apart by: what the schedds are
    /// told with the next NEGOTIATE, to file their jobs' autoclusters
    /// against (empty before the first cycle).
    pub significant: Vec<String>,
    /// The slot class keys kept from the last cycle, for a caller that
    /// gives the slot ads' generations.
    slot_keys: KeptSlotKeys,
}

impl Negotiator {
    pub fn new(accountant: Accountant, limits: ConcurrencyLimits, policy: Policy) -> Negotiator {
        Negotiator {
            accountant,
            limits,
            policy,
            significant: Vec::new(),
            slot_keys: KeptSlotKeys::default(),
        }
    }

    /// One cycle over the schedds' `requests` and the collector's
    /// `slot_ads`; `on_claims` are the jobs the schedds' claims hold (the
    /// concurrency limits in use). `generations`, from a collector that
    /// knows them, lets the cycle keep slot class keys from the last one
    /// (none: every slot is keyed, as always). Returns the matches and the
    /// plan (with the reasons for the jobs left idle).
    pub fn cycle<'a, K: Clone>(
        &mut self,
        requests: &[Request<'a, K>],
        on_claims: impl IntoIterator<Item = &'a ClassAd>,
        slot_ads: &[ClassAd],
        generations: Option<SlotGenerations<'_>>,
        now: i64,
    ) -> (Vec<Granted<K>>, Plan) {
        self.accountant.update_priorities(now);
        let mut limits = crate::reuse::limits_in_use(&self.limits, on_claims, now);
        let subs: Vec<SubmitterJobs<'_>> = requests
            .iter()
            .map(|r| SubmitterJobs {
                name: r.submitter.clone(),
                jobs: r.jobs.iter().map(|(_, ad)| *ad).collect(),
                kept: r.kept.clone(),
            })
            .collect();
        if generations.is_none() {
            // Keys kept from ads this caller cannot vouch for are not kept.
            self.slot_keys = KeptSlotKeys::default();
        }
        let keeping = generations.map(|g| (g, &mut self.slot_keys));
        let plan = negotiation_cycle_keeping(
            slot_ads,
            keeping,
            &subs,
            &mut self.accountant,
            &mut limits,
            &self.policy,
            now,
        );
        if !plan.significant.is_empty() {
            self.significant = plan.significant.clone();
        }
        let granted = plan
            .matches
            .iter()
            .filter_map(|mt| {
                let (job, _) = requests.get(mt.submitter)?.jobs.get(mt.job)?;
                Some(Granted {
                    job: job.clone(),
                    slot: mt.slot,
                    kind: mt.kind,
                    cost: mt.cost,
                    preempt_dynamic: mt
                        .preempted
                        .iter()
                        .filter(|p| p.slot != mt.slot)
                        .map(|p| p.slot)
                        .collect(),
                })
            })
            .collect();
        (granted, plan)
    }
}
