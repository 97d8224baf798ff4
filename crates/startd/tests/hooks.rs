//! Fetching work through job hooks (`job-hooks-v7.txt`): when a slot asks,
//! what it accepts, the replies, reusing and giving up the claim, and
//! fetched work preempting by RANK.

mod common;

use common::*;
use startd::{Action, Event};

const HOOKS: &str = "
STARTD_JOB_HOOK_KEYWORD = DATABASE
DATABASE_HOOK_DIR = /usr/local/condor/fetch/database
DATABASE_HOOK_FETCH_WORK = $(DATABASE_HOOK_DIR)/fetch_work.php
DATABASE_HOOK_REPLY_FETCH = $(DATABASE_HOOK_DIR)/reply_fetch.php
DATABASE_HOOK_EVICT_CLAIM = $(DATABASE_HOOK_DIR)/evict_claim.php
FetchWorkDelay = ifThenElse(State == \"Claimed\" && Activity == \"Idle\", 0, 300)
";

fn fetches(r: &startd::Ready) -> Vec<String> {
    r.actions
        .iter()
        .filter_map(|a| match a {
            Action::FetchWork { slot, hook, .. } => Some(format!("{slot} {hook}")),
            _ => None,
        })
        .collect()
}

fn fetched(slot: &str, job: Option<classad::ClassAd>) -> Event {
    Event::FetchedWork {
        slot: slot.into(),
        job: job.map(Box::new),
    }
}

#[test]
fn a_slot_fetches_work_every_fetch_work_delay() {
    let mut s = startd(HOOKS, 1);
    let r = s.tick(T0, readings(0, 0.0));
    assert_eq!(
        fetches(&r),
        vec!["slot1 /usr/local/condor/fetch/database/fetch_work.php"]
    );
    // One fetch at a time.
    assert!(fetches(&s.tick(T0 + 5, readings(0, 0.0))).is_empty());
    s.handle(fetched("slot1", None), T0 + 6).unwrap();
    // Unclaimed: the next fetch waits 300 s after the last one finished.
    assert!(fetches(&s.tick(T0 + 305, readings(0, 0.0))).is_empty());
    assert_eq!(fetches(&s.tick(T0 + 306, readings(0, 0.0))).len(), 1);
}

#[test]
fn fetched_work_is_taken_when_start_allows_and_the_reply_hook_hears_of_it() {
    let mut s = startd(HOOKS, 1);
    s.tick(T0, readings(0, 0.0));
    let r = s
        .handle(fetched("slot1", Some(job("alice"))), T0 + 1)
        .unwrap();
    assert_eq!(numbers(&r), vec![5, 11]);
    let started = r.actions.iter().find_map(|a| match a {
        Action::StartJob { job, .. } => Some(job.clone()),
        _ => None,
    });
    let started = started.expect("the fetched job is started");
    assert_eq!(
        started
            .eval_attr("HookKeyword", &classad::Env::default())
            .to_string(),
        "\"DATABASE\""
    );
    assert!(r
        .actions
        .iter()
        .any(|a| matches!(a, Action::ReplyFetch { accept: true, hook, .. } if hook.ends_with("reply_fetch.php"))));
}

#[test]
fn fetched_work_is_refused_when_start_does_not_allow_it() {
    let mut s = startd(&format!("{HOOKS}\nSTART = Owner == \"alice\""), 1);
    s.tick(T0, readings(0, 0.0));
    let r = s
        .handle(fetched("slot1", Some(job("bob"))), T0 + 1)
        .unwrap();
    assert!(r.transitions.is_empty());
    assert!(r
        .actions
        .iter()
        .any(|a| matches!(a, Action::ReplyFetch { accept: false, .. })));
    assert_eq!(pair(&s, 0), "Unclaimed/Idle");
}

#[test]
fn the_claim_is_reused_while_there_is_work_and_given_up_when_there_is_none() {
    let mut s = startd(HOOKS, 1);
    s.tick(T0, readings(0, 0.0));
    s.handle(fetched("slot1", Some(job("alice"))), T0 + 1)
        .unwrap();
    s.handle(exited("slot1"), T0 + 100).unwrap();
    // Claimed/Idle: FetchWorkDelay is 0, so it asks again at once.
    let r = s.tick(T0 + 101, readings(0, 0.0));
    assert_eq!(fetches(&r).len(), 1);
    let r = s
        .handle(fetched("slot1", Some(job("alice"))), T0 + 102)
        .unwrap();
    // The same claim runs the next job: no new claim (no 5).
    assert_eq!(numbers(&r), vec![11]);
    s.handle(exited("slot1"), T0 + 200).unwrap();
    s.tick(T0 + 201, readings(0, 0.0));
    let r = s.handle(fetched("slot1", None), T0 + 202).unwrap();
    // No more work: the claim is evicted (and the evict hook runs).
    assert_eq!(numbers(&r), vec![10, 22, 1]);
    assert!(r.actions.iter().any(
        |a| matches!(a, Action::EvictClaim { hook, .. } if hook.ends_with("evict_claim.php"))
    ));
    assert!(!r
        .actions
        .iter()
        .any(|a| matches!(a, Action::ClaimEnded { .. })));
}

#[test]
fn fetched_work_the_machine_ranks_higher_preempts_a_running_job() {
    let mut s = startd(&format!("{HOOKS}\nRANK = (TARGET.Urgent =?= True) * 100\nMaxJobRetirementTime = 0\nMachineMaxVacateTime = 60"), 1);
    s.tick(T0, readings(0, 0.0));
    s.handle(fetched("slot1", None), T0).unwrap();
    run_job(&mut s, job("alice"), T0);
    let mut urgent = job("ops");
    urgent.insert_value("Urgent", true);
    let r = s.handle(fetched("slot1", Some(urgent)), T0 + 300).unwrap();
    assert_eq!(numbers(&r), vec![13, 18]);
    assert!(r
        .actions
        .iter()
        .any(|a| matches!(a, Action::ReplyFetch { accept: true, .. })));
    let r = s.handle(exited("slot1"), T0 + 310).unwrap();
    // The fetched job takes the slot on its own claim and starts.
    assert_eq!(numbers(&r), vec![23, 11]);
    assert!(r
        .actions
        .iter()
        .any(|a| matches!(a, Action::StartJob { job, .. }
        if job.eval_attr("Owner", &classad::Env::default()).to_string() == "\"ops\"")));
    // A job the machine does not prefer is refused.
    let r = s
        .handle(fetched("slot1", Some(job("bob"))), T0 + 400)
        .unwrap();
    assert!(r
        .actions
        .iter()
        .any(|a| matches!(a, Action::ReplyFetch { accept: false, .. })));
}

#[test]
fn each_slot_may_have_its_own_hook_keyword() {
    let mut s = startd(
        &format!("{HOOKS}\nSLOT2_JOB_HOOK_KEYWORD = WEB\nWEB_HOOK_FETCH_WORK = /opt/web/fetch"),
        3,
    );
    let mut got = fetches(&s.tick(T0, readings(0, 0.0)));
    got.sort();
    assert_eq!(
        got,
        vec![
            "slot1 /usr/local/condor/fetch/database/fetch_work.php",
            "slot2 /opt/web/fetch",
            "slot3 /usr/local/condor/fetch/database/fetch_work.php"
        ]
    );
}
