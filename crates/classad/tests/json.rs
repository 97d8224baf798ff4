//! HTCondor's JSON form of ads: writing (byte for byte as HTCondor 25 prints
//! it), reading (with HTCondor's reader's quirks), round trips, errors.
//!
//! The expected texts marked "HTCondor" were printed by HTCondor 25.14.1's
//! Python bindings (`classad2.ClassAd(...).printJson()`, which uses the same
//! unparser as `condor_q -json`, in the ad's storage order).

use classad::json::{
    ad_to_json, ads_to_json_text, expr_to_json, parse_json_ad, parse_json_ads, parse_json_value,
    write_ad_json, AttrOrder, Layout,
};
use classad::reader::{read_ads, Stop, Syntax};
use classad::{parse_ad, parse_expr, ClassAd};

fn storage_json(ad: &ClassAd) -> String {
    let mut s = String::new();
    write_ad_json(&mut s, ad, AttrOrder::Storage, Layout::Pretty);
    s
}

fn attrs(ad: &ClassAd) -> Vec<(String, String)> {
    ad.iter()
        .map(|(n, e)| (n.to_string(), e.to_string()))
        .collect()
}

#[test]
fn every_value_type_prints_as_htcondor_does() {
    let ad = parse_ad(
        r#"[ b = 1; Aa = 1.5; c = 1e20; d = 3.0; e = -0.0; f = "x\ty\"/\\ \001 é"; g = {1, "a", [x = 1; y = z + 1]}; h = undefined; i = error; j = a + 1; k = absTime("2020-01-01T00:00:00Z"); l = relTime("1d"); m = real("INF"); n = 1e309; o = -1e309; p=true; q = {}; r = []; t = 0.1; u = 123456789012345678.0; v = 1e-5; w = {a, b}]"#,
    )
    .unwrap();
    // HTCondor:
    let expected = r#"{
  "b": 1,
  "c": 1E+20,
  "d": 3.0,
  "e": -0.0,
  "f": "x\ty\"/\\ \u0001 é",
  "g": [
    1,
    "a",
    {
      "x": 1,
      "y": "\/Expr(z + 1)\/"
    }
  ],
  "h": null,
  "i": "\/Expr(error)\/",
  "j": "\/Expr(a + 1)\/",
  "k": "\/Expr(absTime(\"2020-01-01T00:00:00-00:00\"))\/",
  "l": 86400.0,
  "m": "\/Expr(real(\"INF\"))\/",
  "n": "\/Expr(real(\"INF\"))\/",
  "o": "\/Expr(real(\"-INF\"))\/",
  "p": true,
  "q": [
  ],
  "r": {
  },
  "t": 0.1,
  "u": 1.234567890123457E+17,
  "v": 1E-05,
  "w": [
    "\/Expr(a)\/",
    "\/Expr(b)\/"
  ],
  "Aa": 1.5
}"#;
    assert_eq!(storage_json(&ad), expected);
}

#[test]
fn control_characters_nesting_and_big_reals() {
    let ad = parse_ad(
        r#"[a = "\001\033\177x"; b = {}; c = [ ]; d = [ x = {} ]; e = 1e15; f = 123456789.123; g = 1e16; h = -2.5; i = 5e-324; j = 1.7976931348623157e308]"#,
    )
    .unwrap();
    // HTCondor (DEL is copied raw):
    let expected = "{\n  \"a\": \"\\u0001\\u001B\u{7f}x\",\n  \"b\": [\n  ],\n  \"c\": {\n  },\n  \"d\": {\n    \"x\": [\n    ]\n  },\n  \"e\": 1000000000000000.0,\n  \"f\": 123456789.123,\n  \"g\": 1E+16,\n  \"h\": -2.5,\n  \"i\": 4.940656458412465E-324,\n  \"j\": 1.797693134862316E+308\n}";
    assert_eq!(storage_json(&ad), expected);
    // HTCondor: an empty ad.
    assert_eq!(storage_json(&ClassAd::new()), "{\n}");
}

