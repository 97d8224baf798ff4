//! "A pool started by root must never act as root for a user": each test
//! here is one attack by an ordinary user (`fcsec-alice`) on a personal
//! pool started by root, and checks what a user would notice: the attack
//! gets nothing (no root-only content reaches the user, nothing is
//! written where only root may write, no file is made as root in the
//! user's directory), and the pool goes on serving another user
//! (`fcsec-bob`).
//!
//! The scratch tree of each test (`users::Scratch`): a root-only
//! directory holding a decoy (root, 0600, a known secret) and a root-only
//! script (root, 0700) that would leave a marker if it ran; each user's
//! own working directory. Tools run as the users; the pool as root.
//!
//! What counts as refusing an attack on a job: the job is held (any hold
//! code), or it ends without success (removed, or a non-zero exit code:
//! the jobs here exit 0 only when the attack worked), or the submission
//! itself is refused. For writes, any end of the job will do as long as
//! nothing was written.
//!
//! These tests need root (they create the two users, once, and leave
//! them; see `common/users.rs`); as another user each says it is skipped.

mod common;
#[path = "common/users.rs"]
mod users;

use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::alive;
use users::{alice, bob, chmod, chown, skip_unless_root, KillOnDrop, Outcome, Pool, Scratch, User};

/// Short intervals, four slots.
const FAST: &[(&str, &str)] = &[
    ("POLLING_INTERVAL", "1"),
    ("NEGOTIATOR_INTERVAL", "2"),
    ("UPDATE_INTERVAL", "1"),
    ("PERIODIC_EXPR_INTERVAL", "1"),
    ("NUM_CPUS", "4"),
];

/// How long a job may take to be held or to end.
const JOB_SECS: u64 = 20;

/// Writes an executable script of alice's in her directory.
fn alice_script(s: &Scratch, name: &str, text: &str) -> String {
    s.user_file(alice(), name, text, 0o755)
        .display()
        .to_string()
}

/// Submits `text` as alice from her directory: `Some(cluster)`, or
/// `None` when the tool refused it (which refuses the attack too).
fn submit(pool: &Pool, s: &Scratch, file: &str, text: &str) -> Option<u32> {
    match pool.submit(alice(), &s.alice, file, text) {
        Ok(c) => Some(c),
        Err(e) => {
            eprintln!("{file}: the submission was refused: {e}");
            None
        }
    }
}

/// Where job `cluster.0` of alice's ended up, waiting for it.
fn outcome(pool: &Pool, cluster: u32) -> Outcome {
    pool.outcome(alice(), &format!("{cluster}.0"), JOB_SECS)
}

/// Fails unless every job was held or failed, naming those that were not.
fn assert_refused(pool: &Pool, outcomes: &[(&str, Outcome)]) {
    let bad: Vec<String> = outcomes
        .iter()
        .filter(|(_, o)| !o.held_or_failed())
        .map(|(what, o)| format!("\n  {what}: {o:?}"))
        .collect();
    assert!(
        bad.is_empty(),
        "jobs neither held nor failed (JobStatus, HoldReasonCode, HoldReason):{}\ndaemon:\n{}",
        bad.concat(),
        pool.daemon_log()
    );
}

/// Fails if some job is still idle or running, naming them.
fn assert_ended(pool: &Pool, outcomes: &[(&str, Outcome)]) {
    let bad: Vec<String> = outcomes
        .iter()
        .filter(|(_, o)| matches!(o, Outcome::Pending(_)))
        .map(|(what, o)| format!("\n  {what}: {o:?}"))
        .collect();
    assert!(
        bad.is_empty(),
        "jobs that did not end within {JOB_SECS} s:{}\ndaemon:\n{}",
        bad.concat(),
        pool.daemon_log()
    );
}

/// An ordinary job of alice's (her own input, her output, a new file
/// back): what the pool is for must still work beside the attacks, and
/// what comes back is hers.
fn assert_her_own_job_works(pool: &Pool, s: &Scratch) {
    let a = alice();
    s.user_file(a, "mine.txt", "alice's own input\n", 0o644);
    let exe = alice_script(
        s,
        "control.sh",
        "#!/bin/sh\ncat mine.txt\ncat mine.txt > made-ctl.txt\n",
    );
    let text = transfer_job(&exe, "", "transfer_input_files = mine.txt", "control");
    let c = pool
        .submit(a, &s.alice, "control.sub", &text)
        .unwrap_or_else(|e| panic!("alice's ordinary job: {e}"));
    let o = outcome(pool, c);
    assert_eq!(
        o,
        Outcome::Left {
            status: 4,
            exit_code: Some(0)
        },
        "alice's ordinary job\ndaemon:\n{}",
        pool.daemon_log()
    );
    for f in ["control.out", "made-ctl.txt"] {
        let p = s.alice.join(f);
        let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        assert_eq!(text, "alice's own input\n", "{}", p.display());
        let owner = std::fs::metadata(&p).unwrap().uid();
        assert_eq!(owner, a.uid, "{} is not alice's", p.display());
    }
}

