//! The collector role: the pool's ads (`negotiator::collector`'s store),
//! updated by the startd and the schedd, read by the negotiator and by
//! `condor_status`. Ads expire after their lifetime.

use classad::ClassAd;
use negotiator::collector::{AdType, CollectorStore};

use crate::roles::{AdminRequest, Message, Outbox, Role, RoleName};

pub struct CollectorRole {
    store: CollectorStore,
    /// The pool's name for its own ad.
    name: String,
    /// How often expired ads are dropped (seconds).
    expire_interval: u64,
}

impl CollectorRole {
    pub fn new(store: CollectorStore, expire_interval: u64, name: &str) -> CollectorRole {
        CollectorRole {
            store,
            name: name.to_string(),
            expire_interval,
        }
    }

    /// A copy of the live ads of a type (every type for `None`), for a
    /// client's query to evaluate off this role's thread.
    pub fn snapshot(&self, kind: Option<&AdType>, now: i64) -> Vec<ClassAd> {
        self.store.ads(kind, now).cloned().collect()
    }

    /// An ad a client advertised (UPDATE_*_AD).
    pub fn update(&mut self, kind: AdType, ad: ClassAd, now: i64) -> Result<(), String> {
        self.store
            .update(kind, ad, now)
            .map(|_| ())
            .map_err(|e| e.to_string())
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
        self.store
            .invalidate_matching(kind, constraint.unwrap_or(&all), now)
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
}

impl Role for CollectorRole {
    const NAME: RoleName = RoleName::Collector;

    fn receive(&mut self, from: RoleName, msg: Message, now: i64, out: &mut Outbox) {
        match msg {
            Message::UpdateAds { kind, ads } => {
                for ad in ads {
                    if let Err(e) = self.store.update(kind.clone(), ad, now) {
                        out.note(format!(
                            "collector: an ad from the {from:?} was refused: {e}"
                        ));
                    }
                }
            }
            Message::InvalidateAds { kind, names } => {
                for name in names {
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
        vec![(self.expire_interval, false)]
    }

    fn timer(&mut self, _which: usize, now: i64, _out: &mut Outbox) {
        self.store.expire(now);
    }
}
