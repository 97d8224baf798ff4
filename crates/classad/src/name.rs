//! Attribute names: case-insensitive, spelled as first written.
//!
//! ClassAd attribute names compare without regard to ASCII case, but an ad
//! prints a name the way it was first spelled. Every name carries a hash of its
//! lowercased bytes, computed once when the name is made (at parse time), so a
//! lookup during evaluation never lowercases or hashes a string again.

use std::cell::RefCell;
use std::cmp::Ordering;
use std::fmt;
use std::hash::Hasher;
use std::sync::Arc;

/// An attribute name with its precomputed case-insensitive hash: one
/// pointer, so expression trees and ads stay small.
#[derive(Clone)]
pub struct AttrName(Arc<NameData>);

struct NameData {
    hash: u64,
    special: Special,
    text: Box<str>,
}

/// Names the evaluator treats specially, recognised once when the name is
/// made rather than on every evaluation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Special {
    None,
    /// `MY`: the ad the expression lives in.
    My,
    /// `TARGET` or `other`: the other ad of the match.
    Target,
    /// `parent`: the enclosing scope.
    Parent,
    /// `CurrentTime`: the clock, when the ad does not define it.
    CurrentTime,
}

impl Special {
    fn of(text: &str) -> Special {
        if text.eq_ignore_ascii_case("my") {
            Special::My
        } else if text.eq_ignore_ascii_case("target") || text.eq_ignore_ascii_case("other") {
            Special::Target
        } else if text.eq_ignore_ascii_case("parent") {
            Special::Parent
        } else if text.eq_ignore_ascii_case("currenttime") {
            Special::CurrentTime
        } else {
            Special::None
        }
    }
}

impl AttrName {
    /// The name spelled `text`. Names are interned process-wide (up to a
    /// bound), so that the same spelling in two ads shares one text and most
    /// lookups compare pointers rather than bytes.
    pub fn new(text: &str) -> AttrName {
        interned(text)
    }

    fn make(text: &str) -> AttrName {
        AttrName(Arc::new(NameData {
            hash: fold_hash(text),
            special: Special::of(text),
            text: Box::from(text),
        }))
    }

    /// Whether this is one of the names the evaluator treats specially.
    #[inline]
    pub fn special(&self) -> Special {
        self.0.special
    }

    /// The spelling this name was written with.
    pub fn as_str(&self) -> &str {
        &self.0.text
    }

    /// The case-insensitive hash (equal for names that are equal ignoring case).
    #[inline]
    pub fn fold_hash(&self) -> u64 {
        self.0.hash
    }

    /// True if both names are the same ignoring ASCII case.
    #[inline]
    pub fn matches(&self, other: &AttrName) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
            || (self.0.hash == other.0.hash && same_name(&self.0.text, &other.0.text))
    }

    /// True if this name is `text` ignoring ASCII case.
    #[inline]
    pub fn is(&self, text: &str) -> bool {
        same_name(&self.0.text, text)
    }
}

impl PartialEq for AttrName {
    fn eq(&self, other: &AttrName) -> bool {
        self.matches(other)
    }
}
impl Eq for AttrName {}

impl std::hash::Hash for AttrName {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.0.hash)
    }
}

impl fmt::Debug for AttrName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", &*self.0.text)
    }
}

impl fmt::Display for AttrName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.text)
    }
}

impl From<&str> for AttrName {
    fn from(s: &str) -> AttrName {
        AttrName::new(s)
    }
}

/// How many distinct spellings the interner keeps; past that, names are made
/// fresh (still correct, just compared by bytes), so hostile input cannot
/// grow it without bound.
const INTERN_LIMIT: usize = 1 << 16;

/// FNV-1a, for the interner's table of exact spellings (short keys, and no
/// need to resist chosen collisions there: the table is bounded).
#[derive(Default)]
struct Fnv(u64);

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        let mut h = if self.0 == 0 {
            0xcbf2_9ce4_8422_2325
        } else {
            self.0
        };
        for b in bytes {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        self.0 = h;
    }
}

