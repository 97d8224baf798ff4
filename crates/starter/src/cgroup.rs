//! The job's cgroup v2: made under a writable parent, joined by the job's
//! first process before it execs (so nothing it forks escapes), frozen,
//! thawed, killed and read for usage, then removed.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::cgroup_layout::{self, Layout, OwnCgroup};
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

/// Where a daemon's jobs get their cgroups, after
/// [`settle_job_cgroups`] arranged it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobCgroups {
    /// The cgroup job cgroups are made in.
    pub jobs: PathBuf,
    /// The leaf the daemon moved itself into, if it did.
    pub moved_to: Option<PathBuf>,
    /// The controllers job cgroups get (memory among them), or why they
    /// get no limits (still tracked, frozen and killed by their cgroup).
    pub limits: Result<Vec<String>, String>,
}

/// The controllers HTCondor enables for job cgroups that limits need
/// (`memory`, `cpu` for `cpu.weight`, `pids`; HTCondor adds `io`).
const JOB_CONTROLLERS: [&str; 3] = ["memory", "cpu", "pids"];

fn writable(path: &Path) -> bool {
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()) else {
        return false;
    };
    // SAFETY: access only reads the NUL-terminated path.
    unsafe { libc::access(c.as_ptr(), libc::W_OK) == 0 }
}

fn procs_of(cgroup: &Path) -> Option<Vec<i32>> {
    let text = fs::read_to_string(cgroup.join("cgroup.procs")).ok()?;
    Some(text.lines().filter_map(|l| l.trim().parse().ok()).collect())
}

/// What this process finds about its own cgroup, for
/// [`cgroup_layout::choose`].
fn own_facts() -> Result<OwnCgroup, String> {
    let mount = cgroup2_mount()?;
    let own = own_cgroup()?;
    let me = std::process::id() as i32;
    let only_ours = procs_of(&own).is_some_and(|p| p.iter().all(|&pid| pid == me));
    let parent = own.parent().filter(|_| own != mount);
    Ok(OwnCgroup {
        only_ours,
        own_writable: writable(&own),
        parent_free: parent.and_then(procs_of).is_some_and(|p| p.is_empty()),
        parent_writable: parent.is_some_and(writable),
        mount,
        own,
    })
}

/// Moves this process (every thread: cgroup v2 moves a whole process
/// written to `cgroup.procs`) into `leaf`, made if need be.
fn move_into(leaf: &Path) -> Result<(), String> {
    match fs::create_dir(leaf) {
        Err(e) if e.kind() != io::ErrorKind::AlreadyExists => {
            return Err(format!("cannot create `{}`: {e}", leaf.display()))
        }
        _ => {}
    }
    fs::write(leaf.join("cgroup.procs"), std::process::id().to_string())
        .map_err(|e| format!("cannot move into `{}`: {e}", leaf.display()))
}

/// Makes every cgroup from `from` down to `jobs`, enabling in each one's
/// `cgroup.subtree_control` the job controllers it has (one at a time: a
/// write naming one it lacks would enable none). Says which `jobs`' children
/// get, or why they get no memory controller.
fn enable_down(from: &Path, jobs: &Path) -> Result<Vec<String>, String> {
    let rel = jobs.strip_prefix(from).unwrap_or(Path::new(""));
    let mut chain = vec![from.to_path_buf()];
    for c in rel.components() {
        let next = chain[chain.len() - 1].join(c);
        chain.push(next);
    }
    let mut problems = Vec::new();
    for cg in &chain {
        if let Err(e) = fs::create_dir(cg) {
            if e.kind() != io::ErrorKind::AlreadyExists {
                return Err(format!("cannot create `{}`: {e}", cg.display()));
            }
        }
        let have = fs::read_to_string(cg.join("cgroup.controllers")).unwrap_or_default();
        for c in JOB_CONTROLLERS {
            if have.split_whitespace().any(|h| h == c) {
                if let Err(e) = fs::write(cg.join("cgroup.subtree_control"), format!("+{c}")) {
                    problems.push(format!("+{c} in `{}`: {e}", cg.display()));
                }
            }
        }
    }
    let given = fs::read_to_string(jobs.join("cgroup.subtree_control")).unwrap_or_default();
    let given: Vec<String> = given.split_whitespace().map(str::to_string).collect();
    if given.iter().any(|c| c == "memory") {
        Ok(given)
    } else {
        let have = fs::read_to_string(from.join("cgroup.controllers")).unwrap_or_default();
        Err(format!(
            "no memory controller for job cgroups under `{}` (`{}` offers: {:?}){}",
            jobs.display(),
            from.display(),
            have.trim(),
            if problems.is_empty() {
                String::new()
            } else {
                format!("; refused: {}", problems.join("; "))
            }
        ))
    }
}

/// A master alone in its cgroup moves into `<own>/leaf` before it starts
/// its daemons (as systemd's `DelegateSubgroup=leaf` would), so the
/// startd it starts finds HTCondor's layout and its jobs may have
/// limits. Says where it moved, if it did.
pub fn move_to_leaf() -> Result<Option<PathBuf>, String> {
    let facts = own_facts()?;
    match cgroup_layout::choose("htcondor", &facts) {
        Layout::Jobs {
            leaf: Some(leaf), ..
        } => move_into(&leaf).map(|()| Some(leaf)),
        _ => Ok(None),
    }
}

/// Arranges where this daemon's jobs get cgroups under BASE_CGROUP
/// (`base`), as [`cgroup_layout::choose`] decides: moves the daemon into
/// a leaf if that is the way, and enables the job controllers down to the
/// jobs' parent. `Err`: jobs get no cgroup, and why.
pub fn settle_job_cgroups(base: &str) -> Result<JobCgroups, String> {
    let facts = own_facts()?;
    match cgroup_layout::choose(base, &facts) {
        Layout::NoCgroups(why) => Err(why),
        Layout::Jobs {
            leaf,
            jobs,
            controllers_from,
        } => {
            let mut moved_to = None;
            let mut from = controllers_from;
            if let Some(leaf) = leaf {
                match move_into(&leaf) {
                    Ok(()) => moved_to = Some(leaf),
                    Err(why) => from = Err(why),
                }
            }
            let limits = match from {
                Ok(from) => enable_down(&from, &jobs),
                Err(why) => {
                    fs::create_dir_all(&jobs)
                        .map_err(|e| format!("cannot create `{}`: {e}", jobs.display()))?;
                    Err(why)
                }
            };
            Ok(JobCgroups {
                jobs,
                moved_to,
                limits,
            })
        }
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
