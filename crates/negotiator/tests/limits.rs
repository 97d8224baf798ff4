//! Concurrency limits: capacities from the configuration (named limits,
//! the default, sets), units, limits that depend on the slot, counting what
//! runs, and never going past a limit.

use classad::{ClassAd, Env};
use config::{Config, FixedHost, LoadOptions, MemFiles, Root};
use negotiator::limits::{
    job_limits, limits_text, parse_limits, ConcurrencyLimits, LimitConfig, LimitRequest,
    DEFAULT_LIMIT,
};

fn config(text: &str) -> Config {
    config::load(
        &LoadOptions::new("NEGOTIATOR", Root::File("condor_config".into())),
        &MemFiles::new().with("condor_config", text),
        &FixedHost::empty(),
    )
    .unwrap()
}

fn limits(text: &str) -> ConcurrencyLimits {
    ConcurrencyLimits::from_config(&config(text)).unwrap()
}

fn ad(text: &str) -> ClassAd {
    ClassAd::parse(text).unwrap()
}

fn job(limits: &str) -> ClassAd {
    let mut j = ClassAd::new();
    j.insert_value("ConcurrencyLimits", limits);
    j
}

#[test]
fn manual_sets_and_defaults() {
    // The manual's example: LARGE.SWLICENSE and LARGE.DBSESSION get the
    // LARGE set's 100, OTHER.LICENSE the plain default of 5.
    let l = limits(
        "XSW_LIMIT = 3\n\
         CONCURRENCY_LIMIT_DEFAULT = 5\n\
         CONCURRENCY_LIMIT_DEFAULT_LARGE = 100\n\
         CONCURRENCY_LIMIT_DEFAULT_SMALL = 25\n",
    );
    assert_eq!(l.max("xsw"), 3.0);
    assert_eq!(l.max("XSW"), 3.0);
    assert_eq!(l.max("large.swlicense"), 100.0);
    assert_eq!(l.max("LARGE.DBSESSION"), 100.0);
    assert_eq!(l.max("small.x"), 25.0);
    assert_eq!(l.max("other.license"), 5.0);
    assert_eq!(l.max("database"), 5.0);
}

#[test]
fn without_configuration_the_default_is_htcondors() {
    let l = limits("");
    assert_eq!(l.max("anything"), DEFAULT_LIMIT);
    assert_eq!(l.max("anything"), 2308032.0);
}

#[test]
fn a_named_limit_wins_over_its_set() {
    let l = limits("CONCURRENCY_LIMIT_DEFAULT_LARGE = 100\nLARGE.SPECIAL_LIMIT = 2\n");
    assert_eq!(l.max("large.special"), 2.0);
    assert_eq!(l.max("large.other"), 100.0);
}

#[test]
fn prefixed_definitions_count_for_the_negotiator() {
    let l = limits("NEGOTIATOR.XSW_LIMIT = 7\n");
    assert_eq!(l.max("xsw"), 7.0);
}

#[test]
fn limit_lists_parse_as_htcondor_reads_them() {
    assert_eq!(
        parse_limits("XSW, DATABASE FILESERVER:3,large.swlicense:2.5"),
        vec![
            LimitRequest {
                name: "xsw".into(),
                units: 1.0
            },
            LimitRequest {
                name: "database".into(),
                units: 1.0
            },
            LimitRequest {
                name: "fileserver".into(),
                units: 3.0
            },
            LimitRequest {
                name: "large.swlicense".into(),
                units: 2.5
            },
        ]
    );
    // Units that are missing, zero or unreadable count as 1; invalid names
    // are ignored; a repeated name asks for the sum.
    assert_eq!(
        parse_limits("a:0, b:x, 9bad, c.d.e, ok, ok:2"),
        vec![
            LimitRequest {
                name: "a".into(),
                units: 1.0
            },
            LimitRequest {
                name: "b".into(),
                units: 1.0
            },
            LimitRequest {
                name: "ok".into(),
                units: 3.0
            },
        ]
    );
    assert_eq!(limits_text(&parse_limits("xsw,db:2")), "xsw,db:2");
}

#[test]
fn units_count_against_the_limit() {
    let mut l = limits("FILESERVER_LIMIT = 4\n");
    let slot = ClassAd::new();
    let env = Env::default();
    assert!(l.try_take(&job("fileserver:3"), &slot, &env).is_ok());
    let err = l.try_take(&job("fileserver:3"), &slot, &env).unwrap_err();
    assert_eq!(err.limit, "fileserver");
    assert_eq!((err.in_use, err.units, err.max), (3.0, 3.0, 4.0));
    assert!(err
        .to_string()
        .contains("concurrency limit fileserver reached"));
    // One unit still fits.
    assert!(l.try_take(&job("FILESERVER"), &slot, &env).is_ok());
    assert_eq!(l.in_use("fileserver"), 4.0);
}

