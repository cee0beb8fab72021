//! The kgate protocol: JSON lines a benchmark writes to `$KGATE_PROTOCOL_FILE`.
//!
//! Process wall time measures the interpreter, the JIT and the allocator as much as the kernel.
//! The protocol is the universal way for a benchmark to report what it measured itself (CUDA
//! events, `triton.testing.do_bench`, `jax.block_until_ready` timings) and raw counter readings,
//! whatever language it is written in. A line that does not parse is rejected with its line
//! number: silently skipping it would drop samples and bias the comparison.

use std::path::PathBuf;

/// Environment variable naming the file a benchmark writes its protocol lines to.
pub const FILE_ENV: &str = "KGATE_PROTOCOL_FILE";
/// Environment variable telling a benchmark which counter pass this repetition is (0-based).
pub const PASS_ENV: &str = "KGATE_COUNTER_PASS";
/// Environment variable listing the counters to sample in this repetition, comma-separated.
pub const COUNTERS_ENV: &str = "KGATE_COUNTERS";
/// Environment variable holding XProf's `tpu_tc_perf_counter_sampling_options` string for this
/// repetition's counter pass (TPU profiles; see `config::tpu_sampling`).
pub const TPU_SAMPLING_ENV: &str = "KGATE_TPU_COUNTER_SAMPLING_OPTIONS";

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use rustc_hash::FxHashMap;

use crate::model::metric::Source;

/// A measurement: one sample of a metric.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MeasurementLine {
    /// Metric name, such as `kernel_time`.
    pub metric: String,
    /// The value, finite.
    pub value: f64,
    /// Unit: `ns`, `us`, `ms`, `s` (times are stored in nanoseconds), or any other unit.
    #[serde(default)]
    pub unit: String,
    /// Where the number comes from (default: what the config says; else `timer` for a time
    /// unit, since a time the benchmark measured itself is a timer reading, and `reported` for
    /// any other unit).
    #[serde(default)]
    pub source: Option<Source>,
    /// Benchmark the sample belongs to, when one file holds several.
    #[serde(default)]
    pub benchmark: Option<String>,
}

/// A raw counter reading at a point in time.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CounterLine {
    /// Counter name, such as `mxu_busy`.
    pub counter: String,
    /// Timestamp of the reading in nanoseconds.
    pub t_ns: f64,
    /// The counter's value (cumulative or per interval, as the device reports it).
    pub value: f64,
    /// Unit, such as `cycles` or `bytes`.
    #[serde(default)]
    pub unit: String,
    /// Counter width in bits, for wrap-around (8, 16, 32 or 64).
    #[serde(default)]
    pub bits: Option<u8>,
    /// Core or unit index the reading belongs to.
    #[serde(default)]
    pub core: Option<u32>,
    /// Benchmark the reading belongs to, when one file holds several.
    #[serde(default)]
    pub benchmark: Option<String>,
    /// `t_ns` as written when it is an integer: exact where `t_ns` is not (see
    /// [`TimedLines::rebase_times`]). Not a key of the line.
    #[serde(skip)]
    pub t_exact: Option<i128>,
}

/// The time window in which a kernel ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct KernelLine {
    /// Kernel name.
    pub kernel: String,
    /// Start, in nanoseconds on the same clock as the counter readings.
    pub start_ns: f64,
    /// End, in nanoseconds; not before `start_ns`.
    pub end_ns: f64,
    /// Benchmark the window belongs to, when one file holds several.
    #[serde(default)]
    pub benchmark: Option<String>,
    /// `start_ns` and `end_ns` as written when they are integers: exact where the `f64`s are
    /// not (see [`TimedLines::rebase_times`]). Not keys of the line.
    #[serde(skip)]
    pub exact: Option<(i128, i128)>,
}

/// The outcome of the benchmark's own correctness check: `{"correct": false, "detail": "max
/// abs error 0.5 > 1e-3"}`. One repetition reporting `false` makes the benchmark incorrect
/// (the first such detail is kept), whatever its speed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CorrectnessLine {
    /// Whether the output matched the reference.
    pub correct: bool,
    /// What the check found, such as `max abs error 0.5 > 1e-3`.
    #[serde(default)]
    pub detail: Option<String>,
    /// Benchmark the outcome belongs to, when one file holds several.
    #[serde(default)]
    pub benchmark: Option<String>,
}

