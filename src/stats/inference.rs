//! Inference around the rank tests: multiplicity, power, history and repetition plans.
//!
//! A gate makes many decisions per run and may look at the data more than once, so a single
//! test's level says little about how often the gate cries wolf. This module holds the pieces
//! that turn per-test p-values into a gate whose false-alarm rate is bounded: the Holm and
//! Benjamini–Hochberg adjustments across a run's gated metrics, the look schedule whose
//! levels split alpha (Bonferroni over looks), the minimum detectable effect that says what a
//! run could have seen, and Bencher's prediction interval for baselines stored by other jobs.
//! Formulas and test vectors (the scipy-generated `tests/fixtures/stats_vectors.json`) are
//! described in `docs/statistics.md`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use statrs::distribution::{ChiSquared, Continuous, ContinuousCDF, Normal, StudentsT};

/// Scale factor that turns a median absolute deviation into a normal standard deviation.
pub const MAD_TO_SIGMA: f64 = 1.482_602_218_505_602;

/// Power at which the minimum detectable effect is stated.
pub const MDE_POWER: f64 = 0.8;

/// How p-values are adjusted across the gated metrics of a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Correction {
    /// Benjamini–Hochberg step-up: controls the false discovery rate (and, when nothing
    /// regressed, the chance that the gate fails) under independence or positive dependence.
    #[default]
    Bh,
    /// Holm step-down: controls the family-wise error rate under any dependence.
    Holm,
}

impl Correction {
    pub fn as_str(self) -> &'static str {
        match self {
            Correction::Bh => "bh",
            Correction::Holm => "holm",
        }
    }
}

/// Adjusted p-values, in the input order; compare them with the family level. NaN inputs are
/// treated as 1.
pub fn adjust(p: &[f64], correction: Correction) -> Vec<f64> {
    let m = p.len();
    let clean: Vec<f64> = p
        .iter()
        .map(|v| if v.is_nan() { 1.0 } else { v.clamp(0.0, 1.0) })
        .collect();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| clean[a].total_cmp(&clean[b]));
    let mut out = vec![1.0; m];
    match correction {
        Correction::Holm => {
            let mut running: f64 = 0.0;
            for (k, &i) in order.iter().enumerate() {
                running = running.max(((m - k) as f64 * clean[i]).min(1.0));
                out[i] = running;
            }
        }
        Correction::Bh => {
            let mut running: f64 = 1.0;
            for (k, &i) in order.iter().enumerate().rev() {
                running = running.min((m as f64 * clean[i] / (k + 1) as f64).min(1.0));
                out[i] = running;
            }
        }
    }
    out
}

/// Log-scale medians of earlier jobs per (benchmark, metric): the input of the
/// prediction-interval model, from result files or from the history store.
pub type JobMedians = std::collections::BTreeMap<(String, String), Vec<f64>>;

/// The unadjusted one-sided level behind the decisions of a family of `m` tests whose adjusted
/// p-values are `adjusted`: with `R` of them at most `alpha`, every rejected test has a raw p
/// at most `alpha · R / m` (Benjamini–Hochberg) or `alpha / (m − R + 1)` (Holm). With no
/// rejection it is the level a single rejection would face, `alpha / m` for both. Intervals
/// shown at two-sided level `1 − 2 × this` agree with the verdicts: a rejected regression's
/// interval excludes no change (for BH these are Benjamini–Yekutieli's FCR-adjusted intervals).
pub fn decision_level(adjusted: &[f64], alpha: f64, correction: Correction) -> f64 {
    let m = adjusted.len().max(1) as f64;
    let rejected = adjusted.iter().filter(|p| **p <= alpha).count().max(1) as f64;
    match correction {
        Correction::Bh => alpha * rejected / m,
        Correction::Holm => alpha / (m - rejected + 1.0),
    }
}

/// The largest raw level at which the correction could reject one member of a family of
/// `family` tests at `alpha`: Benjamini–Hochberg's step-up reaches alpha·k/m, so alpha itself
/// when all m are rejected; Holm's step-down must first reject at alpha / m. A test whose
/// smallest attainable p lies above it can never be decided, whatever the other members do.
pub fn largest_level(alpha: f64, family: usize, correction: Correction) -> f64 {
    match correction {
        Correction::Bh => alpha,
        Correction::Holm => alpha / family.max(1) as f64,
    }
}

