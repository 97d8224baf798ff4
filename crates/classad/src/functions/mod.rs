//! The built-in function library HTCondor documents.
//!
//! Each built-in receives its arguments unevaluated, so that functions such as
//! `ifThenElse` evaluate only what they need. Function names are
//! case-insensitive. A name missing from [`TABLE`] is not a function: calling
//! it gives ERROR, as in HTCondor.
//!
//! The modules follow HTCondor's grouping: type predicates, lists, strings,
//! string lists (comma-separated strings), regular expressions, maths and
//! conversions, time, and the rest.

mod lists;
mod math;
mod misc;
mod regex;
mod stringlist;
mod strings;
mod time;
mod types;

use crate::eval::{Evaluator, Scope};
use crate::expr::Expr;
use crate::unparse::value_to_string;
use crate::value::Value;

/// A built-in function: the evaluator, the argument expressions, and the scope
/// the call is evaluated in.
pub type Builtin = fn(&mut Evaluator<'_>, &[Expr], &Scope) -> Value;

/// The built-in named `name` (any case), if there is one.
pub fn lookup(name: &str) -> Option<Builtin> {
    // Compare case-insensitively in place: no lowercase copy per call parsed.
    let key = name.bytes().map(|b| b.to_ascii_lowercase());
    TABLE
        .binary_search_by(|(n, _)| n.bytes().cmp(key.clone()))
        .ok()
        .map(|i| TABLE[i].1)
}

/// Every built-in, sorted by lowercase name (a test checks the order).
static TABLE: &[(&str, Builtin)] = &[
    ("abstime", time::abs_time),
    ("allcompare", lists::all_compare),
    ("anycompare", lists::any_compare),
    ("argstolist", misc::args_to_list),
    ("avg", lists::avg),
    ("bool", math::to_bool),
    ("ceil", math::ceiling),
    ("ceiling", math::ceiling),
    ("countmatches", lists::count_matches),
    ("currenttime", time::current_time),
    ("daytime", time::day_time),
    ("debug", misc::debug),
    ("envv1tov2", misc::env_v1_to_v2),
    ("eval", misc::eval),
    ("evalineachcontext", lists::eval_in_each_context),
    ("floor", math::floor),
    ("formattime", time::format_time),
    ("getdayofmonth", time::get_day_of_month),
    ("getdayofweek", time::get_day_of_week),
    ("getdayofyear", time::get_day_of_year),
    ("getdays", time::get_days),
    ("gethours", time::get_hours),
    ("getminutes", time::get_minutes),
    ("getmonth", time::get_month),
    ("getseconds", time::get_seconds),
    ("getyear", time::get_year),
    ("identicalmember", lists::identical_member),
    ("ifthenelse", misc::if_then_else),
    ("int", math::to_int),
    ("interval", time::interval),
    ("isabstime", types::is_abstime),
    ("isboolean", types::is_boolean),
    ("isclassad", types::is_classad),
    ("iserror", types::is_error),
    ("isinteger", types::is_integer),
    ("islist", types::is_list),
    ("isreal", types::is_real),
    ("isreltime", types::is_reltime),
    ("isstring", types::is_string),
    ("isundefined", types::is_undefined),
    ("join", strings::join),
    ("listtoargs", misc::list_to_args),
    ("max", lists::max),
    ("member", lists::member),
    ("mergeenvironment", misc::merge_environment),
    ("min", lists::min),
    ("pow", math::pow),
    ("quantize", math::quantize),
    ("random", math::random),
    ("real", math::to_real),
    ("regexp", regex::regexp),
    ("regexpmember", regex::regexp_member),
    ("regexps", regex::regexps),
    ("reltime", time::rel_time),
    ("replace", regex::replace),
    ("replaceall", regex::replace_all),
    ("round", math::round),
    ("size", lists::size),
    ("split", strings::split),
    ("splitslotname", strings::split_slot_name),
    ("splittime", time::split_time),
    ("splitusername", strings::split_user_name),
    ("strcat", strings::strcat),
    ("strcmp", strings::strcmp),
    ("stricmp", strings::stricmp),
    ("string", math::to_string),
    ("stringlist_regexpmember", stringlist::regexp_member),
    ("stringlistavg", stringlist::avg),
    ("stringlistimember", stringlist::imember),
    ("stringlistisubsetmatch", stringlist::isubset_match),
    ("stringlistmax", stringlist::max),
    ("stringlistmember", stringlist::member),
    ("stringlistmin", stringlist::min),
    ("stringlistsintersect", stringlist::intersect),
    ("stringlistsize", stringlist::size),
    ("stringlistsubsetmatch", stringlist::subset_match),
    ("stringlistsum", stringlist::sum),
    ("substr", strings::substr),
    ("sum", lists::sum),
    ("time", time::time),
    ("timezoneoffset", time::time_zone_offset),
    ("tolower", strings::to_lower),
    ("toupper", strings::to_upper),
    ("unparse", misc::unparse),
    ("userhome", misc::user_home),
    ("usermap", misc::user_map),
    ("version_in_range", strings::version_in_range),
    ("versioncmp", strings::versioncmp),
    ("versioneq", strings::version_eq),
    ("versionge", strings::version_ge),
    ("versiongt", strings::version_gt),
    ("versionle", strings::version_le),
    ("versionlt", strings::version_lt),
];

// ---------------------------------------------------------------------------
// Helpers shared by the modules: argument evaluation and HTCondor's value
// conversions (`convertValueToStringValue` and friends).
// ---------------------------------------------------------------------------

/// Evaluates every argument, in order.
fn eval_all(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Vec<Value> {
    args.iter().map(|a| ev.eval_arg(a, scope)).collect()
}

/// HTCondor's string conversion: strings as they are, times in their literal
/// text, everything else (numbers, booleans, lists, ads) as it prints.
/// UNDEFINED and ERROR stay what they are.
fn to_string_value(v: &Value) -> Value {
    match v {
        Value::Undefined => Value::Undefined,
        Value::Error => Value::Error,
        Value::Str(_) => v.clone(),
        Value::AbsTime(t) => Value::from(crate::time::format_abstime(*t)),
        Value::RelTime(r) => Value::from(crate::time::format_reltime(*r)),
        _ => Value::from(value_to_string(v)),
    }
}

/// [`to_string_value`] as a Rust string, or the UNDEFINED/ERROR it gave.
fn to_str(v: &Value) -> Result<String, Value> {
    match to_string_value(v) {
        Value::Str(s) => Ok(s.to_string()),
        other => Err(other),
    }
}

/// HTCondor's real conversion: numbers, booleans, times, and strings read
/// with C's `strtod` (a numeric prefix is enough). `Err` carries the
/// UNDEFINED or ERROR the conversion gives instead.
fn to_real(v: &Value) -> Result<f64, Value> {
    match v {
        Value::Undefined => Err(Value::Undefined),
        Value::Bool(b) => Ok(if *b { 1.0 } else { 0.0 }),
        Value::Int(i) => Ok(*i as f64),
        Value::Real(r) => Ok(*r),
        Value::AbsTime(t) => Ok(t.secs as f64),
        // HTCondor reads a relative time through a whole-second `time_t`.
        Value::RelTime(r) => Ok(r.trunc()),
        Value::Str(s) => match strtod(s) {
            Some((r, _)) => Ok(r),
            None => Err(Value::Error),
        },
        _ => Err(Value::Error),
    }
}

/// HTCondor's integer conversion (reals truncate; strings go through `strtod`).
fn to_int(v: &Value) -> Result<i64, Value> {
    match v {
        Value::Int(i) => Ok(*i),
        Value::AbsTime(t) => Ok(t.secs),
        _ => to_real(v).map(c_cast),
    }
}

/// C's `(long long)` cast of a double as x86-64 performs it: values out of
/// range (and NaN) become `i64::MIN`.
fn c_cast(r: f64) -> i64 {
    const LIMIT: f64 = 9_223_372_036_854_775_808.0; // 2^63
    if r.is_nan() || !(-LIMIT..LIMIT).contains(&r) {
        i64::MIN
    } else {
        r as i64
    }
}

/// C's `strtod`: the number at the start of `s` (after white space) and how
/// many bytes it used, or `None` when nothing parses. Accepts decimal and
/// hexadecimal forms, `inf`, `infinity` and `nan`.
fn strtod(s: &str) -> Option<(f64, usize)> {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c) {
        i += 1;
    }
    let neg = match b.get(i) {
        Some(b'-') => {
            i += 1;
            true
        }
        Some(b'+') => {
            i += 1;
            false
        }
        _ => false,
    };
    let sign = if neg { -1.0 } else { 1.0 };
    let rest = &s[i..];
    let lower: String = rest
        .chars()
        .take(8)
        .collect::<String>()
        .to_ascii_lowercase();
    if lower.starts_with("infinity") {
        return Some((sign * f64::INFINITY, i + 8));
    }
    if lower.starts_with("inf") {
        return Some((sign * f64::INFINITY, i + 3));
    }
    if lower.starts_with("nan") {
        let mut end = i + 3;
        // `nan(chars)` is one token.
        if b.get(end) == Some(&b'(') {
            if let Some(close) = s[end..].find(')') {
                let inner = &s[end + 1..end + close];
                if inner
                    .bytes()
                    .all(|c| c.is_ascii_alphanumeric() || c == b'_')
                {
                    end += close + 1;
                }
            }
        }
        return Some((f64::NAN, end));
    }
    if (lower.starts_with("0x"))
        && b.get(i + 2)
            .is_some_and(|c| c.is_ascii_hexdigit() || *c == b'.')
    {
        if let Some((v, used)) = hex_float(&b[i + 2..]) {
            return Some((sign * v, i + 2 + used));
        }
    }
    // Decimal: digits [. digits] [e [sign] digits]
    let mut j = i;
    let mut digits = 0;
    while j < b.len() && b[j].is_ascii_digit() {
        j += 1;
        digits += 1;
    }
    if j < b.len() && b[j] == b'.' {
        j += 1;
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
            digits += 1;
        }
    }
    if digits == 0 {
        return None;
    }
    if j < b.len() && (b[j] == b'e' || b[j] == b'E') {
        let mut k = j + 1;
        if k < b.len() && (b[k] == b'+' || b[k] == b'-') {
            k += 1;
        }
        if k < b.len() && b[k].is_ascii_digit() {
            while k < b.len() && b[k].is_ascii_digit() {
                k += 1;
            }
            j = k;
        }
    }
    let v: f64 = s[i..j].parse().ok()?;
    Some((sign * v, j))
}

