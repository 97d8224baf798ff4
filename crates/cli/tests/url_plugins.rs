//! URL transfers on the personal pool (issue 18): a plugin for the
//! manual's invented `zkm` scheme, configured by
//! `examples/config/url-plugins.conf`, fetches a job's input into its
//! sandbox as the job's user; a failed fetch holds the job with
//! TransferInputError (13), the plugin's message and its exit status
//! shifted left by 8 as the subcode; `reconfig` asks the plugins again. Output with
//! `output_destination` (or a `transfer_output_remaps` URL) is uploaded
//! by the same plugin with `-upload`, as the job's user; a failed upload
//! holds the job with TransferOutputError (12), the plugin's message and
//! its exit status shifted left by 8 as the subcode. An `http://` input
//! from a server on this machine is fetched by the starter itself.

mod common;

use std::io::{BufRead, Write};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use common::{ok, run, scratch, wait_for, write, write_script, PoolProcess};

const FAST: &[(&str, &str)] = &[
    ("POLLING_INTERVAL", "1"),
    ("NEGOTIATOR_INTERVAL", "2"),
    ("UPDATE_INTERVAL", "1"),
    ("PERIODIC_EXPR_INTERVAL", "1"),
];

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
: > "$4"
if [ "$5" = -upload ]; then
  sed -e 's/.*Url = "zkm:\/\/\([^"]*\)".*LocalFileName = "\([^"]*\)".*/\1 \2/' "$2" | while read name local; do
    case "$name" in
      fail*) echo "[ TransferSuccess = false; TransferUrl = \"zkm://$name\"; TransferError = \"zkm: cannot store $name\" ]" >> "$4" ;;
      *) mkdir -p "$(dirname "{store}/$name")"
         cp "$local" "{store}/$name"
         echo "[ TransferSuccess = true; TransferUrl = \"zkm://$name\"; TransferTotalBytes = $(wc -c < "$local") ]" >> "$4" ;;
    esac
  done
  grep -q 'TransferSuccess = false' "$4" && exit 1
  exit 0
