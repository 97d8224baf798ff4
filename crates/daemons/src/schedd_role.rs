//! The schedd role: the job queue ([`Schedd`], kept equal to its store)
//! and its claims (`schedd::claims`, the claim protocol's core). It
//! answers the tools' requests, offers its idle jobs to the negotiator,
//! claims and activates the slots it is matched to, hears from the
//! startd and the starters how its claims and jobs fare, runs periodic job
//! policy, keeps its claims alive, and advertises itself and its
//! submitters to the collector.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use classad::ClassAd;
use negotiator::autocluster_ids::AutoclusterIds;
use negotiator::collector::AdType;
use negotiator::limits::ConcurrencyLimits;
use schedd::claims::{self, Claims};
use schedd::{JobEvent, JobId, JobStatus, RunReport, StatusCounts};

use crate::roles::{Dest, Message, Outbox, Role, RoleName, ScheddAutoclusters, SubmitterRequest};
use crate::schedd_service::Schedd;

/// The schedd's intervals, seconds.
pub struct ScheddIntervals {
    pub periodic: u64,
    pub alive: u64,
    /// How often it updates the collector.
    pub update: u64,
    /// UNUSED_CLAIM_TIMEOUT: how long a parallel job's incomplete
    /// allocation holds its claims.
    pub unused_claim: u64,
}

pub struct ScheddRole {
    pub schedd: Schedd,
    claims: Claims,
    /// Its name (SCHEDD_NAME as HTCondor builds it, else the host's).
    name: String,
    hostname: String,
    intervals: ScheddIntervals,
    /// The submitters last advertised (those gone are withdrawn).
    published: BTreeSet<String>,
    /// The command port's address (`MyAddress`), where there is one.
    address: Option<String>,
    /// Jobs users vacated (with `fast`), for the claim core to evict.
    vacating: Vec<(Vec<JobId>, bool)>,
    /// Where each startd it was matched to listens (by the startd's name,
    /// as the negotiator found it in the slot ads), where its claim
    /// messages go. Kept for the startds it holds claims at; the newest
    /// match says where a restarted one listens now.
    startds: BTreeMap<String, String>,
    /// What the schedd must send as it begins (reconnects to the jobs the
    /// last one left running, releases of their claims).
    startup: Option<claims::Ready>,
    /// Its idle jobs' autoclusters, kept from cycle to cycle: a job is
    /// filed when it is new or changed, not at every NEGOTIATE.
    autoclusters: AutoclusterIds<JobId>,
}

/// Where a job ran when the last schedd stopped, if that was a startd of
/// another process than this one's (`local_startd`): its claim, startd,
/// slot and the startd's address.
fn ran_elsewhere(
    schedd: &Schedd,
    local_startd: Option<&str>,
    id: JobId,
) -> Option<(String, String, String, Option<String>)> {
    use crate::schedd_service::literal_str;
    use schedd::job::attr;
    let ad = schedd.queue().job(id)?;
    let claim = literal_str(ad, attr::CLAIM_ID)?;
    let host = literal_str(ad, attr::REMOTE_HOST)?;
    let (slot, startd) = host.split_once('@')?;
    if local_startd.is_some_and(|l| l.eq_ignore_ascii_case(startd)) {
        return None;
    }
    let address = literal_str(ad, attr::STARTD_IP_ADDR);
    Some((claim, startd.to_string(), slot.to_string(), address))
}

