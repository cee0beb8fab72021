//! The decision rule: the evidence of one metric (rank test or prediction interval), the
//! interval at the level a run's decisions were taken at, and the verdict it supports
//! (docs/statistics.md, "The decision rule"). Functions of the samples and the policy: no report
//! assembly and no I/O.

use super::{Context, format_p};
use crate::model::metric::{Direction, Tolerance};
use crate::model::report::{BenchmarkComparison, Method, MetricComparison};
use crate::model::results::Spread;
use crate::model::units::format_change;
use crate::model::verdict::Verdict;
use crate::stats::inference::{self, History, Welch};
use crate::stats::{self, Alternative};

/// Test results of a noisy metric. Its row keeps the figures; what the run-wide multiplicity
/// adjustment waits with is the [`Power`].
pub(super) struct Evidence<'a> {
    pub(super) method: Method,
    pub(super) change: f64,
    pub(super) equivalence_ci: Option<[f64; 2]>,
    pub(super) p_two: f64,
    pub(super) p_reg: f64,
    pub(super) p_imp: f64,
    /// Log-scale noise and sizes for the minimum detectable effect and the interval at the
    /// decision's level, or the prediction history.
    pub(super) power: Power<'a>,
}

/// What deciding a tested metric needs besides its row's figures (change, p-values,
/// equivalence interval): what its interval at the decision's level and its minimum detectable
/// change are computed from, and what the test compared. A run holds one per tested metric
/// until the correction.
pub(super) enum Power<'a> {
    /// Two-sample rank test: the pooled robust log-scale noise of the samples (None unless
    /// every value is positive), and the samples, borrowed from the results they were read
    /// from until the run-wide correction sets the level of their interval.
    Samples {
        noise: Option<f64>,
        samples: SamplePair<'a>,
    },
    /// Prediction interval: the jobs' history, this job's log-scale distance from its mean,
    /// and which jobs ("3 stored jobs").
    Prediction {
        history: History,
        distance: f64,
        basis: String,
    },
    /// Welch's test on summaries: the test, the baseline mean's magnitude (the scale of the
    /// relative change) and the sample counts behind the means.
    Summaries {
        welch: Welch,
        scale: f64,
        counts: (u64, u64),
    },
}

impl Power<'_> {
    /// What the test compared, for the reason: "10 vs 10 repetitions", "3 stored jobs".
    fn basis(&self) -> std::borrow::Cow<'_, str> {
        match (self, self.sizes()) {
            (Power::Prediction { basis, .. }, _) => basis.into(),
            (Power::Summaries { counts, .. }, _) => {
                format!("{WELCH}: {} vs {} samples", counts.0, counts.1).into()
            }
            (_, Some((nb, nh))) => format!("{nb} vs {nh} repetitions").into(),
            (_, None) => "".into(),
        }
    }

    /// The sample sizes (base, head) of a rank test.
    fn sizes(&self) -> Option<(usize, usize)> {
        match self {
            Power::Samples { samples, .. } => Some(samples.sizes()),
            Power::Prediction { .. } | Power::Summaries { .. } => None,
        }
    }

    /// The two-sided interval of the change at `confidence`, when it can be computed.
    fn interval(&self, confidence: f64) -> Option<[f64; 2]> {
        match self {
            Power::Samples { samples, .. } => samples.interval(confidence),
            Power::Prediction {
                history, distance, ..
            } => {
                let w = history.half_width(confidence);
                Some([(distance - w).exp_m1(), (distance + w).exp_m1()])
            }
            Power::Summaries { welch, scale, .. } => {
                let w = welch.half_width(confidence);
                Some([welch.difference - w, welch.difference + w].map(|end| end / scale))
            }
        }
    }
}

/// How a row names Welch's test.
pub(super) const WELCH: &str = "Welch's test on summaries (mean, sd, n)";

/// The unadjusted one-sided levels the run's decisions were taken at, per direction (see
/// [`inference::decision_level`]).
#[derive(Debug, Clone, Copy)]
pub(super) struct Levels {
    pub(super) regression: f64,
    pub(super) improvement: f64,
}

