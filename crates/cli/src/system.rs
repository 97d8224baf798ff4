//! The real machine, as the configuration crate sees it: files on disk,
//! the process environment, and the built-in macros HTCondor derives from
//! the host (`FULL_HOSTNAME`, `DETECTED_CORES`, `DETECTED_MEMORY`, `ARCH`,
//! `OPSYS`, ...).
//!
//! This is the outermost layer, so it may touch the system. The readings
//! are the few the configuration needs before any daemon runs; the `host`
//! crate (with the startd) will take over the machine's live readings.

use std::collections::BTreeMap;
use std::process::Command;

use config::{FileError, Files, Host};

/// Files on the local disk; relative names are relative to the working
/// directory.
pub struct DiskFiles;

impl Files for DiskFiles {
    fn read(&self, path: &str) -> Result<String, FileError> {
        std::fs::read_to_string(path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => FileError::NotFound,
            _ => FileError::Other(e.to_string()),
        })
    }

    fn list_dir(&self, path: &str) -> Result<Vec<String>, FileError> {
        let entries = std::fs::read_dir(path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => FileError::NotFound,
            _ => FileError::Other(e.to_string()),
        })?;
        Ok(entries
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_file() || t.is_symlink()))
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect())
    }

    fn run(&self, command: &str) -> Result<String, String> {
        let out = Command::new("/bin/sh")
            .arg("-c")
            .arg(command)
            .output()
            .map_err(|e| e.to_string())?;
        if !out.status.success() {
            return Err(format!(
                "{} ({})",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        String::from_utf8(out.stdout).map_err(|_| "its output is not UTF-8".to_string())
    }
}

/// This machine and this process's environment.
pub struct RealHost {
    macros: Vec<(String, String)>,
    seed: u64,
}

impl RealHost {
    pub fn detect() -> RealHost {
        let mut m = BTreeMap::new();
        let full = read_trimmed("/proc/sys/kernel/hostname")
            .or_else(|| std::env::var("HOSTNAME").ok())
            .unwrap_or_else(|| "localhost".to_string());
        let short = full.split('.').next().unwrap_or(&full).to_string();
        m.insert("FULL_HOSTNAME", full.clone());
        m.insert("HOSTNAME", short);
        m.insert("IP_ADDRESS", ip_address(&full));
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        for name in [
            "DETECTED_CORES",
            "DETECTED_CPUS",
            "DETECTED_PHYSICAL_CPUS",
            "DETECTED_CPUS_LIMIT",
        ] {
            m.insert(name, cores.to_string());
        }
        if let Some(mb) = memory_mb() {
            m.insert("DETECTED_MEMORY", mb.to_string());
        }
        let (arch, uname_arch) = match std::env::consts::ARCH {
            "x86_64" => ("X86_64", "x86_64"),
            "aarch64" => ("aarch64", "aarch64"),
            "x86" => ("INTEL", "i686"),
            other => (other, other),
        };
        m.insert("ARCH", arch.to_string());
        m.insert("UNAME_ARCH", uname_arch.to_string());
        m.insert("OPSYS", "LINUX".to_string());
        m.insert("UNAME_OPSYS", "Linux".to_string());
        if let Some((name, major)) = os_release() {
            m.insert("OPSYSANDVER", format!("{name}{major}"));
            m.insert("OPSYS_NAME", name);
            m.insert("OPSYSMAJORVER", major);
        }
        if let Ok(user) = std::env::var("USER") {
            m.insert("USERNAME", user);
        }
        if let Some(home) = condor_home() {
            m.insert("TILDE", home);
        }
        let [a, b, c] = config::COMPATIBLE_VERSION;
        m.insert("CONDOR_VERSION", format!("{a}.{b}.{c}"));
        m.insert("FERROCONDOR_VERSION", env!("CARGO_PKG_VERSION").to_string());
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64)
            ^ (std::process::id() as u64) << 32;
        RealHost {
            macros: m.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
            seed,
        }
    }
}

impl Host for RealHost {
    fn env(&self, name: &str) -> Option<String> {
        std::env::var(name).ok()
    }

    fn env_vars(&self) -> Vec<(String, String)> {
        std::env::vars().collect()
    }

    fn macros(&self) -> Vec<(String, String)> {
        self.macros.clone()
    }

    fn random_seed(&self) -> u64 {
        self.seed
    }
}

/// The machine's size for laying out slots: cores and memory as detected;
/// disk and swap are not measured yet (the `host` crate will), so they are
/// published as 0.
pub fn host_readings() -> startd::resources::HostReadings {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
    let memory = memory_mb().unwrap_or(0) as i64;
    startd::resources::HostReadings::simple(cores, memory, 0, 0)
}

fn read_trimmed(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// Total memory in MiB, as HTCondor's DETECTED_MEMORY.
fn memory_mb() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024)
}

