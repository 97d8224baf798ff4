//! Errors and warnings of the configuration language, for people: each
//! names the file and line, shows the offending text and says what was
//! expected.

use std::fmt;

/// What kind of mistake a [`ConfigError`] reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// A line that is not a statement, an unterminated `@=` value.
    Syntax,
    /// `if`/`elif`/`else`/`endif` out of balance, or a condition that is
    /// not one of the simple forms.
    Conditional,
    /// An include (or local configuration file) that cannot be read, or
    /// includes nested too deeply.
    Include,
    /// `use` naming a template that does not exist or that we do not
    /// implement, or a template refusing its arguments.
    Template,
    /// An `error :` statement was reached.
    ErrorStatement,
    /// No configuration file was found.
    NoConfig,
}

/// Why a configuration could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    pub kind: ErrorKind,
    /// The file the error is in (empty until the loader fills it in).
    pub file: String,
    /// 1-based line number (0 when the error is not about a line).
    pub line: u32,
    pub message: String,
    /// The offending line, when there is one.
    pub text: Option<String>,
    /// Where the file was included from, innermost first: `(file, line)`.
    pub included_from: Vec<(String, u32)>,
}

impl ConfigError {
    pub(crate) fn new(kind: ErrorKind, line: u32, message: impl Into<String>) -> ConfigError {
        ConfigError {
            kind,
            file: String::new(),
            line,
            message: message.into(),
            text: None,
            included_from: Vec::new(),
        }
    }

    pub(crate) fn with_text(mut self, text: &str) -> ConfigError {
        self.text = Some(text.to_string());
        self
    }

    pub(crate) fn in_file(mut self, file: &str) -> ConfigError {
        if self.file.is_empty() {
            self.file = file.to_string();
        }
        self
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.file.is_empty(), self.line) {
            (true, _) => {}
            (false, 0) => write!(f, "{}: ", self.file)?,
            (false, line) => write!(f, "{}:{}: ", self.file, line)?,
        }
        f.write_str(&self.message)?;
        if let Some(text) = &self.text {
            write!(f, "\n    {text}")?;
        }
        for (file, line) in &self.included_from {
            write!(f, "\n  (included from {file}:{line})")?;
        }
        Ok(())
    }
}

impl std::error::Error for ConfigError {}

/// Something worth telling the admin that does not stop the configuration
/// from being used (a `warning :` statement, an obsolete form).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Warning {
    pub file: String,
    pub line: u32,
    pub message: String,
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: warning: {}", self.file, self.line, self.message)
    }
}
