#!/usr/bin/env python3
"""One repetition of the `matmul_tanh` benchmark for kgate (runs on the CPU; any backend).

Compiles the kernel of `kernel.py`, checks it against NumPy (reported to kgate as a
`{"correct": …}` protocol line), then runs it `--launches` times
under `jax.profiler.trace` (logdir: `$KGATE_TRACE_DIR`, default `out/jax`), each launch timed
with `block_until_ready` and annotated `matmul_tanh` in the profile. The times go to kgate
through the protocol (one `kernel_time` line per launch); the profile is read offline with

    kgate -c examples/jax/kgate.yaml import xplane out/jax --kernel '^matmul_tanh$'
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import kgate_jax  # noqa: E402
from kernel import VARIANT, matmul_tanh  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=256)
    ap.add_argument("--launches", type=int, default=30)
    args = ap.parse_args()
    a = jnp.linspace(-1.0, 1.0, args.n * args.n, dtype=jnp.float32).reshape(args.n, args.n)
    b = jnp.full((args.n, args.n), 1.0 / args.n, jnp.float32)
    got = np.asarray(matmul_tanh(a, b).block_until_ready())  # compiled outside the trace
    want = np.tanh(np.asarray(a, np.float64) @ np.asarray(b, np.float64))
    # A wrong answer is reported, not raised: kgate then gates the variant as `incorrect`
    # (exit 1) whatever its speed, and still shows its times.
    error = float(np.abs(got - want).max())
    correct = bool(np.allclose(got, want, atol=1e-4))
    kgate_jax.report_correct(correct, f"max abs error {error:.3g} {'<=' if correct else '>'} 1e-4 ({VARIANT})")

    logdir = kgate_jax.trace_dir("out/jax")
    with jax.profiler.trace(logdir, profiler_options=kgate_jax.profile_options()):
        times_ns = kgate_jax.time_launches(matmul_tanh, a, b, launches=args.launches, name="matmul_tanh")
    kgate_jax.report("kernel_time", times_ns)
    median_us = sorted(times_ns)[len(times_ns) // 2] / 1e3
    kgate_jax.note(
        f"matmul_tanh ({VARIANT}, n={args.n}, {jax.devices()[0].platform}): median {median_us:.1f} us; "
        f"profile {kgate_jax.newest_xplane(logdir)}"
    )


if __name__ == "__main__":
    main()
