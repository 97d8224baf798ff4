//! Starting, controlling, measuring and finishing one job.

use std::collections::BTreeMap;
use std::fs;
use std::io::{self, Read};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use classad::{ClassAd, Value};

use crate::cgroup::{self, Cgroup, Limit};
use crate::error::{ControlError, FinishProblem, StartError};
use crate::hooks::{self, HookRun};
use crate::limits::{self, OomVerdict};
use crate::procs::{self, User};
use crate::sandbox;
use crate::spec::{JobSpec, Launch, RunAs, StarterSettings};
use crate::transfer::{self, InputRequest, OutputRequest};
use crate::user_priv;

/// How the job's whole process tree is suspended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SuspendMechanism {
    /// `cgroup.freeze` of the job's cgroup.
    CgroupFreezer,
    /// SIGSTOP and SIGCONT to the job's process group and session.
    Signals,
}

/// How the job's whole process tree is killed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KillMechanism {
    /// `cgroup.kill`, and signals to every process in the cgroup.
    Cgroup,
    /// Signals to the process group and to every process of the session.
    ProcessGroup,
}

/// Which operating-system mechanisms this job got, and why not the others.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mechanisms {
    /// The job's cgroup, or why it has none.
    pub cgroup: Result<PathBuf, String>,
    pub suspend: SuspendMechanism,
    pub kill: KillMechanism,
    /// `memory.max`: the hard limit of CGROUP_MEMORY_LIMIT_POLICY.
    pub memory_limit: Limit,
    /// `memory.high`: the soft limit.
    pub memory_high: Limit,
    /// `memory.swap.max` (0 under DISABLE_SWAP_FOR_JOB with a hard limit).
    pub swap_limit: Limit,
    /// Custom limit expressions that gave no number, so set no limit.
    pub memory_ignored: Vec<String>,
    /// `cpu.weight` from RequestCpus.
    pub cpu_weight: Limit,
    /// The user the job runs as; `None`: the starter's own.
    pub user: Option<User>,
    /// USE_PID_NAMESPACES: `None` when not asked for; `Some(Ok(()))` when
    /// the job runs in a PID namespace of its own; `Some(Err(why))` when
    /// it was asked for and the job runs without (as HTCondor's starter,
    /// which gives one only when it is root).
    pub pid_namespace: Option<Result<(), String>>,
    /// USE_GID_PROCESS_TRACKING: the supplementary group that marks every
    /// process of the job.
    pub tracking_gid: Option<u32>,
}

/// What the starter can do on this machine, for a daemon's log and for
/// people: a job started with these settings would get this.
#[derive(Clone, Debug)]
pub struct Probe {
    pub running_as_root: bool,
    /// Where job cgroups would go (a child was made and removed there), or
    /// why there would be none.
    pub cgroup_parent: Result<PathBuf, String>,
    /// Controllers the parent offers (`cgroup.controllers`).
    pub controllers: Vec<String>,
    pub freezer: bool,
    pub cgroup_kill: bool,
}

/// How the job's main process ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitStatus {
    Code(i32),
    Signal { signal: i32, core_dumped: bool },
}

/// Why the job ended, as JOB_EXIT's argument says it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitKind {
    /// On its own.
    Exit,
    /// Vacated or killed by the execute point.
    Evict,
    /// Removed by its owner.
    Remove,
    /// Put on hold.
    Hold,
}

impl ExitKind {
    pub fn hook_argument(self) -> &'static str {
        match self {
            ExitKind::Exit => "exit",
            ExitKind::Evict => "evict",
            ExitKind::Remove => "remove",
            ExitKind::Hold => "hold",
        }
    }
}

/// Resources used by the job's process tree.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Usage {
    /// RemoteUserCpu and RemoteSysCpu, seconds.
    pub user_cpu: f64,
    pub sys_cpu: f64,
    /// The largest resident set seen for the whole tree, KiB (ImageSize,
    /// ResidentSetSize; MemoryUsage is this in MiB, rounded up).
    pub peak_rss_kib: u64,
    /// Processes in the tree now (NumPids).
    pub num_pids: usize,
}

/// The job's end, written into its ad by [`RunningJob::finish`].
#[derive(Debug)]
pub struct ExitReport {
    /// The job ad with the exit and usage attributes set.
    pub job: ClassAd,
    pub status: ExitStatus,
    pub kind: ExitKind,
    pub usage: Usage,
    /// JobDuration: from the start to the main process's exit.
    pub duration: Duration,
    pub mechanisms: Mechanisms,
    /// What went wrong after the exit (output transfer, clean-up, hooks);
    /// empty when all went well.
    pub problems: Vec<FinishProblem>,
    /// The kernel killed the job for memory (its cgroup's `memory.events`
    /// counts an OOM kill), and what follows: HTCondor's hold or, for the
    /// victim of a full machine, an eviction.
    pub oom: Option<OomVerdict>,
    /// Bytes file transfer moved: in to the job (its executable and input
    /// files: HTCondor's "Bytes Received By Job") and back from it (its
    /// output files and streams: "Bytes Sent By Job").
    pub bytes_received: u64,
    pub bytes_sent: u64,
}

/// Starts jobs. Stateless: each job carries its own settings.
pub struct Starter;

/// A job that was started: its main process is (or was) our child.
pub struct RunningJob {
    pid: i32,
    pidfd: Option<OwnedFd>,
    job: ClassAd,
    settings: StarterSettings,
    launch: Launch,
    sandbox: PathBuf,
    cgroup: Option<Cgroup>,
    mechanisms: Mechanisms,
    started: Instant,
    start_date: i64,
    suspended: bool,
    kind: ExitKind,
    exit: Option<Reaped>,
    peak_rss_kib: u64,
    /// The job's memory as HTCondor counts it for an OOM hold.
    job_memory_mib: Option<u64>,
    last_sample: Option<Instant>,
    next_update: Option<Instant>,
    update_hooks: Vec<HookRun>,
    input_snapshot: transfer::Snapshot,
    /// Bytes transferred in (executable and input files).
    bytes_received: u64,
    /// The job's PID namespace, when it has one (`pid` is then its init).
    pid_ns: Option<PidNs>,
    /// The job's tracking group (USE_GID_PROCESS_TRACKING).
    tracking_gid: Option<u32>,
}

/// What the starter keeps of a job's PID namespace.
struct PidNs {
    /// Where the init writes the job's wait status before it exits (the
    /// init's own exit cannot carry a signal: a namespace's init cannot
    /// be killed by a signal it sends itself).
    status: OwnedFd,
    /// `/proc/<init>/ns/pid` as the starter reads it: every process whose
    /// link reads the same is the job's, whatever its session.
    link: Option<std::ffi::OsString>,
}

#[derive(Clone, Copy, Debug)]
struct Reaped {
    status: ExitStatus,
    at: Instant,
    user_cpu: f64,
    sys_cpu: f64,
}

fn epoch_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

fn io_err<'a>(what: &'static str, path: &'a Path) -> impl FnOnce(io::Error) -> StartError + 'a {
    move |source| StartError::Io {
        what,
        path: path.to_path_buf(),
        source,
    }
}

/// The steps of the child's set-up, as reported through the step pipe.
const STEPS: [&str; 10] = [
    "joining the job's cgroup",
    "setsid",
    "renice",
    "changing to the job's user",
    "changing to the job's directory",
    "opening standard input",
    "opening standard output",
    "opening standard error",
    "exec",
    "mounting /proc in the job's PID namespace",
];

/// The step index of the PID namespace's `/proc` mount.
const STEP_PROC_MOUNT: u8 = 9;

