//! Rank-based statistics for comparing timing samples.
//!
//! Timings on shared CI runners are skewed and spiky, so the gate relies on
//! rank methods: the Mann–Whitney U test for "did it change?" and the
//! Hodges–Lehmann shift with its distribution-free interval for "by how
//! much?". Both are unaffected by a few wild repetitions, which is where
//! mean-based tests fail.
//!
//! The exact null distribution of U is computed here with a dynamic
//! programme in probability form, instead of calling statrs's exact
//! `mannwhitneyu`. statrs 0.19.1 returns the complement of the upper tail
//! when `n1 <= n2` (the usual equal-size case), so 5 vs 5 with complete
//! separation comes out as p = 1 instead of 0.0079. Its exact path also
//! enumerates every subset, which becomes unusable quickly. statrs is used
//! only for the standard normal distribution.

pub mod changepoint;
pub mod inference;
use statrs::distribution::{ContinuousCDF, Normal};

/// Largest `n1 * n2` for which the automatic choice uses the exact distribution.
const EXACT_AUTO_LIMIT: usize = 10_000;
/// Largest `n1 * n2` accepted when the exact method is forced. The programme's
/// memory grows as max(m, n) * min(m, n)^2 / 2, so this keeps it to tens of MB.
const EXACT_FORCED_LIMIT: usize = 40_000;

/// Descriptive statistics of one sample.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Summary {
    pub n: usize,
    pub median: f64,
    pub mean: f64,
    /// Sample standard deviation (divisor n - 1); 0.0 when n == 1.
    pub std_dev: f64,
    /// Coefficient of variation std_dev / mean; 0.0 when the mean is 0.
    pub cv: f64,
    /// Median absolute deviation from the median, without the 1.4826 scale factor.
    pub mad: f64,
    pub min: f64,
    pub max: f64,
    /// Values outside the Tukey fences Q1 - 1.5 IQR and Q3 + 1.5 IQR (type-7
    /// quantiles). They are counted, not removed.
    pub outliers: usize,
}

fn all_finite(values: &[f64]) -> bool {
    values.iter().all(|v| v.is_finite())
}

fn valid_pair(x: &[f64], y: &[f64]) -> bool {
    !x.is_empty() && !y.is_empty() && all_finite(x) && all_finite(y)
}

/// A copy of `values` in ascending order (`f64::total_cmp`), for the `_sorted` functions
/// that share one sort.
pub fn sorted(values: &[f64]) -> Vec<f64> {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    v
}

/// Median of an already sorted, non-empty slice.
pub(crate) fn median_sorted(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    }
}

/// The median absolute deviation from `median` (the sample's own) of an already sorted,
/// non-empty slice of finite values, without sorting the deviations: going outwards from
/// the median, the deviations of a sorted sample grow on either side (rounded subtraction
/// is monotone), so the middle one is found by merging those two runs halfway. The same bits
/// as sorting `|v - median|` and taking its median.
pub(crate) fn mad_sorted(sorted: &[f64], median: f64) -> f64 {
    let n = sorted.len();
    // Left run: indices split-1 down to 0; right run: split up to n-1.
    let split = sorted.partition_point(|v| *v < median);
    let left = |i: usize| (sorted[split - 1 - i] - median).abs();
    let right = |j: usize| (sorted[split + j] - median).abs();
    let (mut i, mut j) = (0, 0);
    let mut next = || {
        let take_left = j >= n - split || (i < split && left(i) <= right(j));
        if take_left {
            i += 1;
            left(i - 1)
        } else {
            j += 1;
            right(j - 1)
        }
    };
    let k = (n - 1) / 2;
    for _ in 0..k {
        next();
    }
    let lower = next();
    if n % 2 == 1 {
        lower
    } else {
        (lower + next()) / 2.0
    }
}

/// Type-7 (linear interpolation) quantile of an already sorted, non-empty slice.
fn quantile_type7(sorted: &[f64], p: f64) -> f64 {
    let h = (sorted.len() - 1) as f64 * p;
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(sorted.len() - 1);
    sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo])
}

/// None for an empty slice or any non-finite value.
pub fn summarize(values: &[f64]) -> Option<Summary> {
    summarize_sorted(values, &sorted(values))
}

