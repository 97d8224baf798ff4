//! Sinful strings: HTCondor's daemon addresses, `<ip:port?name=value&...>`
//! (`<[::1]:9618>` for IPv6). Parameters we read: `noUDP` (the daemon takes
//! only TCP, so a client sends even UDP commands by TCP), `sock` (a
//! shared-port endpoint name, which we do not serve), `alias` (the host's
//! name), `addrs` (more addresses). Others are kept as written.

use std::fmt;
use std::net::{IpAddr, SocketAddr};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sinful {
    pub host: String,
    pub port: u16,
    /// `name` or `name=value`, in order, values URL-decoded.
    pub params: Vec<(String, Option<String>)>,
}

impl Sinful {
    pub fn new(addr: SocketAddr) -> Sinful {
        Sinful {
            host: addr.ip().to_string(),
            port: addr.port(),
            params: Vec::new(),
        }
    }

    /// An address as HTCondor's daemons publish it: `<ip:port?...>`, or a
    /// plain `host:port` / `host` (a configured COLLECTOR_HOST; the port
    /// then defaults to `default_port`).
    pub fn parse(s: &str, default_port: u16) -> Result<Sinful, String> {
        let s = s.trim();
        let bad = |why: &str| {
            format!("{s:?} is not a daemon address ({why}); expected <ip:port> or host:port")
        };
        let (inner, bracketed) = match s.strip_prefix('<') {
            Some(rest) => (
                rest.strip_suffix('>').ok_or_else(|| bad("no closing >"))?,
                true,
            ),
            None => (s, false),
        };
        let (hostport, query) = match inner.split_once('?') {
            Some((h, q)) => (h, Some(q)),
            None => (inner, None),
        };
        let (host, port) = if let Some(rest) = hostport.strip_prefix('[') {
            let (h, after) = rest.split_once(']').ok_or_else(|| bad("no closing ]"))?;
            let port = match after.strip_prefix(':') {
                Some(p) => Some(p),
                None if after.is_empty() => None,
                None => return Err(bad("text after ]")),
            };
            (h.to_string(), port)
        } else {
            match hostport.rsplit_once(':') {
                Some((h, p)) => (h.to_string(), Some(p)),
                None => (hostport.to_string(), None),
            }
        };
        if host.is_empty() {
            return Err(bad("no host"));
        }
        // Brackets belong around an IPv6 address only: a host with a stray
        // one would print as an address that does not read back.
        if host.contains(['[', ']']) {
            return Err(bad("a [ or ] in the host"));
        }
        let port = match port {
            Some(p) => p
                .parse::<u16>()
                .map_err(|_| bad("the port is not a number from 0 to 65535"))?,
            None if bracketed => return Err(bad("no port")),
            None => default_port,
        };
        let mut params = Vec::new();
        for kv in query
            .unwrap_or("")
            .split(['&', ';'])
            .filter(|p| !p.is_empty())
        {
            match kv.split_once('=') {
                Some((k, v)) => params.push((k.to_string(), Some(url_decode(v)))),
                None => params.push((kv.to_string(), None)),
            }
        }
        Ok(Sinful { host, port, params })
    }

    pub fn param(&self, name: &str) -> Option<Option<&str>> {
        self.params
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_deref())
    }

    /// Whether the daemon takes commands by TCP only.
    pub fn no_udp(&self) -> bool {
        self.param("noUDP").is_some()
    }

    pub fn with_param(mut self, name: &str, value: Option<&str>) -> Sinful {
        self.params
            .push((name.to_string(), value.map(str::to_string)));
        self
    }

    /// The socket address, where the host is an IP address.
    pub fn socket_addr(&self) -> Option<SocketAddr> {
        self.host
            .parse::<IpAddr>()
            .ok()
            .map(|ip| SocketAddr::new(ip, self.port))
    }
}

impl fmt::Display for Sinful {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.host.contains(':') {
            write!(f, "<[{}]:{}", self.host, self.port)?;
        } else {
            write!(f, "<{}:{}", self.host, self.port)?;
        }
        for (i, (k, v)) in self.params.iter().enumerate() {
            f.write_str(if i == 0 { "?" } else { "&" })?;
            f.write_str(k)?;
            if let Some(v) = v {
                write!(f, "={}", url_encode(v))?;
            }
        }
        f.write_str(">")
    }
}

fn url_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            let hex = |c: u8| (c as char).to_digit(16);
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn url_encode(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if c.is_ascii_alphanumeric() || "-_.~:[],+".contains(c) {
            out.push(c);
        } else {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("%{b:02X}"));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn htcondor_addresses_parse_and_print_back() {
        let s = Sinful::parse(
            "<127.0.0.1:9618?addrs=127.0.0.1-9618&noUDP&sock=collector>",
            0,
        )
        .unwrap();
        assert_eq!(s.host, "127.0.0.1");
        assert_eq!(s.port, 9618);
        assert!(s.no_udp());
        assert_eq!(s.param("sock"), Some(Some("collector")));
        assert_eq!(
            s.to_string(),
            "<127.0.0.1:9618?addrs=127.0.0.1-9618&noUDP&sock=collector>"
        );
        let v6 = Sinful::parse("<[::1]:1234>", 0).unwrap();
        assert_eq!(v6.socket_addr().unwrap().to_string(), "[::1]:1234");
        assert_eq!(v6.to_string(), "<[::1]:1234>");
        assert_eq!(Sinful::parse("cm.example.org", 9618).unwrap().port, 9618);
        assert_eq!(Sinful::parse("127.0.0.1:4000", 9618).unwrap().port, 4000);
    }

    #[test]
    fn bad_addresses_say_what_is_wrong() {
        for bad in [
            "<127.0.0.1:9618",
            "<127.0.0.1>",
            "<:9618>",
            "<1.2.3.4:99999>",
            "<[::1>",
            // A stray bracket: this printed as `<[x:1]]:1234>` (fuzzing).
            "<x:1]:1234>",
            "a]:1",
            "<[a[b]:1>",
        ] {
            let e = Sinful::parse(bad, 9618).unwrap_err();
            assert!(e.contains("not a daemon address"), "{bad}: {e}");
        }
    }
}
