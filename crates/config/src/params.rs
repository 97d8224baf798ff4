//! The parameter table: every configuration parameter ferrocondor reads,
//! with HTCondor's built-in default and a one-line meaning.
//!
//! The daemons read parameters only through names in this table (a tidy
//! test checks it), so this file is the complete list of knobs an admin can
//! turn. Defaults are HTCondor's own (as its parameter table has them,
//! unexpanded: `$(LOCAL_DIR)/execute`), because admins' existing files
//! refer to them: `START = $(START) && ...` builds on the default `True`.
//! `tests/defaults.rs` checks each default's expansion against what
//! HTCondor 25.14.1 answers for an empty configuration.
//!
//! Keep `PARAMS` sorted by name, compared case-insensitively (ASCII
//! uppercase); a unit test checks it, and lookups rely on it.

/// How a parameter's value is read by the typed accessors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Text used as it is.
    Text,
    /// A 64-bit integer; HTCondor evaluates the text as a ClassAd expression
    /// (`$(DETECTED_CORES)*2`) and truncates a real.
    Integer,
    /// True or false; also evaluated as a ClassAd expression.
    Boolean,
    /// A real number; evaluated as a ClassAd expression.
    Real,
    /// A file or directory name.
    Path,
    /// A ClassAd expression kept as an expression (START, RANK, ...).
    Expression,
    /// A list separated by commas and/or blanks (STARTD_ATTRS, DAEMON_LIST).
    List,
    /// A number of seconds, written as an integer expression.
    Duration,
}

/// One parameter of the table.
#[derive(Debug)]
pub struct Param {
    /// The name as HTCondor's documentation spells it.
    pub name: &'static str,
    /// HTCondor's built-in default, unexpanded; `""` means none (an empty
    /// value and no value are the same thing to HTCondor).
    pub default: &'static str,
    /// How the typed accessors read it.
    pub kind: Kind,
    /// One line: what it does.
    pub meaning: &'static str,
}

const fn p(name: &'static str, default: &'static str, kind: Kind, meaning: &'static str) -> Param {
    Param {
        name,
        default,
        kind,
        meaning,
    }
}

use Kind::*;

