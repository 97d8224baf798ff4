//! The dedicated scheduler's view of a parallel-universe job (HTCondor's
//! `dedicated_scheduler.cpp` and `parallelshadow.cpp`): which jobs are
//! parallel, the node requests the negotiator is offered for them, and
//! each node's ad when the nodes start.
//!
//! A parallel job asks for `machine_count` (MaxHosts) machines at once.
//! The schedd offers the negotiator one request per node still wanted,
//! each the job's ad with `Scheduler = "DedicatedScheduler@<schedd>"`
//! and Requirements that ask for a slot whose `DedicatedScheduler` names
//! this schedd and that does not already run one of its nodes, as
//! HTCondor's `makeGenericAdFromJobAd` builds them; the claims are held
//! until every node has one (`claims`, the gang), then every node starts
//! with its own ad: `$(Node)` (the submit placeholder `#pArAlLeLnOdE#`)
//! replaced with the node's number, `Node`, and `CurrentHosts`.
//!
//! **Architecture invariant:** pure, like the rest of this crate.

use classad::{ClassAd, Env, Expr, Value};

/// What `$(Node)` is in a parallel job's ad until its nodes start.
pub const NODE_PLACEHOLDER: &str = "#pArAlLeLnOdE#";

/// JobUniverse of the parallel universe.
pub const PARALLEL_UNIVERSE: i64 = 11;

/// The dedicated scheduler's name for the schedd `schedd`: what the
/// execute points' `DedicatedScheduler` names, what its node requests'
/// `Scheduler` says, and the submitter its claims are charged to.
pub fn scheduler_name(schedd: &str) -> String {
    format!("DedicatedScheduler@{schedd}")
}

fn int_of(job: &ClassAd, name: &str) -> Option<i64> {
    match job.eval_attr(name, &Env::at(0)) {
        Value::Int(n) => Some(n),
        Value::Real(r) => Some(r as i64),
        _ => None,
    }
}

/// Whether `job` is a parallel-universe job.
pub fn is_parallel(job: &ClassAd) -> bool {
    int_of(job, "JobUniverse") == Some(PARALLEL_UNIVERSE)
}

/// How many machines the parallel job runs on (MaxHosts, at least 1).
pub fn machine_count(job: &ClassAd) -> usize {
    int_of(job, "MaxHosts").unwrap_or(1).max(1) as usize
}

/// Whether its nodes must all be in one ParallelSchedulingGroup
/// (`+WantParallelSchedulingGroups = True`).
pub fn wants_one_group(job: &ClassAd) -> bool {
    matches!(
        job.eval_attr("WantParallelSchedulingGroups", &Env::at(0)),
        Value::Bool(true)
    )
}

/// A slot's ParallelSchedulingGroup, where it has one (a string).
pub fn scheduling_group(slot: &ClassAd) -> Option<String> {
    match slot.eval_attr("ParallelSchedulingGroup", &Env::at(0)) {
        Value::Str(s) => Some(s.to_string()),
        _ => None,
    }
}

/// When the job is over (`ParallelShutdownPolicy`, HTCondor's shadow).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShutdownPolicy {
    /// The default: the job ends when node 0 exits; the others are
    /// stopped then.
    WaitForNode0,
    /// `WAIT_FOR_ALL`: when every node has exited.
    WaitForAll,
}

pub fn shutdown_policy(job: &ClassAd) -> ShutdownPolicy {
    match job.eval_attr("ParallelShutdownPolicy", &Env::at(0)) {
        Value::Str(s) if s.eq_ignore_ascii_case("WAIT_FOR_ALL") => ShutdownPolicy::WaitForAll,
        _ => ShutdownPolicy::WaitForNode0,
    }
}

fn quoted(s: &str) -> String {
    Value::Str(s.into()).to_string()
}

/// The request the negotiator is offered for one node of `job`: the
/// job's ad for one machine, asking for a slot of this dedicated
/// scheduler that runs none of its nodes yet, and, where the job wants
/// one scheduling group and its first claims chose it, in `group`.
pub fn node_request(job: &ClassAd, scheduler: &str, group: Option<&str>) -> ClassAd {
    let mut req = job.clone();
    let name = quoted(scheduler);
    req.insert_value("Scheduler", scheduler);
    req.insert_value("MinHosts", 1i64);
    req.insert_value("MaxHosts", 1i64);
    req.insert_value("CurrentHosts", 0i64);
    let original = job
        .get("Requirements")
        .map(|e| e.to_string())
        .unwrap_or_else(|| "true".into());
    let mut text = format!(
        "(TARGET.DedicatedScheduler == {name}) && (TARGET.RemoteOwner =!= {name}) && ({original})"
    );
    if let Some(g) = group {
        text = format!(
            "(TARGET.ParallelSchedulingGroup == {}) && {text}",
            quoted(g)
        );
    }
    if let Ok(e) = classad::parse_expr(&text) {
        req.insert("Requirements", e);
    }
    req
}

