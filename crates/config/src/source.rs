//! What the configuration needs from the outside world, as two small
//! traits, so that this crate stays pure and tests need no disk:
//! [`Files`] reads files, lists directories and (only where allowed) runs
//! `include command :` programs; [`Host`] gives environment variables and
//! the host's built-in macros (`DETECTED_CORES`, `FULL_HOSTNAME`, ...).
//! The `ferrocondor` binary implements both for the real machine;
//! [`MemFiles`] and [`FixedHost`] are in-memory versions for tests and the
//! simulator.

use std::collections::BTreeMap;

/// Why a file could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FileError {
    NotFound,
    /// Any other failure, as the operating system describes it.
    Other(String),
}

impl std::fmt::Display for FileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FileError::NotFound => f.write_str("no such file or directory"),
            FileError::Other(m) => f.write_str(m),
        }
    }
}

/// Reading configuration files.
pub trait Files {
    /// The whole text of a file.
    fn read(&self, path: &str) -> Result<String, FileError>;
    /// The names (not paths) of the entries of a directory, in any order.
    fn list_dir(&self, path: &str) -> Result<Vec<String>, FileError>;
    /// Runs `command` (with a shell) and returns what it printed; for
    /// `include command :`, which the loader only calls when the admin has
    /// allowed it.
    fn run(&self, command: &str) -> Result<String, String>;
}

/// The host the configuration is read on.
pub trait Host {
    /// An environment variable.
    fn env(&self, name: &str) -> Option<String>;
    /// Every environment variable (for `_CONDOR_NAME` overrides).
    fn env_vars(&self) -> Vec<(String, String)>;
    /// Macros HTCondor defines from the host before reading any file:
    /// `FULL_HOSTNAME`, `HOSTNAME`, `IP_ADDRESS`, `DETECTED_CORES`,
    /// `DETECTED_CPUS`, `DETECTED_MEMORY`, `ARCH`, `OPSYS`, `OPSYSANDVER`,
    /// `UNAME_ARCH`, `UNAME_OPSYS`, `USERNAME`, `TILDE`, ...
    fn macros(&self) -> Vec<(String, String)>;
    /// Seed for `$RANDOM_CHOICE()` and `$RANDOM_INTEGER()`.
    fn random_seed(&self) -> u64;
}

/// Files held in memory: path to text. Directories are implied by paths.
#[derive(Clone, Debug, Default)]
pub struct MemFiles {
    pub files: BTreeMap<String, String>,
    /// Output of `include command :` programs, by command text.
    pub commands: BTreeMap<String, String>,
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
    fn read(&self, path: &str) -> Result<String, FileError> {
        let path = path.strip_prefix("./").unwrap_or(path);
        self.files.get(path).cloned().ok_or(FileError::NotFound)
    }

    fn list_dir(&self, path: &str) -> Result<Vec<String>, FileError> {
        let dir = path.trim_end_matches('/');
        let prefix = format!("{dir}/");
        let names: Vec<String> = self
            .files
            .keys()
            .filter_map(|k| k.strip_prefix(&prefix))
            .filter(|rest| !rest.contains('/'))
            .map(str::to_string)
            .collect();
        if names.is_empty() {
            Err(FileError::NotFound)
        } else {
            Ok(names)
        }
    }

    fn run(&self, command: &str) -> Result<String, String> {
        self.commands
            .get(command)
            .cloned()
            .ok_or_else(|| format!("no such command: {command}"))
    }
}

/// A host whose every reading is fixed: for tests and the simulator.
#[derive(Clone, Debug, Default)]
pub struct FixedHost {
    pub env: BTreeMap<String, String>,
    pub macros: BTreeMap<String, String>,
    pub seed: u64,
}

impl FixedHost {
    /// A host with no environment and no built-in macros.
    pub fn empty() -> FixedHost {
        FixedHost::default()
    }

    pub fn with_env(mut self, name: &str, value: &str) -> FixedHost {
        self.env.insert(name.to_string(), value.to_string());
        self
    }

    pub fn with_macro(mut self, name: &str, value: &str) -> FixedHost {
        self.macros.insert(name.to_string(), value.to_string());
        self
    }
}

impl Host for FixedHost {
    fn env(&self, name: &str) -> Option<String> {
        self.env.get(name).cloned()
    }

    fn env_vars(&self) -> Vec<(String, String)> {
        self.env
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    fn macros(&self) -> Vec<(String, String)> {
        self.macros
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    fn random_seed(&self) -> u64 {
        self.seed
    }
}
