//! `ferrocondor stats`: the pool's history from a view collector
//! (KEEP_POOL_HISTORY), as HTCondor's condor_stats asks for it and prints
//! it: a machine's state, keyboard idle time and load over a time range
//! (`-resourcequery`), a user's running and idle jobs (`-userquery`), the
//! pool's slots by state (`-resgroupquery`), the names known
//! (`-resourcelist`, `-userlist`, ...); and, ferrocondor's own, `-html`:
//! a page in the simulator's report style plotting the pool's slots by
//! state and each user's jobs over the range. Presentation only: the
//! view collector answers from its files (`negotiator::pool_history`).

use std::io::Write;

use negotiator::pool_history::{commands as hist, parse_line, STATES};

use crate::daemon_client::{Daemons, Kind};
use crate::errors::{Error, Outcome};

const USAGE: &str = "stats [-f FILE] [-orgformat] [-pool HOST[:PORT]] [-lastday | -lastweek | -lastmonth | -lasthours H | -from M D Y [-to M D Y]] {-resourcequery NAME | -resourcelist | -resgroupquery NAME | -resgrouplist | -userquery NAME | -userlist | -usergroupquery NAME | -usergrouplist | -html}";

const DAY: i64 = 24 * 3600;

/// What was asked, read from condor_stats' options.
#[derive(Debug, PartialEq)]
pub struct Request {
    pub from: i64,
    pub to: i64,
    /// `-orgformat`: the lines as the view collector stores them.
    pub raw: bool,
    pub pool: Option<String>,
    pub file: Option<String>,
    pub what: What,
    /// The range was given (else the last day, which `-html` narrows to
    /// the samples there are).
    pub explicit: bool,
}

#[derive(Debug, PartialEq)]
pub enum What {
    /// One of the QUERY_HIST_* commands, with its name (empty for lists).
    Query(i32, String),
    /// The HTML report.
    Html,
}

/// Midnight (local time, `offset` seconds east of UTC) of a date, as
/// condor_stats' `-from`/`-to` take it (a two-digit year below 50 is
/// 20YY, else 19YY).
fn midnight(month: i64, day: i64, year: i64, offset: i32) -> i64 {
    let year = match year {
        y if y < 50 => 2000 + y,
        y if y < 100 => 1900 + y,
        y => y,
    };
    // Days from the civil date (Howard Hinnant's algorithm).
    let (y, m) = if month <= 2 {
        (year - 1, month + 9)
    } else {
        (year, month - 3)
    };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * m + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    days * DAY - i64::from(offset)
}

