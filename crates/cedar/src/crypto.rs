//! Session keys and AES-GCM on the stream, as HTCondor 9+ does them.
//!
//! - **Key agreement:** each side sends an ephemeral P-256 public key
//!   (base64 of the 65-byte uncompressed point) in its policy ad; the key is
//!   HKDF-SHA256 of the ECDH shared secret (its X coordinate), salt
//!   `htcondor`, info `keygen`, 32 bytes.
//! - **Packets:** once a key is on, every packet's body is
//!   `[16-byte IV, first packet of a direction only][ciphertext][16-byte tag]`,
//!   AES-256-GCM with a 16-byte IV: each sender draws a random base IV and
//!   counts its packets; packet c uses the base with `c` added to its first
//!   four bytes (big-endian, wrapping). The additional data is the packet's
//!   5-byte header, and for the first packet each way also the SHA-256 of
//!   the clear bytes each side sent and received before (the handshake), so
//!   a tampered handshake fails the first tag.
//!
//! The primitives are RustCrypto's (`aes-gcm`, `p256`, `hkdf`): nothing
//! here implements a cipher.

use aes_gcm::aead::consts::U16;
use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::aes::Aes256;
use aes_gcm::AesGcm;
use base64::Engine;
use hkdf::Hkdf;
use p256::ecdh::EphemeralSecret;
use p256::elliptic_curve::sec1::ToEncodedPoint;
use p256::PublicKey;
use sha2::Sha256;

use crate::frame::{Header, HEADER};
use crate::sock::{HandshakeHashes, PacketCipher};

type Aes256Gcm16 = AesGcm<Aes256, U16>;

const IV: usize = 16;
const TAG: usize = 16;

/// A session key.
#[derive(Clone)]
pub struct SessionKey(pub [u8; 32]);

impl std::fmt::Debug for SessionKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SessionKey(..)")
    }
}

/// One side's half of the key agreement.
pub struct KeyExchange {
    secret: EphemeralSecret,
}

impl Default for KeyExchange {
    fn default() -> Self {
        KeyExchange::new()
    }
}

impl KeyExchange {
    pub fn new() -> KeyExchange {
        KeyExchange {
            secret: EphemeralSecret::random(&mut OsRng),
        }
    }

    /// Our public key as the policy ad carries it.
    pub fn public_base64(&self) -> String {
        let point = self.secret.public_key().to_encoded_point(false);
        base64::engine::general_purpose::STANDARD.encode(point.as_bytes())
    }

    /// The session key, from the peer's public key (base64, as its ad
    /// carries it).
    pub fn finish(self, peer_base64: &str) -> Result<SessionKey, String> {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(peer_base64.trim())
            .map_err(|e| format!("the peer's ECDHPublicKey is not base64: {e}"))?;
        let peer = PublicKey::from_sec1_bytes(&bytes)
            .map_err(|_| "the peer's ECDHPublicKey is not a P-256 point".to_string())?;
        let shared = self.secret.diffie_hellman(&peer);
        let hk = Hkdf::<Sha256>::new(Some(b"htcondor"), shared.raw_secret_bytes().as_slice());
        let mut key = [0u8; 32];
        hk.expand(b"keygen", &mut key)
            .map_err(|_| "HKDF could not make a 32-byte key".to_string())?;
        Ok(SessionKey(key))
    }
}

/// The operating system's random source, in the shape `p256` wants.
struct OsRng;

impl p256::elliptic_curve::rand_core::RngCore for OsRng {
    fn next_u32(&mut self) -> u32 {
        let mut b = [0u8; 4];
        self.fill_bytes(&mut b);
        u32::from_le_bytes(b)
    }
    fn next_u64(&mut self) -> u64 {
        let mut b = [0u8; 8];
        self.fill_bytes(&mut b);
        u64::from_le_bytes(b)
    }
    fn fill_bytes(&mut self, dest: &mut [u8]) {
        getrandom::fill(dest).expect("the system's random source");
    }
    fn try_fill_bytes(
        &mut self,
        dest: &mut [u8],
    ) -> Result<(), p256::elliptic_curve::rand_core::Error> {
        self.fill_bytes(dest);
        Ok(())
    }
}

impl p256::elliptic_curve::rand_core::CryptoRng for OsRng {}

/// AES-GCM for one connection (both directions).
pub struct StreamCipher {
    aead: Aes256Gcm16,
    send_base: [u8; IV],
    send_count: u32,
    recv_base: Option<[u8; IV]>,
    recv_count: u32,
}

impl StreamCipher {
    pub fn new(key: &SessionKey) -> StreamCipher {
        let mut send_base = [0u8; IV];
        getrandom::fill(&mut send_base).expect("the system's random source");
        StreamCipher::with_iv(key, send_base)
    }

    /// With a chosen base IV (tests).
    pub fn with_iv(key: &SessionKey, send_base: [u8; IV]) -> StreamCipher {
        StreamCipher {
            aead: Aes256Gcm16::new_from_slice(&key.0).expect("a 32-byte key"),
            send_base,
            send_count: 0,
            recv_base: None,
            recv_count: 0,
        }
    }
}

fn iv_for(base: &[u8; IV], count: u32) -> [u8; IV] {
    let mut iv = *base;
    let first = u32::from_be_bytes([base[0], base[1], base[2], base[3]]).wrapping_add(count);
    iv[..4].copy_from_slice(&first.to_be_bytes());
    iv
}

