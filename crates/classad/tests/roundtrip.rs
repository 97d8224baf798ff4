//! Printing round-trips: for any expression the parser accepts, the printed
//! form parses back to a tree that prints the same, i.e.
//! `print(parse(print(e))) == print(e)`.
//!
//! Expressions are generated as concrete syntax that is valid by
//! construction (so the parser decides the tree, as it would for a user's
//! text), covering literals of every kind (negative numbers, finite reals in
//! several spellings, strings with escapes and non-ASCII text), names that
//! need quotes, `MY.`/`TARGET.` selects, every unary and binary operator,
//! parentheses, conditionals, `?:`, calls, lists, nested ads and subscripts.

use classad::{parse_expr, ClassAd};
use proptest::prelude::*;

/// Parses `text` (which must parse), then checks the round trip of its printed form.
fn check_roundtrip(text: &str) -> Result<(), TestCaseError> {
    let e = match parse_expr(text) {
        Ok(e) => e,
        Err(err) => {
            return Err(TestCaseError::fail(format!(
                "generated text does not parse: {text:?}: {err}"
            )))
        }
    };
    let first = e.to_string();
    let again = match parse_expr(&first) {
        Ok(a) => a,
        Err(err) => {
            return Err(TestCaseError::fail(format!(
                "printed form does not parse back\n  input:   {text:?}\n  printed: {first:?}\n  error:   {err}"
            )))
        }
    };
    let second = again.to_string();
    prop_assert_eq!(
        &first,
        &second,
        "print(parse(print(e))) != print(e) for input {:?}",
        text
    );
    // Printing is a fixed point from here on.
    let third = parse_expr(&second)
        .map(|x| x.to_string())
        .unwrap_or_default();
    prop_assert_eq!(&second, &third);
    Ok(())
}

// ---- leaves -------------------------------------------------------------

fn int_lit() -> impl Strategy<Value = String> {
    prop_oneof![
        (0i64..1000).prop_map(|i| i.to_string()),
        any::<i64>().prop_map(|i| i.to_string()),
        Just(i64::MIN.to_string()),
        Just(i64::MAX.to_string()),
        Just("-0".to_string()),
    ]
}

fn real_lit() -> impl Strategy<Value = String> {
    // HTCondor prints reals with `%.15E` (16 significant digits): a value
    // within rounding of f64::MAX prints as a number that reads back as
    // infinity (and then prints as `real("INF")`), in HTCondor too. Leave those out.
    let finite = any::<f64>().prop_filter("finite, and finite after %.15E", |r| {
        r.is_finite() && format!("{r:.15E}").parse::<f64>().is_ok_and(f64::is_finite)
    });
    prop_oneof![
        // Rust's shortest form: "1.5", "1e300", "-2.5e-8".
        finite.clone().prop_map(|r| {
            let s = format!("{r:?}");
            if s.contains(['.', 'e', 'E']) {
                s
            } else {
                format!("{s}.0")
            }
        }),
        // HTCondor's own printing: one digit, fifteen decimals.
        finite.prop_map(|r| format!("{r:.15E}")),
        (0u32..100000, 0u32..1000).prop_map(|(a, b)| format!("{a}.{b}")),
        (0u32..1000).prop_map(|b| format!(".{b}")),
        Just("0.0".to_string()),
        Just("-0.0".to_string()),
        Just("5e-324".to_string()),
        Just("1.79769313486231e308".to_string()),
    ]
}

/// One piece of a string literal's body: a plain character (ASCII or not) or an escape.
fn string_piece() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[a-zA-Z0-9 _.,:;!?#$%&*+=<>@^`|~(){}\\[\\]/'-]".prop_map(|s| s),
        2 => any::<char>()
            .prop_filter("no quote, backslash or controls raw", |c| {
                *c != '"' && *c != '\\' && !c.is_control()
            })
            .prop_map(|c| c.to_string()),
        1 => Just("é".to_string()),
        1 => Just("日本".to_string()),
        1 => Just("🦀".to_string()),
        2 => prop::sample::select(vec![
            "\\n", "\\t", "\\r", "\\b", "\\f", "\\v", "\\a", "\\\\", "\\\"", "\\'", "\\?",
        ])
        .prop_map(str::to_string),
        // Octal escapes: printable or not (the printer writes bytes outside
        // printable ASCII back as octal).
        2 => (1u32..0o400).prop_map(|v| format!("\\{v:03o}")),
        1 => (1u32..0o10).prop_map(|v| format!("\\{v:o}")),
    ]
}

fn string_lit() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::collection::vec(string_piece(), 0..8).prop_map(|p| format!("\"{}\"", p.concat())),
        // Adjacent literals are one string.
        1 => (
            prop::collection::vec(string_piece(), 0..4),
            prop::collection::vec(string_piece(), 0..4)
        )
            .prop_map(|(a, b)| format!("\"{}\" \"{}\"", a.concat(), b.concat())),
    ]
}

