//! Parses the bench machine ad N times, for counting instructions with
//! callgrind (timings on a shared VM vary too much to judge small changes):
//!
//! ```text
//! cargo build --release -p classad --example parse_count
//! valgrind --tool=callgrind target/release/examples/parse_count old 1000
//! ```
//!
//! Run it twice with different counts and divide the difference in total
//! instructions by the difference in counts: that is the cost of one parse,
//! without the start-up. Uses mimalloc, as the benchmark and the binary do.

use std::hint::black_box;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const MACHINE_AD: &str = include_str!("../../../../shared/oracle/bench/machine.ad");

fn main() {
    let mut args = std::env::args().skip(1);
    let mode = args.next().unwrap_or_else(|| "old".to_string());
    let n: usize = args.next().map_or(1000, |s| s.parse().expect("a count"));
    let old = classad::reader::parse_old_ad(MACHINE_AD).expect("the machine ad parses");
    let new_text = old.to_string();
    let mut attrs = 0;
    for _ in 0..n {
        let ad = match mode.as_str() {
            "old" => classad::reader::parse_old_ad(black_box(MACHINE_AD)).unwrap(),
            "new" => classad::ClassAd::parse(black_box(&new_text)).unwrap(),
            other => panic!("mode is old or new, not {other}"),
        };
        attrs += ad.len();
    }
    println!("{mode}: {n} parses, {attrs} attributes");
}
