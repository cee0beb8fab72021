//! Utilization derived from readings and launches held outside the results (a trace import's
//! columns), read a stretch of time at a time, so that deriving from a trace of gigabytes
//! holds a stretch of it, not all of it.
//!
//! The figures are those [`super::utilization::apply`] gives with every reading in memory,
//! number for number: each stretch is tallied by the same code, and the stretches
//! are cut where no window or launch crosses them. A kernel's windows are read against the
//! readings around its launches (the one before, those inside, the one after: what
//! [`crate::model::results::RunResults::lent_counters`] lends); a stretch ends only between
//! two launches with at least two readings of every series between them, and the next one
//! begins with the last reading of the one before, so each window between kept readings falls
//! in exactly one stretch and every launch finds all its readings in its own. A benchmark
//! whose arrays are not in time order, or that needs more than this reads (registers summed
//! per time, counter passes, a roofline from its own metrics), is not derived here: the
//! caller reads everything into memory instead.

use std::collections::BTreeMap;
use std::io;

use super::utilization::{
    self, Launch, Options, SeriesPlan, Stretches, Tally, finish, import_options, tally_readings,
};
use super::windows::Readings;
use crate::model::held_arrays::{ArrayAt, Field, HeldArrays, ValueReader};
use crate::model::metric::ESTIMATE_SUFFIX;
use crate::model::results::{BenchmarkResult, CounterSeries, RunResults};

/// Readings a stretch holds before it may end (all series together): 1 MiB of them.
const STRETCH_READINGS: usize = 1 << 16;

/// Different window lengths counted (for the median interval an unresolved launch is
/// compared with) beyond which the readings are read into memory instead: sampling at a
/// steady interval gives a few thousand, but jitter at picosecond resolution need not.
const MOST_LENGTHS: usize = 1 << 20;

/// Derives utilization for the benchmarks of `results` that the plan gives a device profile,
/// reading the arrays `held` keeps a stretch at a time. `Ok(false)`, with nothing changed,
/// when a benchmark cannot be derived this way: the caller then reads the arrays into memory
/// and uses [`utilization::apply_to_import`].
pub fn apply_to_held_import(
    results: &mut RunResults,
    held: &dyn HeldArrays,
    plan: &crate::plan::Plan,
) -> io::Result<bool> {
    let fallback = plan.benchmarks.iter().find_map(|b| b.device.as_ref());
    let declared = crate::model::by_name(&plan.benchmarks, |b| b.name.as_str());
    let mut outcomes = Vec::new();
    let mut counts = Counts::default();
    // Each benchmark by name, the first of a name (as a lookup of a lender finds it).
    let mut index: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for (i, b) in results.benchmarks.iter().enumerate() {
        index.entry(b.name.as_str()).or_insert(i);
    }
    if !sweeps_are_cheap(results, &index, held, &mut counts)? {
        return Ok(false);
    }
    for i in 0..results.benchmarks.len() {
        let Some(opts) = import_options(&results.benchmarks[i].name, &declared, fallback) else {
            continue;
        };
        match derive(
            results,
            &index,
            i,
            held,
            opts,
            STRETCH_READINGS,
            &mut counts,
        )? {
            Some(outcome) => outcomes.push((i, outcome)),
            None => return Ok(false),
        }
    }
    for (i, outcome) in outcomes {
        outcome.record(&mut results.benchmarks[i]);
    }
    Ok(true)
}

