//! Macro expansion: `$(NAME)`, `$(NAME:default)`, `$(DOLLAR)`, and the
//! function macros `$ENV()`, `$INT()`, `$REAL()`, `$STRING()`, `$EVAL()`,
//! `$SUBSTR()`, `$CHOICE()`, `$RANDOM_CHOICE()`, `$RANDOM_INTEGER()`,
//! `$DIRNAME()`, `$BASENAME()` and `$F[fpduwnxbqa]()`.
//!
//! HTCondor expands by rescanning: find the first reference that is
//! complete, replace it with its text, and start again, until none is
//! left. That is why `$(CHAIN$(X))` works (the inner reference is the first
//! complete one; the outer becomes complete once it is replaced) and why two
//! macros that name each other never finish. We keep the rescanning, so
//! every odd case behaves as in HTCondor, and add what HTCondor lacks: a
//! bound on the work, after which the caller gets an error naming the loop
//! instead of a hang.
//!
//! Details pinned by HTCondor 25.14.1 (vectors `m02`, `m05`, `m07` and
//! probes recorded in `tests/expand.rs`):
//! - `$$` is left alone (it is for job-time expansion); so is a `$` not
//!   followed by a complete reference, and an unknown `$FUNC(...)`;
//! - an undefined or empty macro expands to its `:default`, else to
//!   nothing; a default runs to the matching parenthesis;
//! - `$(DOLLAR)` is a literal `$` that is never expanded again;
//! - a function's argument runs to the first `)`, so `$INT($(X) * 2)` reads
//!   `$(X` (HTCondor's manual says to put such expressions in a macro);
//! - a function that fails expands to nothing.

use classad::{Env, Value};

use crate::syntax::is_name_char;

/// What expansion needs from the configuration.
pub(crate) trait Resolve {
    /// The unexpanded value `name` has for this lookup (prefixes and
    /// defaults applied), or `None` when it is not defined.
    fn raw(&self, name: &str) -> Option<String>;
    /// An environment variable, for `$ENV()`.
    fn env(&self, name: &str) -> Option<String>;
    /// A reproducible random number for `$RANDOM_*`; `salt` distinguishes
    /// the uses.
    fn random(&self, salt: &str) -> u64;
}

/// Stands in for `$(DOLLAR)` until expansion is over, so the `$` it becomes
/// is never read as the start of another reference.
const DOLLAR_MARK: char = '\u{1}';

/// How many replacements one expansion may make before it is called a loop.
/// Real configurations need a few hundred at most.
const MAX_STEPS: usize = 20_000;
/// How long an expanded value may grow before it is called a loop.
const MAX_LEN: usize = 1 << 20;

/// Expansion did not finish: a macro refers to itself through others.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExpandError {
    /// The macros on the loop, in order, when one could be found.
    pub cycle: Vec<String>,
}

impl std::fmt::Display for ExpandError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.cycle.is_empty() {
            f.write_str("macro expansion does not end (a macro refers to itself through others)")
        } else {
            write!(
                f,
                "macro expansion does not end: {} refer to each other ({})",
                if self.cycle.len() > 2 {
                    "these macros"
                } else {
                    "macros"
                },
                self.cycle.join(" -> ")
            )
        }
    }
}

impl std::error::Error for ExpandError {}

/// A reference found in a text: `text[start..end]` is replaced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Reference<'t> {
    pub start: usize,
    pub end: usize,
    pub kind: RefKind<'t>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RefKind<'t> {
    /// `$(name)` or `$(name:default)`.
    Macro {
        name: &'t str,
        default: Option<&'t str>,
    },
    /// `$ENV(name)` or `$ENV(name:default)`.
    Env {
        name: &'t str,
        default: Option<&'t str>,
    },
    /// `$FUNC(body)`.
    Function { func: &'t str, body: &'t str },
}

