//! The dedicated scheduler's side of a parallel-universe job against real
//! startd engines: one request per node offered to the negotiator, the
//! claims held until every node has one, all nodes activated together
//! with their own `$(Node)`, node 0's exit ending the job and stopping
//! the others (or, under WAIT_FOR_ALL, the last node's), one node lost
//! ending it on every node, a ParallelSchedulingGroup kept, an
//! allocation that cannot complete giving its claims back. The test
//! carries the messages as a daemon does and plays the starters.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use classad::{ClassAd, Env};
use common::{job_ads, T0};
use config::{FixedHost, LoadOptions, MemFiles, Root};
use negotiator::limits::ConcurrencyLimits;
use schedd::claims::{Claims, MatchInfo, Ready, RunEnd, StarterReport, Stop};
use schedd::{
    ExitHow, JobEvent, JobId, JobQueue, JobStatus, RunReport, SubmitPolicy, SystemPolicy,
};
use startd::resources::HostReadings;
use startd::{Action, Readings, Startd};

/// An execute point dedicated to the schedd `schedd`, as the manual's
/// dedicated-resource policy configures it, in scheduling group `group`.
fn dedicated_startd(name: &str, group: &str) -> Startd {
    let c = config::load(
        &LoadOptions::new("STARTD", Root::File("c".into())),
        &MemFiles::new().with(
            "c",
            &format!(
                "RunBenchmarks = False\nNUM_CPUS = 1\nUID_DOMAIN = pool\n\
                 DedicatedScheduler = \"DedicatedScheduler@schedd\"\n\
                 ParallelSchedulingGroup = \"{group}\"\n\
                 STARTD_ATTRS = $(STARTD_ATTRS), DedicatedScheduler, ParallelSchedulingGroup\n\
                 START = Scheduler =?= $(DedicatedScheduler)\n\
                 SUSPEND = False\nCONTINUE = True\nPREEMPT = False\nKILL = False\n\
                 WANT_SUSPEND = False\nWANT_VACATE = False\n\
                 RANK = Scheduler =?= $(DedicatedScheduler)\n"
            ),
        ),
        &FixedHost::empty(),
    )
    .unwrap();
    let mut s =
        Startd::from_config(&c, name, &HostReadings::simple(1, 2048, 1 << 30, 0), T0).unwrap();
    s.tick(
        T0,
        Readings {
            keyboard_idle: 3600,
            console_idle: 3600,
            load_avg: 0.0,
            condor_load: vec![0.0],
        },
    );
    s
}

/// A node the startd asked its starter to run: the startd, the claim,
/// the node's ad.
#[derive(Clone)]
struct Started {
    startd: String,
    claim: String,
    ad: ClassAd,
}

struct Pool {
    queue: JobQueue,
    claims: Claims,
    startds: BTreeMap<String, Startd>,
    starts: Vec<Started>,
    stops: Vec<(String, String, Stop)>,
    notes: Vec<(JobId, String)>,
    events: Vec<JobEvent>,
    now: i64,
}

const PARALLEL: &str = "universe = parallel\nexecutable = job.sh\narguments = node $(Node)\n\
                        output = out.$(Node)\nmachine_count = 3\n";

impl Pool {
    /// Execute points named by their groups; a parallel job submitted
    /// with `extra` submit lines.
    fn new(groups: &[(&str, &str)], extra: &str) -> Pool {
        let mut queue = JobQueue::new();
        let cluster = queue.new_cluster();
        let ads: Vec<ClassAd> =
            job_ads(&format!("{PARALLEL}{extra}queue\n"), cluster, "alice", &[])
                .into_iter()
                .map(|mut a| {
                    a.insert_value("User", "alice@pool");
                    a.insert_value("Requirements", true);
                    a
                })
                .collect();
        let s = queue
            .submit(
                ads,
                "alice",
                &SubmitPolicy::none(),
                &ClassAd::new(),
                "s",
                T0,
            )
            .unwrap();
        let limits = ConcurrencyLimits::from_config(&config::Config::empty("NEGOTIATOR")).unwrap();
        let mut claims = Claims::new("schedd", "<schedd>", 300, limits);
        let _ = claims.jobs_changed(&s.jobs, &queue);
        Pool {
            queue,
            claims,
            startds: groups
                .iter()
                .map(|(n, g)| (n.to_string(), dedicated_startd(n, g)))
                .collect(),
            starts: Vec::new(),
            stops: Vec::new(),
            notes: Vec::new(),
            events: Vec::new(),
            now: T0,
        }
    }

