//! The negotiation cycle against the manual's stories: the RANK story on
//! `bass`, fair share within a cycle, PREEMPTION_REQUIREMENTS,
//! NEGOTIATOR_CONSIDER_PREEMPTION, early preemption, partitionable slots
//! (several matches, consumption policy, pslot preemption), concurrency
//! limits, and autoclusters.

mod common;

use common::*;
use std::collections::HashMap;
use std::sync::Arc;

use classad::ClassAd;
use negotiator::autocluster_ids::AutoclusterIds;
use negotiator::cycle::{
    negotiate, KeptIds, Limits, MatchKind, NoLimits, Plan, Policy, Priorities, Reason,
    SubmitterJobs,
};

/// Effective priorities and usage, by submitter; 0.5 (HTCondor's best) when unknown.
#[derive(Default)]
struct Prios(HashMap<String, (f64, f64)>);

impl Prios {
    fn with(mut self, user: &str, prio: f64, in_use: f64) -> Prios {
        self.0.insert(user.into(), (prio, in_use));
        self
    }
}

impl Priorities for Prios {
    fn effective_priority(&self, submitter: &str) -> f64 {
        self.0.get(submitter).map_or(0.5, |p| p.0)
    }
    fn resources_in_use(&self, submitter: &str) -> f64 {
        self.0.get(submitter).map_or(0.0, |p| p.1)
    }
}

/// Limits by name, counted per match; a job names them in a literal
/// `ConcurrencyLimits` ("a,b:2").
struct Counted {
    max: HashMap<String, f64>,
    used: HashMap<String, f64>,
}

impl Counted {
    fn wants(job: &ClassAd) -> Vec<(String, f64)> {
        let Some(text) = job
            .eval_attr("ConcurrencyLimits", &classad::Env::at(NOW))
            .as_str()
            .map(str::to_string)
        else {
            return Vec::new();
        };
        text.split(',')
            .map(|l| {
                let l = l.trim().to_ascii_lowercase();
                match l.split_once(':') {
                    Some((n, u)) => (n.to_string(), u.parse().unwrap()),
                    None => (l, 1.0),
                }
            })
            .collect()
    }
}

impl Limits for Counted {
    fn fits(&self, job: &ClassAd, _machine: &ClassAd) -> bool {
        self.exceeded(job, _machine).is_empty()
    }
    fn take(&mut self, job: &ClassAd, _machine: &ClassAd) {
        for (n, u) in Counted::wants(job) {
            *self.used.entry(n).or_insert(0.0) += u;
        }
    }
    fn exceeded(&self, job: &ClassAd, _machine: &ClassAd) -> Vec<String> {
        Counted::wants(job)
            .into_iter()
            .filter(|(n, u)| {
                self.used.get(n).copied().unwrap_or(0.0) + u
                    > self.max.get(n).copied().unwrap_or(f64::MAX)
            })
            .map(|(n, _)| n)
            .collect()
    }
}

fn run(slots: &[ClassAd], subs: &[SubmitterJobs<'_>], prios: &Prios, pol: &Policy) -> Plan {
    negotiate(slots, subs, prios, &mut NoLimits, pol, NOW)
}

fn job(owner: &str, cluster: i64, proc_: i64, extra: &str) -> ClassAd {
    ad(&format!(
        "[Owner = \"{owner}\"; ClusterId = {cluster}; ProcId = {proc_}; QDate = {}; \
         RequestCpus = 1; RequestMemory = 1024; RequestDisk = 1024; \
         Requirements = TARGET.Memory >= RequestMemory && TARGET.Cpus >= RequestCpus; {extra}]",
        NOW - 100 + cluster
    ))
}

fn slot(name: &str, extra: &str) -> ClassAd {
    ad(&format!(
        "[Name = \"{name}\"; Machine = \"{name}\"; SlotID = 1; Cpus = 1; Memory = 4096; Disk = 100000; \
         Start = true; Requirements = START; Rank = 0.0; CurrentRank = 0.0; {extra}]"
    ))
}

fn subs<'a>(list: &[(&str, &'a [ClassAd])]) -> Vec<SubmitterJobs<'a>> {
    list.iter()
        .map(|(n, jobs)| SubmitterJobs::new(n.to_string(), jobs.iter().collect()))
        .collect()
}

