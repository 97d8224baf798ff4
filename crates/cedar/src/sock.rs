//! The I/O edge: a TCP connection that sends and receives whole messages
//! (HTCondor's ReliSock), with a deadline on every read and write.
//!
//! Until a session key is switched on, both directions keep a SHA-256
//! digest of every byte on the wire (headers and payloads): HTCondor binds
//! its first encrypted packet to those bytes, so a man in the middle who
//! altered the unencrypted handshake is found out.

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::time::Duration;

use sha2::{Digest, Sha256};

use crate::codec::{DecodeError, Decoder, Encoder};
use crate::frame::{self, BadHeader, Header, HEADER};

/// What went wrong on a connection.
#[derive(Debug)]
pub enum SockError {
    /// The peer closed the connection (between messages, or inside one).
    Closed {
        inside_message: bool,
    },
    /// No byte came (or could be written) within the deadline.
    TimedOut {
        doing: &'static str,
    },
    Io {
        doing: &'static str,
        source: io::Error,
    },
    BadPacket(BadHeader),
    /// A message larger than this connection takes.
    TooBig {
        limit: usize,
    },
    Decode(DecodeError),
    /// The peer's message said something this side cannot go on with.
    Protocol(String),
}

impl std::fmt::Display for SockError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SockError::Closed {
                inside_message: false,
            } => f.write_str("the peer closed the connection"),
            SockError::Closed {
                inside_message: true,
            } => f.write_str("the peer closed the connection in the middle of a message"),
            SockError::TimedOut { doing } => write!(f, "timed out {doing}"),
            SockError::Io { doing, source } => write!(f, "{doing}: {source}"),
            SockError::BadPacket(e) => write!(f, "bad packet: {e}"),
            SockError::TooBig { limit } => {
                write!(f, "a message over this connection's limit of {limit} bytes")
            }
            SockError::Decode(e) => write!(f, "bad message: {e}"),
            SockError::Protocol(e) => f.write_str(e),
        }
    }
}

impl std::error::Error for SockError {}

impl From<DecodeError> for SockError {
    fn from(e: DecodeError) -> Self {
        SockError::Decode(e)
    }
}

/// The largest message a connection takes unless told otherwise: far
/// above any ad or submission a client sends in one message (a job ad is a
/// few KiB; a query answer travels one ad a message).
pub const DEFAULT_MAX_MESSAGE: usize = 64 << 20;

/// How long a read or write may wait for the peer unless told otherwise
/// (HTCondor's daemons use 20 s for a command's socket).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(20);

/// The digests of the clear traffic before the key was switched on, from
/// this side's point of view (all zero for a direction that carried
/// nothing, as HTCondor has it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HandshakeHashes {
    pub sent: [u8; 32],
    pub received: [u8; 32],
}

/// Protects a stream's packets once a session key is on (AES-GCM, see
/// [`crate::crypto`]). `first` is given for the first packet each way.
pub trait PacketCipher: Send {
    /// The bytes to write for one packet of `payload` (`end`: last packet).
    fn seal(
        &mut self,
        end: bool,
        payload: &[u8],
        first: Option<&HandshakeHashes>,
    ) -> Result<Vec<u8>, String>;
    /// The plaintext of a received packet (`header` is its 5 bytes).
    fn open(
        &mut self,
        header: &[u8; HEADER],
        body: &[u8],
        first: Option<&HandshakeHashes>,
    ) -> Result<Vec<u8>, String>;
}

/// How much clear traffic each direction's digest covers (HTCondor's
/// limit): a handshake is far smaller.
const DIGEST_LIMIT: usize = 1 << 20;

/// A running digest of one direction's clear traffic.
#[derive(Clone, Default)]
struct Transcript {
    hash: Sha256,
    bytes: usize,
}

impl Transcript {
    fn add(&mut self, b: &[u8]) {
        if self.bytes < DIGEST_LIMIT {
            self.hash.update(b);
        }
        self.bytes += b.len();
    }

    fn digest(&self) -> [u8; 32] {
        if self.bytes == 0 {
            [0; 32]
        } else {
            self.hash.clone().finalize().into()
        }
    }
}

/// A connection carrying CEDAR messages.
pub struct Sock {
    stream: TcpStream,
    peer: SocketAddr,
    max_message: usize,
    sent: Transcript,
    received: Transcript,
    cipher: Option<Box<dyn PacketCipher>>,
    /// The handshake digests, frozen when the cipher was switched on, for
    /// its first packet each way.
    hashes: Option<HandshakeHashes>,
    first_send: bool,
    first_recv: bool,
}

impl Sock {
    pub fn new(stream: TcpStream) -> io::Result<Sock> {
        let peer = stream.peer_addr()?;
        stream.set_nodelay(true)?;
        let s = Sock {
            stream,
            peer,
            max_message: DEFAULT_MAX_MESSAGE,
            sent: Transcript::default(),
            received: Transcript::default(),
            cipher: None,
            hashes: None,
            first_send: false,
            first_recv: false,
        };
        s.set_timeout(DEFAULT_TIMEOUT)?;
        Ok(s)
    }

