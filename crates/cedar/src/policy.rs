//! Security policy: what each side of a connection asks for and what they
//! agree on, as HTCondor's `SecMan` reconciles them.
//!
//! Each side says, for authentication, encryption and integrity, one of
//! REQUIRED, PREFERRED, OPTIONAL or NEVER; the server (always the server)
//! decides YES or NO for each, or that they cannot agree:
//!
//! | client \ server | R    | P   | O   | N    |
//! |-----------------|------|-----|-----|------|
//! | R               | YES  | YES | YES | FAIL |
//! | P               | YES  | YES | YES | NO   |
//! | O               | YES  | YES | NO  | NO   |
//! | N               | FAIL | NO  | NO  | NO   |
//!
//! Method lists (authentication, crypto) are the methods both sides name,
//! in the server's order. The session's duration and lease are the shorter
//! of the two. With authentication and AES chosen, encryption and integrity
//! are YES whatever was negotiated (AES-GCM always does both).

use crate::ad::{int_attr, string_attr};
use classad::ClassAd;

/// What one side asks of a feature.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Requirement {
    Never,
    Optional,
    Preferred,
    Required,
}

impl Requirement {
    /// HTCondor reads only the first letter: R/Y/T required, P preferred,
    /// O optional, N/F never.
    pub fn parse(s: &str) -> Option<Requirement> {
        match s.trim().chars().next()?.to_ascii_uppercase() {
            'R' | 'Y' | 'T' => Some(Requirement::Required),
            'P' => Some(Requirement::Preferred),
            'O' => Some(Requirement::Optional),
            'N' | 'F' => Some(Requirement::Never),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Requirement::Never => "NEVER",
            Requirement::Optional => "OPTIONAL",
            Requirement::Preferred => "PREFERRED",
            Requirement::Required => "REQUIRED",
        }
    }
}

/// The two sides' answer for one feature: `Some(on)`, or `None` when they
/// cannot agree.
pub fn reconcile(client: Requirement, server: Requirement) -> Option<bool> {
    use Requirement::*;
    match (client, server) {
        (Required, Never) | (Never, Required) => None,
        (Required, _) | (_, Required) => Some(true),
        (Preferred, Never) | (Never, Preferred) => Some(false),
        (Preferred, _) | (_, Preferred) => Some(true),
        _ => Some(false),
    }
}

/// HTCondor's spellings of IDTOKENS all mean the method it calls TOKEN on
/// the wire.
pub fn canonical_method(m: &str) -> String {
    let m = m.trim();
    if ["TOKENS", "IDTOKENS", "IDTOKEN", "TOKEN"]
        .iter()
        .any(|t| t.eq_ignore_ascii_case(m))
    {
        "TOKEN".to_string()
    } else {
        m.to_ascii_uppercase()
    }
}

/// The methods both lists name, in the server's order.
pub fn common_methods(client: &str, server: &str) -> Vec<String> {
    let client: Vec<String> = split_list(client).map(canonical_method).collect();
    let mut out: Vec<String> = Vec::new();
    for s in split_list(server).map(canonical_method) {
        if client.contains(&s) && !out.contains(&s) {
            out.push(s);
        }
    }
    out
}

pub fn split_list(s: &str) -> impl Iterator<Item = &str> {
    s.split([',', ' ', '\t']).filter(|t| !t.is_empty())
}

/// What this side asks for on one kind of command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Policy {
    pub authentication: Requirement,
    pub encryption: Requirement,
    pub integrity: Requirement,
    /// Authentication methods in order of preference, HTCondor's names.
    pub auth_methods: Vec<String>,
    /// Crypto methods we offer (AES only: HTCondor's other ciphers are
    /// retired).
    pub crypto_methods: Vec<String>,
    /// Seconds a session lasts.
    pub session_duration: i64,
    /// Seconds a session may go unused.
    pub session_lease: i64,
}

/// The server's decision on a new session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    pub authentication: bool,
    /// Whether the client must authenticate (both ask, or either requires).
    pub auth_required: bool,
    pub encryption: bool,
    pub integrity: bool,
    pub auth_methods: Vec<String>,
    pub crypto_methods: Vec<String>,
    pub session_duration: i64,
    pub session_lease: Option<i64>,
}

