//! The ClassAd: a set of attributes, each bound to an expression.

use std::fmt;

use crate::expr::Expr;
use crate::name::{htcondor_order, same_name, AttrName};

/// A ClassAd. Names are case-insensitive and keep the spelling they were first
/// given; assigning an existing name replaces its expression.
///
/// Attributes are kept in the order they were inserted; [`ClassAd::iter`]
/// yields them in the order HTCondor stores and prints them (shorter names
/// first, then case-insensitively), so printed ads look like HTCondor's.
#[derive(Clone, Default)]
pub struct ClassAd {
    entries: Vec<(AttrName, Expr)>,
    /// An open-addressing table over the names' case-insensitive hashes: each
    /// slot holds a position in `entries` plus one (0 is empty). Its size is a
    /// power of two at least twice the number of entries, so a lookup is
    /// usually one probe and one name comparison.
    slots: Vec<u32>,
}

impl ClassAd {
    pub fn new() -> ClassAd {
        ClassAd::default()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Sets `name` to `expr`. A name already present (ignoring case) keeps its
    /// first spelling and takes the new expression.
    pub fn insert(&mut self, name: impl Into<AttrName>, expr: Expr) {
        let name = name.into();
        if let Some(pos) = self.position(&name) {
            self.entries[pos].1 = expr;
            return;
        }
        self.entries.push((name, expr));
        if self.entries.len() * 2 > self.slots.len() {
            self.reindex();
        } else {
            let pos = self.entries.len() - 1;
            self.place(pos);
        }
    }

    /// Parses `text` as an expression and sets `name` to it.
    pub fn insert_expr(&mut self, name: &str, text: &str) -> Result<(), crate::ParseError> {
        let e = crate::parser::parse_expr(text)?;
        self.insert(name, e);
        Ok(())
    }

    /// Sets `name` to a literal value.
    pub fn insert_value(&mut self, name: &str, v: impl Into<crate::Value>) {
        // Daemons refresh the same attributes of an ad over and over: an
        // existing name takes the new value without making (interning) a
        // name again.
        let e = Expr::from_value(v.into());
        match self.position_hashed(crate::name::fold_hash(name), name) {
            Some(pos) => self.entries[pos].1 = e,
            None => self.insert(AttrName::new(name), e),
        }
    }

    /// A writer for refreshing many attributes of this ad in the order
    /// they were written the time before (see [`Refresher`]).
    pub fn refresher(&mut self) -> Refresher<'_> {
        Refresher { ad: self, next: 0 }
    }

    pub fn remove(&mut self, name: &str) -> Option<Expr> {
        let pos = self.position(&AttrName::new(name))?;
        let (_, e) = self.entries.remove(pos);
        self.reindex();
        Some(e)
    }

    fn reindex(&mut self) {
        let size = (self.entries.len() * 2).next_power_of_two().max(8);
        self.slots.clear();
        self.slots.resize(size, 0);
        for pos in 0..self.entries.len() {
            self.place(pos);
        }
    }

    #[inline]
    fn first_slot(&self, hash: u64) -> usize {
        ((hash ^ (hash >> 29)) as usize) & (self.slots.len() - 1)
    }

    fn place(&mut self, pos: usize) {
        let mask = self.slots.len() - 1;
        let mut i = self.first_slot(self.entries[pos].0.fold_hash());
        while self.slots[i] != 0 {
            i = (i + 1) & mask;
        }
        self.slots[i] = pos as u32 + 1;
    }

    fn position(&self, name: &AttrName) -> Option<usize> {
        self.position_hashed(name.fold_hash(), name.as_str())
    }

    #[inline(always)]
    fn position_hashed(&self, hash: u64, name: &str) -> Option<usize> {
        if self.slots.is_empty() {
            return None;
        }
        let mask = self.slots.len() - 1;
        let mut i = self.first_slot(hash);
        loop {
            let slot = self.slots[i];
            if slot == 0 {
                return None;
            }
            let pos = slot as usize - 1;
            let n = &self.entries[pos].0;
            if n.fold_hash() == hash && same_name(n.as_str(), name) {
                return Some(pos);
            }
            i = (i + 1) & mask;
        }
    }

    /// The expression bound to `name` (any case).
    #[inline]
    pub fn lookup_name(&self, name: &AttrName) -> Option<&Expr> {
        self.lookup_entry(name).map(|(_, e)| e)
    }

    /// The entry (name as spelled in this ad, and expression) for `name`.
    #[inline]
    pub fn lookup_entry(&self, name: &AttrName) -> Option<(&AttrName, &Expr)> {
        let pos = self.position(name)?;
        let (n, e) = &self.entries[pos];
        Some((n, e))
    }

    /// The expression bound to `name` (any case); no allocation.
    pub fn get(&self, name: &str) -> Option<&Expr> {
        let pos = self.position_hashed(crate::name::fold_hash(name), name)?;
        Some(&self.entries[pos].1)
    }

