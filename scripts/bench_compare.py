#!/usr/bin/env python3
"""Speed and memory of `kgate compare` on large samples and on many benchmarks.

Writes two results files per case in a temporary folder (seeded log-normal timings, the
candidate 2 % slower), then runs `kgate compare BASE HEAD --format FORMAT -o REPORT` --runs
times (default 5) under `/usr/bin/time -v` and prints the median wall time, the median CPU time
(user + system), the largest peak resident memory, the report's size and the exit status.
Given --kgate more than once (two builds, say), the builds take turns run by run on the same
files, so that they share the machine's load, and a line says whether their reports are the
same byte for byte. Cases:

  * one benchmark, one metric, 20,000 samples a side;
  * one benchmark, one metric, 100,000 samples a side;
  * 1,000 benchmarks x 20 metrics x 30 samples a side;
  * 10,000 benchmarks x 20 metrics x 30 samples a side (only when asked for by --case: its
    files take a few minutes to write), to show the time growing linearly with the suite;
  * one benchmark of 16,000 metrics x 50 samples a side (only when asked for by --case), the
    shape of an Nsight Compute raw-page import: time linear in the metrics of a benchmark.

Usage (from the repository root):

    cargo build --release
    python3 scripts/bench_compare.py [--runs 5] [--kgate target/release/kgate [--kgate OTHER]] [--case NAME] [--format json --format html]
"""

import argparse
import hashlib
import json
import os
import random
import statistics
import sys
import tempfile

from benchtime import builds as existing_builds, results_document, timed

CASES = {
    "20k": (1, 1, 20_000),
    "100k": (1, 1, 100_000),
    "1000x20x30": (1_000, 20, 30),
    "10000x20x30": (10_000, 20, 30),
    "1x16000x50": (1, 16_000, 50),
}
DEFAULT_CASES = ["20k", "100k", "1000x20x30"]


def results(benchmarks, metrics, samples, shift, seed, commit):
    rng = random.Random(seed)

    def values_of(b, m):
        centre = 1_000.0 * (1 + b % 7) * (1 + m % 5)
        return [centre * shift * rng.lognormvariate(0.0, 0.05) for _ in range(samples)]

    return results_document(values_of, benchmarks, metrics, commit)


def measure_once(kgate, base, head, fmt, out):
    """Wall seconds, CPU seconds, peak MiB and exit status of one compare."""
    # In the files' own folder: a kgate.yaml where the script is started would set the gate
    # policy.
    run = timed(
        [kgate, "compare", base, head, "--format", fmt, "-o", out], cwd=os.path.dirname(base)
    )
    return run.wall, run.cpu, run.peak_mb, run.status


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--kgate", action="append",
        help="the binary to time (repeatable; default target/release/kgate)",
    )
    parser.add_argument("--case", choices=sorted(CASES), action="append")
    parser.add_argument(
        "--format", choices=["json", "html", "markdown", "table", "junit"], action="append",
        help="report format (repeatable; default json)",
    )
    args = parser.parse_args()
    builds = existing_builds(args.kgate)
    label = {b: (b if len(builds) > 1 else "") for b in builds}
    print(
        f"{'case':<12} {'format':<8} {'median s':>9} {'CPU s':>7} {'peak MB':>8} "
        f"{'report MB':>10}  exit  build"
    )
    with tempfile.TemporaryDirectory() as dir:
        for name in args.case or DEFAULT_CASES:
            benchmarks, metrics, samples = CASES[name]
            base = os.path.join(dir, f"{name}-base.json")
            head = os.path.join(dir, f"{name}-head.json")
            with open(base, "w") as f:
                json.dump(results(benchmarks, metrics, samples, 1.0, 1, "a"), f)
            with open(head, "w") as f:
                json.dump(results(benchmarks, metrics, samples, 1.02, 2, "b"), f)
            for fmt in args.format or ["json"]:
                runs = {b: [] for b in builds}
                sizes = {}
                digests = {}
                for _ in range(args.runs):
                    for i, build in enumerate(builds):
                        out = os.path.join(dir, f"{name}-report-{i}.{fmt}")
                        runs[build].append(measure_once(build, base, head, fmt, out))
                        sizes[build] = os.path.getsize(out)
                        with open(out, "rb") as report:
                            digests[build] = hashlib.sha256(report.read()).hexdigest()
                for build in builds:
                    walls, cpus, peaks, codes = zip(*runs[build])
                    print(
                        f"{name:<12} {fmt:<8} {statistics.median(walls):>9.3f} "
                        f"{statistics.median(cpus):>7.2f} {max(peaks):>8.1f} "
                        f"{sizes[build] / 1e6:>10.1f}  {','.join(map(str, sorted(set(codes))))}"
                        f"     {label[build]}",
                        flush=True,
                    )
                if len(builds) > 1:
                    same = len(set(digests.values())) == 1
                    print(f"{'':<12} {fmt:<8} the builds' reports are "
                          f"{'the same, byte for byte' if same else 'DIFFERENT'}", flush=True)


if __name__ == "__main__":
    main()
