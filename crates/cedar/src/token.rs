//! IDTOKENS: HTCondor's TOKEN authentication method (bit 2048), both
//! sides, and the tokens themselves.
//!
//! A token is a JWT (`header.payload.signature`, HS256) that the pool
//! signs with a key only the pool's administrators can read. The client
//! proves that it holds a token the pool signed without ever sending the
//! signature: it sends `header.payload`; the server recomputes the
//! signature with its key; both derive a key from that signature (HKDF)
//! and exchange HMACs over random challenges (`docs/cedar/security.md`
//! §5, from `condor_auth_passwd.cpp`, "version 2"):
//!
//! ```text
//! T1 C→S  status, len(a), a, "header.payload", 256, ra
//! T2 S→C  status, len(a), a, len(b), b, 256, ra, 256, rb, 20, HMAC-SHA1(ka, a " " b \0 ra rb)
//! T3 C→S  status, len(a), a, 256, rb, 20, HMAC-SHA1(ka, a \0 rb)
//! ```
//!
//! All three messages are always exchanged, whatever the statuses: a side
//! that failed sends its message with status -1 and empty fields, so the
//! other side is never left waiting. The one failure the exchange has no
//! message for (the server finds T3's HMAC wrong after the client sent a
//! good-looking T3) closes the connection ([`crate::auth::Failure::Fatal`]).
//!
//! Pure here: the key derivations ([`jwt_key`], [`SigningKey::from_file_bytes`]),
//! building, parsing and verifying JWTs, the proof-of-possession HMACs.
//! I/O: [`server`] and [`client`] over a [`Sock`], [`KeyStore`] reading the
//! signing keys, [`find_tokens`] reading token files.
//!
//! This module must never write a cryptographic primitive itself (HMAC,
//! HKDF and SHA come from RustCrypto), never log or print a signature or
//! a key, and never take a token whose signature it could not check.

use std::path::{Path, PathBuf};

use base64::engine::general_purpose::{URL_SAFE, URL_SAFE_NO_PAD};
use base64::Engine;
use hkdf::Hkdf;
use hmac::{Hmac, Mac};
use serde_json::{Map, Value};
use sha2::{Sha256, Sha384, Sha512};

use crate::auth::{Authenticated, Failure};
use crate::sock::Sock;

/// Length of each side's random challenge (`AUTH_PW_KEY_LEN`).
pub const CHALLENGE: usize = 256;

/// The key name a token names when it was signed with the pool's key.
pub const POOL: &str = "POOL";

/// The longest token line we take (HTCondor's tokens are a few hundred
/// bytes; this bounds what a peer can make us hash).
pub const MAX_TOKEN: usize = 64 * 1024;

/// The longest name (`a`, `b`) in the exchange (`AUTH_PW_MAX_NAME_LEN`).
const MAX_NAME: usize = 1024;

/// HTCondor's fixed seed for the client's key `ka` (`setup_seed`): a
/// protocol constant, the salt's first 256 bytes.
const SEED_KA_HEX: [&str; 8] = [
    "3e4a502047d5f4e5dc7c69bb5210cbb6167add8084f7dd9ef3ad2cca71d283dd",
    "114a4fbb7b1ee90adfa862c44304de5473a3172f735c2cbb6e775b5d40d39fac",
    "e873182523f9252b623be0d4b167a3a8040cacfee9ee3da02c0abbf4d9d8b11f",
    "89004c943923ce5d9508bb3f04bc66a3fa20a13a416c5e6f4e0d3187d45fc783",
    "35c5e485db2c5a3717970cc26e7b6b9d1965b47a67df77a31f22f08a6c0ba570",
    "97a21a9ca7c60424f72739ab5cb915a4185bd109828e35e42108ab851c08a3df",
    "fde0e3b06f3d3938cdad6df6ef9a6f6dc2cb74f0228512eb7a3d6823010684b0",
    "15c12ac3014c4f9f938e384dad1e3bd745ff8c141fd70b465ba8af5d1b98b4b1",
];

fn seed_ka() -> Vec<u8> {
    let hex: String = SEED_KA_HEX.concat();
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("a hex constant"))
        .collect()
}

/// Why a token is not taken. The text names the cause for the daemon's
/// log and the tool's error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TokenError {
    /// Not `header.payload[.signature]` of base64url JSON objects.
    Malformed(String),
    /// The header names no key (HTCondor insists on an explicit `kid`).
    NoKeyId,
    /// The key the token names is not one this pool has.
    UnknownKey {
        kid: String,
        why: String,
    },
    /// The signature is not the one this pool's key makes.
    BadSignature {
        kid: String,
    },
    Expired {
        exp: i64,
        now: i64,
    },
    TooOld {
        iat: i64,
        max_age: i64,
    },
    WrongIssuer {
        iss: String,
        ours: String,
    },
    /// A claim HTCondor requires is missing.
    MissingClaim(&'static str),
    /// An algorithm other than HS256/384/512.
    Algorithm(String),
    /// A capability token (no `sub`): those need HTCondor's tokens
    /// database, which ferrocondor does not keep.
    Capability,
}

