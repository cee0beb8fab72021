#!/usr/bin/env python3
"""What `identity` saves: `kgate check --against main` on a suite of --benchmarks benchmarks
(default 10) of which one changed, against the same check with `--measure-identical` (every
benchmark measured, as without identities).

Each benchmark sleeps for the seconds written in its own `kernels/kI.txt` (default 0.1; a
stand-in for a kernel whose time is all accelerator time), declares `identity: {files:
[kernels/kI.txt]}`, and runs 1 warm-up and 10 repetitions per side, interleaved. The head
commit rewrites `kernels/k3.txt` (the last file of a smaller suite) with the same delay in
other bytes, so one digest differs and the others are equal. Runs each check --runs times
(default 3), taking turns, and prints the median wall time of each, the benchmarks measured,
and the ratio.

Usage (from the repository root):

    cargo build --release
    python3 scripts/bench_identity.py [--benchmarks 10] [--delay 0.1] [--runs 3] [--kgate PATH]
"""

import argparse
import json
import os
import statistics
import sys
import tempfile

from benchtime import builds, git, timed


def suite(root, count, delay):
    os.makedirs(os.path.join(root, "kernels"))
    lines = ["version: 1", "defaults: {warmup: 1, repetitions: 10, captures: [timer]}", "benchmarks:"]
    for i in range(count):
        with open(os.path.join(root, "kernels", f"k{i}.txt"), "w") as f:
            f.write(f"{delay}\n")
        lines += [
            f"  - name: k{i}",
            f"    command: [sh, -c, 'sleep \"$(cat kernels/k{i}.txt)\"']",
            f"    identity: {{files: [kernels/k{i}.txt]}}",
        ]
    with open(os.path.join(root, "kgate.yaml"), "w") as f:
        f.write("\n".join(lines) + "\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "suite")
    git(root, "checkout", "-q", "-b", "change")
    changed = min(3, count - 1)  # k3, or the last one of a smaller suite
    with open(os.path.join(root, "kernels", f"k{changed}.txt"), "w") as f:
        f.write(f"{delay}0\n")
    git(root, "commit", "-q", "-am", f"k{changed}: a change")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--benchmarks", type=int, default=10)
    parser.add_argument("--delay", type=float, default=0.1)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--kgate")
    args = parser.parse_args()
    (kgate,) = builds([args.kgate] if args.kgate else None)
    with tempfile.TemporaryDirectory() as root:
        suite(root, args.benchmarks, args.delay)
        walls = {"identity": [], "measure-identical": []}
        measured = {}
        for _ in range(args.runs):
            for label, extra in [("identity", []), ("measure-identical", ["--measure-identical"])]:
                run = timed(
                    [kgate, "check", "--against", "main", "--no-progress", "--format", "json", *extra],
                    cwd=root,
                )
                if run.status != 0:
                    sys.exit(f"kgate exited {run.status}:\n{run.stderr}")
                report = json.loads(run.stdout)
                verdicts = [b["verdict"] for b in report["benchmarks"]]
                measured[label] = sum(v != "identical" for v in verdicts)
                walls[label].append(run.wall)
        full = statistics.median(walls["measure-identical"])
        for label, values in walls.items():
            wall = statistics.median(values)
            print(
                f"{label:18} {wall:6.2f} s wall (median of {args.runs}), "
                f"{measured[label]} of {args.benchmarks} measured, {wall / full:.1%} of the full run"
            )


if __name__ == "__main__":
    main()
