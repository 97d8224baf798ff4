//! The slot ad: what a slot publishes to the collector, and the ad its own
//! policy expressions are evaluated in (HTCondor evaluates START, SUSPEND,
//! ... with the slot ad as MY, so they can refer to each other and to
//! State, KeyboardIdle, LoadAvg and the rest).

use classad::ad::Refresher;
use classad::name::AttrName;
use classad::{ClassAd, Expr, Value};

use crate::engine::Startd;
use crate::layout::SlotResources;
use crate::slot::SlotKind;
use crate::state::{Pair, State};

/// The machine-wide facts every slot ad carries.
#[derive(Clone, Debug, PartialEq)]
pub struct MachineInfo {
    /// The host's name (`Machine`).
    pub hostname: String,
    /// The startd's name: slots are named `slotN@name`. The host's name,
    /// unless STARTD_NAME gives another (HTCondor's `name@host` form, as
    /// several startds of one host need).
    pub startd_name: String,
    pub arch: String,
    pub opsys: String,
    pub opsys_and_ver: String,
    /// Seconds east of UTC, for ClockMin and ClockDay.
    pub utc_offset: i32,
    /// Total cores, memory (MiB) and disk (KiB) of the machine.
    pub total_cpus: f64,
    pub total_memory: i64,
    pub total_disk: i64,
    /// Custom resources: name, detected instances, total.
    pub custom: Vec<(String, String, f64)>,
    /// FILESYSTEM_DOMAIN and UID_DOMAIN: which jobs share this machine's
    /// files and users (the default job Requirements compare them).
    pub filesystem_domain: Option<String>,
    pub uid_domain: Option<String>,
    /// The URL schemes the starter can fetch (HasFileTransferPluginMethods:
    /// `file` and what FILETRANSFER_PLUGINS serve), as the execute point
    /// found them; `None` publishes nothing.
    pub file_transfer_methods: Option<String>,
}

/// A daemon's name as HTCondor builds it from `<SUBSYS>_NAME`: the host's
/// name when none is given, the name as written when it has an `@`, else
/// `name@host` (so that several daemons of one host have names of their
/// own, and a name says which host it is on).
pub fn daemon_name(configured: &str, hostname: &str) -> String {
    let configured = configured.trim();
    if configured.is_empty() {
        hostname.to_string()
    } else if configured.contains('@') {
        configured.to_string()
    } else {
        format!("{configured}@{hostname}")
    }
}

impl MachineInfo {
    /// The same machine on host `to` instead of `from` (a simulator's
    /// machines of one class are copies of one): its name, its startd's
    /// name, and the domains that defaulted to the host's name.
    pub fn move_to_host(&mut self, from: &str, to: &str) {
        self.hostname = to.to_string();
        if self.startd_name == from {
            self.startd_name = to.to_string();
        } else if let Some(name) = self.startd_name.strip_suffix(&format!("@{from}")) {
            self.startd_name = format!("{name}@{to}");
        }
        for domain in [&mut self.filesystem_domain, &mut self.uid_domain] {
            if domain.as_deref() == Some(from) {
                *domain = Some(to.to_string());
            }
        }
    }

    /// A machine with the given name and sizes (Linux on x86_64, UTC).
    pub fn new(hostname: &str, cpus: f64, memory: i64, disk: i64) -> MachineInfo {
        MachineInfo {
            hostname: hostname.to_string(),
            startd_name: hostname.to_string(),
            arch: "X86_64".into(),
            opsys: "LINUX".into(),
            opsys_and_ver: "LINUX".into(),
            utc_offset: 0,
            total_cpus: cpus,
            total_memory: memory,
            total_disk: disk,
            custom: Vec::new(),
            filesystem_domain: None,
            file_transfer_methods: None,
            uid_domain: None,
        }
    }
}

/// A generation no slot ad of this process has had: a process-wide
/// counter, so equal generations always mean the same slot's ad.
pub(crate) fn new_generation() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// Whether a slot ad's attribute `name` may change while the ad keeps its
/// generation ([`Startd::ad_generation`]): the figures that move with the
/// clock alone (idle times, the time of day, time spent in the state and on
/// the claim and job, the draining estimates), the load averages (they
/// move at every poll while a job runs) and the other slots' figures that
/// STARTD_SLOT_ATTRS copies in.
pub fn changes_with_time(name: &str) -> bool {
    CLOCK_NAMES.iter().any(|n| n.eq_ignore_ascii_case(name)) || clock_prefixed(name)
}

/// The figures of the clock's part of a refresh, listed once for both of
/// their uses: `CLOCK_NAMES`, what [`changes_with_time`] lists one by
/// one, and `ClockNames`, the same names made once, which a refresh
/// writes through (`clock_names`; found in place by pointer,
/// `Refresher::value_named`).
macro_rules! clock_figures {
    ($($field:ident: $name:literal,)*) => {
        const CLOCK_NAMES: &[&str] = &[$($name),*];

        struct ClockNames {
            $($field: AttrName,)*
        }

        fn clock_names() -> &'static ClockNames {
            static NAMES: std::sync::OnceLock<ClockNames> = std::sync::OnceLock::new();
            NAMES.get_or_init(|| ClockNames {
                $($field: AttrName::new($name),)*
            })
        }
    };
}

clock_figures! {
    keyboard_idle: "KeyboardIdle",
    console_idle: "ConsoleIdle",
    load_avg: "LoadAvg",
    condor_load_avg: "CondorLoadAvg",
    total_load_avg: "TotalLoadAvg",
    total_condor_load_avg: "TotalCondorLoadAvg",
    clock_min: "ClockMin",
    clock_day: "ClockDay",
    cpu_busy_time: "CpuBusyTime",
    total_claim_run_time: "TotalClaimRunTime",
    total_claim_suspend_time: "TotalClaimSuspendTime",
    total_job_run_time: "TotalJobRunTime",
    total_job_suspend_time: "TotalJobSuspendTime",
    retirement_remaining: "RetirementTimeRemaining",
    graceful_completion: "ExpectedMachineGracefulDrainingCompletion",
    quick_completion: "ExpectedMachineQuickDrainingCompletion",
    graceful_badput: "ExpectedMachineGracefulDrainingBadput",
    quick_badput: "ExpectedMachineQuickDrainingBadput",
}

/// The names of the facts a refresh writes, made once (found in place
/// by pointer, and looked up without hashing their text when not).
struct FactNames {
    state: AttrName,
    activity: AttrName,
    entered_state: AttrName,
    entered_activity: AttrName,
    total_slots: AttrName,
    cpu_is_busy: AttrName,
    requirements: AttrName,
    current_rank: AttrName,
    remote_user: AttrName,
    remote_owner: AttrName,
    client_machine: AttrName,
    remote_schedd_name: AttrName,
    job_start: AttrName,
    job_id: AttrName,
    job_universe: AttrName,
}