/// Reads condor_stats' command line (HTCondor's option names, each
/// whole, as its argument loop compares them).
pub fn parse(args: &[String], now: i64, offset: i32) -> Result<Request, Error> {
    let usage = || Error::Usage(USAGE.into());
    let mut r = Request {
        from: now - DAY,
        to: now,
        raw: false,
        pool: None,
        file: None,
        what: What::Html,
        explicit: false,
    };
    let mut what = None;
    let mut i = 0;
    let value = |i: usize| args.get(i + 1).cloned().ok_or_else(usage);
    let date = |i: usize| -> Result<i64, Error> {
        let n = |k: usize| {
            args.get(i + k)
                .and_then(|s| s.parse::<i64>().ok())
                .ok_or_else(usage)
        };
        Ok(midnight(n(1)?, n(2)?, n(3)?, offset))
    };
    while i < args.len() {
        let a = args[i].as_str();
        let query = |c: i32| Some(What::Query(c, String::new()));
        match a {
            "-lastday" | "-lastweek" | "-lastmonth" => {
                r.explicit = true;
                r.to = now;
                r.from = now
                    - match a {
                        "-lastday" => DAY,
                        "-lastweek" => 7 * DAY,
                        _ => 30 * DAY,
                    };
            }
            "-lasthours" => {
                let h: i64 = value(i)?.parse().map_err(|_| usage())?;
                r.explicit = true;
                r.to = now;
                r.from = now - h * 3600;
                i += 1;
            }
            "-from" => {
                r.explicit = true;
                r.from = date(i)?;
                i += 3;
            }
            "-to" => {
                r.explicit = true;
                r.to = date(i)?;
                i += 3;
            }
            "-resourcelist" => what = query(hist::QUERY_HIST_STARTD_LIST),
            "-resgrouplist" => what = query(hist::QUERY_HIST_GROUPS_LIST),
            "-userlist" => what = query(hist::QUERY_HIST_SUBMITTOR_LIST),
            "-usergrouplist" => what = query(hist::QUERY_HIST_SUBMITTORGROUPS_LIST),
            "-resourcequery" | "-resgroupquery" | "-userquery" | "-usergroupquery" => {
                let c = match a {
                    "-resourcequery" => hist::QUERY_HIST_STARTD,
                    "-resgroupquery" => hist::QUERY_HIST_GROUPS,
                    "-userquery" => hist::QUERY_HIST_SUBMITTOR,
                    _ => hist::QUERY_HIST_SUBMITTORGROUPS,
                };
                let name = value(i)?;
                if name.len() > 200 {
                    return Err(Error::Usage("the name is too long (200 characters at most)".into()));
                }
                what = Some(What::Query(c, name));
                i += 1;
            }
            "-html" => what = Some(What::Html),
            "-orgformat" => r.raw = true,
            "-pool" => {
                r.pool = Some(value(i)?);
                i += 1;
            }
            "-f" => {
                r.file = Some(value(i)?);
                i += 1;
            }
            "-ckptquery" | "-ckptlist" => {
                return Err(Error::Usage(
                    "checkpoint servers are gone (-ckptquery, -ckptlist): ferrocondor keeps no history of them".into(),
                ))
            }
            _ => return Err(usage()),
        }
        i += 1;
    }
    r.what = what.ok_or_else(usage)?;
    if r.from < 0 || r.from > now || r.to < r.from {
        return Err(Error::Usage(format!(
            "the range is empty or in the future; {USAGE}"
        )));
    }
    Ok(r)
}

/// condor_stats' line for a machine's sample: the time (percent of the
/// range), keyboard idle seconds, load average and the state's name.
fn resource_line(line: &str) -> String {
    let f: Vec<&str> = line.split_whitespace().collect();
    let t: f64 = f.first().and_then(|x| x.parse().ok()).unwrap_or(0.0);
    let kbd: f64 = f.get(1).and_then(|x| x.parse().ok()).unwrap_or(0.0);
    let load: f64 = f.get(2).and_then(|x| x.parse().ok()).unwrap_or(0.0);
    let state = f
        .get(3)
        .and_then(|x| x.parse::<f64>().ok())
        .map(|s| s as usize)
        .filter(|s| (1..=STATES.len()).contains(s))
        .map(|s| match STATES[s - 1] {
            "Preempting" => "PRE-EMPTING".to_string(),
            name => name.to_ascii_uppercase(),
        })
        .unwrap_or_else(|| "UNKNOWN".into());
    format!("{t:.6}\t{kbd:.0}\t{load:.6}\t{state}\n")
}

/// Asks the view collector one history query: the lines of its answer.
fn ask(
    d: &Daemons,
    command: i32,
    from: i64,
    to: i64,
    raw: bool,
    name: &str,
) -> Result<Vec<String>, Error> {
    let addr = d.collector()?.clone();
    let fail = |e| d.broken(Kind::Collector, &addr, command, e);
    let mut sock = d.connect(Kind::Collector, &addr, command)?;
    let mut e = sock.encoder();
    e.put_int(from)
        .put_int(to)
        .put_int(i64::from(raw))
        .put_str(name);
    sock.send(&e).map_err(fail)?;
    let mut lines = Vec::new();
    loop {
        let msg = sock.recv().map_err(fail)?;
        let mut dec = sock.decoder(&msg);
        while dec.remaining() > 0 {
            let line = dec
                .get_str()
                .map_err(|e| fail(cedar::SockError::Decode(e)))?;
            if line.is_empty() {
                return Ok(lines);
            }
            lines.push(line);
        }
    }
}

