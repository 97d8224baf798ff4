//! Time functions. The clock and the local zone come from the evaluation's
//! [`Env`](crate::eval::Env): `now` and `utc_offset`.

use std::fmt::Write;

use super::to_int;
use crate::ad::ClassAd;
use crate::eval::{Evaluator, Scope};
use crate::expr::Expr;
use crate::name::AttrName;
use crate::time::civil;
use crate::value::{AbsTime, Value};

/// `time()`: the current time in seconds since the epoch.
pub fn time(ev: &mut Evaluator<'_>, args: &[Expr], _scope: &Scope) -> Value {
    if !args.is_empty() {
        return Value::Error;
    }
    Value::Int(ev.env.now)
}

fn now(ev: &Evaluator<'_>) -> Value {
    Value::AbsTime(AbsTime {
        secs: ev.env.now,
        offset: ev.env.utc_offset,
    })
}

/// `currentTime()`: the current time as an absolute time in the local zone.
pub fn current_time(ev: &mut Evaluator<'_>, args: &[Expr], _scope: &Scope) -> Value {
    if !args.is_empty() {
        return Value::Error;
    }
    now(ev)
}

/// `timeZoneOffset()`: the local zone's offset from UTC, as a relative time.
pub fn time_zone_offset(ev: &mut Evaluator<'_>, args: &[Expr], _scope: &Scope) -> Value {
    if !args.is_empty() {
        return Value::Error;
    }
    Value::RelTime(f64::from(ev.env.utc_offset))
}

/// `dayTime()`: the time since local midnight, as a relative time.
pub fn day_time(ev: &mut Evaluator<'_>, args: &[Expr], _scope: &Scope) -> Value {
    if !args.is_empty() {
        return Value::Error;
    }
    let c = civil(ev.env.now, ev.env.utc_offset);
    Value::RelTime(f64::from(c.hour * 3600 + c.minute * 60 + c.second))
}

/// `absTime(t [, offset])`. A number (or relative time) is seconds since the
/// epoch, shown at `offset` (default: the local zone). `absTime("...")` with
/// a literal string is folded by the parser; a string computed at run time
/// is read the same way here.
pub fn abs_time(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    if args.is_empty() {
        return now(ev);
    }
    if args.len() > 2 {
        return Value::Error;
    }
    let v = ev.eval_arg(&args[0], scope);
    let offset = match args.get(1).map(|a| ev.eval_arg(a, scope)) {
        None => ev.env.utc_offset,
        Some(Value::Int(i)) => i as i32,
        Some(Value::Real(r)) => r as i32,
        Some(Value::RelTime(r)) => r as i32,
        Some(_) => return Value::Error,
    };
    let secs = match v {
        Value::Undefined => return Value::Undefined,
        Value::Int(i) => i,
        Value::Real(r) => r as i64,
        Value::RelTime(r) => r as i64,
        Value::AbsTime(_) => return v,
        Value::Str(s) => {
            return crate::time::parse_abstime(&s).map_or(Value::Error, Value::AbsTime);
        }
        _ => return Value::Error,
    };
    Value::AbsTime(AbsTime { secs, offset })
}

/// `relTime(t)`: seconds as a relative time (an absolute time gives its
/// seconds since the epoch).
pub fn rel_time(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    if args.len() != 1 {
        return Value::Error;
    }
    match ev.eval_arg(&args[0], scope) {
        Value::Undefined => Value::Undefined,
        Value::Int(i) => Value::RelTime(i as f64),
        Value::Real(r) => Value::RelTime(r),
        Value::RelTime(r) => Value::RelTime(r),
        Value::AbsTime(t) => Value::RelTime(t.secs as f64),
        Value::Str(s) => crate::time::parse_reltime(&s).map_or(Value::Error, Value::RelTime),
        _ => Value::Error,
    }
}

#[derive(Clone, Copy)]
enum Field {
    Year,
    Month,
    DayOfMonth,
    DayOfWeek,
    DayOfYear,
    Days,
    Hours,
    Minutes,
    Seconds,
}

