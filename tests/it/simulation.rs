//! Seeded simulations of the whole gate, driving the adaptive runner's own look plan
//! (`inference::LookPlan`) and interim rule (`runner::interim_look`, which calls the public
//! `compare` on the repetitions so far) on synthetic timings, and the run-wide `compare` at the
//! end where a suite of benchmarks is simulated.
//!
//! The fast tests here run in a few seconds in debug builds and assert the targets loosely.
//! The figures quoted in `docs/statistics.md` come from the larger run marked `#[ignore]`:
//! `cargo test --release --test it simulation:: -- --ignored --nocapture`.

use kgate::compare::{self, ComparePolicy};
use kgate::machine::fingerprint::Fingerprint;
use kgate::model::metric::{Direction, GateRule, Source};
use kgate::model::report::Design;
use kgate::model::results::{
    BenchmarkResult, Look, MetricSamples, Provenance, RESULTS_SCHEMA_VERSION, RunResults,
};
use kgate::model::verdict::Verdict;
use kgate::run::runner::interim_look;
use kgate::stats::inference::{LookPlan, Xorshift};

/// How repetitions scatter around their centre.
#[derive(Clone, Copy, Debug)]
enum Noise {
    /// Lognormal with this coefficient of variation.
    Lognormal(f64),
    /// Two modes, as the bundled suite's matmul shows on a shared machine: lognormal with
    /// coefficient of variation `cv` around 1, and with probability `share` around
    /// 1 + `gap` instead.
    Bimodal { cv: f64, share: f64, gap: f64 },
}

/// Timings around 100 multiplied by 1 + `shift`.
fn timings(rng: &mut Xorshift, n: usize, noise: Noise, shift: f64) -> Vec<f64> {
    let lognormal = |rng: &mut Xorshift, cv: f64| {
        let sigma = (1.0 + cv * cv).ln().sqrt();
        (sigma * rng.normal()).exp()
    };
    (0..n)
        .map(|_| {
            let noise = match noise {
                Noise::Lognormal(cv) => lognormal(rng, cv),
                Noise::Bimodal { cv, share, gap } => {
                    let slow = rng.uniform() < share;
                    lognormal(rng, cv) * if slow { 1.0 + gap } else { 1.0 }
                }
            };
            100.0 * (1.0 + shift) * noise
        })
        .collect()
}

fn benchmark(name: &str, values: &[f64], threshold: f64) -> BenchmarkResult {
    let mut b = BenchmarkResult::new(name, Provenance::default());
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
        spread: None,
    });
    b
}

fn run_of(benchmarks: Vec<BenchmarkResult>) -> RunResults {
    RunResults {
        schema_version: RESULTS_SCHEMA_VERSION,
        kgate_version: "sim".into(),
        created: String::new(),
        environment: Fingerprint::default(),
        benchmarks,
    }
}

/// A way of looking: the repetitions per side at each look, and the plan whose boundary the
/// interim rule tests against.
struct Design_ {
    looks: Vec<u32>,
    boundary: LookPlan,
    /// Stops only on a two-sided claim (today's rule before the one-sided stop): a
    /// `within-threshold` look goes on. With the equivalence margin set to the threshold this
    /// is exactly the earlier rule.
    two_sided_stop: bool,
}

impl Design_ {
    /// The runner's design: looks every `step` from `min` to `max` against the plan's boundary.
    fn sequential(min: u32, max: u32, step: u32) -> Design_ {
        let plan = LookPlan::new(min, max, step);
        Design_ {
            looks: plan.looks.clone(),
            boundary: plan,
            two_sided_stop: false,
        }
    }

    /// The earlier design: looks at min, 2·min, 4·min … max, alpha split equally over them,
    /// stopping on a two-sided claim.
    fn doubling(min: u32, max: u32) -> Design_ {
        let mut looks = vec![min];
        while *looks.last().unwrap() < max {
            looks.push((looks.last().unwrap() * 2).min(max));
        }
        Design_ {
            boundary: LookPlan::bonferroni(looks.len() as u32),
            looks,
            two_sided_stop: true,
        }
    }

