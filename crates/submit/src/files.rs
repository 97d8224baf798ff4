//! What submit needs from the file system, as one small trait, so that
//! this crate stays pure and tests need no disk: the executable's and the
//! input files' sizes (for `ExecutableSize`, `DiskUsage`), directory
//! listings (for `queue ... matching`) and whole files (for `queue ... from
//! file` and `include`). The `ferrocondor` binary implements it for the
//! real disk; [`MemFiles`] is an in-memory version for tests.
//!
//! Paths handed to the trait are absolute: submit joins relative names
//! with the submit directory or the job's initial directory first.

use std::collections::BTreeMap;

pub use config::FileError;

/// One entry of a directory listing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirEntry {
    pub name: String,
    pub is_dir: bool,
}

/// Reading the submitter's files.
pub trait Files {
    /// The size in bytes of a file; of a directory, the sum of the sizes
    /// of the files under it. `None` when nothing is there.
    fn size(&self, path: &str) -> Option<u64>;
    /// The entries of a directory, in any order.
    fn list_dir(&self, path: &str) -> Result<Vec<DirEntry>, FileError>;
    /// The whole text of a file.
    fn read(&self, path: &str) -> Result<String, FileError>;
    /// Runs `command` with a shell and returns what it printed, for
    /// `queue ... from command |`. Refused unless the caller allows it.
    fn run(&self, command: &str) -> Result<String, String> {
        Err(format!(
            "running `{command}` to produce queue items is not allowed here"
        ))
    }
}

/// Files held in memory, by absolute path. Directories are implied by the
/// paths of the files in them.
#[derive(Clone, Debug, Default)]
pub struct MemFiles {
    pub files: BTreeMap<String, String>,
}

impl MemFiles {
    pub fn new() -> MemFiles {
        MemFiles::default()
    }

    pub fn with(mut self, path: &str, text: &str) -> MemFiles {
        self.files.insert(path.to_string(), text.to_string());
        self
    }
}

impl Files for MemFiles {
    fn size(&self, path: &str) -> Option<u64> {
        if let Some(text) = self.files.get(path) {
            return Some(text.len() as u64);
        }
        let prefix = format!("{}/", path.trim_end_matches('/'));
        let mut under = self
            .files
            .iter()
            .filter(|(k, _)| k.starts_with(&prefix))
            .peekable();
        under.peek()?;
        Some(under.map(|(_, v)| v.len() as u64).sum())
    }

    fn list_dir(&self, path: &str) -> Result<Vec<DirEntry>, FileError> {
        let prefix = format!("{}/", path.trim_end_matches('/'));
        let mut out: Vec<DirEntry> = Vec::new();
        for key in self.files.keys() {
            let Some(rest) = key.strip_prefix(&prefix) else {
                continue;
            };
            let (name, is_dir) = match rest.split_once('/') {
                Some((dir, _)) => (dir, true),
                None => (rest, false),
            };
            if !out.iter().any(|e| e.name == name) {
                out.push(DirEntry {
                    name: name.to_string(),
                    is_dir,
                });
            }
        }
        if out.is_empty() {
            Err(FileError::NotFound)
        } else {
            Ok(out)
        }
    }

    fn read(&self, path: &str) -> Result<String, FileError> {
        self.files.get(path).cloned().ok_or(FileError::NotFound)
    }
}

/// `name` made absolute against `dir` (already absolute).
pub(crate) fn absolute(dir: &str, name: &str) -> String {
    if name.starts_with('/') {
        name.to_string()
    } else if dir.ends_with('/') {
        format!("{dir}{name}")
    } else {
        format!("{dir}/{name}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_files_sizes_and_listings() {
        let f = MemFiles::new()
            .with("/d/a.dat", "12")
            .with("/d/sub/b", "345")
            .with("/d/sub/c", "6");
        assert_eq!(f.size("/d/a.dat"), Some(2));
        assert_eq!(f.size("/d/sub"), Some(4));
        assert_eq!(f.size("/d/none"), None);
        let mut names = f.list_dir("/d").unwrap();
        names.sort_by(|a, b| a.name.cmp(&b.name));
        assert_eq!(
            names,
            vec![
                DirEntry {
                    name: "a.dat".into(),
                    is_dir: false
                },
                DirEntry {
                    name: "sub".into(),
                    is_dir: true
                }
            ]
        );
        assert_eq!(absolute("/d", "x"), "/d/x");
        assert_eq!(absolute("/d/", "x"), "/d/x");
        assert_eq!(absolute("/d", "/y"), "/y");
    }
}
