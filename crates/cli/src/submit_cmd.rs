//! `ferrocondor submit`: a submit description to job ads, queued in the
//! running pool, or printed (`--dry-run`).

use std::io::{Read, Write};
use std::path::Path;

use config::Host;

use crate::args::SubmitArgs;
use crate::daemon_client::{Daemons, Kind};
use crate::errors::{Error, Outcome};

pub fn run(
    a: &SubmitArgs,
    config_files: &dyn config::Files,
    host: &dyn Host,
    now: i64,
    out: &mut dyn Write,
    diag: &mut dyn Write,
) -> Result<Outcome, Error> {
    let (text, name) = if a.file == Path::new("-") {
        let mut t = String::new();
        std::io::stdin()
            .read_to_string(&mut t)
            .map_err(|e| Error::read("<stdin>", e))?;
        (t, "<stdin>".to_string())
    } else {
        let t = std::fs::read_to_string(&a.file).map_err(|e| Error::read(&a.file, e))?;
        (t, a.file.display().to_string())
    };
    let (config, _) =
        crate::system::load_or_builtin("SUBMIT", config_files, host).map_err(Error::Config)?;
    // SUBMIT_FACTORY_JOBS_BY_DEFAULT: queue statements of several jobs
    // go as factories (condor_submit's default_to_factory).
    let factory_by_default = config
        .boolean("SUBMIT_FACTORY_JOBS_BY_DEFAULT")
        .map_err(|e| Error::Input(format!("configuration error: {e}")))?
        .unwrap_or(false);
    let cwd = std::env::current_dir()
        .map_err(|e| Error::read(".", e))?
        .display()
        .to_string();
    let owner = a
        .owner
        .clone()
        .or_else(|| host.env("USER"))
        .unwrap_or_else(|| "nobody".into());
    // condor_submit's own rule: root does not submit jobs (a dry run
    // queues nothing, so it may).
    // SAFETY: getuid and getgid cannot fail.
    let dry_run = a.dry_run || a.dry_run_to.is_some();
    let factory_wanted = !dry_run;
    if !dry_run && unsafe { libc::getuid() == 0 || libc::getgid() == 0 } {
        return Err(Error::Refused(
            "Submitting jobs as user/group 0 (root) is not allowed for security reasons.".into(),
        ));
    }
    // The jobs of cluster `cluster`, their first proc `first_proc`, each
    // handed to `sink` as it is made.
    let build =
        |cluster: i64, first_proc: i64, sink: &mut submit::JobSink<'_>, diag: &mut dyn Write| {
            let mut opts =
                submit::SubmitOptions::new(cluster, &owner, a.qdate.unwrap_or(now), &cwd);
            opts.first_proc = first_proc;
            opts.submit_file = name.clone();
            opts.append = a.append.clone();
            // condor_submit -batch-name NAME: as the submit command would say it.
            if let Some(name) = &a.batch_name {
                opts.append.push(format!("batch_name = {name}"));
            }
            // condor_submit -queue ARGS: the queue statement, as `-a` would give
            // it (condor_submit turns `-a "queue ..."` into -queue too).
            if !a.queue.is_empty() {
                opts.append.push(format!("queue {}", a.queue.join(" ")));
            }
            opts.environment = host.env_vars();
            opts.random_seed = host.random_seed();
            // condor_submit -factory: a factory whatever the description
            // says (a dry run still shows every job).
            opts.factory = a.factory && factory_wanted;
            opts.factory_by_default = factory_by_default && factory_wanted;
            // A description that asks for late materialization
            // (max_materialize, max_idle) makes a factory, not jobs, when
            // it is queued for real (a dry run shows every job).
            let (warnings, factory) = if factory_wanted {
                match submit::submit_or_factory_jobs(&text, &opts, &config, &SubmitFiles, sink)
                    .map_err(Error::Submit)?
                {
                    submit::Made::Jobs(w) => (w, None),
                    submit::Made::Factory(f, w) => (w, Some(f)),
                }
            } else {
                let w = submit::submit_each(&text, &opts, &config, &SubmitFiles, &mut |ad| {
                    sink(submit::MadeJob::Whole(ad))
                })
                .map_err(Error::Submit)?;
                (w, None)
            };
            for w in &warnings {
                writeln!(diag, "{w}")?;
            }
            Ok::<_, Error>(factory)
        };
    if !dry_run {
        // For real, the schedd hands out the cluster id first (the ads name
        // it: `$(Cluster)`), as condor_submit asks it for a new cluster.
        return queue(Path::new(&cwd), &a.locate, &build, out, diag);
    }
    let mut jobs = Vec::new();
    build(
        a.cluster,
        a.proc,
        &mut |job: submit::MadeJob<'_>| {
            jobs.push(job.into_ad());
            Ok(())
        },
        diag,
    )?;
    let cluster = a.cluster;
    // What the schedd would do to them before queueing: its job transforms,
    // then its submit requirements (a failed one refuses the submission).
    // The schedd also sets Owner; a dry run leaves it as submit made it,
    // so its output compares with condor_submit's.
    let policy =
        schedd::SubmitPolicy::from_config(&config).map_err(|e| Error::Usage(e.to_string()))?;
    let env = classad::Env::at(a.qdate.unwrap_or(now));
    let mut schedd_ad = classad::ClassAd::new();
    schedd_ad.insert_value("MyType", "Scheduler");
    schedd_ad.insert_value(
        "Name",
        config
            .get("FULL_HOSTNAME")
            .ok()
            .flatten()
            .unwrap_or_default()
            .as_str(),
    );
    for job in &mut jobs {
        for note in policy.transforms.apply(job, &env) {
            writeln!(diag, "transform: {note}")?;
        }
        match policy.requirements.check(job, &schedd_ad, &env) {
            Ok(Some(warning)) => writeln!(diag, "WARNING: {warning}")?,
            Ok(None) => {}
            Err(refused) => return Err(Error::Refused(refused.to_string())),
        }
    }
    if let Some(file) = &a.dry_run_to {
        return dry_run_to(file, cluster, &jobs, out);
    }
    if a.json {
        let list: Vec<serde_json::Value> = jobs
            .iter()
            .map(|ad| {
                let mut m = serde_json::Map::new();
                for (name, expr) in ad.iter() {
                    m.insert(
                        name.as_str().to_string(),
                        serde_json::Value::String(classad::unparse::expr_to_string(expr)),
                    );
                }
                serde_json::Value::Object(m)
            })
            .collect();
        writeln!(out, "{}", serde_json::Value::Array(list))?;
    } else {
        for (i, ad) in jobs.iter().enumerate() {
            if i > 0 {
                writeln!(out)?;
            }
            write!(out, "{}", classad::unparse::ad_to_old_syntax(ad))?;
        }
    }
    Ok(Outcome::Success)
}

