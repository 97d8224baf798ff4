//! Every way a configuration can be wrong gives an error that names the
//! file and line and says what was expected; a daemon keeps its old
//! configuration when a new one is broken.

use config::{load, reconfigure, ConfigError, ErrorKind, FixedHost, LoadOptions, MemFiles, Root};

fn load_files(files: &MemFiles) -> Result<config::Config, ConfigError> {
    load(
        &LoadOptions::new("TOOL", Root::File("condor_config".into())),
        files,
        &FixedHost::empty(),
    )
}

fn error(text: &str) -> ConfigError {
    load_files(&MemFiles::new().with("condor_config", text))
        .expect_err("this configuration must be refused")
}

/// Checks the error's place and that its message says `says`.
fn check(e: &ConfigError, kind: ErrorKind, file: &str, line: u32, says: &[&str]) {
    assert_eq!(e.kind, kind, "{e}");
    assert_eq!((e.file.as_str(), e.line), (file, line), "{e}");
    let shown = e.to_string();
    assert!(shown.starts_with(&format!("{file}:{line}: ")), "{shown}");
    for s in says {
        assert!(shown.contains(s), "expected {s:?} in:\n{shown}");
    }
}

#[test]
fn unterminated_multi_line_value() {
    let e = error("A = 1\nM @=end\nline\n");
    check(
        &e,
        ErrorKind::Syntax,
        "condor_config",
        3,
        &["`@end`", "opened at line 2"],
    );
}

#[test]
fn unbalanced_if() {
    check(
        &error("A = 1\nif true\nB = 2\n"),
        ErrorKind::Conditional,
        "condor_config",
        3,
        &["`endif` missing"],
    );
    check(
        &error("A = 1\nendif\n"),
        ErrorKind::Conditional,
        "condor_config",
        2,
        &["`endif` without a matching `if`"],
    );
    check(
        &error("else\n"),
        ErrorKind::Conditional,
        "condor_config",
        1,
        &["`else` without"],
    );
    check(
        &error("if true\nelse\nelse\nendif\n"),
        ErrorKind::Conditional,
        "condor_config",
        3,
        &["`else` is not allowed after `else`"],
    );
    check(
        &error("if true\nelse\nelif false\nendif\n"),
        ErrorKind::Conditional,
        "condor_config",
        3,
        &["`elif` is not allowed after `else`"],
    );
}

#[test]
fn conditions_that_are_not_simple() {
    let e = error("X = 10\nif $(X) > 5\nendif\n");
    check(
        &e,
        ErrorKind::Conditional,
        "condor_config",
        2,
        &[
            "`10 > 5`",
            "complex conditions are not supported",
            "defined NAME",
        ],
    );
    check(
        &error("if on\nendif\n"),
        ErrorKind::Conditional,
        "condor_config",
        1,
        &["not a boolean or a number"],
    );
    check(
        &error("if version < 8\nendif\n"),
        ErrorKind::Conditional,
        "condor_config",
        1,
        &["`8` is not a version"],
    );
    check(
        &error("if version 8.0\nendif\n"),
        ErrorKind::Conditional,
        "condor_config",
        1,
        &["must be followed by a comparison"],
    );
}

#[test]
fn malformed_lines() {
    let e = error("A = 1\nthis line is not valid\n");
    check(
        &e,
        ErrorKind::Syntax,
        "condor_config",
        2,
        &["expected `=` after `this`", "this line is not valid"],
    );
    check(
        &error("my-name = 1\n"),
        ErrorKind::Syntax,
        "condor_config",
        1,
        &["`my-name` is not a valid parameter name"],
    );
    check(
        &error("B = x \\\n\n  y\n"),
        ErrorKind::Syntax,
        "condor_config",
        3,
        &["expected `=` after `y`"],
    );
    check(
        &error("use POLICY\n"),
        ErrorKind::Syntax,
        "condor_config",
        1,
        &["`use` must be followed by a category, `:`"],
    );
    check(
        &error("include no-colon.conf\n"),
        ErrorKind::Syntax,
        "condor_config",
        1,
        &["`include` must be followed by `:`"],
    );
}

#[test]
fn include_that_does_not_exist() {
    let e = error("A = 1\ninclude : no-such-file.conf\n");
    check(
        &e,
        ErrorKind::Include,
        "condor_config",
        2,
        &[
            "cannot read included file no-such-file.conf",
            "no such file",
        ],
    );
    // `include ifexist` passes over it.
    assert!(
        load_files(&MemFiles::new().with("condor_config", "include ifexist : nope.conf\n")).is_ok()
    );
}

