//! The clauses condor_submit adds to a job's `Requirements` (and `Rank`).
//!
//! The user's expression comes first, in parentheses, then the
//! configuration's `APPEND_REQ_VANILLA` (vanilla jobs) or
//! `APPEND_REQUIREMENTS`, then HTCondor's defaults, each added only when
//! it says something (rules read from HTCondor 24.0.24's answers):
//! - `(TARGET.Arch == "<ARCH>")` unless the expression mentions `Arch`;
//! - `(TARGET.OpSys == "<OPSYS>")` unless it mentions `OpSys`,
//!   `OpSysAndVer`, `OpSysLongName`, `OpSysShortName`, `OpSysName` or
//!   `OpSysLegacy`; docker jobs get `TARGET.HasDocker` instead, container
//!   jobs `TARGET.HasContainer` and the image kind's `TARGET.Has...`;
//! - `(TARGET.Disk >= RequestDisk)` unless RequestDisk is a number <= 0;
//! - `(TARGET.Memory >= RequestMemory)` unless it is a number <= 1;
//! - `(TARGET.Cpus >= RequestCpus)` unless it is a number <= 1 or the
//!   expression mentions `Cpus`;
//! - `(TARGET.<Res> >= Request<Res>)` for GPUs and custom resources, in
//!   case-insensitive order, unless the request is a number <= 0 or the
//!   expression mentions the resource (`require_gpus` turns the GPU
//!   clause into a `countMatches`);
//! - a file-transfer clause by `should_transfer_files` (not for the local
//!   and scheduler universes): `NO` needs the same file system domain,
//!   `YES` a machine with file transfer (and the URL plugins the job
//!   uses), `IF_NEEDED` either; a clause is left out when the expression
//!   mentions `FileSystemDomain` or `HasFileTransfer`.
//!
//! A name counts as mentioned whatever its scope (`MY.Arch` too).

use std::collections::BTreeSet;

use classad::Expr;

/// The names an expression refers to, upper-cased.
pub(crate) fn references(e: &Expr, out: &mut BTreeSet<String>) {
    match e {
        Expr::Lit(_) | Expr::RelTimeLit(_) => {}
        Expr::Attr(n) | Expr::Absolute(n) => {
            out.insert(n.as_str().to_ascii_uppercase());
        }
        Expr::Select(base, n) => {
            out.insert(n.as_str().to_ascii_uppercase());
            references(base, out);
        }
        Expr::Index(a, b) | Expr::Elvis(a, b) => {
            references(a, out);
            references(b, out);
        }
        Expr::Unary(_, a) | Expr::Paren(a) => references(a, out),
        Expr::Binary(_, pair) => {
            references(&pair.0, out);
            references(&pair.1, out);
        }
        Expr::Cond(t) => {
            references(&t.0, out);
            references(&t.1, out);
            references(&t.2, out);
        }
        Expr::Call(c) => c.args.iter().for_each(|a| references(a, out)),
        Expr::List(items) => items.iter().for_each(|a| references(a, out)),
        Expr::Ad(ad) => ad.iter().for_each(|(_, a)| references(a, out)),
        Expr::Folded(f) => references(&f.expr, out),
    }
}

/// Whether `e` is a number literal no greater than `limit` (such a request
/// needs no clause: every slot has that much).
pub(crate) fn literal_at_most(e: &Expr, limit: f64) -> bool {
    literal_number(e).is_some_and(|n| n <= limit)
}

/// The number a literal (or a negated literal) is.
fn literal_number(e: &Expr) -> Option<f64> {
    match e {
        Expr::Lit(v) => v
            .as_number()
            .filter(|_| !matches!(v, classad::Value::Bool(_))),
        Expr::Unary(classad::expr::UnOp::Neg, inner) => literal_number(inner).map(|n| -n),
        Expr::Folded(f) if matches!(f.expr, Expr::Unary(..)) => literal_number(&f.expr),
        _ => None,
    }
}

/// How the job's files reach the execute machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ShouldTransfer {
    Yes,
    No,
    IfNeeded,
}

impl ShouldTransfer {
    pub fn parse(text: &str) -> Option<ShouldTransfer> {
        match text.to_ascii_uppercase().as_str() {
            "YES" | "TRUE" => Some(ShouldTransfer::Yes),
            "NO" | "FALSE" => Some(ShouldTransfer::No),
            "IF_NEEDED" => Some(ShouldTransfer::IfNeeded),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            ShouldTransfer::Yes => "YES",
            ShouldTransfer::No => "NO",
            ShouldTransfer::IfNeeded => "IF_NEEDED",
        }
    }
}

/// What the default clauses depend on.
pub(crate) struct Inputs<'a> {
    /// The user's and the configuration's clauses, each already in
    /// parentheses.
    pub leading: Vec<String>,
    /// Names the leading clauses mention, upper-cased.
    pub mentioned: BTreeSet<String>,
    pub arch: &'a str,
    pub opsys: &'a str,
    /// `TARGET.HasDocker` or the container clauses, replacing the OpSys one.
    pub opsys_replacement: Option<Vec<String>>,
    pub request_disk: &'a Expr,
    pub request_memory: &'a Expr,
    pub request_cpus: &'a Expr,
    /// GPUs and custom resources: (name in the machine ad, request
    /// attribute, its expression), sorted.
    pub resources: Vec<(String, String, &'a Expr)>,
    /// The GPU clause when `require_gpus` is given.
    pub require_gpus: bool,
    /// `None` for universes that run on the access point.
    pub transfer: Option<ShouldTransfer>,
    /// URL schemes of the job's transfers, lower-case, sorted, unique.
    pub plugin_methods: &'a [String],
}

