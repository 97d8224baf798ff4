//! HTCondor's JSON form of ClassAds, both ways: what `condor_q -json` and
//! `condor_status -json` print (HTCondor's `ClassAdJsonUnParser`), and what
//! HTCondor's JSON reader accepts (`ClassAdJsonParser`).
//!
//! The mapping:
//!
//! | ClassAd                                  | JSON                          |
//! |------------------------------------------|-------------------------------|
//! | `undefined`                              | `null`                        |
//! | `true` / `false`                         | `true` / `false`              |
//! | integer                                  | `42`                          |
//! | real                                     | `1.5`, `3.0`, `1E+20` (`%.16G`, `.0` added when needed) |
//! | string                                   | `"..."` with JSON escapes     |
//! | list `{ ... }`                           | array                         |
//! | nested ad `[ ... ]`                      | object                        |
//! | anything else: `error`, an attribute reference, an operator, a call, an `absTime`/`relTime` value, an infinite or NaN real | `"\/Expr(<new-syntax text>)\/"` |
//!
//! The text is written here rather than through `serde_json`, to lay it out
//! byte for byte as HTCondor does: two-space indentation, `"name": value`,
//! `/` left unescaped, bytes above 0x7f copied raw.
//!
//! Reading follows HTCondor's reader, quirks included: the top level must be
//! an object; stray commas between members are allowed (`{,"a": 1,}`) but not
//! in arrays; `null`, `true` and `false` in any case; integers that overflow
//! read as 0; a string is an expression only when written with the escaped
//! slashes `"\/Expr(...)\/"` (so `"/Expr(1)/"` stays a string).

use std::fmt::Write as _;
use std::sync::Arc;

use crate::ad::ClassAd;
use crate::error::ParseError;
use crate::expr::Expr;
use crate::name::AttrName;
use crate::value::Value;

/// In which order an ad's attributes are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttrOrder {
    /// Alphabetically, ignoring case: how `condor_q -json` and
    /// `condor_status -json` print ads.
    Alphabetical,
    /// HTCondor's storage order ([`ClassAd::iter`]): how the library's own
    /// JSON printing (and every nested ad) comes out.
    Storage,
}

/// How the text is laid out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// One member or element per line, indented by two spaces per level.
    Pretty,
    /// All on one line: `{"a": 1,"b": [1,2]}` (HTCondor's one-line form keeps
    /// the space after the colon and puts none after the comma).
    OneLine,
}

/// An ad as `condor_q -json` prints it (without the surrounding list):
/// pretty, attributes in alphabetical order.
pub fn ad_to_json(ad: &ClassAd) -> String {
    let mut s = String::new();
    write_ad_json(&mut s, ad, AttrOrder::Alphabetical, Layout::Pretty);
    s
}

/// Appends an ad's JSON text to `out`.
pub fn write_ad_json(out: &mut String, ad: &ClassAd, order: AttrOrder, layout: Layout) {
    let mut attrs: Vec<(&AttrName, &Expr)> = ad.iter().collect();
    if order == AttrOrder::Alphabetical {
        attrs.sort_by(|a, b| {
            let lower = |s: &str| {
                s.bytes()
                    .map(|c| c.to_ascii_lowercase())
                    .collect::<Vec<u8>>()
            };
            lower(a.0.as_str()).cmp(&lower(b.0.as_str()))
        });
    }
    let mut w = Writer { out, layout };
    w.object(attrs.into_iter().map(|(n, e)| (n.as_str(), e)), 0);
}

/// A list of ads as `condor_q -json` prints it: `[`, the ads separated by
/// `,` lines, `]`. Empty ads are skipped, and no (non-empty) ads at all give
/// no text at all, as in HTCondor.
pub fn ads_to_json_text<'a>(ads: impl IntoIterator<Item = &'a ClassAd>) -> String {
    let mut s = String::new();
    let mut any = false;
    for ad in ads {
        if ad.is_empty() {
            continue;
        }
        s.push_str(if any { ",\n" } else { "[\n" });
        write_ad_json(&mut s, ad, AttrOrder::Alphabetical, Layout::Pretty);
        s.push('\n');
        any = true;
    }
    if any {
        s.push_str("]\n");
    }
    s
}

/// An expression's JSON text, on one line.
pub fn expr_to_json(e: &Expr) -> String {
    let mut s = String::new();
    Writer {
        out: &mut s,
        layout: Layout::OneLine,
    }
    .expr(e, 0);
    s
}

struct Writer<'o> {
    out: &'o mut String,
    layout: Layout,
}

