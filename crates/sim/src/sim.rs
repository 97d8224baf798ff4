//! The discrete-event loop: the real cores on a virtual clock.
//!
//! Every machine is a `startd::Startd`, polled every POLLING_INTERVAL with
//! readings made from its owner's scripted or random activity; every
//! access point is a `schedd::JobQueue`; the central manager is the
//! `negotiator`'s cycle with its `Accountant` and `ConcurrencyLimits`, run
//! every NEGOTIATOR_INTERVAL over the slot ads the startds last published
//! (refreshed on a state change, and every UPDATE_INTERVAL, as a startd
//! updates the collector). The simulator plays the parts that are not
//! cores: the schedd's claiming and activation (with claim reuse, as the
//! schedd runs another idle job of the same submitter on a claim it holds),
//! its keep-alives, the shadow and starter (a job "runs" for its run time
//! unless suspended or evicted first), and carrying out every action the
//! startd asks for.
//!
//! Determinism: events are ordered by time, then by the order they were
//! scheduled; every map that can reach the report is a `BTreeMap`; the
//! only randomness is [`SplitMix64`] seeded from the scenario. Same
//! scenario, same seed: the same report, byte for byte.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use rustc_hash::FxHashMap;

use classad::{ClassAd, Env, Value};
use config::{Config, FileError, FixedHost, LoadOptions, Root};
use negotiator::accountant::Accountant;
use negotiator::autocluster_ids::AutoclusterIds;
use negotiator::cycle::{MatchKind, Policy, SlotGenerations};
use negotiator::defrag::{Defrag, DefragPolicy, Schedule};
use negotiator::limits::ConcurrencyLimits;
use negotiator::matchmaker::{Negotiator, Offer, Request};
use schedd::claims::{self, Claims, MatchInfo, RunEnd, StarterReport};
use schedd::{
    Change, ExitHow, JobEvent, JobId, JobQueue, JobStatus, RunReport, SubmitPolicy, SystemPolicy,
};
use startd::resources::HostReadings;
use startd::{Action, Activity, AdsEpoch, Cause, Event, Pair, Readings, Ready, Startd, State};

use crate::calendar::Calendar;
use crate::report::{JobRecord, Report, Sample, TransitionRecord};
use crate::rng::SplitMix64;
use crate::scenario::{
    Activity as OwnerActivity, AdminCommand, DrainSpeed, Scenario, SimError, Source,
};

/// Where the simulator reads configuration files and submit descriptions.
/// The CLI implements it over the disk; tests use [`MemFiles`].
pub trait Files {
    fn read(&self, path: &str) -> Result<String, FileError>;
}

/// Files held in memory, by path.
#[derive(Clone, Debug, Default)]
pub struct MemFiles {
    pub files: BTreeMap<String, String>,
}

impl MemFiles {
    pub fn new() -> MemFiles {
        MemFiles::default()
    }

    pub fn with(mut self, path: &str, text: &str) -> MemFiles {
        self.files.insert(path.to_string(), text.to_string());
        self
    }
}

impl Files for MemFiles {
    fn read(&self, path: &str) -> Result<String, FileError> {
        self.files.get(path).cloned().ok_or(FileError::NotFound)
    }
}

/// The configuration loader's view: the made-up root file in memory,
/// everything else through the scenario's files.
struct ConfigFiles<'a> {
    files: &'a dyn Files,
    root_path: String,
    root: String,
}

impl config::Files for ConfigFiles<'_> {
    fn read(&self, path: &str) -> Result<String, FileError> {
        if path == self.root_path {
            return Ok(self.root.clone());
        }
        self.files.read(path)
    }
    fn list_dir(&self, _path: &str) -> Result<Vec<String>, FileError> {
        Err(FileError::NotFound)
    }
    fn run(&self, command: &str) -> Result<String, String> {
        Err(format!("the simulator runs no commands: {command}"))
    }
}

/// condor_submit's view of the files: sizes are the texts' lengths.
struct SubmitFiles<'a>(&'a dyn Files);

impl submit::Files for SubmitFiles<'_> {
    fn size(&self, path: &str) -> Option<u64> {
        self.0.read(path).ok().map(|t| t.len() as u64)
    }
    fn list_dir(&self, _path: &str) -> Result<Vec<submit::DirEntry>, FileError> {
        Err(FileError::NotFound)
    }
    fn read(&self, path: &str) -> Result<String, FileError> {
        self.0.read(path)
    }
}

/// Loads the configuration made of `sources`, in order, for `subsystem`,
/// as a root file that includes each file and holds each text.
fn load_config(
    scenario: &Scenario,
    files: &dyn Files,
    subsystem: &str,
    name: &str,
    sources: &[&Source],
    host: &FixedHost,
) -> Result<Config, SimError> {
    let mut root = String::new();
    for s in sources {
        match s {
            Source::File(p) => root.push_str(&format!("include : {}\n", scenario.resolve(p))),
            Source::Text(t) => {
                root.push_str(t);
                root.push('\n');
            }
        }
    }
    let root_path = format!("/ferrocondor-simulate/{name}.conf");
    let cf = ConfigFiles {
        files,
        root_path: root_path.clone(),
        root,
    };
    config::load(
        &LoadOptions::new(subsystem, Root::File(root_path)),
        &cf,
        host,
    )
    .map_err(|e| SimError(format!("configuration of {name}: {e}")))
}

fn host_macros(hostname: &str, cpus: u32, memory: i64) -> FixedHost {
    let short = hostname.split('.').next().unwrap_or(hostname);
    FixedHost::empty()
        .with_macro("FULL_HOSTNAME", hostname)
        .with_macro("HOSTNAME", short)
        .with_macro("DETECTED_CORES", &cpus.to_string())
        .with_macro("DETECTED_CPUS", &cpus.to_string())
        .with_macro("DETECTED_PHYSICAL_CPUS", &cpus.to_string())
        .with_macro("DETECTED_MEMORY", &memory.to_string())
        .with_macro("ARCH", "X86_64")
        .with_macro("OPSYS", "LINUX")
        .with_macro("OPSYSANDVER", "AlmaLinux9")
        .with_macro("OPSYS_AND_VER", "AlmaLinux9")
}

fn interval(scenario: &Scenario, config: &Config, name: &str, default: i64) -> i64 {
    if let Some(v) = scenario.intervals.get(name) {
        return *v;
    }
    config
        .duration(name)
        .ok()
        .flatten()
        .filter(|v| *v > 0)
        .unwrap_or(default)
}

/// What a real startd learns from its starter and publishes in every slot
/// ad: `HasFileTransfer`, `FileSystemDomain` and `UidDomain`. Without them
/// no job condor_submit makes can match (its Requirements read them). The
/// `startd` core publishes them itself now, from FILESYSTEM_DOMAIN and
/// UID_DOMAIN; what it says alike is dropped from these (`not_published`).
fn starter_attrs(config: &Config, hostname: &str) -> ClassAd {
    let get = |name: &str| {
        config
            .get(name)
            .ok()
            .flatten()
            .unwrap_or_else(|| hostname.to_string())
    };
    let mut ad = ClassAd::new();
    ad.insert_value("HasFileTransfer", true);
    ad.insert_value("FileSystemDomain", get("FILESYSTEM_DOMAIN").as_str());
    ad.insert_value("UidDomain", get("UID_DOMAIN").as_str());
    ad
}

/// What of `extra` the startd's slot ads do not already say alike: the
/// rest need not be written over every ad at every update (they were
/// most of an update's cost in a large pool). Copies of `startd` on other
/// hosts agree too: both sides give a domain that was the host's name the
/// new host's.
fn not_published(mut extra: ClassAd, startd: &Startd, now: i64) -> ClassAd {
    let Some(own) = startd
        .slots()
        .first()
        .and_then(|s| startd.ad_of(&s.name, now))
    else {
        return extra;
    };
    let alike: Vec<String> = extra
        .iter_inserted()
        .filter(|(name, e)| {
            own.get(name.as_str())
                .is_some_and(|mine| mine.to_string() == e.to_string())
        })
        .map(|(name, _)| name.as_str().to_string())
        .collect();
    for name in alike {
        extra.remove(&name);
    }
    extra
}

/// The owner's use of one machine: (from, to, keyboard, load), absolute.
type Busy = (i64, i64, bool, f64);

struct Machine {
    host: String,
    startd: Startd,
    busy: Vec<Busy>,
    poll: i64,
    update: i64,
    /// Where its slot ads sit in the collector's list, and how many.
    first_ad: usize,
    ad_count: usize,
    ads_at: i64,
    dirty: bool,
    /// What its ads in the collector were published from
    /// (`Startd::republish` takes them back to reuse).
    epoch: AdsEpoch,
    /// What the starter adds to the slot ads (see `starter_attrs`).
    starter_attrs: ClassAd,
    /// Its slots' `slot1@host` labels, made once each for the report's
    /// transitions.
    labels: Vec<(String, Arc<str>)>,
}

