//! The rest of the pool beside the access point: the execute point (the
//! `startd` engine polled with the `host` crate's readings, its actions
//! carried out by the `starter` crate on real processes), the central
//! manager (the `negotiator`'s cycle and accountant over the slot ads the
//! engine publishes), and between them the schedd's part of running a job
//! (claiming a matched slot, activating the claim, reusing it for the
//! submitter's next idle job, telling the queue what happened: the
//! shadow's work in HTCondor).
//!
//! [`Node`] is plain synchronous code behind the server's one lock. What
//! must wait (a job's exit, a hook program, a job's output coming back)
//! is handed to the server as [`Work`], and its outcome comes back through
//! [`Node::exited`], [`Node::finished`] and [`Node::hook_done`]. Every
//! decision is a core's: what a reading means and what a slot does is the
//! startd engine's, who gets which slot the negotiator's, what an exit or
//! an eviction does to a job the schedd's queue.
//!
//! Crash safety: a job's run (its process group and when its leader
//! started) is recorded in `<state>/running/` before the queue hears that
//! it started; at start, whatever a dead pool left running is killed, and
//! the jobs the queue still calls running are evicted back to idle, to
//! run again: none is lost, none runs twice at once.

use std::collections::{BTreeMap, BTreeSet};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use classad::{ClassAd, Env, Value};
use negotiator::accountant::Accountant;
use negotiator::collector::{AdType, CollectorStore};
use negotiator::cycle::{MatchKind, Policy, SubmitterJobs};
use negotiator::limits::ConcurrencyLimits;
use negotiator::matchmaker::negotiation_cycle;
use schedd::claims::{
    self, submitter_of, Claims, MatchInfo, RunEnd, StartFailure, StarterReport, Stop,
};
use schedd::{ExitHow, JobEvent, JobId, JobStatus, RunReport};
use startd::resources::HostReadings;
use startd::{Action, Activity, Event, Ready, Startd, State};
use starter::{
    CgroupPolicy, ExitKind, ExitReport, ExitStatus, FinishProblem, Hooks, JobSpec, RunAs,
    RunningJob, StartError, Starter, StarterSettings,
};

pub(crate) use crate::leftovers::record_running;
use crate::leftovers::{forget_running, kill_leftovers};
use crate::schedd_service::{literal_str, Schedd};

/// The execute point's and the central manager's configuration.
pub struct NodeConfig {
    /// The configuration as the startd reads it (subsystem STARTD).
    pub startd: config::Config,
    /// As the negotiator reads it (subsystem NEGOTIATOR).
    pub negotiator: config::Config,
    /// The machine's name in slot names (`slot1@name`).
    pub hostname: String,
    /// What the machine offers, read once at start.
    pub host: HostReadings,
    /// STARTD_READINGS_FILE: readings that replace measured ones (tests,
    /// demos; see the `host` crate).
    pub readings_file: Option<PathBuf>,
    /// EXECUTE: where job sandboxes are made.
    pub execute_dir: PathBuf,
}

/// Something the server must do outside the lock, then report back.
pub enum Work {
    /// Wait for the job on `slot` to exit (its pidfd turns readable; with
    /// no pidfd, poll), then call [`Node::exited`].
    Watch {
        slot: String,
        run: u64,
        fd: Option<OwnedFd>,
    },
    /// Start the job (sandbox, input files, PREPARE_JOB, fork and exec:
    /// [`Starter::start`], which blocks), record its process group in
    /// `running_dir`, then call [`Node::started`].
    Start {
        slot: String,
        run: u64,
        spec: Box<JobSpec>,
        running_dir: PathBuf,
    },
    /// The job has exited: bring its output back and run JOB_EXIT
    /// ([`RunningJob::finish`], which blocks), then call [`Node::finished`].
    Finish {
        slot: String,
        run: u64,
        job: Box<RunningJob>,
    },
    /// Run a startd hook program; for FETCH_WORK, call [`Node::hook_done`]
    /// with what it printed.
    Hook {
        slot: String,
        program: PathBuf,
        args: Vec<String>,
        input: String,
        fetch: bool,
    },
    /// Idle jobs may have a slot now: run a negotiation cycle soon.
    Reschedule,
}

/// A job's process on a slot.
struct Run {
    id: u64,
    /// The claim it runs on: the schedd's (whose claim core hears how the
    /// run goes), or one a FETCH_WORK hook made.
    claim_id: String,
    /// `None` while it is being started, and once the process exited and
    /// is being finished.
    process: Option<Box<RunningJob>>,
    /// Being started outside the lock: what the startd asked for meanwhile
    /// waits in `deferred`, to be done once the process exists.
    starting: bool,
    deferred: Vec<Control>,
    /// Why it is ending, when something other than the job ends it.
    kind: ExitKind,
    /// What the startd said when it began evicting, for the job's log.
    evicted_because: Option<String>,
}

/// What the startd asks the starter to do to a running job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Control {
    Suspend,
    Resume,
    SoftKill,
    HardKill,
}

