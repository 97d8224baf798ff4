//! Crash safety of the personal pool, end to end: the pool is SIGKILLed
//! 20 times while a client submits a stream of clusters and while their
//! jobs run, and restarted on the same state directory each time. At the
//! end every job the tool acknowledged (also those of factories, late
//! materialization's clusters) is in the queue or the history exactly
//! once, a cluster is there whole or not at all, every finished job kept
//! its result and its output, a job whose run a crash killed ran
//! again (never two runs of one job at once), and no job process outlives
//! the pool.
//!
//! Each job is a shell script that takes a per-job lock (`flock -n`)
//! before it says it started: a second run of a job while an earlier one
//! is still alive (a process a dead pool left behind) cannot take it, says
//! so in the run log and exits 3.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{err, ok, out, run, scratch, write, PoolProcess};

/// How many times the pool is killed.
const ROUNDS: u64 = 20;

/// Six slots on any machine (the jobs mostly sleep), so several jobs run
/// at each kill. The negotiator keeps its default interval (60 s): jobs
/// must run again after a restart without waiting for it.
const CONFIG: &[(&str, &str)] = &[("NUM_CPUS", "6")];

/// After the last restart (no more submissions), the queue must be empty
/// within this long.
const DRAIN_SECS: u64 = 40;

/// The job, `job.sh CLUSTER PROC`: 0.05 to 0.54 s of sleep, varied by id,
/// between a `start` and an `end` line in `runs.log`; prints `C.P ok`. The
/// first run of one job in four sleeps 1.5 s more: longer than a restart
/// takes, so a dead pool's runs are still alive when the next pool starts
/// (and reruns are short, so these jobs do not hold the slots forever).
const JOB: &str = r#"#!/bin/sh
dir=@DIR@
id=$1.$2
exec 9>>"$dir/locks/$id"
if ! flock -n 9; then
  echo "overlap $id $(date +%s%N) $$" >> "$dir/runs.log"
  exit 3
fi
echo "start $id $(date +%s%N) $$" >> "$dir/runs.log"
t=$(( ($1 * 7 + $2 * 13) % 50 + 5 ))
if [ ! -e "$dir/locks/$id.ran" ]; then
  : > "$dir/locks/$id.ran"
  [ $(( ($1 + $2) % 4 )) = 0 ] && t=$((t + 150))
fi
sleep $((t / 100)).$(printf %02d $((t % 100)))
echo "end $id $(date +%s%N) $$" >> "$dir/runs.log"
echo "$id ok"
"#;

type JobId = (u32, u32);

fn show(id: JobId) -> String {
    format!("{}.{}", id.0, id.1)
}

fn parse_id(s: &str) -> Option<JobId> {
    let (c, p) = s.split_once('.')?;
    Some((c.parse().ok()?, p.parse().ok()?))
}

/// A directory the pool's user may write.
fn mkdir(path: &Path) {
    std::fs::create_dir_all(path).unwrap();
    if let Some((uid, gid)) = common::run_as() {
        std::os::unix::fs::chown(path, Some(uid), Some(gid)).unwrap();
    }
}

/// The submit description of `n` jobs.
/// A cluster of `n` jobs; a `factory` (late materialization) makes them
/// one at a time, as the one before leaves.
fn description(dir: &Path, mark: &str, n: u32, factory: bool) -> String {
    format!(
        "executable = {}/job.sh\narguments = $(Cluster) $(Process)\n\
         output = out/$(Cluster).$(Process)\nerror = out/$(Cluster).$(Process).err\n\
         environment = \"CRASH_MARK={mark}\"\n+CrashJobs = {n}\n{}queue {n}\n",
        dir.display(),
        if factory { "max_materialize = 1\n" } else { "" }
    )
}

/// What the submitting client saw.
#[derive(Default)]
struct Submissions {
    /// Cluster -> number of jobs, for every submission the tool
    /// acknowledged ("N job(s) submitted to cluster C.").
    acked: BTreeMap<u32, u32>,
    /// Submissions that failed (the pool was down or died mid-request).
    failed: u32,
    /// How many submissions were factories (late materialization).
    factories: u32,
}

