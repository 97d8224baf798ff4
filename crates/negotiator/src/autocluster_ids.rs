//! The autoclusters a schedd keeps between negotiation cycles.
//!
//! HTCondor's schedd files each idle job in an autocluster when the job
//! is submitted or changed (the job's `AutoClusterId`), against the
//! significant attributes the negotiator last told it, and offers its jobs
//! autocluster by autocluster; a job that did not change is not looked at
//! again, cycle after cycle. [`AutoclusterIds`] is that bookkeeping: the
//! schedd's side of a cycle asks it for the ids of its idle jobs, and only
//! jobs new or changed since the last cycle are keyed.
//!
//! A job's ad is the queue's shared `Arc`, and this table keeps a weak
//! reference to it: the queue edits an ad with `Arc::make_mut`, which,
//! with no other strong reference, moves it to a new allocation without
//! copying it, so a changed job is at another address and is keyed again
//! (the weak reference keeps the old address from being reused). A strong
//! one here made every edit of an idle job (its match, its start) copy
//! the whole ad. A proc ad
//! that binds no significant name itself has its cluster ad's autocluster:
//! it is filed by cluster, not one by one (a cluster of a million procs
//! costs one entry, not a million). The ids mean
//! something only within one schedd and one set of names; the cycle
//! checks the names before trusting them ([`crate::cycle::KeptIds`]).
//!
//! Pure: no clock, no I/O.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Weak};

use classad::ClassAd;
use rustc_hash::FxHashMap;

use crate::autocluster::SignificantAttrs;

/// One job as last keyed.
struct Filed {
    ad: Weak<ClassAd>,
    id: u32,
    /// The pass that last asked for it (jobs not asked for have left the
    /// idle set and are forgotten).
    pass: u64,
}

/// A schedd's autoclusters, kept across cycles. `K` names a job (the
/// schedd's job id).
pub struct AutoclusterIds<K> {
    /// The names the negotiator told, folded and sorted (to notice a
    /// change).
    told: Option<Vec<String>>,
    /// The told names and every name the jobs' significant expressions
    /// read (learned as jobs are keyed).
    attrs: SignificantAttrs,
    /// By job (a fast hash: a schedd asks for a million of them a cycle),
    /// for jobs that bind a significant name themselves.
    jobs: FxHashMap<K, Filed>,
    /// By the address of the cluster ad procs are chained to (held, so
    /// the address is not reused), for procs that bind none.
    clusters: FxHashMap<usize, Filed>,
    /// Each autocluster's first job, by key, for the exact comparison.
    representatives: HashMap<u64, Vec<(u32, Arc<ClassAd>)>>,
    next: u32,
    pass: u64,
    /// Bumped when the names grow: every id before is void.
    generation: u64,
    /// Jobs keyed (not found unchanged) since made, for tests and the log.
    keyed: u64,
}

impl<K> Default for AutoclusterIds<K> {
    fn default() -> Self {
        AutoclusterIds {
            told: None,
            attrs: SignificantAttrs::new(),
            jobs: FxHashMap::default(),
            clusters: FxHashMap::default(),
            representatives: HashMap::new(),
            next: 0,
            pass: 0,
            generation: 0,
            keyed: 0,
        }
    }
}

impl<K: Hash + Eq + Clone> AutoclusterIds<K> {
    pub fn new() -> Self {
        Self::default()
    }

    /// What the negotiator says is significant now. A set other than the
    /// last one files every job again; the same set keeps every id.
    pub fn set_significant(&mut self, names: &[String]) {
        let mut told: Vec<String> = names.iter().map(|n| n.to_ascii_lowercase()).collect();
        told.sort();
        told.dedup();
        if self.told.as_ref() == Some(&told) {
            return;
        }
        self.told = Some(told);
        self.start_over();
    }

    /// Whether the negotiator has said what is significant (before its
    /// first cycle it has not, and the schedd offers no ids).
    pub fn is_told(&self) -> bool {
        self.told.is_some()
    }

    fn start_over(&mut self) {
        self.attrs = SignificantAttrs::new();
        for n in self.told.iter().flatten() {
            self.attrs.add(n);
        }
        self.void();
    }

    /// Every id so far is void (the names grew).
    fn void(&mut self) {
        self.jobs.clear();
        self.clusters.clear();
        self.representatives.clear();
        self.next = 0;
        self.generation += 1;
    }

    /// The autocluster of each job of each list (the schedd's idle jobs,
    /// submitter by submitter), keying only jobs new or changed since the
    /// last call. Jobs not in the lists are forgotten.
    pub fn ids(&mut self, lists: &[&[(K, Arc<ClassAd>)]]) -> Vec<Vec<u32>> {
        self.pass += 1;
        loop {
            let generation = self.generation;
            let ids: Vec<Vec<u32>> = lists
                .iter()
                .map(|jobs| jobs.iter().map(|(k, ad)| self.id_of(k, ad)).collect())
                .collect();
            if self.generation == generation {
                self.forget_the_rest();
                return ids;
            }
            // The names grew while keying: the ids given before are void,
            // and the jobs are keyed again over the larger set.
        }
    }

