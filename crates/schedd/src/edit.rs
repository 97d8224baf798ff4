//! Editing jobs already in the queue (HTCondor's `condor_qedit`,
//! `Schedd.edit`, the job-queue protocol's SetAttribute on a committed
//! job and SetAttributeByConstraint): who may change which attribute of
//! which job, decided per job with HTCondor's rules, in HTCondor's order
//! (its `ModifyAttrCheck` and `SetAttribute` in `qmgmt.cpp`):
//!
//! 1. the attribute name must be a ClassAd name and the value must parse
//!    (EINVAL);
//! 2. a *secure* attribute (`SECURE_JOB_ATTRS`, `SYSTEM_SECURE_JOB_ATTRS`:
//!    proxy and token facts, `TotalSubmitProcs`, `OsUser`) is the schedd's
//!    own: an attempt to set one is quietly ignored
//!    (`IGNORE_ATTEMPTS_TO_SET_SECURE_JOB_ATTRS`, the default) or refused;
//! 3. the job must be in the queue (ENOENT);
//! 4. the caller must own it or be a queue super user (EACCES);
//! 5. an *immutable* attribute (`IMMUTABLE_JOB_ATTRS`,
//!    `SYSTEM_IMMUTABLE_JOB_ATTRS`: `Owner ClusterId JobUniverse ProcId
//!    MyType TargetType User OsUser`) changes for no one (EACCES);
//! 6. a *protected* attribute (`PROTECTED_JOB_ATTRS`,
//!    `SYSTEM_PROTECTED_JOB_ATTRS`) only for a queue super user (EACCES);
//! 7. `JobStatus`: a removed job stays removed (EINVAL, as HTCondor); and
//!    since here the queue's state machine alone moves jobs between
//!    statuses (it keeps the claims, the run times and the event log
//!    right), any other change of status is refused too (EINVAL), with a
//!    pointer to `condor_hold`, `condor_release` and `condor_rm`.
//!
//! An edit names jobs (a proc of `-1` is the cluster's ad, which here is
//! every proc of the cluster) or a constraint, which selects the procs it
//! is true of. It is all or nothing: one refused job refuses the edit and
//! changes none. [`JobQueue::check_edit`] only decides;
//! [`JobQueue::edit`] decides and changes the ads in memory, returning a
//! [`Change`] per job for the daemon to store.

use std::fmt;

use classad::{ClassAd, Expr, Value};
use config::{Config, ParamError};

use crate::job::{attr, JobId, JobStatus};
use crate::queue::{status_of, Change, JobQueue};

pub const EINVAL: i64 = 22;
pub const EACCES: i64 = 13;
pub const ENOENT: i64 = 2;

/// HTCondor's `SYSTEM_IMMUTABLE_JOB_ATTRS` default.
pub const SYSTEM_IMMUTABLE: &str =
    "Owner ClusterId JobUniverse ProcId MyType TargetType User OsUser";

/// HTCondor's `SYSTEM_SECURE_JOB_ATTRS` default.
pub const SYSTEM_SECURE: &str = "x509userProxySubject x509UserProxyEmail x509UserProxyVOName \
     x509UserProxyFirstFQAN x509UserProxyFQAN TotalSubmitProcs AuthTokenSubject AuthTokenIssuer \
     AuthTokenGroups AuthTokenId AuthTokenScopes AuthTokenProject OsUser";

/// Which attributes an edit may not touch, from the configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EditRules {
    pub immutable: Vec<String>,
    pub protected: Vec<String>,
    pub secure: Vec<String>,
    /// `IGNORE_ATTEMPTS_TO_SET_SECURE_JOB_ATTRS`: a secure attribute is
    /// quietly left alone (true) or the edit refused (false).
    pub ignore_secure: bool,
}

fn words(s: &str) -> Vec<String> {
    s.split(|c: char| c.is_whitespace() || c == ',')
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect()
}

impl Default for EditRules {
    /// HTCondor's defaults.
    fn default() -> EditRules {
        EditRules {
            immutable: words(SYSTEM_IMMUTABLE),
            protected: Vec::new(),
            secure: words(SYSTEM_SECURE),
            ignore_secure: true,
        }
    }
}

