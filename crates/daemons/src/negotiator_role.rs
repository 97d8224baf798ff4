//! The negotiator role: every NEGOTIATOR_INTERVAL, and when a schedd asks
//! (RESCHEDULE), a negotiation cycle: the schedd's requests (NEGOTIATE),
//! the collector's slot ads, `negotiator::matchmaker::Negotiator::cycle`,
//! then the matches to the schedd (PERMISSION_AND_AD) and to the startds
//! (MATCH_INFO). It keeps the accountant (its figures in
//! `<state>/accountant.json`), charged for the claims the schedd reports.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use classad::ClassAd;
use negotiator::accountant::Accountant;
use negotiator::cycle::{MatchKind, Policy};
use negotiator::limits::ConcurrencyLimits;
use negotiator::matchmaker::{Negotiator, Offer, Request};
use schedd::claims::MatchInfo;
use schedd::JobId;

use crate::roles::{
    AdminRequest, Dest, Message, Outbox, Role, RoleName, ScheddAutoclusters, SubmitterRequest,
};
use crate::schedd_service::literal_str;

/// Where a cycle is.
enum Cycle {
    Idle,
    /// The schedds' ads asked for (whom to negotiate with).
    Schedds(u64),
    /// NEGOTIATE sent to each schedd; their requests as they come.
    Requests {
        cycle: u64,
        /// The schedds not heard from yet (an empty name: the one schedd
        /// of a pool whose collector had no schedd ad yet).
        waiting: BTreeMap<String, Option<String>>,
        got: Vec<ScheddRequests>,
    },
    /// Every schedd's requests are in; the slot ads asked for.
    Slots(Vec<ScheddRequests>),
}

/// A job in a cycle of several schedds: the schedd's index, the job.
type ScheddJob = (usize, JobId);

/// One schedd's requests for a cycle, and where it listens.
struct ScheddRequests {
    name: String,
    address: Option<String>,
    submitters: Vec<SubmitterRequest>,
    on_claims: Vec<Arc<ClassAd>>,
    autoclusters: Option<ScheddAutoclusters>,
}

/// A schedd by its name (empty: the pool's one schedd, not named yet)
/// and where its ad says it listens.
fn schedd_dest(name: &str, address: Option<&str>) -> Dest {
    if name.is_empty() {
        Dest::role(RoleName::Schedd)
    } else {
        Dest::at(RoleName::Schedd, name, address)
    }
}

pub struct NegotiatorRole {
    /// The accountant, the configured concurrency limits (the ones in use
    /// are counted from the jobs on claims at each cycle) and the policy.
    negotiator: Negotiator,
    interval: u64,
    state_dir: PathBuf,
    cycle: Cycle,
    cycles: u64,
    /// A cycle was asked for while one was under way.
    again: bool,
    /// The last cycle was thrown away and asked again (see
    /// [`NegotiatorRole::negotiate`]); at most once in a row.
    asked_again: bool,
    /// The negotiator's own ad for the collector (`condor_status
    /// -negotiator`, `Negotiator()` locating it), with its address once
    /// the command port has one.
    name: String,
    address: Option<String>,
    started: i64,
}

impl NegotiatorRole {
    /// Where HTCondor's clients reach the negotiator.
    pub fn set_address(&mut self, sinful: String) {
        self.address = Some(sinful);
    }

    fn own_ad(&self, now: i64) -> ClassAd {
        let mut ad = ClassAd::new();
        ad.insert_value("MyType", "Negotiator");
        ad.insert_value("Name", self.name.as_str());
        ad.insert_value("Machine", self.name.as_str());
        if let Some(a) = &self.address {
            ad.insert_value("MyAddress", a.as_str());
        }
        ad.insert_value("CondorVersion", cedar::CONDOR_VERSION);
        ad.insert_value("CondorPlatform", cedar::CONDOR_PLATFORM);
        ad.insert_value("NegotiatorInterval", self.interval as i64);
        ad.insert_value("DaemonStartTime", self.started);
        ad.insert_value("LastHeardFrom", now);
        ad
    }

