//! The collector's store: updates, lifetimes, invalidation, queries, and
//! the pool history of an HTCondorView server.

use classad::{parse_expr, ClassAd};
use config::{Config, FixedHost, LoadOptions, MemFiles, Root};
use negotiator::collector::{
    Activity, AdType, CollectorStore, PoolHistory, SlotSample, SlotState, SubmitterSample,
    UpdateError, UpdateOutcome,
};

fn config(text: &str) -> Config {
    config::load(
        &LoadOptions::new("COLLECTOR", Root::File("condor_config".into())),
        &MemFiles::new().with("condor_config", text),
        &FixedHost::empty(),
    )
    .unwrap()
}

fn ad(text: &str) -> ClassAd {
    ClassAd::parse(text).unwrap()
}

fn slot(name: &str, state: &str, activity: &str) -> ClassAd {
    ad(&format!(
        r#"[ MyType = "Machine"; Name = "{name}"; State = "{state}"; Activity = "{activity}"; Cpus = 1 ]"#
    ))
}

fn submitter(name: &str, schedd: &str, running: i64, idle: i64) -> ClassAd {
    ad(&format!(
        r#"[ MyType = "Submitter"; Name = "{name}"; ScheddName = "{schedd}"; RunningJobs = {running}; IdleJobs = {idle}; HeldJobs = 0 ]"#
    ))
}

const T0: i64 = 1_700_000_000;

#[test]
fn ad_types_follow_my_type() {
    assert_eq!(AdType::from_my_type("Machine"), AdType::Startd);
    assert_eq!(AdType::from_my_type("scheduler"), AdType::Schedd);
    assert_eq!(
        AdType::of(&slot("s", "Owner", "Idle")),
        Some(AdType::Startd)
    );
    assert_eq!(AdType::Master.my_type(), "DaemonMaster");
    assert_eq!(AdType::from_my_type("Grid"), AdType::Other("Grid".into()));
}

