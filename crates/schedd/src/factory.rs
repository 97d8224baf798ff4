//! Late materialization: a cluster kept as a *factory* that makes its
//! jobs a few at a time (HTCondor's `max_materialize` and `max_idle`).
//!
//! A factory is its cluster's ad (what every job shares: the submitter's
//! job 0), the submit digest and its item rows (`submit::materialize`
//! makes job N from them), and the next ProcId to make. HTCondor's
//! schedd (`qmgmt.cpp`, `job_factory.cpp`) materializes while the
//! cluster's present jobs (neither completed nor removed) are fewer than
//! `JobMaterializeLimit` and its idle or held ones fewer than
//! `JobMaterializeMaxIdle`, unless `JobMaterializePaused` says otherwise;
//! the cluster ends when every job has been made and has left. So here.
//!
//! A job made here is the cluster ad overlaid by a proc ad of what job N
//! has that differs from job 0, both made by the same materialization
//! (so what the schedd cannot know the same way the submitter did, the
//! submitter's environment and files, comes from the cluster ad alike
//! for every job).
//!
//! This module decides and makes ads; the daemon stores the factory with
//! its cluster, and each materialization with the new next ProcId, in one
//! transaction.

use std::sync::Arc;

use classad::{ClassAd, Expr, Value};

use crate::index::StatusCounts;
use crate::job::JobStatus;

/// The cluster ad's attributes of a factory, HTCondor's names.
pub mod attr {
    pub const LIMIT: &str = "JobMaterializeLimit";
    pub const MAX_IDLE: &str = "JobMaterializeMaxIdle";
    pub const PAUSED: &str = "JobMaterializePaused";
    pub const NEXT_PROC_ID: &str = "JobMaterializeNextProcId";
    pub const DIGEST_FILE: &str = "JobMaterializeDigestFile";
    pub const ITEMS_FILE: &str = "JobMaterializeItemsFile";
    pub const TOTAL_SUBMIT_PROCS: &str = "TotalSubmitProcs";
    /// The attributes of the cluster ad edited after the submission
    /// (`condor_qedit` of the cluster): a job made later reads them from
    /// the cluster ad, whatever the digest makes (HTCondor's
    /// `AddClusterEditedAttributes`, `NewProcFromAd` in `qmgmt.cpp`).
    pub const EDITED_CLUSTER_ATTRS: &str = "EditedClusterAttrs";
}

/// The names an `EditedClusterAttrs` list holds (comma or blank separated,
/// as HTCondor writes and reads it).
pub fn edited_attrs(cluster_ad: &ClassAd) -> Vec<String> {
    match cluster_ad.get(attr::EDITED_CLUSTER_ATTRS) {
        Some(Expr::Lit(Value::Str(s))) => s
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|w| !w.is_empty())
            .map(str::to_string)
            .collect(),
        _ => Vec::new(),
    }
}

/// `list` with `names` added (each once, any case), as HTCondor writes
/// EditedClusterAttrs.
pub fn with_edited(list: &[String], names: &[String]) -> String {
    let mut all: Vec<String> = list.to_vec();
    for n in names {
        if !all.iter().any(|a| a.eq_ignore_ascii_case(n)) {
            all.push(n.clone());
        }
    }
    all.join(",")
}

/// What a job made held (`hold = true`) says of why.
const HOLD_ATTRS: [&str; 3] = ["HoldReason", "HoldReasonCode", "HoldReasonSubCode"];

/// "No limit" (HTCondor's INT_MAX).
pub const NO_LIMIT: i64 = i32::MAX as i64;

/// One factory: a cluster that makes its jobs as earlier ones leave.
#[derive(Clone, Debug)]
pub struct Factory {
    pub cluster: i64,
    /// The submit digest (submit commands ending in one queue statement).
    pub digest: String,
    /// The queue statement's item rows.
    pub items: Arc<Vec<String>>,
    /// The next ProcId to make.
    pub next_proc: i64,
    /// How many jobs the factory makes in all.
    pub total: i64,
    /// The cluster ad every job of the factory is chained to.
    pub cluster_ad: Arc<ClassAd>,
    /// Paused by its owner (HTCondor holds the cluster's factory so:
    /// `condor_hold` of the cluster; `condor_release` resumes it).
    pub paused: bool,
    /// Stopped by an error making a job (HTCondor's factory pause mode
    /// "invalid", -1): it makes nothing more until the schedd starts
    /// again, and says why (JobMaterializePauseReason).
    pub error: Option<String>,
    /// Job 0 as the schedd materializes it (what job N is compared with).
    base: Option<ClassAd>,
}

