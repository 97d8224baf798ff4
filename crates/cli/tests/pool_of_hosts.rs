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

/// What runs on host `i` of a pool of `n`: host 0 the central manager,
/// host 1 the access point, the others execute points (`STARTD_NAME =
/// ep<i>`); `rogue` hosts' tokens are signed by a key the pool does not
/// know.
fn role_of(i: usize) -> &'static str {
    match i {
        CM => "DAEMON_LIST = MASTER, COLLECTOR, NEGOTIATOR",
        AP => "DAEMON_LIST = MASTER, SCHEDD",
        _ => "DAEMON_LIST = MASTER, STARTD",
    }
}

/// A pool on a bed of hosts, each with its master.
struct Pool {
    hosts: Hosts,
    all: Vec<Host>,
    masters: Vec<Option<PoolProcess>>,
    base: PathBuf,
}

impl Pool {
    /// `n` hosts with `extra` configuration on each; the hosts in `rogue`
    /// get a token the pool did not sign. None where hosts cannot be made.
    fn new(name: &str, n: usize, rogue: &[usize], extra: &str) -> Option<Pool> {
        let hosts = Hosts::or_skip(n)?;
        let cm = hosts.addr(CM);
        for i in 0..n {
            println!("host {i}: {} ({})", hosts.name(i), hosts.addr(i));
        }
        let base = scratch(name);
        dir_for(&base, "work");
        let user = me();
        let key = base.join("POOL");
        let rogue_key = base.join("ROGUE");
        let all: Vec<Host> = (0..n)
            .map(|i| {
                let dir = dir_for(&base, &format!("h{i}"));
                let config = dir.join("condor_config");
                let name = if i >= 2 {
                    format!("STARTD_NAME = ep{i}")
                } else {
                    String::new()
                };
                write(
                    &config,
                    &format!(
                        "COLLECTOR_HOST = {cm}:9618\n\
                         {role}\n\
                         {name}\n\
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
                        role = role_of(i),
                        key = if rogue.contains(&i) { &rogue_key } else { &key }.display(),
                        tokens = dir.join("tokens.d").display(),
                    ),
                );
                Host {
                    config,
                    home: dir_for(&dir, "home"),
                    state: dir.join("state"),
                }
            })
            .collect();
        let mut pool = Pool {
            hosts,
            all,
            masters: (0..n).map(|_| None).collect(),
            base,
        };
        // The central manager's key signs the daemons' token, which every
        // other host gets (as condor_token_create's output is copied to an
        // execute point's tokens.d); a rogue host's token is signed by a
        // key of its own, which the pool does not know.
        let signers: Vec<usize> = std::iter::once(CM).chain(rogue.iter().copied()).collect();
        for &i in &signers {
            let o = pool.on(i, &["token", "create-key"]);
            assert!(o.status.success(), "host {i}: {}", both(&o));
        }
        let token_from = |signer: usize| {
            let o = pool.on(
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
        let rogue_token = rogue.first().map(|&r| token_from(r));
        for (i, h) in pool.all.iter().enumerate() {
            let dir = dir_for(h.config.parent().unwrap(), "tokens.d");
            let t = match (&rogue_token, rogue.contains(&i)) {
                (Some(t), true) => t,
                _ => &token,
            };
            write(&dir.join("pool"), t);
            std::fs::set_permissions(
                dir.join("pool"),
                std::os::unix::fs::PermissionsExt::from_mode(0o600),
            )
            .unwrap();
        }
        for i in 0..n {
            pool.start(i);
        }
        Some(pool)
    }

    /// Runs a tool on host `i`.
    fn on(&self, i: usize, args: &[&str]) -> Output {
        let h = &self.all[i];
        let mut c = tool(&h.config, &h.home, args);
        c.env("FERROCONDOR_STATE", &h.state)
            .current_dir(self.base.join("work"));
        self.hosts.output(i, &mut c)
    }

    /// Starts host `i`'s master.
    fn start(&mut self, i: usize) {
        let h = &self.all[i];
        self.masters[i] = Some(PoolProcess::spawn_by(
            &h.state,
            tool(&h.config, &h.home, &[]),
            &["master"],
            |c| self.hosts.spawn(i, c),
        ));
    }

    /// Host `i` dies: its master, daemons and jobs killed at once.
    fn crash(&mut self, i: usize) {
        self.hosts.crash(i);
        if let Some(mut m) = self.masters[i].take() {
            m.kill();
        }
    }

    fn log(&self, i: usize) -> String {
        self.masters[i]
            .as_ref()
            .map(PoolProcess::daemon_log)
            .unwrap_or_else(|| {
                std::fs::read_to_string(self.all[i].state.with_extension("daemon.log"))
                    .unwrap_or_default()
            })
    }

    fn logs(&self) -> String {
        (0..self.all.len())
            .map(|i| format!("---- host {i} ----\n{}", self.log(i)))
            .collect()
    }

    /// The slots the collector knows: `Name MyAddress` lines.
    fn wait_slots(&self, n: usize) -> String {
        let mut slots = String::new();
        until(90, &format!("{n} slots at the collector"), || {
            let o = self.on(AP, &["status", "-af", "Name", "MyAddress"]);
            slots = out(&o);
            (slots.lines().count() == n)
                .then_some(())
                .ok_or_else(|| format!("{}\n{}", both(&o), self.logs()))
        });
        slots
    }

    /// Submits `text` as `name` on the access point.
    fn submit(&self, name: &str, text: &str) {
        write(&self.base.join("work").join(name), text);
        let o = self.on(AP, &["submit", name]);
        assert!(o.status.success(), "{}", both(&o));
    }

    /// The lines of a file the jobs wrote in the work directory.
    fn lines(&self, name: &str) -> Vec<String> {
        std::fs::read_to_string(self.base.join("work").join(name))
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// The host (by index) whose address a line names.
    fn host_in(&self, line: &str) -> Option<usize> {
        (0..self.all.len()).find(|&i| line.contains(&format!("{}/24", self.hosts.addr(i))))
    }

    /// Waits until `n` jobs of cluster `cluster` are in the history, done.
    fn wait_done(&self, cluster: u32, n: usize, secs: u64) {
        until(
            secs,
            &format!("{n} jobs of cluster {cluster} to complete"),
            || {
                let o = self.on(
                    AP,
                    &[
                        "history",
                        &cluster.to_string(),
                        "-af",
                        "JobStatus",
                        "ExitCode",
                    ],
                );
                let done = out(&o).lines().filter(|l| l.trim() == "4 0").count();
                (done == n).then_some(()).ok_or_else(|| {
                    let q = self.on(AP, &["q", "-af", "ProcId", "JobStatus", "RemoteHost"]);
                    format!(
                        "{done} done\n{}\nqueue:\n{}\n{}",
                        both(&o),
                        both(&q),
                        self.logs()
                    )
                })
            },
        );
    }

    /// The job event log's event numbers for job `id`.
    fn events(&self, log: &str, id: &str) -> Vec<String> {
        let (c, p) = id.split_once('.').unwrap();
        let tag = format!(
            "({:03}.{:03}.000)",
            c.parse::<u32>().unwrap(),
            p.parse::<u32>().unwrap()
        );
        self.lines(log)
            .iter()
            .filter(|l| l.contains(&tag))
            .filter_map(|l| l.split_whitespace().next().map(str::to_string))
            .collect()
    }
}

/// The job script: writes where it runs (`runs.N`, one line a start),
/// sleeps, and says it finished (`done.N`, one line an end).
fn jobs(log: &str, seconds: u32, count: u32, lease: u32) -> String {
    let ip = ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"]
        .iter()
        .find(|p| Path::new(p).exists())
        .unwrap();
    format!(
        "executable = /bin/sh\n\
         arguments = \"-c '{ip} -4 -o addr show dev eth0 >> runs.$(Cluster).$(Process); \
         sleep {seconds}; echo done >> done.$(Cluster).$(Process)'\"\n\
         should_transfer_files = NO\n\
         job_lease_duration = {lease}\n\
         log = {log}\n\
         queue {count}\n"
    )
}

#[test]
fn a_pool_of_a_central_manager_an_access_point_and_three_execute_points_runs_jobs_on_all() {
    // Hosts 2-4 execute points with the pool's token, host 5 without.
    let Some(pool) = Pool::new("pool-of-hosts", 6, &[ROGUE], "") else {
        return;
    };
    let slots = pool.wait_slots(6);
    println!("slots:\n{slots}");
    for &i in &EPS {
        let mine: Vec<&str> = slots
            .lines()
            .filter(|l| l.contains(&format!("@ep{i}@")))
            .collect();
        assert_eq!(mine.len(), 2, "host {i}: {slots}");
        assert!(
            mine.iter()
                .all(|l| l.contains(&format!("<{}:", pool.hosts.addr(i)))),
            "the slots of host {i} give its address: {slots}"
        );
    }
    assert!(!slots.contains(&format!("ep{ROGUE}")), "{slots}");

    // Jobs submitted on the access point run on the execute points, each
    // writing where it ran.
    pool.submit("jobs.sub", &jobs("jobs.log", 1, 24, 2400));
    pool.wait_done(1, 24, 120);
    let mut ran_on = std::collections::BTreeMap::new();
    for p in 0..24 {
        let runs = pool.lines(&format!("runs.1.{p}"));
        assert_eq!(runs.len(), 1, "job {p} ran once: {runs:?}");
        let host = pool
            .host_in(&runs[0])
            .unwrap_or_else(|| panic!("job {p} says: {runs:?}"));
        *ran_on.entry(host).or_insert(0) += 1;
    }
    println!("jobs per host: {ran_on:?}");
    assert!(
        ran_on.keys().all(|h| EPS.contains(h)),
        "jobs ran only on the execute points with the pool's token: {ran_on:?}"
    );
    assert_eq!(ran_on.len(), 3, "every execute point ran jobs: {ran_on:?}");
    // The history says where each job ran, by its slot and its startd's
    // address.
    let o = pool.on(AP, &["history", "-af", "LastRemoteHost", "StartdIpAddr"]);
    for line in out(&o).lines() {
        assert!(line.starts_with("slot") && line.contains("@ep"), "{line}");
        assert!(line.contains("<10.231.0."), "{line}");
    }

    // The rogue execute point never got in: its startd could not
    // authenticate to the collector, and says so.
    let rogue = pool.log(ROGUE);
    assert!(rogue.contains("not reachable"), "{rogue}");
}

/// How often the schedd keeps its claims alive, and how soon a silent
/// execute point's ads are gone from the collector, in these tests.
const FAST: &str = "ALIVE_INTERVAL = 2\nCLASSAD_LIFETIME = 6\n";

/// Jobs of `cluster`, by where they run now (host index), from `q`.
fn running_on(pool: &Pool, cluster: u32, want: usize) -> Vec<(u32, usize)> {
    let mut placed = Vec::new();
    until(
        60,
        &format!("{want} jobs of cluster {cluster} running"),
        || {
            let o = pool.on(
                AP,
                &[
                    "q",
                    &cluster.to_string(),
                    "-af",
                    "ProcId",
                    "JobStatus",
                    "RemoteHost",
                ],
            );
            placed = out(&o)
                .lines()
                .filter_map(|l| {
                    let f: Vec<&str> = l.split_whitespace().collect();
                    let ep = f
                        .get(2)?
                        .split('@')
                        .nth(1)?
                        .strip_prefix("ep")?
                        .parse()
                        .ok()?;
                    (f.get(1) == Some(&"2")).then(|| (f[0].parse().ok(), ep))
                })
                .filter_map(|(p, ep)| Some((p?, ep)))
                .collect();
            (placed.len() == want)
                .then_some(())
                .ok_or_else(|| format!("{}\n{}", both(&o), pool.logs()))
        },
    );
    placed
}

#[test]
fn jobs_of_an_execute_point_that_dies_or_is_cut_off_past_the_lease_run_again_elsewhere_once() {
    let Some(mut pool) = Pool::new("pool-failures", 5, &[], FAST) else {
        return;
    };
    pool.wait_slots(6);

    // An execute point dies while its jobs run: they run again on the
    // others once their lease (20 s) is over, and each completes once.
    pool.submit("a.sub", &jobs("a.log", 10, 6, 20));
    let placed = running_on(&pool, 1, 6);
    let victims: Vec<u32> = placed
        .iter()
        .filter(|(_, h)| *h == 4)
        .map(|(p, _)| *p)
        .collect();
    assert_eq!(victims.len(), 2, "{placed:?}");
    pool.crash(4);
    pool.wait_done(1, 6, 150);
    for p in 0..6u32 {
        let runs = pool.lines(&format!("runs.1.{p}"));
        let done = pool.lines(&format!("done.1.{p}"));
        assert_eq!(done.len(), 1, "job 1.{p} completed once: {done:?}");
        let events = pool.events("a.log", &format!("1.{p}"));
        if victims.contains(&p) {
            assert_eq!(runs.len(), 2, "job 1.{p} ran again: {runs:?}");
            assert_eq!(pool.host_in(&runs[0]), Some(4));
            assert_ne!(pool.host_in(&runs[1]), Some(4));
            assert!(events.contains(&"024".to_string()), "1.{p}: {events:?}");
        } else {
            assert_eq!(runs.len(), 1, "job 1.{p}: {runs:?}");
            assert!(!events.contains(&"024".to_string()), "1.{p}: {events:?}");
        }
        assert_eq!(
            events.iter().filter(|e| *e == "005").count(),
            1,
            "1.{p}: {events:?}"
        );
    }
    let log = pool.lines("a.log").join("\n");
    assert!(
        log.contains("Job disconnected too long: JobLeaseDuration (20 seconds) expired"),
        "{log}"
    );
    // The host comes back.
    pool.start(4);
    pool.wait_slots(6);

    // A short network cut (8 s, under the 20 s lease): the jobs there go
    // on and complete, once.
    pool.submit("b.sub", &jobs("b.log", 16, 6, 20));
    let placed = running_on(&pool, 2, 6);
    let cut: Vec<u32> = placed
        .iter()
        .filter(|(_, h)| *h == 2)
        .map(|(p, _)| *p)
        .collect();
    pool.hosts.unplug(2);
    std::thread::sleep(Duration::from_secs(8));
    pool.hosts.plug(2);
    pool.wait_done(2, 6, 120);
    for p in 0..6u32 {
        let runs = pool.lines(&format!("runs.2.{p}"));
        assert_eq!(runs.len(), 1, "job 2.{p} ran once: {runs:?}");
        assert_eq!(pool.lines(&format!("done.2.{p}")).len(), 1);
        let events = pool.events("b.log", &format!("2.{p}"));
        assert!(!events.contains(&"024".to_string()), "2.{p}: {events:?}");
    }
    println!("short cut of host 2 while {cut:?} ran there");
    pool.wait_slots(6);

    // A long one (30 s, past the lease): the execute point kills its jobs
    // when their lease ends, the access point gives them up and they run
    // again elsewhere, each completing once.
    pool.submit("c.sub", &jobs("c.log", 25, 6, 20));
    let placed = running_on(&pool, 3, 6);
    let cut: Vec<u32> = placed
        .iter()
        .filter(|(_, h)| *h == 3)
        .map(|(p, _)| *p)
        .collect();
    pool.hosts.unplug(3);
    std::thread::sleep(Duration::from_secs(30));
    pool.hosts.plug(3);
    pool.wait_done(3, 6, 150);
    for p in 0..6u32 {
        let runs = pool.lines(&format!("runs.3.{p}"));
        let done = pool.lines(&format!("done.3.{p}"));
        assert_eq!(done.len(), 1, "job 3.{p} completed once: {done:?} {runs:?}");
        let events = pool.events("c.log", &format!("3.{p}"));
        if cut.contains(&p) {
            assert_eq!(runs.len(), 2, "job 3.{p} ran again: {runs:?}");
            assert_eq!(pool.host_in(&runs[0]), Some(3));
            assert!(events.contains(&"024".to_string()), "3.{p}: {events:?}");
        } else {
            assert_eq!(runs.len(), 1, "job 3.{p}: {runs:?}");
        }
    }
}

#[test]
fn running_jobs_survive_restarts_of_the_access_point_and_the_central_manager() {
    let Some(mut pool) = Pool::new("pool-restarts", 5, &[], FAST) else {
        return;
    };
    pool.wait_slots(6);

    // The access point dies and comes back while its jobs run: it
    // reconnects to them (023), and each completes once, not run again.
    pool.submit("a.sub", &jobs("a.log", 12, 4, 30));
    running_on(&pool, 1, 4);
    pool.crash(AP);
    std::thread::sleep(Duration::from_secs(2));
    pool.start(AP);
    pool.wait_done(1, 4, 120);
    for p in 0..4u32 {
        assert_eq!(
            pool.lines(&format!("runs.1.{p}")).len(),
            1,
            "1.{p} ran once"
        );
        assert_eq!(pool.lines(&format!("done.1.{p}")).len(), 1);
        let events = pool.events("a.log", &format!("1.{p}"));
        assert!(events.contains(&"023".to_string()), "1.{p}: {events:?}");
        for never in ["024", "004"] {
            assert!(!events.contains(&never.to_string()), "1.{p}: {events:?}");
        }
        assert_eq!(
            events.iter().filter(|e| *e == "001").count(),
            1,
            "1.{p}: {events:?}"
        );
    }
    let log = pool.lines("a.log").join("\n");
    assert!(log.contains("Job reconnected to slot"), "{log}");

    // The central manager dies: the running jobs go on and complete; new
    // jobs start once it is back.
    pool.submit("b.sub", &jobs("b.log", 8, 2, 30));
    running_on(&pool, 2, 2);
    pool.crash(CM);
    pool.wait_done(2, 2, 60);
    pool.start(CM);
    pool.submit("c.sub", &jobs("c.log", 1, 2, 30));
    pool.wait_done(3, 2, 90);
}