    /// Every look of `self` at the full alpha ("rerun until it fails").
    fn naive(&self) -> Design_ {
        Design_ {
            looks: self.looks.clone(),
            boundary: LookPlan::single(),
            two_sided_stop: self.two_sided_stop,
        }
    }

    fn max(&self) -> usize {
        *self.looks.last().unwrap() as usize
    }
}

/// What one simulated benchmark ended with: the verdict of its last look, the repetitions per
/// side it used, and that look (as recorded with its results).
struct Outcome {
    verdict: Verdict,
    n: u32,
    look: Look,
}

/// One benchmark looked at as the runner does, with `benchmarks` in the run.
fn simulate(
    rng: &mut Xorshift,
    design: &Design_,
    noise: Noise,
    shift: f64,
    threshold: f64,
    policy: &ComparePolicy,
    benchmarks: usize,
) -> (Outcome, Vec<f64>, Vec<f64>) {
    let base = timings(rng, design.max(), noise, 0.0);
    let head = timings(rng, design.max(), noise, shift);
    let mut last = None;
    for &n in &design.looks {
        let k = n as usize;
        let look = interim_look(
            &benchmark("kernel", &base[..k], threshold),
            &benchmark("kernel", &head[..k], threshold),
            n,
            &design.boundary,
            policy,
            benchmarks,
        );
        let stop = match look.verdict {
            Verdict::Inconclusive => false,
            Verdict::WithinThreshold => !design.two_sided_stop,
            _ => true,
        };
        last = Some(Outcome {
            verdict: look.verdict,
            n,
            look,
        });
        if stop {
            break;
        }
    }
    let mut o = last.expect("a design has a look");
    if design.two_sided_stop && o.verdict == Verdict::WithinThreshold {
        // The earlier rule never ended on a one-sided claim.
        o.verdict = Verdict::Inconclusive;
    }
    let n = o.n as usize;
    (o, base[..n].to_vec(), head[..n].to_vec())
}

#[derive(Debug)]
struct Rates {
    regressed: f64,
    /// Ended `unchanged`, `within-threshold` or `improved`: a claim that passes.
    passed: f64,
    mean_n: f64,
}

struct Scenario {
    noise: Noise,
    shift: f64,
    threshold: f64,
    /// `gate.equivalence_margin`; None: the default.
    margin: Option<f64>,
}

fn rates(seed: u64, runs: usize, design: &Design_, s: &Scenario) -> Rates {
    let mut rng = Xorshift::new(seed);
    let policy = ComparePolicy {
        equivalence_margin: s.margin,
        ..ComparePolicy::default()
    };
    let (mut regressed, mut passed, mut total_n) = (0usize, 0usize, 0u64);
    for _ in 0..runs {
        let (o, _, _) = simulate(&mut rng, design, s.noise, s.shift, s.threshold, &policy, 1);
        regressed += usize::from(o.verdict == Verdict::Regressed);
        passed += usize::from(matches!(
            o.verdict,
            Verdict::Unchanged | Verdict::WithinThreshold | Verdict::Improved
        ));
        total_n += u64::from(o.n);
    }
    Rates {
        regressed: regressed as f64 / runs as f64,
        passed: passed as f64 / runs as f64,
        mean_n: total_n as f64 / runs as f64,
    }
}

