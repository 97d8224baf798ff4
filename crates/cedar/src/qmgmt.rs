//! The client's side of HTCondor's job-queue protocol (QMGMT), as a 25.x
//! client (`htcondor2.Schedd.submit`, `condor_submit`) speaks it on a
//! connection opened with [`crate::client::connect`] for
//! [`commands::QMGMT_WRITE_CMD`]: a loop of remote calls, each one message
//! (`int call` and its arguments), most answered by one message.
//!
//! - [`get_capabilities`], [`new_cluster`], [`new_proc`]: answered at once;
//!   a failure is `int rval < 0, int errno` (NewCluster adds an ad with
//!   `ErrorCode` and `ErrorReason`).
//! - [`set_attribute`]: SetAttribute2 (10027), value before name, one flags
//!   byte; with NoAck the schedd answers nothing, and a failure shows at
//!   the commit.
//! - [`commit`]: CommitTransactionNoFlags (10007); the answer is `0` and an
//!   ad that may hold a `WarningReason`, or `rval, errno` and an ad with the
//!   `ErrorReason`.
//! - [`close`]: CloseSocket (10028), no answer; what was not committed is
//!   dropped by the schedd.
//! - [`submit_cluster`]: one cluster as HTCondor's client sends it: NewCluster,
//!   NewProc 0, the cluster ad as proc -1 (ClusterId first), proc 0's own
//!   attributes (ProcId, JobStatus, what differs), NewProc 1, ..., every
//!   SetAttribute2 with NoAck, and one commit; [`send_cluster`] is the
//!   same after a [`new_cluster`] of the caller's (who needs the id to
//!   build the ads: `$(Cluster)`), and gives back the commit's warning.
//!
//! Every request is built by a pure encoder ([`Request::encode`]) and every
//! answer read by a pure decoder, so the bytes are checked against those the
//! real client sent (`docs/cedar/recordings/qmgmt-submit-count.txt`). The
//! protocol is written up in `docs/cedar/qmgmt.md`.
//!
//! Errors name the call and carry the schedd's reason where it gave one.

use std::collections::VecDeque;

use classad::ClassAd;

use crate::ad::get_ad;
use crate::codec::{Decoder, Encoder};
use crate::sock::{Sock, SockError};

/// QMGMT call numbers (`qmgmt_constants.h`).
pub const NEW_CLUSTER: i64 = 10002;
pub const NEW_PROC: i64 = 10003;
pub const SET_ATTRIBUTE: i64 = 10006;
pub const COMMIT_TRANSACTION_NO_FLAGS: i64 = 10007;
pub const SET_ATTRIBUTE2: i64 = 10027;
pub const CLOSE_SOCKET: i64 = 10028;
pub const GET_CAPABILITIES: i64 = 10036;
pub const SET_JOB_FACTORY: i64 = 10037;
pub const SEND_MATERIALIZE_DATA: i64 = 10039;

/// SetAttribute's flag: the schedd sends no answer.
pub const NO_ACK: u8 = 0x02;

/// Attributes HTCondor's client sends only in the cluster ad
/// (`IsForcedClusterProcAttribute`), and those only in proc ads.
const CLUSTER_ONLY: [&str; 7] = [
    "ClusterId",
    "Owner",
    "User",
    "JobUniverse",
    "NTDomain",
    "JobSetId",
    "JobSetName",
];
const PROC_ONLY: [&str; 2] = ["ProcId", "JobStatus"];

/// One call, as the client sends it.
#[derive(Clone, Copy, Debug)]
pub enum Request<'a> {
    /// `mask`: 0, or 1 for the schedd's extended submit help as well.
    GetCapabilities {
        mask: i64,
    },
    NewCluster,
    NewProc {
        cluster: i32,
    },
    /// `value` is the right-hand side of `name = value` in old ClassAd
    /// syntax (strings quoted).
    SetAttribute {
        cluster: i32,
        proc: i32,
        name: &'a str,
        value: &'a str,
        flags: u8,
    },
    Commit,
    CloseSocket,
}

impl Request<'_> {
    /// The call's name, for errors.
    pub fn name(&self) -> &'static str {
        match self {
            Request::GetCapabilities { .. } => "GetCapabilities",
            Request::NewCluster => "NewCluster",
            Request::NewProc { .. } => "NewProc",
            Request::SetAttribute { .. } => "SetAttribute",
            Request::Commit => "CommitTransaction",
            Request::CloseSocket => "CloseSocket",
        }
    }

    /// The message's payload; `crypto`: the stream encrypts (strings carry
    /// their length).
    pub fn encode(&self, crypto: bool) -> Encoder {
        let mut e = Encoder::with_crypto(crypto);
        match *self {
            Request::GetCapabilities { mask } => {
                e.put_int(GET_CAPABILITIES).put_int(mask);
            }
            Request::NewCluster => {
                e.put_int(NEW_CLUSTER);
            }
            Request::NewProc { cluster } => {
                e.put_int(NEW_PROC).put_int(i64::from(cluster));
            }
            Request::SetAttribute {
                cluster,
                proc,
                name,
                value,
                flags,
            } => {
                // HTCondor's client sends SetAttribute (no flags) only when
                // the flags would be 0.
                let call = if flags == 0 {
                    SET_ATTRIBUTE
                } else {
                    SET_ATTRIBUTE2
                };
                e.put_int(call)
                    .put_int(i64::from(cluster))
                    .put_int(i64::from(proc))
                    .put_str(value)
                    .put_str(name);
                if flags != 0 {
                    e.put_char(flags);
                }
            }
            Request::Commit => {
                e.put_int(COMMIT_TRANSACTION_NO_FLAGS);
            }
            Request::CloseSocket => {
                e.put_int(CLOSE_SOCKET);
            }
        }
        e
    }
}

