//! The schedd's chained jobs (proc ads over one cluster ad) in the store,
//! and the bulk move of a batch's leaving jobs to the history: what is
//! stored and read back, and the history ads, are exactly what whole ads
//! and job-by-job moves gave.

use std::sync::Arc;

use classad::{ClassAd, Expr};
use store::{HistoryQuery, JobId, Op, Store};

fn ad(text: &str) -> ClassAd {
    ClassAd::parse(text).expect("test ad parses")
}

fn expr(text: &str) -> Expr {
    classad::parse_expr(text).expect("test expression parses")
}

const CLUSTER: &str = r#"[ ClusterId = 3; Owner = "alice"; Cmd = "/bin/true";
    JobStatus = 1; RequestMemory = 1024 * 2; 'odd name' = undefined;
    Requirements = TARGET.Memory >= RequestMemory && OpSys == "LINUX";
    Env = { "A=1", "B=2" }; Nested = [ x = 1; y = "two" ]; Ratio = 0.1 ]"#;

/// Four procs chained to one cluster ad: each with its ProcId and
/// arguments; proc 1 overrides JobStatus, proc 2 deletes Ratio.
fn chained() -> Vec<Arc<ClassAd>> {
    let cluster = Arc::new(ad(CLUSTER));
    (0..4)
        .map(|p| {
            let mut a = ClassAd::chained_to(Arc::clone(&cluster));
            a.insert_value("ProcId", p as i64);
            a.insert_value("Args", format!("{p}").as_str());
            if p == 1 {
                a.insert_value("jobstatus", 5i64);
            }
            if p == 2 {
                a.remove("Ratio");
            }
            Arc::new(a)
        })
        .collect()
}

#[test]
fn chained_jobs_are_stored_as_they_are_and_read_back_chained() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("queue.db");
    let jobs = chained();
    {
        let mut s = Store::open(&path).unwrap();
        let c = s.reserve_cluster().unwrap();
        s.submit_shared(c, &jobs).unwrap();
    }
    let s = Store::open(&path).unwrap();
    let back = s.load_queue().unwrap();
    assert_eq!(back.len(), 4);
    let parent = back[0].ad.parent().expect("chained").clone();
    for (job, sent) in back.iter().zip(&jobs) {
        assert_eq!(job.ad.to_string(), sent.to_string(), "job {}", job.id);
        assert!(Arc::ptr_eq(job.ad.parent().unwrap(), &parent));
        assert_eq!(
            s.job(job.id).unwrap().unwrap().to_string(),
            sent.to_string()
        );
    }
    assert!(back[2].ad.get("Ratio").is_none());
    assert_eq!(back[2].ad.hidden().len(), 1);
}

/// A cluster of many procs (their rows written many to a statement, the
/// last statement short), each with its own attributes, a deletion
/// among them: every job reads back as it was submitted.
#[test]
fn a_large_chained_cluster_reads_back_job_by_job() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("queue.db");
    let cluster = Arc::new(ad(CLUSTER));
    let jobs: Vec<Arc<ClassAd>> = (0..1_001)
        .map(|p| {
            let mut a = ClassAd::chained_to(Arc::clone(&cluster));
            a.insert_value("ProcId", p as i64);
            a.insert_value("GlobalJobId", format!("ap#3.{p}#1").as_str());
            if p % 7 == 0 {
                a.remove("Ratio");
            }
            Arc::new(a)
        })
        .collect();
    {
        let mut s = Store::open(&path).unwrap();
        let c = s.reserve_cluster().unwrap();
        s.submit_shared(c, &jobs).unwrap();
    }
    let s = Store::open(&path).unwrap();
    let back = s.load_queue().unwrap();
    assert_eq!(back.len(), jobs.len());
    for (job, sent) in back.iter().zip(&jobs) {
        assert_eq!(job.ad.to_string(), sent.to_string(), "job {}", job.id);
    }
    assert_eq!(back[1_000].id, JobId::new(1, 1_000));
}

