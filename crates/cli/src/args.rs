//! The command line, declared with clap. Only shapes live here; what each
//! command does is in its own module.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

const EXIT_CODES: &str = "\
Exit status:
  0  done; for `classad match` the ads match, for `vectors --check` every case agrees
  1  done, and the answer is no: the ads do not match, or some vector cases differ
  2  usage error, unreadable file, or text that does not parse";

/// ferrocondor: a high-throughput batch system that speaks HTCondor's languages.
#[derive(Debug, Parser)]
#[command(name = "ferrocondor", version, after_help = EXIT_CODES)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// The ClassAd language: evaluate expressions, match ads, check HTCondor's vectors.
    Classad(ClassadArgs),
    /// Print configuration values, as HTCondor's condor_config_val does.
    ///
    /// Reads the configuration the daemons would read: the file named by
    /// FERROCONDOR_CONFIG or CONDOR_CONFIG (else /etc/condor/condor_config),
    /// its includes, LOCAL_CONFIG_DIR, LOCAL_CONFIG_FILE and _CONDOR_NAME
    /// environment overrides. HTCondor's single-dash options (-verbose, -dump,
    /// -raw, -subsystem, -evaluate, -config) are accepted too.
    #[command(name = "config_val", after_help = CONFIG_VAL_EXIT_CODES)]
    ConfigVal(ConfigValArgs),
    /// Turn a submit description into job ads, as HTCondor's condor_submit does.
    ///
    /// Queues the jobs in the running pool (`ferrocondor pool up`) and
    /// prints "N job(s) submitted to cluster C.". With --dry-run it queues
    /// nothing and prints the job ads (old syntax, one blank line between
    /// jobs, as `condor_submit -dump` does), or with --json a JSON list of
    /// {attribute: expression} objects. The configuration is read as for
    /// config_val (subsystem SUBMIT).
    Submit(SubmitArgs),
    /// Run a whole pool on a virtual clock: the real startd, schedd and
    /// negotiator cores, as a scenario (JSON) describes it.
    ///
    /// Prints a summary (jobs completed, waits, goodput and badput,
    /// preemptions by cause, utilization) and every slot transition and
    /// job event; --json prints all of it as JSON, --html writes a
    /// self-contained report with charts. The same seed gives the same
    /// result. The scenario format: crates/sim/scenarios/README.md.
    Simulate(SimulateArgs),
    /// Query the job queue, as HTCondor's condor_q does.
    ///
    /// Asks the running pool (`ferrocondor pool up`; its state directory is
    /// $FERROCONDOR_STATE, else ~/.local/state/ferrocondor) and prints its
    /// jobs in condor_q's batch view, or -nobatch, -hold, -run, -l, -af,
    /// -json. Restrict with job ids (CLUSTER or CLUSTER.PROC), owners and
    /// -constraint EXPR; by default only your own jobs are shown.
    /// `q -better-analyze -jobads FILE -slotads FILE [JOB]` works offline:
    /// which clauses of each job's Requirements rule out how many slots of
    /// the slot ads (condor_status -l output), which clause of each refusing
    /// slot's START is false, and what would let it run. HTCondor's
    /// single-dash options are accepted.
    #[command(after_help = Q_EXIT_CODES)]
    Q(QArgs),
    /// Run a personal pool, or stop it.
    ///
    /// `pool up` runs the access point (schedd) in the foreground: the job
    /// queue in SQLite under the state directory (--state, else
    /// $FERROCONDOR_STATE, else ~/.local/state/ferrocondor) and the API on
    /// `<state>/pool.sock`. Jobs are queued, held, released and removed;
    /// they do not run yet (no execute point). `pool down` stops it.
    Pool(PoolArgs),
    /// Run the daemons DAEMON_LIST names, each as a process of its own,
    /// restarting one that dies, as HTCondor's condor_master does.
    Master {
        /// The state directory (default: $FERROCONDOR_STATE, else ~/.local/state/ferrocondor).
        #[arg(long, value_name = "DIR")]
        state: Option<PathBuf>,
    },
    /// Run one daemon of a pool in the foreground (COLLECTOR, NEGOTIATOR,
    /// SCHEDD or STARTD); `ferrocondor master` starts them this way.
    Daemon {
        /// COLLECTOR, NEGOTIATOR, SCHEDD or STARTD.
        role: String,
        /// The state directory (default: $FERROCONDOR_STATE, else ~/.local/state/ferrocondor).
        #[arg(long, value_name = "DIR")]
        state: Option<PathBuf>,
    },
    /// Remove jobs from the queue, as HTCondor's condor_rm does.
    Rm(ActArgs),
    /// Put jobs on hold, as HTCondor's condor_hold does.
    Hold(ActArgs),
    /// Release held jobs, as HTCondor's condor_release does.
    Release(ActArgs),
    /// Evict running jobs from their machines, back to idle, as HTCondor's
    /// condor_vacate_job does.
    #[command(name = "vacate_job", after_help = ACT_EXIT_CODES)]
    VacateJob(VacateJobArgs),
    /// Jobs that have left the queue, as HTCondor's condor_history prints them.
    History(HistoryArgs),
    /// Benchmarks of the real pool.
    Bench(BenchArgs),
    /// Make links named after HTCondor's tools (condor_q, condor_submit,
    /// ...) to this program in DIR, so that scripts written for HTCondor
    /// run unchanged with DIR on their PATH.
    #[command(name = "install-links")]
    InstallLinks {
        /// Where to make the links (created if missing).
        dir: PathBuf,
    },
    /// The pool's slots, as HTCondor's condor_status shows them.
    ///
    /// By default a row per slot (Name OpSys Arch State Activity LoadAv Mem
    /// ActvtyTime), then the slots counted by state for each platform and
    /// in all. -compact gives a row per machine, -total only the counts,
    /// -l the whole slot ads, -af ATTR... chosen values, -json the ads as
    /// JSON. Restrict with slot or machine names and -constraint EXPR.
    /// HTCondor's single-dash options are accepted.
    Status(StatusArgs),
    /// Evict the jobs running on slots, as HTCondor's condor_vacate does.
    ///
    /// With no names, every slot of the machine; the jobs go back to idle
    /// in the queue. Only the pool's owner, root or a queue super user may.
    #[command(after_help = ADMIN_EXIT_CODES)]
    Vacate(VacateArgs),
    /// Drain the machine, or stop draining it, as HTCondor's condor_drain does.
    ///
    /// The slots take no new jobs; running jobs get their retirement time
    /// and then their vacate time (-graceful, the default), only their
    /// vacate time (-quick), or are killed at once (-fast). Drained slots
    /// show State Drained in `status`. -cancel brings them back.
    #[command(after_help = ADMIN_EXIT_CODES)]
    Drain(DrainArgs),
    /// The accountant's user priorities, as HTCondor's condor_userprio shows them.
    ///
    /// A row per submitter active in the last day (-allusers: every one)
    /// with its effective priority, priority factor, slots in use, usage
    /// and when it last used the pool; -all adds the real priority and the
    /// usage times. -setfactor, -setprio and -resetusage change them (the
    /// pool's owner, root or a queue super user only).
    #[command(after_help = ADMIN_EXIT_CODES)]
    Userprio(UserprioArgs),
    /// IDTOKENS: make, list and fetch the tokens clients authenticate
    /// with, as HTCondor's condor_token_create, condor_token_list and
    /// condor_token_fetch do (HTCondor's one-dash options are taken).
    Token(TokenArgs),
    /// Make the pool read its configuration again, as HTCondor's condor_reconfig does.
    ///
    /// A configuration that does not read is refused with the file and
    /// line, and the pool keeps the one in force. Claims, running jobs and
    /// the queue stay.
    #[command(after_help = ADMIN_EXIT_CODES)]
    Reconfig,
}

