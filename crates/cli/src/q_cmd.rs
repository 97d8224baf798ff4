//! `ferrocondor q`: the job queue as condor_q shows it, from the running
//! pool (formats in `jobview`), and `-better-analyze` (the jobs from
//! `-jobads` or the pool, the slots from `-slotads` or the pool).

use std::io::Write;
use std::path::Path;

use classad::reader::{read_ads, Stop, Syntax};
use classad::{ClassAd, Env, Value};

use crate::args::QArgs;
use crate::daemon_client::Daemons;
use crate::errors::{Error, Outcome};
use crate::jobview;
use crate::printmask::PrintMask;
use wire::api::Totals;

pub fn run(a: &QArgs, now: i64, out: &mut dyn Write) -> Result<Outcome, Error> {
    jobview::check_constraint(a.constraint.as_deref())?;
    if a.better_analyze || a.jobads.is_some() || a.slotads.is_some() {
        return analyze(a, now, out);
    }
    live(a, now, out)
}

/// The constraint the command line asks for: ids and owners,
/// -constraint, -hold and -run; only the caller's jobs unless ids, owners
/// or -allusers say otherwise (condor_q's default since HTCondor 8.5.2).
fn constraint(a: &QArgs) -> Option<String> {
    let mut parts = Vec::new();
    if let Some(c) = &a.constraint {
        parts.push(format!("({c})"));
    }
    if a.hold {
        parts.push("(JobStatus == 5)".into());
    }
    if a.run {
        parts.push("(JobStatus == 2)".into());
    }
    let constraint = (!parts.is_empty()).then(|| parts.join(" && "));
    let me = (a.targets.is_empty() && !a.allusers).then(jobview::my_name);
    jobview::job_constraint(&a.targets, constraint.as_deref(), me.as_deref())
}

/// Counts of a summary ad: `prefix` `Jobs`, `Idle`, ... (HTCondor's
/// `Allusers*`, `My*`).
fn totals_of(summary: &ClassAd, prefix: &str) -> Totals {
    let n = |name: &str| {
        cedar::ad::int_attr(summary, &format!("{prefix}{name}")).map_or(0, |v| v.max(0) as u64)
    };
    Totals {
        jobs: n("Jobs"),
        completed: n("Completed"),
        removed: n("Removed"),
        idle: n("Idle"),
        running: n("Running"),
        held: n("Held"),
        suspended: n("Suspended"),
    }
}

