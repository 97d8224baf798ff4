//! `use CATEGORY : TEMPLATE[(args)]`: configuration templates (HTCondor
//! calls them metaknobs).
//!
//! A template is configuration text, read as if it stood where the `use`
//! statement is, after its arguments are put in: `$(1)` the first argument,
//! `$(2:default)`, `$(1?)` (1 if given, else 0), `$(2+)` (the second
//! argument and all after it, as written), `$(0)` all of them, `$(0#)` how
//! many, `$(0?)` whether any. Names of categories and templates are
//! case-insensitive.
//!
//! The definitions below are HTCondor 25.14.1's, so that `use POLICY :
//! Desktop` gives exactly the expressions an HTCondor admin knows (the
//! vectors `m18`-`m27` check them against HTCondor). Each template is
//! written as HTCondor defines it, statement for statement; only the
//! comments are ours. A template HTCondor has but ferrocondor does not
//! implement (security, cron hooks, ...) is an error that says so, never a
//! silent no-op.

/// One template.
#[derive(Debug)]
pub struct Template {
    pub category: &'static str,
    pub name: &'static str,
    /// One line: what it is for.
    pub summary: &'static str,
    pub body: &'static str,
}

const fn t(
    category: &'static str,
    name: &'static str,
    summary: &'static str,
    body: &'static str,
) -> Template {
    Template {
        category,
        name,
        summary,
        body,
    }
}

