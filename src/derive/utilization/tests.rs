use super::*;
use crate::model::series::{CounterReading, KernelWindows};

#[test]
fn intervals_are_shown_to_three_significant_digits() {
    assert_eq!(interval_shown(13_202.0), 13_200.0);
    assert_eq!(interval_shown(999.4), 999.0);
    assert_eq!(interval_shown(2_000.0), 2_000.0);
    assert_eq!(interval_shown(125_500.0), 126_000.0);
}

/// A result with `readings` in its series and `windows` as its kernel launches, after
/// `apply` on the tpu-v7x profile with cumulative samples, no scaling, no policy and one pass.
fn applied(readings: &[CounterReading<'_>], windows: Vec<KernelWindows>) -> BenchmarkResult {
    let profile = crate::config::device::builtin("tpu-v7x").unwrap();
    let mut result = BenchmarkResult::new("k", Default::default());
    add(&mut result, readings);
    result.kernel_windows = windows;
    apply(&mut result, &[], Options::cumulative(&profile));
    result
}

#[test]
fn hundred_cycles_in_500_ns_at_2_ghz_is_ten_percent() {
    assert_eq!(utilization(100.0, 500.0, 2.0e9, 1), 0.10);
    assert!((utilization(200.0, 500.0, 2.0e9, 2) - 0.10).abs() < 1e-15);
}

fn reading(t: f64, v: f64, bits: Option<u8>) -> CounterReading<'static> {
    CounterReading {
        repetition: 0,
        counter: "mxu_busy_0",
        t_ns: t,
        value: v,
        unit: "cycles",
        bits,
        core: None,
        sampling: None,
    }
}

/// Adds readings to a result's series, as a capture would.
fn add(result: &mut BenchmarkResult, readings: &[CounterReading<'_>]) {
    let mut index = crate::model::results::SeriesIndex::default();
    for r in readings {
        let line = crate::model::protocol::CounterLine {
            counter: r.counter.into(),
            t_ns: r.t_ns,
            value: r.value,
            unit: r.unit.into(),
            bits: r.bits,
            core: r.core,
            benchmark: None,
            t_exact: None,
        };
        index.push_counter(result, r.repetition, &line, r.sampling);
    }
}

/// One launch of kernel `name` over `[start, end]`.
fn launch(name: &str, start: f64, end: f64) -> Vec<KernelWindows> {
    let windows = KernelWindows {
        start_ns: vec![start],
        end_ns: vec![end],
        ..KernelWindows::new(name, 0)
    };
    vec![windows]
}

#[test]
fn a_kernel_between_two_samples_is_unresolved_with_the_fix() {
    let readings = [reading(0.0, 0.0, None), reading(1000.0, 500.0, None)];
    let result = applied(&readings, launch("tiny", 100.0, 600.0));
    assert!(result.metric("util.mxu_busy_0").is_none());
    let u = &result.provenance.unavailable[0];
    let want =
        "unresolved: kernel `tiny` ran 500 ns, shorter than the sampling interval of 1000 ns";
    assert!(u.reason.starts_with(want), "{}", u.reason);
    assert_contains!(u.hint, "external trigger");
}

/// The reason of the one unresolved figure of a kernel launched over `[start, end]`, read
/// against readings every 2,000 ns (with one gap of 9,000 ns after 20,000 ns).
fn unresolved_reason(start: f64, end: f64) -> String {
    let times = (0..=10)
        .map(|i| 2000.0 * f64::from(i))
        .chain([29_000.0, 31_000.0]);
    let readings: Vec<CounterReading<'_>> = times.map(|t| reading(t, t / 4.0, None)).collect();
    let result = applied(&readings, launch("k1", start, end));
    assert!(result.metric("util.mxu_busy_0").is_none());
    result.provenance.unavailable[0].reason.clone()
}

#[test]
fn an_unresolved_launch_is_compared_with_the_interval_truthfully() {
    // Shorter than one interval.
    let short = unresolved_reason(15_000.0, 16_500.0);
    let said = "ran 1500 ns, shorter than the sampling interval of 2000 ns";
    assert_contains!(short, said);
    // Longer than one interval, shorter than two: no window starts and ends inside it,
    // though it is not shorter than the interval.
    let between = unresolved_reason(15_000.0, 17_500.0);
    let shorter = between.contains("shorter than the sampling interval");
    assert!(!shorter, "{between}");
    let said =
        "ran 2500 ns, longer than the sampling interval of 2000 ns but shorter than two (4000 ns)";
    assert_contains!(between, said);
    // Two intervals or more, inside a gap in the readings.
    let gap = unresolved_reason(21_000.0, 28_000.0);
    let said = "ran 7000 ns, at least two sampling intervals of 2000 ns (the median)";
    assert_contains!(gap, said);
    assert_contains!(gap, "further apart");
}

/// Readings of `counter` every 1,000 ns, with `unit` and `bits` as given.
fn series<'c>(
    counter: &'c str,
    values: &[f64],
    unit: &'c str,
    bits: Option<u8>,
) -> Vec<CounterReading<'c>> {
    let at = |(i, v): (usize, &f64)| CounterReading {
        counter,
        unit,
        ..reading(1000.0 * i as f64, *v, bits)
    };
    values.iter().enumerate().map(at).collect()
}