fn fact_names() -> &'static FactNames {
    static NAMES: std::sync::OnceLock<FactNames> = std::sync::OnceLock::new();
    NAMES.get_or_init(|| FactNames {
        state: AttrName::new("State"),
        activity: AttrName::new("Activity"),
        entered_state: AttrName::new("EnteredCurrentState"),
        entered_activity: AttrName::new("EnteredCurrentActivity"),
        total_slots: AttrName::new("TotalSlots"),
        cpu_is_busy: AttrName::new("CpuIsBusy"),
        requirements: AttrName::new("Requirements"),
        current_rank: AttrName::new("CurrentRank"),
        remote_user: AttrName::new("RemoteUser"),
        remote_owner: AttrName::new("RemoteOwner"),
        client_machine: AttrName::new("ClientMachine"),
        remote_schedd_name: AttrName::new("RemoteScheddName"),
        job_start: AttrName::new("JobStart"),
        job_id: AttrName::new("JobId"),
        job_universe: AttrName::new("JobUniverse"),
    })
}

/// TotalTime<State><Activity>, slot<N>_<name> and vm<N>_<name>.
fn clock_prefixed(name: &str) -> bool {
    let after = |prefix: &str| {
        (name.len() > prefix.len()
            && name.as_bytes()[..prefix.len()].eq_ignore_ascii_case(prefix.as_bytes()))
        .then(|| &name.as_bytes()[prefix.len()..])
    };
    // slot<N>_<name> and vm<N>_<name> (STARTD_SLOT_ATTRS), not SlotID.
    let cross_slot = |prefix: &str| after(prefix).is_some_and(|r| r[0].is_ascii_digit());
    after("TotalTime").is_some() || cross_slot("slot") || cross_slot("vm")
}

/// Which of the clock's figures a refresh writes besides the slot's own.
#[derive(Clone, Copy, Debug)]
struct Clock {
    /// The draining estimates (and RetirementTimeRemaining).
    draining: bool,
    /// Other slots' figures (STARTD_SLOT_ATTRS).
    cross_slot: bool,
}

impl Clock {
    const ALL: Clock = Clock {
        draining: true,
        cross_slot: true,
    };
    /// Publishing refreshes every ad, estimates the draining figures from
    /// them and then writes those: written before as well, they would be
    /// written twice (the estimate reads the ad as the last publication
    /// left those figures).
    const BEFORE_ESTIMATE: Clock = Clock {
        draining: false,
        cross_slot: true,
    };
}

/// Which slots and ads a caller's copies were published from (see
/// [`Startd::republish`]); the default names none.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AdsEpoch(Option<u64>);

fn int(ad: &mut ClassAd, name: &str, v: i64) {
    ad.insert_value(name, v);
}

fn real(ad: &mut ClassAd, name: &str, v: f64) {
    ad.insert_value(name, v);
}

fn text(ad: &mut ClassAd, name: &str, v: &str) {
    ad.insert_value(name, v);
}

/// `START`, as a matchable slot's Requirements: made once (a clone shares
/// its name), not a new name for every refresh of every slot.
fn start_reference() -> &'static Expr {
    static START: std::sync::OnceLock<Expr> = std::sync::OnceLock::new();
    START.get_or_init(|| Expr::attr("START"))
}

/// Attributes a slot ad has only while there is a claim, a job or a drain;
/// removed from the persistent ad when there is none.
const CLAIM_ATTRS: &[&str] = &[
    "RemoteUser",
    "RemoteOwner",
    "ClientMachine",
    "RemoteScheddName",
    "TotalClaimRunTime",
    "TotalClaimSuspendTime",
];
const JOB_ATTRS: &[&str] = &[
    "JobStart",
    "TotalJobRunTime",
    "TotalJobSuspendTime",
    "JobId",
    "JobUniverse",
    "RetirementTimeRemaining",
    "ConcurrencyLimits",
];
const DRAIN_ATTRS: &[&str] = &["Draining", "DrainingRequestId", "DrainReason"];

/// Removes a group of attributes. The first of each group is always
/// published with the others, so its absence says none is there (one
/// lookup on every refresh of an idle slot instead of one per name).
fn remove_all(ad: &mut ClassAd, names: &[&str]) {
    if !names.first().is_some_and(|n| ad.contains(n)) {
        return;
    }
    // A removal looks the name up itself (no `contains` first).
    for n in names {
        ad.remove(n);
    }
}

/// Everything [`Startd::write_facts`] writes into a slot ad, as it was
/// when written: a refresh that finds the slot's facts equal to those the
/// ad was written under writes only what moves with the clock, one that
/// finds some [`Groups`] changed writes those. Numbers compare by their
/// bits (what prints); values that cannot be compared exactly (lists,
/// nested ads) never compare equal, so their group is rewritten every
/// time.
#[derive(Clone, Debug)]
pub(crate) struct Facts {
    pair: Pair,
    entered: (i64, i64),
    resources: SlotResources,
    provisioned: SlotResources,
    slots: usize,
    cpu_busy: bool,
    time_in: Vec<(Pair, i64)>,
    benchmark: (i64, Option<i64>, Option<i64>),
    rank: Option<u64>,
    latches: Vec<(String, Same, i64)>,
    claim: Option<[String; 3]>,
    job: Option<JobShown>,
    drain: (Option<i64>, Option<i64>, Option<(u64, String)>),
}

/// What the slot ad shows of the running job: JobStart, JobId,
/// JobUniverse, ConcurrencyLimits.
type JobShown = (i64, Option<String>, Option<i64>, Option<Same>);

/// A value compared exactly, for the literal kinds; any other kind never
/// equals anything.
#[derive(Clone, Debug)]
pub(crate) struct Same(Value);

impl Same {
    fn same(&self, other: &Value) -> bool {
        match (&self.0, other) {
            (Value::Int(x), Value::Int(y)) => x == y,
            (Value::Real(x), Value::Real(y)) => x.to_bits() == y.to_bits(),
            (Value::Str(x), Value::Str(y)) => x == y,
            (Value::Bool(x), Value::Bool(y)) => x == y,
            (Value::Undefined, Value::Undefined) | (Value::Error, Value::Error) => true,
            _ => false,
        }
    }
}

/// The groups of a slot's [`Facts`], each written by its own part of
/// [`Startd::write_facts`]: a slot's event (a claim, an activation, the
/// starter's exit) changes two or three of them, and a refresh of an ad
/// written under one of the few generations before writes only those (a
/// job's life settles its slot about eight times, each a rewrite of every
/// fact otherwise). Writing a group alone must give what writing all
/// gives: a group's attributes depend on its own facts only, or it is
/// written with what it depends on ([`Groups::written`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Groups(u16);

