"""Exact binomial tests and Clopper-Pearson bounds on a proportion (Clopper & Pearson 1934)."""

from __future__ import annotations

import numpy as np
from scipy import stats

__all__ = ["binomial_pvalue", "clopper_pearson_upper", "clopper_pearson"]


def binomial_pvalue(k: np.ndarray, n: np.ndarray, target: float) -> np.ndarray:
    """``P(Binomial(n, target) <= k)``: the p-value of ``H: risk > target`` after ``k`` losses in ``n`` (1 where ``n = 0``)."""
    k, n = np.asarray(k), np.asarray(n)
    return np.where(n > 0, stats.binom.cdf(k, np.maximum(n, 1), target), 1.0)


def clopper_pearson_upper(k: np.ndarray, n: np.ndarray, delta: float) -> np.ndarray:
    """One-sided ``1 - delta`` Clopper-Pearson upper bound on a proportion after ``k`` of ``n`` (1 where ``k = n``)."""
    k, n = np.asarray(k, dtype=np.float64), np.asarray(n, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        ub = stats.beta.ppf(1.0 - delta, k + 1.0, np.maximum(n - k, 1.0))
    return np.where(k < n, ub, 1.0)


def clopper_pearson(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Two-sided ``level`` Clopper-Pearson interval of ``k`` successes in ``n`` (scipy ``binomtest``); NaN when ``n = 0``."""
    if n == 0:
        return float("nan"), float("nan")
    ci = stats.binomtest(int(k), int(n)).proportion_ci(confidence_level=level, method="exact")
    return float(ci.low), float(ci.high)
