//! The accountant: the manual's user-priority numbers, priority factors,
//! accounting groups and their quotas, and fair share over a simulated day.

use std::collections::BTreeMap;

use config::{Config, FixedHost, LoadOptions, MemFiles, Root};
use negotiator::accountant::{Accountant, AccountantState, ROOT_GROUP};

fn config(text: &str) -> Config {
    config::load(
        &LoadOptions::new("NEGOTIATOR", Root::File("condor_config".into())),
        &MemFiles::new().with("condor_config", text),
        &FixedHost::empty(),
    )
    .unwrap()
}

fn accountant(text: &str) -> Accountant {
    Accountant::from_config(&config(text)).unwrap()
}

const T0: i64 = 1_700_000_000;
const DAY: i64 = 86_400;

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * b.abs().max(1.0)
}

fn usage(pairs: &[(&str, f64)]) -> BTreeMap<String, f64> {
    pairs.iter().map(|(n, w)| (n.to_string(), *w)).collect()
}

#[test]
fn every_user_starts_at_the_minimum_real_priority() {
    let a = accountant("");
    assert_eq!(a.real_priority("alice@cs.wisc.edu"), 0.5);
    // DEFAULT_PRIO_FACTOR is 1000 in HTCondor 25.
    assert_eq!(a.effective_priority("alice@cs.wisc.edu"), 500.0);
}

#[test]
fn manual_rup_of_10_halves_every_half_life() {
    // "a user with a RUP of 10 has no running jobs, that user's RUP would
    // be 5 one day later, 2.5 two days later".
    let mut a = accountant("");
    a.update_priorities(T0);
    a.set_priority("alice@cs.wisc.edu", 10.0);
    a.update_priorities(T0 + DAY);
    assert!(close(a.real_priority("alice@cs.wisc.edu"), 5.0, 1e-9));
    // Uneven intervals give the same answer (β = 0.5^(δt/h) composes).
    a.update_priorities(T0 + DAY + 1000);
    a.update_priorities(T0 + DAY + 50_000);
    a.update_priorities(T0 + 2 * DAY);
    assert!(close(a.real_priority("alice@cs.wisc.edu"), 2.5, 1e-9));
}

#[test]
fn manual_100_cores_for_48_hours_gives_about_75() {
    // "user A's RUP should be about 75.0 at the 48 hour mark":
    // 0.5·0.25 + 100·(1 − 0.25) = 75.125.
    let mut a = accountant("");
    a.update(T0, &usage(&[("a@pool", 100.0)]));
    for hour in 1..=48 {
        a.update(T0 + hour * 3600, &usage(&[("a@pool", 100.0)]));
    }
    assert!(close(a.real_priority("a@pool"), 75.125, 1e-9));
    assert_eq!(a.real_priority("b@pool"), 0.5);
}

#[test]
fn real_priority_approaches_the_usage_at_steady_state() {
    let mut a = accountant("");
    for step in 0..=(20 * 24) {
        a.update(T0 + step * 3600, &usage(&[("u@d", 10.0)]));
    }
    assert!(close(a.real_priority("u@d"), 10.0, 1e-3));
}

#[test]
fn effective_priority_is_real_priority_times_factor() {
    let mut a = accountant("DEFAULT_PRIO_FACTOR = 10");
    a.update_priorities(T0);
    a.set_priority("u@d", 4.0);
    assert_eq!(a.priority_factor("u@d"), 10.0);
    assert_eq!(a.effective_priority("u@d"), 40.0);
    a.set_factor("u@d", 2.5);
    assert_eq!(a.effective_priority("u@d"), 10.0);
    // condor_userprio refuses factors below 1: they become 1.
    a.set_factor("u@d", 0.1);
    assert_eq!(a.priority_factor("u@d"), 1.0);
}