const ADMIN_EXIT_CODES: &str = "Exit status: 0 done, 2 refused (not the pool's owner, a configuration that does not read, no such slot) or no pool.";

#[derive(Debug, Args)]
pub struct StatusArgs {
    /// Slots (slot1@host) or machines (host) to show.
    #[arg(value_name = "NAME")]
    pub targets: Vec<String>,
    /// Only slots matching this ClassAd expression.
    #[arg(long, value_name = "EXPR", allow_hyphen_values = true)]
    pub constraint: Option<String>,
    /// Print whole slot ads (`Name = expr` lines, a blank line between).
    #[arg(short = 'l', long = "long")]
    pub long: bool,
    /// Print these expressions' values, space separated, one line per slot
    /// (`-af:jlhVrTY,tng` qualifiers as HTCondor's: j the job id first,
    /// l labels, h headings, V strings quoted, r unevaluated, T durations,
    /// Y dates, `,` commas, t tabs, n a newline after each, g a blank line
    /// between ads).
    #[arg(long = "af", alias = "autoformat", value_name = "ATTR", num_args = 1.., allow_hyphen_values = false)]
    pub af: Vec<String>,
    /// printf-style output: FMT (one conversion: %d %f %s %v %V %r %T %Y
    /// ...) applied to ATTR for each slot; repeat it for more columns.
    #[arg(long, num_args = 2, value_names = ["FMT", "ATTR"], allow_hyphen_values = true)]
    pub format: Vec<String>,
    /// -af and -format in command-line order (filled in after parsing).
    #[arg(skip)]
    pub print: Vec<crate::printmask::PrintItem>,
    /// Print the slot ads as JSON.
    #[arg(long)]
    pub json: bool,
    /// One row per machine (Machine Platform Slots Cpus Gpus TotalGb FreCpu FreeGb CpuLoad ST ...).
    #[arg(long)]
    pub compact: bool,
    /// Only the counts of slots by state.
    #[arg(long, alias = "totals")]
    pub total: bool,
    /// The access point's ad instead of the slots (Name Machine RunningJobs IdleJobs HeldJobs).
    #[arg(long, conflicts_with = "submitters")]
    pub schedd: bool,
    /// One ad per user with jobs (Name Machine RunningJobs IdleJobs HeldJobs).
    #[arg(long)]
    pub submitters: bool,
    /// Only the slots that can take a job now (State == "Unclaimed" && Cpus > 0 && Memory > 0).
    #[arg(long, conflicts_with_all = ["claimed", "state", "run"])]
    pub avail: bool,
    /// Only claimed slots, with who claimed them (Name OpSys Arch LoadAv RemoteUser ClientMachine).
    #[arg(long, conflicts_with_all = ["state", "run"])]
    pub claimed: bool,
    /// The slots' state and activity and how long they have been in them
    /// (Name Cpu Mem LoadAv KbdIdle State StateTime Activ ActvtyTime).
    #[arg(long, conflicts_with = "run")]
    pub state: bool,
    /// The access points running jobs (Name TotalJobs Shadows ActiveDAGs
    /// IdleDAGs RcntDone RcntStart), as condor_status -run prints since
    /// HTCondor 8.5.7; `-claimed` shows the slots running jobs.
    #[arg(long)]
    pub run: bool,
    /// Do not cut long values to the terminal's width (ferrocondor never
    /// cuts them, so this changes nothing).
    #[arg(long)]
    pub wide: bool,
}

