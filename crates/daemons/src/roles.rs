//! The pool's roles and the messages between them.
//!
//! A pool is four roles, as HTCondor's daemons: the collector (the ads),
//! the negotiator (matchmaking and the accountant), the schedd (the job
//! queue and its claims) and the startd (the execute point and its
//! starters). Each role is a struct that owns its state and nothing else;
//! roles talk only by [`Message`]s, modelled on HTCondor's conversations
//! so that the wire protocol can carry them as they are:
//!
//! | message | HTCondor's | from → to |
//! | --- | --- | --- |
//! | [`Message::UpdateAds`], [`Message::InvalidateAds`] | UPDATE_STARTD_AD, UPDATE_SCHEDD_AD, UPDATE_SUBMITTOR_AD, INVALIDATE_*_ADS | startd, schedd → collector |
//! | [`Message::QuerySlots`], [`Message::SlotAds`] | QUERY_STARTD_ADS and its answer | negotiator → collector → negotiator |
//! | [`Message::QuerySchedds`], [`Message::ScheddAds`] | QUERY_SCHEDD_ADS and its answer | negotiator → collector → negotiator |
//! | [`Message::Reschedule`] | RESCHEDULE | schedd → negotiator |
//! | [`Message::Negotiate`], [`Message::Requests`] | NEGOTIATE and the schedd's job requests | negotiator → schedd → negotiator |
//! | [`Message::Matches`] | PERMISSION_AND_AD | negotiator → schedd |
//! | [`Message::MatchInfo`] | MATCH_INFO | negotiator → startd |
//! | [`Message::Startd`] | REQUEST_CLAIM, ACTIVATE_CLAIM, ALIVE, RELEASE_CLAIM | schedd → startd |
//! | [`Message::ClaimNews`] | the startd's answers, and its word that a claim ended | startd → schedd |
//! | [`Message::Starter`] | the starter's job updates and final update to the shadow | startd → schedd |
//! | [`Message::StopJob`] | the shadow telling its starter to hold or remove the job | schedd → startd |
//! | [`Message::Charges`] | (ferrocondor's: the accountant hears of claims granted and ended) | schedd → negotiator |
//!
//! Every role runs on a thread of its own ([`spawn`]): messages for it
//! wait in its inbox, its timers fire there, and the tools' requests reach
//! it as calls in the same inbox ([`RoleHandle::call`]). No lock is shared
//! between roles, and what one role does (a disk sync, a negotiation
//! cycle) never holds up another, nor the thread that serves requests.
//! The [`Router`] is the in-process transport of the personal pool; the
//! same messages are what a network transport carries between hosts.

use std::collections::BTreeMap;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use classad::ClassAd;
use negotiator::collector::AdType;
use schedd::claims::{Charge, MatchInfo as Match, StarterReport, Stop};
use schedd::JobId;

use crate::execute::Work;

/// The roles of a pool.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RoleName {
    Collector,
    Negotiator,
    Schedd,
    Startd,
    /// The defrag daemon (`defrag_role`): a client of the pool that takes
    /// no role messages, run by the master as the others are.
    Defrag,
}

impl RoleName {
    /// As `DAEMON_LIST` names it.
    pub fn daemon_name(self) -> &'static str {
        match self {
            RoleName::Collector => "COLLECTOR",
            RoleName::Negotiator => "NEGOTIATOR",
            RoleName::Schedd => "SCHEDD",
            RoleName::Startd => "STARTD",
            RoleName::Defrag => "DEFRAG",
        }
    }
}

/// Where a message goes: a role, and which daemon of it where a pool has
/// several (its name: a startd's `STARTD_NAME`, slot ads' `slot1@NAME`; a
/// schedd's `SCHEDD_NAME`), and, where the sender knows it, the address
/// that daemon listens at. A message without a name goes to the pool's
/// one daemon of the role (the collector, the negotiator), or to the one
/// it was last heard from.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Dest {
    pub role: RoleName,
    pub name: Option<String>,
    pub at: Option<String>,
}

impl Dest {
    /// The role's daemon, not named.
    pub fn role(role: RoleName) -> Dest {
        Dest {
            role,
            name: None,
            at: None,
        }
    }

    /// The daemon of `role` named `name`, found where it is known to be.
    pub fn named(role: RoleName, name: &str) -> Dest {
        Dest {
            role,
            name: Some(name.to_string()),
            at: None,
        }
    }