#[test]
fn errors_in_included_files_say_where_they_were_included_from() {
    let files = MemFiles::new()
        .with("condor_config", "A = 1\ninclude : conf.d/one.conf\n")
        .with("conf.d/one.conf", "B = 2\ninclude : two.conf\n")
        .with("conf.d/two.conf", "C = 3\nbroken line\n");
    let e = load_files(&files).unwrap_err();
    check(
        &e,
        ErrorKind::Syntax,
        "conf.d/two.conf",
        2,
        &[
            "(included from conf.d/one.conf:2)",
            "(included from condor_config:2)",
        ],
    );
}

#[test]
fn include_loops_are_refused() {
    let files = MemFiles::new()
        .with("condor_config", "include : a.conf\n")
        .with("a.conf", "include : condor_config\n");
    let e = load_files(&files).unwrap_err();
    assert!(e.to_string().contains("includes itself"), "{e}");
}

#[test]
fn include_command_only_where_the_admin_allows_it() {
    let mut files =
        MemFiles::new().with("condor_config", "include command : /usr/bin/gen-config\n");
    files
        .commands
        .insert("/usr/bin/gen-config".into(), "FROM_COMMAND = yes\n".into());
    let e = load_files(&files).unwrap_err();
    check(
        &e,
        ErrorKind::Include,
        "condor_config",
        1,
        &["ALLOW_INCLUDE_COMMAND = True"],
    );

    files.files.insert(
        "condor_config".into(),
        "ALLOW_INCLUDE_COMMAND = True\ninclude command : /usr/bin/gen-config\n".into(),
    );
    let c = load_files(&files).unwrap();
    assert_eq!(c.get("FROM_COMMAND").unwrap().as_deref(), Some("yes"));
}

#[test]
fn templates_that_do_not_exist_or_are_not_implemented() {
    let e = error("A = 1\nuse POLICY : NoSuchPolicy\n");
    check(
        &e,
        ErrorKind::Template,
        "condor_config",
        2,
        &["no such template", "Desktop", "Always_Run_Jobs"],
    );
    let e = error("use SECURITY : USER_BASED\n");
    check(
        &e,
        ErrorKind::Template,
        "condor_config",
        1,
        &["does not implement"],
    );
    let e = error("use FEATURE : StartdCronPeriodic(a, 5, /bin/true)\n");
    check(
        &e,
        ErrorKind::Template,
        "condor_config",
        1,
        &["does not implement"],
    );
    // A template refusing its arguments blames the `use` line.
    let e = error("A = 1\nuse POLICY : Want_Hold_If(X)\n");
    check(
        &e,
        ErrorKind::ErrorStatement,
        "condor_config",
        2,
        &["WANT_HOLD_IF requires 3 arguments"],
    );
}

#[test]
fn error_statement() {
    let e = error("A = 1\nerror : this config is broken\n");
    check(
        &e,
        ErrorKind::ErrorStatement,
        "condor_config",
        2,
        &["error: this config is broken"],
    );
}

#[test]
fn warnings_are_kept_not_fatal() {
    let c = load_files(
        &MemFiles::new().with("condor_config", "warning : careful\nB : 1\nname junk = x\n"),
    )
    .unwrap();
    let w: Vec<String> = c.warnings().iter().map(|w| w.to_string()).collect();
    assert_eq!(w.len(), 3, "{w:?}");
    assert!(
        w[0].starts_with("condor_config:1: warning: careful"),
        "{w:?}"
    );
    assert!(w[1].contains("obsolete"), "{w:?}");
    assert!(w[2].contains("`junk`"), "{w:?}");
    assert_eq!(c.get("name").unwrap().as_deref(), Some("x"));
}