/// [`summarize`] given `sorted`, the values in ascending order ([`sorted`]).
pub fn summarize_sorted(values: &[f64], sorted: &[f64]) -> Option<Summary> {
    if values.is_empty() || !all_finite(values) {
        return None;
    }
    debug_assert_eq!(values.len(), sorted.len());
    let n = values.len();
    let median = median_sorted(sorted);
    let mean = values.iter().sum::<f64>() / n as f64;
    let std_dev = if n > 1 {
        let ss: f64 = values.iter().map(|v| (v - mean) * (v - mean)).sum();
        (ss / (n - 1) as f64).sqrt()
    } else {
        0.0
    };
    let cv = if mean == 0.0 { 0.0 } else { std_dev / mean };
    let mad = mad_sorted(sorted, median);
    let (q1, q3) = (quantile_type7(sorted, 0.25), quantile_type7(sorted, 0.75));
    let (lo, hi) = (q1 - 1.5 * (q3 - q1), q3 + 1.5 * (q3 - q1));
    let outliers = values.iter().filter(|&&v| v < lo || v > hi).count();
    Some(Summary {
        n,
        median,
        mean,
        std_dev,
        cv,
        mad,
        min: sorted[0],
        max: sorted[n - 1],
        outliers,
    })
}

/// None when empty. NaN values sort last (total order) rather than panicking.
pub fn median(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| median_sorted(&sorted(values)))
}

/// Direction of the alternative hypothesis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Alternative {
    TwoSided,
    /// x is stochastically larger than y.
    Greater,
    /// x is stochastically smaller than y.
    Less,
}

/// How a p-value or interval was obtained.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum MwuMethod {
    Exact,
    Asymptotic,
}

/// Result of a Mann–Whitney U test; `u1` is the U of the first sample.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MannWhitney {
    pub u1: f64,
    pub p_value: f64,
    pub method: MwuMethod,
}

/// Midranks (1-based) of `values` in their original order, and the sizes of
/// the tie groups larger than one.
fn midranks(values: &[f64]) -> (Vec<f64>, Vec<usize>) {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&a, &b| values[a].total_cmp(&values[b]));
    let mut ranks = vec![0.0; values.len()];
    let mut ties = Vec::new();
    let mut start = 0;
    while start < order.len() {
        let mut end = start + 1;
        while end < order.len() && values[order[end]] == values[order[start]] {
            end += 1;
        }
        // Positions start..end hold ranks start+1..=end; their mean:
        let rank = (start + 1 + end) as f64 / 2.0;
        for &i in &order[start..end] {
            ranks[i] = rank;
        }
        if end - start > 1 {
            ties.push(end - start);
        }
        start = end;
    }
    (ranks, ties)
}

/// The tie-group sizes of the pooled sample (groups of more than one, in value order), from
/// both sides already sorted by `f64::total_cmp`: what [`midranks`] finds, by one merge instead
/// of a sort of the pooled sample.
fn tie_groups(xs: &[f64], ys: &[f64]) -> Vec<usize> {
    let mut ties = Vec::new();
    let (mut i, mut j) = (0, 0);
    let mut current: Option<f64> = None;
    let mut run = 0;
    while i < xs.len() || j < ys.len() {
        let v = if j == ys.len() || (i < xs.len() && xs[i].total_cmp(&ys[j]).is_le()) {
            i += 1;
            xs[i - 1]
        } else {
            j += 1;
            ys[j - 1]
        };
        match current {
            Some(c) if c == v => run += 1,
            _ => {
                if run > 1 {
                    ties.push(run);
                }
                current = Some(v);
                run = 1;
            }
        }
    }
    if run > 1 {
        ties.push(run);
    }
    ties
}

/// U1 of x against y and the tie-group sizes of the pooled sample.
fn u_statistic(x: &[f64], y: &[f64]) -> (f64, Vec<usize>) {
    let pooled: Vec<f64> = x.iter().chain(y).copied().collect();
    let (ranks, ties) = midranks(&pooled);
    let n1 = x.len() as f64;
    let r1: f64 = ranks[..x.len()].iter().sum();
    (r1 - n1 * (n1 + 1.0) / 2.0, ties)
}

/// Standard deviation of U under H0 with the tie correction.
fn sigma_u(n1: usize, n2: usize, ties: &[usize]) -> f64 {
    let (a, b) = (n1 as f64, n2 as f64);
    let big_n = a + b;
    let tie_sum: f64 = ties.iter().map(|&t| (t as f64).powi(3) - t as f64).sum();
    let var = a * b / 12.0 * ((big_n + 1.0) - tie_sum / (big_n * (big_n - 1.0)));
    var.max(0.0).sqrt()
}

