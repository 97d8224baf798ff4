//! HTCondor's custom output options, `-af[:jlhVrTY,tng] ATTR...` and
//! `-format FMT ATTR`, as condor_q, condor_status and condor_history take
//! them. Learned from HTCondor's print mask (`ad_printmask.cpp`:
//! `parse_autoformat_args`, `AttrListPrintMask::render` and `display`),
//! written here:
//!
//! - a row is the row prefix, the columns, the row suffix; each column but
//!   the first gets the column prefix before it, each but the last the
//!   column suffix after it. `-af` sets them: a space before each column
//!   and a newline after the row, `t` a tab before, `,` a comma after, `n`
//!   a newline after, `g` a newline before the row and nothing before a
//!   column. `-format` alone sets none: what the formats print is all.
//! - `-af` prints each value with `%v` (strings bare, other values as
//!   ClassAd literals), `V` with `%V` (strings quoted), `r` the expression
//!   unevaluated, `T` as a duration (`  0+00:01:40`), `Y` as a date;
//!   `l` labels each column `ATTR = value`, `j` adds the job id first,
//!   `h` prints a heading row and pads each column to its widest value.
//! - `-format` is printf: one conversion (`%d`, `%5.2f`, `%s`, `%v`, `%V`,
//!   `%r`, `%T`, `%Y`, ...) with any text around it; a value of the wrong
//!   type (a string for `%d`, undefined for `%s`) prints nothing, not even
//!   the text around it. `\n`, `\t` and the like are escapes.

use classad::{ClassAd, Env, Expr, Value};

use crate::errors::Error;

/// One output option, in command-line order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PrintItem {
    /// `-af[:QUALIFIERS] ATTR...`
    Af {
        qualifiers: String,
        attrs: Vec<String>,
    },
    /// `-format FMT ATTR`
    Format { format: String, attr: String },
}

/// How a value is turned into text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Conv {
    /// `%v`: strings bare, everything else as a literal.
    Value,
    /// `%V`: every value as a literal (strings quoted).
    CapV,
    /// `%r`: the expression, unevaluated.
    Raw,
    /// `%T`: seconds as `DDD+HH:MM:SS`.
    Time,
    /// `%Y`: epoch seconds as `M/D  HH:MM`, local time.
    Date,
    /// `%d %i %o %u %x %X %c`
    Int(char),
    /// `%e %E %f %F %g %G %a %A`
    Float(char),
    /// `%s`
    Str,
    /// No conversion at all: the text is printed as it is.
    None,
}

/// A printf conversion and the text around it.
#[derive(Clone, Debug)]
struct Printf {
    before: String,
    after: String,
    conv: Conv,
    left: bool,
    zero: bool,
    plus: bool,
    space: bool,
    alt: bool,
    width: usize,
    precision: Option<usize>,
}

#[derive(Clone, Debug)]
enum Source {
    /// ClusterId.ProcId (or JobId), as `-af:j` prints it.
    JobId,
    Expr {
        text: String,
        expr: Expr,
    },
}

#[derive(Clone, Debug)]
struct Column {
    source: Source,
    format: Printf,
    /// Padded to the widest value, left-aligned (`-af:h`).
    auto_width: bool,
    heading: Option<String>,
    width: usize,
}

/// Whether `e` may read attributes other than those it names: a call that
/// takes names or expressions from strings or other scopes, or `MY`,
/// `TARGET`, `parent` used as values.
fn reads_by_name(e: &Expr) -> bool {
    const BY_NAME: [&str; 6] = [
        "eval",
        "unparse",
        "evalineachcontext",
        "allcompare",
        "anycompare",
        "countmatches",
    ];
    match e {
        Expr::Lit(_) | Expr::RelTimeLit(_) | Expr::Absolute(_) => false,
        Expr::Attr(n) => n.special() != classad::name::Special::None,
        Expr::Select(base, _) => match &**base {
            Expr::Attr(n) if n.special() == classad::name::Special::My => false,
            other => reads_by_name(other),
        },
        Expr::Index(a, b) | Expr::Elvis(a, b) => reads_by_name(a) || reads_by_name(b),
        Expr::Unary(_, a) | Expr::Paren(a) => reads_by_name(a),
        Expr::Binary(_, ab) => reads_by_name(&ab.0) || reads_by_name(&ab.1),
        Expr::Cond(abc) => reads_by_name(&abc.0) || reads_by_name(&abc.1) || reads_by_name(&abc.2),
        Expr::Call(c) => {
            BY_NAME.iter().any(|f| c.name.eq_ignore_ascii_case(f))
                || c.args.iter().any(reads_by_name)
        }
        Expr::List(items) => items.iter().any(reads_by_name),
        Expr::Ad(_) => true,
        Expr::Folded(f) => reads_by_name(&f.expr),
    }
}

