//! The roles' transport between processes on one machine (`ferrocondor
//! master`): each role listens on `<state>/roles/<ROLE>.sock`, in a
//! directory only the pool's user may enter, and its peers write it one
//! [`crate::local_protocol`] line per message over a connection they keep.
//! Messages from one process to one role arrive in the order sent. A role
//! that is not there (starting, restarting) loses what is sent to it
//! meanwhile, as a datagram would be lost: the roles resend what matters
//! (the startd its ads every poll, the negotiator its cycle, the schedd
//! its keep-alives).
//!
//! Touches only the pool's own state directory (the tidy test's list).

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use crate::local_protocol::{decode, encode};
use crate::roles::{Message, RoleName, Router};

/// The longest line a role accepts (a schedd's requests for a big queue
/// are the largest messages).
const MAX_LINE: u64 = 512 << 20;

/// How long a write may wait for a role that does not read.
const WRITE_TIMEOUT: Duration = Duration::from_secs(10);

/// Where `role` listens.
pub fn socket_of(dir: &Path, role: RoleName) -> PathBuf {
    dir.join(format!("{}.sock", role.daemon_name()))
}

/// The other processes' roles, reached through their sockets.
pub struct Remote {
    dir: PathBuf,
    conns: Mutex<HashMap<RoleName, UnixStream>>,
}

impl Remote {
    pub fn new(dir: &Path) -> Remote {
        Remote {
            dir: dir.to_path_buf(),
            conns: Mutex::new(HashMap::new()),
        }
    }

    /// Sends `msg` to `to`; a role that cannot be reached loses it (said
    /// in the daemon's log).
    pub fn send(&self, from: RoleName, to: RoleName, msg: &Message) {
        let mut line = match encode(from, msg) {
            Ok(l) => l,
            Err(e) => {
                eprintln!("ferrocondor: a message for the {to:?} cannot travel: {e}");
                return;
            }
        };
        line.push('\n');
        let mut conns = self.conns.lock().unwrap_or_else(|p| p.into_inner());
        // A kept connection may be to a role that has since restarted:
        // one more try on a new one.
        for _ in 0..2 {
            if let std::collections::hash_map::Entry::Vacant(e) = conns.entry(to) {
                match UnixStream::connect(socket_of(&self.dir, to)) {
                    Ok(s) => {
                        let _ = s.set_write_timeout(Some(WRITE_TIMEOUT));
                        e.insert(s);
                    }
                    Err(err) => {
                        eprintln!(
                            "ferrocondor: the {} is not reachable ({err}); a message is lost",
                            to.daemon_name().to_lowercase()
                        );
                        return;
                    }
                }
            }
            let s = conns.get_mut(&to).expect("inserted above");
            if s.write_all(line.as_bytes()).is_ok() {
                return;
            }
            conns.remove(&to);
        }
        eprintln!(
            "ferrocondor: the {} did not take a message; it is lost",
            to.daemon_name().to_lowercase()
        );
    }
}

/// Listens for `role`'s messages on its socket under `dir` and hands each
/// to `router` (the role's inbox). Only the pool's own user may connect.
pub fn listen(dir: &Path, role: RoleName, router: Router) -> std::io::Result<()> {
    crate::statedir::private_dir(dir)?;
    let path = socket_of(dir, role);
    match std::fs::remove_file(&path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let listener = UnixListener::bind(&path)?;
    std::thread::Builder::new()
        .name(format!("{}-in", role.daemon_name().to_lowercase()))
        .spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else { continue };
                if !same_user(&conn) {
                    continue;
                }
                let router = router.clone();
                let _ = std::thread::Builder::new()
                    .name(format!("{}-peer", role.daemon_name().to_lowercase()))
                    .spawn(move || read_lines(conn, role, &router));
            }
        })?;
    Ok(())
}

fn read_lines(conn: UnixStream, role: RoleName, router: &Router) {
    let mut reader = BufReader::new(conn);
    loop {
        let mut line = String::new();
        match (&mut reader).take(MAX_LINE).read_line(&mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) if !line.ends_with('\n') => {
                eprintln!(
                    "ferrocondor: {}: a message over {MAX_LINE} bytes; the connection is closed",
                    role.daemon_name().to_lowercase()
                );
                return;
            }
            Ok(_) => {}
        }
        match decode(line.trim_end()) {
            Ok((from, msg)) => router.deliver(from, role, msg),
            Err(e) => eprintln!(
                "ferrocondor: {}: a message was dropped: {e}",
                role.daemon_name().to_lowercase()
            ),
        }
    }
}

/// Whether the peer runs as this process's user (the socket's directory
/// keeps others out already; this is the second lock).
fn same_user(conn: &UnixStream) -> bool {
    use std::os::fd::AsRawFd;
    let mut cred = libc::ucred {
        pid: 0,
        uid: u32::MAX,
        gid: u32::MAX,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: cred and len are valid for the call.
    let ok = unsafe {
        libc::getsockopt(
            conn.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    } == 0;
    // SAFETY: geteuid cannot fail.
    ok && cred.uid == unsafe { libc::geteuid() }
}