    /// The daemon of `role` named `name`, which listens at `at` when the
    /// sender has not heard from it since.
    pub fn at(role: RoleName, name: &str, at: Option<&str>) -> Dest {
        Dest {
            role,
            name: Some(name.to_string()),
            at: at.map(str::to_string),
        }
    }
}

impl From<RoleName> for Dest {
    fn from(role: RoleName) -> Dest {
        Dest::role(role)
    }
}

/// A schedd's request for one submitter: its name and its idle jobs, in
/// its order.
pub type SubmitterRequest = (String, Vec<(JobId, Arc<ClassAd>)>);

/// The autoclusters a schedd keeps for its idle jobs (HTCondor's
/// `AutoClusterId`): for each submitter of its requests, each job's id,
/// and the names the ids were made over
/// ([`negotiator::autocluster_ids::AutoclusterIds`]).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ScheddAutoclusters {
    pub names: Vec<String>,
    pub ids: Vec<Vec<u32>>,
    /// The requests came from another host abridged: a job after the
    /// first of its autocluster carries only what the cycle reads of it
    /// alone (ids, sort keys), the rest from that first job's ad. Such
    /// jobs are only as good as the ids: a cycle that cannot use them
    /// must ask again ([`crate::negotiator_role`]).
    #[serde(skip)]
    pub abridged: bool,
}

/// A message from one role to another.
#[derive(Debug)]
pub enum Message {
    /// Ads for the collector to hold (each replaces the one of its name).
    UpdateAds { kind: AdType, ads: Vec<ClassAd> },
    /// Ads, by name, that are gone.
    InvalidateAds { kind: AdType, names: Vec<String> },
    /// The negotiator asks for the slot ads.
    QuerySlots,
    /// The collector's answer to [`Message::QuerySlots`].
    SlotAds(Vec<ClassAd>),
    /// The negotiator asks for the schedds' ads (whom to negotiate with).
    QuerySchedds,
    /// The collector's answer to [`Message::QuerySchedds`].
    ScheddAds(Vec<ClassAd>),
    /// Idle jobs may have somewhere to run: a cycle soon, please.
    Reschedule,
    /// The negotiator asks a schedd for its requests (cycle number), with
    /// the names its last cycle told jobs apart by (empty before its first
    /// cycle), for the schedd to file its jobs' autoclusters against.
    Negotiate {
        cycle: u64,
        significant: Vec<String>,
    },
    /// A schedd's requests: each submitter's idle jobs in its order, and
    /// the jobs its claims hold (for the concurrency limits in use).
    Requests {
        cycle: u64,
        /// The schedd's name.
        schedd: String,
        submitters: Vec<SubmitterRequest>,
        on_claims: Vec<Arc<ClassAd>>,
        /// Its jobs' autoclusters, once the negotiator has said what is
        /// significant.
        autoclusters: Option<ScheddAutoclusters>,
    },
    /// Matches for a schedd's jobs, and where each matched startd listens
    /// (by the startd's name: its slot ads' `MyAddress`), which the schedd
    /// claims the slots at.
    Matches {
        matches: Vec<Match>,
        startds: BTreeMap<String, String>,
    },
    /// The negotiator tells a startd that one of its slots was matched.
    MatchInfo { slot: String },
    /// A schedd's claim message for a startd.
    Startd(startd::Event),
    /// What a startd says about a schedd's claim.
    ClaimNews(startd::Action),
    /// What a starter says about the job it runs.
    Starter(StarterReport),
    /// The schedd stops a running job (it was held or removed).
    StopJob { claim_id: String, stop: Stop },
    /// Claims granted and ended, for the accountant.
    Charges(Vec<Charge>),
    /// A tool's administrative request, carried by the schedd (which
    /// serves the tools) to the role that answers it.
    Admin { id: u64, request: AdminRequest },
    /// Its answer: the JSON of the role's answer, or the refusal.
    AdminAnswer { id: u64, answer: AdminReply },
}

/// What a tool may ask of a role other than the schedd.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
#[serde(tag = "ask", rename_all = "snake_case")]
pub enum AdminRequest {
    /// The collector's ads of a type (`condor_status`), as ad texts.
    Ads { ad_type: Option<String> },
    /// `condor_vacate`, `condor_drain` for the startd.
    Startd { command: wire::api::StartdCommand },
    /// `condor_userprio` for the negotiator.
    Userprio { request: wire::api::UserprioRequest },
}