/// The manual's `bass` (policy-configuration, "RANK"): the research
/// quartet outranks strangers, and Garrison ranks 10 on his own machine.
const BASS_RANK: &str = "Rank = (Owner == \"coltrane\") + (Owner == \"tyner\") \
    + ((Owner == \"garrison\") * 10) + (Owner == \"jones\")";

#[test]
fn bass_rank_story_stranger_then_jones_then_garrison() {
    let pol = policy("");
    let prios = Prios::default();
    // A stranger's job finds bass unclaimed.
    let stranger = [job("miles", 1, 0, "")];
    let bass = [slot("bass", BASS_RANK)];
    let plan = run(&bass, &subs(&[("miles@example", &stranger)]), &prios, &pol);
    assert_eq!(plan.matches.len(), 1);
    assert_eq!(plan.matches[0].kind, MatchKind::Plain);
    assert!(plan.matches[0].preempted.is_empty());

    // Elvin Jones' job: RANK 1 > CurrentRank 0, so it preempts the stranger.
    let bass = [slot(
        "bass",
        &format!("{BASS_RANK}; RemoteUser = \"miles@example\"; RemoteOwner = \"miles\"; CurrentRank = 0.0; State = \"Claimed\""),
    )];
    let jones = [job("jones", 2, 0, "")];
    let plan = run(&bass, &subs(&[("jones@example", &jones)]), &prios, &pol);
    assert_eq!(plan.matches.len(), 1, "{:?}", plan.unmatched);
    assert_eq!(plan.matches[0].kind, MatchKind::RankPreemption);
    assert_eq!(plan.matches[0].preempted[0].user, "miles@example");

    // Jimmy Garrison's job: RANK 10 > 1, so it preempts Jones; a stranger
    // (RANK 0) cannot, and PREEMPTION_REQUIREMENTS (False) stops priority.
    let bass = [slot(
        "bass",
        &format!(
            "{BASS_RANK}; RemoteUser = \"jones@example\"; CurrentRank = 1.0; State = \"Claimed\""
        ),
    )];
    let garrison = [job("garrison", 3, 0, "")];
    let stranger = [job("miles", 4, 0, "")];
    // The stranger has the better priority, so it is asked first.
    let prios =
        Prios::default()
            .with("jones@example", 50.0, 1.0)
            .with("garrison@example", 1.0, 0.0);
    let plan = run(
        &bass,
        &subs(&[
            ("miles@example", &stranger),
            ("garrison@example", &garrison),
        ]),
        &prios,
        &pol,
    );
    assert_eq!(plan.matches.len(), 1);
    assert_eq!(plan.matches[0].submitter, 1);
    assert_eq!(plan.matches[0].kind, MatchKind::RankPreemption);
    assert_eq!(plan.matches[0].preempted[0].user, "jones@example");
    let miles = plan.unmatched.iter().find(|u| u.submitter == 0).unwrap();
    assert_eq!(miles.metrics.preempt_requirements, 1, "{miles:?}");
    assert_eq!(miles.reason, Reason::PreemptionRequirements);
}