/// The first complete reference in `text` at or after `from`.
pub(crate) fn next_reference(text: &str, from: usize) -> Option<Reference<'_>> {
    let bytes = text.as_bytes();
    let mut i = from;
    while let Some(off) = text.get(i..).and_then(|t| t.find('$')) {
        let start = i + off;
        if bytes.get(start + 1) == Some(&b'$') {
            i = start + 2;
            continue;
        }
        let func_end = start
            + 1
            + text[start + 1..]
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(text.len() - start - 1);
        let func = &text[start + 1..func_end];
        if bytes.get(func_end) != Some(&b'(') {
            i = start + 1;
            continue;
        }
        let found = if func.is_empty() {
            named_reference(text, func_end).map(|(end, name, default)| Reference {
                start,
                end,
                kind: RefKind::Macro { name, default },
            })
        } else if func == "ENV" {
            named_reference(text, func_end).map(|(end, name, default)| Reference {
                start,
                end,
                kind: RefKind::Env { name, default },
            })
        } else if is_function(func) {
            text[func_end + 1..].find(')').map(|close| Reference {
                start,
                end: func_end + 1 + close + 1,
                kind: RefKind::Function {
                    func,
                    body: &text[func_end + 1..func_end + 1 + close],
                },
            })
        } else {
            None
        };
        match found {
            Some(r) => return Some(r),
            None => i = start + 1,
        }
    }
    None
}

/// After `$(` (or `$ENV(`) at `open`: a name, then `)` or `:default)` with
/// the default running to the matching parenthesis.
fn named_reference(text: &str, open: usize) -> Option<(usize, &str, Option<&str>)> {
    let after = &text[open + 1..];
    let name_len = after
        .find(|c: char| !is_name_char(c))
        .unwrap_or(after.len());
    if name_len == 0 {
        return None;
    }
    let name = &after[..name_len];
    match after.as_bytes().get(name_len) {
        Some(b')') => Some((open + 1 + name_len + 1, name, None)),
        Some(b':') => {
            let close = crate::syntax::matching_paren(text, open)?;
            Some((close + 1, name, Some(&text[open + 1 + name_len + 1..close])))
        }
        _ => None,
    }
}

fn is_function(func: &str) -> bool {
    matches!(
        func,
        "INT"
            | "REAL"
            | "STRING"
            | "EVAL"
            | "SUBSTR"
            | "CHOICE"
            | "RANDOM_CHOICE"
            | "RANDOM_INTEGER"
            | "DIRNAME"
            | "BASENAME"
    ) || func
        .strip_prefix('F')
        .is_some_and(|opts| opts.chars().all(|c| "fpduwnxbqa".contains(c)))
}

/// Expands every reference in `text`.
pub(crate) fn expand(text: &str, r: &dyn Resolve) -> Result<String, ExpandError> {
    if !text.contains('$') {
        return Ok(text.to_string());
    }
    let mut s = text.to_string();
    let mut steps = 0;
    while let Some(found) = next_reference(&s, 0) {
        steps += 1;
        if steps > MAX_STEPS || s.len() > MAX_LEN {
            return Err(ExpandError { cycle: Vec::new() });
        }
        let replacement = match &found.kind {
            RefKind::Macro { name, .. } if name.eq_ignore_ascii_case("DOLLAR") => {
                DOLLAR_MARK.to_string()
            }
            RefKind::Macro { name, default } => r
                .raw(name)
                .filter(|v| !v.is_empty())
                .or_else(|| default.map(str::to_string))
                .unwrap_or_default(),
            RefKind::Env { name, default } => match r.env(name) {
                Some(v) => v,
                None => default.unwrap_or("UNDEFINED").to_string(),
            },
            RefKind::Function { func, body } => function(func, body, r, steps)?,
        };
        s.replace_range(found.start..found.end, &replacement);
    }
    if s.contains(DOLLAR_MARK) {
        s = s.replace(DOLLAR_MARK, "$");
    }
    Ok(s)
}

