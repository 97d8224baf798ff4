//! The ClassAd parser: expressions and ads in new syntax.
//!
//! Precedence, loosest first: `?:` (ternary, right-associative), `||`, `&&`,
//! `|`, `^`, `&`, equality (`== != =?= =!= is isnt`), relational, shifts,
//! additive, multiplicative, unary, then postfix (`.name`, `[index]`).

use std::sync::Arc;

use crate::ad::ClassAd;
use crate::error::ParseError;
use crate::expr::{BinOp, Call, Expr, UnOp};
use crate::lexer::{Kind, Lexeme, Lexer, StringMode, Tok};
use crate::name::AttrName;
use crate::value::{AbsTime, Value};

/// The nesting budget, in HTCondor's units: a parenthesised sub-expression,
/// argument, list element, ad value or subscript costs [`NEST_COST`]; a unary
/// operator, a conditional's branch or an elvis operand costs [`LIGHT_COST`].
/// Binary operator chains cost nothing. Measured against HTCondor 25: 164
/// nested parentheses parse and 165 do not; 494 unary operators parse and 495
/// do not.
pub const MAX_NESTING: u32 = 994;
pub const NEST_COST: u32 = 6;
pub const LIGHT_COST: u32 = 2;
/// How deep the finished tree may be (long operator chains count too), so
/// that evaluating or dropping it can never exhaust the stack.
pub const MAX_TREE_DEPTH: u32 = 2000;

pub struct Parser<'s> {
    src: &'s str,
    lexer: Lexer<'s>,
    /// The current (not yet consumed) token.
    tok: Lexeme,
    nesting: u32,
}

/// Errors travel boxed inside the parser, so that every parse function
/// returns a small value (the public entry points unbox them).
type PErr = Box<ParseError>;
type Parsed = Result<(Expr, u32), PErr>;

impl<'s> Parser<'s> {
    pub fn new(src: &'s str, mode: StringMode) -> Result<Parser<'s>, ParseError> {
        let mut lexer = Lexer::new(src, mode);
        let tok = lexer.lex();
        if tok.kind == Kind::Bad {
            return Err(*lexer.take_error());
        }
        Ok(Parser {
            src,
            lexer,
            tok,
            nesting: 0,
        })
    }

    /// Byte offset where the current (not yet consumed) token starts.
    pub fn token_start(&self) -> usize {
        self.tok.start
    }

    /// Whether the current token is the end of the input.
    pub fn at_eof(&self) -> bool {
        self.tok.kind == Kind::Eof
    }

    /// The current token, with its text and value.
    pub fn current(&self) -> Tok<'s> {
        self.lexer.tok_of(&self.tok)
    }

    /// Consumes the current token and reads the next.
    #[inline]
    fn bump(&mut self) -> Result<(), PErr> {
        self.lexer.lex_into(&mut self.tok);
        if self.tok.kind == Kind::Bad {
            return Err(self.lexer.take_error());
        }
        Ok(())
    }

    #[cold]
    fn error(&self, expected: &str) -> PErr {
        Box::new(ParseError::at(
            self.src,
            self.tok.start,
            &self.current().describe(),
            expected,
        ))
    }

    #[inline]
    fn expect(&mut self, k: Kind, expected: &str) -> Result<(), PErr> {
        if self.tok.kind == k {
            self.bump()
        } else {
            Err(self.error(expected))
        }
    }

    #[inline]
    fn check_depth(&self, depth: u32, at: usize) -> Result<(), PErr> {
        if depth > MAX_TREE_DEPTH {
            return Err(self.too_deep(at));
        }
        Ok(())
    }

    #[cold]
    fn too_deep(&self, at: usize) -> PErr {
        Box::new(ParseError::at(
            self.src,
            at,
            "an expression nested too deeply",
            format!("at most {MAX_TREE_DEPTH} levels of operators"),
        ))
    }

    /// A whole expression (the ternary level).
    pub fn expr(&mut self) -> Result<Expr, ParseError> {
        self.expression().map(|(e, _)| e).map_err(|e| *e)
    }

    fn expression(&mut self) -> Parsed {
        self.nested(NEST_COST, |p| p.ternary())
    }

    /// Runs `f` one nesting level deeper, refusing input nested past HTCondor's limit.
    fn nested(&mut self, cost: u32, f: impl FnOnce(&mut Self) -> Parsed) -> Parsed {
        if self.nesting + cost > MAX_NESTING {
            return Err(Box::new(ParseError::at(
                self.src,
                self.tok.start,
                "an expression nested too deeply",
                "fewer nested parentheses, lists, calls or operators",
            )));
        }
        self.nesting += cost;
        // Deep input must give an error, never a stack overflow, whatever
        // stack the caller's thread has. Checking the stack costs a little,
        // so only about every ten levels of parentheses.
        let r = if self.nesting / 60 != (self.nesting - cost) / 60 {
            stacker::maybe_grow(256 * 1024, 2 * 1024 * 1024, || f(self))
        } else {
            f(self)
        };
        self.nesting -= cost;
        r
    }

