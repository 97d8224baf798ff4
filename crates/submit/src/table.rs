//! The submit macro table: what `$(NAME)` means while a job is built.
//!
//! Three layers, looked up in this order (as in HTCondor's `SubmitHash`):
//! the queue statement's loop variables (`$(Item)`, or the names a `queue
//! A,B from ...` gives), the commands and macros of the submit file, and
//! the built-in defaults: the live ones (`$(Cluster)`/`$(ClusterId)`,
//! `$(Process)`/`$(ProcId)`, `$(Step)`, `$(Row)`, `$(ItemIndex)`,
//! `$(Node)`), the machine's (`$(ARCH)`, `$(OPSYS)`, `$(OPSYSANDVER)`,
//! `$(SPOOL)` from the configuration, `$(IsLinux)`, `$(IsWindows)`) and
//! `$(SUBMIT_FILE)`. Other configuration macros are not visible in a
//! submit file (HTCondor 24.0.24 expands `$(FULL_HOSTNAME)` and
//! `$(LOCAL_DIR)` to nothing there), so the table never falls back to the
//! configuration.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashMap, HashSet};

use config::macros::{expand_macros, resolve_self_references, Macros};

use crate::error::SubmitError;

/// One definition made by the submit file (or a `-a` command).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Definition {
    /// The name as written (`MY.Project` for `+Project`).
    pub name: String,
    pub value: String,
    /// Where it was made: file and line.
    pub file: String,
    pub line: u32,
    /// The logical line, for warnings and errors.
    pub text: String,
}

#[derive(Debug, Default)]
pub(crate) struct Table {
    /// Submit-file definitions by uppercase name (hashed: every job looks
    /// up every command).
    defs: HashMap<String, Definition>,
    /// Their uppercase names, sorted (the order they are listed in).
    order: Vec<String>,
    /// The queue statement's loop variables, by uppercase name.
    vars: HashMap<String, String>,
    /// Built-in defaults, by uppercase name.
    defaults: HashMap<String, String>,
    env: BTreeMap<String, String>,
    seed: u64,
    /// Uppercase names looked up while expanding (for unused-line warnings).
    used: RefCell<HashSet<String>>,
    /// Whether something that differs from job to job was read since
    /// [`Table::forget_per_job_reads`].
    per_job: Cell<bool>,
}

/// The built-in macros whose value changes from job to job of one queue
/// statement (uppercase).
const PER_JOB: [&str; 6] = ["PROCESS", "PROCID", "STEP", "ROW", "ITEMINDEX", "NODE"];

impl Macros for Table {
    fn lookup(&self, name: &str) -> Option<String> {
        let key = name.to_ascii_uppercase();
        if !self.used.borrow().contains(&key) {
            self.used.borrow_mut().insert(key.clone());
        }
        if self.vars.contains_key(&key) || PER_JOB.contains(&key.as_str()) {
            self.per_job.set(true);
        }
        self.vars
            .get(&key)
            .or_else(|| self.defs.get(&key).map(|d| &d.value))
            .or_else(|| self.defaults.get(&key))
            .cloned()
    }

    fn env(&self, name: &str) -> Option<String> {
        self.env.get(name).cloned()
    }

    fn random(&self, salt: &str) -> u64 {
        self.per_job.set(true);
        // splitmix64 over the seed, an FNV-1a hash of the salt and the
        // job's ProcId: the same description and seed give the same
        // jobs, and each job of a queue statement draws its own (HTCondor
        // expands the macro anew for every job).
        let h = salt.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
        });
        // The built-in macro's key (a submit macro, not a configuration
        // parameter).
        const PROCESS: &str = "PROCESS";
        let proc_id = self
            .defaults
            .get(PROCESS)
            .and_then(|p| p.parse::<u64>().ok())
            .unwrap_or(0);
        let mut z = (self.seed ^ h ^ proc_id.wrapping_mul(0xd6e8_feb8_6659_fd93))
            .wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

impl Table {
    pub fn new(env: BTreeMap<String, String>, seed: u64) -> Table {
        Table {
            env,
            seed,
            ..Table::default()
        }
    }

    /// Sets a built-in default (`ARCH`, `Cluster`, ...).
    pub fn set_default(&mut self, name: &str, value: impl Into<String>) {
        self.defaults
            .insert(name.to_ascii_uppercase(), value.into());
    }

    /// Sets a loop variable of the queue statement being run.
    pub fn set_var(&mut self, name: &str, value: &str) {
        self.vars
            .insert(name.to_ascii_uppercase(), value.to_string());
    }

    /// Forgets the loop variables (a new queue statement starts).
    pub fn clear_vars(&mut self) {
        self.vars.clear();
    }

    /// Records a definition; a reference to itself takes the value in force
    /// before it (`X = $(X) more`).
    pub fn define(&mut self, mut def: Definition) {
        let key = def.name.to_ascii_uppercase();
        // Not `lookup`: a definition does not use the name it defines.
        let previous = self
            .vars
            .get(&key)
            .or_else(|| self.defs.get(&key).map(|d| &d.value))
            .or_else(|| self.defaults.get(&key))
            .cloned();
        def.value = resolve_self_references(&def.name, &def.value, previous.as_deref());
        // A name keeps its first spelling, as ClassAd attributes do.
        if let Some(old) = self.defs.get(&key) {
            def.name = old.name.clone();
        } else if let Err(at) = self.order.binary_search(&key) {
            self.order.insert(at, key.clone());
        }
        self.defs.insert(key, def);
    }

