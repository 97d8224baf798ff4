//! Concurrency limits: pool-wide caps on jobs that use a shared resource
//! (licenses, a database, a file server), as HTCondor's negotiator keeps
//! them.
//!
//! A job names what it uses in its `ConcurrencyLimits` attribute:
//! `"xsw,database:2,large.swlicense"` (submit's `concurrency_limits`), or an
//! expression that yields such a string (submit's `concurrency_limits_expr`
//! puts the expression itself there), evaluated with MY = the job and
//! TARGET = the candidate slot. Each name costs one unit, or `NAME:units`.
//! The administrator gives capacities: `<NAME>_LIMIT`, else
//! `CONCURRENCY_LIMIT_DEFAULT_<SET>` for a name `SET.member`, else
//! `CONCURRENCY_LIMIT_DEFAULT`. Names are case-insensitive (kept lowercase,
//! as HTCondor does).
//!
//! What is in use is counted from the slot ads (the running job's
//! `ConcurrencyLimits`, and `PreemptingConcurrencyLimits` of a job waiting
//! for a retiring one), then each match a cycle makes is taken at once
//! ([`ConcurrencyLimits::try_take`]), so one cycle can never push a limit
//! past its capacity. Semantics from the manual's "Concurrency Limits" and
//! HTCondor's `Accountant::GetLimitMax` and `ParseConcurrencyLimit`.

use std::collections::BTreeMap;
use std::fmt;

use classad::{AttrName, ClassAd, Env, Value};
use config::{Config, ParamError};

/// HTCondor's built-in `CONCURRENCY_LIMIT_DEFAULT`.
pub const DEFAULT_LIMIT: f64 = 2308032.0;

/// One limit a job asks for: a lowercase name and how many units.
#[derive(Clone, Debug, PartialEq)]
pub struct LimitRequest {
    pub name: String,
    pub units: f64,
}

/// Why a job may not start on a slot: taking `units` more of `limit` would
/// go past `max` with `in_use` already taken.
#[derive(Clone, Debug, PartialEq)]
pub struct LimitExceeded {
    pub limit: String,
    pub in_use: f64,
    pub units: f64,
    pub max: f64,
}

impl fmt::Display for LimitExceeded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "concurrency limit {} reached ({} of {} in use, job needs {})",
            self.limit, self.in_use, self.max, self.units
        )
    }
}

impl std::error::Error for LimitExceeded {}

/// The capacities, read from the configuration once.
#[derive(Clone, Debug, PartialEq)]
pub struct LimitConfig {
    /// `CONCURRENCY_LIMIT_DEFAULT`.
    pub default: f64,
    /// `<NAME>_LIMIT`, by lowercase name.
    pub named: BTreeMap<String, f64>,
    /// `CONCURRENCY_LIMIT_DEFAULT_<SET>`, by lowercase set name.
    pub set_defaults: BTreeMap<String, f64>,
}

impl Default for LimitConfig {
    fn default() -> LimitConfig {
        LimitConfig {
            default: DEFAULT_LIMIT,
            named: BTreeMap::new(),
            set_defaults: BTreeMap::new(),
        }
    }
}

const SET_DEFAULT_PREFIX: &str = "CONCURRENCY_LIMIT_DEFAULT_";
const LIMIT_SUFFIX: &str = "_LIMIT";

impl LimitConfig {
    /// Reads `CONCURRENCY_LIMIT_DEFAULT` and every `<NAME>_LIMIT` and
    /// `CONCURRENCY_LIMIT_DEFAULT_<SET>` the configuration defines (limit
    /// names are invented by the admin, so they are found by scanning the
    /// definitions; a `NEGOTIATOR.` or local-name prefix is looked through).
    pub fn from_config(config: &Config) -> Result<LimitConfig, ParamError> {
        let mut out = LimitConfig {
            default: config
                .real("CONCURRENCY_LIMIT_DEFAULT")?
                .unwrap_or(DEFAULT_LIMIT),
            ..LimitConfig::default()
        };
        let subsystem = format!("{}.", config.subsystem().to_ascii_uppercase());
        let mut names: Vec<String> = Vec::new();
        for def in config.defined() {
            let upper = def.name.to_ascii_uppercase();
            names.push(upper.clone());
            if let Some(rest) = upper.strip_prefix(&subsystem) {
                names.push(rest.to_string());
            }
        }
        names.sort();
        names.dedup();
        for name in names {
            if let Some(set) = name.strip_prefix(SET_DEFAULT_PREFIX) {
                if let Some(v) = config.real(&name)? {
                    out.set_defaults.insert(set.to_ascii_lowercase(), v);
                }
            } else if let Some(limit) = name.strip_suffix(LIMIT_SUFFIX) {
                if limit.is_empty() || name == "CONCURRENCY_LIMIT_DEFAULT" {
                    continue;
                }
                // Other knobs end in _LIMIT too (CGROUP_MEMORY_LIMIT ...);
                // they are harmless here: a job would have to name them.
                if let Ok(Some(v)) = config.real(&name) {
                    out.named.insert(limit.to_ascii_lowercase(), v);
                }
            }
        }
        Ok(out)
    }

