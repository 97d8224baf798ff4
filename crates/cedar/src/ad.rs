//! ClassAds on the wire, as HTCondor's `putClassAd`/`getClassAd` carry
//! them: an integer N, N strings `Name = expr` in old syntax, then two
//! strings (MyType and TargetType, which modern senders leave empty: the
//! types travel as ordinary attributes).
//!
//! Private attributes (ClaimId, Capability, ... and any name starting with
//! `_condor_priv`) are never sent where the sender says so (the collector's
//! answers to queries); otherwise, on a stream that has a key but is not
//! encrypting, each goes as the marker `ZKM` followed by the line sent
//! encrypted ([`crate::codec::Encoder`] with crypto on for that string).

use classad::{AttrName, ClassAd};

use crate::codec::{DecodeError, Decoder, Encoder};

/// The marker that says the next line was sent encrypted.
pub const SECRET_MARKER: &str = "ZKM";

/// The most attributes a reader takes in one ad (HTCondor's bound).
pub const MAX_ATTRIBUTES: i64 = 1_000_000;

/// Private attributes: never shown to those who may only read, and
/// encrypted on the wire where the stream can.
pub fn is_private(name: &str) -> bool {
    const V1: [&str; 6] = [
        "Capability",
        "ChildClaimIds",
        "ClaimId",
        "ClaimIdList",
        "ClaimIds",
        "TransferKey",
    ];
    V1.iter().any(|p| p.eq_ignore_ascii_case(name))
        || name
            .get(..12)
            .is_some_and(|p| p.eq_ignore_ascii_case("_condor_priv"))
}

/// How an ad is put on the wire.
#[derive(Clone, Copy, Debug, Default)]
pub struct PutOptions<'a> {
    /// Leave private attributes out.
    pub exclude_private: bool,
    /// Send only these attributes (those the ad has), in this order.
    pub projection: Option<&'a [AttrName]>,
    /// Add `ServerTime = <now>` (for `condor_q`'s relative times).
    pub server_time: Option<i64>,
    /// The stream has a session key but does not encrypt: private
    /// attributes go as `ZKM` + the line encrypted.
    pub secret_capable: bool,
    /// Leave out the two trailing type strings (HTCondor's
    /// `PUT_CLASSAD_NO_TYPES`: the negotiator's priority answers).
    pub no_types: bool,
}

/// Writes `ad` into `enc`.
pub fn put_ad(enc: &mut Encoder, ad: &ClassAd, opts: &PutOptions<'_>) {
    let chosen: Vec<(&str, &classad::Expr)> = match opts.projection {
        Some(names) => names
            .iter()
            .filter_map(|n| ad.lookup_entry(n).map(|(n, e)| (n.as_str(), e)))
            .collect(),
        None => ad.iter_inserted().map(|(n, e)| (n.as_str(), e)).collect(),
    };
    let kept: Vec<(&str, &classad::Expr)> = chosen
        .into_iter()
        .filter(|(n, _)| !(opts.exclude_private && is_private(n)))
        .collect();
    let count = kept.len() + opts.server_time.is_some() as usize;
    enc.put_int(count as i64);
    let mut line = String::new();
    for (name, expr) in kept {
        line.clear();
        line.push_str(name);
        line.push_str(" = ");
        line.push_str(&classad::unparse::expr_to_old_syntax(expr));
        if opts.secret_capable && !enc.crypto() && is_private(name) {
            enc.put_str(SECRET_MARKER);
            enc.set_crypto(true);
            enc.put_str(&line);
            enc.set_crypto(false);
        } else {
            enc.put_str(&line);
        }
    }
    if let Some(now) = opts.server_time {
        enc.put_str(&format!("ServerTime = {now}"));
    }
    if !opts.no_types {
        enc.put_str("").put_str("");
    }
}

