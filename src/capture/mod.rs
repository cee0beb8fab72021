//! Capture: turning what a benchmark run produced into metric samples.
//!
//! Every capture backend (process timer, protocol lines, perf, callgrind, cachegrind, ncu) and
//! every import ends in the same place: named samples with a canonical unit, a source and a
//! gate rule. The [`Collector`] is that place, shared by `kgate run` and `kgate import`, so
//! units are normalized and checked for consistency once.

/// A perf or Valgrind [`valgrind::ParseError`] of a line, with a `format!` message. Defined
/// before the modules that use it by its textual scope.
macro_rules! err {
    ($line:expr, $($message:tt)+) => {
        $crate::capture::valgrind::err($line, format!($($message)+))
    };
}

pub(crate) mod bytes;
pub mod cpu;
pub(crate) mod decimal;
pub mod device;
pub mod ncu;
mod ncu_csv;
pub mod perf;
pub mod valgrind;
use std::collections::HashMap;

use crate::model::metric::{Direction, Source, Tolerance};
use crate::model::protocol::{MeasurementLine, ProtocolLine, TimedLines};
use crate::model::results::{
    BenchmarkResult, MetricSamples, Provenance, RepetitionNumbers, RepetitionRun, SeriesIndex,
};
use crate::model::units;
use crate::plan::MetricPolicy;

/// Name of the process wall-time metric of the `timer` capture.
pub const WALL_TIME: &str = "wall_time";

/// Tolerance of simulated (Valgrind) metrics unless the configuration sets one: 1 % relative.
/// The counts are deterministic for one binary; the margin absorbs start-up differences such as
/// a longer environment or path.
pub const DEFAULT_SIMULATED_TOLERANCE: Tolerance = Tolerance::Relative(0.01);

/// Accumulates one benchmark's samples.
#[derive(Debug)]
pub struct Collector<'a> {
    policy: &'a MetricPolicy,
    result: BenchmarkResult,
    /// Position of each metric in `result.metrics`: a profiler import can carry thousands of
    /// metrics, and a linear search per sample would make it quadratic.
    index: HashMap<String, usize>,
    /// Position of each counter's series and kernel's windows, for the same reason.
    series: SeriesIndex,
}

