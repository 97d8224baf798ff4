//! The `queue` statement: how many jobs, and the item each one gets.
//!
//! Forms (HTCondor's manual, "Submitting many similar jobs"):
//! `queue [count]`; `queue [count] [vars] in [slice] (items)` or a list on
//! the same line; `queue [count] [vars] from [slice] (lines)`, a file or
//! `command |`; `queue [count] [vars] matching [files|dirs] [slice]
//! patterns`. Each item gives `count` jobs (its *steps*). The behaviours
//! below were read from HTCondor 24.0.24's answers:
//! - the count is a ClassAd expression (`queue 2*2`), after macro expansion;
//! - `from` rows are split into the variables at a comma or a blank (one
//!   separator, then leading blanks), the last variable taking the rest;
//!   `in` and `matching` items go to the first variable only;
//! - a slice `[start:end:step]` is Python's, and `$(ItemIndex)`/`$(Row)`
//!   keep the item's place in the whole list;
//! - in a `from` list blank lines are items, and an empty item leaves the
//!   variables as the item before set them; a list in a file keeps its
//!   `#` lines as items (only an inline list drops them);
//! - `matching` lists the submit directory (or the pattern's directory),
//!   skips hidden names, sorts, and gives directories a trailing `/`.

use crate::files::{absolute, Files};

/// What kind of list follows the variables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ListKind {
    In,
    From,
    Matching { files: bool, dirs: bool },
}

/// A `queue` statement's arguments, read but not yet expanded into items.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct QueueArgs {
    /// The count expression as written (`1` when none).
    pub count: String,
    /// The loop variables, as written (`Item` when a list has none).
    pub vars: Vec<String>,
    /// The list, if any: its kind, the slice, and where the items are.
    pub list: Option<(ListKind, Slice, ItemSource)>,
}

/// Where a list's items come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ItemSource {
    /// Text on the queue line itself, or in a `( ... )` there.
    Inline(String),
    /// The lines of a `(` block that follows the queue line.
    Block(Vec<String>),
    /// `from file`.
    File(String),
    /// `from command |`.
    Command(String),
}

/// A Python-style slice `[start:end:step]`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Slice {
    pub start: Option<i64>,
    pub end: Option<i64>,
    pub step: Option<i64>,
}

impl Slice {
    /// The indexes of a list of `len` items the slice selects.
    pub fn indexes(&self, len: usize) -> Vec<usize> {
        let n = len as i64;
        let step = self.step.unwrap_or(1);
        let clamp = |v: i64, lo: i64, hi: i64| v.max(lo).min(hi);
        let norm = |v: i64| if v < 0 { v + n } else { v };
        let mut out = Vec::new();
        if step > 0 {
            let start = clamp(self.start.map_or(0, norm), 0, n);
            let end = clamp(self.end.map_or(n, norm), 0, n);
            let mut i = start;
            while i < end {
                out.push(i as usize);
                i += step;
            }
        } else if step < 0 {
            let start = clamp(self.start.map_or(n - 1, norm), -1, n - 1);
            let end = clamp(self.end.map_or(-1, norm), -1, n - 1);
            let mut i = start;
            while i > end {
                out.push(i as usize);
                i += step;
            }
        }
        out
    }
}

/// Whether a queue line's arguments end by opening a list whose items
/// follow on the next lines (`queue Item from (`).
pub(crate) fn opens_block(args: &str) -> bool {
    let t = args.trim_end();
    t.ends_with('(') && find_keyword(t).is_some()
}