/// A job that prints each file named in its arguments, and exits 0 only
/// when it could read them all.
const STEAL: &str = "#!/bin/sh\nfor f in \"$@\"; do cat \"$f\" || exit 3; done\nexit 0\n";

/// A submit description of a job of alice's that transfers files.
fn transfer_job(exe: &str, args: &str, extra: &str, out: &str) -> String {
    format!(
        "executable = {exe}\narguments = {args}\nshould_transfer_files = YES\n\
         when_to_transfer_output = ON_EXIT\noutput = {out}.out\nerror = {out}.err\n\
         {extra}\nqueue\n"
    )
}

#[test]
fn reading_the_decoy_through_transfer_input_files() {
    if skip_unless_root() {
        return;
    }
    let s = Scratch::new("read-input");
    let before = s.rootonly_snapshot();
    let pool = Pool::start(&s.state, FAST);
    let steal = alice_script(&s, "steal.sh", STEAL);
    let decoy = s.decoy.display().to_string();
    let rootonly = s.rootonly.display().to_string();
    let attacks = [
        (
            "an absolute path",
            transfer_job(
                &steal,
                "decoy",
                &format!("transfer_input_files = {decoy}"),
                "abs",
            ),
        ),
        (
            "a path through ..",
            transfer_job(
                &steal,
                "decoy",
                "transfer_input_files = ../rootonly/decoy",
                "dotdot",
            ),
        ),
        (
            "initialdir = the root-only directory",
            transfer_job(
                &steal,
                "decoy",
                &format!("initialdir = {rootonly}\ntransfer_input_files = decoy"),
                &format!("{}/iwd", s.alice.display()),
            ),
        ),
    ];
    let clusters: Vec<(&str, Option<u32>)> = attacks
        .iter()
        .enumerate()
        .map(|(i, (what, text))| (*what, submit(&pool, &s, &format!("read{i}.sub"), text)))
        .collect();
    let outcomes: Vec<(&str, Outcome)> = clusters
        .iter()
        .filter_map(|(what, c)| Some((*what, outcome(&pool, (*c)?))))
        .collect();
    s.assert_secret_kept("transfer_input_files naming the decoy");
    assert_refused(&pool, &outcomes);
    s.assert_untouched(&before, "transfer_input_files naming the decoy");
    assert_her_own_job_works(&pool, &s);
}

#[test]
fn running_a_root_only_script_through_transfer_executable() {
    if skip_unless_root() {
        return;
    }
    let s = Scratch::new("read-exe");
    let before = s.rootonly_snapshot();
    let pool = Pool::start(&s.state, FAST);
    let script = s.decoy_script.display().to_string();
    let attacks = [
        ("an absolute path", script.clone()),
        ("a path through ..", "../rootonly/decoy.sh".to_string()),
    ];
    let mut outcomes = Vec::new();
    for (i, (what, exe)) in attacks.iter().enumerate() {
        let text = transfer_job(exe, "", "transfer_executable = true", &format!("exe{i}"));
        if let Some(c) = submit(&pool, &s, &format!("exe{i}.sub"), &text) {
            outcomes.push((*what, outcome(&pool, c)));
        }
    }
    assert!(
        !s.marker.exists(),
        "the root-only script ran for alice (it left {})",
        s.marker.display()
    );
    let ran = users::files_containing(&s.alice, "DECOY-SCRIPT-RAN");
    assert!(
        ran.is_empty(),
        "the root-only script ran for alice: {ran:?}"
    );
    s.assert_secret_kept("executable = a root-only script");
    assert_refused(&pool, &outcomes);
    s.assert_untouched(&before, "executable = a root-only script");
}

#[test]
fn reading_the_decoy_through_a_symlink_named_in_transfer_input_files() {
    if skip_unless_root() {
        return;
    }
    let s = Scratch::new("read-link");
    let before = s.rootonly_snapshot();
    let pool = Pool::start(&s.state, FAST);
    let steal = alice_script(&s, "steal.sh", STEAL);
    s.user_symlink(alice(), "link", &s.decoy);
    s.user_symlink(alice(), "dirlink", &s.rootonly);
    let attacks = [
        (
            "a link to the decoy",
            transfer_job(&steal, "link", "transfer_input_files = link", "link"),
        ),
        (
            "a link to the root-only directory, its contents",
            transfer_job(
                &steal,
                "decoy",
                "transfer_input_files = dirlink/",
                "dirlink",
            ),
        ),
        (
            "a link to the root-only directory",
            transfer_job(
                &steal,
                "dirlink/decoy",
                "transfer_input_files = dirlink",
                "dir",
            ),
        ),
    ];
    let mut outcomes = Vec::new();
    for (i, (what, text)) in attacks.iter().enumerate() {
        if let Some(c) = submit(&pool, &s, &format!("link{i}.sub"), text) {
            outcomes.push((*what, outcome(&pool, c)));
        }
    }
    s.assert_secret_kept("a symlink named in transfer_input_files");
    assert_refused(&pool, &outcomes);
    s.assert_untouched(&before, "a symlink named in transfer_input_files");
}

/// A job that writes its standard output and error and a new file.
const WRITER: &str = "#!/bin/sh\necho out-from-the-job\necho err-from-the-job >&2\n\
                      echo made-by-the-job > made.txt\nexit 0\n";

