//! Regular expressions with PCRE semantics: `regexp`, `regexpMember`,
//! `regexps`, `replace` and `replaceall`.
//!
//! Options are letters: `i` caseless, `m` multi-line, `s` dot matches newline,
//! `x` extended; others are ignored, as HTCondor ignores them for forward
//! compatibility. Substitution text may use `\0`..`\9` for the match and its
//! groups.
//!
//! Matching is charged to the evaluation's budget: the subject's length, and
//! the backtracking a match may do. PCRE2 counts backtracking (its "match
//! limit", some nanoseconds a unit) but does not say how much a match used,
//! so a match is first allowed a little ([`MATCH_LIMITS`]), and only when
//! that is not enough tried again with more, each allowance charged before
//! it is tried. Most patterns need a few units; HTCondor's own limit, PCRE2's
//! default of ten million, is the last allowance, for budgets that can pay for
//! it.

use pcre2::bytes::{CaptureLocations, Regex, RegexBuilder};

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

type CacheKey = (String, [bool; 4], usize);

/// The backtracking one match may do (PCRE2's match limit), tried in turn;
/// each is charged to the budget, in steps, before it is tried. The last is
/// PCRE2's default, which HTCondor uses.
pub const MATCH_LIMITS: [u64; 5] = [16, 512, 16_384, 524_288, 10_000_000];

/// PCRE2's error code for a match that ran over its match limit.
const MATCH_LIMIT_EXCEEDED: i32 = -47;

/// A subject costs a step per this many bytes per match: PCRE2 reads some
/// hundreds of MB/s looking for where a match may start.
const SUBJECT_BYTES_PER_STEP: usize = 4;

/// The compiled form of `pattern` with the matching options `o` and match
/// limit `MATCH_LIMITS[tier]`, from a small process-wide cache (a memo: it
/// changes no result).
fn compile(pattern: &str, o: Options, tier: usize) -> Result<Regex, pcre2::Error> {
    use std::sync::{Mutex, OnceLock};
    static CACHE: OnceLock<Mutex<Vec<(CacheKey, Regex)>>> = OnceLock::new();
    let flags = [o.caseless, o.multi_line, o.dotall, o.extended];
    let cache = CACHE.get_or_init(Default::default);
    {
        let c = cache.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, re)) = c
            .iter()
            .find(|((p, f, t), _)| *t == tier && *f == flags && p == pattern)
        {
            return Ok(re.clone());
        }
    }
    let re = RegexBuilder::new()
        .caseless(o.caseless)
        .multi_line(o.multi_line)
        .dotall(o.dotall)
        .extended(o.extended)
        .build(&with_match_limit(pattern, MATCH_LIMITS[tier]))?;
    let mut c = cache.lock().unwrap_or_else(|e| e.into_inner());
    if c.len() >= CACHE_SIZE {
        c.remove(0);
    }
    c.push(((pattern.to_string(), flags, tier), re.clone()));
    Ok(re)
}

/// `pattern` with `(*LIMIT_MATCH=limit)` among its leading settings: after
/// any the pattern has, since the last setting of a limit is the one PCRE2
/// keeps (so a pattern cannot raise it).
fn with_match_limit(pattern: &str, limit: u64) -> String {
    const SETTINGS: [&str; 21] = [
        "LIMIT_MATCH",
        "LIMIT_HEAP",
        "LIMIT_DEPTH",
        "LIMIT_RECURSION",
        "UTF",
        "UCP",
        "NOTEMPTY",
        "NOTEMPTY_ATSTART",
        "NO_AUTO_POSSESS",
        "NO_DOTSTAR_ANCHOR",
        "NO_JIT",
        "NO_START_OPT",
        "CR",
        "LF",
        "CRLF",
        "ANYCRLF",
        "ANY",
        "NUL",
        "BSR_ANYCRLF",
        "BSR_UNICODE",
        "UTF8",
    ];
    let mut rest = pattern;
    while let Some(body) = rest.strip_prefix("(*") {
        let Some(close) = body.find(')') else { break };
        let item = &body[..close];
        let name = item.split_once('=').map_or(item, |(n, _)| n);
        if !SETTINGS.contains(&name) {
            break;
        }
        rest = &body[close + 1..];
    }
    let at = pattern.len() - rest.len();
    format!("{}(*LIMIT_MATCH={limit}){}", &pattern[..at], rest)
}

/// A pattern being matched, with the match limit it has needed so far; every
/// match is charged to the evaluation's budget.
pub(super) struct Matcher<'p> {
    pattern: &'p str,
    opts: Options,
    tier: usize,
    re: Regex,
    locs: Option<CaptureLocations>,
}

