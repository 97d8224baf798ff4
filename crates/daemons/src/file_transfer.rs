//! A job's files between its execute point and its access point on
//! another host (HTCondor's file transfer between starter and shadow), on
//! ferrocondor's own command [`cedar::commands::FC_FILE_TRANSFER`] at the
//! DAEMON level, so with HTCondor's security: authenticated, encrypted.
//!
//! The execute point's starter asks; the access point answers only for a
//! job that runs on the claim the request names (its claim core says so:
//! the claim id is the capability, as HTCondor's transfer key is), and
//! decides itself, from its own copy of the job's ad, what the input is
//! and where output may go. On both hosts the files are opened by the
//! job's user (`starter::user_priv`); this module moves bytes between
//! those descriptors and the connection, and opens no path.
//!
//! The conversation, each line one CEDAR message:
//!
//! ```text
//! starter:  "input"|"output", claim id, cluster, proc
//! input:    access point: 1, n, n × (name, dir, mode, size) | 0, why
//!           access point: (1, length, bytes)* then 2, total | 3, why
//! output:   starter: n, n × (name, dir, mode, size)
//!           starter: (1, length, bytes)* then 2 | 3, why
//!           access point: refused count, (name, why)*, bytes written
//! ```
//!
//! File bytes travel in the entries' order, each file's `size` of them.

use std::io::Read;
use std::path::PathBuf;
use std::time::Duration;

use cedar::client::ClientOptions;
use cedar::commands as cmd;
use cedar::{Decoder, Encoder, Sinful, Sock, SockError};
use classad::ClassAd;
use schedd::JobId;
use starter::shadow::{FdReader, Fill, InputSink, Shadow};
use starter::transfer::{Entry, MAX_ENTRIES};
use starter::user_priv::{self, MAX_FDS};

/// The bytes of file content one message carries.
const CHUNK: usize = 256 << 10;

/// The largest message of a transfer (a list of up to [`MAX_ENTRIES`]).
const MAX_MESSAGE: usize = 64 << 20;

/// How long one step of the job's user's file work may take.
const FILE_WORK: Duration = Duration::from_secs(600);

const DATA: i64 = 1;
const END: i64 = 2;
const FAILED: i64 = 3;

fn put_entries(e: &mut Encoder, entries: &[Entry]) {
    e.put_int(entries.len() as i64);
    for x in entries {
        e.put_str(&x.name)
            .put_bool(x.dir)
            .put_int(i64::from(x.mode))
            .put_u64(x.size);
    }
}

fn get_entries(d: &mut Decoder<'_>) -> Result<Vec<Entry>, String> {
    let n = d.get_int().map_err(|e| e.to_string())?;
    if !(0..=MAX_ENTRIES as i64).contains(&n) {
        return Err(format!("a list of {n} files"));
    }
    let mut out = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let name = d.get_str().map_err(|e| e.to_string())?;
        let dir = d.get_bool().map_err(|e| e.to_string())?;
        let mode = d.get_int().map_err(|e| e.to_string())?;
        let size = d.get_u64().map_err(|e| e.to_string())?;
        out.push(Entry {
            name,
            dir,
            mode: (mode & 0o777) as u32,
            size,
        });
    }
    Ok(out)
}

fn io_err(e: SockError) -> String {
    e.to_string()
}

/// Sends `size` bytes of `reader` as data messages; the bytes sent.
fn send_file(sock: &mut Sock, reader: &mut dyn Read, size: u64, name: &str) -> Result<u64, String> {
    let mut left = size;
    let mut buf = vec![0u8; CHUNK];
    while left > 0 {
        let want = (left as usize).min(CHUNK);
        let got = reader
            .read(&mut buf[..want])
            .map_err(|e| format!("reading {name}: {e}"))?;
        if got == 0 {
            return Err(format!(
                "{name} changed while it was sent ({left} bytes short)"
            ));
        }
        let mut e = sock.encoder();
        e.put_int(DATA).put_int(got as i64).put_bytes(&buf[..got]);
        sock.send(&e).map_err(io_err)?;
        left -= got as u64;
    }
    Ok(size)
}

