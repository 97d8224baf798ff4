//! Late materialization: a cluster kept as a *factory* (HTCondor's
//! `max_materialize`, `max_idle`) whose jobs the access point makes a few
//! at a time, as earlier ones leave.
//!
//! The submitter reads the description as for an ordinary submission,
//! but at its (one) queue statement it makes only the first job (the
//! cluster's ad) and the *digest*: the description's definitions as they
//! stand there, written back as submit commands, and the queue statement
//! turned into `Queue N vars from <items file>`, the items (of any list
//! form: `in`, `from`, `matching`) sent separately, one row each (several
//! fields joined by the ASCII unit separator), as HTCondor's
//! condor_submit sends them (`SubmitHash::make_digest`,
//! `append_queue_statement`).
//!
//! [`materialize`] makes job N from a digest and its rows by the very code
//! that makes ordinary jobs (the description is read again and the queue
//! statement runs for job N alone: row N / count, step N % count), so a
//! factory's job is the job an ordinary submission of the same
//! description makes. [`factory_total`] counts the jobs a digest makes.

use classad::{ClassAd, Value};
use config::Config;

use crate::queue::{self, ListKind, QueueArgs, Slice, UNIT_SEPARATOR};
use crate::table::Table;
use crate::{read_description, Files, Mode, Run, SubmitError, SubmitOptions, Warning};

/// The largest number of jobs a factory keeps materialized (HTCondor's
/// INT_MAX for "no limit").
pub const NO_LIMIT: i64 = i32::MAX as i64;

/// A cluster to be submitted as a factory.
#[derive(Clone, Debug)]
pub struct FactorySubmission {
    /// `max_materialize` as the description gives it.
    pub max_materialize: Option<i64>,
    /// `max_idle` (or `materialize_max_idle`) as the description gives it.
    pub max_idle: Option<i64>,
    /// The item rows the queue statement iterates (all of them: the slice
    /// stays in the digest's queue statement); empty for `queue N`.
    pub items: Vec<String>,
    /// Job 0 as an ordinary submission makes it: the cluster's ad.
    pub first_job: ClassAd,
    /// How many jobs the factory makes in all.
    pub total: i64,
    body: String,
    queue: String,
    has_list: bool,
}

impl FactorySubmission {
    /// The digest, its queue statement reading the rows from `items_file`
    /// (the name the schedd gave them).
    pub fn digest(&self, items_file: &str) -> String {
        let mut d = self.body.clone();
        d.push_str(&self.queue);
        if self.has_list {
            d.push(' ');
            d.push_str(items_file);
        }
        d.push('\n');
        d
    }

    /// The JobMaterializeLimit condor_submit sends (SetJobFactory's
    /// number): max_materialize, no limit when absent or not positive,
    /// at most the number of jobs and at least 1.
    pub fn limit(&self) -> i64 {
        let m = self.max_materialize.filter(|m| *m > 0).unwrap_or(NO_LIMIT);
        m.min(self.total).max(1)
    }

    /// Whether the queue statement has item rows to send.
    pub fn has_items(&self) -> bool {
        self.has_list
    }
}

/// What a description made: its jobs (each handed to the sink), or a
/// factory (no job handed out).
#[derive(Debug)]
pub enum Made {
    Jobs(Vec<Warning>),
    Factory(Box<FactorySubmission>, Vec<Warning>),
}

/// As [`crate::submit_each`], except that a description whose queue
/// statement finds `max_materialize` or `max_idle` defined is a factory:
/// nothing goes to the sink and the factory comes back.
pub fn submit_or_factory(
    text: &str,
    options: &SubmitOptions,
    config: &Config,
    files: &dyn Files,
    sink: &mut crate::Sink<'_>,
) -> Result<Made, SubmitError> {
    submit_or_factory_jobs(text, options, config, files, &mut |job: crate::MadeJob<
        '_,
    >| {
        sink(job.into_ad())
    })
}

/// As [`submit_or_factory`], each job handed out as made: whole, or as a
/// copy of the job before it but for its ProcId.
pub fn submit_or_factory_jobs(
    text: &str,
    options: &SubmitOptions,
    config: &Config,
    files: &dyn Files,
    sink: &mut crate::JobSink<'_>,
) -> Result<Made, SubmitError> {
    let (warnings, mode) = read_description(text, options, config, files, sink, Mode::Auto(None))?;
    Ok(match mode {
        Mode::Auto(Some(f)) => Made::Factory(f, warnings),
        _ => Made::Jobs(warnings),
    })
}

