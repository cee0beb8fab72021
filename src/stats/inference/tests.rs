use super::*;

fn close(got: f64, want: f64, tol: f64) {
    let ok = (got - want).abs() <= tol * want.abs().max(1e-300);
    assert!(ok, "got {got}, want {want}");
}

// docs/statistics.md / TV-MT-1 (Benjamini & Hochberg 1995 data).
const BH95: [f64; 15] = [
    0.0001, 0.0004, 0.0019, 0.0095, 0.0201, 0.0278, 0.0298, 0.0344, 0.0459, 0.3240, 0.4262, 0.5719,
    0.6528, 0.7590, 1.0000,
];

#[test]
fn tv_mt_1_holm_and_bh() {
    let holm = [
        0.0015, 0.0056, 0.0247, 0.114, 0.2211, 0.278, 0.278, 0.278, 0.3213, 1.0, 1.0, 1.0, 1.0,
        1.0, 1.0,
    ];
    let bh = [
        0.0015, 0.003, 0.0095, 0.035625, 0.0603, 0.063857, 0.063857, 0.0645, 0.0765, 0.486,
        0.581182, 0.714875, 0.753231, 0.813214, 1.0,
    ];
    for (got, want) in adjust(&BH95, Correction::Holm).iter().zip(holm) {
        close(*got, want, 1e-9);
    }
    for (got, want) in adjust(&BH95, Correction::Bh).iter().zip(bh) {
        close(*got, want, 1e-5);
    }
    let rejected = |c| adjust(&BH95, c).iter().filter(|p| **p <= 0.05).count();
    assert_eq!(rejected(Correction::Holm), 3);
    assert_eq!(rejected(Correction::Bh), 4);
    // Input order is kept.
    let shuffled = [0.5, 0.01, 0.04];
    assert_eq!(adjust(&shuffled, Correction::Bh), vec![0.5, 0.03, 0.06]);
    assert!(adjust(&[], Correction::Holm).is_empty());
}

#[test]
fn decision_levels_are_what_the_rejected_tests_cleared() {
    // BH rejects 4 of 15 at 0.05: each rejected raw p is at most 0.05 · 4 / 15.
    let bh = adjust(&BH95, Correction::Bh);
    let level = decision_level(&bh, 0.05, Correction::Bh);
    close(level, 0.05 * 4.0 / 15.0, 1e-12);
    for (raw, adj) in BH95.iter().zip(&bh) {
        assert_eq!(*adj <= 0.05, *raw <= level, "raw {raw}");
    }
    // Holm rejects 3: the third rejection needed p ≤ 0.05 / 13.
    let holm = adjust(&BH95, Correction::Holm);
    let level = decision_level(&holm, 0.05, Correction::Holm);
    close(level, 0.05 / 13.0, 1e-12);
    // Nothing rejected: the level a single rejection faces, alpha / m.
    let none = adjust(&[0.5, 0.9], Correction::Bh);
    close(decision_level(&none, 0.01, Correction::Bh), 0.005, 1e-12);
    close(decision_level(&none, 0.01, Correction::Holm), 0.005, 1e-12);
}

#[test]
fn tv_pwr_1_exact_mde_table() {
    // docs/statistics.md, α = 0.01 two-sided, power 0.8: standardised effect d.
    for (n, d) in [(5, 2.7445), (10, 1.6861), (30, 0.9085), (100, 0.4874)] {
        let got = min_detectable_shift(1.0, n, n, 0.01, 0.8, true).unwrap();
        close(got, d, 2e-4);
    }
    // c = 1 %: 2.78 %, 1.70 %, 0.91 %, 0.49 % (two-sided) and 2.46 %, 1.55 % (one-sided).
    let sigma = (1.0f64 + 0.01 * 0.01).ln().sqrt();
    let pct = |alpha, n, two| {
        let shift = min_detectable_shift(sigma, n, n, alpha, 0.8, two).unwrap();
        (shift.exp_m1() * 1e4).round() / 100.0
    };
    let two_sided = [5, 10, 30, 100].map(|n| pct(0.01, n, true));
    assert_eq!(two_sided, [2.78, 1.70, 0.91, 0.49]);
    assert_eq!([pct(0.01, 5, false), pct(0.01, 10, false)], [2.46, 1.55]);
    // Recommended design (one-sided 6.67e-5 per look), c = 1 %: 2.65 %, 1.64 %, 1.10 %.
    let design = [10, 20, 40].map(|n| pct(0.01 / 50.0 / 3.0, n, false));
    assert_eq!(design, [2.65, 1.64, 1.10]);
    assert_eq!(min_detectable_shift(1.0, 1, 5, 0.01, 0.8, true), None);
}

