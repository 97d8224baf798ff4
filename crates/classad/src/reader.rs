//! Reading ads from text, the way HTCondor's ad-file reader does (the reader
//! behind `condor_q -file`, `condor_status -file` and the Python bindings'
//! `parseNext` / `parseAds`).
//!
//! Three input forms are understood:
//!
//! * **Old syntax** ("long form", what `condor_q -l` prints): one
//!   `Name = expr` per line, `#` comment lines, a blank line between ads.
//! * **New syntax**: a stream of `[ name = expr; ... ]` ads, with comments and
//!   white space between them, and the `{ [..], [..] }` list form.
//! * **JSON** (what `condor_q -json` prints): objects, alone or in a
//!   `[ {..}, {..} ]` array; the objects are read by [`crate::json`].
//!
//! HTCondor's reader has many quirks, and this module reproduces them on
//! purpose, because they decide which ads a tool sees in a file:
//!
//! * Old syntax: the attribute name is everything before the first `=`
//!   (trailing spaces removed, tabs kept), so `+Attr`, `1abc` or `a.b` are
//!   names. The value is parsed with old-syntax string rules (backslashes are
//!   literal) and anything after one complete expression is ignored
//!   (`a = 1 // note` or `a = 1;` are fine). A malformed line ends the ad: the
//!   rest of the ad (up to the next blank line) is thrown away, and the
//!   attributes read before it are kept.
//! * Blank lines before the first line of an old-syntax ad are skipped, but a
//!   blank line after a comment ends an ad with nothing in it, which the
//!   reader reports as an error unless it is at the end of the text.
//! * New syntax: an empty ad `[ ]` makes the reader fall back to old-syntax
//!   lines for the rest of the ad (so `[ ] [b=2]` reads an attribute named
//!   `[b`). A failed parse is "the end" when the parser had read up to the
//!   end of the text while failing, and an error otherwise; how far it had
//!   read depends on the lexer's one-character look-ahead, reproduced here.
//!
//! The main entry points are [`parse_next`] (one ad, as the Python bindings'
//! `parseNext`), [`read_ads`] / [`AdReader`] (every ad of a text, as the tools
//! read a file) and [`parse_old_ad`] (a single old-syntax ad, strictly).

use serde_json::{json, Value as Json};

use crate::ad::ClassAd;
use crate::error::ParseError;
use crate::expr::Expr;
use crate::lexer::{Lexer, StringMode, Tok};
use crate::parser::Parser;
use crate::value::{ArcStr, Value};

/// Which form the text is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Syntax {
    /// One `Name = expr` per line (`condor_q -l`).
    Old,
    /// `[ name = expr; ... ]` ads.
    New,
    /// JSON objects (`condor_q -json`).
    Json,
}

/// One ad read from the text.
#[derive(Clone, Debug)]
pub struct ReadAd {
    /// The ad (never empty: HTCondor's reader does not return empty ads).
    pub ad: ClassAd,
    /// Bytes of the text this read used, from where it started.
    pub consumed: usize,
    /// An old-syntax line that did not parse and ended this ad early (the
    /// reader keeps the attributes before it and drops the rest of the ad,
    /// silently, as HTCondor does; this says what was dropped).
    pub dropped: Option<ParseError>,
}

/// What one step of the reader found.
#[derive(Clone, Debug)]
pub enum Next {
    /// An ad.
    Ad(ReadAd),
    /// No ad, and nothing left: the text is used up.
    End,
    /// No ad, and the reader stopped before the end of the text.
    Error(ParseError),
}

/// Why reading a whole text stopped.
#[derive(Clone, Debug)]
pub enum Stop {
    /// The text is used up.
    End,
    /// Something that is not an ad; the ads before it were read.
    Error(ParseError),
}

/// Every ad of a text, and why reading stopped.
#[derive(Clone, Debug)]
pub struct AdStream {
    pub ads: Vec<ReadAd>,
    pub stop: Stop,
}

/// Reads the first ad of `text`, as one call of HTCondor's parse-next (the
/// Python bindings' `parseNext`): a fresh reader each time, so the list forms
/// `{ [..], [..] }` and `[ {..}, {..} ]` give only their first ad.
pub fn parse_next(text: &str, syntax: Syntax) -> Next {
    let mut state = ListState::default();
    next_at(text, 0, syntax, &mut state)
}

