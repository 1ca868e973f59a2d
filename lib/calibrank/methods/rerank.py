"""Risk-aware ranking with the predictive distribution of a stochastic ranker (RA-BERT).

Penha & Hauff (EACL 2021, sec. 3.2.4), after Wang & Zhu (SIGIR 2009):
``RA(U, r) = E[R_r] - b var[R_r] - 2b sum_{i != r} cov[R_r, R_i]``, with population moments in
logit space by default (the paper's public code; ``space="prob"`` as written). Table 3 chooses
``b`` on validation. Departures and protocol: docs/decisions.md, "Risk-aware ranking".
"""

from __future__ import annotations

import numbers
import re
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import pandas as pd

from calibrank.metrics.ranking import average_precision, ndcg_at_k, recall_at_k, reciprocal_rank
from calibrank.metrics.stats import paired_ttest, relative_change
from calibrank.predictions import Predictions, PredictionsError, logit

__all__ = [
    "DEFAULT_BS",
    "SPACES",
    "choose_b",
    "risk_aware_table",
    "risk_scores",
    "sweep_b",
]

SPACES = ("logit", "prob")
DEFAULT_BS = np.round(np.arange(0, 1.01, 0.1), 2)
"""0, 0.1, ..., 1.0: the sweep of the paper's code (Figure 3)."""

_TIE_ATOL = 1e-12


# ---------------------------------------------------------------------------------- checks
def _check_pred(pred: Any, name: str = "pred") -> Predictions:
    if not isinstance(pred, Predictions):
        raise TypeError(f"{name} must be a calibrank Predictions; got {type(pred).__name__}")
    where = pred.meta.get("name", name)
    s = pred.samples
    if s.ndim != 3 or s.shape[1:] != pred.labels.shape:
        raise PredictionsError(f"{where}: samples shape {s.shape} does not match labels {pred.labels.shape}")
    bad = ~np.isfinite(s)
    if bad.any():
        raise PredictionsError(f"{where}: samples contain {int(bad.sum())} NaN/infinite value(s)")
    if pred.labels.shape[1] < 1:
        raise PredictionsError(f"{where}: no candidates (K = 0)")
    return pred


def _check_space(space: str) -> str:
    if space not in SPACES:
        raise ValueError(f"space must be one of {SPACES}; got {space!r}")
    return space


def _check_b(b: Any) -> float:
    if isinstance(b, bool) or not isinstance(b, numbers.Real) or not np.isfinite(float(b)):
        raise ValueError(f"b must be a finite real number; got {b!r}")
    return float(b)


def _check_bs(bs: Iterable[float]) -> np.ndarray:
    arr = np.asarray(list(bs) if not isinstance(bs, np.ndarray) else bs)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"bs must be a non-empty 1-D sequence of numbers; got shape {arr.shape}")
    if not np.issubdtype(arr.dtype, np.number) or arr.dtype == bool or np.iscomplexobj(arr):
        raise ValueError(f"bs must be real numbers; got dtype {arr.dtype}")
    arr = arr.astype(np.float64)
    if not np.isfinite(arr).all():
        raise ValueError(f"bs must be finite; got {arr.tolist()}")
    if np.unique(arr).size != arr.size:
        raise ValueError(f"bs must not repeat a value; got {arr.tolist()}")
    return arr


_METRIC_RE = re.compile(r"^(R|nDCG)@(\d+)$")


def _metric_fn(metric: str) -> Callable[..., np.ndarray]:
    """``fn(scores, labels, mask=None)``: per-query values of ``metric``."""
    if metric == "MRR":
        return reciprocal_rank
    if metric == "MAP":
        return average_precision
    m = _METRIC_RE.match(metric) if isinstance(metric, str) else None
    if m is None or int(m.group(2)) < 1:
        raise ValueError(f"metric must be 'R@k', 'nDCG@k' (k >= 1), 'MRR' or 'MAP'; got {metric!r}")
    k = int(m.group(2))
    if m.group(1) == "R":
        return lambda s, y, mask=None: recall_at_k(s, y, k, mask=mask)
    return lambda s, y, mask=None: ndcg_at_k(s, y, k, mask=mask)


