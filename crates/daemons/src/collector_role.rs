//! The collector role: the pool's ads (`negotiator::collector`'s store),
//! updated by the startd and the schedd, read by the negotiator and by
//! `condor_status`. Ads expire after their lifetime.

use classad::ClassAd;
use negotiator::collector::{AdType, CollectorStore};

use crate::roles::{AdminRequest, Message, Outbox, Role, RoleName};

pub struct CollectorRole {
    store: CollectorStore,
    /// How often expired ads are dropped (seconds).
    expire_interval: u64,
}

impl CollectorRole {
    pub fn new(store: CollectorStore, expire_interval: u64) -> CollectorRole {
        CollectorRole {
            store,
            expire_interval,
        }
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
            Message::Admin {
                id,
                request: AdminRequest::Ads { ad_type },
            } => {
                let kind = ad_type.map_or(AdType::Startd, |t| AdType::from_my_type(&t));
                let texts: Vec<String> = self
                    .ads(&kind, now)
                    .iter()
                    .map(crate::schedd_service::ad_text)
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
