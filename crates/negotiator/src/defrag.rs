//! The defrag daemon's policy (`condor_defrag`): which partitionable
//! machines to drain so that whole-machine jobs find room, and which
//! drains to cancel, decided from the startd ads the collector holds.
//!
//! The rules follow HTCondor's `src/defrag/defrag.cpp` (25.x):
//!
//! - the quota: `DEFRAG_DRAINING_MACHINES_PER_HOUR` becomes a whole number
//!   per `DEFRAG_INTERVAL`, plus what is left of it as a whole number per
//!   hour (given at the first poll of each hour, prorated by how much of
//!   the hour is left) and the rest as a number per day (likewise at the
//!   first poll of each day). The very first poll gets only the
//!   per-interval part. An interval over an hour drains nothing, as there.
//! - only partitionable slots count (`PartitionableSlot && Offline =!= True`);
//!   a machine is the part of the slot's `Name` after `@`;
//! - machines "draining" and "whole" are those drained by this daemon (or
//!   with no `DrainReason`); nothing new is drained while
//!   `DEFRAG_MAX_CONCURRENT_DRAINING` machines drain or
//!   `DEFRAG_MAX_WHOLE_MACHINES` are whole;
//! - draining machines that satisfy `DEFRAG_CANCEL_REQUIREMENTS` are
//!   cancelled first, and are not drained again in the same poll;
//! - candidates satisfy `DEFRAG_REQUIREMENTS`, are not draining and not
//!   whole, best `DEFRAG_RANK` first (evaluated with the startd ad as
//!   TARGET; undefined is 0). HTCondor shuffles before sorting, so ties
//!   fall randomly; here they fall in the ads' order, so a run is
//!   reproducible.
//!
//! The core never sends anything: [`Defrag::poll`] returns a [`DefragPlan`]
//! and the caller (the simulator, one day the DEFRAG role) carries it out.
//! Start at [`Defrag::poll`].

use std::collections::{BTreeSet, VecDeque};

use classad::{eval_expr, ClassAd, Env, Expr, Value};
use config::{Config, ParamError};

/// `DEFRAG_DRAINING_SCHEDULE`: how a drained machine treats its jobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Schedule {
    Graceful,
    Quick,
    Fast,
}

impl Schedule {
    /// HTCondor's names (case does not matter, as `getDrainingScheduleNum`).
    pub fn parse(text: &str) -> Option<Schedule> {
        match text.trim().to_ascii_lowercase().as_str() {
            "" | "graceful" => Some(Schedule::Graceful),
            "quick" => Some(Schedule::Quick),
            "fast" => Some(Schedule::Fast),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Schedule::Graceful => "graceful",
            Schedule::Quick => "quick",
            Schedule::Fast => "fast",
        }
    }
}

/// The defrag daemon's configuration.
#[derive(Clone, Debug)]
pub struct DefragPolicy {
    /// The daemon's name; its drains carry `DrainReason = "Defrag <name>"`.
    pub name: String,
    /// `DEFRAG_INTERVAL`; 0 or less: no defragmentation.
    pub interval: i64,
    pub draining_per_hour: f64,
    /// -1: no limit.
    pub max_concurrent_draining: i64,
    /// -1: no limit.
    pub max_whole_machines: i64,
    pub requirements: Option<Expr>,
    pub rank: Option<Expr>,
    pub whole_machine_expr: Expr,
    pub schedule: Schedule,
    pub draining_start_expr: Option<Expr>,
    pub cancel_requirements: Option<Expr>,
}

/// The quota `DEFRAG_DRAINING_MACHINES_PER_HOUR` comes to: a whole
/// number per poll, one per hour and one per day (the fractions' carry).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Quota {
    pub per_poll: i64,
    pub per_hour: i64,
    pub per_day: i64,
}

fn bad(name: &str, text: &str, message: &str) -> ParamError {
    ParamError {
        name: name.to_string(),
        text: text.to_string(),
        origin: None,
        message: message.to_string(),
    }
}