/// Asks the running pool and prints its answer in condor_q's formats.
fn live(a: &QArgs, now: i64, out: &mut dyn Write) -> Result<Outcome, Error> {
    // A bad -af or -format is said before the pool is asked.
    let mask = if a.print.is_empty() {
        None
    } else {
        Some(PrintMask::parse(&a.print)?)
    };
    let daemons = Daemons::new(None)?.located(a.locate.pool.as_deref(), a.locate.name.as_deref());
    let env = crate::system::ToolConfig::load()?.env(now);
    let offset = env.utc_offset;
    if a.totals && mask.is_none() && !a.json && !a.long {
        // The summary alone: the schedd counts, no job ad travels.
        let summary = daemons.query_job_totals(constraint(a).as_deref())?;
        let user = cedar::ad::string_attr(&summary, "MyName").unwrap_or_else(jobview::my_name);
        let schedd = daemons.schedd()?.to_string();
        let mut text = jobview::banner(daemons.schedd_name(), &schedd, now, offset);
        text.push_str(&jobview::totals_lines(
            &totals_of(&summary, ""),
            &user,
            &totals_of(&summary, "My"),
            &totals_of(&summary, "Allusers"),
        ));
        out.write_all(text.as_bytes())?;
        return Ok(Outcome::Success);
    }
    if a.factory {
        // condor_q -factory: the factory clusters' ads, not the jobs.
        let ads = daemons.query_factories(constraint(a).as_deref())?;
        if written_as_asked(&ads, a, mask.as_ref(), &env, out)? {
            return Ok(Outcome::Success);
        }
        let schedd = daemons.schedd()?.to_string();
        let mut text = jobview::banner(daemons.schedd_name(), &schedd, now, offset);
        text.push_str(&jobview::factory_table(&ads, &env, offset));
        out.write_all(text.as_bytes())?;
        return Ok(Outcome::Success);
    }
    // With -af or -format, only the attributes the mask reads travel.
    let wanted = mask
        .as_ref()
        .filter(|_| !a.json && !a.long)
        .and_then(PrintMask::attributes)
        .filter(|names| !names.is_empty())
        .unwrap_or_default();
    let projection: Vec<&str> = wanted.iter().map(String::as_str).collect();
    let (ads, summary) = daemons.query_jobs(constraint(a).as_deref(), &projection)?;
    if written_as_asked(&ads, a, mask.as_ref(), &env, out)? {
        return Ok(Outcome::Success);
    }
    let user = cedar::ad::string_attr(&summary, "MyName").unwrap_or_else(jobview::my_name);
    let schedd = daemons.schedd()?.to_string();
    let mut text = jobview::banner(daemons.schedd_name(), &schedd, now, offset);
    text.push_str(&if a.totals {
        String::new()
    } else if a.hold {
        jobview::hold_table(&ads, &env, offset)
    } else if a.run {
        jobview::run_table(&ads, &env, offset)
    } else if a.nobatch {
        jobview::nobatch_table(&ads, &env, offset)
    } else {
        // A factory's jobs not yet made are not done: its next ProcId
        // (its cluster ad's, which condor_q reads through each job).
        let mut next_proc = std::collections::BTreeMap::new();
        if ads.iter().any(|ad| ad.contains("JobMaterializeLimit")) {
            for f in daemons.query_factories(None)? {
                let n = |name: &str| match f.get(name) {
                    Some(classad::Expr::Lit(classad::Value::Int(v))) => Some(*v),
                    _ => None,
                };
                if let (Some(c), Some(next)) = (n("ClusterId"), n("JobMaterializeNextProcId")) {
                    next_proc.insert(c, next);
                }
            }
        }
        jobview::batch_table(&ads, &env, offset, &next_proc)
    });
    text.push_str(&jobview::totals(
        &ads,
        &user,
        &totals_of(&summary, "My"),
        &totals_of(&summary, "Allusers"),
        &env,
    ));
    out.write_all(text.as_bytes())?;
    Ok(Outcome::Success)
}

/// `-better-analyze`: the job ads from -jobads or the pool, the slot ads
/// from -slotads or the pool.
/// Writes `ads` as `-json`, `-long` or a print mask asks, if one does
/// (true); otherwise the caller prints its table.
fn written_as_asked(
    ads: &[ClassAd],
    a: &QArgs,
    mask: Option<&PrintMask>,
    env: &Env,
    out: &mut dyn Write,
) -> Result<bool, Error> {
    let text = if a.json {
        jobview::json(ads)
    } else if a.long {
        jobview::long(ads)
    } else if let Some(mask) = mask {
        mask.render(ads, env)
    } else {
        return Ok(false);
    };
    out.write_all(text.as_bytes())?;
    Ok(true)
}

