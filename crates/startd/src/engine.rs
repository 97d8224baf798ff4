//! The engine: every slot's state machine, driven by `tick(now, readings)`
//! and `handle(event, now)`, returning what happened ([`Transition`]s)
//! and what the daemon must do ([`Action`]s), like raft-rs's `Ready`.
//!
//! The transitions and their numbers are those of HTCondor's manual
//! (`policy-configuration.rst`, "State and Activity Transitions"). Each
//! poll evaluates a slot's expressions in its own ad (with the running job
//! as TARGET while there is one) and takes at most one transition at a
//! time, repeating until the slot is settled, so chains like Matched ->
//! Owner -> Unclaimed (8 then 1) happen within one poll, each recorded.

use classad::{ClassAd, Env, Expr, Value};
use config::Config;

use crate::policy::{evaluate, is_true, Policy, PolicyError};
use crate::publish::{daemon_name, MachineInfo};
use std::collections::BTreeMap;

use crate::carve::Partitionable;
use crate::layout::{layout, LayoutError};
use crate::resources::{HostReadings, MachineResources, ResourceError};
use crate::slot::{BackfillExit, Claim, Retirement, Slot, SlotKind, SlotResources};
use crate::state::{Activity, Cause, Pair, State, Transition};

/// What the host reads, handed in at every poll.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Readings {
    /// Seconds since the keyboard and the console were last used.
    pub keyboard_idle: i64,
    pub console_idle: i64,
    /// The machine's load average (all processes).
    pub load_avg: f64,
    /// Load caused by each slot's job, by slot index in `Startd::slots`
    /// (missing: 0).
    pub condor_load: Vec<f64>,
}

/// Why a startd could not be set up from its configuration.
#[derive(Clone, Debug, PartialEq)]
pub enum SetupError {
    Resources(ResourceError),
    Layout(LayoutError),
    Policy(PolicyError),
}

impl std::fmt::Display for SetupError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SetupError::Resources(e) => write!(f, "{e}"),
            SetupError::Layout(e) => write!(f, "{e}"),
            SetupError::Policy(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for SetupError {}

/// Something the daemon must do.
#[derive(Clone, Debug)]
pub enum Action {
    /// Start a starter for `job` on the slot's claim, at this niceness;
    /// it reports to `schedd`, the claim's (its shadow's) schedd.
    StartJob {
        slot: String,
        claim_id: String,
        schedd: String,
        job: ClassAd,
        nice: i64,
    },
    /// Stop (SIGSTOP or freeze) and resume the slot's job.
    SuspendJob {
        slot: String,
    },
    ContinueJob {
        slot: String,
    },
    /// Ask the job to exit (its soft kill signal).
    VacateJob {
        slot: String,
    },
    /// Kill the job at once.
    KillJob {
        slot: String,
    },
    /// KILLING_TIMEOUT passed with the job still there: kill the starter and
    /// everything under it.
    KillStarterTree {
        slot: String,
    },
    /// The claim is over: tell the schedd that held it.
    ClaimEnded {
        slot: String,
        claim_id: String,
        schedd: String,
        reason: String,
    },
    /// A schedd's claim request was accepted (REQUEST_CLAIM's OK). `slot`
    /// is where the claim is (a new dynamic slot for a claim on a
    /// partitionable one; the partitionable slot itself while the claim
    /// waits for the dynamic slots it preempts). As HTCondor's startd, it
    /// sends the slot's ad back when the claim made a new dynamic slot
    /// (the schedd has the others' from its match).
    ClaimGranted {
        slot: String,
        claim_id: String,
        schedd: String,
        slot_ad: Option<Box<ClassAd>>,
    },
    /// A schedd's claim request was refused, and why.
    ClaimRefused {
        slot: String,
        claim_id: String,
        schedd: String,
        reason: String,
    },
    /// The claim is Claimed/Idle with no starter: it takes a job now
    /// (ACTIVATE_CLAIM) or should be released. Said once each time the
    /// claim becomes idle, with the claim's age limit (CLAIM_WORKLIFE,
    /// from `claimed_at`) and, once a job has run on it, the slot's ad as
    /// it is now (for choosing the next job; before, the schedd runs the
    /// job the claim was made for).
    ClaimIdle {
        slot: String,
        claim_id: String,
        schedd: String,
        slot_ad: Option<Box<ClassAd>>,
        claimed_at: i64,
        worklife: Option<i64>,
    },
    /// An activation was refused (the claim is past CLAIM_WORKLIFE, the
    /// slot is not idle, ...): the claim takes no job.
    ActivationRefused {
        slot: String,
        claim_id: String,
        schedd: String,
        reason: String,
    },
    /// The answer to a schedd's keep-alive (ALIVE, which HTCondor's startd
    /// answers too): whether the claim is still held here. It is the
    /// schedd's evidence that the execute point and its job are there.
    ClaimAlive {
        claim_id: String,
        /// The claim's schedd (empty for a claim not held here).
        schedd: String,
        alive: bool,
    },
    /// Another event was refused ([`Startd::receive`]); for the log.
    Refused(Refusal),
    RunBenchmarks {
        slot: String,
    },
    /// Start the backfill client (the configured BACKFILL_SYSTEM program,
    /// if any) for the slot.
    StartBackfill {
        slot: String,
        program: Option<Box<crate::policy::BackfillProgram>>,
    },
    KillBackfill {
        slot: String,
    },
    /// Job hooks: run `hook` (HOOK_FETCH_WORK) with the slot ad on its
    /// standard input; its output comes back as `Event::FetchedWork`.
    FetchWork {
        slot: String,
        hook: String,
        slot_ad: ClassAd,
    },
    /// Run `hook` (HOOK_REPLY_FETCH) with `accept` or `reject`, the job ad
    /// and the slot ad on its standard input.
    ReplyFetch {
        slot: String,
        hook: String,
        accept: bool,
        job: ClassAd,
        slot_ad: ClassAd,
    },
    /// Run `hook` (HOOK_EVICT_CLAIM) for a claim on fetched work that ends.
    EvictClaim {
        slot: String,
        hook: String,
        job: ClassAd,
        slot_ad: ClassAd,
    },
    /// Draining is complete (every slot Drained).
    DrainComplete,
    /// Shutdown is complete: no claim is left; the daemon may exit.
    ShutdownComplete,
}

/// The result of a poll or an event.
#[derive(Clone, Debug, Default)]
pub struct Ready {
    pub transitions: Vec<Transition>,
    pub actions: Vec<Action>,
}

/// An event the engine was given but will not act on, and why (the daemon
/// passes this on: to the schedd for a refused claim, to the admin for a
/// command that does not apply).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    pub slot: String,
    pub reason: String,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.slot, self.reason)
    }
}

impl std::error::Error for Refusal {}

/// A schedd's request to claim a slot.
#[derive(Clone, Debug)]
pub struct ClaimRequest {
    pub claim_id: String,
    /// The job the claim is for.
    pub job: ClassAd,
    pub schedd: String,
    pub user: String,
    /// The schedd's keep-alive interval (else ALIVE_INTERVAL).
    pub alive_interval: Option<i64>,
    /// The negotiator found this job's user deserves the slot more than
    /// the current claim's (user-priority preemption); otherwise a claim
    /// on a claimed slot must win by the machine's RANK.
    pub by_user_priority: bool,
    /// For a claim on a partitionable slot: the dynamic slots (by name)
    /// the negotiator chose to preempt to make room for the job
    /// (`ALLOW_PSLOT_PREEMPTION`). They are evicted, and the claim is
    /// granted once all of them are gone.
    pub preempt_dynamic: Vec<String>,
}

/// A claim on a partitionable slot that waits for the dynamic slots it
/// preempts to go away.
#[derive(Clone, Debug)]
pub(crate) struct PendingClaim {
    pub pslot: String,
    pub request: ClaimRequest,
    pub waiting: Vec<String>,
}

/// How draining treats running jobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DrainHow {
    /// Jobs get their retirement time, then their vacate time.
    Graceful,
    /// Jobs get no retirement, only their vacate time.
    Quick,
    /// Jobs are killed at once.
    Fast,
}

/// How a shutdown treats running jobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShutdownHow {
    /// Jobs run to completion, however long.
    Peaceful,
    /// Jobs get their retirement and vacate time.
    Graceful,
    /// Jobs are killed at once.
    Fast,
}

/// HTCondor's draining estimates: when graceful (jobs keep their
/// retirement time) and quick (only their vacate time) draining begun now
/// would complete, and how many CPU-seconds of job run time each would
/// throw away.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DrainFigures {
    pub graceful_completion: i64,
    pub graceful_badput: i64,
    pub quick_completion: i64,
    pub quick_badput: i64,
}

/// A drain in progress.
#[derive(Clone, Debug)]
pub struct Drain {
    pub id: u64,
    pub how: DrainHow,
    /// Return to normal by itself once every slot is drained.
    pub resume_on_completion: bool,
    /// START while draining (false when not given).
    pub start_expr: Option<Expr>,
    pub reason: String,
    pub complete: bool,
}

/// Something that happened to the startd.
#[derive(Clone, Debug)]
pub enum Event {
    /// The negotiator matched the slot to a job (transitions 6, 32).
    Matched {
        slot: String,
    },
    /// A schedd claims the slot (5, 9, 31; or, on a claimed slot, a claim
    /// that preempts the current one).
    RequestClaim {
        slot: String,
        request: Box<ClaimRequest>,
    },
    /// The schedd runs a job on its claim (11).
    Activate {
        slot: String,
        claim_id: String,
        job: Box<ClassAd>,
    },
    /// The slot's starter exited: the job is over (12, 18, 22-25).
    StarterExited {
        slot: String,
    },
    /// The schedd gives up its claim (or a claim waiting to preempt).
    ReleaseClaim {
        slot: String,
        claim_id: String,
    },
    /// A keep-alive for a claim.
    KeepAlive {
        claim_id: String,
    },
    /// `condor_vacate`: evict the job of one slot (or all); `fast` kills.
    Vacate {
        slot: Option<String>,
        fast: bool,
    },
    /// Benchmarks finished with these figures (4).
    BenchmarksDone {
        slot: String,
        mips: i64,
        kflops: i64,
    },
    /// The backfill client started (26) or exited (27, 29).
    BackfillStarted {
        slot: String,
    },
    BackfillExited {
        slot: String,
    },
    /// What HOOK_FETCH_WORK printed: a job ad, or nothing (no work).
    FetchedWork {
        slot: String,
        job: Option<Box<ClassAd>>,
    },
    /// `condor_drain`.
    Drain {
        how: DrainHow,
        resume_on_completion: bool,
        start_expr: Option<Expr>,
        reason: String,
    },
    /// `condor_drain -cancel`, or finalizing a completed drain.
    CancelDrain,
    /// `condor_off` and friends.
    Shutdown(ShutdownHow),
}

/// The execute point's policy engine for one machine.
#[derive(Clone, Debug)]
pub struct Startd {
    /// The slots; read them through [`Startd::slots`]: only the engine
    /// changes a slot, and what became of a claim comes out as actions.
    pub(crate) slots: Vec<Slot>,
    pub machine: MachineInfo,
    /// The readings of the last poll ([`Startd::readings`]).
    pub(crate) readings: Readings,
    pub(crate) drain: Option<Drain>,
    /// What draining would cost if it began now (published in every slot
    /// ad as HTCondor's Expected*Draining* figures), computed each poll.
    pub(crate) drain_figures: DrainFigures,
    /// When the last drain began and ended.
    pub(crate) last_drain_start: Option<i64>,
    pub(crate) last_drain_stop: Option<i64>,
    pub(crate) shutdown: Option<ShutdownHow>,
    shutdown_reported: bool,
    drain_ids: u64,
    /// Slots 1..=N see the real keyboard and console; the others see them
    /// idle for longer by `idle_boost` seconds.
    connected_keyboard: u32,
    connected_console: u32,
    idle_boost: i64,
    /// When the startd started (disconnected slots count idle time from it).
    started: i64,
    /// The configuration (dynamic slots read their sizes from it).
    config: Config,
    /// What the machine offers (custom resources, GPU properties).
    pub(crate) resources: Option<MachineResources>,
    /// The partitionable slots, by name: what each has left and its
    /// dynamic slots.
    pub(crate) partitionables: BTreeMap<String, Partitionable>,
    /// Claims on partitionable slots waiting for preempted dynamic slots.
    pending_claims: Vec<PendingClaim>,
    /// What the VM-host peers' ads say (`vm_host`): the host's `HOST_`
    /// attributes and whether START is overridden False.
    pub(crate) vm_peers: crate::vm_host::PeerView,
    /// Bumped whenever the slots' ads are built afresh or the set of slots
    /// changes: copies of the ads a caller got from
    /// [`Startd::republish`] under another epoch are not reused.
    pub(crate) ads_epoch: u64,
    /// The generations the ads last handed out by [`Startd::republish`]
    /// were written under (that caller's copies, by slot).
    pub(crate) published_stamps: Vec<Option<u64>>,
    /// Bumped by whatever may change what a quiet slot's policy reads
    /// (`quiet`): events but keep-alives, transitions, reconfiguration,
    /// a change to the set of slots.
    pub(crate) quiet_epoch: u64,
}

