//! Polls that can change nothing.
//!
//! HTCondor's startd evaluates every slot's policy at every poll
//! (POLLING_INTERVAL). On a pool of dedicated machines (START = True,
//! nothing to suspend or preempt for) most of those evaluations read
//! nothing that moves: an idle slot's IS_OWNER, a busy slot's
//! WANT_SUSPEND and PREEMPT come out the same until something happens to
//! the machine. A slot is *quiet* after a poll that left it where it was
//! when what its state's policy reads (followed through the slot ad and
//! the job's ad, `classad::reads`) includes no figure that moves with the
//! clock ([`crate::publish::changes_with_time`]), not the clock itself,
//! and nothing beyond the two ads; and no timer of the state (the claim's
//! lease) falls due before the time it is quiet until.
//!
//! Its later polls are skipped, ad refresh and all, until something could
//! change the answer: any event but a keep-alive, any transition of any of
//! the machine's slots, a reconfiguration (all of which bump
//! `Startd::quiet_epoch`), a change of whether the CPU is busy or of a
//! latch (checked at each poll), or the time it was quiet until. Nothing
//! reads a slot's ad without bringing it up to date first, so the figures
//! a skipped poll would have written are written when the ad is next read
//! (by publishing, a claim request, a query).
//!
//! Debug builds check a sample of the skipped polls: the state's policy,
//! evaluated again in the ad brought up to date, must give what it gave
//! when the slot went quiet.

use classad::reads::{reads, Side};
#[cfg(debug_assertions)]
use classad::{ClassAd, Value};

use crate::engine::Startd;
#[cfg(debug_assertions)]
use crate::policy::evaluate;
use crate::publish::changes_with_time;
use crate::state::{Activity, Pair, State};

/// A slot's promise that its polls change nothing (see the module).
#[derive(Clone, Debug)]
pub(crate) struct Quiet {
    /// The startd's `quiet_epoch` when the promise was made.
    epoch: u64,
    /// Polls before this time are skipped.
    until: i64,
    /// What the state's policy gave (checked by debug builds).
    #[cfg(debug_assertions)]
    values: Vec<Value>,
}

/// Whether a slot's state reads only steady attributes, for the facts
/// generation and epoch it was judged under.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Steady {
    generation: u64,
    epoch: u64,
    steady: bool,
}

/// The policy expressions a poll evaluates for a slot in `pair`, and
/// whether its state is one a poll can leave alone at all. Only the
/// common resting states are judged: Owner/Idle (IS_OWNER), Unclaimed/Idle
/// (IS_OWNER, RunBenchmarks, START_BACKFILL) and Claimed/Busy
/// (WANT_SUSPEND, SUSPEND, PREEMPT, and the claim's lease); the others are
/// passing through, with timers of their own.
fn polled(pair: Pair, backfill: bool) -> Option<&'static [&'static str]> {
    match pair {
        Pair(State::Owner, Activity::Idle) => Some(&["IS_OWNER"]),
        Pair(State::Unclaimed, Activity::Idle) if backfill => {
            Some(&["IS_OWNER", "RunBenchmarks", "START_BACKFILL"])
        }
        Pair(State::Unclaimed, Activity::Idle) => Some(&["IS_OWNER", "RunBenchmarks"]),
        Pair(State::Claimed, Activity::Busy) => Some(&["WANT_SUSPEND", "SUSPEND", "PREEMPT"]),
        _ => None,
    }
}

impl Startd {
    /// Whether slot `i`'s poll at `now` may be skipped: it is quiet under
    /// the current epoch, not past its time, and the poll's readings and
    /// latches left its facts as they were (`unchanged`).
    pub(crate) fn is_quiet(&self, i: usize, now: i64, unchanged: bool) -> bool {
        unchanged
            && self.slots[i]
                .quiet
                .as_ref()
                .is_some_and(|q| q.epoch == self.quiet_epoch && now < q.until)
    }

