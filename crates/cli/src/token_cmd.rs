//! `ferrocondor token create|create-key|list|fetch`: IDTOKENS for an
//! administrator and a user, as HTCondor's condor_token_create,
//! condor_token_list and condor_token_fetch.
//!
//! The signing keys and the settings come from the same place the
//! daemons take them ([`cedar::auth::Settings`]): the configuration (read
//! as the TOOL subsystem), and, where it names none, the pool's state
//! directory (`<state>/passwords.d/POOL`). The tokens themselves are
//! [`cedar::token`]'s. This module never prints a signing key, and never
//! makes one unless told to (`create-key`).

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use base64::Engine;
use cedar::auth::Settings;
use cedar::token::{self, NewToken};

use crate::args::{TokenCommand, TokenCreateArgs, TokenFetchArgs};
use crate::errors::{Error, Outcome};

/// What the commands read from the configuration.
struct Context {
    settings: Settings,
    /// SEC_TOKEN_DIRECTORY, else ~/.condor/tokens.d.
    token_dir: PathBuf,
    /// How `fetch` talks to the pool (the client's security settings),
    /// and where: COLLECTOR_HOST, else the pool's address file.
    client: cedar::client::ClientOptions,
    collector: Option<String>,
    state: PathBuf,
}

fn context(state: Option<&Path>) -> Result<Context, Error> {
    let config = crate::system::ToolConfig::load()?;
    let get = |n: &str| config.get(n);
    let hostname = get("FULL_HOSTNAME").unwrap_or_else(|| "localhost".into());
    let state = crate::jobview::state_dir(state);
    let settings = Settings::from_lookup(&get, &hostname).with_state_dir(&state);
    let client = cedar::client::ClientOptions::from_lookup(&get, &hostname);
    let collector = get("COLLECTOR_HOST");
    let token_dir = get("SEC_TOKEN_DIRECTORY")
        .map(PathBuf::from)
        .unwrap_or_else(|| home().join(".condor/tokens.d"));
    Ok(Context {
        settings,
        token_dir,
        client,
        collector,
        state,
    })
}

fn home() -> PathBuf {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map_or_else(|| PathBuf::from("/"), PathBuf::from)
}

pub fn run(command: &TokenCommand, now: i64, out: &mut dyn Write) -> Result<Outcome, Error> {
    match command {
        TokenCommand::Create(a) => create(a, now, out),
        TokenCommand::CreateKey { key, state } => create_key(key.as_deref(), state.as_deref(), out),
        TokenCommand::List { dir } => list(dir.as_deref(), out),
        TokenCommand::Fetch(a) => fetch(a, out),
    }
}

