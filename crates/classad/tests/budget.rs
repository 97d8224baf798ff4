//! Every evaluation has a bound: expressions whose work or strings double at
//! each level give ERROR once they run over the evaluation's budget
//! (`Env::limits`), without the time or memory the whole would take, while
//! big but reasonable expressions still evaluate as before.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use classad::eval::Evaluator;
use classad::matching::evaluate_match;
use classad::{
    eval_expr, eval_expr_metered, parse_ad, parse_expr, try_eval_expr, ClassAd, Env, EvalLimits,
    Value,
};
use proptest::prelude::*;

/// Counts the bytes this thread has allocated and not freed, and their peak,
/// so that a test can say how much memory an evaluation held at most (tests
/// run on threads of their own).
struct PeakPerThread;

thread_local! {
    static LIVE: Cell<usize> = const { Cell::new(0) };
    static PEAK: Cell<usize> = const { Cell::new(0) };
}

unsafe impl GlobalAlloc for PeakPerThread {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = LIVE.try_with(|l| {
            let now = l.get() + layout.size();
            l.set(now);
            let _ = PEAK.try_with(|p| p.set(p.get().max(now)));
        });
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        let _ = LIVE.try_with(|l| l.set(l.get().saturating_sub(layout.size())));
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = LIVE.try_with(|l| {
            let now = l.get().saturating_sub(layout.size()) + new_size;
            l.set(now);
            let _ = PEAK.try_with(|p| p.set(p.get().max(now)));
        });
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static GLOBAL: PeakPerThread = PeakPerThread;

/// The most this thread held at once while `f` ran, beyond what it held before.
fn peak_bytes<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let base = LIVE.with(Cell::get);
    PEAK.with(|p| p.set(base));
    let out = f();
    (out, PEAK.with(Cell::get) - base)
}

fn eval(text: &str) -> Value {
    eval_with(text, &Env::default())
}

fn eval_with(text: &str, env: &Env) -> Value {
    eval_expr(&parse_expr(text).expect("parses"), None, None, env)
}

/// `[a0 = 1; a1 = a0 + a0; ...].aN`: 2^N references to `a0`.
fn doubling(levels: usize) -> String {
    let mut s = String::from("[a0 = 1");
    for i in 1..=levels {
        s.push_str(&format!("; a{i} = a{} + a{}", i - 1, i - 1));
    }
    s.push_str(&format!("].a{levels}"));
    s
}

/// `s0 = "xxxxxxxx"; s1 = strcat(s0, s0); ...`: `sN` is 2^(N+3) bytes.
fn strcat_doubling_ad(levels: usize) -> ClassAd {
    let mut text = String::from("[s0 = \"xxxxxxxx\"");
    for i in 1..=levels {
        text.push_str(&format!("; s{i} = strcat(s{}, s{})", i - 1, i - 1));
    }
    text.push(']');
    parse_ad(&text).expect("parses")
}

#[test]
fn a_doubling_attribute_chain_is_error() {
    // Small enough, the chain is an ordinary expression.
    assert_eq!(eval(&doubling(10)).to_string(), "1024");
    assert_eq!(eval(&doubling(16)).to_string(), "65536");
    for levels in [40, 60] {
        let text = doubling(levels);
        assert!(eval(&text).is_error(), "{levels} levels");
        let e = parse_expr(&text).unwrap();
        assert!(try_eval_expr(&e, None, None, &Env::default()).is_err());
        // Spending the budget inside isError() does not make it a "true":
        // the whole evaluation is abandoned.
        assert!(eval(&format!("isError({text})")).is_error());
        assert!(eval(&format!("{text} =?= error")).is_error());
        assert!(eval(&format!("ifThenElse(isError({text}), 1, 2)")).is_error());
    }
}

#[test]
fn a_doubling_chain_in_an_ad_is_error_through_every_entry_point() {
    let mut text = String::from("[a0 = 1");
    for i in 1..=60 {
        text.push_str(&format!("; a{i} = a{} * 1 + a{}", i - 1, i - 1));
    }
    text.push_str("; Requirements = a60 > 0; Rank = a60; Ok = a5 ]");
    let ad = parse_ad(&text).unwrap();
    let env = Env::default();
    assert!(ad.eval_attr("a60", &env).is_error());
    assert!(ad.eval(&parse_expr("a40 + 1").unwrap(), &env).is_error());
    assert_eq!(ad.eval_attr("Ok", &env).to_string(), "32");
    let m = evaluate_match(&ad, &ad, &env);
    assert!(m.my_requirements.is_error());
    assert!(m.my_rank.is_error());
    assert!(!m.symmetric);
    // An evaluator's budget covers all it evaluates, until it is reset.
    let mut ev = Evaluator::new(Some(&ad), None, &env);
    let scope = ev.my_scope();
    let a5 = parse_expr("a5").unwrap();
    assert_eq!(ev.eval(&a5, &scope).to_string(), "32");
    ev.eval(&parse_expr("a60").unwrap(), &scope);
    assert!(ev.exhausted() && ev.failed());
    assert!(ev.eval(&a5, &scope).is_error());
    ev.reset_budget();
    assert_eq!(ev.eval(&a5, &scope).to_string(), "32");
    assert!(!ev.exhausted() && !ev.failed());
}

