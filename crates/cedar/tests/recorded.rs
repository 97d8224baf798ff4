//! The codec against bytes a real HTCondor 25.14.1 client exchanged
//! (`tests/fixtures/collector-query-and-advertise.txt`: the bindings'
//! `Collector.query(AdTypes.Startd)` with no configuration, recorded on
//! 127.0.0.1, each packet in hex).

use cedar::frame::{Header, HEADER};
use cedar::{get_ad, put_ad, Decoder, Encoder, PutOptions};

/// The recorded packets: (client to server?, the packet's bytes).
fn packets() -> Vec<(bool, Vec<u8>)> {
    let text = include_str!("fixtures/collector-query-and-advertise.txt");
    let mut out: Vec<(bool, Vec<u8>)> = Vec::new();
    for line in text.lines() {
        if line.starts_with("<<<") || line.starts_with(">>>") {
            out.push((line.starts_with("<<<"), Vec::new()));
            continue;
        }
        // "0000  01 00 ...  ascii": offset, then up to 16 hex bytes.
        let Some((off, rest)) = line.split_once("  ") else {
            continue;
        };
        if off.len() != 4 || !off.chars().all(|c| c.is_ascii_hexdigit()) {
            continue;
        }
        let hex = &rest[..rest.len().min(16 * 3)];
        let last = out.last_mut().expect("a packet line before any marker");
        for b in hex.split_whitespace() {
            last.1.push(u8::from_str_radix(b, 16).unwrap());
        }
    }
    out
}

fn payload(packet: &[u8]) -> &[u8] {
    let h = Header::parse(packet[..HEADER].try_into().unwrap()).unwrap();
    assert!(h.end, "every recorded message is one packet");
    assert_eq!(h.len, packet.len() - HEADER);
    &packet[HEADER..]
}

#[test]
fn the_client_s_authentication_request_decodes() {
    let p = packets();
    assert_eq!(p.len(), 5);
    let (to_server, bytes) = &p[0];
    assert!(to_server);
    let mut d = Decoder::new(payload(bytes));
    assert_eq!(d.get_i32().unwrap(), cedar::commands::DC_AUTHENTICATE);
    let ad = get_ad(&mut d).unwrap();
    d.finish().unwrap();
    assert_eq!(ad.len(), 19);
    let s = |n: &str| {
        ad.eval_attr(n, &classad::Env::default())
            .as_str()
            .map(str::to_string)
    };
    assert_eq!(s("Authentication").as_deref(), Some("OPTIONAL"));
    assert_eq!(s("CryptoMethods").as_deref(), Some("AES,BLOWFISH,3DES"));
    assert_eq!(s("AuthMethods").as_deref(), Some("CLAIMTOBE"));
    assert_eq!(
        ad.eval_attr("Command", &classad::Env::default()).as_int(),
        Some(5)
    );
    assert_eq!(s("ECDHPublicKey").unwrap().len(), 88); // base64 of 65 bytes
}

#[test]
fn the_server_s_answers_re_encode_to_the_same_bytes() {
    // Our encoder writes what the recording server wrote: same ads, same
    // order, same bytes.
    let p = packets();
    for (to_server, bytes) in &p {
        if *to_server {
            continue;
        }
        let body = payload(bytes);
        let mut d = Decoder::new(body);
        let mut e = Encoder::new();
        if body.starts_with(&[0, 0, 0, 0, 0, 0, 0, 1]) {
            // A query's answer: [1][ad]...[0].
            while d.get_int().unwrap() == 1 {
                e.put_int(1);
                let ad = get_ad(&mut d).unwrap();
                put_ad(&mut e, &ad, &PutOptions::default());
            }
            e.put_int(0);
        } else {
            let ad = get_ad(&mut d).unwrap();
            put_ad(&mut e, &ad, &PutOptions::default());
        }
        d.finish().unwrap();
        assert_eq!(e.as_bytes(), body);
    }
}

#[test]
fn the_query_ad_names_its_target_and_requirements() {
    let p = packets();
    let (to_server, bytes) = &p[3];
    assert!(to_server);
    let mut d = Decoder::new(payload(bytes));
    let ad = get_ad(&mut d).unwrap();
    d.finish().unwrap();
    let env = classad::Env::default();
    assert_eq!(ad.eval_attr("TargetType", &env).as_str(), Some("Machine"));
    assert_eq!(ad.eval_attr("Requirements", &env).as_bool(), Some(true));
}