/// A role's answer to a tool's request: its JSON, or (status, why) it
/// refused.
pub type AdminReply = Result<String, (u16, String)>;

/// The tools' requests waiting for another process's role to answer.
#[derive(Default)]
pub struct Answers {
    next: std::sync::atomic::AtomicU64,
    waiting:
        std::sync::Mutex<std::collections::HashMap<u64, tokio::sync::oneshot::Sender<AdminReply>>>,
}

impl Answers {
    /// A new request's id, and where its answer will come.
    pub fn wait(&self) -> (u64, tokio::sync::oneshot::Receiver<AdminReply>) {
        let id = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.waiting
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id, tx);
        (id, rx)
    }

    /// Gives up waiting for `id`.
    pub fn forget(&self, id: u64) {
        self.waiting
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&id);
    }

    fn answered(&self, id: u64, answer: AdminReply) {
        let tx = self
            .waiting
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&id);
        if let Some(tx) = tx {
            let _ = tx.send(answer);
        }
    }
}

impl Message {
    /// The HTCondor command this message is (its number and name, from
    /// HTCondor's `condor_commands.h`), which the wire protocol will send
    /// it as; `None` for a reply within a conversation or a message of
    /// ferrocondor's own.
    pub fn htcondor_command(&self) -> Option<(u32, &'static str)> {
        Some(match self {
            Message::UpdateAds { kind, .. } => match kind {
                AdType::Startd => (0, "UPDATE_STARTD_AD"),
                AdType::Schedd => (1, "UPDATE_SCHEDD_AD"),
                AdType::Submitter => (11, "UPDATE_SUBMITTOR_AD"),
                _ => return None,
            },
            Message::InvalidateAds { kind, .. } => match kind {
                AdType::Startd => (13, "INVALIDATE_STARTD_ADS"),
                AdType::Schedd => (14, "INVALIDATE_SCHEDD_ADS"),
                AdType::Submitter => (18, "INVALIDATE_SUBMITTOR_ADS"),
                _ => return None,
            },
            Message::QuerySlots => (5, "QUERY_STARTD_ADS"),
            Message::QuerySchedds => (6, "QUERY_SCHEDD_ADS"),
            Message::Reschedule => (421, "RESCHEDULE"),
            Message::Negotiate { .. } => (416, "NEGOTIATE"),
            Message::Matches { .. } => (472, "PERMISSION_AND_AD"),
            Message::MatchInfo { .. } => (440, "MATCH_INFO"),
            Message::Startd(ev) => match ev {
                startd::Event::RequestClaim { .. } => (442, "REQUEST_CLAIM"),
                startd::Event::ReleaseClaim { .. } => (443, "RELEASE_CLAIM"),
                startd::Event::Activate { .. } => (444, "ACTIVATE_CLAIM"),
                startd::Event::KeepAlive { .. } => (441, "ALIVE"),
                startd::Event::Matched { .. } => (440, "MATCH_INFO"),
                _ => return None,
            },
            _ => return None,
        })
    }
}

/// One role's update to the collector of its ads of one kind: the ads, and
/// before them an invalidation of the ones its last update had that are
/// gone (`published` keeps the names from one update to the next).
pub fn advertise(
    kind: AdType,
    ads: Vec<ClassAd>,
    published: &mut std::collections::BTreeSet<String>,
) -> Vec<Message> {
    let names: std::collections::BTreeSet<String> = ads
        .iter()
        .filter_map(|a| crate::schedd_service::literal_str(a, "Name"))
        .collect();
    let gone: Vec<String> = published.difference(&names).cloned().collect();
    *published = names;
    let mut out = Vec::new();
    if !gone.is_empty() {
        out.push(Message::InvalidateAds {
            kind: kind.clone(),
            names: gone,
        });
    }
    out.push(Message::UpdateAds { kind, ads });
    out
}

/// What a role's step asks for: messages to send, work to start (the
/// startd's starters and hooks), lines for the daemon's log.
#[derive(Default)]
pub struct Outbox {
    pub messages: Vec<(Dest, Message)>,
    pub work: Vec<Work>,
    pub notes: Vec<String>,
}

impl Outbox {
    pub fn send(&mut self, to: impl Into<Dest>, msg: Message) {
        self.messages.push((to.into(), msg));
    }

    pub fn note(&mut self, note: impl Into<String>) {
        self.notes.push(note.into());
    }