/// condor_submit's `-dry-run FILE`: what it would have said on standard
/// output, and the job ads (old syntax, a blank line between jobs, as
/// `--dry-run` prints them; condor_submit writes its attribute-by-attribute
/// transcript of the queue protocol there instead) in FILE, or after the
/// summary for `-`.
fn dry_run_to(
    file: &Path,
    cluster: i64,
    jobs: &[classad::ClassAd],
    out: &mut dyn Write,
) -> Result<Outcome, Error> {
    let mut ads = String::new();
    for (i, ad) in jobs.iter().enumerate() {
        if i > 0 {
            ads.push('\n');
        }
        ads.push_str(&classad::unparse::ad_to_old_syntax(ad));
    }
    writeln!(out, "Dry-Run job(s){}", ".".repeat(jobs.len()))?;
    writeln!(out, "{} job(s) dry-run to cluster {cluster}.", jobs.len())?;
    if file == Path::new("-") {
        writeln!(out)?;
        out.write_all(ads.as_bytes())?;
    } else {
        std::fs::write(file, ads).map_err(|e| {
            Error::Input(format!(
                "ERROR: Failed to open file -dry-run output file {}: {e}",
                file.display()
            ))
        })?;
    }
    Ok(Outcome::Success)
}

/// condor_submit's check of the executables it will send: each one the
/// jobs transfer (`transfer_executable`, true unless said otherwise) must
/// exist and not be empty, or nothing is queued. Names with `$$(...)` are
/// left to the execute point.
fn check_executable(
    ad: &classad::ClassAd,
    cwd: &Path,
    seen: &mut std::collections::BTreeSet<String>,
) -> Result<(), Error> {
    let env = classad::Env::at(0);
    {
        let transfer = ad
            .eval_attr("TransferExecutable", &env)
            .as_bool()
            .unwrap_or(true);
        let cmd = match ad.eval_attr("Cmd", &env) {
            classad::Value::Str(c) => c.to_string(),
            _ => return Ok(()),
        };
        if !transfer || cmd.contains("$$") || !seen.insert(cmd.clone()) {
            return Ok(());
        }
        let path = cwd.join(&cmd);
        match std::fs::metadata(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(Error::Input(format!(
                    "ERROR: Executable file {cmd} does not exist"
                )))
            }
            Ok(m) if m.is_file() && m.len() == 0 => {
                return Err(Error::Input(format!(
                    "ERROR: Executable file {cmd} has zero length"
                )))
            }
            _ => {}
        }
    }
    Ok(())
}