/// Robust noise of a sample on the log scale: 1.4826 × MAD of ln(values), falling back to the
/// sample standard deviation of the logs when more than half the values are equal. None when
/// fewer than two values or a value is not positive.
pub fn log_noise(values: &[f64]) -> Option<f64> {
    if values.len() < 2 || values.iter().any(|v| !(v.is_finite() && *v > 0.0)) {
        return None;
    }
    let logs: Vec<f64> = values.iter().map(|v| v.ln()).collect();
    let s = crate::stats::summarize(&logs)?;
    Some(if s.mad > 0.0 {
        MAD_TO_SIGMA * s.mad
    } else {
        s.std_dev
    })
}

/// [`log_noise`] from the logs of a sample already sorted, without taking logs or sorting
/// again; None where [`log_noise`] needs the sample itself: fewer than two values, or a MAD of
/// zero (its fallback sums the logs in their measured order). Otherwise the same bits.
pub fn log_noise_of_sorted_logs(sorted_logs: &[f64]) -> Option<f64> {
    if sorted_logs.len() < 2 {
        return None;
    }
    let median = crate::stats::median_sorted(sorted_logs);
    let mad = crate::stats::mad_sorted(sorted_logs, median);
    (mad > 0.0).then_some(MAD_TO_SIGMA * mad)
}

/// Pooled log-scale noise of two samples (root mean square of the two).
pub fn pooled_log_noise(a: &[f64], b: &[f64]) -> Option<f64> {
    Some(pooled_noise(log_noise(a)?, log_noise(b)?))
}

/// The root mean square of two samples' noise.
pub fn pooled_noise(a: f64, b: f64) -> f64 {
    ((a * a + b * b) / 2.0).sqrt()
}

/// The log-scale noise implied by the width of a two-sided interval for a relative change
/// (`[lo, hi]` at `confidence`, from n1 and n2 values): the interval's standard error,
/// (ln(1+hi) − ln(1+lo)) / (2·z), divided by √(1/n1 + 1/n2). It sees what a robust scale
/// estimate ignores: a minority of spiky repetitions still widens a rank interval.
pub fn noise_from_interval(ci: [f64; 2], confidence: f64, n1: usize, n2: usize) -> Option<f64> {
    let [lo, hi] = ci;
    if lo <= -1.0 || hi < lo || n1 == 0 || n2 == 0 || !(confidence > 0.0 && confidence < 1.0) {
        return None;
    }
    let z = Normal::standard().inverse_cdf(1.0 - (1.0 - confidence) / 2.0);
    let se = (hi.ln_1p() - lo.ln_1p()) / (2.0 * z);
    Some(se / (1.0 / n1 as f64 + 1.0 / n2 as f64).sqrt())
}

/// P(T' > t) for a noncentral t with `df` degrees of freedom and noncentrality `lambda`,
/// by integrating P(Z + λ > t·√(V/df)) over V ~ χ²(df) with Simpson's rule.
fn noncentral_t_sf(t: f64, df: f64, lambda: f64) -> f64 {
    let chi = ChiSquared::new(df).expect("df > 0");
    let normal = Normal::standard();
    let upper = df + 14.0 * (2.0 * df).sqrt() + 30.0;
    let steps = 4000;
    let h = upper / steps as f64;
    let f = |v: f64| {
        let density = if v == 0.0 {
            if df == 2.0 { 0.5 } else { 0.0 }
        } else {
            chi.pdf(v)
        };
        density * normal.sf(t * (v / df).sqrt() - lambda)
    };
    let mut sum = f(0.0) + f(upper);
    for i in 1..steps {
        let w = if i % 2 == 1 { 4.0 } else { 2.0 };
        sum += w * f(i as f64 * h);
    }
    (sum * h / 3.0).clamp(0.0, 1.0)
}

