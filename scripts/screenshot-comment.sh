#!/usr/bin/env bash
# Renders a report's pull-request comment the way GitHub shows it, in headless Chromium, takes
# a screenshot, and checks what the browser drew: the summary heading, the tables, and (when
# mermaid is given) the charts.
#
# The Markdown is kgate's own (`kgate report --format markdown`, the body `kgate ci` posts);
# it is turned into HTML by cmark-gfm, the CommonMark fork GitHub renders comments with, with
# GitHub's extensions (tables, autolinks, strikethrough, tag filter). `<details>` blocks stay
# collapsed, as on GitHub.
#
# Usage: scripts/screenshot-comment.sh [REPORT.json] [OUT.png]
#   REPORT.json  a JSON report; default: the fixed comparison of the snapshot tests
#   OUT.png      where the screenshot goes; default: target/comment-screenshot.png
# Environment:
#   MERMAID_JS   a local mermaid.min.js (npm package `mermaid`, dist/mermaid.min.js): the
#                ```mermaid blocks are drawn as charts, as GitHub draws them; without it they
#                show as code blocks
#   CHROMIUM     the browser (default /usr/bin/chromium)
#   HEIGHT       the window height in pixels (default 760; the width is 920, a comment's on GitHub)
# Needs Debian's chromium and cmark-gfm packages, and fonts-noto-color-emoji for the verdict's
# mark (`apt-get install chromium cmark-gfm fonts-noto-color-emoji`).
set -euo pipefail
cd "$(dirname "$0")/.."

chromium=${CHROMIUM:-/usr/bin/chromium}
for tool in "$chromium" cmark-gfm; do
    if ! command -v "$tool" >/dev/null; then
        echo "screenshot-comment: $tool not found; install Debian's chromium and cmark-gfm packages" >&2
        exit 2
    fi
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
report=${1:-}
if [[ -z $report ]]; then
    # The insta snapshot holds a header between two `---` lines, then the JSON.
    awk 'body; /^---$/ && ++n == 2 { body = 1 }' tests/it/snapshots/it__reports__json.snap > "$work/report.json"
    report=$work/report.json
fi
out=${2:-target/comment-screenshot.png}
mkdir -p "$(dirname "$out")"

cargo run --quiet -- report "$report" --format markdown -o "$work/comment.md" 2>/dev/null
# --unsafe keeps the raw HTML kgate writes (<details>, <summary>, <code>); GitHub allows those
# tags, and the tag filter removes the ones it does not.
cmark-gfm --unsafe -e table -e strikethrough -e autolink -e tagfilter "$work/comment.md" > "$work/body.html"

mermaid_tag=""
if [[ -n ${MERMAID_JS:-} ]]; then
    cp "$MERMAID_JS" "$work/mermaid.min.js"
    mermaid_tag='<script src="mermaid.min.js"></script>
<script>
  // cmark-gfm writes ```mermaid as <pre><code class="language-mermaid">; mermaid wants the
  // source in a .mermaid element, as GitHub arranges it.
  for (const code of document.querySelectorAll("code.language-mermaid")) {
    const div = document.createElement("div");
    div.className = "mermaid";
    div.textContent = code.textContent;
    code.parentElement.replaceWith(div);
  }
  mermaid.initialize({ startOnLoad: false, theme: "default" });
  mermaid.run().then(() => document.body.setAttribute("data-drawn", "yes"));
</script>'
fi

cat > "$work/comment.html" <<HTML
<!doctype html>
<html><head><meta charset="utf-8"><title>kgate comment</title>
<style>
  body { margin: 0; background: #f6f8fa; font: 14px/1.5 -apple-system, "Segoe UI", "Noto Sans", Helvetica, Arial, sans-serif; color: #1f2328; }
  .comment { max-width: 880px; margin: 16px auto; background: #fff; border: 1px solid #d0d7de; border-radius: 6px; }
  .comment-header { padding: 8px 16px; background: #f6f8fa; border-bottom: 1px solid #d0d7de; border-radius: 6px 6px 0 0; color: #59636e; }
  .comment-header b { color: #1f2328; }
  .markdown-body { padding: 16px; }
  h3 { font-size: 1.25em; margin: 0 0 16px; }
  table { border-collapse: collapse; display: block; overflow: auto; margin: 0 0 16px; }
  th, td { border: 1px solid #d0d7de; padding: 6px 13px; }
  th { font-weight: 600; }
  tr:nth-child(2n) { background: #f6f8fa; }
  code, pre { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 85%; }
  code { background: rgba(175,184,193,0.2); padding: .2em .4em; border-radius: 6px; }
  pre { background: #f6f8fa; padding: 16px; overflow: auto; border-radius: 6px; }
  pre code { background: none; padding: 0; }
  details { margin: 0 0 16px; }
  summary { cursor: pointer; }
  ul { padding-left: 2em; }
</style></head>
<body><div class="comment"><div class="comment-header"><b>github-actions</b> bot commented</div>
<div class="markdown-body">
$(cat "$work/body.html")
</div></div>
$mermaid_tag
</body></html>
HTML

source scripts/headless.sh "$work/profile"
flags=("${headless_flags[@]}" --virtual-time-budget=5000)
"$chromium" "${flags[@]}" --screenshot="$out" --window-size=920,${HEIGHT:-760} "file://$work/comment.html" 2>"$work/chromium.log" >/dev/null \
    || { cat "$work/chromium.log" >&2; exit 1; }
"$chromium" "${flags[@]}" --dump-dom "file://$work/comment.html" 2>>"$work/chromium.log" > "$work/dom.html"

python3 - "$work/comment.md" "$work/dom.html" "${MERMAID_JS:+mermaid}" <<'PY'
import sys
from html.parser import HTMLParser

md_path, dom_path, mermaid = sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else ""
markdown = open(md_path, encoding="utf-8").read()


class Counter(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.h3, self.in_h3, self.attrs = {}, "", False, {}

    def handle_starttag(self, tag, attrs):
        self.tags[tag] = self.tags.get(tag, 0) + 1
        self.in_h3 = self.in_h3 or tag == "h3"
        if tag == "body":
            self.attrs = dict(attrs)

    def handle_endtag(self, tag):
        if tag == "h3":
            self.in_h3 = False

    def handle_data(self, data):
        if self.in_h3:
            self.h3 += data


dom = Counter()
dom.feed(open(dom_path, encoding="utf-8").read())
problems = []
heading = markdown.splitlines()[0].lstrip("# ").strip()
if "kgate:" not in dom.h3:
    problems.append(f"the summary heading was not drawn (first line: {heading!r})")
tables = sum(1 for line in markdown.splitlines() if line.startswith("|---") or line.startswith("| ---"))
if dom.tags.get("table", 0) != tables:
    problems.append(f"the comment has {tables} tables, the browser drew {dom.tags.get('table', 0)}")
charts = markdown.count("```mermaid")
if mermaid:
    if dom.attrs.get("data-drawn") != "yes" or dom.tags.get("svg", 0) < charts:
        problems.append(f"{charts} mermaid charts, {dom.tags.get('svg', 0)} drawn")
if problems:
    sys.exit("screenshot-comment: " + "; ".join(problems))
print(f"screenshot-comment: {heading!r}: {tables} tables, {dom.tags.get('details', 0)} collapsed sections, "
      f"{charts} charts{' drawn' if mermaid else ' (as code; set MERMAID_JS to draw them)'}")
PY
echo "screenshot-comment: wrote $out"
