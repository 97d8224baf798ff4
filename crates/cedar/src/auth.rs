//! Authentication methods, the server's side of each exchange.
//!
//! - **FS** (same host): the server names a directory to create in a
//!   world-writable directory (`/tmp`); the client creates it with mode
//!   0700; the server `lstat`s it: a real directory (not a link), one or
//!   two links, mode 0700, and its owner is who the client is. The name
//!   starts with `FS_<server ip>_<server port>_`, which 24.x+ clients check
//!   (channel binding: a name meant for another server is refused), and
//!   the server takes the clients that add their view of its address
//!   (those that get a name ending in `_`) and those that do not.
//! - **CLAIMTOBE**: the client says who it is. Taken only where the
//!   configuration names the method, as HTCondor.
//!
//! The user is `name@UID_DOMAIN` (FS, and CLAIMTOBE without a domain).

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::PathBuf;

use crate::sock::{Sock, SockError};

/// A method, with HTCondor's bit for the negotiation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    ClaimToBe,
    Fs,
    Anonymous,
    Ssl,
    Token,
}

impl Method {
    pub fn bit(self) -> i64 {
        match self {
            Method::ClaimToBe => 2,
            Method::Fs => 4,
            Method::Anonymous => 128,
            Method::Ssl => 256,
            Method::Token => 2048,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Method::ClaimToBe => "CLAIMTOBE",
            Method::Fs => "FS",
            Method::Anonymous => "ANONYMOUS",
            Method::Ssl => "SSL",
            Method::Token => "TOKEN",
        }
    }

    /// The methods this daemon can carry out (the others are only named
    /// so a refusal can list what a client offered).
    pub fn from_name(name: &str) -> Option<Method> {
        match crate::policy::canonical_method(name).as_str() {
            "CLAIMTOBE" => Some(Method::ClaimToBe),
            "FS" => Some(Method::Fs),
            _ => None,
        }
    }

    /// HTCondor's names of the bits set in `mask`.
    pub fn names_in(mask: i64) -> Vec<&'static str> {
        const ALL: [(i64, &str); 12] = [
            (2, "CLAIMTOBE"),
            (4, "FS"),
            (8, "FS_REMOTE"),
            (16, "NTSSPI"),
            (32, "GSI"),
            (64, "KERBEROS"),
            (128, "ANONYMOUS"),
            (256, "SSL"),
            (512, "PASSWORD"),
            (1024, "MUNGE"),
            (2048, "TOKEN"),
            (4096, "SCITOKENS"),
        ];
        ALL.iter()
            .filter(|(b, _)| mask & b != 0)
            .map(|(_, n)| *n)
            .collect()
    }
}

/// How methods authenticate on this daemon.
#[derive(Clone, Debug)]
pub struct Settings {
    /// UID_DOMAIN: the domain of users authenticated by FS and CLAIMTOBE.
    pub uid_domain: String,
    /// FS_LOCAL_DIR (default `/tmp`).
    pub fs_dir: PathBuf,
}

impl Settings {
    /// The settings from the configuration (`get` looks a parameter up;
    /// `hostname` is the default UID_DOMAIN).
    pub fn from_lookup(get: &dyn Fn(&str) -> Option<String>, hostname: &str) -> Settings {
        Settings {
            uid_domain: get("UID_DOMAIN").unwrap_or_else(|| hostname.to_string()),
            fs_dir: PathBuf::from(get("FS_LOCAL_DIR").unwrap_or_else(|| "/tmp".into())),
        }
    }
}

/// Why a method did not authenticate the client.
#[derive(Debug)]
pub enum Failure {
    Sock(SockError),
    Refused(String),
}

impl From<SockError> for Failure {
    fn from(e: SockError) -> Self {
        Failure::Sock(e)
    }
}

impl From<crate::DecodeError> for Failure {
    fn from(e: crate::DecodeError) -> Self {
        Failure::Sock(SockError::Decode(e))
    }
}

/// Runs `method`'s server side; the authenticated `user@domain`.
pub fn server(method: Method, sock: &mut Sock, settings: &Settings) -> Result<String, Failure> {
    match method {
        Method::Fs => fs(sock, settings),
        Method::ClaimToBe => claim_to_be(sock, settings),
        other => Err(Failure::Refused(format!(
            "{} is not carried out here",
            other.name()
        ))),
    }
}

