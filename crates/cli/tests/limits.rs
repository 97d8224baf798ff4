//! No user can hold up other users' requests: the pool's limits on
//! connections, request headers and bodies, and queries, end to end
//! against a real `pool up`.
//!
//! Each test starts its own pool. When the tests run as root the pool
//! runs as `nobody` (see `common`), and the test process, root, is a
//! second local user; one test also connects as a third (`daemon`).

mod common;

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{err, out, run, scratch, write, PoolProcess};

/// The pool's header timeout (`HEADER_READ_TIMEOUT` in the daemon).
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// Serializes the tests that change this process's limit on open files
/// (the pools they start inherit it).
static FILE_LIMIT: Mutex<()> = Mutex::new(());

fn socket(state: &Path) -> std::path::PathBuf {
    state.join("pool.sock")
}

/// Sets this process's soft limit on open files (the hard one stays).
fn set_soft_file_limit(soft: Option<u64>) -> (u64, u64) {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit only read and write `lim`.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim), 0);
        let before = (lim.rlim_cur, lim.rlim_max);
        if let Some(s) = soft {
            lim.rlim_cur = s.min(lim.rlim_max);
            assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &lim), 0);
        }
        before
    }
}

/// The soft and hard limits on open files of process `pid`.
fn file_limits_of(pid: u32) -> (String, String) {
    let text = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
    let line = text
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .unwrap()
        .to_string();
    let f: Vec<&str> = line.split_whitespace().collect();
    (f[3].to_string(), f[4].to_string())
}