fn analyze(a: &QArgs, now: i64, out: &mut dyn Write) -> Result<Outcome, Error> {
    if !a.better_analyze {
        return Err(Error::Usage(
            "-jobads and -slotads go with -better-analyze: \
             q -better-analyze -jobads FILE -slotads FILE [JOB]"
                .into(),
        ));
    }
    let job_arg = a.targets.first();
    let (jobs, origin) = match &a.jobads {
        Some(path) => (read_file(path)?, path.display().to_string()),
        None => {
            let me = (a.targets.is_empty() && !a.allusers).then(jobview::my_name);
            let constraint =
                jobview::job_constraint(&a.targets, a.constraint.as_deref(), me.as_deref());
            let (ads, _) = Daemons::new(None)?
                .located(a.locate.pool.as_deref(), a.locate.name.as_deref())
                .query_jobs(constraint.as_deref(), &[])?;
            (ads, "the pool".to_string())
        }
    };
    let env = Env::at(now);
    // The slot ads from -slotads, else from the pool's collector.
    let slots = match &a.slotads {
        Some(path) => read_file(path)?,
        None => Daemons::new(None)?
            .located(a.locate.pool.as_deref(), a.locate.name.as_deref())
            .query_collector(cedar::commands::QUERY_STARTD_ADS, None, &[])?,
    };
    let wanted = match job_arg {
        Some(id) => Some(parse_job_id(id)?),
        None => None,
    };
    let jobs: Vec<&ClassAd> = jobs
        .iter()
        .filter(|j| wanted.is_none_or(|w| w.selects(j, &env)))
        .collect();
    if jobs.is_empty() {
        return Err(Error::Input(match job_arg {
            Some(id) => format!("{origin}: no job {id} in it"),
            None => format!("{origin}: no job ads in it"),
        }));
    }
    let mut all_can_run = true;
    for (k, job) in jobs.iter().enumerate() {
        if k > 0 {
            writeln!(out)?;
        }
        let analysis = negotiator::analyze::analyze(job, &slots, &env, Default::default());
        all_can_run &= analysis.can_run();
        write!(out, "{}", analysis.render())?;
    }
    Ok(if all_can_run {
        Outcome::Success
    } else {
        Outcome::NoMatch
    })
}

/// Every ad of an ad file, in the syntax its first character says; like
/// the single-ad reader, a line that is not an attribute is an error, not
/// silently the end of the ad.
fn read_file(path: &Path) -> Result<Vec<ClassAd>, Error> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::read(path, e))?;
    let origin = path.display().to_string();
    let stream = read_ads(&text, syntax_of(&text));
    if let Stop::Error(e) = stream.stop {
        return Err(Error::parse(origin, e));
    }
    let mut ads = Vec::with_capacity(stream.ads.len());
    for r in stream.ads {
        if let Some(e) = r.dropped {
            return Err(Error::parse(origin, e));
        }
        ads.push(r.ad);
    }
    Ok(ads)
}

fn syntax_of(text: &str) -> Syntax {
    let mut chars = text.trim_start().chars();
    let first = chars.next();
    let second = chars.find(|c| !c.is_whitespace());
    match (first, second) {
        (Some('['), Some('{')) | (Some('{'), Some('"')) => Syntax::Json,
        (Some('[') | Some('{'), _) => Syntax::New,
        _ => Syntax::Old,
    }
}

/// A job named on the command line: a whole cluster, or one proc.
#[derive(Clone, Copy)]
struct JobId {
    cluster: i64,
    proc: Option<i64>,
}

impl JobId {
    fn selects(&self, job: &ClassAd, env: &Env) -> bool {
        let int = |a: &str| match job.eval_attr(a, env) {
            Value::Int(i) => Some(i),
            _ => None,
        };
        int("ClusterId") == Some(self.cluster) && self.proc.is_none_or(|p| int("ProcId") == Some(p))
    }
}

fn parse_job_id(text: &str) -> Result<JobId, Error> {
    let bad = || {
        Error::Usage(format!(
            "`{text}` is not a job id (CLUSTER or CLUSTER.PROC)"
        ))
    };
    let (c, p) = match text.split_once('.') {
        Some((c, p)) => (c, Some(p)),
        None => (text, None),
    };
    Ok(JobId {
        cluster: c.parse().map_err(|_| bad())?,
        proc: match p {
            Some(p) => Some(p.parse().map_err(|_| bad())?),
            None => None,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_syntax_of_an_ad_file_is_told_by_its_start() {
        assert_eq!(syntax_of("[{\"A\": 1}]"), Syntax::Json);
        assert_eq!(syntax_of("{ \"A\": 1 }"), Syntax::Json);
        assert_eq!(syntax_of("[ A = 1 ]"), Syntax::New);
        assert_eq!(syntax_of("{ [ A = 1 ], [ A = 2 ] }"), Syntax::New);
        assert_eq!(syntax_of("A = 1\n"), Syntax::Old);
    }

    #[test]
    fn job_ids_are_a_cluster_or_a_proc() {
        assert!(parse_job_id("12").unwrap().proc.is_none());
        assert_eq!(parse_job_id("12.3").unwrap().proc, Some(3));
        assert!(parse_job_id("x.3").is_err());
    }
}