#[test]
fn submitters_go_in_priority_order_and_get_their_fair_share() {
    let pol = policy("");
    let slots: Vec<ClassAd> = (0..8).map(|i| slot(&format!("s{i}"), "")).collect();
    let a: Vec<ClassAd> = (0..10).map(|p| job("a", 1, p, "")).collect();
    let b: Vec<ClassAd> = (0..10).map(|p| job("b", 2, p, "")).collect();
    // b is listed first but a has the better (lower) priority: 1 against 3,
    // so a's share is 3/4 of the 8 slots.
    let prios = Prios::default().with("a", 1.0, 0.0).with("b", 3.0, 0.0);
    let plan = run(&slots, &subs(&[("b", &b), ("a", &a)]), &prios, &pol);
    let count = |s| plan.matches.iter().filter(|m| m.submitter == s).count();
    assert_eq!(count(1), 6);
    assert_eq!(count(0), 2);
    assert_eq!(
        plan.matches[0].submitter, 1,
        "the better priority goes first"
    );
    // Within a submitter: submission order.
    let procs: Vec<i64> = plan
        .matches
        .iter()
        .filter(|m| m.submitter == 1)
        .map(|m| m.proc)
        .collect();
    assert_eq!(procs, [0, 1, 2, 3, 4, 5]);
    let b_left = plan.unmatched.iter().find(|u| u.submitter == 0).unwrap();
    assert_eq!(b_left.idle, 8);
}

#[test]
fn usage_counts_against_the_share_and_unused_share_spins_to_others() {
    let pol = policy("");
    let slots: Vec<ClassAd> = (0..8).map(|i| slot(&format!("s{i}"), "")).collect();
    // a may have 4 of 8 but has only 1 job: the next spin gives b the rest.
    let a = [job("a", 1, 0, "")];
    let b: Vec<ClassAd> = (0..10).map(|p| job("b", 2, p, "")).collect();
    let prios = Prios::default().with("a", 1.0, 0.0).with("b", 1.0, 0.0);
    let plan = run(&slots, &subs(&[("a", &a), ("b", &b)]), &prios, &pol);
    assert_eq!(plan.matches.len(), 8);
    assert!(plan.stats.pie_spins >= 2);
}

#[test]
fn job_priority_orders_a_submitters_jobs() {
    let pol = policy("");
    let slots = [slot("s0", "")];
    let jobs = [
        job("a", 1, 0, "JobPrio = 0"),
        job("a", 1, 1, "JobPrio = 5"),
        job("a", 2, 0, "JobPrio = 5"),
    ];
    let plan = run(&slots, &subs(&[("a", &jobs)]), &Prios::default(), &pol);
    assert_eq!((plan.matches[0].cluster, plan.matches[0].proc), (1, 1));
}

fn hog_pool(user: &str) -> Vec<ClassAd> {
    (0..4)
        .map(|i| {
            slot(
                &format!("c{i}"),
                &format!(
                    "RemoteUser = \"{user}\"; State = \"Claimed\"; TotalJobRunTime = {}",
                    100 * i
                ),
            )
        })
        .collect()
}

#[test]
fn preemption_requirements_gate_priority_preemption() {
    let pol = policy("PREEMPTION_REQUIREMENTS = RemoteUserPrio > SubmitterUserPrio * 1.2\n");
    let jobs: Vec<ClassAd> = (0..2).map(|p| job("good", 1, p, "")).collect();
    let prios = Prios::default()
        .with("good", 5.0, 0.0)
        .with("hog", 100.0, 4.0)
        .with("meh", 5.8, 4.0);
    // hog's priority is far worse: preempted, lowest PREEMPTION_RANK last
    // (the longest-running job is the cheapest to lose... the default rank
    // prefers preempting the shortest run).
    let plan = run(&hog_pool("hog"), &subs(&[("good", &jobs)]), &prios, &pol);
    assert_eq!(plan.matches.len(), 2);
    assert!(plan
        .matches
        .iter()
        .all(|m| m.kind == MatchKind::PriorityPreemption));
    assert_eq!(
        plan.matches[0].slot_name, "c0",
        "PREEMPTION_RANK: least run time first"
    );
    assert_eq!(plan.matches[0].preempted[0].user, "hog");
    // meh is worse by more than PRIORITY_DELTA, but not 1.2 times worse.
    let plan = run(&hog_pool("meh"), &subs(&[("good", &jobs)]), &prios, &pol);
    assert!(plan.matches.is_empty());
    assert_eq!(plan.unmatched[0].reason, Reason::PreemptionRequirements);
    assert_eq!(plan.unmatched[0].metrics.preempt_requirements, 4);
    // The default (False) never preempts for priority.
    let plan = run(
        &hog_pool("hog"),
        &subs(&[("good", &jobs)]),
        &prios,
        &policy(""),
    );
    assert!(plan.matches.is_empty());
}

