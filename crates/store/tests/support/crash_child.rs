//! The crash test's writer (see `tests/crash.rs`): opens the store named by
//! its first argument and submits clusters until it is killed, printing
//! each acknowledgement on its own line, flushed, only after the store
//! call has returned: `<cluster>` for a cluster, `f <cluster>` for a
//! factory (late materialization), and after each submission, for every
//! factory it knows, `h <cluster> <proc>` once its oldest job moved to the
//! history and `m <cluster> <proc>` once it materialized the next job. A
//! restarted child takes the factories up where the store has them.

use std::collections::{BTreeMap, VecDeque};
use std::io::Write;
use std::sync::Arc;

#[path = "crash_ads.rs"]
mod crash_ads;

/// A factory as the child drives it: its cluster ad, the next ProcId,
/// its jobs in the queue (oldest first).
struct Factory {
    parent: Arc<classad::ClassAd>,
    next: u32,
    present: VecDeque<u32>,
}

fn say(line: String) {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    // One write of a short line: a pipe writes it whole or not at all.
    if out
        .write_all(line.as_bytes())
        .and_then(|()| out.flush())
        .is_err()
    {
        std::process::exit(0);
    }
}

fn fail(e: store::Error) -> ! {
    eprintln!("store-crash-child: {e}");
    std::process::exit(1);
}

fn main() {
    let Some(path) = std::env::args_os().nth(1) else {
        eprintln!("usage: store-crash-child DATABASE");
        std::process::exit(2);
    };
    let mut store = match store::Store::open(&path) {
        Ok(s) => s,
        Err(e) => fail(e),
    };
    // The factories the store holds, as the last child left them.
    let mut factories: BTreeMap<u32, Factory> = BTreeMap::new();
    for (record, ad) in store.load_factories().unwrap_or_else(|e| fail(e)) {
        factories.insert(
            record.cluster,
            Factory {
                parent: Arc::new(ad),
                next: record.next_proc,
                present: VecDeque::new(),
            },
        );
    }
    for job in store.load_queue().unwrap_or_else(|e| fail(e)) {
        if let Some(f) = factories.get_mut(&job.id.cluster) {
            f.present.push_back(job.id.proc);
        }
    }
    let mut now = 1_800_000_000;
    loop {
        let cluster = store.reserve_cluster().unwrap_or_else(|e| fail(e));
        if crash_ads::is_factory(cluster) {
            let cluster_ad = crash_ads::factory_cluster_ad(cluster);
            let parent = Arc::new(cluster_ad.clone());
            let procs: Vec<Arc<classad::ClassAd>> = (0..crash_ads::FACTORY_START)
                .map(|p| Arc::new(crash_ads::factory_proc(&parent, cluster, p)))
                .collect();
            let record = store::FactoryRecord {
                cluster,
                digest: format!("executable = /bin/sleep\nqueue 1000000 # {cluster}\n"),
                items: Vec::new(),
                next_proc: crash_ads::FACTORY_START,
                total: 1_000_000,
                paused: false,
            };
            store
                .submit_factory(&cluster_ad, &record, &procs)
                .unwrap_or_else(|e| fail(e));
            say(format!("f {cluster}\n"));
            factories.insert(
                cluster,
                Factory {
                    parent,
                    next: crash_ads::FACTORY_START,
                    present: (0..crash_ads::FACTORY_START).collect(),
                },
            );
        } else {
            let procs: Vec<_> = (0..crash_ads::nprocs(cluster))
                .map(|p| crash_ads::proc_ad(cluster, p))
                .collect();
            store
                .submit_cluster(cluster, &procs)
                .unwrap_or_else(|e| fail(e));
            say(format!("{cluster}\n"));
        }
        for (&c, f) in &mut factories {
            now += 1;
            if let Some(&oldest) = f.present.front() {
                store
                    .apply(&[store::Op::to_history(store::JobId::new(c, oldest), now)])
                    .unwrap_or_else(|e| fail(e));
                f.present.pop_front();
                say(format!("h {c} {oldest}\n"));
            }
            let p = f.next;
            let ad = Arc::new(crash_ads::factory_proc(&f.parent, c, p));
            store
                .materialize(c, &[ad], p + 1)
                .unwrap_or_else(|e| fail(e));
            f.next = p + 1;
            f.present.push_back(p);
            say(format!("m {c} {p}\n"));
        }
    }
}