/// MachineMaxVacateTime and the job's JobMaxVacateTime, as evaluated.
#[derive(Clone, Copy, Debug)]
pub(crate) struct VacateTerms {
    machine: i64,
    job: Option<i64>,
}

impl VacateTerms {
    /// Seconds of vacating granted with `remaining` seconds of retirement
    /// left (see `Startd::vacate_grant`).
    pub(crate) fn grant(&self, remaining: i64) -> i64 {
        match self.job {
            None => self.machine,
            Some(j) if j <= self.machine => j.max(0),
            Some(j) => self.machine.max(remaining.min(j)),
        }
    }
}

/// Writes a load that changed: most polls find the same loads, and
/// leaving the slot's memory unwritten spares writing it back (a large
/// pool's slots do not stay in the cache between polls). Compared bit for
/// bit, so that even the sign of a zero is kept as computed.
fn set_load(at: &mut f64, load: f64) {
    if at.to_bits() != load.to_bits() {
        *at = load;
    }
}

/// What a poll's latches left of a slot (`Startd::update_latches`).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Latched {
    /// Nothing the slot publishes of them changed.
    unchanged: bool,
    /// Its ad was brought up to date at the poll.
    refreshed: bool,
}

/// What a poll's latches left of every slot, by slot index: the first 64
/// in two bit sets, so that a poll of an ordinary machine allocates
/// nothing for them; any further ones in a list.
#[derive(Debug, Default)]
struct LatchedSlots {
    unchanged: u64,
    refreshed: u64,
    further: Vec<Latched>,
    len: usize,
}

impl LatchedSlots {
    fn push(&mut self, l: Latched) {
        match u32::try_from(self.len).ok().filter(|&k| k < u64::BITS) {
            Some(k) => {
                self.unchanged |= u64::from(l.unchanged) << k;
                self.refreshed |= u64::from(l.refreshed) << k;
            }
            None => self.further.push(l),
        }
        self.len += 1;
    }

    fn len(&self) -> usize {
        self.len
    }

    fn get(&self, i: usize) -> Latched {
        match u32::try_from(i).ok().filter(|&k| k < u64::BITS) {
            Some(k) => Latched {
                unchanged: self.unchanged >> k & 1 == 1,
                refreshed: self.refreshed >> k & 1 == 1,
            },
            None => self.further[i - u64::BITS as usize],
        }
    }
}

/// Seconds after which a claim still Claimed/Idle is said to be idle to
/// its schedd again.
pub const IDLE_CLAIM_REMINDER: i64 = 60;

/// How many transitions one slot may take in one poll: a guard against a
/// policy that flips back and forth (Owner/Unclaimed with an IS_OWNER that
/// depends on State, say).
const MAX_STEPS: usize = 32;

impl Startd {
    /// A startd for `slots` (slot id, slot type, resources), all starting
    /// in Owner/Idle at `now`.
    pub fn new(
        config: &Config,
        machine: MachineInfo,
        slots: Vec<(u32, Option<u32>, SlotResources)>,
        now: i64,
    ) -> Result<Startd, PolicyError> {
        let mut machine = machine;
        let domain = |name: &str| -> Result<Option<String>, PolicyError> {
            config.get(name).map_err(|e| PolicyError(e.to_string()))
        };
        if machine.filesystem_domain.is_none() {
            machine.filesystem_domain = domain("FILESYSTEM_DOMAIN")?;
        }
        if machine.uid_domain.is_none() {
            machine.uid_domain = domain("UID_DOMAIN")?;
        }
        let mut out = Vec::with_capacity(slots.len());
        for (id, slot_type, resources) in slots {
            let policy = Policy::read(config, id, slot_type)?;
            out.push(Slot::new(id, slot_type, resources, policy, now));
        }
        let number = |name: &str, default: i64| -> Result<i64, PolicyError> {
            Ok(config
                .integer(name)
                .map_err(|e| PolicyError(e.to_string()))?
                .unwrap_or(default))
        };
        Ok(Startd {
            slots: out,
            machine,
            readings: Readings::default(),
            drain: None,
            shutdown: None,
            shutdown_reported: false,
            drain_ids: 0,
            connected_keyboard: number("SLOTS_CONNECTED_TO_KEYBOARD", 0)?.max(0) as u32,
            connected_console: number("SLOTS_CONNECTED_TO_CONSOLE", 0)?.max(0) as u32,
            idle_boost: number("DISCONNECTED_KEYBOARD_IDLE_BOOST", 1200)?,
            started: now,
            config: config.clone(),
            drain_figures: DrainFigures::default(),
            last_drain_start: None,
            last_drain_stop: None,
            resources: None,
            partitionables: BTreeMap::new(),
            pending_claims: Vec::new(),
            vm_peers: crate::vm_host::PeerView::default(),
            ads_epoch: 0,
            published_stamps: Vec::new(),
            quiet_epoch: 0,
        })
    }

    /// A startd as the configuration lays the machine out: the host's
    /// readings, NUM_CPUS/MEMORY, custom resources and SLOT_TYPE_<N>
    /// (`resources` and `layout`), each slot with its own policy, all
    /// starting in Owner/Idle at `now`.
    pub fn from_config(
        config: &Config,
        hostname: &str,
        host: &HostReadings,
        now: i64,
    ) -> Result<Startd, SetupError> {
        let resources =
            MachineResources::from_config(config, host).map_err(SetupError::Resources)?;
        let laid_out = layout(config, &resources).map_err(SetupError::Layout)?;
        let mut machine = MachineInfo::new(
            hostname,
            resources.cpus as f64,
            resources.memory,
            resources.disk,
        );
        let text = |name: &str, default: &str| -> String {
            config
                .get(name)
                .ok()
                .flatten()
                .unwrap_or_else(|| default.to_string())
        };
        machine.startd_name = daemon_name(&text("STARTD_NAME", ""), hostname);
        machine.arch = text("ARCH", "X86_64");
        machine.opsys = text("OPSYS", "LINUX");
        machine.opsys_and_ver = text("OPSYSANDVER", &machine.opsys);
        let mut startd =
            Startd::new(config, machine, Vec::new(), now).map_err(SetupError::Policy)?;
        for slot in laid_out.slots {
            let policy =
                Policy::read(config, slot.id, slot.slot_type).map_err(SetupError::Policy)?;
            let mut s = Slot::new(slot.id, slot.slot_type, slot.resources.clone(), policy, now);
            s.name = slot.name.clone();
            if slot.partitionable {
                s.kind = SlotKind::Partitionable;
                let mut p = Partitionable::new(&slot);
                p.read_consumption(config)
                    .map_err(|e| SetupError::Policy(PolicyError(e.to_string())))?;
                startd.partitionables.insert(slot.name.clone(), p);
            }
            startd.slots.push(s);
        }
        startd.resources = Some(resources);
        Ok(startd)
    }

    /// Reads the policy again (`condor_reconfig`); states and claims stay.
    pub fn reconfigure(&mut self, config: &Config) -> Result<(), PolicyError> {
        let mut policies = Vec::with_capacity(self.slots.len());
        for s in &self.slots {
            policies.push(Policy::read(config, s.id, s.slot_type)?);
        }
        let mut consumption = Vec::with_capacity(self.partitionables.len());
        for p in self.partitionables.values() {
            let mut fresh = p.clone();
            fresh
                .read_consumption(config)
                .map_err(|e| PolicyError(e.to_string()))?;
            consumption.push(fresh.consumption);
        }
        for (s, p) in self.slots.iter_mut().zip(policies) {
            s.policy = p;
        }
        for (p, c) in self.partitionables.values_mut().zip(consumption) {
            p.consumption = c;
        }
        self.invalidate_ads();
        Ok(())
    }

    pub(crate) fn env(&self, now: i64) -> Env {
        Env {
            now,
            utc_offset: self.machine.utc_offset,
            ..Env::default()
        }
    }

    /// KeyboardIdle and ConsoleIdle as slot `i` sees them at `now`. Slots
    /// 1..=SLOTS_CONNECTED_TO_KEYBOARD (CONSOLE) see the real idle times;
    /// the others, as in HTCondor, the time since the startd started plus
    /// DISCONNECTED_KEYBOARD_IDLE_BOOST, so the owner's typing never
    /// touches them.
    pub(crate) fn idle_times(&self, i: usize, now: i64) -> (i64, i64) {
        let id = self.slots[i].id;
        let r = &self.readings;
        let disconnected = now - self.started + self.idle_boost;
        let console = if id <= self.connected_console {
            r.console_idle
        } else {
            disconnected
        };
        let keyboard = if id <= self.connected_keyboard {
            r.keyboard_idle.min(console)
        } else {
            disconnected
        };
        (keyboard, console)
    }

    /// START for slot `i`: False while a VM-host peer runs a job
    /// (`vm_host`: the manual's override, above every other START), the
    /// drain's start expression while draining.
    pub(crate) fn start_expr(&self, i: usize) -> Expr {
        if self.vm_peers.start_override.is_some() {
            return Expr::from_value(Value::Bool(false));
        }
        if let Some(d) = &self.drain {
            return d
                .start_expr
                .clone()
                .unwrap_or_else(|| Expr::from_value(Value::Bool(false)));
        }
        self.slots[i]
            .policy
            .expr("START")
            .cloned()
            .unwrap_or_else(|| Expr::from_value(Value::Bool(true)))
    }

    /// What the VM-host peers' ads say now (`vm_host::VmPeers::assess`):
    /// the `HOST_` attributes go into every slot ad, and START is False
    /// while `start_override` says why. Whether anything changed (the
    /// slot ads are built again when it did).
    pub fn set_vm_peers(&mut self, view: crate::vm_host::PeerView) -> bool {
        if self.vm_peers.same_as(&view) {
            return false;
        }
        self.vm_peers = view;
        self.invalidate_ads();
        true
    }

    /// What the VM-host peers said last ([`Startd::set_vm_peers`]).
    pub fn vm_peers(&self) -> &crate::vm_host::PeerView {
        &self.vm_peers
    }

    /// The readings of the last poll.
    pub fn readings(&self) -> &Readings {
        &self.readings
    }

    /// The slots as they are now (read-only).
    pub fn slots(&self) -> &[Slot] {
        &self.slots
    }

    /// The slot named `slot` (case-insensitive, as HTCondor names slots).
    pub fn slot(&self, slot: &str) -> Option<&Slot> {
        self.index(slot).ok().map(|i| &self.slots[i])
    }

    /// A drain's CheckExpr (HTCondor's `ResMgr::startDraining`): it must
    /// be true in every slot's ad, else the drain is refused with why. A
    /// machine already draining is left for the drain itself to refuse.
    /// The ads are those the startd publishes now, with the draining
    /// estimates (the defrag daemon's CheckExpr reads them).
    pub fn drain_check(&mut self, check: &Expr, now: i64) -> Result<(), String> {
        if self.drain.is_some() {
            return Ok(());
        }
        let env = self.env(now);
        for (i, ad) in self.published_ads(now).into_iter().enumerate() {
            let name = match ad.eval_attr("Name", &env) {
                Value::Str(n) => n.to_string(),
                _ => self.slots[i].name.clone(),
            };
            match ad.eval(check, &env) {
                Value::Bool(true) => {}
                Value::Bool(false) => {
                    return Err(format!("Draining check expression is false on {name}."))
                }
                Value::Error => {
                    return Err(format!(
                        "Failed to evaluate draining check expression against {name}."
                    ))
                }
                _ => {
                    return Err(format!(
                        "Draining check expression does not evaluate to a bool on {name}."
                    ))
                }
            }
        }
        Ok(())
    }

    /// The ad of the slot named `slot` at `now`, if there is such a slot.
    pub fn ad_of(&self, slot: &str, now: i64) -> Option<ClassAd> {
        self.index(slot).ok().map(|i| self.slot_ad(i, now))
    }