#[test]
fn beats_give_bandwidth_and_memory_utilization() {
    let beats = |counter: &'static str, values: &[f64]| series(counter, values, "", Some(32));
    let mut readings = beats("hbm_rd_beats", &[0.0, 40_000.0, 80_000.0]);
    readings.extend(beats("hbm_wr_beats", &[0.0, 10_000.0, 20_000.0]));
    readings.extend(beats("cycles", &[0.0, 1900.0, 3800.0]));
    let result = applied(&readings, Vec::new());
    // 80 000 read beats × 32 B in 2 µs = 1.28e12 B/s; with the writes, 3.2 MB in 2 µs
    // against 3433 GiB/s is 43.4 %.
    let bw = result.metric("bandwidth.hbm_rd_beats").unwrap();
    assert_eq!(bw.values, [1.28e12]);
    let util = result.metric("util.memory").unwrap().values[0];
    assert!((util - 100.0 * 1.6e12 / (3433.0 * 1073741824.0)).abs() < 1e-9);
    assert_eq!(result.metric("hbm_bytes").unwrap().values, [3_200_000.0]);
    // `cycles` is the clock itself, not a busy counter: no utilization for it.
    assert!(result.metric("util.cycles").is_none());
}

#[test]
fn a_measured_cycle_counter_is_the_denominator() {
    // 950 busy of 1520 measured cycles per microsecond (a throttled clock): 62.5 %, not
    // the 50 % that 1 µs × 1.9 GHz would give.
    let cycles = |counter: &'static str, values: &[f64]| series(counter, values, "cycles", None);
    let mut readings = cycles("mxu_busy_2", &[0.0, 950.0, 1900.0]);
    readings.extend(cycles("cycle_count", &[0.0, 1520.0, 3040.0]));
    let result = applied(&readings, Vec::new());
    assert_eq!(result.metric("util.mxu_busy_2").unwrap().values, [62.5]);
    let denominator = &result.provenance.details[DENOMINATOR_DETAIL];
    assert_eq!(denominator, "measured `cycle_count`");
    assert_eq!(result.metric("two_mxu_busy").unwrap().values, [62.5]);
}

#[test]
fn above_one_hundred_percent_is_flagged_not_reported() {
    // 3000 busy cycles in 1 µs at 1.9 GHz: 158 %.
    let readings = [reading(0.0, 0.0, None), reading(1000.0, 3000.0, None)];
    let result = applied(&readings, Vec::new());
    assert!(result.metric("util.mxu_busy_0").is_none());
    assert_contains!(result.provenance.notes[0], "exceeds 100 %");
    let counter = result.metric("counter.mxu_busy_0").unwrap();
    assert_eq!(counter.values, [3000.0]);
}
