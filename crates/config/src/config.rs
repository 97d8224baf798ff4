//! A loaded configuration: every definition with where it came from, and
//! lookups that expand macros the way HTCondor does at the moment a value
//! is asked for.

use std::collections::{BTreeMap, HashMap};
use std::fmt;

use crate::error::Warning;
use crate::expand::{self, ExpandError, Resolve};
use crate::params;

/// Where a definition came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    /// A line of a configuration file.
    File { path: String, line: u32 },
    /// A `use CATEGORY : Template` statement at `path:line` (the outermost
    /// one in a real file, when templates use other templates).
    Template {
        template: String,
        path: String,
        line: u32,
    },
    /// Read from the host before any file (`DETECTED_CORES`, `ARCH`, ...).
    Host,
    /// Set by the program for the daemon reading it (`SUBSYSTEM`,
    /// `LOCALNAME`).
    Builtin,
    /// An environment variable `_CONDOR_NAME` (or `_FERROCONDOR_NAME`).
    Environment { variable: String },
    /// HTCondor's built-in default (the parameter table).
    Default,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::File { path, line } => write!(f, "{path}, line {line}"),
            Origin::Template {
                template,
                path,
                line,
            } => write!(f, "use {template}, at {path}, line {line}"),
            Origin::Host => f.write_str("<detected from the host>"),
            Origin::Builtin => f.write_str("<set for this daemon>"),
            Origin::Environment { variable } => write!(f, "environment variable {variable}"),
            Origin::Default => f.write_str("<Default>"),
        }
    }
}

/// One definition of a parameter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Definition {
    /// The name as written in this definition (prefix included:
    /// `STARTD.START`).
    pub name: String,
    /// The value as written, after self-references were resolved (the only
    /// expansion done when a line is read).
    pub raw: String,
    pub origin: Origin,
}

/// A definition found by a lookup, and under which name (the prefixed one,
/// `STARTD.START`, or the plain one).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found<'c> {
    pub name: String,
    pub raw: &'c str,
    pub origin: Origin,
}

/// The whole configuration as one daemon (or tool) sees it.
#[derive(Clone, Debug, Default)]
pub struct Config {
    /// Every definition, by uppercase name, oldest first; the last is the
    /// one in force.
    pub(crate) entries: HashMap<String, Vec<Definition>>,
    pub(crate) subsystem: String,
    pub(crate) local_name: Option<String>,
    pub(crate) env: BTreeMap<String, String>,
    pub(crate) seed: u64,
    pub(crate) warnings: Vec<Warning>,
    pub(crate) files: Vec<String>,
}

impl Config {
    /// An empty configuration for `subsystem` (only defaults apply).
    pub fn empty(subsystem: &str) -> Config {
        let mut c = Config {
            subsystem: subsystem.to_ascii_uppercase(),
            ..Config::default()
        };
        c.define_builtin();
        c
    }

    pub(crate) fn define_builtin(&mut self) {
        let sub = self.subsystem.clone();
        let local = self.local_name.clone().unwrap_or_else(|| sub.clone());
        self.define("SUBSYSTEM", sub, Origin::Builtin);
        self.define("LOCALNAME", local, Origin::Builtin);
    }

    pub(crate) fn define(&mut self, name: &str, raw: String, origin: Origin) {
        self.entries
            .entry(name.to_ascii_uppercase())
            .or_default()
            .push(Definition {
                name: name.to_string(),
                raw,
                origin,
            });
    }

    /// The daemon subsystem this configuration was read for (`STARTD`,
    /// `TOOL`, ...).
    pub fn subsystem(&self) -> &str {
        &self.subsystem
    }

    /// The daemon's local name (`-local-name`), else its subsystem: what
    /// `$(LOCALNAME)` is.
    pub fn local_name(&self) -> &str {
        self.local_name.as_deref().unwrap_or(&self.subsystem)
    }

    /// Warnings met while reading (`warning :` statements, obsolete forms).
    pub fn warnings(&self) -> &[Warning] {
        &self.warnings
    }

    /// The files read, in order.
    pub fn files(&self) -> &[String] {
        &self.files
    }

    /// The definition in force for exactly this name (no prefixes, no
    /// defaults).
    pub fn exact(&self, name: &str) -> Option<&Definition> {
        self.entries
            .get(&name.to_ascii_uppercase())
            .and_then(|defs| defs.last())
    }

    /// Every definition of exactly this name, oldest first (for
    /// `config_val -verbose`: where it was defined and overridden).
    pub fn history(&self, name: &str) -> &[Definition] {
        self.entries
            .get(&name.to_ascii_uppercase())
            .map_or(&[], Vec::as_slice)
    }