#[test]
fn nice_users_remote_users_and_group_factors() {
    let a = accountant(
        "ACCOUNTANT_LOCAL_DOMAIN = cs.wisc.edu\n\
         GROUP_NAMES = group_physics\n\
         GROUP_PRIO_FACTOR_group_physics = 5\n",
    );
    assert_eq!(a.priority_factor("nice-user.alice@cs.wisc.edu"), 1e10);
    assert_eq!(a.priority_factor("bob@elsewhere.org"), 1e7);
    assert_eq!(a.priority_factor("bob@cs.wisc.edu"), 1000.0);
    assert_eq!(a.priority_factor("group_physics.carol@cs.wisc.edu"), 5.0);
    // Without ACCOUNTANT_LOCAL_DOMAIN everyone is local.
    let b = accountant("");
    assert_eq!(b.priority_factor("bob@elsewhere.org"), 1000.0);
}

#[test]
fn nice_users_come_last() {
    let mut a = accountant("");
    // The heavy user has used the whole pool for a day; the nice user
    // nothing. The nice user still sorts after.
    for hour in 0..=24 {
        a.update(T0 + hour * 3600, &usage(&[("heavy@d", 500.0)]));
    }
    let mut subs = vec!["nice-user.zed@d", "heavy@d", "fresh@d"];
    subs.sort_by(|x, y| a.effective_priority(x).total_cmp(&a.effective_priority(y)));
    assert_eq!(subs, ["fresh@d", "heavy@d", "nice-user.zed@d"]);
}

#[test]
fn submitter_names_map_to_groups() {
    let a = accountant("GROUP_NAMES = group_physics, group_physics.lhc, group_chem\n");
    assert_eq!(a.group_of("alice@d"), ROOT_GROUP);
    assert_eq!(a.group_of("group_physics.alice@d"), "group_physics");
    assert_eq!(a.group_of("group_physics.lhc.alice@d"), "group_physics.lhc");
    // An unknown subgroup falls back to the deepest group configured.
    assert_eq!(a.group_of("group_physics.cms.alice@d"), "group_physics");
    assert_eq!(a.group_of("GROUP_CHEM.bob@d"), "group_chem");
    assert_eq!(a.group_of("nogroup.bob@d"), ROOT_GROUP);
    // A name without '@' is a group's own record.
    assert_eq!(a.group_of("group_physics.lhc"), "group_physics.lhc");
}

#[test]
fn groups_with_missing_parents_are_ignored() {
    let a = accountant("GROUP_NAMES = a.b, c\nGROUP_QUOTA_c = 3\n");
    let names: Vec<&str> = a.groups.groups.iter().map(|g| g.name.as_str()).collect();
    assert_eq!(names, [ROOT_GROUP, "c"]);
}

#[test]
fn a_match_charges_only_the_time_it_existed() {
    let mut a = accountant("PRIORITY_HALFLIFE = 3600");
    a.update_priorities(T0);
    // Claimed half way through the interval, weight 4.
    a.add_match("u@d", "slot1@host", 4.0, T0 + 1800);
    assert_eq!(a.resources_in_use("u@d"), 4.0);
    a.update_priorities(T0 + 3600);
    // recent = 4 + (−1800·4)/3600 = 2; β = 0.5.
    assert!(close(a.real_priority("u@d"), 0.5 * 0.5 + 2.0 * 0.5, 1e-12));
    let r = a.record("u@d").unwrap();
    assert_eq!(r.weighted_accumulated_usage, 7200.0);
    assert_eq!(r.accumulated_usage, 1800.0);
    // Released after another 900 s: charged at the next update.
    a.remove_match("slot1@host", T0 + 4500);
    assert_eq!(a.resources_in_use("u@d"), 0.0);
    a.update_priorities(T0 + 7200);
    assert_eq!(
        a.record("u@d").unwrap().weighted_accumulated_usage,
        7200.0 + 3600.0
    );
}

#[test]
fn check_matches_follows_the_claimed_slots() {
    let mut a = accountant("");
    a.update_priorities(T0);
    a.check_matches([("s1@h", "u@d", 1.0), ("s2@h", "v@d", 2.0)], T0 + 10);
    assert_eq!(a.resources_in_use("u@d"), 1.0);
    assert_eq!(a.resources_in_use("v@d"), 2.0);
    // s1 now runs for v; s2 is gone.
    a.check_matches([("s1@h", "v@d", 1.0)], T0 + 20);
    assert_eq!(a.resources_in_use("u@d"), 0.0);
    assert_eq!(a.resources_in_use("v@d"), 1.0);
}

