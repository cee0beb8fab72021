#!/usr/bin/env python3
"""Writes the seeds of the `compare`, `report` and `comment` fuzz targets (fuzz/seeds/compare/,
fuzz/seeds/report/, fuzz/seeds/comment/): pairs of results files, a NUL byte between baseline
and candidate, as `fuzz/src/lib.rs::compare` splits them, and the JSON report `kgate compare`
writes of each.

The results are the project's own: the example suite's stored baseline and `kgate import` of
the test fixtures of several formats (so that each seed is in the results format this build
writes). Each file is paired with itself and with a copy whose every other benchmark's values
are 20 % larger (regressions and unchanged rows in one report); the baseline also with the
imports, which have other benchmarks (new and missing ones); one more pair gives the baseline's
benchmarks and metrics names that Markdown, HTML and a terminal would read as markup. The
`comment` target has those reports and one more (fuzz/seeds/comment/), whose names hold the
hidden markers of kgate's sticky comments, its own job's and another's. Run it again after a
change of the results or report format:

    cargo build --release
    python3 fuzz/seeds/make_seeds.py target/release/kgate
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


MARKUP = [
    "<script>alert(1)</script>",
    "a|b `c` *d* [e](javascript:f) @team",
    "\x1b[31mred\x1b[0m <img src=x onerror=g>",
    "line\nbreak & \"quote\" 'apos'",
]


def with_markup(text):
    """The results with names that are markup in every format kgate writes."""
    doc = json.loads(text)
    for k, bench in enumerate(doc.get("benchmarks", [])):
        bench["name"] = MARKUP[k % len(MARKUP)] + f" {k}"
        for m, metric in enumerate(bench.get("metrics", [])):
            metric["name"] = MARKUP[(k + m + 1) % len(MARKUP)]
            metric["unit"] = "<b>ns</b>"
    return json.dumps(doc, separators=(",", ":")).encode()


# The hidden markers of kgate's sticky comments (`github::body::marker`), of the job ids the
# comment target posts as and of another job's.
MARKERS = [
    "<!-- kgate:default -->",
    "<!-- kgate:bench-gpu_1.x:a/b -->",
    "<!-- kgate:other -->",
    "x --> <!-- kgate:default",
]


def with_markers(text):
    """The results with names that hold kgate's comment markers."""
    doc = json.loads(text)
    for k, bench in enumerate(doc.get("benchmarks", [])):
        bench["name"] = MARKERS[k % len(MARKERS)] + f" {k}"
        for m, metric in enumerate(bench.get("metrics", [])):
            metric["name"] = MARKERS[(k + m + 1) % len(MARKERS)]
            metric["unit"] = MARKERS[(k + m + 2) % len(MARKERS)]
    return json.dumps(doc, separators=(",", ":")).encode()


def emptied(folder):
    os.makedirs(folder, exist_ok=True)
    for old in os.listdir(folder):
        os.remove(os.path.join(folder, old))
    return folder


def main(kgate):
    out = emptied(os.path.join(ROOT, "fuzz/seeds/compare"))
    reports = emptied(os.path.join(ROOT, "fuzz/seeds/report"))
    comments = emptied(os.path.join(ROOT, "fuzz/seeds/comment"))
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
        seeds = {}
        for name, text in files.items():
            pairs = {"itself": text, "slower": slower(text)}
            if name != "baseline":
                pairs["baseline"] = files["baseline"]
            for other, head in pairs.items():
                seeds[f"{name}-vs-{other}"] = (text, head)
        markup = with_markup(files["baseline"])
        seeds["markup-vs-slower"] = (markup, slower(markup))
        markers = with_markers(files["baseline"])
        seeds["markers-vs-slower"] = (markers, slower(markers))
        for seed, (base, head) in seeds.items():
            # The markers' report seeds the comment target alone.
            if seed == "markers-vs-slower":
                report = os.path.join(comments, seed + ".json")
                compare_into(kgate, tmp, seed, base, head, report)
                continue
            with open(os.path.join(out, seed + ".json"), "wb") as f:
                f.write(base + b"\0" + head)
            compare_into(kgate, tmp, seed, base, head, os.path.join(reports, seed + ".json"))


def compare_into(kgate, tmp, seed, base, head, report):
    """The JSON report `kgate compare` writes of `base` against `head`, into `report`."""
    sides = []
    for side, text in (("base", base), ("head", head)):
        sides.append(os.path.join(tmp, side + ".json"))
        with open(sides[-1], "wb") as f:
            f.write(text)
    # Exit 1 (a regression) and 2 (a benchmark that failed) come with a report too.
    done = subprocess.run(
        [kgate, "compare", *sides, "--allow-fingerprint-mismatch", "--format", "json",
         "-o", report],
        cwd=tmp, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if not os.path.exists(report):
        sys.exit(f"kgate compare of {seed} wrote no report (exit {done.returncode})")


if __name__ == "__main__":
    main(os.path.abspath(sys.argv[1]))
