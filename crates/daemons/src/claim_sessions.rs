//! The security sessions the central manager brokers, so that only it
//! holds the pool's signing key (HTCondor's match sessions,
//! `SEC_ENABLE_MATCH_PASSWORD_AUTHENTICATION`). The access points and
//! execute points hold tokens, which the collector verifies; what they
//! say to each other travels in sessions they were given through the
//! central manager, never in a token the receiver could not verify:
//!
//! - **A slot's session (its claim id).** The startd makes a session for
//!   each slot it advertises (`cedar::capability`: id, policy, key) and
//!   registers it; the slot's ad carries it as the private attribute
//!   `ClaimId` to the collector (over the startd's token, encrypted). The
//!   negotiator reads it from the slot ads, reaches the startd in it
//!   (MATCH_INFO) and hands it to the schedd with the match. The schedd
//!   registers it too and claims the slot in it; from then on what the
//!   schedd and the startd say about that claim, and the starter's fetch
//!   of the claim's files from the schedd, travel in it, both ways. A
//!   peer in a slot's session may speak only of the claims requested in
//!   it ([`Broker::admit`]). A claim on a static slot, once granted, keeps
//!   the session for itself and the slot advertises a new one, so a
//!   schedd cannot claim the slot again without a new match (a request in
//!   a session that is no longer the slot's is answered with a refusal in
//!   that session). A claim's session is forgotten a while after the
//!   claim ended ([`ENDED_GRACE`]), when no claim is left in it.
//! - **A schedd's session for the central manager** (its private
//!   `Capability`): the schedd's ad carries it; the negotiator reaches the
//!   schedd in it with NEGOTIATE and the matches, the collector and the
//!   negotiator answer in it what the schedd asked for its tools, and
//!   nothing else travels in it.
//!
//! A partitionable slot keeps its session while it is advertised (its
//! dynamic slots' claims are requested in it, several in one cycle), so
//! a schedd that was once matched to it may request a claim there again
//! (the startd's own policy still decides); HTCondor gives such a slot a
//! new claim id at each claim.
//!
//! This module decides which session a message travels in and whether
//! one that arrived in a session may be taken; it holds the sessions'
//! bookkeeping only. `role_transport` connects in the sessions and keeps
//! the schedd's claims' sessions on disk (a restarted schedd reconnects
//! to its running jobs in them); `command_port` asks [`Broker::admit`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use cedar::capability::Capability;
use cedar::commands as cmd;
use cedar::server::{Level, LevelSet, Sessions};
use classad::ClassAd;
use negotiator::collector::AdType;
use startd::{Action, Event};

use crate::roles::{Dest, Message, RoleName};
use crate::schedd_service::literal_str;

/// The slot ad's private attribute with the slot's session (HTCondor's
/// `ClaimId` in the startd's private ad).
pub const CLAIM_ID: &str = "ClaimId";
/// The schedd ad's private attribute with its session for the
/// negotiator (HTCondor's `Capability`).
pub const CAPABILITY: &str = "Capability";

/// Who a peer in a brokered session is, as HTCondor names them.
pub const SUBMIT_SIDE: &str = "submit-side@matchsession";
pub const EXECUTE_SIDE: &str = "execute-side@matchsession";
pub const NEGOTIATOR_SIDE: &str = "negotiator-side@matchsession";

/// How long a registered session lives unused. A slot's is used at every
/// ad update, a claim's at every keep-alive (ALIVE_INTERVAL), the
/// negotiator's at every update of the schedd's ad; one whose slot,
/// claim or schedd is gone expires.
pub const UNUSED_LIFETIME: i64 = 6 * 3600;

/// How long a claim that ended is still spoken of in its session (the
/// schedd's last keep-alives and release, answered "no such claim").
pub const ENDED_GRACE: i64 = 900;

/// A claim and the session it was requested in.
#[derive(Clone, Debug)]
struct Binding {
    sid: String,
    /// When it was last spoken of.
    used: i64,
    ended: bool,
}

/// What a session is for.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Purpose {
    /// A slot's (`slot@startd`, as its ad names it), and the claims
    /// requested in it.
    Slot { slot: String },
    /// A schedd's, for the negotiator.
    Negotiator,
}

#[derive(Clone, Debug)]
struct Known {
    cap: Capability,
    purpose: Purpose,
    /// This process made it (the startd's slots, the schedd's own).
    own: bool,
}

#[derive(Default)]
struct State {
    /// Sessions this process has registered (its own, and the ones it was
    /// given with matches), by id.
    known: HashMap<String, Known>,
    /// The startd: each advertised slot's session, by the slot's name.
    own_slots: HashMap<String, String>,
    /// The schedd: its session for the negotiator.
    own_negotiator: Option<String>,
    /// The schedd: the sessions that came with matches, by slot name.
    matched: HashMap<String, String>,
    /// The negotiator: the sessions read in the ads (not registered here:
    /// it only connects in them), by slot and by schedd name.
    slot_ads: HashMap<String, Capability>,
    schedd_ads: HashMap<String, Capability>,
    /// Claims and the session each was requested in.
    claims: HashMap<String, Binding>,
    /// The claims given with matches (the schedd's side) changed: to be
    /// written down.
    changed: bool,
    /// When claims were last pruned (at most once a minute: every
    /// message asks).
    pruned: i64,
}

