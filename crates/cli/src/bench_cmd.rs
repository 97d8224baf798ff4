//! `ferrocondor bench throughput --jobs N`: a fresh personal pool, N
//! trivial jobs (`/bin/true`) pushed from submit to completion, and the
//! submit-to-complete latency of a lone job (median of 20). The last line
//! is `jobs_per_second=X median_latency_ms=Y`. With `--submit-only`, N
//! idle jobs in one cluster (`START = False`): the submission's rate, the
//! pool's resident memory holding them (and per job), and the time to
//! remove the whole cluster.
//!
//! The pool is the real one (`pool up`, a child process on a scratch
//! state directory); the jobs are built by the real submit code and sent
//! to the command port by HTCondor's job-queue protocol ([`cedar::qmgmt`],
//! as the tools and HTCondor's clients send them; with `--local-socket`,
//! over the pool's local socket, the baseline);
//! completion is read back from the queue.

use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use config::{load, Host, LoadOptions, Root};
use wire::api;

use crate::args::ThroughputArgs as BenchArgs;
use crate::errors::{Error, Outcome};

/// A pool started for the benchmark, stopped (and its state removed) when
/// dropped.
struct BenchPool {
    child: Option<Child>,
    state: PathBuf,
    client: wire::Client,
}

impl BenchPool {
    /// The pool process's resident memory and its peak, KiB (`VmRSS` and
    /// `VmHWM` of /proc/PID/status); zeros where they cannot be read.
    fn memory(&self) -> (u64, u64) {
        let Some(child) = &self.child else {
            return (0, 0);
        };
        let status =
            std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap_or_default();
        let field = |name: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
                .unwrap_or(0)
        };
        (field("VmRSS:"), field("VmHWM:"))
    }
}