/// The relative change between two medians: a ratio for positive values, else relative to
/// the baseline's magnitude.
pub(super) fn point_change(base: f64, head: f64) -> f64 {
    if base > 0.0 && head > 0.0 {
        head / base - 1.0
    } else if base != 0.0 {
        (head - base) / base.abs()
    } else if head == 0.0 {
        0.0
    } else {
        f64::INFINITY.copysign(head)
    }
}

/// The smallest equal number of repetitions per side whose smallest attainable one-sided
/// p-value reaches `level`.
pub(super) fn repetitions_needed(level: f64) -> usize {
    (1..=64)
        .find(|n| inference::mwu_floor(*n, *n) <= level)
        .unwrap_or(64)
}

/// A metric's samples on both sides, as measured and in ascending order ([`stats::sorted`]),
/// sorted once for every statistic that needs them (the sorted copies live only while the
/// metric is gathered).
pub(super) struct Sides<'a, 's> {
    pub(super) base: &'a [f64],
    pub(super) head: &'a [f64],
    pub(super) base_sorted: &'s [f64],
    pub(super) head_sorted: &'s [f64],
}

/// p-values in the regression and improvement directions for `head` against `base`, both in
/// ascending order.
fn directional(
    head_sorted: &[f64],
    base_sorted: &[f64],
    direction: Direction,
) -> Option<(f64, f64, f64)> {
    let ranks = stats::RankSum::from_sorted(head_sorted, base_sorted)?;
    let up = ranks.test(Alternative::Greater).p_value;
    let down = ranks.test(Alternative::Less).p_value;
    let two = ranks.test(Alternative::TwoSided).p_value;
    Some(match direction {
        Direction::Lower => (up, down, two),
        Direction::Higher => (down, up, two),
    })
}

/// The Hodges–Lehmann change of head against base as a relative change, prepared once per
/// metric so that its intervals at several levels reuse the sorted samples: on logs for
/// positive data (a ratio), otherwise relative to the baseline median.
pub(super) struct RelativeShift {
    hl: stats::HodgesLehmann,
    /// The baseline median's magnitude for data that are not all positive; None on logs.
    scale: Option<f64>,
}

impl RelativeShift {
    /// None when the estimate is undefined (empty or non-finite samples, or data that are not
    /// all positive around a zero baseline median).
    ///
    /// The interval at `confidence` comes with it, from the selection that finds the estimate
    /// (None where it is not attainable).
    pub(super) fn with_interval(
        base: &[f64],
        head: &[f64],
        confidence: f64,
    ) -> Option<(RelativeShift, Option<[f64; 2]>)> {
        let positive = base.iter().chain(head).all(|v| *v > 0.0);
        let (hl, estimate, scale) = if positive {
            let lb: Vec<f64> = base.iter().map(|v| v.ln()).collect();
            let lh: Vec<f64> = head.iter().map(|v| v.ln()).collect();
            let (hl, estimate) = stats::HodgesLehmann::with_interval(&lh, &lb, confidence)?;
            (hl, estimate, None)
        } else {
            let scale = stats::median(base).map(f64::abs).filter(|m| *m > 0.0)?;
            let (hl, estimate) = stats::HodgesLehmann::with_interval(head, base, confidence)?;
            (hl, estimate, Some(scale))
        };
        let shift = RelativeShift { hl, scale };
        let interval = estimate.map(|s| [shift.relative(s.low), shift.relative(s.high)]);
        Some((shift, interval))
    }

    /// The pooled robust log-scale noise of the two samples ([`inference::pooled_log_noise`]),
    /// from the sorted logs the estimate holds; None unless every value is positive.
    fn log_noise(&self, base: &[f64], head: &[f64]) -> Option<f64> {
        if self.scale.is_some() {
            return None;
        }
        let (head_logs, base_logs) = self.hl.sorted_samples();
        let side = |logs: &[f64], values: &[f64]| {
            inference::log_noise_of_sorted_logs(logs).or_else(|| inference::log_noise(values))
        };
        let (base, head) = (side(base_logs, base)?, side(head_logs, head)?);
        Some(inference::pooled_noise(base, head))
    }

    fn relative(&self, shift: f64) -> f64 {
        relative_change(shift, self.scale)
    }

    /// The estimated relative change.
    pub(super) fn change(&self) -> f64 {
        self.relative(self.hl.shift())
    }

