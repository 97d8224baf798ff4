//! String functions: concatenation, substrings, case, comparison, version
//! comparison, and splitting.

use std::cmp::Ordering;

use super::{to_str, to_string_value};
use crate::eval::{Evaluator, Scope};
use crate::expr::Expr;
use crate::value::{ArcStr, Value};

/// `strcat(a, b, ...)` and `join(sep, a, b, ...)`, HTCondor's `strCat`.
///
/// Arguments are converted to strings. For strcat an UNDEFINED argument makes
/// the result UNDEFINED; join skips it and is UNDEFINED only when nothing
/// else was joined. The pieces are gathered first and their total length
/// charged to the evaluation's budget before the result is built.
fn concat(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope, is_join: bool) -> Value {
    // join(list) and join(sep, list) join the list's elements, with the
    // separator (if any) first, as join(sep, a, b, ...) has it.
    let mut list = None;
    if is_join && (1..=2).contains(&args.len()) {
        if let Value::List(l) = ev.eval_arg(&args[args.len() - 1], scope) {
            list = Some(l);
        }
    }
    let mut pieces: Vec<ArcStr> = Vec::new();
    let mut total = 0usize;
    let mut sep = ArcStr::new();
    let (mut undef, mut defined) = (false, false);
    let mut piece = |ev: &mut Evaluator<'_>, i: usize, v: Value| -> Result<bool, Value> {
        let text = match to_string_value(&v) {
            Value::Str(t) => t,
            Value::Undefined => {
                undef = true;
                if is_join {
                    return Ok(true);
                }
                defined = false;
                return Ok(false);
            }
            _ => return Err(Value::Error),
        };
        if is_join {
            if i == 0 {
                sep = text;
                return Ok(true);
            }
            if total > 0 && !sep.is_empty() {
                total += sep.len();
                pieces.push(sep.clone());
            }
        }
        defined = true;
        total += text.len();
        pieces.push(text);
        // Pieces are counted as they come, so that a long list stops early.
        if !ev.charge_steps(1) {
            return Err(Value::Error);
        }
        Ok(true)
    };
    let go_on = match &list {
        Some(l) => {
            let sep_value = match args.len() {
                2 => ev.eval_arg(&args[0], scope),
                _ => Value::str(""),
            };
            let mut go_on = piece(ev, 0, sep_value);
            for (i, e) in l.items.iter().enumerate() {
                if !matches!(go_on, Ok(true)) {
                    break;
                }
                let v = ev.eval_arg(e, &l.scope);
                go_on = piece(ev, i + 1, v);
            }
            go_on
        }
        None => {
            let mut go_on = Ok(true);
            for (i, e) in args.iter().enumerate() {
                if !matches!(go_on, Ok(true)) {
                    break;
                }
                let v = ev.eval_arg(e, scope);
                go_on = piece(ev, i, v);
            }
            go_on
        }
    };
    if let Err(v) = go_on {
        return v;
    }
    if undef && !defined {
        return Value::Undefined;
    }
    if !ev.charge_bytes(total as u64) {
        return Value::Error;
    }
    let mut buf = String::with_capacity(total);
    for p in &pieces {
        buf.push_str(p);
    }
    Value::from(buf)
}

pub fn strcat(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    concat(ev, args, scope, false)
}

pub fn join(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    concat(ev, args, scope, true)
}

fn change_case(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope, upper: bool) -> Value {
    if args.len() != 1 {
        return Value::Error;
    }
    match to_str(&ev.eval_arg(&args[0], scope)) {
        Ok(s) if !ev.charge_bytes(s.len() as u64) => Value::Error,
        // C's toupper/tolower in the C locale: ASCII letters only.
        Ok(mut s) => {
            if upper {
                s.make_ascii_uppercase();
            } else {
                s.make_ascii_lowercase();
            }
            Value::from(s)
        }
        Err(v) => v,
    }
}

pub fn to_upper(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    change_case(ev, args, scope, true)
}

pub fn to_lower(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    change_case(ev, args, scope, false)
}

