//! Reading a whole configuration: the root file, what it includes, the
//! local configuration directory and files, `use` templates, conditionals,
//! and `_CONDOR_NAME` environment overrides, in HTCondor's order.
//!
//! Order of reading (HTCondor 25's, checked against its library):
//! 1. the host's built-in macros, then `SUBSYSTEM` and `LOCALNAME`;
//! 2. the root file: `FERROCONDOR_CONFIG`, else `CONDOR_CONFIG`, else the
//!    first of HTCondor's default locations that exists;
//! 3. the files of `LOCAL_CONFIG_DIR`, in lexical order, skipping names that
//!    match `LOCAL_CONFIG_DIR_EXCLUDE_REGEXP`;
//! 4. the files of `LOCAL_CONFIG_FILE`, in list order;
//! 5. environment variables `_CONDOR_NAME=value`.
//!
//! Only self-references are expanded while reading (`PREEMPT = ($(PREEMPT))
//! && ...` takes the definition in force at that line); everything else is
//! expanded when a value is asked for, so a macro may be used before it is
//! defined.

use crate::config::{Config, Origin};
use crate::error::{ConfigError, ErrorKind, Warning};
use crate::expand::{next_reference, RefKind};
use crate::params;
use crate::source::{FileError, Files, Host};
use crate::syntax::{self, is_name_char, AssignOp, IncludeKind, Lines, Statement};
use crate::templates;
use crate::typed::split_list;

/// The HTCondor release whose configuration behaviour we reproduce; `if
/// version >= X.Y.Z` compares with it, so admins' version guards choose
/// what they would on that release.
pub const COMPATIBLE_VERSION: [u32; 3] = [25, 14, 1];

/// Where HTCondor looks for its configuration when no variable names it.
pub const DEFAULT_LOCATIONS: &[&str] =
    &["/etc/condor/condor_config", "/usr/local/etc/condor_config"];

/// How deeply includes and templates may nest (HTCondor stops at 20 too).
const MAX_DEPTH: usize = 20;

/// The default for `LOCAL_CONFIG_DIR_EXCLUDE_REGEXP`: editor backups,
/// package-manager leftovers, scripts and hidden files.
const DEFAULT_EXCLUDE: &[&str] = &[
    ".rpmsave",
    ".rpmnew",
    ".dpkg-old",
    ".dpkg-dist",
    ".cfsaved",
    ".pl",
    ".py",
    ".sh",
    "~",
];

/// Which file to start from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Root {
    /// `FERROCONDOR_CONFIG`, `CONDOR_CONFIG`, then the default locations.
    Search,
    /// This file.
    File(String),
    /// No file at all: defaults, host macros and environment overrides
    /// only (HTCondor's `CONDOR_CONFIG=ONLY_ENV`).
    None,
}

/// What to read, and for whom.
#[derive(Clone, Debug)]
pub struct LoadOptions {
    /// The daemon or tool reading it: `STARTD`, `SCHEDD`, `TOOL`, ...
    /// Decides which `SUBSYS.NAME` definitions apply.
    pub subsystem: String,
    /// A daemon's local name, for `LOCALNAME.NAME` definitions.
    pub local_name: Option<String>,
    pub root: Root,
}

impl LoadOptions {
    pub fn new(subsystem: &str, root: Root) -> LoadOptions {
        LoadOptions {
            subsystem: subsystem.to_ascii_uppercase(),
            local_name: None,
            root,
        }
    }
}

