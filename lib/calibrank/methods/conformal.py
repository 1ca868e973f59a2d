"""Split-conformal shortlists of candidates (LAC and APS nonconformity scores; Angelopoulos & Bates 2021, section 1 and 2.1).

The quantile is the ceil((n + 1)(1 - alpha))-th smallest calibration score, so a set covers a relevant
candidate with probability at least 1 - alpha on exchangeable queries.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = [
    "SCORES",
    "min_calibration_queries",
    "candidate_scores",
    "true_scores",
    "conformal_quantile",
    "prediction_sets",
]


SCORES = ("LAC", "APS")


def _check_alpha(alpha: float) -> float:
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float, np.floating)) or not 0.0 < float(alpha) < 1.0:
        raise ValueError(f"alpha (the miscoverage level) must be strictly between 0 and 1; got {alpha!r}")
    return float(alpha)


def min_calibration_queries(alpha: float) -> int:
    """The fewest calibration queries with which the guarantee can hold at ``alpha``: ``ceil(1 / alpha - 1)``
    (``ceil((n + 1)(1 - alpha)) <= n`` iff ``n >= 1 / alpha - 1``; :func:`conformal_quantile` raises below it)."""
    alpha = _check_alpha(alpha)
    return math.ceil(1.0 / alpha - 1.0 - 1e-9)


def candidate_scores(pi: np.ndarray, score: str) -> np.ndarray:
    """``[Q, K]`` non-conformity score of every candidate under ``score`` (``LAC`` or ``APS``)."""
    pi = np.asarray(pi, dtype=np.float64)
    if pi.ndim != 2:
        raise ValueError(f"class probabilities must be [Q, K]; got shape {pi.shape}")
    if score == "LAC":
        return 1.0 - pi
    if score == "APS":
        # sum of pi_i over pi_i > pi_j, plus pi_j: [Q, K, K] comparison (K is small)
        above = (pi[:, None, :] > pi[:, :, None]) * pi[:, None, :]
        return above.sum(axis=2) + pi
    raise ValueError(f"score must be one of {SCORES}; got {score!r}")


def true_scores(pi: np.ndarray, labels: np.ndarray, score: str) -> np.ndarray:
    """``[Q]`` score of each query's relevant candidate; every query needs exactly one."""
    y = np.asarray(labels)
    if y.shape != np.shape(pi) or not (y.sum(axis=1) == 1).all():
        raise ValueError("labels must be [Q, K] with exactly one relevant candidate per query (a K-class problem)")
    return candidate_scores(pi, score)[y.astype(bool)]


def conformal_quantile(scores: np.ndarray, alpha: float) -> float:
    """The ``ceil((n + 1)(1 - alpha))``-th smallest calibration score (split conformal's finite-sample quantile).

    Raises when ``n`` calibration scores are too few for the guarantee (``ceil((n+1)(1-alpha)) > n``,
    i.e. ``n < 1/alpha - 1``): the set would have to be every candidate.
    """
    alpha = _check_alpha(alpha)
    s = np.sort(np.asarray(scores, dtype=np.float64).reshape(-1))
    n = s.size
    rank = math.ceil((n + 1) * (1.0 - alpha) - 1e-9)
    if rank > n:
        raise ValueError(
            f"{n} calibration queries are too few for alpha={alpha}: the coverage guarantee "
            f"1 - alpha cannot hold with fewer than {min_calibration_queries(alpha)} "
            f"(ceil((n+1)(1-alpha)) = {rank} > n)"
        )
    return float(s[rank - 1])


def prediction_sets(pi: np.ndarray, qhat: float, score: str, mask: np.ndarray | None = None) -> np.ndarray:
    """``[Q, K]`` boolean: candidate ``j`` is in the set of its query when ``s(x, j) <= qhat`` (a padded slot
    of ``mask`` never is)."""
    sets = candidate_scores(pi, score) <= qhat + 1e-12
    return sets if mask is None else sets & mask
