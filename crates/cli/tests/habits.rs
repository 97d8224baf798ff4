//! Issue 17's first impressions, each as an HTCondor user meets it: the
//! job's GlobalJobId, `history` with the pool down, a bad `-constraint`,
//! `-better-analyze` of a job whose RequestMemory is undefined, submit
//! errors at their column.

mod common;

use std::path::Path;

use common::{bin, command, err, ok, out, run, scratch, wait_for, write, PoolProcess};

/// `q -af` of one job.
fn job(state: &Path, dir: &Path, id: &str, attrs: &[&str]) -> String {
    let mut args = vec!["q", id, "-af"];
    args.extend_from_slice(attrs);
    ok(run(state, dir, &args)).trim().to_string()
}

/// Submits `text` as `name` and gives the cluster.
fn submit(state: &Path, dir: &Path, name: &str, text: &str) -> String {
    write(&dir.join(name), text);
    let s = ok(run(state, dir, &["submit", name]));
    s.trim()
        .rsplit(' ')
        .next()
        .unwrap()
        .trim_end_matches('.')
        .to_string()
}

#[test]
fn a_job_has_htcondor_s_global_job_id() {
    let dir = scratch("habits-gjid");
    let state = dir.join("state");
    let _pool = PoolProcess::start(&state, &[("NUM_CPUS", "1"), ("START", "false")]);
    let cluster = submit(&state, &dir, "j.sub", "executable = /bin/true\nqueue 2\n");
    let schedd = ok(run(&state, &dir, &["status", "-schedd", "-af", "Name"]));
    for proc_ in ["0", "1"] {
        let id = format!("{cluster}.{proc_}");
        let line = job(&state, &dir, &id, &["GlobalJobId", "QDate"]);
        let (gjid, qdate) = line.split_once(' ').unwrap();
        // condor_schedd's NewProc: `<schedd name>#<cluster>.<proc>#<time>`.
        let parts: Vec<&str> = gjid.split('#').collect();
        assert_eq!(parts.len(), 3, "{gjid}");
        assert_eq!(parts[0], schedd.trim(), "{gjid}");
        assert_eq!(parts[1], id, "{gjid}");
        let t: i64 = parts[2].parse().unwrap();
        let q: i64 = qdate.parse().unwrap();
        assert!((t - q).abs() <= 1, "{gjid} vs QDate {qdate}");
    }
    let long = ok(run(&state, &dir, &["q", &format!("{cluster}.0"), "-l"]));
    assert!(long.contains("\nGlobalJobId = \""), "{long}");
}

/// A parallel-universe job on a personal pool whose slots name its schedd
/// as their dedicated scheduler: its three nodes run at once, one per
/// slot, each with its own `$(Node)` and HTCondor's _CONDOR_PROCNO and
/// _CONDOR_NPROCS. (WAIT_FOR_ALL: under the default policy node 0's exit
/// stops the others, which may be before their output is back.)
#[test]
fn a_parallel_universe_job_runs_its_nodes_on_the_dedicated_slots() {
    let dir = scratch("habits-parallel");
    let state = dir.join("state");
    let _pool = PoolProcess::start(
        &state,
        &[
            ("NUM_CPUS", "3"),
            ("SCHEDD_NAME", "ded@personal.test"),
            (
                "DedicatedScheduler",
                "\"DedicatedScheduler@ded@personal.test\"",
            ),
            ("STARTD_ATTRS", "DedicatedScheduler"),
            ("START", "Scheduler =?= $(DedicatedScheduler)"),
        ],
    );
    let cluster = submit(
        &state,
        &dir,
        "p.sub",
        "universe = parallel\nexecutable = /bin/sh\n\
         arguments = \"-c 'echo $_CONDOR_PROCNO of $_CONDOR_NPROCS'\"\n\
         output = out.$(Node)\nmachine_count = 3\n\
         +ParallelShutdownPolicy = \"WAIT_FOR_ALL\"\nqueue\n",
    );
    wait_for(60, "the parallel job to finish", || {
        let o = ok(run(&state, &dir, &["q", "-af", "ClusterId"]));
        o.trim().is_empty().then_some(())
    });
    for n in 0..3 {
        let text = std::fs::read_to_string(dir.join(format!("out.{n}"))).unwrap_or_default();
        assert_eq!(text, format!("{n} of 3\n"), "node {n}");
    }
    let h = ok(run(
        &state,
        &dir,
        &["history", &cluster, "-af", "JobStatus", "Scheduler"],
    ));
    assert_eq!(h.trim(), "4 undefined", "the job's own ad is not a node's");
}

