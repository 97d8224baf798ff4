//! HTCondor's own answers for submit cases (`oracle/vectors/submit/`):
//! every case, every job, every attribute, offline.
//!
//! A case directory holds `submit.sub`, `case.json` (`clusterid`, `owner`,
//! `qdate`, `procid`), maybe `condor_config`, the files the job names, and
//! HTCondor 24.0.24's answer in `expected.json`: `{"jobs": [{attr:
//! unparsed expression}], "dropped": [...]}` or `{"error": message}`. The
//! oracle replaced the case directory with `<CWD>` and dropped attributes
//! that depend on its machine (`dropped`); we run each case as if submitted
//! from a directory `/submit-case` and do the same. Set FERROCONDOR_VECTORS
//! to read another copy of the vectors.

use std::path::{Path, PathBuf};

use config::{load, FixedHost, LoadOptions, MemFiles as ConfigFiles, Root};
use serde_json::Value as Json;
use submit::{DirEntry, FileError, Files, SubmitOptions};

/// Where each case pretends to be.
const CWD: &str = "/submit-case";

fn vectors_dir() -> PathBuf {
    match std::env::var("FERROCONDOR_VECTORS") {
        Ok(dir) => PathBuf::from(dir),
        Err(_) => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/oracle/vectors"),
    }
    .join("submit")
}

/// The case directory seen as `/submit-case`; other absolute paths are the
/// real machine's (`/bin/ls`), as they were for the oracle.
struct CaseFiles(PathBuf);

impl CaseFiles {
    fn real(&self, path: &str) -> PathBuf {
        match path.strip_prefix(CWD) {
            Some(rest) => self.0.join(rest.trim_start_matches('/')),
            None => PathBuf::from(path),
        }
    }
}

fn tree_size(p: &Path) -> Option<u64> {
    let meta = std::fs::metadata(p).ok()?;
    if meta.is_dir() {
        Some(
            std::fs::read_dir(p)
                .ok()?
                .flatten()
                .filter_map(|e| tree_size(&e.path()))
                .sum(),
        )
    } else {
        Some(meta.len())
    }
}

impl Files for CaseFiles {
    fn size(&self, path: &str) -> Option<u64> {
        tree_size(&self.real(path))
    }
    fn list_dir(&self, path: &str) -> Result<Vec<DirEntry>, FileError> {
        let entries = std::fs::read_dir(self.real(path)).map_err(|_| FileError::NotFound)?;
        Ok(entries
            .flatten()
            .map(|e| DirEntry {
                name: e.file_name().to_string_lossy().into_owned(),
                is_dir: e.path().is_dir(),
            })
            .filter(|e| e.name != "expected.json" && e.name != "README")
            .collect())
    }
    fn read(&self, path: &str) -> Result<String, FileError> {
        std::fs::read_to_string(self.real(path)).map_err(|_| FileError::NotFound)
    }
}

/// The configuration the oracle ran with: the case's, else an empty one,
/// on a host that says what the oracle's said (X86_64, LINUX).
fn configuration(case: &Path) -> config::Config {
    let text = std::fs::read_to_string(case.join("condor_config")).unwrap_or_default();
    let host = FixedHost::empty()
        .with_macro("ARCH", "X86_64")
        .with_macro("OPSYS", "LINUX")
        .with_macro("OPSYSANDVER", "Debian12")
        .with_macro("FULL_HOSTNAME", "oracle-host");
    load(
        &LoadOptions::new("SUBMIT", Root::File("condor_config".into())),
        &ConfigFiles::new().with("condor_config", &text),
        &host,
    )
    .unwrap()
}

fn normalise(text: &str) -> String {
    text.replace(&format!("{CWD}/"), "<CWD>/")
        .replace(CWD, "<CWD>")
}

fn check_case(case: &Path) -> Vec<String> {
    let name = case.file_name().unwrap().to_string_lossy().into_owned();
    let expected: Json =
        serde_json::from_str(&std::fs::read_to_string(case.join("expected.json")).unwrap())
            .unwrap();
    let params: Json =
        serde_json::from_str(&std::fs::read_to_string(case.join("case.json")).unwrap()).unwrap();
    let text = std::fs::read_to_string(case.join("submit.sub")).unwrap();
    let mut options = SubmitOptions::new(
        params["clusterid"].as_i64().unwrap(),
        params["owner"].as_str().unwrap(),
        params["qdate"].as_i64().unwrap(),
        CWD,
    );
    options.first_proc = params["procid"].as_i64().unwrap_or(0);
    options.submit_file = "submit.sub".into();
    let got = submit::submit(
        &text,
        &options,
        &configuration(case),
        &CaseFiles(case.to_path_buf()),
    );
    if let Some(error) = expected.get("error") {
        return match got {
            Ok(s) => vec![format!(
                "{name}: HTCondor refuses this description ({error}), we queued {} jobs",
                s.jobs.len()
            )],
            Err(_) => Vec::new(),
        };
    }
    let submission = match got {
        Ok(s) => s,
        Err(e) => return vec![format!("{name}: we refused it: {e}")],
    };
    let jobs = expected["jobs"].as_array().unwrap();
    let dropped: Vec<&str> = expected["dropped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    let mut failures = Vec::new();
    if jobs.len() != submission.jobs.len() {
        failures.push(format!(
            "{name}: HTCondor queues {} jobs, we {}",
            jobs.len(),
            submission.jobs.len()
        ));
    }
    for (i, (want, ad)) in jobs.iter().zip(&submission.jobs).enumerate() {
        let want = want.as_object().unwrap();
        for (attr, value) in want {
            let ours = ad
                .get(attr)
                .map(|e| normalise(&classad::unparse::expr_to_string(e)));
            if ours.as_deref() != value.as_str() {
                failures.push(format!(
                    "{name} job {i}: {attr}: HTCondor {value}, we {ours:?}"
                ));
            }
        }
        for (attr, _) in ad.iter() {
            let attr = attr.as_str();
            if !want.contains_key(attr) && !dropped.contains(&attr) {
                failures.push(format!("{name} job {i}: we add {attr}, HTCondor does not"));
            }
        }
    }
    failures
}

fn check_all(dir: &Path, at_least: usize) {
    let mut cases: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("expected.json").exists())
        .collect();
    cases.sort();
    assert!(
        cases.len() >= at_least,
        "expected at least {at_least} cases in {}",
        dir.display()
    );
    let failures: Vec<String> = cases.iter().flat_map(|c| check_case(c)).collect();
    let failed_cases: std::collections::BTreeSet<&str> = failures
        .iter()
        .map(|f| f.split([':', ' ']).next().unwrap())
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} cases differ:\n{}",
        failed_cases.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn every_submit_vector_agrees_with_htcondor() {
    check_all(&vectors_dir(), 42);
}

/// Cases of our own (`tests/data/cases/`), in the same form, answered by
/// the same oracle: the corners the shared vectors leave open.
#[test]
fn our_oracle_cases_agree_with_htcondor() {
    check_all(
        &PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/cases"),
        49,
    );
}