impl Writer<'_> {
    /// Before a member or element: a comma after the first, then (pretty) a
    /// new line indented to `indent`.
    fn separator(&mut self, first: bool, indent: usize) {
        if !first {
            self.out.push(',');
        }
        self.newline(indent);
    }

    fn newline(&mut self, indent: usize) {
        if self.layout == Layout::Pretty {
            self.out.push('\n');
            self.out.extend(std::iter::repeat_n(' ', indent));
        }
    }

    fn object<'e>(&mut self, attrs: impl Iterator<Item = (&'e str, &'e Expr)>, indent: usize) {
        self.out.push('{');
        for (i, (name, e)) in attrs.enumerate() {
            self.separator(i == 0, indent + 2);
            json_string_into(self.out, name);
            self.out.push_str(": ");
            self.expr(e, indent + 2);
        }
        self.newline(indent);
        self.out.push('}');
    }

    fn array(&mut self, items: &[Expr], indent: usize) {
        self.out.push('[');
        for (i, e) in items.iter().enumerate() {
            self.separator(i == 0, indent + 2);
            self.expr(e, indent + 2);
        }
        self.newline(indent);
        self.out.push(']');
    }

    fn expr(&mut self, e: &Expr, indent: usize) {
        match e {
            Expr::Lit(v) => self.value(v, e, indent),
            // `relTime("1d")` is a real-valued literal in HTCondor.
            Expr::RelTimeLit(secs) => self.real(*secs),
            Expr::List(items) => self.array(items, indent),
            Expr::Ad(ad) => self.object(ad.iter().map(|(n, e)| (n.as_str(), e)), indent),
            _ => expr_string_into(self.out, e),
        }
    }

    fn value(&mut self, v: &Value, e: &Expr, indent: usize) {
        match v {
            Value::Undefined => self.out.push_str("null"),
            Value::Bool(b) => self.out.push_str(if *b { "true" } else { "false" }),
            Value::Int(i) => {
                let _ = write!(self.out, "{i}");
            }
            Value::Real(r) => self.real(*r),
            Value::Str(s) => json_string_into(self.out, s),
            Value::List(l) => self.array(&l.items, indent),
            Value::Ad(a) => self.object(a.ad.iter().map(|(n, e)| (n.as_str(), e)), indent),
            Value::Error | Value::AbsTime(_) | Value::RelTime(_) => expr_string_into(self.out, e),
        }
    }

    fn real(&mut self, r: f64) {
        if r.is_finite() {
            self.out.push_str(&format_json_real(r));
        } else {
            // Written as an expression: `real("INF")`, `real("NaN")`.
            let mut text = String::new();
            crate::unparse::real_into(&mut text, r);
            self.out.push_str("\"\\/Expr(");
            json_escape_into(self.out, &text);
            self.out.push_str(")\\/\"");
        }
    }
}

/// `"\/Expr(<unparsed>)\/"`.
fn expr_string_into(out: &mut String, e: &Expr) {
    out.push_str("\"\\/Expr(");
    json_escape_into(out, &e.to_string());
    out.push_str(")\\/\"");
}

/// A finite real as HTCondor's JSON writer prints it: zero as `0.0`/`-0.0`,
/// otherwise C's `%.16G`, with `.0` appended when that has no `.` or exponent.
pub fn format_json_real(r: f64) -> String {
    if r == 0.0 {
        return if r.is_sign_negative() { "-0.0" } else { "0.0" }.to_string();
    }
    // %G with precision 16: the exponent after rounding to 16 significant
    // digits picks fixed or exponential notation; trailing zeros go.
    const P: i32 = 16;
    let sci = format!("{:.*e}", (P - 1) as usize, r);
    let (mant, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let x: i32 = exp.parse().unwrap_or(0);
    let mut s = if !(-4..P).contains(&x) {
        let m = strip_fraction_zeros(mant);
        let sign = if x < 0 { '-' } else { '+' };
        format!("{m}E{sign}{:02}", x.abs())
    } else {
        strip_fraction_zeros(&format!("{:.*}", (P - 1 - x) as usize, r)).to_string()
    };
    if !s.contains(['.', 'E', 'e']) {
        s.push_str(".0");
    }
    s
}

fn strip_fraction_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

/// A JSON string literal for `s`, as HTCondor escapes it.
fn json_string_into(out: &mut String, s: &str) {
    out.push('"');
    json_escape_into(out, s);
    out.push('"');
}

/// HTCondor's JSON escaping: `"` `\` and the C control escapes, other bytes
/// below 0x20 as `\u00XX`; `/`, DEL and non-ASCII text are copied as they are.
fn json_escape_into(out: &mut String, s: &str) {
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c => out.push(c),
        }
    }
}