/// One protocol line (this type documents the format in `schemas/protocol.schema.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum ProtocolLine {
    Measurement(MeasurementLine),
    Counter(CounterLine),
    Kernel(KernelLine),
    Correctness(CorrectnessLine),
}

impl ProtocolLine {
    /// The benchmark the line names, if any.
    pub fn benchmark(&self) -> Option<&str> {
        match self {
            ProtocolLine::Measurement(m) => m.benchmark.as_deref(),
            ProtocolLine::Counter(c) => c.benchmark.as_deref(),
            ProtocolLine::Kernel(k) => k.benchmark.as_deref(),
            ProtocolLine::Correctness(c) => c.benchmark.as_deref(),
        }
    }
}

/// A protocol file that could not be read or parsed.
#[derive(Debug, thiserror::Error)]
pub enum ProtocolError {
    #[error("cannot read protocol file `{path}`: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("protocol file `{path}` line {line}: {message}")]
    Line {
        path: PathBuf,
        line: usize,
        message: String,
    },
}

/// Parses one line (without its newline). `Ok(None)` for a blank line.
pub fn parse_line(text: &str) -> Result<Option<ProtocolLine>, String> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    // A line is read straight into the struct of its kind; one that is none of them (or a
    // wrong one) is read again through a `serde_json::Value`, which says what is wrong with
    // it. (Only an object is read straight: serde would read a struct from an array too.)
    if text.starts_with('{')
        && let Some(line) = parse_direct(text)
    {
        check(&line)?;
        return Ok(Some(line));
    }
    parse_object(text)
}

/// A counter line as it is read straight from its text: `t_ns` kept as written, so that an
/// integer's digits are not lost (see [`TimedLines::rebase_times`]). The keys are
/// [`CounterLine`]'s; were one added there and not here, such lines would take the slower way, not
/// a wrong one.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CounterText {
    counter: String,
    t_ns: serde_json::Number,
    value: f64,
    #[serde(default)]
    unit: String,
    #[serde(default)]
    bits: Option<u8>,
    #[serde(default)]
    core: Option<u32>,
    #[serde(default)]
    benchmark: Option<String>,
}

/// A kernel line as it is read straight from its text, its times kept as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct KernelText {
    kernel: String,
    start_ns: serde_json::Number,
    end_ns: serde_json::Number,
    #[serde(default)]
    benchmark: Option<String>,
}

/// An integer as written, where the number is one.
fn exact_integer(n: &serde_json::Number) -> Option<i128> {
    n.as_i64()
        .map(i128::from)
        .or_else(|| n.as_u64().map(i128::from))
}

/// A line read straight into the struct of its kind, tried in the order [`parse_object`] tells
/// the kinds apart: a line read as a measurement has the key `metric`; as a counter, the key
/// `counter` and not `metric` (no key of another kind is allowed); as a kernel, `kernel` and
/// neither other; as a correctness outcome, `correct` and none of the others. So a line read
/// here is the line [`parse_object`] gives; `None` for any other, including every wrong line,
/// whose message [`parse_object`] words.
fn parse_direct(text: &str) -> Option<ProtocolLine> {
    if let Ok(m) = serde_json::from_str::<MeasurementLine>(text) {
        return Some(ProtocolLine::Measurement(m));
    }
    if let Ok(c) = serde_json::from_str::<CorrectnessLine>(text) {
        return Some(ProtocolLine::Correctness(c));
    }
    if let Ok(c) = serde_json::from_str::<CounterText>(text) {
        return Some(ProtocolLine::Counter(CounterLine {
            counter: c.counter,
            t_ns: c.t_ns.as_f64()?,
            value: c.value,
            unit: c.unit,
            bits: c.bits,
            core: c.core,
            benchmark: c.benchmark,
            t_exact: exact_integer(&c.t_ns),
        }));
    }
    let k = serde_json::from_str::<KernelText>(text).ok()?;
    Some(ProtocolLine::Kernel(KernelLine {
        kernel: k.kernel,
        start_ns: k.start_ns.as_f64()?,
        end_ns: k.end_ns.as_f64()?,
        benchmark: k.benchmark,
        exact: exact_integer(&k.start_ns).zip(exact_integer(&k.end_ns)),
    }))
}

