#!/usr/bin/env python3
"""A Pallas tiled matmul, one repetition for kgate.

Runs the kernel under `jax.profiler.trace`, which writes `<logdir>/plugins/profile/<run>/
<host>.xplane.pb` (logdir: $KGATE_TRACE_DIR, default `out/pallas`). The device time of each
launch is read back from that XSpace (events of the `/device:TPU:0` plane whose name holds the
kernel's name) and reported through the kgate protocol: one JSON line per launch,
`{"metric": "kernel_time", "value": ..., "unit": "ns", "source": "timer"}`, appended to
$KGATE_PROTOCOL_FILE. `kgate import xplane --kernel matmul_kernel` reads the same file offline.
"""

import argparse
import functools
import glob
import json
import os

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def matmul_kernel(x_ref, y_ref, o_ref, acc_ref, *, k_steps):
    @pl.when(pl.program_id(2) == 0)
    def _():
        acc_ref[...] = jnp.zeros_like(acc_ref)

    acc_ref[...] += jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)

    @pl.when(pl.program_id(2) == k_steps - 1)
    def _():
        o_ref[...] = acc_ref[...].astype(o_ref.dtype)


@functools.partial(jax.jit, static_argnames=["block"])
def matmul(x, y, block):
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
    )(x, y)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--block", type=int, default=512)
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--launches", type=int, default=20)
    args = ap.parse_args()
    if jax.devices()[0].platform != "tpu":
        raise SystemExit(f"this example needs a TPU (found {jax.devices()[0].platform})")
    kx, ky = jax.random.split(jax.random.key(0))
    x = jax.random.normal(kx, (args.n, args.n), jnp.bfloat16)
    y = jax.random.normal(ky, (args.n, args.n), jnp.bfloat16)
    matmul(x, y, args.block).block_until_ready()  # compile outside the trace

    logdir = os.environ.get("KGATE_TRACE_DIR", "out/pallas")
    with jax.profiler.trace(logdir):
        for _ in range(args.launches):
            matmul(x, y, args.block).block_until_ready()
    newest = max(glob.glob(os.path.join(logdir, "plugins/profile/*/*.xplane.pb")), key=os.path.getmtime)
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
    lines = [
        json.dumps({"metric": "kernel_time", "value": t, "unit": "ns", "source": "timer"})
        for t in times_ns
    ]
    protocol = os.environ.get("KGATE_PROTOCOL_FILE")
    if protocol:
        with open(protocol, "a") as f:
            f.write("\n".join(lines) + "\n")
    else:
        print("\n".join(lines))


if __name__ == "__main__":
    main()