pub fn run(args: &[String], now: i64, out: &mut dyn Write) -> Result<Outcome, Error> {
    if args
        .iter()
        .any(|a| a == "-help" || a == "--help" || a == "-h")
    {
        writeln!(out, "usage: {USAGE}")?;
        return Ok(Outcome::Success);
    }
    let offset = crate::system::utc_offset(now);
    let r = parse(args, now, offset)?;
    // condor_stats asks the view collector: -pool, else CONDOR_VIEW_HOST,
    // else the pool's collector (which may be one).
    let config = crate::system::ToolConfig::load()?;
    let view = config.get("CONDOR_VIEW_HOST").and_then(|v| {
        v.split([',', ' '])
            .find(|s| !s.is_empty())
            .map(str::to_string)
    });
    let pool = r.pool.clone().or(view);
    let d = Daemons::new(None)?.located(pool.as_deref(), None);
    let mut text = String::new();
    match &r.what {
        What::Query(command, name) => {
            let lines = ask(&d, *command, r.from, r.to, r.raw, name)?;
            for l in &lines {
                if !r.raw && *command == hist::QUERY_HIST_STARTD {
                    text.push_str(&resource_line(l));
                } else {
                    text.push_str(l);
                }
            }
            if lines.is_empty() {
                text.push_str("No Data.\n");
            }
        }
        What::Html => text = html(&d, &r, offset)?,
    }
    match &r.file {
        Some(f) => std::fs::write(f, text).map_err(|source| Error::Read {
            path: f.clone(),
            source,
        })?,
        None => out.write_all(text.as_bytes())?,
    }
    Ok(Outcome::Success)
}

/// `YYYY-MM-DD HH:MM` in local time.
fn when(t: i64, offset: i32) -> String {
    let c = classad::time::civil(t, offset);
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}",
        c.year, c.month, c.day, c.hour, c.minute
    )
}

/// Raw history lines (`-orgformat`) as times and, per line, its values.
fn samples(lines: &[String]) -> Vec<(i64, String, Vec<f64>)> {
    lines
        .iter()
        .filter_map(|l| {
            let p = parse_line(l.trim_end_matches('\n'))?;
            let v = p
                .rest
                .split_whitespace()
                .map(|x| x.parse().unwrap_or(0.0))
                .collect();
            Some((p.time, p.key.to_string(), v))
        })
        .collect()
}

