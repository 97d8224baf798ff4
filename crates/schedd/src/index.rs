//! The queue's index and job counters, kept by [`JobQueue`] as jobs are
//! submitted, change status, are edited and leave, so that the questions a
//! large access point is asked all the time need no scan of the queue:
//!
//! - how many jobs, by `JobStatus`, in all, per owner and per submitter
//!   (`condor_q -totals`, the summary ad of every job query, the schedd
//!   and submitter ads sent to the collector);
//! - which jobs a constraint can select when its top-level conjuncts say
//!   `ClusterId == N`, `Owner == "x"` or `JobStatus == K` (either operand
//!   order, `=?=` too).
//!
//! The index only narrows: the caller evaluates the whole constraint on
//! every job it is given, so an indexed query answers exactly what a scan
//! answers. A job whose ad holds `ClusterId`, `Owner` or `JobStatus` in a
//! form other than the literal the queue writes (an admin's edit could
//! make one) is "irregular": it is given to every indexed query and
//! judged by the evaluator alone.
//!
//! Jobs are filed in groups, one per (owner, submitter) pair, and within
//! a group by status: a group's sets are the index, their lengths the
//! counters, so one entry per job serves both.
//!
//! [`JobQueue`]: crate::JobQueue

use std::collections::{BTreeMap, BTreeSet};
use std::ops::RangeInclusive;

use classad::expr::BinOp;
use classad::name::Special;
use classad::value::ArcStr;
use classad::{ClassAd, Expr, Value};

use rustc_hash::FxHashMap;

use crate::claims::submitter_of;
use crate::job::{attr, names, JobId, JobStatus};
use crate::queue::status_of;

/// Jobs counted by `JobStatus`: `[n]` is the number of jobs whose status
/// is HTCondor's number `n` (1 Idle, 2 Running, 3 Removed, 4 Completed,
/// 5 Held, 6 Transferring Output, 7 Suspended); `[0]` those whose ad
/// names no status the queue knows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StatusCounts(pub [u64; 8]);

impl StatusCounts {
    /// Every job counted, whatever its status.
    pub fn jobs(&self) -> u64 {
        self.0.iter().sum()
    }

    pub fn of(&self, status: JobStatus) -> u64 {
        self.0[status.number() as usize]
    }

    /// Counts one job whose status is `status` (`None`: unknown).
    pub fn count(&mut self, status: Option<JobStatus>) {
        self.0[slot(status)] += 1;
    }

    fn add(&mut self, other: &StatusCounts) {
        for (a, b) in self.0.iter_mut().zip(other.0) {
            *a += b;
        }
    }
}

fn slot(status: Option<JobStatus>) -> usize {
    status.map_or(0, |s| s.number() as usize)
}

/// Where the index files one job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct JobKey {
    /// `Owner`, when the ad holds it as a literal string (shared with the
    /// ad: a key is made twice for every change to a job).
    owner: Option<ArcStr>,
    /// Who the job is accounted to (`claims::submitter_of`).
    submitter: ArcStr,
    /// The slot of [`StatusCounts`] the job counts in.
    status: usize,
    /// `ClusterId`, `Owner` and `JobStatus` are what the index assumes:
    /// `ClusterId` the literal of the job's id, `Owner` a literal string
    /// or absent (`named_plain`), `JobStatus` a literal integer or absent
    /// (`status_plain`).
    named_plain: bool,
    status_plain: bool,
}

impl JobKey {
    pub(crate) fn of(id: JobId, ad: &ClassAd) -> JobKey {
        // Names made once: a key is made twice for every change to a job.
        let (owner, owner_plain) = match ad.lookup_name(&names::OWNER) {
            None => (None, true),
            Some(Expr::Lit(Value::Str(s))) => (Some(s.clone()), true),
            Some(_) => (None, false),
        };
        let (status, status_plain) = status_key(ad);
        let cluster_plain = matches!(
            ad.lookup_name(&names::CLUSTER_ID),
            Some(Expr::Lit(Value::Int(c))) if *c == id.cluster
        );
        JobKey {
            owner,
            submitter: submitter(ad),
            status,
            named_plain: owner_plain && cluster_plain,
            status_plain,
        }
    }

