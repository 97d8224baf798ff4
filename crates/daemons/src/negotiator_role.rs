//! The negotiator role: every NEGOTIATOR_INTERVAL, and when a schedd asks
//! (RESCHEDULE), a negotiation cycle: the schedd's requests (NEGOTIATE),
//! the collector's slot ads, `negotiator::matchmaker::negotiation_cycle`,
//! then the matches to the schedd (PERMISSION_AND_AD) and to the startds
//! (MATCH_INFO). It keeps the accountant (its figures in
//! `<state>/accountant.json`), charged for the claims the schedd reports.

use std::path::PathBuf;
use std::sync::Arc;

use classad::ClassAd;
use negotiator::accountant::Accountant;
use negotiator::cycle::{MatchKind, Policy, SubmitterJobs};
use negotiator::limits::ConcurrencyLimits;
use negotiator::matchmaker::negotiation_cycle;
use negotiator::reuse;
use schedd::claims::MatchInfo;

use crate::roles::{Message, Outbox, Role, RoleName, SubmitterRequest};
use crate::schedd_service::literal_str;

/// Where a cycle is.
enum Cycle {
    Idle,
    /// NEGOTIATE sent to the schedd.
    Requests(u64),
    /// The schedd's requests are in; the slot ads asked for.
    Slots {
        submitters: Vec<SubmitterRequest>,
        on_claims: Vec<Arc<ClassAd>>,
    },
}

pub struct NegotiatorRole {
    accountant: Accountant,
    /// The configured concurrency limits (the ones in use are counted
    /// from the jobs on claims at each cycle).
    limits: ConcurrencyLimits,
    policy: Policy,
    interval: u64,
    state_dir: PathBuf,
    cycle: Cycle,
    cycles: u64,
    /// A cycle was asked for while one was under way.
    again: bool,
}

impl NegotiatorRole {
    pub fn new(
        accountant: Accountant,
        limits: ConcurrencyLimits,
        policy: Policy,
        interval: u64,
        state_dir: PathBuf,
    ) -> NegotiatorRole {
        NegotiatorRole {
            accountant,
            limits,
            policy,
            interval,
            state_dir,
            cycle: Cycle::Idle,
            cycles: 0,
            again: false,
        }
    }

    pub fn accountant(&self) -> &Accountant {
        &self.accountant
    }

    pub fn accountant_mut(&mut self) -> &mut Accountant {
        &mut self.accountant
    }

    /// New policy, accountant settings (keeping its figures) and limits
    /// (after `condor_reconfig`).
    pub fn reconfigure(
        &mut self,
        policy: Policy,
        accountant: Accountant,
        limits: ConcurrencyLimits,
    ) {
        self.policy = policy;
        self.accountant = accountant.with_state(self.accountant.state());
        self.limits = limits;
    }

    /// Writes the accountant's figures for the next start.
    pub fn save_accountant(&mut self, out: &mut Outbox) {
        if let Err(e) = crate::accounting::save(&self.state_dir, &self.accountant.state()) {
            out.note(e);
        }
    }

    /// The accountant's figures brought up to `now` and kept (the pool is
    /// going down).
    pub fn shut_down(&mut self, now: i64, out: &mut Outbox) {
        self.accountant.update_priorities(now);
        self.save_accountant(out);
    }

    /// Begins a cycle: the schedd's requests first.
    fn start_cycle(&mut self, out: &mut Outbox) {
        if !matches!(self.cycle, Cycle::Idle) {
            self.again = true;
            return;
        }
        self.cycles += 1;
        self.cycle = Cycle::Requests(self.cycles);
        out.send(RoleName::Schedd, Message::Negotiate { cycle: self.cycles });
    }

    fn cycle_done(&mut self, out: &mut Outbox) {
        self.cycle = Cycle::Idle;
        if std::mem::take(&mut self.again) {
            self.start_cycle(out);
        }
    }

