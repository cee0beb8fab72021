#!/usr/bin/env python3
"""Speed and memory of `kgate import gbench|pytest-benchmark|hyperfine` on large harness files.

Writes one large file per --format (default all three) in a temporary folder, shaped as the
harness writes it:

- gbench: RUNS iteration runs (default 200,000, about 85 MB indented) over 2,000 benchmarks,
  each with `real_time`, `cpu_time` and one user counter;
- pytest-benchmark: 2,000 benchmarks with RUNS / 2,000 rounds each in `stats.data` (`--benchmark-json`);
- hyperfine: 200 commands with RUNS / 200 `times` and `memory_usage_byte` each (`--export-json`).

Then runs `kgate import FORMAT FILE -o OUT` --runs times (default 5) under `/usr/bin/time -v`,
and beside it, in the same loop, the peer: Python's json module loading the same file and
grouping the numbers an import keeps by benchmark. Prints the median wall time, the median CPU
time and the largest peak resident memory of each. Given --kgate more than once, the builds
take turns run by run.

Usage (from the repository root):

    cargo build --release
    python3 scripts/bench_harness_import.py [--format gbench] [--runs-in-file 200000] [--runs 5] [--kgate OLD --kgate NEW]
"""

import argparse
import json
import os
import random
import sys
import tempfile

from benchtime import beside_peer, builds as existing_builds, print_runs

PEERS = {
    "gbench": r"""
import collections, json, sys
samples = collections.defaultdict(list)
for run in json.load(open(sys.argv[1]))["benchmarks"]:
    for key, value in run.items():
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            samples[(run["run_name"], key)].append(value)
print(len(samples))
""",
    "pytest-benchmark": r"""
import json, sys
samples = {b["fullname"]: b["stats"]["data"] for b in json.load(open(sys.argv[1]))["benchmarks"]}
print(len(samples))
""",
    "hyperfine": r"""
import json, sys
samples = {r["command"]: (r["times"], r["memory_usage_byte"]) for r in json.load(open(sys.argv[1]))["results"]}
print(len(samples))
""",
}


def gbench(runs, rng):
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


def pytest_benchmark(runs, rng):
    rounds = max(1, runs // 2000)
    benchmarks = []
    for b in range(2000):
        data = [1e-3 * rng.lognormvariate(0, 0.05) for _ in range(rounds)]
        benchmarks.append({
            "group": None,
            "name": f"test_kernel[{b}]",
            "fullname": f"tests/test_kernels.py::test_kernel[{b}]",
            "params": {"size": b},
            "param": str(b),
            "extra_info": {},
            "options": {"disable_gc": False, "timer": "perf_counter", "min_rounds": 5,
                        "max_time": 1.0, "min_time": 5e-06, "warmup": False},
            "stats": {"min": min(data), "max": max(data), "mean": sum(data) / rounds,
                      "stddev": 0.0, "rounds": rounds, "median": sorted(data)[rounds // 2],
                      "iqr": 0.0, "q1": 0.0, "q3": 0.0, "iqr_outliers": 0, "stddev_outliers": 0,
                      "outliers": "0;0", "ld15iqr": 0.0, "hd15iqr": 0.0, "ops": 1000.0,
                      "total": sum(data), "data": data, "iterations": 1},
        })
    return {"machine_info": {"node": "bench", "processor": "x86_64"}, "commit_info": {},
            "benchmarks": benchmarks, "datetime": "2026-12-04T00:00:00", "version": "4.0.0"}


def hyperfine(runs, rng):
    times = max(1, runs // 200)
    results = []
    for c in range(200):
        t = [0.01 * rng.lognormvariate(0, 0.05) for _ in range(times)]
        results.append({
            "command": f"./kernel --size {c}",
            "mean": sum(t) / times, "stddev": 0.0, "median": sorted(t)[times // 2],
            "user": 0.005, "system": 0.001, "min": min(t), "max": max(t),
            "times": t,
            "memory_usage_byte": [1_000_000 + rng.randint(0, 1000) for _ in range(times)],
            "exit_codes": [0] * times,
        })
    return {"results": results}


MAKERS = {"gbench": gbench, "pytest-benchmark": pytest_benchmark, "hyperfine": hyperfine}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--format", choices=sorted(MAKERS), action="append")
    parser.add_argument("--runs-in-file", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--kgate", action="append", help="the binary to time (repeatable)")
    args = parser.parse_args()
    builds = existing_builds(args.kgate)
    with tempfile.TemporaryDirectory() as dir:
        for fmt in args.format or sorted(MAKERS):
            path = os.path.join(dir, f"{fmt}.json")
            with open(path, "w") as f:
                json.dump(MAKERS[fmt](args.runs_in_file, random.Random(1)), f, indent=2)
            size = os.path.getsize(path) / 1e6
            runs = beside_peer(
                builds,
                lambda i: ["import", fmt, path, "-o", os.path.join(dir, f"out-{i}.json")],
                [sys.executable, "-c", PEERS[fmt], path],
                args.runs,
            )
            print(f"{fmt}: {args.runs_in_file} samples, {size:.0f} MB")
            print_runs(runs)

if __name__ == "__main__":
    main()