    /// Every submit-file definition, in the order of their uppercase
    /// names.
    pub fn definitions(&self) -> impl Iterator<Item = &Definition> {
        self.order.iter().filter_map(|k| self.defs.get(k))
    }

    /// Expands `text`; a loop is an error.
    pub fn expand(&self, text: &str) -> Result<String, SubmitError> {
        expand_macros(text, self).map_err(|e| SubmitError::new(e.to_string()))
    }

    /// The first of `names` the submit file defines, with its value
    /// expanded and trimmed; `None` when none is defined or the value is
    /// empty. Errors name the line of the definition and the command.
    pub fn get(&self, names: &[&str]) -> Result<Option<Found>, SubmitError> {
        for name in names {
            let key = name.to_ascii_uppercase();
            // Every job asks for the same names: most are known already.
            if !self.used.borrow().contains(&key) {
                self.used.borrow_mut().insert(key.clone());
            }
            let Some(def) = self.defs.get(&key) else {
                continue;
            };
            let value = self.expand(&def.value).map_err(|e| self.blame(def, e))?;
            let value = value.trim().to_string();
            if value.is_empty() {
                return Ok(None);
            }
            return Ok(Some(Found {
                command: def.name.clone(),
                value,
                file: def.file.clone(),
                line: def.line,
                text: def.text.clone(),
            }));
        }
        Ok(None)
    }

    fn blame(&self, def: &Definition, e: SubmitError) -> SubmitError {
        e.command(&def.name)
            .at(def.line)
            .text(&def.text)
            .in_file(&def.file)
    }

    /// Starts watching for reads of what changes from job to job.
    pub fn forget_per_job_reads(&self) {
        self.per_job.set(false);
    }

    /// Whether what changes from job to job (the per-job built-ins, a
    /// loop variable, a random value) was read since
    /// [`Table::forget_per_job_reads`].
    pub fn read_per_job(&self) -> bool {
        self.per_job.get()
    }

    /// Whether the name was looked up while jobs were built.
    pub fn was_used(&self, name: &str) -> bool {
        self.used.borrow().contains(&name.to_ascii_uppercase())
    }
}

/// A command's expanded value and where it was written.
#[derive(Clone, Debug)]
pub(crate) struct Found {
    pub command: String,
    pub value: String,
    pub file: String,
    pub line: u32,
    pub text: String,
}

impl Found {
    /// An error about the expression this command gave, at the column of
    /// the parse error in the line as written. The column is known when
    /// the value appears as written there (no macro changed it).
    pub fn expr_error(&self, e: &classad::ParseError, message: impl Into<String>) -> SubmitError {
        let err = self.error(message);
        // The value follows the command's `=` (or `:` of a `+attr:`).
        let after = self.text.find(['=', ':']).map_or(0, |i| i + 1);
        let Some(at) = self.text[after..].find(&self.value).map(|i| after + i) else {
            return err;
        };
        if e.line != 1 {
            return err;
        }
        let column = self.text[..at].chars().count() + e.column;
        err.column(u32::try_from(column).unwrap_or(0))
    }

    /// An error about this command, at its line.
    pub fn error(&self, message: impl Into<String>) -> SubmitError {
        SubmitError::new(message)
            .command(&self.command)
            .at(self.line)
            .text(&self.text)
            .in_file(&self.file)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn def(name: &str, value: &str) -> Definition {
        Definition {
            name: name.into(),
            value: value.into(),
            file: "job.sub".into(),
            line: 1,
            text: format!("{name} = {value}"),
        }
    }

    #[test]
    fn layers_and_self_references() {
        let mut t = Table::new(BTreeMap::new(), 0);
        t.set_default("Process", "0");
        t.set_default("ARCH", "X86_64");
        t.define(def("X", "a"));
        t.define(def("x", "$(X) b"));
        t.define(def("Process", "override"));
        assert_eq!(t.get(&["X"]).unwrap().unwrap().value, "a b");
        assert_eq!(t.get(&["X"]).unwrap().unwrap().command, "X");
        assert_eq!(t.expand("$(ARCH) $(Process)").unwrap(), "X86_64 override");
        t.set_var("Item", "it");
        t.define(def("Item", "file"));
        assert_eq!(t.expand("$(item)").unwrap(), "it");
        t.clear_vars();
        assert_eq!(t.expand("$(item)").unwrap(), "file");
        assert!(t.was_used("ITEM"));
        assert!(t.get(&["NOPE"]).unwrap().is_none());
    }

    #[test]
    fn loops_blame_the_definition() {
        let mut t = Table::new(BTreeMap::new(), 0);
        t.define(def("A", "$(B)"));
        t.define(Definition {
            line: 7,
            ..def("B", "$(A)")
        });
        let e = t.get(&["B"]).unwrap_err();
        assert_eq!((e.line, e.command.as_deref()), (7, Some("B")));
        assert!(e.message.contains("refer to each other"), "{e}");
    }
}
