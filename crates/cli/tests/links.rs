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

/// Runs `script` with /bin/sh in `dir` as the pool's user, the links first
/// on PATH: standard output, or the failure with both streams.
fn run_script(
    dir: &std::path::Path,
    links: &std::path::Path,
    state: &std::path::Path,
    script: &str,
) -> String {
    write(&dir.join("script.sh"), script);
    let mut sh = Command::new("/bin/sh");
    sh.arg("script.sh")
        .current_dir(dir)
        .env("PATH", format!("{}:/usr/bin:/bin", links.display()))
        .env("FERROCONDOR_STATE", state)
        .env("CONDOR_CONFIG", "ONLY_ENV");
    if let Some((uid, gid)) = run_as() {
        sh.uid(uid).gid(gid);
    }
    ok(sh.output().unwrap())
}

/// The part of a script's output after the line `== NAME`, up to the next
/// such line.
fn section<'a>(out: &'a str, name: &str) -> &'a str {
    let start = out
        .find(&format!("== {name}\n"))
        .unwrap_or_else(|| panic!("no section {name} in {out}"))
        + name.len()
        + 4;
    let rest = &out[start..];
    &rest[..rest.find("\n== ").map_or(rest.len(), |i| i + 1)]
}

fn install_links(dir: &std::path::Path) -> std::path::PathBuf {
    let links = dir.join("bin");
    let made = Command::new(bin())
        .args(["install-links"])
        .arg(&links)
        .output()
        .unwrap();
    assert!(made.status.success(), "{}", err(&made));
    links
}