    /// The name its ad goes by (the host's).
    pub fn named(mut self, name: &str) -> NegotiatorRole {
        self.name = name.to_string();
        self
    }

    pub fn new(
        accountant: Accountant,
        limits: ConcurrencyLimits,
        policy: Policy,
        interval: u64,
        state_dir: PathBuf,
    ) -> NegotiatorRole {
        NegotiatorRole {
            negotiator: Negotiator::new(accountant, limits, policy),
            interval,
            state_dir,
            cycle: Cycle::Idle,
            cycles: 0,
            again: false,
            asked_again: false,
            name: "negotiator".into(),
            address: None,
            started: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs() as i64),
        }
    }

    pub fn accountant(&self) -> &Accountant {
        &self.negotiator.accountant
    }

    pub fn accountant_mut(&mut self) -> &mut Accountant {
        &mut self.negotiator.accountant
    }

    /// New policy, accountant settings (keeping its figures) and limits
    /// (after `condor_reconfig`).
    pub fn reconfigure(
        &mut self,
        policy: Policy,
        accountant: Accountant,
        limits: ConcurrencyLimits,
    ) {
        let n = &mut self.negotiator;
        n.policy = policy;
        n.accountant = accountant.with_state(n.accountant.state());
        n.limits = limits;
    }

    /// Writes the accountant's figures for the next start.
    pub fn save_accountant(&mut self, out: &mut Outbox) {
        if let Err(e) =
            crate::accounting::save(&self.state_dir, &self.negotiator.accountant.state())
        {
            out.note(e);
        }
    }

    /// The accountant's figures brought up to `now` and kept (the pool is
    /// going down).
    pub fn shut_down(&mut self, now: i64, out: &mut Outbox) {
        self.negotiator.accountant.update_priorities(now);
        self.save_accountant(out);
    }

    /// Its own ad, to the collector (the tools find the negotiator by it).
    fn advertise(&self, now: i64, out: &mut Outbox) {
        out.send(
            RoleName::Collector,
            Message::UpdateAds {
                kind: negotiator::collector::AdType::Negotiator,
                ads: vec![self.own_ad(now)],
            },
        );
    }

    /// Begins a cycle: whom to negotiate with (the schedds' ads at the
    /// collector), then each schedd's requests. The own ad goes with
    /// each cycle as well as every five minutes: a collector that
    /// (re)started after the last one, losing it, knows the negotiator
    /// again within a cycle.
    fn start_cycle(&mut self, now: i64, out: &mut Outbox) {
        if !matches!(self.cycle, Cycle::Idle) {
            self.again = true;
            return;
        }
        self.advertise(now, out);
        self.cycles += 1;
        self.cycle = Cycle::Schedds(self.cycles);
        out.send(RoleName::Collector, Message::QuerySchedds);
    }

    /// NEGOTIATE to each schedd the collector knows (to the pool's one
    /// schedd where it knows none yet).
    fn ask_schedds(&mut self, cycle: u64, ads: &[ClassAd], out: &mut Outbox) {
        let mut waiting: BTreeMap<String, Option<String>> = ads
            .iter()
            .filter_map(|a| Some((literal_str(a, "Name")?, literal_str(a, "MyAddress"))))
            .collect();
        if waiting.is_empty() {
            waiting.insert(String::new(), None);
        }
        for (name, address) in &waiting {
            out.send(
                schedd_dest(name, address.as_deref()),
                Message::Negotiate {
                    cycle,
                    significant: self.negotiator.significant.clone(),
                },
            );
        }
        self.cycle = Cycle::Requests {
            cycle,
            waiting,
            got: Vec::new(),
        };
    }

    /// Every schedd's requests are in (or the others are late): the slot
    /// ads next, unless no schedd has an idle job.
    fn requests_in(&mut self, got: Vec<ScheddRequests>, now: i64, out: &mut Outbox) {
        if got.iter().all(|r| r.submitters.is_empty()) {
            return self.cycle_done(now, out);
        }
        self.cycle = Cycle::Slots(got);
        out.send(RoleName::Collector, Message::QuerySlots);
    }

    fn cycle_done(&mut self, now: i64, out: &mut Outbox) {
        self.cycle = Cycle::Idle;
        if std::mem::take(&mut self.again) {
            self.start_cycle(now, out);
        }
    }

    /// The cycle itself, over the schedds' requests and the slot ads. A
    /// submitter with jobs at several schedds is one submitter (its fair
    /// share is the user's); each match goes to the schedd of its job.
    fn negotiate(
        &mut self,
        got: Vec<ScheddRequests>,
        slot_ads: Vec<ClassAd>,
        now: i64,
        out: &mut Outbox,
    ) {
        let mut order: Vec<String> = Vec::new();
        let mut by_submitter: BTreeMap<String, Offer<'_, ScheddJob>> = BTreeMap::new();
        for (i, r) in got.iter().enumerate() {
            for (n, (who, jobs)) in r.submitters.iter().enumerate() {
                if !by_submitter.contains_key(who) {
                    order.push(who.clone());
                }
                let kept = r
                    .autoclusters
                    .as_ref()
                    .and_then(|a| Some((a.ids.get(n)?.as_slice(), a.names.as_slice())));
                by_submitter.entry(who.clone()).or_default().add(
                    i,
                    jobs.iter().map(|(id, ad)| ((i, *id), ad.as_ref())),
                    kept,
                );
            }
        }
        let requests: Vec<Request<'_, ScheddJob>> = order
            .iter()
            .filter_map(|who| by_submitter.remove(who).map(|o| o.request(who)))
            .collect();
        let (granted, plan) = self.negotiator.cycle(
            &requests,
            got.iter()
                .flat_map(|r| r.on_claims.iter().map(|a| a.as_ref())),
            &slot_ads,
            None,
            now,
        );
        // A schedd on another host sent its jobs abridged (a job past the
        // first of its autocluster without the attributes it shares), and
        // the cycle read a name the autoclusters were not filed over (a
        // slot or the policy reads something new): those jobs were judged
        // by the first job's ad. The plan is dropped and the schedds are
        // asked again at once, told what is significant now. Once: a
        // second time the plan stands (the startd still checks every
        // claim against the job's whole ad).
        let abridged = got
            .iter()
            .any(|r| r.autoclusters.as_ref().is_some_and(|a| a.abridged));
        if abridged && plan.stats.kept_ids_dropped > 0 && !self.asked_again {
            self.asked_again = true;
            self.again = true;
            out.note(format!(
                "negotiator: the schedds' autoclusters were filed over fewer attributes than the \
                 pool now reads; asking again with {} significant attributes",
                self.negotiator.significant.len()
            ));
            return;
        }
        self.asked_again = false;
        // Slots are named `slot@machine`: the startd's slot and the
        // machine its startd runs on.
        let name = |i: usize| -> (String, String) {
            let name = slot_ads
                .get(i)
                .and_then(|a| literal_str(a, "Name"))
                .unwrap_or_default();
            match name.split_once('@') {
                Some((slot, machine)) => (slot.to_string(), machine.to_string()),
                None => (name, String::new()),
            }
        };
        let mut matches: Vec<Vec<MatchInfo>> = got.iter().map(|_| Vec::new()).collect();
        // Where each matched startd listens (its slot ads' MyAddress): the
        // schedd claims there, as HTCondor's schedd reaches the startd
        // its match names.
        let mut startds: Vec<BTreeMap<String, String>> =
            got.iter().map(|_| BTreeMap::new()).collect();
        for g in granted {
            let (schedd, job) = g.job;
            let (slot, machine) = name(g.slot);
            let address = slot_ads
                .get(g.slot)
                .and_then(|a| literal_str(a, "MyAddress"));
            out.send(
                Dest::at(RoleName::Startd, &machine, address.as_deref()),
                Message::MatchInfo { slot: slot.clone() },
            );
            if let Some(a) = address {
                startds[schedd].insert(machine.clone(), a);
            }
            matches[schedd].push(MatchInfo {
                job,
                startd: machine,
                slot,
                by_user_priority: g.kind == MatchKind::PriorityPreemption,
                cost: g.cost,
                preempt_dynamic: g.preempt_dynamic.into_iter().map(|i| name(i).0).collect(),
                group: slot_ads
                    .get(g.slot)
                    .and_then(schedd::dedicated::scheduling_group),
            });
        }
        let mut any = false;
        for ((r, matches), startds) in got.iter().zip(matches).zip(startds) {
            if !matches.is_empty() {
                any = true;
                out.send(
                    schedd_dest(&r.name, r.address.as_deref()),
                    Message::Matches { matches, startds },
                );
            }
        }
        if any {
            // The accountant's figures are kept when a cycle changes who
            // holds what (and at shutdown), not at every cycle: a
            // submission asks for one, and there may be hundreds a second.
            self.save_accountant(out);
        }
    }
}