/// The part of a job the simulator keeps beside the queue's ad.
struct SimJob {
    schedd: usize,
    id: JobId,
    submitter: String,
    group: String,
    cpus: f64,
    runtime: i64,
    exit_code: i64,
    submitted: i64,
    first_start: Option<i64>,
    run: Option<Run>,
    status: JobStatus,
    ignores_soft_kill: bool,
}

/// One run of a job on a slot.
struct Run {
    machine: usize,
    slot: String,
    claim: String,
    /// Seconds of run time done before the current stretch, and since when
    /// it is running (`None` while suspended).
    ran: i64,
    since: Option<i64>,
    /// Bumped when the run's timing changes, so stale events are ignored.
    generation: u64,
    /// The starter was told to stop the job.
    ending: bool,
}

impl Run {
    fn done(&self, now: i64) -> i64 {
        self.ran + self.since.map_or(0, |s| now - s)
    }
}

struct Schedd {
    name: String,
    queue: JobQueue,
    /// Its claims and its idle jobs by submitter (the claim protocol's
    /// core, as the personal pool's schedd runs it).
    claims: Claims,
    submit_config: Config,
    submit_policy: SubmitPolicy,
    system: SystemPolicy,
    uid_domain: String,
    ad: ClassAd,
    /// SYSTEM_PERIODIC_* is configured, or these jobs have periodic
    /// expressions: only then is the periodic pass worth making (it walks
    /// the whole queue, and a queue of 100,000 jobs every minute is the
    /// simulation's whole cost otherwise).
    system_periodic: bool,
    periodic_jobs: BTreeSet<JobId>,
    /// Its idle jobs' autoclusters, kept from cycle to cycle as the
    /// personal pool's schedd keeps them.
    autoclusters: AutoclusterIds<JobId>,
}

/// A submitter's idle jobs as its schedd's queue shares them.
type SharedJobs = Vec<(JobId, Arc<ClassAd>)>;

#[derive(Clone, Copy, Debug)]
enum Ev {
    Arrival {
        spec: usize,
        k: usize,
    },
    Tick(usize),
    Negotiate,
    /// condor_defrag's poll (every DEFRAG_INTERVAL).
    Defrag,
    Periodic,
    KeepAlive,
    Sample,
    Finish {
        job: usize,
        generation: u64,
    },
    StarterGone {
        job: usize,
        generation: u64,
    },
    /// An administrator's command (`commands[k]`).
    Command(usize),
    /// Fetched work ends (its run's id in `fetched`).
    FetchedDone(u64),
    /// A claim message arrives (its id in `in_flight`).
    Deliver(u64),
}

/// A message on the simulated network between schedds and startds.
enum Flight {
    ToStartd(usize, Event),
    ToSchedd(Action),
}

/// A running simulation.
pub struct Simulation<'f> {
    scenario: Scenario,
    files: &'f dyn Files,
    now: i64,
    end: i64,
    /// Events by time, then in the order they were scheduled.
    queue: Calendar<Ev>,
    machines: Vec<Machine>,
    schedds: Vec<Schedd>,
    jobs: Vec<SimJob>,
    /// Jobs by schedd and id. It is only looked up, never walked, so a
    /// hash map serves (a B-tree of 100,000 jobs costs a cache miss a
    /// level for every job event).
    job_index: FxHashMap<(usize, JobId), usize>,
    /// Machines by host name (where a schedd's messages to a startd go:
    /// every keep-alive of every claim); only looked up, like `job_index`.
    machine_index: FxHashMap<String, usize>,
    /// (machine, slot) -> the job running there.
    running: BTreeMap<(usize, String), usize>,
    /// Why the slot's claim is being preempted (for the report).
    preempt_cause: BTreeMap<(usize, String), String>,
    collector: Vec<ClassAd>,
    collector_owner: Vec<(usize, String)>,
    /// Each collector ad's generation as its startd published it
    /// (`Startd::ad_generation`): the negotiator keeps a slot's class from
    /// one cycle to the next while it stays. The starter attributes the
    /// simulator writes over the ads are fixed when the machine is made,
    /// so the startd's generation covers all of the ad.
    collector_generation: Vec<u64>,
    /// One machine's ads on their way through its startd (kept, so that
    /// publishing allocates nothing).
    scratch_ads: Vec<ClassAd>,
    /// The central manager: accountant, concurrency limits, policy.
    negotiator: Negotiator,
    negotiator_interval: i64,
    /// condor_defrag on the central manager (a scenario's `defrag`).
    defrag: Option<Defrag>,
    defrag_interval: i64,
    periodic_interval: i64,
    alive_interval: i64,
    sample_interval: i64,
    job_rng: SplitMix64,
    pending: Vec<(usize, Event)>,
    report: Report,
    total_cpus: f64,
    /// Claim messages on their way (a scenario with a `network`).
    in_flight: BTreeMap<u64, Flight>,
    flight_seq: u64,
    net_rng: SplitMix64,
    /// Messages of each kind lost by the scenario's `lose` so far.
    lost: BTreeMap<&'static str, u64>,
    /// How many of each `fetch_work` list's jobs were handed out.
    fetched_next: Vec<usize>,
    /// Fetched jobs a startd rejected (REPLY_FETCH reject), offered to it
    /// again first, as the work's provider would.
    fetch_returned: BTreeMap<usize, Vec<ClassAd>>,
    /// Fetched work running, by id: machine, slot, owner, evicted.
    fetched: BTreeMap<u64, (usize, String, String, bool)>,
    /// The current fetched run on each (machine, slot).
    fetched_on: BTreeMap<(usize, String), u64>,
    fetched_seq: u64,
}

