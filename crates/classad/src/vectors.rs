//! Runs HTCondor oracle cases (JSON lines, see `shared/oracle/README.md`) and
//! produces the oracle's output fields as ferrocondor computes them.
//!
//! The test suite and `ferrocondor classad vectors` both go through here, so
//! any vector file can be checked against HTCondor's answers.

use serde_json::{json, Map, Value as Json};

use crate::ad::ClassAd;
use crate::eval::{try_eval_expr, Env};
use crate::parser::{parse_ad, parse_expr};
use crate::unparse::value_to_string;
use crate::value::Value;

/// The oracle's description of a value: `{"type", "repr", "value"?}`.
pub fn value_json(v: &Value, type_only: bool) -> Json {
    let ty = v.value_type().name();
    if type_only {
        return json!({ "type": ty });
    }
    let mut m = Map::new();
    m.insert("type".into(), json!(ty));
    m.insert("repr".into(), json!(value_to_string(v)));
    let scalar = match v {
        Value::Bool(b) => Some(json!(b)),
        Value::Int(i) => Some(json!(i)),
        Value::Real(r) => Some(real_json(*r)),
        Value::Str(s) => Some(json!(&**s)),
        Value::AbsTime(t) => {
            let secs = t.secs;
            Some(Json::from(secs))
        }
        Value::RelTime(r) => Some(real_json(*r)),
        _ => None,
    };
    if let Some(s) = scalar {
        m.insert("value".into(), s);
    }
    Json::Object(m)
}

fn real_json(r: f64) -> Json {
    if r.is_nan() {
        json!("nan")
    } else if r.is_infinite() {
        json!(if r > 0.0 { "inf" } else { "-inf" })
    } else {
        json!(r)
    }
}

fn str_field<'a>(case: &'a Json, key: &str) -> Option<&'a str> {
    case.get(key).and_then(Json::as_str)
}

/// An `expr` case: adds `parse`, `unparse`, `value` (or `ad_error`).
pub fn run_expr_case(case: &Json, env: &Env) -> Json {
    let mut out = case.as_object().cloned().unwrap_or_default();
    let text = str_field(case, "expr").unwrap_or("");
    let expr = match parse_expr(text) {
        Ok(e) => e,
        Err(_) => {
            out.insert("parse".into(), json!("error"));
            return Json::Object(out);
        }
    };
    out.insert("parse".into(), json!("ok"));
    out.insert("unparse".into(), json!(expr.to_string()));
    let mut ads: [Option<ClassAd>; 2] = [None, None];
    for (i, side) in ["my", "target"].iter().enumerate() {
        if let Some(t) = str_field(case, side) {
            match parse_ad(t) {
                Ok(ad) => ads[i] = Some(ad),
                Err(_) => {
                    out.insert("ad_error".into(), json!(side));
                    return Json::Object(out);
                }
            }
        }
    }
    let [my, target] = ads;
    // A TARGET without MY is evaluated in an empty MY.
    let my = match (&my, &target) {
        (None, Some(_)) => Some(ClassAd::new()),
        _ => my,
    };
    let type_only = case
        .get("type_only")
        .and_then(Json::as_bool)
        .unwrap_or(false);
    let value = match try_eval_expr(&expr, my.as_ref(), target.as_ref(), env) {
        Ok(v) => value_json(&v, type_only),
        Err(_) => json!({ "type": "eval_failed" }),
    };
    out.insert("value".into(), value);
    Json::Object(out)
}

/// A `match` case: adds `symmetric_match`, each side's `Requirements` and `Rank`.
pub fn run_match_case(case: &Json, env: &Env) -> Json {
    let mut out = case.as_object().cloned().unwrap_or_default();
    let my = str_field(case, "my").map(parse_ad);
    let target = str_field(case, "target").map(parse_ad);
    let (Some(Ok(my)), Some(Ok(target))) = (my, target) else {
        out.insert("error".into(), json!("an ad does not parse"));
        return Json::Object(out);
    };
    let m = crate::matching::evaluate_match(&my, &target, env);
    out.insert("symmetric_match".into(), json!(m.symmetric));
    out.insert(
        "my_requirements".into(),
        value_json(&m.my_requirements, false),
    );
    out.insert(
        "target_requirements".into(),
        value_json(&m.target_requirements, false),
    );
    out.insert("my_rank".into(), value_json(&m.my_rank, false));
    out.insert("target_rank".into(), value_json(&m.target_rank, false));
    Json::Object(out)
}

/// The fields each mode computes (the rest of a case is copied input).
pub fn output_fields(mode: &str) -> &'static [&'static str] {
    match mode {
        "expr" => &["parse", "unparse", "value", "ad_error"],
        "ad" => &["parse", "attrs", "consumed", "all_ads", "stop"],
        "match" => &[
            "symmetric_match",
            "my_requirements",
            "target_requirements",
            "my_rank",
            "target_rank",
        ],
        _ => &[],
    }
}

/// Runs one case of `mode` ("expr", "ad" or "match").
pub fn run_case(mode: &str, case: &Json, env: &Env) -> Json {
    match mode {
        "expr" => run_expr_case(case, env),
        "match" => run_match_case(case, env),
        "ad" => crate::reader::run_ad_case(case),
        _ => case.clone(),
    }
}

/// The differences between a case's expected outputs and ours, one line each.
pub fn diff(mode: &str, expected: &Json, ours: &Json) -> Vec<String> {
    output_fields(mode)
        .iter()
        .filter(|f| expected.get(**f) != ours.get(**f))
        .map(|f| {
            format!(
                "{f}: expected {} got {}",
                expected.get(*f).unwrap_or(&Json::Null),
                ours.get(*f).unwrap_or(&Json::Null)
            )
        })
        .collect()
}
