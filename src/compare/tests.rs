use super::*;
use crate::machine::fingerprint::Fingerprint;
use crate::model::metric::{Direction, Tolerance};
use crate::model::results::Provenance;
use crate::stats::inference::History;
use rules::percent_level;

#[rustfmt::skip]
const BASE: [f64; 10] = [100.2, 101.1, 99.8, 100.5, 100.9, 100.1, 100.4, 99.9, 100.7, 100.3];
#[rustfmt::skip]
const NEW: [f64; 10] = [101.9, 102.3, 101.5, 102.8, 101.7, 102.1, 102.5, 101.6, 102.0, 102.4];
#[rustfmt::skip]
const SAME: [f64; 10] = [100.4, 101.0, 100.1, 100.6, 100.8, 100.3, 100.5, 100.0, 100.9, 100.2];
#[rustfmt::skip]
const NOISY: [f64; 10] = [99.0, 102.5, 100.1, 98.7, 101.9, 100.3, 102.2, 99.1, 101.5, 100.0];

fn samples(values: &[f64], threshold: f64) -> MetricSamples {
    let mut m = MetricSamples::timer("kernel_time", values);
    m.gate.threshold = threshold;
    m
}

fn verdict(base: &[f64], head: &[f64], threshold: f64) -> MetricComparison {
    let (base, head) = (samples(base, threshold), samples(head, threshold));
    compare_metric(&base, &head, &ComparePolicy::default())
}

/// The two runs compared as result files under the default policy.
fn files(base: &RunResults, head: &RunResults) -> Report {
    compare(base, head, &ComparePolicy::default(), Design::Files)
}

/// The candidate against a stored baseline and earlier jobs, under the default policy.
fn stored(base: &RunResults, head: &RunResults, history: &[RunResults]) -> Report {
    compare_with_history(
        base,
        head,
        history,
        &ComparePolicy::default(),
        Design::StoredBaseline,
    )
}

#[track_caller]
fn assert_starts(text: &str, prefix: &str) {
    assert!(text.starts_with(prefix), "{text}");
}

#[test]
fn a_clear_shift_beyond_the_threshold_regresses() {
    let m = verdict(&BASE, &NEW, 0.01);
    assert_eq!(m.verdict, Verdict::Regressed, "{}", m.reason);
    assert!((m.p_value.unwrap() - 1.082508822446903e-05).abs() < 1e-12);
    // Hodges–Lehmann on logs (test vector TV-HL-4): ratio 1.01694.
    assert!((m.change.unwrap() - 0.016_940_711_694_322_8).abs() < 1e-9);
    // The interval is the one the one-sided test at alpha 0.01 was decided at: 98 %
    // two-sided, whose lower bound is the one-sided 99 % bound.
    assert_eq!(m.ci_level, Some(0.98));
    let logs = |v: &[f64]| v.iter().map(|x| x.ln()).collect::<Vec<_>>();
    let want = stats::hodges_lehmann(&logs(&NEW), &logs(&BASE), 0.98).unwrap();
    let ci = m.ci.unwrap();
    let close = |got: f64, log: f64| (got - log.exp_m1()).abs() < 1e-12;
    assert!(close(ci[0], want.low) && close(ci[1], want.high), "{ci:?}");
    assert!(ci[0] > 0.0);
    assert_contains!(m.reason, "beyond the 1.00 % threshold");
}

#[test]
fn a_significant_shift_below_a_wide_threshold_is_within_it_not_unchanged() {
    // +1.7 % with a 5 % threshold: real, but smaller than what counts. "Unchanged" would
    // tell a reader there was no change.
    let m = verdict(&BASE, &NEW, 0.05);
    assert_eq!(m.verdict, Verdict::WithinThreshold, "{}", m.reason);
    assert_contains!(m.reason, "a real change, within the 5.00 % threshold");
    assert_contains!(m.reason, "±1.00 %");
}

#[test]
fn the_same_direction_reversed_is_an_improvement() {
    let m = verdict(&NEW, &BASE, 0.01);
    assert_eq!(m.verdict, Verdict::Improved, "{}", m.reason);
    assert!(m.change.unwrap() < 0.0);
    let higher = |v: &[f64]| MetricSamples {
        direction: Direction::Higher,
        ..samples(v, 0.01)
    };
    let m = compare_metric(&higher(&BASE), &higher(&NEW), &ComparePolicy::default());
    let rise = "higher is better: a rise improves";
    assert_eq!(m.verdict, Verdict::Improved, "{rise}");
}