// ---------------------------------------------------------------------------
// Reading

/// Parses one JSON object as an ad; only white space may follow it.
pub fn parse_json_ad(text: &str) -> Result<ClassAd, ParseError> {
    read_whole(text, "the JSON object", JsonReader::top_object)
}

/// Reads one thing with `read`; only white space may follow it.
fn read_whole<'t, T>(
    text: &'t str,
    what: &str,
    read: impl FnOnce(&mut JsonReader<'t>) -> Result<T, ParseError>,
) -> Result<T, ParseError> {
    let mut r = JsonReader::new(text);
    let t = read(&mut r)?;
    r.skip_ws();
    if r.pos < text.len() {
        return Err(r.error_here(&format!("the end of the input after {what}")));
    }
    Ok(t)
}

/// Parses one JSON object at the start of `text` (after white space) and
/// says how many bytes it used; what follows is not looked at.
pub fn parse_json_ad_prefix(text: &str) -> Result<(ClassAd, usize), ParseError> {
    let mut r = JsonReader::new(text);
    let ad = r.top_object()?;
    Ok((ad, r.pos))
}

/// Parses a list of ads: a JSON array of objects (as `condor_q -json`
/// prints), or objects one after another; empty text is no ads.
pub fn parse_json_ads(text: &str) -> Result<Vec<ClassAd>, ParseError> {
    let mut r = JsonReader::new(text);
    let mut ads = Vec::new();
    r.skip_ws();
    if r.peek() == Some(b'[') {
        r.pos += 1;
        let ads = r.elements("',' or ']' in the list of ads", JsonReader::top_object)?;
        r.skip_ws();
        if r.pos < text.len() {
            return Err(r.error_here("the end of the input after the list of ads"));
        }
        return Ok(ads);
    }
    while r.pos < text.len() {
        ads.push(r.top_object()?);
        r.skip_ws();
    }
    Ok(ads)
}

/// Parses a single JSON value (as an attribute's value would be read) into
/// an expression.
pub fn parse_json_value(text: &str) -> Result<Expr, ParseError> {
    read_whole(text, "the JSON value", JsonReader::value)
}

/// How deep arrays and objects may nest, so that hostile input cannot
/// exhaust the stack.
const MAX_DEPTH: usize = 500;

struct JsonReader<'t> {
    src: &'t str,
    pos: usize,
    depth: usize,
}

impl<'t> JsonReader<'t> {
    fn new(src: &'t str) -> JsonReader<'t> {
        JsonReader {
            src,
            pos: 0,
            depth: 0,
        }
    }

    fn peek(&self) -> Option<u8> {
        self.src.as_bytes().get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        while matches!(
            self.peek(),
            Some(b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
        ) {
            self.pos += 1;
        }
    }

    /// A description of the text at the current position, for errors.
    fn found_here(&self) -> String {
        let rest = &self.src[self.pos..];
        match rest.chars().next() {
            None => "end of input".to_string(),
            Some(c) if c.is_ascii_alphanumeric() || c == '-' || c == '.' => {
                let word: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '+' | '.'))
                    .take(20)
                    .collect();
                format!("'{word}'")
            }
            Some(c) => format!("'{c}'"),
        }
    }

    fn error_here(&self, expected: &str) -> ParseError {
        ParseError::at(self.src, self.pos, &self.found_here(), expected)
    }

    fn error_at(&self, at: usize, found: &str, expected: &str) -> ParseError {
        ParseError::at(self.src, at, found, expected)
    }

    fn top_object(&mut self) -> Result<ClassAd, ParseError> {
        self.skip_ws();
        if self.peek() != Some(b'{') {
            return Err(self.error_here("'{' starting a JSON object"));
        }
        self.object()
    }

