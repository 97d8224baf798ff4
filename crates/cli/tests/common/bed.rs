//! A pool of many hosts on the test bed (`hosts.rs`): host 0 the central
//! manager (collector and negotiator), host 1 the access point (schedd),
//! the others execute points (`STARTD_NAME = ep<i>`), each its own
//! `ferrocondor master` with its own state and configuration. Only the
//! central manager holds the pool's signing key; every host holds a token
//! the central manager signed for the daemons (a "rogue" host's token is
//! signed by a key of its own, which the pool does not know). Used by
//! `pool_of_hosts.rs` and the other multi-host tests.

#![allow(dead_code)]

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use super::common::{bin, err, me, out, run_as, scratch, write, PoolProcess};
use super::hosts::Hosts;

pub const CM: usize = 0;
pub const AP: usize = 1;
/// A command as the test's unprivileged user (the pool's user), with the
/// configuration file `config` only.
pub fn tool(config: &Path, home: &Path, args: &[&str]) -> Command {
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
pub fn until(secs: u64, what: &str, mut f: impl FnMut() -> Result<(), String>) {
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

pub fn both(o: &Output) -> String {
    format!("{}{}", out(o), err(o))
}

pub fn dir_for(base: &Path, name: &str) -> PathBuf {
    let d = base.join(name);
    std::fs::create_dir_all(&d).unwrap();
    if let Some((uid, gid)) = run_as() {
        std::os::unix::fs::chown(&d, Some(uid), Some(gid)).unwrap();
    }
    d
}

/// One host of the pool: its configuration, home and state.
pub struct Host {
    pub config: PathBuf,
    pub home: PathBuf,
    pub state: PathBuf,
}

/// What runs on host `i` of a pool of `n`: host 0 the central manager,
/// host 1 the access point, the others execute points (`STARTD_NAME =
/// ep<i>`); `rogue` hosts' tokens are signed by a key the pool does not
/// know.
pub fn role_of(i: usize, aps: &[usize]) -> &'static str {
    match i {
        CM => "DAEMON_LIST = MASTER, COLLECTOR, NEGOTIATOR",
        _ if aps.contains(&i) => "DAEMON_LIST = MASTER, SCHEDD",
        _ => "DAEMON_LIST = MASTER, STARTD",
    }
}

/// A pool on a bed of hosts, each with its master.
pub struct Pool {
    pub hosts: Hosts,
    pub all: Vec<Host>,
    pub masters: Vec<Option<PoolProcess>>,
    /// The pool's scratch tree, removed (after the masters stopped: the
    /// fields drop in this order) when the test passed.
    pub base: super::common::Scratch,
    /// Other scratch trees the hosts' configuration reads (copies of
    /// example files, say), removed with `base`.
    pub also: Vec<super::common::Scratch>,
}

impl Pool {
    /// `n` hosts with `extra` configuration on each; the hosts in `rogue`
    /// get a token the pool did not sign. None where hosts cannot be made.
    pub fn new(name: &str, n: usize, rogue: &[usize], extra: &str) -> Option<Pool> {
        Pool::build(name, n, &[AP], rogue, extra, &|_, _| String::new())
    }

    /// As [`Pool::new`], on loopback addresses whatever this machine can
    /// do (the second form of the bed: see `testbed.rs`).
    pub fn on_loopback(name: &str, n: usize, extra: &str) -> Pool {
        let hosts = Hosts::loopback(n);
        Pool::build_on(hosts, name, &[AP], &[], extra, &|_, _| String::new())
    }

    /// As [`Pool::with_hosts`], on hosts made beforehand (a loopback
    /// bed, whose addresses a host's configuration may name).
    pub fn on_hosts_with(
        hosts: Hosts,
        name: &str,
        extra: &str,
        per_host: impl Fn(usize, &Path) -> String,
    ) -> Pool {
        Pool::build_on(hosts, name, &[AP], &[], extra, &per_host)
    }

    /// As [`Pool::new`], with access points on the hosts `aps` (each
    /// `SCHEDD_NAME = ap<i>` when there are several).
    pub fn with_access_points(
        name: &str,
        n: usize,
        aps: &[usize],
        rogue: &[usize],
        extra: &str,
    ) -> Option<Pool> {
        Pool::build(name, n, aps, rogue, extra, &|_, _| String::new())
    }

    /// As `new`, with each host's own configuration after `extra`:
    /// `per_host(i, dir)` for host `i`, whose directory (configuration,
    /// home, state) is `dir`. The daemons' token names the UID_DOMAIN the
    /// central manager's configuration gives.
    pub fn with_hosts(
        name: &str,
        n: usize,
        rogue: &[usize],
        extra: &str,
        per_host: impl Fn(usize, &Path) -> String,
    ) -> Option<Pool> {
        Pool::build(name, n, &[AP], rogue, extra, &per_host)
    }

    fn build(
        name: &str,
        n: usize,
        aps: &[usize],
        rogue: &[usize],
        extra: &str,
        per_host: &dyn Fn(usize, &Path) -> String,
    ) -> Option<Pool> {
        let hosts = Hosts::or_skip(n)?;
        Some(Pool::build_on(hosts, name, aps, rogue, extra, per_host))
    }

    fn build_on(
        hosts: Hosts,
        name: &str,
        aps: &[usize],
        rogue: &[usize],
        extra: &str,
        per_host: &dyn Fn(usize, &Path) -> String,
    ) -> Pool {
        let n = hosts.len();
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
                let name = if aps.contains(&i) && aps.len() > 1 {
                    format!("SCHEDD_NAME = ap{i}")
                } else if i != CM && !aps.contains(&i) {
                    format!("STARTD_NAME = ep{i}")
                } else {
                    String::new()
                };
                write(
                    &config,
                    &format!(
                        "COLLECTOR_HOST = {cm}:9618\n\
                         NETWORK_INTERFACE = {addr}\n\
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
                         {extra}\n\
                         {own}\n",
                        role = role_of(i, aps),
                        addr = hosts.addr(i),
                        own = per_host(i, &dir),
                        // The pool's key on the central manager only; the
                        // others name a file they do not have.
                        key = if rogue.contains(&i) {
                            rogue_key.clone()
                        } else if i == CM {
                            key.clone()
                        } else {
                            dir.join("passwords.d").join("POOL")
                        }
                        .display(),
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
            also: Vec::new(),
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
        let o = pool.on(CM, &["config_val", "UID_DOMAIN"]);
        assert!(o.status.success(), "{}", both(&o));
        let domain = out(&o).trim().to_string();
        let token_from = |signer: usize| {
            let o = pool.on(
                signer,
                &["token", "create", "-identity", &format!("{user}@{domain}")],
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
        pool.key_on_the_central_manager_only(rogue);
        for i in 0..n {
            pool.start(i);
        }
        pool
    }

    /// No host but the central manager has the pool's signing key: each
    /// other host's SEC_TOKEN_POOL_SIGNING_KEY_FILE names no file (a rogue
    /// host's names its own key, which the pool does not know).
    fn key_on_the_central_manager_only(&self, rogue: &[usize]) {
        let pool_key = self.base.join("POOL");
        for i in 0..self.all.len() {
            let o = self.on(i, &["config_val", "SEC_TOKEN_POOL_SIGNING_KEY_FILE"]);
            assert!(o.status.success(), "host {i}: {}", both(&o));
            let file = PathBuf::from(out(&o).trim());
            if i == CM {
                assert!(file.is_file(), "the central manager has no key {file:?}");
            } else {
                assert!(
                    !file.exists() || rogue.contains(&i),
                    "host {i} has a signing key: {file:?}"
                );
                assert_ne!(file, pool_key, "host {i} names the pool's key");
            }
        }
    }

    /// Runs a tool on host `i`.
    pub fn on(&self, i: usize, args: &[&str]) -> Output {
        self.on_with(i, args, &[])
    }

    /// Runs a tool on host `i` with configuration set in its environment
    /// (`NAME`, value pairs given as `_CONDOR_NAME`, as a wrapper script
    /// such as the Bologna `bbs_submit_*` sets them).
    pub fn on_with(&self, i: usize, args: &[&str], env: &[(&str, &str)]) -> Output {
        let h = &self.all[i];
        let mut c = tool(&h.config, &h.home, args);
        c.env("FERROCONDOR_STATE", &h.state)
            .current_dir(self.base.join("work"));
        for (k, v) in env {
            c.env(format!("_CONDOR_{k}"), v);
        }
        self.hosts.output(i, &mut c)
    }

    /// Starts host `i`'s master.
    pub fn start(&mut self, i: usize) {
        let h = &self.all[i];
        self.masters[i] = Some(PoolProcess::spawn_by(
            &h.state,
            tool(&h.config, &h.home, &[]),
            &["master"],
            |c| self.hosts.spawn(i, c),
        ));
    }

    /// Host `i` dies: its master, daemons and jobs killed at once.
    pub fn crash(&mut self, i: usize) {
        self.hosts.crash(i);
        if let Some(mut m) = self.masters[i].take() {
            m.kill();
        }
    }

    pub fn log(&self, i: usize) -> String {
        self.masters[i]
            .as_ref()
            .map(PoolProcess::daemon_log)
            .unwrap_or_else(|| {
                std::fs::read_to_string(self.all[i].state.with_extension("daemon.log"))
                    .unwrap_or_default()
            })
    }

    pub fn logs(&self) -> String {
        (0..self.all.len())
            .map(|i| format!("---- host {i} ----\n{}", self.log(i)))
            .collect()
    }

    /// The slots the collector knows: `Name MyAddress` lines.
    pub fn wait_slots(&self, n: usize) -> String {
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
    pub fn submit(&self, name: &str, text: &str) {
        self.submit_with(name, text, &[]);
    }

    /// Submits `text` as `name` on access point `host`.
    pub fn submit_on(&self, host: usize, name: &str, text: &str) {
        self.submit_on_with(host, name, text, &[]);
    }

    /// Submits `text` as `name` on the access point, with configuration
    /// in the submitter's environment (see `on_with`); the cluster's id.
    pub fn submit_with(&self, name: &str, text: &str, env: &[(&str, &str)]) -> u32 {
        self.submit_on_with(AP, name, text, env)
    }

    /// Submits `text` as `name` on access point `host`, with
    /// configuration in the submitter's environment; the cluster's id.
    pub fn submit_on_with(&self, host: usize, name: &str, text: &str, env: &[(&str, &str)]) -> u32 {
        write(&self.base.join("work").join(name), text);
        let o = self.on_with(host, &["submit", name], env);
        assert!(o.status.success(), "{}", both(&o));
        let text = out(&o);
        text.split("submitted to cluster ")
            .nth(1)
            .and_then(|c| c.trim().trim_end_matches('.').parse().ok())
            .unwrap_or_else(|| panic!("no cluster in: {text}"))
    }

    /// The lines of a file the jobs wrote in the work directory.
    pub fn lines(&self, name: &str) -> Vec<String> {
        std::fs::read_to_string(self.base.join("work").join(name))
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// The host (by index) a line names: by its startd's name (a slot's
    /// `slotN@ep<i>@...`), or its address as a sinful string
    /// (`<ADDR:PORT...>`) or as `ip addr` prints it (`ADDR/24`).
    pub fn host_in(&self, line: &str) -> Option<usize> {
        (0..self.all.len()).find(|&i| {
            let a = self.hosts.addr(i);
            line.contains(&format!("@ep{i}@"))
                || line.contains(&format!("<{a}:"))
                || line.contains(&format!("{a}/24"))
        })
    }

    /// Waits until `n` jobs of cluster `cluster` are in the history, done.
    pub fn wait_done(&self, cluster: u32, n: usize, secs: u64) {
        self.wait_done_on(AP, cluster, n, secs);
    }

    /// As [`Pool::wait_done`], at access point `host`.
    pub fn wait_done_on(&self, host: usize, cluster: u32, n: usize, secs: u64) {
        until(
            secs,
            &format!("{n} jobs of cluster {cluster} to complete"),
            || {
                let o = self.on(
                    host,
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
                    let q = self.on(host, &["q", "-af", "ProcId", "JobStatus", "RemoteHost"]);
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
    pub fn events(&self, log: &str, id: &str) -> Vec<String> {
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

/// The job script: writes where it runs (`runs.N`, one line a start: its
/// slot's name, `slotN@ep<i>@...`, from the machine ad its starter gives
/// it, which names the host in either form of the bed), sleeps, and says
/// it finished (`done.N`, one line an end).
pub fn jobs(log: &str, seconds: u32, count: u32, lease: u32) -> String {
    format!(
        "executable = /bin/sh\n\
         arguments = \"-c 'grep ^Name $_CONDOR_MACHINE_AD >> runs.$(Cluster).$(Process); \
         sleep {seconds}; echo done >> done.$(Cluster).$(Process)'\"\n\
         should_transfer_files = NO\n\
         job_lease_duration = {lease}\n\
         log = {log}\n\
         queue {count}\n"
    )
}

/// How often the schedd keeps its claims alive, and how soon a silent
/// execute point's ads are gone from the collector, in these tests.
pub const FAST: &str = "ALIVE_INTERVAL = 2\nCLASSAD_LIFETIME = 6\n";

/// Jobs of `cluster`, by where they run now (host index), from `q`.
pub fn running_on(pool: &Pool, cluster: u32, want: usize) -> Vec<(u32, usize)> {
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
