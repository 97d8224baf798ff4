//! The job's cgroup v2: made under a writable parent, joined by the job's
//! first process before it execs (so nothing it forks escapes), frozen,
//! thawed, killed and read for usage, then removed.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::limits::MemoryEvents;
use crate::spec::CgroupPolicy;

/// Whether a limit was put on the job, and if not, why not.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Limit {
    /// The job did not ask for it.
    NotRequested,
    /// Written to this cgroup file with this value.
    Applied { file: &'static str, value: String },
    /// Asked for, but not possible here.
    Unavailable(String),
}

pub(crate) struct Cgroup {
    pub path: PathBuf,
}

/// Where the cgroup v2 hierarchy is mounted.
fn cgroup2_mount() -> Result<PathBuf, String> {
    let mountinfo = fs::read_to_string("/proc/self/mountinfo")
        .map_err(|e| format!("cannot read /proc/self/mountinfo: {e}"))?;
    // Fields: id parent major:minor root mount-point options ... - fstype ...
    mountinfo
        .lines()
        .find_map(|l| {
            let (left, right) = l.split_once(" - ")?;
            (right.split_whitespace().next()? == "cgroup2")
                .then(|| left.split_whitespace().nth(4).map(PathBuf::from))?
        })
        .ok_or_else(|| "no cgroup v2 hierarchy is mounted".into())
}

/// The cgroup v2 directory of process `pid` (`self` for this one).
fn cgroup_dir(pid: &str) -> Result<PathBuf, String> {
    let mount = cgroup2_mount()?;
    let path = format!("/proc/{pid}/cgroup");
    let own = fs::read_to_string(&path).map_err(|e| format!("cannot read {path}: {e}"))?;
    let rel = own
        .lines()
        .find_map(|l| l.strip_prefix("0::"))
        .ok_or("the process is in no cgroup v2")?;
    let rel = rel.trim().trim_start_matches('/');
    Ok(if rel.is_empty() {
        mount
    } else {
        mount.join(rel)
    })
}

/// The starter's own cgroup.
fn own_cgroup() -> Result<PathBuf, String> {
    cgroup_dir("self")
}

/// The cgroup v2 directory that process `pid` is in, if any (a daemon
/// records a job's, to find it again after a crash).
pub fn cgroup_of(pid: i32) -> Option<PathBuf> {
    cgroup_dir(&pid.to_string()).ok()
}

/// Where job cgroups go under `policy`, or why there is none.
pub(crate) fn parent(policy: &CgroupPolicy) -> Result<PathBuf, String> {
    match policy {
        CgroupPolicy::Disabled => Err("disabled by the settings".into()),
        CgroupPolicy::Under(p) => Ok(p.clone()),
        CgroupPolicy::Auto => own_cgroup(),
    }
}

impl Cgroup {
    /// Makes `parent/name`, or says why not.
    pub fn create(parent: &Path, name: &str) -> Result<Cgroup, String> {
        let path = parent.join(name);
        fs::create_dir(&path).map_err(|e| format!("cannot create `{}`: {e}", path.display()))?;
        if !path.join("cgroup.procs").exists() {
            let _ = fs::remove_dir(&path);
            return Err(format!(
                "`{}` is not a cgroup v2 directory",
                parent.display()
            ));
        }
        Ok(Cgroup { path })
    }

    fn file(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    pub fn has(&self, name: &str) -> bool {
        self.file(name).exists()
    }

    pub fn write(&self, name: &str, value: &str) -> io::Result<()> {
        fs::write(self.file(name), value)
    }

    /// Puts a limit on the job: the controller enabled in the parent's
    /// `cgroup.subtree_control` if it is not yet, then `file` written.
    pub fn limit(&self, controller: &str, file: &'static str, value: String) -> Limit {
        let parent = self.path.parent().unwrap_or(Path::new("/"));
        let available = fs::read_to_string(parent.join("cgroup.controllers")).unwrap_or_default();
        if !available.split_whitespace().any(|c| c == controller) {
            return Limit::Unavailable(format!(
                "the {controller} controller is not available in `{}`",
                parent.display()
            ));
        }
        if !self.has(file) {
            let control = parent.join("cgroup.subtree_control");
            if let Err(e) = fs::write(&control, format!("+{controller}")) {
                return Limit::Unavailable(format!(
                    "cannot enable {controller} in `{}`: {e}",
                    control.display()
                ));
            }
        }
        match self.write(file, &value) {
            Ok(()) => Limit::Applied { file, value },
            Err(e) => {
                Limit::Unavailable(format!("cannot write `{}`: {e}", self.file(file).display()))
            }
        }
    }

    pub fn procs(&self) -> Vec<i32> {
        fs::read_to_string(self.file("cgroup.procs"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect()
    }

    /// `(user, system)` CPU seconds from `cpu.stat`.
    pub fn cpu(&self) -> Option<(f64, f64)> {
        let text = fs::read_to_string(self.file("cpu.stat")).ok()?;
        let field = |k: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(k)?.trim().parse::<u64>().ok())
        };
        Some((
            field("user_usec ")? as f64 / 1e6,
            field("system_usec ")? as f64 / 1e6,
        ))
    }

    /// Peak memory in KiB, from `memory.peak` (the memory controller).
    pub fn memory_peak_kib(&self) -> Option<u64> {
        let text = fs::read_to_string(self.file("memory.peak")).ok()?;
        text.trim().parse::<u64>().ok().map(|b| b.div_ceil(1024))
    }

    /// The OOM counters of `memory.events` (the memory controller).
    pub fn memory_events(&self) -> Option<MemoryEvents> {
        let text = fs::read_to_string(self.file("memory.events")).ok()?;
        Some(MemoryEvents::parse(&text))
    }

    /// Freezes or thaws, and waits (briefly) until the kernel says it is done.
    pub fn freeze(&self, frozen: bool) -> io::Result<()> {
        self.write("cgroup.freeze", if frozen { "1" } else { "0" })?;
        let want = if frozen { "frozen 1" } else { "frozen 0" };
        let deadline = Instant::now() + Duration::from_secs(2);
        while Instant::now() < deadline {
            let events = fs::read_to_string(self.file("cgroup.events"))?;
            if events.lines().any(|l| l.trim() == want) {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        Ok(())
    }

    /// Removes the cgroup, waiting a little for the killed processes to go.
    pub fn remove(&self) -> io::Result<()> {
        let deadline = Instant::now() + Duration::from_secs(2);
        loop {
            match fs::remove_dir(&self.path) {
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) && Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(2))
                }
                r => return r,
            }
        }
    }
}
