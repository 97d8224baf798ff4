//! One job's ClassAd, built from the submit commands as condor_submit
//! (HTCondor 24.0.24) builds it.
//!
//! The attributes and their defaults were read from HTCondor's answers
//! (`oracle/vectors/submit/`, and our own cases in `tests/data/cases/`): a vanilla
//! job with only an executable gets the ad of vector `s01-minimal`. The
//! submit file's `+Attr`/`MY.Attr` values are put in last, so they win
//! over what submit computed; the configuration's `SUBMIT_ATTRS` first, so
//! everything else wins over them.

use std::collections::BTreeSet;

use classad::{ClassAd, Expr, Value};

use crate::error::SubmitError;
use crate::files::{absolute, Files};
use crate::quoting::{environment_v2, parse_arguments, parse_environment, Environment, JobArgs};
use crate::requirements::{self, Inputs, ShouldTransfer};
use crate::settings::Settings;
use crate::table::{Found, Table};
use crate::units::{request_expr, BaseUnit};
use crate::SubmitOptions;

/// HTCondor's universes, as far as ferrocondor runs them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Universe {
    Vanilla,
    Scheduler,
    Local,
    Parallel,
    /// The vanilla universe with `WantDocker`.
    Docker,
    /// The vanilla universe with `WantContainer`.
    Container,
}

impl Universe {
    fn number(self) -> i64 {
        match self {
            Universe::Vanilla | Universe::Docker | Universe::Container => 5,
            Universe::Scheduler => 7,
            Universe::Parallel => 11,
            Universe::Local => 12,
        }
    }

    /// Whether the job runs on the access point itself.
    fn on_access_point(self) -> bool {
        matches!(self, Universe::Scheduler | Universe::Local)
    }

    fn parse(text: &str) -> Result<Universe, String> {
        Ok(match text.to_ascii_lowercase().as_str() {
            "vanilla" | "5" => Universe::Vanilla,
            "scheduler" | "7" => Universe::Scheduler,
            "local" | "12" => Universe::Local,
            "parallel" | "mpi" | "11" => Universe::Parallel,
            "docker" => Universe::Docker,
            "container" => Universe::Container,
            "standard" | "1" => return Err("'Standard' is not a supported universe.".into()),
            "pipe" | "2" => return Err("'Pipe' is not a supported universe.".into()),
            u @ ("java" | "10" | "vm" | "13" | "grid" | "globus" | "9") => {
                return Err(format!(
                    "the '{u}' universe is an HTCondor universe that ferrocondor does not run; use vanilla, docker, container, parallel, local or scheduler"
                ))
            }
            other => return Err(format!("I don't know about the '{other}' universe.")),
        })
    }
}

/// What every job of a submission shares.
pub(crate) struct Context<'a> {
    pub options: &'a SubmitOptions,
    pub settings: &'a Settings,
    pub files: &'a dyn Files,
}

fn lit(v: impl Into<Value>) -> Expr {
    Expr::from_value(v.into())
}

fn string(s: &str) -> Expr {
    Expr::from_value(Value::str(s))
}

/// Parses an expression a command gave; the error names the command.
fn expr_of(found: &Found, attr: &str) -> Result<Expr, SubmitError> {
    classad::parse_expr(&found.value).map_err(|e| {
        found.expr_error(
            &e,
            format!(
                "the value is not a ClassAd expression ({}): {attr} = {}",
                e.message(),
                found.value
            ),
        )
    })
}

fn bool_of(found: &Found) -> Result<bool, SubmitError> {
    config::parse_bool(&found.value).ok_or_else(|| {
        found.error(format!(
            "`{}` is not a boolean (expected true or false)",
            found.value
        ))
    })
}

/// Size in KiB, rounded up, of a file the job needs; 0 when missing.
fn size_kb(files: &dyn Files, path: &str) -> i64 {
    files
        .size(path)
        .map_or(0, |b| i64::try_from(b.div_ceil(1024)).unwrap_or(i64::MAX))
}

