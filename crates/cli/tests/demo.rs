//! The README's main job, as a user runs it: `examples/demo.sh` starts a
//! personal pool in a fresh state directory, submits the example jobs,
//! shows their progress, prints the outcome and shuts the pool down.

mod common;

use std::os::unix::process::CommandExt;
use std::process::Command;

#[test]
fn the_demo_runs_every_example_job_and_shuts_down_cleanly() {
    let home = common::scratch("demo");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/demo.sh");
    let mut c = Command::new("/bin/sh");
    c.arg(script)
        .env("FERROCONDOR", common::bin())
        .env("TMPDIR", &home)
        .env("HOME", &home)
        .env_remove("CONDOR_CONFIG")
        .env_remove("FERROCONDOR_STATE");
    if let Some((uid, gid)) = common::run_as() {
        c.uid(uid).gid(gid);
    }
    let o = c.output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // Progress lines, then the outcome.
    assert!(out.contains("== running"), "{out}");
    assert!(
        out.contains("12 of 13 done, 0 running, 0 idle, 1 held"),
        "{out}"
    );
    assert!(out.contains("Hello from job 1.0"), "{out}");
    for n in 0..10 {
        assert!(
            out.contains(&format!("{n} squared is {}", n * n)),
            "{n}: {out}"
        );
    }
    // The words of words.txt, counted in the job's sandbox, came back.
    assert!(
        out.contains("count.txt (words in words.txt):\n21\n"),
        "{out}"
    );
    // The failing job is held with its reason, not lost.
    assert!(out.contains("exited with code 3"), "{out}");
    assert!(
        out.contains("the job event log has 12 terminations"),
        "{out}"
    );
    assert!(out.contains("is down"), "{out}");
    // Nothing is left running: the state directory's socket is gone.
    let made = out
        .lines()
        .find_map(|l| l.strip_prefix("demo: done; everything it made is in "))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(!std::path::Path::new(made).join("state/pool.sock").exists());
}

#[test]
fn as_root_the_demo_runs_itself_as_an_ordinary_user() {
    if common::run_as().is_none() {
        // Only root can show it.
        return;
    }
    let home = common::scratch("demo-root");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/demo.sh");
    let o = Command::new("/bin/sh")
        .arg(script)
        .env("FERROCONDOR", common::bin())
        .env("TMPDIR", &home)
        .env_remove("CONDOR_CONFIG")
        .env_remove("FERROCONDOR_STATE")
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(out.contains("demo: running as nobody"), "{out}");
    assert!(
        out.contains("12 of 13 done, 0 running, 0 idle, 1 held"),
        "{out}"
    );
    assert!(out.contains("is down"), "{out}");
}