impl Starter {
    /// What the starter can use here under `policy`: makes and removes a
    /// probe cgroup.
    pub fn probe(policy: &crate::CgroupPolicy) -> Probe {
        let running_as_root = procs::effective_uid() == 0;
        let parent = cgroup::parent(policy);
        let (mut freezer, mut cgroup_kill, mut controllers) = (false, false, Vec::new());
        let cgroup_parent = parent.and_then(|p| {
            let cg = Cgroup::create(&p, &format!("ferrocondor_probe_{}", sandbox::fresh_name()))?;
            freezer = cg.has("cgroup.freeze");
            cgroup_kill = cg.has("cgroup.kill");
            let _ = cg.remove();
            controllers = fs::read_to_string(p.join("cgroup.controllers"))
                .unwrap_or_default()
                .split_whitespace()
                .map(str::to_string)
                .collect();
            Ok(p)
        });
        Probe {
            running_as_root,
            cgroup_parent,
            controllers,
            freezer,
            cgroup_kill,
        }
    }

    /// Makes the sandbox, runs PREPARE_JOB, transfers the input, and starts
    /// the job. On an error nothing is left running and the sandbox is gone
    /// (unless the settings keep it).
    pub fn start(spec: JobSpec) -> Result<RunningJob, StartError> {
        let JobSpec { mut job, settings } = spec;
        Launch::from_ad(&job, settings.file_system_domain.as_deref())?;
        let sandbox = settings.execute_dir.join(sandbox::fresh_name());
        sandbox::create(&sandbox).map_err(io_err("create the sandbox", &sandbox))?;
        let mut cg = None;
        let result = Self::start_in(&mut job, &settings, &sandbox, &mut cg);
        match result {
            Ok(r) => Ok(r),
            Err(e) => {
                if let Some(cg) = cg {
                    let _ = cg.write("cgroup.kill", "1");
                    let _ = cg.remove();
                }
                if !settings.keep_sandbox {
                    let _ = sandbox::remove(&sandbox);
                }
                Err(e)
            }
        }
    }