#[test]
fn a_doubling_strcat_chain_is_error_without_building_the_string() {
    let ad = strcat_doubling_ad(60);
    let env = Env::default();
    // 2^63 bytes if it were built.
    let (v, peak) = peak_bytes(|| ad.eval_attr("s60", &env));
    assert!(v.is_error());
    assert!(peak < 256 << 20, "held {peak} bytes at once");
    let (v, peak) = peak_bytes(|| ad.eval(&parse_expr("size(s40)").unwrap(), &env));
    assert!(v.is_error());
    assert!(peak < 256 << 20, "held {peak} bytes at once");
    // A few levels are fine.
    assert_eq!(
        ad.eval(&parse_expr("size(s10)").unwrap(), &env).to_string(),
        "8192"
    );
}

/// `[s0 = "xxxxxxxx"; s1 = F(s0); ...].sN`, where `step` is F with `P` for
/// the level before.
fn chain(levels: usize, step: &str) -> String {
    let mut s = String::from("[s0 = \"xxxxxxxx\"");
    for i in 1..=levels {
        s.push_str(&format!(
            "; s{i} = {}",
            step.replace('P', &format!("s{}", i - 1))
        ));
    }
    s.push_str(&format!("].s{levels}"));
    s
}

#[test]
fn other_string_and_list_builders_stop_at_the_byte_limit() {
    let env = Env::default();
    let cases: [&str; 6] = [
        // join and split still work.
        "[l0 = {\"xxxxxxxxxxxxxxxx\"}; s = join(\",\", split(join(\",\", {l0[0], l0[0]})))].s",
        // join doubling a string.
        &chain(40, "join(\",\", {P, P})"),
        // split and join doubling a list.
        &chain(40, "join(\",\", split(P), split(P))"),
        // replaceAll with an empty pattern puts the replacement between every byte.
        "[s0 = \"xxxxxxxx\"; s1 = replaceAll(\"\", s0, s0); s2 = replaceAll(\"\", s1, s1); \
          s3 = replaceAll(\"\", s2, s2); s4 = replaceAll(\"\", s3, s3); s5 = replaceAll(\"\", s4, s4)].s5",
        // A group named many times over a long match.
        "[s0 = \"xxxxxxxxxxxxxxxx\"; s1 = regexps(\"(.*)\", s0, \"\\\\1\\\\1\\\\1\\\\1\\\\1\\\\1\\\\1\\\\1\"); \
          s2 = regexps(\"(.*)\", s1, \"\\\\1\\\\1\\\\1\\\\1\\\\1\\\\1\\\\1\\\\1\"); \
          s3 = regexps(\"(.*)\", s2, \"\\\\1\\\\1\\\\1\\\\1\\\\1\\\\1\\\\1\\\\1\"); \
          s4 = regexps(\"(.*)\", s3, \"\\\\1\\\\1\\\\1\\\\1\\\\1\\\\1\\\\1\\\\1\"); \
          s5 = regexps(\"(.*)\", s4, \"\\\\1\\\\1\\\\1\\\\1\\\\1\\\\1\\\\1\\\\1\"); \
          s6 = regexps(\"(.*)\", s5, \"\\\\1\\\\1\\\\1\\\\1\\\\1\\\\1\\\\1\\\\1\"); \
          s7 = regexps(\"(.*)\", s6, \"\\\\1\\\\1\\\\1\\\\1\\\\1\\\\1\\\\1\\\\1\"); \
          s8 = regexps(\"(.*)\", s7, \"\\\\1\\\\1\\\\1\\\\1\\\\1\\\\1\\\\1\\\\1\"); \
          s9 = regexps(\"(.*)\", s8, \"\\\\1\\\\1\\\\1\\\\1\\\\1\\\\1\\\\1\\\\1\")].s9",
        // toUpper and substr copy; the copies are charged.
        "[s0 = \"xxxxxxxxxxxxxxxx\"; s1 = strcat(toUpper(s0), substr(s0, 0)); \
          s2 = strcat(toUpper(s1), substr(s1, 0)); s3 = strcat(toUpper(s2), substr(s2, 0)); \
          s4 = strcat(toUpper(s3), substr(s3, 0)); s5 = strcat(toUpper(s4), substr(s4, 0)); \
          s6 = strcat(toUpper(s5), substr(s5, 0)); s7 = strcat(toUpper(s6), substr(s6, 0)); \
          s8 = strcat(toUpper(s7), substr(s7, 0)); s9 = strcat(toUpper(s8), substr(s8, 0)); \
          s10 = strcat(toUpper(s9), substr(s9, 0)); s11 = strcat(toUpper(s10), substr(s10, 0)); \
          s12 = strcat(toUpper(s11), substr(s11, 0)); s13 = strcat(toUpper(s12), substr(s12, 0)); \
          s14 = strcat(toUpper(s13), substr(s13, 0)); s15 = strcat(toUpper(s14), substr(s14, 0)); \
          s16 = strcat(toUpper(s15), substr(s15, 0)); s17 = strcat(toUpper(s16), substr(s16, 0)); \
          s18 = strcat(toUpper(s17), substr(s17, 0)); s19 = strcat(toUpper(s18), substr(s18, 0)); \
          s20 = strcat(toUpper(s19), substr(s19, 0)); s21 = strcat(toUpper(s20), substr(s20, 0)); \
          s22 = strcat(toUpper(s21), substr(s21, 0)); s23 = strcat(toUpper(s22), substr(s22, 0)); \
          s24 = strcat(toUpper(s23), substr(s23, 0)); s25 = strcat(toUpper(s24), substr(s24, 0))].s25",
    ];
    for (i, text) in cases.iter().enumerate() {
        let (v, peak) = peak_bytes(|| eval_with(text, &env));
        // The first case is small; it checks that the functions still work.
        if i == 0 {
            assert_eq!(
                v.to_string(),
                "\"xxxxxxxxxxxxxxxx,xxxxxxxxxxxxxxxx\"",
                "{text}"
            );
            continue;
        }
        assert!(v.is_error(), "{text} gave {v}");
        assert!(peak < 256 << 20, "{text} held {peak} bytes at once");
    }
    // split() into a list of a million items is charged before it is made.
    let tight = Env::default().with_limits(EvalLimits {
        max_steps: 1_000_000,
        max_bytes: 4 << 20,
    });
    let mut ad = ClassAd::new();
    ad.insert_value("s", ",".repeat(1 << 19));
    let e = parse_expr("size(split(s, \",\"))").unwrap();
    let (v, peak) = peak_bytes(|| eval_expr(&e, Some(&ad), None, &tight));
    assert!(v.is_error());
    assert!(peak < 8 << 20, "held {peak} bytes at once");
    assert_eq!(
        eval_expr(&e, Some(&ad), None, &Env::default()).to_string(),
        "524287"
    );
}