/// `getYear(t)` and friends. An absolute time is broken down in the local
/// zone; a relative time gives days/hours/minutes/seconds only.
fn get_field(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope, f: Field) -> Value {
    if args.len() != 1 {
        return Value::Error;
    }
    match ev.eval_arg(&args[0], scope) {
        Value::AbsTime(t) => {
            let c = civil(t.secs, ev.env.utc_offset);
            Value::Int(i64::from(match f {
                Field::Year => c.year,
                Field::Month => c.month as i32,
                Field::DayOfMonth => c.day as i32,
                Field::DayOfWeek => c.weekday as i32,
                Field::DayOfYear => c.yearday as i32,
                Field::Hours => c.hour as i32,
                Field::Minutes => c.minute as i32,
                Field::Seconds => c.second as i32,
                Field::Days => return Value::Error,
            }))
        }
        Value::RelTime(r) => {
            let s = r as i64;
            Value::Int(match f {
                Field::Days => s / 86400,
                Field::Hours => (s % 86400) / 3600,
                Field::Minutes => (s % 3600) / 60,
                Field::Seconds => s % 60,
                _ => return Value::Error,
            })
        }
        _ => Value::Error,
    }
}

pub fn get_year(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    get_field(ev, args, scope, Field::Year)
}
pub fn get_month(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    get_field(ev, args, scope, Field::Month)
}
pub fn get_day_of_month(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    get_field(ev, args, scope, Field::DayOfMonth)
}
pub fn get_day_of_week(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    get_field(ev, args, scope, Field::DayOfWeek)
}
/// Note: 0-based, as C's `tm_yday`.
pub fn get_day_of_year(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    get_field(ev, args, scope, Field::DayOfYear)
}
pub fn get_days(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    get_field(ev, args, scope, Field::Days)
}
pub fn get_hours(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    get_field(ev, args, scope, Field::Hours)
}
pub fn get_minutes(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    get_field(ev, args, scope, Field::Minutes)
}
pub fn get_seconds(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    get_field(ev, args, scope, Field::Seconds)
}

/// The broken-down form of a time, as `splitTime` gives it: numbers and
/// absolute times become an `AbsoluteTime` ad, relative times a
/// `RelativeTime` ad. `None` for anything else.
fn split(ev: &Evaluator<'_>, v: &Value) -> Option<ClassAd> {
    let abs = match v {
        Value::Int(i) => AbsTime {
            secs: *i,
            offset: ev.env.utc_offset,
        },
        Value::Real(r) => AbsTime {
            secs: *r as i64,
            offset: ev.env.utc_offset,
        },
        Value::AbsTime(t) => *t,
        Value::RelTime(r) => return Some(split_reltime(*r)),
        _ => return None,
    };
    let c = civil(abs.secs, abs.offset);
    let mut ad = ClassAd::new();
    ad.insert_value("Type", "AbsoluteTime");
    ad.insert_value("Year", i64::from(c.year));
    ad.insert_value("Month", i64::from(c.month));
    ad.insert_value("Day", i64::from(c.day));
    ad.insert_value("Hours", i64::from(c.hour));
    ad.insert_value("Minutes", i64::from(c.minute));
    ad.insert_value("Seconds", i64::from(c.second));
    ad.insert_value("Offset", i64::from(abs.offset));
    Some(ad)
}

/// A relative time split into days, hours, minutes and (real) seconds; a
/// negative time carries its sign on the largest non-zero field.
fn split_reltime(r: f64) -> ClassAd {
    let neg = r < 0.0;
    let a = r.abs();
    let whole = a as i64;
    let mut days = whole / 86400;
    let mut hours = (whole % 86400) / 3600;
    let mut mins = (whole % 3600) / 60;
    let mut secs = (whole % 60) as f64 + (a - a.floor());
    if neg {
        if days > 0 {
            days = -days;
        } else if hours > 0 {
            hours = -hours;
        } else if mins > 0 {
            mins = -mins;
        } else {
            secs = -secs;
        }
    }
    let mut ad = ClassAd::new();
    ad.insert_value("Type", "RelativeTime");
    ad.insert_value("Days", days);
    ad.insert_value("Hours", hours);
    ad.insert_value("Minutes", mins);
    ad.insert_value("Seconds", secs);
    ad
}

/// `splitTime(t)`: an ad of the time's parts.
pub fn split_time(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    if args.len() != 1 {
        return Value::Error;
    }
    let v = ev.eval_arg(&args[0], scope);
    if v.is_undefined() {
        return Value::Undefined;
    }
    split(ev, &v).map_or(Value::Error, Value::ad)
}

/// C's `struct tm`, as much of it as `strftime` needs.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Tm {
    year: i64,
    /// 0-11
    mon: i64,
    mday: i64,
    hour: i64,
    min: i64,
    sec: i64,
    /// 0 = Sunday
    wday: i64,
    /// 0-based
    yday: i64,
}

/// Days since 1970-01-01 of a proleptic Gregorian date (month 1-12).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146097 + doe - 719468
}