    pub fn connect(addr: SocketAddr, timeout: Duration) -> io::Result<Sock> {
        let stream = TcpStream::connect_timeout(&addr, timeout)?;
        Sock::new(stream)
    }

    pub fn peer(&self) -> SocketAddr {
        self.peer
    }

    pub fn local(&self) -> io::Result<SocketAddr> {
        self.stream.local_addr()
    }

    pub fn set_timeout(&self, t: Duration) -> io::Result<()> {
        self.stream.set_read_timeout(Some(t))?;
        self.stream.set_write_timeout(Some(t))
    }

    pub fn set_max_message(&mut self, bytes: usize) {
        self.max_message = bytes;
    }

    /// Whether packets are sealed (strings then carry their length).
    pub fn encrypting(&self) -> bool {
        self.cipher.is_some()
    }

    /// An encoder for the next message, in this stream's string mode.
    pub fn encoder(&self) -> Encoder {
        Encoder::with_crypto(self.encrypting())
    }

    pub fn decoder<'a>(&self, payload: &'a [u8]) -> Decoder<'a> {
        Decoder::with_crypto(payload, self.encrypting())
    }

    /// Seals every packet from now on; the first packet each way is bound
    /// to the clear bytes that came before it (on this connection).
    pub fn start_cipher(&mut self, cipher: Box<dyn PacketCipher>) {
        self.hashes = Some(HandshakeHashes {
            sent: self.sent.digest(),
            received: self.received.digest(),
        });
        self.first_send = true;
        self.first_recv = true;
        self.cipher = Some(cipher);
    }

    /// Sends one message.
    pub fn send(&mut self, msg: &Encoder) -> Result<(), SockError> {
        self.send_bytes(msg.as_bytes())
    }

    pub fn send_bytes(&mut self, payload: &[u8]) -> Result<(), SockError> {
        let bytes = match &mut self.cipher {
            None => frame::packets(payload),
            Some(c) => {
                let mut out = Vec::new();
                let mut chunks = payload.chunks(frame::PACKET_PAYLOAD).peekable();
                while let Some(chunk) = chunks.next() {
                    let end = chunks.peek().is_none();
                    let first = std::mem::take(&mut self.first_send);
                    let sealed = c
                        .seal(end, chunk, self.hashes.as_ref().filter(|_| first))
                        .map_err(SockError::Protocol)?;
                    out.extend_from_slice(&sealed);
                }
                out
            }
        };
        if self.cipher.is_none() {
            self.sent.add(&bytes);
        }
        self.stream
            .write_all(&bytes)
            .map_err(|e| io_error(e, "sending a message"))
    }

    /// Receives one message's payload.
    pub fn recv(&mut self) -> Result<Vec<u8>, SockError> {
        let mut payload = Vec::new();
        let mut first = true;
        loop {
            let mut h = [0u8; HEADER];
            read_exact(&mut self.stream, &mut h, !first, "reading a packet header")?;
            let header = Header::parse(&h).map_err(SockError::BadPacket)?;
            if payload.len() + header.len > self.max_message {
                return Err(SockError::TooBig {
                    limit: self.max_message,
                });
            }
            let mut body = vec![0u8; header.len];
            read_exact(&mut self.stream, &mut body, true, "reading a packet")?;
            match &mut self.cipher {
                None => {
                    self.received.add(&h);
                    self.received.add(&body);
                    payload.extend_from_slice(&body)
                }
                Some(c) => {
                    let first = std::mem::take(&mut self.first_recv);
                    let plain = c
                        .open(&h, &body, self.hashes.as_ref().filter(|_| first))
                        .map_err(SockError::Protocol)?;
                    payload.extend_from_slice(&plain);
                }
            }
            first = false;
            if header.end {
                return Ok(payload);
            }
        }
    }

    /// Closes the connection both ways.
    pub fn close(&self) {
        let _ = self.stream.shutdown(Shutdown::Both);
    }
}

fn io_error(e: io::Error, doing: &'static str) -> SockError {
    match e.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => SockError::TimedOut { doing },
        io::ErrorKind::UnexpectedEof
        | io::ErrorKind::ConnectionReset
        | io::ErrorKind::BrokenPipe
        | io::ErrorKind::ConnectionAborted => SockError::Closed {
            inside_message: false,
        },
        _ => SockError::Io { doing, source: e },
    }
}

fn read_exact(
    s: &mut TcpStream,
    buf: &mut [u8],
    inside_message: bool,
    doing: &'static str,
) -> Result<(), SockError> {
    let mut got = 0;
    while got < buf.len() {
        match s.read(&mut buf[got..]) {
            Ok(0) => {
                return Err(SockError::Closed {
                    inside_message: inside_message || got > 0,
                })
            }
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(io_error(e, doing)),
        }
    }
    Ok(())
}
