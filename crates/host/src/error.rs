//! One error for everything the machine would not tell.

use std::fmt;
use std::path::{Path, PathBuf};

/// A reading that could not be taken: which file or program, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostError {
    /// The file, directory or program at fault.
    pub path: PathBuf,
    pub message: String,
}

impl HostError {
    pub fn new(path: impl AsRef<Path>, message: impl Into<String>) -> HostError {
        HostError {
            path: path.as_ref().to_path_buf(),
            message: message.into(),
        }
    }

    pub(crate) fn io(path: &Path, e: std::io::Error) -> HostError {
        HostError::new(path, e.to_string())
    }
}

impl fmt::Display for HostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.message)
    }
}

impl std::error::Error for HostError {}
