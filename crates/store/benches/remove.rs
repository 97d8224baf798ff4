//! The removal of a big cluster: what `rm` of a 100,000-job cluster costs
//! the store.
//!
//! ```text
//! cargo bench -p store --bench remove [-- JOBS]
//! ```
//!
//! A plain benchmark that prints figures. A cluster shaped as the
//! schedd stores one (`queue N` of /bin/true: a cluster ad of 60
//! attributes, each proc's own ProcId and GlobalJobId) is submitted,
//! then removed as the schedd removes it: one batch (`Store::apply`)
//! with each job's removal attributes (RemoveReason, LastJobStatus,
//! JobStatus, EnteredCurrentStatus) and its move to the history. It
//! prints the time of that batch (fsync included), the bytes it put in
//! the write-ahead log, and the time of a few history reads after it.
//! Six rounds, each on a fresh store, taking turns: the removal as
//! changes and moves (`Op::set`, `Op::to_history`: the store reads the
//! jobs back), and as the jobs' final ads (`Op::to_history_as`, what the
//! schedd stores).

use std::sync::Arc;
use std::time::Instant;

use classad::{ClassAd, Expr};
use store::{HistoryQuery, JobId, Op, Store};

const CLUSTER_AD: &str = r#"[ In = "/dev/null"; Cmd = "/bin/true"; Err = "/dev/null"; Iwd = "/tmp/sub1m"; Out = "/dev/null"; Rank = 0.0; User = "nobody@vm"; Owner = "nobody"; QDate = 1795815497; MyType = "Job"; JobPrio = 0; MaxHosts = 1; MinHosts = 1; NumCkpts = 0; Arguments = ""; ClusterId = 1; DiskUsage = 35; ImageSize = 35; JobStatus = 1; ExitStatus = 0; TargetType = "Machine"; TransferIn = false; Environment = ""; JobUniverse = 5; NumRestarts = 0; RequestCpus = 1; RequestDisk = DiskUsage; TransferErr = false; TransferOut = false; CurrentHosts = 0; ExitBySignal = false; NumJobStarts = 0; RemoteSysCpu = 0.0; Requirements = (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory) && ((TARGET.FileSystemDomain == MY.FileSystemDomain) || (TARGET.HasFileTransfer)); CommittedTime = 0; RemoteUserCpu = 0.0; RequestMemory = ifthenelse(MemoryUsage isnt undefined,MemoryUsage,(ImageSize + 1023) / 1024); ExecutableSize = 35; NumSystemHolds = 0; JobNotification = 0; LeaveJobInQueue = false; FileSystemDomain = "vm"; JobLeaseDuration = 2400; TotalSuspensions = 0; CommittedSlotTime = 0; NumJobCompletions = 0; CumulativeSlotTime = 0; LastSuspensionTime = 0; RemoteWallClockTime = 0.0; ShouldTransferFiles = "IF_NEEDED"; TransferInputSizeMB = 0; EnteredCurrentStatus = 1795815498; WhenToTransferOutput = "ON_EXIT"; CumulativeRemoteSysCpu = 0.0; CommittedSuspensionTime = 0; CumulativeRemoteUserCpu = 0.0; CumulativeSuspensionTime = 0 ]"#;

fn expr(text: &str) -> Expr {
    classad::parse_expr(text).expect("the benchmark's expression parses")
}

/// The schedd's jobs of cluster `c`: proc ads chained to one cluster ad.
fn procs(c: u32, n: u32) -> Vec<Arc<ClassAd>> {
    let mut cluster = ClassAd::parse(CLUSTER_AD).expect("the cluster ad parses");
    cluster.insert("ClusterId", expr(&c.to_string()));
    let cluster = Arc::new(cluster);
    (0..n)
        .map(|p| {
            let mut ad = ClassAd::chained_to(Arc::clone(&cluster));
            ad.insert("ProcId", expr(&p.to_string()));
            ad.insert("GlobalJobId", expr(&format!("\"vm#{c}.{p}#1795815498\"")));
            Arc::new(ad)
        })
        .collect()
}

