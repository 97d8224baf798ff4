//! The ClassAd: a set of attributes, each bound to an expression.
//!
//! An ad may be chained to a parent ad (HTCondor's `ClassAd::ChainToAd`):
//! the schedd keeps the attributes every job of a cluster shares once, in
//! the cluster ad, and each job's proc ad holds only what differs and
//! chains to it. A chained ad reads, iterates, prints and compares as the
//! flat ad of its parent's attributes overlaid by its own; writes go to
//! the ad itself only (copy on write), so the parent stays what every
//! other job of the cluster sees.

use std::fmt;
use std::sync::Arc;

use crate::expr::Expr;
use crate::name::{htcondor_order, same_name, AttrName};

/// A ClassAd. Names are case-insensitive and keep the spelling they were first
/// given; assigning an existing name replaces its expression.
///
/// Attributes are kept in the order they were inserted; [`ClassAd::iter`]
/// yields them in the order HTCondor stores and prints them (shorter names
/// first, then case-insensitively), so printed ads look like HTCondor's.
///
/// With a parent ([`ClassAd::chain_to`]), every read sees the parent's
/// attributes too (the ad's own win), in the order of the flat ad that
/// `parent.clone()` then `update(own)` would make.
#[derive(Clone, Default)]
pub struct ClassAd {
    entries: Vec<(AttrName, Expr)>,
    /// An open-addressing table over the names' case-insensitive hashes: each
    /// slot holds a position in `entries` plus one (0 is empty). Its size is a
    /// power of two at least twice the number of entries, so a lookup is
    /// usually one probe and one name comparison.
    slots: Vec<u32>,
    /// The chained parent and what this ad hides of it; boxed, so that
    /// an ad chained to nothing (most ads) grows by one word only.
    chain: Option<Box<Chain>>,
}

#[derive(Clone)]
struct Chain {
    /// The chained parent (a job's cluster ad), consulted when a name is
    /// not among this ad's own.
    parent: Arc<ClassAd>,
    /// The parent's attributes deleted from this ad: hidden, as HTCondor
    /// hides them (it writes UNDEFINED over them; an absent attribute is
    /// what a flat ad would show, so here they are absent). Empty unless
    /// a chained ad had one of its parent's attributes removed.
    hidden: Vec<AttrName>,
}

impl ClassAd {
    pub fn new() -> ClassAd {
        ClassAd::default()
    }

    /// An empty ad chained to `parent` (HTCondor's `ChainToAd`): it reads
    /// as `parent` until attributes are set or deleted in it.
    pub fn chained_to(parent: Arc<ClassAd>) -> ClassAd {
        ClassAd {
            chain: Some(Box::new(Chain {
                parent,
                hidden: Vec::new(),
            })),
            ..ClassAd::default()
        }
    }

    /// Chains this ad to `parent`: its own attributes stay and win, the
    /// parent's others show through. Replaces any parent it had (and
    /// forgets which of that parent's attributes it hid).
    pub fn chain_to(&mut self, parent: Arc<ClassAd>) {
        self.chain = Some(Box::new(Chain {
            parent,
            hidden: Vec::new(),
        }));
    }

    /// The parent this ad is chained to, if any.
    pub fn parent(&self) -> Option<&Arc<ClassAd>> {
        self.chain.as_ref().map(|c| &c.parent)
    }

    /// The ad's own attributes, in the order they were first inserted
    /// (without its parent's): what a proc ad holds beside its cluster ad.
    pub fn own(&self) -> impl Iterator<Item = (&AttrName, &Expr)> {
        self.entries.iter().map(|(n, e)| (n, e))
    }

    /// How many attributes the ad holds itself (without its parent's).
    pub fn own_len(&self) -> usize {
        self.entries.len()
    }

    /// The parent's attributes that were deleted from this ad (they do not
    /// show through).
    pub fn hidden(&self) -> &[AttrName] {
        match &self.chain {
            Some(c) => &c.hidden,
            None => &[],
        }
    }