impl DefragPolicy {
    /// Reads the `DEFRAG_*` parameters (HTCondor's defaults apply). The
    /// name is `DEFRAG_NAME` (else `LOCALNAME`), `name@FULL_HOSTNAME`
    /// unless it has an `@`, or the host name alone.
    pub fn from_config(config: &Config) -> Result<DefragPolicy, ParamError> {
        let host = config
            .get("FULL_HOSTNAME")
            .ok()
            .flatten()
            .unwrap_or_default();
        let given = config
            .get("DEFRAG_NAME")
            .ok()
            .flatten()
            .unwrap_or_else(|| config.local_name().to_string());
        let name = if given.is_empty() {
            host
        } else if given.contains('@') {
            given
        } else {
            format!("{given}@{host}")
        };
        let schedule_text = config
            .get("DEFRAG_DRAINING_SCHEDULE")
            .ok()
            .flatten()
            .unwrap_or_default();
        let schedule = Schedule::parse(&schedule_text).ok_or_else(|| {
            bad(
                "DEFRAG_DRAINING_SCHEDULE",
                &schedule_text,
                "expected graceful, quick or fast",
            )
        })?;
        let whole_machine_expr = config
            .expression("DEFRAG_WHOLE_MACHINE_EXPR")?
            .ok_or_else(|| bad("DEFRAG_WHOLE_MACHINE_EXPR", "", "must be set"))?;
        Ok(DefragPolicy {
            name,
            interval: config.duration("DEFRAG_INTERVAL")?.unwrap_or(600),
            draining_per_hour: config
                .real("DEFRAG_DRAINING_MACHINES_PER_HOUR")?
                .unwrap_or(0.0)
                .max(0.0),
            max_concurrent_draining: config
                .integer("DEFRAG_MAX_CONCURRENT_DRAINING")?
                .unwrap_or(-1)
                .max(-1),
            max_whole_machines: config
                .integer("DEFRAG_MAX_WHOLE_MACHINES")?
                .unwrap_or(-1)
                .max(-1),
            requirements: config.expression("DEFRAG_REQUIREMENTS")?,
            rank: config.expression("DEFRAG_RANK")?,
            whole_machine_expr,
            schedule,
            draining_start_expr: config.expression("DEFRAG_DRAINING_START_EXPR")?,
            cancel_requirements: config.expression("DEFRAG_CANCEL_REQUIREMENTS")?,
        })
    }

    /// The rate as whole numbers per poll, hour and day, as HTCondor
    /// reckons it (the small epsilons are its own).
    pub fn quota(&self) -> Quota {
        if self.interval <= 0 {
            return Quota {
                per_poll: 0,
                per_hour: 0,
                per_day: 0,
            };
        }
        let interval = self.interval as f64;
        let rate = self.draining_per_hour / 3600.0 * interval;
        let per_poll = ((rate + 0.00001).floor() as i64).max(0);
        let error_per_hour = (rate - per_poll as f64) / interval * 3600.0;
        let per_hour = (error_per_hour + 0.00001).floor() as i64;
        let error_per_day = (error_per_hour - per_hour as f64) * 24.0;
        let mut per_day = (error_per_day + 0.5).floor() as i64;
        if per_day < 0 || self.interval > 3600 * 24 {
            per_day = 0;
        }
        Quota {
            per_poll,
            per_hour,
            per_day,
        }
    }

    /// HTCondor zeroes the hourly rate itself when the interval is over an
    /// hour, and then its "rate is zero" check stops every drain.
    fn effective_per_hour(&self) -> f64 {
        if self.interval > 3600 {
            0.0
        } else {
            self.draining_per_hour
        }
    }

    fn drained_by_me(&self, ad: &ClassAd, env: &Env) -> bool {
        let reason = ad.eval_attr("DrainReason", env);
        match reason {
            Value::Undefined => true,
            _ => reason.as_str() == Some(format!("Defrag {}", self.name).as_str()),
        }
    }
}

/// `n` per `period`, the share of it left `elapsed` into the period, plus
/// what one polling interval (`granularity`) could have missed; never more
/// than `n`, never of the other sign.
pub fn prorate(n: i64, elapsed: i64, period: i64, granularity: i64) -> i64 {
    let remaining = period - elapsed;
    let frac = remaining as f64 / period as f64 + granularity as f64 / period as f64;
    let answer = (n as f64 * frac + 0.5).floor() as i64;
    if (n > 0 && answer > n) || (n < 0 && answer < n) {
        return n;
    }
    if answer * n < 0 {
        return 0;
    }
    answer
}

/// A drain to start.
#[derive(Clone, Debug)]
pub struct DrainOrder {
    /// The machine (the part of the slot's name after `@`).
    pub machine: String,
    /// The partitionable slot's name the order was chosen by.
    pub slot: String,
    pub how: Schedule,
    /// `Defrag <name>`.
    pub reason: String,
    /// Always true: a defrag drain ends by itself once complete.
    pub resume_on_completion: bool,
    /// The startd refuses the drain unless this holds on its ad (that the
    /// estimates the choice was made on have not grown much since).
    pub check_expr: String,
    /// START while draining (DEFRAG_DRAINING_START_EXPR).
    pub start_expr: Option<Expr>,
}

