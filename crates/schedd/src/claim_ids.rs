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
use std::collections::BTreeMap;
use std::sync::Arc;

use rustc_hash::FxHashMap;

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

    /// What the index files this id by ([`ByClaim::found`] of its text).
    fn found(&self) -> Found {
        match self.prefix {
            Some(_) if self.len <= 8 => short(self.word, self.len),
            _ => Found::Text(self.id.clone()),
        }
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

/// How the hash index finds an id: one of the map's prefix with at
/// most eight bytes after it by those bytes' word and their count (which
/// together are those bytes, see `word`), any other by its text.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Found {
    Short(u64, usize),
    Text(String),
}

/// The index's key of an id of the map's prefix whose `len` bytes after
/// it make `word`. The word is filed with its bytes the other way round:
/// the Fx hash carries a word's low bits up into the whole hash but not
/// its high bits down, and the bytes that tell ids apart (the first
/// digits) are the word's high bits, whose hashes hashbrown's tag (the
/// hash's top bits) then hardly told apart, so that a look-up compared
/// many keys where it should compare one.
fn short(word: u64, len: usize) -> Found {
    Found::Short(word.swap_bytes(), len)
}

/// A map by claim id, in the ids' text order (see the module's notes).
///
/// Finding one claim is what the schedd does most (every word from a
/// startd), walking them in order far less: the values sit in a slab,
/// the ordered map gives their order and a hash index finds one without
/// a search of the ordered map.
#[derive(Clone, Debug)]
pub(crate) struct ByClaim<V> {
    /// The prefix of the ids the schedd makes (`<id_prefix>#`); every key
    /// of this map that has it shares this one allocation.
    prefix: Arc<str>,
    /// Each id's slot in `values`, in the ids' text order.
    order: BTreeMap<ClaimKey, usize>,
    index: FxHashMap<Found, usize>,
    /// The values; a slot emptied by a removal is listed in `vacant` and
    /// filled by the next insertion.
    values: Vec<Option<V>>,
    vacant: Vec<usize>,
}

