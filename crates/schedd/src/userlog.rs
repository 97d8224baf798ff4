//! The job event log (the "user log" a submit file's `log = FILE` names),
//! in HTCondor's text format, byte for byte, so that existing readers
//! (`condor_wait`, DAGMan, `htcondor.JobEventLog`, site scripts) read ours.
//!
//! An event is a header line, `NNN (CCC.PPP.SSS) DATE TIME ` followed by
//! the first line of its body, then indented detail lines, then the `...`
//! line that ends it. The texts follow HTCondor's
//! `src/condor_utils/condor_event.cpp` (`ULogEvent::formatHeader` and each
//! event's `formatBody`); the event numbers are HTCondor's `ULogEventNumber`.
//!
//! No value can add a line, so nobody can forge an event: every text of a
//! body is written through one function, `flat_into`, which turns a
//! newline into `|` and a carriage return into a blank and ends the value
//! at a NUL, as HTCondor flattens the texts of its events
//! (`ULogEvent::set_reason_member`).
//!
//! This module only makes text. Opening, locking and appending to the file
//! is the daemon's job; the local zone comes in as an offset, since a pure
//! crate does not read the clock or the zone.

use std::fmt::{self, Write as _};

use classad::time::civil;
use classad::unparse::expr_to_old_syntax;
use classad::{ClassAd, Expr, Value};

use crate::job::JobId;

/// How event times are written (HTCondor's user-log format options).
/// The default is HTCondor's: ISO dates in local time, whole seconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogFormat {
    /// The local zone's offset east of UTC, in seconds.
    pub utc_offset: i32,
    /// `2023-11-14 22:13:20` rather than the old `11/14 22:13:20`.
    pub iso_date: bool,
    /// Times in UTC, marked with a `Z`.
    pub utc: bool,
    /// Milliseconds after the seconds (always `.000`: times are whole seconds).
    pub sub_second: bool,
}

impl Default for LogFormat {
    fn default() -> LogFormat {
        LogFormat {
            utc_offset: 0,
            iso_date: true,
            utc: false,
            sub_second: false,
        }
    }
}

impl LogFormat {
    /// Reads `DEFAULT_USERLOG_FORMAT_OPTIONS`: words `ISO_DATE`, `UTC`,
    /// `SUB_SECOND` and `LEGACY` (the old month/day date), any case,
    /// separated by blanks, commas or `|`. Unknown words are ignored, as
    /// HTCondor ignores them. An empty text keeps the default.
    pub fn from_options(text: &str, utc_offset: i32) -> LogFormat {
        let mut f = LogFormat {
            utc_offset,
            ..LogFormat::default()
        };
        let words: Vec<String> = text
            .split(|c: char| c == ',' || c == '|' || c.is_whitespace())
            .filter(|w| !w.is_empty())
            .map(|w| w.to_ascii_uppercase())
            .collect();
        if words.is_empty() {
            return f;
        }
        f.iso_date = false;
        for w in words {
            match w.as_str() {
                "ISO_DATE" => f.iso_date = true,
                "LEGACY" => f.iso_date = false,
                "UTC" => f.utc = true,
                "SUB_SECOND" => f.sub_second = true,
                _ => {}
            }
        }
        f
    }
}

/// CPU time as a `struct rusage` gives it, in whole seconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rusage {
    pub user_secs: i64,
    pub sys_secs: i64,
}

/// The usage figures of the evict and terminate events: this run's and the
/// job's totals, on the execute machine ("remote") and the access point
/// ("local"), and the bytes moved by file transfer.
#[derive(Clone, Debug, Default)]
pub struct Usage {
    pub run_remote: Rusage,
    pub run_local: Rusage,
    pub total_remote: Rusage,
    pub total_local: Rusage,
    pub run_sent_bytes: f64,
    pub run_received_bytes: f64,
    pub total_sent_bytes: f64,
    pub total_received_bytes: f64,
    /// The resources table (`Partitionable Resources : Usage Request
    /// Allocated`): an ad with `<Res>`, `Request<Res>`, `<Res>Usage` and
    /// `Assigned<Res>` attributes, as the shadow builds it.
    pub resources: Option<ClassAd>,
}

/// Ads have no equality of their own; two tables are equal when they print alike.
pub(crate) fn same_ad(a: &Option<ClassAd>, b: &Option<ClassAd>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(x), Some(y)) => x.to_string() == y.to_string(),
        _ => false,
    }
}

