//! Partitionable slots: dynamic slots carved for each claim, named
//! `slot1_1`, ..., their resources returned when their claim is over
//! (`policy-configuration.rst`, "Dynamic Provisioning: Partitionable and
//! Dynamic Slots").

mod common;

use common::*;
use startd::resources::HostReadings;
use startd::{Event, Startd};

fn machine(text: &str) -> Startd {
    let c = config(&format!("RunBenchmarks = False\n{text}"));
    let host = HostReadings::simple(8, 16384, 100_000_000, 0);
    let mut s =
        Startd::from_config(&c, "exec.example.org", &host, T0).unwrap_or_else(|e| panic!("{e}"));
    s.tick(T0, readings(0, 0.0));
    s
}

fn attr(s: &mut Startd, slot: &str, name: &str) -> String {
    let i = s
        .slots()
        .iter()
        .position(|x| x.name == slot)
        .unwrap_or_else(|| panic!("no {slot}"));
    s.slot_ad(i, T0)
        .eval_attr(name, &classad::Env::at(T0))
        .to_string()
}

fn sized(owner: &str, cpus: i64, memory: i64) -> classad::ClassAd {
    ad(&format!(
        "[ ClusterId = 7; ProcId = 0; Owner = \"{owner}\"; JobUniverse = 5; RequestCpus = {cpus}; RequestMemory = {memory}; RequestDisk = 1024 ]"
    ))
}

#[test]
fn one_partitionable_slot_holds_the_machine() {
    let mut s = machine("use FEATURE : PartitionableSlot");
    assert_eq!(s.slots().len(), 1);
    assert_eq!(attr(&mut s, "slot1", "SlotType"), "\"Partitionable\"");
    assert_eq!(attr(&mut s, "slot1", "PartitionableSlot"), "true");
    assert_eq!(attr(&mut s, "slot1", "Cpus"), "8");
    assert_eq!(attr(&mut s, "slot1", "Memory"), "16384");
    assert_eq!(pair(&s, 0), "Unclaimed/Idle");
}

#[test]
fn a_claim_carves_a_dynamic_slot_and_its_end_gives_the_resources_back() {
    let mut s = machine("use FEATURE : PartitionableSlot");
    let r = s
        .handle(request("slot1", "c1", sized("alice", 2, 4096)), T0 + 1)
        .unwrap();
    assert_eq!(r.transitions.len(), 1);
    assert_eq!(r.transitions[0].slot, "slot1_1");
    assert_eq!(r.transitions[0].number, 5);
    assert_eq!(
        attr(&mut s, "slot1_1", "Name"),
        "\"slot1_1@exec.example.org\""
    );
    assert_eq!(attr(&mut s, "slot1_1", "DynamicSlot"), "true");
    assert_eq!(attr(&mut s, "slot1_1", "Cpus"), "2");
    assert_eq!(attr(&mut s, "slot1_1", "Memory"), "4096");
    assert_eq!(attr(&mut s, "slot1_1", "SlotID"), "1");
    // The partitionable slot keeps the rest, and stays Unclaimed.
    assert_eq!(attr(&mut s, "slot1", "Cpus"), "6");
    assert_eq!(attr(&mut s, "slot1", "Memory"), "12288");
    assert_eq!(attr(&mut s, "slot1", "State"), "\"Unclaimed\"");
    // A second job gets slot1_2.
    s.handle(request("slot1", "c2", sized("bob", 4, 8192)), T0 + 2)
        .unwrap();
    assert_eq!(attr(&mut s, "slot1", "Cpus"), "2");
    assert!(s.slots().iter().any(|x| x.name == "slot1_2"));

    s.handle(activate("slot1_1", "c1", sized("alice", 2, 4096)), T0 + 3)
        .unwrap();
    s.handle(exited("slot1_1"), T0 + 100).unwrap();
    let r = s
        .handle(
            Event::ReleaseClaim {
                slot: "slot1_1".into(),
                claim_id: "c1".into(),
            },
            T0 + 101,
        )
        .unwrap();
    assert_eq!(numbers(&r), vec![10, 22]);
    // slot1_1 is gone and its resources are back.
    assert!(!s.slots().iter().any(|x| x.name == "slot1_1"));
    assert_eq!(attr(&mut s, "slot1", "Cpus"), "4");
    // Its number is free again.
    s.handle(request("slot1", "c3", sized("carol", 1, 1024)), T0 + 200)
        .unwrap();
    assert!(s.slots().iter().any(|x| x.name == "slot1_1"));
}

#[test]
fn a_job_that_does_not_fit_is_refused_and_says_what_is_short() {
    let mut s = machine("use FEATURE : PartitionableSlot");
    let e = s
        .handle(request("slot1", "c1", sized("alice", 16, 1024)), T0 + 1)
        .unwrap_err();
    assert!(e.reason.to_lowercase().contains("cpu"), "{e}");
    assert_eq!(s.slots().len(), 1);
    assert_eq!(attr(&mut s, "slot1", "Cpus"), "8");
}

#[test]
fn jobs_without_requests_get_the_defaults() {
    let mut s = machine("use FEATURE : PartitionableSlot\nJOB_DEFAULT_REQUESTMEMORY = 512\nJOB_DEFAULT_REQUESTDISK = 2048");
    let job = ad("[ ClusterId = 1; ProcId = 0; Owner = \"alice\"; JobUniverse = 5 ]");
    s.handle(request("slot1", "c1", job), T0 + 1).unwrap();
    assert_eq!(attr(&mut s, "slot1_1", "Cpus"), "1");
    assert_eq!(attr(&mut s, "slot1_1", "Memory"), "512");
}

