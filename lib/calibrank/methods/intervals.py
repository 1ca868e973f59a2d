"""Percentile bootstrap intervals over test queries for the per-query statistics of notebook 08.

``scipy.stats.bootstrap`` (Efron & Tibshirani 1993, ch. 13), vectorised, seeded; the unit is the
test query, ``paired`` samples share one draw. A constant statistic, or one query, gives
``[value, value]``. Details: docs/decisions.md, "Bootstrap over queries".
"""

from __future__ import annotations

import numbers
import warnings
from collections.abc import Callable, Sequence

import numpy as np
from scipy import stats

__all__ = ["LEVEL", "N_RESAMPLES", "bootstrap_interval"]

LEVEL = 0.95
N_RESAMPLES = 1000
_BATCH = 200


def bootstrap_interval(
    samples: Sequence[np.ndarray],
    statistic: Callable[..., np.ndarray],
    *,
    paired: bool,
    seed: int,
    n_resamples: int = N_RESAMPLES,
    level: float = LEVEL,
) -> tuple[np.ndarray, np.ndarray]:
    """``(low, high)`` of the ``level`` percentile bootstrap interval of ``statistic(*samples, axis=-1)``.

    ``statistic`` must work on arrays whose last axis is the queries of a resample and return one
    value per resample, or ``[m, ...]`` values (``m`` statistics at once); ``low`` / ``high`` have
    its shape without the resample axis.
    """
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, numbers.Integral) or n_resamples < 2:
        raise ValueError(f"n_resamples must be an integer >= 2; got {n_resamples!r}")
    if isinstance(level, bool) or not isinstance(level, numbers.Real) or not 0.0 < float(level) < 1.0:
        raise ValueError(f"level must be strictly between 0 and 1; got {level!r}")
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer; got {seed!r}")
    data = tuple(np.asarray(s, dtype=np.float64).reshape(-1) for s in samples)
    if not data or any(d.size == 0 for d in data):
        raise ValueError("samples must be one or more non-empty arrays (one value per query)")
    if paired and len({d.size for d in data}) > 1:
        raise ValueError(f"paired samples must have one value per query each; got sizes {[d.size for d in data]}")
    point = np.asarray(statistic(*(d[None, :] for d in data), axis=-1), float)[..., 0]
    if any(d.size < 2 for d in data):
        return point, point.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", stats.DegenerateDataWarning)
        res = stats.bootstrap(
            data,
            statistic,
            paired=paired,
            vectorized=True,
            n_resamples=int(n_resamples),
            batch=max(1, min(_BATCH, int(n_resamples))),
            confidence_level=float(level),
            method="percentile",
            rng=np.random.default_rng(int(seed)),
        )
    low, high = np.asarray(res.confidence_interval.low, float), np.asarray(res.confidence_interval.high, float)
    # a degenerate distribution (every resample equal) gives NaN in some scipy versions: the interval is the value
    low = np.where(np.isnan(low), point, low)
    high = np.where(np.isnan(high), point, high)
    return low, high