    fn start_in(
        job: &mut ClassAd,
        settings: &StarterSettings,
        sandbox: &Path,
        cg_slot: &mut Option<Cgroup>,
    ) -> Result<RunningJob, StartError> {
        // Whom the job runs as: its sandbox, its hooks and its files are
        // that user's.
        let first = Launch::from_ad(job, settings.file_system_domain.as_deref())?;
        let user = match (&settings.run_as, procs::effective_uid()) {
            (RunAs::JobOwner, 0) => {
                let name = first.owner.clone().ok_or_else(|| StartError::RunAs {
                    user: String::new(),
                    reason: "the job ad has no Owner".into(),
                })?;
                let user = procs::lookup_user(&name).map_err(|reason| StartError::RunAs {
                    user: name.clone(),
                    reason,
                })?;
                if user.uid == 0 {
                    return Err(StartError::RunAs {
                        user: name,
                        reason: "jobs are never run as root".into(),
                    });
                }
                Some(user)
            }
            _ => None,
        };
        let owner_ids = user.as_ref().map(|u| (u.uid, u.gid));
        sandbox::give_to(sandbox, owner_ids).map_err(io_err("give to the job's user", sandbox))?;
        // PREPARE_JOB, as the job's user: it may set the job up and change
        // its ad (but not whose job it is).
        if let Some(hook) = &settings.hooks.prepare_job {
            let fail = |reason: String| StartError::Hook {
                hook: "PREPARE_JOB",
                path: hook.clone(),
                reason,
            };
            let mut ads = vec![&*job];
            if let Some(slot) = &settings.slot_ad {
                ads.push(slot);
            }
            let out = HookRun::start(
                hook,
                &[],
                sandbox,
                hooks::hook_input(&ads),
                true,
                user.as_ref(),
            )
            .and_then(|run| run.wait(settings.hooks.timeout))
            .map_err(fail)?;
            if !out.status.success() {
                return Err(fail(hooks::describe_failure(&out)));
            }
            hooks::merge_output(job, &out.stdout).map_err(fail)?;
        }
        let launch = Launch::from_ad(job, settings.file_system_domain.as_deref())?;
        if user.is_some() && launch.owner != first.owner {
            return Err(StartError::RunAs {
                user: launch.owner.unwrap_or_default(),
                reason: "PREPARE_JOB may not change the job's Owner".into(),
            });
        }

        // Files: everything in the sandbox is written, and every file the
        // job named is read, as the job's user.
        if let (Some(url), false) = (output_url(job), settings.enable_url_transfers) {
            return Err(StartError::UrlOutput(crate::url_plugin::shown(&url)));
        }
        let planned = launch.inputs(false);
        let urls = planned.urls.clone();
        if let (Some(url), false) = (urls.first(), settings.enable_url_transfers) {
            return Err(StartError::UrlInput(crate::url_plugin::shown(url)));
        }
        // From the job's access point on another host, or copied here.
        let remote = settings.shadow.as_ref().filter(|_| launch.transfer);
        let inputs = if remote.is_some() {
            Vec::new()
        } else {
            planned.inputs.clone()
        };
        let mut ads = vec![(
            transfer::JOB_AD.to_string(),
            classad::unparse::ad_to_old_syntax(job),
        )];
        if let Some(slot) = &settings.slot_ad {
            ads.push((
                transfer::MACHINE_AD.to_string(),
                classad::unparse::ad_to_old_syntax(slot),
            ));
        }
        // The files from the job's access point first: the snapshot the
        // local step takes then counts them as input.
        let mut remote_bytes = 0;
        if let Some(shadow) = remote {
            let mut sink =
                crate::remote::Sink::new(user.as_ref(), sandbox, settings.transfer_deadline);
            remote_bytes = shadow
                .0
                .fetch_input(&mut sink)
                .map_err(|why| StartError::Input {
                    path: PathBuf::from("the job's input at its access point"),
                    source: io::Error::other(why),
                    subcode: 0,
                })?;
        }
        let copy_executable = launch.transfer && launch.transfer_executable;
        let (input_snapshot, bytes_received) = user_priv::input(
            user.as_ref(),
            InputRequest {
                sandbox: sandbox.to_path_buf(),
                iwd: launch.iwd.clone(),
                executable: planned.executable.clone().filter(|_| remote.is_none()),
                inputs,
                ads,
                urls,
                plugins: settings.filetransfer_plugins.clone(),
                // The plugins are killed a little before the helper that
                // runs them, so none outlives it.
                plugin_deadline: settings
                    .transfer_deadline
                    .saturating_sub((settings.transfer_deadline / 10).min(Duration::from_secs(5))),
                // An http(s) input may bring at most the slot's disk.
                url_max_bytes: settings.slot_ad.as_ref().and_then(|slot| {
                    match slot.eval_attr("Disk", &classad::Env::default()) {
                        Value::Int(kib) if kib > 0 => Some((kib as u64).saturating_mul(1024)),
                        _ => None,
                    }
                }),
            },
            settings.transfer_deadline,
        )
        .map_err(|f| StartError::Input {
            path: f.path.clone(),
            source: io::Error::new(f.to_io_error().kind(), f.message.clone()),
            subcode: f.subcode.or(f.errno.map(i64::from)).unwrap_or(0),
        })?;
        let bytes_received = bytes_received + remote_bytes;
        let program = if copy_executable {
            sandbox.join(transfer::EXECUTABLE)
        } else {
            transfer::resolve(&launch.iwd, &launch.cmd)
        };
        let run_dir = if launch.transfer {
            sandbox.to_path_buf()
        } else {
            launch.iwd.clone()
        };
        // The standard streams are opened by the job's own process, after
        // it has become the job's user.
        let stdin = launch.stdin.as_ref().map(|n| {
            if launch.transfer {
                sandbox.join(Path::new(n).file_name().unwrap_or_default())
            } else {
                transfer::resolve(&launch.iwd, n)
            }
        });
        let in_sandbox = |name: &Option<String>, file: &str| {
            name.as_ref().map(|n| {
                if launch.transfer {
                    sandbox.join(file)
                } else {
                    transfer::resolve(&launch.iwd, n)
                }
            })
        };
        let stdout = in_sandbox(&launch.stdout, transfer::STDOUT);
        let stderr = in_sandbox(&launch.stderr, transfer::STDERR);
        let job_ad_path = sandbox.join(transfer::JOB_AD);
        let machine_ad_path = sandbox.join(transfer::MACHINE_AD);

        // The environment: HTCondor's own variables, the job's on top,
        // then the ones only the starter may set.
        let mut env: BTreeMap<String, String> = BTreeMap::new();
        let scratch = sandbox.display().to_string();
        let cpus = launch.request_cpus.unwrap_or(1).to_string();
        for name in [
            "OMP_NUM_THREADS",
            "MKL_NUM_THREADS",
            "OPENBLAS_NUM_THREADS",
            "GOMAXPROCS",
            "JULIA_NUM_THREADS",
            "NUMEXPR_NUM_THREADS",
            "TF_NUM_THREADS",
        ] {
            env.insert(name.into(), cpus.clone());
        }
        for name in ["TMPDIR", "TMP", "TEMP"] {
            env.insert(name.into(), scratch.clone());
        }
        env.insert("BATCH_SYSTEM".into(), "HTCondor".into());
        env.extend(launch.env.iter().cloned());
        env.insert("_CONDOR_SCRATCH_DIR".into(), scratch.clone());
        env.insert("_CONDOR_SLOT".into(), settings.slot_name.clone());
        // A parallel job's node learns which it is and how many there
        // are, as HTCondor's starter tells it.
        if let Some((node, nodes)) = launch.parallel_node {
            env.insert("_CONDOR_PROCNO".into(), node.to_string());
            env.insert("_CONDOR_NPROCS".into(), nodes.to_string());
        }
        env.insert("_CONDOR_JOB_IWD".into(), run_dir.display().to_string());
        env.insert("_CONDOR_JOB_AD".into(), job_ad_path.display().to_string());
        if settings.slot_ad.is_some() {
            env.insert(
                "_CONDOR_MACHINE_AD".into(),
                machine_ad_path.display().to_string(),
            );
        }

        // The cgroup.
        let mut cgroup_use = cgroup::parent(&settings.cgroup).and_then(|parent| {
            let name = format!(
                "ferrocondor_{}",
                sandbox.file_name().unwrap_or_default().to_string_lossy()
            );
            Cgroup::create(&parent, &name)
        });
        let memory = limits::memory_limits(&settings.memory, settings.slot_ad.as_ref(), job);
        let (mut memory_limit, mut memory_high, mut swap_limit, mut cpu_weight) = (
            Limit::NotRequested,
            Limit::NotRequested,
            Limit::NotRequested,
            Limit::NotRequested,
        );
        if let Ok(cg) = &cgroup_use {
            if let Some(bytes) = memory.max {
                memory_limit = cg.limit("memory", "memory.max", bytes.to_string());
            }
            if let Some(bytes) = memory.high {
                memory_high = cg.limit("memory", "memory.high", bytes.to_string());
            }
            if let Some(bytes) = memory.swap_max {
                // Only where the kernel accounts swap (and the limit above
                // took, which enabled the controller).
                swap_limit = if !matches!(memory_limit, Limit::Applied { .. }) {
                    Limit::Unavailable("no memory.max to go with it".into())
                } else if cg.has("memory.swap.max") {
                    cg.limit("memory", "memory.swap.max", bytes.to_string())
                } else {
                    Limit::Unavailable("the kernel does not account swap here".into())
                };
            }
            // As HTCondor: the OOM killer takes the whole job, not one of
            // its processes, so the job is never left half-killed.
            if cg.has("memory.oom.group") {
                let _ = cg.write("memory.oom.group", "1");
            }
            if let Some(cpus) = launch.request_cpus {
                cpu_weight = cg.limit(
                    "cpu",
                    "cpu.weight",
                    (cpus * 100).clamp(1, 10000).to_string(),
                );
            }
        } else if let Err(why) = &cgroup_use {
            let no = || Limit::Unavailable(format!("no cgroup: {why}"));
            if memory.max.is_some() {
                memory_limit = no();
            }
            if memory.high.is_some() {
                memory_high = no();
            }
            if memory.swap_max.is_some() {
                swap_limit = no();
            }
            if launch.request_cpus.is_some() {
                cpu_weight = no();
            }
        }
        let procs_file = match &cgroup_use {
            Ok(cg) => {
                let p = cg.path.join("cgroup.procs");
                match fs::OpenOptions::new().write(true).open(&p) {
                    Ok(f) => Some(f),
                    Err(e) => {
                        let _ = cg.remove();
                        cgroup_use = Err(format!("cannot open `{}`: {e}", p.display()));
                        None
                    }
                }
            }
            Err(_) => None,
        };
        let cg = cgroup_use.as_ref().ok().map(|p| Cgroup {
            path: p.path.clone(),
        });
        let mechanisms = Mechanisms {
            cgroup: cgroup_use
                .as_ref()
                .map(|c| c.path.clone())
                .map_err(Clone::clone),
            suspend: match &cg {
                Some(c) if c.has("cgroup.freeze") => SuspendMechanism::CgroupFreezer,
                _ => SuspendMechanism::Signals,
            },
            kill: if cg.is_some() {
                KillMechanism::Cgroup
            } else {
                KillMechanism::ProcessGroup
            },
            memory_limit,
            memory_high,
            swap_limit,
            memory_ignored: memory.ignored.clone(),
            cpu_weight,
            user: user.clone(),
            pid_namespace: settings.pid_namespace.then(|| {
                if procs::effective_uid() == 0 {
                    Ok(())
                } else {
                    Err("USE_PID_NAMESPACES needs a starter running as root; \
                         the job runs in the execute point's PID namespace"
                        .to_string())
                }
            }),
            tracking_gid: settings.tracking_gid,
        };
        *cg_slot = cg;

        // The process.
        let (exe, args): (PathBuf, Vec<String>) = match &settings.user_job_wrapper {
            Some(w) => {
                let mut a = vec![program.display().to_string()];
                a.extend(launch.args.iter().cloned());
                (w.clone(), a)
            }
            None => (program.clone(), launch.args.clone()),
        };
        let setup = ChildSetup {
            procs_fd: procs_file.as_ref().map(|f| f.as_raw_fd()),
            nice: settings.nice_increment,
            user: user.as_ref().map(|u| {
                let mut groups = u.groups.clone();
                groups.extend(settings.tracking_gid);
                (u.uid, u.gid, groups)
            }),
            // Without a change of user, the starter's own groups and the
            // tracking group.
            groups: match (&user, settings.tracking_gid) {
                (None, Some(gid)) => {
                    let mut groups = procs::own_groups();
                    groups.push(gid);
                    Some(groups)
                }
                _ => None,
            },
            cwd: path_c(&run_dir)?,
            stdin: path_c(stdin.as_deref().unwrap_or(Path::new("/dev/null")))?,
            stdout: path_c(stdout.as_deref().unwrap_or(Path::new("/dev/null")))?,
            stderr: path_c(stderr.as_deref().unwrap_or(Path::new("/dev/null")))?,
            stderr_is_stdout: stdout.is_some() && stdout == stderr,
            pid_namespace: matches!(mechanisms.pid_namespace, Some(Ok(()))),
        };
        let (pid, ns_status) = spawn(&exe, &args, &env, setup)?;
        drop(procs_file);
        let pid_ns = ns_status.map(|status| PidNs {
            status,
            link: fs::read_link(format!("/proc/{pid}/ns/pid"))
                .ok()
                .map(PathBuf::into_os_string),
        });

        let pidfd = {
            // SAFETY: pidfd_open takes a pid and flags; the result is a new fd or -1.
            let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
            // SAFETY: a non-negative result is a file descriptor we own.
            (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd as i32) })
        };
        let now = Instant::now();
        let next_update = settings
            .hooks
            .update_job_info
            .as_ref()
            .map(|_| now + settings.initial_update_interval);
        Ok(RunningJob {
            pid,
            pidfd,
            job: job.clone(),
            settings: settings.clone(),
            launch,
            sandbox: sandbox.to_path_buf(),
            cgroup: cg_slot.as_ref().map(|c| Cgroup {
                path: c.path.clone(),
            }),
            mechanisms,
            started: now,
            start_date: epoch_now(),
            suspended: false,
            kind: ExitKind::Exit,
            exit: None,
            peak_rss_kib: 0,
            job_memory_mib: memory.job_memory_mib,
            last_sample: None,
            next_update,
            update_hooks: Vec::new(),
            input_snapshot,
            bytes_received,
            pid_ns,
            tracking_gid: settings.tracking_gid,
        })
    }
}