impl PartialEq for Usage {
    fn eq(&self, o: &Usage) -> bool {
        self.run_remote == o.run_remote
            && self.run_local == o.run_local
            && self.total_remote == o.total_remote
            && self.total_local == o.total_local
            && self.run_sent_bytes == o.run_sent_bytes
            && self.run_received_bytes == o.run_received_bytes
            && self.total_sent_bytes == o.total_sent_bytes
            && self.total_received_bytes == o.total_received_bytes
            && same_ad(&self.resources, &o.resources)
    }
}

/// How a job's process ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExitHow {
    /// It exited with this code.
    Code(i64),
    /// An unhandled signal ended it; `core_file` names its core dump, if any.
    Signal {
        signal: i64,
        core_file: Option<String>,
    },
}

/// Who ended a job ("ToE", ticket of execution), as the shadow records it
/// at the end of a terminate event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EndedBy {
    /// The job's process ended by itself at `when` (epoch seconds).
    ItsOwnAccord { when: i64, how: ExitHow },
    /// Something else ended it: `who` (`"startd"`), `how_code` and `how`
    /// (`DEACTIVATE_CLAIM`, ...).
    Other {
        who: String,
        when: i64,
        how_code: i64,
        how: String,
    },
}

/// One event of the job event log, with HTCondor's number.
#[derive(Clone, Debug, PartialEq)]
pub enum LogEvent {
    /// 000: the job entered the queue.
    Submit {
        /// The schedd's address, `<128.105.136.53:37317?...>`.
        host: String,
        /// `SubmitEventNotes` of the job.
        log_notes: Option<String>,
        /// `SubmitEventUserNotes` of the job.
        user_notes: Option<String>,
        /// A submit warning (a failed `SUBMIT_REQUIREMENT_<Name>_IS_WARNING`).
        warnings: Option<String>,
    },
    /// 001: the job started on an execute point.
    Execute {
        /// The startd's address.
        host: String,
        /// The slot, `slot1_1@host`.
        slot_name: Option<String>,
    },
    /// 004: the job left its machine without finishing (or it finished
    /// and `OnExitRemove` put it back in the queue: `requeued`).
    Evicted {
        checkpointed: bool,
        usage: Usage,
        requeued: Option<ExitHow>,
        reason: Option<String>,
    },
    /// 005: the job finished.
    Terminated {
        how: ExitHow,
        usage: Usage,
        ended_by: Option<EndedBy>,
    },
    /// 009: the job was removed.
    Aborted { reason: Option<String> },
    /// 010
    Suspended { num_pids: i64 },
    /// 011
    Unsuspended,
    /// 012
    Held {
        reason: Option<String>,
        code: i64,
        subcode: i64,
    },
    /// 013
    Released { reason: Option<String> },
    /// 022: the access point lost word of the job's execute point.
    Disconnected {
        reason: String,
        startd_name: String,
        startd_addr: String,
    },
    /// 023
    Reconnected {
        startd_name: String,
        startd_addr: String,
        starter_addr: String,
    },
    /// 024: the job is rescheduled.
    ReconnectFailed { reason: String, startd_name: String },
}

impl LogEvent {
    /// HTCondor's `ULogEventNumber`.
    pub fn number(&self) -> u32 {
        match self {
            LogEvent::Submit { .. } => 0,
            LogEvent::Execute { .. } => 1,
            LogEvent::Evicted { .. } => 4,
            LogEvent::Terminated { .. } => 5,
            LogEvent::Aborted { .. } => 9,
            LogEvent::Suspended { .. } => 10,
            LogEvent::Unsuspended => 11,
            LogEvent::Held { .. } => 12,
            LogEvent::Released { .. } => 13,
            LogEvent::Disconnected { .. } => 22,
            LogEvent::Reconnected { .. } => 23,
            LogEvent::ReconnectFailed { .. } => 24,
        }
    }

    /// The event as HTCondor writes it: header, body and the `...` line.
    pub fn format(&self, job: JobId, time: i64, fmt: &LogFormat) -> String {
        let mut out = String::with_capacity(256);
        header(&mut out, self.number(), job, time, fmt);
        self.body(&mut Body { out: &mut out });
        out.push_str("...\n");
        out
    }

