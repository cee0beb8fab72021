#!/usr/bin/env bash
# Measures kgate's cost per repetition beside a bare spawn of the same command, and the wall
# time of `kgate check` on the bundled example suite. Prints medians; asserts nothing (the
# machine this runs on is shared and noisy, so figures are read, not gated).
#
#   scripts/overhead.sh [REPETITIONS] [ROUNDS]
#
# Peer run side by side when installed: hyperfine (`hyperfine -N`), which also spawns the
# command once per run.
set -euo pipefail
cd "$(dirname "$0")/.."
reps=${1:-500}
rounds=${2:-5}

cargo build --release --quiet
kgate="$PWD/target/release/kgate"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat >"$work/kgate.yaml" <<YAML
defaults: {warmup: 0, repetitions: $reps, captures: [timer]}
benchmarks:
  - {name: spawn, command: [true]}
YAML

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
now_ns() { date +%s%N; }

per_rep=(); bare=()
for _ in $(seq "$rounds"); do
  t0=$(now_ns)
  "$kgate" -c "$work/kgate.yaml" run --no-progress -o "$work/r.json"
  t1=$(now_ns)
  per_rep+=("$(( (t1 - t0) / reps ))")
  # kgate's own wall_time samples: spawn to wait of `true`, i.e. the bare spawn.
  bare+=("$(python3 -c 'import json,sys,statistics; v=json.load(open(sys.argv[1]))["benchmarks"][0]["metrics"][0]["values"]; print(int(statistics.median(v)))' "$work/r.json")")
done
kg=$(printf '%s\n' "${per_rep[@]}" | median)
sp=$(printf '%s\n' "${bare[@]}" | median)
echo "kgate run: ${kg} ns per repetition (total wall / $reps, median of $rounds rounds)"
echo "bare spawn+wait of \`true\` (kgate's wall_time samples): ${sp} ns median"
echo "kgate overhead per repetition: $(( kg - sp )) ns"

if command -v hyperfine >/dev/null; then
  hf=()
  for _ in $(seq "$rounds"); do
    t0=$(now_ns)
    hyperfine -N --runs "$reps" --warmup 0 --style none true >/dev/null 2>&1
    t1=$(now_ns)
    hf+=("$(( (t1 - t0) / reps ))")
  done
  h=$(printf '%s\n' "${hf[@]}" | median)
  echo "hyperfine -N: ${h} ns per run (total wall / $reps, median of $rounds rounds)"
  awk -v a="$kg" -v b="$h" 'BEGIN {printf "ratio kgate / hyperfine per repetition: %.2f\n", a / b}'
else
  echo "hyperfine not installed: no peer figure (apt-get install hyperfine)"
fi

checks=()
for _ in $(seq "$rounds"); do
  t0=$(now_ns)
  "$kgate" check --no-progress >/dev/null
  t1=$(now_ns)
  checks+=("$(( (t1 - t0) / 1000000 ))")
done
echo "kgate check on the bundled suite: $(printf '%s\n' "${checks[@]}" | median) ms wall (median of $rounds; kernels already built)"