/// The client's side: `stop` ends it; `begun` counts the submissions it
/// has started (the test kills the pool in the middle of some).
struct Client {
    stop: AtomicBool,
    begun: AtomicU32,
}

/// Submits clusters of 1 to 3 jobs, one every 150-250 ms, until stopped;
/// every fourth is a factory of 3 jobs that keeps one present at a time.
fn submitter(dir: PathBuf, state: PathBuf, mark: String, client: Arc<Client>) -> Submissions {
    let mut s = Submissions::default();
    let mut k: u32 = 0;
    while !client.stop.load(Ordering::SeqCst) {
        let factory = k % 4 == 3;
        let n = if factory { 3 } else { 1 + k % 3 };
        if factory {
            s.factories += 1;
        }
        write(
            &dir.join("crash.sub"),
            &description(&dir, &mark, n, factory),
        );
        client.begun.fetch_add(1, Ordering::SeqCst);
        let o = run(&state, &dir, &["submit", "crash.sub"]);
        if o.status.success() {
            let text = out(&o);
            let (count, cluster) = text
                .lines()
                .find_map(|l| {
                    let (count, rest) = l.split_once(" job(s) submitted to cluster ")?;
                    Some((
                        count.trim().parse::<u32>().ok()?,
                        rest.trim_end_matches('.').parse::<u32>().ok()?,
                    ))
                })
                .unwrap_or_else(|| panic!("submit succeeded but said: {text}{}", err(&o)));
            assert_eq!(count, n, "{text}");
            let again = s.acked.insert(cluster, n);
            assert!(
                again.is_none(),
                "cluster {cluster} was acknowledged twice: {text}"
            );
        } else {
            s.failed += 1;
        }
        k += 1;
        std::thread::sleep(Duration::from_millis(150 + u64::from(k * 37 % 100)));
    }
    s
}

/// A process of one of this test's jobs (its environment has the mark).
struct JobProcess {
    pid: i32,
    /// The parent of its session's leader (the pool that started it).
    leader_parent: Option<i32>,
    cmd: String,
}

/// `pid cmdline` of each, one a line.
fn list(ps: &[JobProcess]) -> String {
    ps.iter()
        .map(|p| {
            format!(
                "\n  {} {} (session leader's parent {:?})",
                p.pid, p.cmd, p.leader_parent
            )
        })
        .collect()
}

/// (ppid, session) of a process.
fn stat(pid: i32) -> Option<(i32, i32)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let f: Vec<&str> = text[text.rfind(')')? + 2..].split_whitespace().collect();
    Some((f.get(1)?.parse().ok()?, f.get(3)?.parse().ok()?))
}

/// Every live process whose environment has `CRASH_MARK=<mark>`.
fn job_processes(mark: &str) -> Vec<JobProcess> {
    let needle = format!("CRASH_MARK={mark}");
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(env) = std::fs::read(format!("/proc/{pid}/environ")) else {
            continue;
        };
        if !env.split(|&b| b == 0).any(|v| v == needle.as_bytes()) {
            continue;
        }
        let cmd = std::fs::read(format!("/proc/{pid}/cmdline"))
            .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
            .unwrap_or_default();
        let leader_parent = stat(pid)
            .and_then(|(_, session)| stat(session))
            .map(|(ppid, _)| ppid);
        found.push(JobProcess {
            pid,
            leader_parent,
            cmd,
        });
    }
    found
}

/// The last `n` bytes of `text` (from a line's start).
fn tail(text: &str, n: usize) -> &str {
    let from = text.len().saturating_sub(n);
    match text.as_bytes()[from..].iter().position(|&b| b == b'\n') {
        Some(i) if from > 0 => &text[from + i + 1..],
        _ => text,
    }
}

/// `-af` lines of a tool, split into words.
fn rows(state: &Path, dir: &Path, args: &[&str]) -> Vec<Vec<String>> {
    ok(run(state, dir, args))
        .lines()
        .map(|l| l.split_whitespace().map(str::to_string).collect())
        .collect()
}