fn aad(header: &[u8; HEADER], hashes: Option<&HandshakeHashes>, sending: bool) -> Vec<u8> {
    let mut a = Vec::with_capacity(64 + HEADER);
    if let Some(h) = hashes {
        // The sender's view: what it sent, then what it received; the
        // receiver computes the same from its side.
        if sending {
            a.extend_from_slice(&h.sent);
            a.extend_from_slice(&h.received);
        } else {
            a.extend_from_slice(&h.received);
            a.extend_from_slice(&h.sent);
        }
    }
    a.extend_from_slice(header);
    a
}

impl PacketCipher for StreamCipher {
    fn seal(
        &mut self,
        end: bool,
        payload: &[u8],
        first: Option<&HandshakeHashes>,
    ) -> Result<Vec<u8>, String> {
        if self.send_count == u32::MAX {
            return Err("too many packets on one connection for its key".into());
        }
        let with_iv = self.send_count == 0;
        let len = payload.len() + TAG + if with_iv { IV } else { 0 };
        let header = Header { end, len }.bytes();
        let iv = iv_for(&self.send_base, self.send_count);
        let ct = self
            .aead
            .encrypt(
                (&iv).into(),
                Payload {
                    msg: payload,
                    aad: &aad(&header, first, true),
                },
            )
            .map_err(|_| "encryption failed".to_string())?;
        self.send_count += 1;
        let mut out = Vec::with_capacity(HEADER + len);
        out.extend_from_slice(&header);
        if with_iv {
            out.extend_from_slice(&self.send_base);
        }
        out.extend_from_slice(&ct);
        Ok(out)
    }

    fn open(
        &mut self,
        header: &[u8; HEADER],
        body: &[u8],
        first: Option<&HandshakeHashes>,
    ) -> Result<Vec<u8>, String> {
        if self.recv_count == u32::MAX {
            return Err("too many packets on one connection for its key".into());
        }
        let body = match self.recv_base {
            Some(_) => body,
            None => {
                if body.len() < IV + TAG {
                    return Err("the first encrypted packet is too short to hold its IV".into());
                }
                let mut base = [0u8; IV];
                base.copy_from_slice(&body[..IV]);
                self.recv_base = Some(base);
                &body[IV..]
            }
        };
        if body.len() < TAG {
            return Err("an encrypted packet too short to hold its tag".into());
        }
        let base = self.recv_base.expect("set above");
        let iv = iv_for(&base, self.recv_count);
        let plain = self
            .aead
            .decrypt(
                (&iv).into(),
                Payload {
                    msg: body,
                    aad: &aad(header, first, false),
                },
            )
            .map_err(|_| {
                "a packet failed its integrity check (tampered with, or not from the session's peer)"
                    .to_string()
            })?;
        self.recv_count += 1;
        Ok(plain)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_sides_agree_on_a_key() {
        let a = KeyExchange::new();
        let b = KeyExchange::new();
        let (pa, pb) = (a.public_base64(), b.public_base64());
        assert_eq!(
            base64::engine::general_purpose::STANDARD
                .decode(&pa)
                .unwrap()
                .len(),
            65
        );
        let ka = a.finish(&pb).unwrap();
        let kb = b.finish(&pa).unwrap();
        assert_eq!(ka.0, kb.0);
        assert!(KeyExchange::new().finish("not base64!").is_err());
        assert!(KeyExchange::new().finish("AAAA").is_err());
    }

    #[test]
    fn packets_round_trip_and_tampering_is_found() {
        let key = SessionKey([7; 32]);
        let mut tx = StreamCipher::with_iv(&key, [1; 16]);
        let mut rx = StreamCipher::new(&key);
        let hashes = HandshakeHashes {
            sent: [2; 32],
            received: [3; 32],
        };
        let mirrored = HandshakeHashes {
            sent: [3; 32],
            received: [2; 32],
        };
        let p1 = tx.seal(true, b"hello", Some(&hashes)).unwrap();
        assert_eq!(p1.len(), 5 + 16 + 5 + 16);
        let h: [u8; 5] = p1[..5].try_into().unwrap();
        assert_eq!(rx.open(&h, &p1[5..], Some(&mirrored)).unwrap(), b"hello");
        let p2 = tx.seal(false, b"again", None).unwrap();
        assert_eq!(p2.len(), 5 + 5 + 16);
        let mut bad = p2.clone();
        bad[7] ^= 1;
        let h: [u8; 5] = bad[..5].try_into().unwrap();
        assert!(rx.open(&h, &bad[5..], None).is_err());
        // The IV counter moved on for the second packet.
        assert_eq!(
            iv_for(&[0, 0, 0, 0xff, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9], 1)[..4],
            [0, 0, 1, 0]
        );
    }

    #[test]
    fn a_tampered_handshake_fails_the_first_packet() {
        let key = SessionKey([9; 32]);
        let mut tx = StreamCipher::new(&key);
        let mut rx = StreamCipher::new(&key);
        let sender = HandshakeHashes {
            sent: [1; 32],
            received: [1; 32],
        };
        let receiver_saw_otherwise = HandshakeHashes {
            sent: [1; 32],
            received: [4; 32],
        };
        let p = tx.seal(true, b"x", Some(&sender)).unwrap();
        let h: [u8; 5] = p[..5].try_into().unwrap();
        assert!(rx.open(&h, &p[5..], Some(&receiver_saw_otherwise)).is_err());
    }
}
