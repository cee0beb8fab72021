# Sourced by the screenshot scripts with a fresh profile folder as $1: the flags of headless
# Chromium (Debian's) run as root on a machine whose network is closed (without the
# background-networking flags it tries to reach Google's hosts at every start), in
# `headless_flags`.
headless_flags=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run
    --disable-background-networking --disable-component-update --disable-sync
    --user-data-dir="$1")
