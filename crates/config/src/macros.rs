//! The macro language on its own, for the languages HTCondor builds on it.
//!
//! HTCondor's submit description language is the configuration's macro
//! language with other commands: `$(NAME)`, `$(NAME:default)`, `$ENV()`,
//! `$INT()`, `$F...()`, self-references (`X = $(X) more`) and
//! `if`/`elif`/`else`/`endif` mean the same in a submit file as in a
//! configuration file. This module opens this crate's expander
//! (`expand.rs`) and its statement reader's pieces to other crates through
//! the small [`Macros`] trait, so that the submit crate expands with the very
//! same code rather than a second copy that would drift from it.
//!
//! The loader evaluates its own `if` conditions with [`condition`] too,
//! through the [`Macros`] implementation of [`crate::Config`], so both
//! languages share one reading of them.

use crate::expand::{self, next_reference, ExpandError, RefKind, Resolve};
use crate::syntax::{self, is_name_char, Statement};

/// A table of macros that text can be expanded against.
pub trait Macros {
    /// The unexpanded value of `name` (any case), or `None` when it is not
    /// defined. An empty value counts as undefined for `$(NAME:default)`.
    fn lookup(&self, name: &str) -> Option<String>;
    /// An environment variable, for `$ENV(NAME)`; none by default.
    fn env(&self, _name: &str) -> Option<String> {
        None
    }
    /// A reproducible random number for `$RANDOM_CHOICE()` and
    /// `$RANDOM_INTEGER()`; `salt` tells the uses apart.
    fn random(&self, _salt: &str) -> u64 {
        0
    }
}

/// A configuration is a table of macros: lookups apply its prefixes and
/// defaults, as when its own values are expanded.
impl Macros for crate::Config {
    fn lookup(&self, name: &str) -> Option<String> {
        Resolve::raw(self, name)
    }
    fn env(&self, name: &str) -> Option<String> {
        Resolve::env(self, name)
    }
    fn random(&self, salt: &str) -> u64 {
        Resolve::random(self, salt)
    }
}

/// Lets any [`Macros`] drive the configuration's expander.
struct Adapter<'m>(&'m dyn Macros);

impl Resolve for Adapter<'_> {
    fn raw(&self, name: &str) -> Option<String> {
        self.0.lookup(name)
    }
    fn env(&self, name: &str) -> Option<String> {
        self.0.env(name)
    }
    fn random(&self, salt: &str) -> u64 {
        self.0.random(salt)
    }
}

/// Expands every macro reference in `text`, exactly as a configuration
/// value is expanded. A loop (macros that refer to each other) is an error
/// naming the macros on it.
pub fn expand_macros(text: &str, macros: &dyn Macros) -> Result<String, ExpandError> {
    let adapter = Adapter(macros);
    expand::expand(text, &adapter).map_err(|e| {
        if !e.cycle.is_empty() {
            return e;
        }
        // Name the loop when the text's own references lead into one.
        let cycle = expand::referenced_names(text)
            .into_iter()
            .map(|name| expand::find_cycle(name, &adapter))
            .find(|c| !c.is_empty())
            .unwrap_or_default();
        ExpandError { cycle }
    })
}

/// The macros `text` refers to with `$(NAME)`, including those inside
/// defaults, in order (a name may repeat).
pub fn referenced_macros(text: &str) -> Vec<String> {
    expand::referenced_names(text)
        .into_iter()
        .map(str::to_string)
        .collect()
}

/// Replaces the references a new definition of `name` makes to itself with
/// `previous`, the value in force before it (HTCondor's `X = $(X) more`
/// idiom), leaving every other reference for later expansion. A
/// self-reference with no previous value takes its `:default`, else nothing.
pub fn resolve_self_references(name: &str, value: &str, previous: Option<&str>) -> String {
    if !value.contains('$') {
        return value.to_string();
    }
    let mut s = value.to_string();
    let mut i = 0;
    while let Some(r) = next_reference(&s, i) {
        match r.kind {
            RefKind::Macro {
                name: referenced,
                default,
            } if referenced.eq_ignore_ascii_case(name) => {
                let replacement = previous
                    .filter(|v| !v.is_empty())
                    .map(str::to_string)
                    .or_else(|| default.map(str::to_string))
                    .unwrap_or_default();
                let (start, end) = (r.start, r.end);
                s.replace_range(start..end, &replacement);
                i = start + replacement.len();
            }
            _ => i = r.start + 1,
        }
    }
    s
}

/// A conditional line of the macro language.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Conditional {
    /// `if CONDITION`
    If(String),
    /// `elif CONDITION`
    Elif(String),
    Else,
    Endif,
}

/// The conditional a logical line is, if it is one (`if = 3` is not: it
/// assigns a macro named `if`).
pub fn conditional(line: &str) -> Option<Conditional> {
    match syntax::conditional(line)? {
        Statement::If(c) => Some(Conditional::If(c)),
        Statement::Elif(c) => Some(Conditional::Elif(c)),
        Statement::Else => Some(Conditional::Else),
        Statement::Endif => Some(Conditional::Endif),
        _ => None,
    }
}

/// Whether `c` may appear in a macro name.
pub fn is_macro_name_char(c: char) -> bool {
    is_name_char(c)
}

/// Evaluates the condition of an `if` or `elif` against `macros`: the
/// simple forms HTCondor allows (`defined NAME`, `version >= X.Y[.Z]`,
/// true/false/yes/no, a number, `!` before any of them, or macros that
/// expand to one of these). Anything else is an error saying what is
/// allowed.
pub fn condition(text: &str, macros: &dyn Macros) -> Result<bool, String> {
    let expanded = expand_macros(text, macros).map_err(|e| format!("if {text}: {e}"))?;
    let t = expanded.trim();
    if let Some(rest) = t.strip_prefix('!') {
        return simple_condition(rest.trim(), text, macros).map(|b| !b);
    }
    simple_condition(t, text, macros)
}