/// Reads the configuration. A broken configuration is an error naming the
/// file and line; nothing is half-loaded.
pub fn load(opts: &LoadOptions, files: &dyn Files, host: &dyn Host) -> Result<Config, ConfigError> {
    let mut config = Config {
        subsystem: opts.subsystem.to_ascii_uppercase(),
        local_name: opts.local_name.clone(),
        env: host.env_vars().into_iter().collect(),
        seed: host.random_seed(),
        ..Config::default()
    };
    for (name, value) in host.macros() {
        config.define(&name, value, Origin::Host);
    }
    config.define_builtin();
    let mut loader = Loader {
        config,
        files,
        stack: Vec::new(),
    };
    if let Some(root) = find_root(&opts.root, files, host)? {
        // HTCondor's CONFIG_ROOT: the directory of the root file.
        let dir = dir_of(&root).trim_end_matches('/');
        let dir = if dir.is_empty() && !root.starts_with('/') {
            "."
        } else if dir.is_empty() {
            "/"
        } else {
            dir
        };
        loader
            .config
            .define("CONFIG_ROOT", dir.to_string(), Origin::Builtin);
        loader.file(&root, None)?;
        loader.local_config(&root)?;
    }
    loader.environment_overrides(host);
    Ok(loader.config)
}

/// The root file to read, or `None` for `ONLY_ENV`.
fn find_root(
    root: &Root,
    files: &dyn Files,
    host: &dyn Host,
) -> Result<Option<String>, ConfigError> {
    match root {
        Root::File(path) => Ok(Some(path.clone())),
        Root::None => Ok(None),
        Root::Search => {
            for var in ["FERROCONDOR_CONFIG", "CONDOR_CONFIG"] {
                if let Some(v) = host.env(var).filter(|v| !v.is_empty()) {
                    return Ok((v != "ONLY_ENV").then_some(v));
                }
            }
            for path in DEFAULT_LOCATIONS {
                if files.read(path).is_ok() {
                    return Ok(Some(path.to_string()));
                }
            }
            Err(ConfigError::new(
                ErrorKind::NoConfig,
                0,
                format!(
                    "no configuration file: FERROCONDOR_CONFIG and CONDOR_CONFIG are not set, and none of {} exists (set CONDOR_CONFIG=ONLY_ENV to run on defaults alone)",
                    DEFAULT_LOCATIONS.join(", ")
                ),
            ))
        }
    }
}

/// The directory part of a path, with its slash (`""` for a bare name).
fn dir_of(path: &str) -> &str {
    match path.rfind('/') {
        Some(i) => &path[..=i],
        None => "",
    }
}

/// A path named in `from`'s text: relative names are taken from the
/// directory of the file that names them.
fn relative_to(from: &str, path: &str) -> String {
    if path.starts_with('/') {
        path.to_string()
    } else {
        format!("{}{path}", dir_of(from))
    }
}

/// Where the statements being read come from.
#[derive(Clone)]
struct Context<'a> {
    /// The file being read (for a template: the file of the `use`).
    path: &'a str,
    /// `(template, line of the use)` when reading a template's text.
    template: Option<(String, u32)>,
    depth: usize,
}

struct Loader<'f> {
    config: Config,
    files: &'f dyn Files,
    /// Files being read, outermost first (to refuse an include loop).
    stack: Vec<String>,
}

/// One `if` being read.
struct IfFrame {
    /// Whether the lines around the `if` are being read.
    outer: bool,
    /// Whether the current branch is being read.
    active: bool,
    /// Whether some branch has been taken already.
    taken: bool,
    seen_else: bool,
}