#[test]
fn a_job_needs_every_limit_it_names() {
    let mut l = limits("A_LIMIT = 1\nB_LIMIT = 5\n");
    let slot = ClassAd::new();
    let env = Env::default();
    l.try_take(&job("a"), &slot, &env).unwrap();
    // b has room but a does not: nothing is taken.
    assert!(l.try_take(&job("b,a"), &slot, &env).is_err());
    assert_eq!(l.in_use("b"), 0.0);
}

#[test]
fn in_use_is_counted_from_the_slots() {
    let mut l = limits("XSW_LIMIT = 3\n");
    let slots = [
        ad(r#"[ Name = "slot1@h"; ConcurrencyLimits = "xsw" ]"#),
        ad(
            r#"[ Name = "slot2@h"; ConcurrencyLimits = "XSW,db:2"; PreemptingConcurrencyLimits = "xsw" ]"#,
        ),
        ad(r#"[ Name = "slot3@h" ]"#),
    ];
    l.load_slots(&slots);
    assert_eq!(l.in_use("xsw"), 3.0);
    assert_eq!(l.in_use("db"), 2.0);
    assert!(l.fits(&job("xsw"), &slots[2], &Env::default()).is_err());
    // Loading again starts from zero.
    l.load_slots(&slots[..1]);
    assert_eq!(l.in_use("xsw"), 1.0);
    assert_eq!(l.report(), vec![("ConcurrencyLimit_xsw".to_string(), 1.0)]);
}

#[test]
fn concurrency_limits_expr_is_evaluated_against_the_slot() {
    // The manual's network example: submit's concurrency_limits_expr puts
    // the expression in ConcurrencyLimits; TARGET is the candidate slot.
    let mut l = limits("NETWORK_A_LIMIT = 1\nNETWORK_B_LIMIT = 10\nSWX_LIMIT = 15\n");
    let mut j = ClassAd::new();
    j.insert_expr("ConcurrencyLimits", r#"strcat("SWX:2 ", TARGET.NETWORK)"#)
        .unwrap();
    let a = ad(r#"[ Name = "slot1@a"; NETWORK = "NETWORK_A" ]"#);
    let b = ad(r#"[ Name = "slot1@b"; NETWORK = "NETWORK_B" ]"#);
    let env = Env::default();
    assert_eq!(
        job_limits(&j, &a, &env),
        vec![
            LimitRequest {
                name: "swx".into(),
                units: 2.0
            },
            LimitRequest {
                name: "network_a".into(),
                units: 1.0
            },
        ]
    );
    assert!(l.try_take(&j, &a, &env).is_ok());
    assert_eq!(l.try_take(&j, &a, &env).unwrap_err().limit, "network_a");
    assert!(l.try_take(&j, &b, &env).is_ok());
    assert_eq!(l.in_use("swx"), 4.0);
    // On a slot that does not say its network the expression is
    // undefined: the job asks for nothing.
    assert!(job_limits(&j, &ClassAd::new(), &env).is_empty());
}

#[test]
fn limits_are_never_exceeded() {
    let mut l = limits(
        "A_LIMIT = 7\nB_LIMIT = 3\n\
         CONCURRENCY_LIMIT_DEFAULT = 11\nCONCURRENCY_LIMIT_DEFAULT_SET = 5\n",
    );
    let lists = [
        "a",
        "b:2",
        "a:3,b",
        "set.x",
        "set.y:2,a",
        "c",
        "c:4",
        "set.x:3",
        "b,c,set.y",
    ];
    let slot = ClassAd::new();
    let env = Env::default();
    let mut accepted = 0;
    // A deterministic stream of matches, some refused along the way.
    let mut x: u64 = 12345;
    for _ in 0..500 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let list = lists[(x >> 33) as usize % lists.len()];
        if l.try_take(&job(list), &slot, &env).is_ok() {
            accepted += 1;
        }
        for name in ["a", "b", "c", "set.x", "set.y"] {
            assert!(l.in_use(name) <= l.max(name), "{name} over its limit");
        }
        // Now and then a job ends and gives its limits back.
        if x.trailing_zeros() >= 2 {
            l.release(&parse_limits(list));
        }
    }
    assert!(accepted > 0);
}

#[test]
fn limit_config_can_be_built_by_hand() {
    let mut c = LimitConfig::default();
    c.named.insert("x".into(), 1.0);
    let mut l = ConcurrencyLimits::new(c);
    l.take(&parse_limits("x"));
    assert!(l.check(&parse_limits("X")).is_err());
}
