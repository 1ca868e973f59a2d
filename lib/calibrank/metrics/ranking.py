"""Ranking metrics for conversation response ranking, per query and averaged.

Recall ``R_n@k``, AP (Manning et al. 2008, ch. 8), RR and nDCG@k (Järvelin & Kekäläinen 2002) on
``[Q, K]`` scores and labels. Ties count against the relevant candidate (the first paper's code
let them favour it); a query with no relevant candidate is NaN and left out of the means.
:func:`per_query_ranking`'s ``tiebreak`` orders ties otherwise (trec_eval's docid order for a
user's run, :mod:`calibrank.assess.sections.ranking`). Padded lists and trec_eval conventions:
docs/decisions.md, "Ranking metrics".
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable

import numpy as np

__all__ = [
    "average_precision",
    "ndcg_at_k",
    "per_query_ranking",
    "rank_of_relevant",
    "ranking_metrics",
    "recall_at_k",
    "reciprocal_rank",
]


def _check_inputs(scores: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Validate ``scores``/``labels`` and return them as float64 and bool arrays of shape [Q, K]."""
    s = np.asarray(scores)
    y = np.asarray(labels)
    if s.ndim != 2:
        raise ValueError(f"scores must be a 2-D array [queries, candidates]; got shape {s.shape}")
    if y.shape != s.shape:
        raise ValueError(f"labels must have the same shape as scores {s.shape}; got shape {y.shape}")
    if s.shape[1] < 1:
        raise ValueError(f"scores must have at least one candidate per query; got shape {s.shape}")
    if not (np.issubdtype(s.dtype, np.number) or s.dtype == bool) or np.iscomplexobj(s):
        raise ValueError(f"scores must be real numbers; got dtype {s.dtype}")
    s = s.astype(np.float64)
    bad = ~np.isfinite(s)
    if bad.any():
        raise ValueError(
            f"scores must be finite; found {int(bad.sum())} non-finite value(s), e.g. {s[bad][0].item()!r}"
        )
    if not (np.issubdtype(y.dtype, np.number) or y.dtype == bool) or np.iscomplexobj(y):
        raise ValueError(f"labels must be 0/1 numbers or booleans; got dtype {y.dtype}")
    bad = (y != 0) & (y != 1)
    if bad.any():
        raise ValueError(
            f"labels must contain only 0 and 1; found {int(bad.sum())} other value(s), e.g. {y[bad][0].item()!r}"
        )
    return s, y.astype(bool)


def _check_k(k: int, name: str = "k") -> int:
    """Validate a cut-off: a positive integer (not a bool)."""
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 1:
        raise ValueError(f"{name} must be a positive integer; got {(k.item() if isinstance(k, np.generic) else k)!r}")
    return int(k)


def _check_mask(mask: np.ndarray | None, shape: tuple[int, ...]) -> np.ndarray | None:
    """``mask`` as a bool [Q, K] array of ``shape`` (None: every slot is a candidate)."""
    if mask is None:
        return None
    m = np.asarray(mask)
    if m.shape != shape or m.dtype != bool:
        raise ValueError(f"mask must be a bool array of shape {shape}; got {m.dtype} {m.shape}")
    return m


def _order(s: np.ndarray, tie: np.ndarray, mask: np.ndarray | None) -> np.ndarray:
    """Positions by decreasing score, the lower ``tie`` key first among equal scores, padded slots last.

    ``np.lexsort`` sorts by its last key first: padded after real, then decreasing score, then
    increasing label, so a relevant candidate follows the non-relevant ones it ties with.
    """
    if mask is None:
        return np.lexsort((tie, -s), axis=1)
    return np.lexsort((tie, -s, ~mask), axis=1)


