#!/usr/bin/env bash
# Builds scripts/gbench/sum.cc against the system's google-benchmark (Debian:
# libbenchmark-dev) and writes its JSON output, three repetitions with aggregates, to
# tests/fixtures/gbench/sum_repetitions.json (or to $1). The committed fixture was made with
# google-benchmark 1.7.1 from Debian 12 on an x86-64 machine:
#
#     scripts/gen_gbench_fixture.sh
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-tests/fixtures/gbench/sum_repetitions.json}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
g++ -O2 -std=c++17 scripts/gbench/sum.cc -o "$work/sum" -lbenchmark -lpthread
"$work/sum" --benchmark_repetitions=3 --benchmark_min_time=0.01 \
  --benchmark_format=json --benchmark_out_format=json --benchmark_out="$work/out.json" >/dev/null
# The context names the machine; keep the fixture free of it.
sed -e 's/"host_name": "[^"]*"/"host_name": "fixture-host"/' \
    -e 's#"executable": "[^"]*"#"executable": "./sum"#' "$work/out.json" > "$out"
echo "wrote $out"
