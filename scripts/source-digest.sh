#!/usr/bin/env sh
# Prints a digest of the sources a kgate binary is built from (Cargo.toml, Cargo.lock, src/),
# 32 hex digits. The release publishes it beside its binaries (kgate-VERSION-source-digest), and
# the Action compares it with its own: equal digests mean the release's binaries were built from
# the very source the Action was used at, so downloading them is as good as building.
#
# Usage: scripts/source-digest.sh [DIR]   (default: the repository holding this script)
set -eu
dir=${1:-$(dirname "$0")/..}
cd "$dir"
if command -v sha256sum >/dev/null 2>&1; then
    sha() { sha256sum "$@"; }
else
    sha() { shasum -a 256 "$@"; }
fi
# Paths relative to DIR, in byte order, so every machine lists them alike.
find Cargo.toml Cargo.lock src -type f | LC_ALL=C sort | while IFS= read -r f; do sha "$f"; done \
    | sha | cut -c1-32