#[derive(Debug, Args)]
pub struct VacateArgs {
    /// Machines (every slot) or slots (slot1, or slot1@host) to vacate; all when none.
    #[arg(value_name = "MACHINE|SLOT")]
    pub targets: Vec<String>,
    /// Kill the jobs at once instead of giving them their vacate time.
    #[arg(long)]
    pub fast: bool,
}

#[derive(Debug, Args)]
pub struct DrainArgs {
    /// The machine to drain (the pool's only one when not given).
    #[arg(value_name = "MACHINE")]
    pub machine: Option<String>,
    /// Let jobs finish within their retirement time, then their vacate time (the default).
    #[arg(long, conflicts_with_all = ["quick", "fast"])]
    pub graceful: bool,
    /// Give jobs only their vacate time.
    #[arg(long, conflicts_with = "fast")]
    pub quick: bool,
    /// Kill jobs at once.
    #[arg(long)]
    pub fast: bool,
    /// Stop draining once every slot is drained.
    #[arg(long = "resume-on-completion")]
    pub resume_on_completion: bool,
    /// The START expression while draining (default: no new jobs).
    #[arg(long, value_name = "EXPR", allow_hyphen_values = true)]
    pub start: Option<String>,
    /// Why the machine is drained (DrainReason).
    #[arg(long, value_name = "TEXT", allow_hyphen_values = true)]
    pub reason: Option<String>,
    /// Stop draining: the slots take jobs again.
    #[arg(long, conflicts_with_all = ["graceful", "quick", "fast", "resume_on_completion", "start", "reason"])]
    pub cancel: bool,
}

#[derive(Debug, Args)]
pub struct UserprioArgs {
    /// Also the real priority and when usage began and was last charged.
    #[arg(long)]
    pub all: bool,
    /// Every submitter, not only those active in the last day.
    #[arg(long)]
    pub allusers: bool,
    /// Set USER's priority factor (at least 1).
    #[arg(long, num_args = 2, value_names = ["USER", "FACTOR"])]
    pub setfactor: Vec<String>,
    /// Set USER's real priority.
    #[arg(long, num_args = 2, value_names = ["USER", "PRIORITY"])]
    pub setprio: Vec<String>,
    /// Reset USER's accumulated usage.
    #[arg(long, value_name = "USER")]
    pub resetusage: Option<String>,
}

#[derive(Debug, Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    pub command: BenchCommand,
}

#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Start a fresh personal pool, push N trivial jobs (/bin/true) from submit to completion,
    /// and measure a lone job's submit-to-complete latency (median of 20). The last line is
    /// `jobs_per_second=X median_latency_ms=Y`.
    Throughput(ThroughputArgs),
}

#[derive(Debug, Args)]
pub struct ThroughputArgs {
    /// How many jobs to push through.
    #[arg(long, default_value_t = 1000)]
    pub jobs: u64,
    /// How many job slots the pool gets (NUM_CPUS; one slot per CPU).
    #[arg(long, default_value_t = 16)]
    pub slots: u32,
    /// Submit through the pool's local socket (HTTP+JSON), the baseline,
    /// instead of the command port with HTCondor's job-queue protocol
    /// (QMGMT over an FS-authenticated, AES-GCM session), which the tools
    /// and HTCondor's clients use.
    #[arg(long, conflicts_with = "cedar")]
    pub local_socket: bool,
    /// The command port (the default; kept for scripts that name it).
    #[arg(long, hide = true)]
    pub cedar: bool,
    /// Time the submission alone: the pool runs with `START = False`, the
    /// N jobs are submitted in one cluster, and the last line is
    /// `submitted_jobs_per_second=X`.
    #[arg(long)]
    pub submit_only: bool,
    /// Internal: the benchmark re-run as `nobody` when started by root.
    #[arg(long, hide = true)]
    pub as_nobody: bool,
}

#[derive(Debug, Args)]
pub struct PoolArgs {
    #[command(subcommand)]
    pub command: PoolCommand,
}

#[derive(Debug, Subcommand)]
pub enum PoolCommand {
    /// Start a personal pool in the foreground (stop it with Ctrl-C, SIGTERM or `pool down`).
    Up {
        /// The state directory (default: $FERROCONDOR_STATE, else ~/.local/state/ferrocondor).
        #[arg(long, value_name = "DIR")]
        state: Option<PathBuf>,
    },
    /// Stop the personal pool and wait until it is down.
    Down {
        /// The state directory (default: $FERROCONDOR_STATE, else ~/.local/state/ferrocondor).
        #[arg(long, value_name = "DIR")]
        state: Option<PathBuf>,
    },
}