fn path_c(p: &Path) -> Result<std::ffi::CString, StartError> {
    use std::os::unix::ffi::OsStrExt;
    procs::cstring(p.as_os_str().as_bytes()).map_err(io_err("use", p))
}

/// What the child does between fork and exec. Everything is prepared
/// before the fork: the child only makes system calls.
struct ChildSetup {
    procs_fd: Option<i32>,
    nice: i32,
    user: Option<(u32, u32, Vec<libc::gid_t>)>,
    /// Supplementary groups to set without a change of user (the
    /// tracking group's).
    groups: Option<Vec<libc::gid_t>>,
    cwd: std::ffi::CString,
    stdin: std::ffi::CString,
    stdout: std::ffi::CString,
    stderr: std::ffi::CString,
    stderr_is_stdout: bool,
    /// Start the job under an init in a new PID (and mount) namespace.
    pid_namespace: bool,
}

fn spawn(
    exe: &Path,
    args: &[String],
    env: &BTreeMap<String, String>,
    setup: ChildSetup,
) -> Result<(i32, Option<OwnedFd>), StartError> {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    // Everything the child needs, made before it exists: it only makes
    // system calls.
    let exe_c = path_c(exe)?;
    let argv_c: Vec<CString> = std::iter::once(exe.as_os_str().as_bytes().to_vec())
        .chain(args.iter().map(|a| a.as_bytes().to_vec()))
        .map(|a| procs::cstring(&a).map_err(io_err("pass an argument to", exe)))
        .collect::<Result<_, _>>()?;
    let envp_c: Vec<CString> = env
        .iter()
        .map(|(k, v)| {
            procs::cstring(format!("{k}={v}").as_bytes())
                .map_err(io_err("pass the environment to", exe))
        })
        .collect::<Result<_, _>>()?;
    let argv: Vec<*const libc::c_char> = argv_c
        .iter()
        .map(|a| a.as_ptr())
        .chain(std::iter::once(std::ptr::null()))
        .collect();
    let envp: Vec<*const libc::c_char> = envp_c
        .iter()
        .map(|a| a.as_ptr())
        .chain(std::iter::once(std::ptr::null()))
        .collect();
    let mut tries = 0;
    loop {
        let (read_end, write_end) = pipe().map_err(io_err("make a pipe for", exe))?;
        let child = ChildArgs {
            setup: &setup,
            step_fd: write_end.as_raw_fd(),
            exe: exe_c.as_ptr(),
            argv: argv.as_ptr(),
            envp: envp.as_ptr(),
        };
        let (spawned, ns_status) = if setup.pid_namespace {
            let (status_read, status_write) = pipe().map_err(io_err("make a pipe for", exe))?;
            let spawned = fork_pid_namespace(&child, status_write.as_raw_fd());
            drop(status_write);
            (spawned, Some(status_read))
        } else {
            (clone_vfork(&child), None)
        };
        drop(write_end);
        let mut report = Vec::new();
        let _ = fs::File::from(read_end).read_to_end(&mut report);
        let pid = match spawned {
            Ok(pid) => pid,
            Err(source) => {
                return Err(StartError::Spawn {
                    program: exe.to_path_buf(),
                    step: if setup.pid_namespace {
                        "making the job's PID namespace (USE_PID_NAMESPACES)".into()
                    } else {
                        "fork".into()
                    },
                    source,
                });
            }
        };
        // The child's report: the steps it began, then, if one failed, a
        // marker and the errno. Only the close-on-exec of the pipe (a
        // successful exec) ends it without the marker. (Under a PID
        // namespace's init, the init's steps come first, then the job's.)
        let Some(at) = report.iter().position(|&b| b == FAILED) else {
            return Ok((pid, ns_status));
        };
        let errno = report
            .get(at + 1..at + 5)
            .and_then(|b| <[u8; 4]>::try_from(b).ok())
            .map_or(libc::EIO, i32::from_ne_bytes);
        // SAFETY: reaping our own child, which has exited.
        unsafe { libc::waitpid(pid, std::ptr::null_mut(), 0) };
        if errno == libc::ETXTBSY && tries < 20 {
            // Another thread may hold the freshly written executable open
            // for writing for a moment (fork before exec): try again.
            tries += 1;
            std::thread::sleep(Duration::from_millis(5));
            continue;
        }
        let step = report[..at]
            .last()
            .and_then(|&b| STEPS.get(b as usize))
            .unwrap_or(&"fork");
        let source = if errno == NOT_A_FILE && step.starts_with("opening standard") {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "it is not a regular file (a FIFO or a socket is refused)",
            )
        } else {
            io::Error::from_raw_os_error(errno)
        };
        return Err(StartError::Spawn {
            program: exe.to_path_buf(),
            step: step.to_string(),
            source,
        });
    }
}

/// The errno the child reports for a standard stream that is not a file.
const NOT_A_FILE: i32 = libc::EINVAL;

/// The byte that says a step of the child's set-up failed (the errno
/// follows).
const FAILED: u8 = 0xff;

/// What the child reads: all of it made before the child exists.
struct ChildArgs<'a> {
    setup: &'a ChildSetup,
    step_fd: i32,
    exe: *const libc::c_char,
    argv: *const *const libc::c_char,
    envp: *const *const libc::c_char,
}

/// Starts the child as `posix_spawn` does: `clone` with `CLONE_VM |
/// CLONE_VFORK`, so the parent's memory is shared, not copied (a fork of
/// a daemon with many threads copies its page tables and makes every CPU
/// flush for the copy-on-write; at hundreds of jobs a second that was the
/// largest cost), and the parent waits until the child has exec'd or
/// failed. The child runs on a stack of its own.
fn clone_vfork(child: &ChildArgs<'_>) -> io::Result<i32> {
    const STACK: usize = 256 * 1024;
    let mut stack = vec![0u8; STACK];
    // SAFETY: the stack is ours and outlives the child's use of it (the
    // parent is suspended until the child execs or exits); the argument
    // points to data that lives as long.
    let pid = unsafe {
        let top = stack.as_mut_ptr().add(STACK);
        let top = top.sub(top as usize % 16);
        libc::clone(
            child_main,
            top.cast(),
            libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
            (child as *const ChildArgs<'_>).cast_mut().cast(),
        )
    };
    drop(stack);
    if pid < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(pid)
    }
}

/// The child: its set-up, then exec; on failure the step's errno goes to
/// the parent and the child exits. Only system calls: it shares the
/// parent's memory.
extern "C" fn child_main(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the ChildArgs the parent passed, alive until we exec
    // or exit; every call below is a plain system call.
    unsafe {
        let a = &*(arg as *const ChildArgs<'_>);
        let fail = |errno: i32| -> ! {
            let mut msg = [FAILED, 0, 0, 0, 0];
            msg[1..].copy_from_slice(&errno.to_ne_bytes());
            libc::write(a.step_fd, msg.as_ptr().cast(), msg.len());
            libc::_exit(127)
        };
        // A job starts with no signal blocked and SIGPIPE at its default
        // (this process ignores SIGPIPE, and an ignored signal stays
        // ignored across exec).
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut none);
        libc::pthread_sigmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        if let Err(e) = child_setup(a.setup, a.step_fd, false) {
            fail(e.raw_os_error().unwrap_or(libc::EIO));
        }
        libc::execve(a.exe, a.argv, a.envp);
        fail(*libc::__errno_location())
    }
}