/// The brokered sessions of one process (see the module's text).
pub struct Broker {
    sessions: Arc<Sessions>,
    /// The start of every session id this process makes: its address and
    /// when it started, as HTCondor's claim ids begin.
    prefix: String,
    state: Mutex<State>,
}

/// Session names are compared without case, as daemon names are.
fn lc(s: &str) -> String {
    s.to_ascii_lowercase()
}

/// A slot's full name, `slot@startd`, from a message's slot and the
/// startd it is for.
fn full_slot(slot: &str, startd: Option<&str>) -> String {
    match startd {
        Some(s) if !slot.contains('@') => lc(&format!("{slot}@{s}")),
        _ => lc(slot),
    }
}

/// Whether `slot` (as a message names it: `slot1`, `slot1_2`, or with
/// `@startd`) is the slot `session_slot` or a dynamic slot made from it.
fn same_slot(slot: &str, session_slot: &str) -> bool {
    let local = |s: &str| lc(s.split('@').next().unwrap_or(s));
    let (slot, base) = (local(slot), local(session_slot));
    slot == base || slot.strip_prefix(&base).is_some_and(|r| r.starts_with('_'))
}

/// The claim a message is about, if it is about one.
fn claim_of(msg: &Message) -> Option<&str> {
    match msg {
        Message::Startd(ev) => match ev {
            Event::RequestClaim { request, .. } => Some(&request.claim_id),
            Event::Activate { claim_id, .. }
            | Event::ReleaseClaim { claim_id, .. }
            | Event::KeepAlive { claim_id } => Some(claim_id),
            _ => None,
        },
        Message::ClaimNews(
            Action::ClaimEnded { claim_id, .. }
            | Action::ClaimGranted { claim_id, .. }
            | Action::ClaimRefused { claim_id, .. }
            | Action::ClaimIdle { claim_id, .. }
            | Action::ActivationRefused { claim_id, .. }
            | Action::ClaimAlive { claim_id, .. }
            | Action::StartJob { claim_id, .. },
        ) => Some(claim_id),
        Message::Starter(r) => Some(r.claim_id()),
        Message::StopJob { claim_id, .. } => Some(claim_id),
        _ => None,
    }
}

/// A message as a refusal names it: its HTCondor command, else its kind.
fn describe(msg: &Message) -> String {
    match msg.htcondor_command() {
        Some((_, name)) => name.to_string(),
        None => format!("{msg:?}")
            .split([' ', '(', '{'])
            .next()
            .unwrap_or("")
            .to_string(),
    }
}

/// Whether a message says its claim is over.
fn ends_claim(msg: &Message) -> bool {
    matches!(
        msg,
        Message::ClaimNews(Action::ClaimEnded { .. } | Action::ClaimRefused { .. })
    )
}

/// What the transport does with a message going out.
#[derive(Default)]
pub struct Outgoing {
    /// The message as it goes, where it gained a private attribute.
    pub replaced: Option<Message>,
    /// The session it travels in (else the process's own credentials).
    pub session: Option<Capability>,
    /// Slots' sessions handed on with matches: (`slot@startd`, the
    /// capability's text).
    pub handed: Vec<(String, String)>,
}

/// Why a message in a brokered session was not taken, and what to answer
/// (in the same session) where the sender waits for an answer.
#[derive(Debug)]
pub struct Refusal {
    pub why: String,
    pub answer: Option<Box<Message>>,
}

/// One claim's session as the schedd keeps it on disk.
pub struct SavedClaim {
    pub claim_id: String,
    pub slot: String,
    pub capability: String,
}