    fn body(&self, b: &mut Body) {
        match self {
            LogEvent::Submit {
                host,
                log_notes,
                user_notes,
                warnings,
            } => {
                b.line(format_args!("Job submitted from host: {host}"));
                for note in [log_notes, user_notes].into_iter().flatten() {
                    if !note.is_empty() {
                        b.line(format_args!("    {}", truncate(note, 8191)));
                    }
                }
                if let Some(w) = warnings.as_deref().filter(|w| !w.is_empty()) {
                    b.line(format_args!(
                        "    WARNING: Committed job submission into the queue with the following warning(s): {}",
                        truncate(w, 8110)
                    ));
                }
            }
            LogEvent::Disconnected {
                reason,
                startd_name,
                startd_addr,
            } => {
                b.line(format_args!("Job disconnected, attempting to reconnect"));
                b.line(format_args!("    {}", truncate(reason, 8191)));
                b.line(format_args!(
                    "    Trying to reconnect to {startd_name} {startd_addr}"
                ));
            }
            LogEvent::Reconnected {
                startd_name,
                startd_addr,
                starter_addr,
            } => {
                b.line(format_args!("Job reconnected to {startd_name}"));
                b.line(format_args!("    startd address: {startd_addr}"));
                b.line(format_args!("    starter address: {starter_addr}"));
            }
            LogEvent::ReconnectFailed {
                reason,
                startd_name,
            } => {
                b.line(format_args!("Job reconnection failed"));
                b.line(format_args!("    {}", truncate(reason, 8191)));
                b.line(format_args!(
                    "    Can not reconnect to {startd_name}, rescheduling job"
                ));
            }
            LogEvent::Execute { host, slot_name } => {
                b.line(format_args!("Job executing on host: {host}"));
                if let Some(s) = slot_name.as_deref().filter(|s| !s.is_empty()) {
                    b.line(format_args!("\tSlotName: {s}"));
                }
            }
            LogEvent::Evicted {
                checkpointed,
                usage,
                requeued,
                reason,
            } => {
                b.line(format_args!("Job was evicted."));
                if requeued.is_some() {
                    b.line(format_args!("\t(0) Job terminated and was requeued"));
                } else if *checkpointed {
                    b.line(format_args!("\t(1) Job was checkpointed."));
                } else {
                    b.line(format_args!("\t(0) CPU times"));
                }
                rusage(b, usage.run_remote, "Run Remote Usage");
                rusage(b, usage.run_local, "Run Local Usage");
                b.line(format_args!(
                    "\t{:.0}  -  Run Bytes Sent By Job",
                    usage.run_sent_bytes
                ));
                b.line(format_args!(
                    "\t{:.0}  -  Run Bytes Received By Job",
                    usage.run_received_bytes
                ));
                match requeued {
                    Some(ExitHow::Code(c)) => {
                        b.line(format_args!("\t(1) Normal termination (return value {c})"));
                    }
                    Some(ExitHow::Signal { signal, core_file }) => {
                        b.line(format_args!("\t(0) Abnormal termination (signal {signal})"));
                        match core_file {
                            Some(f) => b.line(format_args!("\t(1) Corefile in: {f}")),
                            None => b.line(format_args!("\t(0) No core file")),
                        }
                    }
                    None => {}
                }
                reason_line(b, reason.as_deref());
                if let Some(ad) = &usage.resources {
                    resources_table(b, ad);
                }
            }
            LogEvent::Terminated {
                how,
                usage,
                ended_by,
            } => {
                b.line(format_args!("Job terminated."));
                match how {
                    ExitHow::Code(c) => {
                        b.line(format_args!("\t(1) Normal termination (return value {c})"));
                    }
                    ExitHow::Signal { signal, core_file } => {
                        b.line(format_args!("\t(0) Abnormal termination (signal {signal})"));
                        match core_file {
                            Some(f) => b.line(format_args!("\t(1) Corefile in: {f}")),
                            None => b.line(format_args!("\t(0) No core file")),
                        }
                    }
                }
                rusage(b, usage.run_remote, "Run Remote Usage");
                rusage(b, usage.run_local, "Run Local Usage");
                rusage(b, usage.total_remote, "Total Remote Usage");
                rusage(b, usage.total_local, "Total Local Usage");
                b.line(format_args!(
                    "\t{:.0}  -  Run Bytes Sent By Job",
                    usage.run_sent_bytes
                ));
                b.line(format_args!(
                    "\t{:.0}  -  Run Bytes Received By Job",
                    usage.run_received_bytes
                ));
                b.line(format_args!(
                    "\t{:.0}  -  Total Bytes Sent By Job",
                    usage.total_sent_bytes
                ));
                b.line(format_args!(
                    "\t{:.0}  -  Total Bytes Received By Job",
                    usage.total_received_bytes
                ));
                if let Some(ad) = &usage.resources {
                    resources_table(b, ad);
                }
                match ended_by {
                    Some(EndedBy::ItsOwnAccord { when, how }) => {
                        let (word, n) = match how {
                            ExitHow::Code(c) => ("exit-code", *c),
                            ExitHow::Signal { signal, .. } => ("signal", *signal),
                        };
                        b.line(format_args!(""));
                        b.line(format_args!(
                            "\tJob terminated of its own accord at {} with {word} {n}.",
                            iso8601_utc(*when)
                        ));
                    }
                    Some(EndedBy::Other {
                        who,
                        when,
                        how_code,
                        how,
                    }) => {
                        b.line(format_args!(""));
                        b.line(format_args!(
                            "\tJob terminated by {who} at {} (using method {how_code}: {how}).",
                            iso8601_utc(*when)
                        ));
                    }
                    None => {}
                }
            }
            LogEvent::Aborted { reason } => {
                b.line(format_args!("Job was aborted."));
                reason_line(b, reason.as_deref());
            }
            LogEvent::Suspended { num_pids } => {
                b.line(format_args!("Job was suspended."));
                b.line(format_args!(
                    "\tNumber of processes actually suspended: {num_pids}"
                ));
            }
            LogEvent::Unsuspended => b.line(format_args!("Job was unsuspended.")),
            LogEvent::Held {
                reason,
                code,
                subcode,
            } => {
                b.line(format_args!("Job was held."));
                match reason.as_deref().filter(|r| !r.is_empty()) {
                    Some(r) => b.line(format_args!("\t{r}")),
                    None => b.line(format_args!("\tReason unspecified")),
                }
                b.line(format_args!("\tCode {code} Subcode {subcode}"));
            }
            LogEvent::Released { reason } => {
                b.line(format_args!("Job was released."));
                reason_line(b, reason.as_deref());
            }
        }
    }
}

