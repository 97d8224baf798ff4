//! `http://` and `https://` transfers, the starter's own: a GET into the
//! sandbox for input, a PUT of a sandbox file for output (HTCondor ships
//! its curl_plugin for these schemes and uploads with PUT the same way).
//!
//! Built in, as `file://` is, rather than shipped as a plugin command of
//! the binary: [`crate::transfer`] calls these inside the user-priv
//! helper, so the request is made by a process that already runs as the
//! job's user, and the bytes go to and from descriptors that user opened.
//! This module opens no path itself. Every request has a deadline (ureq's
//! global timeout, DNS to the last byte, redirects included) and a
//! download has a size bound. TLS is rustls with the Mozilla roots
//! (webpki-roots); no proxy is taken from the environment (the helper's
//! is empty).

use std::io::{self, Read, Write};
use std::time::Instant;

use crate::url_plugin::shown;

fn agent(until: Instant) -> Result<ureq::Agent, String> {
    let left = until.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err("no time was left for it".into());
    }
    Ok(ureq::Agent::config_builder()
        .timeout_global(Some(left))
        .http_status_as_error(false)
        .proxy(None)
        .user_agent(concat!("ferrocondor-starter/", env!("CARGO_PKG_VERSION")))
        .build()
        .new_agent())
}

fn failed(url: &str, e: ureq::Error) -> String {
    match e {
        ureq::Error::Timeout(_) => format!("`{}`: it did not finish in time", shown(url)),
        e => format!("`{}`: {e}", shown(url)),
    }
}

/// GETs `url` into `to`, at most `max_bytes` of it: the bytes written.
pub fn get(url: &str, to: &mut dyn Write, max_bytes: u64, until: Instant) -> Result<u64, String> {
    let resp = agent(until)?.get(url).call().map_err(|e| failed(url, e))?;
    let status = resp.status();
    if !status.is_success() {
        return Err(format!("`{}`: the server answered {status}", shown(url)));
    }
    let mut body = resp.into_body().into_reader();
    let n = io::copy(&mut (&mut body).take(max_bytes.saturating_add(1)), to).map_err(|e| {
        if e.kind() == io::ErrorKind::TimedOut {
            format!("`{}`: it did not finish in time", shown(url))
        } else {
            format!("`{}`: {e}", shown(url))
        }
    })?;
    if n > max_bytes {
        return Err(format!(
            "`{}` is larger than {max_bytes} bytes, the most this job's slot may take",
            shown(url)
        ));
    }
    Ok(n)
}

/// PUTs `body` (`len` bytes: a file, sent with its length) to `url`.
pub fn put(
    url: &str,
    body: impl ureq::AsSendBody,
    len: u64,
    until: Instant,
) -> Result<u64, String> {
    let resp = agent(until)?
        .put(url)
        .send(body)
        .map_err(|e| failed(url, e))?;
    let status = resp.status();
    if !status.is_success() {
        return Err(format!("`{}`: the server answered {status}", shown(url)));
    }
    Ok(len)
}
