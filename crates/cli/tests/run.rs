//! Real jobs end to end on the personal pool: `pool up` as a child
//! process, jobs that are shell scripts run by the starter, and what a user
//! sees of them: their outputs, `q` and `history` (JobStatus: 1 idle,
//! 2 running, 3 removed, 4 completed, 5 held, 7 suspended) and the job
//! event log (`000` submitted, `001` executing, `004` evicted, `005`
//! terminated, `009` aborted, `010` suspended, `011` unsuspended, `012`
//! held, `013` released).
//!
//! Owner activity comes from a readings override file
//! (STARTD_READINGS_FILE), so the startd's policy sees the keyboard the
//! test says; every interval is short, every wait generous.

mod common;

use std::path::{Path, PathBuf};

use common::{alive, ok, read_pids, run, scratch, stopped, write, write_script, PoolProcess};

/// Short intervals: a poll a second, a negotiation every two.
const FAST: &[(&str, &str)] = &[
    ("POLLING_INTERVAL", "1"),
    ("NEGOTIATOR_INTERVAL", "2"),
    ("UPDATE_INTERVAL", "1"),
    ("PERIODIC_EXPR_INTERVAL", "1"),
];

/// FAST, then `extra`.
fn with<'a>(extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
    FAST.iter().chain(extra).copied().collect()
}

/// A test's scratch directory, its pool's state directory inside it.
struct Setup {
    dir: common::Scratch,
    state: PathBuf,
}

impl Setup {
    fn new(name: &str) -> Setup {
        let dir = scratch(&format!("run-{name}"));
        let state = dir.join("state");
        Setup { dir, state }
    }

    fn tool(&self, args: &[&str]) -> String {
        ok(run(&self.state, &self.dir, args))
    }

    fn submit(&self, file: &str, text: &str) {
        write(&self.dir.join(file), text);
        let s = self.tool(&["submit", file]);
        assert!(s.contains("submitted to cluster"), "{s}");
    }

    /// `q -af` of one job, trimmed; empty once it left the queue.
    fn q(&self, job: &str, attrs: &[&str]) -> String {
        let mut args = vec!["q", job, "-af"];
        args.extend_from_slice(attrs);
        self.tool(&args).trim().to_string()
    }

    fn status(&self, job: &str) -> String {
        self.q(job, &["JobStatus"])
    }

    /// Waits until the job's JobStatus is `want`.
    fn wait_status(&self, pool: &PoolProcess, job: &str, want: &str, secs: u64) {
        let mut last = String::new();
        let found = wait_for_opt(secs, || {
            last = self.status(job);
            (last == want).then_some(())
        });
        assert!(
            found.is_some(),
            "job {job}: JobStatus {last:?}, wanted {want}\nlog:\n{}\ndaemon:\n{}",
            self.log("job.log"),
            pool.daemon_log()
        );
    }

    /// The job's history line (`history -af ...`), waiting for it.
    fn history(&self, pool: &PoolProcess, job: &str, attrs: &[&str], secs: u64) -> String {
        let mut args = vec!["history", job, "-af"];
        args.extend_from_slice(attrs);
        let found = wait_for_opt(secs, || {
            let h = self.tool(&args);
            (!h.trim().is_empty()).then(|| h.trim().to_string())
        });
        found.unwrap_or_else(|| {
            panic!(
                "job {job} never reached the history; q: {}\nlog:\n{}\ndaemon:\n{}",
                self.tool(&["q", "-af", "ClusterId", "ProcId", "JobStatus"]),
                self.log("job.log"),
                pool.daemon_log()
            )
        })
    }

    fn log(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir.join(name)).unwrap_or_default()
    }

    fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir.join(name))
            .unwrap_or_else(|e| panic!("{}: {e}", self.dir.join(name).display()))
    }

    /// The pids the job wrote one a line into `name`, once there are `n`.
    fn pids(&self, pool: &PoolProcess, name: &str, n: usize) -> Vec<i32> {
        let path = self.dir.join(name);
        let found = wait_for_opt(15, || {
            let p = read_pids(&path);
            (p.len() >= n).then_some(p)
        });
        found.unwrap_or_else(|| {
            panic!(
                "the job never wrote {n} pid(s) to {name}\nlog:\n{}\ndaemon:\n{}",
                self.log("job.log"),
                pool.daemon_log()
            )
        })
    }

    /// Sets the owner's activity the startd reads on each poll.
    fn readings(&self, text: &str) {
        write(&self.readings_file(), text);
    }

    fn readings_file(&self) -> PathBuf {
        self.dir.join("readings")
    }
}

