"""``clock_under_load``: does the CPU clock that decides notebook 07's cost claims hold while the machine is busy?

What is measured: two pure-Python workloads of 1 and 3 units (one thread each; the true ratio is 3)
timed by :func:`calibrank.study.analysis.efficiency.time_interleaved`, first alone and then with 1 and
as many processes as the cores this process may run on spinning beside them. For each load: the median per-round ratio on
process CPU time and on wall time, and the spread (largest over smallest) of the per-round wall
ratios. Target: the CPU ratio within 20% of 3 under every load. The wall ratio is shown beside
it with no target: it is the figure that load moves.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import time
from typing import Any

import numpy as np

from calibrank.study.analysis.efficiency import time_interleaved

from .common import positive_int, target

__all__ = ["SECTION", "bench_clock"]

SECTION = "clock_under_load"
#: The largest allowed relative error of the median CPU ratio.
TOLERANCE = 0.2


def _work(units: float, unit: int) -> int:
    total = 0
    for i in range(int(units * unit)):
        total += i & 7
    return total


def _spin(stop, deadline: float) -> None:
    x = 0
    while not stop.is_set() and time.monotonic() < deadline:
        for _ in range(10_000):
            x += 1


def _timed(spinners: int, *, unit: int, repeats: int, seed: int, limit_s: float) -> dict[str, Any]:
    ctx = mp.get_context("fork")  # the children only spin: nothing to re-import
    stop = ctx.Event()
    procs = [ctx.Process(target=_spin, args=(stop, time.monotonic() + limit_s), daemon=True) for _ in range(spinners)]
    for p in procs:
        p.start()
    try:
        timings, _ = time_interleaved(
            {"one": lambda: _work(1, unit), "three": lambda: _work(3, unit)}, repeats=repeats, seed=seed
        )
    finally:
        stop.set()
        for p in procs:
            p.join(timeout=5)
            if p.is_alive():
                p.terminate()
    cpu = timings.cpu["three"] / timings.cpu["one"]  # round r timed both workloads
    wall = timings.wall["three"] / timings.wall["one"]
    return {
        "spinners": spinners,
        "cpu_ratio": float(np.median(cpu)),
        "wall_ratio": float(np.median(wall)),
        "wall_ratio_spread": float(wall.max() / wall.min()),
        "cpu_ratio_spread": float(cpu.max() / cpu.min()),
        "one_unit_cpu_s": float(np.median(timings.cpu["one"])),
        "one_unit_wall_s": float(np.median(timings.wall["one"])),
    }


def bench_clock(*, unit: int = 750_000, repeats: int = 9, seed: int = 0, limit_s: float = 120.0) -> dict[str, Any]:
    """The 3:1 workload ratio on both clocks, alone and beside 1 and one-per-usable-core spinning processes."""
    unit, repeats = positive_int(unit, "unit"), positive_int(repeats, "repeats")
    _work(1, unit)  # warm
    loads = sorted({0, 1, len(os.sched_getaffinity(0))})
    rows = [_timed(n, unit=unit, repeats=repeats, seed=seed + n, limit_s=limit_s) for n in loads]
    targets = [
        target(
            f"|CPU ratio / 3 - 1| with {r['spinners']} spinning process(es)",
            abs(r["cpu_ratio"] / 3 - 1),
            "<=",
            TOLERANCE,
            note=f"wall ratio {r['wall_ratio']:.2f}, spread {r['wall_ratio_spread']:.2f}",
        )
        for r in rows
    ]
    return {
        "true_ratio": 3.0,
        "repeats": repeats,
        "unit": unit,
        "loads": rows,
        "targets": targets,
        "note": "medians of per-round ratios; time_interleaved's rounds, one thread per workload",
    }
