#!/usr/bin/env python3
"""Time of `kgate import chrome-trace` on a trace of many kernels, with a device profile.

A trace of a model holds thousands of distinct kernels, each launched a few times, and the
counter tracks they are all read against. With `device:` in kgate.yaml the import derives
utilization for every kernel, each from the readings around its own launches, so the cost per
kernel must not grow with the trace. This script writes such a trace (--kernels distinct
kernels, --launches launches each, two cumulative counter tracks sampled every 2 µs) and a
kgate.yaml naming `tpu-v7x` in a temporary folder, then runs each --kgate build --runs times
(default 5), the builds taking turns run by run, and prints the median wall time, the median
CPU time, the largest peak resident memory and whether every build wrote the same results
(apart from `created`).

Usage (from the repository root):

    cargo build --release
    python3 scripts/bench_many_kernels.py [--kernels 20000] [--launches 3] [--runs 5] [--kgate target/release/kgate [--kgate OTHER]]
"""

import argparse
import json
import os
import statistics
import sys
import tempfile

from benchtime import builds as existing_builds, timed


def write_trace(path, kernels, launches):
    events = []
    t = 0.0
    for _ in range(launches):
        for k in range(kernels):
            events.append(
                {"ph": "X", "cat": "kernel", "name": f"kern_{k}", "pid": 1, "tid": 1,
                 "ts": t, "dur": 2.5}
            )
            t += 3.0
    for i in range(0, int(t) + 10, 2):
        for name, rate in (("cycles", 2000), ("mxu_busy_1", 1000)):
            events.append(
                {"ph": "C", "name": name, "pid": 1, "tid": 1, "ts": i,
                 "args": {"value": i * rate}}
            )
    with open(path, "w") as f:
        json.dump({"traceEvents": events}, f)


def measure_once(kgate, folder, out):
    run = timed([kgate, "import", "chrome-trace", "trace.json", "-o", out], cwd=folder)
    if run.status != 0:
        sys.exit(f"{kgate} failed:\n{run.stderr}")
    return run.wall, run.cpu, run.peak_mb


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernels", type=int, default=20_000)
    parser.add_argument("--launches", type=int, default=3)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--kgate", action="append",
                        help="the binary to time (repeatable; default target/release/kgate)")
    args = parser.parse_args()
    builds = existing_builds(args.kgate)
    with tempfile.TemporaryDirectory() as folder:
        trace = os.path.join(folder, "trace.json")
        write_trace(trace, args.kernels, args.launches)
        with open(os.path.join(folder, "kgate.yaml"), "w") as f:
            f.write('device: tpu-v7x\nbenchmarks:\n  - name: unused\n    command: "true"\n')
        print(f"trace: {os.path.getsize(trace) / 1e6:.1f} MB, {args.kernels} kernels x "
              f"{args.launches} launches; medians of {args.runs}")
        runs = {b: [] for b in builds}
        for _ in range(args.runs):
            for i, build in enumerate(builds):
                runs[build].append(measure_once(build, folder, f"results-{i}.json"))
        written = []
        for i in range(len(builds)):
            with open(os.path.join(folder, f"results-{i}.json")) as f:
                results = json.load(f)
            results.pop("created", None)
            written.append(results)
        print(f"{'median s':>9} {'CPU s':>7} {'peak MB':>8}  build")
        for build in builds:
            walls, cpus, peaks = zip(*runs[build])
            print(f"{statistics.median(walls):>9.2f} {statistics.median(cpus):>7.2f} "
                  f"{max(peaks):>8.1f}  {build}")
        if len(builds) > 1:
            same = all(w == written[0] for w in written[1:])
            print("results: the same" if same else "results: DIFFER between builds")


if __name__ == "__main__":
    main()
