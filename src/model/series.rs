//! Counter readings and kernel windows as columns: a counter's times and values, a kernel's
//! starts and ends, each two numeric vectors of one length, with what describes them once.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::model::protocol::CounterLine;

/// One counter's readings in one repetition (see the protocol's counter lines): the name and
/// what describes every reading once, then the readings' times and values as two arrays of
/// one length, in arrival order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CounterSeries {
    /// The counter's name as the benchmark or the trace gave it.
    pub counter: String,
    /// The repetition (0-based) the readings were taken in.
    pub repetition: u32,
    /// The unit the readings were given in, when one was.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub unit: String,
    /// The register's width in bits, for counters that wrap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bits: Option<u8>,
    /// The core (die) the counter belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub core: Option<u32>,
    /// How the file that held the readings samples them, where the file says (an XSpace's
    /// end-of-profile readings are running totals, its `_counters_` samples increments); a
    /// benchmark's `counters.mode` in the configuration overrides it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampling: Option<Sampling>,
    /// Each reading's time in nanoseconds.
    #[serde(serialize_with = "whole_numbers::values")]
    pub t_ns: Vec<f64>,
    /// Each reading's value, in the same order as `t_ns`.
    #[serde(serialize_with = "whole_numbers::values")]
    pub value: Vec<f64>,
}

impl CounterSeries {
    /// An empty series of a counter in a repetition.
    pub fn new(counter: &str, repetition: u32) -> CounterSeries {
        CounterSeries {
            counter: counter.to_string(),
            repetition,
            unit: String::new(),
            bits: None,
            core: None,
            sampling: None,
            t_ns: Vec::new(),
            value: Vec::new(),
        }
    }

    /// The number of readings.
    pub fn len(&self) -> usize {
        self.t_ns.len().min(self.value.len())
    }

    /// The readings around `windows`, as a series of the windows' repetition: of the readings
    /// in time order, those inside a window plus the one before and the one after each, so
    /// that a launch between two readings is still seen (and reported as unresolved).
    pub fn around(&self, windows: &KernelWindows) -> CounterSeries {
        match self.in_time_order() {
            Some((t_ns, value)) => self.around_sorted(&t_ns, &value, windows),
            None => {
                let n = self.len();
                self.around_sorted(&self.t_ns[..n], &self.value[..n], windows)
            }
        }
    }

    /// The times and values of a series out of time order (a file written elsewhere), put in
    /// order by a stable sort, which keeps readings at one time in their order; `None` for a
    /// series already in order.
    pub(crate) fn in_time_order(&self) -> Option<(Vec<f64>, Vec<f64>)> {
        let n = self.len();
        let (t_ns, value) = (&self.t_ns[..n], &self.value[..n]);
        if t_ns.is_sorted_by(|a, b| a.total_cmp(b).is_le()) {
            return None;
        }
        let mut readings: Vec<(f64, f64)> =
            t_ns.iter().copied().zip(value.iter().copied()).collect();
        readings.sort_by(|a, b| a.0.total_cmp(&b.0));
        Some(readings.into_iter().unzip())
    }

    /// [`CounterSeries::around`] over this series' readings in time order. Each window
    /// keeps a run of readings (found by bisection); the runs are merged, so the cost is that
    /// of the windows and the readings kept, not of the whole series: a trace's counters
    /// benchmark lends one long series to every kernel.
    pub(crate) fn around_sorted(
        &self,
        t_ns: &[f64],
        value: &[f64],
        windows: &KernelWindows,
    ) -> CounterSeries {
        let mut runs: Vec<(usize, usize)> = Vec::new();
        if !t_ns.is_empty() {
            runs = windows
                .windows()
                .map(|(start, end)| {
                    let lo = t_ns.partition_point(|&t| t < start).saturating_sub(1);
                    let hi = t_ns.partition_point(|&t| t <= end).min(t_ns.len() - 1);
                    (lo, hi.max(lo) + 1)
                })
                .collect();
        }
        runs.sort_unstable();
        let mut merged: Vec<(usize, usize)> = Vec::with_capacity(runs.len());
        for (lo, hi) in runs {
            match merged.last_mut() {
                Some(last) if lo <= last.1 => last.1 = last.1.max(hi),
                _ => merged.push((lo, hi)),
            }
        }
        let kept = merged.iter().map(|(lo, hi)| hi - lo).sum();
        let mut series = CounterSeries {
            unit: self.unit.clone(),
            bits: self.bits,
            core: self.core,
            sampling: self.sampling,
            t_ns: Vec::with_capacity(kept),
            value: Vec::with_capacity(kept),
            ..CounterSeries::new(&self.counter, windows.repetition)
        };
        for (lo, hi) in merged {
            series.t_ns.extend_from_slice(&t_ns[lo..hi]);
            series.value.extend_from_slice(&value[lo..hi]);
        }
        series
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The readings, in arrival order.
    pub fn readings(&self) -> impl Iterator<Item = CounterReading<'_>> {
        self.t_ns
            .iter()
            .zip(&self.value)
            .map(move |(&t_ns, &value)| CounterReading {
                counter: &self.counter,
                repetition: self.repetition,
                unit: &self.unit,
                bits: self.bits,
                core: self.core,
                sampling: self.sampling,
                t_ns,
                value,
            })
    }

