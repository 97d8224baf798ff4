//! `ferrocondor config_val`: the real binary, its output and exit codes,
//! and every HTCondor configuration vector answered through `--json` the
//! way a script (or the oracle) would ask.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value as Json;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs `ferrocondor config_val ARGS` in `dir` with `CONDOR_CONFIG=config`
/// and an environment free of configuration overrides.
fn config_val(dir: &Path, config: &str, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ferrocondor"));
    cmd.arg("config_val").args(args).current_dir(dir);
    for (k, _) in std::env::vars() {
        if k.starts_with("_CONDOR_") || k == "FERROCONDOR_CONFIG" || k == "CONDOR_CONFIG" {
            cmd.env_remove(k);
        }
    }
    cmd.env("CONDOR_CONFIG", config);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("the ferrocondor binary runs")
}

fn site(args: &[&str]) -> Output {
    config_val(
        &root().join("crates/cli/tests/data/config"),
        "site.conf",
        args,
        &[],
    )
}

fn text(b: &[u8]) -> String {
    String::from_utf8(b.to_vec()).unwrap()
}

#[test]
fn prints_expanded_values_one_per_line() {
    let o = site(&["START", "EXTRA"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(
        text(&o.stdout),
        "(KeyboardIdle > 15 * 60) && (LoadAvg < 0.3)\nfrom example.org\n"
    );
}

#[test]
fn undefined_names_say_so_and_exit_one() {
    let o = site(&["UID_DOMAIN", "NO_SUCH_KNOB"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(text(&o.stdout), "example.org\n");
    assert_eq!(text(&o.stderr), "Not defined: NO_SUCH_KNOB\n");
}

#[test]
fn verbose_says_where_and_what_it_overrides() {
    let o = site(&["-verbose", "START"]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(
        text(&o.stdout),
        "START = (KeyboardIdle > 15 * 60) && (LoadAvg < 0.3)\n \
         # at: site.conf, line 4\n \
         # raw: (KeyboardIdle > $(StartIdleTime)) && (LoadAvg < 0.3)\n \
         # overrides: site.conf, line 3: KeyboardIdle > $(StartIdleTime)\n \
         # overrides: <Default>: True\n"
    );
    let o = site(&["-verbose", "WANT_HOLD"]);
    assert!(
        text(&o.stdout).contains(" # at: use POLICY:Hold_If_Memory_Exceeded -> POLICY:Want_Hold_If, at site.conf, line 7\n"),
        "{}",
        text(&o.stdout)
    );
}

#[test]
fn raw_subsystem_and_json() {
    let o = site(&["-raw", "START"]);
    assert_eq!(
        text(&o.stdout),
        "(KeyboardIdle > $(StartIdleTime)) && (LoadAvg < 0.3)\n"
    );
    let o = site(&["RANK"]);
    assert_eq!(text(&o.stdout), "0\n");
    let o = site(&["-subsystem", "STARTD", "RANK"]);
    assert_eq!(text(&o.stdout), "Owner == \"alice\"\n");
    let o = site(&["--json", "NOTES", "NO_SUCH_KNOB", "UID_DOMAIN"]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(
        text(&o.stdout),
        "{\"NOTES\":\"first line\\nsecond line\",\"NO_SUCH_KNOB\":null,\"UID_DOMAIN\":\"example.org\"}\n"
    );
}

/// A macro loop (HTCondor expands it forever; shared/oracle/vectors/config/
/// m03b-macro-loop) fails the command with or without `--json`; the JSON
/// object is still printed, the names that failed carrying their error.
#[test]
fn a_macro_loop_fails_the_lookup_also_in_json() {
    let dir = root().join("crates/cli/tests/data/config");
    let o = config_val(&dir, "loop.conf", &["OK", "LOOP1"], &[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout), "fine\n");
    assert!(text(&o.stderr).contains("LOOP1"), "{}", text(&o.stderr));

    let o = config_val(&dir, "loop.conf", &["--json", "OK", "LOOP1", "NOPE"], &[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    let got: serde_json::Map<String, Json> = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(got["OK"], "fine");
    assert_eq!(got["NOPE"], Json::Null);
    let error = got["LOOP1"]["error"].as_str().expect("an error message");
    assert!(error.starts_with("LOOP1"), "{error}");
    let stderr = text(&o.stderr);
    assert_eq!(stderr, format!("configuration error: {error}\n"));

    // Every failure is reported, each once; the values that worked are kept.
    let o = config_val(&dir, "loop.conf", &["--json", "LOOP1", "OK", "LOOP2"], &[]);
    assert_eq!(o.status.code(), Some(2));
    let got: serde_json::Map<String, Json> = serde_json::from_slice(&o.stdout).unwrap();
    assert!(got["LOOP1"]["error"].is_string() && got["LOOP2"]["error"].is_string());
    assert_eq!(got["OK"], "fine");
    let stderr = text(&o.stderr);
    assert_eq!(stderr.lines().count(), 2, "{stderr}");
    assert!(stderr.lines().next().unwrap().contains("LOOP1"), "{stderr}");
    assert!(stderr.lines().nth(1).unwrap().contains("LOOP2"), "{stderr}");

    // -raw does not expand, so nothing loops.
    let o = config_val(&dir, "loop.conf", &["--json", "-raw", "LOOP1"], &[]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(text(&o.stdout), "{\"LOOP1\":\"$(LOOP2)\"}\n");
}

#[test]
fn dump_lists_matching_definitions_so_they_read_back() {
    let o = site(&["-dump", "notes", "uid_"]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(
        text(&o.stdout),
        "# Configuration for TOOL, from site.conf, site.d/extra.conf\n\
         NOTES @=end\nfirst line\nsecond line\n@end\n\
         UID_DOMAIN = example.org\n"
    );
    let o = site(&["-dump", "-defaults", "-expand", "StartIdleTime"]);
    assert!(
        text(&o.stdout).contains("StartIdleTime = 15 * 60\n"),
        "{}",
        text(&o.stdout)
    );
    let o = site(&["-config"]);
    assert_eq!(text(&o.stdout), "site.conf\nsite.d/extra.conf\n");
}

#[test]
fn environment_overrides_files() {
    let dir = root().join("crates/cli/tests/data/config");
    let o = config_val(
        &dir,
        "site.conf",
        &["UID_DOMAIN"],
        &[("_CONDOR_UID_DOMAIN", "env.example")],
    );
    assert_eq!(text(&o.stdout), "env.example\n");
}

#[test]
fn a_broken_configuration_exits_two_and_says_where() {
    let o = site(&[]);
    assert_eq!(o.status.code(), Some(2));
    let dir = root().join("crates/cli/tests/data/config");
    let o = config_val(&dir, "broken.conf", &["A"], &[]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        text(&o.stderr),
        "configuration error: broken.conf:3: end of file inside an `if`: `endif` missing\n"
    );
    let o = config_val(&dir, "missing.conf", &["A"], &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("missing.conf does not exist"),
        "{}",
        text(&o.stderr)
    );
}

/// Every configuration vector, asked the way the issue describes: in the
/// case's directory, CONDOR_CONFIG=condor_config, one `--json` call per
/// subsystem.
#[test]
fn every_configuration_vector_through_json() {
    let dir = match std::env::var("FERROCONDOR_VECTORS") {
        Ok(d) => PathBuf::from(d),
        Err(_) => root().join("../shared/oracle/vectors"),
    }
    .join("config");
    let mut failures = Vec::new();
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    cases.sort();
    for case in cases {
        let Ok(expected) = std::fs::read_to_string(case.join("expected.json")) else {
            continue;
        };
        let expected: serde_json::Map<String, Json> = serde_json::from_str(&expected).unwrap();
        let env: BTreeMap<String, String> = std::fs::read_to_string(case.join("env.json"))
            .map(|t| serde_json::from_str(&t).unwrap())
            .unwrap_or_default();
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let keys: Vec<String> = std::fs::read_to_string(case.join("keys.txt"))
            .unwrap()
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .map(str::to_string)
            .collect();
        let name = case.file_name().unwrap().to_string_lossy().into_owned();
        if let Some(Json::String(error)) = expected.get("!error") {
            if !error.starts_with("timeout") {
                let o = config_val(&case, "condor_config", &["--json", "A"], &env);
                if o.status.code() != Some(2) {
                    failures.push(format!(
                        "{name}: HTCondor refuses it, we exit {:?}",
                        o.status.code()
                    ));
                }
            }
            continue;
        }
        let mut by_sub: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
        for key in keys {
            let (sub, param) = key
                .split_once(':')
                .map_or(("TOOL".to_string(), key.clone()), |(s, p)| {
                    (s.to_string(), p.to_string())
                });
            by_sub.entry(sub).or_default().push((key, param));
        }
        for (sub, params) in by_sub {
            let mut args = vec!["--json".to_string(), "--subsystem".to_string(), sub.clone()];
            args.extend(params.iter().map(|(_, p)| p.clone()));
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let o = config_val(&case, "condor_config", &args, &env);
            let got: serde_json::Map<String, Json> = match serde_json::from_slice(&o.stdout) {
                Ok(v) => v,
                Err(e) => {
                    failures.push(format!(
                        "{name} ({sub}): not JSON ({e}): {}",
                        text(&o.stderr)
                    ));
                    continue;
                }
            };
            for (key, param) in params {
                if got.get(&param) != expected.get(&key) {
                    failures.push(format!(
                        "{name}: {key}: HTCondor {:?}, we {:?}",
                        expected.get(&key),
                        got.get(&param)
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn evaluate_reads_values_as_expressions_against_the_machine_ad() {
    let dir = root().join("crates/cli/tests/data/config");
    let o = config_val(
        &dir,
        "evaluate.conf",
        &["-evaluate", "HALF_THE_SLOTS", "IS_FIRST", "START"],
        &[],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let lines: Vec<String> = text(&o.stdout).lines().map(str::to_string).collect();
    let slots: i64 = lines[0].parse().expect("a number");
    assert!(slots >= 0, "{lines:?}");
    assert_eq!(lines[1], "true");
    // START reads the job (TARGET), which there is none of.
    assert_eq!(lines[2], "undefined");
}

/// root's home directory as the password database has it.
fn root_home() -> String {
    std::fs::read_to_string("/etc/passwd")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("root:"))
        .and_then(|rest| rest.split(':').nth(4))
        .unwrap()
        .to_string()
}

/// `userHome()` in `-evaluate` finds users in the password database, as
/// HTCondor does by default, and finds nobody with
/// `CLASSAD_ENABLE_USER_HOME = false` (HTCondor 25.14.1's answers:
/// `userHome("root")` is undefined then, `userHome("root", "/d")` "/d").
#[test]
fn evaluate_resolves_user_home_unless_turned_off() {
    let dir = root().join("crates/cli/tests/data/config");
    let names = ["-evaluate", "ROOT_HOME", "NOBODY_ELSE", "UNKNOWN"];
    let o = config_val(&dir, "userhome.conf", &names, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(
        text(&o.stdout),
        format!("\"{}\"\n\"/fallback\"\nundefined\n", root_home())
    );
    let o = config_val(&dir, "userhome-off.conf", &names, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout), "undefined\n\"/fallback\"\nundefined\n");
}
