//! # submit — HTCondor's submit description language
//!
//! A submit description (`executable = job.sh`, `arguments = $(Process)`,
//! `queue 10`) becomes job ClassAds here, exactly as `condor_submit` makes
//! them: the same attributes, defaults, `Requirements` clauses, quoting of
//! arguments and environments, and `queue` forms. HTCondor 24.0.24's
//! answers (`oracle/vectors/submit/`) check it. The macro language is the
//! configuration's, expanded by the `config` crate's own expander
//! (`config::macros`).
//!
//! **Architecture invariant:** this crate is pure. It never reads the
//! clock, the environment or the disk: `qdate`, the owner, the cluster, the
//! submit directory and the submitter's environment are arguments
//! ([`SubmitOptions`]), files come through the [`Files`] trait, and the
//! configuration is a [`config::Config`] the caller loaded.
//!
//! Start reading at [`submit`]; a job's ad is built in `job.rs`, its
//! Requirements in `requirements.rs`, the `queue` forms in `queue.rs`.

mod error;
mod factory;
mod files;
mod job;
mod queue;
pub mod quoting;
mod reader;
mod requirements;
mod settings;
mod split;
mod table;
mod units;

use classad::{ClassAd, Value};
use config::macros::Conditional;
use config::Config;

pub use error::{SubmitError, Warning};
pub use factory::{
    factory_total, materialize, submit_or_factory, submit_or_factory_jobs, FactorySubmission, Made,
};
pub use files::{DirEntry, FileError, Files, MemFiles};
pub use split::{split_jobs, Splitter};

use reader::{item_block, parse_statement, Reader, Statement};
use table::{Definition, Table};

/// What `condor_submit` is told besides the description itself.
#[derive(Clone, Debug)]
pub struct SubmitOptions {
    /// The cluster the jobs go into (the schedd assigns it).
    pub cluster: i64,
    /// The first job's process number (0 for a new cluster).
    pub first_proc: i64,
    /// The submitting user (for `nice_user` and accounting groups).
    pub owner: String,
    /// The submit time, epoch seconds (`QDate`, `EnteredCurrentStatus`).
    pub qdate: i64,
    /// The absolute directory submit runs in: relative names are taken
    /// from here (`Iwd` unless `initialdir` says otherwise).
    pub cwd: String,
    /// The submit file's name, for messages and `$(SUBMIT_FILE)`; empty
    /// when the description came from elsewhere.
    pub submit_file: String,
    /// Commands given with `-a`: they act as if written just before the
    /// first `queue` statement.
    pub append: Vec<String>,
    /// The submitter's environment, for `getenv = true` and `$ENV(NAME)`.
    pub environment: Vec<(String, String)>,
    /// Seed for `$RANDOM_CHOICE()` and `$RANDOM_INTEGER()`.
    pub random_seed: u64,
    /// Late materialization whatever the description says (condor_submit
    /// -factory): [`crate::submit_or_factory`] makes a factory even
    /// without `max_materialize` or `max_idle`.
    pub factory: bool,
    /// SUBMIT_FACTORY_JOBS_BY_DEFAULT: a queue statement of more than one
    /// job makes a factory (condor_submit's "smart factory"); one job is
    /// an ordinary submission.
    pub factory_by_default: bool,
}

impl SubmitOptions {
    pub fn new(cluster: i64, owner: &str, qdate: i64, cwd: &str) -> SubmitOptions {
        SubmitOptions {
            cluster,
            first_proc: 0,
            owner: owner.to_string(),
            qdate,
            cwd: cwd.to_string(),
            submit_file: String::new(),
            append: Vec::new(),
            environment: Vec::new(),
            random_seed: 0,
            factory: false,
            factory_by_default: false,
        }
    }
}

/// The jobs a description queues, and what submit would warn about.
#[derive(Clone, Debug, Default)]
pub struct Submission {
    pub jobs: Vec<ClassAd>,
    pub warnings: Vec<Warning>,
}

/// How deeply `include` may nest.
const MAX_INCLUDE_DEPTH: usize = 20;

/// File name used in messages about `-a` commands.
const APPEND_FILE: &str = "<-a>";

