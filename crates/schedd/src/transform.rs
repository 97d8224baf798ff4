//! Job transforms (`JOB_TRANSFORM_NAMES`, `JOB_TRANSFORM_<Name>`): rules
//! the schedd applies to every job as it is submitted, in the order the
//! names are listed, each to the jobs its `REQUIREMENTS` match.
//!
//! The language is HTCondor's transform language (manual: "ClassAd
//! Transforms"; HTCondor's `src/condor_utils/xform_utils.cpp`), built on the
//! configuration's macro language: statements run top to bottom, `$(var)`
//! is the value `var` has at that point, `$(MY.Attr)` is the job's
//! attribute (a string without its quotes, anything else as written),
//! `if`/`elif`/`else`/`endif` work as in configuration files.
//!
//! | statement | effect |
//! |---|---|
//! | `var = value` | sets a temporary macro |
//! | `REQUIREMENTS expr` | the transform applies only if `expr` is true of the untransformed job |
//! | `SET Attr expr` | sets the attribute to the expression |
//! | `DEFAULT Attr expr` | `SET`, only if the job lacks the attribute (or has it as `undefined`) |
//! | `EVALSET Attr expr` | evaluates the expression against the job and sets the value |
//! | `EVALMACRO var expr` | evaluates, and sets the macro `var` to the value |
//! | `COPY Attr New`, `COPY /re/ \1New` | copies attributes (regex: every matching name) |
//! | `RENAME Attr New`, `RENAME /re/ pat` | renames |
//! | `DELETE Attr`, `DELETE /re/` | deletes |
//!
//! An `=` or `,` between the attribute and the expression is allowed
//! (`SET Requirements = ...`). Regular expressions ignore case, as
//! HTCondor's do. A statement that cannot be carried out (an expression
//! that does not parse) is skipped and noted, as HTCondor logs and goes on;
//! a statement that is not a transform statement at all is a configuration
//! error.
//!
//! The older form, a new-syntax ClassAd `[ Requirements = ...; set_X = ...;
//! copy_X = "Y"; delete_X = true; eval_set_X = ... ]`, is converted as
//! HTCondor converts it: every `copy_` rule, then `delete_`, then `set_`,
//! then `eval_set_`, each group in name order.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use classad::unparse::expr_to_old_syntax;
use classad::{eval_expr, ClassAd, Env, Expr, Value};
use config::macros::{condition, conditional, expand_macros, Conditional, Macros};
use config::Config;

/// A transform that cannot be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TransformError {
    /// The transform's name.
    pub name: String,
    /// The line within the transform (1-based), 0 for the whole text.
    pub line: usize,
    pub text: String,
    pub message: String,
}

impl fmt::Display for TransformError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line > 0 {
            write!(
                f,
                "JOB_TRANSFORM_{} line {}: {}: `{}`",
                self.name, self.line, self.message, self.text
            )
        } else {
            write!(f, "JOB_TRANSFORM_{}: {}", self.name, self.message)
        }
    }
}

impl std::error::Error for TransformError {}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Keyword {
    Copy,
    Default,
    Delete,
    EvalMacro,
    EvalSet,
    Name,
    Rename,
    Requirements,
    Set,
    Transform,
    Universe,
}

impl Keyword {
    fn parse(word: &str) -> Option<Keyword> {
        Some(match word.to_ascii_uppercase().as_str() {
            "COPY" => Keyword::Copy,
            "DEFAULT" => Keyword::Default,
            "DELETE" => Keyword::Delete,
            "EVALMACRO" => Keyword::EvalMacro,
            "EVALSET" => Keyword::EvalSet,
            "NAME" => Keyword::Name,
            "RENAME" => Keyword::Rename,
            "REQUIREMENTS" => Keyword::Requirements,
            "SET" => Keyword::Set,
            "TRANSFORM" => Keyword::Transform,
            "UNIVERSE" => Keyword::Universe,
            _ => return None,
        })
    }

    /// How many arguments it takes, and whether the first may be a regex.
    fn shape(self) -> (usize, bool) {
        match self {
            Keyword::Copy | Keyword::Rename => (2, true),
            Keyword::Delete => (1, true),
            Keyword::Default | Keyword::EvalMacro | Keyword::EvalSet | Keyword::Set => (2, false),
            Keyword::Universe => (1, false),
            Keyword::Name | Keyword::Requirements | Keyword::Transform => (0, false),
        }
    }
}

