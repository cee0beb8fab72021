//! Benchmark: sum of f32 values (`--variant vectorized|chained`, `--n N`,
//! `--reps R`).
//!
//! The default variant comes from `src/variants.rs`. The timed unit sums an
//! `N`-value buffer `R` times (defaults: 64Ki values x 1024 passes = 64Mi values;
//! the buffer stays in L2 so the kernel, not DRAM bandwidth, is measured).
//! One untimed warm-up call, then one timed call reported as `kernel_time` in
//! ns.

use kgate_example_kernels::{
    n_from_args, reduce, report, reps_from_args, time_kernel, variant_from_args, variants,
};
use std::hint::black_box;

fn main() {
    let variant = variant_from_args(variants::REDUCE, reduce::VARIANTS);
    let n = n_from_args(reduce::DEFAULT_N);
    let reps = reps_from_args(reduce::DEFAULT_REPS);
    let kernel = reduce::by_name(&variant).expect("variant validated above");

    let xs = reduce::input(n);

    // Warm-up: faults in pages and warms caches and the branch predictor.
    black_box(reduce::repeated(kernel, black_box(&xs), reps));

    let (elapsed, _) = time_kernel(|| reduce::repeated(kernel, black_box(&xs), black_box(reps)));
    report("kernel_time", elapsed.as_nanos() as f64, "ns");
}