/// Turns a submit description into job ads, as `condor_submit` would queue
/// them. Nothing is half-done: an error anywhere gives no jobs.
pub fn submit(
    text: &str,
    options: &SubmitOptions,
    config: &Config,
    files: &dyn Files,
) -> Result<Submission, SubmitError> {
    let mut jobs = Vec::new();
    let warnings = submit_each(text, options, config, files, &mut |ad| {
        jobs.push(ad);
        Ok(())
    })?;
    Ok(Submission { jobs, warnings })
}

/// What receives each job ad as it is made ([`submit_each`]); an error
/// stops the submission there.
pub type Sink<'a> = dyn FnMut(ClassAd) -> Result<(), SubmitError> + 'a;

/// A job as [`submit_or_factory_jobs`] hands it out.
#[derive(Debug)]
pub enum MadeJob<'j> {
    /// A job made from the submit commands.
    Whole(ClassAd),
    /// Job `proc`, the same as `of` (a job of the same queue statement
    /// handed out whole just before) but for its `ProcId`: its making
    /// read nothing that changes from job to job. A `queue 100000` is one
    /// whole job and copies, so a caller that sends each job's difference
    /// from the first need not build nor compare the copies.
    Copy { of: &'j ClassAd, proc: i64 },
}

impl MadeJob<'_> {
    /// The job's whole ad.
    pub fn into_ad(self) -> ClassAd {
        match self {
            MadeJob::Whole(ad) => ad,
            MadeJob::Copy { of, proc } => {
                let mut ad = of.clone();
                ad.insert_value("ProcId", proc);
                ad
            }
        }
    }
}

/// What receives each job as it is made ([`submit_or_factory_jobs`]).
pub type JobSink<'a> = dyn for<'j> FnMut(MadeJob<'j>) -> Result<(), SubmitError> + 'a;

/// As [`submit`], handing each job ad to `sink` as soon as it is made
/// instead of keeping them all: a large cluster is never held whole (the
/// submitting tool streams each job to the schedd). The jobs handed out
/// before an error are not a submission: the caller throws them away (the
/// tool does not commit). The warnings come at the end.
pub fn submit_each(
    text: &str,
    options: &SubmitOptions,
    config: &Config,
    files: &dyn Files,
    sink: &mut Sink<'_>,
) -> Result<Vec<Warning>, SubmitError> {
    submit_made(text, options, config, files, &mut |job: MadeJob<'_>| {
        sink(job.into_ad())
    })
}

/// As [`submit_each`], each job handed out as made: whole, or as a copy
/// of the whole job before it but for its ProcId ([`MadeJob::Copy`]), so
/// a caller that keeps each job's difference from the first (a cluster
/// ad and proc ads, as the schedd keeps them) builds no copy.
pub fn submit_made(
    text: &str,
    options: &SubmitOptions,
    config: &Config,
    files: &dyn Files,
    sink: &mut JobSink<'_>,
) -> Result<Vec<Warning>, SubmitError> {
    read_description(text, options, config, files, sink, Mode::Jobs).map(|(w, _)| w)
}

/// Reads a description for what `mode` asks (jobs, a factory, one job
/// of a factory), giving back the warnings and the mode as it ended.
pub(crate) fn read_description<'m>(
    text: &str,
    options: &SubmitOptions,
    config: &Config,
    files: &dyn Files,
    sink: &mut JobSink<'_>,
    mode: Mode<'m>,
) -> Result<(Vec<Warning>, Mode<'m>), SubmitError> {
    let settings = settings::Settings::read(config)?;
    let mut table = Table::new(
        options.environment.iter().cloned().collect(),
        options.random_seed,
    );
    table.set_default("ARCH", settings.arch.clone());
    table.set_default("OPSYS", settings.opsys.clone());
    table.set_default("OPSYSANDVER", settings.opsys_and_ver.clone());
    table.set_default("SPOOL", settings.spool.clone());
    table.set_default("IsLinux", if settings.opsys == "LINUX" { "1" } else { "0" });
    table.set_default(
        "IsWindows",
        if settings.opsys == "WINDOWS" {
            "1"
        } else {
            "0"
        },
    );
    table.set_default("SUBMIT_FILE", options.submit_file.clone());
    table.set_default("Node", "");
    let mut run = Run {
        table,
        cx: job::Context {
            options,
            settings: &settings,
            files,
        },
        next_proc: options.first_proc,
        sink,
        queued: false,
        appended: false,
        append_queued: false,
        queue_texts: Vec::new(),
        mode,
    };
    let file = if options.submit_file.is_empty() {
        "<submit>"
    } else {
        options.submit_file.as_str()
    };
    run.text(text, file, 0)?;
    if !run.appended {
        run.append()?;
    }
    if !run.queued {
        return Err(SubmitError::new(
            "the description has no `queue` statement, so it queues no job (end it with `queue`)",
        )
        .in_file(file));
    }
    let mut warnings = Vec::new();
    if settings.warn_unused && matches!(run.mode, Mode::Jobs | Mode::Auto(_)) {
        warnings = run.unused();
    }
    Ok((warnings, run.mode))
}

