"""Every number of the study's tables with its interval, and marks that mean what the papers' mean.

:func:`cell_estimates` (one cell's metrics with 95% intervals), :func:`cell_comparison` (two
rankers on one condition), :func:`mark_table` (Holm 1979 per direction; ``†`` and ``worse``,
:data:`MARKS_LEGEND`), :func:`format_interval`, :func:`format_change` and :func:`power_text`.
An ECE's value is eq. 1 of Penha & Hauff; its interval and tests use the debiased ECE
(Kumar, Liang & Ma 2019). :data:`N_RESAMPLES` and :data:`LEVEL` are shared by every table.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from calibrank.metrics.resample import ONE_SEED_NOTE, compare, detectable_effect, features, interval
from calibrank.metrics.stats import holm
from calibrank.predictions import Predictions
from calibrank.study.analysis.subsets import subset_negatives
from calibrank.table_checks import in_range, rows_failing

__all__ = [
    "ALPHA",
    "CELL_METRICS",
    "ECE_METRICS",
    "INTERVAL_METRICS",
    "LEVEL",
    "POWER",
    "MARKS_LEGEND",
    "N_RESAMPLES",
    "ONE_SEED_NOTE",
    "MARKS",
    "cell_comparison",
    "compared_problems",
    "cell_estimates",
    "detectable_effect",
    "format_change",
    "format_difference",
    "format_interval",
    "mark_table",
    "power_text",
    "seeds_note",
]

LEVEL = 0.95
N_RESAMPLES = 2000
ALPHA = 0.05
POWER = 0.8
IMPROVED, WORSE = "†", "worse"
MARKS = (IMPROVED, WORSE, "")
"""The marks a compared cell may carry (:func:`mark_table`)."""
MARKS_LEGEND = (
    f"{IMPROVED} = significant improvement (one-sided paired permutation test over test queries, "
    f"Holm-corrected across the cells of this table, p < {ALPHA}); '{WORSE}' = a significant change in the "
    f"opposite direction (same test, other tail); [lo, hi] = {LEVEL:.0%} bootstrap interval over test queries "
    "(and training seeds when there are several)."
)

CELL_METRICS = ("R@1", "MAP", "MRR", "ECE 1:1", "ECE", "Brier", "NLL")
"""The columns of :func:`cell_estimates`: ``ECE 1:1`` is the ECE on the balanced set (the
relevant candidate and one seeded negative per query), ``ECE`` on all candidates."""

ECE_METRICS = ("ECE 1:1", "ECE")
"""Cell metrics whose interval and tests are those of the debiased ECE (``<metric> debiased``)."""

INTERVAL_METRICS = tuple(f"{m} debiased" if m in ECE_METRICS else m for m in CELL_METRICS)
"""The columns of :func:`cell_estimates` that come with ``<column> lo`` / ``<column> hi``."""


def seeds_note(n_seeds: int) -> str:
    """What an interval covers: ``ONE_SEED_NOTE`` with one training seed, else queries and seeds."""
    return ONE_SEED_NOTE if n_seeds < 2 else f"{n_seeds} training seeds: intervals cover test queries and seeds"


def _balanced(runs: Sequence[Predictions], seed: int) -> list[Predictions]:
    return [subset_negatives(p, 1, seed=seed) for p in runs]


def _features(runs: Sequence[Predictions], metric: str, seed: int):
    """Features of a cell metric; an ECE is tested and resampled as the debiased ECE."""
    if metric == "ECE 1:1":
        return features(_balanced(runs, seed), "ECE debiased")
    return features(runs, "ECE debiased" if metric == "ECE" else metric)


def cell_estimates(
    runs: Sequence[Predictions], *, seed: int, metrics: Sequence[str] = CELL_METRICS, n_resamples: int = N_RESAMPLES
) -> dict[str, float]:
    """``{metric: value, "<metric> lo": ..., "<metric> hi": ...}`` for one cell (all its seeds).

    An ECE's value is eq. 1 and its interval the debiased ECE's (``<metric> debiased``, ``lo``,
    ``hi``, ``<metric> bias``). ``seed`` draws the balanced set and seeds the bootstrap; values are
    means over the seeds' runs.
    """
    out: dict[str, float] = {}
    for m in metrics:
        est = interval(_features(runs, m, seed), level=LEVEL, n_resamples=n_resamples, seed=seed)
        if m in ECE_METRICS:
            d = f"{m} debiased"
            out[m], out[f"{m} bias"] = est.value + est.bias, est.bias
            out[d], out[f"{d} lo"], out[f"{d} hi"] = est.value, est.low, est.high
        else:
            out[m], out[f"{m} lo"], out[f"{m} hi"] = est.value, est.low, est.high
    return out


def cell_comparison(
    a_runs: Sequence[Predictions],
    b_runs: Sequence[Predictions],
    metric: str,
    *,
    seed: int,
    alternative: str,
    relative: bool = True,
    scores: tuple | None = None,
    n_resamples: int = N_RESAMPLES,
) -> dict[str, float | str]:
    """Ranker A against ranker B on one condition (same queries), as one table row.

    Keys: ``a``, ``b``, ``rel_change`` (``change`` unless ``relative``), ``lo``, ``hi``, ``pvalue``
    (one-sided in the ``alternative`` direction), ``pvalue_worse``, ``se``, ``note``; an ECE is
    compared as the debiased ECE. ``scores``: optional ``(a_scores, b_scores)`` ``[Q, K]`` arrays.
    """
    if scores is None:
        fa, fb = _features(a_runs, metric, seed), _features(b_runs, metric, seed)
    else:
        fa, fb = features(a_runs, metric, scores=scores[0]), features(b_runs, metric, scores=scores[1])
    c = compare(fa, fb, alternative=alternative, relative=relative, level=LEVEL, n_resamples=n_resamples, seed=seed)
    return {
        "a": c.a,
        "b": c.b,
        "rel_change" if relative else "change": c.value,
        "lo": c.low,
        "hi": c.high,
        "pvalue": c.pvalue,
        "pvalue_worse": c.pvalue_opposite,
        "se": c.se,
        "note": c.note,
    }


def mark_table(df: pd.DataFrame, alpha: float = ALPHA) -> pd.DataFrame:
    """Add ``pvalue_holm``, ``pvalue_worse_holm`` and ``mark`` to a table of :func:`cell_comparison` rows.

    Holm runs across all rows of ``df`` (the cells of one table), once for the claimed
    direction and once for the opposite one. NaN p-values (no test possible) get no mark.
    """
    out = df.copy()
    out["pvalue_holm"] = holm(out["pvalue"].to_numpy(dtype=float)) if len(out) else []
    out["pvalue_worse_holm"] = holm(out["pvalue_worse"].to_numpy(dtype=float)) if len(out) else []
    better = out["pvalue_holm"].fillna(1.0) < alpha
    worse = out["pvalue_worse_holm"].fillna(1.0) < alpha
    out["mark"] = np.where(better, IMPROVED, np.where(worse, WORSE, ""))
    return out


def compared_problems(name: str, df: pd.DataFrame, keys: Sequence[str]) -> list[str]:
    """Rows of a compared table (:func:`mark_table`) whose p-value is outside [0, 1] (NaN: no test) or whose mark is unknown."""
    return in_range(name, df, "pvalue", keys, 0, 1, allow_nan=True) + rows_failing(
        name, df, df["mark"].isin(MARKS), keys, f"one of the marks {', '.join(map(repr, MARKS))}", ["mark"]
    )


def format_interval(value: float, lo: float, hi: float, digits: int = 3) -> str:
    """``"0.250 [0.190, 0.310]"``; the value alone when the interval is NaN; ``""`` when the value is NaN."""
    if not np.isfinite(value):
        return ""
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return f"{value:.{digits}f}"
    return f"{value:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"


def _signed(value: float, lo: float, hi: float, mark: str, spec: str) -> str:
    if not np.isfinite(value):
        return "n/a"
    text = f"{value:{spec}}"
    if np.isfinite(lo) and np.isfinite(hi):
        text += f" [{lo:{spec}}, {hi:{spec}}]"
    return f"{text} {mark}".rstrip()


def format_change(value: float, lo: float, hi: float, mark: str = "") -> str:
    """``"-12.3% [-20.1%, -4.0%] †"`` for a relative change; ``"n/a"`` when undefined."""
    return _signed(value, lo, hi, mark, "+.1%")


def format_difference(value: float, lo: float, hi: float, mark: str = "") -> str:
    """``"-0.004 [-0.009, +0.001] †"`` for an absolute change; ``"n/a"`` when undefined."""
    return _signed(value, lo, hi, mark, "+.3f")


def _effect_label(x: float, unit: str) -> str:
    return f"{x:+.1%}" if unit == "relative change" else f"{x:+.3f}"


def power_text(significant: bool, detectable: float, paper_effect: float, direction: str, unit: str) -> str:
    """What a verdict could decide: ``""`` for a significant row; else ``"no effect larger than
    X (80% power)"`` or, when the paper's effect (in the claimed direction) is smaller than the
    detectable one, ``"underpowered: the paper's effect Y is below the detectable X"``.

    ``detectable`` is a magnitude (:func:`detectable_effect`), signed here in the claimed
    ``direction``; ``unit`` is ``"relative change"`` (percent) or ``"difference"``.
    """
    if significant:
        return ""
    if not np.isfinite(detectable):
        return "no power estimate (the test gave no standard error)"
    sign = -1.0 if direction == "less" else 1.0
    x = _effect_label(sign * abs(detectable), unit)
    if np.isfinite(paper_effect) and sign * paper_effect > 0 and abs(paper_effect) < abs(detectable):
        return f"underpowered: the paper's effect {_effect_label(paper_effect, unit)} is below the detectable {x}"
    return f"no effect larger than {x} ({POWER:.0%} power)"
