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
    /// SCHEDD, STARTD or KBDD); `ferrocondor master` starts them this way.
    Daemon {
        /// COLLECTOR, NEGOTIATOR, SCHEDD, STARTD or KBDD.
        role: String,
        /// The state directory (default: $FERROCONDOR_STATE, else ~/.local/state/ferrocondor).
        #[arg(long, value_name = "DIR")]
        state: Option<PathBuf>,
    },
    /// The keyboard daemon, as HTCondor's condor_kbdd: every 5 s it looks
    /// at the graphical sessions' idle time (logind) and the input devices
    /// (/dev/input), and tells this host's startd (X_EVENT_NOTIFICATION)
    /// when someone used them, for KeyboardIdle and ConsoleIdle.
    /// `ferrocondor master` runs it when DAEMON_LIST names KBDD.
    Kbdd {
        /// The state directory whose startd it tells (default:
        /// $FERROCONDOR_STATE, else ~/.local/state/ferrocondor).
        #[arg(long, value_name = "DIR")]
        state: Option<PathBuf>,
        /// Look once, then exit (HTCondor's -once).
        #[arg(long)]
        once: bool,
        /// Tell the startd the keyboard was used, whatever is seen (with
        /// --once: HTCondor's -once:true).
        #[arg(long)]
        notify: bool,
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
    /// The pool's history from a view collector (KEEP_POOL_HISTORY), as
    /// HTCondor's condor_stats asks for it.
    ///
    /// -resourcequery NAME (a slot's keyboard idle time, load and state
    /// over the range), -resourcelist, -userquery USER@DOMAIN/HOST (its
    /// running and idle jobs), -userlist, -usergroupquery USER (all access
    /// points together; `Total` the pool's), -usergrouplist,
    /// -resgroupquery ARCH/OPSYS or Total (slots by state), -resgrouplist;
    /// or -html, a page plotting the pool's slots by state and each
    /// user's jobs. The range: -lastday (the default), -lastweek,
    /// -lastmonth, -lasthours H, -from M D Y [-to M D Y]. -orgformat
    /// prints the samples as stored (epoch times); -pool HOST[:PORT] names
    /// the view collector (else CONDOR_VIEW_HOST, else COLLECTOR_HOST);
    /// -f FILE writes the answer there.
    #[command(disable_help_flag = true)]
    Stats(StatsArgs),
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
pub struct StatsArgs {
    /// condor_stats' options, as it takes them (see above).
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "OPTION"
    )]
    pub args: Vec<String>,
}

