#!/usr/bin/env bash
# Builds kgate for one target with the `dist` profile (the release profile, stripped) and packs
# it as a release asset with scripts/pack-release.sh (OUT_DIR/kgate-VERSION-TARGET.tar.gz).
# The release workflow runs it once per target; for the Linux musl targets the binary is
# static and runs on any Linux of that architecture.
#
# Usage: scripts/build-release.sh [TARGET] [OUT_DIR]
#   TARGET   a Rust target triple; default x86_64-unknown-linux-musl
#   OUT_DIR  where the archive goes; default target/dist
set -euo pipefail
cd "$(dirname "$0")/.."

target=${1:-x86_64-unknown-linux-musl}
out=${2:-target/dist}
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
[[ -n $version ]] || { echo "build-release: no version line in Cargo.toml" >&2; exit 2; }

case $target in
*-linux-musl)
    # ring's C and assembly parts are compiled with musl-gcc (Debian's and Ubuntu's musl-tools)
    # for the host's own architecture; Rust links musl targets statically.
    cc_var="CC_${target//-/_}"
    if [[ -z ${!cc_var:-} ]]; then
        command -v musl-gcc >/dev/null || {
            echo "build-release: musl-gcc not found; install musl-tools (apt-get install musl-tools) or set $cc_var" >&2
            exit 2
        }
        export "$cc_var=musl-gcc"
    fi
    ;;
esac

cargo build --locked --profile dist --target "$target"
bin=${CARGO_TARGET_DIR:-target}/$target/dist/kgate
[[ -x $bin ]] || { echo "build-release: $bin was not built" >&2; exit 1; }

scripts/pack-release.sh "$bin" "$target" "$out"