/// Reads data messages until the end: each chunk to `take`.
fn receive_data(
    sock: &mut Sock,
    mut take: impl FnMut(&[u8]) -> Result<(), String>,
) -> Result<(), String> {
    loop {
        let msg = sock.recv().map_err(io_err)?;
        let mut d = sock.decoder(&msg);
        match d.get_int().map_err(|e| e.to_string())? {
            DATA => {
                let n = d.get_int().map_err(|e| e.to_string())?;
                if !(0..=CHUNK as i64).contains(&n) {
                    return Err(format!("a chunk of {n} bytes"));
                }
                let bytes = d.get_bytes(n as usize).map_err(|e| e.to_string())?;
                take(bytes)?;
            }
            END => return Ok(()),
            FAILED => return Err(d.get_str().unwrap_or_else(|_| "it failed".into())),
            other => return Err(format!("an unknown message {other}")),
        }
    }
}

// ---- the execute point's side ----------------------------------------------

/// The job's access point on another host, as the starter reaches it.
pub struct CedarShadow {
    pub address: Sinful,
    pub client: ClientOptions,
    /// The claim's session (brokered through the central manager), in
    /// which the access point knows this starter; else the execute
    /// point's own credentials.
    pub session: Option<cedar::capability::Capability>,
    pub claim_id: String,
    pub job: JobId,
}

impl CedarShadow {
    fn open(&self, direction: &str) -> Result<Sock, String> {
        let made = match &self.session {
            Some(cap) => cedar::client::resume_session(
                &self.address,
                cmd::FC_FILE_TRANSFER,
                cap,
                self.client.timeout,
            ),
            None => {
                cedar::client::connect(&self.address, cmd::FC_FILE_TRANSFER, &self.client, None)
            }
        };
        let (mut sock, _) = made.map_err(|e| format!("{}: {e}", self.address))?;
        sock.set_max_message(MAX_MESSAGE);
        let mut e = sock.encoder();
        e.put_str(direction)
            .put_str(&self.claim_id)
            .put_int(self.job.cluster)
            .put_int(self.job.proc);
        sock.send(&e).map_err(io_err)?;
        Ok(sock)
    }
}

impl Shadow for CedarShadow {
    fn fetch_input(&self, sink: &mut dyn InputSink) -> Result<u64, String> {
        let mut sock = self.open("input")?;
        let msg = sock.recv().map_err(io_err)?;
        let mut d = sock.decoder(&msg);
        if d.get_int().map_err(|e| e.to_string())? != 1 {
            return Err(d.get_str().unwrap_or_else(|_| "refused".into()));
        }
        let entries = get_entries(&mut d)?;
        let total: u64 = entries.iter().filter(|e| !e.dir).map(|e| e.size).sum();
        sink.entries(entries)?;
        receive_data(&mut sock, |b| sink.data(b))?;
        sink.finish()?;
        Ok(total)
    }

    fn send_output(
        &self,
        files: Vec<(Entry, Option<Box<dyn Read + Send>>)>,
    ) -> Result<(u64, Vec<(String, String)>), String> {
        // Only what can be sent is listed: a file without its reader
        // would leave the access point waiting for bytes that never come.
        let files: Vec<(Entry, Option<Box<dyn Read + Send>>)> = files
            .into_iter()
            .filter(|(e, r)| e.dir || r.is_some())
            .collect();
        let mut sock = self.open("output")?;
        let entries: Vec<Entry> = files.iter().map(|(e, _)| e.clone()).collect();
        let mut e = sock.encoder();
        put_entries(&mut e, &entries);
        sock.send(&e).map_err(io_err)?;
        for (entry, reader) in files {
            if let (false, Some(mut r)) = (entry.dir, reader) {
                if let Err(why) = send_file(&mut sock, &mut r, entry.size, &entry.name) {
                    let mut e = sock.encoder();
                    e.put_int(FAILED).put_str(&why);
                    let _ = sock.send(&e);
                    return Err(why);
                }
            }
        }
        let mut e = sock.encoder();
        e.put_int(END);
        sock.send(&e).map_err(io_err)?;
        let msg = sock.recv().map_err(io_err)?;
        let mut d = sock.decoder(&msg);
        let n = d.get_int().map_err(|e| e.to_string())?;
        if !(0..=MAX_ENTRIES as i64).contains(&n) {
            return Err(format!("{n} refusals"));
        }
        let mut refused = Vec::new();
        for _ in 0..n {
            let name = d.get_str().map_err(|e| e.to_string())?;
            let why = d.get_str().map_err(|e| e.to_string())?;
            refused.push((name, why));
        }
        let bytes = d.get_u64().map_err(|e| e.to_string())?;
        Ok((bytes, refused))
    }
}

