//! The clusters the crash test's child writes, as a function of the cluster
//! id, so the test can tell a complete cluster from a damaged one. Shared by
//! the child (`crash_child.rs`) and the test (`crash.rs`).
#![allow(dead_code)] // each of the two uses part of it

use classad::ClassAd;

/// Mostly small clusters (fast commits, many of them), and every tenth a
/// larger one, so kills also land inside longer transactions.
pub fn nprocs(cluster: u32) -> u32 {
    if cluster.is_multiple_of(10) {
        20
    } else {
        1 + cluster % 4
    }
}

pub fn proc_ad(cluster: u32, proc: u32) -> ClassAd {
    let text = format!(
        r#"[ ClusterId = {cluster}; ProcId = {proc}; Owner = "user{owner}"; JobStatus = 1;
            Cmd = "/bin/sleep"; Arguments = "{cluster} {proc}"; Iwd = "/home/user{owner}";
            RequestCpus = 1; RequestMemory = {mem}; Out = "out.{cluster}.{proc}";
            Requirements = (TARGET.Arch == "X86_64") && (TARGET.Memory >= RequestMemory);
            QDate = {qdate}; JobPrio = 0 ]"#,
        owner = cluster % 3,
        mem = 128 * (1 + proc % 2),
        qdate = 1_700_000_000 + u64::from(cluster),
    );
    ClassAd::parse(&text).expect("the crash test's ad parses")
}

/// Every seventh cluster is a factory (late materialization): it is
/// submitted with its first `FACTORY_START` jobs, and the child then
/// moves its oldest job to the history and materializes the next, over
/// and over, across kills.
pub fn is_factory(cluster: u32) -> bool {
    cluster % 7 == 3
}

pub const FACTORY_START: u32 = 2;

/// A factory's cluster ad: what its jobs share.
pub fn factory_cluster_ad(cluster: u32) -> ClassAd {
    let mut ad = proc_ad(cluster, 0);
    ad.remove("ProcId");
    ad.remove("Arguments");
    ad.remove("Out");
    ad.remove("RequestMemory");
    ad
}

/// A factory job's own attributes, chained to the cluster ad.
pub fn factory_proc(parent: &std::sync::Arc<ClassAd>, cluster: u32, proc: u32) -> ClassAd {
    let own = proc_ad(cluster, proc);
    let mut ad = ClassAd::chained_to(std::sync::Arc::clone(parent));
    for name in ["ProcId", "Arguments", "Out", "RequestMemory"] {
        ad.insert(name, own.get(name).expect("in every proc ad").clone());
    }
    ad
}