    /// Answers a tool's request `id` from `to`: the answer's JSON, or
    /// (status, why) it is refused.
    pub fn answer<T: serde::Serialize>(
        &mut self,
        to: RoleName,
        id: u64,
        answer: Result<T, (u16, String)>,
    ) {
        let answer =
            answer.and_then(|a| serde_json::to_string(&a).map_err(|e| (500, e.to_string())));
        self.send(to, Message::AdminAnswer { id, answer });
    }

    /// A message role `me` does not take: a tool's request is refused to
    /// its asker, anything else goes to the log.
    pub fn unexpected(&mut self, me: RoleName, from: RoleName, msg: Message) {
        let me = me.daemon_name().to_lowercase();
        match msg {
            Message::Admin { id, .. } => self.answer::<()>(
                from,
                id,
                Err((400, format!("the {me} does not answer that"))),
            ),
            other => self.note(format!("{me}: unexpected message from {from:?}: {other:?}")),
        }
    }
}

/// A role: a state machine over messages, timers and `now`.
pub trait Role: Send + 'static {
    const NAME: RoleName;

    /// A message from another role.
    fn receive(&mut self, from: RoleName, msg: Message, now: i64, out: &mut Outbox);

    /// Its timers: each one's period in seconds and whether it fires at
    /// once as well.
    fn timers(&self) -> Vec<(u64, bool)>;

    /// Timer `which` (an index into [`Role::timers`]) fired.
    fn timer(&mut self, which: usize, now: i64, out: &mut Outbox);
}

/// A call on a role from outside the roles (a tool's request, a job's
/// process that exited): run on the role's thread, with its outbox; what
/// it returns is run once the outbox is carried out (the caller's answer,
/// so a caller that is answered knows the messages went first).
pub type Call<R> = Box<dyn FnOnce(&mut R, i64, &mut Outbox) -> Reply + Send>;

/// What a call does once its role's outbox is carried out.
pub type Reply = Box<dyn FnOnce() + Send>;

enum Envelope<R> {
    Message(RoleName, Message),
    Call(Call<R>),
    Stop,
}

/// Where a role's inbox is.
pub struct RoleHandle<R: Role> {
    tx: mpsc::Sender<Envelope<R>>,
}

impl<R: Role> Clone for RoleHandle<R> {
    fn clone(&self) -> Self {
        RoleHandle {
            tx: self.tx.clone(),
        }
    }
}

impl<R: Role> RoleHandle<R> {
    /// Puts `f` in the role's inbox; `answer` gets its result once the
    /// role's outbox is carried out.
    fn post<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut R, i64, &mut Outbox) -> T + Send + 'static,
        answer: impl FnOnce(T) + Send + 'static,
    ) -> Result<(), RoleGone> {
        let call: Call<R> = Box::new(move |r, now, out| {
            let t = f(r, now, out);
            Box::new(move || answer(t))
        });
        self.tx
            .send(Envelope::Call(call))
            .map_err(|_| RoleGone::Stopped(R::NAME))
    }

    /// Runs `f` on the role's thread; its answer comes back when it has
    /// run (the role's outbox is carried out first).
    pub async fn call<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut R, i64, &mut Outbox) -> T + Send + 'static,
    ) -> Result<T, RoleGone> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.post(f, move |t| {
            let _ = tx.send(t);
        })?;
        rx.await.map_err(|_| RoleGone::Stopped(R::NAME))
    }

    /// As [`RoleHandle::call`], from a thread that may block.
    pub fn call_blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut R, i64, &mut Outbox) -> T + Send + 'static,
    ) -> Result<T, RoleGone> {
        let (tx, rx) = mpsc::channel();
        self.post(f, move |t| {
            let _ = tx.send(t);
        })?;
        rx.recv().map_err(|_| RoleGone::Stopped(R::NAME))
    }

    /// As [`RoleHandle::call_blocking`], with `then` run on the role's
    /// thread after the answer has gone back (and before the role takes
    /// anything else from its inbox): work the caller need not wait for.
    pub fn call_blocking_then<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut R, i64, &mut Outbox) -> T + Send + 'static,
        then: impl FnOnce(&mut R, i64, &mut Outbox) + Send + 'static,
    ) -> Result<T, RoleGone> {
        let (tx, rx) = mpsc::channel();
        self.post(
            move |r, now, out| {
                let _ = tx.send(f(r, now, out));
                then(r, now, out);
            },
            |()| {},
        )?;
        rx.recv().map_err(|_| RoleGone::Stopped(R::NAME))
    }

    /// Puts a message in the role's inbox.
    pub fn deliver(&self, from: RoleName, msg: Message) {
        let _ = self.tx.send(Envelope::Message(from, msg));
    }

    /// Asks the role's thread to finish (after what is already in its inbox).
    pub fn stop(&self) {
        let _ = self.tx.send(Envelope::Stop);
    }
}