impl<V> ByClaim<V> {
    pub(crate) fn new(prefix: Arc<str>) -> ByClaim<V> {
        ByClaim {
            prefix,
            order: BTreeMap::new(),
            index: FxHashMap::default(),
            values: Vec::new(),
            vacant: Vec::new(),
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

    /// A key to look `id` up by in the ordered map. One of the map's
    /// prefix is compared by its word and length alone when what follows
    /// the prefix is short (see `word`), and needs no copy of the id.
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

    /// What the index finds `id` by (a copy of the id only for one not
    /// of the map's prefix, or past ten million claims).
    fn found(&self, id: &str) -> Found {
        match id.strip_prefix(&*self.prefix) {
            Some(after) if after.len() <= 8 => short(word(after.as_bytes()), after.len()),
            _ => Found::Text(id.to_string()),
        }
    }

    /// The slot of `id`, if the map has it.
    fn slot(&self, id: &str) -> Option<usize> {
        if self.order.is_empty() {
            return None;
        }
        self.index.get(&self.found(id)).copied()
    }

    pub(crate) fn insert(&mut self, id: String, v: V) -> Option<V> {
        if let Some(i) = self.slot(&id) {
            return self.values[i].replace(v);
        }
        let found = self.found(&id);
        let i = match self.vacant.pop() {
            Some(i) => {
                self.values[i] = Some(v);
                i
            }
            None => {
                self.values.push(Some(v));
                self.values.len() - 1
            }
        };
        let key = self.key(id);
        self.order.insert(key, i);
        self.index.insert(found, i);
        None
    }

    // An empty map (the runs that outlived their claim, nearly always)
    // answers without a key made.
    pub(crate) fn get(&self, id: &str) -> Option<&V> {
        self.values[self.slot(id)?].as_ref()
    }

    pub(crate) fn get_mut(&mut self, id: &str) -> Option<&mut V> {
        let i = self.slot(id)?;
        self.values[i].as_mut()
    }

    pub(crate) fn remove(&mut self, id: &str) -> Option<V> {
        if self.order.is_empty() {
            return None;
        }
        let i = self.index.remove(&self.found(id))?;
        self.order.remove(&self.probe(id));
        self.vacant.push(i);
        self.values[i].take()
    }

    pub(crate) fn contains_key(&self, id: &str) -> bool {
        self.slot(id).is_some()
    }

    pub(crate) fn len(&self) -> usize {
        self.order.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    fn value(&self, i: usize) -> &V {
        self.values[i]
            .as_ref()
            .expect("an id's slot holds its value")
    }

    /// The ids and values, in the ids' text order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&String, &V)> {
        self.order.iter().map(|(k, &i)| (&k.id, self.value(i)))
    }

    /// The keys and values, in the ids' text order (the keys compare
    /// faster than the ids).
    pub(crate) fn keyed(&self) -> impl Iterator<Item = (&ClaimKey, &V)> {
        self.order.iter().map(|(k, &i)| (k, self.value(i)))
    }

    pub(crate) fn keyed_mut(&mut self) -> impl Iterator<Item = (&ClaimKey, &mut V)> {
        // Each id has its own slot: every value is handed out once.
        let mut slots: Vec<Option<&mut V>> = self.values.iter_mut().map(Option::as_mut).collect();
        self.order.iter().map(move |(k, &i)| {
            let v = slots[i].take().expect("an id's slot holds its value");
            (k, v)
        })
    }

    pub(crate) fn retain(&mut self, mut keep: impl FnMut(&str, &mut V) -> bool) {
        let (values, vacant, index) = (&mut self.values, &mut self.vacant, &mut self.index);
        self.order.retain(|k, &mut i| {
            let v = values[i].as_mut().expect("an id's slot holds its value");
            if keep(&k.id, v) {
                return true;
            }
            values[i] = None;
            vacant.push(i);
            index.remove(&k.found());
            false
        });
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

    #[test]
    fn ids_removed_and_made_again_are_found_and_kept_in_order() {
        // Removals leave slots that later insertions fill: what is found
        // and the order must not depend on which slot a value sits in.
        let mut map = ByClaim::new(Arc::from("<s>#"));
        let mut model = BTreeMap::new();
        for (n, id) in ids().into_iter().enumerate() {
            map.insert(id.clone(), n);
            model.insert(id, n);
        }
        for (n, id) in ids().into_iter().enumerate().filter(|(n, _)| n % 3 == 0) {
            assert_eq!(map.remove(&id), model.remove(&id), "{id:?} {n}");
        }
        map.retain(|id, v| {
            *v += 1;
            !id.ends_with('7')
        });
        model.retain(|id, v| {
            *v += 1;
            !id.ends_with('7')
        });
        for id in ["<s>#7", "<s>#1000", "<other>", "<s>#123456789012"] {
            assert_eq!(
                map.insert(id.to_string(), 1),
                model.insert(id.to_string(), 1)
            );
        }
        // Made again over a value it has: the value is replaced.
        assert_eq!(map.insert("<s>#7".into(), 2), Some(1));
        model.insert("<s>#7".into(), 2);
        let kept: Vec<(&String, &usize)> = map.iter().collect();
        assert_eq!(kept, model.iter().collect::<Vec<_>>());
        for id in ids() {
            assert_eq!(map.get(&id), model.get(&id), "{id:?}");
        }
        for (_, v) in map.keyed_mut() {
            *v *= 10;
        }
        let keyed: Vec<(&str, usize)> = map.keyed().map(|(k, &v)| (k.as_str(), v)).collect();
        let want: Vec<(&str, usize)> = model.iter().map(|(k, &v)| (k.as_str(), v * 10)).collect();
        assert_eq!(keyed, want);
        assert_eq!(map.len(), model.len());
    }
}