/// Where an event's body is written. Every piece of text goes through
/// [`flat_into`], values and the fixed texts alike, and only [`Body::line`]
/// ends a line: whatever a value holds, it stays on the line it was put on.
struct Body<'a> {
    out: &'a mut String,
}

impl Body<'_> {
    /// One line of text.
    fn line(&mut self, args: fmt::Arguments<'_>) {
        let _ = Flat(self.out).write_fmt(args);
        self.out.push('\n');
    }
}

/// The only writer of a body's text (see [`Body`]).
struct Flat<'a>(&'a mut String);

impl fmt::Write for Flat<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        flat_into(self.0, s);
        Ok(())
    }
}

/// Appends `s` so that it cannot end or start a line, as HTCondor stores
/// the texts of its events (`ULogEvent::set_reason_member`): a newline
/// becomes `|` and a carriage return a blank. A NUL ends the text there, as
/// C's `%s` ends it when HTCondor formats the event (a NUL in the file
/// would make HTCondor's reader take the line for a truncated one). Other
/// characters, tabs included, are written as they are, as HTCondor writes
/// them.
fn flat_into(out: &mut String, s: &str) {
    if !s.bytes().any(|b| matches!(b, b'\n' | b'\r' | 0)) {
        out.push_str(s);
        return;
    }
    for c in s.chars() {
        match c {
            '\n' => out.push('|'),
            '\r' => out.push(' '),
            '\0' => return,
            c => out.push(c),
        }
    }
}

/// `NNN (CCC.PPP.SSS) DATE TIME ` (`ULogEvent::formatHeader`).
fn header(out: &mut String, number: u32, job: JobId, time: i64, fmt: &LogFormat) {
    let _ = write!(out, "{number:03} ({:03}.{:03}.000) ", job.cluster, job.proc);
    let offset = if fmt.utc { 0 } else { fmt.utc_offset };
    let c = civil(time, offset);
    if fmt.iso_date {
        let _ = write!(
            out,
            "{:04}-{:02}-{:02} {:02}:{:02}:{:02}",
            c.year, c.month, c.day, c.hour, c.minute, c.second
        );
    } else {
        let _ = write!(
            out,
            "{:02}/{:02} {:02}:{:02}:{:02}",
            c.month, c.day, c.hour, c.minute, c.second
        );
    }
    if fmt.sub_second {
        out.push_str(".000");
    }
    if fmt.utc {
        out.push('Z');
    }
    out.push(' ');
}