/// The HTML report: the pool's slots by state (stacked), each user's
/// running and idle jobs, and the machines' last samples.
fn html(d: &Daemons, r: &Request, offset: i32) -> Result<String, Error> {
    use sim::report::{escape, html_head, svg_chart};
    let totals = samples(&ask(
        d,
        hist::QUERY_HIST_GROUPS,
        r.from,
        r.to,
        true,
        "Total",
    )?);
    let times: Vec<i64> = totals.iter().map(|(t, _, _)| *t).collect();
    // Without a range, the charts begin at the first sample of the day.
    let from = match (r.explicit, times.first()) {
        (false, Some(&t)) => t.min(r.to),
        _ => r.from,
    };
    let labels = (when(from, offset), when(r.to, offset));
    let labels = (labels.0.as_str(), labels.1.as_str());
    let span = r.to - from;
    let mut h = html_head("ferrocondor pool history");
    h.push_str(&format!(
        "<h1>Pool history</h1>\n<p>from {} to {}, as the view collector at {} keeps it</p>\n",
        labels.0,
        labels.1,
        escape(&d.collector()?.to_string())
    ));

    let series: Vec<(String, Vec<f64>)> = STATES
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let v: Vec<f64> = totals
                .iter()
                .map(|(_, _, v)| v.get(i).copied().unwrap_or(0.0))
                .collect();
            (s.to_string(), v)
        })
        .filter(|(_, v)| v.iter().any(|x| *x > 0.0))
        .collect();
    h.push_str("<h2>Slots by state</h2>\n");
    h.push_str(&svg_chart(&times, from, span, &series, true, labels));

    let users: Vec<String> = ask(
        d,
        hist::QUERY_HIST_SUBMITTORGROUPS_LIST,
        r.from,
        r.to,
        false,
        "",
    )?
    .into_iter()
    .map(|u| u.trim_end().to_string())
    .filter(|u| u != "Total" && !u.is_empty())
    .collect();
    let mut per_user = Vec::new();
    for u in &users {
        per_user.push((
            u.clone(),
            samples(&ask(
                d,
                hist::QUERY_HIST_SUBMITTORGROUPS,
                r.from,
                r.to,
                true,
                u,
            )?),
        ));
    }
    for (title, column) in [("Running jobs per user", 0), ("Idle jobs per user", 1)] {
        h.push_str(&format!("<h2>{title}</h2>\n"));
        // One time axis: every user's sample times, a user's missing
        // sample counted as none.
        let mut times: Vec<i64> = per_user
            .iter()
            .flat_map(|(_, s)| s.iter().map(|(t, _, _)| *t))
            .collect();
        times.sort_unstable();
        times.dedup();
        let series: Vec<(String, Vec<f64>)> = per_user
            .iter()
            .map(|(u, s)| {
                let v = times
                    .iter()
                    .map(|t| {
                        s.iter()
                            .find(|(st, _, _)| st == t)
                            .and_then(|(_, _, v)| v.get(column).copied())
                            .unwrap_or(0.0)
                    })
                    .collect();
                (u.clone(), v)
            })
            .collect();
        h.push_str(&svg_chart(&times, from, span, &series, false, labels));
    }

    let machines = samples(&ask(d, hist::QUERY_HIST_STARTD, r.from, r.to, true, "*")?);
    let mut last: std::collections::BTreeMap<String, (i64, Vec<f64>, usize)> = Default::default();
    for (t, name, v) in machines {
        let e = last.entry(name).or_insert((t, Vec::new(), 0));
        e.0 = t;
        e.1 = v;
        e.2 += 1;
    }
    h.push_str("<h2>Machines</h2>\n<table><tr><th>slot</th><th>samples</th><th>last sample</th><th>state</th><th>load</th><th>keyboard idle</th></tr>\n");
    for (name, (t, v, n)) in &last {
        let state = v
            .get(2)
            .map(|s| *s as usize)
            .filter(|s| (1..=STATES.len()).contains(s))
            .map_or("?", |s| STATES[s - 1]);
        h.push_str(&format!(
            "<tr><td>{}</td><td>{n}</td><td>{}</td><td>{state}</td><td>{:.2}</td><td>{:.0} s</td></tr>\n",
            escape(name),
            when(*t, offset),
            v.get(1).copied().unwrap_or(0.0),
            v.first().copied().unwrap_or(0.0),
        ));
    }
    h.push_str("</table>\n</body></html>\n");
    Ok(h)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn condor_stats_options_are_read_as_it_reads_them() {
        let now = 1_700_000_000;
        let r = parse(
            &args("-lastweek -resourcequery slot1@h -pool cm:9700"),
            now,
            0,
        )
        .unwrap();
        assert_eq!(r.from, now - 7 * DAY);
        assert_eq!(
            r.what,
            What::Query(hist::QUERY_HIST_STARTD, "slot1@h".into())
        );
        assert_eq!(r.pool.as_deref(), Some("cm:9700"));
        let r = parse(
            &args("-from 11 1 2023 -to 11 2 23 -userlist -orgformat"),
            now,
            3600,
        )
        .unwrap();
        // 2023-11-01 00:00 at UTC+1.
        assert_eq!(r.from, 1_698_796_800 - 3600);
        assert_eq!(r.to - r.from, DAY);
        assert!(r.raw);
        assert!(parse(&args("-resourcequery"), now, 0).is_err());
        assert!(
            parse(&args("-lastday"), now, 0).is_err(),
            "a query is needed"
        );
        assert!(
            parse(&args("-to 1 1 2000 -userlist"), now, 0).is_err(),
            "to before from"
        );
    }

    #[test]
    fn a_machines_sample_is_printed_as_condor_stats_prints_it() {
        assert_eq!(
            resource_line("25.00\t300\t  0.500\t3\n"),
            "25.000000\t300\t0.500000\tCLAIMED\n"
        );
        assert_eq!(
            resource_line("1.00\t0\t  0.000\t4"),
            "1.000000\t0\t0.000000\tPRE-EMPTING\n"
        );
    }
}
