//! Regular expressions with PCRE semantics: `regexp`, `regexpMember`,
//! `regexps`, `replace` and `replaceall`.
//!
//! Options are letters: `i` caseless, `m` multi-line, `s` dot matches newline,
//! `x` extended; others are ignored, as HTCondor ignores them for forward
//! compatibility. Substitution text may use `\0`..`\9` for the match and its
//! groups.

use pcre2::bytes::{Regex, RegexBuilder};

use crate::eval::{Evaluator, Scope};
use crate::expr::Expr;
use crate::value::Value;

#[derive(Clone, Copy, Default)]
pub(super) struct Options {
    caseless: bool,
    multi_line: bool,
    dotall: bool,
    extended: bool,
    /// The result is the whole target with the substitution made in place.
    full: bool,
    /// Substitute every (non-overlapping) match.
    global: bool,
}

impl Options {
    /// HTCondor's option letters (either case).
    pub(super) fn from_letters(s: &str) -> Options {
        let mut o = Options::default();
        for c in s.chars() {
            match c.to_ascii_lowercase() {
                'i' => o.caseless = true,
                'm' => o.multi_line = true,
                's' => o.dotall = true,
                'x' => o.extended = true,
                _ => {}
            }
        }
        o
    }
}

/// How many compiled patterns are kept: policies use a handful of patterns
/// over and over, and compiling one costs far more than matching it.
const CACHE_SIZE: usize = 32;

type CacheKey = (String, [bool; 4]);

/// The compiled form of `pattern` with the matching options `o`, from a small
/// process-wide cache (a memo: it changes no result).
pub(super) fn compile(pattern: &str, o: Options) -> Result<Regex, pcre2::Error> {
    use std::sync::{Mutex, OnceLock};
    static CACHE: OnceLock<Mutex<Vec<(CacheKey, Regex)>>> = OnceLock::new();
    let flags = [o.caseless, o.multi_line, o.dotall, o.extended];
    let cache = CACHE.get_or_init(Default::default);
    {
        let c = cache.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, re)) = c.iter().find(|((p, f), _)| p == pattern && *f == flags) {
            return Ok(re.clone());
        }
    }
    let re = RegexBuilder::new()
        .caseless(o.caseless)
        .multi_line(o.multi_line)
        .dotall(o.dotall)
        .extended(o.extended)
        .build(pattern)?;
    let mut c = cache.lock().unwrap_or_else(|e| e.into_inner());
    if c.len() >= CACHE_SIZE {
        c.remove(0);
    }
    c.push(((pattern.to_string(), flags), re.clone()));
    Ok(re)
}

/// Evaluates `(pattern, target, [replacement,] [options])`: ERROR if any is
/// ERROR, then UNDEFINED if any is UNDEFINED, then the options must be a string.
fn eval_args(
    ev: &mut Evaluator<'_>,
    args: &[Expr],
    scope: &Scope,
    fixed: usize,
) -> Result<(Vec<Value>, Options), Value> {
    if args.len() != fixed && args.len() != fixed + 1 {
        return Err(Value::Error);
    }
    let vals = super::eval_all(ev, args, scope);
    if vals.iter().any(Value::is_error) {
        return Err(Value::Error);
    }
    if vals.iter().any(Value::is_undefined) {
        return Err(Value::Undefined);
    }
    let opts = match vals.get(fixed) {
        None => Options::default(),
        Some(Value::Str(s)) => {
            let mut o = Options::from_letters(s);
            // The f and g letters only mean something to substitutions.
            o.full = s.contains('f');
            o.global = s.contains('g');
            o
        }
        Some(_) => return Err(Value::Error),
    };
    Ok((vals, opts))
}

/// `regexp(pattern, target [, options])`: the pattern matches somewhere in target.
pub fn regexp(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    let (vals, opts) = match eval_args(ev, args, scope, 2) {
        Ok(x) => x,
        Err(v) => return v,
    };
    let (Value::Str(p), Value::Str(t)) = (&vals[0], &vals[1]) else {
        return Value::Error;
    };
    match compile(p, opts) {
        Ok(re) => re.is_match(t.as_bytes()).map_or(Value::Error, Value::Bool),
        Err(_) => Value::Error,
    }
}