/// The hexadecimal part of a `strtod` number (after `0x`): mantissa digits
/// with an optional point, then an optional binary exponent `p`.
fn hex_float(b: &[u8]) -> Option<(f64, usize)> {
    let mut i = 0;
    let mut mant = 0.0f64;
    let mut digits = 0;
    let mut scale = 0i32;
    while i < b.len() && b[i].is_ascii_hexdigit() {
        mant = mant * 16.0 + f64::from((b[i] as char).to_digit(16)?);
        i += 1;
        digits += 1;
    }
    if i < b.len() && b[i] == b'.' {
        i += 1;
        while i < b.len() && b[i].is_ascii_hexdigit() {
            mant = mant * 16.0 + f64::from((b[i] as char).to_digit(16)?);
            scale -= 4;
            i += 1;
            digits += 1;
        }
    }
    if digits == 0 {
        return None;
    }
    if i < b.len() && (b[i] == b'p' || b[i] == b'P') {
        let mut k = i + 1;
        let mut eneg = false;
        if k < b.len() && (b[k] == b'+' || b[k] == b'-') {
            eneg = b[k] == b'-';
            k += 1;
        }
        if k < b.len() && b[k].is_ascii_digit() {
            let mut e = 0i32;
            while k < b.len() && b[k].is_ascii_digit() {
                e = e.saturating_mul(10).saturating_add(i32::from(b[k] - b'0'));
                k += 1;
            }
            scale = scale.saturating_add(if eneg { -e } else { e });
            i = k;
        }
    }
    Some((mant * 2f64.powi(scale), i))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_sorted_and_lowercase() {
        for w in TABLE.windows(2) {
            assert!(w[0].0 < w[1].0, "{} must sort before {}", w[0].0, w[1].0);
        }
        for (n, _) in TABLE {
            assert_eq!(*n, n.to_ascii_lowercase());
        }
        assert!(lookup("StrCat").is_some());
        assert!(lookup("nosuchfunction").is_none());
    }

    #[test]
    fn strtod_reads_prefixes() {
        assert_eq!(strtod("12abc"), Some((12.0, 2)));
        assert_eq!(strtod("  2.5 "), Some((2.5, 5)));
        assert_eq!(strtod("0x10"), Some((16.0, 4)));
        assert_eq!(strtod("1e3"), Some((1000.0, 3)));
        assert_eq!(strtod("1e"), Some((1.0, 1)));
        assert_eq!(strtod("-inf"), Some((f64::NEG_INFINITY, 4)));
        assert_eq!(strtod("abc"), None);
        assert_eq!(strtod("."), None);
    }

    #[test]
    fn c_cast_overflows_to_min() {
        assert_eq!(c_cast(9.99e18), i64::MIN);
        assert_eq!(c_cast(f64::NAN), i64::MIN);
        assert_eq!(c_cast(-3.7), -3);
    }
}
