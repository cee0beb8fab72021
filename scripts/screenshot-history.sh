#!/usr/bin/env bash
# Builds a real history and its dashboard, renders the page in headless Chromium, takes a
# screenshot and checks what the browser drew: as many SVG charts in the DOM as the page has,
# and pixels of the median line, the MDE band, a regressed job and a change point.
#
# The history is made with kgate itself in a scratch git repository: a suite whose kernel
# reports a time read from a file, a baseline saved at the first commit, then twelve commits
# each measured by `kgate check --record`, the kernel 30 % slower from the seventh on.
#
# Usage: scripts/screenshot-history.sh [OUT.png]
#   OUT.png  where the screenshot goes; default: target/history-screenshot.png
# Environment: CHROMIUM (default /usr/bin/chromium); KGATE (default: cargo run).
# Needs Debian's chromium package (`apt-get install chromium`).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts=$(pwd)/scripts

chromium=${CHROMIUM:-/usr/bin/chromium}
if [[ ! -x $chromium ]]; then
    echo "screenshot-history: $chromium not found; install Debian's chromium package (apt-get install chromium) or set CHROMIUM" >&2
    exit 2
fi
out=${1:-target/history-screenshot.png}
mkdir -p "$(dirname "$out")"
out=$(cd "$(dirname "$out")" && pwd)/$(basename "$out")
if [[ -z ${KGATE:-} ]]; then
    cargo build --quiet
    KGATE=$(pwd)/target/debug/kgate
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
repo=$work/repo
mkdir -p "$repo"
cd "$repo"
git init -q
git config user.email ci@example.com
git config user.name ci
cat > kgate.yaml <<'YAML'
version: 1
defaults:
  warmup: 0
  repetitions: 8
  captures: [protocol]
gate:
  threshold: 10%
benchmarks:
  - name: matmul
    command: [sh, -c, 'n=$(od -An -N1 -tu1 /dev/urandom); echo "{\"metric\": \"kernel_time\", \"value\": $(( $(cat value) + n % 20 )), \"unit\": \"us\"}" >> "$KGATE_PROTOCOL_FILE"']
  - name: softmax
    command: [sh, -c, 'n=$(od -An -N1 -tu1 /dev/urandom); echo "{\"metric\": \"kernel_time\", \"value\": $(( 400 + n % 8 )), \"unit\": \"us\"}" >> "$KGATE_PROTOCOL_FILE"']
YAML
echo 1000 > value
git add kgate.yaml value && git commit -q -m "suite"
"$KGATE" baseline save --no-progress 2>/dev/null
for i in $(seq 1 12); do
    if [[ $i -ge 7 ]]; then echo 1300 > value; fi
    echo "$i" > job && git add job value && git commit -q -m "job $i"
    # A regression exits 1; the record is written either way.
    "$KGATE" check --no-progress --record >/dev/null 2>&1 || [[ $? == 1 ]]
done
"$KGATE" history --format html -o site/index.html --repo-url https://github.com/OWNER/kernels

source "$scripts/headless.sh" "$work/profile"
flags=("${headless_flags[@]}")
"$chromium" "${flags[@]}" --screenshot="$out" --window-size=1000,1500 "file://$repo/site/index.html" 2>"$work/chromium.log" >/dev/null \
    || { cat "$work/chromium.log" >&2; exit 1; }
"$chromium" "${flags[@]}" --dump-dom "file://$repo/site/index.html" 2>>"$work/chromium.log" > "$work/dom.html"

python3 - "$out" "$work/dom.html" "$repo/site/index.html" "$scripts" <<'PY'
import sys

sys.path.insert(0, sys.argv[4])
import pngrows

png, dom, page = sys.argv[1:4]
expected_svgs = open(page, encoding="utf-8").read().count("<svg")
dom_text = open(dom, encoding="utf-8").read()
parsed_svgs = dom_text.count("<svg")
if expected_svgs < 2 or parsed_svgs != expected_svgs:
    sys.exit(f"screenshot-history: the page has {expected_svgs} charts, the browser parsed {parsed_svgs}")
links = dom_text.count('href="https://github.com/OWNER/kernels/commit/')
if links == 0:
    sys.exit("screenshot-history: the DOM holds no commit links")

width, height, bpp, rows = pngrows.decode(png)
stride = width * bpp

colours = {"median line": (0x1f, 0x77, 0xb4), "MDE band": (0xd5, 0xe4, 0xf0),
           "regressed job": (0xd6, 0x27, 0x28), "change point": (0x7b, 0x3f, 0xb5)}
counts = dict.fromkeys(colours, 0)
for line in rows:
    for x in range(0, stride, bpp):
        px = line[x:x + 3]
        for name, rgb in colours.items():
            if all(abs(p - q) <= 12 for p, q in zip(px, rgb)):
                counts[name] += 1
                break
print(f"screenshot-history: {png}: {width}x{height}, {parsed_svgs} charts in the DOM, {links} commit links; "
      + ", ".join(f"{n} {k} pixels" for k, n in counts.items()))
missing = [k for k, n in counts.items() if n < 100]
if missing:
    sys.exit(f"screenshot-history: the screenshot does not show: {', '.join(missing)}")
PY