/// What went wrong with a call.
#[derive(Debug)]
pub enum QmgmtError {
    /// The connection failed during the call.
    Sock {
        call: &'static str,
        source: SockError,
    },
    /// The schedd refused the call: its `rval` and `errno`, and, where it
    /// sent them, `ErrorCode` and `ErrorReason`.
    Refused {
        call: &'static str,
        rval: i64,
        errno: i64,
        code: Option<i64>,
        reason: Option<String>,
    },
    /// The schedd's answer is not what the protocol says, or the caller
    /// asked for what cannot be sent.
    Protocol { call: &'static str, detail: String },
}

impl std::fmt::Display for QmgmtError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            QmgmtError::Sock { call, source } => write!(f, "{call}: {source}"),
            QmgmtError::Refused {
                call,
                rval,
                errno,
                code,
                reason,
            } => {
                write!(f, "{call} failed (rval {rval}, errno {errno}")?;
                if let Some(c) = code {
                    write!(f, ", ErrorCode {c}")?;
                }
                f.write_str(")")?;
                match reason {
                    Some(r) => write!(f, ": {r}"),
                    None => Ok(()),
                }
            }
            QmgmtError::Protocol { call, detail } => write!(f, "{call}: {detail}"),
        }
    }
}

impl std::error::Error for QmgmtError {}

impl QmgmtError {
    /// The schedd's `ErrorReason`, if it gave one.
    pub fn reason(&self) -> Option<&str> {
        match self {
            QmgmtError::Refused { reason, .. } => reason.as_deref(),
            _ => None,
        }
    }
}

fn sock_err(call: &'static str) -> impl Fn(SockError) -> QmgmtError {
    move |source| QmgmtError::Sock { call, source }
}

fn decode_err(call: &'static str) -> impl Fn(crate::DecodeError) -> QmgmtError {
    move |e| QmgmtError::Sock {
        call,
        source: SockError::Decode(e),
    }
}

fn ad_text(ad: &ClassAd, name: &str) -> Option<String> {
    match ad.eval_attr(name, &classad::Env::default()) {
        classad::Value::Str(s) => Some(s.to_string()),
        _ => None,
    }
}

fn ad_int(ad: &ClassAd, name: &str) -> Option<i64> {
    ad.eval_attr(name, &classad::Env::default()).as_int()
}

/// An answer that is one integer, or a failure: `rval < 0, errno` and
/// (when the schedd sends one) an ad with `ErrorCode` and `ErrorReason`.
/// Returns the integer.
pub fn decode_int_reply(
    call: &'static str,
    payload: &[u8],
    crypto: bool,
) -> Result<i64, QmgmtError> {
    let mut d = Decoder::with_crypto(payload, crypto);
    let rval = d.get_int().map_err(decode_err(call))?;
    if rval >= 0 {
        d.finish().map_err(decode_err(call))?;
        return Ok(rval);
    }
    Err(decode_failure(call, rval, &mut d))
}

/// The rest of a failure after its `rval`: the errno, then an ad if any.
fn decode_failure(call: &'static str, rval: i64, d: &mut Decoder<'_>) -> QmgmtError {
    let errno = match d.get_int() {
        Ok(e) => e,
        Err(e) => return decode_err(call)(e),
    };
    let (mut code, mut reason) = (None, None);
    if d.remaining() > 0 {
        match get_ad(d).and_then(|ad| d.finish().map(|_| ad)) {
            Ok(ad) => {
                code = ad_int(&ad, "ErrorCode");
                reason = ad_text(&ad, "ErrorReason");
            }
            Err(e) => return decode_err(call)(e),
        }
    }
    QmgmtError::Refused {
        call,
        rval,
        errno,
        code,
        reason,
    }
}

