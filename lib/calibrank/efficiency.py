"""Parameters and inference time per query of every ranker, measured in one run on the same queries.

PG-DRR (Ye et al., AAAI 2023) Table 2 and GPF-BERT (Ye et al., ICASSP 2023) Table 3 compare
the cost of the uncertainty methods with the deterministic BERT ranker. The timings that
notebook 03 records in each Predictions file come from separate processes, on different
query sets and possibly under different load, so they are not comparable with each other.
:func:`measure_efficiency` instead loads every ranker of the profile from the model cache
(:func:`calibrank.experiment.train_ranker` reuses trained models and does not retrain) and
times each one's ``predict`` with :func:`time.perf_counter` on the *same* seeded subset of
test queries of the in-domain corpus. All rankers are loaded first and warmed up (one untimed
call on a few of the queries); then ``repeats`` rounds time each
ranker in turn (round robin, so a change of machine load hits all alike). The table
reports the median (and the fastest) time per query and the ratio of medians to ``bert``.

What a "query" costs: scoring all ``1 + k`` candidates of it, tokenisation included (as in
``predict``). MC Dropout pays T forward passes, an ensemble M models; a GP layer one pass
plus its posterior computations. The papers' numbers (:data:`PAPER_EFFICIENCY`) are on
MSDialog with bert-base (PG-DRR: milliseconds; GPF-BERT: minutes for the whole test set, given
here as the ratio to BERT); ours are on the profile's backbone and machine, so compare ratios.

Where timings ran: :func:`machine_info` (CPU, cores, torch threads, bf16 support, GPU, library
versions) is the one description of the machine; the benchmarks (:mod:`calibrank.bench`) store it
beside their figures, and :func:`machine` puts it in one line for this module's notebook and the
report.
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
import time
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .config import Config, load_config
from .experiment import train_ranker
from .querysets import load_query_set

__all__ = ["PAPER_EFFICIENCY", "efficiency_queries", "efficiency_table", "machine", "machine_info", "measure_efficiency"]

PAPER_EFFICIENCY = pd.DataFrame(
    [
        # ranker, PG-DRR params (M), PG-DRR ms, GPF-BERT params (M), GPF-BERT minutes, GPF-BERT ratio
        ("bert", 108.31, 11.48, 413.26, 6.80, 1.00),
        ("mc_dropout", 108.31, 111.28, 413.26, 65.00, 9.56),
        ("ensemble", 514.56, 57.39, 826.52, 71.80, 10.56),
        ("sngp", 118.87, 12.82, np.nan, np.nan, np.nan),
        ("pg_drr", 108.90, 17.09, np.nan, np.nan, np.nan),
        ("gpf_bert", np.nan, np.nan, 453.55, 7.87, 1.16),
    ],
    columns=["ranker", "PG-DRR params (M)", "PG-DRR ms", "GPF-BERT params (M)", "GPF-BERT min", "GPF-BERT ratio"],
)
"""PG-DRR Table 2 (ms per test set pass as reported) and GPF-BERT Table 3 (minutes, ratio to BERT), MSDialog."""
PAPER_EFFICIENCY["PG-DRR ratio"] = PAPER_EFFICIENCY["PG-DRR ms"] / float(
    PAPER_EFFICIENCY.loc[PAPER_EFFICIENCY["ranker"] == "bert", "PG-DRR ms"].iloc[0]
)


def efficiency_queries(cfg: Config, n_queries: int = 50, *, corpus: str | None = None, sampler: str | None = None,
                       seed: int | None = None):
    """A seeded subset of ``n_queries`` test queries of the in-domain corpus (first training corpus).

    ``sampler`` defaults to the training sampler when it is an evaluation sampler, else the
    first evaluation sampler. Returns ``(queries, description dict)``.
    """
    if n_queries < 1:
        raise ValueError(f"n_queries must be positive; got {n_queries}")
    corpus = corpus or cfg.rankers.train_corpora[0].value
    evals = [s.value for s in cfg.negatives.eval]
    sampler = sampler or (cfg.negatives.train.value if cfg.negatives.train.value in evals else evals[0])
    seed = cfg.seed if seed is None else seed
    queries = load_query_set(cfg, corpus, "test", sampler)
    rng = np.random.default_rng(seed)
    take = np.sort(rng.choice(len(queries), size=min(n_queries, len(queries)), replace=False))
    subset = [queries[i] for i in take]
    info = {"corpus": corpus, "split": "test", "sampler": sampler, "queries": len(subset),
            "candidates": len(subset[0].candidates) if subset else 0, "seed": seed}
    return subset, info


def measure_efficiency(
    profile: str | Config,
    *,
    n_queries: int = 50,
    repeats: int = 3,
    warmup_queries: int = 4,
    rankers: Iterable[str] | None = None,
    train_corpus: str | None = None,
    seed: int | None = None,
) -> pd.DataFrame:
    """Time every ranker's ``predict`` on the same seeded test queries; one row per ranker.

    Columns: ``ranker``, ``parameters`` (from the Predictions' meta), ``ms/query`` (median of
    ``repeats`` timed calls / queries), ``ms/query (fastest)``, ``ms/query per repeat`` (every
    repeat's time, space-separated, in round-robin order so that repeat r of every ranker ran
    under the same machine load), ``samples`` (S), ``queries``, ``candidates``, ``device``,
    ``corpus``, ``sampler``. Rankers are loaded from the model
    cache (run notebook 03 first, or they are trained here).
    """
    cfg = profile if isinstance(profile, Config) else load_config(profile)
    if repeats < 1:
        raise ValueError(f"repeats must be positive; got {repeats}")
    tc = train_corpus or cfg.rankers.train_corpora[0].value
    queries, info = efficiency_queries(cfg, n_queries, corpus=tc, seed=seed)
    warm = queries[: max(1, min(warmup_queries, len(queries)))]
    names = list(rankers) if rankers is not None else [r.value for r in cfg.rankers.names]
    models = {name: train_ranker(cfg, name, tc) for name in names}
    for model in models.values():
        model.reuse_logits = False  # time the scoring itself, never a read of cached logits
    last = {}
    for name, model in models.items():  # warm-up: lazy initialisation, thread pools, allocator caches
        last[name] = model.predict(warm)
    times: dict[str, list[float]] = {name: [] for name in names}
    for _ in range(repeats):  # round robin, so that a change of machine load hits every ranker alike
        for name, model in models.items():
            t0 = time.perf_counter()
            last[name] = model.predict(queries)
            times[name].append(time.perf_counter() - t0)
    rows = []
    for name in names:
        per_query = np.array(times[name]) * 1000.0 / len(queries)
        pred = last[name]
        rows.append(
            {
                "ranker": name,
                "parameters": int(pred.meta.get("n_parameters", 0)),
                "ms/query": float(np.median(per_query)),
                "ms/query (fastest)": float(per_query.min()),
                "ms/query per repeat": " ".join(f"{t:.6g}" for t in per_query),
                "samples": pred.n_samples,
                "queries": info["queries"],
                "candidates": info["candidates"],
                "device": str(getattr(models[name], "device", "cpu")),
                "corpus": info["corpus"],
                "sampler": info["sampler"],
            }
        )
    return pd.DataFrame(rows)


def _repeats(value: Any) -> np.ndarray:
    """The per-repeat times of :func:`measure_efficiency` (a space-separated string, or a list)."""
    if isinstance(value, str):
        return np.array([float(x) for x in value.split()])
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return np.array([])
    return np.asarray(value, dtype=float)


def efficiency_table(measured: pd.DataFrame, baseline: str = "bert", level: float = 0.95) -> pd.DataFrame:
    """Our parameters and times with the ratio to ``baseline``, beside the papers' numbers.

    Columns: ``ranker``, ``params (M)``, ``ms/query``, ``ratio_to_bert`` (median time over
    ``baseline``'s; NaN without it), ``ratio lo`` / ``ratio hi`` (a ``level`` Student-t interval
    of the mean of the per-repeat ratios, repeat r of the ranker over repeat r of ``baseline``,
    which ran back to back; NaN with fewer than 2 repeats), ``repeats``, ``ratio per repeat``
    (space-separated), ``params ratio``, then
    the PG-DRR and GPF-BERT columns of :data:`PAPER_EFFICIENCY` (NaN where the paper did not run
    that ranker).
    """
    from .metrics.stats import mean_ci

    t = measured.copy()
    base = t.loc[t["ranker"] == baseline]
    base_ms = float(base["ms/query"].iloc[0]) if len(base) else float("nan")
    base_params = float(base["parameters"].iloc[0]) if len(base) else float("nan")
    per_repeat = "ms/query per repeat" in t.columns
    base_rep = _repeats(base["ms/query per repeat"].iloc[0]) if per_repeat and len(base) else np.array([])
    lows, highs, counts, ratios = [], [], [], []
    for value in (t["ms/query per repeat"] if per_repeat else [None] * len(t)):
        own = _repeats(value)
        if own.size and own.size == base_rep.size:
            _, lo, hi = mean_ci(own / base_rep, level=level)
            ratios.append(" ".join(f"{r:.6g}" for r in own / base_rep))
        else:
            lo = hi = float("nan")
            ratios.append("")
        lows.append(lo)
        highs.append(hi)
        counts.append(int(own.size))
    out = pd.DataFrame(
        {
            "ranker": t["ranker"],
            "params (M)": t["parameters"] / 1e6,
            "params ratio": t["parameters"] / base_params,
            "ms/query": t["ms/query"],
            "ratio_to_bert": t["ms/query"] / base_ms,
            "ratio lo": lows,
            "ratio hi": highs,
            "repeats": counts,
            "ratio per repeat": ratios,
        }
    )
    paper = PAPER_EFFICIENCY[["ranker", "PG-DRR ms", "PG-DRR ratio", "GPF-BERT ratio"]]
    return out.merge(paper, on="ranker", how="left")


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def machine_info() -> dict[str, Any]:
    """Where figures were taken: CPU, cores, platform, Python, torch version and threads, bf16 support, GPU,
    library versions and the time (UTC)."""
    info: dict[str, Any] = {
        "cpu": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "python": platform.python_version(),
        "timestamp": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }
    try:
        import torch

        info["torch"] = torch.__version__
        info["torch_threads"] = torch.get_num_threads()
        probe = getattr(torch.cpu, "_is_avx512_bf16_supported", None)
        info["cpu_bf16"] = bool(probe()) if probe is not None else False
        info["cuda"] = torch.cuda.is_available()
        if info["cuda"]:
            info["gpu"] = torch.cuda.get_device_name(0)
    except ImportError:  # pragma: no cover - torch is a dependency; this only guards odd installs
        info["torch_threads"] = None
    for dist in ("transformers", "sentence-transformers"):
        info[dist] = _version(dist)
    return info


def machine(info: dict[str, Any] | None = None) -> str:
    """One line on where the timings ran, from :func:`machine_info` (or the ``info`` it returned)."""
    info = machine_info() if info is None else info
    parts = [str(info.get("cpu")), f"{info.get('cpu_count')} CPU cores"]
    if info.get("torch_threads") is not None:
        parts.append(f"torch {info.get('torch')} with {info['torch_threads']} threads")
    parts.append(f"GPU: {info['gpu']}" if info.get("gpu") else "no GPU")
    return f"{', '.join(parts)}; {info.get('platform')}"
