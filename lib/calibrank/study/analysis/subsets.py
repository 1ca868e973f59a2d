"""Candidate subsets of Predictions: one function for every analysis that keeps some negatives.

The first paper's Table 1 ECE uses a balanced set (the relevant candidate and one negative per
query) and its Figure 2 grows the negatives from 1 to k; both are :func:`subset_negatives`.
"""

from __future__ import annotations

import numpy as np

from calibrank.predictions import Predictions, PredictionsError

__all__ = ["keep_candidates", "subset_negatives"]


def keep_candidates(pred: Predictions, keep: np.ndarray, meta: dict | None = None) -> Predictions:
    """The candidates where ``keep [Q, K]`` is true; every query must keep the same number."""
    keep = np.asarray(keep, dtype=bool)
    q, k = pred.labels.shape
    if keep.shape != (q, k):
        raise ValueError(f"keep must have the shape of the labels {(q, k)}; got {keep.shape}")
    per_query = keep.sum(axis=1)
    if q and not (per_query == per_query[0]).all():
        raise ValueError("keep must keep the same number of candidates in every query")
    kk = int(per_query[0]) if q else 0
    return Predictions(
        qids=pred.qids,
        labels=pred.labels[keep].reshape(q, kk),
        probs=pred.probs[keep].reshape(q, kk),
        samples=pred.samples[:, keep].reshape(pred.n_samples, q, kk),
        meta={**pred.meta, **(meta or {})},
        mask=None if pred.mask is None else pred.mask[keep].reshape(q, kk),
        docids=None if pred.docids is None else pred.docids[keep].reshape(q, kk),
    )


def subset_negatives(pred: Predictions, n_negatives: int, *, seed: int) -> Predictions:
    """Keep every relevant candidate and ``n_negatives`` negatives per query, drawn with ``seed``.

    Each query's negatives are shuffled once, so subsets are nested in n and the same for every
    ranker on those queries; candidates keep their relative order. Every query needs the same
    number of relevant candidates and at least ``n_negatives`` negatives.
    """
    if isinstance(n_negatives, bool) or not isinstance(n_negatives, (int, np.integer)) or n_negatives < 1:
        raise ValueError(f"n_negatives must be a positive integer; got {n_negatives!r}")
    labels = pred.labels.astype(bool)
    q, k = labels.shape
    n_rel = labels.sum(axis=1)
    where = pred.meta.get("name", "pred")
    if q == 0:
        raise PredictionsError(f"{where}: no queries")
    if not (n_rel == n_rel[0]).all():
        raise PredictionsError(f"{where}: queries have different numbers of relevant candidates")
    n_neg = k - int(n_rel[0])
    if n_negatives > n_neg:
        raise ValueError(f"{where}: n_negatives={n_negatives} but queries have only {n_neg} negatives")
    rng = np.random.default_rng(seed)
    keys = rng.random((q, k))
    keys[labels] = np.inf  # relevant candidates sort last among keys, i.e. never take a negative's place
    order = np.argsort(keys, axis=1, kind="stable")
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.arange(k)[None, :].repeat(q, axis=0), axis=1)
    keep = labels | (rank < n_negatives)
    return keep_candidates(pred, keep, {"subset": {"n_negatives": int(n_negatives), "seed": int(seed), "source_K": k}})
