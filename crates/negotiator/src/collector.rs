//! The collector's ad store: every daemon's ad by type and name, as the
//! condor_collector holds them, plus the pool history that an HTCondorView
//! server keeps.
//!
//! Daemons send their ads periodically; an update replaces the ad of the
//! same type and name (a submitter ad is also keyed by its `ScheddName`,
//! since one user may submit from several access points). An ad that is
//! not refreshed within its lifetime (its `ClassAdLifetime`, else
//! `CLASSAD_LIFETIME`) is gone: queries at a later `now` no longer see it
//! and [`CollectorStore::expire`] drops it. Daemons that shut down
//! invalidate their ads by name or by constraint. Queries take a
//! constraint (evaluated with the stored ad as MY) and a projection.
//!
//! The pool history ([`PoolHistory`], on with `KEEP_POOL_HISTORY`) samples
//! every `POOL_HISTORY_SAMPLING_INTERVAL` seconds each slot's state and
//! activity and each submitter's running, idle and held jobs. It stores a
//! value only when it changes, so an idle pool costs almost nothing, and
//! drops its oldest samples to stay within `POOL_HISTORY_MAX_STORAGE` bytes.
//!
//! Pure: no sockets, no disk; `now` is always an argument. The daemon
//! shell persists the history if it wants it on disk (`POOL_HISTORY_DIR`).

use std::collections::{BTreeMap, VecDeque};
use std::fmt;

use classad::{ClassAd, Env, Expr, Value};
use config::{Config, ParamError};

/// HTCondor's fallback when `CLASSAD_LIFETIME` is not set.
pub const DEFAULT_CLASSAD_LIFETIME: i64 = 900;

/// The kinds of ad a collector holds, named by their `MyType`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum AdType {
    /// A slot (`MyType = "Machine"`), sent by a startd.
    Startd,
    /// A user with jobs at an access point (`"Submitter"`).
    Submitter,
    /// An access point (`"Scheduler"`).
    Schedd,
    Negotiator,
    /// A condor_master (`"DaemonMaster"`).
    Master,
    Collector,
    /// The negotiator's accounting records (`"Accounting"`).
    Accounting,
    Defrag,
    /// Any other `MyType` (`"Generic"`, a grid resource, ...).
    Other(String),
}

impl AdType {
    /// The type an ad's `MyType` names (any case).
    pub fn from_my_type(my_type: &str) -> AdType {
        match my_type.to_ascii_lowercase().as_str() {
            "machine" => AdType::Startd,
            "submitter" => AdType::Submitter,
            "scheduler" => AdType::Schedd,
            "negotiator" => AdType::Negotiator,
            "daemonmaster" => AdType::Master,
            "collector" => AdType::Collector,
            "accounting" => AdType::Accounting,
            "defrag" => AdType::Defrag,
            _ => AdType::Other(my_type.to_string()),
        }
    }

    /// The `MyType` of ads of this type.
    pub fn my_type(&self) -> &str {
        match self {
            AdType::Startd => "Machine",
            AdType::Submitter => "Submitter",
            AdType::Schedd => "Scheduler",
            AdType::Negotiator => "Negotiator",
            AdType::Master => "DaemonMaster",
            AdType::Collector => "Collector",
            AdType::Accounting => "Accounting",
            AdType::Defrag => "Defrag",
            AdType::Other(t) => t,
        }
    }

    /// The type of `ad` by its `MyType`, if it has one.
    pub fn of(ad: &ClassAd) -> Option<AdType> {
        match ad.eval_attr("MyType", &Env::default()) {
            Value::Str(s) => Some(AdType::from_my_type(&s)),
            _ => None,
        }
    }
}

/// Where an ad is filed: its type, `Name`, and for submitter ads the
/// `ScheddName` (empty otherwise).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct AdKey {
    pub ad_type: AdType,
    pub name: String,
    pub secondary: String,
}