/// [`parse_line`] of a non-blank line through a `serde_json::Value`: the object's keys say
/// which kind of line it is, and a wrong line gets its kind's message.
fn parse_object(text: &str) -> Result<Option<ProtocolLine>, String> {
    let value: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| format!("not a JSON object ({e}); each line must be one JSON object"))?;
    let obj = value
        .as_object()
        .ok_or("not a JSON object; each line must be one JSON object")?;
    // Read through serde_path_to_error, so that a wrong value is named by its key.
    fn read<'v, T: Deserialize<'v>>(value: &'v serde_json::Value) -> Result<T, String> {
        serde_path_to_error::deserialize(value).map_err(|e| {
            let field = e.path().to_string();
            crate::model::text::plain_serde(Some(&field), &e.into_inner().to_string())
        })
    }
    let parsed = if obj.contains_key("metric") {
        read(&value).map(ProtocolLine::Measurement)
    } else if obj.contains_key("counter") {
        read(&value).map(ProtocolLine::Counter)
    } else if obj.contains_key("kernel") {
        read(&value).map(ProtocolLine::Kernel)
    } else if obj.contains_key("correct") {
        read(&value).map(ProtocolLine::Correctness)
    } else {
        return Err(
            "the object has none of the keys `metric`, `counter`, `kernel` or `correct`; see the protocol in docs/configuration.md"
                .into(),
        );
    };
    let mut line = parsed?;
    check(&line)?;
    // serde_json keeps an integer's digits; the f64 fields hold epoch nanoseconds only to
    // 256 ns.
    let integer = |key: &str| exact_integer(obj.get(key)?.as_number()?);
    match &mut line {
        ProtocolLine::Counter(c) => c.t_exact = integer("t_ns"),
        ProtocolLine::Kernel(k) => k.exact = integer("start_ns").zip(integer("end_ns")),
        ProtocolLine::Measurement(_) | ProtocolLine::Correctness(_) => {}
    }
    Ok(Some(line))
}

/// The largest integer below which every integer is an exact `f64`.
const EXACT_F64: i128 = 1 << 53;

/// The counter and kernel lines of one repetition, held until its end, when their times may
/// be moved onto its earliest ([`TimedLines::rebase_times`]). A reading is held as its
/// series' place and its numbers (48 bytes): a whole line with its three strings was some 245,
/// and a benchmark sampling its counters writes millions of them.
#[derive(Debug, Default)]
pub struct TimedLines {
    /// Each series the counter lines name (counter, unit, width and core), as its first line
    /// without its benchmark; [`TimedLines::for_each_reading`] fills in each reading's numbers.
    series: Vec<CounterLine>,
    /// Counter name → its places in `series`.
    by_counter: FxHashMap<String, Vec<u32>>,
    readings: Vec<HeldReading>,
    kernels: Vec<KernelLine>,
}

#[derive(Debug)]
struct HeldReading {
    series: u32,
    t_ns: f64,
    value: f64,
    t_exact: Option<i128>,
}

impl TimedLines {
    pub fn push_counter(&mut self, line: CounterLine) {
        let same =
            |s: &CounterLine| s.unit == line.unit && s.bits == line.bits && s.core == line.core;
        let found = self
            .by_counter
            .get(line.counter.as_str())
            .and_then(|places| {
                places
                    .iter()
                    .copied()
                    .find(|&i| same(&self.series[i as usize]))
            });
        let series = match found {
            Some(i) => i,
            None => {
                let i = u32::try_from(self.series.len()).expect("fewer than 2^32 series");
                self.by_counter
                    .entry(line.counter.clone())
                    .or_default()
                    .push(i);
                self.series.push(CounterLine {
                    benchmark: None,
                    ..line.clone()
                });
                i
            }
        };
        self.readings.push(HeldReading {
            series,
            t_ns: line.t_ns,
            value: line.value,
            t_exact: line.t_exact,
        });
    }

    pub fn push_kernel(&mut self, line: KernelLine) {
        self.kernels.push(line);
    }

