//! The administrative tools end to end on a real pool: `status`
//! (condor_status) in its formats, `vacate`, `drain`, `userprio` and
//! `reconfig`, each against `pool up` as a child process.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use common::{err, me, ok, out, run, scratch, wait_for, write, PoolProcess};

const TWO_SLOTS: &[(&str, &str)] = &[("NUM_CPUS", "2")];

/// The `status -af` lines of the pool in `state`.
fn af(state: &Path, dir: &Path, attrs: &[&str]) -> Vec<String> {
    let mut args = vec!["status", "-af"];
    args.extend_from_slice(attrs);
    ok(run(state, dir, &args))
        .lines()
        .map(str::to_string)
        .collect()
}

/// `q -af` of one job.
fn job(state: &Path, dir: &Path, id: &str, attrs: &[&str]) -> String {
    let mut args = vec!["q", id, "-af"];
    args.extend_from_slice(attrs);
    ok(run(state, dir, &args)).trim().to_string()
}

/// The machine's name, as the slot ads give it.
fn machine(state: &Path, dir: &Path) -> String {
    af(state, dir, &["Machine"])[0].clone()
}

/// Submits `sleep 30` (with `extra` submit lines) and waits until it runs.
fn run_a_sleeper(state: &Path, dir: &Path, extra: &str) -> String {
    write(
        &dir.join("sleep.sub"),
        &format!("executable = /bin/sleep\narguments = 30\n{extra}queue\n"),
    );
    let s = ok(run(state, dir, &["submit", "sleep.sub"]));
    let cluster = s
        .trim()
        .rsplit(' ')
        .next()
        .unwrap()
        .trim_end_matches('.')
        .to_string();
    let id = format!("{cluster}.0");
    wait_for(20, "the job to run", || {
        (job(state, dir, &id, &["JobStatus"]) == "2").then_some(())
    });
    id
}

