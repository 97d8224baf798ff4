//! The personal pool's administrative tools, as HTCondor's: `vacate`
//! (condor_vacate), `drain` (condor_drain), `userprio` (condor_userprio)
//! and `reconfig` (condor_reconfig). Each asks the running pool and says
//! what was done in HTCondor's words; a refusal (not the pool's owner, a
//! configuration that does not read) is the pool's message, exit 2.

use std::io::Write;

use classad::{ClassAd, Env, Value};
use wire::api::{
    self, DrainHow, Empty, ReconfigAnswer, SlotsAnswer, SlotsRequest, StartdAnswer, StartdCommand,
    UserprioAnswer, UserprioRequest, UserprioRow,
};

use crate::args::{DrainArgs, UserprioArgs, VacateArgs};
use crate::errors::{Error, Outcome};
use crate::jobview;

/// Each slot's Name and Machine, in the pool's order.
fn slot_names(client: &wire::Client) -> Result<Vec<(String, String)>, Error> {
    let answer: SlotsAnswer = client.call(
        api::PATH_SLOTS,
        &SlotsRequest {
            ad_type: None,
            constraint: None,
            projection: vec!["Name".into(), "Machine".into()],
        },
    )?;
    let env = Env::at(0);
    let ads = jobview::parse_ads(&answer.ads)?;
    let get = |ad: &ClassAd, n: &str| match ad.eval_attr(n, &env) {
        Value::Str(s) => s.to_string(),
        _ => String::new(),
    };
    Ok(ads
        .iter()
        .map(|ad| (get(ad, "Name"), get(ad, "Machine")))
        .collect())
}

/// What a target on the command line names: the whole machine, or one
/// slot (by its startd-local name, `slot1`, and its full name).
enum Target {
    Machine(String),
    Slot { local: String, full: String },
}

fn resolve(target: &str, slots: &[(String, String)]) -> Result<Target, Error> {
    if let Some((_, m)) = slots.iter().find(|(_, m)| m == target) {
        return Ok(Target::Machine(m.clone()));
    }
    let found = slots.iter().find(|(name, _)| {
        name == target || name.split_once('@').map(|(local, _)| local) == Some(target)
    });
    match found {
        Some((name, _)) => Ok(Target::Slot {
            local: name
                .split_once('@')
                .map_or(name.as_str(), |(l, _)| l)
                .to_string(),
            full: name.clone(),
        }),
        None => Err(Error::Input(format!(
            "there is no slot or machine named {target} in this pool (see `ferrocondor status`)"
        ))),
    }
}

/// `condor_vacate [-fast] [MACHINE|SLOT...]`: evicts the jobs of the
/// slots named (every slot when none is), which go back to idle in the
/// queue.
pub fn vacate(a: &VacateArgs, out: &mut dyn Write) -> Result<Outcome, Error> {
    let client = jobview::client();
    let mut plan: Vec<(Option<String>, String, &str)> = Vec::new();
    let (all, one) = if a.fast {
        ("Vacate-All-Claims-Fast", "Vacate-Claim-Fast")
    } else {
        ("Vacate-All-Claims", "Vacate-Claim")
    };
    if a.targets.is_empty() {
        plan.push((None, "local startd".into(), all));
    } else {
        let slots = slot_names(&client)?;
        for t in &a.targets {
            match resolve(t, &slots)? {
                Target::Machine(m) => plan.push((None, format!("startd {m}"), all)),
                Target::Slot { local, full } => {
                    plan.push((Some(local), format!("startd {full}"), one))
                }
            }
        }
    }
    for (slot, whom, command) in plan {
        let _: StartdAnswer = client.call(
            api::PATH_STARTD,
            &StartdCommand::Vacate { slot, fast: a.fast },
        )?;
        writeln!(out, "Sent \"{command}\" command to {whom}")?;
    }
    Ok(Outcome::Success)
}

/// `condor_drain [-graceful|-quick|-fast] [-resume-on-completion]
/// [-start EXPR] [-reason TEXT] [MACHINE]`, and `-cancel`.
pub fn drain(a: &DrainArgs, out: &mut dyn Write) -> Result<Outcome, Error> {
    let client = jobview::client();
    if let Some(m) = &a.machine {
        let slots = slot_names(&client)?;
        if !slots.iter().any(|(_, machine)| machine == m) {
            return Err(Error::Input(format!(
                "there is no machine named {m} in this pool (see `ferrocondor status`)"
            )));
        }
    }
    if a.cancel {
        let answer: StartdAnswer = client.call(api::PATH_STARTD, &StartdCommand::CancelDrain)?;
        writeln!(
            out,
            "Sent request to cancel draining on {}",
            machine(&answer, a.machine.as_deref())
        )?;
        return Ok(Outcome::Success);
    }
    let how = if a.fast {
        DrainHow::Fast
    } else if a.quick {
        DrainHow::Quick
    } else {
        DrainHow::Graceful
    };
    let answer: StartdAnswer = client.call(
        api::PATH_STARTD,
        &StartdCommand::Drain {
            how,
            resume_on_completion: a.resume_on_completion,
            start: a.start.clone(),
            reason: a.reason.clone(),
        },
    )?;
    writeln!(
        out,
        "Sent request to drain {}",
        machine(&answer, a.machine.as_deref())
    )?;
    Ok(Outcome::Success)
}

