//! Security sessions made without a handshake (HTCondor's
//! "non-negotiated" sessions, `SecMan::CreateNonNegotiatedSecuritySession`).
//!
//! One daemon makes a session's id and key and gives both, as one string
//! (a *capability*), to a third party it already trusts (the central
//! manager's collector and negotiator, over an authenticated and
//! encrypted connection); the third party hands it on to the daemon
//! that will use it. Both ends register the session
//! ([`crate::server::Sessions::register`]) and either may then resume
//! it as a client ([`crate::client::resume_session`]), without either
//! holding the pool's signing key: the key is the proof. This is how a
//! startd's claim id carries the claim's session and how a schedd lets
//! the negotiator in.
//!
//! A capability reads as HTCondor's claim ids do
//! (`condor_claimid_parser.h`): the session's id (the public part, up to
//! the last `#`), then `#`, the session's policy in brackets, and the key
//! (here 64 hexadecimal digits: 32 bytes from the operating system's
//! random source, the AES-256-GCM key of every connection that resumes
//! the session). The public part is what logs may show.

use crate::crypto::SessionKey;

/// A session's id, policy and key.
#[derive(Clone, PartialEq, Eq)]
pub struct Capability {
    id: String,
    info: String,
    key: [u8; 32],
}

impl std::fmt::Debug for Capability {
    /// The public part only: the key never reaches a log.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Capability({}#...)", self.id)
    }
}

fn random<const N: usize>() -> [u8; N] {
    let mut r = [0u8; N];
    getrandom::fill(&mut r).expect("the system's random source");
    r
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl Capability {
    /// A new session: its id is `prefix` (who made it, for people reading
    /// logs: HTCondor puts the daemon's address and birthday there) and
    /// 64 random bits, its key 256 random bits; `commands` are the
    /// commands it may be resumed for.
    pub fn mint(prefix: &str, commands: &[i32]) -> Capability {
        let list = commands
            .iter()
            .map(i32::to_string)
            .collect::<Vec<_>>()
            .join(",");
        Capability {
            id: format!("{prefix}#{}", hex(&random::<8>())),
            info: format!("[Encryption=\"YES\";Integrity=\"YES\";ValidCommands=\"{list}\"]"),
            key: random::<32>(),
        }
    }

    /// Reads a capability back; `None` for anything that is not one (no
    /// `#`, a key that is not 64 hexadecimal digits).
    pub fn parse(text: &str) -> Option<Capability> {
        let text = text.trim();
        let (id, private) = text.rsplit_once('#')?;
        if id.is_empty() {
            return None;
        }
        let (info, key) = match private.strip_prefix('[') {
            Some(rest) => {
                let (inside, key) = rest.rsplit_once(']')?;
                (format!("[{inside}]"), key)
            }
            None => (String::new(), private),
        };
        if key.len() != 64 || !key.is_ascii() {
            return None;
        }
        let mut bytes = [0u8; 32];
        for (i, b) in bytes.iter_mut().enumerate() {
            *b = u8::from_str_radix(&key[2 * i..2 * i + 2], 16).ok()?;
        }
        Some(Capability {
            id: id.to_string(),
            info,
            key: bytes,
        })
    }

    /// The session's id (the public part).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// What logs may show: the public part and `#...`.
    pub fn public(&self) -> String {
        format!("{}#...", self.id)
    }

    /// The commands the session's policy names (`ValidCommands`).
    pub fn commands(&self) -> Vec<i32> {
        let Some(start) = self.info.find("ValidCommands=\"") else {
            return Vec::new();
        };
        let rest = &self.info[start + "ValidCommands=\"".len()..];
        rest.split('"')
            .next()
            .unwrap_or("")
            .split(',')
            .filter_map(|c| c.trim().parse().ok())
            .collect()
    }

    /// The key every connection in the session is encrypted with.
    pub fn key(&self) -> SessionKey {
        SessionKey(self.key)
    }
}

impl std::fmt::Display for Capability {
    /// The whole capability, key included: only for the parties of the
    /// session, on encrypted connections.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}#{}{}", self.id, self.info, hex(&self.key))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_capability_reads_back_as_it_was_written_and_logs_show_no_key() {
        let c = Capability::mint("<10.0.0.1:9618>#1700000000", &[95000, 95001]);
        let text = c.to_string();
        assert_eq!(Capability::parse(&text), Some(c.clone()));
        assert!(text.starts_with("<10.0.0.1:9618>#1700000000#"));
        assert_eq!(c.commands(), vec![95000, 95001]);
        assert!(!format!("{c:?}").contains(&hex(&c.key)));
        assert!(c.public().ends_with("#..."));
        // Two sessions never share an id or a key.
        let d = Capability::mint("<10.0.0.1:9618>#1700000000", &[95000]);
        assert_ne!(c.id(), d.id());
        assert_ne!(c.key, d.key);
        // Not capabilities.
        for bad in [
            "",
            "nohash",
            "#[x]00",
            "id#[x]abc",
            &format!("id#{}", "zz".repeat(32)),
        ] {
            assert_eq!(Capability::parse(bad), None, "{bad}");
        }
    }
}
