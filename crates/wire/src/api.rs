//! The requests and answers of the access point's API. Every endpoint takes
//! a JSON body (`POST`) and answers JSON; a refusal is an HTTP error status
//! with an [`ErrorBody`]. Paths are the `PATH_*` constants.
//!
//! Who asks is never part of a request: the daemon takes it from the
//! socket (the peer's uid), so a client cannot claim to be someone else.

use serde::{Deserialize, Serialize};

pub const PATH_HELLO: &str = "/v1/hello";
pub const PATH_NEW_CLUSTER: &str = "/v1/cluster";
pub const PATH_SUBMIT: &str = "/v1/submit";
pub const PATH_QUERY: &str = "/v1/jobs/query";
pub const PATH_ACT: &str = "/v1/jobs/act";
pub const PATH_HISTORY: &str = "/v1/history";
pub const PATH_SHUTDOWN: &str = "/v1/shutdown";
/// The slot ads (`condor_status`).
pub const PATH_SLOTS: &str = "/v1/slots/query";
/// A command to the execute point (`condor_vacate`, `condor_drain`).
pub const PATH_STARTD: &str = "/v1/startd";
/// The accountant's table, and changes to it (`condor_userprio`).
pub const PATH_USERPRIO: &str = "/v1/userprio";
/// Read the configuration again (`condor_reconfig`).
pub const PATH_RECONFIG: &str = "/v1/reconfig";

/// The largest submission the pool takes: bytes of a [`PATH_SUBMIT`]
/// request's body. The largest legitimate request is a submission of a
/// big cluster, which carries every proc's whole ad: a plain job's ad is
/// about 1.6 KB of JSON (`executable`, `arguments`, `log`, `output`,
/// `error`), one with `getenv = true` grows by the submitter's whole
/// environment (2 to 8 KB on a desktop). HTCondor's schedd takes at most
/// MAX_JOBS_PER_SUBMISSION = 20,000 jobs from one submission by default;
/// 20,000 ads of 12 KiB each, or 150,000 plain ones, fit in 256 MiB.
/// Bigger is refused before it is read, with [`too_large`]'s message.
pub const MAX_SUBMIT_BYTES: usize = 256 << 20;

/// The largest body of any other request. Those carry a constraint, a
/// projection and job ids: a command line cannot carry more than 2 MiB
/// (Linux's ARG_MAX), whose job ids (`12.3`) grow about twice as JSON.
pub const MAX_REQUEST_BYTES: usize = 4 << 20;

/// The most bytes the pool takes in the body of a request to `path`.
pub fn body_limit(path: &str) -> usize {
    if path == PATH_SUBMIT {
        MAX_SUBMIT_BYTES
    } else {
        MAX_REQUEST_BYTES
    }
}

/// `n` bytes for a person: `256 MiB`, `4 MiB`, `1500 bytes`.
pub fn show_bytes(n: usize) -> String {
    if n >= 1 << 20 && n & ((1 << 20) - 1) == 0 {
        format!("{} MiB", n >> 20)
    } else {
        format!("{n} bytes")
    }
}

/// Why a request to `path` of `size` bytes (when known) is refused: it is
/// over [`body_limit`]. The client and the pool say the same.
pub fn too_large(path: &str, size: Option<u64>) -> String {
    let limit = body_limit(path);
    let size = size.map_or_else(String::new, |n| format!(" ({n} bytes)"));
    if path == PATH_SUBMIT {
        format!(
            "the submission is too large{size}: the pool takes at most {} in one submission \
             (about 20,000 jobs of 12 KiB each); split the jobs into several submissions",
            show_bytes(limit)
        )
    } else {
        format!(
            "the request is too large{size}: the pool takes at most {} in a request other \
             than a submission",
            show_bytes(limit)
        )
    }
}

/// The body of every refusal.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorBody {
    pub error: String,
}

/// An empty request or answer.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Empty {}

/// Who the daemon is, and who it thinks the caller is.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hello {
    /// The user name the daemon took from the socket.
    pub user: String,
    /// The schedd's name (the host's name), for `condor_q`'s banner.
    pub schedd: String,
    /// The schedd's address as the banner shows it (`<unix:/path>`).
    pub address: String,
    /// The daemon's process id.
    pub pid: u32,
    pub version: String,
}

/// A cluster id handed out to the caller, to build the job ads with
/// (`$(Cluster)`) and then submit. Only the caller may submit it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewCluster {
    pub cluster: u32,
}

