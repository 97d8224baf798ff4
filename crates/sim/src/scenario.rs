//! The scenario: what pool to simulate, what its owners and users do, for
//! how long, read from JSON (the format is documented in the crate docs and
//! in `crates/sim/scenarios/README.md`).
//!
//! Reading is strict: an unknown key or a value of the wrong type is an
//! error that names where it is (`jobs[2].runtime`), so a typo never
//! silently simulates something else.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

/// Why a scenario could not be read or run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimError(pub String);

impl std::fmt::Display for SimError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SimError {}

fn err<T>(at: &str, what: impl std::fmt::Display) -> Result<T, SimError> {
    Err(SimError(format!("scenario: {at}: {what}")))
}

/// The default start of simulated time (2023-11-14 22:13:20 UTC).
pub const DEFAULT_START: i64 = 1_700_000_000;

/// A piece of configuration: a file (read through [`crate::Files`], as an
/// `include :` line would) or text written in the scenario.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    File(String),
    Text(String),
}

/// A class of identical machines.
#[derive(Clone, Debug, PartialEq)]
pub struct MachineClass {
    pub name: String,
    pub count: u32,
    /// Cores, memory (MiB) and disk (KiB) of each machine, as the host
    /// would detect them (the configuration may divide them differently).
    pub cpus: u32,
    pub memory: i64,
    pub disk: i64,
    /// The class's configuration, after the pool's.
    pub config: Vec<Source>,
    /// Host names: `{n}` is replaced by the machine's number (1-based);
    /// without `{n}` and with more than one machine, the number is
    /// appended. Default: the class name.
    pub hostname: String,
}

/// A schedd (an access point) and its own configuration, after the pool's.
#[derive(Clone, Debug, PartialEq)]
pub struct ScheddSpec {
    pub name: String,
    pub config: Vec<Source>,
}

/// What the owner of some machines does.
#[derive(Clone, Debug, PartialEq)]
pub enum Activity {
    /// From `from` to `to` (seconds after the start), the owner is at the
    /// keyboard (`keyboard`) and/or runs programs adding `load` to the
    /// machine's load average.
    Interval {
        from: i64,
        to: i64,
        keyboard: bool,
        load: f64,
    },
    /// Alternating busy and idle periods, exponentially distributed with
    /// these means (seconds), drawn from the scenario's seed; busy means
    /// typing with `load` added.
    Random {
        busy_mean: f64,
        idle_mean: f64,
        load: f64,
    },
}

/// Owner activity for the machines of a class, or one machine by host name.
#[derive(Clone, Debug, PartialEq)]
pub struct OwnerSpec {
    pub machines: String,
    pub activity: Activity,
}

/// How long a job runs once started (seconds of CPU while not suspended).
#[derive(Clone, Debug, PartialEq)]
pub enum Dist {
    Fixed(i64),
    Uniform(i64, i64),
    Exponential(f64),
}

/// Submissions of one submit description by one user.
#[derive(Clone, Debug, PartialEq)]
pub struct JobSpec {
    pub user: String,
    /// The schedd it is submitted to (default: the first).
    pub schedd: Option<String>,
    /// The submit description; `None`: a vanilla job, `queue 1`.
    pub submit: Option<Source>,
    /// Lines given as `condor_submit -a` (before the first `queue`).
    pub append: Vec<String>,
    /// When each submission happens (seconds after the start).
    pub arrivals: Vec<i64>,
    pub runtime: Dist,
    pub exit_code: i64,
    /// The job does not exit when asked to (its soft kill signal): only
    /// the startd's KILL ends it (HTCondor's Vacating then Killing).
    pub ignores_soft_kill: bool,
}

/// How the startd treats running jobs when draining (`condor_drain`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DrainSpeed {
    Graceful,
    Quick,
    Fast,
}