    fn id_of(&mut self, job: &K, ad: &Arc<ClassAd>) -> u32 {
        let pass = self.pass;
        if let Some(parent) = self.attrs.shared_parent(ad) {
            let at = Arc::as_ptr(parent) as usize;
            if let Some(f) = self.clusters.get_mut(&at) {
                f.pass = pass;
                return f.id;
            }
            let parent = Arc::clone(parent);
            let Some(id) = self.file(&parent) else {
                return 0;
            };
            self.clusters.insert(
                at,
                Filed {
                    ad: Arc::downgrade(&parent),
                    id,
                    pass,
                },
            );
            return id;
        }
        if let Some(f) = self.jobs.get_mut(job) {
            if std::ptr::eq(f.ad.as_ptr(), Arc::as_ptr(ad)) {
                f.pass = pass;
                return f.id;
            }
        }
        let Some(id) = self.file(ad) else {
            return 0;
        };
        self.jobs.insert(
            job.clone(),
            Filed {
                ad: Arc::downgrade(ad),
                id,
                pass,
            },
        );
        id
    }

    /// The autocluster of `ad`, made if new; `None` if the names grew
    /// while keying it (every id is void then).
    fn file(&mut self, ad: &Arc<ClassAd>) -> Option<u32> {
        self.keyed += 1;
        let (key, grew) = self.attrs.key_of(ad);
        if grew {
            self.void();
            return None;
        }
        let attrs = &self.attrs;
        let reps = self.representatives.entry(key).or_default();
        let id = match reps.iter().find(|(_, rep)| attrs.alike(rep, ad)) {
            Some((id, _)) => *id,
            None => {
                let id = self.next;
                self.next += 1;
                reps.push((id, Arc::clone(ad)));
                id
            }
        };
        Some(id)
    }

    /// Jobs that were not asked for have left (run, held, removed), and
    /// autoclusters left with no job go with them.
    fn forget_the_rest(&mut self) {
        let pass = self.pass;
        // Ids are handed out densely from 0 since the last start over.
        let mut live = vec![false; self.next as usize];
        let mut seen = |f: &Filed| {
            let kept = f.pass == pass;
            if kept {
                live[f.id as usize] = true;
            }
            kept
        };
        self.jobs.retain(|_, f| seen(f));
        self.clusters.retain(|_, f| seen(f));
        self.representatives.retain(|_, reps| {
            reps.retain(|(id, _)| live[*id as usize]);
            !reps.is_empty()
        });
        self.attrs.forget_cluster_keys();
    }

    /// The names the ids were computed over: what the negotiator told and
    /// what the jobs' expressions read.
    pub fn names(&self) -> Vec<String> {
        self.attrs
            .names()
            .iter()
            .map(|n| n.as_str().to_string())
            .collect()
    }

    /// How many ads were keyed (a job, or a cluster ad for its procs; not
    /// found unchanged) so far.
    pub fn keyed(&self) -> u64 {
        self.keyed
    }