#[test]
fn status_shows_the_slots_in_condor_status_formats() {
    let dir = scratch("admin-status");
    let state = dir.join("state");
    let _pool = PoolProcess::start(&state, TWO_SLOTS);
    let t = |args: &[&str]| run(&state, &dir, args);
    let host = machine(&state, &dir);
    let (s1, s2) = (format!("slot1@{host}"), format!("slot2@{host}"));

    // The default table: headings, a blank line, a row per slot, the totals.
    let table = ok(t(&["status"]));
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(
        lines[0].split_whitespace().collect::<Vec<_>>(),
        [
            "Name",
            "OpSys",
            "Arch",
            "State",
            "Activity",
            "LoadAv",
            "Mem",
            "ActvtyTime"
        ],
        "{table}"
    );
    assert_eq!(lines[1], "", "{table}");
    for (line, name) in [(lines[2], &s1), (lines[3], &s2)] {
        let cells: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(cells.len(), 8, "{table}");
        assert_eq!(cells[0], name.as_str(), "{table}");
        assert_eq!(cells[1], "LINUX", "{table}");
        assert_eq!(&cells[3..5], ["Unclaimed", "Idle"], "{table}");
        assert!(cells[5].parse::<f64>().is_ok(), "LoadAv {table}");
        assert!(cells[6].parse::<u64>().is_ok(), "Mem {table}");
        assert!(
            cells[7].starts_with("0+00:0") && cells[7].len() == 10,
            "ActvtyTime {table}"
        );
    }
    assert!(
        lines[5]
            .ends_with("Total Owner Claimed Unclaimed Matched Preempting  Drain Backfill BkIdle"),
        "{table}"
    );
    let total = lines.last().unwrap();
    assert_eq!(
        total.split_whitespace().collect::<Vec<_>>(),
        ["Total", "2", "0", "0", "2", "0", "0", "0", "0", "0"],
        "{table}"
    );
    // The platform line: Arch/OpSys, then the same counts.
    let platform = lines[7];
    assert!(
        platform
            .trim_start()
            .starts_with(&format!("{}/LINUX", af(&state, &dir, &["Arch"])[0])),
        "{table}"
    );
    assert_eq!(
        platform.split_whitespace().skip(1).collect::<Vec<_>>(),
        total.split_whitespace().skip(1).collect::<Vec<_>>(),
        "{table}"
    );

    // -af, -constraint, names, -l, -json, -total, -compact.
    assert_eq!(
        af(&state, &dir, &["Name", "State", "Cpus"]),
        [format!("{s1} Unclaimed 1"), format!("{s2} Unclaimed 1")]
    );
    assert_eq!(
        ok(t(&["status", "-constraint", "SlotID == 2", "-af", "Name"])),
        format!("{s2}\n")
    );
    assert_eq!(ok(t(&["status", &s1, "-af", "SlotID"])), "1\n");
    assert_eq!(ok(t(&["status", &host, "-af", "SlotID"])), "1\n2\n");
    assert_eq!(ok(t(&["status", "-constraint", "Cpus > 100"])), "");
    let long = ok(t(&["status", "-l"]));
    let ads: Vec<&str> = long
        .split("\n\n")
        .filter(|a| !a.trim().is_empty())
        .collect();
    assert_eq!(ads.len(), 2, "{long}");
    assert!(ads[0].contains(&format!("Name = \"{s1}\"")), "{long}");
    assert!(
        ads[1].lines().any(|l| l == "State = \"Unclaimed\""),
        "{long}"
    );
    let json: serde_json::Value = serde_json::from_str(&ok(t(&["status", "-json"]))).unwrap();
    assert_eq!(json.as_array().map(Vec::len), Some(2), "{json}");
    assert_eq!(json[1]["Name"], s2.as_str());
    assert_eq!(json[0]["MyType"], "Machine");
    let totals = ok(t(&["status", "-total"]));
    assert!(
        totals.starts_with('\n') && !totals.contains("slot1"),
        "{totals}"
    );
    assert!(
        totals
            .lines()
            .last()
            .unwrap()
            .trim_start()
            .starts_with("Total     2"),
        "{totals}"
    );
    let compact = ok(t(&["status", "-compact"]));
    let clines: Vec<&str> = compact.lines().collect();
    assert_eq!(
        clines[0].split_whitespace().take(10).collect::<Vec<_>>(),
        [
            "Machine", "Platform", "Slots", "Cpus", "Gpus", "TotalGb", "FreCpu", "FreeGb",
            "CpuLoad", "ST"
        ],
        "{compact}"
    );
    let row: Vec<&str> = clines[2].split_whitespace().collect();
    assert_eq!(row[0], host, "{compact}");
    assert!(
        row[1].starts_with("x64/") || row[1].contains('/'),
        "{compact}"
    );
    assert_eq!(&row[2..4], ["2S", "2"], "{compact}");
    assert_eq!(row[6], "2", "FreCpu {compact}");
    assert_eq!(row[9], "Ui", "ST {compact}");
    assert_eq!(
        clines.iter().filter(|l| l.starts_with(&host)).count(),
        1,
        "{compact}"
    );

    // A constraint that does not parse is refused as typed, exit 2.
    let bad = t(&["status", "-constraint", "State =="]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        err(&bad).starts_with("-constraint:1:9: ") && err(&bad).contains("| State ==\n"),
        "{}",
        err(&bad)
    );
}