    fn index(&self, slot: &str) -> Result<usize, Refusal> {
        self.slots
            .iter()
            .position(|s| s.name.eq_ignore_ascii_case(slot))
            .ok_or_else(|| Refusal {
                slot: slot.to_string(),
                reason: "no such slot".into(),
            })
    }

    /// Evaluates a policy expression of slot `i` in its ad, with the
    /// running job (if any) as TARGET; `_VANILLA` variants apply to
    /// vanilla jobs. Returns the name used and the value.
    fn eval(&self, i: usize, ad: &ClassAd, name: &'static str, now: i64) -> (&'static str, Value) {
        let s = &self.slots[i];
        let job = self.target(i);
        let (used, expr) = s.policy.for_job(name, job);
        let v = evaluate(expr, ad, job, &self.env(now));
        (used, v)
    }

    /// The ad a slot's policy sees as TARGET: the running job, else the job
    /// its claim was made for (as HTCondor evaluates a claimed slot's
    /// policy against the claim's request), else none.
    pub(crate) fn target(&self, i: usize) -> Option<&ClassAd> {
        let s = &self.slots[i];
        s.job.as_ref().or(s.claim.as_ref().map(|c| &c.request))
    }

    /// START as the slot sees it now: "locally" (with no job) while
    /// unclaimed, against the claim's job once claimed. "START evaluates to
    /// FALSE" means exactly false: UNDEFINED is not.
    fn start_locally_false(&self, i: usize, ad: &ClassAd, now: i64) -> (bool, Value) {
        let v = evaluate(
            Some(&self.start_expr(i)),
            ad,
            self.target(i),
            &self.env(now),
        );
        (
            matches!(v, Value::Bool(false)) || v.as_bool() == Some(false),
            v,
        )
    }

    // ---- Polling --------------------------------------------------------

    /// One poll: take the host's readings, update what depends on them,
    /// and let every slot take the transitions its policy calls for.
    pub fn tick(&mut self, now: i64, readings: Readings) -> Ready {
        self.tick_with(now, |_, r| *r = readings)
    }

    /// [`Startd::tick`], with the readings written by `read` over the last
    /// poll's (given the slots as they are), so that a host polled often
    /// reuses their storage instead of making new readings every time.
    pub fn tick_with(&mut self, now: i64, read: impl FnOnce(&[Slot], &mut Readings)) -> Ready {
        read(&self.slots, &mut self.readings);
        self.share_load();
        let latched = self.update_latches(now);
        let mut ready = Ready::default();
        for i in 0..latched.len() {
            let l = latched.get(i);
            let calm = ready.transitions.is_empty() && ready.actions.is_empty();
            if calm && self.is_quiet(i, now, l.unchanged) {
                self.check_quiet(i, now);
                continue;
            }
            // A slot whose ad the latches brought up to date and left
            // current (nothing they publish changed) is judged on it as
            // is, unless a slot before it moved (its state shows in the
            // others' ads): one refresh per slot and poll instead of two.
            let as_is = l.refreshed && l.unchanged && calm;
            // Not quiet now: its facts may have moved (see
            // `Startd::quiet_generation`).
            self.slots[i].quiet = None;
            self.settle_from(i, now, &mut ready, as_is);
            if ready.transitions.is_empty() && ready.actions.is_empty() {
                self.settle_quietly(i, now);
            }
        }
        self.after_settling(now, &mut ready);
        self.fetch_work(now, &mut ready);
        if !ready.transitions.is_empty() || !ready.actions.is_empty() {
            // A slot that moved shows in the others' ads (and took its
            // own quiet with it).
            self.quiet_epoch += 1;
        }
        ready
    }

    /// Job hooks: each slot with a fetch hook asks for work when it could
    /// take some and FetchWorkDelay seconds (default 300, an expression over
    /// the slot and its job) have passed since its last fetch finished.
    fn fetch_work(&mut self, now: i64, ready: &mut Ready) {
        if self.drain.is_some() || self.shutdown.is_some() {
            return;
        }
        for i in 0..self.slots.len() {
            // A quiet slot has no hook, and its policy is left unread.
            if self.quiet_in_epoch(i) {
                continue;
            }
            let s = &self.slots[i];
            let Some(hooks) = &s.policy.hooks else {
                continue;
            };
            let could_take = matches!(
                s.pair(),
                Pair(State::Unclaimed, Activity::Idle)
                    | Pair(State::Claimed, Activity::Idle | Activity::Busy)
            );
            if s.fetching || !could_take {
                continue;
            }
            let ad = self.slot_ad(i, now);
            let delay = match s.policy.fetch_work_delay.as_ref() {
                Some(e) => {
                    number(&evaluate(Some(e), &ad, s.job.as_ref(), &self.env(now))).unwrap_or(300)
                }
                None => 300,
            };
            if s.last_fetch.is_some_and(|t| now - t < delay) {
                continue;
            }
            let action = Action::FetchWork {
                slot: s.name.clone(),
                hook: hooks.fetch_work.clone(),
                slot_ad: ad,
            };
            self.slots[i].fetching = true;
            ready.actions.push(action);
        }
    }

    /// What HOOK_FETCH_WORK returned. A job is taken if the slot is
    /// Unclaimed (or Claimed/Idle on fetched work) and START is true for
    /// it, or if the slot is running a job and RANK prefers the fetched one;
    /// otherwise it is refused. Either way HOOK_REPLY_FETCH hears of it.
    fn fetched_work(&mut self, i: usize, job: Option<ClassAd>, now: i64, ready: &mut Ready) {
        let s = &mut self.slots[i];
        s.fetching = false;
        s.last_fetch = Some(now);
        let Some(hooks) = s.policy.hooks.clone() else {
            return;
        };
        let Some(mut job) = job else {
            // No more work: a claim on fetched work is given up.
            if s.pair() == Pair(State::Claimed, Activity::Idle)
                && s.claim.as_ref().is_some_and(|c| c.fetched.is_some())
            {
                s.retirement = Some(Retirement::Vacate);
                let ad = self.slot_ad(i, now);
                self.enter_preempting(
                    i,
                    &ad,
                    10,
                    Cause::Event("the fetch hook returned no work".into()),
                    now,
                    ready,
                );
            }
            return;
        };
        job.insert_value("HookKeyword", hooks.keyword.as_str());
        let ad = self.slot_ad(i, now);
        let env = self.env(now);
        let start = is_true(&evaluate(Some(&self.start_expr(i)), &ad, Some(&job), &env));
        let request = ClaimRequest {
            claim_id: format!("fetched:{}:{now}", self.slots[i].name),
            user: match job.eval_attr("Owner", &env) {
                Value::Str(o) => o.to_string(),
                _ => String::new(),
            },
            job: job.clone(),
            schedd: format!("hook:{}", hooks.keyword),
            alive_interval: None,
            by_user_priority: false,
            preempt_dynamic: Vec::new(),
        };
        let mut claim = self.new_claim(i, request, &ad, now);
        claim.fetched = Some(hooks.keyword.clone());
        claim.pending_start = true;
        // Fetched work keeps its claim for as long as the hook has work.
        claim.lease = i64::MAX / 4;
        let s = &self.slots[i];
        let accept = match s.pair() {
            Pair(State::Unclaimed, Activity::Idle) if start => {
                self.slots[i].claim = Some(claim);
                self.go(
                    i,
                    Pair(State::Claimed, Activity::Idle),
                    5,
                    Cause::Event("took fetched work".into()),
                    now,
                    ready,
                );
                true
            }
            Pair(State::Claimed, Activity::Idle)
                if start && s.claim.as_ref().is_some_and(|c| c.fetched.is_some()) =>
            {
                if let Some(c) = &mut self.slots[i].claim {
                    c.request = job.clone();
                    c.pending_start = true;
                }
                true
            }
            Pair(State::Claimed, Activity::Busy)
                if start
                    && s.preempting.is_none()
                    && claim.rank > s.claim.as_ref().map_or(0.0, |c| c.rank) =>
            {
                let cause = Cause::Event(format!(
                    "preempted by fetched work the machine ranks higher ({} > {})",
                    claim.rank,
                    s.claim.as_ref().map_or(0.0, |c| c.rank)
                ));
                self.slots[i].preempting = Some(claim);
                let limit = self.retirement_limit(i, &ad, now);
                self.retire(i, Retirement::Preempted, limit, 13, cause, now, ready);
                true
            }
            _ => false,
        };
        if let Some(hook) = hooks.reply_fetch {
            ready.actions.push(Action::ReplyFetch {
                slot: self.slots[i].name.clone(),
                hook,
                accept,
                job,
                slot_ad: self.slot_ad(i, now),
            });
        }
    }

    /// Hands the machine's load out to the slots (`loadavg::assign_load`).
    fn share_load(&mut self) {
        use crate::loadavg::{order_matters, owner_load, SlotLoad};
        let condor = &self.readings.condor_load;
        let condor_of = |i: usize| condor.get(i).copied().unwrap_or(0.0);
        let n = self.slots.len();
        let owner = owner_load(self.readings.load_avg, (0..n).map(condor_of).sum());
        if order_matters(owner, n) {
            self.share_load_in_order();
            return;
        }
        // Most polls: no owner load to hand out (or one slot for all of
        // it), so no slot's state need be read nor the slots sorted.
        for (i, s) in self.slots.iter_mut().enumerate() {
            let l = SlotLoad {
                condor_load: condor_of(i),
                owner_load: if n == 1 { owner } else { 0.0 },
            };
            set_load(&mut s.load_avg, l.load_avg());
            set_load(&mut s.condor_load_avg, l.condor_load_avg());
        }
    }

    /// `share_load` when who gets the owner's load depends on the slots'
    /// states and ranks.
    fn share_load_in_order(&mut self) {
        use crate::loadavg::{assign_load, LoadState, SlotLoadInput};
        let inputs: Vec<SlotLoadInput> = self
            .slots
            .iter()
            .enumerate()
            .map(|(i, s)| SlotLoadInput {
                id: s.id,
                sub_id: match &s.kind {
                    SlotKind::Dynamic { sub_id, .. } => *sub_id,
                    _ => 0,
                },
                state: match s.state {
                    State::Owner => LoadState::Owner,
                    State::Unclaimed => LoadState::Unclaimed,
                    State::Matched => LoadState::Matched,
                    State::Claimed => LoadState::Claimed,
                    State::Preempting => LoadState::Preempting,
                    State::Backfill => LoadState::Backfill,
                    State::Drained => LoadState::Drained,
                },
                rank: s.claim.as_ref().map_or(0.0, |c| c.rank),
                condor_load: self.readings.condor_load.get(i).copied().unwrap_or(0.0),
            })
            .collect();
        let loads = assign_load(self.readings.load_avg, &inputs);
        for (s, l) in self.slots.iter_mut().zip(loads) {
            s.load_avg = l.load_avg();
            s.condor_load_avg = l.condor_load_avg();
        }
    }

    /// STARTD_LATCH_EXPRS and the built-in CPU-busy clock.
    /// Brings CpuBusy and STARTD_LATCH_EXPRS up to date. For each slot,
    /// whether nothing it publishes of them changed, and whether its ad
    /// was brought up to date here (only to evaluate latches).
    fn update_latches(&mut self, now: i64) -> LatchedSlots {
        let mut fresh = LatchedSlots::default();
        for i in 0..self.slots.len() {
            // Latches read the ad as it stands before this poll's CPU
            // busy-ness is recorded; a slot without latches needs no ad. A
            // quiet slot has none, and its policy is left unread.
            let latches = !self.quiet_in_epoch(i) && !self.slots[i].policy.latch_exprs.is_empty();
            let ad = latches.then(|| self.take_ad(i, now));
            let mut unchanged = true;
            let busy = self.cpu_busy(i);
            let s = &mut self.slots[i];
            match (busy, s.cpu_busy_since) {
                (true, None) => {
                    s.cpu_busy_since = Some(now);
                    unchanged = false;
                }
                (false, Some(_)) => {
                    s.cpu_busy_since = None;
                    unchanged = false;
                }
                _ => {}
            }
            let Some(ad) = ad else {
                fresh.push(Latched {
                    unchanged,
                    refreshed: false,
                });
                continue;
            };
            let env = self.env(now);
            let s = &mut self.slots[i];
            let values: Vec<Value> = s
                .policy
                .latch_exprs
                .iter()
                .map(
                    |(_, expr)| match classad::eval_expr(expr, Some(&ad), None, &env) {
                        Value::Bool(b) => Value::Int(b as i64),
                        other => other,
                    },
                )
                .collect();
            for (k, v) in values.into_iter().enumerate() {
                let s = &mut self.slots[i];
                let name = &s.policy.latch_exprs[k].0;
                match s.latches.iter_mut().find(|(n, _, _)| n == name) {
                    Some(l) if !same(&l.1, &v) => {
                        l.1 = v;
                        l.2 = now;
                        unchanged = false;
                    }
                    Some(_) => {}
                    None => {
                        let name = name.clone();
                        s.latches.push((name, v, now));
                        unchanged = false;
                    }
                }
            }
            self.put_ad(i, ad);
            fresh.push(Latched {
                unchanged,
                refreshed: true,
            });
        }
        fresh
    }

