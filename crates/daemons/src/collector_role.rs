//! The collector role: the pool's ads (`negotiator::collector`'s store),
//! updated by the startd and the schedd, read by the negotiator and by
//! `condor_status`. Ads expire after their lifetime. With CONDOR_VIEW_HOST
//! it forwards the slot and submitter ads it accepts (and their
//! invalidations) to view collectors; with KEEP_POOL_HISTORY it is one,
//! sampling its ads into the pool's history (`pool_history`).

use classad::ClassAd;
use negotiator::collector::{AdType, CollectorStore};

use crate::pool_history::{PoolHistory, ViewForwarder};
use crate::roles::{AdminRequest, Message, Outbox, Role, RoleName};

pub struct CollectorRole {
    store: CollectorStore,
    /// The pool's name for its own ad.
    name: String,
    /// How often expired ads are dropped (seconds).
    expire_interval: u64,
    /// CONDOR_VIEW_HOST's entries and the types to forward, until the
    /// command port (and so this collector's own address) is known.
    view_hosts: Vec<String>,
    view_types: Vec<AdType>,
    view: Option<ViewForwarder>,
    /// How this collector authenticates to them, and its own address
    /// (known once the command port is).
    view_client: Option<(cedar::client::ClientOptions, String)>,
    /// KEEP_POOL_HISTORY: the history this collector keeps.
    history: Option<PoolHistory>,
}

impl CollectorRole {
    pub fn new(store: CollectorStore, expire_interval: u64, name: &str) -> CollectorRole {
        CollectorRole {
            store,
            name: name.to_string(),
            expire_interval,
            view_hosts: Vec::new(),
            view_types: Vec::new(),
            view: None,
            view_client: None,
            history: None,
        }
    }

    /// The view collectors to forward to (CONDOR_VIEW_HOST) and which
    /// ads (CONDOR_VIEW_CLASSAD_TYPES); forwarding starts with
    /// [`CollectorRole::start_forwarding`].
    pub fn forwarding_to(mut self, hosts: Vec<String>, types: Vec<AdType>) -> CollectorRole {
        self.view_hosts = hosts;
        self.view_types = types;
        self
    }

    /// Starts forwarding to the view collectors, authenticating as
    /// `client`; `me` is this collector's command port (a view host that
    /// is this collector is left out).
    pub fn start_forwarding(&mut self, client: cedar::client::ClientOptions, me: &str) {
        self.view_client = Some((client, me.to_string()));
        self.forward();
    }

    /// CONDOR_VIEW_HOST and CONDOR_VIEW_CLASSAD_TYPES read again
    /// (`condor_reconfig`): the senders to the old view collectors end,
    /// new ones start.
    pub fn forward_again(&mut self, hosts: Vec<String>, types: Vec<AdType>) {
        if hosts == self.view_hosts && types == self.view_types {
            return;
        }
        self.view_hosts = hosts;
        self.view_types = types;
        self.forward();
    }

    fn forward(&mut self) {
        self.view = None;
        let Some((client, me)) = &self.view_client else {
            return;
        };
        if !self.view_hosts.is_empty() {
            self.view = ViewForwarder::start(
                &self.view_hosts,
                self.view_types.clone(),
                client.clone(),
                me,
            );
        }
    }

    /// Keeps the pool's history (KEEP_POOL_HISTORY).
    pub fn keeping_history(mut self, history: PoolHistory) -> CollectorRole {
        self.history = Some(history);
        self
    }

    /// Where the pool's history is, when this collector keeps it.
    pub fn history_dir(&self) -> Option<std::path::PathBuf> {
        self.history.as_ref().map(|h| h.dir().to_path_buf())
    }

    /// A copy of the live ads of a type (every type for `None`), for a
    /// client's query to evaluate off this role's thread.
    pub fn snapshot(&self, kind: Option<&AdType>, now: i64) -> Vec<ClassAd> {
        self.store.ads(kind, now).cloned().collect()
    }

    /// An ad a client advertised (UPDATE_*_AD).
    pub fn update(&mut self, kind: AdType, ad: ClassAd, now: i64) -> Result<(), String> {
        let copy = self.view.as_ref().map(|_| ad.clone());
        self.store
            .update(kind.clone(), ad, now)
            .map_err(|e| e.to_string())?;
        if let (Some(v), Some(ad)) = (&self.view, copy) {
            v.updated(&kind, &[ad]);
        }
        Ok(())
    }

