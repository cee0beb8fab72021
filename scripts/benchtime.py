"""What the bench scripts share: the builds of kgate they time, one run of a command under
`/usr/bin/time -v` (wall time, CPU time, peak resident memory, exit status), a results
file of generated samples, and git in a scratch repository. Imported by the
scripts beside it (`python3 scripts/bench_*.py` puts this folder on the module path)."""

import os
import re
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass


@dataclass
class Timed:
    """One run of a command."""

    wall: float
    """Seconds, from start to end as this script saw them."""
    cpu: float
    """User and system seconds."""
    peak_mb: float
    """Largest resident set, MiB."""
    status: int
    stdout: str
    stderr: str
    """The command's own, then `/usr/bin/time`'s report."""


def builds(paths):
    """The builds to time, as absolute paths (`target/release/kgate` when none is given); exits
    naming the first that does not exist."""
    found = [os.path.abspath(p) for p in paths or ["target/release/kgate"]]
    for build in found:
        if not os.path.exists(build):
            sys.exit(f"{build} not found: run `cargo build --release` first")
    return found


def timed(command, cwd=None):
    """Runs `command` to its end under `/usr/bin/time -v`."""
    start = time.perf_counter()
    proc = subprocess.run(
        ["/usr/bin/time", "-v", *command], cwd=cwd, capture_output=True, text=True
    )
    wall = time.perf_counter() - start

    def field(pattern):
        found = re.search(pattern, proc.stderr)
        return found.group(1) if found else None

    cpu = sum(
        float(field(rf"{kind} time \(seconds\): ([\d.]+)") or 0) for kind in ("User", "System")
    )
    peak_kb = int(field(r"Maximum resident set size \(kbytes\): (\d+)") or 0)
    status = field(r"Exit status: (\d+)")
    return Timed(
        wall=wall,
        cpu=cpu,
        peak_mb=peak_kb / 1024,
        status=int(status) if status else proc.returncode,
        stdout=proc.stdout,
        stderr=proc.stderr,
    )


def beside_peer(builds, kgate_args, peer_command, runs, peer="Python json"):
    """Runs `kgate_args(i)` on each build and then `peer_command`, `runs` times, turn by turn
    (exits naming the first that fails); the runs of each, by who ran, in the order they first
    ran."""
    by_who = {}
    for _ in range(runs):
        for i, build in enumerate(builds):
            run = timed([build, *kgate_args(i)])
            if run.status != 0:
                sys.exit(f"kgate failed: {run.stderr}")
            by_who.setdefault(build, []).append(run)
        run = timed(peer_command)
        if run.status != 0:
            sys.exit(f"the peer failed: {run.stderr}")
        by_who.setdefault(peer, []).append(run)
    return by_who


def print_runs(by_who):
    """A table of `beside_peer`'s runs: median wall time, median CPU time, largest peak memory."""
    print(f"{'who':<40} {'median s':>9} {'CPU s':>7} {'peak MB':>8}")
    for who, rs in by_who.items():
        print(
            f"{who:<40} {statistics.median(r.wall for r in rs):>9.2f} "
            f"{statistics.median(r.cpu for r in rs):>7.2f} {max(r.peak_mb for r in rs):>8.1f}",
            flush=True,
        )


def results_document(values_of, benchmarks, metrics, commit, created="2026-01-01T00:00:00Z"):
    """A kgate results document of `benchmarks` x `metrics` timings (`bench_B`/`metric_M`, ns,
    gating), the samples of each from `values_of(b, m)`, called in benchmark then metric order."""
    benches = []
    for b in range(benchmarks):
        ms = []
        for m in range(metrics):
            values = values_of(b, m)
            ms.append(
                {
                    "name": f"metric_{m}",
                    "unit": "ns",
                    "source": "timer",
                    "direction": "lower",
                    "gate": {"gates": True, "threshold": 0.05},
                    "values": values,
                    "repetition": list(range(len(values))),
                }
            )
        benches.append(
            {
                "name": f"bench_{b}",
                "status": "ok",
                "warmup": 0,
                "repetitions": max((len(m["values"]) for m in ms), default=0),
                "metrics": ms,
                "provenance": {"captures": ["protocol"]},
            }
        )
    return {
        "schema_version": 2,
        "kgate_version": "0.1.0",
        "created": created,
        "environment": {
            "cpu_model": "bench",
            "cores": 4,
            "arch": "x86_64",
            "os": "Linux",
            "kernel": "6.1",
            "kgate_version": "0.1.0",
            "git": {"commit": commit, "dirty": False},
            "tools": {},
        },
        "benchmarks": benches,
    }


def git(cwd, *args):
    """Runs git in a scratch repository, committing as a fixed bench identity."""
    subprocess.run(
        ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.com", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )
