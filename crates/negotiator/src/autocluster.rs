//! Autoclusters and slot classes: ads that are alike in every attribute a
//! matchmaking expression can read are matched once.
//!
//! HTCondor's schedd groups idle jobs into autoclusters by the values of the
//! "significant attributes": those any Requirements or Rank (the jobs', the
//! slots', the negotiator's) refers to. The negotiator then evaluates one
//! representative per autocluster and reuses the sorted candidate list
//! (its MatchList) for every job of it, so 100,000 identical jobs cost one
//! match. The same idea applied to slots is Nomad's "computed node class":
//! slots equal in every significant attribute rank and match alike, so they
//! are evaluated once per autocluster and handed out one by one.
//!
//! Here an ad's key is a structural hash of the expressions bound to the
//! significant names (compared exactly on a hash collision), so nothing is
//! printed or allocated per ad. Names are gathered conservatively: every
//! attribute name an expression mentions, whatever its scope, and, through
//! expressions bound to those names, the names they mention in turn.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use classad::name::Special;
use classad::{AttrName, ClassAd, Expr, Value};
use rustc_hash::{FxHashMap, FxHashSet};

/// The set of significant attribute names, case-insensitive, in the order
/// they were found (deterministic for a given input).
#[derive(Clone, Debug, Default)]
pub struct SignificantAttrs {
    names: Vec<AttrName>,
    /// Indexes into `names` by case-insensitive hash: asking for a name
    /// already there (every reference of every slot's expressions, every
    /// cycle) folds nothing and allocates nothing.
    /// (Fast hashes for these four: asked for every binding of every ad
    /// keyed, never iterated.)
    index: FxHashMap<u64, Vec<usize>>,
    /// Structural hashes of expressions already searched for references.
    walked: FxHashSet<u64>,
    /// The names' case-insensitive hashes: whether a proc ad's own
    /// attribute may be significant, without folding its name (a hash
    /// shared with another name only makes the answer "maybe").
    folded: FxHashSet<u64>,
    /// Keys of the cluster ads proc ads are chained to, each with the
    /// number of names it was computed over (names only grow, so a key
    /// over fewer is stale). The ad is held so that its address is not
    /// reused while the key is kept.
    parent_keys: FxHashMap<usize, (Arc<ClassAd>, u64, usize)>,
}

impl SignificantAttrs {
    pub fn new() -> SignificantAttrs {
        SignificantAttrs::default()
    }

    /// Adds `name`; true if it was new.
    pub fn add(&mut self, name: &str) -> bool {
        if self.contains(name) {
            return false;
        }
        self.add_name(&AttrName::new(name))
    }

    /// Adds `name`; true if it was new.
    pub fn add_name(&mut self, name: &AttrName) -> bool {
        let h = name.fold_hash();
        if let Some(at) = self.index.get(&h) {
            if at.iter().any(|&i| self.names[i].matches(name)) {
                return false;
            }
        }
        self.index.entry(h).or_default().push(self.names.len());
        self.folded.insert(h);
        self.names.push(name.clone());
        true
    }

    /// Adds every name `e` refers to; true if any was new.
    pub fn add_references(&mut self, e: &Expr) -> bool {
        let mut refs = Vec::new();
        references(e, &mut refs);
        let mut grew = false;
        for r in &refs {
            grew |= self.add_name(r);
        }
        grew
    }