/// What one poll decided.
#[derive(Clone, Debug, Default)]
pub struct DefragPlan {
    /// Machines whose drain to cancel, in rank order.
    pub cancel: Vec<String>,
    pub drain: Vec<DrainOrder>,
    /// How many the quota allowed this poll.
    pub quota: i64,
    pub draining: i64,
    pub whole: i64,
    /// Why nothing (more) was drained, in HTCondor's words.
    pub why: String,
}

/// The figures of the daemon ad, as `defrag_stats.cpp` publishes them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DefragStats {
    pub drain_successes: i64,
    pub drain_failures: i64,
    pub machines_draining: i64,
    pub machines_draining_peak: i64,
    pub whole_machines: i64,
    pub whole_machines_peak: i64,
    pub avg_draining_badput: f64,
    pub avg_draining_unclaimed: f64,
    pub mean_drained_arrival: f64,
    pub mean_drained_arrival_sd: f64,
    pub drained_machines: i64,
}

const LOG_LENGTH: usize = 10;

/// The defrag daemon's state between polls: the policy, when it last
/// polled, which machines were whole and draining then, the arrival
/// statistics and the daemon ad's figures.
#[derive(Clone, Debug)]
pub struct Defrag {
    pub policy: DefragPolicy,
    last_poll: i64,
    prev_whole: BTreeSet<String>,
    prev_draining: BTreeSet<String>,
    arrived: i64,
    last_arrival: i64,
    arrival_sum: f64,
    arrival_mean_squared: f64,
    pub stats: DefragStats,
    /// (time, successes, failures) of recent polls, for Recent*.
    recent: VecDeque<(i64, i64, i64)>,
    /// The last drains (when, who, how) and cancels (when, who).
    drains_log: VecDeque<(i64, String, Schedule)>,
    cancels_log: VecDeque<(i64, String)>,
}

fn machine_of(slot_name: &str) -> String {
    match slot_name.find('@') {
        Some(p) => slot_name[p + 1..].to_string(),
        None => slot_name.to_string(),
    }
}

fn holds(e: &Expr, ad: &ClassAd, env: &Env) -> bool {
    ad.eval(e, env).as_bool() == Some(true)
}

fn int_attr(ad: &ClassAd, name: &str, env: &Env) -> i64 {
    match ad.eval_attr(name, env) {
        Value::Int(i) => i,
        Value::Real(r) => r as i64,
        _ => 0,
    }
}

impl Defrag {
    pub fn new(policy: DefragPolicy) -> Defrag {
        Defrag {
            policy,
            last_poll: 0,
            prev_whole: BTreeSet::new(),
            prev_draining: BTreeSet::new(),
            arrived: 0,
            last_arrival: 0,
            arrival_sum: 0.0,
            arrival_mean_squared: 0.0,
            stats: DefragStats::default(),
            recent: VecDeque::new(),
            drains_log: VecDeque::new(),
            cancels_log: VecDeque::new(),
        }
    }

    /// The time of the last poll (HTCondor keeps it in DEFRAG_STATE_FILE
    /// across restarts; a shell restores it with [`Defrag::set_last_poll`]).
    pub fn last_poll(&self) -> i64 {
        self.last_poll
    }

    pub fn set_last_poll(&mut self, t: i64) {
        self.last_poll = t;
    }

