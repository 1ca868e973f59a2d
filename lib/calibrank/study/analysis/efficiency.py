"""Parameters and inference cost per query of every ranker, measured in one run on the same queries.

The cost comparison of PG-DRR (Table 2) and GPF-BERT (Table 3): :func:`measure_efficiency`
loads every trained ranker of the profile (no retraining) and times its ``predict`` on the same
seeded test queries with the logits cache off, so that the timings are comparable, unlike those
that notebook 03 records in separate processes. A query costs scoring all ``1 + k`` candidates,
tokenisation included. Calls are interleaved in a seeded order (:func:`interleaved_order`) after
a warm-up; on a CPU the process CPU time of single-threaded calls decides, on a GPU the wall time.
The table gives the median and fastest repeat and the ratio to ``bert`` per repeat, with an
interval; the papers' numbers (:data:`PAPER_EFFICIENCY`) are on MSDialog with bert-base, so
compare ratios. Why these clocks and this order: docs/decisions.md, "Timing the rankers".
:func:`machine_info` describes where timings ran; :func:`machine` puts it in one line.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as _dt
import gc
import os
import platform
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from calibrank.metrics.stats import MIN_CI_VALUES, mean_ci
from calibrank.study.data.querysets import load_query_set
from calibrank.study.settings.config import load_config
from calibrank.study.settings.schema import Config
from calibrank.table_checks import TOLERANCE, not_nan, raise_problems, rows_expected, rows_failing

__all__ = [
    "CLOCKS",
    "PAPER_EFFICIENCY",
    "Timings",
    "clock_view",
    "deciding_clock",
    "efficiency_queries",
    "efficiency_table",
    "interleaved_order",
    "machine",
    "machine_info",
    "measure_efficiency",
    "time_interleaved",
    "time_rankers",
]

#: The two clocks of every timed call: process CPU time and wall time.
CLOCKS = ("cpu", "wall")

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


def efficiency_queries(
    cfg: Config, n_queries: int = 30, *, corpus: str | None = None, sampler: str | None = None, seed: int | None = None
):
    """Seeded ``n_queries`` in-domain test queries and their description; ``sampler``: default, the training one if evaluated."""
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
    info = {
        "corpus": corpus,
        "split": "test",
        "sampler": sampler,
        "queries": len(subset),
        "candidates": len(subset[0].candidates) if subset else 0,
        "seed": seed,
    }
    return subset, info


def _positive(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be a positive integer; got {value!r}")
    return int(value)


def interleaved_order(names: Sequence[str], repeats: int, seed: int) -> list[tuple[str, ...]]:
    """The order of the timed calls: ``repeats`` rounds, each a permutation of ``names`` drawn from ``seed``.

    Repeat r of every ranker runs in round r, so the repeats a ratio pairs ran close together, and no
    ranker always runs first or right after another.
    """
    names = list(names)
    if not names or len(set(names)) != len(names):
        raise ValueError(f"names must be distinct and non-empty; got {names}")
    repeats = _positive(repeats, "repeats")
    rng = np.random.default_rng(seed)
    return [tuple(names[i] for i in rng.permutation(len(names))) for _ in range(repeats)]


@dataclasses.dataclass(frozen=True)
class Timings:
    """Seconds of each timed call: ``cpu[name][r]`` and ``wall[name][r]`` of ranker ``name`` in round ``r``,
    whose order is ``order[r]``."""

    order: tuple[tuple[str, ...], ...]
    cpu: Mapping[str, np.ndarray]
    wall: Mapping[str, np.ndarray]

    def __post_init__(self) -> None:
        names = set(self.order[0]) if self.order else set()
        if not self.order or any(set(r) != names or len(r) != len(names) for r in self.order):
            raise ValueError(f"order: every round must time each ranker once; got {self.order}")
        for clock in CLOCKS:
            got = getattr(self, clock)
            if set(got) != names or any(np.shape(v) != (len(self.order),) for v in got.values()):
                raise ValueError(
                    f"{clock}: expected {len(self.order)} seconds for each of {sorted(names)}; "
                    f"got { ({k: np.shape(v) for k, v in got.items()}) }"
                )

    def position(self, name: str) -> list[int]:
        """Where ``name`` ran in each round (0 = first)."""
        return [r.index(name) for r in self.order]


def time_interleaved(
    calls: Mapping[str, Callable[[], Any]], *, repeats: int = 5, seed: int = 0
) -> tuple[Timings, dict[str, Any]]:
    """Time ``calls`` in the rounds of :func:`interleaved_order`: CPU and wall seconds, and each call's last result.

    The cycle collector is off during each call, so that no call pays for another's garbage.
    """
    order = interleaved_order(list(calls), repeats, seed)
    cpu: dict[str, list[float]] = {name: [] for name in calls}
    wall: dict[str, list[float]] = {name: [] for name in calls}
    last: dict[str, Any] = {}
    gc.collect()
    enabled = gc.isenabled()
    try:
        for round_ in order:
            for name in round_:
                gc.disable()
                c0, w0 = time.process_time(), time.perf_counter()
                last[name] = calls[name]()
                wall[name].append(time.perf_counter() - w0)
                cpu[name].append(time.process_time() - c0)
                if enabled:
                    gc.enable()
    finally:
        if enabled:
            gc.enable()
    return Timings(
        tuple(order), {k: np.array(v) for k, v in cpu.items()}, {k: np.array(v) for k, v in wall.items()}
    ), last


@contextlib.contextmanager
def _intra_op_threads(threads: int | None) -> Iterator[None]:
    """torch's intra-op threads set to ``threads`` (None: as they are) while the block runs."""
    if threads is None:
        yield
        return
    import torch  # only when timing: the tables of this module are read without torch

    before = torch.get_num_threads()
    torch.set_num_threads(_positive(threads, "threads"))
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _predicting(model: Any, queries: Sequence) -> Callable[[], Any]:
    """``model.predict(queries)`` as a call of no arguments, bound to this ``model``."""
    return lambda: model.predict(queries)