impl Groups {
    const NONE: Groups = Groups(0);
    /// State, Activity, the times they were entered, and Requirements
    /// (whether the slot is matchable is its state's).
    const PAIR: Groups = Groups(1);
    /// TotalTime<State><Activity> of the pairs before the current one:
    /// which those are is the pair's too (see [`Groups::written`]).
    const TIME_IN: Groups = Groups(1 << 1);
    /// The slot's resources, what it was provisioned, TotalSlots.
    const RESOURCES: Groups = Groups(1 << 2);
    const CPU_BUSY: Groups = Groups(1 << 3);
    const BENCHMARK: Groups = Groups(1 << 4);
    /// CurrentRank, the claim's rank.
    const RANK: Groups = Groups(1 << 5);
    const LATCHES: Groups = Groups(1 << 6);
    /// The claim's attributes, or their removal (CLAIM_ATTRS).
    const CLAIM: Groups = Groups(1 << 7);
    /// The running job's attributes, or their removal (JOB_ATTRS and
    /// STARTD_JOB_ATTRS).
    const JOB: Groups = Groups(1 << 8);
    /// The drain's attributes and the last drain's times.
    const DRAIN: Groups = Groups(1 << 9);
    const ALL: Groups = Groups((1 << 10) - 1);

    fn has(self, g: Groups) -> bool {
        self.0 & g.0 != 0
    }

    fn is_empty(self) -> bool {
        self.0 == 0
    }

    fn with(self, g: Groups, changed: bool) -> Groups {
        if changed {
            Groups(self.0 | g.0)
        } else {
            self
        }
    }

    /// The groups a refresh must write when these changed: a new pair
    /// makes the old one's time a past pair's and the new one's the
    /// clock's.
    fn written(self) -> Groups {
        self.with(Groups::TIME_IN, self.has(Groups::PAIR))
    }
}

impl std::ops::BitOr for Groups {
    type Output = Groups;
    fn bitor(self, other: Groups) -> Groups {
        Groups(self.0 | other.0)
    }
}

impl Facts {
    fn of(startd: &Startd, i: usize) -> Facts {
        // Every group taken by `update`, over empty places.
        let mut facts = Facts {
            pair: startd.slots[i].pair(),
            entered: (0, 0),
            resources: SlotResources::default(),
            provisioned: SlotResources::default(),
            slots: 0,
            cpu_busy: false,
            time_in: Vec::new(),
            benchmark: (0, None, None),
            rank: None,
            latches: Vec::new(),
            claim: None,
            job: None,
            drain: (None, None, None),
        };
        facts.update(startd, i, Groups::ALL);
        facts
    }

    /// Takes slot `i`'s facts of the `groups` given, leaving the others
    /// (a new generation copies only what changed).
    fn update(&mut self, startd: &Startd, i: usize, groups: Groups) {
        let s = &startd.slots[i];
        if groups.has(Groups::PAIR) {
            self.pair = s.pair();
            self.entered = (s.entered_state, s.entered_activity);
        }
        if groups.has(Groups::TIME_IN) {
            self.time_in.clone_from(&s.time_in);
        }
        if groups.has(Groups::RESOURCES) {
            self.resources.clone_from(&s.resources);
            self.provisioned.clone_from(&s.provisioned);
            self.slots = startd.slots.len();
        }
        if groups.has(Groups::CPU_BUSY) {
            self.cpu_busy = s.cpu_busy_since.is_some();
        }
        if groups.has(Groups::BENCHMARK) {
            self.benchmark = (s.last_benchmark, s.mips, s.kflops);
        }
        if groups.has(Groups::RANK) {
            self.rank = s.claim.as_ref().map(|c| c.rank.to_bits());
        }
        if groups.has(Groups::LATCHES) {
            self.latches = s
                .latches
                .iter()
                .map(|(n, v, t)| (n.clone(), Same(v.clone()), *t))
                .collect();
        }
        if groups.has(Groups::CLAIM) {
            self.claim = s
                .claim
                .as_ref()
                .map(|c| [c.user.clone(), c.owner.clone(), c.schedd.clone()]);
        }
        if groups.has(Groups::JOB) {
            self.job = match (&s.job, s.job_start) {
                (Some(_), Some(start)) => Some((
                    start,
                    s.job_facts.id.clone(),
                    s.job_facts.universe,
                    s.job_facts.concurrency_limits.clone().map(Same),
                )),
                _ => None,
            };
        }
        if groups.has(Groups::DRAIN) {
            self.drain = (
                startd.last_drain_start,
                startd.last_drain_stop,
                startd.drain.as_ref().map(|d| (d.id, d.reason.clone())),
            );
        }
    }

    /// Whether slot `i`'s facts are still these.
    fn hold(&self, startd: &Startd, i: usize) -> bool {
        self.differ(startd, i).is_empty()
    }

    /// Which groups of slot `i`'s facts differ from these: [`Facts::of`]
    /// compared group by group without building (no copy of a string or
    /// a list on every refresh).
    fn differ(&self, startd: &Startd, i: usize) -> Groups {
        let s = &startd.slots[i];
        let job = match (&s.job, s.job_start) {
            (Some(_), Some(start)) => Some(start),
            _ => None,
        };
        Groups::NONE
            .with(
                Groups::PAIR,
                self.pair != s.pair() || self.entered != (s.entered_state, s.entered_activity),
            )
            .with(Groups::TIME_IN, self.time_in != s.time_in)
            .with(
                Groups::RESOURCES,
                self.resources != s.resources
                    || self.provisioned != s.provisioned
                    || self.slots != startd.slots.len(),
            )
            .with(
                Groups::CPU_BUSY,
                self.cpu_busy != s.cpu_busy_since.is_some(),
            )
            .with(
                Groups::BENCHMARK,
                self.benchmark != (s.last_benchmark, s.mips, s.kflops),
            )
            .with(
                Groups::RANK,
                self.rank != s.claim.as_ref().map(|c| c.rank.to_bits()),
            )
            .with(
                Groups::LATCHES,
                self.latches.len() != s.latches.len()
                    || !self
                        .latches
                        .iter()
                        .zip(&s.latches)
                        .all(|((n, v, t), (n2, v2, t2))| n == n2 && v.same(v2) && t == t2),
            )
            .with(
                Groups::CLAIM,
                !match (&self.claim, &s.claim) {
                    (Some([user, owner, schedd]), Some(c)) => {
                        *user == c.user && *owner == c.owner && *schedd == c.schedd
                    }
                    (None, None) => true,
                    _ => false,
                },
            )
            .with(
                Groups::JOB,
                !match (&self.job, job) {
                    (Some((start, id, universe, limits)), Some(now_start)) => {
                        let f = &s.job_facts;
                        *start == now_start
                            && *id == f.id
                            && *universe == f.universe
                            && match (limits, &f.concurrency_limits) {
                                (Some(a), Some(b)) => a.same(b),
                                (None, None) => true,
                                _ => false,
                            }
                    }
                    (None, None) => true,
                    _ => false,
                },
            )
            .with(
                Groups::DRAIN,
                self.drain.0 != startd.last_drain_start
                    || self.drain.1 != startd.last_drain_stop
                    || !match (&self.drain.2, &startd.drain) {
                        (Some((id, reason)), Some(d)) => *id == d.id && *reason == d.reason,
                        (None, None) => true,
                        _ => false,
                    },
            )
    }
}

