//! Any bytes as one message's payload: read them as a sequence of values
//! (ints, chars, doubles, strings, null strings, ads, raw bytes), the
//! choice of each driven by a byte of a script at the input's start, in
//! both string modes (clear, and length-prefixed as while encrypting).
//! Also a packet header and a sinful string from the same bytes. Nothing
//! may panic; every read either takes bytes or fails.

#![no_main]

use cedar::codec::Decoder;
use cedar::frame::{Header, HEADER};
use cedar::Sinful;
use libfuzzer_sys::fuzz_target;

/// Reads `payload` as the script says, each step one value.
fn walk(script: &[u8], payload: &[u8], crypto: bool) {
    let mut d = Decoder::with_crypto(payload, crypto);
    for &op in script {
        let before = d.position();
        let _read = match op % 10 {
            0 => d.get_int().is_ok(),
            1 => d.get_i32().is_ok(),
            2 => d.get_char().is_ok(),
            3 => d.get_double().is_ok(),
            4 => d.get_str().is_ok(),
            5 => d.get_null_str().is_ok(),
            6 => match cedar::get_ad(&mut d) {
                Ok(ad) => {
                    // What was read prints (old syntax) without panicking.
                    let _ = classad::unparse::ad_to_old_syntax(&ad);
                    true
                }
                Err(e) => {
                    let _ = e.to_string();
                    false
                }
            },
            7 => d.get_bytes((op / 10) as usize).is_ok(),
            8 => d.get_bool().is_ok(),
            _ => {
                // Switch the string mode mid-message (as an ad's `ZKM` does).
                let c = d.crypto();
                d.set_crypto(!c);
                true
            }
        };
        // A failed read may leave the position inside the value; the walk
        // goes on from there, as a careless caller might.
        assert!(d.position() >= before && d.position() <= payload.len());
    }
    let _ = d.finish().map_err(|e| e.to_string());
}

fuzz_target!(|data: &[u8]| {
    // The first byte says how long the script is (at most 32 steps); the
    // rest is the payload.
    let (script, payload) = match data.split_first() {
        Some((&n, rest)) => rest.split_at((n as usize % 33).min(rest.len())),
        None => (&[][..], data),
    };
    walk(script, payload, false);
    walk(script, payload, true);
    // The whole input, read as one kind of value to its end.
    for op in [0u8, 4, 5, 6] {
        walk(&[op; 64], data, false);
        walk(&[op; 64], data, true);
    }
    if let Some(h) = data.get(..HEADER) {
        let h: &[u8; HEADER] = h.try_into().expect("5 bytes");
        if let Ok(header) = Header::parse(h) {
            assert!(header.len >= 1 && header.len <= cedar::frame::MAX_PACKET);
            assert_eq!(Header::parse(&header.bytes()), Ok(header));
        }
    }
    let text = String::from_utf8_lossy(data);
    if let Ok(s) = Sinful::parse(&text, 9618) {
        // What parses prints, and what it prints parses back the same.
        let printed = s.to_string();
        let back = Sinful::parse(&printed, 9618);
        assert_eq!(back.as_ref(), Ok(&s), "{text:?} printed as {printed:?}");
        let _ = s.socket_addr();
        let _ = s.no_udp();
    }
});