    /// How many autoclusters hold jobs now.
    pub fn len(&self) -> usize {
        self.representatives.values().map(Vec::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.representatives.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ad(text: &str) -> Arc<ClassAd> {
        Arc::new(ClassAd::parse(text).expect("ad"))
    }

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn jobs_are_keyed_once_until_they_change() {
        let mut ids = AutoclusterIds::new();
        ids.set_significant(&names(&["RequestMemory", "Requirements"]));
        let jobs = vec![
            (
                1,
                ad("[RequestMemory = 512; Requirements = true; ProcId = 0]"),
            ),
            (
                2,
                ad("[RequestMemory = 512; Requirements = true; ProcId = 1]"),
            ),
            (
                3,
                ad("[RequestMemory = 1024; Requirements = true; ProcId = 2]"),
            ),
        ];
        let first = ids.ids(&[&jobs]);
        assert_eq!(first[0][0], first[0][1]);
        assert_ne!(first[0][0], first[0][2]);
        assert_eq!(ids.keyed(), 3);
        assert_eq!(ids.len(), 2);
        // The same ads again: nothing keyed, the same ids.
        assert_eq!(ids.ids(&[&jobs]), first);
        assert_eq!(ids.keyed(), 3);
        // Job 2 changed (a new ad, as the queue's copy on edit makes it):
        // keyed again, and now alike job 3.
        let mut changed = jobs.clone();
        changed[1].1 = ad("[RequestMemory = 1024; Requirements = true; ProcId = 1]");
        let again = ids.ids(&[&changed]);
        assert_eq!(ids.keyed(), 4);
        assert_eq!(again[0][1], again[0][2]);
        assert_eq!(again[0][0], first[0][0]);
    }

    #[test]
    fn a_new_set_of_names_files_every_job_again() {
        let mut ids = AutoclusterIds::new();
        assert!(!ids.is_told());
        ids.set_significant(&names(&["RequestMemory"]));
        let jobs = vec![
            (1, ad("[RequestMemory = 512; Owner = \"a\"]")),
            (2, ad("[RequestMemory = 512; Owner = \"b\"]")),
        ];
        let before = ids.ids(&[&jobs]);
        assert_eq!(before[0][0], before[0][1]);
        // The same names in another order and case: nothing changes.
        ids.set_significant(&names(&["requestmemory"]));
        ids.ids(&[&jobs]);
        assert_eq!(ids.keyed(), 2);
        // A slot's START now reads Owner: the two differ.
        ids.set_significant(&names(&["RequestMemory", "Owner"]));
        let after = ids.ids(&[&jobs]);
        assert_ne!(after[0][0], after[0][1]);
        assert_eq!(ids.keyed(), 4);
    }

    #[test]
    fn names_a_job_expression_reads_are_learned_and_reported() {
        let mut ids = AutoclusterIds::new();
        ids.set_significant(&names(&["Requirements"]));
        let jobs = vec![
            (
                1,
                ad("[Requirements = TARGET.Memory >= MY.Need; Need = 100]"),
            ),
            (
                2,
                ad("[Requirements = TARGET.Memory >= MY.Need; Need = 200]"),
            ),
            (
                3,
                ad("[Requirements = TARGET.Memory >= MY.Need; Need = 100]"),
            ),
        ];
        let got = ids.ids(&[&jobs]);
        // `Need` became significant while keying: 1 and 2 differ (the
        // first ids, given before it was known, were redone).
        assert_ne!(got[0][0], got[0][1]);
        assert_eq!(got[0][0], got[0][2]);
        let known = ids.names();
        for n in ["Requirements", "Memory", "Need"] {
            assert!(known.iter().any(|k| k.eq_ignore_ascii_case(n)), "{n}");
        }
    }

    #[test]
    fn jobs_no_longer_offered_are_forgotten_with_their_autoclusters() {
        let mut ids = AutoclusterIds::new();
        ids.set_significant(&names(&["RequestMemory"]));
        let a = (1, ad("[RequestMemory = 1]"));
        let b = (2, ad("[RequestMemory = 2]"));
        ids.ids(&[&[a.clone(), b.clone()]]);
        assert_eq!(ids.len(), 2);
        ids.ids(&[std::slice::from_ref(&a)]);
        assert_eq!(ids.len(), 1);
        // Job 2 comes back (released): keyed again.
        let keyed = ids.keyed();
        ids.ids(&[&[a, b]]);
        assert_eq!(ids.keyed(), keyed + 1);
    }

    #[test]
    fn procs_chained_to_one_cluster_ad_share_its_autocluster() {
        let mut ids = AutoclusterIds::new();
        ids.set_significant(&names(&["RequestMemory", "Requirements"]));
        let cluster = ad("[RequestMemory = 512; Requirements = true; Cmd = \"/bin/true\"]");
        let jobs: Vec<(i32, Arc<ClassAd>)> = (0..100)
            .map(|p| {
                let mut proc_ad = ClassAd::parse(&format!("[ProcId = {p}]")).expect("ad");
                proc_ad.chain_to(Arc::clone(&cluster));
                (p, Arc::new(proc_ad))
            })
            .collect();
        let got = ids.ids(&[&jobs]);
        assert!(got[0].iter().all(|&id| id == got[0][0]));
        assert_eq!(ids.len(), 1);
        // The cluster ad was keyed, once for all its procs.
        assert_eq!(ids.keyed(), 1);
        // A proc that changed (a new ad, still binding nothing significant)
        // is not keyed again; one that asks for its own memory is, alone.
        let mut changed = jobs.clone();
        let mut moved =
            ClassAd::parse("[ProcId = 1; JobStatus = 1; NumJobStarts = 1]").expect("ad");
        moved.chain_to(Arc::clone(&cluster));
        changed[1].1 = Arc::new(moved);
        let mut own = ClassAd::parse("[ProcId = 2; RequestMemory = 2048]").expect("ad");
        own.chain_to(Arc::clone(&cluster));
        changed[2].1 = Arc::new(own);
        let got = ids.ids(&[&changed]);
        assert_eq!(ids.keyed(), 2);
        assert_eq!(got[0][1], got[0][0]);
        assert_ne!(got[0][2], got[0][0]);
        assert_eq!(ids.len(), 2);
    }
}
