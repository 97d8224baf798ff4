//! Real hosts on one machine, for the tests of a pool of many hosts and
//! `bench throughput --hosts` (the tests include this file as a module of
//! their own): each host a network namespace of its own with loopback and
//! one Ethernet interface (`eth0`, one end of a veth pair), the other ends
//! joined by a Linux bridge that lives in a namespace of its own.
//!
//! Why the bridge has a namespace of its own, not the root namespace's: so
//! that nothing of the machine's own network is touched, not one
//! interface, address, route or firewall rule. The hosts' addresses
//! (`10.231.0.0/24`, chosen here) exist only inside the hosts' namespaces,
//! and with no default route there, no packet can leave them for the
//! machine's network. Every bed uses the same range: beds never share a
//! bridge, so they cannot see each other.
//!
//! Names: `fchosts-<pid>-<bed>-br` and `fchosts-<pid>-<bed>-h<i>`, so the
//! tests of one run (in parallel, as cargo runs them) and of other runs
//! never collide; a bed of a process that is gone (a run killed before its
//! `Drop`) is removed when the next bed is made. Dropping a [`Hosts`]
//! (also while a test panics) kills what still runs in its namespaces and
//! deletes them, and with them every veth end and the bridge.
//!
//! Commands run in a host by `setns(CLONE_NEWNET)` on a thread of their
//! own that then spawns them: the child inherits that namespace, and
//! `Command::uid` still drops privileges (a `pre_exec` hook would run only
//! after the uid had been dropped, too late to enter a namespace).
//!
//! Where namespaces cannot be made (not root, no CAP_NET_ADMIN, no `ip`),
//! [`Hosts::or_skip`] prints `skipped: ...` and the test returns;
//! [`Hosts::or_loopback`] says so and makes the second form instead:
//! [`Hosts::loopback`], each host an address of its own in 127.0.0.0/8
//! (`127.<100 + pid % 100>.<bed>.<i + 1>`, which any user may bind), its
//! daemons bound there (NETWORK_INTERFACE), its processes the trees of
//! what was spawned for it. That form shares one network stack and one
//! user: a host cannot be unplugged ([`Hosts::can_unplug`]), and every
//! host is "this host" to FS authentication.

#![allow(dead_code)]

use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The hosts' network: a private range made only inside the namespaces.
const NETWORK: [u8; 3] = [10, 231, 0];

/// What every bed's names start with.
const PREFIX: &str = "fchosts-";

static BEDS: AtomicUsize = AtomicUsize::new(0);

/// N hosts on a private bridge, or on loopback addresses.
pub struct Hosts {
    ip: PathBuf,
    bridge: String,
    hosts: Vec<String>,
    /// The loopback form: the hosts' network (first three octets), and
    /// the processes spawned for each host (the roots of its trees).
    loopback: Option<([u8; 3], Spawned)>,
}

/// The pids spawned for each host of the loopback form.
type Spawned = std::sync::Mutex<Vec<Vec<u32>>>;

impl Hosts {
    /// `n` hosts in network namespaces, or, where they cannot be made
    /// here, the same hosts on loopback addresses (saying why).
    pub fn or_loopback(n: usize) -> Hosts {
        match Hosts::new(n) {
            Ok(h) => h,
            Err(why) => {
                println!("skipped: network namespaces: {why}; the hosts run on loopback addresses");
                Hosts::loopback(n)
            }
        }
    }

    /// `n` hosts on loopback addresses of their own (no privilege needed).
    pub fn loopback(n: usize) -> Hosts {
        assert!((1..=250).contains(&n), "1 to 250 hosts");
        let bed = BEDS.fetch_add(1, Ordering::Relaxed);
        let net = [
            127,
            100 + (std::process::id() % 100) as u8,
            (bed % 250) as u8,
        ];
        Hosts {
            ip: PathBuf::new(),
            bridge: String::new(),
            hosts: (0..n)
                .map(|i| format!("loopback-{}-{bed}-h{i}", std::process::id()))
                .collect(),
            loopback: Some((net, std::sync::Mutex::new(vec![Vec::new(); n]))),
        }
    }

    /// How many hosts.
    pub fn len(&self) -> usize {
        self.hosts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.hosts.is_empty()
    }

    /// Whether these are the loopback form's hosts.
    pub fn is_loopback(&self) -> bool {
        self.loopback.is_some()
    }

    /// Whether a host's network can be cut ([`Hosts::unplug`]): not on
    /// loopback, where the hosts share one network stack.
    pub fn can_unplug(&self) -> bool {
        self.loopback.is_none()
    }

    /// `n` hosts, or `None` after printing why they cannot be made here.
    pub fn or_skip(n: usize) -> Option<Hosts> {
        match Hosts::new(n) {
            Ok(h) => Some(h),
            Err(why) => {
                println!("skipped: {why}");
                None
            }
        }
    }

