//! Pure crates stay pure: checked by reading their sources and manifests.

use std::path::{Path, PathBuf};

/// The crates that hold semantics and must never do I/O (ARCHITECTURE.md).
const PURE: &[&str] = &[
    "classad",
    "config",
    "submit",
    "startd",
    "negotiator",
    "schedd",
    "sim",
];

/// Crates that do I/O; a pure crate may not depend on them.
const IO_CRATES: &[&str] = &[
    "store",
    "starter",
    "host",
    "wire",
    "daemons",
    "tokio",
    "rusqlite",
    "reqwest",
    "hyper",
    "axum",
    "nix",
    "rustix",
    "rand",
    "getrandom",
];

/// Calls a pure crate must not make, with why.
const FORBIDDEN: &[(&str, &str)] = &[
    (
        "SystemTime::now",
        "reads the clock: take `now` as an argument",
    ),
    ("Instant::now", "reads the clock: take `now` as an argument"),
    ("Utc::now", "reads the clock: take `now` as an argument"),
    ("Local::now", "reads the clock and the local zone"),
    (
        "std::env::var",
        "reads the environment: take it as an argument",
    ),
    ("env::var(", "reads the environment: take it as an argument"),
    (
        "std::fs::",
        "touches the file system: files come in through a trait",
    ),
    (
        "File::open",
        "touches the file system: files come in through a trait",
    ),
    ("std::net::", "uses the network"),
    ("std::process::Command", "spawns a process"),
    ("thread_rng", "an unseeded random number generator"),
];

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn pure_crates_do_no_io() {
    let mut problems = Vec::new();
    let mut checked = 0;
    for name in PURE {
        let src = workspace().join("crates").join(name).join("src");
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        for f in files {
            checked += 1;
            let text = std::fs::read_to_string(&f).unwrap();
            for (i, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or("");
                for (pat, why) in FORBIDDEN {
                    if code.contains(pat) {
                        problems.push(format!("{}:{}: `{pat}` {why}", f.display(), i + 1));
                    }
                }
            }
        }
    }
    assert!(checked > 0, "no pure crate sources found");
    assert!(
        problems.is_empty(),
        "pure crates doing I/O:\n{}",
        problems.join("\n")
    );
}

