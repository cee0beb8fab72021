use super::*;
use crate::stats::inference::Xorshift;
use Alternative::{Greater, Less, TwoSided};
use MwuMethod::{Asymptotic, Exact};

const MALES: [f64; 5] = [19.0, 22.0, 16.0, 29.0, 24.0];
const FEMALES: [f64; 4] = [20.0, 11.0, 17.0, 12.0];
#[rustfmt::skip]
const BASE: [f64; 10] = [100.2, 101.1, 99.8, 100.5, 100.9, 100.1, 100.4, 99.9, 100.7, 100.3];
#[rustfmt::skip]
const NEW: [f64; 10] = [101.9, 102.3, 101.5, 102.8, 101.7, 102.1, 102.5, 101.6, 102.0, 102.4];
const HW_X: [f64; 10] = [0.80, 0.83, 1.89, 1.04, 1.45, 1.38, 1.91, 1.64, 0.73, 1.46];
const HW_Y: [f64; 5] = [1.15, 0.88, 0.90, 0.74, 1.21];

/// All m*n differences x_i - y_j, ascending: the brute force the selection replaces.
fn sorted_diffs(x: &[f64], y: &[f64]) -> Vec<f64> {
    let mut diffs = Vec::with_capacity(x.len() * y.len());
    for a in x {
        diffs.extend(y.iter().map(|b| a - b));
    }
    diffs.sort_by(f64::total_cmp);
    diffs
}

/// The Hodges–Lehmann estimate over materialised differences, as computed before
/// selection replaced it: the median and the critical ranks read off the sorted list.
fn hodges_lehmann_brute(x: &[f64], y: &[f64], confidence: f64) -> Option<ShiftEstimate> {
    if !(valid_pair(x, y) && confidence > 0.0 && confidence < 1.0) {
        return None;
    }
    let diffs = sorted_diffs(x, y);
    let (_, ties) = u_statistic(x, y);
    let (qu, achieved_confidence, method) = critical_rank(x.len(), y.len(), &ties, confidence)?;
    Some(ShiftEstimate {
        shift: median_sorted(&diffs),
        low: diffs[qu - 1],
        high: diffs[diffs.len() - qu],
        achieved_confidence,
        method,
    })
}

fn abs_close(got: f64, want: f64) {
    assert!((got - want).abs() <= 1e-12, "got {got}, want {want}");
}
fn rel_close(got: f64, want: f64) {
    let ok = (got - want).abs() <= 1e-9 * want.abs();
    assert!(ok, "got {got}, want {want}");
}
/// Automatic method: checks U1, the chosen method and the p-value.
fn auto(x: &[f64], y: &[f64], alt: Alternative, u1: f64, method: MwuMethod, p: f64) {
    let r = mann_whitney(x, y, alt).expect("valid input");
    assert_eq!((r.u1, r.method), (u1, method));
    match method {
        Exact => abs_close(r.p_value, p),
        Asymptotic => rel_close(r.p_value, p),
    }
}
/// Forced exact p-value, checked to 1e-12 absolute.
fn ex(x: &[f64], y: &[f64], alt: Alternative, want: f64) {
    let r = mann_whitney_with(x, y, alt, Exact, true).expect("exact test");
    abs_close(r.p_value, want);
}
/// Forced asymptotic p-value, checked to 1e-9 relative.
fn asy(x: &[f64], y: &[f64], alt: Alternative, cc: bool, want: f64) {
    let r = mann_whitney_with(x, y, alt, Asymptotic, cc).expect("asymptotic test");
    rel_close(r.p_value, want);
}
/// HL shift and bounds to 1e-9 relative, achieved alpha (1 - confidence) to `tol`.
fn hl(x: &[f64], y: &[f64], conf: f64, want: [f64; 3], alpha: f64, tol: f64) -> MwuMethod {
    let r = hodges_lehmann(x, y, conf).expect("attainable");
    rel_close(r.shift, want[0]);
    rel_close(r.low, want[1]);
    rel_close(r.high, want[2]);
    let gap = (1.0 - r.achieved_confidence - alpha).abs();
    assert!(gap <= tol, "achieved {}", r.achieved_confidence);
    r.method
}

