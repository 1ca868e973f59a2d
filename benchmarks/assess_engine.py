"""``assess_engine``: wall time and peak memory of a full assessment at scale.

A synthetic :class:`~calibrank.assess.read.scored.ScoredRun` of ``queries`` x ``candidates`` pairs
(graded relevance, some queries without a relevant candidate, one list in ten shorter than the
rest, logits that track the grade) is assessed by :func:`calibrank.assess.engine.assess` with
every section and ``n_resamples`` bootstrap resamples, against a validation run of the same
size. The job runs in a fresh subprocess (``python -m benchmarks.assess_engine --child``)
that builds both runs (``build_peak_gb``: the peak resident set size while building them, the
candidate ids' strings above all), resets the peak (Linux ``clear_refs``), reads the resident
set as the baseline, assesses, and reads the peak again: ``peak_gb`` is the process's peak
during the assessment (the runs it was given included), ``increment_gb`` what the assessment
added to them; ``cpu_seconds`` is the process's user + system CPU
time over the assessment (on a machine shared with other work the wall time moves with its
load, the CPU time much less). Targets: at most 120 s and 4 GB.
"""

from __future__ import annotations

import argparse
import resource
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from .common import emit, run_child, target

__all__ = ["SECTION", "TARGETS", "bench_assess", "synthetic_run"]

SECTION = "assess_engine"
TARGETS = {"seconds": 120.0, "peak_gb": 4.0}


def synthetic_run(queries: int, candidates: int, *, seed: int, prefix: str):
    """A ragged ScoredRun of logits: grades 0-2, 5% of the queries without a relevant candidate."""
    from calibrank.assess.read.scored import ScoredRun

    rng = np.random.default_rng(seed)
    lengths = np.where(rng.random(queries) < 0.1, rng.integers(candidates // 2, candidates + 1, queries), candidates)
    mask = np.arange(candidates)[None, :] < lengths[:, None]
    grade = rng.choice(np.array([0, 1, 2], dtype=np.int8), size=(queries, candidates), p=[0.98, 0.015, 0.005])
    grade[rng.random(queries) < 0.05] = 0
    grade[~mask] = 0
    logits = rng.normal(-4.0, 1.5, (queries, candidates)) + 2.5 * grade
    docids = np.char.add(prefix, np.arange(queries * candidates).reshape(queries, candidates).astype(str))
    return ScoredRun(
        np.array([f"{prefix}{i}" for i in range(queries)]),
        docids,
        mask,
        logits[None],
        grade,
        mask,
        (grade > 0).sum(axis=1),
        kind="logit",
        source=f"synthetic-{prefix}",
    )


def _status_gb(key: str) -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(f"{key}:"):
                return int(line.split()[1]) / 1024**2
    return float("nan")


def _reset_peak() -> bool:
    """Reset VmHWM to the current resident set (Linux ``clear_refs`` 5), so the peak is the assessment's own."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def _child(queries: int, candidates: int, n_resamples: int, seed: int) -> dict[str, Any]:
    from calibrank.assess.engine import assess

    test = synthetic_run(queries, candidates, seed=seed, prefix="t")
    valid = synthetic_run(queries, candidates, seed=seed + 1, prefix="v")
    build_peak = _status_gb("VmHWM")
    reset = _reset_peak()
    base = _status_gb("VmRSS")
    cpu = resource.getrusage(resource.RUSAGE_SELF)
    start = time.perf_counter()
    result = assess(test, valid, seed=seed, n_resamples=n_resamples)
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_SELF)
    peak = _status_gb("VmHWM") if reset else max(build_peak, _status_gb("VmHWM"))
    return {
        "queries": queries,
        "candidates": candidates,
        "pairs": int(test.mask.sum()),
        "valid_pairs": int(valid.mask.sum()),
        "n_resamples": n_resamples,
        "seconds": seconds,
        "cpu_seconds": (after.ru_utime - cpu.ru_utime) + (after.ru_stime - cpu.ru_stime),
        "peak_gb": peak,
        "baseline_gb": base,
        "increment_gb": peak - base,
        "build_peak_gb": build_peak,
        "tables": {k: len(v) for k, v in result.tables().items()},
    }


def bench_assess(
    queries: int = 7000, candidates: int = 1000, *, n_resamples: int = 1000, seed: int = 0, timeout: float = 900.0
) -> dict[str, Any]:
    """The section's result: the child's measurements and each against its target."""
    args = [
        "--queries",
        str(queries),
        "--candidates",
        str(candidates),
        "--n-resamples",
        str(n_resamples),
        "--seed",
        str(seed),
    ]
    out = run_child("assess_engine", args, timeout_s=timeout)
    if "error" in out:
        raise RuntimeError(f"assess_engine child failed: {out['error']}")
    out["targets"] = [target(f"assess {queries} x {candidates}: {k}", out[k], "<=", v) for k, v in TARGETS.items()]
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.assess_engine", description=__doc__.split("\n\n")[0])
    parser.add_argument("--child", action="store_true", help="run the measurement in this process and print JSON")
    parser.add_argument("--queries", type=int, default=7000)
    parser.add_argument("--candidates", type=int, default=1000)
    parser.add_argument("--n-resamples", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    for name in ("queries", "candidates", "n_resamples"):
        if getattr(args, name) < 2:
            parser.error(f"--{name.replace('_', '-')} must be an integer >= 2, got {getattr(args, name)}")
    if args.child:
        result = _child(args.queries, args.candidates, args.n_resamples, args.seed)
    else:
        result = bench_assess(args.queries, args.candidates, n_resamples=args.n_resamples, seed=args.seed)
    emit(result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