    fn ternary(&mut self) -> Parsed {
        let start = self.tok.start;
        // Without a `?`, the operand's result is handed back as it is: taking
        // it apart and building it again would copy a tree node just
        // written, which stalls (see `Lexer::lex_into`).
        let cond = self.binary(1);
        if self.tok.kind != Kind::Question || cond.is_err() {
            return cond;
        }
        let (cond, d) = cond?;
        self.bump()?;
        let (then, d1) = self.nested(LIGHT_COST, |p| p.ternary())?;
        self.expect(Kind::Colon, "':' of the conditional expression")?;
        let (els, d2) = self.nested(LIGHT_COST, |p| p.ternary())?;
        let depth = 1 + d.max(d1).max(d2);
        self.check_depth(depth, start)?;
        Ok((Expr::Cond(Box::new((cond, then, els))), depth))
    }

    fn binop(&self) -> Option<BinOp> {
        Some(match self.tok.kind {
            Kind::OrOr => BinOp::Or,
            Kind::AndAnd => BinOp::And,
            Kind::Bar => BinOp::BitOr,
            Kind::Caret => BinOp::BitXor,
            Kind::Amp => BinOp::BitAnd,
            Kind::EqEq => BinOp::Eq,
            Kind::NotEq => BinOp::Ne,
            Kind::MetaEq | Kind::Is => BinOp::MetaEq,
            Kind::MetaNe | Kind::Isnt => BinOp::MetaNe,
            Kind::Lt => BinOp::Lt,
            Kind::Le => BinOp::Le,
            Kind::Gt => BinOp::Gt,
            Kind::Ge => BinOp::Ge,
            Kind::Shl => BinOp::Shl,
            Kind::Shr => BinOp::Shr,
            Kind::UShr => BinOp::UShr,
            Kind::Plus => BinOp::Add,
            Kind::Minus => BinOp::Sub,
            Kind::Star => BinOp::Mul,
            Kind::Slash => BinOp::Div,
            Kind::Percent => BinOp::Mod,
            _ => return None,
        })
    }

    /// Left-associative binary operators of precedence `min` and tighter.
    fn binary(&mut self, min: u8) -> Parsed {
        let start = self.tok.start;
        // A lone operand is handed back as it is (see `ternary`).
        let first = self.unary();
        match self.binop() {
            Some(op) if op.precedence() >= min && first.is_ok() => {
                self.binary_rest(min, first?, start)
            }
            _ => first,
        }
    }

    /// The operators of precedence `min` and tighter that follow `lhs`
    /// (which starts at `start`). An operand followed by a looser or equal
    /// operator, the usual case, is taken without another call.
    fn binary_rest(&mut self, min: u8, (mut lhs, mut depth): (Expr, u32), start: usize) -> Parsed {
        while let Some(op) = self.binop() {
            let prec = op.precedence();
            if prec < min {
                break;
            }
            self.bump()?;
            let rhs_start = self.tok.start;
            let mut rhs = self.unary()?;
            // At most one level per precedence, so no stack check here: the
            // nesting check covers the growth.
            if self.binop().is_some_and(|next| next.precedence() > prec) {
                rhs = self.binary_rest(prec + 1, rhs, rhs_start)?;
            }
            let (rhs, rd) = rhs;
            depth = 1 + depth.max(rd);
            self.check_depth(depth, start)?;
            lhs = crate::expr::Folded::binary(op, lhs, rhs);
        }
        Ok((lhs, depth))
    }

    /// Prefix operators, then a postfix expression.
    #[inline]
    fn unary(&mut self) -> Parsed {
        match self.tok.kind {
            Kind::Minus | Kind::Plus | Kind::Bang | Kind::Tilde => self.prefixed(),
            _ => self.postfix(),
        }
    }

    /// A prefix operator and its operand.
    fn prefixed(&mut self) -> Parsed {
        let op = match self.tok.kind {
            Kind::Minus => UnOp::Neg,
            Kind::Plus => UnOp::Plus,
            Kind::Bang => UnOp::Not,
            _ => UnOp::BitNot,
        };
        self.bump()?;
        let (x, d) = self.nested(LIGHT_COST, |p| p.unary())?;
        Ok((Expr::Unary(op, Box::new(x)), d + 1))
    }

    fn postfix(&mut self) -> Parsed {
        let start = self.tok.start;
        // Most operands have no postfix operator: hand the primary back as it
        // is (see `ternary`).
        let first = self.primary();
        if !matches!(self.tok.kind, Kind::Dot | Kind::LBracket | Kind::Elvis) || first.is_err() {
            return first;
        }
        self.postfix_ops(first?, start)
    }

