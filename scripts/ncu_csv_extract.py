#!/usr/bin/env python3
"""The same extraction as `kgate import ncu` on a raw-page CSV, with Python's csv module: skip
log lines, read the header and units row, and collect every numeric cell as a float per
(kernel, metric). Used by benches/ncu_import.rs as the reference point for speed and memory."""
import csv
import sys


def main(path):
    samples = {}
    with open(path, encoding="utf-8-sig", newline="") as f:
        lines = (line for line in f if line.startswith('"'))
        reader = csv.reader(lines)
        header = next(reader)
        units = next(reader)
        kernel_col = header.index("Kernel Name")
        first_metric = 11
        names = header[first_metric:]
        for row in reader:
            per_metric = samples.setdefault(row[kernel_col], {})
            for name, cell in zip(names, row[first_metric:]):
                try:
                    value = float(cell.replace(",", ""))
                except ValueError:
                    continue
                per_metric.setdefault(name, []).append(value)
    count = sum(len(v) for m in samples.values() for v in m.values())
    print(f"python: {count} samples of {len(samples)} kernels", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1])
