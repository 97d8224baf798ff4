//! What a simulation reports: every slot transition with its number and
//! cause, every job event, samples of the pool over time, and a summary;
//! as JSON for machines ([`Report::to_json`]) and as a self-contained HTML
//! page with inline SVG charts for people ([`Report::to_html`]).
//!
//! Output is deterministic: maps are ordered, numbers are printed by
//! `serde_json` (shortest round-trip form), nothing depends on the clock.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{json, Map, Value};

/// One transition of one slot, as the startd recorded it.
#[derive(Clone, Debug, PartialEq)]
pub struct TransitionRecord {
    pub time: i64,
    /// `slot1@host` (one text per slot, shared by its records).
    pub slot: Arc<str>,
    /// `State/Activity` before and after.
    pub from: &'static str,
    pub to: &'static str,
    /// The transition's number in the manual.
    pub number: u8,
    pub cause: String,
}

/// Something that happened to a job.
#[derive(Clone, Debug, PartialEq)]
pub struct JobRecord {
    pub time: i64,
    pub schedd: String,
    /// `cluster.proc`.
    pub job: String,
    /// The submitter (`user@domain`, or `group.user@domain`).
    pub user: String,
    pub what: String,
}

/// The pool at one moment, for the charts.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    pub time: i64,
    /// Slots by state (partitionable slots themselves not counted).
    pub states: BTreeMap<String, u32>,
    pub idle_jobs: u64,
    pub running_jobs: u64,
    /// Cores in use by each submitter's running jobs.
    pub running_by_user: BTreeMap<String, f64>,
}

/// Waiting times (submission to first start) of a set of jobs.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Wait {
    pub jobs: u64,
    pub total: i64,
    pub max: i64,
}

impl Wait {
    pub fn mean(&self) -> f64 {
        if self.jobs == 0 {
            0.0
        } else {
            self.total as f64 / self.jobs as f64
        }
    }
    fn add(&mut self, w: i64) {
        self.jobs += 1;
        self.total += w;
        self.max = self.max.max(w);
    }
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Summary {
    pub jobs_submitted: u64,
    pub jobs_completed: u64,
    pub jobs_removed: u64,
    pub jobs_held: u64,
    pub jobs_idle_at_end: u64,
    pub jobs_running_at_end: u64,
    pub wait_by_user: BTreeMap<String, Wait>,
    pub wait_by_group: BTreeMap<String, Wait>,
    /// CPU-seconds of runs that ended with the job's exit.
    pub goodput_cpu_seconds: f64,
    /// CPU-seconds of runs thrown away by eviction (vanilla jobs restart).
    pub badput_cpu_seconds: f64,
    /// Evictions by cause (`machine RANK`, `user priority`, `PREEMPT`, ...).
    pub preemptions: BTreeMap<String, u64>,
    /// CPU-seconds each submitter's jobs ran (not suspended).
    pub usage_by_user: BTreeMap<String, f64>,
    /// Used CPU-seconds over the pool's capacity.
    pub utilization: f64,
    pub total_cpus: f64,
    pub negotiation_cycles: u64,
    pub matches: u64,
    pub claims_refused: u64,
    /// Claim messages the scenario's network lost.
    pub messages_lost: u64,
    /// Effective user priorities at the end.
    pub final_priorities: BTreeMap<String, f64>,
    /// The defrag daemon's ad at the end (its numeric figures:
    /// DrainSuccesses, MachinesDraining, WholeMachines, DrainedMachines,
    /// AvgDrainingBadput, ...); empty without a defrag daemon.
    pub defrag: BTreeMap<String, f64>,
}

impl Summary {
    pub(crate) fn add_wait(&mut self, user: &str, group: &str, wait: i64) {
        self.wait_by_user
            .entry(user.to_string())
            .or_default()
            .add(wait);
        self.wait_by_group
            .entry(group.to_string())
            .or_default()
            .add(wait);
    }
}

/// The outcome of a simulation.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    pub seed: u64,
    pub start: i64,
    pub duration: i64,
    pub transitions: Vec<TransitionRecord>,
    pub job_events: Vec<JobRecord>,
    pub samples: Vec<Sample>,
    pub summary: Summary,
    /// Refused events and other oddities worth a look.
    pub notes: Vec<String>,
}