#[test]
fn noise_without_a_shift_is_unchanged_or_inconclusive_never_a_regression() {
    assert_eq!(verdict(&BASE, &SAME, 0.05).verdict, Verdict::Unchanged);
    let m = verdict(&BASE, &NOISY, 0.005);
    assert_eq!(m.verdict, Verdict::Inconclusive, "{}", m.reason);
    assert_contains!(m.reason, "not enough evidence");
}

#[test]
fn a_likely_change_whose_interval_reaches_the_threshold_is_inconclusive() {
    let m = verdict(&BASE, &NEW, 0.02);
    assert_eq!(m.verdict, Verdict::Inconclusive, "{}", m.reason);
    assert_contains!(m.reason, "more repetitions would decide");
}

#[test]
fn too_few_samples_are_inconclusive_not_guessed() {
    let m = verdict(&[1.0, 2.0, 3.0], &[10.0, 20.0, 30.0], 0.05);
    assert_eq!(m.verdict, Verdict::Inconclusive);
    let said = "too few samples (3 baseline, 3 candidate) to test";
    assert_contains!(m.reason, said);
    assert_contains!(m.reason, "at least 5 per side at alpha 0.01");
    // The point change is shown; no interval or p-value is claimed.
    assert!((m.change.unwrap() - 9.0).abs() < 1e-12);
    assert_eq!((m.ci, m.ci_level, m.p_value), (None, None, None));
}

#[test]
fn one_sample_per_side_shows_the_change_and_claims_nothing() {
    // Two equal values are not "unchanged with a 99 % interval".
    let m = verdict(&[5.0], &[5.0], 0.05);
    assert_eq!(m.verdict, Verdict::Inconclusive, "{}", m.reason);
    assert_eq!(m.change, Some(0.0));
    assert_eq!((m.ci, m.p_value, m.equivalence_ci), (None, None, None));
    assert_contains!(m.reason, "one sample per side cannot be tested");
    // A 100x slowdown is shown as +9900 %, not hidden behind "too few samples".
    let m = verdict(&[5.0], &[500.0], 0.05);
    assert_eq!(m.verdict, Verdict::Inconclusive);
    assert!((m.change.unwrap() - 99.0).abs() < 1e-12);
    assert_starts(&m.reason, "+9900 % (5.000 ns → 500.0 ns)");
    // One sample against many cannot reach the level either.
    let m = verdict(&[5.0], &BASE, 0.05);
    assert_eq!(m.verdict, Verdict::Inconclusive);
    assert!(m.change.is_some() && m.ci.is_none());
}

#[test]
fn one_mean_per_side_with_its_spread_gets_welchs_test() {
    use crate::model::results::Spread;
    // nvbench's way: a mean of n samples, with their standard deviation.
    let summary = |mean: f64, sd: f64, n: u64| MetricSamples {
        spread: Some(Spread { sd, n }),
        ..samples(&[mean], 0.05)
    };
    let policy = ComparePolicy::default();
    // scipy.stats.ttest_ind_from_stats(1.2, 0.3, 10, 1.0, 0.1, 20, equal_var=False): p =
    // 0.06725094678670959.
    let m = compare_metric(&summary(1.0, 0.1, 20), &summary(1.2, 0.3, 10), &policy);
    assert_eq!(m.method, Method::WelchSummaries);
    assert!((m.p_value.unwrap() - 0.067_250_946_786_709_59).abs() < 1e-9);
    assert!((m.change.unwrap() - 0.2).abs() < 1e-12);
    assert_eq!(m.verdict, Verdict::Inconclusive, "{}", m.reason);
    let said = "Welch's test on summaries (mean, sd, n): 20 vs 10 samples";
    assert_contains!(m.reason, said);
    // 0.1 % noise over 499 samples: 20 % slower regresses, the same mean is unchanged.
    let base = summary(1.0e6, 1.0e3, 499);
    let m = compare_metric(&base, &summary(1.2e6, 1.2e3, 499), &policy);
    assert_eq!(m.verdict, Verdict::Regressed, "{}", m.reason);
    let ci = m.ci.unwrap();
    assert!(ci[0] > 0.19 && ci[1] < 0.21, "{ci:?}");
    assert!(m.mde.is_some_and(|d| d > 0.0 && d < 0.001), "{:?}", m.mde);
    let m = compare_metric(&base, &summary(1.0e6, 1.0e3, 499), &policy);
    assert_eq!(m.verdict, Verdict::Unchanged, "{}", m.reason);
    // Without any spread the test is undefined: said, not guessed.
    let m = compare_metric(&summary(1.0, 0.0, 5), &summary(1.2, 0.0, 5), &policy);
    assert_eq!(m.verdict, Verdict::Inconclusive);
    assert_contains!(m.reason, "is undefined here");
}