    pub fn names(&self) -> &[AttrName] {
        &self.names
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    pub fn contains(&self, name: &str) -> bool {
        self.index
            .get(&classad::name::fold_hash(name))
            .is_some_and(|at| {
                at.iter()
                    .any(|&i| self.names[i].as_str().eq_ignore_ascii_case(name))
            })
    }

    /// The structural key of `ad` over the significant names, learning the
    /// names that non-literal expressions bound to them refer to (the
    /// closure HTCondor's `GetExternalReferences` follows). Returns the key
    /// and whether the set grew while computing it (then the key is
    /// incomplete and must be computed again).
    ///
    /// A proc ad that binds no significant name itself (what a job asks
    /// for is in its cluster ad; a proc has its ProcId and arguments) has
    /// its cluster ad's key, computed once for all its procs.
    pub fn key_of(&mut self, ad: &ClassAd) -> (u64, bool) {
        let Some(parent) = self.shared_parent(ad) else {
            return self.own_key_of(ad);
        };
        let at = Arc::as_ptr(parent) as usize;
        if let Some((_, key, over)) = self.parent_keys.get(&at) {
            if *over == self.names.len() {
                return (*key, false);
            }
        }
        let (key, grew) = self.own_key_of(parent);
        if !grew {
            self.parent_keys
                .insert(at, (Arc::clone(parent), key, self.names.len()));
        }
        (key, grew)
    }

    /// The parent `ad` is chained to when every significant name reads
    /// there as it reads in `ad`: `ad` neither binds nor hides one itself.
    pub(crate) fn shared_parent<'a>(&self, ad: &'a ClassAd) -> Option<&'a Arc<ClassAd>> {
        let parent = ad.parent()?;
        let significant = |n: &AttrName| self.folded.contains(&n.fold_hash());
        if ad.own().any(|(n, _)| significant(n)) || ad.hidden().iter().any(significant) {
            return None;
        }
        Some(parent)
    }

    /// Drops the kept cluster-ad keys (and the cluster ads they hold):
    /// a holder that lives across cycles calls this when the clusters it
    /// keyed may have left.
    pub fn forget_cluster_keys(&mut self) {
        self.parent_keys.clear();
    }

    /// Feeds `ad`'s binding of significant name `i` into `h` (borrowed,
    /// not cloned: this runs for every job and slot of every cycle),
    /// learning the names an expression reads the first time it is seen;
    /// whether names were learnt, and the binding.
    fn hash_binding<'a>(
        &mut self,
        ad: &'a ClassAd,
        i: usize,
        h: &mut Fnv,
    ) -> (bool, Option<&'a Expr>) {
        let bound = ad.lookup_name(&self.names[i]);
        let grew = match bound {
            None => {
                0u8.hash(h);
                false
            }
            Some(e) => {
                1u8.hash(h);
                if is_literal(e) {
                    hash_expr(e, h);
                    false
                } else {
                    let mut eh = Fnv::default();
                    hash_expr(e, &mut eh);
                    let eh = eh.finish();
                    eh.hash(h);
                    self.walked.insert(eh) && self.add_references(e)
                }
            }
        };
        (grew, bound)
    }

    fn own_key_of(&mut self, ad: &ClassAd) -> (u64, bool) {
        let mut h = Fnv::default();
        let mut grew = false;
        let mut i = 0;
        while i < self.names.len() {
            grew |= self.hash_binding(ad, i, &mut h).0;
            i += 1;
        }
        (h.finish(), grew)
    }

    /// The key of `ad` itself over the significant names that move with
    /// the clock (`moving`) or over the others, learning names as
    /// [`SignificantAttrs::key_of`] does: a slot's key in two parts, one
    /// that may be kept from cycle to cycle and one that may not. Name
    /// `i` moves if `moves[i]`, or, for a name learnt past those,
    /// `changes_with_time` says so. `bound`, if given, gets `ad`'s
    /// binding of each name hashed, in order (so that the caller need
    /// not look them up again).
    pub fn key_over<'a>(
        &mut self,
        ad: &'a ClassAd,
        moving: bool,
        moves: &[bool],
        changes_with_time: &dyn Fn(&str) -> bool,
        mut bound: Option<&mut Vec<Option<&'a Expr>>>,
    ) -> (u64, bool) {
        let mut h = Fnv::default();
        let mut grew = false;
        let mut i = 0;
        while i < self.names.len() {
            let moves = match moves.get(i) {
                Some(m) => *m,
                None => changes_with_time(self.names[i].as_str()),
            };
            if moves != moving {
                i += 1;
                continue;
            }
            let (g, b) = self.hash_binding(ad, i, &mut h);
            grew |= g;
            if let Some(out) = bound.as_mut() {
                out.push(b);
            }
            i += 1;
        }
        (h.finish(), grew)
    }

    /// Whether `a` and `b` bind every significant name to the same
    /// expression (the exact test behind a key match).
    pub fn alike(&self, a: &ClassAd, b: &ClassAd) -> bool {
        // Procs of one cluster that bind nothing significant themselves.
        if let (Some(x), Some(y)) = (self.shared_parent(a), self.shared_parent(b)) {
            if Arc::ptr_eq(x, y) {
                return true;
            }
        }
        self.names
            .iter()
            .all(|n| match (a.lookup_name(n), b.lookup_name(n)) {
                (None, None) => true,
                (Some(x), Some(y)) => same_expr(x, y),
                _ => false,
            })
    }
}