/// A command an administrator gives the startds of some machines.
#[derive(Clone, Debug, PartialEq)]
pub enum AdminCommand {
    /// `condor_vacate` (one slot, or every slot); `fast` kills.
    Vacate { slot: Option<String>, fast: bool },
    /// `condor_drain`.
    Drain { how: DrainSpeed },
    /// `condor_drain -cancel`.
    CancelDrain,
}

/// A command at a time, for the machines of a class or one machine.
#[derive(Clone, Debug, PartialEq)]
pub struct CommandSpec {
    pub at: i64,
    pub machines: String,
    pub command: AdminCommand,
}

/// Work the job hooks' FETCH_WORK hands the startds of some machines:
/// each time one asks, the next of `jobs` (a job ad, and how long it
/// runs), until none is left.
#[derive(Clone, Debug, PartialEq)]
pub struct FetchSpec {
    pub machines: String,
    pub jobs: Vec<(String, i64)>,
}

/// The messages between the schedds and the startds that may be lost.
pub const MESSAGE_KINDS: [&str; 6] = [
    "match_info",
    "request_claim",
    "activate_claim",
    "alive",
    "release_claim",
    "claim_news",
];

/// The network between schedds and startds: each claim message takes a
/// delay drawn from `delay` (seconds, so messages may overtake each
/// other), and is lost with probability `drop`; `lose` loses the first N
/// messages of a kind, whatever `drop` says.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Network {
    pub delay: (i64, i64),
    pub drop: f64,
    pub lose: BTreeMap<String, u64>,
}

/// A whole scenario.
#[derive(Clone, Debug, PartialEq)]
pub struct Scenario {
    pub seed: u64,
    /// Simulated epoch seconds at the start, and how long to run.
    pub start: i64,
    pub duration: i64,
    /// Relative file names are taken from here (the scenario's directory).
    pub base_dir: String,
    /// Every daemon's configuration, first (HTCondor's global file).
    pub config: Vec<Source>,
    /// The central manager's own additions.
    pub negotiator_config: Vec<Source>,
    pub classes: Vec<MachineClass>,
    pub schedds: Vec<ScheddSpec>,
    pub owners: Vec<OwnerSpec>,
    pub jobs: Vec<JobSpec>,
    /// Interval overrides by HTCondor name (NEGOTIATOR_INTERVAL,
    /// POLLING_INTERVAL, UPDATE_INTERVAL, PERIODIC_EXPR_INTERVAL,
    /// SCHEDD_INTERVAL, ALIVE_INTERVAL); the rest come from configuration.
    pub intervals: BTreeMap<String, i64>,
    /// `condor_userprio -setfactor`, by submitter name.
    pub priority_factors: Vec<(String, f64)>,
    /// How long the owners had left their keyboards alone when the
    /// simulation starts.
    pub initial_idle: i64,
    /// Seconds between samples for the report's charts (default: about
    /// 200 samples over the run).
    pub sample_interval: Option<i64>,
    /// Administrators' commands at given times.
    pub commands: Vec<CommandSpec>,
    /// A network that delays and loses claim messages (default: none,
    /// every message at once).
    pub network: Option<Network>,
    /// Scripted replies of the job hooks' FETCH_WORK.
    pub fetch_work: Vec<FetchSpec>,
    /// The central manager runs condor_defrag: its configuration's
    /// additions (read after `config` and `negotiator_config`); `None`:
    /// no defrag daemon.
    pub defrag: Option<Vec<Source>>,
}

pub const INTERVAL_NAMES: [&str; 7] = [
    "NEGOTIATOR_INTERVAL",
    "DEFRAG_INTERVAL",
    "POLLING_INTERVAL",
    "UPDATE_INTERVAL",
    "PERIODIC_EXPR_INTERVAL",
    "SCHEDD_INTERVAL",
    "ALIVE_INTERVAL",
];

struct Obj<'a> {
    at: String,
    map: &'a Map<String, Value>,
}