def time_rankers(
    rankers: Mapping[str, Any],
    queries: Sequence,
    *,
    repeats: int = 5,
    warmup_queries: int = 4,
    seed: int = 0,
    threads: int | None = 1,
) -> tuple[Timings, dict[str, Any]]:
    """Time each fitted ranker's ``predict(queries)`` (:func:`time_interleaved`); the last Predictions of each.

    The logits cache is off while timing, each ranker is warmed up on ``warmup_queries`` queries, and
    torch runs ``threads`` intra-op threads (why one: docs/decisions.md, "Timing the rankers").
    """
    if not queries:
        raise ValueError("queries: expected at least one query to time")
    warm = list(queries[: max(1, min(_positive(warmup_queries, "warmup_queries"), len(queries)))])
    reuse = {name: getattr(model, "reuse_logits", None) for name, model in rankers.items()}
    try:
        for model in rankers.values():
            if hasattr(model, "reuse_logits"):
                model.reuse_logits = False  # time the scoring itself, never a read of cached logits
        with _intra_op_threads(threads):
            for model in rankers.values():
                model.predict(warm)
            return time_interleaved(
                {name: _predicting(model, queries) for name, model in rankers.items()}, repeats=repeats, seed=seed
            )
    finally:
        for name, model in rankers.items():
            if reuse[name] is not None:
                model.reuse_logits = reuse[name]


def deciding_clock(devices: Iterable[str]) -> str:
    """The clock the cost claims are decided on: ``"cpu"`` when every ranker ran on the CPU, else ``"wall"``."""
    return "cpu" if all(str(d).split(":")[0] == "cpu" for d in devices) else "wall"


def _per_query_ms(seconds: np.ndarray, n_queries: int) -> tuple[float, float, str]:
    ms = np.asarray(seconds, dtype=float) * 1000.0 / n_queries
    return float(np.median(ms)), float(ms.min()), " ".join(f"{t:.6g}" for t in ms)


