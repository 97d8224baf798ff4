//! Chained ads (HTCondor's `ChainToAd`): a proc ad over its cluster ad
//! reads, iterates, prints, evaluates and edits as the flat ad made by
//! copying the cluster ad and overlaying the proc's attributes.

use std::sync::Arc;

use classad::{json, matching, unparse, ClassAd, Env, Value};

const CLUSTER: &str = r#"[ ClusterId = 7; Owner = "alice"; Cmd = "/bin/true";
    RequestCpus = 1; Requirements = TARGET.Cpus >= MY.RequestCpus && Arch == "X86_64";
    Rank = TARGET.Memory; Iwd = "/home/alice"; JobStatus = 1; Args = "a" ]"#;

/// The proc ad's own attributes, set on a chained ad and on a flat copy.
fn edits(ad: &mut ClassAd) {
    ad.insert_value("ProcId", 3i64);
    ad.insert_value("jobstatus", 2i64); // another spelling: the first stays
    ad.insert_expr("Args", "strcat(\"b\", ProcId)").unwrap();
    ad.insert_value("GlobalJobId", "s#7.3#1");
    ad.remove("Rank");
}

fn pair() -> (ClassAd, ClassAd) {
    let cluster = ClassAd::parse(CLUSTER).unwrap();
    let mut flat = cluster.clone();
    edits(&mut flat);
    let mut chained = ClassAd::chained_to(Arc::new(cluster));
    edits(&mut chained);
    (flat, chained)
}

fn listed<'a>(
    it: impl Iterator<Item = (&'a classad::AttrName, &'a classad::Expr)>,
) -> Vec<(String, String)> {
    it.map(|(n, e)| (n.to_string(), unparse::expr_to_string(e)))
        .collect()
}

#[test]
fn a_chained_ad_reads_as_the_flat_one() {
    let (flat, chained) = pair();
    assert_eq!(chained.len(), flat.len());
    assert_eq!(chained.own_len(), 4, "only what differs is the proc's own");
    for name in [
        "ClusterId",
        "procid",
        "JOBSTATUS",
        "Args",
        "Rank",
        "Requirements",
        "Nope",
        "GlobalJobId",
    ] {
        assert_eq!(
            chained.get(name).map(unparse::expr_to_string),
            flat.get(name).map(unparse::expr_to_string),
            "{name}"
        );
        assert_eq!(chained.contains(name), flat.contains(name), "{name}");
    }
    assert_eq!(
        listed(chained.iter_inserted()),
        listed(flat.iter_inserted())
    );
    assert_eq!(listed(chained.iter()), listed(flat.iter()));
    assert_eq!(chained.to_string(), flat.to_string());
    assert_eq!(
        unparse::ad_to_old_syntax(&chained),
        unparse::ad_to_old_syntax(&flat)
    );
    assert_eq!(json::ad_to_json(&chained), json::ad_to_json(&flat));
    assert_eq!(chained.flattened().to_string(), flat.to_string());
    assert!(chained.flattened().parent().is_none());
}

#[test]
fn evaluation_sees_the_chain_as_my_and_as_target() {
    let (flat, chained) = pair();
    let env = Env::at(1_700_000_000);
    let slot =
        ClassAd::parse(r#"[ Cpus = 4; Memory = 2048; Arch = "X86_64"; Requirements = TARGET.Owner == "alice" && MY.Cpus >= TARGET.RequestCpus ]"#)
            .unwrap();
    assert_eq!(
        chained.eval_attr("Args", &env).to_string(),
        flat.eval_attr("Args", &env).to_string()
    );
    assert_eq!(chained.eval_attr("Args", &env).to_string(), "\"b3\"");
    assert!(matching::symmetric_match(&chained, &slot, &env));
    assert!(matching::symmetric_match(&slot, &chained, &env));
    // Rank was deleted from the proc: undefined, as in the flat ad.
    assert!(matches!(chained.eval_attr("Rank", &env), Value::Undefined));
    assert_eq!(
        matching::rank(&chained, &slot, &env),
        matching::rank(&flat, &slot, &env)
    );
}

#[test]
fn edits_copy_on_write_into_the_proc_and_leave_the_cluster_alone() {
    let cluster = Arc::new(ClassAd::parse(CLUSTER).unwrap());
    let before = cluster.to_string();
    let mut a = ClassAd::chained_to(Arc::clone(&cluster));
    let b = ClassAd::chained_to(Arc::clone(&cluster));
    a.insert_value("RequestCpus", 8i64);
    a.remove("Iwd");
    assert_eq!(cluster.to_string(), before);
    assert_eq!(b.to_string(), before);
    assert!(a.get("Iwd").is_none());
    assert_eq!(a.hidden().len(), 1);
    // Deleting twice, or a name nobody has, changes nothing more.
    assert!(a.remove("Iwd").is_none());
    assert!(a.remove("Nowhere").is_none());
    assert_eq!(a.hidden().len(), 1);
    // Setting a hidden name shows it again, spelled as the cluster spells it.
    a.insert_value("IWD", "/tmp");
    assert!(a.hidden().is_empty());
    assert!(a.to_string().contains("Iwd = \"/tmp\""), "{a}");
    // A clone of the proc (the queue's copy on write) shares the cluster.
    let c = a.clone();
    assert!(Arc::ptr_eq(c.parent().unwrap(), &cluster));
    assert_eq!(c.to_string(), a.to_string());
    // update() copies the merged view.
    let mut u = ClassAd::new();
    u.update(&a);
    assert_eq!(u.to_string(), a.to_string());
}

#[test]
fn a_chain_of_chains_and_an_empty_parent() {
    let top = Arc::new(ClassAd::parse("[ A = 1; B = 2 ]").unwrap());
    let mut mid = ClassAd::chained_to(top);
    mid.insert_value("C", 3i64);
    mid.remove("A");
    let mut leaf = ClassAd::chained_to(Arc::new(mid));
    leaf.insert_value("D", 4i64);
    assert_eq!(leaf.to_string(), "[ B = 2; C = 3; D = 4 ]");
    assert_eq!(leaf.len(), 3);
    let empty = ClassAd::chained_to(Arc::new(ClassAd::new()));
    assert!(empty.is_empty());
    assert_eq!(empty.to_string(), ClassAd::new().to_string());
}
