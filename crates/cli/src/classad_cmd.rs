//! `ferrocondor classad ...`: evaluate, match and check vectors.
//!
//! Every command writes its answer to the `out` it is given and never to the
//! terminal directly, so tests and other front ends can capture it.

use std::io::{Read, Write};
use std::path::Path;

use classad::expr::BinOp;
use classad::unparse::value_to_string;
use classad::{ClassAd, Env, Expr, Value};

use crate::adfile;
use crate::args::{AdFormat, ClassadCommand, VectorMode};
use crate::errors::{Error, Outcome};

/// Where an expression given on the command line is said to come from.
const COMMAND_LINE: &str = "<expression>";

pub fn run(command: &ClassadCommand, env: &Env, out: &mut dyn Write) -> Result<Outcome, Error> {
    match command {
        ClassadCommand::Eval { expr, my, target } => {
            eval(expr, my.as_deref(), target.as_deref(), env, out)
        }
        ClassadCommand::Match { job, machine } => match_ads(job, machine, env, out),
        ClassadCommand::Print { ad, format } => print_ad(ad, *format, out),
        ClassadCommand::Vectors { mode, file, check } => {
            vectors(*mode, file.as_deref(), *check, env, out)
        }
    }
}

fn print_ad(path: &Path, format: AdFormat, out: &mut dyn Write) -> Result<Outcome, Error> {
    let ad = adfile::read(path)?;
    match format {
        AdFormat::Old => write!(out, "{}", classad::unparse::ad_to_old_syntax(&ad))?,
        AdFormat::New => writeln!(out, "{ad}")?,
        AdFormat::Json => writeln!(out, "{}", classad::json::ad_to_json(&ad))?,
    }
    Ok(Outcome::Success)
}

fn eval(
    text: &str,
    my: Option<&Path>,
    target: Option<&Path>,
    env: &Env,
    out: &mut dyn Write,
) -> Result<Outcome, Error> {
    let expr = classad::parse_expr(text).map_err(|e| Error::parse(COMMAND_LINE, e))?;
    let my = my.map(adfile::read).transpose()?;
    let target = target.map(adfile::read).transpose()?;
    // A TARGET without a MY is seen from an empty MY, as HTCondor does.
    let my = match (my, &target) {
        (None, Some(_)) => Some(ClassAd::new()),
        (my, _) => my,
    };
    let value = classad::eval_expr(&expr, my.as_ref(), target.as_ref(), env);
    writeln!(out, "{}", value_to_string(&value))?;
    Ok(Outcome::Success)
}

fn match_ads(
    job_path: &Path,
    machine_path: &Path,
    env: &Env,
    out: &mut dyn Write,
) -> Result<Outcome, Error> {
    let job = adfile::read(job_path)?;
    let machine = adfile::read(machine_path)?;
    let result = classad::matching::evaluate_match(&job, &machine, env);
    let (job_name, machine_name) = (job_path.display(), machine_path.display());
    if result.symmetric {
        writeln!(out, "match: {job_name} and {machine_name} match")?;
    } else {
        writeln!(out, "no match: {job_name} and {machine_name} do not match")?;
    }
    let sides = [
        (
            "job",
            job_name.to_string(),
            &job,
            &machine,
            &result.my_requirements,
            &result.my_rank,
        ),
        (
            "machine",
            machine_name.to_string(),
            &machine,
            &job,
            &result.target_requirements,
            &result.target_rank,
        ),
    ];
    for (role, name, my, target, requirements, rank) in sides {
        writeln!(out)?;
        writeln!(out, "{role} {name}")?;
        writeln!(out, "  Requirements: {}", value_to_string(requirements))?;
        write!(out, "  Rank: {}", value_to_string(rank))?;
        if rank.as_number().is_none() {
            write!(out, " (not a number: ranks as 0.0)")?;
        }
        writeln!(out)?;
        match my.get("Requirements") {
            None => writeln!(out, "  no Requirements attribute")?,
            Some(expr) => {
                let failing = failing_clauses(expr, my, target, env, 0);
                if failing.is_empty() {
                    writeln!(out, "  every Requirements clause is true")?;
                } else {
                    writeln!(out, "  Requirements clauses that are not true:")?;
                    write_clauses(out, &failing, 4)?;
                }
            }
        }
    }
    Ok(if result.symmetric {
        Outcome::Success
    } else {
        Outcome::NoMatch
    })
}