    /// Whether a two-sided interval at `confidence` exists for these sample sizes.
    pub(super) fn attainable(&self, confidence: f64) -> bool {
        self.hl.attainable(confidence)
    }
}

/// A metric's two samples as they were read, for the interval at the level the run-wide
/// correction sets, and the baseline's magnitude where the data are not all positive
/// ([`RelativeShift`]'s scale). Holding the prepared [`RelativeShift`] of every metric until
/// then would keep a sorted copy of every sample of the run, beside the samples themselves.
pub(super) struct SamplePair<'a> {
    base: &'a [f64],
    head: &'a [f64],
    scale: Option<f64>,
}

/// A shift of the Hodges–Lehmann estimate as a relative change: on logs (`scale` None) a
/// ratio, otherwise relative to the baseline's magnitude.
fn relative_change(shift: f64, scale: Option<f64>) -> f64 {
    match scale {
        None => shift.exp_m1(),
        Some(scale) => shift / scale,
    }
}

impl SamplePair<'_> {
    /// The sample sizes (base, head).
    fn sizes(&self) -> (usize, usize) {
        (self.base.len(), self.head.len())
    }

    /// The two-sided interval of the relative change at `confidence`: the interval
    /// [`RelativeShift::with_interval`] finds, without the estimate's own selection.
    fn interval(&self, confidence: f64) -> Option<[f64; 2]> {
        let (low, high) = match self.scale {
            None => {
                let logs = |v: &[f64]| v.iter().map(|v| v.ln()).collect::<Vec<f64>>();
                stats::hodges_lehmann_interval(&logs(self.head), &logs(self.base), confidence)?
            }
            Some(_) => stats::hodges_lehmann_interval(self.head, self.base, confidence)?,
        };
        Some([low, high].map(|end| relative_change(end, self.scale)))
    }
}

/// A confidence level as a percentage with up to three decimals: `99`, `99.95`.
pub(super) fn percent_level(confidence: f64) -> String {
    format!("{}", (confidence * 100.0 * 1000.0).round() / 1000.0)
}

/// The two-sample rank test: Mann–Whitney p-values and the Hodges–Lehmann estimate. Err
/// carries the reason no decision is possible and the two-sided p-value when there is one.
pub(super) fn rank_evidence<'a>(
    sides: &Sides<'a, '_>,
    direction: Direction,
    ctx: &Context<'_>,
) -> Result<Evidence<'a>, (String, Option<f64>)> {
    let (base, head) = (sides.base, sides.head);
    let ps = directional(sides.head_sorted, sides.base_sorted, direction);
    // The estimate depends on the samples, not their order: the sorted ones save its sorts.
    let (base_sorted, head_sorted) = (sides.base_sorted, sides.head_sorted);
    let shift = RelativeShift::with_interval(base_sorted, head_sorted, 1.0 - 2.0 * ctx.alpha_look)
        .filter(|(s, _)| s.attainable(1.0 - ctx.alpha_look));
    let (Some((p_reg, p_imp, p_two)), Some((shift, equivalence_ci))) = (ps, shift) else {
        let reason = format!(
            "no test possible on these samples ({} baseline, {} candidate): the rank test or the Hodges–Lehmann estimate is undefined for them",
            base.len(),
            head.len()
        );
        return Err((reason, ps.map(|p| p.2)));
    };
    Ok(Evidence {
        method: Method::RankTest,
        change: shift.change(),
        equivalence_ci,
        p_two,
        p_reg,
        p_imp,
        power: Power::Samples {
            noise: shift.log_noise(base, head),
            samples: SamplePair {
                base,
                head,
                scale: shift.scale,
            },
        },
    })
}

/// The stored jobs (log-scale medians) of the baseline's regime: the series is cut at its change
/// points (E-divisive means, as `kgate history` finds them), and the stretch taken is the one whose
/// median is nearest the stored baseline's median on a log scale (the latest on a tie). Jobs
/// recorded after a regression landed must not become the yardstick of the baseline they regressed
/// from, and a baseline updated to a new level is measured against the jobs of that level.
pub(super) struct Regime<'a> {
    pub jobs: &'a [f64],
    /// 1-based positions of the stretch's first and last job, and the series' length.
    pub first: usize,
    pub last: usize,
    pub of: usize,
    /// Whether a change point cut the series.
    pub cut: bool,
}