/// The execute point, the central manager and the schedd's side of
/// running jobs, around the access point's [`Schedd`].
pub struct Node {
    pub schedd: Schedd,
    pub startd: Startd,
    sampler: host::sampler::Sampler,
    accountant: Accountant,
    /// The collector: the slot ads as the startd last published them, the
    /// schedd's ad and its submitters' ads; what the negotiator and
    /// `condor_status` read.
    collector: CollectorStore,
    limits: ConcurrencyLimits,
    policy: Policy,
    startd_config: config::Config,
    hostname: String,
    running_dir: PathBuf,
    state_dir: PathBuf,
    /// The starter's settings every job starts from (read from the
    /// configuration at start and at reconfig, not at every job).
    starter: StarterSettings,
    /// The schedd's claims and its idle jobs by submitter (the claim
    /// protocol's core).
    claims: Claims,
    runs: BTreeMap<String, Run>,
    run_seq: u64,
    pending: Vec<Event>,
    work: Vec<Work>,
    /// Intervals, seconds.
    pub poll_interval: u64,
    pub negotiator_interval: u64,
    pub alive_interval: u64,
    /// What went wrong that only the daemon's log can say.
    notes: Vec<String>,
    /// Mips and KFlops, once measured.
    benchmarks: Option<(i64, i64)>,
}

fn param(c: &config::Config, name: &str) -> Option<String> {
    c.get(name).ok().flatten().filter(|v| !v.trim().is_empty())
}

fn interval(c: &config::Config, name: &str, default: i64) -> Result<u64, String> {
    let v = c.integer_or(name, default).map_err(|e| e.to_string())?;
    Ok(v.max(1) as u64)
}

/// The starter's settings from the configuration: EXECUTE, whom jobs run
/// as, their cgroup, USER_JOB_WRAPPER, FILESYSTEM_DOMAIN, the update
/// intervals, and the hooks of STARTER_JOB_HOOK_KEYWORD.
fn starter_base(
    c: &config::Config,
    execute_dir: &Path,
    run_as: RunAs,
    cgroup: CgroupPolicy,
) -> StarterSettings {
    let mut s = StarterSettings::new(execute_dir);
    s.run_as = run_as;
    s.cgroup = cgroup;
    s.user_job_wrapper = param(c, "USER_JOB_WRAPPER").map(PathBuf::from);
    s.file_system_domain = param(c, "FILESYSTEM_DOMAIN");
    if let Some(k) = param(c, "STARTER_JOB_HOOK_KEYWORD") {
        s.hooks = hooks_for(c, &k);
    }
    if let Ok(Some(i)) = c.integer("STARTER_INITIAL_UPDATE_INTERVAL") {
        s.initial_update_interval = std::time::Duration::from_secs(i.max(1) as u64);
    }
    if let Ok(Some(i)) = c.integer("STARTER_UPDATE_INTERVAL") {
        s.update_interval = std::time::Duration::from_secs(i.max(1) as u64);
    }
    s
}

/// The job hooks `<KEYWORD>_HOOK_PREPARE_JOB`, `_UPDATE_JOB_INFO`, `_JOB_EXIT`.
fn hooks_for(c: &config::Config, keyword: &str) -> Hooks {
    let hook = |name: &str| param(c, &format!("{keyword}_HOOK_{name}")).map(PathBuf::from);
    Hooks {
        prepare_job: hook("PREPARE_JOB"),
        update_job_info: hook("UPDATE_JOB_INFO"),
        job_exit: hook("JOB_EXIT"),
        // A hook that hangs is killed after five minutes (the starter
        // reports it as the hook's failure).
        timeout: Some(std::time::Duration::from_secs(300)),
    }
}

/// Why a job could not be started, as the claim core's hold codes see it.
fn start_failure(e: &StartError) -> StartFailure {
    match e {
        StartError::Hook { .. } => StartFailure::Hook,
        StartError::Input { .. } | StartError::UrlInput(_) => StartFailure::Input,
        _ => StartFailure::Other,
    }
}

/// A quick measure of this machine's speed for the slot ads' Mips and
/// KFlops (HTCondor runs its Dhrystone and Linpack for this): a fixed
/// integer loop and a fixed floating-point loop, timed.
fn benchmarks() -> (i64, i64) {
    let t = std::time::Instant::now();
    let mut x: u64 = 1;
    for i in 0..20_000_000u64 {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(i);
    }
    std::hint::black_box(x);
    let int_secs = t.elapsed().as_secs_f64().max(1e-6);
    let t = std::time::Instant::now();
    let mut f = 1.0f64;
    for i in 0..5_000_000u64 {
        f = f * 1.000_000_1 + (i as f64) * 1e-9;
    }
    std::hint::black_box(f);
    let flop_secs = t.elapsed().as_secs_f64().max(1e-6);
    // Two operations per step.
    ((40.0 / int_secs) as i64, (10_000.0 / flop_secs) as i64)
}

