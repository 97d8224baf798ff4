//! Maps keyed by claim id, in the ids' text order, for the schedd's
//! claims and runs.
//!
//! The order of these maps is what the schedd does things in (keep-alives
//! go out, leases are checked claim by claim), so it is the ids' text
//! order. But every id the schedd makes is `<prefix>#<n>` with one long
//! prefix, and finding one in a map of thousands compared that prefix
//! byte by byte a dozen times: most of what hearing from a startd cost.
//! A [`ByClaim`] files an id of its own prefix by what follows the
//! prefix, and compares those first by a number made of their first
//! eight bytes, which orders them as their text does; any other id (one
//! remade at a restart under another prefix) is compared by its text.

use std::cmp::Ordering;
use std::collections::btree_map;
use std::collections::BTreeMap;
use std::sync::Arc;

/// A claim id as a [`ByClaim`] files it.
#[derive(Clone, Debug)]
pub(crate) struct ClaimKey {
    /// The id; empty in a key made only to look one up (see `probe`).
    id: String,
    /// The map's prefix, when the id starts with it.
    prefix: Option<Arc<str>>,
    /// The first eight bytes after the prefix, big-endian, zero-padded,
    /// and how many bytes follow the prefix.
    word: u64,
    len: usize,
}

/// Zero-padded big-endian bytes order as the text they start: where two
/// words differ, the first differing byte is either in both texts or a
/// pad (0) against a byte of the longer text, whose prefix the shorter
/// one then is. Two texts of at most eight bytes with the same word
/// differ only in length (the longer goes on with zeros).
fn word(after: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    let n = after.len().min(8);
    b[..n].copy_from_slice(&after[..n]);
    u64::from_be_bytes(b)
}

impl ClaimKey {
    pub(crate) fn as_str(&self) -> &str {
        &self.id
    }

    fn after_prefix(&self) -> &[u8] {
        &self.id.as_bytes()[self.id.len() - self.len..]
    }
}

impl Ord for ClaimKey {
    #[inline]
    fn cmp(&self, other: &Self) -> Ordering {
        match (&self.prefix, &other.prefix) {
            // The same prefix (one allocation, so one text): what
            // follows it orders the ids.
            (Some(p), Some(q)) if Arc::ptr_eq(p, q) => self.word.cmp(&other.word).then_with(|| {
                if self.len > 8 && other.len > 8 {
                    self.after_prefix().cmp(other.after_prefix())
                } else {
                    self.len.cmp(&other.len)
                }
            }),
            // An id without the prefix differs from it within the
            // prefix's length, or is shorter and a prefix of it: that
            // orders it against every id with the prefix.
            (Some(p), None) => p.as_bytes().cmp(other.id.as_bytes()),
            (None, Some(q)) => self.id.as_bytes().cmp(q.as_bytes()),
            _ => self.id.cmp(&other.id),
        }
    }
}

impl PartialOrd for ClaimKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for ClaimKey {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for ClaimKey {}

/// A map by claim id, in the ids' text order (see the module's notes).
#[derive(Clone, Debug)]
pub(crate) struct ByClaim<V> {
    /// The prefix of the ids the schedd makes (`<id_prefix>#`); every key
    /// of this map that has it shares this one allocation.
    prefix: Arc<str>,
    map: BTreeMap<ClaimKey, V>,
}

impl<V> ByClaim<V> {
    pub(crate) fn new(prefix: Arc<str>) -> ByClaim<V> {
        ByClaim {
            prefix,
            map: BTreeMap::new(),
        }
    }

    fn key(&self, id: String) -> ClaimKey {
        match id.strip_prefix(&*self.prefix) {
            Some(after) => ClaimKey {
                word: word(after.as_bytes()),
                len: after.len(),
                prefix: Some(Arc::clone(&self.prefix)),
                id,
            },
            None => ClaimKey {
                id,
                prefix: None,
                word: 0,
                len: 0,
            },
        }
    }

    /// A key to look `id` up by. One of the map's prefix is compared by
    /// its word and length alone when what follows the prefix is short
    /// (see `word`), and needs no copy of the id.
    fn probe(&self, id: &str) -> ClaimKey {
        match id.strip_prefix(&*self.prefix) {
            Some(after) if after.len() <= 8 => ClaimKey {
                id: String::new(),
                prefix: Some(Arc::clone(&self.prefix)),
                word: word(after.as_bytes()),
                len: after.len(),
            },
            _ => self.key(id.to_string()),
        }
    }

    pub(crate) fn insert(&mut self, id: String, v: V) -> Option<V> {
        let key = self.key(id);
        self.map.insert(key, v)
    }