/// Groups ads into clusters of alike ads. `members` are indexes into the
/// caller's list, in the order added.
#[derive(Debug, Default)]
pub struct Clusters {
    by_key: HashMap<u64, Vec<usize>>,
    /// For each cluster, the index of its first ad (its representative).
    pub representative: Vec<usize>,
}

impl Clusters {
    /// The cluster of ad `index` with `key`, made if new. `ad_at` gives a
    /// member ad by index, for the exact comparison.
    pub fn assign<'a>(
        &mut self,
        attrs: &SignificantAttrs,
        key: u64,
        index: usize,
        ad_at: impl Fn(usize) -> &'a ClassAd,
    ) -> usize {
        let ad = ad_at(index);
        let ids = self.by_key.entry(key).or_default();
        for &id in ids.iter() {
            if attrs.alike(ad_at(self.representative[id]), ad) {
                return id;
            }
        }
        let id = self.representative.len();
        self.representative.push(index);
        ids.push(id);
        id
    }

    pub fn len(&self) -> usize {
        self.representative.len()
    }

    pub fn is_empty(&self) -> bool {
        self.representative.is_empty()
    }
}

fn is_literal(e: &Expr) -> bool {
    matches!(e, Expr::Lit(_) | Expr::RelTimeLit(_))
}

/// Every attribute name `e` mentions: unscoped names, `MY.x`, `TARGET.x`,
/// `.x`, and (conservatively) names selected from nested ads.
pub fn references(e: &Expr, out: &mut Vec<AttrName>) {
    match e {
        Expr::Lit(_) | Expr::RelTimeLit(_) => {}
        Expr::Attr(n) => {
            if matches!(n.special(), Special::None | Special::CurrentTime) {
                out.push(n.clone());
            }
        }
        Expr::Absolute(n) => out.push(n.clone()),
        Expr::Select(base, n) => {
            out.push(n.clone());
            references(base, out);
        }
        Expr::Index(a, b) | Expr::Elvis(a, b) => {
            references(a, out);
            references(b, out);
        }
        Expr::Unary(_, a) | Expr::Paren(a) => references(a, out),
        Expr::Binary(_, ab) => {
            references(&ab.0, out);
            references(&ab.1, out);
        }
        Expr::Cond(abc) => {
            references(&abc.0, out);
            references(&abc.1, out);
            references(&abc.2, out);
        }
        Expr::Call(c) => c.args.iter().for_each(|a| references(a, out)),
        Expr::List(items) => items.iter().for_each(|a| references(a, out)),
        Expr::Ad(ad) => ad.iter_inserted().for_each(|(_, a)| references(a, out)),
        Expr::Folded(f) => references(&f.expr, out),
    }
}

/// Calls whose value depends on more than their arguments' values where
/// they are evaluated (another scope, a string parsed as an expression, a
/// random draw, a log line): never treated as free of the job.
const SCOPE_READING_CALLS: [&str; 7] = [
    "eval",
    "evalineachcontext",
    "allcompare",
    "anycompare",
    "unparse",
    "random",
    "debug",
];