fn id_of(row: &[String]) -> JobId {
    (
        row[0].parse().unwrap_or_else(|_| panic!("{row:?}")),
        row[1].parse().unwrap_or_else(|_| panic!("{row:?}")),
    )
}

const HISTORY: &[&str] = &[
    "history",
    "-af",
    "ClusterId",
    "ProcId",
    "JobStatus",
    "ExitCode",
    "CrashJobs",
    "CompletionDate",
];
const QUEUE: &[&str] = &["q", "-af", "ClusterId", "ProcId", "JobStatus", "CrashJobs"];

/// The history by job; a job in it twice fails the test.
fn history(state: &Path, dir: &Path) -> BTreeMap<JobId, Vec<String>> {
    let mut h = BTreeMap::new();
    for row in rows(state, dir, HISTORY) {
        let id = id_of(&row);
        if let Some(before) = h.insert(id, row.clone()) {
            panic!(
                "job {} is in the history twice: {before:?} and {row:?}",
                show(id)
            );
        }
    }
    h
}

/// One run of a job, from `runs.log`.
#[derive(Debug)]
struct Run {
    pid: u32,
    start: u128,
    end: Option<u128>,
}

#[test]
fn sigkill_during_submissions_and_runs_loses_and_duplicates_nothing() {
    let began = Instant::now();
    assert!(
        std::process::Command::new("flock")
            .arg("-V")
            .output()
            .is_ok_and(|o| o.status.success()),
        "this test needs flock(1) (util-linux)"
    );
    let dir = scratch("crash");
    let state = dir.join("state");
    let mark = dir.file_name().unwrap().to_string_lossy().into_owned();
    mkdir(&dir.join("out"));
    mkdir(&dir.join("locks"));
    let script = dir.join("job.sh");
    write(&script, &JOB.replace("@DIR@", &dir.display().to_string()));
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    let client = Arc::new(Client {
        stop: AtomicBool::new(false),
        begun: AtomicU32::new(0),
    });
    let submitting = {
        let (dir, state, mark, client) = (
            dir.to_path_buf(),
            state.clone(),
            mark.clone(),
            client.clone(),
        );
        std::thread::spawn(move || submitter(dir, state, mark, client))
    };

    // What the history held at the last look: it only grows, unchanged.
    let mut seen: BTreeMap<JobId, Vec<String>> = BTreeMap::new();
    let mut running_at_kill = Vec::new();
    for round in 0..ROUNDS {
        let mut pool = PoolProcess::start(&state, CONFIG);
        // Whatever the pool killed last time left running is gone now
        // (a process the restart killed gets a moment to die).
        let mut left = Vec::new();
        for _ in 0..10 {
            left = job_processes(&mark)
                .into_iter()
                .filter(|p| p.leader_parent != Some(pool.pid() as i32))
                .collect();
            if left.is_empty() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        assert!(
            left.is_empty(),
            "round {round}: job processes a killed pool left survived the restart:{}",
            list(&left)
        );
        let now = history(&state, &dir);
        for (id, row) in &seen {
            assert_eq!(
                now.get(id),
                Some(row),
                "round {round}: job {} changed or left the history after a restart",
                show(*id)
            );
        }
        seen = now;
        // A kill at 100-900 ms, varied from round to round; in odd rounds
        // 0-12 ms after the client starts its next submission, so some
        // land while a submission is in flight.
        std::thread::sleep(Duration::from_millis(100 + round * 379 % 800));
        if round % 2 == 1 {
            let before = client.begun.load(Ordering::SeqCst);
            let give_up = Instant::now() + Duration::from_secs(1);
            while client.begun.load(Ordering::SeqCst) == before && Instant::now() < give_up {
                std::thread::sleep(Duration::from_millis(1));
            }
            std::thread::sleep(Duration::from_millis(round / 2 % 5 * 3));
        }
        // The last kill surely while a job runs, so the last restart has
        // a job to run again.
        if round == ROUNDS - 1 {
            let give_up = Instant::now() + Duration::from_secs(10);
            while !job_processes(&mark)
                .iter()
                .any(|p| p.cmd.contains("job.sh") && p.leader_parent == Some(pool.pid() as i32))
            {
                assert!(Instant::now() < give_up, "no job ran in the last round");
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        running_at_kill.push(
            job_processes(&mark)
                .iter()
                .filter(|p| p.cmd.contains("job.sh"))
                .count(),
        );
        pool.kill();
    }
    client.stop.store(true, Ordering::SeqCst);
    let submitted = submitting
        .join()
        .unwrap_or_else(|e| std::panic::resume_unwind(e));

    // The last restart, with no submission to prompt the negotiator: what
    // is left must run (again) and finish.
    let pool = PoolProcess::start(&state, CONFIG);
    let restarted = Instant::now();
    let left_at_restart = rows(&state, &dir, QUEUE).len();
    assert!(
        left_at_restart > 0,
        "the last kill left no job to run again"
    );
    let deadline = restarted + Duration::from_secs(DRAIN_SECS);
    loop {
        let q = rows(&state, &dir, QUEUE);
        if q.is_empty() {
            break;
        }
        if Instant::now() > deadline {
            let mut by_status: BTreeMap<String, usize> = BTreeMap::new();
            for r in &q {
                *by_status.entry(r[2].clone()).or_default() += 1;
            }
            panic!(
                "{} of the {left_at_restart} jobs left at the last restart are still queued \
                 {DRAIN_SECS} s later (by JobStatus: {by_status:?}; no submission came after \
                 the restart, so only the restart itself can have asked for a negotiation \
                 cycle; NEGOTIATOR_INTERVAL is the default 60 s)\ndaemon log (the end):\n{}",
                q.len(),
                tail(&pool.daemon_log(), 4000)
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let drained = restarted.elapsed();
    let queue = rows(&state, &dir, QUEUE);
    let hist = history(&state, &dir);
    for (id, row) in &seen {
        assert_eq!(
            hist.get(id),
            Some(row),
            "job {} changed or left the history",
            show(*id)
        );
    }
    let down = ok(run(&state, &dir, &["pool", "down"]));
    assert!(down.contains("is down"), "{down}");
    let leftovers = job_processes(&mark);
    assert!(
        leftovers.is_empty(),
        "job processes are still running after `pool down`:{}",
        list(&leftovers)
    );
    drop(pool);

    // Every job in the queue or the history, once.
    let mut present: BTreeMap<JobId, Vec<String>> = BTreeMap::new();
    for row in queue.iter().chain(hist.values()) {
        if let Some(before) = present.insert(id_of(row), row.clone()) {
            panic!(
                "job {} is present twice: {before:?} and {row:?}",
                show(id_of(row))
            );
        }
    }
    assert!(queue.is_empty(), "{queue:?}");
    // Every acknowledged job is there.
    let mut acked_jobs = 0;
    for (&c, &n) in &submitted.acked {
        for p in 0..n {
            assert!(
                present.contains_key(&(c, p)),
                "acknowledged job {c}.{p} is lost"
            );
        }
        acked_jobs += n;
    }
    // A cluster is all there or not at all, acknowledged or not (a
    // submission the pool stored but died before answering).
    let mut clusters: BTreeMap<u32, Vec<&Vec<String>>> = BTreeMap::new();
    for (&(c, _), row) in &present {
        clusters.entry(c).or_default().push(row);
    }
    let mut unanswered = Vec::new();
    for (c, jobs) in &clusters {
        let n: u32 = jobs[0][4]
            .parse()
            .unwrap_or_else(|_| panic!("cluster {c}: CrashJobs {:?}", jobs[0]));
        let procs: BTreeSet<u32> = jobs.iter().map(|r| id_of(r).1).collect();
        assert_eq!(
            procs,
            (0..n).collect::<BTreeSet<u32>>(),
            "cluster {c} of {n} jobs is half there: {jobs:?}"
        );
        match submitted.acked.get(c) {
            Some(&m) => assert_eq!(m, n, "cluster {c}"),
            None => unanswered.push(*c),
        }
    }
    // Every job finished well and its output came back.
    for (&id, row) in &hist {
        assert_eq!(
            (row[2].as_str(), row[3].as_str()),
            ("4", "0"),
            "job {}: JobStatus, ExitCode {row:?} (exit 3: a second run overlapped a first)",
            show(id)
        );
        let path = dir.join("out").join(show(id));
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("job {}: {}: {e}", show(id), path.display()));
        let want = format!("{} ok", show(id));
        assert!(
            !text.is_empty() && text.lines().all(|l| l == want),
            "job {}: its output is {text:?}",
            show(id)
        );
    }
    // The runs: none of a job nobody knows of, none overlapping, each
    // finished job's last run ran to its end.
    let log = std::fs::read_to_string(dir.join("runs.log")).unwrap_or_default();
    let mut runs: BTreeMap<JobId, Vec<Run>> = BTreeMap::new();
    for line in log.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let parsed = match f.as_slice() {
            [what, id, time, pid] => parse_id(id)
                .zip(time.parse::<u128>().ok())
                .zip(pid.parse::<u32>().ok())
                .map(|((id, time), pid)| (*what, id, time, pid)),
            _ => None,
        };
        let Some((what, id, time, pid)) = parsed else {
            panic!("runs.log: {line:?}");
        };
        match what {
            "start" => runs.entry(id).or_default().push(Run {
                pid,
                start: time,
                end: None,
            }),
            "end" => {
                let run = runs
                    .get_mut(&id)
                    .and_then(|r| r.iter_mut().rev().find(|r| r.pid == pid))
                    .unwrap_or_else(|| panic!("runs.log: an end with no start: {line:?}"));
                run.end = Some(time);
            }
            "overlap" => panic!(
                "job {}: a run started while an earlier run of it was still alive: {line:?}\n{log}",
                show(id)
            ),
            _ => panic!("runs.log: {line:?}"),
        }
    }
    let (mut starts, mut killed) = (0, 0);
    for (id, rs) in &mut runs {
        assert!(
            present.contains_key(id),
            "job {} ran but is neither queued nor in the history",
            show(*id)
        );
        rs.sort_by_key(|r| r.start);
        for w in rs.windows(2) {
            if let Some(end) = w[0].end {
                assert!(
                    end < w[1].start,
                    "job {}: two runs overlap: {w:?}",
                    show(*id)
                );
            }
        }
        starts += rs.len();
        killed += rs.iter().filter(|r| r.end.is_none()).count();
    }
    for id in hist.keys() {
        let last = runs.get(id).and_then(|r| r.last());
        assert!(
            last.is_some_and(|r| r.end.is_some()),
            "job {} is complete but its last run did not finish: {:?}",
            show(*id),
            runs.get(id)
        );
    }
    let reruns = starts - runs.len();
    let leftover_sandboxes = std::fs::read_dir(state.join("execute"))
        .map(|d| d.count())
        .unwrap_or(0);
    eprintln!(
        "crash test: {ROUNDS} SIGKILLs ({} with jobs running, {} job processes in all); \
         {} clusters ({acked_jobs} jobs) acknowledged ({} submissions were factories), \
         {} submissions failed, {} clusters \
         stored but unanswered ({unanswered:?}); {} jobs completed once each; {starts} runs, \
         {killed} cut short by a crash, {reruns} reruns; {left_at_restart} jobs left at the \
         last restart, drained in {:.1} s; {leftover_sandboxes} sandboxes left in EXECUTE; \
         {:.1} s in all",
        running_at_kill.iter().filter(|&&n| n > 0).count(),
        running_at_kill.iter().sum::<usize>(),
        submitted.acked.len(),
        submitted.factories,
        submitted.failed,
        unanswered.len(),
        hist.len(),
        drained.as_secs_f64(),
        began.elapsed().as_secs_f64()
    );
    // What crashes cut short left in EXECUTE was cleaned at each restart,
    // and the jobs that finished afterwards took their sandboxes with them.
    assert_eq!(leftover_sandboxes, 0, "sandboxes left in EXECUTE");
}