impl std::fmt::Display for TokenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TokenError::Malformed(why) => write!(f, "not a token: {why}"),
            TokenError::NoKeyId => f.write_str("the token names no signing key (kid)"),
            TokenError::UnknownKey { kid, why } => write!(
                f,
                "the token was signed by a key this pool does not have ({kid}: {why})"
            ),
            TokenError::BadSignature { kid } => write!(
                f,
                "the token was signed by a key this pool does not have (its signature is not the one this pool's key {kid} makes)"
            ),
            TokenError::Expired { exp, now } => {
                write!(f, "the token expired {} s ago (exp {exp})", now.saturating_sub(*exp))
            }
            TokenError::TooOld { iat, max_age } => write!(
                f,
                "the token was issued at {iat}, longer ago than SEC_TOKEN_MAX_AGE ({max_age} s)"
            ),
            TokenError::WrongIssuer { iss, ours } => write!(
                f,
                "the token was issued for another trust domain ({iss:?}; this pool's TRUST_DOMAIN is {ours:?})"
            ),
            TokenError::MissingClaim(c) => write!(f, "the token has no {c} claim"),
            TokenError::Algorithm(a) => write!(f, "the token's algorithm {a:?} is not HS256, HS384 or HS512"),
            TokenError::Capability => f.write_str(
                "the token is a capability (no sub), which needs the tokens database ferrocondor does not keep",
            ),
        }
    }
}

impl std::error::Error for TokenError {}

/// A pool signing key, as HTCondor uses it: the file's bytes unscrambled
/// (and, for the pool key, doubled).
#[derive(Clone)]
pub struct SigningKey(Vec<u8>);

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SigningKey(..)")
    }
}

/// HTCondor's "simple scramble" of key files: XOR with DE AD BE EF
/// repeating. Its own inverse. Not protection, only what the format is.
pub fn scramble(bytes: &[u8]) -> Vec<u8> {
    const PAD: [u8; 4] = [0xDE, 0xAD, 0xBE, 0xEF];
    bytes
        .iter()
        .enumerate()
        .map(|(i, b)| b ^ PAD[i % 4])
        .collect()
}

impl SigningKey {
    /// The key from a key file's bytes. `pool`: the file is the pool key
    /// (SEC_TOKEN_POOL_SIGNING_KEY_FILE), which HTCondor doubles so that
    /// tokens of pre-9.0 pools still verify; `is_password`:
    /// SEC_TOKEN_POOL_SIGNING_KEY_IS_PASSWORD, cut at the first NUL first.
    pub fn from_file_bytes(file: &[u8], pool: bool, is_password: bool) -> SigningKey {
        let file = if pool && is_password {
            match file.iter().position(|b| *b == 0) {
                Some(n) => &file[..n],
                None => file,
            }
        } else {
            file
        };
        let mut k = scramble(file);
        if pool && is_password {
            if let Some(n) = k.iter().position(|b| *b == 0) {
                k.truncate(n);
            }
        }
        if pool {
            let copy = k.clone();
            k.extend_from_slice(&copy);
        }
        SigningKey(k)
    }

    /// The HMAC key tokens are signed with:
    /// HKDF-SHA256(key, salt "htcondor", info "master jwt"), 32 bytes.
    pub fn jwt_key(&self) -> [u8; 32] {
        jwt_key(&self.0)
    }
}

/// See [`SigningKey::jwt_key`].
pub fn jwt_key(key: &[u8]) -> [u8; 32] {
    let hk = Hkdf::<Sha256>::new(Some(b"htcondor"), key);
    let mut out = [0u8; 32];
    hk.expand(b"master jwt", &mut out)
        .expect("32 bytes is a valid HKDF-SHA256 length");
    out
}

/// The signature algorithms HTCondor verifies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Alg {
    Hs256,
    Hs384,
    Hs512,
}

impl Alg {
    fn parse(s: &str) -> Result<Alg, TokenError> {
        match s {
            "HS256" => Ok(Alg::Hs256),
            "HS384" => Ok(Alg::Hs384),
            "HS512" => Ok(Alg::Hs512),
            other => Err(TokenError::Algorithm(other.to_string())),
        }
    }

    /// The signature of `input` (`header.payload`) under `jwt_key`.
    pub fn sign(self, jwt_key: &[u8], input: &[u8]) -> Vec<u8> {
        fn mac<M: Mac + hmac::digest::KeyInit>(k: &[u8], m: &[u8]) -> Vec<u8> {
            let mut h = <M as Mac>::new_from_slice(k).expect("HMAC takes any key length");
            h.update(m);
            h.finalize().into_bytes().to_vec()
        }
        match self {
            Alg::Hs256 => mac::<Hmac<Sha256>>(jwt_key, input),
            Alg::Hs384 => mac::<Hmac<Sha384>>(jwt_key, input),
            Alg::Hs512 => mac::<Hmac<Sha512>>(jwt_key, input),
        }
    }
}

/// A token's claims, as HTCondor reads them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Claims {
    pub iss: String,
    pub sub: Option<String>,
    pub iat: Option<i64>,
    pub exp: Option<i64>,
    pub jti: Option<String>,
    /// `scope`, space-separated (`condor:/READ condor:/WRITE`).
    pub scope: Option<String>,
}

impl Claims {
    /// The authorization levels the token is limited to (its
    /// `condor:/LEVEL` scopes), or `None` when it has none: HTCondor's
    /// `LimitAuthorization`.
    pub fn limits(&self) -> Option<Vec<String>> {
        let limits: Vec<String> = self
            .scope
            .as_deref()
            .unwrap_or("")
            .split_whitespace()
            .filter_map(|s| s.strip_prefix("condor:/"))
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect();
        (!limits.is_empty()).then_some(limits)
    }
}