#[test]
fn an_update_replaces_the_ad_of_the_same_name() {
    let mut c = CollectorStore::new(900);
    assert_eq!(
        c.update(AdType::Startd, slot("slot1@a", "Unclaimed", "Idle"), T0),
        Ok(UpdateOutcome::New)
    );
    assert_eq!(
        c.update(AdType::Startd, slot("slot1@a", "Claimed", "Busy"), T0 + 60),
        Ok(UpdateOutcome::Replaced)
    );
    assert_eq!(c.len(), 1);
    let stored = c.get(&AdType::Startd, "slot1@a", T0 + 60).unwrap();
    assert_eq!(stored.last_heard_from, T0 + 60);
    let q = c.query(
        Some(&AdType::Startd),
        None,
        &["State", "LastHeardFrom"],
        T0 + 60,
    );
    assert_eq!(q.len(), 1);
    assert_eq!(
        q[0].to_string(),
        format!(r#"[ State = "Claimed"; LastHeardFrom = {} ]"#, T0 + 60)
    );
    // Unnamed ads are refused.
    assert_eq!(
        c.update(AdType::Startd, ad("[ MyType = \"Machine\" ]"), T0),
        Err(UpdateError::NoName)
    );
}

#[test]
fn submitter_ads_are_kept_per_schedd() {
    let mut c = CollectorStore::new(900);
    c.update(AdType::Submitter, submitter("alice@d", "ap1", 1, 2), T0)
        .unwrap();
    c.update(AdType::Submitter, submitter("alice@d", "ap2", 3, 4), T0)
        .unwrap();
    assert_eq!(c.query(Some(&AdType::Submitter), None, &[], T0).len(), 2);
    assert_eq!(c.invalidate(&AdType::Submitter, "alice@d"), 2);
    assert!(c.is_empty());
}

#[test]
fn ads_expire_after_their_lifetime() {
    let mut c = CollectorStore::from_config(&config("")).unwrap();
    assert_eq!(c.classad_lifetime, 900);
    c.update(AdType::Startd, slot("slot1@a", "Owner", "Idle"), T0)
        .unwrap();
    let mut short = slot("slot2@a", "Owner", "Idle");
    short.insert_value("ClassAdLifetime", 60i64);
    c.update(AdType::Startd, short, T0).unwrap();
    assert_eq!(c.query(None, None, &[], T0 + 60).len(), 2);
    assert_eq!(c.query(None, None, &[], T0 + 61).len(), 1);
    assert!(c.get(&AdType::Startd, "slot1@a", T0 + 900).is_some());
    assert!(c.get(&AdType::Startd, "slot1@a", T0 + 901).is_none());
    // Housekeeping drops what has expired.
    let gone = c.expire(T0 + 61);
    assert_eq!(gone.len(), 1);
    assert_eq!(gone[0].name, "slot2@a");
    assert_eq!(c.len(), 1);
    // A refresh starts the lifetime again.
    c.update(AdType::Startd, slot("slot1@a", "Owner", "Idle"), T0 + 800)
        .unwrap();
    assert!(c.get(&AdType::Startd, "slot1@a", T0 + 1600).is_some());
}

#[test]
fn classad_lifetime_comes_from_the_configuration() {
    let c = CollectorStore::from_config(&config("CLASSAD_LIFETIME = 120\n")).unwrap();
    assert_eq!(c.classad_lifetime, 120);
}

#[test]
fn invalidation_by_name_and_by_constraint() {
    let mut c = CollectorStore::new(900);
    for (n, s) in [
        ("slot1@a", "Owner"),
        ("slot2@a", "Claimed"),
        ("slot1@b", "Owner"),
    ] {
        c.update(AdType::Startd, slot(n, s, "Idle"), T0).unwrap();
    }
    c.update(
        AdType::Schedd,
        ad(r#"[ MyType = "Scheduler"; Name = "ap1" ]"#),
        T0,
    )
    .unwrap();
    assert_eq!(c.invalidate(&AdType::Startd, "slot2@a"), 1);
    assert_eq!(c.invalidate(&AdType::Startd, "nope"), 0);
    let owner = parse_expr(r#"State == "Owner""#).unwrap();
    assert_eq!(c.invalidate_matching(&AdType::Startd, &owner, T0), 2);
    // Other types are untouched.
    assert_eq!(c.len(), 1);
    assert!(c.get(&AdType::Schedd, "ap1", T0).is_some());
}

#[test]
fn queries_take_a_constraint_and_a_projection() {
    let mut c = CollectorStore::new(900);
    c.update(AdType::Startd, slot("slot1@a", "Claimed", "Busy"), T0)
        .unwrap();
    c.update(AdType::Startd, slot("slot2@a", "Unclaimed", "Idle"), T0)
        .unwrap();
    c.update(AdType::Submitter, submitter("bob@d", "ap1", 1, 0), T0)
        .unwrap();
    let idle = parse_expr(r#"State =?= "Unclaimed" && Cpus >= 1"#).unwrap();
    let q = c.query(
        Some(&AdType::Startd),
        Some(&idle),
        &["Name", "cpus", "Missing"],
        T0,
    );
    assert_eq!(q.len(), 1);
    // Printed in HTCondor's order (shorter names first).
    assert_eq!(q[0].to_string(), r#"[ Cpus = 1; Name = "slot2@a" ]"#);
    // Any type; a constraint that is undefined on an ad excludes it.
    let running = parse_expr("RunningJobs > 0").unwrap();
    let q = c.query(None, Some(&running), &["Name"], T0);
    assert_eq!(q.len(), 1);
    assert_eq!(q[0].to_string(), r#"[ Name = "bob@d" ]"#);
    // No projection: the whole ad, LastHeardFrom included.
    let q = c.query(Some(&AdType::Submitter), None, &[], T0);
    assert!(q[0].contains("LastHeardFrom"));
    assert_eq!(c.ads(Some(&AdType::Startd), T0).count(), 2);
}

#[test]
fn merge_sets_some_attributes() {
    let mut c = CollectorStore::new(900);
    c.update(AdType::Startd, slot("slot1@a", "Owner", "Idle"), T0)
        .unwrap();
    assert!(c.merge(
        &AdType::Startd,
        "slot1@a",
        &ad("[ Color = \"red\" ]"),
        T0 + 5
    ));
    let s = c.get(&AdType::Startd, "slot1@a", T0 + 5).unwrap();
    assert!(s.ad.contains("Color") && s.ad.contains("State"));
    assert_eq!(s.last_heard_from, T0 + 5);
    assert!(!c.merge(&AdType::Startd, "nope", &ad("[ a = 1 ]"), T0));
}

#[test]
fn history_is_off_unless_kept() {
    let mut c = CollectorStore::from_config(&config("")).unwrap();
    assert!(c.history().is_none());
    assert!(!c.sample_history(T0));
}

#[test]
fn history_samples_slots_and_submitters_every_interval() {
    let mut c = CollectorStore::from_config(&config(
        "KEEP_POOL_HISTORY = true\nPOOL_HISTORY_SAMPLING_INTERVAL = 300\n",
    ))
    .unwrap();
    c.update(AdType::Startd, slot("slot1@a", "Unclaimed", "Idle"), T0)
        .unwrap();
    c.update(AdType::Submitter, submitter("bob@d", "ap1", 0, 5), T0)
        .unwrap();
    c.update(AdType::Submitter, submitter("bob@d", "ap2", 0, 1), T0)
        .unwrap();
    assert!(c.sample_history(T0));
    assert!(!c.sample_history(T0 + 299), "not due yet");
    c.update(AdType::Startd, slot("slot1@a", "Claimed", "Busy"), T0 + 300)
        .unwrap();
    c.update(AdType::Submitter, submitter("bob@d", "ap1", 1, 4), T0 + 300)
        .unwrap();
    assert!(c.sample_history(T0 + 300));
    c.invalidate(&AdType::Startd, "slot1@a");
    assert!(c.sample_history(T0 + 600));

    let h = c.history().unwrap();
    assert_eq!(h.sample_count(), 3);
    assert_eq!(
        h.slot_history("slot1@a", T0, T0 + 600),
        vec![
            (
                T0,
                Some(SlotSample {
                    state: SlotState::Unclaimed,
                    activity: Activity::Idle
                })
            ),
            (
                T0 + 300,
                Some(SlotSample {
                    state: SlotState::Claimed,
                    activity: Activity::Busy
                })
            ),
            (T0 + 600, None),
        ]
    );
    // One user at two access points is summed.
    assert_eq!(
        h.submitter_history("bob@d", T0, T0 + 300),
        vec![
            (
                T0,
                Some(SubmitterSample {
                    running: 0,
                    idle: 6,
                    held: 0
                })
            ),
            (
                T0 + 300,
                Some(SubmitterSample {
                    running: 1,
                    idle: 5,
                    held: 0
                })
            ),
        ]
    );
    // A time-range query rebuilds whole samples.
    let samples = h.samples(T0 + 1, T0 + 300);
    assert_eq!(samples.len(), 1);
    assert_eq!(samples[0].time, T0 + 300);
    assert_eq!(samples[0].state_counts()[&SlotState::Claimed], 1);
    assert_eq!(h.span(), Some((T0, T0 + 600)));
}

#[test]
fn an_unchanging_pool_costs_only_its_sample_times() {
    let mut h = PoolHistory::new(60, 10_000_000);
    let slots: Vec<ClassAd> = (0..100)
        .map(|i| slot(&format!("slot{i}@h"), "Claimed", "Busy"))
        .collect();
    h.record(T0, &slots, &[]);
    let after_first = h.storage_bytes();
    for k in 1..=1000 {
        h.record(T0 + 60 * k, &slots, &[]);
    }
    // 1000 more samples of 100 unchanged slots: 8 bytes each.
    assert_eq!(h.storage_bytes(), after_first + 1000 * 8);
    assert_eq!(h.samples(T0, T0 + 60_000).len(), 1001);
    assert_eq!(
        h.slot_history("slot42@h", T0 + 59_940, T0 + 60_000),
        vec![
            (
                T0 + 59_940,
                Some(SlotSample {
                    state: SlotState::Claimed,
                    activity: Activity::Busy
                })
            ),
            (
                T0 + 60_000,
                Some(SlotSample {
                    state: SlotState::Claimed,
                    activity: Activity::Busy
                })
            ),
        ]
    );
}

#[test]
fn history_stays_within_its_storage_and_keeps_the_newest() {
    let mut h = PoolHistory::new(60, 4_000);
    for k in 0..1000i64 {
        let state = if k % 2 == 0 { "Claimed" } else { "Unclaimed" };
        let slots = [
            slot("slot1@h", state, "Idle"),
            slot("slot2@h", "Owner", "Idle"),
        ];
        h.record(T0 + 60 * k, &slots, &[]);
        assert!(h.storage_bytes() <= 4_000);
    }
    let (first, last) = h.span().unwrap();
    assert_eq!(last, T0 + 60 * 999);
    assert!(first > T0);
    // The unchanging slot is still known at the oldest kept sample.
    let hist = h.slot_history("slot2@h", first, first);
    assert_eq!(hist[0].1.unwrap().state, SlotState::Owner);
    let hist = h.slot_history("slot1@h", last, last);
    assert_eq!(hist[0].1.unwrap().state, SlotState::Unclaimed);
}
