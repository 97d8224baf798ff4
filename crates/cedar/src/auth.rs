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
//! - **TOKEN** (IDTOKENS): a JWT the pool signed; see [`crate::token`].
//!   Offered only where a signing key is readable.
//!
//! The user is `name@UID_DOMAIN` (FS, and CLAIMTOBE without a domain);
//! a token's `sub` as it is.
//!
//! The client's side of FS and CLAIMTOBE is here too ([`client`]), for
//! ferrocondor's own tools and daemons ([`crate::client`]).

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

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
            "TOKEN" => Some(Method::Token),
            "ANONYMOUS" => Some(Method::Anonymous),
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

/// Who an ANONYMOUS peer is (HTCondor's name, with no real domain).
pub const ANONYMOUS_USER: &str = "CONDOR_ANONYMOUS_USER@unmapped";

/// How methods authenticate on this daemon.
#[derive(Clone, Debug)]
pub struct Settings {
    /// UID_DOMAIN: the domain of users authenticated by FS and CLAIMTOBE.
    pub uid_domain: String,
    /// FS_LOCAL_DIR (default `/tmp`).
    pub fs_dir: PathBuf,
    /// TRUST_DOMAIN: the issuer of the tokens this pool takes, and that
    /// it tells clients choosing one. HTCondor's default is
    /// `$(UID_DOMAIN)`, so is ours.
    pub trust_domain: String,
    /// SEC_TOKEN_POOL_SIGNING_KEY_FILE, as configured (else
    /// SEC_PASSWORD_FILE, else `<password directory>/POOL`: see
    /// [`Settings::keys`]).
    pub pool_signing_key: Option<PathBuf>,
    /// SEC_PASSWORD_DIRECTORY, as configured; HTCondor's default
    /// `$(ETC)/passwords.d` is taken only where ETC is set (it would
    /// otherwise point at `/etc/condor`, which a personal pool does not
    /// own); else `<state_dir>/passwords.d`.
    pub password_dir: Option<PathBuf>,
    /// SEC_TOKEN_POOL_SIGNING_KEY_IS_PASSWORD.
    pub pool_key_is_password: bool,
    /// SEC_TOKEN_MAX_AGE: tokens issued longer ago are refused.
    pub token_max_age: Option<i64>,
    /// The pool's state directory, where the signing keys live when the
    /// configuration names no place for them ([`Settings::with_state_dir`]).
    pub state_dir: Option<PathBuf>,
}

impl Settings {
    /// The settings from the configuration (`get` looks a parameter up;
    /// `hostname` is the default UID_DOMAIN).
    pub fn from_lookup(get: &dyn Fn(&str) -> Option<String>, hostname: &str) -> Settings {
        let get = |n: &str| get(n).filter(|v| !v.trim().is_empty());
        let uid_domain = get("UID_DOMAIN").unwrap_or_else(|| hostname.to_string());
        let password_dir = get("SEC_PASSWORD_DIRECTORY")
            .map(PathBuf::from)
            .or_else(|| get("ETC").map(|e| Path::new(&e).join("passwords.d")));
        Settings {
            trust_domain: get("TRUST_DOMAIN").unwrap_or_else(|| uid_domain.clone()),
            uid_domain,
            fs_dir: PathBuf::from(get("FS_LOCAL_DIR").unwrap_or_else(|| "/tmp".into())),
            pool_signing_key: get("SEC_TOKEN_POOL_SIGNING_KEY_FILE")
                .or_else(|| get("SEC_PASSWORD_FILE"))
                .map(PathBuf::from),
            password_dir,
            pool_key_is_password: get("SEC_TOKEN_POOL_SIGNING_KEY_IS_PASSWORD")
                .is_some_and(|v| v.trim().to_ascii_lowercase().starts_with('t')),
            token_max_age: get("SEC_TOKEN_MAX_AGE").and_then(|v| v.trim().parse().ok()),
            state_dir: None,
        }
    }

    /// With the pool's state directory, the default home of the signing
    /// keys (`<state>/passwords.d`, the pool key `<state>/passwords.d/POOL`).
    pub fn with_state_dir(mut self, state: &Path) -> Settings {
        self.state_dir = Some(state.to_path_buf());
        self
    }

    /// Where the token signing keys are.
    pub fn keys(&self) -> crate::token::KeyStore {
        let dir = self
            .password_dir
            .clone()
            .or_else(|| self.state_dir.as_ref().map(|s| s.join("passwords.d")));
        crate::token::KeyStore {
            pool_key: self
                .pool_signing_key
                .clone()
                .or_else(|| dir.as_ref().map(|d| d.join(crate::token::POOL))),
            password_dir: dir,
            pool_key_is_password: self.pool_key_is_password,
        }
    }