    /// The Expected*Draining* figures: each running job would either
    /// finish its retirement and then vacate (graceful) or just vacate
    /// (quick); the work thrown away is what it will have run by then,
    /// weighted by its CPUs.
    pub(crate) fn estimate_draining(&mut self, now: i64) {
        let mut f = DrainFigures {
            graceful_completion: now,
            quick_completion: now,
            ..DrainFigures::default()
        };
        for i in 0..self.slots.len() {
            if self.slots[i].job.is_none() {
                self.slots[i].retirement_remaining = None;
                continue;
            }
            let grants = match self.kept_grants(i) {
                Some(g) => {
                    #[cfg(debug_assertions)]
                    self.check_grants(i, &g, now);
                    g
                }
                None => {
                    // The ad as last refreshed (publishing refreshes every
                    // ad just before estimating, unless every slot's
                    // grants were kept).
                    let ad = if self.slots[i].ad.is_empty() {
                        self.take_ad(i, now)
                    } else {
                        std::mem::take(&mut self.slots[i].ad)
                    };
                    let g = self.grants(i, &ad, now);
                    self.put_ad(i, ad);
                    g
                }
            };
            let s = &self.slots[i];
            let ran = s.job_run_time(now);
            let cpus = s.resources.cpus.max(1.0);
            let remaining = grants.retirement.map_or(0, |l| (l - ran).max(0));
            let graceful_vacate = grants.vacate.grant(remaining);
            let quick_vacate = grants.vacate.grant(0);
            f.graceful_completion = f.graceful_completion.max(now + remaining + graceful_vacate);
            f.quick_completion = f.quick_completion.max(now + quick_vacate);
            f.graceful_badput += ((ran + remaining) as f64 * cpus) as i64;
            f.quick_badput += (ran as f64 * cpus) as i64;
            self.slots[i].retirement_remaining = Some(remaining);
        }
        self.drain_figures = f;
    }

    /// Whether the CPU is busy with work not HTCondor's: the configuration's
    /// CPUBusy/CpuBusy expression if it has one, else HTCondor's default
    /// (non-HTCondor load of 0.5 or more).
    ///
    /// Read from the slot, not its ad: the ad's LoadAvg and CondorLoadAvg
    /// are these very numbers (every refresh writes them over whatever the
    /// configuration put there), and two lookups in a cold ad per slot and
    /// poll showed in a large simulation.
    fn cpu_busy(&self, i: usize) -> bool {
        let s = &self.slots[i];
        s.load_avg - s.condor_load_avg >= 0.5
    }

    fn settle(&mut self, i: usize, now: i64, ready: &mut Ready) {
        self.settle_from(i, now, ready, false);
    }

    /// Steps slot `i` until it stays put; `current` says its ad is already
    /// up to date at `now`, so the first step need not refresh it.
    fn settle_from(&mut self, i: usize, now: i64, ready: &mut Ready, current: bool) {
        let mut current = current;
        for _ in 0..MAX_STEPS {
            let ad = if current && !self.slots[i].ad.is_empty() {
                std::mem::take(&mut self.slots[i].ad)
            } else {
                self.take_ad(i, now)
            };
            current = false;
            let moved = self.step(i, &ad, now, ready);
            // The slot may have been removed or replaced meanwhile only by
            // events, never within a step, so index `i` is still this slot.
            self.put_ad(i, ad);
            if !moved {
                return;
            }
        }
    }

    /// Records a transition of slot `i` and moves it.
    fn go(&mut self, i: usize, to: Pair, number: u8, cause: Cause, now: i64, ready: &mut Ready) {
        let s = &mut self.slots[i];
        let from = s.pair();
        let spent = now - s.entered_activity;
        match s.time_in.iter_mut().find(|(p, _)| *p == from) {
            Some((_, t)) => *t += spent,
            None => s.time_in.push((from, spent)),
        }
        if s.state != to.0 {
            s.entered_state = now;
        }
        if from != to {
            s.entered_activity = now;
        }
        s.state = to.0;
        s.activity = to.1;
        ready.transitions.push(Transition {
            slot: s.name.clone(),
            from,
            to,
            number,
            cause,
            at: now,
        });
    }

    fn expr_cause(name: impl Into<String>, value: Value) -> Cause {
        Cause::Expr {
            name: name.into(),
            value: value.to_string(),
        }
    }

    /// Takes at most one transition of slot `i`; whether it did.
    fn step(&mut self, i: usize, ad: &ClassAd, now: i64, ready: &mut Ready) -> bool {
        let s = &self.slots[i];
        let name = s.name.clone();
        match s.pair() {
            Pair(State::Owner, Activity::Idle) if matches!(s.kind, SlotKind::Dynamic { .. }) => {
                false
            }
            Pair(State::Owner, Activity::Idle) => {
                if self.drain.is_some() || self.shutdown.is_some() {
                    if self.drain.is_some() {
                        self.go(
                            i,
                            Pair(State::Drained, Activity::Retiring),
                            36,
                            Cause::Event("draining".into()),
                            now,
                            ready,
                        );
                        return true;
                    }
                    return false;
                }
                let (used, v) = self.eval(i, ad, "IS_OWNER", now);
                if !is_true(&v) {
                    self.go(
                        i,
                        Pair(State::Unclaimed, Activity::Idle),
                        1,
                        Self::expr_cause(used, v),
                        now,
                        ready,
                    );
                    return true;
                }
                false
            }
            Pair(State::Unclaimed, Activity::Idle) => {
                if self.drain.is_some() {
                    self.go(
                        i,
                        Pair(State::Drained, Activity::Retiring),
                        37,
                        Cause::Event("draining".into()),
                        now,
                        ready,
                    );
                    return true;
                }
                let (used, v) = self.eval(i, ad, "IS_OWNER", now);
                if is_true(&v) || self.shutdown.is_some() {
                    let cause = if self.shutdown.is_some() {
                        Cause::Event("shutting down".into())
                    } else {
                        Self::expr_cause(used, v)
                    };
                    self.go(i, Pair(State::Owner, Activity::Idle), 2, cause, now, ready);
                    return true;
                }
                let (used, v) = self.eval(i, ad, "RunBenchmarks", now);
                if is_true(&v) {
                    self.go(
                        i,
                        Pair(State::Unclaimed, Activity::Benchmarking),
                        3,
                        Self::expr_cause(used, v),
                        now,
                        ready,
                    );
                    ready.actions.push(Action::RunBenchmarks { slot: name });
                    return true;
                }
                if self.slots[i].policy.enable_backfill {
                    let (used, v) = self.eval(i, ad, "START_BACKFILL", now);
                    if is_true(&v) {
                        self.go(
                            i,
                            Pair(State::Backfill, Activity::Idle),
                            7,
                            Self::expr_cause(used, v),
                            now,
                            ready,
                        );
                        let program = self.slots[i].policy.backfill.clone().map(Box::new);
                        ready.actions.push(Action::StartBackfill {
                            slot: name,
                            program,
                        });
                        return true;
                    }
                }
                false
            }
            Pair(State::Matched, Activity::Idle) => {
                let (false_, v) = self.start_locally_false(i, ad, now);
                if false_ {
                    self.go(
                        i,
                        Pair(State::Owner, Activity::Idle),
                        8,
                        Self::expr_cause("START", v),
                        now,
                        ready,
                    );
                    return true;
                }
                let waited = now - s.entered_state;
                if waited >= s.policy.match_timeout {
                    let cause = Cause::Timer(format!(
                        "MATCH_TIMEOUT: matched {waited} s ago and not claimed (limit {} s)",
                        s.policy.match_timeout
                    ));
                    self.go(i, Pair(State::Owner, Activity::Idle), 8, cause, now, ready);
                    return true;
                }
                if self.drain.is_some() || self.shutdown.is_some() {
                    self.go(
                        i,
                        Pair(State::Owner, Activity::Idle),
                        8,
                        Cause::Event("draining or shutting down".into()),
                        now,
                        ready,
                    );
                    return true;
                }
                false
            }
            Pair(State::Claimed, Activity::Idle) => {
                let claim = s.claim.as_ref().expect("a Claimed slot has a claim");
                if claim.pending_start && self.drain.is_none() && self.shutdown.is_none() {
                    // Fetched work starts as soon as its claim is idle.
                    let (id, job) = (claim.id.clone(), claim.request.clone());
                    if let Some(c) = &mut self.slots[i].claim {
                        c.pending_start = false;
                    }
                    return self.activate(i, &id, job, now, ready).is_ok();
                }
                let cause = if let Some(c) = self.lease_expired(i, now) {
                    Some((Retirement::Vacate, c))
                } else if s.preempting.is_some() {
                    Some((
                        Retirement::Preempted,
                        Cause::Event("a better claim is waiting".into()),
                    ))
                } else if self.drain.is_some() {
                    Some((Retirement::Drain, Cause::Event("draining".into())))
                } else if self.shutdown.is_some() {
                    Some((Retirement::Shutdown, Cause::Event("shutting down".into())))
                } else if s
                    .policy
                    .claim_worklife
                    .is_some_and(|w| now - claim.claimed_at > w)
                    && s.job.is_none()
                {
                    Some((
                        Retirement::Vacate,
                        Cause::Timer(format!(
                            "CLAIM_WORKLIFE: the claim is {} s old (limit {} s) and takes no new job",
                            now - claim.claimed_at,
                            s.policy.claim_worklife.unwrap_or(0)
                        )),
                    ))
                } else {
                    let (false_, v) = self.start_locally_false(i, ad, now);
                    false_.then(|| (Retirement::Vacate, Self::expr_cause("START", v)))
                };
                match cause {
                    Some((why, cause)) => {
                        self.slots[i].retirement = Some(why);
                        self.enter_preempting(i, ad, 10, cause, now, ready);
                        true
                    }
                    None => false,
                }
            }
            Pair(State::Claimed, Activity::Busy) => {
                if let Some(cause) = self.lease_expired(i, now) {
                    self.retire(i, Retirement::Vacate, Some(0), 13, cause, now, ready);
                    return true;
                }
                let (used, want) = self.eval(i, ad, "WANT_SUSPEND", now);
                if is_true(&want) {
                    let (used, v) = self.eval(i, ad, "SUSPEND", now);
                    if is_true(&v) {
                        self.suspend(i, 14, Self::expr_cause(used, v), now, ready);
                        return true;
                    }
                } else {
                    let (used_p, v) = self.eval(i, ad, "PREEMPT", now);
                    if is_true(&v) {
                        let limit = self.retirement_limit(i, ad, now);
                        let cause = Self::expr_cause(format!("{used_p} (with {used} {want})"), v);
                        self.retire(i, Retirement::Preempt, limit, 13, cause, now, ready);
                        return true;
                    }
                }
                false
            }
            Pair(State::Claimed, Activity::Suspended) => {
                let (used, v) = self.eval(i, ad, "CONTINUE", now);
                if is_true(&v) {
                    let retiring = s.retirement.is_some();
                    let (to, number) = if retiring {
                        (Pair(State::Claimed, Activity::Retiring), 16)
                    } else {
                        (Pair(State::Claimed, Activity::Busy), 15)
                    };
                    self.resume(i, now);
                    ready.actions.push(Action::ContinueJob { slot: name });
                    self.go(i, to, number, Self::expr_cause(used, v), now, ready);
                    return true;
                }
                if s.retirement.is_none() {
                    let (used, v) = self.eval(i, ad, "PREEMPT", now);
                    if is_true(&v) {
                        let limit = self.retirement_limit(i, ad, now);
                        let s = &mut self.slots[i];
                        s.retirement = Some(Retirement::Preempt);
                        s.retirement_limit = limit;
                        self.resume(i, now);
                        ready.actions.push(Action::ContinueJob { slot: name });
                        self.go(
                            i,
                            Pair(State::Claimed, Activity::Retiring),
                            16,
                            Self::expr_cause(used, v),
                            now,
                            ready,
                        );
                        return true;
                    }
                } else if let Some(cause) = self.retirement_over(i, ad, now) {
                    self.resume(i, now);
                    ready.actions.push(Action::ContinueJob { slot: name });
                    self.enter_preempting(i, ad, 17, cause, now, ready);
                    return true;
                }
                false
            }
            Pair(State::Claimed, Activity::Retiring) => {
                if s.retirement == Some(Retirement::Preempted) && s.preempting.is_none() {
                    let s = &mut self.slots[i];
                    s.retirement = None;
                    s.retirement_limit = None;
                    self.go(
                        i,
                        Pair(State::Claimed, Activity::Busy),
                        19,
                        Cause::Event("the preempting claim went away".into()),
                        now,
                        ready,
                    );
                    return true;
                }
                if !s.starter {
                    self.enter_preempting(
                        i,
                        ad,
                        18,
                        Cause::Event("the job exited".into()),
                        now,
                        ready,
                    );
                    return true;
                }
                if let Some(cause) = self.retirement_over(i, ad, now) {
                    self.enter_preempting(i, ad, 18, cause, now, ready);
                    return true;
                }
                let (_, want) = self.eval(i, ad, "WANT_SUSPEND", now);
                if is_true(&want) {
                    let (used, v) = self.eval(i, ad, "SUSPEND", now);
                    if is_true(&v) {
                        self.suspend(i, 20, Self::expr_cause(used, v), now, ready);
                        return true;
                    }
                }
                false
            }
            Pair(State::Preempting, activity) => {
                if !s.starter {
                    let to_claim = s.preempting.is_some();
                    let number = match (activity, to_claim) {
                        (Activity::Vacating, false) => 22,
                        (Activity::Vacating, true) => 23,
                        (_, true) => 24,
                        (_, false) => 25,
                    };
                    self.end_claim(i, now, ready);
                    let cause = Cause::Event(if self.slots[i].job.is_some() {
                        "the job is gone".into()
                    } else {
                        "no job was running".into()
                    });
                    self.slots[i].job = None;
                    self.slots[i].job_start = None;
                    if to_claim {
                        let new = self.slots[i].preempting.take();
                        self.slots[i].claim = new;
                        if let Some(c) = &mut self.slots[i].claim {
                            c.claimed_at = now;
                            c.last_alive = now;
                        }
                        self.go(
                            i,
                            Pair(State::Claimed, Activity::Idle),
                            number,
                            cause,
                            now,
                            ready,
                        );
                    } else {
                        self.go(
                            i,
                            Pair(State::Owner, Activity::Idle),
                            number,
                            cause,
                            now,
                            ready,
                        );
                    }
                    return true;
                }
                if activity == Activity::Vacating {
                    let (used, v) = self.eval(i, ad, "KILL", now);
                    if is_true(&v) {
                        ready.actions.push(Action::KillJob { slot: name });
                        self.go(
                            i,
                            Pair(State::Preempting, Activity::Killing),
                            21,
                            Self::expr_cause(used, v),
                            now,
                            ready,
                        );
                        return true;
                    }
                    if let Some(deadline) = s.vacate_deadline {
                        if now >= deadline {
                            let cause = Cause::Timer(format!(
                                "vacating took {} s, the vacate time granted",
                                now - s.entered_activity
                            ));
                            ready.actions.push(Action::KillJob { slot: name });
                            self.go(
                                i,
                                Pair(State::Preempting, Activity::Killing),
                                21,
                                cause,
                                now,
                                ready,
                            );
                            return true;
                        }
                    }
                } else if activity == Activity::Killing
                    && !s.killed_tree
                    && now - s.entered_activity >= s.policy.killing_timeout
                {
                    self.slots[i].killed_tree = true;
                    ready.actions.push(Action::KillStarterTree { slot: name });
                }
                false
            }
            Pair(State::Backfill, Activity::Idle) => {
                if let Some(exit) = self.slots[i].backfill_exit.take() {
                    if exit == BackfillExit::Claimed {
                        // The claim that arrived during backfill takes the slot.
                        let claim = self.slots[i].preempting.take();
                        self.slots[i].claim = claim;
                    }
                    let (to, number, what) = match exit {
                        BackfillExit::Owner => {
                            (Pair(State::Owner, Activity::Idle), 30, "backfill evicted")
                        }
                        BackfillExit::Claimed => (
                            Pair(State::Claimed, Activity::Idle),
                            31,
                            "claimed for a job",
                        ),
                        BackfillExit::Matched => (
                            Pair(State::Matched, Activity::Idle),
                            32,
                            "matched for a job",
                        ),
                    };
                    self.go(i, to, number, Cause::Event(what.into()), now, ready);
                    return true;
                }
                let (used, v) = self.eval(i, ad, "EVICT_BACKFILL", now);
                if is_true(&v) || self.drain.is_some() || self.shutdown.is_some() {
                    self.go(
                        i,
                        Pair(State::Owner, Activity::Idle),
                        30,
                        Self::expr_cause(used, v),
                        now,
                        ready,
                    );
                    return true;
                }
                false
            }
            Pair(State::Backfill, Activity::Busy) => {
                let (used, v) = self.eval(i, ad, "EVICT_BACKFILL", now);
                if is_true(&v) || self.drain.is_some() || self.shutdown.is_some() {
                    self.slots[i].backfill_exit = Some(BackfillExit::Owner);
                    ready.actions.push(Action::KillBackfill { slot: name });
                    self.go(
                        i,
                        Pair(State::Backfill, Activity::Killing),
                        28,
                        Self::expr_cause(used, v),
                        now,
                        ready,
                    );
                    return true;
                }
                false
            }
            Pair(State::Drained, Activity::Retiring) => {
                if self.drain.is_none() {
                    self.go(
                        i,
                        Pair(State::Owner, Activity::Idle),
                        35,
                        Cause::Event("draining was cancelled".into()),
                        now,
                        ready,
                    );
                    return true;
                }
                if self.slots.iter().all(|s| s.state == State::Drained) {
                    self.go(
                        i,
                        Pair(State::Drained, Activity::Idle),
                        33,
                        Cause::Event("every slot is drained".into()),
                        now,
                        ready,
                    );
                    return true;
                }
                false
            }
            Pair(State::Drained, Activity::Idle) => {
                if self.drain.is_none() {
                    self.go(
                        i,
                        Pair(State::Owner, Activity::Idle),
                        34,
                        Cause::Event("draining was finalized or cancelled".into()),
                        now,
                        ready,
                    );
                    return true;
                }
                false
            }
            _ => false,
        }
    }