#[test]
fn deterministic_metrics_use_their_tolerance() {
    let mut b = samples(&[1000.0], 0.05);
    b.gate.tolerance = Some(Tolerance::Relative(0.01));
    let mut h = b.clone();
    let mut against = |value: f64, tolerance: Tolerance| {
        h.values = vec![value];
        h.gate.tolerance = Some(tolerance);
        compare_metric(&b, &h, &ComparePolicy::default())
    };
    let one_percent = Tolerance::Relative(0.01);
    let m = against(1005.0, one_percent);
    assert_eq!(m.verdict, Verdict::Unchanged);
    assert_eq!(m.method, Method::Tolerance);
    let m = against(1020.0, one_percent);
    assert_eq!(m.verdict, Verdict::Regressed);
    assert!((m.change.unwrap() - 0.02).abs() < 1e-12);
    assert_eq!(against(900.0, one_percent).verdict, Verdict::Improved);
    // -10 % inside an absolute tolerance of 150 is within it, but not "unchanged".
    let m = against(900.0, Tolerance::Absolute(150.0));
    assert_eq!(m.verdict, Verdict::WithinThreshold);
}

fn run(benchmarks: Vec<BenchmarkResult>) -> RunResults {
    RunResults::of(benchmarks)
}

fn bench(name: &str, m: MetricSamples) -> BenchmarkResult {
    let mut b = BenchmarkResult::new(name, Provenance::default());
    b.repetitions = m.values.len() as u32;
    b.metrics.push(m);
    b
}

/// Benchmark `name` of one metric, `values`, gated at a 1 % threshold.
fn gated(name: &str, values: &[f64]) -> BenchmarkResult {
    bench(name, samples(values, 0.01))
}

#[test]
fn evidence_bounded_while_it_is_built_is_the_evidence_bounded_afterwards() {
    use crate::model::evidence::{Evidence, MAX_CHARTED_METRICS};
    // More regressed and undecided metrics than a bounded report charts, metrics that
    // held, benchmarks with nothing charted, a long series to thin, and a benchmark on
    // one side only each way.
    let named = |name: &str, values: &[f64]| MetricSamples {
        name: name.into(),
        ..samples(values, 0.01)
    };
    let long: Vec<f64> = (0..1500).map(|i| 100.0 + f64::from(i % 7)).collect();
    let longer: Vec<f64> = long.iter().map(|v| v * 1.1).collect();
    let mut base = Vec::new();
    let mut head = Vec::new();
    for i in 0..150 {
        let mut b = bench(&format!("b{i}"), named("slow", &BASE));
        b.metrics.push(named("held", &SAME));
        b.metrics.push(named("noisy", &NOISY));
        let slow: &[f64] = if i % 2 == 0 { &NEW } else { &BASE };
        let mut h = bench(&format!("b{i}"), named("slow", slow));
        h.metrics.push(named("held", &SAME));
        h.metrics.push(named("noisy", &SAME));
        if i == 0 {
            b.metrics.push(named("long", &long));
            h.metrics.push(named("long", &longer));
        }
        base.push(b);
        head.push(h);
    }
    base.push(bench("gone", named("slow", &BASE)));
    head.insert(3, bench("fresh", named("slow", &NEW)));
    let (base, head) = (run(base), run(head));
    let mut built = files(&base, &head);
    let mut afterwards = built.clone();
    afterwards.evidence = Some(Evidence::from_runs(Some(&base), &head));
    afterwards.bound_evidence();
    built.attach_bounded_evidence(Some(&base), &head);
    assert_eq!(built.evidence, afterwards.evidence);
    let evidence = built.evidence.unwrap();
    let omitted = evidence.omitted.clone().expect("something was left out");
    assert!(omitted.benchmarks > 0 && omitted.metrics > 0 && omitted.thinned_series > 0);
    let metrics = evidence.benchmarks.iter().flat_map(|b| &b.metrics);
    let charted = metrics.filter(|m| !m.base.is_empty() || !m.head.is_empty());
    assert_eq!(charted.count(), MAX_CHARTED_METRICS);
    for one_side in ["fresh", "gone"] {
        assert!(!evidence.benchmark(one_side).unwrap().metrics.is_empty());
    }
}