/// A parsed token.
#[derive(Clone, Debug)]
pub struct Token {
    /// `header.payload`, exactly as written (what is signed and sent).
    pub signing_input: String,
    pub alg: Alg,
    /// The key name (`kid`).
    pub kid: String,
    pub claims: Claims,
    /// The raw signature, when the text had one.
    pub signature: Option<Vec<u8>>,
}

fn b64_decode(part: &str, what: &str) -> Result<Vec<u8>, TokenError> {
    URL_SAFE_NO_PAD
        .decode(part)
        .or_else(|_| URL_SAFE.decode(part))
        .map_err(|e| TokenError::Malformed(format!("its {what} is not base64url ({e})")))
}

fn json_object(part: &str, what: &str) -> Result<Map<String, Value>, TokenError> {
    let bytes = b64_decode(part, what)?;
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(TokenError::Malformed(format!(
            "its {what} is not a JSON object"
        ))),
        Err(e) => Err(TokenError::Malformed(format!(
            "its {what} is not JSON ({e})"
        ))),
    }
}

fn text_claim(m: &Map<String, Value>, name: &str) -> Option<String> {
    match m.get(name) {
        Some(Value::String(s)) => Some(s.clone()),
        _ => None,
    }
}

fn int_claim(m: &Map<String, Value>, name: &str) -> Result<Option<i64>, TokenError> {
    match m.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => n
            .as_i64()
            .or_else(|| n.as_f64().map(|f| f as i64))
            .map(Some)
            .ok_or_else(|| TokenError::Malformed(format!("its {name} is not a time"))),
        Some(_) => Err(TokenError::Malformed(format!("its {name} is not a number"))),
    }
}

impl Token {
    /// Parses `header.payload` or `header.payload.signature`. Checks the
    /// form only; [`Token::verify`] checks the rest.
    pub fn parse(text: &str) -> Result<Token, TokenError> {
        let text = text.trim();
        if text.len() > MAX_TOKEN {
            return Err(TokenError::Malformed(format!(
                "longer than {MAX_TOKEN} bytes"
            )));
        }
        let mut parts = text.split('.');
        let (Some(h), Some(p)) = (parts.next(), parts.next()) else {
            return Err(TokenError::Malformed(
                "no '.' between header and payload".into(),
            ));
        };
        let sig = parts.next();
        if parts.next().is_some() {
            return Err(TokenError::Malformed("more than three parts".into()));
        }
        let header = json_object(h, "header")?;
        let payload = json_object(p, "payload")?;
        let alg = Alg::parse(&text_claim(&header, "alg").unwrap_or_default())?;
        let kid = text_claim(&header, "kid").unwrap_or_default();
        let claims = Claims {
            iss: text_claim(&payload, "iss").unwrap_or_default(),
            sub: text_claim(&payload, "sub"),
            iat: int_claim(&payload, "iat")?,
            exp: int_claim(&payload, "exp")?,
            jti: text_claim(&payload, "jti"),
            scope: text_claim(&payload, "scope"),
        };
        let signature = match sig {
            Some(s) if !s.is_empty() => Some(b64_decode(s, "signature")?),
            _ => None,
        };
        Ok(Token {
            signing_input: format!("{h}.{p}"),
            alg,
            kid,
            claims,
            signature,
        })
    }

    /// The user the token names (`sub`).
    pub fn subject(&self) -> Option<&str> {
        self.claims.sub.as_deref()
    }

    /// The claims HTCondor's server checks (`analyze_token`), and ours:
    /// a kid, an issuer equal to `trust_domain` (when given), a jti, a
    /// subject, not expired, not older than `max_age`.
    pub fn check_claims(
        &self,
        now: i64,
        trust_domain: Option<&str>,
        max_age: Option<i64>,
    ) -> Result<(), TokenError> {
        if self.kid.is_empty() {
            return Err(TokenError::NoKeyId);
        }
        if self.claims.iss.is_empty() {
            return Err(TokenError::MissingClaim("iss"));
        }
        if let Some(ours) = trust_domain {
            if self.claims.iss != ours {
                return Err(TokenError::WrongIssuer {
                    iss: self.claims.iss.clone(),
                    ours: ours.to_string(),
                });
            }
        }
        if self.claims.jti.as_deref().unwrap_or("").is_empty() {
            return Err(TokenError::MissingClaim("jti"));
        }
        if self.claims.sub.as_deref().unwrap_or("").is_empty() {
            return Err(TokenError::Capability);
        }
        if let Some(exp) = self.claims.exp {
            if now > exp {
                return Err(TokenError::Expired { exp, now });
            }
        }
        if let (Some(iat), Some(max_age)) = (self.claims.iat, max_age) {
            if max_age >= 0 && now.saturating_sub(iat) > max_age {
                return Err(TokenError::TooOld { iat, max_age });
            }
        }
        Ok(())
    }

    /// The signature this pool's key makes for this token.
    pub fn expected_signature(&self, key: &SigningKey) -> Vec<u8> {
        self.alg.sign(&key.jwt_key(), self.signing_input.as_bytes())
    }

    /// The whole check of a full token (with its signature), as a tool or
    /// a test does it: claims, then signature.
    pub fn verify(
        &self,
        key: &SigningKey,
        now: i64,
        trust_domain: Option<&str>,
        max_age: Option<i64>,
    ) -> Result<(), TokenError> {
        self.check_claims(now, trust_domain, max_age)?;
        let want = self.expected_signature(key);
        match &self.signature {
            Some(sig) if ct_eq(sig, &want) => Ok(()),
            _ => Err(TokenError::BadSignature {
                kid: self.kid.clone(),
            }),
        }
    }
}