    /// After every slot settled: finished dynamic slots, a complete drain,
    /// a finished shutdown.
    fn after_settling(&mut self, now: i64, ready: &mut Ready) {
        self.reap_dynamic_slots();
        self.grant_pending_claims(now, ready);
        self.report_idle_claims(now, ready);
        if let Some(d) = &mut self.drain {
            if !d.complete
                && self
                    .slots
                    .iter()
                    .all(|s| s.pair() == Pair(State::Drained, Activity::Idle))
            {
                d.complete = true;
                ready.actions.push(Action::DrainComplete);
                if d.resume_on_completion {
                    self.drain = None;
                    self.last_drain_stop = Some(now);
                    self.invalidate_ads();
                    for i in 0..self.slots.len() {
                        self.settle(i, now, ready);
                    }
                }
            }
        }
        if self.shutdown.is_some()
            && !self.shutdown_reported
            && self
                .slots
                .iter()
                .all(|s| s.claim.is_none() && !s.starter && !s.backfill_running)
        {
            self.shutdown_reported = true;
            ready.actions.push(Action::ShutdownComplete);
        }
    }

    fn lease_expired(&self, i: usize, now: i64) -> Option<Cause> {
        let c = self.slots[i].claim.as_ref()?;
        let silent = now - c.last_alive;
        (silent > c.lease).then(|| {
            Cause::Timer(format!(
                "the claim lease expired: no keep-alive for {silent} s (lease {} s)",
                c.lease
            ))
        })
    }

    // ---- Retirement, vacating and killing -------------------------------

    /// The retirement time a job gets: the machine's MaxJobRetirementTime
    /// (evaluated against the job) and the job's own, the smaller wins.
    pub(crate) fn retirement_limit(&self, i: usize, ad: &ClassAd, now: i64) -> Option<i64> {
        let s = &self.slots[i];
        if self.shutdown == Some(ShutdownHow::Peaceful) {
            return None;
        }
        let env = self.env(now);
        let machine = number(&evaluate(
            s.policy.expr("MaxJobRetirementTime"),
            ad,
            s.job.as_ref(),
            &env,
        ))
        .unwrap_or(0);
        let job = s.job.as_ref().and_then(|j| {
            j.get("MaxJobRetirementTime")
                .map(|e| classad::eval_expr(e, Some(j), Some(ad), &env))
                .and_then(|v| number(&v))
        });
        Some(match job {
            Some(j) => machine.min(j),
            None => machine,
        })
    }

    /// Seconds of vacating a job is granted when `remaining` seconds of
    /// retirement are left: MachineMaxVacateTime, or the job's smaller
    /// JobMaxVacateTime; a larger JobMaxVacateTime is met from retirement
    /// time left over, up to its amount.
    pub(crate) fn vacate_grant(&self, i: usize, ad: &ClassAd, remaining: i64, now: i64) -> i64 {
        self.vacate_terms(i, ad, now).grant(remaining)
    }

    /// What vacating is granted from: MachineMaxVacateTime and the job's
    /// JobMaxVacateTime, evaluated now.
    pub(crate) fn vacate_terms(&self, i: usize, ad: &ClassAd, now: i64) -> VacateTerms {
        let s = &self.slots[i];
        let env = self.env(now);
        let machine = number(&evaluate(
            s.policy.expr("MachineMaxVacateTime"),
            ad,
            s.job.as_ref(),
            &env,
        ))
        .unwrap_or(600);
        let job = s.job.as_ref().and_then(|j| {
            j.get("JobMaxVacateTime")
                .map(|e| classad::eval_expr(e, Some(j), Some(ad), &env))
                .and_then(|v| number(&v))
        });
        VacateTerms { machine, job }
    }

    /// In retirement: whether the job has used its retirement time (less
    /// the vacate time it will be granted, so that vacating ends when
    /// retirement does).
    fn retirement_over(&self, i: usize, ad: &ClassAd, now: i64) -> Option<Cause> {
        let s = &self.slots[i];
        let granted = s.retirement_limit?;
        // MaxJobRetirementTime is an expression: if it now grants less than
        // when retirement began (the owner changed it, or it reads the
        // clock), the smaller holds. It never grants more.
        let limit = if granted > 0 {
            self.retirement_limit(i, ad, now)
                .map_or(granted, |now_granted| now_granted.min(granted))
        } else {
            granted
        };
        let ran = s.job_run_time(now);
        let remaining = limit - ran;
        let grant = self.vacate_grant(i, ad, remaining, now);
        (remaining <= grant).then(|| {
            Cause::Timer(format!(
                "retirement: the job has run {ran} s of its {limit} s (vacating takes up to {grant} s)"
            ))
        })
    }

    /// Claimed -> Retiring (13), with why and how long.
    #[allow(clippy::too_many_arguments)]
    fn retire(
        &mut self,
        i: usize,
        why: Retirement,
        limit: Option<i64>,
        number: u8,
        cause: Cause,
        now: i64,
        ready: &mut Ready,
    ) {
        let s = &mut self.slots[i];
        s.retirement = Some(why);
        s.retirement_limit = limit;
        self.go(
            i,
            Pair(State::Claimed, Activity::Retiring),
            number,
            cause,
            now,
            ready,
        );
    }

    fn suspend(&mut self, i: usize, number: u8, cause: Cause, now: i64, ready: &mut Ready) {
        let s = &mut self.slots[i];
        s.suspended_since = Some(now);
        ready.actions.push(Action::SuspendJob {
            slot: s.name.clone(),
        });
        self.go(
            i,
            Pair(State::Claimed, Activity::Suspended),
            number,
            cause,
            now,
            ready,
        );
    }

    fn resume(&mut self, i: usize, now: i64) {
        let s = &mut self.slots[i];
        if let Some(since) = s.suspended_since.take() {
            s.job_suspended_total += now - since;
        }
    }