/// `substr(s, offset [, length])`, Perl-like: a negative offset counts from
/// the end, and a negative length leaves that many characters off the end.
pub fn substr(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    if !(2..=3).contains(&args.len()) {
        return Value::Error;
    }
    let vals = super::eval_all(ev, args, scope);
    if vals.iter().any(Value::is_undefined) {
        return Value::Undefined;
    }
    let (Value::Str(s), Value::Int(off)) = (&vals[0], &vals[1]) else {
        return Value::Error;
    };
    let len = match vals.get(2) {
        None => 0,
        Some(Value::Int(l)) => *l,
        Some(_) => return Value::Error,
    };
    let bytes = s.as_bytes();
    let alen = bytes.len() as i64;
    let mut off = *off;
    if off < 0 {
        off = (alen + off).max(0);
    } else if off >= alen {
        off = alen;
    }
    let mut n = if len <= 0 {
        (alen - off + len).max(0)
    } else {
        len.min(alen - off)
    };
    // An explicit length of zero means an empty result.
    if vals.len() == 3 && len == 0 {
        n = 0;
    }
    // Cutting inside a character makes replacement characters (3 bytes
    // each, at most one per cut byte at each end).
    if !ev.charge_bytes(n as u64 + 12) {
        return Value::Error;
    }
    let part = &bytes[off as usize..(off + n) as usize];
    Value::from(String::from_utf8_lossy(part).into_owned())
}

fn compare_strings(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope, caseless: bool) -> Value {
    if args.len() != 2 {
        return Value::Error;
    }
    let a = ev.eval_arg(&args[0], scope);
    let b = ev.eval_arg(&args[1], scope);
    if a.is_undefined() || b.is_undefined() {
        return Value::Undefined;
    }
    let (Ok(a), Ok(b)) = (to_str(&a), to_str(&b)) else {
        return Value::Error;
    };
    let ord = if caseless {
        crate::eval::ops::strcase_cmp(&a, &b)
    } else {
        a.as_bytes().cmp(b.as_bytes())
    };
    Value::Int(match ord {
        Ordering::Less => -1,
        Ordering::Equal => 0,
        Ordering::Greater => 1,
    })
}

pub fn strcmp(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    compare_strings(ev, args, scope, false)
}

pub fn stricmp(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    compare_strings(ev, args, scope, true)
}

/// HTCondor's "natural" comparison (as `strverscmp`): runs of digits compare
/// as numbers, and more leading zeros sort first. The sign of the result is
/// what matters, but `versioncmp` returns it as it is.
pub(crate) fn natural_cmp(a: &[u8], b: &[u8]) -> i64 {
    let at = |s: &[u8], i: usize| s.get(i).copied().unwrap_or(0);
    let digit = |c: u8| c.is_ascii_digit();
    // First difference (the terminating NUL counts as a character).
    let mut i = 0;
    while at(a, i) != 0 && at(a, i) == at(b, i) {
        i += 1;
    }
    let (c1, c2) = (at(a, i), at(b, i));
    if c1 == c2 {
        return 0;
    }
    let diff = i64::from(c1 as i8) - i64::from(c2 as i8);
    // Back up to the start of a run of digits ending at the difference.
    let mut nb = i;
    while nb > 0 && digit(a[nb - 1]) {
        nb -= 1;
    }
    if nb == i && (!digit(c1) || !digit(c2)) {
        return diff;
    }
    let zeros_end = |s: &[u8]| {
        let mut z = nb;
        while at(s, z) == b'0' {
            z += 1;
        }
        // A final zero of a number is not a leading zero.
        if z > nb && !digit(at(s, z)) {
            z -= 1;
        }
        z
    };
    let (z1, z2) = (zeros_end(a), zeros_end(b));
    if z1 - nb != z2 - nb {
        return (z2 - nb) as i64 - (z1 - nb) as i64;
    }
    if z1 > nb {
        return diff;
    }
    let num_end = |s: &[u8], z: usize| {
        let mut e = z;
        while digit(at(s, e)) {
            e += 1;
        }
        e
    };
    let (e1, e2) = (num_end(a, z1), num_end(b, z2));
    if e1 != e2 {
        e1 as i64 - e2 as i64
    } else {
        diff
    }
}

