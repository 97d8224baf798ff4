//! The readers on the machine the tests run on: the figures must be
//! plausible, whatever the machine.

use host::Sampler;

#[test]
fn this_machine_has_cores_memory_and_disk() {
    let dir = std::env::temp_dir();
    let h = host::machine::system_host_readings(&dir).unwrap_or_else(|e| panic!("{e}"));
    eprintln!(
        "DETECTED_CORES={} DETECTED_PHYSICAL_CPUS={} DETECTED_CPUS_LIMIT={:?} memory={} MiB disk={} KiB TotalVirtualMemory={} KiB",
        h.hyperthread_cpus, h.physical_cpus, h.cpus_limit, h.memory, h.disk, h.swap
    );
    assert!(h.hyperthread_cpus >= 1);
    assert!(h.physical_cpus >= 1 && h.physical_cpus <= h.hyperthread_cpus);
    if let Some(limit) = h.cpus_limit {
        assert!(limit >= 1 && limit < h.hyperthread_cpus);
    }
    assert!(h.memory > 0);
    assert!(h.disk > 0);
    assert!(h.swap >= h.memory * 1024 / 2);
}

#[test]
fn this_machine_has_a_load_and_idle_times() {
    let mut s = Sampler::system(None);
    let me = std::process::id();
    let first = s.sample_now(&[vec![me]]).unwrap_or_else(|e| panic!("{e}"));
    // Burn some CPU so the second reading sees this process working.
    let start = std::time::Instant::now();
    let mut x = 0u64;
    while start.elapsed() < std::time::Duration::from_millis(300) {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
    }
    std::hint::black_box(x);
    let r = s
        .sample_now(&[vec![me], vec![]])
        .unwrap_or_else(|e| panic!("{e}"));
    eprintln!("first: {first:?}\nsecond: {r:?}");
    assert!(r.load_avg >= 0.0);
    assert!(r.keyboard_idle >= 0 && r.console_idle >= 0);
    assert!(r.keyboard_idle <= r.console_idle);
    assert_eq!(r.condor_load.len(), 2);
    assert!(r.condor_load[0] > 0.0, "{:?}", r.condor_load);
    assert_eq!(r.condor_load[1], 0.0);
}