/// Smallest true shift (log scale) that a level-`alpha` t-test on samples of sizes `n1`, `n2`
/// with noise `sigma` (log scale) detects with probability `power`: the exact noncentral-t
/// computation of docs/statistics.md (pooled df = n1 + n2 − 2). `two_sided` splits alpha over
/// both tails. None for fewer than two values per side or levels outside (0, 1).
pub fn min_detectable_shift(
    sigma: f64,
    n1: usize,
    n2: usize,
    alpha: f64,
    power: f64,
    two_sided: bool,
) -> Option<f64> {
    if n1 < 2 || n2 < 2 || !(alpha > 0.0 && alpha < 1.0) || !(power > 0.0 && power < 1.0) {
        return None;
    }
    if !(sigma.is_finite() && sigma >= 0.0) {
        return None;
    }
    let lambda = noncentrality_for_power(n1 + n2 - 2, alpha, power, two_sided)?;
    Some(lambda * sigma * (1.0 / n1 as f64 + 1.0 / n2 as f64).sqrt())
}

/// The noncentrality at which the t-test with `df` degrees of freedom reaches `power`;
/// cached, since it depends on neither the noise nor the data.
fn noncentrality_for_power(df: usize, alpha: f64, power: f64, two_sided: bool) -> Option<f64> {
    use std::cell::RefCell;
    use std::collections::HashMap;
    type Key = (usize, u64, u64, bool);
    thread_local! {
        static CACHE: RefCell<HashMap<Key, Option<f64>>> = RefCell::new(HashMap::new());
    }
    let key = (df, alpha.to_bits(), power.to_bits(), two_sided);
    if let Some(hit) = CACHE.with(|c| c.borrow().get(&key).copied()) {
        return hit;
    }
    let value = solve_noncentrality(df as f64, alpha, power, two_sided);
    CACHE.with(|c| c.borrow_mut().insert(key, value));
    value
}

fn solve_noncentrality(df: f64, alpha: f64, power: f64, two_sided: bool) -> Option<f64> {
    let tail = if two_sided { alpha / 2.0 } else { alpha };
    let t = StudentsT::new(0.0, 1.0, df).ok()?;
    let crit = t.inverse_cdf(1.0 - tail);
    let reject = |lambda: f64| {
        let upper = noncentral_t_sf(crit, df, lambda);
        if two_sided {
            // The far tail adds a negligible amount for any useful power; included for exactness.
            upper + noncentral_t_sf(crit, df, -lambda)
        } else {
            upper
        }
    };
    let (mut lo, mut hi) = (0.0, 1.0);
    while reject(hi) < power {
        hi *= 2.0;
        if hi > 1e4 {
            return None;
        }
    }
    for _ in 0..60 {
        let mid = (lo + hi) / 2.0;
        if reject(mid) < power {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Some((lo + hi) / 2.0)
}

/// The minimum detectable relative change (0.02 is 2 %) for a one-sided test at `alpha` with
/// 80 % power between samples of `sizes` (base, head), from their observed noise: the larger
/// of the robust log-scale noise (`robust`, [`pooled_log_noise`]) and, when given, the noise
/// implied by the comparison's interval (`ci` at `confidence`), so that a few spikes cannot
/// make the figure optimistic.
pub fn min_detectable_change(
    robust: f64,
    sizes: (usize, usize),
    alpha: f64,
    interval: Option<([f64; 2], f64)>,
) -> Option<f64> {
    let (n_base, n_head) = sizes;
    let implied = interval
        .and_then(|(ci, confidence)| noise_from_interval(ci, confidence, n_base, n_head))
        .unwrap_or(0.0);
    let sigma = robust.max(implied);
    min_detectable_shift(sigma, n_base, n_head, alpha, MDE_POWER, false).map(f64::exp_m1)
}

/// A Bencher-style prediction interval for one new job's summary, given the summaries of K
/// earlier jobs: mean ± t_{K−1}(level) · s · √(1 + 1/K), so the job-to-job spread is part of
/// the width (docs/statistics.md).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct History {
    pub mean: f64,
    pub sd: f64,
    pub jobs: usize,
}

impl History {
    /// None with fewer than two jobs (no spread to estimate) or non-finite values.
    pub fn new(jobs: &[f64]) -> Option<History> {
        if jobs.len() < 2 || jobs.iter().any(|v| !v.is_finite()) {
            return None;
        }
        let s = crate::stats::summarize(jobs)?;
        Some(History {
            mean: s.mean,
            sd: s.std_dev,
            jobs: jobs.len(),
        })
    }

    fn t(&self) -> StudentsT {
        StudentsT::new(0.0, 1.0, (self.jobs - 1) as f64).expect("jobs >= 2")
    }

    /// Standard error of a new job's distance from the history mean.
    pub fn scale(&self) -> f64 {
        self.sd * (1.0 + 1.0 / self.jobs as f64).sqrt()
    }

    /// Upper prediction limit at one-sided `level` (e.g. 0.99).
    pub fn upper_limit(&self, level: f64) -> f64 {
        self.mean + self.t().inverse_cdf(level) * self.scale()
    }

    /// Lower prediction limit at one-sided `level`.
    pub fn lower_limit(&self, level: f64) -> f64 {
        self.mean - self.t().inverse_cdf(level) * self.scale()
    }

    /// One-sided p-value of a new value being above the history (P(T ≥ t)); 1 − it for below.
    pub fn p_above(&self, value: f64) -> f64 {
        let scale = self.scale();
        if scale <= 0.0 {
            return if value > self.mean { 0.0 } else { 1.0 };
        }
        self.t().sf((value - self.mean) / scale)
    }

    /// Half-width of the two-sided interval for `value − mean` at `confidence`.
    pub fn half_width(&self, confidence: f64) -> f64 {
        self.t().inverse_cdf(1.0 - (1.0 - confidence) / 2.0) * self.scale()
    }

    /// Smallest shift of one new job that the one-sided prediction test at `alpha` detects
    /// with 80 % power (Student quantiles; the noncentral correction is ignored here).
    pub fn min_detectable_shift(&self, alpha: f64) -> f64 {
        let t = self.t();
        (t.inverse_cdf(1.0 - alpha) + t.inverse_cdf(MDE_POWER)) * self.scale()
    }
}

/// Welch's t-test on two summaries (mean, standard deviation, count) whose samples were not
/// kept: the difference of the means over its standard error, with Welch–Satterthwaite degrees
/// of freedom (scipy's `ttest_ind_from_stats(equal_var=False)`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Welch {
    /// Head's mean minus base's.
    pub difference: f64,
    /// Standard error of the difference.
    pub se: f64,
    pub df: f64,
}

