//! A counter's readings in time order and the sampling windows between them, read where the
//! readings are held.
//!
//! A trace's counter track holds millions of readings; utilization is read off the windows
//! between consecutive readings (the increase of the counter from one to the next). Neither
//! is copied where it need not be: a series read from one source already in time order (a
//! trace's track, a run's counter) is borrowed as it is, and a window's bounds and increase
//! are computed when asked, from the two readings around it. Copies are made only where
//! readings must be put in order or registers summed.

use std::borrow::Cow;
use std::ops::Range;

use crate::model::series::CounterSeries;

/// The increase of a `bits`-wide counter from `prev` to `cur`, wrapping at 2^bits; exact at
/// every width (8, 16, 32, 64). Values must fit the width.
pub fn counter_delta(prev: u64, cur: u64, bits: u8) -> Result<u64, String> {
    if !matches!(bits, 8 | 16 | 32 | 64) {
        return Err(format!(
            "counter width {bits} bits is not one of 8, 16, 32, 64"
        ));
    }
    if bits < 64 {
        let limit = 1u64 << bits;
        if prev >= limit || cur >= limit {
            return Err(format!(
                "value {} does not fit a {bits}-bit counter",
                prev.max(cur)
            ));
        }
        Ok(cur.wrapping_sub(prev) & (limit - 1))
    } else {
        Ok(cur.wrapping_sub(prev))
    }
}

/// How a counter's samples are reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SampleMode {
    /// Each sample is the running total since the counter was cleared.
    Cumulative,
    /// Each sample is the increase since the previous sample.
    Interval,
}

/// The width of a counter at each reading: one for all of them, or one per reading where
/// the readings came from series of different widths.
#[derive(Debug, Clone, PartialEq)]
enum Widths {
    All(Option<u8>),
    Each(Vec<Option<u8>>),
}

impl Widths {
    fn at(&self, i: usize) -> Option<u8> {
        match self {
            Widths::All(bits) => *bits,
            Widths::Each(bits) => bits[i],
        }
    }
}

/// One counter's readings in time order, as columns of times and values.
#[derive(Debug, Clone)]
pub struct Readings<'a> {
    t_ns: Cow<'a, [f64]>,
    value: Cow<'a, [f64]>,
    bits: Widths,
    /// The counter's name, for messages. Readings of several names are summed register by
    /// register ([`Readings::gather`]) and have no width then, so no message names them.
    counter: &'a str,
    /// The unit of the first reading (empty when the series has none).
    pub unit: &'a str,
    /// Whether any reading says how it was sampled: XProf's conversion gives every reading
    /// its sampling, and has already restored the right shift.
    pub from_xprof: bool,
}

