//! Who may act on a job: its owner (the job's `Owner`), and the queue super
//! users (`QUEUE_SUPER_USERS`, by default `root, condor`), who may act on
//! every job. Everyone else is refused, and the refusal says why.
//!
//! Names are compared as HTCondor compares Unix user names: exactly. A
//! fully qualified name (`alice@example.org`) matches by its user part,
//! since `Owner` holds only that.

use std::fmt;

use classad::{ClassAd, Expr, Value};
use config::{Config, ParamError};

use crate::job::{attr, JobId};

/// The queue super users.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SuperUsers(Vec<String>);

impl SuperUsers {
    pub fn new(names: impl IntoIterator<Item = impl Into<String>>) -> SuperUsers {
        SuperUsers(names.into_iter().map(Into::into).collect())
    }

    /// `QUEUE_SUPER_USERS` (HTCondor's default: `root, condor`).
    pub fn from_config(config: &Config) -> Result<SuperUsers, ParamError> {
        Ok(SuperUsers(config.list("QUEUE_SUPER_USERS")?))
    }

    pub fn contains(&self, user: &str) -> bool {
        let user = user_part(user);
        self.0.iter().any(|s| user_part(s) == user)
    }

    pub fn names(&self) -> &[String] {
        &self.0
    }
}

impl Default for SuperUsers {
    fn default() -> SuperUsers {
        SuperUsers::new(["root", "condor"])
    }
}

fn user_part(name: &str) -> &str {
    name.split('@').next().unwrap_or(name)
}

/// Why a user may not act on a job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    pub user: String,
    pub job: JobId,
    /// What was asked: `hold`, `release`, `remove`, `modify`.
    pub action: String,
    /// The job's owner, when it has one.
    pub owner: Option<String>,
    pub super_users: Vec<String>,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let supers = if self.super_users.is_empty() {
            "no queue super users are configured".to_string()
        } else {
            format!(
                "the queue super users (QUEUE_SUPER_USERS) are {}",
                self.super_users.join(", ")
            )
        };
        match &self.owner {
            Some(owner) => write!(
                f,
                "permission denied: {} may not {} job {}, which belongs to {owner}; only its owner and the queue super users may ({supers})",
                self.user, self.action, self.job
            ),
            None => write!(
                f,
                "permission denied: {} may not {} job {}: it has no Owner, so only the queue super users may ({supers})",
                self.user, self.action, self.job
            ),
        }
    }
}

impl std::error::Error for Refusal {}

/// The job's owner, as its `Owner` attribute says.
pub fn owner_of(job: &ClassAd) -> Option<String> {
    match job.get(attr::OWNER)? {
        Expr::Lit(Value::Str(s)) => Some(s.to_string()),
        _ => None,
    }
}

/// Whether `user` may `action` job `id`.
pub fn may_act(
    user: &str,
    id: JobId,
    job: &ClassAd,
    super_users: &SuperUsers,
    action: &str,
) -> Result<(), Refusal> {
    let owner = owner_of(job);
    if super_users.contains(user) || owner.as_deref() == Some(user_part(user)) {
        return Ok(());
    }
    Err(Refusal {
        user: user.to_string(),
        job: id,
        action: action.to_string(),
        owner,
        super_users: super_users.names().to_vec(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owners_and_super_users_may_others_may_not() {
        let job = ClassAd::parse("[ Owner = \"alice\" ]").unwrap();
        let su = SuperUsers::default();
        let id = JobId::new(7, 0);
        assert!(may_act("alice", id, &job, &su, "remove").is_ok());
        assert!(may_act("alice@example.org", id, &job, &su, "remove").is_ok());
        assert!(may_act("condor", id, &job, &su, "remove").is_ok());
        let no = may_act("bob", id, &job, &su, "remove").unwrap_err();
        assert_eq!(
            no.to_string(),
            "permission denied: bob may not remove job 7.0, which belongs to alice; only its owner and the queue super users may (the queue super users (QUEUE_SUPER_USERS) are root, condor)"
        );
    }
}
