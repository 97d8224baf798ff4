//! The readers on a temporary tree that mimics `/proc`, `/sys` and `/dev`:
//! what a machine with a CPU quota, a memory limit, terminals, a PS/2
//! keyboard and a busy job reads as.

use std::fs::{File, FileTimes};
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use host::idle::INFINITE_IDLE;
use host::{Root, Sampler};

const T0: u64 = 1_700_000_000;

fn at(secs: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(secs)
}

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

/// A device file last accessed at `atime`.
fn device(root: &Path, rel: &str, atime: u64) {
    write(root, rel, "");
    touch(root, rel, atime);
}

fn touch(root: &Path, rel: &str, atime: u64) {
    let f = File::options().write(true).open(root.join(rel)).unwrap();
    f.set_times(
        FileTimes::new()
            .set_accessed(at(atime))
            .set_modified(at(atime)),
    )
    .unwrap();
}

fn interrupts(keyboard: u64, mouse: u64) -> String {
    format!(
        "           CPU0       CPU1\n  0:  34  0  IO-APIC  2-edge  timer\n  1:  {keyboard}  0  IO-APIC  1-edge  i8042\n 12:  {mouse}  0  IO-APIC  12-edge  i8042\n"
    )
}

/// Eight threads on four cores, 32 GiB, in a container limited to 3 CPUs
/// (cgroup quota), 2 CPUs by affinity... and 8 GiB of memory.
fn machine(root: &Path) {
    let mut cpuinfo = String::new();
    for p in 0..8 {
        cpuinfo.push_str(&format!(
            "processor\t: {p}\nphysical id\t: 0\ncore id\t\t: {}\n\n",
            p % 4
        ));
    }
    write(root, "proc/cpuinfo", &cpuinfo);
    write(
        root,
        "proc/self/status",
        "Name:\tstartd\nCpus_allowed_list:\t0-5\n",
    );
    write(root, "proc/self/cgroup", "0::/system.slice/condor\n");
    write(
        root,
        "proc/self/mountinfo",
        "30 23 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
    );
    write(
        root,
        "sys/fs/cgroup/system.slice/condor/cpu.max",
        "max 100000\n",
    );
    write(
        root,
        "sys/fs/cgroup/system.slice/cpu.max",
        "300000 100000\n",
    );
    write(
        root,
        "sys/fs/cgroup/system.slice/condor/memory.max",
        "8589934592\n",
    );
    write(root, "sys/fs/cgroup/system.slice/memory.max", "max\n");
    write(
        root,
        "proc/meminfo",
        "MemTotal:       33554432 kB\nMemFree:  1 kB\nSwapTotal:  2097152 kB\nSwapFree:  1048576 kB\n",
    );
    write(root, "proc/loadavg", "1.25 0.50 0.25 3/200 999\n");
    write(root, "proc/uptime", "1000.00 7000.00\n");
    write(root, "proc/interrupts", &interrupts(500, 900));
    device(root, "dev/tty1", T0 - 600);
    device(root, "dev/tty2", T0 - 3600);
    device(root, "dev/ttyS0", T0 - 7200);
    device(root, "dev/pts/0", T0 - 300);
    device(root, "dev/console", T0 - 5000);
}

#[test]
fn machine_readings_with_limits() {
    let dir = tempfile::tempdir().unwrap();
    machine(dir.path());
    let h = host::machine::host_readings(&Root::at(dir.path()), dir.path(), Default::default())
        .unwrap();
    assert_eq!(
        (h.hyperthread_cpus, h.physical_cpus, h.cpus_limit),
        (8, 4, Some(3))
    );
    // 32 GiB of RAM, capped at the group's 8 GiB.
    assert_eq!(h.memory, 8192);
    // Free swap plus RAM.
    assert_eq!(h.swap, 1048576 + 33554432);
    assert!(h.disk > 0);

    // A missing file is an error that names it.
    std::fs::remove_file(dir.path().join("proc/meminfo")).unwrap();
    let e = host::machine::host_readings(&Root::at(dir.path()), dir.path(), Default::default())
        .unwrap_err();
    assert!(e.to_string().contains("proc/meminfo"), "{e}");
}

#[test]
fn terminals_console_and_interrupts_give_the_idle_times() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    machine(root);
    let mut s = Sampler::new(Root::at(root), "mouse, /dev/console", None);
    // First reading: the PS/2 devices count as just used (HTCondor's
    // assumption), so both idle times are 0.
    let r = s.sample(at(T0), &[]).unwrap();
    assert_eq!((r.keyboard_idle, r.console_idle), (0, 0));
    assert_eq!(r.load_avg, 1.25);

    // No interrupts for 100 s: the console was last touched at the
    // interrupt reading, the keyboard idle is capped by it too.
    let r = s.sample(at(T0 + 100), &[]).unwrap();
    assert_eq!((r.keyboard_idle, r.console_idle), (100, 100));

    // Someone types on an ssh session: keyboard active, console not.
    touch(root, "dev/pts/0", T0 + 150);
    let r = s.sample(at(T0 + 160), &[]).unwrap();
    assert_eq!((r.keyboard_idle, r.console_idle), (10, 160));

    // The mouse moves.
    write(root, "proc/interrupts", &interrupts(500, 901));
    let r = s.sample(at(T0 + 200), &[]).unwrap();
    assert_eq!((r.keyboard_idle, r.console_idle), (0, 0));
}