pub(super) fn baseline_regime(log_jobs: &[f64], baseline_median: f64) -> Regime<'_> {
    let jobs = log_jobs;
    use crate::stats::changepoint::{Settings, e_divisive};
    let points = e_divisive(jobs, &Settings::default());
    let mut bounds: Vec<usize> = std::iter::once(0)
        .chain(points.iter().map(|p| p.index))
        .chain(std::iter::once(jobs.len()))
        .collect();
    bounds.dedup();
    // The jobs are medians of logs already.
    let distance = |stretch: &[f64]| match stats::median(stretch) {
        Some(m) if baseline_median > 0.0 => (m - baseline_median.ln()).abs(),
        _ => f64::INFINITY,
    };
    let (start, end) = bounds
        .windows(2)
        .map(|w| (w[0], w[1]))
        .filter(|(a, b)| b > a)
        .min_by(|x, y| {
            distance(&jobs[x.0..x.1])
                .total_cmp(&distance(&jobs[y.0..y.1]))
                .then(y.0.cmp(&x.0))
        })
        .unwrap_or((0, jobs.len()));
    Regime {
        jobs: &jobs[start..end],
        first: start + 1,
        last: end,
        of: jobs.len(),
        cut: !points.is_empty(),
    }
}

impl Regime<'_> {
    /// Where the stretch lies in the series, for a reason: empty when the series is whole.
    fn described(&self) -> String {
        let (first, last, of) = (self.first, self.last, self.of);
        if !self.cut {
            String::new()
        } else if last == of {
            format!("since the change point at job {first} of {of}")
        } else {
            format!(
                "at the baseline's level (jobs {first}–{last} of {of}; the series changes level after job {last})"
            )
        }
    }
}

/// Bencher's model: the candidate job's median (log scale) against a Student prediction interval
/// over the stored jobs' medians of the baseline's regime (see [`baseline_regime`]). None (with a
/// note when the history existed) when fewer than two such jobs hold the metric.
pub(super) fn prediction_evidence(
    benchmark: &str,
    metric: &str,
    baseline_median: f64,
    head: &[f64],
    direction: Direction,
    ctx: &Context<'_>,
) -> (Option<Evidence<'static>>, Option<String>) {
    if ctx.history.is_empty() || head.iter().any(|v| !(v.is_finite() && *v > 0.0)) {
        return (None, None);
    }
    let all: Vec<f64> = ctx
        .history
        .get(&(benchmark.to_string(), metric.to_string()))
        .cloned()
        .unwrap_or_default();
    let regime = baseline_regime(&all, baseline_median);
    let jobs = regime.jobs;
    let Some(history) = History::new(jobs) else {
        let note = regime.cut.then(|| {
            format!(
                "the stored jobs change level, and fewer than 2 of them are {}, so the rank test against the baseline decides instead of a prediction interval; ",
                regime.described()
            )
        });
        return (None, note);
    };
    if history.scale().is_nan() || history.scale() <= 0.0 {
        // Jobs that agree exactly give a zero-width interval; the rank test decides instead.
        return (None, None);
    }
    let logs: Vec<f64> = head.iter().map(|v| v.ln()).collect();
    let Some(y) = stats::median(&logs) else {
        return (None, None);
    };
    let distance = y - history.mean;
    let above = history.p_above(y);
    let (p_reg, p_imp) = match direction {
        Direction::Lower => (above, 1.0 - above),
        Direction::Higher => (1.0 - above, above),
    };
    let w = history.half_width(1.0 - 2.0 * ctx.alpha_look);
    let basis = match regime.cut {
        true => format!(
            "this job's median against {} stored jobs {}",
            jobs.len(),
            regime.described()
        ),
        false => format!("this job's median against {} stored jobs", jobs.len()),
    };
    let evidence = Evidence {
        method: Method::PredictionInterval,
        change: distance.exp_m1(),
        equivalence_ci: Some([(distance - w).exp_m1(), (distance + w).exp_m1()]),
        p_two: (2.0 * above.min(1.0 - above)).min(1.0),
        p_reg,
        p_imp,
        power: Power::Prediction {
            history,
            distance,
            basis,
        },
    };
    (Some(evidence), None)
}

