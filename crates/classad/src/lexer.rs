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
}

/// A token's kind, without its text or value: one byte, so that the parser's
/// hot loop compares and copies tokens cheaply (the text stays in the source,
/// or, for the rare literal with escapes, in the lexer; see [`Lexeme`]).
///
/// The kinds after which a `-` is the binary operator rather than a sign come
/// first, up to [`Kind::Dot`], so that test is one comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Kind {
    Int,
    Real,
    Str,
    /// An identifier.
    Name,
    /// A name in single quotes.
    QuotedName,
    True,
    False,
    Undefined,
    Error,
    RParen,
    RBrace,
    RBracket,
    Dot,
    LParen,
    LBrace,
    LBracket,
    Comma,
    Semi,
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
    /// A malformed token; the error waits in the lexer ([`Lexer::take_error`]).
    Bad,
}

impl Kind {
    /// Tokens after which a `-` is the binary operator rather than a sign.
    #[inline]
    fn ends_operand(self) -> bool {
        self as u8 <= Kind::Dot as u8
    }

    /// The token of a kind that has no text or value.
    fn plain_tok(self) -> Tok<'static> {
        match self {
            Kind::True => Tok::True,
            Kind::False => Tok::False,
            Kind::Undefined => Tok::Undefined,
            Kind::Error => Tok::Error,
            Kind::LParen => Tok::LParen,
            Kind::RParen => Tok::RParen,
            Kind::LBrace => Tok::LBrace,
            Kind::RBrace => Tok::RBrace,
            Kind::LBracket => Tok::LBracket,
            Kind::RBracket => Tok::RBracket,
            Kind::Comma => Tok::Comma,
            Kind::Semi => Tok::Semi,
            Kind::Dot => Tok::Dot,
            Kind::Assign => Tok::Assign,
            Kind::Question => Tok::Question,
            Kind::Colon => Tok::Colon,
            Kind::Elvis => Tok::Elvis,
            Kind::OrOr => Tok::OrOr,
            Kind::AndAnd => Tok::AndAnd,
            Kind::Bar => Tok::Bar,
            Kind::Caret => Tok::Caret,
            Kind::Amp => Tok::Amp,
            Kind::EqEq => Tok::EqEq,
            Kind::NotEq => Tok::NotEq,
            Kind::MetaEq => Tok::MetaEq,
            Kind::MetaNe => Tok::MetaNe,
            Kind::Is => Tok::Is,
            Kind::Isnt => Tok::Isnt,
            Kind::Lt => Tok::Lt,
            Kind::Le => Tok::Le,
            Kind::Gt => Tok::Gt,
            Kind::Ge => Tok::Ge,
            Kind::Shl => Tok::Shl,
            Kind::Shr => Tok::Shr,
            Kind::UShr => Tok::UShr,
            Kind::Plus => Tok::Plus,
            Kind::Minus => Tok::Minus,
            Kind::Star => Tok::Star,
            Kind::Slash => Tok::Slash,
            Kind::Percent => Tok::Percent,
            Kind::Bang => Tok::Bang,
            Kind::Tilde => Tok::Tilde,
            // Kinds with text or a value are built by `Lexer::tok_of`.
            Kind::Int | Kind::Real | Kind::Str | Kind::Name | Kind::QuotedName => Tok::Eof,
            Kind::Eof | Kind::Bad => Tok::Eof,
        }
    }
}

/// A token as the parser reads it: its kind and where it is. A name's text is
/// `src[start..end]`; a string's or quoted name's is the source between the
/// quotes, or, when `owned` (escapes, or joined literals), the lexer's
/// lexer's own buffer until the next token is read
/// ([`Lexer::text_of`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Lexeme {
    pub kind: Kind,
    pub owned: bool,
    pub start: usize,
    pub end: usize,
    /// `Int`: the value; `Real`: its bits.
    pub num: u64,
}

impl Lexeme {
    pub fn int(&self) -> i64 {
        self.num as i64
    }