#[test]
fn a_wrong_candidate_is_incorrect_whatever_its_speed_with_or_without_a_baseline() {
    use crate::model::results::Correctness;
    let wrong = |name: &str, values: &[f64], detail: Option<&str>| {
        let mut b = gated(name, values);
        Correctness::record(&mut b.correctness, true, None);
        Correctness::record(&mut b.correctness, false, detail.map(str::to_string));
        Correctness::record(&mut b.correctness, false, Some("a later detail".into()));
        b
    };
    let base = run(vec![gated("faster", &NEW), gated("same", &BASE)]);
    let head = run(vec![
        wrong("faster", &BASE, Some("max abs error 0.5 > 1e-3")),
        wrong("same", &SAME, None),
        wrong("fresh", &SAME, Some("NaN")),
    ]);
    let r = files(&base, &head);
    assert_eq!(r.verdict, RunVerdict::Regressed);
    assert_eq!((r.summary.incorrect, r.summary.improved), (3, 0));
    let faster = &r.benchmarks[0];
    assert_eq!(faster.verdict, Verdict::Incorrect);
    assert_eq!(faster.metrics[0].verdict, Verdict::Improved);
    assert_starts(
        &faster.explanation,
        "failed its correctness check in the candidate: max abs error 0.5 > 1e-3; wrong answers fail the gate whatever their speed (its metrics alone say improved: ",
    );
    assert_starts(
        &r.benchmarks[1].explanation,
        "failed its correctness check in the candidate; wrong answers",
    );
    assert_eq!(r.benchmarks[2].verdict, Verdict::Incorrect);
    let fresh = &r.benchmarks[2].explanation;
    assert!(fresh.ends_with("; it has no baseline"), "{fresh}");
    // Without a baseline a wrong answer still fails the run.
    let r = no_baseline(&head, &ComparePolicy::default(), "none".into());
    assert_eq!(r.verdict, RunVerdict::Regressed);
    assert_eq!(r.summary.incorrect, 3);
    // A wrong baseline gates nothing; a correct candidate is compared as ever.
    let r = files(&head, &base);
    assert_eq!(r.summary.incorrect, 0);
}

#[test]
fn a_side_not_comparable_is_not_gated_and_changed_parameters_are_said() {
    let with = |name: &str, values: &[f64], parameters: &[(&str, &str)]| {
        let mut b = gated(name, values);
        for (k, v) in parameters {
            b.parameters.insert(k.to_string(), v.to_string());
        }
        b
    };
    let base = run(vec![
        with("slow", &BASE, &[]),
        with("same", &BASE, &[("launches", "68"), ("grid", "64x1x1")]),
    ]);
    let mut head = run(vec![
        with("slow", &NEW, &[]),
        with("same", &SAME, &[("launches", "60"), ("block", "128x1x1")]),
    ]);
    let details = &mut head.benchmarks[0].provenance.details;
    details.insert(NOT_COMPARABLE.into(), "throttled: 900 MHz".into());
    let r = files(&base, &head);
    let slow = &r.benchmarks[0];
    assert_eq!(slow.verdict, Verdict::NotGated, "{}", slow.explanation);
    assert_starts(
        &slow.explanation,
        "kernel_time +1.69 % would regress, but not comparable in the candidate: throttled: 900 MHz",
    );
    assert_eq!(r.summary.not_gated, 1);
    let same = &r.benchmarks[1];
    let changed = "parameters that differ from the baseline: block (none) → 128x1x1, grid 64x1x1 → (none), launches 68 → 60";
    let said = &same.explanation;
    assert!(said.ends_with(&format!(". {changed}")), "{said}");
    assert_eq!(same.changed_parameters(), Some(changed));
    assert_eq!(slow.changed_parameters(), None);
}

#[test]
fn run_verdicts_new_missing_and_untrusted_sources() {
    let base = run(vec![gated("a", &BASE), gated("gone", &BASE)]);
    let mut reported = samples(&NEW, 0.01);
    reported.source = Source::Reported;
    let head = run(vec![gated("a", &NEW), gated("fresh", &NEW)]);
    let r = files(&base, &head);
    assert_eq!(r.verdict, RunVerdict::Regressed);
    let s = &r.summary;
    assert_eq!((s.regressed, s.new, s.missing), (1, 1, 1));
    assert_eq!(r.benchmarks[0].verdict, Verdict::Regressed);
    assert_starts(&r.benchmarks[0].explanation, "kernel_time: +1.69 %");

    // The same regression from a source that may not gate passes, and says why.
    let head = run(vec![bench("a", reported), gated("gone", &BASE)]);
    let r = files(&base, &head);
    assert_eq!(r.verdict, RunVerdict::Pass);
    let m = &r.benchmarks[0].metrics[0];
    assert_eq!(m.verdict, Verdict::Regressed);
    assert!(!m.gates);
    assert_starts(
        &m.reason,
        "may not fail the build: its source `reported` is not allowed to gate",
    );
    // A benchmark none of whose metrics may gate is never "unchanged": it has its own
    // verdict and count, and the regression it would have had is a warning.
    assert_eq!(r.benchmarks[0].verdict, Verdict::NotGated);
    assert_eq!((r.summary.not_gated, r.summary.unchanged), (1, 1));
    assert_starts(
        &r.benchmarks[0].explanation,
        "kernel_time +1.69 % would regress, but its source `reported`",
    );
    // Said once, in the benchmark's own explanation, not again as a warning.
    let again = r.warnings.iter().any(|w| w.contains("would regress"));
    assert!(!again, "{:?}", r.warnings);
}