fn num(v: f64) -> Value {
    // Round to milli-units: exact enough, and no float noise in diffs.
    let r = (v * 1000.0).round() / 1000.0;
    if r.fract() == 0.0 && r.abs() < 9e15 {
        json!(r as i64)
    } else {
        json!(r)
    }
}

fn wait_json(m: &BTreeMap<String, Wait>) -> Value {
    let mut o = Map::new();
    for (k, w) in m {
        o.insert(
            k.clone(),
            json!({"jobs": w.jobs, "mean": num(w.mean()), "max": w.max}),
        );
    }
    Value::Object(o)
}

fn nums(m: &BTreeMap<String, f64>) -> Value {
    Value::Object(m.iter().map(|(k, v)| (k.clone(), num(*v))).collect())
}

impl Report {
    pub(crate) fn new(seed: u64, start: i64, duration: i64) -> Report {
        Report {
            seed,
            start,
            duration,
            transitions: Vec::new(),
            job_events: Vec::new(),
            samples: Vec::new(),
            summary: Summary::default(),
            notes: Vec::new(),
        }
    }

    /// The summary as a JSON value.
    pub fn summary_json(&self) -> Value {
        let s = &self.summary;
        let mut v = json!({
            "jobs_submitted": s.jobs_submitted,
            "jobs_completed": s.jobs_completed,
            "jobs_removed": s.jobs_removed,
            "jobs_held": s.jobs_held,
            "jobs_idle_at_end": s.jobs_idle_at_end,
            "jobs_running_at_end": s.jobs_running_at_end,
            "wait_by_user": wait_json(&s.wait_by_user),
            "wait_by_group": wait_json(&s.wait_by_group),
            "goodput_cpu_seconds": num(s.goodput_cpu_seconds),
            "badput_cpu_seconds": num(s.badput_cpu_seconds),
            "preemptions": s.preemptions,
            "usage_by_user": nums(&s.usage_by_user),
            "utilization": num(s.utilization),
            "total_cpus": num(s.total_cpus),
            "negotiation_cycles": s.negotiation_cycles,
            "matches": s.matches,
            "claims_refused": s.claims_refused,
            "messages_lost": s.messages_lost,
            "final_priorities": nums(&s.final_priorities),
        });
        if !s.defrag.is_empty() {
            v["defrag"] = nums(&s.defrag);
        }
        v
    }

    /// The whole report as JSON (`ferrocondor simulate --json`).
    pub fn to_json(&self) -> String {
        let transitions: Vec<Value> = self
            .transitions
            .iter()
            .map(|t| {
                json!({"time": t.time, "slot": &*t.slot, "from": t.from, "to": t.to,
                       "number": t.number, "cause": t.cause})
            })
            .collect();
        let jobs: Vec<Value> = self
            .job_events
            .iter()
            .map(|e| {
                json!({"time": e.time, "schedd": e.schedd, "job": e.job,
                       "user": e.user, "what": e.what})
            })
            .collect();
        let samples: Vec<Value> = self
            .samples
            .iter()
            .map(|s| {
                json!({"time": s.time, "states": s.states, "idle_jobs": s.idle_jobs,
                       "running_jobs": s.running_jobs,
                       "running_by_user": nums(&s.running_by_user)})
            })
            .collect();
        let v = json!({
            "seed": self.seed,
            "start": self.start,
            "duration": self.duration,
            "summary": self.summary_json(),
            "transitions": transitions,
            "job_events": jobs,
            "samples": samples,
            "notes": self.notes,
        });
        let mut out = serde_json::to_string_pretty(&v).unwrap_or_default();
        out.push('\n');
        out
    }

