//! Hostile input: deep nesting and long chains give an error (or HTCondor's
//! answer), never a stack overflow or a hang.

use classad::{parse_ad, parse_expr, try_eval_expr, ClassAd, Env, Value};

fn eval(text: &str) -> Result<Value, classad::EvalFailed> {
    let e = parse_expr(text).expect("parses");
    try_eval_expr(&e, None, None, &Env::default())
}

#[test]
fn parenthesis_nesting_stops_where_htcondor_stops() {
    let nest = |n: usize| format!("{}1{}", "(".repeat(n), ")".repeat(n));
    assert!(parse_expr(&nest(164)).is_ok());
    let err = parse_expr(&nest(165)).unwrap_err();
    assert!(err.to_string().contains("nested too deeply"), "{err}");
    assert!(parse_expr(&nest(100_000)).is_err());
}

#[test]
fn unary_and_list_nesting_is_bounded() {
    assert!(parse_expr(&format!("{}1", "!".repeat(494))).is_ok());
    assert!(parse_expr(&format!("{}1", "!".repeat(495))).is_err());
    assert!(parse_expr(&format!("{}1", "-".repeat(1_000_000))).is_err());
    let lists = |n: usize| format!("{}1{}", "{".repeat(n), "}".repeat(n));
    assert!(parse_expr(&lists(164)).is_ok());
    assert!(parse_expr(&lists(50_000)).is_err());
    let ads = |n: usize| format!("{}1{}", "[a=".repeat(n), "]".repeat(n));
    assert!(parse_expr(&ads(50_000)).is_err());
}

#[test]
fn long_operator_chains_parse_evaluate_and_drop() {
    // HTCondor evaluates 400 nested operators and fails at 401.
    let sum = |n: usize| vec!["1"; n].join(" + ");
    assert_eq!(eval(&sum(401)).unwrap().to_string(), "401");
    assert!(eval(&sum(402)).is_err());
    // A chain too long to evaluate still parses, prints and drops quietly.
    let e = parse_expr(&sum(1500)).unwrap();
    assert!(e.to_string().starts_with("1 + 1"));
    // Beyond the tree-depth bound the parser refuses it.
    assert!(parse_expr(&sum(200_000)).is_err());
}

#[test]
fn attribute_chains_and_cycles() {
    let chain = |n: usize| {
        let mut ad = ClassAd::new();
        for i in 0..n {
            ad.insert(
                format!("a{i}").as_str(),
                parse_expr(&format!("a{}", i + 1)).unwrap(),
            );
        }
        ad.insert(format!("a{n}").as_str(), parse_expr("0").unwrap());
        ad
    };
    let e = parse_expr("a0").unwrap();
    let env = Env::default();
    assert_eq!(
        try_eval_expr(&e, Some(&chain(399)), None, &env)
            .unwrap()
            .to_string(),
        "0"
    );
    assert!(try_eval_expr(&e, Some(&chain(400)), None, &env).is_err());
    assert!(try_eval_expr(&e, Some(&chain(100_000)), None, &env).is_err());

    let ad = parse_ad("[ p = q; q = p; s = s + 1 ]").unwrap();
    for name in ["p", "q", "s"] {
        let v = try_eval_expr(&parse_expr(name).unwrap(), Some(&ad), None, &env).unwrap();
        assert!(v.is_undefined(), "{name} gives {v}");
    }
}

#[test]
fn deep_input_on_a_small_stack() {
    // Library callers may run on small thread stacks; nothing may overflow.
    std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(|| {
            let nest = format!("{}1{}", "(".repeat(164), ")".repeat(164));
            assert_eq!(eval(&nest).unwrap().to_string(), "1");
            let sum = vec!["1"; 400].join(" + ");
            assert_eq!(eval(&sum).unwrap().to_string(), "400");
        })
        .unwrap()
        .join()
        .unwrap();
}
