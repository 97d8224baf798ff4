//! Absolute and relative times: HTCondor's literal forms, read and printed.

use chrono::{DateTime, Datelike, NaiveDate, NaiveDateTime, Timelike};

use crate::value::AbsTime;

/// `2023-11-14T22:13:20-00:00`: the civil time at the value's own offset.
/// A zero offset prints as `-00:00`, as HTCondor does.
pub fn format_abstime(t: AbsTime) -> String {
    let c = civil(t.secs, t.offset);
    let off = t.offset;
    let sign = if off > 0 { '+' } else { '-' };
    let a = off.unsigned_abs();
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}{}{:02}:{:02}",
        c.year,
        c.month,
        c.day,
        c.hour,
        c.minute,
        c.second,
        sign,
        a / 3600,
        (a % 3600) / 60
    )
}

/// Broken-down civil time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Civil {
    pub year: i32,
    pub month: u32,
    pub day: u32,
    pub hour: u32,
    pub minute: u32,
    pub second: u32,
    /// 0 = Sunday.
    pub weekday: u32,
    /// 0-based day of the year.
    pub yearday: u32,
}

/// The civil time of `secs` (epoch seconds) at `offset` seconds east of UTC.
pub fn civil(secs: i64, offset: i32) -> Civil {
    let local = secs.saturating_add(i64::from(offset));
    let dt = DateTime::from_timestamp(local, 0)
        .unwrap_or_default()
        .naive_utc();
    Civil {
        year: dt.year(),
        month: dt.month(),
        day: dt.day(),
        hour: dt.hour(),
        minute: dt.minute(),
        second: dt.second(),
        weekday: dt.weekday().num_days_from_sunday(),
        yearday: dt.ordinal0(),
    }
}

/// `[-][D+][HH:][MM:]SS`: leading fields appear only when needed.
pub fn format_reltime(secs: f64) -> String {
    let neg = secs < 0.0;
    let total = secs.abs().trunc() as i64;
    let (d, h, m, s) = (
        total / 86400,
        (total % 86400) / 3600,
        (total % 3600) / 60,
        total % 60,
    );
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    if d > 0 {
        out.push_str(&format!("{d}+"));
    }
    if d > 0 || h > 0 {
        out.push_str(&format!("{h:02}:"));
    }
    if d > 0 || h > 0 || m > 0 {
        out.push_str(&format!("{m:02}:"));
    }
    out.push_str(&format!("{s:02}"));
    out
}

/// Reads an ISO 8601 absolute time: `YYYY-MM-DD[Thh:mm[:ss]][Z|±hh[:mm]]`
/// (also without separators). Without a zone the time is taken as UTC.
pub fn parse_abstime(s: &str) -> Option<AbsTime> {
    let s = s.trim();
    let digits_only = |x: &str| x.bytes().all(|b| b.is_ascii_digit());
    // `get` rather than slicing: the text may hold any UTF-8, and a cut
    // inside a character is simply not a date.
    let (date, rest) = match (s.get(..10), s.get(10..), s.get(..8), s.get(8..)) {
        (Some(date), Some(rest), _, _) if s.as_bytes()[4] == b'-' => (date.to_string(), rest),
        (_, _, Some(digits), Some(rest)) if digits_only(digits) => (
            format!("{}-{}-{}", &digits[..4], &digits[4..6], &digits[6..8]),
            rest,
        ),
        _ => return None,
    };
    let date = NaiveDate::parse_from_str(&date, "%Y-%m-%d").ok()?;
    let mut rest = rest;
    let (mut h, mut mi, mut sec) = (0u32, 0u32, 0u32);
    if let Some(r) = rest.strip_prefix(['T', 't', ' ']) {
        let (time, zone) = split_zone(r);
        let parts: Vec<&str> = if time.contains(':') {
            time.split(':').collect()
        } else {
            time.as_bytes()
                .chunks(2)
                .map(|c| std::str::from_utf8(c).unwrap_or(""))
                .collect()
        };
        if parts.is_empty()
            || parts.len() > 3
            || !parts.iter().all(|p| p.len() == 2 && digits_only(p))
        {
            return None;
        }
        h = parts[0].parse().ok()?;
        mi = parts.get(1).map_or(Some(0), |p| p.parse().ok())?;
        sec = parts.get(2).map_or(Some(0), |p| p.parse().ok())?;
        rest = zone;
    }
    let offset = parse_zone(rest)?;
    let naive = NaiveDateTime::new(date, chrono::NaiveTime::from_hms_opt(h, mi, sec)?);
    let secs = naive.and_utc().timestamp() - i64::from(offset);
    Some(AbsTime { secs, offset })
}

