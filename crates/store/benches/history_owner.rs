//! The history of a rare owner: what a read by owner costs when the owner
//! has a few old records among a million.
//!
//! ```text
//! cargo bench -p store --bench history_owner [-- ROWS]
//! ```
//!
//! A plain benchmark that prints figures. A history of ROWS records
//! (default 1,000,000) is written as the schedd writes one: clusters
//! submitted and removed (`Op::to_history_as`, the jobs' final ads), the
//! first cluster (10 jobs) owned by `rare`, every later one (10,000 jobs
//! each) by `common`. Then, three times each, the reads the schedd makes
//! for an owner, pages of 256 newest first (`Schedd::history_page`), each
//! record parsed, for the rare and the common owner: by the owner
//! (`HistoryQuery::owner`, the wire API's `owners`) and by a constraint
//! `Owner == "x"` (`HistoryQuery::narrowed_by`, what `ferrocondor history
//! -constraint` and the bindings' `Schedd.history` send); the first page,
//! and every record of the owner (at most 10 pages). Last, what a
//! constraint the store cannot narrow costs: a walk of every record,
//! each parsed (what `-constraint 'Owner == "rare"'` cost before the
//! narrowing; the schedd gives a query 10 s).

use std::sync::Arc;
use std::time::Instant;

use classad::{ClassAd, Expr};
use store::{HistoryQuery, JobId, Op, Store};

/// The schedd's page (daemons' `HISTORY_PAGE`).
const PAGE: usize = 256;
const RARE: u32 = 10;
const CLUSTER: u32 = 10_000;

const CLUSTER_AD: &str = r#"[ In = "/dev/null"; Cmd = "/bin/true"; Err = "/dev/null"; Iwd = "/tmp/sub1m"; Out = "/dev/null"; Rank = 0.0; QDate = 1795815497; MyType = "Job"; JobPrio = 0; MaxHosts = 1; MinHosts = 1; NumCkpts = 0; Arguments = ""; DiskUsage = 35; ImageSize = 35; JobStatus = 1; ExitStatus = 0; TargetType = "Machine"; TransferIn = false; Environment = ""; JobUniverse = 5; NumRestarts = 0; RequestCpus = 1; RequestDisk = DiskUsage; TransferErr = false; TransferOut = false; CurrentHosts = 0; ExitBySignal = false; NumJobStarts = 0; RemoteSysCpu = 0.0; Requirements = (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory) && ((TARGET.FileSystemDomain == MY.FileSystemDomain) || (TARGET.HasFileTransfer)); CommittedTime = 0; RemoteUserCpu = 0.0; RequestMemory = ifthenelse(MemoryUsage isnt undefined,MemoryUsage,(ImageSize + 1023) / 1024); ExecutableSize = 35; JobNotification = 0; LeaveJobInQueue = false; FileSystemDomain = "vm"; JobLeaseDuration = 2400; ShouldTransferFiles = "IF_NEEDED"; EnteredCurrentStatus = 1795815498; WhenToTransferOutput = "ON_EXIT" ]"#;

fn expr(text: &str) -> Expr {
    classad::parse_expr(text).expect("the benchmark's expression parses")
}

/// Submits cluster `c` of `n` jobs owned by `owner`, then removes it as
/// the schedd does (each job leaving with its final ad).
fn cluster_through(s: &mut Store, owner: &str, n: u32, now: i64) {
    let c = s.reserve_cluster().expect("reserve");
    let mut cluster = ClassAd::parse(CLUSTER_AD).expect("the cluster ad parses");
    cluster.insert("ClusterId", expr(&c.to_string()));
    cluster.insert("Owner", expr(&format!("\"{owner}\"")));
    cluster.insert("User", expr(&format!("\"{owner}@vm\"")));
    let cluster = Arc::new(cluster);
    let procs: Vec<Arc<ClassAd>> = (0..n)
        .map(|p| {
            let mut ad = ClassAd::chained_to(Arc::clone(&cluster));
            ad.insert("ProcId", expr(&p.to_string()));
            ad.insert("GlobalJobId", expr(&format!("\"vm#{c}.{p}#1795815498\"")));
            Arc::new(ad)
        })
        .collect();
    s.submit_shared(c, &procs).expect("submit");
    let ops: Vec<Op> = procs
        .iter()
        .enumerate()
        .map(|(p, ad)| {
            let mut ad = (**ad).clone();
            ad.insert("JobStatus", expr("4"));
            ad.insert("EnteredCurrentStatus", expr(&now.to_string()));
            Op::to_history_as(JobId::new(c, p as u32), now, Arc::new(ad))
        })
        .collect();
    s.apply(&ops).expect("to the history");
}