/// Every parameter ferrocondor reads, sorted by uppercase name.
///
/// Defaults were read from HTCondor 25.14.1's compiled parameter table.
/// Names that table lacks (RANK, MaxJobRetirementTime, SYSTEM_PERIODIC_*,
/// the `_VANILLA` variants, ...) have no default here, as in HTCondor; where
/// HTCondor's code falls back to a value of its own, the meaning says so.
/// Defaults that refer to host macros (`$(FULL_HOSTNAME)`, `$(TILDE)`,
/// `$(DETECTED_MEMORY)`) expand through the host trait.
pub static PARAMS: &[Param] = &[
    p(
        "ACCOUNTANT_LOCAL_DOMAIN",
        "",
        Text,
        "The local UID domain for the accountant; submitters from other domains get REMOTE_PRIO_FACTOR (unset: everyone is local).",
    ),
    p(
        "ActivityTimer",
        "(time() - EnteredCurrentActivity)",
        Expression,
        "Helper: seconds the slot has spent in its current activity.",
    ),
    p(
        "ALIVE_INTERVAL",
        "300",
        Duration,
        "Seconds between keep-alive messages on a claim.",
    ),
    p(
        "ALLOW_INCLUDE_COMMAND",
        "",
        Boolean,
        "ferrocondor only: whether `include command :` may run programs (off unless set before the include).",
    ),
    p(
        "ALLOW_PSLOT_PREEMPTION",
        "",
        Boolean,
        "Whether the negotiator may preempt several dynamic slots of one partitionable slot for a job.",
    ),
    p(
        "APPEND_RANK",
        "",
        Expression,
        "Expression submit adds to every job's Rank.",
    ),
    p(
        "APPEND_RANK_VANILLA",
        "",
        Expression,
        "Expression submit adds to a vanilla job's Rank (overrides APPEND_RANK).",
    ),
    p(
        "APPEND_REQUIREMENTS",
        "",
        Expression,
        "Clause submit ANDs into every job's Requirements.",
    ),
    p(
        "APPEND_REQ_VANILLA",
        "",
        Expression,
        "Clause submit ANDs into a vanilla job's Requirements (overrides APPEND_REQUIREMENTS).",
    ),
    p(
        "ARCH",
        "",
        Text,
        "The machine's architecture (X86_64, aarch64), detected from the host.",
    ),
    p(
        "BACKFILL_SYSTEM",
        "",
        Text,
        "Which backfill manager runs work while a slot is otherwise idle.",
    ),
    p(
        "BackgroundLoad",
        "0.3",
        Expression,
        "Helper: non-HTCondor load below which the CPU counts as idle.",
    ),
    p(
        "BASE_CGROUP",
        "htcondor",
        Text,
        "Cgroup (beside the daemons' own, as in HTCondor on cgroup v2) under which each job gets its own cgroup; empty: jobs get none.",
    ),
    p(
        "BenchmarkTimer",
        "(time() - LastBenchmark)",
        Expression,
        "Helper: seconds since the slot last ran its benchmarks.",
    ),
    p(
        "BigJob",
        "(TARGET.ImageSize >= (50 * 1024))",
        Expression,
        "Helper: the candidate job's image is 50 MiB or more.",
    ),
    p(
        "BIN",
        "$(RELEASE_DIR)/bin",
        Path,
        "Directory holding the user tools.",
    ),
    p(
        "CATALOG_SPACE",
        "    ifthenelse(\n        MappingMethod ?: \"\" != \"Copy\",\n        $(SUM_OF_CATALOGS),\n        0\n)",
        Expression,
        "Helper: disk taken by requested data catalogs, subtracted from a job's disk request.",
    ),
    p(
        "CGROUP_HARD_MEMORY_LIMIT_EXPR",
        "",
        Expression,
        "Under CGROUP_MEMORY_LIMIT_POLICY = custom: the job's memory.max in MiB (MY: the slot, TARGET: the job).",
    ),
    p(
        "CGROUP_MEMORY_LIMIT_POLICY",
        "hard",
        Text,
        "How a job's cgroup memory limit is enforced: hard, soft, custom or none.",
    ),
    p(
        "CGROUP_SOFT_MEMORY_LIMIT_EXPR",
        "",
        Expression,
        "Under CGROUP_MEMORY_LIMIT_POLICY = custom: the job's memory.high in MiB (MY: the slot, TARGET: the job).",
    ),
    p(
        "CLAIM_PARTITIONABLE_LEFTOVERS",
        "$(NEGOTIATOR_USE_SLOT_WEIGHTS)",
        Boolean,
        "Whether the schedd carves further dynamic slots from what a partitionable slot has left.",
    ),
    p(
        "CLAIM_WORKLIFE",
        "1200",
        Duration,
        "Seconds after which a claim accepts no new job (-1: forever).",
    ),
    p(
        "CLASSAD_ENABLE_USER_HOME",
        "true",
        Boolean,
        "Whether the ClassAd function userHome() looks users up in the password database (off: it gives its default or UNDEFINED).",
    ),
    p(
        "CLASSAD_LIFETIME",
        "",
        Duration,
        "Seconds the collector keeps an ad that is not refreshed (HTCondor's code falls back to 900).",
    ),
    p(
        "COLLECTOR_HOST",
        "$(CONDOR_HOST)",
        List,
        "Address(es) of the pool's collector.",
    ),
    p(
        "COLLECTOR_LOG",
        "$(LOG)/CollectorLog",
        Path,
        "The collector's log file.",
    ),
    p(
        "COLLECTOR_NAME",
        "My Pool - $(CONDOR_HOST)",
        Text,
        "Name the collector gives the pool.",
    ),
    p(
        "COLLECTOR_PORT",
        "9618",
        Integer,
        "Port the collector listens on when COLLECTOR_HOST names none.",
    ),
    p(
        "CONCURRENCY_LIMIT_DEFAULT",
        "2308032",
        Integer,
        "Limit for a concurrency limit name with no <NAME>_LIMIT of its own.",
    ),
    p(
        "CONDOR_HOST",
        "",
        Text,
        "The central manager's host name, for building COLLECTOR_HOST and friends.",
    ),
    p(
        "CONDOR_Q_DASH_BATCH_IS_DEFAULT",
        "true",
        Boolean,
        "Whether q shows the batched summary by default.",
    ),
    p(
        "CONDOR_Q_ONLY_MY_JOBS",
        "true",
        Boolean,
        "Whether q shows only the caller's jobs by default.",
    ),
    p(
        "CONDOR_VIEW_CLASSAD_TYPES",
        "",
        List,
        "Ad types the collector forwards to the view (history) collector.",
    ),
    p(
        "CONDOR_VIEW_HOST",
        "",
        Text,
        "Collector that receives copies of ads for pool history.",
    ),
    p(
        "CONSOLE_DEVICES",
        "mouse, console",
        List,
        "Devices under /dev whose access time counts as console activity.",
    ),
    p(
        "CONSUMPTION_CPUS",
        "quantize(target.RequestCpus,{1})",
        Expression,
        "Cpus a match takes from a partitionable slot under a consumption policy.",
    ),
    p(
        "CONSUMPTION_DISK",
        "quantize(target.RequestDisk,{1024})",
        Expression,
        "Disk a match takes from a partitionable slot under a consumption policy.",
    ),
    p(
        "CONSUMPTION_MEMORY",
        "quantize(target.RequestMemory,{128})",
        Expression,
        "Memory a match takes from a partitionable slot under a consumption policy.",
    ),
    p(
        "CONSUMPTION_POLICY",
        "false",
        Boolean,
        "Whether partitionable slots follow a consumption policy (several matches per cycle).",
    ),
    p(
        "CONTINUE",
        "True",
        Expression,
        "When a suspended job resumes (startd policy).",
    ),
    p(
        "ContinueIdleTime",
        "5 * $(MINUTE)",
        Expression,
        "Helper: keyboard idle seconds needed before a suspended job resumes.",
    ),
    p(
        "CONTINUE_VANILLA",
        "",
        Expression,
        "CONTINUE for vanilla jobs, where defined.",
    ),
    p(
        "COUNT_HYPERTHREAD_CPUS",
        "true",
        Boolean,
        "Whether hyperthreads count as cores in the detected CPU count.",
    ),
    p(
        "DAEMON_LIST",
        "MASTER",
        List,
        "Daemons to run on this host.",
    ),
    p(
        "DEDICATED_EXECUTE_ACCOUNT_REGEXP",
        "",
        Text,
        "Pattern of local accounts used only for running jobs (safe to kill all their processes).",
    ),
    p(
        "DEFAULT_JOB_MAX_RETRIES",
        "2",
        Integer,
        "Retries a job gets when its submit file asks for retries without a count.",
    ),
    p(
        "DEFAULT_PRIO_FACTOR",
        "1000",
        Real,
        "Priority factor given to a submitter that has none set.",
    ),
    p(
        "DEFAULT_RANK",
        "",
        Expression,
        "Rank submit gives a job that states none.",
    ),
    p(
        "DEFAULT_RANK_VANILLA",
        "",
        Expression,
        "Rank submit gives a vanilla job that states none (overrides DEFAULT_RANK).",
    ),
    p(
        "DEFAULT_UNIVERSE",
        "",
        Text,
        "Universe of a job whose submit file names none.",
    ),
    p(
        "DEFRAG_CANCEL_REQUIREMENTS",
        "$(DEFRAG_WHOLE_MACHINE_EXPR)",
        Expression,
        "When defrag stops draining a machine early.",
    ),
    p(
        "DEFRAG_DRAINING_MACHINES_PER_HOUR",
        "0",
        Real,
        "How many machines defrag may start draining per hour.",
    ),
    p(
        "DEFRAG_DRAINING_SCHEDULE",
        "graceful",
        Text,
        "How defrag drains: graceful, quick or fast.",
    ),
    p(
        "DEFRAG_DRAINING_START_EXPR",
        "FALSE",
        Expression,
        "START that a draining slot uses until the drain finishes.",
    ),
    p(
        "DEFRAG_INTERVAL",
        "600",
        Duration,
        "Seconds between defrag passes.",
    ),
    p(
        "DEFRAG_MAX_CONCURRENT_DRAINING",
        "-1",
        Integer,
        "Most machines draining at once (-1: no limit).",
    ),
    p(
        "DEFRAG_MAX_WHOLE_MACHINES",
        "-1",
        Integer,
        "Stop draining once this many machines are whole (-1: no limit).",
    ),
    p(
        "DEFRAG_NAME",
        "",
        Text,
        "The defrag daemon's name (default: LOCALNAME at the host).",
    ),
    p(
        "DEFRAG_RANK",
        "-ExpectedMachineGracefulDrainingBadput",
        Expression,
        "Order in which defrag picks machines to drain.",
    ),
    p(
        "DEFRAG_REQUIREMENTS",
        "",
        Expression,
        "Which machines defrag may drain.",
    ),
    p(
        "DEFRAG_UPDATE_INTERVAL",
        "300",
        Duration,
        "Seconds between the defrag daemon's ad updates to the collector.",
    ),
    p(
        "DEFRAG_WHOLE_MACHINE_EXPR",
        "Cpus == TotalSlotCpus",
        Expression,
        "When a machine counts as whole (fully unfragmented).",
    ),
    p(
        "DISABLE_SWAP_FOR_JOB",
        "true",
        Boolean,
        "With a hard cgroup memory limit, the job may not swap (memory.swap.max = 0).",
    ),
    p(
        "DISCONNECTED_KEYBOARD_IDLE_BOOST",
        "1200",
        Duration,
        "Seconds added to KeyboardIdle of slots not connected to the keyboard.",
    ),
    p(
        "ENABLE_BACKFILL",
        "false",
        Boolean,
        "Whether idle slots may run backfill work.",
    ),
    p(
        "ENABLE_URL_TRANSFERS",
        "true",
        Boolean,
        "Whether file transfer may use URL plugins.",
    ),
    p(
        "ENVIRONMENT_FOR_AssignedGPUs",
        "GPU_DEVICE_ORDINAL=/(CUDA|OCL)//  CUDA_VISIBLE_DEVICES=/CUDA//",
        Text,
        "Environment variables the starter sets to the GPUs assigned to a job.",
    ),
    p(
        "ENVIRONMENT_VALUE_FOR_UnAssignedGPUs",
        "10000",
        Text,
        "Value given to those variables when a job has no GPU.",
    ),
    p(
        "ETC",
        "$(LOCAL_DIR)",
        Path,
        "Directory of local configuration and state files.",
    ),
    p(
        "EVICT_BACKFILL",
        "",
        Expression,
        "When running backfill work is evicted.",
    ),
    p(
        "EXECUTE",
        "$(LOCAL_DIR)/execute",
        Path,
        "Directory under which each job gets its scratch sandbox.",
    ),
    p(
        "FetchWorkDelay",
        "",
        Expression,
        "Seconds to wait after a fetch-work hook before fetching again.",
    ),
    p(
        "FILESYSTEM_DOMAIN",
        "$(FULL_HOSTNAME)",
        Text,
        "Machines with the same value share a file system.",
    ),
    p(
        "FILETRANSFER_PLUGINS",
        "$(LIBEXEC)/curl_plugin, $(LIBEXEC)/data_plugin, $(LIBEXEC)/box_plugin.py, $(LIBEXEC)/gdrive_plugin.py, $(LIBEXEC)/onedrive_plugin.py, $(STASH_PLUGIN)",
        List,
        "File transfer plugin programs, each serving some URL schemes.",
    ),
    p(
        "FULL_HOSTNAME",
        "",
        Text,
        "The host's fully qualified name, detected from the host.",
    ),
    p(
        "GPU_DISCOVERY_EXTRA",
        "",
        Text,
        "Extra arguments passed to the GPU discovery tool.",
    ),
    p(
        "GROUP_ACCEPT_SURPLUS",
        "false",
        Boolean,
        "Whether accounting groups may use quota other groups leave unused.",
    ),
    p(
        "GROUP_AUTOREGROUP",
        "false",
        Boolean,
        "Whether group jobs may also compete in the unassigned round once quota is met.",
    ),
    p(
        "GROUP_NAMES",
        "",
        List,
        "The accounting groups that have quotas.",
    ),
    p(
        "GROUP_QUOTA_MAX_ALLOCATION_ROUNDS",
        "3",
        Integer,
        "Rounds the negotiator makes to hand out unused group quota.",
    ),
    p(
        "GROUP_QUOTA_ROUND_ROBIN_RATE",
        "1.0e100",
        Real,
        "Largest share handed to a group per allocation round.",
    ),
    p(
        "GROUP_SORT_EXPR",
        r#"ifThenElse(AccountingGroup=?="<none>",3.4e+38,ifThenElse(GroupQuota>0,GroupResourcesInUse/GroupQuota,3.3e+38))"#,
        Expression,
        "Order in which accounting groups are negotiated.",
    ),
    p(
        "HighLoad",
        "0.5",
        Expression,
        "Helper: non-HTCondor load above which the CPU counts as busy.",
    ),
    p(
        "HOUR",
        "3600",
        Expression,
        "Helper: seconds in an hour.",
    ),
    p(
        "IGNORE_ATTEMPTS_TO_SET_SECURE_JOB_ATTRS",
        "true",
        Boolean,
        "Whether a tool's attempt to set a secure job attribute is quietly ignored (else refused).",
    ),
    p(
        "IMMUTABLE_JOB_ATTRS",
        "",
        List,
        "Job attributes nobody may change once set (added to the system list).",
    ),
    p(
        "IsCollector",
        "false",
        Boolean,
        "Helper: true when read by the collector.",
    ),
    p(
        "IsMPI",
        "(TARGET.JobUniverse == $(MPI))",
        Expression,
        "Helper: the candidate job is an MPI (parallel) universe job.",
    ),
    p(
        "IsNegotiator",
        "false",
        Boolean,
        "Helper: true when read by the negotiator.",
    ),
    p(
        "IsSchedd",
        "false",
        Boolean,
        "Helper: true when read by the schedd.",
    ),
    p(
        "IsStandard",
        "(TARGET.JobUniverse == $(STANDARD))",
        Expression,
        "Helper: the candidate job is a standard universe job.",
    ),
    p(
        "IsStartd",
        "false",
        Boolean,
        "Helper: true when read by the startd.",
    ),
    p(
        "IsStarter",
        "false",
        Boolean,
        "Helper: true when read by the starter.",
    ),
    p(
        "IsSubmit",
        "false",
        Boolean,
        "Helper: true when read by submit.",
    ),
    p(
        "IsTool",
        "false",
        Boolean,
        "Helper: true when read by a command-line tool.",
    ),
    p(
        "IsVanilla",
        "(TARGET.JobUniverse == $(VANILLA))",
        Expression,
        "Helper: the candidate job is a vanilla universe job.",
    ),
    p(
        "IsVM",
        "(TARGET.JobUniverse == $(VM))",
        Expression,
        "Helper: the candidate job is a VM universe job.",
    ),
    p(
        "IS_OWNER",
        "False",
        Expression,
        "When a slot is in the Owner state (unavailable to HTCondor).",
    ),
    p(
        "JOB_DEFAULT_LEASE_DURATION",
        "2400",
        Expression,
        "JobLeaseDuration submit gives a job that states none.",
    ),
    p(
        "JOB_DEFAULT_REQUESTCPUS",
        "1",
        Expression,
        "RequestCpus submit gives a job that states none.",
    ),
    p(
        "JOB_DEFAULT_REQUESTDISK",
        "MAX({1024, (TransferInputSizeMB+1) * 1.25}) * 1024",
        Expression,
        "RequestDisk (KiB) submit gives a job that states none.",
    ),
    p(
        "JOB_DEFAULT_REQUESTMEMORY",
        "128",
        Expression,
        "RequestMemory (MiB) submit gives a job that states none.",
    ),
    p(
        "JOB_EXECDIR_PERMISSIONS",
        "user",
        Text,
        "Permissions of a job's scratch directory: user, group or world.",
    ),
    p(
        "JOB_INHERITS_STARTER_ENVIRONMENT",
        "false",
        Text,
        "Which of the starter's environment variables a job inherits (true, false or patterns).",
    ),
    p(
        "JOB_RENICE_INCREMENT",
        "0",
        Expression,
        "Nice increment the starter applies to a job, evaluated against it.",
    ),
    p(
        "JOB_START_COUNT",
        "1",
        Integer,
        "Jobs the schedd starts per JOB_START_DELAY.",
    ),
    p(
        "JOB_START_DELAY",
        "0",
        Duration,
        "Seconds between batches of job starts.",
    ),
    p(
        "JOB_TRANSFORM_NAMES",
        "",
        List,
        "Names of the job transforms the schedd applies, in order.",
    ),
    p(
        "KEEP_POOL_HISTORY",
        "",
        Boolean,
        "Whether the collector keeps pool history.",
    ),
    p(
        "KILL",
        "False",
        Expression,
        "When a vacating job is killed at once (startd policy).",
    ),
    p(
        "KILLING_TIMEOUT",
        "30",
        Duration,
        "Seconds between the soft kill signal and the hard kill.",
    ),
    p(
        "KILL_VANILLA",
        "",
        Expression,
        "KILL for vanilla jobs, where defined.",
    ),
    p(
        "LIB",
        "$(RELEASE_DIR)/lib",
        Path,
        "Directory of libraries.",
    ),
    p(
        "LIBEXEC",
        "$(RELEASE_DIR)/libexec",
        Path,
        "Directory of helper programs.",
    ),
    p(
        "LOCAL_CONFIG_DIR",
        "",
        List,
        "Directories whose files are read, in lexical order, after the main configuration.",
    ),
    p(
        "LOCAL_CONFIG_DIR_EXCLUDE_REGEXP",
        r"^((\..*)|(.*\.pl)|(.*\.py)|(.*\.sh)|(.*~)|(#.*)|(.*\.rpmsave)|(.*\.rpmnew)|(.*\.dpkg-old)|(.*\.dpkg-dist)|(.*\.cfsaved))$",
        Text,
        "Files in LOCAL_CONFIG_DIR whose names match this are skipped.",
    ),
    p(
        "LOCAL_CONFIG_FILE",
        "",
        List,
        "Files read, in order, after the main configuration file.",
    ),
    p(
        "LOCAL_DIR",
        "$(TILDE)",
        Path,
        "Root of this host's state, log and scratch directories.",
    ),
    p(
        "LOCAL_UNIV_EXECUTE",
        "$(SPOOL)/local_univ_execute",
        Path,
        "Scratch directory for local universe jobs.",
    ),
    p(
        "LOCK",
        "$(LOG)",
        Path,
        "Directory of lock files.",
    ),
    p(
        "LOG",
        "$(LOCAL_DIR)/log",
        Path,
        "Directory of daemon logs.",
    ),
    p(
        "MachineMaxVacateTime",
        "$(MaxVacateTime)",
        Duration,
        "Seconds a job is given to vacate before it is killed (the machine's side).",
    ),
    p(
        "MACHINE_RESOURCE_NAMES",
        "",
        List,
        "Custom resources to read from MACHINE_RESOURCE_<name>.",
    ),
    p(
        "MASTER_BACKOFF_CEILING",
        "3600",
        Duration,
        "The longest the master waits before restarting a daemon that died.",
    ),
    p(
        "MASTER_BACKOFF_CONSTANT",
        "9",
        Duration,
        "Seconds the master waits before restarting a daemon that died, plus MASTER_BACKOFF_FACTOR to the power of its restarts.",
    ),
    p(
        "MASTER_BACKOFF_FACTOR",
        "2.0",
        Real,
        "The base of the master's exponential back-off between restarts of a daemon.",
    ),
    p(
        "MASTER_RECOVER_FACTOR",
        "300",
        Duration,
        "Seconds a restarted daemon must stay up before its restart count is forgotten.",
    ),
    p(
        "MATCH_TIMEOUT",
        "120",
        Duration,
        "Seconds a slot stays Matched waiting for the claim before returning to Owner.",
    ),
    p(
        "MaxJobRetirementTime",
        "",
        Expression,
        "Seconds a preempted job may still run before it is vacated (machine side; unset means 0).",
    ),
    p(
        "MaxSuspendTime",
        "10 * $(MINUTE)",
        Expression,
        "Helper: longest time a job stays suspended before preemption.",
    ),
    p(
        "MaxVacateTime",
        "10 * $(MINUTE)",
        Expression,
        "Helper: longest time a vacating job is given before it is killed.",
    ),
    p(
        "MAX_CLAIM_ALIVES_MISSED",
        "6",
        Integer,
        "Keep-alives a startd may miss before dropping a claim.",
    ),
    p(
        "MAX_DRAINING_ACTIVATION_DELAY",
        "20",
        Duration,
        "Seconds a claimed slot waits for a job while draining.",
    ),
    p(
        "MAX_JOBS_PER_OWNER",
        "100000",
        Integer,
        "Most jobs one owner may have in the queue.",
    ),
    p(
        "MAX_JOBS_PER_SUBMISSION",
        "20000",
        Integer,
        "Most jobs one submission may create.",
    ),
    p(
        "MAX_JOBS_RUNNING",
        "MIN({$(DETECTED_MEMORY), 10000})",
        Integer,
        "Most jobs the schedd runs at once.",
    ),
    p(
        "MAX_JOBS_SUBMITTED",
        "2147483647",
        Integer,
        "Most jobs the queue may hold.",
    ),
    p(
        "MAX_MATERIALIZED_JOBS_PER_CLUSTER",
        "",
        Integer,
        "Most jobs of one late-materialization factory present at once, whatever its max_materialize (none by default).",
    ),
    p(
        "MAX_PERIODIC_EXPR_INTERVAL",
        "1200",
        Duration,
        "Longest gap between evaluations of periodic job expressions.",
    ),
    p(
        "MAX_SLOT_TYPES",
        "10",
        Integer,
        "Highest slot type number looked for (SLOT_TYPE_<N>).",
    ),
    p(
        "MAX_TRACKING_GID",
        "0",
        Integer,
        "Top of the group id range used to track job processes.",
    ),
    p(
        "MediumJob",
        "(TARGET.ImageSize >= (15 * 1024) && TARGET.ImageSize < (50 * 1024))",
        Expression,
        "Helper: the candidate job's image is between 15 and 50 MiB.",
    ),
    p(
        "MEMORY",
        "",
        Integer,
        "Memory (MiB) the startd advertises instead of the detected amount.",
    ),
    p(
        "MINUTE",
        "60",
        Expression,
        "Helper: seconds in a minute.",
    ),
    p(
        "MIN_TRACKING_GID",
        "0",
        Integer,
        "Bottom of the group id range used to track job processes.",
    ),
    p(
        "MODIFY_REQUEST_EXPR_REQUESTCPUS",
        "quantize(RequestCpus,{1})",
        Expression,
        "How a partitionable slot rounds a job's cpu request.",
    ),
    p(
        "MODIFY_REQUEST_EXPR_REQUESTDISK",
        "quantize(RequestDisk - $(CATALOG_SPACE),{Target.DiskQuantum?:1024})",
        Expression,
        "How a partitionable slot rounds a job's disk request.",
    ),
    p(
        "MODIFY_REQUEST_EXPR_REQUESTMEMORY",
        "quantize(RequestMemory,{128})",
        Expression,
        "How a partitionable slot rounds a job's memory request.",
    ),
    p(
        "MPI",
        "8",
        Expression,
        "Helper: JobUniverse number of the MPI (parallel) universe.",
    ),
    p(
        "MUST_MODIFY_REQUEST_EXPRS",
        "false",
        Boolean,
        "Whether rounded requests are used even when the job then no longer matches.",
    ),
    p(
        "NEGOTIATOR_ALLOW_QUOTA_OVERSUBSCRIPTION",
        "true",
        Boolean,
        "Whether a group may go over quota when a slot is bigger than its remainder.",
    ),
    p(
        "NEGOTIATOR_CONSIDER_EARLY_PREEMPTION",
        "false",
        Boolean,
        "Whether slots still in retirement are candidates for preemption.",
    ),
    p(
        "NEGOTIATOR_CONSIDER_PREEMPTION",
        "true",
        Boolean,
        "Whether claimed slots are candidates at all.",
    ),
    p(
        "NEGOTIATOR_DEPTH_FIRST",
        "false",
        Boolean,
        "Whether to fill a partitionable slot before moving to the next.",
    ),
    p(
        "NEGOTIATOR_DISCOUNT_SUSPENDED_RESOURCES",
        "false",
        Boolean,
        "Whether suspended claims leave the owner's usage.",
    ),
    p(
        "NEGOTIATOR_IGNORE_USER_PRIORITIES",
        "false",
        Boolean,
        "Whether to negotiate without fair share.",
    ),
    p(
        "NEGOTIATOR_INTERVAL",
        "60",
        Duration,
        "Seconds between the starts of negotiation cycles.",
    ),
    p(
        "NEGOTIATOR_JOB_CONSTRAINT",
        "",
        Expression,
        "Jobs failing this are never matched.",
    ),
    p(
        "NEGOTIATOR_LOG",
        "$(LOG)/NegotiatorLog",
        Path,
        "The negotiator's log file.",
    ),
    p(
        "NEGOTIATOR_MATCH_EXPRS",
        "",
        List,
        "Negotiator expressions inserted into a matched job as NegotiatorMatchExpr<name>.",
    ),
    p(
        "NEGOTIATOR_MAX_TIME_PER_CYCLE",
        "1200",
        Duration,
        "Most seconds one negotiation cycle may take.",
    ),
    p(
        "NEGOTIATOR_MAX_TIME_PER_PIESPIN",
        "120",
        Duration,
        "Most seconds one pie spin of a cycle may take.",
    ),
    p(
        "NEGOTIATOR_MAX_TIME_PER_SUBMITTER",
        "60",
        Duration,
        "Most seconds a cycle spends on one submitter.",
    ),
    p(
        "NEGOTIATOR_MIN_INTERVAL",
        "5",
        Duration,
        "Fewest seconds between the starts of negotiation cycles.",
    ),
    p(
        "NEGOTIATOR_POST_JOB_RANK",
        "(RemoteOwner =?= UNDEFINED) * (ifthenElse(isUndefined(KFlops), 1000, Kflops) - SlotID - 1.0e10*(Offline=?=True))",
        Expression,
        "Tie-breaker applied after the job's Rank when choosing a slot.",
    ),
    p(
        "NEGOTIATOR_PRE_JOB_RANK",
        "(10000000 * My.Rank) + (1000000 * (RemoteOwner =?= UNDEFINED)) - (100000 * Cpus) - Memory",
        Expression,
        "Ranking applied before the job's Rank when choosing a slot.",
    ),
    p(
        "NEGOTIATOR_SLOT_CONSTRAINT",
        "",
        Expression,
        "Slots failing this are never matched.",
    ),
    p(
        "NEGOTIATOR_STRICT_ENFORCE_QUOTA",
        "",
        Boolean,
        "Whether a group's limit is capped by the quota left in ancestors that accept no surplus (HTCondor's code falls back to true).",
    ),
    p(
        "NEGOTIATOR_USE_SLOT_WEIGHTS",
        "true",
        Boolean,
        "Whether usage and fair share count SLOT_WEIGHT rather than slots.",
    ),
    p(
        "NICE_USER_ACCOUNTING_GROUP_NAME",
        "nice-user",
        Text,
        "Accounting group that nice_user jobs are charged to.",
    ),
    p(
        "NICE_USER_PRIO_FACTOR",
        "1e10",
        Real,
        "Priority factor of nice_user jobs.",
    ),
    p(
        "NUM_CPUS",
        "$(DETECTED_CPUS_LIMIT)",
        Integer,
        "Cores the startd advertises instead of the detected number.",
    ),
    p(
        "NUM_SLOTS",
        "",
        Integer,
        "Number of identical slots when no slot types are defined.",
    ),
    p(
        "OPSYS",
        "",
        Text,
        "The operating system (LINUX), detected from the host.",
    ),
    p(
        "OPSYSANDVER",
        "",
        Text,
        "The operating system and major version (Debian12), detected from the host.",
    ),
    p(
        "PERIODIC_CHECKPOINT",
        "((time() - LastPeriodicCheckpoint)/60.0) > (180.0 + $RANDOM_INTEGER(-30,30,1))",
        Expression,
        "When a running job should checkpoint (randomised default).",
    ),
    p(
        "PERIODIC_EXPR_INTERVAL",
        "60",
        Duration,
        "Seconds between evaluations of periodic job expressions.",
    ),
    p(
        "PERIODIC_EXPR_TIMESLICE",
        "0.01",
        Real,
        "Share of the schedd's time periodic expressions may take.",
    ),
    p(
        "POLLING_INTERVAL",
        "5",
        Duration,
        "Seconds between the startd's policy evaluations.",
    ),
    p(
        "POOL_HISTORY_DIR",
        "",
        Path,
        "Directory where the collector keeps pool history.",
    ),
    p(
        "POOL_HISTORY_MAX_STORAGE",
        "10000000",
        Integer,
        "Bytes of pool history kept.",
    ),
    p(
        "POOL_HISTORY_SAMPLING_INTERVAL",
        "60",
        Duration,
        "Seconds between pool history samples.",
    ),
    p(
        "PREEMPT",
        "False",
        Expression,
        "When a running job is evicted (startd policy).",
    ),
    p(
        "PREEMPTION_RANK",
        "(RemoteUserPrio * 1000000) - ifThenElse(isUndefined(TotalJobRuntime), 0, TotalJobRuntime)",
        Expression,
        "Order in which the negotiator picks claimed slots to preempt for priority.",
    ),
    p(
        "PREEMPTION_REQUIREMENTS",
        "False",
        Expression,
        "When the negotiator may preempt a claim for a better-priority user.",
    ),
    p(
        "PREEMPT_VANILLA",
        "",
        Expression,
        "PREEMPT for vanilla jobs, where defined.",
    ),
    p(
        "PRIORITY_HALFLIFE",
        "86400",
        Real,
        "Seconds for a submitter's accumulated usage to decay by half.",
    ),
    p(
        "PROTECTED_JOB_ATTRS",
        "",
        List,
        "Job attributes only queue super users may change once set.",
    ),
    p(
        "QUEUE_SUPER_USERS",
        "root, condor",
        List,
        "Users who may act on every job in the queue.",
    ),
    p(
        "RANK",
        "",
        Expression,
        "How much the machine prefers a job (startd policy); higher wins, unset means 0.",
    ),
    p(
        "RELEASE_DIR",
        "/usr",
        Path,
        "Root of the installed software.",
    ),
    p(
        "REMOTE_PRIO_FACTOR",
        "1e7",
        Real,
        "Priority factor of submitters from another UID domain.",
    ),
    p(
        "REQUIRE_LOCAL_CONFIG_FILE",
        "true",
        Boolean,
        "Whether a missing LOCAL_CONFIG_FILE is an error.",
    ),
    p(
        "RESERVED_DISK",
        "",
        Integer,
        "Disk (MiB) withheld from jobs.",
    ),
    p(
        "RESERVED_MEMORY",
        "0",
        Integer,
        "Memory (MiB) withheld from slots.",
    ),
    p(
        "RUN",
        "$(LOCK)",
        Path,
        "Directory of run-time files (sockets, pid files).",
    ),
    p(
        "RunBenchmarks",
        "LastBenchmark == 0",
        Expression,
        "When the startd runs its benchmarks.",
    ),
    p(
        "SBIN",
        "$(RELEASE_DIR)/sbin",
        Path,
        "Directory of daemon programs.",
    ),
    p(
        "SCHEDD_INTERVAL",
        "",
        Duration,
        "Seconds between the schedd's ad updates (HTCondor's code falls back to 300).",
    ),
    p(
        "SCHEDD_LOG",
        "$(LOG)/SchedLog",
        Path,
        "The schedd's log file.",
    ),
    p(
        "SCHEDD_MIN_INTERVAL",
        "5",
        Duration,
        "Fewest seconds between the schedd's ad updates.",
    ),
    p(
        "SCHEDD_NAME",
        "",
        Text,
        "Name of the schedd.",
    ),
    p(
        "SCHEDD_PREEMPTION_RANK",
        "",
        Expression,
        "Order in which the dedicated scheduler preempts claims.",
    ),
    p(
        "SCHEDD_PREEMPTION_REQUIREMENTS",
        "",
        Expression,
        "When the dedicated scheduler may preempt a claim.",
    ),
    p(
        "SECURE_JOB_ATTRS",
        "",
        List,
        "Job attributes only the schedd may set (added to the system list).",
    ),
    p(
        "SHUTDOWN_FAST_TIMEOUT",
        "300",
        Duration,
        "Seconds a fast shutdown waits before giving up on children.",
    ),
    p(
        "SHUTDOWN_GRACEFUL_TIMEOUT",
        "",
        Duration,
        "Seconds a graceful shutdown waits before turning fast.",
    ),
    p(
        "SLOTS_CONNECTED_TO_CONSOLE",
        "0",
        Integer,
        "How many slots, counting from slot 1, see console activity in ConsoleIdle.",
    ),
    p(
        "SLOTS_CONNECTED_TO_KEYBOARD",
        "0",
        Integer,
        "How many slots, counting from slot 1, see keyboard activity in KeyboardIdle.",
    ),
    p(
        "SLOT_WEIGHT",
        "Cpus",
        Expression,
        "How much a slot counts toward usage and fair share.",
    ),
    p(
        "SmallJob",
        "(TARGET.ImageSize <  (15 * 1024))",
        Expression,
        "Helper: the candidate job's image is under 15 MiB.",
    ),
    p(
        "SOFT_UID_DOMAIN",
        "",
        Boolean,
        "Whether jobs may run as users missing from this machine's password file.",
    ),
    p(
        "SPOOL",
        "$(LOCAL_DIR)/spool",
        Path,
        "Directory of the job queue and spooled job files.",
    ),
    p(
        "STANDARD",
        "1",
        Expression,
        "Helper: JobUniverse number of the standard universe.",
    ),
    p(
        "START",
        "True",
        Expression,
        "When the machine is willing to start a job (startd policy).",
    ),
    p(
        "STARTD_ATTRS",
        "",
        List,
        "Configuration macros published in every slot ad.",
    ),
    p(
        "STARTD_DETECT_GPUS",
        "-properties $(GPU_DISCOVERY_EXTRA)",
        Text,
        "Arguments for GPU discovery when GPUs are enabled.",
    ),
    p(
        "STARTD_ENFORCE_DISK_LIMITS",
        "false",
        Boolean,
        "Whether a job's disk is limited to its slot's Disk.",
    ),
    p(
        "STARTD_EXPRS",
        "",
        List,
        "Older name for STARTD_ATTRS.",
    ),
    p(
        "STARTD_HAS_BAD_UTMP",
        "0",
        Integer,
        "Nonzero: ignore utmp and scan all ttys for keyboard activity.",
    ),
    p(
        "STARTD_JOB_ATTRS",
        "",
        List,
        "Running job attributes copied into the slot ad.",
    ),
    p(
        "STARTD_JOB_EXPRS",
        "",
        List,
        "Older name for STARTD_JOB_ATTRS.",
    ),
    p(
        "STARTD_JOB_HOOK_KEYWORD",
        "",
        Text,
        "Keyword selecting the startd's fetch-work hooks.",
    ),
    p(
        "STARTD_LATCH_EXPRS",
        "",
        List,
        "Slot expressions whose changes are time-stamped in the slot ad.",
    ),
    p(
        "STARTD_LOG",
        "$(LOG)/StartLog",
        Path,
        "The startd's log file.",
    ),
    p(
        "STARTD_NAME",
        "",
        Text,
        "Name of the startd.",
    ),
    p(
        "STARTD_RESOURCE_PREFIX",
        "",
        Text,
        "Prefix of slot names (slot1, slot2, ...).",
    ),
    p(
        "STARTD_SLOT_ATTRS",
        "",
        List,
        "Slot attributes cross-published to every slot as slot<N>_<attr>.",
    ),
    p(
        "STARTD_SLOT_EXPRS",
        "",
        List,
        "Older name for STARTD_SLOT_ATTRS.",
    ),
    p(
        "STARTD_VM_ATTRS",
        "",
        List,
        "The HTCondor 6.8 name of STARTD_SLOT_ATTRS, still read so old policies run.",
    ),
    p(
        "STARTD_VM_EXPRS",
        "",
        List,
        "The HTCondor 6.8 name of STARTD_SLOT_EXPRS, still read so old policies run.",
    ),
    p(
        "STARTER_ALLOW_RUNAS_OWNER",
        "",
        Expression,
        "Whether a job may run as its submitting user rather than a slot user.",
    ),
    p(
        "STARTER_ALWAYS_HOLD_ON_OOM",
        "true",
        Boolean,
        "Hold a job the kernel killed for memory even when it was well below its limit (else evict it).",
    ),
    p(
        "STARTER_INITIAL_UPDATE_INTERVAL",
        "8",
        Duration,
        "Seconds after a job starts before the starter's first update.",
    ),
    p(
        "STARTER_JOB_ENVIRONMENT",
        "",
        Text,
        "Environment the starter adds to every job.",
    ),
    p(
        "STARTER_JOB_HOOK_KEYWORD",
        "",
        Text,
        "Keyword forcing the starter's hooks, whatever the job's HookKeyword.",
    ),
    p(
        "STARTER_LOG",
        "$(LOG)/StarterLog",
        Path,
        "The starter's log file.",
    ),
    p(
        "STARTER_NUM_THREADS_ENV_VARS",
        "CUBACORES GOMAXPROCS JULIA_NUM_THREADS MKL_NUM_THREADS NUMEXPR_NUM_THREADS OMP_NUM_THREADS OMP_THREAD_LIMIT OPENBLAS_NUM_THREADS PYTHON_CPU_COUNT ROOT_MAX_THREADS TF_LOOP_PARALLEL_ITERATIONS TF_NUM_THREADS",
        List,
        "Variables the starter sets to the job's cpu count (OMP_NUM_THREADS, ...).",
    ),
    p(
        "STARTER_UPDATE_INTERVAL",
        "",
        Duration,
        "Seconds between the starter's job updates (HTCondor's code falls back to 300).",
    ),
    p(
        "StartIdleTime",
        "15 * $(MINUTE)",
        Expression,
        "Helper: keyboard idle seconds needed before a job starts.",
    ),
    p(
        "START_BACKFILL",
        "",
        Expression,
        "When an idle slot starts backfill work.",
    ),
    p(
        "START_LOCAL_UNIVERSE",
        "TotalLocalJobsRunning < 200",
        Expression,
        "When the schedd may start another local universe job.",
    ),
    p(
        "START_SCHEDULER_UNIVERSE",
        "TotalSchedulerJobsRunning < 500",
        Expression,
        "When the schedd may start another scheduler universe job.",
    ),
    p(
        "STASH_PLUGIN",
        "$(LIBEXEC)/stash_plugin",
        Path,
        "The OSDF/stash file transfer plugin.",
    ),
    p(
        "StateTimer",
        "(time() - EnteredCurrentState)",
        Expression,
        "Helper: seconds the slot has spent in its current state.",
    ),
    p(
        "SUBMIT_ATTRS",
        "",
        List,
        "Configuration macros submit copies into every job ad.",
    ),
    p(
        "SUBMIT_DEFAULT_SHOULD_TRANSFER_FILES",
        "",
        Text,
        "should_transfer_files for jobs that do not say (YES, NO, IF_NEEDED).",
    ),
    p(
        "SUBMIT_EXPRS",
        "",
        List,
        "Older name for SUBMIT_ATTRS.",
    ),
    p(
        "SUBMIT_FACTORY_JOBS_BY_DEFAULT",
        "",
        Boolean,
        "Whether submit sends a queue statement of more than one job as a late-materialization factory even without max_materialize (false when undefined).",
    ),
    p(
        "SUBMIT_GENERATE_CUSTOM_RESOURCE_REQUIREMENTS",
        "true",
        Boolean,
        "Whether submit adds Requirements clauses for custom resource requests.",
    ),
    p(
        "SUBMIT_REQUIREMENT_NAMES",
        "",
        List,
        "Names of the schedd's submit requirements, checked in order.",
    ),
    p(
        "SUBMIT_SKIP_FILECHECKS",
        "true",
        Boolean,
        "Whether submit skips checking input and output files.",
    ),
    p(
        "SUM_OF_CATALOGS",
        "    ifthenelse(\n        RequestedCatalogs is undefined || catalogs is undefined,\n        0,\n        sum(\n            evalInEachContext(\n                member(CatalogID, RequestedCatalogIDs)\n                ? CatalogSize : 0,\n                catalogs\n            )\n        )\n    )",
        Expression,
        "Helper: total size of the data catalogs a job requests.",
    ),
    p(
        "SUSPEND",
        "False",
        Expression,
        "When a running job is suspended (startd policy).",
    ),
    p(
        "SUSPEND_VANILLA",
        "",
        Expression,
        "SUSPEND for vanilla jobs, where defined.",
    ),
    p(
        "SYSTEM_IMMUTABLE_JOB_ATTRS",
        "Owner ClusterId JobUniverse ProcId MyType TargetType User OsUser",
        List,
        "Job attributes that may never change once set.",
    ),
    p(
        "SYSTEM_PERIODIC_HOLD",
        "",
        Expression,
        "Pool-wide: when the schedd holds a job.",
    ),
    p(
        "SYSTEM_PERIODIC_HOLD_REASON",
        "",
        Expression,
        "Hold reason for SYSTEM_PERIODIC_HOLD.",
    ),
    p(
        "SYSTEM_PERIODIC_HOLD_SUBCODE",
        "",
        Expression,
        "Hold subcode for SYSTEM_PERIODIC_HOLD.",
    ),
    p(
        "SYSTEM_PERIODIC_RELEASE",
        "",
        Expression,
        "Pool-wide: when the schedd releases a held job.",
    ),
    p(
        "SYSTEM_PERIODIC_RELEASE_REASON",
        "",
        Expression,
        "Release reason for SYSTEM_PERIODIC_RELEASE.",
    ),
    p(
        "SYSTEM_PERIODIC_RELEASE_SUBCODE",
        "",
        Expression,
        "Subcode recorded when SYSTEM_PERIODIC_RELEASE fires.",
    ),
    p(
        "SYSTEM_PERIODIC_REMOVE",
        "",
        Expression,
        "Pool-wide: when the schedd removes a job.",
    ),
    p(
        "SYSTEM_PERIODIC_REMOVE_REASON",
        "",
        Expression,
        "Remove reason for SYSTEM_PERIODIC_REMOVE.",
    ),
    p(
        "SYSTEM_PERIODIC_REMOVE_SUBCODE",
        "",
        Expression,
        "Subcode recorded when SYSTEM_PERIODIC_REMOVE fires.",
    ),
    p(
        "SYSTEM_PROTECTED_JOB_ATTRS",
        "",
        List,
        "Job attributes only queue super users may change (system list).",
    ),
    p(
        "SYSTEM_SECURE_JOB_ATTRS",
        "x509userProxySubject x509UserProxyEmail x509UserProxyVOName x509UserProxyFirstFQAN x509UserProxyFQAN TotalSubmitProcs AuthTokenSubject AuthTokenIssuer AuthTokenGroups AuthTokenId AuthTokenScopes AuthTokenProject OsUser",
        List,
        "Job attributes only the schedd may set: tools' attempts are ignored or refused.",
    ),
    p(
        "SYSTEM_STARTD_JOB_ATTRS",
        "ImageSize, ExecutableSize, JobUniverse, NiceUser, CPUsUsage, ResidentSetSize, ProportionalSetSizeKb, MemoryUsage, DiskUsage, StdoutMtime, StderrMtime, ScratchDirFileCount",
        List,
        "Running job attributes always copied into the slot ad.",
    ),
    p(
        "TRUST_UID_DOMAIN",
        "",
        Boolean,
        "Whether the starter believes the job's UID_DOMAIN without checking the submit host.",
    ),
    p(
        "UID_DOMAIN",
        "$(FULL_HOSTNAME)",
        Text,
        "Machines with the same value share user ids; jobs may run as their owner.",
    ),
    p(
        "UNUSED_CLAIM_TIMEOUT",
        "600",
        Duration,
        "Seconds the dedicated scheduler keeps an unused claim.",
    ),
    p(
        "UPDATE_INTERVAL",
        "300",
        Duration,
        "Seconds between the startd's ad updates to the collector.",
    ),
    p(
        "USER_CONFIG_FILE",
        "user_config",
        Path,
        "Per-user configuration file read by tools (relative to ~/.condor).",
    ),
    p(
        "USER_JOB_WRAPPER",
        "",
        Path,
        "Program that runs each job, taking the job's command line as arguments.",
    ),
    p(
        "USE_GID_PROCESS_TRACKING",
        "false",
        Boolean,
        "Whether job processes are tracked by a dedicated group id.",
    ),
    p(
        "USE_PID_NAMESPACES",
        "false",
        Boolean,
        "Whether each job runs in its own PID namespace.",
    ),
    p(
        "USE_PROCD",
        "true",
        Boolean,
        "Whether a separate process tracks job process trees.",
    ),
    p(
        "VANILLA",
        "5",
        Expression,
        "Helper: JobUniverse number of the vanilla universe.",
    ),
    p(
        "VM",
        "13",
        Expression,
        "Helper: JobUniverse number of the VM universe.",
    ),
    p(
        "VMP_HOST_MACHINE",
        "",
        Text,
        "On an inner virtual machine: the host it runs on (its name or IP address); the slots publish the host's attributes as HOST_<attr>, and START is False while the host runs a job.",
    ),
    p(
        "VMP_VM_LIST",
        "",
        List,
        "On a VM host: the inner virtual machines it runs (names or IP addresses); START is False while one of them runs a job.",
    ),
    p(
        "WANT_SUSPEND",
        "False",
        Expression,
        "Whether SUSPEND is consulted, rather than going straight to PREEMPT.",
    ),
    p(
        "WANT_SUSPEND_VANILLA",
        "",
        Expression,
        "WANT_SUSPEND for vanilla jobs, where defined.",
    ),
    p(
        "WANT_VACATE",
        "True",
        Expression,
        "Whether a preempted job gets a soft vacate before being killed.",
    ),
    p(
        "WANT_VACATE_VANILLA",
        "",
        Expression,
        "WANT_VACATE for vanilla jobs, where defined.",
    ),
    p(
        "WARN_ON_UNUSED_SUBMIT_FILE_MACROS",
        "true",
        Boolean,
        "Whether submit warns about macros defined but never used.",
    ),
];