impl Node {
    /// Builds the startd from the configuration and the machine, the
    /// negotiator's policy and accountant, and takes over whatever a
    /// previous pool left running (killed; its jobs idle again).
    pub fn new(
        mut schedd: Schedd,
        cfg: NodeConfig,
        state_dir: &Path,
        now: i64,
    ) -> Result<Node, String> {
        let startd = Startd::from_config(&cfg.startd, &cfg.hostname, &cfg.host, now)
            .map_err(|e| format!("startd: {e}"))?;
        let policy =
            Policy::from_config(&cfg.negotiator).map_err(|e| format!("negotiator: {e}"))?;
        let mut accountant =
            Accountant::from_config(&cfg.negotiator).map_err(|e| format!("accountant: {e}"))?;
        // The figures a previous pool left (priorities, factors, usage).
        if let Some(saved) = crate::accounting::load(state_dir)? {
            accountant = accountant.with_state(saved);
        }
        let limits = ConcurrencyLimits::from_config(&cfg.negotiator)
            .map_err(|e| format!("concurrency limits: {e}"))?;
        let collector =
            CollectorStore::from_config(&cfg.negotiator).map_err(|e| format!("collector: {e}"))?;
        let console =
            param(&cfg.startd, "CONSOLE_DEVICES").unwrap_or_else(|| "mouse, console".into());
        let sampler =
            host::sampler::Sampler::new(host::Root::system(), &console, cfg.readings_file.clone());
        let running_dir = state_dir.join("running");
        crate::statedir::private_dir(&running_dir)
            .map_err(|e| format!("{}: {e}", running_dir.display()))?;
        std::fs::create_dir_all(&cfg.execute_dir)
            .map_err(|e| format!("EXECUTE {}: {e}", cfg.execute_dir.display()))?;
        // HTCondor's rule: a daemon started as root runs each job as its
        // owner; one started by a user runs every job as that user.
        // SAFETY: geteuid cannot fail.
        let run_as = if unsafe { libc::geteuid() } == 0 {
            RunAs::JobOwner
        } else {
            RunAs::Starter
        };
        let mut notes = Vec::new();
        // Jobs get a cgroup v2 of their own under ours where it is
        // writable; else their process group and session hold them.
        let cgroup = match Starter::probe(&CgroupPolicy::Auto).cgroup_parent {
            Ok(parent) => CgroupPolicy::Under(parent),
            Err(why) => {
                notes.push(format!(
                    "jobs run without a cgroup (suspend and kill by process group): {why}"
                ));
                CgroupPolicy::Disabled
            }
        };
        let poll_interval = interval(&cfg.startd, "POLLING_INTERVAL", 5)?;
        let negotiator_interval = interval(&cfg.negotiator, "NEGOTIATOR_INTERVAL", 60)?;
        let alive_interval = interval(&cfg.startd, "ALIVE_INTERVAL", 300)?;
        let cgroup_parent = match &cgroup {
            CgroupPolicy::Under(p) => Some(p.as_path()),
            _ => None,
        };
        kill_leftovers(&running_dir, &cfg.execute_dir, cgroup_parent);
        // Jobs the queue says were on a machine ran under a pool that is
        // gone: running ones are evicted to run again; removed (or
        // completed) ones whose run had not ended move to the history.
        let on_a_machine: Vec<(JobId, JobStatus)> = schedd
            .queue()
            .jobs()
            .filter_map(|(id, _)| Some((id, schedd.queue().status(id)?)))
            .filter(|(_, st)| {
                matches!(
                    st,
                    JobStatus::Running
                        | JobStatus::Suspended
                        | JobStatus::TransferringOutput
                        | JobStatus::Removed
                        | JobStatus::Completed
                )
            })
            .collect();
        for (id, status) in on_a_machine {
            let done = if matches!(status, JobStatus::Removed | JobStatus::Completed) {
                schedd.run_ended(id, now)
            } else {
                let ev = JobEvent::Evicted {
                    checkpointed: false,
                    reason: Some("the pool stopped while the job ran; it will run again".into()),
                    report: RunReport::default(),
                };
                schedd.job_event(id, ev, now).map(|_| ())
            };
            if let Err(e) = done {
                notes.push(e);
            }
        }
        let starter = starter_base(&cfg.startd, &cfg.execute_dir, run_as, cgroup);
        let claims = Claims::new(
            &cfg.hostname,
            &format!("<{}>#{}", cfg.hostname, std::process::id()),
            alive_interval as i64,
            limits.clone(),
        );
        let mut node = Node {
            schedd,
            startd,
            sampler,
            accountant,
            collector,
            limits,
            policy,
            hostname: cfg.hostname,
            startd_config: cfg.startd,
            running_dir,
            state_dir: state_dir.to_path_buf(),
            starter,
            claims,
            runs: BTreeMap::new(),
            run_seq: 0,
            pending: Vec::new(),
            work: Vec::new(),
            poll_interval,
            negotiator_interval,
            alive_interval,
            notes,
            benchmarks: None,
        };
        let all: Vec<JobId> = node.schedd.queue().jobs().map(|(id, _)| id).collect();
        node.schedd.take_touched();
        let _ = node.claims.jobs_changed(&all, node.schedd.queue());
        // Jobs waiting from before a restart get a cycle at once (after the
        // first poll), as a restarted schedd asks for one, not after a
        // whole NEGOTIATOR_INTERVAL.
        if node.has_idle_jobs() {
            node.work.push(Work::Reschedule);
        }
        Ok(node)
    }

    /// What the server must do now.
    pub fn take_work(&mut self) -> Vec<Work> {
        std::mem::take(&mut self.work)
    }

    /// Problems only the daemon's log can report.
    pub fn take_notes(&mut self) -> Vec<String> {
        std::mem::take(&mut self.notes)
    }

    /// Whether any job waits for a slot.
    pub fn has_idle_jobs(&self) -> bool {
        self.claims.has_idle_jobs()
    }

    /// The accountant (for `userprio`).
    pub fn accountant(&self) -> &Accountant {
        &self.accountant
    }

    pub fn accountant_mut(&mut self) -> &mut Accountant {
        &mut self.accountant
    }

    pub fn hostname(&self) -> &str {
        &self.hostname
    }

    /// New negotiator policy, accountant settings (keeping its figures),
    /// limits and startd configuration (after `condor_reconfig`).
    pub(crate) fn set_central_manager(
        &mut self,
        policy: Policy,
        accountant: Accountant,
        limits: ConcurrencyLimits,
        startd_config: config::Config,
    ) {
        self.policy = policy;
        self.accountant = accountant.with_state(self.accountant.state());
        self.claims.set_limits(limits.clone());
        self.limits = limits;
        self.starter = starter_base(
            &startd_config,
            &self.starter.execute_dir,
            self.starter.run_as.clone(),
            self.starter.cgroup.clone(),
        );
        self.startd_config = startd_config;
    }

