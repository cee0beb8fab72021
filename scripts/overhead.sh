#!/usr/bin/env bash
# Measures kgate's cost per repetition beside hyperfine's and a bare spawn loop of the same
# command, and the wall time of `kgate check` on the bundled example suite. Prints medians and
# ratios; asserts nothing (the machine this runs on is shared and noisy, so figures are read,
# not gated).
#
#   scripts/overhead.sh [REPETITIONS] [ROUNDS]
#   KGATE=path/to/kgate scripts/overhead.sh   # that binary instead of a fresh release build
#
# Each round runs, back to back and with the same number of repetitions of `true`:
#   - `kgate run` (timer capture, no warm-up): total wall / repetitions;
#   - `hyperfine -N` (no shell, no warm-up), which also spawns the command once per run:
#     total wall / runs; skipped with a line saying so when hyperfine is not installed;
#   - a bare loop, a small C program that spawns `true` (posix_spawnp, stdin and stdout on
#     /dev/null, stderr on a pipe that it reads to the end, like kgate) and waits for it:
#     total wall / repetitions; skipped with a line saying so when no C compiler is found.
# Each tool also runs once with 1 repetition, for the marginal cost of a repetition (below).
# kgate's own wall_time samples (spawn to wait of each repetition) are a second bare figure.
set -euo pipefail
cd "$(dirname "$0")/.."
reps=${1:-500}
rounds=${2:-5}

if [ -n "${KGATE:-}" ]; then
  kgate=$(realpath "$KGATE")
else
  cargo build --release --quiet
  kgate="$PWD/target/release/kgate"
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat >"$work/kgate.yaml" <<YAML
defaults: {warmup: 0, repetitions: $reps, captures: [timer]}
benchmarks:
  - {name: spawn, command: [true]}
YAML

loop=""
if cc_bin=$(command -v cc || command -v gcc || command -v clang); then
  cat >"$work/spawnloop.c" <<'C'
#define _GNU_SOURCE
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
extern char **environ;
int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 100;
  char *args[] = {"true", NULL};
  char buf[8192];
  for (long i = 0; i < n; i++) {
    int p[2];
    if (pipe2(p, O_CLOEXEC)) return 2;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, p[1], 2);
    pid_t pid;
    if (posix_spawnp(&pid, "true", &fa, NULL, args, environ)) return 3;
    posix_spawn_file_actions_destroy(&fa);
    close(p[1]);
    while (read(p[0], buf, sizeof buf) > 0) {}
    close(p[0]);
    int status;
    if (waitpid(pid, &status, 0) != pid || status != 0) return 4;
  }
  return 0;
}
C
  if "$cc_bin" -O2 -o "$work/spawnloop" "$work/spawnloop.c" 2>"$work/cc.log"; then
    loop="$work/spawnloop"
  else
    echo "the bare spawn loop did not compile ($cc_bin): no independent bare figure"
    cat "$work/cc.log"
  fi
else
  echo "no C compiler (cc, gcc, clang): no independent bare figure"
fi
have_hf=""
if command -v hyperfine >/dev/null; then
  have_hf=1
else
  echo "hyperfine not installed: no peer figure (apt-get install hyperfine)"
fi

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
now_ns() { date +%s%N; }
# COMMAND...: wall time of COMMAND in ns, its output discarded; its CPU time (user + system,
# with the children it waited for: the spawned `true`s too) in ns into the file cpu.
wall() {
  local t0 t1 TIMEFORMAT='%3U %3S'
  t0=$(now_ns)
  { time "$@" >/dev/null 2>&1; } 2>"$work/time"
  t1=$(now_ns)
  awk '{printf "%d\n", ($1 + $2) * 1e9 + 0.5}' "$work/time" >"$work/cpu"
  echo $(( t1 - t0 ))
}
# Two figures per tool and round, from a run of $reps repetitions (T_N) and one of 1 (T_1):
# per repetition = T_N / N, as a user sees it (fixed start and finish costs spread over N);
# marginal = (T_N - T_1) / (N - 1), the cost of one more repetition (fixed costs cancel).
# The CPU time per repetition (of the run of N) is read beside: on a loaded machine it moves
# less than wall time.
record() { # NAME T_N T_1 CPU_N: appends the figures to NAME_total, NAME_marginal, NAME_cpu
  eval "$1_total+=($(( $2 / reps )))"
  eval "$1_marginal+=($(( ($2 - $3) / (reps > 1 ? reps - 1 : 1) )))"
  eval "$1_cpu+=($(( $4 / reps )))"
}
printf 'defaults: {warmup: 0, repetitions: 1, captures: [timer]}\nbenchmarks:\n  - {name: spawn, command: [true]}\n' >"$work/one.yaml"

