//! A snapshot of the queue is what the queue was when it was taken: the
//! daemon evaluates queries on one without the queue's lock, while the
//! queue goes on changing.

mod common;

use std::sync::Arc;

use common::{queue_with, show, SIMPLE, T0};
use schedd::{JobEvent, JobStatus, SystemPolicy};

#[test]
fn a_snapshot_shares_the_ads_and_keeps_them_as_they_were() {
    let (mut q, id) = queue_with(SIMPLE);
    let snap = q.snapshot();
    assert_eq!(snap.len(), 1);
    assert_eq!(snap[0].0, id);
    // Shared, not copied.
    assert!(Arc::ptr_eq(&snap[0].1, &q.shared_job(id).unwrap()));

    // The queue changes the job: the snapshot still sees it idle, the
    // queue sees it running, and the queue's ad is a new one.
    q.apply(
        id,
        JobEvent::Started {
            host: "<10.0.0.2:9618>".into(),
            slot: "slot1@exec".into(),
            claim: None,
        },
        T0 + 10,
        &SystemPolicy::none(),
    )
    .unwrap();
    assert_eq!(q.status(id), Some(JobStatus::Running));
    assert_eq!(schedd::queue::status_of(&snap[0].1), Some(JobStatus::Idle));
    assert!(!Arc::ptr_eq(&snap[0].1, &q.shared_job(id).unwrap()));
    assert_eq!(show(&q, id, "JobStatus").as_deref(), Some("2"));

    // Forgetting the job leaves the snapshot's ad alone too.
    let snap2 = q.snapshot();
    q.forget(id);
    assert!(q.is_empty());
    assert_eq!(
        schedd::queue::status_of(&snap2[0].1),
        Some(JobStatus::Running)
    );
}

#[test]
fn an_edit_without_a_snapshot_copies_nothing() {
    let (mut q, id) = queue_with(SIMPLE);
    let before = Arc::as_ptr(&q.shared_job(id).unwrap());
    q.apply(id, JobEvent::Matched, T0 + 5, &SystemPolicy::none())
        .unwrap();
    // No one else held the ad: it was edited in place.
    assert_eq!(Arc::as_ptr(&q.shared_job(id).unwrap()), before);
    assert_eq!(show(&q, id, "NumJobMatches").as_deref(), Some("1"));
}
