//! Reading a job ad's arguments and environment back into lists.
//!
//! The `submit` crate writes these attributes; this is the reading side,
//! as HTCondor's starter reads them: `Arguments` and `Environment` in the new syntax (blanks separate, single
//! quotes group, `''` inside them is a literal quote), `Args` in the old one
//! (blanks separate, nothing quotes), `Env` in the old one (entries separated
//! by `EnvDelim`, `;` unless the ad says otherwise).

/// Splits new-syntax text at blanks, single quotes grouping: the same
/// reading `condor_submit` does (the `submit` crate's).
pub use submit::quoting::split_v2;

/// Old-syntax arguments: blanks separate, nothing quotes.
pub fn split_v1_args(text: &str) -> Vec<String> {
    text.split_whitespace().map(str::to_string).collect()
}

/// New-syntax environment (`Environment`): `NAME=value` entries.
pub fn parse_env_v2(text: &str) -> Result<Vec<(String, String)>, String> {
    split_v2(text)?.into_iter().map(|e| entry(&e)).collect()
}

/// Old-syntax environment (`Env`): entries separated by `delim`.
pub fn parse_env_v1(text: &str, delim: char) -> Result<Vec<(String, String)>, String> {
    text.split(delim)
        .map(str::trim_start)
        .filter(|e| !e.is_empty())
        .map(entry)
        .collect()
}

fn entry(e: &str) -> Result<(String, String), String> {
    match e.split_once('=') {
        Some((name, value)) if !name.is_empty() => Ok((name.to_string(), value.to_string())),
        Some(_) => Err(format!(
            "the environment entry `{e}` has no name before `=`"
        )),
        None => Err(format!(
            "the environment entry `{e}` has no `=`: each entry is NAME=value"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v2_arguments_group_with_single_quotes() {
        assert_eq!(
            split_v2("one two' 'three it''''s ''").unwrap(),
            vec!["one", "two three", "it's", ""]
        );
        assert!(split_v2("'open").is_err());
    }

    #[test]
    fn v1_arguments_split_at_blanks() {
        assert_eq!(split_v1_args("  a  b\tc "), vec!["a", "b", "c"]);
    }

    #[test]
    fn environments_in_both_syntaxes() {
        assert_eq!(
            parse_env_v2("A=1 B='x y' C=").unwrap(),
            vec![
                ("A".into(), "1".into()),
                ("B".into(), "x y".into()),
                ("C".into(), String::new())
            ]
        );
        assert_eq!(
            parse_env_v1("A=1; B=2", ';').unwrap(),
            vec![("A".into(), "1".into()), ("B".into(), "2".into())]
        );
        assert!(parse_env_v2("NOEQ").is_err());
        assert!(parse_env_v1("=1", ';').is_err());
    }
}