    /// The names this lookup tries, most specific first:
    /// `LOCALNAME.NAME`, `SUBSYSTEM.NAME`, `NAME`.
    fn candidates(&self, name: &str) -> Vec<String> {
        let mut out = Vec::with_capacity(3);
        if let Some(local) = &self.local_name {
            out.push(format!("{local}.{name}"));
        }
        if !self.subsystem.is_empty() {
            out.push(format!("{}.{name}", self.subsystem));
        }
        out.push(name.to_string());
        out
    }

    /// The definition a lookup of `name` finds: a prefixed one first, then
    /// the plain one, then HTCondor's default. An empty definition counts
    /// (it hides the default and the plainer names), as in HTCondor.
    pub fn find(&self, name: &str) -> Option<Found<'_>> {
        for candidate in self.candidates(name) {
            if let Some(def) = self.exact(&candidate) {
                return Some(Found {
                    name: def.name.clone(),
                    raw: &def.raw,
                    origin: def.origin.clone(),
                });
            }
        }
        params::default_for(name, &self.subsystem).map(|d| Found {
            name: name.to_string(),
            raw: d,
            origin: Origin::Default,
        })
    }

    /// Whether `name` has a non-empty value (`if defined NAME`).
    pub fn is_defined(&self, name: &str) -> bool {
        self.find(name).is_some_and(|f| !f.raw.is_empty())
    }

    /// The unexpanded value of `name` (`config_val -raw`).
    pub fn raw(&self, name: &str) -> Option<&str> {
        self.find(name).map(|f| f.raw).filter(|r| !r.is_empty())
    }

    /// The value of `name`, fully expanded; `None` when it is undefined or
    /// expands to nothing (HTCondor does not tell those apart).
    pub fn get(&self, name: &str) -> Result<Option<String>, LookupError> {
        let Some(raw) = self.raw(name) else {
            return Ok(None);
        };
        self.expand(raw)
            .map(|v| Some(v).filter(|v| !v.is_empty()))
            .map_err(|e| self.lookup_error(name, e))
    }

    /// Expands macros in any text against this configuration.
    pub fn expand(&self, text: &str) -> Result<String, ExpandError> {
        expand::expand(text, self)
    }

    fn lookup_error(&self, name: &str, e: ExpandError) -> LookupError {
        let cycle = if e.cycle.is_empty() {
            expand::find_cycle(name, self)
        } else {
            e.cycle
        };
        LookupError {
            name: name.to_string(),
            origin: self.find(name).map(|f| Box::new(f.origin)),
            error: ExpandError { cycle },
        }
    }

    /// Every name defined by the configuration (not the defaults), in
    /// case-insensitive order, with the definition in force.
    pub fn defined(&self) -> Vec<&Definition> {
        let mut v: Vec<&Definition> = self.entries.values().filter_map(|d| d.last()).collect();
        v.sort_by_key(|d| d.name.to_ascii_uppercase());
        v
    }

    /// The value for slot `slot` (of slot type `slot_type`, if any): the
    /// startd asks `SLOT<N>_NAME`, then `SLOT_TYPE_<T>_NAME`, then `NAME`.
    pub fn get_for_slot(
        &self,
        slot: u32,
        slot_type: Option<u32>,
        name: &str,
    ) -> Result<Option<String>, LookupError> {
        let by_slot = format!("SLOT{slot}_{name}");
        if self.find(&by_slot).is_some() {
            return self.get(&by_slot);
        }
        if let Some(t) = slot_type {
            let by_type = format!("SLOT_TYPE_{t}_{name}");
            if self.find(&by_type).is_some() {
                return self.get(&by_type);
            }
        }
        self.get(name)
    }
}

impl Resolve for Config {
    fn raw(&self, name: &str) -> Option<String> {
        self.find(name).map(|f| f.raw.to_string())
    }

    fn env(&self, name: &str) -> Option<String> {
        self.env.get(name).cloned()
    }

    fn random(&self, salt: &str) -> u64 {
        mix(self.seed ^ hash(salt))
    }
}

/// A stable hash (FNV-1a), so `$RANDOM_*` depend only on the seed and the
/// text, never on the process.
pub(crate) fn hash(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

/// splitmix64's finaliser: spreads the bits of a seed.
pub(crate) fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A value that could not be expanded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LookupError {
    pub name: String,
    pub origin: Option<Box<Origin>>,
    pub error: ExpandError,
}

impl fmt::Display for LookupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.name)?;
        if let Some(o) = &self.origin {
            write!(f, " ({o})")?;
        }
        write!(f, ": {}", self.error)
    }
}

impl std::error::Error for LookupError {}
