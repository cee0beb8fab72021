#!/usr/bin/env bash
# Completes a release's assets in DIR: kgate-VERSION-source-digest (scripts/source-digest.sh of
# SOURCE, which the Action compares with its own before downloading) and kgate-VERSION-SHA256SUMS
# over every archive and that digest file, in `sha256sum` format.
#
# Usage: scripts/release-sums.sh DIR VERSION [SOURCE]   (SOURCE: default this repository)
set -euo pipefail
[[ $# -ge 2 ]] || { echo "usage: scripts/release-sums.sh DIR VERSION [SOURCE]" >&2; exit 2; }
dir=$1 version=$2
here=$(cd "$(dirname "$0")/.." && pwd)
source=${3:-$here}
"$here/scripts/source-digest.sh" "$source" > "$dir/kgate-$version-source-digest"
cd "$dir"
shopt -s nullglob
archives=(kgate-"$version"-*.tar.gz)
[[ ${#archives[@]} -gt 0 ]] || { echo "release-sums: no kgate-$version-*.tar.gz in $dir" >&2; exit 2; }
if command -v sha256sum >/dev/null; then
    sha256sum "${archives[@]}" "kgate-$version-source-digest" > "kgate-$version-SHA256SUMS"
else
    shasum -a 256 "${archives[@]}" "kgate-$version-source-digest" > "kgate-$version-SHA256SUMS"
fi
cat "kgate-$version-SHA256SUMS"
