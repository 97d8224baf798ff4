//! The ClassAd lexer: tokens with their byte offsets.

use std::borrow::Cow;

use crate::error::ParseError;

/// A token. Names and strings borrow from the source where they can (no
/// escapes to undo), so lexing allocates only for the rare literal that needs it.
#[derive(Clone, Debug, PartialEq)]
pub enum Tok<'s> {
    Int(i64),
    Real(f64),
    /// A string literal (adjacent literals already joined).
    Str(Cow<'s, str>),
    /// An identifier, or a quoted name when `quoted` is set.
    Name {
        text: Cow<'s, str>,
        quoted: bool,
    },
    True,
    False,
    Undefined,
    Error,
    LParen,
    RParen,
    LBrace,
    RBrace,
    LBracket,
    RBracket,
    Comma,
    Semi,
    Dot,
    Assign,
    Question,
    Colon,
    Elvis,
    OrOr,
    AndAnd,
    Bar,
    Caret,
    Amp,
    EqEq,
    NotEq,
    MetaEq,
    MetaNe,
    Is,
    Isnt,
    Lt,
    Le,
    Gt,
    Ge,
    Shl,
    Shr,
    UShr,
    Plus,
    Minus,
    Star,
    Slash,
    Percent,
    Bang,
    Tilde,
    Eof,
}

impl Tok<'_> {
    /// The same token, owning its text.
    pub fn into_static(self) -> Tok<'static> {
        match self {
            Tok::Str(s) => Tok::Str(Cow::Owned(s.into_owned())),
            Tok::Name { text, quoted } => Tok::Name {
                text: Cow::Owned(text.into_owned()),
                quoted,
            },
            Tok::Int(i) => Tok::Int(i),
            Tok::Real(r) => Tok::Real(r),
            Tok::True => Tok::True,
            Tok::False => Tok::False,
            Tok::Undefined => Tok::Undefined,
            Tok::Error => Tok::Error,
            Tok::LParen => Tok::LParen,
            Tok::RParen => Tok::RParen,
            Tok::LBrace => Tok::LBrace,
            Tok::RBrace => Tok::RBrace,
            Tok::LBracket => Tok::LBracket,
            Tok::RBracket => Tok::RBracket,
            Tok::Comma => Tok::Comma,
            Tok::Semi => Tok::Semi,
            Tok::Dot => Tok::Dot,
            Tok::Assign => Tok::Assign,
            Tok::Question => Tok::Question,
            Tok::Colon => Tok::Colon,
            Tok::Elvis => Tok::Elvis,
            Tok::OrOr => Tok::OrOr,
            Tok::AndAnd => Tok::AndAnd,
            Tok::Bar => Tok::Bar,
            Tok::Caret => Tok::Caret,
            Tok::Amp => Tok::Amp,
            Tok::EqEq => Tok::EqEq,
            Tok::NotEq => Tok::NotEq,
            Tok::MetaEq => Tok::MetaEq,
            Tok::MetaNe => Tok::MetaNe,
            Tok::Is => Tok::Is,
            Tok::Isnt => Tok::Isnt,
            Tok::Lt => Tok::Lt,
            Tok::Le => Tok::Le,
            Tok::Gt => Tok::Gt,
            Tok::Ge => Tok::Ge,
            Tok::Shl => Tok::Shl,
            Tok::Shr => Tok::Shr,
            Tok::UShr => Tok::UShr,
            Tok::Plus => Tok::Plus,
            Tok::Minus => Tok::Minus,
            Tok::Star => Tok::Star,
            Tok::Slash => Tok::Slash,
            Tok::Percent => Tok::Percent,
            Tok::Bang => Tok::Bang,
            Tok::Tilde => Tok::Tilde,
            Tok::Eof => Tok::Eof,
        }
    }

    pub fn describe(&self) -> String {
        match self {
            Tok::Int(i) => format!("number {i}"),
            Tok::Real(r) => format!("number {r}"),
            Tok::Str(s) => format!("string \"{}\"", s.escape_default()),
            Tok::Name { text, .. } => format!("name '{text}'"),
            Tok::Eof => "end of input".to_string(),
            other => format!("'{}'", other.symbol()),
        }
    }

    fn symbol(&self) -> &'static str {
        match self {
            Tok::True => "true",
            Tok::False => "false",
            Tok::Undefined => "undefined",
            Tok::Error => "error",
            Tok::LParen => "(",
            Tok::RParen => ")",
            Tok::LBrace => "{",
            Tok::RBrace => "}",
            Tok::LBracket => "[",
            Tok::RBracket => "]",
            Tok::Comma => ",",
            Tok::Semi => ";",
            Tok::Dot => ".",
            Tok::Assign => "=",
            Tok::Question => "?",
            Tok::Colon => ":",
            Tok::Elvis => "?:",
            Tok::OrOr => "||",
            Tok::AndAnd => "&&",
            Tok::Bar => "|",
            Tok::Caret => "^",
            Tok::Amp => "&",
            Tok::EqEq => "==",
            Tok::NotEq => "!=",
            Tok::MetaEq => "=?=",
            Tok::MetaNe => "=!=",
            Tok::Is => "is",
            Tok::Isnt => "isnt",
            Tok::Lt => "<",
            Tok::Le => "<=",
            Tok::Gt => ">",
            Tok::Ge => ">=",
            Tok::Shl => "<<",
            Tok::Shr => ">>",
            Tok::UShr => ">>>",
            Tok::Plus => "+",
            Tok::Minus => "-",
            Tok::Star => "*",
            Tok::Slash => "/",
            Tok::Percent => "%",
            Tok::Bang => "!",
            Tok::Tilde => "~",
            _ => "?",
        }
    }

    /// Tokens after which a `-` is the binary operator rather than a sign.
    fn ends_operand(&self) -> bool {
        matches!(
            self,
            Tok::Int(_)
                | Tok::Real(_)
                | Tok::Str(_)
                | Tok::Name { .. }
                | Tok::True
                | Tok::False
                | Tok::Undefined
                | Tok::Error
                | Tok::RParen
                | Tok::RBrace
                | Tok::RBracket
                | Tok::Dot
        )
    }
}

