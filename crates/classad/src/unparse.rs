//! Printing expressions, values and ads exactly as HTCondor's unparser does.

use std::fmt::Write;

use crate::ad::ClassAd;
use crate::expr::Expr;
use crate::lexer::name_needs_quotes;
use crate::value::{AbsTime, Value};

/// Appends the canonical one-line form of `e`.
pub fn expr_into(out: &mut String, e: &Expr) {
    stacker::maybe_grow(32 * 1024, 1024 * 1024, || expr_node_into(out, e))
}

fn expr_node_into(out: &mut String, e: &Expr) {
    match e {
        Expr::Lit(v) => value_into(out, v),
        Expr::RelTimeLit(secs) => {
            out.push_str("relTime(\"");
            out.push_str(&crate::time::format_reltime(*secs));
            out.push_str("\")");
        }
        Expr::Attr(n) => name_into(out, n.as_str()),
        Expr::Absolute(n) => {
            out.push('.');
            name_into(out, n.as_str());
        }
        Expr::Select(base, n) => {
            expr_into(out, base);
            out.push('.');
            name_into(out, n.as_str());
        }
        Expr::Index(base, idx) => {
            expr_into(out, base);
            out.push('[');
            expr_into(out, idx);
            out.push(']');
        }
        Expr::Unary(op, x) => {
            out.push(' ');
            out.push_str(op.symbol());
            expr_into(out, x);
        }
        Expr::Binary(op, operands) => {
            let (l, r) = &**operands;
            expr_into(out, l);
            out.push(' ');
            out.push_str(op.symbol());
            out.push(' ');
            expr_into(out, r);
        }
        Expr::Cond(parts) => {
            let (c, t, f) = &**parts;
            expr_into(out, c);
            out.push_str(" ? ");
            expr_into(out, t);
            out.push_str(" : ");
            expr_into(out, f);
        }
        Expr::Elvis(a, b) => {
            expr_into(out, a);
            out.push_str(" ?: ");
            expr_into(out, b);
        }
        Expr::Paren(x) => {
            out.push('(');
            expr_into(out, x);
            out.push(')');
        }
        Expr::Call(c) => {
            out.push_str(&c.name);
            out.push('(');
            for (i, a) in c.args.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                expr_into(out, a);
            }
            out.push(')');
        }
        Expr::List(items) => list_into(out, items),
        Expr::Ad(ad) => ad_into(out, ad),
    }
}

fn list_into(out: &mut String, items: &[Expr]) {
    out.push_str("{ ");
    for (i, e) in items.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        expr_into(out, e);
    }
    out.push_str(" }");
}

/// `[ a = 1; b = 2 ]`, attributes in HTCondor's order.
pub fn ad_into(out: &mut String, ad: &ClassAd) {
    out.push_str("[ ");
    for (i, (n, e)) in ad.iter().enumerate() {
        if i > 0 {
            out.push_str("; ");
        }
        name_into(out, n.as_str());
        out.push_str(" = ");
        expr_into(out, e);
    }
    out.push_str(" ]");
}

/// An attribute name, quoted with `'...'` when it is not a plain identifier.
pub fn name_into(out: &mut String, name: &str) {
    if !name_needs_quotes(name) {
        out.push_str(name);
        return;
    }
    out.push('\'');
    escape_into(out, name, b'\'');
    out.push('\'');
}

/// Appends a value as a ClassAd literal.
pub fn value_into(out: &mut String, v: &Value) {
    match v {
        Value::Undefined => out.push_str("undefined"),
        Value::Error => out.push_str("error"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Int(i) => {
            let _ = write!(out, "{i}");
        }
        Value::Real(r) => real_into(out, *r),
        Value::Str(s) => string_into(out, s),
        Value::List(l) => list_into(out, &l.items),
        Value::Ad(a) => ad_into(out, &a.ad),
        Value::AbsTime(t) => {
            out.push_str("absTime(\"");
            out.push_str(&format_abstime(*t));
            out.push_str("\")");
        }
        Value::RelTime(secs) => {
            out.push_str("relTime(\"");
            out.push_str(&crate::time::format_reltime(*secs));
            out.push_str("\")");
        }
    }
}

pub fn format_abstime(t: AbsTime) -> String {
    crate::time::format_abstime(t)
}

/// A real as HTCondor prints it: `%.15E`, `0.0` for zero, and `real("INF")`
/// style for the non-finite values.
pub fn real_into(out: &mut String, r: f64) {
    if r.is_nan() {
        out.push_str("real(\"NaN\")");
    } else if r.is_infinite() {
        out.push_str(if r > 0.0 {
            "real(\"INF\")"
        } else {
            "real(\"-INF\")"
        });
    } else if r == 0.0 {
        out.push_str(if r.is_sign_negative() { "-0.0" } else { "0.0" });
    } else {
        out.push_str(&format_real_e(r));
    }
}

/// C's `%.15E`: one digit, fifteen decimals, and an exponent of at least two digits.
pub fn format_real_e(r: f64) -> String {
    let s = format!("{r:.15E}");
    let (mant, exp) = s.split_once('E').unwrap_or((&s, "0"));
    let (sign, digits) = match exp.strip_prefix('-') {
        Some(d) => ('-', d),
        None => ('+', exp),
    };
    format!("{mant}E{sign}{digits:0>2}")
}

/// A string literal with HTCondor's escapes; bytes outside printable ASCII
/// become three-digit octal escapes.
pub fn string_into(out: &mut String, s: &str) {
    out.push('"');
    escape_into(out, s, b'"');
    out.push('"');
}

fn escape_into(out: &mut String, s: &str, quote: u8) {
    for b in s.bytes() {
        match b {
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            b'\t' => out.push_str("\\t"),
            b'\r' => out.push_str("\\r"),
            0x07 => out.push_str("\\a"),
            0x08 => out.push_str("\\b"),
            0x0b => out.push_str("\\v"),
            0x0c => out.push_str("\\f"),
            _ if b == quote => {
                out.push('\\');
                out.push(b as char);
            }
            0x20..=0x7e => out.push(b as char),
            _ => {
                let _ = write!(out, "\\{b:03o}");
            }
        }
    }
}

/// The canonical text of an expression.
pub fn expr_to_string(e: &Expr) -> String {
    let mut s = String::new();
    expr_into(&mut s, e);
    s
}

/// The canonical text of a value.
pub fn value_to_string(v: &Value) -> String {
    let mut s = String::new();
    value_into(&mut s, v);
    s
}