kg_total=(); kg_marginal=(); kg_cpu=(); hf_total=(); hf_marginal=(); hf_cpu=()
bl_total=(); bl_marginal=(); bl_cpu=(); samples=()
for _ in $(seq "$rounds"); do
  tn=$(wall "$kgate" -c "$work/kgate.yaml" run --no-progress -o "$work/r.json"); cn=$(cat "$work/cpu")
  samples+=("$(python3 -c 'import json,sys,statistics; v=json.load(open(sys.argv[1]))["benchmarks"][0]["metrics"][0]["values"]; print(int(statistics.median(v)))' "$work/r.json")")
  record kg "$tn" "$(wall "$kgate" -c "$work/one.yaml" run --no-progress -o "$work/one.json")" "$cn"
  if [ -n "$have_hf" ]; then
    tn=$(wall hyperfine -N --runs "$reps" --warmup 0 --style none true); cn=$(cat "$work/cpu")
    record hf "$tn" "$(wall hyperfine -N --runs 1 --warmup 0 --style none true)" "$cn"
  fi
  if [ -n "$loop" ]; then
    tn=$(wall "$loop" "$reps"); cn=$(cat "$work/cpu")
    record bl "$tn" "$(wall "$loop" 1)" "$cn"
  fi
done
med() { printf '%s\n' "$@" | median; }
row() { printf '  %-14s %12s ns %16s ns %16s ns\n' "$1" "$2" "$3" "$4"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.3f", a / b}'; }
k=$(med "${kg_total[@]}"); km=$(med "${kg_marginal[@]}"); kc=$(med "${kg_cpu[@]}")
s=$(med "${samples[@]}")
echo "$reps repetitions of \`true\`, medians of $rounds rounds (each round runs every tool back to back):"
printf '  %-14s %15s %19s %19s\n' "" "per repetition" "marginal" "CPU per repetition"
row "kgate run" "$k" "$km" "$kc"
if [ -n "$have_hf" ]; then
  h=$(med "${hf_total[@]}"); hm=$(med "${hf_marginal[@]}"); hc=$(med "${hf_cpu[@]}")
  row "hyperfine -N" "$h" "$hm" "$hc"
fi
if [ -n "$loop" ]; then
  b=$(med "${bl_total[@]}"); bm=$(med "${bl_marginal[@]}"); bc=$(med "${bl_cpu[@]}")
  row "bare loop (C)" "$b" "$bm" "$bc"
fi
echo "  bare spawn+wait (kgate's own wall_time samples, median): ${s} ns"
if [ -n "$have_hf" ]; then
  echo "ratio kgate / hyperfine -N: $(ratio "$k" "$h") per repetition, $(ratio "$km" "$hm") marginal, $(ratio "$kc" "$hc") CPU"
fi
if [ -n "$loop" ]; then
  echo "kgate over the bare loop: $(( k - b )) ns per repetition, $(( km - bm )) ns marginal, $(( kc - bc )) ns CPU"
fi
echo "kgate over its own wall_time samples: $(( k - s )) ns per repetition, $(( km - s )) ns marginal"

checks=()
for _ in $(seq "$rounds"); do
  t0=$(now_ns)
  "$kgate" check --no-progress >/dev/null
  t1=$(now_ns)
  checks+=("$(( (t1 - t0) / 1000000 ))")
done
echo "kgate check on the bundled suite: $(printf '%s\n' "${checks[@]}" | median) ms wall (median of $rounds; kernels already built)"