impl<'a> Obj<'a> {
    fn new(at: &str, v: &'a Value, known: &[&str]) -> Result<Obj<'a>, SimError> {
        let Some(map) = v.as_object() else {
            return err(at, "expected an object");
        };
        for k in map.keys() {
            if !known.contains(&k.as_str()) {
                return err(
                    at,
                    format!("unknown key `{k}` (known: {})", known.join(", ")),
                );
            }
        }
        Ok(Obj {
            at: at.to_string(),
            map,
        })
    }
    fn at(&self, key: &str) -> String {
        if self.at.is_empty() {
            key.to_string()
        } else {
            format!("{}.{key}", self.at)
        }
    }
    fn get(&self, key: &str) -> Option<&'a Value> {
        self.map.get(key)
    }
    fn int(&self, key: &str, default: Option<i64>) -> Result<i64, SimError> {
        match self.get(key) {
            None => match default {
                Some(d) => Ok(d),
                None => err(&self.at(key), "missing"),
            },
            Some(v) => int(&self.at(key), v),
        }
    }
    fn real(&self, key: &str, default: f64) -> Result<f64, SimError> {
        match self.get(key) {
            None => Ok(default),
            Some(v) => v
                .as_f64()
                .map_or_else(|| err(&self.at(key), "expected a number"), Ok),
        }
    }
    fn boolean(&self, key: &str, default: bool) -> Result<bool, SimError> {
        match self.get(key) {
            None => Ok(default),
            Some(Value::Bool(b)) => Ok(*b),
            Some(_) => err(&self.at(key), "expected true or false"),
        }
    }
    fn string(&self, key: &str) -> Result<Option<String>, SimError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => err(&self.at(key), "expected a string"),
        }
    }
    fn sources(&self, key: &str) -> Result<Vec<Source>, SimError> {
        match self.get(key) {
            None => Ok(Vec::new()),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, v)| source(&format!("{}[{i}]", self.at(key)), v, false))
                .collect(),
            Some(v) => Ok(vec![source(&self.at(key), v, false)?]),
        }
    }
}

fn int(at: &str, v: &Value) -> Result<i64, SimError> {
    match v.as_i64() {
        Some(i) => Ok(i),
        None => match v.as_f64() {
            Some(f) if f.fract() == 0.0 => Ok(f as i64),
            _ => err(at, "expected an integer"),
        },
    }
}

/// A file or text: `{"file": PATH}`, `{"text": TEXT}`, or a bare string,
/// which is a file in configuration lists and text for a submit
/// description (`bare_is_text`).
fn source(at: &str, v: &Value, bare_is_text: bool) -> Result<Source, SimError> {
    match v {
        Value::String(s) if bare_is_text => Ok(Source::Text(s.clone())),
        Value::String(s) => Ok(Source::File(s.clone())),
        Value::Object(_) => {
            let o = Obj::new(at, v, &["file", "text"])?;
            match (o.string("file")?, o.string("text")?) {
                (Some(f), None) => Ok(Source::File(f)),
                (None, Some(t)) => Ok(Source::Text(t)),
                _ => err(at, "give exactly one of `file` and `text`"),
            }
        }
        _ => err(
            at,
            "expected a file name or {\"file\": ...} or {\"text\": ...}",
        ),
    }
}

fn array<'a>(at: &str, v: Option<&'a Value>) -> Result<&'a [Value], SimError> {
    match v {
        None => Ok(&[]),
        Some(Value::Array(a)) => Ok(a),
        Some(_) => err(at, "expected an array"),
    }
}