/// The time of `formatTime`'s argument, broken down. Weekday and day of the
/// year are computed from the date, since the ad may be in any zone.
fn tm_of(ev: &mut Evaluator<'_>, v: &Value) -> Option<Tm> {
    let ad = match v {
        Value::RelTime(_) => return None,
        Value::Ad(a) => a.clone(),
        _ => crate::value::AdValue::new(std::sync::Arc::new(split(ev, v)?), Scope::None),
    };
    let mut field = |name: &str| match ev.lookup_in_ad(&ad, &AttrName::new(name)) {
        Value::Int(i) => Some(i),
        _ => None,
    };
    let mut tm = Tm {
        sec: field("Seconds").unwrap_or(0),
        min: field("Minutes").unwrap_or(0),
        hour: field("Hours").unwrap_or(0),
        mday: field("Day").unwrap_or(0),
        mon: field("Month").map_or(0, |m| m - 1),
        year: field("Year").unwrap_or(1900),
        ..Tm::default()
    };
    let days = days_from_civil(tm.year, tm.mon + 1, tm.mday);
    tm.wday = (days + 4).rem_euclid(7);
    tm.yday = days - days_from_civil(tm.year, 1, 1);
    Some(tm)
}

/// `formatTime([t [, format]])`: `strftime` in the C locale; the default
/// format is `%c` and the default time is now.
pub fn format_time(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    if args.len() > 2 {
        return Value::Error;
    }
    let t = match args.first() {
        Some(a) => ev.eval_arg(a, scope),
        None => Value::Int(ev.env.now),
    };
    let Some(tm) = tm_of(ev, &t) else {
        return Value::Error;
    };
    let format = match args.get(1).map(|a| ev.eval_arg(a, scope)) {
        None => "%c".to_string(),
        Some(Value::Str(s)) => s.to_string(),
        Some(_) => return Value::Error,
    };
    // At most some tens of bytes for each conversion in the format (whose
    // length was charged): charged once made.
    let text = strftime(&format, &tm, ev.env.utc_offset);
    if !ev.charge_bytes(text.len() as u64) {
        return Value::Error;
    }
    Value::from(text)
}

const DAYS: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];
const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// ISO 8601 week-based year and week number.
fn iso_week(tm: &Tm) -> (i64, i64) {
    let wday = (tm.wday + 6) % 7; // Monday = 0
    let week = (tm.yday - wday + 10) / 7;
    let leap = |y: i64| (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let weeks_in = |y: i64| {
        // A year has 53 weeks when it starts on a Thursday, or is a leap year starting on a Wednesday.
        let jan1 = (days_from_civil(y, 1, 1) + 4).rem_euclid(7);
        if jan1 == 4 || (leap(y) && jan1 == 3) {
            53
        } else {
            52
        }
    };
    if week < 1 {
        (tm.year - 1, weeks_in(tm.year - 1))
    } else if week > weeks_in(tm.year) {
        (tm.year + 1, 1)
    } else {
        (tm.year, week)
    }
}

/// C's `strftime` in the C locale for a `struct tm` whose zone fields are
/// empty (as HTCondor builds it): `%z` is `+0000`, `%Z` is empty, and `%s`
/// reads the time as local.
fn strftime(fmt: &str, tm: &Tm, utc_offset: i32) -> String {
    let mut out = String::new();
    let mut chars = fmt.chars();
    let hour12 = if tm.hour % 12 == 0 { 12 } else { tm.hour % 12 };
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let Some(spec) = chars.next() else {
            out.push('%');
            break;
        };
        let _ = match spec {
            'a' => write!(out, "{}", &DAYS[tm.wday as usize % 7][..3]),
            'A' => write!(out, "{}", DAYS[tm.wday as usize % 7]),
            'b' | 'h' => write!(out, "{}", &MONTHS[tm.mon.rem_euclid(12) as usize][..3]),
            'B' => write!(out, "{}", MONTHS[tm.mon.rem_euclid(12) as usize]),
            'c' => write!(out, "{}", strftime("%a %b %e %H:%M:%S %Y", tm, utc_offset)),
            'C' => write!(out, "{:02}", tm.year.div_euclid(100)),
            'd' => write!(out, "{:02}", tm.mday),
            'D' | 'x' => write!(out, "{}", strftime("%m/%d/%y", tm, utc_offset)),
            'e' => write!(out, "{:2}", tm.mday),
            'F' => write!(out, "{}", strftime("%Y-%m-%d", tm, utc_offset)),
            'g' => write!(out, "{:02}", iso_week(tm).0.rem_euclid(100)),
            'G' => write!(out, "{}", iso_week(tm).0),
            'H' => write!(out, "{:02}", tm.hour),
            'I' => write!(out, "{:02}", hour12),
            'j' => write!(out, "{:03}", tm.yday + 1),
            'k' => write!(out, "{:2}", tm.hour),
            'l' => write!(out, "{:2}", hour12),
            'm' => write!(out, "{:02}", tm.mon + 1),
            'M' => write!(out, "{:02}", tm.min),
            'n' => {
                out.push('\n');
                Ok(())
            }
            'p' => write!(out, "{}", if tm.hour < 12 { "AM" } else { "PM" }),
            'P' => write!(out, "{}", if tm.hour < 12 { "am" } else { "pm" }),
            'r' => write!(out, "{}", strftime("%I:%M:%S %p", tm, utc_offset)),
            'R' => write!(out, "{}", strftime("%H:%M", tm, utc_offset)),
            's' => {
                let days = days_from_civil(tm.year, tm.mon + 1, tm.mday);
                let local = days * 86400 + tm.hour * 3600 + tm.min * 60 + tm.sec;
                write!(out, "{}", local - i64::from(utc_offset))
            }
            'S' => write!(out, "{:02}", tm.sec),
            't' => {
                out.push('\t');
                Ok(())
            }
            'T' | 'X' => write!(out, "{}", strftime("%H:%M:%S", tm, utc_offset)),
            'u' => write!(out, "{}", if tm.wday == 0 { 7 } else { tm.wday }),
            'U' => write!(out, "{:02}", (tm.yday + 7 - tm.wday) / 7),
            'V' => write!(out, "{:02}", iso_week(tm).1),
            'w' => write!(out, "{}", tm.wday),
            'W' => write!(out, "{:02}", (tm.yday + 7 - (tm.wday + 6) % 7) / 7),
            'y' => write!(out, "{:02}", tm.year.rem_euclid(100)),
            'Y' => write!(out, "{}", tm.year),
            'z' => write!(out, "+0000"),
            'Z' => Ok(()),
            '%' => write!(out, "%"),
            other => write!(out, "%{other}"),
        };
    }
    out
}