#[derive(Debug, Args)]
pub struct StatusArgs {
    /// Slots (slot1@host) or machines (host) to show.
    #[arg(value_name = "NAME")]
    pub targets: Vec<String>,
    /// The pool's central manager (`host[:port]`, port 9618 if none), in
    /// place of COLLECTOR_HOST.
    #[arg(long, value_name = "HOST[:PORT]")]
    pub pool: Option<String>,
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
    /// Every ad the collector holds, of any type (MyType TargetType Name):
    /// the daemons' ads, the defrag daemon's among them.
    #[arg(long, conflicts_with_all = ["schedd", "submitters", "run"])]
    pub any: bool,
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
    /// Drain only if this expression is true in every slot's ad (CheckExpr).
    #[arg(long, value_name = "EXPR", allow_hyphen_values = true)]
    pub check: Option<String>,
    /// Stop draining: the slots take jobs again.
    #[arg(long, conflicts_with_all = ["graceful", "quick", "fast", "resume_on_completion", "start", "reason", "check"])]
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
    /// A pool of many hosts instead: a central manager, an access point
    /// and N execute hosts of `--slots` slots each, each its own master
    /// on a host of network namespaces (needs root; the pool runs as
    /// nobody). The last line is `jobs_per_second=X hosts=N slots=M`.
    #[arg(long, value_name = "N", conflicts_with_all = ["local_socket", "submit_only"])]
    pub hosts: Option<usize>,
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

/// Which pool and which access point a tool asks, as HTCondor's tools'
/// `-pool` and `-name` say (else COLLECTOR_HOST and the local schedd).
#[derive(Debug, Default, Args)]
pub struct Locate {
    /// The pool's central manager (`host[:port]`, port 9618 if none), in
    /// place of COLLECTOR_HOST.
    #[arg(long, value_name = "HOST[:PORT]")]
    pub pool: Option<String>,
    /// The access point (its schedd's Name at the collector), in place of
    /// the local one.
    #[arg(long, value_name = "SCHEDD")]
    pub name: Option<String>,
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
    #[command(flatten)]
    pub locate: Locate,
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
    #[command(flatten)]
    pub locate: Locate,
}

const Q_EXIT_CODES: &str = "Exit status: 0 when every job analysed could run on some slot, 1 when one could not, 2 on an error.";

#[derive(Debug, Args)]
pub struct QArgs {
    /// Jobs (CLUSTER or CLUSTER.PROC) or owners to show.
    #[arg(value_name = "JOB|OWNER")]
    pub targets: Vec<String>,
    #[command(flatten)]
    pub locate: Locate,
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
    /// The late-materialization factories (max_materialize, max_idle):
    /// each factory cluster's limit, jobs present, running, idle, held,
    /// next ProcId and mode, as condor_q -factory.
    #[arg(long)]
    pub factory: bool,
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
    #[command(flatten)]
    pub locate: Locate,
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
    /// Submit the cluster as a late-materialization factory even without
    /// max_materialize or max_idle: the schedd makes its jobs (all at
    /// once, up to MAX_MATERIALIZED_JOBS_PER_CLUSTER), as condor_submit
    /// -factory.
    #[arg(long)]
    pub factory: bool,
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
    ("condor_stats", "stats"),
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

/// Rewrites the forms HTCondor's tools take into clap's: an option after
/// one dash, abbreviated as far as HTCondor allows (`-const`, `-tot`,
/// `-nob`), becomes ferrocondor's `--constraint`, `--totals`,
/// `--nobatch`; `-af:lh` becomes `--af :lh`. An option HTCondor would have
/// taken but ferrocondor does not have, or a word HTCondor calls
/// ambiguous, is refused here with the message to print. Arguments that
/// are not UTF-8 are passed on untouched, for clap to judge.
pub fn normalize_config_val(
    args: Vec<std::ffi::OsString>,
) -> Result<Vec<std::ffi::OsString>, String> {
    let command = args.get(1).and_then(|a| a.to_str()).map(str::to_string);
    let args = match command.as_deref().and_then(tool_options) {
        Some((table, extras)) => {
            abbreviations(args, command.as_deref().unwrap_or(""), table, extras)?
        }
        None => args,
    };
    let args = if matches!(command.as_deref(), Some("q" | "status" | "history")) {
        split_af_qualifiers(args)
    } else {
        args
    };
    if command.as_deref() == Some("token") {
        return Ok(single_dash(
            args,
            &[
                "identity", "key", "lifetime", "authz", "token", "file", "dir", "state",
            ],
        ));
    }
    Ok(args)
}

/// What an option of an HTCondor tool becomes here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Becomes {
    /// ferrocondor's long option of this name, followed by this many values.
    Arg(&'static str, usize),
    /// An option of HTCondor's that ferrocondor does not have yet.
    Missing,
    /// A word HTCondor refuses as ambiguous, naming these options.
    Ambiguous(&'static [&'static str]),
}

/// One option of an HTCondor tool, as the tool's argument loop tests for
/// it: `is_dash_arg_prefix(arg, name, min)` (`colon`: the `_colon_`
/// form, `-name:qualifiers`). A word is taken by the first option of its
/// table it is a prefix of, at least `min` characters long, as HTCondor's
/// `if ... else if` chain takes it; `--name` must be whole.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Abbrev {
    pub name: &'static str,
    pub min: usize,
    pub colon: bool,
    pub becomes: Becomes,
}

/// An option ferrocondor has: `name` at least `min` long is `--to`, with `values` values.
const fn to(name: &'static str, min: usize, to: &'static str, values: usize) -> Abbrev {
    Abbrev {
        name,
        min: if min == 0 { 1 } else { min },
        colon: false,
        becomes: Becomes::Arg(to, values),
    }
}

/// An option HTCondor has and ferrocondor does not yet. A `min` of 0
/// (HTCondor's default) takes any prefix.
const fn no(name: &'static str, min: usize) -> Abbrev {
    Abbrev {
        name,
        min: if min == 0 { 1 } else { min },
        colon: false,
        becomes: Becomes::Missing,
    }
}

/// A word HTCondor takes only whole (a `min` of -1 there).
const fn whole(name: &'static str) -> Abbrev {
    no(name, name.len())
}

/// A word HTCondor refuses as ambiguous between `choices`.
const fn ambiguous(name: &'static str, choices: &'static [&'static str]) -> Abbrev {
    Abbrev {
        name,
        min: name.len(),
        colon: false,
        becomes: Becomes::Ambiguous(choices),
    }
}

impl Abbrev {
    /// The `-name:qualifiers` form is taken too.
    const fn colon(self) -> Abbrev {
        Abbrev {
            colon: true,
            ..self
        }
    }

    /// Whether HTCondor takes `word` (after its one dash) as this option,
    /// and the qualifiers after a colon.
    fn takes<'w>(&self, word: &'w str) -> Option<Option<&'w str>> {
        let (stem, qualifiers) = match word.split_once(':') {
            Some((stem, q)) if self.colon => (stem, Some(q)),
            _ => (word, None),
        };
        (!stem.is_empty() && stem.len() >= self.min && self.name.starts_with(stem))
            .then_some(qualifiers)
    }
}