/// The first steps of a job's set-up: its first process joins the job's
/// cgroup (so every descendant is in it) and makes a session of its own.
fn join_cgroup_and_setsid(s: &ChildSetup, step_fd: i32) -> io::Result<()> {
    let step = |n: u8| {
        // SAFETY: writes one byte from a live stack variable.
        unsafe { libc::write(step_fd, (&n as *const u8).cast(), 1) };
    };
    let check = |rc: libc::c_int| {
        if rc < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(rc)
        }
    };
    step(0);
    if let Some(fd) = s.procs_fd {
        // SAFETY: writes from a static buffer to a descriptor made before the fork.
        check(unsafe { libc::write(fd, b"0".as_ptr().cast(), 1) } as libc::c_int)?;
    }
    step(1);
    // SAFETY: setsid has no memory effects.
    check(unsafe { libc::setsid() })?;
    Ok(())
}

/// The job's pid inside its namespace, for the init's signal handler.
static NS_JOB_PID: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

/// The init passes a signal the starter sends it (the job's KillSig, a
/// SIGHUP...) on to the job: a namespace's init gets only the signals it
/// has a handler for, which is why HTCondor runs condor_pid_ns_init.
extern "C" fn forward_signal(sig: libc::c_int) {
    let pid = NS_JOB_PID.load(std::sync::atomic::Ordering::Relaxed);
    if pid > 0 {
        // SAFETY: kill is async-signal-safe.
        unsafe { libc::kill(pid, sig) };
    }
}

/// USE_PID_NAMESPACES: a process in new PID and mount namespaces, which
/// becomes their init (pid 1) and starts the job as pid 2, as HTCondor's
/// condor_pid_ns_init does. A plain fork (its own copy of memory, not
/// the `CLONE_VM` of [`clone_vfork`]): the init outlives the exec of the
/// job. Returns the init's pid in the starter's namespace.
fn fork_pid_namespace(child: &ChildArgs<'_>, status_fd: i32) -> io::Result<i32> {
    // SAFETY: clone without a new stack behaves as fork: the child runs
    // on a copy of this stack and makes only system calls (no allocation,
    // no lock) until it execs or exits.
    let pid = unsafe {
        libc::syscall(
            libc::SYS_clone,
            (libc::CLONE_NEWPID | libc::CLONE_NEWNS | libc::SIGCHLD) as libc::c_ulong,
            0usize,
            0usize,
            0usize,
            0usize,
        )
    };
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    if pid > 0 {
        return Ok(pid as i32);
    }
    // SAFETY: the child, in its own copy of memory; `child` lives in it.
    unsafe { pid_ns_init(child, status_fd) }
}

/// The init of a job's PID namespace: joins the cgroup, makes the
/// session, mounts a `/proc` of the namespace (HTCondor's RemapProc), forks
/// the job, passes signals on, reaps every orphan, and when the job has
/// exited writes its wait status to `status_fd` and exits, which makes
/// the kernel kill whatever is left in the namespace.
unsafe fn pid_ns_init(a: &ChildArgs<'_>, status_fd: i32) -> ! {
    let fail = |errno: i32| -> ! {
        let mut msg = [FAILED, 0, 0, 0, 0];
        msg[1..].copy_from_slice(&errno.to_ne_bytes());
        libc::write(a.step_fd, msg.as_ptr().cast(), msg.len());
        libc::_exit(127)
    };
    let errno = || *libc::__errno_location();
    let mut none: libc::sigset_t = std::mem::zeroed();
    libc::sigemptyset(&mut none);
    libc::pthread_sigmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
    libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    if let Err(e) = join_cgroup_and_setsid(a.setup, a.step_fd) {
        fail(e.raw_os_error().unwrap_or(libc::EIO));
    }
    libc::write(a.step_fd, (&STEP_PROC_MOUNT as *const u8).cast(), 1);
    // The mounts stay in the job's mount namespace: nothing of the host's
    // changes.
    if libc::mount(
        std::ptr::null(),
        c"/".as_ptr(),
        std::ptr::null(),
        libc::MS_REC | libc::MS_PRIVATE,
        std::ptr::null(),
    ) != 0
        || libc::mount(
            c"proc".as_ptr(),
            c"/proc".as_ptr(),
            c"proc".as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
            std::ptr::null(),
        ) != 0
    {
        fail(errno());
    }
    libc::prctl(libc::PR_SET_NAME, c"fc_pid_ns_init".as_ptr());
    let mut sa: libc::sigaction = std::mem::zeroed();
    sa.sa_sigaction = forward_signal as *const () as usize;
    sa.sa_flags = libc::SA_RESTART;
    libc::sigemptyset(&mut sa.sa_mask);
    for sig in [
        libc::SIGHUP,
        libc::SIGINT,
        libc::SIGQUIT,
        libc::SIGTERM,
        libc::SIGUSR1,
        libc::SIGUSR2,
        libc::SIGALRM,
        libc::SIGTSTP,
        libc::SIGPWR,
        libc::SIGXCPU,
    ] {
        libc::sigaction(sig, &sa, std::ptr::null_mut());
    }
    let job = libc::syscall(
        libc::SYS_clone,
        libc::SIGCHLD as libc::c_ulong,
        0usize,
        0usize,
        0usize,
        0usize,
    );
    if job < 0 {
        fail(errno());
    }
    if job == 0 {
        // The job (pid 2): in the init's session and process group, so
        // the starter's signals to the group reach it; caught signals go
        // back to their defaults at exec.
        libc::close(status_fd);
        if let Err(e) = child_setup(a.setup, a.step_fd, true) {
            fail(e.raw_os_error().unwrap_or(libc::EIO));
        }
        libc::execve(a.exe, a.argv, a.envp);
        fail(errno())
    }
    NS_JOB_PID.store(job as i32, std::sync::atomic::Ordering::Relaxed);
    // Nothing of the daemon's stays open in the init: its sockets, its
    // files, the step pipe (whose end tells the starter the job exec'd).
    libc::close(a.step_fd);
    if status_fd > 3 {
        libc::syscall(libc::SYS_close_range, 3u32, (status_fd - 1) as u32, 0u32);
    }
    libc::syscall(
        libc::SYS_close_range,
        (status_fd + 1) as u32,
        u32::MAX,
        0u32,
    );
    loop {
        let mut status = 0;
        let r = libc::wait4(-1, &mut status, 0, std::ptr::null_mut());
        if r == job as i32 {
            libc::write(status_fd, (&status as *const i32).cast(), 4);
            let code = if libc::WIFEXITED(status) {
                libc::WEXITSTATUS(status)
            } else {
                128 + libc::WTERMSIG(status)
            };
            libc::_exit(code);
        }
        if r < 0 && errno() != libc::EINTR {
            libc::_exit(127);
        }
    }
}

fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0i32; 2];
    // SAFETY: fds has room for the two descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: pipe2 made these descriptors and nothing else owns them.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Runs in the child after fork: only system calls, no allocation.