    /// Moves the times onto the earliest when some time is too large for an `f64` to hold to
    /// the nanosecond (epoch nanoseconds from `time.time_ns()`, about 1.8e18: an `f64` steps by
    /// 256 ns there, so a 1 µs sampling step reads as 768 or 1024 ns). The integers as written
    /// are subtracted exactly. Returns the origin subtracted, `None` when the times were left
    /// as they are.
    pub fn rebase_times(&mut self) -> Option<i128> {
        let readings = self
            .readings
            .iter()
            .map(|r| r.t_exact.unwrap_or(r.t_ns as i128));
        let kernels = self.kernels.iter().flat_map(|k| {
            let (start, end) = k.exact.unwrap_or((k.start_ns as i128, k.end_ns as i128));
            [start, end]
        });
        let (mut origin, mut large) = (None::<i128>, false);
        for t in readings.chain(kernels) {
            large |= t.abs() > EXACT_F64;
            origin = Some(origin.map_or(t, |o| o.min(t)));
        }
        if !large {
            return None;
        }
        let origin = origin?;
        let from_origin = |exact: Option<i128>, approx: f64| match exact {
            Some(t) => (t - origin) as f64,
            None => approx - origin as f64,
        };
        for r in &mut self.readings {
            r.t_ns = from_origin(r.t_exact, r.t_ns);
        }
        for k in &mut self.kernels {
            let exact = k.exact;
            k.start_ns = from_origin(exact.map(|e| e.0), k.start_ns);
            k.end_ns = from_origin(exact.map(|e| e.1), k.end_ns);
        }
        Some(origin)
    }

    /// Each counter reading in the order it was read, as a line of its series (without the
    /// benchmark it named).
    pub fn for_each_reading(&mut self, mut each: impl FnMut(&CounterLine)) {
        for r in &self.readings {
            let line = &mut self.series[r.series as usize];
            line.t_ns = r.t_ns;
            line.value = r.value;
            line.t_exact = r.t_exact;
            each(line);
        }
    }

    /// The kernel lines, in the order they were read.
    pub fn into_kernels(self) -> Vec<KernelLine> {
        self.kernels
    }
}

