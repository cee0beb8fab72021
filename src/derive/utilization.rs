//! Register-derived utilization: raw counter readings turned into busy fractions, bandwidths,
//! XProf's named formulas and a roofline position.
//!
//! A counter track is not a percentage: it is a register that counts cycles (or beats) and may
//! be narrow, wrap, be right-shifted, and be sampled cumulatively or per interval. Utilization
//! over a window is Δcount / (Δt × f_clock × lanes), with the clock from the device profile.
//! A value above 100 % means the clock or the counter setup is wrong and is flagged, not
//! reported; a kernel launch that holds no whole sampling window (shorter than the interval,
//! or shorter than two and begun just after a reading) has nothing to measure and is
//! "unresolved", with the fix.

use std::collections::BTreeMap;

use super::formulas::{Recorder, formulas, roofline};
use super::windows::{Readings, SampleMode, Windows};
use crate::config::device::DeviceProfile;
use crate::model::metric::{Direction, Source};
use crate::model::results::{BenchmarkResult, MetricSamples, UnavailableCounter};
use crate::model::series::{CounterSeries, Sampling};
use crate::plan::MetricPolicy;

/// Utilization (a fraction) of a unit that was busy `busy_cycles` in a window of `window_ns`
/// at `clock_hz`, summed over `lanes` pipes.
pub fn utilization(busy_cycles: f64, window_ns: f64, clock_hz: f64, lanes: u32) -> f64 {
    busy_cycles * 1e9 / (window_ns * clock_hz * f64::from(lanes.max(1)))
}

/// Settings for [`apply`].
#[derive(Debug, Clone, Copy)]
pub struct Options<'a> {
    pub profile: &'a DeviceProfile,
    /// Metric settings from the configuration: a derived metric listed there follows it;
    /// others are informational (they explain, they do not gate).
    pub policy: Option<&'a MetricPolicy>,
    pub mode: SampleMode,
    /// Whether `mode` was set in the configuration: it then overrides the sampling a file
    /// gives its readings (`CounterReading::sampling`); otherwise it is the fallback.
    pub explicit_mode: bool,
    /// Right-shift bits the device applied to every sample.
    pub scaling: u8,
    /// Counter passes (from [`crate::config::device::plan_passes`]); repetition r ran pass
    /// r mod passes. Empty when every counter was sampled in every repetition.
    pub passes: &'a [Vec<String>],
}

impl<'a> Options<'a> {
    /// Cumulative samples, no scaling, no configured policy, every counter in every
    /// repetition: what a counter trace imported without a configuration gives.
    pub fn cumulative(profile: &'a DeviceProfile) -> Options<'a> {
        Options {
            profile,
            policy: None,
            mode: SampleMode::Cumulative,
            explicit_mode: false,
            scaling: 0,
            passes: &[],
        }
    }
}

/// Computes counter totals, utilizations, bandwidths, the profile's formulas and the roofline
/// position for every repetition, and records them as metrics of `result`. Problems (a window
/// above 100 %, a launch that holds no whole sampling window) go to the provenance. The
/// series are the benchmark's own and `from_others`, those its kernel windows are read against on
/// another benchmark ([`crate::model::results::RunResults::series_from_others`]).
pub fn apply(result: &mut BenchmarkResult, from_others: &[CounterSeries], opts: Options<'_>) {
    let plan = SeriesPlan::new(result.counters.iter().chain(from_others), opts);
    // The kernel windows of each repetition, gathered once for all its series.
    let mut launches: BTreeMap<u32, Vec<Launch<'_>>> = BTreeMap::new();
    for k in &result.kernel_windows {
        launches.entry(k.repetition).or_default().extend(
            k.windows()
                .map(|(start, end)| (k.kernel.as_str(), start, end)),
        );
    }
    let readings: Vec<Option<Readings<'_>>> = plan
        .series
        .iter()
        .map(|s| s.off_pass.is_none().then(|| Readings::gather(&s.sources)))
        .collect();
    let mut tallies: Vec<Tally> = plan.series.iter().map(|_| Tally::default()).collect();
    tally_readings(&plan, readings, &launches, &mut tallies);
    let outcome = finish(result, &plan, tallies);
    outcome.record(result);
}

/// A kernel launch: its kernel, start and end.
type Launch<'a> = (&'a str, f64, f64);