/// One `if` being read.
struct IfFrame {
    outer: bool,
    active: bool,
    taken: bool,
    seen_else: bool,
}

struct Run<'a, 's, 'm> {
    table: Table,
    cx: job::Context<'a>,
    next_proc: i64,
    sink: &'a mut JobSink<'s>,
    queued: bool,
    appended: bool,
    /// Whether an `-a` command (condor_submit's -queue) was a queue statement.
    append_queued: bool,
    /// The text of every queue statement (their macros count as used).
    queue_texts: Vec<String>,
    /// What this reading of the description is for.
    mode: Mode<'m>,
}

/// What one reading of a description makes.
pub(crate) enum Mode<'m> {
    /// Every job, each handed to the sink.
    Jobs,
    /// As `Jobs`, unless the first queue statement finds `max_materialize`
    /// or `max_idle` defined: then the cluster is a factory, captured here
    /// with its first job, and no job goes to the sink.
    Auto(Option<Box<FactorySubmission>>),
    /// Job `proc` of a factory's digest, its item rows given.
    Materialize { proc: i64, items: &'m [String] },
    /// How many jobs a digest's queue statement makes over `items` rows.
    Count { items: usize, total: Option<i64> },
}

impl Run<'_, '_, '_> {
    fn text(&mut self, text: &str, file: &str, depth: usize) -> Result<(), SubmitError> {
        let mut reader = Reader::new(text);
        let mut ifs: Vec<IfFrame> = Vec::new();
        while let Some(logical) = reader.next_logical() {
            let at = |message: String| {
                SubmitError::new(message)
                    .at(logical.line)
                    .text(&logical.text)
                    .in_file(file)
            };
            let active = ifs.last().is_none_or(|f| f.active);
            let stmt = if active {
                parse_statement(&logical.text).map_err(at)?
            } else {
                match config::macros::conditional(&logical.text) {
                    Some(c) => Statement::Conditional(c),
                    None => continue,
                }
            };
            match stmt {
                Statement::Conditional(c) => self.conditional(c, active, &mut ifs).map_err(at)?,
                Statement::Assign { name, value } => self.table.define(Definition {
                    name,
                    value,
                    file: file.to_string(),
                    line: logical.line,
                    text: logical.text.clone(),
                }),
                Statement::AssignBlock { name, tag } => {
                    let value = reader.tagged_block(&tag).ok_or_else(|| {
                        at(format!("end of file while looking for `@{tag}`, which closes the value of {name} opened here"))
                    })?;
                    self.table.define(Definition {
                        name,
                        value,
                        file: file.to_string(),
                        line: logical.line,
                        text: logical.text.clone(),
                    });
                }
                Statement::Include { command, target } => {
                    let target = self.table.expand(&target).map_err(|e| at(e.message))?;
                    if depth >= MAX_INCLUDE_DEPTH {
                        return Err(at(format!(
                            "includes nest more than {MAX_INCLUDE_DEPTH} deep"
                        )));
                    }
                    let (text, name) = if command {
                        let out = self
                            .cx
                            .files
                            .run(&target)
                            .map_err(|e| at(format!("include command : {target}: {e}")))?;
                        (out, format!("{file}:{}: command `{target}`", logical.line))
                    } else {
                        let path = files::absolute(&self.cx.options.cwd, target.trim());
                        let text = self.cx.files.read(&path).map_err(|e| {
                            at(format!("cannot read the included file {path}: {e}"))
                        })?;
                        (text, path)
                    };
                    self.text(&text, &name, depth + 1)?;
                }
                Statement::Queue(args) => {
                    if !self.appended {
                        self.append()?;
                    }
                    // condor_submit: a queue statement given with -queue (or
                    // `-a "queue ..."`) stands for the description's own.
                    if self.append_queued {
                        return Err(at(
                            "-queue argument conflicts with queue statement in submit file".into(),
                        ));
                    }
                    let block = if queue::opens_block(&args) {
                        Some(item_block(&mut reader).ok_or_else(|| {
                            at("end of file inside the item list this `queue` opens: a line `)` must close it".into())
                        })?)
                    } else {
                        None
                    };
                    self.queue(&args, block).map_err(|e| {
                        e.command("queue")
                            .at(logical.line)
                            .text(&logical.text)
                            .in_file(file)
                    })?;
                }
            }
        }
        if !ifs.is_empty() {
            return Err(
                SubmitError::new("end of file inside an `if`: `endif` missing")
                    .at(reader.last_line())
                    .in_file(file),
            );
        }
        Ok(())
    }

    fn conditional(
        &mut self,
        c: Conditional,
        active: bool,
        ifs: &mut Vec<IfFrame>,
    ) -> Result<(), String> {
        match c {
            Conditional::If(cond) => {
                let value = active && config::macros::condition(&cond, &self.table)?;
                ifs.push(IfFrame {
                    outer: active,
                    active: value,
                    taken: value || !active,
                    seen_else: false,
                });
            }
            Conditional::Elif(cond) => {
                let Some(f) = ifs.last_mut() else {
                    return Err("`elif` without a matching `if`".into());
                };
                if f.seen_else {
                    return Err("`elif` is not allowed after `else`".into());
                }
                if f.outer && !f.taken {
                    let value = config::macros::condition(&cond, &self.table)?;
                    let f = ifs.last_mut().expect("checked above");
                    f.active = value;
                    f.taken = value;
                } else {
                    f.active = false;
                }
            }
            Conditional::Else => {
                let Some(f) = ifs.last_mut() else {
                    return Err("`else` without a matching `if`".into());
                };
                if f.seen_else {
                    return Err("`else` is not allowed after `else`".into());
                }
                f.active = f.outer && !f.taken;
                f.taken = true;
                f.seen_else = true;
            }
            Conditional::Endif => {
                if ifs.pop().is_none() {
                    return Err("`endif` without a matching `if`".into());
                }
            }
        }
        Ok(())
    }

    /// The `-a` commands, as if written before the first `queue`.
    fn append(&mut self) -> Result<(), SubmitError> {
        self.appended = true;
        let lines = self.cx.options.append.clone();
        for (i, line) in lines.iter().enumerate() {
            let at = |message: String| {
                SubmitError::new(message)
                    .at(i as u32 + 1)
                    .text(line)
                    .in_file(APPEND_FILE)
            };
            match parse_statement(line.trim()).map_err(at)? {
                Statement::Assign { name, value } => self.table.define(Definition {
                    name,
                    value,
                    file: APPEND_FILE.into(),
                    line: i as u32 + 1,
                    text: line.clone(),
                }),
                Statement::Queue(args) => {
                    if self.queued {
                        return Err(at(
                            "a `-a` queue statement is only allowed when the description has none"
                                .into(),
                        ));
                    }
                    self.append_queued = true;
                    self.queue(&args, None).map_err(|e| {
                        e.command("queue")
                            .at(i as u32 + 1)
                            .text(line)
                            .in_file(APPEND_FILE)
                    })?;
                }
                _ => {
                    return Err(at(
                        "only `command = value` and `queue` can be given with -a".into(),
                    ))
                }
            }
        }
        Ok(())
    }

    /// Runs one queue statement: its jobs are built and kept.
    fn queue(&mut self, args: &str, block: Option<Vec<String>>) -> Result<(), SubmitError> {
        let first = !self.queued;
        self.queued = true;
        self.queue_texts.push(args.to_string());
        self.table.clear_vars();
        let expanded = self.table.expand(args)?;
        let q = queue::parse_queue_args(&expanded, block).map_err(SubmitError::new)?;
        let count = queue_count(&q.count)?;
        match &mut self.mode {
            Mode::Materialize { .. } | Mode::Count { .. } if !first => {
                return Err(SubmitError::new(
                    "a submit digest (late materialization) has one queue statement",
                ))
            }
            Mode::Auto(Some(_)) => {
                return Err(SubmitError::new(
                    "late materialization (max_materialize, max_idle) needs a description with \
                     one queue statement; this one has more",
                ))
            }
            Mode::Materialize { proc, items } => {
                let (proc, items) = (*proc, *items);
                return self.materialize_one(&q, count, proc, items);
            }
            Mode::Count { items, total } => {
                let rows = match &q.list {
                    None => 1,
                    Some((_, slice, _)) => slice.indexes(*items).len() as i64,
                };
                *total = Some(count * rows);
                return Ok(());
            }
            Mode::Auto(None) | Mode::Jobs => {}
        }
        let items: Option<Vec<String>> = match &q.list {
            None => None,
            Some((kind, _, source)) => Some(
                queue::items(*kind, source, &self.cx.options.cwd, self.cx.files)
                    .map_err(SubmitError::new)?,
            ),
        };
        if first && matches!(self.mode, Mode::Auto(None)) {
            let opts = self.cx.options;
            let forced = opts.factory
                || (opts.factory_by_default && {
                    let rows = match (&q.list, &items) {
                        (Some((_, slice, _)), Some(items)) => slice.indexes(items.len()).len(),
                        _ => 1,
                    };
                    count * rows as i64 > 1
                });
            if let Some(limits) = factory::limits(&self.table, forced)? {
                // A factory of no job is an ordinary submission of none.
                if let Some(f) = self.factory(&q, count, items.unwrap_or_default(), limits)? {
                    self.mode = Mode::Auto(Some(Box::new(f)));
                }
                return Ok(());
            }
        }
        let rows: Vec<(usize, Option<String>)> = match (&q.list, items) {
            (Some((_, slice, _)), Some(items)) => slice
                .indexes(items.len())
                .into_iter()
                .map(|i| (i, Some(items[i].clone())))
                .collect(),
            _ => vec![(0, None)],
        };
        let split = matches!(q.list, Some((queue::ListKind::From, _, _)));
        // A job whose making read nothing that changes from job to job
        // (no $(Process), $(Step), $(Row), $(ItemIndex), $(Node), loop
        // variable or $RANDOM_*) is the same as the next but for its
        // ProcId: the rest of the statement's jobs are copies of it.
        let mut same_for_all: Option<ClassAd> = None;
        // A copy's macros ($(Process), ...) are set for no one to read:
        // only the last copy's are, for what comes after the statement.
        let mut last_copy = None;
        for (index, row) in rows {
            if let Some(row) = row.filter(|r| !r.is_empty()) {
                // An empty row leaves the variables as the row before set
                // them (HTCondor 24.0.24 does so).
                self.set_row(&q.vars, &row, split);
            }
            for step in 0..count {
                let proc = self.next_proc;
                self.next_proc += 1;
                match &same_for_all {
                    Some(first) => {
                        last_copy = Some((index, step, proc));
                        (self.sink)(MadeJob::Copy { of: first, proc })?;
                    }
                    None => {
                        self.job_defaults(index, step, proc)?;
                        let ad = self.job(proc, &mut same_for_all)?;
                        (self.sink)(MadeJob::Whole(ad))?;
                    }
                }
            }
        }
        if let Some((index, step, proc)) = last_copy {
            self.job_defaults(index, step, proc)?;
        }
        Ok(())
    }

    /// Sets the queue statement's variables from one item row.
    fn set_row(&mut self, vars: &[String], row: &str, split: bool) {
        let values = if split {
            queue::split_row(row, vars.len())
        } else {
            let mut v = vec![row.to_string()];
            v.resize(vars.len(), String::new());
            v
        };
        for (var, value) in vars.iter().zip(values) {
            self.table.set_var(var, &value);
        }
    }

    /// Sets the macros of job `proc`, step `step` of item `index`.
    fn job_defaults(&mut self, index: usize, step: i64, proc: i64) -> Result<(), SubmitError> {
        let t = &mut self.table;
        t.set_default("Cluster", self.cx.options.cluster.to_string());
        t.set_default("ClusterId", self.cx.options.cluster.to_string());
        t.set_default("Process", proc.to_string());
        t.set_default("ProcId", proc.to_string());
        t.set_default("Step", step.to_string());
        t.set_default("Row", index.to_string());
        t.set_default("ItemIndex", index.to_string());
        // A parallel job's $(Node) stays a placeholder that the
        // access point replaces with each node's number when it
        // starts the nodes (HTCondor's `#pArAlLeLnOdE#`).
        let node = match job::universe_of(t, self.cx.settings)? {
            job::Universe::Parallel => job::NODE_PLACEHOLDER,
            _ => "",
        };
        t.set_default("Node", node);
        Ok(())
    }

    /// Builds job `proc` (its macros set), keeping it in `same_for_all`
    /// when its making read nothing that changes from job to job.
    fn job(
        &mut self,
        proc: i64,
        same_for_all: &mut Option<ClassAd>,
    ) -> Result<ClassAd, SubmitError> {
        self.table.forget_per_job_reads();
        let ad = job::build(&self.table, &self.cx, proc)?;
        if !self.table.read_per_job() {
            *same_for_all = Some(ad.clone());
        }
        Ok(ad)
    }

    /// condor_submit's warning for lines no job used: likely typos.
    fn unused(&self) -> Vec<Warning> {
        let mut referenced: Vec<String> = Vec::new();
        for def in self.table.definitions() {
            referenced.extend(
                config::macros::referenced_macros(&def.value)
                    .into_iter()
                    .map(|n| n.to_ascii_uppercase()),
            );
        }
        for q in &self.queue_texts {
            referenced.extend(
                config::macros::referenced_macros(q)
                    .into_iter()
                    .map(|n| n.to_ascii_uppercase()),
            );
        }
        self.table
            .definitions()
            .filter(|d| {
                let upper = d.name.to_ascii_uppercase();
                !upper.starts_with("MY.")
                    && !upper.starts_with("REQUEST_")
                    && !self.table.was_used(&d.name)
                    && !referenced.contains(&upper)
                    && !KNOWN_COMMANDS
                        .iter()
                        .any(|k| k.eq_ignore_ascii_case(&d.name))
            })
            .map(|d| Warning {
                file: d.file.clone(),
                line: d.line,
                message: format!("the line `{}` was unused by submit. Is it a typo?", d.text),
            })
            .collect()
    }
}