#[test]
fn insufficient_priority_is_reported() {
    let pol = policy("PREEMPTION_REQUIREMENTS = True\n");
    let jobs = [job("bad", 1, 0, "")];
    let prios = Prios::default()
        .with("bad", 10.0, 0.0)
        .with("hog", 10.2, 4.0);
    let plan = run(&hog_pool("hog"), &subs(&[("bad", &jobs)]), &prios, &pol);
    assert!(plan.matches.is_empty());
    assert_eq!(plan.unmatched[0].reason, Reason::InsufficientPriority);
}

#[test]
fn consider_preemption_false_turns_off_rank_and_priority_preemption() {
    let text = "PREEMPTION_REQUIREMENTS = True\nNEGOTIATOR_CONSIDER_PREEMPTION = false\n";
    let bass = [slot(
        "bass",
        &format!("{BASS_RANK}; RemoteUser = \"miles@example\"; CurrentRank = 0.0"),
    )];
    let jones = [job("jones", 2, 0, "")];
    let prios = Prios::default().with("miles@example", 500.0, 1.0);
    let plan = run(
        &bass,
        &subs(&[("jones@example", &jones)]),
        &prios,
        &policy(text),
    );
    assert!(plan.matches.is_empty());
    assert_eq!(plan.stats.slots_trimmed, 1);
    let plan = run(
        &bass,
        &subs(&[("jones@example", &jones)]),
        &prios,
        &policy("PREEMPTION_REQUIREMENTS = True\n"),
    );
    assert_eq!(plan.matches.len(), 1);
}

#[test]
fn retiring_claims_are_preempted_only_with_early_preemption() {
    let bass = [slot(
        "bass",
        &format!("{BASS_RANK}; RemoteUser = \"miles@example\"; CurrentRank = 0.0; RetirementTimeRemaining = 600"),
    )];
    let jones = [job("jones", 2, 0, "")];
    let prios = Prios::default();
    let plan = run(
        &bass,
        &subs(&[("jones@example", &jones)]),
        &prios,
        &policy(""),
    );
    assert!(plan.matches.is_empty());
    let plan = run(
        &bass,
        &subs(&[("jones@example", &jones)]),
        &prios,
        &policy("NEGOTIATOR_CONSIDER_EARLY_PREEMPTION = true\n"),
    );
    assert_eq!(plan.matches.len(), 1);
    assert_eq!(plan.matches[0].kind, MatchKind::RankPreemption);
}

fn pslot(extra: &str) -> ClassAd {
    ad(&format!(
        "[Name = \"slot1@big\"; Machine = \"big\"; SlotID = 1; PartitionableSlot = true; \
         SlotType = \"Partitionable\"; Cpus = 8; Memory = 8192; Disk = 800000; \
         Start = true; Requirements = START; Rank = 0.0; CurrentRank = 0.0; {extra}]"
    ))
}

#[test]
fn a_partitionable_slot_takes_several_jobs_in_one_cycle() {
    let slots = [pslot("")];
    let jobs: Vec<ClassAd> = (0..10).map(|p| job("a", 1, p, "")).collect();
    let plan = run(
        &slots,
        &subs(&[("a", &jobs)]),
        &Prios::default(),
        &policy(""),
    );
    // Memory 8192 / 1024: eight jobs, one core each.
    assert_eq!(plan.matches.len(), 8);
    assert!(plan
        .matches
        .iter()
        .all(|m| m.slot == 0 && m.kind == MatchKind::Plain));
    assert!(
        plan.matches.iter().all(|m| m.cost == 1.0),
        "SLOT_WEIGHT = Cpus"
    );
    assert_eq!(plan.unmatched[0].idle, 2);
}