    /// Whether this daemon can carry `method` out: TOKEN only with a
    /// signing key to check tokens with.
    pub fn can_serve(&self, method: Method) -> bool {
        match method {
            Method::Fs | Method::ClaimToBe | Method::Anonymous => true,
            Method::Token => !self.keys().names().is_empty(),
            Method::Ssl => false,
        }
    }
}

/// Who a method authenticated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Authenticated {
    /// `user@domain`.
    pub user: String,
    /// The authorization levels the credential is limited to (a token's
    /// `condor:/LEVEL` scopes), HTCondor's `LimitAuthorization`; `None`:
    /// no limit beyond the daemon's own.
    pub limits: Option<Vec<String>>,
}

impl Authenticated {
    fn user(user: String) -> Authenticated {
        Authenticated { user, limits: None }
    }
}

/// Why a method did not authenticate the client.
#[derive(Debug)]
pub enum Failure {
    Sock(SockError),
    /// The method failed, and both sides know it: the next may be tried.
    Refused(String),
    /// The method failed where the peer believes it succeeded: the
    /// connection must be closed (nothing else tells the peer).
    Fatal(String),
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

/// The name a server gives itself in TOKEN's exchange (HTCondor's 23.9+
/// servers: the client only checks that there is one).
const TOKEN_SERVER_NAME: &str = "condor@password";

/// Runs `method`'s server side; who the client is. `now`: epoch seconds,
/// for a token's expiry.
pub fn server(
    method: Method,
    sock: &mut Sock,
    settings: &Settings,
    now: i64,
) -> Result<Authenticated, Failure> {
    match method {
        Method::Fs => fs(sock, settings).map(Authenticated::user),
        Method::ClaimToBe => claim_to_be(sock, settings).map(Authenticated::user),
        Method::Anonymous => {
            // Nothing to prove: the server says yes, and the peer is
            // HTCondor's anonymous user (offered only where configured,
            // for reads).
            let mut e = sock.encoder();
            e.put_int(1);
            sock.send(&e)?;
            Ok(Authenticated::user(ANONYMOUS_USER.to_string()))
        }
        Method::Token => {
            let keys = settings.keys();
            crate::token::server(
                sock,
                &crate::token::ServerConfig {
                    keys: &keys,
                    trust_domain: &settings.trust_domain,
                    max_age: settings.token_max_age,
                    name: TOKEN_SERVER_NAME,
                    now,
                },
            )
        }
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
    // The directory must be one only root (or this daemon's user) owns,
    // and sticky if others may write it: else someone could make the
    // client's directory look like another user's. An empty name tells the
    // client the server cannot do FS.
    //
    // And the client must be on this host: FS proves only that it can make
    // a directory here, which a client on another host can do wherever
    // the two share a file system (a cluster's NFS, hosts that are
    // containers or network namespaces of one machine); that proves
    // nothing about who it is there. HTCondor leaves this to /tmp being
    // local (FS_REMOTE is the method for a shared directory); we check.
    let peer = sock.peer();
    let safe = if on_this_host(peer.ip(), local.ip()) {
        safe_rendezvous(&dir)
    } else {
        Err(format!(
            "the client ({}) is not on this host, and FS proves only a user of this host",
            peer.ip()
        ))
    };
    let name = match &safe {
        Ok(()) => format!(
            "{dir}/FS_{}_{}_{}",
            local.ip(),
            local.port(),
            random_name(12)
        ),
        Err(_) => String::new(),
    };
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
    let verdict = if let Err(why) = safe {
        Err(why)
    } else if !ext.is_empty() {
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

/// Whether a peer at `peer`, connected to this end's `local` address, is a
/// process of this host (of this network namespace): it comes from
/// loopback, from the address it reached, or from another address of one
/// of this host's interfaces.
pub fn on_this_host(peer: std::net::IpAddr, local: std::net::IpAddr) -> bool {
    let peer = peer.to_canonical();
    peer.is_loopback() || peer == local.to_canonical() || interface_addresses().contains(&peer)
}

/// The addresses of this host's interfaces (getifaddrs); none when it
/// fails, so that a peer is then taken as remote.
fn interface_addresses() -> Vec<std::net::IpAddr> {
    let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills `list`, freed below with freeifaddrs.
    if unsafe { libc::getifaddrs(&mut list) } != 0 {
        return Vec::new();
    }
    let mut found = Vec::new();
    let mut at = list;
    while !at.is_null() {
        // SAFETY: `at` is a node of the list getifaddrs returned; its
        // address, when not null, is a sockaddr of the family it names,
        // as large as that family's.
        unsafe {
            let a = (*at).ifa_addr;
            if !a.is_null() {
                match i32::from((*a).sa_family) {
                    libc::AF_INET => {
                        let v4 = &*(a as *const libc::sockaddr_in);
                        found.push(std::net::IpAddr::from(v4.sin_addr.s_addr.to_ne_bytes()));
                    }
                    libc::AF_INET6 => {
                        let v6 = &*(a as *const libc::sockaddr_in6);
                        found.push(std::net::IpAddr::from(v6.sin6_addr.s6_addr));
                    }
                    _ => {}
                }
            }
            at = (*at).ifa_next;
        }
    }
    // SAFETY: the list getifaddrs gave, freed once.
    unsafe { libc::freeifaddrs(list) };
    found
}

/// Whether FS_LOCAL_DIR is fit to meet clients in: a real directory
/// owned by root or this daemon's user, and, if others may write it, with
/// the sticky bit (as /tmp), so no one can remove or replace another's
/// directory there.
fn safe_rendezvous(dir: &str) -> Result<(), String> {
    let m = std::fs::symlink_metadata(dir).map_err(|e| format!("FS_LOCAL_DIR {dir}: {e}"))?;
    // SAFETY: geteuid cannot fail.
    let me = unsafe { libc::geteuid() };
    let mode = m.permissions().mode();
    if !m.file_type().is_dir() || (m.uid() != 0 && m.uid() != me) {
        return Err(format!(
            "FS_LOCAL_DIR {dir} is not a directory owned by root or this daemon's user"
        ));
    }
    if mode & 0o002 != 0 && mode & 0o1000 == 0 {
        return Err(format!(
            "FS_LOCAL_DIR {dir} may be written by anyone but has no sticky bit"
        ));
    }
    Ok(())
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

/// The name of the user with this uid in the user database (getpwuid_r, so NSS sources
/// such as LDAP count too).
pub fn user_name(uid: u32) -> Option<String> {
    let mut buf = vec![0u8; 4096];
    loop {
        // SAFETY: `pwd` and `buf` outlive the call; getpwuid_r writes only
        // into them and sets `result` to null or to `&pwd`.
        let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
        let mut result: *mut libc::passwd = std::ptr::null_mut();
        let rc = unsafe {
            libc::getpwuid_r(
                uid,
                &mut pwd,
                buf.as_mut_ptr().cast(),
                buf.len(),
                &mut result,
            )
        };
        if rc == libc::ERANGE && buf.len() < 1 << 20 {
            buf.resize(buf.len() * 2, 0);
            continue;
        }
        if rc != 0 || result.is_null() || pwd.pw_name.is_null() {
            return None;
        }
        // SAFETY: pw_name points into `buf`, NUL-terminated by getpwuid_r.
        let name = unsafe { std::ffi::CStr::from_ptr(pwd.pw_name) };
        return name.to_str().ok().map(str::to_string);
    }
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

/// Where the FS client makes its directory for the name `path` the
/// server gave, talking to the server at `server` (its address as this
/// side sees it): the directory and the suffix to report.
///
/// - A name ending in `_` (24.x+ servers, channel binding): add the
///   server's `ip:port` as seen from here and report it, so a name a
///   third party relayed from another server is refused there.
/// - Otherwise (older servers): the name must start with
///   `FS_<server ip>_<server port>_`, and nothing is reported.
pub fn fs_client_dir(path: &str, server: std::net::SocketAddr) -> Result<(String, String), String> {
    let base = Path::new(path)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("");
    if !base.starts_with("FS_") || path.contains("/../") || !path.starts_with('/') {
        return Err(format!(
            "the server asked for {path:?}, which is not an FS directory name"
        ));
    }
    if path.ends_with('_') {
        // IPv6 bracketed, as SocketAddr prints it.
        let ext = server.to_string();
        Ok((format!("{path}{ext}"), ext))
    } else {
        let want = format!("FS_{}_{}_", server.ip(), server.port());
        if base.starts_with(&want) {
            Ok((path.to_string(), String::new()))
        } else {
            Err(format!(
                "the server asked for {path:?}, a name meant for another server (this one is {server})"
            ))
        }
    }
}

/// The client's side of FS: make the directory the server names (mode
/// 0700, as the calling user), say so, hear the verdict, remove it.
pub fn fs_client(sock: &mut Sock) -> Result<(), Failure> {
    use std::os::unix::fs::DirBuilderExt;
    let msg = sock.recv()?;
    let mut d = sock.decoder(&msg);
    let path = d.get_str()?;
    d.finish()?;
    let made = if path.is_empty() {
        Err("the server named no directory (FS works only on the daemon's own host)".to_string())
    } else {
        fs_client_dir(&path, sock.peer()).and_then(|(dir, ext)| {
            std::fs::DirBuilder::new()
                .mode(0o700)
                .create(&dir)
                .map(|()| (dir.clone(), ext))
                .map_err(|e| format!("could not create {dir}: {e}"))
        })
    };
    let mut e = sock.encoder();
    match &made {
        Ok((_, ext)) => {
            e.put_int(0);
            if !ext.is_empty() {
                e.put_str(ext);
            }
        }
        Err(_) => {
            e.put_int(-1);
        }
    }
    let sent = sock.send(&e);
    let verdict = sent.and_then(|()| {
        let msg = sock.recv()?;
        let mut d = sock.decoder(&msg);
        let v = d.get_int()?;
        d.finish()?;
        Ok(v)
    });
    // Removed whatever the verdict: the directory is only a proof.
    if let Ok((dir, _)) = &made {
        let _ = std::fs::remove_dir(dir);
    }
    let verdict = verdict?;
    match made {
        Err(why) => Err(Failure::Refused(why)),
        Ok(_) if verdict != 0 => Err(Failure::Refused(
            "the server did not accept the directory (is it on this host?)".into(),
        )),
        Ok(_) => Ok(()),
    }
}

/// The client's side of CLAIMTOBE: say who we are (`user@domain`).
pub fn claim_to_be_client(sock: &mut Sock, name: &str) -> Result<(), Failure> {
    let mut e = sock.encoder();
    if name.is_empty() {
        e.put_int(0);
    } else {
        e.put_int(1).put_str(name);
    }
    sock.send(&e)?;
    if name.is_empty() {
        // The server fails the method without answering.
        return Err(Failure::Refused(
            "this process has no user name to claim".into(),
        ));
    }
    let msg = sock.recv()?;
    let mut d = sock.decoder(&msg);
    let ok = d.get_int()?;
    d.finish()?;
    if ok == 1 {
        Ok(())
    } else {
        Err(Failure::Refused(format!(
            "the server did not take the name {name:?}"
        )))
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fs_is_for_peers_of_this_host_only() {
        let ip = |s: &str| s.parse::<std::net::IpAddr>().unwrap();
        let local = ip("192.0.2.7");
        assert!(on_this_host(ip("127.0.0.1"), local));
        assert!(on_this_host(ip("::1"), local));
        assert!(on_this_host(ip("::ffff:127.0.0.1"), local));
        // A tool that reached the daemon at this host's own address.
        assert!(on_this_host(ip("192.0.2.7"), local));
        // Another host (TEST-NET-1 is no interface's).
        assert!(!on_this_host(ip("192.0.2.8"), local));
        assert!(interface_addresses().contains(&ip("127.0.0.1")));
    }

    #[test]
    fn fs_names_with_and_without_channel_binding() {
        let server: std::net::SocketAddr = "127.0.0.1:4000".parse().unwrap();
        let (dir, ext) = fs_client_dir("/tmp/FS_127.0.0.1_4000_abc_", server).unwrap();
        assert_eq!(dir, "/tmp/FS_127.0.0.1_4000_abc_127.0.0.1:4000");
        assert_eq!(ext, "127.0.0.1:4000");
        let v6: std::net::SocketAddr = "[::1]:4000".parse().unwrap();
        assert_eq!(fs_client_dir("/tmp/FS_x_", v6).unwrap().1, "[::1]:4000");
        let (dir, ext) = fs_client_dir("/tmp/FS_127.0.0.1_4000_abc", server).unwrap();
        assert_eq!(
            (dir.as_str(), ext.as_str()),
            ("/tmp/FS_127.0.0.1_4000_abc", "")
        );
        let e = fs_client_dir("/tmp/FS_127.0.0.1_4001_abc", server).unwrap_err();
        assert!(e.contains("another server"), "{e}");
        assert!(fs_client_dir("/home/me/.ssh", server).is_err());
        assert!(fs_client_dir("relative/FS_x_", server).is_err());
    }

    #[test]
    fn settings_default_as_htcondor() {
        let cfg = |n: &str| match n {
            "UID_DOMAIN" => Some("example.org".to_string()),
            _ => None,
        };
        let s = Settings::from_lookup(&cfg, "host1");
        assert_eq!(s.trust_domain, "example.org");
        assert!(
            s.keys().pool_key.is_none(),
            "no key place without configuration"
        );
        let s = s.with_state_dir(Path::new("/var/lib/pool"));
        assert_eq!(
            s.keys().pool_key.unwrap(),
            Path::new("/var/lib/pool/passwords.d/POOL")
        );
        let cfg = |n: &str| match n {
            "TRUST_DOMAIN" => Some("cm.example.org".to_string()),
            "SEC_PASSWORD_DIRECTORY" => Some("/etc/p".to_string()),
            _ => None,
        };
        let s = Settings::from_lookup(&cfg, "host1");
        assert_eq!(s.trust_domain, "cm.example.org");
        assert_eq!(s.uid_domain, "host1");
        assert_eq!(s.keys().pool_key.unwrap(), Path::new("/etc/p/POOL"));
    }
}