    /// The postfix operators after the operand `(e, depth)` that starts at `start`.
    fn postfix_ops(&mut self, (mut e, mut depth): (Expr, u32), start: usize) -> Parsed {
        loop {
            match self.tok.kind {
                Kind::Dot => {
                    self.bump()?;
                    // HTCondor reads `a..b` as `a.b`.
                    if self.tok.kind == Kind::Dot {
                        self.bump()?;
                    }
                    let name = self.attr_name("an attribute name after '.'")?;
                    e = Expr::Select(Box::new(e), name);
                    depth += 1;
                }
                Kind::LBracket => {
                    self.bump()?;
                    let (idx, d) = self.expression()?;
                    self.expect(Kind::RBracket, "']' closing the subscript")?;
                    depth = 1 + depth.max(d);
                    e = Expr::Index(Box::new(e), Box::new(idx));
                }
                Kind::Elvis => {
                    // HTCondor binds `?:` at the postfix level, to the right:
                    // `a ?: b * 2` is `(a ?: b) * 2`.
                    self.bump()?;
                    let (rhs, d) = self.nested(LIGHT_COST, |p| p.postfix())?;
                    depth = 1 + depth.max(d);
                    e = Expr::Elvis(Box::new(e), Box::new(rhs));
                }
                _ => break,
            }
            self.check_depth(depth, start)?;
        }
        Ok((e, depth))
    }

    fn attr_name(&mut self, expected: &str) -> Result<AttrName, PErr> {
        match self.tok.kind {
            Kind::Name | Kind::QuotedName => {
                let n = AttrName::new(&self.lexer.text_of(&self.tok));
                self.bump()?;
                Ok(n)
            }
            _ => Err(self.error(expected)),
        }
    }

    fn primary(&mut self) -> Parsed {
        // The token's fields are read one by one, not copied whole (see
        // `Lexer::lex_into`).
        let start = self.tok.start;
        let e = match self.tok.kind {
            Kind::Int => {
                let i = self.tok.int();
                self.bump()?;
                Expr::Lit(Value::Int(i))
            }
            Kind::Real => {
                let r = self.tok.real();
                self.bump()?;
                Expr::Lit(Value::Real(r))
            }
            Kind::Str => {
                // The text may live in the lexer, which the next token reuses.
                let s = crate::value::ArcStr::from(&*self.lexer.text_of(&self.tok));
                self.bump()?;
                Expr::Lit(Value::Str(s))
            }
            Kind::True => {
                self.bump()?;
                Expr::Lit(Value::Bool(true))
            }
            Kind::False => {
                self.bump()?;
                Expr::Lit(Value::Bool(false))
            }
            Kind::Undefined => {
                self.bump()?;
                Expr::Lit(Value::Undefined)
            }
            Kind::Error => {
                self.bump()?;
                Expr::Lit(Value::Error)
            }
            Kind::Name => {
                let text = &self.src[start..self.tok.end];
                self.bump()?;
                if self.tok.kind == Kind::LParen {
                    return self.call(text, start);
                }
                Expr::Attr(AttrName::new(text))
            }
            Kind::QuotedName => {
                let text = self.lexer.text_of(&self.tok).into_owned();
                self.bump()?;
                Expr::Attr(AttrName::new(&text))
            }
            Kind::Dot => {
                self.bump()?;
                let name = self.attr_name("an attribute name after '.'")?;
                Expr::Absolute(name)
            }
            Kind::LParen => {
                self.bump()?;
                let (inner, d) = self.expression()?;
                self.expect(Kind::RParen, "')'")?;
                return Ok((Expr::Paren(Box::new(inner)), d + 1));
            }
            Kind::LBrace => {
                self.bump()?;
                return self.list();
            }
            Kind::LBracket => {
                self.bump()?;
                let ad = self.ad_body_boxed()?;
                return Ok((Expr::Ad(Arc::new(ad)), 1));
            }
            _ => {
                // Read the next token first, as for any other token: a
                // malformed one there is the error to report.
                let found = self.current().describe();
                self.bump()?;
                return Err(Box::new(ParseError::at(
                    self.src,
                    start,
                    &found,
                    "an expression",
                )));
            }
        };
        Ok((e, 1))
    }

    fn call(&mut self, name: &str, start: usize) -> Parsed {
        self.expect(Kind::LParen, "'('")?;
        let mut args = Vec::new();
        let mut depth = 0;
        if self.tok.kind != Kind::RParen {
            loop {
                let (a, d) = self.expression()?;
                depth = depth.max(d);
                args.push(a);
                if self.tok.kind == Kind::Comma {
                    self.bump()?;
                    continue;
                }
                break;
            }
        }
        self.expect(Kind::RParen, "',' or ')' in the argument list")?;
        if let Some(lit) = self.fold_time_literal(name, &args, start)? {
            return Ok((lit, 1));
        }
        let builtin = crate::functions::lookup(name);
        Ok((
            Expr::Call(Box::new(Call {
                name: Box::from(name),
                builtin,
                args,
            })),
            depth + 1,
        ))
    }

