//! The pool's administrative side: the slot ads for `condor_status`,
//! commands to the execute point (`condor_vacate`, `condor_drain`), the
//! accountant's table (`condor_userprio`) and reading the configuration
//! again (`condor_reconfig`). Each is carried out by the role that owns
//! it; this module only translates requests.

use negotiator::accountant::Accountant;
use negotiator::collector::{self, AdType};
use negotiator::cycle::Policy;
use negotiator::limits::ConcurrencyLimits;
use startd::{DrainHow, Event};
use wire::api::{
    self, SlotsAnswer, SlotsRequest, StartdAnswer, StartdCommand, UserprioAnswer, UserprioRequest,
    UserprioRow,
};

use crate::execute::StartdRole;
use crate::negotiator_role::NegotiatorRole;
use crate::roles::Outbox;
use crate::schedd_service::{ad_text, parse_constraint, ApiError, Budget, PoolConfig};

/// The status of a drain refused because its CheckExpr does not hold in
/// every slot (HTTP's Conflict: the request was well formed, the
/// machine's state refused it).
pub const DRAIN_CHECK_FAILED: u16 = 409;

/// A query of the collector's ads, evaluated without the pool's lock.
pub struct SlotsQuery {
    req: SlotsRequest,
    now: i64,
    ads: Vec<classad::ClassAd>,
}

impl SlotsQuery {
    /// The ads of the type `req` asks for (slots by default), from the
    /// collector's copy.
    pub fn new(
        req: SlotsRequest,
        now: i64,
        ads: impl FnOnce(&AdType) -> Vec<classad::ClassAd>,
    ) -> SlotsQuery {
        let ad_type = match req.ad_type.as_deref() {
            None => AdType::Startd,
            Some(t) => AdType::from_my_type(t),
        };
        let ads = ads(&ad_type);
        SlotsQuery { req, now, ads }
    }

    /// The ads the constraint selects, projected; refused once `budget`
    /// runs out.
    pub fn run(self, budget: &Budget) -> Result<SlotsAnswer, ApiError> {
        let constraint = parse_constraint(self.req.constraint.as_deref())?;
        let projection: Vec<&str> = self.req.projection.iter().map(String::as_str).collect();
        let env = classad::Env::at(self.now);
        let of = Some(self.ads.len());
        let mut ads = Vec::new();
        for (i, ad) in self.ads.iter().enumerate() {
            budget.check(i, of)?;
            if constraint
                .as_ref()
                .is_none_or(|c| collector::constraint_holds(c, ad, &env))
            {
                ads.push(ad_text(&collector::project(ad, &projection)));
            }
        }
        Ok(SlotsAnswer { ads })
    }
}

/// A configuration read again, for `condor_reconfig`.
pub struct Reloaded {
    pub pool: PoolConfig,
    pub startd: config::Config,
    pub negotiator: config::Config,
    pub collector: config::Config,
}

impl Reloaded {
    /// The view collectors the new configuration names for the
    /// collector, and which ads go to them.
    pub fn collector_view(
        &self,
    ) -> Result<(Vec<String>, Vec<negotiator::collector::AdType>), String> {
        crate::pool_history::view_settings(&self.collector)
    }
}

