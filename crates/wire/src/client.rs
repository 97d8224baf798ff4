//! A blocking HTTP/1.1 client over a Unix-domain socket: one request per
//! connection, which is all a command-line tool needs.

use std::fmt;
use std::io::{self, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::api::ErrorBody;

/// Why a request got no answer, or a refusal.
#[derive(Debug)]
pub enum Error {
    /// Nothing listens at the socket (it is absent, or stale).
    NoPool { socket: PathBuf },
    /// The socket is there but the caller may not use it.
    Denied { socket: PathBuf },
    /// Reading or writing the socket failed.
    Io { socket: PathBuf, source: io::Error },
    /// The answer is not what the API promises (a different program at the
    /// socket, or a bug).
    Protocol { socket: PathBuf, message: String },
    /// The daemon refused the request; `message` says why.
    Refused { status: u16, message: String },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::NoPool { socket } => write!(
                f,
                "no pool is running at {}: start one with `ferrocondor pool up`",
                socket.display()
            ),
            Error::Denied { socket } => write!(
                f,
                "cannot reach the pool at {}: permission denied (the socket or its directory does not let you in)",
                socket.display()
            ),
            Error::Io { socket, source } => write!(
                f,
                "talking to the pool at {}: {source}",
                socket.display()
            ),
            Error::Protocol { socket, message } => write!(
                f,
                "the pool at {} answered something unexpected: {message}",
                socket.display()
            ),
            Error::Refused { message, .. } => f.write_str(message),
        }
    }
}

impl std::error::Error for Error {}

/// Talks to the pool whose socket is at `socket`.
#[derive(Clone, Debug)]
pub struct Client {
    socket: PathBuf,
    timeout: Duration,
}

impl Client {
    pub fn new(socket: impl Into<PathBuf>) -> Client {
        Client {
            socket: socket.into(),
            timeout: Duration::from_secs(120),
        }
    }

    /// The client of the pool kept in `state_dir`.
    pub fn for_state_dir(state_dir: &Path) -> Client {
        Client::new(state_dir.join(crate::SOCKET_NAME))
    }

    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// Sends `body` as JSON to `path` and reads the answer as `T`.
    pub fn call<B: Serialize, T: DeserializeOwned>(
        &self,
        path: &str,
        body: &B,
    ) -> Result<T, Error> {
        let body = serde_json::to_vec(body).map_err(|e| self.protocol(e.to_string()))?;
        // The pool would refuse it unread: say so without sending it.
        if body.len() > crate::api::body_limit(path) {
            return Err(Error::Refused {
                status: 413,
                message: crate::api::too_large(path, Some(body.len() as u64)),
            });
        }
        let (status, answer) = self.exchange(path, &body)?;
        if !(200..300).contains(&status) {
            let message = match serde_json::from_slice::<ErrorBody>(&answer) {
                Ok(e) => e.error,
                Err(_) => format!(
                    "the pool refused the request (HTTP {status}): {}",
                    String::from_utf8_lossy(&answer).trim()
                ),
            };
            return Err(Error::Refused { status, message });
        }
        serde_json::from_slice(&answer).map_err(|e| self.protocol(format!("{e}")))
    }

    fn protocol(&self, message: String) -> Error {
        Error::Protocol {
            socket: self.socket.clone(),
            message,
        }
    }

    fn io(&self, source: io::Error) -> Error {
        Error::Io {
            socket: self.socket.clone(),
            source,
        }
    }

    fn exchange(&self, path: &str, body: &[u8]) -> Result<(u16, Vec<u8>), Error> {
        let mut stream = UnixStream::connect(&self.socket).map_err(|e| match e.kind() {
            io::ErrorKind::NotFound | io::ErrorKind::ConnectionRefused => Error::NoPool {
                socket: self.socket.clone(),
            },
            io::ErrorKind::PermissionDenied => Error::Denied {
                socket: self.socket.clone(),
            },
            _ => self.io(e),
        })?;
        stream
            .set_read_timeout(Some(self.timeout))
            .map_err(|e| self.io(e))?;
        stream
            .set_write_timeout(Some(self.timeout))
            .map_err(|e| self.io(e))?;
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        );
        let sent = stream
            .write_all(head.as_bytes())
            .and_then(|()| stream.write_all(body));
        let mut raw = Vec::new();
        if let Err(e) = sent {
            // The pool may have answered and closed before reading it all
            // (a request it refuses unread): its answer says more than the
            // broken pipe.
            if matches!(
                e.kind(),
                io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionReset
            ) && stream.read_to_end(&mut raw).is_ok()
            {
                if let Ok(answer) = parse_response(&raw) {
                    return Ok(answer);
                }
            }
            return Err(self.io(e));
        }
        stream.read_to_end(&mut raw).map_err(|e| self.io(e))?;
        parse_response(&raw).map_err(|m| self.protocol(m))
    }
}

