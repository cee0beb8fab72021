//! Change points in a metric's history: E-divisive means (Matteson & James 2014), as used by
//! MongoDB's CI and Apache Otava.
//!
//! A per-job threshold misses slow drifts and blames the wrong commit for steps that arrive
//! between runs; looking at the whole series finds where its distribution changed. For a split
//! of a segment into X (n values) and Y (m values) the divergence statistic is
//!
//! Q̂(X,Y) = 2/(m+n)·Σ|Xᵢ−Yⱼ| − 2m/((m+n)(n−1))·Σ_{i<k}|Xᵢ−X_k| − 2n/((m+n)(m−1))·Σ_{j<k}|Yⱼ−Y_k|
//!
//! (exponent α = 1). The split maximising Q̂ is the candidate; it is kept when a permutation
//! test says so: the segment's values are shuffled `permutations` times, and
//! p = (#{shuffled max Q̂ ≥ observed} + 1) / (permutations + 1). Accepted points bisect their
//! segment and the search repeats on the pieces until no candidate is significant. Every
//! segment keeps at least `min_segment` values. The shuffles come from a fixed seed, so the same
//! history always yields the same change points.

/// Settings of the detector.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    /// Largest p-value that accepts a change point (default 0.05).
    pub max_p: f64,
    /// Shuffles per permutation test (default 199).
    pub permutations: usize,
    /// Fewest values on each side of a change point (default 3).
    pub min_segment: usize,
    /// Seed of the shuffles (default 0x6b67617465, "kgate").
    pub seed: u64,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            max_p: 0.05,
            permutations: 199,
            min_segment: 3,
            seed: 0x006b_6761_7465,
        }
    }
}

/// A detected change: the first index of the new regime.
#[derive(Debug, Clone, PartialEq)]
pub struct ChangePoint {
    pub index: usize,
    /// Q̂ at the split.
    pub statistic: f64,
    /// Permutation p-value.
    pub p_value: f64,
    /// mean(after) / mean(before) − 1 over the neighbouring segments.
    pub relative_change: f64,
}

/// A segment of a series prepared for [`best_split`]: each value (less the segment's median,
/// so that equal values are exact zeros and sums stay small) with its rank among the
/// segment's values, the prefix sums of the values in ascending order, and the sum of the
/// distances between every pair.
struct Segment {
    /// (value, rank) in series order; ranks are 0..len, ties ordered by position.
    ranked: Vec<(f64, usize)>,
    /// `below[r]`: the sum of the `r` smallest values.
    below: Vec<f64>,
    /// Σ_{j<k} |v_j − v_k|.
    pairs: f64,
}

impl Segment {
    fn new(values: &[f64]) -> Segment {
        let mut order: Vec<usize> = (0..values.len()).collect();
        order.sort_by(|&a, &b| values[a].total_cmp(&values[b]).then(a.cmp(&b)));
        let centre = order.get(values.len() / 2).map_or(0.0, |&i| values[i]);
        let mut ranked: Vec<(f64, usize)> = values.iter().map(|v| (v - centre, 0)).collect();
        let mut below = Vec::with_capacity(values.len() + 1);
        below.push(0.0);
        let mut pairs = 0.0;
        let last = values.len().saturating_sub(1) as f64;
        for (rank, &i) in order.iter().enumerate() {
            ranked[i].1 = rank;
            let v = ranked[i].0;
            below.push(below[rank] + v);
            // The k-th smallest is larger than k values and smaller than len − 1 − k.
            pairs += v * (2.0 * rank as f64 - last);
        }
        Segment {
            ranked,
            below,
            pairs,
        }
    }
}

/// The values added so far to one side of a split, by rank: a Fenwick tree of their count
/// and sum, so that the distances from a new value to all of them is two prefix sums
/// (O(log n)) instead of a pass over them.
struct RankSums {
    count: Vec<u32>,
    sum: Vec<f64>,
}

impl RankSums {
    fn new(len: usize) -> RankSums {
        RankSums {
            count: vec![0; len + 1],
            sum: vec![0.0; len + 1],
        }
    }