/// The value a function argument names: a macro's expanded value when the
/// argument is the name of a defined macro, else the argument's own text.
fn argument(arg: &str, r: &dyn Resolve) -> Result<String, ExpandError> {
    let arg = arg.trim();
    match r.raw(arg).filter(|v| !v.is_empty()) {
        Some(raw) if arg.chars().all(is_name_char) => expand(&raw, r),
        _ => Ok(arg.to_string()),
    }
}

/// Evaluates text as a ClassAd expression with no ads (HTCondor's `$INT`,
/// `$REAL`, `$STRING`, `$EVAL`).
pub(crate) fn evaluate(text: &str) -> Option<Value> {
    let expr = classad::parse_expr(text).ok()?;
    let v = classad::eval_expr(&expr, None, None, &Env::default());
    (!v.is_undefined() && !v.is_error()).then_some(v)
}

fn function(func: &str, body: &str, r: &dyn Resolve, salt: usize) -> Result<String, ExpandError> {
    // Everything after the first comma is the format, blanks included.
    let (item, format) = match body.split_once(',') {
        Some((i, f)) => (i, Some(f)),
        None => (body, None),
    };
    Ok(match func {
        "INT" => {
            let v = evaluate(&argument(item, r)?);
            let n = match v {
                Some(Value::Int(i)) => Some(i),
                Some(Value::Real(x)) if x.is_finite() => Some(x.trunc() as i64),
                Some(Value::Bool(b)) => Some(b as i64),
                _ => None,
            };
            n.and_then(|n| printf(format.unwrap_or("%d"), &Arg::Int(n)))
                .unwrap_or_default()
        }
        "REAL" => {
            let v = evaluate(&argument(item, r)?);
            v.as_ref()
                .and_then(Value::as_number)
                .and_then(|x| printf(format.unwrap_or("%G"), &Arg::Real(x)))
                .unwrap_or_default()
        }
        "STRING" => {
            let text = argument(item, r)?;
            let s = match evaluate(&text) {
                Some(Value::Str(s)) => s.to_string(),
                _ => text,
            };
            printf(format.unwrap_or("%s"), &Arg::Str(&s)).unwrap_or_default()
        }
        "EVAL" => match evaluate(&argument(body, r)?) {
            Some(Value::Str(s)) => s.to_string(),
            Some(v) => v.to_string(),
            None => String::new(),
        },
        "SUBSTR" => {
            let mut args = body.split(',');
            // Unlike the other functions, $SUBSTR takes only a macro name.
            let name = args.next().unwrap_or("").trim();
            let text = match r.raw(name) {
                Some(raw) => expand(&raw, r)?,
                None => String::new(),
            };
            let start = args.next().and_then(|a| a.trim().parse::<i64>().ok());
            let len = args.next().map(|a| a.trim().parse::<i64>().ok());
            match (start, len) {
                (Some(start), None) => substr(&text, start, None),
                (Some(start), Some(Some(len))) => substr(&text, start, Some(len)),
                _ => String::new(),
            }
        }
        "CHOICE" => {
            let mut args: Vec<&str> = body.split(',').collect();
            let index = evaluate(&argument(args.remove(0), r)?).and_then(|v| v.as_int());
            let items: Vec<String> = if args.len() == 1 {
                argument(args[0], r)?
                    .split(',')
                    .map(|s| s.trim().to_string())
                    .collect()
            } else {
                args.iter().map(|s| s.trim().to_string()).collect()
            };
            index
                .and_then(|i| usize::try_from(i).ok())
                .and_then(|i| items.get(i).cloned())
                .unwrap_or_default()
        }
        "RANDOM_CHOICE" => {
            let items: Vec<&str> = body.split(',').map(str::trim).collect();
            let pick = r.random(&format!("{salt}:{body}")) as usize % items.len();
            items[pick].to_string()
        }
        "RANDOM_INTEGER" => {
            let nums: Vec<Option<i64>> = body.split(',').map(|s| s.trim().parse().ok()).collect();
            match nums.as_slice() {
                [Some(lo), Some(hi)] | [Some(lo), Some(hi), None] if lo <= hi => {
                    random_integer(*lo, *hi, 1, r, salt, body)
                }
                [Some(lo), Some(hi), Some(step)] if lo <= hi && *step > 0 => {
                    random_integer(*lo, *hi, *step, r, salt, body)
                }
                _ => String::new(),
            }
        }
        "DIRNAME" => file_parts("p", &argument(body, r)?),
        "BASENAME" => {
            let (path, suffix) = match body.split_once(',') {
                Some((p, s)) => (p, Some(s.trim())),
                None => (body, None),
            };
            let base = file_parts("nx", &argument(path, r)?);
            match suffix {
                Some(sfx) if !sfx.is_empty() && base.ends_with(sfx) && base != sfx => {
                    base[..base.len() - sfx.len()].to_string()
                }
                _ => base,
            }
        }
        f => file_parts(&f[1..], &argument(body, r)?),
    })
}