    /// The partitionable slots a constraint picks, by machine, each once.
    fn machines<'a>(
        &self,
        ads: &'a [ClassAd],
        env: &Env,
        pick: impl Fn(&ClassAd) -> bool,
    ) -> Vec<(String, &'a ClassAd)> {
        let mut seen = BTreeSet::new();
        let mut out = Vec::new();
        for ad in ads {
            if !base_slot(ad, env) || !pick(ad) {
                continue;
            }
            let name = ad.eval_attr("Name", env);
            let Some(name) = name.as_str() else { continue };
            let m = machine_of(name);
            if seen.insert(m.clone()) {
                out.push((m, ad));
            }
        }
        out
    }

    fn rank_of(&self, ad: &ClassAd, env: &Env) -> f64 {
        let Some(rank) = &self.policy.rank else {
            return 0.0;
        };
        let mine = ClassAd::new();
        eval_expr(rank, Some(&mine), Some(ad), env)
            .as_number()
            .filter(|r| r.is_finite())
            .unwrap_or(0.0)
    }

    /// Best rank first; ties keep the ads' order.
    fn sorted<'a>(&self, ads: Vec<&'a ClassAd>, env: &Env) -> Vec<&'a ClassAd> {
        let mut ranked: Vec<(f64, usize, &ClassAd)> = ads
            .into_iter()
            .enumerate()
            .map(|(i, ad)| (self.rank_of(ad, env), i, ad))
            .collect();
        ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        ranked.into_iter().map(|(_, _, ad)| ad).collect()
    }

    /// One evaluation of the policy at `now` over the startd ads.
    pub fn poll(&mut self, ads: &[ClassAd], now: i64) -> DefragPlan {
        let env = Env::at(now);
        let p = &self.policy;
        let prev = self.last_poll;
        self.last_poll = now;
        let quota = p.quota();
        let mut num_to_drain = quota.per_poll;
        if prev != 0 {
            let (last_hour, current_hour) = (prev / 3600 * 3600, now / 3600 * 3600);
            let (last_day, current_day) = (prev / 86400 * 86400, now / 86400 * 86400);
            if current_hour != last_hour {
                num_to_drain += prorate(quota.per_hour, now - current_hour, 3600, p.interval);
            }
            if current_day != last_day {
                num_to_drain += prorate(quota.per_day, now - current_day, 86400, p.interval);
            }
        }

        let draining: BTreeSet<String> = self
            .machines(ads, &env, |ad| {
                ad.eval_attr("Draining", &env).as_bool() == Some(true) && p.drained_by_me(ad, &env)
            })
            .into_iter()
            .map(|(m, _)| m)
            .collect();
        let whole: BTreeSet<String> = self
            .machines(ads, &env, |ad| {
                holds(&p.whole_machine_expr, ad, &env) && p.drained_by_me(ad, &env)
            })
            .into_iter()
            .map(|(m, _)| m)
            .collect();
        let (num_draining, num_whole) = (draining.len() as i64, whole.len() as i64);
        self.stats.machines_draining = num_draining;
        self.stats.machines_draining_peak = self.stats.machines_draining_peak.max(num_draining);
        self.stats.whole_machines = num_whole;
        self.stats.whole_machines_peak = self.stats.whole_machines_peak.max(num_whole);
        self.arrivals(&whole, &draining, now);
        self.draining_cost(ads, &env);

        let mut plan = DefragPlan {
            quota: num_to_drain,
            draining: num_draining,
            whole: num_whole,
            ..DefragPlan::default()
        };
        // Cancel first: drained-by-me machines that satisfy the cancel
        // requirements, best rank first.
        let p = &self.policy;
        if let Some(cancel) = &p.cancel_requirements {
            let found = self.machines(ads, &env, |ad| {
                ad.eval_attr("Draining", &env).as_bool() == Some(true)
                    && p.drained_by_me(ad, &env)
                    && holds(cancel, ad, &env)
            });
            let ads: Vec<&ClassAd> = found.iter().map(|(_, ad)| *ad).collect();
            for ad in self.sorted(ads, &env) {
                let name = ad.eval_attr("Name", &env);
                let m = machine_of(name.as_str().unwrap_or_default());
                if !plan.cancel.contains(&m) {
                    plan.cancel.push(m);
                }
            }
        }
        for m in &plan.cancel {
            self.cancels_log.push_back((now, m.clone()));
        }
        while self.cancels_log.len() > LOG_LENGTH {
            self.cancels_log.pop_front();
        }

        let p = &self.policy;
        let why = if num_to_drain <= 0 {
            Some(format!(
                "Doing nothing, because number to drain in next {}s is calculated to be {num_to_drain}.",
                p.interval
            ))
        } else if p.effective_per_hour().ceil() as i64 <= 0 {
            Some(format!(
                "Doing nothing, because DEFRAG_DRAINING_MACHINES_PER_HOUR={}",
                p.effective_per_hour()
            ))
        } else if p.max_concurrent_draining == 0 {
            Some("Doing nothing, because DEFRAG_MAX_CONCURRENT_DRAINING=0".to_string())
        } else if p.max_whole_machines == 0 {
            Some("Doing nothing, because DEFRAG_MAX_WHOLE_MACHINES=0".to_string())
        } else if p.max_concurrent_draining >= 0 && num_draining >= p.max_concurrent_draining {
            Some(format!(
                "Doing nothing, because DEFRAG_MAX_CONCURRENT_DRAINING={} and there are {num_draining} draining machines.",
                p.max_concurrent_draining
            ))
        } else if p.max_whole_machines >= 0 && num_whole >= p.max_whole_machines {
            Some(format!(
                "Doing nothing, because DEFRAG_MAX_WHOLE_MACHINES={} and there are {num_whole} whole machines.",
                p.max_whole_machines
            ))
        } else {
            None
        };
        if let Some(why) = why {
            plan.why = why;
            self.note_recent(now, 0);
            return plan;
        }

        let candidates: Vec<&ClassAd> = ads
            .iter()
            .filter(|ad| {
                base_slot(ad, &env)
                    && !ad.eval_attr("Draining", &env).is_true()
                    && p.requirements.as_ref().is_none_or(|r| holds(r, ad, &env))
            })
            .collect();
        let mut done = BTreeSet::new();
        for ad in self.sorted(candidates, &env) {
            let name = ad.eval_attr("Name", &env);
            let name = name.as_str().unwrap_or_default().to_string();
            let m = machine_of(&name);
            if plan.cancel.contains(&m) || done.contains(&m) || whole.contains(&m) {
                continue;
            }
            let check_expr = self.check_expr(ad, &env);
            done.insert(m.clone());
            plan.drain.push(DrainOrder {
                machine: m,
                slot: name,
                how: p.schedule,
                reason: format!("Defrag {}", p.name),
                resume_on_completion: true,
                check_expr,
                start_expr: p.draining_start_expr.clone(),
            });
            if plan.drain.len() as i64 >= num_to_drain {
                break;
            }
        }
        plan.why = format!(
            "Drained {} machines (wanted to drain {num_to_drain} machines).",
            plan.drain.len()
        );
        let n = plan.drain.len() as i64;
        self.stats.drain_successes += n;
        for d in &plan.drain {
            self.drains_log.push_back((now, d.slot.clone(), d.how));
        }
        while self.drains_log.len() > LOG_LENGTH {
            self.drains_log.pop_front();
        }
        self.note_recent(now, n);
        plan
    }

    /// The startd refused or never got a drain the plan ordered: it counts
    /// as a failure, not a success.
    pub fn drain_failed(&mut self) {
        self.stats.drain_successes -= 1;
        self.stats.drain_failures += 1;
        if let Some(last) = self.recent.back_mut() {
            last.1 -= 1;
            last.2 += 1;
        }
    }

    fn note_recent(&mut self, now: i64, successes: i64) {
        self.recent.push_back((now, successes, 0));
        let window = 10 * self.policy.interval.max(1);
        while self.recent.front().is_some_and(|r| r.0 <= now - window) {
            self.recent.pop_front();
        }
    }

    /// The startd re-checks its own estimates before it drains: they may
    /// not have grown past HTCondor's tolerances since the ad was read.
    fn check_expr(&self, ad: &ClassAd, env: &Env) -> String {
        let kind = match self.policy.schedule {
            Schedule::Graceful => "Graceful",
            Schedule::Quick | Schedule::Fast => "Quick",
        };
        let completion = int_attr(ad, &format!("ExpectedMachine{kind}DrainingCompletion"), env);
        let badput = int_attr(ad, &format!("ExpectedMachine{kind}DrainingBadput"), env);
        format!(
            "ExpectedMachine{kind}DrainingCompletion <= {} && ExpectedMachine{kind}DrainingBadput <= {}",
            completion + 1200,
            (1.25 * badput as f64) as i64 + 1200
        )
    }

    /// Machines newly whole, and machines no longer draining (they may have
    /// drained and been claimed between polls), count as drained arrivals.
    fn arrivals(&mut self, whole: &BTreeSet<String>, draining: &BTreeSet<String>, now: i64) {
        let new = whole.difference(&self.prev_whole).count() as i64;
        let departed = self.prev_draining.difference(draining).count() as i64;
        self.prev_whole = whole.clone();
        self.prev_draining = draining.clone();
        let newly = new + departed;
        let mut rate = 0.0;
        if newly > 0 {
            if self.last_arrival > 0 {
                self.arrived += newly;
                let gap = (now - self.last_arrival).max(1);
                self.arrival_sum += (newly * gap) as f64;
                rate = newly as f64 / gap as f64;
            }
            self.last_arrival = now;
        }
        if self.arrival_sum > 0.0 {
            let mean = self.arrived as f64 / self.arrival_sum;
            if newly > 0 {
                let d = rate - mean;
                self.arrival_mean_squared += d * d;
            }
            self.stats.mean_drained_arrival = mean;
            self.stats.mean_drained_arrival_sd =
                (self.arrival_mean_squared / self.arrived as f64).sqrt();
            self.stats.drained_machines = self.arrived;
        }
    }

    /// AvgDrainingBadput and AvgDrainingUnclaimed: each machine's
    /// TotalMachineDraining* over its daemon's age, summed, over the pool's
    /// cores (one ad per machine: SlotID 1).
    fn draining_cost(&mut self, ads: &[ClassAd], env: &Env) {
        let (mut badput, mut unclaimed, mut cpus) = (0.0, 0.0, 0i64);
        for ad in ads {
            if int_attr(ad, "SlotID", env) != 1 {
                continue;
            }
            let u = ad.eval_attr("TotalMachineDrainingUnclaimedTime", env);
            let b = ad.eval_attr("TotalMachineDrainingBadput", env);
            if matches!(u, Value::Undefined) && matches!(b, Value::Undefined) {
                continue;
            }
            let start = int_attr(ad, "DaemonStartTime", env);
            let heard = int_attr(ad, "LastHeardFrom", env);
            let age = heard - start;
            if heard == 0 || start == 0 || age <= 0 {
                continue;
            }
            badput += u_or_zero(&b) / age as f64;
            unclaimed += u_or_zero(&u) / age as f64;
            cpus += int_attr(ad, "TotalCpus", env);
        }
        if cpus > 0 {
            badput /= cpus as f64;
            unclaimed /= cpus as f64;
        }
        self.stats.avg_draining_badput = badput;
        self.stats.avg_draining_unclaimed = unclaimed;
    }

    /// The daemon ad (`MyType = "Defrag"`) with the figures HTCondor
    /// publishes: the statistics and the recent drains and cancels.
    pub fn ad(&self, now: i64) -> ClassAd {
        let s = &self.stats;
        let mut ad = ClassAd::new();
        ad.insert_value("MyType", "Defrag");
        ad.insert_value("Name", self.policy.name.as_str());
        let window = 10 * self.policy.interval.max(1);
        let recent: Vec<_> = self.recent.iter().filter(|r| r.0 > now - window).collect();
        ad.insert_value("DrainSuccesses", s.drain_successes);
        ad.insert_value(
            "RecentDrainSuccesses",
            recent.iter().map(|r| r.1).sum::<i64>(),
        );
        ad.insert_value("DrainFailures", s.drain_failures);
        ad.insert_value(
            "RecentDrainFailures",
            recent.iter().map(|r| r.2).sum::<i64>(),
        );
        ad.insert_value("MachinesDraining", s.machines_draining);
        ad.insert_value("MachinesDrainingPeak", s.machines_draining_peak);
        ad.insert_value("WholeMachines", s.whole_machines);
        ad.insert_value("WholeMachinesPeak", s.whole_machines_peak);
        ad.insert_value("AvgDrainingBadput", s.avg_draining_badput);
        ad.insert_value("AvgDrainingUnclaimed", s.avg_draining_unclaimed);
        ad.insert_value("MeanDrainedArrival", s.mean_drained_arrival);
        ad.insert_value("MeanDrainedArrivalSD", s.mean_drained_arrival_sd);
        ad.insert_value("DrainedMachines", s.drained_machines);
        let drains: Vec<String> = self
            .drains_log
            .iter()
            .rev()
            .map(|(t, who, how)| format!("[ when = {t}; who = {who:?}; what = {:?} ]", how.name()))
            .collect();
        let cancels: Vec<String> = self
            .cancels_log
            .iter()
            .rev()
            .map(|(t, who)| format!("[ when = {t}; who = {who:?} ]"))
            .collect();
        let _ = ad.insert_expr("RecentDrainsList", &format!("{{ {} }}", drains.join(",")));
        let _ = ad.insert_expr("RecentCancelsList", &format!("{{ {} }}", cancels.join(",")));
        ad
    }
}

fn u_or_zero(v: &Value) -> f64 {
    v.as_number().unwrap_or(0.0)
}

/// HTCondor's `PartitionableSlot && Offline =!= True`.
fn base_slot(ad: &ClassAd, env: &Env) -> bool {
    ad.eval_attr("PartitionableSlot", env).as_bool() == Some(true)
        && !ad.eval_attr("Offline", env).is_true()
}

#[cfg(test)]
mod tests;