/// Exact null probabilities P(U = u), u = 0..=m*n, for sample sizes m and n
/// without ties. Uses the probability-form recurrence
/// p(u; a, b) = a/(a+b) p(u-b; a-1, b) + b/(a+b) p(u; a, b-1),
/// which stays within [0, 1] and so cannot overflow. The distribution is the
/// same for (m, n) and (n, m); the outer loop runs over the larger size so
/// memory is about max * min^2 / 2 values.
fn exact_null_pmf(m: usize, n: usize) -> std::rc::Rc<Vec<f64>> {
    use std::cell::RefCell;
    use std::collections::HashMap;
    use std::rc::Rc;
    type Cache = RefCell<HashMap<(usize, usize), Rc<Vec<f64>>>>;
    thread_local! {
        // The gate asks for the same few (m, n) many times per run (p-values in both
        // directions, intervals at two levels, every look), so distributions are kept.
        static CACHE: Cache = RefCell::new(HashMap::new());
    }
    let key = (m.max(n), m.min(n));
    if let Some(hit) = CACHE.with(|c| c.borrow().get(&key).cloned()) {
        return hit;
    }
    let pmf = Rc::new(compute_null_pmf(m, n));
    CACHE.with(|c| c.borrow_mut().insert(key, Rc::clone(&pmf)));
    pmf
}

fn compute_null_pmf(m: usize, n: usize) -> Vec<f64> {
    let (big, small) = if m >= n { (m, n) } else { (n, m) };
    // row[b] holds the distribution for (a, b) once the inner loop has passed b.
    let mut row: Vec<Vec<f64>> = vec![vec![1.0]; small + 1];
    for a in 1..=big {
        for b in 1..=small {
            let (wa, wb) = (a as f64 / (a + b) as f64, b as f64 / (a + b) as f64);
            let prev_a = &row[b]; // (a-1, b), length (a-1)*b + 1
            let prev_b = &row[b - 1]; // (a, b-1), length a*(b-1) + 1
            let cur: Vec<f64> = (0..=a * b)
                .map(|u| {
                    let from_a = if u >= b { prev_a[u - b] } else { 0.0 };
                    let from_b = prev_b.get(u).copied().unwrap_or(0.0);
                    wa * from_a + wb * from_b
                })
                .collect();
            row[b] = cur;
        }
    }
    row.pop().unwrap_or_else(|| vec![1.0])
}

fn cdf_from_pmf(pmf: &[f64], k: usize) -> f64 {
    pmf.iter().take(k + 1).sum::<f64>().min(1.0)
}

/// P(U >= u), summed from the upper tail for accuracy.
fn sf_from_pmf(pmf: &[f64], u: f64) -> f64 {
    let start = u.ceil().max(0.0) as usize;
    pmf.iter().skip(start).rev().sum::<f64>().min(1.0)
}

/// P(U <= k) under H0 for sample sizes m, n (exact, no ties). The cost grows
/// as max(m, n)^2 * min(m, n)^2 / 4, so keep m*n modest (about 10_000).
pub fn exact_null_cdf(k: usize, m: usize, n: usize) -> f64 {
    cdf_from_pmf(&exact_null_pmf(m, n), k)
}

/// Automatic choice: exact (own dynamic programme) when there are no ties and
/// n1*n2 <= 10_000, otherwise the normal approximation with tie correction and
/// continuity correction. None if either side is empty or any value is non-finite.
pub fn mann_whitney(x: &[f64], y: &[f64], alternative: Alternative) -> Option<MannWhitney> {
    RankSum::new(x, y).map(|r| r.test(alternative))
}

/// Forced method; `continuity` applies to the asymptotic method only. Exact
/// with ties returns None, as does exact with n1*n2 above 40_000 (memory).
pub fn mann_whitney_with(
    x: &[f64],
    y: &[f64],
    alternative: Alternative,
    method: MwuMethod,
    continuity: bool,
) -> Option<MannWhitney> {
    RankSum::new(x, y)?.test_with(alternative, method, continuity)
}

/// The rank sum of x against y, ranked once: the U statistic and the pooled sample's tie
/// groups, from which the test in any direction follows without ranking again.
#[derive(Debug, Clone)]
pub struct RankSum {
    n1: usize,
    n2: usize,
    u1: f64,
    ties: Vec<usize>,
}

impl RankSum {
    /// None if either side is empty or any value is non-finite.
    pub fn new(x: &[f64], y: &[f64]) -> Option<RankSum> {
        if !valid_pair(x, y) {
            return None;
        }
        let (u1, ties) = u_statistic(x, y);
        Some(RankSum {
            n1: x.len(),
            n2: y.len(),
            u1,
            ties,
        })
    }

