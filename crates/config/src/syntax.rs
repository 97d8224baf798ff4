//! Reading configuration text: physical lines into statements.
//!
//! HTCondor reads a configuration file one statement at a time, and what
//! counts as a statement depends on whether the reader is inside a false
//! `if`: there, only `if`/`elif`/`else`/`endif` are recognised and every
//! other line, however malformed, is passed over (HTCondor does not even
//! notice `@=` blocks there). So this module offers the two steps
//! separately: [`Lines::next_logical`] joins continued lines, and
//! [`parse_statement`] reads one logical line, pulling the body of a
//! `NAME @=tag` value from the same [`Lines`].
//!
//! The rules, each pinned by an HTCondor vector under
//! `oracle/vectors/config/m*`:
//! - leading and trailing blanks of a line are dropped; a line whose first
//!   non-blank is `#` is a comment, but a `#` later in a value is text;
//! - a line ending in `\` (blanks after it allowed) continues on the next
//!   line, whose leading blanks are dropped; a blank or comment line ends the
//!   continuation instead (and is consumed);
//! - `NAME @=tag` starts a value that runs until a line `@tag`; inside it,
//!   lines lose their leading blanks and blank or comment lines are dropped;
//!   the kept lines are joined with newlines.

use crate::error::{ConfigError, ErrorKind};

pub(crate) use crate::lines::{Lines, Logical};

/// The body of a `NAME @=tag` value opened at line `opened`.
fn block(lines: &mut Lines<'_>, tag: &str, opened: u32) -> Result<String, ConfigError> {
    lines.tagged_block(tag).ok_or_else(|| {
        ConfigError::new(
            ErrorKind::Syntax,
            lines.last_line(),
            format!(
                "end of file while looking for `@{tag}`, which closes the multi-line value opened at line {opened}"
            ),
        )
    })
}

/// How an assignment combines with an earlier value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AssignOp {
    /// `NAME = value` (or the obsolete `NAME : value`).
    Set,
    /// `NAME += value`: the earlier value, a blank, then this one.
    Append,
}

/// What an `include` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IncludeKind {
    /// `include : file`: the file must exist.
    File,
    /// `include ifexist : file`: a missing file is skipped.
    IfExist,
    /// `include command : cmd`: the command's output is configuration.
    Command,
}

/// One statement of the configuration language.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Statement {
    Assign {
        /// The name as written; it may still hold macros (`$(X)_NAME`).
        name: String,
        op: AssignOp,
        value: String,
        /// Text between the name and `=` that HTCondor ignores
        /// (`NAME junk = value`), reported as a warning.
        ignored: Option<String>,
        /// The obsolete `NAME : value` form was used.
        colon: bool,
    },
    Include {
        kind: IncludeKind,
        target: String,
    },
    Use {
        category: String,
        templates: String,
    },
    If(String),
    Elif(String),
    Else,
    Endif,
    Error(String),
    Warning(String),
}

/// The conditional keyword a logical line starts with, if any: all that a
/// reader skipping a false branch looks at.
pub(crate) fn conditional(text: &str) -> Option<Statement> {
    let (word, rest) = split_word(text);
    let rest = rest.trim();
    // `if = 3` assigns a parameter named `if`.
    if rest.starts_with('=') {
        return None;
    }
    match word.to_ascii_lowercase().as_str() {
        "if" => Some(Statement::If(rest.to_string())),
        "elif" => Some(Statement::Elif(rest.to_string())),
        "else" => Some(Statement::Else),
        "endif" => Some(Statement::Endif),
        _ => None,
    }
}

fn split_word(text: &str) -> (&str, &str) {
    let end = text
        .find(|c: char| c.is_whitespace() || c == ':' || c == '=' || c == '!')
        .unwrap_or(text.len());
    (&text[..end], &text[end..])
}

/// Characters HTCondor accepts in a parameter name.
pub(crate) fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '/')
}

/// Reads one statement from a logical line (and, for `@=`, the lines after).
pub(crate) fn parse_statement(
    logical: &Logical,
    lines: &mut Lines<'_>,
) -> Result<Statement, ConfigError> {
    let text = logical.text.as_str();
    if let Some(stmt) = conditional(text) {
        return Ok(stmt);
    }
    let (word, rest) = split_word(text);
    let after = rest.trim_start();
    if !after.starts_with('=') && !after.starts_with("+=") && !after.starts_with("@=") {
        match word.to_ascii_lowercase().as_str() {
            "include" => return parse_include(logical, rest),
            "use" => return parse_use(logical, rest),
            "error" | "warning" => {
                let message = after.strip_prefix(':').ok_or_else(|| {
                    syntax(
                        logical,
                        format!("`{word}` must be followed by `:` and a message"),
                    )
                })?;
                let message = message.trim().to_string();
                return Ok(if word.eq_ignore_ascii_case("error") {
                    Statement::Error(message)
                } else {
                    Statement::Warning(message)
                });
            }
            _ => {}
        }
    }
    parse_assignment(logical, lines)
}