#[test]
fn a_batch_of_leaving_jobs_writes_the_history_ads_one_by_one_would() {
    let dir = tempfile::tempdir().unwrap();
    // The same queue twice: jobs moved one batch each (one job a batch
    // takes the plain path), and all in one batch (the bulk path).
    let mut stores: Vec<Store> = ["one.db", "bulk.db"]
        .iter()
        .map(|f| Store::open(dir.path().join(f)).unwrap())
        .collect();
    for s in &mut stores {
        let c = s.reserve_cluster().unwrap();
        s.submit_shared(c, &chained()).unwrap();
        let c = s.reserve_cluster().unwrap();
        s.submit_cluster(c, &[ad(r#"[ ClusterId = 2; ProcId = 0; Owner = "bob" ]"#)])
            .unwrap();
        // A change stored before the batch.
        s.apply(&[Op::set(JobId::new(1, 3), "Stored", expr("\"yes\""))])
            .unwrap();
    }
    // Per job: what the batch changes before it leaves.
    // (1.3 deletes one of its cluster's attributes: its history row is
    // whole; 1.0 and 1.1 share a record of their cluster's.)
    let batch = |job: JobId| -> Vec<Op> {
        let gone = if job == JobId::new(1, 3) {
            "Cmd"
        } else {
            "NotThere"
        };
        vec![
            Op::set(job, "JobStatus", expr("3")),
            Op::set(job, "RemoveReason", expr("\"via condor_rm\"")),
            Op::set(job, "ZZ last", expr("1 + 2")),
            Op::delete(job, gone),
            Op::delete(job, "Args"),
            Op::to_history(job, 77),
        ]
    };
    // 1.0, 1.1, 1.3 and 2.0 leave (1.2 stays, so the runs are 1.0-1.1,
    // 1.3 and 2.0); 1.2 only changes.
    let leaving = [
        JobId::new(1, 0),
        JobId::new(1, 1),
        JobId::new(1, 3),
        JobId::new(2, 0),
    ];
    for job in leaving {
        stores[0].apply(&batch(job)[..5]).unwrap();
        stores[0].apply(&batch(job)[5..]).unwrap();
    }
    stores[0]
        .apply(&[Op::set(JobId::new(1, 2), "Kept", expr("true"))])
        .unwrap();
    let mut all: Vec<Op> = leaving.iter().rev().flat_map(|j| batch(*j)).collect();
    all.insert(3, Op::set(JobId::new(1, 2), "Kept", expr("true")));
    stores[1].apply(&all).unwrap();

    let (one, bulk) = (history_of(&stores[0]), history_of(&stores[1]));
    assert_eq!(one.len(), 4);
    assert_eq!(one, bulk);
    assert_eq!(bulk[0].1.as_deref(), Some("alice"));
    assert_eq!(bulk[3].1.as_deref(), Some("bob"));
    // The stored text itself, not only what it parses to.
    assert_eq!(stored_rows(&stores[0]), stored_rows(&stores[1]));
    for s in &stores {
        let q = s.load_queue().unwrap();
        assert_eq!(q.len(), 1);
        assert_eq!(q[0].id, JobId::new(1, 2));
        assert!(q[0].ad.get("Kept").is_some());
    }
    assert_eq!(
        stores[0].load_queue().unwrap()[0].ad.to_string(),
        stores[1].load_queue().unwrap()[0].ad.to_string()
    );
    drop(stores);
    let count = |file: &str, sql: &str| -> i64 {
        rusqlite::Connection::open(dir.path().join(file))
            .unwrap()
            .query_row(sql, [], |r| r.get(0))
            .unwrap()
    };
    let shared = "SELECT count(*) FROM history_shared";
    assert_eq!(count("one.db", shared), 0);
    assert_eq!(count("bulk.db", shared), 1);
    assert_eq!(
        count(
            "bulk.db",
            "SELECT count(*) FROM history WHERE shared IS NOT NULL"
        ),
        2
    );
    // The shared record goes with the last row that names it.
    let mut s = Store::open(dir.path().join("bulk.db")).unwrap();
    assert_eq!(s.prune_history(78).unwrap(), 4);
    drop(s);
    assert_eq!(count("bulk.db", shared), 0);
}

#[test]
fn a_bulk_batch_with_a_missing_job_or_a_second_move_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Store::open(dir.path().join("q.db")).unwrap();
    let c = s.reserve_cluster().unwrap();
    s.submit_shared(c, &chained()).unwrap();
    let before = |s: &Store| {
        s.load_queue()
            .unwrap()
            .iter()
            .map(|j| j.ad.to_string())
            .collect::<Vec<_>>()
    };
    let was = before(&s);
    let job = |p| JobId::new(c, p);
    for ops in [
        vec![Op::to_history(job(0), 1), Op::to_history(job(9), 1)],
        vec![Op::to_history(job(0), 1), Op::to_history(job(0), 1)],
        vec![
            Op::to_history(job(1), 1),
            Op::set(job(1), "X", expr("1")),
            Op::to_history(job(2), 1),
        ],
        vec![Op::set(job(0), "", expr("1")), Op::to_history(job(0), 1)],
    ] {
        assert!(s.apply(&ops).is_err(), "{ops:?}");
        assert_eq!(before(&s), was);
        assert!(s.history(&HistoryQuery::default()).unwrap().is_empty());
    }
}

#[test]
fn what_every_leaving_job_changes_alike_is_stored_once_and_read_back_whole() {
    let dir = tempfile::tempdir().unwrap();
    // The same queue twice: jobs moved one batch each (whole rows), and
    // all in one batch (a shared record).
    let mut stores: Vec<Store> = ["one.db", "bulk.db"]
        .iter()
        .map(|f| Store::open(dir.path().join(f)).unwrap())
        .collect();
    for s in &mut stores {
        let c = s.reserve_cluster().unwrap();
        s.submit_shared(c, &chained()).unwrap();
    }
    // A removal: the same attributes for every job, except that proc 2's
    // reason differs, and every job takes a new Owner (so the rows'
    // owner is the changed one) and sets its own Args (its own text).
    let batch = |p: u32| -> Vec<Op> {
        let job = JobId::new(1, p);
        let reason = if p == 2 {
            "\"other\""
        } else {
            "\"via condor_rm\""
        };
        vec![
            Op::set(job, "RemoveReason", expr(reason)),
            Op::set(job, "LastJobStatus", expr("1")),
            Op::set(job, "JobStatus", expr("3")),
            Op::set(job, "Owner", expr("\"carol\"")),
            Op::set(job, "Args", expr(&format!("\"{p} again\""))),
            Op::to_history(job, 90),
        ]
    };
    for p in 0..4 {
        stores[0].apply(&batch(p)).unwrap();
    }
    let all: Vec<Op> = (0..4).flat_map(batch).collect();
    stores[1].apply(&all).unwrap();
    let (one, bulk) = (history_of(&stores[0]), history_of(&stores[1]));
    assert_eq!(one.len(), 4);
    assert_eq!(one, bulk);
    for (id, owner, _, text) in &bulk {
        assert_eq!(owner.as_deref(), Some("carol"), "{id}");
        let ad = ad(text);
        assert_eq!(ad.get("JobStatus").unwrap().to_string(), "3");
        // Proc 1's own JobStatus (5) was changed like the others'.
        assert_eq!(ad.get("LastJobStatus").unwrap().to_string(), "1");
    }
    assert!(bulk[2].3.contains(r#"RemoveReason = "other""#));
    assert!(bulk[1].3.contains(r#"RemoveReason = "via condor_rm""#));
    drop(stores);
    let texts = |sql: &str| -> Vec<String> {
        let conn = rusqlite::Connection::open(dir.path().join("bulk.db")).unwrap();
        let mut st = conn.prepare(sql).unwrap();
        let rows = st.query_map([], |r| r.get(0)).unwrap();
        rows.map(Result::unwrap).collect()
    };
    // The common changes are in the shared record, once; the rows hold
    // what differs (ProcId, Args, RemoveReason, as proc 2's differs;
    // proc 2 also deleted Ratio, so its row is whole).
    let shared = texts("SELECT ad FROM history_shared");
    assert_eq!(shared.len(), 1);
    for attr in ["LastJobStatus = 1", "JobStatus = 3", r#"Owner = "carol""#] {
        assert!(shared[0].contains(attr), "{attr} in {}", shared[0]);
    }
    assert!(!shared[0].contains("RemoveReason"));
    let rows = texts("SELECT ad FROM history WHERE shared IS NOT NULL ORDER BY proc");
    assert_eq!(rows.len(), 3, "{rows:?}");
    for row in &rows {
        assert!(!row.contains("JobStatus"), "{row}");
        assert!(!row.contains("Owner"), "{row}");
        assert!(row.contains("Args"), "{row}");
        assert!(row.contains("RemoveReason"), "{row}");
    }
}

#[test]
fn jobs_leaving_with_their_final_ads_make_the_history_their_stored_rows_would() {
    let dir = tempfile::tempdir().unwrap();
    // The same queue twice: the batch's changes and moves given as ops
    // (the store reads the jobs back), and as the jobs' final ads.
    let mut stores: Vec<Store> = ["ops.db", "ads.db"]
        .iter()
        .map(|f| Store::open(dir.path().join(f)).unwrap())
        .collect();
    let jobs = chained();
    let single = ad(r#"[ ClusterId = 2; ProcId = 0; Owner = "bob"; Cmd = "/bin/sleep" ]"#);
    for s in &mut stores {
        let c = s.reserve_cluster().unwrap();
        s.submit_shared(c, &jobs).unwrap();
        let c = s.reserve_cluster().unwrap();
        s.submit_cluster(c, std::slice::from_ref(&single)).unwrap();
    }
    // A removal of 1.0, 1.1, 1.2 (which hides Ratio) and 2.0 (alone of
    // its cluster); 1.3 stays.
    let changes = |p: u32| -> Vec<(&'static str, String)> {
        vec![
            ("RemoveReason", "\"via condor_rm\"".to_string()),
            ("LastJobStatus", if p == 1 { "5" } else { "1" }.to_string()),
            ("JobStatus", "3".to_string()),
            ("EnteredCurrentStatus", "1700000100".to_string()),
        ]
    };
    let leaving = [
        (JobId::new(1, 0), (*jobs[0]).clone()),
        (JobId::new(1, 1), (*jobs[1]).clone()),
        (JobId::new(1, 2), (*jobs[2]).clone()),
        (JobId::new(2, 0), single.clone()),
    ];
    let mut ops = Vec::new();
    let mut as_ads = Vec::new();
    for (job, mut final_ad) in leaving {
        for (name, text) in changes(job.proc) {
            ops.push(Op::set(job, name, expr(&text)));
            final_ad.insert(name, expr(&text));
        }
        ops.push(Op::to_history(job, 1700000100));
        as_ads.push(Op::to_history_as(job, 1700000100, Arc::new(final_ad)));
    }
    stores[0].apply(&ops).unwrap();
    stores[1].apply(&as_ads).unwrap();
    let (by_ops, by_ads) = (history_of(&stores[0]), history_of(&stores[1]));
    assert_eq!(by_ops.len(), 4);
    assert_eq!(by_ops, by_ads);
    assert_eq!(by_ads[3].1.as_deref(), Some("bob"));
    // The stored text itself, not only what it parses to.
    assert_eq!(stored_rows(&stores[0]), stored_rows(&stores[1]));
    for s in &stores {
        let q = s.load_queue().unwrap();
        assert_eq!(q.len(), 1);
        assert_eq!(q[0].id, JobId::new(1, 3));
        assert_eq!(q[0].ad.to_string(), jobs[3].to_string());
    }
    drop(stores);
    let count = |file: &str, sql: &str| -> i64 {
        rusqlite::Connection::open(dir.path().join(file))
            .unwrap()
            .query_row(sql, [], |r| r.get(0))
            .unwrap()
    };
    for sql in [
        "SELECT count(*) FROM history_shared",
        "SELECT count(*) FROM history WHERE shared IS NOT NULL",
        "SELECT count(*) FROM cluster_attrs WHERE cluster = 2",
        "SELECT count(*) FROM job_attrs",
    ] {
        assert_eq!(count("ops.db", sql), count("ads.db", sql), "{sql}");
    }
    // 1.0 and 1.1 share a record (1.2 hides Ratio: whole), and it holds
    // what both changed alike.
    assert_eq!(
        count(
            "ads.db",
            "SELECT count(*) FROM history WHERE shared IS NOT NULL"
        ),
        2
    );
    assert_eq!(
        count(
            "ads.db",
            "SELECT count(*) FROM history WHERE ad LIKE '%RemoveReason%' AND shared IS NOT NULL"
        ),
        0
    );
}

#[test]
fn a_batch_of_final_ads_with_a_job_not_queued_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Store::open(dir.path().join("q.db")).unwrap();
    let c = s.reserve_cluster().unwrap();
    let jobs = chained();
    s.submit_shared(c, &jobs).unwrap();
    let was: Vec<String> = s
        .load_queue()
        .unwrap()
        .iter()
        .map(|j| j.ad.to_string())
        .collect();
    let leave = |p: u32| Op::to_history_as(JobId::new(c, p), 5, Arc::clone(&jobs[0]));
    for ops in [
        vec![leave(0), leave(1), leave(9)],
        vec![leave(7)],
        vec![leave(2), leave(2)],
    ] {
        let e = s.apply(&ops).unwrap_err();
        assert!(matches!(e, store::Error::NoSuchJob { .. }), "{e}");
        let now: Vec<String> = s
            .load_queue()
            .unwrap()
            .iter()
            .map(|j| j.ad.to_string())
            .collect();
        assert_eq!(now, was);
        assert!(s.history(&HistoryQuery::default()).unwrap().is_empty());
    }
    // One alone, and the cluster's last ones: the cluster's ad goes
    // with the last.
    s.apply(&[leave(0)]).unwrap();
    s.apply(&[leave(1), leave(2), leave(3)]).unwrap();
    assert_eq!(s.history(&HistoryQuery::default()).unwrap().len(), 4);
    assert!(s.load_queue().unwrap().is_empty());
}

/// Every history record: (job, owner, entered, the ad), sorted.
fn history_of(s: &Store) -> Vec<(JobId, Option<String>, i64, String)> {
    let mut h: Vec<(JobId, Option<String>, i64, String)> = s
        .history(&HistoryQuery::default())
        .unwrap()
        .into_iter()
        .map(|r| (r.id, r.owner, r.entered, r.ad.to_string()))
        .collect();
    h.sort();
    h
}

/// The history's stored text itself, not only what it parses to.
fn stored_rows(s: &Store) -> Vec<(JobId, String)> {
    let mut r: Vec<(JobId, String)> = s
        .history_page(&HistoryQuery::default(), None, 100)
        .unwrap()
        .into_iter()
        .map(|r| (r.id, r.text))
        .collect();
    r.sort();
    r
}