    /// [`RankSum::new`] for samples already in ascending order ([`sorted`]): U counts the
    /// pairs with x above y, and half those where they are equal, in one merge instead of
    /// ranking the pooled sample. U is a sum of halves either way, so it is exact and the
    /// same bits; the tie groups are the pooled sample's.
    pub fn from_sorted(xs: &[f64], ys: &[f64]) -> Option<RankSum> {
        if !valid_pair(xs, ys) {
            return None;
        }
        // ys[..below] < x and ys[..at_most] <= x, for the current x.
        let (mut below, mut at_most) = (0, 0);
        let mut u1 = 0.0;
        for &x in xs {
            while below < ys.len() && ys[below] < x {
                below += 1;
            }
            at_most = at_most.max(below);
            while at_most < ys.len() && ys[at_most] <= x {
                at_most += 1;
            }
            u1 += below as f64 + 0.5 * (at_most - below) as f64;
        }
        Some(RankSum {
            n1: xs.len(),
            n2: ys.len(),
            u1,
            ties: tie_groups(xs, ys),
        })
    }

    /// The test with the automatic choice of method (see [`mann_whitney`]).
    pub fn test(&self, alternative: Alternative) -> MannWhitney {
        let method = if self.ties.is_empty() && self.n1 * self.n2 <= EXACT_AUTO_LIMIT {
            MwuMethod::Exact
        } else {
            MwuMethod::Asymptotic
        };
        // The automatic choice is exact only within the forced method's limit.
        self.compute(alternative, method, true)
    }

    /// The test with a forced method (see [`mann_whitney_with`]).
    pub fn test_with(
        &self,
        alternative: Alternative,
        method: MwuMethod,
        continuity: bool,
    ) -> Option<MannWhitney> {
        if method == MwuMethod::Exact
            && (!self.ties.is_empty() || self.n1 * self.n2 > EXACT_FORCED_LIMIT)
        {
            return None;
        }
        Some(self.compute(alternative, method, continuity))
    }

    fn compute(
        &self,
        alternative: Alternative,
        method: MwuMethod,
        continuity: bool,
    ) -> MannWhitney {
        let (n1, n2, u1) = (self.n1, self.n2, self.u1);
        let u2 = (n1 * n2) as f64 - u1;
        // The upper tail is always the one evaluated.
        let u = match alternative {
            Alternative::Greater => u1,
            Alternative::Less => u2,
            Alternative::TwoSided => u1.max(u2),
        };
        let upper_tail = match method {
            MwuMethod::Exact => sf_from_pmf(&exact_null_pmf(n1, n2), u),
            MwuMethod::Asymptotic => {
                let sigma = sigma_u(n1, n2, &self.ties);
                if sigma <= 0.0 {
                    // Every value tied: the permutation distribution is a point mass.
                    1.0
                } else {
                    let cc = if continuity { 0.5 } else { 0.0 };
                    let z = (u - (n1 * n2) as f64 / 2.0 - cc) / sigma;
                    Normal::standard().sf(z)
                }
            }
        };
        let sides = if alternative == Alternative::TwoSided {
            2.0
        } else {
            1.0
        };
        let p_value = (sides * upper_tail).min(1.0);
        MannWhitney {
            u1,
            p_value,
            method,
        }
    }
}

/// Most differences selected among in place ([`PairwiseDifferences::kth`]): 32 KiB of keys.
const SELECT_IN_PLACE_MAX: usize = 4096;

/// Candidates drawn to choose the pivots of one round of [`PairwiseDifferences::kth_by_walks`].
const PIVOT_SAMPLE: usize = 64;

/// How many places of the sorted draw either side of the k-th's the two pivots are: about
/// one and a half standard deviations of that place, so that the k-th falls between them
/// about seven times in eight.
const PIVOT_MARGIN: usize = 6;

/// An integer that orders as [`f64::total_cmp`] orders `v` (the same transform); its own
/// inverse.
fn total_order_key(v: f64) -> i64 {
    let bits = v.to_bits() as i64;
    bits ^ (((bits >> 63) as u64) >> 1) as i64
}

fn from_total_order_key(key: i64) -> f64 {
    f64::from_bits((key ^ (((key >> 63) as u64) >> 1) as i64) as u64)
}

/// The m·n pairwise differences x_i − y_j of two samples, held as the two samples sorted:
/// their order statistics are found by selection, without materialising the differences
/// (O(m + n) memory, O((m + n) log(m·n)) expected time per selection).
///
/// Rounded subtraction is monotone, so with x ascending and y descending the difference
/// `x[i] - y[j]` (as computed in f64) does not decrease along either index, also under
/// `f64::total_cmp` with signed zeros: a matrix sorted by rows and by columns. The selection is
/// Monahan's for such a matrix: each row keeps the range of its entries that may still be the
/// k-th; a pivot drawn from those candidates is counted against every row in one staircase
/// walk, and the rows' ranges shrink to the side that holds the k-th, until the candidates
/// are few enough (m + n) to select among directly. The answer is one of the computed
/// differences, the same bits as sorting all of them.
///
/// Up to `SELECT_IN_PLACE_MAX` differences (a few dozen repetitions a side, the usual case)
/// are instead written out for each selection into a reused buffer and partitioned there,
/// which costs less than the walks at that size; the answers are the same bits.
#[derive(Debug, Clone)]
pub struct PairwiseDifferences {
    xs: Vec<f64>,
    ys: Vec<f64>,
}

