//! The I/O edge: a TCP connection that sends and receives whole messages
//! (HTCondor's ReliSock), with a deadline on every read and write.
//!
//! A [`Sock`] may also run over any other byte stream ([`Sock::over`]):
//! tests and fuzzing drive the handshake through memory.
//!
//! Until a session key is switched on, both directions keep a SHA-256
//! digest of every byte on the wire (headers and payloads): HTCondor binds
//! its first encrypted packet to those bytes, so a man in the middle who
//! altered the unencrypted handshake is found out.

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

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

/// What a [`Sock`] runs over: the byte stream and the few socket
/// operations it asks for.
trait Conn: Read + Write + Send {
    fn local_addr(&self) -> io::Result<SocketAddr>;
    fn set_timeout(&self, t: Duration) -> io::Result<()>;
    fn shutdown(&self);
}

impl Conn for TcpStream {
    fn local_addr(&self) -> io::Result<SocketAddr> {
        TcpStream::local_addr(self)
    }

    fn set_timeout(&self, t: Duration) -> io::Result<()> {
        self.set_read_timeout(Some(t))?;
        self.set_write_timeout(Some(t))
    }

    fn shutdown(&self) {
        let _ = TcpStream::shutdown(self, Shutdown::Both);
    }
}

/// Any other stream, with the local address it claims; it has no
/// deadlines (its reads must end on their own) and nothing to shut down.
struct AnyStream<S> {
    stream: S,
    local: SocketAddr,
}

impl<S: Read> Read for AnyStream<S> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.stream.read(buf)
    }
}

impl<S: Write> Write for AnyStream<S> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.stream.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.stream.flush()
    }
}

impl<S: Read + Write + Send> Conn for AnyStream<S> {
    fn local_addr(&self) -> io::Result<SocketAddr> {
        Ok(self.local)
    }

    fn set_timeout(&self, _: Duration) -> io::Result<()> {
        Ok(())
    }

    fn shutdown(&self) {}
}

/// A connection carrying CEDAR messages.
pub struct Sock {
    stream: Box<dyn Conn>,
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
    /// How long one read or write may wait; a whole message, however it
    /// trickles in or out, gets twice that ([`MESSAGE_TIME_FACTOR`]).
    timeout: Duration,
    /// Messages sent while corked ([`Sock::cork`]), not written yet.
    corked: Option<Vec<u8>>,
    /// Bytes read from the stream and not yet taken: a message's header and
    /// body, and the next messages a client sent without waiting (a
    /// submission's many NoAck messages), come in one read, not two each.
    read_buf: ReadBuffer,
}

/// How many bytes one read from the stream asks for at most.
const READ_CHUNK: usize = 64 * 1024;

/// What [`Sock`] read ahead of the message it is taking apart.
#[derive(Default)]
struct ReadBuffer {
    bytes: Vec<u8>,
    /// The first byte not yet taken.
    start: usize,
}

impl ReadBuffer {
    /// Takes up to `out.len()` buffered bytes into `out`; how many.
    fn take(&mut self, out: &mut [u8]) -> usize {
        let n = out.len().min(self.bytes.len() - self.start);
        out[..n].copy_from_slice(&self.bytes[self.start..self.start + n]);
        self.start += n;
        if self.start == self.bytes.len() {
            self.bytes.clear();
            self.start = 0;
        }
        n
    }
}

/// How many bytes a corked socket gathers before it writes them.
const CORK_LIMIT: usize = 64 * 1024;

/// A message must be read (or written) whole within this many times the
/// connection's timeout: a peer that sends a byte now and then, or reads
/// our answer a byte at a time, does not hold a thread for ever.
const MESSAGE_TIME_FACTOR: u32 = 2;

impl Sock {
    pub fn new(stream: TcpStream) -> io::Result<Sock> {
        let peer = stream.peer_addr()?;
        stream.set_nodelay(true)?;
        let mut s = Sock::with_conn(Box::new(stream), peer);
        s.set_timeout(DEFAULT_TIMEOUT)?;
        Ok(s)
    }

    /// A connection over any byte stream (an in-memory one, for tests and
    /// fuzzing): `local` and `peer` are the addresses it reports. Such a
    /// stream has no deadlines: a read at its end must return 0 (closed),
    /// not wait.
    pub fn over<S>(stream: S, local: SocketAddr, peer: SocketAddr) -> Sock
    where
        S: Read + Write + Send + 'static,
    {
        Sock::with_conn(Box::new(AnyStream { stream, local }), peer)
    }

