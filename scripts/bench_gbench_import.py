#!/usr/bin/env python3
"""Speed and memory of `kgate import gbench` on a large google/benchmark JSON file.

Writes a file of RUNS iteration runs (default 200,000, about 85 MB indented, as
`--benchmark_format=json` writes it) over 2,000 benchmarks with 100 repetitions each, every
run with `real_time`, `cpu_time` and one user counter, in a temporary folder. Then runs
`kgate import gbench FILE -o OUT` --runs times (default 5) under `/usr/bin/time -v`, and
beside it, in the same loop, the peer: Python's json module reading the same file and grouping
every run's numbers by benchmark and key (what an import keeps). Prints the median wall time,
the median CPU time and the largest peak resident memory of each. Given --kgate more than
once, the builds take turns run by run.

Usage (from the repository root):

    cargo build --release
    python3 scripts/bench_gbench_import.py [--runs-in-file 200000] [--runs 5] [--kgate OLD --kgate NEW]
"""

import argparse
import json
import os
import random
import statistics
import sys
import tempfile

from benchtime import builds as existing_builds, timed

PEER = r"""
import collections, json, sys
samples = collections.defaultdict(list)
for run in json.load(open(sys.argv[1]))["benchmarks"]:
    for key, value in run.items():
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            samples[(run["run_name"], key)].append(value)
print(len(samples))
"""


def document(runs, rng):
    benchmarks = []
    for i in range(runs):
        b = i % 2000
        name = f"BM_Kernel/{b}"
        benchmarks.append({
            "name": name,
            "family_index": b,
            "per_family_instance_index": 0,
            "run_name": name,
            "run_type": "iteration",
            "repetitions": 100,
            "repetition_index": i // 2000,
            "threads": 1,
            "iterations": 1000,
            "real_time": 1000 * rng.lognormvariate(0, 0.05),
            "cpu_time": 990 * rng.lognormvariate(0, 0.05),
            "time_unit": "ns",
            "items_per_second": 1e6 * rng.random(),
        })
    return {
        "context": {
            "date": "2026-12-04T00:00:00+00:00",
            "host_name": "bench",
            "executable": "./bm",
            "num_cpus": 2,
            "mhz_per_cpu": 2000,
            "cpu_scaling_enabled": False,
            "caches": [],
            "load_avg": [0.1],
            "library_version": "v1.9.1",
            "library_build_type": "release",
        },
        "benchmarks": benchmarks,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs-in-file", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--kgate", action="append", help="the binary to time (repeatable)")
    args = parser.parse_args()
    builds = existing_builds(args.kgate)
    with tempfile.TemporaryDirectory() as dir:
        path = os.path.join(dir, "gbench.json")
        with open(path, "w") as f:
            json.dump(document(args.runs_in_file, random.Random(1)), f, indent=2)
        size = os.path.getsize(path) / 1e6
        runs = {}
        for _ in range(args.runs):
            for i, build in enumerate(builds):
                out = os.path.join(dir, f"out-{i}.json")
                run = timed([build, "import", "gbench", path, "-o", out])
                if run.status != 0:
                    sys.exit(f"kgate failed: {run.stderr}")
                runs.setdefault(build, []).append(run)
            run = timed([sys.executable, "-c", PEER, path])
            if run.status != 0:
                sys.exit(f"the peer failed: {run.stderr}")
            runs.setdefault("Python json", []).append(run)
        print(f"{args.runs_in_file} runs, {size:.0f} MB")
        print(f"{'who':<40} {'median s':>9} {'CPU s':>7} {'peak MB':>8}")
        for who, rs in runs.items():
            print(
                f"{who:<40} {statistics.median(r.wall for r in rs):>9.2f} "
                f"{statistics.median(r.cpu for r in rs):>7.2f} {max(r.peak_mb for r in rs):>8.1f}"
            )


if __name__ == "__main__":
    main()