fn child_setup(s: &ChildSetup, step_fd: i32, under_init: bool) -> io::Result<()> {
    let step = |n: u8| {
        // SAFETY: writes one byte from a live stack variable.
        unsafe { libc::write(step_fd, (&n as *const u8).cast(), 1) };
    };
    let check = |rc: libc::c_int| {
        if rc < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(rc)
        }
    };
    // SAFETY (all blocks below): plain system calls on valid pointers and
    // descriptors prepared before the fork.
    if !under_init {
        join_cgroup_and_setsid(s, step_fd)?;
    }
    step(2);
    if s.nice != 0 {
        unsafe { *libc::__errno_location() = 0 };
        let cur = unsafe { libc::getpriority(libc::PRIO_PROCESS as _, 0) };
        if cur == -1 && unsafe { *libc::__errno_location() } != 0 {
            return Err(io::Error::last_os_error());
        }
        check(unsafe { libc::setpriority(libc::PRIO_PROCESS as _, 0, cur + s.nice) })?;
    }
    step(3);
    if let Some((uid, gid, groups)) = &s.user {
        // Raw system calls, not libc's wrappers: the child shares the
        // daemon's memory (CLONE_VM), and glibc's wrappers would try to
        // change the credentials of every thread they believe this process
        // has, which are the daemon's.
        let sys = |r: libc::c_long| check(r as libc::c_int);
        sys(unsafe { libc::syscall(libc::SYS_setgroups, groups.len(), groups.as_ptr()) })?;
        sys(unsafe { libc::syscall(libc::SYS_setgid, *gid) })?;
        sys(unsafe { libc::syscall(libc::SYS_setuid, *uid) })?;
    } else if let Some(groups) = &s.groups {
        let sys = |r: libc::c_long| check(r as libc::c_int);
        sys(unsafe { libc::syscall(libc::SYS_setgroups, groups.len(), groups.as_ptr()) })?;
    }
    step(4);
    check(unsafe { libc::chdir(s.cwd.as_ptr()) })?;
    // A stream is opened without blocking (a FIFO with no one at the other
    // end would hold the start for ever) and must be a regular file or a
    // character device such as /dev/null: FIFOs and sockets are refused.
    let redirect = |path: &std::ffi::CStr, flags: libc::c_int, target: libc::c_int| {
        let flags = flags | libc::O_CLOEXEC | libc::O_NONBLOCK | libc::O_NOCTTY;
        let fd = check(unsafe { libc::open(path.as_ptr(), flags, 0o644) })?;
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        check(unsafe { libc::fstat(fd, &mut st) })?;
        let kind = st.st_mode & libc::S_IFMT;
        if kind != libc::S_IFREG && kind != libc::S_IFCHR {
            unsafe { libc::close(fd) };
            return Err(io::Error::from_raw_os_error(NOT_A_FILE));
        }
        check(unsafe { libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) })?;
        check(unsafe { libc::dup2(fd, target) })?;
        unsafe { libc::close(fd) };
        Ok::<(), io::Error>(())
    };
    let write = libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC;
    step(5);
    redirect(&s.stdin, libc::O_RDONLY, 0)?;
    step(6);
    redirect(&s.stdout, write, 1)?;
    step(7);
    if s.stderr_is_stdout {
        check(unsafe { libc::dup2(1, 2) })?;
    } else {
        redirect(&s.stderr, write, 2)?;
    }
    step(8);
    Ok(())
}

impl RunningJob {
    /// The job's main process (JobPid); the leader of its session and
    /// process group.
    pub fn pid(&self) -> i32 {
        self.pid
    }

    pub fn sandbox(&self) -> &Path {
        &self.sandbox
    }

    /// The job ad as the job was started with it (after PREPARE_JOB).
    pub fn job(&self) -> &ClassAd {
        &self.job
    }

    pub fn mechanisms(&self) -> &Mechanisms {
        &self.mechanisms
    }

    pub fn is_suspended(&self) -> bool {
        self.suspended
    }