impl ScheddRole {
    /// The schedd around its queue. Jobs the queue says were on a machine
    /// when the last schedd stopped: one on a startd of another process
    /// (`local_startd` is this process's own, if it runs one) may run
    /// there still, and is reconnected to (its claim made again from the
    /// job's ClaimId and RemoteHost, the startd asked for it at once: the
    /// job's lease decides); one on this process's startd ran under a
    /// pool that is gone (the startd has killed what was left before
    /// this runs) and is evicted to run again. Removed or completed ones
    /// whose run had not ended move to the history (their claims, on
    /// other processes' startds, released).
    pub fn new(
        mut schedd: Schedd,
        hostname: &str,
        local_startd: Option<&str>,
        limits: ConcurrencyLimits,
        intervals: ScheddIntervals,
        now: i64,
        notes: &mut Vec<String>,
    ) -> ScheddRole {
        let on_a_machine: Vec<(JobId, JobStatus)> = schedd
            .queue()
            .jobs()
            .filter_map(|(id, _)| Some((id, schedd.queue().status(id)?)))
            .filter(|(_, st)| {
                matches!(
                    st,
                    JobStatus::Running
                        | JobStatus::Suspended
                        | JobStatus::TransferringOutput
                        | JobStatus::Removed
                        | JobStatus::Completed
                )
            })
            .collect();
        let mut reconnect = Vec::new();
        let mut releases = Vec::new();
        for (id, status) in on_a_machine {
            let remote = ran_elsewhere(&schedd, local_startd, id);
            let parallel = schedd
                .queue()
                .job(id)
                .is_some_and(schedd::dedicated::is_parallel);
            let done = match (status, remote) {
                // A parallel job's nodes are not reconnected (only node
                // 0's claim is kept in its ad): it runs again, its node 0
                // claim given back, the others ended by their startds'
                // claim leases.
                (st, Some((claim_id, startd, slot, address)))
                    if parallel && !matches!(st, JobStatus::Removed | JobStatus::Completed) =>
                {
                    releases.push((startd, slot, claim_id, address));
                    let ev = JobEvent::Evicted {
                        checkpointed: false,
                        reason: Some(
                            "the access point restarted while the parallel job ran; its nodes \
                             are not reconnected, it will run again"
                                .into(),
                        ),
                        report: RunReport::default(),
                    };
                    schedd.job_event(id, ev, now).map(|_| ())
                }
                (JobStatus::Removed | JobStatus::Completed, remote) => {
                    if let Some((claim_id, startd, slot, address)) = remote {
                        releases.push((startd, slot, claim_id, address));
                    }
                    schedd.run_ended(id, now)
                }
                (_, Some(remote)) => {
                    reconnect.push((id, remote));
                    Ok(())
                }
                (_, None) => {
                    let ev = JobEvent::Evicted {
                        checkpointed: false,
                        reason: Some(
                            "the pool stopped while the job ran; it will run again".into(),
                        ),
                        report: RunReport::default(),
                    };
                    schedd.job_event(id, ev, now).map(|_| ())
                }
            };
            if let Err(e) = done {
                notes.push(e);
            }
        }
        let name = schedd.name().to_string();
        let mut claims = Claims::new(
            &name,
            &format!("<{name}>#{}", std::process::id()),
            intervals.alive as i64,
            limits,
        );
        claims.set_unused_claim_timeout(intervals.unused_claim as i64);
        let all: Vec<JobId> = schedd.queue().jobs().map(|(id, _)| id).collect();
        schedd.take_touched();
        let _ = claims.jobs_changed(&all, schedd.queue());
        let mut startds = BTreeMap::new();
        let mut startup = claims::Ready::default();
        for (startd, slot, claim_id, address) in releases {
            if let Some(a) = address {
                startds.insert(startd.clone(), a);
            }
            startup
                .to_startd
                .push((startd, startd::Event::ReleaseClaim { slot, claim_id }));
        }
        for (id, (claim_id, startd, slot, address)) in reconnect {
            notes.push(format!(
                "job {id}: reconnecting to it on {slot}@{startd} (claim of the last schedd)"
            ));
            if let Some(a) = address {
                startds.insert(startd.clone(), a);
            }
            let r = claims.reconnect(id, &claim_id, (&startd, &slot), schedd.queue(), now);
            startup.to_startd.extend(r.to_startd);
        }
        ScheddRole {
            schedd,
            claims,
            name,
            hostname: hostname.to_string(),
            intervals,
            published: BTreeSet::new(),
            address: None,
            vacating: Vec::new(),
            startds,
            startup: Some(startup),
            autoclusters: AutoclusterIds::new(),
        }
    }

