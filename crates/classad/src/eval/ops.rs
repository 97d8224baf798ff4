//! Operators on values, with HTCondor's strictness rules.
//!
//! Every strict operator gives ERROR if either side is ERROR, else UNDEFINED if
//! either side is UNDEFINED. The logical operators are not strict; they live in
//! the evaluator because they short-circuit.

use std::cmp::Ordering;

use crate::expr::{BinOp, UnOp};
use crate::value::{AbsTime, Value};

/// Strings at least this long are compared out of line, where what reading
/// them costs is counted for the evaluation's budget.
const LONG_STRING: usize = 64;

/// A string compared by an operator costs a step per this many bytes (of the
/// shorter one): ordering folds case byte by byte.
const STRING_BYTES_PER_STEP: usize = 8;

/// Error dominates, then undefined.
#[inline]
fn strict(a: &Value, b: &Value) -> Option<Value> {
    match (a, b) {
        (Value::Error, _) | (_, Value::Error) => Some(Value::Error),
        (Value::Undefined, _) | (_, Value::Undefined) => Some(Value::Undefined),
        _ => None,
    }
}

/// A number for arithmetic: booleans count as integers.
#[derive(Clone, Copy)]
enum Num {
    I(i64),
    R(f64),
}

#[inline]
fn num(v: &Value) -> Option<Num> {
    match v {
        Value::Int(i) => Some(Num::I(*i)),
        Value::Real(r) => Some(Num::R(*r)),
        Value::Bool(b) => Some(Num::I(i64::from(*b))),
        _ => None,
    }
}

/// A real result that overflowed from finite operands is an error, as in HTCondor.
#[inline]
fn real_result(r: f64, a: f64, b: f64) -> Value {
    if r.is_infinite() && a.is_finite() && b.is_finite() {
        Value::Error
    } else {
        Value::Real(r)
    }
}

#[inline]
pub fn binary(op: BinOp, a: &Value, b: &Value) -> Value {
    binary_counted(op, a, b, &mut 0)
}

/// As [`binary`], taking what reading long strings costs from `left` (the
/// steps left of the evaluator's budget).
#[inline]
pub fn binary_counted(op: BinOp, a: &Value, b: &Value, left: &mut i64) -> Value {
    // The common cases in policy expressions: two numbers compared or
    // combined. Everything else, and every corner case, goes the long way.
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => {
            let (x, y) = (*x, *y);
            match op {
                BinOp::Lt => return Value::Bool(x < y),
                BinOp::Le => return Value::Bool(x <= y),
                BinOp::Gt => return Value::Bool(x > y),
                BinOp::Ge => return Value::Bool(x >= y),
                BinOp::Eq => return Value::Bool(x == y),
                BinOp::Ne => return Value::Bool(x != y),
                BinOp::Add => return Value::Int(x.wrapping_add(y)),
                BinOp::Sub => return Value::Int(x.wrapping_sub(y)),
                BinOp::Mul => return Value::Int(x.wrapping_mul(y)),
                _ => {}
            }
        }
        (Value::Str(x), Value::Str(y)) => {
            if x.len() >= LONG_STRING && y.len() >= LONG_STRING {
                return long_strings(op, a, b, left);
            }
            if matches!(op, BinOp::Eq | BinOp::Ne) {
                // Case-insensitive equality needs no ordering.
                return Value::Bool(x.eq_ignore_ascii_case(y) == (op == BinOp::Eq));
            }
        }
        (Value::Real(_) | Value::Int(_), Value::Real(_) | Value::Int(_)) => {
            let x = a.as_number().unwrap_or(0.0);
            let y = b.as_number().unwrap_or(0.0);
            // Ordered comparisons are false with a NaN, as in compare().
            match op {
                BinOp::Lt => return Value::Bool(x < y),
                BinOp::Le => return Value::Bool(x <= y),
                BinOp::Gt => return Value::Bool(x > y),
                BinOp::Ge => return Value::Bool(x >= y),
                BinOp::Add | BinOp::Sub | BinOp::Mul => {
                    let r = match op {
                        BinOp::Add => x + y,
                        BinOp::Sub => x - y,
                        _ => x * y,
                    };
                    return real_result(r, x, y);
                }
                _ => {}
            }
        }
        _ => {}
    }
    binary_general(op, a, b)
}

/// An operator on two long strings: what reading them costs is counted.
#[cold]
#[inline(never)]
fn long_strings(op: BinOp, a: &Value, b: &Value, left: &mut i64) -> Value {
    if let (Value::Str(x), Value::Str(y)) = (a, b) {
        *left = left.saturating_sub((x.len().min(y.len()) / STRING_BYTES_PER_STEP) as i64);
    }
    binary_general(op, a, b)
}

