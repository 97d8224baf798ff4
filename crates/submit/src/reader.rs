//! Reading submit description text: physical lines into statements.
//!
//! The line rules are the configuration language's (HTCondor reads both
//! with the same reader): leading and trailing blanks go, a line whose
//! first non-blank is `#` is a comment, a final `\` continues the line on
//! the next one (whose leading blanks go), and a blank or comment line ends
//! a continuation. What differs is the statements: `queue`, `+Attr =
//! value` (short for `MY.Attr = value`), and the item list of `queue ...
//! from (` / `in (`, which runs over physical lines up to a line `)`; there
//! blank lines are items too (HTCondor counts them), comments are not.

use config::macros::{conditional, Conditional};

/// The line reader is the configuration language's.
pub(crate) use config::lines::Lines as Reader;

/// The lines of an item list opened by a `(` at the end of a `queue` line,
/// up to the line `)`: trimmed, comments dropped, blank lines kept. `None`
/// when the text ends first.
pub(crate) fn item_block(reader: &mut Reader<'_>) -> Option<Vec<String>> {
    let mut items = Vec::new();
    while let Some(raw) = reader.next_physical() {
        let line = raw.trim();
        if line == ")" {
            return Some(items);
        }
        if line.starts_with('#') {
            continue;
        }
        items.push(line.to_string());
    }
    None
}

/// One statement of the submit description language.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Statement {
    /// `name = value`; `+Attr` is already `MY.Attr`.
    Assign {
        name: String,
        value: String,
    },
    /// `name @=tag`: the value is the following lines up to `@tag`.
    AssignBlock {
        name: String,
        tag: String,
    },
    /// `queue` and what follows it.
    Queue(String),
    /// `include : file` (or `include command : cmd`).
    Include {
        command: bool,
        target: String,
    },
    Conditional(Conditional),
}

/// Characters a submit command or macro name may hold.
fn is_name_char(c: char) -> bool {
    config::macros::is_macro_name_char(c)
}

/// Reads one statement from a logical line; the error says what was
/// expected.
pub(crate) fn parse_statement(text: &str) -> Result<Statement, String> {
    if let Some(c) = conditional(text) {
        return Ok(Statement::Conditional(c));
    }
    let word_end = text
        .find(|c: char| c.is_whitespace() || c == '=' || c == ':' || c == '(')
        .unwrap_or(text.len());
    let (word, rest) = text.split_at(word_end);
    let after = rest.trim_start();
    if word.eq_ignore_ascii_case("queue") && !after.starts_with('=') {
        return Ok(Statement::Queue(after.to_string()));
    }
    if word.eq_ignore_ascii_case("include") && !after.starts_with('=') {
        let Some((modifiers, target)) = after.split_once(':') else {
            return Err(
                "`include` must be followed by `:` and a file name (`include : file`)".into(),
            );
        };
        let command = match modifiers.trim().to_ascii_lowercase().as_str() {
            "" => false,
            "command" => true,
            other => {
                return Err(format!(
                    "`include {other}` is not a form of include; expected `include : file` or `include command : cmd`"
                ))
            }
        };
        let target = target.trim();
        if target.is_empty() {
            return Err("`include :` names no file".into());
        }
        return Ok(Statement::Include {
            command,
            target: target.to_string(),
        });
    }
    let (name, plus) = match word.strip_prefix('+') {
        Some(attr) => (attr, true),
        None => (word, false),
    };
    if name.is_empty() {
        return Err(if plus {
            "expected an attribute name after `+` (`+Attr = value`)".into()
        } else {
            "expected a command name before `=`".into()
        });
    }
    if !name.chars().all(is_name_char) {
        return Err(format!(
            "`{word}` is not a valid command name: names are letters, digits, `_` and `.`"
        ));
    }
    let name = if plus {
        format!("MY.{name}")
    } else {
        name.to_string()
    };
    if let Some(value) = after.strip_prefix('=') {
        return Ok(Statement::Assign {
            name,
            value: value.trim_start().to_string(),
        });
    }
    if let Some(tag) = after.strip_prefix("@=") {
        let tag = tag.trim();
        if tag.is_empty() || !tag.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!(
                "`{name} @=` must be followed by a tag (letters, digits, `_`) that a later `@tag` line ends"
            ));
        }
        return Ok(Statement::AssignBlock {
            name,
            tag: tag.to_string(),
        });
    }
    Err(format!(
        "expected `=` after `{word}`: a submit description line is `command = value`, `+Attr = value`, `queue ...`, `include : file`, or `if`/`elif`/`else`/`endif`"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn logical(text: &str) -> Vec<(u32, String)> {
        let mut r = Reader::new(text);
        let mut out = Vec::new();
        while let Some(l) = r.next_logical() {
            out.push((l.line, l.text));
        }
        out
    }

    #[test]
    fn lines_join_and_comments_go() {
        assert_eq!(
            logical("# c\n a = 1 \\\n   2\n\nqueue"),
            vec![(2, "a = 1 2".into()), (5, "queue".into())]
        );
        assert_eq!(
            logical("a = x \\\n\nb = y"),
            vec![(1, "a = x ".into()), (3, "b = y".into())]
        );
    }

    #[test]
    fn item_blocks_keep_blank_lines_but_not_comments() {
        let mut r = Reader::new("queue from (\n a\n\n # no\n b \n)\nx = 1");
        r.next_logical();
        assert_eq!(item_block(&mut r).unwrap(), vec!["a", "", "b"]);
        assert_eq!(r.next_logical().unwrap().text, "x = 1");
        let mut r = Reader::new("queue from (\n a");
        r.next_logical();
        assert_eq!(item_block(&mut r), None);
    }

    #[test]
    fn statements() {
        assert_eq!(
            parse_statement("Executable = job.sh").unwrap(),
            Statement::Assign {
                name: "Executable".into(),
                value: "job.sh".into()
            }
        );
        assert_eq!(
            parse_statement("+Project = \"x\"").unwrap(),
            Statement::Assign {
                name: "MY.Project".into(),
                value: "\"x\"".into()
            }
        );
        assert_eq!(
            parse_statement("+Empty =").unwrap(),
            Statement::Assign {
                name: "MY.Empty".into(),
                value: "".into()
            }
        );
        assert_eq!(
            parse_statement("Queue 3").unwrap(),
            Statement::Queue("3".into())
        );
        assert_eq!(
            parse_statement("queue").unwrap(),
            Statement::Queue("".into())
        );
        assert_eq!(
            parse_statement("queue = 4").unwrap(),
            Statement::Assign {
                name: "queue".into(),
                value: "4".into()
            }
        );
        assert!(matches!(
            parse_statement("if defined X").unwrap(),
            Statement::Conditional(Conditional::If(_))
        ));
        assert_eq!(
            parse_statement("include : more.sub").unwrap(),
            Statement::Include {
                command: false,
                target: "more.sub".into()
            }
        );
    }

    #[test]
    fn malformed_lines_say_what_was_expected() {
        let e = parse_statement("this is not valid").unwrap_err();
        assert!(e.contains("expected `=` after `this`"), "{e}");
        let e = parse_statement("my-name = x").unwrap_err();
        assert!(e.contains("not a valid command name"), "{e}");
        let e = parse_statement("+ = x").unwrap_err();
        assert!(e.contains("attribute name after `+`"), "{e}");
    }
}