/// The commit's answer: the warning on success (`WarningReason`), or the
/// failure with its `ErrorReason`.
pub fn decode_commit_reply(payload: &[u8], crypto: bool) -> Result<Option<String>, QmgmtError> {
    let call = "CommitTransaction";
    let mut d = Decoder::with_crypto(payload, crypto);
    let rval = d.get_int().map_err(decode_err(call))?;
    if rval < 0 {
        return Err(decode_failure(call, rval, &mut d));
    }
    // The ad is optional (schedds older than 8.7.4 send none).
    if d.remaining() == 0 {
        return Ok(None);
    }
    let ad = get_ad(&mut d).map_err(decode_err(call))?;
    d.finish().map_err(decode_err(call))?;
    Ok(ad_text(&ad, "WarningReason").filter(|w| !w.is_empty()))
}

fn call(sock: &mut Sock, req: &Request<'_>) -> Result<(), QmgmtError> {
    sock.send(&req.encode(sock.encrypting()))
        .map_err(sock_err(req.name()))
}

fn answer(sock: &mut Sock, call: &'static str) -> Result<Vec<u8>, QmgmtError> {
    sock.recv().map_err(sock_err(call))
}

/// GetCapabilities: the schedd's capabilities ad (`LateMaterialize`,
/// `UseJobsets`, ...).
pub fn get_capabilities(sock: &mut Sock) -> Result<ClassAd, QmgmtError> {
    let req = Request::GetCapabilities { mask: 0 };
    call(sock, &req)?;
    let msg = answer(sock, req.name())?;
    let mut d = sock.decoder(&msg);
    let ad = get_ad(&mut d).map_err(decode_err(req.name()))?;
    d.finish().map_err(decode_err(req.name()))?;
    Ok(ad)
}

/// NewCluster: a new cluster id, the connection's cluster from now on.
pub fn new_cluster(sock: &mut Sock) -> Result<i32, QmgmtError> {
    let req = Request::NewCluster;
    call(sock, &req)?;
    let msg = answer(sock, req.name())?;
    let id = decode_int_reply(req.name(), &msg, sock.encrypting())?;
    i32::try_from(id)
        .ok()
        .filter(|c| *c > 0)
        .ok_or_else(|| QmgmtError::Protocol {
            call: req.name(),
            detail: format!("the schedd answered cluster {id}"),
        })
}

/// NewProc: the next proc id of `cluster` (0, 1, ...).
pub fn new_proc(sock: &mut Sock, cluster: i32) -> Result<i32, QmgmtError> {
    let req = Request::NewProc { cluster };
    call(sock, &req)?;
    let msg = answer(sock, req.name())?;
    let id = decode_int_reply(req.name(), &msg, sock.encrypting())?;
    i32::try_from(id).map_err(|_| QmgmtError::Protocol {
        call: req.name(),
        detail: format!("the schedd answered proc {id}"),
    })
}

/// SetAttribute2 of `cluster.proc` (proc -1: the cluster ad): `name =
/// value_text`. With `no_ack` nothing comes back, and a refusal fails the
/// commit; without it the schedd's answer is read.
pub fn set_attribute(
    sock: &mut Sock,
    cluster: i32,
    proc: i32,
    name: &str,
    value_text: &str,
    no_ack: bool,
) -> Result<(), QmgmtError> {
    if value_text.is_empty() {
        // HTCondor's schedd drops a connection that sends an empty value.
        return Err(QmgmtError::Protocol {
            call: "SetAttribute",
            detail: format!("{name} has an empty value"),
        });
    }
    let req = Request::SetAttribute {
        cluster,
        proc,
        name,
        value: value_text,
        flags: if no_ack { NO_ACK } else { 0 },
    };
    call(sock, &req)?;
    if no_ack {
        return Ok(());
    }
    let msg = answer(sock, req.name())?;
    decode_int_reply(req.name(), &msg, sock.encrypting()).map(|_| ())
}

/// CommitTransactionNoFlags: the schedd's warning if it had one, or the
/// failure with its `ErrorReason` (a refused NoAck call shows here).
pub fn commit(sock: &mut Sock) -> Result<Option<String>, QmgmtError> {
    let req = Request::Commit;
    call(sock, &req)?;
    let msg = answer(sock, req.name())?;
    decode_commit_reply(&msg, sock.encrypting())
}

/// CloseSocket, then the connection closed. What was not committed is
/// dropped by the schedd.
pub fn close(sock: &mut Sock) -> Result<(), QmgmtError> {
    let r = call(sock, &Request::CloseSocket);
    sock.close();
    r
}

fn named(list: &[&str], name: &str) -> bool {
    list.iter().any(|n| n.eq_ignore_ascii_case(name))
}