/// The first argument of a statement: an attribute (or macro) name, or a
/// regular expression over attribute names.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Target {
    Name(String),
    Regex(String),
}

#[derive(Clone, Debug)]
enum Statement {
    Assign {
        name: String,
        value: String,
    },
    Cond(Conditional),
    Command {
        keyword: Keyword,
        target: Target,
        /// The rest of the line, expanded when the statement runs.
        rest: String,
        line: usize,
    },
}

/// One transform.
#[derive(Clone, Debug)]
pub struct Transform {
    pub name: String,
    /// The `REQUIREMENTS` text (macros expanded when applied).
    requirements: Option<String>,
    statements: Vec<Statement>,
}

/// What applying a transform did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Applied {
    /// Whether the transform's requirements matched the job.
    pub matched: bool,
    /// Statements skipped, with why (HTCondor logs these and goes on).
    pub notes: Vec<String>,
}

/// Splits off the first blank-separated word (a quoted string is a word).
fn next_word(s: &str) -> Option<(&str, &str)> {
    let s = s.trim_start();
    if s.is_empty() {
        return None;
    }
    let end = if let Some(rest) = s.strip_prefix('"') {
        rest.find('"').map(|i| i + 2).unwrap_or(s.len())
    } else {
        s.find(char::is_whitespace).unwrap_or(s.len())
    };
    Some((&s[..end], &s[end..]))
}

/// A regex argument `/re/flags` at the start of `s`.
fn regex_word(s: &str) -> Option<(String, &str)> {
    let s = s.trim_start();
    let body = s.strip_prefix('/')?;
    let mut escaped = false;
    for (i, c) in body.char_indices() {
        match c {
            '\\' if !escaped => escaped = true,
            '/' if !escaped => {
                let after = &body[i + 1..];
                let flags_end = after
                    .find(|c: char| !c.is_ascii_alphabetic())
                    .unwrap_or(after.len());
                return Some((body[..i].to_string(), &after[flags_end..]));
            }
            _ => escaped = false,
        }
    }
    None
}

/// `name = value` where `name` is one word of macro-name characters.
fn assignment(line: &str) -> Option<(String, String)> {
    let (lhs, rhs) = line.split_once('=')?;
    let name = lhs.trim();
    if name.is_empty()
        || !name.chars().all(config::macros::is_macro_name_char)
        || Keyword::parse(name).is_some()
    {
        return None;
    }
    Some((name.to_string(), rhs.trim().to_string()))
}

impl Transform {
    /// Reads a transform's text: the transform language, or the older
    /// ClassAd form when the text starts with `[`.
    pub fn parse(name: &str, text: &str) -> Result<Transform, TransformError> {
        if text.trim_start().starts_with('[') {
            return Transform::parse_classad(name, text);
        }
        let err = |line: usize, text: &str, message: String| TransformError {
            name: name.to_string(),
            line,
            text: text.trim().to_string(),
            message,
        };
        let mut t = Transform {
            name: name.to_string(),
            requirements: None,
            statements: Vec::new(),
        };
        // Continuation lines (a trailing backslash) join the next line.
        let mut logical: Vec<(usize, String)> = Vec::new();
        let mut pending: Option<(usize, String)> = None;
        for (i, raw) in text.lines().enumerate() {
            let (start, mut acc) = pending.take().unwrap_or((i + 1, String::new()));
            let line = raw.trim_end();
            if let Some(head) = line.strip_suffix('\\') {
                acc.push_str(head);
                acc.push(' ');
                pending = Some((start, acc));
                continue;
            }
            acc.push_str(line);
            logical.push((start, acc));
        }
        if let Some(p) = pending {
            logical.push(p);
        }
        for (n, line) in logical {
            let trimmed = line.trim();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            if let Some(c) = conditional(trimmed) {
                t.statements.push(Statement::Cond(c));
                continue;
            }
            if let Some((name, value)) = assignment(trimmed) {
                t.statements.push(Statement::Assign { name, value });
                continue;
            }
            let (word, rest) = next_word(trimmed).unwrap_or(("", ""));
            let Some(keyword) = Keyword::parse(word) else {
                return Err(err(
                    n,
                    trimmed,
                    format!("`{word}` is not a transform statement; expected SET, DEFAULT, EVALSET, EVALMACRO, COPY, RENAME, DELETE, REQUIREMENTS, NAME or `name = value`"),
                ));
            };
            if matches!(keyword, Keyword::Universe | Keyword::Transform) {
                // Restricting a transform to a universe, and repeating it
                // over a list, change which jobs it touches: refuse rather
                // than silently apply it to every job.
                return Err(err(
                    n,
                    trimmed,
                    format!("`{word}` in a job transform is not supported yet; use REQUIREMENTS (e.g. `REQUIREMENTS JobUniverse == 5`) to choose the jobs"),
                ));
            }
            let (args, regex_ok) = keyword.shape();
            if keyword == Keyword::Requirements {
                t.requirements = Some(rest.trim().to_string());
                continue;
            }
            if args == 0 {
                continue;
            }
            let (target, mut rest) = match regex_word(rest) {
                Some((re, after)) if regex_ok => (Target::Regex(re), after),
                _ => match next_word(rest) {
                    Some((w, after)) => {
                        let w = w.strip_suffix([',', '=']).unwrap_or(w);
                        (Target::Name(w.to_string()), after)
                    }
                    None => {
                        return Err(err(
                            n,
                            trimmed,
                            format!(
                                "{word} needs {args} argument{}",
                                if args > 1 { "s" } else { "" }
                            ),
                        ))
                    }
                },
            };
            if args == 2 {
                let r = rest.trim_start();
                rest = r
                    .strip_prefix('=')
                    .or_else(|| r.strip_prefix(','))
                    .unwrap_or(r);
                let needs_second =
                    !matches!(target, Target::Regex(_)) || keyword != Keyword::Delete;
                if rest.trim().is_empty() && needs_second {
                    return Err(err(n, trimmed, format!("{word} needs 2 arguments")));
                }
            }
            t.statements.push(Statement::Command {
                keyword,
                target,
                rest: rest.trim().to_string(),
                line: n,
            });
        }
        Ok(t)
    }

