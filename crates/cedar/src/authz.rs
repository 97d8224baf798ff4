//! Authorization as HTCondor's daemons decide it: for each level
//! (READ, WRITE, ADMINISTRATOR, ...), `ALLOW_<LEVEL>` and `DENY_<LEVEL>`
//! lists of `user@domain/host` patterns.
//!
//! - An entry with a `/` is `user/host`; without one, an entry with an `@`
//!   is a user (any host), anything else a host (any user).
//! - `*` matches anything within its part; a user pattern without an `@`
//!   matches that user in any domain; a host is an IP address, a network
//!   (`10.0.0.0/24` written `10.0.0.*` or with a netmask), or a host name
//!   pattern.
//! - A peer is allowed a level when some ALLOW list of the level, or of a
//!   level that implies it (ADMINISTRATOR and DAEMON imply WRITE, every
//!   level implies READ), matches it, and no DENY list of the level does.
//!   A level whose lists are all unset falls back to the daemon's default.
//!
//! Pure: the caller gives the lists and the peer.

use std::net::IpAddr;

use crate::server::Level;

/// One `ALLOW`/`DENY` entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    user: String,
    host: String,
}

impl Entry {
    pub fn parse(text: &str) -> Entry {
        let text = text.trim();
        let (user, host) = match text.split_once('/') {
            // `user/host`, but `10.0.0.0/24` is a host with a netmask.
            Some((u, h)) if !looks_like_ip(u) => (u.to_string(), h.to_string()),
            _ if text.contains('@') => (text.to_string(), "*".into()),
            _ => ("*".into(), text.to_string()),
        };
        Entry { user, host }
    }

    pub fn matches(&self, user: Option<&str>, ip: IpAddr, host_names: &[String]) -> bool {
        user_matches(&self.user, user) && host_matches(&self.host, ip, host_names)
    }
}

fn looks_like_ip(s: &str) -> bool {
    s.chars().any(|c| c.is_ascii_digit())
        && s.chars()
            .all(|c| c.is_ascii_digit() || c == '.' || c == '*')
}

/// HTCondor's name for a peer that did not authenticate.
pub const UNAUTHENTICATED: &str = "unauthenticated@unmapped";

fn user_matches(pattern: &str, user: Option<&str>) -> bool {
    let user = user.unwrap_or(UNAUTHENTICATED);
    if pattern == "*" || pattern == "*@*" {
        return true;
    }
    let (pu, pd) = pattern.split_once('@').unwrap_or((pattern, "*"));
    let (uu, ud) = user.split_once('@').unwrap_or((user, ""));
    glob(pu, uu) && glob(pd, ud)
}

fn host_matches(pattern: &str, ip: IpAddr, names: &[String]) -> bool {
    if pattern == "*" {
        return true;
    }
    if let Some((net, bits)) = pattern.split_once('/') {
        let (Ok(net), Ok(bits)) = (net.parse::<IpAddr>(), bits.parse::<u32>()) else {
            return false;
        };
        return in_network(ip, net, bits);
    }
    let ip_text = ip.to_string();
    if glob(pattern, &ip_text) {
        return true;
    }
    names
        .iter()
        .any(|n| glob(&pattern.to_ascii_lowercase(), &n.to_ascii_lowercase()))
}

fn in_network(ip: IpAddr, net: IpAddr, bits: u32) -> bool {
    match (ip, net) {
        (IpAddr::V4(a), IpAddr::V4(n)) if bits <= 32 => {
            let mask = if bits == 0 {
                0
            } else {
                u32::MAX << (32 - bits)
            };
            u32::from(a) & mask == u32::from(n) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(n)) if bits <= 128 => {
            let mask = if bits == 0 {
                0
            } else {
                u128::MAX << (128 - bits)
            };
            u128::from(a) & mask == u128::from(n) & mask
        }
        _ => false,
    }
}