    /// Enters Preempting: Vacating (a soft kill, and a deadline) when
    /// WANT_VACATE is true, else Killing (a hard kill).
    fn enter_preempting(
        &mut self,
        i: usize,
        ad: &ClassAd,
        number: u8,
        cause: Cause,
        now: i64,
        ready: &mut Ready,
    ) {
        let name = self.slots[i].name.clone();
        let fast = matches!(self.shutdown, Some(ShutdownHow::Fast))
            || matches!(&self.drain, Some(d) if d.how == DrainHow::Fast)
            || self.slots[i].retirement_limit == Some(-1);
        let (_, want) = self.eval(i, ad, "WANT_VACATE", now);
        let starter = self.slots[i].starter;
        // WANT_VACATE is consulted only when the PREEMPT expression is why
        // (HTCondor: `!preemptWasTrue() || wants_vacate()`); a better claim,
        // condor_vacate, draining or shutdown always vacate gracefully.
        let preempt_expr = self.slots[i].retirement == Some(Retirement::Preempt);
        let vacate = !fast && (!preempt_expr || is_true(&want) || !starter);
        if vacate {
            let s = &self.slots[i];
            let remaining = s.retirement_limit.map_or(0, |l| l - s.job_run_time(now));
            let grant = self.vacate_grant(i, ad, remaining, now);
            let s = &mut self.slots[i];
            s.vacate_deadline = Some(now + grant);
            if starter {
                ready.actions.push(Action::VacateJob { slot: name });
            }
            self.go(
                i,
                Pair(State::Preempting, Activity::Vacating),
                number,
                cause,
                now,
                ready,
            );
        } else {
            self.slots[i].killed_tree = false;
            ready.actions.push(Action::KillJob { slot: name });
            self.go(
                i,
                Pair(State::Preempting, Activity::Killing),
                number,
                cause,
                now,
                ready,
            );
        }
    }

    /// The claim is over: add its times to the totals and tell its schedd.
    fn end_claim(&mut self, i: usize, now: i64, ready: &mut Ready) {
        let s = &mut self.slots[i];
        s.total_job_run_time += s.job_run_time(now);
        s.total_job_suspend_time += s.job_suspended_total;
        s.job_suspended_total = 0;
        s.suspended_since = None;
        s.retirement = None;
        s.retirement_limit = None;
        s.vacate_deadline = None;
        s.killed_tree = false;
        if let Some(c) = s.claim.take() {
            if c.fetched.is_some() {
                let hook = s.policy.hooks.as_ref().and_then(|h| h.evict_claim.clone());
                if let Some(hook) = hook {
                    let slot = s.name.clone();
                    let slot_ad = self.slot_ad(i, now);
                    ready.actions.push(Action::EvictClaim {
                        slot,
                        hook,
                        job: c.request,
                        slot_ad,
                    });
                }
            } else {
                ready.actions.push(Action::ClaimEnded {
                    slot: s.name.clone(),
                    claim_id: c.id,
                    schedd: c.schedd,
                    reason: "the claim was preempted or released".into(),
                });
            }
        }
    }

    // ---- Events ---------------------------------------------------------

    /// Acts on a message, as [`Startd::handle`], and says what became of
    /// a claim as actions rather than as an error: a claim request gets
    /// [`Action::ClaimGranted`] or [`Action::ClaimRefused`], a refused
    /// activation [`Action::ActivationRefused`], any other refusal
    /// [`Action::Refused`]. This is what a daemon or the simulator hands
    /// its schedd messages to; it never reads the engine's claims itself.
    pub fn receive(&mut self, event: Event, now: i64) -> Ready {
        if let Event::KeepAlive { claim_id } = &event {
            let claim_id = claim_id.clone();
            let schedd = self
                .slots
                .iter()
                .flat_map(|s| s.claim.iter().chain(s.preempting.iter()))
                .find(|c| c.id == claim_id)
                .map(|c| c.schedd.clone());
            let mut ready = self.handle(event, now).unwrap_or_default();
            ready.actions.push(Action::ClaimAlive {
                claim_id,
                alive: schedd.is_some(),
                schedd: schedd.unwrap_or_default(),
            });
            return ready;
        }
        let asked = match &event {
            Event::RequestClaim { request, .. } => {
                Some((true, request.claim_id.clone(), request.schedd.clone()))
            }
            Event::Activate { claim_id, .. } => {
                let schedd = self
                    .slots
                    .iter()
                    .filter_map(|s| s.claim.as_ref())
                    .find(|c| c.id == *claim_id)
                    .map(|c| c.schedd.clone())
                    .unwrap_or_default();
                Some((false, claim_id.clone(), schedd))
            }
            _ => None,
        };
        match (self.handle(event, now), asked) {
            (Ok(mut ready), Some((true, claim_id, schedd))) => {
                let held = self.slots.iter().position(|s| {
                    s.claim
                        .iter()
                        .chain(s.preempting.iter())
                        .any(|c| c.id == claim_id)
                });
                let waiting = self
                    .pending_claims
                    .iter()
                    .find(|p| p.request.claim_id == claim_id)
                    .map(|p| p.pslot.clone());
                let (slot, slot_ad) = match (held, waiting) {
                    (Some(i), _) => {
                        let carved = matches!(self.slots[i].kind, SlotKind::Dynamic { .. });
                        let ad = carved.then(|| Box::new(self.slot_ad(i, now)));
                        (self.slots[i].name.clone(), ad)
                    }
                    (None, Some(pslot)) => (pslot, None),
                    // Granted and already over within the same event.
                    (None, None) => return ready,
                };
                ready.actions.insert(
                    0,
                    Action::ClaimGranted {
                        slot,
                        claim_id,
                        schedd,
                        slot_ad,
                    },
                );
                ready
            }
            (Ok(ready), _) => ready,
            (Err(r), Some((granting, claim_id, schedd))) => {
                let action = if granting {
                    Action::ClaimRefused {
                        slot: r.slot,
                        claim_id,
                        schedd,
                        reason: r.reason,
                    }
                } else {
                    Action::ActivationRefused {
                        slot: r.slot,
                        claim_id,
                        schedd,
                        reason: r.reason,
                    }
                };
                Ready {
                    transitions: Vec::new(),
                    actions: vec![action],
                }
            }
            (Err(r), None) => Ready {
                transitions: Vec::new(),
                actions: vec![Action::Refused(r)],
            },
        }
    }

    /// Acts on an event. A refused event changes nothing.
    pub fn handle(&mut self, event: Event, now: i64) -> Result<Ready, Refusal> {
        if !matches!(event, Event::KeepAlive { .. }) {
            // Anything but a renewed lease may change what a quiet slot's
            // policy reads (a keep-alive only moves the lease's end later).
            self.quiet_epoch += 1;
        }
        let mut ready = Ready::default();
        let touched: Vec<usize> = match event {
            Event::Matched { slot } => {
                let i = self.index(&slot)?;
                match self.slots[i].pair() {
                    // A partitionable slot stays Unclaimed when matched: the
                    // claim carves a dynamic slot, and the rest of it stays
                    // open to other matches in the same cycle (HTCondor's
                    // behaviour).
                    Pair(State::Unclaimed, Activity::Idle)
                        if self.slots[i].kind == SlotKind::Partitionable => {}
                    Pair(State::Unclaimed, Activity::Idle) => {
                        self.go(
                            i,
                            Pair(State::Matched, Activity::Idle),
                            6,
                            Cause::Event("matched by the negotiator".into()),
                            now,
                            &mut ready,
                        );
                    }
                    Pair(State::Backfill, Activity::Busy) => {
                        self.kill_backfill(i, BackfillExit::Matched, now, &mut ready)
                    }
                    Pair(State::Backfill, Activity::Idle) => {
                        self.slots[i].backfill_exit = Some(BackfillExit::Matched);
                    }
                    // A claimed slot hears of a preempting match too; the
                    // claim request that follows is what counts.
                    Pair(State::Claimed, _) => {}
                    p => {
                        return Err(Refusal {
                            slot,
                            reason: format!("cannot be matched in {p}"),
                        })
                    }
                }
                vec![i]
            }
            Event::RequestClaim { slot, request } => {
                let i = self.index(&slot)?;
                let before = self.slots.len();
                self.request_claim(i, *request, now, &mut ready)?;
                // A claim on a partitionable slot lands on a new dynamic slot.
                std::iter::once(i).chain(before..self.slots.len()).collect()
            }
            Event::Activate {
                slot,
                claim_id,
                job,
            } => {
                let i = self.index(&slot)?;
                self.activate(i, &claim_id, *job, now, &mut ready)?;
                vec![i]
            }
            Event::StarterExited { slot } => {
                let i = self.index(&slot)?;
                let s = &mut self.slots[i];
                s.starter = false;
                if s.pair() == Pair(State::Claimed, Activity::Busy)
                    || s.pair() == Pair(State::Claimed, Activity::Suspended)
                {
                    if let Some(since) = s.suspended_since.take() {
                        s.job_suspended_total += now - since;
                    }
                    let ran = s.job_run_time(now);
                    s.total_job_run_time += ran;
                    s.total_job_suspend_time += s.job_suspended_total;
                    if let Some(c) = &mut s.claim {
                        c.run_time += ran;
                        c.suspend_time += s.job_suspended_total;
                    }
                    s.job = None;
                    s.job_start = None;
                    s.job_suspended_total = 0;
                    self.go(
                        i,
                        Pair(State::Claimed, Activity::Idle),
                        12,
                        Cause::Event("the job exited".into()),
                        now,
                        &mut ready,
                    );
                }
                vec![i]
            }
            Event::ReleaseClaim { slot, claim_id } => {
                let i = self.index(&slot)?;
                let s = &mut self.slots[i];
                if s.preempting.as_ref().is_some_and(|c| c.id == claim_id) {
                    s.preempting = None;
                } else if s.claim.as_ref().is_some_and(|c| c.id == claim_id) {
                    match s.pair() {
                        Pair(State::Claimed, Activity::Idle) => {
                            s.retirement = Some(Retirement::Vacate);
                            let ad = self.slot_ad(i, now);
                            self.enter_preempting(
                                i,
                                &ad,
                                10,
                                Cause::Event("the schedd released its claim".into()),
                                now,
                                &mut ready,
                            );
                        }
                        Pair(State::Claimed, Activity::Busy) => {
                            self.retire(
                                i,
                                Retirement::Vacate,
                                Some(0),
                                13,
                                Cause::Event("the schedd released its claim".into()),
                                now,
                                &mut ready,
                            );
                        }
                        Pair(State::Claimed, _) => {
                            s.retirement = Some(Retirement::Vacate);
                            s.retirement_limit = Some(0);
                        }
                        _ => {}
                    }
                } else {
                    return Err(Refusal {
                        slot,
                        reason: format!("holds no claim {claim_id}"),
                    });
                }
                vec![i]
            }
            Event::KeepAlive { claim_id } => {
                let mut found = Vec::new();
                for (i, s) in self.slots.iter_mut().enumerate() {
                    for c in s.claim.iter_mut().chain(s.preempting.iter_mut()) {
                        if c.id == claim_id {
                            c.last_alive = now;
                            found.push(i);
                        }
                    }
                }
                if found.is_empty() {
                    return Err(Refusal {
                        slot: String::new(),
                        reason: format!("no claim {claim_id}"),
                    });
                }
                // A keep-alive renews the lease and nothing else: as in
                // HTCondor's startd, the policy is not evaluated for it
                // (polls do that), so no slot is settled here.
                Vec::new()
            }
            Event::Vacate { slot, fast } => {
                let which: Vec<usize> = match &slot {
                    Some(s) => vec![self.index(s)?],
                    None => (0..self.slots.len()).collect(),
                };
                for &i in &which {
                    self.vacate(i, fast, now, &mut ready);
                }
                which
            }
            Event::BenchmarksDone { slot, mips, kflops } => {
                let i = self.index(&slot)?;
                let s = &mut self.slots[i];
                s.last_benchmark = now;
                s.mips = Some(mips);
                s.kflops = Some(kflops);
                if s.pair() == Pair(State::Unclaimed, Activity::Benchmarking) {
                    self.go(
                        i,
                        Pair(State::Unclaimed, Activity::Idle),
                        4,
                        Cause::Event("benchmarks finished".into()),
                        now,
                        &mut ready,
                    );
                }
                vec![i]
            }
            Event::BackfillStarted { slot } => {
                let i = self.index(&slot)?;
                self.slots[i].backfill_running = true;
                if self.slots[i].pair() == Pair(State::Backfill, Activity::Idle) {
                    self.go(
                        i,
                        Pair(State::Backfill, Activity::Busy),
                        26,
                        Cause::Event("the backfill client started".into()),
                        now,
                        &mut ready,
                    );
                }
                vec![i]
            }
            Event::BackfillExited { slot } => {
                let i = self.index(&slot)?;
                self.slots[i].backfill_running = false;
                match self.slots[i].activity {
                    Activity::Busy => self.go(
                        i,
                        Pair(State::Backfill, Activity::Idle),
                        27,
                        Cause::Event("the backfill client exited".into()),
                        now,
                        &mut ready,
                    ),
                    Activity::Killing => self.go(
                        i,
                        Pair(State::Backfill, Activity::Idle),
                        29,
                        Cause::Event("the backfill client is gone".into()),
                        now,
                        &mut ready,
                    ),
                    _ => {}
                }
                vec![i]
            }
            Event::FetchedWork { slot, job } => {
                let i = self.index(&slot)?;
                self.fetched_work(i, job.map(|j| *j), now, &mut ready);
                vec![i]
            }
            Event::Drain {
                how,
                resume_on_completion,
                start_expr,
                reason,
            } => {
                if self.drain.is_some() {
                    return Err(Refusal {
                        slot: String::new(),
                        reason: "already draining".into(),
                    });
                }
                self.drain_ids += 1;
                self.last_drain_start = Some(now);
                // START is the drain's own while draining.
                self.invalidate_ads();
                self.drain = Some(Drain {
                    id: self.drain_ids,
                    how,
                    resume_on_completion,
                    start_expr,
                    reason,
                    complete: false,
                });
                for i in 0..self.slots.len() {
                    self.evict_for(
                        i,
                        how == DrainHow::Graceful,
                        how == DrainHow::Fast,
                        Retirement::Drain,
                        "draining",
                        now,
                        &mut ready,
                    );
                }
                (0..self.slots.len()).collect()
            }
            Event::CancelDrain => {
                if self.drain.take().is_none() {
                    return Err(Refusal {
                        slot: String::new(),
                        reason: "not draining".into(),
                    });
                }
                self.invalidate_ads();
                self.last_drain_stop = Some(now);
                (0..self.slots.len()).collect()
            }
            Event::Shutdown(how) => {
                self.shutdown = Some(how);
                for i in 0..self.slots.len() {
                    self.evict_for(
                        i,
                        how != ShutdownHow::Fast,
                        how == ShutdownHow::Fast,
                        Retirement::Shutdown,
                        "shutting down",
                        now,
                        &mut ready,
                    );
                }
                (0..self.slots.len()).collect()
            }
        };
        for i in touched {
            self.settle(i, now, &mut ready);
        }
        // Draining one slot may complete the drain for all.
        if self.drain.is_some() || self.shutdown.is_some() {
            for i in 0..self.slots.len() {
                self.settle(i, now, &mut ready);
            }
        }
        self.after_settling(now, &mut ready);
        Ok(ready)
    }

