//! Partitionable slots in a whole simulated pool, as the manual describes
//! them (policy-configuration.rst, "Dynamic Provisioning: Partitionable
//! and Dynamic Slots", "condor_negotiator-Side Resource Consumption
//! Policies" and pslot preemption):
//!
//! - a partitionable slot is carved into dynamic slots sized by each job's
//!   requests, the resources come back when a dynamic slot's job ends, and
//!   a job that does not fit waits;
//! - with a consumption policy, one partitionable slot takes several
//!   matches in one negotiation cycle, each consuming what the
//!   `CONSUMPTION_<resource>` expressions say, and `SLOT_WEIGHT` says how
//!   much of its user's fair share each match costs;
//! - with `ALLOW_PSLOT_PREEMPTION`, a better user's job that needs more
//!   than any one dynamic slot has preempts several dynamic slots of the
//!   partitionable slot, lowest `CurrentRank` first, never one whose job
//!   still has retirement time left; without it, the job waits.

mod common;

use common::*;
use serde_json::{json, Value};
use sim::{JobRecord, Report, Simulation};
use startd::slot::SlotKind;

/// The manual's whole-machine partitionable slot.
const PSLOT: &str = "SLOT_TYPE_1 = 100%\nSLOT_TYPE_1_PARTITIONABLE = True\nNUM_SLOTS_TYPE_1 = 1";

/// The manual's consumption policy, with memory taken in 256 MiB steps.
const CONSUMPTION: &str = "CONSUMPTION_POLICY = True\n\
    CONSUMPTION_CPUS = quantize(target.RequestCpus, {1})\n\
    CONSUMPTION_MEMORY = quantize(target.RequestMemory, {256})";

/// pslot preemption for a better user, whatever PREEMPTION_REQUIREMENTS
/// would otherwise say.
const PSLOT_PREEMPTION: &str = "ALLOW_PSLOT_PREEMPTION = True\nPREEMPTION_REQUIREMENTS = True";

const HOST: &str = "node1.example.org";
const SLOT: &str = "slot1@node1.example.org";

/// One machine of `cpus` cores and `memory` MiB whose whole is one
/// partitionable slot, configured further with `machine`; the negotiator
/// reads `negotiator` too. Everyone reads `pool` after default.conf.
fn scenario_of(
    cpus: u32,
    memory: i64,
    pool: &str,
    machine: &str,
    negotiator: &str,
    jobs: Vec<Value>,
    duration: i64,
) -> Value {
    json!({
        "seed": 5,
        "duration": duration,
        "config": [example("default.conf"), {"text": format!("UID_DOMAIN = example.org\n{pool}")}],
        "negotiator_config": [{"text": negotiator}],
        "machines": [{"class": "node", "count": 1, "cpus": cpus, "memory": memory,
                      "disk": 100_000_000, "hostname": HOST,
                      "config": [{"text": PSLOT}, {"text": machine}]}],
        "jobs": jobs,
        "intervals": {"NEGOTIATOR_INTERVAL": 60, "POLLING_INTERVAL": 5},
        "sample_interval": 60
    })
}

/// `n` jobs of `user` submitted `at` seconds in, each asking for `cpus`
/// cores and `memory` MiB and running `runtime` seconds.
fn jobs(user: &str, n: u32, cpus: u32, memory: i64, at: i64, runtime: i64, extra: &str) -> Value {
    json!({"user": user, "at": at, "runtime": runtime,
           "submit": format!("universe = vanilla\nexecutable = /bin/sleep\n\
                              request_cpus = {cpus}\nrequest_memory = {memory}\n\
                              request_disk = 1024\n{extra}\nqueue {n}")})
}

/// A dynamic slot as the startd holds it.
#[derive(Clone, Debug, PartialEq)]
struct Carved {
    name: String,
    cpus: f64,
    memory: i64,
}

/// The machine at one moment: its dynamic slots, and what its
/// partitionable slot has left (cores, MiB).
#[derive(Clone, Debug)]
struct Snapshot {
    at: i64,
    dynamic: Vec<Carved>,
    left: (f64, i64),
}

fn snapshot(sim: &Simulation<'_>, at: i64) -> Snapshot {
    let startd = sim.startd(HOST).expect("the machine");
    let dynamic = startd
        .slots()
        .iter()
        .filter(|s| matches!(s.kind, SlotKind::Dynamic { .. }))
        .map(|s| Carved {
            name: s.name.clone(),
            cpus: s.resources.cpus,
            memory: s.resources.memory,
        })
        .collect();
    let p = startd
        .slots()
        .iter()
        .find(|s| s.kind == SlotKind::Partitionable)
        .expect("a partitionable slot");
    Snapshot {
        at,
        dynamic,
        left: (p.resources.cpus, p.resources.memory),
    }
}

