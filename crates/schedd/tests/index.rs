//! The queue's counters and index against a scan of the queue: after
//! random sequences of submissions, holds, releases, removals, runs to
//! completion, departures and edits, every counter equals what counting
//! the ads gives, and every constraint selects through the index exactly
//! the jobs a scan selects.

use std::collections::BTreeMap;

use classad::{ClassAd, Env, Value};
use schedd::claims::submitter_of;
use schedd::queue::status_of;
use schedd::userlog::ExitHow;
use schedd::{
    EditRules, EditTarget, JobEvent, JobId, JobQueue, JobStatus, RunReport, StatusCounts,
    SubmitPolicy, SuperUsers, SystemPolicy, UserAction,
};

const T0: i64 = 1_700_000_000;
const OWNERS: [&str; 3] = ["alice", "bob", "Alice"];

/// xorshift64*: the same sequence for a seed, on every machine.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Every edit allowed, so that an edit can make a job's `Owner`,
/// `ClusterId` or accounting group anything.
fn anything_goes() -> EditRules {
    EditRules {
        immutable: Vec::new(),
        protected: Vec::new(),
        secure: Vec::new(),
        ignore_secure: true,
    }
}

fn submit(q: &mut JobQueue, rng: &mut Rng) {
    let owner = OWNERS[rng.below(OWNERS.len())];
    let cluster = q.new_cluster();
    let procs = 1 + rng.below(4);
    let held = rng.below(4) == 0;
    let group = rng.below(3) == 0;
    let ads = (0..procs)
        .map(|p| {
            let mut text = format!(
                "[ClusterId = {cluster}; ProcId = {p}; User = \"{owner}@pool\"; Cmd = \"/bin/true\"; \
                 JobPrio = {}]",
                p % 3
            );
            if held {
                text.insert_str(1, "JobStatus = 5; ");
            }
            if group {
                text.insert_str(1, "AccountingGroup = \"group_physics\"; ");
            }
            ClassAd::parse(&text).unwrap()
        })
        .collect();
    q.submit(
        ads,
        owner,
        &SubmitPolicy::none(),
        &ClassAd::new(),
        "<10.0.0.1:9618>",
        T0,
    )
    .unwrap();
}

fn any_job(q: &JobQueue, rng: &mut Rng) -> Option<JobId> {
    let ids: Vec<JobId> = q.jobs().map(|(id, _)| id).collect();
    (!ids.is_empty()).then(|| ids[rng.below(ids.len())])
}

/// One random thing happening to the queue (refused ones change nothing).
fn step(q: &mut JobQueue, rng: &mut Rng, now: i64) {
    let su = SuperUsers::default();
    let system = SystemPolicy::none();
    let Some(id) = any_job(q, rng) else {
        return submit(q, rng);
    };
    let owner = schedd::authz::owner_of(q.job(id).unwrap()).unwrap_or_default();
    let _ = match rng.below(11) {
        0 | 1 => {
            submit(q, rng);
            Ok(())
        }
        2 => q
            .user_action(
                &owner,
                &su,
                id,
                UserAction::Hold {
                    reason: None,
                    subcode: 0,
                },
                now,
            )
            .map(drop),
        3 => q
            .user_action(&owner, &su, id, UserAction::Release { reason: None }, now)
            .map(drop),
        4 => q
            .user_action(&owner, &su, id, UserAction::Remove { reason: None }, now)
            .map(drop),
        5 => q
            .apply(
                id,
                JobEvent::Started {
                    host: "<10.0.0.2:9618>".into(),
                    slot: "slot1@exec".into(),
                    claim: None,
                },
                now,
                &system,
            )
            .map(drop),
        6 => q
            .apply(
                id,
                JobEvent::Exited {
                    how: ExitHow::Code(0),
                    report: RunReport::default(),
                },
                now,
                &system,
            )
            .map(drop),
        7 => {
            if matches!(
                q.status(id),
                Some(JobStatus::Completed | JobStatus::Removed)
            ) {
                q.forget(id);
            }
            Ok(())
        }
        8 => q
            .apply(id, JobEvent::Suspended { num_pids: 1 }, now, &system)
            .map(drop),
        // Edits that move a job between the index's groups, or make it
        // one the index cannot vouch for.
        _ => {
            let (name, value) = match rng.below(6) {
                0 => ("AccountingGroup", "\"group_chemistry\""),
                1 => ("Owner", "\"bob\""),
                2 => ("Owner", "strcat(\"al\", \"ice\")"),
                3 => ("ClusterId", "7"),
                4 => ("User", "\"carol@pool\""),
                _ => ("JobPrio", "10"),
            };
            let target = EditTarget::Jobs(vec![id]);
            q.edit(&target, name, value, "root", true, &anything_goes(), now)
                .map(drop)
                .map_err(|_| schedd::QueueError::NoSuchJob(id))
        }
    };
}