/// Whether reading each lender's series once per kernel that borrows them costs little: at
/// most 16 readings read per reading held, or 2^26 in all. Each kernel reads the series from
/// the start, so a trace of thousands of kernels is read into memory instead (it is small
/// per kernel: 20,000 kernels of 3 launches come in a 23 MB trace).
fn sweeps_are_cheap(
    results: &RunResults,
    index: &std::collections::HashMap<&str, usize>,
    held: &dyn HeldArrays,
    counts: &mut Counts,
) -> io::Result<bool> {
    let mut borrowers: BTreeMap<usize, usize> = BTreeMap::new();
    for b in &results.benchmarks {
        let lenders: std::collections::BTreeSet<usize> = b
            .kernel_windows
            .iter()
            .filter_map(|w| {
                index
                    .get(w.counters_of.as_ref()?.benchmark.as_str())
                    .copied()
            })
            .collect();
        for lender in lenders {
            *borrowers.entry(lender).or_default() += 1;
        }
    }
    for (lender, kernels) in borrowers {
        let mut readings = 0usize;
        for entry in 0..results.benchmarks[lender].counters.len() {
            readings += counts.count(held, lender, entry)?.unwrap_or(0);
        }
        if kernels.saturating_mul(readings) > readings.saturating_mul(16).max(1 << 26) {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The outcome of benchmark `i`, or `None` when it cannot be derived from held arrays; a
/// stretch ends once it holds `stretch` readings.
fn derive(
    results: &RunResults,
    index: &std::collections::HashMap<&str, usize>,
    i: usize,
    held: &dyn HeldArrays,
    opts: Options<'_>,
    stretch: usize,
    counts: &mut Counts,
) -> io::Result<Option<utilization::Outcome>> {
    let b = &results.benchmarks[i];
    let has = |name: &str| {
        b.metric(name).is_some() || b.metric(&format!("{name}{ESTIMATE_SUFFIX}")).is_some()
    };
    if !opts.passes.is_empty() || (has("flops") && has("bytes")) {
        return Ok(None);
    }
    let outcome = if b.kernel_windows.is_empty() {
        own_series(b, i, held, opts, stretch, counts)?
    } else {
        lent_series(results, index, i, held, opts, stretch, counts)?
    };
    // A derived metric that replaces one whose numbers are held would be written with them.
    let replaces_held = outcome.as_ref().is_some_and(|o| {
        o.metric_names().any(|name| {
            b.metrics.iter().enumerate().any(|(entry, m)| {
                m.name == name
                    && [Field::MetricValues, Field::MetricRepetition]
                        .iter()
                        .any(|&field| {
                            held.holds(&ArrayAt {
                                benchmark: i,
                                entry,
                                field,
                            })
                        })
            })
        })
    });
    Ok(outcome.filter(|_| !replaces_held))
}

/// A held array's reader, or `None` when it is not held.
fn reader<'h>(
    held: &'h dyn HeldArrays,
    benchmark: usize,
    entry: usize,
    field: Field,
) -> Option<Box<dyn ValueReader + 'h>> {
    held.values(&ArrayAt {
        benchmark,
        entry,
        field,
    })
}

/// [`count_in_order`] of each series asked about, once: every kernel of a trace reads the
/// same counters benchmark.
#[derive(Default)]
struct Counts(std::collections::HashMap<(usize, usize), Option<usize>>);

impl Counts {
    fn count(
        &mut self,
        held: &dyn HeldArrays,
        benchmark: usize,
        entry: usize,
    ) -> io::Result<Option<usize>> {
        if let Some(&n) = self.0.get(&(benchmark, entry)) {
            return Ok(n);
        }
        let n = count_in_order(held, benchmark, entry)?;
        self.0.insert((benchmark, entry), n);
        Ok(n)
    }
}

/// How many readings a held series has, when they are in time order (`None` otherwise, or
/// when it is not held).
fn count_in_order(
    held: &dyn HeldArrays,
    benchmark: usize,
    entry: usize,
) -> io::Result<Option<usize>> {
    let (Some(mut times), Some(mut values)) = (
        reader(held, benchmark, entry, Field::SeriesTimes),
        reader(held, benchmark, entry, Field::SeriesValues),
    ) else {
        return Ok(None);
    };
    let (mut n, mut previous) = (0usize, f64::NEG_INFINITY);
    loop {
        match (times.next()?, values.next()?) {
            (Some(t), Some(_)) => {
                if t.total_cmp(&previous).is_lt() {
                    return Ok(None);
                }
                previous = t;
                n += 1;
            }
            (None, None) => return Ok(Some(n)),
            _ => return Ok(None),
        }
    }
}

/// A series' readings read in order, with the next one looked at before it is taken.
struct SeriesCursor<'h> {
    times: Box<dyn ValueReader + 'h>,
    values: Box<dyn ValueReader + 'h>,
    next: Option<(f64, f64)>,
    /// The stretch's readings so far.
    kept: Vec<(f64, f64)>,
}

