//! Values on the wire: what HTCondor's `Stream::put`/`Stream::get` write
//! and read inside one message.
//!
//! - Every integer, whatever its width in the program, travels as 8 bytes,
//!   big-endian two's complement; a `char` is one byte.
//! - A double is two integers: the `frexp` fraction times 2147483647
//!   (truncated to an `int`), then the exponent.
//! - A string is its bytes and a NUL. A lone 0xFF byte is a NULL string
//!   (only the legacy `put_nullstr` sends one). While the stream encrypts,
//!   a string is preceded by its length (with the NUL) as an integer.
//! - A ClassAd: see [`crate::ad`].
//!
//! [`Encoder`] builds one message's payload; [`Decoder`] reads one, and
//! [`Decoder::finish`] checks that the reader used every byte, as
//! HTCondor's end-of-message does on both sides.

use std::fmt;

/// What can go wrong reading a message. Every variant says what was being
/// read and where, so a log line can name the fault in a peer's message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// The message ended inside a value.
    Short {
        what: &'static str,
        at: usize,
        need: usize,
        have: usize,
    },
    /// A string with no NUL before the message ends.
    Unterminated { at: usize },
    /// A value outside what the reader takes.
    Invalid {
        what: &'static str,
        at: usize,
        detail: String,
    },
    /// Bytes left after the reader was done with the message.
    Trailing { at: usize, left: usize },
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::Short {
                what,
                at,
                need,
                have,
            } => write!(
                f,
                "the message ended inside {what} at byte {at} ({need} bytes needed, {have} left)"
            ),
            DecodeError::Unterminated { at } => {
                write!(f, "a string at byte {at} runs to the end of the message")
            }
            DecodeError::Invalid { what, at, detail } => {
                write!(f, "{what} at byte {at}: {detail}")
            }
            DecodeError::Trailing { at, left } => write!(
                f,
                "{left} unread bytes at the end of the message (from byte {at}): the peer sent more than this command takes"
            ),
        }
    }
}

impl std::error::Error for DecodeError {}

/// The fraction scale of HTCondor's doubles (`FRAC_CONST`).
const FRAC_CONST: f64 = 2147483647.0;

/// The byte that stands for a NULL string.
const NULL_STRING: u8 = 0xFF;

/// The longest string a reader takes while the stream encrypts (HTCondor's
/// bound on the length prefix).
pub const MAX_STRING: usize = 10_000_000;

/// One message's payload, being written.
#[derive(Clone, Debug, Default)]
pub struct Encoder {
    buf: Vec<u8>,
    /// Whether strings carry a length prefix (the stream encrypts).
    crypto: bool,
}

impl Encoder {
    pub fn new() -> Encoder {
        Encoder::default()
    }

    /// An encoder for a stream that encrypts (strings are length-prefixed).
    pub fn with_crypto(crypto: bool) -> Encoder {
        Encoder {
            buf: Vec::new(),
            crypto,
        }
    }

    pub fn crypto(&self) -> bool {
        self.crypto
    }

    pub fn set_crypto(&mut self, on: bool) {
        self.crypto = on;
    }

    /// Any integer (`int`, `long`, `long long`, unsigned or not).
    pub fn put_int(&mut self, v: i64) -> &mut Self {
        self.buf.extend_from_slice(&v.to_be_bytes());
        self
    }

    pub fn put_u64(&mut self, v: u64) -> &mut Self {
        self.buf.extend_from_slice(&v.to_be_bytes());
        self
    }

    pub fn put_char(&mut self, c: u8) -> &mut Self {
        self.buf.push(c);
        self
    }

    pub fn put_bool(&mut self, b: bool) -> &mut Self {
        self.put_int(b as i64)
    }

    pub fn put_double(&mut self, d: f64) -> &mut Self {
        let (frac, exp) = frexp(d);
        // C's conversion truncates toward zero; NaN has no int (HTCondor's
        // conversion is undefined there), so it travels as 0.
        let frac = if frac.is_nan() {
            0
        } else {
            (frac * FRAC_CONST) as i32
        };
        self.put_int(frac as i64).put_int(exp as i64)
    }

    /// A string. A NUL inside it would end it early on the other side (C
    /// strings), so the text is cut there, as HTCondor's `strlen` would.
    pub fn put_str(&mut self, s: &str) -> &mut Self {
        let bytes = s.as_bytes();
        let bytes = match bytes.iter().position(|&b| b == 0) {
            Some(n) => &bytes[..n],
            None => bytes,
        };
        if self.crypto {
            self.put_int(bytes.len() as i64 + 1);
        }
        self.buf.extend_from_slice(bytes);
        self.buf.push(0);
        self
    }

