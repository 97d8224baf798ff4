//! Printing expressions, values and ads exactly as HTCondor's unparser does.

use std::fmt::Write;

use crate::ad::ClassAd;
use crate::expr::Expr;
use crate::lexer::name_needs_quotes;
use crate::value::{AbsTime, Value};

/// Which of HTCondor's two ad syntaxes a printing is for. They differ only in
/// strings: new syntax escapes backslashes and control characters, old syntax
/// (`Name = expr` lines, as `condor_q -l` prints) escapes only the quote.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Style {
    New,
    Old,
}

/// Appends the canonical one-line form of `e`.
pub fn expr_into(out: &mut String, e: &Expr) {
    styled_expr_into(out, e, Style::New)
}

fn styled_expr_into(out: &mut String, e: &Expr, style: Style) {
    stacker::maybe_grow(32 * 1024, 1024 * 1024, || expr_node_into(out, e, style))
}

fn expr_node_into(out: &mut String, e: &Expr, style: Style) {
    match e {
        Expr::Lit(v) => styled_value_into(out, v, style),
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
            styled_expr_into(out, base, style);
            out.push('.');
            name_into(out, n.as_str());
        }
        Expr::Index(base, idx) => {
            styled_expr_into(out, base, style);
            out.push('[');
            styled_expr_into(out, idx, style);
            out.push(']');
        }
        Expr::Unary(op, x) => {
            out.push(' ');
            out.push_str(op.symbol());
            styled_expr_into(out, x, style);
        }
        Expr::Binary(op, operands) => {
            let (l, r) = &**operands;
            styled_expr_into(out, l, style);
            out.push(' ');
            out.push_str(op.symbol());
            out.push(' ');
            styled_expr_into(out, r, style);
        }
        Expr::Cond(parts) => {
            let (c, t, f) = &**parts;
            styled_expr_into(out, c, style);
            out.push_str(" ? ");
            styled_expr_into(out, t, style);
            out.push_str(" : ");
            styled_expr_into(out, f, style);
        }
        Expr::Elvis(a, b) => {
            styled_expr_into(out, a, style);
            out.push_str(" ?: ");
            styled_expr_into(out, b, style);
        }
        Expr::Paren(x) => {
            out.push('(');
            styled_expr_into(out, x, style);
            out.push(')');
        }
        Expr::Call(c) => {
            out.push_str(&c.name);
            out.push('(');
            for (i, a) in c.args.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                styled_expr_into(out, a, style);
            }
            out.push(')');
        }
        Expr::List(items) => list_into(out, items, style),
        Expr::Folded(f) => styled_expr_into(out, &f.expr, style),
        Expr::Ad(ad) => styled_ad_into(out, ad, style),
    }
}

fn list_into(out: &mut String, items: &[Expr], style: Style) {
    out.push_str("{ ");
    for (i, e) in items.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        styled_expr_into(out, e, style);
    }
    out.push_str(" }");
}

/// `[ a = 1; b = 2 ]`, attributes in HTCondor's order.
pub fn ad_into(out: &mut String, ad: &ClassAd) {
    styled_ad_into(out, ad, Style::New)
}

fn styled_ad_into(out: &mut String, ad: &ClassAd, style: Style) {
    out.push_str("[ ");
    for (i, (n, e)) in ad.iter().enumerate() {
        if i > 0 {
            out.push_str("; ");
        }
        name_into(out, n.as_str());
        out.push_str(" = ");
        styled_expr_into(out, e, style);
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
    styled_value_into(out, v, Style::New)
}

fn styled_value_into(out: &mut String, v: &Value, style: Style) {
    match v {
        Value::Undefined => out.push_str("undefined"),
        Value::Error => out.push_str("error"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Int(i) => {
            let _ = write!(out, "{i}");
        }
        Value::Real(r) => real_into(out, *r),
        Value::Str(s) => match style {
            Style::New => string_into(out, s),
            Style::Old => old_string_into(out, s),
        },
        Value::List(l) => list_into(out, &l.items, style),
        Value::Ad(a) => styled_ad_into(out, &a.ad, style),
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

/// A string in old syntax: only the quote is escaped (the old-syntax reader
/// takes every other backslash literally), and a string ending in a backslash
/// still reads back, because `\"` before the end of a line closes it.
fn old_string_into(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        if c == '"' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
}

/// An expression as old syntax prints it (strings differ; see [`ad_to_old_syntax`]).
pub fn expr_to_old_syntax(e: &Expr) -> String {
    let mut s = String::new();
    styled_expr_into(&mut s, e, Style::Old);
    s
}

/// An ad in old syntax, one `Name = expr` line per attribute in HTCondor's
/// order, as `condor_q -l` prints it.
pub fn ad_to_old_syntax(ad: &ClassAd) -> String {
    let mut s = String::new();
    for (name, e) in ad.iter() {
        s.push_str(name.as_str());
        s.push_str(" = ");
        styled_expr_into(&mut s, e, Style::Old);
        s.push('\n');
    }
    s
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
