//! Functions on ClassAd lists: membership, size, sums and bounds, comparing
//! every element, and evaluating an expression inside each ad of a list.

use std::sync::Arc;

use crate::eval::ops;
use crate::eval::{Evaluator, Scope};
use crate::expr::{BinOp, Expr};
use crate::name::AttrName;
use crate::value::{ListValue, Value};

/// `member(x, list)` and `identicalMember(x, list)`.
fn test_member(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope, identical: bool) -> Value {
    if args.len() != 2 {
        return Value::Error;
    }
    let item = ev.eval_arg(&args[0], scope);
    let list = ev.eval_arg(&args[1], scope);
    // identicalMember can look for UNDEFINED; member cannot.
    if list.is_undefined() || (!identical && item.is_undefined()) {
        return Value::Undefined;
    }
    let Value::List(l) = list else {
        return Value::Error;
    };
    if matches!(item, Value::List(_) | Value::Ad(_)) || (!identical && item.is_error()) {
        return Value::Error;
    }
    for e in l.items.iter() {
        let v = ev.eval_arg(e, &l.scope);
        let r = if identical {
            ops::identical(&v, &item)
        } else {
            ops::compare(BinOp::Eq, &v, &item)
        };
        if r.is_true() {
            return Value::Bool(true);
        }
    }
    Value::Bool(false)
}

pub fn member(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    test_member(ev, args, scope, false)
}

pub fn identical_member(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    test_member(ev, args, scope, true)
}

/// `size(x)`: elements of a list, attributes of an ad, or bytes of a string.
pub fn size(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    if args.len() != 1 {
        return Value::Error;
    }
    match ev.eval_arg(&args[0], scope) {
        Value::Undefined => Value::Undefined,
        Value::List(l) => Value::Int(l.items.len() as i64),
        Value::Ad(a) => Value::Int(a.ad.len() as i64),
        Value::Str(s) => Value::Int(s.len() as i64),
        _ => Value::Error,
    }
}

