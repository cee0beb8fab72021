"""kgate's side of a JAX benchmark, in one small module to copy or import.

- `profile_options()` builds the `jax.profiler.ProfileOptions` for this repetition. When kgate
  planned TPU counters for the benchmark (`counters.request` on a TPU device profile), it sets
  `KGATE_TPU_COUNTER_SAMPLING_OPTIONS` to XProf's `tpu_tc_perf_counter_sampling_options`
  string for this repetition's counter pass (`interval_us:1 scaling:0 counter_size_bits:3
  indices:57 ...`); the options then turn on periodic counter sampling with that string.
- `time_launches()` times each launch of a jitted function with `block_until_ready`, inside a
  `jax.profiler.TraceAnnotation` named after the kernel, so that a profile taken around it
  names each launch too (`kgate import xplane --kernel '^NAME$'`).
- `report()` writes kgate's protocol lines to the file `$KGATE_PROTOCOL_FILE` names (stdout
  when run outside kgate); `report_correct()` writes the outcome of the benchmark's correctness
  check the same way.

What this module cannot do (TPU counters under an old jax or off a TPU) fails the repetition
with the reason, since kgate shows a benchmark's stderr only when it fails.
"""

import glob
import json
import os
import sys
import time

SAMPLING_ENV = "KGATE_TPU_COUNTER_SAMPLING_OPTIONS"
SAMPLING_KEY = "tpu_tc_perf_counter_sampling_options"


def note(message):
    print(f"kgate_jax: {message}", file=sys.stderr)


def profile_options(python_tracer_level=0, allow_other_backend=False):
    """The profiler options of this repetition: the TPU counter sampling kgate planned, when
    `KGATE_TPU_COUNTER_SAMPLING_OPTIONS` is set.

    kgate keeps a benchmark's stderr only when it fails, so what cannot work fails here with
    the reason rather than leaving the results without counters: a jax without
    `ProfileOptions.advanced_configuration`, or a backend that is not a TPU (the options would
    sample nothing; `allow_other_backend=True` passes them anyway, with a note)."""
    import jax

    options = jax.profiler.ProfileOptions()
    # The Python tracer records every Python call (and the script's absolute path): off.
    options.python_tracer_level = python_tracer_level
    sampling = os.environ.get(SAMPLING_ENV, "").strip()
    if not sampling:
        return options
    if not hasattr(options, "advanced_configuration"):
        raise SystemExit(
            f"kgate_jax: kgate planned TPU counters ({SAMPLING_ENV}={sampling}), but jax "
            f"{jax.__version__} has no ProfileOptions.advanced_configuration to pass them: "
            "install a newer jax, or remove `counters.request` from the benchmark"
        )
    options.advanced_configuration = {
        "tpu_enable_periodic_counter_sampling": True,
        SAMPLING_KEY: sampling,
    }
    platform = jax.devices()[0].platform
    if platform != "tpu":
        message = (
            f"kgate planned TPU counters ({SAMPLING_ENV}={sampling}), but the backend is "
            f"`{platform}`: the TPU sampling options would sample nothing here"
        )
        if not allow_other_backend:
            raise SystemExit(
                f"kgate_jax: {message}; run on a TPU, remove `counters.request`, or pass "
                "allow_other_backend=True to profile anyway"
            )
        note(f"{message} (passed anyway: allow_other_backend=True)")
    return options


def time_launches(fn, *args, launches=20, name=None):
    """Runs `fn(*args)` `launches` times and returns each launch's time in nanoseconds,
    measured until `block_until_ready` returns (compile first: the first call is not timed
    here). Each launch is annotated as `name` (default: the function's name) in a profile."""
    import jax

    label = name or getattr(fn, "__name__", "kernel")
    times_ns = []
    for _ in range(launches):
        with jax.profiler.TraceAnnotation(label):
            start = time.perf_counter_ns()
            jax.block_until_ready(fn(*args))
            times_ns.append(time.perf_counter_ns() - start)
    return times_ns


def report(metric, values, unit="ns", source="timer", benchmark=None):
    """Writes one protocol line per value: to `$KGATE_PROTOCOL_FILE`, else to stdout."""
    lines = []
    for value in values:
        line = {"metric": metric, "value": value, "unit": unit, "source": source}
        if benchmark is not None:
            line["benchmark"] = benchmark
        lines.append(json.dumps(line))
    _write(lines)


def report_correct(correct, detail=None, benchmark=None):
    """Writes the outcome of the benchmark's correctness check as a protocol line
    (`{"correct": false, "detail": "max abs error 0.5 > 1e-3"}`): a candidate that reports
    `false` fails kgate's gate as `incorrect`, whatever its speed."""
    line = {"correct": bool(correct)}
    if detail is not None:
        line["detail"] = str(detail)
    if benchmark is not None:
        line["benchmark"] = benchmark
    _write([json.dumps(line)])


def _write(lines):
    path = os.environ.get("KGATE_PROTOCOL_FILE")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write("".join(line + "\n" for line in lines))
    else:
        print("\n".join(lines))


def trace_dir(default):
    """Where `jax.profiler.trace` writes: `$KGATE_TRACE_DIR`, else `default`."""
    return os.environ.get("KGATE_TRACE_DIR") or default


def newest_xplane(logdir):
    """The newest `*.xplane.pb` that `jax.profiler.trace(logdir)` wrote."""
    found = glob.glob(os.path.join(logdir, "plugins", "profile", "*", "*.xplane.pb"))
    if not found:
        raise SystemExit(f"jax.profiler wrote no .xplane.pb under {logdir}")
    return max(found, key=os.path.getmtime)
