//! `ferrocondor submit --dry-run`: every HTCondor submit vector, run the
//! way the oracle ran it (in the case's directory, its own configuration
//! or none), compared through `--json`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value as Json;

fn vectors() -> PathBuf {
    match std::env::var("FERROCONDOR_VECTORS") {
        Ok(d) => PathBuf::from(d),
        Err(_) => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/oracle/vectors"),
    }
    .join("submit")
}

fn submit(case: &Path, args: &[&str]) -> Output {
    submit_command(case, args).output().unwrap()
}

/// As [`submit`], as `nobody` when the tests run as root.
fn submit_as_user(case: &Path, args: &[&str]) -> Output {
    use std::os::unix::process::CommandExt;
    let mut cmd = submit_command(case, args);
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        cmd.uid(65534).gid(65534);
    }
    cmd.output().unwrap()
}

fn submit_command(case: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ferrocondor"));
    cmd.arg("submit").args(args).current_dir(case);
    for (k, _) in std::env::vars() {
        if k.starts_with("_CONDOR_") || k == "FERROCONDOR_CONFIG" {
            cmd.env_remove(k);
        }
    }
    let config = if case.join("condor_config").exists() {
        "condor_config"
    } else {
        "ONLY_ENV"
    };
    cmd.env("CONDOR_CONFIG", config);
    // Never a real pool: submissions without --dry-run find none.
    cmd.env(
        "FERROCONDOR_STATE",
        std::env::temp_dir().join(format!("ferrocondor-no-pool-{}", std::process::id())),
    );
    cmd
}

#[test]
fn every_submit_vector_through_the_command_line() {
    let mut cases: Vec<PathBuf> = std::fs::read_dir(vectors())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    cases.sort();
    let mut failures = Vec::new();
    let mut checked = 0;
    for case in cases {
        let Ok(expected) = std::fs::read_to_string(case.join("expected.json")) else {
            continue;
        };
        let expected: Json = serde_json::from_str(&expected).unwrap();
        let info: Json =
            serde_json::from_str(&std::fs::read_to_string(case.join("case.json")).unwrap())
                .unwrap();
        let cluster = info["clusterid"].to_string();
        let qdate = info["qdate"].to_string();
        let owner = info["owner"].as_str().unwrap().to_string();
        let proc = info
            .get("procid")
            .map_or("0".to_string(), |p| p.to_string());
        let o = submit(
            &case,
            &[
                "submit.sub",
                "--dry-run",
                "--json",
                "--cluster",
                &cluster,
                "--proc",
                &proc,
                "--owner",
                &owner,
                "--qdate",
                &qdate,
            ],
        );
        let name = case.file_name().unwrap().to_string_lossy().into_owned();
        checked += 1;
        if expected.get("error").is_some() {
            if o.status.code() != Some(2) {
                failures.push(format!(
                    "{name}: HTCondor refuses it; we exit {:?}",
                    o.status.code()
                ));
            }
            continue;
        }
        let dir = case.canonicalize().unwrap().display().to_string();
        let text = String::from_utf8_lossy(&o.stdout).replace(&dir, "<CWD>");
        let ours: Json = match serde_json::from_str(&text) {
            Ok(v) => v,
            Err(e) => {
                failures.push(format!(
                    "{name}: not JSON ({e}): {}",
                    String::from_utf8_lossy(&o.stderr)
                ));
                continue;
            }
        };
        let dropped: Vec<&str> = expected["dropped"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        let want = expected["jobs"].as_array().unwrap();
        let got = ours.as_array().unwrap();
        if want.len() != got.len() {
            failures.push(format!("{name}: {} jobs, we {}", want.len(), got.len()));
            continue;
        }
        for (w, g) in want.iter().zip(got) {
            for (attr, value) in w.as_object().unwrap() {
                if g.get(attr) != Some(value) {
                    failures.push(format!(
                        "{name}: {attr}: HTCondor {value}, we {:?}",
                        g.get(attr)
                    ));
                }
            }
            for attr in g.as_object().unwrap().keys() {
                if w.get(attr).is_none() && !dropped.contains(&attr.as_str()) {
                    failures.push(format!("{name}: we add {attr}"));
                }
            }
        }
    }
    assert!(checked >= 42, "only {checked} cases");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn submit_without_a_pool_says_how_to_start_one() {
    let case = vectors().join("s01-minimal");
    // As a user: root may not submit at all (condor_submit's rule).
    let o = submit_as_user(&case, &["submit.sub"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("no pool is running at") && err.contains("ferrocondor pool up"),
        "{err}"
    );
}

#[test]
fn dry_run_prints_old_syntax_ads_and_errors_name_the_line() {
    let case = vectors().join("s02-queue-n");
    let o = submit(
        &case,
        &[
            "submit.sub",
            "--dry-run",
            "--cluster",
            "7",
            "-a",
            "priority = 5",
        ],
    );
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let out = String::from_utf8(o.stdout).unwrap();
    assert_eq!(out.matches("ClusterId = 7\n").count(), 3, "{out}");
    assert!(out.contains("Args = \"run 2 of 7\"\n"), "{out}");
    assert!(out.contains("JobPrio = 5\n"), "{out}");
    let o = submit(
        &vectors().join("s19-universe-bogus"),
        &["submit.sub", "--dry-run"],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).starts_with("submit.sub:1: universe:"));
}

fn submit_with(dir: &Path, config: &str, args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ferrocondor"));
    cmd.arg("submit")
        .args(args)
        .current_dir(dir)
        .env("CONDOR_CONFIG", config);
    for (k, _) in std::env::vars() {
        if k.starts_with("_CONDOR_") || k == "FERROCONDOR_CONFIG" {
            cmd.env_remove(k);
        }
    }
    cmd.output().unwrap()
}

#[test]
fn dry_run_applies_the_schedds_transforms_and_submit_requirements() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/submit");
    // Enough memory: transformed, with the warning of the second requirement.
    let o = submit_with(
        &dir,
        "schedd.conf",
        &["job.sub", "--dry-run", "-a", "MEM = 512"],
    );
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let out = String::from_utf8(o.stdout).unwrap();
    assert!(out.contains("Site = \"bo.infn.it\"\n"), "{out}");
    assert!(out.contains("RequestMemory = 512\n"), "{out}");
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("It is recommended to request at least 1 GiB."),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // Too little memory: refused with the requirement's reason.
    let o = submit_with(
        &dir,
        "schedd.conf",
        &["job.sub", "--dry-run", "-a", "MEM = 32"],
    );
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        "submission refused: The job requested too little memory.\n"
    );
}