    /// `n` hosts (at most 250), each with loopback up and
    /// `10.231.0.<i+1>/24` on `eth0`; `Err` says why namespaces cannot be
    /// made here.
    pub fn new(n: usize) -> Result<Hosts, String> {
        assert!((1..=250).contains(&n), "1 to 250 hosts");
        // SAFETY: geteuid cannot fail.
        if unsafe { libc::geteuid() } != 0 {
            return Err("network namespaces need root (CAP_NET_ADMIN)".into());
        }
        let ip = ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"]
            .iter()
            .map(PathBuf::from)
            .find(|p| p.exists())
            .ok_or("no `ip` (iproute2) to make network namespaces with")?;
        remove_stale(&ip);
        let bed = BEDS.fetch_add(1, Ordering::Relaxed);
        let base = format!("{PREFIX}{}-{bed}", std::process::id());
        let mut hosts = Hosts {
            ip,
            bridge: format!("{base}-br"),
            hosts: Vec::new(),
            loopback: None,
        };
        // From here a failure leaves a partial bed, which `Drop` removes.
        hosts.ip_cmd(&["netns", "add", &hosts.bridge.clone()])?;
        let br = hosts.bridge.clone();
        hosts.ip_cmd(&["-n", &br, "link", "set", "lo", "up"])?;
        hosts.ip_cmd(&["-n", &br, "link", "add", "br0", "type", "bridge"])?;
        hosts.ip_cmd(&["-n", &br, "link", "set", "br0", "up"])?;
        for i in 0..n {
            let name = format!("{base}-h{i}");
            hosts.ip_cmd(&["netns", "add", &name])?;
            hosts.hosts.push(name.clone());
            let port = format!("p{i}");
            hosts.ip_cmd(&["-n", &name, "link", "set", "lo", "up"])?;
            hosts.ip_cmd(&[
                "-n", &br, "link", "add", &port, "type", "veth", "peer", "name", "eth0", "netns",
                &name,
            ])?;
            hosts.ip_cmd(&["-n", &br, "link", "set", &port, "master", "br0", "up"])?;
            let addr = format!("{}/24", hosts.addr(i));
            hosts.ip_cmd(&["-n", &name, "addr", "add", &addr, "dev", "eth0"])?;
            hosts.ip_cmd(&["-n", &name, "link", "set", "eth0", "up"])?;
        }
        // Made: from here a failure is a bug, not a reason to skip.
        for i in 1..n {
            hosts.wait_connected(i, 0);
        }
        Ok(hosts)
    }

    /// Host `i`'s address.
    pub fn addr(&self, i: usize) -> Ipv4Addr {
        let net = self.loopback.as_ref().map_or(NETWORK, |(net, _)| *net);
        Ipv4Addr::new(net[0], net[1], net[2], i as u8 + 1)
    }

    /// Host `i`'s namespace (`ip netns exec NAME ...` reaches it by hand).
    pub fn name(&self, i: usize) -> &str {
        &self.hosts[i]
    }

    /// Runs `f` on a thread inside host `i`'s network namespace: what it
    /// spawns or opens (processes, sockets) belongs to that host.
    pub fn within<T: Send>(&self, i: usize, f: impl FnOnce() -> T + Send) -> T {
        if self.loopback.is_some() {
            return f();
        }
        let ns = std::fs::File::open(Path::new("/run/netns").join(&self.hosts[i]))
            .unwrap_or_else(|e| panic!("host {}: {e}", self.hosts[i]));
        std::thread::scope(|s| {
            s.spawn(|| {
                // SAFETY: a namespace file we opened; only this thread
                // moves, and it ends with the scope.
                let rc = unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) };
                assert_eq!(
                    rc,
                    0,
                    "setns {}: {}",
                    self.hosts[i],
                    std::io::Error::last_os_error()
                );
                f()
            })
            .join()
            .unwrap()
        })
    }

    /// Spawns `c` on host `i`.
    pub fn spawn(&self, i: usize, c: &mut Command) -> Child {
        let child = self.within(i, || c.spawn()).expect("spawning on a host");
        if let Some((_, roots)) = &self.loopback {
            roots.lock().unwrap()[i].push(child.id());
        }
        child
    }

    /// Runs `c` on host `i` to its end.
    pub fn output(&self, i: usize, c: &mut Command) -> Output {
        self.within(i, || c.output()).expect("running on a host")
    }

    /// Waits (at most 10 s: a bridge port may take a moment to forward)
    /// until host `from` reaches a TCP port on host `to`.
    fn wait_connected(&self, from: usize, to: usize) {
        let listener = self.within(to, || {
            TcpListener::bind(SocketAddr::new(self.addr(to).into(), 0)).unwrap()
        });
        let at = listener.local_addr().unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let r = self.within(from, || {
                TcpStream::connect_timeout(&at, Duration::from_millis(500))
            });
            match r {
                Ok(_) => return,
                Err(e) if Instant::now() > deadline => {
                    panic!("host {from} cannot reach host {to} at {at}: {e}")
                }
                Err(_) => std::thread::sleep(Duration::from_millis(50)),
            }
        }
    }

    /// Host `i` dies: everything that runs on it is killed at once
    /// (SIGKILL), as by a power cut; the host stays, empty, and may run
    /// again.
    #[allow(dead_code)]
    pub fn crash(&self, i: usize) {
        match &self.loopback {
            Some((_, roots)) => kill_trees(&std::mem::take(&mut roots.lock().unwrap()[i])),
            None => kill_all(&self.ip, &self.hosts[i]),
        }
    }

    /// Host `i`'s network goes down (its `eth0`, as an unplugged cable):
    /// it reaches no other host and no other host reaches it, but what
    /// runs on it runs on.
    #[allow(dead_code)]
    pub fn unplug(&self, i: usize) {
        assert!(self.can_unplug(), "a loopback host cannot be unplugged");
        self.ip_cmd(&["-n", &self.hosts[i], "link", "set", "eth0", "down"])
            .unwrap_or_else(|e| panic!("{e}"));
    }

    /// Host `i`'s network comes back.
    #[allow(dead_code)]
    pub fn plug(&self, i: usize) {
        assert!(self.can_unplug(), "a loopback host cannot be unplugged");
        self.ip_cmd(&["-n", &self.hosts[i], "link", "set", "eth0", "up"])
            .unwrap_or_else(|e| panic!("{e}"));
    }

    /// Runs `ip ARGS`; its error output when it fails.
    fn ip_cmd(&self, args: &[&str]) -> Result<(), String> {
        ip_cmd(&self.ip, args)
    }
}