/// Compares two MACs in a time that does not depend on where they
/// differ (only on their length, which is public).
fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// What `condor_token_create` puts in a token.
#[derive(Clone, Debug)]
pub struct NewToken<'a> {
    pub subject: &'a str,
    pub issuer: &'a str,
    pub kid: &'a str,
    pub now: i64,
    /// Seconds until it expires (`-lifetime`); none: it never does.
    pub lifetime: Option<i64>,
    /// `-authz` levels (`READ`, `WRITE`, ...).
    pub authz: &'a [String],
}

/// Signs a new token: the same header and claims `condor_token_create`
/// writes (jwt-cpp's order: claims sorted by name), HS256.
pub fn create(t: &NewToken<'_>, key: &SigningKey) -> Result<String, String> {
    if t.issuer.is_empty() || t.issuer.contains([',', ' ', '\t']) {
        return Err(format!(
            "the trust domain {:?} may not be empty or contain spaces or commas",
            t.issuer
        ));
    }
    if t.subject.is_empty() {
        return Err("a token needs an identity (user@domain)".into());
    }
    let mut header = Map::new();
    header.insert("alg".into(), "HS256".into());
    header.insert("kid".into(), t.kid.into());
    let mut jti = [0u8; 16];
    getrandom::fill(&mut jti).map_err(|e| format!("the system's random source: {e}"))?;
    let jti: String = jti.iter().map(|b| format!("{b:02x}")).collect();
    let mut claims = Map::new();
    if let Some(l) = t.lifetime {
        claims.insert("exp".into(), (t.now + l).into());
    }
    claims.insert("iat".into(), t.now.into());
    claims.insert("iss".into(), t.issuer.into());
    claims.insert("jti".into(), jti.into());
    if !t.authz.is_empty() {
        let scope = t
            .authz
            .iter()
            .map(|a| format!("condor:/{a}"))
            .collect::<Vec<_>>()
            .join(" ");
        claims.insert("scope".into(), scope.into());
    }
    claims.insert("sub".into(), t.subject.into());
    let enc = |m: &Map<String, Value>| {
        URL_SAFE_NO_PAD.encode(serde_json::to_vec(m).expect("a JSON object serializes"))
    };
    let input = format!("{}.{}", enc(&header), enc(&claims));
    let sig = Alg::Hs256.sign(&key.jwt_key(), input.as_bytes());
    Ok(format!("{input}.{}", URL_SAFE_NO_PAD.encode(sig)))
}

/// `ka`: the key both sides derive from the token's signature:
/// HKDF-SHA256(signature, salt SEED_KA ‖ header.payload, info "master ka").
pub fn ka(signature: &[u8], signing_input: &str) -> [u8; 32] {
    let mut salt = seed_ka();
    salt.extend_from_slice(signing_input.as_bytes());
    let hk = Hkdf::<Sha256>::new(Some(&salt), signature);
    let mut out = [0u8; 32];
    hk.expand(b"master ka", &mut out)
        .expect("32 bytes is a valid HKDF-SHA256 length");
    out
}

fn hmac_sha1(key: &[u8], parts: &[&[u8]]) -> [u8; 20] {
    let mut m = <Hmac<sha1::Sha1> as Mac>::new_from_slice(key).expect("HMAC takes any key");
    for p in parts {
        m.update(p);
    }
    m.finalize().into_bytes().into()
}

/// The server's proof (T2): HMAC-SHA1(ka, a ‖ " " ‖ b ‖ 0 ‖ ra ‖ rb).
pub fn hkt(ka: &[u8], a: &str, b: &str, ra: &[u8], rb: &[u8]) -> [u8; 20] {
    hmac_sha1(ka, &[a.as_bytes(), b" ", b.as_bytes(), &[0], ra, rb])
}

/// The client's proof (T3): HMAC-SHA1(ka, a ‖ 0 ‖ rb).
pub fn hk(ka: &[u8], a: &str, rb: &[u8]) -> [u8; 20] {
    hmac_sha1(ka, &[a.as_bytes(), &[0], rb])
}

/// Where a pool's signing keys are, and how to read them.
#[derive(Clone, Debug, Default)]
pub struct KeyStore {
    /// SEC_TOKEN_POOL_SIGNING_KEY_FILE: the key named POOL.
    pub pool_key: Option<PathBuf>,
    /// SEC_PASSWORD_DIRECTORY: every other key, a file per name.
    pub password_dir: Option<PathBuf>,
    /// SEC_TOKEN_POOL_SIGNING_KEY_IS_PASSWORD.
    pub pool_key_is_password: bool,
}

/// The most bytes a key file may have (HTCondor's are 64).
const MAX_KEY_FILE: u64 = 64 * 1024;

impl KeyStore {
    /// The file that holds key `kid`, if the name is one.
    pub fn path(&self, kid: &str) -> Option<PathBuf> {
        if kid.is_empty() || kid == POOL {
            return self.pool_key.clone();
        }
        // A key name is a file name in the directory, never a path.
        if kid.contains(['/', '\0']) || kid == "." || kid == ".." {
            return None;
        }
        self.password_dir.as_ref().map(|d| d.join(kid))
    }