/// A role's thread has ended (the pool is going down), or the role runs
/// in another process.
#[derive(Debug)]
pub enum RoleGone {
    Stopped(RoleName),
    Elsewhere(RoleName),
}

impl std::fmt::Display for RoleGone {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RoleGone::Stopped(r) => write!(f, "the {} has stopped", r.daemon_name().to_lowercase()),
            RoleGone::Elsewhere(r) => write!(
                f,
                "the {} runs in a process of its own (ferrocondor master), and this request \
                 does not reach it there yet; a pool started with `ferrocondor pool up` answers it",
                r.daemon_name().to_lowercase()
            ),
        }
    }
}

/// The transport: each local role's inbox, and the other processes'
/// roles through `remote` (`ferrocondor master`).
#[derive(Clone)]
pub struct Router {
    collector: Option<RoleHandle<crate::collector_role::CollectorRole>>,
    negotiator: Option<RoleHandle<crate::negotiator_role::NegotiatorRole>>,
    schedd: Option<RoleHandle<crate::schedd_role::ScheddRole>>,
    startd: Option<RoleHandle<crate::execute::StartdRole>>,
    remote: Option<Arc<crate::role_transport::Remote>>,
    /// The names of this process's daemons (a message naming another
    /// daemon of a role that also runs here goes to that one).
    names: Arc<BTreeMap<RoleName, String>>,
    /// Answers to the tools' requests that other processes answer.
    pub answers: Arc<Answers>,
}

fn here<R: Role>(h: &Option<RoleHandle<R>>) -> Result<&RoleHandle<R>, RoleGone> {
    h.as_ref().ok_or(RoleGone::Elsewhere(R::NAME))
}

impl Router {
    pub fn collector(&self) -> Result<&RoleHandle<crate::collector_role::CollectorRole>, RoleGone> {
        here(&self.collector)
    }

    pub fn negotiator(
        &self,
    ) -> Result<&RoleHandle<crate::negotiator_role::NegotiatorRole>, RoleGone> {
        here(&self.negotiator)
    }

    pub fn schedd(&self) -> Result<&RoleHandle<crate::schedd_role::ScheddRole>, RoleGone> {
        here(&self.schedd)
    }

    pub fn startd(&self) -> Result<&RoleHandle<crate::execute::StartdRole>, RoleGone> {
        here(&self.startd)
    }

    /// Delivers `msg` to a local role's inbox, or sends it to the
    /// process that runs the daemon it is for.
    pub fn deliver(&self, from: RoleName, to: impl Into<Dest>, msg: Message) {
        let to = to.into();
        // An answer to a tool's request, for this process (where the role
        // it is addressed to runs), goes to the request waiting for it.
        let here = self.is_here(&to);
        if let (true, Message::AdminAnswer { id, answer }) = (here, &msg) {
            return self.answers.answered(*id, answer.clone());
        }
        if here {
            match to.role {
                RoleName::Collector => {
                    if let Some(h) = &self.collector {
                        return h.deliver(from, msg);
                    }
                }
                RoleName::Negotiator => {
                    if let Some(h) = &self.negotiator {
                        return h.deliver(from, msg);
                    }
                }
                RoleName::Schedd => {
                    if let Some(h) = &self.schedd {
                        return h.deliver(from, msg);
                    }
                }
                RoleName::Startd => {
                    if let Some(h) = &self.startd {
                        return h.deliver(from, msg);
                    }
                }
                RoleName::Defrag => {}
            }
        }
        match &self.remote {
            Some(r) => r.send(from, self.name_of(from), &to, &msg),
            None => eprintln!(
                "ferrocondor: a message for the {:?}{} has nowhere to go: {msg:?}",
                to.role,
                to.name
                    .as_deref()
                    .map(|n| format!(" {n}"))
                    .unwrap_or_default()
            ),
        }
    }