/// Where the two parts of a refresh started in a slot's ad last time.
///
/// The clock's figures are written in runs that sit apart in the ad: the
/// host's and the calendar's figures (from KeyboardIdle), TotalTime of
/// the current state and activity (first written where that pair was
/// current, or among the facts while it was a past one), CpuBusyTime, the
/// claim's and the job's times (written after them when a claim or a job
/// came), the draining figures. Each run has its own place, so each
/// starts without a lookup; a run that started at the wrong place would
/// cost two (there and back) for every refresh.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Places {
    facts: u32,
    clock: u32,
    pair_time: u32,
    cpu_busy: u32,
    claim: u32,
    job: u32,
    draining: u32,
}

impl Places {
    /// Writes a run with `w` from `place` on, and keeps where it began.
    fn run(place: &mut u32, w: &mut Refresher<'_>, write: impl FnOnce(&mut Refresher<'_>)) {
        w.seek(*place as usize);
        write(w);
        if let Some(first) = w.first() {
            *place = first as u32;
        }
    }
}

/// A slot's facts and the generation they were given, with the few
/// generations before and what changed since each: an ad written under
/// one of those needs only those groups written. A slot's own ad is
/// usually one generation behind when refreshed; a caller's copy that
/// publishing swaps back in, as many as the events between
/// publications.
#[derive(Clone, Debug)]
pub(crate) struct Generation {
    facts: Facts,
    generation: u64,
    /// The latest first; a generation of 0 is none (they start at 1).
    before: [(u64, Groups); 4],
}

impl Generation {
    /// The generation these facts were given.
    pub(crate) fn generation(&self) -> u64 {
        self.generation
    }

    /// What changed in these facts since generation `g`, if it is one of
    /// those kept.
    fn changed_since(&self, g: u64) -> Option<Groups> {
        self.before
            .iter()
            .find(|(k, _)| *k == g && g != 0)
            .map(|(_, changed)| *changed)
    }

    /// What an ad written under `stamp` holds stale of these facts as
    /// they were at this generation: nothing under it, what changed since
    /// under one of those kept, all otherwise.
    fn stale_since(&self, stamp: Option<u64>) -> Groups {
        match stamp {
            Some(g) if g == self.generation => Groups::NONE,
            Some(g) => self.changed_since(g).unwrap_or(Groups::ALL),
            None => Groups::ALL,
        }
    }

    /// The facts moved on to `generation`, `changed` having changed.
    fn advance(&mut self, generation: u64, changed: Groups) {
        self.before.rotate_right(1);
        self.before[0] = (self.generation, Groups::NONE);
        for (_, since) in &mut self.before {
            *since = *since | changed;
        }
        self.generation = generation;
    }
}

/// Whether a debug build checks this refresh that kept the facts, or
/// wrote only the groups that changed, against a whole one: one in
/// `REFRESH_CHECK_EVERY` (checking every one made the
/// simulator's tests five times slower), so a long test still has its
/// refreshes checked by the hundred.
#[cfg(debug_assertions)]
fn check_this_refresh() -> bool {
    static COUNT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(256);
    let every = REFRESH_CHECK_EVERY.load(std::sync::atomic::Ordering::Relaxed);
    every > 0
        && COUNT
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            .is_multiple_of(every)
}

/// How often a debug build checks a refresh that kept some or all of the
/// facts (see
/// `check_this_refresh`); a test may set 1 to check every one.
#[cfg(debug_assertions)]
pub static REFRESH_CHECK_EVERY: std::sync::atomic::AtomicU64 =
    std::sync::atomic::AtomicU64::new(256);

/// Two ads with the same attributes and values (debug builds' check of
/// [`Startd::refresh`]).
#[cfg(debug_assertions)]
fn assert_same_ads(full: &ClassAd, ad: &ClassAd) {
    let print = |ad: &ClassAd| {
        let mut v: Vec<String> = ad
            .iter_inserted()
            .map(|(n, e)| format!("{} = {e}", n.as_str().to_ascii_lowercase()))
            .collect();
        v.sort();
        v
    };
    let (a, b) = (print(full), print(ad));
    if a != b {
        let missing: Vec<_> = a.iter().filter(|x| !b.contains(x)).collect();
        let extra: Vec<_> = b.iter().filter(|x| !a.contains(x)).collect();
        panic!(
            "a refresh that kept facts left the ad stale: should have {missing:?}, has {extra:?}"
        );
    }
}

impl Startd {
    /// The ad of slot `i` at `now`: what it publishes, and where its policy
    /// is evaluated.
    pub fn slot_ad(&self, i: usize, now: i64) -> ClassAd {
        let s = &self.slots[i];
        let (mut ad, stamp) = if s.ad.is_empty() {
            (self.static_ad(i), None)
        } else {
            (s.ad.clone(), s.ad_stamp)
        };
        let stale = self.stale(i, stamp);
        self.refresh(i, now, &mut ad, stale, Clock::ALL);
        ad
    }

    /// Which groups of slot `i`'s facts an ad written under `stamp` holds
    /// stale: none when it holds them as they are now, all when what it
    /// was written under is not known.
    fn stale(&self, i: usize, stamp: Option<u64>) -> Groups {
        let Some(f) = &self.slots[i].facts else {
            return Groups::ALL;
        };
        // What changed up to the last generation, and since.
        match f.stale_since(stamp) {
            Groups::ALL => Groups::ALL,
            since => since | f.facts.differ(self, i),
        }
    }

    /// The machine's load from HTCondor's jobs: every slot's share.
    pub(crate) fn total_condor_load(&self) -> f64 {
        self.slots.iter().map(|s| s.condor_load_avg).sum()
    }

    /// Every slot's ad as the startd sends them to the collector, with the
    /// machine-wide figures (the draining estimates) brought up to date
    /// first. Polls do not compute those; publishing does.
    pub fn published_ads(&mut self, now: i64) -> Vec<ClassAd> {
        // Each slot's ad is refreshed once (a pool publishes every
        // UPDATE_INTERVAL, so this is the simulator's hottest path), the
        // estimates read those ads, and then only their figures are written
        // into them.
        for i in 0..self.slots.len() {
            let ad = self.take_ad_with(i, now, Clock::BEFORE_ESTIMATE);
            self.put_ad(i, ad);
        }
        self.estimate_draining(now);
        (0..self.slots.len())
            .map(|i| {
                let mut ad = std::mem::take(&mut self.slots[i].ad);
                let mut places = self.slots[i].places;
                self.publish_draining(i, now, &mut ad.refresher(), &mut places);
                self.slots[i].places = places;
                let out = ad.clone();
                let s = &mut self.slots[i];
                s.ad = ad;
                s.ad_generation = s.ad_stamp.unwrap_or_default();
                out
            })
            .collect()
    }

