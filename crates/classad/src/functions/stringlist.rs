//! String lists: a list kept in one string, items separated by any of a set
//! of delimiter characters (`"a, b, c"`). HTCondor's `stringList*` family.

use std::collections::BTreeSet;

use super::regex::{Matcher, Options};
use super::strtod;
use crate::eval::{Evaluator, Scope};
use crate::expr::Expr;
use crate::value::Value;

/// The items of a string list: split at any delimiter character, trimmed of
/// white space, empty items dropped (HTCondor's `StringTokenIterator`).
fn tokens<'a>(list: &'a str, delims: &'a str) -> impl Iterator<Item = &'a str> + 'a {
    list.split(move |c: char| delims.contains(c))
        .map(|t| t.trim_matches([' ', '\t', '\r', '\n']))
        .filter(|t| !t.is_empty())
}

/// Charges reading `list` item by item: each byte is looked for among the
/// delimiters (some tens of lookups a step).
fn charge_items(ev: &mut Evaluator<'_>, list: &str, delims: &str) -> bool {
    let lookups = (list.len() as u64).saturating_mul(delims.len().max(1) as u64);
    ev.charge_steps(lookups / 32)
}

/// Charges making a set of the items of `list`: a copy and an insertion for
/// each, and there may be one for every two bytes.
fn charge_set(ev: &mut Evaluator<'_>, list: &str) -> bool {
    ev.charge_steps(list.len() as u64 / 4)
}

/// Evaluates the arguments; every one must be a string (else ERROR).
/// Arguments past those given take the defaults in `defaults`.
fn string_args(
    ev: &mut Evaluator<'_>,
    args: &[Expr],
    scope: &Scope,
    required: usize,
    defaults: &[&str],
) -> Result<Vec<String>, Value> {
    if args.len() < required || args.len() > required + defaults.len() {
        return Err(Value::Error);
    }
    let mut out = Vec::with_capacity(required + defaults.len());
    for a in args {
        match ev.eval_arg(a, scope) {
            Value::Str(s) => out.push(s.to_string()),
            _ => return Err(Value::Error),
        }
    }
    for d in &defaults[args.len() - required..] {
        out.push(d.to_string());
    }
    Ok(out)
}

/// `stringListSize(list [, delims])`.
pub fn size(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    match string_args(ev, args, scope, 1, &[", "]) {
        Ok(a) if !charge_items(ev, &a[0], &a[1]) => Value::Error,
        Ok(a) => Value::Int(tokens(&a[0], &a[1]).count() as i64),
        Err(v) => v,
    }
}

#[derive(Clone, Copy)]
enum Summary {
    Sum,
    Avg,
    Min,
    Max,
}

/// `stringListSum/Avg/Min/Max(list [, delims])`. Each item is read as C's
/// `sscanf("%lf")` would; the result is an integer (truncated) unless some
/// item has a character other than `+-0123456789`. HTCondor seeds min with
/// `FLT_MAX` and max with `FLT_MIN` (the smallest positive float), and those
/// quirks are kept.
fn summarize(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope, kind: Summary) -> Value {
    let a = match string_args(ev, args, scope, 1, &[", "]) {
        Ok(a) => a,
        Err(v) => return v,
    };
    if !charge_items(ev, &a[0], &a[1]) {
        return Value::Error;
    }
    let mut acc = match kind {
        Summary::Sum | Summary::Avg => 0.0,
        Summary::Min => f64::from(f32::MAX),
        Summary::Max => f64::from(f32::MIN_POSITIVE),
    };
    let mut count = 0usize;
    let mut is_real = false;
    for item in tokens(&a[0], &a[1]) {
        count += 1;
        let Some((x, _)) = strtod(item) else {
            return Value::Error;
        };
        if !item.bytes().all(|c| b"+-0123456789".contains(&c)) {
            is_real = true;
        }
        acc = match kind {
            Summary::Sum | Summary::Avg => acc + x,
            Summary::Min => {
                if x < acc {
                    x
                } else {
                    acc
                }
            }
            Summary::Max => {
                if x > acc {
                    x
                } else {
                    acc
                }
            }
        };
    }
    if count == 0 {
        return match kind {
            Summary::Sum | Summary::Avg => Value::Real(0.0),
            _ => Value::Undefined,
        };
    }
    if matches!(kind, Summary::Avg) {
        acc /= count as f64;
    }
    if is_real {
        Value::Real(acc)
    } else {
        Value::Int(super::c_cast(acc))
    }
}

pub fn sum(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    summarize(ev, args, scope, Summary::Sum)
}
pub fn avg(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    summarize(ev, args, scope, Summary::Avg)
}
pub fn min(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    summarize(ev, args, scope, Summary::Min)
}
pub fn max(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    summarize(ev, args, scope, Summary::Max)
}