#[inline(never)]
fn binary_general(op: BinOp, a: &Value, b: &Value) -> Value {
    match op {
        BinOp::MetaEq => return identical(a, b),
        BinOp::MetaNe => {
            return match identical(a, b) {
                Value::Bool(x) => Value::Bool(!x),
                other => other,
            }
        }
        _ => {}
    }
    if let Some(v) = strict(a, b) {
        return v;
    }
    match op {
        BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Mod => arith(op, a, b),
        BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => compare(op, a, b),
        BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor | BinOp::Shl | BinOp::Shr | BinOp::UShr => {
            bitwise(op, a, b)
        }
        // Logical operators are evaluated by the evaluator (short-circuit);
        // on values alone they follow the same rules.
        BinOp::And | BinOp::Or => logical(op, a, b),
        BinOp::MetaEq | BinOp::MetaNe => unreachable!(),
    }
}

fn logical(op: BinOp, a: &Value, b: &Value) -> Value {
    let (x, y) = (a.as_bool(), b.as_bool());
    match (op, x, y) {
        (_, None, _) | (_, _, None) => Value::Error,
        (BinOp::And, Some(x), Some(y)) => Value::Bool(x && y),
        (_, Some(x), Some(y)) => Value::Bool(x || y),
    }
}

fn arith(op: BinOp, a: &Value, b: &Value) -> Value {
    if let (Some(x), Some(y)) = (num(a), num(b)) {
        return match (x, y) {
            (Num::I(x), Num::I(y)) => int_arith(op, x, y),
            (x, y) => {
                let x = match x {
                    Num::I(i) => i as f64,
                    Num::R(r) => r,
                };
                let y = match y {
                    Num::I(i) => i as f64,
                    Num::R(r) => r,
                };
                match op {
                    BinOp::Add => real_result(x + y, x, y),
                    BinOp::Sub => real_result(x - y, x, y),
                    BinOp::Mul => real_result(x * y, x, y),
                    BinOp::Div => real_result(x / y, x, y),
                    // HTCondor has no real modulo.
                    _ => Value::Error,
                }
            }
        };
    }
    time_arith(op, a, b)
}

fn int_arith(op: BinOp, x: i64, y: i64) -> Value {
    Value::Int(match op {
        BinOp::Add => x.wrapping_add(y),
        BinOp::Sub => x.wrapping_sub(y),
        BinOp::Mul => x.wrapping_mul(y),
        BinOp::Div => {
            if y == 0 {
                return Value::Error;
            }
            if x == i64::MIN && y == -1 {
                i64::MAX
            } else {
                x / y
            }
        }
        BinOp::Mod => {
            if y == 0 {
                return Value::Error;
            }
            x.wrapping_rem(y)
        }
        _ => unreachable!(),
    })
}

fn time_arith(op: BinOp, a: &Value, b: &Value) -> Value {
    use Value::{AbsTime as A, RelTime as R};
    match (op, a, b) {
        (BinOp::Add, A(t), R(d)) | (BinOp::Add, R(d), A(t)) => Value::AbsTime(AbsTime {
            secs: t.secs.wrapping_add(*d as i64),
            offset: t.offset,
        }),
        (BinOp::Sub, A(t), R(d)) => Value::AbsTime(AbsTime {
            secs: t.secs.wrapping_sub(*d as i64),
            offset: t.offset,
        }),
        (BinOp::Sub, A(x), A(y)) => Value::RelTime((x.secs.wrapping_sub(y.secs)) as f64),
        (BinOp::Add, R(x), R(y)) => Value::RelTime(x + y),
        (BinOp::Sub, R(x), R(y)) => Value::RelTime(x - y),
        (BinOp::Mul, R(x), n) | (BinOp::Mul, n, R(x)) => match num(n) {
            Some(Num::I(i)) => Value::RelTime(x * i as f64),
            Some(Num::R(r)) => Value::RelTime(x * r),
            None => Value::Error,
        },
        (BinOp::Div, R(x), n) => match num(n) {
            Some(Num::I(0)) => Value::Error,
            Some(Num::I(i)) => Value::RelTime(x / i as f64),
            Some(Num::R(r)) => {
                if r == 0.0 {
                    Value::Error
                } else {
                    Value::RelTime(x / r)
                }
            }
            None => Value::Error,
        },
        _ => Value::Error,
    }
}

/// Case-insensitive byte comparison, as `strcasecmp`.
pub fn strcase_cmp(a: &str, b: &str) -> Ordering {
    a.bytes()
        .map(|c| c.to_ascii_lowercase())
        .cmp(b.bytes().map(|c| c.to_ascii_lowercase()))
}

