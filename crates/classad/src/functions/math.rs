//! Conversions (`int`, `real`, `string`, `bool`) and arithmetic functions
//! (`floor`, `ceiling`, `round`, `pow`, `quantize`, `random`).

use super::{c_cast, to_string_value};
use super::{to_int as int_of, to_real as real_of};
use crate::eval::{Evaluator, Scope};
use crate::expr::Expr;
use crate::value::Value;

/// The value of the single argument, or `None` for the wrong number of arguments.
fn one_arg(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Option<Value> {
    (args.len() == 1).then(|| ev.eval_arg(&args[0], scope))
}

/// `int(x)`: reals truncate toward zero, strings are read as numbers.
pub fn to_int(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    match one_arg(ev, args, scope) {
        Some(v) => int_of(&v).map_or_else(|e| e, Value::Int),
        None => Value::Error,
    }
}

pub fn to_real(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    match one_arg(ev, args, scope) {
        Some(v) => real_of(&v).map_or_else(|e| e, Value::Real),
        None => Value::Error,
    }
}

pub fn to_string(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    match one_arg(ev, args, scope) {
        Some(v @ (Value::Str(_) | Value::Undefined | Value::Error)) => v,
        // Printing a list or an ad: as long as its text, charged once made.
        Some(v) => match to_string_value(&v) {
            Value::Str(s) if !ev.charge_bytes(s.len() as u64) => Value::Error,
            other => other,
        },
        None => Value::Error,
    }
}

/// `bool(x)`: numbers are true when non-zero; only the strings "true" and
/// "false" (any case) convert, other strings give UNDEFINED.
pub fn to_bool(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    let Some(v) = one_arg(ev, args, scope) else {
        return Value::Error;
    };
    match v {
        Value::Undefined => Value::Undefined,
        Value::Bool(_) => v,
        Value::Int(i) => Value::Bool(i != 0),
        Value::Real(r) => Value::Bool(r != 0.0),
        Value::RelTime(r) => Value::Bool(r.trunc() != 0.0),
        Value::Str(s) if s.eq_ignore_ascii_case("true") => Value::Bool(true),
        Value::Str(s) if s.eq_ignore_ascii_case("false") => Value::Bool(false),
        Value::Str(_) => Value::Undefined,
        _ => Value::Error,
    }
}

/// floor/ceiling/round: integers pass through; anything else converts to a
/// real (ERROR if it cannot, UNDEFINED included) and rounds to an integer.
fn do_round(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope, f: fn(f64) -> f64) -> Value {
    match one_arg(ev, args, scope) {
        Some(Value::Int(i)) => Value::Int(i),
        Some(v) => match real_of(&v) {
            Ok(r) => Value::Int(c_cast(f(r))),
            Err(_) => Value::Error,
        },
        None => Value::Error,
    }
}

pub fn floor(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    do_round(ev, args, scope, f64::floor)
}

pub fn ceiling(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    do_round(ev, args, scope, f64::ceil)
}

/// `round(x)` rounds halves to even, as C's `rint` does by default.
pub fn round(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    do_round(ev, args, scope, f64::round_ties_even)
}

/// `pow(base, exponent)`: an integer for an integer base and non-negative
/// integer exponent (computed in floating point and rounded, so overflow
/// wraps the way C's cast does), else a real.
pub fn pow(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    if args.len() != 2 {
        return Value::Error;
    }
    let a = ev.eval_arg(&args[0], scope);
    let b = ev.eval_arg(&args[1], scope);
    if let (Value::Int(x), Value::Int(y)) = (&a, &b) {
        if *y >= 0 {
            return Value::Int(c_cast((*x as f64).powf(*y as f64) + 0.5));
        }
    }
    match (real_of(&a), real_of(&b)) {
        (Ok(x), Ok(y)) => Value::Real(x.powf(y)),
        _ => Value::Error,
    }
}

/// `quantize(x, q)`: `x` rounded up to a multiple of `q`. With a list, the
/// first element at least `x`, or else a multiple of the last element.
/// An integer `x` and integer step give an integer.
pub fn quantize(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    if args.len() != 2 {
        return Value::Error;
    }
    let arg = ev.eval_arg(&args[0], scope);
    let mut step = ev.eval_arg(&args[1], scope);
    let Ok(x) = real_of(&arg) else {
        return Value::Error;
    };
    let rstep;
    if let Value::List(l) = &step {
        // An empty list means "don't quantize".
        let mut last = Value::Real(0.0);
        let mut rlast = 0.0;
        for e in l.items.iter() {
            let v = ev.eval_arg(e, &l.scope);
            match real_of(&v) {
                Ok(r) if r >= x => return v,
                Ok(r) => {
                    rlast = r;
                    last = v;
                }
                Err(_) => return Value::Error,
            }
        }
        step = last;
        rstep = rlast;
    } else {
        match real_of(&step) {
            Ok(r) => rstep = r,
            Err(_) => return Value::Error,
        }
    }
    if let Value::Int(istep) = step {
        if istep == 0 {
            return arg;
        }
        if let Value::Int(i) = arg {
            return Value::Int(
                i.wrapping_add(istep - 1)
                    .wrapping_div(istep)
                    .wrapping_mul(istep),
            );
        }
        return Value::Real((x / istep as f64).ceil() * istep as f64);
    }
    if rstep.abs() <= 1e-8 {
        return arg;
    }
    Value::Real((x / rstep).ceil() * rstep)
}

/// `random([max])`: an integer in `[0, max)` for an integer max, a real in
/// `[0, max)` for a real max (1.0 when none is given).
pub fn random(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    let max = match args.len() {
        0 => Value::Real(1.0),
        1 => ev.eval_arg(&args[0], scope),
        _ => return Value::Error,
    };
    match max {
        Value::Int(m) if m > 0 => Value::Int((ev.next_random() % m as u64) as i64),
        Value::Real(m) if m > 0.0 => {
            // 53 random bits make a uniform real in [0, 1).
            let unit = (ev.next_random() >> 11) as f64 / (1u64 << 53) as f64;
            Value::Real(m * unit)
        }
        _ => Value::Error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn int_conversion_of_times() {
        let t = Value::AbsTime(crate::value::AbsTime { secs: 5, offset: 0 });
        assert_eq!(to_int_value(&t), Some(5));
        assert_eq!(to_int_value(&Value::RelTime(2.7)), Some(2));
    }

    fn to_int_value(v: &Value) -> Option<i64> {
        int_of(v).ok()
    }
}
