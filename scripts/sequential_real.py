#!/usr/bin/env python3
"""Adaptive repetitions measured for real: `kgate check --against main` run --runs times
(default 20) on a git repository whose protocol benchmark reports a time of 100 us with
lognormal noise (--noise, default 1 %) drawn afresh at every repetition, the same on both sides
(A/A) or --shift slower in the work tree (default 1.5 %), --threshold (default 1 %) and alpha 0.01, with
`repetitions: {min: --min, max: --max}` (default 10 and 40) and the default step. Prints each
scenario's verdicts and the mean repetitions per side, for the table in docs/statistics.md.

Usage (from the repository root):

    cargo build --release
    python3 scripts/sequential_real.py [--runs 20] [--noise 0.01 --shift 0.015 --threshold 0.01]
        [--min 10] [--max 40] [--kgate PATH]
"""

import argparse
import collections
import json
import math
import os
import subprocess
import sys
import tempfile

from benchtime import builds, git

# One repetition's value: 100 us × scale × exp(σ·Z), Z drawn (Box–Muller) from 8 bytes of
# /dev/urandom.
BENCH = r"""od -An -N8 -tu4 /dev/urandom | awk -v s="$(cat scale.txt)" -v sigma="$(cat sigma.txt)" '{
  u = ($1 + 0.5) / 4294967296; v = ($2 + 0.5) / 4294967296
  z = sqrt(-2 * log(u)) * cos(6.283185307179586 * v)
  printf "{\"metric\": \"kernel_time\", \"value\": %.6f, \"unit\": \"us\", \"source\": \"timer\"}\n", 100 * s * exp(sigma * z)
}' >> "$KGATE_PROTOCOL_FILE"
"""


def repository(root, sigma, lo, hi, threshold):
    files = {
        "bench.sh": BENCH,
        "scale.txt": "1.0\n",
        "sigma.txt": f"{sigma}\n",
        "kgate.yaml": (
            f"defaults: {{warmup: 0, repetitions: {{min: {lo}, max: {hi}}}, captures: [protocol]}}\n"
            f"gate: {{threshold: {threshold * 100:g}%, alpha: 0.01}}\n"
            "benchmarks:\n"
            "  - name: k\n"
            "    command: [sh, bench.sh]\n"
            "    metrics:\n"
            "      kernel_time: {direction: lower, source: timer}\n"
        ),
    }
    for name, text in files.items():
        with open(os.path.join(root, name), "w") as f:
            f.write(text)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "bench")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--noise", type=float, default=0.01)
    parser.add_argument("--shift", type=float, default=0.015)
    parser.add_argument("--threshold", type=float, default=0.01)
    parser.add_argument("--min", type=int, default=10)
    parser.add_argument("--max", type=int, default=40)
    parser.add_argument("--kgate")
    args = parser.parse_args()
    (kgate,) = builds([args.kgate] if args.kgate else None)
    sigma = math.sqrt(math.log(1 + args.noise**2))
    print(
        f"{args.runs} runs per scenario, noise {args.noise:.1%}, threshold {args.threshold:.1%}, "
        f"repetitions {args.min}…{args.max}"
    )
    for label, scale in [("A/A", 1.0), (f"+{args.shift:.1%}", 1.0 + args.shift)]:
        verdicts = collections.Counter()
        sizes = []
        with tempfile.TemporaryDirectory() as root:
            repository(root, sigma, args.min, args.max, args.threshold)
            with open(os.path.join(root, "scale.txt"), "w") as f:
                f.write(f"{scale}\n")
            for _ in range(args.runs):
                out = subprocess.run(
                    [kgate, "check", "--against", "main", "--no-progress", "--format", "json"],
                    cwd=root,
                    capture_output=True,
                    text=True,
                )
                if out.returncode not in (0, 1):
                    sys.exit(f"kgate exited {out.returncode}:\n{out.stderr}")
                bench = json.loads(out.stdout)["benchmarks"][0]
                verdicts[bench["verdict"]] += 1
                sizes.append(bench["metrics"][0]["head"]["n"])
        mean = sum(sizes) / len(sizes)
        told = ", ".join(f"{v} {k}" for k, v in sorted(verdicts.items()))
        print(f"{label:7} mean repetitions per side {mean:5.1f} (min {min(sizes)}, max {max(sizes)}); {told}")


if __name__ == "__main__":
    main()