/// Runs the scenario, looking at the machine `at` these seconds after the
/// start (in order), and gives the report with the snapshots.
fn simulate(v: Value, at: &[i64]) -> (Report, Vec<Snapshot>) {
    let s = scenario(v);
    let mut sim = Simulation::new(&s, &Disk).unwrap_or_else(|e| panic!("{e}"));
    let mut snaps = Vec::new();
    for &t in at {
        sim.run_until(s.start + t);
        snaps.push(snapshot(&sim, t));
    }
    (sim.run(), snaps)
}

/// The snapshots, for failure messages.
fn show(snaps: &[Snapshot]) -> String {
    snaps
        .iter()
        .map(|s| {
            format!(
                "machine at {}: dynamic slots {:?}, partitionable slot left {:?}\n",
                s.at, s.dynamic, s.left
            )
        })
        .collect()
}

/// Seconds after the start.
fn t(r: &Report, e: &JobRecord) -> i64 {
    e.time - r.start
}

fn starts<'a>(r: &'a Report, user: &str) -> Vec<&'a JobRecord> {
    events(r, user, "started on")
}

fn evictions<'a>(r: &'a Report, user: &str) -> Vec<&'a JobRecord> {
    events(r, user, "evicted")
}

/// Claims a startd refused: the negotiator and the startd disagreed.
fn refusals(r: &Report) -> Vec<&JobRecord> {
    r.job_events
        .iter()
        .filter(|e| e.what.contains("refused"))
        .collect()
}

/// Cores in use by `user` in the report's sample at `at` seconds.
fn cores_at(r: &Report, user: &str, at: i64) -> f64 {
    r.samples
        .iter()
        .find(|s| s.time - r.start == at)
        .unwrap_or_else(|| panic!("no sample at {at}"))
        .running_by_user
        .get(user)
        .copied()
        .unwrap_or(0.0)
}

fn sorted_sizes(s: &Snapshot) -> Vec<(f64, i64)> {
    let mut v: Vec<(f64, i64)> = s.dynamic.iter().map(|d| (d.cpus, d.memory)).collect();
    v.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    v
}

// ---- 1. Without a consumption policy --------------------------------

/// A 4-core, 4 GiB machine. Alice's two jobs (2 cores, 1 GiB each) are
/// carved out of the partitionable slot at once; Bob's whole-machine job
/// (4 cores, 2 GiB) waits until both have ended and their resources are
/// back in the partitionable slot, then gets a dynamic slot of exactly its
/// size; Carol's job asks for more memory than the machine has and waits
/// for good. Once everything has ended, the partitionable slot is whole
/// again.
#[test]
fn dynamic_slots_are_sized_by_requests_and_give_their_resources_back() {
    let (r, snaps) = simulate(
        scenario_of(
            4,
            4096,
            "",
            "",
            "",
            vec![
                jobs("alice", 2, 2, 1024, 0, 600, ""),
                jobs("carol", 1, 1, 8192, 0, 600, ""),
                jobs("bob", 1, 4, 2048, 90, 600, ""),
            ],
            1800,
        ),
        &[300, 900, 1500],
    );
    let d = format!("{}{}", dump(&r), show(&snaps));
    assert!(refusals(&r).is_empty(), "{d}");

    // Alice's jobs run side by side, each in a dynamic slot of its own
    // sized as asked; the partitionable slot keeps the rest.
    let alice = starts(&r, "alice");
    assert_eq!(alice.len(), 2, "{d}");
    assert_eq!(t(&r, alice[0]), t(&r, alice[1]), "{d}");
    assert_ne!(alice[0].what, alice[1].what, "two dynamic slots\n{d}");
    assert!(
        alice.iter().all(|e| e.what.contains("slot1_")),
        "jobs run in dynamic slots\n{d}"
    );
    let mid = &snaps[0];
    assert_eq!(sorted_sizes(mid), vec![(2.0, 1024), (2.0, 1024)], "{d}");
    assert_eq!(mid.left, (0.0, 2048), "{d}");

    // Bob's job did not fit beside them: it starts only once both have
    // exited, in the next cycle, in one dynamic slot of 4 cores and 2 GiB.
    let alice_done: Vec<i64> = events(&r, "alice", "exited")
        .iter()
        .map(|e| t(&r, e))
        .collect();
    assert_eq!(alice_done.len(), 2, "{d}");
    let last_alice = *alice_done.iter().max().unwrap();
    let bob = starts(&r, "bob");
    assert_eq!(bob.len(), 1, "{d}");
    assert!(t(&r, bob[0]) >= last_alice, "{d}");
    assert!(t(&r, bob[0]) <= last_alice + 2 * 60, "{d}");
    let during_bob = &snaps[1];
    assert_eq!(sorted_sizes(during_bob), vec![(4.0, 2048)], "{d}");
    assert_eq!(during_bob.left, (0.0, 2048), "{d}");

    // Carol's job never fits, and waits.
    assert!(starts(&r, "carol").is_empty(), "{d}");
    assert_eq!(r.summary.jobs_idle_at_end, 1, "{d}");

    // Everything that could run has run, and the machine is whole again.
    assert_eq!(r.summary.jobs_completed, 3, "{d}");
    let end = &snaps[2];
    assert!(end.dynamic.is_empty(), "{d}");
    assert_eq!(end.left, (4.0, 4096), "{d}");
}

