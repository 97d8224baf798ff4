//! The roles' transport between processes (`ferrocondor master`, and the
//! daemons of a pool of many hosts): HTCondor's wire protocol. Each
//! process serves its roles on its command port; a role's messages for a
//! role of another process go there as ferrocondor's own command
//! [`cedar::commands::FC_ROLE_MESSAGES`], at the DAEMON level (authenticated
//! as HTCondor authenticates daemons to each other: FS on one host, a token
//! of the pool's across hosts; by default only the pool's own user and
//! root hold DAEMON), encrypted when the session is.
//!
//! One connection per destination role, kept: after the handshake every
//! CEDAR message on it is one role message: the destination role's name,
//! the sender's command port (where answers go), and the message as a
//! [`crate::local_protocol`] line. Messages from one process to one role
//! arrive in the order sent. A role that cannot be reached (starting,
//! restarting, its host gone) loses what is sent to it meanwhile, as a
//! datagram would be lost: the roles resend what matters (the startd its
//! ads every poll, the negotiator its cycle and its ad, the schedd its
//! keep-alives).
//!
//! Where a role is: where its last message came from (the sender's port);
//! else, on this host, the address its process wrote in the roles
//! directory; else COLLECTOR_HOST (the collector) or the role's ad at the
//! collector (`MyAddress`).
//!
//! Touches only the roles directory of the pool's state directory and the
//! collector's address file (the tidy test's list).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use cedar::client::{ClientOptions, SessionCache};
use cedar::commands as cmd;
use cedar::{Decoder, Sinful, Sock};

use crate::local_protocol::{decode, encode};
use crate::roles::{Message, RoleName};

/// The largest role message (a schedd's requests for a big queue are the
/// largest), within what one authenticated DAEMON connection may send.
pub const MAX_MESSAGE: usize = 512 << 20;

/// Where the transport finds the other roles.
#[derive(Clone, Debug)]
pub struct Peers {
    /// How this daemon authenticates to the others (the SEC_CLIENT_*
    /// settings, tokens).
    pub client: ClientOptions,
    /// COLLECTOR_HOST, when it names a port.
    pub collector_host: Option<String>,
    /// The collector's address file (COLLECTOR_ADDRESS_FILE).
    pub collector_file: PathBuf,
    /// This host's processes write their command port's address here, one
    /// file per role (`<ROLE>.address`).
    pub roles_dir: PathBuf,
}

/// The file in which a process of this host says where `role` listens.
pub fn address_file(roles_dir: &Path, role: RoleName) -> PathBuf {
    roles_dir.join(format!("{}.address", role.daemon_name()))
}

/// Writes where this process's `roles` listen (written aside, then
/// renamed, so a reader never sees half an address).
pub fn write_addresses(roles_dir: &Path, roles: &[RoleName], address: &str) -> std::io::Result<()> {
    crate::statedir::private_dir(roles_dir)?;
    for &role in roles {
        let file = address_file(roles_dir, role);
        let tmp = file.with_extension("new");
        std::fs::write(&tmp, format!("{address}\n"))?;
        std::fs::rename(&tmp, &file)?;
    }
    Ok(())
}

/// Removes this process's address files (at shutdown).
pub fn remove_addresses(roles_dir: &Path, roles: &[RoleName]) {
    for &role in roles {
        let _ = std::fs::remove_file(address_file(roles_dir, role));
    }
}

/// One role message as it travels: to whom, where the sender listens, and
/// the message.
pub fn put_message(e: &mut cedar::Encoder, to: RoleName, reply_to: &str, line: &str) {
    e.put_str(to.daemon_name()).put_str(reply_to).put_str(line);
}

/// A role message read back: (to, the sender's address, from, message).
pub fn get_message(d: &mut Decoder<'_>) -> Result<(RoleName, String, RoleName, Message), String> {
    let to = d.get_str().map_err(|e| e.to_string())?;
    let reply_to = d.get_str().map_err(|e| e.to_string())?;
    let line = d.get_str().map_err(|e| e.to_string())?;
    d.finish().map_err(|e| e.to_string())?;
    let to = crate::local_protocol::role_named(&to)
        .ok_or_else(|| format!("a message for an unknown role {to:?}"))?;
    let (from, msg) = decode(&line)?;
    Ok((to, reply_to, from, msg))
}