# ---------------------------------------------------------------------------------- scores
def _moments(pred: Predictions, space: str, covariance: bool) -> tuple[np.ndarray, np.ndarray]:
    """``(mean [Q, K], penalty [Q, K])`` with ``score = mean - b * penalty``.

    ``penalty_r = var_r + 2 sum_{i != r} cov(r, i)``. The row sum of the covariance matrix is
    ``sum_i cov(r, i) = cov(x_r, sum_i x_i)``, so no ``[Q, K, K]`` array is formed.
    """
    x = logit(pred.samples) if space == "logit" else pred.samples
    mean = x.mean(axis=0)
    centred = x - mean
    var = (centred**2).mean(axis=0)
    if not covariance:
        return mean, var
    total = centred.sum(axis=2, keepdims=True)  # [S, Q, 1]
    row_sum = (centred * total).mean(axis=0)  # sum_i cov(r, i), i over all candidates
    off_diag = row_sum - var
    return mean, var + 2.0 * off_diag


def risk_scores(pred: Predictions, b: float, *, space: str = "logit", covariance: bool = True) -> np.ndarray:
    """RA-BERT scores ``[Q, K]``: ``E[R_r] - b var[R_r] - 2b sum_{i != r} cov[R_r, R_i]``.

    Population moments over the ``S`` samples, in logit (default) or probability space; with
    ``b = 0`` or ``S = 1`` the result is the mean.
    """
    _check_pred(pred)
    _check_space(space)
    b = _check_b(b)
    mean, penalty = _moments(pred, space, bool(covariance))
    return mean - b * penalty


# ---------------------------------------------------------------------------------- sweep
def _sweep_values(
    pred: Predictions, bs: np.ndarray, metric: str, space: str, covariance: bool
) -> tuple[np.ndarray, list[np.ndarray], np.ndarray]:
    """``(means [len(bs)], per-query arrays, per-query values at b = 0)``."""
    fn = _metric_fn(metric)
    mean, penalty = _moments(pred, space, covariance)
    per_query = [fn(mean - b * penalty, pred.labels, mask=pred.mask) for b in bs]
    base = fn(mean, pred.labels, mask=pred.mask)
    values = np.array([_nanmean(v) for v in per_query])
    return values, per_query, base


def _nanmean(v: np.ndarray) -> float:
    v = v[~np.isnan(v)]
    return float(v.mean()) if v.size else float("nan")


def sweep_b(
    pred: Predictions,
    bs: Iterable[float] = DEFAULT_BS,
    metric: str = "R@1",
    *,
    space: str = "logit",
    covariance: bool = True,
) -> pd.DataFrame:
    """One row per ``b`` (in the given order) for the Figure 3 curves.

    Columns: ``b``, ``metric``, ``value``, ``rel_change`` (over ``b = 0``, whether or not 0 is in
    ``bs``), ``n_queries`` and ``per_query`` (NaN where undefined; kept for paired tests).
    """
    _check_pred(pred)
    _check_space(space)
    grid = _check_bs(bs)
    values, per_query, base = _sweep_values(pred, grid, metric, space, bool(covariance))
    base_value = _nanmean(base)
    return pd.DataFrame(
        {
            "b": grid,
            "metric": metric,
            "value": values,
            "rel_change": [relative_change(v, base_value) for v in values],
            "n_queries": [int((~np.isnan(v)).sum()) for v in per_query],
            "per_query": per_query,
        }
    )


def _argbest(bs: np.ndarray, values: np.ndarray) -> int:
    """Index of the best value; ties (within 1e-12) go to the smallest ``|b|``, then the smallest b."""
    if np.isnan(values).all():
        raise ValueError("the metric is undefined (NaN) for every b: no query has a relevant candidate")
    best = np.nanmax(values)
    tied = np.flatnonzero(np.abs(values - best) <= _TIE_ATOL)
    return int(min(tied, key=lambda i: (abs(bs[i]), bs[i])))


