//! Where the machine's files are: `/` on the real machine, a temporary
//! tree in tests.

use std::path::{Path, PathBuf};

use crate::HostError;

/// The directory that stands for `/`. Every reader builds its paths from
/// one (`root.path("proc/meminfo")`), so a test can lay out a small tree
/// that mimics `/proc`, `/sys` and `/dev` and read it instead.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Root(PathBuf);

impl Root {
    /// The real machine.
    pub fn system() -> Root {
        Root(PathBuf::from("/"))
    }

    /// A tree laid out under `dir`.
    pub fn at(dir: impl Into<PathBuf>) -> Root {
        Root(dir.into())
    }

    /// `rel` (written without a leading `/`, or with one) under the root.
    pub fn path(&self, rel: impl AsRef<Path>) -> PathBuf {
        let rel = rel.as_ref();
        self.0.join(rel.strip_prefix("/").unwrap_or(rel))
    }

    /// The text of `rel`, or an error naming the file.
    pub fn read(&self, rel: impl AsRef<Path>) -> Result<String, HostError> {
        let p = self.path(rel);
        std::fs::read_to_string(&p).map_err(|e| HostError::io(&p, e))
    }

    /// The text of `rel`, or `None` when it does not exist or cannot be
    /// read (for files that only some kernels and setups have).
    pub fn read_optional(&self, rel: impl AsRef<Path>) -> Option<String> {
        std::fs::read_to_string(self.path(rel)).ok()
    }
}
