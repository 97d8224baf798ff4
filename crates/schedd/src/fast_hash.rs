//! A quick hash for the schedd's own tables keyed by job ids, cluster
//! numbers and submitter names, looked up at every change to a job.
//!
//! The standard library's SipHash resists keys chosen to collide, which
//! these tables do not need (their keys are the queue's own ids and the
//! names of its submitters), and costs several times more per lookup.
//! This is the multiply-and-rotate hash rustc uses for its own tables.
//! Nothing iterates these tables where the order could show.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A `HashMap` with [`QuickHasher`].
pub(crate) type QuickMap<K, V> = HashMap<K, V, BuildHasherDefault<QuickHasher>>;

#[derive(Clone, Copy, Default)]
pub(crate) struct QuickHasher(u64);

const K: u64 = 0xf135_7aea_2e62_a9c5;

impl QuickHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.0 = (self.0 ^ word).wrapping_mul(K).rotate_left(26);
    }
}

impl Hasher for QuickHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.add(u64::from_le_bytes(c.try_into().expect("eight bytes")));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut b = [0u8; 8];
            b[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(b));
        }
    }

    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }

    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }

    #[inline]
    fn write_i64(&mut self, i: i64) {
        self.add(i as u64);
    }

    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::JobId;

    #[test]
    fn a_quick_map_keeps_and_finds_every_key() {
        let mut ids: QuickMap<JobId, i64> = QuickMap::default();
        let mut names: QuickMap<Box<str>, usize> = QuickMap::default();
        for c in 1..200 {
            for p in 0..50 {
                ids.insert(JobId::new(c, p), c * 1000 + p);
            }
            names.insert(format!("user{c}@example.org").into(), c as usize);
        }
        assert_eq!(ids.len(), 199 * 50);
        assert_eq!(ids.get(&JobId::new(17, 3)), Some(&17003));
        assert_eq!(ids.get(&JobId::new(17, 50)), None);
        assert_eq!(names.len(), 199);
        assert_eq!(names.get("user42@example.org"), Some(&42));
        assert_eq!(names.get("user42@example.or"), None);
        assert_eq!(ids.remove(&JobId::new(5, 5)), Some(5005));
        assert_eq!(ids.get(&JobId::new(5, 5)), None);
    }
}
