//! What a job is to the schedd: its id, its status with HTCondor's numbers,
//! the attribute names the queue keeps, and the hold reason codes.
//!
//! The numbers are HTCondor's own (`JobStatus`, `HoldReasonCode`), because
//! admins' expressions compare against them (`JobStatus == 5`,
//! `HoldReasonCode == 3`) and tools read them from ads and logs.

use std::fmt;

/// A job's id: the cluster it was submitted in and its process number
/// within that cluster (`ClusterId.ProcId`, printed `12.0`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct JobId {
    pub cluster: i64,
    pub proc: i64,
}

impl JobId {
    pub fn new(cluster: i64, proc: i64) -> JobId {
        JobId { cluster, proc }
    }
}

impl fmt::Display for JobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.cluster, self.proc)
    }
}

/// `JobStatus`, numbered as in HTCondor (docs: job ClassAd attributes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum JobStatus {
    Idle = 1,
    Running = 2,
    /// Removed (HTCondor's tools say "Removing" while the job is still
    /// being taken off its machine).
    Removed = 3,
    Completed = 4,
    Held = 5,
    TransferringOutput = 6,
    Suspended = 7,
}

impl JobStatus {
    pub fn number(self) -> i64 {
        self as i64
    }

    pub fn from_number(n: i64) -> Option<JobStatus> {
        Some(match n {
            1 => JobStatus::Idle,
            2 => JobStatus::Running,
            3 => JobStatus::Removed,
            4 => JobStatus::Completed,
            5 => JobStatus::Held,
            6 => JobStatus::TransferringOutput,
            7 => JobStatus::Suspended,
            _ => return None,
        })
    }

    /// The name `condor_q` uses.
    pub fn name(self) -> &'static str {
        match self {
            JobStatus::Idle => "Idle",
            JobStatus::Running => "Running",
            JobStatus::Removed => "Removed",
            JobStatus::Completed => "Completed",
            JobStatus::Held => "Held",
            JobStatus::TransferringOutput => "Transferring Output",
            JobStatus::Suspended => "Suspended",
        }
    }

    /// Whether the job holds a machine: a shadow is attached and the
    /// wall clock runs (Running, Suspended, Transferring Output).
    pub fn is_active(self) -> bool {
        matches!(
            self,
            JobStatus::Running | JobStatus::Suspended | JobStatus::TransferringOutput
        )
    }
}

impl fmt::Display for JobStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The job attributes the queue reads and writes, spelled as HTCondor
/// spells them.
pub mod attr {
    pub const CLUSTER_ID: &str = "ClusterId";
    pub const PROC_ID: &str = "ProcId";
    pub const OWNER: &str = "Owner";
    pub const USER: &str = "User";
    pub const QDATE: &str = "QDate";
    pub const JOB_STATUS: &str = "JobStatus";
    pub const LAST_JOB_STATUS: &str = "LastJobStatus";
    pub const ENTERED_CURRENT_STATUS: &str = "EnteredCurrentStatus";
    pub const JOB_UNIVERSE: &str = "JobUniverse";

    pub const JOB_START_DATE: &str = "JobStartDate";
    pub const JOB_CURRENT_START_DATE: &str = "JobCurrentStartDate";
    pub const JOB_CURRENT_START_EXECUTING_DATE: &str = "JobCurrentStartExecutingDate";
    pub const JOB_CURRENT_START_TRANSFER_OUTPUT_DATE: &str = "JobCurrentStartTransferOutputDate";
    pub const JOB_CURRENT_FINISH_TRANSFER_OUTPUT_DATE: &str = "JobCurrentFinishTransferOutputDate";
    pub const SHADOW_BDAY: &str = "ShadowBday";
    pub const LAST_MATCH_TIME: &str = "LastMatchTime";
    pub const NUM_JOB_MATCHES: &str = "NumJobMatches";
    pub const NUM_SHADOW_STARTS: &str = "NumShadowStarts";
    pub const JOB_RUN_COUNT: &str = "JobRunCount";
    pub const NUM_JOB_STARTS: &str = "NumJobStarts";
    pub const NUM_RESTARTS: &str = "NumRestarts";
    pub const NUM_JOB_COMPLETIONS: &str = "NumJobCompletions";
    pub const REMOTE_HOST: &str = "RemoteHost";
    /// How many machines run the job now (1 while it runs, else 0).
    pub const CURRENT_HOSTS: &str = "CurrentHosts";
    pub const LAST_REMOTE_HOST: &str = "LastRemoteHost";
    pub const STARTD_IP_ADDR: &str = "StartdIpAddr";
    /// The claim the job runs on (private, as in HTCondor: a capability
    /// at the execute point), kept while it runs so that a restarted
    /// access point can reconnect to it.
    pub const CLAIM_ID: &str = "ClaimId";
    /// When the access point lost word of the running job (022).
    pub const JOB_DISCONNECTED_DATE: &str = "JobDisconnectedDate";