/// The first `in`, `from` or `matching` word: `(start, end, kind word)`.
fn find_keyword(text: &str) -> Option<(usize, usize, &'static str)> {
    let lower = text.to_ascii_lowercase();
    let bytes = lower.as_bytes();
    let mut best: Option<(usize, usize, &'static str)> = None;
    for kw in ["in", "from", "matching"] {
        let mut from = 0;
        while let Some(off) = lower[from..].find(kw) {
            let at = from + off;
            let end = at + kw.len();
            let before_ok = at == 0 || matches!(bytes[at - 1], b' ' | b'\t' | b',');
            let after_ok = end == bytes.len() || matches!(bytes[end], b' ' | b'\t' | b'(' | b'[');
            if before_ok && after_ok {
                if best.is_none_or(|b| at < b.0) {
                    best = Some((at, end, kw));
                }
                break;
            }
            from = at + 1;
        }
    }
    best
}

fn is_identifier(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
}

/// Reads a queue statement's (expanded) arguments. `block` holds the lines
/// of a `(` list that followed the queue line, if it opened one.
pub(crate) fn parse_queue_args(
    args: &str,
    block: Option<Vec<String>>,
) -> Result<QueueArgs, String> {
    let args = args.trim();
    let Some((kw_start, kw_end, kw)) = find_keyword(args) else {
        if block.is_some() {
            return Err("an item list needs `in`, `from` or `matching` before it".into());
        }
        return Ok(QueueArgs {
            count: if args.is_empty() {
                "1".into()
            } else {
                args.to_string()
            },
            vars: Vec::new(),
            list: None,
        });
    };
    let (count, vars) = count_and_vars(&args[..kw_start]);
    let mut rest = args[kw_end..].trim_start();
    let kind = match kw {
        "in" => ListKind::In,
        "from" => ListKind::From,
        _ => {
            let (word, after) = split_word(rest);
            match word.to_ascii_lowercase().as_str() {
                "files" => {
                    rest = after;
                    ListKind::Matching {
                        files: true,
                        dirs: false,
                    }
                }
                "dirs" => {
                    rest = after;
                    ListKind::Matching {
                        files: false,
                        dirs: true,
                    }
                }
                "any" => {
                    rest = after;
                    ListKind::Matching {
                        files: true,
                        dirs: true,
                    }
                }
                _ => ListKind::Matching {
                    files: true,
                    dirs: true,
                },
            }
        }
    };
    let mut slice = Slice::default();
    if rest.starts_with('[') {
        let close = rest
            .find(']')
            .ok_or_else(|| format!("the slice `{rest}` has no closing `]`"))?;
        slice = parse_slice(&rest[1..close])?;
        rest = rest[close + 1..].trim_start();
    }
    let source = if let Some(lines) = block {
        if rest != "(" {
            return Err(format!("unexpected `{rest}` before the item list"));
        }
        ItemSource::Block(lines)
    } else if let Some(inner) = rest.strip_prefix('(') {
        let Some(close) = inner.rfind(')') else {
            return Err("the item list `(` has no closing `)`".into());
        };
        let after = inner[close + 1..].trim();
        if !after.is_empty() {
            return Err(format!(
                "unexpected `{after}` after the item list's closing `)`"
            ));
        }
        let inner = &inner[..close];
        if kind == ListKind::From {
            // An inline `from ( ... )` on one line is one row per line.
            ItemSource::Block(inner.lines().map(|l| l.trim().to_string()).collect())
        } else {
            ItemSource::Inline(inner.to_string())
        }
    } else if kind == ListKind::From {
        if let Some(cmd) = rest.strip_suffix('|') {
            ItemSource::Command(cmd.trim().to_string())
        } else if rest.is_empty() {
            return Err(
                "`from` must be followed by a file name, `command |` or `(` and a list".into(),
            );
        } else {
            ItemSource::File(rest.to_string())
        }
    } else {
        ItemSource::Inline(rest.to_string())
    };
    Ok(QueueArgs {
        count,
        vars: if vars.is_empty() {
            vec!["Item".into()]
        } else {
            vars
        },
        list: Some((kind, slice, source)),
    })
}

fn split_word(text: &str) -> (&str, &str) {
    let end = text
        .find(|c: char| c.is_whitespace() || c == '[' || c == '(')
        .unwrap_or(text.len());
    (&text[..end], text[end..].trim_start())
}

/// Splits `[count] [var[, var]...]` into the count expression and the
/// variable names: the trailing words that are names are the variables
/// (so `queue N in ...` with a macro `N` must be written `$(N)`, as in
/// HTCondor).
fn count_and_vars(text: &str) -> (String, Vec<String>) {
    let words: Vec<&str> = text
        .split(|c: char| c.is_whitespace() || c == ',')
        .filter(|w| !w.is_empty())
        .collect();
    let mut first_var = words.len();
    while first_var > 0 && is_identifier(words[first_var - 1]) {
        first_var -= 1;
    }
    let count = words[..first_var].join(" ");
    let vars: Vec<String> = words[first_var..].iter().map(|s| s.to_string()).collect();
    (if count.is_empty() { "1".into() } else { count }, vars)
}

fn parse_slice(text: &str) -> Result<Slice, String> {
    let parts: Vec<&str> = text.split(':').collect();
    if parts.len() > 3 {
        return Err(format!(
            "`[{text}]` is not a slice (expected `[start:end:step]`)"
        ));
    }
    let num = |s: &str| -> Result<Option<i64>, String> {
        let s = s.trim();
        if s.is_empty() {
            Ok(None)
        } else {
            s.parse()
                .map(Some)
                .map_err(|_| format!("`{s}` in the slice `[{text}]` is not an integer"))
        }
    };
    let slice = Slice {
        start: num(parts[0])?,
        end: match parts.get(1) {
            Some(p) => num(p)?,
            None if parts.len() == 1 => num(parts[0])?.map(|s| s + 1),
            None => None,
        },
        step: match parts.get(2) {
            Some(p) => num(p)?,
            None => None,
        },
    };
    if slice.step == Some(0) {
        return Err(format!("the slice `[{text}]` has a step of 0"));
    }
    Ok(slice)
}

/// The rows of a list, before the slice: each is the text one job (per
/// step) gets.
pub(crate) fn items(
    kind: ListKind,
    source: &ItemSource,
    cwd: &str,
    files: &dyn Files,
) -> Result<Vec<String>, String> {
    let text_rows = |text: &str| -> Vec<String> {
        let text = text.strip_suffix('\n').unwrap_or(text);
        if text.is_empty() {
            return Vec::new();
        }
        text.split('\n')
            .map(|l| l.strip_suffix('\r').unwrap_or(l).trim().to_string())
            .collect()
    };
    let words = |text: &str| -> Vec<String> {
        text.split(|c: char| c.is_whitespace() || c == ',')
            .filter(|w| !w.is_empty())
            .map(str::to_string)
            .collect()
    };
    let raw: Vec<String> = match source {
        ItemSource::Inline(text) => words(text),
        ItemSource::Block(lines) => match kind {
            ListKind::From => lines.clone(),
            _ => words(&lines.join("\n")),
        },
        ItemSource::File(name) => {
            let path = absolute(cwd, name);
            let text = files
                .read(&path)
                .map_err(|e| format!("cannot read the item file {path}: {e}"))?;
            text_rows(&text)
        }
        ItemSource::Command(cmd) => text_rows(&files.run(cmd)?),
    };
    match kind {
        ListKind::Matching { files: f, dirs: d } => matching(&raw, f, d, cwd, files),
        _ => {
            for item in &raw {
                if item.contains('"') && kind == ListKind::In {
                    return Err(format!(
                        "found an unescaped double quote in the item `{item}`: items are separated by blanks or commas and cannot be quoted"
                    ));
                }
            }
            Ok(raw)
        }
    }
}

/// The names matching the patterns, sorted, directories with a `/`.
fn matching(
    patterns: &[String],
    want_files: bool,
    want_dirs: bool,
    cwd: &str,
    files: &dyn Files,
) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for pattern in patterns {
        let (dir, glob) = match pattern.rfind('/') {
            Some(i) => (&pattern[..=i], &pattern[i + 1..]),
            None => ("", pattern.as_str()),
        };
        let listed = if dir.is_empty() {
            cwd.to_string()
        } else {
            absolute(cwd, dir.trim_end_matches('/'))
        };
        let Ok(entries) = files.list_dir(&listed) else {
            continue;
        };
        let mut names: Vec<String> = entries
            .into_iter()
            .filter(|e| !e.name.starts_with('.') || glob.starts_with('.'))
            .filter(|e| if e.is_dir { want_dirs } else { want_files })
            .filter(|e| glob_match(glob, &e.name))
            .map(|e| {
                if e.is_dir {
                    format!("{dir}{}/", e.name)
                } else {
                    format!("{dir}{}", e.name)
                }
            })
            .collect();
        names.sort();
        for n in names {
            if !out.contains(&n) {
                out.push(n);
            }
        }
    }
    Ok(out)
}