impl<'f> Simulation<'f> {
    /// Sets the pool up: reads every configuration, builds the startds at
    /// the start time, checks every submit description once.
    pub fn new(scenario: &Scenario, files: &'f dyn Files) -> Result<Simulation<'f>, SimError> {
        let s = scenario;
        let start = s.start;
        let pool: Vec<&Source> = s.config.iter().collect();
        let cm_sources: Vec<&Source> = pool
            .iter()
            .copied()
            .chain(s.negotiator_config.iter())
            .collect();
        let cm = load_config(
            s,
            files,
            "NEGOTIATOR",
            "negotiator",
            &cm_sources,
            &host_macros("cm", 1, 1024),
        )?;
        let policy = Policy::from_config(&cm).map_err(|e| SimError(format!("negotiator: {e}")))?;
        let mut accountant =
            Accountant::from_config(&cm).map_err(|e| SimError(format!("accountant: {e}")))?;
        for (who, f) in &s.priority_factors {
            accountant.set_factor(who, *f);
        }
        let limits = ConcurrencyLimits::from_config(&cm)
            .map_err(|e| SimError(format!("concurrency limits: {e}")))?;

        let mut schedds = Vec::new();
        for sp in &s.schedds {
            let sources: Vec<&Source> = pool.iter().copied().chain(sp.config.iter()).collect();
            let host = host_macros(&sp.name, 1, 1024);
            let sc = load_config(s, files, "SCHEDD", &sp.name, &sources, &host)?;
            let submit_config = load_config(s, files, "SUBMIT", &sp.name, &sources, &host)?;
            let submit_policy = SubmitPolicy::from_config(&sc)
                .map_err(|e| SimError(format!("schedd {}: {e}", sp.name)))?;
            let system = SystemPolicy::from_config(&sc)
                .map_err(|e| SimError(format!("schedd {}: {e}", sp.name)))?;
            let uid_domain = sc
                .get("UID_DOMAIN")
                .ok()
                .flatten()
                .unwrap_or_else(|| sp.name.clone());
            let system_periodic = [
                "SYSTEM_PERIODIC_HOLD",
                "SYSTEM_PERIODIC_REMOVE",
                "SYSTEM_PERIODIC_RELEASE",
            ]
            .iter()
            .any(|n| {
                sc.get(n)
                    .ok()
                    .flatten()
                    .is_some_and(|v| !v.trim().is_empty())
            });
            let mut ad = ClassAd::new();
            ad.insert_value("MyType", "Scheduler");
            ad.insert_value("Name", sp.name.as_str());
            let alive_interval = interval(s, &sc, "ALIVE_INTERVAL", 300);
            schedds.push(Schedd {
                name: sp.name.clone(),
                queue: JobQueue::new(),
                claims: Claims::new(
                    &sp.name,
                    &format!("<{}>", sp.name),
                    alive_interval,
                    limits.clone(),
                ),
                submit_config,
                submit_policy,
                system,
                uid_domain,
                ad,
                system_periodic,
                periodic_jobs: BTreeSet::new(),
                autoclusters: AutoclusterIds::new(),
            });
        }
        let sched_cfg = load_config(
            s,
            files,
            "SCHEDD",
            "intervals",
            &pool,
            &host_macros("submit", 1, 1024),
        )?;

        let mut machines = Vec::new();
        let mut total_cpus = 0.0;
        for class in &s.classes {
            let sources: Vec<&Source> = pool.iter().copied().chain(class.config.iter()).collect();
            let names: Vec<String> = (1..=class.count)
                .map(|n| {
                    if class.hostname.contains("{n}") {
                        class.hostname.replace("{n}", &n.to_string())
                    } else if class.count > 1 {
                        format!("{}{n}", class.hostname)
                    } else {
                        class.hostname.clone()
                    }
                })
                .collect();
            let Some(first) = names.first() else { continue };
            // One read per class: a pool of thousands of identical machines
            // must not parse its configuration thousands of times.
            let c = load_config(
                s,
                files,
                "STARTD",
                &class.name,
                &sources,
                &host_macros(first, class.cpus, class.memory),
            )?;
            let poll = interval(s, &c, "POLLING_INTERVAL", 5);
            let update = interval(s, &c, "UPDATE_INTERVAL", 300);
            let readings = HostReadings::simple(class.cpus, class.memory, class.disk, 0);
            let template = Startd::from_config(&c, first, &readings, start)
                .map_err(|e| SimError(format!("machine class {}: {e}", class.name)))?;
            let starter_attrs = not_published(starter_attrs(&c, first), &template, start);
            for (k, host) in names.iter().enumerate() {
                let mut startd = template.clone();
                let mut starter_attrs = starter_attrs.clone();
                if k > 0 {
                    // The copy is another host: its slots are named for
                    // it (pslot preemption finds a slot's dynamic slots by
                    // name), and domains that defaulted to the first
                    // host's name are its own.
                    startd.machine.move_to_host(first, host);
                    for name in ["FileSystemDomain", "UidDomain"] {
                        let value = starter_attrs.eval_attr(name, &Env::at(0));
                        if value.as_str() == Some(first) {
                            starter_attrs.insert_value(name, host.as_str());
                        }
                    }
                }
                total_cpus += startd.machine.total_cpus;
                machines.push(Machine {
                    host: host.clone(),
                    startd,
                    busy: Vec::new(),
                    poll,
                    update,
                    first_ad: 0,
                    ad_count: 0,
                    ads_at: i64::MIN / 2,
                    dirty: true,
                    epoch: AdsEpoch::default(),
                    starter_attrs,
                    labels: Vec::new(),
                });
            }
        }

        // The owners' activity, laid out in absolute time once.
        for (oi, o) in s.owners.iter().enumerate() {
            let targets = machines_named(&machines, &s.classes, &o.machines);
            if targets.is_empty() {
                return Err(SimError(format!(
                    "scenario: owners[{oi}]: no machine or class is named {}",
                    o.machines
                )));
            }
            for m in targets {
                match &o.activity {
                    OwnerActivity::Interval {
                        from,
                        to,
                        keyboard,
                        load,
                    } => machines[m]
                        .busy
                        .push((start + from, start + to, *keyboard, *load)),
                    OwnerActivity::Random {
                        busy_mean,
                        idle_mean,
                        load,
                    } => {
                        let mut rng = SplitMix64::derive(
                            s.seed,
                            0x0_0001_0000 + (oi as u64) * 1_000_003 + m as u64,
                        );
                        let mut t = start + rng.exponential(*idle_mean);
                        while t < start + s.duration {
                            let b = rng.exponential(*busy_mean);
                            machines[m].busy.push((t, t + b, true, *load));
                            t += b + rng.exponential(*idle_mean);
                        }
                    }
                }
            }
        }
        for m in &mut machines {
            m.busy.sort_by_key(|b| b.0);
        }

        let negotiator_interval = interval(s, &cm, "NEGOTIATOR_INTERVAL", 60);
        // condor_defrag reads what the central manager reads, then its own.
        let (defrag, defrag_interval) = match &s.defrag {
            None => (None, 0),
            Some(own) => {
                let sources: Vec<&Source> = cm_sources.iter().copied().chain(own.iter()).collect();
                let dc = load_config(
                    s,
                    files,
                    "DEFRAG",
                    "defrag",
                    &sources,
                    &host_macros("cm", 1, 1024),
                )?;
                let policy =
                    DefragPolicy::from_config(&dc).map_err(|e| SimError(format!("defrag: {e}")))?;
                let every = match s.intervals.get("DEFRAG_INTERVAL") {
                    Some(v) => *v,
                    None => policy.interval,
                };
                let mut policy = policy;
                policy.interval = every;
                (Some(Defrag::new(policy)), every)
            }
        };
        let periodic_interval = interval(s, &sched_cfg, "PERIODIC_EXPR_INTERVAL", 60);
        let alive_interval = interval(s, &sched_cfg, "ALIVE_INTERVAL", 300);
        let sample_interval = s.sample_interval.unwrap_or_else(|| {
            (s.duration / 200)
                .max(negotiator_interval.min(s.duration))
                .max(1)
        });

        let machine_index = machines
            .iter()
            .enumerate()
            .map(|(i, m)| (m.host.clone(), i))
            .collect();
        let mut sim = Simulation {
            scenario: s.clone(),
            files,
            now: start,
            end: start + s.duration,
            queue: Calendar::new(),
            machines,
            schedds,
            jobs: Vec::new(),
            job_index: FxHashMap::default(),
            machine_index,
            running: BTreeMap::new(),
            preempt_cause: BTreeMap::new(),
            collector: Vec::new(),
            collector_owner: Vec::new(),
            collector_generation: Vec::new(),
            scratch_ads: Vec::new(),
            negotiator: Negotiator::new(accountant, limits, policy),
            negotiator_interval,
            defrag,
            defrag_interval,
            periodic_interval,
            alive_interval,
            sample_interval,
            job_rng: SplitMix64::derive(s.seed, 2),
            in_flight: BTreeMap::new(),
            flight_seq: 0,
            net_rng: SplitMix64::derive(s.seed, 3),
            lost: BTreeMap::new(),
            fetched_next: vec![0; s.fetch_work.len()],
            fetch_returned: BTreeMap::new(),
            fetched: BTreeMap::new(),
            fetched_on: BTreeMap::new(),
            fetched_seq: 0,
            pending: Vec::new(),
            report: Report::new(s.seed, start, s.duration),
            total_cpus,
        };
        sim.report.summary.total_cpus = total_cpus;

        // Check every submit description now, not hours into the run.
        for (i, spec) in s.jobs.iter().enumerate() {
            let schedd = sim.schedd_of(i)?;
            sim.submit_ads(i, schedd, 1, start)
                .map_err(|e| SimError(format!("scenario: jobs[{i}]: {e}")))?;
            for (k, t) in spec.arrivals.iter().enumerate() {
                if *t < s.duration {
                    sim.schedule(start + t, Ev::Arrival { spec: i, k });
                }
            }
        }
        // Stagger the startds' polls, as real machines are not in step.
        let mut stagger = SplitMix64::derive(s.seed, 1);
        for m in 0..sim.machines.len() {
            let p = sim.machines[m].poll;
            let at = start + stagger.range(0, p - 1);
            sim.schedule(at, Ev::Tick(m));
        }
        for (k, c) in s.commands.iter().enumerate() {
            if sim.command_targets(&c.machines).is_empty() {
                return Err(SimError(format!(
                    "scenario: commands[{k}]: no machine or class is named {}",
                    c.machines
                )));
            }
            if c.at < s.duration {
                sim.schedule(start + c.at.max(0), Ev::Command(k));
            }
        }
        sim.schedule(start, Ev::Sample);
        // The first cycle once every startd has polled and published.
        sim.schedule(start + negotiator_interval, Ev::Negotiate);
        // DEFRAG_INTERVAL of 0 or less: HTCondor's defrag does nothing.
        if sim.defrag.is_some() && defrag_interval > 0 {
            sim.schedule(start + defrag_interval, Ev::Defrag);
        }
        sim.schedule(start + periodic_interval, Ev::Periodic);
        sim.schedule(start + alive_interval, Ev::KeepAlive);
        Ok(sim)
    }

    fn schedd_of(&self, spec: usize) -> Result<usize, SimError> {
        match &self.scenario.jobs[spec].schedd {
            None => Ok(0),
            Some(name) => self
                .schedds
                .iter()
                .position(|s| &s.name == name)
                .ok_or_else(|| SimError(format!("scenario: jobs[{spec}]: no schedd {name}"))),
        }
    }

    /// The jobs `condor_submit` makes of job spec `spec` for cluster
    /// `cluster`, as the schedd keeps them: a cluster
    /// ad and one proc ad per job of what differs from it, split as
    /// HTCondor's client splits them (a copy of the job before it, but
    /// for its ProcId, is split without being built).
    fn submit_ads(
        &self,
        spec: usize,
        schedd: usize,
        cluster: i64,
        now: i64,
    ) -> Result<(ClassAd, Vec<ClassAd>), String> {
        let j = &self.scenario.jobs[spec];
        let text = match &j.submit {
            None => "universe = vanilla\nexecutable = /bin/sleep\nqueue\n".to_string(),
            Some(Source::Text(t)) => t.clone(),
            Some(Source::File(p)) => self
                .files
                .read(&self.scenario.resolve(p))
                .map_err(|e| format!("{p}: {e}"))?,
        };
        let mut opts = submit::SubmitOptions::new(cluster, &j.user, now, "/home/sim");
        opts.append = j.append.clone();
        opts.random_seed = self.scenario.seed;
        // The account the jobs are charged to, where the description
        // does not say.
        let account = format!("{}@{}", j.user, self.schedds[schedd].uid_domain);
        let mut splitter = submit::Splitter::default();
        let mut cluster_ad = ClassAd::new();
        let mut procs = Vec::new();
        // The last whole job's proc ad, which each copy's is too.
        let mut last = ClassAd::new();
        submit::submit_made(
            &text,
            &opts,
            &self.schedds[schedd].submit_config,
            &SubmitFiles(self.files),
            &mut |made: submit::MadeJob<'_>| {
                let proc = match made {
                    submit::MadeJob::Whole(mut job) => {
                        if !job.contains("User") {
                            job.insert_value("User", account.as_str());
                        }
                        let proc = job.eval_attr("ProcId", &Env::default()).as_int();
                        let (c, p) = splitter.split(&job);
                        if let Some(c) = c {
                            cluster_ad = c;
                        }
                        last = p;
                        proc.unwrap_or(0)
                    }
                    submit::MadeJob::Copy { proc, .. } => proc,
                };
                let mut p = last.clone();
                p.insert_value("ProcId", proc);
                procs.push(p);
                Ok(())
            },
        )
        .map_err(|e| e.to_string())?;
        Ok((cluster_ad, procs))
    }

