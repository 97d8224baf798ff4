//! Policy evaluation speed against HTCondor's own ClassAd library.
//!
//! MY is `machine.ad` and TARGET is `job.ad` from `shared/oracle/bench`; the
//! figures to beat are in `shared/oracle/bench/ANCHOR.md` (the target is 3x
//! HTCondor's "bound" figure). Run with
//!
//! ```text
//! cargo bench -p classad --bench policy
//! ```
//!
//! The `budget` group times how long hostile expressions take to give ERROR
//! under the default evaluation budget.
//!
//! "bound" sets the evaluator up once and evaluates the attribute reference in
//! a loop; "per call" goes through `eval_attr` (or `symmetric_match`) every
//! time, as HTCondor's `EvalBool()` and `IsAMatch()` do. (An evaluator's
//! budget covers all it evaluates, so the bound evaluators are given no limit:
//! they count their steps as any evaluator does, and never run out.) After criterion's own
//! report, a summary table gives the median evals/s of each case next to
//! HTCondor's figure and the 3x target.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use classad::eval::{eval_attr, Evaluator};
use classad::matching::symmetric_match;
use classad::{ClassAd, Env, EvalLimits, Expr, Value};
use criterion::{BenchmarkId, Criterion, Throughput};

/// The allocator the `ferrocondor` binary links, so that the figures are the
/// product's (parsing allocates many small nodes; see the issue notes for the
/// same figures with the system allocator).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Fixed time for the evaluations (SUSPEND and PREEMPT mention `time()`, but
/// short-circuit before calling it with these ads).
const NOW: i64 = 1_700_000_000;

fn bench_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/oracle/bench")
}

fn read(name: &str) -> String {
    let path = bench_dir().join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

/// Old ClassAd syntax, one `Name = expr` per line, as HTCondor's `.ad` files.
fn parse_old_syntax(text: &str) -> ClassAd {
    classad::reader::parse_old_ad(text).unwrap_or_else(|e| panic!("parsing an old-syntax ad: {e}"))
}

/// The policy attributes, with the value HTCondor gives each (ANCHOR.md).
const CASES: [(&str, bool); 4] = [
    ("START", true),
    ("SUSPEND", false),
    ("PREEMPT", false),
    ("BBSTART", true),
];

/// HTCondor's figures (bound, per call) in evals/s, from ANCHOR.md.
const ANCHOR: [(&str, &str, f64); 11] = [
    ("START", "bound", 3.15e6),
    ("START", "per call", 1.88e6),
    ("SUSPEND", "bound", 3.91e6),
    ("SUSPEND", "per call", 2.15e6),
    ("PREEMPT", "bound", 2.10e6),
    ("PREEMPT", "per call", 1.44e6),
    ("BBSTART", "bound", 0.88e6),
    ("BBSTART", "per call", 0.75e6),
    ("match", "bound", 539e3),
    ("match", "per call", 481e3),
    ("parse", "old syntax", 31.2e3),
];
const ANCHOR_PARSE_NEW: f64 = 27.5e3;
/// HTCondor's "bound" figure for a case: the target is three times it.
fn anchor_bound(case: &str) -> f64 {
    match case {
        "parse" => 31.2e3,
        "parse new" => ANCHOR_PARSE_NEW,
        _ => ANCHOR
            .iter()
            .find(|(c, k, _)| *c == case && *k == "bound")
            .map(|a| a.2)
            .unwrap_or(f64::NAN),
    }
}

fn is_bool(v: &Value, want: bool) -> bool {
    matches!(v, Value::Bool(b) if *b == want)
}

struct Ads {
    machine_text: String,
    machine: ClassAd,
    job: ClassAd,
    env: Env,
    /// For the evaluators used millions of times.
    bound_env: Env,
}

fn load() -> Ads {
    let machine_text = read("machine.ad");
    let machine = parse_old_syntax(&machine_text);
    let job = parse_old_syntax(&read("job.ad"));
    Ads {
        machine_text,
        machine,
        job,
        env: Env::at(NOW),
        bound_env: Env::at(NOW).with_limits(EvalLimits::UNLIMITED),
    }
}

/// The values must be HTCondor's before their speed means anything.
fn check_values(ads: &Ads) {
    let (m, j, env) = (&ads.machine, &ads.job, &ads.env);
    for (name, want) in CASES {
        let v = eval_attr(m, Some(j), name, env);
        assert!(is_bool(&v, want), "{name} = {v:?}, HTCondor says {want}");
        let mut ev = Evaluator::new(Some(m), Some(j), env);
        let scope = ev.my_scope();
        let v = ev.eval(&Expr::attr(name), &scope);
        assert!(
            is_bool(&v, want),
            "{name} (bound) = {v:?}, HTCondor says {want}"
        );
    }
    assert!(
        symmetric_match(m, j, env),
        "the ads must match, as in HTCondor"
    );
    let old = parse_old_syntax(&ads.machine_text);
    let new = ClassAd::parse(&ads.machine.to_string()).expect("the printed ad parses back");
    assert_eq!(old.len(), ads.machine.len());
    assert_eq!(new.len(), ads.machine.len());
    assert_eq!(new.to_string(), ads.machine.to_string());
}

fn policy(c: &mut Criterion) {
    let ads = load();
    check_values(&ads);
    let (m, j, env) = (&ads.machine, &ads.job, &ads.env);
    let bound_env = &ads.bound_env;

    for (name, _) in CASES {
        let mut g = c.benchmark_group(name);
        g.throughput(Throughput::Elements(1));
        let attr = Expr::attr(name);
        g.bench_function("bound", |b| {
            let mut ev = Evaluator::new(Some(m), Some(j), bound_env);
            let scope = ev.my_scope();
            b.iter(|| ev.eval(black_box(&attr), &scope))
        });
        g.bench_function("per call", |b| {
            b.iter(|| eval_attr(black_box(m), Some(j), black_box(name), env))
        });
        g.finish();
    }

    let mut g = c.benchmark_group("match");
    g.throughput(Throughput::Elements(1));
    let req = Expr::attr("Requirements");
    g.bench_function("bound", |b| {
        let mut mj = Evaluator::new(Some(m), Some(j), bound_env);
        let mut jm = Evaluator::new(Some(j), Some(m), bound_env);
        let (sm, sj) = (mj.my_scope(), jm.my_scope());
        b.iter(|| {
            matches!(mj.eval(black_box(&req), &sm), Value::Bool(true))
                && matches!(jm.eval(black_box(&req), &sj), Value::Bool(true))
        })
    });
    g.bench_function("per call", |b| {
        b.iter(|| symmetric_match(black_box(m), black_box(j), env))
    });
    g.finish();

    let new_text = ads.machine.to_string();
    let mut g = c.benchmark_group("parse");
    g.throughput(Throughput::Elements(1));
    g.bench_with_input(
        BenchmarkId::from_parameter("old syntax"),
        &ads.machine_text,
        |b, t| b.iter(|| parse_old_syntax(black_box(t))),
    );
    g.bench_with_input(
        BenchmarkId::from_parameter("new syntax"),
        &new_text,
        |b, t| b.iter(|| ClassAd::parse(black_box(t)).unwrap()),
    );
    g.finish();
}

/// `[a0 = 1; a1 = STEP(a0); ...].aN`, STEP written with `P` for the level below.
fn doubling(levels: usize, step: &str) -> Expr {
    let mut s = String::from("[a0 = 1");
    for i in 1..=levels {
        s.push_str(&format!(
            "; a{i} = {}",
            step.replace('P', &format!("a{}", i - 1))
        ));
    }
    s.push_str(&format!("].a{levels}"));
    classad::parse_expr(&s).expect("parses")
}

/// How long expressions that double their work or their string at each
/// level take to give ERROR under the default budget (2^60 steps or bytes,
/// were they not stopped).
fn budget(c: &mut Criterion) {
    let env = Env::at(NOW);
    let mut g = c.benchmark_group("budget");
    g.sample_size(10);
    let cases = [
        ("references", doubling(60, "P + P")),
        ("strcat", doubling(60, "strcat(P, P)")),
        (
            "split and join",
            doubling(60, "join(\",\", split(strcat(P, \",\", P)))"),
        ),
    ];
    for (name, e) in &cases {
        assert!(classad::eval_expr(e, None, None, &env).is_error(), "{name}");
        g.bench_function(*name, |b| {
            b.iter(|| classad::eval_expr(black_box(e), None, None, &env))
        });
    }
    g.finish();
}

/// Criterion's output folder: `CRITERION_HOME`, else `<target>/criterion`
/// (the bench binary lives in `<target>/<profile>/deps/`).
fn criterion_dir() -> Option<PathBuf> {
    if let Some(h) = std::env::var_os("CRITERION_HOME") {
        return Some(PathBuf::from(h));
    }
    if let Some(t) = std::env::var_os("CARGO_TARGET_DIR") {
        return Some(PathBuf::from(t).join("criterion"));
    }
    let exe = std::env::current_exe().ok()?;
    Some(exe.parent()?.parent()?.parent()?.join("criterion"))
}

/// The median time per iteration (ns) measured in this run, if any.
fn median_ns(dir: &Path, group: &str, id: &str, since: SystemTime) -> Option<f64> {
    let file = dir.join(group).join(id).join("new").join("estimates.json");
    let modified = std::fs::metadata(&file).ok()?.modified().ok()?;
    if modified < since {
        return None;
    }
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(file).ok()?).ok()?;
    json["median"]["point_estimate"].as_f64()
}

