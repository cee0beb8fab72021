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

/// The best split of `values` and its Q̂, respecting `min_segment` on both sides.
fn best_split(values: &[f64], min_segment: usize) -> Option<(usize, f64)> {
    let len = values.len();
    let min = min_segment.max(2);
    if len < 2 * min {
        return None;
    }
    // Row sums of the distance matrix restricted to [0, t) and [t, len) are updated as the
    // split moves, so one scan is O(len²).
    let d = |i: usize, j: usize| (values[i] - values[j]).abs();
    let mut within_x = 0.0;
    let mut within_y = 0.0;
    for j in 0..len {
        for k in j + 1..len {
            within_y += d(j, k);
        }
    }
    let mut cross = 0.0;
    let mut best: Option<(usize, f64)> = None;
    for t in 1..len {
        // Move values[t-1] from Y to X.
        let moved = t - 1;
        let to_x: f64 = (0..moved).map(|i| d(i, moved)).sum();
        let to_y: f64 = (t..len).map(|j| d(moved, j)).sum();
        within_y -= to_y;
        cross += to_y - to_x;
        within_x += to_x;
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
    fn shuffle(&mut self, v: &mut [f64]) {
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
                best_split(&values[w[0]..w[1]], settings.min_segment)
                    .map(|(t, q)| (w[0], w[1], w[0] + t, q))
            })
            .max_by(|a, b| a.3.total_cmp(&b.3));
        let Some((start, end, at, q)) = candidate else {
            break;
        };
        let mut shuffled = values[start..end].to_vec();
        let mut at_least = 0;
        for _ in 0..settings.permutations {
            rng.shuffle(&mut shuffled);
            if best_split(&shuffled, settings.min_segment).is_some_and(|(_, p)| p >= q) {
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
        let (t, q) = best_split(&[1.0, 2.0, 4.0, 6.0], 2).unwrap();
        assert_eq!(t, 2);
        assert!((q - 4.0).abs() < 1e-12, "{q}");
    }

    #[test]
    fn a_planted_step_is_found_where_it_was_planted() {
        let cps = e_divisive(&planted(), &Settings::default());
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
        assert!(e_divisive(&flat, &Settings::default()).is_empty());
        let two_steps: Vec<f64> = (0..30)
            .map(|i| match i {
                0..10 => 10.0,
                10..20 => 14.0,
                _ => 11.0,
            } + [0.1, -0.1, 0.05][i % 3])
            .collect();
        let a = e_divisive(&two_steps, &Settings::default());
        assert_eq!(a.iter().map(|c| c.index).collect::<Vec<_>>(), vec![10, 20]);
        assert_eq!(a, e_divisive(&two_steps, &Settings::default()));
        assert!(e_divisive(&[1.0, 2.0, 3.0], &Settings::default()).is_empty());
    }
}