    /// Whether the daemon `to` is one of this process's: its role runs
    /// here, and the message names no daemon or this one.
    pub fn is_here(&self, to: &Dest) -> bool {
        self.runs(to.role)
            && match (&to.name, self.names.get(&to.role)) {
                (Some(wanted), Some(mine)) => wanted.eq_ignore_ascii_case(mine),
                _ => true,
            }
    }

    /// The name of this process's daemon of `role`, where it has one.
    pub fn name_of(&self, role: RoleName) -> Option<&str> {
        self.names.get(&role).map(String::as_str)
    }

    /// Whether `role` runs in this process.
    pub fn runs(&self, role: RoleName) -> bool {
        match role {
            RoleName::Collector => self.collector.is_some(),
            RoleName::Negotiator => self.negotiator.is_some(),
            RoleName::Schedd => self.schedd.is_some(),
            RoleName::Startd => self.startd.is_some(),
            RoleName::Defrag => false,
        }
    }

    /// Where a daemon of another process listens, and how to
    /// authenticate to it; `None` for one of this process's (or with no
    /// other processes).
    pub fn locate(&self, to: &Dest) -> Option<(cedar::Sinful, cedar::client::ClientOptions)> {
        if self.is_here(to) {
            return None;
        }
        match self.remote.as_ref()?.locate(to) {
            Ok(found) => Some(found),
            Err(why) => {
                eprintln!("ferrocondor: {why}");
                None
            }
        }
    }

    /// Waits (at most `within`) until the messages handed to other
    /// processes have left.
    pub fn flush(&self, within: Duration) {
        if let Some(r) = &self.remote {
            r.flush(within);
        }
    }

    /// Whether a role message that came on `peer`'s connection may be
    /// taken (a peer in a brokered session may say only what the session
    /// is for: `claim_sessions`).
    pub fn admit(
        &self,
        peer: &cedar::server::Peer,
        m: &crate::role_transport::Arrived,
    ) -> Result<(), crate::claim_sessions::Refusal> {
        match &self.remote {
            Some(r) => r.admit(peer, m),
            None => Ok(()),
        }
    }

    /// The brokered session a claim's conversations travel in.
    pub fn claim_session(&self, claim: &str) -> Option<cedar::capability::Capability> {
        self.remote.as_ref()?.claim_session(claim)
    }

    /// Whether `claim` was requested in the brokered session `sid`.
    pub fn claim_in_session(&self, claim: &str, sid: &str) -> bool {
        self.remote
            .as_ref()
            .is_some_and(|r| r.claim_in_session(claim, sid))
    }

    /// The startd ads the pool's collector holds that `constraint` picks
    /// (the startd's VM-host peers): asked of the collector role where it
    /// runs in this process, else of the pool's collector on HTCondor's
    /// protocol (QUERY_STARTD_ADS, as the daemons' client). Blocks: call
    /// it off the roles' threads.
    pub fn query_startd_ads(&self, constraint: &classad::Expr) -> Result<Vec<ClassAd>, String> {
        if let Ok(c) = self.collector() {
            let constraint = constraint.clone();
            return c
                .call_blocking(move |c, now, _| {
                    let env = classad::Env {
                        now,
                        ..classad::Env::default()
                    };
                    c.ads_where(&AdType::Startd, now, |ad| {
                        ad.eval(&constraint, &env).as_bool() == Some(true)
                    })
                })
                .map_err(|e| e.to_string());
        }
        match &self.remote {
            Some(r) => r.query_startd_ads(constraint),
            None => Err("this process runs no collector and reaches none".into()),
        }
    }

    /// Whether roles of other processes are reached from here (a daemon
    /// of `ferrocondor master`, or of a pool of many hosts).
    pub fn has_remote(&self) -> bool {
        self.remote.is_some()
    }

    /// The daemon `name` of `role` listens at `address` (its message came
    /// from there).
    pub fn heard_from(&self, role: RoleName, name: Option<&str>, address: &str) {
        if let Some(r) = &self.remote {
            r.heard_from(role, name, address);
        }
    }

    /// Asks every local role's thread to finish.
    pub fn stop(&self) {
        if let Some(h) = &self.collector {
            h.stop();
        }
        if let Some(h) = &self.negotiator {
            h.stop();
        }
        if let Some(h) = &self.schedd {
            h.stop();
        }
        if let Some(h) = &self.startd {
            h.stop();
        }
    }
}

