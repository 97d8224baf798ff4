//! `ferrocondor install-links`: the binary acts as the HTCondor tool whose
//! name it is run by, so scripts written for HTCondor run unchanged.

mod common;

use std::os::unix::process::CommandExt;
use std::process::Command;

use common::{bin, err, ok, run_as, scratch, write, PoolProcess};

const FAST: &[(&str, &str)] = &[
    ("POLLING_INTERVAL", "1"),
    ("NEGOTIATOR_INTERVAL", "2"),
    ("UPDATE_INTERVAL", "1"),
    ("NUM_CPUS", "2"),
];

#[test]
fn an_htcondor_style_script_runs_unchanged_through_the_links() {
    let dir = scratch("links");
    let links = dir.join("bin");
    let made = Command::new(bin())
        .args(["install-links"])
        .arg(&links)
        .output()
        .unwrap();
    assert!(made.status.success(), "{}", err(&made));
    for tool in [
        "condor_q",
        "condor_submit",
        "condor_status",
        "condor_history",
        "condor_rm",
    ] {
        assert!(links.join(tool).exists(), "{tool}");
    }
    // Made again: nothing to do, no error.
    let again = Command::new(bin())
        .args(["install-links"])
        .arg(&links)
        .output()
        .unwrap();
    assert!(again.status.success(), "{}", err(&again));

    let state = dir.join("state");
    let _pool = PoolProcess::start(&state, FAST);
    write(
        &dir.join("job.sub"),
        "executable = /bin/echo\narguments = hello\noutput = out.$(Process)\nqueue 2\n",
    );
    write(
        &dir.join("script.sh"),
        r#"set -e
condor_submit job.sub
condor_q -af ClusterId ProcId
n=0
while [ -n "$(condor_q -af ClusterId)" ]; do
    n=$((n + 1))
    [ $n -lt 300 ] || { echo "the jobs never finished" >&2; exit 1; }
    sleep 0.1
done
condor_history -af ClusterId ProcId ExitCode
condor_status -af Name | wc -l
"#,
    );
    let mut sh = Command::new("/bin/sh");
    sh.arg("script.sh")
        .current_dir(&dir)
        .env("PATH", format!("{}:/usr/bin:/bin", links.display()))
        .env("FERROCONDOR_STATE", &state)
        .env("CONDOR_CONFIG", "ONLY_ENV");
    if let Some((uid, gid)) = run_as() {
        sh.uid(uid).gid(gid);
    }
    let out = ok(sh.output().unwrap());
    assert!(out.contains("2 job(s) submitted to cluster 1."), "{out}");
    assert!(out.contains("1 0 0") && out.contains("1 1 0"), "{out}");
    assert!(out.trim_end().ends_with('2'), "two slots: {out}");
    assert_eq!(
        std::fs::read_to_string(dir.join("out.0")).unwrap(),
        "hello\n"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_tool_ferrocondor_does_not_have_says_so() {
    let dir = scratch("links-missing");
    let link = dir.join("condor_store_cred");
    std::os::unix::fs::symlink(bin(), &link).unwrap();
    let out = Command::new(&link).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        err(&out).contains("condor_store_cred is not a ferrocondor tool yet"),
        "{}",
        err(&out)
    );
    let _ = std::fs::remove_dir_all(&dir);
}