impl<'h> SeriesCursor<'h> {
    fn open(held: &'h dyn HeldArrays, benchmark: usize, entry: usize) -> io::Result<Self> {
        let held_series = |field| {
            reader(held, benchmark, entry, field)
                .ok_or_else(|| io::Error::other("a held series was let go while read"))
        };
        let mut cursor = SeriesCursor {
            times: held_series(Field::SeriesTimes)?,
            values: held_series(Field::SeriesValues)?,
            next: None,
            kept: Vec::new(),
        };
        cursor.advance()?;
        Ok(cursor)
    }

    fn advance(&mut self) -> io::Result<()> {
        self.next = match (self.times.next()?, self.values.next()?) {
            (Some(t), Some(v)) => Some((t, v)),
            _ => None,
        };
        Ok(())
    }

    /// Keeps the readings around a launch over `[start, end]`: the last one before it (when
    /// not kept already), those inside, and the first after it.
    fn keep_around(&mut self, start: f64, end: f64) -> io::Result<()> {
        let mut before = None;
        while let Some(r) = self.next.filter(|r| r.0 < start) {
            before = Some(r);
            self.advance()?;
        }
        self.kept.extend(before);
        while let Some(r) = self.next.filter(|r| r.0 <= end) {
            self.kept.push(r);
            self.advance()?;
        }
        // The first reading after the end, unless it is taken already (the launch ended
        // before a reading an earlier launch kept).
        if let Some(r) = self.next
            && self.kept.last().is_none_or(|last| last.0 <= end)
        {
            self.kept.push(r);
            self.advance()?;
        }
        Ok(())
    }

    /// Keeps every reading up to `until` (inclusive).
    fn keep_until(&mut self, until: f64) -> io::Result<()> {
        while let Some(r) = self.next.filter(|r| r.0 <= until) {
            self.kept.push(r);
            self.advance()?;
        }
        Ok(())
    }

    /// Whether a stretch may end before a launch that starts at `start`: no reading kept so
    /// far is around it (at least one more lies before it, or the last kept one does).
    fn may_end_before(&self, start: f64) -> bool {
        match self.next {
            Some(r) => r.0 < start,
            None => self.kept.last().is_none_or(|r| r.0 < start),
        }
    }

    /// Ends the stretch: the next begins with its last reading.
    fn carry(&mut self) {
        let last = self.kept.last().copied();
        self.kept.clear();
        self.kept.extend(last);
    }
}

/// A series of the stretch as [`Readings`] read it: `like`'s name, unit and width with the
/// stretch's readings.
fn stretch_series(like: &CounterSeries, kept: &[(f64, f64)]) -> CounterSeries {
    CounterSeries {
        unit: like.unit.clone(),
        bits: like.bits,
        core: like.core,
        sampling: like.sampling,
        t_ns: kept.iter().map(|r| r.0).collect(),
        value: kept.iter().map(|r| r.1).collect(),
        ..CounterSeries::new(&like.counter, like.repetition)
    }
}