    /// The slot ads as the collector would hold them now.
    /// The startd's update to the collector: every slot's ad now; the ads
    /// of slots that are gone (dynamic slots given back) are withdrawn.
    pub fn publish_slots(&mut self, now: i64) {
        let ads = self.startd.published_ads(now);
        let names: BTreeSet<String> = ads.iter().filter_map(|a| literal_str(a, "Name")).collect();
        let gone: Vec<String> = self
            .collector
            .ads(Some(&AdType::Startd), now)
            .filter_map(|a| literal_str(a, "Name"))
            .filter(|n| !names.contains(n))
            .collect();
        for name in gone {
            self.collector.invalidate(&AdType::Startd, &name);
        }
        for ad in ads {
            if let Err(e) = self.collector.update(AdType::Startd, ad, now) {
                self.notes
                    .push(format!("collector: a slot ad was refused: {e}"));
            }
        }
    }

    /// The schedd's update to the collector: its own ad and one per
    /// submitter with jobs, with their job counts (what `condor_status
    /// -schedd` and `-submitters` show).
    pub fn publish_schedd(&mut self, now: i64) {
        #[derive(Default)]
        struct Counts {
            idle: i64,
            running: i64,
            held: i64,
        }
        let mut by_user: BTreeMap<String, Counts> = BTreeMap::new();
        let mut total = Counts::default();
        for (id, ad) in self.schedd.queue().jobs() {
            let c = by_user.entry(submitter_of(ad)).or_default();
            match self.schedd.queue().status(id) {
                Some(JobStatus::Idle) => {
                    c.idle += 1;
                    total.idle += 1;
                }
                Some(JobStatus::Running | JobStatus::Suspended) => {
                    c.running += 1;
                    total.running += 1;
                }
                Some(JobStatus::Held) => {
                    c.held += 1;
                    total.held += 1;
                }
                _ => {}
            }
        }
        let schedd_name = self.hostname.clone();
        let counts = |ad: &mut ClassAd, c: &Counts| {
            ad.insert_value("IdleJobs", c.idle);
            ad.insert_value("RunningJobs", c.running);
            ad.insert_value("HeldJobs", c.held);
        };
        let mut ad = ClassAd::new();
        ad.insert_value("MyType", "Scheduler");
        ad.insert_value("Name", schedd_name.as_str());
        ad.insert_value("Machine", self.hostname.as_str());
        ad.insert_value("TotalIdleJobs", total.idle);
        ad.insert_value("TotalRunningJobs", total.running);
        ad.insert_value("TotalHeldJobs", total.held);
        counts(&mut ad, &total);
        let _ = self.collector.update(AdType::Schedd, ad, now);
        let stale: Vec<String> = self
            .collector
            .ads(Some(&AdType::Submitter), now)
            .filter_map(|a| literal_str(a, "Name"))
            .filter(|n| !by_user.contains_key(n))
            .collect();
        for name in stale {
            self.collector.invalidate(&AdType::Submitter, &name);
        }
        for (user, c) in &by_user {
            let mut ad = ClassAd::new();
            ad.insert_value("MyType", "Submitter");
            ad.insert_value("Name", user.as_str());
            ad.insert_value("ScheddName", schedd_name.as_str());
            ad.insert_value("Machine", self.hostname.as_str());
            counts(&mut ad, c);
            let _ = self.collector.update(AdType::Submitter, ad, now);
        }
    }

    /// The collector's live ads of one type (`condor_status`).
    pub fn collector(&self) -> &CollectorStore {
        &self.collector
    }

    fn slot_label(&self, slot: &str) -> String {
        format!("{slot}@{}", self.hostname)
    }

    // ---- the schedd's claims -------------------------------------------

    /// After any change to the queue (a submission, a user's hold,
    /// release or removal, periodic policy): the claim core keeps its idle
    /// index, takes held or removed jobs off their machines, and asks for
    /// a cycle if new idle jobs came.
    pub fn queue_changed(&mut self, now: i64) {
        self.apply(claims::Ready::default(), now);
        self.drive(now);
    }

    /// Carries out what the claim core decided: job events to the queue
    /// (and the store, and the event log), charges to the accountant,
    /// messages to the startd, stops to the runs; then tells the core
    /// which jobs that changed, until nothing more changes.
    fn apply(&mut self, mut ready: claims::Ready, now: i64) {
        for _ in 0..1000 {
            for (id, ev) in ready.job_events {
                if let Err(e) = self.schedd.job_event(id, ev, now) {
                    self.notes.push(e);
                }
            }
            for id in ready.runs_ended {
                if let Err(e) = self.schedd.run_ended(id, now) {
                    self.notes.push(e);
                }
            }
            for c in ready.charges {
                c.apply(&mut self.accountant, now);
            }
            for (claim_id, stop) in ready.stops {
                let kind = match stop {
                    Stop::Hold => ExitKind::Hold,
                    Stop::Remove => ExitKind::Remove,
                };
                if let Some(r) = self.runs.values_mut().find(|r| r.claim_id == claim_id) {
                    r.kind = kind;
                    if let Some(p) = r.process.as_mut() {
                        p.set_exit_kind(kind);
                    }
                }
            }
            self.pending
                .extend(ready.to_startd.into_iter().map(|(_, ev)| ev));
            for (id, text) in ready.job_notes {
                self.notes.push(format!("job {id}: {text}"));
            }
            if ready.reschedule {
                self.work.push(Work::Reschedule);
            }
            let touched = self.schedd.take_touched();
            if touched.is_empty() {
                return;
            }
            ready = self.claims.jobs_changed(&touched, self.schedd.queue());
        }
    }