impl EditRules {
    /// `[SYSTEM_]IMMUTABLE_JOB_ATTRS`, `[SYSTEM_]PROTECTED_JOB_ATTRS`,
    /// `[SYSTEM_]SECURE_JOB_ATTRS`, `IGNORE_ATTEMPTS_TO_SET_SECURE_JOB_ATTRS`
    /// (a `SYSTEM_` list the configuration does not define has HTCondor's
    /// default).
    pub fn from_config(config: &Config) -> Result<EditRules, ParamError> {
        let system = |name: &str, default: &str| -> Result<Vec<String>, ParamError> {
            Ok(match config.get(name)? {
                Some(_) => config.list(name)?,
                None => words(default),
            })
        };
        let mut immutable = config.list("IMMUTABLE_JOB_ATTRS")?;
        immutable.extend(system("SYSTEM_IMMUTABLE_JOB_ATTRS", SYSTEM_IMMUTABLE)?);
        let mut protected = config.list("PROTECTED_JOB_ATTRS")?;
        protected.extend(system("SYSTEM_PROTECTED_JOB_ATTRS", "")?);
        let mut secure = config.list("SECURE_JOB_ATTRS")?;
        secure.extend(system("SYSTEM_SECURE_JOB_ATTRS", SYSTEM_SECURE)?);
        let ignore_secure = config
            .boolean("IGNORE_ATTEMPTS_TO_SET_SECURE_JOB_ATTRS")?
            .unwrap_or(true);
        Ok(EditRules {
            immutable,
            protected,
            secure,
            ignore_secure,
        })
    }

    fn is(list: &[String], name: &str) -> bool {
        list.iter().any(|a| a.eq_ignore_ascii_case(name))
    }
}

/// Which jobs an edit is for.
#[derive(Clone, Debug)]
pub enum EditTarget {
    /// These jobs; `C.-1` is cluster `C`'s ad, that is every proc of it.
    Jobs(Vec<JobId>),
    /// The procs the constraint is true of.
    Constraint(Expr),
}

/// Why an edit was refused. [`EditError::errno`] is what HTCondor's
/// schedd answers; the text is its message (`ErrorReason`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EditError {
    InvalidName {
        name: String,
        job: JobId,
    },
    InvalidValue {
        value: String,
        job: JobId,
    },
    Secure {
        name: String,
        job: JobId,
    },
    NoSuchJob {
        name: String,
        job: JobId,
    },
    NotOwner {
        user: String,
        job: JobId,
    },
    Immutable {
        name: String,
        job: JobId,
    },
    Protected {
        name: String,
        user: String,
        job: JobId,
    },
    StatusOfRemoved {
        job: JobId,
        to: String,
    },
    Status {
        job: JobId,
        from: JobStatus,
        to: String,
    },
    /// A constraint that selects no job.
    NoMatch,
}

impl EditError {
    /// The errno HTCondor's schedd gives for it.
    pub fn errno(&self) -> i64 {
        match self {
            EditError::InvalidName { .. }
            | EditError::InvalidValue { .. }
            | EditError::StatusOfRemoved { .. }
            | EditError::Status { .. } => EINVAL,
            EditError::Secure { .. }
            | EditError::NotOwner { .. }
            | EditError::Immutable { .. }
            | EditError::Protected { .. } => EACCES,
            EditError::NoSuchJob { .. } | EditError::NoMatch => ENOENT,
        }
    }
}