    /// Whether a reading of this description belongs to this series.
    pub(crate) fn holds(
        &self,
        repetition: u32,
        line: &CounterLine,
        sampling: Option<Sampling>,
    ) -> bool {
        self.repetition == repetition
            && self.counter == line.counter
            && self.unit == line.unit
            && self.bits == line.bits
            && self.core == line.core
            && self.sampling == sampling
    }
}

/// One reading of a series, as a view: what the series says of it, when it was taken and
/// what it read.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CounterReading<'a> {
    pub counter: &'a str,
    pub repetition: u32,
    pub unit: &'a str,
    pub bits: Option<u8>,
    pub core: Option<u32>,
    pub sampling: Option<Sampling>,
    pub t_ns: f64,
    pub value: f64,
}

/// How a counter reading was sampled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Sampling {
    /// The running total since the counter was cleared.
    Cumulative,
    /// The increase over the interval that ends at the reading's time.
    Interval,
}

/// One kernel's time windows in one repetition (see the protocol's kernel lines): the kernel's
/// name once, then each launch's start and end as two arrays of one length.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct KernelWindows {
    /// The kernel's name.
    pub kernel: String,
    /// The repetition (0-based) the kernel ran in.
    pub repetition: u32,
    /// Each launch's start in nanoseconds.
    #[serde(serialize_with = "whole_numbers::values")]
    pub start_ns: Vec<f64>,
    /// Each launch's end in nanoseconds, in the same order as `start_ns`.
    #[serde(serialize_with = "whole_numbers::values")]
    pub end_ns: Vec<f64>,
    /// The series these windows are read against when another benchmark holds them (a trace
    /// import's `counters` benchmark); absent, they are this benchmark's own series of
    /// `repetition`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counters_of: Option<CountersOf>,
}

/// Where the counter readings of a kernel's windows are: a trace import keeps each reading once, on
/// its `counters` benchmark, instead of a copy on the benchmark of every kernel it was read around.
/// `RunResults::series_from_others` gives the readings around the windows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CountersOf {
    /// The benchmark that holds the series.
    pub benchmark: String,
    /// Its repetition the windows' readings are in (the same file of an import).
    pub repetition: u32,
}

impl KernelWindows {
    /// No window yet of a kernel in a repetition.
    pub fn new(kernel: &str, repetition: u32) -> KernelWindows {
        KernelWindows {
            kernel: kernel.to_string(),
            repetition,
            start_ns: Vec::new(),
            end_ns: Vec::new(),
            counters_of: None,
        }
    }