/// The other processes' roles, reached through their command ports.
pub struct Remote {
    peers: Peers,
    sessions: SessionCache,
    /// This process's command port, where answers come back.
    me: String,
    /// Where each role was last heard from, or found.
    addresses: Mutex<HashMap<RoleName, Sinful>>,
    /// One kept connection per destination, each behind its own lock, so
    /// that a role that does not answer holds up only the messages for it
    /// (and messages for one role still go in order).
    conns: Mutex<HashMap<RoleName, Arc<Mutex<Option<Sock>>>>>,
}

impl Remote {
    pub fn new(peers: Peers, me: &str) -> Remote {
        Remote {
            peers,
            sessions: SessionCache::new(),
            me: me.to_string(),
            addresses: Mutex::new(HashMap::new()),
            conns: Mutex::new(HashMap::new()),
        }
    }

    /// `role` answers at `address` (its last message came from there).
    pub fn heard_from(&self, role: RoleName, address: &str) {
        let Ok(a) = Sinful::parse(address, 0) else {
            return;
        };
        let moved = {
            let mut known = self.addresses.lock().unwrap_or_else(|p| p.into_inner());
            known.insert(role, a.clone()) != Some(a)
        };
        // A process that restarted listens elsewhere: the kept connection
        // is to the old one. (The address lock is let go first: a sender
        // holds its connection's lock while it looks the address up.)
        if moved {
            let conn = self.conn(role);
            *conn.lock().unwrap_or_else(|p| p.into_inner()) = None;
        }
    }

    /// Sends `msg` to `to`; a role that cannot be reached loses it (said
    /// in the daemon's log).
    pub fn send(&self, from: RoleName, to: RoleName, msg: &Message) {
        let line = match encode(from, msg) {
            Ok(l) => l,
            Err(e) => {
                eprintln!("ferrocondor: a message for the {to:?} cannot travel: {e}");
                return;
            }
        };
        let conn = self.conn(to);
        let mut conn = conn.lock().unwrap_or_else(|p| p.into_inner());
        // A kept connection may be to a process that has since gone: one
        // more try on a new one, the address looked for again.
        let mut why = String::new();
        for attempt in 0..2 {
            if conn.is_none() {
                match self.connect(to, attempt > 0) {
                    Ok(s) => *conn = Some(s),
                    Err(e) => {
                        why = e;
                        continue;
                    }
                }
            }
            let s = conn.as_mut().expect("made above");
            let mut e = s.encoder();
            put_message(&mut e, to, &self.me, &line);
            match s.send(&e) {
                Ok(()) => return,
                Err(e) => {
                    why = e.to_string();
                    *conn = None;
                }
            }
        }
        eprintln!(
            "ferrocondor: the {} is not reachable ({why}); a message is lost",
            to.daemon_name().to_lowercase()
        );
    }

    /// The place of the kept connection to `to`.
    fn conn(&self, to: RoleName) -> Arc<Mutex<Option<Sock>>> {
        self.conns
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(to)
            .or_default()
            .clone()
    }

    /// A new connection to `to`'s process, its handshake done.
    fn connect(&self, to: RoleName, look_again: bool) -> Result<Sock, String> {
        let addr = self.address_of(to, look_again)?;
        let (sock, _) = cedar::client::connect(
            &addr,
            cmd::FC_ROLE_MESSAGES,
            &self.peers.client,
            Some(&self.sessions),
        )
        .map_err(|e| {
            // Looked for again at the next message.
            self.addresses
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(&to);
            format!("{addr}: {e}")
        })?;
        Ok(sock)
    }

    /// Where `role` listens: as last heard, else found.
    fn address_of(&self, role: RoleName, look_again: bool) -> Result<Sinful, String> {
        if !look_again {
            if let Some(a) = self
                .addresses
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get(&role)
            {
                return Ok(a.clone());
            }
        }
        let found = self.find(role)?;
        self.addresses
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(role, found.clone());
        Ok(found)
    }

    fn find(&self, role: RoleName) -> Result<Sinful, String> {
        // A process of this host says where it listens.
        if let Some(a) = read_address(&address_file(&self.peers.roles_dir, role)) {
            return Ok(a);
        }
        let collector = self.collector()?;
        if role == RoleName::Collector {
            return Ok(collector);
        }
        let command = match role {
            RoleName::Negotiator => cmd::QUERY_NEGOTIATOR_ADS,
            RoleName::Schedd => cmd::QUERY_SCHEDD_ADS,
            _ => cmd::QUERY_STARTD_ADS,
        };
        let ads = query_addresses(&collector, command, &self.peers.client, &self.sessions)?;
        ads.into_iter()
            .next()
            .ok_or_else(|| format!("the collector at {collector} knows no {role:?}"))
    }