fn keyword_lit() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "true",
        "false",
        "TRUE",
        "False",
        "undefined",
        "UNDEFINED",
        "Undefined",
        "error",
        "ERROR",
    ])
    .prop_map(str::to_string)
}

fn time_lit() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "absTime(\"2024-01-31T12:00:00-06:00\")",
        "absTime(\"2001-01-01T00:00:00Z\")",
        "relTime(\"1d2h3m4s\")",
        "relTime(\"1+02:03:04\")",
        "relTime(\"-5s\")",
        "relTime(\"0\")",
    ])
    .prop_map(str::to_string)
}

/// An identifier that is not a keyword, in any case.
fn plain_name() -> impl Strategy<Value = String> {
    prop_oneof![
        "[A-Za-z_][A-Za-z0-9_]{0,10}".prop_filter("not a keyword", |s| {
            !["is", "isnt", "true", "false", "undefined", "error"]
                .iter()
                .any(|k| s.eq_ignore_ascii_case(k))
        }),
        prop::sample::select(vec![
            "Memory",
            "KeyboardIdle",
            "LoadAvg",
            "State",
            "Requirements",
            "Rank",
            "a",
            "b",
            "x_1",
            "_",
            "MY",
            "my",
            "TARGET",
            "target",
            "other",
        ])
        .prop_map(str::to_string),
    ]
}

/// A name that must be written in quotes: spaces, symbols, a leading digit,
/// a keyword, non-ASCII text or escapes.
fn quoted_name() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "'a b'",
            "'1x'",
            "'is'",
            "'TRUE'",
            "'undefined'",
            "'parent'",
            "'x-y'",
            "'a.b'",
            "'don\\'t'",
            "'tab\\there'",
            "'back\\\\slash'",
            "'ünï'",
            "'\"q\"'",
        ])
        .prop_map(str::to_string),
        "[a-z0-9 .+-]{1,8}".prop_map(|s| format!("'{s}'")),
    ]
}

fn name() -> impl Strategy<Value = String> {
    prop_oneof![4 => plain_name(), 1 => quoted_name()]
}

fn leaf() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => int_lit(),
        2 => real_lit(),
        2 => string_lit(),
        1 => keyword_lit(),
        1 => time_lit(),
        5 => name(),
        1 => name().prop_map(|n| format!(".{n}")),
        2 => (prop::sample::select(vec!["MY", "TARGET", "my", "Target"]), name())
            .prop_map(|(s, n)| format!("{s}.{n}")),
        1 => Just("{}".to_string()),
        1 => Just("[]".to_string()),
    ]
}

// ---- composites ---------------------------------------------------------

const UNARY: [&str; 5] = ["-", "+", "!", "~", "- "];

const BINARY: [&str; 24] = [
    "||", "&&", "|", "^", "&", "==", "!=", "=?=", "=!=", "is", "isnt", "<", "<=", ">", ">=", "<<",
    ">>", ">>>", "+", "-", "*", "/", "%", "IS",
];

const FUNCTIONS: [&str; 14] = [
    "strcat",
    "size",
    "ifThenElse",
    "member",
    "regexp",
    "time",
    "int",
    "real",
    "stringListMember",
    "isUndefined",
    "toUpper",
    "StrCat",
    "unknownFunction",
    "floor",
];

/// A base for `.name` or `[i]`: parenthesised unless it cannot swallow the dot.
fn postfix_base(inner: BoxedStrategy<String>) -> impl Strategy<Value = String> {
    prop_oneof![
        3 => name(),
        2 => inner.clone().prop_map(|e| format!("({e})")),
        1 => (prop::sample::select(FUNCTIONS.to_vec()), inner.clone())
            .prop_map(|(f, a)| format!("{f}({a})")),
        1 => prop::collection::vec(inner.clone(), 0..3).prop_map(|v| format!("{{ {} }}", v.join(", "))),
        1 => inner.prop_map(|e| format!("[ a = {e} ]")),
    ]
}