    /// The older form: a ClassAd of `set_`, `copy_`, `delete_` and
    /// `eval_set_` rules, converted to statements as HTCondor converts it.
    fn parse_classad(name: &str, text: &str) -> Result<Transform, TransformError> {
        let ad = ClassAd::parse(text.trim()).map_err(|e| TransformError {
            name: name.to_string(),
            line: 0,
            text: text.trim().to_string(),
            message: format!("not a ClassAd: {e}"),
        })?;
        let mut copies = BTreeMap::new();
        let mut deletes = BTreeMap::new();
        let mut sets = BTreeMap::new();
        let mut eval_sets = BTreeMap::new();
        let mut t = Transform {
            name: name.to_string(),
            requirements: None,
            statements: Vec::new(),
        };
        let key = |s: &str| s.to_ascii_lowercase();
        let strip = |n: &str, p: &str| -> Option<String> {
            (n.len() > p.len() && n[..p.len()].eq_ignore_ascii_case(p))
                .then(|| n[p.len()..].to_string())
        };
        for (n, e) in ad.iter_inserted() {
            let n = n.as_str();
            if let Some(a) = strip(n, "eval_set_") {
                eval_sets.insert(key(&a), (a, expr_to_old_syntax(e)));
            } else if let Some(a) = strip(n, "copy_") {
                if let Value::Str(to) = ad.eval(e, &Env::default()) {
                    copies.insert(key(&a), (a, to.to_string()));
                }
            } else if let Some(a) = strip(n, "delete_") {
                deletes.insert(key(&a), (a, String::new()));
            } else if let Some(a) = strip(n, "set_") {
                sets.insert(key(&a), (a, expr_to_old_syntax(e)));
            } else if n.eq_ignore_ascii_case("Requirements") {
                t.requirements = Some(expr_to_old_syntax(e));
            } else {
                let value = match e {
                    Expr::Lit(Value::Str(s)) => s.to_string(),
                    e => expr_to_old_syntax(e),
                };
                t.statements.push(Statement::Assign {
                    name: n.to_string(),
                    value,
                });
            }
        }
        for (keyword, group) in [
            (Keyword::Copy, copies),
            (Keyword::Delete, deletes),
            (Keyword::Set, sets),
            (Keyword::EvalSet, eval_sets),
        ] {
            for (_, (attr, rest)) in group {
                t.statements.push(Statement::Command {
                    keyword,
                    target: Target::Name(attr),
                    rest,
                    line: 0,
                });
            }
        }
        Ok(t)
    }