impl Welch {
    /// From `(mean, sd, n)` of each side; None when a side has fewer than two samples, a
    /// figure is not finite or negative, or both standard deviations are zero.
    pub fn new(base: (f64, f64, f64), head: (f64, f64, f64)) -> Option<Welch> {
        let usable =
            |(m, s, n): (f64, f64, f64)| m.is_finite() && s.is_finite() && s >= 0.0 && n >= 2.0;
        if !(usable(base) && usable(head)) {
            return None;
        }
        let (vb, vh) = (base.1 * base.1 / base.2, head.1 * head.1 / head.2);
        let se = (vb + vh).sqrt();
        let df = (vb + vh).powi(2) / (vb * vb / (base.2 - 1.0) + vh * vh / (head.2 - 1.0));
        (se > 0.0 && df.is_finite()).then_some(Welch {
            difference: head.0 - base.0,
            se,
            df,
        })
    }

    fn t(&self) -> StudentsT {
        StudentsT::new(0.0, 1.0, self.df).expect("df > 0")
    }

    /// One-sided p-values of the head's mean being above the base's (P(T ≥ t)) and below it
    /// (P(T ≤ t)), each from its own tail: 1 − a tiny p would round to 0.
    pub fn p_above_below(&self) -> (f64, f64) {
        let (t, at) = (self.t(), self.difference / self.se);
        (t.sf(at), t.cdf(at))
    }

    /// Half-width of the two-sided interval of the difference at `confidence`.
    pub fn half_width(&self, confidence: f64) -> f64 {
        self.t().inverse_cdf(1.0 - (1.0 - confidence) / 2.0) * self.se
    }

    /// Smallest difference the one-sided test at `alpha` detects with 80 % power (Student
    /// quantiles, as [`History::min_detectable_shift`]).
    pub fn min_detectable_difference(&self, alpha: f64) -> f64 {
        let t = self.t();
        (t.inverse_cdf(1.0 - alpha) + t.inverse_cdf(MDE_POWER)) * self.se
    }
}

/// Repetitions per side between two looks of an adaptive run unless `repetitions.step` says
/// otherwise: a look after every A B B A block.
pub const DEFAULT_LOOK_STEP: u32 = 2;

/// The most looks a plan takes: a longer plan's step is raised to fit. The boundary's
/// computation grows with the looks, and looking more often than every few percent of the
/// plan buys little.
pub const MAX_LOOKS: usize = 64;