    /// What [`Startd::published_ads`] gives, with `extra` written over
    /// each ad, into the caller's copies (`ads`, as the last call left
    /// them with `epoch`), without copying an ad.
    ///
    /// A startd keeps each slot's ad between polls; a caller that keeps
    /// what it was sent (a collector) holds a second copy, which is stale
    /// once the slot changes. Publishing swaps the two: the slot's ad,
    /// brought up to date, goes to the caller, and the caller's old copy
    /// becomes the slot's ad, stale until the next refresh writes every
    /// attribute that changes over it (every refresh does, before the ad
    /// is read). A copy is reused only under the epoch it was published
    /// in: the same slots, the same unchanging part. Copying a hundred
    /// attributes (the policy's expressions among them) per slot and
    /// update was most of what publishing cost a large simulated pool.
    ///
    /// `extra` is what the caller adds that the startd does not publish
    /// itself (the simulator's starter attributes): taken out of a reused
    /// copy again (or given back the startd's own value) before it serves
    /// as the slot's ad, so the policy never sees it.
    ///
    /// `ads` must be what this startd's last `republish` left (or empty,
    /// with `epoch` at its default); any other ads are not reused, only
    /// replaced.
    pub fn republish(
        &mut self,
        now: i64,
        extra: &ClassAd,
        ads: &mut Vec<ClassAd>,
        epoch: &mut AdsEpoch,
    ) {
        // With every running job's grants kept, the estimate needs no ad:
        // it is made first, and each ad is brought up to date once, the
        // draining figures with the rest of the clock's.
        let estimated = self.all_grants_kept();
        if estimated {
            self.estimate_draining(now);
        }
        for i in 0..self.slots.len() {
            let parts = if estimated {
                Clock::ALL
            } else {
                Clock::BEFORE_ESTIMATE
            };
            // The facts of the slots running a job were just found current;
            // those of quiet slots cannot have moved.
            let generation = match (&self.slots[i].facts, self.slots[i].job.is_some()) {
                (Some(f), true) if estimated => f.generation(),
                _ => match self.quiet_generation(i) {
                    Some(g) => g,
                    None => self.current_generation(i),
                },
            };
            let ad = self.take_ad_under(i, now, parts, generation);
            self.put_ad(i, ad);
        }
        if !estimated {
            self.estimate_draining(now);
        }
        let reuse = *epoch == AdsEpoch(Some(self.ads_epoch))
            && ads.len() == self.slots.len()
            && self.published_stamps.len() == self.slots.len();
        if !reuse {
            ads.clear();
            self.published_stamps.clear();
        }
        for i in 0..self.slots.len() {
            let mut ad = std::mem::take(&mut self.slots[i].ad);
            if !estimated {
                let mut places = self.slots[i].places;
                self.publish_draining(i, now, &mut ad.refresher(), &mut places);
                self.slots[i].places = places;
            }
            let stamp = self.slots[i].ad_stamp;
            self.slots[i].ad_generation = stamp.unwrap_or_default();
            let own = if reuse {
                // The caller's old copy becomes the slot's ad, with the
                // generation it was written under.
                self.slots[i].ad_stamp = std::mem::replace(&mut self.published_stamps[i], stamp);
                let mut old = std::mem::take(&mut ads[i]);
                for (name, _) in extra.iter_inserted() {
                    match ad.get(name.as_str()) {
                        Some(e) => old.insert(name.clone(), e.clone()),
                        None => {
                            old.remove(name.as_str());
                        }
                    }
                }
                ad.update(extra);
                ads[i] = ad;
                old
            } else {
                let mut out = ad.clone();
                out.update(extra);
                ads.push(out);
                self.published_stamps.push(stamp);
                ad
            };
            self.slots[i].ad = own;
        }
        *epoch = AdsEpoch(Some(self.ads_epoch));
    }

    /// Slot `i`'s ad's generation: two ads of slot `i` published with the
    /// same generation (by [`Startd::republish`] or
    /// [`Startd::published_ads`]) are the same in every attribute except
    /// those for which [`changes_with_time`] is true. Generations are
    /// unique in the process: no two slots share one. A caller that keeps
    /// what it derived from a slot ad (the negotiator's slot classes) may
    /// keep it while the generation stays, if it read no such attribute.
    pub fn ad_generation(&self, i: usize) -> u64 {
        self.slots[i].ad_generation
    }

    /// Slot `i`'s own ad, brought up to date and lent out (the engine's
    /// hot path: no copy of the policy's expressions). Give it back with
    /// [`Startd::put_ad`].
    pub(crate) fn take_ad(&mut self, i: usize, now: i64) -> ClassAd {
        self.take_ad_with(i, now, Clock::ALL)
    }

    /// [`Startd::take_ad`], with only `parts` of the clock's figures.
    fn take_ad_with(&mut self, i: usize, now: i64, parts: Clock) -> ClassAd {
        let generation = self.current_generation(i);
        self.take_ad_under(i, now, parts, generation)
    }

    /// [`Startd::take_ad_with`], the facts' current generation known.
    fn take_ad_under(&mut self, i: usize, now: i64, parts: Clock, generation: u64) -> ClassAd {
        let s = &mut self.slots[i];
        let mut ad = std::mem::take(&mut s.ad);
        let mut stamp = s.ad_stamp;
        if ad.is_empty() {
            ad = self.static_ad(i);
            stamp = None;
        }
        // Written under this generation, or under one of the few before
        // (the slot's own ad, or a caller's copy published under it): only
        // what changed since is written.
        let stale = match &self.slots[i].facts {
            Some(f) if f.generation == generation => f.stale_since(stamp),
            _ if stamp == Some(generation) => Groups::NONE,
            _ => Groups::ALL,
        };
        let places = self.refresh(i, now, &mut ad, stale, parts);
        self.slots[i].places = places;
        self.slots[i].ad_stamp = Some(generation);
        ad
    }

    /// Whether slot `i`'s facts are those of its last generation.
    pub(crate) fn facts_hold(&self, i: usize) -> bool {
        self.slots[i]
            .facts
            .as_ref()
            .is_some_and(|f| f.facts.hold(self, i))
    }

    /// The generation of slot `i`'s facts as they are now: the one they
    /// had if nothing changed, else a new one.
    pub(crate) fn current_generation(&mut self, i: usize) -> u64 {
        let generation;
        match self.slots[i].facts.take() {
            Some(mut f) => {
                let changed = f.facts.differ(self, i);
                if changed.is_empty() {
                    let kept = f.generation;
                    self.slots[i].facts = Some(f);
                    return kept;
                }
                // Only what changed is copied into the snapshot.
                generation = new_generation();
                f.facts.update(self, i, changed);
                f.advance(generation, changed);
                self.slots[i].facts = Some(f);
            }
            None => {
                generation = new_generation();
                let facts = Facts::of(self, i);
                self.slots[i].facts = Some(Box::new(Generation {
                    facts,
                    generation,
                    before: [(0, Groups::ALL); 4],
                }));
            }
        }
        generation
    }

