//! Attribute names: case-insensitive, spelled as first written.
//!
//! ClassAd attribute names compare without regard to ASCII case, but an ad
//! prints a name the way it was first spelled. Every name carries a hash of its
//! lowercased bytes, computed once when the name is made (at parse time), so a
//! lookup during evaluation never lowercases or hashes a string again.

use std::cmp::Ordering;
use std::fmt;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

/// An attribute name with its precomputed case-insensitive hash.
#[derive(Clone)]
pub struct AttrName {
    text: Arc<str>,
    hash: u64,
}

impl AttrName {
    pub fn new(text: &str) -> AttrName {
        AttrName {
            hash: fold_hash(text),
            text: Arc::from(text),
        }
    }

    /// The spelling this name was written with.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The case-insensitive hash (equal for names that are equal ignoring case).
    pub fn fold_hash(&self) -> u64 {
        self.hash
    }

    /// True if both names are the same ignoring ASCII case.
    pub fn matches(&self, other: &AttrName) -> bool {
        self.hash == other.hash && self.text.eq_ignore_ascii_case(&other.text)
    }

    /// True if this name is `text` ignoring ASCII case.
    pub fn is(&self, text: &str) -> bool {
        self.text.eq_ignore_ascii_case(text)
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
        state.write_u64(self.hash)
    }
}

impl fmt::Debug for AttrName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", &*self.text)
    }
}

impl fmt::Display for AttrName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl From<&str> for AttrName {
    fn from(s: &str) -> AttrName {
        AttrName::new(s)
    }
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

/// A hasher that passes a precomputed `u64` through untouched.
#[derive(Default)]
pub struct PassThroughHasher(u64);

impl Hasher for PassThroughHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 << 8) ^ u64::from(*b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

pub type PassThroughBuild = BuildHasherDefault<PassThroughHasher>;
