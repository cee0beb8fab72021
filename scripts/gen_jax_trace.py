#!/usr/bin/env python3
"""Profiles a small jitted JAX program on the CPU and keeps the profiler's outputs as test
fixtures for `kgate import xplane` and `kgate import chrome-trace`.

Usage (from the repository root, with `pip install jax` done):

    JAX_PLATFORMS=cpu python3 -c 'import runpy; runpy.run_path("scripts/gen_jax_trace.py", run_name="__main__")' tests/fixtures/jax

(`runpy` keeps the script's path relative: XLA records the Python stack of each op in the
profile, and a script run directly has an absolute `__file__`, which would put this machine's
folder into the fixtures.)

Writes `<out>/jax_cpu.xplane.pb` and `<out>/jax_cpu.trace.json.gz` (the two files
`jax.profiler.trace` writes under `plugins/profile/<run>/`) and `<out>/README.md` with the
versions used. The program is a 64x64 matmul + tanh, run 5 times after one compile, so the
outputs stay small.
"""

import glob
import os
import shutil
import sys
import tempfile

import jax
import jax.numpy as jnp


@jax.jit
def step(a, b):
    return jnp.tanh(a @ b) + 1.0


def main() -> None:
    out = sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures/jax"
    os.makedirs(out, exist_ok=True)
    a = jnp.ones((64, 64), jnp.float32)
    b = jnp.full((64, 64), 0.5, jnp.float32)
    step(a, b).block_until_ready()  # compile outside the trace
    with tempfile.TemporaryDirectory() as logdir:
        # No Python tracer: its events carry this script's absolute path.
        options = jax.profiler.ProfileOptions()
        options.python_tracer_level = 0
        with jax.profiler.trace(logdir, create_perfetto_trace=True, profiler_options=options):
            for _ in range(5):
                step(a, b).block_until_ready()
        xplanes = glob.glob(os.path.join(logdir, "plugins/profile/*/*.xplane.pb"))
        traces = glob.glob(os.path.join(logdir, "plugins/profile/*/*.trace.json.gz"))
        if len(xplanes) != 1:
            sys.exit(f"expected one .xplane.pb, found {xplanes}")
        shutil.copyfile(xplanes[0], os.path.join(out, "jax_cpu.xplane.pb"))
        if traces:
            shutil.copyfile(traces[0], os.path.join(out, "jax_cpu.trace.json.gz"))
        else:
            perfetto = glob.glob(os.path.join(logdir, "plugins/profile/*/perfetto_trace.json.gz"))
            if len(perfetto) != 1:
                sys.exit(f"expected one trace JSON, found none in {logdir}")
            shutil.copyfile(perfetto[0], os.path.join(out, "jax_cpu.trace.json.gz"))
    with open(os.path.join(out, "README.md"), "w") as f:
        f.write(
            "# JAX CPU profile fixtures\n\n"
            "Written by `scripts/gen_jax_trace.py` (a jitted 64x64 matmul + tanh, 5 runs) with\n\n"
            "    JAX_PLATFORMS=cpu python3 -c 'import runpy; runpy.run_path(\"scripts/gen_jax_trace.py\", "
            "run_name=\"__main__\")' tests/fixtures/jax\n\n"
            f"jax {jax.__version__}, jaxlib {jax.lib.__version__ if hasattr(jax.lib, '__version__') else 'same'}, CPU backend.\n"
        )



if __name__ == "__main__":
    main()