/// A parsed set of output options, ready to print ads.
#[derive(Clone, Debug, Default)]
pub struct PrintMask {
    columns: Vec<Column>,
    row_prefix: Option<&'static str>,
    col_prefix: Option<&'static str>,
    col_suffix: Option<&'static str>,
    row_suffix: Option<&'static str>,
}

impl PrintMask {
    /// The mask the options describe, in their order.
    pub fn parse(items: &[PrintItem]) -> Result<PrintMask, Error> {
        let mut mask = PrintMask::default();
        for item in items {
            match item {
                PrintItem::Format { format, attr } => {
                    let expr = parse_expr(attr)?;
                    mask.columns.push(Column {
                        source: Source::Expr {
                            text: attr.clone(),
                            expr,
                        },
                        format: parse_printf(&collapse_escapes(format)),
                        auto_width: false,
                        heading: None,
                        width: 0,
                    });
                }
                PrintItem::Af { qualifiers, attrs } => {
                    mask.add_autoformat(qualifiers, attrs)?;
                }
            }
        }
        Ok(mask)
    }

    fn add_autoformat(&mut self, qualifiers: &str, attrs: &[String]) -> Result<(), Error> {
        if attrs.is_empty() {
            return Err(Error::Usage(format!(
                "-af{} needs at least one attribute",
                if qualifiers.is_empty() {
                    String::new()
                } else {
                    format!(":{qualifiers}")
                }
            )));
        }
        let (mut label, mut cap_v, mut raw, mut time, mut date, mut headings, mut job_id) =
            (false, false, false, false, false, false, false);
        let mut row_prefix = None;
        let mut col_prefix = Some(" ");
        let mut col_suffix = None;
        for q in qualifiers.chars() {
            match q {
                ',' => col_suffix = Some(","),
                'n' => col_suffix = Some("\n"),
                'g' => {
                    col_prefix = None;
                    row_prefix = Some("\n");
                }
                't' => col_prefix = Some("\t"),
                'l' => label = true,
                'V' => cap_v = true,
                'r' | 'o' => raw = true,
                'T' => time = true,
                'Y' => date = true,
                'h' => headings = true,
                'j' => job_id = true,
                // HTCondor ignores a letter it does not know; saying so is kinder.
                other => {
                    return Err(Error::Usage(format!(
                        "-af:{qualifiers}: `{other}` is not an -af qualifier \
                         (j l h V r T Y , t n g)"
                    )))
                }
            }
        }
        self.row_prefix = row_prefix;
        self.col_prefix = col_prefix;
        self.col_suffix = col_suffix;
        self.row_suffix = Some("\n");
        let headings = headings || self.columns.iter().any(|c| c.heading.is_some());
        let conv = if raw {
            Conv::Raw
        } else if cap_v {
            Conv::CapV
        } else if date {
            Conv::Date
        } else if time {
            Conv::Time
        } else {
            Conv::Value
        };
        let plain = |before: String, conv: Conv| Printf {
            before,
            after: String::new(),
            conv,
            left: false,
            zero: false,
            plus: false,
            space: false,
            alt: false,
            width: 0,
            precision: None,
        };
        if job_id {
            self.columns.push(Column {
                source: Source::JobId,
                format: plain(
                    if label { "ID = ".into() } else { String::new() },
                    Conv::Value,
                ),
                auto_width: headings,
                heading: headings.then(|| " ID".to_string()),
                width: if headings { 3 } else { 0 },
            });
        }
        for attr in attrs {
            let expr = parse_expr(attr)?;
            let before = if !headings && label {
                format!("{attr} = ")
            } else {
                String::new()
            };
            self.columns.push(Column {
                source: Source::Expr {
                    text: attr.clone(),
                    expr,
                },
                format: plain(before, conv),
                auto_width: headings,
                heading: headings.then(|| attr.clone()),
                width: if headings { attr.len() } else { 0 },
            });
        }
        Ok(())
    }

