#!/usr/bin/env python3
"""Writes the seeds of the `compare` fuzz target (fuzz/seeds/compare/): pairs of results files,
a NUL byte between baseline and candidate, as `fuzz/src/lib.rs::compare` splits them.

The results are the project's own: the example suite's stored baseline and `kgate import` of
the test fixtures of several formats (so that each seed is in the results format this build
writes). Each file is paired with itself and with a copy whose every other benchmark's values
are 20 % larger (regressions and unchanged rows in one report); the baseline also with the
imports, which have other benchmarks (new and missing ones). Run it again after a change of
the results format:

    cargo build --release
    python3 fuzz/seeds/make_compare_seeds.py target/release/kgate
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
IMPORTS = [
    ("gbench", "tests/fixtures/gbench/sum_repetitions.json"),
    ("gbench", "tests/fixtures/gbench/repetitions_nan.json"),
    ("ncu", "tests/fixtures/ncu/body_items_details.csv"),
    ("rocprof", "tests/fixtures/rocprof/laplacian_results.csv"),
    ("proton", "tests/fixtures/proton/scopes_and_counters.hatchet"),
    ("criterion", "tests/fixtures/criterion/sum_1000/new/estimates.json"),
]


def slower(text):
    doc = json.loads(text)
    for k, bench in enumerate(doc.get("benchmarks", [])):
        if k % 2 == 0:
            for metric in bench.get("metrics", []):
                metric["values"] = [v * 1.2 for v in metric.get("values", [])]
    return json.dumps(doc, separators=(",", ":")).encode()


def main(kgate):
    out = os.path.join(ROOT, "fuzz/seeds/compare")
    os.makedirs(out, exist_ok=True)
    for old in os.listdir(out):
        os.remove(os.path.join(out, old))
    files = {"baseline": open(os.path.join(ROOT, ".kgate/baselines/default.json"), "rb").read()}
    with tempfile.TemporaryDirectory() as tmp:
        for fmt, path in IMPORTS:
            # A copy of the fixture's folder, imported outside the project (whose kgate.yaml
            # would set the import's policy) by a relative path, which the results record.
            folder = os.path.dirname(path)
            copy = os.path.join(tmp, "in")
            shutil.rmtree(copy, ignore_errors=True)
            shutil.copytree(os.path.join(ROOT, folder), copy)
            result = os.path.join(tmp, "r.json")
            subprocess.run(
                [kgate, "import", fmt, os.path.relpath(os.path.join(copy, os.path.basename(path)), tmp), "-o", result],
                cwd=tmp, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            name = fmt + "-" + os.path.splitext(os.path.basename(path))[0]
            files[name] = open(result, "rb").read()
    for name, text in files.items():
        pairs = {"itself": text, "slower": slower(text)}
        if name != "baseline":
            pairs["baseline"] = files["baseline"]
        for other, head in pairs.items():
            with open(os.path.join(out, f"{name}-vs-{other}.json"), "wb") as f:
                f.write(text + b"\0" + head)


if __name__ == "__main__":
    main(os.path.abspath(sys.argv[1]))
