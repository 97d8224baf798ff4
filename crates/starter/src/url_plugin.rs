//! URL file-transfer plugins, the decisions (HTCondor's
//! `FILETRANSFER_PLUGINS` protocol): what a plugin's `-classad` answer
//! says it can do, which plugin serves which URL, the `-infile` a
//! multi-file plugin reads, and what its `-outfile` says of each transfer.
//!
//! Pure: no file, no process. [`crate::transfer`] runs the plugins (as the
//! job's user, in the sandbox) and calls these.
//!
//! The protocol, as HTCondor's starter speaks it: each plugin is asked
//! `plugin -classad` once and answers an ad in old syntax with
//! `PluginVersion`, `PluginType = "FileTransfer"`, `SupportedMethods =
//! "http,https"` (the URL schemes it serves) and, for the multi-file form,
//! `MultipleFileSupport = true`. When several plugins serve a scheme, the
//! last one in `FILETRANSFER_PLUGINS` is used. A multi-file plugin runs
//! once for all of a job's URLs it serves, as `plugin -infile IN -outfile
//! OUT`: IN holds one ad per transfer (`Url`, `LocalFileName`), OUT one
//! result ad per transfer (`TransferSuccess`, `TransferError`,
//! `TransferUrl`, `TransferFileName`, `TransferTotalBytes`, ...). A plugin
//! without `MultipleFileSupport` runs once per URL as `plugin URL PATH`
//! and says how it went by its exit status alone.
//!
//! Output goes to URLs the same way (HTCondor's `DoUpload`): a file whose
//! destination is a URL (`OutputDestination` + `/` + its name, or a URL
//! target in `TransferOutputRemaps`) is uploaded by the plugin for the
//! URL's scheme, run as `plugin -infile IN -outfile OUT -upload` with the
//! same ads (`Url` is where it goes, `LocalFileName` the sandbox file), or
//! as `plugin PATH URL` without `MultipleFileSupport`. A failed upload is
//! HTCondor's TransferOutputError (12) with [`upload_subcode`].
//!
//! `file://` and `http(s)://` are the starter's own (copied, or fetched
//! and PUT by `crate::http`), unless a listed plugin claims the scheme.

use std::path::{Path, PathBuf};

use classad::reader::{read_ads, Stop, Syntax};
use classad::{ClassAd, Env, Value};

/// What one plugin said it can do.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Capabilities {
    pub plugin: PathBuf,
    /// URL schemes, lower case.
    pub methods: Vec<String>,
    /// Takes `-infile`/`-outfile` (HTCondor's `MultipleFileSupport`).
    pub multi_file: bool,
}

fn string_attr(ad: &ClassAd, name: &str) -> Option<String> {
    match ad.eval_attr(name, &Env::default()) {
        Value::Str(s) => Some(s.to_string()),
        _ => None,
    }
}

/// Reads a plugin's answer to `-classad` (old syntax, as HTCondor's
/// plugins print it; new syntax is taken too).
pub fn read_capabilities(plugin: &Path, answer: &str) -> Result<Capabilities, String> {
    let ad = first_ad(answer).ok_or_else(|| "its -classad answer holds no ad".to_string())?;
    match string_attr(&ad, "PluginType") {
        Some(t) if t.eq_ignore_ascii_case("FileTransfer") => {}
        Some(t) => return Err(format!("its PluginType is \"{t}\", not \"FileTransfer\"")),
        None => return Err("its -classad answer has no PluginType".into()),
    }
    let methods: Vec<String> = string_attr(&ad, "SupportedMethods")
        .ok_or("its -classad answer has no SupportedMethods")?
        .split(',')
        .map(|m| m.trim().to_ascii_lowercase())
        .filter(|m| !m.is_empty())
        .collect();
    if methods.is_empty() {
        return Err("its SupportedMethods is empty".into());
    }
    let multi_file = matches!(
        ad.eval_attr("MultipleFileSupport", &Env::default()),
        Value::Bool(true)
    );
    Ok(Capabilities {
        plugin: plugin.to_path_buf(),
        methods,
        multi_file,
    })
}

fn first_ad(text: &str) -> Option<ClassAd> {
    let syntax = if text.trim_start().starts_with('[') {
        Syntax::New
    } else {
        Syntax::Old
    };
    read_ads(text, syntax).ads.into_iter().next().map(|r| r.ad)
}