/// Submit commands HTCondor knows that ferrocondor reads no value from
/// (so a line using one is not reported as a likely typo).
const KNOWN_COMMANDS: &[&str] = &[
    "accounting_group",
    "accounting_group_user",
    "allow_startup_script",
    "append_files",
    "buffer_block_size",
    "buffer_size",
    "checkpoint_exit_code",
    "compress_files",
    "cron_day_of_month",
    "cron_day_of_week",
    "cron_hour",
    "cron_minute",
    "cron_month",
    "cron_prep_time",
    "cron_window",
    "deferral_prep_time",
    "deferral_time",
    "deferral_window",
    "encrypt_execute_directory",
    "encrypt_input_files",
    "encrypt_output_files",
    "fetch_files",
    "file_remaps",
    "hold_kill_sig",
    "image_size",
    "keep_claim_idle",
    "local_files",
    "log_xml",
    "materialize_max_idle",
    "max_idle",
    "max_materialize",
    "max_transfer_input_mb",
    "max_transfer_output_mb",
    "next_job_start_delay",
    "on_exit_hold_reason",
    "on_exit_hold_subcode",
    "periodic_vacate",
    "remove_kill_sig",
    "rendezvousdir",
    "retry_until",
    "run_as_owner",
    "skip_filechecks",
    "stack_size",
    "submit_event_notes",
    "transfer_checkpoint_files",
    "transfer_plugins",
    "want_remote_io",
];

/// The number of jobs a count expression asks for.
fn queue_count(text: &str) -> Result<i64, SubmitError> {
    let bad = || {
        SubmitError::new(format!(
            "invalid queue count `{text}`: expected a number of jobs (an integer expression), optionally followed by variables and `in`, `from` or `matching`"
        ))
    };
    let e = classad::parse_expr(text).map_err(|_| bad())?;
    match classad::eval_expr(&e, None, None, &classad::Env::default()) {
        Value::Int(n) if n >= 0 => Ok(n),
        Value::Real(x) if x >= 0.0 && x.fract() == 0.0 => Ok(x as i64),
        _ => Err(bad()),
    }
}