    fn nest(&mut self) -> Result<(), ParseError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.error_here(&format!("at most {MAX_DEPTH} nested arrays and objects")));
        }
        Ok(())
    }

    /// `{ "name": value, ... }`, at the `{`.
    fn object(&mut self) -> Result<ClassAd, ParseError> {
        self.nest()?;
        self.pos += 1;
        let mut ad = ClassAd::new();
        loop {
            self.skip_ws();
            match self.peek() {
                // HTCondor skips empty members: `{,"a": 1,,}`.
                Some(b',') => {
                    self.pos += 1;
                    continue;
                }
                Some(b'}') => {
                    self.pos += 1;
                    self.depth -= 1;
                    return Ok(ad);
                }
                Some(b'"') => {}
                _ => return Err(self.error_here("a member name (a string), ',' or '}'")),
            }
            let key_at = self.pos;
            let (name, _) = self.string()?;
            if name.is_empty() {
                return Err(self.error_at(
                    key_at,
                    "the empty name \"\"",
                    "a non-empty attribute name",
                ));
            }
            self.skip_ws();
            if self.peek() != Some(b':') {
                return Err(self.error_here("':' after the member name"));
            }
            self.pos += 1;
            let e = self.value()?;
            ad.insert(name.as_str(), e);
            self.skip_ws();
            match self.peek() {
                Some(b',' | b'}') => {}
                _ => return Err(self.error_here("',' or '}' after the member's value")),
            }
        }
    }

    /// The elements of an array, just after its `[`, through its `]`: read
    /// by `item`, separated by single commas (no stray commas in arrays).
    fn elements<T>(
        &mut self,
        expected: &str,
        mut item: impl FnMut(&mut Self) -> Result<T, ParseError>,
    ) -> Result<Vec<T>, ParseError> {
        let mut items = Vec::new();
        self.skip_ws();
        if self.peek() == Some(b']') {
            self.pos += 1;
            return Ok(items);
        }
        loop {
            items.push(item(self)?);
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(items);
                }
                _ => return Err(self.error_here(expected)),
            }
        }
    }

    /// `[ value, ... ]`, at the `[`; no stray commas here.
    fn array(&mut self) -> Result<Expr, ParseError> {
        self.nest()?;
        self.pos += 1;
        let items = self.elements("',' or ']' in the array", JsonReader::value)?;
        self.depth -= 1;
        Ok(Expr::List(items.into()))
    }

    fn value(&mut self) -> Result<Expr, ParseError> {
        self.skip_ws();
        let start = self.pos;
        match self.peek() {
            Some(b'{') => Ok(Expr::Ad(Arc::new(self.object()?))),
            Some(b'[') => self.array(),
            Some(b'"') => {
                let (s, escaped_slash) = self.string()?;
                let raw = &self.src[start + 1..self.pos - 1];
                self.string_value(s, raw, escaped_slash, start)
            }
            Some(b'-' | b'.' | b'0'..=b'9') => self.number(),
            Some(c) if c.is_ascii_alphabetic() => {
                let end = self.src[start..]
                    .find(|c: char| !c.is_ascii_alphanumeric() && c != '_')
                    .map_or(self.src.len(), |i| start + i);
                let word = &self.src[start..end];
                let v = if word.eq_ignore_ascii_case("null") {
                    Value::Undefined
                } else if word.eq_ignore_ascii_case("true") {
                    Value::Bool(true)
                } else if word.eq_ignore_ascii_case("false") {
                    Value::Bool(false)
                } else {
                    return Err(self.error_at(start, &format!("'{word}'"), "a JSON value"));
                };
                self.pos = end;
                Ok(Expr::Lit(v))
            }
            _ => Err(self.error_here("a JSON value")),
        }
    }

    /// A string member value: an expression if written `"\/Expr(...)\/"`.
    fn string_value(
        &self,
        s: String,
        raw: &str,
        escaped_slash: bool,
        start: usize,
    ) -> Result<Expr, ParseError> {
        let is_expr = escaped_slash
            && raw.len() >= 11
            && raw.as_bytes()[..7].eq_ignore_ascii_case(b"\\/Expr(")
            && raw.ends_with(")\\/")
            && s.len() >= 8;
        if !is_expr {
            return Ok(Expr::Lit(Value::Str(crate::value::ArcStr::from(s))));
        }
        let inner = &s[6..s.len() - 2];
        crate::parser::parse_expr(inner).map_err(|e| {
            self.error_at(
                start,
                &format!("the expression string {raw:?}"),
                &format!(
                    "a valid ClassAd expression inside \\/Expr()\\/ ({})",
                    e.message()
                ),
            )
        })
    }

    /// A string, at its `"`: the text, and whether `\/` was used in it.
    fn string(&mut self) -> Result<(String, bool), ParseError> {
        let start = self.pos;
        self.pos += 1;
        let mut out = String::new();
        let mut escaped_slash = false;
        loop {
            let rest = &self.src[self.pos..];
            let Some(i) = rest.find(['"', '\\']) else {
                return Err(self.error_at(start, "an unterminated string", "a closing '\"'"));
            };
            out.push_str(&rest[..i]);
            self.pos += i;
            if rest.as_bytes()[i] == b'"' {
                self.pos += 1;
                return Ok((out, escaped_slash));
            }
            let esc_at = self.pos;
            self.pos += 1;
            let Some(c) = self.src[self.pos..].chars().next() else {
                return Err(self.error_at(start, "an unterminated string", "a closing '\"'"));
            };
            self.pos += c.len_utf8();
            match c {
                'b' => out.push('\u{8}'),
                'f' => out.push('\u{c}'),
                'n' => out.push('\n'),
                'r' => out.push('\r'),
                't' => out.push('\t'),
                'u' => out.push(self.unicode_escape(esc_at)?),
                '/' => {
                    escaped_slash = true;
                    out.push('/');
                }
                // `\"`, `\\`, and (as HTCondor) any other escaped character
                // stands for itself.
                other => out.push(other),
            }
        }
    }

    /// The rest of a `\uXXXX` escape (a surrogate pair makes one character).
    fn unicode_escape(&mut self, esc_at: usize) -> Result<char, ParseError> {
        let hex4 = |r: &mut Self| -> Option<u32> {
            let h = r.src.get(r.pos..r.pos + 4)?;
            let v = u32::from_str_radix(h, 16)
                .ok()
                .filter(|_| h.bytes().all(|b| b.is_ascii_hexdigit()))?;
            r.pos += 4;
            Some(v)
        };
        let Some(hi) = hex4(self) else {
            return Err(self.error_at(
                esc_at,
                "a malformed \\u escape",
                "four hexadecimal digits after \\u",
            ));
        };
        if (0xd800..0xdc00).contains(&hi) && self.src[self.pos..].starts_with("\\u") {
            let save = self.pos;
            self.pos += 2;
            if let Some(lo) = hex4(self) {
                if (0xdc00..0xe000).contains(&lo) {
                    let c = 0x10000 + ((hi - 0xd800) << 10) + (lo - 0xdc00);
                    return Ok(char::from_u32(c).unwrap_or('\u{fffd}'));
                }
            }
            self.pos = save;
        }
        Ok(char::from_u32(hi).unwrap_or('\u{fffd}'))
    }

    /// A number: `-`, digits (no leading zeros), an optional fraction with at
    /// least one digit (a leading `.5` is allowed, as HTCondor's lexer does),
    /// an optional exponent.
    fn number(&mut self) -> Result<Expr, ParseError> {
        let start = self.pos;
        let b = self.src.as_bytes();
        let digits = |p: &mut usize| {
            let s = *p;
            while *p < b.len() && b[*p].is_ascii_digit() {
                *p += 1;
            }
            *p - s
        };
        let mut p = start;
        if b.get(p) == Some(&b'-') {
            p += 1;
        }
        let int_start = p;
        let int_digits = digits(&mut p);
        let mut real = false;
        if b.get(p) == Some(&b'.') {
            real = true;
            p += 1;
            if digits(&mut p) == 0 {
                return Err(self.error_at(
                    start,
                    &format!("'{}'", &self.src[start..p]),
                    "digits after the decimal point",
                ));
            }
        } else if int_digits == 0 {
            return Err(self.error_at(start, &format!("'{}'", &self.src[start..p]), "a number"));
        }
        if matches!(b.get(p), Some(b'e' | b'E')) {
            real = true;
            p += 1;
            if matches!(b.get(p), Some(b'+' | b'-')) {
                p += 1;
            }
            if digits(&mut p) == 0 {
                return Err(self.error_at(
                    start,
                    &format!("'{}'", &self.src[start..p]),
                    "digits in the exponent",
                ));
            }
        }
        if int_digits > 1 && b[int_start] == b'0' {
            return Err(self.error_at(
                start,
                &format!("'{}'", &self.src[start..p]),
                "a number without leading zeros",
            ));
        }
        let text = &self.src[start..p];
        self.pos = p;
        if real {
            // Overflow gives infinity, as strtod does.
            return Ok(Expr::Lit(Value::Real(
                text.parse::<f64>().unwrap_or(f64::INFINITY),
            )));
        }
        // HTCondor reads an integer that does not fit in 64 bits as 0.
        Ok(Expr::Lit(Value::Int(text.parse::<i64>().unwrap_or(0))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reals_print_like_htcondor() {
        for (r, s) in [
            (1.5, "1.5"),
            (3.0, "3.0"),
            (1e20, "1E+20"),
            (1e15, "1000000000000000.0"),
            (1e16, "1E+16"),
            (0.1, "0.1"),
            (1e-5, "1E-05"),
            (123456789012345678.0, "1.234567890123457E+17"),
            (5e-324, "4.940656458412465E-324"),
            (f64::MAX, "1.797693134862316E+308"),
            (-2.5, "-2.5"),
            (-0.0, "-0.0"),
        ] {
            assert_eq!(format_json_real(r), s, "{r}");
        }
    }
}