    /// Key `kid`, read securely: a regular file, not writable by group or
    /// others, owned by this process's user or root.
    pub fn load(&self, kid: &str) -> Result<SigningKey, TokenError> {
        let unknown = |why: String| TokenError::UnknownKey {
            kid: kid.to_string(),
            why,
        };
        let path = self
            .path(kid)
            .ok_or_else(|| unknown("no file is configured for it".into()))?;
        let bytes = read_secure(&path, MAX_KEY_FILE).map_err(unknown)?;
        if bytes.is_empty() {
            return Err(unknown(format!("{} is empty", path.display())));
        }
        let pool = kid.is_empty() || kid == POOL;
        Ok(SigningKey::from_file_bytes(
            &bytes,
            pool,
            pool && self.pool_key_is_password,
        ))
    }

    /// The names of the keys this process can read (the server's
    /// `IssuerKeys`), sorted, POOL first.
    pub fn names(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.pool_key.as_ref().is_some_and(|p| readable(p)) {
            out.push(POOL.to_string());
        }
        if let Some(dir) = &self.password_dir {
            let mut names: Vec<String> = std::fs::read_dir(dir)
                .into_iter()
                .flatten()
                .flatten()
                .filter_map(|e| e.file_name().to_str().map(str::to_string))
                .filter(|n| !n.starts_with('.') && n != POOL)
                .filter(|n| readable(&dir.join(n)))
                .collect();
            names.sort();
            out.extend(names);
        }
        out
    }
}

fn readable(p: &Path) -> bool {
    std::fs::File::open(p)
        .and_then(|f| f.metadata())
        .is_ok_and(|m| m.is_file())
}

/// A file's bytes, if it is a regular file owned by us or root that only
/// its owner can read or write, not reached through a symbolic link
/// (HTCondor's `read_secure_file`).
pub fn read_secure(path: &Path, max: u64) -> Result<Vec<u8>, String> {
    use std::io::Read;
    use std::os::unix::fs::MetadataExt;
    use std::os::unix::fs::OpenOptionsExt;
    // Not through a symbolic link: a link in a directory others could
    // write would make any readable file a key.
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let m = f
        .metadata()
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if !m.is_file() {
        return Err(format!("{} is not a regular file", path.display()));
    }
    // SAFETY: geteuid cannot fail.
    let me = unsafe { libc::geteuid() };
    if m.uid() != me && m.uid() != 0 {
        return Err(format!(
            "{} is owned by uid {}, not by this user or root",
            path.display(),
            m.uid()
        ));
    }
    // A key others may read is anyone's key (HTCondor refuses it too).
    if m.mode() & 0o077 != 0 {
        return Err(format!(
            "{} may be read or written by others than its owner (mode {:o}; make it 0600)",
            path.display(),
            m.mode() & 0o7777
        ));
    }
    if m.len() > max {
        return Err(format!("{} is larger than {max} bytes", path.display()));
    }
    let mut out = Vec::new();
    f.take(max)
        .read_to_end(&mut out)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(out)
}

/// What the server side needs to know.
#[derive(Clone, Debug)]
pub struct ServerConfig<'a> {
    pub keys: &'a KeyStore,
    /// TRUST_DOMAIN: a token issued for another is refused.
    pub trust_domain: &'a str,
    /// SEC_TOKEN_MAX_AGE.
    pub max_age: Option<i64>,
    /// The name the server gives as `b` (HTCondor's 23.9+ servers say
    /// `condor@password`; the client only checks it is there).
    pub name: &'a str,
    pub now: i64,
}

fn random(n: usize) -> Vec<u8> {
    let mut v = vec![0u8; n];
    getrandom::fill(&mut v).expect("the system's random source");
    v
}

/// Reads a length-prefixed byte run no longer than `max`.
fn get_run(d: &mut crate::Decoder<'_>, max: usize, what: &'static str) -> Result<Vec<u8>, Failure> {
    let at = d.position();
    let n = d.get_int()?;
    if !(0..=max as i64).contains(&n) {
        return Err(Failure::Sock(crate::SockError::Decode(
            crate::DecodeError::Invalid {
                what,
                at,
                detail: format!("a length of {n}, not 0 to {max}"),
            },
        )));
    }
    let mut out = Vec::with_capacity(n as usize);
    for _ in 0..n {
        out.push(d.get_char()?);
    }
    Ok(out)
}

fn bounded(s: String, max: usize, what: &str) -> Result<String, Failure> {
    if s.len() > max {
        Err(Failure::Refused(format!(
            "the client's {what} is longer than {max} bytes"
        )))
    } else {
        Ok(s)
    }
}

/// T2 with an error status: every field empty.
fn send_t2_error(sock: &mut Sock) -> Result<(), Failure> {
    let mut e = sock.encoder();
    e.put_int(-1).put_int(0).put_str("").put_int(0).put_str("");
    e.put_int(0).put_int(0).put_int(0);
    sock.send(&e)?;
    Ok(())
}

/// T3 as read by the server.
struct T3 {
    status: i64,
    a: String,
    rb: Vec<u8>,
    hk: Vec<u8>,
}

fn recv_t3(sock: &mut Sock) -> Result<T3, Failure> {
    let msg = sock.recv()?;
    let mut d = sock.decoder(&msg);
    let status = d.get_int()?;
    let _a_len = d.get_int()?;
    let a = bounded(d.get_str()?, MAX_NAME, "name")?;
    let rb = get_run(&mut d, CHALLENGE, "the echoed challenge")?;
    let hk = get_run(&mut d, 64, "the client's proof")?;
    d.finish()?;
    Ok(T3 { status, a, rb, hk })
}