/// Polls `f` every 50 ms for at most `secs`; `None` if it never answered.
fn wait_for_opt<T>(secs: u64, mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    loop {
        if let Some(t) = f() {
            return Some(t);
        }
        if std::time::Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Waits until every process of `pids` is gone.
fn wait_gone(pool: &PoolProcess, pids: &[i32], secs: u64, what: &str) {
    let gone = wait_for_opt(secs, || (!pids.iter().any(|&p| alive(p))).then_some(()));
    assert!(
        gone.is_some(),
        "{what}: still alive: {:?}\ndaemon:\n{}",
        pids.iter().filter(|&&p| alive(p)).collect::<Vec<_>>(),
        pool.daemon_log()
    );
}

/// How many times an event of code `code` (`"005"`) is in the log.
fn count(log: &str, code: &str) -> usize {
    log.lines()
        .filter(|l| l.starts_with(&format!("{code} (")))
        .count()
}

/// What the pool's execute directory holds (the jobs' sandboxes).
fn sandboxes(state: &Path) -> Vec<String> {
    std::fs::read_dir(state.join("execute"))
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_job_runs_with_its_arguments_environment_and_files_and_completes() {
    let s = Setup::new("complete");
    let pool = PoolProcess::start(&s.state, FAST);
    write_script(
        &s.dir.join("job.sh"),
        "#!/bin/sh\n\
         echo \"argc=$# 1=$1 2=$2\"\n\
         echo \"GREETING=$GREETING WHO=$WHO\"\n\
         echo 'this goes to stderr' >&2\n\
         test -f in.txt || exit 9\n\
         tr a-z A-Z < in.txt > result.txt\n\
         exit 3\n",
    );
    write(&s.dir.join("in.txt"), "hello from the input file\n");
    s.submit(
        "job.sub",
        "executable = job.sh\n\
         arguments = \"alpha 'beta gamma'\"\n\
         environment = \"GREETING=hello WHO='the pool'\"\n\
         should_transfer_files = YES\n\
         when_to_transfer_output = ON_EXIT\n\
         transfer_input_files = in.txt\n\
         output = job.out\n\
         error = job.err\n\
         log = job.log\n\
         queue\n",
    );
    let h = s.history(&pool, "1.0", &["ExitCode", "JobStatus", "ExitBySignal"], 15);
    assert_eq!(h, "3 4 false");
    assert_eq!(
        s.read("job.out"),
        "argc=2 1=alpha 2=beta gamma\nGREETING=hello WHO=the pool\n"
    );
    assert_eq!(s.read("job.err"), "this goes to stderr\n");
    // The file the job made came back; the input did not change.
    assert_eq!(s.read("result.txt"), "HELLO FROM THE INPUT FILE\n");
    assert_eq!(s.read("in.txt"), "hello from the input file\n");
    assert_eq!(s.tool(&["q", "-af", "ClusterId"]), "");
    let log = s.log("job.log");
    for code in ["000", "001", "005"] {
        assert_eq!(count(&log, code), 1, "{code}:\n{log}");
    }
    assert!(log.contains("Normal termination (return value 3)"), "{log}");
    // The bytes file transfer moved, as HTCondor's shadow counts them: the
    // job sent its output (result.txt and its streams) and received its
    // executable and input.
    let size = |f: &str| std::fs::metadata(s.dir.join(f)).unwrap().len();
    let sent = size("result.txt") + size("job.out") + size("job.err");
    let received = size("job.sh") + size("in.txt");
    assert!(
        log.contains(&format!("\t{sent}  -  Run Bytes Sent By Job")),
        "{sent} sent:\n{log}"
    );
    assert!(
        log.contains(&format!("\t{received}  -  Run Bytes Received By Job")),
        "{received} received:\n{log}"
    );
    let h = s.history(&pool, "1.0", &["BytesSent", "BytesRecvd"], 5);
    let figures: Vec<f64> = h.split_whitespace().map(|v| v.parse().unwrap()).collect();
    assert_eq!(figures, [sent as f64, received as f64], "{h}");
    // Its sandbox is gone.
    assert!(
        wait_for_opt(5, || sandboxes(&s.state).is_empty().then_some(())).is_some(),
        "{:?}",
        sandboxes(&s.state)
    );
}

#[test]
fn holding_a_running_job_stops_it_and_releasing_it_runs_it_again() {
    let s = Setup::new("hold");
    let pool = PoolProcess::start(&s.state, FAST);
    // The first run waits; the second (after the release) completes.
    write_script(
        &s.dir.join("job.sh"),
        "#!/bin/sh\n\
         echo $$ >> pids\n\
         if [ -e ran-before ]; then echo second run; exit 0; fi\n\
         touch ran-before\n\
         exec sleep 300\n",
    );
    s.submit(
        "job.sub",
        "executable = job.sh\n\
         should_transfer_files = NO\n\
         output = job.out\n\
         log = job.log\n\
         queue\n",
    );
    let first = s.pids(&pool, "pids", 1)[0];
    s.wait_status(&pool, "1.0", "2", 10);
    assert!(alive(first));

    assert_eq!(
        s.tool(&["hold", "1.0", "-reason", "not now"]),
        "Job 1.0 held\n"
    );
    wait_gone(&pool, &[first], 10, "the held job's process");
    assert_eq!(
        s.q("1.0", &["JobStatus", "HoldReasonCode", "HoldReason"]),
        "5 1 not now"
    );
    // It stays held: nothing runs it again.
    std::thread::sleep(std::time::Duration::from_secs(3));
    assert_eq!(read_pids(&s.dir.join("pids")).len(), 1);
    assert_eq!(s.status("1.0"), "5");

    assert_eq!(s.tool(&["release", "1.0"]), "Job 1.0 released\n");
    let h = s.history(&pool, "1.0", &["ExitCode", "JobStatus"], 15);
    assert_eq!(h, "0 4");
    let pids = read_pids(&s.dir.join("pids"));
    assert_eq!(pids.len(), 2, "{pids:?}");
    assert_eq!(s.read("job.out"), "second run\n");
    let log = s.log("job.log");
    for (code, n) in [("001", 2), ("012", 1), ("013", 1), ("005", 1)] {
        assert_eq!(count(&log, code), n, "{code}:\n{log}");
    }
}

/// condor_vacate_job: the running job is evicted from its machine (its
/// soft kill signal), goes back to idle, and runs again to completion; a
/// job that does not run is not vacated.
#[test]
fn vacate_job_evicts_a_running_job_which_then_runs_again() {
    let s = Setup::new("vacate-job");
    let pool = PoolProcess::start(&s.state, FAST);
    write_script(
        &s.dir.join("job.sh"),
        "#!/bin/sh\n\
         echo $$ >> pids\n\
         if [ -e ran-before ]; then echo second run; exit 0; fi\n\
         touch ran-before\n\
         exec sleep 300\n",
    );
    s.submit(
        "job.sub",
        "executable = job.sh\n\
         should_transfer_files = NO\n\
         output = job.out\n\
         log = job.log\n\
         queue\n",
    );
    s.submit("held.sub", "executable = /bin/true\nhold = true\nqueue\n");
    let first = s.pids(&pool, "pids", 1)[0];
    s.wait_status(&pool, "1.0", "2", 10);
    let refused = run(&s.state, &s.dir, &["vacate_job", "2.0"]);
    assert_eq!(refused.status.code(), Some(1), "{refused:?}");
    assert_eq!(
        String::from_utf8_lossy(&refused.stderr),
        "Job 2.0 not running to be vacated\n"
    );

    assert_eq!(s.tool(&["vacate_job", "1.0"]), "Job 1.0 vacated\n");
    wait_gone(&pool, &[first], 10, "the vacated job's process");
    let h = s.history(&pool, "1.0", &["ExitCode", "JobStatus"], 15);
    assert_eq!(h, "0 4");
    assert_eq!(read_pids(&s.dir.join("pids")).len(), 2);
    assert_eq!(s.read("job.out"), "second run\n");
    let log = s.log("job.log");
    for (code, n) in [("001", 2), ("004", 1), ("005", 1)] {
        assert_eq!(count(&log, code), n, "{code}:\n{log}");
    }
}

#[test]
fn removing_a_running_job_kills_its_whole_process_tree() {
    let s = Setup::new("rm");
    let pool = PoolProcess::start(&s.state, FAST);
    write_script(
        &s.dir.join("job.sh"),
        "#!/bin/sh\n\
         sleep 300 &\n\
         echo $! >> pids\n\
         sh -c 'sleep 300 & echo $! >> pids; wait' &\n\
         echo $! >> pids\n\
         echo $$ >> pids\n\
         wait\n",
    );
    s.submit(
        "job.sub",
        "executable = job.sh\n\
         should_transfer_files = NO\n\
         log = job.log\n\
         queue\n",
    );
    // The job, a sleep, a shell and its sleep.
    let pids = s.pids(&pool, "pids", 4);
    assert!(pids.iter().all(|&p| alive(p)), "{pids:?}");
    s.wait_status(&pool, "1.0", "2", 10);

    assert_eq!(s.tool(&["rm", "1.0"]), "Job 1.0 marked for removal\n");
    wait_gone(&pool, &pids, 5, "the removed job's processes");
    let h = s.history(&pool, "1.0", &["JobStatus"], 10);
    assert_eq!(h, "3");
    assert_eq!(s.tool(&["q", "-af", "ClusterId"]), "");
    let log = s.log("job.log");
    assert_eq!(count(&log, "009"), 1, "{log}");
    assert_eq!(count(&log, "005"), 0, "{log}");
}

/// Every slot watches the keyboard in the readings file (by default no
/// slot is connected to it, and the owner's typing touches none).
fn owner_readings(readings: &str) -> [(&str, &str); 2] {
    [
        ("STARTD_READINGS_FILE", readings),
        ("SLOTS_CONNECTED_TO_KEYBOARD", "1000"),
    ]
}

/// A desktop policy on the readings file: jobs start while the owner is
/// away, are suspended when the keyboard is touched, continue after two
/// idle minutes, and are never preempted.
fn suspend_policy(readings: &str) -> Vec<(&str, &str)> {
    let mut env = with(&owner_readings(readings));
    env.extend([
        ("START", "True"),
        ("WANT_SUSPEND", "True"),
        ("SUSPEND", "(KeyboardIdle < 60)"),
        ("CONTINUE", "(KeyboardIdle > 120)"),
        ("PREEMPT", "False"),
        ("KILL", "False"),
    ]);
    env
}

#[test]
fn a_job_is_suspended_while_the_owner_types_and_continues_after() {
    let s = Setup::new("suspend");
    s.readings("KeyboardIdle = 1000\n");
    let readings = s.readings_file().display().to_string();
    let pool = PoolProcess::start(&s.state, &suspend_policy(&readings));
    // The job ends once the test lets it (the file `go`), so it can only
    // end if it runs after the test said so.
    write_script(
        &s.dir.join("job.sh"),
        "#!/bin/sh\n\
         echo $$ >> pids\n\
         while [ ! -e go ]; do sleep 0.2; done\n\
         echo finished > finished\n",
    );
    s.submit(
        "job.sub",
        "executable = job.sh\n\
         should_transfer_files = NO\n\
         log = job.log\n\
         queue\n",
    );
    let pid = s.pids(&pool, "pids", 1)[0];
    s.wait_status(&pool, "1.0", "2", 10);

    // The owner is back: the job's processes are stopped.
    s.readings("KeyboardIdle = 0\n");
    s.wait_status(&pool, "1.0", "7", 10);
    assert!(
        wait_for_opt(5, || stopped(pid).then_some(())).is_some(),
        "the suspended job's process {pid} is not stopped: {:?}",
        common::proc_state(pid)
    );
    // A stopped job does not see `go`, and does not end.
    write(&s.dir.join("go"), "");
    std::thread::sleep(std::time::Duration::from_secs(2));
    assert!(!s.dir.join("finished").exists());
    assert!(stopped(pid));
    assert_eq!(s.status("1.0"), "7");

    // Idle again for long enough: it continues, and ends.
    s.readings("KeyboardIdle = 1000\n");
    let h = s.history(&pool, "1.0", &["ExitCode", "JobStatus"], 15);
    assert_eq!(h, "0 4");
    assert_eq!(s.read("finished"), "finished\n");
    let log = s.log("job.log");
    for (code, n) in [("001", 1), ("010", 1), ("011", 1), ("005", 1), ("004", 0)] {
        assert_eq!(count(&log, code), n, "{code}:\n{log}");
    }
}

#[test]
fn a_job_that_ignores_its_vacate_signal_is_killed_and_goes_back_to_idle() {
    let s = Setup::new("vacate");
    s.readings("KeyboardIdle = 1000\n");
    let readings = s.readings_file().display().to_string();
    let mut env = with(&owner_readings(&readings));
    // Start only when the owner has been away, evict as soon as they are
    // back, give the job two seconds to go after its SIGTERM.
    env.extend([
        ("START", "(KeyboardIdle > 100)"),
        ("WANT_SUSPEND", "False"),
        ("SUSPEND", "False"),
        ("PREEMPT", "(KeyboardIdle < 60)"),
        ("WANT_VACATE", "True"),
        ("KILL", "False"),
        ("MachineMaxVacateTime", "2"),
        ("KILLING_TIMEOUT", "2"),
    ]);
    let pool = PoolProcess::start(&s.state, &env);
    // SIGTERM is ignored by the shell and the sleep it becomes.
    write_script(
        &s.dir.join("job.sh"),
        "#!/bin/sh\n\
         trap '' TERM\n\
         echo $$ >> pids\n\
         exec sleep 300\n",
    );
    s.submit(
        "job.sub",
        "executable = job.sh\n\
         should_transfer_files = NO\n\
         log = job.log\n\
         queue\n",
    );
    let pid = s.pids(&pool, "pids", 1)[0];
    s.wait_status(&pool, "1.0", "2", 10);

    s.readings("KeyboardIdle = 0\n");
    let t = std::time::Instant::now();
    wait_gone(&pool, &[pid], 12, "the vacated job");
    // It outlived its SIGTERM: only the kill after the vacate time ended it.
    assert!(
        t.elapsed() >= std::time::Duration::from_secs(1),
        "{:?}",
        t.elapsed()
    );
    s.wait_status(&pool, "1.0", "1", 10);
    let log = s.log("job.log");
    assert_eq!(count(&log, "004"), 1, "{log}");
    assert!(log.contains("PREEMPT"), "the eviction says why: {log}");
    assert_eq!(count(&log, "005"), 0, "{log}");
    // The owner is still there: it does not start again.
    std::thread::sleep(std::time::Duration::from_secs(3));
    assert_eq!(s.status("1.0"), "1");
    assert_eq!(read_pids(&s.dir.join("pids")).len(), 1);
}

/// A hook that keeps its arguments and standard input in `<dir>/<name>.args`
/// and `<dir>/<name>.in` (appending, `=====` after each run), prints
/// `output`, and exits with `code`.
fn recording_hook(dir: &Path, name: &str, output: &str, code: i32) -> String {
    let path = dir.join(format!("{name}.sh"));
    let d = dir.display();
    write_script(
        &path,
        &format!(
            "#!/bin/sh\n\
             echo \"$@\" >> {d}/{name}.args\n\
             cat >> {d}/{name}.in\n\
             echo ===== >> {d}/{name}.in\n\
             printf '%s' '{output}'\n\
             exit {code}\n"
        ),
    );
    path.display().to_string()
}

/// Each run a hook recorded: its standard input, split into ads.
fn hook_runs(s: &Setup, name: &str) -> Vec<Vec<String>> {
    std::fs::read_to_string(s.dir.join(format!("{name}.in")))
        .unwrap_or_default()
        .split("=====\n")
        .filter(|r| !r.is_empty())
        .map(|r| r.split("-----\n").map(str::to_string).collect())
        .collect()
}

/// `Name = value` of an ad in old syntax, as printed.
fn attr<'a>(ad: &'a str, name: &str) -> Option<&'a str> {
    ad.lines().find_map(|l| {
        let (n, v) = l.split_once(" = ")?;
        n.trim().eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

#[test]
fn job_hooks_see_the_job_and_a_failing_prepare_job_holds_it() {
    let s = Setup::new("hooks");
    let prepare = recording_hook(
        &s.dir,
        "prepare",
        "HookGreeting = \"from PREPARE_JOB\"\n",
        0,
    );
    let update = recording_hook(&s.dir, "update", "", 0);
    let exit = recording_hook(&s.dir, "exit", "", 0);
    let refuse = recording_hook(&s.dir, "refuse", "", 1);
    let env = with(&[
        ("STARTER_JOB_HOOK_KEYWORD", "TEST"),
        ("TEST_HOOK_PREPARE_JOB", &prepare),
        ("TEST_HOOK_UPDATE_JOB_INFO", &update),
        ("TEST_HOOK_JOB_EXIT", &exit),
        ("REFUSE_HOOK_PREPARE_JOB", &refuse),
        ("STARTER_INITIAL_UPDATE_INTERVAL", "1"),
        ("STARTER_UPDATE_INTERVAL", "1"),
    ]);
    let pool = PoolProcess::start(&s.state, &env);
    // The job sees what PREPARE_JOB added to its ad, and runs long enough
    // for UPDATE_JOB_INFO.
    write_script(
        &s.dir.join("job.sh"),
        "#!/bin/sh\n\
         grep HookGreeting \"$_CONDOR_JOB_AD\"\n\
         sleep 3\n\
         exit 7\n",
    );
    s.submit(
        "job.sub",
        "executable = job.sh\n\
         should_transfer_files = YES\n\
         output = job.out\n\
         log = job.log\n\
         queue\n",
    );
    let h = s.history(&pool, "1.0", &["ExitCode", "JobStatus"], 15);
    assert_eq!(h, "7 4");
    assert_eq!(s.read("job.out"), "HookGreeting = \"from PREPARE_JOB\"\n");

    // PREPARE_JOB: the job ad, then the slot's, no arguments.
    let runs = hook_runs(&s, "prepare");
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0].len(), 2, "{runs:?}");
    let (job, slot) = (&runs[0][0], &runs[0][1]);
    assert_eq!(attr(job, "ClusterId"), Some("1"), "{job}");
    assert_eq!(
        attr(job, "Cmd").map(|c| c.ends_with("job.sh\"")),
        Some(true)
    );
    assert!(
        attr(slot, "Name").is_some_and(|n| n.starts_with("\"slot") && n.contains('@')),
        "{slot}"
    );
    assert!(attr(slot, "Cpus").is_some(), "{slot}");
    assert_eq!(s.read("prepare.args"), "\n");

    // UPDATE_JOB_INFO while it ran: the job ad, running, with its pid.
    let runs = hook_runs(&s, "update");
    assert!(!runs.is_empty(), "UPDATE_JOB_INFO never ran");
    let ad = &runs[0][0];
    assert_eq!(runs[0].len(), 1);
    assert_eq!(attr(ad, "JobState"), Some("\"Running\""), "{ad}");
    assert!(
        attr(ad, "JobPid").is_some() && attr(ad, "NumPids").is_some(),
        "{ad}"
    );

    // JOB_EXIT: `exit`, and the ad with how it ended.
    assert_eq!(s.read("exit.args"), "exit\n");
    let runs = hook_runs(&s, "exit");
    assert_eq!(runs.len(), 1, "{runs:?}");
    let ad = &runs[0][0];
    assert_eq!(attr(ad, "ExitCode"), Some("7"), "{ad}");
    assert_eq!(attr(ad, "ExitBySignal"), Some("false"), "{ad}");
    assert_eq!(
        attr(ad, "ExitReason"),
        Some("\"exited normally with status 7\""),
        "{ad}"
    );
    assert_eq!(attr(ad, "JobState"), Some("\"Exited\""), "{ad}");
    assert_eq!(
        attr(ad, "HookGreeting"),
        Some("\"from PREPARE_JOB\""),
        "{ad}"
    );
    let duration: f64 = attr(ad, "JobDuration").unwrap().parse().unwrap();
    assert!((2.5..60.0).contains(&duration), "{ad}");

    // A job whose PREPARE_JOB fails is held (code 19), and never runs.
    s.submit(
        "refused.sub",
        "executable = job.sh\n\
         +HookKeyword = \"REFUSE\"\n\
         should_transfer_files = YES\n\
         output = refused.out\n\
         log = job.log\n\
         queue\n",
    );
    s.wait_status(&pool, "2.0", "5", 10);
    let held = s.q("2.0", &["HoldReasonCode", "HoldReason"]);
    assert!(held.starts_with("19 "), "{held}");
    assert!(held.contains("PREPARE_JOB"), "{held}");
    assert_eq!(hook_runs(&s, "refuse").len(), 1);
    assert!(!s.dir.join("refused.out").exists());
    assert_eq!(hook_runs(&s, "exit").len(), 1);
    assert!(s.log("job.log").contains("012 (002.000.000)"));
}

#[test]
fn work_a_fetch_hook_brings_runs_and_the_hooks_hear_of_it() {
    let s = Setup::new("fetch");
    let d = s.dir.display();
    // One job, the first time the slot asks (mkdir is atomic).
    write(
        &s.dir.join("work.ad"),
        &format!(
            "Cmd = \"/bin/sh\"\n\
             Arguments = \"-c 'echo $$ > fetched.pid; echo fetched job ran > fetched.out'\"\n\
             Iwd = \"{d}\"\n\
             ShouldTransferFiles = \"NO\"\n\
             JobUniverse = 5\n\
             Owner = \"{}\"\n\
             FetchedFrom = \"the test\"\n",
            common::me()
        ),
    );
    let fetch = s.dir.join("fetch.sh");
    write_script(
        &fetch,
        &format!(
            "#!/bin/sh\n\
             cat >> {d}/fetch.in\n\
             echo ===== >> {d}/fetch.in\n\
             mkdir {d}/fetched-once 2>/dev/null || exit 0\n\
             cat {d}/work.ad\n"
        ),
    );
    let fetch = fetch.display().to_string();
    let reply = recording_hook(&s.dir, "reply", "", 0);
    let evict = recording_hook(&s.dir, "evict", "", 0);
    let env = with(&[
        ("NUM_CPUS", "1"),
        ("STARTD_JOB_HOOK_KEYWORD", "FETCH"),
        ("FETCH_HOOK_FETCH_WORK", &fetch),
        ("FETCH_HOOK_REPLY_FETCH", &reply),
        ("FETCH_HOOK_EVICT_CLAIM", &evict),
        ("FetchWorkDelay", "1"),
    ]);
    let pool = PoolProcess::start(&s.state, &env);

    let ran = wait_for_opt(15, || {
        std::fs::read_to_string(s.dir.join("fetched.out")).ok()
    });
    assert_eq!(
        ran.as_deref(),
        Some("fetched job ran\n"),
        "daemon:\n{}",
        pool.daemon_log()
    );
    // FETCH_WORK got the slot's ad.
    let asked = hook_runs(&s, "fetch");
    assert!(!asked.is_empty());
    assert!(
        attr(&asked[0][0], "Name").is_some_and(|n| n.starts_with("\"slot1@")),
        "{asked:?}"
    );
    // REPLY_FETCH: accepted; the job ad (with the hook's keyword), then the
    // slot's.
    // The hook writes its arguments, then its input: a run is recorded
    // once its input's closing line is there.
    assert!(
        wait_for_opt(10, || s.log("reply.in").contains("=====").then_some(())).is_some(),
        "REPLY_FETCH never ran\ndaemon:\n{}",
        pool.daemon_log()
    );
    assert_eq!(s.read("reply.args"), "accept\n");
    let replies = hook_runs(&s, "reply");
    assert_eq!(replies.len(), 1, "{replies:?}");
    assert_eq!(replies[0].len(), 2, "{replies:?}");
    assert_eq!(attr(&replies[0][0], "FetchedFrom"), Some("\"the test\""));
    assert_eq!(attr(&replies[0][0], "HookKeyword"), Some("\"FETCH\""));
    assert!(attr(&replies[0][1], "Name").is_some_and(|n| n.starts_with("\"slot1@")));
    // The job is gone; with no more work the claim is given up, and
    // EVICT_CLAIM hears of it with the job's ad.
    let pid = s.pids(&pool, "fetched.pid", 1)[0];
    wait_gone(&pool, &[pid], 5, "the fetched job");
    assert!(
        wait_for_opt(10, || (!hook_runs(&s, "evict").is_empty()).then_some(())).is_some(),
        "EVICT_CLAIM never ran\ndaemon:\n{}",
        pool.daemon_log()
    );
    let evicted = hook_runs(&s, "evict");
    assert_eq!(evicted.len(), 1, "{evicted:?}");
    assert_eq!(attr(&evicted[0][0], "FetchedFrom"), Some("\"the test\""));
    // The queue never knew of it.
    assert_eq!(s.tool(&["q", "-af", "ClusterId"]), "");
}

/// Each `kind slot nice` line the Bologna jobs wrote, from the files
/// matching `prefix*.out`.
fn bologna_lines(s: &Setup, prefix: &str) -> Vec<(String, String, i32)> {
    let mut names: Vec<String> = std::fs::read_dir(&s.dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(prefix) && n.ends_with(".out"))
        .collect();
    names.sort();
    names
        .iter()
        .map(|n| {
            let text = s.read(n);
            let f: Vec<&str> = text.split_whitespace().collect();
            assert_eq!(f.len(), 3, "{n}: {text:?}");
            (f[0].to_string(), f[1].to_string(), f[2].parse().unwrap())
        })
        .collect()
}

/// The Bologna Batch Server (examples/config: v68-default, the INFN pool,
/// the server, the negotiator) as the whole personal pool, six slots:
/// 1-2 for short jobs, 3-6 for long ones. The owner is at the keyboard and
/// the machine busy, so only Bologna Batch jobs start (requirement 4), and
/// they are never suspended for it (3); long jobs take the long slots,
/// short ones the short slots, and a short job starts while long ones
/// wait (5, 6); short jobs run at nice 5, the others at 15 (7). When the
/// owner leaves, the ordinary job runs too, on a short slot.
#[test]
fn a_bologna_batch_server_runs_short_and_long_jobs_on_their_slots() {
    common::at_normal_priority();
    let s = Setup::new("bologna");
    s.readings("KeyboardIdle = 0\nConsoleIdle = 0\nTotalLoadAvg = 2.0\n");
    let config = s.dir.join("bologna.conf");
    write(
        &config,
        &format!(
            "include : {}\ninclude : {}\ninclude : {}\ninclude : {}\n",
            common::example("v68-default.conf"),
            common::example("bologna-infn-pool.conf"),
            common::example("bologna-server.conf"),
            common::example("bologna-negotiator.conf"),
        ),
    );
    let readings = s.readings_file().display().to_string();
    let mut env = with(&owner_readings(&readings));
    env.push(("SLOTS_CONNECTED_TO_CONSOLE", "1000"));
    let pool = PoolProcess::start_with_config(&s.state, &config, &env);

    // Each job says what it is, where it runs and at which nice; long
    // ones then wait for the test's `go`.
    write_script(
        &s.dir.join("bb.sh"),
        "#!/bin/sh\n\
         echo \"$1 $_CONDOR_SLOT $(nice)\"\n\
         if [ \"$1\" = long ]; then while [ ! -e go ]; do sleep 0.2; done; fi\n",
    );
    // bbs_submit_short / bbs_submit_long (Addendum 1): the server's
    // configuration (SUBMIT_EXPRS stamps SUBMIT_SITE_DOMAIN) and the
    // appended requirement.
    let submit = |file: &str, text: &str, bb: bool| {
        write(&s.dir.join(file), text);
        let append: &[(&str, &str)] = if bb {
            &[("APPEND_REQ_VANILLA", "(BolognaBatchServer == True)")]
        } else {
            &[]
        };
        let o = common::command_with_config(&s.state, &config, append)
            .args(["submit", file])
            .current_dir(&s.dir)
            .output()
            .unwrap();
        let out = ok(o);
        assert!(out.contains("submitted to cluster"), "{out}");
    };
    let common_lines = "universe = vanilla\n\
                        executable = bb.sh\n\
                        should_transfer_files = NO\n\
                        log = job.log\n";
    let periodic =
        "periodic_remove = ( LongRunningJob =!= True && (RemoteWallClockTime > 60*60) )\n";
    submit(
        "long.sub",
        &format!(
            "{common_lines}{periodic}arguments = long\n+BolognaBatchJob = True\n\
             +LongRunningJob = True\noutput = long.$(Process).out\nqueue 5\n"
        ),
        true,
    );
    submit(
        "plain.sub",
        &format!("{common_lines}arguments = plain\noutput = plain.out\nqueue\n"),
        false,
    );
    // Four long jobs on the four long slots; the fifth waits.
    let statuses = |c: &str| {
        s.tool(&[
            "q",
            "-constraint",
            &format!("ClusterId == {c}"),
            "-af",
            "JobStatus",
        ])
        .split_whitespace()
        .map(str::to_string)
        .collect::<Vec<_>>()
    };
    let four = wait_for_opt(15, || {
        let st = statuses("1");
        let run = st.iter().filter(|x| *x == "2").count();
        (run == 4 && outputs_written(&s, "long.") == 4).then_some(st)
    });
    assert!(
        four.is_some(),
        "{:?}\nlog:\n{}\ndaemon:\n{}",
        statuses("1"),
        s.log("job.log"),
        pool.daemon_log()
    );

    // A short job starts at once all the same, on a short slot.
    submit(
        "short.sub",
        &format!("{common_lines}{periodic}arguments = short\n+BolognaBatchJob = True\noutput = short.out\nqueue\n"),
        true,
    );
    let h = s.history(&pool, "3.0", &["ExitCode", "JobStatus"], 15);
    assert_eq!(h, "0 4");
    assert_eq!(statuses("1").iter().filter(|x| *x == "1").count(), 1);
    let short = bologna_lines(&s, "short");
    assert_eq!(short.len(), 1);
    assert!(
        ["slot1", "slot2"].contains(&short[0].1.as_str()),
        "{short:?}"
    );
    assert_eq!(short[0].2, 5, "{short:?}");
    let long = bologna_lines(&s, "long.");
    assert_eq!(long.len(), 4, "{long:?}");
    let mut long_slots: Vec<&str> = long.iter().map(|l| l.1.as_str()).collect();
    long_slots.sort();
    assert_eq!(long_slots, ["slot3", "slot4", "slot5", "slot6"], "{long:?}");
    assert!(long.iter().all(|l| l.2 == 15), "{long:?}");
    // The owner's job (not a Bologna Batch job) waits for the owner.
    assert_eq!(statuses("2"), ["1"]);
    assert!(!s.dir.join("plain.out").exists());

    // The owner leaves, the long jobs may end: everything completes.
    s.readings("KeyboardIdle = 2000\nConsoleIdle = 2000\nTotalLoadAvg = 0.0\n");
    write(&s.dir.join("go"), "");
    for job in ["1.0", "1.1", "1.2", "1.3", "1.4", "2.0"] {
        let h = s.history(&pool, job, &["ExitCode", "JobStatus"], 20);
        assert_eq!(h, "0 4", "{job}");
    }
    let long = bologna_lines(&s, "long.");
    assert_eq!(long.len(), 5, "{long:?}");
    assert!(
        long.iter()
            .all(|l| ["slot3", "slot4", "slot5", "slot6"].contains(&l.1.as_str()) && l.2 == 15),
        "{long:?}"
    );
    let plain = bologna_lines(&s, "plain");
    assert!(
        ["slot1", "slot2"].contains(&plain[0].1.as_str()),
        "{plain:?}"
    );
    assert_eq!(plain[0].2, 15, "{plain:?}");
    // No Bologna Batch job was ever suspended or evicted.
    let log = s.log("job.log");
    assert_eq!(count(&log, "010"), 0, "{log}");
    assert_eq!(count(&log, "004"), 0, "{log}");
    assert_eq!(count(&log, "005"), 7, "{log}");
}

/// How many `<prefix>*.out` files the jobs wrote.
fn outputs_written(s: &Setup, prefix: &str) -> usize {
    std::fs::read_dir(&s.dir)
        .unwrap()
        .flatten()
        .filter(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            n.starts_with(prefix) && n.ends_with(".out") && e.metadata().is_ok_and(|m| m.len() > 0)
        })
        .count()
}

/// HTCondor's rule for whom a job runs as: a pool started by root runs
/// each job as its owner (never as root); a pool started by a user runs
/// every job as that user. The tests' pools run as `nobody` when the tests
/// run as root, so this one starts its pool as whoever runs the tests.
#[test]
fn a_job_runs_as_its_owner_under_a_root_pool_and_as_the_pool_s_user_otherwise() {
    // The submit directory belongs to the job's owner (scratch gives it to
    // `nobody` when we are root); the pool's state directory is its own
    // user's, as `pool up` insists (not inside a directory another user
    // may change).
    let dir = scratch("runas");
    let state_parent =
        std::env::temp_dir().join(format!("ferrocondor-runas-state-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&state_parent);
    std::fs::create_dir_all(&state_parent).unwrap();
    let state = state_parent.join("state");
    let mut pool = std::process::Command::new(common::bin())
        .args(["pool", "up", "--state"])
        .arg(&state)
        .env("CONDOR_CONFIG", "ONLY_ENV")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    write(
        &dir.join("id.sub"),
        "executable = /usr/bin/id\narguments = -u\noutput = id.out\nerror = id.err\nqueue\n",
    );
    // The tools run as `nobody` when we are root (common::command).
    common::wait_for(20, "the pool to take the job", || {
        let o = run(&state, &dir, &["submit", "id.sub"]);
        o.status.success().then_some(())
    });
    let uid = common::wait_for(20, "the job's output", || {
        let text = std::fs::read_to_string(dir.join("id.out")).ok()?;
        text.trim().parse::<u32>().ok()
    });
    // SAFETY: geteuid cannot fail.
    let me = unsafe { libc::geteuid() };
    let expected = common::run_as().map_or(me, |(uid, _)| uid);
    assert_eq!(uid, expected, "the job ran as uid {uid}");
    let _ = pool.kill();
    let _ = pool.wait();
    let _ = std::fs::remove_dir_all(&state_parent);
}

/// A job whose program cannot be started is held with HTCondor's code for
/// it (6, FailedToCreateProcess) and the starter's reason, and its slot is
/// free again for the next job.
#[test]
fn a_job_that_cannot_start_is_held_and_its_slot_freed() {
    let s = Setup::new("nostart");
    let pool = PoolProcess::start(&s.state, &with(&[("NUM_CPUS", "1")]));
    s.submit(
        "bad.sub",
        "executable = /no/such/program\ntransfer_executable = false\nqueue\n",
    );
    s.wait_status(&pool, "1.0", "5", 20);
    let held = s.q("1.0", &["HoldReasonCode", "HoldReason"]);
    assert!(
        held.starts_with("6 Error from slot1@") && held.contains("/no/such/program"),
        "{held}"
    );
    // The one slot takes the next job.
    s.submit("ok.sub", "executable = /bin/true\nqueue\n");
    let h = s.history(&pool, "2.0", &["JobStatus", "ExitCode"], 20);
    assert_eq!(h.trim(), "4 0");
}

/// Accounting groups: a group's quota bounds how many slots its jobs hold
/// at once (no surplus accepted), while a slot stays free; the accountant
/// knows the submitter by its group (`group_a.<user>@domain`).
#[test]
fn a_group_quota_bounds_the_group_s_running_jobs() {
    let s = Setup::new("groups");
    let pool = PoolProcess::start(
        &s.state,
        &with(&[
            ("NUM_CPUS", "2"),
            ("GROUP_NAMES", "group_a, group_b"),
            ("GROUP_QUOTA_group_a", "1"),
            ("GROUP_QUOTA_group_b", "1"),
            ("GROUP_ACCEPT_SURPLUS", "False"),
        ]),
    );
    s.submit(
        "a.sub",
        "executable = /bin/sleep\narguments = 3\naccounting_group = group_a\nqueue 3\n",
    );
    // One runs; for a few negotiation cycles (every 2 s) no second one.
    s.wait_status(&pool, "1.0", "2", 20);
    for _ in 0..8 {
        let running: Vec<String> = s
            .tool(&["q", "-af", "JobStatus"])
            .lines()
            .filter(|l| *l == "2")
            .map(str::to_string)
            .collect();
        assert_eq!(running.len(), 1, "group_a holds more than its quota of 1");
        std::thread::sleep(std::time::Duration::from_millis(250));
    }
    let prio = s.tool(&["userprio"]);
    assert!(prio.contains("group_a."), "{prio}");
    // All three finish in turn.
    let h = s.history(&pool, "1.2", &["JobStatus"], 30);
    assert_eq!(h.trim(), "4");
}

/// Jobs that can never match (`request_memory = 2 TB`) do not hold the
/// submitter's other jobs back: a later cluster of short jobs fills every
/// slot at once, as HTCondor skips an autocluster that cannot match. (The
/// pool used to offer only as many of a submitter's jobs per cycle as it
/// had slots, so three unmatchable jobs took every place, cycle after
/// cycle, and the short jobs never ran.)
#[test]
fn an_unmatchable_job_does_not_hold_back_the_submitter_s_other_jobs() {
    let s = Setup::new("unmatchable");
    let pool = PoolProcess::start(&s.state, &with(&[("NUM_CPUS", "3")]));
    s.submit(
        "huge.sub",
        "executable = /bin/sleep\narguments = 600\nrequest_memory = 2 TB\nqueue 3\n",
    );
    s.submit(
        "short.sub",
        "executable = /bin/sleep\narguments = 30\nqueue 3\n",
    );
    let running = || {
        s.tool(&["q", "-af", "ClusterId", "JobStatus"])
            .lines()
            .filter(|l| l.ends_with(" 2"))
            .count()
    };
    let all = wait_for_opt(20, || (running() == 3).then_some(()));
    assert!(
        all.is_some(),
        "the three short jobs never ran at once on the three slots:\n{}\ndaemon:\n{}",
        s.tool(&["q", "-af", "ClusterId", "ProcId", "JobStatus"]),
        pool.daemon_log()
    );
    for job in ["1.0", "1.1", "1.2"] {
        assert_eq!(s.status(job), "1", "the 2 TB jobs cannot match");
    }
}

/// condor_submit's checks before anything is queued: an executable it
/// would transfer must exist and not be empty (`transfer_executable =
/// false` leaves it to the execute point), and root may not submit. The
/// tool sends each job as it makes it: a job that fails after others were
/// sent, or one past MAX_JOBS_PER_SUBMISSION, leaves nothing queued.
#[test]
fn submit_refuses_a_missing_or_empty_executable_and_root() {
    let s = Setup::new("exechecks");
    let _pool = PoolProcess::start(
        &s.state,
        &with(&[("NUM_CPUS", "1"), ("MAX_JOBS_PER_SUBMISSION", "5")]),
    );
    write(
        &s.dir.join("third.sub"),
        "executable = $(e)\nqueue e in (/bin/true, /bin/true, /no/such/third)\n",
    );
    let o = run(&s.state, &s.dir, &["submit", "third.sub"]);
    assert_eq!(o.status.code(), Some(2), "{}", common::err(&o));
    assert!(
        common::err(&o).contains("ERROR: Executable file /no/such/third does not exist"),
        "{}",
        common::err(&o)
    );
    write(&s.dir.join("ten.sub"), "executable = /bin/true\nqueue 10\n");
    let o = run(&s.state, &s.dir, &["submit", "ten.sub"]);
    assert_ne!(o.status.code(), Some(0));
    assert!(
        common::err(&o).contains("more jobs than the schedd takes in one submission")
            && common::err(&o).contains("MAX_JOBS_PER_SUBMISSION")
            && common::err(&o).contains("none was queued"),
        "{}",
        common::err(&o)
    );
    assert!(
        s.tool(&["q", "-af", "ClusterId"]).trim().is_empty(),
        "nothing of either queued"
    );
    write(
        &s.dir.join("missing.sub"),
        "executable = /no/such/program\nqueue\n",
    );
    let o = run(&s.state, &s.dir, &["submit", "missing.sub"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        common::err(&o).contains("ERROR: Executable file /no/such/program does not exist"),
        "{}",
        common::err(&o)
    );
    write(&s.dir.join("empty.sh"), "");
    write(&s.dir.join("empty.sub"), "executable = empty.sh\nqueue\n");
    let o = run(&s.state, &s.dir, &["submit", "empty.sub"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        common::err(&o).contains("empty.sh has zero length"),
        "{}",
        common::err(&o)
    );
    assert!(
        s.tool(&["q", "-af", "ClusterId"]).trim().is_empty(),
        "nothing queued"
    );
    // Root, submitting for real (a dry run queues nothing and may).
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        write(&s.dir.join("ok.sub"), "executable = /bin/true\nqueue\n");
        let o = std::process::Command::new(common::bin())
            .args(["submit", "ok.sub"])
            .current_dir(&s.dir)
            .env("FERROCONDOR_STATE", &s.state)
            .env("CONDOR_CONFIG", "ONLY_ENV")
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2));
        assert!(
            common::err(&o).contains(
                "Submitting jobs as user/group 0 (root) is not allowed for security reasons."
            ),
            "{}",
            common::err(&o)
        );
    }
}

/// `q -totals`: condor_q's banner and totals lines, no job lines.
#[test]
fn q_totals_prints_only_the_totals() {
    let s = Setup::new("totals");
    let _pool = PoolProcess::start(&s.state, &with(&[("NUM_CPUS", "1")]));
    s.submit("held.sub", "executable = /bin/true\nhold = true\nqueue 2\n");
    let out = s.tool(&["q", "-totals"]);
    assert!(out.contains("-- Schedd: "), "{out}");
    assert!(
        out.contains(
            "Total for query: 2 jobs; 0 completed, 0 removed, 0 idle, 0 running, 2 held, 0 suspended"
        ),
        "{out}"
    );
    assert!(out.contains("Total for all users: 2 jobs;"), "{out}");
    assert!(!out.contains("OWNER"), "no job table: {out}");
}

/// Where the cgroup v2 hierarchy is mounted, if it is.
fn cgroup2_mount() -> Option<PathBuf> {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    mountinfo.lines().find_map(|l| {
        let (left, right) = l.split_once(" - ")?;
        (right.split_whitespace().next()? == "cgroup2")
            .then(|| left.split_whitespace().nth(4).map(PathBuf::from))?
    })
}

fn has_word(file: &Path, word: &str) -> bool {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .split_whitespace()
        .any(|w| w == word)
}

/// A cgroup of its own for a pool, as a service manager gives a daemon
/// one (systemd: `Delegate=yes`), made where its children may have the
/// memory controller: the nearest cgroup above this process's that gives
/// it to its children, else the root. Removed, with what the pool made in
/// it, when dropped. `Err`: why this machine cannot (the test is skipped).
struct PoolCgroup(PathBuf);

impl PoolCgroup {
    fn new(name: &str) -> Result<PoolCgroup, String> {
        // SAFETY: geteuid cannot fail.
        if unsafe { libc::geteuid() } != 0 {
            return Err("the pool must run as root to make cgroups".into());
        }
        let mount = cgroup2_mount().ok_or("no cgroup v2 hierarchy is mounted")?;
        if !has_word(&mount.join("cgroup.controllers"), "memory") {
            return Err(format!(
                "{}/cgroup.controllers lacks memory ({:?})",
                mount.display(),
                std::fs::read_to_string(mount.join("cgroup.controllers")).unwrap_or_default()
            ));
        }
        let own = std::fs::read_to_string("/proc/self/cgroup").map_err(|e| e.to_string())?;
        let rel = own
            .lines()
            .find_map(|l| l.strip_prefix("0::"))
            .ok_or("this process is in no cgroup v2")?
            .trim()
            .trim_start_matches('/')
            .to_string();
        let own = mount.join(rel);
        let holder = own
            .ancestors()
            .skip(usize::from(own != mount))
            .take_while(|a| a.starts_with(&mount))
            .find(|a| has_word(&a.join("cgroup.subtree_control"), "memory"))
            .map(Path::to_path_buf)
            .or_else(|| {
                std::fs::write(mount.join("cgroup.subtree_control"), "+memory")
                    .ok()
                    .map(|()| mount.clone())
            })
            .ok_or("no cgroup above this one gives its children the memory controller")?;
        let cg = holder.join(format!("ferrocondor-{name}-{}", std::process::id()));
        std::fs::create_dir(&cg).map_err(|e| format!("cannot create {}: {e}", cg.display()))?;
        Ok(PoolCgroup(cg))
    }
}

impl Drop for PoolCgroup {
    fn drop(&mut self) {
        // Whatever the pool left (a master's daemons, a job) dies with
        // the cgroup; then the cgroups go, deepest first.
        let _ = std::fs::write(self.0.join("cgroup.kill"), "1");
        let mut dirs = Vec::new();
        fn walk(d: &Path, out: &mut Vec<PathBuf>) {
            for e in std::fs::read_dir(d).into_iter().flatten().flatten() {
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    walk(&e.path(), out);
                    out.push(e.path());
                }
            }
        }
        walk(&self.0, &mut dirs);
        dirs.push(self.0.clone());
        for d in dirs {
            for _ in 0..100 {
                if std::fs::remove_dir(&d).is_ok() {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        }
    }
}

/// Issue 18: in a pool (not only in the starter), a job that allocates
/// past its slot's memory under the default CGROUP_MEMORY_LIMIT_POLICY
/// (hard: memory.max = the slot's Memory) is killed by the kernel and held
/// with HTCondor's JobOutOfResources (34), subcode 102 and its reason, and
/// is not run again. The pool runs as root in a cgroup of its own, as a
/// service would; it moves into `<cgroup>/leaf` and makes job cgroups
/// under `<cgroup>/htcondor` (BASE_CGROUP). Skipped (said on stdout)
/// where the machine has no memory controller or we are not root.
#[test]
fn a_job_over_its_memory_is_held_for_it_by_a_pool_and_not_run_again() {
    oom_hold_in("pool");
}

/// The same under `ferrocondor master`: the master moves into the leaf
/// before it starts its daemons, and the startd, in the leaf with the
/// master, makes job cgroups beside it (HTCondor's sibling).
#[test]
fn a_job_over_its_memory_is_held_for_it_under_a_master_too() {
    oom_hold_in("master");
}

/// The same with each job in a PID namespace of its own
/// (USE_PID_NAMESPACES): the namespace's init is in the job's cgroup
/// with it and goes with the OOM kill; the hold is the same.
#[test]
fn a_job_over_its_memory_in_its_own_pid_namespace_is_held_for_it_too() {
    oom_hold_in("pidns");
}

fn oom_hold_in(how: &str) {
    let cg = match PoolCgroup::new(&format!("run-oom-{how}")) {
        Ok(cg) => cg,
        Err(why) => {
            println!("skipped: a job over its memory held by a {how}: {why}");
            return;
        }
    };
    let dir = scratch(&format!("oom-{how}"));
    let state_parent =
        std::env::temp_dir().join(format!("ferrocondor-oom-{how}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&state_parent);
    std::fs::create_dir_all(&state_parent).unwrap();
    let state = state_parent.join("state");
    let log = state_parent.join("daemon.log");
    // The pool's first process joins the cgroup before it execs the pool.
    let mut c = std::process::Command::new("/bin/sh");
    c.arg("-c")
        .arg(format!(
            "echo $$ > '{}/cgroup.procs' && exec \"$0\" \"$@\"",
            cg.0.display()
        ))
        .arg(common::bin())
        .args(if how == "master" {
            &["master", "--state"][..]
        } else {
            &["pool", "up", "--state"][..]
        })
        .arg(&state)
        .env("CONDOR_CONFIG", "ONLY_ENV")
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap());
    let mut config = with(&[("NUM_CPUS", "1"), ("MEMORY", "64")]);
    if how == "pidns" {
        config.push(("USE_PID_NAMESPACES", "True"));
    }
    if how == "master" {
        config.push((
            "DAEMON_LIST",
            "MASTER, COLLECTOR, NEGOTIATOR, SCHEDD, STARTD",
        ));
    }
    for (k, v) in config {
        c.env(format!("_CONDOR_{k}"), v);
    }
    let mut pool = c.spawn().unwrap();
    let daemon_log = || std::fs::read_to_string(&log).unwrap_or_default();
    write(
        &dir.join("oom.sub"),
        "executable = /usr/bin/tail\narguments = /dev/zero\ntransfer_executable = false\n\
         request_memory = 32\nlog = job.log\nqueue\n",
    );
    let taken = wait_for_opt(20, || {
        run(&state, &dir, &["submit", "oom.sub"])
            .status
            .success()
            .then_some(())
    });
    assert!(
        taken.is_some(),
        "the {how} never took the job:\n{}",
        daemon_log()
    );
    let q = |attrs: &[&str]| {
        let mut args = vec!["q", "1.0", "-af"];
        args.extend_from_slice(attrs);
        ok(run(&state, &dir, &args)).trim().to_string()
    };
    let held = wait_for_opt(90, || (q(&["JobStatus"]) == "5").then_some(()));
    let text = daemon_log();
    println!(
        "pool's cgroup notes: {:?}",
        text.lines()
            .filter(|l| l.contains("cgroup") || l.contains("limits"))
            .collect::<Vec<_>>()
    );
    assert!(
        held.is_some(),
        "job 1.0 never held: {}\njob.log:\n{}\ndaemon:\n{text}",
        q(&["JobStatus", "HoldReason"]),
        std::fs::read_to_string(dir.join("job.log")).unwrap_or_default()
    );
    assert!(
        text.contains(&format!("job cgroups under `{}/htcondor", cg.0.display())),
        "{text}"
    );
    assert_eq!(q(&["HoldReasonCode", "HoldReasonSubCode"]), "34 102");
    let reason = q(&["HoldReason"]);
    println!("HoldReason: {reason}");
    assert!(
        reason.contains(
            "Job has gone over cgroup memory limit of 64 megabytes. \
             Last measured usage: 64 megabytes.  \
             Consider resubmitting with a higher request_memory."
        ),
        "{reason}"
    );
    // Held, not run again: still held a few negotiation cycles later,
    // started once.
    std::thread::sleep(std::time::Duration::from_secs(5));
    assert_eq!(q(&["JobStatus", "NumJobStarts"]), "5 1");
    // SAFETY: a plain signal to the pool we started.
    unsafe { libc::kill(pool.id() as i32, libc::SIGTERM) };
    let _ = common::wait_for(20, "the pool to stop", || pool.try_wait().ok().flatten());
    let _ = pool.wait();
    let _ = std::fs::remove_dir_all(&state_parent);
    let _ = std::fs::remove_dir_all(&dir);
    drop(cg);
}
