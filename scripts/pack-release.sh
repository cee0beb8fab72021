#!/usr/bin/env bash
# Packs a kgate binary as a release asset: OUT_DIR/kgate-VERSION-TARGET.tar.gz holding
# kgate-VERSION-TARGET/kgate, README.md and CHANGELOG.md, the layout that
# `[package.metadata.binstall]` in Cargo.toml and scripts/action-install.sh expect.
#
# Usage: scripts/pack-release.sh BINARY TARGET OUT_DIR   (VERSION: Cargo.toml's)
set -euo pipefail
[[ $# -eq 3 ]] || { echo "usage: scripts/pack-release.sh BINARY TARGET OUT_DIR" >&2; exit 2; }
bin=$1 target=$2 out=$3
here=$(cd "$(dirname "$0")/.." && pwd)
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$here/Cargo.toml" | head -n 1)
[[ -n $version ]] || { echo "pack-release: no version line in Cargo.toml" >&2; exit 2; }
[[ -f $bin ]] || { echo "pack-release: $bin: no such file" >&2; exit 2; }

name=kgate-$version-$target
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/$name" "$out"
cp "$bin" "$stage/$name/kgate"
chmod 755 "$stage/$name/kgate"
cp "$here/README.md" "$here/CHANGELOG.md" "$stage/$name/"
# A fixed order, owner and time, so the same binary gives the same archive (GNU tar; BSD tar
# on macOS packs in its own order).
tar_flags=()
tar --version 2>/dev/null | grep -q 'GNU tar' && tar_flags=(--owner=0 --group=0 --numeric-owner --mtime=@0 --sort=name)
tar -C "$stage" "${tar_flags[@]}" -cf - "$name" | gzip -n -9 > "$out/$name.tar.gz.partial"
mv -f "$out/$name.tar.gz.partial" "$out/$name.tar.gz"
echo "pack-release: $out/$name.tar.gz ($(wc -c < "$bin" | tr -d ' ') byte binary)"