fn dist(at: &str, v: Option<&Value>) -> Result<Dist, SimError> {
    let Some(v) = v else {
        return Ok(Dist::Fixed(3600));
    };
    if v.is_number() {
        return Ok(Dist::Fixed(int(at, v)?.max(1)));
    }
    let o = Obj::new(at, v, &["uniform", "exponential"])?;
    if let Some(u) = o.get("uniform") {
        let a = array(&o.at("uniform"), Some(u))?;
        if a.len() != 2 {
            return err(&o.at("uniform"), "expected [low, high]");
        }
        let (lo, hi) = (int(at, &a[0])?, int(at, &a[1])?);
        if lo < 1 || hi < lo {
            return err(&o.at("uniform"), "expected 1 <= low <= high");
        }
        return Ok(Dist::Uniform(lo, hi));
    }
    if o.get("exponential").is_some() {
        let mean = o.real("exponential", 0.0)?;
        if mean <= 0.0 {
            return err(&o.at("exponential"), "the mean must be positive");
        }
        return Ok(Dist::Exponential(mean));
    }
    err(
        at,
        "expected seconds, {\"uniform\": [lo, hi]} or {\"exponential\": mean}",
    )
}

impl Dist {
    pub fn draw(&self, rng: &mut crate::rng::SplitMix64) -> i64 {
        match *self {
            Dist::Fixed(s) => s,
            Dist::Uniform(lo, hi) => rng.range(lo, hi),
            Dist::Exponential(mean) => rng.exponential(mean),
        }
    }
}

impl Scenario {
    /// Reads a scenario from its JSON text.
    pub fn from_json(text: &str) -> Result<Scenario, SimError> {
        let v: Value =
            serde_json::from_str(text).map_err(|e| SimError(format!("scenario: not JSON: {e}")))?;
        Scenario::from_value(&v)
    }