/// The whole Requirements text.
pub(crate) fn requirements(i: &Inputs<'_>) -> String {
    let mentions = |names: &[&str]| {
        names
            .iter()
            .any(|n| i.mentioned.contains(&n.to_ascii_uppercase()))
    };
    let mut clauses = i.leading.clone();
    if !mentions(&["Arch"]) {
        clauses.push(format!("(TARGET.Arch == \"{}\")", i.arch));
    }
    match &i.opsys_replacement {
        Some(replacement) => clauses.extend(replacement.iter().cloned()),
        None => {
            if !mentions(&[
                "OpSys",
                "OpSysAndVer",
                "OpSysLongName",
                "OpSysShortName",
                "OpSysName",
                "OpSysLegacy",
            ]) {
                clauses.push(format!("(TARGET.OpSys == \"{}\")", i.opsys));
            }
        }
    }
    if !literal_at_most(i.request_disk, 0.0) {
        clauses.push("(TARGET.Disk >= RequestDisk)".into());
    }
    if !literal_at_most(i.request_memory, 1.0) {
        clauses.push("(TARGET.Memory >= RequestMemory)".into());
    }
    if !literal_at_most(i.request_cpus, 1.0) && !mentions(&["Cpus"]) {
        clauses.push("(TARGET.Cpus >= RequestCpus)".into());
    }
    for (name, attr, e) in &i.resources {
        if literal_at_most(e, 0.0) || mentions(&[name.as_str()]) {
            continue;
        }
        if name.eq_ignore_ascii_case("GPUs") && i.require_gpus {
            clauses.push(format!(
                "(countMatches(MY.RequireGPUs,TARGET.AvailableGPUs) >= {attr})"
            ));
        } else {
            clauses.push(format!("(TARGET.{name} >= {attr})"));
        }
    }
    if let Some(transfer) = i.transfer {
        let mut with_transfer = String::from("TARGET.HasFileTransfer");
        for m in i.plugin_methods {
            with_transfer.push_str(&format!(
                " && stringListIMember(\"{m}\",TARGET.HasFileTransferPluginMethods)"
            ));
        }
        let fs = !mentions(&["FileSystemDomain"]);
        let ft = !mentions(&["HasFileTransfer"]);
        let same_domain = "(TARGET.FileSystemDomain == MY.FileSystemDomain)";
        match transfer {
            ShouldTransfer::No if fs => clauses.push(same_domain.into()),
            ShouldTransfer::Yes if ft => clauses.push(format!("({with_transfer})")),
            ShouldTransfer::IfNeeded => match (fs, ft) {
                (true, true) => clauses.push(format!("({same_domain} || ({with_transfer}))")),
                (false, true) => clauses.push(format!("({with_transfer})")),
                (true, false) => clauses.push(same_domain.into()),
                (false, false) => {}
            },
            _ => {}
        }
    }
    clauses.join(" && ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(t: &str) -> Expr {
        classad::parse_expr(t).unwrap()
    }

    fn names(t: &str) -> Vec<String> {
        let mut s = BTreeSet::new();
        references(&e(t), &mut s);
        s.into_iter().collect()
    }

    #[test]
    fn references_ignore_scope() {
        assert_eq!(
            names("MY.Arch == \"x\" && f(Memory)"),
            vec!["ARCH", "MEMORY", "MY"]
        );
        assert_eq!(
            names("(OpSysAndVer =?= 1) ? Cpus : {Disk}[0]"),
            vec!["CPUS", "DISK", "OPSYSANDVER"]
        );
    }

    #[test]
    fn small_literals_need_no_clause() {
        assert!(literal_at_most(&e("1"), 1.0));
        assert!(literal_at_most(&e("0.5"), 1.0));
        assert!(literal_at_most(&e("-4"), 0.0));
        assert!(!literal_at_most(&e("2"), 1.0));
        assert!(!literal_at_most(&e("1 * 1"), 1.0));
        assert!(!literal_at_most(&e("MY.Foo"), 1.0));
    }

    #[test]
    fn the_default_clauses() {
        let one = e("1");
        let mem = e("ifthenelse(true, 1, 2)");
        let disk = e("DiskUsage");
        let base = Inputs {
            leading: vec![],
            mentioned: BTreeSet::new(),
            arch: "X86_64",
            opsys: "LINUX",
            opsys_replacement: None,
            request_disk: &disk,
            request_memory: &mem,
            request_cpus: &one,
            resources: vec![],
            require_gpus: false,
            transfer: Some(ShouldTransfer::IfNeeded),
            plugin_methods: &[],
        };
        assert_eq!(
            requirements(&base),
            "(TARGET.Arch == \"X86_64\") && (TARGET.OpSys == \"LINUX\") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory) && ((TARGET.FileSystemDomain == MY.FileSystemDomain) || (TARGET.HasFileTransfer))"
        );
        let methods = ["http".to_string()];
        let yes = Inputs {
            transfer: Some(ShouldTransfer::Yes),
            plugin_methods: &methods,
            mentioned: ["ARCH".to_string()].into_iter().collect(),
            leading: vec!["(MY.Arch == 1)".into()],
            ..base
        };
        assert_eq!(
            requirements(&yes),
            "(MY.Arch == 1) && (TARGET.OpSys == \"LINUX\") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory) && (TARGET.HasFileTransfer && stringListIMember(\"http\",TARGET.HasFileTransferPluginMethods))"
        );
    }
}
