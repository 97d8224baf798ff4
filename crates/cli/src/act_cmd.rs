//! `ferrocondor rm|hold|release|vacate_job` (condor_rm, condor_hold,
//! condor_release, condor_vacate_job)
//! and `ferrocondor history` (condor_history), against the running pool.

use std::io::Write;

use classad::Env;
use wire::api::{Action, JobSpec};

use crate::args::{ActArgs, HistoryArgs};
use crate::daemon_client::Daemons;
use crate::errors::{Error, Outcome};
use crate::jobview;

/// HTCondor's words for each action: a job "marked for removal", "held",
/// "released"; all jobs "have been marked for removal", ...
fn words(action: Action) -> (&'static str, &'static str, &'static str) {
    match action {
        Action::Remove => (
            "marked for removal",
            "have been marked for removal",
            "remove",
        ),
        Action::Hold => ("held", "have been held", "hold"),
        Action::Release => ("released", "have been released", "release"),
        Action::Vacate | Action::VacateFast => ("vacated", "have been vacated", "vacate"),
    }
}

/// HTCondor's JobAction number for `action`.
fn job_action(action: Action) -> i64 {
    match action {
        Action::Hold => 1,
        Action::Release => 2,
        Action::Remove => 3,
        Action::Vacate => 5,
        Action::VacateFast => 6,
    }
}

/// HTCondor's message for one job's result (`AR_*`), as condor_rm,
/// condor_hold and condor_release print it.
fn job_result(action: Action, job: &str, code: i64) -> String {
    let (one, _, verb) = words(action);
    match code {
        1 => format!("Job {job} {one}"),
        2 => format!("Job {job} not found"),
        3 if action == Action::Release => format!("Job {job} not held to be released"),
        3 if matches!(action, Action::Vacate | Action::VacateFast) => {
            format!("Job {job} not running to be vacated")
        }
        4 if action == Action::Hold => format!("Job {job} already held"),
        4 if action == Action::Remove => format!("Job {job} already marked for removal"),
        5 => format!("Permission denied to {verb} job {job}"),
        _ => format!("Invalid result for job {job}"),
    }
}

pub fn run(
    a: &ActArgs,
    action: Action,
    out: &mut dyn Write,
    diag: &mut dyn Write,
) -> Result<Outcome, Error> {
    jobview::check_constraint(a.constraint.as_deref())?;
    let (_, all, verb) = words(action);
    let tool = match action {
        Action::Remove => "rm",
        Action::Hold => "hold",
        Action::Release => "release",
        Action::Vacate | Action::VacateFast => "vacate_job",
    };
    // Each target is asked for on its own, so each gets its own message:
    // a job by id (its own result), else a constraint (totals).
    enum Target {
        Job(String),
        Jobs { whose: String, constraint: String },
    }
    let mut requests: Vec<Target> = Vec::new();
    for t in &a.targets {
        let constraint = jobview::job_constraint(std::slice::from_ref(t), None, None);
        requests.push(match JobSpec::parse(t) {
            Some(JobSpec { proc: Some(_), .. }) => Target::Job(t.clone()),
            Some(JobSpec { cluster, .. }) => Target::Jobs {
                whose: format!("All jobs in cluster {cluster}"),
                constraint: constraint.unwrap_or_default(),
            },
            None => Target::Jobs {
                whose: format!("All jobs of user \"{t}\""),
                constraint: constraint.unwrap_or_default(),
            },
        });
    }
    if let Some(c) = &a.constraint {
        requests.push(Target::Jobs {
            whose: format!("All jobs matching constraint ({c})"),
            constraint: c.clone(),
        });
    }
    if a.all {
        requests.push(Target::Jobs {
            whose: "All jobs".into(),
            constraint: format!(
                "Owner == {}",
                crate::daemon_client::classad_string(&jobview::my_name())
            ),
        });
    }
    if requests.is_empty() {
        return Err(Error::Usage(format!(
            "{tool} needs jobs to act on: JOB (CLUSTER or CLUSTER.PROC), OWNER, -constraint EXPR or -all"
        )));
    }
    let daemons = Daemons::new(None)?.located(a.locate.pool.as_deref(), a.locate.name.as_deref());
    let mut refused = false;
    for target in requests {
        match target {
            Target::Job(job) => {
                let result = daemons.act_on_jobs(
                    job_action(action),
                    std::slice::from_ref(&job),
                    None,
                    a.reason.as_deref(),
                )?;
                let key = format!("job_{}", job.replace('.', "_"));
                let code = cedar::ad::int_attr(&result, &key).unwrap_or(0);
                if code == 1 {
                    writeln!(out, "{}", job_result(action, &job, code))?;
                } else {
                    refused = true;
                    match cedar::ad::string_attr(&result, "ErrorString") {
                        Some(why) if code == 0 => writeln!(diag, "{why}")?,
                        _ => writeln!(diag, "{}", job_result(action, &job, code))?,
                    }
                }
            }
            Target::Jobs { whose, constraint } => {
                let result = daemons.act_on_jobs(
                    job_action(action),
                    &[],
                    Some(&constraint),
                    a.reason.as_deref(),
                )?;
                let total = |code: i64| {
                    cedar::ad::int_attr(&result, &format!("result_total_{code}")).unwrap_or(0)
                };
                let done = total(1);
                let failed: i64 = [0, 2, 3, 4, 5, 6].iter().map(|c| total(*c)).sum();
                if done > 0 && failed == 0 {
                    writeln!(out, "{whose} {all}")?;
                } else {
                    refused = true;
                    if let Some(why) = cedar::ad::string_attr(&result, "ErrorString") {
                        writeln!(diag, "{why}")?;
                    }
                    let lower = whose.replacen("All jobs", "all jobs", 1);
                    writeln!(diag, "Couldn't find/{verb} {lower}")?;
                }
            }
        }
    }
    Ok(if refused {
        Outcome::SomeRefused
    } else {
        Outcome::Success
    })
}