fn create(a: &TokenCreateArgs, now: i64, out: &mut dyn Write) -> Result<Outcome, Error> {
    let ctx = context(a.state.as_deref())?;
    let kid = a.key.as_deref().unwrap_or(token::POOL);
    if a.token.as_deref().is_some_and(|t| t.contains('/')) {
        return Err(Error::Usage(
            "-token takes a file name in the token directory, not a path (use -file PATH)".into(),
        ));
    }
    if a.lifetime.is_some_and(|l| l < 0) {
        return Err(Error::Usage(
            "-lifetime takes a number of seconds, 0 or more".into(),
        ));
    }
    if !a.identity.contains('@') {
        return Err(Error::Usage(format!(
            "-identity {:?}: a token names a user as user@domain",
            a.identity
        )));
    }
    for level in &a.authz {
        if cedar::server::Level::from_name(level).is_none() {
            return Err(Error::Usage(format!(
                "-authz {level:?} is not an authorization level (READ, WRITE, ADMINISTRATOR, DAEMON, NEGOTIATOR, ADVERTISE_STARTD, ADVERTISE_SCHEDD, ADVERTISE_MASTER, CONFIG)"
            )));
        }
    }
    let keys = ctx.settings.keys();
    let path = keys.path(kid).ok_or_else(|| {
        Error::Input(format!(
            "{kid:?} is not a key name (a file name in SEC_PASSWORD_DIRECTORY)"
        ))
    })?;
    let key = match keys.load(kid) {
        Ok(k) => k,
        Err(e) => {
            return Err(Error::Input(match std::fs::metadata(&path) {
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => format!(
                    "there is no signing key {kid} at {}: make one with `ferrocondor token create-key{}` \
                     (HTCondor makes the pool key when it is installed)",
                    path.display(),
                    if kid == token::POOL { String::new() } else { format!(" -key {kid}") }
                ),
                Err(err) if err.kind() == std::io::ErrorKind::PermissionDenied => format!(
                    "only root or the pool's owner may sign tokens: {} cannot be read by this user",
                    path.display()
                ),
                _ => format!("cannot sign with key {kid}: {e}"),
            }))
        }
    };
    let authz: Vec<String> = a.authz.iter().map(|l| l.to_ascii_uppercase()).collect();
    let jwt = token::create(
        &NewToken {
            subject: &a.identity,
            issuer: &ctx.settings.trust_domain,
            kid,
            now,
            lifetime: a.lifetime,
            authz: &authz,
        },
        &key,
    )
    .map_err(Error::Input)?;
    let target = match (&a.token, &a.file) {
        (Some(name), _) => Some(ctx.token_dir.join(name)),
        (None, Some(f)) => Some(f.clone()),
        (None, None) => None,
    };
    match target {
        None => writeln!(out, "{jwt}").map_err(Error::Write)?,
        Some(path) => {
            if a.token.is_some() {
                std::fs::DirBuilder::new()
                    .recursive(true)
                    .mode(0o700)
                    .create(&ctx.token_dir)
                    .map_err(|e| Error::Input(format!("{}: {e}", ctx.token_dir.display())))?;
            }
            write_private(&path, format!("{jwt}\n").as_bytes())
                .map_err(|e| Error::Input(format!("{}: {e}", path.display())))?;
        }
    }
    Ok(Outcome::Success)
}

/// Writes a file only its owner can read (a token or a key), replacing
/// none that a symbolic link points at.
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)?;
    f.write_all(bytes)?;
    f.sync_all()
}

fn create_key(
    kid: Option<&str>,
    state: Option<&Path>,
    out: &mut dyn Write,
) -> Result<Outcome, Error> {
    let ctx = context(state)?;
    let kid = kid.unwrap_or(token::POOL);
    let keys = ctx.settings.keys();
    let path = keys.path(kid).ok_or_else(|| {
        Error::Input(format!(
            "{kid:?} is not a key name (a file name in SEC_PASSWORD_DIRECTORY)"
        ))
    })?;
    if let Some(dir) = path.parent() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| Error::Input(format!("{}: {e}", dir.display())))?;
    }
    // 64 random bytes, as HTCondor's (its file is those bytes scrambled,
    // which random bytes are as much as before).
    let mut bytes = [0u8; 64];
    getrandom::fill(&mut bytes).map_err(|e| Error::Input(format!("random source: {e}")))?;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
        .map_err(|e| {
            Error::Input(if e.kind() == std::io::ErrorKind::AlreadyExists {
                format!(
                    "{} already exists: a signing key is never replaced (tokens signed with it would stop working); remove it first if that is what you want",
                    path.display()
                )
            } else {
                format!("{}: {e}", path.display())
            })
        })?;
    f.write_all(&bytes)
        .and_then(|()| f.sync_all())
        .map_err(|e| Error::Input(format!("{}: {e}", path.display())))?;
    writeln!(out, "made signing key {kid} at {}", path.display()).map_err(Error::Write)?;
    Ok(Outcome::Success)
}

fn list(dir: Option<&Path>, out: &mut dyn Write) -> Result<Outcome, Error> {
    let dir = match dir {
        Some(d) => d.to_path_buf(),
        None => context(None)?.token_dir,
    };
    let entries = std::fs::read_dir(&dir);
    let mut names: Vec<PathBuf> = match entries {
        Ok(e) => e.flatten().map(|e| e.path()).collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(Error::Input(format!("{}: {e}", dir.display()))),
    };
    names.sort();
    let decode = |part: &str| {
        base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(part.trim_end_matches('='))
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default()
    };
    let mut bad = false;
    for path in names.iter().filter(|p| p.is_file()) {
        let text = match token::read_secure(path, 1 << 20) {
            Ok(b) => String::from_utf8_lossy(&b).into_owned(),
            Err(e) => {
                eprintln!("skipped {e}");
                bad = true;
                continue;
            }
        };
        for line in text.lines().map(str::trim) {
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            if let Err(e) = token::Token::parse(line) {
                eprintln!("{}: {e}", path.display());
                bad = true;
                continue;
            }
            let mut parts = line.split('.');
            let header = decode(parts.next().unwrap_or(""));
            let payload = decode(parts.next().unwrap_or(""));
            writeln!(
                out,
                "Header: {header} Payload: {payload} File: {}",
                path.display()
            )
            .map_err(Error::Write)?;
        }
    }
    if bad {
        return Err(Error::Input("some tokens could not be read (above)".into()));
    }
    Ok(Outcome::Success)
}

