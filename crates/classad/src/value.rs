//! ClassAd values: what an expression evaluates to.

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

pub use arcstr::ArcStr;

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
    /// A string: a thin, shared pointer, so a value stays two words.
    Str(ArcStr),
    List(ListValue),
    Ad(AdValue),
    /// Seconds since the epoch, and the zone offset (seconds east of UTC) it prints in.
    AbsTime(AbsTime),
    /// A duration in seconds.
    RelTime(f64),
}

/// A list value: the element expressions and the scope to evaluate them in.
/// (One pointer, so that every value fits in two machine words.)
#[derive(Clone, Debug)]
pub struct ListValue(Arc<ListData>);

#[derive(Debug)]
pub struct ListData {
    pub items: Arc<[Expr]>,
    pub(crate) scope: Scope,
    /// Built by a function that owns what it made (`split`, `splitUserName`,
    /// `splitSlotName`, `argsToList`, `evalInEachContext`): HTCondor gives
    /// such a list a value type of its own (`SLIST_VALUE`, a counted
    /// pointer) apart from a list found in an expression (`LIST_VALUE`), and
    /// its meta-comparisons (`=?=`, `is`) see two different types.
    pub(crate) built: bool,
}

impl ListValue {
    pub(crate) fn new(items: Arc<[Expr]>, scope: Scope) -> ListValue {
        ListValue(Arc::new(ListData {
            items,
            scope,
            built: false,
        }))
    }

    /// Whether a function built this list (see [`ListData::built`]).
    pub fn is_built(&self) -> bool {
        self.0.built
    }
}

impl Deref for ListValue {
    type Target = ListData;
    fn deref(&self) -> &ListData {
        &self.0
    }
}

/// A nested ad value, with the scope that encloses it (its `parent`).
#[derive(Clone, Debug)]
pub struct AdValue(Arc<AdData>);

#[derive(Debug)]
pub struct AdData {
    pub ad: Arc<ClassAd>,
    pub(crate) parent: Scope,
}

impl AdValue {
    pub(crate) fn new(ad: Arc<ClassAd>, parent: Scope) -> AdValue {
        AdValue(Arc::new(AdData { ad, parent }))
    }
}

impl Deref for AdValue {
    type Target = AdData;
    fn deref(&self) -> &AdData {
        &self.0
    }
}

/// An absolute time: seconds since the epoch, and the zone offset it prints
/// in. Packed so that a [`Value`] stays two words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C, packed(4))]
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
        Value::Str(ArcStr::from(s))
    }

    /// A list of already-computed values (each becomes a literal element).
    pub fn list_of(values: Vec<Value>) -> Value {
        let items: Vec<Expr> = values.into_iter().map(Expr::from_value).collect();
        Value::List(ListValue::new(items.into(), Scope::None))
    }

    /// As [`Value::list_of`], for a list a built-in function makes and hands
    /// over as its own (HTCondor's `SLIST_VALUE`; see [`ListData::built`]).
    pub fn built_list_of(values: Vec<Value>) -> Value {
        let items: Vec<Expr> = values.into_iter().map(Expr::from_value).collect();
        Value::List(ListValue(Arc::new(ListData {
            items: items.into(),
            scope: Scope::None,
            built: true,
        })))
    }

    /// A nested-ad value with no enclosing scope.
    pub fn ad(ad: ClassAd) -> Value {
        Value::Ad(AdValue::new(Arc::new(ad), Scope::None))
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
        Value::Str(ArcStr::from(s))
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

#[cfg(test)]
mod tests {
    #[test]
    fn a_value_is_two_words() {
        assert_eq!(std::mem::size_of::<super::Value>(), 16);
    }
}