fn split_zone(s: &str) -> (&str, &str) {
    match s.find(['Z', 'z', '+', '-']) {
        Some(i) => (&s[..i], &s[i..]),
        None => (s, ""),
    }
}

fn parse_zone(z: &str) -> Option<i32> {
    if z.is_empty() || z.eq_ignore_ascii_case("z") {
        return Some(0);
    }
    let sign = match z.as_bytes()[0] {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    let body: String = z[1..].chars().filter(|c| *c != ':').collect();
    if !(body.len() == 2 || body.len() == 4) || !body.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let h: i32 = body[..2].parse().ok()?;
    let m: i32 = if body.len() == 4 {
        body[2..].parse().ok()?
    } else {
        0
    };
    if h > 23 || m > 59 {
        return None;
    }
    Some(sign * (h * 3600 + m * 60))
}

/// Reads a relative time: `[-][D+][HH:]MM:SS`-style, or `1d2h3m4s`-style.
pub fn parse_reltime(s: &str) -> Option<f64> {
    let s = s.trim();
    let (neg, body) = match s.strip_prefix('-') {
        Some(b) => (true, b.trim_start()),
        None => (false, s),
    };
    if body.is_empty() {
        return None;
    }
    let secs = if body
        .bytes()
        .any(|b| matches!(b, b'd' | b'h' | b'm' | b's' | b'D' | b'H' | b'M' | b'S'))
    {
        parse_unit_form(body)?
    } else {
        parse_colon_form(body)?
    };
    Some(if neg { -secs } else { secs })
}

fn parse_colon_form(body: &str) -> Option<f64> {
    let (days, hms) = match body.split_once('+') {
        Some((d, rest)) => (d.trim().parse::<i64>().ok()?, rest),
        None => (0, body),
    };
    let parts: Vec<&str> = hms.split(':').collect();
    if parts.len() > 3 || parts.iter().any(|p| p.is_empty()) {
        return None;
    }
    let mut total: f64 = 0.0;
    for (i, p) in parts.iter().enumerate() {
        let last = i == parts.len() - 1;
        let v: f64 = if last {
            if !p.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
                return None;
            }
            p.parse().ok()?
        } else {
            if !p.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            p.parse::<i64>().ok()? as f64
        };
        total = total * 60.0 + v;
    }
    Some(days as f64 * 86400.0 + total)
}

fn parse_unit_form(body: &str) -> Option<f64> {
    let mut total = 0.0;
    let mut num = String::new();
    for c in body.chars() {
        if c.is_ascii_digit() || c == '.' {
            num.push(c);
            continue;
        }
        if c.is_whitespace() {
            continue;
        }
        let mult = match c.to_ascii_lowercase() {
            'd' => 86400.0,
            'h' => 3600.0,
            'm' => 60.0,
            's' => 1.0,
            _ => return None,
        };
        if num.is_empty() {
            return None;
        }
        total += num.parse::<f64>().ok()? * mult;
        num.clear();
    }
    if !num.is_empty() {
        total += num.parse::<f64>().ok()?;
    }
    Some(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reltime_forms() {
        assert_eq!(format_reltime(90061.0), "1+01:01:01");
        assert_eq!(format_reltime(3600.0), "01:00:00");
        assert_eq!(format_reltime(120.0), "02:00");
        assert_eq!(format_reltime(-5.0), "-05");
        assert_eq!(parse_reltime("1d2h"), Some(93600.0));
        assert_eq!(parse_reltime("01:02:03"), Some(3723.0));
        assert_eq!(parse_reltime("junk"), None);
    }

    #[test]
    fn text_cut_inside_a_character_is_not_a_date() {
        // Found by fuzzing: a multi-byte character where the date's 8th or
        // 10th byte would end used to panic.
        assert_eq!(parse_abstime("\u{2}t(\u{b}:'\u{8d}'E|."), None);
        assert_eq!(parse_abstime("2024-01-\u{e9}1"), None);
        assert_eq!(parse_abstime("1234567\u{e9}"), None);
    }

    #[test]
    fn abstime_forms() {
        let t = parse_abstime("2020-01-01T00:00:00+02:00").unwrap();
        assert_eq!(format_abstime(t), "2020-01-01T00:00:00+02:00");
        assert_eq!(
            format_abstime(AbsTime { secs: 0, offset: 0 }),
            "1970-01-01T00:00:00-00:00"
        );
        assert!(parse_abstime("not a date").is_none());
    }
}