#[test]
fn tv_mwu_1_to_5_males_females() {
    auto(&MALES, &FEMALES, TwoSided, 17.0, Exact, 0.1111111111111111);
    ex(&MALES, &FEMALES, Greater, 0.05555555555555555);
    ex(&MALES, &FEMALES, Less, 0.9682539682539683);
    asy(&MALES, &FEMALES, TwoSided, true, 0.11134688653314041);
    asy(&MALES, &FEMALES, Greater, true, 0.055673443266570206);
    asy(&MALES, &FEMALES, Less, true, 0.9669037101389033);
    asy(&MALES, &FEMALES, TwoSided, false, 0.0864107329737);
    asy(&MALES, &FEMALES, Less, false, 0.95679463351315);
    // TV-MWU-5: n1 < n2, where statrs 0.19.1 returns 1.0.
    auto(&FEMALES, &MALES, TwoSided, 3.0, Exact, 0.1111111111111111);
}

#[test]
fn tv_mwu_6_to_9() {
    let x = [5.0, 2.0, 7.0, 8.0, 9.0, 3.0, 11.0, 12.0];
    let y = [1.0, 6.0, 10.0, 4.0];
    auto(&x, &y, Greater, 21.0, Exact, 0.23030303030303031);
    ex(&x, &y, Less, 0.8161616161616161);
    ex(&x, &y, TwoSided, 0.46060606060606063);

    let x = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
    let y = [6.0, 7.0, 8.0, 9.0, 10.0];
    auto(&x, &y, TwoSided, 0.5, Asymptotic, 0.010411098147110422);
    assert!(mann_whitney_with(&x, &y, TwoSided, Exact, true).is_none());

    let x = [19.0, 22.0, 16.0, 29.0, 24.0, 28.0, 7.0, 10.0, 30.0];
    let y = [20.0, 11.0, 17.0, 12.0, 5.0, 31.0, 18.0, 2.0, 34.0];
    auto(&x, &y, TwoSided, 49.0, Exact, 0.4894282188399835);
    asy(&x, &y, TwoSided, true, 0.47992869214595724);

    let x = [1.0, 1.0, 2.0, 2.0, 2.0, 3.0];
    let y = [2.0, 3.0, 3.0, 3.0, 4.0, 4.0];
    auto(&x, &y, TwoSided, 4.0, Asymptotic, 0.02444894531008939);
    asy(&x, &y, TwoSided, false, 0.019630657257290667);
}

#[test]
fn tv_mwu_10_new_vs_base() {
    auto(&NEW, &BASE, TwoSided, 100.0, Exact, 1.082508822446903e-05);
    ex(&NEW, &BASE, Greater, 5.412544112234515e-06);
    asy(&NEW, &BASE, TwoSided, true, 0.00018267179110955002);
}

#[test]
fn tv_mwu_11_complete_separation_floor() {
    #[rustfmt::skip]
    let want = [1.0 / 3.0, 0.1, 0.02857142857142857, 0.007936507936507936,
        0.0021645021645021645, 5.827505827505828e-4, 1.554001554001554e-4,
        4.113533525298231e-5, 1.082508822446903e-5];
    for (n, w) in (2..=10).zip(want) {
        let x: Vec<f64> = (0..n).map(f64::from).collect();
        let y: Vec<f64> = (0..n).map(|i| 100.0 + f64::from(i)).collect();
        ex(&x, &y, TwoSided, w);
    }
}

#[test]
fn tv_mwu_12_13_all_tied_and_hollander_wolfe() {
    let (ones2, ones3) = ([1.0; 2], [1.0; 3]);
    auto(&ones2, &ones3, TwoSided, 3.0, Asymptotic, 1.0);
    auto(&HW_X, &HW_Y, TwoSided, 35.0, Exact, 0.2544122544122544);
    asy(&HW_X, &HW_Y, Greater, false, 0.11033568095992347);
}

#[test]
fn tv_mwu_14_15_null_cdf_and_midranks() {
    abs_close(exact_null_cdf(3, 5, 4), 0.05555555555555555);
    abs_close(exact_null_cdf(3, 4, 5), 0.05555555555555555);
    abs_close(exact_null_cdf(10, 10, 10), 7.523436316005975e-4);
    abs_close(exact_null_cdf(23, 10, 10), 0.02162852627248912);
    abs_close(exact_null_cdf(3, 2, 3), 0.6); // P(U >= 4) = 0.4 for (2, 3)
    abs_close(exact_null_cdf(20, 4, 5), 1.0);
    abs_close(exact_null_cdf(0, 0, 7), 1.0);
    let (ranks, ties) = midranks(&[4.0, 2.0, 2.0, 1.0]);
    assert_eq!((ranks, ties), (vec![4.0, 2.5, 2.5, 1.0], vec![2]));
}