/// The schemes the starter serves itself.
pub const BUILTIN_METHODS: [&str; 3] = ["file", "http", "https"];

/// What an execute point advertises as HasFileTransferPluginMethods:
/// the built-in schemes and every scheme the plugins serve, once each.
pub fn advertised_methods(plugins: &[Capabilities]) -> String {
    let mut all: Vec<&str> = BUILTIN_METHODS.to_vec();
    for m in plugins.iter().flat_map(|c| &c.methods) {
        if !all.contains(&m.as_str()) {
            all.push(m);
        }
    }
    all.join(",")
}

/// The scheme of a transfer_input_files item that is a URL (`zkm` of
/// `zkm://thing.txt`), lower case; `None` for a plain path.
pub fn scheme(item: &str) -> Option<String> {
    let (s, _) = item.split_once("://")?;
    let mut chars = s.chars();
    let first = chars.next()?;
    let ok = first.is_ascii_alphabetic()
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    ok.then(|| s.to_ascii_lowercase())
}

/// Who carries out one URL's transfer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Handler {
    /// `file://`, which the starter copies itself (as the user) when no
    /// configured plugin claims it, as HTCondor's curl_plugin would.
    BuiltinFile,
    /// `http://` and `https://`: GET for input, PUT for output, as
    /// HTCondor's curl_plugin does, in the starter (as the user).
    BuiltinHttp,
    /// The plugin at this index of the capabilities.
    Plugin(usize),
}

/// The plugin for `scheme`: the last one that serves it, else the
/// built-in `file://` or `http(s)://`.
pub fn choose(scheme: &str, plugins: &[Capabilities]) -> Option<Handler> {
    let scheme = scheme.to_ascii_lowercase();
    plugins
        .iter()
        .rposition(|c| c.methods.contains(&scheme))
        .map(Handler::Plugin)
        .or(match scheme.as_str() {
            "file" => Some(Handler::BuiltinFile),
            "http" | "https" => Some(Handler::BuiltinHttp),
            _ => None,
        })
}

/// The sandbox name a URL's file gets: the last part of its path, without
/// a query or fragment (HTCondor's basename of the URL).
pub fn local_name(url: &str) -> Result<String, String> {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let path = rest.split(['?', '#']).next().unwrap_or("");
    let name = path.trim_end_matches('/').rsplit('/').next().unwrap_or("");
    if name.is_empty() || name == "." || name == ".." || !path.contains(|c| c != '/') {
        return Err(format!("`{url}` names no file"));
    }
    Ok(name.to_string())
}

/// The local path of a `file://` URL (`file:///a/b` or
/// `file://localhost/a/b`).
pub fn file_url_path(url: &str) -> Result<PathBuf, String> {
    let rest = url
        .get(7..)
        .filter(|_| url[..7].eq_ignore_ascii_case("file://"))
        .ok_or_else(|| format!("`{url}` is not a file:// URL"))?;
    let path = rest.strip_prefix("localhost").unwrap_or(rest);
    if !path.starts_with('/') {
        return Err(format!(
            "`{url}`: a file:// URL names a path on this machine (file:///path)"
        ));
    }
    Ok(PathBuf::from(path))
}

/// A URL as it may be shown in a message or a hold reason: without its
/// query (a pre-signed URL's signature) or a password, as HTCondor's
/// `UrlSafePrint` hides them.
pub fn shown(url: &str) -> String {
    let no_query = url.split(['?', '#']).next().unwrap_or(url);
    let Some((scheme, rest)) = no_query.split_once("://") else {
        return no_query.to_string();
    };
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    match authority.rsplit_once('@') {
        Some((_, host)) => format!("{scheme}://{host}{path}"),
        None => no_query.to_string(),
    }
}

/// One URL transfer: a URL fetched into the sandbox, or a sandbox file
/// uploaded to a URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transfer {
    pub url: String,
    /// The name in the sandbox.
    pub name: String,
}

/// Which handler carries out which transfer: the built-in `file://`
/// copies and `http(s)://` requests, and one group per plugin, in the
/// order the plugins first appear.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plan {
    pub builtin: Vec<Transfer>,
    pub http: Vec<Transfer>,
    pub by_plugin: Vec<(usize, Vec<Transfer>)>,
}

