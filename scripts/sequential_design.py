#!/usr/bin/env python3
"""What a group-sequential plan of the gate's kind can reach under normal theory.

The gate stops a benchmark for "regressed" (one-sided test of no change, and the estimate at
least the threshold) or for a pass (the one-sided upper bound below the threshold), each look
tested at one nominal level of a constant (Pocock-type) boundary. kgate tests with ranks; this
script asks what the same plan reaches with Student's t on normal data, the most a valid test
that estimates the noise can do, so that docs/statistics.md can say how far the rank test's
figures are from that limit. Also printed: Wald's approximation of a sequential probability
ratio test's mean size at no change, which knows the noise and so bounds every design below.

    python3 scripts/sequential_design.py [--runs 40000]

Needs numpy and scipy. Seeded; noise 1 %, threshold 1 %, alpha 0.01 for each claim.
"""

import argparse
import math

import numpy as np
from scipy.stats import norm, t as student

ALPHA, NOISE, THRESHOLD = 0.01, 0.01, 0.01


def pocock_z(rng, looks, draws=400_000):
    """The constant boundary a Brownian motion seen at `looks` crosses with chance ALPHA."""
    looks = np.asarray(looks, float)
    steps = np.diff(np.concatenate([[0.0], looks]))
    paths = np.cumsum(rng.standard_normal((draws, len(looks))) * np.sqrt(steps), axis=1)
    return float(np.quantile((paths / np.sqrt(looks)).max(axis=1), 1 - ALPHA))


def run(rng, looks, z, shift, runs):
    """(regressed share, passed share, mean repetitions per side) at a true `shift`."""
    level = norm.sf(z)
    n_max = max(looks)
    base = rng.standard_normal((runs, n_max)) * NOISE
    head = rng.standard_normal((runs, n_max)) * NOISE + shift
    done = np.zeros(runs, bool)
    used = np.full(runs, n_max)
    verdict = np.zeros(runs, int)
    for n in looks:
        q = student.isf(level, 2 * n - 2)
        d = head[:, :n].mean(1) - base[:, :n].mean(1)
        se = np.sqrt((head[:, :n].var(1, ddof=1) + base[:, :n].var(1, ddof=1)) / n)
        fail = (d / se >= q) & (d >= THRESHOLD)
        passed = d + q * se < THRESHOLD
        new = ~done & (fail | passed)
        verdict[new & fail] = 1
        verdict[new & ~fail & passed] = 2
        used[new] = n
        done |= new
    return (verdict == 1).mean(), (verdict == 2).mean(), used.mean()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=40_000)
    runs = parser.parse_args().runs
    rng = np.random.default_rng(1)
    print("plan        z     A/A reps  A/A alarms  +1.5% reps  caught  +1% passed")
    for first, last in [(10, 40), (8, 40), (10, 80)]:
        looks = list(range(first, last + 1, 2))
        z = pocock_z(rng, looks)
        aa = run(rng, looks, z, 0.0, runs)
        slow = run(rng, looks, z, 0.015, runs)
        edge = run(rng, looks, z, THRESHOLD, runs)
        print(
            f"{first}-{last}/2  {z:.3f}  {aa[2]:8.2f}  {aa[0]:9.2%}  {slow[2]:10.2f}"
            f"  {slow[0]:6.2%}  {edge[1]:9.2%}"
        )
    # Wald: E[N | no change] ~ ((1-a)·ln((1-a)/a) + a·ln(a/(1-a))) / KL, one pair of
    # repetitions (a difference of variance 2·noise²) carrying KL = threshold² / (4·noise²).
    kl = THRESHOLD**2 / (4 * NOISE**2)
    a = ALPHA
    wald = ((1 - a) * math.log((1 - a) / a) + a * math.log(a / (1 - a))) / kl
    print(f"Wald's SPRT with the noise known, mean repetitions per side at no change: {wald:.1f}")


if __name__ == "__main__":
    main()