/// `*` matches any run of characters (HTCondor allows it anywhere in a
/// user or domain, and at either end of a host name).
fn glob(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    // Iterative wildcard matching with backtracking to the last star.
    let (mut pi, mut ti) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while ti < t.len() {
        if pi < p.len() && p[pi] != '*' && p[pi].eq_ignore_ascii_case(&t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ti;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == '*' {
        pi += 1;
    }
    pi == p.len()
}

/// The levels whose ALLOW lists also allow `level`.
fn implied_by(level: Level) -> Vec<Level> {
    use Level::*;
    let mut v = vec![level];
    match level {
        Read => v.extend([
            Write,
            Administrator,
            Daemon,
            Negotiator,
            Config,
            AdvertiseStartd,
            AdvertiseSchedd,
            AdvertiseMaster,
        ]),
        Write => v.extend([Administrator, Daemon]),
        AdvertiseStartd | AdvertiseSchedd | AdvertiseMaster => v.push(Daemon),
        _ => {}
    }
    v
}

/// The ALLOW and DENY lists of every level, as configured.
#[derive(Clone, Debug, Default)]
pub struct Authorization {
    allow: Vec<(Level, Vec<Entry>)>,
    deny: Vec<(Level, Vec<Entry>)>,
}

/// One list's text and where it came from (`ALLOW_WRITE`), for refusals.
pub struct Lists<'a> {
    pub get: &'a dyn Fn(&str) -> Option<String>,
}

fn entries(text: &str) -> Vec<Entry> {
    text.split([',', ' ', '\t'])
        .filter(|e| !e.is_empty())
        .map(Entry::parse)
        .collect()
}

impl Authorization {
    /// The lists from the configuration (`get`: a parameter's value, set
    /// and not empty). `subsystem` adds HTCondor's per-daemon lists
    /// (`ALLOW_WRITE_SCHEDD`).
    pub fn from_lookup(get: &dyn Fn(&str) -> Option<String>, subsystem: &str) -> Authorization {
        let mut a = Authorization::default();
        for &level in Level::CONFIGURED {
            for (prefix, out) in [("ALLOW", &mut a.allow), ("DENY", &mut a.deny)] {
                let mut list = Vec::new();
                let mut any = false;
                for name in [
                    format!("{prefix}_{}", level.name()),
                    format!(
                        "{prefix}_{}_{}",
                        level.name(),
                        subsystem.to_ascii_uppercase()
                    ),
                ] {
                    if let Some(v) = get(&name) {
                        any = true;
                        list.extend(entries(&v));
                    }
                }
                if any {
                    out.push((level, list));
                }
            }
        }
        a
    }

    /// Whether the configuration sets any ALLOW list that bears on `level`.
    pub fn has_allow(&self, level: Level) -> bool {
        let implied = implied_by(level);
        self.allow.iter().any(|(l, _)| implied.contains(l))
    }

    /// Allowed, refused (with the list that refused), or undecided (no
    /// ALLOW list bears on the level: the caller's default applies).
    pub fn decide(
        &self,
        level: Level,
        user: Option<&str>,
        ip: IpAddr,
        host_names: &[String],
    ) -> Option<Result<(), String>> {
        if let Some((_, list)) = self.deny.iter().find(|(l, _)| *l == level) {
            if let Some(e) = list.iter().find(|e| e.matches(user, ip, host_names)) {
                return Some(Err(format!(
                    "DENY_{} matches it ({}/{})",
                    level.name(),
                    e.user,
                    e.host
                )));
            }
        }
        if !self.has_allow(level) {
            return None;
        }
        let implied = implied_by(level);
        let allowed = self
            .allow
            .iter()
            .filter(|(l, _)| implied.contains(l))
            .any(|(_, list)| list.iter().any(|e| e.matches(user, ip, host_names)));
        Some(if allowed {
            Ok(())
        } else {
            Err(format!("no entry of ALLOW_{} matches it", level.name()))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lookup(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |n: &str| {
            pairs
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(n))
                .map(|(_, v)| v.to_string())
        }
    }

    const LOCAL: IpAddr = IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);

    #[test]
    fn the_recommended_template_s_lists() {
        let get = lookup(&[
            ("ALLOW_ADMINISTRATOR", "condor@* condor@password root@*"),
            ("ALLOW_DAEMON", "condor@* condor@password"),
            ("ALLOW_WRITE", "*"),
            ("ALLOW_READ", "*"),
        ]);
        let a = Authorization::from_lookup(&get, "SCHEDD");
        assert_eq!(
            a.decide(Level::Write, Some("alice@vm"), LOCAL, &[]),
            Some(Ok(()))
        );
        assert_eq!(
            a.decide(Level::Administrator, Some("root@vm"), LOCAL, &[]),
            Some(Ok(()))
        );
        let e = a
            .decide(Level::Administrator, Some("alice@vm"), LOCAL, &[])
            .unwrap()
            .unwrap_err();
        assert_eq!(e, "no entry of ALLOW_ADMINISTRATOR matches it");
        // DAEMON implies WRITE and READ; a daemon user may write.
        assert_eq!(
            a.decide(Level::Daemon, Some("condor@vm"), LOCAL, &[]),
            Some(Ok(()))
        );
        // Nothing says NEGOTIATOR: the caller's default decides.
        assert_eq!(
            a.decide(Level::Negotiator, Some("condor@vm"), LOCAL, &[]),
            None
        );
    }

    #[test]
    fn users_hosts_networks_and_deny() {
        let get = lookup(&[
            (
                "ALLOW_WRITE",
                "alice@vm/10.0.0.*, bob/*, */192.168.1.0/24 *.example.org",
            ),
            ("DENY_WRITE", "mallory@*"),
        ]);
        let a = Authorization::from_lookup(&get, "SCHEDD");
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        assert!(a
            .decide(Level::Write, Some("alice@vm"), ip("10.0.0.7"), &[])
            .unwrap()
            .is_ok());
        assert!(a
            .decide(Level::Write, Some("alice@vm"), ip("10.0.1.7"), &[])
            .unwrap()
            .is_err());
        assert!(a
            .decide(Level::Write, Some("bob@anywhere"), LOCAL, &[])
            .unwrap()
            .is_ok());
        assert!(a
            .decide(Level::Write, Some("carol@x"), ip("192.168.1.40"), &[])
            .unwrap()
            .is_ok());
        assert!(a
            .decide(
                Level::Write,
                Some("carol@x"),
                ip("172.16.0.1"),
                &["node1.example.org".into()]
            )
            .unwrap()
            .is_ok());
        let e = a
            .decide(Level::Write, Some("mallory@evil"), ip("10.0.0.7"), &[])
            .unwrap()
            .unwrap_err();
        assert!(e.starts_with("DENY_WRITE matches it"), "{e}");
        // An unauthenticated peer is unauthenticated@unmapped.
        assert!(a.decide(Level::Write, None, LOCAL, &[]).unwrap().is_err());
    }

    #[test]
    fn wildcards() {
        assert!(glob("*", ""));
        assert!(glob("a*c", "abbbc"));
        assert!(!glob("a*c", "abbbd"));
        assert!(glob("*.example.org", "x.EXAMPLE.org"));
        assert!(glob("condor*", "condor_pool"));
    }
}
