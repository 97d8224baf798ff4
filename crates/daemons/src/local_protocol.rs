//! How the roles' messages are written between processes: one JSON
//! object each, ads as new-syntax ClassAd text (which round-trips
//! exactly), carried on HTCondor's wire protocol by
//! [`crate::role_transport`]. A line is `{"from": "SCHEDD", "msg":
//! {...}}`. Only the messages roles send one another travel; a line that
//! does not decode is dropped with a note, never acted on.

use std::sync::Arc;

use classad::ClassAd;
use negotiator::collector::AdType;
use schedd::claims::{Charge, MatchInfo, RunEnd, StartFailure, StarterReport, Stop};
use schedd::{ExitHow, JobId, RunReport};
use serde::{Deserialize, Serialize};
use startd::{Action, ClaimRequest, Event};

use crate::roles::{AdminRequest, Message, RoleName};
use crate::schedd_service::ad_text;

#[derive(Serialize, Deserialize)]
struct Line {
    from: String,
    msg: Wire,
}

/// A submitter's requests: its name and its jobs, (cluster, proc, ad).
type WireSubmitter = (String, Vec<(i64, i64, String)>);

/// What a job after the first of its kept autocluster carries across:
/// what the cycle reads of each job alone (its id and its place in the
/// submitter's order). The rest is the first job's: alike in every
/// significant attribute. A hundred thousand idle jobs of a few
/// autoclusters cross as a few ads and a hundred thousand short lines,
/// not a hundred thousand whole ads at every cycle.
const OWN_ATTRIBUTES: [&str; 4] = ["ClusterId", "ProcId", "JobPrio", "QDate"];

/// One submitter's jobs as they cross: whole ads, except that a job
/// whose autocluster an earlier job of the list has (`ids`) carries only
/// [`OWN_ATTRIBUTES`], and `like` says which job (index + 1; 0: whole).
fn abridge(
    jobs: &[(JobId, Arc<ClassAd>)],
    ids: Option<&Vec<u32>>,
) -> (Vec<(i64, i64, String)>, Vec<u32>) {
    let ids = ids.filter(|i| i.len() == jobs.len());
    let mut first: std::collections::HashMap<u32, usize> = std::collections::HashMap::new();
    let mut like = Vec::new();
    let mut out = Vec::with_capacity(jobs.len());
    for (n, (id, a)) in jobs.iter().enumerate() {
        let rep = ids.map(|ids| *first.entry(ids[n]).or_insert(n));
        match rep {
            Some(r) if r != n => {
                let mut own = ClassAd::new();
                for name in OWN_ATTRIBUTES {
                    if let Some(e) = a.get(name) {
                        own.insert(name, e.clone());
                    }
                }
                out.push((id.cluster, id.proc, ad_text(&own)));
                like.push(r as u32 + 1);
            }
            _ => {
                out.push((id.cluster, id.proc, ad_text(a)));
                like.push(0);
            }
        }
    }
    if like.iter().all(|l| *l == 0) {
        like.clear();
    }
    (out, like)
}

/// The jobs back from [`abridge`]: an abridged job's ad is chained to the
/// whole ad of the job it is like.
fn unabridge(
    jobs: Vec<(i64, i64, String)>,
    like: &[u32],
) -> Result<Vec<(JobId, Arc<ClassAd>)>, String> {
    let mut out: Vec<(JobId, Arc<ClassAd>)> = Vec::with_capacity(jobs.len());
    for (n, (c, p, t)) in jobs.into_iter().enumerate() {
        let mut a = ad(&t)?;
        match like.get(n).copied().unwrap_or(0) {
            0 => {}
            l => {
                let whole = out
                    .get(l as usize - 1)
                    .filter(|_| (l as usize - 1) < n)
                    .ok_or_else(|| {
                        format!("job {c}.{p} is like job {l}, which is not before it")
                    })?;
                a.chain_to(Arc::clone(&whole.1));
            }
        }
        out.push((JobId::new(c, p), Arc::new(a)));
    }
    Ok(out)
}

#[derive(Serialize, Deserialize)]
struct WireMatch {
    cluster: i64,
    proc: i64,
    startd: String,
    slot: String,
    by_user_priority: bool,
    cost: f64,
    preempt_dynamic: Vec<String>,
    /// The slot's ParallelSchedulingGroup.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    group: Option<String>,
}

