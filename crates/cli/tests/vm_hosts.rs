//! Running on VM hosts (issue 18, special-environments.txt) on real
//! processes: a pool on the test bed's loopback hosts (no privilege
//! needed) whose two execute points are a VM host (`ep2`, configured by
//! `examples/config/vm-host.conf`) and its inner virtual machine (`ep3`,
//! `examples/config/vm-inner.conf`), each its own master and startd. The
//! inner machine's slot ads carry the host's attributes as `HOST_<attr>`;
//! while one of the two runs a job the other's START is False, so a job
//! for it stays idle until the first one is gone.
//!
//! On loopback every host has the machine's host name, so each execute
//! point is given a FULL_HOSTNAME of its own (`host.vmp.test`,
//! `vm.vmp.test`), as real machines would have; the host names its inner
//! machine by IP address (the manual allows either) and the inner machine
//! names its host by name, so both forms are used.

#[path = "common/bed.rs"]
mod bed;
mod common;
#[path = "../src/testbed.rs"]
mod hosts;

use std::path::Path;
use std::time::Duration;

use bed::{until, Pool, AP, FAST};
use common::out;

const HOST: usize = 2;
const VM: usize = 3;

fn example(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/config")
        .join(name)
        .display()
        .to_string()
}

/// The slot ads of the execute point `ep<i>`, each as `name = value`
/// lines (from `status -l`).
fn ads_of(pool: &Pool, i: usize) -> Vec<String> {
    let o = pool.on(AP, &["status", "-l"]);
    out(&o)
        .split("\n\n")
        .filter(|ad| attr(ad, "Name").is_some_and(|n| n.contains(&format!("@ep{i}@"))))
        .map(str::to_string)
        .collect()
}

/// The value of `attr` in an ad as `status -l` prints it.
fn attr(ad: &str, name: &str) -> Option<String> {
    ad.lines().find_map(|l| {
        let (n, v) = l.split_once(" = ")?;
        n.trim()
            .eq_ignore_ascii_case(name)
            .then(|| v.trim().to_string())
    })
}

/// What START evaluates to on `ep<i>`'s slot, as the negotiator sees it.
fn start_on(pool: &Pool, i: usize) -> String {
    let o = pool.on(AP, &["status", "-af", "Name", "Start"]);
    out(&o)
        .lines()
        .find(|l| l.contains(&format!("@ep{i}@")))
        .and_then(|l| l.split_whitespace().nth(1))
        .unwrap_or("")
        .to_string()
}

/// Job `id`'s status (1 idle, 2 running) and where it runs.
fn job(pool: &Pool, id: &str) -> (String, String) {
    let o = pool.on(AP, &["q", id, "-af", "JobStatus", "RemoteHost"]);
    let text = out(&o);
    let mut f = text.split_whitespace();
    (
        f.next().unwrap_or("").to_string(),
        f.next().unwrap_or("").to_string(),
    )
}

fn wait_running_on(pool: &Pool, id: &str, i: usize) {
    until(90, &format!("job {id} running on ep{i}"), || {
        let (status, host) = job(pool, id);
        (status == "2" && host.contains(&format!("@ep{i}@")))
            .then_some(())
            .ok_or_else(|| format!("{status} {host}\n{}", pool.logs()))
    });
}

/// A job that sleeps until removed, for the machine named `machine`.
fn long_job(machine: &str) -> String {
    format!(
        "executable = /bin/sleep\n\
         arguments = 600\n\
         should_transfer_files = NO\n\
         requirements = Machine == \"{machine}\"\n\
         queue\n"
    )
}

/// Waits a few negotiation cycles (NEGOTIATOR_INTERVAL is 2 s) and says
/// whether job `id` stayed idle throughout.
fn stays_idle(pool: &Pool, id: &str) -> bool {
    for _ in 0..8 {
        std::thread::sleep(Duration::from_secs(1));
        if job(pool, id).0 != "1" {
            return false;
        }
    }
    true
}