fn fmt_rate(r: f64) -> String {
    if r >= 1e6 {
        format!("{:.2} M", r / 1e6)
    } else {
        format!("{:.1} k", r / 1e3)
    }
}

fn summary(since: SystemTime) {
    let Some(dir) = criterion_dir() else { return };
    let mut rows = Vec::new();
    let mut cases: Vec<(&str, &str, f64)> = ANCHOR.to_vec();
    cases.push(("parse", "new syntax", ANCHOR_PARSE_NEW));
    for (group, id, htcondor) in cases {
        let Some(ns) = median_ns(&dir, group, id, since) else {
            continue;
        };
        let rate = 1e9 / ns;
        let target = 3.0
            * if id == "new syntax" {
                anchor_bound("parse new")
            } else {
                anchor_bound(group)
            };
        rows.push(format!(
            "| {group} | {id} | {ns:.1} ns | {} /s | {} /s | {:.2}x | {} /s | {} |",
            fmt_rate(rate),
            fmt_rate(htcondor),
            rate / htcondor,
            fmt_rate(target),
            if rate >= target { "met" } else { "below" },
        ));
    }
    if rows.is_empty() {
        return;
    }
    println!("\nSummary (median; HTCondor figures and 3x-bound targets from ANCHOR.md)\n");
    println!("| case | mode | time | ferrocondor | HTCondor | ratio | target | |");
    println!("|---|---|---|---|---|---|---|---|");
    for r in rows {
        println!("{r}");
    }
}

fn main() {
    let since = SystemTime::now();
    let mut c = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .configure_from_args();
    policy(&mut c);
    budget(&mut c);
    c.final_summary();
    summary(since);
}
