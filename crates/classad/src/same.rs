//! Structural equality of expressions and values: the same tree, names
//! compared ignoring case (as ClassAd names are), numbers by their bits.
//! Two expressions the same here print the same and evaluate the same;
//! the converse need not hold. The negotiator's autoclusters and the
//! submitting tool's cluster/proc split use it to compare without
//! printing.
//!
//! **Architecture invariant:** pure.

use crate::{ClassAd, Expr, Value};

pub fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Undefined, Value::Undefined) | (Value::Error, Value::Error) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Int(x), Value::Int(y)) => x == y,
        (Value::Real(x), Value::Real(y)) => x.to_bits() == y.to_bits(),
        (Value::Str(x), Value::Str(y)) => x.as_str() == y.as_str(),
        (Value::List(x), Value::List(y)) => same_list(&x.items, &y.items),
        (Value::Ad(x), Value::Ad(y)) => same_ad(&x.ad, &y.ad),
        (Value::AbsTime(x), Value::AbsTime(y)) => x == y,
        (Value::RelTime(x), Value::RelTime(y)) => x.to_bits() == y.to_bits(),
        _ => false,
    }
}

fn same_list(a: &[Expr], b: &[Expr]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same_expr(x, y))
}

fn same_ad(a: &ClassAd, b: &ClassAd) -> bool {
    a.len() == b.len()
        && a.iter_inserted()
            .zip(b.iter_inserted())
            .all(|((n, x), (m, y))| n.matches(m) && same_expr(x, y))
}

/// Structural equality of two expressions (names compared ignoring case).
pub fn same_expr(a: &Expr, b: &Expr) -> bool {
    match (a, b) {
        (Expr::Lit(x), Expr::Lit(y)) => same_value(x, y),
        (Expr::RelTimeLit(x), Expr::RelTimeLit(y)) => x.to_bits() == y.to_bits(),
        (Expr::Attr(x), Expr::Attr(y)) | (Expr::Absolute(x), Expr::Absolute(y)) => x.matches(y),
        (Expr::Select(x, n), Expr::Select(y, m)) => n.matches(m) && same_expr(x, y),
        (Expr::Index(x1, x2), Expr::Index(y1, y2)) | (Expr::Elvis(x1, x2), Expr::Elvis(y1, y2)) => {
            same_expr(x1, y1) && same_expr(x2, y2)
        }
        (Expr::Unary(o, x), Expr::Unary(p, y)) => o == p && same_expr(x, y),
        (Expr::Binary(o, x), Expr::Binary(p, y)) => {
            o == p && same_expr(&x.0, &y.0) && same_expr(&x.1, &y.1)
        }
        (Expr::Cond(x), Expr::Cond(y)) => {
            same_expr(&x.0, &y.0) && same_expr(&x.1, &y.1) && same_expr(&x.2, &y.2)
        }
        (Expr::Paren(x), Expr::Paren(y)) => same_expr(x, y),
        (Expr::Call(x), Expr::Call(y)) => {
            x.name.eq_ignore_ascii_case(&y.name) && same_list(&x.args, &y.args)
        }
        (Expr::List(x), Expr::List(y)) => same_list(x, y),
        (Expr::Ad(x), Expr::Ad(y)) => same_ad(x, y),
        (Expr::Folded(x), Expr::Folded(y)) => same_expr(&x.expr, &y.expr),
        _ => false,
    }
}