/// The first option of `table` HTCondor takes `word` (`-const`) as, with
/// the qualifiers after a colon; None for `--word`, which goes to clap.
pub fn abbreviation<'t, 'w>(
    table: &'t [Abbrev],
    word: &'w str,
) -> Option<(&'t Abbrev, Option<&'w str>)> {
    let rest = word.strip_prefix('-').filter(|r| !r.starts_with('-'))?;
    table
        .iter()
        .find_map(|o| o.takes(rest).map(|quals| (o, quals)))
}

/// The message for an option ferrocondor does not have yet.
pub fn not_supported(command: &str, option: &str) -> String {
    format!(
        "error: {command}: the option {option} is not supported by ferrocondor yet \
         (`ferrocondor {command} --help` lists the ones that are)"
    )
}

/// The message for a word no option of the tool's is named by (too
/// short, or no prefix of one), which HTCondor's tool refuses too.
pub fn unrecognized(command: &str, word: &str) -> String {
    format!(
        "error: {command}: unrecognized option {word}, as HTCondor's condor_{command} \
         refuses it: too short or no option's name (`ferrocondor {command} --help` lists \
         the options)"
    )
}

/// Rewrites one tool's single-dash options through its table; `extras`
/// are ferrocondor's own single-dash options (whole words only).
fn abbreviations(
    args: Vec<std::ffi::OsString>,
    command: &str,
    table: &[Abbrev],
    extras: &[&str],
) -> Result<Vec<std::ffi::OsString>, String> {
    let mut out = Vec::with_capacity(args.len());
    let mut values: usize = 0;
    let mut verbatim = false;
    for (i, a) in args.into_iter().enumerate() {
        if i < 2 || verbatim || values > 0 {
            values = if i < 2 { 0 } else { values.saturating_sub(1) };
            out.push(a);
            continue;
        }
        let Some(word) = a.to_str().map(str::to_string) else {
            out.push(a);
            continue;
        };
        if word == "--" {
            verbatim = true;
            out.push(a);
            continue;
        }
        match abbreviation(table, &word) {
            Some((opt, qualifiers)) => match (opt.becomes, qualifiers) {
                (Becomes::Arg("af", n), Some(q)) => {
                    values = n;
                    out.push(format!("--af:{q}").into());
                }
                (Becomes::Arg(_, _), Some(_)) => return Err(not_supported(command, &word)),
                (Becomes::Arg(to, n), None) => {
                    values = n;
                    out.push(format!("--{to}").into());
                }
                (Becomes::Missing, qualifiers) => {
                    let colon = qualifiers.map(|q| format!(":{q}")).unwrap_or_default();
                    return Err(not_supported(command, &format!("-{}{colon}", opt.name)));
                }
                (Becomes::Ambiguous(choices), _) => {
                    let choices: Vec<String> = choices.iter().map(|c| format!("-{c}")).collect();
                    return Err(format!(
                        "error: {command}: {word} is ambiguous, as HTCondor's condor_{command} \
                         says: give {}",
                        choices.join(" or ")
                    ));
                }
            },
            None => match word.strip_prefix('-') {
                Some(rest) if !rest.starts_with('-') && extras.contains(&rest) => {
                    out.push(format!("--{rest}").into())
                }
                // Too short, or no option's prefix: HTCondor refuses it.
                Some(rest) if rest.starts_with(|c: char| c.is_ascii_alphabetic()) => {
                    return Err(unrecognized(command, &word))
                }
                _ => out.push(a),
            },
        }
    }
    Ok(out)
}

