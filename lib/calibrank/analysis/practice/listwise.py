"""A query's candidates as one K-class problem, and the query-level uncertainty signals built on it.

With one relevant candidate and independent pointwise probabilities, the probability that
candidate ``j`` is the relevant one is ``softmax(logit(p))_j`` (:func:`candidate_distribution`).
:func:`query_signals` gives the signals of :data:`SIGNALS` (larger = more uncertain; variances
need S > 1), :func:`listwise_calibration` the top-label ECE (Guo et al. 2017) of that
distribution beside eq. 1 of Penha & Hauff. Derivation: docs/decisions.md, "Candidate distribution".
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

from ...metrics.calibration import ece, reliability_curve
from ...metrics.ranking import per_query_ranking, recall_at_k
from ...predictions import Predictions, logit
from ...table_checks import TOLERANCE, in_range, raise_problems
from ..calibration import default_condition
from .cells import CELL, debiased_ece, debiased_problems, rows_problems, study_cells

__all__ = ["SIGNALS", "VARIANCE_SIGNALS", "candidate_distribution", "listwise_calibration", "listwise_reliability",
           "query_signals", "top_label"]

SIGNALS = ("1 - max prob", "entropy", "mean var", "top var")
VARIANCE_SIGNALS = ("mean var", "top var")


def candidate_distribution(probs: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
    """``[Q, K]`` probability that each candidate is the relevant one: ``softmax(logit(p))`` per query
    (over the candidates of ``mask`` when given; a padded slot gets 0)."""
    z = logit(probs)
    if z.ndim != 2:
        raise ValueError(f"probs must be [Q, K]; got shape {z.shape}")
    if mask is not None:
        z = np.where(mask, z, -np.inf)
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def _top(probs: np.ndarray, labels: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
    """Index of the top-ranked candidate; ties broken against the relevant one (as :mod:`calibrank.metrics.ranking`),
    a padded slot never on top."""
    if mask is None:
        return np.lexsort((labels, -probs), axis=1)[:, 0]
    return np.lexsort((labels, -probs, ~mask), axis=1)[:, 0]


def top_label(pred: Predictions) -> tuple[np.ndarray, np.ndarray]:
    """``(confidence [Q], correct [Q])``: the largest candidate probability ``max_j pi_j`` and whether the
    top-ranked candidate is relevant (R@1, ties against the relevant)."""
    pi = candidate_distribution(pred.probs, pred.mask)
    return pi.max(axis=1), recall_at_k(pred.probs, pred.labels, 1, mask=pred.mask).astype(np.float64)


def query_signals(pred: Predictions) -> pd.DataFrame:
    """One row per query: the signals of :data:`SIGNALS`, ``RR`` (reciprocal rank), ``R@1`` and ``top relevant``
    (the top-ranked candidate is relevant: 0 on a query without a relevant candidate, where R@1 is NaN).
    The ranking numbers come from one sort (:func:`calibrank.metrics.ranking.per_query_ranking`)."""
    pi = candidate_distribution(pred.probs, pred.mask)
    rows = np.arange(pred.labels.shape[0])
    stochastic = pred.n_samples > 1
    var = pred.var if stochastic else None
    ranks = per_query_ranking(pred.probs, pred.labels, ks=(1,), mask=pred.mask)
    with np.errstate(divide="ignore", invalid="ignore"):
        entropy = -np.where(pi > 0, pi * np.log(pi), 0.0).sum(axis=1)
    top_prob = pred.probs.max(axis=1)  # the top-ranked candidate's probability, whichever of a tie it is
    return pd.DataFrame({
        "qid": pred.qids,
        "1 - max prob": 1.0 - top_prob,
        "entropy": entropy,
        "mean var": (var.sum(axis=1) / pred.lengths if pred.mask is not None else var.mean(axis=1))
        if stochastic else np.nan,
        "top var": var[rows, _top(pred.probs, pred.labels, pred.mask)] if stochastic else np.nan,
        "top prob": top_prob,
        "RR": ranks["RR"],
        "R@1": ranks["R@1"].astype(np.float64),
        "top relevant": np.nan_to_num(ranks["P@1"], nan=0.0),
    })


def _top_label_predictions(pred: Predictions) -> Predictions:
    conf, correct = top_label(pred)
    return Predictions(pred.qids, correct[:, None].astype(int), conf[:, None], conf[None, :, None],
                       meta={"name": f"{pred.meta.get('name', 'predictions')} (top label)"})


def listwise_calibration(study, rankers: Iterable[str] | None = None, *, n_resamples: int = 1000) -> pd.DataFrame:
    """Pointwise ECE (all candidates) and top-label ECE of the candidate distribution, per ranker x condition.

    Each (eq. 1) with its debiased ECE, 95% bootstrap interval and bias (main training seed;
    :func:`~calibrank.analysis.practice.cells.debiased_ece`), beside ``R@1`` and ``mean confidence``
    (confidence above R@1 = over-confident). Raises :class:`~calibrank.table_checks.TableError` when a
    cell has no row, a number leaves its range or a debiased ECE its interval.
    """
    rows = []
    for ranker, tc, cond in study.cells("test", rankers):
        pred = study.get(ranker, tc, cond)
        top = _top_label_predictions(pred)
        row = {"ranker": ranker, "train_corpus": tc, "corpus": cond.corpus, "sampler": cond.sampler,
               "shift": study.shift(cond, tc), "queries": int(pred.labels.shape[0])}
        for name, p in (("pointwise ECE", pred), ("top-label ECE", top)):
            row[name] = ece(p.probs, p.labels)
            row.update(debiased_ece(p, name, n_resamples=n_resamples, seed=study.cfg.seed))
        row["R@1"] = float(top.labels.mean())
        row["mean confidence"] = float(top.probs.mean())
        rows.append(row)
    table = pd.DataFrame(rows)
    name = "listwise"
    problems = rows_problems(name, table, CELL, study_cells(study, rankers), what="one per ranker x test condition")
    if not table.empty:
        for col in ("pointwise ECE", "top-label ECE"):
            problems += in_range(name, table, col, CELL, 0, 1) + debiased_problems(name, table, col, CELL)
        problems += in_range(name, table, "mean confidence", CELL, 1 / (study.k + 1) - TOLERANCE, 1 + TOLERANCE)
    raise_problems(problems)
    return table


def listwise_reliability(study, condition=None, train_corpus: str | None = None, *, n_bins: int = 10,
                         rankers: Iterable[str] | None = None) -> pd.DataFrame:
    """Reliability buckets of both views on one condition (default: in distribution), one row per
    ranker x view (``pointwise`` / ``top label``) x bucket, as :func:`calibrank.analysis.study.reliability_table`."""
    tc = train_corpus or study.train_corpora[0]
    cond = condition or default_condition(study, tc)
    rows = []
    for ranker in rankers if rankers is not None else study.rankers:
        pred = study.get(ranker, tc, cond)
        for view, p in (("pointwise", pred), ("top label", _top_label_predictions(pred))):
            curve = reliability_curve(p.probs, p.labels, n_bins=n_bins)
            for i in range(n_bins):
                rows.append({"ranker": ranker, "train_corpus": tc, "condition": cond.name, "view": view, "bin": i,
                             "lower": float(curve.bin_edges[i]), "upper": float(curve.bin_edges[i + 1]),
                             "mean_predicted": float(curve.mean_predicted[i]),
                             "fraction_positive": float(curve.fraction_positive[i]), "count": int(curve.counts[i]),
                             "ECE": curve.ece})
    return pd.DataFrame(rows)