impl Role for NegotiatorRole {
    const NAME: RoleName = RoleName::Negotiator;

    fn receive(&mut self, from: RoleName, msg: Message, now: i64, out: &mut Outbox) {
        match msg {
            Message::Reschedule => self.start_cycle(now, out),
            Message::ScheddAds(ads) => {
                if let Cycle::Schedds(c) = self.cycle {
                    self.ask_schedds(c, &ads, out);
                }
            }
            Message::Requests {
                cycle,
                schedd,
                submitters,
                on_claims,
                autoclusters,
            } => {
                let Cycle::Requests {
                    cycle: c,
                    waiting,
                    got,
                } = &mut self.cycle
                else {
                    return;
                };
                if *c != cycle {
                    return;
                }
                // The one schedd asked without a name answers for it.
                let address = match waiting.remove(&schedd) {
                    Some(a) => a,
                    None if waiting.remove("").is_some() => None,
                    None => return,
                };
                got.push(ScheddRequests {
                    name: schedd,
                    address,
                    submitters,
                    on_claims,
                    autoclusters,
                });
                if waiting.is_empty() {
                    let got = std::mem::take(got);
                    self.requests_in(got, now, out);
                }
            }
            Message::SlotAds(ads) => {
                let Cycle::Slots(got) = std::mem::replace(&mut self.cycle, Cycle::Idle) else {
                    return;
                };
                self.negotiate(got, ads, now, out);
                self.cycle_done(now, out);
            }
            Message::Charges(charges) => {
                for c in charges {
                    c.apply(&mut self.negotiator.accountant, now);
                }
            }
            Message::Admin {
                id,
                request: AdminRequest::Userprio { request },
            } => {
                let rows = self.userprio(&request, now, out);
                out.answer(from, id, Ok(rows));
            }
            other => out.unexpected(Self::NAME, from, other),
        }
    }

    fn timers(&self) -> Vec<(u64, bool)> {
        // The cycle; the negotiator's own ad (at once, then every 5 minutes,
        // HTCondor's UPDATE_INTERVAL; the collector keeps it 15).
        vec![(self.interval, false), (300, true)]
    }

    fn timer(&mut self, which: usize, now: i64, out: &mut Outbox) {
        if which == 1 {
            self.advertise(now, out);
            return;
        }
        // A schedd that does not answer holds up only itself: the cycle
        // goes on with the others' requests. A cycle that lost its
        // answers (a role gone) does not block the next ones for ever.
        if let Cycle::Requests { got, .. } = &mut self.cycle {
            if !got.is_empty() {
                let got = std::mem::take(got);
                self.again = false;
                return self.requests_in(got, now, out);
            }
        }
        if !matches!(self.cycle, Cycle::Idle) {
            self.cycle = Cycle::Idle;
            self.again = false;
        }
        self.start_cycle(now, out);
    }
}