#[test]
fn a_consumption_policy_decides_what_a_match_takes() {
    // As the manual's example: cores by request, memory quantized to 128,
    // weight by Cpus.
    let slots = [pslot(
        "MachineResources = \"Cpus Memory Disk Swap\"; \
         ConsumptionCpus = TARGET.RequestCpus; \
         ConsumptionMemory = quantize(target.RequestMemory, {128}); \
         ConsumptionDisk = quantize(target.RequestDisk, {1024}); SlotWeight = Cpus",
    )];
    let jobs: Vec<ClassAd> = (0..4)
        .map(|p| job("a", 1, p, "RequestCpus = 3; RequestMemory = 1000"))
        .collect();
    let plan = run(
        &slots,
        &subs(&[("a", &jobs)]),
        &Prios::default(),
        &policy(""),
    );
    assert_eq!(plan.matches.len(), 2, "8 cores hold two 3-core jobs");
    let mem = plan.matches[0]
        .takes
        .iter()
        .find(|t| t.resource == "Memory")
        .unwrap();
    assert_eq!(mem.amount, 1024.0);
    assert_eq!(plan.matches[0].cost, 3.0);
}

fn dslot(name: &str, user: &str, cpus: i64, rank: f64, extra: &str) -> ClassAd {
    ad(&format!(
        "[Name = \"{name}@big\"; Machine = \"big\"; SlotID = 1; DynamicSlot = true; \
         ParentSlotName = \"slot1@big\"; Cpus = {cpus}; Memory = 1024; Disk = 1000; \
         RemoteUser = \"{user}\"; RemoteOwner = \"{user}\"; State = \"Claimed\"; \
         CurrentRank = {rank}; Start = true; Requirements = START; Rank = 0.0; {extra}]"
    ))
}

#[test]
fn pslot_preemption_takes_dynamic_slots_lowest_current_rank_first() {
    let pol = policy("ALLOW_PSLOT_PREEMPTION = true\n");
    let slots = [
        pslot("Cpus = 0; Memory = 4096; Rank = (Owner == \"vip\") * 10"),
        dslot("slot1_1", "x", 1, 0.0, ""),
        dslot("slot1_2", "x", 4, 5.0, ""),
        dslot("slot1_3", "x", 8, 20.0, ""),
        dslot("slot1_4", "y", 8, 0.0, "RetirementTimeRemaining = 300"),
    ];
    let vip = [job("vip", 1, 0, "RequestCpus = 4")];
    let plan = run(&slots, &subs(&[("vip", &vip)]), &Prios::default(), &pol);
    assert_eq!(plan.matches.len(), 1, "{:?}", plan.unmatched);
    let m = &plan.matches[0];
    assert_eq!(m.slot, 0);
    assert_eq!(m.kind, MatchKind::RankPreemption);
    let names: Vec<&str> = m.preempted.iter().map(|p| p.slot_name.as_str()).collect();
    assert_eq!(names, ["slot1_1@big", "slot1_2@big"]);
    // Without it, the dynamic slots are preempted one by one (RANK 10 > 0),
    // and the 4-core job fits none but the 8-core one at CurrentRank 20.
    let plan = run(
        &slots,
        &subs(&[("vip", &vip)]),
        &Prios::default(),
        &policy(""),
    );
    assert!(plan.matches.iter().all(|m| m.slot != 0));
}