    /// The schedd's name (its ad's `Name`, and the name its claims give
    /// the startds).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Where messages for the startd `name` go.
    fn startd(&self, name: &str) -> Dest {
        Dest::at(
            RoleName::Startd,
            name,
            self.startds.get(name).map(String::as_str),
        )
    }

    /// The ad of `job`, if it runs on `claim_id` (a starter on another
    /// host asks for its files by the claim).
    /// A parallel job's node has its own ad (its `$(Node)`), as the
    /// starter of that node was given.
    pub fn job_on_claim(&self, claim_id: &str, job: JobId) -> Option<ClassAd> {
        if self.claims.job_of(claim_id) != Some(job) {
            return None;
        }
        let ad = self.schedd.queue().job(job)?;
        Some(match self.claims.node_of(claim_id) {
            Some((node, nodes)) => schedd::dedicated::node_ad(
                ad,
                &schedd::dedicated::scheduler_name(&self.name),
                node,
                nodes,
            ),
            None => ad.clone(),
        })
    }

    /// Where HTCondor's clients reach this schedd (its ad's `MyAddress`).
    pub fn set_address(&mut self, sinful: String) {
        self.schedd.set_public_address(&sinful);
        self.address = Some(sinful);
    }

    /// New concurrency limits (after `condor_reconfig`).
    pub fn set_limits(&mut self, limits: ConcurrencyLimits) {
        self.claims.set_limits(limits);
    }

    /// A user's hold, release, removal or vacate of `targets` (jobs
    /// chosen on a snapshot): the queue's answer; the jobs vacated are
    /// evicted by their machines (the claim core's messages go out with
    /// the next [`ScheddRole::queue_changed`]).
    pub fn act_on(
        &mut self,
        user: &str,
        req: &wire::api::ActRequest,
        targets: Vec<JobId>,
        now: i64,
    ) -> Result<wire::api::ActAnswer, crate::schedd_service::ApiError> {
        let fast = match req.action {
            wire::api::Action::Vacate => false,
            wire::api::Action::VacateFast => true,
            _ => return self.schedd.act_on(user, req, targets, now),
        };
        let answer = self.schedd.act_on(user, req, targets.clone(), now)?;
        let done: BTreeSet<&str> = answer.done.iter().map(String::as_str).collect();
        let ids: Vec<JobId> = targets
            .into_iter()
            .filter(|id| done.contains(id.to_string().as_str()))
            .collect();
        self.vacating.push((ids, fast));
        Ok(answer)
    }

    /// After a change to the queue made outside the claim protocol (a
    /// submission, a user's hold, release or removal, periodic policy):
    /// the claim core keeps its idle index, takes held or removed jobs off
    /// their machines, and asks for a cycle if new idle jobs came.
    pub fn queue_changed(&mut self, out: &mut Outbox, now: i64) {
        let mut ready = claims::Ready::default();
        for (ids, fast) in std::mem::take(&mut self.vacating) {
            ready
                .to_startd
                .extend(self.claims.vacate(&ids, fast).to_startd);
        }
        self.apply(ready, out, now);
    }

