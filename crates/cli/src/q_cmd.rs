//! `ferrocondor q`: the job queue as condor_q shows it. With no pool to ask
//! yet, only `-better-analyze` over ad files works (condor_q's `-jobads` and
//! `-slotads`); anything else says so.

use std::io::Write;
use std::path::Path;

use classad::reader::{read_ads, Stop, Syntax};
use classad::{ClassAd, Env, Value};

use crate::args::QArgs;
use crate::errors::{Error, Outcome};

pub fn run(a: &QArgs, now: i64, out: &mut dyn Write) -> Result<Outcome, Error> {
    let (Some(jobads), Some(slotads)) = (&a.jobads, &a.slotads) else {
        return Err(Error::Usage(
            "q needs a running pool to ask, and `ferrocondor pool up` is not there yet; \
             what works today is the offline analysis: \
             q -better-analyze -jobads FILE -slotads FILE [JOB]"
                .into(),
        ));
    };
    if !a.better_analyze {
        return Err(Error::Usage(
            "with -jobads and -slotads, only -better-analyze is supported yet".into(),
        ));
    }
    let env = Env::at(now);
    let jobs = read_file(jobads)?;
    let slots = read_file(slotads)?;
    let wanted = match &a.job {
        Some(id) => Some(parse_job_id(id)?),
        None => None,
    };
    let jobs: Vec<&ClassAd> = jobs
        .iter()
        .filter(|j| wanted.is_none_or(|w| w.selects(j, &env)))
        .collect();
    if jobs.is_empty() {
        return Err(Error::Input(match &a.job {
            Some(id) => format!("{}: no job {id} in it", jobads.display()),
            None => format!("{}: no job ads in it", jobads.display()),
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
