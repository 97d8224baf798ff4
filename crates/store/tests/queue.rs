//! The store's behaviour: round trips through a reopen, atomicity of bad
//! batches, history queries, cluster ids, schema versions and locking.

use classad::{ClassAd, Expr};
use store::{Error, HistoryQuery, JobId, Op, Store, SCHEMA_VERSION};
use tempfile::TempDir;

fn ad(text: &str) -> ClassAd {
    ClassAd::parse(text).expect("test ad parses")
}

fn expr(text: &str) -> Expr {
    classad::parse_expr(text).expect("test expression parses")
}

fn text(ad: &ClassAd) -> String {
    let mut s = String::new();
    classad::unparse::ad_into(&mut s, ad);
    s
}

fn fresh() -> (TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().expect("temporary directory");
    let path = dir.path().join("queue.db");
    (dir, path)
}

/// A cluster of `n` procs shaped like condor_submit's output: most
/// attributes shared, a few per proc.
fn cluster_ads(cluster: u32, n: u32, owner: &str) -> Vec<ClassAd> {
    (0..n)
        .map(|p| {
            ad(&format!(
                r#"[ ClusterId = {cluster}; ProcId = {p}; Owner = "{owner}"; Cmd = "/bin/true";
                    Args = "{p}"; JobStatus = 1; RequestMemory = 1024 * 2;
                    Requirements = TARGET.Memory >= RequestMemory && OpSys == "LINUX";
                    Env = {{ "A=1", "B=2" }}; Nested = [ x = 1; y = "two" ];
                    Ratio = 0.1; 'odd name' = undefined ]"#
            ))
        })
        .collect()
}

fn submit(store: &mut Store, procs: &[ClassAd]) -> u32 {
    let c = store.reserve_cluster().expect("reserve");
    store.submit_cluster(c, procs).expect("submit");
    c
}

#[test]
fn a_submitted_cluster_reads_back_whole_after_reopening() {
    let (_dir, path) = fresh();
    let (one, many);
    let mut submitted = Vec::new();
    {
        let mut s = Store::open(&path).unwrap();
        assert_eq!(s.next_cluster_id(), 1);
        let a = cluster_ads(1, 1, "alice");
        one = submit(&mut s, &a);
        submitted.extend(a);
        let b = cluster_ads(2, 5, "bob");
        many = submit(&mut s, &b);
        submitted.extend(b);
    }
    assert_eq!((one, many), (1, 2));
    let s = Store::open(&path).unwrap();
    let jobs = s.load_queue().unwrap();
    let ids: Vec<JobId> = jobs.iter().map(|j| j.id).collect();
    let want: Vec<JobId> = std::iter::once(JobId::new(1, 0))
        .chain((0..5).map(|p| JobId::new(2, p)))
        .collect();
    assert_eq!(ids, want);
    for (job, sub) in jobs.iter().zip(&submitted) {
        assert_eq!(text(&job.ad), text(sub), "job {}", job.id);
        assert_eq!(text(&s.job(job.id).unwrap().unwrap()), text(sub));
    }
    assert_eq!(s.queue_len().unwrap(), 6);
    assert!(s.job(JobId::new(2, 5)).unwrap().is_none());
}