/// Sends one cluster as HTCondor's client does and commits it: NewCluster,
/// NewProc 0, then the cluster ad as proc -1 (`ClusterId` first, `Owner =
/// undefined` where the ad names no owner: the schedd sets it to the
/// authenticated user), then for each proc `ProcId`, `JobStatus` (the proc
/// ad's, else the cluster ad's, else 1 = idle) and its other attributes,
/// each proc after its own NewProc; every SetAttribute2 with NoAck.
///
/// `procs` hold what differs from the cluster ad (`submit::split_jobs` makes
/// them from whole job ads); an empty ad is a job exactly like the
/// cluster ad. Returns the cluster id and the number of procs. The
/// connection stays open ([`close`] it, or send another cluster).
///
/// The messages and their order are the real client's; unlike it, this
/// does not wait for each NewProc's answer before sending that proc's
/// attributes (it reads them up to [`WINDOW`] behind and checks each id),
/// which saves a round trip per job.
pub fn submit_cluster(
    sock: &mut Sock,
    cluster_ad: &ClassAd,
    procs: &[ClassAd],
) -> Result<(i32, usize), QmgmtError> {
    if procs.is_empty() {
        return Err(QmgmtError::Protocol {
            call: "NewProc",
            detail: "a cluster needs at least one proc".into(),
        });
    }
    get_capabilities(sock)?;
    let cluster = new_cluster(sock)?;
    send_cluster(sock, cluster, cluster_ad, procs)?;
    Ok((cluster, procs.len()))
}

/// [`submit_cluster`] after its NewCluster: sends the jobs of `cluster`
/// (a cluster id the schedd handed out on this connection) as HTCondor's
/// client does, and commits them. Returns the schedd's warning, if it
/// gave one (`WarningReason`). A failure before the commit leaves the
/// transaction uncommitted: [`close`] the connection and nothing of it
/// stays.
pub fn send_cluster(
    sock: &mut Sock,
    cluster: i32,
    cluster_ad: &ClassAd,
    procs: &[ClassAd],
) -> Result<Option<String>, QmgmtError> {
    if procs.is_empty() {
        return Err(QmgmtError::Protocol {
            call: "NewProc",
            detail: "a cluster needs at least one proc".into(),
        });
    }
    let mut sender = ClusterSender::new(sock, cluster);
    for (i, proc_ad) in procs.iter().enumerate() {
        sender.send((i == 0).then_some(cluster_ad), proc_ad)?;
    }
    sender.commit()
}

/// [`send_cluster`] one proc at a time, for a client that makes its jobs
/// as it sends them and never holds the whole cluster (a large
/// `queue N`): each [`ClusterSender::send`] is that proc's NewProc and
/// attributes; [`ClusterSender::commit`] ends the submission. Dropped
/// without a commit, nothing is committed.
pub struct ClusterSender<'s> {
    sock: &'s mut Sock,
    cluster: i32,
    next: usize,
    /// NewProc answers not read yet (read up to [`WINDOW`] behind).
    awaited: VecDeque<usize>,
    /// The cluster ad's JobStatus, which a proc that says none takes.
    default_status: String,
}