/// Each role's inbox, made before any role runs (so each can be told
/// where the others are).
pub struct Inboxes {
    collector: mpsc::Receiver<Envelope<crate::collector_role::CollectorRole>>,
    negotiator: mpsc::Receiver<Envelope<crate::negotiator_role::NegotiatorRole>>,
    schedd: mpsc::Receiver<Envelope<crate::schedd_role::ScheddRole>>,
    startd: mpsc::Receiver<Envelope<crate::execute::StartdRole>>,
}

/// The router for `roles` (the ones this process runs) and their inboxes;
/// messages for the others go through `remote`.
pub fn router(
    roles: &Roles,
    remote: Option<Arc<crate::role_transport::Remote>>,
) -> (Router, Inboxes) {
    let (c, cr) = mpsc::channel();
    let (n, nr) = mpsc::channel();
    let (s, sr) = mpsc::channel();
    let (e, er) = mpsc::channel();
    (
        Router {
            collector: roles.collector.as_ref().map(|_| RoleHandle { tx: c }),
            negotiator: roles.negotiator.as_ref().map(|_| RoleHandle { tx: n }),
            schedd: roles.schedd.as_ref().map(|_| RoleHandle { tx: s }),
            startd: roles.startd.as_ref().map(|_| RoleHandle { tx: e }),
            remote,
            names: Arc::new(roles.names()),
            answers: Arc::new(Answers::default()),
        },
        Inboxes {
            collector: cr,
            negotiator: nr,
            schedd: sr,
            startd: er,
        },
    )
}

/// What the roles' threads do with the work a step leaves (the startd's
/// starters and hooks run on the async runtime).
pub type Dispatch = Arc<dyn Fn(Vec<Work>) + Send + Sync>;

/// The roles this process runs (all four in a personal pool, one under
/// `ferrocondor master`), each on its own thread.
#[derive(Default)]
pub struct Roles {
    pub collector: Option<crate::collector_role::CollectorRole>,
    pub negotiator: Option<crate::negotiator_role::NegotiatorRole>,
    pub schedd: Option<crate::schedd_role::ScheddRole>,
    pub startd: Option<crate::execute::StartdRole>,
}

impl Roles {
    /// Each daemon's name: the startd's (STARTD_NAME), the schedd's, the
    /// central manager's (the host's).
    fn names(&self) -> BTreeMap<RoleName, String> {
        let mut names = BTreeMap::new();
        if let Some(r) = &self.startd {
            names.insert(RoleName::Startd, r.name().to_string());
        }
        if let Some(r) = &self.schedd {
            names.insert(RoleName::Schedd, r.name().to_string());
        }
        names
    }
}

/// Starts every role on a thread of its own; each runs until
/// [`Router::stop`]. `clock` gives `now`.
pub fn spawn(
    roles: Roles,
    router: &Router,
    inboxes: Inboxes,
    dispatch: Dispatch,
    clock: fn() -> i64,
) -> Vec<std::thread::JoinHandle<()>> {
    let mut threads = Vec::new();
    if let Some(r) = roles.collector {
        threads.push(run(r, inboxes.collector, router, &dispatch, clock));
    }
    if let Some(r) = roles.negotiator {
        threads.push(run(r, inboxes.negotiator, router, &dispatch, clock));
    }
    if let Some(r) = roles.schedd {
        threads.push(run(r, inboxes.schedd, router, &dispatch, clock));
    }
    if let Some(r) = roles.startd {
        threads.push(run(r, inboxes.startd, router, &dispatch, clock));
    }
    threads
}