/// Every template ferrocondor implements.
pub static TEMPLATES: &[Template] = &[
    // ---- POLICY: execute-point policies -------------------------------
    t(
        "POLICY",
        "Always_Run_Jobs",
        "Run jobs whenever a slot is free; never suspend or preempt them.",
        "
WANT_SUSPEND=False
WANT_VACATE=True
SUSPEND=False
CONTINUE=True
PREEMPT=False
START=True
KILL=False
PREEMPTION_REQUIREMENTS=False
NEGOTIATOR_CONSIDER_PREEMPTION=False
MaxJobRetirementTime=2147483647
CLAIM_WORKLIFE=1200
",
    ),
    t(
        "POLICY",
        "Desktop",
        "Scavenge a desktop's idle cycles: start when the owner is away, suspend when they come back.",
        r#"
if ! defined PolicyExprFragments
  use FEATURE : POLICY_EXPR_FRAGMENTS
endif
STARTD_LATCH_EXPRS = $(STARTD_LATCH_EXPRS) CpuBusy
CpuBusyTimer=IfThenElse(CpuBusyValue is 1, time() - CpuBusyTime, 0)
WANT_SUSPEND=($(SmallJob) || $(KeyboardNotBusy) || $(IsVanilla) ) && ( $(SUSPEND))
WANT_VACATE=$(ActivationTimer) > 600 || $(IsVanilla)
SUSPEND=($(KeyboardBusy) || ( ($(CpuBusyTimer) > 120) && $(ActivationTimer) > 90))
CONTINUE=($(CPUIdle) && ($(ActivityTimer) > 10) && (KeyboardIdle > $(ContinueIdleTime)))
PREEMPT=(((Activity == "Suspended") && ($(ActivityTimer) > $(MaxSuspendTime))) || (SUSPEND && (WANT_SUSPEND == False)))
START=((KeyboardIdle > $(StartIdleTime)) && ( $(CPUIdle) || (State != "Unclaimed" && State != "Owner")) )
KILL=False
MaxJobRetirementTime=0
CLAIM_WORKLIFE=
SLOTS_CONNECTED_TO_KEYBOARD=1000000
SLOTS_CONNECTED_TO_CONSOLE=1000000
IS_OWNER=(START =?= False)
"#,
    ),
    t(
        "POLICY",
        "Desktop_Hours",
        "Run jobs only outside working hours. Args: (begin hour, end hour [, first workday, last workday]).",
        "
use FEATURE : POLICY_HOURS_TO_START($(1+))
NonCondorLoadAvg=(LoadAvg - CondorLoadAvg)
CpuBusy=($(NonCondorLoadAvg) >= $(HighLoad))
STARTD_LATCH_EXPRS = $(STARTD_LATCH_EXPRS) CpuBusy
CpuBusyTimer=(CpuBusyValue * (time() - CpuBusyTime))
PREEMPT = $(NoJobsHours)
START = $(RunJobsHours)
WANT_SUSPEND=False
WANT_VACATE=True
SUSPEND=False
CONTINUE=True
KILL=False
MaxJobRetirementTime=0
CLAIM_WORKLIFE=
SLOTS_CONNECTED_TO_KEYBOARD=1000000
SLOTS_CONNECTED_TO_CONSOLE=1000000
IS_OWNER=(START =?= False)
",
    ),
    t(
        "POLICY",
        "Desktop_Idle",
        "Run jobs while the desktop is idle, evict (not suspend) when its owner returns. Args: optional hours as for Desktop_Hours.",
        "
if $(1?)
  use FEATURE : POLICY_HOURS_TO_START($(1+))
endif
NonCondorLoadAvg=(LoadAvg - CondorLoadAvg)
CpuBusy=($(NonCondorLoadAvg) >= $(HighLoad))
CpuIdle=($(NonCondorLoadAvg) <= $(BackgroundLoad))
STARTD_LATCH_EXPRS = $(STARTD_LATCH_EXPRS) CpuBusy
CpuBusyTimer=(CpuBusyValue * (time() - CpuBusyTime))
PreemptKeyboardIdleTime=60
PreemptCpuBusyTime=120
PREEMPT=(KeyboardIdle < $(PreemptKeyboardIdleTime)) || ($(CpuBusyTimer) > $(PreemptCpuBusyTime))
if defined NoJobsHours
  PREEMPT = ($(PREEMPT)) && ($(NoJobsHours))
endif
START=(KeyboardIdle > $(StartIdleTime)) && $(CPUIdle)
if defined RunJobsHours
  START = ($(START)) || ($(RunJobsHours))
endif
WANT_SUSPEND=False
WANT_VACATE=True
SUSPEND=False
CONTINUE=True
KILL=False
MaxJobRetirementTime=0
CLAIM_WORKLIFE=
SLOTS_CONNECTED_TO_KEYBOARD=1000000
SLOTS_CONNECTED_TO_CONSOLE=1000000
IS_OWNER=(START =?= False)
",
    ),
    t(
        "POLICY",
        "UWCS_Desktop",
        "The University of Wisconsin CS desktop policy of HTCondor 7.",
        "
use FEATURE : UWCS_DESKTOP_POLICY_VALUES
WANT_SUSPEND=$(UWCS_WANT_SUSPEND)
WANT_VACATE=$(UWCS_WANT_VACATE)
SUSPEND=$(UWCS_SUSPEND)
CONTINUE=$(UWCS_CONTINUE)
PREEMPT=$(UWCS_PREEMPT)
START=$(UWCS_START)
KILL=$(UWCS_KILL)
PERIODIC_CHECKPOINT=$(UWCS_PERIODIC_CHECKPOINT)
PREEMPTION_REQUIREMENTS=$(UWCS_PREEMPTION_REQUIREMENTS)
PREEMPTION_RANK=$(UWCS_PREEMPTION_RANK)
NEGOTIATOR_PRE_JOB_RANK=$(UWCS_NEGOTIATOR_PRE_JOB_RANK)
NEGOTIATOR_POST_JOB_RANK=$(UWCS_NEGOTIATOR_POST_JOB_RANK)
MaxJobRetirementTime=$(UWCS_MaxJobRetirementTime)
CLAIM_WORKLIFE=$(UWCS_CLAIM_WORKLIFE)
SLOTS_CONNECTED_TO_KEYBOARD=1024*1024
IS_OWNER=(START =?= False)
",
    ),
    t(
        "POLICY",
        "Limit_Job_Runtimes",
        "Evict jobs that have run longer than a limit. Args: ([seconds]), default 24 hours.",
        r#"
MAX_JOB_RUNTIME=$(1:24*3600)
MaxJobRetirementTime=$(MAX_JOB_RUNTIME)+120
PREEMPT=(Activity == "Busy") && ((time() - EnteredCurrentActivity) > $(MAX_JOB_RUNTIME))
"#,
    ),
    t(
        "POLICY",
        "Preempt_If_Runtime_Exceeds",
        "Preempt a job at once when it has run longer than a limit. Args: ([seconds]), default 24 hours.",
        r#"
MAX_JOB_RUNTIME = $(1:24*3600)
PREEMPT_RUNTIME_EXCEEDS = (JobState == "Running") && ((time() - JobCurrentStartDate) > $(MAX_JOB_RUNTIME))
use policy : PREEMPT_IF( PREEMPT_RUNTIME_EXCEEDS )
"#,
    ),
    t(
        "POLICY",
        "Hold_If_Runtime_Exceeds",
        "Put a job on hold when it has run longer than a limit. Args: ([seconds]), default 24 hours.",
        r#"
MAX_JOB_RUNTIME = $(1:24*3600)
HOLD_REASON_RUNTIME_EXCEEDS = runtime exceeded maximum ($(MAX_JOB_RUNTIME) seconds)
HOLD_RUNTIME_EXCEEDS = (JobState == "Running") && ((time() - JobCurrentStartDate) > $(MAX_JOB_RUNTIME))
use policy : WANT_HOLD_IF( HOLD_RUNTIME_EXCEEDS, $(HOLD_SUBCODE_RUNTIME_EXCEEDS:103), $(HOLD_REASON_RUNTIME_EXCEEDS) )
"#,
    ),
    t(
        "POLICY",
        "Startd_Publish_CpusUsage",
        "Publish CpusUsage, the cores a job used over the last minute, in the slot ad.",
        r#"
CpusUsage = ifthenelse(TotalLoadAvg > 0.0 && Activity!="Idle", CondorLoadAvg/TotalLoadAvg*MIN({TotalLoadAvg, $(DETECTED_CORES)}), 0)
STARTD_ATTRS = $(STARTD_ATTRS) CpusUsage
"#,
    ),
    t(
        "POLICY",
        "Preempt_If_Cpus_Exceeded",
        "Preempt a job at once when it uses more cores than its slot has.",
        "
use POLICY : STARTD_PUBLISH_CpusUsage
CPU_EXCEEDED = (CpusUsage > Cpus + 0.8)
use POLICY : PREEMPT_IF(CPU_EXCEEDED)
",
    ),
    t(
        "POLICY",
        "Hold_If_Cpus_Exceeded",
        "Put a job on hold when it uses more cores than its slot has.",
        "
use POLICY : STARTD_PUBLISH_CpusUsage
CPU_EXCEEDED = (CpusUsage > Cpus + 0.8)
HOLD_REASON_CPU_EXCEEDED = CPU usage exceeded request_cpus
use POLICY : WANT_HOLD_IF( CPU_EXCEEDED, $(HOLD_SUBCODE_CPU_EXCEEDED:101), $(HOLD_REASON_CPU_EXCEEDED) )
",
    ),
    t(
        "POLICY",
        "Preempt_If_Disk_Exceeded",
        "Preempt a job at once when it uses more disk than its slot has.",
        "
DISK_EXCEEDED = (JobUniverse != 13 && DiskUsage =!= UNDEFINED && DiskUsage > Disk)
use POLICY : PREEMPT_IF(DISK_EXCEEDED)
",
    ),
    t(
        "POLICY",
        "Hold_If_Disk_Exceeded",
        "Put a job on hold when it uses more disk than its slot has.",
        "
DISK_EXCEEDED = (JobUniverse != 13 && DiskUsage =!= UNDEFINED && DiskUsage > Disk)
HOLD_REASON_DISK_EXCEEDED = disk usage exceeded allocated disk
use POLICY : WANT_HOLD_IF( DISK_EXCEEDED, $(HOLD_SUBCODE_DISK_EXCEEDED:104), $(HOLD_REASON_DISK_EXCEEDED) )
",
    ),
    t(
        "POLICY",
        "Preempt_If_Memory_Exceeded",
        "Preempt a job at once when it uses more memory than its slot has.",
        "
MEMORY_EXCEEDED = (JobUniverse != 13 && MemoryUsage =!= UNDEFINED && MemoryUsage > Memory)
use POLICY : PREEMPT_IF(MEMORY_EXCEEDED)
",
    ),
    t(
        "POLICY",
        "Hold_If_Memory_Exceeded",
        "Put a job on hold when it uses more memory than its slot has.",
        "
MEMORY_EXCEEDED = (JobUniverse != 13 && MemoryUsage =!= UNDEFINED && MemoryUsage > Memory)
HOLD_REASON_MEMORY_EXCEEDED = memory usage exceeded request_memory
use POLICY : WANT_HOLD_IF( MEMORY_EXCEEDED, $(HOLD_SUBCODE_MEMORY_EXCEEDED:102), $(HOLD_REASON_MEMORY_EXCEEDED) )
",
    ),
    t(
        "POLICY",
        "Preempt_If",
        "Preempt a job at once when the expression in the named macro is true. Args: (macro name).",
        "
if !$(1?)
  error : use POLICY : PREEMPT_IF requires an argument. It should be the name of a config variable that has the trigger expression.
endif
if defined PREEMPT
  PREEMPT = $($(1)) || $(PREEMPT)
else
  PREEMPT = $($(1))
endif
MAXJOBRETIREMENTTIME = ifthenelse($($(1)),-1,$(MAXJOBRETIREMENTTIME:0))
if defined WANT_SUSPEND
  WANT_SUSPEND = $($(1)) =!= true && $(WANT_SUSPEND)
else
  WANT_SUSPEND = $($(1)) =!= true
endif
",
    ),
    t(
        "POLICY",
        "Want_Hold_If",
        "Preempt and hold a job when the expression in the named macro is true. Args: (macro name, hold subcode, reason).",
        r#"
use POLICY : PREEMPT_IF($(1))
if ! $(3?)
  error : use POLICY : WANT_HOLD_IF requires 3 arguments: policy_variable, subcode, reason_text
endif
if defined WANT_HOLD
  WANT_HOLD = (JobUniverse != 1 && $($(1))) || $(WANT_HOLD)
else
  WANT_HOLD = (JobUniverse != 1 && $($(1)))
endif
WANT_HOLD_SUBCODE = ifThenElse($($(1)), $(2) , $(WANT_HOLD_SUBCODE:UNDEFINED))
WANT_HOLD_REASON = ifThenElse($($(1)), "$(3+)", $(WANT_HOLD_REASON:UNDEFINED))
"#,
    ),
    // ---- ROLE: which daemons a machine runs ---------------------------
    t(
        "ROLE",
        "Personal",
        "A whole pool on one machine.",
        "
CONDOR_HOST=127.0.0.1
COLLECTOR_HOST=$(CONDOR_HOST):0
DAEMON_LIST=MASTER COLLECTOR NEGOTIATOR STARTD SCHEDD
RunBenchmarks=0
",
    ),
    t("ROLE", "Execute", "An execute point: runs jobs.", "\nDAEMON_LIST=$(DAEMON_LIST) STARTD\n"),
    t("ROLE", "Submit", "An access point: holds a job queue.", "\nDAEMON_LIST=$(DAEMON_LIST) SCHEDD\n"),
    t(
        "ROLE",
        "CentralManager",
        "The central manager: collector and negotiator.",
        "\nDAEMON_LIST=$(DAEMON_LIST) COLLECTOR NEGOTIATOR\n",
    ),
    // ---- FEATURE -------------------------------------------------------
    t(
        "FEATURE",
        "PartitionableSlot",
        "One partitionable slot holding the machine. Args: ([slot type [, resources]]), default 1, 100%.",
        "
NUM_SLOTS_TYPE_$(1:1)=1
SLOT_TYPE_$(1:1)_PARTITIONABLE=true
SLOT_TYPE_$(1:1)=$(2+:100%)
",
    ),
    t(
        "FEATURE",
        "StaticSlots",
        "Static slots of one type. Args: ([slot type [, count [, resources]]]), default 1, one per CPU.",
        "
NUM_SLOTS_TYPE_$(1:1)=$(2:$(NUM_CPUS))
SLOT_TYPE_$(1:1)_PARTITIONABLE=false
SLOT_TYPE_$(1:1)=$(3+:1/$(NUM_SLOTS_TYPE_$(1:1)))
SLOT_TYPE_$(1:1)=$(3+)
",
    ),
    t(
        "FEATURE",
        "GPUs",
        "Discover GPUs and offer them as a custom resource. Args: (optional discovery arguments).",
        "
MACHINE_RESOURCE_INVENTORY_GPUs=$(LIBEXEC)/condor_gpu_discovery $(1) -properties $(GPU_DISCOVERY_EXTRA)
ENVIRONMENT_FOR_AssignedGPUs=GPU_DEVICE_ORDINAL=/(CUDA|OCL)//  CUDA_VISIBLE_DEVICES=/CUDA//
ENVIRONMENT_VALUE_FOR_UnAssignedGPUs=10000
use feature : GPUsMonitor
",
    ),
    t(
        "FEATURE",
        "GPUsMonitor",
        "Measure GPU use and publish it in the slot and job ads.",
        r#"
use feature : Monitor( GPUs, WaitForExit, 300, $(GPU_MONITOR), SUM:GPUs, PEAK:GPUsMemory )
STARTD_CRON_GPUs_MONITOR_CONDITION = TotalGPUs > 0 && OpSys =!= "WINDOWS"
STARTD_JOB_ATTRS = $(STARTD_JOB_ATTRS) GPUsUsage GPUsMemoryUsage
"#,
    ),
    t(
        "FEATURE",
        "Monitor",
        "A resource monitor run by the startd. Args: (resource, mode, period, executable, metrics...).",
        "
if ! $(5?)
  error: use feature : monitor requires five or more arguments
endif
STARTD_CRON_JOBLIST = $(STARTD_CRON_JOBLIST) $(1)_MONITOR
STARTD_CRON_$(1)_MONITOR_MODE = $(2)
STARTD_CRON_$(1)_MONITOR_PERIOD = $(3)
STARTD_CRON_$(1)_MONITOR_EXECUTABLE = $(4)
STARTD_CRON_$(1)_MONITOR_METRICS = $(5+)
",
    ),
    t(
        "FEATURE",
        "Policy_Expr_Fragments",
        "The building blocks of the desktop policies (KeyboardBusy, CpuIdle, ActivationTimer, ...).",
        "
PolicyExprFragments=1
KeyboardBusy=(KeyboardIdle < $(MINUTE))
ConsoleBusy=(ConsoleIdle  < $(MINUTE))
KeyboardNotBusy=($(KeyboardBusy) == False)
JustCPU=($(CPUBusy) && ($(KeyboardBusy) == False))
MachineBusy=($(CPUBusy) || $(KeyboardBusy))
NonCondorLoadAvg=(LoadAvg - CondorLoadAvg)
CpuIdle=($(NonCondorLoadAvg) <= $(BackgroundLoad))
CpuBusy=($(NonCondorLoadAvg) >= $(HighLoad))
ActivationTimer=ifThenElse(JobStart =!= UNDEFINED, (time() - JobStart), 0)
LastCkpt=(time() - LastPeriodicCheckpoint)
",
    ),
    t(
        "FEATURE",
        "Policy_Hours_To_Start",
        "Working-hours expressions RunJobsHours and NoJobsHours. Args: (begin hour, end hour [, first workday, last workday]).",
        "
WorkdayBeginHour=$(1:8)
WorkdayEndHour=$(2:12+5)
WorkdayBeginMinuteStartJobs=($(WorkdayBeginHour))*60 - 29.5
WorkdayBeginMinuteStopJobs=($(WorkdayBeginHour))*60 - 9.5
WorkdayEndMinute=($(WorkdayEndHour))*60 + 0.5
RunJobsHours=ClockMin < $INT(WorkdayBeginMinuteStartJobs) || ClockMin > $INT(WorkdayEndMinute)
NoJobsHours=ClockMin > $INT(WorkdayBeginMinuteStopJobs) && ClockMin < $INT(WorkdayEndMinute)
if $(3?)
  WorkweekFirstDay=$(3:1)
  WorkweekLastDay=$(4:5)
  IsWeekend=ClockDay < $INT(WorkweekFirstDay) || ClockDay > $INT(WorkWeekLastDay)
  IsWorkday=ClockDay >= $INT(WorkweekFirstDay) && ClockDay <= $INT(WorkWeekLastDay)
  RunJobsHours=$(IsWeekend) || $(RunJobsHours)
  NoJobsHours=$(IsWorkday) && $(NoJobsHours)
endif
RunJobsHours=($(RunJobsHours))
NoJobsHours=($(NoJobsHours))
",
    ),
    t(
        "FEATURE",
        "UWCS_Desktop_Policy_Values",
        "The UWCS_* expressions of HTCondor 7's desktop policy, for use in your own.",
        r#"
if ! defined PolicyExprFragments
  use FEATURE : POLICY_EXPR_FRAGMENTS
endif
STARTD_LATCH_EXPRS = $(STARTD_LATCH_EXPRS) CpuBusy
CpuBusyTimer=IfThenElse(CpuBusyValue is 1, time() - CpuBusyTime, 0)
UWCS_WANT_SUSPEND=( $(SmallJob) || $(KeyboardNotBusy) || $(IsVanilla) ) && ( $(SUSPEND) )
UWCS_WANT_VACATE=( $(ActivationTimer) > 10 * $(MINUTE) || $(IsVanilla) )
UWCS_START=( (KeyboardIdle > $(StartIdleTime)) && ( $(CPUIdle) || (State != "Unclaimed" && State != "Owner")) )
UWCS_SUSPEND=( $(KeyboardBusy) || ( ($(CpuBusyTimer) > 2 * $(MINUTE)) && $(ActivationTimer) > 90 ) )
UWCS_CONTINUE=( $(CPUIdle) && ($(ActivityTimer) > 10) && (KeyboardIdle > $(ContinueIdleTime)) )
UWCS_PREEMPT=( ((Activity == "Suspended") && ($(ActivityTimer) > $(MaxSuspendTime))) || (SUSPEND && (WANT_SUSPEND == False)) )
UWCS_MaxJobRetirementTime=0
UWCS_KILL=false
UWCS_PERIODIC_CHECKPOINT=$(LastCkpt) > (3 * $(HOUR) + $RANDOM_INTEGER(-30,30,1) * $(MINUTE) )
UWCS_NEGOTIATOR_PRE_JOB_RANK=(10000000 * My.Rank) + (1000000 * (RemoteOwner =?= UNDEFINED)) - (100000 * Cpus) - Memory
UWCS_NEGOTIATOR_POST_JOB_RANK=(RemoteOwner =?= UNDEFINED) * (ifthenElse(isUndefined(KFlops), 1000, Kflops) - SlotID - 1.0e10*(Offline=?=True))
UWCS_PREEMPTION_REQUIREMENTS=((SubmitterGroup =?= RemoteGroup) && ($(StateTimer) > (1 * $(HOUR))) && (RemoteUserPrio > TARGET.SubmitterUserPrio * 1.2)) || (MY.NiceUser == True)
UWCS_PREEMPTION_RANK=(RemoteUserPrio * 1000000) - ifThenElse(isUndefined(TotalJobRuntime), 0, TotalJobRuntime)
"#,
    ),
    t(
        "FEATURE",
        "TestingMode_Policy_Values",
        "The TESTINGMODE_* expressions of HTCondor 7's no-preemption policy.",
        "
TESTINGMODE_WANT_SUSPEND=False
TESTINGMODE_WANT_VACATE=True
TESTINGMODE_START=True
TESTINGMODE_SUSPEND=False
TESTINGMODE_CONTINUE=True
TESTINGMODE_PREEMPT=False
TESTINGMODE_KILL=False
TESTINGMODE_PERIODIC_CHECKPOINT=False
TESTINGMODE_PREEMPTION_REQUIREMENTS=False
TESTINGMODE_PREEMPTION_RANK=0
TESTINGMODE_CLAIM_WORKLIFE=1200
",
    ),
    // ---- SECURITY: authentication, encryption, authorization ---------
    t(
        "SECURITY",
        "HOST_BASED",
        "Authorization by IP addresses and host names.",
        "
ALLOW_ADMINISTRATOR=$(CONDOR_HOST)
ALLOW_READ=*
ALLOW_WRITE=$(FULL_HOSTNAME) $(IPV4_ADDRESS) $(IPV6_ADDRESS)
ALLOW_DAEMON=$(FULL_HOSTNAME) $(IPV4_ADDRESS) $(IPV6_ADDRESS)
ALLOW_NEGOTIATOR=$(CONDOR_HOST)
",
    ),
    t(
        "SECURITY",
        "WITH_AUTHENTICATION",
        "Authentication and integrity required.",
        "
SEC_DEFAULT_AUTHENTICATION=required
SEC_DEFAULT_INTEGRITY=required
",
    ),
    t(
        "SECURITY",
        "STRONG",
        "Authentication, encryption and integrity required.",
        "
SEC_DEFAULT_ENCRYPTION=required
SEC_DEFAULT_INTEGRITY=required
SEC_DEFAULT_AUTHENTICATION=required
",
    ),
    t(
        "SECURITY",
        "recommended_v9_0",
        "HTCondor 9.0's default security, args: ([service [, admins]]).",
        "
SECURITY_MODEL = 9.0
use security:strong
SEC_READ_AUTHENTICATION = OPTIONAL
SEC_READ_ENCRYPTION = OPTIONAL
SEC_READ_INTEGRITY = OPTIONAL
ALLOW_ADMINISTRATOR = $(1:condor)@* condor_pool@* $(2:root@*) $(3+)
ALLOW_DAEMON = $(1:condor)@*  condor_pool@*
ALLOW_NEGOTIATOR = $(1:condor)@* condor_pool@*
ALLOW_WRITE = *
ALLOW_READ = *
",
    ),
    t(
        "SECURITY",
        "recommended_v24_0",
        "HTCondor 24.0's default security, args: ([service [, admins]]).",
        "
SECURITY_MODEL = 24.0
use security:strong
SEC_READ_AUTHENTICATION = OPTIONAL
SEC_CLIENT_AUTHENTICATION = OPTIONAL
ALLOW_ADMINISTRATOR = $(1:condor)@* condor@password $(2:root@*) $(3+)
ALLOW_DAEMON = $(1:condor)@*  condor@password
ALLOW_NEGOTIATOR = $(1:condor)@* condor@password
ALLOW_WRITE = *
ALLOW_READ = *
",
    ),
    t(
        "SECURITY",
        "recommended",
        "The current default security, args: ([service [, admins]]).",
        "
use security:recommended_v24_0($(1+))
",
    ),
    t(
        "SECURITY",
        "get_htcondor_idtokens",
        "Recommended security with IDTOKENS and anonymous reads.",
        "
use security:recommended
SEC_READ_AUTHENTICATION_METHODS = $(SEC_DEFAULT_AUTHENTICATION_METHODS),ANONYMOUS
SEC_CLIENT_AUTHENTICATION_METHODS = $(SEC_DEFAULT_AUTHENTICATION_METHODS),ANONYMOUS
TRUST_DOMAIN = $(CONDOR_HOST)
",
    ),
    t(
        "SECURITY",
        "FIPS",
        "FIPS mode: strong security (AES only here).",
        "
FIPS = True
use security:strong
",
    ),
];

