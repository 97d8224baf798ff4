//! The periodic readings ([`Readings`]) the startd engine takes on every
//! poll: load average, keyboard and console idle, each slot's job load,
//! and what the readings override file says over them.

use std::fmt;
use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use startd::Readings;

use crate::idle::IdleTracker;
use crate::job_load::JobLoadTracker;
use crate::readings_file::{ReadingsFileError, ReadingsOverride};
use crate::{loadavg, HostError, Root};

/// A reading that failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SampleError {
    Host(HostError),
    ReadingsFile(ReadingsFileError),
}

impl fmt::Display for SampleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SampleError::Host(e) => write!(f, "{e}"),
            SampleError::ReadingsFile(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for SampleError {}

/// Takes the periodic readings, remembering between them what activity
/// and CPU use are measured against.
#[derive(Clone, Debug)]
pub struct Sampler {
    root: Root,
    idle: IdleTracker,
    jobs: JobLoadTracker,
    override_file: Option<PathBuf>,
}

impl Sampler {
    /// Readings under `root`, with these console devices
    /// (`CONSOLE_DEVICES`) and, if given, an override file read on every
    /// reading.
    pub fn new(root: Root, console_devices: &str, override_file: Option<PathBuf>) -> Sampler {
        Sampler {
            root,
            idle: IdleTracker::new(console_devices),
            jobs: JobLoadTracker::new(),
            override_file,
        }
    }

    /// The real machine, with HTCondor's default `CONSOLE_DEVICES`.
    pub fn system(override_file: Option<PathBuf>) -> Sampler {
        Sampler::new(Root::system(), "mouse, console", override_file)
    }

    /// Counts `/proc/<pid>/stat` times in ticks of this rate (for a test
    /// tree; the real one uses the kernel's).
    pub fn with_ticks_per_second(mut self, ticks: u64) -> Sampler {
        self.jobs = JobLoadTracker::with_ticks_per_second(ticks);
        self
    }

    /// The readings at `now`; `job_pids[i]` are the processes of the job
    /// on the slot at index `i` of the startd's slots.
    pub fn sample(
        &mut self,
        now: SystemTime,
        job_pids: &[Vec<u32>],
    ) -> Result<Readings, SampleError> {
        let since_epoch = now.duration_since(UNIX_EPOCH).unwrap_or_default();
        let secs = since_epoch.as_secs() as i64;
        let idle = self.idle.measure(&self.root, secs);
        let mut r = Readings {
            keyboard_idle: idle.keyboard_idle,
            console_idle: idle.console_idle,
            load_avg: loadavg::read_loadavg(&self.root).map_err(SampleError::Host)?,
            condor_load: self
                .jobs
                .measure(&self.root, job_pids, since_epoch.as_secs_f64()),
        };
        if let Some(path) = &self.override_file {
            if let Some(o) = ReadingsOverride::read(path).map_err(SampleError::ReadingsFile)? {
                o.apply(&mut r);
            }
        }
        Ok(r)
    }

    /// The readings now, by the system clock.
    pub fn sample_now(&mut self, job_pids: &[Vec<u32>]) -> Result<Readings, SampleError> {
        self.sample(SystemTime::now(), job_pids)
    }
}