/// An ad as the collector keeps it.
#[derive(Clone, Debug)]
pub struct StoredAd {
    /// The ad as sent, with `LastHeardFrom` set to when it arrived.
    pub ad: ClassAd,
    pub last_heard_from: i64,
    /// Seconds it lives without a refresh.
    pub lifetime: i64,
}

impl StoredAd {
    /// Still alive at `now`: HTCondor expires an ad once more than its
    /// lifetime has passed since it was last heard from.
    pub fn alive_at(&self, now: i64) -> bool {
        now - self.last_heard_from <= self.lifetime
    }

    /// The last second the ad is alive.
    pub fn expires_at(&self) -> i64 {
        self.last_heard_from.saturating_add(self.lifetime)
    }
}

/// An update the collector refuses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UpdateError {
    /// The ad has no string `Name` (HTCondor rejects unnamed ads).
    NoName,
}

impl fmt::Display for UpdateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UpdateError::NoName => {
                f.write_str("ad has no Name attribute; the collector refuses it")
            }
        }
    }
}

impl std::error::Error for UpdateError {}

/// What an update did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UpdateOutcome {
    New,
    Replaced,
}

/// The collector's ads.
#[derive(Clone, Debug)]
pub struct CollectorStore {
    /// `CLASSAD_LIFETIME`: lifetime of ads that carry no `ClassAdLifetime`.
    pub classad_lifetime: i64,
    ads: BTreeMap<AdKey, StoredAd>,
    history: Option<PoolHistory>,
}

fn string_attr(ad: &ClassAd, name: &str) -> Option<String> {
    match ad.eval_attr(name, &Env::default()) {
        Value::Str(s) => Some(s.to_string()),
        _ => None,
    }
}

fn int_attr(ad: &ClassAd, name: &str) -> Option<i64> {
    match ad.eval_attr(name, &Env::default()) {
        Value::Int(i) => Some(i),
        Value::Real(r) if r.is_finite() => Some(r as i64),
        _ => None,
    }
}

impl CollectorStore {
    /// A store with no history.
    pub fn new(classad_lifetime: i64) -> CollectorStore {
        CollectorStore {
            classad_lifetime,
            ads: BTreeMap::new(),
            history: None,
        }
    }

    /// Reads `CLASSAD_LIFETIME`, and `KEEP_POOL_HISTORY` with the pool
    /// history's `POOL_HISTORY_SAMPLING_INTERVAL` and
    /// `POOL_HISTORY_MAX_STORAGE`.
    pub fn from_config(config: &Config) -> Result<CollectorStore, ParamError> {
        let mut store = CollectorStore::new(
            config
                .duration("CLASSAD_LIFETIME")?
                .unwrap_or(DEFAULT_CLASSAD_LIFETIME),
        );
        if config.boolean("KEEP_POOL_HISTORY")?.unwrap_or(false) {
            store.history = Some(PoolHistory::new(
                config
                    .duration("POOL_HISTORY_SAMPLING_INTERVAL")?
                    .unwrap_or(60),
                config
                    .integer("POOL_HISTORY_MAX_STORAGE")?
                    .unwrap_or(10_000_000)
                    .max(0) as u64,
            ));
        }
        Ok(store)
    }

    /// Turns the pool history on (or replaces it).
    pub fn keep_history(&mut self, history: PoolHistory) {
        self.history = Some(history);
    }

    pub fn history(&self) -> Option<&PoolHistory> {
        self.history.as_ref()
    }

    fn key(ad_type: &AdType, ad: &ClassAd) -> Result<AdKey, UpdateError> {
        let name = string_attr(ad, "Name").ok_or(UpdateError::NoName)?;
        let secondary = if *ad_type == AdType::Submitter {
            string_attr(ad, "ScheddName").unwrap_or_default()
        } else {
            String::new()
        };
        Ok(AdKey {
            ad_type: ad_type.clone(),
            name,
            secondary,
        })
    }