/// One cluster of job ads, built by the `submit` crate on the client.
/// `ads[i]` must have `ClusterId = cluster` and `ProcId = i`. The daemon
/// sets `Owner` from the socket's peer, whatever the ads say.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubmitRequest {
    pub cluster: u32,
    /// Each job's ad, in new ClassAd syntax.
    pub ads: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Submitted {
    pub cluster: u32,
    pub procs: u32,
    /// A submit requirement that failed as a warning, if any.
    pub warning: Option<String>,
}

/// Which jobs a query or an action is about. All given parts must hold.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Selection {
    /// Any of these ids (a cluster alone selects all its procs).
    #[serde(default)]
    pub ids: Vec<JobSpec>,
    /// Any of these owners.
    #[serde(default)]
    pub owners: Vec<String>,
    /// A ClassAd expression each job must make true.
    #[serde(default)]
    pub constraint: Option<String>,
    /// Only the caller's own jobs (condor_q's default).
    #[serde(default)]
    pub mine: bool,
}

/// `CLUSTER` or `CLUSTER.PROC`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobSpec {
    pub cluster: u32,
    pub proc: Option<u32>,
}

impl JobSpec {
    /// Reads `12` or `12.3`; anything else is `None`.
    pub fn parse(text: &str) -> Option<JobSpec> {
        let (c, p) = match text.split_once('.') {
            Some((c, p)) => (c, Some(p)),
            None => (text, None),
        };
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        if !digits(c) || p.is_some_and(|p| !digits(p)) {
            return None;
        }
        Some(JobSpec {
            cluster: c.parse().ok()?,
            proc: match p {
                Some(p) => Some(p.parse().ok()?),
                None => None,
            },
        })
    }
}