fn ordering_result(op: BinOp, ord: Option<Ordering>) -> Value {
    let Some(ord) = ord else {
        // NaN: every ordered comparison is false, != is true.
        return Value::Bool(op == BinOp::Ne);
    };
    Value::Bool(match op {
        BinOp::Eq => ord == Ordering::Equal,
        BinOp::Ne => ord != Ordering::Equal,
        BinOp::Lt => ord == Ordering::Less,
        BinOp::Le => ord != Ordering::Greater,
        BinOp::Gt => ord == Ordering::Greater,
        BinOp::Ge => ord != Ordering::Less,
        _ => unreachable!(),
    })
}

/// `== != < <= > >=` on two values that are neither ERROR nor UNDEFINED.
pub fn compare(op: BinOp, a: &Value, b: &Value) -> Value {
    if let Some(v) = strict(a, b) {
        return v;
    }
    if let (Some(x), Some(y)) = (num(a), num(b)) {
        let ord = match (x, y) {
            (Num::I(x), Num::I(y)) => Some(x.cmp(&y)),
            (Num::I(x), Num::R(y)) => (x as f64).partial_cmp(&y),
            (Num::R(x), Num::I(y)) => x.partial_cmp(&(y as f64)),
            (Num::R(x), Num::R(y)) => x.partial_cmp(&y),
        };
        return ordering_result(op, ord);
    }
    match (a, b) {
        (Value::Str(x), Value::Str(y)) => ordering_result(op, Some(strcase_cmp(x, y))),
        (Value::AbsTime(x), Value::AbsTime(y)) => {
            ordering_result(op, Some({ x.secs }.cmp(&{ y.secs })))
        }
        (Value::RelTime(x), Value::RelTime(y)) => ordering_result(op, x.partial_cmp(y)),
        _ => Value::Error,
    }
}

/// `=?=`: same type and same value; strings compare case-sensitively.
///
/// HTCondor's rule (`Operation::doComparison`): values of different types
/// are not identical (`false`, never ERROR), and two undefined or two error
/// values are. Two lists, or two nested ads, are not compared at all: the
/// answer is ERROR. A list a function built (`split(...)`) is a type apart
/// from a list written in an expression (see `ListData::built`), so those
/// two are simply different (`false`). Absolute times are identical only if
/// they name the same instant in the same zone offset.
pub fn identical(a: &Value, b: &Value) -> Value {
    Value::Bool(match (a, b) {
        (Value::List(x), Value::List(y)) => {
            if x.is_built() != y.is_built() {
                false
            } else {
                return Value::Error;
            }
        }
        (Value::Ad(_), Value::Ad(_)) => return Value::Error,
        (Value::Undefined, Value::Undefined) | (Value::Error, Value::Error) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Int(x), Value::Int(y)) => x == y,
        (Value::Real(x), Value::Real(y)) => x == y,
        (Value::Str(x), Value::Str(y)) => x == y,
        (Value::AbsTime(x), Value::AbsTime(y)) => x == y,
        (Value::RelTime(x), Value::RelTime(y)) => x == y,
        _ => false,
    })
}

fn bitwise(op: BinOp, a: &Value, b: &Value) -> Value {
    let (Value::Int(x), Value::Int(y)) = (a, b) else {
        return Value::Error;
    };
    let (x, y) = (*x, *y);
    Value::Int(match op {
        BinOp::BitAnd => x & y,
        BinOp::BitOr => x | y,
        BinOp::BitXor => x ^ y,
        // Shift counts wrap modulo 64, as on the hardware HTCondor runs on.
        BinOp::Shl => x.wrapping_shl(y as u32),
        BinOp::Shr => x.wrapping_shr(y as u32),
        BinOp::UShr => ((x as u64).wrapping_shr(y as u32)) as i64,
        _ => unreachable!(),
    })
}

pub fn unary(op: UnOp, v: &Value) -> Value {
    match v {
        Value::Error => return Value::Error,
        Value::Undefined => return Value::Undefined,
        _ => {}
    }
    match (op, v) {
        (UnOp::Neg, Value::Int(i)) => Value::Int(i.wrapping_neg()),
        (UnOp::Neg, Value::Real(r)) => Value::Real(-r),
        (UnOp::Neg, Value::RelTime(r)) => Value::RelTime(-r),
        (UnOp::Plus, Value::Int(_) | Value::Real(_) | Value::RelTime(_)) => v.clone(),
        (UnOp::Not, Value::Bool(b)) => Value::Bool(!b),
        (UnOp::Not, Value::Int(i)) => Value::Bool(*i == 0),
        (UnOp::Not, Value::Real(r)) => Value::Bool(*r == 0.0),
        (UnOp::BitNot, Value::Int(i)) => Value::Int(!i),
        _ => Value::Error,
    }
}
