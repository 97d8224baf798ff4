//! Parse errors that point at the offending text.

use std::fmt;

/// A syntax error: where it is, what was found there, and what was expected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// 1-based line of the offending text.
    pub line: usize,
    /// 1-based column (in characters) of the offending text.
    pub column: usize,
    /// Byte offset of the offending text in the input.
    pub offset: usize,
    /// The offending text (a token, or "end of input").
    pub found: String,
    /// What the parser expected instead.
    pub expected: String,
    /// The whole source line the error is on, for display.
    pub source_line: String,
}

impl ParseError {
    pub(crate) fn at(
        src: &str,
        offset: usize,
        found: &str,
        expected: impl Into<String>,
    ) -> ParseError {
        let offset = offset.min(src.len());
        let before = &src[..floor_char_boundary(src, offset)];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let column = before[line_start..].chars().count() + 1;
        let line_end = src[line_start..]
            .find('\n')
            .map_or(src.len(), |i| line_start + i);
        ParseError {
            line,
            column,
            offset,
            found: found.to_string(),
            expected: expected.into(),
            source_line: src[line_start..line_end].trim_end_matches('\r').to_string(),
        }
    }

    /// The error with a caret under the offending column, for terminals.
    pub fn display_with_source(&self, origin: &str) -> String {
        let mut s = format!(
            "{origin}:{}:{}: {}\n",
            self.line,
            self.column,
            self.message()
        );
        s.push_str(&format!("  | {}\n", self.source_line));
        s.push_str(&format!(
            "  | {}^",
            " ".repeat(self.column.saturating_sub(1))
        ));
        s
    }

    pub fn message(&self) -> String {
        format!("expected {}, found {}", self.expected, self.found)
    }
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "line {}, column {}: {}",
            self.line,
            self.column,
            self.message()
        )
    }
}

impl std::error::Error for ParseError {}
