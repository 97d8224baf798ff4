//! Job policy: the periodic expressions (`PeriodicHold`, `PeriodicRelease`,
//! `PeriodicRemove`, their pool-wide `SYSTEM_PERIODIC_*` twins) and the exit
//! expressions (`OnExitHold`, `OnExitRemove`), evaluated as HTCondor's
//! `UserPolicy` evaluates them (`src/condor_utils/user_job_policy.cpp`).
//!
//! The rules that matter, and that users rely on:
//! - Order: `TimerRemove`, then `PeriodicHold` (unless held), then
//!   `PeriodicRelease` (only if held), then `PeriodicRemove`; at exit, then
//!   `OnExitHold`, then `OnExitRemove`. The first that fires wins.
//! - A job's own expression fires when it evaluates to a non-zero number or
//!   `true`. When it evaluates to anything else (UNDEFINED, ERROR, a
//!   string) it also "fires", as undefined: the job is held with code 5
//!   (`JobPolicyUndefined`), because HTCondor would rather stop a job than
//!   guess what a broken policy meant. A job expression written as the
//!   literal `undefined` is simply false.
//! - A `SYSTEM_PERIODIC_*` expression is only looked at when the job's own
//!   expression did not fire, and it fires only on true: an undefined
//!   system expression does nothing (HTCondor gave up code 27 for that).
//!   A system expression that is literally `false`/`0` is ignored.
//! - The reason comes from `<Attr>Reason`/`<Attr>SubCode` (job) or
//!   `SYSTEM_PERIODIC_<X>_REASON`/`_SUBCODE` (configuration) when they give
//!   a non-empty string; otherwise HTCondor's sentence: `The job attribute
//!   PeriodicHold expression '...' evaluated to TRUE`.
//!
//! Pure: the caller passes the job ad, its status and an [`Env`] with
//! `now`; nothing is changed here (the queue applies the decision).

use classad::unparse::expr_to_old_syntax;
use classad::{eval_expr, ClassAd, Env, Expr, Value};
use config::{Config, ParamError};

use crate::job::{attr, HoldCode, JobStatus};

/// What a policy expression decided.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PolicyAction {
    Hold {
        reason: String,
        code: HoldCode,
        subcode: i64,
    },
    Release {
        reason: String,
    },
    Remove {
        reason: String,
    },
}

/// What the exit policy decided for a job that exited.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExitDecision {
    /// `OnExitRemove` was true (or absent): the job is done.
    Complete,
    /// `OnExitRemove` was false: the job goes back to idle to run again.
    Requeue { reason: String },
    /// A hold fired (`OnExitHold`, `PeriodicHold`, or an undefined policy).
    Hold {
        reason: String,
        code: HoldCode,
        subcode: i64,
    },
    /// `PeriodicRemove` (or `TimerRemove`) fired as the job exited.
    Remove { reason: String },
}

/// One pool-wide expression with its optional reason and subcode.
#[derive(Clone, Debug)]
struct SystemExpr {
    /// The parameter name (`SYSTEM_PERIODIC_HOLD`), as the reason names it.
    name: &'static str,
    expr: Expr,
    reason: Option<Expr>,
    subcode: Option<Expr>,
}

/// The schedd's `SYSTEM_PERIODIC_HOLD`, `_RELEASE` and `_REMOVE`, with their
/// `_REASON` and `_SUBCODE`, read once per (re)configuration.
#[derive(Clone, Debug, Default)]
pub struct SystemPolicy {
    hold: Option<SystemExpr>,
    release: Option<SystemExpr>,
    remove: Option<SystemExpr>,
}

impl SystemPolicy {
    /// No pool-wide policy.
    pub fn none() -> SystemPolicy {
        SystemPolicy::default()
    }