// ---- 2. With a consumption policy -----------------------------------

/// An 8-core machine with 1.5 GiB and the manual's consumption policy,
/// memory quantized to 256 MiB. Alice queues six 1-core jobs asking for
/// 300 MiB: each consumes 512 MiB, so exactly three fit; all three are
/// matched to the one partitionable slot in the first negotiation cycle
/// and start together, in dynamic slots of 512 MiB, leaving five cores and
/// no memory. (Unrounded, five would fit by memory.)
#[test]
fn a_consumption_policy_fills_a_partitionable_slot_in_one_cycle() {
    let (r, snaps) = simulate(
        scenario_of(
            8,
            1536,
            "SLOT_WEIGHT = Cpus",
            CONSUMPTION,
            "",
            vec![jobs("alice", 6, 1, 300, 0, 1200, "")],
            600,
        ),
        &[300],
    );
    let d = format!("{}{}", dump(&r), show(&snaps));
    assert!(refusals(&r).is_empty(), "{d}");

    let matched = events(&r, "alice", &format!("matched to {SLOT}"));
    assert_eq!(
        matched.len(),
        3,
        "three matches, all to the partitionable slot\n{d}"
    );
    assert!(
        matched.iter().all(|e| e.time == matched[0].time),
        "all in one negotiation cycle\n{d}"
    );
    let started = starts(&r, "alice");
    assert_eq!(started.len(), 3, "{d}");
    assert!(started.iter().all(|e| e.time == started[0].time), "{d}");
    assert_eq!(t(&r, started[0]), 60, "the first cycle\n{d}");

    let s = &snaps[0];
    assert_eq!(
        sorted_sizes(s),
        vec![(1.0, 512), (1.0, 512), (1.0, 512)],
        "each dynamic slot has what the policy consumed\n{d}"
    );
    assert_eq!(s.left, (5.0, 0), "{d}");
    // The rest wait: the memory is gone.
    assert_eq!(r.summary.jobs_idle_at_end, 3, "{d}");
}

/// SLOT_WEIGHT = Cpus under a consumption policy: a match costs its user
/// the cores it consumes. Alice (2-core jobs) and Bob (1-core jobs), of
/// equal priority, share an empty 8-core partitionable slot: each is
/// entitled to half the pool, 4 cores, so in the first cycle Alice gets
/// two jobs and Bob four, all started at once, and it stays so.
#[test]
fn slot_weight_charges_each_match_the_cores_it_consumes() {
    let (r, snaps) = simulate(
        scenario_of(
            8,
            8192,
            "SLOT_WEIGHT = Cpus",
            CONSUMPTION,
            "",
            vec![
                jobs("alice", 4, 2, 1024, 0, 1200, ""),
                jobs("bob", 8, 1, 512, 0, 1200, ""),
            ],
            600,
        ),
        &[300],
    );
    let d = format!("{}{}", dump(&r), show(&snaps));
    assert!(refusals(&r).is_empty(), "{d}");
    let alice = starts(&r, "alice");
    let bob = starts(&r, "bob");
    assert_eq!(alice.len(), 2, "{d}");
    assert_eq!(bob.len(), 4, "{d}");
    assert!(
        alice.iter().chain(&bob).all(|e| t(&r, e) == 60),
        "all in the first cycle\n{d}"
    );
    for at in [120, 300, 540] {
        assert_eq!(cores_at(&r, "alice@example.org", at), 4.0, "at {at}\n{d}");
        assert_eq!(cores_at(&r, "bob@example.org", at), 4.0, "at {at}\n{d}");
    }
    assert_eq!(snaps[0].left.0, 0.0, "{d}");
}