    /// The capacity of `limit` (lowercase): its own `_LIMIT`, else its
    /// set's default (the set is everything before the last `.`), else
    /// `CONCURRENCY_LIMIT_DEFAULT`.
    pub fn max_for(&self, limit: &str) -> f64 {
        if let Some(v) = self.named.get(limit) {
            return *v;
        }
        if let Some(dot) = limit.rfind('.') {
            if let Some(v) = self.set_defaults.get(&limit[..dot]) {
                return *v;
            }
        }
        self.default
    }
}

/// Is `s` a ClassAd attribute name (HTCondor's `IsValidAttrName`)?
fn valid_name(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Parses a limits string (`"xsw, database:2 large.swlicense"`): items
/// separated by commas and blanks, names lowercased, units after `:`
/// (missing, unreadable or not positive means 1), invalid names ignored
/// as HTCondor ignores them. A name given twice asks for the sum.
pub fn parse_limits(text: &str) -> Vec<LimitRequest> {
    let mut out: Vec<LimitRequest> = Vec::new();
    for item in text
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|s| !s.is_empty())
    {
        let (name, units) = match item.split_once(':') {
            Some((n, u)) => (n, leading_number(u)),
            None => (item, 1.0),
        };
        let units = if units > 0.0 { units } else { 1.0 };
        let valid = match name.split_once('.') {
            Some((set, member)) => valid_name(set) && valid_name(member),
            None => valid_name(name),
        };
        if !valid {
            continue;
        }
        let name = name.to_ascii_lowercase();
        match out.iter_mut().find(|r| r.name == name) {
            Some(r) => r.units += units,
            None => out.push(LimitRequest { name, units }),
        }
    }
    out
}

/// The number at the start of `s`, as C's `strtod` reads it (0 if none).
fn leading_number(s: &str) -> f64 {
    let s = s.trim_start();
    (1..=s.len())
        .rev()
        .filter(|&i| s.is_char_boundary(i))
        .find_map(|i| s[..i].parse::<f64>().ok())
        .filter(|v| v.is_finite())
        .unwrap_or(0.0)
}

/// The limits a job asks for on a candidate slot: its `ConcurrencyLimits`
/// evaluated with MY = job, TARGET = slot. Anything but a string (the
/// attribute missing, or an expression that is undefined on this slot)
/// asks for nothing, as in HTCondor.
pub fn job_limits(job: &ClassAd, slot: &ClassAd, env: &Env) -> Vec<LimitRequest> {
    // Made once: asked of every job on a claim before every cycle.
    static NAME: std::sync::OnceLock<AttrName> = std::sync::OnceLock::new();
    let name = NAME.get_or_init(|| AttrName::new("ConcurrencyLimits"));
    if job.lookup_name(name).is_none() {
        return Vec::new();
    }
    match classad::eval::eval_attr(job, Some(slot), "ConcurrencyLimits", env) {
        Value::Str(s) => parse_limits(&s),
        _ => Vec::new(),
    }
}

/// Capacities and what is in use: the negotiator's view for one cycle.
#[derive(Clone, Debug, PartialEq)]
pub struct ConcurrencyLimits {
    pub config: LimitConfig,
    in_use: BTreeMap<String, f64>,
}

impl ConcurrencyLimits {
    pub fn new(config: LimitConfig) -> ConcurrencyLimits {
        ConcurrencyLimits {
            config,
            in_use: BTreeMap::new(),
        }
    }

    pub fn from_config(config: &Config) -> Result<ConcurrencyLimits, ParamError> {
        Ok(ConcurrencyLimits::new(LimitConfig::from_config(config)?))
    }