    /// Reads the pool-wide expressions. A parameter that is not a ClassAd
    /// expression is an error naming it and where it was set.
    pub fn from_config(config: &Config) -> Result<SystemPolicy, ParamError> {
        Ok(SystemPolicy {
            hold: system_expr(
                "SYSTEM_PERIODIC_HOLD",
                config.expression("SYSTEM_PERIODIC_HOLD")?,
                config.expression("SYSTEM_PERIODIC_HOLD_REASON")?,
                config.expression("SYSTEM_PERIODIC_HOLD_SUBCODE")?,
            ),
            release: system_expr(
                "SYSTEM_PERIODIC_RELEASE",
                config.expression("SYSTEM_PERIODIC_RELEASE")?,
                config.expression("SYSTEM_PERIODIC_RELEASE_REASON")?,
                config.expression("SYSTEM_PERIODIC_RELEASE_SUBCODE")?,
            ),
            remove: system_expr(
                "SYSTEM_PERIODIC_REMOVE",
                config.expression("SYSTEM_PERIODIC_REMOVE")?,
                config.expression("SYSTEM_PERIODIC_REMOVE_REASON")?,
                config.expression("SYSTEM_PERIODIC_REMOVE_SUBCODE")?,
            ),
        })
    }
}

fn system_expr(
    name: &'static str,
    expr: Option<Expr>,
    reason: Option<Expr>,
    subcode: Option<Expr>,
) -> Option<SystemExpr> {
    let expr = expr?;
    // HTCondor drops a system expression that is a literal false or zero,
    // so the common `SYSTEM_PERIODIC_HOLD = false` costs nothing.
    if let Expr::Lit(v) = &expr {
        if v.as_number() == Some(0.0) {
            return None;
        }
    }
    Some(SystemExpr {
        name,
        expr,
        reason,
        subcode,
    })
}

/// Which kind of action a policy expression asks for when it fires.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Hold,
    Release,
    Remove,
}

/// Where the expression that fired came from; it picks the hold code and
/// the wording of the reason.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Source {
    Job,
    System,
}

/// An expression that fired: HTCondor's `m_fire_*` state.
struct Fired {
    kind: Kind,
    source: Source,
    /// The attribute (`PeriodicHold`) or parameter (`SYSTEM_PERIODIC_HOLD`).
    name: String,
    /// Its unparsed text, for the default reason.
    text: String,
    /// `Some(true)` fired true, `Some(false)` evaluated false (only for a
    /// requeue by `OnExitRemove`), `None` evaluated to something that is
    /// not a number (UNDEFINED).
    value: Option<bool>,
    reason: String,
    subcode: i64,
}

impl Fired {
    /// The reason, code and subcode HTCondor records for this firing
    /// (`UserPolicy::FiringReason`).
    fn explain(&self) -> (String, HoldCode, i64) {
        let (code, subcode) = match (self.source, self.value) {
            (Source::Job, None) => (HoldCode::JOB_POLICY_UNDEFINED, 0),
            (Source::Job, Some(_)) => (HoldCode::JOB_POLICY, self.subcode),
            (Source::System, None) => (HoldCode::SYSTEM_POLICY_UNDEFINED, 0),
            (Source::System, Some(_)) => (HoldCode::SYSTEM_POLICY, self.subcode),
        };
        if !self.reason.is_empty() && self.value.is_some() {
            return (self.reason.clone(), code, subcode);
        }
        let source = match self.source {
            Source::Job => "job attribute",
            Source::System => "system macro",
        };
        let value = match self.value {
            Some(true) => "TRUE",
            Some(false) => "FALSE",
            None => "UNDEFINED",
        };
        (
            format!(
                "The {source} {} expression '{}' evaluated to {value}",
                self.name, self.text
            ),
            code,
            subcode,
        )
    }

    fn action(&self) -> PolicyAction {
        let (reason, code, subcode) = self.explain();
        // An undefined expression holds the job whatever it was meant to do.
        if self.value.is_none() {
            return PolicyAction::Hold {
                reason,
                code,
                subcode,
            };
        }
        match self.kind {
            Kind::Hold => PolicyAction::Hold {
                reason,
                code,
                subcode,
            },
            Kind::Release => PolicyAction::Release { reason },
            Kind::Remove => PolicyAction::Remove { reason },
        }
    }
}