#[test]
fn condor_q_listing_is_alphabetical_and_skips_empty_ads() {
    let a = parse_ad(r#"[ Zeta = 1; alpha = "x"; Beta = { 1, 2 } ]"#).unwrap();
    let b = parse_ad("[ B = 2 ]").unwrap();
    let text = ads_to_json_text([&a, &ClassAd::new(), &b]);
    assert_eq!(
        text,
        "[\n{\n  \"alpha\": \"x\",\n  \"Beta\": [\n    1,\n    2\n  ],\n  \"Zeta\": 1\n}\n,\n{\n  \"B\": 2\n}\n]\n"
    );
    assert_eq!(ads_to_json_text([&ClassAd::new()]), "");
    assert_eq!(ad_to_json(&b), "{\n  \"B\": 2\n}");
    // And the tools' reader reads that listing back.
    let s = read_ads(&text, Syntax::Json);
    assert!(matches!(s.stop, Stop::End), "{:?}", s.stop);
    assert_eq!(s.ads.len(), 2);
    assert_eq!(attrs(&s.ads[0].ad), attrs(&a));
    assert_eq!(attrs(&s.ads[1].ad), attrs(&b));
    assert_eq!(parse_json_ads(&text).unwrap().len(), 2);
}

#[test]
fn one_line_layout() {
    let ad = parse_ad(r#"[ a = 1; b = { 1, [ c = 2 ] }; d = {} ]"#).unwrap();
    let mut s = String::new();
    write_ad_json(&mut s, &ad, AttrOrder::Storage, Layout::OneLine);
    assert_eq!(s, r#"{"a": 1,"b": [1,{"c": 2}],"d": []}"#);
    assert_eq!(
        expr_to_json(&parse_expr("x =?= \"a/b\"").unwrap()),
        r#""\/Expr(x is \"a/b\")\/""#
    );
}

#[test]
fn round_trips_keep_every_attribute() {
    let texts = [
        r#"[ a = 1; b = -7; c = 1.5; d = 0.1; e = 1e100; f = -0.0; g = true; h = false; i = undefined; j = error ]"#,
        r#"[ s = "plain"; t = "tab\tnl\nquote\"bs\\slash/"; u = "ctl\001\037"; v = "café"; w = "/Expr(1)/" ]"#,
        r#"[ l = { 1, "a", { }, { 2, 3 } }; n = [ x = 1; y = [ z = "deep" ] ]; m = { [ a = 1 ], [ ] } ]"#,
        r#"[ r = TARGET.Memory >= RequestMemory && (Arch == "X86_64"); q = ifThenElse(a, "y", "n"); p = x[0].y; o = a ?: b ]"#,
        r#"[ k = absTime("2020-01-01T00:00:00Z"); inf = real("INF"); nan = real("NaN"); big = 9223372036854775807 ]"#,
        r#"[ 'odd name' = 1; nested = [ e = error; r = a + 1 ] ]"#,
    ];
    for t in texts {
        let ad = parse_ad(t).unwrap();
        for (order, layout) in [
            (AttrOrder::Alphabetical, Layout::Pretty),
            (AttrOrder::Storage, Layout::OneLine),
        ] {
            let mut json = String::new();
            write_ad_json(&mut json, &ad, order, layout);
            let back = parse_json_ad(&json).unwrap_or_else(|e| panic!("{json}\n{e}"));
            assert_eq!(attrs(&back), attrs(&ad), "{json}");
            // The text is valid JSON for any other reader too.
            serde_json::from_str::<serde_json::Value>(&json)
                .unwrap_or_else(|e| panic!("{json}\n{e}"));
        }
    }
}

#[test]
fn reading_follows_htcondor() {
    // Each expectation is what HTCondor's JSON reader made of the text.
    let ad = parse_json_ad(
        r#"{"a": null, "b": true, "c": 1, "d": 1.5, "e": "s", "f": [1,2], "g": {"x": 1}, "h": "\/Expr(a + 1)\/", "i": "/Expr(a+1)/", "j": "\/expr(a+1)\/", "k": "\/Expr(error)\/", "l": -5, "m": 1e3}"#,
    )
    .unwrap();
    let got: Vec<(String, String)> = ad
        .iter_inserted()
        .map(|(n, e)| (n.to_string(), e.to_string()))
        .collect();
    let want = [
        ("a", "undefined"),
        ("b", "true"),
        ("c", "1"),
        ("d", "1.500000000000000E+00"),
        ("e", "\"s\""),
        ("f", "{ 1,2 }"),
        ("g", "[ x = 1 ]"),
        ("h", "a + 1"),
        ("i", "\"/Expr(a+1)/\""),
        ("j", "a + 1"),
        ("k", "error"),
        ("l", "-5"),
        ("m", "1.000000000000000E+03"),
    ];
    assert_eq!(got, want.map(|(a, b)| (a.to_string(), b.to_string())));

    let one = |t: &str| {
        let ad = parse_json_ad(t).unwrap_or_else(|e| panic!("{t}: {e}"));
        attrs(&ad)
            .into_iter()
            .map(|(n, v)| format!("{n}={v}"))
            .collect::<Vec<_>>()
            .join(";")
    };
    assert_eq!(one(r#"{,, "a":1,,}"#), "a=1");
    assert_eq!(one(r#"{"a": NULL, "b": tRUE}"#), "a=undefined;b=true");
    assert_eq!(one(r#"{"a": 99999999999999999999}"#), "a=0");
    assert_eq!(
        one(r#"{"a": .5, "b": 0.5E+3, "c": -0, "d": 1e400}"#),
        "a=5.000000000000000E-01;b=5.000000000000000E+02;c=0;d=real(\"INF\")"
    );
    assert_eq!(one(r#"{"a b": 1, "A B": 2}"#), "a b=2");
    assert_eq!(
        one(r#"{"a": "x\u0001\u001b\/y\b\f\r\t\x"}"#),
        r#"a="x\001\033/y\b\f\r\tx""#
    );
    assert_eq!(one("{\"a\": \"line\nbreak\"}"), r#"a="line\nbreak""#);
    assert_eq!(
        one(
            r#"{"a": "\/Expr( 1 )\/", "b": "\/EXPR(1)/", "c": "\/Expr(1)\/ x", "d": "\/Expr(\"s\")\/"}"#
        ),
        r#"a=1;b="/EXPR(1)/";c="/Expr(1)/ x";d="s""#
    );
    assert_eq!(one(r#"{"a": [], "b": {}}"#), "a={  };b=[  ]");
    assert_eq!(one("{}"), "");
    assert_eq!(
        attrs(&parse_json_ad(r#"{"a": "\u00e9\ud83d\ude00"}"#).unwrap())[0].1,
        r#""\303\251\360\237\230\200""#
    );
    assert_eq!(
        parse_json_value("[1, null]").unwrap().to_string(),
        "{ 1,undefined }"
    );
}

#[test]
fn malformed_json_says_where_and_what() {
    let err = |t: &str| parse_json_ad(t).expect_err(t);
    for bad in [
        r#"{"a": [1,]}"#,
        r#"{"a": [,1]}"#,
        r#"{"a": [1 2]}"#,
        r#"{"a": 012}"#,
        r#"{"a": +1}"#,
        r#"{"a": 1.}"#,
        r#"{"a": -}"#,
        r#"{"a": undefined}"#,
        r#"{"a": foo}"#,
        r#"{"a": 'x'}"#,
        r#"{"": 2}"#,
        r#"{a: 1}"#,
        r#"{"a" 1}"#,
        r#"{"a": 1 "b": 2}"#,
        r#"{"a": 1"#,
        r#"{"a": "\/Expr(1 +)\/"}"#,
        r#"{"a": "\u00"}"#,
        r#"{"a": "open"#,
        r#"[{"a": 1}]"#,
        r#"{"a": 1} junk"#,
        "",
    ] {
        err(bad);
    }
    let e = err("{\n  \"a\": 1,\n  \"b\": [1,]\n}");
    assert_eq!((e.line, e.column), (3, 11));
    assert_eq!(e.found, "']'");
    assert!(e.expected.contains("JSON value"), "{}", e.expected);
    let e = err("{\"a\": 1 \"b\": 2}");
    assert_eq!((e.line, e.column), (1, 9));
    assert_eq!(e.expected, "',' or '}' after the member's value");
    let e = err(r#"{"x": "\/Expr(1 +)\/"}"#);
    assert_eq!((e.line, e.column), (1, 7));
    assert!(e.to_string().contains("Expr"), "{e}");
    // Deep nesting is an error, not a stack overflow.
    let deep = format!("{{\"a\": {}1{}}}", "[".repeat(100_000), "]".repeat(100_000));
    assert!(parse_json_ad(&deep).is_err());
}
