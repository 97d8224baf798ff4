//! The retirement and vacate time a running job is granted, kept while
//! nothing they read can change.
//!
//! Every update of a slot ad estimates what draining the machine would
//! cost (HTCondor's Expected*Draining* figures) from each running job's
//! retirement time (MaxJobRetirementTime, the machine's and the job's) and
//! vacate time (MachineMaxVacateTime, JobMaxVacateTime): four expressions
//! per busy slot and update. When none of them reads a figure that moves
//! with the clock, the clock itself or anything beyond the slot's and the
//! job's ads (`classad::reads`), their values hold for as long as the
//! slot's facts and the startd's quiet epoch (bumped by every event but a
//! keep-alive, see `quiet`) do, and are kept. Debug builds check every
//! kept value against a fresh evaluation.

use classad::reads::{reads, Side};
use classad::ClassAd;

use crate::engine::{Startd, VacateTerms};
use crate::publish::changes_with_time;

/// The retirement time a slot's job is granted (`None`: no limit) and
/// what its vacating is granted from.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Grants {
    pub(crate) retirement: Option<i64>,
    pub(crate) vacate: VacateTerms,
}

/// Grants kept under the facts generation and quiet epoch they were
/// evaluated in.
#[derive(Clone, Copy, Debug)]
pub(crate) struct KeptGrants {
    generation: u64,
    epoch: u64,
    grants: Grants,
}

impl Startd {
    /// Slot `i`'s grants, if kept and still good.
    pub(crate) fn kept_grants(&self, i: usize) -> Option<Grants> {
        let s = &self.slots[i];
        let k = s.grants.as_ref()?;
        let generation = s.facts.as_ref()?.generation();
        (k.generation == generation && k.epoch == self.quiet_epoch).then_some(k.grants)
    }

    /// Whether every slot running a job has its grants kept, under its
    /// facts as they are now: the draining estimate then needs no ad.
    pub(crate) fn all_grants_kept(&mut self) -> bool {
        (0..self.slots.len()).all(|i| {
            self.slots[i].job.is_none() || {
                self.current_generation(i);
                self.kept_grants(i).is_some()
            }
        })
    }

    /// Slot `i`'s grants evaluated in `ad` (its ad brought up to date) at
    /// `now`; kept if nothing they read can change.
    pub(crate) fn grants(&mut self, i: usize, ad: &ClassAd, now: i64) -> Grants {
        let grants = Grants {
            retirement: self.retirement_limit(i, ad, now),
            vacate: self.vacate_terms(i, ad, now),
        };
        let generation = self.slots[i].facts.as_ref().map(|f| f.generation());
        let kept = match generation {
            Some(generation) if self.grants_steady(i, ad) => Some(KeptGrants {
                generation,
                epoch: self.quiet_epoch,
                grants,
            }),
            _ => None,
        };
        self.slots[i].grants = kept;
        grants
    }

    /// Whether the four expressions read nothing that moves while the
    /// slot's facts stay.
    fn grants_steady(&self, i: usize, ad: &ClassAd) -> bool {
        let s = &self.slots[i];
        let Some(job) = s.job.as_ref() else {
            return false;
        };
        let machine = |name: &str| {
            s.policy.expr(name).is_none_or(|e| {
                reads(e, ad, Some(job))
                    .steady(|side, n| side == Side::My && changes_with_time(n.as_str()))
            })
        };
        let own = |name: &str| {
            job.get(name).is_none_or(|e| {
                reads(e, job, Some(ad))
                    .steady(|side, n| side == Side::Target && changes_with_time(n.as_str()))
            })
        };
        machine("MaxJobRetirementTime")
            && machine("MachineMaxVacateTime")
            && own("MaxJobRetirementTime")
            && own("JobMaxVacateTime")
    }

    /// Debug builds: kept grants must be what evaluating gives now, in the
    /// slot's ad brought up to date (one in four, for the tests' time).
    #[cfg(debug_assertions)]
    pub(crate) fn check_grants(&self, i: usize, kept: &Grants, now: i64) {
        static COUNT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        if !COUNT
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            .is_multiple_of(4)
        {
            return;
        }
        let ad = &self.slot_ad(i, now);
        let fresh = (
            self.retirement_limit(i, ad, now),
            self.vacate_terms(i, ad, now),
        );
        assert_eq!(
            format!("{:?}", (kept.retirement, kept.vacate)),
            format!("{fresh:?}"),
            "{}: kept retirement and vacate grants changed at {now}",
            self.slots[i].name
        );
    }
}