/// A value as HTCondor's `Value::IsNumber(long long&)` reads it: booleans
/// and numbers, reals truncated toward zero (so `0.5` is false).
fn as_policy_number(v: &Value) -> Option<i64> {
    match v {
        Value::Bool(b) => Some(*b as i64),
        Value::Int(i) => Some(*i),
        Value::Real(r) if r.is_finite() => Some(r.trunc() as i64),
        _ => None,
    }
}

fn is_literal_undefined(e: &Expr) -> bool {
    match e {
        Expr::Lit(Value::Undefined) => true,
        Expr::Paren(inner) => is_literal_undefined(inner),
        _ => false,
    }
}

/// Evaluates the job's own expression `name` (HTCondor's
/// `AnalyzeSinglePeriodicPolicy` on a job attribute).
fn job_expr(job: &ClassAd, name: &str, kind: Kind, env: &Env) -> Option<Fired> {
    let expr = job.get(name)?;
    let v = eval_expr(expr, Some(job), None, env);
    let value = match as_policy_number(&v) {
        Some(0) => return None,
        Some(_) => Some(true),
        None if is_literal_undefined(expr) => return None,
        None => None,
    };
    let (mut reason, mut subcode) = (String::new(), 0);
    if value.is_some() {
        if let Some(n) = as_policy_number(&job.eval_attr(&format!("{name}SubCode"), env)) {
            subcode = n;
        }
        if let Value::Str(s) = job.eval_attr(&format!("{name}Reason"), env) {
            reason = s.to_string();
        }
    }
    Some(Fired {
        kind,
        source: Source::Job,
        name: name.to_string(),
        text: expr_to_old_syntax(expr),
        value,
        reason,
        subcode,
    })
}

/// Evaluates a pool-wide expression: it fires only on true.
fn system(job: &ClassAd, sys: &SystemExpr, kind: Kind, env: &Env) -> Option<Fired> {
    let v = eval_expr(&sys.expr, Some(job), None, env);
    if !matches!(as_policy_number(&v), Some(n) if n != 0) {
        return None;
    }
    let mut subcode = 0;
    if let Some(e) = &sys.subcode {
        if let Some(n) = as_policy_number(&eval_expr(e, Some(job), None, env)) {
            subcode = n;
        }
    }
    let mut reason = String::new();
    if let Some(e) = &sys.reason {
        if let Value::Str(s) = eval_expr(e, Some(job), None, env) {
            reason = s.to_string();
        }
    }
    Some(Fired {
        kind,
        source: Source::System,
        name: sys.name.to_string(),
        text: expr_to_old_syntax(&sys.expr),
        value: Some(true),
        reason,
        subcode,
    })
}

fn single(
    job: &ClassAd,
    name: &str,
    sys: Option<&SystemExpr>,
    kind: Kind,
    env: &Env,
) -> Option<Fired> {
    job_expr(job, name, kind, env).or_else(|| sys.and_then(|s| system(job, s, kind, env)))
}

/// `TimerRemove`: an epoch time after which the job is removed.
fn timer_remove(job: &ClassAd, env: &Env) -> Option<Fired> {
    let expr = job.get(attr::TIMER_REMOVE)?;
    let text = expr_to_old_syntax(expr);
    let fired = |value| Fired {
        kind: Kind::Remove,
        source: Source::Job,
        name: attr::TIMER_REMOVE.to_string(),
        text: text.clone(),
        value,
        reason: String::new(),
        subcode: 0,
    };
    match job.eval_attr(attr::TIMER_REMOVE, env) {
        Value::Int(t) if t >= 0 && t < env.now => Some(fired(Some(true))),
        Value::Int(_) => None,
        _ => Some(fired(None)),
    }
}

