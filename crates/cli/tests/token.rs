//! `ferrocondor token`: an administrator makes the pool's signing key,
//! signs a token for a user, and the user lists it, as with HTCondor's
//! condor_token_create and condor_token_list.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::process::Command;

use common::{bin, command, err, ok, run_as, scratch};

#[test]
fn a_token_is_signed_with_the_pool_key_and_listed() {
    let state = scratch("token");
    let home = state.join("home");
    std::fs::create_dir_all(&home).unwrap();
    if let Some((uid, gid)) = run_as() {
        std::os::unix::fs::chown(&home, Some(uid), Some(gid)).unwrap();
    }
    let tool = |args: &[&str]| {
        let mut c = command(&state, &[("TRUST_DOMAIN", "pool.example.org")]);
        c.env("HOME", &home).args(args);
        c.output().unwrap()
    };
    // No key yet: said so, with the way to make one.
    let o = tool(&["token", "create", "-identity", "alice@pool.example.org"]);
    assert!(!o.status.success());
    assert!(err(&o).contains("token create-key"), "{}", err(&o));
    ok(tool(&["token", "create-key"]));
    let key = state.join("passwords.d/POOL");
    let mode = std::fs::metadata(&key).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    // A key is never replaced.
    let o = tool(&["token", "create-key"]);
    assert!(err(&o).contains("already exists"), "{}", err(&o));
    // Printed, then written to the token directory.
    let printed = ok(tool(&[
        "token",
        "create",
        "-identity",
        "alice@pool.example.org",
        "-lifetime",
        "600",
        "-authz",
        "READ",
    ]));
    let t = cedar::token::Token::parse(printed.trim()).unwrap();
    assert_eq!(t.claims.iss, "pool.example.org");
    assert_eq!(t.claims.limits(), Some(vec!["READ".to_string()]));
    let k = cedar::token::KeyStore {
        pool_key: Some(key.clone()),
        ..Default::default()
    };
    // Read as root or the owner; the test may be either.
    if let Ok(key) = k.load("POOL") {
        let now = t.claims.iat.unwrap();
        t.verify(&key, now, Some("pool.example.org"), None).unwrap();
    }
    ok(tool(&[
        "token",
        "create",
        "-identity",
        "alice@pool.example.org",
        "-token",
        "mine",
    ]));
    let file = home.join(".condor/tokens.d/mine");
    let mode = std::fs::metadata(&file).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    let listed = ok(tool(&["token", "list"]));
    assert!(
        listed.contains(r#""sub":"alice@pool.example.org""#),
        "{listed}"
    );
    assert!(listed.contains("File: "), "{listed}");
    // A bad level is a usage error.
    let o = tool(&[
        "token",
        "create",
        "-identity",
        "a@b",
        "-authz",
        "EVERYTHING",
    ]);
    assert!(
        err(&o).contains("not an authorization level"),
        "{}",
        err(&o)
    );
}

#[test]
fn only_who_can_read_the_key_may_sign() {
    if run_as().is_none() {
        // Needs two users: root makes the key, another tries to sign.
        return;
    }
    let state = scratch("token-owner");
    let made = Command::new(bin())
        .env("CONDOR_CONFIG", "ONLY_ENV")
        .args(["token", "create-key", "--state"])
        .arg(&state)
        .output()
        .unwrap();
    assert!(made.status.success(), "{}", err(&made));
    let o = command(&state, &[])
        .args(["token", "create", "-identity", "x@y"])
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(
        err(&o).contains("only root or the pool's owner may sign tokens"),
        "{}",
        err(&o)
    );
}

#[test]
fn condor_token_list_is_the_tool_of_that_name() {
    let dir = scratch("token-link");
    let link = dir.join("condor_token_list");
    std::os::unix::fs::symlink(bin(), &link).unwrap();
    let o = Command::new(&link)
        .env("CONDOR_CONFIG", "ONLY_ENV")
        .args(["-dir"])
        .arg(dir.join("none"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", err(&o));
}

#[test]
fn token_create_signs_with_the_key_named_and_writes_the_file_named() {
    let state = scratch("token-key-file");
    let tool = |args: &[&str]| {
        let mut c = command(&state, &[("TRUST_DOMAIN", "pool.example.org")]);
        c.args(args);
        c.output().unwrap()
    };
    // A second signing key beside POOL, made and then used by name.
    ok(tool(&["token", "create-key", "-key", "site"]));
    assert!(state.join("passwords.d/site").is_file());
    let missing = tool(&["token", "create", "-identity", "a@b", "-key", "other"]);
    assert!(
        err(&missing).contains("there is no signing key other")
            && err(&missing).contains("token create-key -key other"),
        "{}",
        err(&missing)
    );
    // -file: written there (only its owner may read it), not printed.
    let file = state.join("alice.token");
    let printed = ok(tool(&[
        "token",
        "create",
        "-identity",
        "alice@pool.example.org",
        "-key",
        "site",
        "-file",
        file.to_str().unwrap(),
    ]));
    assert_eq!(printed, "");
    let mode = std::fs::metadata(&file).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    let text = std::fs::read_to_string(&file).unwrap();
    let t = cedar::token::Token::parse(text.trim()).unwrap();
    assert_eq!(t.kid, "site");
    assert_eq!(t.claims.sub.as_deref(), Some("alice@pool.example.org"));
}