impl<'a> Readings<'a> {
    /// The readings of `sources`, all of one counter key in one repetition, in time order
    /// (a stable sort: readings at one time keep their order). A single series already in
    /// time order is borrowed, not copied. Readings of several registers under one key (an
    /// HBM channel each) are summed per time; a register missing at a time the others were
    /// read at makes that sum partial, so only times every register was read at are kept,
    /// and their sum has no width (it may exceed one register's).
    pub fn gather(sources: &[&'a CounterSeries]) -> Readings<'a> {
        let counter = sources.first().map_or("", |s| s.counter.as_str());
        if let [one] = sources {
            let n = one.len();
            let (t_ns, value) = (&one.t_ns[..n], &one.value[..n]);
            if t_ns.is_sorted_by(|a, b| a.total_cmp(b).is_le()) {
                return Readings {
                    t_ns: Cow::Borrowed(t_ns),
                    value: Cow::Borrowed(value),
                    bits: Widths::All(one.bits),
                    counter,
                    unit: &one.unit,
                    from_xprof: n > 0 && one.sampling.is_some(),
                };
            }
        }
        // (time, value, source), in the order of the sources and of their readings.
        let mut all: Vec<(f64, f64, u32)> = sources
            .iter()
            .enumerate()
            .flat_map(|(k, s)| {
                let n = s.len();
                s.t_ns[..n]
                    .iter()
                    .zip(&s.value[..n])
                    .map(move |(&t, &v)| (t, v, k as u32))
            })
            .collect();
        all.sort_by(|a, b| a.0.total_cmp(&b.0));
        let source = |k: u32| sources[k as usize];
        let mut names: Vec<&str> = all.iter().map(|r| source(r.2).counter.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        let (mut t_ns, mut value) = (Vec::new(), Vec::new());
        let mut first: Vec<u32> = Vec::new();
        let bits = if names.len() > 1 {
            let mut i = 0;
            let mut seen: Vec<&str> = Vec::new();
            while i < all.len() {
                let t = all[i].0;
                let mut j = i;
                let mut sum = 0.0;
                seen.clear();
                while j < all.len() && all[j].0 == t {
                    sum += all[j].1;
                    let name = source(all[j].2).counter.as_str();
                    if !seen.contains(&name) {
                        seen.push(name);
                    }
                    j += 1;
                }
                if seen.len() == names.len() {
                    t_ns.push(t);
                    value.push(sum);
                    first.push(all[i].2);
                }
                i = j;
            }
            Widths::All(None)
        } else {
            t_ns.reserve_exact(all.len());
            value.reserve_exact(all.len());
            for &(t, v, k) in &all {
                t_ns.push(t);
                value.push(v);
                first.push(k);
            }
            if sources.windows(2).all(|p| p[0].bits == p[1].bits) {
                Widths::All(sources.first().and_then(|s| s.bits))
            } else {
                Widths::Each(first.iter().map(|&k| source(k).bits).collect())
            }
        };
        Readings {
            t_ns: Cow::Owned(t_ns),
            value: Cow::Owned(value),
            bits,
            counter,
            unit: first.first().map_or("", |&k| source(k).unit.as_str()),
            from_xprof: first.iter().any(|&k| source(k).sampling.is_some()),
        }
    }

    pub fn len(&self) -> usize {
        self.t_ns.len()
    }

    pub fn is_empty(&self) -> bool {
        self.t_ns.is_empty()
    }

    /// Times and values, for tests.
    #[cfg(test)]
    fn pairs(&self) -> Vec<(f64, f64, Option<u8>)> {
        (0..self.len())
            .map(|i| (self.t_ns[i], self.value[i], self.bits.at(i)))
            .collect()
    }
}

/// The sampling windows of a counter's readings: window `i` runs from reading `i` to reading
/// `i + 1`, and its increase is the counter's from one to the other. Cumulative samples are
/// differenced with wrap-around at the reading's width; interval samples are taken as they
/// are. Right-shift `scaling` is restored (value << scaling). Integral values use integer
/// arithmetic (exact up to 2^53, the precision of a JSON number).
#[derive(Debug, Clone)]
pub struct Windows<'a> {
    readings: Readings<'a>,
    mode: SampleMode,
    scaling: u8,
}

impl<'a> Windows<'a> {
    /// The windows of `readings`; an error names the first reading whose value does not fit
    /// its counter's width.
    pub fn new(readings: Readings<'a>, mode: SampleMode, scaling: u8) -> Result<Self, String> {
        let windows = Windows {
            readings,
            mode,
            scaling,
        };
        for i in 0..windows.len() {
            windows.try_delta(i)?;
        }
        Ok(windows)
    }

    pub fn readings(&self) -> &Readings<'a> {
        &self.readings
    }

    /// How many windows: one fewer than the readings.
    pub fn len(&self) -> usize {
        self.readings.len().saturating_sub(1)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn start(&self, i: usize) -> f64 {
        self.readings.t_ns[i]
    }

    pub fn end(&self, i: usize) -> f64 {
        self.readings.t_ns[i + 1]
    }

    /// The increase in window `i`, with the right shift restored.
    pub fn delta(&self, i: usize) -> f64 {
        self.try_delta(i)
            .expect("every window's increase was checked when the windows were made")
    }

    fn try_delta(&self, i: usize) -> Result<f64, String> {
        let r = &self.readings;
        let (a, b) = (r.value[i], r.value[i + 1]);
        let raw = match self.mode {
            SampleMode::Interval => b,
            SampleMode::Cumulative => match (as_count(a), as_count(b)) {
                (Some(p), Some(c)) => counter_delta(p, c, r.bits.at(i + 1).unwrap_or(64))
                    .map_err(|e| format!("counter `{}` at {} ns: {e}", r.counter, r.t_ns[i + 1]))?
                    as f64,
                _ => b - a,
            },
        };
        Ok(match as_count(raw) {
            Some(v) if self.scaling > 0 => ((v as u128) << self.scaling) as f64,
            _ => raw * 2f64.powi(i32::from(self.scaling)),
        })
    }

    /// Which windows lie within `[start, end]`: one run of them, since both ends of the
    /// windows rise with their index, found by two binary searches. A trace holds thousands
    /// of launches of a kernel over thousands of readings, and a scan of every window per
    /// launch was most of its import.
    pub fn inside(&self, start_ns: f64, end_ns: f64) -> Range<usize> {
        let n = self.len();
        let t = &self.readings.t_ns;
        let lo = t[..n].partition_point(|&s| s < start_ns);
        let hi = if n == 0 {
            0
        } else {
            t[1..=n].partition_point(|&e| e <= end_ns)
        };
        lo..hi.max(lo)
    }

    /// The increase inside `[start, end]` and the time it was measured over: the windows
    /// that lie within it. `None` when no window does (the kernel is shorter than the
    /// sampling interval).
    pub fn in_window(&self, start_ns: f64, end_ns: f64) -> Option<(f64, f64)> {
        let inside = self.inside(start_ns, end_ns);
        if inside.is_empty() {
            return None;
        }
        let delta = inside.clone().map(|i| self.delta(i)).sum();
        let span = inside.map(|i| self.end(i) - self.start(i)).sum();
        Some((delta, span))
    }

    /// The increase over every window and the time from the first reading to the last;
    /// `None` without a window.
    pub fn whole(&self) -> Option<(f64, f64)> {
        let n = self.len();
        (n > 0).then(|| {
            (
                (0..n).map(|i| self.delta(i)).sum(),
                self.end(n - 1) - self.start(0),
            )
        })
    }

    /// The windows a kernel-window figure is computed from, as runs of their indices: those
    /// inside any of the kernel windows (all of them without kernel windows), each once, in
    /// time order. Runs, not copies: a counter of a long trace has millions of windows.
    pub fn used(&self, kernels: &[(&str, f64, f64)]) -> Vec<Range<usize>> {
        if kernels.is_empty() {
            return std::iter::once(0..self.len()).collect();
        }
        let mut runs: Vec<Range<usize>> = kernels
            .iter()
            .map(|(_, s, e)| self.inside(*s, *e))
            .filter(|r| !r.is_empty())
            .collect();
        runs.sort_by_key(|r| r.start);
        let mut used: Vec<Range<usize>> = Vec::new();
        for run in runs {
            match used.last_mut() {
                Some(last) if run.start <= last.end => last.end = last.end.max(run.end),
                _ => used.push(run),
            }
        }
        used
    }

    /// Which of these windows (the core's cycle counter's) spans the same times as window `i`
    /// of `other` (a busy counter read at the same times): the first with the same start and
    /// end whose increase is positive. Its windows are in time order, so those that start
    /// there are one run, found by a binary search.
    pub fn same_as(&self, other: &Windows<'_>, i: usize) -> Option<usize> {
        let (start, end) = (other.start(i), other.end(i));
        let n = self.len();
        let from = self.readings.t_ns[..n].partition_point(|&s| s < start);
        (from..n)
            .take_while(|&j| self.start(j) == start)
            .find(|&j| self.end(j) == end && self.delta(j) > 0.0)
    }

    /// The median length of the windows; infinite without one.
    pub fn median_interval(&self) -> f64 {
        let mut d: Vec<f64> = (0..self.len())
            .map(|i| self.end(i) - self.start(i))
            .collect();
        if d.is_empty() {
            return f64::INFINITY;
        }
        let mid = d.len() / 2;
        *d.select_nth_unstable_by(mid, f64::total_cmp).1
    }
}

fn as_count(v: f64) -> Option<u64> {
    (v >= 0.0 && v.fract() == 0.0 && v < 18_446_744_073_709_551_616.0).then_some(v as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::series::Sampling;

    fn series(counter: &str, bits: Option<u8>, readings: &[(f64, f64)]) -> CounterSeries {
        CounterSeries {
            bits,
            unit: "cycles".into(),
            t_ns: readings.iter().map(|r| r.0).collect(),
            value: readings.iter().map(|r| r.1).collect(),
            ..CounterSeries::new(counter, 0)
        }
    }

    fn deltas(w: &Windows<'_>) -> Vec<f64> {
        (0..w.len()).map(|i| w.delta(i)).collect()
    }

    #[test]
    fn wrap_around_is_exact_at_every_width() {
        for bits in [8u8, 16, 32, 64] {
            let max = u64::MAX >> (64 - u32::from(bits));
            assert_eq!(counter_delta(max - 2, 4, bits).unwrap(), 7, "{bits} bits");
            assert_eq!(counter_delta(max, 0, bits).unwrap(), 1, "{bits} bits");
            assert_eq!(counter_delta(5, 5, bits).unwrap(), 0, "{bits} bits");
            assert_eq!(counter_delta(0, max, bits).unwrap(), max, "{bits} bits");
        }
        assert_contains!(counter_delta(0, 256, 8).unwrap_err(), "8-bit");
        assert_contains!(counter_delta(0, 1, 12).unwrap_err(), "12 bits");
    }

    #[test]
    fn cumulative_wraps_and_interval_and_scaling_are_restored() {
        let readings = [(0.0, 65_000.0), (1000.0, 100.0), (2000.0, 600.0)];
        let s = series("mxu_busy_0", Some(16), &readings);
        let w = |mode, scaling| Windows::new(Readings::gather(&[&s]), mode, scaling).unwrap();
        // 65536 − 65000 + 100, then 500.
        assert_eq!(deltas(&w(SampleMode::Cumulative, 0)), [636.0, 500.0]);
        assert_eq!(deltas(&w(SampleMode::Cumulative, 2))[1], 2000.0);
        assert_eq!(deltas(&w(SampleMode::Interval, 1))[1], 1200.0);
        let narrow = series("c", Some(8), &[(0.0, 1.0), (5.0, 300.0)]);
        let err = Windows::new(Readings::gather(&[&narrow]), SampleMode::Cumulative, 0);
        let want = "counter `c` at 5 ns: value 300 does not fit a 8-bit counter";
        assert_eq!(err.unwrap_err(), want);
    }

    #[test]
    fn one_series_in_time_order_is_borrowed_and_others_are_put_in_order() {
        let sorted = series("c", Some(32), &[(0.0, 1.0), (1.0, 2.0), (1.0, 3.0)]);
        let r = Readings::gather(&[&sorted]);
        assert!(matches!(r.t_ns, Cow::Borrowed(_)));
        assert_eq!(r.len(), 3);
        // Out of order: a stable sort, readings at one time in their order.
        let mut late = series("c", Some(16), &[(5.0, 9.0), (1.0, 7.0), (5.0, 8.0)]);
        late.sampling = Some(Sampling::Cumulative);
        let r = Readings::gather(&[&late]);
        assert!(matches!(r.t_ns, Cow::Owned(_)));
        #[rustfmt::skip]
        let late_pairs = [(1.0, 7.0, Some(16)), (5.0, 9.0, Some(16)), (5.0, 8.0, Some(16))];
        assert_eq!(r.pairs(), late_pairs);
        assert!(r.from_xprof);
        // Two series of one counter and different widths: each reading keeps its own.
        let r = Readings::gather(&[&sorted, &late]);
        #[rustfmt::skip]
        let sorted_pairs = [(0.0, 1.0, Some(32)), (1.0, 2.0, Some(32)), (1.0, 3.0, Some(32))];
        assert_eq!(r.pairs(), [sorted_pairs, late_pairs].concat());
        assert_eq!(r.unit, "cycles");
    }

    #[test]
    fn registers_under_one_key_are_summed_at_the_times_all_were_read() {
        let three = [(0.0, 1.0), (1000.0, 10.0), (2000.0, 30.0)];
        let ps0 = series("RD_RESP_PS0", Some(16), &three);
        let ps1 = series("RD_RESP_PS1", Some(16), &[(0.0, 2.0), (1000.0, 20.0)]);
        // At 2 µs only one channel was read: a partial sum is left out.
        let summed = [(0.0, 3.0, None), (1000.0, 30.0, None)];
        assert_eq!(Readings::gather(&[&ps0, &ps1]).pairs(), summed);
        assert_eq!(Readings::gather(&[&ps0]).len(), 3);
    }

    #[test]
    fn the_windows_inside_a_launch_are_found_as_a_scan_of_all_would() {
        let mut rng = fastrand::Rng::with_seed(11);
        for _ in 0..300 {
            // Readings in time order, some at one time (a window of no length).
            let mut t = 0.0;
            let mut v = 0.0;
            let readings: Vec<(f64, f64)> = (0..rng.usize(0..40))
                .map(|_| {
                    t += [0.0, 1.0, 2.5, 10.0][rng.usize(0..4)];
                    v += rng.u32(0..100) as f64;
                    (t, v)
                })
                .collect();
            let s = series("c", None, &readings);
            let w = Windows::new(Readings::gather(&[&s]), SampleMode::Cumulative, 0).unwrap();
            let bounds: Vec<(f64, f64, f64)> = readings
                .windows(2)
                .map(|p| (p[0].0, p[1].0, p[1].1 - p[0].1))
                .collect();
            assert_eq!(w.len(), bounds.len());
            for _ in 0..20 {
                let start = rng.f64() * (t + 5.0) - 2.0;
                let end = start + rng.f64() * 30.0;
                let scanned: Vec<usize> = (0..bounds.len())
                    .filter(|&i| bounds[i].0 >= start && bounds[i].1 <= end)
                    .collect();
                let found: Vec<usize> = w.inside(start, end).collect();
                assert_eq!(found, scanned, "{readings:?} [{start}, {end}]");
                let sum = |ix: &[usize]| -> Option<(f64, f64)> {
                    (!ix.is_empty()).then(|| {
                        let d = ix.iter().map(|&i| bounds[i].2).sum();
                        let s = ix.iter().map(|&i| bounds[i].1 - bounds[i].0).sum();
                        (d, s)
                    })
                };
                assert_eq!(w.in_window(start, end), sum(&scanned));
            }
            // Launches that may overlap: each window used once, in time order.
            let kernels: Vec<(&str, f64, f64)> = (0..rng.usize(0..6))
                .map(|_| {
                    let start = rng.f64() * t;
                    ("k", start, start + rng.f64() * 20.0)
                })
                .collect();
            let scanned: Vec<usize> = (0..bounds.len())
                .filter(|&i| {
                    let (s, e, _) = bounds[i];
                    e > s
                        && (kernels.is_empty()
                            || kernels.iter().any(|(_, ks, ke)| s >= *ks && e <= *ke))
                })
                .collect();
            let used: Vec<usize> = w
                .used(&kernels)
                .into_iter()
                .flatten()
                .filter(|&i| w.end(i) > w.start(i))
                .collect();
            assert_eq!(used, scanned, "{readings:?} {kernels:?}");
            // The median window, as a sort would find it.
            let mut lengths: Vec<f64> = bounds.iter().map(|b| b.1 - b.0).collect();
            lengths.sort_by(f64::total_cmp);
            let median = lengths.get(lengths.len() / 2).copied();
            assert_eq!(Some(w.median_interval()).filter(|m| m.is_finite()), median);
        }
    }
}