#[test]
fn mwu_rejects_empty_and_non_finite() {
    assert!(mann_whitney(&[], &[1.0], TwoSided).is_none());
    assert!(mann_whitney(&[1.0], &[], TwoSided).is_none());
    assert!(mann_whitney(&[1.0, f64::NAN], &[2.0], TwoSided).is_none());
    assert!(mann_whitney(&[1.0], &[f64::INFINITY], Less).is_none());
    assert!(mann_whitney_with(&[1.0], &[f64::NAN], Less, Asymptotic, true).is_none());
}

#[test]
fn tv_hl_1_to_4() {
    let m = hl(&HW_X, &HW_Y, 0.90, [0.305, -0.08, 0.72], 0.09923, 1e-5);
    assert_eq!(m, Exact);
    hl(&HW_X, &HW_Y, 0.95, [0.305, -0.15, 0.76], 0.03996, 1e-5);
    hl(&NEW, &BASE, 0.95, [1.7, 1.3, 2.1], 0.043257, 1e-6);
    hl(&NEW, &BASE, 0.99, [1.7, 1.1, 2.3], 0.008931, 1e-6);
    // TV-HL-4: on logs, reported as a ratio.
    let ln = |v: &[f64]| v.iter().map(|a| a.ln()).collect::<Vec<_>>();
    let r = hodges_lehmann(&ln(&NEW), &ln(&BASE), 0.99).unwrap();
    abs_close(r.shift.exp(), 1.0169407116943228);
    abs_close(r.low.exp(), 1.010956175298804);
    abs_close(r.high.exp(), 1.0228855721393038);
}

#[test]
fn tv_hl_5_critical_ranks() {
    #[rustfmt::skip]
    let table = [(5, 3, 1), (8, 14, 8), (10, 24, 17), (15, 65, 52), (20, 128, 106), (30, 318, 277)];
    for (n, q05, q01) in table {
        // x_i = i*n + 0.5, y_j = j: all n*n differences are distinct, no ties,
        // so the lower bound is the qu-th smallest difference.
        let x: Vec<f64> = (0..n).map(|i| (i * n) as f64 + 0.5).collect();
        let y: Vec<f64> = (0..n).map(|j| j as f64).collect();
        let d = sorted_diffs(&x, &y);
        for (conf, want) in [(0.95, q05), (0.99, q01)] {
            let r = hodges_lehmann(&x, &y, conf).unwrap();
            let bounds = (d[want - 1], d[n * n - want]);
            assert_eq!((r.low, r.high), bounds, "n {n} at {conf}");
        }
    }
}

#[test]
fn tv_hl_6_unattainable_confidence() {
    let (x, y) = ([1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]);
    assert!(hodges_lehmann(&x, &y, 0.99).is_none());
    // 0.95 is attainable with 4 vs 4 (qu = 1, achieved 1 - 2/70).
    hl(&x, &y, 0.95, [-4.0, -7.0, -1.0], 2.0 / 70.0, 1e-12);
}

#[test]
fn hl_with_ties_uses_normal_critical_rank() {
    // One tie (value 9) across samples: sigma^2 = 100/12 * (21 - 6/380),
    // qu = floor(50 - 1.959964 * 13.223782) = 24, D_(24) = -12, D_(77) = -6,
    // achieved 1 - 2 Phi((24 - 0.5 - 50) / 13.223782), computed independently.
    let x: Vec<f64> = (0..10).map(f64::from).collect();
    let y: Vec<f64> = (0..10).map(|i| f64::from(i) + 9.0).collect();
    let m = hl(&x, &y, 0.95, [-9.0, -12.0, -6.0], 0.0450737863162323, 1e-9);
    assert_eq!(m, Asymptotic);
}