    /// Files `ad` as the current ad of its type and name, replacing the one
    /// before; `LastHeardFrom` is set to `now`.
    pub fn update(
        &mut self,
        ad_type: AdType,
        mut ad: ClassAd,
        now: i64,
    ) -> Result<UpdateOutcome, UpdateError> {
        let key = Self::key(&ad_type, &ad)?;
        let lifetime = int_attr(&ad, "ClassAdLifetime")
            .filter(|l| *l > 0)
            .unwrap_or(self.classad_lifetime);
        ad.insert_value("LastHeardFrom", Value::Int(now));
        let stored = StoredAd {
            ad,
            last_heard_from: now,
            lifetime,
        };
        Ok(match self.ads.insert(key, stored) {
            Some(_) => UpdateOutcome::Replaced,
            None => UpdateOutcome::New,
        })
    }

    /// Sets some attributes of an existing ad without replacing the rest
    /// (what `condor_update_machine_ad` asks of a startd, seen from here).
    /// Refreshes it as heard from at `now`. False if there is no such ad.
    pub fn merge(&mut self, ad_type: &AdType, name: &str, attrs: &ClassAd, now: i64) -> bool {
        let mut found = false;
        for (k, stored) in self.ads.iter_mut() {
            if k.ad_type == *ad_type && k.name == name {
                stored.ad.update(attrs);
                stored.ad.insert_value("LastHeardFrom", Value::Int(now));
                stored.last_heard_from = now;
                found = true;
            }
        }
        found
    }

    /// Removes the ads of `ad_type` named `name` (every `ScheddName` for
    /// submitters); returns how many.
    pub fn invalidate(&mut self, ad_type: &AdType, name: &str) -> usize {
        let before = self.ads.len();
        self.ads
            .retain(|k, _| !(k.ad_type == *ad_type && k.name == name));
        before - self.ads.len()
    }

    /// Removes the ads of `ad_type` for which `constraint` is true (MY =
    /// the stored ad); returns how many.
    pub fn invalidate_matching(&mut self, ad_type: &AdType, constraint: &Expr, now: i64) -> usize {
        let env = Env::at(now);
        let before = self.ads.len();
        self.ads
            .retain(|k, s| k.ad_type != *ad_type || !constraint_holds(constraint, &s.ad, &env));
        before - self.ads.len()
    }

    /// Drops every ad whose lifetime has run out by `now` (the collector's
    /// housekeeping); returns their keys.
    pub fn expire(&mut self, now: i64) -> Vec<AdKey> {
        let gone: Vec<AdKey> = self
            .ads
            .iter()
            .filter(|(_, s)| !s.alive_at(now))
            .map(|(k, _)| k.clone())
            .collect();
        for k in &gone {
            self.ads.remove(k);
        }
        gone
    }

    /// The live ad of `ad_type` named `name` (the first by `ScheddName`
    /// for submitters).
    pub fn get(&self, ad_type: &AdType, name: &str, now: i64) -> Option<&StoredAd> {
        self.ads
            .iter()
            .find(|(k, s)| k.ad_type == *ad_type && k.name == name && s.alive_at(now))
            .map(|(_, s)| s)
    }