#[derive(Serialize, Deserialize)]
#[serde(tag = "how", rename_all = "snake_case")]
enum WireEnd {
    Code {
        code: i64,
    },
    Signal {
        signal: i64,
        core_file: Option<String>,
    },
    OutputFailed {
        reason: String,
        subcode: i64,
    },
    Evicted {
        reason: Option<String>,
    },
    OutOfMemory {
        reason: String,
    },
}

#[derive(Serialize, Deserialize)]
struct WireReport {
    remote_user_cpu: i64,
    remote_sys_cpu: i64,
    bytes_sent: f64,
    bytes_received: f64,
    resources: Option<String>,
    image_size_kib: Option<i64>,
    resident_set_size_kib: Option<i64>,
}

#[derive(Serialize, Deserialize)]
#[serde(tag = "m", rename_all = "snake_case")]
enum Wire {
    UpdateAds {
        kind: String,
        ads: Vec<String>,
    },
    InvalidateAds {
        kind: String,
        names: Vec<String>,
    },
    QuerySlots,
    SlotAds {
        ads: Vec<String>,
    },
    QuerySchedds,
    ScheddAds {
        ads: Vec<String>,
    },
    Reschedule,
    Negotiate {
        cycle: u64,
        #[serde(default)]
        significant: Vec<String>,
    },
    Requests {
        cycle: u64,
        #[serde(default)]
        schedd: String,
        submitters: Vec<WireSubmitter>,
        on_claims: Vec<String>,
        #[serde(default)]
        autoclusters: Option<crate::roles::ScheddAutoclusters>,
        /// Per submitter, [`abridge`]'s `like` (empty: every ad whole).
        #[serde(default)]
        like: Vec<Vec<u32>>,
    },
    Matches {
        matches: Vec<WireMatch>,
        /// Where each matched startd listens, by its name.
        #[serde(default)]
        startds: std::collections::BTreeMap<String, String>,
    },
    MatchInfo {
        slot: String,
    },
    RequestClaim {
        slot: String,
        claim_id: String,
        job: String,
        schedd: String,
        user: String,
        alive_interval: Option<i64>,
        by_user_priority: bool,
        preempt_dynamic: Vec<String>,
    },
    ActivateClaim {
        slot: String,
        claim_id: String,
        job: String,
    },
    ReleaseClaim {
        slot: String,
        claim_id: String,
    },
    Alive {
        claim_id: String,
    },
    /// condor_vacate_job: the schedd asks the job's machine to evict it.
    Vacate {
        slot: Option<String>,
        fast: bool,
    },
    ClaimGranted {
        slot: String,
        claim_id: String,
        schedd: String,
        slot_ad: Option<String>,
    },
    ClaimRefused {
        slot: String,
        claim_id: String,
        schedd: String,
        reason: String,
    },
    ClaimIdle {
        slot: String,
        claim_id: String,
        schedd: String,
        slot_ad: Option<String>,
        claimed_at: i64,
        worklife: Option<i64>,
    },
    ActivationRefused {
        slot: String,
        claim_id: String,
        schedd: String,
        reason: String,
    },
    ClaimEnded {
        slot: String,
        claim_id: String,
        schedd: String,
        reason: String,
    },
    /// The startd's answer to ALIVE.
    ClaimAlive {
        claim_id: String,
        schedd: String,
        alive: bool,
    },
    Started {
        claim_id: String,
        host: String,
        slot: String,
    },
    StartFailed {
        claim_id: String,
        reason: String,
        failure: String,
        /// HoldReasonSubCode; absent from older peers.
        #[serde(default)]
        subcode: i64,
    },
    Suspended {
        claim_id: String,
        num_pids: i64,
    },
    Unsuspended {
        claim_id: String,
    },
    Ended {
        claim_id: String,
        end: WireEnd,
        report: WireReport,
    },
    StopJob {
        claim_id: String,
        stop: String,
    },
    Charges {
        /// (submitter, claim id, cost) added; claim ids removed.
        added: Vec<(String, String, f64)>,
        removed: Vec<String>,
    },
    Admin {
        id: u64,
        request: AdminRequest,
    },
    AdminAnswer {
        id: u64,
        ok: Option<String>,
        refused: Option<(u16, String)>,
    },
}

pub fn role_named(name: &str) -> Option<RoleName> {
    [
        RoleName::Collector,
        RoleName::Negotiator,
        RoleName::Schedd,
        RoleName::Startd,
        RoleName::Defrag,
    ]
    .into_iter()
    .find(|r| r.daemon_name().eq_ignore_ascii_case(name))
}

fn ad(text: &str) -> Result<ClassAd, String> {
    ClassAd::parse(text).map_err(|e| format!("an ad that does not parse: {e}"))
}