/// The schedule of an adaptive run's looks, recorded with each look so that a comparison of
/// the results tests at the level the plan set: looks after `min`, `min + step`, … repetitions
/// per side, the last at `max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub struct Schedule {
    pub min: u32,
    pub step: u32,
    pub max: u32,
}

/// The looks of an adaptive run and the boundary they are tested against.
///
/// A plan made by [`LookPlan::new`] looks every `step` repetitions per side from `min` to
/// `max` and tests every look at one nominal level (a constant, Pocock-type boundary), chosen
/// so that the chance of crossing it at any look is the level asked for: under normal theory
/// the standardized statistic at n₁ < n₂ … repetitions is a Brownian motion observed at those
/// times, and the crossing probability is computed by numerical integration
/// ([`LookPlan::sequential_p`]). Plans recorded before this boundary existed (looks without a
/// schedule) split alpha equally over their looks (Bonferroni). See docs/statistics.md.
#[derive(Debug, Clone, PartialEq)]
pub struct LookPlan {
    /// Repetitions per side at each look (empty for a recorded Bonferroni plan, whose looks
    /// were not recorded).
    pub looks: Vec<u32>,
    boundary: Boundary,
}

#[derive(Debug, Clone, PartialEq)]
enum Boundary {
    /// Each of this many looks at alpha / looks.
    Bonferroni(u32),
    /// One nominal level at every look; the crossing probabilities of its looks.
    Constant(std::sync::Arc<CrossingTable>),
}

impl LookPlan {
    /// Looks after `min`, `min + step`, … repetitions per side, the last at `max`; the step
    /// is raised where more than [`MAX_LOOKS`] looks would follow.
    pub fn new(min: u32, max: u32, step: u32) -> LookPlan {
        LookPlan::of_schedule(Schedule { min, step, max })
    }

    /// The plan a recorded schedule describes.
    pub fn of_schedule(schedule: Schedule) -> LookPlan {
        let Schedule { min, step, max } = schedule.normalized();
        let mut looks = vec![min];
        let mut n = min;
        while n < max {
            n = n.saturating_add(step).min(max);
            looks.push(n);
        }
        let boundary = if looks.len() == 1 {
            Boundary::Bonferroni(1)
        } else {
            Boundary::Constant(crossing_table(&looks))
        };
        LookPlan { looks, boundary }
    }

    /// A plan of `of` looks with alpha split equally (results recorded without a schedule).
    pub fn bonferroni(of: u32) -> LookPlan {
        LookPlan {
            looks: Vec::new(),
            boundary: Boundary::Bonferroni(of.max(1)),
        }
    }

    /// A single look: fixed repetitions.
    pub fn single() -> LookPlan {
        LookPlan::bonferroni(1)
    }

    /// The plan behind a benchmark's recorded looks: its schedule where recorded, else
    /// Bonferroni over the looks planned (one look where none were taken).
    pub fn of_recorded(schedule: Option<Schedule>, of: u32) -> LookPlan {
        match schedule {
            Some(s) if of > 1 => LookPlan::of_schedule(s),
            _ => LookPlan::bonferroni(of),
        }
    }

    /// The schedule, for a plan of more than one look made by [`LookPlan::new`].
    pub fn schedule(&self) -> Option<Schedule> {
        match self.boundary {
            Boundary::Constant(_) => Some(Schedule {
                min: self.looks[0],
                step: self.looks.get(1).map_or(1, |n| n - self.looks[0]),
                max: *self.looks.last().expect("a plan has a look"),
            }),
            Boundary::Bonferroni(_) => None,
        }
    }

    /// Number of looks K.
    pub fn count(&self) -> u32 {
        match self.boundary {
            Boundary::Bonferroni(of) => of,
            Boundary::Constant(_) => self.looks.len() as u32,
        }
    }

    /// The sequential p-value of a one-sided test whose smallest p over the looks taken is
    /// `p`: the chance, with no change, that some look of the plan reaches a p that small.
    /// Valid under any stopping rule that only stops early (a look not taken only makes it
    /// larger than it needed to be); `K · p` under Bonferroni, `p` with one look. Monotone.
    pub fn sequential_p(&self, p: f64) -> f64 {
        let p = if p.is_nan() { 1.0 } else { p.clamp(0.0, 1.0) };
        match &self.boundary {
            Boundary::Bonferroni(of) => (f64::from(*of) * p).min(1.0),
            Boundary::Constant(table) => {
                if p <= 0.0 {
                    return 0.0;
                }
                let bonferroni = (self.looks.len() as f64 * p).min(1.0);
                table.crossing(p).clamp(p, bonferroni)
            }
        }
    }

