//! The expression tree.
//!
//! The tree keeps everything needed to print an expression back the way
//! HTCondor prints it: parentheses, the spelling of names and function names.

use std::sync::Arc;

use crate::ad::ClassAd;
use crate::functions::Builtin;
use crate::name::AttrName;
use crate::value::Value;

#[derive(Clone, Debug)]
pub enum Expr {
    /// A literal scalar: undefined, error, boolean, integer, real, string, abstime.
    Lit(Value),
    /// `relTime("...")` folded at parse time. HTCondor evaluates such a literal to
    /// a real number of seconds (but a `relTime(N)` call to a relative time).
    RelTimeLit(f64),
    /// An unscoped attribute reference `name` (also `MY`, `TARGET`, `parent`).
    Attr(AttrName),
    /// An absolute reference `.name`: looked up from the outermost ad.
    Absolute(AttrName),
    /// `base.name`
    Select(Box<Expr>, AttrName),
    /// `base[index]`
    Index(Box<Expr>, Box<Expr>),
    Unary(UnOp, Box<Expr>),
    /// Both operands in one allocation: ads hold many binary operators.
    Binary(BinOp, Box<(Expr, Expr)>),
    /// `cond ? then : else`
    Cond(Box<(Expr, Expr, Expr)>),
    /// `a ?: b`
    Elvis(Box<Expr>, Box<Expr>),
    Paren(Box<Expr>),
    Call(Box<Call>),
    List(Arc<[Expr]>),
    Ad(Arc<ClassAd>),
    /// An operator on literals (`15 * 60`), computed once when parsed. It
    /// evaluates to `value` and prints as `expr`, so nothing a user sees
    /// changes; only the work is saved.
    Folded(Box<Folded>),
}

#[derive(Clone, Debug)]
pub struct Folded {
    pub value: Value,
    /// The expression as written.
    pub expr: Expr,
    /// The evaluation depth the written expression would reach (HTCondor's
    /// depth limit still applies to it).
    pub cost: u32,
}

impl Folded {
    /// The expression `l op r`: folded when both operands are constants,
    /// except for `&&` and `||` (left to the evaluator's short-circuit).
    pub(crate) fn binary(op: BinOp, l: Expr, r: Expr) -> Expr {
        if !matches!(op, BinOp::And | BinOp::Or) {
            if let (Some((a, ca)), Some((b, cb))) = (l.constant(), r.constant()) {
                let value = crate::eval::ops::binary(op, a, b);
                let cost = 1 + ca.max(cb);
                return Expr::Folded(Box::new(Folded {
                    value,
                    expr: Expr::Binary(op, Box::new((l, r))),
                    cost,
                }));
            }
        }
        Expr::Binary(op, Box::new((l, r)))
    }
}

#[derive(Clone, Debug)]
pub struct Call {
    /// The function name as written (HTCondor prints it back as written).
    pub name: Box<str>,
    /// The built-in it names, if any; an unknown function evaluates to ERROR.
    pub builtin: Option<Builtin>,
    pub args: Vec<Expr>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnOp {
    Neg,
    Plus,
    Not,
    BitNot,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    Or,
    And,
    BitOr,
    BitXor,
    BitAnd,
    Eq,
    Ne,
    MetaEq,
    MetaNe,
    Lt,
    Le,
    Gt,
    Ge,
    Shl,
    Shr,
    UShr,
    Add,
    Sub,
    Mul,
    Div,
    Mod,
}

impl UnOp {
    pub fn symbol(self) -> &'static str {
        match self {
            UnOp::Neg => "-",
            UnOp::Plus => "+",
            UnOp::Not => "!",
            UnOp::BitNot => "~",
        }
    }
}

impl BinOp {
    /// The operator as HTCondor prints it (`=?=` prints as `is`).
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Or => "||",
            BinOp::And => "&&",
            BinOp::BitOr => "|",
            BinOp::BitXor => "^",
            BinOp::BitAnd => "&",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::MetaEq => "is",
            BinOp::MetaNe => "isnt",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::Shl => "<<",
            BinOp::Shr => ">>",
            BinOp::UShr => ">>>",
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Mod => "%",
        }
    }

    /// Binding strength: a higher number binds tighter.
    pub fn precedence(self) -> u8 {
        match self {
            BinOp::Or => 1,
            BinOp::And => 2,
            BinOp::BitOr => 3,
            BinOp::BitXor => 4,
            BinOp::BitAnd => 5,
            BinOp::Eq | BinOp::Ne | BinOp::MetaEq | BinOp::MetaNe => 6,
            BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => 7,
            BinOp::Shl | BinOp::Shr | BinOp::UShr => 8,
            BinOp::Add | BinOp::Sub => 9,
            BinOp::Mul | BinOp::Div | BinOp::Mod => 10,
        }
    }
}

impl Expr {
    /// The literal expression for a computed value.
    pub fn from_value(v: Value) -> Expr {
        match v {
            Value::List(l) => Expr::List(l.items.clone()),
            Value::Ad(a) => Expr::Ad(a.ad.clone()),
            other => Expr::Lit(other),
        }
    }

    /// The value of a literal or folded constant, and its evaluation cost.
    fn constant(&self) -> Option<(&Value, u32)> {
        match self {
            Expr::Lit(v) => Some((v, 0)),
            Expr::Folded(f) => Some((&f.value, f.cost)),
            _ => None,
        }
    }

    pub fn attr(name: &str) -> Expr {
        Expr::Attr(AttrName::new(name))
    }

    /// Parses an expression (convenience for [`crate::parse_expr`]).
    pub fn parse(text: &str) -> Result<Expr, crate::ParseError> {
        crate::parser::parse_expr(text)
    }
}

/// Prints the expression the way HTCondor's unparser does.
impl std::fmt::Display for Expr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut s = String::new();
        crate::unparse::expr_into(&mut s, self);
        f.write_str(&s)
    }
}