fn random_integer(lo: i64, hi: i64, step: i64, r: &dyn Resolve, salt: usize, body: &str) -> String {
    let choices = ((hi - lo) / step + 1) as u64;
    let pick = r.random(&format!("{salt}:{body}")) % choices;
    (lo + pick as i64 * step).to_string()
}

/// `$SUBSTR`: a negative start counts from the end; a negative length
/// leaves that many characters off the end.
fn substr(text: &str, start: i64, len: Option<i64>) -> String {
    let chars: Vec<char> = text.chars().collect();
    let n = chars.len() as i64;
    let from = if start < 0 { (n + start).max(0) } else { start };
    if from >= n {
        return String::new();
    }
    let to = match len {
        None => n,
        Some(l) if l < 0 => n + l,
        Some(l) => (from + l).min(n),
    };
    if to <= from {
        return String::new();
    }
    chars[from as usize..to as usize].iter().collect()
}

/// `$F[fpduwnxbqa]`: pieces of a file name. `p` the directory with its
/// trailing slash, `d` the last directory with its slash, `n` the name
/// without extension, `x` the extension with its dot; `b` drops that slash
/// or dot; `u`/`w` use `/` or `\`; `q` quotes (`a`: single quotes). With
/// no piece chosen, the whole name. `f` (make absolute) only means
/// something in submit files, as in HTCondor.
fn file_parts(opts: &str, path: &str) -> String {
    let path = path.trim();
    let has = |c| opts.contains(c);
    let sep_at = path.rfind(['/', '\\']);
    let (dir, file) = match sep_at {
        Some(i) => (&path[..=i], &path[i + 1..]),
        None => ("", path),
    };
    let (stem, ext) = match file.rfind('.') {
        Some(i) => (&file[..i], &file[i..]),
        None => (file, ""),
    };
    let mut out = String::new();
    let pieces = has('p') || has('d') || has('n') || has('x');
    if !pieces {
        out.push_str(path);
    }
    if has('p') {
        out.push_str(if has('b') {
            dir.strip_suffix(['/', '\\']).unwrap_or(dir)
        } else {
            dir
        });
    } else if has('d') {
        let parent = dir.strip_suffix(['/', '\\']).unwrap_or(dir);
        let last = match parent.rfind(['/', '\\']) {
            Some(i) => &dir[i + 1..],
            None => dir,
        };
        out.push_str(if has('b') {
            last.strip_suffix(['/', '\\']).unwrap_or(last)
        } else {
            last
        });
    }
    if has('n') {
        out.push_str(stem);
    }
    if has('x') {
        out.push_str(if has('b') {
            ext.strip_prefix('.').unwrap_or(ext)
        } else {
            ext
        });
    }
    if has('w') {
        out = out.replace('/', "\\");
    } else if has('u') {
        out = out.replace('\\', "/");
    }
    if has('q') {
        let q = if has('a') { '\'' } else { '"' };
        out = format!("{q}{out}{q}");
    }
    out
}

/// A value for [`printf`].
enum Arg<'a> {
    Int(i64),
    Real(f64),
    Str(&'a str),
}

