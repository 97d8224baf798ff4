//! `ferrocondor q -better-analyze -jobads FILE -slotads FILE`: why a job
//! does not run, from ad files as condor_q -l and condor_status -l print
//! them.

mod common;

use std::process::{Command, Output};

/// A test's own scratch directory, removed when it passes.
fn dir(name: &str) -> common::Scratch {
    common::scratch(&format!("q-{name}"))
}

fn q(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ferrocondor"))
        .arg("q")
        .args(args)
        .output()
        .unwrap()
}

/// Four slots: two x86_64 with 8 GiB, two aarch64 with 16 GiB.
fn slots() -> String {
    let mut s = String::new();
    for (i, (arch, mem)) in [
        ("X86_64", 8192),
        ("X86_64", 8192),
        ("aarch64", 16384),
        ("aarch64", 16384),
    ]
    .iter()
    .enumerate()
    {
        s.push_str(&format!(
            "MyType = \"Machine\"\nName = \"slot1@node{i}\"\nMachine = \"node{i}\"\nArch = \"{arch}\"\nOpSys = \"LINUX\"\nMemory = {mem}\nCpus = 1\nDisk = 1000000\nState = \"Unclaimed\"\nActivity = \"Idle\"\nStart = true\nRequirements = START\n\n"
        ));
    }
    s
}

fn job(cluster: i64, memory: i64) -> String {
    format!(
        "MyType = \"Job\"\nClusterId = {cluster}\nProcId = 0\nOwner = \"alice\"\nJobUniverse = 5\nRequestMemory = {memory}\nRequirements = (TARGET.Arch == \"X86_64\") && (TARGET.Memory >= RequestMemory)\n\n"
    )
}

#[test]
fn better_analyze_says_which_clause_rules_out_the_slots_and_what_would_help() {
    let d = dir("better-analyze");
    let jobs = d.join("jobs.ads");
    let slotads = d.join("slots.ads");
    std::fs::write(
        &jobs,
        format!("{}{}{}", job(7, 4096), job(8, 12000), job(9, 20000)),
    )
    .unwrap();
    std::fs::write(&slotads, slots()).unwrap();

    // Job 8 asks for more memory than any x86_64 slot has (the aarch64
    // ones have enough): it cannot run, and the memory clause is to blame.
    let o = q(&[
        "-better-analyze",
        "-jobads",
        jobs.to_str().unwrap(),
        "-slotads",
        slotads.to_str().unwrap(),
        "8",
    ]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{text}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(text.contains("008.000"), "{text}");
    assert!(text.contains("TARGET.Arch == \"X86_64\""), "{text}");
    assert!(text.contains("none of the 2 slots"), "{text}");

    // Job 9 asks for more than any slot has at all: the suggestion says
    // what the pool offers.
    let o = q(&[
        "-better-analyze",
        "-jobads",
        jobs.to_str().unwrap(),
        "-slotads",
        slotads.to_str().unwrap(),
        "9",
    ]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{text}");
    assert!(text.contains("largest is 16384"), "{text}");

    // Job 7 fits the two x86_64 slots.
    let o = q(&[
        "-better-analyze",
        "-jobads",
        jobs.to_str().unwrap(),
        "-slotads",
        slotads.to_str().unwrap(),
        "7.0",
    ]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{text}");
    assert!(text.contains("007.000"), "{text}");
    assert!(!text.contains("008.000"), "{text}");
}

#[test]
fn a_broken_ad_file_is_refused_with_its_line() {
    let d = dir("broken");
    let jobs = d.join("broken.ads");
    let slotads = d.join("slots2.ads");
    std::fs::write(&jobs, "ClusterId = 1\nProcId = 0\nMemroy 4096\n").unwrap();
    std::fs::write(&slotads, slots()).unwrap();
    let o = q(&[
        "-better-analyze",
        "-jobads",
        jobs.to_str().unwrap(),
        "-slotads",
        slotads.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("broken.ads") && err.contains(":3:"), "{err}");
}

#[test]
fn without_a_pool_q_says_how_to_start_one() {
    let o = Command::new(env!("CARGO_BIN_EXE_ferrocondor"))
        .arg("q")
        .env("FERROCONDOR_STATE", dir("no-pool").join("no-pool"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("no pool is running at") && err.contains("pool up"),
        "{err}"
    );
}

#[test]
fn better_analyze_without_slot_ads_asks_the_pool_for_them() {
    // No -slotads: the slots come from the pool, and with no pool running
    // the error says how to start one.
    let d = dir("slotads-from-pool");
    let jobs = d.join("one.ads");
    std::fs::write(&jobs, job(3, 1024)).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_ferrocondor"))
        .args(["q", "-better-analyze", "3.0", "-jobads"])
        .arg(&jobs)
        .env("FERROCONDOR_STATE", d.join("no-pool-here"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("no pool is running at") && err.contains("ferrocondor pool up"),
        "{err}"
    );
}
