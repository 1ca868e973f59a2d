"""Keep the candidates with ``p >= t``: precision and recall against the threshold, and a certified threshold.

For each ``t`` of :data:`GRID`, precision and recall over the test candidates with 95% bootstrap
bands over queries (one matrix product per band set). The Learn-then-Test threshold
(Angelopoulos et al. 2021) for ``precision >= 1 - alpha`` at confidence ``1 - delta`` is chosen on
validation candidates (:func:`calibrank.analysis.practice.nota_sets.ltt_threshold`). Its guarantee treats
candidates as exchangeable, which a query's candidates are not; with too few validation
candidates for any certified threshold, the row says so.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..analysis.practice.intervals import bootstrap_interval
from ..analysis.practice.nota_sets import MIN_ANSWERED, clopper_pearson, ltt_threshold
from ..predictions import Predictions
from .selfcheck import checked

__all__ = ["GRID", "kept_counts", "ltt_row", "min_certifiable", "threshold_curve"]

GRID = np.round(np.linspace(0.0, 1.0, 101), 2)
"""Thresholds of the precision / recall curve: 0, 0.01, ..., 1."""


def kept_counts(pred: Predictions, grid: np.ndarray = GRID) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(kept [Q, T], relevant kept [Q, T], relevant [Q])``: per query, candidates with ``p >= grid[t]``."""
    q, t = pred.labels.shape[0], grid.size
    rows = np.broadcast_to(np.arange(q)[:, None], pred.labels.shape)[pred.valid]
    p, y = pred.probs[pred.valid], pred.labels[pred.valid].astype(np.float64)
    slot = rows * t + np.searchsorted(grid, p, side="right") - 1  # the largest grid value <= p
    n = np.bincount(slot, minlength=q * t).reshape(q, t).astype(np.float64)
    h = np.bincount(slot, weights=y, minlength=q * t).reshape(q, t)
    return n[:, ::-1].cumsum(axis=1)[:, ::-1], h[:, ::-1].cumsum(axis=1)[:, ::-1], pred.labels.sum(axis=1) * 1.0


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def threshold_curve(pred: Predictions, *, grid: np.ndarray = GRID, level: float = 0.95, n_resamples: int = 1000,
                    seed: int = 0) -> pd.DataFrame:
    """One row per threshold: ``kept`` candidates, ``precision`` and ``recall`` with their bands (NaN: none kept)."""
    kept, hits, rel = kept_counts(pred, grid)
    n_q, n_t = kept.shape[0], grid.size

    def statistic(idx, axis=-1):
        idx = np.moveaxis(np.asarray(idx), axis, -1).astype(np.int64)
        b = idx.shape[0]
        counts = np.bincount((idx + n_q * np.arange(b)[:, None]).ravel(), minlength=b * n_q).reshape(b, n_q) * 1.0
        k, h, r = counts @ kept, counts @ hits, counts @ rel
        return np.concatenate([_ratio(h, k).T, _ratio(h, r[:, None]).T])

    lo, hi = bootstrap_interval((np.arange(n_q),), statistic, paired=True, seed=seed, n_resamples=n_resamples,
                                level=level)
    k, h, r = kept.sum(axis=0), hits.sum(axis=0), rel.sum()
    table = pd.DataFrame({"threshold": grid, "kept": k.astype(np.int64), "precision": _ratio(h, k),
                          "precision lo": lo[:n_t], "precision hi": hi[:n_t], "recall": _ratio(h, np.full(n_t, r)),
                          "recall lo": lo[n_t:], "recall hi": hi[n_t:]})
    return checked("thresholds", table, keys=("threshold",), inside=("precision", "recall"),
                   unit=("precision", "recall"), nonneg=("kept",))


def min_certifiable(alpha: float, delta: float) -> int:
    """The fewest kept candidates for which even an error-free threshold certifies precision ``>= 1 - alpha`` at
    confidence ``1 - delta``: the one-sided Clopper-Pearson bound after 0 errors in ``n`` is ``1 - delta^(1/n)``."""
    return math.ceil(math.log(delta) / math.log1p(-alpha) - 1e-9)


def ltt_row(valid: Predictions, test: Predictions, *, alpha: float = 0.1, delta: float = 0.1,
            probabilities: str = "as given") -> pd.DataFrame:
    """The certified threshold chosen on ``valid`` and what it keeps on ``test`` (one row; precision and recall
    with 95% Clopper-Pearson intervals); ``probabilities`` names the view they are (e.g. ``platt``)."""
    conf, y = valid.probs[valid.valid], valid.labels[valid.valid].astype(bool)
    t = ltt_threshold(conf, ~y, np.ones(conf.size, bool), risk="wrong answer", target=alpha, delta=delta)
    need = min_certifiable(alpha, delta)
    if int(y.sum()) < need or conf.size < MIN_ANSWERED:
        note = (f"the validation set is too small for the guarantee: it holds {int(y.sum())} relevant of "
                f"{conf.size} candidates, and precision >= {1 - alpha:.0%} at confidence {1 - delta:.0%} needs at "
                f"least {max(need, MIN_ANSWERED)} kept candidates ({need} relevant even with no error): "
                "the guarantee cannot hold")
    elif not t.certified:
        note = (f"no threshold reaches precision >= {1 - alpha:.0%} at confidence {1 - delta:.0%} on the validation "
                "candidates: keep none")
    else:
        note = (f"chosen on validation: precision >= {1 - alpha:.0%} with probability >= {1 - delta:.0%} for "
                "candidates exchangeable with the validation ones")
    tp, ty = test.probs[test.valid], test.labels[test.valid].astype(bool)
    keep = tp >= t.threshold
    n_keep, n_hit, n_rel = int(keep.sum()), int((keep & ty).sum()), int(ty.sum())
    p_lo, p_hi = clopper_pearson(n_hit, n_keep)
    r_lo, r_hi = clopper_pearson(n_hit, n_rel)
    row = {"probabilities": probabilities, "target precision": 1.0 - alpha, "delta": delta, "threshold": t.threshold,
           "certified": t.certified,
           "valid candidates": int(conf.size), "valid kept": t.n, "valid wrong": t.k,
           "valid precision bound": 1.0 - t.ucb if t.certified else np.nan, "test kept": n_keep,
           "precision": n_hit / n_keep if n_keep else np.nan, "precision lo": p_lo, "precision hi": p_hi,
           "recall": n_hit / n_rel if n_rel else np.nan, "recall lo": r_lo, "recall hi": r_hi, "note": note}
    return checked("threshold", pd.DataFrame([row]), keys=("threshold",), inside=("precision", "recall"),
                   unit=("precision", "recall", "valid precision bound"), nonneg=("test kept", "valid kept"))