/// The two version arguments as strings, or the result to give instead.
fn version_args(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Result<i64, Value> {
    if args.len() != 2 {
        return Err(Value::Error);
    }
    let a = ev.eval_arg(&args[0], scope);
    let b = ev.eval_arg(&args[1], scope);
    if a.is_undefined() || b.is_undefined() {
        return Err(Value::Undefined);
    }
    match (to_str(&a), to_str(&b)) {
        (Ok(a), Ok(b)) => Ok(natural_cmp(a.as_bytes(), b.as_bytes())),
        _ => Err(Value::Error),
    }
}

fn version_test(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope, f: fn(i64) -> bool) -> Value {
    match version_args(ev, args, scope) {
        Ok(r) => Value::Bool(f(r)),
        Err(v) => v,
    }
}

pub fn versioncmp(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    version_args(ev, args, scope).map_or_else(|v| v, Value::Int)
}
pub fn version_gt(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    version_test(ev, args, scope, |r| r > 0)
}
pub fn version_ge(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    version_test(ev, args, scope, |r| r >= 0)
}
pub fn version_lt(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    version_test(ev, args, scope, |r| r < 0)
}
pub fn version_le(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    version_test(ev, args, scope, |r| r <= 0)
}
pub fn version_eq(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    version_test(ev, args, scope, |r| r == 0)
}

/// `version_in_range(v, min, max)`: `min <= v <= max` as versions.
pub fn version_in_range(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    if args.len() != 3 {
        return Value::Error;
    }
    let vals = super::eval_all(ev, args, scope);
    if vals[1].is_undefined() || vals[2].is_undefined() {
        return Value::Undefined;
    }
    match (to_str(&vals[0]), to_str(&vals[1]), to_str(&vals[2])) {
        (Ok(v), Ok(lo), Ok(hi)) => Value::Bool(
            natural_cmp(lo.as_bytes(), v.as_bytes()) <= 0
                && natural_cmp(v.as_bytes(), hi.as_bytes()) <= 0,
        ),
        _ => Value::Error,
    }
}

/// `splitUserName("user@domain")` and `splitSlotName("slot@machine")`: always
/// two strings, split at the first `@`.
fn split_at(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope, slot: bool) -> Value {
    if args.len() != 1 {
        return Value::Error;
    }
    let Value::Str(s) = ev.eval_arg(&args[0], scope) else {
        return Value::Error;
    };
    let (a, b) = match s.split_once('@') {
        Some((a, b)) => (a, b),
        // Without an `@`, a user name has no domain and a slot name is all machine.
        None if slot => ("", &*s),
        None => (&*s, ""),
    };
    Value::built_list_of(vec![Value::str(a), Value::str(b)])
}

pub fn split_user_name(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    split_at(ev, args, scope, false)
}

pub fn split_slot_name(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    split_at(ev, args, scope, true)
}

/// `split(s [, separators])` into a list of strings (separators default to
/// comma, space and tab). Leading and trailing separators are ignored and a
/// run of white space, or white space around one other separator, is a single
/// split; but the same non-space separator twice in a row yields an empty item.
pub fn split(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    if !(1..=2).contains(&args.len()) {
        return Value::Error;
    }
    let s = ev.eval_arg(&args[0], scope);
    let seps = match args.get(1).map(|a| ev.eval_arg(a, scope)) {
        None => ", \t".to_string(),
        Some(Value::Str(x)) => x.to_string(),
        Some(_) => return Value::Error,
    };
    let Value::Str(s) = s else {
        return Value::Error;
    };
    // The items are counted, and charged, before any is made.
    let mut count = 0;
    split_spans(&s, seps.as_bytes(), |_, _| count += 1);
    if !ev.charge_items(count, s.len()) {
        return Value::Error;
    }
    Value::built_list_of(
        split_items(&s, seps.as_bytes())
            .into_iter()
            .map(Value::from)
            .collect(),
    )
}

fn split_items(s: &str, seps: &[u8]) -> Vec<String> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    split_spans(s, seps, |from, to| {
        out.push(String::from_utf8_lossy(&b[from..to]).into_owned())
    });
    out
}

/// Where the items of `split` are in `s`: calls `item` with each one's
/// start and end, in order.
fn split_spans(s: &str, seps: &[u8], mut item: impl FnMut(usize, usize)) {
    let b = s.as_bytes();
    let mut last = 0;
    if !seps.is_empty() {
        // The previous separator that was not white space.
        let mut prev: Option<u8> = None;
        for (ix, &c) in b.iter().enumerate() {
            if !seps.contains(&c) {
                continue;
            }
            if ix > last {
                item(last, ix);
            } else if prev == Some(c) && !c.is_ascii_whitespace() {
                item(ix, ix);
            }
            if !c.is_ascii_whitespace() {
                prev = Some(c);
            }
            last = ix + 1;
        }
    }
    if b.len() > last {
        item(last, b.len());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_rules() {
        assert_eq!(split_items("a,,b", b", \t"), vec!["a", "", "b"]);
        assert_eq!(split_items("a , b", b", \t"), vec!["a", "b"]);
        assert_eq!(split_items(",a,", b", \t"), vec!["a"]);
        assert_eq!(split_items("a b", b""), vec!["a b"]);
    }

    #[test]
    fn natural_order() {
        assert!(natural_cmp(b"1.10", b"1.9") > 0);
        assert!(natural_cmp(b"8.9.1", b"8.9.1") == 0);
        assert!(natural_cmp(b"1.0", b"1.0.0") < 0);
        assert!(natural_cmp(b"1.01", b"1.1") < 0);
        assert!(natural_cmp(b"abc", b"abd") < 0);
    }
}