#[test]
fn concurrency_limits_are_never_exceeded() {
    let slots: Vec<ClassAd> = (0..10).map(|i| slot(&format!("s{i}"), "")).collect();
    let a: Vec<ClassAd> = (0..10)
        .map(|p| job("a", 1, p, "ConcurrencyLimits = \"lic\""))
        .collect();
    let b: Vec<ClassAd> = (0..10)
        .map(|p| job("b", 2, p, "ConcurrencyLimits = \"lic:2\""))
        .collect();
    let mut limits = Counted {
        max: [("lic".to_string(), 5.0)].into_iter().collect(),
        used: HashMap::new(),
    };
    let plan = negotiate(
        &slots,
        &subs(&[("a", &a), ("b", &b)]),
        &Prios::default().with("a", 1.0, 0.0).with("b", 1.0, 0.0),
        &mut limits,
        &policy(""),
        NOW,
    );
    let used: f64 = plan
        .matches
        .iter()
        .map(|m| if m.submitter == 0 { 1.0 } else { 2.0 })
        .sum();
    assert!(used <= 5.0, "{used}");
    assert_eq!(limits.used["lic"], used);
    assert!(plan
        .unmatched
        .iter()
        .all(|u| u.reason == Reason::ConcurrencyLimit(vec!["lic".into()])));
}

#[test]
fn identical_jobs_form_one_autocluster_and_one_match_list() {
    let slots: Vec<ClassAd> = (0..50).map(|i| slot(&format!("s{i}"), "")).collect();
    let jobs: Vec<ClassAd> = (0..1000)
        .map(|p| job("a", 1 + p / 100, p % 100, ""))
        .collect();
    let plan = run(
        &slots,
        &subs(&[("a", &jobs)]),
        &Prios::default(),
        &policy(""),
    );
    assert_eq!(plan.stats.autoclusters, 1);
    assert_eq!(plan.stats.match_lists_built, 1);
    assert_eq!(
        plan.stats.slot_classes, 1,
        "slots alike but for their names"
    );
    assert_eq!(plan.matches.len(), 50);
    assert_eq!(plan.autoclusters[0].jobs.len(), 1000);
    // A significant difference makes another autocluster; an insignificant
    // one (Cmd) does not.
    let mut jobs2 = jobs.clone();
    jobs2.push(job("a", 99, 0, "RequestMemory = 2048"));
    jobs2.push(job("a", 99, 1, "Cmd = \"/bin/other\""));
    let plan = run(
        &slots,
        &subs(&[("a", &jobs2)]),
        &Prios::default(),
        &policy(""),
    );
    assert_eq!(plan.stats.autoclusters, 2);
}

/// A schedd's kept autoclusters (HTCondor's AutoClusterId per job) as the
/// cycle gets them: ids from [`AutoclusterIds`] over `told`.
fn kept(told: &[String], jobs: &[Arc<ClassAd>]) -> (Arc<KeptIds>, usize) {
    let mut ids = AutoclusterIds::new();
    ids.set_significant(told);
    let listed: Vec<(usize, Arc<ClassAd>)> = jobs.iter().cloned().enumerate().collect();
    let got = ids.ids(&[&listed]);
    let kept = KeptIds {
        ids: got[0].iter().map(|&i| i as u64).collect(),
        names: ids.names().iter().map(|n| n.to_ascii_lowercase()).collect(),
    };
    (Arc::new(kept), ids.len())
}