impl Loader<'_> {
    fn file(&mut self, path: &str, from: Option<(&str, u32)>) -> Result<(), ConfigError> {
        let text = self.files.read(path).map_err(|e| {
            let mut err = ConfigError::new(
                ErrorKind::Include,
                from.map_or(0, |f| f.1),
                match (&e, from) {
                    (FileError::NotFound, None) => {
                        format!("configuration file {path} does not exist")
                    }
                    (_, None) => format!("cannot read configuration file {path}: {e}"),
                    (_, Some(_)) => format!("cannot read included file {path}: {e}"),
                },
            );
            if let Some((file, _)) = from {
                err = err.in_file(file);
            }
            err
        })?;
        self.config.files.push(path.to_string());
        self.stack.push(path.to_string());
        let ctx = Context {
            path,
            template: None,
            depth: self.stack.len(),
        };
        let result = self.text(&text, &ctx).map_err(|e| e.in_file(path));
        self.stack.pop();
        result
    }

    fn text(&mut self, text: &str, ctx: &Context<'_>) -> Result<(), ConfigError> {
        let mut lines = Lines::new(text);
        let mut ifs: Vec<IfFrame> = Vec::new();
        while let Some(logical) = lines.next_logical() {
            let active = ifs.last().is_none_or(|f| f.active);
            let stmt = if active {
                syntax::parse_statement(&logical, &mut lines)?
            } else {
                match syntax::conditional(&logical.text) {
                    Some(s) => s,
                    None => continue,
                }
            };
            let at = |message: String| {
                ConfigError::new(ErrorKind::Conditional, logical.line, message)
                    .with_text(&logical.text)
            };
            match stmt {
                Statement::If(cond) => {
                    let value = if active {
                        self.condition(&cond).map_err(at)?
                    } else {
                        false
                    };
                    ifs.push(IfFrame {
                        outer: active,
                        active: value,
                        taken: value || !active,
                        seen_else: false,
                    });
                }
                Statement::Elif(cond) => {
                    let Some(f) = ifs.last_mut() else {
                        return Err(at("`elif` without a matching `if`".into()));
                    };
                    if f.seen_else {
                        return Err(at("`elif` is not allowed after `else`".into()));
                    }
                    if f.outer && !f.taken {
                        let value = self.condition(&cond).map_err(at)?;
                        let f = ifs.last_mut().expect("checked above");
                        f.active = value;
                        f.taken = value;
                    } else {
                        f.active = false;
                    }
                }
                Statement::Else => {
                    let Some(f) = ifs.last_mut() else {
                        return Err(at("`else` without a matching `if`".into()));
                    };
                    if f.seen_else {
                        return Err(at("`else` is not allowed after `else`".into()));
                    }
                    f.active = f.outer && !f.taken;
                    f.taken = true;
                    f.seen_else = true;
                }
                Statement::Endif => {
                    if ifs.pop().is_none() {
                        return Err(at("`endif` without a matching `if`".into()));
                    }
                }
                other => self.statement(other, &logical, ctx)?,
            }
        }
        if !ifs.is_empty() {
            return Err(ConfigError::new(
                ErrorKind::Conditional,
                lines.last_line(),
                format!(
                    "end of file inside {} `if`: `endif` missing",
                    if ifs.len() == 1 { "an" } else { "nested" }
                ),
            ));
        }
        Ok(())
    }

    fn origin(&self, ctx: &Context<'_>, line: u32) -> Origin {
        match &ctx.template {
            Some((template, use_line)) => Origin::Template {
                template: template.clone(),
                path: ctx.path.to_string(),
                line: *use_line,
            },
            None => Origin::File {
                path: ctx.path.to_string(),
                line,
            },
        }
    }

    fn warn(&mut self, ctx: &Context<'_>, line: u32, message: String) {
        let line = ctx.template.as_ref().map_or(line, |t| t.1);
        self.config.warnings.push(Warning {
            file: ctx.path.to_string(),
            line,
            message,
        });
    }

    fn statement(
        &mut self,
        stmt: Statement,
        logical: &syntax::Logical,
        ctx: &Context<'_>,
    ) -> Result<(), ConfigError> {
        let line = logical.line;
        let fail =
            |kind, message: String| ConfigError::new(kind, line, message).with_text(&logical.text);
        match stmt {
            Statement::Assign {
                name,
                op,
                value,
                ignored,
                colon,
            } => {
                let name = if name.contains('$') {
                    let expanded = self
                        .config
                        .expand(&name)
                        .map_err(|e| fail(ErrorKind::Syntax, format!("the name `{name}`: {e}")))?;
                    if expanded.is_empty() || !expanded.chars().all(is_name_char) {
                        return Err(fail(
                            ErrorKind::Syntax,
                            format!("the name `{name}` expands to `{expanded}`, which is not a valid parameter name"),
                        ));
                    }
                    expanded
                } else {
                    name
                };
                if colon {
                    self.warn(
                        ctx,
                        line,
                        format!("`{name} : value` is an obsolete form of `{name} = value`"),
                    );
                }
                if let Some(junk) = ignored {
                    self.warn(
                        ctx,
                        line,
                        format!("`{junk}` between the name `{name}` and `=` is ignored"),
                    );
                }
                let mut raw = self.resolve_self_references(&name, &value);
                if op == AssignOp::Append {
                    let before = self.previous(&name, &name);
                    if let Some(before) = before.filter(|b| !b.is_empty()) {
                        raw = format!("{before} {raw}");
                    }
                }
                let origin = self.origin(ctx, line);
                self.config.define(&name, raw, origin);
            }
            Statement::Include { kind, target } => {
                let target = self
                    .config
                    .expand(&target)
                    .map_err(|e| fail(ErrorKind::Include, format!("include: {e}")))?;
                if kind == IncludeKind::Command {
                    return self.command(&target, logical, ctx);
                }
                let path = relative_to(ctx.path, target.trim());
                if self.stack.len() >= MAX_DEPTH {
                    return Err(fail(
                        ErrorKind::Include,
                        format!(
                            "includes nest more than {MAX_DEPTH} deep (through {})",
                            self.stack.join(" -> ")
                        ),
                    ));
                }
                if self.stack.contains(&path) {
                    return Err(fail(
                        ErrorKind::Include,
                        format!(
                            "{path} includes itself (through {} -> {path})",
                            self.stack.join(" -> ")
                        ),
                    ));
                }
                if kind == IncludeKind::IfExist
                    && self.files.read(&path) == Err(FileError::NotFound)
                {
                    return Ok(());
                }
                let from = ctx.template.as_ref().map_or(line, |t| t.1);
                self.file(&path, Some((ctx.path, from))).map_err(|mut e| {
                    if e.file != ctx.path {
                        e.included_from.push((ctx.path.to_string(), from));
                    }
                    e
                })?;
            }
            Statement::Use {
                category,
                templates: list,
            } => {
                for item in templates::split_args(&list) {
                    self.use_template(&category, item.trim(), logical, ctx)?;
                }
            }
            Statement::Error(message) => {
                let message = self.config.expand(&message).unwrap_or(message);
                let line = ctx.template.as_ref().map_or(line, |t| t.1);
                let mut e =
                    ConfigError::new(ErrorKind::ErrorStatement, line, format!("error: {message}"));
                if ctx.template.is_none() {
                    e = e.with_text(&logical.text);
                }
                return Err(e);
            }
            Statement::Warning(message) => {
                let message = self.config.expand(&message).unwrap_or(message);
                self.warn(ctx, line, message);
            }
            Statement::If(_) | Statement::Elif(_) | Statement::Else | Statement::Endif => {
                unreachable!("conditionals are handled by the caller")
            }
        }
        Ok(())
    }

    fn command(
        &mut self,
        command: &str,
        logical: &syntax::Logical,
        ctx: &Context<'_>,
    ) -> Result<(), ConfigError> {
        let line = logical.line;
        let allowed = self
            .config
            .get("ALLOW_INCLUDE_COMMAND")
            .ok()
            .flatten()
            .is_some_and(|v| crate::typed::parse_bool(&v) == Some(true));
        if !allowed {
            return Err(ConfigError::new(
                ErrorKind::Include,
                line,
                "`include command :` runs a program to produce configuration, which is off by default; an admin allows it with `ALLOW_INCLUDE_COMMAND = True` earlier in the configuration".to_string(),
            )
            .with_text(&logical.text));
        }
        let text = self.files.run(command).map_err(|e| {
            ConfigError::new(
                ErrorKind::Include,
                line,
                format!("`include command : {command}` failed: {e}"),
            )
            .with_text(&logical.text)
        })?;
        let name = format!("{}:{line}: command `{command}`", ctx.path);
        let sub = Context {
            path: &name,
            template: None,
            depth: ctx.depth + 1,
        };
        self.text(&text, &sub).map_err(|mut e| {
            e.included_from.push((ctx.path.to_string(), line));
            e.in_file(&name)
        })
    }

    fn use_template(
        &mut self,
        category: &str,
        item: &str,
        logical: &syntax::Logical,
        ctx: &Context<'_>,
    ) -> Result<(), ConfigError> {
        let line = ctx.template.as_ref().map_or(logical.line, |t| t.1);
        let fail = |message: String| {
            let mut e = ConfigError::new(ErrorKind::Template, line, message);
            if ctx.template.is_none() {
                e = e.with_text(&logical.text);
            }
            e
        };
        let (name, args) = match item.find('(') {
            Some(open) => {
                let close = syntax::matching_paren(item, open)
                    .ok_or_else(|| fail(format!("`use {category} : {item}`: `(` without `)`")))?;
                (item[..open].trim(), Some(&item[open + 1..close]))
            }
            None => (item, None),
        };
        let template = templates::find(category, name).map_err(fail)?;
        if ctx.depth > MAX_DEPTH {
            return Err(fail(format!(
                "templates use each other more than {MAX_DEPTH} deep"
            )));
        }
        let body = templates::substitute(template.body, args.unwrap_or(""));
        let label = format!("{}:{}", template.category, template.name);
        let sub = Context {
            path: ctx.path,
            template: Some((
                ctx.template
                    .as_ref()
                    .map_or(label.clone(), |(outer, _)| format!("{outer} -> {label}")),
                line,
            )),
            depth: ctx.depth + 1,
        };
        self.text(&body, &sub).map_err(|mut e| {
            if e.line != line || e.kind == ErrorKind::Syntax {
                e.message = format!("in use {label}: {}", e.message);
                e.line = line;
                e.text = Some(logical.text.clone());
            }
            e
        })
    }

    /// The value a self-reference in a new definition of `name` stands for.
    /// `referenced` is the name inside `$(...)`: the full name, or for a
    /// prefixed definition (`STARTD.START`) possibly the plain one.
    fn previous(&self, name: &str, referenced: &str) -> Option<String> {
        if let Some(def) = self.config.exact(name) {
            return Some(def.raw.clone());
        }
        if !referenced.eq_ignore_ascii_case(name) {
            // `STARTD.START = $(START) ...`: the plain START in force now.
            if let Some(def) = self.config.exact(referenced) {
                return Some(def.raw.clone());
            }
        }
        params::default_for(referenced, &self.config.subsystem).map(str::to_string)
    }

    /// Replaces the references a definition of `name` makes to itself with
    /// the value in force before it (HTCondor's append idiom), leaving every
    /// other reference for lookup time.
    fn resolve_self_references(&self, name: &str, value: &str) -> String {
        if !value.contains('$') {
            return value.to_string();
        }
        let plain = name.split_once('.').map(|(_, rest)| rest);
        let is_self = |r: &str| {
            r.eq_ignore_ascii_case(name) || plain.is_some_and(|p| r.eq_ignore_ascii_case(p))
        };
        let mut s = value.to_string();
        let mut i = 0;
        while let Some(r) = next_reference(&s, i) {
            match r.kind {
                RefKind::Macro {
                    name: referenced,
                    default,
                } if is_self(referenced) => {
                    let replacement = self
                        .previous(name, referenced)
                        .filter(|v| !v.is_empty())
                        .or_else(|| default.map(str::to_string))
                        .unwrap_or_default();
                    let (start, end) = (r.start, r.end);
                    s.replace_range(start..end, &replacement);
                    i = start + replacement.len();
                }
                _ => i = r.start + 1,
            }
        }
        s
    }

    /// Reads the simple conditions HTCondor allows after `if` and `elif`
    /// (shared with the submit language: `macros::condition`).
    fn condition(&self, text: &str) -> Result<bool, String> {
        crate::macros::condition(text, &self.config)
    }

    /// `LOCAL_CONFIG_DIR`, then `LOCAL_CONFIG_FILE`, read after the root.
    fn local_config(&mut self, root: &str) -> Result<(), ConfigError> {
        let at_root = |e: crate::config::LookupError| {
            ConfigError::new(ErrorKind::Include, 0, e.to_string()).in_file(root)
        };
        if let Some(dirs) = self.config.get("LOCAL_CONFIG_DIR").map_err(at_root)? {
            let exclude = self
                .config
                .get("LOCAL_CONFIG_DIR_EXCLUDE_REGEXP")
                .map_err(at_root)?;
            for dir in split_list(&dirs) {
                let dir = relative_to(root, dir);
                let Ok(mut names) = self.files.list_dir(&dir) else {
                    continue;
                };
                names.sort();
                for name in names {
                    if excluded(&name, exclude.as_deref()) {
                        continue;
                    }
                    let path = format!("{}/{name}", dir.trim_end_matches('/'));
                    self.file(&path, None)?;
                }
            }
        }
        if let Some(list) = self.config.get("LOCAL_CONFIG_FILE").map_err(at_root)? {
            let required = self
                .config
                .get("REQUIRE_LOCAL_CONFIG_FILE")
                .ok()
                .flatten()
                .and_then(|v| crate::typed::parse_bool(&v))
                .unwrap_or(true);
            for file in split_list(&list) {
                let path = relative_to(root, file);
                match self.files.read(&path) {
                    Err(FileError::NotFound) if !required => continue,
                    Err(e) => {
                        return Err(ConfigError::new(
                            ErrorKind::Include,
                            0,
                            format!("cannot read LOCAL_CONFIG_FILE {path}: {e} (set REQUIRE_LOCAL_CONFIG_FILE = False to allow a missing one)"),
                        )
                        .in_file(root))
                    }
                    Ok(_) => self.file(&path, None)?,
                }
            }
        }
        Ok(())
    }

    /// `_CONDOR_NAME=value` in the environment overrides every file.
    fn environment_overrides(&mut self, host: &dyn Host) {
        let mut vars = host.env_vars();
        vars.sort();
        for (var, value) in vars {
            if let Some(name) = var.strip_prefix("_CONDOR_") {
                if !name.is_empty() && name.chars().all(is_name_char) {
                    self.config.define(
                        name,
                        value,
                        Origin::Environment {
                            variable: var.clone(),
                        },
                    );
                }
            }
        }
    }
}

/// Whether a file of `LOCAL_CONFIG_DIR` is skipped. With no
/// `LOCAL_CONFIG_DIR_EXCLUDE_REGEXP`, HTCondor's default: hidden files,
/// `#...`, scripts and package-manager leftovers.
fn excluded(name: &str, regexp: Option<&str>) -> bool {
    match regexp {
        Some(re) => pcre2::bytes::Regex::new(re)
            .ok()
            .and_then(|r| r.is_match(name.as_bytes()).ok())
            .unwrap_or(false),
        None => {
            name.starts_with('.')
                || name.starts_with('#')
                || DEFAULT_EXCLUDE.iter().any(|s| name.ends_with(s))
        }
    }
}

/// What a daemon does when told to reconfigure: read the configuration
/// again; if it is broken, keep the one in force and say why.
pub fn reconfigure(
    current: Config,
    opts: &LoadOptions,
    files: &dyn Files,
    host: &dyn Host,
) -> (Config, Option<ConfigError>) {
    match load(opts, files, host) {
        Ok(new) => (new, None),
        Err(e) => (current, Some(e)),
    }
}