impl std::fmt::Display for JobSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.proc {
            Some(p) => write!(f, "{}.{p}", self.cluster),
            None => write!(f, "{}", self.cluster),
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueryRequest {
    #[serde(default)]
    pub selection: Selection,
    /// Only these attributes of each ad (all of them when empty).
    #[serde(default)]
    pub projection: Vec<String>,
}

/// Jobs counted by status, as condor_q's totals lines show them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Totals {
    pub jobs: u64,
    pub completed: u64,
    pub removed: u64,
    pub idle: u64,
    pub running: u64,
    pub held: u64,
    pub suspended: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueryAnswer {
    pub hello: Hello,
    /// The jobs selected, in id order, as new-syntax ClassAd text.
    pub ads: Vec<String>,
    /// Every job of the caller.
    pub user_totals: Totals,
    /// Every job in the queue.
    pub all_totals: Totals,
}

/// What a tool asks to be done to jobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    Hold,
    Release,
    Remove,
    /// condor_vacate_job: a running job is evicted from its machine (its
    /// soft kill signal first) and goes back to idle; `VacateFast` kills
    /// it at once.
    Vacate,
    VacateFast,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActRequest {
    pub action: Action,
    pub selection: Selection,
    /// The reason to record (HTCondor's `-reason`); default `via condor_hold
    /// (by user alice)` and the like.
    #[serde(default)]
    pub reason: Option<String>,
}

/// One job that could not be acted on, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failure {
    pub job: String,
    pub error: String,
    /// HTCondor's action result for the job (`AR_NOT_FOUND` 2,
    /// `AR_BAD_STATUS` 3, `AR_ALREADY_DONE` 4, `AR_PERMISSION_DENIED` 5).
    #[serde(default)]
    pub code: i64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActAnswer {
    /// The jobs acted on (`3.0`), in id order; all of them are on disk.
    pub done: Vec<String>,
    /// The jobs selected that were refused (wrong status, not yours).
    pub failed: Vec<Failure>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistoryRequest {
    #[serde(default)]
    pub selection: Selection,
    /// At most this many jobs, newest first.
    #[serde(default)]
    pub limit: Option<usize>,
    #[serde(default)]
    pub projection: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistoryAnswer {
    /// Newest first, as new-syntax ClassAd text.
    pub ads: Vec<String>,
}

/// Which slot ads to return (`condor_status`), and which attributes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SlotsRequest {
    /// The `MyType` of the ads wanted: `Machine` (slots, the default),
    /// `Scheduler`, `Submitter`.
    #[serde(default)]
    pub ad_type: Option<String>,
    /// A ClassAd expression each slot ad must make true.
    #[serde(default)]
    pub constraint: Option<String>,
    /// Only these attributes of each ad (all of them when empty).
    #[serde(default)]
    pub projection: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SlotsAnswer {
    /// In slot order, as new-syntax ClassAd text.
    pub ads: Vec<String>,
}

/// How `condor_drain` treats running jobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DrainHow {
    /// Jobs get their retirement time, then their vacate time.
    Graceful,
    /// Only their vacate time.
    Quick,
    /// Killed at once.
    Fast,
}

/// A command to the execute point. Only the pool's own user, root and the
/// queue super users may give one.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "command")]
pub enum StartdCommand {
    /// Evict the job of one slot (by name, `slot1`), or of every slot;
    /// `fast` kills instead of asking the job to exit.
    Vacate {
        #[serde(default)]
        slot: Option<String>,
        #[serde(default)]
        fast: bool,
    },
    /// Drain the machine.
    Drain {
        how: DrainHow,
        #[serde(default)]
        resume_on_completion: bool,
        /// START while draining (`-start`); false when not given.
        #[serde(default)]
        start: Option<String>,
        #[serde(default)]
        reason: Option<String>,
        /// CheckExpr (`-check`): refused unless true in every slot's ad.
        #[serde(default)]
        check: Option<String>,
    },
    /// Stop draining.
    CancelDrain,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StartdAnswer {
    /// What the execute point did, for the person.
    pub message: String,
    /// The machine's name (the startd's), as `condor_drain` and
    /// `condor_vacate` name it in what they print.
    #[serde(default)]
    pub machine: String,
}

/// `condor_userprio`: the table, after the changes asked for (changes need
/// the pool's own user, root or a queue super user).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct UserprioRequest {
    /// `-setfactor USER FACTOR`.
    #[serde(default)]
    pub set_factor: Option<(String, f64)>,
    /// `-setprio USER PRIO`.
    #[serde(default)]
    pub set_priority: Option<(String, f64)>,
    /// `-resetusage USER`.
    #[serde(default)]
    pub reset_usage: Option<String>,
}

/// One submitter in the accountant's table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UserprioRow {
    pub name: String,
    pub effective_priority: f64,
    pub real_priority: f64,
    pub priority_factor: f64,
    /// Weighted slots in use now.
    pub resources_used: f64,
    /// Weighted slot-hours used since usage was last reset.
    pub accumulated_usage_hours: f64,
    /// When usage began to be counted, and when last charged (epoch
    /// seconds; 0 when never).
    pub begin_usage_time: i64,
    pub last_usage_time: i64,
    /// An accounting group's own record (`<none>` is the root group),
    /// not a submitter's.
    #[serde(default)]
    pub is_group: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UserprioAnswer {
    /// When the table was brought up to date (epoch seconds).
    pub last_update: i64,
    pub rows: Vec<UserprioRow>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReconfigAnswer {
    /// What changed, for the person (a configuration error is a refusal).
    pub message: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_specs_are_a_cluster_or_a_proc() {
        assert_eq!(
            JobSpec::parse("12.3"),
            Some(JobSpec {
                cluster: 12,
                proc: Some(3)
            })
        );
        assert_eq!(JobSpec::parse("12").unwrap().proc, None);
        for bad in ["", "x", "1.", ".1", "1.2.3", "-1", "alice", "99999999999"] {
            assert_eq!(JobSpec::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn submissions_may_be_large_and_other_requests_small() {
        assert_eq!(body_limit(PATH_SUBMIT), 256 << 20);
        assert_eq!(body_limit(PATH_QUERY), 4 << 20);
        let m = too_large(PATH_SUBMIT, Some(300 << 20));
        assert!(
            m.contains("(314572800 bytes)") && m.contains("at most 256 MiB in one submission"),
            "{m}"
        );
        let m = too_large(PATH_ACT, None);
        assert!(m.contains("at most 4 MiB in a request other"), "{m}");
        assert_eq!(show_bytes(1500), "1500 bytes");
    }

    #[test]
    fn requests_round_trip_and_missing_parts_default() {
        let r = ActRequest {
            action: Action::Hold,
            selection: Selection {
                ids: vec![JobSpec::parse("3.1").unwrap()],
                ..Selection::default()
            },
            reason: Some("because".into()),
        };
        let text = serde_json::to_string(&r).unwrap();
        assert!(text.contains("\"hold\""), "{text}");
        assert_eq!(serde_json::from_str::<ActRequest>(&text).unwrap(), r);
        let q: QueryRequest = serde_json::from_str("{}").unwrap();
        assert_eq!(q, QueryRequest::default());
    }
}