/// Plans the URL inputs; a URL no plugin serves is refused with why.
pub fn plan(urls: &[String], plugins: &[Capabilities]) -> Result<Plan, (String, String)> {
    let mut transfers = Vec::new();
    for url in urls {
        transfers.push(Transfer {
            url: url.clone(),
            name: local_name(url).map_err(|e| (url.clone(), e))?,
        });
    }
    plan_transfers(transfers, plugins)
}

/// Groups transfers (inputs or uploads) by who carries them out; one
/// whose scheme nobody serves is refused with why.
pub fn plan_transfers(
    transfers: Vec<Transfer>,
    plugins: &[Capabilities],
) -> Result<Plan, (String, String)> {
    let mut p = Plan::default();
    for t in transfers {
        let url = t.url.clone();
        let s = scheme(&url).ok_or_else(|| (url.clone(), "it is not a URL".to_string()))?;
        match choose(&s, plugins) {
            None => {
                return Err((
                    url.clone(),
                    format!(
                        "no file transfer plugin serves the `{s}` scheme (FILETRANSFER_PLUGINS)"
                    ),
                ))
            }
            Some(Handler::BuiltinFile) => p.builtin.push(t),
            Some(Handler::BuiltinHttp) => p.http.push(t),
            Some(Handler::Plugin(i)) => match p.by_plugin.iter_mut().find(|(j, _)| *j == i) {
                Some((_, group)) => group.push(t),
                None => p.by_plugin.push((i, vec![t])),
            },
        }
    }
    Ok(p)
}

/// The `-infile` of a multi-file plugin: one ad per transfer, in new
/// syntax, one a line (`[ Url = "..."; LocalFileName = "/sandbox/name" ]`).
/// An upload (`-upload`) reads the same form: `Url` is where the sandbox
/// file `LocalFileName` goes, as HTCondor's `DoUpload` writes it.
pub fn infile(transfers: &[Transfer], sandbox: &Path) -> String {
    let mut text = String::new();
    for t in transfers {
        let mut ad = ClassAd::new();
        ad.insert_value("Url", t.url.as_str());
        ad.insert_value(
            "LocalFileName",
            sandbox.join(&t.name).to_string_lossy().as_ref(),
        );
        text.push_str(&ad.to_string());
        text.push('\n');
    }
    text
}

/// HTCondor's TransferOutputRemaps: `name = target` pairs separated by
/// `;`, where `\` escapes a `;`, `=` or `\` (condor_submit escapes them
/// so); the names and targets trimmed. A pair without `=` is skipped.
pub fn parse_remaps(text: &str) -> Vec<(String, String)> {
    let mut pairs = Vec::new();
    let (mut name, mut part) = (None::<String>, String::new());
    let mut finish = |name: &mut Option<String>, part: &mut String| {
        if let Some(n) = name.take() {
            let (n, t) = (n.trim().to_string(), part.trim().to_string());
            if !n.is_empty() {
                pairs.push((n, t));
            }
        }
        part.clear();
    };
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => part.push(chars.next().unwrap_or('\\')),
            '=' if name.is_none() => name = Some(std::mem::take(&mut part)),
            ';' => finish(&mut name, &mut part),
            c => part.push(c),
        }
    }
    finish(&mut name, &mut part);
    pairs
}

/// Where output file `name` (as transfer_output_files lists it, or as
/// the sandbox holds it) goes when that is a URL, as HTCondor's
/// `DoUpload` computes it: with an OutputDestination that is a URL,
/// that URL, a `/` unless it ends in one, and the name; otherwise the
/// name's TransferOutputRemaps target when that is a URL. `None`: the
/// file goes back to the job's directory as usual.
pub fn output_url(
    name: &str,
    destination: Option<&str>,
    remaps: &[(String, String)],
) -> Option<String> {
    if let Some(d) = destination.filter(|d| scheme(d).is_some()) {
        let sep = if d.ends_with('/') { "" } else { "/" };
        return Some(format!("{d}{sep}{name}"));
    }
    remap_of(name, remaps)
        .filter(|t| scheme(t).is_some())
        .map(str::to_string)
}