def choose_b(
    valid_pred: Predictions,
    bs: Iterable[float] = DEFAULT_BS,
    metric: str = "R@1",
    *,
    space: str = "logit",
    covariance: bool = True,
) -> float:
    """The ``b`` in ``bs`` that maximises ``metric`` on ``valid_pred``.

    Ties go to the smallest ``|b|`` (with non-negative ``bs``: the smallest b), i.e. the least
    change from the mean ranker.
    """
    _check_pred(valid_pred, "valid_pred")
    _check_space(space)
    grid = _check_bs(bs)
    values, _, _ = _sweep_values(valid_pred, grid, metric, space, bool(covariance))
    return float(grid[_argbest(grid, values)])


def risk_aware_table(
    valid_pred: Predictions,
    test_pred: Predictions,
    bs: Iterable[float] = DEFAULT_BS,
    metric: str = "R@1",
    *,
    space: str = "logit",
    covariance: bool = True,
    alpha: float = 0.05,
) -> dict[str, Any]:
    """One cell of Table 3: ``b`` chosen on validation, RA ranker vs the mean ranker on test.

    One row: ``b``, ``valid_value``, the test metric of both rankers, ``rel_change``,
    ``prob_mean_ranker`` (the paper's S-BERT), a two-sided paired t-test over test queries and a
    ``note`` when it cannot run (``S = 1``, ``b = 0``, identical values).
    """
    _check_pred(valid_pred, "valid_pred")
    _check_pred(test_pred, "test_pred")
    _check_space(space)
    if not (isinstance(alpha, numbers.Real) and 0.0 < float(alpha) < 1.0):
        raise ValueError(f"alpha must be strictly between 0 and 1; got {alpha!r}")
    covariance = bool(covariance)
    grid = _check_bs(bs)
    fn = _metric_fn(metric)

    valid_values, _, _ = _sweep_values(valid_pred, grid, metric, space, covariance)
    i_best = _argbest(grid, valid_values)
    b = float(grid[i_best])

    mean, penalty = _moments(test_pred, space, covariance)
    base_q = fn(mean, test_pred.labels, mask=test_pred.mask)
    risk_q = fn(mean - b * penalty, test_pred.labels, mask=test_pred.mask)
    prob_q = fn(test_pred.mean, test_pred.labels, mask=test_pred.mask)
    base_v, risk_v = _nanmean(base_q), _nanmean(risk_q)

    notes: list[str] = []
    s_valid, s_test = valid_pred.n_samples, test_pred.n_samples
    if s_test == 1 or s_valid == 1:
        notes.append(
            f"S = 1 (valid S = {s_valid}, test S = {s_test}): no variance or covariance, "
            "the risk-aware ranker is the mean ranker; no test"
        )
        stat, pvalue, n = float("nan"), float("nan"), int((~(np.isnan(base_q) | np.isnan(risk_q))).sum())
    elif b == 0.0:
        notes.append("b = 0 chosen on validation: the risk-aware ranker is the mean ranker; no test")
        stat, pvalue, n = float("nan"), float("nan"), int((~(np.isnan(base_q) | np.isnan(risk_q))).sum())
    else:
        res = paired_ttest(risk_q, base_q)
        stat, pvalue, n = res.statistic, res.pvalue, res.n
        if res.note:
            notes.append(res.note)
        if np.isnan(pvalue) and np.array_equal(risk_q, base_q, equal_nan=True):
            notes.append("identical per-query values: the chosen b does not change any top-ranked outcome")
    n_undefined = int(np.isnan(base_q).sum())
    if n_undefined:
        notes.append(f"{n_undefined} test query(ies) without a relevant candidate left out")
    return {
        "metric": metric,
        "b": b,
        "valid_value": float(valid_values[i_best]),
        "mean_ranker": base_v,
        "risk_aware": risk_v,
        "rel_change": relative_change(risk_v, base_v),
        "prob_mean_ranker": _nanmean(prob_q),
        "statistic": stat,
        "pvalue": pvalue,
        "n": n,
        "significant": bool(pvalue < alpha) if np.isfinite(pvalue) else False,
        "S_valid": s_valid,
        "S_test": s_test,
        "space": space,
        "covariance": covariance,
        "note": "; ".join(notes),
    }