    pub const REMOTE_WALL_CLOCK_TIME: &str = "RemoteWallClockTime";
    pub const CUMULATIVE_SLOT_TIME: &str = "CumulativeSlotTime";
    pub const COMMITTED_TIME: &str = "CommittedTime";
    pub const COMMITTED_SLOT_TIME: &str = "CommittedSlotTime";
    pub const COMMITTED_SUSPENSION_TIME: &str = "CommittedSuspensionTime";
    pub const CUMULATIVE_SUSPENSION_TIME: &str = "CumulativeSuspensionTime";
    pub const LAST_SUSPENSION_TIME: &str = "LastSuspensionTime";
    pub const TOTAL_SUSPENSIONS: &str = "TotalSuspensions";
    pub const LAST_VACATE_TIME: &str = "LastVacateTime";
    pub const REMOTE_USER_CPU: &str = "RemoteUserCpu";
    pub const REMOTE_SYS_CPU: &str = "RemoteSysCpu";
    pub const CUMULATIVE_REMOTE_USER_CPU: &str = "CumulativeRemoteUserCpu";
    pub const CUMULATIVE_REMOTE_SYS_CPU: &str = "CumulativeRemoteSysCpu";

    pub const EXIT_CODE: &str = "ExitCode";
    pub const EXIT_BY_SIGNAL: &str = "ExitBySignal";
    pub const EXIT_SIGNAL: &str = "ExitSignal";
    pub const EXIT_STATUS: &str = "ExitStatus";
    pub const JOB_CORE_DUMPED: &str = "JobCoreDumped";
    pub const COMPLETION_DATE: &str = "CompletionDate";

    pub const HOLD_REASON: &str = "HoldReason";
    pub const HOLD_REASON_CODE: &str = "HoldReasonCode";
    pub const HOLD_REASON_SUBCODE: &str = "HoldReasonSubCode";
    pub const LAST_HOLD_REASON: &str = "LastHoldReason";
    pub const LAST_HOLD_REASON_CODE: &str = "LastHoldReasonCode";
    pub const LAST_HOLD_REASON_SUBCODE: &str = "LastHoldReasonSubCode";
    pub const NUM_HOLDS: &str = "NumHolds";
    pub const NUM_HOLDS_BY_REASON: &str = "NumHoldsByReason";
    pub const RELEASE_REASON: &str = "ReleaseReason";
    pub const REMOVE_REASON: &str = "RemoveReason";

    pub const PERIODIC_HOLD: &str = "PeriodicHold";
    pub const PERIODIC_RELEASE: &str = "PeriodicRelease";
    pub const PERIODIC_REMOVE: &str = "PeriodicRemove";
    pub const ON_EXIT_HOLD: &str = "OnExitHold";
    pub const ON_EXIT_REMOVE: &str = "OnExitRemove";
    pub const TIMER_REMOVE: &str = "TimerRemove";

    pub const SUBMIT_EVENT_NOTES: &str = "SubmitEventNotes";
    pub const SUBMIT_EVENT_USER_NOTES: &str = "SubmitEventUserNotes";
}

/// The names of [`attr`] the queue writes and reads as a job runs, each
/// made once (interned, its hash taken): a run writes some forty of them
/// into the job's ad, and making the name again from its text at every
/// write (hashing and interning it) cost more than the write itself.
pub(crate) mod names {
    use std::ops::Deref;
    use std::sync::LazyLock;

    use classad::AttrName;

    use super::attr;

    /// One of the names, with a bit of its own: a set of them (those an
    /// edit touched) is a word, not a list to search.
    pub(crate) struct Name {
        pub(crate) bit: u64,
        made: LazyLock<AttrName>,
    }

    impl Deref for Name {
        type Target = AttrName;
        fn deref(&self) -> &AttrName {
            &self.made
        }
    }

    // Numbered in order; a sixty-fifth name would not compile (its bit
    // overflows the word).
    macro_rules! names {
        ($($name:ident = $text:expr;)*) => { names!(@ 0; $($name = $text;)*); };
        (@ $n:expr; $name:ident = $text:expr; $($rest:tt)*) => {
            pub(crate) static $name: Name = Name {
                bit: 1 << ($n),
                made: LazyLock::new(|| AttrName::new($text)),
            };
            names!(@ $n + 1; $($rest)*);
        };
        (@ $n:expr;) => {};
    }