fn simple_condition(t: &str, written: &str, macros: &dyn Macros) -> Result<bool, String> {
    let (word, rest) = match t.find(char::is_whitespace) {
        Some(i) => (&t[..i], t[i..].trim()),
        None => (t, ""),
    };
    let invalid = |why: &str| {
        format!("`{t}` is not a valid `if` condition: {why}; use `defined NAME`, `version >= X.Y[.Z]`, true/false/yes/no, a number, or a macro holding one of these")
    };
    if word.eq_ignore_ascii_case("defined") {
        if rest.is_empty() {
            return Ok(false);
        }
        // As in a configuration: a name is looked up, any other text
        // counts as defined.
        let is_name = rest.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && rest.chars().all(is_name_char);
        return Ok(!is_name || macros.lookup(rest).is_some_and(|v| !v.is_empty()));
    }
    if word.eq_ignore_ascii_case("version") {
        return version_condition(rest).map_err(|why| invalid(&why));
    }
    if t.is_empty() {
        return if written.contains('$') {
            Ok(false)
        } else {
            Err(invalid("there is no condition"))
        };
    }
    match t.to_ascii_lowercase().as_str() {
        "true" | "yes" => return Ok(true),
        "false" | "no" => return Ok(false),
        _ => {}
    }
    if let Ok(n) = t.parse::<i64>() {
        return Ok(n != 0);
    }
    if t.contains(['.', 'e', 'E']) && !t.contains(['x', 'X']) {
        if let Ok(x) = t.parse::<f64>() {
            return Ok(x != 0.0);
        }
    }
    if t.contains(|c: char| c.is_whitespace() || "<>=!&|\"'()+*/%?:".contains(c)) {
        Err(invalid(
            "comparisons and other complex conditions are not supported",
        ))
    } else {
        Err(invalid("it is not a boolean or a number"))
    }
}

/// `version <op> X.Y[.Z]`, compared with the release whose behaviour this
/// crate reproduces ([`crate::COMPATIBLE_VERSION`]).
fn version_condition(rest: &str) -> Result<bool, String> {
    let ops = [">=", "<=", "==", "!=", ">", "<"];
    let Some(op) = ops.iter().find(|op| rest.starts_with(**op)) else {
        return Err(
            "`version` must be followed by a comparison (>=, <=, ==, !=, >, <) and a version"
                .into(),
        );
    };
    let literal = rest[op.len()..].trim();
    let parts: Option<Vec<u32>> = literal.split('.').map(|p| p.parse().ok()).collect();
    let parts = match parts {
        Some(p) if (2..=3).contains(&p.len()) => p,
        _ => {
            return Err(format!(
                "`{literal}` is not a version (expected major.minor or major.minor.patch)"
            ))
        }
    };
    let ours = &crate::COMPATIBLE_VERSION[..parts.len()];
    let ord = ours.cmp(&parts[..]);
    Ok(match *op {
        ">=" => ord.is_ge(),
        "<=" => ord.is_le(),
        "==" => ord.is_eq(),
        "!=" => ord.is_ne(),
        ">" => ord.is_gt(),
        _ => ord.is_lt(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    struct Table(BTreeMap<String, String>);

    impl Macros for Table {
        fn lookup(&self, name: &str) -> Option<String> {
            self.0.get(&name.to_ascii_uppercase()).cloned()
        }
    }

    fn table(pairs: &[(&str, &str)]) -> Table {
        Table(
            pairs
                .iter()
                .map(|(k, v)| (k.to_ascii_uppercase(), v.to_string()))
                .collect(),
        )
    }

    #[test]
    fn expands_with_the_configuration_expander() {
        let t = table(&[("X", "5"), ("NAME", "run_$(X)")]);
        assert_eq!(
            expand_macros("$(NAME) $(UNSET:fb) $INT(X) $(X)$(X) $$(Memory)", &t).unwrap(),
            "run_5 fb 5 55 $$(Memory)"
        );
    }

    #[test]
    fn loops_are_named() {
        let t = table(&[("A", "$(B)"), ("B", "$(A)")]);
        let e = expand_macros("x $(A)", &t).unwrap_err();
        assert_eq!(e.cycle, vec!["A", "B", "A"]);
    }

    #[test]
    fn self_references_take_the_previous_value() {
        assert_eq!(resolve_self_references("X", "$(X) b", Some("a")), "a b");
        assert_eq!(
            resolve_self_references("x", "$(X:none) $(Y)", None),
            "none $(Y)"
        );
        assert_eq!(resolve_self_references("X", "plain", Some("a")), "plain");
    }

    #[test]
    fn conditions() {
        let t = table(&[("WANT", "1"), ("EMPTY", ""), ("FLAG", "false")]);
        assert_eq!(condition("defined WANT", &t), Ok(true));
        assert_eq!(condition("defined EMPTY", &t), Ok(false));
        assert_eq!(condition("! defined NOPE", &t), Ok(true));
        assert_eq!(condition("$(FLAG)", &t), Ok(false));
        assert_eq!(condition("version >= 8.0", &t), Ok(true));
        assert!(condition("$(WANT) > 0", &t)
            .unwrap_err()
            .contains("complex"));
        assert_eq!(
            conditional("if defined X"),
            Some(Conditional::If("defined X".into()))
        );
        assert_eq!(conditional("else"), Some(Conditional::Else));
        assert_eq!(conditional("if = 3"), None);
    }
}