    /// Applies the transform to `job` if its requirements match the job
    /// as it is now. `config` lends its macros to `$(NAME)`, as the
    /// schedd's transforms see the configuration.
    pub fn apply(&self, job: &mut ClassAd, env: &Env, config: Option<&Config>) -> Applied {
        let mut out = Applied::default();
        let mut vars: BTreeMap<String, String> = BTreeMap::new();
        if let Some(req) = &self.requirements {
            let text = match expand(req, &vars, job, config) {
                Ok(t) => t,
                Err(e) => {
                    out.notes.push(format!("REQUIREMENTS: {e}"));
                    return out;
                }
            };
            match classad::parse_expr(&text) {
                Ok(e) => {
                    if eval_expr(&e, Some(job), None, env).as_bool() != Some(true) {
                        return out;
                    }
                }
                Err(e) => {
                    out.notes.push(format!(
                        "REQUIREMENTS {text}: not a ClassAd expression: {e}"
                    ));
                    return out;
                }
            }
        }
        out.matched = true;
        // The if/elif/else state: for each open `if`, whether its branch
        // is being run and whether any branch has run yet.
        let mut conds: Vec<(bool, bool)> = Vec::new();
        let active = |conds: &Vec<(bool, bool)>| conds.iter().all(|(on, _)| *on);
        for st in &self.statements {
            match st {
                Statement::Cond(c) => {
                    let outer = conds.len() <= 1 || conds[..conds.len() - 1].iter().all(|c| c.0);
                    match c {
                        Conditional::If(text) => {
                            let on =
                                active(&conds) && test(text, &vars, job, config, &mut out.notes);
                            conds.push((on, on));
                        }
                        Conditional::Elif(text) => {
                            if let Some((_, done)) = conds.last().copied() {
                                let now_on = outer
                                    && !done
                                    && test(text, &vars, job, config, &mut out.notes);
                                *conds.last_mut().unwrap() = (now_on, done || now_on);
                            }
                        }
                        Conditional::Else => {
                            if let Some((_, done)) = conds.last().copied() {
                                *conds.last_mut().unwrap() = (outer && !done, true);
                            }
                        }
                        Conditional::Endif => {
                            conds.pop();
                        }
                    }
                }
                _ if !active(&conds) => {}
                Statement::Assign { name, value } => {
                    // The value is expanded now: a later change to a macro
                    // it names does not change it (transforms run in order).
                    match expand(value, &vars, job, config) {
                        Ok(v) => {
                            vars.insert(name.to_ascii_lowercase(), v);
                        }
                        Err(e) => out.notes.push(format!("{name}: {e}")),
                    }
                }
                Statement::Command {
                    keyword,
                    target,
                    rest,
                    line,
                } => {
                    let rest = match expand(rest, &vars, job, config) {
                        Ok(r) => r,
                        Err(e) => {
                            out.notes.push(format!("line {line}: {e}"));
                            continue;
                        }
                    };
                    if let Err(note) = run(*keyword, target, rest.trim(), job, env, &mut vars) {
                        out.notes.push(if *line > 0 {
                            format!("line {line}: {note}")
                        } else {
                            note
                        });
                    }
                }
            }
        }
        out
    }
}

fn test(
    text: &str,
    vars: &BTreeMap<String, String>,
    job: &ClassAd,
    config: Option<&Config>,
    notes: &mut Vec<String>,
) -> bool {
    let m = MacroView { vars, job, config };
    match condition(text, &m) {
        Ok(b) => b,
        Err(e) => {
            notes.push(e);
            false
        }
    }
}

/// The macros a transform sees: its own variables, `MY.` attributes of the
/// job, then the configuration.
struct MacroView<'a> {
    vars: &'a BTreeMap<String, String>,
    job: &'a ClassAd,
    config: Option<&'a Config>,
}

impl Macros for MacroView<'_> {
    fn lookup(&self, name: &str) -> Option<String> {
        if name.len() > 3 && name[..3].eq_ignore_ascii_case("MY.") {
            let e = self.job.get(&name[3..])?;
            return Some(match e {
                Expr::Lit(Value::Str(s)) => s.to_string(),
                e => expr_to_old_syntax(e),
            });
        }
        if let Some(v) = self.vars.get(&name.to_ascii_lowercase()) {
            return Some(v.clone());
        }
        self.config.and_then(|c| c.lookup(name))
    }
}

fn expand(
    text: &str,
    vars: &BTreeMap<String, String>,
    job: &ClassAd,
    config: Option<&Config>,
) -> Result<String, String> {
    if !text.contains('$') {
        return Ok(text.to_string());
    }
    expand_macros(text, &MacroView { vars, job, config }).map_err(|e| e.to_string())
}