    /// A starter's report to the claim's schedd.
    fn report(&mut self, report: StarterReport, now: i64) {
        let ready = self.claims.starter_said(report, self.schedd.queue(), now);
        self.apply(ready, now);
    }

    // ---- the startd ----------------------------------------------------

    /// One poll: the readings now, through the engine's policy.
    pub fn poll(&mut self, now: i64) {
        // The starter's timers (UPDATE_JOB_INFO when due, memory samples)
        // run when its job is polled, and the exit watcher polls a job only
        // once it has exited: without this, UPDATE_JOB_INFO never ran. A
        // job found to have exited is handed on as the watcher would.
        let live: Vec<(String, u64)> = self
            .runs
            .iter()
            .filter(|(_, r)| r.process.is_some())
            .map(|(slot, r)| (slot.clone(), r.id))
            .collect();
        for (slot, run) in live {
            self.exited(&slot, run);
        }
        let pids: Vec<Vec<u32>> = self
            .startd
            .slots()
            .iter()
            .map(|s| {
                self.runs
                    .get(&s.name)
                    .and_then(|r| r.process.as_ref())
                    .map(|p| p.tree_pids().into_iter().map(|p| p as u32).collect())
                    .unwrap_or_default()
            })
            .collect();
        let readings = match self.sampler.sample(SystemTime::now(), &pids) {
            Ok(r) => r,
            Err(e) => {
                // The policy keeps its last readings; the timers still run.
                self.notes.push(format!("readings: {e}"));
                self.startd.readings.clone()
            }
        };
        let ready = self.startd.tick(now, readings);
        self.absorb(ready, now);
        self.drive(now);
        self.publish_slots(now);
        self.publish_schedd(now);
        self.collector.expire(now);
    }

    /// Hands pending events to the startd until none is left.
    fn drive(&mut self, now: i64) {
        for _ in 0..1000 {
            if self.pending.is_empty() {
                return;
            }
            for ev in std::mem::take(&mut self.pending) {
                let ready = self.startd.receive(ev, now);
                self.absorb(ready, now);
            }
        }
        self.notes
            .push("startd events did not settle after 1000 rounds".into());
    }

    /// Carries out what the startd decided.
    fn absorb(&mut self, ready: Ready, now: i64) {
        // A slot that became free (the owner left, a claim ended, the
        // machine came up) is offered to waiting jobs at once, as the
        // startd's update to the collector would prompt a cycle.
        if ready.transitions.iter().any(|t| t.to.0 == State::Unclaimed) && self.has_idle_jobs() {
            self.work.push(Work::Reschedule);
        }
        for t in &ready.transitions {
            if t.from.0 == State::Claimed
                && (t.to.0 == State::Preempting || t.to.1 == Activity::Retiring)
            {
                if let Some(r) = self.runs.get_mut(&t.slot) {
                    r.evicted_because.get_or_insert_with(|| t.cause.to_string());
                }
            }
        }
        for a in ready.actions {
            match a {
                Action::StartJob {
                    slot,
                    claim_id,
                    job,
                    nice,
                    ..
                } => self.start_job(&slot, &claim_id, job, nice, now),
                Action::SuspendJob { slot } => self.suspend(&slot, now),
                Action::ContinueJob { slot } => self.resume(&slot, now),
                Action::VacateJob { slot } => self.signal(&slot, false),
                Action::KillJob { slot } | Action::KillStarterTree { slot } => {
                    self.signal(&slot, true)
                }
                a @ (Action::ClaimGranted { .. }
                | Action::ClaimRefused { .. }
                | Action::ClaimIdle { .. }
                | Action::ActivationRefused { .. }
                | Action::ClaimEnded { .. }) => {
                    let ready = self.claims.startd_said(a, self.schedd.queue(), now);
                    self.apply(ready, now);
                }
                Action::Refused(r) => self.notes.push(format!("startd refused: {r}")),
                Action::RunBenchmarks { slot } => {
                    // The machine's figures, measured once: every slot asks,
                    // and the loops hold the pool up while they run.
                    let (mips, kflops) = *self.benchmarks.get_or_insert_with(benchmarks);
                    self.pending
                        .push(Event::BenchmarksDone { slot, mips, kflops });
                }
                Action::StartBackfill { slot, .. } => {
                    self.notes.push(format!(
                        "{slot}: backfill is not supported by this daemon yet; the slot leaves Backfill"
                    ));
                    self.pending.push(Event::BackfillExited { slot });
                }
                Action::KillBackfill { slot } => self.pending.push(Event::BackfillExited { slot }),
                Action::FetchWork {
                    slot,
                    hook,
                    slot_ad,
                } => self.work.push(Work::Hook {
                    slot,
                    program: PathBuf::from(hook),
                    args: Vec::new(),
                    input: starter::hook_input(&[&slot_ad]),
                    fetch: true,
                }),
                Action::ReplyFetch {
                    slot,
                    hook,
                    accept,
                    job,
                    slot_ad,
                } => self.work.push(Work::Hook {
                    slot,
                    program: PathBuf::from(hook),
                    args: vec![if accept { "accept" } else { "reject" }.into()],
                    input: starter::hook_input(&[&job, &slot_ad]),
                    fetch: false,
                }),
                Action::EvictClaim {
                    slot,
                    hook,
                    job,
                    slot_ad,
                } => self.work.push(Work::Hook {
                    slot,
                    program: PathBuf::from(hook),
                    args: Vec::new(),
                    input: starter::hook_input(&[&job, &slot_ad]),
                    fetch: false,
                }),
                Action::DrainComplete => self.notes.push("draining is complete".into()),
                Action::ShutdownComplete => {}
            }
        }
    }

