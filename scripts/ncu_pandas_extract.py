#!/usr/bin/env python3
"""The same extraction as `kgate import ncu` on a raw-page CSV, with pandas.read_csv: find the
`"ID",...` header after the log lines, skip the units row, read every metric column as numbers
(grouped thousands allowed) and collect the numeric cells per (kernel, metric), as one float
array per kernel. Used by benches/ncu_import.rs as a second reference point for speed and
memory. Unlike kgate and scripts/ncu_csv_extract.py it does not drop log lines printed after the
header (the bench's files have none)."""
import sys

import pandas as pd


def main(path):
    skip = 0
    with open(path, encoding="utf-8-sig") as f:
        for line in f:
            if line.startswith('"ID",'):
                break
            skip += 1
    # The header is the first row not skipped; the units row follows it.
    frame = pd.read_csv(
        path,
        skiprows=list(range(skip)) + [skip + 1],
        thousands=",",
        encoding="utf-8-sig",
        low_memory=False,
    )
    first_metric = 11
    metrics = frame.columns[first_metric:]
    numbers = frame[metrics].apply(pd.to_numeric, errors="coerce").to_numpy(dtype="float64")
    samples = {}
    for kernel, rows in frame.groupby("Kernel Name", sort=False).indices.items():
        samples[kernel] = numbers[rows]
    count = sum(int((~pd.isna(block)).sum()) for block in samples.values())
    print(f"pandas: {count} samples of {len(samples)} kernels", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1])