fn fs(sock: &mut Sock, settings: &Settings) -> Result<String, Failure> {
    let local = sock
        .local()
        .map_err(|e| Failure::Refused(format!("this end's address: {e}")))?;
    let dir = settings
        .fs_dir
        .to_string_lossy()
        .trim_end_matches('/')
        .to_string();
    let dir = if dir.is_empty() {
        "/tmp".to_string()
    } else {
        dir
    };
    let name = format!(
        "{dir}/FS_{}_{}_{}",
        local.ip(),
        local.port(),
        random_name(12)
    );
    let mut e = sock.encoder();
    e.put_str(&name);
    sock.send(&e)?;
    let msg = sock.recv()?;
    let mut d = sock.decoder(&msg);
    let client_result = d.get_int()?;
    // Clients that were given a name ending in `_` add their view of our
    // address; we give none such, but take the string if it comes.
    let ext = if d.remaining() > 0 {
        d.get_str()?
    } else {
        String::new()
    };
    d.finish()?;
    let verdict = if !ext.is_empty() {
        Err("the client added to a directory name that needs nothing added".to_string())
    } else if client_result == -1 {
        Err(format!("the client could not create {name}"))
    } else {
        check_fs_dir(&name)
    };
    let mut e = sock.encoder();
    e.put_int(if verdict.is_ok() { 0 } else { -1 });
    sock.send(&e)?;
    let user = verdict.map_err(Failure::Refused)?;
    Ok(format!("{user}@{}", settings.uid_domain))
}

/// The owner of the directory the client made, if it is one it made: a
/// directory (not a link to one), mode 0700, one or two links.
fn check_fs_dir(name: &str) -> Result<String, String> {
    let m = std::fs::symlink_metadata(name).map_err(|e| format!("lstat({name}): {e}"))?;
    let ok = m.file_type().is_dir()
        && (m.nlink() == 1 || m.nlink() == 2)
        && m.permissions().mode() & 0o7777 == 0o700;
    if !ok {
        return Err(format!("{name} is not a directory of mode 0700"));
    }
    user_name(m.uid()).ok_or_else(|| format!("uid {} has no user name", m.uid()))
}

/// The name of the user with this uid.
pub fn user_name(uid: u32) -> Option<String> {
    let mut buf = vec![0u8; 16384];
    let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
    let mut result: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: getpwuid_r writes into `pwd` and `buf` (whose sizes we pass)
    // and sets `result` to `&pwd` or null; `pw_name` then points into `buf`.
    let rc = unsafe {
        libc::getpwuid_r(
            uid,
            &mut pwd,
            buf.as_mut_ptr().cast(),
            buf.len(),
            &mut result,
        )
    };
    if rc != 0 || result.is_null() || pwd.pw_name.is_null() {
        return None;
    }
    // SAFETY: pw_name is a NUL-terminated string inside `buf`.
    let name = unsafe { std::ffi::CStr::from_ptr(pwd.pw_name) };
    Some(name.to_string_lossy().into_owned())
}

fn claim_to_be(sock: &mut Sock, settings: &Settings) -> Result<String, Failure> {
    let msg = sock.recv()?;
    let mut d = sock.decoder(&msg);
    let ok = d.get_int()?;
    if ok != 1 {
        d.finish()?;
        return Err(Failure::Refused("the client did not say who it is".into()));
    }
    let claimed = d.get_str()?;
    d.finish()?;
    let mut e = sock.encoder();
    let valid = !claimed.is_empty() && !claimed.contains(['/', ' ', '\n']);
    e.put_int(valid as i64);
    sock.send(&e)?;
    if !valid {
        return Err(Failure::Refused(format!("{claimed:?} is not a user name")));
    }
    Ok(if claimed.contains('@') {
        claimed
    } else {
        format!("{claimed}@{}", settings.uid_domain)
    })
}

/// Random letters for names no one can guess.
pub fn random_name(len: usize) -> String {
    const CHARS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut bytes = vec![0u8; len];
    getrandom::fill(&mut bytes).expect("the system's random source");
    bytes
        .iter()
        .map(|b| CHARS[*b as usize % CHARS.len()] as char)
        .collect()
}

/// A resumption's nonce: 33 random bytes, base64.
pub fn nonce() -> String {
    use base64::Engine;
    let mut bytes = [0u8; 33];
    getrandom::fill(&mut bytes).expect("the system's random source");
    base64::engine::general_purpose::STANDARD.encode(bytes)
}
