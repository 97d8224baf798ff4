//! The readings override file: measured values replaced by written ones,
//! so tests and demos can make the owner come back (`KeyboardIdle = 0`)
//! or load the machine without touching a keyboard. The format is in the
//! crate documentation ("Readings override file").
//!
//! The file is read again on every reading; a missing file overrides
//! nothing.

use std::fmt;
use std::path::{Path, PathBuf};

use startd::resources::HostReadings;
use startd::Readings;

/// What an override file says; `None` leaves the measured value.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ReadingsOverride {
    pub keyboard_idle: Option<i64>,
    pub console_idle: Option<i64>,
    /// `TotalLoadAvg` (alias `LoadAvg`).
    pub load_avg: Option<f64>,
    /// `CondorLoadAvg`, by slot index.
    pub condor_load: Option<Vec<f64>>,
    /// `DetectedCores`.
    pub hyperthread_cpus: Option<u32>,
    /// `DetectedPhysicalCpus`.
    pub physical_cpus: Option<u32>,
    /// `DetectedCpusLimit`.
    pub cpus_limit: Option<u32>,
    /// `DetectedMemory`, MiB.
    pub memory: Option<i64>,
    /// `Disk`, KiB.
    pub disk: Option<i64>,
    /// `TotalVirtualMemory`, KiB.
    pub swap: Option<i64>,
}

/// An override file that could not be read: the file, the 1-based line
/// (0 when the file as a whole is at fault) and what was expected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadingsFileError {
    pub file: PathBuf,
    pub line: usize,
    pub message: String,
}

impl fmt::Display for ReadingsFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.file.display(), self.message)
        } else {
            write!(f, "{}:{}: {}", self.file.display(), self.line, self.message)
        }
    }
}

impl std::error::Error for ReadingsFileError {}

/// The names the file knows, as written in the documentation.
const NAMES: &str = "KeyboardIdle, ConsoleIdle, TotalLoadAvg (LoadAvg), CondorLoadAvg, \
DetectedCores, DetectedPhysicalCpus, DetectedCpusLimit, DetectedMemory, Disk, TotalVirtualMemory";

fn whole(name: &str, value: &str, unit: &str) -> Result<i64, String> {
    value
        .parse::<i64>()
        .ok()
        .filter(|v| *v >= 0)
        .ok_or_else(|| {
            format!("expected a whole number of {unit} (0 or more) for {name}, found `{value}`")
        })
}

fn count(name: &str, value: &str) -> Result<u32, String> {
    value
        .parse::<u32>()
        .ok()
        .filter(|v| *v >= 1)
        .ok_or_else(|| format!("expected a number of CPUs (1 or more) for {name}, found `{value}`"))
}

fn load(name: &str, value: &str) -> Result<f64, String> {
    value
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v >= 0.0)
        .ok_or_else(|| format!("expected a load (a number, 0 or more) for {name}, found `{value}`"))
}

impl ReadingsOverride {
    /// Reads override text; `file` names it in errors.
    pub fn parse(file: &Path, text: &str) -> Result<ReadingsOverride, ReadingsFileError> {
        let mut o = ReadingsOverride::default();
        for (i, raw) in text.lines().enumerate() {
            let err = |message: String| ReadingsFileError {
                file: file.to_path_buf(),
                line: i + 1,
                message,
            };
            let line = raw.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let Some((name, value)) = line.split_once('=') else {
                return Err(err(format!("expected `Name = value`, found `{line}`")));
            };
            let (name, value) = (name.trim(), value.trim());
            if value.is_empty() {
                return Err(err(format!("expected a value after `{name} =`")));
            }
            match name.to_ascii_lowercase().as_str() {
                "keyboardidle" => {
                    o.keyboard_idle = Some(whole(name, value, "seconds").map_err(err)?)
                }
                "consoleidle" => o.console_idle = Some(whole(name, value, "seconds").map_err(err)?),
                "totalloadavg" | "loadavg" => o.load_avg = Some(load(name, value).map_err(err)?),
                "condorloadavg" => {
                    let loads = value
                        .split(',')
                        .map(|v| load(name, v.trim()))
                        .collect::<Result<Vec<f64>, String>>()
                        .map_err(err)?;
                    o.condor_load = Some(loads);
                }
                "detectedcores" => o.hyperthread_cpus = Some(count(name, value).map_err(err)?),
                "detectedphysicalcpus" => o.physical_cpus = Some(count(name, value).map_err(err)?),
                "detectedcpuslimit" => o.cpus_limit = Some(count(name, value).map_err(err)?),
                "detectedmemory" => o.memory = Some(whole(name, value, "MiB").map_err(err)?),
                "disk" => o.disk = Some(whole(name, value, "KiB").map_err(err)?),
                "totalvirtualmemory" => o.swap = Some(whole(name, value, "KiB").map_err(err)?),
                _ => {
                    return Err(err(format!(
                        "unknown reading `{name}`: expected one of {NAMES}"
                    )))
                }
            }
        }
        Ok(o)
    }