fn is_attr_name(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The literal expression for a computed value (lists and ads as written).
fn value_expr(v: Value) -> Expr {
    Expr::from_value(v)
}

/// `\0`, `\1`, ... in `pattern` replaced by the regex's captures.
fn substitute(pattern: &str, caps: &pcre2::bytes::Captures<'_>) -> String {
    let mut out = String::new();
    let mut chars = pattern.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(d) = chars.peek().and_then(|d| d.to_digit(10)) {
                if (d as usize) < caps.len() {
                    chars.next();
                    if let Some(m) = caps.get(d as usize) {
                        out.push_str(&String::from_utf8_lossy(m.as_bytes()));
                    }
                    continue;
                }
            }
        }
        out.push(c);
    }
    out
}

/// Carries out one statement on the job.
fn run(
    keyword: Keyword,
    target: &Target,
    rest: &str,
    job: &mut ClassAd,
    env: &Env,
    vars: &mut BTreeMap<String, String>,
) -> Result<(), String> {
    let parse = |what: &str| {
        classad::parser::parse_old_value_whole(rest)
            .map_err(|e| format!("{what}: `{rest}` is not a ClassAd expression: {e}"))
    };
    match (keyword, target) {
        (Keyword::Default, Target::Name(a)) => {
            let present = match job.get(a) {
                None => false,
                Some(Expr::Lit(Value::Undefined)) => false,
                Some(_) => true,
            };
            if !present {
                job.insert(a.as_str(), parse(&format!("DEFAULT {a}"))?);
            }
        }
        (Keyword::Set, Target::Name(a)) => {
            job.insert(a.as_str(), parse(&format!("SET {a}"))?);
        }
        (Keyword::EvalSet, Target::Name(a)) => {
            let e = parse(&format!("EVALSET {a}"))?;
            let v = eval_expr(&e, Some(job), None, env);
            job.insert(a.as_str(), value_expr(v));
        }
        (Keyword::EvalMacro, Target::Name(v)) => {
            let e = parse(&format!("EVALMACRO {v}"))?;
            let text = match eval_expr(&e, Some(job), None, env) {
                Value::Str(s) => s.to_string(),
                other => expr_to_old_syntax(&value_expr(other)),
            };
            vars.insert(v.to_ascii_lowercase(), text);
        }
        (Keyword::Copy | Keyword::Rename | Keyword::Delete, Target::Name(a)) => {
            if keyword != Keyword::Delete && !is_attr_name(rest) {
                return Err(format!("`{rest}` is not a valid attribute name"));
            }
            let Some(e) = job.get(a).cloned() else {
                return Ok(());
            };
            if keyword != Keyword::Copy {
                job.remove(a);
            }
            if keyword != Keyword::Delete {
                job.insert(rest, e);
            }
        }
        (Keyword::Copy | Keyword::Rename | Keyword::Delete, Target::Regex(re)) => {
            let re = pcre2::bytes::RegexBuilder::new()
                .caseless(true)
                .build(re)
                .map_err(|e| format!("regex /{re}/: {e}"))?;
            // Names are collected first, then the ad is changed, so a new
            // name cannot match again.
            let mut matched: BTreeMap<String, String> = BTreeMap::new();
            for (n, _) in job.iter_inserted() {
                if let Ok(Some(caps)) = re.captures(n.as_str().as_bytes()) {
                    let new = if keyword == Keyword::Delete {
                        String::new()
                    } else {
                        substitute(rest, &caps)
                    };
                    matched.insert(n.to_string(), new);
                }
            }
            for (old, new) in matched {
                if keyword != Keyword::Delete && !is_attr_name(&new) {
                    continue;
                }
                let Some(e) = job.get(&old).cloned() else {
                    continue;
                };
                if keyword != Keyword::Copy {
                    job.remove(&old);
                }
                if keyword != Keyword::Delete {
                    job.insert(new.as_str(), e);
                }
            }
        }
        // NAME, REQUIREMENTS, TRANSFORM, UNIVERSE: envelope, nothing to do.
        _ => {}
    }
    Ok(())
}

/// The schedd's transforms, in `JOB_TRANSFORM_NAMES` order.
#[derive(Clone, Debug, Default)]
pub struct Transforms {
    list: Vec<Transform>,
    config: Option<Arc<Config>>,
}

impl Transforms {
    pub fn none() -> Transforms {
        Transforms::default()
    }

    pub fn new(list: Vec<Transform>) -> Transforms {
        Transforms { list, config: None }
    }