/// Templates HTCondor has that ferrocondor does not implement: `use` of one
/// is an error that says so (rather than "no such template").
pub static NOT_IMPLEMENTED: &[(&str, &str)] = &[
    ("SECURITY", "USER_BASED"),
    ("ROLE", "get_htcondor_central_manager get_htcondor_execute get_htcondor_submit"),
    ("FEATURE", "AssignAccountingGroup AssignProjectName ChildCollector CommonCloudAttributesAWS CommonCloudAttributesGoogle ContinuousCronHook DefaultCheckpointDestination GANGLIA HPC_ANNEX JobsHaveInstanceIDs OneShotCronHook PelicanCache PelicanRetryPolicy PeriodicCronHook REMOTE_CONFIG REMOTE_RUNTIME_CONFIG ScheddCronContinuous ScheddCronOneShot ScheddCronPeriodic ScheddUsermapFile SetJobAttrFromUsermap StartdCronContinuous StartdCronOneShot StartdCronPeriodic CollectorNode HADFixedPort HADReplication HADSharedPort ADSTASH"),
];

/// The template `category : name`, or a message saying why there is none.
pub fn find(category: &str, name: &str) -> Result<&'static Template, String> {
    if let Some(t) = TEMPLATES
        .iter()
        .find(|t| t.category.eq_ignore_ascii_case(category) && t.name.eq_ignore_ascii_case(name))
    {
        return Ok(t);
    }
    let upper = category.to_ascii_uppercase();
    if let Some((_, why)) = NOT_IMPLEMENTED.iter().find(|(c, _)| *c == upper) {
        let listed = why.split_whitespace().any(|n| n.eq_ignore_ascii_case(name));
        if listed {
            return Err(format!(
                "use {upper} : {name}: HTCondor has this template, but ferrocondor does not implement what it configures"
            ));
        }
    }
    let known: Vec<&str> = TEMPLATES
        .iter()
        .filter(|t| t.category == upper)
        .map(|t| t.name)
        .collect();
    if known.is_empty() {
        Err(format!(
            "use {category} : {name}: there is no template category `{category}`; the categories are POLICY, ROLE, FEATURE and SECURITY"
        ))
    } else {
        Err(format!(
            "use {upper} : {name}: there is no such template; {upper} templates are: {}",
            known.join(", ")
        ))
    }
}