    /// Whether slot `i` went quiet under the current epoch (whether or not
    /// its time is up). Such a slot has no fetch hook and no latches
    /// (`quiet_until` lets no such slot go quiet), and its policy is the
    /// one it went quiet with (a reconfiguration ends every quiet), so a
    /// poll need not read its policy for them.
    pub(crate) fn quiet_in_epoch(&self, i: usize) -> bool {
        let s = &self.slots[i];
        let quiet = s
            .quiet
            .as_ref()
            .is_some_and(|q| q.epoch == self.quiet_epoch);
        debug_assert!(
            !quiet || (s.policy.hooks.is_none() && s.policy.latch_exprs.is_empty()),
            "{}: a quiet slot has hooks or latches",
            s.name
        );
        quiet
    }

    /// The generation of slot `i`'s facts if it is quiet: nothing that
    /// changes a slot's facts leaves a slot quiet (events but keep-alives,
    /// transitions and changes to the set of slots bump the epoch; a poll
    /// that finds its CPU busy-ness or latches changed ends it), so they
    /// are those it went quiet with, current without comparing them again
    /// (an update of a large pool compares every slot's otherwise).
    pub(crate) fn quiet_generation(&self, i: usize) -> Option<u64> {
        let s = &self.slots[i];
        let quiet = self.quiet_in_epoch(i);
        let generation = s.facts.as_ref().filter(|_| quiet)?.generation();
        debug_assert!(
            self.facts_hold(i),
            "{}: the facts of a quiet slot changed",
            s.name
        );
        Some(generation)
    }

    /// After a poll that left slot `i` where it was (its ad brought up to
    /// date at `now`, in `slots[i].ad`): makes it quiet if its state allows.
    pub(crate) fn settle_quietly(&mut self, i: usize, now: i64) {
        let until = self.quiet_until(i, now);
        let epoch = self.quiet_epoch;
        #[cfg(debug_assertions)]
        let values = match until {
            Some(_) => self.polled_values(i, &self.slots[i].ad, now),
            None => Vec::new(),
        };
        self.slots[i].quiet = until.map(|until| Quiet {
            epoch,
            until,
            #[cfg(debug_assertions)]
            values,
        });
    }

    /// Until when slot `i`'s polls can change nothing, if they cannot now.
    fn quiet_until(&mut self, i: usize, now: i64) -> Option<i64> {
        let s = &self.slots[i];
        if matches!(s.kind, crate::slot::SlotKind::Dynamic { .. })
            || self.drain.is_some()
            || self.shutdown.is_some()
            || s.policy.hooks.is_some()
            || !s.policy.latch_exprs.is_empty()
            || s.ad.is_empty()
        {
            return None;
        }
        polled(s.pair(), s.policy.enable_backfill)?;
        let until = match s.pair() {
            // The lease runs out when it has been silent for longer than
            // the lease (see `lease_expired`).
            Pair(State::Claimed, Activity::Busy) => {
                let c = s.claim.as_ref()?;
                c.last_alive.checked_add(c.lease)?.checked_add(1)?
            }
            _ => i64::MAX,
        };
        if until <= now || !self.steady(i) {
            return None;
        }
        Some(until)
    }

    /// Whether what slot `i`'s state evaluates at a poll reads only
    /// attributes that stay put while its facts do (judged once per facts
    /// generation and epoch).
    fn steady(&mut self, i: usize) -> bool {
        let s = &self.slots[i];
        let Some(generation) = s.facts.as_ref().map(|f| f.generation()) else {
            return false;
        };
        if let Some(k) = s.steady {
            if k.generation == generation && k.epoch == self.quiet_epoch {
                return k.steady;
            }
        }
        let steady = self.judge(i);
        self.slots[i].steady = Some(Steady {
            generation,
            epoch: self.quiet_epoch,
            steady,
        });
        steady
    }