def measure_efficiency(
    profile: str | Config,
    models: Mapping[str, Any],
    *,
    n_queries: int = 30,
    repeats: int = 5,
    warmup_queries: int = 4,
    train_corpus: str | None = None,
    seed: int | None = None,
    threads: int | None = 1,
) -> pd.DataFrame:
    """Time every ranker's ``predict`` on the same seeded test queries (:func:`time_rankers`); one row per ranker.

    ``seed`` (default: the profile's) draws the queries and the rounds' order; ``models`` are the
    fitted rankers trained on ``train_corpus``. Columns: ``ranker``, ``parameters``, ``clock``
    (:func:`deciding_clock`), ``ms/query`` / ``ms/query (fastest)`` / ``ms/query per repeat`` under it
    and under each clock (``cpu ...``, ``wall ...``), ``position per repeat``, ``samples``,
    ``queries``, ``candidates``, ``device``, ``threads``, ``corpus``, ``sampler``.
    """
    cfg = profile if isinstance(profile, Config) else load_config(profile)
    repeats = _positive(repeats, "repeats")
    tc = train_corpus or cfg.rankers.train_corpora[0].value
    queries, info = efficiency_queries(cfg, n_queries, corpus=tc, seed=seed)
    names = list(models)
    timings, last = time_rankers(
        models, queries, repeats=repeats, warmup_queries=warmup_queries, seed=info["seed"], threads=threads
    )
    devices = {name: str(getattr(models[name], "device", "cpu")) for name in names}
    clock = deciding_clock(devices.values())
    rows = []
    for name in names:
        pred = last[name]
        row: dict[str, Any] = {"ranker": name, "parameters": int(pred.meta.get("n_parameters", 0)), "clock": clock}
        for prefix in ("", *(f"{c} " for c in CLOCKS)):
            seconds = getattr(timings, prefix.strip() or clock)[name]
            median, fastest, every = _per_query_ms(seconds, len(queries))
            row.update(
                {
                    f"{prefix}ms/query": median,
                    f"{prefix}ms/query (fastest)": fastest,
                    f"{prefix}ms/query per repeat": every,
                }
            )
        row.update(
            {
                "position per repeat": " ".join(map(str, timings.position(name))),
                "samples": pred.n_samples,
                "queries": info["queries"],
                "candidates": info["candidates"],
                "device": devices[name],
                "threads": threads,
                "corpus": info["corpus"],
                "sampler": info["sampler"],
            }
        )
        rows.append(row)
    out = pd.DataFrame(rows)
    _check_measured(out, names)
    return out


def _check_measured(table: pd.DataFrame, names: Sequence[str]) -> None:
    """One row per ranker timed, parameters > 0, a positive median time no faster than the fastest round,
    every ranker timed on the same queries of one corpus."""
    name, keys = "measured efficiency", ("ranker",)
    problems = rows_expected(name, table, keys, [(r,) for r in names], what="one per ranker timed")
    problems += rows_failing(name, table, table["parameters"] > 0, keys, "parameters > 0", ["parameters"])
    problems += rows_failing(name, table, table["ms/query"] > 0, keys, "ms/query > 0", ["ms/query"])
    problems += rows_failing(
        name,
        table,
        table["ms/query (fastest)"] <= table["ms/query"],
        keys,
        "ms/query (fastest) <= ms/query (the median)",
        ["ms/query (fastest)", "ms/query"],
    )
    for column, why in (
        ("queries", "every ranker timed on the same queries"),
        ("corpus", "every ranker timed on one corpus"),
    ):
        if table[column].nunique(dropna=False) > 1:
            problems.append(
                f"{name}: expected one value of {column} ({why}), found "
                f"{table[column].nunique(dropna=False)}: {sorted(map(str, table[column].unique()))}"
            )
    raise_problems(problems)


def _repeats(value: Any) -> np.ndarray:
    """The per-repeat times of :func:`measure_efficiency` (a space-separated string, or a list)."""
    if isinstance(value, str):
        return np.array([float(x) for x in value.split()])
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return np.array([])
    return np.asarray(value, dtype=float)


def _ratios(measured: pd.DataFrame, prefix: str, baseline: str, level: float) -> dict[str, list]:
    """Per ranker under the ``prefix`` clock: ms/query, ratio of medians to ``baseline``, interval, per-repeat ratios."""
    col, per = f"{prefix}ms/query", f"{prefix}ms/query per repeat"
    base = measured.loc[measured["ranker"] == baseline]
    base_ms = float(base[col].iloc[0]) if len(base) else float("nan")
    base_rep = _repeats(base[per].iloc[0]) if per in measured.columns and len(base) else np.array([])
    out: dict[str, list] = {"ms": [], "ratio": [], "lo": [], "hi": [], "repeats": [], "per repeat": []}
    for ms, value in zip(measured[col], measured[per] if per in measured.columns else [None] * len(measured)):
        own = _repeats(value)
        if own.size and own.size == base_rep.size:
            _, lo, hi = mean_ci(own / base_rep, level=level)
            every = " ".join(f"{r:.6g}" for r in own / base_rep)
        else:
            lo = hi = float("nan")
            every = ""
        out["ms"].append(float(ms))
        out["ratio"].append(float(ms) / base_ms)
        out["lo"].append(lo)
        out["hi"].append(hi)
        out["repeats"].append(int(own.size))
        out["per repeat"].append(every)
    return out