/// One counter's readings in one repetition, under the profile's key and core.
struct Series<'a> {
    rep: u32,
    /// The key with the core: `mxu_busy.core1`.
    name: String,
    base: String,
    core: Option<u32>,
    mode: SampleMode,
    pass: Option<usize>,
    /// Why it is not read: the repetition ran a counter pass without it.
    off_pass: Option<String>,
    /// The series whose readings are under this key, core and repetition.
    sources: Vec<&'a CounterSeries>,
}

/// The series of a benchmark under the profile's keys, and what their names alone say.
struct SeriesPlan<'a> {
    opts: Options<'a>,
    /// In the order of their repetition and name.
    series: Vec<Series<'a>>,
    /// Trace names mapped to a key of another name.
    aliased: BTreeMap<String, String>,
    /// Counters refused by their names (no key and no unit; registers the profile lacks).
    refused: Vec<String>,
    /// The sampling modes the series were read in, as words, in order of first use.
    modes: Vec<&'static str>,
}

impl<'a> SeriesPlan<'a> {
    /// Files `counters` under the profile's key for each counter: a trace's track names map
    /// to it through the profile's aliases and its register naming rule (the die as the
    /// core). Readings of several registers under one key (an HBM channel each) are summed
    /// per time.
    fn new(
        counters: impl IntoIterator<Item = &'a CounterSeries>,
        opts: Options<'a>,
    ) -> SeriesPlan<'a> {
        let profile = opts.profile;
        let marker = profile
            .register_names
            .as_ref()
            .map(|r| r.after.to_ascii_uppercase())
            .filter(|m| !m.is_empty());
        let core_rule = profile.register_core_regex();
        let mut series: BTreeMap<(u32, String), Series<'a>> = BTreeMap::new();
        let mut aliased: BTreeMap<String, String> = BTreeMap::new();
        let mut unknown: Vec<&str> = Vec::new();
        let mut unknown_seen: std::collections::HashSet<&str> = std::collections::HashSet::new();
        let mut registers_left_out: Vec<&str> = Vec::new();
        for c in counters {
            let base = match profile.counter_key(&c.counter) {
                Some(key) => {
                    if key != c.counter {
                        aliased.insert(c.counter.clone(), key.to_string());
                    }
                    key.to_string()
                }
                None => {
                    // A register the profile has no key for is left out (a real
                    // end-of-profile sample holds tens of thousands), counted in one note.
                    let register = marker
                        .as_ref()
                        .is_some_and(|m| c.counter.to_ascii_uppercase().contains(m.as_str()));
                    if unknown_seen.insert(c.counter.as_str()) {
                        if register {
                            registers_left_out.push(&c.counter);
                        } else if c.unit.is_empty() {
                            // Without a unit of its own or the profile's, nothing tells what
                            // it counts.
                            unknown.push(&c.counter);
                        }
                    }
                    if register {
                        continue;
                    }
                    c.counter.clone()
                }
            };
            let core = c.core.or_else(|| {
                core_rule
                    .as_ref()
                    .and_then(|re| crate::config::device::core_of(re, &c.counter))
            });
            let name = match core {
                Some(core) => format!("{base}.core{core}"),
                None => base.clone(),
            };
            let mode = match (opts.explicit_mode, c.sampling) {
                (false, Some(Sampling::Interval)) => SampleMode::Interval,
                (false, Some(Sampling::Cumulative)) => SampleMode::Cumulative,
                _ => opts.mode,
            };
            series
                .entry((c.repetition, name.clone()))
                .or_insert_with(|| Series {
                    rep: c.repetition,
                    name,
                    base,
                    core,
                    mode,
                    pass: None,
                    off_pass: None,
                    sources: Vec::new(),
                })
                .sources
                .push(c);
        }
        let mut refused: Vec<String> = Vec::new();
        for counter in &unknown {
            refused.push(format!(
                "counter `{counter}` is none of profile `{}`'s counters nor an alias of one, and has no unit: its increase is kept as `counter.{counter}`, with no utilization; name the counter it is under `aliases` in the profile (profiles.{}.counters.KEY.aliases in kgate.yaml)",
                profile.name, profile.name
            ));
        }
        if !registers_left_out.is_empty() {
            let shown: Vec<String> = registers_left_out
                .iter()
                .take(3)
                .map(|c| format!("`{c}`"))
                .collect();
            refused.push(format!(
                "left out {} register counters that profile `{}` has no key for ({}{}): a key under profiles.{}.counters in kgate.yaml whose name (or alias) is the register's name after `{}` keeps one",
                registers_left_out.len(),
                profile.name,
                shown.join(", "),
                if registers_left_out.len() > 3 { ", …" } else { "" },
                profile.name,
                marker.as_deref().unwrap_or_default()
            ));
        }
        let mut modes: Vec<&'static str> = Vec::new();
        let mut series: Vec<Series<'a>> = series.into_values().collect();
        for s in &mut series {
            let word = mode_word(s.mode);
            if !modes.contains(&word) {
                modes.push(word);
            }
            s.pass = pass_of(opts.passes, &s.base);
            if let Some(p) = s.pass
                && !opts.passes.is_empty()
                && s.rep as usize % opts.passes.len() != p
            {
                s.off_pass = Some(format!(
                    "counter `{}` was reported in repetition {}, which ran pass {} without it; ignored",
                    s.base,
                    s.rep,
                    s.rep as usize % opts.passes.len()
                ));
            }
        }
        SeriesPlan {
            opts,
            series,
            aliased,
            refused,
            modes,
        }
    }

    /// The series the utilization of series `c` may be divided by: those of the profile's
    /// cycle counters in the same repetition and core.
    fn cycle_candidates(&self, c: usize) -> Vec<usize> {
        let s = &self.series[c];
        (0..self.series.len())
            .filter(|&o| {
                let other = &self.series[o];
                o != c
                    && other.rep == s.rep
                    && other.core == s.core
                    && self.opts.profile.cycle_counters.contains(&other.base)
            })
            .collect()
    }

    /// Whether series `c` is a busy counter: it counts cycles and is not a clock.
    fn is_busy(&self, c: usize, unit: &str) -> bool {
        let base = &self.series[c].base;
        unit == "cycles" && !is_clock(self.opts.profile, base)
    }

    /// The unit of series `c` when its readings say `readings_unit`: theirs, else the
    /// profile's.
    fn unit(&self, c: usize, readings_unit: &str) -> String {
        if readings_unit.is_empty() {
            self.spec(c)
                .map(|spec| spec.unit.clone())
                .unwrap_or_default()
        } else {
            readings_unit.to_string()
        }
    }

    /// The profile's settings for series `c`'s key, when it has any.
    fn spec(&self, c: usize) -> Option<&crate::config::device::CounterSpec> {
        self.opts.profile.counters.get(&self.series[c].base)
    }
}

