//! Test helpers: configurations from text, realistic job ads from submit
//! descriptions (through the `submit` crate, as `condor_submit` makes them),
//! and a queue holding one submitted job.

#![allow(dead_code)]

use classad::ClassAd;
use config::{load, Config, FixedHost, LoadOptions, MemFiles, Root};
use schedd::{JobId, JobQueue, SubmitPolicy};

/// 2023-11-14 22:13:20 UTC.
pub const T0: i64 = 1_700_000_000;

pub fn config(text: &str) -> Config {
    load(
        &LoadOptions::new("SCHEDD", Root::File("c".into())),
        &MemFiles::new().with("c", text),
        &FixedHost::empty(),
    )
    .unwrap()
}

/// The job ads a submit description queues into `cluster` for `owner`.
pub fn job_ads(description: &str, cluster: i64, owner: &str, append: &[&str]) -> Vec<ClassAd> {
    let mut opts = submit::SubmitOptions::new(cluster, owner, T0, "/home/alice");
    opts.append = append.iter().map(|s| s.to_string()).collect();
    let files = submit::MemFiles::new().with("/home/alice/job.sh", "#!/bin/sh\n");
    submit::submit(description, &opts, &config(""), &files)
        .unwrap()
        .jobs
}

pub const SIMPLE: &str = "executable = job.sh\nlog = job.log\nqueue\n";

/// A queue with one job of `description` submitted by alice at T0.
pub fn queue_with(description: &str) -> (JobQueue, JobId) {
    let mut q = JobQueue::new();
    let cluster = q.new_cluster();
    let ads = job_ads(description, cluster, "alice", &[]);
    let s = q
        .submit(
            ads,
            "alice",
            &SubmitPolicy::none(),
            &ClassAd::new(),
            "<10.0.0.1:9618>",
            T0,
        )
        .unwrap();
    (q, s.jobs[0])
}

/// An attribute's value as ClassAd text.
pub fn show(q: &JobQueue, id: JobId, name: &str) -> Option<String> {
    q.job(id)?.get(name).map(classad::unparse::expr_to_string)
}
