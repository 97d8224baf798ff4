//! Late materialization's factories in the store: kept with their
//! cluster's ad while none of their jobs is in the queue, taken up again
//! after a restart, and ended.

use std::sync::Arc;

use classad::ClassAd;
use store::{FactoryRecord, JobId, Op, Store};

fn proc_ad(parent: &Arc<ClassAd>, cluster: u32, proc: u32) -> Arc<ClassAd> {
    let mut ad = ClassAd::chained_to(Arc::clone(parent));
    ad.insert_value("ProcId", i64::from(proc));
    ad.insert_value("Args", format!("{cluster}.{proc}").as_str());
    Arc::new(ad)
}

#[test]
fn a_factory_outlives_its_jobs_and_a_restart_until_it_ends() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("queue.db");
    let cluster_ad =
        ClassAd::parse(r#"[ ClusterId = 1; Owner = "alice"; Cmd = "/bin/true"; JobStatus = 1 ]"#)
            .unwrap();
    let parent = Arc::new(cluster_ad.clone());
    let record = FactoryRecord {
        cluster: 1,
        digest: "executable = /bin/true\nqueue 3 x from items\n".into(),
        items: vec!["a".into(), "".into()],
        next_proc: 1,
        total: 6,
        paused: false,
    };
    {
        let mut store = Store::open(&db).unwrap();
        let c = store.reserve_cluster().unwrap();
        assert_eq!(c, 1);
        store
            .submit_factory(&cluster_ad, &record, &[proc_ad(&parent, 1, 0)])
            .unwrap();
        // Its only job leaves: the factory and its cluster ad stay.
        store
            .apply(&[Op::to_history(JobId::new(1, 0), 10)])
            .unwrap();
        assert_eq!(store.queue_len().unwrap(), 0);
    }
    let mut store = Store::open(&db).unwrap();
    let factories = store.load_factories().unwrap();
    assert_eq!(factories.len(), 1);
    let (got, ad) = &factories[0];
    assert_eq!(got, &record);
    assert_eq!(
        classad::unparse::ad_to_old_syntax(ad),
        classad::unparse::ad_to_old_syntax(&cluster_ad)
    );
    store
        .materialize(1, &[proc_ad(&parent, 1, 1), proc_ad(&parent, 1, 2)], 3)
        .unwrap();
    store.pause_factory(1, true).unwrap();
    let (got, _) = &store.load_factories().unwrap()[0];
    assert_eq!((got.next_proc, got.paused), (3, true));
    let jobs = store.load_queue().unwrap();
    assert_eq!(jobs.len(), 2);
    assert_eq!(
        classad::unparse::expr_to_string(jobs[1].ad.get("Cmd").unwrap()),
        "\"/bin/true\""
    );
    assert_eq!(
        classad::unparse::expr_to_string(jobs[1].ad.get("Args").unwrap()),
        "\"1.2\""
    );
    // A proc already made cannot be made again.
    assert!(store.materialize(1, &[proc_ad(&parent, 1, 2)], 4).is_err());
    assert_eq!(store.load_factories().unwrap()[0].0.next_proc, 3);
    // Ended while jobs remain: the cluster ad stays for them, then goes.
    store.remove_factory(1).unwrap();
    assert!(store.load_factories().unwrap().is_empty());
    assert_eq!(store.load_queue().unwrap().len(), 2);
    store
        .apply(&[
            Op::to_history(JobId::new(1, 1), 11),
            Op::to_history(JobId::new(1, 2), 11),
        ])
        .unwrap();
    assert_eq!(store.queue_len().unwrap(), 0);
    assert!(store.materialize(1, &[proc_ad(&parent, 1, 3)], 4).is_err());
    let history = store.history(&Default::default()).unwrap();
    assert_eq!(history.len(), 3);
    assert!(history.iter().all(|r| r.ad.get("Cmd").is_some()));
}

/// An edit of a factory's cluster ad (condor_qedit of the cluster) is
/// kept: the factory comes back with it, and its jobs read it.
#[test]
fn an_edited_factory_cluster_ad_outlives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("queue.db");
    let cluster_ad = ClassAd::parse(
        r#"[ ClusterId = 1; Owner = "alice"; Cmd = "/bin/true"; Colour = "red"; JobStatus = 1 ]"#,
    )
    .unwrap();
    let parent = Arc::new(cluster_ad.clone());
    let record = FactoryRecord {
        cluster: 1,
        digest: "executable = /bin/true\nqueue 3\n".into(),
        items: Vec::new(),
        next_proc: 1,
        total: 3,
        paused: false,
    };
    {
        let mut store = Store::open(&db).unwrap();
        store.reserve_cluster().unwrap();
        store
            .submit_factory(&cluster_ad, &record, &[proc_ad(&parent, 1, 0)])
            .unwrap();
        let blue = classad::parse_expr(r#""blue""#).unwrap();
        let list = classad::parse_expr(r#""Colour""#).unwrap();
        // With the jobs' own edit, in one transaction.
        let blue_job = Op::set(JobId::new(1, 0), "Colour", blue.clone());
        store
            .apply_with_cluster_attrs(
                &[blue_job],
                &[
                    (1, "colour".into(), blue),
                    (1, "EditedClusterAttrs".into(), list),
                ],
            )
            .unwrap();
    }
    let store = Store::open(&db).unwrap();
    let (_, ad) = &store.load_factories().unwrap()[0];
    let text = |ad: &ClassAd, n: &str| ad.get(n).map(classad::unparse::expr_to_string);
    assert_eq!(text(ad, "Colour").as_deref(), Some("\"blue\""));
    assert_eq!(
        text(ad, "EditedClusterAttrs").as_deref(),
        Some("\"Colour\"")
    );
    let jobs = store.load_queue().unwrap();
    assert_eq!(text(&jobs[0].ad, "Colour").as_deref(), Some("\"blue\""));
}