    /// A short text summary (what `ferrocondor simulate` prints by default).
    pub fn to_text(&self) -> String {
        let s = &self.summary;
        let mut out = String::new();
        out.push_str(&format!(
            "simulated {} s (seed {}): {} jobs submitted, {} completed, {} removed, {} held, {} idle and {} running at the end\n",
            self.duration, self.seed, s.jobs_submitted, s.jobs_completed, s.jobs_removed,
            s.jobs_held, s.jobs_idle_at_end, s.jobs_running_at_end
        ));
        out.push_str(&format!(
            "goodput {:.0} CPU-s, badput {:.0} CPU-s, utilization {:.1}%, {} negotiation cycles, {} matches, {} claims refused\n",
            s.goodput_cpu_seconds, s.badput_cpu_seconds, s.utilization * 100.0,
            s.negotiation_cycles, s.matches, s.claims_refused
        ));
        if s.messages_lost > 0 {
            out.push_str(&format!("claim messages lost: {}\n", s.messages_lost));
        }
        if !s.defrag.is_empty() {
            let f = |n: &str| s.defrag.get(n).copied().unwrap_or(0.0);
            out.push_str(&format!(
                "defrag: {} drains started ({} failed), {} draining (peak {}), {} whole machines (peak {}), {} drained, draining badput {:.2}% and unclaimed {:.2}% of the pool\n",
                f("DrainSuccesses"), f("DrainFailures"), f("MachinesDraining"),
                f("MachinesDrainingPeak"), f("WholeMachines"), f("WholeMachinesPeak"),
                f("DrainedMachines"), f("AvgDrainingBadput") * 100.0,
                f("AvgDrainingUnclaimed") * 100.0
            ));
        }
        for (cause, n) in &s.preemptions {
            out.push_str(&format!("preempted by {cause}: {n}\n"));
        }
        for (user, w) in &s.wait_by_user {
            out.push_str(&format!(
                "{user}: {} started, mean wait {:.0} s, max {} s, {:.0} CPU-s used\n",
                w.jobs,
                w.mean(),
                w.max,
                s.usage_by_user.get(user).copied().unwrap_or(0.0)
            ));
        }
        out
    }

    /// A self-contained page: the summary, three charts (slot states over
    /// time, the queue, usage per user), and the transitions.
    pub fn to_html(&self) -> String {
        let mut h = html_head("ferrocondor simulation");
        h.push_str(&format!(
            "<h1>Simulation report</h1>\n<p>seed {}, {} s simulated from {}</p>\n",
            self.seed, self.duration, self.start
        ));
        h.push_str("<h2>Summary</h2>\n<pre>");
        h.push_str(&escape(&self.to_text()));
        h.push_str("</pre>\n");

        // Slot states over time.
        let mut state_names: Vec<String> = Vec::new();
        for s in &self.samples {
            for k in s.states.keys() {
                if !state_names.contains(k) {
                    state_names.push(k.clone());
                }
            }
        }
        state_names.sort();
        let series: Vec<(String, Vec<f64>)> = state_names
            .iter()
            .map(|n| {
                (
                    n.clone(),
                    self.samples
                        .iter()
                        .map(|s| s.states.get(n).copied().unwrap_or(0) as f64)
                        .collect(),
                )
            })
            .collect();
        h.push_str("<h2>Slot states over time</h2>\n");
        h.push_str(&self.chart(&series, true));

        h.push_str("<h2>Queue</h2>\n");
        let queue = vec![
            (
                "idle jobs".to_string(),
                self.samples.iter().map(|s| s.idle_jobs as f64).collect(),
            ),
            (
                "running jobs".to_string(),
                self.samples.iter().map(|s| s.running_jobs as f64).collect(),
            ),
        ];
        h.push_str(&self.chart(&queue, false));

        let mut users: Vec<String> = Vec::new();
        for s in &self.samples {
            for k in s.running_by_user.keys() {
                if !users.contains(k) {
                    users.push(k.clone());
                }
            }
        }
        users.sort();
        let usage: Vec<(String, Vec<f64>)> = users
            .iter()
            .map(|u| {
                (
                    u.clone(),
                    self.samples
                        .iter()
                        .map(|s| s.running_by_user.get(u).copied().unwrap_or(0.0))
                        .collect(),
                )
            })
            .collect();
        h.push_str("<h2>Cores in use per user</h2>\n");
        h.push_str(&self.chart(&usage, true));

        h.push_str("<h2>Transitions</h2>\n");
        let shown = self.transitions.len().min(2000);
        if shown < self.transitions.len() {
            h.push_str(&format!(
                "<p>The first {shown} of {} (the JSON report has them all).</p>\n",
                self.transitions.len()
            ));
        }
        h.push_str("<table><tr><th>time</th><th>slot</th><th>from</th><th>to</th><th>#</th><th>cause</th></tr>\n");
        for t in &self.transitions[..shown] {
            h.push_str(&format!(
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                t.time - self.start,
                escape(&t.slot),
                t.from,
                t.to,
                t.number,
                escape(&t.cause)
            ));
        }
        h.push_str("</table>\n</body></html>\n");
        h
    }