#[test]
fn pure_crates_depend_on_no_io_crate() {
    let mut problems = Vec::new();
    for name in PURE {
        let manifest = workspace().join("crates").join(name).join("Cargo.toml");
        let Ok(text) = std::fs::read_to_string(&manifest) else {
            continue;
        };
        // Only [dependencies]: tests and benchmarks may use what they like.
        let deps = text
            .split("\n[")
            .find(|s| s.starts_with("dependencies]"))
            .unwrap_or("");
        for line in deps.lines().skip(1) {
            let dep = line.split(['=', '.', ' ']).next().unwrap_or("").trim();
            if IO_CRATES.contains(&dep) {
                problems.push(format!("{}: depends on `{dep}`", manifest.display()));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "pure crates with I/O dependencies:\n{}",
        problems.join("\n")
    );
}

/// The `Config` methods that read a parameter by name.
const PARAM_READERS: &[&str] = &[
    ".get(\"",
    ".raw(\"",
    ".integer(\"",
    ".integer_or(\"",
    ".boolean(\"",
    ".real(\"",
    ".duration(\"",
    ".list(\"",
    ".expression(\"",
];

/// Every parameter the code reads is in the parameter table
/// (`crates/config/src/params.rs`), so that table stays the complete list
/// of knobs, with defaults and meanings.
#[test]
fn parameters_are_read_only_through_the_table() {
    let table = std::fs::read_to_string(workspace().join("crates/config/src/params.rs")).unwrap();
    let known = |name: &str| {
        table.contains(&format!("p(\n        \"{name}\""))
            || table.contains(&format!("p(\"{name}\""))
    };
    let mut problems = Vec::new();
    let mut read = 0;
    for krate in std::fs::read_dir(workspace().join("crates"))
        .unwrap()
        .flatten()
    {
        if krate.file_name() == "classad" || krate.file_name() == "tidy" {
            continue;
        }
        let mut files = Vec::new();
        rust_files(&krate.path().join("src"), &mut files);
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap();
            // Unit tests may ask for made-up names.
            let code = text.split("#[cfg(test)]").next().unwrap_or("");
            for (i, line) in code.lines().enumerate() {
                for reader in PARAM_READERS {
                    let Some(at) = line.find(reader) else {
                        continue;
                    };
                    let rest = &line[at + reader.len()..];
                    let name = rest.split('"').next().unwrap_or("");
                    // Parameter names are written in capitals (START,
                    // LOCAL_CONFIG_DIR); other `get("...")` calls are not
                    // about configuration.
                    if name.is_empty()
                        || !name
                            .chars()
                            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
                    {
                        continue;
                    }
                    read += 1;
                    if !known(name) {
                        problems.push(format!(
                            "{}:{}: reads {name}, which is not in crates/config/src/params.rs",
                            f.display(),
                            i + 1
                        ));
                    }
                }
            }
        }
    }
    assert!(
        read > 0,
        "found no parameter reads: has the Config API changed?"
    );
    assert!(
        problems.is_empty(),
        "parameters missing from the table:\n{}",
        problems.join("\n")
    );
}

/// The modules of the daemons and the starter that may use the file
/// system, and why each touches only the daemon's own paths. The one
/// exception is `transfer`, which alone opens paths a user named (the
/// job's files, its event log), and always with the user's credentials
/// (`user_priv`). A new module that needs the file system is added here
/// with its reason, or does its work through `transfer`.
const FILE_SYSTEM_MODULES: &[(&str, &str)] = &[
    (
        "crates/starter/src/transfer.rs",
        "users' paths: always run with the user's credentials by user_priv",
    ),
    (
        "crates/starter/src/user_priv.rs",
        "its own standard streams and /proc/self/exe",
    ),
    (
        "crates/starter/src/sandbox.rs",
        "the sandbox directory under EXECUTE, made (and removed) by the starter",
    ),
    ("crates/starter/src/cgroup.rs", "the cgroup v2 file system"),
    ("crates/starter/src/procs.rs", "/proc"),
    (
        "crates/starter/src/job.rs",
        "the job cgroup's files and the pipe from the starting child",
    ),
    ("crates/daemons/src/statedir.rs", "the state directory"),
    (
        "crates/daemons/src/leftovers.rs",
        "the running records, /proc, job cgroups, sandboxes under EXECUTE",
    ),
    (
        "crates/daemons/src/accounting.rs",
        "the accountant's file in the state directory",
    ),
    ("crates/daemons/src/server.rs", "the pool's socket"),
    (
        "crates/daemons/src/command_port.rs",
        "the address files the configuration names (COLLECTOR_ADDRESS_FILE, SCHEDD_ADDRESS_FILE)",
    ),
    (
        "crates/daemons/src/peer_user.rs",
        "the kernel's socket tables (/proc/net/tcp, tcp6), to share out the command port's connections",
    ),
    (
        "crates/daemons/src/role_transport.rs",
        "the roles' address files in the state directory, the schedd's claims' sessions there, and the collector's address file",
    ),
    ("crates/daemons/src/execute.rs", "the EXECUTE directory"),
    (
        "crates/daemons/src/kbdd.rs",
        "the input devices (/dev/input, read) and the startd's address file in the roles directory",
    ),
    (
        "crates/daemons/src/pool_history.rs",
        "the pool history's files in POOL_HISTORY_DIR (a view collector's own)",
    ),
    (
        "crates/daemons/src/event_logs.rs",
        "only descriptors the logs' owners opened (user_priv::open_append)",
    ),
];

/// What touching the file system looks like in these crates.
const FILE_SYSTEM_CALLS: &[&str] = &[
    "fs::",
    "File::open",
    "File::create",
    "OpenOptions",
    "rustix::fs",
    "rfs::",
    "libc::open",
    "libc::mkfifo",
    "libc::unlink",
    "libc::rename",
];

/// Users' paths are touched only by `starter::transfer` (as the user): no
/// other module of the daemons or the starter uses the file system unless
/// it is listed, with its reason, in `FILE_SYSTEM_MODULES`.
#[test]
fn user_paths_are_touched_only_by_the_transfer_module() {
    let mut problems = Vec::new();
    let mut checked = 0;
    for krate in ["starter", "daemons"] {
        let mut files = Vec::new();
        rust_files(
            &workspace().join("crates").join(krate).join("src"),
            &mut files,
        );
        for f in files {
            checked += 1;
            let rel = f
                .strip_prefix(workspace())
                .unwrap_or(&f)
                .display()
                .to_string()
                .replace("/./", "/");
            let rel = rel.trim_start_matches("./").to_string();
            if FILE_SYSTEM_MODULES.iter().any(|(m, _)| rel.ends_with(m)) {
                continue;
            }
            let text = std::fs::read_to_string(&f).unwrap();
            // Unit tests make their own scratch files.
            let code = text.split("#[cfg(test)]").next().unwrap_or("");
            for (i, line) in code.lines().enumerate() {
                let line = line.split("//").next().unwrap_or("");
                if let Some(pat) = FILE_SYSTEM_CALLS.iter().find(|p| line.contains(*p)) {
                    problems.push(format!(
                        "{}:{}: `{pat}`: only starter::transfer touches users' paths; \
                         a module that touches the daemon's own files is listed in \
                         FILE_SYSTEM_MODULES with its reason",
                        f.display(),
                        i + 1
                    ));
                }
            }
        }
    }
    assert!(checked > 0, "no sources found");
    assert!(
        problems.is_empty(),
        "file-system calls outside the listed modules:\n{}",
        problems.join("\n")
    );
}