    /// Gets a claimed slot's job out for draining or shutdown: with its
    /// retirement time (`graceful`), without (quick), or killing it (`fast`).
    #[allow(clippy::too_many_arguments)]
    fn evict_for(
        &mut self,
        i: usize,
        graceful: bool,
        fast: bool,
        why: Retirement,
        what: &str,
        now: i64,
        ready: &mut Ready,
    ) {
        let pair = self.slots[i].pair();
        match pair {
            Pair(State::Claimed, Activity::Busy) => {
                let ad = self.slot_ad(i, now);
                let limit = if fast {
                    Some(-1)
                } else if graceful {
                    self.retirement_limit(i, &ad, now)
                } else {
                    Some(0)
                };
                self.retire(i, why, limit, 13, Cause::Event(what.into()), now, ready);
            }
            Pair(State::Claimed, Activity::Suspended | Activity::Retiring) => {
                let ad = self.slot_ad(i, now);
                let limit = if fast {
                    Some(-1)
                } else if graceful {
                    self.retirement_limit(i, &ad, now)
                } else {
                    Some(0)
                };
                let s = &mut self.slots[i];
                s.retirement = Some(why);
                s.retirement_limit = match (s.retirement_limit, limit) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (_, l) => l,
                };
            }
            Pair(State::Preempting, Activity::Vacating) if fast => {
                ready.actions.push(Action::KillJob {
                    slot: self.slots[i].name.clone(),
                });
                self.go(
                    i,
                    Pair(State::Preempting, Activity::Killing),
                    21,
                    Cause::Event(what.into()),
                    now,
                    ready,
                );
            }
            Pair(State::Backfill, Activity::Busy) => {
                self.kill_backfill(i, BackfillExit::Owner, now, ready)
            }
            Pair(State::Backfill, Activity::Idle) => {
                self.slots[i].backfill_exit = Some(BackfillExit::Owner)
            }
            _ => {}
        }
    }

    fn kill_backfill(&mut self, i: usize, exit: BackfillExit, now: i64, ready: &mut Ready) {
        let name = self.slots[i].name.clone();
        self.slots[i].backfill_exit = Some(exit.clone());
        ready.actions.push(Action::KillBackfill { slot: name });
        let why = match exit {
            BackfillExit::Owner => "evicting backfill",
            BackfillExit::Matched => "matched for a job",
            BackfillExit::Claimed => "claimed for a job",
        };
        self.go(
            i,
            Pair(State::Backfill, Activity::Killing),
            28,
            Cause::Event(why.into()),
            now,
            ready,
        );
    }

    /// `condor_vacate` on slot `i`.
    fn vacate(&mut self, i: usize, fast: bool, now: i64, ready: &mut Ready) {
        let cause = Cause::Event(
            if fast {
                "condor_vacate -fast"
            } else {
                "condor_vacate"
            }
            .into(),
        );
        let limit = Some(if fast { -1 } else { 0 });
        match self.slots[i].pair() {
            Pair(State::Claimed, Activity::Idle) => {
                self.slots[i].retirement = Some(Retirement::Vacate);
                self.slots[i].retirement_limit = limit;
                let ad = self.slot_ad(i, now);
                self.enter_preempting(i, &ad, 10, cause, now, ready);
            }
            Pair(State::Claimed, Activity::Busy) => {
                self.retire(i, Retirement::Vacate, limit, 13, cause, now, ready)
            }
            Pair(State::Claimed, _) => {
                let s = &mut self.slots[i];
                s.retirement = Some(Retirement::Vacate);
                s.retirement_limit = limit;
                s.preempting = None;
            }
            Pair(State::Matched, _) => {
                self.go(i, Pair(State::Owner, Activity::Idle), 8, cause, now, ready)
            }
            Pair(State::Preempting, Activity::Vacating) if fast => {
                ready.actions.push(Action::KillJob {
                    slot: self.slots[i].name.clone(),
                });
                self.go(
                    i,
                    Pair(State::Preempting, Activity::Killing),
                    21,
                    cause,
                    now,
                    ready,
                );
            }
            Pair(State::Backfill, Activity::Busy) => {
                self.kill_backfill(i, BackfillExit::Owner, now, ready)
            }
            Pair(State::Backfill, Activity::Idle) => {
                self.slots[i].backfill_exit = Some(BackfillExit::Owner)
            }
            _ => {}
        }
    }

    fn new_claim(&self, i: usize, r: ClaimRequest, ad: &ClassAd, now: i64) -> Claim {
        let s = &self.slots[i];
        let env = self.env(now);
        let rank =
            number_f(&evaluate(s.policy.rank.as_ref(), ad, Some(&r.job), &env)).unwrap_or(0.0);
        let lease = match r
            .job
            .get("JobLeaseDuration")
            .map(|e| classad::eval_expr(e, Some(&r.job), None, &env))
        {
            Some(v) if number(&v).is_some_and(|d| d > 0) => number(&v).unwrap_or(0),
            _ => {
                s.policy.max_claim_alives_missed
                    * r.alive_interval.unwrap_or(s.policy.alive_interval)
            }
        };
        let owner = match r.job.eval_attr("Owner", &env) {
            Value::Str(o) => o.to_string(),
            _ => r.user.split('@').next().unwrap_or("").to_string(),
        };
        Claim {
            id: r.claim_id,
            schedd: r.schedd,
            user: r.user,
            owner,
            request: r.job,
            rank,
            claimed_at: now,
            last_alive: now,
            lease,
            suspend_time: 0,
            run_time: 0,
            fetched: None,
            pending_start: false,
            told_idle: false,
            told_idle_at: now,
            ran_job: false,
        }
    }

    fn request_claim(
        &mut self,
        i: usize,
        r: ClaimRequest,
        now: i64,
        ready: &mut Ready,
    ) -> Result<(), Refusal> {
        // The slot's own ad, lent out while the claim is judged (no copy:
        // every job start passes here). Whatever the claim changes, the
        // next use refreshes it.
        let ad = self.take_ad(i, now);
        let out = self.request_claim_with(i, r, &ad, now, ready);
        self.put_ad(i, ad);
        out
    }

    fn request_claim_with(
        &mut self,
        i: usize,
        r: ClaimRequest,
        ad: &ClassAd,
        now: i64,
        ready: &mut Ready,
    ) -> Result<(), Refusal> {
        let slot = self.slots[i].name.clone();
        let refuse = |reason: String| Refusal {
            slot: slot.clone(),
            reason,
        };
        let start = evaluate(Some(&self.start_expr(i)), ad, Some(&r.job), &self.env(now));
        if !is_true(&start) {
            return Err(refuse(format!("START is {start} for this job")));
        }
        if self.slots[i].kind == SlotKind::Partitionable {
            return self.claim_partitionable(i, r, now, ready);
        }
        // What the decision below reads of the request; the rest (its job
        // ad above all) moves into the claim uncopied.
        let (schedd, user, by_user_priority) =
            (r.schedd.clone(), r.user.clone(), r.by_user_priority);
        let claim = self.new_claim(i, r, ad, now);
        let pair = self.slots[i].pair();
        match pair {
            Pair(State::Unclaimed, Activity::Idle) | Pair(State::Matched, Activity::Idle) => {
                self.slots[i].claim = Some(claim);
                let number = if pair.0 == State::Unclaimed { 5 } else { 9 };
                self.go(
                    i,
                    Pair(State::Claimed, Activity::Idle),
                    number,
                    Cause::Event(format!("claimed by {schedd}")),
                    now,
                    ready,
                );
                Ok(())
            }
            Pair(State::Backfill, Activity::Busy) => {
                self.slots[i].preempting = Some(claim);
                self.kill_backfill(i, BackfillExit::Claimed, now, ready);
                Ok(())
            }
            Pair(State::Backfill, Activity::Idle | Activity::Killing) => {
                self.slots[i].preempting = Some(claim);
                self.slots[i].backfill_exit = Some(BackfillExit::Claimed);
                Ok(())
            }
            Pair(State::Claimed, activity) => {
                let s = &self.slots[i];
                if s.preempting.is_some() {
                    return Err(refuse("already being preempted by another claim".into()));
                }
                if matches!(s.retirement, Some(ref w) if *w != Retirement::Preempted) {
                    return Err(refuse("its claim is already being evicted".into()));
                }
                let current = s.claim.as_ref().map_or(0.0, |c| c.rank);
                if !by_user_priority && claim.rank <= current {
                    return Err(refuse(format!(
                        "RANK for this job ({}) is not better than for the current claim ({current})",
                        claim.rank
                    )));
                }
                let cause = Cause::Event(if by_user_priority {
                    format!("preempted by a job of {user} (user priority)")
                } else {
                    format!(
                        "preempted by a job the machine ranks higher ({} > {current})",
                        claim.rank
                    )
                });
                self.slots[i].preempting = Some(claim);
                match activity {
                    Activity::Busy => {
                        let limit = self.retirement_limit(i, ad, now);
                        self.retire(i, Retirement::Preempted, limit, 13, cause, now, ready);
                    }
                    Activity::Idle => {}
                    _ => {
                        let limit = self.retirement_limit(i, ad, now);
                        let s = &mut self.slots[i];
                        if s.retirement.is_none() {
                            s.retirement = Some(Retirement::Preempted);
                            s.retirement_limit = limit;
                        }
                    }
                }
                Ok(())
            }
            p => Err(refuse(format!("cannot be claimed in {p}"))),
        }
    }

    /// A claim on a partitionable slot: a dynamic slot sized for the job
    /// (`carve`) is cut from what the partitionable slot has left, and the
    /// claim is made on it (transition 5 for the new slot). The
    /// partitionable slot stays Unclaimed with the rest.
    fn claim_partitionable(
        &mut self,
        i: usize,
        r: ClaimRequest,
        now: i64,
        ready: &mut Ready,
    ) -> Result<(), Refusal> {
        let slot = self.slots[i].name.clone();
        let refuse = |reason: String| Refusal {
            slot: slot.clone(),
            reason,
        };
        if self.slots[i].pair() != Pair(State::Unclaimed, Activity::Idle) {
            return Err(refuse(format!(
                "cannot be claimed in {}",
                self.slots[i].pair()
            )));
        }
        if !r.preempt_dynamic.is_empty() {
            return self.preempt_dynamic_slots(i, r, now, ready);
        }
        let Some(machine) = self.resources.as_ref() else {
            return Err(refuse(
                "a partitionable slot needs the machine's resources".into(),
            ));
        };
        let ad = self.slot_ad(i, now);
        let p = self
            .partitionables
            .get_mut(&slot)
            .ok_or_else(|| refuse("not a partitionable slot".into()))?;
        let req = p
            .request(&self.config, &r.job, &ad, now)
            .map_err(|e| refuse(e.to_string()))?;
        let dslot = p.carve(machine, &req).map_err(|e| refuse(e.to_string()))?;
        let free = p.free.clone();
        self.slots[i].resources = free;
        let parent = &self.slots[i];
        let mut d = Slot::new(
            parent.id,
            parent.slot_type,
            dslot.resources.clone(),
            parent.policy.clone(),
            now,
        );
        d.name = dslot.name.clone();
        d.kind = SlotKind::Dynamic {
            parent: slot.clone(),
            sub_id: dslot.sub_id,
        };
        d.state = State::Unclaimed;
        d.entered_state = now;
        d.entered_activity = now;
        self.slots.push(d);
        self.slots_changed();
        let j = self.slots.len() - 1;
        let dad = self.slot_ad(j, now);
        let claim = self.new_claim(j, r.clone(), &dad, now);
        self.slots[j].claim = Some(claim);
        let cause = Cause::Event(format!(
            "claimed by {}: a dynamic slot carved from {slot}",
            r.schedd
        ));
        self.go(
            j,
            Pair(State::Claimed, Activity::Idle),
            5,
            cause,
            now,
            ready,
        );
        Ok(())
    }

    /// Pslot preemption: evicts the dynamic slots of partitionable slot
    /// `i` that the claim names, and keeps the claim until they are gone.
    /// Each gets its retirement time (MaxJobRetirementTime), then vacates,
    /// as a user-priority preemption does.
    fn preempt_dynamic_slots(
        &mut self,
        i: usize,
        mut r: ClaimRequest,
        now: i64,
        ready: &mut Ready,
    ) -> Result<(), Refusal> {
        let pslot = self.slots[i].name.clone();
        let names = std::mem::take(&mut r.preempt_dynamic);
        let mut waiting = Vec::new();
        for name in &names {
            let Some(j) = self.slots.iter().position(|s| {
                s.name == *name
                    && matches!(&s.kind, SlotKind::Dynamic { parent, .. } if *parent == pslot)
            }) else {
                // Gone already: its resources are back.
                continue;
            };
            if self.pending_claims.iter().any(|p| p.waiting.contains(name)) {
                return Err(Refusal {
                    slot: pslot,
                    reason: format!("{name} is already being preempted for another claim"),
                });
            }
            waiting.push((j, name.clone()));
        }
        // As HTCondor's startd does, a victim with retirement time left
        // refuses the whole claim (the negotiator should not have chosen it).
        for (j, name) in &waiting {
            let ad = self.slot_ad(*j, now);
            if self.slots[*j].job.is_some() {
                let ran = self.slots[*j].job_run_time(now);
                if let Some(left) = self
                    .retirement_limit(*j, &ad, now)
                    .map(|l| l - ran)
                    .filter(|left| *left > 0)
                {
                    return Err(Refusal {
                        slot: pslot,
                        reason: format!("{name} has {left} s of retirement time left"),
                    });
                }
            }
        }
        let cause = Cause::Event(format!(
            "preempted by a job of {} (user priority): its partitionable slot {pslot} needs the room",
            r.user
        ));
        for (j, _) in &waiting {
            let j = *j;
            let ad = self.slot_ad(j, now);
            let limit = Some(0);
            match self.slots[j].pair() {
                Pair(State::Claimed, Activity::Busy) => {
                    self.retire(j, Retirement::Vacate, limit, 13, cause.clone(), now, ready)
                }
                Pair(State::Claimed, Activity::Idle) => {
                    self.slots[j].retirement = Some(Retirement::Vacate);
                    self.slots[j].retirement_limit = limit;
                    self.enter_preempting(j, &ad, 10, cause.clone(), now, ready);
                }
                Pair(State::Claimed, _) => {
                    let s = &mut self.slots[j];
                    if s.retirement.is_none() {
                        s.retirement = Some(Retirement::Vacate);
                        s.retirement_limit = limit;
                    }
                }
                _ => {}
            }
        }
        self.pending_claims.push(PendingClaim {
            pslot,
            request: r,
            waiting: waiting.into_iter().map(|(_, n)| n).collect(),
        });
        Ok(())
    }

    /// Grants the pending pslot-preemption claims whose dynamic slots are
    /// all gone: the dynamic slot is carved as for any claim. One that no
    /// longer fits (or START no longer accepts) ends, and the schedd hears
    /// so.
    fn grant_pending_claims(&mut self, now: i64, ready: &mut Ready) {
        let mut k = 0;
        while k < self.pending_claims.len() {
            let p = &self.pending_claims[k];
            let gone = p
                .waiting
                .iter()
                .all(|n| !self.slots.iter().any(|s| s.name == *n));
            if !gone {
                k += 1;
                continue;
            }
            let p = self.pending_claims.remove(k);
            let claim_id = p.request.claim_id.clone();
            let schedd = p.request.schedd.clone();
            let outcome = match self.slots.iter().position(|s| s.name == p.pslot) {
                Some(i) => self.request_claim(i, p.request, now, ready),
                None => Err(Refusal {
                    slot: p.pslot.clone(),
                    reason: "the partitionable slot is gone".into(),
                }),
            };
            if let Err(e) = outcome {
                ready.actions.push(Action::ClaimEnded {
                    slot: p.pslot,
                    claim_id,
                    schedd,
                    reason: format!("the preempting claim could not be granted: {}", e.reason),
                });
            }
        }
    }

    /// Tells each schedd whose claim became Claimed/Idle with no starter
    /// that it may run a job on it ([`Action::ClaimIdle`]), and again
    /// every [`IDLE_CLAIM_REMINDER`] seconds while it stays so (a message
    /// may have been lost on the way, or the schedd's answer). Claims on
    /// fetched work start their job by themselves and are not a schedd's.
    fn report_idle_claims(&mut self, now: i64, ready: &mut Ready) {
        for i in 0..self.slots.len() {
            let s = &self.slots[i];
            let due = s.pair() == Pair(State::Claimed, Activity::Idle)
                && !s.starter
                && s.claim.as_ref().is_some_and(|c| {
                    c.fetched.is_none()
                        && (!c.told_idle || now - c.told_idle_at >= IDLE_CLAIM_REMINDER)
                });
            if !due {
                continue;
            }
            let ran = s.claim.as_ref().is_some_and(|c| c.ran_job);
            let slot_ad = ran.then(|| Box::new(self.slot_ad(i, now)));
            let s = &mut self.slots[i];
            let worklife = s.policy.claim_worklife;
            let c = s.claim.as_mut().expect("checked above");
            c.told_idle = true;
            c.told_idle_at = now;
            ready.actions.push(Action::ClaimIdle {
                slot: s.name.clone(),
                claim_id: c.id.clone(),
                schedd: c.schedd.clone(),
                slot_ad,
                claimed_at: c.claimed_at,
                worklife,
            });
        }
    }

    /// Dynamic slots whose claim is over go away, their resources back to
    /// their partitionable slot.
    fn reap_dynamic_slots(&mut self) {
        let mut i = 0;
        while i < self.slots.len() {
            let s = &self.slots[i];
            // Only dynamic slots are reaped: the others' states need not
            // be read (a poll of a large pool reads every slot).
            let done = matches!(s.kind, SlotKind::Dynamic { .. })
                && matches!(s.state, State::Owner | State::Unclaimed)
                && s.claim.is_none()
                && s.preempting.is_none()
                && !s.starter;
            if let (true, SlotKind::Dynamic { parent, sub_id }) = (done, &s.kind) {
                let (parent, sub_id) = (parent.clone(), *sub_id);
                if let Some(p) = self.partitionables.get_mut(&parent) {
                    p.release(sub_id);
                    let free = p.free.clone();
                    if let Some(ps) = self.slots.iter_mut().find(|s| s.name == parent) {
                        ps.resources = free;
                    }
                }
                self.slots.remove(i);
                self.slots_changed();
                continue;
            }
            i += 1;
        }
    }

    fn activate(
        &mut self,
        i: usize,
        claim_id: &str,
        job: ClassAd,
        now: i64,
        ready: &mut Ready,
    ) -> Result<(), Refusal> {
        let slot = self.slots[i].name.clone();
        let refuse = |reason: String| Refusal {
            slot: slot.clone(),
            reason,
        };
        let s = &self.slots[i];
        if s.pair() != Pair(State::Claimed, Activity::Idle) {
            return Err(refuse(format!("cannot start a job in {}", s.pair())));
        }
        let claim = s.claim.as_ref().expect("claimed");
        if claim.id != claim_id {
            return Err(refuse(format!("claim {claim_id} does not hold this slot")));
        }
        if let Some(w) = s.policy.claim_worklife {
            if now - claim.claimed_at > w {
                return Err(refuse(format!(
                    "the claim is {} s old, past CLAIM_WORKLIFE ({w} s): it takes no new job",
                    now - claim.claimed_at
                )));
            }
        }
        let ad = self.take_ad(i, now);
        let s = &self.slots[i];
        let env = self.env(now);
        let nice = number(&evaluate(
            s.policy.job_renice_increment.as_ref(),
            &ad,
            Some(&job),
            &env,
        ))
        .unwrap_or(0);
        // The claim's rank is now this job's (HTCondor's activate_claim:
        // "update the current rank on this claim"): a claim reused for
        // another job publishes the CurrentRank of the job it runs, which
        // is what RANK preemption compares against.
        let rank =
            number_f(&evaluate(s.policy.rank.as_ref(), &ad, Some(&job), &env)).unwrap_or(0.0);
        self.put_ad(i, ad);
        let s = &mut self.slots[i];
        let schedd = match s.claim.as_mut() {
            Some(c) => {
                c.told_idle = false;
                c.ran_job = true;
                c.rank = rank;
                c.schedd.clone()
            }
            None => String::new(),
        };
        s.job_facts = crate::slot::JobFacts::of(&job);
        s.job = Some(job.clone());
        s.job_start = Some(now);
        s.job_suspended_total = 0;
        s.suspended_since = None;
        s.starter = true;
        ready.actions.push(Action::StartJob {
            slot: s.name.clone(),
            claim_id: claim_id.to_string(),
            schedd,
            job,
            nice,
        });
        self.go(
            i,
            Pair(State::Claimed, Activity::Busy),
            11,
            Cause::Event("the schedd started a job".into()),
            now,
            ready,
        );
        Ok(())
    }
}