/// Shell-style matching: `*`, `?` and `[...]` (with `!` or `^` to negate).
pub(crate) fn glob_match(pattern: &str, name: &str) -> bool {
    fn go(p: &[char], n: &[char]) -> bool {
        match p.first() {
            None => n.is_empty(),
            Some('*') => (0..=n.len()).any(|i| go(&p[1..], &n[i..])),
            Some('?') => !n.is_empty() && go(&p[1..], &n[1..]),
            Some('[') => {
                let Some(close) = p.iter().skip(1).position(|c| *c == ']').map(|i| i + 1) else {
                    return n.first() == Some(&'[') && go(&p[1..], &n[1..]);
                };
                let Some(c) = n.first() else { return false };
                let mut set = &p[1..close];
                let negate = matches!(set.first(), Some('!') | Some('^'));
                if negate {
                    set = &set[1..];
                }
                let mut hit = false;
                let mut i = 0;
                while i < set.len() {
                    if i + 2 < set.len() && set[i + 1] == '-' {
                        hit |= set[i] <= *c && *c <= set[i + 2];
                        i += 3;
                    } else {
                        hit |= set[i] == *c;
                        i += 1;
                    }
                }
                hit != negate && go(&p[close + 1..], &n[1..])
            }
            Some(ch) => n.first() == Some(ch) && go(&p[1..], &n[1..]),
        }
    }
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    go(&p, &n)
}

