//! Which local user a TCP peer on this host is: the owner of the peer's
//! socket, as the kernel lists it in `/proc/net/tcp` and `/proc/net/tcp6`
//! (what an identd answers). The command port uses it only to share out
//! its connections fairly (one local user cannot take the places of
//! every other local user's tools, which all come from the loopback
//! address); who a peer *is* for authorization still comes from the
//! handshake alone.
//!
//! Reads only those two kernel tables; never a user's path.

use std::net::{IpAddr, SocketAddr};

/// The uid owning the socket at `peer` connected to `local`, when both are
/// on this host and the kernel lists it; `None` otherwise (a remote peer,
/// a socket already gone, no /proc).
pub fn owner(peer: SocketAddr, local: SocketAddr) -> Option<u32> {
    let table = match peer.ip() {
        IpAddr::V4(_) => "/proc/net/tcp",
        IpAddr::V6(_) => "/proc/net/tcp6",
    };
    let text = std::fs::read_to_string(table).ok()?;
    owner_in(&text, peer, local)
}

/// [`owner`] over a table's text: the uid column of the line whose local
/// end is `peer` and whose remote end is `local` (the peer's own socket,
/// seen from its side).
pub fn owner_in(table: &str, peer: SocketAddr, local: SocketAddr) -> Option<u32> {
    let (want_local, want_remote) = (encode(peer), encode(local));
    table.lines().skip(1).find_map(|line| {
        // sl local_address rem_address st tx:rx tr:when retrnsmt uid ...
        let f: Vec<&str> = line.split_whitespace().collect();
        let (l, r, uid) = (f.get(1)?, f.get(2)?, f.get(7)?);
        (l.eq_ignore_ascii_case(&want_local) && r.eq_ignore_ascii_case(&want_remote))
            .then(|| uid.parse().ok())?
    })
}

/// An address as the kernel's tables write it: the address as 32-bit
/// words in the host's byte order, each in hex, then `:` and the port in
/// hex.
fn encode(a: SocketAddr) -> String {
    let words: Vec<u32> = match a.ip() {
        IpAddr::V4(v4) => vec![u32::from_ne_bytes(v4.octets())],
        IpAddr::V6(v6) => v6
            .octets()
            .chunks(4)
            .map(|c| u32::from_ne_bytes([c[0], c[1], c[2], c[3]]))
            .collect(),
    };
    let mut s: String = words.iter().map(|w| format!("{w:08X}")).collect();
    s.push_str(&format!(":{:04X}", a.port()));
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{TcpListener, TcpStream};

    #[test]
    fn the_peer_s_line_gives_its_uid() {
        // Two ends of one loopback connection (127.0.0.1:9618 serving,
        // 127.0.0.1:40000 the client), as a little-endian kernel lists
        // them; the client's end belongs to uid 1001.
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
           0: 0100007F:2592 0100007F:9C40 01 00000000:00000000 00:00000000 00000000     0        0 1 1 0 20 4 30 10 -1\n\
           1: 0100007F:9C40 0100007F:2592 01 00000000:00000000 00:00000000 00000000  1001        0 2 1 0 20 4 30 10 -1\n";
        let table = if cfg!(target_endian = "little") {
            table.to_string()
        } else {
            table.replace("0100007F", "7F000001")
        };
        let peer: SocketAddr = "127.0.0.1:40000".parse().unwrap();
        let local: SocketAddr = "127.0.0.1:9618".parse().unwrap();
        assert_eq!(owner_in(&table, peer, local), Some(1001));
        assert_eq!(owner_in(&table, local, peer), Some(0));
        let stranger: SocketAddr = "127.0.0.1:40001".parse().unwrap();
        assert_eq!(owner_in(&table, stranger, local), None);
        assert_eq!(owner_in("", peer, local), None);
    }

    #[test]
    fn a_real_loopback_peer_is_this_process_s_user() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (_server, peer) = listener.accept().unwrap();
        // SAFETY: geteuid cannot fail.
        let me = unsafe { libc::geteuid() };
        assert_eq!(peer, client.local_addr().unwrap());
        assert_eq!(owner(peer, listener.local_addr().unwrap()), Some(me));
    }
}