    fn judge(&self, i: usize) -> bool {
        let s = &self.slots[i];
        let Some(names) = polled(s.pair(), s.policy.enable_backfill) else {
            return false;
        };
        let job = self.target(i);
        names.iter().all(|name| {
            let (_, expr) = s.policy.for_job(name, job);
            expr.is_none_or(|e| {
                // The job's ad changes only by events; the slot ad's
                // figures that move with the clock are what must not be read.
                reads(e, &s.ad, job)
                    .steady(|side, n| side == Side::My && changes_with_time(n.as_str()))
            })
        })
    }

    /// What slot `i`'s state's policy gives in `ad` at `now`.
    #[cfg(debug_assertions)]
    fn polled_values(&self, i: usize, ad: &ClassAd, now: i64) -> Vec<Value> {
        let s = &self.slots[i];
        let job = self.target(i);
        let env = self.env(now);
        polled(s.pair(), s.policy.enable_backfill)
            .unwrap_or(&[])
            .iter()
            .map(|name| evaluate(s.policy.for_job(name, job).1, ad, job, &env))
            .collect()
    }

    /// Debug builds: a sample of skipped polls is checked against the
    /// policy evaluated in the ad as a poll would have brought it up to
    /// date. A failure means `classad::reads` or the list of what moves
    /// with the clock missed something.
    #[cfg(debug_assertions)]
    pub(crate) fn check_quiet(&mut self, i: usize, now: i64) {
        static COUNT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        if !COUNT
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            .is_multiple_of(4)
        {
            return;
        }
        let stamp = self.slots[i].facts.as_ref().map(|f| f.generation());
        let ad = self.take_ad(i, now);
        let now_values = self.polled_values(i, &ad, now);
        self.put_ad(i, ad);
        let s = &self.slots[i];
        assert_eq!(
            stamp,
            s.facts.as_ref().map(|f| f.generation()),
            "{}: the facts of a quiet slot changed at {now}",
            s.name
        );
        let then = &s.quiet.as_ref().expect("checked while quiet").values;
        let print = |v: &[Value]| v.iter().map(|v| v.to_string()).collect::<Vec<_>>();
        assert_eq!(
            print(then),
            print(&now_values),
            "{}: a quiet slot's policy changed at {now}",
            s.name
        );
    }
}

#[cfg(not(debug_assertions))]
impl Startd {
    #[inline(always)]
    pub(crate) fn check_quiet(&mut self, _i: usize, _now: i64) {}
}

#[cfg(test)]
mod tests {
    use crate::test_support::{startd, T0};
    use crate::Readings;

    fn polled_quiet(text: &str) -> bool {
        let mut s = startd(text);
        let idle = |t: i64| Readings {
            keyboard_idle: t - T0 + 3600,
            console_idle: t - T0 + 3600,
            load_avg: 0.0,
            condor_load: Vec::new(),
        };
        s.tick(T0, idle(T0));
        s.tick(T0 + 5, idle(T0 + 5));
        assert_eq!(s.slots[0].pair().to_string(), "Unclaimed/Idle", "{text}");
        s.is_quiet(0, T0 + 10, true)
    }

    #[test]
    fn an_idle_slot_goes_quiet_unless_its_policy_reads_what_moves() {
        // The default policy (IS_OWNER is False: START is not read while
        // Unclaimed), and a START that reads the slot's own facts.
        assert!(polled_quiet(""));
        assert!(polled_quiet("START = KeyboardIdle > 60"));
        assert!(polled_quiet(
            "IS_OWNER = (START =?= False)\nSTART = Memory > 512 && TotalSlots == 1"
        ));
        for moving in [
            "IS_OWNER = (START =?= False)\nSTART = KeyboardIdle > 60",
            "IS_OWNER = (START =?= False)\nSTART = time() > 0",
            "RunBenchmarks = LastBenchmark > CurrentTime",
            "IS_OWNER = ClockMin < 0",
            "START_BACKFILL = ClockMin < 0\nENABLE_BACKFILL = True",
        ] {
            assert!(!polled_quiet(moving), "{moving}");
        }
    }
}
