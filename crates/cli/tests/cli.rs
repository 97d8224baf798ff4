//! The real `ferrocondor` binary on the shipped examples: output and exit codes.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

/// The repository root, where `examples/` is.
fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn data(name: &str) -> String {
    format!("crates/cli/tests/data/{name}")
}

/// Runs `ferrocondor ARGS` in the repository root with the clock pinned.
fn run(args: &[&str]) -> Output {
    run_with_stdin(args, None)
}

fn run_with_stdin(args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ferrocondor"))
        .args(args)
        .current_dir(root())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the ferrocondor binary runs");
    let mut pipe = child.stdin.take().unwrap();
    pipe.write_all(stdin.unwrap_or("").as_bytes()).unwrap();
    drop(pipe);
    child.wait_with_output().unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}

fn code(o: &Output) -> i32 {
    o.status.code().expect("exited normally")
}

#[test]
fn eval_prints_a_classad_literal() {
    let o = run(&["classad", "eval", "1 + 2 * 3"]);
    assert_eq!((code(&o), stdout(&o).as_str()), (0, "7\n"));
    let o = run(&["classad", "eval", r#""physics" == "PHYSICS""#]);
    assert_eq!(stdout(&o), "true\n", "== on strings ignores case");
    let o = run(&["classad", "eval", "-1 + 3"]);
    assert_eq!(
        stdout(&o),
        "2\n",
        "a leading '-' is an expression, not an option"
    );
}

#[test]
fn eval_against_the_example_ads() {
    let o = run(&["classad", "eval", "START", "--my", "examples/machine.ad"]);
    assert_eq!((code(&o), stdout(&o).as_str()), (0, "true\n"));
    let o = run(&[
        "classad",
        "eval",
        "Requirements",
        "--my",
        "examples/job.ad",
        "--target",
        "examples/machine.ad",
    ]);
    assert_eq!(stdout(&o), "true\n");
    // The new-syntax example is read as well.
    let o = run(&["classad", "eval", "Memory", "--my", "examples/laptop.ad"]);
    assert_eq!(stdout(&o), "1536\n");
    let o = run(&[
        "classad",
        "eval",
        "TARGET.Owner",
        "--target",
        "examples/job.ad",
    ]);
    assert_eq!(stdout(&o), "\"coltrane\"\n");
}

/// `classad eval` resolves `userHome()` as HTCondor's tools do by default:
/// through the password database.
#[test]
fn eval_finds_home_directories_in_the_password_database() {
    let root_home = std::fs::read_to_string("/etc/passwd")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("root:"))
        .and_then(|rest| rest.split(':').nth(4))
        .unwrap()
        .to_string();
    let o = run(&["classad", "eval", r#"userHome("root", "/d")"#]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(stdout(&o), format!("\"{root_home}\"\n"));
    let o = run(&["classad", "eval", r#"userHome("no_such_user_fc17")"#]);
    assert_eq!(stdout(&o), "undefined\n");
    // HTCondor abandons the evaluation of a call with no argument.
    let o = run(&["classad", "eval", "userHome()"]);
    assert_eq!(stdout(&o), "error\n");
}

#[test]
fn now_pins_the_clock() {
    let o = run(&["classad", "eval", "--now", "1800000000", "time()"]);
    assert_eq!((code(&o), stdout(&o).as_str()), (0, "1800000000\n"));
    let o = run(&[
        "classad",
        "eval",
        "--now",
        "1700000700",
        "KILL",
        "--my",
        "examples/machine.ad",
    ]);
    assert_eq!(
        stdout(&o),
        "true\n",
        "700 s in the current activity is past the 10 minutes"
    );
}

#[test]
fn matching_ads_exit_zero() {
    let o = run(&["classad", "match", "examples/job.ad", "examples/machine.ad"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.starts_with("match: examples/job.ad and examples/machine.ad match\n"),
        "{out}"
    );
    assert!(
        out.contains("job examples/job.ad\n  Requirements: true\n  Rank: 16384\n"),
        "{out}"
    );
    assert!(
        out.contains("machine examples/machine.ad\n  Requirements: true\n  Rank: true\n"),
        "{out}"
    );
}

#[test]
fn ads_that_do_not_match_exit_one_and_say_why() {
    let o = run(&["classad", "match", "examples/job.ad", "examples/laptop.ad"]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let expected = "\
no match: examples/job.ad and examples/laptop.ad do not match

job examples/job.ad
  Requirements: false
  Rank: 1536
  Requirements clauses that are not true:
    [false] TARGET.Memory >= RequestMemory

machine examples/laptop.ad
  Requirements: false
  Rank: 0
  Requirements clauses that are not true:
    [false] START
      [false] KeyboardIdle > 15 * 60
      [false] ((LoadAvg - CondorLoadAvg) <= 3.000000000000000E-01) || (State != \"Unclaimed\" && State != \"Owner\")
    [false] WithinResourceLimits
      [false] TARGET.RequestMemory <= MY.Memory
";
    assert_eq!(stdout(&o), expected);
}

#[test]
fn a_bad_expression_points_at_the_column() {
    let o = run(&["classad", "eval", "Memory >= * 2"]);
    assert_eq!(code(&o), 2);
    assert_eq!(stdout(&o), "");
    assert_eq!(
        stderr(&o),
        "<expression>:1:11: expected an expression, found '*'\n  | Memory >= * 2\n  |           ^\n"
    );
}

#[test]
fn a_bad_old_syntax_ad_points_at_file_line_and_column() {
    let file = data("bad-value.ad");
    let o = run(&["classad", "match", "examples/job.ad", &file]);
    assert_eq!(code(&o), 2);
    let err = stderr(&o);
    let first = err.lines().next().unwrap();
    assert_eq!(
        first,
        format!("{file}:3:16: expected an operator or the end of the line, found name 'MB'")
    );
    assert!(
        err.contains("  | Memory = 16384 MB\n  |                ^\n"),
        "{err}"
    );
}

#[test]
fn a_bad_new_syntax_ad_points_at_file_line_and_column() {
    let file = data("bad-new-syntax.ad");
    let o = run(&["classad", "eval", "Cpus", "--my", &file]);
    assert_eq!(code(&o), 2);
    let err = stderr(&o);
    assert!(err.starts_with(&format!("{file}:3:12: expected ")), "{err}");
    assert!(
        err.ends_with("  |   Memory = ;\n  |            ^\n"),
        "{err}"
    );
}

#[test]
fn usage_and_missing_files_exit_two() {
    let o = run(&["classad", "frobnicate"]);
    assert_eq!(code(&o), 2);
    let o = run(&["classad", "vectors", "nonsense"]);
    assert_eq!(code(&o), 2);
    let o = run(&["classad", "match", "examples/job.ad", "examples/no-such.ad"]);
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).starts_with("examples/no-such.ad: cannot read: "),
        "{}",
        stderr(&o)
    );
}

#[test]
fn vectors_print_one_json_line_per_case() {
    let o = run(&["classad", "vectors", "expr", &data("expr_cases.jsonl")]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    assert_eq!(out.lines().count(), 13);
    let add: serde_json::Value = out
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|c| c["id"] == "arith/add")
        .unwrap();
    assert_eq!(add["unparse"], "1 + 2");
    assert_eq!(add["value"]["repr"], "3");
}

#[test]
fn vectors_read_stdin_when_no_file_is_given() {
    let o = run_with_stdin(
        &["classad", "vectors", "expr"],
        Some("{\"id\": \"x\", \"expr\": \"(1 + 2\"}\n\n{\"id\": \"y\", \"expr\": \"2 * 3.5\"}\n"),
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let lines: Vec<serde_json::Value> = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["parse"], "error");
    assert_eq!(lines[1]["value"]["type"], "real");
}

#[test]
fn vectors_check_agrees_with_htcondor() {
    let o = run(&[
        "classad",
        "vectors",
        "expr",
        "--check",
        &data("expr_cases.jsonl"),
    ]);
    assert_eq!(
        (code(&o), stdout(&o).as_str()),
        (0, "13 passed, 0 failed\n"),
        "{}",
        stdout(&o)
    );
    let o = run(&[
        "classad",
        "vectors",
        "match",
        "--check",
        &data("match_cases.jsonl"),
    ]);
    assert_eq!(
        (code(&o), stdout(&o).as_str()),
        (0, "3 passed, 0 failed\n"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn vectors_check_reports_a_wrong_answer_and_exits_one() {
    // One true answer, and one deliberately wrong one (1 + 2 is not 4).
    let cases = "\
{\"id\": \"right\", \"expr\": \"1 + 2\", \"parse\": \"ok\", \"unparse\": \"1 + 2\", \"value\": {\"repr\": \"3\", \"type\": \"integer\", \"value\": 3}}
{\"id\": \"wrong\", \"expr\": \"1 + 2\", \"parse\": \"ok\", \"unparse\": \"1 + 2\", \"value\": {\"repr\": \"4\", \"type\": \"integer\", \"value\": 4}}
";
    let o = run_with_stdin(&["classad", "vectors", "expr", "--check"], Some(cases));
    assert_eq!(code(&o), 1);
    let out = stdout(&o);
    assert!(
        out.starts_with("FAIL wrong (<stdin>:2)\n  value: expected "),
        "{out}"
    );
    assert!(out.ends_with("1 passed, 1 failed\n"), "{out}");
}

#[test]
fn vectors_refuse_a_line_that_is_not_json() {
    let o = run_with_stdin(
        &["classad", "vectors", "match"],
        Some("{\"id\": \"a\"}\nnot json\n"),
    );
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).starts_with("<stdin>:2: not a JSON object: "),
        "{}",
        stderr(&o)
    );
}

#[test]
fn print_converts_between_the_three_forms() {
    let old = run(&["classad", "print", "examples/laptop.ad", "--format", "old"]);
    assert!(old.status.success());
    let old_text = String::from_utf8(old.stdout).unwrap();
    assert!(old_text.contains("Memory = 1536\n"), "{old_text}");
    let new = run(&["classad", "print", "examples/laptop.ad", "--format", "new"]);
    let new_text = String::from_utf8(new.stdout).unwrap();
    assert!(new_text.starts_with("[ ") && new_text.trim_end().ends_with(" ]"));
    // Old and new forms of one ad read back as the same ad.
    let a = classad::reader::parse_old_ad(&old_text).unwrap();
    let b = classad::parse_ad(new_text.trim()).unwrap();
    assert_eq!(a.to_string(), b.to_string());
    let json = run(&["classad", "print", "examples/laptop.ad", "--format", "json"]);
    let json_text = String::from_utf8(json.stdout).unwrap();
    assert!(json_text.contains("\"Memory\": 1536"), "{json_text}");
    assert_eq!(
        classad::json::parse_json_ad(&json_text)
            .unwrap()
            .to_string(),
        b.to_string()
    );
}

#[test]
fn arguments_that_are_not_utf8_are_a_usage_error_not_a_crash() {
    use std::os::unix::ffi::OsStringExt;
    for first in [&["classad", "eval"][..], &["config_val"][..]] {
        let o = Command::new(env!("CARGO_BIN_EXE_ferrocondor"))
            .args(first)
            .arg(std::ffi::OsString::from_vec(vec![b'e', 0xff, b'x']))
            .output()
            .unwrap();
        assert_eq!(code(&o), 2, "{}", stderr(&o));
        assert!(stderr(&o).contains("invalid UTF-8"), "{}", stderr(&o));
    }
}

/// An option ferrocondor does not have yet is named whole, in HTCondor's
/// spelling, and said to be missing (clap alone named only `-g` of
/// `-global` and suggested `-- -g`).
#[test]
fn an_option_not_supported_yet_is_named_whole() {
    for (args, option) in [
        (&["q", "-global"][..], "-global"),
        (&["status", "-server"][..], "-server"),
        (&["submit", "-spool", "job.sub"][..], "-spool"),
        (&["q", "-aaf:V", "ClusterId"][..], "-aaf:V"),
    ] {
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_ferrocondor"))
            .args(args)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains(&format!(
                "the option {option} is not supported by ferrocondor yet"
            )),
            "{args:?}: {err}"
        );
        assert!(!err.contains("-- -"), "{err}");
    }
}

/// `submit -batch-name NAME`: the jobs' JobBatchName, as condor_submit sets it.
#[test]
fn submit_batch_name_names_the_batch() {
    let dir = std::env::temp_dir().join(format!("ferrocondor-batchname-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("job.sub"), "executable = /bin/true\nqueue 2\n").unwrap();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_ferrocondor"))
        .args(["submit", "-batch-name", "nightly", "job.sub", "--dry-run"])
        .current_dir(&dir)
        .env("CONDOR_CONFIG", "ONLY_ENV")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        out.matches("JobBatchName = \"nightly\"").count(),
        2,
        "{out}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
