//! The limits the kernel's control groups put on this process: a CPU quota
//! (cgroup v2 `cpu.max`) and a memory limit (v2 `memory.max`, or v1
//! `memory.limit_in_bytes`). HTCondor caps what it detects by them, so a
//! startd in a container offers what the container may use, not the host.
//!
//! The process's own group comes from `/proc/self/cgroup`, where its
//! hierarchy is mounted from `/proc/self/mountinfo`; a limit set on any
//! ancestor group binds too, so the smallest along the way counts.

use std::path::PathBuf;

use crate::Root;

/// Where this process's groups are, as paths under the [`Root`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CgroupDirs {
    /// The v2 (unified) group, then its ancestors up to the mount point.
    pub v2: Vec<PathBuf>,
    /// The v1 memory controller's group, then its ancestors.
    pub v1_memory: Vec<PathBuf>,
}

/// One line of `/proc/self/mountinfo`: what is mounted where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mount {
    /// The directory of the file system that is mounted (`/` mostly; a
    /// group's path when a container sees only its own group).
    pub root: String,
    pub mount_point: String,
    pub fstype: String,
    pub super_options: String,
}

/// The groups named in `/proc/self/cgroup`: the v2 path (`0::/path`) and
/// the v1 memory controller's (`N:memory:/path`, or in a list such as
/// `N:memory,hugetlb:/path`).
pub fn parse_proc_cgroup(text: &str) -> (Option<String>, Option<String>) {
    let mut v2 = None;
    let mut memory = None;
    for line in text.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(id), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        if id == "0" && controllers.is_empty() {
            v2 = Some(path.to_string());
        } else if controllers.split(',').any(|c| c == "memory") {
            memory = Some(path.to_string());
        }
    }
    (v2, memory)
}

/// `/proc/self/mountinfo`: fields 4 and 5 are the mounted root and the
/// mount point, and after the lone `-` come the type, the source and the
/// super-block options. Octal escapes (`\040` for a space) are undone.
pub fn parse_mountinfo(text: &str) -> Vec<Mount> {
    let mut out = Vec::new();
    for line in text.lines() {
        let fields: Vec<&str> = line.split(' ').collect();
        let Some(dash) = fields.iter().position(|f| *f == "-") else {
            continue;
        };
        if fields.len() < 5 || fields.len() < dash + 4 {
            continue;
        }
        out.push(Mount {
            root: unescape(fields[3]),
            mount_point: unescape(fields[4]),
            fstype: fields[dash + 1].to_string(),
            super_options: fields[dash + 3].to_string(),
        });
    }
    out
}

fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let octal = b
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(|c| (b'0'..=b'7').contains(c)));
        if let (b'\\', Some(d)) = (b[i], octal) {
            let v =
                u32::from(d[0] - b'0') * 64 + u32::from(d[1] - b'0') * 8 + u32::from(d[2] - b'0');
            out.push(v as u8);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The directory of group `path` in a hierarchy mounted by `mount`, and of
/// each ancestor up to the mount point (a container's view may mount its
/// own group as the root, so the mount's root is taken off first).
fn group_dirs(mount: &Mount, path: &str) -> Vec<PathBuf> {
    let rel = if mount.root == "/" {
        path
    } else {
        match path.strip_prefix(mount.root.as_str()) {
            Some(rest) => rest,
            None => path,
        }
    };
    let base = PathBuf::from(&mount.mount_point);
    let mut dirs = Vec::new();
    let mut parts: Vec<&str> = rel.split('/').filter(|p| !p.is_empty()).collect();
    loop {
        let mut d = base.clone();
        for p in &parts {
            d.push(p);
        }
        dirs.push(d);
        if parts.pop().is_none() {
            break;
        }
    }
    dirs
}

/// Where this process's control groups are, from `/proc/self/cgroup` and
/// `/proc/self/mountinfo` under `root`. Missing files give no groups.
pub fn locate(root: &Root) -> CgroupDirs {
    let (v2, memory) = match root.read_optional("proc/self/cgroup") {
        Some(t) => parse_proc_cgroup(&t),
        None => return CgroupDirs::default(),
    };
    let mounts = root
        .read_optional("proc/self/mountinfo")
        .map(|t| parse_mountinfo(&t))
        .unwrap_or_default();
    let mut dirs = CgroupDirs::default();
    if let (Some(path), Some(m)) = (v2, mounts.iter().find(|m| m.fstype == "cgroup2")) {
        dirs.v2 = group_dirs(m, &path);
    }
    let memory_mount = mounts
        .iter()
        .find(|m| m.fstype == "cgroup" && m.super_options.split(',').any(|o| o == "memory"));
    if let (Some(path), Some(m)) = (memory, memory_mount) {
        dirs.v1_memory = group_dirs(m, &path);
    }
    dirs
}

/// `cpu.max` (`"max 100000"` or `"<quota> <period>"`, microseconds): the
/// CPUs the quota amounts to, rounded up; `None` for no quota.
pub fn parse_cpu_max(text: &str) -> Option<u32> {
    let mut it = text.split_whitespace();
    let quota: f64 = it.next()?.parse().ok()?; // "max" does not parse
    let period: f64 = it.next().and_then(|p| p.parse().ok()).unwrap_or(100_000.0);
    if quota <= 0.0 || period <= 0.0 {
        return None;
    }
    Some(((quota / period).ceil() as u32).max(1))
}

/// A memory limit in bytes (`memory.max`, or v1's
/// `memory.limit_in_bytes`): `None` for `max` and for v1's
/// page-rounded "no limit" (anything from 2^62 up).
pub fn parse_memory_limit(text: &str) -> Option<u64> {
    let v: u64 = text.trim().parse().ok()?;
    (v < 1 << 62).then_some(v)
}

/// The smallest CPU quota on this process's v2 group and its ancestors.
pub fn cpu_limit(root: &Root, dirs: &CgroupDirs) -> Option<u32> {
    dirs.v2
        .iter()
        .filter_map(|d| root.read_optional(d.join("cpu.max")))
        .filter_map(|t| parse_cpu_max(&t))
        .min()
}

/// The smallest memory limit on this process's groups (v2, else v1), in
/// bytes.
pub fn memory_limit(root: &Root, dirs: &CgroupDirs) -> Option<u64> {
    let v2 = dirs
        .v2
        .iter()
        .filter_map(|d| root.read_optional(d.join("memory.max")))
        .filter_map(|t| parse_memory_limit(&t))
        .min();
    let v1 = dirs
        .v1_memory
        .iter()
        .filter_map(|d| root.read_optional(d.join("memory.limit_in_bytes")))
        .filter_map(|t| parse_memory_limit(&t))
        .min();
    match (v2, v1) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_cgroup_names_the_v2_and_memory_groups() {
        let t = "12:memory:/process_api/abc\n4:cpu,cpuacct:/\n0::/user.slice/job\n";
        assert_eq!(
            parse_proc_cgroup(t),
            (
                Some("/user.slice/job".to_string()),
                Some("/process_api/abc".to_string())
            )
        );
        assert_eq!(parse_proc_cgroup("0::/\n"), (Some("/".into()), None));
    }

    #[test]
    fn mountinfo_gives_types_and_mount_points() {
        let t = "\
30 23 0:26 / /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw,nsdelegate
41 30 0:36 /docker/1 /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory
50 23 8:1 / /mnt/with\\040space rw - ext4 /dev/sda1 rw
";
        let m = parse_mountinfo(t);
        assert_eq!(m.len(), 3);
        assert_eq!(m[0].fstype, "cgroup2");
        assert_eq!(m[0].mount_point, "/sys/fs/cgroup");
        assert_eq!(m[1].root, "/docker/1");
        assert_eq!(m[1].super_options, "rw,memory");
        assert_eq!(m[2].mount_point, "/mnt/with space");
    }

    #[test]
    fn groups_and_their_ancestors() {
        let m = Mount {
            root: "/".into(),
            mount_point: "/sys/fs/cgroup".into(),
            fstype: "cgroup2".into(),
            super_options: String::new(),
        };
        assert_eq!(
            group_dirs(&m, "/a/b"),
            [
                PathBuf::from("/sys/fs/cgroup/a/b"),
                PathBuf::from("/sys/fs/cgroup/a"),
                PathBuf::from("/sys/fs/cgroup"),
            ]
        );
        // A container that mounts its own group as the root.
        let inner = Mount {
            root: "/docker/1".into(),
            ..m
        };
        assert_eq!(
            group_dirs(&inner, "/docker/1"),
            [PathBuf::from("/sys/fs/cgroup")]
        );
    }

    #[test]
    fn cpu_quota_rounds_up_and_max_is_none() {
        assert_eq!(parse_cpu_max("max 100000\n"), None);
        assert_eq!(parse_cpu_max("200000 100000\n"), Some(2));
        assert_eq!(parse_cpu_max("150000 100000\n"), Some(2));
        assert_eq!(parse_cpu_max("50000 100000\n"), Some(1));
        assert_eq!(parse_cpu_max(""), None);
    }

    #[test]
    fn memory_limits_ignore_unlimited() {
        assert_eq!(parse_memory_limit("max\n"), None);
        assert_eq!(parse_memory_limit("9223372036854771712\n"), None);
        assert_eq!(parse_memory_limit("1073741824\n"), Some(1 << 30));
    }
}