    pub fn from_value(v: &Value) -> Result<Scenario, SimError> {
        let o = Obj::new(
            "",
            v,
            &[
                "description",
                "seed",
                "start",
                "duration",
                "base_dir",
                "config",
                "negotiator_config",
                "machines",
                "schedds",
                "owners",
                "jobs",
                "intervals",
                "priority_factors",
                "initial_idle",
                "sample_interval",
                "commands",
                "network",
                "fetch_work",
                "defrag",
            ],
        )?;
        let seed = match o.get("seed") {
            None => 0,
            Some(v) => v
                .as_u64()
                .map_or_else(|| err("seed", "expected a non-negative integer"), Ok)?,
        };
        let duration = o.int("duration", None)?;
        if duration <= 0 {
            return err("duration", "must be positive");
        }
        let mut classes = Vec::new();
        for (i, m) in array("machines", o.get("machines"))?.iter().enumerate() {
            let at = format!("machines[{i}]");
            let c = Obj::new(
                &at,
                m,
                &[
                    "class", "count", "cpus", "memory", "disk", "config", "hostname",
                ],
            )?;
            let name = c
                .string("class")?
                .map_or_else(|| err(&c.at("class"), "missing"), Ok)?;
            let cpus = c.int("cpus", Some(1))?;
            let count = c.int("count", Some(1))?;
            if cpus < 1 || count < 0 {
                return err(&at, "cpus must be at least 1 and count not negative");
            }
            classes.push(MachineClass {
                hostname: c.string("hostname")?.unwrap_or_else(|| name.clone()),
                name,
                count: count as u32,
                cpus: cpus as u32,
                memory: c.int("memory", Some(1024 * cpus))?,
                disk: c.int("disk", Some(10_000_000))?,
                config: c.sources("config")?,
            });
        }
        if classes.is_empty() {
            return err("machines", "at least one class of machines is needed");
        }
        let mut schedds = Vec::new();
        for (i, s) in array("schedds", o.get("schedds"))?.iter().enumerate() {
            let c = Obj::new(&format!("schedds[{i}]"), s, &["name", "config"])?;
            schedds.push(ScheddSpec {
                name: c
                    .string("name")?
                    .map_or_else(|| err(&c.at("name"), "missing"), Ok)?,
                config: c.sources("config")?,
            });
        }
        if schedds.is_empty() {
            schedds.push(ScheddSpec {
                name: "submit".into(),
                config: Vec::new(),
            });
        }
        let mut owners = Vec::new();
        for (i, s) in array("owners", o.get("owners"))?.iter().enumerate() {
            let c = Obj::new(
                &format!("owners[{i}]"),
                s,
                &["machines", "from", "to", "keyboard", "load", "random"],
            )?;
            let machines = c
                .string("machines")?
                .map_or_else(|| err(&c.at("machines"), "missing"), Ok)?;
            let activity = match c.get("random") {
                Some(r) => {
                    let r = Obj::new(&c.at("random"), r, &["busy_mean", "idle_mean", "load"])?;
                    Activity::Random {
                        busy_mean: r.real("busy_mean", 1800.0)?.max(1.0),
                        idle_mean: r.real("idle_mean", 7200.0)?.max(1.0),
                        load: r.real("load", 0.0)?,
                    }
                }
                None => Activity::Interval {
                    from: c.int("from", Some(0))?,
                    to: c.int("to", Some(duration))?,
                    keyboard: match c.get("keyboard") {
                        None => false,
                        Some(Value::Bool(b)) => *b,
                        Some(_) => return err(&c.at("keyboard"), "expected true or false"),
                    },
                    load: c.real("load", 0.0)?,
                },
            };
            owners.push(OwnerSpec { machines, activity });
        }
        let mut jobs = Vec::new();
        for (i, j) in array("jobs", o.get("jobs"))?.iter().enumerate() {
            let at = format!("jobs[{i}]");
            let c = Obj::new(
                &at,
                j,
                &[
                    "user",
                    "schedd",
                    "submit",
                    "append",
                    "at",
                    "every",
                    "runtime",
                    "exit_code",
                    "ignores_soft_kill",
                ],
            )?;
            let mut arrivals = Vec::new();
            match c.get("at") {
                None => {}
                Some(Value::Array(a)) => {
                    for (k, t) in a.iter().enumerate() {
                        arrivals.push(int(&format!("{at}.at[{k}]"), t)?);
                    }
                }
                Some(t) => arrivals.push(int(&c.at("at"), t)?),
            }
            if let Some(e) = c.get("every") {
                let e = Obj::new(&c.at("every"), e, &["start", "interval", "count"])?;
                let (start, interval, count) = (
                    e.int("start", Some(0))?,
                    e.int("interval", None)?,
                    e.int("count", None)?,
                );
                if interval < 0 || count < 0 {
                    return err(&c.at("every"), "interval and count must not be negative");
                }
                arrivals.extend((0..count).map(|k| start + k * interval));
            }
            if arrivals.is_empty() {
                arrivals.push(0);
            }
            let append = array(&c.at("append"), c.get("append"))?
                .iter()
                .enumerate()
                .map(|(k, v)| match v {
                    Value::String(s) => Ok(s.clone()),
                    _ => err(&format!("{at}.append[{k}]"), "expected a string"),
                })
                .collect::<Result<Vec<_>, _>>()?;
            jobs.push(JobSpec {
                user: c
                    .string("user")?
                    .map_or_else(|| err(&c.at("user"), "missing"), Ok)?,
                schedd: c.string("schedd")?,
                submit: c
                    .get("submit")
                    .map(|v| source(&c.at("submit"), v, true))
                    .transpose()?,
                append,
                arrivals,
                runtime: dist(&c.at("runtime"), c.get("runtime"))?,
                exit_code: c.int("exit_code", Some(0))?,
                ignores_soft_kill: c.boolean("ignores_soft_kill", false)?,
            });
        }
        let mut intervals = BTreeMap::new();
        if let Some(v) = o.get("intervals") {
            let c = Obj::new("intervals", v, &INTERVAL_NAMES)?;
            for name in INTERVAL_NAMES {
                if c.get(name).is_some() {
                    let s = c.int(name, None)?;
                    if s < 1 {
                        return err(&c.at(name), "must be at least 1 second");
                    }
                    intervals.insert(name.to_string(), s);
                }
            }
        }
        let mut priority_factors = Vec::new();
        if let Some(v) = o.get("priority_factors") {
            let Some(m) = v.as_object() else {
                return err(
                    "priority_factors",
                    "expected an object of submitter: factor",
                );
            };
            for (k, f) in m {
                match f.as_f64() {
                    Some(f) => priority_factors.push((k.clone(), f)),
                    None => return err(&format!("priority_factors.{k}"), "expected a number"),
                }
            }
        }
        let mut commands = Vec::new();
        for (i, v) in array("commands", o.get("commands"))?.iter().enumerate() {
            let at = format!("commands[{i}]");
            let c = Obj::new(
                &at,
                v,
                &["at", "machines", "vacate", "drain", "cancel_drain"],
            )?;
            let machines = c
                .string("machines")?
                .map_or_else(|| err(&c.at("machines"), "missing"), Ok)?;
            let given = ["vacate", "drain", "cancel_drain"]
                .iter()
                .filter(|k| c.get(k).is_some())
                .count();
            if given != 1 {
                return err(&at, "give exactly one of `vacate`, `drain`, `cancel_drain`");
            }
            let command = if let Some(v) = c.get("vacate") {
                let o = Obj::new(&c.at("vacate"), v, &["slot", "fast"])?;
                AdminCommand::Vacate {
                    slot: o.string("slot")?,
                    fast: o.boolean("fast", false)?,
                }
            } else if let Some(v) = c.get("drain") {
                let o = Obj::new(&c.at("drain"), v, &["how"])?;
                let how = match o.string("how")?.as_deref() {
                    None | Some("graceful") => DrainSpeed::Graceful,
                    Some("quick") => DrainSpeed::Quick,
                    Some("fast") => DrainSpeed::Fast,
                    Some(other) => {
                        return err(
                            &o.at("how"),
                            format!("`{other}`: expected graceful, quick or fast"),
                        )
                    }
                };
                AdminCommand::Drain { how }
            } else {
                AdminCommand::CancelDrain
            };
            commands.push(CommandSpec {
                at: c.int("at", None)?,
                machines,
                command,
            });
        }
        let network = match o.get("network") {
            None => None,
            Some(v) => {
                let n = Obj::new("network", v, &["delay", "drop", "lose"])?;
                let delay = match n.get("delay") {
                    None => (0, 0),
                    Some(Value::Array(a)) if a.len() == 2 => {
                        let (lo, hi) = (int(&n.at("delay"), &a[0])?, int(&n.at("delay"), &a[1])?);
                        if lo < 0 || hi < lo {
                            return err(&n.at("delay"), "expected 0 <= low <= high");
                        }
                        (lo, hi)
                    }
                    Some(v) => {
                        let d = int(&n.at("delay"), v)?;
                        if d < 0 {
                            return err(&n.at("delay"), "must not be negative");
                        }
                        (d, d)
                    }
                };
                let drop = n.real("drop", 0.0)?;
                if !(0.0..=1.0).contains(&drop) {
                    return err(&n.at("drop"), "expected a probability from 0 to 1");
                }
                let mut lose = BTreeMap::new();
                if let Some(l) = n.get("lose") {
                    let l = Obj::new(&n.at("lose"), l, &MESSAGE_KINDS)?;
                    for k in MESSAGE_KINDS {
                        if l.get(k).is_some() {
                            lose.insert(k.to_string(), l.int(k, None)?.max(0) as u64);
                        }
                    }
                }
                Some(Network { delay, drop, lose })
            }
        };
        let mut fetch_work = Vec::new();
        for (i, v) in array("fetch_work", o.get("fetch_work"))?.iter().enumerate() {
            let at = format!("fetch_work[{i}]");
            let c = Obj::new(&at, v, &["machines", "jobs"])?;
            let machines = c
                .string("machines")?
                .map_or_else(|| err(&c.at("machines"), "missing"), Ok)?;
            let mut jobs = Vec::new();
            for (k, j) in array(&c.at("jobs"), c.get("jobs"))?.iter().enumerate() {
                let jat = format!("{at}.jobs[{k}]");
                let j = Obj::new(&jat, j, &["ad", "runtime"])?;
                let ad = j
                    .string("ad")?
                    .map_or_else(|| err(&j.at("ad"), "missing"), Ok)?;
                if let Err(e) = classad::ClassAd::parse(&ad) {
                    return err(&j.at("ad"), format!("not a ClassAd: {e}"));
                }
                jobs.push((ad, j.int("runtime", Some(3600))?.max(1)));
            }
            fetch_work.push(FetchSpec { machines, jobs });
        }
        let defrag = match o.get("defrag") {
            None | Some(Value::Bool(false)) => None,
            Some(Value::Bool(true)) => Some(Vec::new()),
            Some(v) => Some(Obj::new("defrag", v, &["config"])?.sources("config")?),
        };
        Ok(Scenario {
            defrag,
            fetch_work,
            commands,
            network,
            seed,
            start: o.int("start", Some(DEFAULT_START))?,
            duration,
            base_dir: o.string("base_dir")?.unwrap_or_default(),
            config: o.sources("config")?,
            negotiator_config: o.sources("negotiator_config")?,
            classes,
            schedds,
            owners,
            jobs,
            intervals,
            priority_factors,
            initial_idle: o.int("initial_idle", Some(86_400))?,
            sample_interval: match o.get("sample_interval") {
                None => None,
                Some(v) => Some(int("sample_interval", v)?.max(1)),
            },
        })
    }