    /// The key of the job once its ad changed in nothing the key reads
    /// but `JobStatus` (what the queue writes as a job runs: never its
    /// `Owner`, `User`, `AccountingGroup` or `ClusterId`): half the
    /// lookups of [`JobKey::of`], for the queue's every event.
    pub(crate) fn with_status_of(&self, ad: &ClassAd) -> JobKey {
        let (status, status_plain) = status_key(ad);
        JobKey {
            owner: self.owner.clone(),
            submitter: self.submitter.clone(),
            status,
            named_plain: self.named_plain,
            status_plain,
        }
    }

    /// The status it files the job under (`queue::status_of` its ad).
    pub(crate) fn status(&self) -> Option<JobStatus> {
        JobStatus::from_number(self.status as i64)
    }

    fn regular(&self) -> bool {
        self.named_plain && self.status_plain
    }
}

/// The slot of the job's status, and whether `JobStatus` is a literal
/// integer or absent: one lookup of it.
fn status_key(ad: &ClassAd) -> (usize, bool) {
    match ad.lookup_name(&names::JOB_STATUS) {
        None => (slot(None), true),
        Some(Expr::Lit(Value::Int(n))) => (slot(JobStatus::from_number(*n)), true),
        Some(_) => (slot(status_of(ad)), false),
    }
}

/// `claims::submitter_of`, without its evaluations in the common case (a
/// literal `User` and no `AccountingGroup`), which gives the same answer.
fn submitter(ad: &ClassAd) -> ArcStr {
    match plain_submitter(ad) {
        Some(s) => s.clone(),
        None => ArcStr::from(submitter_of(ad)),
    }
}

/// The job's `User`, where it is a literal non-empty string and the job
/// has no `AccountingGroup`: then it is who the job is accounted to
/// (`claims::submitter_of`), with nothing evaluated.
pub(crate) fn plain_submitter(ad: &ClassAd) -> Option<&ArcStr> {
    if ad.lookup_name(&names::ACCOUNTING_GROUP).is_some() {
        return None;
    }
    match ad.lookup_name(&names::USER) {
        Some(Expr::Lit(Value::Str(s))) if !s.is_empty() => Some(s),
        _ => None,
    }
}

#[derive(Clone, Debug)]
struct Group {
    owner: Option<Box<str>>,
    submitter: Box<str>,
    by_status: [BTreeSet<JobId>; 8],
}

impl Group {
    fn counts(&self) -> StatusCounts {
        let mut c = StatusCounts::default();
        for (n, set) in c.0.iter_mut().zip(&self.by_status) {
            *n = set.len() as u64;
        }
        c
    }
}

/// A submitter's owners (usually one) and where each group is.
type OwnersOf = Vec<(Option<Box<str>>, usize)>;

/// The index and counters of one queue.
#[derive(Clone, Debug, Default)]
pub(crate) struct JobIndex {
    /// Never shrinks: an owner or submitter with no jobs left keeps an
    /// empty group (there are few of them, and they come back).
    groups: Vec<Group>,
    /// Submitter, then owner, to the group's place in `groups`. (FxHash:
    /// the keys here are the queue's own names and ids, not chosen to
    /// collide, and nothing iterates these tables where order shows.)
    lookup: FxHashMap<Box<str>, OwnersOf>,
    irregular: BTreeSet<JobId>,
    /// Each cluster's jobs by status (late materialization asks for a
    /// factory's present and idle jobs whenever one of them changes: a
    /// scan of its jobs each time made a cluster's run quadratic).
    clusters: FxHashMap<i64, StatusCounts>,
}

