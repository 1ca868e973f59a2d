"""How well the run ranks: trec_eval's measures with a query-bootstrap interval.

Candidates rank by their mean score over samples, ties against the relevant one, padded slots
last (:func:`calibrank.metrics.ranking.per_query_ranking`). As trec_eval counts them: ``R@k``
and ``MAP`` over ``n_relevant`` (relevant documents in the qrels, retrieved or not), ``P@1``,
``MRR``, and ``nDCG@10`` with linear graded gains (``ndcg_cut``), the ideal ranking holding the
qrels' relevant documents missing from the list at the lowest relevant grade. A query without a
relevant document is left out and counted. 95% percentile bootstrap over queries.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..metrics.ranking import per_query_ranking
from ..metrics.resample import intervals, mean_features
from .scored import AssessError, ScoredRun
from .selfcheck import checked

__all__ = ["NDCG_K", "ideal_gains", "per_query", "ranking_table"]

NDCG_K = 10


def ideal_gains(run: ScoredRun, k: int = NDCG_K) -> np.ndarray:
    """``[Q, k]`` the best ``k`` gains a list of the query could hold: the grades of its graded candidates, and one
    ``relevant_at`` per relevant document of the qrels that it lacks (so nDCG never exceeds 1)."""
    labels = run.labels.astype(bool)
    missing = run.n_relevant - labels.sum(axis=1)
    if (missing < 0).any():
        q = int(np.flatnonzero(missing < 0)[0])
        raise AssessError(f"{run.source}: query {run.qids[q]} has {int(labels[q].sum())} relevant candidates but "
                          f"n_relevant = {int(run.n_relevant[q])}; n_relevant counts every relevant document of the qrels")
    kk = min(k, run.mask.shape[1])
    top = -np.sort(-np.where(run.relevance > 0, run.relevance, 0), axis=1)[:, :kk].astype(np.float64)
    extra = np.where(np.arange(k)[None, :] < missing[:, None], float(run.relevant_at), 0.0)
    return -np.sort(-np.concatenate([top, extra], axis=1), axis=1)[:, :k]


def per_query(run: ScoredRun, ks: Sequence[int] = (1, 5, 10)) -> dict[str, np.ndarray]:
    """Per-query values ``[Q]`` of every measure of the table (NaN for a query without a relevant document)."""
    gains = np.where(run.relevance > 0, run.relevance, 0).astype(np.float64)
    values = per_query_ranking(run.scores.mean(axis=0), run.labels, ks, NDCG_K, mask=run.mask,
                               n_relevant=run.n_relevant, gains=gains, ideal_gains=ideal_gains(run))
    order = [f"R@{k}" for k in ks] + ["P@1", "RR", f"nDCG@{NDCG_K}", "AP"]
    names = {"RR": "MRR", "AP": "MAP"}
    return {names.get(m, m): values[m] for m in order}


def ranking_table(run: ScoredRun, *, ks: Sequence[int] = (1, 5, 10), level: float = 0.95, n_resamples: int = 1000,
                  seed: int = 0) -> pd.DataFrame:
    """One row per measure: ``value`` with its ``level`` interval, ``queries`` averaged over and ``left out``."""
    values = per_query(run, ks)
    ests = intervals([mean_features(name, v, run.qids, source=run.source) for name, v in values.items()], level=level,
                     n_resamples=n_resamples, seed=seed)
    rows = []
    for (name, v), est in zip(values.items(), ests):
        rows.append({"measure": name, "value": est.value, "value lo": est.low, "value hi": est.high,
                     "queries": int((~np.isnan(v)).sum()), "left out": int(np.isnan(v).sum())})
    return checked("ranking", pd.DataFrame(rows), keys=("measure",), inside=("value",), unit=("value",),
                   nonneg=("queries", "left out"))
