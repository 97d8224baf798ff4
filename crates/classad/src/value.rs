//! ClassAd values: what an expression evaluates to.

use std::fmt;
use std::sync::Arc;

use crate::ad::ClassAd;
use crate::eval::Scope;
use crate::expr::Expr;

/// The result of evaluating an expression.
///
/// Lists and nested ads keep their elements as (unevaluated) expressions, as
/// HTCondor does: `{ 1 + 1, 2 }` is a list whose first element is still `1 + 1`.
/// They also remember the scope they were found in, so that an element that
/// refers to an attribute of the surrounding ad still finds it.
#[derive(Clone, Debug)]
pub enum Value {
    Undefined,
    Error,
    Bool(bool),
    Int(i64),
    Real(f64),
    Str(Arc<str>),
    List(ListValue),
    Ad(AdValue),
    /// Seconds since the epoch, and the zone offset (seconds east of UTC) it prints in.
    AbsTime(AbsTime),
    /// A duration in seconds.
    RelTime(f64),
}

/// A list value: the element expressions and the scope to evaluate them in.
#[derive(Clone, Debug)]
pub struct ListValue {
    pub items: Arc<[Expr]>,
    pub(crate) scope: Scope,
}

/// A nested ad value, with the scope that encloses it (its `parent`).
#[derive(Clone, Debug)]
pub struct AdValue {
    pub ad: Arc<ClassAd>,
    pub(crate) parent: Scope,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AbsTime {
    pub secs: i64,
    pub offset: i32,
}

/// The type of a value, as HTCondor names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueType {
    Undefined,
    Error,
    Boolean,
    Integer,
    Real,
    String,
    List,
    ClassAd,
    AbsTime,
    RelTime,
}

impl ValueType {
    pub fn name(self) -> &'static str {
        match self {
            ValueType::Undefined => "undefined",
            ValueType::Error => "error",
            ValueType::Boolean => "boolean",
            ValueType::Integer => "integer",
            ValueType::Real => "real",
            ValueType::String => "string",
            ValueType::List => "list",
            ValueType::ClassAd => "classad",
            ValueType::AbsTime => "abstime",
            ValueType::RelTime => "reltime",
        }
    }
}

impl Value {
    pub fn str(s: &str) -> Value {
        Value::Str(Arc::from(s))
    }

    /// A list of already-computed values (each becomes a literal element).
    pub fn list_of(values: Vec<Value>) -> Value {
        let items: Vec<Expr> = values.into_iter().map(Expr::from_value).collect();
        Value::List(ListValue {
            items: items.into(),
            scope: Scope::None,
        })
    }

    /// A nested-ad value with no enclosing scope.
    pub fn ad(ad: ClassAd) -> Value {
        Value::Ad(AdValue {
            ad: Arc::new(ad),
            parent: Scope::None,
        })
    }

    pub fn value_type(&self) -> ValueType {
        match self {
            Value::Undefined => ValueType::Undefined,
            Value::Error => ValueType::Error,
            Value::Bool(_) => ValueType::Boolean,
            Value::Int(_) => ValueType::Integer,
            Value::Real(_) => ValueType::Real,
            Value::Str(_) => ValueType::String,
            Value::List(_) => ValueType::List,
            Value::Ad(_) => ValueType::ClassAd,
            Value::AbsTime(_) => ValueType::AbsTime,
            Value::RelTime(_) => ValueType::RelTime,
        }
    }

    pub fn is_undefined(&self) -> bool {
        matches!(self, Value::Undefined)
    }
    pub fn is_error(&self) -> bool {
        matches!(self, Value::Error)
    }

    /// True only for the boolean `true`.
    pub fn is_true(&self) -> bool {
        matches!(self, Value::Bool(true))
    }

    /// The truth of a value the way HTCondor's `EvalBool` reads it: booleans,
    /// and numbers (non-zero is true); anything else is `None`.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            Value::Int(i) => Some(*i != 0),
            Value::Real(r) => Some(*r != 0.0),
            _ => None,
        }
    }

    pub fn as_int(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            _ => None,
        }
    }

    /// A number as a real: integers, reals and booleans.
    pub fn as_number(&self) -> Option<f64> {
        match self {
            Value::Int(i) => Some(*i as f64),
            Value::Real(r) => Some(*r),
            Value::Bool(b) => Some(if *b { 1.0 } else { 0.0 }),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }
}

impl From<bool> for Value {
    fn from(b: bool) -> Value {
        Value::Bool(b)
    }
}
impl From<i64> for Value {
    fn from(i: i64) -> Value {
        Value::Int(i)
    }
}
impl From<f64> for Value {
    fn from(r: f64) -> Value {
        Value::Real(r)
    }
}
impl From<&str> for Value {
    fn from(s: &str) -> Value {
        Value::str(s)
    }
}
impl From<String> for Value {
    fn from(s: String) -> Value {
        Value::Str(Arc::from(s))
    }
}

/// Prints a value as a ClassAd literal, exactly as HTCondor does.
impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = String::new();
        crate::unparse::value_into(&mut s, self);
        f.write_str(&s)
    }
}
