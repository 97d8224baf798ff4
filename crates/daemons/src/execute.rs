//! The startd role: the execute point. The `startd` engine polled with
//! the `host` crate's readings; its actions carried out by the `starter`
//! crate on real processes; its slot ads sent to the collector; what
//! becomes of a schedd's claims, and what the starters say about the jobs
//! they run, sent to the claim's schedd.
//!
//! [`StartdRole`] is plain synchronous code on its role's thread. What
//! must wait (a job's exit, a hook program, a job's output coming back)
//! is handed to the server as [`Work`], and its outcome comes back as a
//! call: [`StartdRole::exited`], [`StartdRole::finished`],
//! [`StartdRole::hook_done`]. Every decision is a core's: what a reading
//! means and what a slot does is the startd engine's.
//!
//! Crash safety: a job's run (its process group and when its leader
//! started) is recorded in `<state>/running/` before the schedd hears that
//! it started; at start, whatever a dead pool left running is killed
//! before any role runs, so the schedd may evict the jobs the queue still
//! calls running back to idle: none is lost, none runs twice at once.

use std::collections::{BTreeMap, BTreeSet};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use classad::{ClassAd, Env, Value};
use negotiator::collector::AdType;
use schedd::claims::{RunEnd, StartFailure, StarterReport, Stop};
use schedd::{ExitHow, RunReport};
use startd::resources::HostReadings;
use startd::{Action, Activity, Event, Ready, Startd, State};
use starter::{
    CgroupPolicy, ExitKind, ExitReport, ExitStatus, FinishProblem, Hooks, JobSpec,
    MemoryLimitPolicy, MemorySettings, OomVerdict, RunAs, RunningJob, StartError, Starter,
    StarterSettings,
};

pub(crate) use crate::leftovers::record_running;
use crate::leftovers::{forget_running, kill_leftovers};
use crate::roles::{AdminRequest, Dest, Message, Outbox, Role, RoleName};
use crate::schedd_service::literal_str;

/// The execute point's and the central manager's configuration.
pub struct NodeConfig {
    /// The configuration as the startd reads it (subsystem STARTD).
    pub startd: config::Config,
    /// As the negotiator reads it (subsystem NEGOTIATOR).
    pub negotiator: config::Config,
    /// As the collector reads it (subsystem COLLECTOR): `COLLECTOR.`
    /// settings (CONDOR_VIEW_HOST, KEEP_POOL_HISTORY) apply to it alone.
    pub collector: config::Config,
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
    /// no pidfd, poll), then call [`StartdRole::exited`].
    Watch {
        slot: String,
        run: u64,
        fd: Option<OwnedFd>,
    },
    /// Start the job (sandbox, input files, PREPARE_JOB, fork and exec:
    /// [`Starter::start`], which blocks), record its process group in
    /// `running_dir`, then call [`StartdRole::started`].
    Start {
        slot: String,
        run: u64,
        spec: Box<JobSpec>,
        running_dir: PathBuf,
    },
    /// The job has exited: bring its output back and run JOB_EXIT
    /// ([`RunningJob::finish`], which blocks), then call [`StartdRole::finished`].
    Finish {
        slot: String,
        run: u64,
        job: Box<RunningJob>,
    },
    /// Run a startd hook program; for FETCH_WORK, call
    /// [`StartdRole::hook_done`] with what it printed.
    Hook {
        slot: String,
        program: PathBuf,
        args: Vec<String>,
        input: String,
        fetch: bool,
    },
    /// Ask the collector for the startd ads `constraint` picks (the
    /// VM-host peers': `startd::vm_host`), then call
    /// [`StartdRole::peers_heard`] with them or why they are not known.
    QueryPeers { constraint: classad::Expr },
    /// Ask FILETRANSFER_PLUGINS what they transfer ([`url_methods`], which
    /// runs each plugin, up to 20 s), then call
    /// [`StartdRole::plugins_heard`] with the answer for `asked`.
    QueryPlugins {
        settings: Box<StarterSettings>,
        root: bool,
        asked: u64,
    },
}