fn mode_word(mode: SampleMode) -> &'static str {
    match mode {
        SampleMode::Cumulative => "cumulative",
        SampleMode::Interval => "interval",
    }
}

/// Whether `base` is a clock: the profile's `cycles` or one of its cycle counters.
fn is_clock(profile: &DeviceProfile, base: &str) -> bool {
    base == "cycles" || profile.cycle_counters.iter().any(|c| c == base)
}

/// What one series' windows gave, its readings in time order.
#[derive(Debug, Default)]
struct Tally {
    /// Why its windows could not be made: the first reading that does not fit its width.
    error: Option<String>,
    /// Whether its repetition has launches: its figure is read inside them, not over every
    /// window.
    launches: bool,
    /// Whether it had readings, their unit (the first reading's), and whether they say how
    /// they were sampled (XProf's, whose right shift is already restored).
    seen: Option<(String, bool)>,
    /// With launches: the increase inside them and the time it was measured over, summed
    /// launch by launch in order.
    inside: (f64, f64),
    /// Without launches: the increase over every window, summed in order, and the times of
    /// the first and the last reading.
    whole: Option<(f64, f64, f64)>,
    /// The first launch that holds no window: its kernel and how long it ran.
    unresolved: Option<(String, f64)>,
    /// The median window length as shown, once a launch is unresolved.
    median: Option<f64>,
    /// For a busy counter, per denominator (the clock, or a cycle counter's series): the
    /// highest window utilization over every window and over those inside the launches.
    maxima: Vec<(Option<usize>, f64, f64)>,
}

impl Tally {
    /// The median window length as shown (infinite before it is known).
    fn median_interval(&self) -> f64 {
        self.median.unwrap_or(f64::INFINITY)
    }
}