#[test]
fn procs_that_differ_in_order_case_or_presence_keep_their_own_attributes() {
    let (_dir, path) = fresh();
    let procs = vec![
        ad(r#"[ A = 1; B = 2; C = "same"; OnlyFirst = true ]"#),
        ad(r#"[ c = "same"; b = 3; a = 1 ]"#),
        ad(r#"[ C = "same"; A = 1; B = 2; OnlyThird = 1 + 2 ]"#),
    ];
    let mut s = Store::open(&path).unwrap();
    let c = submit(&mut s, &procs);
    drop(s);
    let s = Store::open(&path).unwrap();
    for (p, want) in procs.iter().enumerate() {
        let got = s.job(JobId::new(c, p as u32)).unwrap().unwrap();
        // Names compare without case; a shared attribute takes proc 0's spelling.
        assert_eq!(text(&got).to_lowercase(), text(want).to_lowercase());
        assert_eq!(got.len(), want.len());
    }
}

#[test]
fn updates_set_and_delete_atomically_and_survive_reopening() {
    let (_dir, path) = fresh();
    let mut s = Store::open(&path).unwrap();
    let c = submit(&mut s, &cluster_ads(1, 3, "alice"));
    let j0 = JobId::new(c, 0);
    let j1 = JobId::new(c, 1);
    s.update_job(
        j1,
        &[
            ("JobStatus", expr("2")),
            ("RemoteHost", expr(r#""slot1@host""#)),
        ],
        &["Cmd", "Absent"],
    )
    .unwrap();
    // Setting with another spelling changes the value, keeps the spelling.
    s.apply(&[Op::set(j1, "jobstatus", expr("5"))]).unwrap();
    // A deleted shared attribute can come back.
    s.apply(&[Op::set(j1, "CMD", expr(r#""/bin/false""#))])
        .unwrap();
    s.apply(&[Op::delete(j1, "Args")]).unwrap();
    drop(s);

    let s = Store::open(&path).unwrap();
    let a1 = s.job(j1).unwrap().unwrap();
    assert_eq!(a1.get("JobStatus").map(expr_text).unwrap(), "5");
    assert!(a1.iter().any(|(n, _)| n.as_str() == "JobStatus"));
    assert_eq!(
        a1.get("RemoteHost").map(expr_text).unwrap(),
        r#""slot1@host""#
    );
    assert_eq!(a1.get("Cmd").map(expr_text).unwrap(), r#""/bin/false""#);
    assert!(a1.get("Args").is_none());
    // The other procs still see the cluster's values.
    let a0 = s.job(j0).unwrap().unwrap();
    assert_eq!(a0.get("Cmd").map(expr_text).unwrap(), r#""/bin/true""#);
    assert_eq!(a0.get("JobStatus").map(expr_text).unwrap(), "1");
    let loaded = s.load_queue().unwrap();
    assert_eq!(text(&loaded[1].ad), text(&a1));
    assert_eq!(text(&loaded[0].ad), text(&a0));
}

fn expr_text(e: &Expr) -> String {
    classad::unparse::expr_to_string(e)
}

#[test]
fn a_batch_with_a_bad_op_changes_nothing() {
    let (_dir, path) = fresh();
    let mut s = Store::open(&path).unwrap();
    let c = submit(&mut s, &cluster_ads(1, 2, "alice"));
    let before = s.load_queue().unwrap();
    let j0 = JobId::new(c, 0);
    let ghost = JobId::new(c, 7);
    let err = s
        .apply(&[
            Op::set(j0, "JobStatus", expr("3")),
            Op::to_history(JobId::new(c, 1), 100),
            Op::delete(ghost, "Cmd"),
        ])
        .unwrap_err();
    assert!(
        matches!(err, Error::NoSuchJob { job, .. } if job == ghost),
        "{err}"
    );
    let msg = err.to_string();
    assert!(msg.contains("queue.db") && msg.contains("1.7"), "{msg}");
    let err = s.apply(&[Op::set(j0, "", expr("1"))]).unwrap_err();
    assert!(matches!(err, Error::BadAttribute { .. }), "{err}");
    let after = s.load_queue().unwrap();
    assert_eq!(after.len(), before.len());
    for (a, b) in after.iter().zip(&before) {
        assert_eq!(text(&a.ad), text(&b.ad));
    }
    assert!(s.history(&HistoryQuery::default()).unwrap().is_empty());
}

#[test]
fn submission_refuses_unreserved_repeated_and_empty_clusters() {
    let (_dir, path) = fresh();
    let mut s = Store::open(&path).unwrap();
    let procs = cluster_ads(1, 1, "alice");
    let err = s.submit_cluster(1, &procs).unwrap_err();
    assert!(
        matches!(err, Error::NotReserved { cluster: 1, .. }),
        "{err}"
    );
    let c = s.reserve_cluster().unwrap();
    let err = s.submit_cluster(c, &[]).unwrap_err();
    assert!(matches!(err, Error::EmptyCluster { .. }), "{err}");
    // The reservation outlives a refused submission.
    s.submit_cluster(c, &procs).unwrap();
    let err = s.submit_cluster(c, &procs).unwrap_err();
    assert!(matches!(err, Error::NotReserved { .. }), "{err}");
    assert_eq!(s.queue_len().unwrap(), 1);
}

#[test]
fn cluster_ids_only_grow_across_restarts_and_an_emptied_queue() {
    let (_dir, path) = fresh();
    {
        let mut s = Store::open(&path).unwrap();
        let a = submit(&mut s, &cluster_ads(1, 2, "alice"));
        let b = submit(&mut s, &cluster_ads(2, 1, "alice"));
        assert_eq!((a, b), (1, 2));
        // Reserved and never submitted: not durable, and harmlessly reused.
        assert_eq!(s.reserve_cluster().unwrap(), 3);
        s.move_to_history(&[JobId::new(1, 0), JobId::new(1, 1), JobId::new(2, 0)], 50)
            .unwrap();
        assert_eq!(s.queue_len().unwrap(), 0);
    }
    let mut s = Store::open(&path).unwrap();
    assert_eq!(s.next_cluster_id(), 3);
    assert_eq!(submit(&mut s, &cluster_ads(3, 1, "bob")), 3);
    assert_eq!(s.reserve_cluster().unwrap(), 4);
    assert_eq!(s.reserve_cluster().unwrap(), 5);
    // Submitted out of order: the counter still ends past the highest.
    s.submit_cluster(5, &cluster_ads(5, 1, "bob")).unwrap();
    s.submit_cluster(4, &cluster_ads(4, 1, "bob")).unwrap();
    drop(s);
    assert_eq!(Store::open(&path).unwrap().next_cluster_id(), 6);
}

#[test]
fn jobs_move_into_the_history_and_are_found_by_cluster_owner_and_time() {
    let (_dir, path) = fresh();
    let mut s = Store::open(&path).unwrap();
    let a = submit(&mut s, &cluster_ads(1, 3, "alice"));
    let b = submit(&mut s, &cluster_ads(2, 2, "bob"));
    // The final state goes in with the move, in one transaction.
    s.apply(&[
        Op::set(JobId::new(a, 0), "JobStatus", expr("4")),
        Op::set(JobId::new(a, 0), "CompletionDate", expr("100")),
        Op::to_history(JobId::new(a, 0), 100),
    ])
    .unwrap();
    s.move_to_history(&[JobId::new(b, 0), JobId::new(b, 1)], 200)
        .unwrap();
    s.move_to_history(&[JobId::new(a, 2)], 300).unwrap();
    let err = s.move_to_history(&[JobId::new(a, 2)], 400).unwrap_err();
    assert!(matches!(err, Error::NoSuchJob { .. }), "{err}");
    drop(s);

    let mut s = Store::open(&path).unwrap();
    let ids = |q: HistoryQuery| -> Vec<String> {
        s.history(&q)
            .unwrap()
            .iter()
            .map(|r| r.id.to_string())
            .collect()
    };
    assert_eq!(ids(HistoryQuery::default()), ["1.2", "2.1", "2.0", "1.0"]);
    let alice = HistoryQuery {
        owner: Some("alice".into()),
        ..HistoryQuery::default()
    };
    assert_eq!(ids(alice.clone()), ["1.2", "1.0"]);
    assert_eq!(
        ids(HistoryQuery {
            cluster: Some(2),
            ..HistoryQuery::default()
        }),
        ["2.1", "2.0"]
    );
    assert_eq!(
        ids(HistoryQuery {
            since: Some(150),
            until: Some(300),
            ..HistoryQuery::default()
        }),
        ["2.1", "2.0"]
    );
    assert_eq!(
        ids(HistoryQuery {
            limit: Some(1),
            ..alice
        }),
        ["1.2"]
    );
    assert_eq!(
        ids(HistoryQuery {
            cluster: Some(1),
            proc: Some(0),
            ..HistoryQuery::default()
        }),
        ["1.0"]
    );
    let rec = &s
        .history(&HistoryQuery {
            cluster: Some(1),
            proc: Some(0),
            ..HistoryQuery::default()
        })
        .unwrap()[0];
    assert_eq!(rec.owner.as_deref(), Some("alice"));
    assert_eq!(rec.entered, 100);
    // Page by page, newest first, each page after the last one's seq: the
    // same records as one read, their ads as text.
    let mut paged = Vec::new();
    let mut before = None;
    loop {
        let page = s.history_page(&HistoryQuery::default(), before, 3).unwrap();
        assert!(page.len() <= 3);
        let Some(last) = page.last() else { break };
        before = Some(last.seq);
        paged.extend(page.into_iter().map(|r| r.id.to_string()));
    }
    assert_eq!(paged, ["1.2", "2.1", "2.0", "1.0"]);
    let page = s
        .history_page(
            &HistoryQuery {
                owner: Some("bob".into()),
                ..HistoryQuery::default()
            },
            None,
            1,
        )
        .unwrap();
    assert_eq!(page.len(), 1);
    assert_eq!(page[0].id.to_string(), "2.1");
    assert!(page[0].text.starts_with('['), "{}", page[0].text);
    let mut want = cluster_ads(1, 1, "alice").remove(0);
    want.insert_expr("JobStatus", "4").unwrap();
    want.insert_expr("CompletionDate", "100").unwrap();
    assert_eq!(text(&rec.ad), text(&want));
    // Only 1.1 is left in the queue, whole.
    let left = s.load_queue().unwrap();
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].id, JobId::new(1, 1));
    assert_eq!(text(&left[0].ad), text(&cluster_ads(1, 2, "alice")[1]));

    assert_eq!(s.prune_history(200).unwrap(), 1);
    assert_eq!(s.history(&HistoryQuery::default()).unwrap().len(), 3);
}

/// A constraint's `Owner == "x"` narrows the store's read to x's records
/// in any case (ClassAd's `==`), `=?=` to exactly x's; anything else in
/// the constraint is left to the caller. A read by owner walks only the
/// part of the history between the owner's first and last rows.
#[test]
fn a_constraint_on_the_owner_narrows_the_history_read_to_the_owner_s_rows() {
    let (_dir, path) = fresh();
    let mut s = Store::open(&path).unwrap();
    let a = submit(&mut s, &cluster_ads(1, 2, "alice"));
    let b = submit(&mut s, &cluster_ads(2, 1, "bob"));
    let c = submit(&mut s, &cluster_ads(3, 1, "Alice"));
    s.move_to_history(&[JobId::new(a, 0), JobId::new(a, 1)], 10)
        .unwrap();
    s.move_to_history(&[JobId::new(b, 0)], 20).unwrap();
    s.move_to_history(&[JobId::new(c, 0)], 30).unwrap();
    let ids = |s: &Store, constraint: &str| -> Vec<String> {
        let q = HistoryQuery::default().narrowed_by(&expr(constraint));
        s.history(&q)
            .unwrap()
            .iter()
            .map(|r| r.id.to_string())
            .collect()
    };
    assert_eq!(ids(&s, r#"Owner == "alice""#), ["3.0", "1.1", "1.0"]);
    assert_eq!(
        ids(&s, r#"(JobStatus == 4) && ("ALICE" == MY.Owner)"#),
        ["3.0", "1.1", "1.0"]
    );
    assert_eq!(ids(&s, r#"Owner =?= "alice""#), ["1.1", "1.0"]);
    assert_eq!(ids(&s, r#"Owner == "carol""#), Vec::<String>::new());
    // Not a narrowing: every record.
    assert_eq!(ids(&s, r#"Owner == "alice" || Owner == "bob""#).len(), 4);
    assert_eq!(ids(&s, r#"Owner != "alice""#).len(), 4);
    assert_eq!(ids(&s, "JobStatus == 4").len(), 4);
    assert_eq!(
        HistoryQuery::default().narrowed_by(&expr(r#"Owner == "alice""#)),
        HistoryQuery {
            owner_any_case: Some("alice".into()),
            ..HistoryQuery::default()
        }
    );
    // The exact owner still reads one spelling.
    let exact = HistoryQuery {
        owner: Some("Alice".into()),
        ..HistoryQuery::default()
    };
    let got: Vec<String> = s
        .history(&exact)
        .unwrap()
        .iter()
        .map(|r| r.id.to_string())
        .collect();
    assert_eq!(got, ["3.0"]);
    drop(s);
    // Where each owner's rows are: what a read by owner walks.
    let bounds = |path: &std::path::Path| -> Vec<(String, i64, i64)> {
        let conn = rusqlite::Connection::open(path).unwrap();
        let mut st = conn
            .prepare("SELECT owner, first, last FROM history_owners ORDER BY owner")
            .unwrap();
        st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    assert_eq!(
        bounds(&path),
        [
            ("Alice".into(), 4, 4),
            ("alice".into(), 1, 2),
            ("bob".into(), 3, 3)
        ]
    );
    // Pruning forgets the owners with no row left.
    let mut s = Store::open(&path).unwrap();
    assert_eq!(s.prune_history(25).unwrap(), 3);
    assert_eq!(ids(&s, r#"Owner == "alice""#), ["3.0"]);
    assert_eq!(ids(&s, r#"Owner == "bob""#), Vec::<String>::new());
    drop(s);
    assert_eq!(bounds(&path), [("Alice".into(), 4, 4)]);
}

/// A store of schema 4 gets its owners' bounds from the history it has
/// when migrated, so that a read by owner finds every record.
#[test]
fn the_owners_bounds_are_made_from_an_older_store_s_history() {
    let (_dir, path) = fresh();
    let mut s = Store::open(&path).unwrap();
    let a = submit(&mut s, &cluster_ads(1, 2, "alice"));
    let b = submit(&mut s, &cluster_ads(2, 1, "bob"));
    s.move_to_history(&[JobId::new(a, 0), JobId::new(b, 0), JobId::new(a, 1)], 10)
        .unwrap();
    drop(s);
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch("DROP TABLE history_owners; PRAGMA user_version = 4;")
            .unwrap();
    }
    let s = Store::open(&path).unwrap();
    let q = HistoryQuery {
        owner: Some("alice".into()),
        ..HistoryQuery::default()
    };
    let got: Vec<String> = s
        .history(&q)
        .unwrap()
        .iter()
        .map(|r| r.id.to_string())
        .collect();
    assert_eq!(got, ["1.1", "1.0"]);
    drop(s);
    assert_eq!(
        rusqlite_count(&path, "SELECT count(*) FROM history_owners"),
        2
    );
}

#[test]
fn the_last_proc_leaving_takes_the_cluster_ad_with_it() {
    let (_dir, path) = fresh();
    let mut s = Store::open(&path).unwrap();
    let c = submit(&mut s, &cluster_ads(1, 2, "alice"));
    s.move_to_history(&[JobId::new(c, 0), JobId::new(c, 1)], 10)
        .unwrap();
    drop(s);
    let conn = rusqlite_count(&path, "SELECT count(*) FROM cluster_attrs");
    assert_eq!(conn, 0);
}

fn rusqlite_count(path: &std::path::Path, sql: &str) -> i64 {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.query_row(sql, [], |r| r.get(0)).unwrap()
}

#[test]
fn a_second_opener_is_refused_while_the_queue_is_held() {
    let (_dir, path) = fresh();
    let s = Store::open(&path).unwrap();
    let err = Store::open(&path).err().expect("a second open fails");
    assert!(matches!(err, Error::Locked { .. }), "{err}");
    assert!(err.to_string().contains("in use"), "{err}");
    drop(s);
    Store::open(&path).expect("open again once released");
}

#[test]
fn a_fresh_store_has_the_current_schema_version() {
    let (_dir, path) = fresh();
    drop(Store::open(&path).unwrap());
    assert_eq!(
        rusqlite_count(&path, "SELECT user_version FROM pragma_user_version"),
        SCHEMA_VERSION
    );
    assert_eq!(Store::schema_version(), SCHEMA_VERSION);
    // Reopening an up-to-date store migrates nothing and keeps the data.
    let mut s = Store::open(&path).unwrap();
    submit(&mut s, &cluster_ads(1, 1, "alice"));
    drop(s);
    drop(Store::open(&path).unwrap());
    assert_eq!(rusqlite_count(&path, "SELECT count(*) FROM jobs"), 1);
}

#[test]
fn a_store_from_a_newer_version_is_refused_untouched() {
    let (_dir, path) = fresh();
    drop(Store::open(&path).unwrap());
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.pragma_update(None, "user_version", SCHEMA_VERSION + 1)
            .unwrap();
    }
    let err = Store::open(&path).err().expect("a newer schema is refused");
    match &err {
        Error::TooNew {
            found, supported, ..
        } => assert_eq!((*found, *supported), (SCHEMA_VERSION + 1, SCHEMA_VERSION)),
        other => panic!("expected TooNew, got {other}"),
    }
    let msg = err.to_string();
    assert!(msg.contains("queue.db") && msg.contains("newer"), "{msg}");
    assert_eq!(
        rusqlite_count(&path, "SELECT user_version FROM pragma_user_version"),
        SCHEMA_VERSION + 1
    );
}

#[test]
fn other_files_are_refused_with_their_path() {
    let (dir, _) = fresh();
    // Someone else's SQLite database: not migrated into.
    let other = dir.path().join("other.db");
    {
        let conn = rusqlite::Connection::open(&other).unwrap();
        conn.execute_batch("CREATE TABLE t (x)").unwrap();
    }
    let err = Store::open(&other).err().expect("a foreign database");
    assert!(matches!(err, Error::NotAStore { .. }), "{err}");
    assert_eq!(
        rusqlite_count(&other, "SELECT count(*) FROM sqlite_schema"),
        1
    );
    // Not a database at all.
    let junk = dir.path().join("junk.db");
    std::fs::write(&junk, vec![b'x'; 4096]).unwrap();
    let err = Store::open(&junk).err().expect("junk");
    assert!(err.to_string().contains("junk.db"), "{err}");
    // A directory that does not exist.
    let nowhere = dir.path().join("no/such/dir/queue.db");
    let err = Store::open(&nowhere).err().expect("no directory");
    assert!(matches!(err, Error::Sqlite { .. }), "{err}");
    assert!(err.to_string().contains("no/such/dir"), "{err}");
}

#[test]
fn a_stored_expression_that_no_longer_parses_is_reported_not_loaded() {
    let (_dir, path) = fresh();
    let mut s = Store::open(&path).unwrap();
    submit(&mut s, &cluster_ads(1, 2, "alice"));
    drop(s);
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute(
            "UPDATE job_attrs SET expr = '1 +' WHERE name = 'Args' AND proc = 1",
            [],
        )
        .unwrap();
    }
    let s = Store::open(&path).unwrap();
    let err = s.load_queue().unwrap_err();
    assert!(matches!(err, Error::Corrupt { .. }), "{err}");
    let msg = err.to_string();
    assert!(msg.contains("Args") && msg.contains("1.1"), "{msg}");
}

#[test]
fn a_big_commit_leaves_its_log_to_the_checkpoint() {
    let (_dir, path) = fresh();
    let mut s = Store::open(&path).unwrap();
    // 20,000 procs with 300 bytes of their own each: past SQLite's own
    // threshold of 1,000 pages of log.
    let procs: Vec<ClassAd> = (0..20_000)
        .map(|p| {
            ad(&format!(
                r#"[ ClusterId = 1; ProcId = {p}; Owner = "alice"; Args = "{p} {}" ]"#,
                "x".repeat(300)
            ))
        })
        .collect();
    submit(&mut s, &procs);
    let size = |p: &std::path::Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
    let wal = path.with_file_name("queue.db-wal");
    assert!(size(&wal) > 4_096_000, "the log holds the commit");
    assert!(
        size(&path) < 1_000_000,
        "the commit did not copy its log into the file ({} bytes)",
        size(&path)
    );
    assert!(s.checkpoint().unwrap() > 1_000);
    assert!(size(&path) > 4_096_000, "the checkpoint copied it");
    drop(s);
    let s = Store::open(&path).unwrap();
    assert_eq!(s.queue_len().unwrap(), 20_000);
}