impl<'p> Matcher<'p> {
    /// Compiles `pattern` (ERROR if it is not one), charging what compiling
    /// and finding it in the cache cost.
    pub(super) fn new(
        ev: &mut Evaluator<'_>,
        pattern: &'p str,
        opts: Options,
    ) -> Result<Self, Value> {
        if !ev.charge_steps(pattern.len() as u64) {
            return Err(Value::Error);
        }
        let re = compile(pattern, opts, 0).map_err(|_| Value::Error)?;
        Ok(Matcher {
            pattern,
            opts,
            tier: 0,
            re,
            locs: None,
        })
    }

    /// Runs `f` with the current limit, and with the next ones while it
    /// runs over: each try is charged before it is made.
    fn run<T>(
        &mut self,
        ev: &mut Evaluator<'_>,
        scan_len: usize,
        mut f: impl FnMut(&Regex, &mut Option<CaptureLocations>) -> Result<T, pcre2::Error>,
    ) -> Result<T, Value> {
        let scan = (scan_len / SUBJECT_BYTES_PER_STEP) as u64;
        if !ev.charge_steps(scan + MATCH_LIMITS[self.tier]) {
            return Err(Value::Error);
        }
        loop {
            match f(&self.re, &mut self.locs) {
                Ok(v) => return Ok(v),
                Err(e)
                    if e.code() == MATCH_LIMIT_EXCEEDED && self.tier + 1 < MATCH_LIMITS.len() =>
                {
                    self.tier += 1;
                    if !ev.charge_steps(scan + MATCH_LIMITS[self.tier]) {
                        return Err(Value::Error);
                    }
                    self.re =
                        compile(self.pattern, self.opts, self.tier).map_err(|_| Value::Error)?;
                    self.locs = None;
                }
                Err(_) => return Err(Value::Error),
            }
        }
    }

    /// Whether the pattern matches somewhere in `subject`.
    pub(super) fn is_match(
        &mut self,
        ev: &mut Evaluator<'_>,
        subject: &[u8],
    ) -> Result<bool, Value> {
        self.run(ev, subject.len(), |re, _| re.is_match(subject))
    }

    /// The first match in `subject` at or after `pos`, with its groups kept
    /// for [`Matcher::group`]. What was read looking for it is charged once
    /// known (a search stops at the match it finds).
    fn find_at(
        &mut self,
        ev: &mut Evaluator<'_>,
        subject: &[u8],
        pos: usize,
    ) -> Result<Option<(usize, usize)>, Value> {
        let found = self.run(ev, 0, |re, locs| {
            let locs = locs.get_or_insert_with(|| re.capture_locations());
            Ok(re
                .captures_read_at(locs, subject, pos)?
                .map(|m| (m.start(), m.end())))
        })?;
        let read = found
            .map_or(subject.len(), |(_, end)| end)
            .saturating_sub(pos);
        if !ev.charge_steps((read / SUBJECT_BYTES_PER_STEP) as u64) {
            return Err(Value::Error);
        }
        Ok(found)
    }

    /// Group `i` of the last match, if it took part.
    fn group(&self, i: usize) -> Option<(usize, usize)> {
        self.locs.as_ref()?.get(i)
    }