#[test]
fn no_configuration_file_found() {
    let e = load(
        &LoadOptions::new("TOOL", Root::Search),
        &MemFiles::new(),
        &FixedHost::empty(),
    )
    .unwrap_err();
    assert_eq!(e.kind, ErrorKind::NoConfig);
    assert!(e.to_string().contains("CONDOR_CONFIG"), "{e}");
    // CONDOR_CONFIG names the file; ONLY_ENV means none.
    let host = FixedHost::empty().with_env("CONDOR_CONFIG", "/etc/site.conf");
    let files = MemFiles::new().with("/etc/site.conf", "A = site\n");
    let c = load(&LoadOptions::new("TOOL", Root::Search), &files, &host).unwrap();
    assert_eq!(c.get("A").unwrap().as_deref(), Some("site"));
    let host = FixedHost::empty()
        .with_env("CONDOR_CONFIG", "ONLY_ENV")
        .with_env("_CONDOR_START", "False");
    let c = load(
        &LoadOptions::new("TOOL", Root::Search),
        &MemFiles::new(),
        &host,
    )
    .unwrap();
    assert_eq!(c.get("START").unwrap().as_deref(), Some("False"));
}

#[test]
fn missing_local_config_file() {
    let files = MemFiles::new().with(
        "condor_config",
        "LOCAL_CONFIG_FILE = /etc/condor/local.conf\n",
    );
    let e = load_files(&files).unwrap_err();
    assert!(e.to_string().contains("REQUIRE_LOCAL_CONFIG_FILE"), "{e}");
    let files = MemFiles::new().with(
        "condor_config",
        "LOCAL_CONFIG_FILE = /etc/condor/local.conf\nREQUIRE_LOCAL_CONFIG_FILE = False\n",
    );
    assert!(load_files(&files).is_ok());
}

#[test]
fn macro_loops_are_named_at_lookup() {
    let c = load_files(&MemFiles::new().with(
        "condor_config",
        "LOOP1 = $(LOOP2)\nLOOP2 = x $(LOOP1)\nOK = fine\n",
    ))
    .unwrap();
    let e = c.get("LOOP1").unwrap_err();
    assert_eq!(e.error.cycle, vec!["LOOP1", "LOOP2", "LOOP1"]);
    assert!(e.to_string().contains("condor_config, line 1"), "{e}");
    assert_eq!(c.get("OK").unwrap().as_deref(), Some("fine"));
}

#[test]
fn typed_values_name_the_parameter_its_text_and_where() {
    let c = load_files(&MemFiles::new().with(
        "condor_config",
        "A = 1\nNUM_CPUS = four\nSTART = (KeyboardIdle >\n",
    ))
    .unwrap();
    let e = c.integer("NUM_CPUS").unwrap_err();
    assert_eq!(
        e.to_string(),
        "condor_config:2: NUM_CPUS = four: expected an integer"
    );
    let e = c.expression("START").unwrap_err();
    assert!(
        e.to_string()
            .starts_with("condor_config:3: START = (KeyboardIdle >: not a ClassAd expression"),
        "{e}"
    );
    assert_eq!(c.integer("A").unwrap(), Some(1));
}

#[test]
fn reconfiguration_keeps_the_old_configuration_when_the_new_one_is_broken() {
    let opts = LoadOptions::new("STARTD", Root::File("condor_config".into()));
    let good = MemFiles::new().with("condor_config", "START = KeyboardIdle > 300\n");
    let current = load(&opts, &good, &FixedHost::empty()).unwrap();
    let broken = MemFiles::new().with("condor_config", "START = True\nif true\n");
    let (kept, why) = reconfigure(current, &opts, &broken, &FixedHost::empty());
    assert_eq!(
        kept.get("START").unwrap().as_deref(),
        Some("KeyboardIdle > 300")
    );
    assert!(why.unwrap().to_string().contains("`endif` missing"));
    let fixed = MemFiles::new().with("condor_config", "START = True\n");
    let (new, why) = reconfigure(kept, &opts, &fixed, &FixedHost::empty());
    assert!(why.is_none());
    assert_eq!(new.get("START").unwrap().as_deref(), Some("True"));
}

#[test]
fn config_root_is_the_root_files_directory() {
    let files = MemFiles::new().with("/etc/condor/condor_config", "X = $(CONFIG_ROOT)/config.d\n");
    let c = load(
        &LoadOptions::new("TOOL", Root::File("/etc/condor/condor_config".into())),
        &files,
        &FixedHost::empty(),
    )
    .unwrap();
    assert_eq!(c.get("X").unwrap().as_deref(), Some("/etc/condor/config.d"));
    let c = load_files(&MemFiles::new().with("condor_config", "X = $(CONFIG_ROOT)/x\n")).unwrap();
    assert_eq!(c.get("X").unwrap().as_deref(), Some("./x"));
}