/// The TransferOutputRemaps target of output file `name`: the pair for
/// the name as listed, else for its base name (HTCondor's shadow sees
/// output under its base name).
fn remap_of<'a>(name: &str, remaps: &'a [(String, String)]) -> Option<&'a str> {
    let base = name.rsplit('/').next().unwrap_or(name);
    remaps
        .iter()
        .find(|(n, _)| n == name)
        .or_else(|| remaps.iter().find(|(n, _)| n == base))
        .map(|(_, t)| t.as_str())
}

/// Where output file `name` goes when TransferOutputRemaps renames it to
/// a path (relative to the job's directory unless absolute); `None`
/// when it is not remapped, or remapped to a URL, or an OutputDestination
/// URL takes every file.
pub fn remapped_path<'a>(
    name: &str,
    destination: Option<&str>,
    remaps: &'a [(String, String)],
) -> Option<&'a str> {
    if destination.is_some_and(|d| scheme(d).is_some()) {
        return None;
    }
    remap_of(name, remaps).filter(|t| !t.is_empty() && scheme(t).is_none())
}

/// HoldReasonSubCode of a failed upload, as HTCondor's `DoUpload` sets
/// it: the plugin's exit status shifted left by 8, the signal that
/// killed it, `ETIME` when it ran out of time; 1 when it exited 0 but
/// said a transfer failed (the shadow's `Result` of it).
pub fn upload_subcode(exit: Option<i32>, signal: Option<i32>, timed_out: bool) -> i64 {
    if timed_out {
        return i64::from(libc::ETIME);
    }
    match (exit, signal) {
        (Some(n), _) if n > 0 => i64::from(n) << 8,
        (_, Some(s)) => i64::from(s),
        _ => 1,
    }
}

/// HoldReasonSubCode of a failed download (an input URL), as HTCondor's
/// `DoDownload` sets it: the plugin's exit status shifted left by 8, the
/// signal that killed it, `ETIME` when it ran out of time, and 0 when it
/// exited 0 but said a transfer failed. Every non-zero exit status is a
/// failure alike, 2 included: HTCondor 25 documents that 2 "might mean
/// something in the future" and treats it as any other error.
pub fn download_subcode(exit: Option<i32>, signal: Option<i32>, timed_out: bool) -> i64 {
    if timed_out {
        return i64::from(libc::ETIME);
    }
    match (exit, signal) {
        (Some(n), _) if n > 0 => i64::from(n) << 8,
        (_, Some(s)) => i64::from(s),
        _ => 0,
    }
}

/// What a plugin's `-outfile` says of one transfer.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TransferResult {
    pub success: bool,
    pub error: Option<String>,
    pub url: Option<String>,
    pub file_name: Option<String>,
    pub bytes: Option<i64>,
}

/// Reads a plugin's `-outfile`: result ads in new syntax (as HTCondor's
/// starter reads it), or in old syntax separated by blank lines.
pub fn read_outfile(text: &str) -> Result<Vec<TransferResult>, String> {
    let syntax = if text.trim_start().starts_with('[') {
        Syntax::New
    } else {
        Syntax::Old
    };
    let stream = read_ads(text, syntax);
    if stream.ads.is_empty() && !text.trim().is_empty() {
        return Err(match &stream.stop {
            Stop::Error(e) => format!("its -outfile is not a list of ads: {e}"),
            Stop::End => "its -outfile holds no ad".into(),
        });
    }
    let env = Env::default();
    Ok(stream
        .ads
        .into_iter()
        .map(|r| {
            let ad = r.ad;
            TransferResult {
                success: matches!(ad.eval_attr("TransferSuccess", &env), Value::Bool(true)),
                error: string_attr(&ad, "TransferError"),
                url: string_attr(&ad, "TransferUrl"),
                file_name: string_attr(&ad, "TransferFileName"),
                bytes: match ad.eval_attr("TransferTotalBytes", &env) {
                    Value::Int(n) => Some(n),
                    Value::Real(r) => Some(r as i64),
                    _ => None,
                },
            }
        })
        .collect())
}

