//! The ONE place to flip which variant the suite benchmarks.
//!
//! The repository's `kgate.yaml` runs the example binaries without
//! `--variant`, so editing a constant here (e.g. `MATMUL = "naive"`) is how you
//! demonstrate a performance regression that kgate should catch.
//! Passing `--variant NAME` on the command line overrides these defaults.

/// Which matrix-multiply implementation `matmul` benchmarks: "blocked" (fast) or "naive" (slow).
pub const MATMUL: &str = "blocked";
/// Which reduction `reduce` benchmarks: "vectorized" (fast) or "chained" (slow).
pub const REDUCE: &str = "vectorized";