/// The arguments of the member and subset functions: `(item, list [, delims])`.
/// Each may be a string or UNDEFINED (which acts as `""`); both item and list
/// UNDEFINED gives UNDEFINED.
fn member_args(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Result<[String; 3], Value> {
    if !(2..=3).contains(&args.len()) {
        return Err(Value::Error);
    }
    let mut out = [String::new(), String::new(), ", \t\r\n".to_string()];
    let mut undefined = 0;
    for (i, a) in args.iter().enumerate() {
        match ev.eval_arg(a, scope) {
            Value::Str(s) => out[i] = s.to_string(),
            Value::Undefined => {
                if i < 2 {
                    out[i].clear();
                    undefined += 1;
                }
            }
            _ => return Err(Value::Error),
        }
    }
    if undefined == 2 {
        return Err(Value::Undefined);
    }
    Ok(out)
}

fn list_member(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope, caseless: bool) -> Value {
    match member_args(ev, args, scope) {
        Ok([_, list, delims]) if !charge_items(ev, &list, &delims) => Value::Error,
        Ok([item, list, delims]) => Value::Bool(tokens(&list, &delims).any(|t| {
            if caseless {
                t.eq_ignore_ascii_case(&item)
            } else {
                t == item
            }
        })),
        Err(v) => v,
    }
}

/// `stringListMember(item, list [, delims])`: the item is not trimmed.
pub fn member(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    list_member(ev, args, scope, false)
}

pub fn imember(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    list_member(ev, args, scope, true)
}

/// `stringListSubsetMatch(items, list [, delims])`: every item of the first
/// list is in the second. An empty first list is always a subset.
fn subset(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope, caseless: bool) -> Value {
    let [items, list, delims] = match member_args(ev, args, scope) {
        Ok(a) => a,
        Err(v) => return v,
    };
    if items.is_empty() {
        return Value::Bool(true);
    }
    if !charge_items(ev, &list, &delims)
        || !charge_items(ev, &items, &delims)
        || !charge_set(ev, &list)
    {
        return Value::Error;
    }
    let norm = |t: &str| {
        if caseless {
            t.to_ascii_lowercase()
        } else {
            t.to_string()
        }
    };
    let set: BTreeSet<String> = tokens(&list, &delims).map(norm).collect();
    let mut found = false;
    for t in tokens(&items, &delims) {
        found = set.contains(&norm(t));
        if !found {
            break;
        }
    }
    Value::Bool(found)
}

pub fn subset_match(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    subset(ev, args, scope, false)
}

pub fn isubset_match(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    subset(ev, args, scope, true)
}

/// `stringListsIntersect(a, b [, delims])`: the two lists share an item.
/// This one is from the ClassAd library itself: items are not trimmed and the
/// default delimiters are space and comma.
pub fn intersect(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    if !(2..=3).contains(&args.len()) {
        return Value::Error;
    }
    let vals = super::eval_all(ev, args, scope);
    if vals.iter().any(Value::is_error) {
        return Value::Error;
    }
    if vals.iter().any(Value::is_undefined) {
        return Value::Undefined;
    }
    let mut delims = match vals.get(2) {
        Some(Value::Str(d)) => d.to_string(),
        Some(_) => return Value::Error,
        None => String::new(),
    };
    if delims.is_empty() {
        delims = " ,".to_string();
    }
    let (Value::Str(a), Value::Str(b)) = (&vals[0], &vals[1]) else {
        return Value::Error;
    };
    if !charge_items(ev, a, &delims)
        || !charge_items(ev, b, &delims)
        || !charge_set(ev, a)
        || !charge_set(ev, b)
    {
        return Value::Error;
    }
    let raw = |s: &'_ str| -> BTreeSet<String> {
        s.split(|c: char| delims.contains(c))
            .filter(|t| !t.is_empty())
            .map(str::to_string)
            .collect()
    };
    let set = raw(b);
    Value::Bool(raw(a).iter().any(|t| set.contains(t)))
}

/// `stringList_regexpMember(pattern, list [, delims [, options]])`: some item
/// matches the pattern; UNDEFINED for an empty list.
pub fn regexp_member(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    let a = match string_args(ev, args, scope, 2, &[", ", ""]) {
        Ok(a) => a,
        Err(v) => return v,
    };
    if !charge_items(ev, &a[1], &a[2]) {
        return Value::Error;
    }
    let mut m = match Matcher::new(ev, &a[0], Options::from_letters(&a[3])) {
        Ok(m) => m,
        Err(v) => return v,
    };
    let mut empty = true;
    let mut found = false;
    for t in tokens(&a[1], &a[2]) {
        empty = false;
        match m.is_match(ev, t.as_bytes()) {
            Ok(true) => found = true,
            Ok(false) => {}
            // HTCondor reads a failed match as no match; one that ran
            // over the budget ends the evaluation.
            Err(v) if ev.exhausted() => return v,
            Err(_) => {}
        }
    }
    if empty {
        Value::Undefined
    } else {
        Value::Bool(found)
    }
}
