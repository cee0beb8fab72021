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

flags=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run
    --disable-background-networking --disable-component-update --disable-sync
    --user-data-dir="$work/profile")
"$chromium" "${flags[@]}" --screenshot="$out" --window-size=1200,1600 "file://$work/report.html" 2>"$work/chromium.log" >/dev/null \
    || { cat "$work/chromium.log" >&2; exit 1; }
"$chromium" "${flags[@]}" --dump-dom "file://$work/report.html" 2>>"$work/chromium.log" > "$work/dom.html"

python3 - "$out" "$work/dom.html" "$work/report.html" <<'PY'
import struct, sys, zlib

png, dom, page = sys.argv[1:4]
expected_svgs = open(page, encoding="utf-8").read().count("<svg")
dom_text = open(dom, encoding="utf-8").read()
parsed_svgs = dom_text.count("<svg")
if expected_svgs == 0 or parsed_svgs != expected_svgs:
    sys.exit(f"screenshot-html: the page has {expected_svgs} plots, the browser parsed {parsed_svgs}")

# Decode the PNG (8-bit RGB or RGBA, not interlaced) with the standard library alone.
data = open(png, "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
pos, idat = 8, b""
while pos < len(data):
    length, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + length]
    if kind == b"IHDR":
        width, height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", body)
    elif kind == b"IDAT":
        idat += body
    pos += 12 + length
assert depth == 8 and color in (2, 6) and interlace == 0, (depth, color, interlace)
bpp = 3 if color == 2 else 4
raw = zlib.decompress(idat)
stride = width * bpp
rows, prev, i = [], bytearray(stride), 0
for _ in range(height):
    f = raw[i]; line = bytearray(raw[i + 1:i + 1 + stride]); i += 1 + stride
    for x in range(stride):
        a = line[x - bpp] if x >= bpp else 0
        b = prev[x]
        c = prev[x - bpp] if x >= bpp else 0
        if f == 1: line[x] = (line[x] + a) & 255
        elif f == 2: line[x] = (line[x] + b) & 255
        elif f == 3: line[x] = (line[x] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c; pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    rows.append(line); prev = line

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