    /// Groups as PCRE counts them in the last match: up to the highest one
    /// that took part.
    fn groups(&self) -> usize {
        let Some(locs) = &self.locs else { return 0 };
        (0..locs.len())
            .rev()
            .find(|&i| locs.get(i).is_some())
            .map_or(0, |i| i + 1)
    }
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
    Matcher::new(ev, p, opts)
        .and_then(|mut m| m.is_match(ev, t.as_bytes()))
        .map_or_else(|v| v, Value::Bool)
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
    let mut m = match Matcher::new(ev, p, opts) {
        Ok(m) => m,
        Err(v) => return v,
    };
    let mut maybe = false;
    for e in l.items.iter() {
        match ev.eval_arg(e, &l.scope) {
            Value::Str(s) => match m.is_match(ev, s.as_bytes()) {
                Ok(true) => return Value::Bool(true),
                Ok(false) => {}
                Err(v) => return v,
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
    let mut m = match Matcher::new(ev, p, opts) {
        Ok(m) => m,
        Err(v) => return v,
    };
    // A global substitution can make the result far longer than the target
    // (every empty match takes the replacement): it stops at what the
    // budget has left.
    let room = usize::try_from(ev.bytes_left()).unwrap_or(usize::MAX);
    match subst(ev, &mut m, t.as_bytes(), r.as_bytes(), opts, room) {
        Ok(out) => {
            let text = String::from_utf8(out)
                .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
            if !ev.charge_bytes(text.len() as u64) {
                return Value::Error;
            }
            Value::from(text)
        }
        Err(SubstFailed::TooLong) => {
            ev.charge_bytes(room as u64 + 1);
            Value::Error
        }
        Err(SubstFailed::Invalid) => Value::Error,
        Err(SubstFailed::Budget) => Value::Error,
    }
}

/// Why a substitution gave no result.
#[derive(Debug, PartialEq, Eq)]
enum SubstFailed {
    /// The replacement names a group beyond the last one that matched, or
    /// matching failed.
    Invalid,
    /// The result would be longer than allowed.
    TooLong,
    /// Matching ran over the evaluation's budget.
    Budget,
}

/// The substitution itself. Without `full` the result is only the
/// replacement text(s); with it, the target with the replacements in place.
/// A reference to a group beyond the last one that matched is an error, and
/// so is a result longer than `max_len` bytes (found out before it is made).
fn subst(
    ev: &mut Evaluator<'_>,
    m: &mut Matcher<'_>,
    target: &[u8],
    replacement: &[u8],
    o: Options,
    max_len: usize,
) -> Result<Vec<u8>, SubstFailed> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos <= target.len() {
        let found = m.find_at(ev, target, pos).map_err(|_| {
            if ev.exhausted() {
                SubstFailed::Budget
            } else {
                SubstFailed::Invalid
            }
        })?;
        let Some((start, end)) = found else {
            break;
        };
        let ngroups = m.groups();
        if o.full {
            out.extend_from_slice(&target[pos..start]);
        }
        let mut i = 0;
        while i < replacement.len() {
            let c = replacement[i];
            if c == b'\\' && replacement.get(i + 1).is_some_and(u8::is_ascii_digit) {
                let g = usize::from(replacement[i + 1] - b'0');
                if g >= ngroups {
                    return Err(SubstFailed::Invalid);
                }
                if let Some((s, e)) = m.group(g) {
                    // A group may be the whole target, and named many times.
                    if out.len() + (e - s) > max_len {
                        return Err(SubstFailed::TooLong);
                    }
                    out.extend_from_slice(&target[s..e]);
                }
                i += 2;
                continue;
            }
            out.push(c);
            i += 1;
        }
        // Besides groups (tested above), a match adds at most the target
        // before it and the replacement's own text: tested once a match.
        if out.len() > max_len {
            return Err(SubstFailed::TooLong);
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
    if out.len() > max_len {
        return Err(SubstFailed::TooLong);
    }
    Ok(out)
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
        let env = crate::Env::default().with_limits(crate::EvalLimits::UNLIMITED);
        let mut ev = Evaluator::new(None, None, &env);
        let mut m = Matcher::new(&mut ev, p, o).unwrap();
        subst(&mut ev, &mut m, t.as_bytes(), r.as_bytes(), o, usize::MAX)
            .ok()
            .map(|v| String::from_utf8(v).unwrap())
    }

    #[test]
    fn the_match_limit_goes_after_the_patterns_own_settings() {
        assert_eq!(with_match_limit("a+", 64), "(*LIMIT_MATCH=64)a+");
        assert_eq!(
            with_match_limit("(*UTF)(*LIMIT_MATCH=99999999)a", 64),
            "(*UTF)(*LIMIT_MATCH=99999999)(*LIMIT_MATCH=64)a"
        );
        assert_eq!(
            with_match_limit("(*FAIL)a", 64),
            "(*LIMIT_MATCH=64)(*FAIL)a"
        );
        assert_eq!(
            with_match_limit("(*pla:a)", 64),
            "(*LIMIT_MATCH=64)(*pla:a)"
        );
    }

    #[test]
    fn a_match_that_needs_more_backtracking_is_tried_again_and_charged() {
        let env = crate::Env::default();
        let mut ev = Evaluator::new(None, None, &env);
        let subject = "x".repeat(10_000);
        let mut m = Matcher::new(&mut ev, "^.*y$", Options::default()).unwrap();
        assert!(matches!(m.is_match(&mut ev, subject.as_bytes()), Ok(false)));
        assert!(m.tier >= 2, "{}", m.tier);
        assert!(ev.cost().steps > MATCH_LIMITS[1]);
        // A pattern cannot raise its own limit past what the budget pays for.
        let tight = crate::Env::default().with_limits(crate::EvalLimits {
            max_steps: 100_000,
            max_bytes: 1 << 20,
        });
        let mut ev = Evaluator::new(None, None, &tight);
        let hostile = format!("{}b", "a".repeat(40));
        let mut m = Matcher::new(
            &mut ev,
            "(*LIMIT_MATCH=10000000)(a|aa)+$",
            Options::default(),
        )
        .unwrap();
        assert!(m.is_match(&mut ev, hostile.as_bytes()).is_err());
        assert!(ev.exhausted());
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