/// Welch's test on the summaries of one mean per side (their
/// [`crate::model::results::MetricSamples::spread`]): the change of the means relative to the
/// baseline's, and its interval from the difference's. Err says why the test is undefined.
pub(super) fn welch_evidence(
    base: (f64, Spread),
    head: (f64, Spread),
    direction: Direction,
    ctx: &Context<'_>,
) -> Result<Evidence<'static>, String> {
    let side = |(mean, s): (f64, Spread)| (mean, s.sd, s.n as f64);
    let scale = base.0.abs();
    let welch = Welch::new(side(base), side(head))
        .filter(|_| scale > 0.0)
        .ok_or_else(|| format!("{WELCH} is undefined here: a side has fewer than 2 samples, neither has any spread, or the baseline mean is 0"))?;
    let (above, below) = welch.p_above_below();
    let (p_reg, p_imp) = match direction {
        Direction::Lower => (above, below),
        Direction::Higher => (below, above),
    };
    let power = Power::Summaries {
        welch,
        scale,
        counts: (base.1.n, head.1.n),
    };
    Ok(Evidence {
        method: Method::WelchSummaries,
        change: welch.difference / scale,
        equivalence_ci: power.interval(1.0 - 2.0 * ctx.alpha_look),
        p_two: (2.0 * above.min(below)).min(1.0),
        p_reg,
        p_imp,
        power,
    })
}

/// A tested metric waiting for the run-wide correction: where it is, its family, its two
/// one-sided p-values, and what its decision needs besides them.
pub(super) struct Pending<'a> {
    /// The benchmark's position in the rows, and the metric's in its row.
    pub(super) benchmark: usize,
    pub(super) metric: usize,
    /// Whether the metric may fail the build (its family: gated or informational).
    pub(super) gates: bool,
    /// The one-sided p-values (regression, improvement).
    pub(super) p: [f64; 2],
    pub(super) power: Power<'a>,
}

/// One family's adjusted p-values, in the order of its members, and the levels its
/// decisions are taken at.
struct Family {
    regression: Vec<f64>,
    improvement: Vec<f64>,
    size: usize,
    levels: Levels,
}

impl Family {
    fn of<'p>(
        members: impl Iterator<Item = &'p [f64; 2]>,
        size_hint: usize,
        ctx: &Context<'_>,
    ) -> Family {
        let (mut regression, mut improvement): (Vec<f64>, Vec<f64>) =
            members.map(|p| (p[0], p[1])).unzip();
        // Untested members of an assumed larger family count as p = 1, which is what BH and
        // Holm do with a family of that size.
        let size = regression.len().max(size_hint);
        regression.resize(size, 1.0);
        improvement.resize(size, 1.0);
        // Each look's p-value becomes the look plan's sequential p-value (itself without
        // looks), which is valid whenever the benchmark stopped, so the correction runs at the
        // gate's alpha; the level its decisions cleared maps back to each look's nominal level.
        let looks = &ctx.looks;
        let sequential =
            |p: Vec<f64>| -> Vec<f64> { p.into_iter().map(|p| looks.sequential_p(p)).collect() };
        let (alpha, correction) = (ctx.policy.alpha, ctx.policy.correction);
        let regression = inference::adjust(&sequential(regression), correction);
        let improvement = inference::adjust(&sequential(improvement), correction);
        let level = |adjusted: &[f64]| {
            looks.nominal_level(inference::decision_level(adjusted, alpha, correction))
        };
        let levels = Levels {
            regression: level(&regression),
            improvement: level(&improvement),
        };
        Family {
            regression,
            improvement,
            size,
            levels,
        }
    }
}

/// Decides the tested metrics of a run: the p-values of each family (gated, informational)
/// adjusted together, then each tested metric of `rows` decided at its family's level.
pub(super) fn decide_rows(
    rows: &mut [BenchmarkComparison],
    pending: Vec<Pending<'_>>,
    ctx: &Context<'_>,
) {
    let family = |gates: bool| {
        let members = pending.iter().filter(|p| p.gates == gates).map(|p| &p.p);
        Family::of(members, if gates { ctx.policy.family_hint } else { 0 }, ctx)
    };
    let families = [family(true), family(false)];
    let mut next = [0usize; 2];
    for tested in pending {
        let f = usize::from(!tested.gates);
        let (family, k) = (&families[f], next[f]);
        next[f] += 1;
        decide(
            &mut rows[tested.benchmark].metrics[tested.metric],
            &tested.power,
            family.regression[k],
            family.improvement[k],
            family.size,
            family.levels,
            ctx,
        );
    }
}

