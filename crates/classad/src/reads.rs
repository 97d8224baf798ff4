//! What evaluating an expression may read, found without evaluating it.
//!
//! An expression evaluated with two top-level ads (MY and TARGET) reads
//! the attributes it names, then whatever those are bound to, in the ad
//! where each was found. [`reads`] follows those bindings and lists every
//! (ad, name) an evaluation could look up, and says whether it could read
//! anything besides the two ads' attributes: the clock (`time()`, an
//! unbound `CurrentTime`), a random draw, a string evaluated as an
//! expression, a nested ad's scope, or `MY`/`TARGET`/`parent` taken as
//! whole values. A caller that knows which attributes of its ads change
//! can then tell that a second evaluation would give the same value
//! without doing it (the startd does this for the policy of a slot that
//! sits idle between polls).
//!
//! The answer is conservative: it may name more than one evaluation reads
//! (both branches of a conditional, a name missing in both ads is listed
//! for both), never less. It never evaluates, and never reads the clock.

use crate::ad::ClassAd;
use crate::expr::Expr;
use crate::name::{AttrName, Special};

/// One of the two top-level ads of an evaluation (the evaluator's own).
pub use crate::eval::Side;

/// What an evaluation may read (see the module's introduction).
#[derive(Clone, Debug, Default)]
pub struct Reads {
    /// Each name the evaluation may look up, with the ad it is (or would
    /// be, were it there) found in; each pair once.
    pub names: Vec<(Side, AttrName)>,
    /// It may read something besides the two ads' attributes.
    pub beyond: bool,
}

impl Reads {
    /// Whether the evaluation reads only attributes, none of which
    /// `changes` says may change: two evaluations with ads alike in every
    /// other attribute give the same value.
    pub fn steady(&self, mut changes: impl FnMut(Side, &AttrName) -> bool) -> bool {
        !self.beyond && !self.names.iter().any(|(side, n)| changes(*side, n))
    }
}

/// Calls whose value depends on more than their arguments' values: the
/// clock (with or without arguments, to keep the list simple), random
/// draws, strings evaluated as expressions, other scopes, the host's
/// users and maps, a log line.
const BEYOND_CALLS: &[&str] = &[
    "abstime",
    "allcompare",
    "anycompare",
    "currenttime",
    "daytime",
    "debug",
    "eval",
    "evalineachcontext",
    "formattime",
    "random",
    "splittime",
    "time",
    "unparse",
    "userhome",
    "usermap",
];

/// What evaluating `e` with MY = `my` and TARGET = `target` may read.
pub fn reads(e: &Expr, my: &ClassAd, target: Option<&ClassAd>) -> Reads {
    let mut walk = Walk {
        ads: [Some(my), target],
        out: Reads::default(),
    };
    walk.expr(e, Side::My);
    walk.out
}

struct Walk<'a> {
    ads: [Option<&'a ClassAd>; 2],
    out: Reads,
}

