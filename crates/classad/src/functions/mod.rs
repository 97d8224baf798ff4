//! The built-in function library HTCondor documents.
//!
//! Each built-in receives its arguments unevaluated, so that functions such as
//! `ifThenElse` evaluate only what they need. Function names are
//! case-insensitive.

use crate::eval::{Evaluator, Scope};
use crate::expr::Expr;
use crate::value::Value;

/// A built-in function: the evaluator, the argument expressions, and the scope
/// the call is evaluated in.
pub type Builtin = fn(&mut Evaluator<'_>, &[Expr], &Scope) -> Value;

/// The built-in named `name` (any case), if there is one.
pub fn lookup(name: &str) -> Option<Builtin> {
    let lower = name.to_ascii_lowercase();
    TABLE
        .binary_search_by(|(n, _)| n.cmp(&lower.as_str()))
        .ok()
        .map(|i| TABLE[i].1)
}

/// Every built-in, sorted by lowercase name (a test checks the order).
static TABLE: &[(&str, Builtin)] = &[];