#[test]
fn big_but_reasonable_expressions_still_evaluate() {
    let env = Env::default();
    // A policy of 500 clauses, in groups of 20 (a flat chain of 500
    // operators is over HTCondor's depth limit of 400).
    let clauses: Vec<String> = (0..500)
        .map(|i| format!("(TARGET.Owner == \"user{i}\" && Memory >= {i})"))
        .collect();
    let groups: Vec<String> = clauses
        .chunks(20)
        .map(|c| format!("({})", c.join(" || ")))
        .collect();
    let policy = groups.join(" || ");
    let machine = parse_ad(&format!("[ Memory = 4096; START = {policy} ]")).unwrap();
    let job = parse_ad("[ Owner = \"user499\" ]").unwrap();
    let (v, cost) = eval_expr_metered(
        machine.get("START").unwrap(),
        Some(&machine),
        Some(&job),
        &env,
    );
    assert!(v.is_true(), "{v}");
    assert!(!cost.exhausted);
    assert!(cost.steps > 500 && cost.steps < 10_000, "{cost:?}");

    // A job ad of 500 attributes, each referring to the one before.
    let mut text = String::from("[ a0 = 1");
    for i in 1..500 {
        text.push_str(&format!("; a{i} = a{} + 1", i - 1));
    }
    text.push_str(" ]");
    let ad = parse_ad(&text).unwrap();
    // (HTCondor's depth limit of 400 stops this form of chain at 200.)
    assert_eq!(ad.eval_attr("a150", &env).to_string(), "151");

    // A 1 MB string through the string functions.
    let mut ad = ClassAd::new();
    let big = "abcdefgh".repeat(1 << 17);
    ad.insert_value("Big", big.as_str());
    let check = |text: &str, want: &str| {
        let v = ad.eval(&parse_expr(text).unwrap(), &env);
        assert_eq!(v.to_string(), want, "{text}");
    };
    check("size(Big)", "1048576");
    check("size(substr(Big, 10))", "1048566");
    check("size(substr(Big, 8, 1000000))", "1000000");
    check("size(strcat(Big, Big, Big))", "3145728");
    check("size(toUpper(Big))", "1048576");
    check(
        "size(replaceAll(\"h\", substr(Big, 0, 262144), \"HH\"))",
        "294912",
    );
    check("regexp(\"h$\", Big)", "true");
    check("size(split(Big, \"h\"))", "131072");
    check(
        "size(join(\",\", split(Big, \"h\")))",
        &(7 * 131072 + 131071).to_string(),
    );
    check("stringListMember(\"x\", Big)", "false");
    check("substr(Big, 1048570)", "\"cdefgh\"");
}

