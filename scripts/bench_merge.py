#!/usr/bin/env python3
"""Speed and memory of `kgate merge` on the shard files of a large suite.

Writes --shards result files (default 10) of --benchmarks benchmarks each (default 1,000;
`bench_0`… numbered on across the shards) × 20 metrics × 30 samples, as `kgate run --shard I/N`
would, in a temporary folder, then runs `kgate merge SHARD… -o OUT` --runs times (default 3)
under `/usr/bin/time -v`, and beside it the peer: Python's json module loading every shard and
writing the joined document. Prints the median wall time, the median CPU time and the largest
peak resident memory of each; given --kgate more than once, the builds take turns run by run
and must write the same file.

Usage (from the repository root):

    cargo build --release
    python3 scripts/bench_merge.py [--shards 10] [--benchmarks 1000] [--runs 3] [--kgate OLD --kgate NEW]
"""

import argparse
import json
import os
import sys
import tempfile

from bench_compare import results
from benchtime import beside_peer, builds as existing_builds, print_runs

PYTHON_MERGE = r"""
import json, sys
out, shards = sys.argv[1], sys.argv[2:]
merged = None
for path in shards:
    with open(path) as f:
        doc = json.load(f)
    if merged is None:
        merged = doc
    else:
        merged["benchmarks"].extend(doc["benchmarks"])
with open(out, "w") as f:
    json.dump(merged, f, separators=(",", ":"))
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shards", type=int, default=10)
    parser.add_argument("--benchmarks", type=int, default=1_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--kgate", action="append", help="the binary to time (repeatable)")
    args = parser.parse_args()
    builds = existing_builds(args.kgate)
    with tempfile.TemporaryDirectory(prefix="kgate-merge-bench-") as tmp:
        shards = []
        for s in range(args.shards):
            doc = results(args.benchmarks, 20, 30, 1.0, seed=s, commit="c0ffee")
            for b in doc["benchmarks"]:
                b["name"] = f"bench_{s * args.benchmarks + int(b['name'][len('bench_'):])}"
            path = os.path.join(tmp, f"shard{s}.json")
            with open(path, "w") as f:
                json.dump(doc, f, separators=(",", ":"))
            shards.append(path)
        size = sum(os.path.getsize(p) for p in shards) / 1e6
        print(f"{args.shards} shards of {args.benchmarks} benchmarks x 20 metrics x 30 samples, "
              f"{size:.0f} MB; medians of {args.runs}")
        script = os.path.join(tmp, "merge.py")
        with open(script, "w") as f:
            f.write(PYTHON_MERGE)
        outs = [os.path.join(tmp, f"merged-{i}.json") for i in range(len(builds))]
        by_who = beside_peer(
            builds,
            lambda i: ["merge", *shards, "-o", outs[i]],
            [sys.executable, script, os.path.join(tmp, "python.json"), *shards],
            args.runs,
        )
        print_runs(by_who)
        written = []
        for out in outs:
            with open(out, "rb") as f:
                written.append(f.read())
        if len(written) > 1:
            same = all(w == written[0] for w in written[1:])
            print("merged files: the same" if same else "merged files: DIFFER between builds")
        merged = json.loads(written[-1])
        assert len(merged["benchmarks"]) == args.shards * args.benchmarks


if __name__ == "__main__":
    main()