    fn schedule(&mut self, at: i64, ev: Ev) {
        self.queue.push(at, ev);
    }

    /// The simulated time.
    pub fn now(&self) -> i64 {
        self.now
    }

    /// The startd of the machine with this host name.
    pub fn startd(&self, host: &str) -> Option<&Startd> {
        self.machines
            .iter()
            .find(|m| m.host == host)
            .map(|m| &m.startd)
    }

    /// The job queue of the schedd with this name.
    pub fn job_queue(&self, schedd: &str) -> Option<&JobQueue> {
        self.schedds
            .iter()
            .find(|s| s.name == schedd)
            .map(|s| &s.queue)
    }

    pub fn accountant(&self) -> &Accountant {
        &self.negotiator.accountant
    }

    /// The pool's configured concurrency limits.
    pub fn limits(&self) -> &ConcurrencyLimits {
        &self.negotiator.limits
    }

    /// Runs every event up to and including `t` (at most the end).
    pub fn run_until(&mut self, t: i64) {
        let t = t.min(self.end);
        while let Some((at, ev)) = self.queue.pop_until(t) {
            self.now = at;
            self.step(ev);
        }
        self.now = t;
    }

    /// Runs to the end and gives the report.
    pub fn run(mut self) -> Report {
        self.run_until(self.end);
        self.finish()
    }

    fn step(&mut self, ev: Ev) {
        let now = self.now;
        match ev {
            Ev::Arrival { spec, k } => self.arrival(spec, k),
            Ev::Tick(m) => {
                let scenario = &self.scenario;
                let mach = &mut self.machines[m];
                let busy = &mach.busy;
                let ready = mach.startd.tick_with(now, |slots, r| {
                    Self::readings(scenario, busy, slots, now, r)
                });
                // Most polls change nothing and ask for nothing.
                if !ready.transitions.is_empty() || !ready.actions.is_empty() {
                    self.absorb(m, ready);
                }
                self.drive();
                let p = self.machines[m].poll;
                self.schedule(now + p, Ev::Tick(m));
            }
            Ev::Negotiate => {
                self.negotiate();
                self.schedule(now + self.negotiator_interval, Ev::Negotiate);
            }
            Ev::Defrag => {
                self.defrag_poll();
                self.schedule(now + self.defrag_interval, Ev::Defrag);
            }
            Ev::Periodic => {
                self.periodic();
                self.schedule(now + self.periodic_interval, Ev::Periodic);
            }
            Ev::KeepAlive => {
                for s in 0..self.schedds.len() {
                    let sd = &mut self.schedds[s];
                    let ready = sd.claims.keep_alive(&sd.queue, now);
                    self.apply(s, ready, None);
                }
                self.drive();
                self.schedule(now + self.alive_interval, Ev::KeepAlive);
            }
            Ev::Sample => {
                self.sample();
                self.schedule(now + self.sample_interval, Ev::Sample);
            }
            Ev::Finish { job, generation } => self.job_finished(job, generation),
            Ev::StarterGone { job, generation } => self.starter_gone(job, generation),
            Ev::Command(k) => self.command(k),
            Ev::FetchedDone(id) => self.fetched_done(id),
            Ev::Deliver(id) => match self.in_flight.remove(&id) {
                Some(Flight::ToStartd(m, ev)) => {
                    self.pending.push((m, ev));
                    self.drive();
                }
                Some(Flight::ToSchedd(a)) => {
                    self.tell_schedd(a);
                    self.drive();
                }
                None => {}
            },
        }
    }

    // ---- the network and the administrators ---------------------------

    /// The machines a command names: one by host name, or a class.
    fn command_targets(&self, name: &str) -> Vec<usize> {
        machines_named(&self.machines, &self.scenario.classes, name)
    }

    /// `condor_vacate`, `condor_drain` at the scenario's time.
    fn command(&mut self, k: usize) {
        let c = self.scenario.commands[k].clone();
        let (event, what) = match &c.command {
            AdminCommand::Vacate { slot, fast } => (
                Event::Vacate {
                    slot: slot.clone(),
                    fast: *fast,
                },
                if *fast { "vacate -fast" } else { "vacate" },
            ),
            AdminCommand::Drain { how } => (
                Event::Drain {
                    how: match how {
                        DrainSpeed::Graceful => startd::DrainHow::Graceful,
                        DrainSpeed::Quick => startd::DrainHow::Quick,
                        DrainSpeed::Fast => startd::DrainHow::Fast,
                    },
                    resume_on_completion: false,
                    start_expr: None,
                    reason: "by command".into(),
                },
                "drain",
            ),
            AdminCommand::CancelDrain => (Event::CancelDrain, "drain -cancel"),
        };
        for m in self.command_targets(&c.machines) {
            self.report
                .notes
                .push(format!("{}: {what} on {}", self.now, self.machines[m].host));
            self.pending.push((m, event.clone()));
        }
        self.drive();
    }

    /// Whether the scenario's network loses this message: the first N of
    /// its kind (`lose`), else with probability `drop`.
    fn lose(&mut self, kind: &'static str) -> bool {
        let Some(net) = &self.scenario.network else {
            return false;
        };
        let scripted = net.lose.get(kind).copied().unwrap_or(0);
        let so_far = self.lost.entry(kind).or_insert(0);
        let lost = if *so_far < scripted {
            *so_far += 1;
            true
        } else {
            net.drop > 0.0 && self.net_rng.next_f64() < net.drop
        };
        if lost {
            self.report.summary.messages_lost += 1;
        }
        lost
    }

    /// Puts a claim message on the network: at once without one, else
    /// after a delay (messages may overtake each other), or lost.
    fn send(&mut self, kind: &'static str, flight: Flight) {
        let Some(net) = &self.scenario.network else {
            match flight {
                Flight::ToStartd(m, ev) => self.pending.push((m, ev)),
                Flight::ToSchedd(a) => self.tell_schedd(a),
            }
            return;
        };
        let (lo, hi) = net.delay;
        if self.lose(kind) {
            return;
        }
        let delay = if hi > lo {
            self.net_rng.range(lo, hi)
        } else {
            lo
        };
        self.flight_seq += 1;
        let id = self.flight_seq;
        self.in_flight.insert(id, flight);
        self.schedule(self.now + delay, Ev::Deliver(id));
    }

    fn send_to_startd(&mut self, m: usize, ev: Event) {
        let kind = match &ev {
            Event::Matched { .. } => "match_info",
            Event::RequestClaim { .. } => "request_claim",
            Event::Activate { .. } => "activate_claim",
            Event::KeepAlive { .. } => "alive",
            Event::ReleaseClaim { .. } => "release_claim",
            _ => "other",
        };
        self.send(kind, Flight::ToStartd(m, ev));
    }

    // ---- the owner and the host --------------------------------------

    /// What a machine's host reads at `now`: its owner's activity (`busy`)
    /// and the jobs on its `slots`, written over the last poll's readings
    /// `r` (their storage reused).
    fn readings(
        scenario: &Scenario,
        busy: &[Busy],
        slots: &[startd::slot::Slot],
        now: i64,
        r: &mut Readings,
    ) {
        let mut keyboard_idle = now - scenario.start + scenario.initial_idle;
        let mut load = 0.0;
        for &(from, to, keyboard, l) in busy {
            if from > now {
                break;
            }
            if now < to {
                load += l;
                if keyboard {
                    keyboard_idle = 0;
                }
            } else if keyboard {
                keyboard_idle = keyboard_idle.min(now - to);
            }
        }
        r.condor_load.clear();
        r.condor_load.extend(slots.iter().map(|s| {
            if s.pair() == Pair(State::Claimed, Activity::Busy)
                || s.pair() == Pair(State::Claimed, Activity::Retiring)
            {
                s.resources.cpus.max(1.0)
            } else {
                0.0
            }
        }));
        let total: f64 = r.condor_load.iter().sum();
        r.keyboard_idle = keyboard_idle;
        r.console_idle = keyboard_idle;
        r.load_avg = load + total;
    }