impl Broker {
    /// A process's broker: `sessions` are its command port's, `address`
    /// its command port's address, `now` when it started.
    pub fn new(sessions: Arc<Sessions>, address: &str, now: i64) -> Broker {
        Broker {
            sessions,
            prefix: format!("{address}#{now}"),
            state: Mutex::new(State::default()),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn limits() -> Option<LevelSet> {
        let mut l = LevelSet::default();
        l.insert(Level::Daemon);
        Some(l)
    }

    /// Registers `cap` here for `purpose`, the peer in it named `user`.
    fn register(&self, st: &mut State, cap: Capability, purpose: Purpose, own: bool, now: i64) {
        let user = match (&purpose, own) {
            (Purpose::Negotiator, _) => NEGOTIATOR_SIDE,
            (Purpose::Slot { .. }, true) => SUBMIT_SIDE,
            (Purpose::Slot { .. }, false) => EXECUTE_SIDE,
        };
        self.sessions
            .register(&cap, user, Self::limits(), now + UNUSED_LIFETIME, now);
        st.known
            .insert(cap.id().to_string(), Known { cap, purpose, own });
    }

    fn used(&self, st: &State, sid: &str, now: i64) {
        if st.known.contains_key(sid) {
            self.sessions.extend(sid, now + UNUSED_LIFETIME);
        }
    }

    /// The session of slot `name` this startd advertises, made when first
    /// advertised (again after its claims ended).
    fn own_slot(&self, st: &mut State, name: &str, now: i64) -> Capability {
        let key = lc(name);
        if let Some(k) = st.own_slots.get(&key).and_then(|sid| st.known.get(sid)) {
            let cap = k.cap.clone();
            self.used(st, cap.id(), now);
            return cap;
        }
        let cap = Capability::mint(
            &self.prefix,
            &[cmd::FC_ROLE_MESSAGES, cmd::FC_FILE_TRANSFER],
        );
        st.own_slots.insert(key, cap.id().to_string());
        self.register(
            st,
            cap.clone(),
            Purpose::Slot {
                slot: name.to_string(),
            },
            true,
            now,
        );
        cap
    }

    fn session_of_claim(&self, st: &State, claim: &str) -> Option<Capability> {
        let b = st.claims.get(claim)?;
        st.known.get(&b.sid).map(|k| k.cap.clone())
    }

    fn bind(st: &mut State, claim: &str, sid: &str, now: i64) {
        st.claims.insert(
            claim.to_string(),
            Binding {
                sid: sid.to_string(),
                used: now,
                ended: false,
            },
        );
    }

    /// The session a claim's messages travel in, if it has one (the
    /// starter's file transfer asks).
    pub fn claim_session(&self, claim: &str) -> Option<Capability> {
        self.session_of_claim(&self.state(), claim)
    }

    /// Whether `claim` was requested in session `sid`.
    pub fn claim_in_session(&self, claim: &str, sid: &str) -> bool {
        self.state()
            .claims
            .get(claim)
            .is_some_and(|b| b.sid == sid && !b.ended)
    }

    /// A claim is over: spoken of for [`ENDED_GRACE`] more, then
    /// forgotten (and its session with it, when no claim is left in it).
    fn end_claim(st: &mut State, claim: &str, now: i64) {
        if let Some(b) = st.claims.get_mut(claim) {
            b.ended = true;
            b.used = now;
            st.changed = true;
        }
    }

    /// A claim on a static slot of this startd was granted: the claim
    /// keeps the session, and the slot advertises a new one from its next
    /// ad on.
    fn granted(st: &mut State, claim: &str, slot: &str) {
        let Some(sid) = st.claims.get(claim).map(|b| b.sid.clone()) else {
            return;
        };
        if let Some(Known {
            purpose: Purpose::Slot { slot: own },
            own: true,
            ..
        }) = st.known.get(&sid)
        {
            let key = lc(own);
            let static_slot = lc(slot.split('@').next().unwrap_or(slot))
                == lc(own.split('@').next().unwrap_or(own));
            if static_slot && st.own_slots.get(&key) == Some(&sid) {
                st.own_slots.remove(&key);
            }
        }
    }

    /// Forgets claims ended for [`ENDED_GRACE`] or unspoken of for
    /// [`UNUSED_LIFETIME`], and this process's sessions that are no
    /// slot's and hold no claim any more.
    fn prune(&self, st: &mut State, now: i64) {
        if now < st.pruned + 60 {
            return;
        }
        st.pruned = now;
        let before = st.claims.len();
        st.claims.retain(|_, b| {
            let limit = if b.ended {
                ENDED_GRACE
            } else {
                UNUSED_LIFETIME
            };
            b.used + limit > now
        });
        if st.claims.len() == before {
            return;
        }
        st.changed = true;
        let held: std::collections::HashSet<String> =
            st.claims.values().map(|b| b.sid.clone()).collect();
        let current: std::collections::HashSet<String> = st
            .own_slots
            .values()
            .chain(st.own_negotiator.iter())
            .chain(st.matched.values())
            .cloned()
            .collect();
        let gone: Vec<String> = st
            .known
            .keys()
            .filter(|sid| !held.contains(*sid) && !current.contains(*sid))
            .cloned()
            .collect();
        for sid in gone {
            st.known.remove(&sid);
            self.sessions.unregister(&sid);
        }
    }

    /// Decides how `msg`, from this process's `from`, travels to `to`.
    pub fn outgoing(&self, from: RoleName, to: &Dest, msg: &Message, now: i64) -> Outgoing {
        let mut st = self.state();
        let mut out = Outgoing::default();
        match msg {
            Message::UpdateAds {
                kind: AdType::Startd,
                ads,
            } if from == RoleName::Startd => {
                let ads: Vec<ClassAd> = ads
                    .iter()
                    .map(|ad| {
                        let mut ad = ad.clone();
                        if let Some(name) = literal_str(&ad, "Name") {
                            let cap = self.own_slot(&mut st, &name, now);
                            ad.insert_value(CLAIM_ID, cap.to_string().as_str());
                        }
                        ad
                    })
                    .collect();
                out.replaced = Some(Message::UpdateAds {
                    kind: AdType::Startd,
                    ads,
                });
            }
            Message::UpdateAds {
                kind: AdType::Schedd,
                ads,
            } if from == RoleName::Schedd => {
                let cap = match st.own_negotiator.as_ref().and_then(|sid| st.known.get(sid)) {
                    Some(k) => k.cap.clone(),
                    None => {
                        let cap = Capability::mint(&self.prefix, &[cmd::FC_ROLE_MESSAGES]);
                        st.own_negotiator = Some(cap.id().to_string());
                        self.register(&mut st, cap.clone(), Purpose::Negotiator, true, now);
                        cap
                    }
                };
                self.used(&st, cap.id(), now);
                let ads = ads
                    .iter()
                    .map(|ad| {
                        let mut ad = ad.clone();
                        ad.insert_value(CAPABILITY, cap.to_string().as_str());
                        ad
                    })
                    .collect();
                out.replaced = Some(Message::UpdateAds {
                    kind: AdType::Schedd,
                    ads,
                });
            }
            _ if matches!(from, RoleName::Negotiator | RoleName::Collector)
                && to.role == RoleName::Schedd =>
            {
                // By the schedd's name; an unnamed one where the pool has
                // one schedd.
                out.session = match to.name.as_deref() {
                    Some(n) => st.schedd_ads.get(&lc(n)).cloned(),
                    None if st.schedd_ads.len() == 1 => st.schedd_ads.values().next().cloned(),
                    None => None,
                };
                if let Message::Matches { matches, .. } = msg {
                    for m in matches {
                        let slot = full_slot(&m.slot, Some(&m.startd));
                        if let Some(cap) = st.slot_ads.get(&slot) {
                            out.handed.push((slot, cap.to_string()));
                        }
                    }
                }
            }
            Message::MatchInfo { slot } if from == RoleName::Negotiator => {
                out.session = st
                    .slot_ads
                    .get(&full_slot(slot, to.name.as_deref()))
                    .cloned();
            }
            Message::Startd(Event::RequestClaim { slot, request }) if from == RoleName::Schedd => {
                let key = full_slot(slot, to.name.as_deref());
                if let Some(sid) = st.matched.get(&key).cloned() {
                    Self::bind(&mut st, &request.claim_id, &sid, now);
                    st.changed = true;
                }
                out.session = self.session_of_claim(&st, &request.claim_id);
            }
            Message::Startd(Event::Vacate {
                slot: Some(slot), ..
            }) if from == RoleName::Schedd => {
                let key = full_slot(slot, to.name.as_deref());
                let base = full_slot(slot.split('_').next().unwrap_or(slot), to.name.as_deref());
                out.session = [key, base]
                    .iter()
                    .find_map(|k| st.matched.get(k))
                    .and_then(|sid| st.known.get(sid))
                    .map(|k| k.cap.clone());
            }
            _ => {
                if let Some(claim) = claim_of(msg) {
                    out.session = self.session_of_claim(&st, claim);
                    if let Some(c) = out.session.as_ref().map(|c| c.id().to_string()) {
                        if let Some(b) = st.claims.get_mut(claim) {
                            b.used = now;
                        }
                        self.used(&st, &c, now);
                    }
                    if from == RoleName::Startd {
                        let claim = claim.to_string();
                        if let Message::ClaimNews(Action::ClaimGranted { slot, .. }) = msg {
                            Self::granted(&mut st, &claim, slot);
                        }
                        if ends_claim(msg) {
                            Self::end_claim(&mut st, &claim, now);
                        }
                    }
                }
            }
        }
        out
    }

    /// Whether a message that came in session `sid` (a peer that proved
    /// it holds that session's key, and nothing more) may be taken: a
    /// slot's session speaks only of that slot and of the claims
    /// requested in it, the negotiator's only negotiates. Takes note of
    /// the claims requested and ended.
    pub fn admit(
        &self,
        sid: &str,
        from: (RoleName, Option<&str>),
        msg: &Message,
        now: i64,
    ) -> Result<(), Refusal> {
        self.admit_inner(sid, from, msg, now).map_err(|e| match e {
            Ok(answer) => answer,
            Err(why) => Refusal { why, answer: None },
        })
    }

    fn admit_inner(
        &self,
        sid: &str,
        (from, from_name): (RoleName, Option<&str>),
        msg: &Message,
        now: i64,
    ) -> Result<(), Result<Refusal, String>> {
        let mut st = self.state();
        let Some(k) = st.known.get(sid).cloned() else {
            return Err(Err(format!("session {sid} is no longer known here")));
        };
        self.used(&st, sid, now);
        // Who may speak in it: in a slot's session, the schedd and the
        // negotiator to the startd, and that slot's startd (by its name)
        // to the schedd.
        if let Purpose::Slot { slot } = &k.purpose {
            let startd = slot.split_once('@').map(|(_, s)| s).unwrap_or("");
            let speaker = match (k.own, from) {
                (true, RoleName::Schedd | RoleName::Negotiator) => true,
                (false, RoleName::Startd) => {
                    from_name.is_none_or(|n| n.eq_ignore_ascii_case(startd))
                }
                _ => false,
            };
            if !speaker {
                return Err(Err(format!(
                    "the {} {} may not speak in {slot}'s session",
                    from.daemon_name().to_lowercase(),
                    from_name.unwrap_or("")
                )));
            }
        }
        match (&k.purpose, msg) {
            (Purpose::Negotiator, Message::Negotiate { .. } | Message::Matches { .. })
                if from == RoleName::Negotiator =>
            {
                Ok(())
            }
            // The central manager's answers to what the schedd asked for
            // its tools (`status`, `userprio` through the local socket).
            (Purpose::Negotiator, Message::AdminAnswer { .. })
                if matches!(from, RoleName::Negotiator | RoleName::Collector) =>
            {
                Ok(())
            }
            (Purpose::Negotiator, _) => Err(Err(format!(
                "the negotiator's session carries only NEGOTIATE, matches and the central \
                 manager's answers, not {} from the {}",
                describe(msg),
                from.daemon_name().to_lowercase()
            ))),
            (Purpose::Slot { slot }, Message::MatchInfo { slot: s }) if k.own => {
                if same_slot(s, slot) {
                    Ok(())
                } else {
                    Err(Err(format!("it is {slot}'s session, not {s}'s")))
                }
            }
            (Purpose::Slot { slot }, Message::Startd(Event::RequestClaim { slot: s, request }))
                if k.own =>
            {
                if !same_slot(s, slot) {
                    return Err(Err(format!("it is {slot}'s session, not {s}'s")));
                }
                Self::bind(&mut st, &request.claim_id, sid, now);
                if st.own_slots.get(&lc(slot)).map(String::as_str) == Some(sid) {
                    return Ok(());
                }
                // A match older than the slot's claim: refused in the
                // session it came in, so the schedd looks for another.
                Self::end_claim(&mut st, &request.claim_id, now);
                let why = format!(
                    "the match's session is no longer {slot}'s (the slot was claimed since)"
                );
                Err(Ok(Refusal {
                    answer: Some(Box::new(Message::ClaimNews(Action::ClaimRefused {
                        slot: s.clone(),
                        claim_id: request.claim_id.clone(),
                        schedd: request.schedd.clone(),
                        reason: why.clone(),
                    }))),
                    why,
                }))
            }
            (Purpose::Slot { slot }, Message::Startd(Event::Vacate { slot: Some(s), .. }))
                if k.own =>
            {
                if same_slot(s, slot) {
                    Ok(())
                } else {
                    Err(Err(format!("it is {slot}'s session, not {s}'s")))
                }
            }
            (Purpose::Slot { slot }, _) => {
                let Some(claim) = claim_of(msg) else {
                    return Err(Err(format!(
                        "{} is no claim's business (the session is {slot}'s)",
                        describe(msg)
                    )));
                };
                match st.claims.get_mut(claim) {
                    Some(b) if b.sid == sid => b.used = now,
                    _ => {
                        return Err(Err(format!(
                            "it speaks of a claim that was not requested in this session ({slot}'s)"
                        )))
                    }
                }
                if ends_claim(msg) {
                    Self::end_claim(&mut st, claim, now);
                }
                Ok(())
            }
        }
    }

    /// What came from a peer with the process's own credentials (not a
    /// brokered session): the negotiator takes note of the sessions in
    /// the slot and schedd ads, the schedd registers the slots' sessions
    /// handed on with its matches.
    pub fn received(&self, msg: &Message, handed: &[(String, String)], now: i64) {
        let mut st = self.state();
        match msg {
            Message::SlotAds(ads) => {
                for ad in ads {
                    if let (Some(name), Some(cap)) = (
                        literal_str(ad, "Name"),
                        literal_str(ad, CLAIM_ID).and_then(|c| Capability::parse(&c)),
                    ) {
                        st.slot_ads.insert(lc(&name), cap);
                    }
                }
            }
            Message::ScheddAds(ads)
            | Message::UpdateAds {
                kind: AdType::Schedd,
                ads,
            } => {
                for ad in ads {
                    if let (Some(name), Some(cap)) = (
                        literal_str(ad, "Name"),
                        literal_str(ad, CAPABILITY).and_then(|c| Capability::parse(&c)),
                    ) {
                        st.schedd_ads.insert(lc(&name), cap);
                    }
                }
            }
            _ => {}
        }
        if matches!(msg, Message::Matches { .. }) {
            self.take_handed(&mut st, handed, now);
        }
    }

    /// The schedd registers the slots' sessions that came with matches.
    fn take_handed(&self, st: &mut State, handed: &[(String, String)], now: i64) {
        for (slot, text) in handed {
            let Some(cap) = Capability::parse(text) else {
                continue;
            };
            let sid = cap.id().to_string();
            if !st.known.contains_key(&sid) {
                self.register(st, cap, Purpose::Slot { slot: slot.clone() }, false, now);
            } else {
                self.used(st, &sid, now);
            }
            st.matched.insert(lc(slot), sid);
        }
    }

    /// Matches that came in the negotiator's session hand on slots'
    /// sessions too.
    pub fn received_in_session(&self, msg: &Message, handed: &[(String, String)], now: i64) {
        if matches!(msg, Message::Matches { .. }) {
            let mut st = self.state();
            self.take_handed(&mut st, handed, now);
        }
    }

    /// The claims whose sessions came with matches (the schedd's), to be
    /// written down, when they changed since last asked; claims not
    /// spoken of for [`UNUSED_LIFETIME`] are forgotten.
    pub fn claims_to_save(&self, now: i64) -> Option<Vec<SavedClaim>> {
        let mut st = self.state();
        self.prune(&mut st, now);
        if !st.changed {
            return None;
        }
        st.changed = false;
        let mut saved: Vec<SavedClaim> = st
            .claims
            .iter()
            .filter(|(_, b)| !b.ended)
            .filter_map(|(claim, b)| {
                let k = st.known.get(&b.sid).filter(|k| !k.own)?;
                let Purpose::Slot { slot } = &k.purpose else {
                    return None;
                };
                Some(SavedClaim {
                    claim_id: claim.clone(),
                    slot: slot.clone(),
                    capability: k.cap.to_string(),
                })
            })
            .collect();
        saved.sort_by(|a, b| a.claim_id.cmp(&b.claim_id));
        Some(saved)
    }

    /// A restarted schedd takes back its claims' sessions.
    pub fn restore(&self, saved: Vec<SavedClaim>, now: i64) {
        let mut st = self.state();
        for s in saved {
            let Some(cap) = Capability::parse(&s.capability) else {
                continue;
            };
            let sid = cap.id().to_string();
            if !st.known.contains_key(&sid) {
                self.register(
                    &mut st,
                    cap,
                    Purpose::Slot {
                        slot: s.slot.clone(),
                    },
                    false,
                    now,
                );
            }
            st.matched.entry(lc(&s.slot)).or_insert_with(|| sid.clone());
            Self::bind(&mut st, &s.claim_id, &sid, now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use schedd::claims::MatchInfo;
    use schedd::JobId;
    use startd::ClaimRequest;

    fn slot_ad(name: &str) -> ClassAd {
        let mut ad = ClassAd::new();
        ad.insert_value("Name", name);
        ad
    }

    fn request(slot: &str, claim: &str) -> Message {
        Message::Startd(Event::RequestClaim {
            slot: slot.into(),
            request: Box::new(ClaimRequest {
                claim_id: claim.into(),
                job: ClassAd::new(),
                schedd: "ap".into(),
                user: "u@d".into(),
                alive_interval: None,
                by_user_priority: false,
                preempt_dynamic: Vec::new(),
            }),
        })
    }

    fn alive(claim: &str) -> Message {
        Message::Startd(Event::KeepAlive {
            claim_id: claim.into(),
        })
    }

    fn ended(claim: &str) -> Message {
        Message::ClaimNews(Action::ClaimEnded {
            slot: "slot1".into(),
            claim_id: claim.into(),
            schedd: "ap".into(),
            reason: "done".into(),
        })
    }

    /// The whole brokering: startd, negotiator and schedd each with its
    /// own broker, the messages carried by hand.
    #[test]
    fn a_slot_s_session_goes_from_the_startd_through_the_negotiator_to_the_schedd_and_binds_its_claims(
    ) {
        let now = 1_000;
        let startd = Broker::new(Arc::new(Sessions::new("ep")), "<10.0.0.3:1>", now);
        let negotiator = Broker::new(Arc::new(Sessions::new("cm")), "<10.0.0.1:1>", now);
        let schedd = Broker::new(Arc::new(Sessions::new("ap")), "<10.0.0.2:1>", now);
        let collector = Dest::role(RoleName::Collector);
        let ep = Dest::named(RoleName::Startd, "ep1@h");
        let ap = Dest::named(RoleName::Schedd, "ap");

        // The startd's ad gains the slot's session, privately.
        let ads = Message::UpdateAds {
            kind: AdType::Startd,
            ads: vec![slot_ad("slot1@ep1@h"), slot_ad("slot2@ep1@h")],
        };
        let o = startd.outgoing(RoleName::Startd, &collector, &ads, now);
        let Some(Message::UpdateAds { ads, .. }) = o.replaced else {
            panic!("the ads gain ClaimId")
        };
        let cap1 = Capability::parse(&literal_str(&ads[0], CLAIM_ID).unwrap()).unwrap();
        assert!(cedar::ad::is_private(CLAIM_ID) && cedar::ad::is_private(CAPABILITY));
        // The same session at the next update.
        let again = startd.outgoing(
            RoleName::Startd,
            &collector,
            &Message::UpdateAds {
                kind: AdType::Startd,
                ads: vec![slot_ad("slot1@ep1@h")],
            },
            now + 1,
        );
        let Some(Message::UpdateAds { ads: a2, .. }) = again.replaced else {
            panic!()
        };
        assert_eq!(literal_str(&a2[0], CLAIM_ID), Some(cap1.to_string()));

        // The negotiator reads the slot ads and the schedd's ad.
        let sched_ad = schedd.outgoing(
            RoleName::Schedd,
            &collector,
            &Message::UpdateAds {
                kind: AdType::Schedd,
                ads: vec![slot_ad("ap")],
            },
            now,
        );
        let Some(Message::UpdateAds { ads: sads, .. }) = sched_ad.replaced else {
            panic!()
        };
        negotiator.received(&Message::SlotAds(ads.clone()), &[], now);
        negotiator.received(&Message::ScheddAds(sads.clone()), &[], now);
        // MATCH_INFO in the slot's session; the matches in the schedd's,
        // handing on the slot's.
        let mi = negotiator.outgoing(
            RoleName::Negotiator,
            &ep,
            &Message::MatchInfo {
                slot: "slot1".into(),
            },
            now,
        );
        assert_eq!(mi.session.as_ref().map(|c| c.id()), Some(cap1.id()));
        assert!(startd
            .admit(
                cap1.id(),
                (RoleName::Negotiator, None),
                &Message::MatchInfo {
                    slot: "slot1".into()
                },
                now
            )
            .is_ok());
        let matches = Message::Matches {
            matches: vec![MatchInfo {
                job: JobId::new(1, 0),
                startd: "ep1@h".into(),
                slot: "slot1".into(),
                by_user_priority: false,
                cost: 1.0,
                preempt_dynamic: Vec::new(),
                group: None,
            }],
            startds: Default::default(),
        };
        let to_schedd = Dest::named(RoleName::Schedd, "ap");
        let m = negotiator.outgoing(RoleName::Negotiator, &to_schedd, &matches, now);
        let neg_cap = m.session.clone().expect("the schedd's session");
        assert_eq!(Some(neg_cap.to_string()), literal_str(&sads[0], CAPABILITY));
        assert_eq!(m.handed.len(), 1);
        assert!(schedd
            .admit(neg_cap.id(), (RoleName::Negotiator, None), &matches, now)
            .is_ok());
        // The collector (which holds the schedd's ad) answers the schedd's
        // tools in it too.
        let collector_b = Broker::new(Arc::new(Sessions::new("cm")), "<10.0.0.1:2>", now);
        collector_b.received(
            &Message::UpdateAds {
                kind: AdType::Schedd,
                ads: sads.clone(),
            },
            &[],
            now,
        );
        let answer = Message::AdminAnswer {
            id: 1,
            answer: Ok(String::new()),
        };
        let o = collector_b.outgoing(
            RoleName::Collector,
            &Dest::role(RoleName::Schedd),
            &answer,
            now,
        );
        assert_eq!(o.session.as_ref().map(|c| c.id()), Some(neg_cap.id()));
        assert!(schedd
            .admit(neg_cap.id(), (RoleName::Collector, None), &answer, now)
            .is_ok());
        assert!(schedd
            .admit(neg_cap.id(), (RoleName::Collector, None), &matches, now)
            .is_err());
        // The negotiator's session carries nothing else.
        assert!(schedd
            .admit(
                neg_cap.id(),
                (RoleName::Negotiator, None),
                &alive("c1"),
                now
            )
            .is_err());
        schedd.received_in_session(&matches, &m.handed, now);

        // The schedd claims in the slot's session, and the claim is bound
        // to it on both sides.
        let rq = request("slot1", "c1");
        let o = schedd.outgoing(RoleName::Schedd, &ep, &rq, now);
        assert_eq!(o.session.as_ref().map(|c| c.id()), Some(cap1.id()));
        assert!(startd
            .admit(cap1.id(), (RoleName::Schedd, None), &rq, now)
            .is_ok());
        assert!(startd
            .admit(cap1.id(), (RoleName::Schedd, None), &alive("c1"), now)
            .is_ok());
        // Another claim, or another slot, in this session: refused.
        assert!(startd
            .admit(cap1.id(), (RoleName::Schedd, None), &alive("c2"), now)
            .is_err());
        assert!(startd
            .admit(
                cap1.id(),
                (RoleName::Schedd, None),
                &request("slot2", "c3"),
                now
            )
            .is_err());
        // Granted: the claim keeps the session, and the slot advertises a
        // new one; the startd's news of the claim travels back in it.
        let granted = Message::ClaimNews(Action::ClaimGranted {
            slot: "slot1".into(),
            claim_id: "c1".into(),
            schedd: "ap".into(),
            slot_ad: None,
        });
        let back = startd.outgoing(RoleName::Startd, &ap, &granted, now);
        // Only that slot's startd speaks to the schedd in it.
        for (role, name) in [
            (RoleName::Startd, Some("ep2@h")),
            (RoleName::Negotiator, None),
            (RoleName::Schedd, None),
        ] {
            assert!(schedd
                .admit(cap1.id(), (role, name), &granted, now)
                .is_err());
        }
        assert_eq!(back.session.as_ref().map(|c| c.id()), Some(cap1.id()));
        assert!(schedd
            .admit(cap1.id(), (RoleName::Startd, Some("EP1@h")), &granted, now)
            .is_ok());
        let o = startd.outgoing(
            RoleName::Startd,
            &collector,
            &Message::UpdateAds {
                kind: AdType::Startd,
                ads: vec![slot_ad("slot1@ep1@h")],
            },
            now + 2,
        );
        let Some(Message::UpdateAds { ads: a3, .. }) = o.replaced else {
            panic!()
        };
        assert_ne!(literal_str(&a3[0], CLAIM_ID), Some(cap1.to_string()));
        // A request in the old session (a match older than the claim) is
        // answered with a refusal, in that session.
        let stale = request("slot1", "c4");
        schedd.outgoing(RoleName::Schedd, &ep, &stale, now);
        let r = startd
            .admit(cap1.id(), (RoleName::Schedd, None), &stale, now)
            .unwrap_err();
        let Some(answer) = r.answer.map(|a| *a) else {
            panic!("{}", r.why)
        };
        assert!(
            matches!(&answer, Message::ClaimNews(Action::ClaimRefused { claim_id, .. }) if claim_id == "c4")
        );
        let o = startd.outgoing(RoleName::Startd, &ap, &answer, now);
        assert_eq!(o.session.as_ref().map(|c| c.id()), Some(cap1.id()));
        assert!(schedd
            .admit(cap1.id(), (RoleName::Startd, None), &answer, now)
            .is_ok());

        // The claim ends: still spoken of for a while (a last keep-alive
        // is answered "no such claim"), then forgotten with its session.
        startd.outgoing(RoleName::Startd, &ap, &ended("c1"), now + 3);
        assert!(schedd
            .admit(cap1.id(), (RoleName::Startd, None), &ended("c1"), now + 3)
            .is_ok());
        assert!(schedd.claim_session("c1").is_some());
        assert!(!schedd.claim_in_session("c1", cap1.id()));
        assert!(startd
            .admit(cap1.id(), (RoleName::Schedd, None), &alive("c1"), now + 4)
            .is_ok());
        let later = now + 4 + ENDED_GRACE + 1;
        startd.claims_to_save(later);
        schedd.claims_to_save(later);
        assert!(schedd.claim_session("c1").is_none());
        let e = startd
            .admit(cap1.id(), (RoleName::Schedd, None), &alive("c1"), later)
            .unwrap_err();
        assert!(e.why.contains("no longer known"), "{}", e.why);
    }

    #[test]
    fn a_restarted_schedd_takes_back_its_claims_sessions() {
        let now = 1_000;
        let schedd = Broker::new(Arc::new(Sessions::new("ap")), "<10.0.0.2:1>", now);
        let cap = Capability::mint("<10.0.0.3:1>#1", &[cmd::FC_ROLE_MESSAGES]);
        let matches = Message::Matches {
            matches: Vec::new(),
            startds: Default::default(),
        };
        schedd.received(&matches, &[("slot1@ep1@h".into(), cap.to_string())], now);
        let ep = Dest::named(RoleName::Startd, "ep1@h");
        schedd.outgoing(RoleName::Schedd, &ep, &request("slot1", "c1"), now);
        let saved = schedd.claims_to_save(now).expect("changed");
        assert_eq!(saved.len(), 1);
        assert!(schedd.claims_to_save(now).is_none());

        let restarted = Broker::new(Arc::new(Sessions::new("ap")), "<10.0.0.2:1>", now + 5);
        restarted.restore(saved, now + 5);
        let o = restarted.outgoing(RoleName::Schedd, &ep, &alive("c1"), now + 5);
        assert_eq!(o.session, Some(cap.clone()));
        assert!(restarted
            .admit(cap.id(), (RoleName::Startd, None), &ended("c1"), now + 6)
            .is_ok());
        // Unused for long, a claim is forgotten.
        restarted.restore(
            vec![SavedClaim {
                claim_id: "c9".into(),
                slot: "slot1@ep1@h".into(),
                capability: cap.to_string(),
            }],
            now,
        );
        let left = restarted.claims_to_save(now + UNUSED_LIFETIME + 1).unwrap();
        assert!(left.is_empty());
    }

    #[test]
    fn slots_and_their_dynamic_slots() {
        assert!(same_slot("slot1", "slot1@ep1@h"));
        assert!(same_slot("slot1_3", "slot1@ep1@h"));
        assert!(!same_slot("slot11", "slot1@ep1@h"));
        assert!(!same_slot("slot2", "slot1@ep1@h"));
        assert_eq!(full_slot("slot1", Some("EP1@h")), "slot1@ep1@h");
    }
}