    pub(crate) fn put_ad(&mut self, i: usize, ad: ClassAd) {
        self.slots[i].ad = ad;
    }

    /// Sets the URL schemes the slots advertise (HasFileTransferPluginMethods).
    pub fn set_file_transfer_methods(&mut self, methods: Option<String>) {
        self.machine.file_transfer_methods = methods;
        self.invalidate_ads();
    }

    /// Forgets every slot's ad, so the next use builds it again (after a
    /// reconfiguration, or when draining changes START).
    pub(crate) fn invalidate_ads(&mut self) {
        for s in &mut self.slots {
            s.ad = ClassAd::new();
            s.ad_stamp = None;
        }
        self.published_stamps.clear();
        self.slots_changed();
    }

    /// The slots or what their ads are built from changed: callers' copies
    /// of the ads are not reused (`ads_epoch`), and no slot stays quiet
    /// (what its policy was judged on may have changed).
    pub(crate) fn slots_changed(&mut self) {
        self.ads_epoch += 1;
        self.quiet_epoch += 1;
    }

    /// What does not change from poll to poll: names, the machine, the
    /// policy's expressions, STARTD_ATTRS.
    fn static_ad(&self, i: usize) -> ClassAd {
        let s = &self.slots[i];
        let m = &self.machine;
        let mut ad = ClassAd::new();
        text(&mut ad, "MyType", "Machine");
        text(&mut ad, "TargetType", "Job");
        text(&mut ad, "Name", &format!("{}@{}", s.name, m.startd_name));
        text(&mut ad, "Machine", &m.hostname);
        int(&mut ad, "SlotID", s.id as i64);
        // The 6.8 name, so that old policies run unchanged.
        int(&mut ad, "VirtualMachineID", s.id as i64);
        if let Some(t) = s.slot_type {
            int(&mut ad, "SlotTypeID", t as i64);
        }
        match &s.kind {
            SlotKind::Static => text(&mut ad, "SlotType", "Static"),
            SlotKind::Partitionable => {
                ad.insert_value("PartitionableSlot", true);
                text(&mut ad, "SlotType", "Partitionable");
            }
            SlotKind::Dynamic { parent, sub_id } => {
                ad.insert_value("DynamicSlot", true);
                text(&mut ad, "SlotType", "Dynamic");
                text(
                    &mut ad,
                    "ParentSlotName",
                    &format!("{parent}@{}", m.startd_name),
                );
                int(&mut ad, "DSlotId", *sub_id as i64);
            }
        }
        text(&mut ad, "Arch", &m.arch);
        text(&mut ad, "OpSys", &m.opsys);
        text(&mut ad, "OpSysAndVer", &m.opsys_and_ver);
        // Jobs' default Requirements ask for a shared file system or file
        // transfer; the starter transfers files.
        ad.insert_value("HasFileTransfer", true);
        if let Some(methods) = &m.file_transfer_methods {
            text(&mut ad, "HasFileTransferPluginMethods", methods);
        }
        if let Some(d) = &m.filesystem_domain {
            text(&mut ad, "FileSystemDomain", d);
        }
        if let Some(d) = &m.uid_domain {
            text(&mut ad, "UidDomain", d);
        }
        match &self.resources {
            Some(machine) => ad.update(&machine.machine_attrs()),
            None => {
                real(&mut ad, "TotalCpus", m.total_cpus);
                int(&mut ad, "TotalMemory", m.total_memory);
                int(&mut ad, "TotalDisk", m.total_disk);
            }
        }
        // The policy, under its own names, so expressions can refer to one
        // another (the desktop PREEMPT reads SUSPEND and WANT_SUSPEND).
        for (name, e) in &s.policy.exprs {
            if let Some(e) = e {
                ad.insert(*name, e.clone());
            }
        }
        // START is published as Start; while draining it is the drain's own
        // start expression (false unless the drain gave one), and false
        // while a VM-host peer runs a job.
        ad.insert("Start", self.start_expr(i));
        ad.insert(
            "Rank",
            s.policy
                .rank
                .clone()
                .unwrap_or_else(|| Expr::from_value(Value::Real(0.0))),
        );
        if let Some(w) = &s.policy.slot_weight {
            ad.insert("SlotWeight", w.clone());
        }
        // A partitionable slot under a consumption policy says what a
        // match takes of each resource, so the negotiator can match it to
        // several jobs in one cycle.
        if let Some(policy) = self
            .partitionables
            .get(&s.name)
            .and_then(|p| p.consumption.as_ref())
        {
            for (name, e) in policy {
                ad.insert(format!("Consumption{name}").as_str(), e.clone());
            }
        }
        for (name, e) in &s.policy.startd_attrs {
            ad.insert(name.as_str(), e.clone());
        }
        // On an inner virtual machine, the host's attributes (`vm_host`).
        for (name, e) in &self.vm_peers.host_attrs {
            ad.insert(name.as_str(), e.clone());
        }
        ad
    }

    /// The draining figures (machine-wide, from the last estimate) and the
    /// running job's retirement time remaining.
    fn publish_draining(&self, i: usize, now: i64, w: &mut Refresher<'_>, places: &mut Places) {
        let n = clock_names();
        let s = &self.slots[i];
        match (s.job.is_some(), s.retirement_remaining) {
            (true, Some(r)) => {
                // Written when the job came, after the job's times.
                w.value_named(&n.retirement_remaining, r)
            }
            // Without a job the facts' part has taken it out with the
            // job's other attributes (no lookup on every refresh).
            (false, _) => {}
            (true, None) if w.ad().contains("RetirementTimeRemaining") => {
                w.ad().remove("RetirementTimeRemaining");
            }
            (true, None) => {}
        }
        let f = &self.drain_figures;
        Places::run(&mut places.draining, w, |w| {
            w.value_named(&n.graceful_completion, f.graceful_completion.max(now));
            w.value_named(&n.graceful_badput, f.graceful_badput);
            w.value_named(&n.quick_completion, f.quick_completion.max(now));
            w.value_named(&n.quick_badput, f.quick_badput);
        });
    }