/// `regexpMember(pattern, list [, options])`: some string of the list matches.
/// UNDEFINED elements make a "no" answer UNDEFINED; other non-strings are ERROR.
pub fn regexp_member(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    let (vals, opts) = match eval_args(ev, args, scope, 2) {
        Ok(x) => x,
        Err(v) => return v,
    };
    let (Value::Str(p), Value::List(l)) = (&vals[0], &vals[1]) else {
        return Value::Error;
    };
    let Ok(re) = compile(p, opts) else {
        return Value::Error;
    };
    let mut maybe = false;
    for e in l.items.iter() {
        match ev.eval(e, &l.scope) {
            Value::Str(s) => match re.is_match(s.as_bytes()) {
                Ok(true) => return Value::Bool(true),
                Ok(false) => {}
                Err(_) => return Value::Error,
            },
            Value::Undefined => maybe = true,
            _ => return Value::Error,
        }
    }
    if maybe {
        Value::Undefined
    } else {
        Value::Bool(false)
    }
}

fn substitute(
    ev: &mut Evaluator<'_>,
    args: &[Expr],
    scope: &Scope,
    full: bool,
    global: bool,
) -> Value {
    let (vals, mut opts) = match eval_args(ev, args, scope, 3) {
        Ok(x) => x,
        Err(v) => return v,
    };
    opts.full |= full;
    opts.global |= global;
    let (Value::Str(p), Value::Str(t), Value::Str(r)) = (&vals[0], &vals[1], &vals[2]) else {
        return Value::Error;
    };
    match compile(p, opts) {
        Ok(re) => subst(&re, t.as_bytes(), r.as_bytes(), opts).map_or(Value::Error, |out| {
            Value::from(String::from_utf8_lossy(&out).into_owned())
        }),
        Err(_) => Value::Error,
    }
}

/// The substitution itself. Without `full` the result is only the
/// replacement text(s); with it, the target with the replacements in place.
/// A reference to a group beyond the last one that matched is an error.
fn subst(re: &Regex, target: &[u8], replacement: &[u8], o: Options) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    let mut locs = re.capture_locations();
    let mut pos = 0;
    while pos <= target.len() {
        let Some(m) = re.captures_read_at(&mut locs, target, pos).ok()? else {
            break;
        };
        let (start, end) = (m.start(), m.end());
        // Groups as PCRE counts them: up to the highest one that matched.
        let ngroups = (0..locs.len())
            .rev()
            .find(|&i| locs.get(i).is_some())
            .map_or(0, |i| i + 1);
        if o.full {
            out.extend_from_slice(&target[pos..start]);
        }
        let mut i = 0;
        while i < replacement.len() {
            let c = replacement[i];
            if c == b'\\' && replacement.get(i + 1).is_some_and(u8::is_ascii_digit) {
                let g = usize::from(replacement[i + 1] - b'0');
                if g >= ngroups {
                    return None;
                }
                if let Some((s, e)) = locs.get(g) {
                    out.extend_from_slice(&target[s..e]);
                }
                i += 2;
                continue;
            }
            out.push(c);
            i += 1;
        }
        pos = end;
        if !o.global {
            break;
        }
        if start == end {
            // An empty match: copy one byte and look again after it.
            if pos < target.len() && o.full {
                out.push(target[pos]);
            }
            pos += 1;
        }
    }
    if o.full && pos < target.len() {
        out.extend_from_slice(&target[pos..]);
    }
    Some(out)
}

/// `regexps(pattern, target, replacement [, options])`.
pub fn regexps(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    substitute(ev, args, scope, false, false)
}

/// `replace(pattern, target, replacement [, options])`: the first match replaced.
pub fn replace(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    substitute(ev, args, scope, true, false)
}

/// `replaceall(pattern, target, replacement [, options])`: every match replaced.
pub fn replace_all(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    substitute(ev, args, scope, true, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(p: &str, t: &str, r: &str, letters: &str) -> Option<String> {
        let mut o = Options::from_letters(letters);
        o.full = letters.contains('f');
        o.global = letters.contains('g');
        let re = compile(p, o).unwrap();
        subst(&re, t.as_bytes(), r.as_bytes(), o).map(|v| String::from_utf8(v).unwrap())
    }

    #[test]
    fn substitutions() {
        assert_eq!(run("a", "banana", "o", "fg").as_deref(), Some("bonono"));
        assert_eq!(run("x*", "ab", "-", "fg").as_deref(), Some("-a-b-"));
        assert_eq!(run("(a)|(b)", "b", "\\1", "f"), Some(String::new()));
        assert_eq!(run("(a)", "a", "\\2", ""), None);
        assert_eq!(run("a", "a", "\\x", "").as_deref(), Some("\\x"));
    }
}
