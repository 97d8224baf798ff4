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
use crate::cycle::{negotiate, Match, Policy, SubmitterJobs};
use crate::limits::{ConcurrencyLimits, CycleLimits};

/// One cycle with accounting groups. `demand[i]` is submitter `i`'s idle
/// demand (cores); the pool has `pool_size` cores. The matches index
/// `submitters` (and their jobs) and `slot_ads`, as [`negotiate`]'s do.
#[allow(clippy::too_many_arguments)]
pub fn negotiate_by_group(
    slot_ads: &[ClassAd],
    submitters: &[SubmitterJobs<'_>],
    demand: &[f64],
    accountant: &mut Accountant,
    limits: &mut ConcurrencyLimits,
    policy: &Policy,
    pool_size: f64,
    now: i64,
) -> Vec<Match> {
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
    let mut out = Vec::new();
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
        if room <= 0.0 {
            continue;
        }
        let slot_map: Vec<usize> = (0..slot_ads.len()).filter(|i| !taken.contains(i)).collect();
        let slots: Vec<ClassAd> = slot_map.iter().map(|&i| slot_ads[i].clone()).collect();
        let subs: Vec<SubmitterJobs<'_>> = members
            .iter()
            .map(|&i| SubmitterJobs {
                name: submitters[i].name.clone(),
                jobs: submitters[i].jobs.clone(),
            })
            .collect();
        let plan = negotiate(
            &slots,
            &subs,
            &*accountant,
            &mut CycleLimits::new(limits, now),
            policy,
            now,
        );
        for mut mt in plan.matches {
            if mt.cost > room + 1e-9 {
                continue;
            }
            room -= mt.cost;
            mt.submitter = members[mt.submitter];
            mt.slot = slot_map[mt.slot];
            for p in &mut mt.preempted {
                p.slot = slot_map[p.slot];
            }
            taken.insert(mt.slot);
            out.push(mt);
        }
    }
    out
}
