//! The schedd's claim protocol against the real startd engine: a match
//! claimed, granted, activated; claim reuse for the submitter's next job;
//! the claim released when no job is left; a refused claim; a job held
//! while it runs; a job that cannot start. The test carries the messages
//! between the two cores as a daemon does, and plays the starter.

mod common;

use classad::ClassAd;
use common::{job_ads, T0};
use config::{FixedHost, LoadOptions, MemFiles, Root};
use negotiator::limits::ConcurrencyLimits;
use schedd::claims::{Claims, MatchInfo, Ready, RunEnd, StartFailure, StarterReport, Stop};
use schedd::{
    ExitHow, JobEvent, JobId, JobQueue, JobStatus, RunReport, SubmitPolicy, SystemPolicy,
};
use startd::resources::HostReadings;
use startd::{Action, Event, Readings, Startd};

fn startd(policy: &str) -> Startd {
    let c = config::load(
        &LoadOptions::new("STARTD", Root::File("c".into())),
        &MemFiles::new().with(
            "c",
            &format!("RunBenchmarks = False\nNUM_CPUS = 1\nUID_DOMAIN = pool\n{policy}"),
        ),
        &FixedHost::empty(),
    )
    .unwrap();
    let mut s =
        Startd::from_config(&c, "exec", &HostReadings::simple(1, 2048, 1 << 30, 0), T0).unwrap();
    let idle = Readings {
        keyboard_idle: 3600,
        console_idle: 3600,
        load_avg: 0.0,
        condor_load: vec![0.0],
    };
    s.tick(T0, idle);
    s
}

/// A schedd (its queue and claim core) and a startd, with the messages
/// between them carried at once.
struct Pool {
    queue: JobQueue,
    claims: Claims,
    startd: Startd,
    /// What the startd asked its starter to do: (claim id, job id).
    starts: Vec<(String, JobId)>,
    notes: Vec<(JobId, String)>,
    stops: Vec<(String, String, Stop)>,
    now: i64,
}