    /// Live ads of `ad_type` (all types for `None`), in key order, without
    /// copying: the negotiator's snapshot.
    pub fn ads<'a>(
        &'a self,
        ad_type: Option<&'a AdType>,
        now: i64,
    ) -> impl Iterator<Item = &'a ClassAd> + 'a {
        self.ads
            .iter()
            .filter(move |(k, s)| ad_type.is_none_or(|t| k.ad_type == *t) && s.alive_at(now))
            .map(|(_, s)| &s.ad)
    }

    /// How many ads are filed (live or not yet expired by [`Self::expire`]).
    pub fn len(&self) -> usize {
        self.ads.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ads.is_empty()
    }

    /// `condor_status`'s question: live ads of `ad_type` (any type for
    /// `None`) for which `constraint` is true, each cut down to the
    /// attributes in `projection` (all of them when it is empty).
    pub fn query(
        &self,
        ad_type: Option<&AdType>,
        constraint: Option<&Expr>,
        projection: &[&str],
        now: i64,
    ) -> Vec<ClassAd> {
        let env = Env::at(now);
        self.ads(ad_type, now)
            .filter(|ad| constraint.is_none_or(|c| constraint_holds(c, ad, &env)))
            .map(|ad| project(ad, projection))
            .collect()
    }

    /// Takes a pool history sample at `now` if history is kept and the
    /// sampling interval has passed; true if it did.
    pub fn sample_history(&mut self, now: i64) -> bool {
        let Some(history) = self.history.as_mut() else {
            return false;
        };
        if !history.due(now) {
            return false;
        }
        let ads = &self.ads;
        let live = |t: AdType| {
            ads.iter()
                .filter(move |(k, s)| k.ad_type == t && s.alive_at(now))
                .map(|(_, s)| &s.ad)
        };
        history.record(now, live(AdType::Startd), live(AdType::Submitter));
        true
    }
}

/// A constraint holds when it evaluates to true (or a non-zero number), as
/// HTCondor's collector reads a query's requirements.
pub fn constraint_holds(constraint: &Expr, ad: &ClassAd, env: &Env) -> bool {
    classad::eval_expr(constraint, Some(ad), None, env).as_bool() == Some(true)
}

/// `ad` cut down to the attributes in `projection` (all of them when it
/// is empty), as [`CollectorStore::query`] answers.
pub fn project(ad: &ClassAd, projection: &[&str]) -> ClassAd {
    if projection.is_empty() {
        return ad.clone();
    }
    let mut out = ClassAd::new();
    for name in projection {
        if let Some((n, e)) = ad.lookup_entry(&classad::AttrName::new(name)) {
            out.insert(n.clone(), e.clone());
        }
    }
    out
}

// ---- pool history ---------------------------------------------------------

/// A slot's state, as the startd advertises it in `State`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SlotState {
    Owner,
    Unclaimed,
    Matched,
    Claimed,
    Preempting,
    Backfill,
    Drained,
    Unknown,
}

impl SlotState {
    pub fn parse(s: &str) -> SlotState {
        match s.to_ascii_lowercase().as_str() {
            "owner" => SlotState::Owner,
            "unclaimed" => SlotState::Unclaimed,
            "matched" => SlotState::Matched,
            "claimed" => SlotState::Claimed,
            "preempting" => SlotState::Preempting,
            "backfill" => SlotState::Backfill,
            "drained" => SlotState::Drained,
            _ => SlotState::Unknown,
        }
    }
}

/// A slot's activity, as advertised in `Activity`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Activity {
    Idle,
    Busy,
    Suspended,
    Retiring,
    Vacating,
    Killing,
    Benchmarking,
    Unknown,
}

impl Activity {
    pub fn parse(s: &str) -> Activity {
        match s.to_ascii_lowercase().as_str() {
            "idle" => Activity::Idle,
            "busy" => Activity::Busy,
            "suspended" => Activity::Suspended,
            "retiring" => Activity::Retiring,
            "vacating" => Activity::Vacating,
            "killing" => Activity::Killing,
            "benchmarking" => Activity::Benchmarking,
            _ => Activity::Unknown,
        }
    }
}

/// One slot at one sample.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlotSample {
    pub state: SlotState,
    pub activity: Activity,
}

/// One submitter at one sample (from its submitter ad).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct SubmitterSample {
    pub running: u32,
    pub idle: u32,
    pub held: u32,
}

/// The whole pool at one sample time.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct PoolSample {
    pub time: i64,
    pub slots: BTreeMap<String, SlotSample>,
    pub submitters: BTreeMap<String, SubmitterSample>,
}