    // ---- the startd's side -------------------------------------------

    fn slot_label(&self, m: usize, slot: &str) -> String {
        label(slot, &self.machines[m].host)
    }

    /// [`Simulation::slot_label`], made once per slot and then shared.
    fn shared_label(&mut self, m: usize, slot: &str) -> Arc<str> {
        let mach = &mut self.machines[m];
        if let Some((_, l)) = mach.labels.iter().find(|(s, _)| s == slot) {
            return Arc::clone(l);
        }
        let l: Arc<str> = label(slot, &mach.host).into();
        mach.labels.push((slot.to_string(), Arc::clone(&l)));
        l
    }

    /// Records what a startd did and carries out its actions.
    fn absorb(&mut self, m: usize, ready: Ready) {
        let now = self.now;
        if !ready.transitions.is_empty() {
            self.machines[m].dirty = true;
        }
        for t in ready.transitions {
            if t.from.0 == State::Claimed
                && (t.to.0 == State::Preempting || t.to.1 == Activity::Retiring)
            {
                // The first step of an eviction says why; the later ones
                // (retirement over, vacating) only how.
                self.preempt_cause
                    .entry((m, t.slot.clone()))
                    .or_insert_with(|| cause_category(&t.cause));
            }
            // Every transition of a day is recorded: its words are put
            // together without the formatting machinery, and a cause that
            // is already text is moved, not copied.
            let slot = self.shared_label(m, &t.slot);
            self.report.transitions.push(TransitionRecord {
                time: t.at,
                slot,
                from: t.from.text(),
                to: t.to.text(),
                number: t.number,
                cause: match t.cause {
                    Cause::Event(text) | Cause::Timer(text) => text,
                    cause @ Cause::Expr { .. } => cause.to_string(),
                },
            });
        }
        for a in ready.actions {
            match a {
                Action::StartJob {
                    slot,
                    claim_id,
                    schedd,
                    job,
                    nice,
                } => self.start_job(m, &slot, &claim_id, &schedd, &job, nice),
                Action::SuspendJob { slot } => {
                    if let Some(&j) = self.running.get(&(m, slot)) {
                        let mut claim_id = String::new();
                        if let Some(r) = &mut self.jobs[j].run {
                            if let Some(s) = r.since.take() {
                                r.ran += now - s;
                            }
                            r.generation += 1;
                            claim_id = r.claim.clone();
                        }
                        let report = StarterReport::Suspended {
                            claim_id,
                            num_pids: 1,
                        };
                        self.report_run(j, report, None);
                    }
                }
                Action::ContinueJob { slot } => {
                    if let Some(&j) = self.running.get(&(m, slot)) {
                        let mut finish = None;
                        if let Some(r) = &mut self.jobs[j].run {
                            if r.since.is_none() && !r.ending {
                                r.since = Some(now);
                                r.generation += 1;
                                finish = Some((r.generation, r.ran));
                            }
                        }
                        if let Some((generation, ran)) = finish {
                            let left = (self.jobs[j].runtime - ran).max(0);
                            self.schedule(now + left, Ev::Finish { job: j, generation });
                        }
                        let claim_id = self.jobs[j].run.as_ref().map(|r| r.claim.clone());
                        let report = StarterReport::Unsuspended {
                            claim_id: claim_id.unwrap_or_default(),
                        };
                        self.report_run(j, report, None);
                    }
                }
                Action::VacateJob { slot } => self.stop_job(m, &slot, 1),
                Action::KillJob { slot } | Action::KillStarterTree { slot } => {
                    self.stop_job(m, &slot, 0)
                }
                a @ (Action::ClaimGranted { .. }
                | Action::ClaimRefused { .. }
                | Action::ClaimIdle { .. }
                | Action::ActivationRefused { .. }
                | Action::ClaimAlive { .. }
                | Action::ClaimEnded { .. }) => self.send("claim_news", Flight::ToSchedd(a)),
                Action::Refused(r) => self.report.notes.push(format!(
                    "{}: {} refused: {}",
                    self.now, self.machines[m].host, r.reason
                )),
                Action::RunBenchmarks { slot } => self.pending.push((
                    m,
                    Event::BenchmarksDone {
                        slot,
                        mips: 20_000,
                        kflops: 1_000_000,
                    },
                )),
                Action::StartBackfill { slot, .. } => {
                    self.pending.push((m, Event::BackfillStarted { slot }))
                }
                Action::KillBackfill { slot } => {
                    self.pending.push((m, Event::BackfillExited { slot }))
                }
                Action::FetchWork { slot, .. } => {
                    let job = self.fetch_for(m).map(Box::new);
                    self.pending.push((m, Event::FetchedWork { slot, job }));
                }
                Action::ReplyFetch {
                    accept: false, job, ..
                } => self.fetch_returned.entry(m).or_default().push(job),
                _ => {}
            }
        }
    }

    /// Hands pending events to their startds until none is left.
    fn drive(&mut self) {
        let mut guard = 0;
        while !self.pending.is_empty() {
            let batch = std::mem::take(&mut self.pending);
            for (m, ev) in batch {
                let ready = self.machines[m].startd.receive(ev, self.now);
                self.absorb(m, ready);
            }
            guard += 1;
            if guard > 1000 {
                self.report
                    .notes
                    .push(format!("{}: startd events did not settle", self.now));
                break;
            }
        }
    }

    /// What a startd said about a claim goes to the claim's schedd.
    fn tell_schedd(&mut self, action: Action) {
        let name = match &action {
            Action::ClaimGranted { schedd, .. }
            | Action::ClaimRefused { schedd, .. }
            | Action::ClaimIdle { schedd, .. }
            | Action::ActivationRefused { schedd, .. }
            | Action::ClaimAlive { schedd, .. }
            | Action::ClaimEnded { schedd, .. } => schedd,
            _ => return,
        };
        let Some(s) = self.schedds.iter().position(|x| &x.name == name) else {
            return;
        };
        if matches!(action, Action::ClaimRefused { .. }) {
            self.report.summary.claims_refused += 1;
        }
        let sd = &mut self.schedds[s];
        let ready = sd.claims.startd_said(action, &sd.queue, self.now);
        self.apply(s, ready, None);
    }

    /// Carries out what schedd `s`'s claim core decided: job events to its
    /// queue (recorded, `text` for the first Matched or Started one),
    /// charges to the accountant, messages to the startds; then tells the
    /// core which jobs changed, until nothing more changes.
    fn apply(&mut self, s: usize, mut ready: claims::Ready, mut text: Option<String>) {
        let now = self.now;
        for _ in 0..1000 {
            let mut touched = Vec::new();
            for (id, ev) in ready.job_events {
                touched.push(id);
                let Some(&j) = self.job_index.get(&(s, id)) else {
                    continue;
                };
                let what = match (&ev, &text) {
                    (JobEvent::Matched | JobEvent::Started { .. }, Some(_)) => {
                        text.take().unwrap_or_default()
                    }
                    _ => describe(&ev),
                };
                self.job_event(j, ev, what);
            }
            for id in ready.runs_ended {
                touched.push(id);
                let st = self.schedds[s].queue.status(id);
                if matches!(st, Some(JobStatus::Completed | JobStatus::Removed)) {
                    self.schedds[s].queue.forget(id);
                    self.schedds[s].periodic_jobs.remove(&id);
                }
            }
            for c in ready.charges {
                c.apply(&mut self.negotiator.accountant, now);
            }
            for (startd, ev) in ready.to_startd {
                if let Some(&m) = self.machine_index.get(&startd) {
                    self.send_to_startd(m, ev);
                }
            }
            for (id, what) in ready.job_notes {
                let Some(&j) = self.job_index.get(&(s, id)) else {
                    continue;
                };
                let sj = &self.jobs[j];
                self.report.job_events.push(JobRecord {
                    time: now,
                    schedd: self.schedds[s].name.clone(),
                    job: id.to_string(),
                    user: sj.submitter.clone(),
                    what,
                });
            }
            // The starter ends a stopped run as the startd evicts it.
            if touched.is_empty() {
                return;
            }
            let sd = &mut self.schedds[s];
            ready = sd.claims.jobs_changed(&touched, &sd.queue);
        }
    }

    /// A starter's report on job `j`'s run, to its schedd.
    fn report_run(&mut self, j: usize, report: StarterReport, text: Option<String>) {
        let s = self.jobs[j].schedd;
        let sd = &mut self.schedds[s];
        let ready = sd.claims.starter_said(report, &sd.queue, self.now);
        self.apply(s, ready, text);
    }