#[test]
fn callers_pick_the_limits_and_see_the_cost() {
    let e = parse_expr(&doubling(10)).unwrap();
    let (v, cost) = eval_expr_metered(&e, None, None, &Env::default());
    assert_eq!(v.to_string(), "1024");
    assert!(!cost.exhausted);
    assert!(cost.steps > 1024, "{cost:?}");
    // Tighter than that: ERROR.
    let tight = Env::default().with_limits(EvalLimits {
        max_steps: cost.steps / 2,
        ..EvalLimits::DEFAULT
    });
    let (v, spent) = eval_expr_metered(&e, None, None, &tight);
    assert!(v.is_error());
    assert!(spent.exhausted);
    // Exactly the cost is enough.
    let exact = Env::default().with_limits(EvalLimits {
        max_steps: cost.steps,
        ..EvalLimits::DEFAULT
    });
    assert_eq!(eval_expr(&e, None, None, &exact).to_string(), "1024");
    // Looser than the default: a bigger chain fits.
    let e = parse_expr(&doubling(20)).unwrap();
    assert!(eval_expr(&e, None, None, &Env::default()).is_error());
    let loose = Env::default().with_limits(EvalLimits::UNLIMITED);
    assert_eq!(eval_expr(&e, None, None, &loose).to_string(), "1048576");
    // Bytes too.
    let few = Env::default().with_limits(EvalLimits {
        max_bytes: 10,
        ..EvalLimits::DEFAULT
    });
    assert_eq!(
        eval_with("strcat(\"abcde\", \"fghij\")", &few).to_string(),
        "\"abcdefghij\""
    );
    assert!(eval_with("strcat(\"abcde\", \"fghijk\")", &few).is_error());

    // A budget for a whole request: each evaluation takes what the ones
    // before it left.
    let ad = parse_ad("[ a0 = 1; a1 = a0 + a0; a2 = a1 + a1; a3 = a2 + a2 ]").unwrap();
    let q = parse_expr("a3 > 0").unwrap();
    let (_, one) = eval_expr_metered(&q, Some(&ad), None, &Env::default());
    let mut left = EvalLimits {
        max_steps: one.steps * 3,
        ..EvalLimits::DEFAULT
    };
    let mut answers = Vec::new();
    for _ in 0..4 {
        let env = Env::default().with_limits(left);
        let (v, cost) = eval_expr_metered(&q, Some(&ad), None, &env);
        left = left.less(cost);
        answers.push(v.to_string());
    }
    assert_eq!(answers, ["true", "true", "true", "error"]);
}