/// An attribute's string value (evaluated alone), as peers' ads carry
/// their words (`Authentication = "YES"`, `Sid = "..."`).
pub fn string_attr(ad: &ClassAd, name: &str) -> Option<String> {
    match ad.eval_attr(name, &classad::Env::default()) {
        classad::Value::Str(s) => Some(s.to_string()),
        _ => None,
    }
}

/// An attribute's integer value; HTCondor's security ads also write some
/// numbers as strings (`SessionDuration = "60"`), and a real or a boolean
/// counts as its integer.
pub fn int_attr(ad: &ClassAd, name: &str) -> Option<i64> {
    match ad.eval_attr(name, &classad::Env::default()) {
        classad::Value::Int(i) => Some(i),
        classad::Value::Real(r) if r.is_finite() => Some(r as i64),
        classad::Value::Bool(b) => Some(b as i64),
        classad::Value::Str(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// Whether an attribute says yes: `true`, or the string `"YES"`.
pub fn flag_attr(ad: &ClassAd, name: &str) -> bool {
    match ad.eval_attr(name, &classad::Env::default()) {
        classad::Value::Bool(b) => b,
        classad::Value::Str(s) => s.eq_ignore_ascii_case("YES"),
        _ => false,
    }
}

/// Reads an ad from `dec`. A line that is not `Name = expr` is an error
/// naming the line, as is an attribute count out of bounds.
pub fn get_ad(dec: &mut Decoder<'_>) -> Result<ClassAd, DecodeError> {
    get_ad_with(dec, true)
}

/// An ad sent without MyType and TargetType (HTCondor's
/// `getClassAdNoTypes`, the form of `PutOptions::no_types`): the
/// negotiator's priority table, for one.
pub fn get_ad_no_types(dec: &mut Decoder<'_>) -> Result<ClassAd, DecodeError> {
    get_ad_with(dec, false)
}

fn get_ad_with(dec: &mut Decoder<'_>, types: bool) -> Result<ClassAd, DecodeError> {
    let at = dec.position();
    let n = dec.get_int()?;
    if !(0..=MAX_ATTRIBUTES).contains(&n) {
        return Err(DecodeError::Invalid {
            what: "an ad's attribute count",
            at,
            detail: format!("{n} is not between 0 and {MAX_ATTRIBUTES}"),
        });
    }
    let mut ad = ClassAd::new();
    for _ in 0..n {
        let at = dec.position();
        let mut line = dec.get_str()?;
        if line == SECRET_MARKER {
            let was = dec.crypto();
            dec.set_crypto(true);
            line = dec.get_str()?;
            dec.set_crypto(was);
        }
        let (name, expr) =
            classad::reader::parse_old_attr(&line).map_err(|e| DecodeError::Invalid {
                what: "an ad's attribute",
                at,
                detail: format!("{line:?} is not `Name = expression`: {e}"),
            })?;
        ad.insert(name.as_str(), expr);
    }
    if !types {
        return Ok(ad);
    }
    // MyType and TargetType: modern senders leave them empty, and the
    // attributes of those names (if any) are among the N.
    let my_type = dec.get_str()?;
    let target_type = dec.get_str()?;
    for (name, value) in [("MyType", my_type), ("TargetType", target_type)] {
        if !value.is_empty() && !ad.contains(name) {
            ad.insert_value(name, classad::Value::from(value.as_str()));
        }
    }
    Ok(ad)
}

/// A collector query, client side: sends the query ad (QUERY_*_ADS was
/// the command the connection was made for) and reads the collector's
/// answer, `(1, ad)` pairs and then `0`, in as many messages as it likes.
/// The connection is closed after the last.
pub fn query_collector(
    sock: &mut crate::Sock,
    query: &ClassAd,
) -> Result<Vec<ClassAd>, crate::SockError> {
    let mut e = sock.encoder();
    put_ad(&mut e, query, &PutOptions::default());
    sock.send(&e)?;
    let mut ads = Vec::new();
    loop {
        let msg = sock.recv()?;
        let mut d = sock.decoder(&msg);
        while d.remaining() != 0 {
            if d.get_int().map_err(crate::SockError::Decode)? == 0 {
                sock.close();
                return Ok(ads);
            }
            ads.push(get_ad(&mut d).map_err(crate::SockError::Decode)?);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ad_round_trips_with_old_syntax_strings() {
        let ad =
            ClassAd::parse(r#"[ Name = "slot1@x"; Cpus = 4; Req = Cpus > 2 && Name =!= "a\\b" ]"#)
                .unwrap();
        let mut e = Encoder::new();
        put_ad(&mut e, &ad, &PutOptions::default());
        let mut d = Decoder::new(e.as_bytes());
        let back = get_ad(&mut d).unwrap();
        d.finish().unwrap();
        assert_eq!(back.len(), 3);
        assert_eq!(
            classad::unparse::ad_to_old_syntax(&back),
            classad::unparse::ad_to_old_syntax(&ad)
        );
    }

    #[test]
    fn an_ad_without_types_reads_back_only_in_that_form() {
        let ad = ClassAd::parse("[ NumSubmittors = 1; Name1 = \"a@h\" ]").unwrap();
        let mut e = Encoder::new();
        let opts = PutOptions {
            no_types: true,
            ..Default::default()
        };
        put_ad(&mut e, &ad, &opts);
        let mut d = Decoder::new(e.as_bytes());
        let back = get_ad_no_types(&mut d).unwrap();
        d.finish().unwrap();
        assert_eq!(back.len(), 2);
        // Read as an ad with types, the two type strings are missing.
        assert!(get_ad(&mut Decoder::new(e.as_bytes())).is_err());
    }

    #[test]
    fn private_attributes_are_left_out_or_sent_secret() {
        let ad =
            ClassAd::parse(r#"[ ClaimId = "secret"; Name = "x"; _condor_privKey = 1 ]"#).unwrap();
        let mut e = Encoder::new();
        let opts = PutOptions {
            exclude_private: true,
            ..Default::default()
        };
        put_ad(&mut e, &ad, &opts);
        let back = get_ad(&mut Decoder::new(e.as_bytes())).unwrap();
        assert_eq!(back.len(), 1);
        let mut e = Encoder::new();
        let opts = PutOptions {
            secret_capable: true,
            ..Default::default()
        };
        put_ad(&mut e, &ad, &opts);
        assert!(e.as_bytes().windows(4).any(|w| w == b"ZKM\0"));
        let back = get_ad(&mut Decoder::new(e.as_bytes())).unwrap();
        assert_eq!(back.len(), 3);
    }

    #[test]
    fn projection_and_server_time() {
        let ad = ClassAd::parse("[ A = 1; B = 2; C = 3 ]").unwrap();
        let names = [
            AttrName::from("C"),
            AttrName::from("A"),
            AttrName::from("Z"),
        ];
        let mut e = Encoder::new();
        let opts = PutOptions {
            projection: Some(&names),
            server_time: Some(99),
            ..Default::default()
        };
        put_ad(&mut e, &ad, &opts);
        let back = get_ad(&mut Decoder::new(e.as_bytes())).unwrap();
        assert_eq!(
            classad::unparse::ad_to_old_syntax(&back),
            "A = 1\nC = 3\nServerTime = 99\n"
        );
    }

    #[test]
    fn bad_lines_and_counts_are_errors() {
        let mut e = Encoder::new();
        e.put_int(1)
            .put_str("not an attribute")
            .put_str("")
            .put_str("");
        let err = get_ad(&mut Decoder::new(e.as_bytes())).unwrap_err();
        assert!(err.to_string().contains("not an attribute"), "{err}");
        let mut e = Encoder::new();
        e.put_int(-3);
        assert!(get_ad(&mut Decoder::new(e.as_bytes())).is_err());
        let mut e = Encoder::new();
        e.put_int(5_000_000);
        assert!(get_ad(&mut Decoder::new(e.as_bytes())).is_err());
    }
}
