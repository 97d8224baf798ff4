//! Process tracking on a personal pool started by root (issue 18), as
//! `examples/config/process-tracking.conf` configures it: each job of an
//! ordinary user (`fcsec-alice`) runs in a PID namespace of its own (it is
//! pid 2 under the init, and its /proc shows only its own processes); a
//! process it double-forked into a session of its own is the job's, and
//! `rm` kills it. With USE_GID_PROCESS_TRACKING alone (no namespace, no
//! cgroup), the same process carries the job's tracking group and `rm`
//! kills it too.
//!
//! Needs root (a startd gives a namespace only as root, and the throwaway
//! users); without, the test says it is skipped.

mod common;
#[path = "common/users.rs"]
mod users;

use common::alive;
use users::{alice, skip_unless_root, Outcome, Pool, Scratch};

const FAST: &[(&str, &str)] = &[
    ("POLLING_INTERVAL", "1"),
    ("NEGOTIATOR_INTERVAL", "2"),
    ("UPDATE_INTERVAL", "1"),
    ("PERIODIC_EXPR_INTERVAL", "1"),
    ("NUM_CPUS", "2"),
];

/// The tests that use the tracking range take turns: a startd that starts
/// kills whatever carries a group of its range (a dead pool's leftovers),
/// so two pools on one machine must not share a range, as in HTCondor.
static ONE_RANGE_USER: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The processes whose command line is exactly `words`.
fn processes(words: &[&str]) -> Vec<i32> {
    let want: Vec<u8> = words
        .iter()
        .flat_map(|w| [w.as_bytes(), b"\0"].concat())
        .collect();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|p| std::fs::read(format!("/proc/{p}/cmdline")).is_ok_and(|c| c == want))
        .filter(|&p| alive(p))
        .collect()
}

/// The job: its pid and how many processes its /proc shows, then a
/// `sleep` double-forked into a session of its own, then a long sleep.
fn job(dir: &str, mark: &str) -> String {
    format!(
        "#!/bin/sh\n\
         echo $$ > {dir}/pid\n\
         ls /proc | grep -c '^[0-9]' > {dir}/count\n\
         (setsid sleep {mark} </dev/null >/dev/null 2>&1 &)\n\
         exec sleep 1000\n"
    )
}