/// Defaults that hold only for one daemon subsystem (HTCondor's table writes
/// them `SUBSYS.NAME`): `(subsystem, name, default)`.
pub static SUBSYSTEM_DEFAULTS: &[(&str, &str, &str)] = &[
    ("COLLECTOR", "IsCollector", "true"),
    ("NEGOTIATOR", "IsNegotiator", "true"),
    ("SCHEDD", "IsSchedd", "true"),
    ("STARTD", "IsStartd", "true"),
    ("STARTER", "IsStarter", "true"),
    ("SUBMIT", "IsSubmit", "true"),
    ("TOOL", "IsTool", "true"),
];

/// The table entry for `name`, compared case-insensitively.
pub fn lookup(name: &str) -> Option<&'static Param> {
    PARAMS
        .binary_search_by(|p| cmp_upper(p.name, name))
        .ok()
        .map(|i| &PARAMS[i])
}

/// The default of `name` for `subsystem`: a subsystem-only default first,
/// then the general one. `None` when there is no default (or it is empty).
pub fn default_for(name: &str, subsystem: &str) -> Option<&'static str> {
    SUBSYSTEM_DEFAULTS
        .iter()
        .find(|(s, n, _)| s.eq_ignore_ascii_case(subsystem) && n.eq_ignore_ascii_case(name))
        .map(|(_, _, d)| *d)
        .or_else(|| lookup(name).map(|p| p.default))
        .filter(|d| !d.is_empty())
}

fn cmp_upper(a: &str, b: &str) -> std::cmp::Ordering {
    a.bytes()
        .map(|c| c.to_ascii_uppercase())
        .cmp(b.bytes().map(|c| c.to_ascii_uppercase()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_sorted_and_names_are_unique() {
        for w in PARAMS.windows(2) {
            assert_eq!(
                cmp_upper(w[0].name, w[1].name),
                std::cmp::Ordering::Less,
                "{} must come before {} (sorted by uppercase name, no duplicates)",
                w[0].name,
                w[1].name
            );
        }
    }

    #[test]
    fn every_entry_says_what_it_does() {
        for p in PARAMS {
            assert!(!p.meaning.trim().is_empty(), "{} has no meaning", p.name);
        }
    }

    #[test]
    fn lookup_ignores_case() {
        assert_eq!(lookup("start").map(|p| p.name), Some("START"));
        assert!(lookup("NO_SUCH_KNOB").is_none());
    }
}