fn run<R: Role>(
    mut role: R,
    inbox: mpsc::Receiver<Envelope<R>>,
    router: &Router,
    dispatch: &Dispatch,
    clock: fn() -> i64,
) -> std::thread::JoinHandle<()> {
    let router = router.clone();
    let dispatch = dispatch.clone();
    std::thread::Builder::new()
        .name(R::NAME.daemon_name().to_lowercase())
        .spawn(move || {
            let timers = role.timers();
            let start = Instant::now();
            let mut next: Vec<Instant> = timers
                .iter()
                .map(|&(secs, at_once)| {
                    if at_once {
                        start
                    } else {
                        start + Duration::from_secs(secs.max(1))
                    }
                })
                .collect();
            loop {
                let mut out = Outbox::default();
                // Timers that are due, in order.
                let now_i = Instant::now();
                for (k, at) in next.iter_mut().enumerate() {
                    if *at <= now_i {
                        role.timer(k, clock(), &mut out);
                        *at = now_i + Duration::from_secs(timers[k].0.max(1));
                    }
                }
                carry_out(R::NAME, out, &router, &dispatch);
                let wait = next
                    .iter()
                    .min()
                    .map(|t| t.saturating_duration_since(Instant::now()))
                    .unwrap_or(Duration::from_secs(3600));
                let envelope = match inbox.recv_timeout(wait) {
                    Ok(e) => e,
                    Err(mpsc::RecvTimeoutError::Timeout) => continue,
                    Err(mpsc::RecvTimeoutError::Disconnected) => return,
                };
                let mut out = Outbox::default();
                let reply = match envelope {
                    Envelope::Message(from, msg) => {
                        role.receive(from, msg, clock(), &mut out);
                        None
                    }
                    Envelope::Call(f) => Some(f(&mut role, clock(), &mut out)),
                    Envelope::Stop => return,
                };
                carry_out(R::NAME, out, &router, &dispatch);
                if let Some(reply) = reply {
                    reply();
                }
            }
        })
        .expect("a role's thread starts")
}

fn carry_out(from: RoleName, out: Outbox, router: &Router, dispatch: &Dispatch) {
    for n in out.notes {
        eprintln!("ferrocondor: {n}");
    }
    for (to, msg) in out.messages {
        router.deliver(from, to, msg);
    }
    if !out.work.is_empty() {
        dispatch(out.work);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A role that records what ran on its thread.
    struct Recorder(Vec<&'static str>);

    impl Role for Recorder {
        const NAME: RoleName = RoleName::Schedd;
        fn receive(&mut self, _: RoleName, _: Message, _: i64, _: &mut Outbox) {}
        fn timers(&self) -> Vec<(u64, bool)> {
            Vec::new()
        }
        fn timer(&mut self, _: usize, _: i64, _: &mut Outbox) {}
    }

    #[test]
    fn a_call_is_answered_before_the_work_that_follows_it_runs() {
        let (tx, rx) = mpsc::channel();
        let handle = RoleHandle::<Recorder> { tx };
        let role = std::thread::spawn(move || {
            let mut role = Recorder(Vec::new());
            while let Ok(Envelope::Call(call)) = rx.recv() {
                let mut out = Outbox::default();
                call(&mut role, 0, &mut out)();
            }
            role.0
        });
        let (answered, heard) = mpsc::channel::<()>();
        let answer = handle.call_blocking_then(
            |r, _, _| {
                r.0.push("call");
                7
            },
            move |r, _, _| {
                // The caller says when it has its answer.
                r.0.push(match heard.recv_timeout(Duration::from_secs(10)) {
                    Ok(()) => "then, after the answer",
                    Err(_) => "then, the caller still waiting",
                });
            },
        );
        assert_eq!(answer.unwrap(), 7);
        answered.send(()).unwrap();
        drop(handle);
        assert_eq!(role.join().unwrap(), ["call", "then, after the answer"]);
    }

    #[test]
    fn the_messages_are_htcondor_s_commands_by_number() {
        let ev = |e: startd::Event| Message::Startd(e).htcondor_command();
        assert_eq!(
            ev(startd::Event::KeepAlive {
                claim_id: "c".into()
            }),
            Some((441, "ALIVE"))
        );
        assert_eq!(
            ev(startd::Event::ReleaseClaim {
                slot: "s".into(),
                claim_id: "c".into()
            }),
            Some((443, "RELEASE_CLAIM"))
        );
        assert_eq!(
            Message::Reschedule.htcondor_command(),
            Some((421, "RESCHEDULE"))
        );
        assert_eq!(
            Message::Negotiate {
                cycle: 1,
                significant: Vec::new()
            }
            .htcondor_command(),
            Some((416, "NEGOTIATE"))
        );
        assert_eq!(
            Message::Matches {
                matches: Vec::new(),
                startds: BTreeMap::new()
            }
            .htcondor_command(),
            Some((472, "PERMISSION_AND_AD"))
        );
        assert_eq!(
            Message::QuerySlots.htcondor_command(),
            Some((5, "QUERY_STARTD_ADS"))
        );
        assert_eq!(
            Message::UpdateAds {
                kind: AdType::Submitter,
                ads: Vec::new()
            }
            .htcondor_command(),
            Some((11, "UPDATE_SUBMITTOR_AD"))
        );
        assert_eq!(Message::Charges(Vec::new()).htcondor_command(), None);
    }
}