/// `2023-11-14T22:13:20Z`, as the ToE line writes its time.
fn iso8601_utc(time: i64) -> String {
    let c = civil(time, 0);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
        c.year, c.month, c.day, c.hour, c.minute, c.second
    )
}

/// `\t\tUsr D HH:MM:SS, Sys D HH:MM:SS  -  {what}` (`ULogEvent::formatRusage`).
fn rusage(b: &mut Body, r: Rusage, what: &str) {
    let split = |s: i64| (s / 86400, (s % 86400) / 3600, (s % 3600) / 60, s % 60);
    let (ud, uh, um, us) = split(r.user_secs);
    let (sd, sh, sm, ss) = split(r.sys_secs);
    b.line(format_args!(
        "\t\tUsr {ud} {uh:02}:{um:02}:{us:02}, Sys {sd} {sh:02}:{sm:02}:{ss:02}  -  {what}"
    ));
}

/// An optional reason line.
fn reason_line(b: &mut Body, reason: Option<&str>) {
    if let Some(r) = reason.filter(|r| !r.is_empty()) {
        b.line(format_args!("\t{r}"));
    }
}

/// At most `max` bytes of `s` (`%.8191s`), cut at a character boundary.
fn truncate(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

#[derive(Default)]
struct ResourceRow {
    usage: String,
    request: String,
    allocated: String,
    assigned: String,
}

/// The value as the table prints it: reals with a fractional part as
/// `%.2f`, whole reals as integers, anything else unparsed. The flag says
/// whether it had a fractional part.
fn table_value(e: &Expr) -> (String, bool) {
    if let Expr::Lit(Value::Real(r)) = e {
        if r.fract() > 0.0 {
            return (format!("{r:.2}"), true);
        }
        return (format!("{}", r.trunc() as i64), false);
    }
    (expr_to_old_syntax(e), false)
}

fn is_bare_integer(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// The `Partitionable Resources` table of the evict and terminate events
/// (`formatUsageAd`): one row per resource, sorted by name ignoring case,
/// columns as wide as their widest value; integers padded to line up with
/// `%.2f` values in the same column.
fn resources_table(b: &mut Body, ad: &ClassAd) {
    let mut rows: Vec<(String, ResourceRow)> = Vec::new();
    fn row(rows: &mut Vec<(String, ResourceRow)>, name: &str) -> usize {
        match rows.iter().position(|(n, _)| n.eq_ignore_ascii_case(name)) {
            Some(i) => i,
            None => {
                rows.push((name.to_string(), ResourceRow::default()));
                rows.len() - 1
            }
        }
    }
    let (mut req_frac, mut assigned_frac, mut alloc_frac, mut use_frac) =
        (false, false, false, false);
    let mut loose = Vec::new();
    for (name, e) in ad.iter_inserted() {
        let name = name.as_str();
        let (value, frac) = table_value(e);
        let resource = if let Some(r) = name.strip_prefix("Request") {
            let i = row(&mut rows, r);
            rows[i].1.request = value.clone();
            req_frac |= frac;
            r
        } else if let Some(r) = name.strip_prefix("Assigned") {
            let i = row(&mut rows, r);
            rows[i].1.assigned = value.clone();
            assigned_frac = frac;
            r
        } else if let Some(r) = name.strip_suffix("AverageUsage") {
            let i = row(&mut rows, r);
            rows[i].1.usage = value.clone();
            use_frac |= frac;
            r
        } else if let Some(r) = name.strip_suffix("Usage") {
            let i = row(&mut rows, r);
            rows[i].1.usage = value.clone();
            use_frac |= frac;
            r
        } else {
            let i = row(&mut rows, name);
            rows[i].1.allocated = value.clone();
            alloc_frac |= frac;
            name
        };
        if resource.is_empty() {
            loose.push((name, value));
        }
    }
    for (name, value) in loose {
        b.line(format_args!("\t{name} = {value}"));
    }
    if rows.is_empty() {
        return;
    }
    rows.sort_by_key(|(n, _)| n.to_ascii_lowercase());
    // sizeof("Memory (MB)") counts the terminating NUL: 12.
    let (mut w_res, mut w_use, mut w_req, mut w_alloc, mut w_assigned) = (12, 8, 8, 0, 0);
    for (name, r) in &mut rows {
        if use_frac && is_bare_integer(&r.usage) {
            r.usage.push_str("   ");
        }
        if req_frac && is_bare_integer(&r.request) {
            r.request.push_str("   ");
        }
        if alloc_frac && is_bare_integer(&r.allocated) {
            r.allocated.push_str("   ");
        }
        if assigned_frac && is_bare_integer(&r.assigned) {
            r.assigned.push_str("   ");
        }
        w_res = w_res.max(name.len());
        w_use = w_use.max(r.usage.len());
        w_req = w_req.max(r.request.len());
        w_alloc = w_alloc.max(r.allocated.len());
        w_assigned = w_assigned.max(r.assigned.len());
    }
    let w_alloc_col = w_alloc.max(9);
    b.line(format_args!(
        "\tPartitionable Resources : {:>w_use$} {:>w_req$} {:>w_alloc_col$} {}",
        "Usage",
        "Request",
        if w_alloc > 0 { "Allocated" } else { "" },
        if w_assigned > 0 { "Assigned" } else { "" },
    ));
    let w_label = w_res + 8;
    // A nameless row (an attribute named just `Request` or `Usage`) widens
    // the columns but is not printed, as in HTCondor.
    for (name, r) in rows.iter().filter(|(n, _)| !n.is_empty()) {
        let label = match name.as_str() {
            "Memory" | "GpusMemory" => format!("{name} (MB)"),
            "Disk" => format!("{name} (KB)"),
            "Gpus" => format!("{name} (Average)"),
            "TimeExecute" | "TimeSlotBusy" => format!("{name} (s)"),
            _ => name.clone(),
        };
        b.line(format_args!(
            "\t   {label:<w_label$} : {:>w_use$} {:>w_req$} {:>w_alloc_col$} {}",
            r.usage, r.request, r.allocated, r.assigned
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // 2023-11-14 22:13:20 UTC
    const T: i64 = 1_700_000_000;

    fn utc() -> LogFormat {
        LogFormat::default()
    }

    /// 022, 023 and 024 as HTCondor's JobDisconnectedEvent,
    /// JobReconnectedEvent and JobReconnectFailedEvent write them
    /// (`condor_event.cpp`).
    #[test]
    fn the_reconnect_events_are_htcondor_s() {
        let job = JobId::new(7, 1);
        assert_eq!(
            LogEvent::Disconnected {
                reason: "Socket between submit and execute hosts closed unexpectedly".into(),
                startd_name: "slot1@ep1@host".into(),
                startd_addr: "<10.0.0.3:9618?noUDP>".into(),
            }
            .format(job, T, &utc()),
            "022 (007.001.000) 2023-11-14 22:13:20 Job disconnected, attempting to reconnect\n\
             \x20   Socket between submit and execute hosts closed unexpectedly\n\
             \x20   Trying to reconnect to slot1@ep1@host <10.0.0.3:9618?noUDP>\n...\n"
        );
        assert_eq!(
            LogEvent::Reconnected {
                startd_name: "slot1@ep1@host".into(),
                startd_addr: "<10.0.0.3:9618>".into(),
                starter_addr: "<10.0.0.3:9618>".into(),
            }
            .format(job, T, &utc()),
            "023 (007.001.000) 2023-11-14 22:13:20 Job reconnected to slot1@ep1@host\n\
             \x20   startd address: <10.0.0.3:9618>\n\
             \x20   starter address: <10.0.0.3:9618>\n...\n"
        );
        assert_eq!(
            LogEvent::ReconnectFailed {
                reason: "Job disconnected too long: JobLeaseDuration (20 seconds) expired".into(),
                startd_name: "slot1@ep1@host".into(),
            }
            .format(job, T, &utc()),
            "024 (007.001.000) 2023-11-14 22:13:20 Job reconnection failed\n\
             \x20   Job disconnected too long: JobLeaseDuration (20 seconds) expired\n\
             \x20   Can not reconnect to slot1@ep1@host, rescheduling job\n...\n"
        );
        cannot_forge("disconnect reason", |v| LogEvent::Disconnected {
            reason: v.into(),
            startd_name: v.into(),
            startd_addr: v.into(),
        });
        cannot_forge("reconnect failure", |v| LogEvent::ReconnectFailed {
            reason: v.into(),
            startd_name: v.into(),
        });
    }

    #[test]
    fn header_is_htcondors_iso_local_time() {
        let e = LogEvent::Unsuspended;
        assert_eq!(
            e.format(JobId::new(1, 0), T, &utc()),
            "011 (001.000.000) 2023-11-14 22:13:20 Job was unsuspended.\n...\n"
        );
        let cet = LogFormat {
            utc_offset: 3600,
            ..LogFormat::default()
        };
        assert!(e
            .format(JobId::new(1234, 12), T, &cet)
            .starts_with("011 (1234.012.000) 2023-11-14 23:13:20 "));
        let legacy = LogFormat::from_options("LEGACY", 0);
        assert!(e
            .format(JobId::new(1, 0), T, &legacy)
            .starts_with("011 (001.000.000) 11/14 22:13:20 "));
        let z = LogFormat::from_options("ISO_DATE UTC SUB_SECOND", 3600);
        assert!(e
            .format(JobId::new(1, 0), T, &z)
            .starts_with("011 (001.000.000) 2023-11-14 22:13:20.000Z "));
    }

    #[test]
    fn resources_table_lines_up_like_htcondors() {
        let ad = ClassAd::parse(
            "[ Cpus = 1; RequestCpus = 1; CpusUsage = 0.02; Disk = 1029772; RequestDisk = 1; DiskUsage = 25; Memory = 512; RequestMemory = 1; MemoryUsage = 0 ]",
        )
        .unwrap();
        let mut out = String::new();
        resources_table(&mut Body { out: &mut out }, &ad);
        assert_eq!(
            out,
            "\tPartitionable Resources :    Usage  Request Allocated \n\
             \t   Cpus                 :     0.02        1         1 \n\
             \t   Disk (KB)            :    25           1   1029772 \n\
             \t   Memory (MB)          :     0           1       512 \n"
        );
    }

    // What a user or a daemon might put in a value to forge lines: bare
    // newlines, Windows line ends, and a whole fake event with its `...`.
    const FORGERIES: [&str; 4] = [
        "one\ntwo",
        "one\r\ntwo\r",
        "x\n005 (001.000.000) 11/24 10:00:00 Job terminated.\n\t(1) Normal termination (return value 0)\n...\n",
        "x\r\n...\r\n005 (001.000.000) 2023-11-24 10:00:00 Job terminated.\r\n...",
    ];

    /// Whether a line starts an event: `NNN (`.
    fn starts_event(line: &str) -> bool {
        let b = line.as_bytes();
        b.len() >= 5 && b[..3].iter().all(u8::is_ascii_digit) && &b[3..5] == b" ("
    }

    /// `make(value)` carries `value` into one of an event's texts: with any
    /// forgery, the event has as many lines as with a plain value, one
    /// header, one `...` (its last line), no carriage return, and the fake
    /// header is not at the start of a line.
    fn cannot_forge(what: &str, make: impl Fn(&str) -> LogEvent) {
        let write = |v: &str| make(v).format(JobId::new(1, 0), T, &utc());
        let plain = write("plain");
        assert!(plain.contains("plain"), "{what}: the value is not written");
        for forged in FORGERIES {
            let text = write(forged);
            let lines: Vec<&str> = text.split_terminator('\n').collect();
            assert_eq!(
                text.matches('\n').count(),
                plain.matches('\n').count(),
                "{what}: {forged:?} changed the number of lines:\n{text}"
            );
            assert!(!text.contains('\r'), "{what}: a carriage return:\n{text}");
            assert_eq!(
                lines.iter().filter(|l| starts_event(l)).count(),
                1,
                "{what}: a second header:\n{text}"
            );
            assert!(starts_event(lines[0]), "{what}:\n{text}");
            assert_eq!(
                lines.iter().filter(|l| l.trim_end() == "...").count(),
                1,
                "{what}: a second `...`:\n{text}"
            );
            assert_eq!(lines.last(), Some(&"..."), "{what}:\n{text}");
            assert!(
                !text.contains("\n005 ("),
                "{what}: the fake header starts a line:\n{text}"
            );
        }
    }

    fn some(v: &str) -> Option<String> {
        Some(v.to_string())
    }

    #[test]
    fn no_submit_text_adds_a_line() {
        let submit = |host: &str, log: &str, user: &str, warn: &str| LogEvent::Submit {
            host: host.into(),
            log_notes: some(log),
            user_notes: some(user),
            warnings: some(warn),
        };
        cannot_forge("submit host", |v| submit(v, "n", "u", "w"));
        cannot_forge("SubmitEventNotes", |v| submit("<h>", v, "u", "w"));
        cannot_forge("SubmitEventUserNotes", |v| submit("<h>", "n", v, "w"));
        cannot_forge("submit warning", |v| submit("<h>", "n", "u", v));
    }

    #[test]
    fn no_execute_text_adds_a_line() {
        cannot_forge("execute host", |v| LogEvent::Execute {
            host: v.into(),
            slot_name: some("slot1@h"),
        });
        cannot_forge("slot name", |v| LogEvent::Execute {
            host: "<h>".into(),
            slot_name: some(v),
        });
    }

    #[test]
    fn no_reason_adds_a_line() {
        cannot_forge("hold reason", |v| LogEvent::Held {
            reason: some(v),
            code: 1,
            subcode: 0,
        });
        cannot_forge("remove reason", |v| LogEvent::Aborted { reason: some(v) });
        cannot_forge("release reason", |v| LogEvent::Released { reason: some(v) });
        cannot_forge("evict reason", |v| LogEvent::Evicted {
            checkpointed: false,
            usage: Usage::default(),
            requeued: None,
            reason: some(v),
        });
        cannot_forge("requeue reason", |v| LogEvent::Evicted {
            checkpointed: false,
            usage: Usage::default(),
            requeued: Some(ExitHow::Code(1)),
            reason: some(v),
        });
    }

    #[test]
    fn no_evict_or_terminate_text_adds_a_line() {
        let core = |f: &str| ExitHow::Signal {
            signal: 11,
            core_file: some(f),
        };
        cannot_forge("requeue core file", |v| LogEvent::Evicted {
            checkpointed: false,
            usage: Usage::default(),
            requeued: Some(core(v)),
            reason: None,
        });
        cannot_forge("terminate core file", |v| LogEvent::Terminated {
            how: core(v),
            usage: Usage::default(),
            ended_by: None,
        });
        let ended = |who: &str, how: &str| LogEvent::Terminated {
            how: ExitHow::Code(0),
            usage: Usage::default(),
            ended_by: Some(EndedBy::Other {
                who: who.into(),
                when: T,
                how_code: 1,
                how: how.into(),
            }),
        };
        cannot_forge("ToE who", |v| ended(v, "DEACTIVATE_CLAIM"));
        cannot_forge("ToE how", |v| ended("startd", v));
    }

    #[test]
    fn no_resource_value_adds_a_line() {
        // A string-valued custom resource, in the table and as a loose
        // attribute (one named `Usage` belongs to no resource).
        for attr in ["AssignedFoo", "Usage"] {
            cannot_forge(attr, |v| {
                let mut ad = ClassAd::parse("[ Cpus = 1; RequestCpus = 1 ]").unwrap();
                ad.insert_value(attr, v);
                LogEvent::Terminated {
                    how: ExitHow::Code(0),
                    usage: Usage {
                        resources: Some(ad),
                        ..Usage::default()
                    },
                    ended_by: None,
                }
            });
        }
    }

    #[test]
    fn values_are_flattened_as_htcondor_flattens_reasons() {
        // `ULogEvent::set_reason_member`: `\n` becomes `|`, `\r` a blank;
        // C's `%s` ends a value at a NUL.
        let aborted =
            |r: &str| LogEvent::Aborted { reason: some(r) }.format(JobId::new(1, 0), T, &utc());
        assert_eq!(
            aborted("a\r\nb\nc\td"),
            "009 (001.000.000) 2023-11-14 22:13:20 Job was aborted.\n\ta |b|c\td\n...\n"
        );
        assert_eq!(
            aborted("kept\0dropped\nline"),
            "009 (001.000.000) 2023-11-14 22:13:20 Job was aborted.\n\tkept\n...\n"
        );
        let notes = LogEvent::Submit {
            host: "<h>".into(),
            log_notes: some("DAG Node: A\n000 (002.000.000) fake"),
            user_notes: None,
            warnings: None,
        };
        assert_eq!(
            notes.format(JobId::new(1, 0), T, &utc()),
            "000 (001.000.000) 2023-11-14 22:13:20 Job submitted from host: <h>\n    DAG Node: A|000 (002.000.000) fake\n...\n"
        );
    }
}