/// The machine's name as the pool gave it (older pools: its message's
/// `host: ...` prefix, or the name given).
fn machine(answer: &StartdAnswer, given: Option<&str>) -> String {
    if !answer.machine.is_empty() {
        return answer.machine.clone();
    }
    given
        .map(str::to_string)
        .or_else(|| answer.message.split_once(": ").map(|(m, _)| m.to_string()))
        .unwrap_or_else(|| "the local startd".into())
}

/// `condor_reconfig`: the pool reads its configuration again; a broken
/// one is refused (the message names the file and line) and the pool
/// keeps the one in force.
pub fn reconfig(out: &mut dyn Write) -> Result<Outcome, Error> {
    let _: ReconfigAnswer = jobview::client().call(api::PATH_RECONFIG, &Empty {})?;
    writeln!(out, "Sent \"Reconfig\" command to local master")?;
    Ok(Outcome::Success)
}

/// `condor_userprio`: with -setfactor, -setprio or -resetusage, the
/// change and HTCondor's sentence about it; otherwise the table.
pub fn userprio(a: &UserprioArgs, now: i64, out: &mut dyn Write) -> Result<Outcome, Error> {
    let number = |what: &str, v: &str| {
        v.parse::<f64>()
            .ok()
            .filter(|f| f.is_finite())
            .ok_or_else(|| Error::Usage(format!("{what}: `{v}` is not a number")))
    };
    let set_factor = match a.setfactor.as_slice() {
        [user, f] => {
            let f = number("-setfactor", f)?;
            if f < 1.0 {
                return Err(Error::Usage(
                    "Priority factors must be greater than or equal to 1.".into(),
                ));
            }
            Some((user.clone(), f))
        }
        _ => None,
    };
    let set_priority = match a.setprio.as_slice() {
        [user, p] => Some((user.clone(), number("-setprio", p)?)),
        _ => None,
    };
    let req = UserprioRequest {
        set_factor,
        set_priority,
        reset_usage: a.resetusage.clone(),
    };
    let answer: UserprioAnswer = jobview::client().call(api::PATH_USERPRIO, &req)?;
    let changed =
        req.set_factor.is_some() || req.set_priority.is_some() || req.reset_usage.is_some();
    if let Some((user, p)) = &req.set_priority {
        writeln!(out, "The priority of {user} was set to {p:.6}")?;
    }
    if let Some((user, f)) = &req.set_factor {
        writeln!(out, "The priority factor of {user} was set to {f:.6}")?;
    }
    if let Some(user) = &req.reset_usage {
        writeln!(out, "The accumulated usage of {user} was reset")?;
    }
    if changed {
        return Ok(Outcome::Success);
    }
    let offset = crate::system::utc_offset(now);
    let view = View {
        all: a.all,
        min_last_usage: if a.allusers { -1 } else { now - 86_400 },
        utc_offset: offset,
    };
    out.write_all(userprio_table(&answer, &view).as_bytes())?;
    Ok(Outcome::Success)
}

/// How the userprio table is shown.
pub struct View {
    /// `-all`: also the real priority and the usage start and last times.
    pub all: bool,
    /// Users whose last usage is older are left out (`-allusers`: -1).
    pub min_last_usage: i64,
    pub utc_offset: i32,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Col {
    Priority,
    RealPrio,
    Factor,
    ResUsed,
    WtResUsed,
    UseTime1,
    UseTime2,
    UseDeltaT,
}

impl Col {
    fn width(self) -> usize {
        match self {
            Col::Priority | Col::WtResUsed => 12,
            Col::RealPrio => 8,
            Col::Factor => 9,
            Col::ResUsed => 6,
            Col::UseTime1 | Col::UseTime2 => 16,
            Col::UseDeltaT => 10,
        }
    }

