//! Symmetric matching: each ad's Requirements against the other, and Rank.

use crate::ad::ClassAd;
use crate::eval::{eval_attr, Env};
use crate::value::Value;

/// Everything a match computes, for display and for the negotiator.
#[derive(Clone, Debug)]
pub struct MatchResult {
    /// True if both Requirements are true (or a non-zero number).
    pub symmetric: bool,
    pub my_requirements: Value,
    pub target_requirements: Value,
    pub my_rank: Value,
    pub target_rank: Value,
}

/// A Requirements value accepts the match if it is true or a non-zero number.
pub fn accepts(v: &Value) -> bool {
    v.as_bool() == Some(true)
}

/// Does `my`'s Requirements accept `target`?
pub fn requirements_met(my: &ClassAd, target: &ClassAd, env: &Env) -> bool {
    accepts(&eval_attr(my, Some(target), "Requirements", env))
}

/// The symmetric match of HTCondor: both Requirements hold.
pub fn symmetric_match(a: &ClassAd, b: &ClassAd, env: &Env) -> bool {
    requirements_met(a, b, env) && requirements_met(b, a, env)
}

/// Rank of `target` as seen by `my`, as a real (0.0 unless a number).
pub fn rank(my: &ClassAd, target: &ClassAd, env: &Env) -> f64 {
    eval_attr(my, Some(target), "Rank", env)
        .as_number()
        .unwrap_or(0.0)
}

pub fn evaluate_match(my: &ClassAd, target: &ClassAd, env: &Env) -> MatchResult {
    let my_requirements = eval_attr(my, Some(target), "Requirements", env);
    let target_requirements = eval_attr(target, Some(my), "Requirements", env);
    MatchResult {
        symmetric: accepts(&my_requirements) && accepts(&target_requirements),
        my_rank: eval_attr(my, Some(target), "Rank", env),
        target_rank: eval_attr(target, Some(my), "Rank", env),
        my_requirements,
        target_requirements,
    }
}