    /// What a FETCH_WORK hook printed (a job ad, or nothing).
    pub fn hook_done(&mut self, slot: String, output: Result<String, String>, now: i64) {
        let job = match output {
            Ok(text) if text.trim().is_empty() => None,
            Ok(text) => {
                match classad::reader::parse_old_ad(&text).or_else(|_| ClassAd::parse(&text)) {
                    Ok(ad) => Some(Box::new(ad)),
                    Err(e) => {
                        self.notes.push(format!(
                            "{slot}: FETCH_WORK printed something that is not a job ad: {e}"
                        ));
                        None
                    }
                }
            }
            Err(e) => {
                self.notes.push(format!("{slot}: FETCH_WORK: {e}"));
                None
            }
        };
        self.pending.push(Event::FetchedWork { slot, job });
        self.drive(now);
    }

    /// The settings for one job: the execute point's, with the job's
    /// niceness, its slot, and the hooks of its own HookKeyword if it names
    /// one other than STARTER_JOB_HOOK_KEYWORD.
    fn starter_settings(&self, slot: &str, job: &ClassAd, nice: i64, now: i64) -> StarterSettings {
        let mut s = self.starter.clone();
        s.nice_increment = nice.clamp(0, 19) as i32;
        s.slot_name = slot.to_string();
        s.slot_ad = self.startd.ad_of(slot, now);
        if let Some(k) = literal_str(job, "HookKeyword").filter(|k| !k.trim().is_empty()) {
            s.hooks = hooks_for(&self.startd_config, &k);
        }
        s
    }

    fn start_job(&mut self, slot: &str, claim_id: &str, job: ClassAd, nice: i64, now: i64) {
        let settings = self.starter_settings(slot, &job, nice, now);
        let spec = match JobSpec::new(job, settings) {
            Ok(spec) => spec,
            Err(e) => return self.start_failed(slot, claim_id, e, now),
        };
        self.run_seq += 1;
        let run = self.run_seq;
        self.runs.insert(
            slot.to_string(),
            Run {
                id: run,
                claim_id: claim_id.to_string(),
                process: None,
                starting: true,
                deferred: Vec::new(),
                kind: ExitKind::Exit,
                evicted_because: None,
            },
        );
        self.work.push(Work::Start {
            slot: slot.to_string(),
            run,
            spec: Box::new(spec),
            running_dir: self.running_dir.clone(),
        });
    }

    /// The job on `slot` was started (or could not be): the run gets its
    /// process, the queue hears the job started, and what the startd asked
    /// for meanwhile is done now.
    pub fn started(
        &mut self,
        slot: &str,
        run: u64,
        result: Result<RunningJob, StartError>,
        now: i64,
    ) {
        let Some(r) = self
            .runs
            .get_mut(slot)
            .filter(|r| r.id == run && r.starting)
        else {
            // Not ours any more: dropping the job kills it. (Its record in
            // `running/` is left: the slot may have a newer run.)
            return;
        };
        let process = match result {
            Ok(p) => p,
            Err(e) => {
                let r = self.runs.remove(slot).expect("found above");
                forget_running(&self.running_dir, slot);
                self.start_failed(slot, &r.claim_id, e, now);
                self.drive(now);
                return;
            }
        };
        let fd = process
            .exit_fd()
            .and_then(|fd| fd.try_clone_to_owned().ok());
        r.process = Some(Box::new(process));
        r.starting = false;
        let deferred = std::mem::take(&mut r.deferred);
        let claim_id = r.claim_id.clone();
        self.work.push(Work::Watch {
            slot: slot.to_string(),
            run,
            fd,
        });
        let report = StarterReport::Started {
            claim_id,
            host: self.hostname.clone(),
            slot: self.slot_label(slot),
        };
        self.report(report, now);
        for c in deferred {
            match c {
                Control::Suspend => self.suspend(slot, now),
                Control::Resume => self.resume(slot, now),
                Control::SoftKill => self.signal(slot, false),
                Control::HardKill => self.signal(slot, true),
            }
        }
        self.drive(now);
    }

    /// The job could not be started: the startd hears its starter is
    /// gone, and the claim's schedd why (it holds the job with HTCondor's
    /// hold code and gives the claim back).
    fn start_failed(&mut self, slot: &str, claim_id: &str, e: StartError, now: i64) {
        let reason = format!("Error from {}: {e}", self.slot_label(slot));
        self.notes.push(reason.clone());
        self.pending.push(Event::StarterExited {
            slot: slot.to_string(),
        });
        let report = StarterReport::StartFailed {
            claim_id: claim_id.to_string(),
            reason,
            failure: start_failure(&e),
        };
        self.report(report, now);
    }

    /// Whether `slot`'s job is still being started; if so `c` waits.
    fn defer(&mut self, slot: &str, c: Control) -> bool {
        match self.runs.get_mut(slot) {
            Some(r) if r.starting => {
                r.deferred.push(c);
                true
            }
            _ => false,
        }
    }