    /// Forgets what was in use and counts it again from the slot ads, as
    /// HTCondor's `LoadLimits` does at the start of a cycle.
    pub fn load_slots<'a>(&mut self, slots: impl IntoIterator<Item = &'a ClassAd>) {
        self.in_use.clear();
        for slot in slots {
            self.count_slot(slot);
        }
    }

    /// Adds what one slot's running (and preempting) job holds.
    pub fn count_slot(&mut self, slot: &ClassAd) {
        let env = Env::default();
        for attr in ["ConcurrencyLimits", "PreemptingConcurrencyLimits"] {
            if let Value::Str(s) = slot.eval_attr(attr, &env) {
                let requests = parse_limits(&s);
                self.take(&requests);
            }
        }
    }

    /// Units of `limit` (any case) in use.
    pub fn in_use(&self, limit: &str) -> f64 {
        self.in_use
            .get(&limit.to_ascii_lowercase())
            .copied()
            .unwrap_or(0.0)
    }

    /// The capacity of `limit` (any case).
    pub fn max(&self, limit: &str) -> f64 {
        self.config.max_for(&limit.to_ascii_lowercase())
    }

    /// Whether `requests` fit: every limit's use plus the request stays
    /// within its capacity (HTCondor rejects when `count + units > max`).
    pub fn check(&self, requests: &[LimitRequest]) -> Result<(), LimitExceeded> {
        for r in requests {
            let in_use = self.in_use.get(&r.name).copied().unwrap_or(0.0);
            let max = self.config.max_for(&r.name);
            if in_use + r.units > max {
                return Err(LimitExceeded {
                    limit: r.name.clone(),
                    in_use,
                    units: r.units,
                    max,
                });
            }
        }
        Ok(())
    }

    /// Whether `job` may start on `slot` as far as concurrency limits go.
    pub fn fits(&self, job: &ClassAd, slot: &ClassAd, env: &Env) -> Result<(), LimitExceeded> {
        self.check(&job_limits(job, slot, env))
    }

    /// Counts `requests` as in use (a match made, or a running job).
    pub fn take(&mut self, requests: &[LimitRequest]) {
        for r in requests {
            *self.in_use.entry(r.name.clone()).or_insert(0.0) += r.units;
        }
    }

    /// Gives `requests` back (a match the schedd refused).
    pub fn release(&mut self, requests: &[LimitRequest]) {
        for r in requests {
            if let Some(v) = self.in_use.get_mut(&r.name) {
                *v = (*v - r.units).max(0.0);
            }
        }
    }

    /// Checks and, if the job fits, takes its limits at once; returns what
    /// was taken (for [`ConcurrencyLimits::release`], and for the slot's
    /// `MatchedConcurrencyLimits`).
    pub fn try_take(
        &mut self,
        job: &ClassAd,
        slot: &ClassAd,
        env: &Env,
    ) -> Result<Vec<LimitRequest>, LimitExceeded> {
        let requests = job_limits(job, slot, env);
        self.check(&requests)?;
        self.take(&requests);
        Ok(requests)
    }

    /// `ConcurrencyLimit_<name>` attributes with the units in use, as the
    /// negotiator reports them (a `.` in a name becomes `_`).
    pub fn report(&self) -> Vec<(String, f64)> {
        self.in_use
            .iter()
            .map(|(n, v)| (format!("ConcurrencyLimit_{}", n.replace('.', "_")), *v))
            .collect()
    }
}

/// The text of `requests` as a limits string (`"database:2,xsw"`), for
/// the slot's `MatchedConcurrencyLimits`.
pub fn limits_text(requests: &[LimitRequest]) -> String {
    requests
        .iter()
        .map(|r| {
            if r.units == 1.0 {
                r.name.clone()
            } else {
                format!("{}:{}", r.name, r.units)
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// The concurrency limits as one negotiation cycle sees them: evaluated
/// at the cycle's `now` (a job's limits may be an expression over the
/// machine), taken as matches are made so the cycle never exceeds one.
pub struct CycleLimits<'a> {
    pub limits: &'a mut ConcurrencyLimits,
    pub env: Env,
}

impl<'a> CycleLimits<'a> {
    pub fn new(limits: &'a mut ConcurrencyLimits, now: i64) -> CycleLimits<'a> {
        CycleLimits {
            limits,
            env: Env::at(now),
        }
    }
}

impl crate::cycle::Limits for CycleLimits<'_> {
    fn fits(&self, job: &ClassAd, machine: &ClassAd) -> bool {
        self.limits.fits(job, machine, &self.env).is_ok()
    }

    fn take(&mut self, job: &ClassAd, machine: &ClassAd) {
        let requests = job_limits(job, machine, &self.env);
        self.limits.take(&requests);
    }

    fn exceeded(&self, job: &ClassAd, machine: &ClassAd) -> Vec<String> {
        match self.limits.fits(job, machine, &self.env) {
            Ok(()) => Vec::new(),
            Err(e) => vec![e.limit],
        }
    }
}