    pub fn real(&self) -> f64 {
        f64::from_bits(self.num)
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
    /// The value of the last `Int` or `Real` token (see [`Lexeme::num`]).
    num: u64,
    /// The text of the last string or quoted name, when it could not borrow
    /// from the source (see [`Lexeme::owned`]).
    owned: String,
    /// The error behind the last [`Kind::Bad`] token.
    error: Option<Box<ParseError>>,
    /// Whether the last token's text is in `owned`.
    owned_flag: bool,
}

impl<'s> Lexer<'s> {
    pub fn new(src: &'s str, mode: StringMode) -> Lexer<'s> {
        Lexer {
            src,
            bytes: src.as_bytes(),
            pos: 0,
            mode,
            prev_ends_operand: false,
            num: 0,
            owned: String::new(),
            error: None,
            owned_flag: false,
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

    /// The next token, with its text and value (for callers outside the
    /// parser; the parser reads [`Lexeme`]s).
    pub fn next_token(&mut self) -> Result<Token<'s>, Box<ParseError>> {
        let l = self.lex();
        if l.kind == Kind::Bad {
            return Err(self.take_error());
        }
        Ok(Token {
            tok: self.tok_of(&l),
            start: l.start,
            end: l.end,
        })
    }

    /// The token `l` (the last one read) with its text and value.
    pub(crate) fn tok_of(&self, l: &Lexeme) -> Tok<'s> {
        match l.kind {
            Kind::Int => Tok::Int(l.int()),
            Kind::Real => Tok::Real(l.real()),
            Kind::Str => Tok::Str(self.text_of(l)),
            Kind::Name | Kind::QuotedName => Tok::Name {
                text: self.text_of(l),
                quoted: l.kind == Kind::QuotedName,
            },
            other => other.plain_tok(),
        }
    }

    /// The next token. A malformed one comes back as [`Kind::Bad`], its
    /// error kept for [`Lexer::take_error`]: the parser reads a token per
    /// step, and a small plain value is cheaper to hand back than a `Result`.
    ///
    pub(crate) fn lex(&mut self) -> Lexeme {
        let mut t = Lexeme {
            kind: Kind::Eof,
            owned: false,
            start: 0,
            end: 0,
            num: 0,
        };
        self.lex_into(&mut t);
        t
    }

    /// Reads the next token into `t`, field by field. (The parser keeps its
    /// current token in place and reads it field by field: a token returned
    /// by value was stored in pieces and then copied whole, and a wide load
    /// of freshly stored narrow pieces stalls the processor at every token.)
    ///
    /// Names and the punctuation that is always one character (most tokens
    /// of an ad) are read here; everything else in [`Lexer::lex_other`].
    pub(crate) fn lex_into(&mut self, t: &mut Lexeme) {
        let rest = self.bytes.get(self.pos..).unwrap_or_default();
        self.pos += rest
            .iter()
            .take_while(|&&c| CLASS[c as usize] == SPACE)
            .count();
        let mut start = self.pos;
        let c = self.peek_at(start);
        let mut owned = false;
        let kind = if CLASS[c as usize] == IDENT {
            let len = self.bytes[start..]
                .iter()
                .take_while(|&&c| CLASS[c as usize] >= IDENT)
                .count();
            self.pos = start + len;
            keyword_kind(&self.bytes[start..self.pos]).unwrap_or(Kind::Name)
        } else if let Some(k) = SINGLE[c as usize] {
            self.pos += 1;
            k
        } else {
            let (k, s) = self.lex_other();
            start = s;
            owned = self.owned_flag;
            k
        };
        self.prev_ends_operand = kind.ends_operand();
        t.kind = kind;
        t.owned = owned;
        t.start = start;
        t.end = self.pos;
        t.num = self.num;
    }

    /// Comments, numbers, literals, operators, the end, and errors: the
    /// token's kind and where it starts.
    #[inline(never)]
    fn lex_other(&mut self) -> (Kind, usize) {
        if let Err(e) = self.skip_trivia() {
            return (self.bad(e), self.pos);
        }
        let start = self.pos;
        match self.scan() {
            Ok(k) => (k, start),
            Err(e) => (self.bad(e), start),
        }
    }

    #[cold]
    fn bad(&mut self, e: Box<ParseError>) -> Kind {
        self.error = Some(e);
        Kind::Bad
    }

    /// The error behind the [`Kind::Bad`] token just read.
    #[cold]
    pub(crate) fn take_error(&mut self) -> Box<ParseError> {
        self.error
            .take()
            .unwrap_or_else(|| self.err(self.pos, "end of input", "an expression"))
    }

    /// The text of a name, string or quoted name just read (`l` must be the
    /// last token read, for the owned case).
    pub(crate) fn text_of(&self, l: &Lexeme) -> Cow<'s, str> {
        match l.kind {
            Kind::Name => Cow::Borrowed(&self.src[l.start..l.end]),
            _ if l.owned => Cow::Owned(self.owned.clone()),
            _ => Cow::Borrowed(&self.src[l.start + 1..l.end - 1]),
        }
    }

