//! Errors and warnings of the submit description language, for people:
//! each names the file and line, the command, what is wrong and, where it
//! helps, what was expected.

use std::fmt;

/// Why a submit description gives no jobs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubmitError {
    /// The submit file (or `<-a>` for a command given with `-a`; empty when
    /// the caller gave none).
    pub file: String,
    /// 1-based line of the statement; 0 when the error is not about a line.
    pub line: u32,
    /// 1-based column (in characters) of the offending text in `text`;
    /// 0 when the error is about the whole statement.
    pub column: u32,
    /// The submit command at fault (`request_memory`, `queue`, ...), if one is.
    pub command: Option<String>,
    pub message: String,
    /// The offending line as written.
    pub text: Option<String>,
}

impl SubmitError {
    /// An error with no place in the description (a [`crate::Sink`] that
    /// stops the submission gives one).
    pub fn new(message: impl Into<String>) -> SubmitError {
        SubmitError {
            file: String::new(),
            line: 0,
            column: 0,
            command: None,
            message: message.into(),
            text: None,
        }
    }

    pub(crate) fn at(mut self, line: u32) -> SubmitError {
        if self.line == 0 {
            self.line = line;
        }
        self
    }

    pub(crate) fn column(mut self, column: u32) -> SubmitError {
        if self.column == 0 {
            self.column = column;
        }
        self
    }

    pub(crate) fn command(mut self, command: &str) -> SubmitError {
        if self.command.is_none() {
            self.command = Some(command.to_string());
        }
        self
    }

    pub(crate) fn text(mut self, text: &str) -> SubmitError {
        if self.text.is_none() {
            self.text = Some(text.to_string());
        }
        self
    }

    pub(crate) fn in_file(mut self, file: &str) -> SubmitError {
        if self.file.is_empty() {
            self.file = file.to_string();
        }
        self
    }
}

impl fmt::Display for SubmitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let column = match self.column {
            0 => String::new(),
            c => format!(":{c}"),
        };
        match (self.file.is_empty(), self.line) {
            (true, 0) => {}
            (true, line) => write!(f, "line {line}{column}: ")?,
            (false, 0) => write!(f, "{}: ", self.file)?,
            (false, line) => write!(f, "{}:{line}{column}: ", self.file)?,
        }
        if let Some(c) = &self.command {
            write!(f, "{c}: ")?;
        }
        f.write_str(&self.message)?;
        if let Some(text) = &self.text {
            write!(f, "\n    {text}")?;
            // A caret under the column, as ClassAd errors show it.
            if self.column > 0 {
                write!(f, "\n    {}^", " ".repeat(self.column as usize - 1))?;
            }
        }
        Ok(())
    }
}

impl std::error::Error for SubmitError {}

/// Something condor_submit would tell the user without refusing the
/// description (an unused line that may be a typo, a deprecated form).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Warning {
    pub file: String,
    /// 0 when the warning is not about a line.
    pub line: u32,
    pub message: String,
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.file.is_empty(), self.line) {
            (true, 0) => {}
            (true, line) => write!(f, "line {line}: ")?,
            (false, 0) => write!(f, "{}: ", self.file)?,
            (false, line) => write!(f, "{}:{line}: ", self.file)?,
        }
        write!(f, "warning: {}", self.message)
    }
}
