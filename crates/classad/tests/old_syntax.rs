//! Printing ads in old syntax (`Name = expr` lines, as `condor_q -l` prints)
//! and reading them back.

use classad::reader::parse_old_ad;
use classad::unparse::{ad_to_old_syntax, expr_to_old_syntax};
use classad::{parse_expr, ClassAd};

const MACHINE: &str = include_str!("../../../../shared/oracle/bench/machine.ad");

fn same_attrs(a: &ClassAd, b: &ClassAd) {
    let a: Vec<String> = a.iter().map(|(n, e)| format!("{n} = {e}")).collect();
    let b: Vec<String> = b.iter().map(|(n, e)| format!("{n} = {e}")).collect();
    assert_eq!(a, b);
}

#[test]
fn a_machine_ad_reads_back_from_its_old_syntax() {
    let ad = parse_old_ad(MACHINE).unwrap();
    let text = ad_to_old_syntax(&ad);
    assert!(text.lines().all(|l| l.contains(" = ")), "{text}");
    assert_eq!(text.lines().count(), ad.len());
    same_attrs(&ad, &parse_old_ad(&text).unwrap());
}

#[test]
fn old_syntax_strings_keep_backslashes_and_escape_quotes() {
    let ad = parse_old_ad("Path = \"C:\\dir\\file\"\nQ = \"say \\\"hi\\\"\"\nTail = \"ends\\\"\n")
        .unwrap();
    assert_eq!(ad.get("Path").unwrap().to_string(), r#""C:\\dir\\file""#);
    let text = ad_to_old_syntax(&ad);
    assert!(text.contains("Path = \"C:\\dir\\file\"\n"), "{text}");
    assert!(text.contains("Q = \"say \\\"hi\\\"\"\n"), "{text}");
    same_attrs(&ad, &parse_old_ad(&text).unwrap());
}

#[test]
fn old_and_new_syntax_differ_only_in_strings() {
    let e = parse_expr(r#"strcat("a\\b", x) == "q" && y > 1.5"#).unwrap();
    assert_eq!(
        e.to_string(),
        r#"strcat("a\\b",x) == "q" && y > 1.500000000000000E+00"#
    );
    assert_eq!(
        expr_to_old_syntax(&e),
        r#"strcat("a\b",x) == "q" && y > 1.500000000000000E+00"#
    );
}
