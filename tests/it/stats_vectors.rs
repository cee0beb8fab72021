//! kgate's statistics against values generated with scipy by `scripts/gen_stats_vectors.py`
//! (committed as `tests/fixtures/stats_vectors.json`; these tests need no Python).

use kgate::stats::inference::{self, Correction, History};
use kgate::stats::{self, Alternative, MwuMethod};
use serde_json::Value;

fn vectors() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/stats_vectors.json"
    );
    let text = std::fs::read_to_string(path).expect("tests/fixtures/stats_vectors.json");
    serde_json::from_str(&text).expect("valid JSON")
}

fn floats(v: &Value) -> Vec<f64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect()
}

fn rel_close(got: f64, want: f64, tol: f64, what: &str) {
    let scale = want.abs().max(1e-300);
    assert!(
        (got - want).abs() <= tol * scale,
        "{what}: got {got}, want {want}"
    );
}

#[test]
fn mann_whitney_matches_scipy() {
    let v = vectors();
    let cases = v["mann_whitney"].as_array().unwrap();
    assert!(cases.len() >= 8);
    let mut checked = 0;
    for (i, case) in cases.iter().enumerate() {
        let (x, y) = (floats(&case["x"]), floats(&case["y"]));
        for (method, name) in [
            (MwuMethod::Exact, "exact"),
            (MwuMethod::Asymptotic, "asymptotic"),
        ] {
            for (alt, alt_name) in [
                (Alternative::TwoSided, "two-sided"),
                (Alternative::Greater, "greater"),
                (Alternative::Less, "less"),
            ] {
                let key = format!("{name}_{alt_name}");
                let Some(want) = case[&key].as_f64() else {
                    continue;
                };
                let got = stats::mann_whitney_with(&x, &y, alt, method, true).unwrap();
                assert_eq!(got.u1, case["u1"].as_f64().unwrap(), "case {i} U1");
                let tol = if method == MwuMethod::Exact {
                    1e-12
                } else {
                    1e-9
                };
                rel_close(got.p_value, want, tol, &format!("case {i} {key}"));
                checked += 1;
            }
        }
    }
    assert!(checked >= 40, "only {checked} p-values checked");
}

#[test]
fn benjamini_hochberg_matches_scipy() {
    let v = vectors();
    for case in v["benjamini_hochberg"].as_array().unwrap() {
        let got = inference::adjust(&floats(&case["p"]), Correction::Bh);
        for (g, w) in got.iter().zip(floats(&case["adjusted"])) {
            rel_close(*g, w, 1e-12, "BH adjusted p");
        }
    }
}

#[test]
fn minimum_detectable_effect_matches_scipy_noncentral_t() {
    let v = vectors();
    for case in v["mde_standardised"].as_array().unwrap() {
        let n = case["n"].as_u64().unwrap() as usize;
        let alpha = case["alpha"].as_f64().unwrap();
        let two = case["two_sided"].as_bool().unwrap();
        let got = inference::min_detectable_shift(1.0, n, n, alpha, 0.8, two).unwrap();
        rel_close(
            got,
            case["d"].as_f64().unwrap(),
            1e-5,
            &format!("d at n={n}"),
        );
    }
}

#[test]
fn prediction_interval_matches_scipy_student_t() {
    let v = vectors();
    for case in v["prediction_interval"].as_array().unwrap() {
        let h = History::new(&floats(&case["jobs"])).unwrap();
        let level = case["level"].as_f64().unwrap();
        rel_close(
            h.upper_limit(level),
            case["upper"].as_f64().unwrap(),
            1e-9,
            "upper",
        );
        rel_close(
            h.lower_limit(level),
            case["lower"].as_f64().unwrap(),
            1e-9,
            "lower",
        );
        let p = h.p_above(case["new"].as_f64().unwrap());
        rel_close(p, case["p_above"].as_f64().unwrap(), 1e-7, "p_above");
    }
}