/// A small random sample drawn to make ties, duplicates, signed zeros, huge magnitudes
/// (whose differences overflow to infinity) and near-equal values likely.
fn awkward_sample(rng: &mut Xorshift, len: usize) -> Vec<f64> {
    #[rustfmt::skip]
    let pool = [0.0, -0.0, 1.0, -1.0, 0.1, 0.2, 0.30000000000000004, 1e308, -1e308,
        f64::MIN_POSITIVE, -5e-324, 100.2, 101.1];
    (0..len)
        .map(|_| match rng.next_u64() % 4 {
            0 => pool[(rng.next_u64() % pool.len() as u64) as usize],
            1 => (rng.next_u64() % 5) as f64,
            2 => rng.normal() * 1e3,
            _ => (rng.uniform() * 10.0).ln(),
        })
        .collect()
}

#[test]
fn the_interval_alone_is_the_interval_of_the_estimate() {
    let mut rng = Xorshift::new(20_261_202);
    let (mut attained, mut unattained) = (0, 0);
    for trial in 0..1_200 {
        // Exact critical ranks below m·n = 10,000, the normal approximation above, and
        // sizes too small for the level.
        let size = |rng: &mut Xorshift| match trial % 3 {
            0 => 1 + (rng.next_u64() % 6) as usize,
            1 => 5 + (rng.next_u64() % 20) as usize,
            _ => 101 + (rng.next_u64() % 20) as usize,
        };
        let (m, n) = (size(&mut rng), size(&mut rng));
        let (x, y) = if trial % 2 == 0 {
            (awkward_sample(&mut rng, m), awkward_sample(&mut rng, n))
        } else {
            let draw =
                |rng: &mut Xorshift, k| (0..k).map(|_| rng.normal() * 0.05).collect::<Vec<f64>>();
            (draw(&mut rng, m), draw(&mut rng, n))
        };
        let confidence = [0.9, 0.98, 0.999, 0.99998][trial % 4];
        let alone =
            hodges_lehmann_interval(&x, &y, confidence).map(|(l, h)| (l.to_bits(), h.to_bits()));
        let whole = hodges_lehmann(&x, &y, confidence).map(|e| (e.low.to_bits(), e.high.to_bits()));
        assert_eq!(alone, whole, "trial {trial}: {x:?} - {y:?} at {confidence}");
        // An estimate prepared at another level, asked again at this one.
        let prepared = HodgesLehmann::with_interval(&x, &y, 0.5)
            .and_then(|(hl, _)| hl.estimate(confidence))
            .map(|e| (e.low.to_bits(), e.high.to_bits()));
        let at = format!("trial {trial}: {x:?} - {y:?} at {confidence}");
        assert_eq!(alone, prepared, "{at}");
        match alone {
            Some(_) => attained += 1,
            None => unattained += 1,
        }
    }
    let both = attained > 600 && unattained > 100;
    assert!(both, "{attained} {unattained}");
    for bad in [0.0, 1.0, -0.5, f64::NAN] {
        assert_eq!(hodges_lehmann_interval(&[1.0, 2.0], &[3.0], bad), None);
    }
    assert_eq!(hodges_lehmann_interval(&[], &[3.0], 0.9), None);
    assert_eq!(hodges_lehmann_interval(&[f64::NAN], &[3.0], 0.9), None);
}

#[test]
fn tie_groups_from_the_sorted_sides_are_the_pooled_samples() {
    let mut seed = 7u64;
    let mut next = || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        seed >> 33
    };
    // Few distinct values, signed zeros among them, so that ties span both sides.
    let palette = [-0.0, 0.0, 1.0, 1.5, -2.0, 1e-300, 3.0];
    for _ in 0..300 {
        let (m, n) = (1 + next() as usize % 12, 1 + next() as usize % 12);
        let x: Vec<f64> = (0..m).map(|_| palette[next() as usize % 7]).collect();
        let y: Vec<f64> = (0..n).map(|_| palette[next() as usize % 7]).collect();
        let (_, pooled) = u_statistic(&x, &y);
        assert_eq!(tie_groups(&sorted(&x), &sorted(&y)), pooled, "{x:?} {y:?}");
    }
    assert!(tie_groups(&[1.0, 2.0], &[3.0]).is_empty());
}

