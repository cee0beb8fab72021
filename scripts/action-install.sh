#!/usr/bin/env bash
# Installs kgate for the Action (action.yml): the release binary matching the Action's own
# version for this runner's OS and architecture, checked against the release's SHA-256 file,
# or, when no release binary fits (a branch, an unreleased commit, an OS without one), a build
# of the Action's own source with `cargo install`. Every choice is said on stderr.
#
# Usage: scripts/action-install.sh ROOT        (kgate ends up in ROOT/bin/kgate)
# Environment:
#   KGATE_INSTALL       auto (default): the release binary when one fits, else a build;
#                       release: the release binary or an error; source: always build
#   KGATE_ACTION_PATH   the Action's source (default: $GITHUB_ACTION_PATH, else this repository)
#   KGATE_RELEASE_URL   where releases are downloaded from, up to `/releases/download`
#                       (default: $GITHUB_SERVER_URL/$GITHUB_ACTION_REPOSITORY/releases/download)
#   RUNNER_OS, RUNNER_ARCH  as GitHub sets them (Linux/macOS, X64/ARM64); default from uname
# Exit status: 0 installed; 1 a checksum mismatch or a failed install; 2 bad usage.
set -euo pipefail

say() {
    if [[ ${GITHUB_ACTIONS:-} == true ]]; then echo "::notice title=kgate install::$*" >&2; else echo "kgate install: $*" >&2; fi
}
fail() {
    if [[ ${GITHUB_ACTIONS:-} == true ]]; then echo "::error title=kgate install::$*" >&2; else echo "kgate install: error: $*" >&2; fi
    exit 1
}

[[ $# -eq 1 && -n $1 ]] || { echo "usage: scripts/action-install.sh ROOT" >&2; exit 2; }
root=$1
mode=${KGATE_INSTALL:-auto}
case $mode in auto | release | source) ;; *)
    echo "kgate install: error: install mode \`$mode\` is not one of auto, release, source" >&2
    exit 2
    ;;
esac
here=$(cd "$(dirname "$0")/.." && pwd)
action=${KGATE_ACTION_PATH:-${GITHUB_ACTION_PATH:-$here}}
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$action/Cargo.toml" | head -n 1)
[[ -n $version ]] || fail "no version line in $action/Cargo.toml"
started=$SECONDS

build_from_source() {
    if [[ $mode == release ]]; then
        fail "$1; \`install: release\` asks for the release binary, so nothing was installed"
    fi
    say "$1; building kgate $version from the action's source with cargo install (several minutes)"
    command -v cargo >/dev/null ||
        fail "cargo is not installed: install a Rust toolchain (rustup) first, or use the action at a released version"
    cargo install --locked --path "$action" --root "$root"
    say "built kgate $version from source in $((SECONDS - started)) s"
    exit 0
}

[[ $mode == source ]] && build_from_source "\`install: source\` was asked for"

os=${RUNNER_OS:-$(uname -s)}
arch=${RUNNER_ARCH:-$(uname -m)}
case "$os/$arch" in
Linux/X64 | Linux/x86_64) target=x86_64-unknown-linux-musl ;;
Linux/ARM64 | Linux/aarch64) target=aarch64-unknown-linux-musl ;;
macOS/X64 | Darwin/x86_64) target=x86_64-apple-darwin ;;
macOS/ARM64 | Darwin/arm64) target=aarch64-apple-darwin ;;
*) build_from_source "releases have no binary for $os on $arch" ;;
esac

base=${KGATE_RELEASE_URL:-}
if [[ -z $base ]]; then
    [[ -n ${GITHUB_ACTION_REPOSITORY:-} ]] ||
        build_from_source "the repository this action came from is not known (GITHUB_ACTION_REPOSITORY is empty; set KGATE_RELEASE_URL)"
    base=${GITHUB_SERVER_URL:-https://github.com}/$GITHUB_ACTION_REPOSITORY/releases/download
fi
release=${base%/}/v$version
asset=kgate-$version-$target.tar.gz
sums=kgate-$version-SHA256SUMS
digest_file=kgate-$version-source-digest

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Downloads URL to FILE; prints the HTTP status (000 when there was no answer).
fetch() {
    curl -sSL --retry 2 --connect-timeout 20 --max-time 300 -o "$2" -w '%{http_code}' "$1" 2>"$work/curl.log" || true
}
why() {
    case $1 in
    404) echo "release v$version has no $2 at $release (a branch or an unreleased commit?)" ;;
    000) echo "could not reach $release for $2 ($(tr '\n' ' ' < "$work/curl.log"))" ;;
    *) echo "downloading $2 from $release answered HTTP $1" ;;
    esac
}

code=$(fetch "$release/$sums" "$work/$sums")
[[ $code == 200 ]] || build_from_source "$(why "$code" "$sums")"
code=$(fetch "$release/$digest_file" "$work/$digest_file")
[[ $code == 200 ]] || build_from_source "$(why "$code" "$digest_file")"
theirs=$(tr -d ' \t\r\n' < "$work/$digest_file")
ours=$("$here/scripts/source-digest.sh" "$action")
[[ $theirs == "$ours" ]] ||
    build_from_source "the action's source (digest $ours) is not release v$version's (digest $theirs): a branch or an unreleased commit"

expected=$(awk -v f="$asset" '$2 == f || $2 == "*" f { print $1; exit }' "$work/$sums")
[[ -n $expected ]] || build_from_source "release v$version has no binary for $target ($sums does not list $asset)"
code=$(fetch "$release/$asset" "$work/$asset")
[[ $code == 200 ]] || build_from_source "$(why "$code" "$asset")"

if command -v sha256sum >/dev/null; then
    actual=$(sha256sum "$work/$asset" | cut -d' ' -f1)
else
    actual=$(shasum -a 256 "$work/$asset" | cut -d' ' -f1)
fi
if [[ $actual != "$expected" ]]; then
    fail "checksum mismatch for $asset from $release: $sums says $expected, the download is $actual. Refusing to install it: the file was corrupted or replaced. Re-run the job; if it persists, report it, or set \`install: source\` to build from the action's source"
fi

tar -xzf "$work/$asset" -C "$work"
bin=$work/kgate-$version-$target/kgate
[[ -f $bin ]] || fail "$asset holds no kgate-$version-$target/kgate"
mkdir -p "$root/bin"
# Into place by a rename, so a cancelled job never leaves half a binary behind.
cp "$bin" "$root/bin/.kgate.partial"
chmod 755 "$root/bin/.kgate.partial"
mv -f "$root/bin/.kgate.partial" "$root/bin/kgate"
said=$("$root/bin/kgate" --version 2>&1) || fail "the installed kgate does not run: $said"
[[ $said == *"$version"* ]] || fail "the installed kgate says \`$said\`, not version $version"
say "installed $said ($target) from release v$version, sha256 verified, in $((SECONDS - started)) s"