const ACT_EXIT_CODES: &str = "Exit status: 0 every job asked for was acted on, 1 some were not (not found, not yours, wrong status), 2 on an error.";

#[derive(Debug, Args)]
#[command(after_help = ACT_EXIT_CODES)]
pub struct ActArgs {
    /// Jobs (CLUSTER or CLUSTER.PROC) or users whose jobs to act on.
    #[arg(value_name = "JOB|OWNER")]
    pub targets: Vec<String>,
    /// Every job matching this ClassAd expression.
    #[arg(long, value_name = "EXPR", allow_hyphen_values = true)]
    pub constraint: Option<String>,
    /// All of your jobs (all jobs, for a queue super user).
    #[arg(long)]
    pub all: bool,
    /// The reason to record (HoldReason, RemoveReason, ReleaseReason).
    #[arg(long, value_name = "TEXT")]
    pub reason: Option<String>,
}

#[derive(Debug, Args)]
pub struct VacateJobArgs {
    #[command(flatten)]
    pub act: ActArgs,
    /// Kill the jobs at once instead of sending their soft kill signal.
    #[arg(long)]
    pub fast: bool,
}

#[derive(Debug, Args)]
pub struct HistoryArgs {
    /// Jobs (CLUSTER or CLUSTER.PROC) or users to show.
    #[arg(value_name = "JOB|OWNER")]
    pub targets: Vec<String>,
    /// Only jobs matching this ClassAd expression.
    #[arg(long, value_name = "EXPR", allow_hyphen_values = true)]
    pub constraint: Option<String>,
    /// At most N jobs, newest first.
    #[arg(long, alias = "match", value_name = "N")]
    pub limit: Option<usize>,
    /// Print whole job ads (`Name = expr` lines).
    #[arg(short = 'l', long = "long")]
    pub long: bool,
    /// Print these expressions' values, space separated, one line per job
    /// (`-af:jlhVrTY,tng` qualifiers as HTCondor's: j the job id first,
    /// l labels, h headings, V strings quoted, r unevaluated, T durations,
    /// Y dates, `,` commas, t tabs, n a newline after each, g a blank line
    /// between ads).
    #[arg(long = "af", alias = "autoformat", value_name = "ATTR", num_args = 1.., allow_hyphen_values = false)]
    pub af: Vec<String>,
    /// printf-style output: FMT (one conversion: %d %f %s %v %V %r %T %Y
    /// ...) applied to ATTR for each job; repeat it for more columns.
    #[arg(long, num_args = 2, value_names = ["FMT", "ATTR"], allow_hyphen_values = true)]
    pub format: Vec<String>,
    /// -af and -format in command-line order (filled in after parsing).
    #[arg(skip)]
    pub print: Vec<crate::printmask::PrintItem>,
    /// Print the job ads as JSON.
    #[arg(long)]
    pub json: bool,
}

const Q_EXIT_CODES: &str = "Exit status: 0 when every job analysed could run on some slot, 1 when one could not, 2 on an error.";

#[derive(Debug, Args)]
pub struct QArgs {
    /// Jobs (CLUSTER or CLUSTER.PROC) or owners to show.
    #[arg(value_name = "JOB|OWNER")]
    pub targets: Vec<String>,
    /// Only jobs matching this ClassAd expression.
    #[arg(long, value_name = "EXPR", allow_hyphen_values = true)]
    pub constraint: Option<String>,
    /// Every user's jobs, not only yours.
    #[arg(long)]
    pub allusers: bool,
    /// One line per job (ID OWNER SUBMITTED RUN_TIME ST PRI SIZE CMD).
    #[arg(long)]
    pub nobatch: bool,
    /// The batch view (the default).
    #[arg(long, conflicts_with = "nobatch")]
    pub batch: bool,
    /// Only held jobs, with their HoldReason.
    #[arg(long)]
    pub hold: bool,
    /// Only running jobs, with where they run.
    #[arg(long)]
    pub run: bool,
    /// Print whole job ads (`Name = expr` lines).
    #[arg(short = 'l', long = "long")]
    pub long: bool,
    /// Print these expressions' values, space separated, one line per job
    /// (`-af:jlhVrTY,tng` qualifiers as HTCondor's: j the job id first,
    /// l labels, h headings, V strings quoted, r unevaluated, T durations,
    /// Y dates, `,` commas, t tabs, n a newline after each, g a blank line
    /// between ads).
    #[arg(long = "af", alias = "autoformat", value_name = "ATTR", num_args = 1.., allow_hyphen_values = false)]
    pub af: Vec<String>,
    /// printf-style output: FMT (one conversion: %d %f %s %v %V %r %T %Y
    /// ...) applied to ATTR for each job; repeat it for more columns.
    #[arg(long, num_args = 2, value_names = ["FMT", "ATTR"], allow_hyphen_values = true)]
    pub format: Vec<String>,
    /// -af and -format in command-line order (filled in after parsing).
    #[arg(skip)]
    pub print: Vec<crate::printmask::PrintItem>,
    /// Print the job ads as JSON.
    #[arg(long)]
    pub json: bool,
    /// Print only the totals lines.
    #[arg(long)]
    pub totals: bool,
    /// Do not cut long values to the terminal's width (ferrocondor never
    /// cuts them, so this changes nothing).
    #[arg(long)]
    pub wide: bool,
    /// Analyse why the jobs do (not) match the slots.
    #[arg(long = "better-analyze", alias = "analyze")]
    pub better_analyze: bool,
    /// Read the job ads from FILE instead of a schedd.
    #[arg(long, value_name = "FILE")]
    pub jobads: Option<PathBuf>,
    /// Read the slot ads from FILE instead of a collector.
    #[arg(long, value_name = "FILE")]
    pub slotads: Option<PathBuf>,
    /// Evaluate at this time (epoch seconds) rather than now.
    #[arg(long, value_name = "SECONDS")]
    pub now: Option<i64>,
}