/// The server's side of TOKEN: the client's `user@domain`, with the
/// token's authorization limits.
pub fn server(sock: &mut Sock, cfg: &ServerConfig<'_>) -> Result<Authenticated, Failure> {
    // T1.
    let msg = sock.recv()?;
    let mut d = sock.decoder(&msg);
    let status = d.get_int()?;
    let _a_len = d.get_int()?;
    let a = bounded(d.get_str()?, MAX_NAME, "name")?;
    let token_text = bounded(d.get_str()?, MAX_TOKEN, "token")?;
    let ra = get_run(&mut d, CHALLENGE, "the client's challenge")?;
    d.finish()?;
    // Everything that can be judged from T1; a failure is told in T2
    // (status -1), after which the client still sends its T3.
    let checked = (|| -> Result<(Token, SigningKey), String> {
        if status != 0 {
            return Err("the client has no token for this pool".into());
        }
        if token_text.is_empty() {
            return Err("the client sent no token".into());
        }
        if ra.len() != CHALLENGE {
            return Err(format!(
                "the client's challenge is {} bytes, not {CHALLENGE}",
                ra.len()
            ));
        }
        let token = Token::parse(&token_text).map_err(|e| e.to_string())?;
        token
            .check_claims(cfg.now, Some(cfg.trust_domain), cfg.max_age)
            .map_err(|e| e.to_string())?;
        // HTCondor checks this at T3; it can be known now.
        if token.subject() != Some(a.as_str()) {
            return Err(format!(
                "the client claims to be {a:?} but its token is for {:?}",
                token.subject().unwrap_or("")
            ));
        }
        let key = cfg.keys.load(&token.kid).map_err(|e| e.to_string())?;
        Ok((token, key))
    })();
    let (token, key) = match checked {
        Ok(v) => v,
        Err(why) => {
            send_t2_error(sock)?;
            // The client's T3 (status -1) follows; then it tries its next
            // method.
            let _ = recv_t3(sock)?;
            return Err(Failure::Refused(why));
        }
    };
    let signature = token.expected_signature(&key);
    let ka = ka(&signature, &token.signing_input);
    let rb = random(CHALLENGE);
    let proof = hkt(&ka, &a, cfg.name, &ra, &rb);
    let mut e = sock.encoder();
    e.put_int(0)
        .put_int(a.len() as i64)
        .put_str(&a)
        .put_int(cfg.name.len() as i64)
        .put_str(cfg.name)
        .put_int(CHALLENGE as i64)
        .put_bytes(&ra)
        .put_int(CHALLENGE as i64)
        .put_bytes(&rb)
        .put_int(proof.len() as i64)
        .put_bytes(&proof);
    sock.send(&e)?;
    // T3.
    let t3 = recv_t3(sock)?;
    if t3.status != 0 {
        // The client found our proof wrong: our key does not make the
        // token's signature.
        return Err(Failure::Refused(
            TokenError::BadSignature {
                kid: token.kid.clone(),
            }
            .to_string(),
        ));
    }
    let want = hk(&ka, &a, &rb);
    if t3.a != a || !ct_eq(&t3.rb, &rb) || !ct_eq(&t3.hk, &want) {
        // The client believes it succeeded and waits for hasKey: only a
        // closed connection tells it otherwise (HTCondor leaves it to time
        // out).
        return Err(Failure::Fatal(format!(
            "the client's proof of its token does not match ({})",
            TokenError::BadSignature {
                kid: token.kid.clone()
            }
        )));
    }
    Ok(Authenticated {
        user: a,
        limits: token.claims.limits(),
    })
}

/// A token the client may send.
#[derive(Clone, Debug)]
pub struct Candidate {
    pub token: Token,
    /// Where it came from (for errors): a file, or "given".
    pub source: String,
}

/// The first candidate the server would take: issued by its trust
/// domain (when it names one) and signed with a key it lists (when it
/// lists them), with a subject and a signature.
pub fn choose<'a>(
    candidates: &'a [Candidate],
    trust_domain: Option<&str>,
    issuer_keys: Option<&[String]>,
) -> Option<&'a Candidate> {
    candidates.iter().find(|c| {
        let t = &c.token;
        !t.kid.is_empty()
            && t.signature.is_some()
            && t.subject().is_some_and(|s| !s.is_empty())
            && trust_domain.is_none_or(|td| td.is_empty() || t.claims.iss == td)
            && issuer_keys.is_none_or(|ks| ks.is_empty() || ks.contains(&t.kid))
    })
}

/// Tokens in `dir`, as HTCondor's client reads them: files in name order
/// (`<subsys>_auto_generated_token` first), each passing the secure-file
/// check, one JWT per line, `#` comments. Unreadable files are skipped.
pub fn find_tokens(dir: &Path, subsystem: Option<&str>) -> Vec<Candidate> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .filter(|n| !n.starts_with('.') && !n.ends_with('~'))
        .collect();
    names.sort();
    if let Some(sub) = subsystem {
        let auto = format!("{sub}_auto_generated_token");
        if let Some(i) = names.iter().position(|n| *n == auto) {
            let n = names.remove(i);
            names.insert(0, n);
        }
    }
    let mut out = Vec::new();
    for n in names {
        let path = dir.join(&n);
        let Ok(bytes) = read_secure(&path, 1 << 20) else {
            continue;
        };
        out.extend(tokens_in(
            &String::from_utf8_lossy(&bytes),
            &path.display().to_string(),
        ));
    }
    out
}