def _sorted_relevance(s: np.ndarray, y: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
    """Labels (as float 0/1) reordered by decreasing score, non-relevant first among equal scores."""
    return np.take_along_axis(y, _order(s, y, mask), axis=1).astype(np.float64)


def _safe_divide(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """``num / den`` with NaN where ``den == 0`` (queries without a relevant candidate)."""
    out = np.full(np.broadcast(num, den).shape, np.nan)
    np.divide(num, den, out=out, where=den != 0)
    return out


def _recall(rel: np.ndarray, k: int, n_rel: np.ndarray | None = None) -> np.ndarray:
    kk = min(k, rel.shape[1])
    return _safe_divide(rel[:, :kk].sum(axis=1), rel.sum(axis=1) if n_rel is None else n_rel)


def _average_precision(rel: np.ndarray, n_rel: np.ndarray | None = None) -> np.ndarray:
    positions = np.arange(1, rel.shape[1] + 1)
    precision_at_i = np.cumsum(rel, axis=1) / positions
    return _safe_divide((rel * precision_at_i).sum(axis=1), rel.sum(axis=1) if n_rel is None else n_rel)


def _first_relevant_rank(rel: np.ndarray) -> np.ndarray:
    has_rel = rel.any(axis=1)
    rank = np.argmax(rel, axis=1).astype(np.float64) + 1.0
    rank[~has_rel] = np.nan
    return rank


def _ndcg(rel: np.ndarray, k: int) -> np.ndarray:
    kk = min(k, rel.shape[1])
    discount = 1.0 / np.log2(np.arange(2, kk + 2))
    dcg = (rel[:, :kk] * discount).sum(axis=1)
    ideal_prefix = np.concatenate([[0.0], np.cumsum(discount)])  # IDCG for 0..kk relevant
    n_ideal = np.minimum(rel.sum(axis=1), kk).astype(np.int64)
    return _safe_divide(dcg, ideal_prefix[n_ideal])


def _graded_ndcg(sorted_gains: np.ndarray, ideal_gains: np.ndarray, k: int) -> np.ndarray:
    """``DCG@k / IDCG@k`` with linear gains; the ideal is ``ideal_gains`` in decreasing order."""
    kk = min(k, sorted_gains.shape[1])
    dcg = (sorted_gains[:, :kk] / np.log2(np.arange(2, kk + 2))).sum(axis=1)
    ki = min(k, ideal_gains.shape[1])
    ideal = -np.sort(-ideal_gains, axis=1)[:, :ki]
    return _safe_divide(dcg, (ideal / np.log2(np.arange(2, ki + 2))).sum(axis=1))


def _check_n_relevant(n_relevant: np.ndarray | None, rel: np.ndarray) -> np.ndarray | None:
    if n_relevant is None:
        return None
    n = np.asarray(n_relevant, dtype=np.float64)
    if n.shape != (rel.shape[0],):
        raise ValueError(f"n_relevant must have shape ({rel.shape[0]},); got {n.shape}")
    short = n < rel.sum(axis=1)
    if short.any():
        q = int(np.flatnonzero(short)[0])
        raise ValueError(
            f"n_relevant[{q}] = {n[q]:g} is below the {int(rel[q].sum())} relevant candidates of that "
            "query's list; it counts the relevant documents of the qrels, retrieved or not"
        )
    return n


def recall_at_k(
    scores: np.ndarray,
    labels: np.ndarray,
    k: int,
    *,
    mask: np.ndarray | None = None,
    n_relevant: np.ndarray | None = None,
) -> np.ndarray:
    """Per-query recall ``R_n@k``: the share of a query's relevant candidates ranked in its top k.

    The metric of conversation response ranking (``n`` candidates per query). Ties count
    against the relevant candidate (the module docstring).

    Parameters
    ----------
    scores : array-like of float, shape (Q, K)
        One row of candidate scores per query.
    labels : array-like of {0, 1}, shape (Q, K)
        1 for a relevant candidate.
    k : int
        The cut-off.
    mask : array-like of bool, shape (Q, K), default=None
        True where a row has a candidate (None: every slot); padded slots rank last.
    n_relevant : array-like of int, shape (Q,), default=None
        Relevant documents in the qrels, retrieved or not (None: the relevant candidates).

    Returns
    -------
    ndarray of float, shape (Q,)
        NaN for a query without a relevant candidate.

    Examples
    --------
    >>> import numpy as np
    >>> scores = np.array([[0.9, 0.2, 0.5], [0.1, 0.7, 0.3]])
    >>> labels = np.array([[0, 1, 1], [1, 0, 0]])
    >>> recall_at_k(scores, labels, 2).tolist()
    [0.5, 0.0]
    """
    k = _check_k(k)
    s, y = _check_inputs(scores, labels)
    rel = _sorted_relevance(s, y, _check_mask(mask, s.shape))
    return _recall(rel, k, _check_n_relevant(n_relevant, rel))


def average_precision(
    scores: np.ndarray, labels: np.ndarray, *, mask: np.ndarray | None = None, n_relevant: np.ndarray | None = None
) -> np.ndarray:
    """Per-query average precision ``(1/R) sum_i rel_i * P@i`` (Manning et al. 2008, ch. 8).

    The precision at each relevant candidate's rank, averaged over the ``R`` relevant ones
    (the candidates, or ``n_relevant``); pessimistic ties (see the module docstring).

    Parameters
    ----------
    scores : array-like of float, shape (Q, K)
        One row of candidate scores per query.
    labels : array-like of {0, 1}, shape (Q, K)
        1 for a relevant candidate.
    mask : array-like of bool, shape (Q, K), default=None
        True where a row has a candidate (None: every slot); padded slots rank last.
    n_relevant : array-like of int, shape (Q,), default=None
        Relevant documents in the qrels, retrieved or not (None: the relevant candidates).

    Returns
    -------
    ndarray of float, shape (Q,)
        NaN for a query without a relevant candidate.

    Examples
    --------
    >>> import numpy as np
    >>> scores = np.array([[0.9, 0.2, 0.5], [0.1, 0.7, 0.3]])
    >>> labels = np.array([[0, 1, 1], [1, 0, 0]])
    >>> average_precision(scores, labels).round(3).tolist()     # (1/2 + 2/3) / 2, 1/3
    [0.583, 0.333]
    """
    s, y = _check_inputs(scores, labels)
    rel = _sorted_relevance(s, y, _check_mask(mask, s.shape))
    return _average_precision(rel, _check_n_relevant(n_relevant, rel))


def rank_of_relevant(scores: np.ndarray, labels: np.ndarray, *, mask: np.ndarray | None = None) -> np.ndarray:
    """Per-query 1-based rank of the first (highest-ranked) relevant candidate.

    Pessimistic ties: a relevant candidate tied with m non-relevant ones is ranked after all
    of them.

    Parameters
    ----------
    scores : array-like of float, shape (Q, K)
        One row of candidate scores per query.
    labels : array-like of {0, 1}, shape (Q, K)
        1 for a relevant candidate.
    mask : array-like of bool, shape (Q, K), default=None
        True where a row has a candidate (None: every slot); padded slots rank last.

    Returns
    -------
    ndarray of float, shape (Q,)
        NaN for a query without a relevant candidate.

    Examples
    --------
    >>> import numpy as np
    >>> scores = np.array([[0.9, 0.2, 0.5], [0.1, 0.7, 0.3]])
    >>> labels = np.array([[0, 1, 1], [1, 0, 0]])
    >>> rank_of_relevant(scores, labels).tolist()
    [2.0, 3.0]
    """
    s, y = _check_inputs(scores, labels)
    return _first_relevant_rank(_sorted_relevance(s, y, _check_mask(mask, s.shape)))


def reciprocal_rank(scores: np.ndarray, labels: np.ndarray, *, mask: np.ndarray | None = None) -> np.ndarray:
    """Per-query reciprocal rank: one over the rank of the first relevant candidate (its mean is MRR).

    Pessimistic ties: a relevant candidate tied with non-relevant ones ranks after them.

    Parameters
    ----------
    scores : array-like of float, shape (Q, K)
        One row of candidate scores per query.
    labels : array-like of {0, 1}, shape (Q, K)
        1 for a relevant candidate.
    mask : array-like of bool, shape (Q, K), default=None
        True where a row has a candidate (None: every slot); padded slots rank last.

    Returns
    -------
    ndarray of float, shape (Q,)
        NaN for a query without a relevant candidate.

    Examples
    --------
    >>> import numpy as np
    >>> reciprocal_rank(np.array([[0.9, 0.5, 0.1], [0.5, 0.5, 0.1]]), np.array([[0, 1, 0], [1, 0, 0]])).tolist()
    [0.5, 0.5]
    """
    return 1.0 / rank_of_relevant(scores, labels, mask=mask)


def ndcg_at_k(scores: np.ndarray, labels: np.ndarray, k: int = 10, *, mask: np.ndarray | None = None) -> np.ndarray:
    """Per-query nDCG@k (Järvelin & Kekäläinen 2002) with binary gains and a ``1/log2(i+1)`` discount.

    DCG of the top k over that of the ideal ranking; pessimistic ties (see the module
    docstring). Graded gains: :func:`per_query_ranking`.

    Parameters
    ----------
    scores : array-like of float, shape (Q, K)
        One row of candidate scores per query.
    labels : array-like of {0, 1}, shape (Q, K)
        1 for a relevant candidate.
    k : int, default=10
        The cut-off.
    mask : array-like of bool, shape (Q, K), default=None
        True where a row has a candidate (None: every slot); padded slots rank last.

    Returns
    -------
    ndarray of float, shape (Q,)
        NaN for a query without a relevant candidate.

    Examples
    --------
    >>> import numpy as np
    >>> scores = np.array([[0.9, 0.2, 0.5], [0.1, 0.7, 0.3]])
    >>> labels = np.array([[0, 1, 1], [1, 0, 0]])
    >>> ndcg_at_k(scores, labels, k=3).round(3).tolist()      # (1/log2(3) + 1/2) / (1 + 1/log2(3)), 1/2
    [0.693, 0.5]
    """
    k = _check_k(k)
    s, y = _check_inputs(scores, labels)
    return _ndcg(_sorted_relevance(s, y, _check_mask(mask, s.shape)), k)


def per_query_ranking(
    scores: np.ndarray,
    labels: np.ndarray,
    ks: Iterable[int] = (1, 2, 5),
    ndcg_k: int = 10,
    *,
    mask: np.ndarray | None = None,
    n_relevant: np.ndarray | None = None,
    gains: np.ndarray | None = None,
    ideal_gains: np.ndarray | None = None,
    tiebreak: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """Every per-query ranking metric from one sort: ``R@k`` for ``ks``, ``P@1``, ``AP``, ``RR``, ``nDCG@<ndcg_k>``.

    One sort per query serves them all, which is what the bootstrap over queries needs.
    ``gains`` and ``ideal_gains`` make nDCG graded as trec_eval's ``ndcg_cut``; without them it
    is binary.

    Parameters
    ----------
    scores : array-like of float, shape (Q, K)
        One row of candidate scores per query.
    labels : array-like of {0, 1}, shape (Q, K)
        1 for a relevant candidate.
    ks : iterable of int, default=(1, 2, 5)
        Recall cut-offs.
    ndcg_k : int, default=10
        nDCG's cut-off.
    mask : array-like of bool, shape (Q, K), default=None
        True where a row has a candidate (None: every slot); padded slots rank last.
    n_relevant : array-like of int, shape (Q,), default=None
        Relevant documents in the qrels, retrieved or not (None: the relevant candidates).
    gains : array-like of float, shape (Q, K), default=None
        Graded gains of the candidates (positive where ``labels`` is 1).
    ideal_gains : array-like of float, shape (Q, M), default=None
        The gains of the ideal ranking (None: ``gains``).
    tiebreak : array-like, shape (Q, K), default=None
        Among equal scores the lower key ranks first (None: the gains, or the labels, so that
        ties count against the relevant candidate).

    Returns
    -------
    dict of str to ndarray of shape (Q,)
        NaN for a query without a relevant document.

    Examples
    --------
    >>> import numpy as np
    >>> scores = np.array([[0.9, 0.2, 0.5], [0.1, 0.7, 0.3]])
    >>> labels = np.array([[0, 1, 1], [1, 0, 0]])
    >>> {k: v.round(3).tolist() for k, v in per_query_ranking(scores, labels, ks=(1, 2), ndcg_k=3).items()}
    {'R@1': [0.0, 0.0], 'R@2': [0.5, 0.0], 'P@1': [0.0, 0.0], 'AP': [0.583, 0.333], 'RR': [0.5, 0.333], 'nDCG@3': [0.693, 0.5]}
    """
    ks = [_check_k(k, "ks entries") for k in ks]
    ndcg_k = _check_k(ndcg_k, "ndcg_k")
    s, y = _check_inputs(scores, labels)
    mask = _check_mask(mask, s.shape)
    if tiebreak is not None and np.shape(tiebreak) != s.shape:
        raise ValueError(f"tiebreak must have the shape of scores {s.shape}; got {np.shape(tiebreak)}")
    if gains is None:
        order = _order(s, y if tiebreak is None else np.asarray(tiebreak), mask)
        rel = np.take_along_axis(y, order, axis=1).astype(np.float64)
        sorted_gains = None
    else:
        g = np.asarray(gains, dtype=np.float64)
        if g.shape != s.shape or (g[y] <= 0).any() or (g < 0).any():
            raise ValueError(f"gains must be non-negative grades of shape {s.shape}, positive where labels is 1")
        order = _order(s, g if tiebreak is None else np.asarray(tiebreak), mask)
        rel = np.take_along_axis(y, order, axis=1).astype(np.float64)
        sorted_gains = np.take_along_axis(g, order, axis=1)
    n_rel = _check_n_relevant(n_relevant, rel)
    answerable = rel.any(axis=1) if n_rel is None else n_rel > 0
    out = {f"R@{k}": _recall(rel, k, n_rel) for k in ks}
    out["P@1"] = np.where(answerable, rel[:, 0], np.nan)
    out["AP"] = _average_precision(rel, n_rel)
    rr = np.where(rel.any(axis=1), 1.0 / _first_relevant_rank(rel), 0.0)
    out["RR"] = np.where(answerable, rr, np.nan)
    if sorted_gains is None:
        out[f"nDCG@{ndcg_k}"] = _ndcg(rel, ndcg_k)
    else:
        ideal = np.asarray(gains if ideal_gains is None else ideal_gains, dtype=np.float64)
        if ideal.ndim != 2 or ideal.shape[0] != s.shape[0]:
            raise ValueError(f"ideal_gains must be [Q={s.shape[0]}, M]; got {ideal.shape}")
        out[f"nDCG@{ndcg_k}"] = np.where(answerable, _graded_ndcg(sorted_gains, ideal, ndcg_k), np.nan)
    return out


def _mean_defined(values: np.ndarray) -> float:
    """Mean over the non-NaN entries; NaN when there are none (no warning)."""
    defined = values[~np.isnan(values)]
    return float(defined.mean()) if defined.size else float("nan")


def ranking_metrics(
    scores: np.ndarray,
    labels: np.ndarray,
    ks: Iterable[int] = (1, 2, 5),
    ndcg_k: int = 10,
    *,
    mask: np.ndarray | None = None,
) -> dict[str, float]:
    """Mean ranking metrics over the queries that have at least one relevant candidate.

    Parameters
    ----------
    scores : array-like of float, shape (Q, K)
        One row of candidate scores per query.
    labels : array-like of {0, 1}, shape (Q, K)
        1 for a relevant candidate.
    ks : iterable of int, default=(1, 2, 5)
        Recall cut-offs.
    ndcg_k : int, default=10
        nDCG's cut-off.
    mask : array-like of bool, shape (Q, K), default=None
        True where a row has a candidate (None: every slot); padded slots rank last.

    Returns
    -------
    dict
        ``{"R@k" for k in ks, "MAP", "MRR", "nDCG@<ndcg_k>", "queries"}``, ``queries`` the number
        averaged over; every mean is NaN when there is none.

    Examples
    --------
    >>> import numpy as np
    >>> scores = np.array([[0.9, 0.2, 0.5], [0.1, 0.7, 0.3]])
    >>> labels = np.array([[0, 1, 1], [1, 0, 0]])
    >>> {k: round(v, 3) for k, v in ranking_metrics(scores, labels, ks=(1, 2), ndcg_k=3).items()}
    {'R@1': 0.0, 'R@2': 0.25, 'MAP': 0.458, 'MRR': 0.417, 'nDCG@3': 0.597, 'queries': 2}
    """
    ks = [_check_k(k, "ks entries") for k in ks]
    ndcg_k = _check_k(ndcg_k, "ndcg_k")
    s, y = _check_inputs(scores, labels)
    rel = _sorted_relevance(s, y, _check_mask(mask, s.shape))
    out: dict[str, float] = {f"R@{k}": _mean_defined(_recall(rel, k)) for k in ks}
    out["MAP"] = _mean_defined(_average_precision(rel))
    out["MRR"] = _mean_defined(1.0 / _first_relevant_rank(rel))
    out[f"nDCG@{ndcg_k}"] = _mean_defined(_ndcg(rel, ndcg_k))
    out["queries"] = int(rel.any(axis=1).sum())
    return out