impl JobIndex {
    /// Where the group of `key` is in `groups` (made if new).
    fn group_at(&mut self, key: &JobKey) -> usize {
        let owner = key.owner.as_deref();
        // The common case, with nothing copied: a group already made.
        let known = self.lookup.get(&*key.submitter).and_then(|owners| {
            owners
                .iter()
                .find(|(o, _)| o.as_deref() == owner)
                .map(|(_, at)| *at)
        });
        let at = match known {
            Some(at) => at,
            None => {
                let at = self.groups.len();
                let owner: Option<Box<str>> = owner.map(Box::from);
                self.lookup
                    .entry(Box::from(&*key.submitter))
                    .or_default()
                    .push((owner.clone(), at));
                self.groups.push(Group {
                    owner,
                    submitter: Box::from(&*key.submitter),
                    by_status: Default::default(),
                });
                at
            }
        };
        at
    }

    pub(crate) fn insert(&mut self, id: JobId, key: &JobKey) {
        let at = self.group_at(key);
        self.file(at, id, key);
    }

    pub(crate) fn remove(&mut self, id: JobId, key: &JobKey) {
        let at = self.group_at(key);
        self.unfile(at, id, key);
    }

    /// Files job `id` under `key` in group `at` (`key`'s).
    fn file(&mut self, at: usize, id: JobId, key: &JobKey) {
        if self.groups[at].by_status[key.status].insert(id) {
            self.clusters.entry(id.cluster).or_default().0[key.status] += 1;
        }
        if !key.regular() {
            self.irregular.insert(id);
        }
    }

    /// Takes job `id`, filed under `key`, out of group `at` (`key`'s).
    fn unfile(&mut self, at: usize, id: JobId, key: &JobKey) {
        if self.groups[at].by_status[key.status].remove(&id) {
            if let Some(c) = self.clusters.get_mut(&id.cluster) {
                c.0[key.status] = c.0[key.status].saturating_sub(1);
                if c.jobs() == 0 {
                    self.clusters.remove(&id.cluster);
                }
            }
        }
        if !key.regular() {
            self.irregular.remove(&id);
        }
    }

    /// Cluster `cluster`'s jobs by status.
    pub(crate) fn cluster(&self, cluster: i64) -> StatusCounts {
        self.clusters.get(&cluster).copied().unwrap_or_default()
    }

    /// Job `id` was filed under `before` and is now `after`.
    pub(crate) fn rekey(&mut self, id: JobId, before: &JobKey, after: &JobKey) {
        if before == after {
            return;
        }
        let from = self.group_at(before);
        self.unfile(from, id, before);
        // A job that changed status alone (nearly every change) stays in
        // its group: found once.
        let to = if before.owner == after.owner && before.submitter == after.submitter {
            from
        } else {
            self.group_at(after)
        };
        self.file(to, id, after);
    }

    pub(crate) fn total(&self) -> StatusCounts {
        let mut c = StatusCounts::default();
        for g in &self.groups {
            c.add(&g.counts());
        }
        c
    }

    pub(crate) fn owner(&self, owner: &str) -> StatusCounts {
        let mut c = StatusCounts::default();
        for g in self
            .groups
            .iter()
            .filter(|g| g.owner.as_deref() == Some(owner))
        {
            c.add(&g.counts());
        }
        c
    }

    pub(crate) fn submitters(&self) -> BTreeMap<String, StatusCounts> {
        let mut out: BTreeMap<String, StatusCounts> = BTreeMap::new();
        for g in &self.groups {
            let c = g.counts();
            if c.jobs() > 0 {
                out.entry(g.submitter.to_string()).or_default().add(&c);
            }
        }
        out
    }

    /// The groups and status slots `terms` leave possible: `(group, slots)`.
    fn matching<'a>(&'a self, terms: &'a Terms) -> impl Iterator<Item = &'a BTreeSet<JobId>> + 'a {
        let slots = terms.status_slots();
        self.groups
            .iter()
            .filter(|g| terms.owner_may_be(g.owner.as_deref()))
            .flat_map(move |g| {
                (0..8)
                    .filter(move |s| slots & (1 << s) != 0)
                    .map(move |s| &g.by_status[s])
            })
    }
}