/// Whether an interval lies entirely on the side of no change that `bad` names.
fn beyond_zero(ci: [f64; 2], bad_side_is_up: bool) -> bool {
    if bad_side_is_up {
        ci[0] > 0.0
    } else {
        ci[1] < 0.0
    }
}

/// The decision rule of `docs/statistics.md` for one noisy metric, given its adjusted p-values,
/// the size of its family and the levels the family's decisions were taken at. `out` holds the
/// test's figures (gathered from its [`Evidence`]); `power` is the evidence's.
pub(super) fn decide(
    out: &mut MetricComparison,
    power: &Power<'_>,
    p_reg_adj: f64,
    p_imp_adj: f64,
    family: usize,
    levels: Levels,
    ctx: &Context<'_>,
) {
    // Adjusted p-values are sequential ones (docs/statistics.md): tested at the gate's alpha;
    // raw p-values and intervals at the nominal level of one look.
    let alpha = ctx.policy.alpha;
    let (Some(change), Some(p_two)) = (out.change, out.p_value) else {
        // Gathering sets both for every tested metric; a row without them claims nothing.
        out.verdict = Verdict::Inconclusive;
        out.reason.push_str("no test result to decide on");
        return;
    };
    let basis = power.basis();
    let threshold = out.threshold;
    let margin = out.equivalence_margin.unwrap_or(threshold);
    out.p_adjusted = Some(p_reg_adj);
    // The level a single regression faces: BH and Holm both reduce to alpha / m for it.
    let single = ctx.looks.nominal_level(alpha / family.max(1) as f64);
    // No outcome can be decided only where the smallest attainable p is above the largest
    // level the applied procedure could test this metric at: BH rejects at up to alpha·k/m,
    // so alpha when every member is rejected; Holm's step-down starts at alpha / m and stops
    // at its first acceptance.
    let largest = inference::largest_level(alpha, family, ctx.policy.correction);
    let reachable = ctx.looks.nominal_level(largest);
    let floor = power.sizes().map(|(nb, nh)| inference::mwu_floor(nb, nh));
    let floor_blocks = floor.filter(|floor| *floor > reachable);
    // The MDE is that of a lone regression, at `single`: none where even it is out of reach.
    let lone_out_of_reach = floor.is_some_and(|floor| floor > single);
    let bad = worse(change, out.direction);
    // The interval is shown at the level the test in the estimate's direction was decided at,
    // so that it agrees with the verdict.
    let up_is_bad = out.direction == Direction::Lower;
    let level = if bad {
        levels.regression
    } else {
        levels.improvement
    };
    let ci_level = 1.0 - 2.0 * level;
    let ci = if floor_blocks.is_some() {
        None
    } else {
        power.interval(ci_level)
    };
    out.ci = ci;
    out.ci_level = ci.map(|_| ci_level);
    out.mde = match (power, lone_out_of_reach, ci) {
        (_, true, _) => None,
        (Power::Samples { samples, noise }, false, ci) => noise.and_then(|noise| {
            let sizes = samples.sizes();
            inference::min_detectable_change(noise, sizes, single, ci.map(|c| (c, ci_level)))
        }),
        (Power::Prediction { history, .. }, false, _) => {
            Some(history.min_detectable_shift(single).exp_m1())
        }
        (Power::Summaries { welch, scale, .. }, false, _) => {
            Some(welch.min_detectable_difference(single) / scale)
        }
    };
    let described = match ci {
        Some(ci) => format!(
            "{} ({} % CI {} … {}, p = {}, {})",
            format_change(change),
            percent_level(ci_level),
            format_change(ci[0]),
            format_change(ci[1]),
            format_p(p_two),
            basis
        ),
        None => format!(
            "{} (p = {}, {basis})",
            format_change(change),
            format_p(p_two)
        ),
    };
    let thr = format_change(threshold).trim_start_matches('+').to_string();
    let mar = format_change(margin).trim_start_matches('+').to_string();
    let material = change.abs() >= threshold;
    // Significance needs the adjusted p-value and the interval at the decision's level to
    // agree (they are dual; ties can make them part at the boundary, and then neither is
    // claimed).
    let significant_reg = p_reg_adj <= alpha && ci.is_some_and(|c| beyond_zero(c, up_is_bad));
    let significant_imp = p_imp_adj <= alpha && ci.is_some_and(|c| beyond_zero(c, !up_is_bad));
    let significant_this_way = (bad && significant_reg) || (!bad && significant_imp);
    let equivalence_ci = out.equivalence_ci;
    let inside = |m: f64| equivalence_ci.is_some_and(|[lo, hi]| lo > -m && hi < m);
    // Non-inferiority: the equivalence interval's bound on the bad side (its one-sided bound at
    // the same level) is below the threshold, so no regression as large as it.
    let bad_bound = equivalence_ci.map(|[lo, hi]| if up_is_bad { hi } else { lo });
    let non_inferior = bad_bound.is_some_and(|b| (if up_is_bad { b } else { -b }) < threshold);
    let (verdict, reason) = if let Some(floor) = floor_blocks {
        (
            Verdict::Inconclusive,
            format!(
                "{described}: too few repetitions to detect anything: the smallest attainable p is {}, above the largest level the {} correction over {family} tested metrics can reach ({}); raise `repetitions`",
                format_p(floor),
                ctx.policy.correction.as_str(),
                format_p(reachable)
            ),
        )
    } else if material && significant_this_way {
        let (verdict, p) = match bad {
            true => (Verdict::Regressed, format_p(p_reg_adj)),
            false => (Verdict::Improved, format_p(p_imp_adj)),
        };
        let why = format!("{described}: beyond the {thr} threshold (adjusted one-sided p = {p})");
        (verdict, why)
    } else if inside(margin) {
        let why = format!("{described}: the equivalence interval lies within ±{mar}");
        (Verdict::Unchanged, why)
    } else if non_inferior {
        let kind = if significant_reg || significant_imp {
            "a real change"
        } else {
            "no significant change"
        };
        let bound = format_change(bad_bound.unwrap_or(0.0));
        let level = percent_level(1.0 - ctx.alpha_look);
        let why = format!(
            "{described}: {kind}, within the {thr} threshold (no regression that large: the one-sided {level} % bound is {bound}; \"unchanged\" needs the equivalence interval within ±{mar})"
        );
        (Verdict::WithinThreshold, why)
    } else if significant_reg || significant_imp {
        let why = format!(
            "{described}: a change is likely, but the interval reaches the {thr} threshold; more repetitions would decide"
        );
        (Verdict::Inconclusive, why)
    } else {
        let why = format!(
            "{described}: not enough evidence either way; the interval reaches the {thr} threshold"
        );
        (Verdict::Inconclusive, why)
    };
    out.verdict = verdict;
    out.reason.push_str(&reason);
}