    names! {
        JOB_STATUS = attr::JOB_STATUS;
        LAST_JOB_STATUS = attr::LAST_JOB_STATUS;
        ENTERED_CURRENT_STATUS = attr::ENTERED_CURRENT_STATUS;
        CLUSTER_ID = attr::CLUSTER_ID;
        OWNER = attr::OWNER;
        USER = attr::USER;
        JOB_START_DATE = attr::JOB_START_DATE;
        JOB_CURRENT_START_DATE = attr::JOB_CURRENT_START_DATE;
        JOB_CURRENT_START_EXECUTING_DATE = attr::JOB_CURRENT_START_EXECUTING_DATE;
        JOB_CURRENT_START_TRANSFER_OUTPUT_DATE = attr::JOB_CURRENT_START_TRANSFER_OUTPUT_DATE;
        JOB_CURRENT_FINISH_TRANSFER_OUTPUT_DATE = attr::JOB_CURRENT_FINISH_TRANSFER_OUTPUT_DATE;
        SHADOW_BDAY = attr::SHADOW_BDAY;
        LAST_MATCH_TIME = attr::LAST_MATCH_TIME;
        NUM_JOB_MATCHES = attr::NUM_JOB_MATCHES;
        NUM_SHADOW_STARTS = attr::NUM_SHADOW_STARTS;
        JOB_RUN_COUNT = attr::JOB_RUN_COUNT;
        NUM_JOB_STARTS = attr::NUM_JOB_STARTS;
        NUM_JOB_COMPLETIONS = attr::NUM_JOB_COMPLETIONS;
        REMOTE_HOST = attr::REMOTE_HOST;
        CURRENT_HOSTS = attr::CURRENT_HOSTS;
        LAST_REMOTE_HOST = attr::LAST_REMOTE_HOST;
        STARTD_IP_ADDR = attr::STARTD_IP_ADDR;
        CLAIM_ID = attr::CLAIM_ID;
        JOB_DISCONNECTED_DATE = attr::JOB_DISCONNECTED_DATE;
        REMOTE_WALL_CLOCK_TIME = attr::REMOTE_WALL_CLOCK_TIME;
        CUMULATIVE_SLOT_TIME = attr::CUMULATIVE_SLOT_TIME;
        COMMITTED_TIME = attr::COMMITTED_TIME;
        COMMITTED_SLOT_TIME = attr::COMMITTED_SLOT_TIME;
        CUMULATIVE_SUSPENSION_TIME = attr::CUMULATIVE_SUSPENSION_TIME;
        LAST_SUSPENSION_TIME = attr::LAST_SUSPENSION_TIME;
        TOTAL_SUSPENSIONS = attr::TOTAL_SUSPENSIONS;
        LAST_VACATE_TIME = attr::LAST_VACATE_TIME;
        REMOTE_USER_CPU = attr::REMOTE_USER_CPU;
        REMOTE_SYS_CPU = attr::REMOTE_SYS_CPU;
        CUMULATIVE_REMOTE_USER_CPU = attr::CUMULATIVE_REMOTE_USER_CPU;
        CUMULATIVE_REMOTE_SYS_CPU = attr::CUMULATIVE_REMOTE_SYS_CPU;
        EXIT_CODE = attr::EXIT_CODE;
        EXIT_BY_SIGNAL = attr::EXIT_BY_SIGNAL;
        EXIT_SIGNAL = attr::EXIT_SIGNAL;
        EXIT_STATUS = attr::EXIT_STATUS;
        JOB_CORE_DUMPED = attr::JOB_CORE_DUMPED;
        COMPLETION_DATE = attr::COMPLETION_DATE;
        HOLD_REASON = attr::HOLD_REASON;
        HOLD_REASON_CODE = attr::HOLD_REASON_CODE;
        HOLD_REASON_SUBCODE = attr::HOLD_REASON_SUBCODE;
        LAST_HOLD_REASON = attr::LAST_HOLD_REASON;
        LAST_HOLD_REASON_CODE = attr::LAST_HOLD_REASON_CODE;
        LAST_HOLD_REASON_SUBCODE = attr::LAST_HOLD_REASON_SUBCODE;
        NUM_HOLDS = attr::NUM_HOLDS;
        NUM_HOLDS_BY_REASON = attr::NUM_HOLDS_BY_REASON;
        RELEASE_REASON = attr::RELEASE_REASON;
        REMOVE_REASON = attr::REMOVE_REASON;
        ACCOUNTING_GROUP = "AccountingGroup";
        BYTES_SENT = "BytesSent";
        BYTES_RECVD = "BytesRecvd";
        IMAGE_SIZE = "ImageSize";
        RESIDENT_SET_SIZE = "ResidentSetSize";
    }
}