#[derive(Clone, Debug)]
pub struct Token<'s> {
    pub tok: Tok<'s>,
    pub start: usize,
    pub end: usize,
}

/// How string literals treat backslashes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StringMode {
    /// New ClassAd syntax: C-like escapes and octal.
    Escapes,
    /// Old ClassAd syntax: backslashes are literal, except `\"`.
    Old,
}

pub struct Lexer<'s> {
    src: &'s str,
    bytes: &'s [u8],
    pos: usize,
    mode: StringMode,
    prev_ends_operand: bool,
}

impl<'s> Lexer<'s> {
    pub fn new(src: &'s str, mode: StringMode) -> Lexer<'s> {
        Lexer {
            src,
            bytes: src.as_bytes(),
            pos: 0,
            mode,
            prev_ends_operand: false,
        }
    }

    pub fn pos(&self) -> usize {
        self.pos
    }

    #[cold]
    fn err(&self, at: usize, found: &str, expected: &str) -> Box<ParseError> {
        Box::new(ParseError::at(self.src, at, found, expected))
    }

    /// How many decimal digits start at `i`.
    #[inline]
    fn digits_at(&self, i: usize) -> usize {
        self.bytes.get(i..).map_or(0, |r| {
            r.iter()
                .take_while(|&&c| CLASS[c as usize] == DIGIT)
                .count()
        })
    }

    #[inline]
    fn peek_at(&self, i: usize) -> u8 {
        *self.bytes.get(i).unwrap_or(&0)
    }

    /// Skips white space and comments.
    #[inline(always)]
    fn skip_trivia(&mut self) -> Result<(), Box<ParseError>> {
        let rest = self.bytes.get(self.pos..).unwrap_or_default();
        self.pos += rest
            .iter()
            .take_while(|&&c| CLASS[c as usize] == SPACE)
            .count();
        if self.peek_at(self.pos) == b'/' && matches!(self.peek_at(self.pos + 1), b'/' | b'*') {
            return self.skip_comments();
        }
        Ok(())
    }

    /// Comments (and the white space between them): rare, so out of line.
    #[cold]
    #[inline(never)]
    fn skip_comments(&mut self) -> Result<(), Box<ParseError>> {
        loop {
            let rest = self.bytes.get(self.pos..).unwrap_or_default();
            self.pos += rest
                .iter()
                .take_while(|&&c| CLASS[c as usize] == SPACE)
                .count();
            if self.peek_at(self.pos) != b'/' {
                return Ok(());
            }
            match self.peek_at(self.pos + 1) {
                b'/' => {
                    while self.pos < self.bytes.len() && self.bytes[self.pos] != b'\n' {
                        self.pos += 1;
                    }
                }
                b'*' => {
                    let start = self.pos;
                    match self.src[self.pos + 2..].find("*/") {
                        Some(i) => self.pos += 2 + i + 2,
                        None => return Err(self.err(start, "'/*'", "a comment closed by '*/'")),
                    }
                }
                _ => return Ok(()),
            }
        }
    }

    pub fn next_token(&mut self) -> Result<Token<'s>, Box<ParseError>> {
        self.skip_trivia()?;
        let start = self.pos;
        let tok = self.scan()?;
        self.prev_ends_operand = tok.ends_operand();
        Ok(Token {
            tok,
            start,
            end: self.pos,
        })
    }