    /// Readable once the main process has exited (a pidfd), for a daemon
    /// that waits with `poll` or tokio's `AsyncFd`; then call
    /// [`RunningJob::poll`]. `None` on kernels without pidfds.
    pub fn exit_fd(&self) -> Option<BorrowedFd<'_>> {
        self.pidfd.as_ref().map(|f| f.as_fd())
    }

    /// Says how JOB_EXIT's argument and the output transfer should treat
    /// the end (the daemon knows a removal from a vacate).
    pub fn set_exit_kind(&mut self, kind: ExitKind) {
        self.kind = kind;
    }

    /// Every live process of the job's tree: the cgroup's, or else the
    /// process group's and the session's.
    pub fn tree_pids(&self) -> Vec<i32> {
        match (&self.cgroup, &self.pid_ns) {
            (Some(cg), _) => cg.procs(),
            // Every process with the mark, and the main one until it is
            // reaped (it may not have the mark yet, between fork and exec).
            (None, _) if self.tracking_gid.is_some() => {
                let mut pids = procs::group_members(self.tracking_gid.unwrap_or_default());
                if self.exit.is_none() && !pids.contains(&self.pid) {
                    pids.push(self.pid);
                }
                pids
            }
            (
                None,
                Some(PidNs {
                    link: Some(link), ..
                }),
            ) => procs::pid_namespace_members(link),
            _ => procs::session_members(self.pid)
                .into_iter()
                .map(|s| s.pid)
                .collect(),
        }
    }

    fn signal_tree(&self, sig: i32) -> Result<(), ControlError> {
        let err = |source| ControlError::Signal {
            signal: sig,
            pid: self.pid,
            source,
        };
        if self.cgroup.is_none() && self.exit.is_none() {
            procs::kill(-self.pid, sig).map_err(err)?;
        }
        for pid in self.tree_pids() {
            procs::kill(pid, sig).map_err(err)?;
        }
        Ok(())
    }

    fn cgroup_err<'a>(
        &'a self,
        what: &'static str,
        file: &'a str,
    ) -> impl FnOnce(io::Error) -> ControlError + 'a {
        move |source| ControlError::Cgroup {
            what,
            pid: self.pid,
            path: self
                .cgroup
                .as_ref()
                .map(|c| c.path.join(file))
                .unwrap_or_default(),
            source,
        }
    }

    /// Stops the whole tree (SUSPEND).
    pub fn suspend(&mut self) -> Result<(), ControlError> {
        match (&self.cgroup, self.mechanisms.suspend) {
            (Some(cg), SuspendMechanism::CgroupFreezer) => cg
                .freeze(true)
                .map_err(self.cgroup_err("freeze", "cgroup.freeze"))?,
            _ => self.signal_tree(libc::SIGSTOP)?,
        }
        self.suspended = true;
        Ok(())
    }

    /// Continues the whole tree (CONTINUE).
    pub fn resume(&mut self) -> Result<(), ControlError> {
        match (&self.cgroup, self.mechanisms.suspend) {
            (Some(cg), SuspendMechanism::CgroupFreezer) => cg
                .freeze(false)
                .map_err(self.cgroup_err("thaw", "cgroup.freeze"))?,
            _ => self.signal_tree(libc::SIGCONT)?,
        }
        self.suspended = false;
        Ok(())
    }

    /// Asks the whole tree to exit with the job's KillSig (vacate). A
    /// suspended job is continued first, so that it can.
    pub fn soft_kill(&mut self) -> Result<(), ControlError> {
        if self.kind == ExitKind::Exit {
            self.kind = ExitKind::Evict;
        }
        if self.suspended {
            self.resume()?;
        }
        self.signal_tree(self.launch.kill_sig)
    }

    /// Kills the whole tree at once, suspended or not.
    pub fn hard_kill(&mut self) -> Result<(), ControlError> {
        if self.kind == ExitKind::Exit && self.exit.is_none() {
            self.kind = ExitKind::Evict;
        }
        if let Some(cg) = &self.cgroup {
            if cg.has("cgroup.kill") {
                cg.write("cgroup.kill", "1")
                    .map_err(self.cgroup_err("kill", "cgroup.kill"))?;
                return Ok(());
            }
        }
        self.signal_tree(libc::SIGKILL)
    }

    /// Reaps the main process if it has exited; runs UPDATE_JOB_INFO when
    /// due and samples memory. Never blocks.
    pub fn poll(&mut self) -> Result<Option<ExitStatus>, ControlError> {
        self.update_hooks.retain_mut(|h| !h.try_done());
        if self.exit.is_none() {
            self.reap(false)?;
        }
        if self.exit.is_none() {
            if self
                .last_sample
                .is_none_or(|t| t.elapsed() >= Duration::from_millis(200))
            {
                self.usage();
            }
            if self.next_update.is_some_and(|t| Instant::now() >= t) {
                self.run_update_hook();
            }
        }
        Ok(self.exit.map(|e| e.status))
    }

    fn reap(&mut self, block: bool) -> Result<(), ControlError> {
        let mut status = 0;
        // SAFETY: an all-zero rusage is valid, to be filled in.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        let flags = if block { 0 } else { libc::WNOHANG };
        // SAFETY: valid pointers to locals.
        let r = unsafe { libc::wait4(self.pid, &mut status, flags, &mut ru) };
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::EINTR) {
                return Ok(());
            }
            return Err(ControlError::Wait {
                pid: self.pid,
                source: e,
            });
        }
        if r == 0 {
            return Ok(());
        }
        // Under a PID namespace's init, the job's own status, as the init
        // wrote it (none when the init itself was killed: then the init's).
        if let Some(ns) = &self.pid_ns {
            let mut buf = [0u8; 4];
            // SAFETY: reads into a local buffer from a descriptor we own.
            let n = unsafe { libc::read(ns.status.as_raw_fd(), buf.as_mut_ptr().cast(), 4) };
            if n == 4 {
                status = i32::from_ne_bytes(buf);
            }
        }
        let st = if libc::WIFSIGNALED(status) {
            ExitStatus::Signal {
                signal: libc::WTERMSIG(status),
                core_dumped: libc::WCOREDUMP(status),
            }
        } else {
            ExitStatus::Code(libc::WEXITSTATUS(status))
        };
        let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
        self.exit = Some(Reaped {
            status: st,
            at: Instant::now(),
            user_cpu: secs(ru.ru_utime),
            sys_cpu: secs(ru.ru_stime),
        });
        Ok(())
    }

    /// Waits for the main process to exit, running what [`RunningJob::poll`]
    /// runs meanwhile.
    pub fn wait(&mut self) -> Result<ExitStatus, ControlError> {
        loop {
            if let Some(s) = self.wait_timeout(Duration::from_secs(3600))? {
                return Ok(s);
            }
        }
    }

    /// Waits at most `limit` for the main process to exit.
    pub fn wait_timeout(&mut self, limit: Duration) -> Result<Option<ExitStatus>, ControlError> {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(s) = self.poll()? {
                return Ok(Some(s));
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(None);
            }
            let mut until = deadline.min(now + Duration::from_millis(200));
            if let Some(t) = self.next_update {
                until = until.min(t);
            }
            let pause = until.saturating_duration_since(now);
            match &self.pidfd {
                Some(fd) => {
                    let mut p = libc::pollfd {
                        fd: fd.as_raw_fd(),
                        events: libc::POLLIN,
                        revents: 0,
                    };
                    let ms = pause.as_millis().clamp(1, i32::MAX as u128) as i32;
                    // SAFETY: one valid pollfd.
                    unsafe { libc::poll(&mut p, 1, ms) };
                }
                None => std::thread::sleep(pause.min(Duration::from_millis(5))),
            }
        }
    }

    /// The tree's usage now (after the exit: the final figures).
    pub fn usage(&mut self) -> Usage {
        let mut pids = self.tree_pids();
        if self.pid_ns.is_some() {
            // The init is a copy of the daemon: its resident pages are the
            // daemon's, not the job's.
            pids.retain(|&p| p != self.pid);
        }
        let page = procs::page_kib();
        let stats: Vec<procs::ProcStat> = pids.iter().filter_map(|&p| procs::stat(p)).collect();
        let rss: u64 = stats.iter().map(|s| s.rss_pages * page).sum();
        self.peak_rss_kib = self.peak_rss_kib.max(rss);
        self.last_sample = Some(Instant::now());
        if let Some(peak) = self.cgroup.as_ref().and_then(|c| c.memory_peak_kib()) {
            self.peak_rss_kib = self.peak_rss_kib.max(peak);
        }
        let (mut user, mut sys) = match self.cgroup.as_ref().and_then(|c| c.cpu()) {
            Some(cpu) => cpu,
            None => {
                let t = procs::clock_ticks();
                (
                    stats.iter().map(|s| s.utime).sum::<u64>() as f64 / t,
                    stats.iter().map(|s| s.stime).sum::<u64>() as f64 / t,
                )
            }
        };
        if let Some(e) = &self.exit {
            // Not wait4's ru_maxrss: the child began in the daemon's own
            // memory (CLONE_VM), and the kernel counts that as its peak.
            user = user.max(e.user_cpu);
            sys = sys.max(e.sys_cpu);
        }
        Usage {
            user_cpu: user,
            sys_cpu: sys,
            peak_rss_kib: self.peak_rss_kib,
            num_pids: pids.len(),
        }
    }

    /// The job ad with what UPDATE_JOB_INFO adds.
    fn status_ad(&mut self) -> ClassAd {
        let usage = self.usage();
        let mut ad = self.job.clone();
        let state = if self.suspended {
            "Suspended"
        } else {
            "Running"
        };
        ad.insert_value("JobState", state);
        ad.insert_value("JobPid", self.pid as i64);
        ad.insert_value("NumPids", usage.num_pids as i64);
        ad.insert_value("JobStartDate", self.start_date);
        write_usage(&mut ad, &usage);
        ad
    }

    fn run_update_hook(&mut self) {
        let Some(hook) = self.settings.hooks.update_job_info.clone() else {
            return;
        };
        self.next_update = Some(Instant::now() + self.settings.update_interval);
        let ad = self.status_ad();
        // Advisory: HTCondor neither waits for it nor reads what it says.
        if let Ok(run) = HookRun::start(
            &hook,
            &[],
            &self.sandbox,
            hooks::hook_input(&[&ad]),
            false,
            self.mechanisms.user.as_ref(),
        ) {
            self.update_hooks.push(run);
        }
    }

    /// Ends the job: waits for its main process to exit (call
    /// [`RunningJob::hard_kill`] first to end it now), kills what is left
    /// of the tree, writes the exit into the job ad, runs JOB_EXIT,
    /// transfers the output back and removes the cgroup and the sandbox.
    pub fn finish(mut self) -> ExitReport {
        let mut problems: Vec<FinishProblem> = Vec::new();
        let status = match self.wait() {
            Ok(s) => s,
            Err(e) => {
                // Not our child any more (someone else reaped it): nothing
                // to wait for.
                problems.push(e.into());
                ExitStatus::Signal {
                    signal: libc::SIGKILL,
                    core_dumped: false,
                }
            }
        };
        // The main process is gone; nothing it left behind may stay.
        let mut survivors = self.tree_pids();
        if !survivors.is_empty() {
            let deadline = Instant::now() + Duration::from_secs(2);
            while !survivors.is_empty() && Instant::now() < deadline {
                if let Err(e) = self.hard_kill() {
                    problems.push(e.into());
                    break;
                }
                std::thread::sleep(Duration::from_millis(2));
                survivors = self.tree_pids();
            }
            if !survivors.is_empty() {
                problems.push(FinishProblem::Survivors { pids: survivors });
            }
        }
        let usage = self.usage();
        let exit = self.exit.unwrap_or(Reaped {
            status,
            at: Instant::now(),
            user_cpu: 0.0,
            sys_cpu: 0.0,
        });
        let duration = exit.at.duration_since(self.started);
        // Read before the cgroup goes: did the kernel kill the job for
        // memory? (HTCondor asks the same of `memory.events` at the reap.)
        let oom = self
            .cgroup
            .as_ref()
            .and_then(|c| c.memory_events())
            .and_then(|events| {
                limits::oom_verdict(
                    &events,
                    status,
                    self.kind,
                    self.job_memory_mib,
                    usage.peak_rss_kib.div_ceil(1024),
                    self.settings.memory.always_hold_on_oom,
                )
            });

        let mut ad = self.job.clone();
        ad.insert_value("JobState", "Exited");
        ad.insert_value("JobPid", self.pid as i64);
        ad.insert_value("NumPids", 0i64);
        ad.insert_value("JobStartDate", self.start_date);
        write_usage(&mut ad, &usage);
        let reason = match (status, self.kind) {
            (ExitStatus::Code(c), ExitKind::Exit) => format!("exited normally with status {c}"),
            (_, ExitKind::Exit) if oom.is_some() => {
                "was killed by the kernel for going over its memory limit".into()
            }
            (ExitStatus::Signal { signal, .. }, ExitKind::Exit) => {
                format!("died on signal {signal}")
            }
            (_, kind) => format!(
                "was stopped by the execute point ({})",
                kind.hook_argument()
            ),
        };
        ad.insert_value("ExitReason", reason.as_str());
        match status {
            ExitStatus::Code(c) => {
                ad.insert_value("ExitBySignal", false);
                ad.insert_value("ExitCode", c as i64);
                ad.remove("ExitSignal");
            }
            ExitStatus::Signal {
                signal,
                core_dumped,
            } => {
                ad.insert_value("ExitBySignal", true);
                ad.insert_value("ExitSignal", signal as i64);
                ad.insert_value("JobCoreDumped", core_dumped);
                ad.remove("ExitCode");
            }
        }
        ad.insert_value("JobDuration", duration.as_secs_f64());

        // Advisory update hooks still running get the hook timeout.
        let timeout = self.settings.hooks.timeout;
        for run in std::mem::take(&mut self.update_hooks) {
            let path = run.path.clone();
            if let Err(reason) = run.wait(timeout) {
                problems.push(FinishProblem::Hook {
                    hook: "UPDATE_JOB_INFO",
                    path,
                    reason,
                });
            }
        }
        // JOB_EXIT before the output goes back, as HTCondor does; its exit
        // status is ignored.
        if let Some(hook) = &self.settings.hooks.job_exit {
            let r = HookRun::start(
                hook,
                &[self.kind.hook_argument()],
                &self.sandbox,
                hooks::hook_input(&[&ad]),
                false,
                self.mechanisms.user.as_ref(),
            )
            .and_then(|run| run.wait(timeout));
            if let Err(reason) = r {
                problems.push(FinishProblem::Hook {
                    hook: "JOB_EXIT",
                    path: hook.clone(),
                    reason,
                });
            }
        }

        let mut bytes_sent = 0;
        if self.launch.transfer && self.wants_output(status) {
            let streams = [
                (&self.launch.stdout, transfer::STDOUT),
                (&self.launch.stderr, transfer::STDERR),
            ]
            .into_iter()
            .filter_map(|(name, file)| Some((file.to_string(), name.clone()?)))
            .collect();
            let named = self.launch.transfer_output.clone();
            let text = |n: &str| match self.job.eval_attr(n, &classad::Env::default()) {
                Value::Str(s) if !s.trim().is_empty() => Some(s.trim().to_string()),
                _ => None,
            };
            let deadline = self.settings.transfer_deadline;
            let req = OutputRequest {
                sandbox: self.sandbox.clone(),
                iwd: self.launch.iwd.clone(),
                named,
                before: std::mem::take(&mut self.input_snapshot),
                streams,
                destination: text("OutputDestination"),
                remaps: text("TransferOutputRemaps")
                    .map(|r| crate::url_plugin::parse_remaps(&r))
                    .unwrap_or_default(),
                plugins: self.settings.filetransfer_plugins.clone(),
                // The plugins are killed a little before the helper
                // that runs them, so none outlives it.
                plugin_deadline: deadline
                    .saturating_sub((deadline / 10).min(Duration::from_secs(5))),
            };
            // To the job's access point on another host, or copied here.
            let output = match &self.settings.shadow {
                Some(shadow) => {
                    crate::remote::send_output(shadow, self.mechanisms.user.as_ref(), req, deadline)
                }
                None => user_priv::output(self.mechanisms.user.as_ref(), req, deadline),
            };
            bytes_sent = output.bytes;
            problems.extend(
                output
                    .failures
                    .into_iter()
                    .map(|f| output_problem(f, &self.sandbox)),
            );
        }
        if let Some(cg) = &self.cgroup {
            if let Err(source) = cg.remove() {
                problems.push(FinishProblem::Cleanup {
                    path: cg.path.clone(),
                    source,
                });
            }
        }
        if !self.settings.keep_sandbox {
            if let Err(source) = sandbox::remove(&self.sandbox) {
                problems.push(FinishProblem::Cleanup {
                    path: self.sandbox.clone(),
                    source,
                });
            }
        }
        ExitReport {
            job: ad,
            status,
            kind: self.kind,
            usage,
            duration,
            mechanisms: self.mechanisms.clone(),
            problems,
            oom,
            bytes_received: self.bytes_received,
            bytes_sent,
        }
    }

    /// WhenToTransferOutput: ON_EXIT (the job exited on its own),
    /// ON_EXIT_OR_EVICT, ON_SUCCESS (exit code 0).
    fn wants_output(&self, status: ExitStatus) -> bool {
        let when = match self
            .job
            .eval_attr("WhenToTransferOutput", &classad::Env::default())
        {
            Value::Str(s) => s.as_str().to_ascii_uppercase(),
            _ => "ON_EXIT".into(),
        };
        match when.as_str() {
            "ON_EXIT_OR_EVICT" => true,
            "ON_SUCCESS" => self.kind == ExitKind::Exit && status == ExitStatus::Code(0),
            _ => self.kind == ExitKind::Exit,
        }
    }
}

