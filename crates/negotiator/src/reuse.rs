//! Claim reuse: which job the schedd runs next on a claim it already
//! holds. HTCondor's schedd does not give a claim back when its job ends;
//! it runs another idle job of the same submitter that the slot takes, as
//! long as the claim is young enough (CLAIM_WORKLIFE) and the concurrency
//! limits allow, without waiting for a negotiation cycle. The personal
//! pool and the simulator both decide it here.

use classad::matching::requirements_met;
use classad::{ClassAd, Env};

use crate::limits::{job_limits, ConcurrencyLimits};

/// How many of its next idle jobs the schedd looks at for a claim (it
/// tries a few, not the whole queue).
pub const CANDIDATES: usize = 8;

/// Whether a claim made at `claimed_at` may take another job at `now`
/// under the slot's CLAIM_WORKLIFE (none: for ever).
pub fn claim_young(worklife: Option<i64>, claimed_at: i64, now: i64) -> bool {
    worklife.is_none_or(|w| now - claimed_at <= w)
}

/// `limits` with what the jobs on claims (running or starting) hold taken.
pub fn limits_in_use<'a>(
    limits: &ConcurrencyLimits,
    jobs: impl IntoIterator<Item = &'a ClassAd>,
    now: i64,
) -> ConcurrencyLimits {
    let mut in_use = limits.clone();
    in_use.load_slots(std::iter::empty());
    let env = Env::at(now);
    let empty = ClassAd::new();
    for job in jobs {
        in_use.take(&job_limits(job, &empty, &env));
    }
    in_use
}

/// The first of `candidates` (the submitter's next idle jobs, in its
/// order) that `slot` takes: each side's Requirements hold, and a job with
/// concurrency limits fits in what `in_use` (asked once, when needed)
/// leaves.
pub fn next_job<'a, K>(
    slot: &ClassAd,
    candidates: impl IntoIterator<Item = (K, &'a ClassAd)>,
    in_use: impl FnOnce() -> ConcurrencyLimits,
    now: i64,
) -> Option<K> {
    let env = Env::at(now);
    let mut in_use = Some(in_use);
    let mut limits: Option<ConcurrencyLimits> = None;
    for (k, job) in candidates.into_iter().take(CANDIDATES) {
        if !(requirements_met(job, slot, &env) && requirements_met(slot, job, &env)) {
            continue;
        }
        if job.contains("ConcurrencyLimits") {
            let l = limits.get_or_insert_with(|| (in_use.take().expect("asked once"))());
            if l.fits(job, slot, &env).is_err() {
                continue;
            }
        }
        return Some(k);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ad(text: &str) -> ClassAd {
        ClassAd::parse(text).unwrap()
    }

    #[test]
    fn the_first_job_both_sides_accept_is_next() {
        let slot = ad("[ Memory = 1024; Requirements = TARGET.Owner == \"alice\" ]");
        let big = ad("[ Owner = \"alice\"; Requirements = TARGET.Memory >= 2048 ]");
        let bob = ad("[ Owner = \"bob\"; Requirements = true ]");
        let fits = ad("[ Owner = \"alice\"; Requirements = TARGET.Memory >= 512 ]");
        let pick = next_job(
            &slot,
            [(1, &big), (2, &bob), (3, &fits)],
            || ConcurrencyLimits::from_config(&config::Config::empty("NEGOTIATOR")).unwrap(),
            0,
        );
        assert_eq!(pick, Some(3));
    }

    #[test]
    fn a_claim_past_its_worklife_takes_no_more_jobs() {
        assert!(claim_young(None, 0, 1_000_000));
        assert!(claim_young(Some(600), 1000, 1600));
        assert!(!claim_young(Some(600), 1000, 1601));
    }
}
