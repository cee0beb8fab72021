#!/usr/bin/env python3
"""Speed and memory of `kgate import chrome-trace` beside the same extraction in Python.

Generates a Kineto-like Chrome trace of at least --size-mb megabytes (CPU ops, runtime calls,
kernels with their args, counter events, metadata) in a temporary folder, then runs, one after
the other on the same file:

  * kgate (release build): `kgate import chrome-trace FILE`, default selection;
  * `cat FILE > /dev/null`, the floor: reading the file and nothing else;
  * Python: `json.load` and the same extraction (durations per kernel name of the `kernel`
    category events, counter readings).

Each is run --runs times (default 3), one after the other, under `/usr/bin/time -v`; the
table gives the median wall time and the largest peak resident memory. The trace is written
first, so both read it from the page cache, and deleted afterwards. Usage (from the
repository root):

    cargo build --release
    python3 scripts/bench_trace_import.py [--size-mb 500] [--runs 3] [--kgate target/release/kgate ...]

With --device PROFILE (such as tpu-v7x) kgate imports under a kgate.yaml naming that device
profile, so that it also derives utilization from the counter track around every launch
(Python still only extracts).
"""

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time

from benchtime import timed

PYTHON_EXTRACT = r"""
import json, sys
with open(sys.argv[1]) as f:
    doc = json.load(f)
events = doc["traceEvents"] if isinstance(doc, dict) else doc
kernels, counters = {}, []
for e in events:
    ph = e.get("ph")
    if ph == "X" and any(c.strip().lower() == "kernel" for c in str(e.get("cat", "")).split(",")):
        kernels.setdefault(e["name"], []).append(e["dur"] * 1000.0)
    elif ph == "C":
        for k, v in e.get("args", {}).items():
            counters.append((e["name"] + "." + k, e["ts"] * 1000.0, v))
print(len(kernels), sum(len(v) for v in kernels.values()), len(counters))
"""

KERNELS = [
    "void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>, "
    "at::detail::Array<char*, 3> >(int, at::native::AddFunctor<float>, at::detail::Array<char*, 3>)",
    "volta_scudnn_128x64_relu_medium_nn_v1",
    "void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, 512, true, 1>(cudnnTensorStruct, float const*)",
    "ampere_sgemm_128x64_nn",
    "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float, float> > >",
]
OPS = ["aten::conv2d", "aten::add_", "aten::batch_norm", "aten::relu_", "aten::mm"]


def generate(path: str, size_bytes: int, counter_share: float) -> tuple[int, int, int]:
    """Writes the trace, `counter_share` of its events counter events; returns (events, kernel
    events, counter events)."""
    rng = random.Random(7)
    events = kernels = counters = 0
    ts = 1_700_000_000_000.0
    stream_free = ts
    with open(path, "w") as f:
        f.write('{"schemaVersion": 1, "displayTimeUnit": "ms", "deviceProperties": '
                '[{"id": 0, "name": "NVIDIA H100", "numSms": 132}], "traceEvents": [\n')
        f.write('{"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": "python"}},\n')
        f.write('{"ph": "M", "name": "thread_name", "pid": 0, "tid": 7, "args": {"name": "stream 7"}}')
        written = f.tell()
        chunk = []
        while written < size_bytes:
            for _ in range(2000):
                ts += rng.uniform(1.0, 5.0)
                corr = events
                if rng.random() < counter_share:
                    chunk.append(
                        f'{{"ph": "C", "name": "GPU 0 Utilization", "pid": 0, "ts": {ts:.3f}, '
                        f'"args": {{"GPU Utilization": {rng.random():.4f}}}}}')
                    counters += 1
                    events += 1
                    continue
                r = rng.random()
                if r < 0.45:
                    op = OPS[corr % len(OPS)]
                    chunk.append(
                        f'{{"ph": "X", "cat": "cpu_op", "name": "{op}", "pid": 4512, "tid": 4512, '
                        f'"ts": {ts:.3f}, "dur": {rng.uniform(2, 90):.3f}, "args": {{"External id": {corr}, '
                        f'"Sequence number": {corr // 3}, "Fwd thread id": 0, "Record function id": 0, '
                        f'"Ev Idx": {corr}}}}}')
                elif r < 0.65:
                    chunk.append(
                        f'{{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 4512, '
                        f'"tid": 4512, "ts": {ts:.3f}, "dur": {rng.uniform(2, 9):.3f}, '
                        f'"args": {{"External id": {corr}, "cbid": 211, "correlation": {corr}}}}}')
                else:
                    name = KERNELS[corr % len(KERNELS)]
                    # One stream runs one kernel at a time: a launch starts when the previous
                    # one has ended, as in a real trace (overlapping launches would make every
                    # kernel's windows cover every counter reading).
                    start = max(ts, stream_free)
                    dur = rng.uniform(0.5, 6.0)
                    stream_free = start + dur
                    chunk.append(
                        f'{{"ph": "X", "cat": "kernel", "name": "{name}", "pid": 0, "tid": 7, '
                        f'"ts": {start:.3f}, "dur": {dur:.3f}, "args": {{"queued": 0, '
                        f'"device": 0, "context": 1, "stream": 7, "correlation": {corr}, '
                        f'"registers per thread": 32, "shared memory": 0, "blocks per SM": 7.757576, '
                        f'"warps per SM": 31.030304, "grid": [1024, 1, 1], "block": [128, 1, 1], '
                        f'"est. achieved occupancy %": 48}}}}')
                    kernels += 1
                events += 1
            text = ",\n" + ",\n".join(chunk)
            chunk.clear()
            f.write(text)
            written += len(text)
        f.write('\n], "traceName": "bench.pt.trace.json"}\n')
    return events, kernels, counters


