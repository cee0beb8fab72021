//! The device's named formulas (XProf's, over one repetition's counters of one core), the
//! roofline position of a kernel from its derived FLOPs, bytes and time, and the recorder the
//! derived metrics of a benchmark are gathered in.

use std::collections::{BTreeMap, HashMap};

use crate::config::device::DeviceProfile;
use crate::model::metric::{Direction, GateRule, Source};
use crate::model::results::{BenchmarkResult, MetricSamples, UnavailableCounter};

/// The profile's formulas over one repetition's counters of one core (named `F.coreN` for
/// core N); `core_cycles` is the first of the profile's cycle counters the core has.
pub(super) fn formulas(
    profile: &DeviceProfile,
    rep: u32,
    core: Option<u32>,
    counters: &BTreeMap<String, (f64, usize)>,
    out: &mut Recorder,
    refused: &mut Vec<String>,
) {
    let mut counters = counters.clone();
    let measured = |k: &String| counters.get(k).copied().filter(|c| c.0 > 0.0);
    if let Some(c) = profile.cycle_counters.iter().find_map(measured) {
        counters.entry(CORE_CYCLES.into()).or_insert(c);
    }
    for (formula, f) in &profile.formulas {
        let name = match core {
            Some(c) => format!("{formula}.core{c}"),
            None => formula.clone(),
        };
        let name = &name;
        let Some(expr) = f.parsed() else {
            let profile = &profile.name;
            refused.push(format!(
                "formula `{name}` of profile `{profile}` does not parse"
            ));
            continue;
        };
        use exmex::Express;
        let vars = expr.var_names().to_vec();
        let inputs = vars.iter().map(|v| counters.get(v).copied());
        let Some(inputs) = inputs.collect::<Option<Vec<_>>>() else {
            continue;
        };
        if inputs.iter().any(|(_, p)| *p != inputs[0].1) {
            refused.push(format!(
                "formula `{name}` mixes counters from different passes (different configurations); not computed"
            ));
            continue;
        }
        let Some(value) = crate::config::derived::finite_value(expr, &inputs) else {
            continue;
        };
        if f.unit == "%" && value > 100.0 + 1e-7 {
            refused.push(format!(
                "{name}: {value:.1} % in repetition {rep} exceeds 100 %: inconsistent counters; not reported"
            ));
            continue;
        }
        let direction = f.direction.unwrap_or(if f.unit == "%" {
            Direction::Higher
        } else {
            Direction::Lower
        });
        out.push(name, &f.unit, Source::Derived, direction, rep, value);
    }
}

/// The formula variable that stands for the core's measured cycles.
const CORE_CYCLES: &str = "core_cycles";

/// Names of the metrics the roofline reads: work, traffic, and the time candidates in order.
const FLOPS: &str = "flops";
const BYTES: &str = "bytes";
const TIMES: [&str; 3] = ["kernel_time", "time", "wall_time"];

/// Arithmetic intensity against the attainable bound min(AI × peak bandwidth, peak FLOP/s).
/// The source is the least trusted of the inputs: cost-model FLOPs give an `estimate`.
pub(super) fn roofline(result: &BenchmarkResult, profile: &DeviceProfile, out: &mut Recorder) {
    let measured_or_estimate = |name: &str| {
        result
            .metric(name)
            .or_else(|| result.metric(&format!("{name}{}", crate::model::metric::ESTIMATE_SUFFIX)))
    };
    let (Some(flops), Some(bytes)) = (measured_or_estimate(FLOPS), measured_or_estimate(BYTES))
    else {
        return;
    };
    let Some(bw) = &profile.memory_bandwidth else {
        return;
    };
    let precision = result
        .parameters
        .get("dtype")
        .map_or("bf16", String::as_str);
    let Some(peak) = profile
        .flops
        .get(precision)
        .or_else(|| profile.flops.values().next())
    else {
        return;
    };
    let time = TIMES.iter().find_map(|t| result.metric(t));
    let source = flops.source.max(bytes.source).max(Source::Derived);
    let (bytes_at, time_at) = (by_repetition(bytes), time.map(by_repetition));
    for (i, rep) in flops.repetition.iter().enumerate() {
        let Some(&b) = bytes_at.get(&rep) else {
            continue;
        };
        let f = flops.values[i];
        if b <= 0.0 {
            continue;
        }
        let intensity = f / b;
        let attainable = (intensity * bw.value).min(peak.value);
        if out.notes.is_empty() {
            let ridge = peak.value / bw.value;
            out.notes.push(format!(
                "roofline ({} {precision}): intensity {intensity:.1} FLOP/B against a ridge of {ridge:.1} FLOP/B: {}-bound{}",
                profile.name,
                if intensity < ridge { "memory" } else { "compute" },
                if source == Source::Estimate { " (from estimates)" } else { "" }
            ));
        }
        // Every roofline figure is better higher.
        let up = Direction::Higher;
        out.push("roofline.intensity", "FLOP/B", source, up, rep, intensity);
        out.push("roofline.attainable", "FLOP/s", source, up, rep, attainable);
        if let Some(t) = time
            .zip(time_at.as_ref())
            .and_then(|(t, at)| Some((*at.get(&rep)?, t)))
            && t.0 > 0.0
            && t.1.unit == "ns"
        {
            let achieved = f / (t.0 * 1e-9);
            let (source, efficiency) = (source.max(t.1.source), 100.0 * achieved / attainable);
            out.push("roofline.efficiency", "%", source, up, rep, efficiency);
        }
    }
}