#[test]
fn the_correction_spans_every_gated_metric_of_the_run() {
    // 6 vs 6 complete separation: one-sided p = 1/924 = 0.00108. Alone it regresses at
    // alpha 0.01; among 20 gated benchmarks (19 unchanged, p near 1) BH needs p ≤ 0.0005.
    let low: Vec<f64> = (0..6).map(|i| 100.0 + f64::from(i) * 0.1).collect();
    let high: Vec<f64> = low.iter().map(|v| v * 1.05).collect();
    let alone = files(&run(vec![gated("a", &low)]), &run(vec![gated("a", &high)]));
    let m = &alone.benchmarks[0].metrics[0];
    assert_eq!(m.verdict, Verdict::Regressed, "{}", m.reason);
    assert!((m.p_regression.unwrap() - 1.0 / 924.0).abs() < 1e-12);
    assert_eq!(m.p_adjusted, m.p_regression);
    let mut base = vec![gated("a", &low)];
    let mut head = vec![gated("a", &high)];
    for i in 0..19 {
        base.push(gated(&format!("b{i}"), &BASE));
        head.push(gated(&format!("b{i}"), &BASE));
    }
    let r = files(&run(base.clone()), &run(head.clone()));
    let m = &r.benchmarks[0].metrics[0];
    assert_eq!(m.verdict, Verdict::Inconclusive, "{}", m.reason);
    assert!((m.p_adjusted.unwrap() - 20.0 / 924.0).abs() < 1e-12);
    // 6 per side cannot reach 0.01 / 20 = 5e-4, the level a lone regression faces, so
    // there is no detectable effect to report for one. But BH rejects at up to alpha·k/m,
    // and the floor 1/924 is below alpha: had more of the family regressed, this one could
    // have been, so it is not "too few repetitions to detect anything".
    assert!(!m.reason.contains("too few repetitions"), "{}", m.reason);
    assert_eq!(m.mde, None);
    assert_eq!(r.correction, Correction::Bh);
    assert_eq!(r.model, Model::RankTest);
    // Holm's step-down must first reject at alpha / m: 5e-4 is out of reach, whatever the
    // others do, and the reason says so, naming the correction.
    let holm = ComparePolicy {
        correction: Correction::Holm,
        ..ComparePolicy::default()
    };
    let r = compare(&run(base), &run(head), &holm, Design::Files);
    let m = &r.benchmarks[0].metrics[0];
    assert_eq!(m.verdict, Verdict::Inconclusive, "{}", m.reason);
    let said = "too few repetitions to detect anything: the smallest attainable p is 0.001, above the largest level the holm correction over 20 tested metrics can reach (5.0e-4)";
    assert_contains!(m.reason, said);
}

#[test]
fn equivalence_margin_and_mde_are_reported() {
    let m = verdict(&BASE, &SAME, 0.05);
    assert_eq!(m.verdict, Verdict::Unchanged);
    // The default margin is what a reader calls no change: 1 %, not the 5 % threshold.
    assert_eq!(m.equivalence_margin, Some(0.01));
    let eq = m.equivalence_ci.unwrap();
    // 98 % (1 − 2·alpha) Hodges–Lehmann interval of ln(SAME) − ln(BASE).
    assert!(eq[0] > -0.01 && eq[1] < 0.01, "{eq:?}");
    let mde = m.mde.unwrap();
    assert!(mde > 0.0 && mde < 0.02, "{mde}");
    // A 0.1 % margin is narrower than the interval: no claim of "unchanged".
    let policy = ComparePolicy {
        equivalence_margin: Some(0.001),
        ..ComparePolicy::default()
    };
    let m = compare_metric(&samples(&BASE, 0.05), &samples(&SAME, 0.05), &policy);
    assert_eq!(m.verdict, Verdict::WithinThreshold, "{}", m.reason);
    let said = "no significant change, within the 5.00 % threshold";
    assert_contains!(m.reason, said);
    assert_contains!(m.reason, "±0.10 %");
}