/// `interval(seconds)`: `[D+]HH:MM:SS`-style text with leading fields only
/// when needed, e.g. `1+01:01:01`, `1:00:00`, `59`.
pub fn interval(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    if args.len() != 1 {
        return Value::Error;
    }
    let Ok(total) = to_int(&ev.eval_arg(&args[0], scope)) else {
        return Value::Error;
    };
    // HTCondor works in a C `int`.
    let total = i64::from(total as i32);
    let days = total / 86400;
    let rest = total % 86400;
    let (hours, mins, secs) = (rest / 3600, (rest % 3600) / 60, rest % 60);
    Value::from(if days != 0 {
        format!(
            "{days}+{:02}:{:02}:{:02}",
            hours.abs(),
            mins.abs(),
            secs.abs()
        )
    } else if hours != 0 {
        format!("{hours}:{:02}:{:02}", mins.abs(), secs.abs())
    } else if mins != 0 {
        format!("{mins}:{:02}", secs.abs())
    } else {
        format!("{secs}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tm_at(secs: i64) -> Tm {
        let c = civil(secs, 0);
        let mut tm = Tm {
            year: i64::from(c.year),
            mon: i64::from(c.month) - 1,
            mday: i64::from(c.day),
            hour: i64::from(c.hour),
            min: i64::from(c.minute),
            sec: i64::from(c.second),
            ..Tm::default()
        };
        tm.wday = i64::from(c.weekday);
        tm.yday = i64::from(c.yearday);
        tm
    }

    #[test]
    fn strftime_c_locale() {
        let tm = tm_at(1_700_000_000);
        assert_eq!(
            strftime("%c", &tm_at(86400 * 365), 0),
            "Fri Jan  1 00:00:00 1971"
        );
        assert_eq!(
            strftime("%F %T %p %I %u %V %G %W %%", &tm, 0),
            "2023-11-14 22:13:20 PM 10 2 46 2023 46 %"
        );
        assert_eq!(strftime("%s", &tm, 3600), "1699996400");
        assert_eq!(
            iso_week(&tm_at(days_from_civil(2021, 1, 3) * 86400)),
            (2020, 53)
        );
    }

    #[test]
    fn negative_reltime_split() {
        let ad = split_reltime(-61.5);
        assert_eq!(
            crate::unparse::expr_to_string(ad.get("Minutes").unwrap()),
            "-1"
        );
        assert_eq!(
            crate::unparse::expr_to_string(ad.get("Seconds").unwrap()),
            "1.500000000000000E+00"
        );
    }
}