impl StartdRole {
    /// `condor_vacate` and `condor_drain`, through the startd engine.
    pub fn startd_command(
        &mut self,
        cmd: StartdCommand,
        now: i64,
    ) -> Result<StartdAnswer, ApiError> {
        let (event, message) = match cmd {
            StartdCommand::Vacate { slot, fast } => {
                if let Some(s) = &slot {
                    if !self.has_slot(s) {
                        return Err(ApiError::bad_request(format!(
                            "there is no slot {s} on this machine"
                        )));
                    }
                }
                let what = slot.clone().unwrap_or_else(|| "every slot".into());
                (
                    Event::Vacate { slot, fast },
                    format!(
                        "{} the job on {what}",
                        if fast { "killed" } else { "vacating" }
                    ),
                )
            }
            StartdCommand::Drain {
                how,
                resume_on_completion,
                start,
                reason,
                check,
            } => {
                if let Some(t) = check {
                    let check = classad::parse_expr(&t).map_err(|e| {
                        ApiError::bad_request(format!(
                            "the check expression does not parse: {}",
                            e.display_with_source("<check>")
                        ))
                    })?;
                    // 409: the request was fine, the machine's state
                    // refused it (HTCondor's DRAINING_CHECK_EXPR_FAILED,
                    // which the command port answers).
                    self.drain_check(&check, now).map_err(|why| ApiError {
                        status: DRAIN_CHECK_FAILED,
                        message: format!("the execute point refused: {why}"),
                    })?;
                }
                let start_expr = match start {
                    Some(t) => Some(classad::parse_expr(&t).map_err(|e| {
                        ApiError::bad_request(format!(
                            "the start expression does not parse: {}",
                            e.display_with_source("<start>")
                        ))
                    })?),
                    None => None,
                };
                let how = match how {
                    api::DrainHow::Graceful => DrainHow::Graceful,
                    api::DrainHow::Quick => DrainHow::Quick,
                    api::DrainHow::Fast => DrainHow::Fast,
                };
                (
                    Event::Drain {
                        how,
                        resume_on_completion,
                        start_expr,
                        reason: reason.unwrap_or_else(|| "by command".into()),
                    },
                    "draining".to_string(),
                )
            }
            StartdCommand::CancelDrain => (Event::CancelDrain, "draining cancelled".to_string()),
        };
        self.startd_event(event, now).map_err(|e| {
            // A refusal about no one slot reads `: why`.
            let why = e.strip_prefix(": ").unwrap_or(&e);
            ApiError::bad_request(format!("the execute point refused: {why}"))
        })?;
        Ok(StartdAnswer {
            message: format!("{}: {message}", self.hostname()),
            machine: self.hostname().to_string(),
        })
    }
}

impl NegotiatorRole {
    /// The accountant's table, after the changes `req` asks for.
    pub fn userprio(
        &mut self,
        req: &UserprioRequest,
        now: i64,
        out: &mut Outbox,
    ) -> UserprioAnswer {
        let acc = self.accountant_mut();
        if let Some((who, f)) = &req.set_factor {
            acc.set_factor(who, *f);
        }
        if let Some((who, p)) = &req.set_priority {
            acc.set_priority(who, *p);
        }
        if let Some(who) = &req.reset_usage {
            acc.reset_usage(who, now);
        }
        acc.update_priorities(now);
        self.save_accountant(out);
        let acc: &Accountant = self.accountant();
        let rows = acc
            .records()
            .map(|r| UserprioRow {
                name: r.name.clone(),
                effective_priority: acc.effective_priority(&r.name),
                real_priority: acc.real_priority(&r.name),
                priority_factor: acc.priority_factor(&r.name),
                resources_used: r.weighted_resources_used,
                accumulated_usage_hours: r.weighted_accumulated_usage / 3600.0,
                begin_usage_time: r.begin_usage_time,
                last_usage_time: r.last_usage_time,
                is_group: acc.group_of(&r.name).eq_ignore_ascii_case(&r.name),
            })
            .collect();
        UserprioAnswer {
            last_update: acc.last_update(),
            rows,
        }
    }
}

/// The central manager's part of a configuration read again, checked
/// before any role takes any of it.
pub struct CentralManagerConfig {
    pub policy: Policy,
    pub accountant: Accountant,
    pub limits: ConcurrencyLimits,
}

impl Reloaded {
    /// The negotiator's new policy, accountant settings and limits, or
    /// why the configuration is refused.
    pub fn central_manager(&self) -> Result<CentralManagerConfig, ApiError> {
        let bad = |what: &str, e: String| {
            ApiError::bad_request(format!("the configuration was not changed: {what}: {e}"))
        };
        Ok(CentralManagerConfig {
            policy: Policy::from_config(&self.negotiator)
                .map_err(|e| bad("negotiator", e.to_string()))?,
            accountant: Accountant::from_config(&self.negotiator)
                .map_err(|e| bad("accountant", e.to_string()))?,
            limits: ConcurrencyLimits::from_config(&self.negotiator)
                .map_err(|e| bad("concurrency limits", e.to_string()))?,
        })
    }
}