/// A multi-file plugin's run, judged: the bytes it brought, or the first
/// transfer that failed and why. Each transfer needs a result that says
/// `TransferSuccess = true` (matched by `TransferUrl`, else by its place);
/// a plugin that exits non-zero with every result a success still failed.
pub fn judge(
    plugin: &Path,
    transfers: &[Transfer],
    results: &[TransferResult],
    exit: Option<i32>,
) -> Result<u64, (String, String)> {
    let shown = plugin.display();
    let mut bytes = 0u64;
    for (i, t) in transfers.iter().enumerate() {
        let r = results
            .iter()
            .find(|r| r.url.as_deref() == Some(t.url.as_str()))
            .or_else(|| results.get(i).filter(|r| r.url.is_none()));
        match r {
            None => {
                let why = match exit {
                    Some(0) => "it gave no result for this URL".to_string(),
                    Some(n) => format!("it exited with status {n} and gave no result for this URL"),
                    None => "it was killed and gave no result for this URL".to_string(),
                };
                return Err((t.url.clone(), format!("plugin `{shown}` failed: {why}")));
            }
            Some(r) if !r.success => {
                let why = r
                    .error
                    .clone()
                    .unwrap_or_else(|| "TransferSuccess is not true".into());
                return Err((t.url.clone(), format!("plugin `{shown}` failed: {why}")));
            }
            Some(r) => bytes += r.bytes.unwrap_or(0).max(0) as u64,
        }
    }
    match exit {
        Some(0) => Ok(bytes),
        Some(n) => Err((
            transfers.first().map(|t| t.url.clone()).unwrap_or_default(),
            format!("plugin `{shown}` failed: it exited with status {n}"),
        )),
        None => Err((
            transfers.first().map(|t| t.url.clone()).unwrap_or_default(),
            format!("plugin `{shown}` failed: it was killed by a signal"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caps(plugin: &str, methods: &[&str], multi: bool) -> Capabilities {
        Capabilities {
            plugin: plugin.into(),
            methods: methods.iter().map(|m| m.to_string()).collect(),
            multi_file: multi,
        }
    }

    #[test]
    fn the_classad_answer_says_which_schemes_a_plugin_serves() {
        let c = read_capabilities(
            Path::new("/p/zkm"),
            "PluginVersion = \"0.1\"\nPluginType = \"FileTransfer\"\nSupportedMethods = \"zkm, HTTP\"\nMultipleFileSupport = true\n",
        )
        .unwrap();
        assert_eq!(c.methods, ["zkm", "http"]);
        assert!(c.multi_file);
        let old = read_capabilities(
            Path::new("/p/old"),
            "PluginVersion = \"0.1\"\nPluginType = \"FileTransfer\"\nSupportedMethods = \"zkm\"\n",
        )
        .unwrap();
        assert!(!old.multi_file);
        let e = read_capabilities(Path::new("/p"), "PluginType = \"Other\"\n").unwrap_err();
        assert!(e.contains("not \"FileTransfer\""), "{e}");
        let e = read_capabilities(Path::new("/p"), "PluginType = \"FileTransfer\"\n").unwrap_err();
        assert!(e.contains("SupportedMethods"), "{e}");
        assert!(read_capabilities(Path::new("/p"), "").is_err());
    }

    #[test]
    fn the_last_plugin_for_a_scheme_wins_and_file_is_built_in() {
        let ps = [
            caps("/a", &["http", "zkm"], true),
            caps("/b", &["zkm"], true),
        ];
        assert_eq!(choose("zkm", &ps), Some(Handler::Plugin(1)));
        assert_eq!(choose("HTTP", &ps), Some(Handler::Plugin(0)));
        assert_eq!(choose("file", &ps), Some(Handler::BuiltinFile));
        assert_eq!(choose("https", &ps), Some(Handler::BuiltinHttp));
        assert_eq!(choose("ftp", &ps), None);
        let with_file = [caps("/c", &["file"], true)];
        assert_eq!(choose("file", &with_file), Some(Handler::Plugin(0)));
    }

    #[test]
    fn the_execute_point_advertises_file_and_every_plugin_scheme() {
        assert_eq!(advertised_methods(&[]), "file,http,https");
        let ps = [
            caps("/a", &["http", "https"], true),
            caps("/b", &["zkm", "http", "file"], true),
        ];
        assert_eq!(advertised_methods(&ps), "file,http,https,zkm");
        let ftp = [caps("/c", &["ftp"], true)];
        assert_eq!(advertised_methods(&ftp), "file,http,https,ftp");
    }

    #[test]
    fn schemes_and_sandbox_names_of_urls() {
        assert_eq!(scheme("zkm://thing.txt").as_deref(), Some("zkm"));
        assert_eq!(scheme("HTTPS://h/x").as_deref(), Some("https"));
        assert_eq!(scheme("dir/a.txt"), None);
        assert_eq!(scheme("1x://a"), None);
        assert_eq!(local_name("zkm://thing.txt").unwrap(), "thing.txt");
        assert_eq!(local_name("https://h/a/b.dat?x=1#f").unwrap(), "b.dat");
        assert_eq!(local_name("zkm://128/r-data").unwrap(), "r-data");
        assert!(local_name("https://h/..").is_err());
        assert!(local_name("zkm://").is_err());
        assert_eq!(
            file_url_path("file:///data/in.txt").unwrap(),
            Path::new("/data/in.txt")
        );
        assert_eq!(
            file_url_path("file://localhost/d/x").unwrap(),
            Path::new("/d/x")
        );
        assert!(file_url_path("file://host/x").is_err());
    }

    #[test]
    fn a_plan_groups_urls_by_plugin_and_refuses_unserved_schemes() {
        let ps = [caps("/a", &["zkm"], true), caps("/b", &["http"], true)];
        let urls: Vec<String> = [
            "http://h/1",
            "zkm://2",
            "file:///x/3",
            "zkm://4",
            "https://h/5",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let p = plan(&urls, &ps).unwrap();
        let names = |g: &[Transfer]| g.iter().map(|t| t.name.clone()).collect::<Vec<_>>();
        assert_eq!(p.by_plugin.len(), 2);
        assert_eq!(p.by_plugin[0].0, 1);
        assert_eq!(names(&p.by_plugin[0].1), ["1"]);
        assert_eq!(names(&p.by_plugin[1].1), ["2", "4"]);
        assert_eq!(names(&p.builtin), ["3"]);
        assert_eq!(names(&p.http), ["5"], "https is the starter's own");
        let (url, why) = plan(&["ftp://h/x".to_string()], &ps).unwrap_err();
        assert_eq!(url, "ftp://h/x");
        assert!(why.contains("`ftp`"), "{why}");
    }

    #[test]
    fn the_infile_holds_one_ad_per_transfer() {
        let t = [
            Transfer {
                url: "zkm://a\"b".into(),
                name: "a\"b".into(),
            },
            Transfer {
                url: "zkm://c".into(),
                name: "c".into(),
            },
        ];
        let text = infile(&t, Path::new("/sb"));
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        let ad = ClassAd::parse(lines[0]).unwrap();
        assert_eq!(string_attr(&ad, "Url").as_deref(), Some("zkm://a\"b"));
        assert_eq!(
            string_attr(&ad, "LocalFileName").as_deref(),
            Some("/sb/a\"b")
        );
    }

    #[test]
    fn urls_are_shown_without_secrets() {
        assert_eq!(shown("https://h/a/b?X-Sig=abc"), "https://h/a/b");
        assert_eq!(shown("http://u:pw@h:80/x"), "http://h:80/x");
        assert_eq!(shown("http://h/x@y"), "http://h/x@y");
        assert_eq!(shown("zkm://thing"), "zkm://thing");
    }

    #[test]
    fn remaps_are_read_as_condor_submit_writes_them() {
        let r = parse_remaps("out.txt = zkm://place/out.txt; a\\;b=c\\=d ;junk; x=y;");
        assert_eq!(
            r,
            [
                ("out.txt".to_string(), "zkm://place/out.txt".to_string()),
                ("a;b".to_string(), "c=d".to_string()),
                ("x".to_string(), "y".to_string()),
            ]
        );
        assert!(parse_remaps("").is_empty());
        assert!(parse_remaps("=x;\\").is_empty());
    }

    #[test]
    fn output_goes_to_the_destination_url_or_a_remapped_url() {
        let remaps = parse_remaps("out.txt = zkm://place/o.txt; plain = elsewhere/p");
        // OutputDestination: every file, under its name; a `/` added once.
        assert_eq!(
            output_url("out.txt", Some("zkm://results"), &remaps).as_deref(),
            Some("zkm://results/out.txt")
        );
        assert_eq!(
            output_url("d/f", Some("zkm://results/"), &[]).as_deref(),
            Some("zkm://results/d/f")
        );
        // A destination that is not a URL is not one (condor_submit warns).
        assert_eq!(output_url("x", Some("/tmp/out"), &[]), None);
        // Without one: a remap whose target is a URL.
        assert_eq!(
            output_url("out.txt", None, &remaps).as_deref(),
            Some("zkm://place/o.txt")
        );
        assert_eq!(output_url("plain", None, &remaps), None);
        assert_eq!(output_url("other", None, &remaps), None);
        assert_eq!(
            output_url("sub/out.txt", None, &remaps).as_deref(),
            Some("zkm://place/o.txt"),
            "a listed path is remapped by its base name too"
        );
        // Plain renames, unless a destination URL takes every file.
        assert_eq!(remapped_path("plain", None, &remaps), Some("elsewhere/p"));
        assert_eq!(remapped_path("out.txt", None, &remaps), None);
        assert_eq!(remapped_path("plain", Some("zkm://r"), &remaps), None);
        assert_eq!(remapped_path("other", None, &remaps), None);
    }

    #[test]
    fn an_upload_infile_says_where_each_sandbox_file_goes() {
        let t = [Transfer {
            url: "zkm://place/out.txt".into(),
            name: "out.txt".into(),
        }];
        let text = infile(&t, Path::new("/sb"));
        let ad = ClassAd::parse(text.trim()).unwrap();
        assert_eq!(
            string_attr(&ad, "Url").as_deref(),
            Some("zkm://place/out.txt")
        );
        assert_eq!(
            string_attr(&ad, "LocalFileName").as_deref(),
            Some("/sb/out.txt")
        );
    }

    #[test]
    fn a_failed_upload_or_download_has_htcondors_subcode() {
        assert_eq!(upload_subcode(Some(3), None, false), 3 << 8);
        assert_eq!(upload_subcode(None, Some(9), false), 9);
        assert_eq!(upload_subcode(Some(0), None, false), 1);
        assert_eq!(upload_subcode(None, None, true), i64::from(libc::ETIME));
        assert_eq!(download_subcode(Some(3), None, false), 3 << 8);
        assert_eq!(download_subcode(Some(2), None, false), 2 << 8);
        assert_eq!(download_subcode(None, Some(9), false), 9);
        assert_eq!(download_subcode(Some(0), None, false), 0);
        assert_eq!(download_subcode(None, None, true), i64::from(libc::ETIME));
    }

    #[test]
    fn the_outfile_is_read_in_either_syntax_and_judged() {
        let new = "[ TransferSuccess = true; TransferUrl = \"zkm://a\"; TransferFileName = \"a\"; TransferTotalBytes = 5 ]\n\
                   [ TransferSuccess = false; TransferUrl = \"zkm://b\"; TransferError = \"no such thing: b\" ]\n";
        let r = read_outfile(new).unwrap();
        assert_eq!(r.len(), 2);
        assert_eq!(r[0].bytes, Some(5));
        assert_eq!(r[1].error.as_deref(), Some("no such thing: b"));
        let old = "TransferSuccess = true\nTransferUrl = \"zkm://a\"\nTransferTotalBytes = 7\n\n\
                   TransferSuccess = true\nTransferUrl = \"zkm://b\"\n";
        let r2 = read_outfile(old).unwrap();
        assert_eq!(r2.len(), 2, "{r2:?}");
        let t = |u: &str| Transfer {
            url: u.into(),
            name: "x".into(),
        };
        let p = Path::new("/p/zkm");
        assert_eq!(judge(p, &[t("zkm://a"), t("zkm://b")], &r2, Some(0)), Ok(7));
        let (url, why) = judge(p, &[t("zkm://a"), t("zkm://b")], &r, Some(1)).unwrap_err();
        assert_eq!(url, "zkm://b");
        assert!(
            why.contains("no such thing: b") && why.contains("/p/zkm"),
            "{why}"
        );
        let (_, why) = judge(p, &[t("zkm://c")], &r, Some(0)).unwrap_err();
        assert!(why.contains("no result"), "{why}");
        let (_, why) = judge(p, &[t("zkm://a")], &r, Some(3)).unwrap_err();
        assert!(why.contains("status 3"), "{why}");
        assert!(read_outfile("this is not = = an ad").is_err());
        assert!(read_outfile("[ TransferSuccess = ]").is_err());
        assert_eq!(read_outfile("").unwrap(), vec![]);
    }
}