#[test]
fn looks_split_alpha() {
    // NEW vs BASE: one-sided p = 5.4e-6; at alpha 0.01 over 3 looks still regressed, and
    // the report says how many looks were planned.
    let look = crate::model::results::Look {
        n: 10,
        of: 3,
        alpha: 0.01 / 3.0,
        verdict: Verdict::Inconclusive,
        schedule: None,
    };
    let compared = |look: &crate::model::results::Look| {
        let mut b = gated("a", &BASE);
        let mut h = gated("a", &NEW);
        b.looks = vec![look.clone()];
        h.looks = vec![look.clone()];
        let (b, h) = (run(vec![b]), run(vec![h]));
        compare(&b, &h, &ComparePolicy::default(), Design::Interleaved)
    };
    // Recorded without a schedule: Bonferroni over 3 looks, the adjusted p three times
    // the raw one.
    let r = compared(&look);
    assert_eq!(r.looks, 3);
    assert_eq!(r.benchmarks[0].verdict, Verdict::Regressed);
    let m = &r.benchmarks[0].metrics[0];
    let raw = m.p_regression.unwrap();
    assert!((m.p_adjusted.unwrap() - 3.0 * raw).abs() < 1e-12 * raw.max(1e-300));
    // With a schedule (16 looks every 2 from 10 to 40): the plan's sequential p, below
    // Bonferroni's 16 · p, and the interval at the nominal level of a look.
    let plan = inference::LookPlan::new(10, 40, 2);
    let look = crate::model::results::Look {
        of: plan.count(),
        alpha: plan.alpha_per_look(0.01),
        schedule: plan.schedule(),
        ..look
    };
    let r = compared(&look);
    assert_eq!(r.looks, 16);
    assert_eq!(r.benchmarks[0].verdict, Verdict::Regressed);
    let m = &r.benchmarks[0].metrics[0];
    let adjusted = m.p_adjusted.unwrap();
    assert_eq!(adjusted, plan.sequential_p(raw));
    assert!(adjusted > raw && adjusted < 16.0 * raw, "{raw} {adjusted}");
    let level = m.ci_level.unwrap();
    let nominal = 1.0 - 2.0 * plan.alpha_per_look(0.01);
    assert!((level - nominal).abs() < 1e-12, "{level}");
}

#[test]
fn stored_baseline_with_history_uses_a_prediction_interval() {
    // Four earlier jobs whose medians scatter by about 1 %; the candidate's median is 3 %
    // above their mean.
    let job = |scale: f64| run(vec![bench("a", samples(&BASE.map(|v| v * scale), 0.02))]);
    let base = job(1.0);
    let history = [job(1.01), job(0.99), job(1.005), job(0.995)];
    let head = job(1.03);
    let r = stored(&base, &head, &history);
    assert_eq!(r.model, Model::PredictionInterval);
    let m = &r.benchmarks[0].metrics[0];
    assert_eq!(m.method, Method::PredictionInterval);
    // Job medians are ln(100.4·s): relative to ln(100.4) they are ln(s).
    let logs = [1.0f64, 1.01, 0.99, 1.005, 0.995].map(f64::ln);
    let h = History::new(&logs).unwrap();
    let want = (1.03f64.ln() - h.mean).exp_m1();
    assert!((m.change.unwrap() - want).abs() < 1e-9, "{:?}", m.change);
    let p = h.p_above(1.03f64.ln());
    assert!((m.p_regression.unwrap() - p).abs() < 1e-12);
    assert_contains!(m.reason, "against 5 stored jobs");
    // Within-job noise is tiny, so the rank test would call this a regression; the job
    // spread makes it a finding only if it clears the prediction interval at alpha.
    let regressed = p <= 0.01;
    let expected = if regressed {
        Verdict::Regressed
    } else {
        Verdict::Inconclusive
    };
    assert_eq!(m.verdict, expected, "{}", m.reason);
    assert!(r.warnings.iter().all(|w| !w.contains("job-to-job offsets")));
    // Without history the same comparison falls back to the rank test, with the warning.
    let r = stored(&base, &head, &[]);
    assert_eq!(r.model, Model::RankTest);
    assert!(r.warnings.iter().any(|w| w.contains("job-to-job offsets")));
}

/// `n` draws of 100 · exp(N(0, sd)) scaled by `scale`.
fn lognormal(rng: &mut inference::Xorshift, n: usize, sd: f64, scale: f64) -> Vec<f64> {
    (0..n)
        .map(|_| 100.0 * scale * (sd * rng.normal()).exp())
        .collect()
}