/// A metric's value of each repetition (the first where one has several): a lookup per
/// repetition of another metric, without a search through all of them (an ncu import holds
/// tens of thousands of launches).
fn by_repetition(m: &MetricSamples) -> HashMap<u32, f64> {
    let mut at = HashMap::with_capacity(m.repetition.len());
    for (rep, &value) in m.repetition.iter().zip(&m.values) {
        at.entry(rep).or_insert(value);
    }
    at
}

#[derive(Default)]
pub(super) struct Recorder {
    pub(super) metrics: Vec<(String, MetricSamples)>,
    /// Where each name is in `metrics`.
    pub(super) positions: HashMap<String, usize>,
    pub(super) unavailable: Vec<UnavailableCounter>,
    pub(super) notes: Vec<String>,
}

impl Recorder {
    pub(super) fn push(
        &mut self,
        name: &str,
        unit: &str,
        source: Source,
        direction: Direction,
        rep: u32,
        value: f64,
    ) {
        let idx = match self.positions.get(name) {
            Some(&i) => i,
            None => {
                self.positions.insert(name.to_string(), self.metrics.len());
                self.metrics.push((
                    name.to_string(),
                    MetricSamples {
                        name: name.to_string(),
                        unit: unit.to_string(),
                        source,
                        direction,
                        gate: GateRule {
                            gates: false,
                            ..GateRule::default()
                        },
                        values: Vec::new(),
                        repetition: Default::default(),
                        spread: None,
                    },
                ));
                self.metrics.len() - 1
            }
        };
        let m = &mut self.metrics[idx].1;
        m.source = m.source.max(source);
        m.values.push(value);
        m.repetition.push(rep);
    }

    /// Records that `figure` (`util.X` or `counter.X`) could not be computed for `kernel`.
    pub(super) fn unresolved(
        &mut self,
        kernel: &str,
        figure: &str,
        duration_ns: f64,
        interval_ns: f64,
        profile: &DeviceProfile,
    ) {
        let name = figure.to_string();
        if self.unavailable.iter().any(|u| u.counter == name) {
            return;
        }
        let floor = profile
            .sampling_floor_ns
            .as_ref()
            .map(|f| {
                format!(
                    " (periodic sampling cannot go below {} ns on {})",
                    f.value, profile.name
                )
            })
            .unwrap_or_default();
        // A window runs from one reading to the next, so a launch longer than the interval
        // may still hold none (it began just after a reading); only from two intervals on is
        // one sure to lie inside, unless the readings around it are further apart.
        let how = if duration_ns < interval_ns {
            format!("shorter than the sampling interval of {interval_ns} ns{floor}")
        } else if duration_ns < 2.0 * interval_ns {
            format!(
                "longer than the sampling interval of {interval_ns} ns but shorter than two ({} ns){floor}, so a window, which runs from one reading to the next, need not fit inside it",
                2.0 * interval_ns
            )
        } else {
            format!(
                "at least two sampling intervals of {interval_ns} ns (the median){floor}, yet the readings around it are further apart"
            )
        };
        self.unavailable.push(UnavailableCounter {
            counter: name,
            reason: format!(
                "unresolved: kernel `{kernel}` ran {duration_ns} ns, {how}; no sampling window lies inside it"
            ),
            hint: "sample on an external trigger at the kernel's start and end (XProf: `is_external_trigger: true`), or time a longer launch (several iterations) inside one kernel window".into(),
        });
    }
}