#[test]
fn writing_into_the_root_only_directory_through_output_error_and_initialdir() {
    if skip_unless_root() {
        return;
    }
    let s = Scratch::new("write-streams");
    let before = s.rootonly_snapshot();
    let pool = Pool::start(&s.state, FAST);
    let writer = alice_script(&s, "writer.sh", WRITER);
    let r = s.rootonly.display().to_string();
    let job = |extra: &str| {
        format!(
            "executable = {writer}\nshould_transfer_files = YES\n\
             when_to_transfer_output = ON_EXIT\n{extra}\nqueue\n"
        )
    };
    let attacks = [
        ("output = root-only", job(&format!("output = {r}/out"))),
        ("error = root-only", job(&format!("error = {r}/err"))),
        (
            "initialdir = root-only",
            job(&format!(
                "initialdir = {r}\noutput = out2\nerror = err2\ntransfer_output_files = made.txt"
            )),
        ),
        (
            "initialdir = root-only, new files back",
            job(&format!("initialdir = {r}\noutput = out3")),
        ),
        (
            "should_transfer_files = NO",
            format!(
                "executable = {writer}\nshould_transfer_files = NO\n\
                 output = {r}/out4\nerror = {r}/err4\nqueue\n"
            ),
        ),
    ];
    let mut outcomes = Vec::new();
    for (i, (what, text)) in attacks.iter().enumerate() {
        if let Some(c) = submit(&pool, &s, &format!("w{i}.sub"), text) {
            outcomes.push((*what, outcome(&pool, c)));
        }
    }
    assert_ended(&pool, &outcomes);
    s.assert_untouched(
        &before,
        "output, error and initialdir in the root-only directory",
    );
    assert_her_own_job_works(&pool, &s);
}

#[test]
fn transfer_output_files_naming_paths_outside_the_sandbox() {
    if skip_unless_root() {
        return;
    }
    let s = Scratch::new("out-paths");
    let before = s.rootonly_snapshot();
    let pool = Pool::start(&s.state, FAST);
    let writer = alice_script(&s, "writer.sh", WRITER);
    let r = s.rootonly.display().to_string();
    // From the sandbox (EXECUTE/dir_*, EXECUTE = <state>/execute) up to
    // the scratch base, and far enough up to reach / from anywhere.
    let deep = format!("{}{}", "../".repeat(24), r.trim_start_matches('/'));
    let job = |list: &str, out: &str| {
        format!(
            "executable = {writer}\nshould_transfer_files = YES\n\
             when_to_transfer_output = ON_EXIT\ntransfer_output_files = {list}\n\
             output = {out}.out\nqueue\n"
        )
    };
    let attacks = [
        (
            "../../../rootonly/decoy",
            job("../../../rootonly/decoy", "a"),
        ),
        (
            "../(x24)/rootonly/decoy",
            job(&format!("{deep}/decoy"), "b"),
        ),
        ("an absolute path", job(&format!("{r}/decoy"), "c")),
        (
            "../../../../rootonly/x",
            job("made.txt, ../../../../rootonly/x", "d"),
        ),
        ("the root-only directory", job(&format!("{deep}/"), "e")),
    ];
    let mut outcomes = Vec::new();
    for (i, (what, text)) in attacks.iter().enumerate() {
        if let Some(c) = submit(&pool, &s, &format!("o{i}.sub"), text) {
            outcomes.push((*what, outcome(&pool, c)));
        }
    }
    assert_ended(&pool, &outcomes);
    s.assert_secret_kept("transfer_output_files outside the sandbox");
    s.assert_untouched(&before, "transfer_output_files outside the sandbox");
}

#[test]
fn writing_through_a_symlink_the_user_put_in_place_of_an_output() {
    if skip_unless_root() {
        return;
    }
    let s = Scratch::new("write-link");
    let pool = Pool::start(&s.state, FAST);
    let writer = alice_script(&s, "writer.sh", WRITER);
    s.user_symlink(alice(), "out", &s.rootonly.join("victim"));
    s.user_symlink(alice(), "err", &s.decoy);
    s.user_symlink(alice(), "made.txt", &s.rootonly.join("victim2"));
    let before = s.rootonly_snapshot();
    let job = |extra: &str| {
        format!(
            "executable = {writer}\nshould_transfer_files = YES\n\
             when_to_transfer_output = ON_EXIT\n{extra}\nqueue\n"
        )
    };
    let attacks = [
        ("output = out -> root-only/victim", job("output = out")),
        ("error = err -> the decoy", job("error = err")),
        (
            "transfer_output_files = made.txt -> root-only/victim2",
            job("transfer_output_files = made.txt"),
        ),
    ];
    let mut outcomes = Vec::new();
    for (i, (what, text)) in attacks.iter().enumerate() {
        if let Some(c) = submit(&pool, &s, &format!("l{i}.sub"), text) {
            outcomes.push((*what, outcome(&pool, c)));
        }
    }
    assert_ended(&pool, &outcomes);
    s.assert_untouched(&before, "a symlink in place of an output");
    s.assert_secret_kept("a symlink in place of an output");
}

