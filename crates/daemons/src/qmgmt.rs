//! The job-queue protocol (HTCondor's QMGMT, command QMGMT_WRITE_CMD) that
//! `Schedd.submit` and `htcondor job submit` speak: a loop of remote calls
//! (`int call`, its arguments; most answered `int rval` and, on failure,
//! `int errno`) inside one transaction, committed at the end.
//!
//! A submission arrives as a cluster ad (proc -1) and, per job, a proc ad
//! holding only what differs from it; a job is its cluster ad overlaid by
//! its proc ad. At commit the jobs go to the schedd as one cluster, which
//! sets whose they are (the authenticated user, never the client's
//! `Owner`), checks them and stores them in one transaction; a connection
//! that ends before its commit leaves nothing behind.
//!
//! Editing jobs already in the queue (`Schedd.edit`, `condor_qedit`):
//! SetAttribute / SetAttribute2 of a job that is not being submitted on
//! this connection (`C.P`, or `C.-1`, the cluster's ad, meaning every proc
//! of the cluster), and SetAttributeByConstraint(2), answered with the
//! number of jobs it matched. The schedd decides with HTCondor's rules
//! (`schedd::edit`); the changes are made at the commit, all in one
//! transaction, and none when the connection ends before it. A refused
//! edit that had no answer (NoAck) fails the commit, with its reason.
//!
//! Late materialization (`max_materialize`, `max_idle`): the client sends
//! the cluster's item rows (SendMaterializeData: raw lines, the fields of
//! a row joined by the unit separator; answered with the name the rows
//! are kept under and their number), the submit digest with
//! JobMaterializeLimit (SetJobFactory, its queue statement naming that
//! name) and the cluster ad, and no proc; at the commit the cluster is
//! queued as a factory (`Schedd::submit_factory`). Recorded from the
//! htcondor 25.14.1 bindings (`max_materialize = 2`, itemdata of six
//! rows): after NewCluster, SendMaterializeData(cluster, flags 0, raw
//! `a\nb\n...f\n`), answered `condor_submit.1.items`, 6, 0; then
//! SetJobFactory(cluster, 2, "", digest) where the digest is
//! `FACTORY.Requirements=MY.Requirements`, the commands that may vary
//! (`arguments=...`, `output=fact.$(ProcId)`, `FACTORY.Iwd=<cwd>`,
//! `max_materialize=2`; the executable is pruned: it is in the cluster ad)
//! and `Queue 1 letter from condor_submit.1.items`; then the cluster ad
//! (SetAttribute2 NoAck of proc -1) and the commit.

use classad::ClassAd;
use schedd::{EditTarget, JobId};

use crate::command_port::PortDaemon;
use crate::schedd_service::{ApiError, EditRequest, FactorySubmission, ParsedSubmission};
use cedar::server::Peer;
use cedar::{put_ad, PutOptions, Sock, SockError};

const INITIALIZE_CONNECTION: i64 = 10001;
const NEW_CLUSTER: i64 = 10002;
const NEW_PROC: i64 = 10003;
const SET_ATTRIBUTE: i64 = 10006;
const COMMIT_TRANSACTION_NO_FLAGS: i64 = 10007;
const INITIALIZE_READ_ONLY_CONNECTION: i64 = 10022;
const BEGIN_TRANSACTION: i64 = 10023;
const ABORT_TRANSACTION: i64 = 10024;
const SET_ATTRIBUTE2: i64 = 10027;
const CLOSE_SOCKET: i64 = 10028;
const COMMIT_TRANSACTION: i64 = 10031;
const SET_ATTRIBUTE_BY_CONSTRAINT: i64 = 10021;
const SET_ATTRIBUTE_BY_CONSTRAINT2: i64 = 10032;
const GET_CAPABILITIES: i64 = 10036;
const SET_JOB_FACTORY: i64 = 10037;
const SEND_MATERIALIZE_DATA: i64 = 10039;