/// The batch the schedd stores for `rm` of the cluster.
fn removal(c: u32, n: u32, now: i64) -> Vec<Op> {
    let reason = expr("\"via condor_rm (by user nobody)\"");
    let mut ops = Vec::with_capacity(n as usize * 5);
    for p in 0..n {
        let job = JobId::new(c, p);
        ops.push(Op::set(job, "RemoveReason", reason.clone()));
        ops.push(Op::set(job, "LastJobStatus", expr("1")));
        ops.push(Op::set(job, "JobStatus", expr("3")));
        ops.push(Op::set(job, "EnteredCurrentStatus", expr(&now.to_string())));
        ops.push(Op::to_history(job, now));
    }
    ops
}

/// The same removal as the schedd stores it: each job leaving with its
/// final ad (its proc ad with the removal's attributes, chained to the
/// cluster ad), nothing read back.
fn removal_as(c: u32, procs: &[Arc<ClassAd>], now: i64) -> Vec<Op> {
    let reason = expr("\"via condor_rm (by user nobody)\"");
    procs
        .iter()
        .enumerate()
        .map(|(p, ad)| {
            let mut ad = (**ad).clone();
            ad.insert("RemoveReason", reason.clone());
            ad.insert("LastJobStatus", expr("1"));
            ad.insert("JobStatus", expr("3"));
            ad.insert("EnteredCurrentStatus", expr(&now.to_string()));
            Op::to_history_as(JobId::new(c, p as u32), now, Arc::new(ad))
        })
        .collect()
}

fn wal_bytes(db: &std::path::Path) -> u64 {
    let wal = db.with_file_name(format!(
        "{}-wal",
        db.file_name().expect("a file name").to_string_lossy()
    ));
    std::fs::metadata(wal).map(|m| m.len()).unwrap_or(0)
}

fn main() {
    let jobs: u32 = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(100_000);
    println!("removal of a {jobs}-job cluster from the store (one fsynced batch)");
    for (round, with_ads) in [
        (1, false),
        (2, true),
        (3, false),
        (4, true),
        (5, false),
        (6, true),
    ] {
        let dir = tempfile::tempdir().expect("temporary directory");
        let path = dir.path().join("queue.db");
        let mut s = Store::open(&path).expect("open");
        // An earlier cluster in the history, so the history is not empty.
        let old = s.reserve_cluster().expect("reserve");
        s.submit_shared(old, &procs(old, 1000)).expect("submit");
        s.apply(&removal(old, 1000, 1795815400)).expect("remove");
        let c = s.reserve_cluster().expect("reserve");
        let queued = procs(c, jobs);
        s.submit_shared(c, &queued).expect("submit");
        // The WAL so far is the submission's: checkpointing it leaves
        // the removal's own bytes to count.
        drop(s);
        let mut s = Store::open(&path).expect("reopen");
        let wal_before = wal_bytes(&path);
        let ops = if with_ads {
            removal_as(c, &queued, 1795815501)
        } else {
            removal(c, jobs, 1795815501)
        };
        drop(queued);
        let start = Instant::now();
        s.apply(&ops).expect("remove");
        let took = start.elapsed();
        let wal = wal_bytes(&path).saturating_sub(wal_before);
        let start = Instant::now();
        let by_job = s
            .history(&HistoryQuery {
                cluster: Some(c),
                proc: Some(jobs / 2),
                ..Default::default()
            })
            .expect("history");
        let one = start.elapsed();
        assert_eq!(by_job.len(), 1);
        let start = Instant::now();
        let page = s
            .history_page(
                &HistoryQuery {
                    owner: Some("nobody".into()),
                    ..Default::default()
                },
                None,
                1000,
            )
            .expect("history");
        let owner_page = start.elapsed();
        assert_eq!(page.len(), 1000);
        println!(
            "round {round}: removal ({}) {:.3} s, {:.1} MB of WAL; history of one job {:.1} ms, \
             a page of 1,000 by owner {:.1} ms",
            if with_ads { "final ads" } else { "changes  " },
            took.as_secs_f64(),
            wal as f64 / 1e6,
            one.as_secs_f64() * 1e3,
            owner_page.as_secs_f64() * 1e3,
        );
    }
}