/// Why a factory could not make a job.
#[derive(Clone, Debug, PartialEq)]
pub struct FactoryError(pub String);

impl std::fmt::Display for FactoryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn literal_int(ad: &ClassAd, name: &str) -> Option<i64> {
    match ad.get(name)? {
        Expr::Lit(Value::Int(v)) => Some(*v),
        Expr::Lit(Value::Bool(b)) => Some(i64::from(*b)),
        Expr::Lit(Value::Real(x)) => Some(*x as i64),
        _ => None,
    }
}

impl Factory {
    /// A factory of `cluster_ad`'s cluster; `total` from
    /// `submit::factory_total`.
    pub fn new(
        cluster: i64,
        digest: String,
        items: Vec<String>,
        next_proc: i64,
        total: i64,
        cluster_ad: Arc<ClassAd>,
    ) -> Factory {
        Factory {
            cluster,
            digest,
            items: Arc::new(items),
            next_proc,
            total,
            cluster_ad,
            paused: false,
            error: None,
            base: None,
        }
    }

    /// JobMaterializeLimit: how many of its jobs may be present at once.
    pub fn limit(&self) -> i64 {
        self.int_of(attr::LIMIT).unwrap_or(NO_LIMIT)
    }

    /// JobMaterializeMaxIdle: how many of its jobs may be idle at once.
    pub fn max_idle(&self) -> i64 {
        self.int_of(attr::MAX_IDLE).unwrap_or(NO_LIMIT)
    }

    fn int_of(&self, name: &str) -> Option<i64> {
        let e = self.cluster_ad.get(name)?;
        match classad::eval_expr(e, Some(&self.cluster_ad), None, &classad::Env::default()) {
            Value::Int(v) => Some(v),
            Value::Real(x) => Some(x as i64),
            _ => None,
        }
    }

    /// JobMaterializePaused: a held cluster (or an admin) pauses it.
    pub fn paused(&self) -> bool {
        self.paused
            || self.error.is_some()
            || literal_int(&self.cluster_ad, attr::PAUSED).is_some_and(|p| p != 0)
    }

    /// Whether every job has been made.
    pub fn exhausted(&self) -> bool {
        self.next_proc >= self.total
    }

    /// How many jobs to make now, given the cluster's jobs' counts: while
    /// fewer than the limit are present and fewer than max idle are not
    /// running (idle or held: HTCondor's `getNumNotRunning`, read by
    /// `CheckMaterializePolicyExpression` in `qmgmt.cpp`, so that jobs
    /// submitted held do not pile up past max_idle).
    pub fn due(&self, counts: &StatusCounts) -> i64 {
        if self.paused() || self.exhausted() {
            return 0;
        }
        let gone = counts.of(JobStatus::Completed) + counts.of(JobStatus::Removed);
        let present = counts.jobs() as i64 - gone as i64;
        let idle = (counts.of(JobStatus::Idle) + counts.of(JobStatus::Held)) as i64;
        let room = (self.limit() - present).min(self.max_idle() - idle);
        room.clamp(0, self.total - self.next_proc)
    }