    fn suspend(&mut self, slot: &str, now: i64) {
        if self.defer(slot, Control::Suspend) {
            return;
        }
        let Some(r) = self.runs.get_mut(slot) else {
            return;
        };
        let Some(p) = r.process.as_mut() else { return };
        if let Err(e) = p.suspend() {
            self.notes.push(format!("{slot}: suspending the job: {e}"));
            return;
        }
        let num_pids = p.tree_pids().len() as i64;
        let claim_id = r.claim_id.clone();
        self.report(StarterReport::Suspended { claim_id, num_pids }, now);
    }

    fn resume(&mut self, slot: &str, now: i64) {
        if self.defer(slot, Control::Resume) {
            return;
        }
        let Some(r) = self.runs.get_mut(slot) else {
            return;
        };
        let Some(p) = r.process.as_mut() else { return };
        if let Err(e) = p.resume() {
            self.notes.push(format!("{slot}: resuming the job: {e}"));
            return;
        }
        let claim_id = r.claim_id.clone();
        self.report(StarterReport::Unsuspended { claim_id }, now);
    }

    /// VacateJob (the job's soft kill signal) or KillJob (SIGKILL to the tree).
    fn signal(&mut self, slot: &str, hard: bool) {
        let Some(r) = self.runs.get_mut(slot) else {
            return;
        };
        if r.kind == ExitKind::Exit {
            r.kind = ExitKind::Evict;
        }
        if self.defer(
            slot,
            if hard {
                Control::HardKill
            } else {
                Control::SoftKill
            },
        ) {
            return;
        }
        let Some(r) = self.runs.get_mut(slot) else {
            return;
        };
        let kind = r.kind;
        let Some(p) = r.process.as_mut() else { return };
        p.set_exit_kind(kind);
        // A suspended job must run to hear its signal.
        if p.is_suspended() {
            let _ = p.resume();
        }
        let done = if hard { p.hard_kill() } else { p.soft_kill() };
        if let Err(e) = done {
            self.notes.push(format!("{slot}: signalling the job: {e}"));
        }
    }

    /// The job on `slot` may have exited (its pidfd is readable, or a poll
    /// asks): if so, it is taken to be finished outside the lock.
    pub fn exited(&mut self, slot: &str, run: u64) -> bool {
        let Some(r) = self.runs.get_mut(slot).filter(|r| r.id == run) else {
            return true;
        };
        let Some(p) = r.process.as_mut() else {
            return true;
        };
        match p.poll() {
            Ok(None) => false,
            Ok(Some(_)) | Err(_) => {
                let job = r.process.take().expect("checked above");
                self.work.push(Work::Finish {
                    slot: slot.to_string(),
                    run,
                    job,
                });
                true
            }
        }
    }

    /// The job's run is over and its output back: the queue hears how it
    /// ended, the startd that its starter is gone, and the claim takes the
    /// submitter's next job.
    pub fn finished(&mut self, slot: &str, run: u64, report: ExitReport, now: i64) {
        if self.runs.get(slot).is_none_or(|r| r.id != run) {
            return;
        }
        let r = self.runs.remove(slot).expect("checked above");
        forget_running(&self.running_dir, slot);
        for p in &report.problems {
            self.notes
                .push(format!("{}: after the job: {p}", self.slot_label(slot)));
        }
        let kib = report.usage.peak_rss_kib as i64;
        let usage = RunReport {
            remote_user_cpu: report.usage.user_cpu.round() as i64,
            remote_sys_cpu: report.usage.sys_cpu.round() as i64,
            image_size_kib: Some(kib),
            resident_set_size_kib: Some(kib),
            resources: Some(self.resources_used(slot, &report, now)),
            ..RunReport::default()
        };
        // Output that could not go back holds the job, as HTCondor's
        // TransferOutputError (12) does, with the errno as subcode.
        let output_failed = report.problems.iter().find_map(|p| match p {
            FinishProblem::Output { source, .. } => {
                Some((p.to_string(), i64::from(source.raw_os_error().unwrap_or(0))))
            }
            FinishProblem::MissingOutput { .. } => Some((p.to_string(), 2)),
            _ => None,
        });
        let end = match (r.kind, output_failed) {
            (ExitKind::Exit, Some((why, subcode))) => RunEnd::OutputFailed {
                reason: format!(
                    "Error from {}: failed to transfer output: {why}",
                    self.slot_label(slot)
                ),
                subcode,
            },
            (ExitKind::Exit, None) => RunEnd::Exited(match report.status {
                ExitStatus::Code(c) => ExitHow::Code(i64::from(c)),
                ExitStatus::Signal { signal, .. } => ExitHow::Signal {
                    signal: i64::from(signal),
                    core_file: None,
                },
            }),
            _ => RunEnd::Evicted {
                reason: r.evicted_because.clone(),
            },
        };
        self.report(
            StarterReport::Ended {
                claim_id: r.claim_id,
                end,
                report: usage,
            },
            now,
        );
        self.pending.push(Event::StarterExited {
            slot: slot.to_string(),
        });
        self.drive(now);
    }