/// Whether `e`, evaluated with MY = `my` (and any job as TARGET, at a fixed
/// `now`), reads nothing of TARGET, so that its value is the same for every
/// job: a constant of the slot for the cycle. Every name it reads, and every
/// name the expressions bound to those read in turn, must be bound in `my`
/// (an unscoped name missing there would be looked up in TARGET), or be
/// `MY.x`, `.x` or `CurrentTime`, which never reach TARGET. `TARGET`, `MY`
/// or `parent` as values, `TARGET.x`, selections from anything else, nested
/// ads and calls that read beyond their arguments count as reading TARGET.
///
/// With `my` = `None`, only the expression's own text is judged (every
/// unscoped name taken as bound): whether it could be free for some ad.
pub fn target_free(e: &Expr, my: Option<&ClassAd>) -> bool {
    let mut seen = Vec::new();
    free_in(e, my, &mut seen)
}

fn free_in(e: &Expr, my: Option<&ClassAd>, seen: &mut Vec<AttrName>) -> bool {
    // A name MY binds: free when what it is bound to is (each name followed
    // once; a cycle evaluates alike whatever the job).
    let bound = |n: &AttrName, missing: bool, seen: &mut Vec<AttrName>| -> bool {
        let Some(my) = my else { return true };
        match my.lookup_name(n) {
            None => missing,
            Some(_) if seen.iter().any(|s| s.matches(n)) => true,
            Some(b) => {
                seen.push(n.clone());
                free_in(b, Some(my), seen)
            }
        }
    };
    match e {
        Expr::Lit(_) | Expr::RelTimeLit(_) | Expr::Folded(_) => true,
        Expr::Attr(n) => match n.special() {
            // Missing in MY, it is looked up in TARGET.
            Special::None => bound(n, false, seen),
            // Missing in MY, it is the clock.
            Special::CurrentTime => bound(n, true, seen),
            Special::My | Special::Target | Special::Parent => false,
        },
        // `.x` is looked up in MY only.
        Expr::Absolute(n) => bound(n, true, seen),
        Expr::Select(base, n) => match &**base {
            Expr::Attr(b) if b.special() == Special::My => bound(n, true, seen),
            _ => false,
        },
        Expr::Index(a, b) | Expr::Elvis(a, b) => free_in(a, my, seen) && free_in(b, my, seen),
        Expr::Unary(_, a) | Expr::Paren(a) => free_in(a, my, seen),
        Expr::Binary(_, ab) => free_in(&ab.0, my, seen) && free_in(&ab.1, my, seen),
        Expr::Cond(abc) => {
            free_in(&abc.0, my, seen) && free_in(&abc.1, my, seen) && free_in(&abc.2, my, seen)
        }
        Expr::Call(c) => {
            !SCOPE_READING_CALLS
                .iter()
                .any(|f| c.name.eq_ignore_ascii_case(f))
                && c.args.iter().all(|a| free_in(a, my, seen))
        }
        Expr::List(items) => items.iter().all(|a| free_in(a, my, seen)),
        Expr::Ad(_) => false,
    }
}

/// FNV-1a: small, fast, and stable from run to run (the standard
/// library's hasher is randomly seeded, which is fine for lookups but not
/// worth its cost here).
#[derive(Clone, Copy)]
pub struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 ^= *b as u64;
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 ^= v;
        self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        self.0 ^= self.0 >> 29;
    }
    fn write_u8(&mut self, v: u8) {
        self.write_u64(v as u64)
    }
}

fn hash_value(v: &Value, h: &mut Fnv) {
    match v {
        Value::Undefined => h.write_u64(1),
        Value::Error => h.write_u64(2),
        Value::Bool(b) => h.write_u64(3 + *b as u64),
        Value::Int(i) => {
            h.write_u64(5);
            h.write_u64(*i as u64);
        }
        Value::Real(r) => {
            h.write_u64(6);
            h.write_u64(r.to_bits());
        }
        Value::Str(s) => {
            h.write_u64(7);
            h.write(s.as_bytes());
        }
        Value::List(l) => {
            h.write_u64(8);
            l.items.iter().for_each(|e| hash_expr(e, h));
        }
        Value::Ad(a) => {
            h.write_u64(9);
            a.ad.iter_inserted().for_each(|(n, e)| {
                h.write_u64(n.fold_hash());
                hash_expr(e, h);
            });
        }
        Value::AbsTime(t) => {
            h.write_u64(10);
            let secs = t.secs;
            h.write_u64(secs as u64);
        }
        Value::RelTime(r) => {
            h.write_u64(11);
            h.write_u64(r.to_bits());
        }
    }
}

