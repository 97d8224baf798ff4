//! Reading one ad from a file, in either syntax.
//!
//! A file whose first non-blank character is `[` holds a new-syntax ad
//! (`[ Name = expr; ... ]`); anything else is old syntax, one `Name = expr`
//! per line, as `condor_q -l` and `condor_status -l` print.
//!
//! Unlike HTCondor's reader, which silently stops at the first line it cannot
//! use, this one refuses such a file and says where and why: a person gave us
//! the file and wants to know that `Memroy 4096` was not read.
//!
//! TODO: the old-syntax half moves to `classad::reader` once that lands; only
//! [`parse_old`] has to change.

use std::path::Path;

use classad::lexer::StringMode;
use classad::parser::Parser;
use classad::{ClassAd, ParseError};

use crate::errors::Error;

/// Reads and parses the ad in `path`.
pub fn read(path: &Path) -> Result<ClassAd, Error> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::read(path, e))?;
    let origin = path.display().to_string();
    parse(&text).map_err(|e| Error::parse(origin, e))
}

/// Parses one ad in whichever syntax `text` is written in.
pub fn parse(text: &str) -> Result<ClassAd, ParseError> {
    if text.trim_start().starts_with('[') {
        classad::parse_ad(text)
    } else {
        parse_old(text)
    }
}

/// Old syntax: `Name = expr` lines, `#` comment lines, blank lines around the
/// ad. A blank line ends the ad; a second ad after it is refused rather than
/// merged into the first.
pub fn parse_old(text: &str) -> Result<ClassAd, ParseError> {
    let mut ad = ClassAd::new();
    let mut ended = false;
    let mut offset = 0;
    for (i, raw) in text.split_inclusive('\n').enumerate() {
        let line_start = offset;
        offset += raw.len();
        let line = raw.trim_end_matches(['\n', '\r']);
        let content = line.trim();
        if content.is_empty() {
            ended |= !ad.is_empty();
            continue;
        }
        if content.starts_with('#') {
            continue;
        }
        let at = |mut column_offset: usize, found: &str, expected: &str| {
            // Never slice inside a character, whatever offset we were given.
            column_offset = column_offset.min(line.len());
            while !line.is_char_boundary(column_offset) {
                column_offset -= 1;
            }
            ParseError {
                line: i + 1,
                column: line[..column_offset].chars().count() + 1,
                offset: line_start + column_offset,
                found: found.to_string(),
                expected: expected.to_string(),
                source_line: line.to_string(),
            }
        };
        let indent = line.len() - line.trim_start().len();
        if ended {
            return Err(at(
                indent,
                "a second ad",
                "one ad per file (a blank line ends an ad)",
            ));
        }
        let Some(eq) = line.find('=') else {
            return Err(at(
                line.len(),
                "end of line",
                "'=' after the attribute name",
            ));
        };
        let name = line[..eq].trim();
        let name = name.strip_prefix('+').unwrap_or(name);
        if name.is_empty() || name.contains(char::is_whitespace) {
            return Err(at(
                indent,
                &format!("'{}'", line[..eq].trim()),
                "one attribute name before '='",
            ));
        }
        let value_start = eq + 1;
        let mut value = &line[value_start..];
        // HTCondor tolerates a `;` at the end of an old-syntax line.
        if let Some(v) = value.trim_end().strip_suffix(';') {
            value = v;
        }
        let expr = parse_old_value(value).map_err(|e| {
            let col = value_start + e.offset.min(value.len());
            at(col, &e.found, &e.expected)
        })?;
        ad.insert(name, expr);
    }
    Ok(ad)
}

/// One old-syntax value: backslashes in strings are literal except `\"`.
fn parse_old_value(text: &str) -> Result<classad::Expr, ParseError> {
    let mut p = Parser::new(text, StringMode::Old)?;
    let error = |p: &Parser, expected: &str| ParseError {
        line: 1,
        column: 0,
        offset: p.token_start(),
        found: p.current().describe(),
        expected: expected.to_string(),
        source_line: String::new(),
    };
    if p.at_eof() {
        return Err(error(&p, "an expression after '='"));
    }
    let e = p.expr()?;
    if !p.at_eof() {
        return Err(error(&p, "an operator or the end of the line"));
    }
    Ok(e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn old_syntax_keeps_backslashes() {
        let ad = parse("Path = \"C:\\dir\"\nQ = \"say \\\"hi\\\"\"\n").unwrap();
        assert_eq!(ad.get("path").unwrap().to_string(), r#""C:\\dir""#);
        assert_eq!(ad.get("Q").unwrap().to_string(), r#""say \"hi\"""#);
    }

    #[test]
    fn new_syntax_is_detected() {
        let ad = parse("\n  [ a = 1; b = a + 1 ]\n").unwrap();
        assert_eq!(ad.len(), 2);
    }

    #[test]
    fn comments_plus_prefix_and_semicolons() {
        let ad = parse("# slot\n+Department = \"physics\";\nCpus = 4\n\n").unwrap();
        assert_eq!(ad.get("Department").unwrap().to_string(), "\"physics\"");
        assert_eq!(ad.get("cpus").unwrap().to_string(), "4");
    }

    #[test]
    fn value_error_points_into_the_line() {
        let e = parse("Cpus = 4\nMemory = 1 + * 2\n").unwrap_err();
        assert_eq!((e.line, e.column), (2, 14));
        assert_eq!(e.source_line, "Memory = 1 + * 2");
    }

    #[test]
    fn errors_after_multibyte_text_count_characters() {
        let e = parse("Name = \"café\" x\n").unwrap_err();
        assert_eq!((e.line, e.column), (1, 15));
        let e = parse("Name = \"café\n").unwrap_err();
        assert_eq!(e.line, 1);
    }

    #[test]
    fn missing_equals_and_second_ad_are_refused() {
        let e = parse("Cpus = 4\nMemory 4096\n").unwrap_err();
        assert_eq!((e.line, e.column), (2, 12));
        let e = parse("a = 1\n\nb = 2\n").unwrap_err();
        assert_eq!((e.line, e.column), (3, 1));
    }
}
