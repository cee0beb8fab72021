#!/usr/bin/env python3
"""A Pallas tiled matmul, one repetition for kgate.

On a TPU: runs the kernel under `jax.profiler.trace` with the profiler options of
`examples/jax/kgate_jax.py` (the TPU counter sampling kgate planned, from
`$KGATE_TPU_COUNTER_SAMPLING_OPTIONS`), which writes `<logdir>/plugins/profile/<run>/
<host>.xplane.pb` (logdir: `$KGATE_TRACE_DIR`, default `out`). The device time of each launch
is read back from that XSpace (events of the `/device:TPU:0` plane whose name holds the
kernel's name) and reported through the kgate protocol: one JSON line per launch,
`{"metric": "kernel_time", "value": ..., "unit": "ns", "source": "timer"}`, appended to
$KGATE_PROTOCOL_FILE. `kgate import xplane --kernel matmul` reads the same file offline.

Either way the result is checked against `jnp.dot` and the outcome reported as a
`{"correct": …}` protocol line. With `--interpret` (any backend, the CPU included): the same
kernel runs in Pallas's interpret mode, and each launch's time (`block_until_ready`) is
reported. Those times measure the interpreter, not the kernel: the benchmark that runs it
marks them informational (`gate: false`).
"""

import argparse
import functools
import os
import sys

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "jax"))
import kgate_jax  # noqa: E402


def matmul_kernel(x_ref, y_ref, o_ref, acc_ref, *, k_steps):
    @pl.when(pl.program_id(2) == 0)
    def _():
        acc_ref[...] = jnp.zeros_like(acc_ref)

    acc_ref[...] += jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)

    @pl.when(pl.program_id(2) == k_steps - 1)
    def _():
        o_ref[...] = acc_ref[...].astype(o_ref.dtype)


@functools.partial(jax.jit, static_argnames=["block", "interpret"])
def matmul(x, y, block, interpret=False):
    from jax.experimental.pallas import tpu as pltpu

    n = x.shape[0]
    k_steps = n // block
    return pl.pallas_call(
        functools.partial(matmul_kernel, k_steps=k_steps),
        out_shape=jax.ShapeDtypeStruct((n, n), x.dtype),
        grid=(n // block, n // block, k_steps),
        in_specs=[
            pl.BlockSpec((block, block), lambda i, j, k: (i, k)),
            pl.BlockSpec((block, block), lambda i, j, k: (k, j)),
        ],
        out_specs=pl.BlockSpec((block, block), lambda i, j, k: (i, j)),
        scratch_shapes=[pltpu.VMEM((block, block), jnp.float32)],
        interpret=interpret,
    )(x, y)


def check(got, x, y):
    """Reports the kernel's answer against `jnp.dot` as a `{"correct": …}` protocol line: a
    wrong answer is reported, not raised, so kgate gates it as `incorrect` whatever its speed.
    Returns (max error, scale) for the notes."""
    want = jnp.dot(x, y, preferred_element_type=jnp.float32)
    error = float(jnp.max(jnp.abs(got.astype(jnp.float32) - want)))
    scale = float(jnp.max(jnp.abs(want)))
    correct = error <= 0.02 * scale
    kgate_jax.report_correct(
        correct,
        f"max abs error {error:.3g} {'<=' if correct else '>'} 2 % of the largest entry, {scale:.3g}",
    )
    return error, scale


def interpret(args, x, y):
    """Interpret mode: the kernel's code runs (and is checked), its time is the interpreter's."""
    run = functools.partial(matmul, block=args.block, interpret=True)
    got = run(x, y).block_until_ready()  # compiled (and checked) outside the timing
    error, scale = check(got, x, y)
    times_ns = kgate_jax.time_launches(run, x, y, launches=args.launches, name="matmul")
    kgate_jax.report("kernel_time", times_ns)
    kgate_jax.note(
        f"interpreted on `{jax.devices()[0].platform}` (n={args.n}, block={args.block}; "
        f"max error {error:.3g} of {scale:.3g}): these times are the interpreter's, not a TPU's"
    )


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--block", type=int, default=512)
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--launches", type=int, default=20)
    ap.add_argument("--interpret", action="store_true", help="Pallas interpret mode (any backend)")
    args = ap.parse_args()
    if args.n % args.block:
        raise SystemExit(f"--n {args.n} is not a multiple of --block {args.block}")
    kx, ky = jax.random.split(jax.random.key(0))
    x = jax.random.normal(kx, (args.n, args.n), jnp.bfloat16)
    y = jax.random.normal(ky, (args.n, args.n), jnp.bfloat16)
    if args.interpret:
        interpret(args, x, y)
        return
    if jax.devices()[0].platform != "tpu":
        raise SystemExit(
            f"this example needs a TPU (found {jax.devices()[0].platform}); --interpret runs it anywhere"
        )
    check(matmul(x, y, args.block).block_until_ready(), x, y)  # compiled outside the trace

    logdir = kgate_jax.trace_dir("out")
    with jax.profiler.trace(logdir, profiler_options=kgate_jax.profile_options()):
        for _ in range(args.launches):
            matmul(x, y, args.block).block_until_ready()
    newest = kgate_jax.newest_xplane(logdir)
    profile = jax.profiler.ProfileData.from_file(newest)
    times_ns = [
        event.duration_ns
        for plane in profile.planes
        if plane.name == "/device:TPU:0"
        for line in plane.lines
        if line.name == "XLA Ops"
        for event in line.events
        if "matmul" in event.name
    ]
    if not times_ns:
        raise SystemExit(f"no matmul device events in {newest}")
    kgate_jax.report("kernel_time", times_ns)


if __name__ == "__main__":
    main()