    /// The nominal one-sided level each look is tested at so that the whole plan holds
    /// `level`: the inverse of [`LookPlan::sequential_p`] (a raw p at most this has a
    /// sequential p at most `level`). `level / K` under Bonferroni.
    pub fn nominal_level(&self, level: f64) -> f64 {
        match &self.boundary {
            Boundary::Bonferroni(of) => level / f64::from(*of),
            Boundary::Constant(_) => {
                if level.is_nan() || level <= 0.0 {
                    return 0.0;
                }
                if level >= 1.0 {
                    return 1.0;
                }
                // Bisection on the log of p: sequential_p is monotone.
                let (mut lo, mut hi) = ((level / self.looks.len() as f64).ln(), level.ln());
                for _ in 0..80 {
                    let mid = 0.5 * (lo + hi);
                    if self.sequential_p(mid.exp()) <= level {
                        lo = mid;
                    } else {
                        hi = mid;
                    }
                }
                lo.exp()
            }
        }
    }

    /// The level each look is tested at for a plan-wide `alpha` ([`LookPlan::nominal_level`]).
    pub fn alpha_per_look(&self, alpha: f64) -> f64 {
        self.nominal_level(alpha)
    }
}

impl Schedule {
    /// The schedule as a plan runs it: `min` at least 1, `max` at least `min`, and the step
    /// at least 1 and large enough for at most [`MAX_LOOKS`] looks.
    pub fn normalized(self) -> Schedule {
        let min = self.min.max(1);
        let max = self.max.max(min);
        let span = max - min;
        let fit = span.div_ceil(MAX_LOOKS as u32 - 1);
        Schedule {
            min,
            step: self.step.max(1).max(fit),
            max,
        }
    }
}

/// The looks planned by the benchmarks of a run: one plan for most runs, several where
/// benchmarks declare their own repetitions. Its levels are the most conservative of them
/// (the largest sequential p, the smallest nominal level), so that one family can be adjusted
/// together (docs/statistics.md).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RunLooks {
    plans: Vec<LookPlan>,
}

impl RunLooks {
    /// Adds the plan of a benchmark's recorded looks (none: fixed repetitions).
    pub fn add(&mut self, schedule: Option<Schedule>, of: u32) {
        if of <= 1 {
            return;
        }
        let plan = LookPlan::of_recorded(schedule, of);
        if !self.plans.contains(&plan) {
            self.plans.push(plan);
        }
    }

    /// The most looks any benchmark planned (1 without looks).
    pub fn count(&self) -> u32 {
        self.plans.iter().map(LookPlan::count).max().unwrap_or(1)
    }

    /// The largest sequential p-value of `p` over the plans (`p` itself without looks).
    pub fn sequential_p(&self, p: f64) -> f64 {
        self.plans
            .iter()
            .map(|plan| plan.sequential_p(p))
            .fold(if p.is_nan() { 1.0 } else { p.clamp(0.0, 1.0) }, f64::max)
    }

    /// The smallest nominal level of `level` over the plans (`level` itself without looks).
    pub fn nominal_level(&self, level: f64) -> f64 {
        self.plans
            .iter()
            .map(|plan| plan.nominal_level(level))
            .fold(level, f64::min)
    }
}

/// The crossing probability of a constant boundary by a Brownian motion observed at the looks,
/// tabulated against the boundary's height z (`Φ̄(z)` is a single look's p).
#[derive(Debug)]
struct CrossingTable {
    /// ln P(some look's standardized statistic ≥ z) at z = 0, Z_STEP, 2·Z_STEP, … Z_MAX.
    log_crossing: Vec<f64>,
}

impl PartialEq for CrossingTable {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self, other) || self.log_crossing == other.log_crossing
    }
}

const Z_STEP: f64 = 0.1;
const Z_MAX: f64 = 8.0;

