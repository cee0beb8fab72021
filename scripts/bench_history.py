#!/usr/bin/env python3
"""Speed and memory of `kgate history` (change points over every metric's history).

Writes a history in a temporary folder: JOBS results files of BENCHMARKS x METRICS (ten
seeded log-normal samples each; every fifth metric steps up 3 % at 60 % of the jobs), recorded
with `kgate history record`. Then runs `kgate history --format json` (and `--format html`)
--runs times (default 5) under `/usr/bin/time -v` and prints the median wall time, the median
CPU time, the largest peak resident memory and the output's size. Given --kgate more than once,
the builds take turns run by run on the same history.

The peer, run side by side in the same loop when it is installed (`pip install
signal-processing-algorithms`): MongoDB's E-divisive (`signal_processing_algorithms.
energy_statistics.e_divisive`, its C extension, 199 permutations, p <= 0.05, the settings
kgate uses) over the same per-job medians, read from the same record files by Python's json.
The script also says on how many metrics the two found the same change points: their shuffles
differ, so a point near the significance level may be found by one and not the other.

Cases: "wide" (100 jobs of 500 benchmarks x 4 metrics: 2,000 series of 100 points) and "long"
(1,000 jobs of 5 benchmarks x 4 metrics: 20 series of 1,000 points).

Usage (from the repository root):

    cargo build --release
    python3 scripts/bench_history.py [--runs 5] [--case wide --case long] [--format html] [--kgate OLD --kgate NEW]
"""

import argparse
import datetime
import glob
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile

from benchtime import builds as existing_builds, results_document, timed

CASES = {"wide": (100, 500, 4), "long": (1_000, 5, 4)}

PEER = r"""
import glob, json, sys
from signal_processing_algorithms.energy_statistics.energy_statistics import e_divisive
series = {}
for path in sorted(glob.glob(sys.argv[1] + "/*.json")):
    record = json.load(open(path))
    for b in record["benchmarks"]:
        for m in b["metrics"]:
            series.setdefault((record["created"], b["name"], m["name"]), m["summary"]["median"])
by_metric = {}
for (created, b, m), median in sorted(series.items()):
    by_metric.setdefault(b + "/" + m, []).append(median)
points = {k: sorted(e_divisive(v, pvalue=0.05, permutations=199)) for k, v in by_metric.items()}
json.dump(points, open(sys.argv[2], "w"))
"""


def results(job, benchmarks, metrics, jobs):
    rng = random.Random(job)

    def values_of(b, m):
        k = b * metrics + m
        level = 1_000.0 * (1 + k % 7)
        if k % 5 == 0 and job >= 0.6 * jobs:
            level *= 1.03
        return [level * rng.lognormvariate(0.0, 0.02) for _ in range(10)]

    created = datetime.datetime(2026, 1, 1) + datetime.timedelta(hours=job)
    return results_document(
        values_of, benchmarks, metrics, f"{job + 1:040x}", created.strftime("%Y-%m-%dT%H:%M:%SZ")
    )


def kgate_points(path):
    with open(path) as f:
        report = json.load(f)
    return {
        f"{m['benchmark']}/{m['metric']}": sorted(c["index"] for c in m["change_points"])
        for m in report["metrics"]
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--kgate", action="append", help="the binary to time (repeatable)")
    parser.add_argument("--case", choices=sorted(CASES), action="append")
    parser.add_argument("--format", choices=["json", "html"], action="append")
    args = parser.parse_args()
    builds = existing_builds(args.kgate)
    label = {b: (b if len(builds) > 1 else "") for b in builds}
    try:
        import signal_processing_algorithms  # noqa: F401

        peer = True
    except ImportError:
        peer = False
        print("peer not run: `pip install signal-processing-algorithms` for MongoDB's E-divisive")
    print(f"{'case':<6} {'who':<16} {'median s':>9} {'CPU s':>7} {'peak MB':>8} {'out MB':>7}  build")
    with tempfile.TemporaryDirectory() as dir:
        for name in args.case or sorted(CASES):
            jobs, benchmarks, metrics = CASES[name]
            root = os.path.join(dir, name)
            os.makedirs(root)
            files = []
            for job in range(jobs):
                path = os.path.join(root, f"run{job:05d}.json")
                with open(path, "w") as f:
                    json.dump(results(job, benchmarks, metrics, jobs), f)
                files.append(path)
            recorded = subprocess.run(
                [builds[0], "history", "record", *files], cwd=root, capture_output=True, text=True
            )
            if recorded.returncode != 0:
                sys.exit(f"kgate history record failed: {recorded.stderr}")
            for path in files:
                os.remove(path)
            (key_dir,) = glob.glob(os.path.join(root, ".kgate", "history", "*"))
            key = os.path.basename(key_dir)
            rows = {}
            outputs = {}
            for _ in range(args.runs):
                for fmt in args.format or ["json"]:
                    for i, build in enumerate(builds):
                        out = os.path.join(dir, f"{name}-{i}.{fmt}")
                        run = timed(
                            [build, "history", "--key", key, "--format", fmt, "-o", out], cwd=root
                        )
                        if run.status != 0:
                            sys.exit(f"kgate history failed: {run.stderr}")
                        rows.setdefault((f"kgate {fmt}", build), []).append(run)
                        outputs[(f"kgate {fmt}", build)] = out
                if peer:
                    out = os.path.join(dir, f"{name}-peer.json")
                    run = timed([sys.executable, "-c", PEER, key_dir, out])
                    if run.status != 0:
                        sys.exit(f"the peer failed: {run.stderr}")
                    rows.setdefault(("MongoDB e_divisive", ""), []).append(run)
                    outputs[("MongoDB e_divisive", "")] = out
            for (who, build), runs in rows.items():
                print(
                    f"{name:<6} {who:<16} {statistics.median(r.wall for r in runs):>9.3f} "
                    f"{statistics.median(r.cpu for r in runs):>7.2f} "
                    f"{max(r.peak_mb for r in runs):>8.1f} "
                    f"{os.path.getsize(outputs[(who, build)]) / 1e6:>7.1f}  {label.get(build, '')}",
                    flush=True,
                )
            if peer:
                theirs = json.load(open(outputs[("MongoDB e_divisive", "")]))
                ours = kgate_points(outputs[("kgate json", builds[-1])]) if (
                    "kgate json", builds[-1]) in outputs else None
                if ours is not None:
                    same = sum(1 for k, v in ours.items() if theirs.get(k) == v)
                    stepped = sum(1 for v in ours.values() if v)
                    print(
                        f"{name:<6} change points: kgate found some in {stepped} of {len(ours)} "
                        f"metrics; the same points as the peer in {same} of {len(ours)}"
                    )


if __name__ == "__main__":
    main()