/// A job's process on a slot.
struct Run {
    id: u64,
    /// The claim it runs on: the schedd's (whose claim core hears how the
    /// run goes), or one a FETCH_WORK hook made.
    claim_id: String,
    /// The schedd the claim is for, by name (its reports go there even
    /// after the claim has ended, as the job's last report may).
    schedd: Option<String>,
    /// `None` while it is being started, and once the process exited and
    /// is being finished.
    process: Option<Box<RunningJob>>,
    /// Being started outside the lock: what the startd asked for meanwhile
    /// waits in `deferred`, to be done once the process exists.
    starting: bool,
    deferred: Vec<Control>,
    /// Why it is ending, when something other than the job ends it.
    kind: ExitKind,
    /// The job's tracking group (USE_GID_PROCESS_TRACKING), held until
    /// the run is over and nothing of it is left.
    tracking_gid: Option<u32>,
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

/// How the starter of a job reaches the job's schedd in another process:
/// given the schedd's name, the claim and the job, the shadow to use, or
/// `None` where that schedd runs in this process (its files are here).
pub type Shadows = std::sync::Arc<
    dyn Fn(&str, &str, schedd::JobId) -> Option<starter::shadow::ShadowRef> + Send + Sync,
>;

/// The execute point.
pub struct StartdRole {
    startd: Startd,
    /// When the keyboard daemon last said the keyboard or mouse was used
    /// (X_EVENT_NOTIFICATION).
    last_x_event: Option<i64>,
    sampler: host::sampler::Sampler,
    startd_config: config::Config,
    hostname: String,
    running_dir: PathBuf,
    /// The starter's settings every job starts from (read from the
    /// configuration at start and at reconfig, not at every job).
    starter: StarterSettings,
    runs: BTreeMap<String, Run>,
    run_seq: u64,
    /// Events for the engine, handed to it in order.
    pending: Vec<Event>,
    /// Each claim's schedd (by name), where what becomes of the claim and
    /// its jobs goes: a pool may have several access points.
    claim_schedds: BTreeMap<String, String>,
    /// Each claim's last job's final report, kept while the claim lasts
    /// and no other job runs on it: a schedd that was away (restarted,
    /// cut off) when it was sent has it again with the next keep-alive's
    /// answer, so a job that ended meanwhile is neither lost nor run
    /// twice.
    last_reports: BTreeMap<String, StarterReport>,
    /// Where the starter reaches the job's access point in another
    /// process, for its files (by the schedd's name, the claim and the
    /// job); `None` where every schedd runs in this process.
    shadows: Option<Shadows>,
    /// What this step leaves for the role's outbox.
    work: Vec<Work>,
    messages: Vec<(Dest, Message)>,
    notes: Vec<String>,
    /// The slot names last sent to the collector (those gone are withdrawn).
    published: BTreeSet<String>,
    /// The command port's address, for the slot ads' `MyAddress`.
    address: Option<String>,
    /// Seconds between polls.
    poll_interval: u64,
    /// Mips and KFlops, once measured.
    benchmarks: Option<(i64, i64)>,
    /// The limits jobs went without, said once each (not at every job).
    unset_limits: BTreeSet<String>,
    /// USE_GID_PROCESS_TRACKING's range: each run holds one of its groups.
    tracking: Option<starter::TrackingGids>,
    /// The backfill client (BACKFILL_SYSTEM), while it runs: one for the
    /// machine, shared by every slot in Backfill, as HTCondor's BOINC
    /// manager runs one boinc_client.
    backfill: Option<BackfillClient>,
    /// Running on VM hosts (VMP_HOST_MACHINE, VMP_VM_LIST): who the peers
    /// are, and the collector query for their ads.
    vm_peers: Option<VmPeerQuery>,
    /// How many times FILETRANSFER_PLUGINS were asked since start (only
    /// the latest answer is taken).
    plugins_asked: u64,
}

/// The startd's side of `startd::vm_host`: the peers, and the one query
/// for their ads that may be out at a time.
struct VmPeerQuery {
    peers: startd::vm_host::VmPeers,
    /// When the query now out was sent (none out: `None`).
    asked_at: Option<i64>,
    /// Why the last query failed, said once until one succeeds.
    failing: Option<String>,
}

/// A query for the peers' ads that has not answered in this long is
/// taken as lost and asked again (each read of it has the client's own
/// deadline, so it ends by itself well before).
const PEER_QUERY_LOST: i64 = 120;

/// The running backfill client and the slots it works for.
struct BackfillClient {
    process: RunningJob,
    system: String,
    /// Slots in Backfill/Busy on its account.
    slots: BTreeSet<String>,
    /// Being stopped: the slots waiting in Backfill/Killing for its end,
    /// and when it is killed outright (KILLING_TIMEOUT after its KillSig).
    killing: BTreeSet<String>,
    hard_kill_at: Option<i64>,
    /// Slots that entered Backfill while it was being stopped: a new
    /// client starts for them once it is gone.
    waiting: BTreeMap<String, Box<startd::policy::BackfillProgram>>,
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
) -> Result<StarterSettings, String> {
    let mut s = StarterSettings::new(execute_dir);
    s.run_as = run_as;
    s.cgroup = cgroup;
    s.memory = memory_settings(c)?;
    s.user_job_wrapper = param(c, "USER_JOB_WRAPPER").map(PathBuf::from);
    s.file_system_domain = param(c, "FILESYSTEM_DOMAIN");
    s.enable_url_transfers = c
        .boolean("ENABLE_URL_TRANSFERS")
        .map_err(|e| e.to_string())?
        .unwrap_or(true);
    // A listed plugin that is not installed is left out, as HTCondor's
    // starter leaves out one that does not answer -classad.
    s.filetransfer_plugins = param(c, "FILETRANSFER_PLUGINS")
        .map(|v| {
            v.split(|ch: char| ch == ',' || ch.is_whitespace())
                .filter(|p| !p.is_empty())
                .map(PathBuf::from)
                .collect()
        })
        .unwrap_or_default();
    if let Some(k) = param(c, "STARTER_JOB_HOOK_KEYWORD") {
        s.hooks = hooks_for(c, &k);
    }
    if let Ok(Some(i)) = c.integer("STARTER_INITIAL_UPDATE_INTERVAL") {
        s.initial_update_interval = std::time::Duration::from_secs(i.max(1) as u64);
    }
    if let Ok(Some(i)) = c.integer("STARTER_UPDATE_INTERVAL") {
        s.update_interval = std::time::Duration::from_secs(i.max(1) as u64);
    }
    s.pid_namespace = c
        .boolean("USE_PID_NAMESPACES")
        .map_err(|e| e.to_string())?
        .unwrap_or(false);
    Ok(s)
}

/// CGROUP_MEMORY_LIMIT_POLICY and its companions; a value the starter
/// cannot use is a configuration error, named with where it was defined.
fn memory_settings(c: &config::Config) -> Result<MemorySettings, String> {
    let text = |name: &str| param(c, name);
    let policy = MemoryLimitPolicy::from_config(
        &text("CGROUP_MEMORY_LIMIT_POLICY").unwrap_or_else(|| "hard".into()),
        text("CGROUP_HARD_MEMORY_LIMIT_EXPR").as_deref(),
        text("CGROUP_SOFT_MEMORY_LIMIT_EXPR").as_deref(),
    )
    .map_err(|e| {
        config::ParamError {
            name: e.param.to_string(),
            text: text(e.param).unwrap_or_default(),
            origin: c.find(e.param).map(|f| Box::new(f.origin)),
            message: e.message,
        }
        .to_string()
    })?;
    let flag = |name: &str| {
        c.boolean(name)
            .map(|b| b.unwrap_or(true))
            .map_err(|e| e.to_string())
    };
    Ok(MemorySettings {
        policy,
        disable_swap: flag("DISABLE_SWAP_FOR_JOB")?,
        always_hold_on_oom: flag("STARTER_ALWAYS_HOLD_ON_OOM")?,
    })
}

/// USE_GID_PROCESS_TRACKING and its range, or why the startd cannot
/// start with them (HTCondor's procd refuses alike): a missing, empty or
/// overlapping range, or a startd that is not root.
fn tracking_gids(c: &config::Config, root: bool) -> Result<Option<starter::TrackingGids>, String> {
    let on = c
        .boolean("USE_GID_PROCESS_TRACKING")
        .map_err(|e| e.to_string())?
        .unwrap_or(false);
    if !on {
        return Ok(None);
    }
    if !root {
        return Err(
            "USE_GID_PROCESS_TRACKING is true, but the startd is not root: \
                    only root can add a tracking group to a job's processes"
                .into(),
        );
    }
    let min = param(c, "MIN_TRACKING_GID");
    let max = param(c, "MAX_TRACKING_GID");
    starter::TrackingGids::from_config(min.as_deref(), max.as_deref(), group_name)
        .map(Some)
        .map_err(|e| {
            config::ParamError {
                name: e.param.to_string(),
                text: param(c, e.param).unwrap_or_default(),
                origin: c.find(e.param).map(|f| Box::new(f.origin)),
                message: e.message,
            }
            .to_string()
        })
}

/// The name of the system's group `gid`, if there is one.
fn group_name(gid: u32) -> Option<String> {
    let mut buf = vec![0u8; 16384];
    // SAFETY: an all-zero group is a valid value to be filled in.
    let mut grp: libc::group = unsafe { std::mem::zeroed() };
    let mut result: *mut libc::group = std::ptr::null_mut();
    // SAFETY: every pointer is valid for the call; buf outlives grp's use.
    let rc = unsafe {
        libc::getgrgid_r(
            gid,
            &mut grp,
            buf.as_mut_ptr().cast(),
            buf.len(),
            &mut result,
        )
    };
    if rc != 0 || result.is_null() || grp.gr_name.is_null() {
        return None;
    }
    // SAFETY: getgrgid_r filled gr_name with a NUL-terminated string in buf.
    let name = unsafe { std::ffi::CStr::from_ptr(grp.gr_name) };
    Some(name.to_string_lossy().into_owned())
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

/// HasFileTransferPluginMethods: `file`, and what FILETRANSFER_PLUGINS
/// answer to `-classad`, asked as HTCondor's startd asks them at start;
/// a daemon that is root asks as `nobody`, never as root. A listed
/// plugin that is missing or does not answer is left out.
pub fn url_methods(s: &StarterSettings, root: bool, notes: &mut Vec<String>) -> String {
    if s.filetransfer_plugins.is_empty() {
        return starter::url_plugin::advertised_methods(&[]);
    }
    let asker = if root {
        match starter::lookup_user("nobody") {
            Ok(u) => Some(u),
            Err(e) => {
                notes.push(format!(
                    "FILETRANSFER_PLUGINS not asked (no user `nobody` to ask as: {e}); only file:// is advertised"
                ));
                return starter::url_plugin::advertised_methods(&[]);
            }
        }
    } else {
        None
    };
    let within = std::time::Duration::from_secs(20);
    match starter::user_priv::query_plugins(asker.as_ref(), &s.filetransfer_plugins, within) {
        Ok((plugins, _)) => starter::url_plugin::advertised_methods(&plugins),
        Err(why) => {
            notes.push(format!("FILETRANSFER_PLUGINS could not be asked: {why}"));
            starter::url_plugin::advertised_methods(&[])
        }
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

/// VMP_HOST_MACHINE and VMP_VM_LIST read (none set: `None`).
fn vm_peer_query(c: &config::Config, own_startd: &str) -> Result<Option<VmPeerQuery>, String> {
    let peers =
        startd::vm_host::VmPeers::from_config(c, own_startd).map_err(|e| format!("startd: {e}"))?;
    Ok(peers.map(|peers| VmPeerQuery {
        peers,
        asked_at: None,
        failing: None,
    }))
}

/// The daemon log's line on what running on VM hosts will do here.
fn describe_vm_peers(p: &startd::vm_host::VmPeers) -> String {
    let mut parts = Vec::new();
    if let Some(h) = &p.host {
        parts.push(format!(
            "VMP_HOST_MACHINE: this is an inner virtual machine of {h}: its slots publish the \
             host's attributes as HOST_<attr>, and START is False while the host runs a job"
        ));
    }
    if !p.vms.is_empty() {
        parts.push(format!(
            "VMP_VM_LIST: this host runs the inner virtual machines {}: START is False while \
             one of them runs a job",
            p.vms.join(", ")
        ));
    }
    parts.join("; ")
}

impl StartdRole {
    /// Builds the startd from the configuration and the machine, and
    /// takes over whatever a previous pool left running: killed, before
    /// any role runs (so the schedd may evict the jobs to run again).
    pub fn new(cfg: &NodeConfig, state_dir: &Path, now: i64) -> Result<StartdRole, String> {
        let startd = Startd::from_config(&cfg.startd, &cfg.hostname, &cfg.host, now)
            .map_err(|e| format!("startd: {e}"))?;
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
        // Jobs get a cgroup v2 of their own under BASE_CGROUP where one
        // can be made (HTCondor's layout: see starter::cgroup_layout);
        // else their process group and session hold them.
        let base = cfg
            .startd
            .get("BASE_CGROUP")
            .ok()
            .flatten()
            .unwrap_or_default();
        let cgroup = match starter::settle_job_cgroups(&base).and_then(|j| {
            let parent = Starter::probe(&CgroupPolicy::Under(j.jobs.clone())).cgroup_parent?;
            Ok((j, parent))
        }) {
            Ok((j, parent)) => {
                let moved = j
                    .moved_to
                    .as_ref()
                    .map(|l| format!("the startd moved into `{}`; ", l.display()))
                    .unwrap_or_default();
                notes.push(match &j.limits {
                    Ok(controllers) => format!(
                        "{moved}job cgroups under `{}` with the controllers {}",
                        parent.display(),
                        controllers.join(" ")
                    ),
                    Err(why) => format!(
                        "{moved}job cgroups under `{}` track jobs but cannot limit them: {why}",
                        parent.display()
                    ),
                });
                CgroupPolicy::Under(parent)
            }
            Err(why) => {
                notes.push(format!(
                    "jobs run without a cgroup (suspend and kill by process group): {why}"
                ));
                CgroupPolicy::Disabled
            }
        };
        let poll_interval = interval(&cfg.startd, "POLLING_INTERVAL", 5)?;
        let cgroup_parent = match &cgroup {
            CgroupPolicy::Under(p) => Some(p.as_path()),
            _ => None,
        };
        kill_leftovers(&running_dir, &cfg.execute_dir, cgroup_parent);
        let root = matches!(run_as, RunAs::JobOwner);
        let starter = starter_base(&cfg.startd, &cfg.execute_dir, run_as, cgroup)?;
        let tracking = tracking_gids(&cfg.startd, root).map_err(|e| format!("startd: {e}"))?;
        if let Some(t) = &tracking {
            notes.push(format!(
                "USE_GID_PROCESS_TRACKING: each job is marked by a group of {}-{}",
                t.min, t.max
            ));
            let killed = crate::leftovers::kill_tracked_leftovers(t.min, t.max);
            if killed > 0 {
                notes.push(format!(
                    "killed {killed} processes a dead pool's jobs left (they carried tracking groups)"
                ));
            }
        }
        if starter.pid_namespace {
            notes.push(if root {
                "USE_PID_NAMESPACES: each job runs under an init in a PID namespace of its own"
                    .into()
            } else {
                "USE_PID_NAMESPACES is set, but the startd is not root: jobs run in the \
                 execute point's PID namespace (HTCondor's starter gives one only as root)"
                    .into()
            });
        }
        // Running on VM hosts (special-environments.txt): the peers'
        // ads are asked of the collector at every poll.
        let vm_peers = vm_peer_query(&cfg.startd, &startd.machine.startd_name)?;
        if let Some(q) = &vm_peers {
            notes.push(describe_vm_peers(&q.peers));
        }
        let mut startd = startd;
        if starter.enable_url_transfers {
            startd.set_file_transfer_methods(Some(url_methods(&starter, root, &mut notes)));
        }
        Ok(StartdRole {
            startd,
            last_x_event: None,
            sampler,
            hostname: cfg.hostname.clone(),
            startd_config: cfg.startd.clone(),
            running_dir,
            starter,
            runs: BTreeMap::new(),
            run_seq: 0,
            pending: Vec::new(),
            work: Vec::new(),
            messages: Vec::new(),
            claim_schedds: BTreeMap::new(),
            last_reports: BTreeMap::new(),
            shadows: None,
            notes,
            published: BTreeSet::new(),
            address: None,
            poll_interval,
            benchmarks: None,
            unset_limits: BTreeSet::new(),
            tracking,
            backfill: None,
            vm_peers,
            plugins_asked: 0,
        })
    }

    /// Moves what the last steps left into the role's outbox.
    pub fn flush(&mut self, out: &mut Outbox) {
        out.messages.append(&mut self.messages);
        out.work.append(&mut self.work);
        out.notes.append(&mut self.notes);
    }

    pub fn hostname(&self) -> &str {
        &self.hostname
    }

    /// Where the starters reach schedds of other processes.
    pub fn set_shadows(&mut self, shadows: Shadows) {
        self.shadows = Some(shadows);
    }

    /// The startd's name (its slots are `slotN@name`): the host's, or as
    /// STARTD_NAME gives it.
    pub fn name(&self) -> &str {
        &self.startd.machine.startd_name
    }

    /// Whether `slot` is one of this machine's slots.
    pub fn has_slot(&self, slot: &str) -> bool {
        self.startd.slot(slot).is_some()
    }

    /// A drain's CheckExpr against every slot ([`Startd::drain_check`]).
    pub fn drain_check(&mut self, check: &classad::Expr, now: i64) -> Result<(), String> {
        self.startd.drain_check(check, now)
    }

    /// The new startd configuration (after `condor_reconfig`); nothing
    /// changes when it is refused.
    pub fn reconfigure(&mut self, startd_config: config::Config) -> Result<(), String> {
        let starter = starter_base(
            &startd_config,
            &self.starter.execute_dir,
            self.starter.run_as.clone(),
            self.starter.cgroup.clone(),
        )?;
        let vm_peers = vm_peer_query(&startd_config, self.name())?;
        self.startd
            .reconfigure(&startd_config)
            .map_err(|e| e.to_string())?;
        if vm_peers.as_ref().map(|q| &q.peers) != self.vm_peers.as_ref().map(|q| &q.peers) {
            // Other peers (or none): what the old ones said is forgotten,
            // and the new ones are asked at the next poll.
            self.startd
                .set_vm_peers(startd::vm_host::PeerView::default());
            if let Some(q) = &vm_peers {
                self.notes.push(describe_vm_peers(&q.peers));
            }
            self.vm_peers = vm_peers;
        }
        // The plugins are asked again, as HTCondor's startd does at
        // reconfig: a plugin added, removed or changed shows in
        // HasFileTransferPluginMethods (jobs' starters ask them anew).
        // Asking runs each plugin (up to 20 s), so it is work for outside
        // the role; what was advertised stays until the answer.
        self.plugins_asked += 1;
        if !starter.enable_url_transfers {
            self.startd.set_file_transfer_methods(None);
        } else if starter.filetransfer_plugins.is_empty() {
            let mut none = Vec::new();
            let methods = url_methods(&starter, false, &mut none);
            self.startd.set_file_transfer_methods(Some(methods));
        } else {
            self.work.push(Work::QueryPlugins {
                settings: Box::new(starter.clone()),
                root: matches!(starter.run_as, RunAs::JobOwner),
                asked: self.plugins_asked,
            });
        }
        self.starter = starter;
        self.startd_config = startd_config;
        Ok(())
    }

    /// Where HTCondor's clients reach this startd (`MyAddress`).
    pub fn set_address(&mut self, sinful: String) {
        self.address = Some(sinful);
    }

    /// The startd's update to the collector: every slot's ad now; the ads
    /// of slots that are gone (dynamic slots given back) are withdrawn.
    pub fn publish_slots(&mut self, now: i64) {
        let mut ads = self.startd.published_ads(now);
        // Jobs' Requirements test the startd's version (HTCondor's submit
        // adds `versionGE(split(TARGET.CondorVersion)[1], ...)`).
        for ad in &mut ads {
            ad.insert_value("CondorVersion", cedar::CONDOR_VERSION);
            ad.insert_value("CondorPlatform", cedar::CONDOR_PLATFORM);
            if let Some(a) = &self.address {
                ad.insert_value("MyAddress", a.as_str());
            }
        }
        for m in crate::roles::advertise(AdType::Startd, ads, &mut self.published) {
            self.messages.push((RoleName::Collector.into(), m));
        }
    }

    fn slot_label(&self, slot: &str) -> String {
        format!("{slot}@{}", self.name())
    }

    /// Where a message about `claim_id` goes: the schedd that holds it.
    fn schedd_of(&self, claim_id: &str) -> Dest {
        let by_run = || {
            self.runs
                .values()
                .find(|r| r.claim_id == claim_id)
                .and_then(|r| r.schedd.as_ref())
        };
        match self.claim_schedds.get(claim_id).or_else(by_run) {
            Some(name) => Dest::named(RoleName::Schedd, name),
            None => Dest::role(RoleName::Schedd),
        }
    }

    /// A starter's report, to the claim's schedd.
    fn report(&mut self, report: StarterReport) {
        let to = self.schedd_of(report.claim_id());
        self.messages.push((to, Message::Starter(report)));
    }

    // ---- the startd ----------------------------------------------------

    // ---- backfill ------------------------------------------------------

    /// A slot entered Backfill/Idle: the backfill client works for it
    /// (started if none runs), and the slot goes Backfill/Busy. Without a
    /// program that can run, the slot leaves Backfill, and the log says why.
    fn start_backfill(
        &mut self,
        slot: String,
        program: Option<Box<startd::policy::BackfillProgram>>,
        now: i64,
    ) {
        let Some(program) = program else {
            self.notes.push(format!(
                "{slot}: ENABLE_BACKFILL is true, but BACKFILL_SYSTEM is not set: \
                 no backfill client to run; the slot leaves Backfill"
            ));
            self.pending.push(Event::BackfillExited { slot });
            return;
        };
        if let Some(c) = &mut self.backfill {
            if c.hard_kill_at.is_some() {
                c.waiting.insert(slot, program);
            } else {
                c.slots.insert(slot.clone());
                self.pending.push(Event::BackfillStarted { slot });
            }
            return;
        }
        let started = program.job_ad().and_then(|ad| {
            let mut s = self.starter_settings(&slot, &ad, 0, now);
            // The client is no user's job: none of the job hooks.
            s.hooks = Hooks::default();
            s.tracking_gid = None;
            let spec = JobSpec::new(ad, s).map_err(|e| e.to_string())?;
            Starter::start(spec).map_err(|e| e.to_string())
        });
        match started {
            Ok(process) => {
                let who = process
                    .mechanisms()
                    .user
                    .as_ref()
                    .map(|u| format!(" as {}", u.name))
                    .unwrap_or_default();
                self.notes.push(format!(
                    "{slot}: backfill client {} started (pid {}){who}",
                    program.system,
                    process.pid()
                ));
                self.backfill = Some(BackfillClient {
                    process,
                    system: program.system.clone(),
                    slots: BTreeSet::from([slot.clone()]),
                    killing: BTreeSet::new(),
                    hard_kill_at: None,
                    waiting: BTreeMap::new(),
                });
                self.pending.push(Event::BackfillStarted { slot });
            }
            Err(why) => {
                self.notes.push(format!(
                    "{slot}: cannot start the backfill client {}: {why}; the slot leaves Backfill",
                    program.system
                ));
                self.pending.push(Event::BackfillExited { slot });
            }
        }
    }

    /// The startd evicts backfill from `slot` (EVICT_BACKFILL, a match, a
    /// claim): once no slot is left to it, the client gets its KillSig,
    /// and KILLING_TIMEOUT later SIGKILL; the slot stays Backfill/Killing
    /// until it is gone.
    fn kill_backfill(&mut self, slot: String, now: i64) {
        let timeout = self
            .startd
            .slot(&slot)
            .map_or(30, |s| s.policy.killing_timeout);
        let Some(c) = &mut self.backfill else {
            self.pending.push(Event::BackfillExited { slot });
            return;
        };
        c.waiting.remove(&slot);
        if !c.slots.remove(&slot) {
            if !c.killing.contains(&slot) {
                self.pending.push(Event::BackfillExited { slot });
            }
            return;
        }
        if !c.slots.is_empty() {
            // Other slots still backfill: the client keeps running.
            self.pending.push(Event::BackfillExited { slot });
            return;
        }
        c.killing.insert(slot.clone());
        if c.hard_kill_at.is_none() {
            c.hard_kill_at = Some(now + timeout.max(0));
            if let Err(e) = c.process.soft_kill() {
                self.notes
                    .push(format!("{slot}: backfill client: {e}; killing it"));
                let _ = c.process.hard_kill();
            }
        }
    }

    /// Whether the backfill client has ended (then its slots leave
    /// Backfill, and a client starts for those that entered meanwhile), or
    /// is due to be killed outright.
    fn watch_backfill(&mut self, now: i64) {
        let Some(c) = &mut self.backfill else {
            return;
        };
        // Still running (an error polling it counts as its end).
        if let Ok(None) = c.process.poll() {
            if c.hard_kill_at.is_some_and(|t| now >= t) {
                self.notes.push(format!(
                    "backfill client {} outlived KILLING_TIMEOUT after its KillSig: killed",
                    c.system
                ));
                let _ = c.process.hard_kill();
                c.hard_kill_at = Some(i64::MAX);
            }
            return;
        }
        let c = self.backfill.take().expect("checked above");
        let r = c.process.finish();
        self.notes.push(format!(
            "backfill client {} (pid {}) {}",
            c.system,
            r.job
                .get("JobPid")
                .map(|p| p.to_string())
                .unwrap_or_default(),
            match r.status {
                ExitStatus::Code(code) => format!("exited with status {code}"),
                ExitStatus::Signal { signal, .. } => format!("died on signal {signal}"),
            }
        ));
        for slot in c.slots.into_iter().chain(c.killing) {
            self.pending.push(Event::BackfillExited { slot });
        }
        for (slot, program) in c.waiting {
            self.start_backfill(slot, Some(program), now);
        }
    }

    /// One poll: the readings now, through the engine's policy.
    pub fn poll(&mut self, now: i64) {
        self.watch_backfill(now);
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
        // The backfill client's load is the execute point's, not the
        // owner's (else EVICT_BACKFILL on CPU load would evict it for its
        // own work): counted on the first slot it works for.
        let backfill_slot = self
            .backfill
            .as_ref()
            .and_then(|c| c.slots.first().or(c.killing.first()).cloned());
        let pids: Vec<Vec<u32>> = self
            .startd
            .slots()
            .iter()
            .map(|s| {
                let job = self.runs.get(&s.name).and_then(|r| r.process.as_deref());
                let backfill = self
                    .backfill
                    .as_ref()
                    .filter(|_| backfill_slot.as_deref() == Some(s.name.as_str()))
                    .map(|c| &c.process);
                job.or(backfill)
                    .map(|p| p.tree_pids().into_iter().map(|p| p as u32).collect())
                    .unwrap_or_default()
            })
            .collect();
        let readings = match self.sampler.sample(SystemTime::now(), &pids) {
            Ok(r) => r,
            Err(e) => {
                // The policy keeps its last readings; the timers still run.
                self.notes.push(format!("readings: {e}"));
                self.startd.readings().clone()
            }
        };
        let readings = crate::kbdd::with_x_event(readings, self.last_x_event, now);
        let ready = self.startd.tick(now, readings);
        self.absorb(ready, now);
        self.drive(now);
        self.publish_slots(now);
        self.ask_vm_peers(now);
    }

    /// What FILETRANSFER_PLUGINS answered when asked for the `asked`th
    /// time (an answer to an earlier reconfig than the last is dropped),
    /// with what went wrong asking them; the slots advertise it at once.
    pub fn plugins_heard(&mut self, asked: u64, methods: String, notes: Vec<String>, now: i64) {
        if asked != self.plugins_asked {
            return;
        }
        self.notes.extend(notes);
        self.startd.set_file_transfer_methods(Some(methods));
        self.publish_slots(now);
    }

    /// Asks the collector for the VM-host peers' ads, unless a query is
    /// already out. At every poll, not every UPDATE_INTERVAL: the peers
    /// publish their ads at each of their polls, and an override that
    /// came minutes late would let the host and its inner machine start
    /// jobs together for minutes (the one thing the manual's override is
    /// for). The query is a few ads, picked by the collector.
    fn ask_vm_peers(&mut self, now: i64) {
        let Some(q) = &mut self.vm_peers else {
            return;
        };
        if q.asked_at.is_some_and(|t| now - t < PEER_QUERY_LOST) {
            return;
        }
        q.asked_at = Some(now);
        self.work.push(Work::QueryPeers {
            constraint: q.peers.constraint().clone(),
        });
    }

    /// The collector's answer about the VM-host peers: their ads, or why
    /// they could not be had. Peers that are not known override nothing
    /// and give no HOST_ attributes (a START that reads them is then not
    /// true, so an inner machine that cannot see its host starts nothing
    /// that depends on the host being idle).
    pub fn peers_heard(&mut self, answer: Result<Vec<ClassAd>, String>, now: i64) {
        let Some(q) = &mut self.vm_peers else {
            return;
        };
        q.asked_at = None;
        let view = match answer {
            Ok(ads) => {
                if q.failing.take().is_some() {
                    self.notes
                        .push("VMP: the collector answers again about the VM-host peers".into());
                }
                q.peers.assess(&ads, now)
            }
            Err(why) => {
                if q.failing.as_deref() != Some(why.as_str()) {
                    self.notes.push(format!(
                        "VMP: the VM-host peers' ads could not be had ({why}); until they \
                         are, START is not overridden and no HOST_ attributes are published"
                    ));
                    q.failing = Some(why);
                }
                startd::vm_host::PeerView::default()
            }
        };
        let before = self.startd.vm_peers().start_override.clone();
        match (&before, &view.start_override) {
            (None, Some(why)) => self
                .notes
                .push(format!("VMP: START is overridden False: {why}")),
            (Some(_), None) => self
                .notes
                .push("VMP: START is no longer overridden: no VM-host peer runs a job".into()),
            _ => {}
        }
        if self.startd.set_vm_peers(view) {
            // The negotiator sees the new Start at once, not a poll later.
            self.publish_slots(now);
        }
    }

    /// The keyboard daemon says the keyboard or mouse was used now
    /// (X_EVENT_NOTIFICATION): the next poll's KeyboardIdle and
    /// ConsoleIdle count from here.
    pub fn x_event(&mut self, now: i64) {
        self.last_x_event = Some(now);
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
        // machine came up) is offered to waiting jobs at once: its ad goes
        // to the collector, then the negotiator is asked for a cycle.
        if ready.transitions.iter().any(|t| t.to.0 == State::Unclaimed) {
            self.publish_slots(now);
            self.messages
                .push((RoleName::Negotiator.into(), Message::Reschedule));
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
                Action::SuspendJob { slot } => self.suspend(&slot),
                Action::ContinueJob { slot } => self.resume(&slot),
                Action::VacateJob { slot } => self.signal(&slot, false),
                Action::KillJob { slot } | Action::KillStarterTree { slot } => {
                    self.signal(&slot, true)
                }
                // What became of a claim goes to its schedd.
                a @ (Action::ClaimGranted { .. }
                | Action::ClaimRefused { .. }
                | Action::ClaimIdle { .. }
                | Action::ActivationRefused { .. }
                | Action::ClaimEnded { .. }) => {
                    let to = match claim_of(&a) {
                        Some((claim_id, schedd, over)) => {
                            if over {
                                self.claim_schedds.remove(claim_id);
                                self.last_reports.remove(claim_id);
                            } else {
                                self.claim_schedds
                                    .insert(claim_id.to_string(), schedd.to_string());
                            }
                            Dest::named(RoleName::Schedd, schedd)
                        }
                        None => Dest::role(RoleName::Schedd),
                    };
                    self.messages.push((to, Message::ClaimNews(a)));
                }
                // The answer to a keep-alive; a job's last report the
                // schedd may not have had goes again first (it was away).
                Action::ClaimAlive {
                    claim_id,
                    schedd,
                    alive,
                } => {
                    let to = if schedd.is_empty() {
                        self.schedd_of(&claim_id)
                    } else {
                        Dest::named(RoleName::Schedd, &schedd)
                    };
                    if let Some(last) = self.last_reports.get(&claim_id) {
                        self.messages
                            .push((to.clone(), Message::Starter(last.clone())));
                    }
                    let answer = Action::ClaimAlive {
                        claim_id,
                        schedd,
                        alive,
                    };
                    self.messages.push((to, Message::ClaimNews(answer)));
                }
                Action::Refused(r) => self.notes.push(format!("startd refused: {r}")),
                Action::RunBenchmarks { slot } => {
                    // The machine's figures, measured once: every slot asks,
                    // and the loops hold the pool up while they run.
                    let (mips, kflops) = *self.benchmarks.get_or_insert_with(benchmarks);
                    self.pending
                        .push(Event::BenchmarksDone { slot, mips, kflops });
                }
                Action::StartBackfill { slot, program } => self.start_backfill(slot, program, now),
                Action::KillBackfill { slot } => self.kill_backfill(slot, now),
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
        let mut settings = self.starter_settings(slot, &job, nice, now);
        // A schedd of another process (another host) is where the job's
        // files are: the starter fetches and sends them through it.
        if let (Some(shadows), Some(schedd)) = (&self.shadows, self.claim_schedds.get(claim_id)) {
            let id = |n: &str| match job.eval_attr(n, &classad::Env::default()) {
                classad::Value::Int(i) => Some(i),
                _ => None,
            };
            if let (Some(cluster), Some(proc)) = (id("ClusterId"), id("ProcId")) {
                settings.shadow = shadows(schedd, claim_id, schedd::JobId::new(cluster, proc));
            }
        }
        // A group no other run holds (a run keeps its group until it has
        // ended and nothing of it is left).
        if let Some(t) = &self.tracking {
            let in_use: BTreeSet<u32> = self.runs.values().filter_map(|r| r.tracking_gid).collect();
            match t.next_free(&in_use) {
                Ok(gid) => settings.tracking_gid = Some(gid),
                Err(why) => return self.start_failed(slot, claim_id, StartError::Tracking(why)),
            }
        }
        let tracking_gid = settings.tracking_gid;
        let spec = match JobSpec::new(job, settings) {
            Ok(spec) => spec,
            Err(e) => return self.start_failed(slot, claim_id, e),
        };
        self.run_seq += 1;
        let run = self.run_seq;
        self.runs.insert(
            slot.to_string(),
            Run {
                id: run,
                claim_id: claim_id.to_string(),
                schedd: self.claim_schedds.get(claim_id).cloned(),
                process: None,
                starting: true,
                deferred: Vec::new(),
                kind: ExitKind::Exit,
                evicted_because: None,
                tracking_gid,
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
                self.start_failed(slot, &r.claim_id, e);
                self.drive(now);
                return;
            }
        };
        // A limit the configuration asks for but this machine cannot set
        // (no memory controller where job cgroups go) is the admin's to
        // know: the job runs without it.
        let m = process.mechanisms();
        let unset: Vec<String> = [
            ("memory.max", &m.memory_limit),
            ("memory.high", &m.memory_high),
            ("memory.swap.max", &m.swap_limit),
            ("cpu.weight", &m.cpu_weight),
        ]
        .into_iter()
        .filter_map(|(file, l)| match l {
            starter::Limit::Unavailable(why) => Some(format!("{file}: {why}")),
            _ => None,
        })
        .chain(m.memory_ignored.iter().cloned())
        .collect();
        let unset = unset.join("; ");
        if !unset.is_empty() && self.unset_limits.insert(unset.clone()) {
            self.notes.push(format!(
                "jobs run without some of their limits (said once): {unset}"
            ));
        }
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
        // The execute event and StartdIpAddr name where the startd
        // listens (HTCondor's `<ip:port>`), which a restarted access point
        // reconnects to.
        let report = StarterReport::Started {
            claim_id,
            host: self
                .address
                .clone()
                .unwrap_or_else(|| self.hostname.clone()),
            slot: self.slot_label(slot),
        };
        self.report(report);
        for c in deferred {
            match c {
                Control::Suspend => self.suspend(slot),
                Control::Resume => self.resume(slot),
                Control::SoftKill => self.signal(slot, false),
                Control::HardKill => self.signal(slot, true),
            }
        }
        self.drive(now);
    }

    /// The job could not be started: the startd hears its starter is
    /// gone, and the claim's schedd why (it holds the job with HTCondor's
    /// hold code and gives the claim back).
    fn start_failed(&mut self, slot: &str, claim_id: &str, e: StartError) {
        let reason = format!("Error from {}: {e}", self.slot_label(slot));
        self.notes.push(reason.clone());
        self.pending.push(Event::StarterExited {
            slot: slot.to_string(),
        });
        let report = StarterReport::StartFailed {
            claim_id: claim_id.to_string(),
            reason,
            failure: start_failure(&e),
            subcode: match &e {
                StartError::Input { subcode, .. } => *subcode,
                _ => 0,
            },
        };
        self.report(report);
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

    fn suspend(&mut self, slot: &str) {
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
        self.report(StarterReport::Suspended { claim_id, num_pids });
    }

    fn resume(&mut self, slot: &str) {
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
        self.report(StarterReport::Unsuspended { claim_id });
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
            // As HTCondor's shadow counts them: what the job sent is its
            // output, what it received its input.
            bytes_sent: report.bytes_sent as f64,
            bytes_received: report.bytes_received as f64,
        };
        // Output that could not go back holds the job, as HTCondor's
        // TransferOutputError (12) does, with the errno as subcode.
        let output_failed = report.problems.iter().find_map(|p| match p {
            FinishProblem::Output { source, .. } => {
                Some((p.to_string(), i64::from(source.raw_os_error().unwrap_or(0))))
            }
            FinishProblem::MissingOutput { .. } => Some((p.to_string(), 2)),
            // A failed upload to a URL: the plugin's subcode, as HTCondor's.
            FinishProblem::UrlOutput { subcode, .. } => Some((p.to_string(), *subcode)),
            _ => None,
        });
        if let Some(oom) = &report.oom {
            self.notes.push(format!(
                "{}: the kernel killed the job for memory: {}",
                self.slot_label(slot),
                oom.reason()
            ));
        }
        let end = match (r.kind, &report.oom, output_failed) {
            // As HTCondor's starter: an OOM kill holds the job before its
            // output is considered (the starter's hold ends the run).
            (ExitKind::Exit, Some(OomVerdict::Hold { reason }), _) => RunEnd::OutOfMemory {
                reason: format!("Error from {}: {reason}", self.slot_label(slot)),
            },
            (ExitKind::Exit, Some(OomVerdict::Evict { reason }), _) => RunEnd::Evicted {
                reason: Some(format!("Error from {}: {reason}", self.slot_label(slot))),
            },
            (ExitKind::Exit, None, Some((why, subcode))) => RunEnd::OutputFailed {
                reason: format!(
                    "Error from {}: failed to transfer output: {why}",
                    self.slot_label(slot)
                ),
                subcode,
            },
            (ExitKind::Exit, None, None) => RunEnd::Exited(match report.status {
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
        // The claim may be over by now (released as the job was evicted):
        // the run remembers its schedd.
        let to = match &r.schedd {
            Some(name) => Dest::named(RoleName::Schedd, name),
            None => self.schedd_of(&r.claim_id),
        };
        let ended = StarterReport::Ended {
            claim_id: r.claim_id.clone(),
            end,
            report: usage,
        };
        // (Kept only while the claim lasts: one that ended first, as an
        // eviction's does, has nobody to ask for it again.)
        if self.claim_schedds.contains_key(&r.claim_id) {
            self.last_reports.insert(r.claim_id, ended.clone());
        }
        self.messages.push((to, Message::Starter(ended)));
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

    /// Kills every job still running (the pool is going down); their jobs
    /// run again when it comes back.
    /// The startd is going down: its slots' ads are withdrawn from the
    /// collector (INVALIDATE_STARTD_ADS, as HTCondor's startd sends at
    /// shutdown), so that no match is made to them meanwhile.
    pub fn withdraw(&mut self, out: &mut Outbox) {
        let names: Vec<String> = std::mem::take(&mut self.published).into_iter().collect();
        if !names.is_empty() {
            out.send(
                RoleName::Collector,
                Message::InvalidateAds {
                    kind: AdType::Startd,
                    names,
                },
            );
        }
    }

    pub fn kill_all(&mut self) {
        if let Some(mut c) = self.backfill.take() {
            let _ = c.process.hard_kill();
            let _ = c.process.wait();
        }
        for (slot, r) in self.runs.iter_mut() {
            if let Some(p) = r.process.as_mut() {
                let _ = p.hard_kill();
                let _ = p.wait();
            }
            forget_running(&self.running_dir, slot);
        }
    }
}

/// The claim an action about a claim is for: its id, its schedd, and
/// whether the claim is over with it.
fn claim_of(a: &Action) -> Option<(&str, &str, bool)> {
    match a {
        Action::ClaimGranted {
            claim_id, schedd, ..
        }
        | Action::ClaimIdle {
            claim_id, schedd, ..
        }
        | Action::ActivationRefused {
            claim_id, schedd, ..
        } => Some((claim_id, schedd, false)),
        Action::ClaimRefused {
            claim_id, schedd, ..
        }
        | Action::ClaimEnded {
            claim_id, schedd, ..
        } => Some((claim_id, schedd, true)),
        _ => None,
    }
}

impl Role for StartdRole {
    const NAME: RoleName = RoleName::Startd;

    fn receive(&mut self, from: RoleName, msg: Message, now: i64, out: &mut Outbox) {
        match msg {
            // The negotiator matched one of the slots (MATCH_INFO).
            Message::MatchInfo { slot } => self.pending.push(Event::Matched { slot }),
            // A schedd's claim request, activation, keep-alive, release.
            Message::Startd(ev) => {
                // A new job on the claim: the schedd had the last one's
                // report.
                if let Event::Activate { claim_id, .. } = &ev {
                    self.last_reports.remove(claim_id);
                }
                self.pending.push(ev);
            }
            // The schedd stops a job it held or removed: its starter ends
            // it that way (the startd evicts it as the claim is released).
            Message::StopJob { claim_id, stop } => {
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
            Message::Admin {
                id,
                request: AdminRequest::Startd { command },
            } => {
                let answer = self
                    .startd_command(command, now)
                    .map_err(|e| (e.status, e.message));
                out.answer(from, id, answer);
            }
            other => out.unexpected(Self::NAME, from, other),
        }
        self.drive(now);
        self.flush(out);
    }

    fn timers(&self) -> Vec<(u64, bool)> {
        // The first poll at once: the slots are Unclaimed (or Owner) from
        // the start, not after POLLING_INTERVAL.
        vec![(self.poll_interval, true)]
    }

    fn timer(&mut self, _which: usize, now: i64, out: &mut Outbox) {
        self.poll(now);
        self.flush(out);
    }
}