/// SetAttribute's flags: the client expects no answer; only check, change
/// nothing; (by constraint) only the caller's jobs.
const NO_ACK: u8 = 0x02;
const ONLY_MY_JOBS: u8 = 0x10;
const QUERY_ONLY: u8 = 0x20;
/// (By constraint) the cluster ads the constraint matches change too:
/// condor_qedit's edit of whole clusters. A factory's cluster ad is what
/// its later jobs are made with.
const POST_SUBMIT_CLUSTER_CHANGE: u8 = 0x80;

const ENOENT: i64 = 2;
const EACCES: i64 = 13;
const EINVAL: i64 = 22;
const EFBIG: i64 = 27;
const ENOSYS: i64 = 38;

/// NewCluster's answer to a user who may not submit here (HTCondor's
/// NEWJOB_ERR_DISALLOWED_USER).
const NEWJOB_ERR_DISALLOWED_USER: i64 = -7;

/// The most edits one transaction may hold, and the most bytes of
/// attribute text (the cluster ad counts once: the queue keeps it once,
/// each job's proc ad chained to it): far above any real
/// submission (a job of a few KiB, up to 12 KiB with `getenv = true`,
/// 20,000 of them by default), a bound on what one connection can make
/// the schedd hold; the same as the HTTP API's (`MAX_SUBMIT_BYTES`), so
/// `ferrocondor submit` takes what it took there. The number of jobs is
/// MAX_JOBS_PER_SUBMISSION's.
const MAX_PROCS: usize = 1_000_000;
const MAX_BYTES: usize = 256 << 20;

/// Attributes a client may not set (HTCondor's SYSTEM_SECURE_JOB_ATTRS,
/// and what the schedd itself sets): silently ignored, as HTCondor does.
const IGNORED: [&str; 4] = ["TotalSubmitProcs", "OsUser", "User", "GlobalJobId"];

#[derive(Default)]
struct Transaction {
    cluster: Option<u32>,
    cluster_ad: ClassAd,
    procs: Vec<ClassAd>,
    bytes: usize,
    /// Edits of jobs already in the queue, made at the commit.
    edits: Vec<EditRequest>,
    /// The first failure of a call that had no answer (NoAck): it fails
    /// the commit, with its text.
    error: Option<(i64, String)>,
    /// SetJobFactory's JobMaterializeLimit and submit digest.
    factory: Option<(i64, String)>,
    /// SendMaterializeData's item rows.
    items: Vec<String>,
}

fn reply_rval(sock: &mut Sock, rval: i64, errno: i64) -> Result<(), SockError> {
    let mut e = sock.encoder();
    e.put_int(rval);
    if rval < 0 {
        e.put_int(errno);
    }
    sock.send(&e)
}

/// Serves one QMGMT connection until the client closes it.
pub(crate) fn serve(port: &PortDaemon, sock: &mut Sock, peer: &Peer) -> Result<(), SockError> {
    // A submission's NewProc calls come many to a read, each answered:
    // the answers to one read's calls go in one write (the socket writes
    // what it gathered before it waits for more calls), not one each.
    sock.cork();
    let served = serve_calls(port, sock, peer);
    let flushed = sock.uncork();
    served.and(flushed)
}