#[test]
fn sampled_pivots_select_the_same_bits_on_large_samples() {
    // Sizes where the walks draw their pivots from many candidates: ties, signed zeros,
    // extremes (`awkward_sample`) and plain normal samples, ranks at both ends and inside.
    let mut rng = Xorshift::new(20_261_204);
    for trial in 0..60 {
        let m = 20 + (rng.next_u64() % 180) as usize;
        let n = 20 + (rng.next_u64() % 180) as usize;
        let (x, y) = if trial % 2 == 0 {
            (awkward_sample(&mut rng, m), awkward_sample(&mut rng, n))
        } else {
            let normal =
                |rng: &mut Xorshift, len| (0..len).map(|_| rng.normal()).collect::<Vec<f64>>();
            (normal(&mut rng, m), normal(&mut rng, n))
        };
        let d = PairwiseDifferences::new(&x, &y).unwrap();
        let len = d.len();
        #[rustfmt::skip]
        let ends = [1, 2, len / 40 + 1, len / 2, len / 2 + 1, len - len / 40, len];
        let random = (0..8)
            .map(|_| 1 + (rng.next_u64() as usize % len))
            .collect::<Vec<_>>();
        for k in ends.into_iter().chain(random) {
            let (walks, in_place) = (d.kth_by_walks(k), d.kth_in_place(k));
            let (walks, in_place) = (walks.to_bits(), in_place.to_bits());
            assert_eq!(walks, in_place, "trial {trial}, {m} x {n}, k {k}");
        }
    }
}

#[test]
fn selection_matches_the_sorted_differences_bit_for_bit() {
    let mut rng = Xorshift::new(20_260_117);
    let mut compared = 0;
    for trial in 0..3_000 {
        let m = 1 + (rng.next_u64() % 12) as usize;
        let n = 1 + (rng.next_u64() % 12) as usize;
        let (x, y) = (awkward_sample(&mut rng, m), awkward_sample(&mut rng, n));
        let want = sorted_diffs(&x, &y);
        let d = PairwiseDifferences::new(&x, &y).unwrap();
        assert_eq!(d.len(), want.len());
        assert_eq!(d.kth(0), None);
        assert_eq!(d.kth(want.len() + 1), None);
        for (k, w) in want.iter().enumerate() {
            // Both selections, whichever `kth` picks for this size.
            let pair = d.kth_pair(k + 1, want.len()).unwrap().0;
            for got in [d.kth_in_place(k + 1), d.kth_by_walks(k + 1), pair] {
                let (got, w) = (got.to_bits(), w.to_bits());
                assert_eq!(got, w, "trial {trial} k {k}: {x:?} - {y:?}");
            }
        }
        for low in 1..=want.len() {
            for high in [low, (low + want.len()) / 2, want.len()] {
                let (l, h) = d.kth_pair(low, high).unwrap();
                let got = (l.to_bits(), h.to_bits());
                let ends = (want[low - 1].to_bits(), want[high - 1].to_bits());
                assert_eq!(got, ends, "trial {trial} pair {low}, {high}");
            }
        }
        assert_eq!(d.kth_pair(2, 1), None);
        let bits = |v: f64| v.to_bits();
        let median = bits(median_sorted(&want));
        assert_eq!(bits(d.median()), median, "trial {trial}");
        // The median with each symmetric interval's ends, from one selection.
        for low in 1..=want.len().div_ceil(2) {
            let high = want.len() + 1 - low;
            let (median, pair) = d.median_and_pair(Some((low, high)));
            assert_eq!(bits(median), bits(median_sorted(&want)), "trial {trial}");
            let ends = Some((bits(want[low - 1]), bits(want[high - 1])));
            let got = pair.map(|(l, h)| (bits(l), bits(h)));
            assert_eq!(got, ends, "trial {trial} pair {low}, {high}");
        }
        let (median, pair) = d.median_and_pair(None);
        assert_eq!((bits(median), pair), (bits(median_sorted(&want)), None));
        for conf in [0.5, 0.8, 0.9, 0.95, 0.98, 0.99] {
            let got = hodges_lehmann(&x, &y, conf);
            let brute = hodges_lehmann_brute(&x, &y, conf);
            let bits = |e: Option<ShiftEstimate>| {
                e.map(|e| {
                    let b = [e.shift, e.low, e.high, e.achieved_confidence].map(f64::to_bits);
                    (b, e.method)
                })
            };
            assert_eq!(bits(got), bits(brute), "trial {trial} at {conf}");
            compared += usize::from(got.is_some());
        }
    }
    assert!(compared > 5_000, "{compared}");
}