    fn with_conn(stream: Box<dyn Conn>, peer: SocketAddr) -> Sock {
        Sock {
            stream,
            peer,
            max_message: DEFAULT_MAX_MESSAGE,
            sent: Transcript::default(),
            received: Transcript::default(),
            cipher: None,
            hashes: None,
            first_send: false,
            first_recv: false,
            timeout: DEFAULT_TIMEOUT,
            corked: None,
            read_buf: ReadBuffer::default(),
        }
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

    pub fn set_timeout(&mut self, t: Duration) -> io::Result<()> {
        self.timeout = t;
        self.stream.set_timeout(t)
    }

    fn message_deadline(&self) -> Instant {
        Instant::now() + self.timeout * MESSAGE_TIME_FACTOR
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
        let bytes = self.framed(payload)?;
        if let Some(pending) = &mut self.corked {
            pending.extend_from_slice(&bytes);
            if pending.len() < CORK_LIMIT {
                return Ok(());
            }
            return self.flush();
        }
        self.write_out(&bytes)
    }

    /// From now on, messages are gathered and written together (when 64
    /// KiB have gathered, before a read that waits on the stream, at
    /// [`Sock::flush`] or [`Sock::uncork`]): a client that sends many
    /// small messages without waiting for answers (QMGMT's SetAttribute
    /// with NoAck) makes one write of many instead of one each, and a
    /// server answering calls that came in one read (QMGMT's NewProc)
    /// answers them in one write. The bytes are the same.
    pub fn cork(&mut self) {
        self.corked.get_or_insert_with(Vec::new);
    }

    /// Writes what was gathered and sends each message at once again.
    pub fn uncork(&mut self) -> Result<(), SockError> {
        self.flush()?;
        self.corked = None;
        Ok(())
    }

    /// Writes what a corked socket gathered.
    pub fn flush(&mut self) -> Result<(), SockError> {
        match self.corked.as_mut().map(std::mem::take) {
            Some(pending) if !pending.is_empty() => self.write_out(&pending),
            _ => Ok(()),
        }
    }

    /// Sends several messages in one write (a query's answer of one ad a
    /// message): each is still framed, and sealed, as its own message.
    pub fn send_all(&mut self, msgs: &[Encoder]) -> Result<(), SockError> {
        let mut bytes = Vec::new();
        for m in msgs {
            bytes.extend_from_slice(&self.framed(m.as_bytes())?);
        }
        self.flush()?;
        self.write_out(&bytes)
    }

    /// A message's packets as they go on the wire (sealed once a key is
    /// on; counted in the handshake digest before).
    fn framed(&mut self, payload: &[u8]) -> Result<Vec<u8>, SockError> {
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
        Ok(bytes)
    }

    fn write_out(&mut self, bytes: &[u8]) -> Result<(), SockError> {
        let deadline = self.message_deadline();
        let mut sent = 0;
        while sent < bytes.len() {
            if Instant::now() >= deadline {
                return Err(SockError::TimedOut {
                    doing: "sending a message (the peer reads too slowly)",
                });
            }
            match self.stream.write(&bytes[sent..]) {
                Ok(0) => {
                    return Err(SockError::Closed {
                        inside_message: true,
                    })
                }
                Ok(n) => sent += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(io_error(e, "sending a message")),
            }
        }
        Ok(())
    }

    /// The next message, or `None` when the peer closed the connection
    /// between messages (how a client ends a conversation of many).
    pub fn recv_next(&mut self) -> Result<Option<Vec<u8>>, SockError> {
        match self.recv() {
            Ok(m) => Ok(Some(m)),
            Err(SockError::Closed {
                inside_message: false,
            }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Receives one message's payload.
    pub fn recv(&mut self) -> Result<Vec<u8>, SockError> {
        let mut payload = Vec::new();
        let mut first = true;
        let deadline = self.message_deadline();
        loop {
            let mut h = [0u8; HEADER];
            self.fill(&mut h, !first, deadline, "reading a packet header")?;
            let header = Header::parse(&h).map_err(SockError::BadPacket)?;
            if payload.len() + header.len > self.max_message {
                return Err(SockError::TooBig {
                    limit: self.max_message,
                });
            }
            let mut body = vec![0u8; header.len];
            self.fill(&mut body, true, deadline, "reading a packet")?;
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

    /// Fills `out` from what was read ahead, then from the stream: a short
    /// remainder is read through the buffer (one read may bring the next
    /// messages too), a long one straight into `out`.
    fn fill(
        &mut self,
        out: &mut [u8],
        inside_message: bool,
        deadline: Instant,
        doing: &'static str,
    ) -> Result<(), SockError> {
        let mut got = self.read_buf.take(out);
        if got == out.len() {
            return Ok(());
        }
        // The stream is read, so we may wait for the peer: what was
        // gathered goes first (the peer may be waiting for it). Messages
        // read ahead are taken without it, so a corked server answers all
        // the calls of one read in one write.
        self.flush()?;
        let rest = &mut out[got..];
        if rest.len() >= READ_CHUNK {
            return read_exact(
                &mut *self.stream,
                rest,
                inside_message || got > 0,
                deadline,
                doing,
            );
        }
        let mut chunk = std::mem::take(&mut self.read_buf.bytes);
        chunk.resize(READ_CHUNK, 0);
        let mut have = 0;
        let result: Result<(), SockError> = (|| {
            while have < rest.len() {
                have += read_some(
                    &mut *self.stream,
                    &mut chunk[have..],
                    inside_message || got + have > 0,
                    deadline,
                    doing,
                )?;
            }
            Ok(())
        })();
        chunk.truncate(have);
        self.read_buf = ReadBuffer {
            bytes: chunk,
            start: 0,
        };
        result?;
        got += self.read_buf.take(rest);
        debug_assert_eq!(got, out.len());
        Ok(())
    }

    /// Closes the connection both ways.
    pub fn close(&self) {
        self.stream.shutdown();
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
    s: &mut dyn Conn,
    buf: &mut [u8],
    inside_message: bool,
    deadline: Instant,
    doing: &'static str,
) -> Result<(), SockError> {
    let mut got = 0;
    while got < buf.len() {
        got += read_some(
            s,
            &mut buf[got..],
            inside_message || got > 0,
            deadline,
            doing,
        )?;
    }
    Ok(())
}

/// One read of at least one byte into `buf` (retried when interrupted),
/// within the message's deadline.
fn read_some(
    s: &mut dyn Conn,
    buf: &mut [u8],
    inside_message: bool,
    deadline: Instant,
    doing: &'static str,
) -> Result<usize, SockError> {
    loop {
        if Instant::now() >= deadline {
            return Err(SockError::TimedOut {
                doing: "reading a message (it came too slowly)",
            });
        }
        match s.read(buf) {
            Ok(0) => return Err(SockError::Closed { inside_message }),
            Ok(n) => return Ok(n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(io_error(e, doing)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    /// Reads from a buffer, throws writes away.
    struct Memory(io::Cursor<Vec<u8>>);

    impl Read for Memory {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.0.read(buf)
        }
    }

    impl Write for Memory {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_sock_over_memory_reads_messages_then_finds_it_closed() {
        let mut bytes = frame::packets(b"hello");
        bytes.extend_from_slice(&[1, 0, 0, 0, 9, b'x']);
        let local: SocketAddr = "10.0.0.1:9618".parse().unwrap();
        let peer: SocketAddr = "10.0.0.2:4000".parse().unwrap();
        let mut s = Sock::over(Memory(io::Cursor::new(bytes)), local, peer);
        assert_eq!(s.local().unwrap(), local);
        assert_eq!(s.peer(), peer);
        s.set_timeout(Duration::from_secs(1)).unwrap();
        s.send_bytes(b"discarded").unwrap();
        assert_eq!(s.recv().unwrap(), b"hello");
        assert!(matches!(
            s.recv(),
            Err(SockError::Closed {
                inside_message: true
            })
        ));
        assert!(matches!(
            s.recv(),
            Err(SockError::Closed {
                inside_message: false
            })
        ));
        s.close();
    }

    #[test]
    fn a_tcp_sock_knows_both_ends() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let mut client = Sock::connect(addr, Duration::from_secs(5)).unwrap();
        let (server, _) = listener.accept().unwrap();
        let mut server = Sock::new(server).unwrap();
        // FS authentication names the server's own address.
        assert_eq!(server.local().unwrap(), addr);
        assert_eq!(server.peer(), client.local().unwrap());
        client.send_bytes(b"ping").unwrap();
        assert_eq!(server.recv().unwrap(), b"ping");
        client.close();
        assert!(matches!(server.recv(), Err(SockError::Closed { .. })));
    }

    /// Reads from a buffer at most `step` bytes a read, counting the reads.
    struct Trickle {
        bytes: io::Cursor<Vec<u8>>,
        step: usize,
        reads: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    }

    impl Read for Trickle {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.reads
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let n = buf.len().min(self.step);
            self.bytes.read(&mut buf[..n])
        }
    }

    impl Write for Trickle {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn messages_sent_together_are_read_together_and_each_comes_whole() {
        // Many small messages, one bigger than a read, a multi-packet one,
        // then the end: whatever the stream hands over per read.
        let small: Vec<Vec<u8>> = (0..500)
            .map(|i| format!("message {i}").into_bytes())
            .collect();
        let big: Vec<u8> = (0..3 * READ_CHUNK + 17).map(|i| (i % 251) as u8).collect();
        let mut bytes = Vec::new();
        for m in &small {
            bytes.extend(frame::packets(m));
        }
        bytes.extend(frame::packets(&big));
        bytes.extend(frame::packets(b"last"));
        for step in [1, 7, 4096, usize::MAX] {
            let reads = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
            let stream = Trickle {
                bytes: io::Cursor::new(bytes.clone()),
                step,
                reads: reads.clone(),
            };
            let any: SocketAddr = "10.0.0.1:9618".parse().unwrap();
            let mut s = Sock::over(stream, any, any);
            for m in &small {
                assert_eq!(&s.recv().unwrap(), m, "step {step}");
            }
            assert_eq!(s.recv().unwrap(), big, "step {step}");
            assert_eq!(s.recv().unwrap(), b"last", "step {step}");
            assert!(matches!(
                s.recv(),
                Err(SockError::Closed {
                    inside_message: false
                })
            ));
            if step == usize::MAX {
                // 500 messages of 14 bytes or so: a read or two, not 1,000.
                let n = reads.load(std::sync::atomic::Ordering::Relaxed);
                assert!(n < 20, "{n} reads");
            }
        }
    }

    /// Reads from a buffer, records the size of each write.
    struct Recorder {
        bytes: io::Cursor<Vec<u8>>,
        writes: std::sync::Arc<std::sync::Mutex<Vec<usize>>>,
    }

    impl Read for Recorder {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.bytes.read(buf)
        }
    }

    impl Write for Recorder {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.writes.lock().unwrap().push(buf.len());
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_corked_sock_answers_the_calls_of_one_read_in_one_write() {
        let mut bytes = Vec::new();
        for i in 0..200 {
            bytes.extend(frame::packets(format!("call {i}").as_bytes()));
        }
        let writes = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let stream = Recorder {
            bytes: io::Cursor::new(bytes),
            writes: writes.clone(),
        };
        let any: SocketAddr = "10.0.0.1:9618".parse().unwrap();
        let mut s = Sock::over(stream, any, any);
        s.cork();
        let mut answered = 0;
        while let Some(call) = s.recv_next().unwrap() {
            assert!(call.starts_with(b"call "));
            s.send_bytes(b"answer").unwrap();
            answered += frame::packets(b"answer").len();
        }
        // Written before the read that found the end, all at once.
        assert_eq!(*writes.lock().unwrap(), [answered]);
    }

    #[test]
    fn a_corked_sock_writes_its_answer_before_it_waits_for_the_next_call() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let (stream, _) = listener.accept().unwrap();
            let mut s = Sock::new(stream).unwrap();
            s.cork();
            while let Some(call) = s.recv_next().unwrap() {
                s.send_bytes(&call).unwrap();
            }
        });
        let mut client = Sock::connect(addr, Duration::from_secs(5)).unwrap();
        client.set_timeout(Duration::from_secs(5)).unwrap();
        for i in 0..20 {
            let call = format!("call {i}");
            client.send_bytes(call.as_bytes()).unwrap();
            assert_eq!(client.recv().unwrap(), call.as_bytes());
        }
        client.close();
        server.join().unwrap();
    }

    #[test]
    fn a_message_that_trickles_in_is_cut_off_at_its_deadline() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let sender = std::thread::spawn(move || {
            let mut c = TcpStream::connect(addr).unwrap();
            // A packet of 100 bytes, one byte every 50 ms: every read
            // succeeds well within the timeout, the message never ends.
            let _ = c.write_all(&[1, 0, 0, 0, 100]);
            for _ in 0..100 {
                if c.write_all(&[0]).is_err() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        });
        let (stream, _) = listener.accept().unwrap();
        let mut s = Sock::new(stream).unwrap();
        s.set_timeout(Duration::from_millis(200)).unwrap();
        let started = Instant::now();
        let e = s.recv().unwrap_err();
        assert!(matches!(e, SockError::TimedOut { .. }), "{e}");
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{:?}",
            started.elapsed()
        );
        s.close();
        sender.join().unwrap();
    }
}
