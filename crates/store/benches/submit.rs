//! Submit throughput into the store, and what a queued job costs.
//!
//! ```text
//! cargo bench -p store --bench submit
//! ```
//!
//! First a memory report (measured, not estimated):
//! * bytes on disk per queued job: a fresh store filled with 1-proc clusters
//!   and one filled with 1,000-proc clusters, closed (so the WAL is
//!   checkpointed into the main file), file size divided by jobs;
//! * heap bytes per job of the queue as `load_queue` returns it, counted by
//!   a counting global allocator (live bytes after minus before), with the
//!   change in resident set size beside it.
//!
//! Then criterion's throughput (jobs per second) for submitting clusters of
//! 1 and of 1,000 procs (each submission one transaction, fsynced; building
//! the ads is left out of the time, it is the caller's work), for an
//! update of 3 attributes of one job, and for reading 10,000 jobs back.
//! The job ad is shaped like condor_submit's for a vanilla job (45
//! attributes), with 4 that differ per proc (ProcId, Args, Out, Err).

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicIsize, Ordering};
use std::time::{Duration, Instant};

use classad::ClassAd;
use criterion::{Criterion, SamplingMode, Throughput};
use store::{JobId, Op, Store};

/// The system allocator, counting live bytes, so the memory report is a
/// measurement.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(
            new_size as isize - layout.size() as isize,
            Ordering::Relaxed,
        );
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn job_ad(cluster: u32, proc: u32) -> ClassAd {
    let text = format!(
        r#"[
        MyType = "Job"; TargetType = "Machine"; ClusterId = {cluster}; ProcId = {proc};
        Owner = "coltrane"; User = "coltrane@bo.infn.it"; AcctGroup = "physics";
        AccountingGroup = "physics.coltrane"; JobUniverse = 5; Cmd = "/home/coltrane/analysis/run.sh";
        Args = "--input data/part-{proc}.root --events 100000"; Iwd = "/home/coltrane/analysis";
        In = "/dev/null"; Out = "out/job.{cluster}.{proc}.out"; Err = "out/job.{cluster}.{proc}.err";
        UserLog = "/home/coltrane/analysis/job.log"; JobStatus = 1; EnteredCurrentStatus = 1700000000;
        QDate = 1700000000; CompletionDate = 0; JobPrio = 0; NiceUser = false; ImageSize = 20000;
        ExecutableSize = 20000; DiskUsage = 20000; RequestCpus = 1; RequestMemory = 1024;
        RequestDisk = DiskUsage; RemoteWallClockTime = 0.0; CumulativeSuspensionTime = 0;
        NumJobStarts = 0; NumRestarts = 0; NumCkpts = 0; JobRunCount = 0;
        ShouldTransferFiles = "IF_NEEDED"; WhenToTransferOutput = "ON_EXIT";
        TransferInput = "data/part-{proc}.root"; LeaveJobInQueue = false;
        PeriodicHold = false; PeriodicRelease = false;
        PeriodicRemove = (JobStatus == 2) && (time() - EnteredCurrentStatus > 86400);
        OnExitHold = false; OnExitRemove = true; JobNotification = 0; BolognaBatchJob = true;
        SUBMIT_SITE_DOMAIN = "bo.infn.it"; Environment = "OMP_NUM_THREADS=1 LANG=C";
        Requirements = (TARGET.BolognaBatchServer == true) && (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory) && ((TARGET.FileSystemDomain == MY.FileSystemDomain) || (TARGET.HasFileTransfer));
        Rank = TARGET.Memory
        ]"#
    );
    ClassAd::parse(&text).expect("the benchmark's job ad parses")
}

fn cluster(store: &mut Store, procs: u32) -> u32 {
    let c = store.reserve_cluster().expect("reserve");
    let ads: Vec<ClassAd> = (0..procs).map(|p| job_ad(c, p)).collect();
    store.submit_cluster(c, &ads).expect("submit");
    c
}

