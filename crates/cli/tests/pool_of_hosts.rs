//! A pool of many hosts (issue 15): a central manager (collector and
//! negotiator), an access point (schedd) and execute points (startds),
//! each host its own `ferrocondor master` with its own state directory
//! and configuration, talking HTCondor's protocol across the test bed's
//! network. The hosts hold the pool's signing key (HTCondor's pool
//! password model, every host with `passwords.d/POOL`) and a token for
//! the daemons' identity; an execute point whose token the pool did not
//! sign is refused by the collector and never runs a job.
//!
//! The hosts are network namespaces (`common/hosts.rs`); where they
//! cannot be made the test says `skipped:` and passes. The hosts share
//! the machine's file system: jobs here read and write their files in
//! place (a shared FILESYSTEM_DOMAIN).

mod common;
#[path = "common/hosts.rs"]
mod hosts;

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use common::{bin, err, me, out, run_as, scratch, write, PoolProcess};
use hosts::Hosts;

const CM: usize = 0;
const AP: usize = 1;
/// The execute points with the pool's token.
const EPS: [usize; 3] = [2, 3, 4];
/// An execute point whose token another key signed.
const ROGUE: usize = 5;

/// A command as the test's unprivileged user (the pool's user), with the
/// configuration file `config` only.
fn tool(config: &Path, home: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(bin());
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("_CONDOR_") {
            c.env_remove(k);
        }
    }
    c.env_remove("FERROCONDOR_STATE")
        .env("CONDOR_CONFIG", config)
        .env("HOME", home)
        .args(args);
    if let Some((uid, gid)) = run_as() {
        c.uid(uid).gid(gid);
    }
    c
}

/// Polls `f` every 200 ms for at most `secs`; the last answer in the
/// panic.
fn until(secs: u64, what: &str, mut f: impl FnMut() -> Result<(), String>) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        match f() {
            Ok(()) => return,
            Err(last) if Instant::now() > deadline => {
                panic!("timed out waiting for {what}; last: {last}")
            }
            Err(_) => std::thread::sleep(Duration::from_millis(200)),
        }
    }
}

fn both(o: &Output) -> String {
    format!("{}{}", out(o), err(o))
}

fn dir_for(base: &Path, name: &str) -> PathBuf {
    let d = base.join(name);
    std::fs::create_dir_all(&d).unwrap();
    if let Some((uid, gid)) = run_as() {
        std::os::unix::fs::chown(&d, Some(uid), Some(gid)).unwrap();
    }
    d
}

/// One host of the pool: its configuration, home and state.
struct Host {
    config: PathBuf,
    home: PathBuf,
    state: PathBuf,
}