#[test]
fn rank_sums_from_sorted_samples_are_the_rank_sums_of_the_pooled_ranking() {
    let mut rng = Xorshift::new(5);
    for trial in 0..2_000 {
        let draw = |rng: &mut Xorshift| match trial % 3 {
            0 => [-0.0, 0.0, 1.0, -2.5, 3.0][(rng.next_u64() % 5) as usize],
            1 => (rng.normal() * 4.0).round() / 2.0,
            _ => 100.0 * (0.05 * rng.normal()).exp(),
        };
        let m = 1 + (rng.next_u64() % 35) as usize;
        let n = 1 + (rng.next_u64() % 35) as usize;
        let x: Vec<f64> = (0..m).map(|_| draw(&mut rng)).collect();
        let y: Vec<f64> = (0..n).map(|_| draw(&mut rng)).collect();
        let ranked = RankSum::new(&x, &y).unwrap();
        let merged = RankSum::from_sorted(&sorted(&x), &sorted(&y)).unwrap();
        assert_eq!(ranked.u1.to_bits(), merged.u1.to_bits(), "trial {trial}");
        assert_eq!(ranked.ties, merged.ties, "trial {trial}");
    }
    assert!(RankSum::from_sorted(&[], &[1.0]).is_none());
    assert!(RankSum::from_sorted(&[f64::NAN], &[1.0]).is_none());
}

#[test]
fn the_mad_from_the_sorted_sample_is_the_median_of_the_sorted_deviations() {
    let mut rng = Xorshift::new(99);
    for trial in 0..2_000 {
        let n = 1 + trial % 41;
        let values: Vec<f64> = (0..n)
            .map(|_| match trial % 4 {
                // Few distinct values (many zero deviations), signed zeros, negatives.
                0 => [-0.0, 0.0, 1.0, -2.5, 3.0][(rng.next_u64() % 5) as usize],
                1 => (rng.normal() * 4.0).round() / 2.0,
                2 => 1e-300 * rng.normal(),
                _ => 100.0 * (0.05 * rng.normal()).exp(),
            })
            .collect();
        let sorted = sorted(&values);
        let median = median_sorted(&sorted);
        let mut deviations: Vec<f64> = values.iter().map(|v| (v - median).abs()).collect();
        deviations.sort_by(f64::total_cmp);
        let (got, want) = (mad_sorted(&sorted, median), median_sorted(&deviations));
        assert_eq!(got.to_bits(), want.to_bits(), "trial {trial}: {values:?}");
    }
}

#[test]
fn total_order_keys_order_as_total_cmp_and_invert() {
    #[rustfmt::skip]
    let values = [f64::NEG_INFINITY, -1e308, -1.5, -5e-324, -0.0, 0.0, 5e-324, f64::MIN_POSITIVE,
        1.5, 1e308, f64::INFINITY];
    for a in values {
        let back = from_total_order_key(total_order_key(a));
        assert_eq!(back.to_bits(), a.to_bits());
        for b in values {
            assert_eq!(total_order_key(a).cmp(&total_order_key(b)), a.total_cmp(&b));
        }
    }
}

#[test]
fn selection_matches_on_larger_tied_and_untied_samples() {
    let mut rng = Xorshift::new(7);
    for trial in 0..40 {
        let m = 50 + (rng.next_u64() % 150) as usize;
        let n = 50 + (rng.next_u64() % 150) as usize;
        // Half the trials on a coarse grid (many ties), half continuous.
        let draw = |rng: &mut Xorshift| {
            let v = 100.0 * (0.05 * rng.normal()).exp();
            if trial % 2 == 0 {
                (v * 4.0).round() / 4.0
            } else {
                v
            }
        };
        let x: Vec<f64> = (0..m).map(|_| draw(&mut rng)).collect();
        let y: Vec<f64> = (0..n).map(|_| draw(&mut rng)).collect();
        let (prepared, _) = HodgesLehmann::with_interval(&x, &y, 0.5).unwrap();
        for conf in [0.9, 0.98, 0.99, 0.9999] {
            let brute = hodges_lehmann_brute(&x, &y, conf);
            assert_eq!(prepared.estimate(conf), brute, "trial {trial} at {conf}");
            // The interval selected beside the median, in the pass that finds it.
            let (with, estimate) = HodgesLehmann::with_interval(&x, &y, conf).unwrap();
            assert_eq!(estimate, brute, "trial {trial} at {conf}");
            assert_eq!(with.shift().to_bits(), prepared.shift().to_bits());
        }
    }
}