fn check(line: &ProtocolLine) -> Result<(), String> {
    let finite = |name: &str, v: f64| {
        if v.is_finite() {
            Ok(())
        } else {
            Err(format!("`{name}` must be a finite number"))
        }
    };
    match line {
        ProtocolLine::Measurement(m) => {
            if m.metric.trim().is_empty() {
                return Err("`metric` is empty".into());
            }
            finite("value", m.value)?;
            // Refused here, with the line, rather than stored as a value no results file can
            // hold: `1e300 s` overflows in nanoseconds, and a time is never negative.
            crate::model::units::to_canonical(m.value, &m.unit)
                .map(|_| ())
                .map_err(|e| format!("`value`: {e}"))
        }
        ProtocolLine::Counter(c) => {
            finite("t_ns", c.t_ns)?;
            finite("value", c.value)?;
            match c.bits {
                None | Some(8 | 16 | 32 | 64) => Ok(()),
                Some(b) => Err(format!(
                    "`bits` is {b}; a counter is 8, 16, 32 or 64 bits wide"
                )),
            }
        }
        ProtocolLine::Kernel(k) => {
            finite("start_ns", k.start_ns)?;
            finite("end_ns", k.end_ns)?;
            if k.end_ns < k.start_ns {
                return Err(format!(
                    "kernel window ends ({}) before it starts ({})",
                    k.end_ns, k.start_ns
                ));
            }
            Ok(())
        }
        ProtocolLine::Correctness(_) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The one line `text` holds, parsed.
    fn line(text: &str) -> ProtocolLine {
        parse_line(text).unwrap().unwrap()
    }

    #[test]
    fn the_three_line_kinds_parse() {
        let m = line(r#"{"metric": "kernel_time", "value": 88.0, "unit": "us"}"#);
        let want = MeasurementLine {
            metric: "kernel_time".into(),
            value: 88.0,
            unit: "us".into(),
            source: None,
            benchmark: None,
        };
        assert_eq!(m, ProtocolLine::Measurement(want));
        let c = line(
            r#"{"counter": "mxu_busy", "t_ns": 1500, "value": 123456, "unit": "cycles", "bits": 32, "core": 1}"#,
        );
        assert!(matches!(
            c,
            ProtocolLine::Counter(CounterLine {
                bits: Some(32),
                core: Some(1),
                ..
            })
        ));
        let k = line(r#"{"kernel": "matmul", "start_ns": 1000, "end_ns": 89000}"#);
        assert!(matches!(
            k,
            ProtocolLine::Kernel(KernelLine {
                end_ns: 89000.0,
                ..
            })
        ));
        assert_eq!(parse_line("   ").unwrap(), None);
        let c =
            line(r#"{"correct": false, "detail": "max abs error 0.5 > 1e-3", "benchmark": "mm"}"#);
        assert_eq!(
            c,
            ProtocolLine::Correctness(CorrectnessLine {
                correct: false,
                detail: Some("max abs error 0.5 > 1e-3".into()),
                benchmark: Some("mm".into()),
            })
        );
        assert_eq!(c.benchmark(), Some("mm"));
        assert!(matches!(
            line(r#"{"correct": true}"#),
            ProtocolLine::Correctness(CorrectnessLine {
                correct: true,
                detail: None,
                ..
            })
        ));
    }

    #[test]
    fn bad_lines_are_rejected_with_reasons() {
        #[rustfmt::skip]
        let cases = [
            (r#"{"metric": "t", "value": 1, "colour": "red"}"#, "unknown field `colour`"),
            (r#"{"metric": "t"}"#, "missing field `value`"),
            (r#"{"metric": "t", "value": "fast"}"#, "`value` must be a number, got the text \"fast\""),
            (r#"{"value": 3}"#, "none of the keys `metric`, `counter`, `kernel` or `correct`"),
            (r#"{"correct": false, "why": "off"}"#, "unknown field `why`"),
            (r#"{"correct": "no"}"#, "`correct` must be `true` or `false`, got the text \"no\""),
            (r#"[1, 2]"#, "not a JSON object"),
            (r#"{"metric": "t", "value": 1"#, "not a JSON object (EOF while parsing"),
            (r#"{"counter": "c", "t_ns": 1, "value": 2, "bits": 12}"#, "`bits` is 12"),
            (r#"{"kernel": "k", "start_ns": 10, "end_ns": 5}"#, "ends (5) before it starts (10)"),
            (r#"{"metric": "", "value": 1}"#, "`metric` is empty"),
            (r#"{"metric": "t", "value": 1, "source": "guess"}"#, "`source` is `guess`, not one of `hardware`"),
            (r#"{"metric": "t", "value": null}"#, "`value` must be a number, got null"),
            (r#"{"counter": "c", "t_ns": 1, "value": 2, "bits": "wide"}"#,
                "`bits` must be a whole number, 0 or more, got the text \"wide\""),
        ];
        for (line, expected) in cases {
            let err = parse_line(line).unwrap_err();
            let found = err.contains(expected);
            assert!(found, "{line}: expected `{expected}` in `{err}`");
        }
    }

    #[test]
    fn lines_read_straight_into_their_struct_are_the_lines_the_object_gives() {
        let lines = [
            r#"{"metric": "t", "value": 1}"#,
            r#"{"value": 2.5e-3, "unit": "us", "metric": "kernel_time", "benchmark": "k\u00e9\n"}"#,
            r#"{"metric": "t", "value": 1, "source": "counter", "benchmark": null}"#,
            r#"{"metric": "t", "value": 18446744073709551616, "unit": ""}"#,
            r#"{"metric": "t", "value": -0.0, "source": null}"#,
            r#"{"metric": "t", "value": 1, "value": 2}"#,
            r#"{"metric": "t", "value": 1e400}"#,
            r#"{"metric": "t", "value": 1, "counter": "c"}"#,
            r#"{"counter": "c", "t_ns": 1, "value": 2, "benchmark": "metric"}"#,
            r#"{"kernel": "metric", "start_ns": 1, "end_ns": 2}"#,
            r#"["t", 1]"#,
            r#"["t", 1, "ns", null, null]"#,
            r#"{"metric": "t", "value": 1} {"metric": "u", "value": 2}"#,
            r#"{"metric": "t", "value": null}"#,
            r#"{"metric": 7, "value": 1}"#,
            r#"{"counter": "c", "t_ns": 1700000000000000123, "value": 2, "unit": "cycles", "bits": 32, "core": 1}"#,
            r#"{"value": 2.5, "t_ns": -3, "counter": "c"}"#,
            r#"{"counter": "c", "t_ns": 1.5e3, "value": 2}"#,
            r#"{"counter": "c", "t_ns": 18446744073709551616, "value": 2}"#,
            r#"{"counter": "c", "t_ns": 1, "value": 2, "bits": 12}"#,
            r#"{"counter": "c", "t_ns": 1, "value": 2, "kernel": "k"}"#,
            r#"{"counter": "c", "t_ns": "1", "value": 2}"#,
            r#"{"counter": "c", "t_ns": 1, "t_ns": 2, "value": 2}"#,
            r#"["c", 1, 2]"#,
            r#"{"kernel": "k", "start_ns": 1700000000000000001, "end_ns": 1700000000000000002}"#,
            r#"{"kernel": "k", "start_ns": 1.5, "end_ns": 2, "benchmark": "b"}"#,
            r#"{"kernel": "k", "start_ns": 10, "end_ns": 5}"#,
            r#"{"kernel": "k", "start_ns": 1, "end_ns": 2, "metric": "m"}"#,
            r#"["k", 1, 2]"#,
            r#"{"correct": false, "detail": "max abs error 0.5 > 1e-3"}"#,
            r#"{"correct": true, "metric": "t", "value": 1}"#,
            r#"{"correct": 1}"#,
        ];
        for line in lines {
            assert_eq!(parse_line(line), parse_object(line), "{line}");
        }
        // The lines of each kind are read the direct way, exact times included.
        for i in [0, 1, 15, 16, 24, 25, 29] {
            assert!(parse_direct(lines[i]).is_some(), "{}", lines[i]);
        }
        match parse_direct(lines[15]) {
            Some(ProtocolLine::Counter(c)) => {
                assert_eq!(c.t_exact, Some(1_700_000_000_000_000_123))
            }
            other => panic!("{other:?}"),
        }
        assert_contains!(parse_line(r#"["t", 1]"#).unwrap_err(), "not a JSON object");
        // A key written twice: the object keeps the last.
        match parse_line(r#"{"metric": "t", "value": 1, "value": 2}"#) {
            Ok(Some(ProtocolLine::Measurement(m))) => assert_eq!(m.value, 2.0),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn timed_lines_keep_each_series_in_order_and_move_large_times_exactly() {
        let mut timed = TimedLines::default();
        let text = [
            r#"{"counter": "busy", "t_ns": 1700000000000000001, "value": 1, "unit": "cycles", "benchmark": "a"}"#,
            r#"{"counter": "busy", "t_ns": 1700000000000000003, "value": 2, "unit": "cycles", "core": 1}"#,
            r#"{"kernel": "k", "start_ns": 1700000000000000002, "end_ns": 1700000000000000005}"#,
            r#"{"counter": "busy", "t_ns": 1700000000000000004, "value": 3, "unit": "cycles", "benchmark": "a"}"#,
            r#"{"counter": "bytes", "t_ns": 1700000000000000006, "value": 4}"#,
        ];
        for text in text {
            match line(text) {
                ProtocolLine::Counter(c) => timed.push_counter(c),
                ProtocolLine::Kernel(k) => timed.push_kernel(k),
                ProtocolLine::Measurement(_) | ProtocolLine::Correctness(_) => unreachable!(),
            }
        }
        // Three series (the core makes another), each reading once.
        assert_eq!(timed.series.len(), 3);
        assert_eq!(timed.rebase_times(), Some(1_700_000_000_000_000_001));
        let mut read = Vec::new();
        timed.for_each_reading(|c| {
            read.push((
                c.counter.clone(),
                c.core,
                c.t_ns,
                c.value,
                c.benchmark.clone(),
            ))
        });
        #[rustfmt::skip]
        let want = [("busy", None, 0.0, 1.0, None), ("busy", Some(1), 2.0, 2.0, None),
            ("busy", None, 3.0, 3.0, None), ("bytes", None, 5.0, 4.0, None)];
        let want = want.map(|(c, core, t, v, b)| (c.to_string(), core, t, v, b));
        assert_eq!(read, want);
        let kernels = timed.into_kernels();
        assert_eq!((kernels[0].start_ns, kernels[0].end_ns), (1.0, 4.0));
        // Times an f64 holds exactly stay as they are.
        let mut small = TimedLines::default();
        small.push_kernel(KernelLine {
            kernel: "k".into(),
            start_ns: 10.0,
            end_ns: 20.0,
            benchmark: None,
            exact: Some((10, 20)),
        });
        assert_eq!(small.rebase_times(), None);
        assert_eq!(small.into_kernels()[0].start_ns, 10.0);
    }
}
