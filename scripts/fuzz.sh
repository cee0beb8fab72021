#!/usr/bin/env bash
# Runs kgate's fuzz targets (fuzz/fuzz_targets/) with cargo-fuzz, each for a bounded time, and
# prints a line per target: executions, new inputs found, crashes. Exits 1 when any target
# crashed (its input is left in fuzz/artifacts/<target>/; keep it in fuzz/regressions/<target>/
# once fixed, where `cargo test` replays it).
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET ...]
#
# FUZZ_RUNS=N also stops a target after N executions (the long campaign: 10 M executions or
# 30 minutes, whichever comes first, is `FUZZ_RUNS=10000000 scripts/fuzz.sh 1800`). The long
# runs happen nightly in .github/workflows/fuzz-nightly.yml, one job per target, each with its
# corpus kept in the Actions cache.
#
# Needs cargo-fuzz (`cargo install cargo-fuzz`) and nightly features: RUSTC_BOOTSTRAP=1 lets
# the stable toolchain build it. Seeds: the conformance corpus ($KGATE_CORPUS, when set), the
# test fixtures and fuzz/seeds/. Every target runs under a 2 GB memory limit.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
shift || true
export RUSTC_BOOTSTRAP=1
corpus="${KGATE_CORPUS:-}"

# The seed folders of a target.
seeds() {
  local dirs=()
  add() { for d in "$@"; do [ -d "$d" ] && dirs+=("$d"); done; return 0; }
  case "$1" in
    import_protocol|protocol_line) add fuzz/seeds/protocol ;;
    import_ncu) add "$corpus/ncu" tests/fixtures/ncu ;;
    import_rocprof) add "$corpus/rocprof" tests/fixtures/rocprof tests/fixtures/rocprofv3 ;;
    import_chrome_trace) add "$corpus/chrome_trace" tests/fixtures/jax ;;
    import_xplane) add "$corpus/xplane" tests/fixtures/jax ;;
    import_proton) add "$corpus/proton" tests/fixtures/proton ;;
    import_gbench) add "$corpus/gbench" tests/fixtures/gbench ;;
    import_nvbench) add fuzz/seeds/nvbench ;;
    import_kernelbench) add tests/fixtures/kernelbench ;;
    import_cutlass) add tests/fixtures/cutlass ;;
    import_pytest_benchmark) add "$corpus/pytest_benchmark" ;;
    import_hyperfine) add "$corpus/hyperfine" ;;
    import_criterion) add tests/fixtures/criterion ;;
    import_perf_stat|perf_stat_parse) add "$corpus/perf_stat" tests/fixtures/perf_stat ;;
    import_callgrind|import_cachegrind|valgrind_parse) add "$corpus/callgrind" "$corpus/cachegrind" ;;
    config) add fuzz/corpus/config-seeds ;;
    results) add tests/fixtures/results_v1 .kgate/baselines ;;
    compare) add fuzz/seeds/compare ;;
    report) add fuzz/seeds/report ;;
    comment) add fuzz/seeds/report fuzz/seeds/comment ;;
  esac
  if [ -d "fuzz/regressions/$1" ]; then dirs+=("fuzz/regressions/$1"); fi
  # Nothing at all for a target without seeds (an empty line would reach libFuzzer as a
  # folder named "").
  if [ ${#dirs[@]} -gt 0 ]; then printf '%s\n' "${dirs[@]}"; fi
}

# The configuration seeds are the project's own kgate.yaml files.
mkdir -p fuzz/corpus/config-seeds
find . -name kgate.yaml -not -path './fuzz/*' -not -path './target/*' | while read -r f; do
  cp "$f" "fuzz/corpus/config-seeds/$(echo "$f" | tr '/.' '__').yaml"
done

if [ $# -gt 0 ]; then
  targets=("$@")
else
  mapfile -t targets < <(ls fuzz/fuzz_targets | sed 's/\.rs$//')
fi
# AddressSanitizer by default (cargo-fuzz's default); FUZZ_SANITIZER=none builds faster, and
# still finds what matters most in safe Rust: panics, aborts, runaway memory and hangs.
sanitizer="${FUZZ_SANITIZER:-address}"
echo "building the fuzz targets (cargo fuzz build -O -s $sanitizer)…" >&2
if [ $# -gt 0 ]; then
  # Only the targets named (the nightly workflow runs one per job).
  for t in "${targets[@]}"; do cargo fuzz build -O -s "$sanitizer" "$t"; done
else
  cargo fuzz build -O -s "$sanitizer"
fi
bin_dir="fuzz/target/$(rustc -vV | sed -n 's/^host: //p')/release"
failed=0
printf '%-26s %12s %8s %s\n' target executions corpus result
for t in "${targets[@]}"; do
  mkdir -p "fuzz/corpus/$t" "fuzz/artifacts/$t"
  mapfile -t seed_dirs < <(seeds "$t")
  log="fuzz/artifacts/$t/last-run.log"
  set +e
  # The built binary itself: `cargo fuzz run` would rebuild first.
  "$bin_dir/$t" "fuzz/corpus/$t" "${seed_dirs[@]}" \
    -max_total_time="$seconds" ${FUZZ_RUNS:+-runs="$FUZZ_RUNS"} -rss_limit_mb=2048 -malloc_limit_mb=2048 \
    -max_len=262144 -timeout=20 -print_final_stats=1 \
    -artifact_prefix="fuzz/artifacts/$t/" >"$log" 2>&1
  rc=$?
  set -e
  # A run that stopped before its statistics (libFuzzer refusing its arguments) has none:
  # `?` in the table and its exit status below, not an abort of the whole script.
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1 || true)
  units=$(grep -o 'corp: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*$' || true)
  if [ $rc -eq 0 ]; then
    result=ok
  else
    result="CRASH (exit $rc): $(ls "fuzz/artifacts/$t" | grep -v last-run.log | head -3 | tr '\n' ' ' || true)"
    failed=1
    grep -m3 -E 'panicked at|ERROR: libFuzzer|SUMMARY' "$log" | sed 's/^/    /' || tail -2 "$log" | sed 's/^/    /'
  fi
  printf '%-26s %12s %8s %s\n' "$t" "${execs:-?}" "${units:-?}" "$result"
done
exit $failed
