#!/usr/bin/env bash
# Renders the HTML report in headless Chromium, takes a screenshot, and checks that the plots
# are there: the browser's DOM holds the SVG plots, and the screenshot shows pixels in the
# base and head plot colours.
#
# Usage: scripts/screenshot-html.sh [REPORT.json] [OUT.png]
#   REPORT.json  a JSON report (`kgate compare … --format json -o FILE`); default: the fixed
#                comparison of the snapshot tests (tests/it/snapshots/it__reports__json.snap)
#   OUT.png      where the screenshot goes; default: target/report-screenshot.png
# Needs Debian's chromium package (`apt-get install chromium`).
set -euo pipefail
cd "$(dirname "$0")/.."

chromium=${CHROMIUM:-/usr/bin/chromium}
if [[ ! -x $chromium ]]; then
    echo "screenshot-html: $chromium not found; install Debian's chromium package (apt-get install chromium) or set CHROMIUM" >&2
    exit 2
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
report=${1:-}
if [[ -z $report ]]; then
    # The insta snapshot holds a header between two `---` lines, then the JSON.
    awk 'body; /^---$/ && ++n == 2 { body = 1 }' tests/it/snapshots/it__reports__json.snap > "$work/report.json"
    report=$work/report.json
fi
out=${2:-target/report-screenshot.png}
mkdir -p "$(dirname "$out")"

cargo run --quiet -- report "$report" --format html -o "$work/report.html"

source scripts/headless.sh "$work/profile"
flags=("${headless_flags[@]}")
"$chromium" "${flags[@]}" --screenshot="$out" --window-size=1200,1600 "file://$work/report.html" 2>"$work/chromium.log" >/dev/null \
    || { cat "$work/chromium.log" >&2; exit 1; }
"$chromium" "${flags[@]}" --dump-dom "file://$work/report.html" 2>>"$work/chromium.log" > "$work/dom.html"

python3 - "$out" "$work/dom.html" "$work/report.html" <<'PY'
import sys

sys.path.insert(0, "scripts")
import pngrows

png, dom, page = sys.argv[1:4]
expected_svgs = open(page, encoding="utf-8").read().count("<svg")
dom_text = open(dom, encoding="utf-8").read()
parsed_svgs = dom_text.count("<svg")
if expected_svgs == 0 or parsed_svgs != expected_svgs:
    sys.exit(f"screenshot-html: the page has {expected_svgs} plots, the browser parsed {parsed_svgs}")

width, height, bpp, rows = pngrows.decode(png)
stride = width * bpp

def near(px, rgb, tol=60):
    return all(abs(p - q) <= tol for p, q in zip(px, rgb))

base, head = (0x1f, 0x77, 0xb4), (0xd6, 0x27, 0x28)
counts = {"base": 0, "head": 0}
for line in rows:
    for x in range(0, stride, bpp):
        px = line[x:x + 3]
        if near(px, base): counts["base"] += 1
        elif near(px, head): counts["head"] += 1
print(f"screenshot-html: {png}: {width}x{height}, {parsed_svgs} SVG plots in the DOM, "
      f"{counts['base']} base-coloured and {counts['head']} head-coloured pixels")
if counts["base"] < 500 or counts["head"] < 500:
    sys.exit("screenshot-html: the screenshot does not show the plots")
PY