#[test]
fn a_symlink_the_job_makes_in_its_sandbox_brings_back_nothing_of_root_s() {
    if skip_unless_root() {
        return;
    }
    let s = Scratch::new("sandbox-link");
    let before = s.rootonly_snapshot();
    let pool = Pool::start(&s.state, FAST);
    let r = s.rootonly.display().to_string();
    let d = s.decoy.display().to_string();
    // `streams`: the job also puts links to the decoy in place of its
    // own standard output and error files in the sandbox.
    let script = alice_script(
        &s,
        "linker.sh",
        &format!(
            "#!/bin/sh\nln -s {r} some\nln -s {d} leak\nln -s {d} auto\n\
             if [ \"$1\" = streams ]; then\n  for f in _condor_stdout _condor_stderr; do\n    \
             rm -f $f; ln -s {d} $f\n  done\nfi\nexit 0\n"
        ),
    );
    let job = |args: &str, extra: &str, out: &str| {
        format!(
            "executable = {script}\narguments = {args}\nshould_transfer_files = YES\n\
             when_to_transfer_output = ON_EXIT\n{extra}\noutput = {out}.out\n\
             error = {out}.err\nqueue\n"
        )
    };
    let attacks = [
        (
            "transfer_output_files = some/ (-> the root-only directory)",
            job("", "transfer_output_files = some/", "a"),
        ),
        (
            "transfer_output_files = some (-> the root-only directory)",
            job("", "transfer_output_files = some", "b"),
        ),
        (
            "transfer_output_files = leak (-> the decoy)",
            job("", "transfer_output_files = leak", "c"),
        ),
        ("new files (auto -> the decoy)", job("", "", "d")),
        (
            "_condor_stdout and _condor_stderr -> the decoy",
            job("streams", "transfer_output_files = made.txt", "e"),
        ),
    ];
    let mut outcomes = Vec::new();
    for (i, (what, text)) in attacks.iter().enumerate() {
        if let Some(c) = submit(&pool, &s, &format!("s{i}.sub"), text) {
            outcomes.push((*what, outcome(&pool, c)));
        }
    }
    assert_ended(&pool, &outcomes);
    s.assert_secret_kept("a symlink the job made in its sandbox");
    s.assert_untouched(&before, "a symlink the job made in its sandbox");
    assert_her_own_job_works(&pool, &s);
}

#[test]
fn a_user_log_in_the_root_only_directory() {
    if skip_unless_root() {
        return;
    }
    let s = Scratch::new("log");
    s.user_symlink(alice(), "linked.log", &s.decoy);
    let before = s.rootonly_snapshot();
    let pool = Pool::start(&s.state, FAST);
    let r = s.rootonly.display().to_string();
    let job = |extra: &str| {
        format!(
            "executable = /bin/true\ntransfer_executable = false\n\
             should_transfer_files = NO\n{extra}\nqueue\n"
        )
    };
    let attacks = [
        (
            "log = root-only/job.log",
            job(&format!("log = {r}/job.log")),
        ),
        ("log = a link to the decoy", job("log = linked.log")),
        (
            "initialdir = root-only, log = rel.log",
            job(&format!("initialdir = {r}\nlog = rel.log")),
        ),
        // Her own log, in her own directory: hers, not root's.
        ("log = own.log", job("log = own.log")),
    ];
    let mut outcomes = Vec::new();
    for (i, (what, text)) in attacks.iter().enumerate() {
        if let Some(c) = submit(&pool, &s, &format!("log{i}.sub"), text) {
            outcomes.push((*what, outcome(&pool, c)));
        }
    }
    assert_ended(&pool, &outcomes);
    s.assert_untouched(&before, "a job event log in the root-only directory");
}