    /// Reads the file at `path`: `Ok(None)` when there is none.
    pub fn read(path: &Path) -> Result<Option<ReadingsOverride>, ReadingsFileError> {
        match std::fs::read_to_string(path) {
            Ok(text) => ReadingsOverride::parse(path, &text).map(Some),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(ReadingsFileError {
                file: path.to_path_buf(),
                line: 0,
                message: e.to_string(),
            }),
        }
    }

    /// Puts the written periodic readings over the measured ones.
    pub fn apply(&self, r: &mut Readings) {
        if let Some(v) = self.keyboard_idle {
            r.keyboard_idle = v;
        }
        if let Some(v) = self.console_idle {
            r.console_idle = v;
        }
        if let Some(v) = self.load_avg {
            r.load_avg = v;
        }
        if let Some(v) = &self.condor_load {
            r.condor_load = v.clone();
        }
    }

    /// Puts the written machine readings over the measured ones.
    pub fn apply_host(&self, h: &mut HostReadings) {
        if let Some(v) = self.hyperthread_cpus {
            h.hyperthread_cpus = v;
        }
        if let Some(v) = self.physical_cpus {
            h.physical_cpus = v;
        }
        if let Some(v) = self.cpus_limit {
            h.cpus_limit = Some(v);
        }
        if let Some(v) = self.memory {
            h.memory = v;
        }
        if let Some(v) = self.disk {
            h.disk = v;
        }
        if let Some(v) = self.swap {
            h.swap = v;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<ReadingsOverride, String> {
        ReadingsOverride::parse(Path::new("readings"), text).map_err(|e| e.to_string())
    }

    #[test]
    fn every_name_in_any_case_with_comments() {
        let o = parse(
            "# owner is back\n\
             keyboardidle = 0   # just typed\n\
             ConsoleIdle=3\n\
             LoadAvg = 1.5\n\
             CondorLoadAvg = 1.0, 0, 0.25\n\
             DetectedCores = 6\nDetectedPhysicalCpus = 3\nDetectedCpusLimit = 4\n\
             DetectedMemory = 16384\nDisk = 1000\nTotalVirtualMemory = 0\n\
             \n",
        )
        .unwrap();
        assert_eq!(o.keyboard_idle, Some(0));
        assert_eq!(o.console_idle, Some(3));
        assert_eq!(o.load_avg, Some(1.5));
        assert_eq!(o.condor_load, Some(vec![1.0, 0.0, 0.25]));
        assert_eq!(
            (o.hyperthread_cpus, o.physical_cpus, o.cpus_limit),
            (Some(6), Some(3), Some(4))
        );
        assert_eq!(
            (o.memory, o.disk, o.swap),
            (Some(16384), Some(1000), Some(0))
        );
        // The last word wins.
        assert_eq!(
            parse("TotalLoadAvg = 1\nLoadAvg = 2\n").unwrap().load_avg,
            Some(2.0)
        );
    }

    #[test]
    fn errors_name_the_file_the_line_and_what_was_expected() {
        assert_eq!(
            parse("KeyboardIdle = 0\nConsoleIdle = soon\n").unwrap_err(),
            "readings:2: expected a whole number of seconds (0 or more) for ConsoleIdle, found `soon`"
        );
        assert_eq!(
            parse("\nKeyboardIdle 5\n").unwrap_err(),
            "readings:2: expected `Name = value`, found `KeyboardIdle 5`"
        );
        assert_eq!(
            parse("KeyboardIdle =\n").unwrap_err(),
            "readings:1: expected a value after `KeyboardIdle =`"
        );
        assert!(parse("Cpus = 4\n")
            .unwrap_err()
            .starts_with("readings:1: unknown reading `Cpus`: expected one of KeyboardIdle,"));
        assert_eq!(
            parse("CondorLoadAvg = 1, x\n").unwrap_err(),
            "readings:1: expected a load (a number, 0 or more) for CondorLoadAvg, found `x`"
        );
        assert_eq!(
            parse("DetectedCores = 0\n").unwrap_err(),
            "readings:1: expected a number of CPUs (1 or more) for DetectedCores, found `0`"
        );
    }

    #[test]
    fn applying_replaces_only_what_is_written() {
        let o = parse("KeyboardIdle = 0\nCondorLoadAvg = 1\nDetectedMemory = 512\n").unwrap();
        let mut r = Readings {
            keyboard_idle: 100,
            console_idle: 100,
            load_avg: 0.5,
            condor_load: vec![],
        };
        o.apply(&mut r);
        assert_eq!((r.keyboard_idle, r.console_idle, r.load_avg), (0, 100, 0.5));
        assert_eq!(r.condor_load, [1.0]);
        let mut h = HostReadings::simple(4, 8192, 10, 20);
        o.apply_host(&mut h);
        assert_eq!((h.memory, h.hyperthread_cpus, h.disk), (512, 4, 10));
    }

    #[test]
    fn a_missing_file_overrides_nothing() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(ReadingsOverride::read(&dir.path().join("none")), Ok(None));
        let p = dir.path().join("r");
        std::fs::write(&p, "ConsoleIdle = 7\n").unwrap();
        assert_eq!(
            ReadingsOverride::read(&p).unwrap().unwrap().console_idle,
            Some(7)
        );
    }
}