    /// A file name as the [`crate::Files`] see it: relative names are
    /// taken from `base_dir`.
    pub fn resolve(&self, path: &str) -> String {
        if path.starts_with('/') || self.base_dir.is_empty() {
            path.to_string()
        } else {
            format!("{}/{path}", self.base_dir.trim_end_matches('/'))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_scenario_reads() {
        let s = Scenario::from_json(
            r#"{"seed": 3, "duration": 600,
                "machines": [{"class": "node", "count": 2, "cpus": 4,
                              "config": ["a.conf", {"text": "START = True"}]}],
                "owners": [{"machines": "node", "from": 10, "to": 20, "keyboard": true}],
                "jobs": [{"user": "alice", "every": {"interval": 60, "count": 3},
                          "runtime": {"uniform": [10, 20]}}],
                "intervals": {"NEGOTIATOR_INTERVAL": 30}}"#,
        )
        .unwrap();
        assert_eq!(s.classes[0].config.len(), 2);
        assert_eq!(s.jobs[0].arrivals, vec![0, 60, 120]);
        assert_eq!(s.jobs[0].runtime, Dist::Uniform(10, 20));
        assert_eq!(s.schedds[0].name, "submit");
        assert_eq!(s.intervals["NEGOTIATOR_INTERVAL"], 30);
    }

    #[test]
    fn defrag_is_off_true_or_its_own_configuration() {
        let base = r#"{"duration": 1, "machines": [{"class": "n"}]"#;
        let read = |tail: &str| Scenario::from_json(&format!("{base}{tail}}}"));
        assert_eq!(read("").unwrap().defrag, None);
        assert_eq!(read(r#", "defrag": false"#).unwrap().defrag, None);
        assert_eq!(read(r#", "defrag": true"#).unwrap().defrag, Some(vec![]));
        let s = read(r#", "defrag": {"config": [{"text": "DEFRAG_INTERVAL = 60"}]}"#).unwrap();
        assert_eq!(s.defrag.unwrap().len(), 1);
        let e = read(r#", "defrag": {"confg": []}"#).unwrap_err();
        assert!(e.0.contains("confg"), "{e}");
    }

    #[test]
    fn typos_are_errors_that_say_where() {
        let e = Scenario::from_json(
            r#"{"duration": 1, "machines": [{"class": "n"}], "jobs": [{"user": "a", "runtim": 5}]}"#,
        )
        .unwrap_err();
        assert!(e.0.contains("jobs[0]") && e.0.contains("runtim"), "{e}");
    }
}
