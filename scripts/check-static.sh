#!/usr/bin/env bash
# Shows that a Linux release binary needs nothing from the machine: it is copied into an empty
# folder (no shell, no libc, no /etc, no /proc) that becomes the root of a fresh mount, PID and
# network namespace, and there it prints its version, validates a configuration and imports a
# hyperfine file copied in beside it. Prints the binary's size and its start-up time
# (`kgate --version`, the mean of 50 runs on the host).
#
# Usage (as root, Linux): scripts/check-static.sh [BINARY]
#   BINARY  default target/x86_64-unknown-linux-musl/dist/kgate (scripts/build-release.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-target/x86_64-unknown-linux-musl/dist/kgate}
[[ -x $bin ]] || { echo "check-static: $bin: no such executable; run scripts/build-release.sh" >&2; exit 2; }
[[ $(id -u) == 0 ]] || { echo "check-static: chroot needs root" >&2; exit 2; }

root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
cp "$bin" "$root/kgate"
cat > "$root/kgate.yaml" <<'YAML'
version: 1
benchmarks:
  - name: sum
    command: ["/kgate", "--version"]
YAML
cat > "$root/sum.json" <<'JSON'
{"results": [{"command": "sum", "mean": 0.0021, "stddev": 0.0001, "median": 0.0021,
  "user": 0.001, "system": 0.0005, "min": 0.0020, "max": 0.0023,
  "times": [0.0020, 0.0021, 0.0021, 0.0022, 0.0023], "exit_codes": [0, 0, 0, 0, 0]}]}
JSON
echo "check-static: the root holds only: $(cd "$root" && printf '%s ' *)"
inside() { unshare --mount --pid --net --fork chroot "$root" /kgate "$@"; }
inside --version
inside -c /kgate.yaml validate
inside import hyperfine /sum.json -o /sum-results.json
grep -q '"name": "sum"' "$root/sum-results.json" || { echo "check-static: the import wrote no benchmark" >&2; exit 1; }
echo "check-static: import wrote sum-results.json ($(wc -c < "$root/sum-results.json" | tr -d ' ') bytes)"

file "$bin" 2>/dev/null || true
size=$(wc -c < "$bin" | tr -d ' ')
start=$(date +%s%N)
for _ in $(seq 50); do "$bin" --version >/dev/null; done
end=$(date +%s%N)
awk -v s="$size" -v ns=$((end - start)) 'BEGIN { printf "check-static: %d bytes (%.1f MiB), start-up %.2f ms (kgate --version, mean of 50)\n", s, s / 1048576, ns / 50 / 1e6 }'
