//! # starter — runs one job on Linux
//!
//! I/O: makes the job's sandbox under EXECUTE, copies its input in (or runs
//! it in `Iwd` on a shared file system), always as the job's user
//! ([`user_priv`], [`transfer`]), starts it in a session and process
//! group of its own, reniced, as the job's owner when the starter is root,
//! through USER_JOB_WRAPPER if one is set, in a cgroup v2 of its own where
//! one can be made; suspends, continues and kills the whole process tree,
//! measures it, runs the job hooks (PREPARE_JOB, UPDATE_JOB_INFO,
//! JOB_EXIT), and writes the exit into the job ad. What to do and when is
//! the `startd` engine's decision (its `Action`s); this crate only carries
//! it out, and decides nothing about policy.
//!
//! Start reading at [`Starter::start`], which takes a [`JobSpec`] (the job
//! ad and the execute point's [`StarterSettings`]) and gives a
//! [`RunningJob`]: `suspend`/`resume` (SuspendJob, ContinueJob),
//! `soft_kill` (VacateJob: the job's `KillSig`), `hard_kill` (KillJob,
//! KillStarterTree), `poll`/`wait`/`wait_timeout`, `usage`, `pid`, and
//! `finish`, which returns the [`ExitReport`] with the job ad updated.
//! [`Starter::probe`] says what this machine offers (root? a writable
//! cgroup v2? its controllers?).
//!
//! **Never as root for a user.** Every file the job names (input, the
//! executable, `Iwd`, the standard streams, output, the job event log) is
//! opened by a process running as the job's user: the job's own process
//! after it changed user (its streams, its directory, its program), or a
//! file helper that dropped to the user first ([`user_priv`]) for the
//! transfers. Only [`transfer`] touches users' paths.
//!
//! **Blocking, on purpose.** Everything here is plain `std` and `libc`
//! system calls: starting a job is a fork and an exec with set-up between
//! them that must be async-signal-safe (joining the cgroup, setsid, renice,
//! changing user, opening the streams), which `std::process::Command`'s
//! `pre_exec` does and tokio adds nothing to. The daemon drives a job from
//! `spawn_blocking` or a thread, or waits on [`RunningJob::exit_fd`] (a
//! pidfd) with tokio's `AsyncFd` and then calls [`RunningJob::poll`], which
//! never blocks. Only `wait`, `finish` and the hooks the starter waits for
//! (PREPARE_JOB, JOB_EXIT) block.
//!
//! **The process tree.** With a cgroup, the job's first process joins it
//! between fork and exec, so every descendant is in it, even one that
//! calls setsid or double-forks: freezing uses `cgroup.freeze`, killing
//! `cgroup.kill`, counting `cgroup.procs`, CPU time `cpu.stat`. Without
//! one, the tree is the job's process group and session (SIGSTOP/SIGCONT,
//! signals to each member); a descendant that makes a session of its own
//! escapes that, which is why the cgroup is preferred. Two more ways to
//! hold it, as HTCondor's: USE_GID_PROCESS_TRACKING ([`gid_tracking`]),
//! a supplementary group only root can take away, added to the job's
//! groups, so every process that carries it is the job's; and
//! USE_PID_NAMESPACES, the job as pid 2 of a PID namespace of its own
//! under an init the starter forks (condor_pid_ns_init's part: it passes
//! signals on, reaps orphans, writes the job's wait status back, and its
//! end makes the kernel kill the rest), with a `/proc` of the namespace.
//! When the main process exits, whatever is left of the tree is killed.
//!
//! **Limits.** CGROUP_MEMORY_LIMIT_POLICY ([`limits`], pure) turns the
//! slot's `Memory` (or, without a slot ad, RequestMemory) into
//! `memory.max` (hard, with `memory.swap.max` 0 under DISABLE_SWAP_FOR_JOB),
//! `memory.high` (soft), nothing (none) or the custom expressions';
//! `memory.oom.group` is set so an OOM kill takes the whole job, as
//! HTCondor does. RequestCpus becomes `cpu.weight` (100 per CPU). Each
//! needs the parent cgroup to offer the controller and let it be enabled;
//! otherwise the job runs without, and [`Mechanisms`] says why. (cgroup v2
//! forbids enabling controllers below a cgroup that holds processes, so a
//! daemon that wants limits gives a delegated cgroup with
//! [`CgroupPolicy::Under`].) After the exit, `memory.events` says whether
//! the kernel killed the job for memory; [`ExitReport::oom`] carries what
//! [`limits::oom_verdict`] makes of it (HTCondor's hold, 34/102).
//!
//! **Usage.** CPU from the cgroup's `cpu.stat`, else from wait4's rusage at
//! the exit (and, while running, the live processes' `/proc` times, which
//! miss processes that already exited). Memory: the largest resident set
//! of the whole tree seen by sampling (at most every 200 ms, at each poll),
//! and `memory.peak` where the memory controller is on (not wait4's
//! `ru_maxrss`: the job is started with `clone(CLONE_VM | CLONE_VFORK)`,
//! as posix_spawn does, and the kernel counts the daemon's memory, which
//! the child shared until its exec, as the child's peak; so a job shorter
//! than one sample and without a cgroup reports no memory). `ImageSize` and
//! `ResidentSetSize` are KiB, `MemoryUsage` MiB, as in HTCondor.
//!
//! **URL transfers.** A transfer_input_files item that is a URL is fetched
//! by the FILETRANSFER_PLUGINS plugin for its scheme (`url_plugin` decides,
//! `transfer` runs it as the job's user in the sandbox; `file://` and
//! `http(s)://` are built in, `http` making the requests); a failure is a
//! [`StartError::Input`] naming the URL. Output whose destination is a URL
//! (`OutputDestination`, a URL target of `TransferOutputRemaps`, an
//! `output`/`error` that is a URL) is uploaded the same way after the job;
//! a failed upload is a [`FinishProblem::UrlOutput`] with HTCondor's
//! subcode.
//!
//! `TransferOutputRemaps` to a path renames the file in the job's directory.
//!
//! **Not here (yet):** streaming output,
//! HTCondor's `condor_exec.exe` checkpoint universes, and the
//! STARTER_NUM_THREADS_ENV_VARS list beyond the common ones. (The job
//! hooks run as the job's user, in its sandbox.)

mod cgroup;
pub mod cgroup_layout;
mod error;
pub mod gid_tracking;
mod hooks;
mod http;
mod job;
pub mod limits;
mod procs;
pub mod quoting;
mod remote;
mod sandbox;
pub mod shadow;
mod spec;
pub mod transfer;
pub mod url_plugin;
pub mod user_priv;

pub use cgroup::{cgroup_of, move_to_leaf, settle_job_cgroups, JobCgroups, Limit};
pub use error::{ControlError, FinishProblem, StartError};
pub use gid_tracking::{GidRangeError, TrackingGids};
pub use hooks::hook_input;
pub use job::{
    ExitKind, ExitReport, ExitStatus, KillMechanism, Mechanisms, Probe, RunningJob, Starter,
    SuspendMechanism, Usage,
};
pub use limits::{MemoryLimitPolicy, MemorySettings, OomVerdict, PolicyError};
pub use procs::{
    all_pids, home_dir, lookup_user, stat as process_stat, user_home_lookup, ProcStat, User,
};
pub use spec::{
    signal_number, transfer_inputs, CgroupPolicy, Hooks, JobSpec, RunAs, StarterSettings,
    TransferInputs,
};