#[derive(Debug, Args)]
pub struct SimulateArgs {
    /// The scenario file (JSON).
    #[arg(value_name = "SCENARIO")]
    pub scenario: PathBuf,
    /// Print the report as JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Also write a self-contained HTML report with charts to FILE.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// The random seed (default: the scenario's).
    #[arg(long)]
    pub seed: Option<u64>,
}

#[derive(Debug, Args)]
pub struct SubmitArgs {
    /// The submit description file (`-` for standard input).
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Print the job ads instead of queueing them.
    #[arg(long = "dry-run")]
    pub dry_run: bool,
    /// Print the job ads as a JSON list of {attribute: expression} objects.
    #[arg(long)]
    pub json: bool,
    /// A submit command, as if written just before the first `queue` (repeatable).
    #[arg(
        short = 'a',
        long = "append",
        value_name = "LINE",
        allow_hyphen_values = true
    )]
    pub append: Vec<String>,
    /// Queue the jobs as the statement `queue ARGS` would (condor_submit's
    /// -queue), for a description without a queue statement: `-queue 3`,
    /// `-queue input in a, b, c`, `-queue name matching *.dat`. The
    /// arguments end at the next word that starts with `-`.
    #[arg(long, value_name = "ARGS", num_args = 1..)]
    pub queue: Vec<String>,
    /// Queue nothing; write the job ads to FILE (`-` for standard output)
    /// and say how many jobs a real submission would queue
    /// (condor_submit's `-dry-run FILE`).
    #[arg(long = "dry-run-to", value_name = "FILE")]
    pub dry_run_to: Option<PathBuf>,
    /// The jobs' batch name (JobBatchName), as `batch_name = NAME` would.
    #[arg(long = "batch-name", value_name = "NAME")]
    pub batch_name: Option<String>,
    /// The cluster number to give the jobs (the schedd assigns it).
    #[arg(long, default_value_t = 1)]
    pub cluster: i64,
    /// The first job's process number.
    #[arg(long, default_value_t = 0)]
    pub proc: i64,
    /// The submitting user (default: $USER).
    #[arg(long)]
    pub owner: Option<String>,
    /// The submit time, epoch seconds (default: now).
    #[arg(long, allow_negative_numbers = true)]
    pub qdate: Option<i64>,
}

