//! The schedd's submit policy: the job transforms (see [`crate::transform`])
//! and the submit requirements (`SUBMIT_REQUIREMENT_NAMES`,
//! `SUBMIT_REQUIREMENT_<Name>`, `_REASON`, `_IS_WARNING`), which refuse
//! jobs, or warn about them, as they enter the queue.
//!
//! From the manual ("condor_schedd Policy Configuration"): requirements are
//! evaluated in the listed order with the schedd's ad as MY and the job as
//! TARGET; the first that is not true refuses the submission (the whole
//! cluster) and is the only one reported; a requirement marked
//! `_IS_WARNING` does not refuse and does not stop the evaluation, and the
//! last warning that failed is reported (to the submitter, and in the
//! job's submit event). The reason is `SUBMIT_REQUIREMENT_<Name>_REASON`,
//! an expression evaluated in the same context that should give a string.
//! The transforms run first, so a transform can bring a job into line.

use std::fmt;

use classad::{eval_expr, ClassAd, Env, Expr, Value};
use config::{Config, ParamError};

use crate::transform::{TransformError, Transforms};

/// One submit requirement.
#[derive(Clone, Debug)]
pub struct SubmitRequirement {
    pub name: String,
    pub expr: Expr,
    pub reason: Option<Expr>,
    pub is_warning: bool,
}

/// The submit requirements, in `SUBMIT_REQUIREMENT_NAMES` order.
#[derive(Clone, Debug, Default)]
pub struct SubmitRequirements(pub Vec<SubmitRequirement>);

/// Why a submission was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SubmitRefused {
    /// A submit requirement was not met: its name and the reason.
    Requirement { name: String, reason: String },
    /// The job ads themselves are not a valid submission.
    Malformed(String),
}

impl fmt::Display for SubmitRefused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SubmitRefused::Requirement { reason, .. } => f.write_str(reason),
            SubmitRefused::Malformed(why) => write!(f, "invalid submission: {why}"),
        }
    }
}

impl std::error::Error for SubmitRefused {}

/// A submit policy that cannot be read from the configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PolicyError {
    Param(ParamError),
    Transform(TransformError),
    /// `SUBMIT_REQUIREMENT_NAMES` lists a name with no expression.
    Undefined(String),
}

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PolicyError::Param(e) => e.fmt(f),
            PolicyError::Transform(e) => e.fmt(f),
            PolicyError::Undefined(name) => write!(
                f,
                "SUBMIT_REQUIREMENT_NAMES lists {name}, but SUBMIT_REQUIREMENT_{name} is not defined"
            ),
        }
    }
}

impl std::error::Error for PolicyError {}

impl From<ParamError> for PolicyError {
    fn from(e: ParamError) -> PolicyError {
        PolicyError::Param(e)
    }
}

impl From<TransformError> for PolicyError {
    fn from(e: TransformError) -> PolicyError {
        PolicyError::Transform(e)
    }
}

impl SubmitRequirements {
    pub fn from_config(config: &Config) -> Result<SubmitRequirements, PolicyError> {
        let mut list = Vec::new();
        for name in config.list("SUBMIT_REQUIREMENT_NAMES")? {
            let expr = config
                .expression(&format!("SUBMIT_REQUIREMENT_{name}"))?
                .ok_or_else(|| PolicyError::Undefined(name.clone()))?;
            let reason = config.expression(&format!("SUBMIT_REQUIREMENT_{name}_REASON"))?;
            let is_warning = config
                .boolean(&format!("SUBMIT_REQUIREMENT_{name}_IS_WARNING"))?
                .unwrap_or(false);
            list.push(SubmitRequirement {
                name,
                expr,
                reason,
                is_warning,
            });
        }
        Ok(SubmitRequirements(list))
    }

    /// Checks one job (TARGET) against the requirements, with the schedd's
    /// ad as MY. `Ok(Some(warning))` when only warnings failed.
    pub fn check(
        &self,
        job: &ClassAd,
        schedd: &ClassAd,
        env: &Env,
    ) -> Result<Option<String>, SubmitRefused> {
        let mut warning = None;
        for r in &self.0 {
            if eval_expr(&r.expr, Some(schedd), Some(job), env).is_true() {
                continue;
            }
            let reason = r
                .reason
                .as_ref()
                .and_then(|e| match eval_expr(e, Some(schedd), Some(job), env) {
                    Value::Str(s) if !s.is_empty() => Some(s.to_string()),
                    _ => None,
                })
                .unwrap_or_else(|| format!("Submit requirement {} evaluated to non-true.", r.name));
            if r.is_warning {
                warning = Some(reason);
                continue;
            }
            return Err(SubmitRefused::Requirement {
                name: r.name.clone(),
                reason,
            });
        }
        Ok(warning)
    }
}

/// Everything the schedd applies to a submission.
#[derive(Clone, Debug, Default)]
pub struct SubmitPolicy {
    pub transforms: Transforms,
    pub requirements: SubmitRequirements,
}

impl SubmitPolicy {
    /// No transforms, no requirements.
    pub fn none() -> SubmitPolicy {
        SubmitPolicy::default()
    }

    pub fn from_config(config: &Config) -> Result<SubmitPolicy, PolicyError> {
        Ok(SubmitPolicy {
            transforms: Transforms::from_config(config)?,
            requirements: SubmitRequirements::from_config(config)?,
        })
    }
}
