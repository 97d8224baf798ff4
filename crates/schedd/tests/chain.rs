//! HTCondor's cluster and proc ads in the queue: a cluster submitted as
//! one cluster ad and small proc ads chained to it behaves, job by job,
//! exactly as the same cluster submitted as whole ads: the same ads
//! printed, the same changes through the job's life, edits of one job
//! (copied on write into its proc ad) that no other job sees.

mod common;

use std::sync::Arc;

use classad::ClassAd;
use common::{job_ads, T0};
use schedd::queue::split_cluster;
use schedd::{
    EditRules, EditTarget, JobEvent, JobId, JobQueue, JobStatus, RunReport, SubmitPolicy,
    UserAction,
};

const DESCRIPTION: &str = "executable = job.sh\narguments = $(Process) x\nlog = job.log\n\
                           request_memory = 100\nqueue 4\n";

fn queues() -> (JobQueue, JobQueue, Vec<JobId>) {
    let mut flat = JobQueue::new();
    let mut chained = JobQueue::new();
    let c = flat.new_cluster();
    assert_eq!(chained.new_cluster(), c);
    let ads = job_ads(DESCRIPTION, c, "alice", &[]);
    let policy = SubmitPolicy::none();
    let host = "<10.0.0.1:9618>";
    let a = flat
        .submit(ads.clone(), "alice", &policy, &ClassAd::new(), host, T0)
        .unwrap();
    let (cluster_ad, procs) = split_cluster(ads);
    // What differs between the jobs: their ProcId and arguments.
    assert!(procs.iter().all(|p| p.own_len() == 2), "{procs:?}");
    let b = chained
        .submit_cluster(
            cluster_ad,
            procs,
            "alice",
            &policy,
            &ClassAd::new(),
            host,
            T0,
        )
        .unwrap();
    assert_eq!(a.jobs, b.jobs);
    assert_eq!(a.changes, b.changes);
    (flat, chained, a.jobs)
}

fn same(flat: &JobQueue, chained: &JobQueue) {
    assert_eq!(flat.len(), chained.len());
    for ((ia, a), (ib, b)) in flat.jobs().zip(chained.jobs()) {
        assert_eq!(ia, ib);
        assert_eq!(a.to_string(), b.to_string(), "job {ia}");
        assert_eq!(
            classad::json::ad_to_json(a),
            classad::json::ad_to_json(b),
            "job {ia}"
        );
    }
    assert_eq!(flat.counts(), chained.counts());
}

#[test]
fn a_chained_cluster_reads_as_whole_ads_and_shares_one_cluster_ad() {
    let (flat, chained, jobs) = queues();
    same(&flat, &chained);
    let parents: Vec<&Arc<ClassAd>> = jobs
        .iter()
        .map(|id| chained.job(*id).unwrap().parent().unwrap())
        .collect();
    assert!(parents.iter().all(|p| Arc::ptr_eq(p, parents[0])));
    // A job's own: ProcId and its arguments (its status and when it
    // entered it are its cluster's until they change).
    for id in &jobs {
        assert_eq!(chained.job(*id).unwrap().own_len(), 2);
    }
    assert!(parents[0].get("Owner").is_some());
}

#[test]
fn a_jobs_life_changes_the_same_and_only_that_job() {
    let (mut flat, mut chained, jobs) = queues();
    let none = schedd::SystemPolicy::none();
    let events = [
        (
            jobs[0],
            JobEvent::Started {
                host: "slot1@h".into(),
                slot: "slot1".into(),
                claim: Some("<h>#1#1".into()),
            },
        ),
        (
            jobs[0],
            JobEvent::Exited {
                how: schedd::ExitHow::Code(0),
                report: RunReport::default(),
            },
        ),
        (
            jobs[1],
            JobEvent::Held {
                reason: "x".into(),
                code: schedd::HoldCode::USER_REQUEST,
                subcode: 0,
            },
        ),
        (jobs[1], JobEvent::Released { reason: "y".into() }),
    ];
    for (i, (id, e)) in events.into_iter().enumerate() {
        let now = T0 + 10 * i as i64;
        let a = flat.apply(id, e.clone(), now, &none);
        let b = chained.apply(id, e, now, &none);
        assert_eq!(a, b);
        same(&flat, &chained);
    }
    let su = schedd::SuperUsers::default();
    let rm = |q: &mut JobQueue| {
        q.user_action(
            "alice",
            &su,
            jobs[2],
            UserAction::Remove { reason: None },
            T0 + 100,
        )
    };
    assert_eq!(rm(&mut flat), rm(&mut chained));
    same(&flat, &chained);
    // The cluster ad is as submitted: every change went to a proc ad.
    let untouched = chained.job(jobs[3]).unwrap();
    assert_eq!(untouched.own_len(), 2);
    assert_eq!(
        untouched
            .parent()
            .unwrap()
            .get("JobStatus")
            .map(ToString::to_string),
        Some("1".into())
    );
    assert_eq!(chained.status(jobs[3]), Some(JobStatus::Idle));
}

#[test]
fn an_edit_of_one_job_or_of_the_cluster_is_as_on_whole_ads() {
    let (mut flat, mut chained, jobs) = queues();
    let rules = EditRules::default();
    let edit = |q: &mut JobQueue, target: EditTarget, name: &str, value: &str| {
        q.edit(&target, name, value, "alice", false, &rules, T0 + 5)
            .map(|(_, changes)| changes)
    };
    for (target, name, value) in [
        (EditTarget::Jobs(vec![jobs[1]]), "RequestMemory", "2048"),
        (
            EditTarget::Jobs(vec![JobId::new(jobs[0].cluster, -1)]),
            "Foo",
            "\"bar\"",
        ),
        (EditTarget::Jobs(vec![jobs[2]]), "Foo", "\"baz\""),
    ] {
        let a = edit(&mut flat, target.clone(), name, value);
        let b = edit(&mut chained, target, name, value);
        assert_eq!(a, b);
        same(&flat, &chained);
    }
    let show = |id: JobId, name: &str| {
        chained
            .job(id)
            .and_then(|ad| ad.get(name))
            .map(classad::unparse::expr_to_string)
    };
    assert_eq!(show(jobs[1], "RequestMemory").as_deref(), Some("2048"));
    assert_eq!(show(jobs[0], "RequestMemory").as_deref(), Some("100"));
    assert_eq!(show(jobs[2], "Foo").as_deref(), Some("\"baz\""));
    assert_eq!(show(jobs[3], "Foo").as_deref(), Some("\"bar\""));
}

#[test]
fn a_restored_queue_of_chained_jobs_is_the_same_queue() {
    let (_, chained, _) = queues();
    let jobs: Vec<ClassAd> = chained.jobs().map(|(_, ad)| ad.clone()).collect();
    let restored = JobQueue::restore(jobs, chained.next_cluster());
    same(&chained, &restored);
}