    /// Makes job `next_proc`'s proc ad (what differs from the cluster
    /// ad, with its ProcId) and moves `next_proc` on. `config` is the
    /// access point's, for the submit language's defaults.
    pub fn make(&mut self, config: &config::Config) -> Result<ClassAd, FactoryError> {
        let proc = self.next_proc;
        if self.exhausted() {
            return Err(FactoryError(format!(
                "cluster {}: the factory has made all its {} jobs",
                self.cluster, self.total
            )));
        }
        let options = self.options();
        let files = submit::MemFiles::new();
        let fail = |e: submit::SubmitError| {
            FactoryError(format!(
                "cluster {}: materializing job {proc}: {e}",
                self.cluster
            ))
        };
        // HTCondor's condor_submit leaves out of the digest what no job
        // changes, the executable too (`SubmitHash::make_digest` prunes
        // it): that is in the cluster ad, and the description read here
        // needs one; the digest's own, when it has one, comes later and
        // wins.
        let text = match self.cluster_ad.get("Cmd") {
            Some(Expr::Lit(Value::Str(cmd))) => format!("executable = {cmd}\n{}", self.digest),
            _ => self.digest.clone(),
        };
        if self.base.is_none() {
            let base = submit::materialize(&text, &self.items, 0, &options, config, &files)
                .map_err(fail)?;
            self.base = Some(base);
        }
        // A `$RANDOM_*()` left in the digest (its arguments name a macro
        // of the job) is drawn for each job, as HTCondor's schedd draws
        // it: a seed of the job's own (reproducible: the same job is the
        // same after a restart).
        let mut options = options;
        options.random_seed = job_seed(self.cluster, &self.cluster_ad, proc);
        let job = submit::materialize(&text, &self.items, proc, &options, config, &files)
            .map_err(fail)?;
        let base = self.base.as_ref().expect("made above");
        // What the cluster ad's owner edited after the submission is the
        // cluster ad's to say, for every job made from now on.
        let edited = edited_attrs(&self.cluster_ad);
        let mut own = ClassAd::new();
        for (name, e) in job.iter() {
            let n = name.as_str();
            if n.eq_ignore_ascii_case("ProcId") || n.eq_ignore_ascii_case("ClusterId") {
                continue;
            }
            // JobStatus is always the job's own (HTCondor forces it into
            // the proc ad): `hold = true` makes each job held, whatever
            // status the cluster ad was queued with.
            if n.eq_ignore_ascii_case(crate::job::attr::JOB_STATUS) {
                own.insert(n, e.clone());
                continue;
            }
            // Why it is held comes with it, unless the cluster ad says the
            // same (a client may leave it out of the cluster ad).
            if HOLD_ATTRS.iter().any(|h| h.eq_ignore_ascii_case(n))
                && !self
                    .cluster_ad
                    .get(n)
                    .is_some_and(|c| classad::same::same_expr(c, e))
            {
                own.insert(n, e.clone());
                continue;
            }
            if edited.iter().any(|a| a.eq_ignore_ascii_case(n)) {
                continue;
            }
            if !base.get(n).is_some_and(|b| classad::same::same_expr(b, e)) {
                own.insert(n, e.clone());
            }
        }
        own.insert_value("ClusterId", self.cluster);
        own.insert_value("ProcId", proc);
        self.next_proc += 1;
        Ok(own)
    }

    fn options(&self) -> submit::SubmitOptions {
        let owner = match self.cluster_ad.get("Owner") {
            Some(Expr::Lit(Value::Str(s))) => s.to_string(),
            _ => String::new(),
        };
        let qdate = literal_int(&self.cluster_ad, "QDate").unwrap_or(0);
        submit::SubmitOptions::new(self.cluster, &owner, qdate, "/")
    }
}

