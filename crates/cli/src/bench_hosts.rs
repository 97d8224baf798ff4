//! `ferrocondor bench throughput --hosts N`: the throughput of a pool of
//! many hosts. A test bed of network namespaces (`testbed`) gets a
//! central manager, an access point and N execute points, each its own
//! `ferrocondor master` with its own state and configuration, the pool's
//! signing key and a token for the daemons, as `README.md`'s "A pool of
//! many hosts" sets one up; the jobs (`/bin/true`, in place) are
//! submitted on the access point with the real `submit` and timed from
//! submission to an empty queue. The last line is
//! `jobs_per_second=X hosts=N slots=M`. Needs root (namespaces); the
//! pool runs as `nobody`.

use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::errors::{Error, Outcome};
use crate::testbed::Hosts;

const CM: usize = 0;
const AP: usize = 1;
/// The pool's user.
const NOBODY: u32 = 65534;

/// The bed's hosts, their masters and their scratch directory, all gone
/// when dropped.
struct Bed {
    hosts: Hosts,
    base: PathBuf,
    masters: Vec<Child>,
    exe: PathBuf,
}

impl Drop for Bed {
    fn drop(&mut self) {
        for m in &mut self.masters {
            // SAFETY: a plain signal to a child of ours.
            unsafe { libc::kill(m.id() as i32, libc::SIGTERM) };
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        for m in &mut self.masters {
            while Instant::now() < deadline {
                if let Ok(Some(_)) = m.try_wait() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = m.kill();
            let _ = m.wait();
        }
        // The hosts go with `hosts` (what still runs on them is killed).
        let _ = std::fs::remove_dir_all(&self.base);
    }
}

impl Bed {
    fn config(&self, i: usize) -> PathBuf {
        self.base.join(format!("h{i}")).join("condor_config")
    }

    fn state(&self, i: usize) -> PathBuf {
        self.base.join(format!("h{i}")).join("state")
    }

    /// A tool of this program on host `i`, as the pool's user.
    fn tool(&self, i: usize, args: &[&str]) -> Command {
        let mut c = Command::new(&self.exe);
        c.args(args)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("HOME", self.base.join(format!("h{i}")))
            .env("CONDOR_CONFIG", self.config(i))
            .env("FERROCONDOR_STATE", self.state(i))
            .current_dir(self.base.join("work"))
            .uid(NOBODY)
            .gid(NOBODY);
        c
    }

    fn run(&self, i: usize, args: &[&str]) -> Result<Output, Error> {
        let mut c = self.tool(i, args);
        let o = self.hosts.within(i, || c.output());
        o.map_err(|e| Error::Daemon(format!("bench: running {args:?} on host {i}: {e}")))
    }

    fn ok(&self, i: usize, args: &[&str]) -> Result<String, Error> {
        let o = self.run(i, args)?;
        if !o.status.success() {
            return Err(Error::Daemon(format!(
                "bench: {args:?} on host {i} failed: {}",
                String::from_utf8_lossy(&o.stderr).trim()
            )));
        }
        Ok(String::from_utf8_lossy(&o.stdout).into_owned())
    }
}

/// A file or directory the pool's user owns.
fn owned(path: &Path, text: Option<&str>, mode: u32) -> Result<(), Error> {
    let fail = |e: std::io::Error| Error::read(path.display().to_string(), e);
    match text {
        Some(t) => std::fs::write(path, t).map_err(fail)?,
        None => std::fs::create_dir_all(path).map_err(fail)?,
    }
    std::os::unix::fs::chown(path, Some(NOBODY), Some(NOBODY)).map_err(fail)?;
    std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(mode)).map_err(fail)
}

pub fn run(
    jobs: u64,
    execute_hosts: usize,
    slots: u32,
    out: &mut dyn Write,
    diag: &mut dyn Write,
) -> Result<Outcome, Error> {
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return Err(Error::Daemon(
            "bench --hosts makes network namespaces (a host each): run it as root; \
             the pool itself runs as nobody"
                .into(),
        ));
    }
    if !(1..=200).contains(&execute_hosts) {
        return Err(Error::Daemon(
            "bench --hosts: 1 to 200 execute hosts".into(),
        ));
    }
    let n = execute_hosts + 2;
    let hosts = Hosts::new(n).map_err(|e| Error::Daemon(format!("bench --hosts: {e}")))?;
    let base = std::env::temp_dir().join(format!("ferrocondor-bench-hosts-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    let exe = std::env::current_exe().map_err(|e| Error::read("<this program>", e))?;
    let mut bed = Bed {
        hosts,
        base: base.clone(),
        masters: Vec::new(),
        exe,
    };
    owned(&base, None, 0o755)?;
    owned(&base.join("work"), None, 0o755)?;
    let cm = bed.hosts.addr(CM);
    let key = base.join("POOL");
    for i in 0..n {
        let dir = base.join(format!("h{i}"));
        owned(&dir, None, 0o755)?;
        owned(&dir.join("tokens.d"), None, 0o700)?;
        let role = match i {
            CM => "DAEMON_LIST = MASTER, COLLECTOR, NEGOTIATOR".to_string(),
            AP => "DAEMON_LIST = MASTER, SCHEDD".to_string(),
            _ => format!("DAEMON_LIST = MASTER, STARTD\nSTARTD_NAME = ep{i}"),
        };
        owned(
            &bed.config(i),
            Some(&format!(
                "COLLECTOR_HOST = {cm}:9618\n{role}\nUID_DOMAIN = bench.test\n\
                 FILESYSTEM_DOMAIN = bench.test\n\
                 SEC_DEFAULT_AUTHENTICATION_METHODS = FS, TOKEN\n\
                 SEC_TOKEN_POOL_SIGNING_KEY_FILE = {}\n\
                 SEC_TOKEN_SYSTEM_DIRECTORY = {}\n\
                 NUM_CPUS = {slots}\nNEGOTIATOR_INTERVAL = 2\nUPDATE_INTERVAL = 2\n",
                // The pool's key on the central manager only; the others
                // name a file they do not have, and hold a token.
                if i == CM {
                    key.clone()
                } else {
                    dir.join("passwords.d").join("POOL")
                }
                .display(),
                dir.join("tokens.d").display(),
            )),
            0o644,
        )?;
    }
    // The central manager's key signs the daemons' token, which every host
    // gets; the key stays there.
    bed.ok(CM, &["token", "create-key"])?;
    let token = bed.ok(CM, &["token", "create", "-identity", "nobody@bench.test"])?;
    for i in 0..n {
        owned(
            &base.join(format!("h{i}")).join("tokens.d").join("pool"),
            Some(&token),
            0o600,
        )?;
    }
    for i in 0..n {
        let log = std::fs::File::create(base.join(format!("h{i}.log")))
            .map_err(|e| Error::read(base.display().to_string(), e))?;
        let state = bed.state(i);
        let mut c = bed.tool(i, &["master", "--state"]);
        c.arg(&state)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log);
        let child = bed
            .hosts
            .within(i, || c.spawn())
            .map_err(|e| Error::Daemon(format!("bench: starting host {i}'s master: {e}")))?;
        bed.masters.push(child);
    }
    writeln!(
        diag,
        "bench: a central manager, an access point and {execute_hosts} execute hosts of {slots} slots (network namespaces under {})",
        base.display()
    )?;
    let want = execute_hosts * slots as usize;
    let t0 = Instant::now();
    loop {
        let seen = bed
            .run(AP, &["status", "-af", "Name"])
            .map(|o| String::from_utf8_lossy(&o.stdout).lines().count())
            .unwrap_or(0);
        if seen >= want {
            break;
        }
        if t0.elapsed() > Duration::from_secs(120) {
            return Err(Error::Daemon(format!(
                "bench: {seen} of {want} slots reached the collector in 120 s (logs: {}/h*.log)",
                base.display()
            )));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    writeln!(
        diag,
        "bench: {want} slots up in {:.1} s",
        t0.elapsed().as_secs_f64()
    )?;
    owned(
        &base.join("work").join("jobs.sub"),
        Some(&format!(
            "executable = /bin/true\ntransfer_executable = false\nshould_transfer_files = NO\nqueue {jobs}\n"
        )),
        0o644,
    )?;
    let t0 = Instant::now();
    bed.ok(AP, &["submit", "jobs.sub"])?;
    let submitted = t0.elapsed();
    loop {
        // The queue's summary line: `Total for query: N jobs; ...`.
        let totals = bed.ok(AP, &["q", "-totals"])?;
        let left = totals
            .lines()
            .find_map(|l| l.split("Total for query: ").nth(1))
            .and_then(|r| r.split_whitespace().next())
            .and_then(|n| n.parse::<u64>().ok());
        if left == Some(0) {
            break;
        }
        if t0.elapsed() > Duration::from_secs(3600) {
            return Err(Error::Daemon(
                "bench: the jobs did not finish in an hour".into(),
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let took = t0.elapsed().as_secs_f64();
    // Every job completed (none lost on the way).
    let done = bed
        .ok(AP, &["history", "-af", "JobStatus"])?
        .lines()
        .filter(|l| l.trim() == "4")
        .count() as u64;
    if done != jobs {
        return Err(Error::Daemon(format!(
            "bench: the queue is empty but {done} of {jobs} jobs completed"
        )));
    }
    writeln!(
        diag,
        "bench: {jobs} jobs submitted in {:.2} s, all complete in {took:.2} s",
        submitted.as_secs_f64()
    )?;
    writeln!(
        out,
        "jobs_per_second={:.1} hosts={execute_hosts} slots={want}",
        jobs as f64 / took
    )?;
    drop(bed);
    Ok(Outcome::Success)
}
