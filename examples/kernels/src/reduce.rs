//! Sum of f32 values, two variants.
//!
//! * [`vectorized`] (fast): 16 independent accumulators over `chunks_exact`,
//!   which LLVM turns into SIMD adds with several chains in flight.
//! * [`chained`] (slow): one accumulator, each add depends on the previous
//!   one. LLVM may not reassociate float additions, so this stays a scalar
//!   chain bound by FP-add latency.

/// Variant names accepted by the `reduce` example.
pub const VARIANTS: &[&str] = &["vectorized", "chained"];

/// Default buffer length of the `reduce` example: 64Ki f32 = 256 KiB, which
/// stays resident in a per-core L2 cache.
pub const DEFAULT_N: usize = 64 * 1024;

/// Default number of passes over the buffer in one timed call of the `reduce`
/// example: 1024 passes x 64Ki values = 64Mi values summed, which takes a few
/// milliseconds for the fast variant (long enough to be robust to scheduler
/// noise on a shared machine).
pub const DEFAULT_REPS: usize = 1024;

/// Number of independent accumulators in [`vectorized`].
pub const LANES: usize = 16;

/// Signature shared by both variants.
pub type Kernel = fn(&[f32]) -> f32;

/// Returns the kernel for a variant name from [`VARIANTS`].
pub fn by_name(name: &str) -> Option<Kernel> {
    match name {
        "vectorized" => Some(vectorized),
        "chained" => Some(chained),
        _ => None,
    }
}

/// Deterministic input: `n` values in `[0, 1)` from an index formula.
pub fn input(n: usize) -> Vec<f32> {
    (0..n).map(|i| ((i * 7919) % 1000) as f32 * 0.001).collect()
}

/// Sums `xs` `reps` times with `kernel` and returns the total.
///
/// This is the unit the `reduce` example times. Repeating passes over a
/// cache-resident buffer measures the kernel itself: one pass over a 16 MiB
/// buffer would be limited by memory bandwidth, which hides most of the gap
/// between the variants (measured: under 4x at 4Mi values, about 2x at 16Mi)
/// and is noisy on a shared machine.
pub fn repeated(kernel: Kernel, xs: &[f32], reps: usize) -> f32 {
    let mut total = 0.0f32;
    for _ in 0..reps {
        total += kernel(std::hint::black_box(xs));
    }
    total
}

/// Sum with `LANES` independent accumulators (vectorizable).
pub fn vectorized(xs: &[f32]) -> f32 {
    let mut acc = [0.0f32; LANES];
    let chunks = xs.chunks_exact(LANES);
    let tail = chunks.remainder();
    for chunk in chunks {
        for (a, &x) in acc.iter_mut().zip(chunk) {
            *a += x;
        }
    }
    let mut sum: f32 = acc.iter().sum();
    for &x in tail {
        sum += x;
    }
    sum
}

/// Sum with a single accumulator (strict sequential dependency).
pub fn chained(xs: &[f32]) -> f32 {
    let mut sum = 0.0f32;
    for &x in xs {
        sum += x;
    }
    sum
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variants_agree() {
        for n in [0, 1, 15, 16, 17, 1000, 100_003] {
            let xs = input(n);
            let exact: f64 = xs.iter().map(|&x| x as f64).sum();
            for k in [vectorized as Kernel, chained] {
                let got = k(&xs) as f64;
                assert!(
                    (got - exact).abs() <= 1e-3 * exact.abs().max(1.0),
                    "n={n}: {got} vs {exact}"
                );
            }
        }
    }

    #[test]
    fn repeated_sums_passes() {
        let xs = input(100);
        for k in [vectorized as Kernel, chained] {
            let one = k(&xs);
            assert!((repeated(k, &xs, 3) - 3.0 * one).abs() <= 1e-3 * one);
        }
        assert_eq!(repeated(chained, &xs, 0), 0.0);
    }

    #[test]
    fn names() {
        for v in VARIANTS {
            assert!(by_name(v).is_some());
        }
        assert!(by_name("bogus").is_none());
    }
}