#[test]
fn a_vm_host_and_its_inner_machine_run_one_job_at_a_time_and_the_vm_sees_host_attributes() {
    let hosts = hosts::Hosts::loopback(4);
    let vm_address = hosts.addr(VM).to_string();
    let pool = Pool::on_hosts_with(hosts, "vm-hosts", FAST, |i, _| match i {
        HOST => format!(
            "FULL_HOSTNAME = host.vmp.test\n\
             NUM_CPUS = 1\n\
             include : {}\n\
             VMP_VM_LIST = {vm_address}\n",
            example("vm-host.conf")
        ),
        // The manual's START, less its load terms: on a test machine
        // shared with other work, neither machine's load stays below
        // 0.3. What is left still reads the host's attribute.
        VM => format!(
            "FULL_HOSTNAME = vm.vmp.test\n\
             NUM_CPUS = 1\n\
             include : {}\n\
             VMP_HOST_MACHINE = host.vmp.test\n\
             START = (KeyboardIdle > 150) && (HOST_KeyboardIdle > 150)\n",
            example("vm-inner.conf")
        ),
        _ => String::new(),
    });
    let slots = pool.wait_slots(2);
    println!("slots:\n{slots}");

    // The inner machine's slot ad carries the host's attributes; the
    // host's carries none.
    let mut vm_ad = String::new();
    until(
        60,
        "HOST_ attributes in the inner machine's slot ad",
        || {
            vm_ad = ads_of(&pool, VM).concat();
            (attr(&vm_ad, "HOST_Machine").as_deref() == Some("\"host.vmp.test\""))
                .then_some(())
                .ok_or_else(|| format!("{vm_ad}\n{}", pool.logs()))
        },
    );
    let host_ad = ads_of(&pool, HOST).concat();
    let memory = |ad: &str, name: &str| -> i64 {
        attr(ad, name)
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{name} in {ad}"))
    };
    assert_eq!(memory(&vm_ad, "HOST_Memory"), memory(&host_ad, "Memory"));
    assert_eq!(
        memory(&vm_ad, "HOST_TotalMemory"),
        memory(&host_ad, "TotalMemory")
    );
    assert!(attr(&vm_ad, "HOST_KeyboardIdle").is_some(), "{vm_ad}");
    assert!(attr(&vm_ad, "HOST_TotalLoadAvg").is_some(), "{vm_ad}");
    assert_eq!(attr(&vm_ad, "Machine").as_deref(), Some("\"vm.vmp.test\""));
    assert!(
        !host_ad.lines().any(|l| l.starts_with("HOST_")),
        "{host_ad}"
    );
    // Both accept jobs, the inner machine's START reading the host's
    // keyboard.
    until(30, "both slots' START true", || {
        let (h, v) = (start_on(&pool, HOST), start_on(&pool, VM));
        (h == "true" && v == "true")
            .then_some(())
            .ok_or_else(|| format!("host {h}, vm {v}"))
    });
    let logs = pool.logs();
    assert!(
        logs.contains(&format!(
            "VMP_VM_LIST: this host runs the inner virtual machines {vm_address}"
        )) && logs.contains("VMP_HOST_MACHINE: this is an inner virtual machine of host.vmp.test"),
        "{logs}"
    );

    // A job on the inner machine: the host's START is overridden False,
    // and a job for the host stays idle.
    let on_vm = pool.submit_with("on-vm.sub", &long_job("vm.vmp.test"), &[]);
    let on_vm = format!("{on_vm}.0");
    wait_running_on(&pool, &on_vm, VM);
    until(30, "the host's START False", || {
        let h = start_on(&pool, HOST);
        (h == "false").then_some(()).ok_or(h)
    });
    assert!(
        pool.log(HOST).contains(&format!(
            "VMP: START is overridden False: the inner virtual machine {vm_address} runs a job"
        )),
        "{}",
        pool.log(HOST)
    );
    let on_host = pool.submit_with("on-host.sub", &long_job("host.vmp.test"), &[]);
    let on_host = format!("{on_host}.0");
    assert!(
        stays_idle(&pool, &on_host),
        "a job ran on the host while its inner machine ran one: {:?}\n{}",
        job(&pool, &on_host),
        pool.logs()
    );

    // The inner machine's job is removed: the host runs its job, and now
    // the inner machine's START is False and it sees the host claimed.
    let o = pool.on(AP, &["rm", &on_vm]);
    assert!(o.status.success(), "{}", bed::both(&o));
    wait_running_on(&pool, &on_host, HOST);
    until(30, "the inner machine's START False", || {
        let v = start_on(&pool, VM);
        let state = attr(&ads_of(&pool, VM).concat(), "HOST_State").unwrap_or_default();
        (v == "false" && state == "\"Claimed\"")
            .then_some(())
            .ok_or(format!("{v} {state}"))
    });
    assert!(
        pool.log(VM)
            .contains("VMP: START is overridden False: the host host.vmp.test runs a job"),
        "{}",
        pool.log(VM)
    );
    assert!(
        pool.log(HOST)
            .contains("VMP: START is no longer overridden: no VM-host peer runs a job"),
        "{}",
        pool.log(HOST)
    );
    let again = pool.submit_with("again-on-vm.sub", &long_job("vm.vmp.test"), &[]);
    let again = format!("{again}.0");
    assert!(
        stays_idle(&pool, &again),
        "a job ran on the inner machine while its host ran one: {:?}\n{}",
        job(&pool, &again),
        pool.logs()
    );

    // The host's job is removed: the inner machine's job runs.
    let o = pool.on(AP, &["rm", &on_host]);
    assert!(o.status.success(), "{}", bed::both(&o));
    wait_running_on(&pool, &again, VM);
    let o = pool.on(AP, &["rm", &again]);
    assert!(o.status.success(), "{}", bed::both(&o));

    // Passed: the pool stops (each master with its daemons and jobs) and
    // its files go (its base is a `common::Scratch`); a failed run keeps
    // them for a look.
    drop(pool);
}