#[test]
fn group_usage_is_charged_to_the_group_and_its_ancestors() {
    let mut a = accountant("GROUP_NAMES = a, a.b\nGROUP_QUOTA_a = 10\nGROUP_QUOTA_a.b = 5\n");
    a.update_priorities(T0);
    a.add_match("a.b.u@d", "s1@h", 2.0, T0);
    assert_eq!(a.resources_in_use("a.b"), 2.0);
    assert_eq!(a.record("a").unwrap().hier_weighted_resources_used, 2.0);
    assert_eq!(a.record("a.b").unwrap().hier_weighted_resources_used, 2.0);
    a.update_priorities(T0 + 86_400);
    // The parent's priority follows its subtree's usage.
    assert!(close(a.real_priority("a"), 0.5 * 0.5 + 2.0 * 0.5, 1e-12));
}

#[test]
fn charge_adds_usage_no_match_recorded() {
    let mut a = accountant("PRIORITY_HALFLIFE = 3600");
    a.update_priorities(T0);
    a.charge("u@d", 3.0, T0 - 100, T0 + 1200);
    a.update_priorities(T0 + 3600);
    // 3 slots for 1200 s over a 3600 s interval: recent = 1.
    assert!(close(a.real_priority("u@d"), 0.5 * 0.5 + 1.0 * 0.5, 1e-12));
}

#[test]
fn state_round_trips() {
    let mut a = accountant("GROUP_NAMES = g\nGROUP_QUOTA_g = 4\n");
    a.update_priorities(T0);
    a.add_match("g.u@d", "s1@h", 1.0, T0 + 5);
    a.set_factor("v@d", 7.0);
    a.update_priorities(T0 + 600);
    let state: AccountantState = a.state();
    let b = accountant("GROUP_NAMES = g\nGROUP_QUOTA_g = 4\n").with_state(state.clone());
    assert_eq!(b.state(), state);
    assert_eq!(b.effective_priority("g.u@d"), a.effective_priority("g.u@d"));
    assert_eq!(b.priority_factor("v@d"), 7.0);
    assert_eq!(state.matches.len(), 1);
}

/// Shares the pool in inverse proportion to effective priorities each
/// minute (what the negotiator's pie spin does for submitters with
/// unlimited short jobs) for a day; returns the last usage of each.
fn simulate_fair_share(a: &mut Accountant, users: &[&str], pool: f64) -> Vec<f64> {
    let mut shares = vec![0.0; users.len()];
    for minute in 0..=(24 * 60) {
        let inverse: Vec<f64> = users
            .iter()
            .map(|u| 1.0 / a.effective_priority(u))
            .collect();
        let z: f64 = inverse.iter().sum();
        shares = inverse.iter().map(|i| pool * i / z).collect();
        let u: BTreeMap<String, f64> = users
            .iter()
            .zip(&shares)
            .map(|(n, s)| (n.to_string(), *s))
            .collect();
        a.update(T0 + minute * 60, &u);
    }
    shares
}

#[test]
fn fair_share_converges_for_factors_1_and_4_to_twice_the_slots() {
    // HTCondor's wiki ("How to configure fair share"): real priority tends
    // to the usage, so usage ratio² = factor ratio; factors 1:4 give 2:1.
    let mut a = accountant("PRIORITY_HALFLIFE = 3600");
    a.set_factor("a@d", 1.0);
    a.set_factor("b@d", 4.0);
    let s = simulate_fair_share(&mut a, &["a@d", "b@d"], 100.0);
    assert!(close(s[0] / s[1], 2.0, 0.01), "ratio {}", s[0] / s[1]);
    assert!(close(s[0] + s[1], 100.0, 1e-9));
}