/// Splits at commas outside parentheses.
pub fn split_args(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                out.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&text[start..]);
    out
}

/// Puts a `use`'s arguments into a template's text.
pub fn substitute(body: &str, args: &str) -> String {
    let given: Vec<&str> = if args.trim().is_empty() {
        Vec::new()
    } else {
        split_args(args)
    };
    let arg = |n: usize| given.get(n - 1).map_or("", |a| a.trim());
    // `$(N+)`: from the start of argument N to the end, as written.
    let from = |n: usize| -> &str {
        match given.get(n - 1) {
            Some(a) => {
                let offset = a.as_ptr() as usize - args.as_ptr() as usize;
                args[offset..].trim()
            }
            None => "",
        }
    };
    let mut out = String::with_capacity(body.len());
    let mut rest = body;
    while let Some(at) = rest.find("$(") {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        let bytes = tail.as_bytes();
        let Some(digit) = bytes
            .get(2)
            .filter(|b| b.is_ascii_digit())
            .map(|b| (b - b'0') as usize)
        else {
            out.push_str("$(");
            rest = &tail[2..];
            continue;
        };
        let mut i = 3;
        let modifier = match bytes.get(i) {
            Some(b'+') | Some(b'?') | Some(b'#') => {
                i += 1;
                bytes[i - 1]
            }
            _ => 0,
        };
        let (default, end) = match bytes.get(i) {
            Some(b')') => (None, i + 1),
            Some(b':') => match crate::syntax::matching_paren(tail, 1) {
                Some(close) => (Some(&tail[i + 1..close]), close + 1),
                None => {
                    out.push_str("$(");
                    rest = &tail[2..];
                    continue;
                }
            },
            _ => {
                out.push_str("$(");
                rest = &tail[2..];
                continue;
            }
        };
        let value: String = match (digit, modifier) {
            (0, b'?') => (if given.iter().any(|a| !a.trim().is_empty()) {
                "1"
            } else {
                "0"
            })
            .into(),
            (0, b'#') => given.len().to_string(),
            (0, _) => args.trim().to_string(),
            (n, b'?') => (if arg(n).is_empty() { "0" } else { "1" }).into(),
            (n, b'+') => from(n).to_string(),
            (_, b'#') => String::new(),
            (n, _) => arg(n).to_string(),
        };
        match default {
            Some(d) if value.is_empty() => out.push_str(&substitute(d, args)),
            _ => out.push_str(&value),
        }
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments() {
        let a = "arg1, , arg3";
        assert_eq!(substitute("$(0)|$(0?)|$(0#)", a), "arg1, , arg3|1|3");
        assert_eq!(substitute("$(1)|$(1?)|$(1+)", a), "arg1|1|arg1, , arg3");
        assert_eq!(substitute("$(2)|$(2?)|$(2+)|$(3)", a), "|0|, arg3|arg3");
        assert_eq!(substitute("$(1:3600)|$(4:x)", ""), "3600|x");
        assert_eq!(substitute("$(0#)|$(0?)|$(1?)", ""), "0|0|0");
        assert_eq!(
            substitute("SLOT_TYPE_$(1:1)=$(3+:1/$(NUM_SLOTS_TYPE_$(1:1)))", ""),
            "SLOT_TYPE_1=1/$(NUM_SLOTS_TYPE_1)"
        );
        assert_eq!(substitute("$($(1)) $(X)", "TOO_BIG"), "$(TOO_BIG) $(X)");
    }

    #[test]
    fn names_are_case_insensitive_and_unknown_ones_say_what_exists() {
        assert_eq!(find("policy", "desktop").unwrap().name, "Desktop");
        let e = find("POLICY", "NoSuchPolicy").unwrap_err();
        assert!(
            e.contains("no such template") && e.contains("Desktop"),
            "{e}"
        );
        assert_eq!(find("security", "recommended").unwrap().name, "recommended");
        let e = find("SECURITY", "USER_BASED").unwrap_err();
        assert!(e.contains("does not implement"), "{e}");
        let e = find("FEATURE", "StartdCronPeriodic").unwrap_err();
        assert!(e.contains("does not implement"), "{e}");
        let e = find("COLOUR", "Blue").unwrap_err();
        assert!(e.contains("no template category"), "{e}");
    }

    #[test]
    fn every_template_reads() {
        for t in TEMPLATES {
            let mut lines = crate::syntax::Lines::new(t.body);
            while let Some(l) = lines.next_logical() {
                crate::syntax::parse_statement(&l, &mut lines)
                    .unwrap_or_else(|e| panic!("{}:{}: {e}", t.category, t.name));
            }
        }
    }
}
