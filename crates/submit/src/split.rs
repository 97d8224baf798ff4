//! Whole job ads split into a cluster ad and proc ads, as HTCondor's
//! client (`condor_submit`, the Python bindings) splits them before it
//! sends a cluster to the schedd: the first job, less its `ProcId`, is the
//! cluster ad; each job's proc ad holds only what differs from it. The
//! submitting tool sends them so; the simulator queues them so, as the
//! schedd then keeps them.

use classad::ClassAd;

/// Whole job ads (as the submit language makes them) as HTCondor's client
/// splits them: the cluster ad is the first job's (less `ProcId`), and each
/// proc ad holds only the attributes whose text differs from it (and its
/// `JobStatus`, where that differs).
pub fn split_jobs(jobs: &[ClassAd]) -> (ClassAd, Vec<ClassAd>) {
    let mut splitter = Splitter::default();
    let mut cluster = ClassAd::new();
    let procs = jobs
        .iter()
        .map(|job| {
            let (c, p) = splitter.split(job);
            if let Some(c) = c {
                cluster = c;
            }
            p
        })
        .collect();
    (cluster, procs)
}

/// [`split_jobs`] one job at a time, for a caller that streams the jobs
/// as they are made.
#[derive(Default)]
pub struct Splitter {
    /// The cluster ad; `None` before the first job.
    cluster: Option<ClassAd>,
}

impl Splitter {
    /// The first job gives the cluster ad (it, less `ProcId`) and an empty
    /// proc ad; each later one its proc ad of what differs from it (an
    /// attribute is the same when its expression is: the same tree, so
    /// the same text, compared without printing either). Neither
    /// `ProcId` nor `ClusterId` goes into a proc ad: the caller gives
    /// each proc its id.
    pub fn split(&mut self, job: &ClassAd) -> (Option<ClassAd>, ClassAd) {
        let Some(cluster) = &self.cluster else {
            let mut cluster = ClassAd::new();
            for (name, expr) in job.iter_inserted() {
                if !name.as_str().eq_ignore_ascii_case("ProcId") {
                    cluster.insert(name.clone(), expr.clone());
                }
            }
            self.cluster = Some(cluster.clone());
            return (Some(cluster), ClassAd::new());
        };
        let mut p = ClassAd::new();
        for (name, expr) in job.iter_inserted() {
            let n = name.as_str();
            if n.eq_ignore_ascii_case("ProcId") || n.eq_ignore_ascii_case("ClusterId") {
                continue;
            }
            let same = cluster
                .lookup_name(name)
                .is_some_and(|c| classad::same::same_expr(c, expr));
            if !same {
                p.insert(name.clone(), expr.clone());
            }
        }
        (None, p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_jobs_keeps_only_what_differs() {
        let jobs: Vec<ClassAd> = (0..3)
            .map(|i| {
                ClassAd::parse(&format!(
                    r#"[ ClusterId = 4; ProcId = {i}; Cmd = "/bin/true"; Args = "{}"; JobStatus = 1 ]"#,
                    if i == 2 { "x" } else { "" }
                ))
                .unwrap()
            })
            .collect();
        let (cluster, procs) = split_jobs(&jobs);
        assert!(!cluster.contains("ProcId"));
        assert_eq!(cluster.len(), 4);
        assert_eq!(procs.len(), 3);
        assert!(procs[0].is_empty() && procs[1].is_empty());
        assert_eq!(procs[2].len(), 1);
        assert!(procs[2].contains("Args"));
    }
}