    fn heading(self) -> (&'static str, &'static str) {
        match self {
            Col::Priority => ("Effective", "Priority"),
            Col::RealPrio => ("Real", "Priority"),
            Col::Factor => ("Priority", "Factor"),
            Col::ResUsed => ("Wghted", "In Use"),
            Col::WtResUsed => ("Total Usage", "(wghted-hrs)"),
            Col::UseTime1 => ("Usage", "Start Time"),
            Col::UseTime2 => ("Last", "Usage Time"),
            Col::UseDeltaT => ("Time Since", "Last Usage"),
        }
    }
}

/// `text` centred in `w` (the extra space on the right), cut to `w`.
fn center(text: &str, w: usize) -> String {
    let t: String = text.chars().take(w).collect();
    let l = (w - t.len()) / 2;
    format!("{}{t}{}", " ".repeat(l), " ".repeat(w - l - t.len()))
}

/// `text` right-aligned in `w`, cut to `w`.
fn right(text: &str, w: usize) -> String {
    let t: String = text.chars().take(w).collect();
    format!("{t:>w$}")
}

/// HTCondor's number cell: `%W.Df`, or `%.{W-6}g` when that is too wide.
fn float_cell(v: f64, w: usize, decimals: usize) -> String {
    let s = format!("{v:>w$.decimals$}");
    if s.len() <= w {
        return s;
    }
    right(&general(v, w.saturating_sub(6)), w)
}

/// C's `%.Pg`.
fn general(v: f64, precision: usize) -> String {
    let p = precision.max(1);
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let sci = format!("{:.*e}", p - 1, v);
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let x: i32 = exp.parse().unwrap_or(0);
    let strip = |s: String| {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    };
    if x < -4 || x >= p as i32 {
        let m = strip(mantissa.to_string());
        format!("{m}e{}{:02}", if x < 0 { '-' } else { '+' }, x.abs())
    } else {
        strip(format!("{:.*}", (p as i32 - 1 - x).max(0) as usize, v))
    }
}

/// `M/D HH:MM` (`%2d/%-2d %02d:%02d`), as condor_userprio's first line.
fn short_date(t: i64, offset: i32) -> String {
    let c = classad::time::civil(t, offset);
    format!("{:>2}/{:<2} {:02}:{:02}", c.month, c.day, c.hour, c.minute)
}

/// `M/DD/YYYY HH:MM` (`%2d/%02d/%-4d %02d:%02d`).
fn long_date(t: i64, offset: i32) -> String {
    let c = classad::time::civil(t, offset);
    format!(
        "{:>2}/{:02}/{:<4} {:02}:{:02}",
        c.month, c.day, c.year, c.hour, c.minute
    )
}

/// `D+HH:MM`.
fn delta(secs: i64) -> String {
    let s = secs.max(0);
    format!("{}+{:02}:{:02}", s / 86400, s % 86400 / 3600, s % 3600 / 60)
}

/// condor_userprio's table: `Last Priority Update:`, two heading rows,
/// dashes, a row per submitter used in the last day (every one with
/// -allusers), by effective priority, dashes, and `Number of users:`
/// with the totals. The root group's own record (`<none>`) is not shown.
pub fn userprio_table(answer: &UserprioAnswer, view: &View) -> String {
    if answer.rows.is_empty() {
        return String::new();
    }
    let cols: Vec<Col> = if view.all {
        vec![
            Col::Priority,
            Col::RealPrio,
            Col::Factor,
            Col::ResUsed,
            Col::WtResUsed,
            Col::UseTime1,
            Col::UseTime2,
            Col::UseDeltaT,
        ]
    } else {
        vec![
            Col::Priority,
            Col::Factor,
            Col::ResUsed,
            Col::WtResUsed,
            Col::UseDeltaT,
        ]
    };
    // A submitter with slots in use uses the pool now, even before the
    // accountant's next update charges it; one never charged counts as
    // used before any day (HTCondor's -1).
    let last_usage = |r: &UserprioRow| {
        if r.resources_used > 0.0 {
            r.last_usage_time.max(answer.last_update)
        } else if r.last_usage_time == 0 {
            -1
        } else {
            r.last_usage_time
        }
    };
    let mut shown: Vec<&UserprioRow> = answer
        .rows
        .iter()
        .filter(|r| last_usage(r) >= view.min_last_usage)
        .filter(|r| !(r.is_group && r.name == "<none>"))
        .collect();
    shown.sort_by(|a, b| {
        a.effective_priority
            .total_cmp(&b.effective_priority)
            .then_with(|| a.name.cmp(&b.name))
    });
    let count_label = |n: usize| format!("Number of users: {n}");
    let name_w = shown
        .iter()
        .map(|r| r.name.len())
        .max()
        .unwrap_or(0)
        .clamp(10, 99)
        .max(count_label(answer.rows.len()).len());
    let line = |first: String, cells: &dyn Fn(Col) -> String| {
        let mut l = format!(
            "{:<name_w$}",
            first.chars().take(name_w).collect::<String>()
        );
        for &c in &cols {
            l.push(' ');
            l.push_str(&cells(c));
        }
        l.push('\n');
        l
    };
    let mut s = format!(
        "Last Priority Update: {}\n",
        short_date(answer.last_update, view.utc_offset)
    );
    s.push_str(&line(String::new(), &|c| center(c.heading().0, c.width())));
    s.push_str(&line("User Name".into(), &|c| {
        center(c.heading().1, c.width())
    }));
    let dashes = line("-".repeat(name_w), &|c| "-".repeat(c.width()));
    s.push_str(&dashes);
    let (mut users, mut in_use, mut usage) = (0, 0.0, 0.0);
    for r in &shown {
        if !r.is_group {
            users += 1;
            in_use += r.resources_used;
            usage += r.accumulated_usage_hours;
        }
        s.push_str(&line(r.name.clone(), &|c| {
            let w = c.width();
            match c {
                Col::Priority => float_cell(r.effective_priority, w, 2),
                Col::RealPrio => float_cell(r.real_priority, w, 2),
                Col::Factor if r.priority_factor > 0.0 => float_cell(r.priority_factor, w, 2),
                Col::Factor => " ".repeat(w),
                Col::ResUsed => float_cell(r.resources_used, w, 0),
                Col::WtResUsed => float_cell(r.accumulated_usage_hours, w, 2),
                Col::UseTime1 if r.begin_usage_time > 0 => {
                    right(&long_date(r.begin_usage_time, view.utc_offset), w)
                }
                Col::UseTime2 if last_usage(r) > 0 => {
                    right(&long_date(last_usage(r), view.utc_offset), w)
                }
                Col::UseTime1 | Col::UseTime2 => " ".repeat(w),
                Col::UseDeltaT => {
                    let d = answer.last_update - last_usage(r);
                    right(&if d <= 0 { "<now>".into() } else { delta(d) }, w)
                }
            }
        }));
    }
    s.push_str(&dashes);
    s.push_str(&line(count_label(users), &|c| {
        let w = c.width();
        match c {
            Col::ResUsed => float_cell(in_use, w, 0),
            Col::WtResUsed => float_cell(usage, w, 2),
            Col::UseTime2 if view.min_last_usage > 0 => {
                right(&long_date(view.min_last_usage, view.utc_offset), w)
            }
            Col::UseDeltaT if view.min_last_usage > 0 => {
                let d = answer.last_update - view.min_last_usage;
                right(&if d <= 0 { "<now>".into() } else { delta(d) }, w)
            }
            _ => " ".repeat(w),
        }
    }));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(name: &str, prio: f64, used: f64, last: i64) -> UserprioRow {
        UserprioRow {
            name: name.into(),
            effective_priority: prio,
            real_priority: prio / 1000.0,
            priority_factor: 1000.0,
            resources_used: used,
            accumulated_usage_hours: 0.5,
            begin_usage_time: 1_700_000_000,
            last_usage_time: last,
            is_group: false,
        }
    }

    #[test]
    fn the_userprio_table_is_htcondors() {
        let now = 1_700_000_000;
        let answer = UserprioAnswer {
            last_update: now,
            rows: vec![
                row("bob@host", 2000.0, 0.0, now - 3700),
                row("alice@host", 500.5, 1.0, now),
                row("old@host", 500.0, 0.0, now - 90_000),
                UserprioRow {
                    is_group: true,
                    ..row("<none>", 500.0, 1.0, now)
                },
            ],
        };
        let view = View {
            all: false,
            min_last_usage: now - 86_400,
            utc_offset: 0,
        };
        let t = userprio_table(&answer, &view);
        let lines: Vec<&str> = t.lines().collect();
        let want = [
            "Last Priority Update: 11/14 22:13",
            "                    Effective   Priority  Wghted Total Usage  Time Since",
            "User Name            Priority    Factor   In Use (wghted-hrs) Last Usage",
            "------------------ ------------ --------- ------ ------------ ----------",
            "alice@host               500.50   1000.00      1         0.50      <now>",
            "bob@host                2000.00   1000.00      0         0.50    0+01:01",
            "------------------ ------------ --------- ------ ------------ ----------",
            "Number of users: 2                             1         1.00    1+00:00",
        ];
        assert_eq!(lines, want, "{t}");
        assert_eq!(lines.len(), 8);
    }

    #[test]
    fn numbers_too_wide_fall_back_to_general_form() {
        assert_eq!(float_cell(1.5, 6, 0), "     2");
        assert_eq!(general(123456789.0, 6), "1.23457e+08");
        assert_eq!(general(0.0001, 3), "0.0001");
        assert_eq!(general(1234.0, 3), "1.23e+03");
        assert_eq!(float_cell(1e20, 9, 2), "    1e+20");
    }
}