/// The separator of the fields of a factory's item rows.
pub(crate) const UNIT_SEPARATOR: char = '\x1f';

/// Splits a `from` row into the variables' values: at a comma or a blank
/// (one separator, then leading blanks), the last variable taking the
/// rest.
pub(crate) fn split_row(row: &str, vars: usize) -> Vec<String> {
    let mut out = Vec::with_capacity(vars);
    // A row of a factory's item data whose fields the submitter split
    // already: they are joined by the ASCII unit separator (as HTCondor's
    // condor_submit sends them to the schedd).
    if row.contains(UNIT_SEPARATOR) {
        out.extend(row.splitn(vars.max(1), UNIT_SEPARATOR).map(str::to_string));
        out.resize(vars, String::new());
        return out;
    }
    let mut rest = row.trim_start();
    for i in 0..vars {
        if i + 1 == vars {
            out.push(rest.trim_end().to_string());
            break;
        }
        let end = rest
            .find(|c: char| c == ',' || c.is_whitespace())
            .unwrap_or(rest.len());
        out.push(rest[..end].to_string());
        rest = &rest[end..];
        let mut chars = rest.chars();
        if chars.next().is_some() {
            rest = chars.as_str();
        }
        rest = rest.trim_start();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::files::MemFiles;

    #[test]
    fn forms() {
        let q = parse_queue_args("", None).unwrap();
        assert_eq!((q.count.as_str(), q.list.is_none()), ("1", true));
        let q = parse_queue_args("2*2", None).unwrap();
        assert_eq!(q.count, "2*2");
        let q = parse_queue_args("2 Item in (a, b)", None).unwrap();
        assert_eq!(q.count, "2");
        assert_eq!(q.vars, vec!["Item"]);
        assert_eq!(
            q.list,
            Some((
                ListKind::In,
                Slice::default(),
                ItemSource::Inline("a, b".into())
            ))
        );
        let q = parse_queue_args("A,B from [1:] (", Some(vec!["x y".into()])).unwrap();
        assert_eq!(q.vars, vec!["A", "B"]);
        assert_eq!(q.list.as_ref().unwrap().1.start, Some(1));
        let q = parse_queue_args("in (a b c)", None).unwrap();
        assert_eq!(q.vars, vec!["Item"]);
        let q = parse_queue_args("Item matching files *.dat", None).unwrap();
        assert_eq!(
            q.list.unwrap().0,
            ListKind::Matching {
                files: true,
                dirs: false
            }
        );
        let q = parse_queue_args("A from seq 1 3 |", None).unwrap();
        assert_eq!(q.list.unwrap().2, ItemSource::Command("seq 1 3".into()));
        let q = parse_queue_args("Item from items.txt", None).unwrap();
        assert_eq!(q.list.unwrap().2, ItemSource::File("items.txt".into()));
        assert!(parse_queue_args("Item in (a) junk", None)
            .unwrap_err()
            .contains("junk"));
        assert!(opens_block("Item from ("));
        assert!(!opens_block("3"));
    }

    #[test]
    fn slices_are_pythons() {
        let s = |t: &str| parse_slice(t).unwrap().indexes(5);
        assert_eq!(s("1:3"), vec![1, 2]);
        assert_eq!(s("::2"), vec![0, 2, 4]);
        assert_eq!(s("-2:"), vec![3, 4]);
        assert_eq!(s("::-1"), vec![4, 3, 2, 1, 0]);
        assert_eq!(s("2"), vec![2]);
        assert_eq!(s("7:"), Vec::<usize>::new());
        assert!(parse_slice("::0").is_err());
        assert!(parse_slice("a:b").is_err());
    }

    #[test]
    fn rows_split_into_variables() {
        assert_eq!(split_row("1, 2, 3, 4", 3), vec!["1", "2", "3, 4"]);
        assert_eq!(split_row("g ,h,i", 2), vec!["g", ",h,i"]);
        assert_eq!(split_row("c;d", 2), vec!["c;d", ""]);
        assert_eq!(split_row("e\tf", 2), vec!["e", "f"]);
        assert_eq!(split_row("7", 3), vec!["7", "", ""]);
        assert_eq!(split_row(" solo ", 1), vec!["solo"]);
    }

    #[test]
    fn globs() {
        assert!(glob_match("*.dat", "one.dat"));
        assert!(!glob_match("*.dat", "one.txt"));
        assert!(glob_match("f?[0-9]", "fx7"));
        assert!(!glob_match("f[!0-9]", "f7"));
    }

    #[test]
    fn items_from_files_and_listings() {
        let files = MemFiles::new()
            .with("/s/items.txt", "one\n\n# c\ntwo  2\n\n")
            .with("/s/b.dat", "1")
            .with("/s/a.dat", "1")
            .with("/s/.h.dat", "1")
            .with("/s/d/x", "1");
        assert_eq!(
            items(
                ListKind::From,
                &ItemSource::File("items.txt".into()),
                "/s",
                &files
            )
            .unwrap(),
            vec!["one", "", "# c", "two  2", ""]
        );
        let m = |f, d, p: &str| {
            items(
                ListKind::Matching { files: f, dirs: d },
                &ItemSource::Inline(p.into()),
                "/s",
                &files,
            )
            .unwrap()
        };
        assert_eq!(m(true, true, "*.dat"), vec!["a.dat", "b.dat"]);
        assert_eq!(m(false, true, "*"), vec!["d/"]);
        assert_eq!(m(true, true, "d/*"), vec!["d/x"]);
        assert!(items(
            ListKind::In,
            &ItemSource::Inline("\"x y\" z".into()),
            "/s",
            &files
        )
        .is_err());
    }
}
