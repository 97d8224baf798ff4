//! `arguments` and `environment`: their two syntaxes and the quoting of
//! what goes into the job ad.
//!
//! *Old syntax* (no surrounding double quotes): arguments are separated by
//! blanks, a double quote is an error, backslashes are plain text; the ad
//! gets `Args`, the arguments rejoined with single blanks. Environment
//! entries are separated by `;`, each `NAME=value`.
//! *New syntax* (the whole value in double quotes, `""` for a literal
//! one): blanks separate, single quotes group (`''` inside them for a
//! literal quote); the ad gets `Arguments`. An environment in either syntax
//! goes to `Environment` in the new form, sorted by name, a later entry for
//! a name replacing an earlier one.
//!
//! The ad's new-syntax form quotes only what must be: each run of blanks
//! and single quotes is wrapped in single quotes (a quote doubled), and an
//! empty argument is `''`; HTCondor 24.0.24 writes `one two' 'three` and
//! `it''''s`.

use std::collections::BTreeMap;

/// Arguments as they go into the job ad.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum JobArgs {
    /// Old syntax: the `Args` attribute.
    V1(String),
    /// New syntax: the `Arguments` attribute.
    V2(String),
}

/// Reads an `arguments` value in either syntax.
pub(crate) fn parse_arguments(value: &str) -> Result<JobArgs, String> {
    let v = value.trim();
    if let Some(inner) = v.strip_prefix('"') {
        let inner = strip_closing_quote(inner)
            .map_err(|why| format!("{why}\nThe full arguments you specified were: {value}"))?;
        let args = split_v2(&inner)
            .map_err(|why| format!("{why}\nThe full arguments you specified were: {value}"))?;
        Ok(JobArgs::V2(join_v2(&args)))
    } else {
        if let Some(at) = v.find('"') {
            return Err(format!(
                "found an unescaped double quote in old-syntax arguments: `{}` (put the whole value in double quotes to use the new syntax, where `\"\"` is a literal double quote)\nThe full arguments you specified were: {value}",
                &v[at..]
            ));
        }
        Ok(JobArgs::V1(
            v.split_whitespace().collect::<Vec<_>>().join(" "),
        ))
    }
}

/// The text of a new-syntax value after its opening `"`, up to the closing
/// one, with `""` turned into `"`.
fn strip_closing_quote(inner: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '"' {
            if chars.peek() == Some(&'"') {
                chars.next();
                out.push('"');
                continue;
            }
            let rest: String = chars.collect();
            if !rest.trim().is_empty() {
                return Err(format!(
                    "unexpected text `{}` after the closing double quote",
                    rest.trim()
                ));
            }
            return Ok(out);
        }
        out.push(c);
    }
    Err("unterminated double quote: a new-syntax value must end with `\"`".into())
}

/// Splits new-syntax text at blanks, single quotes grouping.
pub fn split_v2(text: &str) -> Result<Vec<String>, String> {
    let mut args = Vec::new();
    let mut current = String::new();
    let mut started = false;
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        if c.is_whitespace() {
            if started {
                args.push(std::mem::take(&mut current));
                started = false;
            }
        } else if c == '\'' {
            started = true;
            loop {
                match chars.next() {
                    Some((_, '\'')) => {
                        if chars.peek().map(|p| p.1) == Some('\'') {
                            chars.next();
                            current.push('\'');
                        } else {
                            break;
                        }
                    }
                    Some((_, q)) => current.push(q),
                    None => {
                        return Err(format!(
                            "unbalanced single quote starting here: {}",
                            &text[at..]
                        ))
                    }
                }
            }
        } else {
            started = true;
            current.push(c);
        }
    }
    if started {
        args.push(current);
    }
    Ok(args)
}

/// One argument in the ad's new-syntax form.
fn quote_v2(arg: &str, out: &mut String) {
    if arg.is_empty() {
        out.push_str("''");
        return;
    }
    let special = |c: char| c.is_whitespace() || c == '\'';
    let mut chars = arg.chars().peekable();
    while let Some(c) = chars.next() {
        if !special(c) {
            out.push(c);
            continue;
        }
        out.push('\'');
        let mut c = c;
        loop {
            if c == '\'' {
                out.push_str("''");
            } else {
                out.push(c);
            }
            match chars.peek() {
                Some(&n) if special(n) => {
                    c = n;
                    chars.next();
                }
                _ => break,
            }
        }
        out.push('\'');
    }
}