#[test]
fn a_running_job_shows_claimed_busy_is_charged_and_vacate_evicts_it() {
    let dir = scratch("admin-vacate");
    let state = dir.join("state");
    let _pool = PoolProcess::start(&state, TWO_SLOTS);
    let t = |args: &[&str]| run(&state, &dir, args);
    let host = machine(&state, &dir);

    // Runs once: once evicted it matches no slot, so it stays idle.
    let id = run_a_sleeper(
        &state,
        &dir,
        "requirements = (NumJobStarts =?= undefined) || (NumJobStarts < 1)\n",
    );
    let slot = job(&state, &dir, &id, &["RemoteHost"]);
    let rows = af(&state, &dir, &["Name", "State", "Activity", "JobId"]);
    assert!(
        rows.contains(&format!("{slot} Claimed Busy {id}")),
        "{rows:?}"
    );
    let table = ok(t(&["status"]));
    let row = table
        .lines()
        .find(|l| l.starts_with(&slot))
        .unwrap_or_else(|| panic!("{table}"));
    assert_eq!(
        row.split_whitespace().collect::<Vec<_>>()[3..5],
        ["Claimed", "Busy"],
        "{table}"
    );
    assert_eq!(
        table
            .lines()
            .last()
            .unwrap()
            .split_whitespace()
            .collect::<Vec<_>>(),
        ["Total", "2", "0", "1", "1", "0", "0", "0", "0", "0"],
        "{table}"
    );

    // The collector also holds the access point's ad and one per
    // submitter, with their job counts.
    let subs = ok(t(&[
        "status",
        "-submitters",
        "-af",
        "Name",
        "RunningJobs",
        "IdleJobs",
    ]));
    assert!(
        subs.lines()
            .any(|l| l.starts_with(&format!("{}@", me())) && l.ends_with(" 1 0")),
        "{subs}"
    );
    let schedd = ok(t(&["status", "-schedd"]));
    assert!(
        schedd.starts_with("Name") && schedd.contains("RunningJobs IdleJobs HeldJobs"),
        "{schedd}"
    );
    assert_eq!(
        ok(t(&["status", "-schedd", "-af", "TotalRunningJobs"])).trim(),
        "1",
        "{schedd}"
    );

    // userprio: the user runs one slot; -setfactor changes the factor.
    let user_row = |text: &str| -> Vec<String> {
        text.lines()
            .find(|l| {
                let name = l.split_whitespace().next().unwrap_or("");
                name == me() || name.starts_with(&format!("{}@", me()))
            })
            .unwrap_or_else(|| panic!("no row for {}: {text}", me()))
            .split_whitespace()
            .map(str::to_string)
            .collect()
    };
    let prio = ok(t(&["userprio"]));
    assert!(prio.starts_with("Last Priority Update: "), "{prio}");
    assert!(
        prio.lines().nth(2).unwrap().starts_with("User Name")
            && prio.contains("In Use (wghted-hrs) Last Usage"),
        "{prio}"
    );
    let cells = user_row(&prio);
    assert_eq!(cells.len(), 6, "{prio}");
    assert_eq!(cells[3], "1", "In Use {prio}");
    assert_eq!(cells[5], "<now>", "{prio}");
    assert!(
        prio.lines()
            .last()
            .unwrap()
            .starts_with("Number of users: 1"),
        "{prio}"
    );
    let user = cells[0].clone();
    assert_eq!(
        ok(t(&["userprio", "-setfactor", &user, "2"])),
        format!("The priority factor of {user} was set to 2.000000\n")
    );
    assert_eq!(user_row(&ok(t(&["userprio"])))[2], "2.00");
    let all = ok(t(&["userprio", "-all"]));
    assert!(all.contains("Real") && all.contains("Start Time"), "{all}");
    let bad = t(&["userprio", "-setfactor", &user, "0.5"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(err(&bad).contains("Priority factors must be greater than or equal to 1."));

    // vacate the job's slot: it goes back to idle, and stays there.
    assert_eq!(
        ok(t(&["vacate", &slot])),
        format!("Sent \"Vacate-Claim\" command to startd {slot}\n")
    );
    wait_for(20, "the job to be evicted", || {
        (job(&state, &dir, &id, &["JobStatus"]) == "1").then_some(())
    });
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        job(&state, &dir, &id, &["JobStatus", "NumJobStarts"]),
        "1 1"
    );
    // Every slot, -fast; and a name that is no slot.
    assert_eq!(
        ok(t(&["vacate", "-fast"])),
        "Sent \"Vacate-All-Claims-Fast\" command to local startd\n"
    );
    assert_eq!(
        ok(t(&["vacate", &host])),
        format!("Sent \"Vacate-All-Claims\" command to startd {host}\n")
    );
    let none = t(&["vacate", "slot9"]);
    assert_eq!(none.status.code(), Some(2));
    assert!(
        err(&none).contains("no slot or machine named slot9"),
        "{}",
        err(&none)
    );
}

/// A drain's CheckExpr (`-check`), as HTCondor's startd: refused unless
/// it is true in every slot's ad, and then nothing drains.
#[test]
fn drain_with_a_check_expression_that_is_false_on_a_slot_is_refused() {
    let dir = scratch("admin-drain-check");
    let state = dir.join("state");
    let _pool = PoolProcess::start(&state, TWO_SLOTS);
    let t = |args: &[&str]| run(&state, &dir, args);
    let host = machine(&state, &dir);

    let refused = t(&["drain", "-fast", "-check", "SlotID == 1"]);
    assert_eq!(refused.status.code(), Some(2), "{}", err(&refused));
    assert!(
        err(&refused).contains("Draining check expression is false on slot2@"),
        "{}",
        err(&refused)
    );
    let not_bool = t(&["drain", "-fast", "-check", "\"yes\""]);
    assert_eq!(not_bool.status.code(), Some(2));
    assert!(
        err(&not_bool).contains("does not evaluate to a bool"),
        "{}",
        err(&not_bool)
    );
    std::thread::sleep(Duration::from_millis(500));
    assert!(af(&state, &dir, &["State"]).iter().all(|s| s != "Drained"));

    // True on every slot: drained.
    assert_eq!(
        ok(t(&["drain", "-fast", "-check", "SlotID >= 1 && Cpus >= 1"])),
        format!("Sent request to drain {host}\n")
    );
    wait_for(20, "the slots to drain", || {
        let states = af(&state, &dir, &["State"]);
        (states == ["Drained", "Drained"]).then_some(())
    });
}

#[test]
fn drain_fast_drains_the_slots_and_cancel_brings_them_back() {
    let dir = scratch("admin-drain");
    let state = dir.join("state");
    let _pool = PoolProcess::start(&state, TWO_SLOTS);
    let t = |args: &[&str]| run(&state, &dir, args);
    let host = machine(&state, &dir);
    let id = run_a_sleeper(&state, &dir, "");

    assert_eq!(
        ok(t(&["drain", "-fast", "-reason", "maintenance"])),
        format!("Sent request to drain {host}\n")
    );
    wait_for(20, "the slots to drain", || {
        let states = af(&state, &dir, &["State"]);
        (states == ["Drained", "Drained"]).then_some(())
    });
    // The job was killed and is idle again; nothing starts while drained.
    assert_eq!(job(&state, &dir, &id, &["JobStatus"]), "1");
    let table = ok(t(&["status"]));
    assert_eq!(
        table
            .lines()
            .last()
            .unwrap()
            .split_whitespace()
            .collect::<Vec<_>>(),
        ["Total", "2", "0", "0", "0", "0", "0", "2", "0", "0"],
        "{table}"
    );
    assert!(
        table
            .lines()
            .filter(|l| l.starts_with("slot"))
            .all(|l| l.contains(" Drained ")),
        "{table}"
    );
    let again = t(&["drain"]);
    assert_eq!(again.status.code(), Some(2));
    assert!(err(&again).contains("already draining"), "{}", err(&again));

    assert_eq!(
        ok(t(&["drain", "-cancel"])),
        format!("Sent request to cancel draining on {host}\n")
    );
    wait_for(20, "the slots to come back", || {
        af(&state, &dir, &["State"])
            .iter()
            .all(|s| s != "Drained")
            .then_some(())
    });
    let not = t(&["drain", "-cancel"]);
    assert_eq!(not.status.code(), Some(2));
    assert!(err(&not).contains("not draining"), "{}", err(&not));
    let wrong = t(&["drain", "no-such-host"]);
    assert_eq!(wrong.status.code(), Some(2));
    assert!(err(&wrong).contains("no machine named no-such-host"));
}

/// A pool whose configuration is the file `config` (CONDOR_CONFIG), so
/// that `reconfig` has something to read again. (`CONDOR_CONFIG=ONLY_ENV`
/// reads no LOCAL_CONFIG_FILE, as in HTCondor.) Killed when dropped.
struct FilePool {
    child: Child,
}

impl FilePool {
    fn start(state: &Path, config: &Path) -> FilePool {
        let log = std::fs::File::create(state.with_extension("daemon.log")).unwrap();
        let child = common::command(state, &[])
            .env("CONDOR_CONFIG", config)
            .args(["pool", "up", "--state"])
            .arg(state)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        let pool = FilePool { child };
        let deadline = Instant::now() + Duration::from_secs(20);
        while !run(state, &std::env::temp_dir(), &["q", "-af", "ClusterId"])
            .status
            .success()
        {
            assert!(Instant::now() < deadline, "the pool did not come up");
            std::thread::sleep(Duration::from_millis(25));
        }
        pool
    }
}

impl Drop for FilePool {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn reconfig_reads_the_configuration_again_and_refuses_a_broken_one() {
    let dir = scratch("admin-reconfig");
    let state = dir.join("state");
    let config: PathBuf = dir.join("condor_config");
    write(&config, "NUM_CPUS = 2\n");
    let _pool = FilePool::start(&state, &config);
    let t = |args: &[&str]| run(&state, &dir, args);
    assert_eq!(
        af(&state, &dir, &["START", "Site"]),
        ["true undefined", "true undefined"]
    );

    // New policy and a new attribute, read without a restart.
    write(
        &config,
        "NUM_CPUS = 2\nSTART = False\nSite = \"lab\"\nSTARTD_ATTRS = $(STARTD_ATTRS) Site\n",
    );
    assert_eq!(
        ok(t(&["reconfig"])),
        "Sent \"Reconfig\" command to local master\n"
    );
    assert_eq!(
        af(&state, &dir, &["START", "Site"]),
        ["false lab", "false lab"]
    );
    // Nothing starts now.
    write(&dir.join("j.sub"), "executable = /bin/true\nqueue\n");
    ok(t(&["submit", "j.sub"]));
    std::thread::sleep(Duration::from_millis(700));
    assert_eq!(job(&state, &dir, "1.0", &["JobStatus"]), "1");

    // A broken file: refused with the file and line; the pool keeps the
    // configuration in force and keeps running.
    write(
        &config,
        "NUM_CPUS = 2\nSTART = True\nthis is not a definition\n",
    );
    let bad = t(&["reconfig"]);
    assert_eq!(bad.status.code(), Some(2), "{}", out(&bad));
    let why = err(&bad);
    assert!(
        why.contains("the configuration was not changed")
            && why.contains(&format!("{}:3:", config.display())),
        "{why}"
    );
    assert_eq!(
        af(&state, &dir, &["START", "Site"]),
        ["false lab", "false lab"]
    );
    // A START that is no expression names it.
    write(&config, "NUM_CPUS = 2\nSTART = 1 +\n");
    let bad = t(&["reconfig"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(err(&bad).contains("START"), "{}", err(&bad));

    // Someone who is not the pool's owner is refused (only testable as root,
    // where the pool runs as nobody and another user can be had).
    if common::run_as().is_some() {
        use std::os::unix::process::CommandExt;
        let o = std::process::Command::new(common::bin())
            .env("FERROCONDOR_STATE", &state)
            .env("CONDOR_CONFIG", "ONLY_ENV")
            .arg("reconfig")
            .uid(1)
            .gid(1)
            .current_dir(&dir)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2));
        assert!(err(&o).contains("permission denied"), "{}", err(&o));
    }
    assert_eq!(af(&state, &dir, &["Site"]), ["lab", "lab"]);
}

#[test]
fn drain_graceful_quick_start_reason_and_resume_on_completion() {
    let dir = scratch("admin-drain-options");
    let state = dir.join("state");
    // Jobs may retire for an hour: -graceful waits for them, -quick not.
    let _pool = PoolProcess::start(
        &state,
        &[("NUM_CPUS", "2"), ("MAXJOBRETIREMENTTIME", "3600")],
    );
    let t = |args: &[&str]| run(&state, &dir, args);
    let host = machine(&state, &dir);
    let id = run_a_sleeper(&state, &dir, "");
    let slot = job(&state, &dir, &id, &["RemoteHost"]);

    // -graceful: the running job keeps its slot (retiring), the idle slot
    // drains; the reason and -start's expression are in the slot ads.
    assert_eq!(
        ok(t(&[
            "drain",
            "-graceful",
            "-reason",
            "kernel update",
            "-start",
            "Owner == \"nobody\"",
        ])),
        format!("Sent request to drain {host}\n")
    );
    wait_for(20, "the idle slot to drain", || {
        af(&state, &dir, &["State"])
            .contains(&"Drained".to_string())
            .then_some(())
    });
    let rows = af(&state, &dir, &["Name", "State", "Activity", "DrainReason"]);
    assert!(
        rows.contains(&format!("{slot} Claimed Retiring kernel update")),
        "{rows:?}"
    );
    // START while draining is -start's expression (printed unevaluated).
    let start = ok(t(&["status", &slot, "-af:r", "Start"]));
    assert_eq!(start.trim(), "Owner == \"nobody\"", "{start}");
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(job(&state, &dir, &id, &["JobStatus"]), "2");

    // -cancel; then -quick: the job gets only its vacate time, and goes
    // back to idle; without -reason the reason is "by USER".
    ok(t(&["drain", "-cancel"]));
    wait_for(20, "the drain to end", || {
        (af(&state, &dir, &["Draining"]) == ["undefined", "undefined"]).then_some(())
    });
    ok(t(&["drain", "-quick"]));
    wait_for(20, "the slots to drain", || {
        (af(&state, &dir, &["State"]) == ["Drained", "Drained"]).then_some(())
    });
    assert_eq!(job(&state, &dir, &id, &["JobStatus"]), "1");
    assert_eq!(
        af(&state, &dir, &["DrainReason"]),
        [format!("by {}", me()), format!("by {}", me())]
    );
    ok(t(&["drain", "-cancel"]));
    ok(t(&["rm", &id]));
    wait_for(20, "the drain to end", || {
        (af(&state, &dir, &["Draining"]) == ["undefined", "undefined"]).then_some(())
    });

    // -resume-on-completion: once every slot is drained, they come back
    // by themselves (no -cancel), and a new drain is accepted.
    ok(t(&["drain", "-resume-on-completion"]));
    wait_for(20, "the drain to complete and end", || {
        let rows = af(&state, &dir, &["State", "Draining"]);
        (rows == ["Unclaimed undefined", "Unclaimed undefined"]).then_some(())
    });
    let not = t(&["drain", "-cancel"]);
    assert!(err(&not).contains("not draining"), "{}", err(&not));
}

#[test]
fn userprio_setprio_resetusage_and_allusers() {
    let dir = scratch("admin-userprio");
    let state = dir.join("state");
    let _pool = PoolProcess::start(&state, TWO_SLOTS);
    let t = |args: &[&str]| run(&state, &dir, args);
    let id = run_a_sleeper(&state, &dir, "");
    let row = |text: &str, name: &str| -> Vec<String> {
        text.lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("no row for {name}: {text}"))
            .split_whitespace()
            .map(str::to_string)
            .collect()
    };
    let prio = ok(t(&["userprio"]));
    let user = prio
        .lines()
        .find(|l| l.starts_with(&format!("{}@", me())))
        .and_then(|l| l.split_whitespace().next())
        .unwrap_or_else(|| panic!("{prio}"))
        .to_string();

    // -setprio sets the real priority (the effective one with factor 1).
    assert_eq!(
        ok(t(&["userprio", "-setprio", &user, "25"])),
        format!("The priority of {user} was set to 25.000000\n")
    );
    let cells = row(&ok(t(&["userprio"])), &user);
    let effective: f64 = cells[1].parse().unwrap();
    let factor: f64 = cells[2].parse().unwrap();
    let real = effective / factor;
    assert!((24.9..=25.1).contains(&real), "{cells:?}");

    // A submitter never active in the last day shows only with -allusers.
    let ghost = format!("ghost@{}", user.split_once('@').unwrap().1);
    ok(t(&["userprio", "-setprio", &ghost, "3"]));
    let recent = ok(t(&["userprio"]));
    assert!(!recent.contains("ghost@"), "{recent}");
    let every = ok(t(&["userprio", "-allusers"]));
    assert!(every.contains(&ghost), "{every}");

    // -resetusage: the usage is zero and counted from now.
    let before = row(&ok(t(&["userprio", "-all", "-allusers"])), &ghost);
    assert_eq!(
        ok(t(&["userprio", "-resetusage", &ghost])),
        format!("The accumulated usage of {ghost} was reset\n")
    );
    let after = row(&ok(t(&["userprio", "-all", "-allusers"])), &ghost);
    // Total Usage, then Usage Start Time: none before, a date now.
    assert_eq!(after[5], "0.00", "{after:?}");
    assert!(!before[6].contains('/'), "{before:?}");
    assert!(after[6].contains('/'), "{after:?}");
    ok(t(&["rm", &id]));
}

/// HTCondor's `-pool` and `-name`: the tools reach a pool and an access
/// point that no local address file names (here, from a state directory
/// of no pool at all), through the collector.
#[test]
fn pool_and_name_reach_an_access_point_through_the_collector() {
    let dir = scratch("admin-pool-name");
    let state = dir.join("state");
    let _pool = PoolProcess::start(&state, &[("NUM_CPUS", "1"), ("START", "false")]);
    let collector = std::fs::read_to_string(state.join(".collector_address")).unwrap();
    let collector = collector.lines().next().unwrap().trim().to_string();
    let schedd = ok(run(&state, &dir, &["status", "-schedd", "-af", "Name"]));
    let schedd = schedd.trim().to_string();
    // Elsewhere: no pool here, so the local tools find none.
    let elsewhere = dir.join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let t = |args: &[&str]| run(&elsewhere, &dir, args);
    let none = t(&["q", "-af", "ClusterId"]);
    assert!(!none.status.success(), "{}", out(&none));
    assert!(err(&none).contains("no pool is running"), "{}", err(&none));

    write(&dir.join("j.sub"), "executable = /bin/true\nqueue 2\n");
    let submitted = ok(t(&[
        "submit", "-pool", &collector, "-name", &schedd, "j.sub",
    ]));
    assert!(
        submitted.contains("2 job(s) submitted to cluster 1."),
        "{submitted}"
    );
    assert_eq!(
        ok(t(&[
            "q", "-pool", &collector, "-name", &schedd, "-af", "ProcId"
        ])),
        "0\n1\n"
    );
    // -pool alone: the access point of this host's name at that collector.
    assert_eq!(
        ok(t(&["q", "-pool", &collector, "-af", "ProcId"])),
        "0\n1\n"
    );
    let slots = ok(t(&["status", "-pool", &collector, "-af", "Name"]));
    assert_eq!(slots.lines().count(), 1, "{slots}");
    assert_eq!(
        ok(t(&["rm", "-pool", &collector, "-name", &schedd, "1.0"])),
        "Job 1.0 marked for removal\n"
    );
    let h = ok(t(&[
        "history", "-pool", &collector, "-name", &schedd, "-af", "ProcId",
    ]));
    assert_eq!(h, "0\n");
    // An access point the collector does not know is said by its name.
    let bogus = t(&["q", "-pool", &collector, "-name", "nosuch", "-af", "ProcId"]);
    assert_eq!(bogus.status.code(), Some(2));
    assert!(
        err(&bogus).contains("knows no schedd named nosuch"),
        "{}",
        err(&bogus)
    );
    let _ = std::fs::remove_dir_all(&dir);
}