/// Status and body of an HTTP/1.1 response read to the end of the stream.
fn parse_response(raw: &[u8]) -> Result<(u16, Vec<u8>), String> {
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| "the answer ended before its headers did".to_string())?;
    let head = std::str::from_utf8(&raw[..end]).map_err(|_| "headers that are not text")?;
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or("");
    let status = status_line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse::<u16>().ok())
        .filter(|_| status_line.starts_with("HTTP/1."))
        .ok_or_else(|| format!("not an HTTP answer: {status_line:?}"))?;
    let mut length = None;
    let mut chunked = false;
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-length") {
            length = Some(
                value
                    .parse::<usize>()
                    .map_err(|_| format!("bad Content-Length {value:?}"))?,
            );
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = value.eq_ignore_ascii_case("chunked");
        }
    }
    let rest = &raw[end + 4..];
    let body = if chunked {
        dechunk(rest)?
    } else if let Some(n) = length {
        rest.get(..n)
            .ok_or_else(|| format!("the answer is shorter ({}) than it said ({n})", rest.len()))?
            .to_vec()
    } else {
        rest.to_vec()
    };
    Ok((status, body))
}

fn dechunk(mut rest: &[u8]) -> Result<Vec<u8>, String> {
    let mut body = Vec::new();
    loop {
        let line_end = rest
            .windows(2)
            .position(|w| w == b"\r\n")
            .ok_or("a chunk without its size line")?;
        let size_text = std::str::from_utf8(&rest[..line_end]).map_err(|_| "a bad chunk size")?;
        let size_text = size_text.split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(size_text, 16)
            .map_err(|_| format!("a bad chunk size {size_text:?}"))?;
        rest = &rest[line_end + 2..];
        if size == 0 {
            return Ok(body);
        }
        let chunk = rest.get(..size).ok_or("the answer ended inside a chunk")?;
        body.extend_from_slice(chunk);
        rest = rest
            .get(size + 2..)
            .ok_or("the answer ended after a chunk")?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn responses_with_a_length_or_chunks_are_read() {
        let r = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}";
        assert_eq!(parse_response(r).unwrap(), (200, b"{}".to_vec()));
        let r = b"HTTP/1.1 400 Bad Request\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n";
        assert_eq!(parse_response(r).unwrap(), (400, b"abcde".to_vec()));
        assert!(parse_response(b"garbage").is_err());
        assert!(parse_response(b"SSH-2.0\r\n\r\n").is_err());
        assert!(parse_response(b"HTTP/1.1 200 OK\r\ncontent-length: 9\r\n\r\n{}").is_err());
    }

    #[test]
    fn a_request_over_the_limit_is_refused_before_it_is_sent() {
        // No pool at all: the refusal comes before any connection.
        let dir = std::env::temp_dir().join(format!("wire-big-{}", std::process::id()));
        let c = Client::for_state_dir(&dir);
        let big = crate::api::SubmitRequest {
            cluster: 1,
            ads: vec!["x".repeat(crate::api::MAX_SUBMIT_BYTES)],
        };
        match c.call::<_, crate::api::Submitted>(crate::api::PATH_SUBMIT, &big) {
            Err(Error::Refused { status, message }) => {
                assert_eq!(status, 413);
                assert!(message.contains("at most 256 MiB"), "{message}");
            }
            other => panic!("{other:?}"),
        }
        let q = crate::api::QueryRequest {
            selection: crate::api::Selection {
                constraint: Some("x".repeat(crate::api::MAX_REQUEST_BYTES)),
                ..Default::default()
            },
            projection: vec![],
        };
        match c.call::<_, crate::api::QueryAnswer>(crate::api::PATH_QUERY, &q) {
            Err(Error::Refused { message, .. }) => {
                assert!(message.contains("at most 4 MiB"), "{message}")
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn no_socket_means_no_pool_and_says_how_to_start_one() {
        let dir = std::env::temp_dir().join(format!("wire-none-{}", std::process::id()));
        let c = Client::for_state_dir(&dir);
        let e = c
            .call::<_, crate::api::Hello>(crate::api::PATH_HELLO, &crate::api::Empty {})
            .unwrap_err();
        assert!(matches!(e, Error::NoPool { .. }));
        let text = e.to_string();
        assert!(
            text.starts_with("no pool is running at ")
                && text.ends_with("pool.sock: start one with `ferrocondor pool up`"),
            "{text}"
        );
    }
}