impl CrossingTable {
    /// The crossing probability of a boundary at the height whose single-look p is `p`,
    /// interpolated linearly in ln P (monotone). Above the table's heights the last value is
    /// kept (the caller caps it with Bonferroni's bound, valid everywhere).
    fn crossing(&self, p: f64) -> f64 {
        let z = -Normal::standard().inverse_cdf(p);
        if z <= 0.0 {
            return 1.0;
        }
        if z.is_nan() || z >= Z_MAX {
            return self.log_crossing.last().copied().unwrap_or(0.0).exp();
        }
        let x = z / Z_STEP;
        let i = x.floor() as usize;
        if i + 1 >= self.log_crossing.len() {
            return self.log_crossing.last().copied().unwrap_or(0.0).exp();
        }
        let t = x - i as f64;
        ((1.0 - t) * self.log_crossing[i] + t * self.log_crossing[i + 1]).exp()
    }
}

/// The crossing table of a plan's looks, computed once per process and plan.
fn crossing_table(looks: &[u32]) -> std::sync::Arc<CrossingTable> {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex, OnceLock};
    type Cache = Mutex<HashMap<Vec<u32>, Arc<CrossingTable>>>;
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    if let Some(hit) = cache.lock().ok().and_then(|c| c.get(looks).cloned()) {
        return hit;
    }
    let steps = (Z_MAX / Z_STEP).round() as usize;
    let times: Vec<f64> = looks.iter().map(|n| f64::from(*n)).collect();
    let log_crossing = (0..=steps)
        .map(|i| {
            boundary_crossing(&times, i as f64 * Z_STEP)
                .max(f64::MIN_POSITIVE)
                .ln()
        })
        .collect();
    let table = Arc::new(CrossingTable { log_crossing });
    if let Ok(mut c) = cache.lock() {
        c.entry(looks.to_vec()).or_insert_with(|| table.clone());
    }
    table
}

/// Points per standard deviation of one step's increment in [`boundary_crossing`]'s grid.
const GRID_PER_SD: f64 = 8.0;

/// The most lattice nodes [`boundary_crossing`] spans one look's region with.
const MAX_NODES: f64 = 2000.0;

/// P(S_k ≥ z·√t_k for some k) for a standard Brownian motion S observed at the increasing
/// times `times`: the recursive numerical integration of Armitage, McPherson and Rowe (1969)
/// (Jennison and Turnbull 2000, ch. 19) on a uniform lattice whose spacing is a fraction of the
/// smallest increment's standard deviation, with the trapezoidal rule and the boundary as the
/// last node of each look's continuation region. Mass more than 6 standard deviations below
/// zero is dropped (it never reaches the boundary); the Gaussian kernel is cut at 8.5.
fn boundary_crossing(times: &[f64], z: f64) -> f64 {
    boundary_crossing_with(times, z, GRID_PER_SD)
}