impl PairwiseDifferences {
    /// None when either side is empty or holds a non-finite value.
    pub fn new(x: &[f64], y: &[f64]) -> Option<PairwiseDifferences> {
        valid_pair(x, y).then(|| PairwiseDifferences {
            xs: sorted(x),
            ys: sorted(y),
        })
    }

    /// m·n, the number of differences.
    pub fn len(&self) -> usize {
        self.xs.len() * self.ys.len()
    }

    /// Always false: both samples are non-empty.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Entry (i, c) of the matrix: x_i minus the c-th largest y.
    fn at(&self, i: usize, c: usize) -> f64 {
        self.xs[i] - self.ys[self.ys.len() - 1 - c]
    }

    /// For each row, into `out`, the number of its entries below `p` (or at most `p` when
    /// `inclusive`) in the total order; returns their sum. Rows do not decrease downwards,
    /// so the counts do not increase and one walk finds them all.
    fn counts(&self, p: f64, inclusive: bool, out: &mut [usize]) -> usize {
        let mut c = self.ys.len();
        let mut total = 0;
        for (i, slot) in out.iter_mut().enumerate() {
            while c > 0 {
                let order = self.at(i, c - 1).total_cmp(&p);
                if order.is_lt() || (inclusive && order.is_eq()) {
                    break;
                }
                c -= 1;
            }
            *slot = c;
            total += c;
        }
        total
    }

    /// The k-th smallest difference, 1-indexed; None unless 1 <= k <= m·n.
    pub fn kth(&self, k: usize) -> Option<f64> {
        if k == 0 || k > self.len() {
            return None;
        }
        Some(if self.len() <= SELECT_IN_PLACE_MAX {
            self.kth_in_place(k)
        } else {
            self.kth_by_walks(k)
        })
    }

    /// The `low`-th and `high`-th smallest differences, 1-indexed, `low <= high` (an
    /// interval's ends); None unless both are in 1..=m·n. One pass fills the keys for both.
    pub fn kth_pair(&self, low: usize, high: usize) -> Option<(f64, f64)> {
        if low == 0 || low > high || high > self.len() {
            return None;
        }
        if self.len() > SELECT_IN_PLACE_MAX {
            return Some((self.kth_by_walks(low), self.kth_by_walks(high)));
        }
        Some(self.with_keys(|keys| {
            let (_, low_key, above) = keys.select_nth_unstable(low - 1);
            let low_key = *low_key;
            // Everything from `low` up is in `above`, in no order: the high end is among it.
            let high_key = if high == low {
                low_key
            } else {
                *above.select_nth_unstable(high - low - 1).1
            };
            (
                from_total_order_key(low_key),
                from_total_order_key(high_key),
            )
        }))
    }

    /// The k-th (valid) by selection over every difference (see
    /// [`PairwiseDifferences::with_keys`]).
    fn kth_in_place(&self, k: usize) -> f64 {
        self.with_keys(|keys| from_total_order_key(*keys.select_nth_unstable(k - 1).1))
    }

    /// Runs `select` over every difference, written as keys that order as [`f64::total_cmp`]
    /// does into a buffer kept for the next call: for a few dozen repetitions a side, a
    /// partition of a few kilobytes of integers is cheaper than the staircase walks.
    fn with_keys<T>(&self, select: impl FnOnce(&mut [i64]) -> T) -> T {
        thread_local! {
            static KEYS: std::cell::RefCell<Vec<i64>> = const { std::cell::RefCell::new(Vec::new()) };
        }
        KEYS.with(|keys| {
            let mut keys = keys.borrow_mut();
            keys.clear();
            for &x in &self.xs {
                keys.extend(self.ys.iter().map(|&y| total_order_key(x - y)));
            }
            select(&mut keys)
        })
    }