fi
id -u > plugin.uid
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
fn a_zkm_plugin_fetches_input_and_stores_output_and_failures_hold_the_job() {
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
    let pool =
        PoolProcess::start_with_config(&state, &common::example_path("url-plugins.conf"), &env);
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
    // A job's ExitCode and JobStatus once it is in the history.
    let finished = |id: &str| {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            let h = tool(&["history", id, "-af", "ExitCode", "JobStatus"]);
            if !h.trim().is_empty() {
                break h.trim().to_string();
            }
            assert!(
                std::time::Instant::now() < deadline,
                "job {id} never finished: {}\ndaemon:\n{}",
                tool(&["q", id, "-af", "JobStatus", "HoldReason"]),
                pool.daemon_log()
            );
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    };
    assert_eq!(finished("1.0"), "0 4", "daemon:\n{}", pool.daemon_log());
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

    // Output to a URL: every output file goes to output_destination,
    // through the plugin, as the job's user; the standard output comes
    // back to the job's directory (it names no URL).
    write_script(
        &dir.join("writer.sh"),
        "#!/bin/sh\necho result > res.txt\necho done\n",
    );
    submit(
        "outurl.sub",
        "executable = writer.sh\n\
         should_transfer_files = YES\n\
         output_destination = zkm://results/\n\
         output = outurl.out\n\
         log = job.log\n\
         queue\n",
    );
    assert_eq!(finished("3.0"), "0 4", "daemon:\n{}", pool.daemon_log());
    let stored = store.join("results/res.txt");
    assert_eq!(std::fs::read_to_string(&stored).unwrap(), "result\n");
    let job_uid =
        common::run_as().map_or_else(|| std::fs::metadata(&dir).unwrap().uid(), |(u, _)| u);
    assert_eq!(std::fs::metadata(&stored).unwrap().uid(), job_uid);
    assert_eq!(
        std::fs::read_to_string(dir.join("outurl.out")).unwrap(),
        "done\n"
    );
    assert!(!dir.join("res.txt").exists());

    // The plugin cannot store it: held, TransferOutputError, its message,
    // its exit status (1) shifted left by 8.
    submit(
        "outfail.sub",
        "executable = writer.sh\n\
         should_transfer_files = YES\n\
         transfer_output_files = res.txt\n\
         transfer_output_remaps = \"res.txt = zkm://fail/res.txt\"\n\
         log = job.log\n\
         queue\n",
    );
    let held = wait_for(30, "job 4.0 held", || {
        let q = tool(&[
            "q",
            "4.0",
            "-af",
            "JobStatus",
            "HoldReasonCode",
            "HoldReasonSubCode",
            "HoldReason",
        ]);
        q.starts_with("5 ").then(|| q.trim().to_string())
    });
    assert!(held.starts_with("5 12 256 "), "{held}");
    assert!(held.contains("zkm: cannot store fail/res.txt"), "{held}");
    assert!(held.contains("zkm://fail/res.txt"), "{held}");

    // http:// is the starter's own: a server on this machine.
    let server = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/files/web.txt", server.local_addr().unwrap());
    std::thread::spawn(move || {
        for mut c in server.incoming().flatten() {
            let mut r = std::io::BufReader::new(c.try_clone().unwrap());
            let mut line = String::new();
            let _ = r.read_line(&mut line);
            let (status, body) = if line.starts_with("GET /files/web.txt ") {
                ("200 OK", "from the web\n")
            } else {
                ("404 Not Found", "")
            };
            line.clear();
            while r.read_line(&mut line).is_ok_and(|n| n > 2) {
                line.clear();
            }
            let _ = write!(
                c,
                "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    write_script(
        &dir.join("web.sh"),
        "#!/bin/sh\ncat web.txt\necho \"file $(stat -c %u web.txt) job $(id -u)\"\n",
    );
    submit(
        "web.sub",
        &format!(
            "executable = web.sh\n\
             should_transfer_files = YES\n\
             transfer_input_files = {url}\n\
             output = web.out\n\
             log = job.log\n\
             queue\n"
        ),
    );
    assert_eq!(finished("5.0"), "0 4", "daemon:\n{}", pool.daemon_log());
    let out = std::fs::read_to_string(dir.join("web.out")).unwrap();
    assert_eq!(out, format!("from the web\nfile {job_uid} job {job_uid}\n"));
}

/// A one-URL-a-run plugin for `SCHEME://N/NAME`: exits with status N
/// (saying so on its standard error) when N is not 0, else writes NAME's
/// name into the sandbox file.
fn exiting_plugin(path: &Path, scheme: &str) {
    write_script(
        path,
        &format!(
            r#"#!/bin/sh
if [ "$1" = -classad ]; then
  echo 'PluginVersion = "0.1"'
  echo 'PluginType = "FileTransfer"'
  echo 'SupportedMethods = "{scheme}"'
  exit 0
fi
rest="${{1#{scheme}://}}"
code="${{rest%%/*}}"
if [ "$code" != 0 ]; then
  echo "{scheme}: cannot fetch $1" >&2
  exit "$code"
fi
echo "fetched ${{rest#*/}}" > "$2"
"#
        ),
    );
}

/// A failed input plugin holds the job with TransferInputError (13) and,
/// as HTCondor's `DoDownload`, its exit status shifted left by 8 as the
/// HoldReasonSubCode; exit status 2 is a failure like any other (HTCondor
/// 25 keeps it "for the future"). After `reconfig` with another plugin in
/// FILETRANSFER_PLUGINS, the slots advertise its scheme and jobs use it.
#[test]
fn a_failed_input_plugin_s_exit_status_is_the_subcode_and_reconfig_asks_plugins_again() {
    let dir = scratch("url-plugins-subcode");
    let state = dir.join("state");
    let zke = dir.join("zke_plugin");
    let zkq = dir.join("zkq_plugin");
    exiting_plugin(&zke, "zke");
    exiting_plugin(&zkq, "zkq");
    let config = dir.join("condor_config");
    let configure = |plugin: &Path| {
        write(
            &config,
            &format!(
                "include : {}\nZKM_PLUGIN = {}\n",
                common::example("url-plugins.conf"),
                plugin.display()
            ),
        )
    };
    configure(&zke);
    let pool = PoolProcess::start_with_config(&state, &config, FAST);
    let tool = |args: &[&str]| ok(run(&state, &dir, args));
    let methods = || tool(&["status", "-af", "HasFileTransferPluginMethods"]);
    let first = methods();
    assert!(first.contains("zke") && !first.contains("zkq"), "{first}");
    write_script(&dir.join("job.sh"), "#!/bin/sh\ncat thing\n");
    let submit = |file: &str, url: &str| {
        write(
            &dir.join(file),
            &format!(
                "executable = job.sh\n\
                 should_transfer_files = YES\n\
                 transfer_input_files = {url}\n\
                 output = {file}.out\n\
                 queue\n"
            ),
        );
        let s = tool(&["submit", file]);
        assert!(s.contains("submitted to cluster"), "{s}");
    };
    let held = |id: &str| {
        wait_for(30, &format!("job {id} held"), || {
            let q = tool(&[
                "q",
                id,
                "-af",
                "JobStatus",
                "HoldReasonCode",
                "HoldReasonSubCode",
                "HoldReason",
            ]);
            q.starts_with("5 ").then(|| q.trim().to_string())
        })
    };
    submit("three.sub", "zke://3/thing");
    let h = held("1.0");
    assert!(h.starts_with("5 13 768 "), "{h}\n{}", pool.daemon_log());
    assert!(h.contains("zke: cannot fetch zke://3/thing"), "{h}");
    assert!(h.contains("status 3"), "{h}");
    submit("two.sub", "zke://2/thing");
    let h = held("2.0");
    assert!(h.starts_with("5 13 512 "), "{h}");
    assert!(h.contains("zke: cannot fetch zke://2/thing"), "{h}");

    // Another plugin, read at reconfig: advertised, and used.
    configure(&zkq);
    ok(run(&state, &dir, &["reconfig"]));
    let now = wait_for(20, "zkq advertised", || {
        let m = methods();
        m.contains("zkq").then_some(m)
    });
    assert!(!now.contains("zke"), "{now}");
    submit("zkq.sub", "zkq://0/thing");
    let done = wait_for(30, "job 3.0 done", || {
        let h = tool(&["history", "3.0", "-af", "ExitCode", "JobStatus"]);
        (!h.trim().is_empty()).then(|| h.trim().to_string())
    });
    assert_eq!(done, "0 4", "{}", pool.daemon_log());
    assert_eq!(
        std::fs::read_to_string(dir.join("zkq.sub.out")).unwrap(),
        "fetched thing\n"
    );
}