#[test]
fn tv_b_1_and_3_prediction_limits() {
    // Mean 0, sd 1, K = 6 (sd of these six values is exactly 1 after scaling).
    let raw = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
    let s = crate::stats::summarize(&raw).unwrap();
    let jobs: Vec<f64> = raw.iter().map(|v| (v - s.mean) / s.std_dev).collect();
    let h = History::new(&jobs).unwrap();
    close(h.upper_limit(0.85), 1.2483714094976244, 1e-9);
    close(-h.lower_limit(0.85), 1.2483714094976244, 1e-9);
    let h = History {
        mean: 100.0,
        sd: 10.0,
        jobs: 25,
    };
    close(h.upper_limit(0.977), 121.4609034715276, 1e-9);
    close(h.p_above(121.4609034715276), 0.023, 1e-6);
    assert!(History::new(&[1.0]).is_none());
}

#[test]
fn welch_on_summaries_matches_scipy() {
    // scipy.stats.ttest_ind_from_stats(1.2, 0.3, 10, 1.0, 0.1, 20, equal_var=False): two-sided
    // p 0.06725094678670959, alternative='greater' 0.033625473393354796; df and the 95 %
    // half-width from the Welch–Satterthwaite formula with scipy.stats.t.ppf.
    let w = Welch::new((1.0, 0.1, 20.0), (1.2, 0.3, 10.0)).unwrap();
    close(w.p_above_below().0, 0.033625473393354796, 1e-9);
    close(w.p_above_below().1, 1.0 - 0.033625473393354796, 1e-9);
    // Far in a tail, each side from its own tail: alternative='less' of
    // ttest_ind_from_stats(6.68, 1.43, 100, 8.48, 0.194, 100, equal_var=False) is
    // 1.3765679285496264e-22 (KernelBench's LogSoftmax, eager against torch.compile), which
    // 1 − P(T ≥ t) would round to 0.
    let far = Welch::new((8.48, 0.194, 100.0), (6.68, 1.43, 100.0)).unwrap();
    let (above, below) = far.p_above_below();
    close(below / 1.3765679285496264e-22, 1.0, 1e-6);
    assert_eq!(above, 1.0);
    close(w.se, 0.09746794344808964, 1e-12);
    close(w.df, 10.013138686131388, 1e-12);
    close(w.half_width(0.95), 0.21713349175440735, 1e-9);
    // Fewer than two samples, or no spread on either side: no test.
    assert!(Welch::new((1.0, 0.1, 1.0), (1.2, 0.3, 10.0)).is_none());
    assert!(Welch::new((1.0, 0.0, 5.0), (1.2, 0.0, 10.0)).is_none());
    assert!(Welch::new((f64::NAN, 0.1, 5.0), (1.2, 0.1, 10.0)).is_none());
}

#[test]
fn noise_from_an_interval_inverts_the_normal_interval() {
    // A 99 % interval ±z·σ·√(2/10) around 0 on the log scale gives σ back.
    let sigma = 0.01;
    let z = Normal::standard().inverse_cdf(0.995);
    let half = z * sigma * (0.2f64).sqrt();
    let ci = [(-half).exp_m1(), half.exp_m1()];
    close(noise_from_interval(ci, 0.99, 10, 10).unwrap(), sigma, 1e-12);
    assert_eq!(noise_from_interval([-1.5, 0.1], 0.99, 10, 10), None);
    // Spikes: the interval-implied noise wins over the robust one.
    let calm: Vec<f64> = (0..10).map(|i| 100.0 + f64::from(i) * 0.05).collect();
    let noise = pooled_log_noise(&calm, &calm).unwrap();
    let robust = min_detectable_change(noise, (10, 10), 0.005, None).unwrap();
    let wide = min_detectable_change(noise, (10, 10), 0.005, Some((ci, 0.99))).unwrap();
    assert!(wide > robust, "{wide} vs {robust}");
}

#[test]
fn look_plans_step_until_max() {
    assert_eq!(LookPlan::new(10, 20, 2).looks, vec![10, 12, 14, 16, 18, 20]);
    assert_eq!(LookPlan::new(10, 15, 2).looks, vec![10, 12, 14, 15]);
    assert_eq!(LookPlan::new(10, 10, 2).looks, vec![10]);
    assert_eq!(LookPlan::new(10, 10, 2).alpha_per_look(0.01), 0.01);
    // A long plan's step is raised to at most MAX_LOOKS looks.
    let long = LookPlan::new(10, 1000, 1);
    assert!(long.looks.len() <= MAX_LOOKS, "{}", long.looks.len());
    assert_eq!(*long.looks.last().unwrap(), 1000);
    let schedule = Schedule {
        min: 10,
        step: 16,
        max: 1000,
    };
    assert_eq!(long.schedule(), Some(schedule));
    // Recorded plans without a schedule split alpha equally (Bonferroni).
    let three = LookPlan::bonferroni(3);
    close(three.alpha_per_look(0.01), 0.01 / 3.0, 1e-15);
    close(three.sequential_p(0.001), 0.003, 1e-15);
}

