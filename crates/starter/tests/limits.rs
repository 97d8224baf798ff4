//! CGROUP_MEMORY_LIMIT_POLICY on real processes: a job over its hard limit
//! is killed by the kernel and reported as HTCondor's OOM hold; soft sets
//! `memory.high`; none limits nothing.
//!
//! They need a cgroup v2 whose children may have the memory controller (in
//! practice: root, on a machine with the controller); elsewhere each test
//! prints "skipped: ..." and returns.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use classad::ClassAd;
use starter::{
    CgroupPolicy, ExitKind, ExitStatus, JobSpec, Limit, MemoryLimitPolicy, MemorySettings,
    OomVerdict, RunAs, Starter, StarterSettings,
};

const MIB: u64 = 1024 * 1024;

/// Where the cgroup v2 hierarchy is mounted.
fn cgroup2_mount() -> Option<PathBuf> {
    let mountinfo = fs::read_to_string("/proc/self/mountinfo").ok()?;
    mountinfo.lines().find_map(|l| {
        let (left, right) = l.split_once(" - ")?;
        (right.split_whitespace().next()? == "cgroup2")
            .then(|| left.split_whitespace().nth(4).map(PathBuf::from))?
    })
}

fn has_word(file: &Path, word: &str) -> bool {
    fs::read_to_string(file)
        .unwrap_or_default()
        .split_whitespace()
        .any(|w| w == word)
}

/// A cgroup made for this test, with the memory controller enabled for
/// its children (the job cgroups), removed at the end.
struct TestParent(PathBuf);

impl Drop for TestParent {
    fn drop(&mut self) {
        let _ = fs::remove_dir(&self.0);
    }
}

/// Finds the nearest cgroup at or above ours whose children get the
/// memory controller (cgroup v2 allows controllers only below a cgroup
/// without processes, or the root), and makes the test's parent in it.
fn limits_parent() -> Result<TestParent, String> {
    let mount = cgroup2_mount().ok_or("no cgroup v2 hierarchy is mounted")?;
    if !has_word(&mount.join("cgroup.controllers"), "memory") {
        return Err(format!(
            "the cgroup v2 hierarchy at {} has no memory controller (cgroup.controllers: {:?})",
            mount.display(),
            fs::read_to_string(mount.join("cgroup.controllers")).unwrap_or_default()
        ));
    }
    let own = fs::read_to_string("/proc/self/cgroup").map_err(|e| e.to_string())?;
    let rel = own
        .lines()
        .find_map(|l| l.strip_prefix("0::"))
        .ok_or("this process is in no cgroup v2")?
        .trim()
        .trim_start_matches('/')
        .to_string();
    let own = mount.join(rel);
    // Our own cgroup holds processes (this one), so only an ancestor can
    // already give its children the controller; else try the root.
    let holder = own
        .ancestors()
        .skip(usize::from(own != mount))
        .take_while(|a| a.starts_with(&mount))
        .find(|a| has_word(&a.join("cgroup.subtree_control"), "memory"))
        .map(Path::to_path_buf)
        .or_else(|| {
            fs::write(mount.join("cgroup.subtree_control"), "+memory")
                .ok()
                .map(|()| mount.clone())
        })
        .ok_or_else(|| {
            format!(
                "no cgroup from {} up to {} gives its children the memory controller, \
                 and it cannot be enabled at the root (processes there, or not root)",
                own.display(),
                mount.display()
            )
        })?;
    static SEQ: AtomicUsize = AtomicUsize::new(0);
    let parent = holder.join(format!(
        "ferrocondor-limits-test-{}-{}",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    ));
    fs::create_dir(&parent).map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
    let guard = TestParent(parent.clone());
    fs::write(parent.join("cgroup.subtree_control"), "+memory")
        .map_err(|e| format!("cannot enable memory in {}: {e}", parent.display()))?;
    Ok(guard)
}

/// The settings for a job under `parent` with `policy`, or `None` (said
/// on stdout) where this machine cannot limit memory.
fn setup(
    name: &str,
    policy: MemoryLimitPolicy,
) -> Option<(tempfile::TempDir, TestParent, StarterSettings)> {
    let parent = match limits_parent() {
        Ok(p) => p,
        Err(why) => {
            println!("skipped: {name}: {why}");
            return None;
        }
    };
    println!("{name}: job cgroups under {}", parent.0.display());
    let dir = tempfile::tempdir().unwrap();
    let mut s = StarterSettings::new(dir.path());
    s.run_as = RunAs::Starter;
    s.cgroup = CgroupPolicy::Under(parent.0.clone());
    s.memory = MemorySettings {
        policy,
        ..MemorySettings::default()
    };
    Some((dir, parent, s))
}

fn job(dir: &Path, cmd: &str, args: &str, request_memory: i64) -> ClassAd {
    let mut ad = ClassAd::new();
    ad.insert_value("Cmd", cmd);
    ad.insert_value("Arguments", args);
    ad.insert_value("Iwd", dir.display().to_string().as_str());
    ad.insert_value("ShouldTransferFiles", "NO");
    ad.insert_value("RequestMemory", request_memory);
    ad
}

fn read(cgroup: &Path, file: &str) -> String {
    fs::read_to_string(cgroup.join(file))
        .unwrap_or_else(|e| format!("({e})"))
        .trim()
        .to_string()
}

#[test]
fn hard_limit_kills_a_job_over_it_and_reports_the_oom() {
    hard_limit("hard", false);
}