    /// Carries out what the claim core decided: job events to the queue
    /// (and the store, and the event log), messages to the startd, the
    /// negotiator and the starters; then tells the core which jobs
    /// changed, until nothing more changes.
    fn apply(&mut self, mut ready: claims::Ready, out: &mut Outbox, now: i64) {
        for _ in 0..1000 {
            for (id, ev) in ready.job_events {
                if let Err(e) = self.schedd.job_event(id, ev, now) {
                    out.note(e);
                }
            }
            for id in ready.runs_ended {
                if let Err(e) = self.schedd.run_ended(id, now) {
                    out.note(e);
                }
            }
            if !ready.charges.is_empty() {
                out.send(RoleName::Negotiator, Message::Charges(ready.charges));
            }
            for (startd, claim_id, stop) in ready.stops {
                out.send(self.startd(&startd), Message::StopJob { claim_id, stop });
            }
            for (startd, ev) in ready.to_startd {
                out.send(self.startd(&startd), Message::Startd(ev));
            }
            for (id, text) in ready.job_notes {
                out.note(format!("job {id}: {text}"));
            }
            if ready.reschedule {
                out.send(RoleName::Negotiator, Message::Reschedule);
            }
            let touched = self.schedd.take_touched();
            if touched.is_empty() {
                return;
            }
            ready = self.claims.jobs_changed(&touched, self.schedd.queue());
        }
    }

    /// The schedd's update to the collector: its own ad and one per
    /// submitter with jobs, with their job counts (what `condor_status
    /// -schedd` and `-submitters` show); submitters with no jobs left are
    /// withdrawn.
    pub fn publish(&mut self, out: &mut Outbox) {
        // From the queue's counters: the collector asks for these ads on
        // every query of schedd and submitter ads, and a scan of a large
        // queue each time would cost more than the query.
        #[derive(Default)]
        struct Counts {
            idle: u64,
            running: u64,
            held: u64,
        }
        let counts_of = |c: &StatusCounts| Counts {
            idle: c.of(JobStatus::Idle),
            running: c.of(JobStatus::Running) + c.of(JobStatus::Suspended),
            held: c.of(JobStatus::Held),
        };
        let queue = self.schedd.queue();
        let by_user: BTreeMap<String, Counts> = queue
            .submitter_counts()
            .iter()
            .map(|(user, c)| (user.clone(), counts_of(c)))
            .collect();
        let total = counts_of(&queue.counts());
        let counts = |ad: &mut ClassAd, c: &Counts| {
            ad.insert_value("IdleJobs", c.idle as i64);
            ad.insert_value("RunningJobs", c.running as i64);
            ad.insert_value("HeldJobs", c.held as i64);
        };
        let mut ad = ClassAd::new();
        ad.insert_value("MyType", "Scheduler");
        ad.insert_value("Name", self.name.as_str());
        ad.insert_value("Machine", self.hostname.as_str());
        if let Some(a) = &self.address {
            ad.insert_value("MyAddress", a.as_str());
            ad.insert_value("ScheddIpAddr", a.as_str());
        }
        ad.insert_value("CondorVersion", crate::command_port::CONDOR_VERSION);
        ad.insert_value("CondorPlatform", crate::command_port::CONDOR_PLATFORM);
        ad.insert_value("TotalIdleJobs", total.idle as i64);
        ad.insert_value("TotalRunningJobs", total.running as i64);
        ad.insert_value("TotalHeldJobs", total.held as i64);
        counts(&mut ad, &total);
        out.send(
            RoleName::Collector,
            Message::UpdateAds {
                kind: AdType::Schedd,
                ads: vec![ad],
            },
        );
        let ads = by_user
            .iter()
            .map(|(user, c)| {
                let mut ad = ClassAd::new();
                ad.insert_value("MyType", "Submitter");
                ad.insert_value("Name", user.as_str());
                ad.insert_value("ScheddName", self.name.as_str());
                if let Some(a) = &self.address {
                    ad.insert_value("ScheddIpAddr", a.as_str());
                }
                ad.insert_value("Machine", self.hostname.as_str());
                counts(&mut ad, c);
                ad
            })
            .collect();
        for m in crate::roles::advertise(AdType::Submitter, ads, &mut self.published) {
            out.send(RoleName::Collector, m);
        }
    }