fn serve_calls(port: &PortDaemon, sock: &mut Sock, peer: &Peer) -> Result<(), SockError> {
    // The handshake authenticated (the command forces it); a peer without a
    // user may still read, never change.
    let user = port.local_user(peer).map(str::to_string);
    let mut t = Transaction::default();
    loop {
        // A connection that ends without CloseSocket: its transaction is
        // dropped, as HTCondor's schedd aborts it.
        let Some(msg) = sock.recv_next()? else {
            return Ok(());
        };
        let mut d = sock.decoder(&msg);
        let call = d.get_int()?;
        match call {
            INITIALIZE_CONNECTION | INITIALIZE_READ_ONLY_CONNECTION => {}
            CLOSE_SOCKET => return Ok(()),
            BEGIN_TRANSACTION | ABORT_TRANSACTION => {
                d.finish()?;
                t = Transaction::default();
                reply_rval(sock, 0, 0)?;
            }
            GET_CAPABILITIES => {
                let _mask = d.get_int()?;
                d.finish()?;
                let mut caps = ClassAd::new();
                caps.insert_value("LateMaterialize", true);
                caps.insert_value("LateMaterializeVersion", 2);
                caps.insert_value("UseJobsets", false);
                let mut e = sock.encoder();
                put_ad(&mut e, &caps, &PutOptions::default());
                sock.send(&e)?;
            }
            NEW_CLUSTER => {
                d.finish()?;
                let Some(user) = user.clone() else {
                    reply_failure(sock, -1, EACCES, "the connection is not authenticated")?;
                    continue;
                };
                if let Err(why) = may_submit(&user) {
                    reply_failure(sock, NEWJOB_ERR_DISALLOWED_USER, EACCES, &why)?;
                    continue;
                }
                match port.on_schedd(move |s, _, _| s.schedd.new_cluster(&user)) {
                    Ok(Ok(c)) => {
                        t = Transaction {
                            cluster: Some(c.cluster),
                            ..Transaction::default()
                        };
                        let mut e = sock.encoder();
                        e.put_int(i64::from(c.cluster));
                        sock.send(&e)?;
                    }
                    Ok(Err(err)) | Err(err) => reply_failure(sock, -10, EINVAL, &err.message)?,
                }
            }
            NEW_PROC => {
                let cluster = d.get_int()?;
                d.finish()?;
                if t.cluster.map(i64::from) != Some(cluster) {
                    reply_rval(sock, -1, EACCES)?;
                } else if t.procs.len() >= port.max_jobs_per_submission() {
                    // HTCondor's answer for MAX_JOBS_PER_SUBMISSION.
                    t.error.get_or_insert((
                        EINVAL,
                        format!(
                            "a submission may create at most {} jobs (MAX_JOBS_PER_SUBMISSION)",
                            port.max_jobs_per_submission()
                        ),
                    ));
                    reply_rval(sock, -4, EINVAL)?;
                } else if t.bytes > MAX_BYTES {
                    // Not HTCondor's (its schedd has no such bound): EFBIG
                    // says which bound it is.
                    t.error.get_or_insert((
                        EFBIG,
                        format!("the submission's jobs together are over {MAX_BYTES} bytes"),
                    ));
                    reply_rval(sock, -1, EFBIG)?;
                } else {
                    t.procs.push(ClassAd::new());
                    let mut e = sock.encoder();
                    e.put_int(t.procs.len() as i64 - 1);
                    sock.send(&e)?;
                }
            }
            SET_ATTRIBUTE | SET_ATTRIBUTE2 => {
                let cluster = d.get_int()?;
                let proc = d.get_int()?;
                let value = d.get_str()?;
                let name = d.get_str()?;
                let flags = if call == SET_ATTRIBUTE2 {
                    d.get_char()?
                } else {
                    0
                };
                d.finish()?;
                let no_ack = flags & NO_ACK != 0 && call == SET_ATTRIBUTE2;
                if no_ack && t.error.is_some() {
                    // The commit fails anyway: later calls are ignored.
                    continue;
                }
                let outcome = if t.cluster.is_some_and(|c| i64::from(c) == cluster) {
                    set_attribute(&mut t, user.as_deref(), cluster, proc, &name, &value)
                } else {
                    edit_job(
                        port,
                        &mut t,
                        user.as_deref(),
                        JobId::new(cluster, proc),
                        name,
                        value,
                        flags,
                        !no_ack,
                    )
                    .map(|_| ())
                };
                if no_ack {
                    if let Err(e) = outcome {
                        t.error.get_or_insert(e);
                    }
                } else {
                    match outcome {
                        Ok(()) => reply_rval(sock, 0, 0)?,
                        Err((errno, _)) => reply_rval(sock, -1, errno)?,
                    }
                }
            }
            SET_ATTRIBUTE_BY_CONSTRAINT | SET_ATTRIBUTE_BY_CONSTRAINT2 => {
                let constraint = d.get_str()?;
                let value = d.get_str()?;
                let name = d.get_str()?;
                let flags = if call == SET_ATTRIBUTE_BY_CONSTRAINT2 {
                    d.get_char()?
                } else {
                    0
                };
                d.finish()?;
                // Always answered: the number of jobs matched, or -1 and
                // why not (the client then closes without committing).
                match edit_by_constraint(
                    port,
                    &mut t,
                    user.as_deref(),
                    &constraint,
                    name,
                    value,
                    flags,
                ) {
                    Ok(matched) => reply_rval(sock, matched as i64, 0)?,
                    Err((errno, _)) => reply_rval(sock, -1, errno)?,
                }
            }
            SET_JOB_FACTORY => {
                let cluster = d.get_int()?;
                let limit = d.get_int()?;
                let _filename = d.get_null_str()?;
                let digest = d.get_null_str()?.unwrap_or_default();
                d.finish()?;
                if t.cluster.map(i64::from) != Some(cluster) {
                    reply_rval(sock, -1, EACCES)?;
                } else if digest.len() > MAX_BYTES {
                    reply_rval(sock, -1, EFBIG)?;
                } else {
                    t.bytes += digest.len();
                    t.factory = Some((limit, digest));
                    reply_rval(sock, 0, 0)?;
                }
            }
            SEND_MATERIALIZE_DATA => {
                let cluster = d.get_int()?;
                let _flags = d.get_int()?;
                let data = d.get_bytes(d.remaining())?;
                let mut e = sock.encoder();
                if t.cluster.map(i64::from) != Some(cluster) {
                    e.put_str("").put_int(0).put_int(-1).put_int(EACCES);
                } else if t.bytes + data.len() > MAX_BYTES {
                    e.put_str("").put_int(0).put_int(-1).put_int(EFBIG);
                } else {
                    t.bytes += data.len();
                    let text = String::from_utf8_lossy(data);
                    let text = text.strip_suffix('\n').unwrap_or(&text);
                    if !text.is_empty() || data == b"\n" {
                        t.items.extend(text.split('\n').map(str::to_string));
                    }
                    // The name the digest's queue statement reads the rows
                    // from (the schedd keeps them with the factory).
                    let name = format!("condor_submit.{cluster}.items");
                    e.put_str(&name).put_int(t.items.len() as i64).put_int(0);
                }
                sock.send(&e)?;
            }
            COMMIT_TRANSACTION_NO_FLAGS | COMMIT_TRANSACTION => {
                if call == COMMIT_TRANSACTION {
                    let _flags = d.get_int()?;
                }
                d.finish()?;
                let done = std::mem::take(&mut t);
                commit(port, sock, user.as_deref(), done)?;
            }
            other => {
                // A call this schedd does not serve: say so, keep the
                // connection's framing.
                reply_rval(sock, -1, ENOSYS)?;
                t.error.get_or_insert((
                    ENOSYS,
                    format!("queue-management call {other} is not supported by this schedd"),
                ));
            }
        }
    }
}