const CONFIG_VAL_EXIT_CODES: &str = "\
Exit status:
  0  every name asked for is defined
  1  some name is not defined (\"Not defined: NAME\" on stderr)
  2  usage error, or the configuration is broken (the message says where)";

#[derive(Debug, Args)]
pub struct ConfigValArgs {
    /// Parameter names (for --dump: patterns, matched case-insensitively
    /// anywhere in the name).
    #[arg(value_name = "NAME")]
    pub names: Vec<String>,
    /// Also say where each value was defined and which definitions it overrides.
    #[arg(long, short = 'v')]
    pub verbose: bool,
    /// Print every parameter the configuration defines (or those matching NAME).
    #[arg(long)]
    pub dump: bool,
    /// With --dump: include HTCondor's built-in defaults too.
    #[arg(long, requires = "dump")]
    pub defaults: bool,
    /// Print values as written, without expanding macros.
    #[arg(long)]
    pub raw: bool,
    /// With --dump: expand the values (--dump prints them as written by default).
    #[arg(long, requires = "dump", conflicts_with = "raw")]
    pub expand: bool,
    /// Read the configuration as this daemon does (STARTD, SCHEDD, ...), so
    /// that STARTD.NAME definitions apply. Default: TOOL.
    #[arg(long, value_name = "SUBSYSTEM", default_value = "TOOL")]
    pub subsystem: String,
    /// The daemon's local name, for LOCALNAME.NAME definitions.
    #[arg(long = "local-name", value_name = "NAME")]
    pub local_name: Option<String>,
    /// Evaluate each value as a ClassAd expression against the local machine ad.
    #[arg(long)]
    pub evaluate: bool,
    /// Print one JSON object {NAME: value or null} with the expanded values.
    #[arg(long, conflicts_with_all = ["verbose", "dump", "evaluate"])]
    pub json: bool,
    /// List the configuration files read, in order.
    #[arg(long)]
    pub config: bool,
}

/// HTCondor's tools take long options after one dash; clap wants two.
/// The HTCondor tools this binary acts as when it is run through a link
/// of that name (as busybox does), and the command each one is.
pub const TOOLS: &[(&str, &str)] = &[
    ("condor_config_val", "config_val"),
    ("condor_drain", "drain"),
    ("condor_history", "history"),
    ("condor_hold", "hold"),
    ("condor_master", "master"),
    ("condor_q", "q"),
    ("condor_reconfig", "reconfig"),
    ("condor_release", "release"),
    ("condor_rm", "rm"),
    ("condor_status", "status"),
    ("condor_submit", "submit"),
    ("condor_token_create", "token create"),
    ("condor_token_fetch", "token fetch"),
    ("condor_token_list", "token list"),
    ("condor_userprio", "userprio"),
    ("condor_vacate", "vacate"),
    ("condor_vacate_job", "vacate_job"),
];

/// Run through a link named after an HTCondor tool (`condor_q`): the
/// command line as `ferrocondor q ...` would have it. Another `condor_*`
/// name is a tool ferrocondor does not have yet: the error says so.
pub fn as_tool(args: Vec<std::ffi::OsString>) -> Result<Vec<std::ffi::OsString>, String> {
    let Some(name) = args
        .first()
        .map(std::path::Path::new)
        .and_then(|p| p.file_name())
        .and_then(|n| n.to_str())
        .map(str::to_string)
    else {
        return Ok(args);
    };
    if !name.starts_with("condor_") {
        return Ok(args);
    }
    match TOOLS.iter().find(|(tool, _)| *tool == name) {
        Some((_, command)) => {
            // A tool may be a command and its subcommand ("token create").
            let mut out: Vec<std::ffi::OsString> = vec!["ferrocondor".into()];
            out.extend(command.split(' ').map(std::ffi::OsString::from));
            out.extend(args.into_iter().skip(1));
            Ok(out)
        }
        None => Err(format!(
            "{name} is not a ferrocondor tool yet; the tools it has are {}",
            TOOLS.iter().map(|(t, _)| *t).collect::<Vec<_>>().join(", ")
        )),
    }
}

/// Rewrites the forms `condor_config_val` users type. Arguments that are
/// not UTF-8 are passed on untouched, for clap to judge.
pub fn normalize_config_val(args: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    const LONG: &[&str] = &[
        "verbose",
        "dump",
        "raw",
        "subsystem",
        "subsys",
        "evaluate",
        "json",
        "config",
        "local-name",
        "defaults",
        "expand",
    ];
    let command = args.get(1).and_then(|a| a.to_str());
    let args = if matches!(command, Some("q" | "status" | "history")) {
        split_af_qualifiers(args)
    } else {
        args
    };
    let command = args.get(1).and_then(|a| a.to_str());
    if command == Some("q") {
        return single_dash(
            args,
            &[
                "better-analyze",
                "analyze",
                "jobads",
                "slotads",
                "constraint",
                "allusers",
                "nobatch",
                "batch",
                "hold",
                "run",
                "long",
                "af",
                "autoformat",
                "json",
                "totals",
                "format",
                "wide",
            ],
        );
    }
    if command == Some("submit") {
        // condor_submit's -dry-run takes a file; ferrocondor's --dry-run does not.
        let args = args
            .into_iter()
            .enumerate()
            .map(|(i, a)| {
                if i > 1 && a.to_str() == Some("-dry-run") {
                    "--dry-run-to".into()
                } else {
                    a
                }
            })
            .collect();
        return single_dash(args, &["batch-name", "append", "json", "queue"]);
    }
    if matches!(command, Some("rm" | "hold" | "release")) {
        return single_dash(args, &["constraint", "all", "reason"]);
    }
    if command == Some("vacate_job") {
        return single_dash(args, &["constraint", "all", "reason", "fast"]);
    }
    if command == Some("history") {
        return single_dash(
            args,
            &[
                "constraint",
                "limit",
                "match",
                "long",
                "af",
                "autoformat",
                "json",
                "format",
            ],
        );
    }
    if command == Some("status") {
        return single_dash(
            args,
            &[
                "constraint",
                "long",
                "af",
                "autoformat",
                "json",
                "compact",
                "total",
                "totals",
                "schedd",
                "submitters",
                "format",
                "avail",
                "claimed",
                "state",
                "run",
                "wide",
            ],
        );
    }
    if command == Some("vacate") {
        return single_dash(args, &["fast"]);
    }
    if command == Some("drain") {
        return single_dash(
            args,
            &[
                "graceful",
                "quick",
                "fast",
                "resume-on-completion",
                "start",
                "reason",
                "cancel",
            ],
        );
    }
    if command == Some("token") {
        return single_dash(
            args,
            &[
                "identity", "key", "lifetime", "authz", "token", "file", "dir", "state",
            ],
        );
    }
    if command == Some("userprio") {
        return single_dash(
            args,
            &["all", "allusers", "setfactor", "setprio", "resetusage"],
        );
    }
    if command != Some("config_val") {
        return args;
    }
    args.into_iter()
        .enumerate()
        .map(
            |(i, a)| match a.to_str().and_then(|s| s.strip_prefix('-')) {
                Some(rest) if i > 1 && !rest.starts_with('-') && LONG.contains(&rest) => {
                    let rest = if rest == "subsys" { "subsystem" } else { rest };
                    format!("--{rest}").into()
                }
                _ => a,
            },
        )
        .collect()
}

#[derive(Debug, Args)]
#[command(after_help = EXIT_CODES)]
pub struct ClassadArgs {
    /// Evaluate as if the time were SECONDS since the epoch (default: the real clock).
    #[arg(
        long,
        global = true,
        value_name = "SECONDS",
        allow_negative_numbers = true
    )]
    pub now: Option<i64>,

    #[command(subcommand)]
    pub command: ClassadCommand,
}