/// Formats with the first `%` conversion of a C format, the rest kept as
/// text (`Area=%d`, ` %.3f`). `None` if the format has no conversion that
/// fits the value.
fn printf(format: &str, arg: &Arg<'_>) -> Option<String> {
    let mut out = String::new();
    let mut chars = format.char_indices().peekable();
    let mut done = false;
    while let Some((_, c)) = chars.next() {
        if c != '%' || done {
            out.push(c);
            continue;
        }
        if chars.peek().map(|p| p.1) == Some('%') {
            chars.next();
            out.push('%');
            continue;
        }
        let mut flags = String::new();
        while let Some(&(_, f)) = chars.peek() {
            if "-+ 0#".contains(f) {
                flags.push(f);
                chars.next();
            } else {
                break;
            }
        }
        let mut width = String::new();
        while let Some(&(_, d)) = chars.peek().filter(|p| p.1.is_ascii_digit()) {
            width.push(d);
            chars.next();
        }
        let mut precision = None;
        if chars.peek().map(|p| p.1) == Some('.') {
            chars.next();
            let mut p = String::new();
            while let Some(&(_, d)) = chars.peek().filter(|p| p.1.is_ascii_digit()) {
                p.push(d);
                chars.next();
            }
            precision = Some(p.parse::<usize>().unwrap_or(0));
        }
        // Length modifiers (`%ld`, `%lld`) change nothing here.
        while chars.peek().is_some_and(|p| "hlLqjzt".contains(p.1)) {
            chars.next();
        }
        let (_, conv) = chars.next()?;
        let body = match (conv, arg) {
            ('d' | 'i' | 'u', Arg::Int(n)) => with_sign(n.to_string(), *n >= 0, &flags),
            ('d' | 'i' | 'u', Arg::Real(x)) => {
                with_sign((*x as i64).to_string(), *x >= 0.0, &flags)
            }
            ('x', Arg::Int(n)) => format!("{n:x}"),
            ('X', Arg::Int(n)) => format!("{n:X}"),
            ('o', Arg::Int(n)) => format!("{n:o}"),
            ('f' | 'F' | 'e' | 'E' | 'g' | 'G', Arg::Int(n)) => {
                real(conv, *n as f64, precision, &flags)
            }
            ('f' | 'F' | 'e' | 'E' | 'g' | 'G', Arg::Real(x)) => real(conv, *x, precision, &flags),
            ('s', Arg::Str(s)) => match precision {
                Some(p) => s.chars().take(p).collect(),
                None => s.to_string(),
            },
            ('s', Arg::Int(n)) => n.to_string(),
            ('s', Arg::Real(x)) => real('G', *x, None, ""),
            _ => return None,
        };
        let width: usize = width.parse().unwrap_or(0);
        let pad = width.saturating_sub(body.chars().count());
        if flags.contains('-') {
            out.push_str(&body);
            out.extend(std::iter::repeat_n(' ', pad));
        } else if flags.contains('0') && conv != 's' {
            let (sign, digits) = match body.strip_prefix(['-', '+', ' ']) {
                Some(d) => (&body[..1], d),
                None => ("", body.as_str()),
            };
            out.push_str(sign);
            out.extend(std::iter::repeat_n('0', pad));
            out.push_str(digits);
        } else {
            out.extend(std::iter::repeat_n(' ', pad));
            out.push_str(&body);
        }
        done = true;
    }
    done.then_some(out)
}

fn with_sign(digits: String, non_negative: bool, flags: &str) -> String {
    if non_negative && flags.contains('+') {
        format!("+{digits}")
    } else if non_negative && flags.contains(' ') {
        format!(" {digits}")
    } else {
        digits
    }
}