/// A failure with its reason, as the client shows it
/// (`SCHEDD:<ErrorCode>:<ErrorReason>`).
fn reply_failure(sock: &mut Sock, rval: i64, errno: i64, reason: &str) -> Result<(), SockError> {
    let mut e = sock.encoder();
    e.put_int(rval).put_int(errno);
    let mut ad = ClassAd::new();
    ad.insert_value("ErrorCode", if rval == -1 { 2 } else { rval });
    ad.insert_value("ErrorReason", reason);
    put_ad(&mut e, &ad, &PutOptions::default());
    sock.send(&e)
}

fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn set_attribute(
    t: &mut Transaction,
    user: Option<&str>,
    cluster: i64,
    proc: i64,
    name: &str,
    value: &str,
) -> Result<(), (i64, String)> {
    let Some(user) = user else {
        return Err((EACCES, "the connection is not authenticated".into()));
    };
    if t.cluster.map(i64::from) != Some(cluster) {
        return Err((
            ENOENT,
            format!("job {cluster}.{proc} is not being submitted on this connection (editing queued jobs is not supported yet)"),
        ));
    }
    if !valid_name(name) {
        return Err((EINVAL, format!("{name:?} is not an attribute name")));
    }
    let expr = classad::parser::parse_old_value_whole(value)
        .map_err(|e| (EINVAL, format!("{name} = {value}: {e}")))?;
    let bytes = name.len() + value.len();
    t.bytes += bytes;
    if t.bytes > MAX_BYTES {
        return Err((
            EINVAL,
            format!("the submission's jobs together are over {MAX_BYTES} bytes"),
        ));
    }
    if IGNORED.iter().any(|i| i.eq_ignore_ascii_case(name)) {
        return Ok(());
    }
    if name.eq_ignore_ascii_case("Owner") {
        // `undefined` means "whoever I am"; any other value must be who the
        // connection authenticated as. The schedd sets it either way.
        let ok = matches!(expr, classad::Expr::Lit(classad::Value::Undefined))
            || classad::ClassAd::parse(&format!("[v = {value}]"))
                .ok()
                .and_then(|a| crate::command_port::text(&a, "v"))
                .is_some_and(|v| v == user);
        return if ok {
            Ok(())
        } else {
            Err((
                EACCES,
                format!("Owner = {value}: jobs submitted by {user} are {user}'s"),
            ))
        };
    }
    let ad = match proc {
        -1 => &mut t.cluster_ad,
        p if p >= 0 && (p as usize) < t.procs.len() => &mut t.procs[p as usize],
        _ => {
            return Err((
                ENOENT,
                format!("job {cluster}.{proc} was not made with NewProc"),
            ))
        }
    };
    ad.insert(name, expr);
    Ok(())
}

