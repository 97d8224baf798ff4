//! One negotiation cycle at pool scale: 100,000 idle jobs of 1,000 distinct
//! kinds (20 submitters) against 20,000 slots (2,500 eight-slot machines of
//! 10 types), half of them claimed. Target: under one second on one core.
//!
//! Run with `nice -n 10 cargo bench -p negotiator --bench cycle`.

use std::collections::HashMap;

use classad::ClassAd;
use criterion::{criterion_group, criterion_main, Criterion};
use negotiator::cycle::{negotiate, NoLimits, Policy, Priorities, SubmitterJobs};

mod pool;

use pool::NOW;

struct Prios(HashMap<String, f64>);

impl Priorities for Prios {
    fn effective_priority(&self, submitter: &str) -> f64 {
        self.0.get(submitter).copied().unwrap_or(0.5)
    }
    fn resources_in_use(&self, submitter: &str) -> f64 {
        // Each user's claims: the claimed half of the pool, spread evenly.
        if self.0.contains_key(submitter) {
            500.0
        } else {
            0.0
        }
    }
}

fn jobs() -> Vec<(String, Vec<ClassAd>)> {
    let mut subs = Vec::new();
    for u in 0..20 {
        let mut jobs = Vec::with_capacity(5_000);
        for j in 0..5_000 {
            // 50 kinds per submitter, 1,000 in all.
            let kind = u * 50 + j % 50;
            let arch = if kind % 5 == 0 { "aarch64" } else { "X86_64" };
            let text = format!(
                "[Owner = \"user{u}\"; ClusterId = {}; ProcId = {}; QDate = {}; JobPrio = 0; \
                  JobUniverse = 5; Cmd = \"/home/user{u}/run.sh\"; Args = \"{j}\"; \
                  RequestCpus = 1; RequestMemory = {}; RequestDisk = {}; \
                  Requirements = (TARGET.Arch == \"{arch}\") && (TARGET.OpSys == \"LINUX\") && \
                    (TARGET.Memory >= RequestMemory) && (TARGET.Disk >= RequestDisk) && (TARGET.Cpus >= RequestCpus); \
                  Rank = TARGET.KFlops / 1000]",
                1000 + u * 100 + j / 50,
                j % 50,
                NOW - 10_000 + j as i64,
                512 * (1 + kind % 8),
                1000 + kind,
            );
            jobs.push(ClassAd::parse(&text).unwrap());
        }
        subs.push((format!("user{u}@pool"), jobs));
    }
    subs
}

fn bench(c: &mut Criterion) {
    let slots = pool::slots(2_500, 10, 20);
    let jobs = jobs();
    let subs: Vec<SubmitterJobs<'_>> = jobs
        .iter()
        .map(|(n, j)| SubmitterJobs::new(n.clone(), j.iter().collect()))
        .collect();
    let prios = Prios(
        (0..20)
            .map(|u| (format!("user{u}@pool"), 1.0 + u as f64))
            .collect(),
    );
    let policy = Policy::from_config(&config::Config::empty("NEGOTIATOR")).unwrap();
    let plan = negotiate(&slots, &subs, &prios, &mut NoLimits, &policy, NOW);
    eprintln!(
        "matches {}, autoclusters {}, slot classes {}, match lists {}, spins {}, unmatched autoclusters {}",
        plan.matches.len(),
        plan.stats.autoclusters,
        plan.stats.slot_classes,
        plan.stats.match_lists_built,
        plan.stats.pie_spins,
        plan.unmatched.len()
    );
    let mut group = c.benchmark_group("negotiation_cycle");
    group.sample_size(10);
    group.bench_function("100k_jobs_1k_kinds_20k_slots_half_claimed", |b| {
        b.iter(|| negotiate(&slots, &subs, &prios, &mut NoLimits, &policy, NOW))
    });
    // The same snapshot with priority preemption on (HTCondor's usual
    // PREEMPTION_REQUIREMENTS), so every claimed slot is a candidate to judge.
    let preempting = config::load(
        &config::LoadOptions::new("NEGOTIATOR", config::Root::File("condor_config".into())),
        &config::MemFiles::new().with(
            "condor_config",
            "PREEMPTION_REQUIREMENTS = RemoteUserPrio > SubmitterUserPrio * 1.2\n",
        ),
        &config::FixedHost::empty(),
    )
    .unwrap();
    let policy = Policy::from_config(&preempting).unwrap();
    let plan = negotiate(&slots, &subs, &prios, &mut NoLimits, &policy, NOW);
    eprintln!(
        "with PREEMPTION_REQUIREMENTS: matches {} ({} preempting), slot classes {}",
        plan.matches.len(),
        plan.matches
            .iter()
            .filter(|m| !m.preempted.is_empty())
            .count(),
        plan.stats.slot_classes,
    );
    group.bench_function("same_with_priority_preemption", |b| {
        b.iter(|| negotiate(&slots, &subs, &prios, &mut NoLimits, &policy, NOW))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