#[test]
fn kept_autoclusters_give_the_cycle_s_own_plan_keying_one_job_each() {
    // Slots that read the job's Department, so the significant names are
    // the pool's, not only the jobs'.
    let slots: Vec<ClassAd> = (0..30)
        .map(|i| {
            let start = if i % 2 == 0 {
                "TARGET.Department == \"physics\""
            } else {
                "true"
            };
            slot(
                &format!("s{i}"),
                &format!("Start = {start}; Memory = {}", 1024 * (1 + i % 3)),
            )
        })
        .collect();
    let jobs: Vec<Arc<ClassAd>> = (0..200)
        .map(|p| {
            let extra = format!(
                "RequestMemory = {}; Department = \"{}\"; Cmd = \"/bin/x{p}\"",
                1024 * (1 + p % 2),
                ["physics", "chemistry"][(p / 2 % 2) as usize]
            );
            Arc::new(job("a", 1 + p / 50, p % 50, &extra))
        })
        .collect();
    let plain: Vec<&ClassAd> = jobs.iter().map(|j| &**j).collect();
    let pol = policy("");
    let alone = run(
        &slots,
        &[SubmitterJobs::new("a", plain.clone())],
        &Prios::default(),
        &pol,
    );
    assert_eq!(alone.stats.jobs_keyed, 200);
    assert_eq!(alone.stats.autoclusters, 4);
    assert!(alone
        .significant
        .iter()
        .any(|n| n.eq_ignore_ascii_case("Department")));
    // The schedd told what the cycle read: one job keyed per autocluster,
    // and the same plan.
    let (ids, filed) = kept(&alone.significant, &jobs);
    assert_eq!(filed, 4);
    let mut with_ids = SubmitterJobs::new("a", plain.clone());
    with_ids.kept = Some(ids);
    let plan = run(&slots, &[with_ids], &Prios::default(), &pol);
    assert_eq!(plan.stats.jobs_keyed, 4);
    assert_same_plan(&plan, &alone);
    // Ids filed without Department (the schedd was told before the slots
    // read it) would lump physics and chemistry together: the cycle keys
    // every job itself, and the plan is still its own.
    let (ids, filed) = kept(&["Requirements".into(), "RequestMemory".into()], &jobs);
    assert_eq!(filed, 2);
    let mut stale = SubmitterJobs::new("a", plain);
    stale.kept = Some(ids);
    let plan = run(&slots, &[stale], &Prios::default(), &pol);
    // The two first jobs of the kept ids, then every job.
    assert_eq!(plan.stats.jobs_keyed, 2 + 200);
    assert_same_plan(&plan, &alone);
}

/// The same matches, autoclusters and reasons.
fn assert_same_plan(a: &Plan, b: &Plan) {
    assert_eq!(format!("{:?}", a.matches), format!("{:?}", b.matches));
    assert_eq!(
        format!("{:?}", a.autoclusters),
        format!("{:?}", b.autoclusters)
    );
    assert_eq!(format!("{:?}", a.unmatched), format!("{:?}", b.unmatched));
}

#[test]
fn the_cycle_is_deterministic() {
    let slots: Vec<ClassAd> = (0..20)
        .map(|i| {
            slot(
                &format!("s{i}"),
                &format!("Memory = {}", 1024 * (1 + i % 3)),
            )
        })
        .collect();
    let a: Vec<ClassAd> = (0..30)
        .map(|p| {
            job(
                "a",
                1,
                p,
                &format!("RequestMemory = {}", 1024 * (1 + p % 3)),
            )
        })
        .collect();
    let b: Vec<ClassAd> = (0..30).map(|p| job("b", 2, p, "Rank = Memory")).collect();
    let prios = Prios::default().with("a", 2.0, 0.0).with("b", 1.0, 0.0);
    let one = run(&slots, &subs(&[("a", &a), ("b", &b)]), &prios, &policy(""));
    let two = run(&slots, &subs(&[("a", &a), ("b", &b)]), &prios, &policy(""));
    assert_eq!(one.matches, two.matches);
    assert_eq!(one.unmatched, two.unmatched);
    // No slot is matched twice.
    let mut seen: Vec<usize> = one.matches.iter().map(|m| m.slot).collect();
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), one.matches.len());
    // NEGOTIATOR_PRE_JOB_RANK comes before the job's Rank: by default it
    // prefers the smallest slot, whatever b's Rank = Memory says...
    let memory = |plan: &Plan| {
        let first_b = plan.matches.iter().find(|m| m.submitter == 1).unwrap();
        slots[first_b.slot]
            .eval_attr("Memory", &classad::Env::at(NOW))
            .as_int()
    };
    assert_eq!(memory(&one), Some(1024));
    // ...and without it, the job's Rank picks the biggest.
    let plan = run(
        &slots,
        &subs(&[("a", &a), ("b", &b)]),
        &prios,
        &policy("NEGOTIATOR_PRE_JOB_RANK =\n"),
    );
    assert_eq!(memory(&plan), Some(3072));
}