#[derive(Debug, Subcommand)]
pub enum ClassadCommand {
    /// Evaluate an expression and print its value as a ClassAd literal.
    ///
    /// Unscoped names are looked up in the --my ad, then (as HTCondor does) in
    /// the --target ad; MY.x and TARGET.x name one side. Ad files may be in old
    /// syntax (`Name = expr` lines, as `condor_q -l` prints) or new syntax
    /// (`[ Name = expr; ... ]`).
    Eval {
        /// The expression, e.g. 'Memory >= 1024 && OpSys == "LINUX"'.
        #[arg(value_name = "EXPR", allow_hyphen_values = true)]
        expr: String,
        /// The ad the expression belongs to (MY).
        #[arg(long, value_name = "AD_FILE")]
        my: Option<PathBuf>,
        /// The other ad of a match (TARGET).
        #[arg(long, value_name = "AD_FILE")]
        target: Option<PathBuf>,
    },
    /// Match a job ad against a machine ad and explain the result.
    ///
    /// Prints whether the ads match (each side's Requirements true against the
    /// other), each side's Requirements and Rank, and every top-level `&&`
    /// clause of a Requirements that is not true, with its value.
    Match {
        /// The job ad (old or new syntax).
        #[arg(value_name = "JOB_AD")]
        job: PathBuf,
        /// The machine (slot) ad (old or new syntax).
        #[arg(value_name = "MACHINE_AD")]
        machine: PathBuf,
    },
    /// Print an ad in old syntax, new syntax or HTCondor's JSON form.
    ///
    /// Reads one ad (old or new syntax) and prints it the way HTCondor would:
    /// `old` as `condor_q -l` (`Name = expr` lines), `new` as one `[ ... ]`,
    /// `json` as `condor_q -json` prints one ad.
    Print {
        /// The ad (old or new syntax).
        #[arg(value_name = "AD_FILE")]
        ad: PathBuf,
        /// The form to print.
        #[arg(long, value_enum, default_value = "old")]
        format: AdFormat,
    },
    /// Run HTCondor oracle cases (JSON lines) and print ferrocondor's answers.
    ///
    /// Each input line is a case in the oracle's input format; each output line
    /// is the case with the fields ferrocondor computes. With --check, compare
    /// with the answers already in the file instead and report the differences.
    Vectors {
        /// Which kind of case the file holds.
        #[arg(value_enum)]
        mode: VectorMode,
        /// The cases (JSON lines); standard input if absent or `-`.
        #[arg(value_name = "FILE")]
        file: Option<PathBuf>,
        /// Compare with the answers in the file; print `N passed, N failed`.
        #[arg(long)]
        check: bool,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum AdFormat {
    /// `Name = expr` lines, as `condor_q -l` prints.
    Old,
    /// One line, `[ Name = expr; ... ]`.
    New,
    /// HTCondor's JSON form, as `condor_q -json` prints one ad.
    Json,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum VectorMode {
    /// Expressions: parse, unparse, value (classad_expr.jsonl).
    Expr,
    /// Whole ads in old or new syntax (classad_ads.jsonl).
    Ad,
    /// Symmetric matches: Requirements and Rank of both sides (classad_match.jsonl).
    Match,
}

impl VectorMode {
    /// The mode's name in `classad::vectors`.
    pub fn name(self) -> &'static str {
        match self {
            VectorMode::Expr => "expr",
            VectorMode::Ad => "ad",
            VectorMode::Match => "match",
        }
    }
}

/// `-af:lh` (or `-autoformat:lh`, `--af:lh`) as `--af :lh`: the
/// qualifiers become the option's first value, which no attribute name or
/// expression can be (see [`print_items`]).
fn split_af_qualifiers(args: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    let mut out = Vec::with_capacity(args.len() + 1);
    for (i, a) in args.into_iter().enumerate() {
        let text = a.to_str().map(str::to_string);
        let split = text.as_deref().filter(|_| i > 1).and_then(|t| {
            let rest = t.strip_prefix("--").or_else(|| t.strip_prefix('-'))?;
            let (name, quals) = rest.split_once(':')?;
            matches!(name, "af" | "autoformat").then(|| quals.to_string())
        });
        match split {
            Some(quals) => {
                out.push("--af".into());
                out.push(format!(":{quals}").into());
            }
            None => out.push(a),
        }
    }
    out
}

/// The `-af` and `-format` options of a parsed `q`, `status` or
/// `history`, in the order they were given.
pub fn print_items(m: &clap::ArgMatches) -> Vec<crate::printmask::PrintItem> {
    use crate::printmask::PrintItem;
    let mut items: Vec<(usize, PrintItem)> = Vec::new();
    let ids =
        |name: &str| -> Vec<usize> { m.indices_of(name).map(|i| i.collect()).unwrap_or_default() };
    if let Ok(Some(occurrences)) = m.try_get_occurrences::<String>("af") {
        let indices = ids("af");
        let mut k = 0;
        for occ in occurrences {
            let values: Vec<String> = occ.cloned().collect();
            let at = indices.get(k).copied().unwrap_or(usize::MAX);
            k += values.len();
            let (qualifiers, attrs) = match values.split_first() {
                Some((q, rest)) if q.starts_with(':') => (q[1..].to_string(), rest.to_vec()),
                _ => (String::new(), values),
            };
            items.push((at, PrintItem::Af { qualifiers, attrs }));
        }
    }
    if let Ok(Some(occurrences)) = m.try_get_occurrences::<String>("format") {
        let indices = ids("format");
        for (n, occ) in occurrences.enumerate() {
            let values: Vec<String> = occ.cloned().collect();
            if let [format, attr] = values.as_slice() {
                items.push((
                    indices.get(2 * n).copied().unwrap_or(usize::MAX),
                    PrintItem::Format {
                        format: format.clone(),
                        attr: attr.clone(),
                    },
                ));
            }
        }
    }
    items.sort_by_key(|(at, _)| *at);
    items.into_iter().map(|(_, item)| item).collect()
}

/// HTCondor's single-dash long options (`-jobads`) as clap's `--jobads`.
fn single_dash(args: Vec<std::ffi::OsString>, long: &[&str]) -> Vec<std::ffi::OsString> {
    args.into_iter()
        .enumerate()
        .map(
            |(i, a)| match a.to_str().and_then(|s| s.strip_prefix('-')) {
                Some(rest) if i > 1 && !rest.starts_with('-') && long.contains(&rest) => {
                    format!("--{rest}").into()
                }
                _ => a,
            },
        )
        .collect()
}

#[derive(Debug, Args)]
pub struct TokenArgs {
    #[command(subcommand)]
    pub command: TokenCommand,
}

#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Sign a token with the pool's key (condor_token_create): printed,
    /// or written to the token directory (--token NAME) or a file (--file).
    ///
    /// Only who can read the signing key may (root or the pool's owner).
    /// The key is SEC_TOKEN_POOL_SIGNING_KEY_FILE, or --key NAME in
    /// SEC_PASSWORD_DIRECTORY; without configuration, under the pool's
    /// state directory (<state>/passwords.d/POOL).
    Create(TokenCreateArgs),
    /// Make a signing key (64 random bytes, mode 0600): the pool key, or
    /// --key NAME. HTCondor makes the pool key when it is installed; a
    /// key already there is never replaced.
    #[command(name = "create-key")]
    CreateKey {
        /// The key's name (default POOL, the pool signing key).
        #[arg(long, value_name = "NAME")]
        key: Option<String>,
        /// The state directory (default: $FERROCONDOR_STATE, else ~/.local/state/ferrocondor).
        #[arg(long, value_name = "DIR")]
        state: Option<PathBuf>,
    },
    /// The tokens this user's clients would send, with their claims
    /// (condor_token_list).
    List {
        /// Read this directory instead of SEC_TOKEN_DIRECTORY (else ~/.condor/tokens.d).
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
    /// Ask a running pool for a token (condor_token_fetch).
    Fetch(TokenFetchArgs),
}

#[derive(Debug, Args)]
pub struct TokenCreateArgs {
    /// Who the token says its holder is (user@domain).
    #[arg(long, value_name = "USER@DOMAIN")]
    pub identity: String,
    /// The signing key's name (default POOL).
    #[arg(long, value_name = "NAME")]
    pub key: Option<String>,
    /// Seconds the token is valid; without it, it never expires.
    #[arg(long, value_name = "SECONDS")]
    pub lifetime: Option<i64>,
    /// Limit the token to an authorization level (READ, WRITE, DAEMON,
    /// ADVERTISE_STARTD, ...); may be given more than once.
    #[arg(long, value_name = "LEVEL")]
    pub authz: Vec<String>,
    /// Write the token to this file name in the token directory.
    #[arg(long, value_name = "NAME", conflicts_with = "file")]
    pub token: Option<String>,
    /// Write the token to this file.
    #[arg(long, value_name = "PATH")]
    pub file: Option<PathBuf>,
    /// The state directory (default: $FERROCONDOR_STATE, else ~/.local/state/ferrocondor).
    #[arg(long, value_name = "DIR")]
    pub state: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct TokenFetchArgs {
    /// Limit the token to an authorization level; may be repeated.
    #[arg(long, value_name = "LEVEL")]
    pub authz: Vec<String>,
    /// Seconds the token is valid.
    #[arg(long, value_name = "SECONDS")]
    pub lifetime: Option<i64>,
    /// Write the token to this file name in the token directory.
    #[arg(long, value_name = "NAME", conflicts_with = "file")]
    pub token: Option<String>,
    /// Write the token to this file.
    #[arg(long, value_name = "PATH")]
    pub file: Option<PathBuf>,
}