fn scan_counts(q: &JobQueue, keep: impl Fn(&ClassAd) -> bool) -> StatusCounts {
    let mut c = StatusCounts::default();
    for (_, ad) in q.jobs().filter(|(_, ad)| keep(ad)) {
        c.count(status_of(ad));
    }
    c
}

fn owner_literal(ad: &ClassAd) -> Option<String> {
    match ad.get("Owner")? {
        classad::Expr::Lit(Value::Str(s)) => Some(s.to_string()),
        _ => None,
    }
}

fn check_counters(q: &JobQueue, seed: u64) {
    assert_eq!(q.counts(), scan_counts(q, |_| true), "seed {seed}: total");
    for owner in OWNERS.iter().chain(&["carol", "alice@pool", ""]) {
        assert_eq!(
            q.owner_counts(owner),
            scan_counts(q, |ad| owner_literal(ad).as_deref() == Some(*owner)),
            "seed {seed}: owner {owner}"
        );
    }
    let mut by_submitter: BTreeMap<String, StatusCounts> = BTreeMap::new();
    for (_, ad) in q.jobs() {
        by_submitter
            .entry(submitter_of(ad))
            .or_default()
            .count(status_of(ad));
    }
    assert_eq!(
        q.submitter_counts(),
        by_submitter,
        "seed {seed}: submitters"
    );
    // Each cluster's counts (by job id, whatever an edit made of its
    // ClusterId), as late materialization reads them.
    let mut by_cluster: BTreeMap<i64, StatusCounts> = BTreeMap::new();
    for (id, ad) in q.jobs() {
        by_cluster
            .entry(id.cluster)
            .or_default()
            .count(status_of(ad));
    }
    for c in 0..=q.next_cluster() {
        assert_eq!(
            q.cluster_counts(c),
            by_cluster.get(&c).copied().unwrap_or_default(),
            "seed {seed}: cluster {c}"
        );
    }
}

/// Constraints with and without indexed conjuncts, in every form the
/// index reads and some it must not.
const CONSTRAINTS: &[&str] = &[
    "true",
    "false",
    "ClusterId == 2",
    "2 == ClusterId",
    "ClusterId =?= 3",
    "ClusterId == 7",
    "ClusterId == 2.0",
    "ClusterId == 2 && ClusterId == 3",
    "(ClusterId == 2 && ProcId == 1)",
    "ClusterId == 2 || ClusterId == 3",
    "!(ClusterId == 2)",
    "ClusterId != 2",
    "Owner == \"alice\"",
    "owner == \"ALICE\"",
    "Owner =?= \"Alice\"",
    "\"bob\" == Owner",
    "Owner == \"nobody\"",
    "Owner == \"alice\" && JobStatus == 1",
    "(Owner == \"alice\") && (JobStatus == 5)",
    "JobStatus == 1",
    "1 == JobStatus",
    "JobStatus =?= 5",
    "JobStatus == 4",
    "JobStatus == 9",
    "JobStatus == 2 && JobStatus == 5",
    "JobStatus == 1 && ProcId > 0",
    "JobStatus == 1 && ClusterId == 4",
    "ClusterId == 4 && Owner == \"bob\" && JobStatus == 5",
    "true && Owner == \"alice\"",
    "Owner == \"alice\" && undefined",
    "Owner == \"alice\" && 1",
    "MY.Owner == \"alice\"",
    "AccountingGroup == \"group_physics\" && JobStatus == 1",
    "JobPrio == 10 && Owner =?= \"alice\"",
];