    fn scan(&mut self) -> Result<Tok<'s>, Box<ParseError>> {
        let start = self.pos;
        let c = self.peek_at(start);
        if start >= self.bytes.len() {
            return Ok(Tok::Eof);
        }
        let two = |l: &mut Lexer, t: Tok<'s>| {
            l.pos += 2;
            Ok(t)
        };
        let one = |l: &mut Lexer, t: Tok<'s>| {
            l.pos += 1;
            Ok(t)
        };
        let n1 = self.peek_at(start + 1);
        match c {
            b'0'..=b'9' => self.number(false),
            b'.' if n1.is_ascii_digit() => self.number(false),
            b'-' if !self.prev_ends_operand
                && (n1.is_ascii_digit()
                    || (n1 == b'.' && self.peek_at(start + 2).is_ascii_digit())) =>
            {
                self.number(true)
            }
            b'"' => self.string(),
            b'\'' => {
                let text = self.quoted(b'\'')?;
                Ok(Tok::Name { text, quoted: true })
            }
            b'a'..=b'z' | b'A'..=b'Z' | b'_' => {
                let len = self.bytes[start..]
                    .iter()
                    .take_while(|&&c| CLASS[c as usize] >= IDENT)
                    .count();
                self.pos = start + len;
                let text = &self.src[start..self.pos];
                Ok(keyword(text).unwrap_or(Tok::Name {
                    text: Cow::Borrowed(text),
                    quoted: false,
                }))
            }
            b'(' => one(self, Tok::LParen),
            b')' => one(self, Tok::RParen),
            b'{' => one(self, Tok::LBrace),
            b'}' => one(self, Tok::RBrace),
            b'[' => one(self, Tok::LBracket),
            b']' => one(self, Tok::RBracket),
            b',' => one(self, Tok::Comma),
            b';' => one(self, Tok::Semi),
            b'.' => one(self, Tok::Dot),
            b':' => one(self, Tok::Colon),
            b'+' => one(self, Tok::Plus),
            b'-' => one(self, Tok::Minus),
            b'*' => one(self, Tok::Star),
            b'/' => one(self, Tok::Slash),
            b'%' => one(self, Tok::Percent),
            b'~' => one(self, Tok::Tilde),
            b'^' => one(self, Tok::Caret),
            b'?' if n1 == b':' => two(self, Tok::Elvis),
            b'?' => one(self, Tok::Question),
            b'|' if n1 == b'|' => two(self, Tok::OrOr),
            b'|' => one(self, Tok::Bar),
            b'&' if n1 == b'&' => two(self, Tok::AndAnd),
            b'&' => one(self, Tok::Amp),
            b'!' if n1 == b'=' => two(self, Tok::NotEq),
            b'!' => one(self, Tok::Bang),
            b'=' if n1 == b'=' => two(self, Tok::EqEq),
            b'=' if n1 == b'?' && self.peek_at(start + 2) == b'=' => {
                self.pos += 3;
                Ok(Tok::MetaEq)
            }
            b'=' if n1 == b'!' && self.peek_at(start + 2) == b'=' => {
                self.pos += 3;
                Ok(Tok::MetaNe)
            }
            b'=' => one(self, Tok::Assign),
            b'<' if n1 == b'<' => two(self, Tok::Shl),
            b'<' if n1 == b'=' => two(self, Tok::Le),
            b'<' => one(self, Tok::Lt),
            b'>' if n1 == b'>' && self.peek_at(start + 2) == b'>' => {
                self.pos += 3;
                Ok(Tok::UShr)
            }
            b'>' if n1 == b'>' => two(self, Tok::Shr),
            b'>' if n1 == b'=' => two(self, Tok::Ge),
            b'>' => one(self, Tok::Gt),
            _ => {
                let ch = self.src[start..].chars().next().unwrap_or('?');
                Err(self.err(start, &format!("'{ch}'"), "an expression"))
            }
        }
    }

    fn number(&mut self, negative: bool) -> Result<Tok<'s>, Box<ParseError>> {
        let start = self.pos;
        if negative {
            self.pos += 1;
        }
        let digits_start = self.pos;
        self.pos += self.digits_at(self.pos);
        let int_digits = self.pos - digits_start;
        let mut is_real = false;
        if self.peek_at(self.pos) == b'.' {
            is_real = true;
            self.pos += 1;
            let frac_start = self.pos;
            self.pos += self.digits_at(self.pos);
            if self.pos == frac_start {
                return Err(self.err(
                    start,
                    &self.src[start..self.pos],
                    "digits after the decimal point",
                ));
            }
        }
        if matches!(self.peek_at(self.pos), b'e' | b'E') {
            is_real = true;
            self.pos += 1;
            if matches!(self.peek_at(self.pos), b'+' | b'-') {
                self.pos += 1;
            }
            let exp_start = self.pos;
            self.pos += self.digits_at(self.pos);
            if self.pos == exp_start {
                return Err(self.err(start, &self.src[start..self.pos], "digits in the exponent"));
            }
        }
        if matches!(self.peek_at(self.pos), b'a'..=b'z' | b'A'..=b'Z' | b'_') {
            let mut end = self.pos;
            while matches!(self.peek_at(end), b'a'..=b'z' | b'A'..=b'Z' | b'_' | b'0'..=b'9') {
                end += 1;
            }
            return Err(self.err(
                start,
                &self.src[start..end],
                "a number (hexadecimal and suffixes are not ClassAd syntax)",
            ));
        }
        let text = &self.src[start..self.pos];
        if is_real {
            // Rust's parser rounds correctly and gives infinity on overflow, as strtod does.
            return Ok(Tok::Real(text.parse::<f64>().unwrap_or(f64::INFINITY)));
        }
        if int_digits > 1 && self.bytes[digits_start] == b'0' {
            return Err(self.err(
                start,
                text,
                "a decimal number without leading zeros (octal is not ClassAd syntax)",
            ));
        }
        // HTCondor reads an integer that does not fit in 64 bits as 0.
        Ok(Tok::Int(text.parse::<i64>().unwrap_or(0)))
    }

    fn string(&mut self) -> Result<Tok<'s>, Box<ParseError>> {
        let mut s = self.quoted(b'"')?;
        // Adjacent string literals are one string.
        loop {
            let save = self.pos;
            self.skip_trivia()?;
            if self.peek_at(self.pos) == b'"' {
                let next = self.quoted(b'"')?;
                s.to_mut().push_str(&next);
            } else {
                self.pos = save;
                return Ok(Tok::Str(s));
            }
        }
    }

    /// Reads a literal quoted with `q`, starting at the opening quote.
    fn quoted(&mut self, q: u8) -> Result<Cow<'s, str>, Box<ParseError>> {
        let start = self.pos;
        // The common case: no escapes, so the text is a slice of the source.
        let body = &self.bytes[start + 1..];
        if let Some(end) = body.iter().position(|&c| c == q || c == b'\\') {
            if body[end] == q {
                self.pos = start + 1 + end + 1;
                return Ok(Cow::Borrowed(&self.src[start + 1..start + 1 + end]));
            }
        }
        self.pos += 1;
        let mut out: Vec<u8> = Vec::new();
        loop {
            if self.pos >= self.bytes.len() {
                let what = if q == b'"' {
                    "a closing '\"'"
                } else {
                    "a closing \"'\""
                };
                return Err(self.err(start, "an unterminated literal", what));
            }
            let c = self.bytes[self.pos];
            if c == q {
                self.pos += 1;
                break;
            }
            if c != b'\\' {
                out.push(c);
                self.pos += 1;
                continue;
            }
            let e = self.peek_at(self.pos + 1);
            if self.mode == StringMode::Old {
                // Old syntax: `\"` is a quote unless it closes the string at the end of the line.
                let after = self.peek_at(self.pos + 2);
                if e == q && !(after == b'\n' || after == 0) {
                    out.push(q);
                    self.pos += 2;
                } else {
                    out.push(b'\\');
                    self.pos += 1;
                }
                continue;
            }
            self.pos += 2;
            match e {
                b'n' => out.push(b'\n'),
                b't' => out.push(b'\t'),
                b'r' => out.push(b'\r'),
                b'b' => out.push(0x08),
                b'f' => out.push(0x0c),
                b'v' => out.push(0x0b),
                b'a' => out.push(0x07),
                b'0'..=b'7' => {
                    let mut v: u32 = u32::from(e - b'0');
                    // Up to three octal digits; a leading 0-3 allows three.
                    let max = if e <= b'3' { 3 } else { 2 };
                    let mut n = 1;
                    while n < max && matches!(self.peek_at(self.pos), b'0'..=b'7') {
                        v = v * 8 + u32::from(self.bytes[self.pos] - b'0');
                        self.pos += 1;
                        n += 1;
                    }
                    out.push(v as u8);
                }
                0 if self.pos > self.bytes.len() => {
                    self.pos = self.bytes.len();
                }
                other => out.push(other),
            }
        }
        Ok(Cow::Owned(match String::from_utf8(out) {
            Ok(s) => s,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        }))
    }
}