/// Reads every ad of `text` the way the Python bindings' `parseAds` does:
/// [`parse_next`] again on the rest of the text after each ad.
pub fn parse_ads(text: &str, syntax: Syntax) -> AdStream {
    let mut pos = 0;
    collect(|| {
        let next = next_at(text, pos, syntax, &mut ListState::default());
        if let Next::Ad(r) = &next {
            pos += r.consumed;
        }
        next
    })
}

/// Reads every ad of `text` the way HTCondor's tools read an ad file: one
/// reader over the whole text, so the list forms `{ [..], [..] }` (new
/// syntax) and `[ {..}, {..} ]` (JSON, as `condor_q -json` prints) give all
/// their ads.
pub fn read_ads(text: &str, syntax: Syntax) -> AdStream {
    let mut reader = AdReader::new(text, syntax);
    collect(|| reader.next_ad())
}

/// Gathers ads from `next` until the end or an error.
fn collect(mut next: impl FnMut() -> Next) -> AdStream {
    let mut ads = Vec::new();
    loop {
        match next() {
            Next::Ad(r) => ads.push(r),
            Next::End => {
                return AdStream {
                    ads,
                    stop: Stop::End,
                }
            }
            Next::Error(e) => {
                return AdStream {
                    ads,
                    stop: Stop::Error(e),
                }
            }
        }
    }
}

/// An ad-file reader over a text: each step yields the next ad, like
/// HTCondor's `CondorClassAdFileIterator`.
pub struct AdReader<'t> {
    text: &'t str,
    pos: usize,
    syntax: Syntax,
    state: ListState,
    done: bool,
}

impl<'t> AdReader<'t> {
    pub fn new(text: &'t str, syntax: Syntax) -> AdReader<'t> {
        AdReader {
            text,
            pos: 0,
            syntax,
            state: ListState::default(),
            done: false,
        }
    }

    /// Byte offset of the first byte not yet read.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// The next ad; after [`Next::End`] or [`Next::Error`] it only says `End`.
    pub fn next_ad(&mut self) -> Next {
        if self.done {
            return Next::End;
        }
        let n = next_at(self.text, self.pos, self.syntax, &mut self.state);
        match &n {
            Next::Ad(r) => self.pos += r.consumed,
            _ => self.done = true,
        }
        n
    }
}

impl Iterator for AdReader<'_> {
    type Item = Result<ReadAd, ParseError>;

    fn next(&mut self) -> Option<Self::Item> {
        match self.next_ad() {
            Next::Ad(r) => Some(Ok(r)),
            Next::End => None,
            Next::Error(e) => Some(Err(e)),
        }
    }
}

/// Parses `text` as a single old-syntax ad, strictly, for files a person
/// hands us: every line that is not blank or a `#` comment must be
/// `Name = expr` with nothing after the expression, blank lines may surround
/// the ad but not split it, and the first line that breaks a rule is an error
/// saying where. (HTCondor's ad-file reader, [`read_ads`], silently drops such
/// lines instead.) Names follow the reader's rules: the text before the
/// first `=`.
pub fn parse_old_ad(text: &str) -> Result<ClassAd, ParseError> {
    let mut ad = ClassAd::new();
    let mut ended = false;
    for (start, line) in lines(text, 0) {
        if is_blank(line) {
            ended |= !ad.is_empty();
            continue;
        }
        if is_comment(line) {
            continue;
        }
        if ended {
            let lead = line.len() - line.trim_start().len();
            return Err(ParseError::at(
                text,
                start + lead,
                "a second ad",
                "one ad (a blank line ends an ad)",
            ));
        }
        let (name, expr) = parse_old_line(text, start, line, Strictness::Whole)?;
        ad.insert(name, expr);
    }
    Ok(ad)
}

/// Parses one old-syntax line, `Name = expr`, into its name and expression.
/// The name is taken verbatim (see the module documentation).
pub fn parse_old_attr(line: &str) -> Result<(String, Expr), ParseError> {
    let line = line.strip_suffix('\n').unwrap_or(line);
    let line = line.strip_suffix('\r').unwrap_or(line);
    parse_old_line(line, 0, line, Strictness::Whole).map(|(name, e)| (name.to_string(), e))
}

