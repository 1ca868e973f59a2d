"""Every number of the study's tables with its interval, and marks that mean what the papers' mean.

- :func:`cell_estimates`: the metrics of one ranker on one condition (all its training seeds),
  each with a 95% interval from :func:`calibrank.metrics.resample.interval` (test queries, and
  seeds when there are several).
- :func:`cell_comparison`: a paired comparison of two rankers on one condition
  (:func:`calibrank.metrics.resample.compare`) as a table row: the effect, its interval, the
  one-sided p-value in the claimed direction and the one in the opposite direction.
- :func:`mark_table`: Holm (Holm 1979) across the cells of one table, separately for the
  claimed and the opposite direction, and the mark of each cell: ``†`` for a significant
  improvement (the papers' mark), ``worse`` for a significant change the other way, nothing
  otherwise. :data:`MARKS_LEGEND` says so in words for every table's legend.
- :func:`format_interval`: ``"0.250 [0.190, 0.310]"``; :func:`format_change`:
  ``"-12.3% [-20.1%, -4.0%] †"``.

Resampling settings (:data:`N_RESAMPLES`, :data:`LEVEL`) are module constants so that every
table uses the same ones; every call is seeded from the profile seed.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..metrics.resample import ONE_SEED_NOTE, compare, features, interval
from ..metrics.stats import holm
from ..predictions import Predictions
from .subsets import subset_negatives

__all__ = [
    "ALPHA",
    "CELL_METRICS",
    "LEVEL",
    "MARKS_LEGEND",
    "N_RESAMPLES",
    "ONE_SEED_NOTE",
    "cell_comparison",
    "cell_estimates",
    "format_change",
    "format_interval",
    "mark_table",
    "seeds_note",
]

LEVEL = 0.95
N_RESAMPLES = 2000
ALPHA = 0.05
IMPROVED, WORSE = "†", "worse"
MARKS_LEGEND = (
    f"{IMPROVED} = significant improvement (one-sided paired permutation test over test queries, "
    f"Holm-corrected across the cells of this table, p < {ALPHA}); '{WORSE}' = a significant change in the "
    f"opposite direction (same test, other tail); [lo, hi] = {LEVEL:.0%} bootstrap interval over test queries "
    "(and training seeds when there are several)."
)

CELL_METRICS = ("R@1", "MAP", "MRR", "ECE 1:1", "ECE", "Brier", "NLL")
"""The columns of :func:`cell_estimates`: ``ECE 1:1`` is the ECE on the balanced set (the
relevant candidate and one seeded negative per query), ``ECE`` on all candidates."""


def seeds_note(n_seeds: int) -> str:
    """What an interval covers: ``ONE_SEED_NOTE`` with one training seed, else queries and seeds."""
    return ONE_SEED_NOTE if n_seeds < 2 else f"{n_seeds} training seeds: intervals cover test queries and seeds"


def _balanced(runs: Sequence[Predictions], seed: int) -> list[Predictions]:
    return [subset_negatives(p, 1, seed=seed) for p in runs]


def _features(runs: Sequence[Predictions], metric: str, seed: int):
    if metric == "ECE 1:1":
        return features(_balanced(runs, seed), "ECE")
    return features(runs, metric)


def cell_estimates(runs: Sequence[Predictions], *, seed: int, metrics: Sequence[str] = CELL_METRICS,
                   n_resamples: int = N_RESAMPLES) -> dict[str, float]:
    """``{metric: value, "<metric> lo": ..., "<metric> hi": ...}`` for one cell (all its seeds).

    ``seed`` draws the balanced set's negatives and seeds the bootstrap. Values are means over
    the seeds' runs (equal to the single run's metric with one seed).
    """
    out: dict[str, float] = {}
    for m in metrics:
        est = interval(_features(runs, m, seed), level=LEVEL, n_resamples=n_resamples, seed=seed)
        out[m], out[f"{m} lo"], out[f"{m} hi"] = est.value, est.low, est.high
    return out


def cell_comparison(a_runs: Sequence[Predictions], b_runs: Sequence[Predictions], metric: str, *, seed: int,
                    alternative: str, relative: bool = True, scores: tuple | None = None,
                    n_resamples: int = N_RESAMPLES) -> dict[str, float | str]:
    """Ranker A against ranker B on one condition (same queries), as one table row.

    Keys: ``a``, ``b`` (the metric of each), ``rel_change`` (or ``change`` when not
    ``relative``), ``lo``, ``hi``, ``pvalue`` (one-sided, ``alternative`` = the claimed
    direction of A's metric), ``pvalue_worse`` (the other tail), ``note``. ``scores``: optional
    ``(a_scores, b_scores)``, one ``[Q, K]`` array per run, for ranking metrics of re-scored
    candidates (the risk-aware ranker).
    """
    if scores is None:
        fa, fb = _features(a_runs, metric, seed), _features(b_runs, metric, seed)
    else:
        fa, fb = features(a_runs, metric, scores=scores[0]), features(b_runs, metric, scores=scores[1])
    c = compare(fa, fb, alternative=alternative, relative=relative, level=LEVEL, n_resamples=n_resamples, seed=seed)
    return {"a": c.a, "b": c.b, "rel_change" if relative else "change": c.value, "lo": c.low, "hi": c.high,
            "pvalue": c.pvalue, "pvalue_worse": c.pvalue_opposite, "note": c.note}


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


def format_interval(value: float, lo: float, hi: float, digits: int = 3) -> str:
    """``"0.250 [0.190, 0.310]"``; the value alone when the interval is NaN; ``""`` when the value is NaN."""
    if not np.isfinite(value):
        return ""
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return f"{value:.{digits}f}"
    return f"{value:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"


def format_change(value: float, lo: float, hi: float, mark: str = "") -> str:
    """``"-12.3% [-20.1%, -4.0%] †"`` for a relative change; ``"n/a"`` when undefined."""
    if not np.isfinite(value):
        return "n/a"
    text = f"{value:+.1%}"
    if np.isfinite(lo) and np.isfinite(hi):
        text += f" [{lo:+.1%}, {hi:+.1%}]"
    return f"{text} {mark}".rstrip()