/// A suite of `m` gated benchmarks, the first shifted by `shift`: each looked at on its own
/// as the runner does, then the whole run compared once at the end (the correction across all
/// of them, each benchmark's looks recorded). Returns (the shifted one regressed, another
/// regressed, mean repetitions per side).
fn suite(
    rng: &mut Xorshift,
    design: &Design_,
    m: usize,
    noise: Noise,
    shift: f64,
    threshold: f64,
) -> (bool, bool, f64) {
    let policy = ComparePolicy::default();
    let (mut base_run, mut head_run) = (Vec::new(), Vec::new());
    let mut total_n = 0u64;
    for i in 0..m {
        let s = if i == 0 { shift } else { 0.0 };
        let (o, base, head) = simulate(rng, design, noise, s, threshold, &policy, m);
        total_n += u64::from(o.n);
        for (out, values) in [(&mut base_run, &base), (&mut head_run, &head)] {
            let mut b = benchmark(&format!("kernel{i}"), values, threshold);
            b.looks = vec![o.look.clone()];
            out.push(b);
        }
    }
    let report = compare::compare(
        &run_of(base_run),
        &run_of(head_run),
        &policy,
        Design::Interleaved,
    );
    let regressed = |b: &kgate::model::report::BenchmarkComparison| b.verdict == Verdict::Regressed;
    (
        regressed(&report.benchmarks[0]),
        report.benchmarks[1..].iter().any(regressed),
        total_n as f64 / m as f64,
    )
}

const ONE_PERCENT: Noise = Noise::Lognormal(0.01);
const BIMODAL: Noise = Noise::Bimodal {
    cv: 0.01,
    share: 0.3,
    gap: 0.08,
};

/// A/A with no materiality filter (threshold 0) and no stop for equivalence (margin 0), so
/// most runs take every look: the worst case for peeking. The rate must not be significantly
/// above alpha: at most alpha plus two binomial standard errors of this run count.
#[test]
fn aa_false_alarms_across_looks_stay_at_or_under_alpha() {
    let runs = 500;
    let alpha = ComparePolicy::default().alpha;
    let design = Design_::sequential(10, 40, 2);
    let worst = Scenario {
        noise: ONE_PERCENT,
        shift: 0.0,
        threshold: 0.0,
        margin: Some(0.0),
    };
    let split = rates(0x5eed_0001, runs, &design, &worst);
    let bound = alpha + 2.0 * (alpha * (1.0 - alpha) / runs as f64).sqrt();
    eprintln!(
        "A/A, 16 looks against the boundary: false-alarm rate {:.4} over {runs} runs (bound {bound:.4})",
        split.regressed
    );
    assert!(split.regressed <= bound, "{}", split.regressed);
    // The same looks each at the full alpha: peeking inflates the rate, which the boundary
    // prevents (and shows that this simulation can fail).
    let naive = rates(0x5eed_0001, 300, &design.naive(), &worst);
    eprintln!(
        "A/A, naive peeking: false-alarm rate {:.4}",
        naive.regressed
    );
    assert!(naive.regressed > bound, "naive {}", naive.regressed);
}

/// The same worst case on two-mode noise, where the normal theory behind the boundary is
/// furthest from the data.
#[test]
fn bimodal_aa_false_alarms_stay_at_or_under_alpha() {
    let runs = 400;
    let alpha = ComparePolicy::default().alpha;
    let r = rates(
        0x5eed_0003,
        runs,
        &Design_::sequential(10, 40, 2),
        &Scenario {
            noise: BIMODAL,
            shift: 0.0,
            threshold: 0.0,
            margin: Some(0.0),
        },
    );
    let bound = alpha + 2.0 * (alpha * (1.0 - alpha) / runs as f64).sqrt();
    eprintln!("bimodal A/A: false-alarm rate {:.4}", r.regressed);
    assert!(r.regressed <= bound, "{}", r.regressed);
}

/// A/A at 1 % noise and a 1 % threshold stops early on the one-sided claim (the goal:
/// at most 20 repetitions per side on average; loosely here), and a 1.5 % slowdown is caught
/// early.
#[test]
fn one_sided_stop_saves_repetitions_and_still_catches_slowdowns() {
    let design = Design_::sequential(10, 40, 2);
    let aa = rates(
        0x5eed_0004,
        300,
        &design,
        &Scenario {
            noise: ONE_PERCENT,
            shift: 0.0,
            threshold: 0.01,
            margin: None,
        },
    );
    eprintln!("A/A, threshold 1 %: {aa:?}");
    assert!(aa.mean_n <= 22.0, "{aa:?}");
    assert!(aa.regressed <= 0.02 && aa.passed >= 0.95, "{aa:?}");
    let slow = rates(
        0x5eed_0002,
        300,
        &design,
        &Scenario {
            noise: ONE_PERCENT,
            shift: 0.015,
            threshold: 0.01,
            margin: None,
        },
    );
    eprintln!("1.5 % slowdown, threshold 1 %: {slow:?}");
    assert!(slow.regressed >= 0.95 && slow.mean_n <= 14.0, "{slow:?}");
}

