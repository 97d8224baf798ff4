//! The crash test's writer (see `tests/crash.rs`): opens the store named by
//! its first argument and submits clusters until it is killed, printing each
//! cluster id on its own line, flushed, only after `submit_cluster` has
//! returned. A printed id is therefore an acknowledged submission.

use std::io::Write;

#[path = "crash_ads.rs"]
mod crash_ads;

fn main() {
    let Some(path) = std::env::args_os().nth(1) else {
        eprintln!("usage: store-crash-child DATABASE");
        std::process::exit(2);
    };
    let mut store = match store::Store::open(&path) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("store-crash-child: {e}");
            std::process::exit(1);
        }
    };
    let stdout = std::io::stdout();
    loop {
        let result = store.reserve_cluster().and_then(|cluster| {
            let procs: Vec<_> = (0..crash_ads::nprocs(cluster))
                .map(|p| crash_ads::proc_ad(cluster, p))
                .collect();
            store.submit_cluster(cluster, &procs).map(|()| cluster)
        });
        match result {
            Ok(cluster) => {
                let mut out = stdout.lock();
                // One write of a short line: a pipe writes it whole or not at all.
                if out
                    .write_all(format!("{cluster}\n").as_bytes())
                    .and_then(|()| out.flush())
                    .is_err()
                {
                    std::process::exit(0);
                }
            }
            Err(e) => {
                eprintln!("store-crash-child: {e}");
                std::process::exit(1);
            }
        }
    }
}
