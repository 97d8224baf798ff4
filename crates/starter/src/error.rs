//! What can go wrong, saying what failed and with which path.

use std::io;
use std::path::PathBuf;

/// The job could not be started. Nothing of it is left running; the
/// sandbox is removed unless the settings keep it.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The job ad lacks something needed, or holds something unusable.
    #[error("job ad: {0}")]
    Ad(String),
    #[error("cannot {what} `{path}`: {source}")]
    Io {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// Input transfer: a file the job asked for is missing or unreadable,
    /// or a URL plugin failed. `subcode` is HTCondor's HoldReasonSubCode
    /// for it: the errno, or what the plugin's end says
    /// ([`crate::url_plugin::download_subcode`]).
    #[error("cannot transfer input `{path}` into the sandbox: {source}")]
    Input {
        path: PathBuf,
        #[source]
        source: io::Error,
        subcode: i64,
    },
    /// An input URL while ENABLE_URL_TRANSFERS is false.
    #[error("input `{0}` is a URL, and URL transfers are disabled (ENABLE_URL_TRANSFERS)")]
    UrlInput(String),
    /// Output to a URL (OutputDestination, TransferOutputRemaps) while
    /// ENABLE_URL_TRANSFERS is false.
    #[error("output goes to the URL `{0}`, and URL transfers are disabled (ENABLE_URL_TRANSFERS)")]
    UrlOutput(String),
    /// USE_GID_PROCESS_TRACKING: no tracking group is free.
    #[error("{0}")]
    Tracking(String),
    /// Whom to run the job as.
    #[error("cannot run the job as `{user}`: {reason}")]
    RunAs { user: String, reason: String },
    #[error("hook {hook} (`{path}`) failed: {reason}")]
    Hook {
        hook: &'static str,
        path: PathBuf,
        reason: String,
    },
    /// The job's process could not be made; `step` names the part of its
    /// set-up that failed (joining the cgroup, setsid, renice, changing user,
    /// changing directory, opening a standard stream, exec).
    #[error("cannot start `{program}`: {step} failed: {source}")]
    Spawn {
        program: PathBuf,
        step: String,
        #[source]
        source: io::Error,
    },
}

/// Acting on a running job failed.
#[derive(Debug, thiserror::Error)]
pub enum ControlError {
    #[error("cannot {what} the job (pid {pid}) through `{path}`: {source}")]
    Cgroup {
        what: &'static str,
        pid: i32,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot send {signal} to the job (pid {pid}): {source}")]
    Signal {
        signal: i32,
        pid: i32,
        #[source]
        source: io::Error,
    },
    #[error("cannot wait for the job (pid {pid}): {source}")]
    Wait {
        pid: i32,
        #[source]
        source: io::Error,
    },
}

/// Something that went wrong after the job exited. The exit itself is
/// still reported; these say what of the clean-up or the output is missing.
#[derive(Debug, thiserror::Error)]
pub enum FinishProblem {
    #[error("output `{name}` was not found in the sandbox `{sandbox}`")]
    MissingOutput { name: String, sandbox: PathBuf },
    #[error("cannot transfer output `{from}` to `{to}`: {source}")]
    Output {
        from: PathBuf,
        to: PathBuf,
        #[source]
        source: io::Error,
    },
    /// An output file could not be uploaded to its URL: HTCondor's
    /// TransferOutputError (12) with `subcode` (the plugin's exit status
    /// shifted left by 8, its signal, or ETIME).
    #[error("cannot upload output `{from}` to `{url}`: {reason}")]
    UrlOutput {
        from: PathBuf,
        url: String,
        reason: String,
        subcode: i64,
    },
    #[error("cannot remove `{path}`: {source}")]
    Cleanup {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("processes of the job were still alive after the hard kill: {pids:?}")]
    Survivors { pids: Vec<i32> },
    #[error("hook {hook} (`{path}`) failed: {reason}")]
    Hook {
        hook: &'static str,
        path: PathBuf,
        reason: String,
    },
    #[error(transparent)]
    Control(#[from] ControlError),
}