/// A structural hash of an expression (names compared ignoring case).
pub fn hash_expr(e: &Expr, h: &mut Fnv) {
    match e {
        Expr::Lit(v) => hash_value(v, h),
        Expr::RelTimeLit(r) => {
            h.write_u64(20);
            h.write_u64(r.to_bits());
        }
        Expr::Attr(n) => {
            h.write_u64(21);
            h.write_u64(n.fold_hash());
        }
        Expr::Absolute(n) => {
            h.write_u64(22);
            h.write_u64(n.fold_hash());
        }
        Expr::Select(b, n) => {
            h.write_u64(23);
            hash_expr(b, h);
            h.write_u64(n.fold_hash());
        }
        Expr::Index(a, b) => {
            h.write_u64(24);
            hash_expr(a, h);
            hash_expr(b, h);
        }
        Expr::Unary(op, a) => {
            h.write_u64(25);
            h.write(op.symbol().as_bytes());
            hash_expr(a, h);
        }
        Expr::Binary(op, ab) => {
            h.write_u64(26);
            h.write(op.symbol().as_bytes());
            hash_expr(&ab.0, h);
            hash_expr(&ab.1, h);
        }
        Expr::Cond(abc) => {
            h.write_u64(27);
            hash_expr(&abc.0, h);
            hash_expr(&abc.1, h);
            hash_expr(&abc.2, h);
        }
        Expr::Elvis(a, b) => {
            h.write_u64(28);
            hash_expr(a, h);
            hash_expr(b, h);
        }
        Expr::Paren(a) => {
            h.write_u64(29);
            hash_expr(a, h);
        }
        Expr::Call(c) => {
            h.write_u64(30);
            h.write_u64(classad::name::fold_hash(&c.name));
            h.write_u64(c.args.len() as u64);
            c.args.iter().for_each(|a| hash_expr(a, h));
        }
        Expr::List(items) => {
            h.write_u64(31);
            h.write_u64(items.len() as u64);
            items.iter().for_each(|a| hash_expr(a, h));
        }
        Expr::Ad(ad) => {
            h.write_u64(32);
            ad.iter_inserted().for_each(|(n, a)| {
                h.write_u64(n.fold_hash());
                hash_expr(a, h);
            });
        }
        Expr::Folded(f) => hash_expr(&f.expr, h),
    }
}

pub use classad::same::same_expr;

#[cfg(test)]
mod tests {
    use super::*;

    fn ad(text: &str) -> ClassAd {
        ClassAd::parse(text).unwrap()
    }

    #[test]
    fn references_follow_scopes_and_skip_my_and_target() {
        let e = classad::parse_expr("MY.Memory > TARGET.RequestMemory && Arch == \"X86_64\" && ifThenElse(isUndefined(KFlops), 1, 2)").unwrap();
        let mut refs = Vec::new();
        references(&e, &mut refs);
        let names: Vec<&str> = refs.iter().map(|n| n.as_str()).collect();
        assert_eq!(names, ["Memory", "RequestMemory", "Arch", "KFlops"]);
    }

    #[test]
    fn keys_ignore_insignificant_attributes_and_follow_internal_references() {
        let mut attrs = SignificantAttrs::new();
        attrs.add("Requirements");
        let a = ad("[Requirements = Memory > NeedMem; NeedMem = 100; ClusterId = 1]");
        let b = ad("[requirements = Memory > needmem; NeedMem = 100; ClusterId = 2]");
        let c = ad("[Requirements = Memory > NeedMem; NeedMem = 200; ClusterId = 3]");
        let (_, grew) = attrs.key_of(&a);
        assert!(grew, "NeedMem and Memory are learned from Requirements");
        let (ka, grew) = attrs.key_of(&a);
        assert!(!grew);
        let (kb, _) = attrs.key_of(&b);
        let (kc, _) = attrs.key_of(&c);
        assert_eq!(ka, kb);
        assert_ne!(ka, kc);
        assert!(attrs.alike(&a, &b));
        assert!(!attrs.alike(&a, &c));
    }