    /// A string that may be NULL (HTCondor's `put_nullstr`).
    pub fn put_null_str(&mut self, s: Option<&str>) -> &mut Self {
        match s {
            Some(s) => self.put_str(s),
            None => {
                if self.crypto {
                    self.put_int(1);
                }
                self.buf.push(NULL_STRING);
                self
            }
        }
    }

    /// Raw bytes (a key, a hash): the callers say their length elsewhere.
    pub fn put_bytes(&mut self, b: &[u8]) -> &mut Self {
        self.buf.extend_from_slice(b);
        self
    }

    pub fn len(&self) -> usize {
        self.buf.len()
    }

    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.buf
    }

    pub fn into_bytes(self) -> Vec<u8> {
        self.buf
    }
}

/// One received message's payload, being read.
#[derive(Clone, Debug)]
pub struct Decoder<'a> {
    buf: &'a [u8],
    pos: usize,
    crypto: bool,
}

impl<'a> Decoder<'a> {
    pub fn new(buf: &'a [u8]) -> Decoder<'a> {
        Decoder {
            buf,
            pos: 0,
            crypto: false,
        }
    }

    pub fn with_crypto(buf: &'a [u8], crypto: bool) -> Decoder<'a> {
        Decoder {
            buf,
            pos: 0,
            crypto,
        }
    }

    pub fn set_crypto(&mut self, on: bool) {
        self.crypto = on;
    }

    pub fn crypto(&self) -> bool {
        self.crypto
    }

    /// Bytes not read yet.
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    pub fn position(&self) -> usize {
        self.pos
    }

    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], DecodeError> {
        if self.remaining() < n {
            return Err(DecodeError::Short {
                what,
                at: self.pos,
                need: n,
                have: self.remaining(),
            });
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    pub fn get_int(&mut self) -> Result<i64, DecodeError> {
        let b = self.take(8, "an integer")?;
        Ok(i64::from_be_bytes(b.try_into().expect("8 bytes")))
    }

    pub fn get_u64(&mut self) -> Result<u64, DecodeError> {
        Ok(self.get_int()? as u64)
    }

    /// An `int`: HTCondor writes it as 8 bytes; a value that does not fit
    /// in 32 bits is a fault in the peer's message.
    pub fn get_i32(&mut self) -> Result<i32, DecodeError> {
        let at = self.pos;
        let v = self.get_int()?;
        i32::try_from(v).map_err(|_| DecodeError::Invalid {
            what: "an int",
            at,
            detail: format!("{v} does not fit in 32 bits"),
        })
    }

    pub fn get_bool(&mut self) -> Result<bool, DecodeError> {
        Ok(self.get_int()? != 0)
    }

    pub fn get_char(&mut self) -> Result<u8, DecodeError> {
        Ok(self.take(1, "a char")?[0])
    }

    pub fn get_double(&mut self) -> Result<f64, DecodeError> {
        let frac = self.get_i32()?;
        let at = self.pos;
        let exp = self.get_i32()?;
        if !(-1100..=1100).contains(&exp) {
            return Err(DecodeError::Invalid {
                what: "a double's exponent",
                at,
                detail: format!("{exp} is outside what a double holds"),
            });
        }
        Ok(ldexp(frac as f64 / FRAC_CONST, exp))
    }

    /// A string that may be NULL.
    pub fn get_null_str(&mut self) -> Result<Option<String>, DecodeError> {
        let at = self.pos;
        if self.crypto {
            let len = self.get_int()?;
            if !(0..=MAX_STRING as i64).contains(&len) {
                return Err(DecodeError::Invalid {
                    what: "a string's length",
                    at,
                    detail: format!("{len} is not between 0 and {MAX_STRING}"),
                });
            }
            let bytes = self.take(len as usize, "a string")?;
            if bytes.first() == Some(&NULL_STRING) {
                return Ok(None);
            }
            // The length counts the NUL; text after an inner NUL is not
            // part of the C string.
            let text = match bytes.iter().position(|&b| b == 0) {
                Some(n) => &bytes[..n],
                None => bytes,
            };
            return Ok(Some(String::from_utf8_lossy(text).into_owned()));
        }
        match self.buf.get(self.pos) {
            None => Err(DecodeError::Short {
                what: "a string",
                at,
                need: 1,
                have: 0,
            }),
            Some(&NULL_STRING) => {
                self.pos += 1;
                Ok(None)
            }
            Some(_) => {
                let rest = &self.buf[self.pos..];
                let n = rest
                    .iter()
                    .position(|&b| b == 0)
                    .ok_or(DecodeError::Unterminated { at })?;
                self.pos += n + 1;
                Ok(Some(String::from_utf8_lossy(&rest[..n]).into_owned()))
            }
        }
    }

    /// A string (a NULL one reads as empty, as HTCondor's `get` does).
    pub fn get_str(&mut self) -> Result<String, DecodeError> {
        Ok(self.get_null_str()?.unwrap_or_default())
    }

    /// `n` raw bytes.
    pub fn get_bytes(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        self.take(n, "raw bytes")
    }

    /// The end of the message: every byte must have been read.
    pub fn finish(&self) -> Result<(), DecodeError> {
        if self.remaining() == 0 {
            Ok(())
        } else {
            Err(DecodeError::Trailing {
                at: self.pos,
                left: self.remaining(),
            })
        }
    }
}

/// C's `frexp`: `d = frac * 2^exp` with `0.5 <= |frac| < 1` (0 for 0).
pub(crate) fn frexp(d: f64) -> (f64, i32) {
    if d == 0.0 || !d.is_finite() {
        return (d, 0);
    }
    let bits = d.to_bits();
    let exp_bits = ((bits >> 52) & 0x7ff) as i32;
    if exp_bits == 0 {
        // Subnormal: scale into the normal range first.
        let (f, e) = frexp(d * 2f64.powi(64));
        return (f, e - 64);
    }
    let exp = exp_bits - 1022;
    let frac_bits = (bits & !(0x7ffu64 << 52)) | (1022u64 << 52);
    (f64::from_bits(frac_bits), exp)
}

/// C's `ldexp`: `frac * 2^exp`, without overflowing in the middle.
pub(crate) fn ldexp(frac: f64, exp: i32) -> f64 {
    let mut x = frac;
    let mut e = exp;
    while e > 1000 {
        x *= 2f64.powi(1000);
        e -= 1000;
    }
    while e < -1000 {
        x *= 2f64.powi(-1000);
        e += 1000;
    }
    x * 2f64.powi(e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_are_eight_bytes_big_endian() {
        let mut e = Encoder::new();
        e.put_int(60010).put_int(-1);
        assert_eq!(
            e.as_bytes(),
            &[0, 0, 0, 0, 0, 0, 0xea, 0x6a, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]
        );
        let mut d = Decoder::new(e.as_bytes());
        assert_eq!(d.get_i32().unwrap(), 60010);
        assert_eq!(d.get_int().unwrap(), -1);
        d.finish().unwrap();
    }

    #[test]
    fn strings_and_null_strings() {
        let mut e = Encoder::new();
        e.put_str("Sid").put_null_str(None).put_str("");
        assert_eq!(e.as_bytes(), b"Sid\0\xff\0");
        let mut d = Decoder::new(e.as_bytes());
        assert_eq!(d.get_str().unwrap(), "Sid");
        assert_eq!(d.get_null_str().unwrap(), None);
        assert_eq!(d.get_str().unwrap(), "");
        d.finish().unwrap();
    }

    #[test]
    fn strings_under_encryption_carry_their_length() {
        let mut e = Encoder::with_crypto(true);
        e.put_str("ab");
        assert_eq!(e.as_bytes(), b"\0\0\0\0\0\0\0\x03ab\0");
        let mut d = Decoder::with_crypto(e.as_bytes(), true);
        assert_eq!(d.get_str().unwrap(), "ab");
        d.finish().unwrap();
    }

    #[test]
    fn doubles_round_trip_through_frexp() {
        for v in [0.0, 1.0, -1.5, 3.25, 1e300, -2.5e-300, 0.1, 123456.789] {
            let mut e = Encoder::new();
            e.put_double(v);
            let got = Decoder::new(e.as_bytes()).get_double().unwrap();
            // 31 bits of fraction, as HTCondor carries.
            assert!((got - v).abs() <= v.abs() * 1e-9, "{v} came back as {got}");
        }
        // 0.5 * 2^1: the fraction of 1.0 is 0.5, exponent 1.
        let mut e = Encoder::new();
        e.put_double(1.0);
        let mut d = Decoder::new(e.as_bytes());
        assert_eq!(d.get_int().unwrap(), 1073741823);
        assert_eq!(d.get_int().unwrap(), 1);
    }

    #[test]
    fn faults_name_what_and_where() {
        let e = Decoder::new(b"\0\0\0").clone().get_int().unwrap_err();
        assert!(e.to_string().contains("inside an integer at byte 0"), "{e}");
        let e = Decoder::new(b"abc").get_str().unwrap_err();
        assert_eq!(e, DecodeError::Unterminated { at: 0 });
        let mut d = Decoder::new(b"a\0b");
        d.get_str().unwrap();
        assert!(d
            .finish()
            .unwrap_err()
            .to_string()
            .contains("1 unread bytes"));
        let mut big = Encoder::new();
        big.put_int(1 << 40);
        assert!(Decoder::new(big.as_bytes()).get_i32().is_err());
        let mut huge = Encoder::new();
        huge.put_int(MAX_STRING as i64 + 1);
        assert!(Decoder::with_crypto(huge.as_bytes(), true)
            .get_str()
            .is_err());
    }
}