/// A sampling interval as a reason shows it: to the nanosecond below 1,000 ns, to three
/// significant digits above (13,202 ns reads 13,200 ns). The rounding never puts two lengths
/// out of order (each band's step is an exact power of ten), so the middle of rounded
/// lengths is the rounded middle, and the lengths of millions of windows take a few thousand
/// values.
fn interval_shown(length: f64) -> f64 {
    if !length.is_finite() {
        return length;
    }
    let mut step = 1.0;
    while length.abs() >= 1000.0 * step && step < 1e21 {
        step *= 10.0;
    }
    (length / step).round() * step
}

/// Adds the readings to the tallies: `readings[i]` are series `i`'s readings, `launches` the
/// launches by repetition.
fn tally_readings(
    plan: &SeriesPlan<'_>,
    readings: Vec<Option<Readings<'_>>>,
    launches: &BTreeMap<u32, Vec<Launch<'_>>>,
    tallies: &mut [Tally],
) {
    let opts = plan.opts;
    let profile = opts.profile;
    let windows: Vec<Option<Windows<'_>>> = readings
        .into_iter()
        .enumerate()
        .map(|(i, r)| {
            let r = r?;
            let tally = &mut tallies[i];
            if tally.error.is_some() {
                return None;
            }
            match &mut tally.seen {
                Some((_, from_xprof)) => *from_xprof |= r.from_xprof,
                None => tally.seen = Some((r.unit.to_string(), r.from_xprof)),
            }
            let scaling = if r.from_xprof { 0 } else { opts.scaling };
            match Windows::new(r, plan.series[i].mode, scaling) {
                Ok(w) => Some(w),
                Err(e) => {
                    tally.error = Some(e);
                    None
                }
            }
        })
        .collect();
    for (i, wins) in windows.iter().enumerate() {
        let Some(wins) = wins else { continue };
        let tally = &mut tallies[i];
        let kernels: &[Launch<'_>] = launches.get(&plan.series[i].rep).map_or(&[], Vec::as_slice);
        if kernels.is_empty() {
            if !wins.is_empty() {
                let (first, last) = (wins.start(0), wins.end(wins.len() - 1));
                // Summed as `Iterator::sum` sums, from its own starting value.
                let whole =
                    tally
                        .whole
                        .get_or_insert((std::iter::empty::<f64>().sum(), first, last));
                for w in 0..wins.len() {
                    whole.0 += wins.delta(w);
                }
                whole.2 = last;
            }
            continue;
        }
        tally.launches = true;
        for (kernel, start, end) in kernels {
            match wins.in_window(*start, *end) {
                Some((d, s)) => {
                    tally.inside.0 += d;
                    tally.inside.1 += s;
                }
                None => {
                    if tally.unresolved.is_none() {
                        tally.unresolved = Some((kernel.to_string(), end - start));
                        tally.median = Some(interval_shown(wins.median_interval()));
                    }
                }
            }
        }
    }
    // The busy counters' highest windows, against each denominator they may be divided by.
    for (c, wins) in windows.iter().enumerate() {
        let Some(wins) = wins else { continue };
        let unit = match &tallies[c].seen {
            Some((unit, _)) => plan.unit(c, unit),
            None => continue,
        };
        if !plan.is_busy(c, &unit) {
            continue;
        }
        let lanes = plan.spec(c).and_then(|spec| spec.lanes).unwrap_or(1);
        let kernels: &[Launch<'_>] = launches.get(&plan.series[c].rep).map_or(&[], Vec::as_slice);
        let candidates: Vec<Option<usize>> = std::iter::once(None)
            .chain(plan.cycle_candidates(c).into_iter().map(Some))
            .collect();
        for candidate in candidates {
            let measured = candidate.and_then(|m| windows[m].as_ref());
            let per_window = |i: usize| {
                let delta = wins.delta(i);
                match measured.and_then(|m| m.same_as(wins, i).map(|j| (m, j))) {
                    Some((m, j)) => delta / (m.delta(j) * f64::from(lanes.max(1))),
                    None => utilization(
                        delta,
                        wins.end(i) - wins.start(i),
                        profile.clock_hz.value,
                        lanes,
                    ),
                }
            };
            let highest = |range: std::ops::Range<usize>| {
                range
                    .filter(|&i| wins.end(i) > wins.start(i))
                    .map(per_window)
                    .fold(0.0, f64::max)
            };
            let max_window = highest(0..wins.len());
            let peak = if kernels.is_empty() {
                max_window
            } else {
                wins.used(kernels)
                    .into_iter()
                    .map(highest)
                    .fold(0.0, f64::max)
            };
            let maxima = &mut tallies[c].maxima;
            match maxima.iter_mut().find(|m| m.0 == candidate) {
                Some(m) => {
                    m.1 = m.1.max(max_window);
                    m.2 = m.2.max(peak);
                }
                None => maxima.push((candidate, max_window, peak)),
            }
        }
    }
}

/// What one series gave, for the metrics.
struct Computed {
    /// Its index in the plan.
    index: usize,
    delta: f64,
    span: f64,
    unit: String,
    spec: crate::config::device::CounterSpec,
}

/// Everything [`apply`] records on a benchmark.
struct Outcome {
    details: Vec<(String, String)>,
    notes: Vec<String>,
    unavailable: Vec<UnavailableCounter>,
    metrics: Vec<(String, MetricSamples)>,
}

impl Outcome {
    /// Writes it into `result`: details, notes, the derived metrics (replacing those of the
    /// same name).
    fn record(self, result: &mut BenchmarkResult) {
        result.provenance.details.extend(self.details);
        result.provenance.notes.extend(self.notes);
        result.provenance.unavailable.extend(self.unavailable);
        for (name, m) in self.metrics {
            if let Some(existing) = result.metrics.iter_mut().find(|e| e.name == name) {
                // Recomputed (an import of a result that already had them): replace.
                *existing = m;
            } else {
                result.metrics.push(m);
            }
        }
    }
}

/// Turns the tallies into metrics, notes and details: what [`apply`] records.
fn finish(result: &BenchmarkResult, plan: &SeriesPlan<'_>, tallies: Vec<Tally>) -> Outcome {
    let opts = plan.opts;
    let profile = opts.profile;
    let mut details: Vec<(String, String)> = vec![
        ("device.profile".into(), profile.name.clone()),
        (
            "device.clock_hz".into(),
            format!("{} ({})", profile.clock_hz.value, profile.clock_hz.source),
        ),
    ];
    for (k, pass) in opts.passes.iter().enumerate() {
        for c in pass {
            details.push((format!("counter_pass.{c}"), k.to_string()));
        }
    }
    for (trace_name, key) in &plan.aliased {
        details.push((format!("counter_alias.{trace_name}"), key.clone()));
    }
    let mut out = Recorder::default();
    let mut refused = plan.refused.clone();
    let mut scaling_note = false;
    let mut computed: Vec<Computed> = Vec::new();
    for (index, (s, tally)) in plan.series.iter().zip(&tallies).enumerate() {
        if let Some(why) = &s.off_pass {
            refused.push(why.clone());
            continue;
        }
        let Some((readings_unit, from_xprof)) = &tally.seen else {
            continue;
        };
        if *from_xprof && opts.scaling > 0 && !scaling_note {
            scaling_note = true;
            refused.push(format!(
                "counters.scaling {} is not applied to the readings of XProf profiles (XSpace, trace-viewer JSON): XProf's conversion has already restored the original values",
                opts.scaling
            ));
        }
        if let Some(e) = &tally.error {
            refused.push(e.clone());
            continue;
        }
        let (delta, span) = if !tally.launches {
            match tally.whole {
                Some((delta, first, last)) => (delta, last - first),
                None => continue,
            }
        } else if let Some((kernel, duration)) = &tally.unresolved {
            // The figure the window would have given: a busy counter's utilization, else
            // the counter's increase.
            let busy = profile
                .counters
                .get(&s.base)
                .is_some_and(|spec| spec.unit == "cycles" && !is_clock(profile, &s.base));
            let figure = if busy {
                format!("util.{}", s.name)
            } else {
                format!("counter.{}", s.name)
            };
            out.unresolved(kernel, &figure, *duration, tally.median_interval(), profile);
            continue;
        } else {
            tally.inside
        };
        computed.push(Computed {
            index,
            delta,
            span,
            unit: plan.unit(index, readings_unit),
            spec: plan.spec(index).cloned().unwrap_or_default(),
        });
    }
    let mut per_rep: BTreeMap<u32, BTreeMap<Option<u32>, CoreCounters>> = BTreeMap::new();
    // Bytes moved and the window they moved in, per repetition.
    let mut memory: BTreeMap<u32, (f64, f64)> = BTreeMap::new();
    let mut denominators: Vec<String> = Vec::new();
    let (derived, higher, lower) = (Source::Derived, Direction::Higher, Direction::Lower);
    for c in &computed {
        let s = &plan.series[c.index];
        let counter = format!("counter.{}", s.name);
        out.push(&counter, &c.unit, Source::Hardware, lower, s.rep, c.delta);
        per_rep
            .entry(s.rep)
            .or_default()
            .entry(s.core)
            .or_default()
            .insert(s.base.clone(), (c.delta, s.pass.unwrap_or(0)));
        if c.span <= 0.0 {
            continue;
        }
        if plan.is_busy(c.index, &c.unit) {
            let lanes = c.spec.lanes.unwrap_or(1);
            // XProf's denominator: the core's measured cycle counter over the same windows.
            let measured = profile.cycle_counters.iter().find_map(|key| {
                computed.iter().find(|o| {
                    let other = &plan.series[o.index];
                    other.rep == s.rep
                        && other.core == s.core
                        && &other.base == key
                        && o.delta > 0.0
                })
            });
            let (max_window, peak) = tallies[c.index]
                .maxima
                .iter()
                .find(|m| m.0 == measured.map(|m| m.index))
                .map_or((0.0, 0.0), |m| (m.1, m.2));
            let u = match measured {
                Some(m) => c.delta / (m.delta * f64::from(lanes.max(1))),
                None => utilization(c.delta, c.span, profile.clock_hz.value, lanes),
            };
            let measured_base = measured.map(|m| &plan.series[m.index].base);
            let denominator = match (measured_base, s.core) {
                (Some(m), Some(core)) => format!("core {core}: measured `{m}`"),
                (Some(m), None) => format!("measured `{m}`"),
                (None, Some(core)) => format!(
                    "core {core}: window time × clock_hz {} Hz (no cycle counter in the window)",
                    profile.clock_hz.value
                ),
                (None, None) => format!(
                    "window time × clock_hz {} Hz (no cycle counter in the window)",
                    profile.clock_hz.value
                ),
            };
            if !denominators.contains(&denominator) {
                denominators.push(denominator);
            }
            if u > 1.0 + 1e-9 || max_window > 1.0 + 1e-9 {
                refused.push(format!(
                    "util.{}: {:.1} % (highest window {:.1} %) in repetition {} exceeds 100 %: the clock ({} Hz, {}) or the counter's width, scaling or lanes is inconsistent; not reported",
                    s.name,
                    u * 100.0,
                    max_window * 100.0,
                    s.rep,
                    profile.clock_hz.value,
                    profile.name
                ));
                continue;
            }
            let direction = c.spec.direction.unwrap_or(Direction::Higher);
            let (util, rep) = (format!("util.{}", s.name), s.rep);
            out.push(&util, "%", derived, direction, rep, u * 100.0);
            let peak_window = format!("{util}.peak_window");
            out.push(&peak_window, "%", derived, direction, rep, peak * 100.0);
        }
        let bytes_per_unit = match c.unit.as_str() {
            "bytes" | "B" => Some(1.0),
            "beats" => c.spec.bytes_per_unit,
            _ => None,
        };
        if let Some(bpu) = bytes_per_unit {
            let rate = c.delta * bpu * 1e9 / c.span;
            let bandwidth = format!("bandwidth.{}", s.name);
            out.push(&bandwidth, "B/s", derived, higher, s.rep, rate);
            let traffic = memory.entry(s.rep).or_insert((0.0, 0.0));
            traffic.0 += c.delta * bpu;
            traffic.1 = f64::max(traffic.1, c.span);
        }
    }
    if !denominators.is_empty() {
        details.push((DENOMINATOR_DETAIL.into(), denominators.join("; ")));
    }
    // XProf's "HBM Rd+Wr": all memory traffic against the peak bandwidth.
    if let Some(bw) = &profile.memory_bandwidth {
        for (rep, (bytes, span)) in &memory {
            let u = bytes * 1e9 / (span * bw.value);
            if u > 1.0 + 1e-9 {
                refused.push(format!(
                    "util.memory: {:.1} % in repetition {rep} exceeds the peak bandwidth of {} ({}); not reported",
                    u * 100.0,
                    profile.name,
                    bw.source
                ));
                continue;
            }
            out.push("util.memory", "%", derived, higher, *rep, u * 100.0);
        }
    }
    for (rep, cores) in &per_rep {
        for (core, counters) in cores {
            formulas(profile, *rep, *core, counters, &mut out, &mut refused);
        }
    }
    roofline(result, profile, &mut out);
    let mut modes = plan.modes.clone();
    if modes.is_empty() {
        modes.push(mode_word(opts.mode));
    }
    let config = format!(
        "profile {}, {} samples, scaling {}, passes [{}]",
        profile.name,
        modes.join("+"),
        opts.scaling,
        opts.passes
            .iter()
            .map(|p| p.join(","))
            .collect::<Vec<_>>()
            .join("] [")
    );
    details.push((CONFIG_DETAIL.into(), config));
    details.push((
        METRICS_DETAIL.into(),
        out.metrics
            .iter()
            .map(|(n, _)| n.as_str())
            .collect::<Vec<_>>()
            .join(","),
    ));
    refused.append(&mut out.notes);
    let metrics = out
        .metrics
        .into_iter()
        .map(|(name, mut m)| {
            if let Some(policy) = opts.policy
                && policy.metrics.contains_key(&name)
            {
                let r = policy.resolve(&name, false);
                m.gate = r.rule;
                m.direction = r.direction;
            }
            (name, m)
        })
        .collect();
    Outcome {
        details,
        notes: refused,
        unavailable: out.unavailable,
        metrics,
    }
}

/// Utilization settings of a planned benchmark, when it has a device profile.
pub fn options(b: &crate::plan::BenchmarkPlan) -> Option<Options<'_>> {
    Some(Options {
        profile: b.device.as_ref()?,
        policy: Some(&b.metrics),
        mode: if b.counters.mode.as_deref() == Some("interval") {
            SampleMode::Interval
        } else {
            SampleMode::Cumulative
        },
        explicit_mode: b.counters.mode.is_some(),
        scaling: b.counters.scaling,
        passes: if b.counter_passes.len() > 1 {
            &b.counter_passes
        } else {
            &[]
        },
    })
}

/// Applies [`apply`] to imported benchmarks: those the plan declares use their own settings,
/// the others the configuration's device profile with default settings (nothing is derived
/// without one).
pub fn apply_to_import(results: &mut crate::model::results::RunResults, plan: &crate::plan::Plan) {
    let fallback = plan.benchmarks.iter().find_map(|b| b.device.as_ref());
    let declared = crate::model::by_name(&plan.benchmarks, |b| b.name.as_str());
    let derived: Vec<(usize, Options<'_>)> = results
        .benchmarks
        .iter()
        .enumerate()
        .filter_map(|(i, b)| Some((i, import_options(&b.name, &declared, fallback)?)))
        .collect();
    if derived.is_empty() {
        return;
    }
    let shared = results.shared_series();
    for (i, opts) in derived {
        // The readings around a kernel's windows, held one benchmark at a time.
        let from_others = shared.series_from_others(results, &results.benchmarks[i]);
        apply(&mut results.benchmarks[i], &from_others, opts);
    }
}

/// The settings an imported benchmark is derived with: its own where the plan declares it
/// (`declared`, the plan's benchmarks by name: an import of thousands of benchmarks against
/// a suite of thousands is not a search per benchmark), else the configuration's device
/// profile (`fallback`) with default settings.
fn import_options<'p>(
    name: &str,
    declared: &std::collections::HashMap<&str, &'p crate::plan::BenchmarkPlan>,
    fallback: Option<&'p DeviceProfile>,
) -> Option<Options<'p>> {
    match declared.get(name) {
        Some(b) => options(b),
        None => fallback.map(Options::cumulative),
    }
}

/// Provenance detail describing how counters were collected and normalized.
pub const CONFIG_DETAIL: &str = "counters.config";
/// Provenance detail saying what each busy counter's utilization was divided by: the
/// core's measured cycle counter, or the window's time × the profile's clock.
pub const DENOMINATOR_DETAIL: &str = "counters.denominator";

/// One core's counter increases in one repetition, by key: the increase and the pass.
type CoreCounters = BTreeMap<String, (f64, usize)>;

/// Provenance detail listing the metrics computed from counters.
pub const METRICS_DETAIL: &str = "counters.metrics";

fn pass_of(passes: &[Vec<String>], counter: &str) -> Option<usize> {
    passes.iter().position(|p| p.iter().any(|c| c == counter))
}

#[cfg(test)]
mod tests;