    /// The job attributes the mask reads, to ask the schedd for only those
    /// (a projection: on a large queue most of a query's time is the ads'
    /// other attributes, sent and parsed for nothing). `None` when a
    /// column may read attributes its text does not name (`eval`,
    /// `unparse`, `MY` or `TARGET` as a value): then every attribute.
    pub fn attributes(&self) -> Option<Vec<String>> {
        let mut names: Vec<String> = Vec::new();
        let mut add = |n: &str| {
            if !names.iter().any(|x| x.eq_ignore_ascii_case(n)) {
                names.push(n.to_string());
            }
        };
        for c in &self.columns {
            match &c.source {
                Source::JobId => {
                    add("ClusterId");
                    add("ProcId");
                }
                Source::Expr { expr, .. } => {
                    if reads_by_name(expr) {
                        return None;
                    }
                    let mut refs = Vec::new();
                    negotiator::autocluster::references(expr, &mut refs);
                    for r in &refs {
                        add(r.as_str());
                    }
                }
            }
        }
        Some(names)
    }

    fn has_headings(&self) -> bool {
        self.columns.iter().any(|c| c.heading.is_some())
    }

    /// Every ad as the mask prints it, headings first when it has them.
    pub fn render(&self, ads: &[ClassAd], env: &Env) -> String {
        let mut columns = self.columns.clone();
        // Every cell first: a column with headings is as wide as its widest cell.
        let rows: Vec<Vec<Option<String>>> = ads
            .iter()
            .map(|ad| {
                columns
                    .iter_mut()
                    .map(|c| {
                        let cell = cell(c, ad, env);
                        if c.auto_width {
                            let n = cell.as_ref().map_or(0, |s| s.chars().count());
                            c.width = c.width.max(n);
                        }
                        cell
                    })
                    .collect()
            })
            .collect();
        let mut out = String::new();
        if self.has_headings() {
            out.push_str(self.row_prefix.unwrap_or(""));
            let n = columns.len();
            for (i, c) in columns.iter().enumerate() {
                if i > 0 {
                    out.push_str(self.col_prefix.unwrap_or(""));
                }
                let h = c.heading.as_deref().unwrap_or("");
                out.push_str(&format!("{h:<w$}", w = c.width));
                if i + 1 < n {
                    out.push_str(self.col_suffix.unwrap_or(""));
                }
            }
            out.push_str(self.row_suffix.unwrap_or(""));
        }
        for row in rows {
            out.push_str(self.row_prefix.unwrap_or(""));
            let n = columns.len();
            for (i, (c, cell)) in columns.iter().zip(row).enumerate() {
                if i > 0 {
                    out.push_str(self.col_prefix.unwrap_or(""));
                }
                let text = cell.unwrap_or_default();
                if c.width > 0 {
                    out.push_str(&format!("{text:<w$}", w = c.width));
                } else {
                    out.push_str(&text);
                }
                if i + 1 < n {
                    out.push_str(self.col_suffix.unwrap_or(""));
                }
            }
            out.push_str(self.row_suffix.unwrap_or(""));
        }
        out
    }
}

fn parse_expr(text: &str) -> Result<Expr, Error> {
    classad::parse_expr(text).map_err(|e| Error::parse("<expression>", e))
}