/// Job `proc` of a factory: its digest read as a description, the queue
/// statement's rows `items`. `options` as the factory's submission had
/// them (the cluster, the owner, ...); the submit directory is the
/// digest's `FACTORY.Iwd` when it names one.
pub fn materialize(
    digest: &str,
    items: &[String],
    proc: i64,
    options: &SubmitOptions,
    config: &Config,
    files: &dyn Files,
) -> Result<ClassAd, SubmitError> {
    let options = with_factory_iwd(digest, options);
    let mut job = None;
    read_description(
        digest,
        &options,
        config,
        files,
        &mut |made: crate::MadeJob<'_>| {
            job = Some(made.into_ad());
            Ok(())
        },
        Mode::Materialize { proc, items },
    )?;
    job.ok_or_else(|| SubmitError::new(format!("the factory makes no job {proc}")))
}

/// How many jobs a digest makes over `items` rows.
pub fn factory_total(
    digest: &str,
    items: usize,
    options: &SubmitOptions,
    config: &Config,
) -> Result<i64, SubmitError> {
    let options = with_factory_iwd(digest, options);
    let (_, mode) = read_description(
        digest,
        &options,
        config,
        &crate::MemFiles::new(),
        &mut |_| Ok(()),
        Mode::Count { items, total: None },
    )?;
    match mode {
        Mode::Count {
            total: Some(total), ..
        } => Ok(total),
        _ => Err(SubmitError::new("the submit digest has no queue statement")),
    }
}

fn with_factory_iwd(digest: &str, options: &SubmitOptions) -> SubmitOptions {
    let mut options = options.clone();
    for line in digest.lines() {
        let Some((name, value)) = line.split_once('=') else {
            continue;
        };
        if name.trim().eq_ignore_ascii_case("FACTORY.Iwd") {
            options.cwd = value.trim().to_string();
        }
    }
    options
}

/// The description's factory limits, when it asks for a factory.
pub(crate) struct Limits {
    max_materialize: Option<i64>,
    max_idle: Option<i64>,
}

/// `max_materialize` and `max_idle` (`materialize_max_idle`), integer
/// expressions as HTCondor reads them; `None` when neither is defined and
/// no factory is `forced` (condor_submit -factory: no limit then).
pub(crate) fn limits(table: &Table, forced: bool) -> Result<Option<Limits>, SubmitError> {
    let read = |names: &[&str]| -> Result<Option<i64>, SubmitError> {
        let Some(found) = table.get(names)? else {
            return Ok(None);
        };
        let bad = || {
            SubmitError::new(format!(
                "{} = {}: expected an integer (a number of jobs)",
                found.command, found.value
            ))
            .at(found.line)
            .text(&found.text)
            .in_file(&found.file)
        };
        let e = classad::parse_expr(&found.value).map_err(|_| bad())?;
        match classad::eval_expr(&e, None, None, &classad::Env::default()) {
            Value::Int(n) => Ok(Some(n)),
            Value::Real(x) if x.fract() == 0.0 => Ok(Some(x as i64)),
            _ => Err(bad()),
        }
    };
    let max_materialize = read(&["max_materialize"])?;
    let max_idle = read(&["max_idle", "materialize_max_idle"])?;
    if max_materialize.is_none() && max_idle.is_none() && !forced {
        return Ok(None);
    }
    Ok(Some(Limits {
        max_materialize,
        max_idle,
    }))
}

fn slice_text(s: &Slice) -> String {
    if *s == Slice::default() {
        return String::new();
    }
    let part = |v: Option<i64>| v.map(|v| v.to_string()).unwrap_or_default();
    match s.step {
        Some(step) => format!("[{}:{}:{step}] ", part(s.start), part(s.end)),
        None => format!("[{}:{}] ", part(s.start), part(s.end)),
    }
}