#[test]
fn history_reads_the_history_itself_when_the_pool_is_down() {
    let dir = scratch("habits-history");
    let state = dir.join("state");
    let mut pool = PoolProcess::start(&state, &[("NUM_CPUS", "1")]);
    let cluster = submit(
        &state,
        &dir,
        "j.sub",
        "executable = /bin/echo\narguments = hi\nqueue 2\n",
    );
    wait_for(30, "the jobs to finish", || {
        let o = ok(run(&state, &dir, &["q", "-allusers", "-af", "ClusterId"]));
        o.trim().is_empty().then_some(())
    });
    let live = ok(run(
        &state,
        &dir,
        &["history", "-af", "ClusterId", "ProcId"],
    ));
    pool.stop();
    // No schedd answers now; condor_history reads the file itself.
    let down = run(&state, &dir, &["history", "-af", "ClusterId", "ProcId"]);
    assert!(down.status.success(), "{}", err(&down));
    assert_eq!(out(&down), live);
    assert_eq!(out(&down), format!("{cluster} 1\n{cluster} 0\n"));
    // Its options too: a job, -limit, -constraint.
    assert_eq!(
        ok(run(
            &state,
            &dir,
            &["history", &format!("{cluster}.0"), "-af", "ProcId"]
        )),
        "0\n"
    );
    assert_eq!(
        ok(run(
            &state,
            &dir,
            &["history", "-limit", "1", "-af", "ProcId"]
        )),
        "1\n"
    );
    assert_eq!(
        ok(run(
            &state,
            &dir,
            &["history", "-constraint", "ProcId == 0", "-af", "Args"]
        )),
        "hi\n"
    );
    // Where no pool ever ran, it says how to start one.
    let none = run(&dir.join("never"), &dir, &["history"]);
    assert_eq!(none.status.code(), Some(2));
    assert!(err(&none).contains("no pool is running"), "{}", err(&none));
}

#[test]
fn a_bad_constraint_shows_what_the_user_typed_with_a_caret() {
    let dir = scratch("habits-constraint");
    let state = dir.join("state");
    let _pool = PoolProcess::start(&state, &[("NUM_CPUS", "1")]);
    let caret = "-constraint:1:9: expected an expression, found end of input\n  \
                 | Owner ==\n  |         ^\n";
    for tool in [
        &["q", "1", "-constraint", "Owner =="][..],
        &["history", "-constraint", "Owner =="],
        &["rm", "-constraint", "Owner =="],
        &["hold", "-constraint", "Owner =="],
        &["status", "-constraint", "Owner =="],
    ] {
        let o = run(&state, &dir, tool);
        assert_eq!(o.status.code(), Some(2), "{tool:?}");
        assert_eq!(err(&o), caret, "{tool:?}");
    }
    // Without a pool too: the text is checked before anyone is asked.
    let o = run(&dir.join("never"), &dir, &["q", "-constraint", "Owner =="]);
    assert_eq!(err(&o), caret);
}

/// `q -better-analyze` of `job` against four 8 GiB slots, from ad files.
fn analyze(dir: &Path, job: &str) -> String {
    let jobs = dir.join("job.ads");
    let slots = dir.join("slots.ads");
    std::fs::write(&jobs, job).unwrap();
    let mut s = String::new();
    for i in 0..4 {
        s.push_str(&format!(
            "MyType = \"Machine\"\nName = \"slot1@node{i}\"\nMachine = \"node{i}\"\n\
             Arch = \"X86_64\"\nOpSys = \"LINUX\"\nMemory = 8192\nCpus = 1\nDisk = 1000000\n\
             State = \"Unclaimed\"\nActivity = \"Idle\"\nStart = true\nRequirements = START\n\n"
        ));
    }
    std::fs::write(&slots, s).unwrap();
    let o = std::process::Command::new(bin())
        .env("CONDOR_CONFIG", "ONLY_ENV")
        .args(["q", "-better-analyze", "-jobads"])
        .arg(&jobs)
        .arg("-slotads")
        .arg(&slots)
        .arg("1.0")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}{}", out(&o), err(&o));
    out(&o)
}