/// Node `node`'s ad of a job running on `nodes` machines: every
/// `#pArAlLeLnOdE#` replaced with the node's number (HTCondor's
/// `ParallelShadow::replaceNode`), `Node`, `CurrentHosts` and, for node 0,
/// `MPIIsMaster`.
pub fn node_ad(job: &ClassAd, scheduler: &str, node: usize, nodes: usize) -> ClassAd {
    let mut ad = job.clone();
    let number = node.to_string();
    let replaced: Vec<(String, Expr)> = job
        .iter()
        .filter_map(|(name, e)| {
            let text = e.to_string();
            if !text.contains(NODE_PLACEHOLDER) {
                return None;
            }
            let text = text.replace(NODE_PLACEHOLDER, &number);
            Some((name.to_string(), classad::parse_expr(&text).ok()?))
        })
        .collect();
    for (name, e) in replaced {
        ad.insert(name.as_str(), e);
    }
    ad.insert_value("Node", node as i64);
    ad.insert_value("CurrentHosts", nodes as i64);
    ad.insert_value("Scheduler", scheduler);
    if node == 0 {
        ad.insert_value("MPIIsMaster", true);
    }
    ad
}

#[cfg(test)]
mod tests {
    use super::*;

    fn symmetric(a: &ClassAd, b: &ClassAd) -> bool {
        classad::matching::symmetric_match(a, b, &Env::at(0))
    }

    fn job() -> ClassAd {
        ClassAd::parse(
            r#"[ JobUniverse = 11; MaxHosts = 3; MinHosts = 3; CurrentHosts = 0;
                 Args = "node #pArAlLeLnOdE#"; Out = "out.#pArAlLeLnOdE#";
                 Requirements = TARGET.Memory >= 10 ]"#,
        )
        .unwrap()
    }

    #[test]
    fn a_node_request_asks_for_one_slot_of_this_dedicated_scheduler() {
        let req = node_request(&job(), "DedicatedScheduler@ap1", None);
        let env = Env::at(0);
        assert_eq!(req.eval_attr("MaxHosts", &env).to_string(), "1");
        assert_eq!(
            req.eval_attr("Scheduler", &env).to_string(),
            "\"DedicatedScheduler@ap1\""
        );
        let slot = |extra: &str| {
            ClassAd::parse(&format!(
                "[ Requirements = true; Memory = 100; DedicatedScheduler = \"DedicatedScheduler@ap1\"; {extra} ]"
            ))
            .unwrap()
        };
        assert!(symmetric(&req, &slot("")));
        // Already running one of its nodes, or another schedd's.
        assert!(!symmetric(
            &req,
            &slot("RemoteOwner = \"DedicatedScheduler@ap1\"")
        ));
        let other = ClassAd::parse("[ Requirements = true; Memory = 100; DedicatedScheduler = \"DedicatedScheduler@ap2\" ]")
            .unwrap();
        assert!(!symmetric(&req, &other));
        let plain = ClassAd::parse("[ Requirements = true; Memory = 100 ]").unwrap();
        assert!(!symmetric(&req, &plain));
        let grouped = node_request(&job(), "DedicatedScheduler@ap1", Some("sw1"));
        assert!(!symmetric(
            &grouped,
            &slot("ParallelSchedulingGroup = \"sw2\"")
        ));
        assert!(symmetric(
            &grouped,
            &slot("ParallelSchedulingGroup = \"sw1\"")
        ));
    }

    #[test]
    fn each_node_gets_its_number_where_node_was_written() {
        let env = Env::at(0);
        let ad = node_ad(&job(), "DedicatedScheduler@ap1", 2, 3);
        assert_eq!(ad.eval_attr("Args", &env).to_string(), "\"node 2\"");
        assert_eq!(ad.eval_attr("Out", &env).to_string(), "\"out.2\"");
        assert_eq!(ad.eval_attr("Node", &env).to_string(), "2");
        assert_eq!(ad.eval_attr("CurrentHosts", &env).to_string(), "3");
        assert!(!ad.contains("MPIIsMaster"));
        assert_eq!(
            node_ad(&job(), "x", 0, 3)
                .eval_attr("MPIIsMaster", &env)
                .to_string(),
            "true"
        );
    }

    #[test]
    fn the_shutdown_policy_is_node_zero_unless_wait_for_all() {
        assert_eq!(shutdown_policy(&job()), ShutdownPolicy::WaitForNode0);
        let mut j = job();
        j.insert_value("ParallelShutdownPolicy", "WAIT_FOR_ALL");
        assert_eq!(shutdown_policy(&j), ShutdownPolicy::WaitForAll);
    }
}
