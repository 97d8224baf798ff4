//! The store against a model: random submissions, updates, deletions and
//! moves to the history (some naming jobs that are not there), then a
//! reopen; the queue read back must be exactly the model's, and the
//! history must hold exactly the jobs that left.

use std::collections::BTreeMap;

use classad::ClassAd;
use proptest::prelude::*;
use store::{HistoryQuery, JobId, Op, Store};

/// Attribute name (lowercased) -> expression text, per job.
type Model = BTreeMap<JobId, BTreeMap<String, String>>;

const NAMES: &[&str] = &["Alpha", "Beta", "Gamma", "Delta"];

#[derive(Clone, Debug)]
enum Step {
    /// Per proc, per name: the value, or absent.
    Submit(Vec<Vec<Option<u8>>>),
    Set(usize, usize, u8, bool),
    Delete(usize, usize),
    ToHistory(usize),
    /// An op on a job that is not queued, in a batch with a good one.
    BadBatch(usize),
}

fn step() -> impl Strategy<Value = Step> {
    let value = prop::option::weighted(0.7, 0u8..3);
    prop_oneof![
        3 => prop::collection::vec(prop::collection::vec(value, NAMES.len()), 1..5)
            .prop_map(Step::Submit),
        3 => (any::<usize>(), 0..NAMES.len(), 0u8..5, any::<bool>())
            .prop_map(|(j, n, v, lower)| Step::Set(j, n, v, lower)),
        2 => (any::<usize>(), 0..NAMES.len()).prop_map(|(j, n)| Step::Delete(j, n)),
        1 => any::<usize>().prop_map(Step::ToHistory),
        1 => any::<usize>().prop_map(Step::BadBatch),
    ]
}

fn nth_job(model: &Model, i: usize) -> Option<JobId> {
    (!model.is_empty()).then(|| *model.keys().nth(i % model.len()).expect("in range"))
}

fn attrs_of(ad: &ClassAd) -> BTreeMap<String, String> {
    ad.iter()
        .map(|(n, e)| {
            (
                n.as_str().to_ascii_lowercase(),
                classad::unparse::expr_to_string(e),
            )
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn the_store_agrees_with_a_model(steps in prop::collection::vec(step(), 1..24)) {
        let dir = tempfile::tempdir().expect("temporary directory");
        let path = dir.path().join("queue.db");
        let mut store = Store::open(&path).expect("open");
        let mut model = Model::new();
        let mut history = 0usize;
        for step in steps {
            match step {
                Step::Submit(procs) => {
                    let cluster = store.reserve_cluster().expect("reserve");
                    let ads: Vec<ClassAd> = procs.iter().map(|vals| {
                        let mut ad = ClassAd::new();
                        for (name, v) in NAMES.iter().zip(vals) {
                            if let Some(v) = v {
                                ad.insert_expr(name, &v.to_string()).expect("literal");
                            }
                        }
                        ad
                    }).collect();
                    store.submit_cluster(cluster, &ads).expect("submit");
                    for (p, ad) in ads.iter().enumerate() {
                        model.insert(JobId::new(cluster, p as u32), attrs_of(ad));
                    }
                }
                Step::Set(j, n, v, lower) => {
                    let Some(job) = nth_job(&model, j) else { continue };
                    let name = if lower { NAMES[n].to_lowercase() } else { NAMES[n].to_string() };
                    let e = classad::parse_expr(&v.to_string()).expect("literal");
                    store.apply(&[Op::set(job, &name, e)]).expect("set");
                    model.get_mut(&job).expect("queued")
                        .insert(NAMES[n].to_ascii_lowercase(), v.to_string());
                }
                Step::Delete(j, n) => {
                    let Some(job) = nth_job(&model, j) else { continue };
                    store.apply(&[Op::delete(job, NAMES[n])]).expect("delete");
                    model.get_mut(&job).expect("queued").remove(&NAMES[n].to_ascii_lowercase());
                }
                Step::ToHistory(j) => {
                    let Some(job) = nth_job(&model, j) else { continue };
                    store.move_to_history(&[job], 7).expect("to history");
                    model.remove(&job);
                    history += 1;
                }
                Step::BadBatch(j) => {
                    let ghost = JobId::new(u32::MAX >> 1, 0);
                    let mut ops = vec![Op::delete(ghost, "Alpha")];
                    if let Some(job) = nth_job(&model, j) {
                        ops.insert(0, Op::to_history(job, 9));
                        ops.insert(0, Op::set(job, "Alpha", classad::parse_expr("42").expect("literal")));
                    }
                    prop_assert!(store.apply(&ops).is_err());
                }
            }
        }
        drop(store);
        let store = Store::open(&path).expect("reopen");
        let got: Model = store.load_queue().expect("load")
            .into_iter().map(|j| (j.id, attrs_of(&j.ad))).collect();
        prop_assert_eq!(&got, &model);
        for (id, attrs) in &model {
            let ad = store.job(*id).expect("read").expect("queued");
            prop_assert_eq!(&attrs_of(&ad), attrs);
        }
        prop_assert_eq!(store.history(&HistoryQuery::default()).expect("history").len(), history);
    }
}