#[test]
fn better_analyze_says_request_memory_is_undefined() {
    let dir = scratch("habits-analyze");
    let head = "MyType = \"Job\"\nClusterId = 1\nProcId = 0\nOwner = \"alice\"\nJobUniverse = 5\n\
                Requirements = (TARGET.Arch == \"X86_64\") && (TARGET.Memory >= RequestMemory)\n";
    // RequestMemory = undefined, and no RequestMemory at all.
    for job in [
        format!("{head}RequestMemory = undefined\n\n"),
        format!("{head}\n"),
    ] {
        let text = analyze(&dir, &job);
        assert!(
            text.contains(
                "the job's RequestMemory is undefined, so the clause is undefined for every slot \
                 (give the job it: `request_memory = ...` in the submit description)"
            ),
            "{text}"
        );
        assert!(!text.contains(">= undefined"), "{text}");
        assert!(!text.contains("no slot defines"), "{text}");
    }
}

#[test]
fn submit_errors_name_file_line_and_column_with_a_caret() {
    let dir = scratch("habits-submit");
    let state = dir.join("state");
    write(
        &dir.join("bad.sub"),
        "executable = /bin/true\nrequirements = Memory >= && true\nqueue\n",
    );
    let o = command(&state, &[])
        .args(["submit", "bad.sub", "-dry-run", "-"])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        err(&o),
        "bad.sub:2:26: requirements: the value is not a ClassAd expression (expected an \
         expression, found '&&'): Requirements = Memory >= && true\n    \
         requirements = Memory >= && true\n                             ^\n"
    );
    write(
        &dir.join("plus.sub"),
        "executable = /bin/true\n+Foo   =  (1 +\nqueue\n",
    );
    let o = command(&state, &[])
        .args(["submit", "plus.sub", "-dry-run", "-"])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(
        err(&o).starts_with("plus.sub:2:15: MY.Foo: "),
        "{}",
        err(&o)
    );
    assert!(
        err(&o).ends_with("    +Foo   =  (1 +\n                  ^\n"),
        "{}",
        err(&o)
    );
}

#[test]
fn user_home_is_resolved_by_the_tools_and_the_schedd() {
    let dir = scratch("habits-userhome");
    let state = dir.join("state");
    let _pool = PoolProcess::start(&state, &[("NUM_CPUS", "1"), ("START", "false")]);
    let cluster = submit(
        &state,
        &dir,
        "j.sub",
        "executable = /bin/true\n+Home = userHome(Owner, \"none\")\nqueue\n",
    );
    let passwd = std::process::Command::new("getent")
        .args(["passwd", &common::me()])
        .output()
        .unwrap();
    let home = out(&passwd).trim().split(':').nth(5).unwrap().to_string();
    // The tool evaluates -af in an Env that finds users' homes.
    assert_eq!(
        ok(run(&state, &dir, &["q", &cluster, "-af", "Home"])).trim(),
        home
    );
    // The schedd evaluates the constraint in one too.
    let matching = format!("userHome(Owner, \"none\") == \"{home}\"");
    assert_eq!(
        ok(run(
            &state,
            &dir,
            &["q", "-constraint", &matching, "-af", "ClusterId"]
        ))
        .trim(),
        cluster
    );
    // CLASSAD_ENABLE_USER_HOME = false turns it off, as in HTCondor.
    let off = command(&state, &[("CLASSAD_ENABLE_USER_HOME", "false")])
        .args(["q", &cluster, "-af", "Home"])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert_eq!(out(&off).trim(), "none", "{}", err(&off));
}

/// A startd configured for VM hosts says at start what it will do, in
/// the manual's terms (the behaviour itself: `vm_hosts.rs`).
#[test]
fn a_startd_configured_for_vm_hosts_says_what_it_does() {
    let dir = scratch("habits-vmp");
    let state = dir.join("state");
    let pool = PoolProcess::start(
        &state,
        &[
            ("NUM_CPUS", "1"),
            ("VMP_VM_LIST", "vm1.example.org, vm2.example.org"),
        ],
    );
    wait_for(30, "the startd's note", || {
        pool.daemon_log()
            .contains(
                "VMP_VM_LIST: this host runs the inner virtual machines vm1.example.org, \
                 vm2.example.org: START is False while one of them runs a job",
            )
            .then_some(())
    });
}