fn syntax(logical: &Logical, message: String) -> ConfigError {
    ConfigError::new(ErrorKind::Syntax, logical.line, message).with_text(&logical.text)
}

fn parse_include(logical: &Logical, rest: &str) -> Result<Statement, ConfigError> {
    let Some((modifiers, target)) = rest.split_once(':') else {
        return Err(syntax(
            logical,
            "`include` must be followed by `:` and a file name (`include : file`, `include ifexist : file`, `include command : cmd`)".into(),
        ));
    };
    let mut kind = IncludeKind::File;
    for word in modifiers.split_whitespace() {
        match word.to_ascii_lowercase().as_str() {
            "ifexist" if kind == IncludeKind::File => kind = IncludeKind::IfExist,
            "command" if kind == IncludeKind::File => kind = IncludeKind::Command,
            _ => {
                return Err(syntax(
                    logical,
                    format!("`include {word}` is not a form of include; expected `include :`, `include ifexist :` or `include command :`"),
                ))
            }
        }
    }
    let target = target.trim();
    if target.is_empty() {
        return Err(syntax(logical, "`include :` names no file".to_string()));
    }
    Ok(Statement::Include {
        kind,
        target: target.to_string(),
    })
}

fn parse_use(logical: &Logical, rest: &str) -> Result<Statement, ConfigError> {
    let Some((category, templates)) = rest.split_once(':') else {
        return Err(syntax(
            logical,
            "`use` must be followed by a category, `:` and a template (`use POLICY : Desktop`)"
                .into(),
        ));
    };
    let category = category.trim();
    let templates = templates.trim();
    if category.is_empty() || !category.chars().all(is_name_char) {
        return Err(syntax(
            logical,
            format!("`use {category}`: expected a category such as POLICY, ROLE or FEATURE"),
        ));
    }
    if templates.is_empty() {
        return Err(syntax(
            logical,
            format!("`use {category} :` names no template"),
        ));
    }
    Ok(Statement::Use {
        category: category.to_string(),
        templates: templates.to_string(),
    })
}

fn parse_assignment(logical: &Logical, lines: &mut Lines<'_>) -> Result<Statement, ConfigError> {
    let text = logical.text.as_str();
    // The name runs to the first blank or operator; `$(...)` inside a name
    // is kept whole, because names may be built from macros.
    let mut end = 0;
    let bytes = text.as_bytes();
    while end < bytes.len() {
        let c = bytes[end];
        if c == b'$' && bytes.get(end + 1) == Some(&b'(') {
            match matching_paren(text, end + 1) {
                Some(close) => {
                    end = close + 1;
                    continue;
                }
                None => break,
            }
        }
        if c.is_ascii_whitespace() || c == b'=' || c == b':' {
            break;
        }
        if c == b'@' && bytes.get(end + 1) == Some(&b'=') {
            break;
        }
        end += 1;
    }
    let name = &text[..end];
    let mut rest = &text[end..];
    if name.is_empty() {
        return Err(syntax(
            logical,
            "expected a parameter name before `=`".to_string(),
        ));
    }
    let bad = name
        .chars()
        .filter(|c| !is_name_char(*c) && !matches!(c, '$' | '(' | ')' | ':'))
        .collect::<String>();
    if !bad.is_empty() || (name.contains(['(', ')', ':']) && !name.contains("$(")) {
        return Err(syntax(
            logical,
            format!(
                "`{name}` is not a valid parameter name: names are letters, digits, `_`, `.` and `/`{}",
                if name.ends_with('+') {
                    " (for `+=`, put a blank before `+`)"
                } else {
                    ""
                }
            ),
        ));
    }
    // HTCondor takes the first word as the name and passes over anything
    // else before the operator (`NAME junk = value` sets NAME).
    let mut ignored = None;
    let trimmed = rest.trim_start();
    if !trimmed.is_empty()
        && !trimmed.starts_with('=')
        && !trimmed.starts_with("+=")
        && !trimmed.starts_with("@=")
        && !trimmed.starts_with(':')
    {
        if let Some(op_at) = trimmed.find('=') {
            let junk = trimmed[..op_at].trim_end_matches(['+', '@']).trim();
            ignored = Some(junk.to_string());
            rest = &trimmed[junk.len()..];
        } else {
            return Err(syntax(
                logical,
                format!("expected `=` after `{name}`: this line is neither a definition (`NAME = value`) nor a statement (`include`, `use`, `if`, ...)"),
            ));
        }
    }
    let rest = rest.trim_start();
    let (op, value, colon) = if let Some(v) = rest.strip_prefix("+=") {
        (AssignOp::Append, v.trim_start().to_string(), false)
    } else if let Some(tag) = rest.strip_prefix("@=") {
        let tag = tag.trim();
        if tag.is_empty() || !tag.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(syntax(
                logical,
                format!("`{name} @=` must be followed by a tag (letters, digits, `_`) that a later `@tag` line ends"),
            ));
        }
        let value = block(lines, tag, logical.line)?;
        (AssignOp::Set, value, false)
    } else if let Some(v) = rest.strip_prefix('=') {
        // Only leading blanks go: trailing ones were trimmed from each
        // physical line already, and a blank before a final `\` is kept.
        (AssignOp::Set, v.trim_start().to_string(), false)
    } else if let Some(v) = rest.strip_prefix(':') {
        (AssignOp::Set, v.trim_start().to_string(), true)
    } else {
        return Err(syntax(logical, format!("expected `=` after `{name}`")));
    };
    Ok(Statement::Assign {
        name: name.to_string(),
        op,
        value,
        ignored,
        colon,
    })
}