    /// Brings slot `i`'s ad up to date at `now`. What moves only when the
    /// startd's state does (the state, the readings, the claim and its job,
    /// resources, drain) is written where `stale` says the ad does not
    /// hold the slot's current facts (see [`Facts`], [`Groups`]); the
    /// figures that move with the clock are written every time, after it.
    /// A pool of thousands of slots polls and publishes each every few
    /// minutes, and most of those refreshes find nothing but the clock
    /// changed.
    ///
    /// Each part starts where it was found last time (`Slot::places`),
    /// and where each was found now is returned: a lookup by name costs
    /// more than all the writes after it that land in place.
    fn refresh(&self, i: usize, now: i64, ad: &mut ClassAd, stale: Groups, parts: Clock) -> Places {
        #[cfg(debug_assertions)]
        let before = (stale != Groups::ALL && check_this_refresh()).then(|| ad.clone());
        let mut places = self.slots[i].places;
        let mut w = ad.refresher();
        if !stale.is_empty() {
            w.seek(places.facts as usize);
            let groups = if stale == Groups::ALL {
                Groups::ALL
            } else {
                stale.written()
            };
            places.facts = self.write_facts(i, &mut w, groups, places.facts as usize) as u32;
        }
        self.write_clock(i, now, &mut w, parts, &mut places);
        // Tests (debug builds) check that skipping facts changed nothing:
        // a fact the comparison misses, or a group written without one it
        // depends on, would leave a stale value.
        #[cfg(debug_assertions)]
        if let Some(mut full) = before {
            let mut w = full.refresher();
            self.write_facts(i, &mut w, Groups::ALL, 0);
            self.write_clock(i, now, &mut w, parts, &mut Places::default());
            assert_same_ads(&full, ad);
        }
        places
    }

    /// What slot `i`'s ad says that moves only when the startd's state
    /// does (see [`Facts`]; a change here must show there), of the
    /// `groups` given, always in the same order: a refresh writing only
    /// some adds a new attribute where a whole one would.
    /// Returns where the first (State) landed, `at` if it was not written.
    fn write_facts(&self, i: usize, w: &mut Refresher<'_>, groups: Groups, at: usize) -> usize {
        let s = &self.slots[i];
        let n = fact_names();
        let mut at = at;
        // Written in the same order every time, so each lands in place.
        if groups.has(Groups::PAIR) {
            w.value_named(&n.state, s.state.value());
            at = w.last();
            w.value_named(&n.activity, s.activity.value());
            w.value_named(&n.entered_state, s.entered_state);
            w.value_named(&n.entered_activity, s.entered_activity);
        }
        if groups.has(Groups::RESOURCES) {
            match &self.resources {
                Some(machine) => s.resources.publish(&s.provisioned, machine, w),
                None => {
                    w.value("Cpus", s.resources.whole_cpus());
                    w.value("Memory", s.resources.memory);
                    w.value("Disk", s.resources.disk);
                }
            }
            w.value_named(&n.total_slots, self.slots.len() as i64);
        }
        if groups.has(Groups::CPU_BUSY) {
            w.value_named(&n.cpu_is_busy, s.cpu_busy_since.is_some());
        }
        if groups.has(Groups::TIME_IN) {
            // TotalTime<State><Activity> of the pairs before the current
            // one (the current one moves with the clock).
            let current = s.pair();
            for (pair, secs) in &s.time_in {
                if *pair != current {
                    w.value_named(pair.total_time_name(), *secs);
                }
            }
        }
        if groups.has(Groups::BENCHMARK) {
            w.value("LastBenchmark", s.last_benchmark);
            if let Some(v) = s.mips {
                w.value("Mips", v);
            }
            if let Some(v) = s.kflops {
                w.value("KFlops", v);
            }
        }
        if groups.has(Groups::PAIR) {
            // Not matchable while Matched, Preempting or Drained; otherwise
            // Requirements is START, as HTCondor publishes it.
            let not_matchable =
                matches!(s.state, State::Matched | State::Preempting | State::Drained);
            w.expr_named(
                &n.requirements,
                if not_matchable {
                    Expr::from_value(Value::Bool(false))
                } else {
                    start_reference().clone()
                },
            );
        }
        if groups.has(Groups::RANK) {
            w.value_named(&n.current_rank, s.claim.as_ref().map_or(0.0, |c| c.rank));
        }
        if groups.has(Groups::LATCHES) {
            for (name, value, changed) in &s.latches {
                w.value(&format!("{name}Value"), value.clone());
                w.value(&format!("{name}Time"), *changed);
            }
        }

        // The claim and its job.
        if groups.has(Groups::CLAIM) {
            self.write_claim(i, w);
        }
        if groups.has(Groups::JOB) {
            self.write_job(i, w);
        }
        if groups.has(Groups::DRAIN) {
            self.write_drain(w);
        }
        at
    }

    /// The claim's part of [`Startd::write_facts`].
    fn write_claim(&self, i: usize, w: &mut Refresher<'_>) {
        let s = &self.slots[i];
        let n = fact_names();
        match &s.claim {
            Some(c) => {
                w.text_named(&n.remote_user, c.user.as_str());
                w.text_named(&n.remote_owner, c.owner.as_str());
                w.text_named(&n.client_machine, c.schedd.as_str());
                w.text_named(&n.remote_schedd_name, c.schedd.as_str());
            }
            None => remove_all(w.ad(), CLAIM_ATTRS),
        }
    }

    /// The running job's part of [`Startd::write_facts`].
    fn write_job(&self, i: usize, w: &mut Refresher<'_>) {
        let s = &self.slots[i];
        let n = fact_names();
        match (&s.job, s.job_start) {
            (Some(_), Some(start)) => {
                w.value_named(&n.job_start, start);
                let facts = &s.job_facts;
                if let Some(id) = &facts.id {
                    w.text_named(&n.job_id, id);
                }
                if let Some(u) = facts.universe {
                    w.value_named(&n.job_universe, u);
                }
                // The running job's concurrency limits: the negotiator
                // counts limits in use from the slot ads.
                if let Some(l) = &facts.concurrency_limits {
                    w.value("ConcurrencyLimits", l.clone());
                } else if w.ad().contains("ConcurrencyLimits") {
                    w.ad().remove("ConcurrencyLimits");
                }
            }
            _ => {
                remove_all(w.ad(), JOB_ATTRS);
                for name in &s.policy.job_attrs {
                    if w.ad().contains(name) {
                        w.ad().remove(name);
                    }
                }
            }
        }
    }

    /// The drain's part of [`Startd::write_facts`].
    fn write_drain(&self, w: &mut Refresher<'_>) {
        if let Some(t) = self.last_drain_start {
            w.value("LastDrainStartTime", t);
        }
        if let Some(t) = self.last_drain_stop {
            w.value("LastDrainStopTime", t);
        }
        match &self.drain {
            Some(d) => {
                w.value("Draining", true);
                w.value("DrainingRequestId", d.id as i64);
                // As HTCondor's startd: condor_drain's -reason, else "by USER".
                w.value("DrainReason", d.reason.as_str());
            }
            None => remove_all(w.ad(), DRAIN_ATTRS),
        }
    }