    fn scan(&mut self) -> Result<Kind, Box<ParseError>> {
        let start = self.pos;
        let c = self.peek_at(start);
        self.owned_flag = false;
        if start >= self.bytes.len() {
            return Ok(Kind::Eof);
        }
        let two = |l: &mut Lexer, k: Kind| {
            l.pos += 2;
            Ok(k)
        };
        let one = |l: &mut Lexer, k: Kind| {
            l.pos += 1;
            Ok(k)
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
                self.keep(text);
                Ok(Kind::QuotedName)
            }
            b'a'..=b'z' | b'A'..=b'Z' | b'_' => {
                let len = self.bytes[start..]
                    .iter()
                    .take_while(|&&c| CLASS[c as usize] >= IDENT)
                    .count();
                self.pos = start + len;
                Ok(keyword_kind(&self.bytes[start..self.pos]).unwrap_or(Kind::Name))
            }
            b'(' => one(self, Kind::LParen),
            b')' => one(self, Kind::RParen),
            b'{' => one(self, Kind::LBrace),
            b'}' => one(self, Kind::RBrace),
            b'[' => one(self, Kind::LBracket),
            b']' => one(self, Kind::RBracket),
            b',' => one(self, Kind::Comma),
            b';' => one(self, Kind::Semi),
            b'.' => one(self, Kind::Dot),
            b':' => one(self, Kind::Colon),
            b'+' => one(self, Kind::Plus),
            b'-' => one(self, Kind::Minus),
            b'*' => one(self, Kind::Star),
            b'/' => one(self, Kind::Slash),
            b'%' => one(self, Kind::Percent),
            b'~' => one(self, Kind::Tilde),
            b'^' => one(self, Kind::Caret),
            b'?' if n1 == b':' => two(self, Kind::Elvis),
            b'?' => one(self, Kind::Question),
            b'|' if n1 == b'|' => two(self, Kind::OrOr),
            b'|' => one(self, Kind::Bar),
            b'&' if n1 == b'&' => two(self, Kind::AndAnd),
            b'&' => one(self, Kind::Amp),
            b'!' if n1 == b'=' => two(self, Kind::NotEq),
            b'!' => one(self, Kind::Bang),
            b'=' if n1 == b'=' => two(self, Kind::EqEq),
            b'=' if n1 == b'?' && self.peek_at(start + 2) == b'=' => {
                self.pos += 3;
                Ok(Kind::MetaEq)
            }
            b'=' if n1 == b'!' && self.peek_at(start + 2) == b'=' => {
                self.pos += 3;
                Ok(Kind::MetaNe)
            }
            b'=' => one(self, Kind::Assign),
            b'<' if n1 == b'<' => two(self, Kind::Shl),
            b'<' if n1 == b'=' => two(self, Kind::Le),
            b'<' => one(self, Kind::Lt),
            b'>' if n1 == b'>' && self.peek_at(start + 2) == b'>' => {
                self.pos += 3;
                Ok(Kind::UShr)
            }
            b'>' if n1 == b'>' => two(self, Kind::Shr),
            b'>' if n1 == b'=' => two(self, Kind::Ge),
            b'>' => one(self, Kind::Gt),
            _ => {
                let ch = self.src[start..].chars().next().unwrap_or('?');
                Err(self.err(start, &format!("'{ch}'"), "an expression"))
            }
        }
    }