/// A clause of a Requirements that is not true, and (when the clause names
/// another attribute of the same ad, as `Requirements = START` does) the
/// clauses of that attribute's expression that are not true.
struct Clause {
    expr: Expr,
    value: Value,
    because: Vec<Clause>,
}

/// How many attribute references deep `failing_clauses` follows
/// (`Requirements` -> `START` -> `IsOwnerIdle` ...); also what stops cycles.
const MAX_EXPANSION: usize = 4;

fn failing_clauses(
    expr: &Expr,
    my: &ClassAd,
    target: &ClassAd,
    env: &Env,
    depth: usize,
) -> Vec<Clause> {
    let mut clauses = Vec::new();
    conjuncts(expr, &mut clauses);
    clauses
        .into_iter()
        .filter_map(|clause| {
            let value = classad::eval_expr(clause, Some(my), Some(target), env);
            if value.is_true() {
                return None;
            }
            let because = match own_attribute(clause, my) {
                Some(bound) if depth < MAX_EXPANSION => {
                    failing_clauses(bound, my, target, env, depth + 1)
                }
                _ => Vec::new(),
            };
            Some(Clause {
                expr: clause.clone(),
                value,
                because,
            })
        })
        .collect()
}

/// The top-level `&&` clauses of `expr`, parentheses stripped.
fn conjuncts<'e>(expr: &'e Expr, out: &mut Vec<&'e Expr>) {
    match expr {
        Expr::Paren(inner) => conjuncts(inner, out),
        Expr::Binary(BinOp::And, operands) => {
            let (left, right) = &**operands;
            conjuncts(left, out);
            conjuncts(right, out);
        }
        other => out.push(other),
    }
}

/// The expression of `name` or `MY.name` when `clause` is just that and the
/// ad defines it.
fn own_attribute<'a>(clause: &Expr, my: &'a ClassAd) -> Option<&'a Expr> {
    match clause {
        Expr::Attr(name) => my.lookup_name(name),
        Expr::Select(base, name) if matches!(&**base, Expr::Attr(m) if m.is("MY")) => {
            my.lookup_name(name)
        }
        _ => None,
    }
}

fn write_clauses(out: &mut dyn Write, clauses: &[Clause], indent: usize) -> Result<(), Error> {
    for c in clauses {
        writeln!(
            out,
            "{:indent$}[{}] {}",
            "",
            value_to_string(&c.value),
            c.expr
        )?;
        write_clauses(out, &c.because, indent + 2)?;
    }
    Ok(())
}

fn vectors(
    mode: VectorMode,
    file: Option<&Path>,
    check: bool,
    env: &Env,
    out: &mut dyn Write,
) -> Result<Outcome, Error> {
    let (origin, text) = match file {
        Some(path) if path != Path::new("-") => {
            let text = std::fs::read_to_string(path).map_err(|e| Error::read(path, e))?;
            (path.display().to_string(), text)
        }
        _ => {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .map_err(|e| Error::read("<stdin>", e))?;
            ("<stdin>".to_string(), text)
        }
    };
    let (mut passed, mut failed) = (0usize, 0usize);
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let case: serde_json::Value = serde_json::from_str(line)
            .map_err(|e| e.to_string())
            .and_then(|v: serde_json::Value| {
                if v.is_object() {
                    Ok(v)
                } else {
                    Err("a case must be a JSON object".to_string())
                }
            })
            .map_err(|message| Error::Json {
                origin: origin.clone(),
                line: i + 1,
                message,
            })?;
        let ours = classad::vectors::run_case(mode.name(), &case, env);
        if !check {
            writeln!(out, "{ours}")?;
            continue;
        }
        let differences = classad::vectors::diff(mode.name(), &case, &ours);
        if differences.is_empty() {
            passed += 1;
            continue;
        }
        failed += 1;
        let id = case.get("id").and_then(|v| v.as_str()).unwrap_or("(no id)");
        writeln!(out, "FAIL {id} ({origin}:{})", i + 1)?;
        for d in differences {
            writeln!(out, "  {d}")?;
        }
    }
    if !check {
        return Ok(Outcome::Success);
    }
    writeln!(out, "{passed} passed, {failed} failed")?;
    Ok(if failed == 0 {
        Outcome::Success
    } else {
        Outcome::ChecksFailed
    })
}