    /// `absTime("...")` and `relTime("...")` with a literal string are time
    /// literals, read (and refused) at parse time, as HTCondor does.
    fn fold_time_literal(
        &self,
        name: &str,
        args: &[Expr],
        start: usize,
    ) -> Result<Option<Expr>, PErr> {
        let [Expr::Lit(Value::Str(s))] = args else {
            return Ok(None);
        };
        if name.eq_ignore_ascii_case("absTime") {
            return match crate::time::parse_abstime(s) {
                Some(t) => Ok(Some(Expr::Lit(Value::AbsTime(t)))),
                None => Err(Box::new(ParseError::at(
                    self.src,
                    start,
                    &format!("absTime(\"{s}\")"),
                    "an absolute time like \"2024-01-31T12:00:00-06:00\"",
                ))),
            };
        }
        if name.eq_ignore_ascii_case("relTime") {
            return match crate::time::parse_reltime(s) {
                Some(secs) => Ok(Some(Expr::RelTimeLit(secs))),
                None => Err(Box::new(ParseError::at(
                    self.src,
                    start,
                    &format!("relTime(\"{s}\")"),
                    "a relative time like \"1+02:03:04\" or \"1d2h3m4s\"",
                ))),
            };
        }
        Ok(None)
    }

    fn list(&mut self) -> Parsed {
        let mut items = Vec::new();
        let mut depth = 0;
        if self.tok.kind != Kind::RBrace {
            loop {
                let (e, d) = self.expression()?;
                depth = depth.max(d);
                items.push(e);
                if self.tok.kind == Kind::Comma {
                    self.bump()?;
                    continue;
                }
                break;
            }
        }
        self.expect(Kind::RBrace, "',' or '}' in the list")?;
        Ok((Expr::List(items.into()), depth + 1))
    }

    /// The inside of `[ ... ]`, after the `[`; consumes the closing `]`.
    pub fn ad_body(&mut self) -> Result<ClassAd, ParseError> {
        self.ad_body_boxed().map_err(|e| *e)
    }

    fn ad_body_boxed(&mut self) -> Result<ClassAd, PErr> {
        let mut ad = ClassAd::new();
        loop {
            match self.tok.kind {
                Kind::RBracket => {
                    self.bump()?;
                    return Ok(ad);
                }
                Kind::Semi => {
                    self.bump()?;
                }
                Kind::Name | Kind::QuotedName => {
                    let name = AttrName::new(&self.lexer.text_of(&self.tok));
                    self.bump()?;
                    self.expect(Kind::Assign, "'=' after the attribute name")?;
                    let (e, _) = self.expression()?;
                    ad.insert(name, e);
                    match self.tok.kind {
                        Kind::Semi | Kind::RBracket => {}
                        _ => return Err(self.error("';' or ']' after the attribute's value")),
                    }
                }
                _ => return Err(self.error("an attribute name, ';' or ']'")),
            }
        }
    }
}

/// Parses one complete expression; anything after it is an error.
pub fn parse_expr(src: &str) -> Result<Expr, ParseError> {
    parse_expr_mode(src, StringMode::Escapes)
}

pub(crate) fn parse_expr_mode(src: &str, mode: StringMode) -> Result<Expr, ParseError> {
    let end = match mode {
        StringMode::Escapes => "an operator or the end of the expression",
        StringMode::Old => "an operator or the end of the line",
    };
    let mut p = Parser::new(src, mode)?;
    if p.at_eof() {
        return Err(*p.error("an expression"));
    }
    let e = p.expr()?;
    if !p.at_eof() {
        return Err(*p.error(end));
    }
    Ok(e)
}

/// Parses one ad in new syntax, `[ name = expr; ... ]`, and nothing after it.
pub fn parse_ad(src: &str) -> Result<ClassAd, ParseError> {
    let mut p = Parser::new(src, StringMode::Escapes)?;
    p.expect(Kind::LBracket, "'[' starting a ClassAd")
        .map_err(|e| *e)?;
    let ad = p.ad_body()?;
    if !p.at_eof() {
        return Err(*p.error("the end of the input after the ClassAd"));
    }
    Ok(ad)
}

/// An absolute time literal value.
pub fn abstime(secs: i64, offset: i32) -> Value {
    Value::AbsTime(AbsTime { secs, offset })
}

/// Parses one complete old-syntax value (backslashes in strings are literal,
/// except `\"`); anything after the expression is an error.
pub fn parse_old_value_whole(src: &str) -> Result<Expr, ParseError> {
    parse_expr_mode(src, StringMode::Old)
}
