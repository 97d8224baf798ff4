//! `ferrocondor submit`: a submit description to job ads, queued in the
//! running pool, or printed (`--dry-run`).

use std::io::{Read, Write};
use std::path::Path;

use config::Host;

use crate::args::SubmitArgs;
use crate::errors::{Error, Outcome};
use crate::jobview;

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
    if !dry_run && unsafe { libc::getuid() == 0 || libc::getgid() == 0 } {
        return Err(Error::Refused(
            "Submitting jobs as user/group 0 (root) is not allowed for security reasons.".into(),
        ));
    }
    // For real, the pool hands out the cluster id first (the ads name it:
    // `$(Cluster)`), as condor_submit asks the schedd for a new cluster.
    let client = jobview::client();
    let cluster = if dry_run {
        a.cluster
    } else {
        let c: wire::api::NewCluster =
            client.call(wire::api::PATH_NEW_CLUSTER, &wire::api::Empty {})?;
        i64::from(c.cluster)
    };
    let mut opts = submit::SubmitOptions::new(cluster, &owner, a.qdate.unwrap_or(now), &cwd);
    opts.first_proc = if dry_run { a.proc } else { 0 };
    opts.submit_file = name;
    opts.append = a.append.clone();
    // condor_submit -batch-name NAME: as the submit command would say it.
    if let Some(name) = &a.batch_name {
        opts.append.push(format!("batch_name = {name}"));
    }
    // condor_submit -queue ARGS: the queue statement, as `-a` would give it
    // (condor_submit turns `-a "queue ..."` into -queue too).
    if !a.queue.is_empty() {
        opts.append.push(format!("queue {}", a.queue.join(" ")));
    }
    opts.environment = host.env_vars();
    opts.random_seed = host.random_seed();
    let mut submission =
        submit::submit(&text, &opts, &config, &SubmitFiles).map_err(Error::Submit)?;
    for w in &submission.warnings {
        writeln!(diag, "{w}")?;
    }
    if !dry_run {
        check_executables(&submission.jobs, Path::new(&cwd))?;
        return queue(&client, cluster, &submission.jobs, out, diag);
    }
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
    for job in &mut submission.jobs {
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
        return dry_run_to(file, cluster, &submission.jobs, out);
    }
    if a.json {
        let list: Vec<serde_json::Value> = submission
            .jobs
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
        for (i, ad) in submission.jobs.iter().enumerate() {
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
fn check_executables(jobs: &[classad::ClassAd], cwd: &Path) -> Result<(), Error> {
    let env = classad::Env::at(0);
    let mut seen = std::collections::BTreeSet::new();
    for ad in jobs {
        let transfer = ad
            .eval_attr("TransferExecutable", &env)
            .as_bool()
            .unwrap_or(true);
        let cmd = match ad.eval_attr("Cmd", &env) {
            classad::Value::Str(c) => c.to_string(),
            _ => continue,
        };
        if !transfer || cmd.contains("$$") || !seen.insert(cmd.clone()) {
            continue;
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

/// Sends the cluster to the pool, which sets Owner, applies its transforms
/// and submit requirements, and answers once the jobs are on disk.
fn queue(
    client: &wire::Client,
    cluster: i64,
    jobs: &[classad::ClassAd],
    out: &mut dyn Write,
    diag: &mut dyn Write,
) -> Result<Outcome, Error> {
    if jobs.is_empty() {
        writeln!(out, "0 job(s) submitted.")?;
        return Ok(Outcome::Success);
    }
    let ads = jobs
        .iter()
        .map(|ad| {
            let mut s = String::new();
            classad::unparse::ad_into(&mut s, ad);
            s
        })
        .collect();
    writeln!(out, "Submitting job(s)...")?;
    let done: wire::api::Submitted = client
        .call(
            wire::api::PATH_SUBMIT,
            &wire::api::SubmitRequest {
                cluster: cluster as u32,
                ads,
            },
        )
        .map_err(|e| match e {
            wire::Error::Refused { message, .. } => Error::Daemon(message),
            e => Error::Pool(e),
        })?;
    if let Some(w) = &done.warning {
        writeln!(diag, "WARNING: {w}")?;
    }
    writeln!(
        out,
        "{} job(s) submitted to cluster {}.",
        done.procs, done.cluster
    )?;
    Ok(Outcome::Success)
}

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