#[test]
fn without_input_interrupts_the_console_is_its_devices() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    machine(root);
    write(
        root,
        "proc/interrupts",
        "  CPU0\n 26:  15  IO-APIC  4-edge  ttyS0\n",
    );
    let mut s = Sampler::new(Root::at(root), "console", None);
    let r = s.sample(at(T0), &[]).unwrap();
    // pts/0 was used 300 s ago; /dev/console 5000 s ago.
    assert_eq!((r.keyboard_idle, r.console_idle), (300, 5000));

    // No terminals and no console at all: idle forever... except that a
    // console device that does not exist reads as used at the epoch.
    for d in [
        "dev/tty1",
        "dev/tty2",
        "dev/ttyS0",
        "dev/pts/0",
        "dev/console",
    ] {
        std::fs::remove_file(root.join(d)).unwrap();
    }
    let mut none = Sampler::new(Root::at(root), "", None);
    let r = none.sample(at(T0), &[]).unwrap();
    assert_eq!(
        (r.keyboard_idle, r.console_idle),
        (INFINITE_IDLE, INFINITE_IDLE)
    );
    let mut missing = Sampler::new(Root::at(root), "console", None);
    let r = missing.sample(at(T0), &[]).unwrap();
    assert_eq!(r.console_idle, T0 as i64);
}

fn stat(pid: u32, utime: u64, stime: u64, start: u64) -> String {
    format!("{pid} (job (1)) R 1 {pid} {pid} 0 -1 0 0 0 0 0 {utime} {stime} 0 0 20 0 1 0 {start} 100000 10\n")
}

#[test]
fn job_load_is_cpu_time_over_wall_time_per_slot() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    machine(root);
    // Started 50 s after boot (uptime 1000 s: 950 s old), 475 s of CPU.
    write(root, "proc/101/stat", &stat(101, 40000, 7500, 5000));
    write(root, "proc/102/stat", &stat(102, 0, 0, 90000));
    let mut s = Sampler::new(Root::at(root), "", None).with_ticks_per_second(100);
    let pids = vec![vec![101, 102], vec![], vec![999]];
    let r = s.sample(at(T0), &pids).unwrap();
    assert_eq!(r.condor_load.len(), 3);
    assert!((r.condor_load[0] - 0.5).abs() < 1e-9, "{:?}", r.condor_load);
    assert_eq!(&r.condor_load[1..], [0.0, 0.0]);

    // 10 s later: 101 used 10 s of CPU, 102 used 5 s.
    write(root, "proc/101/stat", &stat(101, 40800, 7700, 5000));
    write(root, "proc/102/stat", &stat(102, 400, 100, 90000));
    let r = s.sample(at(T0 + 10), &pids).unwrap();
    assert!((r.condor_load[0] - 1.5).abs() < 1e-9, "{:?}", r.condor_load);

    // pid 101 exits and the pid is reused by a process that started
    // later: charged over its own age, not the old process's figures.
    write(root, "proc/101/stat", &stat(101, 100, 0, 99000));
    let r = s.sample(at(T0 + 20), &pids).unwrap();
    // 1 s of CPU over 10 s of age, plus 102's nothing new.
    assert!((r.condor_load[0] - 0.1).abs() < 1e-9, "{:?}", r.condor_load);
}

#[test]
fn the_override_file_wins_and_its_errors_name_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    machine(root);
    let file = root.join("readings");
    let mut s = Sampler::new(Root::at(root), "console", Some(file.clone()));
    // No file yet: measured values.
    let r = s.sample(at(T0), &[vec![]]).unwrap();
    assert_eq!((r.keyboard_idle, r.load_avg), (0, 1.25));

    std::fs::write(
        &file,
        "KeyboardIdle = 0\nConsoleIdle = 0\nLoadAvg = 3\nCondorLoadAvg = 1, 0.5\n",
    )
    .unwrap();
    let r = s.sample(at(T0 + 600), &[vec![]]).unwrap();
    assert_eq!((r.keyboard_idle, r.console_idle, r.load_avg), (0, 0, 3.0));
    assert_eq!(r.condor_load, [1.0, 0.5]);

    std::fs::write(&file, "KeyboardIdle = 0\nConsoleIdle = now\n").unwrap();
    let e = s.sample(at(T0 + 700), &[]).unwrap_err().to_string();
    assert_eq!(
        e,
        format!(
            "{}:2: expected a whole number of seconds (0 or more) for ConsoleIdle, found `now`",
            file.display()
        )
    );

    // The owner leaves: the file goes, the measured values are back.
    std::fs::remove_file(&file).unwrap();
    let r = s.sample(at(T0 + 800), &[]).unwrap();
    assert_eq!(r.keyboard_idle, 800);
}
