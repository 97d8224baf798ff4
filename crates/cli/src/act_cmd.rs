//! `ferrocondor rm|hold|release` (condor_rm, condor_hold, condor_release)
//! and `ferrocondor history` (condor_history), against the running pool.

use std::io::Write;

use classad::Env;
use wire::api::{self, ActAnswer, Action, JobSpec, Selection};

use crate::args::{ActArgs, HistoryArgs};
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
    }
}

pub fn run(
    a: &ActArgs,
    action: Action,
    out: &mut dyn Write,
    diag: &mut dyn Write,
) -> Result<Outcome, Error> {
    let (one, all, verb) = words(action);
    let tool = match action {
        Action::Remove => "rm",
        Action::Hold => "hold",
        Action::Release => "release",
    };
    // Each target is asked for on its own, so each gets its own message.
    let mut requests: Vec<(String, Selection)> = Vec::new();
    for t in &a.targets {
        let sel = jobview::selection(std::slice::from_ref(t), None);
        let what = match JobSpec::parse(t) {
            Some(JobSpec { proc: Some(_), .. }) => format!("job {t}"),
            Some(JobSpec { cluster, .. }) => format!("cluster {cluster}"),
            None => format!("user {t}"),
        };
        requests.push((what, sel));
    }
    if let Some(c) = &a.constraint {
        requests.push((
            format!("constraint ({c})"),
            jobview::selection(&[], Some(c)),
        ));
    }
    if a.all {
        let sel = Selection {
            mine: true,
            ..Selection::default()
        };
        requests.push(("all".into(), sel));
    }
    if requests.is_empty() {
        return Err(Error::Usage(format!(
            "{tool} needs jobs to act on: JOB (CLUSTER or CLUSTER.PROC), OWNER, -constraint EXPR or -all"
        )));
    }
    let client = jobview::client();
    let mut refused = false;
    for (what, selection) in requests {
        let answer: ActAnswer = client.call(
            api::PATH_ACT,
            &api::ActRequest {
                action,
                selection,
                reason: a.reason.clone(),
            },
        )?;
        for f in &answer.failed {
            writeln!(diag, "{}", f.error)?;
        }
        refused |= !answer.failed.is_empty() || answer.done.is_empty();
        let complete = answer.failed.is_empty() && !answer.done.is_empty();
        if let Some(job) = what.strip_prefix("job ") {
            if complete {
                writeln!(out, "Job {job} {one}")?;
            } else if answer.done.is_empty() && answer.failed.is_empty() {
                writeln!(diag, "Job {job} not found")?;
            }
        } else {
            let whose = match what.as_str() {
                "all" => "All jobs".to_string(),
                w if w.starts_with("cluster ") => format!("All jobs in {w}"),
                w if w.starts_with("user ") => {
                    format!("All jobs of user \"{}\"", &w["user ".len()..])
                }
                w => format!("All jobs matching {w}"),
            };
            if complete {
                writeln!(out, "{whose} {all}")?;
            } else {
                let lower = whose.replacen("All jobs", "all jobs", 1);
                writeln!(diag, "Couldn't find/{verb} {lower}")?;
                if !answer.done.is_empty() {
                    writeln!(out, "Jobs {}: {one}", answer.done.join(", "))?;
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
    let client = jobview::client();
    let answer: api::HistoryAnswer = client.call(
        api::PATH_HISTORY,
        &api::HistoryRequest {
            selection: jobview::selection(&a.targets, a.constraint.as_deref()),
            limit: a.limit,
            projection: Vec::new(),
        },
    )?;
    let ads = jobview::parse_ads(&answer.ads)?;
    let offset = crate::system::utc_offset(now);
    let env = Env {
        utc_offset: offset,
        ..Env::at(now)
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
