//! The job's access point as the starter reaches it when the job's files
//! are on another host (HTCondor's shadow, for file transfer): the
//! starter fetches the input from it and sends the output to it. The
//! daemon implements [`Shadow`] on its wire protocol; this crate only
//! makes and reads the files, as the job's user, through the user-priv
//! helper ([`crate::user_priv`]), and never opens a network connection.

use std::fmt;
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