/// The same job in a PID namespace of its own (USE_PID_NAMESPACES): the
/// namespace's init is in the job's cgroup with it, the kernel's OOM kill
/// takes them together, and the starter still reports the job killed for
/// memory.
#[test]
fn hard_limit_kills_a_job_in_its_own_pid_namespace_and_reports_the_oom() {
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        println!("skipped: hard in a PID namespace: USE_PID_NAMESPACES needs root");
        return;
    }
    hard_limit("hard-pidns", true);
}

fn hard_limit(name: &str, pid_namespace: bool) {
    let Some((dir, _parent, mut settings)) = setup(name, MemoryLimitPolicy::Hard) else {
        return;
    };
    settings.pid_namespace = pid_namespace;
    // `tail` keeps every byte of a file without newlines: it grows until
    // the kernel stops it.
    let ad = job(dir.path(), "/usr/bin/tail", "/dev/zero", 32);
    let mut running = Starter::start(JobSpec::new(ad, settings).unwrap()).unwrap();
    let m = running.mechanisms().clone();
    let cg = m.cgroup.clone().expect("a cgroup");
    println!(
        "{name}: memory.max = {}, memory.swap.max = {}, memory.oom.group = {}",
        read(&cg, "memory.max"),
        read(&cg, "memory.swap.max"),
        read(&cg, "memory.oom.group")
    );
    println!("{name}: mechanisms: {m:?}");
    assert_eq!(
        m.memory_limit,
        Limit::Applied {
            file: "memory.max",
            value: (32 * MIB).to_string()
        }
    );
    assert_eq!(read(&cg, "memory.max"), (32 * MIB).to_string());
    if matches!(m.swap_limit, Limit::Applied { .. }) {
        assert_eq!(read(&cg, "memory.swap.max"), "0");
    }
    if running
        .wait_timeout(Duration::from_secs(60))
        .unwrap()
        .is_none()
    {
        running.hard_kill().unwrap();
        panic!("tail /dev/zero outlived its 32 MiB limit for a minute");
    }
    let events = read(&cg, "memory.events");
    let r = running.finish();
    println!("{name}: memory.events: {events:?}");
    println!(
        "{name}: status {:?}, MemoryUsage {} MiB, oom {:?}, ExitReason {:?}",
        r.status,
        r.usage.peak_rss_kib.div_ceil(1024),
        r.oom,
        r.job.eval_attr("ExitReason", &classad::Env::default())
    );
    assert!(
        matches!(r.status, ExitStatus::Signal { signal, .. } if signal == libc::SIGKILL),
        "{:?}",
        r.status
    );
    assert_eq!(r.kind, ExitKind::Exit);
    assert_eq!(
        r.oom,
        Some(OomVerdict::Hold {
            reason: "Job has gone over cgroup memory limit of 32 megabytes. \
                     Last measured usage: 32 megabytes.  \
                     Consider resubmitting with a higher request_memory."
                .into()
        })
    );
    assert!(!cg.exists(), "the job's cgroup is removed");
}

#[test]
fn soft_limit_sets_memory_high_and_no_memory_max() {
    let Some((dir, _parent, settings)) = setup("soft", MemoryLimitPolicy::Soft) else {
        return;
    };
    let ad = job(dir.path(), "/bin/sleep", "30", 48);
    let mut running = Starter::start(JobSpec::new(ad, settings).unwrap()).unwrap();
    let m = running.mechanisms().clone();
    let cg = m.cgroup.clone().expect("a cgroup");
    let (high, max) = (read(&cg, "memory.high"), read(&cg, "memory.max"));
    println!("soft: memory.high = {high}, memory.max = {max}; mechanisms: {m:?}");
    assert_eq!(high, (48 * MIB).to_string());
    assert_eq!(max, "max");
    assert_eq!(m.memory_limit, Limit::NotRequested);
    assert_eq!(m.swap_limit, Limit::NotRequested);
    running.hard_kill().unwrap();
    let r = running.finish();
    // The starter's own kill is not an OOM.
    assert_eq!(r.oom, None);
}

#[test]
fn no_limit_lets_a_job_use_more_than_it_asked_for() {
    let Some((dir, _parent, settings)) = setup("none", MemoryLimitPolicy::None) else {
        return;
    };
    // 64 MiB kept by `tail`, with 16 MiB asked for.
    let ad = job(
        dir.path(),
        "/bin/sh",
        "-c 'head -c 67108864 /dev/zero | tail > /dev/null'",
        16,
    );
    let mut running = Starter::start(JobSpec::new(ad, settings).unwrap()).unwrap();
    let m = running.mechanisms().clone();
    let cg = m.cgroup.clone().expect("a cgroup");
    let (high, max) = (read(&cg, "memory.high"), read(&cg, "memory.max"));
    println!("none: memory.high = {high}, memory.max = {max}");
    assert_eq!((high.as_str(), max.as_str()), ("max", "max"));
    assert_eq!(m.memory_limit, Limit::NotRequested);
    if running
        .wait_timeout(Duration::from_secs(60))
        .unwrap()
        .is_none()
    {
        running.hard_kill().unwrap();
        panic!("the job did not end in a minute");
    }
    let r = running.finish();
    let mib = r.usage.peak_rss_kib.div_ceil(1024);
    println!(
        "none: status {:?}, MemoryUsage {mib} MiB, oom {:?}",
        r.status, r.oom
    );
    assert_eq!(r.status, ExitStatus::Code(0));
    assert_eq!(r.oom, None);
    assert!(mib > 16, "used {mib} MiB, more than the 16 asked for");
}