/// How many names each thread keeps at hand in front of the shared table
/// (a power of two).
const RECENT_SLOTS: usize = 256;

thread_local! {
    /// The names this thread found or made most recently, by a cheap hash of
    /// their spelling: parsing meets the same few names over and over, and a
    /// hit here costs a short hash and one comparison instead of the shared
    /// table's lock and byte-by-byte hash. (Every name here came from the
    /// shared table, or was made fresh once it was full, so sharing is
    /// unchanged.)
    static RECENT: RefCell<[Option<AttrName>; RECENT_SLOTS]> =
        const { RefCell::new([const { None }; RECENT_SLOTS]) };
}

fn interned(text: &str) -> AttrName {
    let slot = recent_slot(text.as_bytes());
    let hit = RECENT.try_with(|recent| {
        let mut recent = recent.try_borrow_mut().ok()?;
        let entry = &mut recent[slot];
        match entry {
            Some(n) if *n.0.text == *text => Some(n.clone()),
            _ => {
                let n = interned_shared(text);
                *entry = Some(n.clone());
                Some(n)
            }
        }
    });
    // Without the thread's cache (as the thread exits), the shared table alone.
    hit.ok().flatten().unwrap_or_else(|| interned_shared(text))
}

/// The slot of [`RECENT`] for a spelling: a multiplicative hash of its length
/// and of up to its first and last eight bytes (the bytes between them only
/// matter for names over sixteen bytes, where a clash costs one miss).
#[inline]
fn recent_slot(b: &[u8]) -> usize {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    let word = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap_or([0; 8]));
    let (x, y) = match b.len() {
        8.. => (word(0), word(b.len() - 8)),
        4..=7 => {
            let half = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap_or([0; 4]));
            (u64::from(half(0)), u64::from(half(b.len() - 4)))
        }
        1..=3 => (
            u64::from(b[0]) | u64::from(b[b.len() / 2]) << 8,
            u64::from(b[b.len() - 1]),
        ),
        0 => (0, 0),
    };
    let h = (x ^ (b.len() as u64)).wrapping_mul(K) ^ y;
    (h.wrapping_mul(K) >> (64 - RECENT_SLOTS.trailing_zeros())) as usize
}

fn interned_shared(text: &str) -> AttrName {
    use std::collections::HashMap;
    use std::hash::BuildHasherDefault;
    use std::sync::{OnceLock, RwLock};
    type Table = HashMap<Box<str>, AttrName, BuildHasherDefault<Fnv>>;
    static TABLE: OnceLock<RwLock<Table>> = OnceLock::new();
    let table = TABLE.get_or_init(Default::default);
    if let Some(n) = table.read().unwrap_or_else(|e| e.into_inner()).get(text) {
        return n.clone();
    }
    let mut w = table.write().unwrap_or_else(|e| e.into_inner());
    if let Some(n) = w.get(text) {
        return n.clone();
    }
    let n = AttrName::make(text);
    if w.len() < INTERN_LIMIT {
        w.insert(Box::from(text), n.clone());
    }
    n
}

/// Case-insensitive name equality, with the common exact-spelling case first.
#[inline]
pub fn same_name(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && (std::ptr::eq(a.as_ptr(), b.as_ptr())
            || a.as_bytes() == b.as_bytes()
            || a.eq_ignore_ascii_case(b))
}

/// FNV-1a over the ASCII-lowercased bytes: short names, hashed once.
pub fn fold_hash(text: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b.to_ascii_lowercase());
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// The order HTCondor keeps an ad's attributes in, and so prints them:
/// shorter names first, then case-insensitively.
pub fn htcondor_order(a: &str, b: &str) -> Ordering {
    a.len().cmp(&b.len()).then_with(|| {
        a.bytes()
            .map(|c| c.to_ascii_lowercase())
            .cmp(b.bytes().map(|c| c.to_ascii_lowercase()))
    })
}