    fn collector(&self) -> Result<Sinful, String> {
        if let Some(h) = &self.peers.collector_host {
            let first = h.split([',', ' ']).find(|s| !s.is_empty()).unwrap_or("");
            if let Ok(a) = Sinful::parse(first, 0) {
                if a.port != 0 {
                    return Ok(a);
                }
            }
        }
        read_address(&self.peers.collector_file).ok_or_else(|| {
            format!(
                "no collector: COLLECTOR_HOST names no port and {} has no address",
                self.peers.collector_file.display()
            )
        })
    }
}

/// The first line of an address file, when it is an address.
fn read_address(file: &Path) -> Option<Sinful> {
    let text = std::fs::read_to_string(file).ok()?;
    let line = text.lines().next()?.trim();
    Sinful::parse(line, 0).ok().filter(|a| a.port != 0)
}

/// The `MyAddress` of each ad a collector query gives.
fn query_addresses(
    collector: &Sinful,
    command: i32,
    client: &ClientOptions,
    sessions: &SessionCache,
) -> Result<Vec<Sinful>, String> {
    let fail = |e: &dyn std::fmt::Display| format!("asking the collector at {collector}: {e}");
    let (mut sock, _) =
        cedar::client::connect(collector, command, client, Some(sessions)).map_err(|e| fail(&e))?;
    let mut q = classad::ClassAd::new();
    q.insert_value("MyType", "Query");
    q.insert_value("Requirements", true);
    q.insert_value("Projection", "MyAddress");
    let mut e = sock.encoder();
    cedar::put_ad(&mut e, &q, &cedar::PutOptions::default());
    sock.send(&e).map_err(|e| fail(&e))?;
    let mut found = Vec::new();
    loop {
        let msg = sock.recv().map_err(|e| fail(&e))?;
        let mut d = sock.decoder(&msg);
        while d.remaining() != 0 {
            if d.get_int().map_err(|e| fail(&e))? == 0 {
                sock.close();
                return Ok(found);
            }
            let ad = cedar::get_ad(&mut d).map_err(|e| fail(&e))?;
            if let Some(a) =
                cedar::ad::string_attr(&ad, "MyAddress").and_then(|t| Sinful::parse(&t, 0).ok())
            {
                found.push(a);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_role_message_travels_with_whom_it_is_for_and_where_answers_go() {
        let msg = Message::Negotiate { cycle: 7 };
        let line = encode(RoleName::Negotiator, &msg).unwrap();
        let mut e = cedar::Encoder::new();
        put_message(&mut e, RoleName::Schedd, "<127.0.0.1:4242?noUDP>", &line);
        let mut d = Decoder::new(e.as_bytes());
        let (to, reply_to, from, back) = get_message(&mut d).unwrap();
        assert_eq!(
            (to, reply_to.as_str(), from),
            (
                RoleName::Schedd,
                "<127.0.0.1:4242?noUDP>",
                RoleName::Negotiator
            )
        );
        assert!(matches!(back, Message::Negotiate { cycle: 7 }));
        // A message for a role that is none is refused with its name.
        let mut e = cedar::Encoder::new();
        e.put_str("BOGUS").put_str("x").put_str(&line);
        let err = get_message(&mut Decoder::new(e.as_bytes())).err().unwrap();
        assert!(err.contains("BOGUS"), "{err}");
    }

    #[test]
    fn addresses_are_written_aside_and_read_back() {
        let dir = std::env::temp_dir().join(format!("fc-role-addr-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        write_addresses(&dir, &[RoleName::Startd], "<127.0.0.1:5151?noUDP>").unwrap();
        let a = read_address(&address_file(&dir, RoleName::Startd)).unwrap();
        assert_eq!(a.port, 5151);
        assert!(read_address(&address_file(&dir, RoleName::Schedd)).is_none());
        remove_addresses(&dir, &[RoleName::Startd]);
        assert!(read_address(&address_file(&dir, RoleName::Startd)).is_none());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