impl PoolSample {
    /// Slots per state: what a "slot states over time" chart plots.
    pub fn state_counts(&self) -> BTreeMap<SlotState, u32> {
        let mut out = BTreeMap::new();
        for s in self.slots.values() {
            *out.entry(s.state).or_insert(0) += 1;
        }
        out
    }
}

/// A value's history: the times it changed, and to what (`None`: the ad
/// was gone). The value at a time is the last change at or before it.
type Series<T> = Vec<(i64, Option<T>)>;

/// Bytes a change point is counted as, for `POOL_HISTORY_MAX_STORAGE`.
const POINT_BYTES: u64 = 24;
const SAMPLE_BYTES: u64 = 8;

/// The HTCondorView server's history, kept compactly: sample times, and
/// per slot and per submitter only the samples where its value changed.
#[derive(Clone, Debug, PartialEq)]
pub struct PoolHistory {
    pub sampling_interval: i64,
    pub max_storage: u64,
    times: VecDeque<i64>,
    slots: BTreeMap<String, Series<SlotSample>>,
    submitters: BTreeMap<String, Series<SubmitterSample>>,
    points: u64,
}

fn value_at<T: Copy>(series: &Series<T>, t: i64) -> Option<T> {
    let i = series.partition_point(|(at, _)| *at <= t);
    if i == 0 {
        None
    } else {
        series[i - 1].1
    }
}

fn push_change<T: Copy + PartialEq>(series: &mut Series<T>, t: i64, v: Option<T>) -> bool {
    let last = series.last().and_then(|(_, v)| *v);
    if series.is_empty() && v.is_none() || last == v && !series.is_empty() {
        return false;
    }
    series.push((t, v));
    true
}

impl PoolHistory {
    pub fn new(sampling_interval: i64, max_storage: u64) -> PoolHistory {
        PoolHistory {
            sampling_interval: sampling_interval.max(1),
            max_storage,
            times: VecDeque::new(),
            slots: BTreeMap::new(),
            submitters: BTreeMap::new(),
            points: 0,
        }
    }

    /// Whether a sample is due at `now`.
    pub fn due(&self, now: i64) -> bool {
        self.times
            .back()
            .is_none_or(|last| now - last >= self.sampling_interval)
    }

