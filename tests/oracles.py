"""Direct, vectorised computations the library's faster or closed-form code is checked against.

Each is the textbook definition, written for the tests alone: the library computes the same numbers another
way (counts of bootstrap draws, closed forms), so an agreement here is a check that can fail.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats


def selective_batch(conf: np.ndarray, loss: np.ndarray, *, coverage: float = 0.8, axis: int = -1) -> np.ndarray:
    """``[4, ...]``: AURC, E-AURC, AUGRC and risk@``coverage`` of every row of ``conf`` / ``loss`` ``[..., n]`` at once.

    The same numbers as :func:`selective_scores` (tie groups get their mean loss), vectorised over
    the leading axes: what the bootstrap of :func:`selective_intervals` computes per resample.
    """
    c = np.moveaxis(np.asarray(conf, dtype=np.float64), axis, -1)
    ell = np.moveaxis(np.asarray(loss, dtype=np.float64), axis, -1)
    if c.shape != ell.shape or c.shape[-1] == 0:
        raise ValueError(f"confidence and loss must be non-empty and of the same shape; got {c.shape} and {ell.shape}")
    lead, n = c.shape[:-1], c.shape[-1]
    c, ell = c.reshape(-1, n), ell.reshape(-1, n)
    rows = c.shape[0]
    order = np.argsort(-c, axis=1, kind="stable")
    c_sorted = np.take_along_axis(c, order, axis=1)
    l_sorted = np.take_along_axis(ell, order, axis=1)
    new = np.ones_like(c_sorted, dtype=bool)
    new[:, 1:] = c_sorted[:, 1:] != c_sorted[:, :-1]
    group = np.cumsum(new, axis=1) - 1 + n * np.arange(rows)[:, None]  # tie group, unique across rows
    sums = np.bincount(group.ravel(), weights=l_sorted.ravel(), minlength=rows * n)
    counts = np.bincount(group.ravel(), minlength=rows * n)
    mean_loss = (sums / np.maximum(counts, 1))[group]
    i = np.arange(1, n + 1)
    cum = np.cumsum(mean_loss, axis=1)
    r = cum / i
    aurc = r.mean(axis=1)
    oracle = (np.cumsum(np.sort(ell, axis=1), axis=1) / i).mean(axis=1)
    k = max(1, math.ceil(coverage * n - 1e-9))
    out = np.stack([aurc, aurc - oracle, (cum / n).mean(axis=1), r[:, k - 1]])
    return out.reshape((4,) + lead)


def auroc_batch(negative: np.ndarray, positive: np.ndarray, axis: int = -1) -> np.ndarray:
    """AUROC of a score for ``positive`` against ``negative`` along ``axis`` (Mann-Whitney, ties = 1/2), vectorised."""
    a = np.moveaxis(np.asarray(negative, dtype=np.float64), axis, -1)
    b = np.moveaxis(np.asarray(positive, dtype=np.float64), axis, -1)
    n0, n1 = a.shape[-1], b.shape[-1]
    ranks = stats.rankdata(np.concatenate((a, b), axis=-1), axis=-1)
    return (ranks[..., n0:].sum(axis=-1) - n1 * (n1 + 1) / 2.0) / (n0 * n1)


def pg_mean(c: np.ndarray | float) -> np.ndarray:
    """``E[PG(1, c)] = tanh(c/2) / (2c)``, with the limit ``1/4 - c^2/48`` near ``c = 0``."""
    c = np.asarray(c, dtype=np.float64)
    small = np.abs(c) < 1e-4
    safe = np.where(small, 1.0, c)
    return np.where(small, 0.25 - c * c / 48.0, np.tanh(safe / 2.0) / (2.0 * safe))