/// The text of one cell, or None where HTCondor prints nothing at all
/// (a value of the wrong type for the conversion).
fn cell(c: &Column, ad: &ClassAd, env: &Env) -> Option<String> {
    let f = &c.format;
    let (text, expr) = match &c.source {
        Source::JobId => {
            let id = match (ad.eval_attr("ClusterId", env), ad.eval_attr("ProcId", env)) {
                (Value::Int(cl), Value::Int(p)) => format!("{cl}.{p}"),
                (Value::Int(cl), _) => format!("{cl}.-1"),
                _ => match ad.eval_attr("JobId", env) {
                    Value::Str(s) => s.to_string(),
                    _ => return None,
                },
            };
            return Some(format!("{}{id}{}", f.before, f.after));
        }
        Source::Expr { text, expr } => (text, expr),
    };
    // An attribute of the ad is its own expression; anything else is
    // the text parsed as one.
    let own = ad.get(text);
    let body = match f.conv {
        Conv::None => return Some(format!("{}{}", f.before, f.after)),
        Conv::Raw => match (own, expr) {
            (Some(e), _) => classad::unparse::expr_to_old_syntax(e),
            (None, Expr::Attr(_)) => "undefined".into(),
            (None, e) => classad::unparse::expr_to_old_syntax(e),
        },
        Conv::Str => match ad.eval(expr, env) {
            Value::Str(s) => pad(f, s.to_string()),
            // %s of an attribute that is not a string prints it as written.
            _ => match own {
                Some(e) => pad(f, classad::unparse::expr_to_old_syntax(e)),
                None => return None,
            },
        },
        conv => {
            let v = ad.eval(expr, env);
            match conv {
                Conv::Value => match &v {
                    Value::Str(s) => pad(f, s.to_string()),
                    v => pad(f, literal(v)),
                },
                Conv::CapV => pad(f, literal(&v)),
                Conv::Time => format_time(number(&v)? as i64),
                Conv::Date => format_date(number(&v)? as i64, env.utc_offset),
                Conv::Int(letter) => int_conv(f, letter, number(&v)?),
                Conv::Float(letter) => float_conv(f, letter, number(&v)?),
                _ => unreachable!("handled above"),
            }
        }
    };
    Some(format!("{}{body}{}", f.before, f.after))
}

/// A value as a ClassAd literal, as `-l` prints one.
fn literal(v: &Value) -> String {
    match v {
        Value::Str(_) => classad::unparse::expr_to_old_syntax(&Expr::Lit(v.clone())),
        v => classad::unparse::value_to_string(v),
    }
}

/// HTCondor's IsNumber: integers, reals and booleans.
fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Int(i) => Some(*i as f64),
        Value::Real(r) => Some(*r),
        Value::Bool(b) => Some(f64::from(u8::from(*b))),
        _ => None,
    }
}

/// `format_time`: `%3d+%02d:%02d:%02d`.
fn format_time(secs: i64) -> String {
    format!(
        "{:>3}+{:02}:{:02}:{:02}",
        secs / 86400,
        secs % 86400 / 3600,
        secs % 3600 / 60,
        secs % 60
    )
}

/// `format_date`: `%2d/%-2d %02d:%02d` in local time.
fn format_date(t: i64, utc_offset: i32) -> String {
    if t < 0 {
        return "    ???    ".into();
    }
    let c = classad::time::civil(t, utc_offset);
    format!("{:>2}/{:<2} {:02}:{:02}", c.month, c.day, c.hour, c.minute)
}

/// A string conversion's width and precision.
fn pad(f: &Printf, s: String) -> String {
    let s: String = match f.precision {
        Some(p) => s.chars().take(p).collect(),
        None => s,
    };
    justify(f, s, false)
}

fn justify(f: &Printf, s: String, numeric: bool) -> String {
    let n = s.chars().count();
    if n >= f.width {
        return s;
    }
    let fill = f.width - n;
    if f.left {
        format!("{s}{}", " ".repeat(fill))
    } else if f.zero && numeric {
        // Zeros go after the sign and any 0x.
        let sign_len = s.find(|c: char| !matches!(c, '+' | '-' | ' ')).unwrap_or(0);
        let (sign, rest) = s.split_at(sign_len);
        let (prefix, digits) = if rest.starts_with("0x") || rest.starts_with("0X") {
            rest.split_at(2)
        } else {
            ("", rest)
        };
        format!("{sign}{prefix}{}{digits}", "0".repeat(fill))
    } else {
        format!("{}{s}", " ".repeat(fill))
    }
}

