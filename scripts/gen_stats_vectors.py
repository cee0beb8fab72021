#!/usr/bin/env python3
"""Generate reference values for kgate's statistics tests with scipy.

Writes tests/fixtures/stats_vectors.json, which tests/it/stats_vectors.rs reads; the Rust tests
do not need Python. Regenerate (and commit the JSON) after changing the cases below:

    pip install scipy==1.17.1 numpy
    python3 scripts/gen_stats_vectors.py

Every case is drawn from a seeded generator, so reruns give the same file.
"""
import json
import math
import os

import numpy as np
import scipy
from scipy import optimize, stats

rng = np.random.default_rng(20260731)


def lognormal(n, cv, shift=0.0, decimals=None):
    sigma = math.sqrt(math.log(1 + cv * cv))
    x = 100.0 * np.exp(shift + sigma * rng.standard_normal(n))
    if decimals is not None:
        x = np.round(x, decimals)
    return [float(v) for v in x]


mwu = []
for n1, n2, shift, decimals in [
    (5, 5, 0.02, None),
    (6, 9, 0.0, None),
    (8, 8, 0.01, None),
    (10, 10, 0.015, None),
    (4, 12, -0.02, None),
    (15, 12, 0.005, None),
    (20, 20, 0.01, 0),  # rounded: ties, asymptotic only
    (30, 25, 0.0, 1),
]:
    x = lognormal(n1, 0.01, shift, decimals)
    y = lognormal(n2, 0.01, 0.0, decimals)
    ties = len(set(x + y)) < n1 + n2
    case = {"x": x, "y": y, "ties": ties}
    methods = ["asymptotic"] if ties else ["exact", "asymptotic"]
    for method in methods:
        for alt in ["two-sided", "greater", "less"]:
            r = stats.mannwhitneyu(x, y, alternative=alt, method=method, use_continuity=True)
            case.setdefault("u1", float(r.statistic))
            case[f"{method}_{alt}"] = float(r.pvalue)
    mwu.append(case)

bh = []
for m in [3, 7, 20]:
    p = [float(v) for v in rng.uniform(0, 0.05, m) ** 1.5]
    bh.append({"p": p, "adjusted": [float(v) for v in stats.false_discovery_control(p, method="bh")]})


def power(lam, df, crit, two_sided):
    up = stats.nct.sf(crit, df, lam)
    # The far tail is below 1e-6 wherever the power is near 0.8; scipy returns NaN for it
    # at large noncentrality, where it is 0.
    far = float(np.nan_to_num(stats.nct.cdf(-crit, df, lam))) if two_sided else 0.0
    return up + far


mde = []
for n, alpha, two_sided in [
    (5, 0.01, True),
    (10, 0.01, True),
    (30, 0.01, True),
    (10, 0.01, False),
    (20, 0.01 / 3, False),
    (40, 0.01 / 150, False),
    (9, 2e-4, False),
]:
    df = 2 * n - 2
    crit = stats.t.ppf(1 - (alpha / 2 if two_sided else alpha), df)
    lam = optimize.brentq(lambda l: power(l, df, crit, two_sided) - 0.8, 0.0, 12.0, xtol=1e-12)
    # Standardised effect d = lambda * sqrt(2/n): the shift in units of sigma.
    mde.append({"n": n, "alpha": alpha, "two_sided": two_sided, "d": float(lam * math.sqrt(2.0 / n))})

prediction = []
for k, level in [(3, 0.99), (5, 0.95), (8, 0.99), (20, 0.999)]:
    jobs = [float(v) for v in 4.6 + 0.01 * rng.standard_normal(k)]
    mean, sd = float(np.mean(jobs)), float(np.std(jobs, ddof=1))
    scale = sd * math.sqrt(1 + 1 / k)
    new = mean + 2.5 * scale
    prediction.append(
        {
            "jobs": jobs,
            "level": level,
            "upper": mean + float(stats.t.ppf(level, k - 1)) * scale,
            "lower": mean - float(stats.t.ppf(level, k - 1)) * scale,
            "new": new,
            "p_above": float(stats.t.sf((new - mean) / scale, k - 1)),
        }
    )

out = {
    "generator": "scripts/gen_stats_vectors.py",
    "scipy": scipy.__version__,
    "numpy": np.__version__,
    "mann_whitney": mwu,
    "benjamini_hochberg": bh,
    "mde_standardised": mde,
    "prediction_interval": prediction,
}
path = os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures", "stats_vectors.json")
with open(path, "w") as f:
    json.dump(out, f, indent=1)
    f.write("\n")
print(f"wrote {os.path.normpath(path)}")
