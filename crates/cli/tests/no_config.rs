//! `ferrocondor pool up` on a fresh machine: no configuration file, no
//! CONDOR_CONFIG, nothing in the environment but HOME and PATH. The pool
//! runs on the built-in personal-pool configuration (HTCondor's
//! minicondor settings), says so, and runs a job.

mod common;

use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{bin, run_as, scratch, wait_for, write};

fn bare(home: &std::path::Path) -> Command {
    let mut c = Command::new(bin());
    c.env_clear()
        .env("HOME", home)
        .env("PATH", "/usr/bin:/bin")
        .current_dir(home);
    if let Some((uid, gid)) = run_as() {
        c.uid(uid).gid(gid);
    }
    c
}

#[test]
fn pool_up_with_no_configuration_runs_a_job_and_says_what_it_runs_on() {
    let home = scratch("noconfig");
    let banner = home.join("banner.txt");
    let log = std::fs::File::create(&banner).unwrap();
    let mut pool = bare(&home)
        .args(["pool", "up"])
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap();
    let state = home.join(".local/state/ferrocondor");
    // The socket comes before the banner is written: wait for both.
    wait_for(20, "the pool's socket", || {
        state.join("pool.sock").exists().then_some(())
    });
    let said = wait_for(20, "the pool's banner", || {
        let said = std::fs::read_to_string(&banner).unwrap_or_default();
        said.contains("configuration: ").then_some(said)
    });
    assert!(said.contains("configuration: "), "{said}");
    let default_file = ["/etc/condor/condor_config", "/usr/local/etc/condor_config"]
        .iter()
        .any(|f| std::path::Path::new(f).exists());
    if !default_file {
        assert!(said.contains("<built-in personal pool>"), "{said}");
    }

    write(
        &home.join("job.sub"),
        "executable = /bin/echo\narguments = hello from a fresh machine\noutput = job.out\nqueue\n",
    );
    let submitted = bare(&home).args(["submit", "job.sub"]).output().unwrap();
    assert!(
        submitted.status.success(),
        "{}",
        String::from_utf8_lossy(&submitted.stderr)
    );
    wait_for(30, "the job to complete", || {
        let h = bare(&home)
            .args(["history", "-af", "JobStatus"])
            .output()
            .ok()?;
        (String::from_utf8_lossy(&h.stdout).trim() == "4").then_some(())
    });
    assert_eq!(
        std::fs::read_to_string(home.join("job.out")).unwrap(),
        "hello from a fresh machine\n"
    );
    let down = bare(&home).args(["pool", "down"]).output().unwrap();
    assert!(down.status.success());
    wait_for(20, "the pool to exit", || pool.try_wait().ok().flatten());
    std::thread::sleep(Duration::from_millis(10));
    let _ = std::fs::remove_dir_all(&home);
}
