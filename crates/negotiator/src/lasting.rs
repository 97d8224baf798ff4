//! What of a slot ad lasts while its startd publishes it under one
//! generation ([`crate::cycle::SlotGenerations`]).
//!
//! Two ads of a slot published under one generation bind every name the
//! clock does not move (`changes_with_time`) to the same expression. An
//! expression that reads only such names (`classad::reads` follows them),
//! nothing beyond the ad (the clock, a random draw) and nothing the cycle
//! writes into the ad itself therefore evaluates alike in every ad of the generation, and a
//! cycle may keep its value from the last one instead of looking the ad
//! up again: ten thousand slot ads of a hundred attributes each are
//! cache misses, cycle after cycle, for figures (a slot's weight, its
//! cores) that change only when the slot does.
//!
//! Pure: what is kept is checked against the generation by the caller.

use classad::reads::reads;
use classad::{ClassAd, Expr};

/// What the cycle writes into a claimed slot's ad before it reads the
/// slot's weight (the figures preemption reads): a value read through one
/// of these is the cycle's, and changes with the priorities.
const WRITTEN_BY_THE_CYCLE: [&str; 3] =
    ["RemoteUserPrio", "RemoteUserResourcesInUse", "CurrentRank"];

/// Whether `e`, evaluated with `ad` as MY and no TARGET, gives the same
/// value for every ad published under `ad`'s generation, whatever the
/// cycle writes into it: what it reads (`classad::reads`, followed through
/// what `ad` binds) is only names that do not change with time and that
/// the cycle does not write, and nothing beyond the ad (the clock,
/// `CurrentTime`, a random draw, another scope).
pub(crate) fn lasting(e: &Expr, ad: &ClassAd, changes_with_time: &dyn Fn(&str) -> bool) -> bool {
    reads(e, ad, None).steady(|_, n| {
        changes_with_time(n.as_str()) || WRITTEN_BY_THE_CYCLE.iter().any(|w| n.is(w))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clock(name: &str) -> bool {
        name.eq_ignore_ascii_case("KeyboardIdle")
    }

    fn lasts(ad: &str, name: &str) -> bool {
        let ad = ClassAd::parse(ad).unwrap();
        lasting(ad.get(name).unwrap(), &ad, &clock)
    }

    #[test]
    fn names_followed_through_the_ad() {
        assert!(lasts("[ W = Cpus * 2; Cpus = 4 ]", "W"));
        assert!(lasts("[ W = Cpus ?: 1; ]", "W"));
        assert!(lasts(
            "[ W = Cpus > 2 ? Memory : 1; Memory = M; M = 3 ]",
            "W"
        ));
    }

    #[test]
    fn the_clock_functions_and_what_the_cycle_writes_do_not_last() {
        assert!(!lasts("[ W = KeyboardIdle ]", "W"));
        assert!(!lasts("[ W = Cpus; Cpus = keyboardidle / 60 ]", "W"));
        assert!(!lasts("[ W = time() ]", "W"));
        assert!(!lasts("[ W = CurrentTime ]", "W"));
        assert!(!lasts("[ W = RemoteUserPrio ]", "W"));
        assert!(!lasts("[ W = random(4) ]", "W"));
        assert!(!lasts("[ W = MY ]", "W"));
    }

    #[test]
    fn pure_functions_and_self_references_last() {
        // A function of lasting names lasts; a name that reads itself is
        // an error in every ad alike.
        assert!(lasts("[ W = max({ Cpus, 1 }); Cpus = 4 ]", "W"));
        assert!(lasts("[ W = MY.Cpus ]", "W"));
        assert!(lasts("[ W = W + 1 ]", "W"));
    }
}