/// Whether text after an old-syntax value is an error (for people) or
/// ignored (as HTCondor's reader does).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Strictness {
    Whole,
    Prefix,
}

/// The list-wrapper state HTCondor's reader keeps between ads: whether it is
/// inside `{ ... }` (new syntax) or `[ ... ]` (JSON).
#[derive(Clone, Copy, Debug, Default)]
struct ListState {
    inside_list: bool,
}

fn next_at(text: &str, pos: usize, syntax: Syntax, state: &mut ListState) -> Next {
    let pos = pos.min(text.len());
    // The bindings hand HTCondor's reader the text from `pos` on; it knows
    // nothing before it, so all offsets are relative to that slice (errors are
    // moved back to the whole text at the end).
    let src = &text[pos..];
    if src.is_empty() {
        return Next::End;
    }
    let step = match syntax {
        Syntax::Old => read_long_form(src, 0, LongForm::OLD),
        Syntax::New => read_new(src, state),
        Syntax::Json => read_json(src, state),
    };
    match step {
        Step::Ad { ad, end, dropped } if !ad.is_empty() => Next::Ad(ReadAd {
            ad,
            consumed: end,
            dropped: dropped.map(|e| shift(text, pos, e)),
        }),
        // No ad: the bindings call it the end when the reader used up the
        // text, an error otherwise.
        Step::Ad { end, .. } | Step::Failed { end, .. } if end >= src.len() => Next::End,
        Step::Ad { end, dropped, .. } => Next::Error(match dropped {
            Some(e) => shift(text, pos, e),
            None => ParseError::at(
                text,
                pos + end,
                "the end of an ad with no attributes",
                "an attribute (`Name = value`) before the blank line",
            ),
        }),
        Step::Failed { error, .. } => Next::Error(shift(text, pos, error)),
    }
}

/// An error found in `text[pos..]`, moved to its place in `text`.
fn shift(text: &str, pos: usize, e: ParseError) -> ParseError {
    if pos == 0 {
        return e;
    }
    ParseError::at(text, pos + e.offset, &e.found, e.expected)
}

/// What one reader step did, with offsets relative to where it started.
enum Step {
    /// Read an ad (possibly empty) ending at `end`; `dropped` is a line that
    /// did not parse and ended it.
    Ad {
        ad: ClassAd,
        end: usize,
        dropped: Option<ParseError>,
    },
    /// Failed; `end` is how far the reader had read when it gave up.
    Failed { error: ParseError, end: usize },
}

/// How the line-oriented reader behaves.
#[derive(Clone, Copy)]
struct LongForm {
    /// Skip blank lines before the first line (old syntax does; the fallback
    /// after an empty new-syntax ad does not).
    skip_leading_blank: bool,
    /// After a bad line, read on to the end of the ad (old syntax does; the
    /// new-syntax fallback stops right there).
    drain_on_error: bool,
}

impl LongForm {
    const OLD: LongForm = LongForm {
        skip_leading_blank: true,
        drain_on_error: true,
    };
    const FALLBACK: LongForm = LongForm {
        skip_leading_blank: false,
        drain_on_error: false,
    };
}

/// The lines of `src` from `pos`: (start offset, line without `\n` and one
/// `\r` before it), as HTCondor's `readLine` + `chomp` give them.
fn lines(src: &str, pos: usize) -> impl Iterator<Item = (usize, &str)> {
    let mut at = pos;
    std::iter::from_fn(move || {
        if at >= src.len() {
            return None;
        }
        let start = at;
        let rest = &src[start..];
        let line = match find_byte(rest.as_bytes(), b'\n') {
            Some(i) => {
                at = start + i + 1;
                let l = &rest[..i];
                l.strip_suffix('\r').unwrap_or(l)
            }
            None => {
                at = src.len();
                rest
            }
        };
        Some((start, line))
    })
}

