//! Reading one ad from a file, in either syntax.
//!
//! A file whose first non-blank character is `[` holds a new-syntax ad
//! (`[ Name = expr; ... ]`); anything else is old syntax, one `Name = expr`
//! per line, as `condor_q -l` and `condor_status -l` print.
//!
//! Unlike HTCondor's reader, which silently stops at the first line it cannot
//! use, this one refuses such a file and says where and why: a person gave us
//! the file and wants to know that `Memroy 4096` was not read.

use std::path::Path;

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
/// ad; strict (see [`classad::reader::parse_old_ad`]).
pub fn parse_old(text: &str) -> Result<ClassAd, ParseError> {
    classad::reader::parse_old_ad(text)
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
        // As in HTCondor's ad files, the `+` is part of the name there.
        assert_eq!(ad.get("+Department").unwrap().to_string(), "\"physics\"");
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
        assert_eq!((e.line, e.column), (2, 1));
        let e = parse("a = 1\n\nb = 2\n").unwrap_err();
        assert_eq!((e.line, e.column), (3, 1));
    }
}