/// The time `submit_cluster` takes for `n` clusters, leaving out building
/// the ads (the caller's work, parsing mostly) and dropping them.
fn timed_submits(store: &mut Store, procs: u32, n: u64) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..n {
        let c = store.reserve_cluster().expect("reserve");
        let ads: Vec<ClassAd> = (0..procs).map(|p| job_ad(c, p)).collect();
        let start = Instant::now();
        store.submit_cluster(c, &ads).expect("submit");
        total += start.elapsed();
        drop(black_box(ads));
    }
    total
}

/// Resident set size in bytes (Linux), for a rough check of the heap count.
fn rss() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

fn memory_report() {
    println!(
        "store memory per queued job ({} attributes per job ad)",
        job_ad(1, 0).len()
    );
    for (label, clusters, procs) in [
        ("1-proc clusters", 5_000u32, 1u32),
        ("1,000-proc clusters", 10, 1_000),
    ] {
        let dir = tempfile::tempdir().expect("temporary directory");
        let path = dir.path().join("queue.db");
        let mut s = Store::open(&path).expect("open");
        for _ in 0..clusters {
            cluster(&mut s, procs);
        }
        drop(s);
        let jobs = u64::from(clusters * procs);
        let disk = std::fs::metadata(&path).expect("size").len();

        let s = Store::open(&path).expect("reopen");
        let rss_before = rss();
        let live_before = LIVE.load(Ordering::Relaxed);
        let queue = s.load_queue().expect("load");
        let live_after = LIVE.load(Ordering::Relaxed);
        let rss_after = rss();
        assert_eq!(queue.len() as u64, jobs);
        let heap = (live_after - live_before) as f64 / jobs as f64;
        let rss_note = match (rss_before, rss_after) {
            (Some(a), Some(b)) => format!(
                ", resident set grew {:.0} bytes/job",
                (b.saturating_sub(a)) as f64 / jobs as f64
            ),
            _ => String::new(),
        };
        println!(
            "  {label:>20}: {jobs} jobs, {:.0} bytes/job on disk, {heap:.0} heap bytes/job loaded{rss_note}",
            disk as f64 / jobs as f64
        );
        black_box(queue);
    }
}

fn benches(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temporary directory");

    let mut g = c.benchmark_group("submit");
    g.sample_size(30).measurement_time(Duration::from_secs(5));
    g.throughput(Throughput::Elements(1));
    let mut s = Store::open(dir.path().join("one.db")).expect("open");
    g.bench_function("cluster of 1 proc", |b| {
        b.iter_custom(|n| timed_submits(&mut s, 1, n))
    });
    drop(s);
    g.sampling_mode(SamplingMode::Flat).sample_size(10);
    g.throughput(Throughput::Elements(1_000));
    let mut s = Store::open(dir.path().join("thousand.db")).expect("open");
    g.bench_function("cluster of 1000 procs", |b| {
        b.iter_custom(|n| timed_submits(&mut s, 1_000, n))
    });
    drop(s);
    g.finish();

    let mut g = c.benchmark_group("queue");
    g.sample_size(30).measurement_time(Duration::from_secs(5));
    let mut s = Store::open(dir.path().join("queue.db")).expect("open");
    for _ in 0..10 {
        cluster(&mut s, 1_000);
    }
    let job = JobId::new(5, 500);
    let mut n = 0i64;
    g.throughput(Throughput::Elements(1));
    g.bench_function("update 3 attributes of a job", |b| {
        b.iter(|| {
            n += 1;
            let e = |v: i64| classad::Expr::from_value(classad::Value::Int(v));
            s.apply(&[
                Op::set(job, "JobStatus", e(2)),
                Op::set(job, "EnteredCurrentStatus", e(1_700_000_000 + n)),
                Op::set(job, "NumJobStarts", e(n)),
            ])
            .expect("update")
        })
    });
    g.sampling_mode(SamplingMode::Flat).sample_size(10);
    g.throughput(Throughput::Elements(10_000));
    g.bench_function("load 10000 jobs", |b| {
        b.iter(|| s.load_queue().expect("load"))
    });
    g.finish();
}

fn main() {
    memory_report();
    let mut c = Criterion::default().configure_from_args();
    benches(&mut c);
    c.final_summary();
}