    #[allow(clippy::too_many_arguments)]
    fn start_job(
        &mut self,
        m: usize,
        slot: &str,
        claim_id: &str,
        schedd: &str,
        job: &ClassAd,
        nice: i64,
    ) {
        if schedd.starts_with("hook:") {
            return self.start_fetched(m, slot, schedd, job);
        }
        let now = self.now;
        let env = Env::at(now);
        let id = JobId::new(
            job.eval_attr("ClusterId", &env).as_int().unwrap_or(-1),
            job.eval_attr("ProcId", &env).as_int().unwrap_or(-1),
        );
        let Some(s) = self.schedds.iter().position(|x| x.name == schedd) else {
            return;
        };
        let Some(&j) = self.job_index.get(&(s, id)) else {
            return;
        };
        let host = self.machines[m].host.clone();
        let label = self.slot_label(m, slot);
        self.jobs[j].run = Some(Run {
            machine: m,
            slot: slot.to_string(),
            claim: claim_id.to_string(),
            ran: 0,
            since: Some(now),
            generation: 0,
            ending: false,
        });
        self.running.insert((m, slot.to_string()), j);
        self.preempt_cause.remove(&(m, slot.to_string()));
        if self.jobs[j].first_start.is_none() {
            self.jobs[j].first_start = Some(now);
            let wait = now - self.jobs[j].submitted;
            let (user, group) = (self.jobs[j].submitter.clone(), self.jobs[j].group.clone());
            self.report.summary.add_wait(&user, &group, wait);
        }
        let report = StarterReport::Started {
            claim_id: claim_id.to_string(),
            host,
            slot: label.clone(),
        };
        self.report_run(j, report, Some(format!("started on {label} (nice {nice})")));
        let left = self.jobs[j].runtime;
        self.schedule(
            now + left,
            Ev::Finish {
                job: j,
                generation: 0,
            },
        );
    }

    // ---- fetched work (the job hooks) ----------------------------------

    /// The next job the scenario's FETCH_WORK hands machine `m`, if any:
    /// its ad, with how long it runs as `SimRunTime`.
    fn fetch_for(&mut self, m: usize) -> Option<ClassAd> {
        if let Some(job) = self.fetch_returned.get_mut(&m).and_then(Vec::pop) {
            return Some(job);
        }
        for k in 0..self.scenario.fetch_work.len() {
            if !self
                .command_targets(&self.scenario.fetch_work[k].machines)
                .contains(&m)
            {
                continue;
            }
            let (text, runtime) = self.scenario.fetch_work[k]
                .jobs
                .get(self.fetched_next[k])?
                .clone();
            self.fetched_next[k] += 1;
            let mut ad = ClassAd::parse(&text).ok()?;
            ad.insert_value("SimRunTime", runtime);
            return Some(ad);
        }
        None
    }

    fn start_fetched(&mut self, m: usize, slot: &str, hook: &str, job: &ClassAd) {
        let env = Env::at(self.now);
        let runtime = job.eval_attr("SimRunTime", &env).as_int().unwrap_or(60);
        let owner = match job.eval_attr("Owner", &env) {
            Value::Str(o) => o.to_string(),
            _ => String::new(),
        };
        self.fetched_seq += 1;
        let id = self.fetched_seq;
        let label = self.slot_label(m, slot);
        self.report.job_events.push(JobRecord {
            time: self.now,
            schedd: hook.to_string(),
            job: format!("fetched#{id}"),
            user: owner.clone(),
            what: format!("started fetched work on {label}"),
        });
        self.fetched.insert(id, (m, slot.to_string(), owner, false));
        self.fetched_on.insert((m, slot.to_string()), id);
        self.schedule(self.now + runtime, Ev::FetchedDone(id));
    }

    /// Fetched work on a slot is asked to leave: it goes in `delay`.
    fn stop_fetched(&mut self, m: usize, slot: &str, delay: i64) -> bool {
        let Some(&id) = self.fetched_on.get(&(m, slot.to_string())) else {
            return false;
        };
        let Some(run) = self.fetched.remove(&id) else {
            return true;
        };
        self.fetched_seq += 1;
        let again = self.fetched_seq;
        self.fetched.insert(again, (run.0, run.1, run.2, true));
        self.fetched_on.insert((m, slot.to_string()), again);
        self.schedule(self.now + delay, Ev::FetchedDone(again));
        true
    }

    fn fetched_done(&mut self, id: u64) {
        let Some((m, slot, owner, evicted)) = self.fetched.remove(&id) else {
            return;
        };
        if self.fetched_on.get(&(m, slot.clone())) != Some(&id) {
            return;
        }
        self.fetched_on.remove(&(m, slot.clone()));
        let label = self.slot_label(m, &slot);
        self.report.job_events.push(JobRecord {
            time: self.now,
            schedd: "hook".into(),
            job: format!("fetched#{id}"),
            user: owner,
            what: if evicted {
                format!("fetched work evicted from {label}")
            } else {
                format!("fetched work exited on {label}")
            },
        });
        self.pending.push((m, Event::StarterExited { slot }));
        self.drive();
    }

    /// The startd wants the job off the slot: its starter goes in `delay`
    /// (a soft kill, `delay` > 0, is ignored by a job that ignores it).
    fn stop_job(&mut self, m: usize, slot: &str, delay: i64) {
        if self.stop_fetched(m, slot, delay) {
            return;
        }
        let Some(&j) = self.running.get(&(m, slot.to_string())) else {
            return;
        };
        if delay > 0 && self.jobs[j].ignores_soft_kill {
            return;
        }
        let now = self.now;
        let mut gen = None;
        if let Some(r) = &mut self.jobs[j].run {
            if !r.ending {
                r.ending = true;
                if let Some(s) = r.since.take() {
                    r.ran += now - s;
                }
                r.generation += 1;
                gen = Some(r.generation);
            }
        }
        if let Some(generation) = gen {
            self.schedule(now + delay, Ev::StarterGone { job: j, generation });
        }
    }

    /// The run ends; the slot hears its starter exited.
    fn end_run(&mut self, j: usize) -> Option<Run> {
        let run = self.jobs[j].run.take()?;
        self.running.remove(&(run.machine, run.slot.clone()));
        let cpu = run.done(self.now) as f64 * self.jobs[j].cpus;
        let user = self.jobs[j].submitter.clone();
        *self.report.summary.usage_by_user.entry(user).or_insert(0.0) += cpu;
        self.pending.push((
            run.machine,
            Event::StarterExited {
                slot: run.slot.clone(),
            },
        ));
        Some(run)
    }

    fn job_finished(&mut self, j: usize, generation: u64) {
        let ok = self.jobs[j]
            .run
            .as_ref()
            .is_some_and(|r| r.generation == generation && !r.ending && r.since.is_some());
        if !ok {
            return;
        }
        let Some(run) = self.end_run(j) else { return };
        let cpu = run.done(self.now) as f64 * self.jobs[j].cpus;
        self.report.summary.goodput_cpu_seconds += cpu;
        let code = self.jobs[j].exit_code;
        let report = StarterReport::Ended {
            claim_id: run.claim.clone(),
            end: RunEnd::Exited(ExitHow::Code(code)),
            report: RunReport {
                remote_user_cpu: run.done(self.now),
                ..RunReport::default()
            },
        };
        self.report_run(j, report, None);
        self.drive();
    }

    fn starter_gone(&mut self, j: usize, generation: u64) {
        let ok = self.jobs[j]
            .run
            .as_ref()
            .is_some_and(|r| r.generation == generation && r.ending);
        if !ok {
            return;
        }
        let Some(run) = self.end_run(j) else { return };
        let cpu = run.done(self.now) as f64 * self.jobs[j].cpus;
        self.report.summary.badput_cpu_seconds += cpu;
        let cause = self
            .preempt_cause
            .remove(&(run.machine, run.slot.clone()))
            .unwrap_or_else(|| "vacated".into());
        if self.jobs[j].status.is_active() {
            *self
                .report
                .summary
                .preemptions
                .entry(cause.clone())
                .or_insert(0) += 1;
        }
        let report = StarterReport::Ended {
            claim_id: run.claim.clone(),
            end: RunEnd::Evicted {
                reason: Some(cause),
            },
            report: RunReport::default(),
        };
        self.report_run(j, report, None);
        self.drive();
    }

    // ---- the schedd's side -------------------------------------------

    /// Applies `event` to job `j` in its queue, records it, keeps the
    /// idle lists; returns the new status.
    fn job_event(&mut self, j: usize, event: JobEvent, what: String) -> Option<JobStatus> {
        let (s, id) = (self.jobs[j].schedd, self.jobs[j].id);
        let sd = &mut self.schedds[s];
        match sd.queue.apply(id, event, self.now, &sd.system) {
            Ok(change) => {
                self.record(j, what, &change);
                Some(change.to)
            }
            Err(e) => {
                self.report
                    .notes
                    .push(format!("{}: job {id}: {e}", self.now));
                None
            }
        }
    }