fn ads(texts: Vec<String>) -> Result<Vec<ClassAd>, String> {
    texts.iter().map(|t| ad(t)).collect()
}

fn boxed(text: Option<String>) -> Result<Option<Box<ClassAd>>, String> {
    text.map(|t| ad(&t).map(Box::new)).transpose()
}

/// A message as one line (without its newline), or why it cannot travel.
pub fn encode(from: RoleName, msg: &Message) -> Result<String, String> {
    let text = |a: &ClassAd| ad_text(a);
    let w = match msg {
        Message::UpdateAds { kind, ads } => Wire::UpdateAds {
            kind: kind.my_type().to_string(),
            ads: ads.iter().map(text).collect(),
        },
        Message::InvalidateAds { kind, names } => Wire::InvalidateAds {
            kind: kind.my_type().to_string(),
            names: names.clone(),
        },
        Message::QuerySlots => Wire::QuerySlots,
        Message::QuerySchedds => Wire::QuerySchedds,
        Message::ScheddAds(a) => Wire::ScheddAds {
            ads: a.iter().map(text).collect(),
        },
        Message::SlotAds(a) => Wire::SlotAds {
            ads: a.iter().map(text).collect(),
        },
        Message::Reschedule => Wire::Reschedule,
        Message::Negotiate { cycle, significant } => Wire::Negotiate {
            cycle: *cycle,
            significant: significant.clone(),
        },
        Message::Requests {
            cycle,
            schedd,
            submitters,
            on_claims,
            autoclusters,
        } => {
            let mut like = Vec::new();
            let submitters = submitters
                .iter()
                .enumerate()
                .map(|(n, (who, jobs))| {
                    let ids = autoclusters.as_ref().and_then(|a| a.ids.get(n));
                    let (jobs, l) = abridge(jobs, ids);
                    like.push(l);
                    (who.clone(), jobs)
                })
                .collect();
            if like.iter().all(Vec::is_empty) {
                like.clear();
            }
            Wire::Requests {
                autoclusters: autoclusters.clone(),
                cycle: *cycle,
                schedd: schedd.clone(),
                submitters,
                on_claims: on_claims.iter().map(|a| text(a)).collect(),
                like,
            }
        }
        Message::Matches { matches, startds } => Wire::Matches {
            startds: startds.clone(),
            matches: matches
                .iter()
                .map(|m| WireMatch {
                    cluster: m.job.cluster,
                    proc: m.job.proc,
                    startd: m.startd.clone(),
                    slot: m.slot.clone(),
                    by_user_priority: m.by_user_priority,
                    cost: m.cost,
                    preempt_dynamic: m.preempt_dynamic.clone(),
                    group: m.group.clone(),
                })
                .collect(),
        },
        Message::MatchInfo { slot } => Wire::MatchInfo { slot: slot.clone() },
        Message::Startd(ev) => match ev {
            Event::RequestClaim { slot, request } => Wire::RequestClaim {
                slot: slot.clone(),
                claim_id: request.claim_id.clone(),
                job: text(&request.job),
                schedd: request.schedd.clone(),
                user: request.user.clone(),
                alive_interval: request.alive_interval,
                by_user_priority: request.by_user_priority,
                preempt_dynamic: request.preempt_dynamic.clone(),
            },
            Event::Activate {
                slot,
                claim_id,
                job,
            } => Wire::ActivateClaim {
                slot: slot.clone(),
                claim_id: claim_id.clone(),
                job: text(job),
            },
            Event::ReleaseClaim { slot, claim_id } => Wire::ReleaseClaim {
                slot: slot.clone(),
                claim_id: claim_id.clone(),
            },
            Event::KeepAlive { claim_id } => Wire::Alive {
                claim_id: claim_id.clone(),
            },
            Event::Matched { slot } => Wire::MatchInfo { slot: slot.clone() },
            Event::Vacate { slot, fast } => Wire::Vacate {
                slot: slot.clone(),
                fast: *fast,
            },
            other => return Err(format!("not a message between roles: {other:?}")),
        },
        Message::ClaimNews(a) => match a {
            Action::ClaimGranted {
                slot,
                claim_id,
                schedd,
                slot_ad,
            } => Wire::ClaimGranted {
                slot: slot.clone(),
                claim_id: claim_id.clone(),
                schedd: schedd.clone(),
                slot_ad: slot_ad.as_deref().map(text),
            },
            Action::ClaimRefused {
                slot,
                claim_id,
                schedd,
                reason,
            } => Wire::ClaimRefused {
                slot: slot.clone(),
                claim_id: claim_id.clone(),
                schedd: schedd.clone(),
                reason: reason.clone(),
            },
            Action::ClaimIdle {
                slot,
                claim_id,
                schedd,
                slot_ad,
                claimed_at,
                worklife,
            } => Wire::ClaimIdle {
                slot: slot.clone(),
                claim_id: claim_id.clone(),
                schedd: schedd.clone(),
                slot_ad: slot_ad.as_deref().map(text),
                claimed_at: *claimed_at,
                worklife: *worklife,
            },
            Action::ActivationRefused {
                slot,
                claim_id,
                schedd,
                reason,
            } => Wire::ActivationRefused {
                slot: slot.clone(),
                claim_id: claim_id.clone(),
                schedd: schedd.clone(),
                reason: reason.clone(),
            },
            Action::ClaimEnded {
                slot,
                claim_id,
                schedd,
                reason,
            } => Wire::ClaimEnded {
                slot: slot.clone(),
                claim_id: claim_id.clone(),
                schedd: schedd.clone(),
                reason: reason.clone(),
            },
            Action::ClaimAlive {
                claim_id,
                schedd,
                alive,
            } => Wire::ClaimAlive {
                claim_id: claim_id.clone(),
                schedd: schedd.clone(),
                alive: *alive,
            },
            other => return Err(format!("not a message between roles: {other:?}")),
        },
        Message::Starter(r) => match r {
            StarterReport::Started {
                claim_id,
                host,
                slot,
            } => Wire::Started {
                claim_id: claim_id.clone(),
                host: host.clone(),
                slot: slot.clone(),
            },
            StarterReport::StartFailed {
                claim_id,
                reason,
                failure,
                subcode,
            } => Wire::StartFailed {
                claim_id: claim_id.clone(),
                reason: reason.clone(),
                subcode: *subcode,
                failure: match failure {
                    StartFailure::Hook => "hook",
                    StartFailure::Input => "input",
                    StartFailure::Other => "other",
                }
                .into(),
            },
            StarterReport::Suspended { claim_id, num_pids } => Wire::Suspended {
                claim_id: claim_id.clone(),
                num_pids: *num_pids,
            },
            StarterReport::Unsuspended { claim_id } => Wire::Unsuspended {
                claim_id: claim_id.clone(),
            },
            StarterReport::Ended {
                claim_id,
                end,
                report,
            } => Wire::Ended {
                claim_id: claim_id.clone(),
                end: match end {
                    RunEnd::Exited(ExitHow::Code(code)) => WireEnd::Code { code: *code },
                    RunEnd::Exited(ExitHow::Signal { signal, core_file }) => WireEnd::Signal {
                        signal: *signal,
                        core_file: core_file.clone(),
                    },
                    RunEnd::OutputFailed { reason, subcode } => WireEnd::OutputFailed {
                        reason: reason.clone(),
                        subcode: *subcode,
                    },
                    RunEnd::Evicted { reason } => WireEnd::Evicted {
                        reason: reason.clone(),
                    },
                    RunEnd::OutOfMemory { reason } => WireEnd::OutOfMemory {
                        reason: reason.clone(),
                    },
                },
                report: WireReport {
                    remote_user_cpu: report.remote_user_cpu,
                    remote_sys_cpu: report.remote_sys_cpu,
                    bytes_sent: report.bytes_sent,
                    bytes_received: report.bytes_received,
                    resources: report.resources.as_ref().map(text),
                    image_size_kib: report.image_size_kib,
                    resident_set_size_kib: report.resident_set_size_kib,
                },
            },
        },
        Message::StopJob { claim_id, stop } => Wire::StopJob {
            claim_id: claim_id.clone(),
            stop: match stop {
                Stop::Hold => "hold",
                Stop::Remove => "remove",
            }
            .into(),
        },
        Message::Charges(cs) => {
            let (mut added, mut removed) = (Vec::new(), Vec::new());
            for c in cs {
                match c {
                    Charge::Add {
                        submitter,
                        claim_id,
                        cost,
                    } => added.push((submitter.clone(), claim_id.clone(), *cost)),
                    Charge::Remove { claim_id } => removed.push(claim_id.clone()),
                }
            }
            Wire::Charges { added, removed }
        }
        Message::Admin { id, request } => Wire::Admin {
            id: *id,
            request: request.clone(),
        },
        Message::AdminAnswer { id, answer } => Wire::AdminAnswer {
            id: *id,
            ok: answer.as_ref().ok().cloned(),
            refused: answer.as_ref().err().cloned(),
        },
    };
    serde_json::to_string(&Line {
        from: from.daemon_name().to_string(),
        msg: w,
    })
    .map_err(|e| e.to_string())
}

