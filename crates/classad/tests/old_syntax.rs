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

#[test]
fn plain_literal_lines_read_as_the_parser_reads_them() {
    // The reader takes a shortcut for plain literals; it must agree with the
    // parser on every form, including the ones it leaves to the parser.
    for value in [
        "42",
        "-42",
        "0",
        "-0",
        "9223372036854775807",
        "-9223372036854775808",
        "9223372036854775808",
        "\"text\"",
        "\"\"",
        "\"tab\there\"",
        "TRUE",
        "false",
        "1.5",
        "017",
        "\"a\\\"b\"",
        "1 + 2",
    ] {
        let via_reader =
            parse_old_ad(&format!("A = {value}\n")).map(|ad| ad.get("A").unwrap().to_string());
        let via_parser = classad::parser::parse_old_value_whole(value).map(|e| e.to_string());
        assert_eq!(via_reader.ok(), via_parser.ok(), "{value}");
    }
}
