//! Reading processes from `/proc`, signalling them, and users from the
//! password database.

use std::ffi::CString;
use std::fs;
use std::io;

/// What `/proc/<pid>/stat` says of one process.
#[derive(Clone, Debug)]
pub struct ProcStat {
    pub pid: i32,
    pub state: char,
    pub pgrp: i32,
    pub session: i32,
    /// utime + stime, clock ticks.
    pub utime: u64,
    pub stime: u64,
    /// Resident set, pages.
    pub rss_pages: u64,
    /// When it started, clock ticks after boot (with the pid, it names
    /// one process for good: a pid is handed out again, a start time not).
    pub start: u64,
}

/// What `/proc/<pid>/stat` says of process `pid`, if it exists.
pub fn stat(pid: i32) -> Option<ProcStat> {
    let text = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may hold anything.
    let rest = &text[text.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // f[0] is field 3 (state).
    let num = |i: usize| f.get(i).and_then(|s| s.parse::<i64>().ok());
    Some(ProcStat {
        pid,
        state: f.first()?.chars().next()?,
        pgrp: num(2)? as i32,
        session: num(3)? as i32,
        utime: num(11)? as u64,
        stime: num(12)? as u64,
        rss_pages: num(21)? as u64,
        start: num(19)? as u64,
    })
}

/// Every process's pid.
pub fn all_pids() -> Vec<i32> {
    let Ok(dir) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect()
}

/// The live (not zombie) processes in the process group or session that
/// `leader` made with setsid.
pub fn session_members(leader: i32) -> Vec<ProcStat> {
    // The usual end of a job: its process group is empty. The kernel says
    // so at once, where reading every process's stat costs a scan of all
    // of /proc (a member that moved to another group but stayed in the
    // session is missed then; a cgroup, where there is one, misses none).
    // SAFETY: signal 0 only checks that the group exists.
    if unsafe { libc::kill(-leader, 0) } != 0
        && io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
    {
        return Vec::new();
    }
    all_pids()
        .into_iter()
        .filter_map(stat)
        .filter(|s| (s.pgrp == leader || s.session == leader) && s.state != 'Z')
        .collect()
}

/// The live processes whose PID namespace is the one `/proc/<pid>/ns/pid`
/// names `link` (a job's namespace: every process in it, whatever session
/// it made).
pub fn pid_namespace_members(link: &std::ffi::OsStr) -> Vec<i32> {
    all_pids()
        .into_iter()
        .filter(|p| fs::read_link(format!("/proc/{p}/ns/pid")).is_ok_and(|l| l.as_os_str() == link))
        .filter(|&p| stat(p).is_some_and(|s| s.state != 'Z'))
        .collect()
}

/// The live processes that carry `gid` among their supplementary groups
/// (`Groups:` of `/proc/<pid>/status`).
pub fn group_members(gid: u32) -> Vec<i32> {
    all_pids()
        .into_iter()
        .filter(|p| {
            fs::read_to_string(format!("/proc/{p}/status")).is_ok_and(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("Groups:"))
                    .is_some_and(|g| g.split_whitespace().any(|g| g.parse() == Ok(gid)))
            })
        })
        .filter(|&p| stat(p).is_some_and(|s| s.state != 'Z'))
        .collect()
}

/// This process's supplementary groups.
pub fn own_groups() -> Vec<libc::gid_t> {
    // SAFETY: a null list with size 0 asks for the count.
    let n = unsafe { libc::getgroups(0, std::ptr::null_mut()) };
    let mut groups = vec![0 as libc::gid_t; n.max(0) as usize];
    // SAFETY: groups has room for n entries.
    let n = unsafe { libc::getgroups(groups.len() as libc::c_int, groups.as_mut_ptr()) };
    groups.truncate(n.max(0) as usize);
    groups
}

pub fn kill(pid: i32, sig: i32) -> io::Result<()> {
    // SAFETY: kill has no memory effects.
    if unsafe { libc::kill(pid, sig) } == 0 {
        Ok(())
    } else {
        let e = io::Error::last_os_error();
        // Gone already: nothing to signal.
        if e.raw_os_error() == Some(libc::ESRCH) {
            Ok(())
        } else {
            Err(e)
        }
    }
}

