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
}

impl RoleName {
    /// As `DAEMON_LIST` names it.
    pub fn daemon_name(self) -> &'static str {
        match self {
            RoleName::Collector => "COLLECTOR",
            RoleName::Negotiator => "NEGOTIATOR",
            RoleName::Schedd => "SCHEDD",
            RoleName::Startd => "STARTD",
        }
    }
}

/// A schedd's request for one submitter: its name and its idle jobs, in
/// its order.
pub type SubmitterRequest = (String, Vec<(JobId, Arc<ClassAd>)>);

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
    /// Idle jobs may have somewhere to run: a cycle soon, please.
    Reschedule,
    /// The negotiator asks a schedd for its requests (cycle number).
    Negotiate { cycle: u64 },
    /// A schedd's requests: each submitter's idle jobs in its order, and
    /// the jobs its claims hold (for the concurrency limits in use).
    Requests {
        cycle: u64,
        submitters: Vec<SubmitterRequest>,
        on_claims: Vec<Arc<ClassAd>>,
    },
    /// Matches for a schedd's jobs.
    Matches(Vec<Match>),
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
}

/// What a role's step asks for: messages to send, work to start (the
/// startd's starters and hooks), lines for the daemon's log.
#[derive(Default)]
pub struct Outbox {
    pub messages: Vec<(RoleName, Message)>,
    pub work: Vec<Work>,
    pub notes: Vec<String>,
}

impl Outbox {
    pub fn send(&mut self, to: RoleName, msg: Message) {
        self.messages.push((to, msg));
    }

    pub fn note(&mut self, note: impl Into<String>) {
        self.notes.push(note.into());
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
    /// Runs `f` on the role's thread; its answer comes back when it has
    /// run (the role's outbox is carried out first).
    pub async fn call<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut R, i64, &mut Outbox) -> T + Send + 'static,
    ) -> Result<T, RoleGone> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let call: Call<R> = Box::new(move |r, now, out| {
            let answer = f(r, now, out);
            Box::new(move || {
                let _ = tx.send(answer);
            })
        });
        self.tx
            .send(Envelope::Call(call))
            .map_err(|_| RoleGone(R::NAME))?;
        rx.await.map_err(|_| RoleGone(R::NAME))
    }

    /// As [`RoleHandle::call`], from a thread that may block.
    pub fn call_blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut R, i64, &mut Outbox) -> T + Send + 'static,
    ) -> Result<T, RoleGone> {
        let (tx, rx) = mpsc::channel();
        let call: Call<R> = Box::new(move |r, now, out| {
            let answer = f(r, now, out);
            Box::new(move || {
                let _ = tx.send(answer);
            })
        });
        self.tx
            .send(Envelope::Call(call))
            .map_err(|_| RoleGone(R::NAME))?;
        rx.recv().map_err(|_| RoleGone(R::NAME))
    }

    /// Runs `f` on the role's thread, not waiting for it.
    pub fn cast(&self, f: impl FnOnce(&mut R, i64, &mut Outbox) + Send + 'static) {
        let call: Call<R> = Box::new(move |r, now, out| {
            f(r, now, out);
            Box::new(|| {})
        });
        let _ = self.tx.send(Envelope::Call(call));
    }

    fn deliver(&self, from: RoleName, msg: Message) {
        let _ = self.tx.send(Envelope::Message(from, msg));
    }

    /// Asks the role's thread to finish (after what is already in its inbox).
    pub fn stop(&self) {
        let _ = self.tx.send(Envelope::Stop);
    }
}

/// A role's thread has ended (the pool is going down).
#[derive(Debug)]
pub struct RoleGone(pub RoleName);

impl std::fmt::Display for RoleGone {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the {} has stopped", self.0.daemon_name().to_lowercase())
    }
}

/// The in-process transport: each role's inbox.
#[derive(Clone)]
pub struct Router {
    pub collector: RoleHandle<crate::collector_role::CollectorRole>,
    pub negotiator: RoleHandle<crate::negotiator_role::NegotiatorRole>,
    pub schedd: RoleHandle<crate::schedd_role::ScheddRole>,
    pub startd: RoleHandle<crate::execute::StartdRole>,
}

impl Router {
    fn deliver(&self, from: RoleName, to: RoleName, msg: Message) {
        match to {
            RoleName::Collector => self.collector.deliver(from, msg),
            RoleName::Negotiator => self.negotiator.deliver(from, msg),
            RoleName::Schedd => self.schedd.deliver(from, msg),
            RoleName::Startd => self.startd.deliver(from, msg),
        }
    }

    pub fn stop(&self) {
        self.collector.stop();
        self.negotiator.stop();
        self.schedd.stop();
        self.startd.stop();
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

/// The router and the inboxes it sends to.
pub fn router() -> (Router, Inboxes) {
    let (c, cr) = mpsc::channel();
    let (n, nr) = mpsc::channel();
    let (s, sr) = mpsc::channel();
    let (e, er) = mpsc::channel();
    (
        Router {
            collector: RoleHandle { tx: c },
            negotiator: RoleHandle { tx: n },
            schedd: RoleHandle { tx: s },
            startd: RoleHandle { tx: e },
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

/// The four roles, each on its own thread.
pub struct Roles {
    pub collector: crate::collector_role::CollectorRole,
    pub negotiator: crate::negotiator_role::NegotiatorRole,
    pub schedd: crate::schedd_role::ScheddRole,
    pub startd: crate::execute::StartdRole,
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
    vec![
        run(roles.collector, inboxes.collector, router, &dispatch, clock),
        run(
            roles.negotiator,
            inboxes.negotiator,
            router,
            &dispatch,
            clock,
        ),
        run(roles.schedd, inboxes.schedd, router, &dispatch, clock),
        run(roles.startd, inboxes.startd, router, &dispatch, clock),
    ]
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