/// `token fetch` (condor_token_fetch): the pool signs a token for whoever
/// this user authenticates as (FS on the pool's host, or a token it has),
/// limited to the levels asked for.
fn fetch(a: &TokenFetchArgs, out: &mut dyn Write) -> Result<Outcome, Error> {
    let ctx = context(None)?;
    for level in &a.authz {
        if cedar::server::Level::from_name(level).is_none() {
            return Err(Error::Usage(format!(
                "-authz {level:?} is not an authorization level (READ, WRITE, ADMINISTRATOR, DAEMON, ...)"
            )));
        }
    }
    // COLLECTOR_HOST when it names a port; a personal pool's port is in
    // its address file.
    let named = ctx
        .collector
        .as_deref()
        .and_then(|c| cedar::Sinful::parse(c, 0).ok())
        .filter(|s| s.port != 0);
    let addr = match named {
        Some(a) => a,
        None => {
            let file = ctx.state.join(".collector_address");
            let text = std::fs::read_to_string(&file).map_err(|e| {
                Error::Input(format!(
                    "no pool to ask: COLLECTOR_HOST names no port and {} cannot be read ({e}); \
                     is the pool up?",
                    file.display()
                ))
            })?;
            cedar::Sinful::parse(text.lines().next().unwrap_or(""), 0)
                .map_err(|e| Error::Input(format!("{}: {e}", file.display())))?
        }
    };
    let (mut sock, _) = cedar::client::connect(
        &addr,
        cedar::commands::DC_GET_SESSION_TOKEN,
        &ctx.client,
        None,
    )
    .map_err(|e| Error::Input(format!("token fetch from {addr}: {e}")))?;
    let mut req = classad::ClassAd::new();
    if !a.authz.is_empty() {
        let levels: Vec<String> = a.authz.iter().map(|l| l.to_ascii_uppercase()).collect();
        req.insert_value("LimitAuthorization", levels.join(",").as_str());
    }
    if let Some(l) = a.lifetime {
        req.insert_value("TokenLifetime", l);
    }
    let mut e = sock.encoder();
    cedar::put_ad(&mut e, &req, &cedar::PutOptions::default());
    let reply = sock
        .send(&e)
        .and_then(|()| sock.recv())
        .map_err(|e| Error::Input(format!("token fetch from {addr}: {e}")))?;
    let mut d = sock.decoder(&reply);
    let ad = cedar::get_ad(&mut d).map_err(|e| Error::Input(format!("token fetch: {e}")))?;
    let env = classad::Env::default();
    let Some(jwt) = ad.eval_attr("Token", &env).as_str().map(str::to_string) else {
        let why = ad
            .eval_attr("ErrorString", &env)
            .as_str()
            .unwrap_or("no reason given")
            .to_string();
        return Err(Error::Input(format!(
            "token fetch: the pool refused: {why}"
        )));
    };
    let target = match (&a.token, &a.file) {
        (Some(name), _) => {
            if name.contains('/') {
                return Err(Error::Usage(
                    "-token takes a file name in the token directory, not a path (use -file PATH)"
                        .into(),
                ));
            }
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(&ctx.token_dir)
                .map_err(|e| Error::Input(format!("{}: {e}", ctx.token_dir.display())))?;
            Some(ctx.token_dir.join(name))
        }
        (None, Some(f)) => Some(f.clone()),
        (None, None) => None,
    };
    match target {
        None => writeln!(out, "{jwt}").map_err(Error::Write)?,
        Some(path) => write_private(&path, format!("{jwt}\n").as_bytes())
            .map_err(|e| Error::Input(format!("{}: {e}", path.display())))?,
    }
    Ok(Outcome::Success)
}