#[test]
fn a_regression_interval_never_includes_no_change() {
    // Shifts near the edge of significance, alone and among other gated benchmarks: every
    // regression's interval (at its stated level) must lie above zero, and the old 99 %
    // two-sided interval would have included zero for some of them.
    let mut rng = inference::Xorshift::new(7);
    let (mut regressions, mut old_interval_contradicted) = (0, 0);
    for trial in 0..300 {
        let shift = 1.0 + 0.01 * f64::from(trial % 5 + 1);
        let others = trial % 3 * 4;
        let mut draw = |name: &str, scale: f64| {
            bench(name, samples(&lognormal(&mut rng, 10, 0.02, scale), 0.005))
        };
        let (mut base, mut head) = (vec![draw("a", 1.0)], vec![draw("a", shift)]);
        for i in 0..others {
            base.push(draw(&format!("o{i}"), 1.0));
            head.push(draw(&format!("o{i}"), 1.0));
        }
        let (base, head) = (run(base), run(head));
        let r = files(&base, &head);
        for (b, m) in r
            .benchmarks
            .iter()
            .flat_map(|b| b.metrics.iter().map(move |m| (b, m)))
        {
            if m.verdict != Verdict::Regressed {
                continue;
            }
            regressions += 1;
            let ci = m.ci.expect("a regression has an interval");
            let (name, reason) = (&b.name, &m.reason);
            assert!(ci[0] > 0.0, "trial {trial}: {name} {ci:?}: {reason}");
            let level = format!("{} % CI", percent_level(m.ci_level.unwrap()));
            assert_contains!(m.reason, &level);
            let logs = |v: &[f64]| v.iter().map(|x| x.ln()).collect::<Vec<_>>();
            let values = |r: &RunResults| logs(&r.benchmark(&b.name).unwrap().metrics[0].values);
            let old = stats::hodges_lehmann(&values(&head), &values(&base), 0.99).unwrap();
            if old.low <= 0.0 {
                old_interval_contradicted += 1;
            }
        }
    }
    assert!(regressions > 50, "{regressions}");
    let occurred = old_interval_contradicted > 0;
    assert!(occurred, "the case this guards against occurred");
}

#[test]
fn a_small_real_change_inside_a_wide_threshold_is_within_threshold() {
    // The bundled suite's case: +5 % against a 50 % threshold is a real change, reported
    // as such, and the benchmark is not counted as unchanged.
    let head: Vec<f64> = BASE.iter().map(|v| v * 1.05).collect();
    let reduce = |values: &[f64]| run(vec![bench("reduce", samples(values, 0.5))]);
    let r = files(&reduce(&BASE), &reduce(&head));
    let b = &r.benchmarks[0];
    assert_eq!(b.verdict, Verdict::WithinThreshold, "{}", b.explanation);
    assert_contains!(b.explanation, "a real change, within the 50.0 % threshold");
    assert_eq!((r.summary.within_threshold, r.summary.unchanged), (1, 0));
    assert_eq!(r.verdict, RunVerdict::Pass);
}

/// A job of benchmark `a` at `scale` times the base timings, recorded on day `at` + 1.
fn dated_job(scale: f64, at: usize) -> RunResults {
    let mut r = run(vec![bench("a", samples(&BASE.map(|v| v * scale), 0.02))]);
    r.created = format!("2026-01-{:02}T00:00:00Z", at + 1);
    r
}

/// Six jobs at one level, with a small job-to-job wiggle, from day `from` + 1 on.
fn level_jobs(level: f64, from: usize) -> Vec<RunResults> {
    [1.0, 1.004, 0.997, 1.002, 0.999, 1.003]
        .iter()
        .enumerate()
        .map(|(i, w)| dated_job(level * w, from + i))
        .collect()
}

#[test]
fn the_prediction_interval_uses_only_the_jobs_since_the_last_change_point() {
    // Six jobs at 1.00, then six at 1.10 (a change `kgate history` finds); a candidate at
    // 1.11 is in line with the current regime. Pooling all twelve jobs would make it look
    // far off their mean.
    let mut jobs = level_jobs(1.0, 0);
    jobs.extend(level_jobs(1.10, 6));
    let base = jobs.pop().unwrap();
    let head = dated_job(1.11, 20);
    let r = stored(&base, &head, &jobs);
    let m = &r.benchmarks[0].metrics[0];
    assert_eq!(m.method, Method::PredictionInterval);
    let said = "against 6 stored jobs since the change point at job 7 of 12";
    assert_contains!(m.reason, said);
    assert!(m.change.unwrap().abs() < 0.02, "{:?}", m.change);
    assert_ne!(m.verdict, Verdict::Regressed, "{}", m.reason);
}

#[test]
fn a_history_that_moved_on_after_a_regression_does_not_hide_it_from_the_old_baseline() {
    // Six jobs at 1.00, the stored baseline among them, then six jobs 30 % slower recorded
    // after the regression landed. A candidate still 30 % slower than the baseline is a
    // regression against it: the yardstick is the jobs at the baseline's level, not the
    // regressed ones.
    let mut jobs = level_jobs(1.0, 0);
    let base = jobs.remove(5);
    jobs.extend(level_jobs(1.30, 6));
    let head = dated_job(1.30, 20);
    let r = stored(&base, &head, &jobs);
    let m = &r.benchmarks[0].metrics[0];
    assert_eq!(m.method, Method::PredictionInterval, "{}", m.reason);
    let said = "against 6 stored jobs at the baseline's level (jobs 1–6 of 12";
    assert_contains!(m.reason, said);
    assert_eq!(m.verdict, Verdict::Regressed, "{}", m.reason);
}

