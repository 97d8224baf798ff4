//! The draining estimate (Expected*Draining*, RetirementTimeRemaining)
//! published at every update: the retirement and vacate grants it is
//! made from are kept between updates when they read nothing that moves
//! (`startd::grants`), and must still follow a MaxJobRetirementTime, the
//! machine's or the job's, that reads the clock or a figure that moves
//! with it.

mod common;

use common::*;
use startd::AdsEpoch;

/// Runs a job from T0 on a one-slot startd with `config` (and the job's
/// own `job_attrs`), renews its claim, polls and publishes at each of
/// `times`; what each
/// publication said: (RetirementTimeRemaining, graceful completion less
/// the publication's time).
fn published(config: &str, job_attrs: &[(&str, &str)], times: &[i64]) -> Vec<(String, i64)> {
    let mut s = startd(config, 1);
    s.tick(T0, readings(0, 0.0));
    let mut j = job("alice");
    for (name, text) in job_attrs {
        j.insert(*name, classad::parse_expr(text).unwrap());
    }
    run_job(&mut s, j, T0);
    let (mut copies, mut epoch) = (Vec::new(), AdsEpoch::default());
    let none = classad::ClassAd::new();
    times
        .iter()
        .map(|&t| {
            let alive = startd::Event::KeepAlive {
                claim_id: "c1".into(),
            };
            s.handle(alive, t).unwrap();
            s.tick(t, readings(0, 1.0));
            assert_eq!(pair(&s, 0), "Claimed/Busy");
            s.republish(t, &none, &mut copies, &mut epoch);
            let env = classad::Env::at(t);
            let ad = &copies[0];
            let completion: i64 = ad
                .eval_attr("ExpectedMachineGracefulDrainingCompletion", &env)
                .to_string()
                .parse()
                .unwrap();
            (
                ad.eval_attr("RetirementTimeRemaining", &env).to_string(),
                completion - t,
            )
        })
        .collect()
}

const TIMES: [i64; 3] = [T0 + 1000, T0 + 2000, T0 + 3000];

#[test]
fn steady_grants_give_the_same_figures_update_after_update() {
    let got = published(
        "MaxJobRetirementTime = 3600\nMachineMaxVacateTime = 600",
        &[],
        &TIMES,
    );
    assert_eq!(
        got,
        [
            ("2600".into(), 2600 + 600),
            ("1600".into(), 1600 + 600),
            ("600".into(), 600 + 600)
        ]
    );
}

#[test]
fn a_machine_retirement_time_that_reads_a_moving_figure_is_evaluated_at_each_update() {
    let got = published(
        "MaxJobRetirementTime = ifThenElse(TotalJobRunTime < 1500, 3600, 0)\nMachineMaxVacateTime = 600",
        &[],
        &TIMES,
    );
    assert_eq!(
        got,
        [
            ("2600".into(), 2600 + 600),
            ("0".into(), 600),
            ("0".into(), 600)
        ]
    );
}

#[test]
fn a_jobs_own_retirement_time_that_reads_the_clock_is_evaluated_at_each_update() {
    let turn = format!("CurrentTime < {} ? 3600 : 2500", T0 + 1500);
    let got = published(
        "MaxJobRetirementTime = 4000\nMachineMaxVacateTime = 600",
        &[("MaxJobRetirementTime", turn.as_str())],
        &TIMES,
    );
    assert_eq!(
        got,
        [
            ("2600".into(), 2600 + 600),
            ("500".into(), 500 + 600),
            ("0".into(), 600)
        ]
    );
}