    // An empty map (the runs that outlived their claim, nearly always)
    // answers without a key made.
    pub(crate) fn get(&self, id: &str) -> Option<&V> {
        if self.map.is_empty() {
            return None;
        }
        self.map.get(&self.probe(id))
    }

    pub(crate) fn get_mut(&mut self, id: &str) -> Option<&mut V> {
        if self.map.is_empty() {
            return None;
        }
        let probe = self.probe(id);
        self.map.get_mut(&probe)
    }

    pub(crate) fn remove(&mut self, id: &str) -> Option<V> {
        if self.map.is_empty() {
            return None;
        }
        let probe = self.probe(id);
        self.map.remove(&probe)
    }

    pub(crate) fn contains_key(&self, id: &str) -> bool {
        self.get(id).is_some()
    }

    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// The ids and values, in the ids' text order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&String, &V)> {
        self.map.iter().map(|(k, v)| (&k.id, v))
    }

    /// The keys and values, in the ids' text order (the keys compare
    /// faster than the ids).
    pub(crate) fn keyed(&self) -> btree_map::Iter<'_, ClaimKey, V> {
        self.map.iter()
    }

    pub(crate) fn keyed_mut(&mut self) -> btree_map::IterMut<'_, ClaimKey, V> {
        self.map.iter_mut()
    }

    pub(crate) fn retain(&mut self, mut keep: impl FnMut(&str, &mut V) -> bool) {
        self.map.retain(|k, v| keep(&k.id, v));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ids of the map's prefix (short, long, empty after it, with a NUL,
    /// ten or more digits) mixed with others around and inside it.
    fn ids() -> Vec<String> {
        let mut ids: Vec<String> = [
            "<s>#",
            "<s>#1",
            "<s>#10",
            "<s>#2",
            "<s>#9",
            "<s>#99999999",
            "<s>#100000000",
            "<s>#123456789012",
            "<s>#12345678",
            "<s>#1234567",
            "<s>#1\0",
            "<s>#1\0\0x",
            "<s>",
            "<s",
            "",
            "<r>#1",
            "<t>#1",
            "<s>#1#2",
            "<s>##",
            "<s>$",
            "zzz",
            "<s>#\u{e9}",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        ids.extend((0..300).map(|n| format!("<s>#{n}")));
        ids
    }

    #[test]
    fn claims_are_kept_in_the_order_of_their_ids_text() {
        let mut map = ByClaim::new(Arc::from("<s>#"));
        for (n, id) in ids().into_iter().rev().enumerate() {
            map.insert(id, n);
        }
        let mut sorted = ids();
        sorted.sort();
        sorted.dedup();
        let kept: Vec<&String> = map.iter().map(|(id, _)| id).collect();
        assert_eq!(kept, sorted.iter().collect::<Vec<_>>());
        let keyed: Vec<&str> = map.keyed().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keyed, sorted.iter().map(String::as_str).collect::<Vec<_>>());
        for (a, _) in map.keyed() {
            for (b, _) in map.keyed() {
                assert_eq!(a.cmp(b), a.as_str().cmp(b.as_str()), "{a:?} {b:?}");
            }
        }
    }

    #[test]
    fn every_id_is_found_by_its_text_and_only_by_it() {
        let mut map = ByClaim::new(Arc::from("<s>#"));
        for id in ids() {
            map.insert(id.clone(), id);
        }
        for id in ids() {
            assert_eq!(map.get(&id), Some(&id));
            assert!(map.contains_key(&id));
        }
        assert_eq!(map.get("<s>#3000"), None);
        assert_eq!(map.get("<s>#1\0\0"), None);
        assert_eq!(map.get("<q>#1"), None);
        *map.get_mut("<s>#10").expect("kept") = "changed".into();
        assert_eq!(map.get("<s>#10").map(String::as_str), Some("changed"));
        let before = map.len();
        assert_eq!(map.remove("<s>#2").as_deref(), Some("<s>#2"));
        assert_eq!(map.remove("<s>#2"), None);
        assert_eq!(map.len(), before - 1);
        map.retain(|id, _| !id.starts_with("<s>#1"));
        assert!(map.iter().all(|(id, _)| !id.starts_with("<s>#1")));
        assert!(map.contains_key("<r>#1"));
    }

    #[test]
    fn keys_of_two_maps_order_by_their_text() {
        // Two schedds' maps, one prefix text: their keys are not the
        // same allocation's, and compare by text.
        let mut a = ByClaim::new(Arc::from("<s>#"));
        let mut b = ByClaim::new(Arc::from("<s>#"));
        a.insert("<s>#10".into(), ());
        b.insert("<s>#9".into(), ());
        let (ka, _) = a.keyed().next().expect("one");
        let (kb, _) = b.keyed().next().expect("one");
        assert!(ka < kb);
    }
}