/// Bounds one connection's pending edits (a by-ids edit sends one call
/// per job).
fn take_edit(t: &mut Transaction, req: EditRequest) -> Result<(), (i64, String)> {
    t.bytes += req.name.len() + req.value.len() + 64;
    if t.edits.len() >= MAX_PROCS || t.bytes > MAX_BYTES {
        return Err((
            EINVAL,
            format!("the transaction is over {MAX_PROCS} edits or {MAX_BYTES} bytes"),
        ));
    }
    t.edits.push(req);
    Ok(())
}

fn api_failure(e: ApiError) -> (i64, String) {
    (e.errno(), e.message)
}

/// SetAttribute(2) of a job already in the queue: checked now when the
/// client waits for the answer (a NoAck call is checked at the commit,
/// where its refusal fails the commit), made at the commit. Returns the
/// number of jobs the edit names.
#[allow(clippy::too_many_arguments)]
fn edit_job(
    port: &PortDaemon,
    t: &mut Transaction,
    user: Option<&str>,
    id: JobId,
    name: String,
    value: String,
    flags: u8,
    check_now: bool,
) -> Result<usize, (i64, String)> {
    let Some(user) = user else {
        return Err((
            EACCES,
            "Authentication is required to set attributes".into(),
        ));
    };
    let req = EditRequest {
        target: EditTarget::Jobs(vec![id]),
        name,
        value,
    };
    if check_now || flags & QUERY_ONLY != 0 {
        let (who, r) = (user.to_string(), req.clone());
        port.on_schedd(move |s, now, _| s.schedd.check_edit(&who, &r, now))
            .and_then(|r| r)
            .map_err(api_failure)?;
    }
    if flags & QUERY_ONLY != 0 {
        return Ok(1);
    }
    take_edit(t, req)?;
    Ok(1)
}