fn check_queries(q: &JobQueue, seed: u64) {
    let env = Env::at(T0);
    let selects = |ad: &ClassAd, c: &classad::Expr| {
        matches!(ad.eval(c, &env), Value::Bool(true))
            || matches!(ad.eval(c, &env), Value::Int(i) if i != 0)
    };
    for text in CONSTRAINTS {
        let c = classad::parse_expr(text).unwrap();
        let scanned: Vec<JobId> = q
            .jobs()
            .filter(|(_, ad)| selects(ad, &c))
            .map(|(id, _)| id)
            .collect();
        let indexed: Vec<JobId> = q
            .snapshot_matching(&c)
            .into_iter()
            .filter(|(_, ad)| selects(ad, &c))
            .map(|(id, _)| id)
            .collect();
        assert_eq!(indexed, scanned, "seed {seed}: {text}");
        if let Some(counted) = q.count_matching(&c) {
            let mut want = StatusCounts::default();
            for id in &scanned {
                want.count(q.status(*id));
            }
            assert_eq!(counted, want, "seed {seed}: counts of {text}");
        }
    }
}

#[test]
fn counters_and_index_equal_a_scan_after_random_changes() {
    for seed in 1..=60u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        let mut q = JobQueue::new();
        for i in 0..150 {
            step(&mut q, &mut rng, T0 + i);
            if i % 10 == 0 {
                check_counters(&q, seed);
            }
        }
        check_counters(&q, seed);
        check_queries(&q, seed);
        // A queue restored from its ads (a restart) and a clone know the
        // same.
        let again = JobQueue::restore(
            q.jobs().map(|(_, ad)| ad.clone()).collect(),
            q.next_cluster(),
        );
        check_counters(&again, seed);
        check_queries(&again, seed);
        check_counters(&q.clone(), seed);
    }
}

#[test]
fn the_summary_of_owner_and_status_is_counted_without_evaluating() {
    let mut rng = Rng(7);
    let mut q = JobQueue::new();
    for _ in 0..5 {
        submit(&mut q, &mut rng);
    }
    for text in [
        "true",
        "Owner == \"alice\"",
        "JobStatus == 5 && Owner =?= \"bob\"",
    ] {
        let c = classad::parse_expr(text).unwrap();
        assert!(q.count_matching(&c).is_some(), "{text}");
    }
    // A cluster, another attribute or an unknown status needs the ads.
    for text in [
        "ClusterId == 1",
        "ProcId == 0",
        "JobStatus == 9",
        "Owner == \"alice\" || true",
    ] {
        let c = classad::parse_expr(text).unwrap();
        assert!(q.count_matching(&c).is_none(), "{text}");
    }
    // One job the index cannot vouch for: every count is evaluated.
    let id = JobId::new(1, 0);
    q.edit(
        &EditTarget::Jobs(vec![id]),
        "Owner",
        "strcat(\"b\", \"ob\")",
        "root",
        true,
        &anything_goes(),
        T0,
    )
    .unwrap();
    assert!(q
        .count_matching(&classad::parse_expr("true").unwrap())
        .is_none());
}

#[test]
fn a_cluster_query_looks_at_that_cluster_only() {
    let mut rng = Rng(11);
    let mut q = JobQueue::new();
    for _ in 0..20 {
        submit(&mut q, &mut rng);
    }
    let c = classad::parse_expr("ClusterId == 5 && ProcId >= 0").unwrap();
    let got = q.snapshot_matching(&c);
    assert!(!got.is_empty());
    assert!(got.iter().all(|(id, _)| id.cluster == 5));
    // Nothing indexed: every job.
    let all = q.snapshot_matching(&classad::parse_expr("ProcId >= 0").unwrap());
    assert_eq!(all.len(), q.len());
}