/// Runs a tool against the pool, killed if it takes longer than `limit`
/// (a pool that is held up would keep it waiting for minutes).
fn run_within(state: &Path, args: &[&str], limit: Duration) -> (Output, Duration) {
    let t0 = Instant::now();
    let mut child = common::command(state, &[])
        .args(args)
        .current_dir(std::env::temp_dir())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    while child.try_wait().unwrap().is_none() {
        if t0.elapsed() > limit {
            let _ = child.kill();
            let o = child.wait_with_output().unwrap();
            panic!(
                "`ferrocondor {}` did not finish within {limit:?}: the pool is held up\n{}{}",
                args.join(" "),
                out(&o),
                err(&o)
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let took = t0.elapsed();
    (child.wait_with_output().unwrap(), took)
}

fn submit_file(dir: &Path, name: &str, text: &str) -> String {
    let f = dir.join(name);
    write(&f, text);
    f.display().to_string()
}

/// Whether the pool closed `s`: a read gives end of file (or an answer
/// and then end of file) within `within`.
fn closed_within(s: &mut UnixStream, within: Duration) -> Option<Duration> {
    let t0 = Instant::now();
    s.set_read_timeout(Some(within)).unwrap();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return Some(t0.elapsed()),
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return Some(t0.elapsed()),
            Err(_) => return None,
        }
    }
}

/// Sends `head` and then up to `body` bytes of body (as many as the pool
/// takes), and reads the answer: its status and body.
fn raw_request(state: &Path, head: &str, body: usize) -> (u16, String) {
    let mut s = UnixStream::connect(socket(state)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    s.set_write_timeout(Some(Duration::from_secs(60))).unwrap();
    s.write_all(head.as_bytes()).unwrap();
    let chunk = vec![b' '; 64 << 10];
    let mut sent = 0;
    while sent < body {
        let n = chunk.len().min(body - sent);
        if s.write_all(&chunk[..n]).is_err() {
            break; // the pool stopped reading: its answer is waiting
        }
        sent += n;
    }
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    let text = String::from_utf8_lossy(&raw).into_owned();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no HTTP answer: {text:?}"));
    let body = text
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_string();
    (status, body)
}

#[test]
fn two_thousand_idle_connections_keep_no_one_from_submitting() {
    let dir = scratch("limits-idle");
    let state = dir.join("state");
    // A pool started with the usual soft limit of 1024 open files (the
    // daemon raises it to the hard limit).
    let pool = {
        let _serial = FILE_LIMIT.lock().unwrap_or_else(|p| p.into_inner());
        let (soft, _) = set_soft_file_limit(Some(1024));
        let pool = PoolProcess::start(&state, &[]);
        set_soft_file_limit(Some(soft));
        pool
    };
    // This process needs a descriptor for each connection too.
    let (_, hard) = set_soft_file_limit(None);
    set_soft_file_limit(Some(hard));

    // 2,000 connections that send nothing, opened from this process (as
    // root, or as the pool's own user: neither is limited in number).
    let idle = Arc::new(Mutex::new(Vec::new()));
    let opener = {
        let idle = idle.clone();
        let path = socket(&state);
        std::thread::spawn(move || {
            for _ in 0..2000 {
                match UnixStream::connect(&path) {
                    Ok(s) => idle.lock().unwrap().push(s),
                    Err(_) => break,
                }
            }
        })
    };
    let t0 = Instant::now();
    while idle.lock().unwrap().len() < 2000 && t0.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let opened = idle.lock().unwrap().len();
    assert_eq!(opened, 2000, "only {opened} connections could be made");
    let _ = opener.join();

    // They are all still open, and the pool's own user still submits and
    // queries.
    let sub = submit_file(
        &dir,
        "job.sub",
        "executable = /bin/true\ntransfer_executable = false\nhold = true\nqueue 2\n",
    );
    let (o, _) = run_within(&state, &["submit", &sub], Duration::from_secs(20));
    assert!(o.status.success(), "{}{}", out(&o), err(&o));
    assert!(out(&o).contains("2 job(s) submitted"), "{}", out(&o));
    let (o, _) = run_within(
        &state,
        &["q", "-allusers", "-af", "ClusterId", "ProcId"],
        Duration::from_secs(20),
    );
    assert!(o.status.success(), "{}{}", out(&o), err(&o));
    assert_eq!(out(&o).lines().count(), 2, "{}", out(&o));
    assert!(
        t0.elapsed() < HEADER_TIMEOUT,
        "the test was too slow to see the connections open"
    );
    drop(idle);
    let (soft, hard) = file_limits_of(pool.pid());
    assert_eq!(soft, hard, "the pool raised its soft limit on open files");
}

/// A `pool up` started with at most `files` open files, killed when
/// dropped.
struct SmallPool(Child);

impl SmallPool {
    fn start(state: &Path, log: &Path, files: u64) -> SmallPool {
        let log = std::fs::File::create(log).unwrap();
        let mut c = common::command(state, &[]);
        c.args(["pool", "up", "--state"])
            .arg(state)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log);
        // SAFETY: setrlimit is async-signal-safe and touches only `lim`.
        unsafe {
            c.pre_exec(move || {
                let lim = libc::rlimit {
                    rlim_cur: files,
                    rlim_max: files,
                };
                if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let pool = SmallPool(c.spawn().unwrap());
        common::wait_for(20, "the pool to come up", || {
            run(state, &std::env::temp_dir(), &["q", "-af", "ClusterId"])
                .status
                .success()
                .then_some(())
        });
        pool
    }
}

impl Drop for SmallPool {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_pool_out_of_descriptors_waits_and_serves_again() {
    let dir = scratch("limits-emfile");
    let state = dir.join("state");
    let log = dir.join("daemon.log");
    // A pool whose hard limit is 64 open files.
    let mut pool = SmallPool::start(&state, &log, 64);
    // More connections than it has descriptors for.
    let held: Vec<UnixStream> = (0..100)
        .map(|_| UnixStream::connect(socket(&state)).unwrap())
        .collect();
    common::wait_for(10, "the pool to run out of descriptors", || {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .contains("accepting a connection: Too many open files")
            .then_some(())
    });
    assert!(
        pool.0.try_wait().unwrap().is_none(),
        "{}",
        std::fs::read_to_string(&log).unwrap_or_default()
    );
    // Once they close, it serves again.
    drop(held);
    let (o, _) = run_within(&state, &["q", "-af", "ClusterId"], Duration::from_secs(20));
    assert!(o.status.success(), "{}{}", out(&o), err(&o));
}

/// Run as a child process by the next test, as another user: opens
/// `LIMITS_CONNECTIONS` connections to `LIMITS_SOCKET`, says how many the
/// pool kept open, and holds them until its standard input closes.
#[test]
#[ignore = "a helper the next test runs as another user"]
fn helper_hold_connections() {
    let Ok(path) = std::env::var("LIMITS_SOCKET") else {
        return;
    };
    let n: usize = std::env::var("LIMITS_CONNECTIONS")
        .unwrap()
        .parse()
        .unwrap();
    let mut held = Vec::new();
    for _ in 0..n {
        held.push(UnixStream::connect(&path).unwrap());
    }
    std::thread::sleep(Duration::from_millis(500));
    let mut open = 0;
    for s in &mut held {
        s.set_nonblocking(true).unwrap();
        match s.read(&mut [0u8; 16]) {
            Ok(0) => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => open += 1,
            _ => {}
        }
    }
    println!("LIMITS open={open} closed={}", n - open);
    std::io::stdout().flush().unwrap();
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
}

#[test]
fn another_users_idle_connections_are_kept_to_32() {
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: connecting as another user needs root");
        return;
    }
    let dir = scratch("limits-other");
    let state = dir.join("state");
    let _pool = PoolProcess::start(&state, &[]);
    // `daemon` (uid 1) opens 2,000 connections and holds them.
    let mut helper: Child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "helper_hold_connections",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("LIMITS_SOCKET", socket(&state))
        .env("LIMITS_CONNECTIONS", "2000")
        .uid(1)
        .gid(1)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut stdout = helper.stdout.take().unwrap();
    let mut seen = String::new();
    let t0 = Instant::now();
    while !seen.contains("LIMITS open=") || !seen[seen.find("LIMITS").unwrap()..].contains('\n') {
        let mut buf = [0u8; 256];
        let n = stdout.read(&mut buf).unwrap();
        assert!(n > 0, "the helper ended: {seen}");
        seen.push_str(&String::from_utf8_lossy(&buf[..n]));
        assert!(t0.elapsed() < Duration::from_secs(60), "{seen}");
    }
    // (The test harness may print its own words before it on the line.)
    let line = seen[seen.find("LIMITS").unwrap()..]
        .lines()
        .next()
        .unwrap()
        .to_string();
    // The pool kept 32 of them and closed the rest at once...
    assert_eq!(line, "LIMITS open=32 closed=1968", "{seen}");
    // ...and the pool's own user still submits and queries while they
    // are held.
    let sub = submit_file(
        &dir,
        "job.sub",
        "executable = /bin/true\ntransfer_executable = false\nhold = true\nqueue\n",
    );
    let (o, _) = run_within(&state, &["submit", &sub], Duration::from_secs(20));
    assert!(o.status.success(), "{}{}", out(&o), err(&o));
    let (o, _) = run_within(&state, &["q", "-af", "ClusterId"], Duration::from_secs(20));
    assert!(o.status.success(), "{}{}", out(&o), err(&o));
    drop(helper.stdin.take());
    let _ = helper.wait();
}

#[test]
fn a_half_sent_request_and_a_silent_connection_are_closed_after_the_header_timeout() {
    let dir = scratch("limits-half");
    let state = dir.join("state");
    let _pool = PoolProcess::start(&state, &[]);
    let mut half = UnixStream::connect(socket(&state)).unwrap();
    half.write_all(b"POST /v1/hello HTTP/1.1\r\nHost: localhost\r\nContent-Le")
        .unwrap();
    let mut silent = UnixStream::connect(socket(&state)).unwrap();
    let t0 = Instant::now();
    let limit = HEADER_TIMEOUT + Duration::from_secs(5);
    let a = closed_within(&mut half, limit);
    let left = limit.saturating_sub(t0.elapsed());
    let b = closed_within(&mut silent, left.max(Duration::from_millis(1)));
    let (Some(_), Some(_)) = (a, b) else {
        panic!("not closed within {limit:?}: half a request {a:?}, nothing sent {b:?}");
    };
    let took = t0.elapsed();
    assert!(
        took >= HEADER_TIMEOUT - Duration::from_secs(1),
        "closed too early ({took:?}): a slow but live client gets {HEADER_TIMEOUT:?}"
    );
    // The pool is fine.
    common::ok(run(&state, &dir, &["q", "-af", "ClusterId"]));
}

#[test]
fn a_body_slower_than_the_body_timeout_is_cut_off() {
    let dir = scratch("limits-slow");
    let state = dir.join("state");
    let _pool = PoolProcess::start(&state, &[]);
    let mut s = UnixStream::connect(socket(&state)).unwrap();
    s.write_all(
        b"POST /v1/jobs/query HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100\r\n\r\n{\"sel",
    )
    .unwrap();
    let t0 = Instant::now();
    s.set_read_timeout(Some(Duration::from_secs(45))).unwrap();
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    let text = String::from_utf8_lossy(&raw);
    assert!(
        text.starts_with("HTTP/1.1 408") && text.contains("did not arrive within 30 seconds"),
        "after {:?}: {text:?}",
        t0.elapsed()
    );
    assert!(t0.elapsed() < Duration::from_secs(40), "{:?}", t0.elapsed());
}

/// A constraint that costs a lot for every job: each level of the nested
/// ad doubles the work of the one below.
fn expensive_constraint(levels: usize) -> String {
    let mut ad = String::from("[a0 = 1");
    for i in 1..=levels {
        ad.push_str(&format!("; a{i} = a{} + a{}", i - 1, i - 1));
    }
    format!("{ad}].a{levels} > 0")
}

#[test]
fn an_expensive_query_does_not_hold_up_another() {
    let dir = scratch("limits-query");
    let state = dir.join("state");
    let _pool = PoolProcess::start(&state, &[]);
    // Held, so that they stay as they are.
    let sub = submit_file(
        &dir,
        "job.sub",
        "executable = /bin/true\ntransfer_executable = false\nhold = true\nqueue 2000\n",
    );
    common::ok(run(&state, &dir, &["submit", &sub]));

    let (_, alone) = run_within(
        &state,
        &[
            "q",
            "-allusers",
            "-constraint",
            "ProcId < 5",
            "-af",
            "ProcId",
        ],
        Duration::from_secs(30),
    );

    // One user's query that would take minutes...
    let constraint = expensive_constraint(22);
    let t0 = Instant::now();
    let mut slow = common::command(&state, &[])
        .args([
            "q",
            "-allusers",
            "-constraint",
            &constraint,
            "-af",
            "ProcId",
        ])
        .current_dir(&dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let slow_still_running = slow.try_wait().unwrap().is_none();

    // ...while another query finishes in well under a second.
    let plain = [
        "q",
        "-allusers",
        "-constraint",
        "ProcId < 5",
        "-af",
        "ProcId",
    ];
    let (o, took) = run_within(&state, &plain, Duration::from_secs(30));
    assert!(o.status.success(), "{}{}", out(&o), err(&o));
    assert_eq!(out(&o).lines().count(), 5);
    assert!(
        took < Duration::from_secs(1),
        "a plain q took {took:?} beside an expensive one"
    );

    // The expensive one ends by the query time limit (10 s), refused with
    // why, or (when each evaluation is cut short by the ClassAd library's
    // own limit) sooner with an answer.
    let deadline = Instant::now() + Duration::from_secs(30);
    while slow.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = slow.kill();
            panic!("the expensive query did not end by the query time limit");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let o = slow.wait_with_output().unwrap();
    let slow_took = t0.elapsed();
    if slow_took >= Duration::from_secs(10) {
        assert!(
            err(&o).contains("the constraint took too long to evaluate"),
            "after {slow_took:?}: {}{}",
            out(&o),
            err(&o)
        );
    }
    eprintln!("a plain q took {took:?} ({alone:?} alone); the expensive one {slow_took:?}");
    if !slow_still_running {
        eprintln!("note: the expensive query ended within 0.5 s ({slow_took:?})");
    }
    assert!(
        slow_took < Duration::from_secs(15),
        "the expensive query took {slow_took:?}"
    );
}

#[test]
fn an_oversized_body_is_refused_with_the_limit_named() {
    let dir = scratch("limits-big");
    let state = dir.join("state");
    let _pool = PoolProcess::start(&state, &[]);
    // A submission says it is over 256 MiB: refused before it is read.
    let (status, body) = raw_request(
        &state,
        &format!(
            "POST /v1/submit HTTP/1.1\r\nHost: localhost\r\nContent-Length: {}\r\n\r\n",
            (256u64 << 20) + 1
        ),
        8 << 20,
    );
    assert_eq!(status, 413, "{body}");
    assert!(
        body.contains("the submission is too large (268435457 bytes)")
            && body.contains("at most 256 MiB in one submission"),
        "{body}"
    );
    // Any other request may be at most 4 MiB.
    let (status, body) = raw_request(
        &state,
        &format!(
            "POST /v1/jobs/query HTTP/1.1\r\nHost: localhost\r\nContent-Length: {}\r\n\r\n",
            5 << 20
        ),
        5 << 20,
    );
    assert_eq!(status, 413, "{body}");
    assert!(
        body.contains("at most 4 MiB in a request other than a submission"),
        "{body}"
    );
    // A body that does not say its length is cut off when it grows over.
    let mut s = UnixStream::connect(socket(&state)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    s.write_all(
        b"POST /v1/jobs/query HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n",
    )
    .unwrap();
    let chunk = format!("{:x}\r\n{}\r\n", 1 << 20, " ".repeat(1 << 20));
    for _ in 0..6 {
        if s.write_all(chunk.as_bytes()).is_err() {
            break;
        }
    }
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    let text = String::from_utf8_lossy(&raw);
    assert!(
        text.starts_with("HTTP/1.1 413") && text.contains("at most 4 MiB"),
        "{text:?}"
    );
    // The pool is fine.
    common::ok(run(&state, &dir, &["q", "-af", "ClusterId"]));
}