/// A real slowdown of exactly the threshold is rarely passed: passing claims no regression as
/// large as the threshold, at alpha over the plan.
#[test]
fn a_slowdown_of_the_threshold_is_rarely_passed() {
    let runs = 300;
    let r = rates(
        0x5eed_0005,
        runs,
        &Design_::sequential(10, 40, 2),
        &Scenario {
            noise: ONE_PERCENT,
            shift: 0.01,
            threshold: 0.01,
            margin: None,
        },
    );
    eprintln!("+1 % at a 1 % threshold: {r:?}");
    let alpha = ComparePolicy::default().alpha;
    assert!(
        r.passed <= alpha + 2.0 * (alpha * (1.0 - alpha) / runs as f64).sqrt(),
        "{r:?}"
    );
}

fn row(label: &str, before: Option<&Rates>, after: &Rates, what: &str) {
    let show = |r: &Rates| match what {
        "alarm" => format!(
            "{:.2} % false alarms, {:.1} reps",
            r.regressed * 100.0,
            r.mean_n
        ),
        "caught" => format!("{:.2} % caught, {:.1} reps", r.regressed * 100.0, r.mean_n),
        _ => format!("{:.2} % passed, {:.1} reps", r.passed * 100.0, r.mean_n),
    };
    println!(
        "| {label} | {} | {} |",
        before.map_or("–".to_string(), show),
        show(after)
    );
}