/// The table of a command's HTCondor options, and ferrocondor's own
/// single-dash options for it.
fn tool_options(command: &str) -> Option<(&'static [Abbrev], &'static [&'static str])> {
    Some(match command {
        "q" => (Q_OPTIONS, &[]),
        "status" => (STATUS_OPTIONS, &[]),
        "history" => (HISTORY_OPTIONS, &[]),
        "rm" => (RM_OPTIONS, &[]),
        "hold" | "release" => (HOLD_OPTIONS, &[]),
        "vacate_job" => (VACATE_JOB_OPTIONS, &[]),
        "vacate" => (VACATE_OPTIONS, &[]),
        "drain" => (DRAIN_OPTIONS, &[]),
        "userprio" => (USERPRIO_OPTIONS, &[]),
        "config_val" => (CONFIG_VAL_OPTIONS, &["json", "defaults"]),
        "submit" => (SUBMIT_OPTIONS, &["json"]),
        _ => return None,
    })
}

// The tables below follow the argument loops of HTCondor 25.14.0
// (htcondor/htcondor commit 7491a145f64a1c2393ed0933375874344fa44f9f):
// each names the file, and lists the options in the order the loop tests
// them, with the minimum length it gives each (`is_dash_arg_prefix(arg,
// "constraint", 1)`). Read there, not copied.

/// condor_q: src/condor_q.V6/queue.cpp, processCommandLineArguments.
pub const Q_OPTIONS: &[Abbrev] = &[
    to("wide", 1, "wide", 0).colon(),
    to("long", 1, "long", 0).colon(),
    no("xml", 3),
    to("json", 2, "json", 0),
    no("limit", 3),
    to("pool", 1, "pool", 1),
    no("D", 1),
    to("name", 1, "name", 1),
    no("direct", 1),
    no("submitter", 1),
    to("constraint", 1, "constraint", 1),
    no("slotconstraint", 5),
    no("mconstraint", 2),
    no("machine", 2),
    no("address", 1),
    no("autocluster", 2).colon(),
    no("group-by", 2).colon(),
    to("factory", 4, "factory", 0).colon(),
    no("jobset", 5).colon(),
    no("attributes", 2),
    to("format", 1, "format", 2),
    no("aaf", 3).colon(),
    to("autoformat", 5, "af", 0).colon(),
    to("af", 2, "af", 0).colon(),
    no("print-format", 2).colon(),
    no("global", 1),
    to("allusers", 2, "allusers", 0),
    to("all-users", 2, "allusers", 0),
    no("schedd-constraint", 5),
    to("help", 1, "help", 0),
    to("better-analyze", 2, "better-analyze", 0).colon(),
    to("better-analyse", 2, "better-analyze", 0).colon(),
    to("analyze", 2, "better-analyze", 0).colon(),
    to("analyse", 2, "better-analyze", 0).colon(),
    no("reverse-analyze", 3).colon(),
    no("unmatchable", 5).colon(),
    no("dry-run", 3).colon(),
    no("capture-raw-results", 7).colon(),
    no("verbose", 4),
    to("run", 1, "run", 0),
    to("hold", 2, "hold", 0).colon(),
    to("held", 2, "hold", 0).colon(),
    no("hold-codes", 6).colon(),
    no("holdcodes", 5).colon(),
    no("idle", 3),
    no("cputime", 2),
    no("currentrun", 3),
    no("cumulative-time", 3),
    no("grid", 2).colon(),
    no("debug", 3).colon(),
    no("io", 2),
    no("dag", 2),
    to("batch", 2, "batch", 0).colon(),
    no("progress", 3).colon(),
    to("nobatch", 3, "nobatch", 0),
    to("totals", 3, "totals", 0),
    no("expert", 1),
    no("userlog", 1),
    to("jobads", 1, "jobads", 1).colon(),
    to("slotads", 1, "slotads", 1).colon(),
    no("userprios", 5).colon(),
    no("nouserprios", 7).colon(),
    no("version", 1),
    no("profile", 4).colon(),
    no("stream-results", 2),
];

/// condor_status: src/condor_status.V6/status.cpp, firstPass.
pub const STATUS_OPTIONS: &[Abbrev] = &[
    to("avail", 2, "avail", 0),
    to("pool", 1, "pool", 1),
    no("ads", 2).colon(),
    to("format", 1, "format", 2),
    to("autoformat", 5, "af", 0).colon(),
    to("af", 2, "af", 0).colon(),
    no("aaf", 3).colon(),
    no("print-format", 2).colon(),
    to("wide", 3, "wide", 0).colon(),
    no("natural", 3).colon(),
    no("target", 4),
    to("constraint", 3, "constraint", 1),
    no("annex-slots", 5),
    no("annex-name", 10),
    no("direct", 3),
    no("diagnose", 3).colon(),
    no("debug", 2).colon(),
    no("defrag", 3),
    to("help", 1, "help", 0),
    no("limit", 2),
    to("long", 1, "long", 0).colon(),
    no("xml", 1),
    to("json", 2, "json", 0),
    no("group-by", 5),
    no("attributes", 2),
    to("claimed", 2, "claimed", 0),
    no("data", 2),
    to("run", 1, "run", 0),
    no("cod", 3),
    no("gpus", 3),
    no("java", 1),
    no("absent", 2),
    no("offline", 2),
    no("merge", 5),
    no("vm", 2),
    no("slots", 2),
    to("compact", 3, "compact", 0),
    no("nocompact", 5),
    no("server", 2),
    to("state", 4, "state", 0),
    no("broken", 4),
    no("lvm", 3).colon(),
    no("healthy", 4).colon(),
    no("snapshot", 4).colon(),
    no("statistics", 5),
    no("startd", 4),
    to("schedd", 2, "schedd", 0),
    no("grid", 1),
    no("subsystem", 4),
    no("multiple", 4).colon(),
    no("license", 2),
    no("storage", 3),
    no("negotiator", 1),
    no("generic", 2),
    to("any", 2, "any", 0),
    no("sort", 2),
    to("submitters", 4, "submitters", 0),
    no("master", 1),
    no("collector", 3),
    no("world", 1),
    no("ckptsrvr", 2),
    to("totals", 1, "total", 0),
    no("expert", 1),
    no("version", 3),
];

/// condor_history: src/condor_tools/history.cpp, main's argument loop.
pub const HISTORY_OPTIONS: &[Abbrev] = &[
    to("long", 1, "long", 0),
    no("xml", 3),
    no("jsonl", 5),
    to("json", 4, "json", 0),
    no("backwards", 1),
    no("nobackwards", 3),
    no("forwards", 4),
    no("wide", 1).colon(),
    to("match", 1, "limit", 1),
    to("limit", 3, "limit", 1),
    no("scanlimit", 4),
    no("file", 2),
    no("userlog", 1),
    no("local", 2),
    no("startd", 3),
    no("schedd", 3),
    no("stream-results", 6).colon(),
    whole("inherit"),
    no("attributes", 2),
    to("help", 1, "help", 0),
    to("format", 1, "format", 2),
    to("af", 2, "af", 0).colon(),
    to("autoformat", 5, "af", 0).colon(),
    no("print-format", 2).colon(),
    no("daemon", 3).colon(),
    no("epochs", 2).colon(),
    no("transfer-history", 2).colon(),
    no("type", 2),
    no("directory", 3),
    no("search", 3),
    to("constraint", 1, "constraint", 1),
    no("since", 4),
    no("completedsince", 3),
    no("extract", 2),
    no("debug", 3).colon(),
    no("diagnostic", 4),
    no("no-librarian", 12),
    to("name", 1, "name", 1),
    to("pool", 1, "pool", 1),
];

/// condor_rm, condor_hold, condor_release and condor_vacate_job:
/// src/condor_rm.V6/rm.cpp (one loop; -forcex takes one letter in
/// condor_rm and two elsewhere, -fast one in condor_vacate_job).
const fn act_options(forcex: usize, fast: Abbrev) -> [Abbrev; 17] {
    [
        no("debug", 1).colon(),
        no("long", 1),
        no("totals", 3),
        to("constraint", 1, "constraint", 1),
        to("all", 1, "all", 0),
        no("held", 3),
        no("hold", 3),
        no("addr", 2),
        to("reason", 1, "reason", 1),
        no("subcode", 1),
        no("forcex", forcex),
        no("transfer", 2),
        fast,
        to("name", 1, "name", 1),
        to("pool", 1, "pool", 1),
        no("version", 1),
        to("help", 1, "help", 0),
    ]
}

/// condor_rm's options (see [`act_options`]).
pub const RM_OPTIONS: &[Abbrev] = &act_options(1, no("fast", 2));
/// condor_hold's and condor_release's options (see [`act_options`]).
pub const HOLD_OPTIONS: &[Abbrev] = &act_options(2, no("fast", 2));
/// condor_vacate_job's options (see [`act_options`]).
pub const VACATE_JOB_OPTIONS: &[Abbrev] = &act_options(2, to("fast", 1, "fast", 0));

/// condor_vacate: src/condor_tools/tool.cpp, main's option loop (the
/// -drain options are condor_off's and the like's only).
pub const VACATE_OPTIONS: &[Abbrev] = &[
    no("version", 0),
    to("help", 0, "help", 0),
    no("peaceful", 2),
    no("pool", 1),
    whole("preen"),
    no("full", 2),
    to("fast", 2, "fast", 0),
    no("force-graceful", 2),
    ambiguous("f", &["full", "fast"]),
    no("debug", 1).colon(),
    no("daemon", 2),
    no("exec", 2),
    no("graceful", 1),
    no("addr", 2),
    no("all", 2),
    ambiguous("a", &["addr", "all"]),
    no("name", 2),
    no("negotiator", 2),
    ambiguous("n", &["name", "negotiator"]),
    no("master", 1),
    no("cmd", 2),
    no("constraint", 3),
    no("collector", 3),
    ambiguous("co", &["collector", "constraint"]),
    no("kbdd", 1),
    no("schedd", 2),
    no("startd", 2),
    no("subsystem", 2),
    ambiguous("s", &["subsystem", "startd", "schedd"]),
];

/// condor_drain: src/condor_tools/drain.cpp, main's argument loop.
pub const DRAIN_OPTIONS: &[Abbrev] = &[
    to("help", 1, "help", 0),
    no("version", 1),
    no("debug", 3).colon(),
    no("verbose", 4),
    no("pool", 1),
    to("cancel", 1, "cancel", 0),
    to("fast", 1, "fast", 0),
    to("quick", 1, "quick", 0),
    to("graceful", 1, "graceful", 0),
    to("resume-on-completion", 1, "resume-on-completion", 0),
    no("exit-on-completion", 2),
    no("restart-on-completion", 4),
    no("reconfig-on-completion", 3),
    to("reason", 3, "reason", 1),
    no("request-id", 3),
    to("check", 2, "check", 1),
    to("start", 5, "start", 1),
];

/// condor_userprio: src/condor_tools/user_prio.cpp, main's argument loop
/// (IsArg without a length takes any prefix; the first in order wins).
pub const USERPRIO_OPTIONS: &[Abbrev] = &[
    to("setprio", 1, "setprio", 2),
    to("setfactor", 1, "setfactor", 2),
    no("setfloor", 0),
    no("setceiling", 0),
    no("duration", 0),
    no("cancelceilinglease", 0),
    no("cancelfloorlease", 0),
    no("cancelfactorlease", 0),
    no("setbegin", 0),
    no("setaccum", 0),
    no("setlast", 0),
    to("resetusage", 1, "resetusage", 1),
    no("delete", 3),
    no("resetall", 0),
    no("long", 1),
    no("constraint", 1),
    no("legacy", 3),
    no("modular", 3),
    no("af", 2).colon(),
    no("autoformat", 5).colon(),
    no("debug", 1).colon(),
    no("hierarchical", 2),
    no("heir", 0),
    no("flat", 2),
    no("grouprollup", 0),
    no("grouporder", 0),
    no("quotas", 1),
    no("surplus", 0),
    no("sortkey", 2),
    to("all", 1, "all", 0),
    no("most", 2),
    no("groupid", 0),
    no("order", 0),
    no("activefrom", 0),
    to("allusers", 1, "allusers", 0),
    no("usage", 2),
    no("priority", 4),
    no("getreslist", 6),
    no("inputfile", 2),
    no("pool", 1),
    no("name", 0),
    no("collector", 3),
    no("negotiator", 3),
];

/// condor_config_val: src/condor_tools/config_val.cpp, main's argument
/// loop (ferrocondor's -json and -defaults are its own, whole words only).
pub const CONFIG_VAL_OPTIONS: &[Abbrev] = &[
    no("name", 1),
    no("address", 1),
    no("pool", 1),
    to("local-name", 2, "local-name", 1),
    to("subsystem", 3, "subsystem", 1),
    no("owner", 1),
    no("tilde", 1),
    no("master", 2),
    no("schedd", 2),
    no("startd", 2),
    no("collector", 3),
    no("negotiator", 3),
    no("set", 2),
    no("unset", 3),
    no("rset", 3),
    no("runset", 5),
    no("mixedcase", 2),
    no("diagnostic", 4),
    to("raw", 3, "raw", 0),
    no("default", 3),
    to("config", 2, "config", 0),
    no("reconfig", 5),
    no("swap", 4),
    to("verbose", 1, "verbose", 0).colon(),
    to("dump", 1, "dump", 0),
    no("trace", 2),
    no("stats", 4).colon(),
    no("info", 3).colon(),
    to("expanded", 2, "expand", 0),
    no("macro", 3).colon(),
    to("evaluate", 2, "evaluate", 0),
    no("unused", 4),
    no("used", 2),
    no("summary", 3).colon(),
    no("writeconfig", 3).colon(),
    no("root-config", 4),
    no("debug", 2).colon(),
    to("help", 2, "help", 0),
    no("version", 3),
    whole("check-if"),
    whole("profile").colon(),
];

/// condor_submit: src/condor_submit.V6/submit.cpp, main's argument loop
/// (-dry-run FILE is ferrocondor's --dry-run-to FILE).
pub const SUBMIT_OPTIONS: &[Abbrev] = &[
    no("verbose", 1),
    no("terse", 3),
    no("disable", 3),
    no("debug", 2).colon(),
    to("dry-run", 3, "dry-run-to", 1).colon(),
    no("spool", 1),
    no("file", 2),
    no("digest", 6),
    to("factory", 2, "factory", 0),
    to("generator", 1, "factory", 0),
    no("address", 2),
    no("remote", 1),
    to("name", 1, "name", 1),
    to("append", 1, "append", 1),
    to("batch-name", 1, "batch-name", 1),
    no("batch-id", 1),
    to("queue", 1, "queue", 0),
    no("iterate", 2),
    no("table", 5),
    no("maxjobs", 3),
    no("single-cluster", 3),
    to("pool", 2, "pool", 1),
    no("unused", 1),
    no("dump", 2),
    no("force-mpi-universe", 7),
    no("allow-crlf-script", 8),
    to("help", 0, "help", 0),
    no("capabilities", 3).colon(),
    no("interactive", 1),
];

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

#[cfg(test)]
mod tests {
    use super::*;

    /// What `word` becomes in `table`: ferrocondor's option, `!name` for
    /// one it lacks, `?` for an ambiguous word, None for none.
    fn becomes(table: &[Abbrev], word: &str) -> Option<String> {
        abbreviation(table, word).map(|(o, _)| match o.becomes {
            Becomes::Arg(to, _) => to.to_string(),
            Becomes::Missing => format!("!{}", o.name),
            Becomes::Ambiguous(_) => "?".to_string(),
        })
    }

    fn check(table: &[Abbrev], cases: &[(&str, Option<&str>)]) {
        for (word, want) in cases {
            assert_eq!(
                becomes(table, word).as_deref(),
                *want,
                "{word} should be {want:?}"
            );
        }
    }

    // The lengths are those of HTCondor 25.14.0 (commit 7491a145f64a),
    // in the files each table names.

    #[test]
    fn condor_q_takes_queue_cpp_prefixes() {
        check(
            Q_OPTIONS,
            &[
                ("-c", Some("constraint")),
                ("-const", Some("constraint")),
                ("-tot", Some("totals")),
                ("-to", None),
                ("-t", None),
                ("-nob", Some("nobatch")),
                ("-no", None),
                ("-glob", Some("!global")),
                ("-g", Some("!global")),
                ("-gr", Some("!group-by")),
                ("-al", Some("allusers")),
                ("-a", Some("!address")),
                ("-an", Some("better-analyze")),
                ("-be", Some("better-analyze")),
                ("-b", None),
                ("-ba", Some("batch")),
                ("-af", Some("af")),
                ("-autof:lh", Some("af")),
                ("-auto", Some("!autocluster")),
                ("-l", Some("long")),
                ("-lim", Some("!limit")),
                ("-js", Some("json")),
                ("-j", Some("jobads")),
                ("-sl", Some("slotads")),
                ("-s", Some("!submitter")),
                ("-r", Some("run")),
                ("-h", Some("help")),
                ("-ho", Some("hold")),
                ("-hel", Some("help")),
                ("-held", Some("hold")),
                ("-hold-c", Some("!hold-codes")),
                ("-f", Some("format")),
                ("-w", Some("wide")),
                // Two dashes: clap's, whole names only.
                ("--const", None),
                ("-constraints", None),
            ],
        );
    }

    #[test]
    fn condor_status_takes_status_cpp_prefixes() {
        check(
            STATUS_OPTIONS,
            &[
                ("-const", Some("constraint")),
                ("-con", Some("constraint")),
                ("-co", None),
                ("-c", None),
                ("-cl", Some("claimed")),
                ("-com", Some("compact")),
                ("-t", Some("total")),
                ("-tot", Some("total")),
                ("-av", Some("avail")),
                ("-a", None),
                ("-l", Some("long")),
                ("-w", Some("!world")),
                ("-wi", None),
                ("-wid", Some("wide")),
                ("-sch", Some("schedd")),
                ("-sub", None),
                ("-subm", Some("submitters")),
                ("-subs", Some("!subsystem")),
                ("-stat", Some("state")),
                ("-sta", None),
                ("-star", Some("!startd")),
                ("-r", Some("run")),
                ("-js", Some("json")),
                ("-x", Some("!xml")),
            ],
        );
    }

    #[test]
    fn condor_rm_hold_release_vacate_job_take_rm_cpp_prefixes() {
        for table in [RM_OPTIONS, HOLD_OPTIONS, VACATE_JOB_OPTIONS] {
            check(
                table,
                &[
                    ("-c", Some("constraint")),
                    ("-const", Some("constraint")),
                    ("-a", Some("all")),
                    ("-r", Some("reason")),
                    ("-reas", Some("reason")),
                    ("-t", None),
                    ("-tot", Some("!totals")),
                    ("-tr", Some("!transfer")),
                    ("-h", Some("help")),
                    ("-hel", Some("!held")),
                ],
            );
        }
        check(
            RM_OPTIONS,
            &[("-f", Some("!forcex")), ("-fa", Some("!fast"))],
        );
        check(HOLD_OPTIONS, &[("-f", None), ("-fo", Some("!forcex"))]);
        check(
            VACATE_JOB_OPTIONS,
            &[("-f", Some("fast")), ("-fas", Some("fast"))],
        );
    }

    #[test]
    fn condor_history_takes_history_cpp_prefixes() {
        check(
            HISTORY_OPTIONS,
            &[
                ("-lim", Some("limit")),
                ("-li", None),
                ("-m", Some("limit")),
                ("-l", Some("long")),
                ("-c", Some("constraint")),
                ("-co", Some("constraint")),
                ("-js", None),
                ("-json", Some("json")),
                ("-jsonl", Some("!jsonl")),
                ("-f", Some("format")),
                ("-af:h", Some("af")),
                ("-inherit", Some("!inherit")),
                ("-inh", None),
            ],
        );
    }

    #[test]
    fn condor_submit_drain_userprio_config_val_vacate_take_their_prefixes() {
        check(
            SUBMIT_OPTIONS,
            &[
                ("-b", Some("batch-name")),
                ("-batch", Some("batch-name")),
                ("-a", Some("append")),
                ("-q", Some("queue")),
                ("-dry", Some("dry-run-to")),
                ("-dr", None),
                ("-s", Some("!spool")),
                ("-fa", Some("factory")),
                ("-factory", Some("factory")),
                ("-g", Some("factory")),
                ("-f", None),
                ("-h", Some("help")),
            ],
        );
        check(
            DRAIN_OPTIONS,
            &[
                ("-c", Some("cancel")),
                ("-f", Some("fast")),
                ("-g", Some("graceful")),
                ("-r", Some("resume-on-completion")),
                ("-rea", Some("reason")),
                ("-sta", None),
                ("-start", Some("start")),
                ("-ch", Some("check")),
            ],
        );
        check(
            USERPRIO_OPTIONS,
            &[
                ("-s", Some("setprio")),
                ("-setf", Some("setfactor")),
                ("-r", Some("resetusage")),
                ("-reseta", Some("!resetall")),
                ("-a", Some("all")),
                ("-allu", Some("allusers")),
                ("-h", Some("!heir")),
            ],
        );
        check(
            CONFIG_VAL_OPTIONS,
            &[
                ("-d", Some("dump")),
                ("-v", Some("verbose")),
                ("-sub", Some("subsystem")),
                ("-su", None),
                ("-ra", None),
                ("-raw", Some("raw")),
                ("-ev", Some("evaluate")),
                ("-ex", Some("expand")),
                ("-con", Some("config")),
                ("-defaults", None),
            ],
        );
        check(
            VACATE_OPTIONS,
            &[
                ("-fa", Some("fast")),
                ("-f", Some("?")),
                ("-s", Some("?")),
                ("-co", Some("?")),
                ("-con", Some("!constraint")),
            ],
        );
    }

    #[test]
    fn the_command_line_is_rewritten_or_refused_as_htcondor_would() {
        let line = |words: &[&str]| -> Result<Vec<String>, String> {
            normalize_config_val(words.iter().map(std::ffi::OsString::from).collect())
                .map(|v| v.into_iter().map(|a| a.into_string().unwrap()).collect())
        };
        assert_eq!(
            line(&[
                "ferrocondor",
                "q",
                "-const",
                "-x",
                "-autof:h",
                "Owner",
                "-tot"
            ])
            .unwrap(),
            [
                "ferrocondor",
                "q",
                "--constraint",
                "-x",
                "--af",
                ":h",
                "Owner",
                "--totals"
            ]
        );
        assert_eq!(
            line(&["ferrocondor", "submit", "-dry", "-", "-"]).unwrap(),
            ["ferrocondor", "submit", "--dry-run-to", "-", "-"]
        );
        let err = line(&["ferrocondor", "q", "-glob"]).unwrap_err();
        assert!(err.contains("the option -global is not supported"), "{err}");
        let err = line(&["ferrocondor", "q", "-to"]).unwrap_err();
        assert!(err.contains("unrecognized option -to"), "{err}");
        let err = line(&["ferrocondor", "vacate", "-f"]).unwrap_err();
        assert!(err.contains("give -full or -fast"), "{err}");
    }
}