#[test]
fn static_and_partitionable_slot_types_side_by_side() {
    let mut s = machine(
        "SLOT_TYPE_1 = cpus=2, mem=25%\nNUM_SLOTS_TYPE_1 = 2\nSLOT_TYPE_2 = cpus=4, mem=50%\nNUM_SLOTS_TYPE_2 = 1\nSLOT_TYPE_2_PARTITIONABLE = True",
    );
    let names: Vec<&str> = s.slots().iter().map(|x| x.name.as_str()).collect();
    assert_eq!(names, vec!["slot1", "slot2", "slot3"]);
    assert_eq!(attr(&mut s, "slot1", "SlotType"), "\"Static\"");
    assert_eq!(attr(&mut s, "slot3", "SlotType"), "\"Partitionable\"");
    assert_eq!(attr(&mut s, "slot3", "Cpus"), "4");
    s.handle(request("slot3", "c1", sized("alice", 1, 1024)), T0 + 1)
        .unwrap();
    assert!(s.slots().iter().any(|x| x.name == "slot3_1"));
}

#[test]
fn a_layout_that_overcommits_the_machine_is_refused() {
    let c = config("SLOT_TYPE_1 = cpus=6\nNUM_SLOTS_TYPE_1 = 2");
    let e = Startd::from_config(
        &c,
        "exec",
        &HostReadings::simple(8, 16384, 100_000_000, 0),
        T0,
    )
    .unwrap_err();
    assert!(e.to_string().contains("CPUs"), "{e}");
}

#[test]
fn a_matched_partitionable_slot_stays_unclaimed_and_takes_several_claims() {
    // The negotiator may match one partitionable slot to several jobs in a
    // cycle; each match notice must leave it open to the claims that follow.
    let mut s = machine("use FEATURE : PartitionableSlot");
    let r = s
        .handle(
            Event::Matched {
                slot: "slot1".into(),
            },
            T0 + 1,
        )
        .unwrap();
    assert!(r.transitions.is_empty(), "{:?}", r.transitions);
    assert_eq!(pair(&s, 0), "Unclaimed/Idle");
    s.handle(
        Event::Matched {
            slot: "slot1".into(),
        },
        T0 + 1,
    )
    .unwrap();
    s.handle(request("slot1", "c1", sized("alice", 2, 4096)), T0 + 2)
        .unwrap();
    s.handle(request("slot1", "c2", sized("bob", 2, 4096)), T0 + 2)
        .unwrap();
    assert_eq!(attr(&mut s, "slot1", "Cpus"), "4");
    assert_eq!(attr(&mut s, "slot1", "State"), "\"Unclaimed\"");
    // Past MATCH_TIMEOUT nothing happens to it either: it was never Matched.
    s.tick(T0 + 10_000, readings(0, 0.0));
    assert_eq!(pair(&s, 0), "Unclaimed/Idle");
}

#[test]
fn a_consumption_policy_sizes_dynamic_slots_and_is_published() {
    // The manual's "Consumption policies": the partitionable slot says
    // what a match takes, and the dynamic slot gets exactly that.
    let mut s = machine(
        "use FEATURE : PartitionableSlot\nCONSUMPTION_POLICY = True\nCONSUMPTION_MEMORY = quantize(target.RequestMemory, {1024})\nMODIFY_REQUEST_EXPR_REQUESTMEMORY = quantize(RequestMemory, {128})",
    );
    let ad = s.slot_ad(0, T0);
    assert_eq!(
        ad.get("ConsumptionMemory")
            .map(|e| e.to_string())
            .as_deref(),
        Some("quantize(target.RequestMemory,{ 1024 })")
    );
    assert!(ad.get("ConsumptionCpus").is_some());
    assert!(ad.get("ConsumptionDisk").is_some());
    assert_eq!(attr(&mut s, "slot1", "SlotWeight"), "8");
    s.handle(request("slot1", "c1", sized("alice", 1, 1500)), T0 + 1)
        .unwrap();
    assert_eq!(attr(&mut s, "slot1_1", "Memory"), "2048");
    assert_eq!(attr(&mut s, "slot1_1", "SlotWeight"), "1");
    assert_eq!(attr(&mut s, "slot1", "Memory"), "14336");
    assert_eq!(attr(&mut s, "slot1", "SlotWeight"), "7");
}

#[test]
fn without_a_consumption_policy_modify_request_exprs_round_and_nothing_is_published() {
    let mut s = machine(
        "use FEATURE : PartitionableSlot\nMODIFY_REQUEST_EXPR_REQUESTMEMORY = quantize(RequestMemory, {128})",
    );
    assert!(s.slot_ad(0, T0).get("ConsumptionMemory").is_none());
    s.handle(request("slot1", "c1", sized("alice", 1, 1500)), T0 + 1)
        .unwrap();
    assert_eq!(attr(&mut s, "slot1_1", "Memory"), "1536");
}

#[test]
fn a_consumption_expression_that_gives_no_amount_refuses_the_claim() {
    let mut s = machine(
        "use FEATURE : PartitionableSlot\nCONSUMPTION_POLICY = True\nCONSUMPTION_MEMORY = target.NoSuchAttribute",
    );
    let e = s
        .handle(request("slot1", "c1", sized("alice", 1, 1500)), T0 + 1)
        .unwrap_err();
    assert!(
        e.reason.contains("CONSUMPTION_MEMORY is undefined"),
        "{}",
        e.reason
    );
}