/// An output URL the job asks for (`OutputDestination`, a
/// `TransferOutputRemaps` target that is a URL, or an `Out`/`Err` that
/// is one), refused while URL transfers are disabled.
fn output_url(job: &ClassAd) -> Option<String> {
    let text = |n: &str| match job.eval_attr(n, &classad::Env::default()) {
        classad::Value::Str(s) if !s.trim().is_empty() => Some(s.to_string()),
        _ => None,
    };
    let streams = ["Out", "Err"].into_iter().filter_map(text);
    text("OutputDestination")
        .into_iter()
        .chain(
            text("TransferOutputRemaps")
                .map(|r| crate::url_plugin::parse_remaps(&r))
                .unwrap_or_default()
                .into_iter()
                .map(|(_, to)| to),
        )
        .chain(streams)
        .find(|to| crate::url_plugin::scheme(to).is_some())
}

/// An output transfer failure as the daemon reports it: a named file the
/// job did not make, or a file that could not (or may not) go back.
fn output_problem(f: transfer::Failure, sandbox: &Path) -> FinishProblem {
    if let Some(subcode) = f.subcode {
        return FinishProblem::UrlOutput {
            from: f.path,
            url: f.to.map(|u| u.display().to_string()).unwrap_or_default(),
            reason: f.message,
            subcode,
        };
    }
    match (&f.to, f.errno) {
        (_, Some(libc::ENOENT)) if f.path.is_relative() => FinishProblem::MissingOutput {
            name: f.path.display().to_string(),
            sandbox: sandbox.to_path_buf(),
        },
        _ => FinishProblem::Output {
            from: f.path.clone(),
            to: f.to.clone().unwrap_or_default(),
            source: io::Error::new(f.to_io_error().kind(), f.message),
        },
    }
}

fn write_usage(ad: &mut ClassAd, u: &Usage) {
    ad.insert_value("RemoteUserCpu", u.user_cpu);
    ad.insert_value("RemoteSysCpu", u.sys_cpu);
    ad.insert_value("ImageSize", u.peak_rss_kib as i64);
    ad.insert_value("ResidentSetSize", u.peak_rss_kib as i64);
    ad.insert_value("MemoryUsage", u.peak_rss_kib.div_ceil(1024) as i64);
}

impl Drop for RunningJob {
    /// A job dropped without [`RunningJob::finish`] (a panic, a daemon
    /// giving up) must not run on unobserved: its tree is killed and reaped,
    /// its cgroup and sandbox removed.
    fn drop(&mut self) {
        if self.exit.is_none() {
            let _ = self.hard_kill();
            let _ = self.reap(true);
            if let Some(cg) = &self.cgroup {
                let _ = cg.remove();
            }
            if !self.settings.keep_sandbox {
                let _ = sandbox::remove(&self.sandbox);
            }
        }
    }
}