    fn insert(&mut self, rank: usize, value: f64) {
        let mut i = rank + 1;
        while i < self.count.len() {
            self.count[i] += 1;
            self.sum[i] += value;
            i += i & i.wrapping_neg();
        }
    }

    /// How many of the values have a rank below `rank`, and their sum.
    fn below(&self, rank: usize) -> (f64, f64) {
        let (mut i, mut count, mut sum) = (rank, 0u32, 0.0);
        while i > 0 {
            count += self.count[i];
            sum += self.sum[i];
            i &= i - 1;
        }
        (f64::from(count), sum)
    }
}

/// Σ|v − w| over `n_below` values of sum `s_below` below v and `n_above` of sum `s_above`
/// above it.
fn distances(v: f64, (n_below, s_below): (f64, f64), (n_above, s_above): (f64, f64)) -> f64 {
    (v * n_below - s_below) + (s_above - v * n_above)
}

/// The best split of a segment whose values stand in `ranked` (a permutation of
/// `segment.ranked`) and its Q̂, respecting `min_segment` on both sides.
///
/// The split moves along the series one value at a time from Y to X; the sums of distances
/// within X, within Y and across are updated with the distances from the moved value to X
/// and to Y, each found from rank-ordered prefix sums, so one scan is O(len log len) (a pass
/// over the other values per step made it O(len²), which 199 permutations of a history of
/// 1,000 jobs turned into seconds per metric).
fn best_split(
    segment: &Segment,
    ranked: &[(f64, usize)],
    min_segment: usize,
) -> Option<(usize, f64)> {
    let len = ranked.len();
    let min = min_segment.max(2);
    if len < 2 * min {
        return None;
    }
    let total = segment.below[len];
    let mut x = RankSums::new(len);
    let (mut x_count, mut x_sum) = (0.0, 0.0);
    let mut within_x = 0.0;
    let mut within_y = segment.pairs;
    let mut cross = 0.0;
    let mut best: Option<(usize, f64)> = None;
    for t in 1..len {
        // Move the value at t − 1 from Y to X.
        let (v, rank) = ranked[t - 1];
        let (xn_below, xs_below) = x.below(rank);
        let to_x = distances(
            v,
            (xn_below, xs_below),
            (x_count - xn_below, x_sum - xs_below),
        );
        // Y is every value but X's and v itself.
        let y_below = (rank as f64 - xn_below, segment.below[rank] - xs_below);
        let y_above = (
            (len - rank - 1) as f64 - (x_count - xn_below),
            (total - segment.below[rank + 1]) - (x_sum - xs_below),
        );
        let to_y = distances(v, y_below, y_above);
        within_y -= to_y;
        cross += to_y - to_x;
        within_x += to_x;
        x.insert(rank, v);
        x_count += 1.0;
        x_sum += v;
        let (n, m) = (t as f64, (len - t) as f64);
        if t < min || len - t < min {
            continue;
        }
        let q = 2.0 / (m + n) * cross
            - 2.0 * m / ((m + n) * (n - 1.0)) * within_x
            - 2.0 * n / ((m + n) * (m - 1.0)) * within_y;
        if best.is_none_or(|(_, b)| q > b) {
            best = Some((t, q));
        }
    }
    best
}

/// A small deterministic generator (SplitMix64) for the shuffles.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Fisher–Yates.
    fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = (self.next() % (i as u64 + 1)) as usize;
            v.swap(i, j);
        }
    }
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