impl Pool {
    fn new(policy: &str, jobs: &str) -> Pool {
        let mut queue = JobQueue::new();
        let cluster = queue.new_cluster();
        let ads = job_ads(jobs, cluster, "alice", &[]);
        let ads: Vec<ClassAd> = ads
            .into_iter()
            .map(|mut a| {
                a.insert_value("User", "alice@pool");
                // The test's submit configuration names no ARCH or OPSYS.
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
        let ready = claims.jobs_changed(&s.jobs, &queue);
        assert!(ready.reschedule, "new idle jobs ask for a cycle");
        Pool {
            queue,
            claims,
            startd: startd(policy),
            starts: Vec::new(),
            notes: Vec::new(),
            stops: Vec::new(),
            now: T0,
        }
    }

    /// Carries out a `Ready`: job events into the queue, messages to the
    /// startd (and what it says back to the claim core), until quiet.
    fn carry(&mut self, ready: Ready) {
        let mut todo = vec![ready];
        while let Some(r) = todo.pop() {
            let mut touched = Vec::new();
            for (id, ev) in r.job_events {
                self.queue
                    .apply(id, ev, self.now, &SystemPolicy::none())
                    .unwrap();
                touched.push(id);
            }
            self.notes.extend(r.job_notes);
            self.stops.extend(r.stops);
            for (startd, ev) in r.to_startd {
                assert_eq!(startd, "exec");
                let out = self.startd.receive(ev, self.now);
                for a in out.actions {
                    match a {
                        Action::StartJob { claim_id, job, .. } => {
                            let id = JobId::new(
                                job.eval_attr("ClusterId", &classad::Env::at(0))
                                    .as_int()
                                    .unwrap(),
                                job.eval_attr("ProcId", &classad::Env::at(0))
                                    .as_int()
                                    .unwrap(),
                            );
                            self.starts.push((claim_id, id));
                        }
                        a => todo.push(self.claims.startd_said(a, &self.queue, self.now)),
                    }
                }
            }
            if !touched.is_empty() {
                todo.push(self.claims.jobs_changed(&touched, &self.queue));
            }
        }
    }

    fn matched(&mut self, job: JobId) {
        let m = MatchInfo {
            job,
            startd: "exec".into(),
            slot: "slot1".into(),
            by_user_priority: false,
            cost: 1.0,
            preempt_dynamic: Vec::new(),
            group: None,
        };
        let r = self.claims.matched(m, &self.queue, self.now);
        self.carry(r);
    }

    fn starter(&mut self, report: StarterReport) {
        let r = self.claims.starter_said(report, &self.queue, self.now);
        self.carry(r);
    }

    /// The starter says the claim's job started.
    fn started(&mut self, claim: &str) {
        self.starter(StarterReport::Started {
            claim_id: claim.into(),
            host: "exec".into(),
            slot: "slot1@exec".into(),
        });
    }

    /// The starter ran the job: started, then ended as `end`; the startd
    /// hears its starter is gone.
    fn run(&mut self, claim: &str, end: RunEnd) {
        self.started(claim);
        self.now += 60;
        self.starter(StarterReport::Ended {
            claim_id: claim.into(),
            end,
            report: RunReport::default(),
        });
        self.starter_exited();
    }

    fn starter_exited(&mut self) {
        let out = self.startd.receive(
            Event::StarterExited {
                slot: "slot1".into(),
            },
            self.now,
        );
        for a in out.actions {
            let r = self.claims.startd_said(a, &self.queue, self.now);
            self.carry(r);
        }
    }

    fn status(&self, id: JobId) -> Option<JobStatus> {
        self.queue.status(id)
    }

    fn pair(&self) -> String {
        self.startd.slots()[0].pair().to_string()
    }
}

fn job(proc: i64) -> JobId {
    JobId::new(1, proc)
}

#[test]
fn a_claim_runs_its_job_then_the_submitter_s_next_then_is_released() {
    let mut p = Pool::new("START = True", "executable = job.sh\nqueue 2\n");
    assert_eq!(p.claims.idle_count(), 2);
    p.matched(job(0));
    // Granted, activated with the job it was made for.
    assert_eq!(p.starts.len(), 1);
    let (claim, first) = p.starts[0].clone();
    assert_eq!(first, job(0));
    assert_eq!(p.pair(), "Claimed/Busy");
    assert_eq!(
        p.claims.idle_count(),
        1,
        "the matched job is not offered again"
    );
    p.run(&claim, RunEnd::Exited(ExitHow::Code(0)));
    assert_eq!(p.status(job(0)), Some(JobStatus::Completed));
    // Reused for the next job, without a negotiation cycle.
    assert_eq!(p.starts.len(), 2, "{:?}", p.starts);
    assert_eq!(p.starts[1], (claim.clone(), job(1)));
    assert_eq!(p.claims.idle_count(), 0);
    p.run(&claim, RunEnd::Exited(ExitHow::Code(0)));
    assert_eq!(p.status(job(1)), Some(JobStatus::Completed));
    // Nothing left: released (the slot goes through Preempting).
    assert_eq!(p.starts.len(), 2);
    assert_ne!(p.pair(), "Claimed/Idle");
    assert!(!p.pair().starts_with("Claimed"), "{}", p.pair());
}

#[test]
fn a_claim_past_its_worklife_takes_no_other_job() {
    let mut p = Pool::new(
        "START = True\nCLAIM_WORKLIFE = 30",
        "executable = job.sh\nqueue 2\n",
    );
    p.matched(job(0));
    let (claim, _) = p.starts[0].clone();
    // The run takes 60 s, past the 30 s the claim may take new jobs.
    p.run(&claim, RunEnd::Exited(ExitHow::Code(0)));
    assert_eq!(p.starts.len(), 1, "{:?}", p.starts);
    assert_eq!(p.status(job(1)), Some(JobStatus::Idle));
    assert_eq!(p.claims.idle_count(), 1);
    assert!(!p.pair().starts_with("Claimed"), "{}", p.pair());
}

#[test]
fn a_refused_claim_leaves_the_job_idle_with_the_startd_s_reason() {
    let mut p = Pool::new("START = False", "executable = job.sh\nqueue\n");
    p.matched(job(0));
    assert!(p.starts.is_empty());
    assert_eq!(p.status(job(0)), Some(JobStatus::Idle));
    assert_eq!(p.claims.idle_count(), 1, "offered again");
    assert!(p.claims.is_empty());
    assert_eq!(p.notes.len(), 1, "{:?}", p.notes);
    assert!(
        p.notes[0].1.contains("refused") && p.notes[0].1.contains("START"),
        "{:?}",
        p.notes
    );
}

#[test]
fn a_job_held_while_it_runs_is_stopped_and_its_claim_released() {
    let mut p = Pool::new("START = True", "executable = job.sh\nqueue 2\n");
    p.matched(job(0));
    let (claim, _) = p.starts[0].clone();
    p.started(&claim);
    assert_eq!(p.status(job(0)), Some(JobStatus::Running));
    // A user holds it.
    p.queue
        .user_action(
            "alice",
            &schedd::SuperUsers::default(),
            job(0),
            schedd::UserAction::Hold {
                reason: None,
                subcode: 0,
            },
            T0,
        )
        .unwrap();
    let r = p.claims.jobs_changed(&[job(0)], &p.queue);
    p.carry(r);
    assert_eq!(
        p.stops,
        vec![("exec".to_string(), claim.clone(), Stop::Hold)]
    );
    // The run ends; the held job gets no other event, and the claim is not
    // reused for the next job.
    p.starter(StarterReport::Ended {
        claim_id: claim,
        end: RunEnd::Evicted { reason: None },
        report: RunReport::default(),
    });
    p.starter_exited();
    assert_eq!(p.status(job(0)), Some(JobStatus::Held));
    assert_eq!(p.starts.len(), 1);
    assert_eq!(p.status(job(1)), Some(JobStatus::Idle));
}

#[test]
fn a_vacated_job_is_evicted_by_its_machine_and_goes_back_to_idle() {
    let mut p = Pool::new("START = True", "executable = job.sh\nqueue 2\n");
    // Nothing runs yet: nothing to vacate.
    assert!(p.claims.vacate(&[job(0)], false).to_startd.is_empty());
    p.matched(job(0));
    let (claim, _) = p.starts[0].clone();
    p.started(&claim);
    assert_eq!(p.status(job(0)), Some(JobStatus::Running));
    // condor_vacate_job 1.0: the machine is asked to evict that job.
    let r = p.claims.vacate(&[job(0), job(1)], false);
    assert_eq!(r.to_startd.len(), 1, "only the running job");
    assert!(matches!(
        &r.to_startd[0],
        (startd, Event::Vacate { slot: Some(slot), fast: false })
            if startd == "exec" && slot == "slot1"
    ));
    p.carry(r);
    assert_eq!(p.pair(), "Preempting/Vacating", "the machine evicts it");
    // The starter reports the eviction: the job is idle again.
    p.starter(StarterReport::Ended {
        claim_id: claim,
        end: RunEnd::Evicted { reason: None },
        report: RunReport::default(),
    });
    p.starter_exited();
    assert_eq!(p.status(job(0)), Some(JobStatus::Idle));
    assert_eq!(p.status(job(1)), Some(JobStatus::Idle));
    // -fast asks for a kill.
    let mut q = Pool::new("START = True", "executable = job.sh\nqueue 1\n");
    q.matched(job(0));
    let (claim, _) = q.starts[0].clone();
    q.started(&claim);
    let r = q.claims.vacate(&[job(0)], true);
    assert!(matches!(
        &r.to_startd[0],
        (_, Event::Vacate { fast: true, .. })
    ));
}

#[test]
fn a_job_that_cannot_start_is_held_with_the_hook_s_code_and_the_claim_given_back() {
    let mut p = Pool::new("START = True", "executable = job.sh\nqueue 2\n");
    p.matched(job(0));
    let (claim, _) = p.starts[0].clone();
    p.starter(StarterReport::StartFailed {
        claim_id: claim,
        reason: "PREPARE_JOB exited with status 1".into(),
        failure: StartFailure::Hook,
        subcode: 0,
    });
    p.starter_exited();
    assert_eq!(p.status(job(0)), Some(JobStatus::Held));
    let code = p.queue.job(job(0)).unwrap().get("HoldReasonCode").cloned();
    assert_eq!(
        code.map(|e| classad::unparse::expr_to_string(&e)),
        Some("19".into())
    );
    // Not reused: the next job waits for the negotiator.
    assert_eq!(p.starts.len(), 1);
    assert_eq!(p.claims.idle_count(), 1);
}

#[test]
fn an_evicted_job_is_idle_again_and_its_claim_not_reused() {
    let mut p = Pool::new("START = True", "executable = job.sh\nqueue 2\n");
    p.matched(job(0));
    let (claim, _) = p.starts[0].clone();
    p.started(&claim);
    let r = p.claims.starter_said(
        StarterReport::Ended {
            claim_id: claim,
            end: RunEnd::Evicted {
                reason: Some("PREEMPT".into()),
            },
            report: RunReport::default(),
        },
        &p.queue,
        p.now,
    );
    assert!(matches!(
        r.job_events.as_slice(),
        [(j, JobEvent::Evicted { reason: Some(why), .. })] if *j == job(0) && why == "PREEMPT"
    ));
    assert_eq!(r.runs_ended, vec![job(0)]);
    p.carry(r);
    assert_eq!(p.status(job(0)), Some(JobStatus::Idle));
    assert_eq!(p.claims.idle_count(), 2);
}

#[test]
fn a_job_killed_for_memory_is_held_with_job_out_of_resources_and_not_run_again() {
    let mut p = Pool::new("START = True", "executable = job.sh\nqueue 2\n");
    p.matched(job(0));
    let (claim, _) = p.starts[0].clone();
    let reason = "Error from slot1@exec: Job has gone over cgroup memory limit of 64 megabytes. \
                  Last measured usage: 64 megabytes.  \
                  Consider resubmitting with a higher request_memory.";
    p.run(
        &claim,
        RunEnd::OutOfMemory {
            reason: reason.into(),
        },
    );
    assert_eq!(p.status(job(0)), Some(JobStatus::Held));
    let ad = p.queue.job(job(0)).unwrap();
    let attr = |name: &str| {
        ad.get(name)
            .map(classad::unparse::expr_to_string)
            .unwrap_or_default()
    };
    assert_eq!(attr("HoldReasonCode"), "34");
    assert_eq!(attr("HoldReasonSubCode"), "102");
    assert_eq!(attr("HoldReason"), format!("\"{reason}\""));
    // The claim takes the submitter's next job; the held one stays held.
    assert_eq!(p.starts.len(), 2);
    assert_eq!(p.starts[1].1, job(1));
    assert_eq!(p.status(job(0)), Some(JobStatus::Held));
}

impl Pool {
    /// A keep-alive round with the startd unreachable: what the claim core
    /// sends is lost; its job events are applied. Returns the events.
    fn silent_round(&mut self) -> Vec<JobEvent> {
        let r = self.claims.keep_alive(&self.queue, self.now);
        let events: Vec<JobEvent> = r.job_events.iter().map(|(_, e)| e.clone()).collect();
        let mut touched = Vec::new();
        for (id, ev) in r.job_events {
            self.queue
                .apply(id, ev, self.now, &SystemPolicy::none())
                .unwrap();
            touched.push(id);
        }
        let _ = self.claims.jobs_changed(&touched, &self.queue);
        events
    }

    /// A keep-alive round that reaches the startd; the job events the
    /// claim core made of its answers.
    fn round(&mut self) -> Vec<JobEvent> {
        let r = self.claims.keep_alive(&self.queue, self.now);
        let mut events: Vec<JobEvent> = r.job_events.iter().map(|(_, e)| e.clone()).collect();
        let mut answers = Vec::new();
        for (_, ev) in &r.to_startd {
            answers.extend(self.startd.receive(ev.clone(), self.now).actions);
        }
        self.carry(Ready {
            to_startd: Vec::new(),
            ..r
        });
        for a in answers {
            let r = self.claims.startd_said(a, &self.queue, self.now);
            events.extend(r.job_events.iter().map(|(_, e)| e.clone()));
            self.carry(r);
        }
        events
    }
}

impl Pool {
    /// The schedd restarts: a new claim core over the queue as stored.
    fn restart_schedd(&mut self) {
        let limits = ConcurrencyLimits::from_config(&config::Config::empty("NEGOTIATOR")).unwrap();
        self.claims = Claims::new("schedd", "<schedd>#2", 300, limits);
        let all: Vec<JobId> = self.queue.jobs().map(|(id, _)| id).collect();
        let _ = self.claims.jobs_changed(&all, &self.queue);
    }

    /// The new claim core reconnects `job` to `claim` on the startd; what
    /// the startd answers.
    fn reconnect(&mut self, job: JobId, claim: &str) -> Vec<Action> {
        let r = self
            .claims
            .reconnect(job, claim, ("exec", "slot1"), &self.queue, self.now);
        assert_eq!(r.to_startd.len(), 1, "the startd is asked at once");
        let mut answers = Vec::new();
        for (_, ev) in r.to_startd {
            answers.extend(self.startd.receive(ev, self.now).actions);
        }
        answers
    }
}

fn names(events: &[JobEvent]) -> Vec<&'static str> {
    events
        .iter()
        .map(|e| match e {
            JobEvent::Disconnected { .. } => "disconnected",
            JobEvent::Reconnected { .. } => "reconnected",
            JobEvent::ReconnectFailed { .. } => "reconnect failed",
            _ => "other",
        })
        .collect()
}

#[test]
fn a_silent_execute_point_disconnects_its_job_and_past_the_lease_the_job_runs_again() {
    let mut p = Pool::new(
        "START = True",
        "executable = job.sh\njob_lease_duration = 1000\nqueue\n",
    );
    p.matched(job(0));
    let (claim, _) = p.starts[0].clone();
    p.started(&claim);
    assert_eq!(p.status(job(0)), Some(JobStatus::Running));
    // The claim is kept in the job, for a restarted schedd.
    let ad = p.queue.job(job(0)).unwrap();
    assert_eq!(
        ad.eval_attr("ClaimId", &classad::Env::at(0)).as_str(),
        Some(claim.as_str())
    );
    // One round of silence (ALIVE_INTERVAL 300) is nothing yet; two are
    // a disconnection (022), the job still running as far as anyone knows.
    p.now += 300;
    assert!(p.silent_round().is_empty());
    p.now += 301;
    assert_eq!(names(&p.silent_round()), ["disconnected"]);
    assert_eq!(p.status(job(0)), Some(JobStatus::Running));
    p.now += 300;
    assert!(p.silent_round().is_empty(), "said once");
    // Past the lease (1000 s) and one more round: given up (024), idle
    // again, offered to the negotiator.
    p.now += 500;
    let events = p.silent_round();
    assert_eq!(names(&events), ["reconnect failed"]);
    let JobEvent::ReconnectFailed { reason, startd } = &events[0] else {
        unreachable!()
    };
    assert_eq!(
        reason,
        "Job disconnected too long: JobLeaseDuration (1000 seconds) expired"
    );
    assert_eq!(startd, "slot1@exec");
    assert_eq!(p.status(job(0)), Some(JobStatus::Idle));
    assert_eq!(p.claims.idle_count(), 1);
    assert!(p.claims.is_empty(), "the claim is forgotten");
    let ad = p.queue.job(job(0)).unwrap();
    assert!(!ad.contains("ClaimId"), "the claim is no longer the job's");
}

#[test]
fn a_disconnected_job_whose_execute_point_answers_again_is_reconnected() {
    let mut p = Pool::new(
        "START = True",
        "executable = job.sh\njob_lease_duration = 1000\nqueue\n",
    );
    p.matched(job(0));
    let (claim, _) = p.starts[0].clone();
    p.started(&claim);
    p.now += 601;
    assert_eq!(names(&p.silent_round()), ["disconnected"]);
    // The network comes back before the lease ends: the startd answers.
    p.now += 300;
    assert_eq!(names(&p.round()), ["reconnected"]);
    assert_eq!(p.status(job(0)), Some(JobStatus::Running));
    p.starter(StarterReport::Ended {
        claim_id: claim.clone(),
        end: RunEnd::Exited(ExitHow::Code(0)),
        report: RunReport::default(),
    });
    assert_eq!(p.status(job(0)), Some(JobStatus::Completed));
}

#[test]
fn a_restarted_schedd_reconnects_to_a_job_its_startd_still_runs() {
    let mut p = Pool::new(
        "START = True",
        "executable = job.sh\njob_lease_duration = 1000\nqueue 2\n",
    );
    p.matched(job(0));
    let (claim, _) = p.starts[0].clone();
    p.started(&claim);
    p.restart_schedd();
    p.now += 30;
    let answers = p.reconnect(job(0), &claim);
    let mut events = Vec::new();
    for a in answers {
        let r = p.claims.startd_said(a, &p.queue, p.now);
        events.extend(r.job_events.iter().map(|(_, e)| e.clone()));
        p.carry(r);
    }
    assert_eq!(names(&events), ["reconnected"]);
    assert_eq!(p.claims.idle_count(), 1, "the running job is not offered");
    // It ends once; the claim takes the next job.
    let starts = p.starts.len();
    p.starter(StarterReport::Ended {
        claim_id: claim.clone(),
        end: RunEnd::Exited(ExitHow::Code(0)),
        report: RunReport::default(),
    });
    p.starter_exited();
    assert_eq!(p.status(job(0)), Some(JobStatus::Completed));
    assert_eq!(p.starts.len(), starts + 1, "{:?}", p.starts);
    // The same report again (the startd sends it again to a schedd that
    // may not have had it), while the next job is being activated on the
    // claim, changes nothing: neither job is ended by it.
    p.starter(StarterReport::Ended {
        claim_id: claim.clone(),
        end: RunEnd::Exited(ExitHow::Code(0)),
        report: RunReport::default(),
    });
    assert_eq!(p.status(job(0)), Some(JobStatus::Completed));
    assert_eq!(p.status(job(1)), Some(JobStatus::Idle));
    p.started(&claim);
    assert_eq!(p.status(job(1)), Some(JobStatus::Running));
}

#[test]
fn a_reconnect_to_a_claim_the_startd_no_longer_holds_fails_and_the_job_runs_again() {
    let mut p = Pool::new(
        "START = True",
        "executable = job.sh\njob_lease_duration = 1000\nqueue\n",
    );
    p.matched(job(0));
    let (claim, _) = p.starts[0].clone();
    p.started(&claim);
    p.restart_schedd();
    // A claim id the startd never gave.
    let answers = p.reconnect(job(0), "<schedd>#1#999");
    assert!(
        answers
            .iter()
            .any(|a| matches!(a, Action::ClaimAlive { alive: false, .. })),
        "{answers:?}"
    );
    for a in answers {
        let r = p.claims.startd_said(a, &p.queue, p.now);
        assert!(
            r.job_events.is_empty(),
            "not at once: a report may be on its way"
        );
        p.carry(r);
    }
    p.now += 300;
    let events = p.silent_round();
    assert_eq!(names(&events), ["reconnect failed"]);
    let JobEvent::ReconnectFailed { reason, .. } = &events[0] else {
        unreachable!()
    };
    assert_eq!(reason, "Claim not found at execution machine");
    assert_eq!(p.status(job(0)), Some(JobStatus::Idle));
}

#[test]
fn a_run_whose_claim_ended_and_whose_last_report_is_lost_runs_again_after_its_lease() {
    let mut p = Pool::new(
        "START = True",
        "executable = job.sh\njob_lease_duration = 1000\nqueue\n",
    );
    p.matched(job(0));
    let (claim, _) = p.starts[0].clone();
    p.started(&claim);
    // The startd ends the claim while the starter is still at work (an
    // eviction), then the execute point dies: the job's report never
    // comes.
    let r = p.claims.startd_said(
        Action::ClaimEnded {
            slot: "slot1".into(),
            claim_id: claim.clone(),
            schedd: "schedd".into(),
            reason: "evicted".into(),
        },
        &p.queue,
        p.now,
    );
    p.carry(Ready {
        to_startd: Vec::new(),
        ..r
    });
    assert_eq!(p.status(job(0)), Some(JobStatus::Running));
    p.now += 1000;
    assert!(p.silent_round().is_empty(), "within the lease it waits");
    p.now += 301;
    assert_eq!(names(&p.silent_round()), ["reconnect failed"]);
    assert_eq!(p.status(job(0)), Some(JobStatus::Idle));
    assert_eq!(p.claims.idle_count(), 1, "offered again");
}