    /// The k-th (valid) by Monahan's selection (see [`PairwiseDifferences`]), its pivots
    /// drawn as Floyd and Rivest draw theirs: of [`PIVOT_SAMPLE`] random candidates, sorted,
    /// the two [`PIVOT_MARGIN`] places either side of where the k-th falls among them. Most
    /// often the k-th lies between the two and a fifth of the candidates is left after two
    /// walks each, where one random pivot left about three quarters: 16,000 metrics of 500
    /// samples a side compared in a third of the time. Either pivot is counted as a single
    /// random pivot was, so the answer is the same and any draw ends.
    fn kth_by_walks(&self, k: usize) -> f64 {
        let (m, n) = (self.xs.len(), self.ys.len());
        // Row i's candidates are columns lo[i]..hi[i]: entries above the last pivot found to
        // lie below the k-th and below the last one found to lie above it.
        let mut lo = vec![0; m];
        let mut hi = vec![n; m];
        let mut scratch = vec![0; m];
        // Candidates in rows 0..=i, for drawing the r-th candidate by bisection.
        let mut ends = vec![0; m];
        // Entries known to come before the candidates (the sum of lo).
        let mut before = 0;
        // A fixed seed for pivots: the answer does not depend on them, only the time.
        let mut rng = inference::Xorshift::new(0x9E37_79B9_7F4A_7C15_u64 ^ k as u64);
        'narrow: loop {
            let mut total = 0;
            for ((end, l), h) in ends.iter_mut().zip(&lo).zip(&hi) {
                total += h - l;
                *end = total;
            }
            if total <= m + n {
                let mut candidates = Vec::with_capacity(total);
                for (i, (&l, &h)) in lo.iter().zip(&hi).enumerate() {
                    candidates.extend((l..h).map(|c| self.at(i, c)));
                }
                let (_, kth, _) = candidates.select_nth_unstable_by(k - 1 - before, f64::total_cmp);
                return *kth;
            }
            let mut sample = [0.0; PIVOT_SAMPLE];
            for s in &mut sample {
                let r = (rng.next_u64() % total as u64) as usize;
                let row = ends.partition_point(|&end| end <= r);
                let first = if row == 0 { 0 } else { ends[row - 1] };
                *s = self.at(row, lo[row] + r - first);
            }
            sample.sort_unstable_by(f64::total_cmp);
            // Where the k-th falls among the sorted sample.
            let at = (k - 1 - before) * PIVOT_SAMPLE / total;
            let low = sample[at.saturating_sub(PIVOT_MARGIN)];
            let high = sample[(at + PIVOT_MARGIN).min(PIVOT_SAMPLE - 1)];
            let pivots = [Some(low), (high.total_cmp(&low).is_gt()).then_some(high)];
            for pivot in pivots.into_iter().flatten() {
                // A candidate still: the high one is above the low one, whose rows' ranges
                // only lost entries at or below it.
                if self.counts(pivot, false, &mut scratch) >= k {
                    // The k-th is below the pivot.
                    std::mem::swap(&mut hi, &mut scratch);
                    continue 'narrow;
                }
                let at_most = self.counts(pivot, true, &mut scratch);
                if at_most < k {
                    // The k-th is above the pivot.
                    std::mem::swap(&mut lo, &mut scratch);
                    before = at_most;
                    continue;
                }
                return pivot;
            }
        }
    }

    /// The (k+1)-th smallest difference, given `v`, the k-th: `v` again when it repeats,
    /// else the smallest difference above it. One walk.
    fn successor(&self, v: f64, k: usize) -> Option<f64> {
        let mut at_most = vec![0; self.xs.len()];
        if self.counts(v, true, &mut at_most) > k {
            return Some(v);
        }
        at_most
            .iter()
            .enumerate()
            .filter(|(_, c)| **c < self.ys.len())
            .map(|(i, &c)| self.at(i, c))
            .min_by(f64::total_cmp)
    }

    /// The median (as [`PairwiseDifferences::median`]) and, for `ranks` `(low, high)` with
    /// `low` at most and `high` at least the median's rank (an interval's ends), the `low`-th
    /// and `high`-th smallest differences. Where the differences are few enough to write out,
    /// one pass fills them and the ends are selected on either side of the median, in half the
    /// differences each; the answers are the same bits as [`PairwiseDifferences::median`] and
    /// [`PairwiseDifferences::kth_pair`].
    fn median_and_pair(&self, ranks: Option<(usize, usize)>) -> (f64, Option<(f64, f64)>) {
        let len = self.len();
        let ranks = ranks.filter(|&(low, high)| low >= 1 && low <= high && high <= len);
        // 0-based position of the median (the lower middle one when m·n is even).
        let mid = (len - 1) / 2;
        let straddles = ranks.is_none_or(|(low, high)| low - 1 <= mid && high > mid);
        if len > SELECT_IN_PLACE_MAX || !straddles {
            let pair = ranks.and_then(|(low, high)| self.kth_pair(low, high));
            return (self.median(), pair);
        }
        self.with_keys(|keys| {
            let (below, mid_key, above) = keys.select_nth_unstable(mid);
            let mid_key = *mid_key;
            let median = if len % 2 == 1 {
                from_total_order_key(mid_key)
            } else {
                // The upper middle one is the smallest above (itself again on a tie).
                let upper = above.iter().copied().min().unwrap_or(mid_key);
                (from_total_order_key(mid_key) + from_total_order_key(upper)) / 2.0
            };
            let pair = ranks.map(|(low, high)| {
                let low = if low - 1 == mid {
                    mid_key
                } else {
                    *below.select_nth_unstable(low - 1).1
                };
                let high = if high - 1 == mid {
                    mid_key
                } else {
                    *above.select_nth_unstable(high - 1 - mid - 1).1
                };
                (from_total_order_key(low), from_total_order_key(high))
            });
            (median, pair)
        })
    }

    /// The median of the differences (the mean of the two middle ones when m·n is even).
    pub fn median(&self) -> f64 {
        let len = self.len();
        if len % 2 == 1 {
            return self.kth(len / 2 + 1).unwrap_or(f64::NAN);
        }
        let lower = self.kth(len / 2).unwrap_or(f64::NAN);
        let upper = self.successor(lower, len / 2).unwrap_or(f64::NAN);
        (lower + upper) / 2.0
    }
}

