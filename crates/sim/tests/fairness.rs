//! Fair share, concurrency limits and group quotas over simulated time, on
//! the real negotiator, accountant and startds.

mod common;

use common::*;
use serde_json::json;
use sim::Report;

fn many(user: &str, n: u32, runtime: serde_json::Value, extra: &str) -> serde_json::Value {
    json!({"user": user, "at": 0, "runtime": runtime,
           "submit": format!("universe = vanilla\nexecutable = /bin/sleep\n{extra}\nqueue {n}")})
}

/// Mean cores in use by `user` over the samples from `from` seconds on.
fn mean_running(r: &Report, user: &str, from: i64) -> f64 {
    let s: Vec<f64> = r
        .samples
        .iter()
        .filter(|s| s.time - r.start >= from)
        .map(|s| s.running_by_user.get(user).copied().unwrap_or(0.0))
        .collect();
    s.iter().sum::<f64>() / s.len().max(1) as f64
}

/// Two users with priority factors 1 and 4 keep a 20-slot pool busy for
/// a day. HTCondor's negotiator gives each submitter a share of the pool
/// in inverse proportion to its effective priority, and the effective
/// priority is the real priority (which follows the slots the user has
/// been using, with PRIORITY_HALFLIFE) times the factor. At equilibrium
/// the share s_i of each is proportional to 1 / (s_i * f_i), so s_i^2 is
/// proportional to 1 / f_i and s_i to 1 / sqrt(f_i): factors 1:4 settle at
/// shares 2:1, not 4:1. (A half-life of an hour lets the day reach it.)
#[test]
fn fair_share_settles_at_the_square_root_of_the_factor_ratio() {
    let r = run(json!({
        "seed": 11,
        "duration": 86400,
        "config": [example("default.conf"), {"text": "UID_DOMAIN = pool"}],
        "negotiator_config": [{"text": "PRIORITY_HALFLIFE = 3600"}],
        "machines": [{"class": "node", "count": 20, "cpus": 1}],
        "jobs": [many("alice", 2000, json!({"uniform": [300, 900]}), ""),
                 many("bob", 2000, json!({"uniform": [300, 900]}), "")],
        "priority_factors": {"alice@pool": 1.0, "bob@pool": 4.0},
        // No owners: nothing for the startds to notice between polls.
        "intervals": {"NEGOTIATOR_INTERVAL": 60, "POLLING_INTERVAL": 60},
        "sample_interval": 300
    }));
    let alice = mean_running(&r, "alice@pool", 43200);
    let bob = mean_running(&r, "bob@pool", 43200);
    let ratio = alice / bob;
    // Busy but for the minute between a claim's end and the next cycle.
    assert!(alice + bob > 17.0, "the pool stays busy: {alice} + {bob}");
    assert!(
        (1.7..=2.3).contains(&ratio),
        "shares {alice:.2} : {bob:.2} = {ratio:.2}, expected about 2 (sqrt 4)\n{}",
        r.to_text()
    );
}

#[test]
fn concurrency_limits_are_never_exceeded() {
    // Three licenses for 12 slots; two users want them all.
    let r = run(json!({
        "seed": 3,
        "duration": 14400,
        "config": [example("default.conf"), {"text": "UID_DOMAIN = pool"}],
        "negotiator_config": [{"text": "MATLAB_LIMIT = 3"}],
        "machines": [{"class": "node", "count": 12, "cpus": 1}],
        "jobs": [many("alice", 20, json!({"uniform": [300, 900]}), "concurrency_limits = matlab"),
                 many("bob", 20, json!({"uniform": [300, 900]}), "concurrency_limits = matlab"),
                 many("carol", 5, json!(600), "")],
        "sample_interval": 30
    }));
    let mut running = 0i64;
    let mut peak = 0;
    // Replay the job events: starts and ends of the licensed jobs.
    for e in &r.job_events {
        if e.user.starts_with("carol") {
            continue;
        }
        if e.what.starts_with("started on") {
            running += 1;
        } else if e.what.starts_with("exited") || e.what.starts_with("evicted") {
            running -= 1;
        }
        peak = peak.max(running);
        assert!(
            running <= 3,
            "{} licensed jobs at {}\n{}",
            running,
            e.time - r.start,
            dump(&r)
        );
    }
    assert_eq!(peak, 3);
    // The others are not held back, and the licensed ones all got done.
    assert_eq!(events(&r, "carol", "completed").len(), 5);
    assert_eq!(r.summary.jobs_completed, 45, "{}", r.to_text());
}

#[test]
fn group_quotas_hold() {
    // Quotas of 6 and 2 slots out of 8, no surplus sharing: however many
    // jobs each group queues, it never runs more than its quota.
    let r = run(json!({
        "seed": 4,
        "duration": 14400,
        "config": [example("default.conf"), {"text": "UID_DOMAIN = pool"}],
        "negotiator_config": [{"text": "GROUP_NAMES = group_physics, group_chem\nGROUP_QUOTA_group_physics = 6\nGROUP_QUOTA_group_chem = 2\nGROUP_ACCEPT_SURPLUS = False"}],
        "machines": [{"class": "node", "count": 8, "cpus": 1}],
        "jobs": [many("alice", 40, json!({"uniform": [300, 900]}), "accounting_group = group_physics"),
                 many("bob", 40, json!({"uniform": [300, 900]}), "accounting_group = group_chem")],
        "sample_interval": 30
    }));
    let max = |prefix: &str| {
        r.samples
            .iter()
            .map(|s| {
                s.running_by_user
                    .iter()
                    .filter(|(u, _)| u.starts_with(prefix))
                    .map(|(_, v)| *v)
                    .sum::<f64>()
            })
            .fold(0.0f64, f64::max)
    };
    assert_eq!(max("group_physics."), 6.0, "{}", r.to_text());
    assert_eq!(max("group_chem."), 2.0, "{}", r.to_text());
    assert!(r.summary.wait_by_group.contains_key("group_physics"));
    assert!(r.summary.jobs_completed > 20, "{}", r.to_text());
}