/// The index of the `)` that closes the `(` at `open`, counting nesting.
pub(crate) fn matching_paren(text: &str, open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in text.bytes().enumerate().skip(open) {
        match c {
            b'(' => depth += 1,
            b')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn logical(text: &str) -> Vec<(u32, String)> {
        let mut lines = Lines::new(text);
        let mut out = Vec::new();
        while let Some(l) = lines.next_logical() {
            out.push((l.line, l.text));
        }
        out
    }

    #[test]
    fn continuation_joins_lines_without_their_leading_blanks() {
        assert_eq!(
            logical("J = a \\\n  b \\\n      c\nK = 1"),
            vec![(1, "J = a b c".into()), (4, "K = 1".into())]
        );
        assert_eq!(logical("S = x || \\ \n  y"), vec![(1, "S = x || y".into())]);
        assert_eq!(logical("N = one\\\ntwo"), vec![(1, "N = onetwo".into())]);
        assert_eq!(logical("L = final \\"), vec![(1, "L = final ".into())]);
    }

    #[test]
    fn blank_or_comment_line_ends_a_continuation() {
        assert_eq!(
            logical("B = x \\\n\n  y"),
            vec![(1, "B = x ".into()), (3, "y".into())]
        );
        assert_eq!(
            logical("C = p \\\n# comment\n  q"),
            vec![(1, "C = p ".into()), (3, "q".into())]
        );
    }

    fn stmt(text: &str) -> Result<Statement, ConfigError> {
        let mut lines = Lines::new(text);
        let l = lines.next_logical().unwrap();
        parse_statement(&l, &mut lines)
    }

    #[test]
    fn statements() {
        assert_eq!(
            stmt("EQ = a = b").unwrap(),
            Statement::Assign {
                name: "EQ".into(),
                op: AssignOp::Set,
                value: "a = b".into(),
                ignored: None,
                colon: false
            }
        );
        assert!(matches!(
            stmt("L += 2").unwrap(),
            Statement::Assign {
                op: AssignOp::Append,
                ..
            }
        ));
        assert!(matches!(
            stmt("include = x").unwrap(),
            Statement::Assign { .. }
        ));
        assert_eq!(
            stmt("include ifexist : a.conf").unwrap(),
            Statement::Include {
                kind: IncludeKind::IfExist,
                target: "a.conf".into()
            }
        );
        assert_eq!(
            stmt("use POLICY:Desktop").unwrap(),
            Statement::Use {
                category: "POLICY".into(),
                templates: "Desktop".into()
            }
        );
        assert_eq!(
            stmt("if ! defined X").unwrap(),
            Statement::If("! defined X".into())
        );
        assert_eq!(stmt("if !$(A)").unwrap(), Statement::If("!$(A)".into()));
        assert_eq!(
            stmt("error : broken").unwrap(),
            Statement::Error("broken".into())
        );
        assert!(matches!(
            stmt("$(FOO)NAME = v").unwrap(),
            Statement::Assign { name, .. } if name == "$(FOO)NAME"
        ));
    }

    #[test]
    fn multi_line_values() {
        let text = "M @=end\nline one\n  line two\n\n# dropped\n@end\nA = 1";
        let mut lines = Lines::new(text);
        let l = lines.next_logical().unwrap();
        assert!(matches!(
            parse_statement(&l, &mut lines).unwrap(),
            Statement::Assign { value, .. } if value == "line one\nline two"
        ));
        assert_eq!(lines.next_logical().unwrap().text, "A = 1");
        let err = stmt("M @=end\nx").unwrap_err();
        assert_eq!(err.line, 2);
        assert!(err.message.contains("`@end`"), "{}", err.message);
    }

    #[test]
    fn malformed_lines_say_what_was_expected() {
        let e = stmt("this line is not valid").unwrap_err();
        assert!(e.message.contains("expected `=`"), "{}", e.message);
        let e = stmt("my-name = x").unwrap_err();
        assert!(
            e.message.contains("not a valid parameter name"),
            "{}",
            e.message
        );
        let e = stmt("L+=1").unwrap_err();
        assert!(e.message.contains("blank before `+`"), "{}", e.message);
        assert!(matches!(
            stmt("name with space = x").unwrap(),
            Statement::Assign { name, ignored: Some(j), .. } if name == "name" && j == "with space"
        ));
    }
}