    fn carry(&mut self, ready: Ready) {
        let mut todo = vec![ready];
        while let Some(r) = todo.pop() {
            let mut touched = Vec::new();
            for (id, ev) in r.job_events {
                self.events.push(ev.clone());
                self.queue
                    .apply(id, ev, self.now, &SystemPolicy::none())
                    .unwrap();
                touched.push(id);
            }
            self.notes.extend(r.job_notes);
            for (startd, claim, stop) in r.stops {
                self.stops.push((startd.clone(), claim.clone(), stop));
            }
            for (name, ev) in r.to_startd {
                let startd = self.startds.get_mut(&name).expect("a startd of the pool");
                let out = startd.receive(ev, self.now);
                for a in out.actions {
                    match a {
                        Action::StartJob { claim_id, job, .. } => self.starts.push(Started {
                            startd: name.clone(),
                            claim: claim_id,
                            ad: job,
                        }),
                        a => todo.push(self.claims.startd_said(a, &self.queue, self.now)),
                    }
                }
            }
            if !touched.is_empty() {
                todo.push(self.claims.jobs_changed(&touched, &self.queue));
            }
        }
    }

    /// What the schedd offers the negotiator: (job, request ad) pairs.
    fn offers(&self) -> Vec<(JobId, Arc<ClassAd>)> {
        self.claims
            .idle_jobs()
            .flat_map(|(_, jobs)| jobs.collect::<Vec<_>>())
            .flat_map(|id| {
                let ad = self.queue.shared_job(id).unwrap();
                self.claims
                    .requests_for(id, ad)
                    .into_iter()
                    .map(move |a| (id, a))
            })
            .collect()
    }

    /// The negotiator matched the job to `startd`'s slot.
    fn matched(&mut self, startd: &str) {
        let slot_group = dedicated_group(&self.startds[startd]);
        let m = MatchInfo {
            job: JobId::new(1, 0),
            startd: startd.into(),
            slot: "slot1".into(),
            by_user_priority: false,
            cost: 1.0,
            preempt_dynamic: Vec::new(),
            group: slot_group,
        };
        let r = self.claims.matched(m, &self.queue, self.now);
        self.carry(r);
    }

    fn starter(&mut self, report: StarterReport) {
        let r = self.claims.starter_said(report, &self.queue, self.now);
        self.carry(r);
    }

    fn started(&mut self, claim: &str, startd: &str) {
        self.starter(StarterReport::Started {
            claim_id: claim.into(),
            host: startd.into(),
            slot: format!("slot1@{startd}"),
        });
    }

    fn ended(&mut self, claim: &str, end: RunEnd) {
        self.starter(StarterReport::Ended {
            claim_id: claim.into(),
            end,
            report: RunReport::default(),
        });
    }

    /// Matched to ep1, ep2 and ep3, its nodes started there: the nodes.
    fn run_on_all_three(&mut self) -> Vec<Started> {
        for ep in ["ep1", "ep2", "ep3"] {
            self.matched(ep);
        }
        let starts = self.starts.clone();
        for s in &starts {
            self.started(&s.claim, &s.startd);
        }
        starts
    }

    fn status(&self) -> Option<JobStatus> {
        self.queue.status(JobId::new(1, 0))
    }

    fn count(&self, name: &str) -> usize {
        self.events.iter().filter(|e| event_name(e) == name).count()
    }
}

/// The ParallelSchedulingGroup a startd's slot ad advertises.
fn dedicated_group(s: &Startd) -> Option<String> {
    let ad = s.ad_of("slot1", T0)?;
    schedd::dedicated::scheduling_group(&ad)
}

fn event_name(e: &JobEvent) -> &'static str {
    match e {
        JobEvent::Started { .. } => "started",
        JobEvent::Evicted { .. } => "evicted",
        JobEvent::Exited { .. } => "exited",
        _ => "other",
    }
}

fn text(ad: &ClassAd, name: &str) -> String {
    ad.eval_attr(name, &Env::at(0)).to_string()
}

const THREE: [(&str, &str); 3] = [("ep1", "sw1"), ("ep2", "sw1"), ("ep3", "sw1")];