def measure(cmd: list[str]) -> tuple[float, float, str]:
    """Runs under /usr/bin/time -v; returns (wall seconds, peak RSS in MB, stdout)."""
    run = timed(cmd)
    if run.status != 0:
        sys.exit(f"{cmd[0]} failed:\n{run.stderr[-2000:]}")
    return run.wall, run.peak_mb, run.stdout


def repeat(runs: int, cmd: list[str]) -> tuple[float, float, str]:
    """Median wall time, largest peak RSS and the last stdout of `runs` runs."""
    results = [measure(cmd) for _ in range(runs)]
    return (statistics.median(r[0] for r in results), max(r[1] for r in results),
            results[-1][2])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mb", type=float, default=500)
    ap.add_argument("--kgate", action="append",
                    help="kgate binary (default target/release/kgate); repeat it to run several "
                         "builds side by side, run by run in turn, on the same file")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--skip-python", action="store_true")
    ap.add_argument("--device", help="a device profile for kgate.yaml (utilization derived on import)")
    ap.add_argument("--counter-share", type=float, default=0.02,
                    help="fraction of the events that are counter events (default 0.02; 0.5 for "
                         "a trace half counter readings)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="kgate-trace-bench-") as tmp:
        trace = os.path.join(tmp, "bench.pt.trace.json")
        t0 = time.monotonic()
        events, kernels, counters = generate(trace, int(args.size_mb * 1e6), args.counter_share)
        size_mb = os.path.getsize(trace) / 1e6
        print(f"trace: {size_mb:.0f} MB, {events} events ({kernels} kernels, {counters} counters), "
              f"generated in {time.monotonic() - t0:.0f} s")
        binaries = args.kgate or ["target/release/kgate"]
        out = os.path.join(tmp, "results.json")
        config = os.path.join(tmp, "none.yaml")
        if args.device:
            config = os.path.join(tmp, "kgate.yaml")
            with open(config, "w") as f:
                f.write(f'device: {args.device}\nbenchmarks:\n  - name: unused\n    command: "true"\n')
        # Builds take turns run by run, so that a change in the machine's load falls on all.
        runs: dict[str, list[tuple[float, float, str]]] = {b: [] for b in binaries}
        sizes: dict[str, int] = {}
        for _ in range(args.runs):
            for binary in binaries:
                runs[binary].append(measure([binary, "-c", config,
                                             "import", "chrome-trace", trace, "-o", out]))
                sizes[binary] = check_results(out, kernels, counters, binary)
        for binary in binaries:
            print(f"{binary}: results {sizes[binary] / 1e6:.0f} MB")
        rows = []
        for binary in binaries:
            label = "kgate import chrome-trace" + (f" ({binary})" if len(binaries) > 1 else "")
            rows.append((label, statistics.median(r[0] for r in runs[binary]),
                         max(r[1] for r in runs[binary])))
        # The floor: reading the file and nothing else.
        cwall, crss, _ = repeat(args.runs, ["sh", "-c", f'cat "{trace}" > /dev/null'])
        rows.append(("cat FILE > /dev/null", cwall, crss))
        cat = rows[-1]
        if not args.skip_python:
            script = os.path.join(tmp, "extract.py")
            with open(script, "w") as f:
                f.write(PYTHON_EXTRACT)
            pwall, prss, pout = repeat(args.runs, [sys.executable, script, trace])
            assert pout.split()[1:] == [str(kernels), str(counters)], pout
            rows.append((f"python3 json.load + loop ({sys.version.split()[0]})", pwall, prss))
        print(f"\n| tool (median of {args.runs}) | wall (s) | throughput (MB/s) | peak RSS (MB) |")
        print(f"|---|---:|---:|---:|")
        for name, w, r in rows:
            print(f"| {name} | {w:.2f} | {size_mb / w:.0f} | {r:.0f} |")
        print()
        for name, w, r in rows[:len(binaries)]:
            print(f"{name}: {w / cat[1]:.1f}x the time of `cat`")
            if not args.skip_python:
                python = rows[-1]
                print(f"{name}: {python[1] / w:.1f}x Python's throughput, "
                      f"{python[2] / r:.0f}x less peak memory")


def check_results(out: str, kernels: int, counters: int, binary: str) -> int:
    """Checks that a results file holds every launch and every reading; returns its size."""
    with open(out) as f:
        results = json.load(f)
    samples = sum(len(m["values"]) for b in results["benchmarks"] for m in b["metrics"]
                  if m["name"] == "kernel_time")
    # Every reading is on the `counters` benchmark, once; a kernel's windows are read against
    # the readings there around its launches (`counters_of`).
    # (Results format 2: one series per counter, its readings' times in `t_ns`.)
    kgate_counters = sum(len(c["t_ns"]) for b in results["benchmarks"]
                         if b["name"] == "counters" for c in b.get("counters", []))
    assert samples == kernels and kgate_counters == counters, (binary, samples, kgate_counters)
    return os.path.getsize(out)


if __name__ == "__main__":
    main()