/// Builds the ad of job `proc` of the cluster.
/// What a parallel job's `$(Node)` expands to in its ad until the access
/// point starts its nodes (HTCondor's placeholder, kept as it is so that
/// ads move between HTCondor's tools and ours unchanged).
pub const NODE_PLACEHOLDER: &str = "#pArAlLeLnOdE#";

/// The job's universe: `universe`, else DEFAULT_UNIVERSE, else vanilla.
pub(crate) fn universe_of(t: &Table, s: &Settings) -> Result<Universe, SubmitError> {
    Ok(match t.get(&["universe", "JobUniverse"])? {
        Some(f) => Universe::parse(&f.value).map_err(|m| f.error(m))?,
        None => match &s.default_universe {
            Some(u) => Universe::parse(u)
                .map_err(|m| SubmitError::new(format!("DEFAULT_UNIVERSE: {m}")))?,
            None => Universe::Vanilla,
        },
    })
}

pub(crate) fn build(t: &Table, cx: &Context<'_>, proc: i64) -> Result<ClassAd, SubmitError> {
    let o = cx.options;
    let s = cx.settings;
    let mut ad = ClassAd::new();

    for (attr, text) in &s.submit_attrs {
        let e = classad::parse_expr(text).map_err(|e| {
            SubmitError::new(format!(
                "SUBMIT_ATTRS names {attr}, whose value is not a ClassAd expression ({}): {text}",
                e.message()
            ))
        })?;
        ad.insert(attr.as_str(), e);
    }

    ad.insert("MyType", string("Job"));
    ad.insert("TargetType", string("Machine"));
    ad.insert("ClusterId", lit(o.cluster));
    ad.insert("ProcId", lit(proc));
    ad.insert("QDate", lit(o.qdate));
    ad.insert("EnteredCurrentStatus", lit(o.qdate));
    // The schedd sets the owner from the submitter's identity.
    ad.insert("Owner", lit(Value::Undefined));
    ad.insert("JobStatus", lit(1i64));
    for name in [
        "CommittedSlotTime",
        "CommittedSuspensionTime",
        "CommittedTime",
        "CumulativeSlotTime",
        "CumulativeSuspensionTime",
        "CurrentHosts",
        "ExitStatus",
        "LastSuspensionTime",
        "NumCkpts",
        "NumJobCompletions",
        "NumJobStarts",
        "NumRestarts",
        "NumSystemHolds",
        "TotalSuspensions",
    ] {
        ad.insert(name, lit(0i64));
    }
    for name in [
        "CumulativeRemoteSysCpu",
        "CumulativeRemoteUserCpu",
        "RemoteSysCpu",
        "RemoteUserCpu",
        "RemoteWallClockTime",
    ] {
        ad.insert(name, lit(0.0f64));
    }
    ad.insert("ExitBySignal", lit(false));
    ad.insert("LeaveJobInQueue", lit(false));
    ad.insert("MinHosts", lit(1i64));
    ad.insert("MaxHosts", lit(1i64));

    // Universe.
    let universe = universe_of(t, s)?;
    ad.insert("JobUniverse", lit(universe.number()));
    if universe.on_access_point() || universe == Universe::Parallel {
        ad.insert("KillSig", string("SIGTERM"));
    }
    if let Some(f) = t.get(&["kill_sig", "KillSig"])? {
        ad.insert("KillSig", string(&f.value));
    }
    if !universe.on_access_point() {
        let lease = match t.get(&["job_lease_duration", "JobLeaseDuration"])? {
            Some(f) => expr_of(&f, "JobLeaseDuration")?,
            None => match &s.default_lease_duration {
                Some(d) => classad::parse_expr(d).map_err(|e| {
                    SubmitError::new(format!("JOB_DEFAULT_LEASE_DURATION: {}", e.message()))
                })?,
                None => lit(2400i64),
            },
        };
        ad.insert("JobLeaseDuration", lease);
    }
    if universe == Universe::Parallel {
        let Some(f) = t.get(&["machine_count", "MaxHosts"])? else {
            return Err(SubmitError::new(
                "a parallel universe job needs machine_count, the number of machines it runs on",
            )
            .command("universe"));
        };
        let n: i64 = f
            .value
            .parse()
            .map_err(|_| f.error(format!("`{}` is not a number of machines", f.value)))?;
        ad.insert("MinHosts", lit(n));
        ad.insert("MaxHosts", lit(n));
        ad.insert("JobRequiresSandbox", lit(true));
        ad.insert("WantIOProxy", lit(true));
    }

    // Directories and the executable.
    let iwd = match t.get(&["initialdir", "initial_dir", "iwd", "job_iwd"])? {
        Some(f) => absolute(&o.cwd, &f.value),
        None => o.cwd.clone(),
    };
    ad.insert("Iwd", string(&iwd));
    let Some(exe) = t.get(&["executable", "Cmd"])? else {
        return Err(SubmitError::new(
            "no `executable` was given: every job needs `executable = program`",
        ));
    };
    let exe_path = absolute(&o.cwd, &exe.value);
    let transfer_exe = match t.get(&["transfer_executable", "TransferExecutable"])? {
        Some(f) => {
            let b = bool_of(&f)?;
            if !b {
                ad.insert("TransferExecutable", lit(false));
            }
            b
        }
        None => true,
    };
    ad.insert(
        "Cmd",
        string(if transfer_exe { &exe_path } else { &exe.value }),
    );
    let exe_kb = size_kb(cx.files, &exe_path);

    // Containers.
    let mut opsys_replacement = None;
    match universe {
        Universe::Docker => {
            let Some(image) = t.get(&["docker_image", "DockerImage"])? else {
                return Err(SubmitError::new(
                    "a docker universe job needs docker_image, the image to run",
                )
                .command("universe"));
            };
            ad.insert("DockerImage", string(&image.value));
            ad.insert("WantDocker", lit(true));
            opsys_replacement = Some(vec!["TARGET.HasDocker".to_string()]);
        }
        Universe::Container => {
            let Some(image) = t.get(&["container_image", "docker_image", "ContainerImage"])? else {
                return Err(SubmitError::new(
                    "container jobs require a container_image or docker_image",
                )
                .command("universe"));
            };
            ad.insert("WantContainer", lit(true));
            let mut clauses = vec!["TARGET.HasContainer".to_string()];
            if image.value.starts_with("docker://") {
                ad.insert("ContainerImage", string(&image.value));
                ad.insert("ContainerImageSource", string("docker"));
                ad.insert("WantDockerImage", lit(true));
                clauses.push("TARGET.HasDockerURL".into());
            } else if image.value.ends_with(".sif") {
                let base = image.value.rsplit('/').next().unwrap_or(&image.value);
                ad.insert("ContainerImage", string(base));
                ad.insert("ContainerImageSource", string("cedar"));
                ad.insert("WantSIF", lit(true));
                clauses.push("TARGET.HasSIF".into());
            } else {
                let base = image.value.trim_end_matches('/');
                let base = base.rsplit('/').next().unwrap_or(base);
                ad.insert("ContainerImage", string(base));
                ad.insert("ContainerImageSource", string("cedar"));
                ad.insert("WantSandboxImage", lit(true));
                clauses.push("TARGET.HasSandboxImage".into());
            }
            opsys_replacement = Some(clauses);
        }
        _ => {}
    }

    // Arguments and environment.
    match t.get(&["arguments", "args", "Arguments"])? {
        Some(f) => match parse_arguments(&f.value).map_err(|m| f.error(m))? {
            JobArgs::V1(a) => {
                ad.insert("Args", string(&a));
            }
            JobArgs::V2(a) => {
                ad.insert("Arguments", string(&a));
            }
        },
        None => ad.insert("Arguments", string("")),
    }
    let mut env = Environment::new();
    if let Some(f) = t.get(&["getenv"])? {
        if bool_of(&f)? {
            for (k, v) in &o.environment {
                env.insert(k.clone(), v.clone());
            }
        }
    }
    match (t.get(&["environment", "Environment"])?, t.get(&["env"])?) {
        (Some(f), _) => {
            parse_environment(&f.value, &mut env).map_err(|m| f.error(m))?;
            ad.insert("Environment", string(&environment_v2(&env)));
        }
        (None, Some(f)) if env.is_empty() => {
            // The old `env` command keeps HTCondor's first environment form.
            parse_environment(&f.value, &mut Environment::new()).map_err(|m| f.error(m))?;
            ad.insert("Env", string(&f.value));
            ad.insert("EnvDelim", string(";"));
        }
        (None, Some(f)) => {
            parse_environment(&f.value, &mut env).map_err(|m| f.error(m))?;
            ad.insert("Environment", string(&environment_v2(&env)));
        }
        (None, None) => ad.insert("Environment", string(&environment_v2(&env))),
    }

    // Standard streams and the user log.
    let mut input_kb = 0i64;
    for (keys, attr, stream_keys, stream_attr, transfer_attr) in [
        (
            &["input", "stdin", "In"][..],
            "In",
            &["stream_input", "StreamIn"][..],
            "StreamIn",
            "TransferIn",
        ),
        (
            &["output", "stdout", "Out"][..],
            "Out",
            &["stream_output", "StreamOut"][..],
            "StreamOut",
            "TransferOut",
        ),
        (
            &["error", "stderr", "Err"][..],
            "Err",
            &["stream_error", "StreamErr"][..],
            "StreamErr",
            "TransferErr",
        ),
    ] {
        match t.get(keys)? {
            Some(f) => {
                ad.insert(attr, string(&f.value));
                let stream = match t.get(stream_keys)? {
                    Some(sf) => bool_of(&sf)?,
                    None => false,
                };
                ad.insert(stream_attr, lit(stream));
                if attr == "In" {
                    input_kb += size_kb(cx.files, &absolute(&iwd, &f.value));
                }
            }
            None => {
                ad.insert(attr, string("/dev/null"));
                ad.insert(transfer_attr, lit(false));
            }
        }
    }
    if let Some(f) = t.get(&["log", "UserLog"])? {
        ad.insert("UserLog", string(&absolute(&iwd, &f.value)));
    }

    // File transfer.
    let should = match t.get(&["should_transfer_files", "ShouldTransferFiles"])? {
        Some(f) => ShouldTransfer::parse(&f.value)
            .ok_or_else(|| f.error(format!("`{}` is not one of YES, NO or IF_NEEDED", f.value)))?,
        None => match &s.default_should_transfer {
            Some(d) => ShouldTransfer::parse(d).unwrap_or(ShouldTransfer::IfNeeded),
            None => ShouldTransfer::IfNeeded,
        },
    };
    ad.insert("ShouldTransferFiles", string(should.name()));
    // A job that always transfers its files does not care where it runs.
    if should != ShouldTransfer::Yes {
        if let Some(fs) = &s.filesystem_domain {
            ad.insert("FileSystemDomain", string(fs));
        }
    }
    let when = t.get(&["when_to_transfer_output", "WhenToTransferOutput"])?;
    match (&when, should) {
        (Some(f), ShouldTransfer::No) if f.value.eq_ignore_ascii_case("ON_EXIT_OR_EVICT") => {
            return Err(f.error(
                "when_to_transfer_output = ON_EXIT_OR_EVICT needs file transfer, but should_transfer_files is NO",
            ))
        }
        (_, ShouldTransfer::No) => {}
        (Some(f), _) => {
            let v = f.value.to_ascii_uppercase();
            if !matches!(v.as_str(), "ON_EXIT" | "ON_EXIT_OR_EVICT" | "ON_SUCCESS") {
                return Err(f.error(format!(
                    "`{}` is not one of ON_EXIT, ON_EXIT_OR_EVICT or ON_SUCCESS",
                    f.value
                )));
            }
            ad.insert("WhenToTransferOutput", string(&v));
        }
        (None, _) => ad.insert("WhenToTransferOutput", string("ON_EXIT")),
    }
    let mut methods: BTreeSet<String> = BTreeSet::new();
    let mut note_url = |item: &str| {
        if let Some((scheme, _)) = item.split_once("://") {
            if !scheme.is_empty()
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
            {
                methods.insert(scheme.to_ascii_lowercase());
                return true;
            }
        }
        false
    };
    if let Some(f) = t.get(&[
        "transfer_input_files",
        "TransferInputFiles",
        "TransferInput",
    ])? {
        let list = comma_list(&f.value);
        for item in &list {
            if !note_url(item) {
                input_kb += size_kb(cx.files, &absolute(&iwd, item));
            }
        }
        ad.insert("TransferInput", string(&list.join(",")));
    }
    if let Some(f) = t.get(&[
        "transfer_output_files",
        "TransferOutputFiles",
        "TransferOutput",
    ])? {
        let list = comma_list(&f.value);
        ad.insert("TransferOutput", string(&list.join(",")));
    }
    if let Some(f) = t.get(&["output_destination", "OutputDestination"])? {
        note_url(&f.value);
        ad.insert("OutputDestination", string(&f.value));
    }
    if let Some(f) = t.get(&["transfer_output_remaps", "TransferOutputRemaps"])? {
        let v = f.value.trim_matches('"');
        // A target that is a URL needs a plugin for its scheme, as
        // condor_submit's Requirements say.
        for pair in v.split(';') {
            if let Some((_, target)) = pair.split_once('=') {
                note_url(target.trim());
            }
        }
        ad.insert("TransferOutputRemaps", string(v));
    }
    let methods: Vec<String> = methods.into_iter().collect();
    if !methods.is_empty() {
        ad.insert("WantTransferPluginMethods", string(&methods.join(",")));
    }
    ad.insert("ExecutableSize", lit(exe_kb));
    ad.insert("ImageSize", lit(exe_kb));
    ad.insert("DiskUsage", lit(exe_kb + input_kb));
    ad.insert("TransferInputSizeMB", lit(input_kb / 1024));

    // Resource requests.
    let request = |keys: &[&str],
                   attr: &str,
                   default: &str,
                   base: Option<BaseUnit>|
     -> Result<Expr, SubmitError> {
        match t.get(keys)? {
            Some(f) => request_expr(&f.value, base).map_err(|m| {
                f.error(format!(
                    "the value is not a size or a ClassAd expression ({m}): {attr} = {}",
                    f.value
                ))
            }),
            None => classad::parse_expr(default).map_err(|e| {
                SubmitError::new(format!(
                    "the default {attr} `{default}` is not a ClassAd expression: {}",
                    e.message()
                ))
            }),
        }
    };
    let cpus = request(
        &["request_cpus", "RequestCpus"],
        "RequestCpus",
        &s.default_request_cpus,
        None,
    )?;
    let disk = request(
        &["request_disk", "RequestDisk"],
        "RequestDisk",
        &s.default_request_disk,
        Some(BaseUnit::Kilo),
    )?;
    let memory = request(
        &["request_memory", "RequestMemory"],
        "RequestMemory",
        &s.default_request_memory,
        Some(BaseUnit::Mega),
    )?;
    ad.insert("RequestCpus", cpus.clone());
    ad.insert("RequestDisk", disk.clone());
    ad.insert("RequestMemory", memory.clone());
    let mut resources: Vec<(String, String, Expr)> = Vec::new();
    for def in t.definitions() {
        let Some(suffix) = def
            .name
            .get(..8)
            .filter(|p| p.eq_ignore_ascii_case("request_"))
            .map(|_| &def.name[8..])
        else {
            continue;
        };
        if suffix.is_empty()
            || ["cpus", "cpu", "memory", "disk"]
                .iter()
                .any(|r| suffix.eq_ignore_ascii_case(r))
        {
            continue;
        }
        let Some(f) = t.get(&[def.name.as_str()])? else {
            continue;
        };
        let name = if suffix.eq_ignore_ascii_case("gpus") {
            "GPUs".to_string()
        } else {
            suffix.to_string()
        };
        let attr = format!("Request{name}");
        let e = request_expr(&f.value, None).map_err(|m| {
            f.error(format!(
                "the value is not a ClassAd expression ({m}): {attr} = {}",
                f.value
            ))
        })?;
        ad.insert(attr.as_str(), e.clone());
        resources.push((name, attr, e));
    }
    resources.sort_by_key(|r| r.0.to_ascii_lowercase());
    let require_gpus = match t.get(&["require_gpus", "RequireGPUs"])? {
        Some(f) => {
            ad.insert("RequireGPUs", expr_of(&f, "RequireGPUs")?);
            true
        }
        None => false,
    };
    if !s.custom_resource_requirements {
        resources.retain(|r| r.0 == "GPUs");
    }

    // Requirements and Rank.
    let vanilla_like = matches!(
        universe,
        Universe::Vanilla | Universe::Docker | Universe::Container
    );
    let mut leading = Vec::new();
    let mut mentioned = BTreeSet::new();
    if let Some(f) = t.get(&["requirements", "Requirements"])? {
        let e = expr_of(&f, "Requirements")?;
        requirements::references(&e, &mut mentioned);
        leading.push(format!("({})", f.value));
    }
    let append = if vanilla_like {
        s.append_req_vanilla.as_ref()
    } else {
        None
    }
    .or(s.append_requirements.as_ref());
    if let Some(a) = append {
        let e = classad::parse_expr(a).map_err(|e| {
            SubmitError::new(format!(
                "the configuration's APPEND_REQUIREMENTS is not a ClassAd expression ({}): {a}",
                e.message()
            ))
        })?;
        requirements::references(&e, &mut mentioned);
        leading.push(format!("({a})"));
    }
    let text = requirements::requirements(&Inputs {
        leading,
        mentioned,
        arch: &s.arch,
        opsys: &s.opsys,
        opsys_replacement,
        request_disk: &disk,
        request_memory: &memory,
        request_cpus: &cpus,
        resources: resources
            .iter()
            .map(|(n, a, e)| (n.clone(), a.clone(), e))
            .collect(),
        require_gpus,
        transfer: (!universe.on_access_point()).then_some(should),
        plugin_methods: &methods,
    });
    let req = classad::parse_expr(&text).map_err(|e| {
        SubmitError::new(format!(
            "Requirements is not a ClassAd expression ({}): {text}",
            e.message()
        ))
        .command("requirements")
    })?;
    ad.insert("Requirements", req);
    let rank = t.get(&["rank", "preferences", "Rank"])?;
    let append_rank = if vanilla_like {
        s.append_rank_vanilla.as_ref()
    } else {
        None
    }
    .or(s.append_rank.as_ref());
    let rank_text = match (&rank, append_rank) {
        (Some(f), Some(a)) => format!("({}) + ({a})", f.value),
        (Some(f), None) => f.value.clone(),
        (None, Some(a)) => a.clone(),
        (None, None) => "0.0".into(),
    };
    let rank_expr = classad::parse_expr(&rank_text).map_err(|e| {
        let err = SubmitError::new(format!(
            "Rank is not a ClassAd expression ({}): {rank_text}",
            e.message()
        ));
        match &rank {
            Some(f) => f.error(err.message),
            None => err,
        }
    })?;
    ad.insert("Rank", rank_expr);

    // Policy expressions.
    for (keys, attr) in [
        (&["periodic_hold", "PeriodicHold"][..], "PeriodicHold"),
        (
            &["periodic_hold_reason", "PeriodicHoldReason"][..],
            "PeriodicHoldReason",
        ),
        (
            &["periodic_hold_subcode", "PeriodicHoldSubCode"][..],
            "PeriodicHoldSubCode",
        ),
        (
            &["periodic_release", "PeriodicRelease"][..],
            "PeriodicRelease",
        ),
        (&["periodic_remove", "PeriodicRemove"][..], "PeriodicRemove"),
        (&["on_exit_hold", "OnExitHold"][..], "OnExitHold"),
        (
            &["on_exit_hold_reason", "OnExitHoldReason"][..],
            "OnExitHoldReason",
        ),
        (
            &["on_exit_hold_subcode", "OnExitHoldSubCode"][..],
            "OnExitHoldSubCode",
        ),
        (&["concurrency_limits_expr"][..], "ConcurrencyLimits"),
    ] {
        if let Some(f) = t.get(keys)? {
            ad.insert(attr, expr_of(&f, attr)?);
        }
    }
    let on_exit_remove = t.get(&["on_exit_remove", "OnExitRemove"])?;
    if let Some(f) = &on_exit_remove {
        ad.insert("OnExitRemove", expr_of(f, "OnExitRemove")?);
    }
    if let Some(f) = t.get(&["leave_in_queue", "LeaveJobInQueue"])? {
        ad.insert("LeaveJobInQueue", expr_of(&f, "LeaveJobInQueue")?);
    }
    let success = match t.get(&["success_exit_code", "JobSuccessExitCode"])? {
        Some(f) => {
            ad.insert("JobSuccessExitCode", expr_of(&f, "JobSuccessExitCode")?);
            true
        }
        None => false,
    };
    if let Some(f) = t.get(&["max_retries", "JobMaxRetries"])? {
        ad.insert("JobMaxRetries", expr_of(&f, "JobMaxRetries")?);
        let mut remove = format!(
            "NumJobCompletions > JobMaxRetries || ExitCode is {}",
            if success { "JobSuccessExitCode" } else { "0" }
        );
        if let Some(f) = &on_exit_remove {
            let e = expr_of(f, "OnExitRemove")?;
            if matches!(e, Expr::Cond(_)) {
                remove.push_str(&format!(" || ({})", f.value));
            } else {
                remove.push_str(&format!(" || {}", f.value));
            }
        }
        ad.insert(
            "OnExitRemove",
            classad::parse_expr(&remove)
                .map_err(|e| SubmitError::new(e.message()).command("on_exit_remove"))?,
        );
        if !ad.contains("OnExitHold") {
            ad.insert("OnExitHold", lit(false));
        }
    }

    // Scheduling and bookkeeping.
    if let Some(f) = t.get(&["concurrency_limits", "ConcurrencyLimits"])? {
        if t.get(&["concurrency_limits_expr"])?.is_some() {
            return Err(
                f.error("concurrency_limits and concurrency_limits_expr can't be used together")
            );
        }
        let mut limits: Vec<String> = config::split_list(&f.value)
            .map(str::to_ascii_lowercase)
            .collect();
        limits.sort();
        ad.insert("ConcurrencyLimits", string(&limits.join(",")));
    }
    if let Some(f) = t.get(&["priority", "prio", "JobPrio"])? {
        let v = classad::parse_expr(&f.value)
            .ok()
            .map(|e| classad::eval_expr(&e, None, None, &classad::Env::default()));
        let Some(Value::Int(p)) = v else {
            return Err(f.error(format!(
                "priority={} is invalid, must eval to an integer.",
                f.value
            )));
        };
        ad.insert("JobPrio", lit(p));
    } else {
        ad.insert("JobPrio", lit(0i64));
    }
    let notification = match t.get(&["notification", "JobNotification"])? {
        Some(f) => match f.value.to_ascii_lowercase().as_str() {
            "never" => 0i64,
            "always" => 1,
            "complete" => 2,
            "error" => 3,
            _ => {
                return Err(
                    f.error("Notification must be 'Never', 'Always', 'Complete', or 'Error'")
                )
            }
        },
        None => 0,
    };
    ad.insert("JobNotification", lit(notification));
    if let Some(f) = t.get(&["notify_user", "NotifyUser"])? {
        ad.insert("NotifyUser", string(&f.value));
    }
    if let Some(f) = t.get(&["hold"])? {
        if bool_of(&f)? {
            ad.insert("JobStatus", lit(5i64));
            ad.insert("HoldReason", string("submitted on hold at user's request"));
            ad.insert("HoldReasonCode", lit(15i64));
        }
    }
    let nice = match t.get(&["nice_user", "NiceUser"])? {
        Some(f) => bool_of(&f)?,
        None => false,
    };
    if nice {
        ad.insert("MaxJobRetirementTime", lit(0i64));
    }
    let group = t.get(&["accounting_group", "AcctGroup"])?;
    let group_user = t.get(&["accounting_group_user", "AcctGroupUser"])?;
    match (&group, &group_user) {
        (Some(g), u) => {
            let user = u.as_ref().map_or(o.owner.as_str(), |u| u.value.as_str());
            ad.insert("AcctGroup", string(&g.value));
            ad.insert("AcctGroupUser", string(user));
            ad.insert("AccountingGroup", string(&format!("{}.{user}", g.value)));
        }
        (None, Some(u)) => {
            ad.insert("AcctGroupUser", string(&u.value));
            ad.insert("AccountingGroup", string(&u.value));
        }
        (None, None) if nice => {
            ad.insert("AcctGroup", string(&s.nice_user_group));
            ad.insert("AcctGroupUser", string(&o.owner));
            ad.insert(
                "AccountingGroup",
                string(&format!("{}.{}", s.nice_user_group, o.owner)),
            );
        }
        (None, None) => {}
    }
    for (keys, attr, kind) in [
        (&["batch_name", "JobBatchName"][..], "JobBatchName", 's'),
        (
            &["job_max_vacate_time", "JobMaxVacateTime"][..],
            "JobMaxVacateTime",
            'e',
        ),
        (
            &["max_job_retirement_time", "MaxJobRetirementTime"][..],
            "MaxJobRetirementTime",
            'e',
        ),
        (&["coresize", "CoreSize"][..], "CoreSize", 'e'),
        (
            &["job_machine_attrs", "JobMachineAttrs"][..],
            "JobMachineAttrs",
            's',
        ),
        (
            &["want_graceful_removal", "WantGracefulRemoval"][..],
            "WantGracefulRemoval",
            'e',
        ),
        (
            &["max_idle", "max_materialize_idle", "JobMaterializeMaxIdle"][..],
            "JobMaterializeMaxIdle",
            'e',
        ),
        (
            &["description", "JobDescription"][..],
            "JobDescription",
            's',
        ),
        (
            &["allowed_execute_duration", "AllowedExecuteDuration"][..],
            "AllowedExecuteDuration",
            'e',
        ),
        (
            &["allowed_job_duration", "AllowedJobDuration"][..],
            "AllowedJobDuration",
            'e',
        ),
    ] {
        if let Some(f) = t.get(keys)? {
            if kind == 's' {
                ad.insert(attr, string(f.value.trim_matches('"')));
            } else {
                ad.insert(attr, expr_of(&f, attr)?);
            }
        }
    }

    // The submit file's own attributes win over everything above.
    for def in t.definitions() {
        let Some(attr) = def
            .name
            .get(..3)
            .filter(|p| p.eq_ignore_ascii_case("MY."))
            .map(|_| &def.name[3..])
        else {
            continue;
        };
        let value = match t.get(&[def.name.as_str()])? {
            Some(f) => classad::parse_expr(&f.value).map_err(|e| {
                f.expr_error(
                    &e,
                    format!(
                        "the value is not a ClassAd expression ({}): {attr} = {}",
                        e.message(),
                        f.value
                    ),
                )
            })?,
            None => lit(Value::Undefined),
        };
        ad.insert(attr, value);
    }
    Ok(ad)
}

/// The items of a comma-separated list, trimmed, empty ones dropped.
fn comma_list(text: &str) -> Vec<&str> {
    text.split(',')
        .map(str::trim)
        .filter(|x| !x.is_empty())
        .collect()
}
