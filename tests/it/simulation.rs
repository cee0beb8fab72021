//! Seeded simulations of the whole gate (the public `compare` on synthetic runs), looking at
//! the data the way the adaptive interleaved runner does: at n = 10, 20 and 40 per side, each
//! look at alpha / 3, stopping as soon as the benchmark is decided.
//!
//! The fast tests here run in a few seconds in debug builds. The figures quoted in the README
//! and `docs/statistics.md` come from the larger run marked `#[ignore]`:
//! `cargo test --release --test it simulation:: -- --ignored --nocapture`.

use kgate::compare::{self, ComparePolicy};
use kgate::machine::fingerprint::Fingerprint;
use kgate::model::metric::{Direction, GateRule, Source};
use kgate::model::report::Design;
use kgate::model::results::{
    BenchmarkResult, Look, MetricSamples, Provenance, RESULTS_SCHEMA_VERSION, RunResults,
};
use kgate::model::verdict::Verdict;
use kgate::stats::inference::{LookPlan, Xorshift};

/// Lognormal timings with coefficient of variation `cv`, multiplied by 1 + `shift`.
fn timings(rng: &mut Xorshift, n: usize, cv: f64, shift: f64) -> Vec<f64> {
    let sigma = (1.0 + cv * cv).ln().sqrt();
    (0..n)
        .map(|_| 100.0 * (1.0 + shift) * (sigma * rng.normal()).exp())
        .collect()
}

fn run(values: &[f64], threshold: f64, look: Option<Look>) -> RunResults {
    let mut b = BenchmarkResult::new("kernel", Provenance::default());
    b.repetitions = values.len() as u32;
    b.metrics.push(MetricSamples {
        name: "kernel_time".into(),
        unit: "ns".into(),
        source: Source::Timer,
        direction: Direction::Lower,
        gate: GateRule {
            gates: true,
            threshold,
            tolerance: None,
        },
        values: values.to_vec(),
        repetition: (0..values.len() as u32).collect(),
    });
    b.looks = look.into_iter().collect();
    RunResults {
        schema_version: RESULTS_SCHEMA_VERSION,
        kgate_version: "sim".into(),
        created: String::new(),
        environment: Fingerprint::default(),
        benchmarks: vec![b],
    }
}

/// Outcome of one simulated gate: the verdict and the repetitions per side it used.
struct Outcome {
    verdict: Verdict,
    n: u32,
}

/// One gate decision under a look plan. `split` false is the naive variant: every look at the
/// full alpha (what "rerun until it fails" does).
fn simulate(
    rng: &mut Xorshift,
    plan: &LookPlan,
    cv: f64,
    shift: f64,
    threshold: f64,
    policy: &ComparePolicy,
    split: bool,
) -> Outcome {
    let max = *plan.looks.last().unwrap() as usize;
    let base = timings(rng, max, cv, 0.0);
    let head = timings(rng, max, cv, shift);
    let of = if split { plan.count() } else { 1 };
    let mut last = Outcome {
        verdict: Verdict::Inconclusive,
        n: 0,
    };
    for &n in &plan.looks {
        let look = Look {
            n,
            of,
            alpha: policy.alpha / f64::from(of),
            verdict: Verdict::Inconclusive,
        };
        let k = n as usize;
        let report = compare::compare(
            &run(&base[..k], threshold, Some(look.clone())),
            &run(&head[..k], threshold, Some(look)),
            policy,
            Design::Interleaved,
        );
        last = Outcome {
            verdict: report.benchmarks[0].verdict,
            n,
        };
        if last.verdict != Verdict::Inconclusive {
            break;
        }
    }
    last
}

struct Rates {
    regressed: f64,
    mean_n: f64,
}