#[test]
fn fair_share_converges_for_factors_1_and_2() {
    let mut a = accountant("PRIORITY_HALFLIFE = 3600");
    a.set_factor("a@d", 1.0);
    a.set_factor("b@d", 2.0);
    let s = simulate_fair_share(&mut a, &["a@d", "b@d"], 100.0);
    let ratio = s[0] / s[1];
    assert!(close(ratio, 2f64.sqrt(), 0.01), "ratio {ratio}");
    // Effective priorities are inversely proportional to the shares.
    let e = a.effective_priority("b@d") / a.effective_priority("a@d");
    assert!(close(e, ratio, 0.02), "{e} vs {ratio}");
}

#[test]
fn fair_share_over_a_day_with_the_default_half_life_moves_toward_the_ratio() {
    // With a one-day half-life the ratio starts at the factor ratio (both
    // at 0.5) and moves toward √2 within the day.
    let mut a = accountant("");
    a.set_factor("a@d", 1.0);
    a.set_factor("b@d", 2.0);
    let s = simulate_fair_share(&mut a, &["a@d", "b@d"], 100.0);
    let ratio = s[0] / s[1];
    assert!(ratio > 2f64.sqrt() && ratio < 2.0, "ratio {ratio}");
}

#[test]
fn static_and_dynamic_quotas() {
    let mut a = accountant(
        "GROUP_NAMES = a, b, c\n\
         GROUP_QUOTA_a = 10\n\
         GROUP_QUOTA_DYNAMIC_b = 0.5\n\
         GROUP_QUOTA_DYNAMIC_c = 0.25\n",
    );
    let q = a.group_quotas(100.0);
    assert_eq!(q["a"], 10.0);
    assert_eq!(q["b"], 45.0);
    assert_eq!(q["c"], 22.5);
    // The root keeps what the groups do not take.
    assert_eq!(q[ROOT_GROUP], 22.5);
}

#[test]
fn hierarchical_quotas_without_oversubscription() {
    let mut a = accountant(
        "NEGOTIATOR_ALLOW_QUOTA_OVERSUBSCRIPTION = false\n\
         GROUP_NAMES = phys, phys.lhc, phys.theory\n\
         GROUP_QUOTA_phys = 60\n\
         GROUP_QUOTA_DYNAMIC_phys.lhc = 0.5\n\
         GROUP_QUOTA_DYNAMIC_phys.theory = 0.25\n",
    );
    let q = a.group_quotas(100.0);
    assert_eq!(q["phys.lhc"], 30.0);
    assert_eq!(q["phys.theory"], 15.0);
    assert_eq!(q["phys"], 15.0);
    assert_eq!(q[ROOT_GROUP], 40.0);
}

#[test]
fn static_quotas_larger_than_the_pool_are_scaled_down_without_oversubscription() {
    let mut a = accountant(
        "NEGOTIATOR_ALLOW_QUOTA_OVERSUBSCRIPTION = false\n\
         GROUP_NAMES = a, b\nGROUP_QUOTA_a = 80\nGROUP_QUOTA_b = 40\n",
    );
    let q = a.group_quotas(60.0);
    assert_eq!(q["a"], 40.0);
    assert_eq!(q["b"], 20.0);
    assert_eq!(q[ROOT_GROUP], 0.0);
}

#[test]
fn groups_get_their_demand_up_to_quota_and_surplus_only_if_they_accept_it() {
    let text = "GROUP_NAMES = a, b\nGROUP_QUOTA_a = 10\nGROUP_QUOTA_b = 20\n";
    let demand = usage(&[("a", 50.0), ("b.someone@d", 5.0)]);
    let mut a = accountant(text);
    let r = a.allocate(100.0, &demand, T0);
    assert_eq!(r["a"].allocated, 10.0);
    assert_eq!(r["a"].unmet, 40.0);
    assert_eq!(r["b"].allocated, 5.0);

    let mut a = accountant(&format!("{text}GROUP_ACCEPT_SURPLUS_a = true\n"));
    let r = a.allocate(100.0, &demand, T0);
    // b's unused 15 and the root's unused 70 are surplus; a takes 40 more.
    assert_eq!(r["a"].allocated, 50.0);
    assert_eq!(r["b"].allocated, 5.0);
}