#[test]
fn three_nodes_are_offered_claimed_and_started_together_each_with_its_node() {
    let mut p = Pool::new(&THREE, "");
    let offers = p.offers();
    assert_eq!(offers.len(), 3, "one request per machine");
    let req = &offers[0].1;
    assert_eq!(text(req, "Scheduler"), "\"DedicatedScheduler@schedd\"");
    assert_eq!(text(req, "MaxHosts"), "1");
    assert!(
        req.get("Requirements")
            .unwrap()
            .to_string()
            .contains("TARGET.DedicatedScheduler == \"DedicatedScheduler@schedd\""),
        "{}",
        req.get("Requirements").unwrap()
    );
    p.matched("ep1");
    p.matched("ep2");
    assert!(p.starts.is_empty(), "no node starts before all have claims");
    assert_eq!(
        p.offers().len(),
        1,
        "the job still asks for its third machine"
    );
    assert_eq!(p.status(), Some(JobStatus::Idle));
    p.matched("ep3");
    assert_eq!(p.starts.len(), 3, "all nodes start together");
    assert!(p.offers().is_empty());
    let mut nodes: Vec<(String, String, String, String)> = p
        .starts
        .iter()
        .map(|s| {
            (
                text(&s.ad, "Node"),
                text(&s.ad, "Args"),
                text(&s.ad, "Out"),
                text(&s.ad, "CurrentHosts"),
            )
        })
        .collect();
    nodes.sort();
    assert_eq!(
        nodes,
        vec![
            (
                "0".into(),
                "\"node 0\"".into(),
                "\"out.0\"".into(),
                "3".into()
            ),
            (
                "1".into(),
                "\"node 1\"".into(),
                "\"out.1\"".into(),
                "3".into()
            ),
            (
                "2".into(),
                "\"node 2\"".into(),
                "\"out.2\"".into(),
                "3".into()
            ),
        ]
    );
    // Each startd has one node; the claims are the dedicated scheduler's.
    let mut where_: Vec<&str> = p.starts.iter().map(|s| s.startd.as_str()).collect();
    where_.sort();
    assert_eq!(where_, ["ep1", "ep2", "ep3"]);
    for s in p.startds.values() {
        let ad = s.ad_of("slot1", p.now).unwrap();
        assert_eq!(text(&ad, "RemoteUser"), "\"DedicatedScheduler@schedd\"");
    }
    // Node 1 and 2 start first: the job starts (001) once, with node 0.
    let by_node = |p: &Pool, n: &str| {
        p.starts
            .iter()
            .find(|s| text(&s.ad, "Node") == n)
            .cloned()
            .unwrap()
    };
    for n in ["1", "2"] {
        let s = by_node(&p, n);
        p.started(&s.claim, &s.startd);
    }
    assert_eq!(p.count("started"), 0);
    let zero = by_node(&p, "0");
    p.started(&zero.claim, &zero.startd);
    assert_eq!(p.count("started"), 1);
    assert_eq!(p.status(), Some(JobStatus::Running));
    // Node 2 exits early: nothing yet. Node 0 exits: the job is done and
    // node 1, still running, is stopped.
    let two = by_node(&p, "2");
    p.ended(&two.claim, RunEnd::Exited(ExitHow::Code(0)));
    assert_eq!(p.status(), Some(JobStatus::Running));
    p.ended(&zero.claim, RunEnd::Exited(ExitHow::Code(0)));
    assert_eq!(p.status(), Some(JobStatus::Completed));
    let one = by_node(&p, "1");
    assert_eq!(
        p.stops.iter().map(|s| s.1.clone()).collect::<Vec<_>>(),
        vec![one.claim.clone()]
    );
    // Node 1's report of its end changes nothing.
    p.ended(&one.claim, RunEnd::Evicted { reason: None });
    assert_eq!(p.status(), Some(JobStatus::Completed));
    assert_eq!(p.count("exited"), 1);
}