// ---- the access point's side -----------------------------------------------

/// What the access point knows of the job a request names: its ad, if it
/// runs on the claim the request names.
pub type Lookup<'a> = &'a dyn Fn(&str, JobId) -> Option<ClassAd>;

/// Serves one transfer (the command's first message is `first`).
pub fn serve(sock: &mut Sock, first: &[u8], lookup: Lookup<'_>) -> Result<(), SockError> {
    sock.set_max_message(MAX_MESSAGE);
    let mut d = sock.decoder(first);
    let direction = d.get_str()?;
    let claim_id = d.get_str()?;
    let job = JobId::new(d.get_int()?, d.get_int()?);
    let refuse = |sock: &mut Sock, why: &str| {
        let mut e = sock.encoder();
        e.put_int(0).put_str(why);
        sock.send(&e)
    };
    let Some(ad) = lookup(&claim_id, job) else {
        return refuse(sock, &format!("job {job} does not run on that claim here"));
    };
    let user = match job_user(&ad) {
        Ok(u) => u,
        Err(why) => return refuse(sock, &why),
    };
    match direction.as_str() {
        "input" => serve_input(sock, &ad, user.as_ref()),
        "output" => serve_output(sock, &ad, user.as_ref()),
        other => refuse(sock, &format!("no transfer called {other:?}")),
    }
}

/// Whom the job's files are opened as: its owner, where this daemon is
/// root (else this daemon's own user, the one every job runs as).
fn job_user(ad: &ClassAd) -> Result<Option<starter::User>, String> {
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return Ok(None);
    }
    let owner = crate::schedd_service::literal_str(ad, "Owner").ok_or("the job has no Owner")?;
    starter::lookup_user(&owner)
        .map(Some)
        .map_err(|e| format!("the job's owner {owner}: {e}"))
}

fn serve_input(
    sock: &mut Sock,
    ad: &ClassAd,
    user: Option<&starter::User>,
) -> Result<(), SockError> {
    let fail = |sock: &mut Sock, why: String| {
        let mut e = sock.encoder();
        e.put_int(0).put_str(&why);
        sock.send(&e)
    };
    let plan = match starter::transfer_inputs(ad) {
        Ok(p) => p,
        Err(e) => return fail(sock, e.to_string()),
    };
    let listed = match user_priv::list_input(
        user,
        &plan.iwd,
        plan.executable.as_deref(),
        &plan.inputs,
        FILE_WORK,
    ) {
        Ok(l) => l,
        Err(f) => return fail(sock, format!("{}: {}", f.path.display(), f.message)),
    };
    let mut e = sock.encoder();
    e.put_int(1);
    let entries: Vec<Entry> = listed.iter().map(|(e, _)| e.clone()).collect();
    put_entries(&mut e, &entries);
    sock.send(&e)?;
    let files: Vec<(&Entry, &PathBuf)> = listed
        .iter()
        .filter_map(|(e, p)| p.as_ref().map(|p| (e, p)))
        .collect();
    let mut total = 0;
    for batch in files.chunks(MAX_FDS) {
        let paths: Vec<PathBuf> = batch.iter().map(|(_, p)| (*p).clone()).collect();
        let sent = user_priv::open_files(user, None, &paths, FILE_WORK)
            .map_err(|f| format!("{}: {}", f.path.display(), f.message))
            .and_then(|fds| {
                let mut n = 0;
                for ((entry, _), fd) in batch.iter().zip(fds) {
                    n += send_file(sock, &mut FdReader(fd), entry.size, &entry.name)?;
                }
                Ok(n)
            });
        match sent {
            Ok(n) => total += n,
            Err(why) => {
                let mut e = sock.encoder();
                e.put_int(FAILED).put_str(&why);
                return sock.send(&e);
            }
        }
    }
    let mut e = sock.encoder();
    e.put_int(END).put_u64(total);
    sock.send(&e)
}