/// Why a client and a server cannot agree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Disagreement {
    pub feature: &'static str,
    pub client: Requirement,
    pub server: Requirement,
}

impl std::fmt::Display for Disagreement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the client's {} is {} and this daemon's is {}",
            self.feature,
            self.client.as_str(),
            self.server.as_str()
        )
    }
}

/// A requirement attribute of the client's ad; missing or unreadable is
/// NEVER, as HTCondor takes it (an old peer that lacks a feature).
fn requirement(ad: &ClassAd, name: &str) -> Option<Requirement> {
    string_attr(ad, name).and_then(|s| Requirement::parse(&s))
}

impl Policy {
    /// Reconciles the client's policy ad with ours.
    pub fn decide(&self, client: &ClassAd) -> Result<Decision, Disagreement> {
        // 23.10+ clients send AuthenticationNew (which does not force
        // authentication when only encryption is wanted); older ones only
        // Authentication.
        let auth = requirement(client, "AuthenticationNew")
            .or_else(|| requirement(client, "Authentication"))
            .unwrap_or(Requirement::Never);
        let enc = requirement(client, "Encryption").unwrap_or(Requirement::Never);
        let int = requirement(client, "Integrity").unwrap_or(Requirement::Never);
        let one = |feature, c, s| {
            reconcile(c, s).ok_or(Disagreement {
                feature,
                client: c,
                server: s,
            })
        };
        let authentication = one("Authentication", auth, self.authentication)?;
        let mut encryption = one("Encryption", enc, self.encryption)?;
        let mut integrity = one("Integrity", int, self.integrity)?;
        let auth_methods = string_attr(client, "AuthMethods")
            .map(|c| common_methods(&c, &self.auth_methods.join(",")))
            .unwrap_or_default();
        let crypto_methods = string_attr(client, "CryptoMethods")
            .map(|c| common_methods(&c, &self.crypto_methods.join(",")))
            .unwrap_or_default();
        if authentication && crypto_methods.first().is_some_and(|m| m == "AES") {
            encryption = true;
            integrity = true;
        }
        let client_duration = string_attr(client, "SessionDuration")
            .and_then(|d| d.trim().parse::<i64>().ok())
            .unwrap_or(0);
        let session_lease = int_attr(client, "SessionLease").map(|c| {
            let s = self.session_lease;
            let (c, s) = (if c == 0 { s } else { c }, if s == 0 { c } else { s });
            c.min(s)
        });
        Ok(Decision {
            authentication,
            auth_required: auth == Requirement::Required
                || self.authentication == Requirement::Required,
            encryption,
            integrity,
            auth_methods,
            crypto_methods,
            session_duration: client_duration.min(self.session_duration),
            session_lease,
        })
    }
}

impl Decision {
    /// Whether the session needs a key (so, a key exchange).
    pub fn needs_key(&self) -> bool {
        self.encryption || self.integrity
    }

    /// The ad the server answers a new session's request with.
    pub fn reply_ad(&self, remote_version: &str, trust_domain: Option<&str>) -> ClassAd {
        let yes_no = |b: bool| if b { "YES" } else { "NO" };
        let mut ad = ClassAd::new();
        ad.insert_value("Authentication", yes_no(self.authentication));
        if self.authentication && !self.auth_required {
            ad.insert_value("AuthRequired", false);
        }
        ad.insert_value("Encryption", yes_no(self.encryption));
        ad.insert_value("Integrity", yes_no(self.integrity));
        if !self.auth_methods.is_empty() {
            ad.insert_value("AuthMethodsList", self.auth_methods.join(",").as_str());
            ad.insert_value("AuthMethods", self.auth_methods[0].as_str());
        }
        if !self.crypto_methods.is_empty() {
            let list = self.crypto_methods.join(",");
            ad.insert_value("CryptoMethods", list.as_str());
            ad.insert_value("CryptoMethodsList", list.as_str());
        }
        ad.insert_value(
            "SessionDuration",
            self.session_duration.to_string().as_str(),
        );
        if let Some(lease) = self.session_lease {
            ad.insert_value("SessionLease", lease);
        }
        ad.insert_value("Enact", "YES");
        ad.insert_value("RemoteVersion", remote_version);
        if let Some(td) = trust_domain {
            ad.insert_value("TrustDomain", td);
        }
        ad
    }
}