#[test]
fn scarce_surplus_is_shared_by_quota_and_whole_slots_by_round_robin() {
    let text = "GROUP_NAMES = a, b\nGROUP_QUOTA_a = 10\nGROUP_QUOTA_b = 20\n\
                GROUP_ACCEPT_SURPLUS = true\n";
    let demand = usage(&[("a", 100.0), ("b", 100.0)]);
    let mut a = accountant(text);
    let r = a.allocate(40.0, &demand, T0);
    // Surplus 10 (the root's own) split 1:2 by quota.
    assert!(close(r["a"].allocated, 10.0 + 10.0 / 3.0, 1e-9));
    assert!(close(r["b"].allocated, 20.0 + 20.0 / 3.0, 1e-9));

    let mut a = accountant(&format!("{text}NEGOTIATOR_USE_SLOT_WEIGHTS = false\n"));
    let r = a.allocate(40.0, &demand, T0);
    let (x, y) = (r["a"].allocated, r["b"].allocated);
    assert_eq!(x.fract(), 0.0);
    assert_eq!(y.fract(), 0.0);
    assert_eq!(x + y, 40.0);
    assert!(
        (13.0..=14.0).contains(&x) && (26.0..=27.0).contains(&y),
        "{x} {y}"
    );
}

#[test]
fn group_quotas_hold_against_a_greedy_group() {
    // However much a group asks, what it is allocated never passes its
    // quota unless it accepts surplus.
    let mut a = accountant("GROUP_NAMES = a, b\nGROUP_QUOTA_a = 30\nGROUP_QUOTA_b = 30\n");
    for demand_a in [0.0, 10.0, 30.0, 31.0, 1000.0] {
        let r = a.allocate(100.0, &usage(&[("a", demand_a), ("b", 1000.0)]), T0);
        assert!(r["a"].allocated <= 30.0);
        assert_eq!(r["a"].allocated, demand_a.min(30.0));
        assert_eq!(r["b"].allocated, 30.0);
    }
}

#[test]
fn strict_quota_caps_by_ancestors_that_refuse_surplus() {
    let mut a = accountant("GROUP_NAMES = a, a.b\nGROUP_QUOTA_a = 10\nGROUP_QUOTA_a.b = 8\n");
    a.update_priorities(T0);
    a.add_match("a.u@d", "s1@h", 4.0, T0);
    a.allocate(100.0, &usage(&[("a.b", 100.0)]), T0);
    // a.b asks for 8, but a (quota 10) already uses 4 itself.
    assert_eq!(a.enforce_strict_quota("a.b", 8.0), 6.0);
}

#[test]
fn attributes_for_preemption_policy() {
    let mut a = accountant("GROUP_NAMES = g\nGROUP_QUOTA_g = 7\n");
    a.update_priorities(T0);
    a.add_match("g.u@d", "s1@h", 2.0, T0);
    a.allocate(100.0, &usage(&[("g", 5.0)]), T0);
    let attrs: BTreeMap<&str, classad::Value> =
        a.submitter_attributes("g.u@d", None).into_iter().collect();
    assert_eq!(
        attrs["SubmitterUserPrio"].as_number(),
        Some(a.effective_priority("g.u@d"))
    );
    assert_eq!(
        attrs["SubmittorPrio"].as_number(),
        Some(a.effective_priority("g.u@d"))
    );
    assert_eq!(attrs["SubmitterUserResourcesInUse"].as_number(), Some(2.0));
    assert_eq!(attrs["SubmitterGroup"].as_str(), Some("g"));
    assert_eq!(attrs["SubmitterGroupResourcesInUse"].as_number(), Some(2.0));
    assert_eq!(attrs["SubmitterGroupQuota"].as_number(), Some(7.0));
    assert_eq!(attrs["SubmitterAutoregroup"].as_bool(), Some(false));
    let remote: BTreeMap<&str, classad::Value> = a
        .remote_attributes("other@d", Some(ROOT_GROUP))
        .into_iter()
        .collect();
    assert_eq!(remote["RemoteUserPrio"].as_number(), Some(500.0));
    assert_eq!(remote["RemoteGroup"].as_str(), Some(ROOT_GROUP));
    assert!(!remote.contains_key("RemoteGroupQuota"));
}
