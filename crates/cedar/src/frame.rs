//! Packets (HTCondor's ReliSock): a message travels as one or more
//! packets, each a 5-byte header (1 byte `end`: nonzero on the last packet
//! of a message; 4 bytes big-endian payload length) and the payload.
//!
//! Senders cut payloads at [`PACKET_PAYLOAD`] bytes, as HTCondor's buffers
//! do; readers take packets of up to [`MAX_PACKET`] bytes (HTCondor's
//! limit) and refuse empty ones, and a message of more than a reader's
//! bound is refused before it is all read. An empty message sends nothing.
//!
//! This module is pure: [`packets`] turns a payload into bytes to write,
//! [`Header::parse`] reads a header. The blocking reader is
//! [`crate::sock`].

use std::fmt;

/// The header's size without a MAC (the only form we speak: HTCondor's
/// MD5 MAC mode belongs to its retired ciphers).
pub const HEADER: usize = 5;

/// How much payload a sender puts in one packet.
pub const PACKET_PAYLOAD: usize = 4096 - HEADER;

/// The largest packet a reader takes (HTCondor's `max_packet_size`).
pub const MAX_PACKET: usize = 1024 * 1024;

/// A packet header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// The last packet of its message.
    pub end: bool,
    pub len: usize,
}

/// A header a reader will not take.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadHeader(pub String);

impl fmt::Display for BadHeader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BadHeader {}

impl Header {
    pub fn parse(h: &[u8; HEADER]) -> Result<Header, BadHeader> {
        let end = h[0];
        let len = u32::from_be_bytes([h[1], h[2], h[3], h[4]]) as usize;
        // HTCondor takes end flags 0 to 10 (it only ever sends 0 and 1).
        if end > 10 {
            return Err(BadHeader(format!(
                "not a CEDAR packet (header {:02x} {:02x} {:02x} {:02x} {:02x})",
                h[0], h[1], h[2], h[3], h[4]
            )));
        }
        if len == 0 || len > MAX_PACKET {
            return Err(BadHeader(format!(
                "a packet of {len} bytes (packets hold 1 to {MAX_PACKET})"
            )));
        }
        Ok(Header { end: end != 0, len })
    }

    pub fn bytes(&self) -> [u8; HEADER] {
        let l = (self.len as u32).to_be_bytes();
        [self.end as u8, l[0], l[1], l[2], l[3]]
    }
}

/// The bytes that carry `payload` as one message (none for an empty one).
pub fn packets(payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload.len() + HEADER * (payload.len() / PACKET_PAYLOAD + 1));
    let mut chunks = payload.chunks(PACKET_PAYLOAD).peekable();
    while let Some(c) = chunks.next() {
        let h = Header {
            end: chunks.peek().is_none(),
            len: c.len(),
        };
        out.extend_from_slice(&h.bytes());
        out.extend_from_slice(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_payload_is_cut_into_packets_and_the_last_is_marked() {
        let payload = vec![7u8; PACKET_PAYLOAD * 2 + 10];
        let bytes = packets(&payload);
        assert_eq!(bytes.len(), payload.len() + 3 * HEADER);
        let h = Header::parse(bytes[..5].try_into().unwrap()).unwrap();
        assert_eq!(
            h,
            Header {
                end: false,
                len: PACKET_PAYLOAD
            }
        );
        let last = 2 * (PACKET_PAYLOAD + HEADER);
        let h = Header::parse(bytes[last..last + 5].try_into().unwrap()).unwrap();
        assert_eq!(h, Header { end: true, len: 10 });
        assert!(packets(&[]).is_empty());
    }

    #[test]
    fn headers_out_of_bounds_are_refused() {
        assert!(Header::parse(&[0x47, 0x45, 0x54, 0x20, 0x2f]).is_err()); // "GET /"
        assert!(Header::parse(&[1, 0, 0, 0, 0]).is_err());
        assert!(Header::parse(&[1, 0, 0x10, 0, 1]).is_err());
        assert_eq!(
            Header::parse(&[1, 0, 0, 2, 0x69]).unwrap(),
            Header {
                end: true,
                len: 0x269
            }
        );
    }
}