    /// The schedd is going down: its own ad and its submitters' are
    /// withdrawn from the collector (INVALIDATE_SCHEDD_ADS and
    /// INVALIDATE_SUBMITTOR_ADS, as HTCondor's schedd sends at shutdown).
    pub fn withdraw(&mut self, out: &mut Outbox) {
        out.send(
            RoleName::Collector,
            Message::InvalidateAds {
                kind: AdType::Schedd,
                names: vec![self.name.clone()],
            },
        );
        let names: Vec<String> = std::mem::take(&mut self.published).into_iter().collect();
        if !names.is_empty() {
            out.send(
                RoleName::Collector,
                Message::InvalidateAds {
                    kind: AdType::Submitter,
                    names,
                },
            );
        }
    }

    /// Sends what the schedd had to say as it began, once.
    fn begin(&mut self, out: &mut Outbox, now: i64) {
        if let Some(r) = self.startup.take() {
            self.apply(r, out, now);
        }
    }

    /// The schedd's requests for negotiation cycle `cycle`, with its jobs'
    /// autoclusters over `significant` (what the negotiator told; empty
    /// before its first cycle).
    fn requests(&mut self, cycle: u64, significant: &[String]) -> Message {
        let queue = self.schedd.queue();
        let submitters: Vec<SubmitterRequest> = self
            .claims
            .idle_jobs()
            .map(|(who, jobs)| {
                let jobs = jobs
                    .filter_map(|id| queue.shared_job(id).map(|ad| (id, ad)))
                    .flat_map(|(id, ad)| {
                        // A parallel job: a request per node it needs.
                        self.claims
                            .requests_for(id, ad)
                            .into_iter()
                            .map(move |ad| (id, ad))
                    })
                    .collect();
                (who.to_string(), jobs)
            })
            .collect();
        let on_claims = self
            .claims
            .jobs_on_claims()
            .filter_map(|id| queue.shared_job(id))
            .collect();
        if !significant.is_empty() {
            self.autoclusters.set_significant(significant);
        }
        let autoclusters = self.autoclusters.is_told().then(|| {
            let lists: Vec<&[(JobId, Arc<ClassAd>)]> =
                submitters.iter().map(|(_, jobs)| jobs.as_slice()).collect();
            ScheddAutoclusters {
                ids: self.autoclusters.ids(&lists),
                names: self.autoclusters.names(),
                abridged: false,
            }
        });
        Message::Requests {
            cycle,
            schedd: self.name.clone(),
            submitters,
            on_claims,
            autoclusters,
        }
    }
}

impl Role for ScheddRole {
    const NAME: RoleName = RoleName::Schedd;

    fn receive(&mut self, from: RoleName, msg: Message, now: i64, out: &mut Outbox) {
        self.begin(out, now);
        let ready = match msg {
            Message::Negotiate { cycle, significant } => {
                let requests = self.requests(cycle, &significant);
                out.send(from, requests);
                return;
            }
            Message::Matches { matches, startds } => {
                self.startds.extend(startds);
                for m in matches {
                    let r = self.claims.matched(m, self.schedd.queue(), now);
                    self.apply(r, out, now);
                }
                return;
            }
            Message::ClaimNews(action) => self.claims.startd_said(action, self.schedd.queue(), now),
            Message::Starter(report) => self.claims.starter_said(report, self.schedd.queue(), now),
            other => return out.unexpected(Self::NAME, from, other),
        };
        self.apply(ready, out, now);
    }

    fn timers(&self) -> Vec<(u64, bool)> {
        vec![
            (self.intervals.periodic, false),
            (self.intervals.alive, false),
            (self.intervals.update, true),
        ]
    }

    fn timer(&mut self, which: usize, now: i64, out: &mut Outbox) {
        self.begin(out, now);
        match which {
            0 => {
                if let Err(e) = self.schedd.periodic(now) {
                    out.note(e);
                }
                self.queue_changed(out, now);
            }
            1 => {
                let ready = self.claims.keep_alive(self.schedd.queue(), now);
                self.apply(ready, out, now);
            }
            _ => self.publish(out),
        }
    }
}