/// The single list argument of sum/avg/min/max: `Err` is the result to give
/// instead (UNDEFINED for an undefined list, else ERROR).
fn list_arg(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Result<ListValue, Value> {
    if args.len() != 1 {
        return Err(Value::Error);
    }
    match ev.eval_arg(&args[0], scope) {
        Value::Undefined => Err(Value::Undefined),
        Value::List(l) => Ok(l),
        _ => Err(Value::Error),
    }
}

/// The numbers of a list, skipping UNDEFINED elements; any other non-number
/// makes the whole result ERROR.
fn numbers(ev: &mut Evaluator<'_>, l: &ListValue) -> Result<Vec<Value>, Value> {
    let mut out = Vec::with_capacity(l.items.len());
    for v in ev.list_values(l) {
        match v {
            Value::Undefined => {}
            Value::Int(_) | Value::Real(_) | Value::Bool(_) => out.push(v),
            _ => return Err(Value::Error),
        }
    }
    Ok(out)
}

fn sum_of(nums: &[Value]) -> Value {
    let mut it = nums.iter();
    let Some(first) = it.next() else {
        return Value::Int(0);
    };
    it.fold(first.clone(), |acc, v| ops::binary(BinOp::Add, &acc, v))
}

pub fn sum(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    let l = match list_arg(ev, args, scope) {
        Ok(l) => l,
        Err(v) => return v,
    };
    match numbers(ev, &l) {
        Ok(nums) => sum_of(&nums),
        Err(v) => v,
    }
}

/// `avg(list)`: a real, except that an empty list gives the integer 0.
pub fn avg(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    let l = match list_arg(ev, args, scope) {
        Ok(l) => l,
        Err(v) => return v,
    };
    match numbers(ev, &l) {
        Ok(nums) if nums.is_empty() => Value::Int(0),
        Ok(nums) => ops::binary(BinOp::Div, &sum_of(&nums), &Value::Real(nums.len() as f64)),
        Err(v) => v,
    }
}

/// `min`/`max`: the extreme element; UNDEFINED for an empty list. When the
/// list mixes integers and reals the result is a real (HTCondor gives
/// `max({2, 2.0})` as `2.0`).
fn bound(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope, op: BinOp) -> Value {
    let l = match list_arg(ev, args, scope) {
        Ok(l) => l,
        Err(v) => return v,
    };
    let nums = match numbers(ev, &l) {
        Ok(n) => n,
        Err(v) => return v,
    };
    let mut it = nums.iter();
    let Some(first) = it.next() else {
        return Value::Undefined;
    };
    let mut best = first.clone();
    for v in it {
        if ops::compare(op, v, &best).is_true() {
            best = v.clone();
        }
    }
    if nums.iter().any(|v| matches!(v, Value::Real(_))) {
        if let Some(r) = best.as_number() {
            return Value::Real(r);
        }
    }
    best
}

pub fn min(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    bound(ev, args, scope, BinOp::Lt)
}

pub fn max(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    bound(ev, args, scope, BinOp::Gt)
}

/// `anyCompare(op, list, x)` / `allCompare(op, list, x)`: compares each element
/// with `x` using the operator named by the string `op`.
fn list_compare(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope, need_all: bool) -> Value {
    if args.len() != 3 {
        return Value::Error;
    }
    let op = match ev.eval_arg(&args[0], scope) {
        Value::Undefined => return Value::Undefined,
        Value::Str(s) => match &*s {
            "<" => BinOp::Lt,
            "<=" => BinOp::Le,
            "!=" => BinOp::Ne,
            "==" => BinOp::Eq,
            ">" => BinOp::Gt,
            ">=" => BinOp::Ge,
            "is" => BinOp::MetaEq,
            "isnt" => BinOp::MetaNe,
            _ => return Value::Error,
        },
        _ => return Value::Error,
    };
    let l = match ev.eval_arg(&args[1], scope) {
        Value::Undefined => return Value::Undefined,
        Value::List(l) => l,
        _ => return Value::Error,
    };
    let x = ev.eval_arg(&args[2], scope);
    for e in l.items.iter() {
        let v = ev.eval_arg(e, &l.scope);
        match ops::binary(op, &v, &x) {
            Value::Bool(true) if !need_all => return Value::Bool(true),
            Value::Bool(false) if need_all => return Value::Bool(false),
            Value::Bool(_) => {}
            // HTCondor stops at the first UNDEFINED comparison with a false
            // answer, and at anything else with ERROR.
            Value::Undefined => return Value::Bool(false),
            _ => return Value::Error,
        }
    }
    Value::Bool(need_all)
}

pub fn any_compare(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    list_compare(ev, args, scope, false)
}

pub fn all_compare(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    list_compare(ev, args, scope, true)
}

/// What `evalInEachContext`/`countMatches` work through: the expression to
/// evaluate and the list of ads (as expressions with their scope).
enum Contexts {
    List(Arc<[Expr]>, Scope),
    /// The list argument was UNDEFINED.
    Undefined,
    Error,
}

fn contexts<'e: 'x, 'x>(
    ev: &mut Evaluator<'e>,
    args: &'x [Expr],
    scope: &'x Scope,
) -> (Option<&'x Expr>, Contexts) {
    if args.len() != 2 {
        return (None, Contexts::Error);
    }
    // An attribute reference stands for the expression it is bound to, found
    // from the calling scope; otherwise the argument itself is evaluated in
    // each ad.
    let expr = match &args[0] {
        Expr::Attr(name) => ev
            .find_attr(&AttrName::new(name.as_str()), scope)
            .map_or(&args[0], |(e, _)| e),
        other => other,
    };
    let ctx = match &args[1] {
        Expr::List(items) => Contexts::List(items.clone(), scope.clone()),
        other => match ev.eval_arg(other, scope) {
            Value::List(l) => Contexts::List(l.items.clone(), l.scope.clone()),
            Value::Undefined => Contexts::Undefined,
            _ => Contexts::Error,
        },
    };
    (Some(expr), ctx)
}

/// Evaluates `expr` with the ad that `item` evaluates to as its scope.
fn eval_in_context(ev: &mut Evaluator<'_>, expr: &Expr, item: &Expr, scope: &Scope) -> Value {
    match ev.eval_arg(item, scope) {
        Value::Ad(adv) => ev.eval_in_ad(expr, &adv),
        Value::Undefined => Value::Undefined,
        _ => Value::Error,
    }
}

/// `evalInEachContext(expr, ads)`: the list of `expr`'s value in each ad.
pub fn eval_in_each_context(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    match contexts(ev, args, scope) {
        (Some(expr), Contexts::List(items, s)) => {
            if !ev.charge_items(items.len(), 0) {
                return Value::Error;
            }
            let vals = items
                .iter()
                .map(|it| eval_in_context(ev, expr, it, &s))
                .collect();
            Value::built_list_of(vals)
        }
        (_, Contexts::Undefined) => Value::Undefined,
        _ => Value::Error,
    }
}

/// `countMatches(expr, ads)`: in how many ads `expr` is true. UNDEFINED and
/// ERROR count as no match, so that it can be used in matchmaking.
pub fn count_matches(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    match contexts(ev, args, scope) {
        (Some(expr), Contexts::List(items, s)) => {
            let n = items
                .iter()
                .filter(|it| eval_in_context(ev, expr, it, &s).as_bool() == Some(true))
                .count();
            Value::Int(n as i64)
        }
        (_, Contexts::Undefined) => Value::Int(0),
        _ => Value::Error,
    }
}
