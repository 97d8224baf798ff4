//! Process tracking on real processes: USE_PID_NAMESPACES (the job under
//! an init in a PID namespace of its own) and USE_GID_PROCESS_TRACKING (a
//! supplementary group that marks every process of the job). Both need a
//! starter running as root, as HTCondor's; without, each test prints
//! "skipped: ..." and returns.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use classad::ClassAd;
use starter::{CgroupPolicy, ExitStatus, JobSpec, RunAs, Starter, StarterSettings};

struct World {
    dir: tempfile::TempDir,
}

impl World {
    fn new() -> World {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join("execute")).unwrap();
        fs::create_dir(dir.path().join("iwd")).unwrap();
        World { dir }
    }
    fn iwd(&self) -> PathBuf {
        self.dir.path().join("iwd")
    }
    fn settings(&self) -> StarterSettings {
        let mut s = StarterSettings::new(self.dir.path().join("execute"));
        s.run_as = RunAs::Starter;
        s.cgroup = CgroupPolicy::Disabled;
        s
    }
    fn job(&self, script: &str) -> ClassAd {
        let p = self.dir.path().join("job.sh");
        fs::write(&p, format!("#!/bin/sh\n{script}\n")).unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(0o755)).unwrap();
        let mut ad = ClassAd::new();
        ad.insert_value("Cmd", p.to_str().unwrap());
        ad.insert_value("Iwd", self.iwd().display().to_string().as_str());
        ad.insert_value("Out", "out");
        ad.insert_value("Err", "err");
        ad.insert_value("ShouldTransferFiles", "NO");
        ad
    }
    fn read(&self, name: &str) -> String {
        fs::read_to_string(self.iwd().join(name)).unwrap_or_default()
    }
}

fn root() -> bool {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() == 0 }
}

fn alive(pid: i32) -> bool {
    fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s[s.rfind(')')? + 2..].chars().next())
        .is_some_and(|c| c != 'Z' && c != 'X')
}

fn eventually(mut f: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    false
}

/// Whether this kernel lets root make PID and mount namespaces (a
/// container may not); `Err` says why not, for the skip message.
fn namespaces_here(w: &World) -> Result<(), String> {
    let mut s = w.settings();
    s.pid_namespace = true;
    match Starter::start(JobSpec::new(w.job("true"), s).unwrap()) {
        Ok(j) => {
            j.finish();
            Ok(())
        }
        Err(e) => Err(e.to_string()),
    }
}

fn pid_ns_world() -> Option<World> {
    if !root() {
        println!("skipped: USE_PID_NAMESPACES needs a starter running as root");
        return None;
    }
    let w = World::new();
    if let Err(why) = namespaces_here(&w) {
        println!("skipped: this kernel refuses root a PID namespace: {why}");
        return None;
    }
    Some(w)
}

/// The job is pid 2 of its own namespace under an init (pid 1, HTCondor's
/// condor_pid_ns_init), and its `/proc` shows only its own processes.
#[test]
fn a_job_in_its_own_pid_namespace_sees_only_its_own_processes() {
    let Some(w) = pid_ns_world() else { return };
    let mut s = w.settings();
    s.pid_namespace = true;
    let job = w.job(
        "echo $$ > pid; cat /proc/1/comm > init; \
         ls /proc | grep -E '^[0-9]+$' | wc -l > count; exit 3",
    );
    let j = Starter::start(JobSpec::new(job, s).unwrap()).unwrap();
    assert_eq!(j.mechanisms().pid_namespace, Some(Ok(())));
    let outside = j.pid();
    let r = j.finish();
    assert_eq!(r.status, ExitStatus::Code(3), "the job's own exit code");
    assert_eq!(w.read("pid").trim(), "2");
    assert_eq!(w.read("init").trim(), "fc_pid_ns_init");
    let count: usize = w.read("count").trim().parse().unwrap();
    assert!(
        (3..=6).contains(&count),
        "the job's /proc lists {count} processes (init, the job, ls, grep, wc)"
    );
    assert!(outside > 2, "JobPid is the init's pid outside: {outside}");
    assert!(r.problems.is_empty(), "{:?}", r.problems);
    // The host's /proc is untouched by the job's mount.
    assert!(fs::read_dir("/proc").unwrap().count() > 10);
}

/// The job's death by a signal reaches the ad through the init.
#[test]
fn a_signal_that_kills_the_job_in_a_pid_namespace_reaches_the_ad() {
    let Some(w) = pid_ns_world() else { return };
    let mut s = w.settings();
    s.pid_namespace = true;
    let r = Starter::start(JobSpec::new(w.job("kill -9 $$"), s).unwrap())
        .unwrap()
        .finish();
    assert!(
        matches!(r.status, ExitStatus::Signal { signal: 9, .. }),
        "{:?}",
        r.status
    );
}