#[test]
fn long_strings_and_regular_expressions_are_charged_and_still_right() {
    let mut ad = ClassAd::new();
    let big = "abcdefgh".repeat(1 << 17);
    ad.insert_value("Big", big.as_str());
    ad.insert_value("Big2", big.as_str());
    ad.insert_value("Upper", big.to_ascii_uppercase().as_str());
    ad.insert_value("Hostile", format!("{}b", "a".repeat(40)).as_str());
    ad.insert_value("Long", "x".repeat(10_000).as_str());
    let env = Env::default();
    let check = |text: &str, want: &str| {
        let v = ad.eval(&parse_expr(text).unwrap(), &env);
        assert_eq!(v.to_string(), want, "{text}");
    };
    // Operators on long strings give what they gave.
    check("Big == Upper", "true");
    check("Big != Big2", "false");
    check("Big =?= Upper", "false");
    check("Big < strcat(Big, \"a\")", "true");
    check("Upper >= Big", "true");
    // A pattern that needs much backtracking is allowed more, and charged.
    check("regexp(\"^.*y$\", Long)", "false");
    check("regexp(\"^(x|xx)+$\", Long)", "true");
    // Comparing two long strings, or backtracking, at every level of a
    // doubling chain is stopped.
    let chain = |step: &str| {
        let mut text = String::from("a0 = 1");
        for i in 1..=60 {
            text.push_str(&format!("; a{i} = {step} + a{} + a{}", i - 1, i - 1));
        }
        parse_ad(&format!("[{text}]")).unwrap()
    };
    for step in [
        "(Big == Big2)",
        "(Big < Big2)",
        "(Big =?= Big2)",
        "strcmp(Big, Big2)",
        "regexp(\"(a|aa)+$\", Hostile)",
        "regexp(\"(*LIMIT_MATCH=10000000)(a|aa)+$\", Hostile)",
        "stringListMember(\"x\", Big)",
        "stringListsIntersect(Big, Big2)",
    ] {
        let mut hostile = chain(step);
        hostile.update(&ad);
        assert!(hostile.eval_attr("a60", &env).is_error(), "{step}");
    }
}

#[test]
fn many_references_to_a_whole_ad_copy_it_once() {
    // `MY` as a value copies the top-level ad: once per evaluation, not once
    // per reference.
    let mut text = String::from("[ x = \"");
    text.push_str(&"y".repeat(100_000));
    text.push_str("\"; m0 = size(MY)");
    for i in 1..=30 {
        text.push_str(&format!("; m{i} = m{} + m{}", i - 1, i - 1));
    }
    text.push_str(" ]");
    let ad = parse_ad(&text).unwrap();
    let env = Env::default();
    assert_eq!(ad.eval_attr("m3", &env).to_string(), "256");
    assert!(ad.eval_attr("m30", &env).is_error());
}

// ---------------------------------------------------------------------------
// A budget only ever turns a result into ERROR: with any limits, an
// expression gives what it gives without limits, or ERROR.
// ---------------------------------------------------------------------------

fn leaf() -> impl Strategy<Value = String> {
    prop_oneof![
        (0i64..20).prop_map(|i| i.to_string()),
        "[a-c]{0,3}".prop_map(|s| format!("\"{s}\"")),
        (0usize..6).prop_map(|i| format!("a{i}")),
        Just("undefined".to_string()),
    ]
}

fn expr() -> impl Strategy<Value = String> {
    leaf().prop_recursive(4, 24, 3, |inner| {
        prop_oneof![
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a} + {b})")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a} == {b})")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a} || {b})")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("strcat({a}, {b})")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("join(\"-\", {{{a}, {b}}})")),
            inner.clone().prop_map(|a| format!("size({a})")),
            inner.clone().prop_map(|a| format!("split(string({a}))")),
            inner.clone().prop_map(|a| format!("isError({a})")),
            (inner.clone(), inner.clone(), inner.clone())
                .prop_map(|(c, a, b)| format!("ifThenElse({c}, {a}, {b})")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("{{{a}, {b}}}[0]")),
            (inner.clone(), inner).prop_map(|(a, b)| format!("replaceAll(\"\", {a}, {b})")),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn limits_only_ever_give_error(
        attrs in prop::collection::vec(expr(), 6),
        top in expr(),
        max_steps in 0u64..300,
        max_bytes in 0u64..400,
    ) {
        let mut ad = ClassAd::new();
        for (i, a) in attrs.iter().enumerate() {
            ad.insert(format!("a{i}").as_str(), parse_expr(a).unwrap());
        }
        let e = parse_expr(&top).unwrap();
        let free = Env::default().with_limits(EvalLimits::UNLIMITED);
        let want = eval_expr(&e, Some(&ad), None, &free).to_string();
        let env = Env::default().with_limits(EvalLimits { max_steps, max_bytes });
        let (got, cost) = eval_expr_metered(&e, Some(&ad), None, &env);
        if cost.exhausted {
            prop_assert!(got.is_error(), "exhausted but gave {}", got);
        } else {
            prop_assert_eq!(got.to_string(), want);
            prop_assert!(cost.steps <= max_steps && cost.bytes <= max_bytes, "{:?}", cost);
        }
    }
}