    fn record(&mut self, j: usize, what: impl Into<String>, change: &Change) {
        let to = change.to;
        let from = self.jobs[j].status;
        self.jobs[j].status = to;
        let mut text = what.into();
        if from != to && !matches!(to, JobStatus::Running | JobStatus::Suspended) {
            // `what: status`, the status in lower case.
            text.push_str(": ");
            text.extend(to.name().chars().map(|c| c.to_ascii_lowercase()));
        }
        match to {
            JobStatus::Removed if from != to => self.report.summary.jobs_removed += 1,
            JobStatus::Held if from != to => self.report.summary.jobs_held += 1,
            JobStatus::Completed if from != to => self.report.summary.jobs_completed += 1,
            _ => {}
        }
        let sj = &self.jobs[j];
        self.report.job_events.push(JobRecord {
            time: self.now,
            schedd: self.schedds[sj.schedd].name.clone(),
            job: sj.id.to_string(),
            user: sj.submitter.clone(),
            what: text,
        });
        // Completed and removed jobs leave the queue for its history: a
        // day of 100,000 jobs must not be walked by every periodic pass.
        if matches!(to, JobStatus::Completed | JobStatus::Removed) && sj.run.is_none() {
            let (s, id) = (sj.schedd, sj.id);
            self.schedds[s].queue.forget(id);
            self.schedds[s].periodic_jobs.remove(&id);
        }
    }

    fn arrival(&mut self, spec: usize, k: usize) {
        let now = self.now;
        let Ok(schedd) = self.schedd_of(spec) else {
            return;
        };
        let cluster = self.schedds[schedd].queue.next_cluster();
        let (cluster_ad, procs) = match self.submit_ads(spec, schedd, cluster, now) {
            Ok(a) => a,
            Err(e) => {
                self.report
                    .notes
                    .push(format!("{now}: jobs[{spec}] arrival {k}: {e}"));
                return;
            }
        };
        let user = self.scenario.jobs[spec].user.clone();
        let domain = self.schedds[schedd].uid_domain.clone();
        let sd = &mut self.schedds[schedd];
        let host = sd.name.clone();
        let submitted = match sd.queue.submit_cluster(
            cluster_ad,
            procs,
            &user,
            &sd.submit_policy,
            &sd.ad,
            &host,
            now,
        ) {
            Ok(s) => s,
            Err(e) => {
                self.report.job_events.push(JobRecord {
                    time: now,
                    schedd: host,
                    job: format!("{cluster}"),
                    user: format!("{user}@{domain}"),
                    what: format!("submit refused: {e}"),
                });
                return;
            }
        };
        let env = Env::at(now);
        let ids: Vec<JobId> = submitted.changes.iter().map(|c| c.job).collect();
        for change in submitted.changes {
            let id = change.job;
            // Read in place: the job's ad is the queue's (a proc ad over
            // its cluster ad), not copied.
            let empty = ClassAd::new();
            let ad = self.schedds[schedd].queue.job(id).unwrap_or(&empty);
            let group_user = match ad.eval_attr("AccountingGroup", &env) {
                Value::Str(g) => g.to_string(),
                _ => user.clone(),
            };
            let periodic = ["PeriodicHold", "PeriodicRemove", "PeriodicRelease"]
                .iter()
                .any(|a| {
                    ad.get(a)
                        .is_some_and(|e| !matches!(e, classad::Expr::Lit(Value::Bool(false))))
                });
            let cpus = ad
                .eval_attr("RequestCpus", &env)
                .as_number()
                .unwrap_or(1.0)
                .max(1.0);
            let submitter = format!("{group_user}@{domain}");
            let group = self.negotiator.accountant.group_of(&submitter).to_string();
            if periodic {
                self.schedds[schedd].periodic_jobs.insert(id);
            }
            let runtime = self.scenario.jobs[spec].runtime.draw(&mut self.job_rng);
            let j = self.jobs.len();
            self.jobs.push(SimJob {
                schedd,
                id,
                submitter,
                group,
                cpus,
                runtime,
                exit_code: self.scenario.jobs[spec].exit_code,
                submitted: now,
                first_start: None,
                run: None,
                status: JobStatus::Idle,
                ignores_soft_kill: self.scenario.jobs[spec].ignores_soft_kill,
            });
            self.job_index.insert((schedd, id), j);
            self.report.summary.jobs_submitted += 1;
            self.jobs[j].status = change.to;
            self.record(j, "submitted", &change);
        }
        // The schedd's claim core learns of its new idle jobs.
        let sd = &mut self.schedds[schedd];
        let ready = sd.claims.jobs_changed(&ids, &sd.queue);
        self.apply(schedd, ready, None);
    }

    fn periodic(&mut self) {
        for s in 0..self.schedds.len() {
            if !self.schedds[s].system_periodic && self.schedds[s].periodic_jobs.is_empty() {
                continue;
            }
            let changes = {
                let sd = &mut self.schedds[s];
                sd.queue.evaluate_periodic(self.now, &sd.system)
            };
            let ids: Vec<JobId> = changes.iter().map(|c| c.job).collect();
            for change in changes {
                let Some(&j) = self.job_index.get(&(s, change.job)) else {
                    continue;
                };
                let what = match change.to {
                    JobStatus::Removed => "periodic_remove",
                    JobStatus::Held => "periodic_hold",
                    JobStatus::Idle => "periodic_release",
                    _ => "periodic policy",
                };
                self.record(j, what, &change);
            }
            // A job stopped by its policy: the schedd's claim core gives
            // its claim back, and the run ends when the starter is gone.
            let sd = &mut self.schedds[s];
            let ready = sd.claims.jobs_changed(&ids, &sd.queue);
            self.apply(s, ready, None);
        }
        self.drive();
    }

    // ---- the central manager -----------------------------------------

    /// Brings the collector's slot ads up to date: a machine whose slots
    /// changed state sends new ads, the others every UPDATE_INTERVAL.
    fn refresh_collector(&mut self) {
        let now = self.now;
        for m in 0..self.machines.len() {
            let mach = &mut self.machines[m];
            if !mach.dirty && now - mach.ads_at < mach.update {
                continue;
            }
            // The machine's ads in the collector go back to its startd,
            // which brings them up to date without copying them.
            let (first, old) = (mach.first_ad, mach.ad_count);
            let mut ads = std::mem::take(&mut self.scratch_ads);
            ads.extend(
                self.collector[first..first + old]
                    .iter_mut()
                    .map(std::mem::take),
            );
            mach.startd
                .republish(now, &mach.starter_attrs, &mut ads, &mut mach.epoch);
            mach.dirty = false;
            mach.ads_at = now;
            let new = ads.len();
            if new == old {
                for (k, ad) in ads.drain(..).enumerate() {
                    self.collector[first + k] = ad;
                    self.collector_generation[first + k] = mach.startd.ad_generation(k);
                }
                self.scratch_ads = ads;
                continue;
            }
            // The number of slots changed (dynamic slots came or went, or
            // the first update): splice this machine's ads in, move the rest.
            let names: Vec<(usize, String)> = mach
                .startd
                .slots()
                .iter()
                .map(|s| (m, s.name.clone()))
                .collect();
            let generations: Vec<u64> = (0..new).map(|k| mach.startd.ad_generation(k)).collect();
            mach.ad_count = new;
            self.collector.splice(first..first + old, ads.drain(..));
            self.scratch_ads = ads;
            self.collector_owner.splice(first..first + old, names);
            self.collector_generation
                .splice(first..first + old, generations);
            for later in &mut self.machines[m + 1..] {
                later.first_ad = later.first_ad + new - old;
            }
        }
    }

    /// condor_defrag's poll over the collector's startd ads: its plan's
    /// cancels and drains go to the startds as `condor_drain` would send
    /// them.
    fn defrag_poll(&mut self) {
        let now = self.now;
        self.refresh_collector();
        let plan = match &mut self.defrag {
            Some(d) => d.poll(&self.collector, now),
            None => return,
        };
        for machine in &plan.cancel {
            let Some(&m) = self.machine_index.get(machine) else {
                continue;
            };
            self.report
                .notes
                .push(format!("{now}: defrag: cancel draining of {machine}"));
            self.pending.push((m, Event::CancelDrain));
        }
        for order in plan.drain {
            let Some(&m) = self.machine_index.get(&order.machine) else {
                if let Some(d) = &mut self.defrag {
                    d.drain_failed();
                }
                continue;
            };
            self.report.notes.push(format!(
                "{now}: defrag: {} draining of {}",
                order.how.name(),
                order.machine
            ));
            self.pending.push((
                m,
                Event::Drain {
                    how: match order.how {
                        Schedule::Graceful => startd::DrainHow::Graceful,
                        Schedule::Quick => startd::DrainHow::Quick,
                        Schedule::Fast => startd::DrainHow::Fast,
                    },
                    resume_on_completion: order.resume_on_completion,
                    start_expr: order.start_expr,
                    reason: order.reason,
                },
            ));
        }
        self.drive();
    }