    /// Reads `JOB_TRANSFORM_NAMES` and each `JOB_TRANSFORM_<Name>`
    /// (unexpanded: `$(MY.Attr)` is expanded against each job). A name
    /// without a definition is an error, as is a transform that does not
    /// read.
    pub fn from_config(config: &Config) -> Result<Transforms, TransformError> {
        let names = config
            .list("JOB_TRANSFORM_NAMES")
            .map_err(|e| TransformError {
                name: "NAMES".into(),
                line: 0,
                text: String::new(),
                message: e.to_string(),
            })?;
        let mut list = Vec::new();
        for name in names {
            let param = format!("JOB_TRANSFORM_{name}");
            let Some(text) = config.raw(&param) else {
                return Err(TransformError {
                    name: name.clone(),
                    line: 0,
                    text: String::new(),
                    message: format!(
                        "JOB_TRANSFORM_NAMES lists {name}, but {param} is not defined"
                    ),
                });
            };
            list.push(Transform::parse(&name, text)?);
        }
        Ok(Transforms {
            list,
            config: Some(Arc::new(config.clone())),
        })
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Applies every transform whose requirements match, in order. Returns
    /// the notes of statements that were skipped.
    pub fn apply(&self, job: &mut ClassAd, env: &Env) -> Vec<String> {
        let mut notes = Vec::new();
        for t in &self.list {
            let a = t.apply(job, env, self.config.as_deref());
            notes.extend(
                a.notes
                    .into_iter()
                    .map(|n| format!("JOB_TRANSFORM_{}: {n}", t.name)),
            );
        }
        notes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(text: &str) -> ClassAd {
        ClassAd::parse(text).unwrap()
    }

    fn show(ad: &ClassAd, name: &str) -> Option<String> {
        ad.get(name).map(classad::unparse::expr_to_string)
    }

    #[test]
    fn statements_run_in_order_with_macros_of_the_moment() {
        let t = Transform::parse(
            "t",
            "x = 1\nSET A $(x)\nx = 2\nSET B $(x)\nEVALMACRO y A + B\nSET C $(y) * 10\n",
        )
        .unwrap();
        let mut ad = job("[ ]");
        let r = t.apply(&mut ad, &Env::at(0), None);
        assert!(r.matched && r.notes.is_empty(), "{r:?}");
        assert_eq!(show(&ad, "A").as_deref(), Some("1"));
        assert_eq!(show(&ad, "B").as_deref(), Some("2"));
        assert_eq!(show(&ad, "C").as_deref(), Some("3 * 10"));
    }

    #[test]
    fn regex_copy_rename_delete() {
        let t = Transform::parse(
            "t",
            "COPY /Resource(.+)/ OriginalResource\\1\nRENAME /^foo(.*)$/ bar\\1\nDELETE /^junk/\n",
        )
        .unwrap();
        let mut ad =
            job("[ ResourceA = 1; resourceb = 2; FooX = 3; JunkOne = 4; JunkTwo = 5; Keep = 6 ]");
        t.apply(&mut ad, &Env::at(0), None);
        assert_eq!(show(&ad, "OriginalResourceA").as_deref(), Some("1"));
        assert_eq!(show(&ad, "OriginalResourceb").as_deref(), Some("2"));
        assert_eq!(show(&ad, "barX").as_deref(), Some("3"));
        assert!(ad.get("FooX").is_none());
        assert!(ad.get("JunkOne").is_none() && ad.get("JunkTwo").is_none());
        assert_eq!(show(&ad, "Keep").as_deref(), Some("6"));
    }

    #[test]
    fn unknown_statements_are_configuration_errors() {
        let e = Transform::parse("bad", "SET A 1\nFROB B\n").unwrap_err();
        assert_eq!(e.line, 2);
        assert!(
            e.to_string()
                .starts_with("JOB_TRANSFORM_bad line 2: `FROB` is not a transform statement"),
            "{e}"
        );
    }

    #[test]
    fn if_defined_my_attr() {
        let t = Transform::parse(
            "t",
            "if defined MY.Special\n  SET Kind \"special\"\nelse\n  SET Kind \"plain\"\nendif\n",
        )
        .unwrap();
        let mut a = job("[ Special = true ]");
        t.apply(&mut a, &Env::at(0), None);
        assert_eq!(show(&a, "Kind").as_deref(), Some("\"special\""));
        let mut b = job("[ ]");
        t.apply(&mut b, &Env::at(0), None);
        assert_eq!(show(&b, "Kind").as_deref(), Some("\"plain\""));
    }
}