/// The tokens in a file's text.
pub fn tokens_in(text: &str, source: &str) -> Vec<Candidate> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter_map(|l| Token::parse(l).ok())
        .map(|token| Candidate {
            token,
            source: source.to_string(),
        })
        .collect()
}

/// Why the client side failed, and whether the exchange ended cleanly
/// (so the next method may be tried).
pub fn client(sock: &mut Sock, chosen: Option<&Candidate>) -> Result<String, Failure> {
    let ra = random(CHALLENGE);
    let usable = chosen.and_then(|c| {
        let sub = c.token.subject()?.to_string();
        let sig = c.token.signature.clone()?;
        Some((c, sub, sig))
    });
    // T1.
    let mut e = sock.encoder();
    match &usable {
        Some((c, sub, _)) => {
            e.put_int(0)
                .put_int(sub.len() as i64)
                .put_str(sub)
                .put_str(&c.token.signing_input)
                .put_int(CHALLENGE as i64)
                .put_bytes(&ra);
        }
        None => {
            e.put_int(-1).put_int(0).put_str("").put_str("").put_int(0);
        }
    }
    sock.send(&e)?;
    // T2.
    let msg = sock.recv()?;
    let mut d = sock.decoder(&msg);
    let status = d.get_int()?;
    let _ = d.get_int()?;
    let a = bounded(d.get_str()?, MAX_NAME, "echoed name")?;
    let _ = d.get_int()?;
    let b = bounded(d.get_str()?, MAX_NAME, "server's name")?;
    let ra_echo = get_run(&mut d, CHALLENGE, "the echoed challenge")?;
    let rb = get_run(&mut d, CHALLENGE, "the server's challenge")?;
    let proof = get_run(&mut d, 64, "the server's proof")?;
    d.finish()?;
    let verdict: Result<(String, [u8; 32]), String> = match &usable {
        None => Err(match chosen {
            None => "no token for this server (none issued by its trust domain with a key it has)".into(),
            Some(c) => format!("the token from {} has no subject or signature", c.source),
        }),
        Some(_) if status != 0 => Err(
            "the server refused the token (expired, for another trust domain, signed by a key it does not have, or not for this user)"
                .into(),
        ),
        Some((c, sub, sig)) => {
            let ka = ka(sig, &c.token.signing_input);
            if a != *sub || b.is_empty() || ra_echo != ra || rb.len() != CHALLENGE {
                Err("the server's answer does not echo the exchange".into())
            } else if !ct_eq(&proof, &hkt(&ka, sub, &b, &ra, &rb)) {
                Err("the server could not prove it has the key that signed the token".into())
            } else {
                Ok((sub.clone(), ka))
            }
        }
    };
    // T3, always.
    let mut e = sock.encoder();
    match &verdict {
        Ok((sub, ka)) => {
            let p = hk(ka, sub, &rb);
            e.put_int(0)
                .put_int(sub.len() as i64)
                .put_str(sub)
                .put_int(CHALLENGE as i64)
                .put_bytes(&rb)
                .put_int(p.len() as i64)
                .put_bytes(&p);
        }
        Err(_) => {
            e.put_int(-1).put_int(0).put_str("").put_int(0).put_int(0);
        }
    }
    sock.send(&e)?;
    match verdict {
        Ok((sub, _)) => Ok(sub),
        Err(why) => Err(Failure::Refused(why)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> SigningKey {
        SigningKey::from_file_bytes(&[7u8; 64], true, false)
    }

    fn make(lifetime: Option<i64>, issuer: &str, authz: &[String]) -> String {
        create(
            &NewToken {
                subject: "alice@vm",
                issuer,
                kid: POOL,
                now: 1_000,
                lifetime,
                authz,
            },
            &key(),
        )
        .unwrap()
    }

    #[test]
    fn the_seed_is_htcondor_s() {
        use sha2::Digest;
        let s = seed_ka();
        assert_eq!(s.len(), 256);
        let h: String = Sha256::digest(&s)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(
            h,
            "54029671f8b74888ae45fa5f5aa73755986b977fd44645dfe54d8fb646f69633"
        );
    }

    #[test]
    fn a_token_round_trips_and_verifies() {
        let t = make(Some(60), "vm", &["READ".into(), "WRITE".into()]);
        let p = Token::parse(&t).unwrap();
        assert_eq!(p.kid, "POOL");
        assert_eq!(p.subject(), Some("alice@vm"));
        assert_eq!(p.claims.exp, Some(1_060));
        assert_eq!(p.claims.jti.as_ref().unwrap().len(), 32);
        assert_eq!(p.claims.limits(), Some(vec!["READ".into(), "WRITE".into()]));
        p.verify(&key(), 1_030, Some("vm"), None).unwrap();
        // The header and claims in jwt-cpp's order.
        let hdr = URL_SAFE_NO_PAD
            .decode(t.split('.').next().unwrap())
            .unwrap();
        assert_eq!(hdr, br#"{"alg":"HS256","kid":"POOL"}"#);
    }

    #[test]
    fn refusals_name_their_cause() {
        let t = Token::parse(&make(Some(60), "vm", &[])).unwrap();
        let other = SigningKey::from_file_bytes(&[8u8; 64], true, false);
        let e = t.verify(&other, 1_000, Some("vm"), None).unwrap_err();
        assert!(
            e.to_string()
                .contains("signed by a key this pool does not have"),
            "{e}"
        );
        let e = t.verify(&key(), 2_000, Some("vm"), None).unwrap_err();
        assert!(e.to_string().contains("expired"), "{e}");
        let e = t
            .verify(&key(), 1_000, Some("elsewhere"), None)
            .unwrap_err();
        assert!(
            e.to_string().contains("issued for another trust domain"),
            "{e}"
        );
        let e = t.verify(&key(), 1_000, Some("vm"), Some(-1)).map(|_| ());
        assert!(e.is_ok(), "a negative SEC_TOKEN_MAX_AGE is no limit");
        let e = t.verify(&key(), 1_050, Some("vm"), Some(10)).unwrap_err();
        assert!(matches!(e, TokenError::TooOld { .. }));
        // A tampered payload no longer matches its signature.
        let mut parts: Vec<String> = make(None, "vm", &[]).split('.').map(String::from).collect();
        parts[1] = URL_SAFE_NO_PAD.encode(br#"{"iss":"vm","jti":"x","sub":"root@vm"}"#);
        let forged = Token::parse(&parts.join(".")).unwrap();
        assert!(matches!(
            forged.verify(&key(), 1_000, Some("vm"), None),
            Err(TokenError::BadSignature { .. })
        ));
        assert!(matches!(Token::parse("abc"), Err(TokenError::Malformed(_))));
    }

    #[test]
    fn key_derivation_follows_htcondor() {
        // The pool key is unscrambled and doubled; other keys only
        // unscrambled.
        let file = [0xDE, 0xAD, 0xBE, 0xEF, 0x00];
        let k = SigningKey::from_file_bytes(&file, true, false);
        assert_eq!(k.0, vec![0, 0, 0, 0, 0xDE, 0, 0, 0, 0, 0xDE]);
        let k = SigningKey::from_file_bytes(&file, false, false);
        assert_eq!(k.0, vec![0, 0, 0, 0, 0xDE]);
        // As a password: cut at the first NUL of the file, then of the
        // unscrambled bytes.
        let k = SigningKey::from_file_bytes(&[0x61, 0x62, 0, 0x63], true, true);
        assert_eq!(k.0, scramble(b"ab").repeat(2));
    }

    #[test]
    fn both_sides_compute_the_same_proofs() {
        let t = Token::parse(&make(None, "vm", &[])).unwrap();
        let from_client = ka(t.signature.as_ref().unwrap(), &t.signing_input);
        let from_server = ka(&t.expected_signature(&key()), &t.signing_input);
        assert_eq!(from_client, from_server);
        let (ra, rb) = ([1u8; 256], [2u8; 256]);
        assert_eq!(
            hkt(&from_client, "alice@vm", "condor@password", &ra, &rb),
            hkt(&from_server, "alice@vm", "condor@password", &ra, &rb)
        );
        assert_ne!(
            hk(&from_client, "alice@vm", &rb),
            hk(&from_client, "bob@vm", &rb)
        );
    }

    /// A token minted by an independent implementation (Python's `hmac`
    /// and `hashlib`, following HTCondor's derivation: unscramble, double,
    /// HKDF "master jwt", HS256) with the key file `00 01 .. 3f`. The
    /// bindings have no token API, so this stands in for one made by
    /// HTCondor's own library.
    #[test]
    fn a_token_minted_elsewhere_verifies() {
        let t = "eyJhbGciOiJIUzI1NiIsImtpZCI6IlBPT0wifQ.eyJpYXQiOjE3MDAwMDAwMDAsImlzcyI6InBvb2wuZXhhbXBsZS5vcmciLCJqdGkiOiIwMTIzNDU2Nzg5YWJjZGVmMDEyMzQ1Njc4OWFiY2RlZiIsInNjb3BlIjoiY29uZG9yOi9SRUFEIiwic3ViIjoiYm9iQHBvb2wuZXhhbXBsZS5vcmcifQ.7tOVIDajStOPoDhPPzZ8UIADBERI007D6SCge5dyXxc";
        let file: Vec<u8> = (0u8..64).collect();
        let key = SigningKey::from_file_bytes(&file, true, false);
        let tok = Token::parse(t).unwrap();
        tok.verify(&key, 1_700_000_100, Some("pool.example.org"), None)
            .unwrap();
        assert_eq!(tok.subject(), Some("bob@pool.example.org"));
        assert_eq!(tok.claims.limits(), Some(vec!["READ".to_string()]));
        // Read as a non-pool key (not doubled), the signature differs.
        let single = SigningKey::from_file_bytes(&file, false, false);
        assert!(tok.verify(&single, 1_700_000_100, None, None).is_err());
    }

    #[test]
    fn the_client_picks_a_token_the_server_takes() {
        let a = tokens_in(
            &format!(
                "# a comment\n{}\n{}\n",
                make(None, "other", &[]),
                make(None, "vm", &[])
            ),
            "file",
        );
        assert_eq!(a.len(), 2);
        assert_eq!(choose(&a, Some("vm"), None).unwrap().token.claims.iss, "vm");
        assert!(choose(&a, Some("vm"), Some(&["SECOND".to_string()])).is_none());
        assert_eq!(choose(&a, None, None).unwrap().token.claims.iss, "other");
    }

    #[test]
    fn a_key_file_others_may_read_or_a_link_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("fc-key-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let key = dir.join("POOL");
        std::fs::write(&key, [7u8; 64]).unwrap();
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = read_secure(&key, 1024).unwrap_err();
        assert!(e.contains("make it 0600"), "{e}");
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(read_secure(&key, 1024).unwrap().len(), 64);
        let link = dir.join("LINK");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&key, &link).unwrap();
        assert!(read_secure(&link, 1024).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