#[test]
fn under_wait_for_all_the_job_ends_with_its_last_node_and_node_zero_s_exit() {
    let mut p = Pool::new(&THREE, "+ParallelShutdownPolicy = \"WAIT_FOR_ALL\"\n");
    let starts = p.run_on_all_three();
    let node = |n: &str| {
        starts
            .iter()
            .find(|s| text(&s.ad, "Node") == n)
            .unwrap()
            .claim
            .clone()
    };
    p.ended(&node("0"), RunEnd::Exited(ExitHow::Code(3)));
    assert_eq!(p.status(), Some(JobStatus::Running), "two nodes still run");
    p.ended(&node("1"), RunEnd::Exited(ExitHow::Code(0)));
    assert_eq!(p.status(), Some(JobStatus::Running));
    p.ended(&node("2"), RunEnd::Exited(ExitHow::Code(0)));
    assert_eq!(p.status(), Some(JobStatus::Completed));
    assert!(p.stops.is_empty(), "nothing left to stop");
    let ad = p.queue.job(JobId::new(1, 0)).unwrap();
    assert_eq!(text(ad, "ExitCode"), "3", "node 0's exit is the job's");
}

#[test]
fn a_node_evicted_ends_the_job_on_every_node_and_it_runs_again() {
    let mut p = Pool::new(&THREE, "");
    let starts = p.run_on_all_three();
    let one = starts.iter().find(|s| text(&s.ad, "Node") == "1").unwrap();
    p.ended(
        &one.claim,
        RunEnd::Evicted {
            reason: Some("owner came back".into()),
        },
    );
    assert_eq!(p.status(), Some(JobStatus::Idle));
    assert_eq!(p.count("evicted"), 1);
    assert_eq!(
        p.stops.len(),
        2,
        "the two other nodes are stopped: {:?}",
        p.stops
    );
    assert_eq!(p.offers().len(), 3, "it asks for three machines again");
}

#[test]
fn a_job_removed_while_its_nodes_run_stops_them_all() {
    let mut p = Pool::new(&THREE, "");
    p.run_on_all_three();
    let id = JobId::new(1, 0);
    p.queue
        .apply(
            id,
            JobEvent::Removed {
                reason: "by alice".into(),
            },
            p.now,
            &SystemPolicy::none(),
        )
        .unwrap();
    let r = p.claims.jobs_changed(&[id], &p.queue);
    p.carry(r);
    assert_eq!(p.stops.len(), 3, "{:?}", p.stops);
    assert!(p.stops.iter().all(|s| s.2 == Stop::Remove));
}

#[test]
fn nodes_stay_in_the_scheduling_group_the_first_claim_chose() {
    let mut p = Pool::new(
        &[
            ("ep1", "sw1"),
            ("ep2", "sw2"),
            ("ep3", "sw1"),
            ("ep4", "sw1"),
        ],
        "+WantParallelSchedulingGroups = True\n",
    );
    p.matched("ep1");
    // A match in another group, made before the job asked for sw1 only,
    // is not claimed.
    p.matched("ep2");
    let offers = p.offers();
    assert_eq!(offers.len(), 2);
    assert!(
        offers[0]
            .1
            .get("Requirements")
            .unwrap()
            .to_string()
            .contains("TARGET.ParallelSchedulingGroup == \"sw1\""),
        "{}",
        offers[0].1.get("Requirements").unwrap()
    );
    p.matched("ep3");
    p.matched("ep4");
    let mut where_: Vec<&str> = p.starts.iter().map(|s| s.startd.as_str()).collect();
    where_.sort();
    assert_eq!(where_, ["ep1", "ep3", "ep4"]);
}

#[test]
fn an_allocation_that_cannot_complete_gives_its_claims_back() {
    let mut p = Pool::new(&THREE, "");
    p.claims.set_unused_claim_timeout(600);
    p.matched("ep1");
    p.matched("ep2");
    p.now += 300;
    let r = p.claims.keep_alive(&p.queue, p.now);
    p.carry(r);
    assert!(p.notes.is_empty(), "{:?}", p.notes);
    p.now += 300;
    let r = p.claims.keep_alive(&p.queue, p.now);
    p.carry(r);
    assert!(
        p.notes
            .iter()
            .any(|(_, n)| n.contains("UNUSED_CLAIM_TIMEOUT")),
        "{:?}",
        p.notes
    );
    assert_eq!(p.offers().len(), 3, "it asks for all three again");
    for s in p.startds.values() {
        let ad = s.ad_of("slot1", p.now).unwrap();
        assert_ne!(
            text(&ad, "State"),
            "\"Claimed\"",
            "the claims are given back"
        );
    }
}
