//! What a pool that died left running, and killing it at the next start.
//!
//! Each job's start is recorded in `<state>/running/<slot>`: the pid of
//! its leader (a session and process group of its own), when that process
//! started (clock ticks since boot, so a pid the kernel handed to another
//! process is never taken for the job), and the job's cgroup, if it has
//! one. At start, [`kill_leftovers`] kills:
//! - every process in a leftover job cgroup (`cgroup.kill`), which holds
//!   every process of the job, even one that left its session and cleared
//!   its environment; then the cgroup is removed;
//! - where there was no cgroup, the recorded leader if it is still the
//!   same process, and the members of its session and process group that
//!   started after it (a session id is not handed out again while any
//!   process still has it, so live members with the leader gone are the
//!   job's; but if the leader's pid now belongs to a newer process, its
//!   session is that process's and nothing is killed);
//! - processes whose environment names a sandbox under EXECUTE
//!   (`_CONDOR_SCRATCH_DIR`), for a job whose start was not recorded yet;
//!
//! then waits for them, and removes the sandboxes they left, as HTCondor's
//! startd cleans EXECUTE when it starts. With USE_GID_PROCESS_TRACKING,
//! [`kill_tracked_leftovers`] also kills every process that still carries
//! a tracking group (only a job's processes get one, and none runs while
//! the startd starts), even one that left its session and cleared its
//! environment without a cgroup.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use starter::{process_stat, ProcStat as Proc};

/// The prefix of a job cgroup's name (the starter names it after the
/// sandbox: `ferrocondor_dir_<pid>_<n>`).
const JOB_CGROUP_PREFIX: &str = "ferrocondor_dir_";

/// Records the job whose leader is `pid` on `slot`.
pub(crate) fn record_running(dir: &Path, slot: &str, pid: i32) {
    let start = process_start(pid).unwrap_or(0);
    let cgroup = starter::cgroup_of(pid)
        .filter(|c| {
            c.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(JOB_CGROUP_PREFIX))
        })
        .map(|c| format!(" {}", c.display()))
        .unwrap_or_default();
    let _ = std::fs::write(dir.join(slot), format!("{pid} {start}{cgroup}\n"));
}

pub(crate) fn forget_running(dir: &Path, slot: &str) {
    let _ = std::fs::remove_file(dir.join(slot));
}

/// One record: leader, its start time, its cgroup.
#[derive(Debug, PartialEq)]
struct Record {
    pid: i32,
    start: u64,
    cgroup: Option<PathBuf>,
}

fn parse_record(text: &str) -> Option<Record> {
    let mut it = text.split_whitespace();
    let pid = it.next()?.parse().ok()?;
    let start = it.next()?.parse().ok()?;
    let cgroup = it.next().map(PathBuf::from);
    Some(Record { pid, start, cgroup })
}

fn process_start(pid: i32) -> Option<u64> {
    process_stat(pid).map(|p| p.start)
}

/// Which recorded processes to kill, from a view of every process: the
/// leader if it is the recorded process; members of its session or group
/// that started no earlier, unless the leader's pid is now another's.
fn doomed_by_record(rec: &Record, procs: &[Proc]) -> Vec<i32> {
    if rec.pid <= 1 {
        return Vec::new();
    }
    match procs.iter().find(|p| p.pid == rec.pid) {
        // The pid now names a newer process: its session is not the job's.
        Some(p) if p.start != rec.start => return Vec::new(),
        _ => {}
    }
    procs
        .iter()
        .filter(|p| {
            (p.pid == rec.pid || p.pgrp == rec.pid || p.session == rec.pid) && p.start >= rec.start
        })
        .map(|p| p.pid)
        .collect()
}

