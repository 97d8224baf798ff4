//! Reading parameters as the types the daemons need: integer, boolean,
//! real, duration, list, ClassAd expression. Errors name the parameter,
//! its text and where it was defined.
//!
//! HTCondor reads numbers and booleans by evaluating the text as a ClassAd
//! expression (`NUM_CPUS = $(DETECTED_CORES)*2`), and so do we.

use std::fmt;

use classad::{Expr, Value};

use crate::config::{Config, LookupError, Origin};
use crate::expand::evaluate;

/// A parameter whose value is not of the type asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamError {
    pub name: String,
    /// The expanded text.
    pub text: String,
    pub origin: Option<Box<Origin>>,
    /// What was expected, and what is wrong.
    pub message: String,
}

impl fmt::Display for ParamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(Origin::File { path, line }) = self.origin.as_deref() {
            write!(f, "{path}:{line}: ")?;
        }
        write!(f, "{} = {}: {}", self.name, self.text, self.message)?;
        match self.origin.as_deref() {
            Some(Origin::File { .. }) | None => Ok(()),
            Some(o) => write!(f, " (defined by {o})"),
        }
    }
}

impl std::error::Error for ParamError {}

impl From<LookupError> for ParamError {
    fn from(e: LookupError) -> ParamError {
        ParamError {
            name: e.name.clone(),
            text: String::new(),
            origin: e.origin.clone(),
            message: e.error.to_string(),
        }
    }
}

/// The items of a list as HTCondor's configuration writes lists: separated
/// by commas and/or blanks (`STARTD_ATTRS`, `DAEMON_LIST`,
/// `LOCAL_CONFIG_FILE`).
pub fn split_list(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| c == ',' || c.is_whitespace())
        .filter(|s| !s.is_empty())
}

/// `true`/`false` as HTCondor's configuration writes them (any case, also
/// `yes`/`no`, `t`/`f`, and numbers).
pub fn parse_bool(text: &str) -> Option<bool> {
    let t = text.trim();
    match t.to_ascii_lowercase().as_str() {
        "true" | "yes" | "t" | "y" => return Some(true),
        "false" | "no" | "f" | "n" => return Some(false),
        _ => {}
    }
    evaluate(t).and_then(|v| v.as_bool())
}

impl Config {
    fn typed<T>(
        &self,
        name: &str,
        expected: &str,
        read: impl Fn(&str) -> Option<T>,
    ) -> Result<Option<T>, ParamError> {
        let Some(text) = self.get(name)? else {
            return Ok(None);
        };
        match read(&text) {
            Some(v) => Ok(Some(v)),
            None => Err(ParamError {
                name: name.to_string(),
                origin: self.find(name).map(|f| Box::new(f.origin)),
                text,
                message: format!("expected {expected}"),
            }),
        }
    }

    /// An integer (a real is truncated, as HTCondor does).
    pub fn integer(&self, name: &str) -> Result<Option<i64>, ParamError> {
        self.typed(name, "an integer", |t| match evaluate(t)? {
            Value::Int(i) => Some(i),
            Value::Real(x) if x.is_finite() => Some(x.trunc() as i64),
            Value::Bool(b) => Some(b as i64),
            _ => None,
        })
    }

    /// An integer, or `default` when the parameter is not set.
    pub fn integer_or(&self, name: &str, default: i64) -> Result<i64, ParamError> {
        Ok(self.integer(name)?.unwrap_or(default))
    }

    /// True or false.
    pub fn boolean(&self, name: &str) -> Result<Option<bool>, ParamError> {
        self.typed(name, "true or false", parse_bool)
    }

    /// A real number.
    pub fn real(&self, name: &str) -> Result<Option<f64>, ParamError> {
        self.typed(name, "a number", |t| evaluate(t)?.as_number())
    }

    /// A number of seconds, not negative.
    pub fn duration(&self, name: &str) -> Result<Option<i64>, ParamError> {
        self.typed(
            name,
            "a number of seconds (0 or more)",
            |t| match evaluate(t)? {
                Value::Int(i) if i >= 0 => Some(i),
                Value::Real(x) if x.is_finite() && x >= 0.0 => Some(x.trunc() as i64),
                _ => None,
            },
        )
    }

    /// A list separated by commas and/or blanks (`STARTD_ATTRS`,
    /// `DAEMON_LIST`); empty when not set.
    pub fn list(&self, name: &str) -> Result<Vec<String>, ParamError> {
        Ok(self
            .get(name)?
            .map(|t| split_list(&t).map(str::to_string).collect())
            .unwrap_or_default())
    }

    /// A ClassAd expression (START, RANK, PREEMPTION_REQUIREMENTS, ...).
    pub fn expression(&self, name: &str) -> Result<Option<Expr>, ParamError> {
        let Some(text) = self.get(name)? else {
            return Ok(None);
        };
        classad::parse_expr(&text)
            .map(Some)
            .map_err(|e| ParamError {
                name: name.to_string(),
                origin: self.find(name).map(|f| Box::new(f.origin)),
                message: format!("not a ClassAd expression: {e}"),
                text,
            })
    }
}