/// SetAttributeByConstraint(2): decided now (the answer is the number of
/// jobs the constraint matched), made at the commit on those jobs.
fn edit_by_constraint(
    port: &PortDaemon,
    t: &mut Transaction,
    user: Option<&str>,
    constraint: &str,
    name: String,
    value: String,
    flags: u8,
) -> Result<usize, (i64, String)> {
    let Some(user) = user else {
        return Err((
            EACCES,
            "Authentication is required to set attributes".into(),
        ));
    };
    let mut text = if constraint.trim().is_empty() {
        "true".to_string()
    } else {
        constraint.to_string()
    };
    let who = user.to_string();
    let owner = user.split('@').next().unwrap_or(user).to_string();
    let only_mine = flags & ONLY_MY_JOBS != 0;
    classad::parse_expr(&text)
        .map_err(|e| (EINVAL, format!("can't parse constraint: {text}: {e}")))?;
    let req_name = name.clone();
    let req_value = value.clone();
    let cluster_ads = flags & POST_SUBMIT_CLUSTER_CHANGE != 0;
    let (plan, clusters) = port
        .on_schedd(move |s, now, _| {
            // OnlyMyJobs: a queue super user's edit is not narrowed.
            if only_mine && !s.schedd.is_super_user(&who) {
                text = format!("(Owner == {}) && ({text})", classad_string(&owner));
            }
            let expr = classad::parse_expr(&text)
                .map_err(|e| ApiError::bad_request(format!("can't parse constraint: {e}")))?;
            let clusters = if cluster_ads {
                s.schedd.factory_clusters_matching(&expr, now)
            } else {
                Vec::new()
            };
            let req = EditRequest {
                target: EditTarget::Constraint(expr),
                name: req_name.clone(),
                value: req_value.clone(),
            };
            let plan = match s.schedd.check_edit(&who, &req, now) {
                // No job, but factory clusters (none of whose jobs is
                // present): HTCondor answers with the clusters matched.
                Err(e) if e.errno() == ENOENT && !clusters.is_empty() => schedd::EditPlan {
                    jobs: Vec::new(),
                    matched: clusters.len(),
                    name: req_name,
                    value: classad::Expr::Lit(classad::Value::Undefined),
                },
                other => other?,
            };
            // The factories' cluster ads: checked by their owner's rules.
            let ids: Vec<JobId> = clusters
                .iter()
                .map(|c| JobId::new(i64::from(*c), -1))
                .collect();
            if !ids.is_empty() {
                s.schedd.check_edit(
                    &who,
                    &EditRequest {
                        target: EditTarget::Jobs(ids),
                        name: req.name.clone(),
                        value: req.value.clone(),
                    },
                    now,
                )?;
            }
            Ok((plan, clusters))
        })
        .and_then(|r| r)
        .map_err(api_failure)?;
    if flags & QUERY_ONLY == 0 && (!plan.jobs.is_empty() || !clusters.is_empty()) {
        let mut jobs = plan.jobs.clone();
        jobs.extend(clusters.iter().map(|c| JobId::new(i64::from(*c), -1)));
        take_edit(
            t,
            EditRequest {
                target: EditTarget::Jobs(jobs),
                name,
                value,
            },
        )?;
    }
    Ok(plan.matched)
}

/// A pool started by a user runs every job as that user, so only that user
/// (and root) may submit to it: another user's job would run with the
/// pool's user's rights. A pool started by root runs each job as its
/// owner, and takes anyone's. `user` is the authenticated local user.
fn may_submit(user: &str) -> Result<(), String> {
    // SAFETY: geteuid and getuid cannot fail.
    let (euid, me) = unsafe { (libc::geteuid(), libc::getuid()) };
    let pool_user = crate::identity::user_name(me);
    if euid == 0 || user == "root" || pool_user.as_deref() == Some(user) {
        return Ok(());
    }
    Err(format!(
        "permission denied: this pool runs every job as {}, who started it, so only they may \
         submit to it ({user} may not); a pool started by root runs each job as its owner",
        pool_user.unwrap_or_else(|| format!("uid {me}"))
    ))
}

/// `s` as a ClassAd string literal.
fn classad_string(s: &str) -> String {
    classad::unparse::expr_to_string(&classad::Expr::Lit(classad::Value::Str(s.into())))
}