#[test]
fn a_job_runs_in_its_own_pid_namespace_and_rm_kills_what_it_setsid() {
    if skip_unless_root() {
        return;
    }
    let a = alice();
    let s = Scratch::new("pid-namespaces");
    let dir = s.alice.display().to_string();
    // This pool tracks by group too (the example sets both).
    let _turn = ONE_RANGE_USER.lock().unwrap_or_else(|e| e.into_inner());
    let mark = format!("4{}", std::process::id());
    s.user_file(a, "job.sh", &job(&dir, &mark), 0o755);
    let pool = Pool::start_with_config(
        &s.state,
        &common::example_path("process-tracking.conf"),
        FAST,
    );
    let c = pool
        .submit(a, &s.alice, "job.sub", "executable = job.sh\nqueue\n")
        .unwrap_or_else(|e| panic!("{e}"));
    let job_id = format!("{c}.0");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let escapee = loop {
        let held = pool.q(a, &job_id, &["JobStatus", "HoldReason"]);
        if held.starts_with("5 ") && held.contains("PID namespace") {
            break None;
        }
        if let Some(&p) = processes(&["sleep", &mark]).first() {
            break Some(p);
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no setsid sleep of the job; the job: {held}\n{}",
            pool.daemon_log()
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let Some(escapee) = escapee else {
        println!(
            "skipped: this kernel refuses root a PID namespace: {}",
            pool.q(a, &job_id, &["HoldReason"])
        );
        return;
    };
    let ids = users::proc_ids(escapee).unwrap();
    assert_eq!(ids.2, escapee, "the sleep made a session of its own");
    assert_eq!(
        std::fs::read_to_string(s.alice.join("pid")).unwrap().trim(),
        "2",
        "the job is pid 2 of its namespace, under the init"
    );
    let count: usize = std::fs::read_to_string(s.alice.join("count"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(count <= 6, "the job's /proc shows {count} processes");

    pool.tool(a, &s.alice, &["rm", &job_id]);
    common::wait_for(10, "the setsid sleep killed by rm", || {
        (!alive(escapee)).then_some(())
    });
    match pool.outcome(a, &job_id, 20) {
        Outcome::Left { status: 3, .. } => {}
        o => panic!("{o:?}\n{}", pool.daemon_log()),
    }
}

/// The supplementary groups of process `pid`.
fn groups_of(pid: i32) -> Vec<u32> {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("Groups:"))
        .map(|g| {
            g.split_whitespace()
                .filter_map(|g| g.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_tracking_group_lets_rm_kill_what_the_job_double_forked_and_setsid() {
    if skip_unless_root() {
        return;
    }
    if let Some(g) = (750..=757).find(|&g| unsafe { !libc::getgrgid(g).is_null() }) {
        println!("skipped: group {g} exists here, inside the example's tracking range");
        return;
    }
    let _turn = ONE_RANGE_USER.lock().unwrap_or_else(|e| e.into_inner());
    let a = alice();
    let s = Scratch::new("gid-tracking");
    let dir = s.alice.display().to_string();
    let mark = format!("5{}", std::process::id());
    s.user_file(a, "job.sh", &job(&dir, &mark), 0o755);
    // Neither a namespace nor a cgroup: only the group tracks the job.
    let mut env = FAST.to_vec();
    env.push(("USE_PID_NAMESPACES", "False"));
    env.push(("BASE_CGROUP", ""));
    let pool = Pool::start_with_config(
        &s.state,
        &common::example_path("process-tracking.conf"),
        &env,
    );
    let c = pool
        .submit(a, &s.alice, "job.sub", "executable = job.sh\nqueue\n")
        .unwrap_or_else(|e| panic!("{e}"));
    let job_id = format!("{c}.0");
    let escapee = common::wait_for(20, "the job's setsid sleep", || {
        processes(&["sleep", &mark]).first().copied()
    });
    let ids = users::proc_ids(escapee).unwrap();
    assert_eq!(ids.2, escapee, "the sleep made a session of its own");
    let groups = groups_of(escapee);
    assert!(
        groups.iter().any(|g| (750..=757).contains(g)),
        "the escapee's groups: {groups:?}"
    );
    pool.tool(a, &s.alice, &["rm", &job_id]);
    common::wait_for(10, "the setsid sleep killed by rm", || {
        (!alive(escapee)).then_some(())
    });
    match pool.outcome(a, &job_id, 20) {
        Outcome::Left { status: 3, .. } => {}
        o => panic!("{o:?}\n{}", pool.daemon_log()),
    }
    let log = pool.daemon_log();
    assert!(log.contains("jobs run without a cgroup"), "{log}");
    assert!(
        log.contains("USE_GID_PROCESS_TRACKING: each job is marked by a group of 750-757"),
        "{log}"
    );
}

/// A pool killed (SIGKILL) while a job runs whose `sleep` left the
/// session and cleared its environment (nothing tells it is a job's but
/// its tracking group), with no cgroup: the restarted pool kills it.
#[test]
fn a_restart_kills_what_a_dead_pool_s_job_left_carrying_a_tracking_group() {
    if skip_unless_root() {
        return;
    }
    if let Some(g) = (750..=757).find(|&g| unsafe { !libc::getgrgid(g).is_null() }) {
        println!("skipped: group {g} exists here, inside the example's tracking range");
        return;
    }
    let _turn = ONE_RANGE_USER.lock().unwrap_or_else(|e| e.into_inner());
    let a = alice();
    let s = Scratch::new("gid-leftovers");
    let mark = format!("6{}", std::process::id());
    s.user_file(
        a,
        "job.sh",
        &format!(
            "#!/bin/sh\n\
             echo $$ > {dir}/leader\n\
             (env -i \"$(command -v setsid)\" sleep {mark} </dev/null >/dev/null 2>&1 &)\n\
             exec sleep 1000\n",
            dir = s.alice.display()
        ),
        0o755,
    );
    let mut env = FAST.to_vec();
    env.push(("USE_PID_NAMESPACES", "False"));
    env.push(("BASE_CGROUP", ""));
    let config = common::example_path("process-tracking.conf");
    let mut pool = Pool::start_with_config(&s.state, &config, &env);
    pool.submit(a, &s.alice, "job.sub", "executable = job.sh\nqueue\n")
        .unwrap_or_else(|e| panic!("{e}"));
    let escapee = common::wait_for(20, "the job's setsid sleep", || {
        processes(&["sleep", &mark]).first().copied()
    });
    let environ = std::fs::read(format!("/proc/{escapee}/environ")).unwrap_or_default();
    assert!(environ.is_empty(), "the sleep cleared its environment");
    pool.kill();
    assert!(alive(escapee), "the dead pool's job left it");
    // The job's leader ends too: what is left is the escapee alone, which
    // neither the recorded session nor the environment leads to.
    let leader: i32 = std::fs::read_to_string(s.alice.join("leader"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // SAFETY: a plain signal to the job this test's pool started.
    unsafe { libc::kill(leader, libc::SIGKILL) };
    common::wait_for(5, "the job's leader gone", || {
        (!alive(leader)).then_some(())
    });
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(
        alive(escapee),
        "the escapee outlived its pool and its leader"
    );
    let _pool = Pool::start_with_config(&s.state, &config, &env);
    common::wait_for(10, "the leftover killed by the restarted pool", || {
        (!alive(escapee)).then_some(())
    });
    // (Its log does not always say "killed N processes a dead pool's jobs
    // left": some starts build the startd role twice, and the note of the
    // first, which did the killing, is not in the log.)
}