/// The records `q` reads, page by page as the schedd reads them (each
/// parsed, as the schedd does before it evaluates the constraint): how
/// many, the time of the first page and of all (at most 10 pages: the
/// common owner has most of the history, and its first pages say what a
/// page costs).
fn pages(s: &Store, q: &HistoryQuery) -> (usize, f64, f64) {
    let start = Instant::now();
    let mut before = None;
    let mut n = 0;
    let mut first = None;
    loop {
        let page = s.history_page(q, before, PAGE).expect("history");
        let full = page.len() == PAGE;
        before = page.last().map(|r| r.seq);
        for row in page {
            row.parse(std::path::Path::new("bench")).expect("parse");
            n += 1;
        }
        first.get_or_insert_with(|| start.elapsed().as_secs_f64());
        if !full || n >= 10 * PAGE {
            break;
        }
    }
    (n, first.unwrap_or(0.0), start.elapsed().as_secs_f64())
}

fn owner(name: &str) -> HistoryQuery {
    HistoryQuery {
        owner: Some(name.into()),
        ..Default::default()
    }
}

/// As the schedd reads `-constraint 'Owner == "name"'`.
fn constraint(name: &str) -> HistoryQuery {
    let c = classad::parse_expr(&format!("Owner == \"{name}\"")).expect("parses");
    HistoryQuery::default().narrowed_by(&c)
}

fn main() {
    let rows: u32 = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let dir = tempfile::tempdir().expect("temporary directory");
    let path = dir.path().join("queue.db");
    let mut s = Store::open(&path).expect("open");
    let start = Instant::now();
    let mut now = 1_795_815_500;
    cluster_through(&mut s, "rare", RARE, now);
    let mut written = RARE;
    while written < rows {
        let n = CLUSTER.min(rows - written);
        now += 60;
        cluster_through(&mut s, "common", n, now);
        written += n;
    }
    s.checkpoint().expect("checkpoint");
    let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    println!(
        "history of {written} records ({RARE} old ones of `rare`, the rest `common`) \
         written in {:.1} s, {:.0} MB",
        start.elapsed().as_secs_f64(),
        size as f64 / 1e6
    );
    for round in 1..=3 {
        for (what, q) in [
            ("owner `rare`", owner("rare")),
            ("constraint Owner == \"rare\"", constraint("rare")),
            ("owner `common`", owner("common")),
            ("constraint Owner == \"common\"", constraint("common")),
        ] {
            let (n, first, all) = pages(&s, &q);
            println!(
                "round {round}: {what:<32} first page {:>8.1} ms, {n:>5} records {:>8.1} ms",
                first * 1e3,
                all * 1e3,
            );
        }
    }
    // A constraint the store cannot narrow (and any constraint before
    // `HistoryQuery::narrowed_by`): every record parsed, newest first.
    let start = Instant::now();
    let (mut before, mut read, mut rare) = (None, 0usize, 0usize);
    loop {
        let page = s
            .history_page(&HistoryQuery::default(), before, PAGE)
            .expect("history");
        if page.is_empty() {
            break;
        }
        before = page.last().map(|r| r.seq);
        read += page.len();
        for row in page {
            let record = row.parse(&path).expect("parse");
            rare += usize::from(record.owner.as_deref() == Some("rare"));
        }
    }
    let took = start.elapsed().as_secs_f64();
    println!(
        "every record parsed (a constraint the store cannot narrow): {read} in {:.2} s \
         ({:.1} µs each; {rare} of `rare`)",
        took,
        took * 1e6 / read.max(1) as f64
    );
}
