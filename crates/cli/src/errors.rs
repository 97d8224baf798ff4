//! The one place that decides what a failure looks like and which exit code it
//! gets. Commands return [`Outcome`] or [`Error`]; `main` turns them into a
//! process exit status.
//!
//! Exit codes (documented in `ferrocondor --help` and README.md):
//!
//! | code | meaning |
//! |---|---|
//! | 0 | done; for `classad match`: the ads match; for `vectors --check`: every case agrees |
//! | 1 | done, and the answer is "no": the ads do not match, some vector cases differ, or a configuration parameter asked for is not defined |
//! | 2 | could not do what was asked: usage error, unreadable file, parse error, bad input |
//!
//! This is grep's and diff's convention, so `ferrocondor classad match` can sit
//! in a shell `if` the way `grep -q` does.

use std::fmt;
use std::io;
use std::path::PathBuf;
use std::process::ExitCode;

use classad::ParseError;

/// What a command that ran to the end has to say about its answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Done, and the answer (if there is a yes/no one) is yes.
    Success,
    /// Done, and the answer is no: the ads do not match.
    NoMatch,
    /// Done, and some vector cases differ from the expected answers.
    ChecksFailed,
    /// Done, and some configuration parameter asked for is not defined.
    NotDefined,
    /// Done, and some jobs asked for were not acted on (not found, not
    /// the caller's, in the wrong status).
    SomeRefused,
}

impl Outcome {
    pub fn exit_code(self) -> u8 {
        match self {
            Outcome::Success => 0,
            Outcome::NoMatch
            | Outcome::ChecksFailed
            | Outcome::NotDefined
            | Outcome::SomeRefused => 1,
        }
    }
}

/// Exit code for every [`Error`] (clap uses the same one for usage errors).
pub const EXIT_ERROR: u8 = 2;

/// Why a command could not do what was asked.
#[derive(Debug)]
pub enum Error {
    /// A file (or stdin) could not be read.
    Read { path: String, source: io::Error },
    /// Writing the answer failed (a closed pipe is not reported).
    Write(io::Error),
    /// ClassAd text that does not parse; `origin` names where it came from
    /// (a file name, or `<expression>` for the command line).
    Parse { origin: String, error: ParseError },
    /// A configuration that cannot be read (the message names file and line).
    Config(config::ConfigError),
    /// A configuration value that cannot be expanded (a macro loop).
    Lookup(config::LookupError),
    /// A submit description that cannot be turned into jobs.
    Submit(submit::SubmitError),
    /// The schedd's submit requirements refuse the submission.
    Refused(String),
    /// An input file that is wrong; the message names it and says how.
    Input(String),
    /// A request that makes no sense as given.
    Usage(String),
    /// The pool could not be reached, or refused the request.
    Pool(wire::Error),
    /// The pool could not start or run.
    Daemon(String),
    /// A line of a vectors file that is not a JSON object.
    Json {
        origin: String,
        line: usize,
        message: String,
    },
}

impl Error {
    pub fn read(path: impl Into<PathBuf>, source: io::Error) -> Error {
        Error::Read {
            path: path.into().display().to_string(),
            source,
        }
    }

    pub fn parse(origin: impl Into<String>, error: ParseError) -> Error {
        Error::Parse {
            origin: origin.into(),
            error,
        }
    }

    pub fn exit_code(&self) -> u8 {
        EXIT_ERROR
    }

    /// A reader closed our output early (`ferrocondor ... | head`): not an
    /// error worth a message, as in other Unix tools.
    pub fn is_broken_pipe(&self) -> bool {
        matches!(self, Error::Write(e) if e.kind() == io::ErrorKind::BrokenPipe)
    }
}

impl From<wire::Error> for Error {
    fn from(e: wire::Error) -> Error {
        Error::Pool(e)
    }
}

impl From<io::Error> for Error {
    /// Plain `?` on an I/O error means writing the answer failed; reading
    /// goes through [`Error::read`] so the message names the file.
    fn from(e: io::Error) -> Error {
        Error::Write(e)
    }
}

/// Messages name the file, line and column first, like a compiler, so
/// editors and `grep` can jump to them.
impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Read { path, source } => write!(f, "{path}: cannot read: {source}"),
            Error::Write(e) => write!(f, "cannot write output: {e}"),
            Error::Parse { origin, error } => f.write_str(&error.display_with_source(origin)),
            Error::Json {
                origin,
                line,
                message,
            } => write!(f, "{origin}:{line}: not a JSON object: {message}"),
            Error::Config(e) => write!(f, "configuration error: {e}"),
            Error::Lookup(e) => write!(f, "configuration error: {e}"),
            Error::Submit(e) => write!(f, "{e}"),
            Error::Refused(m) => write!(f, "submission refused: {m}"),
            Error::Input(m) => f.write_str(m),
            Error::Usage(m) => write!(f, "usage: {m}"),
            Error::Pool(e) => write!(f, "{e}"),
            Error::Daemon(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for Error {}

/// Reports the result of a command on stderr and gives the exit status.
pub fn finish(result: Result<Outcome, Error>) -> ExitCode {
    match result {
        Ok(outcome) => ExitCode::from(outcome.exit_code()),
        Err(e) if e.is_broken_pipe() => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::from(e.exit_code())
        }
    }
}