fn rates(
    seed: u64,
    runs: usize,
    cv: f64,
    shift: f64,
    threshold: f64,
    margin: Option<f64>,
    split: bool,
) -> Rates {
    let mut rng = Xorshift::new(seed);
    let plan = LookPlan::new(10, 40);
    let policy = ComparePolicy {
        equivalence_margin: margin,
        ..ComparePolicy::default()
    };
    let (mut regressed, mut total_n) = (0usize, 0u64);
    for _ in 0..runs {
        let o = simulate(&mut rng, &plan, cv, shift, threshold, &policy, split);
        regressed += usize::from(o.verdict == Verdict::Regressed);
        total_n += u64::from(o.n);
    }
    Rates {
        regressed: regressed as f64 / runs as f64,
        mean_n: total_n as f64 / runs as f64,
    }
}

/// A/A with no materiality filter (threshold 0) and no early stop for equivalence (margin 0),
/// so every run takes all three looks: the worst case for peeking. The rate must not be
/// significantly above alpha: at most alpha plus two binomial standard errors of this run
/// count (the 20 000-run figure in the documentation is 0.0083).
#[test]
fn aa_false_alarms_across_looks_stay_at_or_under_alpha() {
    let runs = 2000;
    let alpha = ComparePolicy::default().alpha;
    let split = rates(0x5eed_0001, runs, 0.01, 0.0, 0.0, Some(0.0), true);
    let bound = alpha + 2.0 * (alpha * (1.0 - alpha) / runs as f64).sqrt();
    eprintln!(
        "A/A, looks 10/20/40 at alpha/3: false-alarm rate {:.4} over {runs} runs (bound {bound:.4})",
        split.regressed
    );
    assert!(split.regressed <= bound, "{}", split.regressed);
    // The same plan with each look at the full alpha: peeking inflates the rate, which is what
    // the split prevents (and shows that this simulation can fail).
    let naive = rates(0x5eed_0001, 800, 0.01, 0.0, 0.0, Some(0.0), false);
    eprintln!(
        "A/A, naive peeking: false-alarm rate {:.4}",
        naive.regressed
    );
    assert!(naive.regressed > bound, "naive {}", naive.regressed);
}

/// A 2 % slowdown at 1 % noise, threshold 1 %, the default plan's looks.
#[test]
fn detects_a_two_percent_shift_at_one_percent_noise() {
    let r = rates(0x5eed_0002, 400, 0.01, 0.02, 0.01, None, true);
    eprintln!(
        "2 % shift, 1 % noise: detection rate {:.3}, mean n per side {:.1}",
        r.regressed, r.mean_n
    );
    assert!(r.regressed >= 0.9, "{}", r.regressed);
}

/// A suite of `m` gated benchmarks, one of them shifted by `shift`: each benchmark is looked at
/// on its own as the runner does, then the whole run is compared once at the end (with the
/// correction across all of them). Returns (shifted one regressed, any unshifted regressed).
fn suite(rng: &mut Xorshift, m: usize, cv: f64, shift: f64, threshold: f64) -> (bool, bool) {
    let plan = LookPlan::new(10, 40);
    let policy = ComparePolicy::default();
    // The runner's interim looks assume the whole run's family.
    let interim = ComparePolicy {
        family_hint: m,
        ..ComparePolicy::default()
    };
    let mut base_run = run(&[], threshold, None);
    let mut head_run = run(&[], threshold, None);
    base_run.benchmarks.clear();
    head_run.benchmarks.clear();
    for i in 0..m {
        let s = if i == 0 { shift } else { 0.0 };
        let max = *plan.looks.last().unwrap() as usize;
        let base = timings(rng, max, cv, 0.0);
        let head = timings(rng, max, cv, s);
        let mut chosen = (Vec::new(), Vec::new(), None);
        for &n in &plan.looks {
            let look = Look {
                n,
                of: plan.count(),
                alpha: policy.alpha / f64::from(plan.count()),
                verdict: Verdict::Inconclusive,
            };
            let k = n as usize;
            let (b, h) = (
                run(&base[..k], threshold, Some(look.clone())),
                run(&head[..k], threshold, Some(look.clone())),
            );
            let verdict =
                compare::compare(&b, &h, &interim, Design::Interleaved).benchmarks[0].verdict;
            chosen = (base[..k].to_vec(), head[..k].to_vec(), Some(look));
            if verdict != Verdict::Inconclusive {
                break;
            }
        }
        for (out, values) in [(&mut base_run, &chosen.0), (&mut head_run, &chosen.1)] {
            let mut r = run(values, threshold, chosen.2.clone());
            let mut b = r.benchmarks.remove(0);
            b.name = format!("kernel{i}");
            out.benchmarks.push(b);
        }
    }
    let report = compare::compare(&base_run, &head_run, &policy, Design::Interleaved);
    let regressed = |b: &kgate::model::report::BenchmarkComparison| b.verdict == Verdict::Regressed;
    (
        regressed(&report.benchmarks[0]),
        report.benchmarks[1..].iter().any(regressed),
    )
}