impl fmt::Display for EditError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EditError::InvalidName { name, job } => {
                write!(f, "Got invalid attribute named {name} for job {job}")
            }
            EditError::InvalidValue { value, job } => write!(
                f,
                "Received invalid attribute value '{value}' for job {job}; ignoring"
            ),
            EditError::Secure { name, job } => {
                write!(
                    f,
                    "Attempt to edit secure attribute {name} in job {job}. Failing!"
                )
            }
            EditError::NoSuchJob { name, job } => {
                write!(f, "Modifying attribute {name} in nonexistent job {job}")
            }
            EditError::NotOwner { user, job } => write!(
                f,
                "User {user} may not change attributes for jobs they do not own (job {job})"
            ),
            EditError::Immutable { name, job } => {
                write!(f, "Attempt to edit immutable attribute {name} in job {job}")
            }
            EditError::Protected { name, user, job } => write!(
                f,
                "Unauthorized setting of protected attribute {name} denied for real owner \
                 {user} (only queue super users may set it) in job {job}"
            ),
            EditError::StatusOfRemoved { job, to } => write!(
                f,
                "Changing {} of removed job {job} to {to} is invalid",
                attr::JOB_STATUS
            ),
            EditError::Status { job, from, to } => write!(
                f,
                "Changing {} of job {job} from {} to {to} is invalid: this schedd changes a \
                 job's status only through condor_hold, condor_release and condor_rm",
                attr::JOB_STATUS,
                from.number()
            ),
            EditError::NoMatch => write!(f, "no job in the queue matches the constraint"),
        }
    }
}

impl std::error::Error for EditError {}

/// What an edit decided: the jobs to change and how many jobs it matched
/// (the answer HTCondor's SetAttributeByConstraint gives).
#[derive(Clone, Debug)]
pub struct EditPlan {
    /// The procs the edit changes, in id order (none when the attribute
    /// is a secure one, quietly ignored).
    pub jobs: Vec<JobId>,
    /// The procs it matched (for a by-constraint edit, those the
    /// constraint selected).
    pub matched: usize,
    pub name: String,
    pub value: Expr,
}

/// An attribute name as HTCondor accepts one (`IsValidAttrName`).
pub fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn user_part(user: &str) -> &str {
    user.split('@').next().unwrap_or(user)
}

fn literal_int(ad: &ClassAd, name: &str) -> Option<i64> {
    match ad.get(name)? {
        Expr::Lit(Value::Int(i)) => Some(*i),
        _ => None,
    }
}

impl JobQueue {
    /// Decides an edit without making it: which jobs `user` (a queue super
    /// user or not) would change by setting `name = value` (`value` in
    /// old ClassAd syntax, as the protocol carries it) on `target`, or why
    /// not. `now` is the time for the constraint.
    #[allow(clippy::too_many_arguments)]
    pub fn check_edit(
        &self,
        target: &EditTarget,
        name: &str,
        value: &str,
        user: &str,
        super_user: bool,
        rules: &EditRules,
        now: i64,
    ) -> Result<EditPlan, EditError> {
        // The job named in a message about the attribute itself: the
        // first one the edit names.
        let first = match target {
            EditTarget::Jobs(ids) => ids.first().copied().unwrap_or(JobId::new(0, 0)),
            EditTarget::Constraint(_) => JobId::new(0, 0),
        };
        if !valid_name(name) {
            return Err(EditError::InvalidName {
                name: name.to_string(),
                job: first,
            });
        }
        let parsed = (!value.trim().is_empty())
            .then(|| classad::parser::parse_old_value_whole(value).ok())
            .flatten()
            .ok_or_else(|| EditError::InvalidValue {
                value: value.to_string(),
                job: first,
            })?;
        let secure = EditRules::is(&rules.secure, name);
        // The procs the edit is for, in id order, each once.
        let mut jobs: Vec<JobId> = Vec::new();
        let matched;
        match target {
            EditTarget::Jobs(ids) => {
                for &id in ids {
                    if secure {
                        break;
                    }
                    let procs: Vec<JobId> = if id.proc < 0 {
                        self.cluster_procs(id.cluster)
                    } else {
                        self.job(id).map(|_| vec![id]).unwrap_or_default()
                    };
                    if procs.is_empty() {
                        return Err(EditError::NoSuchJob {
                            name: name.to_string(),
                            job: id,
                        });
                    }
                    jobs.extend(procs);
                }
                jobs.sort();
                jobs.dedup();
                matched = if secure { ids.len() } else { jobs.len() };
            }
            EditTarget::Constraint(c) => {
                let env = classad::Env {
                    utc_offset: self.utc_offset,
                    ..classad::Env::at(now)
                };
                // Only the jobs the index leaves possible are evaluated.
                for (id, ad) in self.snapshot_matching(c) {
                    let yes = match ad.eval(c, &env) {
                        Value::Bool(b) => b,
                        Value::Int(i) => i != 0,
                        Value::Real(r) => r != 0.0,
                        _ => false,
                    };
                    if yes {
                        jobs.push(id);
                    }
                }
                matched = jobs.len();
                if matched == 0 {
                    return Err(EditError::NoMatch);
                }
            }
        }
        if secure {
            return if rules.ignore_secure {
                Ok(EditPlan {
                    jobs: Vec::new(),
                    matched,
                    name: name.to_string(),
                    value: parsed,
                })
            } else {
                Err(EditError::Secure {
                    name: name.to_string(),
                    job: jobs.first().copied().unwrap_or(first),
                })
            };
        }
        for &id in &jobs {
            let Some(ad) = self.job(id) else {
                continue;
            };
            self.may_edit(id, ad, name, &parsed, user, super_user, rules)?;
        }
        Ok(EditPlan {
            jobs,
            matched,
            name: name.to_string(),
            value: parsed,
        })
    }

