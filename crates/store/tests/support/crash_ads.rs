//! The clusters the crash test's child writes, as a function of the cluster
//! id, so the test can tell a complete cluster from a damaged one. Shared by
//! the child (`crash_child.rs`) and the test (`crash.rs`).

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