/// Change points of a series, in increasing index order.
pub fn e_divisive(values: &[f64], settings: &Settings) -> Vec<ChangePoint> {
    let mut rng = SplitMix(settings.seed);
    let mut bounds = vec![0, values.len()];
    let mut found: Vec<(usize, f64, f64)> = Vec::new();
    loop {
        // The strongest candidate over all current segments.
        let candidate = bounds
            .windows(2)
            .filter_map(|w| {
                let segment = Segment::new(&values[w[0]..w[1]]);
                best_split(&segment, &segment.ranked, settings.min_segment)
                    .map(|(t, q)| (segment, w[0] + t, q))
            })
            .max_by(|a, b| a.2.total_cmp(&b.2));
        let Some((segment, at, q)) = candidate else {
            break;
        };
        let mut shuffled = segment.ranked.clone();
        let mut at_least = 0;
        for _ in 0..settings.permutations {
            rng.shuffle(&mut shuffled);
            if best_split(&segment, &shuffled, settings.min_segment).is_some_and(|(_, p)| p >= q) {
                at_least += 1;
            }
        }
        let p = (at_least + 1) as f64 / (settings.permutations + 1) as f64;
        if p > settings.max_p {
            break;
        }
        found.push((at, q, p));
        bounds.push(at);
        bounds.sort_unstable();
    }
    found.sort_by_key(|f| f.0);
    bounds.sort_unstable();
    found
        .into_iter()
        .map(|(index, statistic, p_value)| {
            let pos = bounds.iter().position(|b| *b == index).unwrap_or(1);
            let before = &values[bounds[pos - 1]..index];
            let after = &values[index..bounds[(pos + 1).min(bounds.len() - 1)]];
            let (mb, ma) = (mean(before), mean(after));
            ChangePoint {
                index,
                statistic,
                p_value,
                relative_change: if mb != 0.0 { ma / mb - 1.0 } else { 0.0 },
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(got: f64, want: f64) -> bool {
        (got - want).abs() <= 1e-9 * want.abs().max(1.0)
    }

    fn found(values: &[f64]) -> Vec<ChangePoint> {
        e_divisive(values, &Settings::default())
    }

    /// 100 ± 1 (a fixed zig-zag), then +20 % from index 12 on.
    fn planted() -> Vec<f64> {
        (0..24)
            .map(|i| {
                let noise = [0.4, -0.7, 0.9, -0.2, 0.1, -0.9, 0.6, -0.4][i % 8];
                if i < 12 { 100.0 + noise } else { 120.0 + noise }
            })
            .collect()
    }

    #[test]
    fn statistic_matches_the_definition() {
        // X = [1, 2], Y = [4, 6]: cross 3+5+2+4 = 14, within X 1, within Y 2, m = n = 2.
        // Q̂ = 2/4·14 − 2·2/(4·1)·1 − 2·2/(4·1)·2 = 7 − 1 − 2 = 4.
        let segment = Segment::new(&[1.0, 2.0, 4.0, 6.0]);
        let (t, q) = best_split(&segment, &segment.ranked, 2).unwrap();
        assert_eq!(t, 2);
        assert!((q - 4.0).abs() < 1e-12, "{q}");
    }

    /// The scan as the definition reads, every distance summed afresh: the reference.
    fn best_split_by_pairs(values: &[f64], min: usize) -> Option<(usize, f64)> {
        let len = values.len();
        let d = |i: usize, j: usize| (values[i] - values[j]).abs();
        let sum = |from: usize, to: usize| -> f64 {
            (from..to)
                .flat_map(|j| (j + 1..to).map(move |k| (j, k)))
                .map(|(j, k)| d(j, k))
                .sum()
        };
        let mut best: Option<(usize, f64)> = None;
        for t in min.max(2)..=len.saturating_sub(min.max(2)) {
            let (n, m) = (t as f64, (len - t) as f64);
            let cross: f64 = (0..t)
                .flat_map(|i| (t..len).map(move |j| (i, j)))
                .map(|(i, j)| d(i, j))
                .sum();
            let q = 2.0 / (m + n) * cross
                - 2.0 * m / ((m + n) * (n - 1.0)) * sum(0, t)
                - 2.0 * n / ((m + n) * (m - 1.0)) * sum(t, len);
            if best.is_none_or(|(_, b)| q > b) {
                best = Some((t, q));
            }
        }
        best
    }

    #[test]
    fn the_scan_by_ranks_finds_the_split_the_definition_does() {
        let mut rng = SplitMix(7);
        let mut uniform = move || (rng.next() >> 11) as f64 / (1u64 << 53) as f64;
        for case in 0..300 {
            let len = 4 + case % 60;
            let step = (case % 4) as f64 * 0.5;
            let at = len / 3 + case % (len / 2);
            let values: Vec<f64> = (0..len)
                .map(|i| {
                    let noise = uniform();
                    let level = if i >= at { 10.0 + step } else { 10.0 };
                    // Every third case in whole numbers, with ties, as counters are.
                    if case % 3 == 0 {
                        (level * 10.0 + noise * 3.0).round()
                    } else {
                        level * (1.0 + 0.05 * noise)
                    }
                })
                .collect();
            let segment = Segment::new(&values);
            let fast = best_split(&segment, &segment.ranked, 2);
            let slow = best_split_by_pairs(&values, 2);
            match (fast, slow) {
                (Some((t, q)), Some((t_ref, q_ref))) => {
                    assert!(close(q, q_ref), "case {case}: {q} vs {q_ref}");
                    if t != t_ref {
                        // Only a tie between two splits may pick another of them.
                        let other = best_split_by_pairs(&values[..], 2).unwrap();
                        assert!(close(other.1, q), "case {case}");
                    }
                }
                (None, None) => {}
                other => panic!("case {case}: {other:?}"),
            }
        }
    }

    #[test]
    fn equal_values_are_exactly_no_change_whatever_their_digits() {
        for v in [0.1, 1.0 / 3.0, 123_456.789, 1e-7] {
            let flat = vec![v; 40];
            let segment = Segment::new(&flat);
            let split = best_split(&segment, &segment.ranked, 3);
            assert_eq!(split.map(|b| b.1), Some(0.0));
            assert!(found(&flat).is_empty(), "{v}");
        }
        let mut steps = vec![0.1; 20];
        steps.extend(vec![0.3; 20]);
        let indices: Vec<usize> = found(&steps).iter().map(|c| c.index).collect();
        assert_eq!(indices, [20]);
    }

    #[test]
    fn a_step_in_a_long_history_is_found_where_it_was_planted() {
        let mut rng = SplitMix(11);
        let values: Vec<f64> = (0..1_000)
            .map(|i| {
                let noise = (rng.next() >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
                if i < 600 {
                    100.0 + noise
                } else {
                    103.0 + noise
                }
            })
            .collect();
        let found = found(&values);
        // What the quadratic scan found on the same series, p-values equal: the step, and a
        // point in the noise before it whose permutation test passes (p = 0.03; at a level of
        // 0.05, one such in twenty segments is the method's own rate).
        let points: Vec<(usize, f64)> = found.iter().map(|c| (c.index, c.p_value)).collect();
        assert_eq!(points, vec![(239, 0.03), (600, 0.005)], "{found:?}");
        assert!((found[0].statistic - 2.0769336026786362).abs() < 1e-9);
        assert!((found[1].statistic - 1269.7900030442606).abs() < 1e-6);
        assert!((found[1].relative_change - 0.03).abs() < 0.001);
    }

    #[test]
    fn a_planted_step_is_found_where_it_was_planted() {
        let cps = found(&planted());
        assert_eq!(cps.len(), 1, "{cps:?}");
        assert_eq!(cps[0].index, 12);
        assert!((cps[0].p_value - 1.0 / 200.0).abs() < 1e-12);
        assert!((cps[0].relative_change - 0.2).abs() < 0.01);
    }

    #[test]
    fn noise_alone_has_no_change_point_and_results_are_reproducible() {
        let flat: Vec<f64> = planted()
            .iter()
            .map(|v| if *v > 110.0 { v - 20.0 } else { *v })
            .collect();
        assert!(found(&flat).is_empty());
        let two_steps: Vec<f64> = (0..30)
            .map(|i| match i {
                0..10 => 10.0,
                10..20 => 14.0,
                _ => 11.0,
            } + [0.1, -0.1, 0.05][i % 3])
            .collect();
        let a = found(&two_steps);
        assert_eq!(a.iter().map(|c| c.index).collect::<Vec<_>>(), vec![10, 20]);
        assert_eq!(a, found(&two_steps));
        assert!(found(&[1.0, 2.0, 3.0]).is_empty());
    }
}