/// Makes the jobs of cluster `cluster`, its first proc `first_proc`, each
/// handed to the sink as it is made, its warnings said on the writer given.
type Build<'a> = dyn Fn(
        i64,
        i64,
        &mut submit::JobSink<'_>,
        &mut dyn Write,
    ) -> Result<Option<Box<submit::FactorySubmission>>, Error>
    + 'a;

/// Queues the jobs in the running pool as condor_submit does, over
/// HTCondor's job-queue protocol (QMGMT) on one connection to the schedd:
/// NewCluster, the jobs `build` makes with that id, each sent as it is
/// made (the cluster ad with the first, then proc ads of what differs:
/// the tool never holds a large cluster whole), one commit. The schedd sets Owner (from
/// the authentication: the ads send none), applies its transforms and
/// submit requirements at the commit, and answers once the jobs are on
/// disk. Any failure before the commit closes the connection without
/// one, and the schedd keeps nothing of it.
fn queue(
    cwd: &Path,
    locate: &crate::args::Locate,
    build: &Build<'_>,
    out: &mut dyn Write,
    diag: &mut dyn Write,
) -> Result<Outcome, Error> {
    let daemons = Daemons::new(None)?.located(locate.pool.as_deref(), locate.name.as_deref());
    let addr = daemons.schedd()?.clone();
    let command = cedar::commands::QMGMT_WRITE_CMD;
    let mut sock = daemons.connect(Kind::Schedd, &addr, command)?;
    let queued = send(&mut sock, cwd, build, out, diag);
    // CloseSocket: after a commit, the end of the conversation; before
    // one (a failure), the schedd drops what the connection sent.
    let _ = cedar::qmgmt::close(&mut sock);
    let (cluster, procs, warning) = match queued? {
        Sent::Nothing => {
            writeln!(out, "0 job(s) submitted.")?;
            return Ok(Outcome::Success);
        }
        Sent::Cluster(c, n, w) => (c, n, w),
        Sent::Failed(e) => return Err(refusal(&daemons, &addr, e)),
    };
    if let Some(w) = &warning {
        writeln!(diag, "WARNING: {w}")?;
    }
    writeln!(out, "{procs} job(s) submitted to cluster {cluster}.")?;
    Ok(Outcome::Success)
}

/// What one QMGMT conversation came to.
enum Sent {
    /// The description queues no job: nothing committed.
    Nothing,
    /// Committed: the cluster, its number of jobs, the schedd's warning.
    Cluster(i32, usize, Option<String>),
    /// The schedd refused a call, or the connection failed.
    Failed(Failed),
}

/// A failed call.
struct Failed {
    error: cedar::qmgmt::QmgmtError,
}

/// The conversation up to and including the commit (not the close).
/// `Err` is a failure of ours (the description, its executables, our
/// output); `Ok(Sent::Failed)` one of the schedd's or the connection's.
fn send(
    sock: &mut cedar::Sock,
    cwd: &Path,
    build: &Build<'_>,
    out: &mut dyn Write,
    diag: &mut dyn Write,
) -> Result<Sent, Error> {
    let failed = |error| Ok(Sent::Failed(Failed { error }));
    // condor_submit asks first what the schedd can do (late
    // materialization, ...); a plain submission needs none of it.
    if let Err(e) = cedar::qmgmt::get_capabilities(sock) {
        return failed(e);
    }
    let cluster = match cedar::qmgmt::new_cluster(sock) {
        Ok(c) => c,
        Err(e) => return failed(e),
    };
    // Each job is checked (its executable, once a name) and sent as soon
    // as it is made; a failure stops the description there (an error of
    // our own in `local`, of the schedd's in `refused`), and nothing is
    // committed.
    let mut seen = std::collections::BTreeSet::new();
    let mut splitter = submit::Splitter::default();
    let mut sender = cedar::qmgmt::ClusterSender::new(sock, cluster);
    let (mut local, mut refused) = (None, None);
    let stopped = || submit::SubmitError::new("stopped");
    // The last whole job's difference from the cluster ad, which is each
    // copy's too (a copy differs from it only by ProcId, which the
    // sender gives every proc).
    let mut proc_ad = classad::ClassAd::new();
    let made = build(
        i64::from(cluster),
        0,
        &mut |made: submit::MadeJob<'_>| {
            let mut cluster_ad = None;
            if let submit::MadeJob::Whole(mut job) = made {
                if let Err(e) = check_executable(&job, cwd, &mut seen) {
                    local = Some(e);
                    return Err(stopped());
                }
                // Whose the jobs are is the schedd's to say, from the
                // authentication (`Owner = undefined` goes instead); User
                // and the like it sets too.
                job.remove("Owner");
                (cluster_ad, proc_ad) = splitter.split(&job);
            }
            if cluster_ad.is_some() {
                if let Err(e) = writeln!(out, "Submitting job(s)...") {
                    local = Some(e.into());
                    return Err(stopped());
                }
            }
            if let Err(e) = sender.send(cluster_ad.as_ref(), &proc_ad) {
                refused = Some(e);
                return Err(stopped());
            }
            Ok(())
        },
        diag,
    );
    if let Some(e) = local {
        return Err(e);
    }
    let jobs = sender.sent();
    if let Some(e) = refused {
        return failed(e);
    }
    if let Some(factory) = made? {
        // Late materialization: the factory goes instead of the jobs
        // (none was sent), as condor_submit sends it.
        drop(sender);
        let mut job = factory.first_job.clone();
        check_executable(&job, cwd, &mut seen)?;
        job.remove("Owner");
        job.remove("ProcId");
        writeln!(out, "Submitting job(s)...")?;
        let digest = |items_file: &str| factory.digest(items_file);
        return match cedar::qmgmt::submit_factory(
            sock,
            cluster,
            factory.limit(),
            &factory.items,
            &digest,
            &job,
        ) {
            Ok(warning) => Ok(Sent::Cluster(cluster, factory.total as usize, warning)),
            Err(e) => failed(e),
        };
    }
    if jobs == 0 {
        return Ok(Sent::Nothing);
    }
    match sender.commit() {
        Ok(warning) => Ok(Sent::Cluster(cluster, jobs, warning)),
        Err(e) => failed(e),
    }
}