    #[test]
    fn procs_of_a_cluster_share_its_key_unless_they_bind_or_hide_a_significant_name() {
        let cluster = Arc::new(ad(
            "[Requirements = Memory >= RequestMemory; RequestMemory = 512; Cmd = \"x\"]",
        ));
        let proc_ad = |text: &str| {
            let mut p = ad(text);
            p.chain_to(Arc::clone(&cluster));
            p
        };
        let plain = proc_ad("[ProcId = 0; Args = \"0\"]");
        let plain2 = proc_ad("[ProcId = 1; Args = \"1\"]");
        let bigger = proc_ad("[ProcId = 2; requestmemory = 1024]");
        let same_value = proc_ad("[ProcId = 3; RequestMemory = 512]");
        let mut hiding = proc_ad("[ProcId = 4]");
        hiding.remove("RequestMemory");
        let flat = ad("[Requirements = Memory >= RequestMemory; RequestMemory = 512; ProcId = 9]");

        let mut attrs = SignificantAttrs::new();
        attrs.add("Requirements");
        // Learn the closure first (RequestMemory, Memory), as the cycle
        // does before it trusts any key.
        while attrs.key_of(&plain).1 {}
        let key = |attrs: &mut SignificantAttrs, a: &ClassAd| {
            let (k, grew) = attrs.key_of(a);
            assert!(!grew);
            k
        };
        let k = key(&mut attrs, &plain);
        assert_eq!(key(&mut attrs, &plain2), k);
        assert_eq!(
            key(&mut attrs, &same_value),
            k,
            "the same binding, held by the proc"
        );
        assert_eq!(
            key(&mut attrs, &flat),
            k,
            "a flat ad with the same bindings"
        );
        assert_ne!(key(&mut attrs, &bigger), k);
        assert_ne!(key(&mut attrs, &hiding), k);
        assert!(attrs.alike(&plain, &plain2));
        assert!(attrs.alike(&plain, &same_value));
        assert!(attrs.alike(&plain, &flat));
        assert!(!attrs.alike(&plain, &bigger));
        assert!(!attrs.alike(&plain, &hiding));

        // A name learned later (a slot's Rank reads Args) makes the kept
        // cluster key stale: procs with other arguments part.
        assert!(attrs.add("Args"));
        let k0 = key(&mut attrs, &plain);
        assert_ne!(key(&mut attrs, &plain2), k0);
        assert!(!attrs.alike(&plain, &plain2));
    }

    #[test]
    fn target_free_needs_every_name_read_bound_in_my() {
        let e = |t: &str| classad::parse_expr(t).unwrap();
        let slot = ad("[A = 1; B = A + 1; C = TARGET.X; D = Y; E = MY.Missing; F = G; G = F]");
        let free = |t: &str| target_free(&e(t), Some(&slot));
        assert!(free("A * 2 + B"));
        assert!(free("MY.A + MY.Missing + .Missing"));
        assert!(free("ifThenElse(isUndefined(E), 0, CurrentTime - A)"));
        assert!(free("F"), "a cycle of MY's own attributes reads no job");
        assert!(free("{A, B}"));
        assert!(!free("Missing"), "looked up in TARGET when MY has none");
        assert!(!free("TARGET.A"));
        assert!(!free("C"), "bound to an expression that reads TARGET");
        assert!(!free("D"));
        assert!(!free("eval(\"A\")"));
        assert!(!free("random(3) + A"));
        assert!(!free("TARGET"));
        assert!(!free("[x = A].x"));
        // Judged by its text alone.
        assert!(target_free(&e("Missing + A"), None));
        assert!(!target_free(&e("TARGET.QDate"), None));
    }
}
