//! HTCondor's command numbers (`condor_commands.h`) for the commands the
//! pool serves or sends, and their names for logs and refusals; and
//! ferrocondor's own (`FC_*`), which HTCondor's clients never send.

macro_rules! commands {
    ($($name:ident = $n:expr),* $(,)?) => {
        $(pub const $name: i32 = $n;)*
        /// The name HTCondor gives a command number (`None`: not one we know).
        pub fn name(cmd: i32) -> Option<&'static str> {
            match cmd {
                $($n => Some(stringify!($name)),)*
                _ => None,
            }
        }
    };
}

commands! {
    UPDATE_STARTD_AD = 0,
    UPDATE_SCHEDD_AD = 1,
    UPDATE_MASTER_AD = 2,
    QUERY_STARTD_ADS = 5,
    QUERY_SCHEDD_ADS = 6,
    QUERY_MASTER_ADS = 7,
    QUERY_STARTD_PVT_ADS = 10,
    UPDATE_SUBMITTOR_AD = 11,
    QUERY_SUBMITTOR_ADS = 12,
    INVALIDATE_STARTD_ADS = 13,
    INVALIDATE_SCHEDD_ADS = 14,
    INVALIDATE_MASTER_ADS = 15,
    INVALIDATE_SUBMITTOR_ADS = 18,
    UPDATE_COLLECTOR_AD = 19,
    QUERY_COLLECTOR_ADS = 20,
    INVALIDATE_COLLECTOR_ADS = 21,
    QUERY_HIST_STARTD = 22,
    QUERY_HIST_STARTD_LIST = 23,
    QUERY_HIST_SUBMITTOR = 24,
    QUERY_HIST_SUBMITTOR_LIST = 25,
    QUERY_HIST_GROUPS = 26,
    QUERY_HIST_GROUPS_LIST = 27,
    QUERY_HIST_SUBMITTORGROUPS = 28,
    QUERY_HIST_SUBMITTORGROUPS_LIST = 29,
    QUERY_ANY_ADS = 48,
    UPDATE_NEGOTIATOR_AD = 49,
    QUERY_NEGOTIATOR_ADS = 50,
    INVALIDATE_NEGOTIATOR_ADS = 51,
    QUERY_MULTIPLE_ADS = 53,
    QUERY_MULTIPLE_PVT_ADS = 54,
    UPDATE_AD_GENERIC = 58,
    INVALIDATE_ADS_GENERIC = 59,
    UPDATE_STARTD_AD_WITH_ACK = 60,
    NEGOTIATE = 416,
    RESCHEDULE = 421,
    X_EVENT_NOTIFICATION = 427,
    GET_HISTORY = 429,
    MATCH_INFO = 440,
    ALIVE = 441,
    REQUEST_CLAIM = 442,
    RELEASE_CLAIM = 443,
    ACTIVATE_CLAIM = 444,
    VACATE_ALL_CLAIMS = 447,
    SET_PRIORITY = 449,
    GET_PRIORITY = 451,
    RESET_USAGE = 458,
    SET_PRIORITYFACTOR = 459,
    RESET_ALL_USAGE = 460,
    GET_RESLIST = 463,
    VACATE_CLAIM = 465,
    PERMISSION_AND_AD = 472,
    VACATE_ALL_FAST = 474,
    VACATE_CLAIM_FAST = 475,
    ACT_ON_JOBS = 478,
    DELETE_USER = 482,
    SET_ACCUMUSAGE = 494,
    SET_BEGINTIME = 495,
    SET_LASTTIME = 496,
    DRAIN_JOBS = 512,
    CANCEL_DRAIN_JOBS = 513,
    GET_PRIORITY_ROLLUP = 514,
    QUERY_SCHEDD_HISTORY = 515,
    QUERY_JOB_ADS = 516,
    QUERY_JOB_ADS_WITH_AUTH = 519,
    SET_CEILING = 525,
    SET_FLOOR = 530,
    QMGMT_READ_CMD = 1111,
    QMGMT_WRITE_CMD = 1112,
    DC_RECONFIG = 60004,
    DC_OFF_GRACEFUL = 60005,
    DC_OFF_FAST = 60006,
    DC_CONFIG_VAL = 60007,
    DC_AUTHENTICATE = 60010,
    DC_NOP = 60011,
    DC_RECONFIG_FULL = 60012,
    DC_OFF_PEACEFUL = 60015,
    DC_NOP_READ = 60020,
    DC_NOP_WRITE = 60021,
    DC_NOP_NEGOTIATOR = 60022,
    DC_NOP_ADMINISTRATOR = 60023,
    DC_NOP_CONFIG = 60025,
    DC_NOP_DAEMON = 60026,
    DC_NOP_ADVERTISE_STARTD = 60027,
    DC_NOP_ADVERTISE_SCHEDD = 60028,
    DC_NOP_ADVERTISE_MASTER = 60029,
    DC_SEC_QUERY = 60040,
    DC_GET_SESSION_TOKEN = 60046,
    // ferrocondor's own, not HTCondor's: the roles' messages between the
    // processes of a pool (daemons::role_transport), at the DAEMON level.
    // HTCondor's command bases stop well below it.
    FC_ROLE_MESSAGES = 95000,
    // ferrocondor's own: a job's files between its execute point and its
    // access point on another host (daemons::file_transfer), at the
    // DAEMON level.
    FC_FILE_TRANSFER = 95001,
}

/// A command's name for a person: HTCondor's, or the number.
pub fn describe(cmd: i32) -> String {
    match name(cmd) {
        Some(n) => format!("{n} ({cmd})"),
        None => format!("command {cmd}"),
    }
}