fn ip_cmd(ip: &Path, args: &[&str]) -> Result<(), String> {
    let o = Command::new(ip)
        .args(args)
        .output()
        .map_err(|e| format!("{}: {e}", ip.display()))?;
    if o.status.success() {
        Ok(())
    } else {
        Err(format!(
            "`ip {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&o.stderr).trim()
        ))
    }
}

/// Kills what still runs in namespace `name`, then deletes it (its
/// interfaces go with it; a veth's other end too).
fn remove(ip: &Path, name: &str) {
    kill_all(ip, name);
    let _ = ip_cmd(ip, &["netns", "del", name]);
}

/// Kills everything that runs in namespace `name`.
fn kill_all(ip: &Path, name: &str) {
    // SIGKILL until none is left: a process may fork while we look.
    for _ in 0..50 {
        let Ok(o) = Command::new(ip).args(["netns", "pids", name]).output() else {
            break;
        };
        let pids: Vec<i32> = String::from_utf8_lossy(&o.stdout)
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect();
        if pids.is_empty() {
            break;
        }
        for pid in pids {
            // SAFETY: a plain signal to a process of our own namespace.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Kills the processes `roots` and all their descendants (SIGKILL, until
/// none is left: a process may fork while we look). Every process seen in
/// the tree is remembered, so a child whose parent died between two looks
/// (and was adopted by init) is still found by its own pid.
fn kill_trees(roots: &[u32]) {
    let mut known: Vec<u32> = roots.to_vec();
    for _ in 0..50 {
        // (pid, parent, a zombie) of every process.
        let procs: Vec<(u32, u32, bool)> = std::fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let pid: u32 = e.file_name().to_str()?.parse().ok()?;
                let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
                let mut rest = stat.rsplit_once(')')?.1.split_whitespace();
                let state = rest.next()?;
                let ppid = rest.next()?.parse().ok()?;
                Some((pid, ppid, state == "Z"))
            })
            .collect();
        loop {
            let more: Vec<u32> = procs
                .iter()
                .filter(|(p, pp, _)| known.contains(pp) && !known.contains(p))
                .map(|(p, _, _)| *p)
                .collect();
            if more.is_empty() {
                break;
            }
            known.extend(more);
        }
        let alive: Vec<u32> = procs
            .iter()
            .filter(|(p, _, zombie)| !zombie && known.contains(p))
            .map(|(p, _, _)| *p)
            .collect();
        if alive.is_empty() {
            return;
        }
        for pid in alive {
            // SAFETY: a plain signal to a process this bed spawned, or one
            // of its descendants.
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Removes the beds of processes that are gone (a run killed before it
/// could clean up).
fn remove_stale(ip: &Path) {
    let Ok(entries) = std::fs::read_dir("/run/netns") else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix(PREFIX)
            .and_then(|r| r.split('-').next())
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            remove(ip, &name);
        }
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        if let Some((_, roots)) = &self.loopback {
            let roots: Vec<u32> = roots.lock().unwrap().concat();
            kill_trees(&roots);
            return;
        }
        for h in &self.hosts {
            remove(&self.ip, h);
        }
        remove(&self.ip, &self.bridge);
    }
}