    /// Records one sample: the slot ads' `State`/`Activity` by `Name`, the
    /// submitter ads' `RunningJobs`/`IdleJobs`/`HeldJobs` by `Name`.
    pub fn record<'a>(
        &mut self,
        now: i64,
        slots: impl IntoIterator<Item = &'a ClassAd>,
        submitters: impl IntoIterator<Item = &'a ClassAd>,
    ) {
        if self.times.back().is_some_and(|last| now <= *last) {
            return; // samples are kept in time order
        }
        let mut seen_slots: BTreeMap<String, SlotSample> = BTreeMap::new();
        for ad in slots {
            let Some(name) = string_attr(ad, "Name") else {
                continue;
            };
            seen_slots.insert(
                name,
                SlotSample {
                    state: SlotState::parse(&string_attr(ad, "State").unwrap_or_default()),
                    activity: Activity::parse(&string_attr(ad, "Activity").unwrap_or_default()),
                },
            );
        }
        let mut seen_subs: BTreeMap<String, SubmitterSample> = BTreeMap::new();
        for ad in submitters {
            let Some(name) = string_attr(ad, "Name") else {
                continue;
            };
            let n = |a: &str| int_attr(ad, a).unwrap_or(0).clamp(0, u32::MAX as i64) as u32;
            // One user at several access points: the pool sees the sum.
            let e = seen_subs.entry(name).or_default();
            e.running += n("RunningJobs");
            e.idle += n("IdleJobs");
            e.held += n("HeldJobs");
        }
        self.times.push_back(now);
        for (name, series) in self.slots.iter_mut() {
            if !seen_slots.contains_key(name) && push_change(series, now, None) {
                self.points += 1;
            }
        }
        for (name, v) in seen_slots {
            if push_change(self.slots.entry(name).or_default(), now, Some(v)) {
                self.points += 1;
            }
        }
        for (name, series) in self.submitters.iter_mut() {
            if !seen_subs.contains_key(name) && push_change(series, now, None) {
                self.points += 1;
            }
        }
        for (name, v) in seen_subs {
            if push_change(self.submitters.entry(name).or_default(), now, Some(v)) {
                self.points += 1;
            }
        }
        self.trim();
    }

    /// Bytes the history is counted as using.
    pub fn storage_bytes(&self) -> u64 {
        self.times.len() as u64 * SAMPLE_BYTES + self.points * POINT_BYTES
    }

    /// How many samples are kept.
    pub fn sample_count(&self) -> usize {
        self.times.len()
    }

    /// The time span kept, oldest and newest sample.
    pub fn span(&self) -> Option<(i64, i64)> {
        Some((*self.times.front()?, *self.times.back()?))
    }

    /// Drops the oldest samples (a tenth at a time) until the history fits
    /// `max_storage`; each series keeps its value at the new first sample.
    fn trim(&mut self) {
        while self.storage_bytes() > self.max_storage && self.times.len() > 1 {
            let drop = (self.times.len() / 10).max(1).min(self.times.len() - 1);
            self.times.drain(..drop);
            let cutoff = self.times[0];
            let mut points = 0u64;
            for series in self.slots.values_mut() {
                rebase(series, cutoff);
                points += series.len() as u64;
            }
            self.slots.retain(|_, s| !s.is_empty());
            for series in self.submitters.values_mut() {
                rebase(series, cutoff);
                points += series.len() as u64;
            }
            self.submitters.retain(|_, s| !s.is_empty());
            self.points = points;
        }
    }

    /// The samples taken from `from` to `to` (inclusive), rebuilt whole.
    pub fn samples(&self, from: i64, to: i64) -> Vec<PoolSample> {
        self.times
            .iter()
            .filter(|t| (from..=to).contains(*t))
            .map(|&t| PoolSample {
                time: t,
                slots: self
                    .slots
                    .iter()
                    .filter_map(|(n, s)| value_at(s, t).map(|v| (n.clone(), v)))
                    .collect(),
                submitters: self
                    .submitters
                    .iter()
                    .filter_map(|(n, s)| value_at(s, t).map(|v| (n.clone(), v)))
                    .collect(),
            })
            .collect()
    }

    /// One slot's state at each sample from `from` to `to` (`None`: no ad).
    pub fn slot_history(&self, name: &str, from: i64, to: i64) -> Vec<(i64, Option<SlotSample>)> {
        let series = self.slots.get(name);
        self.times
            .iter()
            .filter(|t| (from..=to).contains(*t))
            .map(|&t| (t, series.and_then(|s| value_at(s, t))))
            .collect()
    }

    /// One submitter's jobs at each sample from `from` to `to`.
    pub fn submitter_history(
        &self,
        name: &str,
        from: i64,
        to: i64,
    ) -> Vec<(i64, Option<SubmitterSample>)> {
        let series = self.submitters.get(name);
        self.times
            .iter()
            .filter(|t| (from..=to).contains(*t))
            .map(|&t| (t, series.and_then(|s| value_at(s, t))))
            .collect()
    }
}

/// Keeps a series' value at `cutoff` as its first point and drops what
/// came before.
fn rebase<T: Copy>(series: &mut Series<T>, cutoff: i64) {
    let i = series.partition_point(|(at, _)| *at <= cutoff);
    if i == 0 {
        return;
    }
    let current = series[i - 1].1;
    series.drain(..i);
    if current.is_some() {
        series.insert(0, (cutoff, current));
    }
}