fn join_v2(args: &[String]) -> String {
    let mut out = String::new();
    for (i, a) in args.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        quote_v2(a, &mut out);
    }
    out
}

/// An environment, by name.
pub(crate) type Environment = BTreeMap<String, String>;

/// Reads an `environment` value in either syntax into `env` (later entries
/// win).
pub(crate) fn parse_environment(value: &str, env: &mut Environment) -> Result<(), String> {
    let v = value.trim();
    let entries: Vec<String> = if let Some(inner) = v.strip_prefix('"') {
        let inner = strip_closing_quote(inner)
            .map_err(|why| format!("{why}\nThe environment you specified was: '{value}'"))?;
        split_v2(&inner)
            .map_err(|why| format!("{why}\nThe environment you specified was: '{value}'"))?
    } else {
        v.split(';')
            .map(str::trim_start)
            .filter(|e| !e.is_empty())
            .map(str::to_string)
            .collect()
    };
    for entry in entries {
        let Some((name, val)) = entry.split_once('=') else {
            return Err(format!(
                "missing '=' after environment variable '{entry}': each entry is NAME=value\nThe environment you specified was: '{value}'"
            ));
        };
        if name.is_empty() {
            return Err(format!(
                "the entry '{entry}' has no variable name before '='\nThe environment you specified was: '{value}'"
            ));
        }
        env.insert(name.to_string(), val.to_string());
    }
    Ok(())
}

/// The environment in the ad's new-syntax form.
pub(crate) fn environment_v2(env: &Environment) -> String {
    let entries: Vec<String> = env.iter().map(|(k, v)| format!("{k}={v}")).collect();
    join_v2(&entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v2(s: &str) -> String {
        match parse_arguments(s).unwrap() {
            JobArgs::V2(a) => a,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn old_syntax_arguments() {
        assert_eq!(
            parse_arguments("-a one two\\ three 'single'").unwrap(),
            JobArgs::V1("-a one two\\ three 'single'".into())
        );
        assert_eq!(
            parse_arguments("a    b   c\\ d  e\\'f").unwrap(),
            JobArgs::V1("a b c\\ d e\\'f".into())
        );
        assert!(parse_arguments("a \"b\"")
            .unwrap_err()
            .contains("double quote"));
    }

    #[test]
    fn new_syntax_arguments() {
        assert_eq!(
            v2("\"one 'two three' \"\"four\"\" 'it''s'\""),
            "one two' 'three \"four\" it''''s"
        );
        assert_eq!(
            v2("\"a    b   'c d'  e\"\"f  'x''y' '' z\""),
            "a b c' 'd e\"f x''''y '' z"
        );
        assert_eq!(v2("\"a\\b\""), "a\\b");
        assert_eq!(v2("\"\""), "");
        assert!(parse_arguments("\"it's\"")
            .unwrap_err()
            .contains("unbalanced"));
        assert!(parse_arguments("\"open")
            .unwrap_err()
            .contains("unterminated"));
        assert!(parse_arguments("\"a\" b")
            .unwrap_err()
            .contains("after the closing"));
    }

    #[test]
    fn environments() {
        let env = |s: &str| {
            let mut e = Environment::new();
            parse_environment(s, &mut e).map(|_| environment_v2(&e))
        };
        assert_eq!(env("A=1;B=two words;C=").unwrap(), "A=1 B=two' 'words C=");
        assert_eq!(
            env("Z=1;A=2;Z=3;  B = x ; C==y").unwrap(),
            "A=2 B' '=' 'x' ' C==y Z=3"
        );
        assert_eq!(
            env("\"Z=1 A=2 Z=3 'B=x y' C==y D=\"").unwrap(),
            "A=2 B=x' 'y C==y D= Z=3"
        );
        assert_eq!(
            env("\"A=1 B='two words' C=\"\"q\"\"\"").unwrap(),
            "A=1 B=two' 'words C=\"q\""
        );
        assert_eq!(env("A=1 B=2").unwrap(), "A=1' 'B=2");
        assert!(env("A=1;B").unwrap_err().contains("'B'"));
    }
}