fn periodic_fired(
    job: &ClassAd,
    status: JobStatus,
    system: &SystemPolicy,
    env: &Env,
) -> Option<Fired> {
    if let Some(f) = timer_remove(job, env) {
        return Some(f);
    }
    if status != JobStatus::Held {
        if let Some(f) = single(
            job,
            attr::PERIODIC_HOLD,
            system.hold.as_ref(),
            Kind::Hold,
            env,
        ) {
            return Some(f);
        }
    } else if let Some(f) = single(
        job,
        attr::PERIODIC_RELEASE,
        system.release.as_ref(),
        Kind::Release,
        env,
    ) {
        return Some(f);
    }
    single(
        job,
        attr::PERIODIC_REMOVE,
        system.remove.as_ref(),
        Kind::Remove,
        env,
    )
}

/// The periodic policy for a job in `status`: `None` when the job stays as
/// it is. A decision that would not change anything (hold a held job,
/// release a job that is not held) is also `None`, as the schedd ignores it.
pub fn periodic(
    job: &ClassAd,
    status: JobStatus,
    system: &SystemPolicy,
    env: &Env,
) -> Option<PolicyAction> {
    let action = periodic_fired(job, status, system, env)?.action();
    let held = status == JobStatus::Held;
    match &action {
        PolicyAction::Hold { .. } if held => None,
        PolicyAction::Release { .. } if !held => None,
        PolicyAction::Remove { .. } if status == JobStatus::Removed => None,
        _ => Some(action),
    }
}