/// The distribution's name and major version, from /etc/os-release
/// (`Debian`, `12`), as HTCondor's OPSYS_NAME and OPSYSMAJORVER.
fn os_release() -> Option<(String, String)> {
    let text = std::fs::read_to_string("/etc/os-release").ok()?;
    let field = |key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(key)?.strip_prefix('='))
            .map(|v| v.trim_matches('"').to_string())
    };
    let id = field("ID")?;
    let mut name: Vec<char> = id.chars().collect();
    if let Some(first) = name.first_mut() {
        *first = first.to_ascii_uppercase();
    }
    let major = field("VERSION_ID")
        .map(|v| v.split('.').next().unwrap_or("").to_string())
        .unwrap_or_default();
    Some((name.into_iter().collect(), major))
}

/// The host's address: the first non-loopback address its name resolves
/// to, else the loopback address.
fn ip_address(hostname: &str) -> String {
    use std::net::ToSocketAddrs;
    (hostname, 0)
        .to_socket_addrs()
        .ok()
        .and_then(|mut addrs| addrs.find(|a| !a.ip().is_loopback()))
        .map_or_else(|| "127.0.0.1".to_string(), |a| a.ip().to_string())
}

/// The home directory of the user `condor`, HTCondor's TILDE.
fn condor_home() -> Option<String> {
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|l| {
        let fields: Vec<&str> = l.split(':').collect();
        (fields.first() == Some(&"condor")).then(|| fields.get(5).map(|h| h.to_string()))?
    })
}

/// The local zone's offset east of UTC at `now`, in seconds (0 when the
/// zone cannot be read), for printing times as HTCondor's tools do.
pub fn utc_offset(now: i64) -> i32 {
    let t = now as libc::time_t;
    // SAFETY: `tm` is a plain C struct that localtime_r fills in; both
    // pointers are valid for the call.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    let ok = unsafe { !libc::localtime_r(&t, &mut tm).is_null() };
    if ok {
        tm.tm_gmtoff as i32
    } else {
        0
    }
}

/// Where the built-in configuration says it comes from.
pub const BUILTIN_CONFIG: &str = "<built-in personal pool>";

/// What the pool runs on when no configuration file is found: a whole
/// pool on one machine, as HTCondor's minicondor package configures it.
const BUILTIN_TEXT: &str = "\
# A personal pool on one machine, as HTCondor's minicondor package sets it up.
use ROLE : Personal
NETWORK_INTERFACE = 127.0.0.1
";

/// The files, with the built-in configuration at [`BUILTIN_CONFIG`].
struct WithBuiltin<'a>(&'a dyn Files);

impl Files for WithBuiltin<'_> {
    fn read(&self, path: &str) -> Result<String, FileError> {
        if path == BUILTIN_CONFIG {
            return Ok(BUILTIN_TEXT.to_string());
        }
        self.0.read(path)
    }
    fn list_dir(&self, path: &str) -> Result<Vec<String>, FileError> {
        self.0.list_dir(path)
    }
    fn run(&self, command: &str) -> Result<String, String> {
        self.0.run(command)
    }
}

/// The configuration `subsystem` reads: from the file HTCondor's search
/// finds (CONDOR_CONFIG, then the usual places), or, when there is none,
/// the built-in personal pool's; the flag says which.
pub fn load_or_builtin(
    subsystem: &str,
    files: &dyn Files,
    host: &dyn config::Host,
) -> Result<(config::Config, bool), config::ConfigError> {
    use config::{load, LoadOptions, Root};
    match load(&LoadOptions::new(subsystem, Root::Search), files, host) {
        Err(e) if e.kind == config::ErrorKind::NoConfig => load(
            &LoadOptions::new(subsystem, Root::File(BUILTIN_CONFIG.into())),
            &WithBuiltin(files),
            host,
        )
        .map(|c| (c, true)),
        other => other.map(|c| (c, false)),
    }
}

/// The tools' configuration (the TOOL subsystem's, from the real disk and
/// host, or the built-in one), looked up as the tools look parameters
/// up: a parameter set to nothing is no parameter.
pub struct ToolConfig(config::Config);

impl ToolConfig {
    pub fn load() -> Result<ToolConfig, crate::errors::Error> {
        let host = RealHost::detect();
        let (config, _) =
            load_or_builtin("TOOL", &DiskFiles, &host).map_err(crate::errors::Error::Config)?;
        Ok(ToolConfig(config))
    }

    pub fn get(&self, name: &str) -> Option<String> {
        self.0
            .get(name)
            .ok()
            .flatten()
            .filter(|v| !v.trim().is_empty())
    }

    /// Where a tool evaluates the ads it prints (`-af`, `-format`, the
    /// tables): `now` in the local zone, and userHome() from the password
    /// database as HTCondor's tools resolve it, unless
    /// CLASSAD_ENABLE_USER_HOME is false.
    pub fn env(&self, now: i64) -> classad::Env {
        let env = classad::Env {
            utc_offset: utc_offset(now),
            ..classad::Env::at(now)
        };
        match self.0.boolean("CLASSAD_ENABLE_USER_HOME") {
            Ok(Some(false)) => env,
            _ => env.with_user_home(starter::user_home_lookup()),
        }
    }
}
