//! URL input transfer on the personal pool (issue 18): a plugin for the
//! manual's invented `zkm` scheme, configured by
//! `examples/config/url-plugins.conf`, fetches a job's input into its
//! sandbox as the job's user; a failed fetch holds the job with
//! TransferInputError (13) and the plugin's message; output to a URL is
//! refused, saying it is not supported yet.

mod common;

use std::path::{Path, PathBuf};

use common::{ok, run, scratch, wait_for, write, write_script, PoolProcess};

const FAST: &[(&str, &str)] = &[
    ("POLLING_INTERVAL", "1"),
    ("NEGOTIATOR_INTERVAL", "2"),
    ("UPDATE_INTERVAL", "1"),
    ("PERIODIC_EXPR_INTERVAL", "1"),
];

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/config")
        .join(name)
}

/// A multi-file plugin for `zkm://NAME`: copies NAME from `store`, or says
/// it has no such thing; it notes the uid it ran as in the sandbox.
fn zkm_plugin(path: &Path, store: &Path) {
    write_script(
        path,
        &format!(
            r#"#!/bin/sh
if [ "$1" = -classad ]; then
  echo 'PluginVersion = "0.1"'
  echo 'PluginType = "FileTransfer"'
  echo 'SupportedMethods = "zkm"'
  echo 'MultipleFileSupport = true'
  exit 0
fi
[ "$1" = -infile ] && [ "$3" = -outfile ] || exit 9
id -u > plugin.uid
: > "$4"
sed -e 's/.*Url = "zkm:\/\/\([^"]*\)".*LocalFileName = "\([^"]*\)".*/\1 \2/' "$2" | while read name local; do
  if cp "{store}/$name" "$local" 2>/dev/null; then
    echo "[ TransferSuccess = true; TransferUrl = \"zkm://$name\"; TransferTotalBytes = $(wc -c < "$local") ]" >> "$4"
  else
    echo "[ TransferSuccess = false; TransferUrl = \"zkm://$name\"; TransferError = \"zkm: no thing called $name\" ]" >> "$4"
  fi
done
grep -q 'TransferSuccess = false' "$4" && exit 1
exit 0
"#,
            store = store.display()
        ),
    );
}

#[test]
fn a_zkm_plugin_fetches_input_and_a_failed_fetch_holds_the_job() {
    let dir = scratch("url-plugins");
    let state = dir.join("state");
    let store = dir.join("store");
    std::fs::create_dir(&store).unwrap();
    if let Some((uid, gid)) = common::run_as() {
        std::os::unix::fs::chown(&store, Some(uid), Some(gid)).unwrap();
    }
    write(&store.join("thing.txt"), "a thing from zkm\n");
    let plugin = dir.join("zkm_plugin");
    zkm_plugin(&plugin, &store);
    let plugin_text = plugin.display().to_string();
    let mut env = FAST.to_vec();
    env.push(("ZKM_PLUGIN", &plugin_text));
    let pool = PoolProcess::start_with_config(&state, &example("url-plugins.conf"), &env);
    let tool = |args: &[&str]| ok(run(&state, &dir, args));
    let submit = |file: &str, text: &str| {
        write(&dir.join(file), text);
        let s = tool(&["submit", file]);
        assert!(s.contains("submitted to cluster"), "{s}");
    };
    write_script(
        &dir.join("job.sh"),
        "#!/bin/sh\ncat thing.txt\necho \"plugin $(cat plugin.uid) job $(id -u)\"\n",
    );
    submit(
        "ok.sub",
        "executable = job.sh\n\
         should_transfer_files = YES\n\
         transfer_input_files = zkm://thing.txt\n\
         output = ok.out\n\
         log = job.log\n\
         queue\n",
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let h = loop {
        let h = tool(&["history", "1.0", "-af", "ExitCode", "JobStatus"]);
        if !h.trim().is_empty() {
            break h.trim().to_string();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "job 1.0 never finished: {}\ndaemon:\n{}",
            tool(&["q", "1.0", "-af", "JobStatus", "HoldReason"]),
            pool.daemon_log()
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    assert_eq!(h, "0 4", "daemon:\n{}", pool.daemon_log());
    let out = std::fs::read_to_string(dir.join("ok.out")).unwrap();
    let mut lines = out.lines();
    assert_eq!(lines.next(), Some("a thing from zkm"), "{out}");
    // The plugin ran as the job's user.
    let ids: Vec<&str> = lines.next().unwrap().split(' ').collect();
    assert_eq!(ids[0], "plugin");
    assert_eq!(ids[1], ids[3], "{out}");
    if common::run_as().is_some() {
        assert_eq!(ids[1], "65534", "{out}");
    }

    // The plugin cannot fetch it: held, TransferInputError, its message.
    submit(
        "missing.sub",
        "executable = job.sh\n\
         should_transfer_files = YES\n\
         transfer_input_files = zkm://missing.txt\n\
         output = missing.out\n\
         log = job.log\n\
         queue\n",
    );
    let held = wait_for(30, "job 2.0 held", || {
        let q = tool(&[
            "q",
            "2.0",
            "-af",
            "JobStatus",
            "HoldReasonCode",
            "HoldReason",
        ]);
        q.starts_with("5 ").then(|| q.trim().to_string())
    });
    assert!(held.starts_with("5 13 "), "{held}");
    assert!(held.contains("zkm: no thing called missing.txt"), "{held}");
    assert!(held.contains("zkm://missing.txt"), "{held}");
    assert!(!dir.join("missing.out").exists());

    // Output to a URL: not yet, and said so.
    submit(
        "outurl.sub",
        "executable = job.sh\n\
         should_transfer_files = YES\n\
         transfer_input_files = zkm://thing.txt\n\
         output_destination = zkm://results/\n\
         log = job.log\n\
         queue\n",
    );
    let held = wait_for(30, "job 3.0 held", || {
        let q = tool(&["q", "3.0", "-af", "JobStatus", "HoldReason"]);
        q.starts_with("5 ").then(|| q.trim().to_string())
    });
    assert!(held.contains("not supported yet"), "{held}");
}