impl Run<'_, '_, '_> {
    /// The factory of the description's queue statement `q`: the digest,
    /// the rows, and job 0.
    pub(crate) fn factory(
        &mut self,
        q: &QueueArgs,
        count: i64,
        items: Vec<String>,
        limits: Limits,
    ) -> Result<Option<FactorySubmission>, SubmitError> {
        let selected = match &q.list {
            None => vec![0],
            Some((_, slice, _)) => slice.indexes(items.len()),
        };
        let total = count * selected.len() as i64;
        if total == 0 {
            // Nothing to make: an ordinary submission of no job.
            return Ok(None);
        }
        // The rows as the schedd keeps them: fields split as this list
        // kind splits them, joined by the unit separator when there are
        // several variables.
        let rows: Vec<String> = match &q.list {
            None => Vec::new(),
            Some((kind, _, _)) if q.vars.len() > 1 => items
                .iter()
                .map(|row| {
                    if row.is_empty() {
                        return String::new();
                    }
                    let fields = if *kind == ListKind::From {
                        queue::split_row(row, q.vars.len())
                    } else {
                        let mut v = vec![row.clone()];
                        v.resize(q.vars.len(), String::new());
                        v
                    };
                    fields.join(&UNIT_SEPARATOR.to_string())
                })
                .collect(),
            Some(_) => items.clone(),
        };
        // Job 0, as an ordinary submission makes it.
        if let Some((kind, _, _)) = &q.list {
            let row = &items[selected[0]];
            if !row.is_empty() {
                self.set_row(&q.vars, row, *kind == ListKind::From);
            }
        }
        self.job_defaults(selected[0], 0, self.next_proc)?;
        let mut first_job = self.job(self.next_proc, &mut None)?;
        if let Some(n) = limits.max_idle {
            first_job.insert_value("JobMaterializeMaxIdle", n);
        }
        self.table.clear_vars();

        let mut body = String::new();
        let defined_iwd = self
            .table
            .definitions()
            .any(|d| d.name.eq_ignore_ascii_case("FACTORY.Iwd"));
        if !defined_iwd {
            body.push_str(&format!("FACTORY.Iwd = {}\n", self.cx.options.cwd));
        }
        for def in self.table.definitions() {
            let drawn = self.draw_random(&def.value);
            let value = drawn.as_str();
            if value.contains('\n') || value != value.trim() {
                body.push_str(&format!("{} @=fcEnd\n{value}\n@fcEnd\n", def.name));
            } else {
                body.push_str(&format!("{} = {value}\n", def.name));
            }
        }
        let mut queue = format!("Queue {count}");
        if let Some((_, slice, _)) = &q.list {
            queue.push_str(&format!(" {} from {}", q.vars.join(","), slice_text(slice)));
            queue = queue.trim_end().to_string();
        }
        Ok(Some(FactorySubmission {
            max_materialize: limits.max_materialize,
            max_idle: limits.max_idle,
            items: rows,
            first_job,
            total,
            body,
            queue,
            has_list: q.list.is_some(),
        }))
    }

    /// `value` as the digest holds it: `$RANDOM_INTEGER()` and
    /// `$RANDOM_CHOICE()` drawn here, once for every job of the factory,
    /// as condor_submit draws them when it writes the digest
    /// (`SkipKnobsBody` in HTCondor's `config.cpp` expands them); one
    /// whose arguments name a macro (`$(Process)`, an item) stays, and
    /// the schedd draws it for each job.
    fn draw_random(&self, value: &str) -> String {
        const FUNCS: [&str; 2] = ["$RANDOM_INTEGER(", "$RANDOM_CHOICE("];
        let mut out = String::with_capacity(value.len());
        let mut rest = value;
        loop {
            let next = FUNCS
                .iter()
                .filter_map(|f| rest.find(f).map(|at| (at, f.len())))
                .min();
            let Some((at, len)) = next else {
                out.push_str(rest);
                return out;
            };
            let Some(close) = rest[at + len..].find(')') else {
                out.push_str(rest);
                return out;
            };
            let end = at + len + close + 1;
            let call = &rest[at..end];
            out.push_str(&rest[..at]);
            let body = &rest[at + len..end - 1];
            match config::macros::expand_macros(call, &self.table) {
                Ok(v) if !body.contains('$') => out.push_str(&v),
                _ => out.push_str(call),
            }
            rest = &rest[end..];
        }
    }

    /// Makes job `proc` of a digest's queue statement `q` over `items`.
    pub(crate) fn materialize_one(
        &mut self,
        q: &QueueArgs,
        count: i64,
        proc: i64,
        items: &[String],
    ) -> Result<(), SubmitError> {
        let none = || SubmitError::new(format!("the factory makes no job {proc}"));
        if count <= 0 || proc < 0 {
            return Err(none());
        }
        let (pos, step) = ((proc / count) as usize, proc % count);
        let index = match &q.list {
            None if pos == 0 => 0,
            None => return Err(none()),
            Some((kind, slice, _)) => {
                // The common case, no slice, needs no list of indexes.
                let selected: Option<Vec<usize>> =
                    (*slice != Slice::default()).then(|| slice.indexes(items.len()));
                let at = |k: usize| selected.as_ref().map_or(Some(k), |s| s.get(k).copied());
                let index = at(pos).filter(|i| *i < items.len()).ok_or_else(none)?;
                // An empty row leaves the variables as the row before set
                // them: the nearest earlier row that is not empty.
                let mut k = pos;
                loop {
                    let i = at(k).expect("an earlier position");
                    if !items[i].is_empty() {
                        self.set_row(&q.vars, &items[i], *kind == ListKind::From);
                        break;
                    }
                    if k == 0 {
                        break;
                    }
                    k -= 1;
                }
                index
            }
        };
        self.job_defaults(index, step, proc)?;
        let ad = self.job(proc, &mut None)?;
        (self.sink)(crate::MadeJob::Whole(ad))
    }
}