/// A line back into the message it carries, and who sent it.
pub fn decode(line: &str) -> Result<(RoleName, Message), String> {
    let l: Line = serde_json::from_str(line).map_err(|e| format!("a malformed message: {e}"))?;
    let from = role_named(&l.from).ok_or_else(|| format!("from an unknown role {}", l.from))?;
    let msg = match l.msg {
        Wire::UpdateAds { kind, ads: a } => Message::UpdateAds {
            kind: AdType::from_my_type(&kind),
            ads: ads(a)?,
        },
        Wire::InvalidateAds { kind, names } => Message::InvalidateAds {
            kind: AdType::from_my_type(&kind),
            names,
        },
        Wire::QuerySlots => Message::QuerySlots,
        Wire::QuerySchedds => Message::QuerySchedds,
        Wire::ScheddAds { ads: a } => Message::ScheddAds(ads(a)?),
        Wire::SlotAds { ads: a } => Message::SlotAds(ads(a)?),
        Wire::Reschedule => Message::Reschedule,
        Wire::Negotiate { cycle, significant } => Message::Negotiate { cycle, significant },
        Wire::Requests {
            cycle,
            schedd,
            submitters,
            on_claims,
            mut autoclusters,
            like,
        } => {
            let mut subs = Vec::new();
            for (n, (who, jobs)) in submitters.into_iter().enumerate() {
                let l = like.get(n).map(Vec::as_slice).unwrap_or(&[]);
                subs.push((who, unabridge(jobs, l)?));
            }
            if let Some(a) = autoclusters.as_mut() {
                a.abridged = like.iter().any(|l| l.iter().any(|x| *x != 0));
            }
            Message::Requests {
                cycle,
                schedd,
                submitters: subs,
                on_claims: ads(on_claims)?.into_iter().map(Arc::new).collect(),
                autoclusters,
            }
        }
        Wire::Matches { matches, startds } => Message::Matches {
            matches: matches
                .into_iter()
                .map(|m| MatchInfo {
                    job: JobId::new(m.cluster, m.proc),
                    startd: m.startd,
                    slot: m.slot,
                    by_user_priority: m.by_user_priority,
                    cost: m.cost,
                    preempt_dynamic: m.preempt_dynamic,
                    group: m.group,
                })
                .collect(),
            startds,
        },
        Wire::MatchInfo { slot } => Message::MatchInfo { slot },
        Wire::RequestClaim {
            slot,
            claim_id,
            job,
            schedd,
            user,
            alive_interval,
            by_user_priority,
            preempt_dynamic,
        } => Message::Startd(Event::RequestClaim {
            slot,
            request: Box::new(ClaimRequest {
                claim_id,
                job: ad(&job)?,
                schedd,
                user,
                alive_interval,
                by_user_priority,
                preempt_dynamic,
            }),
        }),
        Wire::ActivateClaim {
            slot,
            claim_id,
            job,
        } => Message::Startd(Event::Activate {
            slot,
            claim_id,
            job: Box::new(ad(&job)?),
        }),
        Wire::ReleaseClaim { slot, claim_id } => {
            Message::Startd(Event::ReleaseClaim { slot, claim_id })
        }
        Wire::Alive { claim_id } => Message::Startd(Event::KeepAlive { claim_id }),
        Wire::Vacate { slot, fast } => Message::Startd(Event::Vacate { slot, fast }),
        Wire::ClaimGranted {
            slot,
            claim_id,
            schedd,
            slot_ad,
        } => Message::ClaimNews(Action::ClaimGranted {
            slot,
            claim_id,
            schedd,
            slot_ad: boxed(slot_ad)?,
        }),
        Wire::ClaimRefused {
            slot,
            claim_id,
            schedd,
            reason,
        } => Message::ClaimNews(Action::ClaimRefused {
            slot,
            claim_id,
            schedd,
            reason,
        }),
        Wire::ClaimIdle {
            slot,
            claim_id,
            schedd,
            slot_ad,
            claimed_at,
            worklife,
        } => Message::ClaimNews(Action::ClaimIdle {
            slot,
            claim_id,
            schedd,
            slot_ad: boxed(slot_ad)?,
            claimed_at,
            worklife,
        }),
        Wire::ActivationRefused {
            slot,
            claim_id,
            schedd,
            reason,
        } => Message::ClaimNews(Action::ActivationRefused {
            slot,
            claim_id,
            schedd,
            reason,
        }),
        Wire::ClaimEnded {
            slot,
            claim_id,
            schedd,
            reason,
        } => Message::ClaimNews(Action::ClaimEnded {
            slot,
            claim_id,
            schedd,
            reason,
        }),
        Wire::ClaimAlive {
            claim_id,
            schedd,
            alive,
        } => Message::ClaimNews(Action::ClaimAlive {
            claim_id,
            schedd,
            alive,
        }),
        Wire::Started {
            claim_id,
            host,
            slot,
        } => Message::Starter(StarterReport::Started {
            claim_id,
            host,
            slot,
        }),
        Wire::StartFailed {
            claim_id,
            reason,
            failure,
            subcode,
        } => Message::Starter(StarterReport::StartFailed {
            claim_id,
            reason,
            subcode,
            failure: match failure.as_str() {
                "hook" => StartFailure::Hook,
                "input" => StartFailure::Input,
                _ => StartFailure::Other,
            },
        }),
        Wire::Suspended { claim_id, num_pids } => {
            Message::Starter(StarterReport::Suspended { claim_id, num_pids })
        }
        Wire::Unsuspended { claim_id } => Message::Starter(StarterReport::Unsuspended { claim_id }),
        Wire::Ended {
            claim_id,
            end,
            report,
        } => Message::Starter(StarterReport::Ended {
            claim_id,
            end: match end {
                WireEnd::Code { code } => RunEnd::Exited(ExitHow::Code(code)),
                WireEnd::Signal { signal, core_file } => {
                    RunEnd::Exited(ExitHow::Signal { signal, core_file })
                }
                WireEnd::OutputFailed { reason, subcode } => {
                    RunEnd::OutputFailed { reason, subcode }
                }
                WireEnd::Evicted { reason } => RunEnd::Evicted { reason },
                WireEnd::OutOfMemory { reason } => RunEnd::OutOfMemory { reason },
            },
            report: RunReport {
                remote_user_cpu: report.remote_user_cpu,
                remote_sys_cpu: report.remote_sys_cpu,
                bytes_sent: report.bytes_sent,
                bytes_received: report.bytes_received,
                resources: report.resources.map(|t| ad(&t)).transpose()?,
                image_size_kib: report.image_size_kib,
                resident_set_size_kib: report.resident_set_size_kib,
            },
        }),
        Wire::StopJob { claim_id, stop } => Message::StopJob {
            claim_id,
            stop: match stop.as_str() {
                "hold" => Stop::Hold,
                _ => Stop::Remove,
            },
        },
        Wire::Admin { id, request } => Message::Admin { id, request },
        Wire::AdminAnswer { id, ok, refused } => Message::AdminAnswer {
            id,
            answer: match (ok, refused) {
                (Some(ok), _) => Ok(ok),
                (None, Some(r)) => Err(r),
                (None, None) => Err((500, "an answer with nothing in it".into())),
            },
        },
        Wire::Charges { added, removed } => Message::Charges(
            added
                .into_iter()
                .map(|(submitter, claim_id, cost)| Charge::Add {
                    submitter,
                    claim_id,
                    cost,
                })
                .chain(
                    removed
                        .into_iter()
                        .map(|claim_id| Charge::Remove { claim_id }),
                )
                .collect(),
        ),
    };
    Ok((from, msg))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(msg: Message) -> Message {
        let line = encode(RoleName::Schedd, &msg).unwrap();
        assert!(!line.contains('\n'), "one line: {line}");
        let (from, back) = decode(&line).unwrap();
        assert_eq!(from, RoleName::Schedd);
        back
    }

    #[test]
    fn a_claim_request_travels_with_its_job_ad_intact() {
        let job = ClassAd::parse("[ ClusterId = 3; ProcId = 1; Requirements = TARGET.Memory >= 64 && \"x\\ny\" != \"\"; Env = \"A=1\" ]").unwrap();
        let msg = Message::Startd(Event::RequestClaim {
            slot: "slot1".into(),
            request: Box::new(ClaimRequest {
                claim_id: "<h>#1#2".into(),
                job: job.clone(),
                schedd: "h".into(),
                user: "alice@pool".into(),
                alive_interval: Some(300),
                by_user_priority: true,
                preempt_dynamic: vec!["slot1_1".into()],
            }),
        });
        let Message::Startd(Event::RequestClaim { slot, request }) = round_trip(msg) else {
            panic!("not a claim request");
        };
        assert_eq!(slot, "slot1");
        assert_eq!(request.claim_id, "<h>#1#2");
        assert_eq!(ad_text(&request.job), ad_text(&job));
        assert!(request.by_user_priority);
        assert_eq!(request.preempt_dynamic, vec!["slot1_1".to_string()]);
    }

    #[test]
    fn a_schedd_s_requests_travel_with_their_kept_autoclusters_abridged() {
        let job = |p: i64, memory: i64| {
            Arc::new(
                ClassAd::parse(&format!(
                    "[ ClusterId = 4; ProcId = {p}; QDate = 100; RequestMemory = {memory}; \
                     Cmd = \"/bin/sleep\"; Arguments = \"{p}\"; Environment = \"A=1 B=2\" ]"
                ))
                .unwrap(),
            )
        };
        let jobs: Vec<(JobId, Arc<ClassAd>)> = [(0, 64), (1, 64), (2, 128), (3, 64)]
            .into_iter()
            .map(|(p, m)| (JobId::new(4, p), job(p, m)))
            .collect();
        let kept = crate::roles::ScheddAutoclusters {
            names: vec!["RequestMemory".into(), "Requirements".into()],
            ids: vec![vec![7, 7, 8, 7]],
            abridged: false,
        };
        let requests = |autoclusters| Message::Requests {
            cycle: 3,
            schedd: "ap".into(),
            submitters: vec![("alice@pool".into(), jobs.clone())],
            on_claims: Vec::new(),
            autoclusters,
        };
        let whole = encode(RoleName::Schedd, &requests(None)).unwrap();
        let short = encode(RoleName::Schedd, &requests(Some(kept.clone()))).unwrap();
        assert!(short.len() < whole.len(), "{short}");
        let Message::Requests {
            submitters,
            autoclusters,
            ..
        } = decode(&short).unwrap().1
        else {
            panic!("not requests");
        };
        let got = autoclusters.expect("the ids");
        assert!(got.abridged);
        assert_eq!((got.names, got.ids), (kept.names.clone(), kept.ids.clone()));
        // Each job has its own id and sort keys, and what its autocluster
        // shares; jobs 1 and 3 take the rest from job 0, not their own.
        let env = classad::Env::at(0);
        for (n, (id, ad)) in submitters[0].1.iter().enumerate() {
            assert_eq!(*id, jobs[n].0);
            for name in ["ClusterId", "ProcId", "QDate", "RequestMemory", "Cmd"] {
                assert_eq!(
                    format!("{:?}", ad.eval_attr(name, &env)),
                    format!("{:?}", jobs[n].1.eval_attr(name, &env)),
                    "job {n}: {name}"
                );
            }
            let whole = matches!(n, 0 | 2);
            assert_eq!(ad.parent().is_none(), whole, "job {n}");
        }
        // Without ids every ad crosses whole.
        let Message::Requests {
            submitters,
            autoclusters,
            ..
        } = decode(&whole).unwrap().1
        else {
            panic!("not requests");
        };
        assert_eq!(autoclusters, None);
        assert!(submitters[0].1.iter().all(|(_, a)| a.parent().is_none()));
        // A schedd of before kept autoclusters sends none: still read.
        let line = encode(
            RoleName::Schedd,
            &Message::Requests {
                cycle: 1,
                schedd: "ap".into(),
                submitters: Vec::new(),
                on_claims: Vec::new(),
                autoclusters: None,
            },
        )
        .unwrap()
        .replace(r#","autoclusters":null"#, "")
        .replace(r#","like":[]"#, "");
        assert!(!line.contains("autoclusters"), "{line}");
        let Message::Requests { autoclusters, .. } = decode(&line).unwrap().1 else {
            panic!("not requests");
        };
        assert_eq!(autoclusters, None);
    }

    #[test]
    fn a_keep_alive_s_answer_and_a_match_s_startd_addresses_travel() {
        for alive in [true, false] {
            let msg = Message::ClaimNews(startd::Action::ClaimAlive {
                claim_id: "<h>#1#2".into(),
                schedd: "ap".into(),
                alive,
            });
            let Message::ClaimNews(startd::Action::ClaimAlive {
                claim_id,
                schedd,
                alive: back,
            }) = round_trip(msg)
            else {
                panic!("not an answer to ALIVE");
            };
            assert_eq!(
                (claim_id.as_str(), schedd.as_str(), back),
                ("<h>#1#2", "ap", alive)
            );
        }
        let msg = Message::Matches {
            matches: Vec::new(),
            startds: [("ep1@h".to_string(), "<10.0.0.3:9618>".to_string())].into(),
        };
        let Message::Matches { startds, .. } = round_trip(msg) else {
            panic!("not matches");
        };
        assert_eq!(startds["ep1@h"], "<10.0.0.3:9618>");
    }

    #[test]
    fn a_failed_start_travels_with_its_subcode_and_old_peers_still_parse() {
        let msg = Message::Starter(StarterReport::StartFailed {
            claim_id: "<h>#1#2".into(),
            reason: "plugin failed".into(),
            failure: StartFailure::Input,
            subcode: 3 << 8,
        });
        let line = encode(RoleName::Startd, &msg).unwrap();
        let Message::Starter(StarterReport::StartFailed {
            failure, subcode, ..
        }) = decode(&line).unwrap().1
        else {
            panic!("not a failed start");
        };
        assert_eq!((failure.hold_code().0, subcode), (13, 768));
        // A peer from before the subcode sends none: 0.
        let old = line.replace(",\"subcode\":768", "");
        assert_ne!(old, line, "{line}");
        let Message::Starter(StarterReport::StartFailed { subcode, .. }) = decode(&old).unwrap().1
        else {
            panic!("not a failed start");
        };
        assert_eq!(subcode, 0);
    }

    #[test]
    fn a_vacate_travels_with_its_slot_and_speed() {
        let msg = Message::Startd(Event::Vacate {
            slot: Some("slot1_2".into()),
            fast: true,
        });
        let Message::Startd(Event::Vacate { slot, fast }) = round_trip(msg) else {
            panic!("not a vacate");
        };
        assert_eq!((slot.as_deref(), fast), (Some("slot1_2"), true));
    }

    #[test]
    fn a_run_s_end_travels_with_its_report() {
        let msg = Message::Starter(StarterReport::Ended {
            claim_id: "c".into(),
            end: RunEnd::Exited(ExitHow::Signal {
                signal: 9,
                core_file: None,
            }),
            report: RunReport {
                remote_user_cpu: 12,
                image_size_kib: Some(2048),
                resources: Some(ClassAd::parse("[ Cpus = 1; CpusUsage = 0.5 ]").unwrap()),
                ..RunReport::default()
            },
        });
        let Message::Starter(StarterReport::Ended { end, report, .. }) = round_trip(msg) else {
            panic!("not an end");
        };
        assert_eq!(
            end,
            RunEnd::Exited(ExitHow::Signal {
                signal: 9,
                core_file: None
            })
        );
        assert_eq!(report.remote_user_cpu, 12);
        assert_eq!(report.image_size_kib, Some(2048));
        assert!(report.resources.is_some());
        let oom = RunEnd::OutOfMemory {
            reason: "Job has gone over cgroup memory limit of 64 megabytes.".into(),
        };
        let msg = Message::Starter(StarterReport::Ended {
            claim_id: "c".into(),
            end: oom.clone(),
            report: RunReport::default(),
        });
        let Message::Starter(StarterReport::Ended { end, .. }) = round_trip(msg) else {
            panic!("not an end");
        };
        assert_eq!(end, oom);
    }

    #[test]
    fn a_tool_s_request_and_its_answer_travel() {
        let msg = Message::Admin {
            id: 7,
            request: AdminRequest::Ads {
                ad_type: Some("Scheduler".into()),
            },
        };
        let Message::Admin {
            id: 7,
            request: AdminRequest::Ads { ad_type },
        } = round_trip(msg)
        else {
            panic!("not the request");
        };
        assert_eq!(ad_type.as_deref(), Some("Scheduler"));
        let refused = Message::AdminAnswer {
            id: 8,
            answer: Err((400, "no".into())),
        };
        let Message::AdminAnswer { id: 8, answer } = round_trip(refused) else {
            panic!("not the answer");
        };
        assert_eq!(answer, Err((400, "no".to_string())));
    }

    #[test]
    fn bad_lines_are_refused_with_a_reason() {
        assert!(decode("not json").unwrap_err().contains("malformed"));
        assert!(decode(r#"{"from":"NOBODY","msg":{"m":"reschedule"}}"#)
            .unwrap_err()
            .contains("unknown role"));
        assert!(
            decode(r#"{"from":"SCHEDD","msg":{"m":"slot_ads","ads":["[ a = ]"]}}"#)
                .unwrap_err()
                .contains("does not parse")
        );
    }
}