fn int_conv(f: &Printf, letter: char, v: f64) -> String {
    let i = v.trunc() as i64;
    if letter == 'c' {
        let c = char::from_u32((i as u32) & 0xff).unwrap_or('?');
        return justify(f, c.to_string(), false);
    }
    let mut digits = match letter {
        'o' => format!("{:o}", i),
        'x' => format!("{:x}", i),
        'X' => format!("{:X}", i),
        'u' => format!("{}", i as u64),
        _ => i.unsigned_abs().to_string(),
    };
    if let Some(p) = f.precision {
        if digits.len() < p {
            digits = format!("{}{digits}", "0".repeat(p - digits.len()));
        }
    }
    if f.alt {
        match letter {
            'o' if !digits.starts_with('0') => digits.insert(0, '0'),
            'x' if i != 0 => digits.insert_str(0, "0x"),
            'X' if i != 0 => digits.insert_str(0, "0X"),
            _ => {}
        }
    }
    let signed = matches!(letter, 'd' | 'i');
    let sign = if signed && i < 0 {
        "-"
    } else if signed && f.plus {
        "+"
    } else if signed && f.space {
        " "
    } else {
        ""
    };
    let zero_ok = f.precision.is_none();
    let g = Printf {
        zero: f.zero && zero_ok,
        ..f.clone()
    };
    justify(&g, format!("{sign}{digits}"), true)
}

fn float_conv(f: &Printf, letter: char, v: f64) -> String {
    let p = f.precision.unwrap_or(6);
    let upper = letter.is_ascii_uppercase();
    let body = if !v.is_finite() {
        let s = if v.is_nan() {
            "nan"
        } else if v < 0.0 {
            "-inf"
        } else {
            "inf"
        };
        if upper {
            s.to_uppercase()
        } else {
            s.to_string()
        }
    } else {
        match letter.to_ascii_lowercase() {
            'f' => format!("{v:.p$}"),
            'e' | 'a' => exp_form(v, p, upper),
            _ => {
                // %g: %e or %f by the exponent, trailing zeros dropped.
                let p = if p == 0 { 1 } else { p };
                let x = if v == 0.0 {
                    0
                } else {
                    let e = exp_form(v, p - 1, false);
                    e[e.find('e').unwrap_or(0) + 1..]
                        .parse::<i32>()
                        .unwrap_or(0)
                };
                let s = if x < -4 || x >= p as i32 {
                    exp_form(v, p - 1, upper)
                } else {
                    format!("{v:.prec$}", prec = (p as i32 - 1 - x).max(0) as usize)
                };
                if f.alt {
                    s
                } else {
                    strip_zeros(&s)
                }
            }
        }
    };
    let body = if v >= 0.0 && !body.starts_with('-') {
        if f.plus {
            format!("+{body}")
        } else if f.space {
            format!(" {body}")
        } else {
            body
        }
    } else {
        body
    };
    justify(f, body, v.is_finite())
}

/// `1.500000e+00`, as C prints %e.
fn exp_form(v: f64, p: usize, upper: bool) -> String {
    let s = format!("{v:.p$e}");
    let (mant, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let e = if upper { 'E' } else { 'e' };
    format!(
        "{mant}{e}{}{:02}",
        if exp < 0 { '-' } else { '+' },
        exp.abs()
    )
}

fn strip_zeros(s: &str) -> String {
    let (mant, exp) = match s.find(['e', 'E']) {
        Some(i) => (&s[..i], &s[i..]),
        None => (s, ""),
    };
    let mant = if mant.contains('.') {
        mant.trim_end_matches('0').trim_end_matches('.')
    } else {
        mant
    };
    format!("{mant}{exp}")
}

/// HTCondor's `collapse_escapes`: `\n`, `\t` and the other C escapes.
fn collapse_escapes(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some('a') => out.push('\x07'),
            Some('b') => out.push('\x08'),
            Some('f') => out.push('\x0c'),
            Some('v') => out.push('\x0b'),
            Some('0') => out.push('\0'),
            Some(o) => out.push(o),
            None => out.push('\\'),
        }
    }
    out
}