/// The seed of job `proc`'s `$RANDOM_*()` draws: its cluster, the
/// cluster's QDate and its ProcId, mixed (splitmix64).
fn job_seed(cluster: i64, cluster_ad: &ClassAd, proc: i64) -> u64 {
    let qdate = literal_int(cluster_ad, "QDate").unwrap_or(0) as u64;
    let mut z = (cluster as u64)
        .wrapping_mul(0x9e37_79b9_7f4a_7c15)
        .wrapping_add(qdate.rotate_left(21))
        .wrapping_add((proc as u64).wrapping_mul(0xbf58_476d_1ce4_e5b9));
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::StatusCounts;

    fn config() -> config::Config {
        config::Config::empty("SCHEDD")
    }

    fn factory(text: &str) -> Factory {
        let options = submit::SubmitOptions::new(3, "alice", 100, "/home/alice");
        let files = submit::MemFiles::new().with("/home/alice/job.sh", "#!/bin/sh\n");
        let made =
            submit::submit_or_factory(text, &options, &config(), &files, &mut |_| Ok(())).unwrap();
        let submit::Made::Factory(f, _) = made else {
            panic!("not a factory")
        };
        let mut cluster_ad = f.first_job.clone();
        cluster_ad.insert_value(attr::LIMIT, f.limit());
        let digest = f.digest("items");
        let total = submit::factory_total(&digest, f.items.len(), &options, &config()).unwrap();
        Factory::new(3, digest, f.items.clone(), 0, total, Arc::new(cluster_ad))
    }

    fn counts(idle: usize, running: usize, gone: usize) -> StatusCounts {
        let mut c = StatusCounts::default();
        for _ in 0..idle {
            c.count(Some(JobStatus::Idle));
        }
        for _ in 0..running {
            c.count(Some(JobStatus::Running));
        }
        for _ in 0..gone {
            c.count(Some(JobStatus::Completed));
        }
        c
    }

    #[test]
    fn materializes_while_under_the_limit_and_max_idle() {
        let mut f =
            factory("executable = job.sh\narguments = $(Process)\nmax_materialize = 2\nqueue 5\n");
        assert_eq!((f.total, f.limit()), (5, 2));
        assert_eq!(f.due(&counts(0, 0, 0)), 2);
        assert_eq!(f.due(&counts(1, 0, 0)), 1);
        assert_eq!(f.due(&counts(1, 1, 0)), 0);
        // Jobs that completed (still in the queue) do not count.
        assert_eq!(f.due(&counts(0, 1, 1)), 1);
        // Job 0 is the cluster ad itself.
        let p = f.make(&config()).unwrap();
        assert!(p.get("Args").is_none());
        assert_eq!(literal_int(&p, "ProcId"), Some(0));
        let p = f.make(&config()).unwrap();
        assert_eq!(literal_int(&p, "ProcId"), Some(1));
        assert_eq!(
            classad::unparse::expr_to_string(p.get("Args").unwrap()),
            "\"1\""
        );
        // What every job shares stays in the cluster ad.
        assert!(p.get("Cmd").is_none());
        f.next_proc = 4;
        assert_eq!(f.due(&counts(0, 0, 0)), 1);
        f.make(&config()).unwrap();
        assert!(f.exhausted());
        assert_eq!(f.due(&counts(0, 0, 0)), 0);
        assert!(f.make(&config()).is_err());

        let f = factory("executable = job.sh\nmax_idle = 1\nqueue 5\n");
        assert_eq!(f.due(&counts(0, 3, 0)), 1);
        assert_eq!(f.due(&counts(1, 3, 0)), 0);
        // A held job is not running: it counts toward max_idle.
        let mut held = counts(0, 3, 0);
        held.count(Some(JobStatus::Held));
        assert_eq!(f.due(&held), 0);
    }

    #[test]
    fn a_digest_as_htcondor_s_client_sends_it() {
        // Recorded from the htcondor 25.14.1 bindings (`Schedd.submit` of
        // `max_materialize = 2` over itemdata): the executable is pruned,
        // in the cluster ad only.
        let digest = "FACTORY.Requirements=MY.Requirements\n\
                      arguments=-c 'sleep 1; echo $(letter) $(ProcId)'\n\
                      FACTORY.Iwd=/home/alice\nmax_materialize=2\n\
                      output=fact.$(ProcId)\n\nQueue 1 letter from condor_submit.1.items\n";
        let items: Vec<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
        let options = submit::SubmitOptions::new(1, "alice", 100, "/");
        let total = submit::factory_total(digest, items.len(), &options, &config()).unwrap();
        assert_eq!(total, 3);
        let mut cluster_ad = ClassAd::new();
        cluster_ad.insert_value("Cmd", "/bin/sh");
        cluster_ad.insert_value("Args", "-c 'sleep 1; echo a 0'");
        cluster_ad.insert_value("Out", "fact.0");
        cluster_ad.insert_value(attr::LIMIT, 2);
        let mut f = Factory::new(1, digest.into(), items, 0, total, Arc::new(cluster_ad));
        let p0 = f.make(&config()).unwrap();
        assert!(
            p0.get("Cmd").is_none() && p0.get("Args").is_none(),
            "{p0:?}"
        );
        let p2 = {
            f.make(&config()).unwrap();
            f.make(&config()).unwrap()
        };
        let text = |n: &str| classad::unparse::expr_to_string(p2.get(n).unwrap());
        assert_eq!(text("Args"), "\"-c 'sleep 1; echo c 2'\"");
        assert_eq!(text("Out"), "\"fact.2\"");
        assert!(p2.get("Cmd").is_none());
    }

    fn text(ad: &ClassAd, name: &str) -> Option<String> {
        ad.get(name).map(classad::unparse::expr_to_string)
    }

    #[test]
    fn hold_true_makes_every_job_held_whatever_the_cluster_ad_says() {
        let mut f = factory("executable = job.sh\nhold = true\nmax_materialize = 2\nqueue 4\n");
        // As a client sends it: JobStatus is each proc's, the cluster ad
        // is queued Idle.
        Arc::make_mut(&mut f.cluster_ad).insert_value("JobStatus", 1);
        Arc::make_mut(&mut f.cluster_ad).remove("HoldReason");
        for proc in 0..2 {
            let p = f.make(&config()).unwrap();
            let mut job = p.clone();
            job.chain_to(Arc::clone(&f.cluster_ad));
            assert_eq!(text(&job, "ProcId").as_deref(), Some(&*proc.to_string()));
            assert_eq!(text(&job, "JobStatus").as_deref(), Some("5"));
            assert_eq!(text(&job, "HoldReasonCode").as_deref(), Some("15"));
            assert_eq!(
                text(&job, "HoldReason").as_deref(),
                Some("\"submitted on hold at user's request\"")
            );
        }
        // Held jobs are present, not idle: the limit holds.
        let mut c = StatusCounts::default();
        c.count(Some(JobStatus::Held));
        c.count(Some(JobStatus::Held));
        assert_eq!(f.due(&c), 0);
    }

    #[test]
    fn an_edited_cluster_attribute_reaches_the_jobs_made_later() {
        let mut f = factory(
            "executable = job.sh\narguments = $(Process)\nmy.Color = \"red\"\n\
             max_materialize = 2\nqueue 4\n",
        );
        f.make(&config()).unwrap();
        // condor_qedit 3 Args '"x"' and Color '"blue"': the cluster ad
        // changes and names them.
        let ad = Arc::make_mut(&mut f.cluster_ad);
        ad.insert_value("Args", "x");
        ad.insert_value("Color", "blue");
        ad.insert_value(attr::EDITED_CLUSTER_ATTRS, "Args,Color");
        let p = f.make(&config()).unwrap();
        assert!(p.get("Args").is_none() && p.get("Color").is_none(), "{p:?}");
        let mut job = p;
        job.chain_to(Arc::clone(&f.cluster_ad));
        assert_eq!(text(&job, "Args").as_deref(), Some("\"x\""));
        assert_eq!(text(&job, "Color").as_deref(), Some("\"blue\""));
        assert_eq!(
            with_edited(
                &edited_attrs(&f.cluster_ad),
                &["color".into(), "Foo".into()]
            ),
            "Args,Color,Foo"
        );
    }

    #[test]
    fn a_random_macro_left_in_the_digest_is_drawn_for_each_job() {
        // condor_submit draws `$RANDOM_*()` into the digest; one still
        // there (a digest written otherwise) is drawn for each job, with
        // the job's own seed: the same job the same after a restart.
        let digest = "FACTORY.Iwd = /home/alice\narguments = $RANDOM_INTEGER(1,1000000000)\n\
                      max_materialize = 4\nQueue 4\n";
        let options = submit::SubmitOptions::new(3, "alice", 100, "/");
        let total = submit::factory_total(digest, 0, &options, &config()).unwrap();
        let mut cluster_ad = ClassAd::new();
        cluster_ad.insert_value("Cmd", "/home/alice/job.sh");
        cluster_ad.insert_value("Args", "17");
        cluster_ad.insert_value("QDate", 100);
        let make = |proc: i64| {
            let mut f = Factory::new(
                3,
                digest.into(),
                Vec::new(),
                proc,
                total,
                Arc::new(cluster_ad.clone()),
            );
            let mut job = f.make(&config()).unwrap();
            job.chain_to(Arc::clone(&f.cluster_ad));
            text_of(&job, "Args")
        };
        let mut args: Vec<String> = (1..4).map(make).collect();
        for a in &args {
            let n: i64 = a
                .trim_matches('"')
                .parse()
                .unwrap_or_else(|_| panic!("{a}"));
            assert!((1..=1_000_000_000).contains(&n), "{a}");
        }
        assert_eq!(make(2), args[1]);
        args.sort();
        args.dedup();
        assert_eq!(args.len(), 3, "{args:?}");
    }

    fn text_of(ad: &ClassAd, name: &str) -> String {
        text(ad, name).unwrap_or_default()
    }

    #[test]
    fn a_paused_factory_makes_nothing() {
        let mut f = factory("executable = job.sh\nmax_materialize = 2\nqueue 5\n");
        Arc::make_mut(&mut f.cluster_ad).insert_value(attr::PAUSED, 1);
        assert_eq!(f.due(&counts(0, 0, 0)), 0);
        Arc::make_mut(&mut f.cluster_ad).insert_value(attr::PAUSED, 0);
        assert_eq!(f.due(&counts(0, 0, 0)), 2);
        f.paused = true;
        assert_eq!(f.due(&counts(0, 0, 0)), 0);
        // Stopped by an error making a job: nothing more, even resumed.
        f.paused = false;
        f.error = Some("job 3: bad item".into());
        assert_eq!(f.due(&counts(0, 0, 0)), 0);
    }
}