// ---- 3. pslot preemption ----------------------------------------------

/// Bob's four jobs all start in the first cycle (an evicted one starts
/// again later, so only the first starts count).
fn bobs_four_start_in_the_first_cycle(r: &Report, d: &str) {
    assert_eq!(
        starts(r, "bob").iter().filter(|e| t(r, e) == 60).count(),
        4,
        "Bob's four jobs start in the first cycle\n{d}"
    );
}

/// Bob (priority factor 1000, HTCondor's default) fills a 4-core machine
/// with four 1-core jobs; then Alice (factor 1: a far better priority)
/// submits a job of 3 cores and 3 GiB, more than any dynamic slot has.
fn big_job_against_small_ones(negotiator: &str, machine: &str, bob_extra: &[&str]) -> Value {
    let mut js = Vec::new();
    if bob_extra.is_empty() {
        js.push(jobs("bob", 4, 1, 1024, 0, 5000, ""));
    } else {
        for extra in bob_extra {
            js.push(jobs("bob", 2, 1, 1024, 0, 5000, extra));
        }
    }
    js.push(jobs("alice", 1, 3, 3072, 90, 600, ""));
    let mut v = scenario_of(4, 4096, "", machine, negotiator, js, 1500);
    v["priority_factors"] = json!({"alice@example.org": 1.0, "bob@example.org": 1000.0});
    v
}

/// The manual's pslot preemption: the negotiator adds dynamic slots back
/// to the partitionable slot until Alice's job fits, so three of Bob's
/// jobs are preempted and hers runs in a dynamic slot of 3 cores; his
/// fourth job is left alone.
#[test]
fn a_better_users_big_job_preempts_several_dynamic_slots() {
    let (r, snaps) = simulate(
        big_job_against_small_ones(PSLOT_PREEMPTION, "", &[]),
        &[600],
    );
    let d = format!("{}{}", dump(&r), show(&snaps));
    bobs_four_start_in_the_first_cycle(&r, &d);
    let evicted = evictions(&r, "bob");
    assert_eq!(evicted.len(), 3, "three of Bob's jobs make room\n{d}");
    let mut jobs_evicted: Vec<&str> = evicted.iter().map(|e| e.job.as_str()).collect();
    jobs_evicted.sort();
    jobs_evicted.dedup();
    assert_eq!(jobs_evicted.len(), 3, "three different jobs\n{d}");

    let alice = starts(&r, "alice");
    assert_eq!(alice.len(), 1, "Alice's job runs\n{d}");
    assert!(t(&r, alice[0]) <= 300, "within a few cycles\n{d}");
    assert!(
        evicted.iter().all(|e| e.time <= alice[0].time),
        "after the preempted jobs left\n{d}"
    );
    assert_eq!(events(&r, "alice", "completed").len(), 1, "{d}");
    // While it runs: her 3-core slot and Bob's one survivor.
    assert_eq!(
        sorted_sizes(&snaps[0]),
        vec![(1.0, 1024), (3.0, 3072)],
        "{d}"
    );
}

/// The same pool without ALLOW_PSLOT_PREEMPTION: no single dynamic slot is
/// big enough, the negotiator does not add them up, so nothing is
/// preempted and Alice's job waits behind Bob's.
#[test]
fn without_allow_pslot_preemption_the_big_job_waits() {
    let (r, snaps) = simulate(
        big_job_against_small_ones(
            "ALLOW_PSLOT_PREEMPTION = False\nPREEMPTION_REQUIREMENTS = True",
            "",
            &[],
        ),
        &[600],
    );
    let d = format!("{}{}", dump(&r), show(&snaps));
    bobs_four_start_in_the_first_cycle(&r, &d);
    assert!(evictions(&r, "bob").is_empty(), "{d}");
    assert!(starts(&r, "alice").is_empty(), "{d}");
    assert_eq!(sorted_sizes(&snaps[0]), vec![(1.0, 1024); 4], "{d}");
    assert_eq!(r.summary.jobs_running_at_end, 4, "{d}");
}