/// A value as whole seconds (reals truncated).
fn number(v: &Value) -> Option<i64> {
    match v {
        Value::Int(i) => Some(*i),
        Value::Real(x) if x.is_finite() => Some(*x as i64),
        Value::Bool(b) => Some(*b as i64),
        _ => None,
    }
}

fn number_f(v: &Value) -> Option<f64> {
    v.as_number()
}

/// Whether two latch values are the same (a change resets the latch time).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => x == y,
        (Value::Real(x), Value::Real(y)) => x == y,
        (Value::Str(x), Value::Str(y)) => x == y,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Undefined, Value::Undefined) | (Value::Error, Value::Error) => true,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::{Latched, LatchedSlots};

    /// A poll's latch outcomes read back as written, in and past the bit
    /// sets.
    #[test]
    fn latched_slots_read_back_as_pushed() {
        let all: Vec<Latched> = (0..150)
            .map(|i| Latched {
                unchanged: i % 3 != 0,
                refreshed: i % 5 == 1,
            })
            .collect();
        let mut set = LatchedSlots::default();
        for &l in &all {
            set.push(l);
        }
        assert_eq!(set.len(), all.len());
        for (i, &l) in all.iter().enumerate() {
            assert_eq!(set.get(i), l, "slot index {i}");
        }
    }
}
