#!/usr/bin/env bash
# Regenerates tests/fixtures/criterion/sum_1000/new/: runs one tiny Criterion 0.5 benchmark (a
# sum over 1,000 integers) in a throw-away cargo project and copies the `estimates.json`,
# `sample.json` and `benchmark.json` Criterion wrote, in Criterion's own folder layout.
# Needs a Rust toolchain and network access to crates.io. Usage: scripts/criterion-fixture.sh
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/benches" "$work/src"
cat >"$work/Cargo.toml" <<'TOML'
[package]
name = "criterion-fixture"
version = "0.1.0"
edition = "2021"

[dev-dependencies]
criterion = { version = "0.5", default-features = false }

[[bench]]
name = "sum"
harness = false
TOML
echo "" >"$work/src/lib.rs"
cat >"$work/benches/sum.rs" <<'RS'
use criterion::{black_box, criterion_group, criterion_main, Criterion};

fn sum(c: &mut Criterion) {
    let data: Vec<u64> = (0..1000).collect();
    c.bench_function("sum_1000", |b| b.iter(|| black_box(&data).iter().sum::<u64>()));
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10).warm_up_time(std::time::Duration::from_millis(200)).measurement_time(std::time::Duration::from_millis(500));
    targets = sum
}
criterion_main!(benches);
RS
(cd "$work" && cargo bench --bench sum -- --noplot)
out="$repo/tests/fixtures/criterion/sum_1000/new"
mkdir -p "$out"
for f in estimates.json sample.json benchmark.json; do
    cp "$work/target/criterion/sum_1000/new/$f" "$out/$f"
done
echo "wrote $out"