    /// An edit of a factory's cluster ad (late materialization: what its
    /// later jobs are made with), decided by the same rules as a job's:
    /// the value to set, `None` for a secure attribute quietly ignored,
    /// or why not. `cluster_ad` is the cluster's ad as the schedd keeps
    /// it (its Owner says whose it is).
    #[allow(clippy::too_many_arguments)]
    pub fn check_cluster_ad_edit(
        &self,
        cluster: i64,
        cluster_ad: &ClassAd,
        name: &str,
        value: &str,
        user: &str,
        super_user: bool,
        rules: &EditRules,
    ) -> Result<Option<Expr>, EditError> {
        let job = JobId::new(cluster, -1);
        if !valid_name(name) {
            return Err(EditError::InvalidName {
                name: name.to_string(),
                job,
            });
        }
        let parsed = (!value.trim().is_empty())
            .then(|| classad::parser::parse_old_value_whole(value).ok())
            .flatten()
            .ok_or_else(|| EditError::InvalidValue {
                value: value.to_string(),
                job,
            })?;
        if EditRules::is(&rules.secure, name) {
            return if rules.ignore_secure {
                Ok(None)
            } else {
                Err(EditError::Secure {
                    name: name.to_string(),
                    job,
                })
            };
        }
        self.may_edit(job, cluster_ad, name, &parsed, user, super_user, rules)?;
        Ok(Some(parsed))
    }

    /// Steps 4 to 7 of the rules for one job.
    #[allow(clippy::too_many_arguments)]
    fn may_edit(
        &self,
        id: JobId,
        ad: &ClassAd,
        name: &str,
        value: &Expr,
        user: &str,
        super_user: bool,
        rules: &EditRules,
    ) -> Result<(), EditError> {
        let owner = crate::authz::owner_of(ad);
        if !super_user && owner.as_deref() != Some(user_part(user)) {
            return Err(EditError::NotOwner {
                user: user.to_string(),
                job: id,
            });
        }
        if EditRules::is(&rules.immutable, name) {
            return Err(EditError::Immutable {
                name: name.to_string(),
                job: id,
            });
        }
        if !super_user && EditRules::is(&rules.protected, name) {
            return Err(EditError::Protected {
                name: name.to_string(),
                user: user.to_string(),
                job: id,
            });
        }
        if name.eq_ignore_ascii_case(attr::JOB_STATUS) {
            let to = classad::unparse::expr_to_string(value);
            let new = match value {
                Expr::Lit(Value::Int(n)) => Some(*n),
                _ => None,
            };
            let removed = JobStatus::Removed.number();
            let held = JobStatus::Held.number();
            let curr = status_of(ad);
            let was_removed = curr == Some(JobStatus::Removed)
                || literal_int(ad, attr::LAST_JOB_STATUS) == Some(removed)
                || literal_int(ad, "JobStatusOnRelease") == Some(removed);
            if new != Some(held) && new != Some(removed) && was_removed {
                return Err(EditError::StatusOfRemoved { job: id, to });
            }
            let from = curr.unwrap_or(JobStatus::Idle);
            if new != Some(from.number()) {
                return Err(EditError::Status { job: id, from, to });
            }
        }
        Ok(())
    }