impl<'a> Collector<'a> {
    pub fn new(name: &str, policy: &'a MetricPolicy, provenance: Provenance) -> Collector<'a> {
        Collector {
            policy,
            result: BenchmarkResult::new(name, provenance),
            index: HashMap::new(),
            series: SeriesIndex::default(),
        }
    }

    /// Records one repetition's process wall time.
    pub fn add_wall_time(&mut self, repetition: u32, nanos: f64) {
        let resolved = self.policy.resolve(WALL_TIME, false);
        let source = resolved.source.unwrap_or(Source::Timer);
        // Cannot fail: the unit is always `ns` for this metric.
        let _ = self.push(WALL_TIME, "ns", source, false, repetition, nanos);
    }

    /// Records a measurement line. Fails when the metric changes unit dimension.
    pub fn add_measurement(&mut self, repetition: u32, m: MeasurementLine) -> Result<(), String> {
        let resolved = self.policy.resolve(&m.metric, true);
        let normalized = units::normalize(&m.unit);
        // A time the benchmark measured itself (CUDA events, `do_bench`, `Instant`) is a timer
        // reading; any other number it prints is `reported` unless the line or the
        // configuration says what it is.
        let default_source = if normalized.is_time() {
            Source::Timer
        } else {
            Source::Reported
        };
        let source = m.source.or(resolved.source).unwrap_or(default_source);
        let value = normalized
            .convert(m.value, &m.unit)
            .map_err(|e| format!("metric `{}`: {e}", m.metric))?;
        self.push(&m.metric, &normalized.unit, source, true, repetition, value)
            .map(|_| ())
    }

    /// Records the counter and kernel lines of one repetition's protocol file, their times
    /// first moved onto the repetition's earliest where they need it
    /// ([`TimedLines::rebase_times`]).
    pub fn add_timed(&mut self, repetition: u32, mut timed: TimedLines) {
        if let Some(origin) = timed.rebase_times() {
            self.result.provenance.details.insert(
                format!("time_origin_ns.{repetition}"),
                format!("{origin} (counter and kernel times of repetition {repetition} count from its earliest timestamp)"),
            );
        }
        let (series, result) = (&mut self.series, &mut self.result);
        timed.for_each_reading(|c| series.push_counter(result, repetition, c, None));
        for k in timed.into_kernels() {
            self.series.push_window(&mut self.result, repetition, k);
        }
    }

    /// Records a correctness outcome: one failed check makes the benchmark incorrect, and the
    /// first failure's detail is kept.
    pub fn add_correctness(&mut self, line: crate::model::protocol::CorrectnessLine) {
        let correctness = &mut self.result.correctness;
        crate::model::results::Correctness::record(correctness, line.correct, line.detail);
    }

    /// Refuses a line that names another benchmark than this one (a live run knows which
    /// benchmark wrote its protocol file).
    pub fn check_benchmark(&self, line: &ProtocolLine) -> Result<(), String> {
        match line.benchmark() {
            Some(other) if other != self.result.name => Err(format!(
                "a protocol line names benchmark `{other}`, but this run is `{}`",
                self.result.name
            )),
            _ => Ok(()),
        }
    }

    /// Records a counter or derived value of a wrapped capture (perf, callgrind, cachegrind).
    /// Unless the configuration lists the metric, `direction` and `gates` apply, and a
    /// `simulated` metric (deterministic) gets the default tolerance
    /// [`DEFAULT_SIMULATED_TOLERANCE`] so that it is compared by tolerance, not by a test.
    #[allow(clippy::too_many_arguments)]
    pub fn add_counter(
        &mut self,
        repetition: u32,
        name: &str,
        unit: &str,
        source: Source,
        direction: Direction,
        gates: bool,
        value: f64,
    ) -> Result<(), String> {
        if self.push(name, unit, source, true, repetition, value)? {
            let listed = self.policy.metrics.get(name);
            let m = self.result.metrics.last_mut().expect("pushed above");
            if listed.is_none_or(|c| c.direction.is_none()) {
                m.direction = direction;
            }
            if listed.is_none() {
                m.gate.gates = gates;
            }
            if source == Source::Simulated && m.gate.tolerance.is_none() {
                m.gate.tolerance = Some(DEFAULT_SIMULATED_TOLERANCE);
            }
        }
        Ok(())
    }

    /// Records one value a profiler or harness reported, with the source the importer knows it
    /// to be and the direction its kind of number usually has (throughputs: higher), which the
    /// configuration may override. Fails when the metric changes unit.
    pub fn add_value(
        &mut self,
        repetition: u32,
        name: &str,
        unit: &str,
        source: Source,
        direction: Direction,
        value: f64,
    ) -> Result<(), String> {
        let normalized = units::normalize(unit);
        let value = normalized.convert(value, unit);
        let value = value.map_err(|e| format!("metric `{name}`: {e}"))?;
        let created = self.push(name, &normalized.unit, source, true, repetition, value)?;
        let configured = self.policy.metrics.get(name).and_then(|c| c.direction);
        if created && configured.is_none() {
            let last = self.result.metrics.len() - 1;
            self.result.metrics[last].direction = direction;
        }
        Ok(())
    }

    /// The position of metric `name` (created with `unit`, `source` and `direction` when
    /// new) and the factor into its canonical unit, for [`Collector::push_at`]: a profiler
    /// import with thousands of metrics then pays one lookup per metric instead of one per
    /// sample. Fails when the metric exists with another unit.
    pub fn slot(
        &mut self,
        name: &str,
        unit: &str,
        source: Source,
        direction: Direction,
    ) -> Result<(usize, f64), String> {
        let normalized = units::normalize(unit);
        let found = self
            .index
            .get(name)
            .copied()
            .filter(|&i| self.result.metrics.get(i).is_some_and(|m| m.name == name));
        if let Some(i) = found {
            unit_agrees(&self.result.metrics[i], &normalized.unit)?;
            return Ok((i, normalized.factor));
        }
        let resolved = self.policy.resolve(name, true);
        let configured = self.policy.metrics.get(name).and_then(|c| c.direction);
        crate::model::push_snug(
            &mut self.result.metrics,
            MetricSamples {
                name: name.to_string(),
                unit: normalized.unit,
                source,
                direction: configured.unwrap_or(direction),
                gate: resolved.rule,
                values: Vec::new(),
                repetition: RepetitionNumbers::default(),
                spread: None,
            },
        );
        let i = self.result.metrics.len() - 1;
        self.index.insert(name.to_string(), i);
        Ok((i, normalized.factor))
    }

    /// Records a sample of the metric at `slot` (from [`Collector::slot`]), already in the
    /// metric's canonical unit.
    pub fn push_at(&mut self, slot: usize, repetition: u32, value: f64) {
        let m = &mut self.result.metrics[slot];
        m.values.push(value);
        m.repetition.push(repetition);
    }

    /// Appends a run of samples to the metric at `slot`, as [`Collector::push_at`] each would,
    /// finding the metric once: an import storing a tile of launches metric by metric. The
    /// run's repetition numbers are the same for every metric of the tile (see
    /// [`RepetitionRun`]).
    pub fn extend_at(
        &mut self,
        slot: usize,
        repetitions: &RepetitionRun<'_>,
        values: impl ExactSizeIterator<Item = f64>,
    ) {
        let m = &mut self.result.metrics[slot];
        debug_assert_eq!(repetitions.len(), values.len());
        // A vector's `extend` of a known length: no capacity test per sample.
        m.values.extend(values);
        m.repetition.extend_from_run(repetitions);
    }

    /// Where the metric `name` is in the result, by the index.
    fn metric_index(&self, name: &str) -> Option<usize> {
        match self.index.get(name) {
            Some(&i) if self.result.metrics.get(i).is_some_and(|m| m.name == name) => Some(i),
            // The index covers every metric unless the result was edited from outside.
            None if self.index.len() == self.result.metrics.len() => None,
            _ => self.result.metrics.iter().position(|m| m.name == name),
        }
    }

    /// Appends a sample to the metric `name`, made with the policy's rule when it is new;
    /// true when it was.
    fn push(
        &mut self,
        name: &str,
        unit: &str,
        source: Source,
        from_protocol: bool,
        repetition: u32,
        value: f64,
    ) -> Result<bool, String> {
        if let Some(i) = self.metric_index(name) {
            let existing = &mut self.result.metrics[i];
            unit_agrees(existing, unit)?;
            existing.values.push(value);
            existing.repetition.push(repetition);
            return Ok(false);
        }
        let resolved = self.policy.resolve(name, from_protocol);
        crate::model::push_snug(
            &mut self.result.metrics,
            MetricSamples {
                name: name.to_string(),
                unit: unit.to_string(),
                source,
                direction: resolved.direction,
                gate: resolved.rule,
                values: vec![value],
                repetition: RepetitionNumbers::from(vec![repetition]),
                spread: None,
            },
        );
        self.index
            .insert(name.to_string(), self.result.metrics.len() - 1);
        Ok(true)
    }

    /// The result so far, for status updates and failure recording.
    pub fn result_mut(&mut self) -> &mut BenchmarkResult {
        &mut self.result
    }

    pub fn finish(self) -> BenchmarkResult {
        self.result
    }
}

/// Refuses a sample in `unit` of a metric recorded in another unit.
fn unit_agrees(metric: &MetricSamples, unit: &str) -> Result<(), String> {
    if metric.unit == unit {
        return Ok(());
    }
    let (name, was) = (&metric.name, &metric.unit);
    Err(format!(
        "metric `{name}` was reported in `{was}` and now in `{unit}`; one metric needs one unit"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::protocol::parse_line;

    /// Records the measurement lines of `text` as a live run does: each checked to name this
    /// benchmark, then recorded.
    fn add_measurements(c: &mut Collector<'_>, repetition: u32, text: &str) -> Result<(), String> {
        for line in text.lines().filter_map(|l| parse_line(l).unwrap()) {
            c.check_benchmark(&line)?;
            match line {
                ProtocolLine::Measurement(m) => c.add_measurement(repetition, m)?,
                other => panic!("not a measurement: {other:?}"),
            }
        }
        Ok(())
    }

    #[test]
    fn units_are_normalized_and_must_agree() {
        let policy = MetricPolicy::permissive(0.05);
        let mut c = Collector::new("mm", &policy, Provenance::default());
        let lines = r#"{"metric": "kernel_time", "value": 88, "unit": "us"}
            {"metric": "kernel_time", "value": 0.09, "unit": "ms"}"#;
        add_measurements(&mut c, 0, lines).unwrap();
        let cycles = r#"{"metric": "kernel_time", "value": 5, "unit": "cycles"}"#;
        let err = add_measurements(&mut c, 1, cycles).unwrap_err();
        assert_contains!(err, "reported in `ns` and now in `cycles`");
        let r = c.finish();
        let m = r.metric("kernel_time").unwrap();
        assert_eq!(m.unit, "ns");
        assert_eq!(m.values, vec![88_000.0, 90_000.0]);
        assert_eq!(m.repetition, [0, 0]);
        // A time the benchmark measured itself is a timer reading.
        assert_eq!(m.source, Source::Timer);
    }

    #[test]
    fn protocol_numbers_without_a_time_unit_stay_reported() {
        let policy = MetricPolicy::permissive(0.05);
        let mut c = Collector::new("mm", &policy, Provenance::default());
        let lines = r#"{"metric": "tflops", "value": 88, "unit": "TFLOP/s"}
            {"metric": "t", "value": 3, "unit": "ms", "source": "reported"}"#;
        add_measurements(&mut c, 0, lines).unwrap();
        let r = c.finish();
        assert_eq!(r.metric("tflops").unwrap().source, Source::Reported);
        let t = r.metric("t").unwrap();
        assert_eq!(t.source, Source::Reported, "the line's own source wins");
    }

    #[test]
    fn foreign_benchmark_lines_are_refused_in_a_live_run() {
        let policy = MetricPolicy::permissive(0.05);
        let mut c = Collector::new("mm", &policy, Provenance::default());
        let line = r#"{"metric": "t", "value": 1, "benchmark": "other"}"#;
        let err = add_measurements(&mut c, 0, line).unwrap_err();
        assert_contains!(err, "names benchmark `other`");
    }
}