/// Where the line starting at `start` ends (past its newline).
fn line_end(src: &str, start: usize) -> usize {
    find_byte(&src.as_bytes()[start..], b'\n').map_or(src.len(), |i| start + i + 1)
}

/// Where the first `b` in `hay` is. Ad lines are short, where the general
/// search spends most of its time lining up; this one reads eight bytes at a
/// time from the start. (The lowest flagged byte of a word is always a true
/// match: a false flag can only appear above a byte that matched.)
#[inline]
fn find_byte(hay: &[u8], b: u8) -> Option<usize> {
    const LOW: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGH: u64 = u64::from_ne_bytes([0x80; 8]);
    let pattern = LOW * u64::from(b);
    let mut words = hay.chunks_exact(8);
    let mut at = 0;
    for w in &mut words {
        let x = u64::from_le_bytes(w.try_into().unwrap_or([0; 8])) ^ pattern;
        let found = x.wrapping_sub(LOW) & !x & HIGH;
        if found != 0 {
            return Some(at + (found.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    words
        .remainder()
        .iter()
        .position(|&c| c == b)
        .map(|i| at + i)
}

/// A blank line (only C `isspace` characters) ends an ad.
fn is_blank(line: &str) -> bool {
    line.bytes()
        .all(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c))
}

/// A comment line: `#` is the first character that is not a space or tab.
fn is_comment(line: &str) -> bool {
    line.bytes().find(|b| *b != b' ' && *b != b'\t') == Some(b'#')
}

/// The line-oriented reader from `pos` in `src`, up to the end of one ad.
fn read_long_form(src: &str, pos: usize, how: LongForm) -> Step {
    let mut ad = ClassAd::new();
    let mut seen_line = false;
    let mut end = pos;
    for (start, line) in lines(src, pos) {
        end = line_end(src, start);
        if is_blank(line) {
            if how.skip_leading_blank && !seen_line {
                continue;
            }
            return Step::Ad {
                ad,
                end,
                dropped: None,
            };
        }
        seen_line = true;
        if is_comment(line) {
            continue;
        }
        match parse_old_line(src, start, line, Strictness::Prefix) {
            Ok((name, expr)) => ad.insert(name, expr),
            Err(e) => {
                if how.drain_on_error {
                    // HTCondor discards the rest of the ad: every line up to
                    // and including the next blank one.
                    for (s, l) in lines(src, end) {
                        end = line_end(src, s);
                        if is_blank(l) {
                            break;
                        }
                    }
                }
                return Step::Ad {
                    ad,
                    end,
                    dropped: Some(e),
                };
            }
        }
    }
    Step::Ad {
        ad,
        end,
        dropped: None,
    }
}

/// Splits and parses one old-syntax line (`line` starts at `start` in `src`;
/// errors point into `src`). The name borrows from `line`: the ad interns
/// it, so a copy here would only be thrown away.
fn parse_old_line<'l>(
    src: &str,
    start: usize,
    line: &'l str,
    strictness: Strictness,
) -> Result<(&'l str, Expr), ParseError> {
    // Leading white space is skipped; the name is everything up to the first
    // `=`, less trailing spaces (tabs stay: `a\t= 1` names "a\t").
    let lead = line.len()
        - line
            .trim_start_matches(|c: char| c.is_ascii_whitespace() || c == '\x0b')
            .len();
    let body = &line[lead..];
    let Some(eq) = find_byte(body.as_bytes(), b'=') else {
        return Err(ParseError::at(
            src,
            start + lead,
            &format!("the line '{body}'"),
            "`Name = value`",
        ));
    };
    let name = body[..eq].trim_end_matches(' ');
    if name.is_empty() {
        return Err(ParseError::at(
            src,
            start + lead + eq,
            "'='",
            "an attribute name before '='",
        ));
    }
    // Only spaces are skipped after the `=` (the lexer skips the rest).
    let rhs_start = lead + eq + 1;
    let rhs = line[rhs_start..].trim_start_matches(' ');
    let rhs_start = line.len() - rhs.len();
    // Most lines of a machine or job ad are a plain literal; read those
    // without a parser (the result is what the parser would give).
    if let Some(lit) = plain_literal(rhs.trim_end()) {
        return Ok((name, lit));
    }
    let parsed = match strictness {
        Strictness::Prefix => parse_old_value(rhs),
        // A `;` may end an old-syntax line (HTCondor ignores it).
        Strictness::Whole => {
            let trimmed = rhs.trim_end();
            crate::parser::parse_old_value_whole(trimmed.strip_suffix(';').unwrap_or(trimmed))
        }
    };
    let expr = parsed
        .map_err(|e| ParseError::at(src, start + rhs_start + e.offset, &e.found, e.expected))?;
    Ok((name, expr))
}

/// A value that is only a decimal integer, a string without backslashes or
/// inner quotes, or `true`/`false` (any case), as the literal it is; `None`
/// for anything else (which the parser then reads, and refuses if need be).
fn plain_literal(text: &str) -> Option<Expr> {
    let b = text.as_bytes();
    match b.first()? {
        b'"' => {
            let inner = text.strip_prefix('"')?.strip_suffix('"')?;
            if inner.bytes().any(|c| c == b'"' || c == b'\\') {
                return None;
            }
            Some(Expr::Lit(Value::Str(ArcStr::from(inner))))
        }
        b'0'..=b'9' | b'-' => {
            let digits = text.strip_prefix('-').unwrap_or(text);
            // Leading zeros are refused by the parser; leave them to it.
            if digits.is_empty()
                || !digits.bytes().all(|c| c.is_ascii_digit())
                || (digits.len() > 1 && digits.starts_with('0'))
            {
                return None;
            }
            // As the lexer: an integer too big for 64 bits reads as 0.
            Some(Expr::Lit(Value::Int(text.parse().unwrap_or(0))))
        }
        _ if text.eq_ignore_ascii_case("true") => Some(Expr::Lit(Value::Bool(true))),
        _ if text.eq_ignore_ascii_case("false") => Some(Expr::Lit(Value::Bool(false))),
        _ => None,
    }
}

/// Parses an old-syntax value: one complete expression, anything after it
/// ignored (HTCondor parses the value with `full = false`).
fn parse_old_value(rhs: &str) -> Result<Expr, ParseError> {
    fn prefix(src: &str) -> Result<Expr, ParseError> {
        let mut p = Parser::new(src, StringMode::Old)?;
        p.expr()
    }
    match prefix(rhs) {
        Ok(e) => Ok(e),
        // Our parser lexes the token after the expression and fails if that
        // token is malformed (`a = 1 'oops`); HTCondor's parser only sees an
        // error token there and stops. So an error after a complete
        // expression is no error: the text before it parses on its own.
        Err(e) if e.offset > 0 && e.offset < rhs.len() => prefix(&rhs[..e.offset]).map_err(|_| e),
        Err(e) => Err(e),
    }
}

/// One new-syntax step: an ad, or the `{` of a list and then an ad.
fn read_new(src: &str, state: &mut ListState) -> Step {
    match new_ad_at(src, 0) {
        NewAttempt::Ad { ad, end } => finish_new_ad(src, ad, end),
        NewAttempt::Failed { error, end, token } => {
            // HTCondor retries once after a `{` (entering a list of ads), or,
            // inside the list, after a `,` or the closing `}`.
            let retry = match token {
                Some(Tok::LBrace) if !state.inside_list => {
                    state.inside_list = true;
                    true
                }
                Some(Tok::Comma) if state.inside_list => true,
                Some(Tok::RBrace) if state.inside_list => {
                    state.inside_list = false;
                    true
                }
                _ => false,
            };
            if !retry {
                return Step::Failed { error, end };
            }
            let at = error.offset + 1;
            match new_ad_at(src, at) {
                NewAttempt::Ad { ad, end } => finish_new_ad(src, ad, end),
                NewAttempt::Failed { error, end, .. } => Step::Failed { error, end },
            }
        }
    }
}

/// A new-syntax ad that parsed: an empty one makes HTCondor read the rest of
/// the ad as old-syntax lines.
fn finish_new_ad(src: &str, ad: ClassAd, end: usize) -> Step {
    if !ad.is_empty() {
        return Step::Ad {
            ad,
            end,
            dropped: None,
        };
    }
    old_syntax_after_empty_ad(src, end)
}

/// After an empty ad, HTCondor's reader takes the rest as old-syntax lines;
/// a bad line there aborts the read.
fn old_syntax_after_empty_ad(src: &str, end: usize) -> Step {
    match read_long_form(src, end, LongForm::FALLBACK) {
        Step::Ad {
            ad,
            end,
            dropped: Some(e),
        } if ad.is_empty() => Step::Failed { error: e, end },
        other => other,
    }
}

enum NewAttempt {
    Ad {
        ad: ClassAd,
        end: usize,
    },
    /// `token` is the token the parse failed at, when it could be read.
    Failed {
        error: ParseError,
        end: usize,
        token: Option<Tok<'static>>,
    },
}

/// Parses one `[ ... ]` ad starting at `pos` in `src` (after any white space
/// and comments). On success, `end` is just past its `]`.
fn new_ad_at(src: &str, pos: usize) -> NewAttempt {
    let failed = |e: ParseError| {
        let (end, token) = failure_extent(src, e.offset);
        NewAttempt::Failed {
            error: e,
            end,
            token,
        }
    };
    let rest = &src[pos..];
    let shifted = |e: ParseError| ParseError::at(src, pos + e.offset, &e.found, e.expected);
    let mut lexer = Lexer::new(rest, StringMode::Escapes);
    let first = match lexer.next_token() {
        Ok(t) => t,
        Err(e) => return failed(shifted(*e)),
    };
    if first.tok != Tok::LBracket {
        let e = ParseError::at(
            src,
            pos + first.start,
            &first.tok.describe(),
            "'[' starting a ClassAd",
        );
        return failed(e);
    }
    // HTCondor's parser stops right after the closing `]`: it never looks at
    // what follows. Our parser always lexes one token ahead, so find the
    // closing bracket first and parse only up to it.
    match closing_bracket(&mut lexer) {
        Some(end) => match crate::parser::parse_ad(&rest[..end]) {
            Ok(ad) => NewAttempt::Ad { ad, end: pos + end },
            Err(e) => failed(shifted(e)),
        },
        // Unbalanced (or a bad token inside): the parser says where it fails.
        None => match crate::parser::parse_ad(rest) {
            Err(e) => failed(shifted(e)),
            Ok(_) => failed(ParseError::at(
                src,
                src.len(),
                "end of input",
                "']' closing the ClassAd",
            )),
        },
    }
}

/// After the opening `[`, the offset just past the `]` that closes it.
fn closing_bracket(lexer: &mut Lexer) -> Option<usize> {
    let mut depth = 1usize;
    loop {
        let t = lexer.next_token().ok()?;
        match t.tok {
            Tok::LBracket => depth += 1,
            Tok::RBracket => {
                depth -= 1;
                if depth == 0 {
                    return Some(t.end);
                }
            }
            Tok::Eof => return None,
            _ => {}
        }
    }
}

/// How far HTCondor's lexer had read when its parser failed at the token
/// starting at `at`, and that token. The lexer reads one character past
/// tokens that could continue (names, numbers, `=`, `<`, ...), and after a
/// string literal it reads on through white space looking for another one to
/// join; an unterminated literal or comment reads to the end.
fn failure_extent(src: &str, at: usize) -> (usize, Option<Tok<'static>>) {
    let len = src.len();
    if at >= len {
        return (len, Some(Tok::Eof));
    }
    let rest = &src[at..];
    let mut lexer = Lexer::new(rest, StringMode::Escapes);
    let t = match lexer.next_token() {
        Ok(t) => t,
        Err(e) => {
            let unterminated = e.found.contains("unterminated") || e.found == "'/*'";
            return (if unterminated { len } else { (at + 1).min(len) }, None);
        }
    };
    let end = at + t.end;
    let extent = match &t.tok {
        Tok::Eof => len,
        Tok::Str(_) | Tok::Name { quoted: true, .. } => {
            let after = src[end..].trim_start_matches(|c: char| c.is_ascii_whitespace());
            if after.is_empty() {
                len
            } else {
                len - after.len() + 1
            }
        }
        Tok::Name { .. }
        | Tok::Int(_)
        | Tok::Real(_)
        | Tok::True
        | Tok::False
        | Tok::Undefined
        | Tok::Error
        | Tok::Is
        | Tok::Isnt
        | Tok::Assign
        | Tok::Bang
        | Tok::Lt
        | Tok::Gt
        | Tok::Shr
        | Tok::Minus
        | Tok::Dot
        | Tok::Slash
        | Tok::Amp
        | Tok::Bar
        | Tok::Question => end + 1,
        _ => end,
    };
    (extent.min(len), Some(t.tok.into_static()))
}

/// One JSON step: an object, or the `[` of an array (or, inside one, a `,`
/// or the closing `]`) and then an object, as HTCondor's JSON file reader.
fn read_json(src: &str, state: &mut ListState) -> Step {
    let attempt = |at: usize| crate::json::parse_json_ad_prefix(&src[at..]);
    let skip_ws = |at: usize| at + (src[at..].len() - src[at..].trim_start().len());
    let first = match attempt(0) {
        Ok((ad, used)) => return finish_json_ad(src, ad, used),
        Err(e) => e,
    };
    let at = skip_ws(0);
    let retry = match src.as_bytes().get(at) {
        Some(b'[') if !state.inside_list => {
            state.inside_list = true;
            true
        }
        Some(b',') if state.inside_list => true,
        Some(b']') if state.inside_list => {
            state.inside_list = false;
            true
        }
        _ => false,
    };
    if !retry {
        let end = json_failure_extent(src, first.offset);
        return Step::Failed { error: first, end };
    }
    match attempt(at + 1) {
        Ok((ad, used)) => finish_json_ad(src, ad, at + 1 + used),
        Err(e) => {
            let offset = at + 1 + e.offset;
            let end = json_failure_extent(src, offset);
            Step::Failed {
                error: ParseError::at(src, offset, &e.found, e.expected),
                end,
            }
        }
    }
}

/// How far HTCondor's JSON lexer had read when the parse failed at `at`:
/// past a word or number and one character more, past a string (to the end
/// if it is unterminated), past a punctuation character.
fn json_failure_extent(src: &str, at: usize) -> usize {
    let rest = &src[at.min(src.len())..];
    let end = match rest.bytes().next() {
        None => return src.len(),
        Some(b'"') => {
            // To the closing quote, or to the end if there is none.
            let b = rest.as_bytes();
            let mut i = 1;
            while i < b.len() && b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            if i >= b.len() {
                return src.len();
            }
            at + i + 1
        }
        Some(c) if c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_') => {
            let word = rest
                .bytes()
                .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'+' | b'.' | b'_'))
                .count();
            at + word + 1
        }
        Some(_) => at + 1,
    };
    end.min(src.len())
}