    /// INVALIDATE_*: the ads of a type the constraint selects (all of the
    /// type without one).
    pub fn invalidate_matching(
        &mut self,
        kind: &AdType,
        constraint: Option<&classad::Expr>,
        now: i64,
    ) -> usize {
        let all = classad::Expr::Lit(classad::Value::Bool(true));
        let constraint = constraint.unwrap_or(&all);
        if let Some(v) = &self.view {
            v.invalidated(kind, constraint);
        }
        self.store.invalidate_matching(kind, constraint, now)
    }

    /// The collector's own ad (QUERY_COLLECTOR_ADS).
    pub fn own_ad(&self, address: &str, now: i64) -> ClassAd {
        let mut ad = ClassAd::new();
        ad.insert_value("MyType", "Collector");
        ad.insert_value("Name", self.name.as_str());
        ad.insert_value("Machine", self.name.as_str());
        ad.insert_value("MyAddress", address);
        ad.insert_value("CondorVersion", crate::command_port::CONDOR_VERSION);
        ad.insert_value("CondorPlatform", crate::command_port::CONDOR_PLATFORM);
        ad.insert_value("LastHeardFrom", now);
        ad
    }

    /// The live ads of one type (a copy: a personal pool has few).
    pub fn ads(&self, kind: &AdType, now: i64) -> Vec<ClassAd> {
        self.store.ads(Some(kind), now).cloned().collect()
    }

    /// The ads of `kind` that `keep` takes (copied only when taken).
    pub fn ads_where(
        &self,
        kind: &AdType,
        now: i64,
        keep: impl Fn(&ClassAd) -> bool,
    ) -> Vec<ClassAd> {
        self.store
            .ads(Some(kind), now)
            .filter(|ad| keep(ad))
            .cloned()
            .collect()
    }
}

impl Role for CollectorRole {
    const NAME: RoleName = RoleName::Collector;

    fn receive(&mut self, from: RoleName, msg: Message, now: i64, out: &mut Outbox) {
        match msg {
            Message::UpdateAds { kind, ads } => {
                let mut accepted = Vec::new();
                for ad in ads {
                    let copy = self.view.as_ref().map(|_| ad.clone());
                    match self.store.update(kind.clone(), ad, now) {
                        Ok(_) => accepted.extend(copy),
                        Err(e) => out.note(format!(
                            "collector: an ad from the {from:?} was refused: {e}"
                        )),
                    }
                }
                if let Some(v) = &self.view {
                    v.updated(&kind, &accepted);
                }
            }
            Message::InvalidateAds { kind, names } => {
                for name in names {
                    if let Some(v) = &self.view {
                        v.invalidated(&kind, &name_is(&name));
                    }
                    self.store.invalidate(&kind, &name);
                }
            }
            Message::QuerySlots => {
                let ads = self.ads(&AdType::Startd, now);
                out.send(from, Message::SlotAds(ads));
            }
            Message::QuerySchedds => {
                let ads = self.ads(&AdType::Schedd, now);
                out.send(from, Message::ScheddAds(ads));
            }
            Message::Admin {
                id,
                request: AdminRequest::Ads { ad_type },
            } => {
                let kind = ad_type.map_or(AdType::Startd, |t| AdType::from_my_type(&t));
                // The tools see no private attribute (a slot's ClaimId, a
                // schedd's Capability): those are the negotiator's.
                let texts: Vec<String> = self
                    .ads(&kind, now)
                    .iter()
                    .map(|ad| {
                        let mut ad = ad.clone();
                        let private: Vec<String> = ad
                            .iter()
                            .map(|(n, _)| n.to_string())
                            .filter(|n| cedar::ad::is_private(n))
                            .collect();
                        for n in private {
                            ad.remove(&n);
                        }
                        crate::schedd_service::ad_text(&ad)
                    })
                    .collect();
                out.answer(from, id, Ok(texts));
            }
            other => out.unexpected(Self::NAME, from, other),
        }
    }

    fn timers(&self) -> Vec<(u64, bool)> {
        let mut t = vec![(self.expire_interval, false)];
        if let Some(h) = &self.history {
            t.push((h.interval, false));
        }
        t
    }

    fn timer(&mut self, which: usize, now: i64, _out: &mut Outbox) {
        if which == 0 {
            self.store.expire(now);
        } else {
            let startds = self.ads(&AdType::Startd, now);
            let submitters = self.ads(&AdType::Submitter, now);
            if let Some(h) = self.history.as_mut() {
                h.sample(&startds, &submitters, now);
            }
        }
    }
}

/// `Name == "<name>"`: the constraint that invalidates one ad by name.
fn name_is(name: &str) -> classad::Expr {
    let text = format!("Name == {}", classad::Value::from(name));
    classad::parse_expr(&text).unwrap_or(classad::Expr::Lit(classad::Value::Bool(false)))
}
