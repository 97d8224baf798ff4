//! The execute point's side of a transfer between hosts: the input the
//! job's access point sends is made in the sandbox as the job's user (the
//! user-priv helper creates each directory and file beneath the sandbox
//! and hands back the open files, a batch at a time), and the bytes are
//! written through those descriptors; the output goes the other way
//! (`job.rs`). No path is opened here: only descriptors the job's user
//! opened are read or written.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::procs::User;
use crate::shadow::{FdReader, Fill, InputSink};
use crate::transfer::{Entry, MAX_ENTRIES};
use crate::user_priv::{self, MAX_FDS};

/// Takes an input transfer's files into a sandbox.
pub(crate) struct Sink<'a> {
    user: Option<&'a User>,
    sandbox: PathBuf,
    deadline: Duration,
    entries: Vec<Entry>,
    /// The next entry to make.
    next: usize,
    /// Made and not yet filled, in order.
    open: Fill,
}

impl<'a> Sink<'a> {
    pub(crate) fn new(user: Option<&'a User>, sandbox: &Path, deadline: Duration) -> Sink<'a> {
        Sink {
            user,
            sandbox: sandbox.to_path_buf(),
            deadline,
            entries: Vec::new(),
            next: 0,
            open: Fill::default(),
        }
    }

    /// Makes the next batch of entries (up to [`MAX_FDS`] files).
    fn make_more(&mut self) -> Result<(), String> {
        let mut end = self.next;
        let mut files = 0;
        while end < self.entries.len() && (self.entries[end].dir || files < MAX_FDS) {
            if !self.entries[end].dir {
                files += 1;
            }
            end += 1;
        }
        let batch = &self.entries[self.next..end];
        let fds = user_priv::create_input(self.user, &self.sandbox, batch, self.deadline)
            .map_err(|f| format!("{}: {}", f.path.display(), f.message))?;
        let sizes = batch.iter().filter(|e| !e.dir).map(|e| e.size);
        for (fd, size) in fds.into_iter().zip(sizes) {
            self.open.push(Some(fd), size);
        }
        self.next = end;
        Ok(())
    }

    /// Makes entries until a file waits for bytes (or none is left).
    fn fill_queue(&mut self) -> Result<(), String> {
        // Files of no bytes are done as soon as they are made.
        while !self.open.waiting() && self.next < self.entries.len() {
            self.make_more()?;
        }
        Ok(())
    }
}

impl InputSink for Sink<'_> {
    fn entries(&mut self, entries: Vec<Entry>) -> Result<(), String> {
        if entries.len() > MAX_ENTRIES {
            return Err(format!(
                "more than {MAX_ENTRIES} files and directories to transfer"
            ));
        }
        self.entries = entries;
        self.next = 0;
        self.fill_queue()
    }

    fn data(&mut self, mut bytes: &[u8]) -> Result<(), String> {
        while !bytes.is_empty() {
            self.fill_queue()?;
            bytes = self
                .open
                .take(bytes)
                .map_err(|e| format!("writing the input in the sandbox: {e}"))?;
        }
        self.fill_queue()
    }

    fn finish(&mut self) -> Result<(), String> {
        self.fill_queue()?;
        match self.open.missing() {
            Some(left) => Err(format!("{left} bytes of a file never came")),
            None => Ok(()),
        }
    }
}

/// Sends the job's output to its access point on another host: listed
/// (and uploaded to URLs) as the job's user, opened as the job's user a
/// batch at a time, each batch handed to the shadow. What failed, and the
/// bytes that went.
pub(crate) fn send_output(
    shadow: &crate::shadow::ShadowRef,
    user: Option<&User>,
    req: crate::transfer::OutputRequest,
    deadline: Duration,
) -> crate::transfer::Output {
    let sandbox = req.sandbox.clone();
    let (listed, mut out) = user_priv::list_output(user, req, deadline);
    let failure = |path: &Path, message: String| crate::transfer::Failure {
        path: path.to_path_buf(),
        to: None,
        message,
        errno: None,
        subcode: None,
    };
    let mut at = 0;
    while at < listed.len() {
        let mut end = at;
        let mut files = 0;
        while end < listed.len() && (listed[end].1.is_none() || files < MAX_FDS) {
            if listed[end].1.is_some() {
                files += 1;
            }
            end += 1;
        }
        let batch = &listed[at..end];
        at = end;
        let sources: Vec<PathBuf> = batch
            .iter()
            .filter_map(|(_, s)| s.as_ref().map(PathBuf::from))
            .collect();
        let fds = match user_priv::open_files(user, Some(&sandbox), &sources, deadline) {
            Ok(fds) => fds,
            Err(f) => {
                out.failures.push(f);
                continue;
            }
        };
        let mut fds = fds.into_iter();
        let files: Vec<(Entry, Option<Box<dyn std::io::Read + Send>>)> = batch
            .iter()
            .map(|(e, source)| {
                let reader = source
                    .as_ref()
                    .and_then(|_| fds.next())
                    .map(|fd| Box::new(FdReader(fd)) as Box<dyn std::io::Read + Send>);
                (e.clone(), reader)
            })
            .collect();
        match shadow.0.send_output(files) {
            Ok((bytes, refused)) => {
                out.bytes += bytes;
                for (name, why) in refused {
                    out.failures.push(failure(Path::new(&name), why));
                }
            }
            Err(why) => {
                out.failures.push(failure(
                    &sandbox,
                    format!("the job's access point did not take its output: {why}"),
                ));
                break;
            }
        }
    }
    out
}