/// C's `%f`, `%e` and `%g` (upper case for `F`, `E`, `G`).
fn real(conv: char, x: f64, precision: Option<usize>, flags: &str) -> String {
    let p = precision.unwrap_or(6);
    let s = match conv.to_ascii_lowercase() {
        'f' => format!("{x:.p$}"),
        'e' => c_exponent(format!("{x:.p$e}")),
        _ => {
            // %g: the shorter of %e and %f with `p` significant digits,
            // trailing zeros removed (unless `#`).
            let p = p.max(1);
            if x == 0.0 {
                "0".to_string()
            } else {
                let exp = x.abs().log10().floor() as i32;
                let exp = {
                    // Rounding to p digits can carry into the next power.
                    let rounded: f64 = format!("{x:.prec$e}", prec = p - 1)
                        .split('e')
                        .nth(1)
                        .and_then(|e| e.parse().ok())
                        .unwrap_or(exp as f64);
                    rounded as i32
                };
                let body = if exp < -4 || exp >= p as i32 {
                    c_exponent(format!("{x:.prec$e}", prec = p - 1))
                } else {
                    let decimals = (p as i32 - 1 - exp).max(0) as usize;
                    format!("{x:.decimals$}")
                };
                if flags.contains('#') {
                    body
                } else {
                    strip_zeros(&body)
                }
            }
        }
    };
    let s = with_sign(s, x >= 0.0, flags);
    if conv.is_ascii_uppercase() {
        s.to_ascii_uppercase()
    } else {
        s
    }
}

/// Rust writes `1e20`; C writes `1e+20`.
fn c_exponent(s: String) -> String {
    match s.split_once('e') {
        Some((m, e)) => {
            let (sign, digits) = match e.strip_prefix('-') {
                Some(d) => ('-', d),
                None => ('+', e),
            };
            format!("{m}e{sign}{digits:0>2}")
        }
        None => s,
    }
}

fn strip_zeros(s: &str) -> String {
    match s.split_once('e') {
        Some((m, e)) => format!("{}e{e}", strip_zeros(m)),
        None if s.contains('.') => s.trim_end_matches('0').trim_end_matches('.').to_string(),
        None => s.to_string(),
    }
}

/// The macros a text refers to, including those inside defaults (for
/// finding a loop and for `-verbose`).
pub(crate) fn referenced_names(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(r) = next_reference(text, i) {
        if let RefKind::Macro { name, .. } = r.kind {
            out.push(name);
        }
        // Step inside the reference so names in its default are seen too.
        i = r.start + 2;
    }
    out
}