    /// An SVG chart of `series` over the samples' times: stacked areas or
    /// lines.
    fn chart(&self, series: &[(String, Vec<f64>)], stacked: bool) -> String {
        let times: Vec<i64> = self.samples.iter().map(|s| s.time).collect();
        svg_chart(
            &times,
            self.start,
            self.duration,
            series,
            stacked,
            ("0 s", &format!("{} s", self.duration)),
        )
    }
}

/// The start of a self-contained HTML page in the reports' style (its
/// `<head>`, with the styles of tables, charts and legends; the `<body>`
/// opened): the simulator's report and `stats -html` share it.
pub fn html_head(title: &str) -> String {
    let mut h = String::new();
    h.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n");
    h.push_str(&format!("<title>{}</title>\n<style>\n", escape(title)));
    h.push_str("body{font-family:sans-serif;margin:2em;color:#222}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px;text-align:left;font-size:90%}svg{background:#fafafa;border:1px solid #ddd}.legend span{display:inline-block;margin-right:1em}.sw{display:inline-block;width:10px;height:10px;margin-right:3px}\n");
    h.push_str("</style></head><body>\n");
    h
}

/// An SVG chart (with its legend) of `series`, each a value per time of
/// `times` (epoch seconds), over `duration` seconds from `start`: stacked
/// areas or lines, `labels` under its left and right ends.
pub fn svg_chart(
    times: &[i64],
    start: i64,
    duration: i64,
    series: &[(String, Vec<f64>)],
    stacked: bool,
    labels: (&str, &str),
) -> String {
    const W: f64 = 900.0;
    const H: f64 = 240.0;
    const COLORS: [&str; 10] = [
        "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
        "#9c755f", "#bab0ac",
    ];
    let n = times.len();
    if n == 0 || series.is_empty() {
        return "<p>(no samples)</p>\n".into();
    }
    let mut top = vec![0.0f64; n];
    let mut max = 1.0f64;
    for (_, v) in series {
        for (i, x) in v.iter().enumerate() {
            if stacked {
                top[i] += x;
                max = max.max(top[i]);
            } else {
                max = max.max(*x);
            }
        }
    }
    let t0 = start as f64;
    let span = (duration as f64).max(1.0);
    let x = |i: usize| (times[i] as f64 - t0) / span * W;
    let y = |v: f64| H - v / max * H;
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"{}\" viewBox=\"0 0 {W} {}\">\n",
        H + 20.0,
        H + 20.0
    );
    let mut base = vec![0.0f64; n];
    for (k, (_, v)) in series.iter().enumerate() {
        let color = COLORS[k % COLORS.len()];
        if stacked {
            let mut pts = String::new();
            for i in 0..n {
                pts.push_str(&format!("{:.1},{:.1} ", x(i), y(base[i] + v[i])));
            }
            for i in (0..n).rev() {
                pts.push_str(&format!("{:.1},{:.1} ", x(i), y(base[i])));
            }
            svg.push_str(&format!(
                "<polygon points=\"{}\" fill=\"{color}\" fill-opacity=\"0.8\"/>\n",
                pts.trim_end()
            ));
            for i in 0..n {
                base[i] += v[i];
            }
        } else {
            let pts: Vec<String> = (0..n)
                .map(|i| format!("{:.1},{:.1}", x(i), y(v[i])))
                .collect();
            svg.push_str(&format!(
                "<polyline points=\"{}\" fill=\"none\" stroke=\"{color}\" stroke-width=\"1.5\"/>\n",
                pts.join(" ")
            ));
        }
    }
    svg.push_str(&format!(
        "<text x=\"2\" y=\"12\" font-size=\"11\">{}</text><text x=\"2\" y=\"{}\" font-size=\"11\">{}</text><text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"end\">{}</text>\n",
        num(max), H + 15.0, escape(labels.0), W - 2.0, H + 15.0, escape(labels.1)
    ));
    svg.push_str("</svg>\n<div class=\"legend\">");
    for (k, (name, _)) in series.iter().enumerate() {
        svg.push_str(&format!(
            "<span><i class=\"sw\" style=\"background:{}\"></i>{}</span>",
            COLORS[k % COLORS.len()],
            escape(name)
        ));
    }
    svg.push_str("</div>\n");
    svg
}

/// Text made safe inside HTML.
pub fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