/// The policy when a job exits (the shadow's `PERIODIC_THEN_EXIT`): the
/// periodic expressions first, then `OnExitHold`, then `OnExitRemove`. The
/// job ad must already hold the exit (`ExitCode` or `ExitSignal`,
/// `ExitBySignal`) and the updated `RemoteWallClockTime`.
pub fn at_exit(job: &ClassAd, system: &SystemPolicy, env: &Env) -> ExitDecision {
    let from = |f: Fired| match f.action() {
        PolicyAction::Hold {
            reason,
            code,
            subcode,
        } => ExitDecision::Hold {
            reason,
            code,
            subcode,
        },
        PolicyAction::Remove { reason } => ExitDecision::Remove { reason },
        // A running job is not held, so release cannot fire here.
        PolicyAction::Release { .. } => ExitDecision::Complete,
    };
    if let Some(f) = periodic_fired(job, JobStatus::Running, system, env) {
        return from(f);
    }
    if let Some(f) = single(job, attr::ON_EXIT_HOLD, None, Kind::Hold, env) {
        return from(f);
    }
    let Some(expr) = job.get(attr::ON_EXIT_REMOVE) else {
        // No OnExitRemove: a job that exits is done.
        return ExitDecision::Complete;
    };
    if let Some(f) = single(job, attr::ON_EXIT_REMOVE, None, Kind::Remove, env) {
        return match f.value {
            Some(_) => ExitDecision::Complete,
            None => from(f),
        };
    }
    // OnExitRemove is false: the job stays in the queue to run again.
    let requeue = Fired {
        kind: Kind::Remove,
        source: Source::Job,
        name: attr::ON_EXIT_REMOVE.to_string(),
        text: expr_to_old_syntax(expr),
        value: Some(false),
        reason: String::new(),
        subcode: 0,
    };
    ExitDecision::Requeue {
        reason: requeue.explain().0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ad(text: &str) -> ClassAd {
        ClassAd::parse(text).unwrap()
    }

    fn env() -> Env {
        Env::at(1_000_000)
    }

    #[test]
    fn periodic_hold_true_holds_with_code_3_and_htcondors_sentence() {
        let job = ad("[ PeriodicHold = NumJobStarts > 2; NumJobStarts = 3 ]");
        assert_eq!(
            periodic(&job, JobStatus::Idle, &SystemPolicy::none(), &env()),
            Some(PolicyAction::Hold {
                reason:
                    "The job attribute PeriodicHold expression 'NumJobStarts > 2' evaluated to TRUE"
                        .into(),
                code: HoldCode::JOB_POLICY,
                subcode: 0
            })
        );
    }

    #[test]
    fn undefined_periodic_remove_holds_with_code_5() {
        let job = ad("[ PeriodicRemove = NoSuchAttr > 2 ]");
        assert_eq!(
            periodic(&job, JobStatus::Idle, &SystemPolicy::none(), &env()),
            Some(PolicyAction::Hold {
                reason: "The job attribute PeriodicRemove expression 'NoSuchAttr > 2' evaluated to UNDEFINED"
                    .into(),
                code: HoldCode::JOB_POLICY_UNDEFINED,
                subcode: 0
            })
        );
    }

    #[test]
    fn literal_undefined_is_false_and_reals_truncate() {
        let job = ad("[ PeriodicHold = undefined; PeriodicRemove = 0.5 ]");
        assert_eq!(
            periodic(&job, JobStatus::Idle, &SystemPolicy::none(), &env()),
            None
        );
    }

    #[test]
    fn reason_and_subcode_attributes_replace_the_sentence() {
        let job = ad(
            "[ PeriodicHold = true; PeriodicHoldReason = strcat(\"too \", \"long\"); PeriodicHoldSubCode = 42 ]",
        );
        assert_eq!(
            periodic(&job, JobStatus::Running, &SystemPolicy::none(), &env()),
            Some(PolicyAction::Hold {
                reason: "too long".into(),
                code: HoldCode::JOB_POLICY,
                subcode: 42
            })
        );
    }

    #[test]
    fn release_is_only_for_held_jobs_and_hold_only_for_others() {
        let job = ad("[ PeriodicHold = true; PeriodicRelease = true ]");
        let sys = SystemPolicy::none();
        assert!(matches!(
            periodic(&job, JobStatus::Held, &sys, &env()),
            Some(PolicyAction::Release { .. })
        ));
        assert!(matches!(
            periodic(&job, JobStatus::Idle, &sys, &env()),
            Some(PolicyAction::Hold { .. })
        ));
    }

    #[test]
    fn timer_remove_fires_once_its_time_has_passed() {
        let job = ad("[ TimerRemove = 999999 ]");
        assert_eq!(
            periodic(&job, JobStatus::Idle, &SystemPolicy::none(), &env()),
            Some(PolicyAction::Remove {
                reason: "The job attribute TimerRemove expression '999999' evaluated to TRUE"
                    .into()
            })
        );
        let later = ad("[ TimerRemove = 1000001 ]");
        assert_eq!(
            periodic(&later, JobStatus::Idle, &SystemPolicy::none(), &env()),
            None
        );
    }

    #[test]
    fn exit_policy_order_and_defaults() {
        let sys = SystemPolicy::none();
        assert_eq!(
            at_exit(&ad("[ ExitCode = 0 ]"), &sys, &env()),
            ExitDecision::Complete
        );
        assert_eq!(
            at_exit(
                &ad("[ ExitCode = 1; OnExitRemove = ExitCode == 0 ]"),
                &sys,
                &env()
            ),
            ExitDecision::Requeue {
                reason:
                    "The job attribute OnExitRemove expression 'ExitCode == 0' evaluated to FALSE"
                        .into()
            }
        );
        assert_eq!(
            at_exit(
                &ad("[ ExitCode = 1; OnExitHold = ExitCode != 0; OnExitHoldReason = \"bad exit\"; OnExitHoldSubCode = ExitCode ]"),
                &sys,
                &env()
            ),
            ExitDecision::Hold {
                reason: "bad exit".into(),
                code: HoldCode::JOB_POLICY,
                subcode: 1
            }
        );
        assert_eq!(
            at_exit(&ad("[ ExitCode = 1; OnExitRemove = Nope ]"), &sys, &env()),
            ExitDecision::Hold {
                reason: "The job attribute OnExitRemove expression 'Nope' evaluated to UNDEFINED"
                    .into(),
                code: HoldCode::JOB_POLICY_UNDEFINED,
                subcode: 0
            }
        );
    }
}
