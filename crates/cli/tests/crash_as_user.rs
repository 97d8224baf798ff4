//! A pool started by root is killed (SIGKILL) while jobs of an ordinary
//! user (`fcsec-alice`) run, and one of each job's processes has escaped
//! its session and cleared its environment: nothing of the job's tells
//! the restarted pool it is a job's, except that the pool started it.
//! After the restart every process of those jobs, the escaped ones too,
//! must be gone within a few seconds; the jobs run again and complete,
//! and no sandbox is left in EXECUTE.
//!
//! Needs root (the throwaway users, see `common/users.rs`) and a cgroup
//! v2 this process may make cgroups in (where the jobs' cgroups go): the
//! only way a restarted pool can find an escaped process. Without either
//! the test says it is skipped.

mod common;
#[path = "common/users.rs"]
mod users;

use std::os::unix::fs::MetadataExt;
use std::time::{Duration, Instant};

use common::{alive, read_pids};
use users::{alice, skip_unless_root, Outcome, Pool, Scratch};

const CONFIG: &[(&str, &str)] = &[
    ("POLLING_INTERVAL", "1"),
    ("NEGOTIATOR_INTERVAL", "2"),
    ("UPDATE_INTERVAL", "1"),
    ("PERIODIC_EXPR_INTERVAL", "1"),
    ("NUM_CPUS", "3"),
];

/// The job, `@DIR@` being alice's directory: its own pid and a child's
/// in `pids`, an escaped process's in `escaped`, then a long sleep. Once
/// the test has restarted the pool (`restarted`), a run ends at once.
const JOB: &str = r#"#!/bin/sh
d=@DIR@
if [ -e "$d/restarted" ]; then exit 0; fi
echo $$ >> "$d/pids"
sleep 1000 &
echo $! >> "$d/pids"
env -i "$(command -v setsid)" /bin/sh -c "echo \$\$ >> $d/escaped; exec sleep 1000" \
  </dev/null >/dev/null 2>&1 &
exec sleep 1000
"#;

/// Kills (SIGKILL), when dropped, those of the pids that are still
/// alice's processes: whatever the test leaves behind, even on a panic.
struct Leftovers(Vec<i32>);

impl Drop for Leftovers {
    fn drop(&mut self) {
        let uid = alice().uid;
        for &p in &self.0 {
            let owner = std::fs::metadata(format!("/proc/{p}")).map(|m| m.uid());
            if alive(p) && owner.is_ok_and(|u| u == uid) {
                // SAFETY: a plain signal to a process of a job this test ran.
                unsafe { libc::kill(p, libc::SIGKILL) };
            }
        }
    }
}

#[test]
fn a_restart_after_a_crash_kills_every_process_of_a_user_s_jobs_even_escaped_ones() {
    if skip_unless_root() {
        return;
    }
    if let Err(why) = users::writable_cgroup() {
        eprintln!("skipped: needs a writable cgroup v2 ({why})");
        return;
    }
    let began = Instant::now();
    let a = alice();
    let s = Scratch::new("crash-as-user");
    let dir = s.alice.display().to_string();
    s.user_file(a, "job.sh", &JOB.replace("@DIR@", &dir), 0o755);
    let mut pool = Pool::start(&s.state, CONFIG);
    let c = pool
        .submit(
            a,
            &s.alice,
            "job.sub",
            "executable = job.sh\nshould_transfer_files = YES\n\
             when_to_transfer_output = ON_EXIT\noutput = out.$(Process)\nqueue 3\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
    let mut leftovers = Leftovers(Vec::new());
    let (pids, escaped) = common::wait_for(20, "three jobs with their escaped processes", || {
        let (p, e) = (
            read_pids(&s.alice.join("pids")),
            read_pids(&s.alice.join("escaped")),
        );
        leftovers.0 = p.iter().chain(&e).copied().collect();
        (p.len() == 6 && e.len() == 3).then_some((p, e))
    });
    let all: Vec<i32> = pids.iter().chain(&escaped).copied().collect();
    // The escaped processes are alice's, in sessions of their own.
    for &e in &escaped {
        let ids = users::proc_ids(e).unwrap_or_else(|| panic!("escaped process {e} is gone"));
        assert_eq!(ids.2, e, "process {e} did not make its own session");
    }
    assert!(all.iter().all(|&p| alive(p)), "{all:?}");

    pool.kill();
    std::fs::write(s.alice.join("restarted"), "").unwrap();
    let pool = Pool::start(&s.state, CONFIG);
    let restarted = Instant::now();
    let deadline = restarted + Duration::from_secs(5);
    let mut left: Vec<i32> = all.iter().copied().filter(|&p| alive(p)).collect();
    while !left.is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
        left.retain(|&p| alive(p));
    }
    let gone_after = restarted.elapsed();
    let describe = |p: &i32| {
        let cmd = std::fs::read(format!("/proc/{p}/cmdline"))
            .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
            .unwrap_or_default();
        let kind = if escaped.contains(p) {
            "escaped"
        } else {
            "job"
        };
        format!("{p} ({kind}: {cmd})")
    };
    if !left.is_empty() {
        let text: Vec<String> = left.iter().map(describe).collect();
        panic!(
            "5 s after the restart, processes of alice's jobs the killed pool left are \
             still alive: {text:?}\ndaemon:\n{}",
            pool.daemon_log()
        );
    }

    // The jobs run again (and end at once) and complete.
    for p in 0..3 {
        let job = format!("{c}.{p}");
        let o = pool.outcome(a, &job, 30);
        assert_eq!(
            o,
            Outcome::Left {
                status: 4,
                exit_code: Some(0)
            },
            "job {job} after the restart\ndaemon:\n{}",
            pool.daemon_log()
        );
    }
    let execute = s.state.join("execute");
    let sandboxes = || -> Vec<String> {
        std::fs::read_dir(&execute)
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default()
    };
    let deadline = Instant::now() + Duration::from_secs(5);
    while !sandboxes().is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        sandboxes().is_empty(),
        "sandboxes left in EXECUTE: {:?}",
        sandboxes()
    );
    eprintln!(
        "crash as a user: {} processes gone {:.1} s after the restart; {:.1} s in all",
        all.len(),
        gone_after.as_secs_f64(),
        began.elapsed().as_secs_f64()
    );
}