    /// The figures of slot `i`'s ad that move with the clock alone (what
    /// [`changes_with_time`] names), written at every refresh.
    /// Each run of them starts at its place in `places`.
    fn write_clock(
        &self,
        i: usize,
        now: i64,
        w: &mut Refresher<'_>,
        parts: Clock,
        places: &mut Places,
    ) {
        let n = clock_names();
        let s = &self.slots[i];
        let m = &self.machine;
        Places::run(&mut places.clock, w, |w| {
            // What the host says, as this slot sees it.
            let (keyboard, console) = self.idle_times(i, now);
            w.value_named(&n.keyboard_idle, keyboard);
            w.value_named(&n.console_idle, console);
            // The load averages move at every poll while a job runs.
            w.value_named(&n.load_avg, s.load_avg);
            w.value_named(&n.condor_load_avg, s.condor_load_avg);
            w.value_named(&n.total_load_avg, self.readings.load_avg);
            w.value_named(&n.total_condor_load_avg, self.total_condor_load());
            let local = now + m.utc_offset as i64;
            w.value_named(&n.clock_min, local.rem_euclid(86_400) / 60);
            // 1970-01-01 was a Thursday (day 4, Sunday being 0).
            w.value_named(&n.clock_day, (local.div_euclid(86_400) + 4).rem_euclid(7));
        });
        // TotalTime<State><Activity> of the current pair: all time in it,
        // this stay included so far.
        let current = s.pair();
        let before = s
            .time_in
            .iter()
            .find(|(p, _)| *p == current)
            .map_or(0, |(_, secs)| *secs);
        Places::run(&mut places.pair_time, w, |w| {
            w.value_named(current.total_time_name(), before + now - s.entered_activity)
        });
        // Without a CpuBusy latch, CpuBusyTime is how long the CPU has been
        // busy (the 6.8 meaning the Bologna policy reads); with one, the
        // latch publishes the time it last changed instead.
        if !s
            .latches
            .iter()
            .any(|(n, _, _)| n.eq_ignore_ascii_case("CpuBusy"))
        {
            Places::run(&mut places.cpu_busy, w, |w| {
                w.value_named(&n.cpu_busy_time, s.cpu_busy_since.map_or(0, |t| now - t))
            });
        }
        if let Some(c) = &s.claim {
            Places::run(&mut places.claim, w, |w| {
                w.value_named(&n.total_claim_run_time, c.run_time + s.job_run_time(now));
                w.value_named(
                    &n.total_claim_suspend_time,
                    c.suspend_time
                        + s.job_suspended_total
                        + s.suspended_since.map_or(0, |t| now - t),
                );
            });
        }
        if let (Some(job), Some(_)) = (&s.job, s.job_start) {
            Places::run(&mut places.job, w, |w| {
                w.value_named(&n.total_job_run_time, s.job_run_time(now));
                w.value_named(
                    &n.total_job_suspend_time,
                    s.job_suspended_total + s.suspended_since.map_or(0, |t| now - t),
                );
                // STARTD_JOB_ATTRS: the job's own expressions, as they are now.
                for name in &s.policy.job_attrs {
                    match job.get(name) {
                        Some(e) => w.expr(name.as_str(), e.clone()),
                        None if w.ad().contains(name) => {
                            w.ad().remove(name);
                        }
                        None => {}
                    }
                }
            });
        }
        if parts.draining {
            self.publish_draining(i, now, w, places);
        }
        // Other slots' attributes, as STARTD_SLOT_ATTRS asks (also under
        // the 6.8 `vm<N>_` names).
        if parts.cross_slot && !s.policy.slot_attrs.is_empty() {
            let env = self.env(now);
            for (j, other) in self.slots.iter().enumerate() {
                for name in &s.policy.slot_attrs {
                    let v = if j == i {
                        w.ad().eval_attr(name, &env)
                    } else {
                        let mut other_ad = if other.ad.is_empty() {
                            self.static_ad(j)
                        } else {
                            other.ad.clone()
                        };
                        let stale = if other.ad.is_empty() {
                            Groups::ALL
                        } else {
                            self.stale(j, other.ad_stamp)
                        };
                        let parts = Clock {
                            cross_slot: false,
                            ..Clock::ALL
                        };
                        self.refresh(j, now, &mut other_ad, stale, parts);
                        other_ad.eval_attr(name, &env)
                    };
                    w.value(&format!("slot{}_{name}", other.id), v.clone());
                    w.value(&format!("vm{}_{name}", other.id), v);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::changes_with_time;
    use crate::engine::{Drain, DrainHow};
    use crate::test_support::{startd, T0};
    use crate::{Readings, Startd};

    /// The engine forgets every ad when a drain begins or ends (START
    /// changes with it), so no event leaves the drain's group the only one
    /// to write; written alone all the same, it must be right.
    #[test]
    fn the_drain_s_facts_written_alone_are_what_a_whole_rewrite_writes() {
        #[cfg(debug_assertions)]
        super::REFRESH_CHECK_EVERY.store(1, std::sync::atomic::Ordering::Relaxed);
        let mut s = startd("");
        s.tick(
            T0,
            Readings {
                keyboard_idle: 3600,
                console_idle: 3600,
                load_avg: 0.0,
                condor_load: Vec::new(),
            },
        );
        let env = classad::Env::default();
        let refreshed = |s: &mut Startd, now: i64| {
            let ad = s.take_ad(0, now);
            let seen = [
                "Draining",
                "DrainReason",
                "LastDrainStartTime",
                "LastDrainStopTime",
            ]
            .map(|n| ad.eval_attr(n, &env).to_string());
            s.put_ad(0, ad);
            seen
        };
        refreshed(&mut s, T0 + 1);
        s.last_drain_start = Some(T0 + 2);
        s.drain = Some(Drain {
            id: 1,
            how: DrainHow::Graceful,
            resume_on_completion: false,
            start_expr: None,
            reason: "by test".into(),
            complete: false,
        });
        assert_eq!(
            refreshed(&mut s, T0 + 3),
            ["true", "\"by test\"", "1700000002", "undefined"]
        );
        s.drain = None;
        s.last_drain_stop = Some(T0 + 4);
        assert_eq!(
            refreshed(&mut s, T0 + 5),
            ["undefined", "undefined", "1700000002", "1700000004"]
        );
    }

    #[test]
    fn the_figures_that_move_with_the_clock_are_named() {
        for n in [
            "KeyboardIdle",
            "consoleidle",
            "TotalTimeClaimedBusy",
            "slot2_State",
            "vm1_Activity",
            "TotalCondorLoadAvg",
            "ExpectedMachineQuickDrainingBadput",
        ] {
            assert!(changes_with_time(n), "{n}");
        }
        for n in [
            "SlotID",
            "SlotType",
            "State",
            "Memory",
            "TotalTime",
            "CpuIsBusy",
            "vm",
        ] {
            assert!(!changes_with_time(n), "{n}");
        }
    }
}
