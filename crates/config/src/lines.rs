//! Physical lines into logical ones, as HTCondor reads both configuration
//! files and submit descriptions (the `submit` crate uses this reader too):
//! leading and trailing blanks go, a line whose first non-blank is `#` is a
//! comment, a final `\` continues the line on the next one (whose leading
//! blanks go), and a blank or comment line ends a continuation (and is
//! consumed). `NAME @=tag` values are read with [`Lines::tagged_block`].

/// Physical lines of one text, read front to back.
pub struct Lines<'t> {
    lines: Vec<&'t str>,
    next: usize,
}

/// One logical line: continuations joined, outer blanks trimmed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Logical {
    /// 1-based number of the line it starts on.
    pub line: u32,
    pub text: String,
}

impl<'t> Lines<'t> {
    pub fn new(text: &'t str) -> Lines<'t> {
        // A final newline ends the last line; it does not start another
        // (errors at the end of a file name its last line, as HTCondor's do).
        let text = text.strip_suffix('\n').unwrap_or(text);
        Lines {
            lines: text
                .split('\n')
                .map(|l| l.strip_suffix('\r').unwrap_or(l))
                .collect(),
            next: 0,
        }
    }

    /// The number of the last physical line read (for errors at the end of
    /// the text).
    pub fn last_line(&self) -> u32 {
        self.next.max(1) as u32
    }

    /// The next physical line as it is, or `None` at the end.
    pub fn next_physical(&mut self) -> Option<&'t str> {
        let line = *self.lines.get(self.next)?;
        self.next += 1;
        Some(line)
    }

    /// The next statement's text, or `None` at the end of the text.
    pub fn next_logical(&mut self) -> Option<Logical> {
        loop {
            let first = self.next_physical()?.trim();
            let number = self.next as u32;
            if first.is_empty() || first.starts_with('#') {
                continue;
            }
            let mut text = String::from(first);
            while let Some(stripped) = text.strip_suffix('\\') {
                let keep = stripped.len();
                text.truncate(keep);
                let Some(next) = self.next_physical() else {
                    break;
                };
                let next = next.trim();
                if next.is_empty() || next.starts_with('#') {
                    break;
                }
                text.push_str(next);
            }
            return Some(Logical { line: number, text });
        }
    }

    /// The body of a `NAME @=tag` value, up to the line `@tag`: lines lose
    /// their leading blanks, blank and comment lines are dropped, the rest
    /// are joined with newlines. `None` when the text ends first.
    pub fn tagged_block(&mut self, tag: &str) -> Option<String> {
        let end = format!("@{tag}");
        let mut kept: Vec<&str> = Vec::new();
        while let Some(raw) = self.next_physical() {
            let line = raw.trim();
            if line == end {
                return Some(kept.join("\n"));
            }
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            kept.push(raw.trim_start());
        }
        None
    }
}