/// One indexed conjunct of a constraint.
#[derive(Clone, Debug, PartialEq)]
enum Term {
    Cluster(i64),
    /// The owner's name; whether it is compared case-sensitively (`=?=`).
    Owner(String, bool),
    Status(i64),
}

/// What a constraint's top-level conjuncts say about `ClusterId`, `Owner`
/// and `JobStatus`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Terms {
    terms: Vec<Term>,
    /// Some conjunct is neither an indexed term nor the literal `true`.
    others: bool,
}

impl Terms {
    /// The terms of `constraint`'s top-level conjuncts (`a && b && ...`,
    /// through parentheses). For `a && b` to be true both must be (the
    /// ClassAd `&&` is true only of two true operands), so each term
    /// holds of every job the constraint selects.
    pub fn of(constraint: &Expr) -> Terms {
        let mut t = Terms::default();
        t.walk(constraint);
        t
    }

    fn walk(&mut self, e: &Expr) {
        match e {
            Expr::Paren(inner) => self.walk(inner),
            Expr::Binary(BinOp::And, lr) => {
                self.walk(&lr.0);
                self.walk(&lr.1);
            }
            Expr::Lit(Value::Bool(true)) => {}
            Expr::Binary(op @ (BinOp::Eq | BinOp::MetaEq), lr) => {
                let term = match (attr_named(&lr.0), attr_named(&lr.1)) {
                    (Some(name), None) => term(name, *op, &lr.1),
                    (None, Some(name)) => term(name, *op, &lr.0),
                    _ => None,
                };
                match term {
                    Some(t) => self.terms.push(t),
                    None => self.others = true,
                }
            }
            _ => self.others = true,
        }
    }

    /// Whether any conjunct narrows the jobs through the index.
    pub fn narrows(&self) -> bool {
        !self.terms.is_empty()
    }

    fn cluster(&self) -> Option<Option<i64>> {
        let mut found = None;
        for t in &self.terms {
            if let Term::Cluster(c) = t {
                match found {
                    None => found = Some(Some(*c)),
                    Some(Some(f)) if f != *c => return Some(None),
                    _ => {}
                }
            }
        }
        found
    }

    fn has_owner_or_status(&self) -> bool {
        self.terms
            .iter()
            .any(|t| matches!(t, Term::Owner(..) | Term::Status(_)))
    }

    fn owner_may_be(&self, owner: Option<&str>) -> bool {
        self.terms.iter().all(|t| match t {
            Term::Owner(want, exact) => owner.is_some_and(|o| {
                if *exact {
                    o == want
                } else {
                    o.eq_ignore_ascii_case(want)
                }
            }),
            _ => true,
        })
    }

    /// The status slots the terms leave possible, a bit each. A status the
    /// queue does not know (`JobStatus == 9`) can only be in slot 0.
    fn status_slots(&self) -> u8 {
        let mut slots = 0xffu8;
        for t in &self.terms {
            if let Term::Status(k) = t {
                let s = JobStatus::from_number(*k).map_or(0, |s| s.number() as usize);
                slots &= 1 << s;
            }
        }
        slots
    }

    /// The conjuncts are all `Owner` and `JobStatus` terms of statuses the
    /// queue knows, so a regular job's group and status decide them.
    fn decided_by_groups(&self) -> bool {
        !self.others
            && self.terms.iter().all(|t| match t {
                Term::Owner(..) => true,
                Term::Status(k) => JobStatus::from_number(*k).is_some(),
                Term::Cluster(_) => false,
            })
    }
}

/// The attribute a plain reference names (`ClusterId`, not `MY.ClusterId`).
fn attr_named(e: &Expr) -> Option<&str> {
    match e {
        Expr::Attr(name) if name.special() == Special::None => Some(name.as_str()),
        _ => None,
    }
}

fn literal_of(e: &Expr) -> Option<&Value> {
    match e {
        Expr::Lit(v) => Some(v),
        Expr::Paren(inner) => literal_of(inner),
        Expr::Folded(f) => Some(&f.value),
        _ => None,
    }
}