impl<'a> Walk<'a> {
    fn ad(&self, side: Side) -> Option<&'a ClassAd> {
        self.ads[side as usize]
    }

    /// Records (side, name); false if it was already recorded (its binding
    /// already followed).
    fn note(&mut self, side: Side, name: &AttrName) -> bool {
        if self
            .out
            .names
            .iter()
            .any(|(s, n)| *s == side && n.matches(name))
        {
            return false;
        }
        self.out.names.push((side, name.clone()));
        true
    }

    /// A name looked up in `side`'s ad, with no fallback: followed if bound;
    /// an unbound `CurrentTime` is the clock.
    fn lookup_in(&mut self, side: Side, name: &AttrName) {
        if !self.note(side, name) {
            return;
        }
        match self.ad(side).and_then(|ad| ad.lookup_name(name)) {
            Some(bound) => self.expr(bound, side),
            None if name.special() == Special::CurrentTime => self.out.beyond = true,
            None => {}
        }
    }

    /// An unscoped name seen from `side`: its own ad first, then (old
    /// ClassAd semantics) the other one.
    fn lookup(&mut self, side: Side, name: &AttrName) {
        let here = self
            .ad(side)
            .is_some_and(|ad| ad.lookup_name(name).is_some());
        if here || name.special() == Special::CurrentTime {
            return self.lookup_in(side, name);
        }
        // Missing here: whatever the other ad has (listed even if missing
        // there too, so a caller sees every name the value hangs on).
        self.note(side, name);
        self.lookup_in(side.other(), name);
    }

    fn expr(&mut self, e: &Expr, side: Side) {
        match e {
            // Constants, folded operators included.
            Expr::Lit(_) | Expr::RelTimeLit(_) | Expr::Folded(_) => {}
            Expr::Attr(n) => match n.special() {
                Special::None | Special::CurrentTime => self.lookup(side, n),
                Special::My | Special::Target | Special::Parent => self.out.beyond = true,
            },
            Expr::Absolute(n) => self.lookup_in(side, n),
            Expr::Select(base, n) => match &**base {
                Expr::Attr(b) if b.special() == Special::My => self.lookup_in(side, n),
                Expr::Attr(b) if b.special() == Special::Target => self.lookup_in(side.other(), n),
                other => {
                    self.out.beyond = true;
                    self.expr(other, side);
                }
            },
            Expr::Index(a, b) | Expr::Elvis(a, b) => {
                self.expr(a, side);
                self.expr(b, side);
            }
            Expr::Unary(_, a) | Expr::Paren(a) => self.expr(a, side),
            Expr::Binary(_, ab) => {
                self.expr(&ab.0, side);
                self.expr(&ab.1, side);
            }
            Expr::Cond(abc) => {
                self.expr(&abc.0, side);
                self.expr(&abc.1, side);
                self.expr(&abc.2, side);
            }
            Expr::Call(c) => {
                if BEYOND_CALLS.iter().any(|f| c.name.eq_ignore_ascii_case(f)) {
                    self.out.beyond = true;
                }
                for a in &c.args {
                    self.expr(a, side);
                }
            }
            Expr::List(items) => items.iter().for_each(|a| self.expr(a, side)),
            Expr::Ad(_) => self.out.beyond = true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse_expr;

    fn ad(text: &str) -> ClassAd {
        ClassAd::parse(text).unwrap()
    }

    fn names(r: &Reads) -> Vec<String> {
        let mut v: Vec<String> = r
            .names
            .iter()
            .map(|(s, n)| {
                format!(
                    "{}.{}",
                    if *s == Side::My { "my" } else { "target" },
                    n.as_str()
                )
            })
            .collect();
        v.sort();
        v
    }

    #[test]
    fn bindings_are_followed_in_the_ad_they_are_found_in() {
        let slot = ad("[ Start = KeyboardIdle > Limit; Limit = 60; KeyboardIdle = 5 ]");
        let job = ad("[ Want = TARGET.Memory > Size; Size = 10 ]");
        let r = reads(&parse_expr("Start && Want").unwrap(), &slot, Some(&job));
        assert!(!r.beyond);
        assert_eq!(
            names(&r),
            [
                "my.KeyboardIdle",
                "my.Limit",
                "my.Memory",
                "my.Start",
                "my.Want",
                "target.Size",
                "target.Want",
            ]
        );
        let clock = |_: Side, n: &AttrName| n.as_str().eq_ignore_ascii_case("KeyboardIdle");
        assert!(!r.steady(clock));
        let r = reads(&parse_expr("Want").unwrap(), &slot, Some(&job));
        assert!(r.steady(clock));
    }

    #[test]
    fn the_clock_random_draws_and_other_scopes_read_beyond_the_ads() {
        let slot = ad("[ A = 1; Stamp = CurrentTime; B = [ x = 1 ] ]");
        for text in [
            "time() > 5",
            "Stamp > 0",
            "random(10) < 3",
            "eval(\"A\")",
            "B.x",
            "MY",
            "[ y = A ].y",
            "formatTime()",
        ] {
            let r = reads(&parse_expr(text).unwrap(), &slot, None);
            assert!(r.beyond, "{text}");
        }
        for text in [
            "A + 1",
            "MY.A",
            ".A",
            "ifThenElse(A, 1, 2)",
            "member(A, {1, 2})",
        ] {
            let r = reads(&parse_expr(text).unwrap(), &slot, None);
            assert!(!r.beyond, "{text}");
        }
        // CurrentTime bound in the ad is an attribute like any other.
        let own = ad("[ CurrentTime = 7; T = CurrentTime ]");
        assert!(!reads(&parse_expr("T").unwrap(), &own, None).beyond);
    }

    #[test]
    fn cycles_end_and_names_missing_everywhere_are_listed_for_both_ads() {
        let slot = ad("[ A = B; B = A + Missing ]");
        let r = reads(&parse_expr("A").unwrap(), &slot, Some(&ad("[ ]")));
        assert!(!r.beyond);
        assert_eq!(names(&r), ["my.A", "my.B", "my.Missing", "target.Missing"]);
    }
}