fn expr() -> impl Strategy<Value = String> {
    leaf().prop_recursive(5, 48, 4, |inner| {
        let inner = inner.boxed();
        prop_oneof![
            2 => (prop::sample::select(UNARY.to_vec()), inner.clone()).prop_map(|(op, x)| {
                // Known printer/parser mismatch (see `unary_minus_before_a_number`):
                // `- 3` is a unary minus on 3, printed ` -3`, which reads back as
                // the literal -3. Keep the generator clear of it.
                // (`-0` is the literal 0, so `--0` is the same case.)
                let zero = x.starts_with("-0") && !x.starts_with("-0.");
                let number = x.starts_with(|c: char| c.is_ascii_digit() || c == '.');
                if (op == "- " && number) || (op.starts_with('-') && zero) {
                    format!("- ({x})")
                } else {
                    format!("{op}{x}")
                }
            }),
            6 => (inner.clone(), prop::sample::select(BINARY.to_vec()), inner.clone())
                .prop_map(|(l, op, r)| format!("{l} {op} {r}")),
            3 => inner.clone().prop_map(|x| format!("({x})")),
            2 => (inner.clone(), inner.clone(), inner.clone()).prop_map(|(c, t, f)| format!("{c} ? {t} : {f}")),
            // `?:` binds at the postfix level: its right side is a postfix expression.
            1 => (postfix_base(inner.clone()), postfix_base(inner.clone())).prop_map(|(a, b)| format!("{a} ?: {b}")),
            2 => (
                prop::sample::select(FUNCTIONS.to_vec()),
                prop::collection::vec(inner.clone(), 0..4)
            )
                .prop_map(|(f, args)| format!("{f}({})", args.join(", "))),
            2 => prop::collection::vec(inner.clone(), 0..4).prop_map(|v| format!("{{ {} }}", v.join(", "))),
            2 => prop::collection::vec((name(), inner.clone()), 0..4).prop_map(|kv| {
                let body: Vec<String> = kv.into_iter().map(|(k, v)| format!("{k} = {v}")).collect();
                format!("[ {} ]", body.join("; "))
            }),
            2 => (postfix_base(inner.clone()), inner.clone()).prop_map(|(b, i)| format!("{b}[{i}]")),
            2 => (postfix_base(inner.clone()), name()).prop_map(|(b, n)| format!("{b}.{n}")),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn expressions_round_trip(text in expr()) {
        check_roundtrip(&text)?;
    }

    #[test]
    fn ads_round_trip(kv in prop::collection::vec((name(), expr()), 0..6)) {
        let body: Vec<String> = kv.into_iter().map(|(k, v)| format!("{k} = {v}")).collect();
        let text = format!("[ {} ]", body.join("; "));
        let ad = ClassAd::parse(&text).map_err(|e| TestCaseError::fail(format!("{text:?}: {e}")))?;
        let first = ad.to_string();
        let again = ClassAd::parse(&first)
            .map_err(|e| TestCaseError::fail(format!("printed ad does not parse: {first:?}: {e}")))?;
        prop_assert_eq!(&first, &again.to_string());
    }
}

/// A few shapes worth pinning down by hand.
#[test]
fn fixed_cases_round_trip() {
    for text in [
        "-3",
        "- -3",
        "a - -3",
        "-(3)",
        "!a && b || c",
        "a ? b : c ? d : e",
        "(a ? b : c) ? d : e",
        "a ?: b ?: c",
        "MY.x + TARGET.'a b'",
        "'is'.x[1]",
        "{ 1, 2.5, \"s\\n\\t\\\"\\\\\", { } }[0]",
        "[ a = 1; 'b c' = [ d = a ] ].'b c'.d",
        "strcat(\"日本\", \"é\", \"\\001\\177\")",
        "x =?= undefined || y =!= error",
        "x is true && y isnt false",
        "1 >>> 2 >> 3 << 4",
        "~1 ^ 2 | 3 & 4",
        "relTime(\"1d\") + absTime(\"2024-01-31T12:00:00-06:00\")",
        "1.0E+300 * -2.5E-300",
    ] {
        if let Err(e) = check_roundtrip(text) {
            panic!("{e}");
        }
    }
}

/// HTCondor's printer is not an exact inverse of its parser in two places,
/// and ferrocondor prints as HTCondor does (checked against HTCondor 25.14.1),
/// so the generator above leaves these two shapes out:
/// - a minus set apart from its number (`- 3`) is an operator, but printed it
///   touches the number (` -3`) and reads back as the literal `-3`: the same
///   value, one node fewer;
/// - an attribute of an integer literal (`2 .x`) prints as `2.x`, which reads
///   as a malformed real.
#[test]
fn where_htcondor_printing_does_not_round_trip() {
    for (text, printed, reprinted) in [
        ("- 3", " -3", "-3"),
        ("- 1.5", " -1.500000000000000E+00", "-1.500000000000000E+00"),
        ("- 3 + x", " -3 + x", "-3 + x"),
    ] {
        let once = parse_expr(text).unwrap().to_string();
        assert_eq!(once, printed, "{text}");
        let again = parse_expr(&once).unwrap().to_string();
        assert_eq!(again, reprinted, "{text}");
        let env = classad::Env::default();
        let v1 = classad::eval_expr(&parse_expr(text).unwrap(), None, None, &env);
        let v2 = classad::eval_expr(&parse_expr(&once).unwrap(), None, None, &env);
        assert_eq!(v1.to_string(), v2.to_string(), "{text}");
    }
    assert_eq!(parse_expr("{ - 0 }").unwrap().to_string(), "{  -0 }");
    assert_eq!(parse_expr("2 .x").unwrap().to_string(), "2.x");
    assert!(parse_expr("2.x").is_err());
}