    /// The cycle itself, over the schedd's requests and the slot ads.
    fn negotiate(
        &mut self,
        submitters: Vec<SubmitterRequest>,
        on_claims: Vec<Arc<ClassAd>>,
        slot_ads: Vec<ClassAd>,
        now: i64,
        out: &mut Outbox,
    ) {
        self.accountant.update_priorities(now);
        let mut limits =
            reuse::limits_in_use(&self.limits, on_claims.iter().map(|a| a.as_ref()), now);
        // Slots are named `slot@machine`: the startd's slot and the
        // machine its startd runs on.
        let slot_names: Vec<(String, String)> = slot_ads
            .iter()
            .map(|a| {
                let name = literal_str(a, "Name").unwrap_or_default();
                match name.split_once('@') {
                    Some((slot, machine)) => (slot.to_string(), machine.to_string()),
                    None => (name, String::new()),
                }
            })
            .collect();
        let plan = {
            let subs: Vec<SubmitterJobs<'_>> = submitters
                .iter()
                .map(|(n, js)| SubmitterJobs {
                    name: n.clone(),
                    jobs: js.iter().map(|(_, ad)| ad.as_ref()).collect(),
                })
                .collect();
            negotiation_cycle(
                &slot_ads,
                &subs,
                &mut self.accountant,
                &mut limits,
                &self.policy,
                now,
            )
        };
        let mut matches = Vec::new();
        for mt in &plan.matches {
            let Some(&(job, _)) = submitters.get(mt.submitter).and_then(|s| s.1.get(mt.job)) else {
                continue;
            };
            let Some((slot, machine)) = slot_names.get(mt.slot).cloned() else {
                continue;
            };
            // On a partitionable slot: the dynamic slots to make room from
            // (a match on a claimed slot preempts only its own claim).
            let preempt_dynamic = mt
                .preempted
                .iter()
                .filter(|p| p.slot != mt.slot)
                .filter_map(|p| slot_names.get(p.slot).map(|n| n.0.clone()))
                .collect();
            out.send(RoleName::Startd, Message::MatchInfo { slot: slot.clone() });
            matches.push(MatchInfo {
                job,
                startd: machine,
                slot,
                by_user_priority: mt.kind == MatchKind::PriorityPreemption,
                cost: mt.cost,
                preempt_dynamic,
            });
        }
        if !matches.is_empty() {
            out.send(RoleName::Schedd, Message::Matches(matches));
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
            Message::Reschedule => self.start_cycle(out),
            Message::Requests {
                cycle,
                submitters,
                on_claims,
            } => {
                if !matches!(self.cycle, Cycle::Requests(c) if c == cycle) {
                    return;
                }
                if submitters.is_empty() {
                    // No idle job: nothing to match.
                    return self.cycle_done(out);
                }
                self.cycle = Cycle::Slots {
                    submitters,
                    on_claims,
                };
                out.send(RoleName::Collector, Message::QuerySlots);
            }
            Message::SlotAds(ads) => {
                let Cycle::Slots {
                    submitters,
                    on_claims,
                    ..
                } = std::mem::replace(&mut self.cycle, Cycle::Idle)
                else {
                    return;
                };
                self.negotiate(submitters, on_claims, ads, now, out);
                self.cycle_done(out);
            }
            Message::Charges(charges) => {
                for c in charges {
                    c.apply(&mut self.accountant, now);
                }
            }
            other => out.note(format!(
                "negotiator: unexpected message from {from:?}: {other:?}"
            )),
        }
    }

    fn timers(&self) -> Vec<(u64, bool)> {
        vec![(self.interval, false)]
    }

    fn timer(&mut self, _which: usize, _now: i64, out: &mut Outbox) {
        // A cycle that lost its answers (a role gone) does not block the
        // next ones for ever.
        if !matches!(self.cycle, Cycle::Idle) {
            self.cycle = Cycle::Idle;
            self.again = false;
        }
        self.start_cycle(out);
    }
}
