#!/usr/bin/env python3
"""Speed and memory of `kgate import protocol` on a large protocol file.

Writes a file of LINES measurement lines (default 2,000,000, about 216 MB) over 1,000
benchmarks, as a benchmark that reports every sample itself would, in a temporary folder; with
--kind counter, LINES counter readings instead (a cumulative cycle counter read every
microsecond at epoch-nanosecond times, over 10 benchmarks, each with one measurement line), as
a benchmark that samples its device's counters would. Then
runs `kgate import protocol FILE -o OUT` --runs times (default 5) under `/usr/bin/time -v`, and
beside it, in the same loop, the peer: Python's json module reading the same lines and grouping
the values by benchmark and metric, or the readings by benchmark and counter (what an import
keeps). Prints the median wall time, the
median CPU time and the largest peak resident memory of each. Given --kgate more than once, the
builds take turns run by run.

Usage (from the repository root):

    cargo build --release
    python3 scripts/bench_protocol_import.py [--kind measurement|counter] [--lines 2000000] [--runs 5] [--kgate OLD --kgate NEW]
"""

import argparse
import os
import random
import sys
import tempfile

from benchtime import beside_peer, builds as existing_builds, print_runs

PEER = r"""
import collections, json, sys
samples = collections.defaultdict(list)
for line in open(sys.argv[1]):
    o = json.loads(line)
    if "metric" in o:
        samples[(o["benchmark"], o["metric"])].append(o["value"])
    else:
        samples[(o["benchmark"], o["counter"])].append((o["t_ns"], o["value"]))
print(len(samples))
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=2_000_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--kind", choices=["measurement", "counter"], default="measurement")
    parser.add_argument("--kgate", action="append", help="the binary to time (repeatable)")
    args = parser.parse_args()
    builds = existing_builds(args.kgate)
    with tempfile.TemporaryDirectory() as dir:
        path = os.path.join(dir, "protocol.jsonl")
        rng = random.Random(1)
        with open(path, "w") as f:
            if args.kind == "measurement":
                for i in range(args.lines):
                    value = 1000 * rng.lognormvariate(0, 0.05)
                    f.write(
                        f'{{"metric": "kernel_time", "value": {value!r}, "unit": "ns", '
                        f'"source": "timer", "benchmark": "k{i % 1000}"}}\n'
                    )
            else:
                t, cycles = 1_700_000_000_000_000_000, 0
                for i in range(args.lines):
                    t += 1000
                    cycles += rng.randint(0, 2000)
                    f.write(
                        f'{{"counter": "mxu_busy", "t_ns": {t}, "value": {cycles}, '
                        f'"unit": "cycles", "benchmark": "k{i % 10}"}}\n'
                    )
                for b in range(10):
                    f.write(
                        f'{{"metric": "kernel_time", "value": 5, "unit": "us", "benchmark": "k{b}"}}\n'
                    )
        size = os.path.getsize(path) / 1e6
        runs = beside_peer(
            builds,
            lambda i: ["import", "protocol", path, "-o", os.path.join(dir, f"out-{i}.json")],
            [sys.executable, "-c", PEER, path],
            args.runs,
        )
        print(f"{args.lines} {args.kind} lines, {size:.0f} MB")
        print_runs(runs)

if __name__ == "__main__":
    main()