fn boundary_crossing_with(times: &[f64], z: f64, per_sd: f64) -> f64 {
    let normal = Normal::standard();
    let Some(&first) = times.first() else {
        return 0.0;
    };
    let min_increment = times
        .windows(2)
        .map(|w| w[1] - w[0])
        .fold(f64::INFINITY, f64::min)
        .max(f64::MIN_POSITIVE);
    let last = times.last().copied().unwrap_or(first);
    // A fraction of the smallest increment's standard deviation (the trapezoidal rule is
    // spectrally accurate on the Gaussian parts, so half the first look's is enough there),
    // and never more than MAX_NODES nodes across the widest region, which bounds the work of
    // very long plans at some accuracy.
    let h = (min_increment.sqrt() / per_sd)
        .min(first.sqrt() / 2.0)
        .max((z + 6.0) * last.sqrt() / MAX_NODES);
    let bound = |t: f64| z * t.sqrt();
    // The continuation region at a look: lattice nodes i·h for i in lo..=hi (i·h < bound),
    // plus the boundary itself as an extra node.
    let nodes = |t: f64| {
        let lo = (-6.0 * t.sqrt() / h).floor() as i64;
        let b = bound(t);
        let mut hi = (b / h).floor() as i64;
        if (hi as f64) * h >= b {
            hi -= 1;
        }
        (lo, hi.max(lo), b)
    };
    // Density at the first look on its region.
    let t0 = first;
    let (mut lo, mut hi, mut b) = nodes(t0);
    let density0 =
        |s: f64| (-(s * s) / (2.0 * t0)).exp() / (2.0 * std::f64::consts::PI * t0).sqrt();
    let mut f: Vec<f64> = (lo..=hi).map(|i| density0(i as f64 * h)).collect();
    let mut f_end = density0(b);
    let mut crossed = normal.sf(z);
    let mut kernel_cache: Option<(f64, Vec<f64>)> = None;
    for w in times.windows(2) {
        let delta = w[1] - w[0];
        let sd = delta.sqrt();
        // Trapezoid weights on the nodes lo..=hi and the end node at b.
        let last_gap = b - hi as f64 * h;
        let weight = |k: usize, len: usize| {
            let mut wgt = h;
            if k == 0 {
                wgt *= 0.5;
            }
            if k + 1 == len {
                wgt = if k == 0 {
                    0.5 * last_gap
                } else {
                    0.5 * h + 0.5 * last_gap
                };
            }
            wgt
        };
        let len = f.len();
        let a: Vec<f64> = f
            .iter()
            .enumerate()
            .map(|(k, v)| v * weight(k, len))
            .collect();
        let a_end = f_end * 0.5 * last_gap;
        let (nlo, nhi, nb) = nodes(w[1]);
        // Crossing at the next look.
        let mut cross = a_end * normal.sf((nb - b) / sd);
        for (k, ak) in a.iter().enumerate() {
            let u = (lo + k as i64) as f64 * h;
            cross += ak * normal.sf((nb - u) / sd);
        }
        crossed += cross;
        // The next look's density on its region: a discrete convolution on the lattice.
        let reach = (8.5 * sd / h).ceil() as i64;
        let kernel = match &kernel_cache {
            Some((d, k)) if *d == delta => k.clone(),
            _ => {
                let k: Vec<f64> = (0..=reach)
                    .map(|d| {
                        let x = d as f64 * h / sd;
                        (-0.5 * x * x).exp() / (sd * (2.0 * std::f64::consts::PI).sqrt())
                    })
                    .collect();
                kernel_cache = Some((delta, k.clone()));
                k
            }
        };
        let phi = |x: f64| {
            (-0.5 * (x / sd) * (x / sd)).exp() / (sd * (2.0 * std::f64::consts::PI).sqrt())
        };
        let convolve = |s_index: Option<i64>, s: f64| {
            let mut sum = a_end * phi(s - b);
            let (from, to) = match s_index {
                Some(i) => ((i - reach).max(lo), (i + reach).min(hi)),
                None => {
                    let c = (s / h).round() as i64;
                    ((c - reach - 1).max(lo), (c + reach + 1).min(hi))
                }
            };
            for j in from..=to {
                let ak = a[(j - lo) as usize];
                sum += ak
                    * match s_index {
                        Some(i) => kernel[(i - j).unsigned_abs() as usize],
                        None => phi(s - j as f64 * h),
                    };
            }
            sum
        };
        let next: Vec<f64> = (nlo..=nhi)
            .map(|i| convolve(Some(i), i as f64 * h))
            .collect();
        f_end = convolve(None, nb);
        f = next;
        (lo, hi, b) = (nlo, nhi, nb);
    }
    crossed.clamp(0.0, 1.0)
}

/// Smallest one-sided p-value a Mann–Whitney test can reach with n1 and n2 values:
/// 1 / C(n1 + n2, n1).
pub fn mwu_floor(n1: usize, n2: usize) -> f64 {
    let (a, b) = (n1.min(n2), n1.max(n2));
    let mut p = 1.0;
    for i in 1..=a {
        p *= i as f64 / (b + i) as f64;
    }
    p
}

/// Small deterministic random source (xorshift64*) with normal draws, for seeded simulations.
#[derive(Debug, Clone)]
pub struct Xorshift {
    state: u64,
    spare: Option<f64>,
}

impl Xorshift {
    pub fn new(seed: u64) -> Xorshift {
        Xorshift {
            state: seed.max(1),
            spare: None,
        }
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.state;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.state = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in (0, 1).
    pub fn uniform(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    /// Standard normal (Box–Muller).
    pub fn normal(&mut self) -> f64 {
        if let Some(z) = self.spare.take() {
            return z;
        }
        let (u, v) = (self.uniform(), self.uniform());
        let r = (-2.0 * u.ln()).sqrt();
        let theta = std::f64::consts::TAU * v;
        self.spare = Some(r * theta.sin());
        r * theta.cos()
    }
}

#[cfg(test)]
mod tests;