    pub fn contains(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// Attributes in the order they were first inserted.
    pub fn iter_inserted(&self) -> impl Iterator<Item = (&AttrName, &Expr)> {
        self.entries.iter().map(|(n, e)| (n, e))
    }

    /// Attributes in HTCondor's storage (and printing) order.
    pub fn iter(&self) -> impl Iterator<Item = (&AttrName, &Expr)> {
        let mut v: Vec<&(AttrName, Expr)> = self.entries.iter().collect();
        v.sort_by(|a, b| htcondor_order(a.0.as_str(), b.0.as_str()));
        v.into_iter().map(|(n, e)| (n, e))
    }

    /// Copies every attribute of `other` into this ad (later wins).
    pub fn update(&mut self, other: &ClassAd) {
        for (n, e) in &other.entries {
            self.insert(n.clone(), e.clone());
        }
    }

    /// Parses one ad in new syntax (`[ a = 1; b = "x" ]`).
    pub fn parse(text: &str) -> Result<ClassAd, crate::ParseError> {
        crate::parser::parse_ad(text)
    }

    /// Evaluates attribute `name` with this ad as MY and no TARGET.
    pub fn eval_attr(&self, name: &str, env: &crate::Env) -> crate::Value {
        crate::eval::eval_attr(self, None, name, env)
    }

    /// Evaluates `expr` with this ad as MY and no TARGET.
    pub fn eval(&self, expr: &Expr, env: &crate::Env) -> crate::Value {
        crate::eval::eval_expr(expr, Some(self), None, env)
    }
}

impl fmt::Debug for ClassAd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self}")
    }
}

/// Prints the ad on one line in new syntax, as HTCondor's unparser does.
impl fmt::Display for ClassAd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = String::new();
        crate::unparse::ad_into(&mut s, self);
        f.write_str(&s)
    }
}

/// Sets attributes of an ad in a run, expecting each where the one before
/// was followed last time: a daemon that refreshes the same few dozen
/// attributes of its ads on every poll then writes each in place, in
/// order, instead of looking it up in the table (the lookup's memory
/// accesses dominate that work in pools of thousands of slots). A name not
/// found where expected is looked up as usual, and the run goes on from
/// there; a new name is added at the end.
pub struct Refresher<'a> {
    ad: &'a mut ClassAd,
    next: usize,
}

impl Refresher<'_> {
    /// Sets `name` to a literal value.
    pub fn value(&mut self, name: &str, v: impl Into<crate::Value>) {
        self.expr(name, Expr::from_value(v.into()));
    }

    /// Sets `name` to the string `v`, leaving an equal string in place
    /// (states, users and job ids rarely change from one refresh to the
    /// next, and making a string value allocates).
    pub fn text(&mut self, name: &str, v: &str) {
        if let Some((n, Expr::Lit(crate::Value::Str(old)))) = self.ad.entries.get(self.next) {
            if same_name(n.as_str(), name) && old.as_str() == v {
                self.next += 1;
                return;
            }
        }
        self.value(name, v);
    }

    /// Sets `name` to `e`.
    pub fn expr(&mut self, name: &str, e: Expr) {
        let pos = match self.ad.entries.get(self.next) {
            Some((n, _)) if same_name(n.as_str(), name) => self.next,
            _ => match self.ad.position_hashed(crate::name::fold_hash(name), name) {
                Some(p) => p,
                None => {
                    self.ad.insert(AttrName::new(name), e);
                    self.next = self.ad.entries.len();
                    return;
                }
            },
        };
        self.ad.entries[pos].1 = e;
        self.next = pos + 1;
    }

    /// The ad itself, for reads and removals between writes.
    pub fn ad(&mut self) -> &mut ClassAd {
        self.ad
    }
}

#[cfg(test)]
mod refresher_tests {
    use super::*;
    use crate::Value;

    #[test]
    fn a_refresher_writes_in_place_adds_new_names_and_ignores_case() {
        let mut ad = ClassAd::parse("[ A = 1; B = 2; C = 3 ]").unwrap();
        {
            let mut w = ad.refresher();
            w.value("a", 10i64);
            w.value("B", 20i64);
            // Out of order: found by lookup.
            w.value("c", 30i64);
            w.value("A", 11i64);
            w.value("D", 4i64);
            w.ad().remove("B");
            w.value("C", 31i64);
        }
        let env = crate::Env::default();
        assert_eq!(ad.len(), 3);
        assert!(matches!(ad.eval_attr("A", &env), Value::Int(11)));
        assert!(matches!(ad.eval_attr("C", &env), Value::Int(31)));
        assert!(matches!(ad.eval_attr("D", &env), Value::Int(4)));
        assert!(ad.get("B").is_none());
        {
            let mut w = ad.refresher();
            w.text("A", "same");
            w.text("A", "same");
            w.text("C", "other");
        }
        assert_eq!(ad.eval_attr("A", &env).to_string(), "\"same\"");
        assert_eq!(ad.eval_attr("C", &env).to_string(), "\"other\"");
        // The first spelling is kept.
        let names: Vec<&str> = ad.iter_inserted().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["A", "C", "D"]);
    }
}