/// Dynamic slots whose job still has retirement time left are never
/// taken. Two of Bob's jobs are protected by MAXJOBRETIREMENTTIME (two
/// hours), two are not. A 2-core job of Alice's takes exactly the two
/// unprotected ones; a 3-core job would need a protected one too, so
/// nothing is preempted and it waits.
#[test]
fn dynamic_slots_with_retirement_time_left_are_not_taken() {
    let machine = "MAXJOBRETIREMENTTIME = ifThenElse(TARGET.Protected =?= True, 7200, 0)";
    let bob = ["+Protected = True", ""];

    // Alice's job needs 2 cores: the two unprotected jobs go.
    let mut v = big_job_against_small_ones(PSLOT_PREEMPTION, machine, &bob);
    v["jobs"][2] = jobs("alice", 1, 2, 2048, 90, 600, "");
    let (r, snaps) = simulate(v, &[600]);
    let d = format!("{}{}", dump(&r), show(&snaps));
    bobs_four_start_in_the_first_cycle(&r, &d);
    // condor_submit numbers the protected cluster 1, the other 2.
    let evicted = evictions(&r, "bob");
    assert_eq!(evicted.len(), 2, "{d}");
    assert!(
        evicted.iter().all(|e| e.job.starts_with("2.")),
        "only unprotected jobs are preempted\n{d}"
    );
    assert_eq!(starts(&r, "alice").len(), 1, "{d}");
    assert_eq!(
        sorted_sizes(&snaps[0]),
        vec![(1.0, 1024), (1.0, 1024), (2.0, 2048)],
        "{d}"
    );

    // Alice's job needs 3 cores: no set of unprotected slots will do.
    let (r, snaps) = simulate(
        big_job_against_small_ones(PSLOT_PREEMPTION, machine, &bob),
        &[600],
    );
    let d = format!("{}{}", dump(&r), show(&snaps));
    bobs_four_start_in_the_first_cycle(&r, &d);
    assert!(evictions(&r, "bob").is_empty(), "{d}");
    assert!(starts(&r, "alice").is_empty(), "{d}");
}

/// The negotiator takes dynamic slots lowest CurrentRank first. The
/// machine RANKs "precious" jobs 1 and others 0; Bob's precious jobs were
/// matched first (the lower-numbered dynamic slots), his plain ones after.
/// Alice's precious 2-core job could preempt any of them (Bob's priority
/// is far worse), but the plain ones, ranked lower, are the ones taken.
#[test]
fn dynamic_slots_are_taken_lowest_current_rank_first() {
    let machine = "RANK = ifThenElse(TARGET.Precious =?= True, 1, 0)";
    let mut v = big_job_against_small_ones(PSLOT_PREEMPTION, machine, &["+Precious = True", ""]);
    v["jobs"][2] = jobs("alice", 1, 2, 2048, 90, 600, "+Precious = True");
    let (r, snaps) = simulate(v, &[600]);
    let d = format!("{}{}", dump(&r), show(&snaps));
    bobs_four_start_in_the_first_cycle(&r, &d);
    let evicted = evictions(&r, "bob");
    assert_eq!(evicted.len(), 2, "{d}");
    assert!(
        evicted.iter().all(|e| e.job.starts_with("2.")),
        "the plain (lower CurrentRank) jobs are preempted\n{d}"
    );
    assert_eq!(starts(&r, "alice").len(), 1, "{d}");
}

#[test]
fn machines_of_one_class_are_each_their_own_host() {
    // Three machines of one class: copies of one startd, each named for
    // its host (pslot preemption finds a partitionable slot's dynamic
    // slots by name; two hosts' slots of one name would be confused).
    let mut v = scenario_of(4, 8192, "", "", "", Vec::new(), 600);
    v["machines"][0]["count"] = json!(3);
    v["machines"][0]["hostname"] = json!("node{n}.example.org");
    let s = scenario(v);
    let sim = Simulation::new(&s, &Disk).unwrap_or_else(|e| panic!("{e}"));
    let env = classad::Env::at(sim.now());
    for n in 1..=3 {
        let host = format!("node{n}.example.org");
        let mut startd = sim
            .startd(&host)
            .unwrap_or_else(|| panic!("{host}"))
            .clone();
        for ad in startd.published_ads(sim.now()) {
            let name = ad.eval_attr("Name", &env);
            assert_eq!(name.as_str(), Some(format!("slot1@{host}").as_str()));
            let machine = ad.eval_attr("Machine", &env);
            assert_eq!(machine.as_str(), Some(host.as_str()));
        }
    }
}
