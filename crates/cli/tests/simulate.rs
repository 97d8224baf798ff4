//! `ferrocondor simulate`: the shipped RANK-story scenario, end to end.

use std::path::PathBuf;
use std::process::{Command, Output};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn simulate(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ferrocondor"))
        .arg("simulate")
        .args(args)
        .current_dir(root())
        .output()
        .unwrap()
}

#[test]
fn the_rank_story_runs_from_the_command_line() {
    let o = simulate(&["crates/sim/scenarios/rank-story.json"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(text.contains("preempted by machine RANK: 2"), "{text}");

    let html = std::env::temp_dir().join(format!("ferrocondor-sim-{}.html", std::process::id()));
    let o = simulate(&[
        "crates/sim/scenarios/rank-story.json",
        "--json",
        "--html",
        html.to_str().unwrap(),
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let first = o.stdout.clone();
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    assert!(
        json.get("transitions")
            .is_some_and(|t| t.as_array().is_some_and(|a| !a.is_empty())),
        "{json}"
    );
    let page = std::fs::read_to_string(&html).unwrap();
    std::fs::remove_file(&html).ok();
    assert!(page.contains("<svg"), "the HTML report has charts");

    // The same seed, the same result.
    let again = simulate(&["crates/sim/scenarios/rank-story.json", "--json"]);
    assert_eq!(again.stdout, first);
    let o1 = simulate(&[
        "crates/sim/scenarios/rank-story.json",
        "--json",
        "--seed",
        "7",
    ]);
    let o2 = simulate(&[
        "crates/sim/scenarios/rank-story.json",
        "--json",
        "--seed",
        "7",
    ]);
    assert_eq!(o1.stdout, o2.stdout);
}

#[test]
fn a_broken_scenario_says_where() {
    let dir = std::env::temp_dir().join(format!("ferrocondor-sim-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("bad.json");
    std::fs::write(
        &path,
        "{ \"duration\": 10, \"machines\": [ { \"class\": \"a\", \"cpus\": 1 } ], \"jobs\": [ { \"user\": \"x\", \"runtim\": 5 } ] }",
    )
    .unwrap();
    let o = simulate(&[path.to_str().unwrap()]);
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("bad.json") && err.contains("runtim"), "{err}");
}