/// The schedd's refusal as the person should read it: its own reason
/// where it gave one (a submit requirement's, a user it takes no jobs
/// from), HTCondor's meaning of NewProc's codes, else which call failed.
fn refusal(daemons: &Daemons, addr: &cedar::Sinful, f: Failed) -> Error {
    use cedar::qmgmt::QmgmtError;
    match &f.error {
        QmgmtError::Refused {
            reason: Some(r), ..
        } if !r.is_empty() => Error::Daemon(r.clone()),
        QmgmtError::Refused {
            call: "NewProc",
            rval,
            errno,
            ..
        } => {
            let why = if *rval == NEWJOB_ERR_MAX_JOBS_PER_SUBMISSION {
                "it has more jobs than the schedd takes in one submission \
                 (MAX_JOBS_PER_SUBMISSION)"
                    .to_string()
            } else if *errno == EFBIG {
                "it has more bytes of job ads than the schedd takes in one submission".to_string()
            } else {
                format!("the schedd at {addr} refused it: {}", f.error)
            };
            Error::Daemon(format!("submission refused: {why}; none was queued"))
        }
        e => daemons.refused(
            Kind::Schedd,
            addr,
            cedar::commands::QMGMT_WRITE_CMD,
            &e.to_string(),
        ),
    }
}

/// NewProc's answer when the submission would be over
/// MAX_JOBS_PER_SUBMISSION (HTCondor's NEWJOB_ERR_MAX_JOBS_PER_SUBMISSION).
const NEWJOB_ERR_MAX_JOBS_PER_SUBMISSION: i64 = -4;
/// NewProc's errno when the submission's ads are over the schedd's bound
/// on bytes.
const EFBIG: i64 = 27;

/// The submitter's files on the real disk.
pub(crate) struct SubmitFiles;

impl submit::Files for SubmitFiles {
    fn size(&self, path: &str) -> Option<u64> {
        let meta = std::fs::metadata(path).ok()?;
        if meta.is_dir() {
            let mut total = 0;
            for e in std::fs::read_dir(path).ok()?.flatten() {
                total += self.size(&e.path().display().to_string()).unwrap_or(0);
            }
            Some(total)
        } else {
            Some(meta.len())
        }
    }

    fn list_dir(&self, path: &str) -> Result<Vec<submit::DirEntry>, submit::FileError> {
        let entries = std::fs::read_dir(path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => submit::FileError::NotFound,
            _ => submit::FileError::Other(e.to_string()),
        })?;
        Ok(entries
            .flatten()
            .map(|e| submit::DirEntry {
                name: e.file_name().to_string_lossy().into_owned(),
                is_dir: e.file_type().is_ok_and(|t| t.is_dir()),
            })
            .collect())
    }

    fn read(&self, path: &str) -> Result<String, submit::FileError> {
        std::fs::read_to_string(path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => submit::FileError::NotFound,
            _ => submit::FileError::Other(e.to_string()),
        })
    }
}