/// Tallies one stretch: the kept readings of `cursors` (by plan index) and `launches`.
fn tally_stretch(
    plan: &SeriesPlan<'_>,
    cursors: &[(usize, SeriesCursor<'_>)],
    launches: &BTreeMap<u32, Vec<Launch<'_>>>,
    tallies: &mut [Tally],
) {
    let series: Vec<(usize, CounterSeries)> = cursors
        .iter()
        .map(|(s, c)| (*s, stretch_series(plan.series[*s].sources[0], &c.kept)))
        .collect();
    let mut readings: Vec<Option<Readings<'_>>> = plan.series.iter().map(|_| None).collect();
    for (s, stretch) in &series {
        readings[*s] = Some(Readings::gather(&[stretch]));
    }
    tally_readings(plan, readings, launches, tallies, Stretches::Many);
}

/// Whether the plan can be read from one held series per entry: no key sums several.
fn one_source_each(plan: &SeriesPlan<'_>) -> bool {
    plan.series
        .iter()
        .all(|s| s.sources.len() == 1 && s.off_pass.is_none())
}

/// A benchmark without kernel windows (a trace's counters benchmark): each series over all
/// its windows, stretch after stretch of time.
fn own_series(
    b: &BenchmarkResult,
    i: usize,
    held: &dyn HeldArrays,
    opts: Options<'_>,
    stretch: usize,
    in_order: &mut Counts,
) -> io::Result<Option<utilization::Outcome>> {
    let mut counts = Vec::with_capacity(b.counters.len());
    for entry in 0..b.counters.len() {
        match in_order.count(held, i, entry)? {
            Some(n) => counts.push(n),
            None => return Ok(None),
        }
    }
    let plan = SeriesPlan::new(&b.counters, opts);
    if !one_source_each(&plan) {
        return Ok(None);
    }
    let entry_of = |s: usize| {
        let source = plan.series[s].sources[0];
        b.counters
            .iter()
            .position(|c| std::ptr::eq(c, source))
            .expect("the plan's series are the benchmark's")
    };
    let mut tallies: Vec<Tally> = plan.series.iter().map(|_| Tally::default()).collect();
    let reps: std::collections::BTreeSet<u32> = plan.series.iter().map(|s| s.rep).collect();
    let no_launches = BTreeMap::new();
    for rep in reps {
        let mut cursors = Vec::new();
        for s in (0..plan.series.len()).filter(|&s| plan.series[s].rep == rep) {
            cursors.push((s, SeriesCursor::open(held, i, entry_of(s))?));
        }
        // Stretches end at the time of the densest series' next so many readings.
        let densest = (0..cursors.len())
            .max_by_key(|&k| counts[entry_of(cursors[k].0)])
            .unwrap_or(0);
        loop {
            let until = {
                let c = &mut cursors[densest].1;
                let mut until = None;
                while c.kept.len() < stretch
                    && let Some(r) = c.next
                {
                    c.kept.push(r);
                    c.advance()?;
                    until = Some(r.0);
                }
                until
            };
            let Some(until) = until else {
                // The densest series is read to its end: the rest of the others.
                for (_, c) in &mut cursors {
                    c.keep_until(f64::INFINITY)?;
                }
                tally_stretch(&plan, &cursors, &no_launches, &mut tallies);
                break;
            };
            for (_, c) in &mut cursors {
                c.keep_until(until)?;
            }
            tally_stretch(&plan, &cursors, &no_launches, &mut tallies);
            for (_, c) in &mut cursors {
                c.carry();
            }
        }
    }
    Ok(Some(finish(b, &plan, tallies)))
}

/// A benchmark whose kernel windows are read against another benchmark's series (a trace's
/// kernel): per repetition, the launches in time order and the readings around them.
fn lent_series(
    results: &RunResults,
    index: &std::collections::HashMap<&str, usize>,
    i: usize,
    held: &dyn HeldArrays,
    opts: Options<'_>,
    stretch_readings: usize,
    counts: &mut Counts,
) -> io::Result<Option<utilization::Outcome>> {
    let b = &results.benchmarks[i];
    if !b.counters.is_empty() {
        return Ok(None);
    }
    // Each repetition's one run of launches, the lender and its series of that repetition.
    let mut reps = std::collections::BTreeSet::new();
    let mut lent: Vec<CounterSeries> = Vec::new();
    // Per lent series: the lender and the lender's entry.
    let mut lent_from: Vec<(usize, usize)> = Vec::new();
    for (k, w) in b.kernel_windows.iter().enumerate() {
        let Some(of) = &w.counters_of else {
            return Ok(None);
        };
        let Some(&lender) = index.get(of.benchmark.as_str()) else {
            return Ok(None);
        };
        if lender == i || !reps.insert(w.repetition) {
            return Ok(None);
        }
        let Some(launches) = launches_in_order(held, i, k)? else {
            return Ok(None);
        };
        if launches == 0 {
            continue;
        }
        for (entry, series) in results.benchmarks[lender].counters.iter().enumerate() {
            if series.repetition != of.repetition {
                continue;
            }
            match counts.count(held, lender, entry)? {
                None => return Ok(None),
                Some(0) => {}
                Some(_) => {
                    lent.push(CounterSeries {
                        unit: series.unit.clone(),
                        bits: series.bits,
                        core: series.core,
                        sampling: series.sampling,
                        ..CounterSeries::new(&series.counter, w.repetition)
                    });
                    lent_from.push((lender, entry));
                }
            }
        }
    }
    let plan = SeriesPlan::new(&lent, opts);
    if !one_source_each(&plan) {
        return Ok(None);
    }
    let from = |s: usize| {
        let source = plan.series[s].sources[0];
        let k = lent
            .iter()
            .position(|c| std::ptr::eq(c, source))
            .expect("the plan's series are the lent ones");
        lent_from[k]
    };
    let mut tallies: Vec<Tally> = plan.series.iter().map(|_| Tally::default()).collect();
    for (k, w) in b.kernel_windows.iter().enumerate() {
        let mut cursors = Vec::new();
        for s in (0..plan.series.len()).filter(|&s| plan.series[s].rep == w.repetition) {
            let (lender, entry) = from(s);
            cursors.push((s, SeriesCursor::open(held, lender, entry)?));
        }
        if cursors.is_empty() {
            continue;
        }
        let (Some(mut starts), Some(mut ends)) = (
            reader(held, i, k, Field::WindowStarts),
            reader(held, i, k, Field::WindowEnds),
        ) else {
            return Ok(None);
        };
        let mut stretch: Vec<(f64, f64)> = Vec::new();
        let tally = |stretch: &[(f64, f64)],
                     cursors: &[(usize, SeriesCursor<'_>)],
                     tallies: &mut [Tally]| {
            let launches: BTreeMap<u32, Vec<Launch<'_>>> = BTreeMap::from([(
                w.repetition,
                stretch
                    .iter()
                    .map(|&(s, e)| (w.kernel.as_str(), s, e))
                    .collect(),
            )]);
            tally_stretch(&plan, cursors, &launches, tallies);
        };
        while let (Some(start), Some(end)) = (starts.next()?, ends.next()?) {
            let kept: usize = cursors.iter().map(|(_, c)| c.kept.len()).sum();
            if !stretch.is_empty()
                && kept >= stretch_readings
                && cursors.iter().all(|(_, c)| c.may_end_before(start))
            {
                tally(&stretch, &cursors, &mut tallies);
                stretch.clear();
                for (_, c) in &mut cursors {
                    c.carry();
                }
            }
            for (_, c) in &mut cursors {
                c.keep_around(start, end)?;
            }
            stretch.push((start, end));
        }
        if !stretch.is_empty() {
            tally(&stretch, &cursors, &mut tallies);
        }
    }
    if tallies.iter().any(|t| t.lengths_counted() > MOST_LENGTHS) {
        return Ok(None);
    }
    Ok(Some(finish(b, &plan, tallies)))
}

/// How many launches kernel windows `k` of benchmark `i` hold, when each ends no earlier
/// than it starts and they start in time order (`None` otherwise, or when not held).
fn launches_in_order(held: &dyn HeldArrays, i: usize, k: usize) -> io::Result<Option<usize>> {
    let (Some(mut starts), Some(mut ends)) = (
        reader(held, i, k, Field::WindowStarts),
        reader(held, i, k, Field::WindowEnds),
    ) else {
        return Ok(None);
    };
    let (mut n, mut previous) = (0usize, f64::NEG_INFINITY);
    loop {
        match (starts.next()?, ends.next()?) {
            (Some(s), Some(e)) => {
                if !(s.is_finite() && e.is_finite() && s <= e && s >= previous) {
                    return Ok(None);
                }
                previous = s;
                n += 1;
            }
            (None, None) => return Ok(Some(n)),
            _ => return Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::held_arrays::Number;
    use crate::model::results::{CountersOf, KernelWindows};
    use std::collections::HashMap;

    /// Arrays held in memory by place, read as a trace import's columns are.
    struct InMemory(HashMap<ArrayAt, Vec<f64>>);

    struct Slice<'a>(&'a [f64]);

    impl ValueReader for Slice<'_> {
        fn next(&mut self) -> io::Result<Option<f64>> {
            Ok(self.0.split_first().map(|(&v, rest)| {
                self.0 = rest;
                v
            }))
        }
    }

    impl HeldArrays for InMemory {
        fn holds(&self, at: &ArrayAt) -> bool {
            self.0.contains_key(at)
        }

        fn emit(
            &self,
            at: &ArrayAt,
            emit: &mut dyn FnMut(Number) -> io::Result<()>,
        ) -> io::Result<()> {
            for &v in self.0.get(at).into_iter().flatten() {
                emit(Number::Value(v))?;
            }
            Ok(())
        }

        fn values(&self, at: &ArrayAt) -> Option<Box<dyn ValueReader + '_>> {
            Some(Box::new(Slice(self.0.get(at)?)))
        }
    }

    /// xorshift64*: the same cases on every run.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }

        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    /// A trace import's results: a counters benchmark whose series (a cycle counter, busy
    /// counters, a memory counter and a counter of no key, read at shared or their own
    /// times, cumulative with wrap-arounds) the kernels' launches (overlapping, touching,
    /// before the first reading and after the last, of no length) are read against, in one
    /// or two repetitions.
    fn random_run(rng: &mut Rng) -> RunResults {
        let reps = 1 + rng.below(2) as u32;
        let mut counters = BenchmarkResult::new("counters", Default::default());
        let shared_times = rng.below(2) == 0;
        let names = [
            ("cycle_count", Some(32u8)),
            ("mxu_busy_0", Some(32)),
            ("COUNT_XLU_BUSY_1", None),
            ("hbm_rd_beats", None),
            ("other", None),
        ];
        let mut kernels: Vec<BenchmarkResult> = ["k1", "k2"]
            .iter()
            .map(|k| BenchmarkResult::new(k, Default::default()))
            .collect();
        for rep in 0..reps {
            let n = 1 + rng.below(60) as usize;
            let grid: Vec<f64> = {
                let mut t = 1_000.0 * rng.below(5) as f64;
                (0..n)
                    .map(|_| {
                        t += [0.0, 500.0, 1_000.0, 1_000.0, 3_000.0][rng.below(5) as usize];
                        t
                    })
                    .collect()
            };
            for (name, bits) in names {
                let times: Vec<f64> = if shared_times {
                    grid.clone()
                } else {
                    let mut t = 0.0;
                    (0..1 + rng.below(60))
                        .map(|_| {
                            t += 250.0 * rng.below(9) as f64;
                            t
                        })
                        .collect()
                };
                let mut v: u64 = rng.below(1 << 31);
                let values: Vec<f64> = times
                    .iter()
                    .map(|_| {
                        v = (v + rng.below(if name == "cycle_count" { 4_000 } else { 2_500 }))
                            % (1 << 32);
                        v as f64
                    })
                    .collect();
                counters.counters.push(CounterSeries {
                    unit: if name == "other" {
                        String::new()
                    } else {
                        "cycles".into()
                    },
                    bits,
                    t_ns: times,
                    value: values,
                    ..CounterSeries::new(name, rep)
                });
            }
            for k in &mut kernels {
                let (mut starts, mut ends) = (Vec::new(), Vec::new());
                let mut t = -1_000.0 + 500.0 * rng.below(4) as f64;
                for _ in 0..rng.below(25) {
                    t += 250.0 * rng.below(12) as f64;
                    starts.push(t);
                    ends.push(t + 250.0 * rng.below(30) as f64);
                }
                k.kernel_windows.push(KernelWindows {
                    start_ns: starts,
                    end_ns: ends,
                    counters_of: Some(CountersOf {
                        benchmark: "counters".into(),
                        repetition: rep,
                    }),
                    ..KernelWindows::new(&k.name, rep)
                });
            }
        }
        let mut benchmarks = vec![counters];
        benchmarks.extend(kernels);
        RunResults::of(benchmarks)
    }

    /// `full` without its series and windows, and those arrays held by place.
    fn held(full: &RunResults) -> (RunResults, InMemory) {
        let mut outline = full.clone();
        let mut held = HashMap::new();
        for (i, b) in outline.benchmarks.iter_mut().enumerate() {
            for (entry, c) in b.counters.iter_mut().enumerate() {
                for (field, values) in [
                    (Field::SeriesTimes, &mut c.t_ns),
                    (Field::SeriesValues, &mut c.value),
                ] {
                    held.insert(
                        ArrayAt {
                            benchmark: i,
                            entry,
                            field,
                        },
                        std::mem::take(values),
                    );
                }
            }
            for (entry, w) in b.kernel_windows.iter_mut().enumerate() {
                for (field, values) in [
                    (Field::WindowStarts, &mut w.start_ns),
                    (Field::WindowEnds, &mut w.end_ns),
                ] {
                    held.insert(
                        ArrayAt {
                            benchmark: i,
                            entry,
                            field,
                        },
                        std::mem::take(values),
                    );
                }
            }
        }
        (outline, InMemory(held))
    }

    #[test]
    fn stretch_by_stretch_gives_what_every_reading_in_memory_gives() {
        let profile = crate::config::profile::builtin("tpu-v7x").unwrap();
        let opts = Options::cumulative(&profile);
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let (mut unresolved, mut utilizations, mut refused) = (0, 0, 0);
        for case in 0..400 {
            let full = random_run(&mut rng);
            let mut expected = full.clone();
            let lenders = full.lenders();
            for (i, b) in expected.benchmarks.iter_mut().enumerate() {
                let lent = lenders.lent_counters(&full, &full.benchmarks[i]);
                utilization::apply(b, &lent, opts);
            }
            let (outline, held) = held(&full);
            let index: std::collections::HashMap<&str, usize> = outline
                .benchmarks
                .iter()
                .enumerate()
                .map(|(i, b)| (b.name.as_str(), i))
                .collect();
            for stretch in [1, 2, 5, 1 << 16] {
                for (i, want) in expected.benchmarks.iter().enumerate() {
                    let mut got = outline.benchmarks[i].clone();
                    derive(
                        &outline,
                        &index,
                        i,
                        &held,
                        opts,
                        stretch,
                        &mut Counts::default(),
                    )
                    .unwrap()
                    .expect("a trace's benchmarks derive from held arrays")
                    .record(&mut got);
                    let bits = |b: &BenchmarkResult| {
                        b.metrics
                            .iter()
                            .map(|m| {
                                let values: Vec<u64> =
                                    m.values.iter().map(|v| v.to_bits()).collect();
                                (m.name.clone(), m.unit.clone(), values, m.repetition.clone())
                            })
                            .collect::<Vec<_>>()
                    };
                    assert_eq!(
                        bits(&got),
                        bits(want),
                        "case {case}, stretch {stretch}, `{}`",
                        want.name
                    );
                    assert_eq!(
                        got.provenance, want.provenance,
                        "case {case}, stretch {stretch}"
                    );
                    unresolved += got.provenance.unavailable.len();
                    utilizations += got
                        .metrics
                        .iter()
                        .filter(|m| m.name.starts_with("util.") && !m.values.is_empty())
                        .count();
                    refused += got.provenance.notes.len();
                }
            }
        }
        // The cases reach launches that hold no window (whose reason names the median
        // interval), utilizations over windows and refusals (above 100 %, no key).
        assert!(unresolved > 100, "{unresolved}");
        assert!(utilizations > 100, "{utilizations}");
        assert!(refused > 100, "{refused}");
    }
}