/// The figures for the documentation (larger runs; release build recommended).
#[test]
#[ignore]
fn figures_for_the_documentation() {
    let runs = 20_000;
    let today = Design_::doubling(10, 40);
    let designs = [
        ("10–40 every 2", Design_::sequential(10, 40, 2)),
        ("8–40 every 2", Design_::sequential(8, 40, 2)),
    ];
    let scenario = |noise, shift, threshold, margin| Scenario {
        noise,
        shift,
        threshold,
        margin,
    };
    // (label, scenario, what is counted, seed). Today's rule stopped on the two-sided claim
    // inside ±threshold; with the margin at the threshold the emulation is exact.
    let cases = [
        (
            "A/A, 1 % noise, threshold 1 %",
            scenario(ONE_PERCENT, 0.0, 0.01, Some(0.01)),
            "alarm",
            1,
        ),
        (
            "+1.5 %, 1 % noise, threshold 1 %",
            scenario(ONE_PERCENT, 0.015, 0.01, Some(0.01)),
            "caught",
            2,
        ),
        (
            "+2 %, 1 % noise, threshold 1 %",
            scenario(ONE_PERCENT, 0.02, 0.01, Some(0.01)),
            "caught",
            3,
        ),
        (
            "+1 % (the threshold), 1 % noise",
            scenario(ONE_PERCENT, 0.01, 0.01, Some(0.01)),
            "passed",
            4,
        ),
        (
            "A/A, 5 % noise, threshold 5 %",
            scenario(Noise::Lognormal(0.05), 0.0, 0.05, Some(0.05)),
            "alarm",
            5,
        ),
        (
            "+7.5 %, 5 % noise, threshold 5 %",
            scenario(Noise::Lognormal(0.05), 0.075, 0.05, Some(0.05)),
            "caught",
            6,
        ),
        (
            "A/A, bimodal, threshold 1 %",
            scenario(BIMODAL, 0.0, 0.01, Some(0.01)),
            "alarm",
            7,
        ),
        (
            "+1.5 %, bimodal, threshold 1 %",
            scenario(BIMODAL, 0.015, 0.01, Some(0.01)),
            "caught",
            8,
        ),
        (
            "A/A worst case (threshold 0, margin 0), 1 % noise",
            scenario(ONE_PERCENT, 0.0, 0.0, Some(0.0)),
            "alarm",
            9,
        ),
        (
            "A/A worst case, bimodal",
            scenario(BIMODAL, 0.0, 0.0, Some(0.0)),
            "alarm",
            10,
        ),
        (
            "A/A worst case, 5 % noise",
            scenario(Noise::Lognormal(0.05), 0.0, 0.0, Some(0.0)),
            "alarm",
            11,
        ),
    ];
    for (name, design) in &designs {
        println!("\n{runs} runs per row; today: 10/20/40 at alpha / 3; new: {name}");
        println!("| scenario | today | new |\n|---|---|---|");
        let results: Vec<(Option<Rates>, Rates)> = std::thread::scope(|scope| {
            let handles: Vec<_> = cases
                .iter()
                .map(|(_, s, _, seed)| {
                    let today = &today;
                    scope.spawn(move || {
                        let before = (name.starts_with("10"))
                            .then(|| rates(0xf16_0000 + seed, runs, today, s));
                        (before, rates(0xf16_0000 + seed, runs, design, s))
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for ((label, _, what, _), (before, after)) in cases.iter().zip(&results) {
            row(label, before.as_ref(), after, what);
        }
        // The same boundary with every look at the full alpha.
        let naive = rates(0xf16_0009, runs, &design.naive(), &cases[8].1);
        println!(
            "| A/A worst case, every look at the full alpha | – | {:.2} % false alarms |",
            naive.regressed * 100.0
        );
        let suite_runs = 2_000;
        for (label, shift, threshold, seed) in [
            (
                "+2 % in 1 of 50 benchmarks, threshold 1 %",
                0.02,
                0.01,
                0xf16_0014u64,
            ),
            ("A/A over 50 benchmarks, threshold 0", 0.0, 0.0, 0xf16_0016),
        ] {
            let tally = |design: &Design_| {
                let mut rng = Xorshift::new(seed);
                let (mut hit, mut other, mut n) = (0usize, 0usize, 0.0);
                for _ in 0..suite_runs {
                    let (h, o, mean) = suite(&mut rng, design, 50, ONE_PERCENT, shift, threshold);
                    hit += usize::from(h);
                    other += usize::from(o);
                    n += mean;
                }
                format!(
                    "{} caught, another regressed in {:.2} %, {:.1} reps",
                    if shift > 0.0 {
                        format!("{:.2} %", hit as f64 / suite_runs as f64 * 100.0)
                    } else {
                        "–".into()
                    },
                    other as f64 / suite_runs as f64 * 100.0,
                    n / suite_runs as f64
                )
            };
            let before = name.starts_with("10").then(|| tally(&today));
            println!(
                "| {label} ({suite_runs} runs) | {} | {} |",
                before.unwrap_or_else(|| "–".into()),
                tally(design)
            );
        }
    }
    let plan = LookPlan::new(10, 40, 2);
    println!(
        "\nMDE (one-sided, 80 % power) at the nominal level of a look of 10–40 every 2 (1 and 50 gated metrics):"
    );
    for c in [0.005, 0.01, 0.02, 0.05] {
        let sigma = (1.0f64 + c * c).ln().sqrt();
        let row: Vec<String> = [1.0, 50.0]
            .iter()
            .flat_map(|m| {
                [10, 20, 40].map(|n| {
                    let level = plan.nominal_level(0.01 / m);
                    let d = kgate::stats::inference::min_detectable_shift(
                        sigma, n, n, level, 0.8, false,
                    )
                    .unwrap();
                    format!("{:.2} %", d.exp_m1() * 100.0)
                })
            })
            .collect();
        println!("| {:.1} % | {} |", c * 100.0, row.join(" | "));
    }
}