/// Byte classes for the lexer's inner loops.
const OTHER: u8 = 0;
const SPACE: u8 = 1;
/// Letters, digits and `_`; `IDENT` and above continue a name.
const IDENT: u8 = 2;
const DIGIT: u8 = 3;

static CLASS: [u8; 256] = {
    let mut t = [OTHER; 256];
    let mut i = 0;
    while i < 256 {
        let c = i as u8;
        t[i] = if c == b' ' || c == b'\t' || c == b'\n' || c == b'\r' || c == 0x0b || c == 0x0c {
            SPACE
        } else if c.is_ascii_digit() {
            DIGIT
        } else if c.is_ascii_alphabetic() || c == b'_' {
            IDENT
        } else {
            OTHER
        };
        i += 1;
    }
    t
};

fn keyword(text: &str) -> Option<Tok<'static>> {
    let t = match text.len() {
        2 if text.eq_ignore_ascii_case("is") => Tok::Is,
        4 if text.eq_ignore_ascii_case("true") => Tok::True,
        4 if text.eq_ignore_ascii_case("isnt") => Tok::Isnt,
        5 if text.eq_ignore_ascii_case("false") => Tok::False,
        5 if text.eq_ignore_ascii_case("error") => Tok::Error,
        9 if text.eq_ignore_ascii_case("undefined") => Tok::Undefined,
        _ => return None,
    };
    Some(t)
}

/// True if `name` must be quoted to be read back as an attribute name.
pub fn name_needs_quotes(name: &str) -> bool {
    let b = name.as_bytes();
    if b.is_empty() || !(b[0].is_ascii_alphabetic() || b[0] == b'_') {
        return true;
    }
    if !b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_') {
        return true;
    }
    keyword(name).is_some() || name.eq_ignore_ascii_case("parent")
}