fn finish_json_ad(src: &str, ad: ClassAd, end: usize) -> Step {
    if ad.is_empty() {
        // As for new syntax, an empty object sends HTCondor's reader to
        // old-syntax lines.
        return old_syntax_after_empty_ad(src, end);
    }
    Step::Ad {
        ad,
        end,
        dropped: None,
    }
}

/// `[[name, unparsed value], ...]` in HTCondor's order.
fn attrs_json(ad: &ClassAd) -> Json {
    Json::Array(
        ad.iter()
            .map(|(n, e)| json!([n.as_str(), e.to_string()]))
            .collect(),
    )
}

/// An `ad` oracle case (see `shared/oracle/README.md`): adds `parse`,
/// `attrs`, `consumed` (for the first ad, as `parseNext` reads it), `all_ads`
/// and `stop` (for the whole text, as `parseAds` reads it).
pub fn run_ad_case(case: &Json) -> Json {
    let mut out = case.as_object().cloned().unwrap_or_default();
    let text = case.get("ad_text").and_then(Json::as_str).unwrap_or("");
    let syntax = match case.get("syntax").and_then(Json::as_str) {
        Some("old") => Syntax::Old,
        Some("json") => Syntax::Json,
        _ => Syntax::New,
    };
    match parse_next(text, syntax) {
        Next::Ad(r) => {
            out.insert("parse".into(), json!("ok"));
            out.insert("attrs".into(), attrs_json(&r.ad));
            out.insert("consumed".into(), json!(r.consumed));
        }
        Next::End => {
            out.insert("parse".into(), json!("none"));
        }
        Next::Error(_) => {
            out.insert("parse".into(), json!("error"));
        }
    }
    let all = parse_ads(text, syntax);
    out.insert(
        "all_ads".into(),
        Json::Array(all.ads.iter().map(|r| attrs_json(&r.ad)).collect()),
    );
    let stop = match all.stop {
        Stop::End => "end",
        Stop::Error(_) => "error",
    };
    out.insert("stop".into(), json!(stop));
    Json::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(r: &ReadAd) -> Vec<String> {
        r.ad.iter().map(|(n, e)| format!("{n}={e}")).collect()
    }

    #[test]
    fn find_byte_finds_the_first() {
        // Every length and position around the eight-byte words, with bytes
        // next to the one sought (the borrow of the word trick) around it.
        for len in 0..40 {
            for at in 0..=len {
                for filler in [b'a', b'\x0b', b'\x09', b'<', b'>', 0x80, 0xff, 0] {
                    let mut hay = vec![filler; len];
                    for b in [b'\n', b'='] {
                        if at < len {
                            hay[at] = b;
                            if at + 3 < len {
                                hay[at + 3] = b;
                            }
                        }
                        let want = hay.iter().position(|&c| c == b);
                        assert_eq!(find_byte(&hay, b), want, "{hay:?} {b}");
                        hay.fill(filler);
                    }
                }
            }
        }
    }

    #[test]
    fn old_syntax_quirks() {
        let Next::Ad(r) = parse_next("a\t=\t1\n+b = \"C:\\x\\\"\n", Syntax::Old) else {
            panic!()
        };
        assert_eq!(names(&r), ["+b=\"C:\\\\x\\\\\"", "a\t=1"]);
        // A bad line drops the rest of its ad; the next ad is still read.
        let s = parse_ads("a = 1\njunk\nc = 3\n\nd = 4\n", Syntax::Old);
        assert_eq!(s.ads.len(), 2);
        assert!(s.ads[0].dropped.is_some());
        assert_eq!(s.ads[0].consumed, 18);
        // Blank lines after a comment end an empty ad: an error mid-text.
        assert!(matches!(
            parse_next("#\n\na=1", Syntax::Old),
            Next::Error(_)
        ));
        assert!(matches!(parse_next("\n\n#\na=1", Syntax::Old), Next::Ad(_)));
    }

    #[test]
    fn new_syntax_quirks() {
        let Next::Ad(r) = parse_next("[ ] [b=2]", Syntax::New) else {
            panic!()
        };
        assert_eq!(names(&r), ["[b=2"]);
        assert!(matches!(parse_next("[ a = 1 b ", Syntax::New), Next::End));
        assert!(matches!(parse_next(" 1  ", Syntax::New), Next::Error(_)));
        let Next::Ad(r) = parse_next("[a=1] \"unterminated", Syntax::New) else {
            panic!()
        };
        assert_eq!(r.consumed, 5);
        // The tools' reader keeps its place in a list of ads.
        let s = read_ads("{ [ a = 1 ], [ b = 2 ] }", Syntax::New);
        assert_eq!(s.ads.len(), 2);
        assert!(matches!(s.stop, Stop::End));
        let s = parse_ads("{ [ a = 1 ], [ b = 2 ] }", Syntax::New);
        assert_eq!(s.ads.len(), 1);
        assert!(matches!(s.stop, Stop::Error(_)));
    }

    #[test]
    fn errors_point_into_the_whole_text() {
        let s = parse_ads("[a=1]\n[ a = 1, b = 2 ]", Syntax::New);
        let Stop::Error(e) = s.stop else { panic!() };
        assert_eq!((e.line, e.column), (2, 8));
        let e = parse_old_ad("a = 1\n# c\nb = 1 +\n").unwrap_err();
        assert_eq!((e.line, e.column), (3, 8));
        // A blank line ends the ad; a strict read refuses a second one.
        let e = parse_old_ad("a = 1\n\n# c\nb = 1\n").unwrap_err();
        assert_eq!((e.line, e.column), (4, 1));
    }
}