/// A chain of macros that leads from `start` back to one already on the
/// chain, if there is one.
pub(crate) fn find_cycle(start: &str, r: &dyn Resolve) -> Vec<String> {
    fn walk(name: &str, r: &dyn Resolve, path: &mut Vec<String>, seen: &mut Vec<String>) -> bool {
        if let Some(at) = path.iter().position(|p| p.eq_ignore_ascii_case(name)) {
            path.drain(..at);
            path.push(name.to_string());
            return true;
        }
        if seen.iter().any(|s| s.eq_ignore_ascii_case(name)) {
            return false;
        }
        seen.push(name.to_string());
        let Some(raw) = r.raw(name) else {
            return false;
        };
        path.push(name.to_string());
        for next in referenced_names(&raw) {
            if walk(next, r, path, seen) {
                return true;
            }
        }
        path.pop();
        false
    }
    let mut path = Vec::new();
    let mut seen = Vec::new();
    if walk(start, r, &mut path, &mut seen) {
        path
    } else {
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    struct Map(HashMap<String, String>);

    impl Resolve for Map {
        fn raw(&self, name: &str) -> Option<String> {
            self.0.get(&name.to_ascii_uppercase()).cloned()
        }
        fn env(&self, name: &str) -> Option<String> {
            (name == "HOME").then(|| "/home/u".to_string())
        }
        fn random(&self, _: &str) -> u64 {
            7
        }
    }

    fn map(pairs: &[(&str, &str)]) -> Map {
        Map(pairs
            .iter()
            .map(|(k, v)| (k.to_ascii_uppercase(), v.to_string()))
            .collect())
    }

    fn x(text: &str, m: &Map) -> String {
        expand(text, m).unwrap()
    }

    #[test]
    fn references_defaults_and_dollars() {
        let m = map(&[
            ("X", "1"),
            ("CHAIN1", "bottom"),
            ("SET", "here"),
            ("EMPTY", ""),
        ]);
        assert_eq!(x("$(CHAIN$(X))", &m), "bottom");
        assert_eq!(x("[$(X)$(x)] and $(NOPE) end", &m), "[11] and  end");
        assert_eq!(x("$$(Memory) $5 $(X", &m), "$$(Memory) $5 $(X");
        assert_eq!(x("$(UNSET:$(SET))", &m), "here");
        assert_eq!(x("$(UNSET:$(ALSO:deep))", &m), "deep");
        assert_eq!(x("$(UNSET:a(b)c)", &m), "a(b)c");
        assert_eq!(x("$(EMPTY:was empty)", &m), "was empty");
        assert_eq!(x("$(DOLLAR)(X) $(DOLLAR)$(DOLLAR)", &m), "$(X) $$");
        assert_eq!(x("$QUOTE(abc)", &m), "$QUOTE(abc)");
        assert_eq!(
            x("$ENV(HOME)x $ENV(NOPE) $ENV(NOPE:d)", &m),
            "/home/ux UNDEFINED d"
        );
    }

    #[test]
    fn functions() {
        let m = map(&[
            ("X", "10"),
            ("T", "abcdef"),
            ("LIST", "a, b, c"),
            ("P", "/a/b/c.txt"),
            ("Y", "2.5"),
        ]);
        assert_eq!(
            x("$INT(X)|$INT(7)|$INT(X * 2)|$INT(T)|$INT(Y)", &m),
            "10|7|||2"
        );
        assert_eq!(x("$INT(X,%04d)|$INT(X,Area=%d)", &m), "0010|Area=10");
        assert_eq!(
            x("$REAL(X)|$REAL(1.5, %.3f)|$REAL(1e20)|$REAL(0.1)", &m),
            "10| 1.500|1E+20|0.1"
        );
        assert_eq!(x("$INT($(X) * 2)", &m), " * 2)");
        assert_eq!(
            x(
                "$SUBSTR(T, 2)|$SUBSTR(T, 2, 3)|$SUBSTR(T, -2)|$SUBSTR(T, 1, -1)",
                &m
            ),
            "cdef|cde|ef|bcde"
        );
        assert_eq!(
            x("$SUBSTR(T, 4, -3)|$SUBSTR(T, 10)|$SUBSTR(T, -10)", &m),
            "||abcdef"
        );
        assert_eq!(
            x(
                "$CHOICE(0, LIST)|$CHOICE(2, a, b, c)|$CHOICE(5, LIST)|$CHOICE(1,X)",
                &m
            ),
            "a|c||"
        );
        assert_eq!(
            x("$F(P)|$Fn(P)|$Fx(P)|$Fp(P)|$Fqd(P)|$Fnx(P)|$Fdb(P)", &m),
            "/a/b/c.txt|c|.txt|/a/b/|\"b/\"|c.txt|b"
        );
        assert_eq!(
            x("$DIRNAME(P)|$BASENAME(P)|$BASENAME(P, .txt)", &m),
            "/a/b/|c.txt|c"
        );
        assert_eq!(
            x("$Fd(c.txt)|$Fnx(/a/b/)|$Fqa(/a)|$Fw(/a/b)|$Fxb(a.b)", &m),
            "||'/a'|\\a\\b|b"
        );
        assert_eq!(x("$RANDOM_INTEGER(5,5)|$RANDOM_CHOICE(7)", &m), "5|7");
        assert_eq!(
            x("$STRING(T)|$STRING(T,Name: %s)|$EVAL(X)", &m),
            "abcdef|Name: abcdef|10"
        );
    }

    #[test]
    fn loops_are_errors_that_name_the_loop() {
        let m = map(&[("LOOP1", "$(LOOP2)"), ("LOOP2", "x $(LOOP1)")]);
        assert!(expand("$(LOOP1)", &m).is_err());
        assert_eq!(find_cycle("LOOP1", &m), vec!["LOOP1", "LOOP2", "LOOP1"]);
    }
}
