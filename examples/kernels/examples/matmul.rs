//! Benchmark: f32 square matrix multiply (`--variant blocked|naive`, `--n N`).
//!
//! The default variant comes from `src/variants.rs`. One untimed warm-up call,
//! then one timed call reported as `kernel_time` in ns.

use kgate_example_kernels::{
    matmul, n_from_args, report, time_kernel, variant_from_args, variants,
};
use std::hint::black_box;

fn main() {
    let variant = variant_from_args(variants::MATMUL, matmul::VARIANTS);
    let n = n_from_args(matmul::DEFAULT_N);
    let kernel = matmul::by_name(&variant).expect("variant validated above");

    let (a, b) = matmul::inputs(n);
    let mut c = vec![0.0f32; n * n];

    // Warm-up: faults in pages and warms caches and the branch predictor.
    kernel(black_box(&a), black_box(&b), &mut c, n);
    black_box(&c);

    let (elapsed, _) = time_kernel(|| {
        kernel(black_box(&a), black_box(&b), &mut c, black_box(n));
        c[n * n - 1]
    });
    report("kernel_time", elapsed.as_nanos() as f64, "ns");
}