/// `HoldReasonCode` values, with the label `NumHoldsByReason` counts them
/// under (docs: codes-other-values/hold-reason-codes and the
/// `HoldReasonCode` table of the job attributes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct HoldCode(pub i64);

impl HoldCode {
    pub const UNSPECIFIED: HoldCode = HoldCode(0);
    /// `condor_hold`.
    pub const USER_REQUEST: HoldCode = HoldCode(1);
    /// A job policy expression (`periodic_hold`, `on_exit_hold`) was true.
    pub const JOB_POLICY: HoldCode = HoldCode(3);
    /// A job policy expression evaluated to UNDEFINED (or another
    /// non-boolean): HTCondor holds rather than guess.
    pub const JOB_POLICY_UNDEFINED: HoldCode = HoldCode(5);
    /// `hold = true` in the submit description.
    pub const SUBMITTED_ON_HOLD: HoldCode = HoldCode(15);
    pub const SPOOLING_INPUT: HoldCode = HoldCode(16);
    /// The machine's `WANT_HOLD` was true.
    pub const STARTD_HELD_JOB: HoldCode = HoldCode(21);
    /// `SYSTEM_PERIODIC_HOLD` was true.
    pub const SYSTEM_POLICY: HoldCode = HoldCode(26);
    /// The job used more of a resource than it was given (its cgroup's
    /// memory limit: the kernel killed it).
    pub const JOB_OUT_OF_RESOURCES: HoldCode = HoldCode(34);
    /// Listed by HTCondor, but since HTCondor 8.x an undefined system
    /// expression does not fire, so the schedd never uses it.
    pub const SYSTEM_POLICY_UNDEFINED: HoldCode = HoldCode(27);

    /// The `NumHoldsByReason` label for this code (HTCondor's table).
    pub fn label(self) -> &'static str {
        match self.0 {
            0 => "Unspecified",
            1 => "UserRequest",
            2 => "GlobusGramError",
            3 => "JobPolicy",
            4 => "CorruptedCredential",
            5 => "JobPolicyUndefined",
            6 => "FailedToCreateProcess",
            7 => "UnableToOpenOutput",
            8 => "UnableToOpenInput",
            9 => "UnableToOpenOutputStream",
            10 => "UnableToOpenInputStream",
            11 => "InvalidTransferAck",
            12 => "TransferOutputError",
            13 => "TransferInputError",
            14 => "IwdError",
            15 => "SubmittedOnHold",
            16 => "SpoolingInput",
            17 => "JobShadowMismatch",
            18 => "InvalidTransferGoAhead",
            19 => "HookPrepareJobFailure",
            20 => "MissedDeferredExecutionTime",
            21 => "StartdHeldJob",
            22 => "UnableToInitUserLog",
            23 => "FailedToAccessUserAccount",
            24 => "NoCompatibleShadow",
            25 => "InvalidCronSettings",
            26 => "SystemPolicy",
            27 => "SystemPolicyUndefined",
            32 => "MaxTransferInputSizeExceeded",
            33 => "MaxTransferOutputSizeExceeded",
            34 => "JobOutOfResources",
            35 => "InvalidDockerImage",
            36 => "FailedToCheckpoint",
            37 => "EC2UserError",
            38 => "EC2InternalError",
            39 => "EC2AdminError",
            40 => "EC2ConnectionProblem",
            41 => "EC2ServerError",
            42 => "EC2InstancePotentiallyLost",
            43 => "PreScriptFailed",
            44 => "PostScriptFailed",
            45 => "SingularityTestFailed",
            46 => "JobDurationExceeded",
            47 => "JobExecutionTimeExceeded",
            _ => "Unspecified",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_keep_htcondors_numbers() {
        for n in 1..=7 {
            assert_eq!(JobStatus::from_number(n).unwrap().number(), n);
        }
        assert_eq!(JobStatus::from_number(0), None);
        assert_eq!(JobStatus::Held.number(), 5);
        assert_eq!(JobStatus::TransferringOutput.name(), "Transferring Output");
    }

    #[test]
    fn hold_codes_have_htcondors_labels() {
        assert_eq!(HoldCode::JOB_POLICY.label(), "JobPolicy");
        assert_eq!(HoldCode::JOB_POLICY_UNDEFINED.label(), "JobPolicyUndefined");
        assert_eq!(HoldCode::SYSTEM_POLICY.0, 26);
        assert_eq!(JobId::new(12, 3).to_string(), "12.3");
    }
}