#[test]
fn constant_boundary_reproduces_pocock_constants() {
    // Pocock's constants for K equally spaced looks, two-sided 5 % (Jennison and
    // Turnbull 2000, table 2.1): the upper boundary alone is crossed with probability
    // 2.5 % (the lower crossing after an upper one is negligible).
    for (k, c) in [(2u32, 2.178), (5, 2.413), (10, 2.555)] {
        let times: Vec<f64> = (1..=k).map(f64::from).collect();
        let p = boundary_crossing(&times, c);
        close(p, 0.025, 4e-3);
    }
    // One look is the normal tail.
    let tail = Normal::standard().sf(2.0);
    close(boundary_crossing(&[10.0], 2.0), tail, 1e-12);
    // Looks every 2 repetitions from 10 to 40: the nominal level is between the single
    // look's alpha and Bonferroni's alpha / 16, and it inverts the sequential p.
    let plan = LookPlan::new(10, 40, 2);
    assert_eq!(plan.count(), 16);
    let c = plan.nominal_level(0.01);
    assert!(c < 0.01 && c > 0.01 / 16.0, "{c}");
    close(plan.sequential_p(c), 0.01, 1e-6);
    // Monotone, at least p and at most K·p, at every level the gate uses.
    let mut last = 0.0;
    for e in (1..=200).rev() {
        let p = 10f64.powf(-f64::from(e) / 10.0);
        let s = plan.sequential_p(p);
        assert!(s >= last && s >= p && s <= 16.0 * p + 1e-15, "{p} {s}");
        last = s;
    }
    // A finer grid gives the same crossing probability.
    let times: Vec<f64> = plan.looks.iter().map(|n| f64::from(*n)).collect();
    for z in [2.0, 3.0, 4.5] {
        let coarse = boundary_crossing(&times, z);
        let fine = boundary_crossing_with(&times, z, 24.0);
        close(coarse, fine, 2e-3);
    }
}

#[test]
fn mwu_floor_matches_section_2_6() {
    close(mwu_floor(5, 5), 0.003968, 1e-3);
    close(mwu_floor(10, 10), 5.41e-6, 1e-3);
    close(mwu_floor(4, 5), 1.0 / 126.0, 1e-12);
}

#[test]
fn log_noise_from_sorted_logs_is_the_same_bits() {
    let mut rng = Xorshift::new(11);
    for trial in 0..200 {
        let n = 2 + trial % 40;
        // Every third trial on a coarse grid, where the MAD can be zero.
        let values: Vec<f64> = (0..n)
            .map(|_| {
                let v = 100.0 * (0.05 * rng.normal()).exp();
                if trial % 3 == 0 { v.round() } else { v }
            })
            .collect();
        let mut logs: Vec<f64> = values.iter().map(|v| v.ln()).collect();
        logs.sort_by(f64::total_cmp);
        let want = log_noise(&values).unwrap();
        match log_noise_of_sorted_logs(&logs) {
            Some(got) => assert_eq!(got.to_bits(), want.to_bits(), "trial {trial}"),
            None => assert_eq!(crate::stats::summarize(&logs).unwrap().mad, 0.0),
        }
    }
    assert_eq!(log_noise_of_sorted_logs(&[1.0]), None);
}

#[test]
fn log_noise_is_robust_to_one_spike() {
    #[rustfmt::skip]
    let calm = [100.0, 101.0, 99.0, 100.5, 99.5, 100.2, 99.8, 100.1, 99.9, 100.3];
    let mut spiky = calm;
    spiky[3] = 150.0;
    let (a, b) = (log_noise(&calm).unwrap(), log_noise(&spiky).unwrap());
    assert!((a - b).abs() / a < 0.5, "{a} vs {b}");
    assert!(log_noise(&[1.0, -1.0]).is_none());
}

#[test]
fn xorshift_normals_have_unit_variance() {
    let mut r = Xorshift::new(7);
    let xs: Vec<f64> = (0..20000).map(|_| r.normal()).collect();
    let s = crate::stats::summarize(&xs).unwrap();
    let unit = s.mean.abs() < 0.03 && (s.std_dev - 1.0).abs() < 0.03;
    assert!(unit, "{s:?}");
}