impl<'s> ClusterSender<'s> {
    /// Sends the jobs of `cluster`, a cluster id the schedd handed out on
    /// this connection.
    pub fn new(sock: &'s mut Sock, cluster: i32) -> ClusterSender<'s> {
        // The attributes go NoAck, many to a write.
        sock.cork();
        ClusterSender {
            sock,
            cluster,
            next: 0,
            awaited: VecDeque::with_capacity(WINDOW + 1),
            default_status: "1".into(),
        }
    }

    /// How many procs were sent.
    pub fn sent(&self) -> usize {
        self.next
    }

    /// Sends the next proc: its attributes that differ from the cluster
    /// ad, and with the first proc (`cluster_ad` given) the cluster ad.
    pub fn send(
        &mut self,
        cluster_ad: Option<&ClassAd>,
        proc_ad: &ClassAd,
    ) -> Result<(), QmgmtError> {
        let (sock, cluster, i) = (&mut *self.sock, self.cluster, self.next);
        let proc = i32::try_from(i).map_err(|_| QmgmtError::Protocol {
            call: "NewProc",
            detail: format!("{i} procs are more than a cluster holds"),
        })?;
        if (i == 0) != cluster_ad.is_some() {
            return Err(QmgmtError::Protocol {
                call: "NewProc",
                detail: "the cluster ad goes with the first proc, and only with it".into(),
            });
        }
        // NewProc's answers are read behind the requests, at most WINDOW
        // behind: the bytes are the real client's, in its order, without
        // a round trip per job. A schedd that answers another proc id than
        // the next is caught before the commit, and nothing is committed.
        call(sock, &Request::NewProc { cluster })?;
        self.awaited.push_back(i);
        while self.awaited.len() > WINDOW || (i == 0 && !self.awaited.is_empty()) {
            check_proc(sock, &mut self.awaited)?;
        }
        if let Some(cluster_ad) = cluster_ad {
            if let Some(st) = cluster_ad.get("JobStatus") {
                self.default_status = classad::unparse::expr_to_old_syntax(st);
            }
            set_attribute(sock, cluster, -1, "ClusterId", &cluster.to_string(), true)?;
            if !cluster_ad.contains("Owner") {
                set_attribute(sock, cluster, -1, "Owner", "undefined", true)?;
            }
            for (name, expr) in cluster_ad.iter_inserted() {
                if name.as_str().eq_ignore_ascii_case("ClusterId")
                    || named(&PROC_ONLY, name.as_str())
                {
                    continue;
                }
                let text = classad::unparse::expr_to_old_syntax(expr);
                set_attribute(sock, cluster, -1, name.as_str(), &text, true)?;
            }
        }
        set_attribute(sock, cluster, proc, "ProcId", &proc.to_string(), true)?;
        let status = proc_ad
            .get("JobStatus")
            .map(classad::unparse::expr_to_old_syntax);
        let status = status.as_deref().unwrap_or(&self.default_status);
        set_attribute(sock, cluster, proc, "JobStatus", status, true)?;
        for (name, expr) in proc_ad.iter_inserted() {
            if named(&PROC_ONLY, name.as_str()) || named(&CLUSTER_ONLY, name.as_str()) {
                continue;
            }
            let text = classad::unparse::expr_to_old_syntax(expr);
            set_attribute(sock, cluster, proc, name.as_str(), &text, true)?;
        }
        self.next += 1;
        Ok(())
    }

    /// Reads the answers still awaited and commits: the schedd's warning,
    /// if it gave one.
    pub fn commit(mut self) -> Result<Option<String>, QmgmtError> {
        if self.next == 0 {
            return Err(QmgmtError::Protocol {
                call: "NewProc",
                detail: "a cluster needs at least one proc".into(),
            });
        }
        while !self.awaited.is_empty() {
            check_proc(self.sock, &mut self.awaited)?;
        }
        self.sock.uncork().map_err(sock_err("SetAttribute"))?;
        commit(self.sock)
    }
}

/// Sends a factory cluster (late materialization) as HTCondor's client
/// does, after NewCluster, and commits it: the item rows
/// (SendMaterializeData: the rows as raw lines, answered with the name
/// the schedd keeps them under and their number), the submit digest that
/// `digest` makes with that name and JobMaterializeLimit `limit`
/// (SetJobFactory), then the cluster ad as proc -1, NoAck; no proc.
/// Returns the schedd's warning, if it gave one.
pub fn submit_factory(
    sock: &mut Sock,
    cluster: i32,
    limit: i64,
    items: &[String],
    digest: &dyn Fn(&str) -> String,
    cluster_ad: &ClassAd,
) -> Result<Option<String>, QmgmtError> {
    let mut items_file = String::new();
    if !items.is_empty() {
        let call_name = "SendMaterializeData";
        let mut e = sock.encoder();
        e.put_int(SEND_MATERIALIZE_DATA)
            .put_int(i64::from(cluster))
            .put_int(0);
        let mut rows = String::new();
        for row in items {
            rows.push_str(row);
            rows.push('\n');
        }
        e.put_bytes(rows.as_bytes());
        sock.send(&e).map_err(sock_err(call_name))?;
        let msg = answer(sock, call_name)?;
        let mut d = sock.decoder(&msg);
        let name = d.get_str().map_err(decode_err(call_name))?;
        let count = d.get_int().map_err(decode_err(call_name))?;
        let rval = d.get_int().map_err(decode_err(call_name))?;
        if rval < 0 {
            return Err(decode_failure(call_name, rval, &mut d));
        }
        if count != items.len() as i64 {
            return Err(QmgmtError::Protocol {
                call: call_name,
                detail: format!(
                    "the schedd kept {count} item rows of the {} sent",
                    items.len()
                ),
            });
        }
        items_file = name;
    }
    let call_name = "SetJobFactory";
    let mut e = sock.encoder();
    e.put_int(SET_JOB_FACTORY)
        .put_int(i64::from(cluster))
        .put_int(limit)
        .put_str("")
        .put_str(&digest(&items_file));
    sock.send(&e).map_err(sock_err(call_name))?;
    let msg = answer(sock, call_name)?;
    decode_int_reply(call_name, &msg, sock.encrypting())?;
    sock.cork();
    let sent = (|| {
        set_attribute(sock, cluster, -1, "ClusterId", &cluster.to_string(), true)?;
        if !cluster_ad.contains("Owner") {
            set_attribute(sock, cluster, -1, "Owner", "undefined", true)?;
        }
        for (name, expr) in cluster_ad.iter_inserted() {
            if name.as_str().eq_ignore_ascii_case("ClusterId") || named(&PROC_ONLY, name.as_str()) {
                continue;
            }
            let text = classad::unparse::expr_to_old_syntax(expr);
            set_attribute(sock, cluster, -1, name.as_str(), &text, true)?;
        }
        Ok(())
    })();
    sock.uncork().map_err(sock_err("SetAttribute"))?;
    sent?;
    commit(sock)
}

impl Drop for ClusterSender<'_> {
    /// Uncommitted, the socket sends at once again (what was gathered is
    /// written: the peer sees the same bytes, then no commit).
    fn drop(&mut self) {
        let _ = self.sock.uncork();
    }
}