/// `name op value` as a term, where the index can answer it. Only an
/// integer (for `ClusterId`, `JobStatus`) or a string (for `Owner`) is
/// taken: for the literal the queue writes, `==` and `=?=` are then true
/// exactly when the values are equal (`==` ignoring ASCII case).
fn term(name: &str, op: BinOp, value: &Expr) -> Option<Term> {
    let v = literal_of(value)?;
    let same = |a: &str| classad::name::same_name(name, a);
    match v {
        Value::Int(n) if same(attr::CLUSTER_ID) => Some(Term::Cluster(*n)),
        Value::Int(n) if same(attr::JOB_STATUS) => Some(Term::Status(*n)),
        Value::Str(s) if same(attr::OWNER) => Some(Term::Owner(s.to_string(), op == BinOp::MetaEq)),
        _ => None,
    }
}

/// The jobs an index lookup gives, in id order.
pub(crate) enum Candidates {
    /// Every job: the constraint names no indexed attribute.
    All,
    /// The procs of one cluster, and these others (irregular jobs).
    Cluster(i64, Vec<JobId>),
    /// Just these.
    Jobs(Vec<JobId>),
}

impl JobIndex {
    /// The jobs that `terms` leave possible; `cluster_len` counts a
    /// cluster's procs up to a limit (the queue knows them by id).
    pub(crate) fn candidates(
        &self,
        terms: &Terms,
        cluster_len: impl Fn(i64, usize) -> usize,
    ) -> Candidates {
        if !terms.narrows() {
            return Candidates::All;
        }
        let irregular = || self.irregular.iter().copied().collect::<Vec<_>>();
        let cluster = match terms.cluster() {
            // Two different clusters: none but the irregular.
            Some(None) => return Candidates::Jobs(irregular()),
            other => other.flatten(),
        };
        let grouped = terms
            .has_owner_or_status()
            .then(|| self.matching(terms).map(BTreeSet::len).sum::<usize>());
        let use_groups = match (cluster, grouped) {
            (None, _) => true,
            (Some(_), None) => false,
            (Some(c), Some(n)) => cluster_len(c, n + 1) > n,
        };
        if !use_groups {
            let c = cluster.unwrap_or_default();
            return Candidates::Cluster(
                c,
                self.irregular
                    .iter()
                    .filter(|id| id.cluster != c)
                    .copied()
                    .collect(),
            );
        }
        let sets: Vec<&BTreeSet<JobId>> = self.matching(terms).filter(|s| !s.is_empty()).collect();
        let mut ids: Vec<JobId> = Vec::with_capacity(grouped.unwrap_or(0) + self.irregular.len());
        for s in &sets {
            ids.extend(s.iter().copied());
        }
        ids.extend(self.irregular.iter().copied());
        if sets.len() > 1 || !self.irregular.is_empty() {
            ids.sort_unstable();
            ids.dedup();
        }
        Candidates::Jobs(ids)
    }

    /// The counts of the jobs `terms` select, when the groups decide every
    /// conjunct and no job is irregular; otherwise `None` (evaluate).
    pub(crate) fn count(&self, terms: &Terms) -> Option<StatusCounts> {
        if !terms.decided_by_groups() || !self.irregular.is_empty() {
            return None;
        }
        let slots = terms.status_slots();
        let mut c = StatusCounts::default();
        for g in self
            .groups
            .iter()
            .filter(|g| terms.owner_may_be(g.owner.as_deref()))
        {
            for s in (0..8).filter(|s| slots & (1 << s) != 0) {
                c.0[s] += g.by_status[s].len() as u64;
            }
        }
        Some(c)
    }
}

/// The ids of cluster `c`, as a range of [`JobId`]s.
pub(crate) fn cluster_range(c: i64) -> RangeInclusive<JobId> {
    JobId::new(c, i64::MIN)..=JobId::new(c, i64::MAX)
}