    fn negotiate(&mut self) {
        let now = self.now;
        self.refresh_collector();
        self.report.summary.negotiation_cycles += 1;
        self.negotiator.accountant.update_priorities(now);
        // What the schedds offer: each submitter's idle jobs, from every
        // schedd, by submitter name (the negotiator's order is its own),
        // with the autoclusters each schedd keeps over what the last
        // cycle found significant.
        let significant = self.negotiator.significant.clone();
        let mut offered = Vec::new();
        for sd in self.schedds.iter_mut() {
            let lists: Vec<(String, SharedJobs)> = sd
                .claims
                .idle_jobs()
                .map(|(who, jobs)| {
                    let jobs = jobs
                        .filter_map(|id| Some((id, sd.queue.shared_job(id)?)))
                        .collect();
                    (who.to_string(), jobs)
                })
                .collect();
            if !significant.is_empty() {
                sd.autoclusters.set_significant(&significant);
            }
            let ids = sd.autoclusters.is_told().then(|| {
                let l: Vec<&[(JobId, Arc<ClassAd>)]> =
                    lists.iter().map(|(_, j)| j.as_slice()).collect();
                sd.autoclusters.ids(&l)
            });
            offered.push((lists, ids, sd.autoclusters.names()));
        }
        let mut offers: BTreeMap<&str, Offer<'_, (usize, JobId)>> = BTreeMap::new();
        for (s, (lists, ids, names)) in offered.iter().enumerate() {
            for (n, (who, jobs)) in lists.iter().enumerate() {
                let kept = ids
                    .as_ref()
                    .and_then(|i| Some((i.get(n)?.as_slice(), names.as_slice())));
                offers.entry(who.as_str()).or_default().add(
                    s,
                    jobs.iter().map(|(id, ad)| ((s, *id), &**ad)),
                    kept,
                );
            }
        }
        if offers.is_empty() {
            return;
        }
        let granted = {
            let schedds = &self.schedds;
            let requests: Vec<Request<'_, (usize, JobId)>> =
                offers.into_iter().map(|(who, o)| o.request(who)).collect();
            // The concurrency limits in use: what every schedd's claims hold.
            let on_claims = schedds
                .iter()
                .flat_map(|sd| sd.claims.jobs_on_claims().filter_map(|id| sd.queue.job(id)));
            let generations = SlotGenerations {
                generations: &self.collector_generation,
                changes_with_time: &startd::publish::changes_with_time,
            };
            self.negotiator
                .cycle(
                    &requests,
                    on_claims,
                    &self.collector,
                    Some(generations),
                    now,
                )
                .0
        };
        for g in granted {
            let (s, id) = g.job;
            let (m, slot) = self.collector_owner[g.slot].clone();
            let label = self.slot_label(m, &slot);
            let kind_text = match g.kind {
                MatchKind::Plain => "",
                MatchKind::RankPreemption => " (preempting for machine RANK)",
                MatchKind::PriorityPreemption => " (preempting for user priority)",
            };
            let info = MatchInfo {
                job: id,
                startd: self.machines[m].host.clone(),
                slot: slot.clone(),
                by_user_priority: g.kind == MatchKind::PriorityPreemption,
                cost: g.cost,
                // Pslot preemption: the dynamic slots to make room from.
                preempt_dynamic: g
                    .preempt_dynamic
                    .iter()
                    .map(|&i| self.collector_owner[i].1.clone())
                    .collect(),
                group: self
                    .collector
                    .get(g.slot)
                    .and_then(schedd::dedicated::scheduling_group),
            };
            // The negotiator tells the startd of the match, and the schedd
            // claims the slot.
            self.send_to_startd(m, Event::Matched { slot });
            let sd = &mut self.schedds[s];
            let ready = sd.claims.matched(info, &sd.queue, now);
            if !ready.to_startd.is_empty() {
                self.report.summary.matches += 1;
            }
            self.apply(s, ready, Some(format!("matched to {label}{kind_text}")));
            self.drive();
        }
        self.drive();
    }

    // ---- the report --------------------------------------------------

    fn sample(&mut self) {
        // Counted under the states' own names, which are copied once
        // each for the report, not once a slot.
        let mut counts: BTreeMap<&'static str, u32> = BTreeMap::new();
        for m in &self.machines {
            for s in m.startd.slots() {
                if s.kind == startd::slot::SlotKind::Partitionable {
                    continue;
                }
                *counts.entry(s.state.name()).or_insert(0) += 1;
            }
        }
        let states = counts
            .into_iter()
            .map(|(state, n)| (state.to_string(), n))
            .collect();
        let idle_jobs = self
            .schedds
            .iter()
            .map(|sd| sd.claims.idle_count() as u64)
            .sum();
        let mut running_by_user: BTreeMap<String, f64> = BTreeMap::new();
        let mut running = 0;
        for &j in self.running.values() {
            running += 1;
            let sj = &self.jobs[j];
            *running_by_user.entry(sj.submitter.clone()).or_insert(0.0) += sj.cpus;
        }
        self.report.samples.push(Sample {
            time: self.now,
            states,
            idle_jobs,
            running_jobs: running,
            running_by_user,
        });
    }

    fn finish(mut self) -> Report {
        let now = self.now;
        // Runs still going count as used, neither good nor bad yet.
        for j in 0..self.jobs.len() {
            if let Some(r) = &self.jobs[j].run {
                let cpu = r.done(now) as f64 * self.jobs[j].cpus;
                *self
                    .report
                    .summary
                    .usage_by_user
                    .entry(self.jobs[j].submitter.clone())
                    .or_insert(0.0) += cpu;
                self.report.summary.jobs_running_at_end += 1;
            }
        }
        self.report.summary.jobs_idle_at_end = self
            .schedds
            .iter()
            .map(|sd| sd.claims.idle_count() as u64)
            .sum();
        let used: f64 = self.report.summary.usage_by_user.values().sum();
        let capacity = self.total_cpus * self.scenario.duration as f64;
        self.report.summary.utilization = if capacity > 0.0 { used / capacity } else { 0.0 };
        if let Some(d) = &self.defrag {
            let ad = d.ad(now);
            let env = Env::at(now);
            for (name, _) in ad.iter() {
                if let Some(v) = ad.eval_attr(name.as_str(), &env).as_number() {
                    self.report
                        .summary
                        .defrag
                        .insert(name.as_str().to_string(), v);
                }
            }
        }
        let acc = &self.negotiator.accountant;
        for (name, _) in acc.records().map(|r| (r.name.clone(), ())) {
            let p = acc.effective_priority(&name);
            self.report.summary.final_priorities.insert(name, p);
        }
        self.report
    }
}

/// The machines a scenario names: the one with that host name, else
/// every machine of the class of that name (machines are laid out class
/// by class, in the scenario's order).
fn machines_named(
    machines: &[Machine],
    classes: &[crate::scenario::MachineClass],
    name: &str,
) -> Vec<usize> {
    let by_host: Vec<usize> = (0..machines.len())
        .filter(|&m| machines[m].host == name)
        .collect();
    if !by_host.is_empty() {
        return by_host;
    }
    let mut idx = 0;
    let mut out = Vec::new();
    for c in classes {
        for _ in 0..c.count {
            if c.name == name {
                out.push(idx);
            }
            idx += 1;
        }
    }
    out
}

/// A preemption's cause as the report counts it: the policy expression
/// that fired, or what happened.
fn cause_category(c: &Cause) -> String {
    match c {
        Cause::Expr { name, .. } => name.clone(),
        Cause::Event(e) if e.contains("ranks higher") => "machine RANK".into(),
        Cause::Event(e) if e.contains("user priority") => "user priority".into(),
        Cause::Event(e) => e.clone(),
        Cause::Timer(t) => t.split(':').next().unwrap_or(t).to_string(),
    }
}

/// `slot@host`, as the report names a slot.
fn label(slot: &str, host: &str) -> String {
    let mut s = String::with_capacity(slot.len() + 1 + host.len());
    s.push_str(slot);
    s.push('@');
    s.push_str(host);
    s
}

/// Runs a scenario to its end.
pub fn simulate(scenario: &Scenario, files: &dyn Files) -> Result<Report, SimError> {
    Ok(Simulation::new(scenario, files)?.run())
}

/// The report's words for a job event.
fn describe(ev: &JobEvent) -> String {
    match ev {
        JobEvent::Matched => "matched".into(),
        JobEvent::Started { slot, .. } => format!("started on {slot}"),
        JobEvent::Suspended { .. } => "suspended".into(),
        JobEvent::Unsuspended => "unsuspended".into(),
        JobEvent::Evicted { reason, .. } => {
            format!("evicted ({})", reason.as_deref().unwrap_or("vacated"))
        }
        JobEvent::Exited {
            how: ExitHow::Code(c),
            ..
        } => format!("exited with code {c}"),
        JobEvent::Exited {
            how: ExitHow::Signal { signal, .. },
            ..
        } => format!("exited by signal {signal}"),
        JobEvent::Held { reason, .. } => format!("held: {reason}"),
        JobEvent::TransferOutputStarted => "transferring output".into(),
        JobEvent::Released { reason } => format!("released: {reason}"),
        JobEvent::Removed { reason } => format!("removed: {reason}"),
        JobEvent::Disconnected { startd, .. } => format!("disconnected from {startd}"),
        JobEvent::Reconnected { startd, .. } => format!("reconnected to {startd}"),
        JobEvent::ReconnectFailed { reason, .. } => format!("reconnect failed: {reason}"),
    }
}