#[test]
fn a_pool_of_a_central_manager_an_access_point_and_three_execute_points_runs_jobs_on_all() {
    let Some(hosts) = Hosts::or_skip(6) else {
        return;
    };
    let cm = hosts.addr(CM);
    for i in 0..6 {
        println!("host {i}: {} ({})", hosts.name(i), hosts.addr(i));
    }
    let base = scratch("pool-of-hosts");
    let user = me();
    let key = base.join("POOL");
    let rogue_key = base.join("ROGUE");
    let host = |i: usize, role: &str, extra: &str| -> Host {
        let dir = dir_for(&base, &format!("h{i}"));
        let config = dir.join("condor_config");
        write(
            &config,
            &format!(
                "COLLECTOR_HOST = {cm}:9618\n\
                 {role}\n\
                 UID_DOMAIN = hosts.test\n\
                 FILESYSTEM_DOMAIN = hosts.test\n\
                 SEC_DEFAULT_AUTHENTICATION_METHODS = FS, TOKEN\n\
                 SEC_TOKEN_POOL_SIGNING_KEY_FILE = {key}\n\
                 SEC_TOKEN_SYSTEM_DIRECTORY = {tokens}\n\
                 NUM_CPUS = 2\n\
                 POLLING_INTERVAL = 1\n\
                 NEGOTIATOR_INTERVAL = 2\n\
                 UPDATE_INTERVAL = 1\n\
                 PERIODIC_EXPR_INTERVAL = 1\n\
                 MASTER_BACKOFF_CONSTANT = 0\n\
                 MASTER_BACKOFF_FACTOR = 1.0\n\
                 {extra}\n",
                key = if i == ROGUE { &rogue_key } else { &key }.display(),
                tokens = dir.join("tokens.d").display(),
            ),
        );
        Host {
            config,
            home: dir_for(&dir, "home"),
            state: dir.join("state"),
        }
    };
    let all: Vec<Host> = (0..6)
        .map(|i| match i {
            CM => host(i, "DAEMON_LIST = MASTER, COLLECTOR, NEGOTIATOR", ""),
            AP => host(i, "DAEMON_LIST = MASTER, SCHEDD", ""),
            _ => host(
                i,
                "DAEMON_LIST = MASTER, STARTD",
                &format!("STARTD_NAME = ep{i}"),
            ),
        })
        .collect();
    let on = |i: usize, args: &[&str]| {
        let h = &all[i];
        let mut c = tool(&h.config, &h.home, args);
        c.env("FERROCONDOR_STATE", &h.state);
        hosts.output(i, &mut c)
    };

    // The central manager's key signs the daemons' token, which every
    // other host gets (as condor_token_create's output is copied to an
    // execute point's tokens.d); the rogue host's token is signed by a
    // key of its own, which the pool does not know.
    for (i, signer) in [(CM, CM), (ROGUE, ROGUE)] {
        let o = on(signer, &["token", "create-key"]);
        assert!(o.status.success(), "host {i}: {}", both(&o));
    }
    let token_from = |signer: usize| {
        let o = on(
            signer,
            &[
                "token",
                "create",
                "-identity",
                &format!("{user}@hosts.test"),
            ],
        );
        assert!(o.status.success(), "{}", both(&o));
        out(&o)
    };
    let token = token_from(CM);
    let rogue_token = token_from(ROGUE);
    for (i, h) in all.iter().enumerate() {
        let dir = dir_for(h.config.parent().unwrap(), "tokens.d");
        let t = if i == ROGUE { &rogue_token } else { &token };
        write(&dir.join("pool"), t);
        std::fs::set_permissions(
            dir.join("pool"),
            std::os::unix::fs::PermissionsExt::from_mode(0o600),
        )
        .unwrap();
    }

    // A master on every host, the central manager first.
    let mut masters = Vec::new();
    for (i, h) in all.iter().enumerate() {
        masters.push(PoolProcess::spawn_by(
            &h.state,
            tool(&h.config, &h.home, &[]),
            &["master"],
            |c| hosts.spawn(i, c),
        ));
    }
    let logs = |masters: &[PoolProcess]| -> String {
        masters
            .iter()
            .enumerate()
            .map(|(i, m)| format!("---- host {i} ----\n{}", m.daemon_log()))
            .collect()
    };

    // The collector hears from the three execute points with the pool's
    // token: two slots each, named after their startds.
    let mut slots = String::new();
    until(60, "the execute points' slots at the collector", || {
        let o = on(AP, &["status", "-af", "Name", "MyAddress"]);
        slots = out(&o);
        (slots.lines().count() == 6)
            .then_some(())
            .ok_or_else(|| format!("{}\n{}", both(&o), logs(&masters)))
    });
    println!("slots:\n{slots}");
    for &i in &EPS {
        let mine: Vec<&str> = slots
            .lines()
            .filter(|l| l.contains(&format!("@ep{i}@")))
            .collect();
        assert_eq!(mine.len(), 2, "host {i}: {slots}");
        assert!(
            mine.iter()
                .all(|l| l.contains(&format!("<{}:", hosts.addr(i)))),
            "the slots of host {i} give its address: {slots}"
        );
    }
    assert!(!slots.contains(&format!("ep{ROGUE}")), "{slots}");

    // Jobs submitted on the access point run on the execute points, each
    // writing where it ran.
    let work = dir_for(&base, "work");
    let ip = ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"]
        .iter()
        .find(|p| Path::new(p).exists())
        .unwrap();
    write(
        &work.join("jobs.sub"),
        &format!(
            "executable = /bin/sh\n\
             arguments = \"-c '{ip} -4 -o addr show dev eth0; sleep 1'\"\n\
             should_transfer_files = NO\n\
             output = out.$(Process)\n\
             error = err.$(Process)\n\
             queue 24\n"
        ),
    );
    let submit = {
        let h = &all[AP];
        let mut c = tool(&h.config, &h.home, &["submit", "jobs.sub"]);
        c.env("FERROCONDOR_STATE", &h.state).current_dir(&work);
        hosts.output(AP, &mut c)
    };
    assert!(submit.status.success(), "{}", both(&submit));
    until(120, "the 24 jobs to complete", || {
        let o = on(AP, &["history", "-af", "JobStatus", "ExitCode"]);
        let done = out(&o).lines().filter(|l| l.trim() == "4 0").count();
        (done == 24)
            .then_some(())
            .ok_or_else(|| format!("{done} done\n{}\n{}", both(&o), logs(&masters)))
    });
    let mut ran_on = std::collections::BTreeMap::new();
    for p in 0..24 {
        let text = std::fs::read_to_string(work.join(format!("out.{p}"))).unwrap_or_default();
        let host = (0..6)
            .find(|&i| text.contains(&format!("inet {}/24", hosts.addr(i))))
            .unwrap_or_else(|| panic!("job {p} says: {text:?}"));
        *ran_on.entry(host).or_insert(0) += 1;
    }
    println!("jobs per host: {ran_on:?}");
    assert!(
        ran_on.keys().all(|h| EPS.contains(h)),
        "jobs ran only on the execute points with the pool's token: {ran_on:?}"
    );
    assert_eq!(ran_on.len(), 3, "every execute point ran jobs: {ran_on:?}");
    // The history says where each job ran, by its slot.
    let o = on(AP, &["history", "-af", "LastRemoteHost"]);
    assert!(
        out(&o)
            .lines()
            .all(|l| l.starts_with("slot") && l.contains("@ep")),
        "{}",
        both(&o)
    );

    // The rogue execute point never got in: its startd could not
    // authenticate to the collector, and says so.
    let rogue = masters[ROGUE].daemon_log();
    assert!(rogue.contains("not reachable"), "{rogue}");
    drop(masters);
    drop(hosts);
}