fn reply_ok(sock: &mut Sock, warning: Option<String>) -> Result<(), SockError> {
    let mut e = sock.encoder();
    e.put_int(0);
    let mut ad = ClassAd::new();
    if let Some(w) = warning {
        ad.insert_value("WarningReason", w.as_str());
    }
    put_ad(&mut e, &ad, &PutOptions::default());
    sock.send(&e)
}

/// Why a commit failed: its reply's errno and reason.
enum Refused {
    /// An edit (as HTCondor answers a deferred SetAttribute error: the
    /// negated errno).
    Edit(ApiError),
    Submit(ApiError),
}

fn commit(
    port: &PortDaemon,
    sock: &mut Sock,
    user: Option<&str>,
    t: Transaction,
) -> Result<(), SockError> {
    if let Some((errno, reason)) = t.error {
        // As HTCondor's schedd: the negated code of the first error.
        return reply_failure(sock, -1, -errno, &reason);
    }
    let Some(user) = user else {
        // Nothing can have been taken from an unauthenticated peer.
        return reply_ok(sock, None);
    };
    if let (Some(cluster), Some((limit, digest))) = (t.cluster, t.factory) {
        if !t.procs.is_empty() || !t.edits.is_empty() {
            return reply_failure(
                sock,
                -1,
                EINVAL,
                &format!("cluster {cluster}: a factory (late materialization) is submitted without procs"),
            );
        }
        let factory = FactorySubmission {
            cluster,
            cluster_ad: t.cluster_ad,
            digest,
            items: t.items,
            limit,
        };
        let user = user.to_string();
        let outcome = port.on_schedd(move |s, now, _| s.schedd.submit_factory(&user, factory, now));
        return match outcome {
            Ok(Ok(done)) => reply_ok(sock, done.warning),
            Ok(Err(e)) | Err(e) => reply_failure(sock, -1, EINVAL, &e.message),
        };
    }
    let submission = match t.cluster {
        None => None,
        Some(cluster) if t.procs.is_empty() => {
            return reply_failure(sock, -1, EINVAL, &format!("cluster {cluster} has no jobs"));
        }
        Some(cluster) => {
            // Kept as they came: the cluster ad once, each job's proc ad
            // chained to it (HTCondor's schedd keeps them so too).
            let mut cluster_ad = t.cluster_ad;
            cluster_ad.insert_value("ClusterId", i64::from(cluster));
            let mut procs = t.procs;
            for (i, proc_ad) in procs.iter_mut().enumerate() {
                proc_ad.remove("ClusterId");
                proc_ad.insert_value("ProcId", i as i64);
            }
            Some(ParsedSubmission::from_cluster(cluster, cluster_ad, procs))
        }
    };
    let edits = t.edits;
    if submission.is_none() && edits.is_empty() {
        return reply_ok(sock, None);
    }
    let user = user.to_string();
    let outcome = port.on_schedd(move |s, now, _| {
        // Edits of queued jobs are checked again now (the queue may have
        // changed since each call) and made all together, or none. With
        // a submission (no client sends both), they must pass before the
        // jobs are queued.
        let mut warning = None;
        if let Some(request) = submission {
            for r in &edits {
                s.schedd.check_edit(&user, r, now).map_err(Refused::Edit)?;
            }
            warning = s
                .schedd
                .submit_parsed(&user, request, now)
                .map_err(Refused::Submit)?
                .warning;
        }
        if !edits.is_empty() {
            s.schedd
                .edit_all(&user, &edits, now)
                .map_err(Refused::Edit)?;
        }
        Ok(warning)
    });
    match outcome {
        Ok(Ok(warning)) => reply_ok(sock, warning),
        Ok(Err(Refused::Edit(e))) => reply_failure(sock, -1, -e.errno(), &e.message),
        Ok(Err(Refused::Submit(e))) | Err(e) => reply_failure(sock, -1, EINVAL, &e.message),
    }
}
