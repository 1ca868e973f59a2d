"""Listwise: the candidate distribution softmax(logit(p)) of a query, its top label and the query-level uncertainty signals.

:func:`query_signals` gives the signals of :data:`SIGNALS` (larger = more uncertain).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from calibrank.metrics.ranking import per_query_ranking, recall_at_k
from calibrank.predictions import Predictions, logit

__all__ = ["SIGNALS", "VARIANCE_SIGNALS", "candidate_distribution", "top_label", "query_signals"]


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
    mean_var: np.ndarray | float = np.nan
    top_var: np.ndarray | float = np.nan
    if pred.n_samples > 1:
        var = pred.var
        mean_var = var.sum(axis=1) / pred.lengths if pred.mask is not None else var.mean(axis=1)
        top_var = var[rows, _top(pred.probs, pred.labels, pred.mask)]
    ranks = per_query_ranking(pred.probs, pred.labels, ks=(1,), mask=pred.mask)
    with np.errstate(divide="ignore", invalid="ignore"):
        entropy = -np.where(pi > 0, pi * np.log(pi), 0.0).sum(axis=1)
    top_prob = pred.probs.max(axis=1)  # the top-ranked candidate's probability, whichever of a tie it is
    return pd.DataFrame(
        {
            "qid": pred.qids,
            "1 - max prob": 1.0 - top_prob,
            "entropy": entropy,
            "mean var": mean_var,
            "top var": top_var,
            "top prob": top_prob,
            "RR": ranks["RR"],
            "R@1": ranks["R@1"].astype(np.float64),
            "top relevant": np.nan_to_num(ranks["P@1"], nan=0.0),
        }
    )
