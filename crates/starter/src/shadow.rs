//! The job's access point as the starter reaches it when the job's files
//! are on another host (HTCondor's shadow, for file transfer): the
//! starter fetches the input from it and sends the output to it. The
//! daemon implements [`Shadow`] on its wire protocol; this crate only
//! makes and reads the files, as the job's user, through the user-priv
//! helper ([`crate::user_priv`]), and never opens a network connection.

use std::collections::VecDeque;
use std::fmt;
use std::os::fd::OwnedFd;
use std::sync::Arc;

use crate::transfer::Entry;

/// Where the job's input comes from and its output goes.
pub trait Shadow: Send + Sync {
    /// Fetches the job's input: `sink` is told the entries (directories
    /// and files, in order), then given the files' bytes, one file after
    /// another in that order. The bytes fetched, or why it failed.
    fn fetch_input(&self, sink: &mut dyn InputSink) -> Result<u64, String>;

    /// Sends a batch of output: each entry (where it goes, relative to
    /// the job's initial directory unless absolute) with, for a file, the
    /// reader of its bytes. The bytes sent, and each file the access
    /// point could not write (its name and why), or why it failed.
    #[allow(clippy::type_complexity)]
    fn send_output(
        &self,
        files: Vec<(Entry, Option<Box<dyn std::io::Read + Send>>)>,
    ) -> Result<(u64, Vec<(String, String)>), String>;
}

/// What takes an input transfer's files on the execute point.
pub trait InputSink {
    /// The entries to come.
    fn entries(&mut self, entries: Vec<Entry>) -> Result<(), String>;
    /// The next bytes, in the order of the entries' files.
    fn data(&mut self, bytes: &[u8]) -> Result<(), String>;
    /// The end: every file's bytes must have come.
    fn finish(&mut self) -> Result<(), String>;
}

/// A shadow the starter settings carry.
#[derive(Clone)]
pub struct ShadowRef(pub Arc<dyn Shadow>);

impl fmt::Debug for ShadowRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Shadow")
    }
}

/// A file's bytes, read through a descriptor the job's user opened.
pub struct FdReader(pub OwnedFd);

impl std::io::Read for FdReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        rustix::io::read(&self.0, buf).map_err(std::io::Error::from)
    }
}

/// The files a transfer's bytes fill, in order: each a descriptor the
/// job's user opened (`None`: refused, its bytes read and dropped) and
/// the bytes it still expects. Both ends of a transfer between hosts take
/// a stream of file contents this way.
#[derive(Default)]
pub struct Fill {
    queue: VecDeque<(Option<OwnedFd>, u64)>,
    /// The bytes written into files.
    pub written: u64,
}

impl Fill {
    /// One more file to fill with `size` bytes.
    pub fn push(&mut self, fd: Option<OwnedFd>, size: u64) {
        self.queue.push_back((fd, size));
    }

    /// Drops the files that are full; whether one still waits for bytes.
    pub fn waiting(&mut self) -> bool {
        while self.queue.front().is_some_and(|(_, left)| *left == 0) {
            self.queue.pop_front();
        }
        !self.queue.is_empty()
    }

    /// Writes the start of `bytes` into the first waiting file (as much
    /// as it takes); what is left of them. Call with a file waiting.
    pub fn take<'b>(&mut self, bytes: &'b [u8]) -> Result<&'b [u8], String> {
        let Some((fd, left)) = self.queue.front_mut() else {
            return Err("more bytes came than the files listed hold".into());
        };
        let n = (*left).min(bytes.len() as u64) as usize;
        if let Some(fd) = fd {
            let mut chunk = &bytes[..n];
            while !chunk.is_empty() {
                let w = rustix::io::write(&*fd, chunk).map_err(|e| e.to_string())?;
                chunk = &chunk[w..];
            }
            self.written += n as u64;
        }
        *left -= n as u64;
        Ok(&bytes[n..])
    }

    /// The bytes the first waiting file still expects, if one waits.
    pub fn missing(&mut self) -> Option<u64> {
        self.waiting()
            .then(|| self.queue.front().map_or(0, |(_, left)| *left))
    }
}
