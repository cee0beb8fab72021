#!/usr/bin/env python3
"""Writes an XLA-ops-shaped Chrome trace with counters, for timing `kgate import chrome-trace`
with a device profile (docs/performance.md): one `/device:TPU:0` process whose `XLA Ops`
thread runs `hlo_op` events of 203 ops back to back, and after every second launch a reading
of two cumulative counters (`cycles`, `mxu_busy_1`, which `tpu-v7x` reads).

Usage (from the repository root):

    python3 scripts/gen_xla_trace.py OUT.json [--size-mb 200]
    printf 'device: tpu-v7x\\nbenchmarks:\\n  - name: unused\\n    command: "true"\\n' > tpu.yaml
    /usr/bin/time -v target/release/kgate -c tpu.yaml import chrome-trace OUT.json -o results.json
"""

import argparse
import random


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--size-mb", type=float, default=200)
    args = ap.parse_args()
    rng = random.Random(3)
    ops = [f"fusion.{i}" for i in range(200)] + ["convolution.3", "dot.7", "copy.2"]
    launches = 0
    with open(args.out, "w") as f:
        f.write('{"displayTimeUnit":"ns","traceEvents":[\n')
        f.write('{"ph":"M","name":"process_name","pid":1,"args":{"name":"/device:TPU:0"}},\n')
        f.write('{"ph":"M","name":"thread_name","pid":1,"tid":2,"args":{"name":"XLA Ops"}}')
        t, cycles, busy = 1_700_000_000_000.0, 0, 0
        chunk = []
        while f.tell() < args.size_mb * 1e6:
            for _ in range(5000):
                op = ops[rng.randrange(len(ops))]
                dur = rng.uniform(0.5, 8.0)
                chunk.append(
                    f'{{"ph":"X","pid":1,"tid":2,"name":"{op}","ts":{t:.3f},"dur":{dur:.3f},'
                    f'"args":{{"hlo_op":"{op}","hlo_module":"jit_step",'
                    f'"long_name":"{op} = f32[128,128] fusion(...)"}}}}')
                t += dur + rng.uniform(0.1, 1.0)
                if launches % 2 == 0:
                    cycles += int(rng.uniform(1000, 4000))
                    busy += int(rng.uniform(500, 2000))
                    chunk.append(f'{{"ph":"C","pid":1,"name":"cycles","ts":{t:.3f},"args":{{"value":{cycles}}}}}')
                    chunk.append(f'{{"ph":"C","pid":1,"name":"mxu_busy_1","ts":{t:.3f},"args":{{"value":{busy}}}}}')
                launches += 1
            f.write(",\n" + ",\n".join(chunk))
            chunk.clear()
        f.write("\n]}\n")
    print(f"{args.out}: {launches} launches")


if __name__ == "__main__":
    main()