/// Where the job may have its output written: inside its initial
/// directory, or exactly where it named (its `output` and `error`, its
/// remaps' targets, and what is under a target directory).
fn output_allowed(ad: &ClassAd, name: &str) -> bool {
    if starter::transfer::check_output_name(name).is_ok() || name.is_empty() {
        return true;
    }
    let mut named: Vec<String> = ["Out", "Err"]
        .iter()
        .filter_map(|a| crate::schedd_service::literal_str(ad, a))
        .collect();
    if let Some(r) = crate::schedd_service::literal_str(ad, "TransferOutputRemaps") {
        named.extend(
            starter::url_plugin::parse_remaps(&r)
                .into_iter()
                .map(|(_, to)| to),
        );
    }
    named.iter().any(|n| {
        let n = n.trim_end_matches('/');
        name == n
            || name
                .strip_prefix(n)
                .is_some_and(|rest| rest.starts_with('/') && !rest.contains("/../"))
    })
}

/// The access point's side of an output transfer: each file's place,
/// made a batch at a time as the bytes reach it.
struct Places<'a> {
    ad: &'a ClassAd,
    iwd: PathBuf,
    user: Option<&'a starter::User>,
    entries: Vec<Entry>,
    next: usize,
    /// Each file made (or refused: its bytes read and dropped).
    fill: Fill,
    refused: Vec<(String, String)>,
}

impl Places<'_> {
    fn make_more(&mut self) {
        let mut batch = Vec::new();
        let mut files = 0;
        while self.next < self.entries.len() && files < MAX_FDS {
            let e = self.entries[self.next].clone();
            self.next += 1;
            if !output_allowed(self.ad, &e.name) || !self.iwd.is_absolute() {
                self.refused.push((
                    e.name.clone(),
                    "the job did not name that place for its output".into(),
                ));
                if !e.dir {
                    self.fill.push(None, e.size);
                }
                continue;
            }
            if !e.dir {
                files += 1;
            }
            batch.push(e);
        }
        if batch.is_empty() {
            return;
        }
        let (fds, failures) = user_priv::create_output(self.user, &self.iwd, &batch, FILE_WORK);
        for f in failures {
            let to = f.to.as_ref().unwrap_or(&f.path);
            self.refused.push((to.display().to_string(), f.message));
        }
        let mut fds = fds.into_iter();
        for e in batch.into_iter().filter(|e| !e.dir) {
            self.fill.push(fds.next().flatten(), e.size);
        }
    }

    /// Makes more files when none waits (and some are left).
    fn settle(&mut self) {
        while !self.fill.waiting() && self.next < self.entries.len() {
            self.make_more();
        }
    }

    fn take(&mut self, mut bytes: &[u8]) -> Result<(), String> {
        while !bytes.is_empty() {
            self.settle();
            bytes = self.fill.take(bytes)?;
        }
        Ok(())
    }
}

fn serve_output(
    sock: &mut Sock,
    ad: &ClassAd,
    user: Option<&starter::User>,
) -> Result<(), SockError> {
    let msg = sock.recv()?;
    let mut d = sock.decoder(&msg);
    let entries = get_entries(&mut d).map_err(SockError::Protocol)?;
    let mut places = Places {
        ad,
        iwd: PathBuf::from(crate::schedd_service::literal_str(ad, "Iwd").unwrap_or_default()),
        user,
        entries,
        next: 0,
        fill: Fill::default(),
        refused: Vec::new(),
    };
    let result = receive_data(sock, |b| places.take(b));
    // Directories and empty files after the last bytes.
    places.settle();
    while places.next < places.entries.len() {
        places.make_more();
    }
    if let Err(why) = result {
        places.refused.push((String::new(), why));
    }
    let mut e = sock.encoder();
    e.put_int(places.refused.len() as i64);
    for (name, why) in &places.refused {
        e.put_str(name).put_str(why);
    }
    e.put_u64(places.fill.written);
    sock.send(&e)
}