    /// A copy holding every attribute itself, chained to nothing.
    pub fn flattened(&self) -> ClassAd {
        if self.chain.is_none() {
            return self.clone();
        }
        let mut flat = ClassAd::new();
        flat.entries.reserve(self.len());
        for (n, e) in self.iter_inserted() {
            flat.insert(n.clone(), e.clone());
        }
        flat
    }

    /// Gives back memory the ad's tables hold beyond what they need (for
    /// ads kept long, by the million: a job's proc ad).
    pub fn shrink_to_fit(&mut self) {
        self.entries.shrink_to_fit();
        if let Some(c) = &mut self.chain {
            c.hidden.shrink_to_fit();
        }
    }

    /// How many attributes the ad has, its parent's included.
    pub fn len(&self) -> usize {
        match self.parent() {
            None => self.entries.len(),
            Some(p) => {
                self.entries.len()
                    + p.iter_inserted()
                        .filter(|(n, _)| self.position(n).is_none() && !self.is_hidden(n))
                        .count()
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        match &self.chain {
            None => self.entries.is_empty(),
            Some(_) => self.entries.is_empty() && self.len() == 0,
        }
    }

    /// Sets `name` to `expr`. A name already present (ignoring case) keeps its
    /// first spelling and takes the new expression. In a chained ad the
    /// ad itself takes it (spelled as the parent spells it, if it has it).
    pub fn insert(&mut self, name: impl Into<AttrName>, expr: Expr) {
        let name = name.into();
        if let Some(pos) = self.position(&name) {
            self.entries[pos].1 = expr;
            return;
        }
        self.insert_absent(name, expr);
    }

    /// Adds `name`, known not to be among the ad's own (a caller that
    /// just looked it up does not look again); returns where it went.
    fn insert_absent(&mut self, name: AttrName, expr: Expr) -> usize {
        let name = self.unhide(name);
        self.entries.push((name, expr));
        let pos = self.entries.len() - 1;
        if self.entries.len() * 2 > self.slots.len() {
            self.reindex();
        } else {
            self.place(pos);
        }
        pos
    }

    /// Before a chained ad takes a name of its own: the name shows again if
    /// it was hidden, and takes the parent's spelling (a flat ad keeps the
    /// first spelling, which was the parent's).
    fn unhide(&mut self, name: AttrName) -> AttrName {
        let Some(chain) = &mut self.chain else {
            return name;
        };
        if !chain.hidden.is_empty() {
            chain
                .hidden
                .retain(|h| !same_name(h.as_str(), name.as_str()));
        }
        match chain.parent.lookup_entry(&name) {
            Some((spelled, _)) => spelled.clone(),
            None => name,
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
            None => {
                self.insert_absent(AttrName::new(name), e);
            }
        }
    }

    /// A writer for refreshing many attributes of this ad in the order
    /// they were written the time before (see [`Refresher`]).
    pub fn refresher(&mut self) -> Refresher<'_> {
        Refresher {
            ad: self,
            next: 0,
            first: None,
        }
    }

    /// Deletes `name`, returning the expression it had. In a chained ad a
    /// name the parent has is hidden from then on (the parent is not
    /// changed).
    pub fn remove(&mut self, name: &str) -> Option<Expr> {
        // Looked up by its text: no name is made (interned) to find one.
        self.remove_hashed(crate::name::fold_hash(name), name)
    }

    /// [`ClassAd::remove`] by a name made once: its hash is not computed
    /// again.
    pub fn remove_name(&mut self, name: &AttrName) -> Option<Expr> {
        self.remove_hashed(name.fold_hash(), name.as_str())
    }

    fn remove_hashed(&mut self, hash: u64, name: &str) -> Option<Expr> {
        let own = self.position_hashed(hash, name).map(|pos| {
            self.unindex(pos);
            let (_, e) = self.entries.remove(pos);
            e
        });
        if self.chain.is_none() || self.is_hidden_str(name) {
            return own;
        }
        let chain = self.chain.as_mut()?;
        let inherited = chain
            .parent
            .entry_hashed(hash, name)
            .map(|(n, e)| (n.clone(), e.clone()));
        match inherited {
            Some((spelled, e)) => {
                chain.hidden.push(spelled);
                own.or(Some(e))
            }
            None => own,
        }
    }

    /// Takes entry `pos` out of the index, before it leaves `entries`
    /// (linear probing's deletion by shifting back the entries after it,
    /// then every later position one down): a removal costs a pass over the
    /// index's numbers, not a rehash of every name.
    fn unindex(&mut self, pos: usize) {
        let mask = self.slots.len() - 1;
        let mut j = self.first_slot(self.entries[pos].0.fold_hash());
        while self.slots[j] != pos as u32 + 1 {
            j = (j + 1) & mask;
        }
        let mut k = (j + 1) & mask;
        loop {
            let v = self.slots[k];
            if v == 0 {
                break;
            }
            let ideal = self.first_slot(self.entries[v as usize - 1].0.fold_hash());
            // Move it back into the hole unless its home lies after the hole
            // (cyclically, in (j, k]).
            if (k.wrapping_sub(ideal) & mask) >= (k.wrapping_sub(j) & mask) {
                self.slots[j] = v;
                j = k;
            }
            k = (k + 1) & mask;
        }
        self.slots[j] = 0;
        let gone = pos as u32 + 1;
        // Every later position one down: by finding each later entry's
        // slot when there are few of them (a slot ad's claim and job
        // attributes, which go at every claim's end, are among its last),
        // else by a pass over the whole index, written without a branch
        // so that it compiles to vector instructions.
        let later = self.entries.len() - pos - 1;
        if later * 8 <= self.slots.len() {
            for p in pos + 1..self.entries.len() {
                let mut i = self.first_slot(self.entries[p].0.fold_hash());
                while self.slots[i] != p as u32 + 1 {
                    i = (i + 1) & mask;
                }
                self.slots[i] -= 1;
            }
        } else {
            for v in &mut self.slots {
                *v -= u32::from(*v > gone);
            }
        }
    }

    /// Makes room for `additional` more attributes of the ad's own, so
    /// that inserting them grows neither the list nor its index: an ad
    /// kept at its smallest (a queued job's proc ad) that is about to take
    /// many grows once instead of at every power of two.
    pub fn reserve(&mut self, additional: usize) {
        let want = self.entries.len() + additional;
        self.entries.reserve(additional);
        if want * 2 > self.slots.len() {
            self.reindex_for(want);
        }
    }

    fn reindex(&mut self) {
        self.reindex_for(self.entries.len());
    }

    /// Rebuilds the index at the size for `count` attributes.
    fn reindex_for(&mut self, count: usize) {
        let size = (count * 2).next_power_of_two().max(8);
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

    fn is_hidden(&self, name: &AttrName) -> bool {
        self.is_hidden_str(name.as_str())
    }

    fn is_hidden_str(&self, name: &str) -> bool {
        let hidden = self.hidden();
        !hidden.is_empty() && hidden.iter().any(|h| same_name(h.as_str(), name))
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
        match self.position(name) {
            Some(pos) => {
                let (n, e) = &self.entries[pos];
                Some((n, e))
            }
            None => self.inherited_entry(name),
        }
    }

    /// A chained ad's miss: the parent's entry, unless this ad deleted it.
    fn inherited_entry(&self, name: &AttrName) -> Option<(&AttrName, &Expr)> {
        let chain = self.chain.as_ref()?;
        if self.is_hidden(name) {
            return None;
        }
        chain.parent.lookup_entry(name)
    }

    /// The expression bound to `name` (any case); no allocation.
    #[inline]
    pub fn get(&self, name: &str) -> Option<&Expr> {
        self.get_hashed(crate::name::fold_hash(name), name)
    }

    /// [`ClassAd::get`] of a name already hashed: a chained ad's miss
    /// looks in its parent without hashing the name again.
    #[inline]
    fn get_hashed(&self, hash: u64, name: &str) -> Option<&Expr> {
        match self.position_hashed(hash, name) {
            Some(pos) => Some(&self.entries[pos].1),
            None => self.inherited_get(hash, name),
        }
    }

    /// [`ClassAd::lookup_entry`] by a name's text, already hashed.
    fn entry_hashed(&self, hash: u64, name: &str) -> Option<(&AttrName, &Expr)> {
        if let Some(pos) = self.position_hashed(hash, name) {
            let (n, e) = &self.entries[pos];
            return Some((n, e));
        }
        let chain = self.chain.as_ref()?;
        if self.is_hidden_str(name) {
            return None;
        }
        chain.parent.entry_hashed(hash, name)
    }

    fn inherited_get(&self, hash: u64, name: &str) -> Option<&Expr> {
        let chain = self.chain.as_ref()?;
        if self.is_hidden_str(name) {
            return None;
        }
        chain.parent.get_hashed(hash, name)
    }

    pub fn contains(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// Attributes in the order they were first inserted. In a chained ad:
    /// the parent's (those the ad sets itself in their place, those it
    /// deleted left out), then the ad's own others, as the flat ad
    /// `parent.clone()` then `update(own)` lists them.
    pub fn iter_inserted(&self) -> Iter<'_> {
        match self.parent() {
            None => Iter::Own(self.entries.iter()),
            Some(p) => {
                let mut v: Vec<(&AttrName, &Expr)> =
                    Vec::with_capacity(p.entries.len() + self.entries.len());
                for (n, e) in p.iter_inserted() {
                    if let Some(pos) = self.position(n) {
                        v.push((n, &self.entries[pos].1));
                    } else if !self.is_hidden(n) {
                        v.push((n, e));
                    }
                }
                for (n, e) in &self.entries {
                    if p.lookup_entry(n).is_none() {
                        v.push((n, e));
                    }
                }
                Iter::Merged(v.into_iter())
            }
        }
    }

    /// Attributes in HTCondor's storage (and printing) order.
    pub fn iter(&self) -> impl Iterator<Item = (&AttrName, &Expr)> {
        let mut v: Vec<(&AttrName, &Expr)> = self.iter_inserted().collect();
        v.sort_by(|a, b| htcondor_order(a.0.as_str(), b.0.as_str()));
        v.into_iter()
    }

    /// Copies every attribute of `other` into this ad (later wins).
    pub fn update(&mut self, other: &ClassAd) {
        for (n, e) in other.iter_inserted() {
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

/// The attributes of an ad in inserted order ([`ClassAd::iter_inserted`]):
/// an unchained ad's are read in place, a chained ad's merged first.
pub enum Iter<'a> {
    Own(std::slice::Iter<'a, (AttrName, Expr)>),
    Merged(std::vec::IntoIter<(&'a AttrName, &'a Expr)>),
}

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a AttrName, &'a Expr);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Iter::Own(it) => it.next().map(|(n, e)| (n, e)),
            Iter::Merged(it) => it.next(),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match self {
            Iter::Own(it) => it.size_hint(),
            Iter::Merged(it) => it.size_hint(),
        }
    }
}

impl ExactSizeIterator for Iter<'_> {}

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

/// Sets `e` to the value `v`. A number over a number (most of a refresh:
/// the clock's figures) is stored in place, with no expression made or
/// dropped.
#[inline]
fn store(e: &mut Expr, v: crate::Value) {
    use crate::Value::{Int, Real};
    match (e, v) {
        (Expr::Lit(Int(old)), Int(n)) => *old = n,
        (Expr::Lit(Real(old)), Real(n)) => *old = n,
        (e, v) => *e = Expr::from_value(v),
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
    /// Where the first write since the last `seek` landed.
    first: Option<usize>,
}

impl Refresher<'_> {
    /// Sets `name` to a literal value.
    pub fn value(&mut self, name: &str, v: impl Into<crate::Value>) {
        let v = v.into();
        // Where it is expected, stored in place (see `store`).
        if let Some((n, e)) = self.ad.entries.get_mut(self.next) {
            if same_name(n.as_str(), name) {
                store(e, v);
                self.landed(self.next);
                return;
            }
        }
        self.expr(name, Expr::from_value(v));
    }

    /// Sets `name` to the string `v`, leaving an equal string in place
    /// (states, users and job ids rarely change from one refresh to the
    /// next, and making a string value allocates).
    pub fn text(&mut self, name: &str, v: &str) {
        if let Some((n, Expr::Lit(crate::Value::Str(old)))) = self.ad.entries.get(self.next) {
            if same_name(n.as_str(), name) && old.as_str() == v {
                self.landed(self.next);
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
                    let pos = self.ad.insert_absent(AttrName::new(name), e);
                    self.landed(pos);
                    return;
                }
            },
        };
        self.ad.entries[pos].1 = e;
        self.landed(pos);
    }

    /// Sets `name` to a literal value, `name` being a name made once (the
    /// hot refreshes of a pool's slot ads): found in place by pointer,
    /// since names are interned, with neither its text compared nor its
    /// hash computed.
    ///
    /// The write in place (most of a refresh) is inlined into the caller;
    /// the lookup is not.
    #[inline]
    pub fn value_named(&mut self, name: &AttrName, v: impl Into<crate::Value>) {
        let v = v.into();
        if let Some((n, e)) = self.ad.entries.get_mut(self.next) {
            if n.matches(name) {
                store(e, v);
                self.landed(self.next);
                return;
            }
        }
        self.value_named_elsewhere(name, v);
    }

    /// [`Refresher::value_named`] of a name not where expected.
    #[inline(never)]
    fn value_named_elsewhere(&mut self, name: &AttrName, v: crate::Value) {
        match self.ad.position_hashed(name.fold_hash(), name.as_str()) {
            Some(pos) => {
                store(&mut self.ad.entries[pos].1, v);
                self.landed(pos);
            }
            None => self.add_named(name, Expr::from_value(v)),
        }
    }

    /// [`Refresher::text`] by a name made once (see
    /// [`Refresher::value_named`]).
    pub fn text_named(&mut self, name: &AttrName, v: &str) {
        if let Some((n, Expr::Lit(crate::Value::Str(old)))) = self.ad.entries.get(self.next) {
            if n.matches(name) && old.as_str() == v {
                self.landed(self.next);
                return;
            }
        }
        self.value_named(name, v);
    }

    /// [`Refresher::expr`] by a name made once (see
    /// [`Refresher::value_named`]).
    pub fn expr_named(&mut self, name: &AttrName, e: Expr) {
        match self.find_named(name) {
            Some(pos) => {
                self.ad.entries[pos].1 = e;
                self.landed(pos);
            }
            None => self.add_named(name, e),
        }
    }

    /// Where `name` is: where the next write is expected, else looked up
    /// by its hash made once.
    fn find_named(&self, name: &AttrName) -> Option<usize> {
        match self.ad.entries.get(self.next) {
            Some((n, _)) if n.matches(name) => Some(self.next),
            _ => self.ad.position_hashed(name.fold_hash(), name.as_str()),
        }
    }

    fn add_named(&mut self, name: &AttrName, e: Expr) {
        let pos = self.ad.insert_absent(name.clone(), e);
        self.landed(pos);
    }

    /// Expects the next write at `pos` (where the same attribute was found
    /// last time): a run that starts in the middle of the ad then starts
    /// in place too. A wrong guess costs a lookup, as any.
    pub fn seek(&mut self, pos: usize) {
        self.next = pos;
        self.first = None;
    }

    /// Where the first write since the last [`Refresher::seek`] landed,
    /// if there was one: where the run starts, to seek next time.
    pub fn first(&self) -> Option<usize> {
        self.first
    }

    #[inline(always)]
    fn landed(&mut self, pos: usize) {
        self.first.get_or_insert(pos);
        self.next = pos + 1;
    }

    /// Where the last write landed (0 before any).
    pub fn last(&self) -> usize {
        self.next.saturating_sub(1)
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
    fn reserved_room_keeps_every_name_found() {
        let env = crate::Env::default();
        let mut ad = ClassAd::new();
        ad.insert_value("A", 1);
        ad.shrink_to_fit();
        ad.reserve(30);
        for k in 0..40 {
            ad.insert_value(&format!("N{k}"), k);
        }
        assert!(matches!(ad.eval_attr("a", &env), Value::Int(1)));
        for k in 0..40 {
            assert!(matches!(ad.eval_attr(&format!("n{k}"), &env), Value::Int(v) if v == k));
        }
        assert_eq!(ad.len(), 41);
    }

    #[test]
    fn first_says_where_a_run_began() {
        let mut ad = ClassAd::new();
        for n in ["A", "B", "C", "D"] {
            ad.insert_value(n, 0);
        }
        let mut w = ad.refresher();
        assert_eq!(w.first(), None);
        w.seek(1);
        w.value("C", 1); // not where expected: found by name
        w.value("D", 1);
        assert_eq!(w.first(), Some(2));
        w.seek(0);
        assert_eq!(w.first(), None);
        w.value("E", 1); // new: appended
        w.text("A", "x");
        assert_eq!(w.first(), Some(4));
        assert_eq!(w.last(), 0);
    }

    #[test]
    fn a_name_made_once_removes_as_its_text_does() {
        let mut parent = ClassAd::new();
        parent.insert_value("FromParent", 1);
        let mut ad = ClassAd::chained_to(std::sync::Arc::new(parent));
        ad.insert_value("Own", 2);
        assert!(ad.remove_name(&AttrName::new("own")).is_some());
        assert!(ad.get("Own").is_none());
        assert!(ad.remove_name(&AttrName::new("FROMPARENT")).is_some());
        assert!(ad.get("FromParent").is_none());
        assert!(ad.remove_name(&AttrName::new("FromParent")).is_none());
        assert!(ad.remove_name(&AttrName::new("Never")).is_none());
        assert_eq!(ad.len(), 0);
    }

    #[test]
    fn removals_in_any_order_leave_every_other_name_found() {
        let names: Vec<String> = (0..40).map(|k| format!("Attr{k}")).collect();
        let env = crate::Env::default();
        for step in [1usize, 3, 7, 11, 13] {
            let mut ad = ClassAd::new();
            for (k, n) in names.iter().enumerate() {
                ad.insert_value(n, k as i64);
            }
            let mut left: Vec<usize> = (0..names.len()).collect();
            let mut at = 0;
            while !left.is_empty() {
                at = (at + step) % left.len();
                let k = left.remove(at);
                assert!(ad.remove(&names[k]).is_some());
                assert!(ad.get(&names[k]).is_none());
                for &other in &left {
                    assert!(
                        matches!(ad.eval_attr(&names[other], &env), Value::Int(v) if v == other as i64),
                        "{} after removing {}",
                        names[other],
                        names[k]
                    );
                }
                let order: Vec<&str> = ad.iter_inserted().map(|(n, _)| n.as_str()).collect();
                let want: Vec<&str> = left.iter().map(|&o| names[o].as_str()).collect();
                let mut sorted = want.clone();
                sorted.sort_by_key(|n| n[4..].parse::<usize>().unwrap());
                assert_eq!(order, sorted);
            }
            ad.insert_value("Again", 1i64);
            assert!(matches!(ad.eval_attr("again", &env), Value::Int(1)));
        }
    }

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
        {
            // A name made once: in place, by lookup, or added; any spelling.
            let mut w = ad.refresher();
            w.value_named(&AttrName::new("a"), 1i64);
            w.value_named(&AttrName::new("D"), 5i64);
            w.value_named(&AttrName::new("C"), 3i64);
            w.value_named(&AttrName::new("E"), 6i64);
        }
        for (name, want) in [("A", 1), ("C", 3), ("D", 5), ("e", 6)] {
            assert!(
                matches!(ad.eval_attr(name, &env), Value::Int(v) if v == want),
                "{name}"
            );
        }
        let names: Vec<&str> = ad.iter_inserted().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["A", "C", "D", "E"]);
    }
}