/// The figures for the documentation (larger runs; release build recommended).
#[test]
#[ignore]
fn figures_for_the_documentation() {
    let aa = rates(0xf16_0001, 20_000, 0.01, 0.0, 0.0, Some(0.0), true);
    let naive = rates(0xf16_0001, 20_000, 0.01, 0.0, 0.0, Some(0.0), false);
    let aa_default = rates(0xf16_0003, 20_000, 0.01, 0.0, 0.01, None, true);
    let detect = rates(0xf16_0002, 5_000, 0.01, 0.02, 0.01, None, true);
    println!(
        "A/A worst case (threshold 0, no equivalence stop): {:.4} (naive peeking {:.4})",
        aa.regressed, naive.regressed
    );
    println!(
        "A/A with threshold 1 %: {:.4}, mean n {:.1}",
        aa_default.regressed, aa_default.mean_n
    );
    println!(
        "2 % shift at 1 % noise, threshold 1 %: detection {:.4}, mean n {:.1}",
        detect.regressed, detect.mean_n
    );
    let mut rng = Xorshift::new(0xf16_0004);
    let runs = 500;
    let (mut hit, mut false_alarm) = (0, 0);
    for _ in 0..runs {
        let (h, f) = suite(&mut rng, 50, 0.01, 0.02, 0.01);
        hit += usize::from(h);
        false_alarm += usize::from(f);
    }
    println!(
        "50 gated benchmarks, one shifted 2 % at 1 % noise: detection {:.3}, any other regressed {:.3}",
        hit as f64 / runs as f64,
        false_alarm as f64 / runs as f64
    );
    let mut rng = Xorshift::new(0xf16_0006);
    let aa_runs = 3000;
    let mut aa_alarm = 0;
    for _ in 0..aa_runs {
        aa_alarm += usize::from(suite(&mut rng, 50, 0.01, 0.0, 0.0).1);
    }
    println!(
        "50 gated benchmarks, A/A, threshold 0: run fails {aa_alarm} of {aa_runs} ({:.4})",
        aa_alarm as f64 / aa_runs as f64
    );
    println!(
        "MDE (one-sided, 80 % power) by noise c and n per side, 1 and 50 gated metrics, 3 looks:"
    );
    for c in [0.005, 0.01, 0.02, 0.05] {
        let sigma = (1.0f64 + c * c).ln().sqrt();
        let row: Vec<String> = [1.0, 50.0]
            .iter()
            .flat_map(|m| {
                [10, 20, 40].map(|n| {
                    let d = kgate::stats::inference::min_detectable_shift(
                        sigma,
                        n,
                        n,
                        0.01 / 3.0 / m,
                        0.8,
                        false,
                    )
                    .unwrap();
                    format!("{:.2} %", d.exp_m1() * 100.0)
                })
            })
            .collect();
        println!("c = {:.1} %: {}", c * 100.0, row.join(" | "));
    }
}