pub fn history(a: &HistoryArgs, now: i64, out: &mut dyn Write) -> Result<Outcome, Error> {
    jobview::check_constraint(a.constraint.as_deref())?;
    let constraint = jobview::job_constraint(&a.targets, a.constraint.as_deref(), None);
    let env = crate::system::ToolConfig::load()?.env(now);
    let offset = env.utc_offset;
    let daemons = Daemons::new(None)?.located(a.locate.pool.as_deref(), a.locate.name.as_deref());
    let ads = match daemons.query_history(constraint.as_deref(), &[], a.limit) {
        Ok(ads) => ads,
        // condor_history reads the history itself, so it answers with the
        // pool down; so do we, from the file the schedd keeps it in.
        // Not for another pool's (-pool) or access point's (-name) history.
        Err(e) if daemons.found_no_pool() && a.locate.pool.is_none() && a.locate.name.is_none() => {
            history_from_file(daemons.state(), constraint.as_deref(), a.limit, &env, e)?
        }
        Err(e) => return Err(e),
    };
    let text = if a.json {
        jobview::json(&ads)
    } else if a.long {
        jobview::long(&ads)
    } else if !a.print.is_empty() {
        crate::printmask::PrintMask::parse(&a.print)?.render(&ads, &env)
    } else {
        jobview::history_table(&ads, &env, offset)
    };
    out.write_all(text.as_bytes())?;
    Ok(Outcome::Success)
}

/// The jobs in the history of the queue in `state` that `constraint`
/// selects, newest first, at most `limit`, read from the file while no
/// schedd runs (as the user the file lets read it: the pool's own, or
/// root). `no_pool` is what the lookup of the schedd said, given back
/// when there is no history file either.
fn history_from_file(
    state: &std::path::Path,
    constraint: Option<&str>,
    limit: Option<usize>,
    env: &Env,
    no_pool: Error,
) -> Result<Vec<classad::ClassAd>, Error> {
    let path = state.join(daemons::QUEUE_FILE);
    if !path.exists() {
        return Err(no_pool);
    }
    let history = store::HistoryFile::open(&path).map_err(|e| {
        Error::Daemon(format!(
            "no pool is running, and its history cannot be read: {e}"
        ))
    })?;
    let constraint = constraint
        .map(classad::Expr::parse)
        .transpose()
        .map_err(|e| Error::parse("<constraint>", e))?;
    // A constraint's `Owner == "x"` narrows the read (the store's index
    // by owner); the constraint is still evaluated on each record.
    let query = match &constraint {
        Some(c) => store::HistoryQuery::default().narrowed_by(c),
        None => store::HistoryQuery::default(),
    };
    let mut ads = Vec::new();
    let mut before = None;
    loop {
        let rows = history
            .history_page(&query, before, 256)
            .map_err(|e| Error::Daemon(format!("the history cannot be read: {e}")))?;
        let last_page = rows.len() < 256;
        for row in rows {
            if limit.is_some_and(|n| ads.len() >= n) {
                return Ok(ads);
            }
            before = Some(row.seq);
            let record = row
                .parse(&path)
                .map_err(|e| Error::Daemon(format!("the history cannot be read: {e}")))?;
            let selected = constraint
                .as_ref()
                .is_none_or(|c| classad::eval_expr(c, Some(&record.ad), None, env).is_true());
            if selected {
                ads.push(record.ad);
            }
        }
        if last_page || limit.is_some_and(|n| ads.len() >= n) {
            return Ok(ads);
        }
    }
}