/// How many NewProc answers [`submit_cluster`] may leave unread: below
/// what the socket buffers hold (each answer is under 64 bytes: at most
/// 64 KiB, and a loopback socket takes 128 KiB before its reader reads),
/// so neither side ever waits on the other's full buffer; and several of
/// the 64 KiB writes the client gathers, so that it does not wait for the
/// schedd's answers to its last write before it makes the next (256 made
/// a 100,000-job submission wait on the schedd 400 times).
const WINDOW: usize = 1024;

/// Reads the oldest awaited NewProc answer and checks it is that proc.
fn check_proc(sock: &mut Sock, awaited: &mut VecDeque<usize>) -> Result<(), QmgmtError> {
    let Some(want) = awaited.pop_front() else {
        return Ok(());
    };
    let msg = answer(sock, "NewProc")?;
    let got = decode_int_reply("NewProc", &msg, sock.encrypting())?;
    if got != want as i64 {
        return Err(QmgmtError::Protocol {
            call: "NewProc",
            detail: format!("expected next ProcId to be {want}, but the schedd says {got}"),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::{Header, HEADER};
    use std::io::{self, Read, Write};
    use std::net::SocketAddr;
    use std::sync::{Arc, Mutex};

    /// The recorded messages of the QMGMT connection (connection 0), from
    /// the first call after authentication: (client to schedd?, payload).
    fn recorded(text: &str) -> Vec<(bool, Vec<u8>)> {
        let mut packets: Vec<(bool, String, Vec<u8>)> = Vec::new();
        for line in text.lines() {
            if line.starts_with("=== connection 1") {
                break;
            }
            if line.starts_with("<<<") || line.starts_with(">>>") {
                packets.push((line.starts_with("<<<"), line.to_string(), Vec::new()));
                continue;
            }
            // "0000  01 00 ...  ascii": offset, then up to 16 hex bytes.
            let Some((off, rest)) = line.split_once("  ") else {
                continue;
            };
            if off.len() != 4 || !off.chars().all(|c| c.is_ascii_hexdigit()) {
                continue;
            }
            let hex = &rest[..rest.len().min(16 * 3)];
            let last = packets.last_mut().expect("a packet line before any marker");
            for b in hex.split_whitespace() {
                last.2.push(u8::from_str_radix(b, 16).unwrap());
            }
        }
        let start = packets
            .iter()
            .position(|(_, label, _)| label.contains("claimtobe-ok"))
            .expect("the recording authenticates by CLAIMTOBE")
            + 1;
        packets[start..]
            .iter()
            .map(|(to_server, _, bytes)| {
                let h = Header::parse(bytes[..HEADER].try_into().unwrap()).unwrap();
                assert!(h.end, "every recorded message is one packet");
                assert_eq!(h.len, bytes.len() - HEADER);
                (*to_server, bytes[HEADER..].to_vec())
            })
            .collect()
    }

    fn submit_count() -> Vec<(bool, Vec<u8>)> {
        recorded(include_str!(
            "../../../docs/cedar/recordings/qmgmt-submit-count.txt"
        ))
    }

    /// SetAttribute2's fields: (cluster, proc, value, name, flags).
    fn set_attribute_fields(payload: &[u8]) -> (i32, i32, String, String, u8) {
        let mut d = Decoder::new(payload);
        assert_eq!(d.get_int().unwrap(), SET_ATTRIBUTE2);
        let f = (
            d.get_i32().unwrap(),
            d.get_i32().unwrap(),
            d.get_str().unwrap(),
            d.get_str().unwrap(),
            d.get_char().unwrap(),
        );
        d.finish().unwrap();
        f
    }

    #[test]
    fn each_call_encodes_as_the_real_client_sent_it() {
        let m = submit_count();
        let client: Vec<&[u8]> = m
            .iter()
            .filter(|(c, _)| *c)
            .map(|(_, b)| b.as_slice())
            .collect();
        assert_eq!(
            client[0],
            Request::GetCapabilities { mask: 0 }
                .encode(false)
                .as_bytes()
        );
        assert_eq!(client[1], Request::NewCluster.encode(false).as_bytes());
        assert_eq!(
            client[2],
            Request::NewProc { cluster: 100 }.encode(false).as_bytes()
        );
        // Every SetAttribute2 the client sent, re-encoded from its fields.
        let mut seen = 0;
        for b in &client {
            if b[..8] != SET_ATTRIBUTE2.to_be_bytes() {
                continue;
            }
            let (cluster, proc, value, name, flags) = set_attribute_fields(b);
            assert_eq!(flags, NO_ACK);
            let req = Request::SetAttribute {
                cluster,
                proc,
                name: &name,
                value: &value,
                flags,
            };
            assert_eq!(*b, req.encode(false).as_bytes(), "{name} = {value}");
            seen += 1;
        }
        // The cluster ad's 59 attributes, then ProcId and JobStatus of 3 procs.
        assert_eq!(seen, 59 + 3 * 2);
        let first = Request::SetAttribute {
            cluster: 100,
            proc: -1,
            name: "ClusterId",
            value: "100",
            flags: NO_ACK,
        };
        assert_eq!(client[3], first.encode(false).as_bytes());
        let n = client.len();
        assert_eq!(client[n - 2], Request::Commit.encode(false).as_bytes());
        assert_eq!(client[n - 1], Request::CloseSocket.encode(false).as_bytes());
        // Without flags, the flagless call (10006) and no flags byte.
        let plain = Request::SetAttribute {
            cluster: 1,
            proc: 0,
            name: "A",
            value: "1",
            flags: 0,
        };
        let bytes = plain.encode(false);
        let mut d = Decoder::new(bytes.as_bytes());
        assert_eq!(d.get_int().unwrap(), SET_ATTRIBUTE);
        d.get_int().unwrap();
        d.get_int().unwrap();
        assert_eq!(d.get_str().unwrap(), "1");
        assert_eq!(d.get_str().unwrap(), "A");
        d.finish().unwrap();
    }

    #[test]
    fn under_encryption_strings_carry_their_length() {
        let req = Request::SetAttribute {
            cluster: 7,
            proc: 0,
            name: "ProcId",
            value: "0",
            flags: NO_ACK,
        };
        let e = req.encode(true);
        let mut d = Decoder::with_crypto(e.as_bytes(), true);
        assert_eq!(d.get_int().unwrap(), SET_ATTRIBUTE2);
        assert_eq!(d.get_int().unwrap(), 7);
        assert_eq!(d.get_int().unwrap(), 0);
        assert_eq!(d.get_str().unwrap(), "0");
        assert_eq!(d.get_str().unwrap(), "ProcId");
        assert_eq!(d.get_char().unwrap(), NO_ACK);
        d.finish().unwrap();
        assert_eq!(e.len(), 8 * 3 + (8 + 2) + (8 + 7) + 1);
    }

    #[test]
    fn the_schedd_s_recorded_answers_decode() {
        let m = submit_count();
        let schedd: Vec<&[u8]> = m
            .iter()
            .filter(|(c, _)| !*c)
            .map(|(_, b)| b.as_slice())
            .collect();
        let mut d = Decoder::new(schedd[0]);
        let caps = get_ad(&mut d).unwrap();
        d.finish().unwrap();
        assert_eq!(
            caps.eval_attr("LateMaterialize", &classad::Env::default())
                .as_bool(),
            Some(true)
        );
        assert_eq!(
            decode_int_reply("NewCluster", schedd[1], false).unwrap(),
            100
        );
        for (i, b) in schedd[2..5].iter().enumerate() {
            assert_eq!(decode_int_reply("NewProc", b, false).unwrap(), i as i64);
        }
        assert_eq!(decode_commit_reply(schedd[5], false).unwrap(), None);
    }

    fn last_answer(file: &str, label: &str) -> Vec<u8> {
        let mut out = None;
        let mut lines = file.lines().peekable();
        while let Some(line) = lines.next() {
            if line.starts_with(">>>") && line.contains(label) {
                let mut bytes = Vec::new();
                while let Some(l) = lines.peek() {
                    let Some((off, rest)) = l.split_once("  ") else {
                        break;
                    };
                    if off.len() != 4 || !off.chars().all(|c| c.is_ascii_hexdigit()) {
                        break;
                    }
                    for b in rest[..rest.len().min(48)].split_whitespace() {
                        bytes.push(u8::from_str_radix(b, 16).unwrap());
                    }
                    lines.next();
                }
                out = Some(bytes[HEADER..].to_vec());
            }
        }
        out.expect(label)
    }

    #[test]
    fn failures_and_warnings_carry_the_schedd_s_reason() {
        let fail = last_answer(
            include_str!("../../../docs/cedar/recordings/qmgmt-fail-commit.txt"),
            "commit-fail",
        );
        let e = decode_commit_reply(&fail, false).unwrap_err();
        assert_eq!(e.reason(), Some("fake: job rejected by SUBMIT_REQUIREMENT"));
        let shown = e.to_string();
        assert!(
            shown.starts_with("CommitTransaction failed (rval -1, errno -2, ErrorCode 2)"),
            "{shown}"
        );
        let warn = last_answer(
            include_str!("../../../docs/cedar/recordings/qmgmt-commit-warning.txt"),
            "commit-warn",
        );
        assert_eq!(
            decode_commit_reply(&warn, false).unwrap().as_deref(),
            Some("fake: a warning from the schedd")
        );
        let nc = last_answer(
            include_str!("../../../docs/cedar/recordings/qmgmt-fail-newcluster.txt"),
            "newcluster-fail",
        );
        let e = decode_int_reply("NewCluster", &nc, false).unwrap_err();
        assert!(
            e.to_string()
                .contains("NewCluster failed (rval -1, errno 13, ErrorCode 13): fake: submissions are disabled"),
            "{e}"
        );
        // NewProc's failure has no ad.
        let mut np = Encoder::new();
        np.put_int(-1).put_int(13);
        let e = decode_int_reply("NewProc", np.as_bytes(), false).unwrap_err();
        assert_eq!(e.to_string(), "NewProc failed (rval -1, errno 13)");
        // A short answer is a fault that names the call.
        let e = decode_int_reply("NewProc", &[0, 0], false).unwrap_err();
        assert!(e.to_string().starts_with("NewProc: bad message"), "{e}");
    }

    /// Reads the schedd's recorded answers; keeps what the client writes.
    struct Replay {
        answers: io::Cursor<Vec<u8>>,
        written: Arc<Mutex<Vec<u8>>>,
    }

    impl Read for Replay {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.answers.read(buf)
        }
    }

    impl Write for Replay {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.written.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn submit_cluster_sends_what_the_real_client_sent() {
        let m = submit_count();
        // The cluster ad the client sent, in its order, and its procs.
        let mut cluster_ad = ClassAd::new();
        let mut expected = Vec::new();
        let mut answers = Vec::new();
        for (to_schedd, payload) in &m {
            if *to_schedd {
                if payload[..8] == CLOSE_SOCKET.to_be_bytes() {
                    continue;
                }
                expected.extend_from_slice(&crate::frame::packets(payload));
                if payload[..8] == SET_ATTRIBUTE2.to_be_bytes() {
                    let (_, proc, value, name, _) = set_attribute_fields(payload);
                    if proc == -1 && name != "ClusterId" {
                        let e = classad::parser::parse_old_value_whole(&value).unwrap();
                        cluster_ad.insert(name.as_str(), e);
                    }
                }
            } else {
                answers.extend_from_slice(&crate::frame::packets(payload));
            }
        }
        let procs = vec![ClassAd::new(), ClassAd::new(), ClassAd::new()];
        let written = Arc::new(Mutex::new(Vec::new()));
        let replay = Replay {
            answers: io::Cursor::new(answers),
            written: written.clone(),
        };
        let addr: SocketAddr = "127.0.0.1:9618".parse().unwrap();
        let mut sock = Sock::over(replay, addr, addr);
        let (cluster, n) = submit_cluster(&mut sock, &cluster_ad, &procs).unwrap();
        assert_eq!((cluster, n), (100, 3));
        let got = written.lock().unwrap().clone();
        // Message by message, for a readable failure.
        let split = |mut b: &[u8]| {
            let mut out = Vec::new();
            while b.len() >= HEADER {
                let h = Header::parse(b[..HEADER].try_into().unwrap()).unwrap();
                out.push(b[HEADER..HEADER + h.len].to_vec());
                b = &b[HEADER + h.len..];
            }
            out
        };
        let (got, expected) = (split(&got), split(&expected));
        assert_eq!(got.len(), expected.len());
        // Byte for byte, but for a real's text: ours prints reals as
        // HTCondor's unparser does (`1.250000000000000E+00`); the client
        // sent the text it was given (`1.25`).
        let mut reprinted = 0;
        for (g, e) in got.iter().zip(&expected) {
            if g == e {
                continue;
            }
            let (gc, gp, gv, gn, gf) = set_attribute_fields(g);
            let (ec, ep, ev, en, ef) = set_attribute_fields(e);
            assert_eq!((gc, gp, &gn, gf), (ec, ep, &en, ef));
            let again = classad::unparse::expr_to_old_syntax(
                &classad::parser::parse_old_value_whole(&ev).unwrap(),
            );
            assert_eq!(gv, again, "{en}");
            reprinted += 1;
        }
        assert_eq!(reprinted, 1, "only RequestDisk's 1.25");
        close(&mut sock).unwrap();
        let tail = written.lock().unwrap();
        assert!(tail.ends_with(&crate::frame::packets(
            Request::CloseSocket.encode(false).as_bytes()
        )));
    }

    #[test]
    fn a_refused_new_proc_stops_the_submission() {
        let mut answers = Vec::new();
        let mut caps = Encoder::new();
        crate::put_ad(&mut caps, &ClassAd::new(), &crate::PutOptions::default());
        answers.extend(crate::frame::packets(caps.as_bytes()));
        let mut e = Encoder::new();
        e.put_int(5);
        answers.extend(crate::frame::packets(e.as_bytes()));
        let mut e = Encoder::new();
        e.put_int(-1).put_int(13);
        answers.extend(crate::frame::packets(e.as_bytes()));
        let written = Arc::new(Mutex::new(Vec::new()));
        let addr: SocketAddr = "127.0.0.1:9618".parse().unwrap();
        let mut sock = Sock::over(
            Replay {
                answers: io::Cursor::new(answers),
                written,
            },
            addr,
            addr,
        );
        let err = submit_cluster(&mut sock, &ClassAd::new(), &[ClassAd::new()]).unwrap_err();
        assert_eq!(err.to_string(), "NewProc failed (rval -1, errno 13)");
        let err = submit_cluster(&mut sock, &ClassAd::new(), &[]).unwrap_err();
        assert!(err.to_string().contains("at least one proc"), "{err}");
    }
}