pub fn page_kib() -> u64 {
    // SAFETY: sysconf has no memory effects.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if page > 0 {
        page as u64 / 1024
    } else {
        4
    }
}

pub fn clock_ticks() -> f64 {
    // SAFETY: as above.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as f64
    } else {
        100.0
    }
}

/// A user to run the job as.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct User {
    pub name: String,
    pub uid: u32,
    pub gid: u32,
    pub groups: Vec<u32>,
}

/// Calls `f` with `name`'s entry in the password database (`getpwnam_r`,
/// so through the system's name services, as HTCondor's `getpwnam`).
fn with_passwd<T>(name: &str, f: impl FnOnce(&libc::passwd) -> T) -> Result<T, String> {
    let cname = CString::new(name).map_err(|_| "the name holds a NUL byte".to_string())?;
    let mut buf = vec![0u8; 16384];
    // SAFETY: an all-zero passwd is a valid value to be filled in.
    let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
    let mut result: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: every pointer is valid for the call; buf outlives pwd's use.
    let rc = unsafe {
        libc::getpwnam_r(
            cname.as_ptr(),
            &mut pwd,
            buf.as_mut_ptr().cast(),
            buf.len(),
            &mut result,
        )
    };
    if rc != 0 {
        return Err(format!(
            "looking the user up failed: {}",
            io::Error::from_raw_os_error(rc)
        ));
    }
    if result.is_null() {
        return Err("no such user in the password database".into());
    }
    Ok(f(&pwd))
}

/// `name`'s home directory from the password database, as HTCondor's
/// `userHome()` finds it; `None` for an unknown user, one without a home
/// directory, or a failed lookup (HTCondor answers all three alike).
pub fn home_dir(name: &str) -> Option<String> {
    with_passwd(name, |pwd| {
        if pwd.pw_dir.is_null() {
            return None;
        }
        // SAFETY: getpwnam_r filled pw_dir with a NUL-terminated string in buf,
        // which lives until with_passwd returns.
        let dir = unsafe { std::ffi::CStr::from_ptr(pwd.pw_dir) };
        Some(String::from_utf8_lossy(dir.to_bytes()).into_owned())
    })
    .ok()
    .flatten()
}

/// The lookup `classad::Env::user_home` takes, for `userHome()`: the
/// password database ([`home_dir`]). A caller that reads the configuration
/// gives it only when `CLASSAD_ENABLE_USER_HOME` is true (the default).
pub fn user_home_lookup() -> classad::UserHomeLookup {
    std::sync::Arc::new(home_dir)
}

/// Looks `name` up in the password and group databases.
pub fn lookup_user(name: &str) -> Result<User, String> {
    let (uid, gid) = with_passwd(name, |pwd| (pwd.pw_uid, pwd.pw_gid))?;
    let cname = CString::new(name).map_err(|_| "the name holds a NUL byte".to_string())?;
    let mut groups = vec![0 as libc::gid_t; 256];
    let mut n = groups.len() as libc::c_int;
    // SAFETY: groups has room for n entries; getgrouplist writes at most n.
    let rc = unsafe { libc::getgrouplist(cname.as_ptr(), gid, groups.as_mut_ptr(), &mut n) };
    if rc < 0 {
        groups = vec![gid];
    } else {
        groups.truncate(n.max(0) as usize);
    }
    Ok(User {
        name: name.to_string(),
        uid,
        gid,
        groups,
    })
}

pub fn effective_uid() -> u32 {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() }
}

pub fn cstring(bytes: &[u8]) -> io::Result<CString> {
    CString::new(bytes).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in a path"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The home directories HTCondor's userHome() would find: root's as
    /// /etc/passwd has it, nothing for users that are not there.
    #[test]
    fn home_dirs_come_from_the_password_database() {
        let passwd = std::fs::read_to_string("/etc/passwd").unwrap();
        let root_home = passwd
            .lines()
            .find_map(|l| l.strip_prefix("root:"))
            .and_then(|rest| rest.split(':').nth(4))
            .unwrap();
        assert_eq!(home_dir("root").as_deref(), Some(root_home));
        assert_eq!(home_dir("no_such_user_fc17"), None);
        assert_eq!(home_dir(""), None);
        assert_eq!(home_dir("ro\0ot"), None);
        let lookup = user_home_lookup();
        assert_eq!(lookup("root").as_deref(), Some(root_home));
    }
}
