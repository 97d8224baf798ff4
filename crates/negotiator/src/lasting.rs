//! What of a slot ad lasts while its startd publishes it under one
//! generation ([`crate::cycle::SlotGenerations`]).
//!
//! Two ads of a slot published under one generation bind every name the
//! clock does not move (`changes_with_time`) to the same expression. An
//! expression that reads only such names, calls no function (`time()`
//! reads the clock) and reads nothing the cycle writes into the ad
//! itself therefore evaluates alike in every ad of the generation, and a
//! cycle may keep its value from the last one instead of looking the ad
//! up again: ten thousand slot ads of a hundred attributes each are
//! cache misses, cycle after cycle, for figures (a slot's weight, its
//! cores) that change only when the slot does.
//!
//! Pure: what is kept is checked against the generation by the caller.

use classad::name::Special;
use classad::{ClassAd, Expr};

/// What the cycle writes into a claimed slot's ad before it reads the
/// slot's weight (the figures preemption reads): a value read through one
/// of these is the cycle's, and changes with the priorities.
const WRITTEN_BY_THE_CYCLE: [&str; 3] =
    ["RemoteUserPrio", "RemoteUserResourcesInUse", "CurrentRank"];

/// How deep references are followed (an expression that reads itself
/// is simply not kept).
const DEPTH: u32 = 16;

/// Whether `e`, evaluated with `ad` as MY and no TARGET, gives the same
/// value for every ad published under `ad`'s generation, whatever the
/// cycle writes into it: only literals, operators and references to
/// names that do not change with time (followed through what `ad` binds
/// to them), none special (`CurrentTime` is the clock), none written by
/// the cycle. Anything else (a function call, a scoped or selected
/// reference, a list or an ad) is not looked into and does not last.
pub(crate) fn lasting(e: &Expr, ad: &ClassAd, changes_with_time: &dyn Fn(&str) -> bool) -> bool {
    lasting_at(e, ad, changes_with_time, 0)
}

fn lasting_at(
    e: &Expr,
    ad: &ClassAd,
    changes_with_time: &dyn Fn(&str) -> bool,
    depth: u32,
) -> bool {
    if depth > DEPTH {
        return false;
    }
    let go = |x: &Expr| lasting_at(x, ad, changes_with_time, depth + 1);
    match e {
        Expr::Lit(_) | Expr::RelTimeLit(_) | Expr::Folded(_) => true,
        Expr::Attr(n) => {
            n.special() == Special::None
                && !changes_with_time(n.as_str())
                && !WRITTEN_BY_THE_CYCLE.iter().any(|w| n.is(w))
                && match ad.lookup_name(n) {
                    // Missing in every ad of the generation (a name that
                    // does not move is bound alike in all of them).
                    None => true,
                    Some(x) => go(x),
                }
        }
        Expr::Unary(_, x) | Expr::Paren(x) => go(x),
        Expr::Binary(_, b) => go(&b.0) && go(&b.1),
        Expr::Cond(c) => go(&c.0) && go(&c.1) && go(&c.2),
        Expr::Elvis(a, b) => go(a) && go(b),
        Expr::Absolute(_)
        | Expr::Select(..)
        | Expr::Index(..)
        | Expr::Call(_)
        | Expr::List(_)
        | Expr::Ad(_) => false,
    }
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
        assert!(!lasts("[ W = MY.Cpus ]", "W"));
        assert!(!lasts("[ W = W + 1 ]", "W"));
    }
}