impl Drop for BenchPool {
    fn drop(&mut self) {
        let _: Result<api::Empty, _> = self.client.call(api::PATH_SHUTDOWN, &api::Empty {});
        if let Some(mut c) = self.child.take() {
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = c.try_wait() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = std::fs::remove_dir_all(&self.state);
    }
}

pub fn run(
    a: &BenchArgs,
    host: &dyn Host,
    now: i64,
    out: &mut dyn Write,
    diag: &mut dyn Write,
) -> Result<Outcome, Error> {
    if let Some(hosts) = a.hosts {
        return crate::bench_hosts::run(a.jobs.max(1), hosts, a.slots, out, diag);
    }
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } == 0 && !a.as_nobody {
        // A pool started by root never runs a job as root: the whole
        // benchmark runs as `nobody`, as any user's personal pool would.
        writeln!(
            diag,
            "bench: running as user nobody (a pool run by root never runs jobs as root)"
        )?;
        diag.flush()?;
        let exe = std::env::current_exe().map_err(|e| Error::read("<this program>", e))?;
        let status = Command::new(exe)
            .args(std::env::args_os().skip(1))
            .arg("--as-nobody")
            .current_dir("/")
            .uid(65534)
            .gid(65534)
            .status()
            .map_err(|e| Error::Daemon(format!("cannot run the benchmark as nobody: {e}")))?;
        return if status.success() {
            Ok(Outcome::Success)
        } else {
            Err(Error::Daemon(format!(
                "bench: the benchmark failed ({status})"
            )))
        };
    }
    let jobs = a.jobs.max(1);
    let state = std::env::temp_dir().join(format!("ferrocondor-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&state);
    std::fs::create_dir_all(&state).map_err(|e| Error::read(state.display().to_string(), e))?;
    let pool = start_pool(&state, a.slots, a.submit_only)?;
    writeln!(
        diag,
        "bench: pool up in {} with {} slots",
        state.display(),
        a.slots
    )?;

    // The benchmark's pool and jobs run on HTCondor's defaults alone.
    let config = load(
        &LoadOptions::new("SUBMIT", Root::None),
        &crate::system::DiskFiles,
        host,
    )
    .map_err(Error::Config)?;
    let owner = host.env("USER").unwrap_or_else(|| "nobody".into());
    let iwd = state.display().to_string();
    let build_ads = |cluster: u32, count: u64| -> Result<Vec<classad::ClassAd>, Error> {
        let text = format!("executable = /bin/true\ntransfer_executable = false\nqueue {count}\n");
        let mut opts = submit::SubmitOptions::new(i64::from(cluster), &owner, now, &iwd);
        opts.submit_file = "<bench>".into();
        let s = submit::submit(&text, &opts, &config, &crate::submit_cmd::SubmitFiles)
            .map_err(Error::Submit)?;
        Ok(s.jobs)
    };
    let build = |cluster: u32, count: u64| -> Result<Vec<String>, Error> {
        Ok(build_ads(cluster, count)?
            .iter()
            .map(|ad| {
                let mut t = String::new();
                classad::unparse::ad_into(&mut t, ad);
                t
            })
            .collect())
    };
    // The command port, as the tools and HTCondor's clients reach it
    // (with --local-socket, the pool's local socket instead).
    let command_port = if !a.local_socket {
        let addr = command_port_address(&state)?;
        writeln!(
            diag,
            "bench: submitting by QMGMT to {addr} (FS authentication)"
        )?;
        Some(addr)
    } else {
        None
    };
    let sessions = cedar::client::SessionCache::new();
    let client_options = cedar::client::ClientOptions::default();
    let submit_cluster = |count: u64| -> Result<u32, Error> {
        if let Some(addr) = &command_port {
            // The cluster id comes from the schedd (NewCluster); the ads'
            // own ClusterId is not sent. Jobs that differ only by ProcId
            // (`queue N` of one command) are sent as the tools send them
            // (the cluster ad, and per job its ProcId and JobStatus) from
            // two built jobs, so that a benchmark of a million jobs does
            // not first build a million ads here.
            let (cluster_ad, procs) = match build_ads(0, count.min(2))? {
                two if count > 2 && two.len() == 2 => {
                    let (cluster_ad, procs) = submit::split_jobs(&two);
                    if procs.iter().all(|p| p.is_empty()) {
                        (cluster_ad, vec![classad::ClassAd::new(); count as usize])
                    } else {
                        submit::split_jobs(&build_ads(0, count)?)
                    }
                }
                jobs => submit::split_jobs(&jobs),
            };
            let (mut sock, _) = cedar::client::connect(
                addr,
                cedar::commands::QMGMT_WRITE_CMD,
                &client_options,
                Some(&sessions),
            )
            .map_err(|e| Error::Daemon(format!("bench: {addr}: {e}")))?;
            let submitted = cedar::qmgmt::submit_cluster(&mut sock, &cluster_ad, &procs);
            let _ = cedar::qmgmt::close(&mut sock);
            let (cluster, _) =
                submitted.map_err(|e| Error::Daemon(format!("bench: {addr}: {e}")))?;
            return Ok(cluster as u32);
        }
        let c: api::NewCluster = pool.client.call(api::PATH_NEW_CLUSTER, &api::Empty {})?;
        let ads = build(c.cluster, count)?;
        let _: api::Submitted = pool.client.call(
            api::PATH_SUBMIT,
            &api::SubmitRequest {
                cluster: c.cluster,
                ads,
            },
        )?;
        Ok(c.cluster)
    };
    // Jobs still in the queue (completed ones leave it for the history).
    let left = || -> Result<u64, Error> {
        let a: api::QueryAnswer = pool.client.call(
            api::PATH_QUERY,
            &api::QueryRequest {
                selection: api::Selection {
                    constraint: Some("false".into()),
                    ..api::Selection::default()
                },
                projection: vec!["ClusterId".into()],
            },
        )?;
        Ok(a.all_totals.jobs)
    };

    if a.submit_only {
        // Submission alone: N jobs in one cluster into a pool that runs
        // nothing, timed from building the ads to the schedd's commit.
        let rss_before = pool.memory();
        let t0 = Instant::now();
        let cluster = submit_cluster(jobs)?;
        let elapsed = t0.elapsed().as_secs_f64();
        let queued = left()?;
        if queued != jobs {
            return Err(Error::Daemon(format!(
                "bench: {queued} of {jobs} jobs are in the queue after the submission"
            )));
        }
        // The access point's memory holding the idle jobs (all roles run
        // in the pool's one process), and what a job costs beyond an
        // empty pool's.
        let (rss, peak) = pool.memory();
        let per_job = (rss.saturating_sub(rss_before.0) * 1024) as f64 / jobs as f64;
        // The removal of the whole cluster, timed to the answer (which
        // comes once the store has it on disk).
        let t1 = Instant::now();
        let removed: api::ActAnswer = pool.client.call(
            api::PATH_ACT,
            &api::ActRequest {
                action: api::Action::Remove,
                selection: api::Selection {
                    ids: vec![api::JobSpec {
                        cluster,
                        proc: None,
                    }],
                    ..api::Selection::default()
                },
                reason: None,
            },
        )?;
        let rm_seconds = t1.elapsed().as_secs_f64();
        let still = left()?;
        if removed.done.len() as u64 != jobs || still != 0 {
            return Err(Error::Daemon(format!(
                "bench: rm removed {} of {jobs} jobs; {still} left in the queue",
                removed.done.len()
            )));
        }
        drop(pool);
        writeln!(
            out,
            "jobs={jobs} seconds={elapsed:.3}\nsubmitted_jobs_per_second={:.1}\n\
             pool_rss_kib={rss} pool_peak_rss_kib={peak} empty_pool_rss_kib={} rss_bytes_per_job={per_job:.0}\n\
             rm_seconds={rm_seconds:.3}",
            jobs as f64 / elapsed,
            rss_before.0,
        )?;
        return Ok(Outcome::Success);
    }

    // Latency: a lone job, submit to completion, 20 times.
    let mut latencies = Vec::new();
    for _ in 0..20 {
        let t0 = Instant::now();
        submit_cluster(1)?;
        wait_until_empty(&left, Duration::from_micros(500), Duration::from_secs(60))?;
        latencies.push(t0.elapsed().as_secs_f64() * 1000.0);
    }
    latencies.sort_by(f64::total_cmp);
    let median = (latencies[9] + latencies[10]) / 2.0;
    writeln!(
        diag,
        "bench: lone job submit-to-complete: median {median:.1} ms, min {:.1} ms, max {:.1} ms",
        latencies[0], latencies[19]
    )?;

    // Throughput: N jobs in one cluster, submit to the last completion.
    let t0 = Instant::now();
    submit_cluster(jobs)?;
    let submitted = t0.elapsed();
    writeln!(
        diag,
        "bench: {jobs} jobs submitted in {:.0} ms",
        submitted.as_secs_f64() * 1000.0
    )?;
    let mut last = Instant::now();
    loop {
        let n = left()?;
        if n == 0 {
            break;
        }
        if last.elapsed() >= Duration::from_secs(1) {
            writeln!(
                diag,
                "bench: {}/{jobs} done after {:.1} s",
                jobs - n.min(jobs),
                t0.elapsed().as_secs_f64()
            )?;
            diag.flush()?;
            last = Instant::now();
        }
        if t0.elapsed() > Duration::from_secs(600) {
            return Err(Error::Daemon(format!(
                "bench: {n} of {jobs} jobs still not done after 10 minutes"
            )));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let elapsed = t0.elapsed().as_secs_f64();
    // Every job must have completed, not merely left the queue.
    let h: api::HistoryAnswer = pool.client.call(
        api::PATH_HISTORY,
        &api::HistoryRequest {
            selection: api::Selection {
                constraint: Some("JobStatus == 4 && ExitCode == 0".into()),
                ..api::Selection::default()
            },
            projection: vec!["ClusterId".into()],
            limit: None,
        },
    )?;
    let completed = h.ads.len() as u64;
    if completed != jobs + 20 {
        return Err(Error::Daemon(format!(
            "bench: {} of {} jobs completed with exit code 0",
            completed,
            jobs + 20
        )));
    }
    drop(pool);
    writeln!(
        out,
        "jobs={jobs} slots={} seconds={elapsed:.3}\njobs_per_second={:.1} median_latency_ms={median:.1}",
        a.slots,
        jobs as f64 / elapsed
    )?;
    Ok(Outcome::Success)
}

/// The pool's command port: the first line of `<state>/.collector_address`
/// (`<ip:port?noUDP>`), which the pool writes once it listens.
fn command_port_address(state: &Path) -> Result<cedar::Sinful, Error> {
    let file = state.join(".collector_address");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(text) = std::fs::read_to_string(&file) {
            if let Some(line) = text.lines().next().filter(|l| !l.trim().is_empty()) {
                return cedar::Sinful::parse(line, 0)
                    .map_err(|e| Error::Daemon(format!("bench: {}: {e}", file.display())));
            }
        }
        if Instant::now() > deadline {
            return Err(Error::Daemon(format!(
                "bench: the pool wrote no command-port address to {}",
                file.display()
            )));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn wait_until_empty(
    left: &dyn Fn() -> Result<u64, Error>,
    every: Duration,
    limit: Duration,
) -> Result<(), Error> {
    let t0 = Instant::now();
    while left()? > 0 {
        if t0.elapsed() > limit {
            return Err(Error::Daemon("bench: a lone job did not complete".into()));
        }
        std::thread::sleep(every);
    }
    Ok(())
}

/// Starts the pool; `no_start`: with `START = False`, so nothing runs.
fn start_pool(state: &Path, slots: u32, no_start: bool) -> Result<BenchPool, Error> {
    let exe = std::env::current_exe().map_err(|e| Error::read("<this program>", e))?;
    let log = std::fs::File::create(state.with_extension("log"))
        .map_err(|e| Error::read(state.display().to_string(), e))?;
    let mut cmd = Command::new(exe);
    cmd.args(["pool", "up", "--state"])
        .arg(state)
        .env("CONDOR_CONFIG", "ONLY_ENV")
        .env("_CONDOR_NUM_CPUS", slots.to_string());
    if no_start {
        cmd.env("_CONDOR_START", "False");
        // The submission-only benchmark's one cluster may be large.
        cmd.env("_CONDOR_MAX_JOBS_PER_SUBMISSION", "2000000");
    }
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .map_err(|e| Error::Daemon(format!("cannot start the pool: {e}")))?;
    let pool = BenchPool {
        child: Some(child),
        state: state.to_path_buf(),
        client: wire::Client::for_state_dir(state),
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let hello: Result<api::Hello, _> = pool.client.call(api::PATH_HELLO, &api::Empty {});
        if hello.is_ok() {
            return Ok(pool);
        }
        if Instant::now() > deadline {
            return Err(Error::Daemon(format!(
                "the pool did not come up; see {}",
                state.with_extension("log").display()
            )));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