    /// Keeps a literal's text that could not borrow from the source.
    fn keep(&mut self, text: Cow<'s, str>) {
        if let Cow::Owned(s) = text {
            self.owned = s;
            self.owned_flag = true;
        }
    }

    fn number(&mut self, negative: bool) -> Result<Kind, Box<ParseError>> {
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
            self.num = text.parse::<f64>().unwrap_or(f64::INFINITY).to_bits();
            return Ok(Kind::Real);
        }
        if int_digits > 1 && self.bytes[digits_start] == b'0' {
            return Err(self.err(
                start,
                text,
                "a decimal number without leading zeros (octal is not ClassAd syntax)",
            ));
        }
        // HTCondor reads an integer that does not fit in 64 bits as 0.
        self.num = decimal_i64(&self.bytes[digits_start..self.pos], negative).unwrap_or(0) as u64;
        Ok(Kind::Int)
    }

    fn string(&mut self) -> Result<Kind, Box<ParseError>> {
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
                self.keep(s);
                return Ok(Kind::Str);
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

/// The tokens that are always one character, whatever follows them (`-`,
/// `.` and `/` are not: a sign, a number or a comment may start there).
static SINGLE: [Option<Kind>; 256] = {
    let mut t = [None; 256];
    t[b'(' as usize] = Some(Kind::LParen);
    t[b')' as usize] = Some(Kind::RParen);
    t[b'{' as usize] = Some(Kind::LBrace);
    t[b'}' as usize] = Some(Kind::RBrace);
    t[b'[' as usize] = Some(Kind::LBracket);
    t[b']' as usize] = Some(Kind::RBracket);
    t[b',' as usize] = Some(Kind::Comma);
    t[b';' as usize] = Some(Kind::Semi);
    t[b':' as usize] = Some(Kind::Colon);
    t[b'+' as usize] = Some(Kind::Plus);
    t[b'*' as usize] = Some(Kind::Star);
    t[b'%' as usize] = Some(Kind::Percent);
    t[b'~' as usize] = Some(Kind::Tilde);
    t[b'^' as usize] = Some(Kind::Caret);
    t
};

/// The keyword spelled `text` (any case), if it is one.
#[inline]
fn keyword_kind(text: &[u8]) -> Option<Kind> {
    let k = match text.len() {
        2 if text.eq_ignore_ascii_case(b"is") => Kind::Is,
        4 if text.eq_ignore_ascii_case(b"true") => Kind::True,
        4 if text.eq_ignore_ascii_case(b"isnt") => Kind::Isnt,
        5 if text.eq_ignore_ascii_case(b"false") => Kind::False,
        5 if text.eq_ignore_ascii_case(b"error") => Kind::Error,
        9 if text.eq_ignore_ascii_case(b"undefined") => Kind::Undefined,
        _ => return None,
    };
    Some(k)
}

/// The value of ASCII decimal `digits` (with a leading `-` when `negative`),
/// or `None` when it does not fit in 64 bits, as `str::parse::<i64>` reads it.
fn decimal_i64(digits: &[u8], negative: bool) -> Option<i64> {
    let mut v: u64 = 0;
    for &c in digits {
        v = v.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
    }
    if negative {
        // 0 - v, so that -2^63 fits.
        0i64.checked_sub_unsigned(v)
    } else {
        i64::try_from(v).ok()
    }
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
    keyword_kind(name.as_bytes()).is_some() || name.eq_ignore_ascii_case("parent")
}