/// Without a cgroup, the namespace is the tree: a grandchild that made a
/// session of its own (setsid after a double fork) is tracked, suspended,
/// counted and killed; the job's KillSig goes through the init to the
/// job, which catches it.
#[test]
fn the_pid_namespace_tracks_suspends_and_kills_a_setsid_escapee() {
    let Some(w) = pid_ns_world() else { return };
    let mut s = w.settings();
    s.pid_namespace = true;
    let job = w.job(
        "(setsid sh -c 'trap \"\" TERM; while :; do :; done' &) ; \
         trap 'echo term > got; exit 0' TERM; sleep 60 & wait",
    );
    let mut j = Starter::start(JobSpec::new(job, s).unwrap()).unwrap();
    // init, the job, its sleep and the setsid loop
    assert!(
        eventually(|| j.tree_pids().len() >= 4),
        "tree: {:?}",
        j.tree_pids()
    );
    let pids = j.tree_pids();
    let spinner = pids
        .iter()
        .copied()
        .find(|&p| starter::process_stat(p).is_some_and(|s| s.session == p && p != j.pid()))
        .expect("the setsid escapee is in the tree");
    j.suspend().unwrap();
    assert!(eventually(
        || starter::process_stat(spinner).is_some_and(|s| s.state == 'T')
    ));
    j.resume().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert!(j.usage().user_cpu > 0.0, "the escapee's CPU is counted");
    j.soft_kill().unwrap();
    assert!(
        eventually(|| w.read("got").trim() == "term"),
        "KillSig forwarded"
    );
    assert!(j.wait_timeout(Duration::from_secs(5)).unwrap().is_some());
    let r = j.finish();
    assert!(eventually(|| pids.iter().all(|&p| !alive(p))), "survivors");
    assert!(r.problems.is_empty(), "{:?}", r.problems);
}

/// A starter that is not root runs the job without (as HTCondor's), and
/// says so in the job's mechanisms.
#[test]
fn without_root_the_job_runs_without_a_pid_namespace_and_says_why() {
    if root() {
        println!("skipped: this is the unprivileged case and the test runs as root");
        return;
    }
    let w = World::new();
    let mut s = w.settings();
    s.pid_namespace = true;
    let j = Starter::start(JobSpec::new(w.job("echo $$ > pid"), s).unwrap()).unwrap();
    let why = j.mechanisms().pid_namespace.clone().unwrap().unwrap_err();
    assert!(why.contains("root"), "{why}");
    let r = j.finish();
    assert_eq!(r.status, ExitStatus::Code(0));
    assert_ne!(w.read("pid").trim(), "2");
}

/// A group id no group of this system has, for the tests' tracking group.
fn free_gid() -> u32 {
    (47_000 + std::process::id() % 1000..60_000)
        // SAFETY: getgrgid's result is only compared with null.
        .find(|&g| unsafe { libc::getgrgid(g) }.is_null())
        .unwrap()
}

/// USE_GID_PROCESS_TRACKING without a cgroup: the job's processes carry
/// the tracking group, and a `sleep` that the job double-forked into a
/// session of its own (out of reach of the process group and session) is
/// still the job's: tracked, and killed with it.
#[test]
fn a_tracking_group_marks_every_process_and_the_kill_reaches_a_setsid_escapee() {
    if !root() {
        println!("skipped: USE_GID_PROCESS_TRACKING needs a starter running as root");
        return;
    }
    let w = World::new();
    let gid = free_gid();
    let mut s = w.settings();
    s.tracking_gid = Some(gid);
    let job = w.job(
        "id -G > groups; \
         (setsid sh -c 'trap \"\" TERM; exec sleep 300' </dev/null >/dev/null 2>&1 &) ; \
         trap '' TERM; sleep 300",
    );
    let mut j = Starter::start(JobSpec::new(job, s).unwrap()).unwrap();
    assert_eq!(j.mechanisms().tracking_gid, Some(gid));
    let main = j.pid();
    let escapee = || {
        j.tree_pids()
            .into_iter()
            .find(|&p| starter::process_stat(p).is_some_and(|s| s.session == p && p != main))
    };
    assert!(
        eventually(|| escapee().is_some()),
        "tree: {:?}",
        j.tree_pids()
    );
    let escaped = escapee().unwrap();
    let pids = j.tree_pids();
    assert!(pids.len() >= 3, "{pids:?}");
    let groups = w.read("groups");
    assert!(
        groups.split_whitespace().any(|g| g == gid.to_string()),
        "the job's groups: {groups}"
    );
    j.suspend().unwrap();
    assert!(eventually(
        || starter::process_stat(escaped).is_some_and(|s| s.state == 'T')
    ));
    j.resume().unwrap();
    j.soft_kill().unwrap();
    std::thread::sleep(Duration::from_millis(50));
    assert!(alive(escaped), "SIGTERM is ignored");
    j.hard_kill().unwrap();
    assert!(j.wait_timeout(Duration::from_secs(5)).unwrap().is_some());
    let r = j.finish();
    assert!(eventually(|| pids.iter().all(|&p| !alive(p))), "survivors");
    assert!(r.problems.is_empty(), "{:?}", r.problems);
}

/// Without the tracking group, the same escapee is out of reach of the
/// process group and session: what the group is for. (It is killed by
/// the test afterwards.)
#[test]
fn without_a_tracking_group_a_setsid_escapee_is_not_found() {
    let w = World::new();
    let job = w.job(
        "(setsid sh -c 'echo $$ > escaped; exec sleep 300' </dev/null >/dev/null 2>&1 &) ; sleep 300",
    );
    let mut j = Starter::start(JobSpec::new(job, w.settings()).unwrap()).unwrap();
    assert!(eventually(|| !w.read("escaped").trim().is_empty()));
    let escaped: i32 = w.read("escaped").trim().parse().unwrap();
    assert!(!j.tree_pids().contains(&escaped));
    j.hard_kill().unwrap();
    j.finish();
    assert!(alive(escaped));
    // SAFETY: a plain signal to the process this test's job left.
    unsafe { libc::kill(escaped, libc::SIGKILL) };
}