#[test]
fn a_newline_in_a_job_attribute_or_a_reason_forges_no_event_in_the_log() {
    if skip_unless_root() {
        return;
    }
    let s = Scratch::new("log-inject");
    let pool = Pool::start(&s.state, FAST);
    let a = alice();
    // The forged events name clusters that do not exist (77x), in the
    // header format the pool writes (`NNN (CCC.PPP.SSS) DATE TIME `).
    let forged = |c: u32| format!("005 ({c:03}.000.000) 2026-11-24 10:00:00 Job terminated.");
    let text = format!(
        "executable = /bin/sleep\narguments = 300\nshould_transfer_files = NO\n\
         log = job.log\n+SubmitEventNotes = \"x\\n{}\"\n\
         +SubmitEventUserNotes = \"y\\n{}\"\nqueue\n",
        forged(777),
        forged(778)
    );
    let c = pool
        .submit(a, &s.alice, "inject.sub", &text)
        .unwrap_or_else(|e| panic!("{e}"));
    let job = format!("{c}.0");
    let act = |verb: &str, reason: &str| {
        let o = pool.tool(a, &s.alice, &[verb, &job, "-reason", reason]);
        assert!(
            o.status.success(),
            "{verb}: {}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
    };
    let log = || std::fs::read_to_string(s.alice.join("job.log")).unwrap_or_default();
    let wait_event = |code: &str| {
        let deadline = Instant::now() + Duration::from_secs(JOB_SECS);
        while !log().lines().any(|l| l.starts_with(&format!("{code} ("))) {
            assert!(
                Instant::now() < deadline,
                "no {code} event in the log:\n{}\ndaemon:\n{}",
                log(),
                pool.daemon_log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    wait_event("000");
    act("hold", &format!("a\n{}", forged(779)));
    wait_event("012");
    act("release", &format!("b\n{}", forged(780)));
    wait_event("013");
    act("rm", &format!("c\n{}", forged(781)));
    wait_event("009");
    let text = log();
    let forgeries: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("005 (77") || l.starts_with("005 (78"))
        .collect();
    assert!(
        forgeries.is_empty(),
        "a forged event header starts a line of the job event log: {forgeries:?}\nlog:\n{text}"
    );
}

/// Opens each FIFO for writing and closes it at once, so that whoever is
/// blocked opening or reading it goes on (and sees its end).
fn unblock(fifo: &Path) {
    let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    for _ in 0..20 {
        // SAFETY: a plain open of a path and a close of what it gave.
        let fd = unsafe { libc::open(c.as_ptr(), libc::O_WRONLY | libc::O_NONBLOCK) };
        if fd < 0 {
            return;
        }
        unsafe { libc::close(fd) };
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_fifo_as_input_holds_the_job_and_not_the_pool() {
    if skip_unless_root() {
        return;
    }
    let s = Scratch::new("fifo");
    let pool = Pool::start(&s.state, FAST);
    let (a, b) = (alice(), bob());
    let fifo = s.alice.join("fifo");
    let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: mkfifo on a path we made.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    chown(&fifo, a);
    // Bob has a job in the queue too.
    pool.submit(
        b,
        &s.bob,
        "bob.sub",
        "executable = /bin/sleep\narguments = 300\nshould_transfer_files = NO\nqueue\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let job = |extra: &str| {
        format!(
            "executable = /bin/cat\ntransfer_executable = false\nshould_transfer_files = YES\n\
             when_to_transfer_output = ON_EXIT\n{extra}\nqueue\n"
        )
    };
    let attacks = [
        (
            "transfer_input_files = fifo",
            job("arguments = fifo\ntransfer_input_files = fifo"),
        ),
        ("input = fifo", job("input = fifo")),
        // Without file transfer the job's standard input is opened where
        // it is, as alice: a FIFO there must not leave the job's start
        // waiting for a writer either (it would keep a slot, and one of
        // the pool's threads that start jobs, for as long as she likes).
        (
            "input = fifo, should_transfer_files = NO",
            "executable = /bin/cat\nshould_transfer_files = NO\ninput = fifo\nqueue\n".into(),
        ),
    ];
    let mut jobs = Vec::new();
    for (i, (what, text)) in attacks.iter().enumerate() {
        if let Some(c) = submit(&pool, &s, &format!("fifo{i}.sub"), text) {
            jobs.push((*what, format!("{c}.0")));
        }
    }
    // For 15 s: bob's `q` answers at once, while alice's jobs go on hold
    // (or fail).
    let start = Instant::now();
    let mut slowest = Duration::ZERO;
    let mut done: Vec<(&str, Outcome)> = Vec::new();
    while start.elapsed() < Duration::from_secs(15) && done.len() < jobs.len() {
        let mut c = users::command(&s.state, Some(b), &[]);
        c.args(["q", "-af", "ClusterId", "JobStatus"])
            .current_dir(&s.bob);
        let (took, o) = users::timed(c, Duration::from_secs(5));
        assert!(
            o.as_ref().is_some_and(|o| o.status.success()),
            "bob's q failed or hung ({took:?}) while alice's FIFO jobs started: {o:?}"
        );
        slowest = slowest.max(took);
        done = jobs
            .iter()
            .map(|(what, j)| (*what, pool.outcome(a, j, 0)))
            .filter(|(_, o)| !matches!(o, Outcome::Pending(_)))
            .collect();
        std::thread::sleep(Duration::from_millis(200));
    }
    let pending: Vec<(&str, Outcome)> = jobs
        .iter()
        .map(|(what, j)| (*what, pool.outcome(a, j, 0)))
        .collect();
    unblock(&fifo);
    assert!(
        slowest < Duration::from_secs(1),
        "bob's q took {slowest:?} while alice's FIFO jobs started"
    );
    assert_refused(&pool, &pending);
}

/// `[a0 = 1; a1 = a0 + a0; ...; aN = aN-1 + aN-1].aN > 0`: 2^N additions
/// when evaluated plainly.
fn doubling(n: usize) -> String {
    let mut parts = vec!["a0 = 1".to_string()];
    parts.extend((1..=n).map(|i| format!("a{i} = a{} + a{}", i - 1, i - 1)));
    format!("[{}].a{n} > 0", parts.join("; "))
}

/// A string of 16 * 2^N bytes made by doubling with strcat.
fn huge_string(n: usize) -> String {
    let mut parts = vec!["s0 = \"xxxxxxxxxxxxxxxx\"".to_string()];
    parts.extend((1..=n).map(|i| format!("s{i} = strcat(s{}, s{})", i - 1, i - 1)));
    format!("size([{}].s{n}) > 0", parts.join("; "))
}

#[test]
fn an_expensive_constraint_from_one_user_does_not_stall_another_s_q() {
    if skip_unless_root() {
        return;
    }
    let s = Scratch::new("constraint");
    let pool = Pool::start(&s.state, FAST);
    let (a, b) = (alice(), bob());
    pool.submit(
        b,
        &s.bob,
        "bob.sub",
        "executable = /bin/sleep\narguments = 300\nshould_transfer_files = NO\nqueue 3\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    pool.submit(
        a,
        &s.alice,
        "alice.sub",
        "executable = /bin/sleep\narguments = 300\nshould_transfer_files = NO\nqueue\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    for (what, expr) in [
        ("a doubling nested ad (2^40 additions)", doubling(40)),
        ("a 256 MiB string built with strcat", huge_string(24)),
    ] {
        let mut c = users::command(&s.state, Some(a), &[]);
        c.args(["q", "-allusers", "-constraint", &expr, "-af", "ClusterId"])
            .current_dir(&s.alice)
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let _alice_q = KillOnDrop(c.spawn().unwrap());
        std::thread::sleep(Duration::from_millis(300));
        for i in 0..3 {
            let mut c = users::command(&s.state, Some(b), &[]);
            c.args(["q", "-af", "ClusterId", "JobStatus"])
                .current_dir(&s.bob);
            let (took, o) = users::timed(c, Duration::from_secs(5));
            let answered = o.as_ref().is_some_and(|o| {
                o.status.success() && String::from_utf8_lossy(&o.stdout).lines().count() == 3
            });
            assert!(
                answered && took < Duration::from_secs(1),
                "while alice's q evaluates {what}, bob's q #{i} took {took:?} \
                 (given up after 5 s: {}): {o:?}",
                o.is_none()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

/// Where [`hold_connections`] connects: the pool's socket, or a TCP
/// port on the loopback address (the command port).
enum Target<'a> {
    Unix(&'a Path),
    Tcp(u16),
}

/// A process of `user`'s holding `n` connections to `target` open (half
/// of them silent, half with a request begun and never finished): a
/// `sleep` that inherits the sockets made just before it starts. Gives
/// the process and how many connections it made.
fn hold_connections(user: &User, target: Target, n: usize) -> (KillOnDrop, usize) {
    // SAFETY: all-zero socket addresses are valid; the path fits (checked).
    let mut unix: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    let mut tcp: libc::sockaddr_in = unsafe { std::mem::zeroed() };
    let (family, addr, len, partial): (_, *const libc::sockaddr, _, &'static [u8]) = match target {
        Target::Unix(socket) => {
            unix.sun_family = libc::AF_UNIX as libc::sa_family_t;
            let bytes = socket.as_os_str().as_encoded_bytes();
            assert!(bytes.len() < unix.sun_path.len(), "{}", socket.display());
            for (d, s) in unix.sun_path.iter_mut().zip(bytes) {
                *d = *s as libc::c_char;
            }
            (
                libc::AF_UNIX,
                (&unix as *const libc::sockaddr_un).cast(),
                std::mem::size_of::<libc::sockaddr_un>(),
                b"POST /v1/jobs/query HTTP/1.1\r\nHost: pool\r\nContent-Le",
            )
        }
        Target::Tcp(port) => {
            tcp.sin_family = libc::AF_INET as libc::sa_family_t;
            tcp.sin_port = port.to_be();
            tcp.sin_addr.s_addr = u32::from(std::net::Ipv4Addr::LOCALHOST).to_be();
            (
                libc::AF_INET,
                (&tcp as *const libc::sockaddr_in).cast(),
                std::mem::size_of::<libc::sockaddr_in>(),
                // A CEDAR packet header cut short.
                b"\x00\x00\x00",
            )
        }
    };
    // The addresses outlive the child's start (pre_exec runs before
    // spawn returns); raw pointers to them are Send for the closure.
    let addr = addr as usize;
    let mut c = Command::new("sleep");
    c.arg("600")
        .uid(user.uid)
        .gid(user.gid)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    // SAFETY: runs between fork and exec, already as the user: only
    // system calls on stack data, no allocation.
    unsafe {
        c.pre_exec(move || {
            let mut lim: libc::rlimit = std::mem::zeroed();
            libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim);
            lim.rlim_cur = lim.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
            let timeout = libc::timeval {
                tv_sec: 3,
                tv_usec: 0,
            };
            let mut made: usize = 0;
            for i in 0..n {
                let fd = libc::socket(family, libc::SOCK_STREAM, 0);
                if fd < 0 {
                    break;
                }
                libc::setsockopt(
                    fd,
                    libc::SOL_SOCKET,
                    libc::SO_SNDTIMEO,
                    (&timeout as *const libc::timeval).cast(),
                    std::mem::size_of::<libc::timeval>() as libc::socklen_t,
                );
                let rc = libc::connect(fd, addr as *const libc::sockaddr, len as libc::socklen_t);
                if rc != 0 {
                    libc::close(fd);
                    break;
                }
                if i % 2 == 1 {
                    libc::write(fd, partial.as_ptr().cast(), partial.len());
                }
                made += 1;
            }
            // The count, in decimal, on standard output.
            let mut buf = [b'\n'; 24];
            let mut at = buf.len() - 1;
            let mut m = made;
            loop {
                at -= 1;
                buf[at] = b'0' + (m % 10) as u8;
                m /= 10;
                if m == 0 {
                    break;
                }
            }
            libc::write(1, buf[at..].as_ptr().cast(), buf.len() - at);
            Ok(())
        });
    }
    let mut child = c.spawn().unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    while out.read(&mut byte).unwrap_or(0) == 1 && byte[0] != b'\n' {
        line.push(byte[0]);
    }
    let made = String::from_utf8_lossy(&line).trim().parse().unwrap_or(0);
    (KillOnDrop(child), made)
}

/// Alice opens 2,000 connections to the pool's socket and 2,000 to its
/// command port and leaves them idle (half of them in the middle of a
/// request); bob must still submit and query. The pool runs with 1,024 open files (its soft limit), as a
/// service manager commonly starts a daemon, so that the connections
/// outnumber what it may hold open.
#[test]
fn two_thousand_idle_connections_from_one_user_do_not_lock_out_another() {
    if skip_unless_root() {
        return;
    }
    let s = Scratch::new("conns");
    // The pool as a service manager would start it: 1024 open files
    // (soft limit), fewer than alice's connections.
    let pool = Pool::start_with_nofile(&s.state, FAST, 1024);
    let (a, b) = (alice(), bob());
    let (_held, made) = hold_connections(a, Target::Unix(&s.state.join("pool.sock")), 2000);
    // The tools reach the schedd at its command port: alice holds as
    // many there.
    let port = command_port(&s.state);
    let (_held_tcp, made_tcp) = hold_connections(a, Target::Tcp(port), 2000);
    eprintln!(
        "alice holds {made} connections to the pool's socket and {made_tcp} to its command port"
    );
    assert!(made_tcp > 64, "alice made only {made_tcp} connections");
    let mut submit = users::command(&s.state, Some(b), &[]);
    let file = s.user_file(
        b,
        "bob.sub",
        "executable = /bin/true\ntransfer_executable = false\n\
         should_transfer_files = NO\nqueue\n",
        0o644,
    );
    submit.arg("submit").arg(&file).current_dir(&s.bob);
    let (took, o) = users::timed(submit, Duration::from_secs(10));
    assert!(
        o.as_ref().is_some_and(|o| o.status.success()),
        "with {made} connections of alice's open, bob's submit failed or hung ({took:?}): {o:?}"
    );
    let mut q = users::command(&s.state, Some(b), &[]);
    q.args(["q", "-af", "ClusterId"]).current_dir(&s.bob);
    let (took, o) = users::timed(q, Duration::from_secs(10));
    assert!(
        o.as_ref().is_some_and(|o| o.status.success()) && took < Duration::from_secs(1),
        "with {made} connections of alice's open, bob's q failed or took {took:?}: {o:?}"
    );
    let h = pool.outcome(b, "1.0", JOB_SECS);
    assert_eq!(
        h,
        Outcome::Left {
            status: 4,
            exit_code: Some(0)
        },
        "bob's job, with alice's connections open"
    );
}

/// The port of the schedd's command port, from its address file.
fn command_port(state: &Path) -> u16 {
    let text = std::fs::read_to_string(state.join(".schedd_address")).unwrap();
    let first = text.lines().next().unwrap_or("");
    let port = first
        .trim_start_matches('<')
        .split(['?', '>'])
        .next()
        .and_then(|hp| hp.rsplit_once(':'))
        .map(|(_, p)| p);
    port.and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no port in the schedd's address {first:?}"))
}

/// Starts `pool up` on `state` (as root, or as `user`) and says how it
/// went wrong if it did not refuse the directory: it must exit non-zero,
/// naming one of `names` (the directory, or its parent) in its message.
fn refused(state: &Path, user: Option<&User>, names: &[&Path]) -> Option<String> {
    let mut pool = Pool::spawn(state, user, FAST);
    let who = user.map_or("root", |u| u.name);
    let status = pool.exit_within(5);
    let log = pool.daemon_log();
    match status {
        None => {
            pool.kill();
            Some(format!(
                "{who}'s pool started on {} (still running after 5 s)",
                state.display()
            ))
        }
        Some(st) if st.success() => Some(format!(
            "{who}'s pool on {} exited with success: {log}",
            state.display()
        )),
        Some(_) if !names.iter().any(|n| log.contains(&n.display().to_string())) => Some(format!(
            "{who}'s pool on {} was refused, but its message names none of {names:?}: {log}",
            state.display()
        )),
        Some(_) => None,
    }
}

#[test]
fn a_state_directory_another_user_controls_is_refused() {
    if skip_unless_root() {
        return;
    }
    let s = Scratch::new("statedir");
    let (a, b) = (alice(), bob());
    let mut problems = Vec::new();

    // Owned by alice.
    let owned = s.base.join("alice-owned");
    std::fs::create_dir(&owned).unwrap();
    chown(&owned, a);
    chmod(&owned, 0o755);
    problems.extend(refused(&owned, None, &[&owned]));

    // Root's, but anyone may write it.
    let open = s.base.join("world-writable");
    std::fs::create_dir(&open).unwrap();
    chmod(&open, 0o777);
    problems.extend(refused(&open, None, &[&open]));

    // Root's, 0755, in alice's directory.
    let inside = s.alice.join("state");
    std::fs::create_dir(&inside).unwrap();
    chmod(&inside, 0o755);
    problems.extend(refused(&inside, None, &[&inside, &s.alice]));

    // Root's, 0755, in a directory anyone may write (no sticky bit).
    let open_parent = s.base.join("open-parent");
    std::fs::create_dir(&open_parent).unwrap();
    chmod(&open_parent, 0o777);
    let under = open_parent.join("state");
    std::fs::create_dir(&under).unwrap();
    chmod(&under, 0o755);
    problems.extend(refused(&under, None, &[&under, &open_parent]));

    // Alice's pool on a directory bob owns (and lets her group write).
    let bobs = s.base.join("bob-owned");
    std::fs::create_dir(&bobs).unwrap();
    std::os::unix::fs::chown(&bobs, Some(b.uid), Some(a.gid)).unwrap();
    chmod(&bobs, 0o770);
    problems.extend(refused(&bobs, Some(a), &[&bobs]));

    assert!(
        problems.is_empty(),
        "pool up took a state directory another user controls:\n{}",
        problems.join("\n")
    );
    // A root pool on a directory of root's alone starts.
    let good = s.base.join("good");
    std::fs::create_dir(&good).unwrap();
    chmod(&good, 0o755);
    drop(Pool::start(&good, FAST));
}

#[test]
fn a_reused_pid_in_a_stale_running_record_kills_nothing_at_restart() {
    if skip_unless_root() {
        return;
    }
    let s = Scratch::new("pid-reuse");
    drop(Pool::start(&s.state, FAST));
    // Bob's own process tree, in its own session: the leader and a child.
    let mut c = Command::new("setsid");
    c.args(["sh", "-c", "sleep 300 & exec sleep 300"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    users::as_user(&mut c, bob());
    let leader = KillOnDrop(c.spawn().unwrap());
    let l = leader.0.id() as i32;
    let child = common::wait_for(5, "bob's leader to fork its child", || {
        let kids = users::children(l);
        // The leader has exec'd `sleep` once its shell is gone.
        let exec_done =
            std::fs::read(format!("/proc/{l}/cmdline")).is_ok_and(|c| c.starts_with(b"sleep"));
        (exec_done && kids.len() == 1).then(|| kids[0])
    });
    let ids = users::proc_ids(l).unwrap();
    assert_eq!(
        ids.2, l,
        "bob's process is not its session's leader: {ids:?}"
    );
    let start = users::start_ticks(l).unwrap();
    // A record a dead pool could have left: the pid, but another start.
    let running = s.state.join("running");
    std::fs::create_dir_all(&running).unwrap();
    std::fs::write(running.join("slot1"), format!("{l} {}\n", start + 4321)).unwrap();

    let pool = Pool::start(&s.state, FAST);
    std::thread::sleep(Duration::from_millis(1500));
    let (leader_alive, child_alive) = (alive(l), alive(child));
    drop(pool);
    // SAFETY: a signal to the child of a process this test started.
    unsafe { libc::kill(child, libc::SIGKILL) };
    drop(leader);
    assert!(
        leader_alive && child_alive,
        "a restart on a stale record naming bob's pid {l} killed bob's processes: \
         leader alive {leader_alive}, its child {child} alive {child_alive}"
    );
}

/// The pool's files are private: another user cannot read the job queue
/// or the accountant's figures, nor open `queue.db` to take (or hold) the
/// queue's lock, even when a pool from an older version left it readable.
#[test]
fn another_user_can_neither_read_the_queue_nor_take_its_lock() {
    if skip_unless_root() {
        return;
    }
    let s = Scratch::new("lock");
    let a = alice();
    // A queue file an older pool left readable by everyone.
    std::fs::write(s.state.join("queue.db"), "").unwrap();
    chmod(&s.state.join("queue.db"), 0o644);
    let pool = Pool::start(&s.state, &[]);
    pool.submit(a, &s.alice, "one.sub", "executable = /bin/true\nqueue\n")
        .unwrap();
    for name in ["queue.db", "running"] {
        let mode = std::fs::metadata(s.state.join(name)).unwrap().mode() & 0o777;
        assert_eq!(mode & 0o077, 0, "{name} is open to others: {mode:o}");
    }
    // Alice tries to open the queue (a shared lock needs only a read).
    let mut c = Command::new("/bin/sh");
    c.arg("-c")
        .arg(format!("exec 3< {}", s.state.join("queue.db").display()))
        .stderr(Stdio::piped());
    users::as_user(&mut c, a);
    let o = c.output().unwrap();
    assert!(
        !o.status.success(),
        "alice opened the pool's queue: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("Permission denied"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}
