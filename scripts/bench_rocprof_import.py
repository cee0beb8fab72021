#!/usr/bin/env python3
"""Speed and memory of `kgate import rocprof` on a large rocprof v1 `results.csv`, beside
Python's csv module doing the same extraction (per kernel: its durations and its counters).

Writes a table of --dispatches rows (default 1,000,000, about 120 MB) the way rocprof v1 writes
one with `--timestamp on` and one counter pass: identity columns, begin/end timestamps in
nanoseconds and two counters, over 1,000 kernels. Then runs each contender --runs times
(default 5) turn by turn under `/usr/bin/time -v` and prints the median wall time, the largest
peak resident memory and the ratios. Given --kgate more than once (two builds, say), the builds
take turns on the same file.

Usage (from the repository root):

    cargo build --release
    python3 scripts/bench_rocprof_import.py [--runs 5] [--dispatches N] [--kgate target/release/kgate [--kgate OTHER]] [--skip-python]
"""

import argparse
import os
import random
import statistics
import sys
import tempfile

from benchtime import builds as existing_builds, timed

HEADER = (
    '"Index","KernelName","gpu-id","queue-id","queue-index","pid","tid","grd","wgr","lds",'
    '"scr","arch_vgpr","accum_vgpr","sgpr","wave_size","sig","obj","DispatchNs","BeginNs",'
    '"EndNs","CompleteNs","SQ_WAVES","GRBM_COUNT"'
)

PYTHON_EXTRACT = r"""
import csv, sys
kernels = {}
with open(sys.argv[1], newline="") as f:
    rows = csv.reader(f)
    header = [h.strip() for h in next(rows)]
    k, b, e = header.index("KernelName"), header.index("BeginNs"), header.index("EndNs")
    counters = [i for i, h in enumerate(header) if h in ("SQ_WAVES", "GRBM_COUNT")]
    for row in rows:
        samples = kernels.setdefault(row[k].strip(), {})
        samples.setdefault("kernel_time", []).append(float(int(row[e]) - int(row[b])))
        for i in counters:
            samples.setdefault(header[i], []).append(float(row[i]))
print(sum(len(v["kernel_time"]) for v in kernels.values()), file=sys.stderr)
"""


def generate(path, dispatches):
    rng = random.Random(1)
    with open(path, "w", buffering=1 << 20) as f:
        f.write(HEADER + "\n")
        t = 2_001_401_019_920_178
        for i in range(dispatches):
            kernel = f"kernel_{i % 1000}"
            dur = 1_000_000 + rng.randrange(100_000)
            f.write(
                f'{i},"{kernel}",8,0,{i % 1024},1580852,1580852,134217728,256,0,0,24,0,32,64,'
                f'"0x0","0x7f8ede91d5c0",{t},{t + 5000},{t + 5000 + dur},{t + 6000 + dur},'
                f"{rng.randrange(4096)},{rng.randrange(10**6)}\n"
            )
            t += dur + 7000


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--dispatches", type=int, default=1_000_000)
    parser.add_argument("--kgate", action="append", help="a build to time (repeatable)")
    parser.add_argument("--skip-python", action="store_true")
    args = parser.parse_args()
    builds = existing_builds(args.kgate)
    with tempfile.TemporaryDirectory() as dir:
        path = os.path.join(dir, "results.csv")
        generate(path, args.dispatches)
        mb = os.path.getsize(path) / 1e6
        print(f"rocprof v1 results.csv: {args.dispatches} dispatches, {mb:.1f} MB")
        contenders = [
            (f"kgate import rocprof ({b})" if len(builds) > 1 else "kgate import rocprof",
             [b, "import", "rocprof", path, "-o", os.path.join(dir, f"out{i}.json")])
            for i, b in enumerate(builds)
        ]
        if not args.skip_python:
            contenders.append(
                (f"python3 csv ({sys.version.split()[0]})",
                 [sys.executable, "-c", PYTHON_EXTRACT, path])
            )
        runs = {name: [] for name, _ in contenders}
        for _ in range(args.runs):
            for name, command in contenders:
                run = timed(command)
                runs[name].append((run.wall, run.peak_mb, run.status))
        print(f"\n| tool (median of {args.runs}) | wall (s) | MB/s | peak RSS (MB) | exit |")
        print("|---|---:|---:|---:|---|")
        medians = {}
        for name, _ in contenders:
            walls, peaks, codes = zip(*runs[name])
            medians[name] = statistics.median(walls)
            print(
                f"| {name} | {medians[name]:.2f} | {mb / max(medians[name], 1e-9):.0f} | "
                f"{max(peaks):.0f} | {','.join(map(str, sorted(set(codes))))} |"
            )
        python = [n for n in medians if n.startswith("python3")]
        if python:
            for name, _ in contenders[: len(builds)]:
                print(f"\n{name}: {medians[python[0]] / medians[name]:.1f}x Python's speed")


if __name__ == "__main__":
    main()
