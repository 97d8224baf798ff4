//! One negotiation cycle at the scale of a large access point: 1,000,000
//! idle jobs in 10,000 autoclusters (100 submitters, each with 100
//! clusters of 100 procs chained to their cluster ad, as the schedd holds
//! them: what the jobs ask for is in the cluster ad, a proc has its ProcId
//! and arguments) against 200,000 slots (25,000 eight-slot machines of
//! 20 types, half of them claimed). Target: under 5 s on one core.
//!
//! The pool's path is measured: [`negotiation_cycle`] with the offer cap
//! the negotiator computes from the slots and an accountant with the
//! submitters' usage. The first cycle finds every job's autocluster
//! itself; from the second on the schedd offers the autoclusters it keeps
//! ([`AutoclusterIds`], over the names the cycle before found significant)
//! and the cycle keys one job per autocluster, as in the pool. The
//! schedd's filing is timed apart (in the pool it is the schedd's work,
//! and only for jobs new or changed since the last cycle).
//!
//! Run with `nice -n 10 cargo bench -p negotiator --bench big_cycle`.

use std::sync::Arc;
use std::time::Instant;

use classad::ClassAd;
use negotiator::accountant::Accountant;
use negotiator::autocluster_ids::AutoclusterIds;
use negotiator::cycle::{Policy, SubmitterJobs};
use negotiator::limits::ConcurrencyLimits;
use negotiator::matchmaker::{negotiation_cycle, Offer};

mod pool;

use pool::NOW;
const MACHINES: usize = 25_000;
const SUBMITTERS: usize = 100;
const JOBS_PER_SUBMITTER: usize = 10_000;
const PROCS_PER_CLUSTER: usize = 100;

/// Each submitter's jobs: 100 clusters of 100 procs, a kind of job each
/// (its memory request and architecture), 10,000 autoclusters in all.
/// A submitter's jobs as its schedd's queue shares them, by a job number
/// (unique in the schedd, as a job id).
type Jobs = Vec<(usize, Arc<ClassAd>)>;

fn jobs() -> Vec<(String, Jobs)> {
    let mut subs = Vec::new();
    for u in 0..SUBMITTERS {
        let mut jobs = Vec::with_capacity(JOBS_PER_SUBMITTER);
        let clusters = JOBS_PER_SUBMITTER / PROCS_PER_CLUSTER;
        for c in 0..clusters {
            let cluster_id = 1000 + u * clusters + c;
            let cluster = Arc::new(
                ClassAd::parse(&format!(
                    "[Owner = \"user{u}\"; ClusterId = {cluster_id}; QDate = {}; JobPrio = 0; \
                      JobUniverse = 5; Cmd = \"/home/user{u}/run.sh\"; \
                      RequestCpus = 1; RequestMemory = {}; RequestDisk = {}; \
                      Requirements = (TARGET.Arch == \"{}\") && (TARGET.OpSys == \"LINUX\") && \
                        (TARGET.Memory >= RequestMemory) && (TARGET.Disk >= RequestDisk) && (TARGET.Cpus >= RequestCpus); \
                      Rank = TARGET.KFlops / 1000]",
                    NOW - 10_000 + c as i64,
                    128 * (1 + c),
                    1000 + u,
                    if (u + c) % 5 == 0 { "aarch64" } else { "X86_64" },
                ))
                .unwrap(),
            );
            for p in 0..PROCS_PER_CLUSTER {
                let mut ad = ClassAd::parse(&format!("[ProcId = {p}; Args = \"{p}\"]")).unwrap();
                ad.chain_to(cluster.clone());
                jobs.push((u * JOBS_PER_SUBMITTER + jobs.len(), Arc::new(ad)));
            }
        }
        subs.push((format!("user{u}@pool"), jobs));
    }
    subs
}

fn main() {
    let t = Instant::now();
    let slots = pool::slots(MACHINES, 20, SUBMITTERS);
    let jobs = jobs();
    eprintln!(
        "made {} slots and {} jobs in {:.1} s",
        slots.len(),
        jobs.iter().map(|(_, j)| j.len()).sum::<usize>(),
        t.elapsed().as_secs_f64()
    );
    let empty = config::Config::empty("NEGOTIATOR");
    let policy = Policy::from_config(&empty).unwrap();
    let mut accountant = Accountant::from_config(&empty).unwrap();
    let mut limits = ConcurrencyLimits::from_config(&empty).unwrap();
    let rounds = std::env::args()
        .skip(1)
        .find_map(|a| a.parse::<usize>().ok())
        .unwrap_or(4)
        .max(2);
    let mut times = Vec::new();
    let mut kept = AutoclusterIds::new();
    let mut significant: Vec<String> = Vec::new();
    for round in 0..rounds {
        // The schedd's side: its jobs' autoclusters, once it was told
        // what is significant.
        let t = Instant::now();
        if !significant.is_empty() {
            kept.set_significant(&significant);
        }
        let lists: Vec<&[(usize, Arc<ClassAd>)]> = jobs.iter().map(|(_, j)| j.as_slice()).collect();
        let ids = kept.is_told().then(|| kept.ids(&lists));
        let names = kept.names();
        let filing = t.elapsed().as_secs_f64();
        let subs: Vec<SubmitterJobs<'_>> = jobs
            .iter()
            .enumerate()
            .map(|(n, (who, j))| {
                let mut offer = Offer::default();
                let filed = ids
                    .as_ref()
                    .map(|ids| (ids[n].as_slice(), names.as_slice()));
                offer.add(0, j.iter().map(|(k, ad)| (*k, &**ad)), filed);
                let r = offer.request(who);
                SubmitterJobs {
                    name: r.submitter,
                    jobs: r.jobs.into_iter().map(|(_, ad)| ad).collect(),
                    kept: r.kept,
                }
            })
            .collect();
        let t = Instant::now();
        let plan = negotiation_cycle(&slots, &subs, &mut accountant, &mut limits, &policy, NOW);
        let secs = t.elapsed().as_secs_f64();
        significant = plan.significant.clone();
        eprintln!(
            "cycle {round}: {secs:.2} s (schedd filing {filing:.2} s, {} jobs keyed by the cycle); matches {}, autoclusters {}, slot classes {}, match lists {}, unmatched autoclusters {}",
            plan.stats.jobs_keyed,
            plan.matches.len(),
            plan.stats.autoclusters,
            plan.stats.slot_classes,
            plan.stats.match_lists_built,
            plan.unmatched.len()
        );
        if round > 0 {
            times.push(secs);
        }
    }
    times.sort_by(f64::total_cmp);
    println!(
        "negotiation cycle, 1,000,000 idle jobs / 10,000 autoclusters / 200,000 slots: median {:.2} s over {} cycles after the first (target 5 s)",
        times[times.len() / 2],
        times.len()
    );
}