/// The first conversion of a printf format (`%%` is a percent sign).
fn parse_printf(fmt: &str) -> Printf {
    let mut p = Printf {
        before: String::new(),
        after: String::new(),
        conv: Conv::None,
        left: false,
        zero: false,
        plus: false,
        space: false,
        alt: false,
        width: 0,
        precision: None,
    };
    let chars: Vec<char> = fmt.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] != '%' {
            p.before.push(chars[i]);
            i += 1;
            continue;
        }
        if chars.get(i + 1) == Some(&'%') {
            p.before.push('%');
            i += 2;
            continue;
        }
        let mut j = i + 1;
        while let Some(&c) = chars.get(j) {
            match c {
                '-' => p.left = true,
                '0' => p.zero = true,
                '+' => p.plus = true,
                ' ' => p.space = true,
                '#' => p.alt = true,
                '\'' => {}
                _ => break,
            }
            j += 1;
        }
        let mut width = String::new();
        while let Some(c) = chars.get(j).filter(|c| c.is_ascii_digit()) {
            width.push(*c);
            j += 1;
        }
        p.width = width.parse().unwrap_or(0);
        if chars.get(j) == Some(&'.') {
            j += 1;
            let mut prec = String::new();
            while let Some(c) = chars.get(j).filter(|c| c.is_ascii_digit()) {
                prec.push(*c);
                j += 1;
            }
            p.precision = Some(prec.parse().unwrap_or(0));
        }
        while matches!(chars.get(j), Some('h' | 'l' | 'L' | 'q' | 'j' | 'z' | 't')) {
            j += 1;
        }
        let conv = match chars.get(j) {
            Some(&c @ ('d' | 'i' | 'o' | 'u' | 'x' | 'X' | 'c' | 'C')) => {
                Conv::Int(if c == 'C' { 'c' } else { c })
            }
            Some(&c @ ('e' | 'E' | 'f' | 'F' | 'g' | 'G' | 'a' | 'A')) => Conv::Float(c),
            Some('s' | 'S') => Conv::Str,
            Some('v') => Conv::Value,
            Some('V') => Conv::CapV,
            Some('r' | 'R') => Conv::Raw,
            Some('T') => Conv::Time,
            Some('Y') => Conv::Date,
            // Not a conversion HTCondor knows: the format is text.
            _ => {
                p.before = fmt.to_string();
                p.width = 0;
                p.precision = None;
                return p;
            }
        };
        p.conv = conv;
        p.after = chars[j + 1..].iter().collect::<String>().replace("%%", "%");
        return p;
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ads() -> Vec<ClassAd> {
        vec![
            ClassAd::parse(
                "[ ClusterId = 3; ProcId = 0; Owner = \"alice\"; JobStatus = 1; \
                 RequestMemory = 128 * 2; RemoteWallClockTime = 100.0 ]",
            )
            .unwrap(),
            ClassAd::parse(
                "[ ClusterId = 3; ProcId = 1; Owner = \"bob\"; JobStatus = 2; \
                 RequestMemory = 2048; RemoteWallClockTime = 3661.5 ]",
            )
            .unwrap(),
        ]
    }

    fn af(q: &str, attrs: &[&str]) -> String {
        let items = vec![PrintItem::Af {
            qualifiers: q.into(),
            attrs: attrs.iter().map(|s| s.to_string()).collect(),
        }];
        PrintMask::parse(&items)
            .unwrap()
            .render(&ads(), &Env::at(0))
    }

    fn format(pairs: &[(&str, &str)]) -> String {
        let items: Vec<PrintItem> = pairs
            .iter()
            .map(|(f, a)| PrintItem::Format {
                format: f.to_string(),
                attr: a.to_string(),
            })
            .collect();
        PrintMask::parse(&items)
            .unwrap()
            .render(&ads(), &Env::at(0))
    }

    #[test]
    fn autoformat_qualifiers_are_htcondors() {
        assert_eq!(af("", &["Owner", "JobStatus"]), "alice 1\nbob 2\n");
        assert_eq!(af("j", &["Owner"]), "3.0 alice\n3.1 bob\n");
        assert_eq!(af("V", &["Owner"]), "\"alice\"\n\"bob\"\n");
        assert_eq!(
            af("r", &["RequestMemory", "Missing"]),
            "128 * 2 undefined\n2048 undefined\n"
        );
        assert_eq!(
            af("", &["RequestMemory", "Missing"]),
            "256 undefined\n2048 undefined\n"
        );
        assert_eq!(af("t", &["Owner", "JobStatus"]), "alice\t1\nbob\t2\n");
        assert_eq!(af(",", &["Owner", "JobStatus"]), "alice, 1\nbob, 2\n");
        assert_eq!(af("n", &["Owner", "JobStatus"]), "alice\n 1\nbob\n 2\n");
        assert_eq!(
            af("l", &["Owner", "JobStatus"]),
            "Owner = alice JobStatus = 1\nOwner = bob JobStatus = 2\n"
        );
        assert_eq!(
            af("jl", &["Owner"]),
            "ID = 3.0 Owner = alice\nID = 3.1 Owner = bob\n"
        );
        assert_eq!(
            af("lrng", &["Owner", "JobStatus"]),
            "\nOwner = \"alice\"\nJobStatus = 1\n\nOwner = \"bob\"\nJobStatus = 2\n"
        );
        assert_eq!(
            af("lrtV,", &["Owner", "JobStatus"]),
            "Owner = \"alice\",\tJobStatus = 1\nOwner = \"bob\",\tJobStatus = 2\n"
        );
        assert_eq!(
            af("T", &["RemoteWallClockTime"]),
            "  0+00:01:40\n  0+01:01:01\n"
        );
        assert_eq!(af("", &["Owner + 1"]), "error\nerror\n");
    }

    #[test]
    fn headings_pad_each_column_to_its_widest_cell() {
        assert_eq!(
            af("jh", &["Owner", "JobStatus"]),
            " ID Owner JobStatus\n3.0 alice 1        \n3.1 bob   2        \n"
        );
        assert_eq!(
            af("h", &["RequestMemory*1000"]),
            "RequestMemory*1000\n256000            \n2048000           \n"
        );
    }

    #[test]
    fn format_is_printf() {
        assert_eq!(
            format(&[("%d.", "ClusterId"), ("%d\\n", "ProcId")]),
            "3.0\n3.1\n"
        );
        assert_eq!(
            format(&[("[%-6s]", "Owner"), ("%5.1f\\n", "RemoteWallClockTime")]),
            "[alice ]100.0\n[bob   ]3661.5\n"
        );
        // The wrong type prints nothing, text and all.
        assert_eq!(format(&[("<%d>", "Owner"), ("%s;", "Missing")]), "");
        // %s of a number prints it as written; %v of undefined prints it.
        assert_eq!(
            format(&[("%s ", "RequestMemory"), ("%v\\n", "Nope")]),
            "128 * 2 undefined\n2048 undefined\n"
        );
        assert_eq!(format(&[("%05d|\\n", "JobStatus")]), "00001|\n00002|\n");
        assert_eq!(format(&[("%+.2f\\n", "ProcId")]), "+0.00\n+1.00\n");
        assert_eq!(
            format(&[("%g %%\\n", "RemoteWallClockTime")]),
            "100 %\n3661.5 %\n"
        );
        assert_eq!(
            format(&[("%e\\n", "JobStatus")]),
            "1.000000e+00\n2.000000e+00\n"
        );
        assert_eq!(format(&[("%V\\n", "Owner")]), "\"alice\"\n\"bob\"\n");
    }
}