fn machine(cpu: &str) -> Fingerprint {
    Fingerprint {
        cpu_model: cpu.into(),
        cores: 2,
        arch: "x86_64".into(),
        ..Fingerprint::default()
    }
}

#[test]
fn across_environments_only_deterministic_counts_gate() {
    let mut counts = samples(&[1000.0], 0.05);
    counts.name = "Ir".into();
    counts.source = Source::Simulated;
    counts.gate.tolerance = Some(Tolerance::Relative(0.01));
    let mut more = counts.clone();
    more.values = vec![1100.0];
    let slow: Vec<f64> = BASE.iter().map(|v| v * 3.0).collect();
    let side = |cpu: &str, timer: &[f64], ir: &MetricSamples| {
        let mut t = bench("mm", samples(timer, 0.05));
        t.metrics.push(ir.clone());
        let mut r = run(vec![t]);
        r.environment = machine(cpu);
        r
    };
    // A 3x slower timer on another CPU model does not gate; the deterministic count does.
    let base = side("Xeon", &BASE, &counts);
    let r = stored(&base, &side("EPYC", &slow, &counts), &[]);
    let timer = &r.benchmarks[0].metrics[0];
    assert_eq!(timer.verdict, Verdict::Regressed);
    assert!(!timer.gates);
    let why = timer.not_gating.as_deref().unwrap();
    assert_contains!(why, "different environments");
    let b = &r.benchmarks[0];
    assert_eq!(b.verdict, Verdict::Unchanged, "{}", b.explanation);
    assert_eq!(r.verdict, RunVerdict::Pass);
    let env: Vec<_> = r
        .warnings
        .iter()
        .filter(|w| w.starts_with(ENVIRONMENTS_DIFFER))
        .collect();
    let warnings = &r.warnings;
    assert_eq!(env.len(), 1, "one line on the environments: {warnings:?}");
    assert_contains!(env[0], "cpu_model: `Xeon` vs `EPYC`");
    assert_contains!(env[0], "1 such metric is");
    // The deterministic count still fails the build.
    let r = stored(&base, &side("EPYC", &BASE, &more), &[]);
    assert_eq!(r.verdict, RunVerdict::Regressed);
    // `gate.noisy_metrics: always` opts back in.
    let always = ComparePolicy {
        noisy_metrics: NoisyMetrics::Always,
        ..ComparePolicy::default()
    };
    let epyc = side("EPYC", &slow, &counts);
    let r = compare(&base, &epyc, &always, Design::StoredBaseline);
    assert_eq!(r.verdict, RunVerdict::Regressed);
    // `same-job`: on the same machine a stored baseline does not gate timers either, but
    // an interleaved run does.
    let same_job = ComparePolicy {
        noisy_metrics: NoisyMetrics::SameJob,
        ..ComparePolicy::default()
    };
    let head = side("Xeon", &slow, &counts);
    let r = compare(&base, &head, &same_job, Design::StoredBaseline);
    assert_eq!(r.verdict, RunVerdict::Pass);
    let why = r.benchmarks[0].metrics[0].not_gating.as_deref();
    assert_contains!(why.unwrap(), "same-job");
    let r = compare(&base, &head, &same_job, Design::Interleaved);
    assert_eq!(r.verdict, RunVerdict::Regressed);
}

#[test]
fn a_waived_regression_keeps_the_note_on_changed_parameters() {
    let with = |values: &[f64], launches: &str| {
        let mut b = gated("k", values);
        b.parameters.insert("launches".into(), launches.into());
        b
    };
    let base = run(vec![with(&BASE, "68")]);
    let head = run(vec![with(&NEW, "60")]);
    let mut r = files(&base, &head);
    assert_eq!(r.benchmarks[0].verdict, Verdict::Regressed);
    let yaml = "waivers:\n  - benchmark: k\n    reason: known\n    expires: 2999-01-01\n";
    let waivers = waivers::parse(yaml, "waivers.yaml").unwrap();
    let today = "2026-12-07".into();
    waivers::apply(&mut r, &waivers, &waivers::Clock { today, repo: None });
    let k = &r.benchmarks[0];
    assert_ne!(k.verdict, Verdict::Regressed, "{}", k.explanation);
    assert_contains!(k.explanation, "(waived: known)");
    let changed = "parameters that differ from the baseline: launches 68 → 60";
    assert_eq!(k.changed_parameters(), Some(changed), "{}", k.explanation);
}
