//! Evaluating a policy expression over existing ads must not allocate: the
//! startd and negotiator evaluate START, RANK and Requirements millions of
//! times. A counting allocator checks the hot path.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use classad::eval::Evaluator;
use classad::{parse_expr, ClassAd, Env, Value};

struct Counting;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::SeqCst);
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Reads `Name = expr` lines (the shipped bench ads are in old syntax).
fn old_ad(text: &str) -> ClassAd {
    let mut ad = ClassAd::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let (name, value) = line.split_once(" = ").expect("Name = value");
        ad.insert(name, parse_expr(value).expect("value parses"));
    }
    ad
}

const MACHINE: &str = include_str!("../../../../shared/oracle/bench/machine.ad");
const JOB: &str = include_str!("../../../../shared/oracle/bench/job.ad");

// One test function only: the allocation counter is global, and tests in one
// binary run on parallel threads.
#[test]
fn hot_paths_do_not_allocate() {
    policy_evaluation_does_not_allocate();
    symmetric_match_does_not_allocate();
}

fn policy_evaluation_does_not_allocate() {
    let machine = old_ad(MACHINE);
    let job = old_ad(JOB);
    let env = Env::at(1_700_000_000);
    let cases = [
        ("START", Value::Bool(true)),
        ("SUSPEND", Value::Bool(false)),
        ("PREEMPT", Value::Bool(false)),
        ("WANT_SUSPEND", Value::Bool(true)),
        ("BBSTART", Value::Bool(true)),
        ("Requirements", Value::Bool(true)),
    ];
    for (attr, expected) in cases {
        let expr = machine.get(attr).expect("attribute present").clone();
        let mut ev = Evaluator::new(Some(&machine), Some(&job), &env);
        let scope = ev.my_scope();
        // One evaluation outside the count, then the counted ones.
        let first = ev.eval(&expr, &scope);
        assert_eq!(first.to_string(), expected.to_string(), "{attr}");
        let before = ALLOCATIONS.load(Ordering::SeqCst);
        for _ in 0..100 {
            let v = ev.eval(&expr, &scope);
            assert!(matches!(v, Value::Bool(_)));
        }
        let after = ALLOCATIONS.load(Ordering::SeqCst);
        assert_eq!(
            after - before,
            0,
            "evaluating {attr} allocated {} times",
            after - before
        );
    }
}

fn symmetric_match_does_not_allocate() {
    let machine = old_ad(MACHINE);
    let job = old_ad(JOB);
    let env = Env::at(1_700_000_000);
    assert!(classad::matching::symmetric_match(&job, &machine, &env));
    let before = ALLOCATIONS.load(Ordering::SeqCst);
    for _ in 0..100 {
        assert!(classad::matching::symmetric_match(&job, &machine, &env));
    }
    let after = ALLOCATIONS.load(Ordering::SeqCst);
    assert_eq!(
        after - before,
        0,
        "a symmetric match allocated {} times",
        after - before
    );
}