/// A condor_wait-style script, unchanged from what one would run against
/// HTCondor: submit, list the jobs, poll `condor_q -totals` until the
/// query has no job left, then read the history.
#[test]
fn a_condor_wait_style_script_polls_until_the_jobs_leave() {
    let dir = scratch("links-wait");
    let links = install_links(&dir);
    let state = dir.join("state");
    let _pool = PoolProcess::start(&state, FAST);
    write(
        &dir.join("job.sub"),
        "executable = /bin/sh\narguments = \"-c 'exit $(Process)'\"\nqueue 3\n",
    );
    let out = run_script(
        &dir,
        &links,
        &state,
        r#"set -e
condor_submit job.sub
echo "== q"
condor_q -af ClusterId ProcId JobStatus
n=0
until condor_q -totals | grep -q "^Total for query: 0 jobs"; do
    n=$((n + 1))
    [ $n -lt 300 ] || { echo "the jobs never left the queue" >&2; exit 1; }
    sleep 0.1
done
echo "== history"
condor_history -af:j ExitCode JobStatus | sort
echo "== format"
condor_history -format "%d." ClusterId -format "%d " ProcId -format "exit=%d\n" ExitCode | sort
"#,
    );
    assert!(out.contains("3 job(s) submitted to cluster 1."), "{out}");
    let q: Vec<&str> = section(&out, "q").lines().collect();
    assert_eq!(q.len(), 3, "{out}");
    for (p, line) in q.iter().enumerate() {
        let f: Vec<&str> = line.split(' ').collect();
        assert_eq!(&f[..2], ["1", &p.to_string()], "{out}");
        assert!(["1", "2", "4"].contains(&f[2]), "{out}");
    }
    assert_eq!(
        section(&out, "history"),
        "1.0 0 4\n1.1 1 4\n1.2 2 4\n",
        "{out}"
    );
    assert_eq!(
        section(&out, "format"),
        "1.0 exit=0\n1.1 exit=1\n1.2 exit=2\n",
        "{out}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// HTCondor's everyday output options through the links, against a pool
/// with one job running and one held.
#[test]
fn everyday_options_work_through_the_links() {
    let dir = scratch("links-options");
    let links = install_links(&dir);
    let state = dir.join("state");
    let _pool = PoolProcess::start(&state, FAST);
    write(
        &dir.join("sleep.sub"),
        "executable = /bin/sleep\narguments = 300\n",
    );
    write(
        &dir.join("held.sub"),
        "executable = /bin/true\nhold = true\nqueue\n",
    );
    let out = run_script(
        &dir,
        &links,
        &state,
        r#"set -e
condor_submit sleep.sub -queue 1
condor_submit held.sub -batch-name later
n=0
until [ "$(condor_q 1 -af JobStatus)" = 2 ]; do
    n=$((n + 1))
    [ $n -lt 300 ] || { echo "the job never ran" >&2; exit 1; }
    sleep 0.1
done
echo "== jh"
condor_q -af:jh Owner JobStatus 'RequestCpus * 2'
echo "== lrtV,"
condor_q 2 -af:lrtV, Cmd JobStatus 'JobStatus + 1'
echo "== ln"
condor_q 2 -af:ln JobStatus ProcId
echo "== format"
condor_q -format "%d." ClusterId -format "%-3d|" ProcId -format "%s\n" JobBatchName -wide
echo "== avail"
condor_status -avail -wide -af Name State
echo "== claimed"
condor_status -claimed
echo "== state"
condor_status -state
echo "== run"
condor_status -run
echo "== status format"
condor_status -format "%s " Name -format "%5.1f\n" Cpus
echo "== dry-run"
printf 'executable = /bin/echo\narguments = $(x)\n' > items.sub
condor_submit items.sub -queue x in a, b -dry-run ads.txt
grep -c '^Args = ' ads.txt
echo "== q -run"
condor_q -run
echo "== q -l"
condor_q 2 -l | grep -c '^JobStatus = 5$'
echo "== q -batch"
condor_q -batch -allusers | grep -c later
echo "== history"
condor_history -match 1 -json | grep -c '"ClusterId"' || true
echo "== unsupported"
condor_q -autocluster 2>&1 || echo "rc=$?"
condor_rm 1 2
"#,
    );
    let me = common::me();
    let jh = section(&out, "jh");
    let w = me.len().max(5);
    assert_eq!(
        jh,
        format!(
            " ID {:<w$} JobStatus RequestCpus * 2\n1.0 {me:<w$} 2         2              \n2.0 {me:<w$} 5         2              \n",
            "Owner"
        ),
        "{out}"
    );
    assert_eq!(
        section(&out, "lrtV,"),
        "Cmd = \"/bin/true\",\tJobStatus = 5,\tJobStatus + 1 = JobStatus + 1\n",
        "{out}"
    );
    assert_eq!(section(&out, "ln"), "JobStatus = 5\n ProcId = 0\n", "{out}");
    assert_eq!(section(&out, "format"), "1.0  |2.0  |later\n", "{out}");
    let avail = section(&out, "avail");
    assert_eq!(avail.lines().count(), 1, "{out}");
    assert!(avail.ends_with(" Unclaimed\n"), "{out}");
    let claimed = section(&out, "claimed");
    assert!(claimed.starts_with("Name "), "{out}");
    assert!(claimed.contains(" RemoteUser "), "{out}");
    assert!(claimed.contains(&format!(" {me}@")), "{out}");
    assert!(claimed.contains("Machines"), "{out}");
    let state_table = section(&out, "state");
    assert!(state_table.contains("  KbdIdle"), "{out}");
    assert!(
        state_table
            .lines()
            .any(|l| l.trim_start().starts_with("Busy ")),
        "{out}"
    );
    let run = section(&out, "run");
    assert!(run.starts_with("Name"), "{out}");
    assert_eq!(
        run.lines().nth(2).map(|l| l.split_whitespace().count()),
        Some(3),
        "{out}"
    );
    let sf: Vec<&str> = section(&out, "status format").lines().collect();
    assert_eq!(sf.len(), 2, "{out}");
    assert!(sf.iter().all(|l| l.ends_with("  1.0")), "{out}");
    assert_eq!(
        section(&out, "dry-run"),
        "Dry-Run job(s)..\n2 job(s) dry-run to cluster 1.\n2\n",
        "{out}"
    );
    let qrun = section(&out, "q -run");
    assert!(
        qrun.contains("HOST(S)") && qrun.contains("   1.0 "),
        "{out}"
    );
    assert_eq!(section(&out, "q -l"), "1\n", "{out}");
    assert_eq!(section(&out, "q -batch"), "1\n", "{out}");
    assert_eq!(
        section(&out, "history"),
        "0\n",
        "nothing has left the queue: {out}"
    );
    let unsupported = section(&out, "unsupported");
    assert!(
        unsupported.contains("the option -autocluster is not supported by ferrocondor yet"),
        "{out}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// HTCondor's abbreviations through the links (`-const`, `-tot`, `-nob`,
/// `-lim`), with HTCondor's minimum lengths: a word too short is refused,
/// and a prefix of an option ferrocondor lacks names the option whole.
#[test]
fn abbreviated_options_work_through_the_links() {
    let dir = scratch("links-abbrev");
    let links = install_links(&dir);
    let state = dir.join("state");
    let _pool = PoolProcess::start(&state, FAST);
    write(&dir.join("true.sub"), "executable = /bin/true\nqueue 2\n");
    write(
        &dir.join("held.sub"),
        "executable = /bin/true\nhold = true\nqueue 2\n",
    );
    let out = run_script(
        &dir,
        &links,
        &state,
        r#"set -e
condor_submit true.sub
n=0
until condor_q -tot | grep -q "^Total for query: 0 jobs"; do
    n=$((n + 1))
    [ $n -lt 300 ] || { echo "the jobs never left the queue" >&2; exit 1; }
    sleep 0.1
done
condor_submit held.sub
echo "== const"
condor_q -const 'ProcId == 1' -af ClusterId ProcId
echo "== tot"
condor_q -tot
echo "== nob"
condor_q -nob | grep -c ' 2\.[01] '
echo "== status"
condor_status -const 'Cpus == 1' -af Name | wc -l
echo "== rm"
condor_rm -const 'ClusterId == 2 && ProcId == 0'
condor_q -const 'JobStatus != 3' -af ClusterId ProcId
echo "== history"
condor_history -lim 1 -af ClusterId | wc -l
echo "== refused"
condor_q -t 2>&1 || echo "rc=$?"
condor_q -glob 2>&1 || echo "rc=$?"
"#,
    );
    assert_eq!(section(&out, "const"), "2 1\n", "{out}");
    assert!(
        section(&out, "tot").contains("Total for query: 2 jobs"),
        "{out}"
    );
    assert_eq!(section(&out, "nob"), "2\n", "{out}");
    assert_eq!(section(&out, "status"), "2\n", "{out}");
    assert!(section(&out, "rm").ends_with("2 1\n"), "{out}");
    assert_eq!(section(&out, "history"), "1\n", "{out}");
    let refused = section(&out, "refused");
    assert!(refused.contains("unrecognized option -t"), "{out}");
    assert!(
        refused.contains("the option -global is not supported by ferrocondor yet"),
        "{out}"
    );
    assert_eq!(refused.matches("rc=2").count(), 2, "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}