/// The critical rank qu of the two-sided interval at `confidence` for samples of sizes m and
/// n with the pooled sample's tie groups, its achieved confidence and how it was found:
/// exact when there are no ties and m·n <= 10_000, else the normal approximation. None when
/// the confidence is not in (0, 1) or not attainable (qu would be 0).
fn critical_rank(
    m: usize,
    n: usize,
    ties: &[usize],
    confidence: f64,
) -> Option<(usize, f64, MwuMethod)> {
    if !(confidence > 0.0 && confidence < 1.0) {
        return None;
    }
    let mn = m * n;
    let alpha = 1.0 - confidence;
    if ties.is_empty() && mn <= EXACT_AUTO_LIMIT {
        use std::cell::RefCell;
        use std::collections::HashMap;
        type Cache = RefCell<HashMap<(usize, usize, u64), Option<(usize, f64)>>>;
        thread_local! {
            // Every metric of a run asks for the same few sizes and levels.
            static CACHE: Cache = RefCell::new(HashMap::new());
        }
        let key = (m.max(n), m.min(n), confidence.to_bits());
        let found = CACHE.with(|c| c.borrow().get(&key).copied());
        let found = found.unwrap_or_else(|| {
            let computed = exact_critical_rank(m, n, alpha);
            CACHE.with(|c| c.borrow_mut().insert(key, computed));
            computed
        });
        found.map(|(qu, achieved)| (qu, achieved, MwuMethod::Exact))
    } else {
        let sigma = sigma_u(m, n, ties);
        let mu = mn as f64 / 2.0;
        if sigma <= 0.0 {
            // All values tied, so every difference equals the shift.
            return Some((1, 1.0, MwuMethod::Asymptotic));
        }
        let normal = Normal::standard();
        let z = normal.inverse_cdf(1.0 - alpha / 2.0);
        let q = (mu - z * sigma).floor();
        if q < 1.0 {
            return None;
        }
        // Normal approximation (with continuity) of 1 - 2 P(U <= qu - 1).
        let achieved = 1.0 - 2.0 * normal.cdf((q - 0.5 - mu) / sigma);
        Some((q as usize, achieved, MwuMethod::Asymptotic))
    }
}

/// The exact branch of [`critical_rank`]: qu and the achieved confidence, without ties.
fn exact_critical_rank(m: usize, n: usize, alpha: f64) -> Option<(usize, f64)> {
    let mn = m * n;
    let pmf = exact_null_pmf(m, n);
    // Smallest q with P(U <= q) >= alpha/2 (R's qwilcox, same fuzz).
    let target = alpha / 2.0 - 10.0 * f64::EPSILON;
    let mut cum = 0.0;
    let qu = pmf.iter().position(|p| {
        cum += p;
        cum >= target
    });
    let qu = qu.unwrap_or(mn);
    if qu == 0 {
        return None;
    }
    let achieved = 1.0 - 2.0 * cdf_from_pmf(&pmf, qu - 1);
    Some((qu, achieved))
}

/// Hodges–Lehmann shift with its distribution-free interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ShiftEstimate {
    pub shift: f64,
    pub low: f64,
    pub high: f64,
    pub achieved_confidence: f64,
    pub method: MwuMethod,
}