    /// The terminate and evict events' resources table: what the slot
    /// had, what the job asked for, and what it used (HTCondor's
    /// `Partitionable Resources : Usage Request Allocated`).
    fn resources_used(&self, slot: &str, report: &ExitReport, now: i64) -> ClassAd {
        let mut ad = ClassAd::new();
        let env = Env::at(now);
        let slot_ad = self.startd.ad_of(slot, now);
        let job = &report.job;
        let number = |ad: &ClassAd, name: &str| match ad.get(name).map(|e| ad.eval(e, &env)) {
            Some(Value::Int(i)) => Some(Value::Int(i)),
            Some(Value::Real(r)) => Some(Value::Real(r)),
            _ => None,
        };
        let wall = report.duration.as_secs_f64();
        let cpus_usage = if wall > 0.0 {
            (report.usage.user_cpu + report.usage.sys_cpu) / wall
        } else {
            0.0
        };
        for res in ["Cpus", "Disk", "Memory"] {
            if let Some(v) = slot_ad.as_ref().and_then(|a| number(a, res)) {
                ad.insert_value(res, v);
            }
            if let Some(v) = number(job, &format!("Request{res}")) {
                ad.insert_value(format!("Request{res}").as_str(), v);
            }
        }
        ad.insert_value("CpusUsage", (cpus_usage * 100.0).round() / 100.0);
        ad.insert_value(
            "MemoryUsage",
            report.usage.peak_rss_kib.div_ceil(1024) as i64,
        );
        ad
    }

    /// Keep-alives for every claim (the startd's claim lease).
    pub fn keep_alive(&mut self, now: i64) {
        let ready = self.claims.keep_alive();
        self.apply(ready, now);
        self.drive(now);
    }

    /// A tool's request to the startd (vacate, drain, ...).
    pub fn startd_event(&mut self, ev: Event, now: i64) -> Result<(), String> {
        match self.startd.handle(ev, now) {
            Ok(ready) => {
                self.absorb(ready, now);
                self.drive(now);
                Ok(())
            }
            Err(r) => Err(r.to_string()),
        }
    }

    // ---- the negotiator ------------------------------------------------

    /// One negotiation cycle: match idle jobs to slots; the schedd claims
    /// them. Returns how many jobs were matched.
    pub fn negotiate(&mut self, now: i64) -> usize {
        if !self.has_idle_jobs() {
            return 0;
        }
        self.accountant.update_priorities(now);
        let mut limits = self.claims.limits_in_use(self.schedd.queue(), now);
        // The negotiator's snapshot of the collector's slot ads, each named
        // `slot@host` (the startd's slot is the part before the `@`).
        self.publish_slots(now);
        let slot_ads: Vec<ClassAd> = self
            .collector
            .ads(Some(&AdType::Startd), now)
            .cloned()
            .collect();
        let slot_names: Vec<String> = slot_ads
            .iter()
            .map(|a| {
                let name = literal_str(a, "Name").unwrap_or_default();
                name.split('@').next().unwrap_or_default().to_string()
            })
            .collect();
        // What the schedd offers: every submitter's idle jobs.
        let lists: Vec<(String, Vec<JobId>)> = self
            .claims
            .idle_jobs()
            .map(|(who, jobs)| (who.to_string(), jobs.collect()))
            .collect();
        let plan = {
            let queue = self.schedd.queue();
            let subs: Vec<SubmitterJobs<'_>> = lists
                .iter()
                .map(|(n, js)| SubmitterJobs {
                    name: n.clone(),
                    jobs: js.iter().filter_map(|&j| queue.job(j)).collect(),
                })
                .collect();
            negotiation_cycle(
                &slot_ads,
                &subs,
                &mut self.accountant,
                &mut limits,
                &self.policy,
                now,
            )
        };
        self.limits = limits;
        let mut matched = 0;
        for mt in &plan.matches {
            let Some(&job) = lists.get(mt.submitter).and_then(|l| l.1.get(mt.job)) else {
                continue;
            };
            let Some(slot) = slot_names.get(mt.slot).cloned() else {
                continue;
            };
            // On a partitionable slot: the dynamic slots to make room from
            // (a match on a claimed slot preempts only its own claim).
            let preempt_dynamic = mt
                .preempted
                .iter()
                .filter(|p| p.slot != mt.slot)
                .filter_map(|p| slot_names.get(p.slot).cloned())
                .collect();
            // The negotiator tells the startd of the match, and the schedd
            // claims the slot.
            self.pending.push(Event::Matched { slot: slot.clone() });
            let info = MatchInfo {
                job,
                startd: self.hostname.clone(),
                slot,
                by_user_priority: mt.kind == MatchKind::PriorityPreemption,
                cost: mt.cost,
                preempt_dynamic,
            };
            let ready = self.claims.matched(info, self.schedd.queue(), now);
            if !ready.to_startd.is_empty() {
                matched += 1;
            }
            self.apply(ready, now);
            self.drive(now);
        }
        // The accountant's figures are kept when a cycle changes who holds
        // what (and at shutdown), not at every cycle: a submission asks for
        // one, and there may be hundreds a second.
        if matched > 0 {
            self.save_accountant();
        }
        self.drive(now);
        matched
    }

    /// Writes the accountant's figures for the next `pool up`.
    pub fn save_accountant(&mut self) {
        if let Err(e) = crate::accounting::save(&self.state_dir, &self.accountant.state()) {
            self.notes.push(e);
        }
    }

    /// Kills every job still running (the pool is going down); their jobs
    /// run again when it comes back.
    pub fn kill_all(&mut self) {
        self.accountant.update_priorities(crate::server::now());
        self.save_accountant();
        for (slot, r) in self.runs.iter_mut() {
            if let Some(p) = r.process.as_mut() {
                let _ = p.hard_kill();
                let _ = p.wait();
            }
            forget_running(&self.running_dir, slot);
        }
    }
}