    /// Each window's start and end, in order.
    pub fn windows(&self) -> impl Iterator<Item = (f64, f64)> + '_ {
        self.start_ns
            .iter()
            .copied()
            .zip(self.end_ns.iter().copied())
    }

    pub fn len(&self) -> usize {
        self.start_ns.len().min(self.end_ns.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Measurements written without a fraction where they have none: a count of 1234567 or a time
/// of 88000 ns is `1234567`, not `1234567.0`. Counters, launch times and integral durations
/// are most of a large results file, and JSON readers (kgate's included) read either form as
/// the same number. Values beyond 2^53, fractions and negative zero keep the float form, so
/// every value reads back to the same bits.
/// `v` as the integer the results file writes it as, when it is a whole number an `f64` holds
/// exactly (not -0, whose sign an integer would lose).
pub(crate) fn whole_number(v: f64) -> Option<i64> {
    /// Largest magnitude below which every integer is an exact f64.
    const EXACT_INTEGERS: f64 = 9_007_199_254_740_992.0;
    // The conversion truncates, so it gives `v` back exactly when `v` is whole; it is one
    // instruction, where `fract` calls the C library's `trunc` (millions of times for a
    // results file).
    let truncated = v as i64;
    (v.abs() < EXACT_INTEGERS && truncated as f64 == v && !(v == 0.0 && v.is_sign_negative()))
        .then_some(truncated)
}

pub(crate) mod whole_numbers {
    use serde::Serializer;

    pub fn value<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
        match super::whole_number(*v) {
            Some(i) => s.serialize_i64(i),
            None => s.serialize_f64(*v),
        }
    }

    pub fn values<S: Serializer>(values: &[f64], s: S) -> Result<S::Ok, S::Error> {
        struct One(f64);
        impl serde::Serialize for One {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                value(&self.0, s)
            }
        }
        s.collect_seq(values.iter().map(|v| One(*v)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_readings_around_windows_are_those_inside_and_one_either_side() {
        let mut series = CounterSeries::new("busy", 3);
        series.unit = "cycles".into();
        series.t_ns = vec![0.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0];
        series.value = vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        let windows = |start_ns: Vec<f64>, end_ns: Vec<f64>| KernelWindows {
            start_ns,
            end_ns,
            ..KernelWindows::new("k", 0)
        };
        let around = series.around(&windows(
            vec![12.0, 41.0, -5.0, 70.0],
            vec![25.0, 44.0, -1.0, 80.0],
        ));
        // [12, 25]: 10 before, 20 inside, 30 after; [41, 44]: 40 and 50 on either side; a
        // window before the first reading takes the first, one after the last the last.
        assert_eq!(around.t_ns, [0.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0]);
        let narrow = windows(vec![12.0], vec![25.0]);
        let around = series.around(&narrow);
        assert_eq!(around.t_ns, [10.0, 20.0, 30.0]);
        assert_eq!(around.value, [1.0, 2.0, 3.0]);
        assert_eq!((around.repetition, around.unit.as_str()), (0, "cycles"));
        // Out of time order, the same readings.
        let mut shuffled = series.clone();
        shuffled.t_ns.reverse();
        shuffled.value.reverse();
        assert_eq!(shuffled.around(&narrow), around);
    }

    /// The readings around windows by the definition, one mark per reading: those from the
    /// one before each window's start to the one after its end.
    fn around_by_marks(t_ns: &[f64], windows: &KernelWindows) -> Vec<f64> {
        let mut keep = vec![false; t_ns.len()];
        for (start, end) in windows.windows() {
            let lo = t_ns.partition_point(|&t| t < start).saturating_sub(1);
            let hi = t_ns.partition_point(|&t| t <= end).min(t_ns.len() - 1);
            keep[lo..=hi.max(lo)].iter_mut().for_each(|k| *k = true);
        }
        t_ns.iter()
            .zip(keep)
            .filter(|(_, k)| *k)
            .map(|(t, _)| *t)
            .collect()
    }

    #[test]
    fn overlapping_and_unordered_windows_keep_each_reading_once_in_time_order() {
        let mut rng = fastrand::Rng::with_seed(11);
        for _ in 0..2_000 {
            let mut series = CounterSeries::new("busy", 0);
            let mut t = 0.0;
            for _ in 0..rng.usize(1..60) {
                // Repeated times as well as gaps.
                t += f64::from(rng.u8(0..3)) * 5.0;
                series.t_ns.push(t);
                series.value.push(t * 2.0);
            }
            let mut windows = KernelWindows::new("k", 0);
            for _ in 0..rng.usize(0..12) {
                let start = rng.f64() * (t + 20.0) - 10.0;
                windows.start_ns.push(start);
                windows.end_ns.push(start + rng.f64() * 30.0);
            }
            let around = series.around(&windows);
            assert_eq!(around.t_ns, around_by_marks(&series.t_ns, &windows));
            let doubled: Vec<f64> = around.t_ns.iter().map(|t| t * 2.0).collect();
            assert_eq!(around.value, doubled);
        }
    }

    #[derive(serde::Serialize, serde::Deserialize)]
    struct Values {
        #[serde(serialize_with = "super::whole_numbers::values")]
        values: Vec<f64>,
    }

    #[test]
    fn whole_numbers_are_those_without_a_fraction_below_two_to_the_53() {
        let by_definition = |v: f64| {
            let negative_zero = v == 0.0 && v.is_sign_negative();
            (v.fract() == 0.0 && v.abs() < 9_007_199_254_740_992.0 && !negative_zero)
                .then_some(v as i64)
        };
        let mut rng = fastrand::Rng::with_seed(11);
        #[rustfmt::skip]
        let specials = [0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 2.5e-300, 4_503_599_627_370_495.5,
            9_007_199_254_740_991.0, -9_007_199_254_740_991.0, 9_007_199_254_740_992.0, 9.3e18,
            -9.3e18, 1e300, f64::MAX, f64::NAN, f64::INFINITY, f64::NEG_INFINITY];
        let random = (0..200_000).map(|i| match i % 3 {
            0 => f64::from_bits(rng.u64(..)),
            1 => (rng.f64() - 0.5) * 10f64.powi(rng.i32(0..20)),
            _ => rng.i64(-(1 << 54)..(1 << 54)) as f64,
        });
        for v in specials.into_iter().chain(random) {
            let bits = v.to_bits();
            assert_eq!(whole_number(v), by_definition(v), "{v:e} ({bits:#x})");
        }
    }

    #[test]
    fn whole_numbers_lose_their_fraction_and_every_value_reads_back_to_its_bits() {
        #[rustfmt::skip]
        let values = vec![0.0, -0.0, 1.0, -3.0, 1_234_567.0, 0.5, 88_000.25, 9_007_199_254_740_991.0,
            9_007_199_254_740_992.0, 1e300, f64::MIN_POSITIVE];
        let text = serde_json::to_string(&Values {
            values: values.clone(),
        })
        .unwrap();
        assert_eq!(
            text,
            r#"{"values":[0,-0.0,1,-3,1234567,0.5,88000.25,9007199254740991,9007199254740992.0,1e+300,2.2250738585072014e-308]}"#
        );
        let back: Values = serde_json::from_str(&text).unwrap();
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&back.values), bits(&values));
    }
}