/// Two samples prepared for the Hodges–Lehmann shift of x − y: the sorted samples, the tie
/// groups of the pooled sample and the point estimate, computed once, so that intervals at
/// several confidence levels cost a few selections each.
#[derive(Debug, Clone)]
pub struct HodgesLehmann {
    diffs: PairwiseDifferences,
    ties: Vec<usize>,
    shift: f64,
}

impl HodgesLehmann {
    /// The samples prepared, with the interval at `confidence` found in the selection that
    /// finds the estimate: the first interval every comparison needs. None
    /// when either side is empty or holds a non-finite value; the estimate is None where the
    /// interval is not attainable (see [`HodgesLehmann::estimate`]).
    pub fn with_interval(
        x: &[f64],
        y: &[f64],
        confidence: f64,
    ) -> Option<(HodgesLehmann, Option<ShiftEstimate>)> {
        let diffs = PairwiseDifferences::new(x, y)?;
        let ties = tie_groups(&diffs.xs, &diffs.ys);
        let (m, n) = (diffs.xs.len(), diffs.ys.len());
        let critical = critical_rank(m, n, &ties, confidence);
        let ranks = critical.map(|(qu, _, _)| (qu, m * n + 1 - qu));
        let (shift, pair) = diffs.median_and_pair(ranks);
        let estimate = critical
            .zip(pair)
            .map(
                |((_, achieved_confidence, method), (low, high))| ShiftEstimate {
                    shift,
                    low,
                    high,
                    achieved_confidence,
                    method,
                },
            );
        Some((HodgesLehmann { diffs, ties, shift }, estimate))
    }

    /// The two samples, each sorted (x first).
    pub fn sorted_samples(&self) -> (&[f64], &[f64]) {
        (&self.diffs.xs, &self.diffs.ys)
    }

    /// The estimate: the median of the pairwise differences.
    pub fn shift(&self) -> f64 {
        self.shift
    }

    /// Whether the two-sided interval at `confidence` is attainable with these sample sizes
    /// (see [`hodges_lehmann`]); no selection is needed to tell.
    pub fn attainable(&self, confidence: f64) -> bool {
        let (m, n) = (self.diffs.xs.len(), self.diffs.ys.len());
        critical_rank(m, n, &self.ties, confidence).is_some()
    }

    /// The estimate with its two-sided interval at `confidence` (see [`hodges_lehmann`]).
    pub fn estimate(&self, confidence: f64) -> Option<ShiftEstimate> {
        let (m, n) = (self.diffs.xs.len(), self.diffs.ys.len());
        let (qu, achieved_confidence, method) = critical_rank(m, n, &self.ties, confidence)?;
        let (low, high) = self.diffs.kth_pair(qu, m * n + 1 - qu)?;
        Some(ShiftEstimate {
            shift: self.shift,
            low,
            high,
            achieved_confidence,
            method,
        })
    }
}

/// Hodges–Lehmann estimate of the shift x - y (median of pairwise differences
/// x_i - y_j) with the distribution-free two-sided confidence interval at
/// `confidence` (e.g. 0.99), following R's wilcox.test(conf.int=TRUE): exact
/// critical rank from the exact null distribution when there are no ties and
/// m*n <= 10_000, else the normal-approximation critical rank with a
/// tie-corrected sigma. Returns None when inputs are empty or non-finite, when
/// `confidence` is not in (0, 1), and when the critical rank would be 0 (the
/// requested confidence is not attainable with these sample sizes). The
/// differences are never materialised (see [`PairwiseDifferences`]); for
/// intervals at several levels, prepare a [`HodgesLehmann`] once.
pub fn hodges_lehmann(x: &[f64], y: &[f64], confidence: f64) -> Option<ShiftEstimate> {
    if !(valid_pair(x, y) && confidence > 0.0 && confidence < 1.0) {
        return None;
    }
    HodgesLehmann::with_interval(x, y, confidence)?.1
}

/// The two-sided interval of [`hodges_lehmann`] at `confidence` alone, without the selection
/// that finds the estimate: for an interval asked for again, at a level known only later, of
/// samples whose estimate is known already. The same bounds, and None in the same cases.
pub fn hodges_lehmann_interval(x: &[f64], y: &[f64], confidence: f64) -> Option<(f64, f64)> {
    if !(confidence > 0.0 && confidence < 1.0) {
        return None;
    }
    let diffs = PairwiseDifferences::new(x, y)?;
    let ties = tie_groups(&diffs.xs, &diffs.ys);
    let (m, n) = (diffs.xs.len(), diffs.ys.len());
    let (qu, _, _) = critical_rank(m, n, &ties, confidence)?;
    diffs.kth_pair(qu, m * n + 1 - qu)
}

#[cfg(test)]
mod tests;
