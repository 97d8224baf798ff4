//! `Startd::republish`: the caller's copies of the slot ads brought up to
//! date by swapping them with the startd's own must say exactly what
//! `published_ads` says (with the caller's extra attributes), at every
//! step, and the extra attributes must never reach the ads the policy is
//! evaluated in. Every refresh that keeps a slot's facts is checked
//! against a whole one (debug builds), and two ads published under one
//! generation must differ only in what moves with the clock.

mod common;

use common::*;
use startd::publish::changes_with_time;
use startd::resources::HostReadings;
use startd::{AdsEpoch, Event, Startd};

use std::collections::HashMap;

fn extra() -> classad::ClassAd {
    ad("[ HasFileTransfer = true; FileSystemDomain = \"fs.example.org\"; UidDomain = \"example.org\" ]")
}

/// Runs `steps` on two copies of `s`, one publishing with
/// `published_ads` (plus `extra`), the other with `republish`, and checks
/// after each step (and a publication) that both published the same and
/// that their slots' own ads are alike.
fn check(s: Startd, steps: &[(i64, Event)]) {
    startd::publish::REFRESH_CHECK_EVERY.store(1, std::sync::atomic::Ordering::Relaxed);
    // What each generation's ads said, but for the clock's figures.
    let mut generations: HashMap<u64, Vec<String>> = HashMap::new();
    let mut kept = 0;
    let mut by_generation = |w: &Startd, ads: &[classad::ClassAd], what: &str| {
        for (i, ad) in ads.iter().enumerate() {
            let mut unclocked: Vec<String> = ad
                .iter()
                .filter(|(n, _)| !changes_with_time(n.as_str()))
                .map(|(n, e)| format!("{} = {e}", n.as_str().to_ascii_lowercase()))
                .collect();
            unclocked.sort();
            match generations.get(&w.ad_generation(i)) {
                Some(before) => {
                    kept += 1;
                    assert_eq!(before, &unclocked, "{what}: ad {i} kept its generation");
                    assert!(
                        ad.iter().any(|(n, _)| changes_with_time(n.as_str())),
                        "{what}: ad {i} has the clock's figures"
                    );
                }
                None => {
                    generations.insert(w.ad_generation(i), unclocked);
                }
            }
        }
    };
    let mut reference = s.clone();
    let mut swapping = s;
    let mut copies = Vec::new();
    let mut epoch = AdsEpoch::default();
    let extra = extra();
    let mut published = |r: &mut Startd, w: &mut Startd, now: i64, what: &str| {
        let mut want = r.published_ads(now);
        for a in &mut want {
            a.update(&extra);
        }
        w.republish(now, &extra, &mut copies, &mut epoch);
        by_generation(w, &copies, what);
        assert_eq!(copies.len(), want.len(), "{what}: number of ads");
        for (k, (got, want)) in copies.iter().zip(&want).enumerate() {
            assert_eq!(lines(got), lines(want), "{what}: ad {k}");
        }
        for i in 0..w.slots().len() {
            assert_eq!(
                lines(&w.slot_ad(i, now)),
                lines(&r.slot_ad(i, now)),
                "{what}: slot {i}'s own ad"
            );
        }
    };
    published(&mut reference, &mut swapping, T0, "at first");
    for (k, (at, ev)) in steps.iter().enumerate() {
        let a = reference.receive(ev.clone(), *at);
        let b = swapping.receive(ev.clone(), *at);
        assert_eq!(a.transitions.len(), b.transitions.len(), "step {k}");
        let r = readings(0, 0.0);
        reference.tick(*at + 1, r.clone());
        swapping.tick(*at + 1, r);
        published(&mut reference, &mut swapping, *at + 2, &format!("step {k}"));
        // Twice at one time, and once more later: a reused copy is
        // current, not the one before.
        published(
            &mut reference,
            &mut swapping,
            *at + 2,
            &format!("step {k}, again"),
        );
        published(
            &mut reference,
            &mut swapping,
            *at + 7,
            &format!("step {k}, later"),
        );
    }
    // Most publications found only the clock moved.
    assert!(
        kept > generations.len(),
        "{kept} ads kept a generation, {} generations",
        generations.len()
    );
}

#[test]
fn static_slots_publish_alike_through_a_job_s_life() {
    let s = startd(
        "START = True\nSTARTD_SLOT_ATTRS = State\nUID_DOMAIN = own.example.org",
        2,
    );
    check(
        s,
        &[
            (T0 + 10, request("slot1", "c1", job("alice"))),
            (T0 + 20, activate("slot1", "c1", job("alice"))),
            (T0 + 300, exited("slot1")),
            (
                T0 + 310,
                Event::ReleaseClaim {
                    slot: "slot1".into(),
                    claim_id: "c1".into(),
                },
            ),
            (T0 + 320, request("slot2", "c2", job("bob"))),
            (T0 + 330, activate("slot2", "c2", job("bob"))),
        ],
    );
}

#[test]
fn dynamic_slots_coming_and_going_publish_alike() {
    let c = config("RunBenchmarks = False\nuse FEATURE : PartitionableSlot");
    let host = HostReadings::simple(8, 16384, 100_000_000, 0);
    let mut s =
        Startd::from_config(&c, "exec.example.org", &host, T0).unwrap_or_else(|e| panic!("{e}"));
    s.tick(T0, readings(0, 0.0));
    check(
        s,
        &[
            (T0 + 10, request("slot1", "c1", job("alice"))),
            (T0 + 20, activate("slot1_1", "c1", job("alice"))),
            (T0 + 30, request("slot1", "c2", job("bob"))),
            (T0 + 300, exited("slot1_1")),
            (
                T0 + 310,
                Event::ReleaseClaim {
                    slot: "slot1_1".into(),
                    claim_id: "c1".into(),
                },
            ),
        ],
    );
}