/// Kills what a dead pool left: see the module's doc. `cgroup_parent` is
/// where this pool makes job cgroups, `BASE_CGROUP` beside the daemon's
/// leaf (`starter::cgroup_layout`: a pool restarted where the dead one ran
/// finds the same place); leftovers of jobs whose start was not recorded
/// are found there by their sandbox's name, recorded ones by their path.
pub(crate) fn kill_leftovers(dir: &Path, execute: &Path, cgroup_parent: Option<&Path>) {
    let mut records = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if let Some(r) = parse_record(&std::fs::read_to_string(e.path()).unwrap_or_default()) {
            records.push(r);
        }
        let _ = std::fs::remove_file(e.path());
    }
    let sandboxes: Vec<PathBuf> = std::fs::read_dir(execute)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("dir_"))
        .map(|e| e.path())
        .collect();
    let mut cgroups: Vec<PathBuf> = records.iter().filter_map(|r| r.cgroup.clone()).collect();
    if let Some(parent) = cgroup_parent {
        for s in &sandboxes {
            let name = format!(
                "ferrocondor_{}",
                s.file_name().unwrap_or_default().to_string_lossy()
            );
            let cg = parent.join(name);
            if cg.join("cgroup.procs").exists() && !cgroups.contains(&cg) {
                cgroups.push(cg);
            }
        }
    }
    cgroups.retain(|c| {
        c.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with(JOB_CGROUP_PREFIX))
            && c.join("cgroup.procs").exists()
    });
    for cg in &cgroups {
        kill_cgroup(cg);
    }
    if records.is_empty() && sandboxes.is_empty() {
        return;
    }
    let procs: Vec<Proc> = starter::all_pids()
        .into_iter()
        .filter_map(process_stat)
        .collect();
    let mut doomed: Vec<i32> = records
        .iter()
        .filter(|r| r.cgroup.is_none())
        .flat_map(|r| doomed_by_record(r, &procs))
        .collect();
    if !sandboxes.is_empty() {
        let scratch = format!("_CONDOR_SCRATCH_DIR={}", execute.join("dir_").display());
        for p in &procs {
            let environ = std::fs::read(format!("/proc/{}/environ", p.pid)).unwrap_or_default();
            if environ
                .split(|b| *b == 0)
                .any(|v| v.starts_with(scratch.as_bytes()))
            {
                doomed.push(p.pid);
            }
        }
    }
    let me = std::process::id() as i32;
    for &pid in &doomed {
        if pid > 1 && pid != me {
            // SAFETY: a plain signal to a process of a job a pool started.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
    // Gone (or zombies of a dead parent) before any job runs again.
    let deadline = Instant::now() + Duration::from_secs(2);
    while Instant::now() < deadline
        && doomed
            .iter()
            .any(|&p| process_stat(p).is_some_and(|st| st.state != 'Z'))
    {
        std::thread::sleep(Duration::from_millis(10));
    }
    for s in sandboxes {
        let _ = std::fs::remove_dir_all(s);
    }
}

/// Kills every process that carries a group of `min..=max` (the tracking
/// groups: a dead pool's jobs'); says how many there were.
pub(crate) fn kill_tracked_leftovers(min: u32, max: u32) -> usize {
    let me = std::process::id() as i32;
    let doomed: Vec<i32> = starter::all_pids()
        .into_iter()
        .filter(|&p| p > 1 && p != me)
        .filter(|p| {
            std::fs::read_to_string(format!("/proc/{p}/status")).is_ok_and(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("Groups:"))
                    .is_some_and(|g| {
                        g.split_whitespace()
                            .filter_map(|g| g.parse::<u32>().ok())
                            .any(|g| (min..=max).contains(&g))
                    })
            })
        })
        .collect();
    for &pid in &doomed {
        // SAFETY: a plain signal to a process a dead pool's job left.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    let deadline = Instant::now() + Duration::from_secs(2);
    while Instant::now() < deadline
        && doomed
            .iter()
            .any(|&p| process_stat(p).is_some_and(|st| st.state != 'Z'))
    {
        std::thread::sleep(Duration::from_millis(10));
    }
    doomed.len()
}

/// Kills every process in a leftover job cgroup and removes it.
fn kill_cgroup(cg: &Path) {
    let procs = || {
        std::fs::read_to_string(cg.join("cgroup.procs"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().parse::<i32>().ok())
            .collect::<Vec<_>>()
    };
    // A frozen cgroup's processes die only once thawed.
    let _ = std::fs::write(cg.join("cgroup.freeze"), "0");
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        if std::fs::write(cg.join("cgroup.kill"), "1").is_err() {
            for pid in procs() {
                // SAFETY: a plain signal to a process in the job's cgroup.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
        }
        if procs().is_empty() || Instant::now() >= deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    while std::fs::remove_dir(cg).is_err() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(pid: i32, pgrp: i32, session: i32, start: u64) -> Proc {
        Proc {
            pid,
            state: 'S',
            pgrp,
            session,
            utime: 0,
            stime: 0,
            rss_pages: 0,
            start,
        }
    }

    #[test]
    fn records_read_back_with_and_without_a_cgroup() {
        assert_eq!(
            parse_record("12 345\n"),
            Some(Record {
                pid: 12,
                start: 345,
                cgroup: None
            })
        );
        assert_eq!(
            parse_record("12 345 /sys/fs/cgroup/x/ferrocondor_dir_1_2\n")
                .unwrap()
                .cgroup,
            Some(PathBuf::from("/sys/fs/cgroup/x/ferrocondor_dir_1_2"))
        );
        assert_eq!(parse_record("garbage"), None);
    }

    #[test]
    fn a_reused_pid_and_its_session_are_never_killed() {
        let rec = Record {
            pid: 100,
            start: 50,
            cgroup: None,
        };
        // The same leader: it and its members go, an older unrelated
        // process in another session stays.
        let procs = [p(100, 100, 100, 50), p(101, 100, 100, 60), p(7, 7, 7, 1)];
        assert_eq!(doomed_by_record(&rec, &procs), vec![100, 101]);
        // The leader is gone: its surviving members still go.
        let procs = [p(101, 100, 100, 60), p(102, 102, 100, 70)];
        assert_eq!(doomed_by_record(&rec, &procs), vec![101, 102]);
        // Pid 100 now belongs to a newer process that made its own session:
        // nothing is the job's.
        let procs = [p(100, 100, 100, 900), p(101, 100, 100, 901)];
        assert!(doomed_by_record(&rec, &procs).is_empty());
        // Never pid 1.
        let rec1 = Record {
            pid: 1,
            start: 0,
            cgroup: None,
        };
        assert!(doomed_by_record(&rec1, &[p(1, 1, 1, 0)]).is_empty());
    }
}
