//! Negotiation with accounting groups: HTCondor negotiates group by group,
//! each with its allocation (its quota, plus surplus where it accepts it)
//! as its pie, the groups that use least of their allocation first and the
//! submitters in no group (the root) last. The cycle itself has no
//! per-group pie, so this runs it once per group over the slots not yet
//! taken and keeps matches only up to the group's allocation. The personal
//! pool and the simulator both negotiate through here when groups are
//! configured.

use std::collections::{BTreeMap, BTreeSet};

use classad::ClassAd;

use crate::accountant::{Accountant, ROOT_GROUP};
use crate::cycle::{negotiate_capped, Plan, Policy, Reason, SubmitterJobs};
use crate::limits::{ConcurrencyLimits, CycleLimits};

/// One cycle with accounting groups. `demand[i]` is submitter `i`'s idle
/// demand (cores); the pool has `pool_size` cores. The plan indexes
/// `submitters` (and their jobs) and `slot_ads`, as
/// [`crate::cycle::negotiate`]'s does; its autoclusters and unmatched are
/// each group's, one after the other.
#[allow(clippy::too_many_arguments)]
pub fn negotiate_by_group(
    slot_ads: &[ClassAd],
    submitters: &[SubmitterJobs<'_>],
    demand: &[f64],
    accountant: &mut Accountant,
    limits: &mut ConcurrencyLimits,
    policy: &Policy,
    pool_size: f64,
    per_autocluster: usize,
    now: i64,
) -> Plan {
    let mut by_name: BTreeMap<String, f64> = BTreeMap::new();
    for (s, d) in submitters.iter().zip(demand) {
        *by_name.entry(s.name.clone()).or_insert(0.0) += d + accountant.resources_in_use(&s.name);
    }
    let alloc = accountant.allocate(pool_size, &by_name, now);
    // Groups in order of how little of their allocation they use, the
    // root (submitters in no group) last.
    let mut groups: Vec<(f64, String)> = alloc
        .iter()
        .map(|(g, a)| {
            let used = accountant.resources_in_use(g);
            let ratio = if g == ROOT_GROUP {
                f64::MAX
            } else if a.allocated > 0.0 {
                used / a.allocated
            } else {
                f64::MAX / 2.0
            };
            (ratio, g.clone())
        })
        .collect();
    groups.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let mut taken: BTreeSet<usize> = BTreeSet::new();
    let mut out = Plan::default();
    for (_, g) in groups {
        let members: Vec<usize> = (0..submitters.len())
            .filter(|&i| accountant.group_of(&submitters[i].name) == g)
            .collect();
        if members.is_empty() {
            continue;
        }
        let allocated = alloc.get(&g).map_or(0.0, |a| a.allocated);
        let limit = accountant.enforce_strict_quota(&g, allocated);
        let mut room = if g == ROOT_GROUP {
            f64::MAX
        } else {
            limit - accountant.resources_in_use(&g)
        };
        // A group at its quota is offered no slot; the cycle still sorts
        // its jobs into autoclusters, so the plan says why they wait.
        let over_quota = room <= 0.0;
        let slot_map: Vec<usize> = (0..slot_ads.len())
            .filter(|i| !taken.contains(i) && !over_quota)
            .collect();
        let slots: Vec<ClassAd> = slot_map.iter().map(|&i| slot_ads[i].clone()).collect();
        let subs: Vec<SubmitterJobs<'_>> = members.iter().map(|&i| submitters[i].clone()).collect();
        let plan = negotiate_capped(
            &slots,
            &subs,
            &*accountant,
            &mut CycleLimits::new(limits, now),
            policy,
            per_autocluster,
            now,
        );
        let ac_base = out.autoclusters.len();
        for mut mt in plan.matches {
            if mt.cost > room + 1e-9 {
                continue;
            }
            room -= mt.cost;
            mt.submitter = members[mt.submitter];
            mt.slot = slot_map[mt.slot];
            mt.autocluster += ac_base;
            for p in &mut mt.preempted {
                p.slot = slot_map[p.slot];
            }
            taken.insert(mt.slot);
            out.matches.push(mt);
        }
        for mut ac in plan.autoclusters {
            ac.submitter = members[ac.submitter];
            out.autoclusters.push(ac);
        }
        for mut u in plan.unmatched {
            u.submitter = members[u.submitter];
            if over_quota {
                u.reason = Reason::SubmitterLimit;
            }
            u.autocluster += ac_base;
            out.unmatched.push(u);
        }
        out.stats.pie_spins += plan.stats.pie_spins;
        out.stats.idle_jobs += plan.stats.idle_jobs;
        out.stats.autoclusters += plan.stats.autoclusters;
        out.stats.match_lists_built += plan.stats.match_lists_built;
        out.stats.jobs_keyed += plan.stats.jobs_keyed;
        out.stats.kept_ids_dropped += plan.stats.kept_ids_dropped;
        for n in plan.significant {
            if !out.significant.iter().any(|o| o.eq_ignore_ascii_case(&n)) {
                out.significant.push(n);
            }
        }
        out.stats.slots = out.stats.slots.max(plan.stats.slots);
        out.stats.slot_classes = out.stats.slot_classes.max(plan.stats.slot_classes);
        out.stats.pool_size = out.stats.pool_size.max(plan.stats.pool_size);
    }
    out
}
