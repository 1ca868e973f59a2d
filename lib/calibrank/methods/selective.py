"""Answer or abstain: selective risk (El-Yaniv & Wiener 2010), AURC (Geifman, Uziel & El-Yaniv 2019, eq. 3),
E-AURC (their section 4, with the exact oracle) and AUGRC (Traub et al. 2024, eq. 4), and the selective risk at a
coverage. Tied confidences share their mean loss, the expectation over orders of the tied queries.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd

from calibrank.methods import intervals
from calibrank.methods.listwise import query_signals

__all__ = [
    "CONFIDENCES",
    "COVERAGE",
    "risk_column",
    "risk_coverage",
    "SelectiveScores",
    "selective_scores",
    "selective_intervals",
    "confidences",
]


CONFIDENCES = ("top prob", "margin", "-top var")


COVERAGE = 0.8
"""The coverage of ``risk@cov`` unless one is given: the risk when answering the 80% most confident queries."""


def risk_column(coverage: float = COVERAGE) -> str:
    """The column of :func:`selective_table` that holds the risk at ``coverage`` (``risk@80%``)."""
    return f"risk@{coverage:.0%}"


def _check(conf: np.ndarray, loss: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    c = np.asarray(conf, dtype=np.float64).reshape(-1)
    ell = np.asarray(loss, dtype=np.float64).reshape(-1)
    if c.shape != ell.shape or c.size == 0:
        raise ValueError(f"confidence and loss must be non-empty and of the same length; got {c.size} and {ell.size}")
    if not np.isfinite(c).all():
        raise ValueError("confidence must be finite (a ranker without samples has no variance confidence)")
    if not ((ell >= 0) & (ell <= 1)).all():
        raise ValueError("loss must be in [0, 1] (0 = the answer is right, 1 = wrong)")
    return c, ell


def _ordered_losses(conf: np.ndarray, loss: np.ndarray) -> np.ndarray:
    """Losses in decreasing confidence, each replaced by the mean loss of its tie group."""
    groups, inverse = np.unique(-conf, return_inverse=True)  # groups sorted by decreasing confidence
    mean = np.bincount(inverse, weights=loss, minlength=groups.size) / np.bincount(inverse, minlength=groups.size)
    return mean[np.sort(inverse)]


def risk_coverage(conf: np.ndarray, loss: np.ndarray) -> pd.DataFrame:
    """The curves: one row per coverage ``i / n``, ``selective risk`` ``r(i)`` and ``generalized risk`` ``g(i)``."""
    c, ell = _check(conf, loss)
    n = c.size
    cum = np.cumsum(_ordered_losses(c, ell))
    i = np.arange(1, n + 1)
    return pd.DataFrame({"coverage": i / n, "selective risk": cum / i, "generalized risk": cum / n})


@dataclasses.dataclass(frozen=True)
class SelectiveScores:
    aurc: float
    eaurc: float
    augrc: float
    risk_at_coverage: float
    coverage: float
    risk: float


def selective_scores(conf: np.ndarray, loss: np.ndarray, *, coverage: float = COVERAGE) -> SelectiveScores:
    """AURC, E-AURC, AUGRC and the risk at ``coverage`` (see the module docstring); ``risk`` is the full-coverage risk."""
    if isinstance(coverage, bool) or not 0.0 < float(coverage) <= 1.0:
        raise ValueError(f"coverage must be in (0, 1]; got {coverage!r}")
    c, ell = _check(conf, loss)
    n = c.size
    curve = risk_coverage(c, ell)
    oracle = np.cumsum(np.sort(ell)) / np.arange(1, n + 1)
    aurc = float(curve["selective risk"].mean())
    i = max(1, math.ceil(coverage * n - 1e-9))
    return SelectiveScores(
        aurc=aurc,
        eaurc=aurc - float(oracle.mean()),
        augrc=float(curve["generalized risk"].mean()),
        risk_at_coverage=float(curve["selective risk"].iloc[i - 1]),
        coverage=i / n,
        risk=float(ell.mean()),
    )


def _counts(idx: np.ndarray, n: int) -> np.ndarray:
    """``[B, n]`` how often each query is drawn in each resample, from the drawn indices ``[B, n]``."""
    idx = np.asarray(idx).astype(np.int64).reshape(-1, idx.shape[-1])
    rows = idx.shape[0]
    return np.bincount((idx + n * np.arange(rows)[:, None]).ravel(), minlength=rows * n).reshape(rows, n)


def _piecewise(m: np.ndarray, total: np.ndarray, harmonic: np.ndarray, n: int, k: int) -> tuple[np.ndarray, ...]:
    """Sum of ``cum(i) / i``, sum of ``cum(i)`` and ``cum(k)`` over positions ``1..n`` for blocks of ``m``
    positions whose losses are spread evenly (mean ``total / m``), in order; all ``[B, blocks]`` -> ``[B]``."""
    mu = np.divide(total, m, out=np.zeros_like(total, dtype=np.float64), where=m > 0)
    end = np.cumsum(m, axis=1)
    a = end - m  # positions before the block
    before = np.cumsum(total, axis=1) - total  # cumulative loss before the block
    dh = harmonic[end] - harmonic[a]
    by_i = (before * dh + mu * (m - a * dh)).sum(axis=1)
    plain = (m * before + mu * m * (m + 1) / 2.0).sum(axis=1)
    g = np.argmax(end >= k, axis=1)[:, None]
    at_k = (np.take_along_axis(before, g, 1) + (k - np.take_along_axis(a, g, 1)) * np.take_along_axis(mu, g, 1))[:, 0]
    return by_i, plain, at_k


def selective_intervals(
    conf: np.ndarray,
    loss: np.ndarray,
    *,
    coverage: float = COVERAGE,
    seed: int,
    n_resamples: int = intervals.N_RESAMPLES,
) -> tuple[np.ndarray, np.ndarray]:
    """``(low [4], high [4])``: 95% bootstrap intervals over queries of AURC, E-AURC, AUGRC, risk@``coverage``.

    Each resample is summarised by its query counts and the four numbers follow in closed form
    (harmonic numbers over tie blocks), equal to recomputing the scores on the resampled arrays (tests/oracles.py)
    (tested). Derivation: docs/decisions.md, "Selective intervals in closed form".
    """
    if isinstance(coverage, bool) or not 0.0 < float(coverage) <= 1.0:
        raise ValueError(f"coverage must be in (0, 1]; got {coverage!r}")
    c, ell = _check(conf, loss)
    n = c.size
    k = max(1, math.ceil(coverage * n - 1e-9))
    harmonic = np.r_[0.0, np.cumsum(1.0 / np.arange(1, n + 1))]
    by_conf = np.argsort(-c, kind="stable")
    c_sorted, l_sorted = c[by_conf], ell[by_conf]
    starts = np.flatnonzero(np.r_[True, c_sorted[1:] != c_sorted[:-1]])
    by_loss = np.argsort(ell, kind="stable")
    l_asc = ell[by_loss]
    loss_starts = np.flatnonzero(np.r_[True, l_asc[1:] != l_asc[:-1]])  # equal losses: one block (same slope)

    def statistic(idx, axis=-1):
        counts = _counts(np.moveaxis(idx, axis, -1), n)
        cs = counts[:, by_conf]
        m = np.add.reduceat(cs, starts, axis=1)
        total = np.add.reduceat(cs * l_sorted, starts, axis=1)
        by_i, plain, at_k = _piecewise(m, total, harmonic, n, k)
        co = counts[:, by_loss]
        oracle, _, _ = _piecewise(
            np.add.reduceat(co, loss_starts, axis=1), np.add.reduceat(co * l_asc, loss_starts, axis=1), harmonic, n, k
        )
        aurc = by_i / n
        return np.stack([aurc, aurc - oracle / n, plain / n**2, at_k / k])

    return intervals.bootstrap_interval((np.arange(n),), statistic, paired=True, seed=seed, n_resamples=n_resamples)


def confidences(pred) -> tuple[pd.DataFrame, np.ndarray]:
    """``(confidence per query for each of :data:`CONFIDENCES` (NaN column where undefined), loss [Q])``.

    The loss is 1 when the top-ranked candidate is not relevant (so on a query without a
    relevant candidate every answer is wrong). With lists of different lengths a padded slot
    holds probability 0, so the margin of a one-candidate list is its top probability.
    """
    sig = query_signals(pred)
    probs = np.sort(pred.probs, axis=1)
    margin = probs[:, -1] - probs[:, -2] if probs.shape[1] > 1 else np.full(probs.shape[0], np.nan)
    conf = pd.DataFrame(
        {"top prob": sig["top prob"].to_numpy(), "margin": margin, "-top var": -sig["top var"].to_numpy()}
    )
    return conf, 1.0 - sig["top relevant"].to_numpy()
