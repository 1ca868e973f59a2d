"""Answer or abstain: risk-coverage analysis of "answer with the top-ranked response, or say nothing".

The loss is ``1 - R@1`` of the top candidate; a confidence orders the queries. Selective risk
(El-Yaniv & Wiener 2010), AURC (Geifman, Uziel & El-Yaniv 2019, eq. 3), E-AURC (their section 4,
with the exact oracle) and AUGRC (Traub et al. 2024, eq. 4), and the selective risk at a coverage.
Tied confidences share their mean loss, the expectation over orders of the tied queries.
Intervals: :func:`selective_intervals`. Definitions in full: docs/decisions.md, "Selective answering".
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable

import numpy as np
import pandas as pd

from ...table_checks import TOLERANCE, describe, in_range, raise_problems, rows_failing
from ..calibration import default_condition
from . import intervals
from .cells import CELL, rows_problems, study_cells
from .listwise import query_signals

__all__ = ["CONFIDENCES", "COVERAGE", "SelectiveScores", "confidences", "risk_column", "risk_coverage",
           "selective_batch", "selective_intervals", "selective_scores", "selective_table", "selective_curves"]

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
    return SelectiveScores(aurc=aurc, eaurc=aurc - float(oracle.mean()), augrc=float(curve["generalized risk"].mean()),
                           risk_at_coverage=float(curve["selective risk"].iloc[i - 1]), coverage=i / n,
                           risk=float(ell.mean()))


def selective_batch(conf: np.ndarray, loss: np.ndarray, *, coverage: float = COVERAGE, axis: int = -1) -> np.ndarray:
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


def selective_intervals(conf: np.ndarray, loss: np.ndarray, *, coverage: float = COVERAGE, seed: int,
                        n_resamples: int = intervals.N_RESAMPLES) -> tuple[np.ndarray, np.ndarray]:
    """``(low [4], high [4])``: 95% bootstrap intervals over queries of AURC, E-AURC, AUGRC, risk@``coverage``.

    Each resample is summarised by its query counts and the four numbers follow in closed form
    (harmonic numbers over tie blocks), equal to :func:`selective_batch` on the resampled arrays
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
        oracle, _, _ = _piecewise(np.add.reduceat(co, loss_starts, axis=1),
                                  np.add.reduceat(co * l_asc, loss_starts, axis=1), harmonic, n, k)
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
    conf = pd.DataFrame({"top prob": sig["top prob"].to_numpy(), "margin": margin, "-top var": -sig["top var"].to_numpy()})
    return conf, 1.0 - sig["top relevant"].to_numpy()


def selective_table(study, rankers: Iterable[str] | None = None, *, coverage: float = COVERAGE,
                    n_resamples: int = intervals.N_RESAMPLES) -> pd.DataFrame:
    """One row per ranker x test condition x confidence score (main training seed): ``AURC``,
    ``E-AURC``, ``AUGRC``, ``risk@<coverage>``, each followed by ``<name> lo`` / ``<name> hi``
    (95% bootstrap interval over test queries, :func:`selective_intervals`, seeded with the
    profile seed), and the full-coverage ``risk``; ``-top var`` only for rankers with S > 1. Raises
    :class:`~calibrank.table_checks.TableError` naming a row that breaks an invariant of :func:`_table_problems`."""
    label = risk_column(coverage)
    rows = []
    for ranker, tc, cond in study.cells("test", rankers):
        pred = study.get(ranker, tc, cond)
        conf, loss = confidences(pred)
        for name in CONFIDENCES:
            if name == "-top var" and pred.n_samples < 2:
                continue
            s = selective_scores(conf[name].to_numpy(), loss, coverage=coverage)
            lo, hi = selective_intervals(conf[name].to_numpy(), loss, coverage=coverage, seed=study.cfg.seed,
                                         n_resamples=n_resamples)
            row = {"ranker": ranker, "train_corpus": tc, "corpus": cond.corpus, "sampler": cond.sampler,
                   "shift": study.shift(cond, tc), "confidence": name, "queries": int(loss.size)}
            for j, (col, value) in enumerate((("AURC", s.aurc), ("E-AURC", s.eaurc), ("AUGRC", s.augrc),
                                              (label, s.risk_at_coverage))):
                row.update({col: value, f"{col} lo": float(lo[j]), f"{col} hi": float(hi[j])})
            rows.append({**row, "risk": s.risk})
    table = pd.DataFrame(rows)
    raise_problems(_table_problems(study, table, rankers, label))
    return table


def _table_problems(study, table: pd.DataFrame, rankers: Iterable[str] | None, risk_at: str) -> list[str]:
    """One row per cell and confidence (``-top var`` exactly for the study's rankers with S > 1); AURC and
    ``risk_at`` in [0, 1], ``E-AURC >= 0`` (no confidence beats the oracle), ``AUGRC <= AURC`` (``g(i) <= r(i)``),
    each interval ordered; one full-coverage risk per cell (the loss does not depend on the confidence)."""
    name, keys = "selective", (*CELL, "confidence")
    stochastic = set(study.stochastic_rankers())
    problems = rows_problems(name, table, keys, [(*c, conf) for c in study_cells(study, rankers) for conf in CONFIDENCES
                                                 if conf != "-top var" or c[0] in stochastic])
    if table.empty:
        return problems
    problems += rows_failing(name, table, table["E-AURC"] >= -TOLERANCE, keys, f"E-AURC >= 0 (within {TOLERANCE:g})",
                             ["E-AURC"])
    problems += rows_failing(name, table, table["AUGRC"] <= table["AURC"] + TOLERANCE, keys,
                             f"AUGRC <= AURC (within {TOLERANCE:g})", ["AUGRC", "AURC"])
    for col in ("AURC", risk_at):
        problems += in_range(name, table, col, keys, 0, 1)
    for col in ("AURC", "E-AURC", "AUGRC", risk_at):
        lo, hi = table[f"{col} lo"], table[f"{col} hi"]
        problems += rows_failing(name, table, lo <= hi + TOLERANCE, keys,
                                 f"{col} lo <= {col} hi (within {TOLERANCE:g})", [f"{col} lo", f"{col} hi"])
    for cell, n in table.groupby(list(CELL), sort=False)["risk"].nunique(dropna=False).items():
        if n != 1:
            problems.append(f"{name}: {describe(dict(zip(CELL, cell)), CELL)}: expected one risk for every confidence "
                            f"(the loss does not depend on it), found {n} values")
    return problems


def selective_curves(study, condition=None, train_corpus: str | None = None,
                     rankers: Iterable[str] | None = None) -> pd.DataFrame:
    """Risk-coverage curves on one condition (default: in distribution): one row per ranker x confidence x coverage."""
    tc = train_corpus or study.train_corpora[0]
    cond = condition or default_condition(study, tc)
    frames = []
    for ranker in rankers if rankers is not None else study.rankers:
        pred = study.get(ranker, tc, cond)
        conf, loss = confidences(pred)
        for name in CONFIDENCES:
            if name == "-top var" and pred.n_samples < 2:
                continue
            frames.append(risk_coverage(conf[name].to_numpy(), loss).assign(ranker=ranker, confidence=name,
                                                                              condition=cond.name))
    return pd.concat(frames, ignore_index=True)