    /// The procs of cluster `cluster` in the queue, in id order.
    fn cluster_procs(&self, cluster: i64) -> Vec<JobId> {
        self.cluster_jobs(cluster).map(|(id, _)| id).collect()
    }

    /// Decides an edit ([`JobQueue::check_edit`]) and makes it in memory:
    /// one [`Change`] per job changed (no status change, no event log
    /// entry), for the daemon to store. Nothing changes when it is refused.
    #[allow(clippy::too_many_arguments)]
    pub fn edit(
        &mut self,
        target: &EditTarget,
        name: &str,
        value: &str,
        user: &str,
        super_user: bool,
        rules: &EditRules,
        now: i64,
    ) -> Result<(EditPlan, Vec<Change>), EditError> {
        let plan = self.check_edit(target, name, value, user, super_user, rules, now)?;
        let changes = self.apply_plan(&plan);
        Ok((plan, changes))
    }

    /// Makes a decided edit: sets the attribute in each job's ad.
    pub fn apply_plan(&mut self, plan: &EditPlan) -> Vec<Change> {
        let mut changes = Vec::with_capacity(plan.jobs.len());
        for &id in &plan.jobs {
            let Some(status) = self.edit_job(id, |ad| {
                let status = status_of(ad).unwrap_or(JobStatus::Idle);
                ad.insert(plan.name.as_str(), plan.value.clone());
                status
            }) else {
                continue;
            };
            changes.push(Change {
                job: id,
                from: Some(status),
                to: status,
                log: None,
                attributes: vec![plan.name.clone()],
                stop: false,
            });
        }
        changes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queue() -> JobQueue {
        let ad = |c: i64, p: i64, owner: &str, status: i64| {
            let mut a = ClassAd::new();
            a.insert_value("ClusterId", c);
            a.insert_value("ProcId", p);
            a.insert_value("Owner", owner);
            a.insert_value("JobStatus", status);
            a.insert_value("Requirements", true);
            a
        };
        JobQueue::restore(
            vec![
                ad(1, 0, "alice", 1),
                ad(1, 1, "alice", 2),
                ad(2, 0, "bob", 1),
                ad(3, 0, "alice", 3),
            ],
            1,
        )
    }

    fn ids(list: &[(i64, i64)]) -> EditTarget {
        EditTarget::Jobs(list.iter().map(|&(c, p)| JobId::new(c, p)).collect())
    }

    fn constraint(text: &str) -> EditTarget {
        EditTarget::Constraint(classad::parse_expr(text).unwrap())
    }

    fn get(q: &JobQueue, c: i64, p: i64, name: &str) -> Option<String> {
        q.job(JobId::new(c, p))
            .and_then(|a| a.get(name))
            .map(classad::unparse::expr_to_string)
    }

    #[test]
    fn the_owner_edits_a_job_and_the_change_says_which_attribute() {
        let mut q = queue();
        let rules = EditRules::default();
        let (plan, changes) = q
            .edit(&ids(&[(1, 0)]), "Foo", "42", "alice", false, &rules, 0)
            .unwrap();
        assert_eq!(plan.matched, 1);
        assert_eq!(get(&q, 1, 0, "Foo").as_deref(), Some("42"));
        assert_eq!(get(&q, 1, 1, "Foo"), None);
        assert_eq!(changes.len(), 1);
        assert_eq!(changes[0].attributes, vec!["Foo".to_string()]);
        assert_eq!(changes[0].from, Some(JobStatus::Idle));
        assert_eq!(changes[0].to, JobStatus::Idle);
        assert!(changes[0].log.is_none() && !changes[0].stop);
        // A fully qualified name owns by its user part.
        q.edit(
            &ids(&[(1, 1)]),
            "Requirements",
            "TARGET.Memory > 10",
            "alice@example.org",
            false,
            &rules,
            0,
        )
        .unwrap();
        assert_eq!(
            get(&q, 1, 1, "Requirements").as_deref(),
            Some("TARGET.Memory > 10")
        );
    }

    #[test]
    fn the_cluster_ad_is_every_proc_of_the_cluster() {
        let mut q = queue();
        let (plan, changes) = q
            .edit(
                &ids(&[(1, -1)]),
                "Bar",
                "\"x\"",
                "alice",
                false,
                &EditRules::default(),
                0,
            )
            .unwrap();
        assert_eq!(plan.jobs, vec![JobId::new(1, 0), JobId::new(1, 1)]);
        assert_eq!(changes.len(), 2);
        assert_eq!(get(&q, 1, 1, "Bar").as_deref(), Some("\"x\""));
        assert_eq!(get(&q, 2, 0, "Bar"), None);
        let e = q
            .edit(
                &ids(&[(9, -1)]),
                "Bar",
                "1",
                "alice",
                false,
                &EditRules::default(),
                0,
            )
            .unwrap_err();
        assert_eq!(e.errno(), ENOENT);
        assert_eq!(
            e.to_string(),
            "Modifying attribute Bar in nonexistent job 9.-1"
        );
    }

    #[test]
    fn by_constraint_counts_the_procs_it_matched() {
        let mut q = queue();
        let rules = EditRules::default();
        let (plan, _) = q
            .edit(
                &constraint("ClusterId == 1"),
                "Bar",
                "\"x\"",
                "alice",
                false,
                &rules,
                0,
            )
            .unwrap();
        assert_eq!(plan.matched, 2);
        assert_eq!(get(&q, 1, 0, "Bar").as_deref(), Some("\"x\""));
        let e = q
            .edit(
                &constraint("ClusterId == 99"),
                "Bar",
                "1",
                "alice",
                false,
                &rules,
                0,
            )
            .unwrap_err();
        assert_eq!((e.errno(), e), (ENOENT, EditError::NoMatch));
        // One job of another owner among those matched refuses it all.
        let e = q
            .edit(
                &constraint("JobStatus == 1"),
                "Baz",
                "1",
                "alice",
                false,
                &rules,
                0,
            )
            .unwrap_err();
        assert_eq!(e.errno(), EACCES);
        assert_eq!(
            e.to_string(),
            "User alice may not change attributes for jobs they do not own (job 2.0)"
        );
        assert_eq!(get(&q, 1, 0, "Baz"), None);
    }

    #[test]
    fn others_may_not_but_queue_super_users_may() {
        let mut q = queue();
        let rules = EditRules::default();
        let e = q
            .edit(&ids(&[(2, 0)]), "Foo", "1", "alice", false, &rules, 0)
            .unwrap_err();
        assert_eq!(e.errno(), EACCES);
        q.edit(&ids(&[(2, 0)]), "Foo", "1", "root", true, &rules, 0)
            .unwrap();
        assert_eq!(get(&q, 2, 0, "Foo").as_deref(), Some("1"));
    }

    #[test]
    fn immutable_attributes_change_for_no_one() {
        let mut q = queue();
        let rules = EditRules::default();
        for name in [
            "Owner",
            "ClusterId",
            "ProcId",
            "JobUniverse",
            "MyType",
            "TargetType",
            "User",
            "owner",
        ] {
            let e = q
                .edit(&ids(&[(1, 0)]), name, "\"root\"", "root", true, &rules, 0)
                .unwrap_err();
            assert_eq!(e.errno(), EACCES, "{name}");
            assert_eq!(
                e.to_string(),
                format!("Attempt to edit immutable attribute {name} in job 1.0")
            );
        }
        assert_eq!(get(&q, 1, 0, "Owner").as_deref(), Some("\"alice\""));
    }

    #[test]
    fn protected_attributes_only_for_super_users_and_secure_ones_are_ignored() {
        let mut q = queue();
        let rules = EditRules {
            protected: vec!["AccountingGroup".into()],
            ..EditRules::default()
        };
        let e = q
            .edit(
                &ids(&[(1, 0)]),
                "AccountingGroup",
                "\"g\"",
                "alice",
                false,
                &rules,
                0,
            )
            .unwrap_err();
        assert_eq!(e.errno(), EACCES);
        q.edit(
            &ids(&[(1, 0)]),
            "AccountingGroup",
            "\"g\"",
            "root",
            true,
            &rules,
            0,
        )
        .unwrap();
        // Secure: quietly nothing, even for a job that is not there.
        let (plan, changes) = q
            .edit(
                &ids(&[(1, 0), (8, 0)]),
                "TotalSubmitProcs",
                "9",
                "alice",
                false,
                &rules,
                0,
            )
            .unwrap();
        assert!(changes.is_empty() && plan.jobs.is_empty());
        assert_eq!(get(&q, 1, 0, "TotalSubmitProcs"), None);
        let strict = EditRules {
            ignore_secure: false,
            ..EditRules::default()
        };
        let e = q
            .edit(&ids(&[(1, 0)]), "OsUser", "\"x\"", "root", true, &strict, 0)
            .unwrap_err();
        assert_eq!(e.errno(), EACCES);
    }

    #[test]
    fn names_and_values_must_be_well_formed_and_jobs_there() {
        let q = queue();
        let rules = EditRules::default();
        let check = |t: &EditTarget, n: &str, v: &str| {
            q.check_edit(t, n, v, "alice", false, &rules, 0)
                .unwrap_err()
        };
        assert_eq!(check(&ids(&[(1, 0)]), "9Foo", "1").errno(), EINVAL);
        assert_eq!(check(&ids(&[(1, 0)]), "Foo", "(1 +").errno(), EINVAL);
        assert_eq!(check(&ids(&[(1, 0)]), "Foo", "").errno(), EINVAL);
        let e = check(&ids(&[(1, 0), (1, 7)]), "Foo", "1");
        assert_eq!(e.errno(), ENOENT);
        assert_eq!(
            e.to_string(),
            "Modifying attribute Foo in nonexistent job 1.7"
        );
        // Only deciding changes nothing.
        q.check_edit(&ids(&[(1, 0)]), "Foo", "1", "alice", false, &rules, 0)
            .unwrap();
        assert_eq!(get(&q, 1, 0, "Foo"), None);
    }

    #[test]
    fn job_status_is_the_state_machines_and_removed_jobs_stay_removed() {
        let mut q = queue();
        let rules = EditRules::default();
        let e = q
            .edit(&ids(&[(3, 0)]), "JobStatus", "1", "alice", false, &rules, 0)
            .unwrap_err();
        assert_eq!(e.errno(), EINVAL);
        assert_eq!(
            e.to_string(),
            "Changing JobStatus of removed job 3.0 to 1 is invalid"
        );
        let e = q
            .edit(&ids(&[(1, 0)]), "JobStatus", "5", "alice", false, &rules, 0)
            .unwrap_err();
        assert!(matches!(e, EditError::Status { .. }), "{e:?}");
        // Saying what it already is changes nothing that matters.
        q.edit(&ids(&[(1, 0)]), "JobStatus", "1", "alice", false, &rules, 0)
            .unwrap();
    }

    #[test]
    fn rules_come_from_the_configuration() {
        use config::{load, FixedHost, LoadOptions, MemFiles, Root};
        let c = load(
            &LoadOptions::new("SCHEDD", Root::File("c".into())),
            &MemFiles::new().with(
                "c",
                "PROTECTED_JOB_ATTRS = Foo, Bar\nIMMUTABLE_JOB_ATTRS = Baz\n",
            ),
            &FixedHost::empty(),
        )
        .unwrap();
        let r = EditRules::from_config(&c).unwrap();
        assert!(EditRules::is(&r.protected, "foo"));
        assert!(EditRules::is(&r.immutable, "Baz"));
        assert!(EditRules::is(&r.immutable, "Owner"));
        assert!(EditRules::is(&r.secure, "TotalSubmitProcs"));
        assert!(r.ignore_secure);
    }
}
