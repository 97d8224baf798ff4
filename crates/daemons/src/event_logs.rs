//! Writing users' job event logs (`log = ...` in a submit description).
//!
//! A log is the user's file, at a path the user chose: the pool never opens
//! it as root. The file is opened by the job's owner (a helper that drops
//! to the owner, [`starter::user_priv::open_append`]) and the descriptor
//! comes back; the daemon appends through it, which is exactly what the
//! owner could do. Descriptors are kept for the next events (opening costs
//! a process), at most [`MAX_OPEN`] of them, and a log that was deleted or
//! renamed away meanwhile is opened again.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use starter::User;

/// How many logs stay open between events.
const MAX_OPEN: usize = 256;

/// How long opening one log may take (a user's path on a hung network file
/// system must not hold up the pool).
const OPEN_DEADLINE: Duration = Duration::from_secs(5);

/// The pool's open logs (one pool a process).
static LOGS: std::sync::Mutex<EventLogs> = std::sync::Mutex::new(EventLogs {
    open: BTreeMap::new(),
    tick: 0,
});

/// Appends to the pool's logs: see [`EventLogs::write`].
pub fn write(entries: Vec<(String, PathBuf, String)>) -> Vec<String> {
    LOGS.lock()
        .unwrap_or_else(|p| p.into_inner())
        .write(entries)
}

/// The open job event logs, by owner and path.
#[derive(Default)]
pub struct EventLogs {
    open: BTreeMap<(String, PathBuf), (File, u64)>,
    /// A use counter, to close the least recently used log first.
    tick: u64,
}

impl EventLogs {
    /// Appends each entry's text to its owner's log. A log that cannot be
    /// written does not undo anything (the change is on disk); the reason
    /// comes back for the daemon's log.
    pub fn write(&mut self, entries: Vec<(String, PathBuf, String)>) -> Vec<String> {
        let mut by_file: BTreeMap<(String, PathBuf), String> = BTreeMap::new();
        for (owner, path, text) in entries {
            by_file.entry((owner, path)).or_default().push_str(&text);
        }
        let mut problems = Vec::new();
        for (key, text) in by_file {
            if let Err(e) = self.append(&key, &text) {
                problems.push(format!(
                    "cannot write the job event log {} as {}: {e}",
                    key.1.display(),
                    key.0
                ));
            }
        }
        problems
    }

    fn append(&mut self, key: &(String, PathBuf), text: &str) -> Result<(), String> {
        self.tick += 1;
        let stale = self
            .open
            .get(key)
            .is_some_and(|(f, _)| f.metadata().map_or(true, |m| m.nlink() == 0));
        if stale {
            self.open.remove(key);
        }
        if !self.open.contains_key(key) {
            let file = open_as_owner(&key.0, &key.1)?;
            if self.open.len() >= MAX_OPEN {
                if let Some(oldest) = self
                    .open
                    .iter()
                    .min_by_key(|(_, (_, t))| *t)
                    .map(|(k, _)| k.clone())
                {
                    self.open.remove(&oldest);
                }
            }
            self.open.insert(key.clone(), (file, self.tick));
        }
        let (file, used) = self.open.get_mut(key).expect("inserted above");
        *used = self.tick;
        let r = file.write_all(text.as_bytes());
        if r.is_err() {
            self.open.remove(key);
        }
        r.map_err(|e| e.to_string())
    }
}

/// Opens `path` for appending as `owner`: through a helper that becomes the
/// owner when the pool runs as root (and the owner is not root), or in this
/// process when the pool already runs as the owner.
fn open_as_owner(owner: &str, path: &Path) -> Result<File, String> {
    // SAFETY: geteuid cannot fail.
    let me = unsafe { libc::geteuid() };
    let user: Option<User> = if me == 0 {
        let u = starter::lookup_user(owner)?;
        (u.uid != 0).then_some(u)
    } else {
        None
    };
    starter::user_priv::open_append(user.as_ref(), path, OPEN_DEADLINE)
        .map(File::from)
        .map_err(|f| f.message)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn me() -> String {
        // SAFETY: geteuid cannot fail.
        crate::identity::user_name(unsafe { libc::geteuid() }).unwrap()
    }

    #[test]
    fn events_are_appended_and_a_removed_log_is_made_again() {
        let t = tempfile::tempdir().unwrap();
        let log = t.path().join("job.log");
        let mut logs = EventLogs::default();
        let entry = |text: &str| vec![(me(), log.clone(), text.to_string())];
        assert!(logs.write(entry("000 a\n...\n")).is_empty());
        assert!(logs.write(entry("001 b\n...\n")).is_empty());
        assert_eq!(
            std::fs::read_to_string(&log).unwrap(),
            "000 a\n...\n001 b\n...\n"
        );
        std::fs::remove_file(&log).unwrap();
        assert!(logs.write(entry("005 c\n...\n")).is_empty());
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "005 c\n...\n");
        let bad = vec![(me(), t.path().to_path_buf(), "x".to_string())];
        let problems = logs.write(bad);
        assert_eq!(problems.len(), 1, "a directory is not a log");
    }
}
