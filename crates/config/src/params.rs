//! The parameter table: every configuration parameter ferrocondor reads,
//! with HTCondor's built-in default and a one-line meaning.
//!
//! The daemons read parameters only through names in this table (a tidy
//! test checks it), so this file is the complete list of knobs an admin can
//! turn. Defaults are HTCondor's own (as its parameter table has them,
//! unexpanded: `$(LOCAL_DIR)/execute`), because admins' existing files
//! refer to them: `START = $(START) && ...` builds on the default `True`.
//! `tests/defaults.rs` checks each default's expansion against what
//! HTCondor 25.14.1 answers for an empty configuration.
//!
//! Keep `PARAMS` sorted by name, compared case-insensitively (ASCII
//! uppercase); a unit test checks it, and lookups rely on it.

/// How a parameter's value is read by the typed accessors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Text used as it is.
    Text,
    /// A 64-bit integer; HTCondor evaluates the text as a ClassAd expression
    /// (`$(DETECTED_CORES)*2`) and truncates a real.
    Integer,
    /// True or false; also evaluated as a ClassAd expression.
    Boolean,
    /// A real number; evaluated as a ClassAd expression.
    Real,
    /// A file or directory name.
    Path,
    /// A ClassAd expression kept as an expression (START, RANK, ...).
    Expression,
    /// A list separated by commas and/or blanks (STARTD_ATTRS, DAEMON_LIST).
    List,
    /// A number of seconds, written as an integer expression.
    Duration,
}

/// One parameter of the table.
#[derive(Debug)]
pub struct Param {
    /// The name as HTCondor's documentation spells it.
    pub name: &'static str,
    /// HTCondor's built-in default, unexpanded; `""` means none (an empty
    /// value and no value are the same thing to HTCondor).
    pub default: &'static str,
    /// How the typed accessors read it.
    pub kind: Kind,
    /// One line: what it does.
    pub meaning: &'static str,
}

const fn p(name: &'static str, default: &'static str, kind: Kind, meaning: &'static str) -> Param {
    Param {
        name,
        default,
        kind,
        meaning,
    }
}

use Kind::*;

/// Every parameter ferrocondor reads, sorted by uppercase name.
pub static PARAMS: &[Param] = &[
    p(
        "CONTINUE",
        "True",
        Expression,
        "When a suspended job resumes (startd policy).",
    ),
    p(
        "KILL",
        "False",
        Expression,
        "When a vacating job is killed at once (startd policy).",
    ),
    p(
        "PREEMPT",
        "False",
        Expression,
        "When a running job is evicted (startd policy).",
    ),
    p(
        "START",
        "True",
        Expression,
        "When the machine is willing to start a job (startd policy).",
    ),
    p(
        "SUSPEND",
        "False",
        Expression,
        "When a running job is suspended (startd policy).",
    ),
];

/// Defaults that hold only for one daemon subsystem (HTCondor's table writes
/// them `SUBSYS.NAME`): `(subsystem, name, default)`.
pub static SUBSYSTEM_DEFAULTS: &[(&str, &str, &str)] = &[];

/// The table entry for `name`, compared case-insensitively.
pub fn lookup(name: &str) -> Option<&'static Param> {
    PARAMS
        .binary_search_by(|p| cmp_upper(p.name, name))
        .ok()
        .map(|i| &PARAMS[i])
}

/// The default of `name` for `subsystem`: a subsystem-only default first,
/// then the general one. `None` when there is no default (or it is empty).
pub fn default_for(name: &str, subsystem: &str) -> Option<&'static str> {
    SUBSYSTEM_DEFAULTS
        .iter()
        .find(|(s, n, _)| s.eq_ignore_ascii_case(subsystem) && n.eq_ignore_ascii_case(name))
        .map(|(_, _, d)| *d)
        .or_else(|| lookup(name).map(|p| p.default))
        .filter(|d| !d.is_empty())
}

fn cmp_upper(a: &str, b: &str) -> std::cmp::Ordering {
    a.bytes()
        .map(|c| c.to_ascii_uppercase())
        .cmp(b.bytes().map(|c| c.to_ascii_uppercase()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_sorted_and_names_are_unique() {
        for w in PARAMS.windows(2) {
            assert_eq!(
                cmp_upper(w[0].name, w[1].name),
                std::cmp::Ordering::Less,
                "{} must come before {} (sorted by uppercase name, no duplicates)",
                w[0].name,
                w[1].name
            );
        }
    }

    #[test]
    fn every_entry_says_what_it_does() {
        for p in PARAMS {
            assert!(!p.meaning.trim().is_empty(), "{} has no meaning", p.name);
        }
    }

    #[test]
    fn lookup_ignores_case() {
        assert_eq!(lookup("start").map(|p| p.name), Some("START"));
        assert!(lookup("NO_SUCH_KNOB").is_none());
    }
}