def efficiency_table(measured: pd.DataFrame, baseline: str = "bert", level: float = 0.95) -> pd.DataFrame:
    """Our parameters and times with the ratio to ``baseline``, beside the papers' numbers.

    Columns: ``ranker``, ``params (M)``, ``params ratio``, ``clock``, ``ms/query``, ``ratio_to_bert``,
    ``ratio lo`` / ``ratio hi`` (a ``level`` Student-t interval of the mean per-repeat ratio; NaN with
    fewer than 2 repeats), ``repeats``, ``ratio per repeat``, the same under each measured clock
    (``cpu ...``, ``wall ...``), then the columns of :data:`PAPER_EFFICIENCY` (NaN where not run).
    """
    t = measured.reset_index(drop=True)
    base = t.loc[t["ranker"] == baseline]
    base_params = float(base["parameters"].iloc[0]) if len(base) else float("nan")
    main = _ratios(t, "", baseline, level)
    out = pd.DataFrame(
        {"ranker": t["ranker"], "params (M)": t["parameters"] / 1e6, "params ratio": t["parameters"] / base_params}
    )
    if "clock" in t.columns:
        out["clock"] = t["clock"]
    out = out.assign(
        **{
            "ms/query": main["ms"],
            "ratio_to_bert": main["ratio"],
            "ratio lo": main["lo"],
            "ratio hi": main["hi"],
            "repeats": main["repeats"],
            "ratio per repeat": main["per repeat"],
        }
    )
    for clock in CLOCKS:
        if f"{clock} ms/query" in t.columns:
            r = _ratios(t, f"{clock} ", baseline, level)
            out = out.assign(
                **{
                    f"{clock} ms/query": r["ms"],
                    f"{clock} ratio": r["ratio"],
                    f"{clock} ratio lo": r["lo"],
                    f"{clock} ratio hi": r["hi"],
                }
            )
    paper = PAPER_EFFICIENCY[["ranker", "PG-DRR ms", "PG-DRR ratio", "GPF-BERT ratio"]]
    out = out.merge(paper, on="ranker", how="left")
    _check_efficiency(out, baseline)
    for clock in CLOCKS:
        if f"{clock} ratio" in out.columns:
            _check_efficiency(clock_view(out, clock), baseline, f"efficiency table ({clock} clock)")
    return out


def _check_efficiency(table: pd.DataFrame, baseline: str, name: str = "efficiency table") -> None:
    """No NaN in ``params (M)``, ``ms/query``, ``ratio_to_bert``; ``baseline``'s ratio is 1; every ranker timed
    as often as ``baseline``; with enough repeats for an interval, ``ratio lo`` <= ``ratio hi``."""
    keys = ("ranker",)
    base = table[table["ranker"] == baseline]
    if base.empty:
        raise_problems([f"{name}: no {baseline} row, expected one (the ratios are to it)"])
    problems = not_nan(name, table, ["params (M)", "ms/query", "ratio_to_bert"], keys)
    problems += rows_failing(
        name,
        base,
        (base["ratio_to_bert"] - 1).abs() < TOLERANCE,
        keys,
        f"ratio_to_bert 1 (within {TOLERANCE:g}) for {baseline} itself",
        ["ratio_to_bert"],
    )
    repeats = int(base["repeats"].iloc[0])
    problems += rows_failing(
        name, table, table["repeats"] == repeats, keys, f"repeats {repeats} (as {baseline})", ["repeats"]
    )
    if repeats >= MIN_CI_VALUES:
        problems += rows_failing(
            name,
            table,
            table["ratio lo"] <= table["ratio hi"],
            keys,
            f"ratio lo <= ratio hi ({repeats} repeats give an interval)",
            ["ratio lo", "ratio hi"],
        )
    raise_problems(problems)


def clock_view(table: pd.DataFrame, clock: str) -> pd.DataFrame:
    """:func:`efficiency_table` with ``clock``'s times and ratios under the deciding clock's column names
    (``ms/query``, ``ratio_to_bert``, ``ratio lo``, ``ratio hi``): for a plot or a check of either clock."""
    if clock not in CLOCKS:
        raise ValueError(f"clock must be one of {CLOCKS}; got {clock!r}")
    cols = {
        f"{clock} ms/query": "ms/query",
        f"{clock} ratio": "ratio_to_bert",
        f"{clock} ratio lo": "ratio lo",
        f"{clock} ratio hi": "ratio hi",
    }
    missing = [c for c in cols if c not in table.columns]
    if missing:
        raise ValueError(
            f"efficiency table: no {clock} columns {missing}; expected a table of measure_efficiency's "
            "rows (efficiency_table)"
        )
    return table.drop(columns=list(cols.values()) + ["ratio per repeat"], errors="ignore").rename(columns=cols)


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
        "timestamp": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
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