#[test]
fn a_hundred_thousand_a_side_needs_no_quadratic_memory() {
    // 10^10 differences would be 80 GB; the selection holds the two samples.
    let x: Vec<f64> = (0..100_000).map(|i| f64::from(i) * 1e-3 + 0.25).collect();
    let y: Vec<f64> = (0..100_000).map(|i| f64::from(i) * 1e-3).collect();
    let e = hodges_lehmann(&x, &y, 0.99).unwrap();
    assert_eq!(e.method, Asymptotic);
    assert!((e.shift - 0.25).abs() < 1e-9, "{e:?}");
    assert!(e.low < e.shift && e.shift < e.high, "{e:?}");
}

#[test]
fn hl_rejects_bad_input() {
    assert!(hodges_lehmann(&[], &[1.0], 0.95).is_none());
    assert!(hodges_lehmann(&[1.0, f64::NAN], &[1.0], 0.95).is_none());
    assert!(hodges_lehmann(&[1.0, 2.0], &[3.0, 4.0], 1.0).is_none());
}

#[test]
fn summary_tukey_outliers_and_mad() {
    // Sorted [-20, 1..9, 100]: Q1 = 2.5, Q3 = 7.5, fences (-5, 15): two outliers.
    // |x - 5| sorted: 0,1,1,2,2,3,3,4,4,25,95, so MAD = 3.
    let v: Vec<f64> = (1..=9).map(f64::from).chain([100.0, -20.0]).collect();
    let s = summarize(&v).unwrap();
    assert_eq!((s.n, s.outliers, s.min, s.max), (11, 2, -20.0, 100.0));
    assert_eq!((s.median, s.mad), (5.0, 3.0));
    abs_close(s.mean, 125.0 / 11.0);
    // TV-OUT-1 / TV-OUT-3: [1..9, 100]; only 100 lies outside (-3.5, 14.5).
    let w: Vec<f64> = (1..=9).map(f64::from).chain([100.0]).collect();
    let s = summarize(&w).unwrap();
    assert_eq!((s.outliers, s.median, s.mad), (1, 5.5, 2.5));
    abs_close(quantile_type7(&sorted(&w), 0.25), 3.25);
    abs_close(quantile_type7(&sorted(&w), 0.75), 7.75);
    // TV-OUT-4: only 14.8 lies outside (9.7375, 10.4375).
    let s = summarize(&[10.1, 10.0, 10.2, 10.1, 9.9, 10.0, 10.3, 10.1, 14.8, 10.0]).unwrap();
    assert_eq!(s.outliers, 1);
    rel_close(s.mean, 10.55);
    rel_close(s.median, 10.1);
}

#[test]
fn summary_spread() {
    // Mean 5, sum of squares 32; median 4.5, deviations 0.5 (x5), 2.5, 2.5, 4.5.
    let s = summarize(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
    abs_close(s.std_dev, (32.0f64 / 7.0).sqrt());
    abs_close(s.cv, (32.0f64 / 7.0).sqrt() / 5.0);
    assert_eq!((s.mean, s.mad, s.outliers), (5.0, 0.5, 1)); // 9 > 5.5 + 1.5 * 1.5
}

#[test]
fn summary_edge_cases() {
    assert!(summarize(&[]).is_none());
    assert!(summarize(&[1.0, f64::NAN]).is_none());
    assert!(summarize(&[f64::NEG_INFINITY]).is_none());
    let one = summarize(&[3.5]).unwrap();
    let one = (one.std_dev, one.cv, one.mad, one.median);
    assert_eq!(one, (0.0, 0.0, 0.0, 3.5));
    assert_eq!(summarize(&[-1.0, 1.0]).unwrap().cv, 0.0);
    assert_eq!(median(&[]), None);
    assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
    assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
}