#[cfg(test)]
mod tests {
    use super::Requirement::*;
    use super::*;

    #[test]
    fn the_table_of_htcondor_s_secman() {
        let all = [Required, Preferred, Optional, Never];
        let want = [
            // client R
            [Some(true), Some(true), Some(true), None],
            // client P
            [Some(true), Some(true), Some(true), Some(false)],
            // client O
            [Some(true), Some(true), Some(false), Some(false)],
            // client N
            [None, Some(false), Some(false), Some(false)],
        ];
        for (i, c) in all.iter().enumerate() {
            for (j, s) in all.iter().enumerate() {
                assert_eq!(reconcile(*c, *s), want[i][j], "client {c:?} server {s:?}");
            }
        }
    }

    #[test]
    fn first_letters_and_token_spellings() {
        assert_eq!(Requirement::parse("yes"), Some(Required));
        assert_eq!(Requirement::parse("False"), Some(Never));
        assert_eq!(Requirement::parse("maybe"), None);
        assert_eq!(
            common_methods("FS, IDTOKENS, CLAIMTOBE", "TOKENS,SSL,FS"),
            vec!["TOKEN".to_string(), "FS".to_string()]
        );
    }

    fn ours() -> Policy {
        Policy {
            authentication: Optional,
            encryption: Optional,
            integrity: Optional,
            auth_methods: vec!["FS".into(), "TOKEN".into()],
            crypto_methods: vec!["AES".into()],
            session_duration: 3600,
            session_lease: 3600,
        }
    }

    #[test]
    fn the_recorded_client_with_no_configuration_gets_no_security() {
        // What the 25.14.1 bindings sent with an empty configuration.
        let client = ClassAd::parse(
            r#"[ Authentication = "OPTIONAL"; AuthenticationNew = "OPTIONAL"; Encryption = "OPTIONAL";
                 Integrity = "OPTIONAL"; AuthMethods = "CLAIMTOBE"; CryptoMethods = "AES,BLOWFISH,3DES";
                 SessionDuration = "60"; SessionLease = 3600 ]"#,
        )
        .unwrap();
        let d = ours().decide(&client).unwrap();
        assert!(!d.authentication && !d.encryption && !d.integrity);
        assert_eq!(d.crypto_methods, vec!["AES"]);
        assert!(d.auth_methods.is_empty());
        assert_eq!(d.session_duration, 60);
        assert_eq!(d.session_lease, Some(3600));
        let ad = d.reply_ad("$CondorVersion: 25.14.1 $", None);
        assert!(ad.contains("Enact"));
    }

    #[test]
    fn a_client_that_requires_encryption_gets_it_and_aes_turns_on_both() {
        let client = ClassAd::parse(
            r#"[ AuthenticationNew = "REQUIRED"; Encryption = "REQUIRED"; Integrity = "REQUIRED";
                 AuthMethods = "TOKEN,FS"; CryptoMethods = "AES" ]"#,
        )
        .unwrap();
        let mut p = ours();
        p.integrity = Never;
        let e = p.decide(&client).unwrap_err();
        assert_eq!(e.feature, "Integrity");
        p.integrity = Optional;
        let d = p.decide(&client).unwrap();
        assert!(d.authentication && d.auth_required && d.encryption && d.integrity);
        assert_eq!(d.auth_methods, vec!["FS", "TOKEN"]);
    }

    #[test]
    fn a_server_that_requires_authentication_refuses_a_client_that_never_does() {
        let client = ClassAd::parse(r#"[ Authentication = "NEVER" ]"#).unwrap();
        let mut p = ours();
        p.authentication = Required;
        let e = p.decide(&client).unwrap_err();
        assert_eq!(
            e.to_string(),
            "the client's Authentication is NEVER and this daemon's is REQUIRED"
        );
    }
}