/// Whether a relative change is in the bad direction.
pub(super) fn worse(change: f64, direction: Direction) -> bool {
    match direction {
        Direction::Lower => change > 0.0,
        Direction::Higher => change < 0.0,
    }
}

pub(super) struct ToleranceDecision {
    pub(super) verdict: Verdict,
    pub(super) reason: String,
    pub(super) change: f64,
}

pub(super) fn by_tolerance(
    base: f64,
    head: f64,
    tolerance: Tolerance,
    direction: Direction,
    margin: f64,
) -> ToleranceDecision {
    let change = point_change(base, head);
    let (exceeds, limit) = match tolerance {
        Tolerance::Relative(t) => (
            change.abs() > t,
            format!("±{}", format_change(t).trim_start_matches('+')),
        ),
        Tolerance::Absolute(t) => ((head - base).abs() > t, format!("±{t}")),
    };
    let verdict = match (exceeds, worse(change, direction)) {
        (false, _) if change.abs() <= margin => Verdict::Unchanged,
        (false, _) => Verdict::WithinThreshold,
        (true, true) => Verdict::Regressed,
        (true, false) => Verdict::Improved,
    };
    let what = if exceeds { "beyond" } else { "within" };
    ToleranceDecision {
        verdict,
        reason: format!(
            "deterministic: {} ({base} → {head}), {what} the tolerance {limit}",
            format_change(change)
        ),
        change,
    }
}
