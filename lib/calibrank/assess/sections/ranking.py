"""How well the run ranks: trec_eval's measures with a query-bootstrap interval.

Candidates rank by their mean score over samples, padded slots last. Ties: a run read from a
user's file (``ScoredRun.ties == "trec_eval"``) breaks them as trec_eval does, by docid, the
greater string first (``strcmp``, reversed: ``b`` before ``a``), so the same file gives the same
figures as trec_eval, pytrec_eval and ir_measures; a ``ScoredRun`` built from the study's
predictions (``"pessimistic"``) keeps the study's convention, a relevant candidate after the
non-relevant ones it ties with (:func:`calibrank.metrics.ranking.per_query_ranking`).

As trec_eval counts them: ``R@k`` and ``MAP`` over ``n_relevant`` (relevant documents in the
qrels, retrieved or not), ``P@1``, ``MRR``, and ``nDCG@10`` with linear graded gains
(``ndcg_cut``): a candidate gains its grade (0 if negative or unjudged), and the ideal ranking
holds every document the qrels grade above 0, retrieved or not, at its own grade
(``ScoredRun.grades``), whatever ``relevant_at`` (trec_eval's relevance level leaves nDCG
alone). A query without a relevant document (grade >= ``relevant_at``) is left out and counted.
95% percentile bootstrap over queries.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from calibrank.assess.read.scored import AssessError, ScoredRun
from calibrank.assess.sections.selfcheck import checked
from calibrank.metrics.ranking import per_query_ranking
from calibrank.metrics.resample import intervals, mean_features

__all__ = ["NDCG_K", "ideal_gains", "per_query", "ranking_table", "tiebreak"]

NDCG_K = 10


def ideal_gains(run: ScoredRun, k: int = NDCG_K) -> np.ndarray:
    """``[Q, k]`` the best ``k`` gains a list of the query could hold, in decreasing order.

    With ``run.grades``: the qrels' positive grades of the query, as trec_eval's ideal ranking.
    Without: the grades of its graded candidates, and one ``relevant_at`` per relevant document of
    the qrels that it lacks (so nDCG never exceeds 1).
    """
    labels = run.labels.astype(bool)
    missing = run.n_relevant - labels.sum(axis=1)
    if (missing < 0).any():
        q = int(np.flatnonzero(missing < 0)[0])
        raise AssessError(
            f"{run.source}: query {run.qids[q]} has {int(labels[q].sum())} relevant candidates but "
            f"n_relevant = {int(run.n_relevant[q])}; n_relevant counts every relevant document of the qrels"
        )
    if run.grades is not None:
        top = run.grades[:, :k].astype(np.float64)
        return np.pad(top, ((0, 0), (0, k - top.shape[1])))
    kk = min(k, run.mask.shape[1])
    top = -np.sort(-np.where(run.relevance > 0, run.relevance, 0), axis=1)[:, :kk].astype(np.float64)
    extra = np.where(np.arange(k)[None, :] < missing[:, None], float(run.relevant_at), 0.0)
    return -np.sort(-np.concatenate([top, extra], axis=1), axis=1)[:, :k]


def tiebreak(run: ScoredRun) -> np.ndarray | None:
    """``[Q, K]`` the key that orders equal scores (lower first): minus the docid's rank in its list for trec_eval's
    order (the greater docid first); None for the pessimistic default."""
    if run.ties != "trec_eval":
        return None
    order = np.argsort(run.docids, axis=1, kind="stable")
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.arange(order.shape[1])[None, :], axis=1)
    return -rank


def per_query(run: ScoredRun, ks: Sequence[int] = (1, 5, 10)) -> dict[str, np.ndarray]:
    """Per-query values ``[Q]`` of every measure of the table (NaN for a query without a relevant document)."""
    gains = np.where(run.relevance > 0, run.relevance, 0).astype(np.float64)
    values = per_query_ranking(
        run.scores.mean(axis=0),
        run.labels,
        ks,
        NDCG_K,
        mask=run.mask,
        n_relevant=run.n_relevant,
        gains=gains,
        ideal_gains=ideal_gains(run),
        tiebreak=tiebreak(run),
    )
    order = [f"R@{k}" for k in ks] + ["P@1", "RR", f"nDCG@{NDCG_K}", "AP"]
    names = {"RR": "MRR", "AP": "MAP"}
    return {names.get(m, m): values[m] for m in order}


def ranking_table(
    run: ScoredRun, *, ks: Sequence[int] = (1, 5, 10), level: float = 0.95, n_resamples: int = 1000, seed: int = 0
) -> pd.DataFrame:
    """One row per measure: ``value`` with its ``level`` interval, ``queries`` averaged over and ``left out``."""
    values = per_query(run, ks)
    ests = intervals(
        [mean_features(name, v, run.qids, source=run.source) for name, v in values.items()],
        level=level,
        n_resamples=n_resamples,
        seed=seed,
    )
    rows = []
    for (name, v), est in zip(values.items(), ests):
        rows.append(
            {
                "measure": name,
                "value": est.value,
                "value lo": est.low,
                "value hi": est.high,
                "queries": int((~np.isnan(v)).sum()),
                "left out": int(np.isnan(v).sum()),
            }
        )
    return checked(
        "ranking",
        pd.DataFrame(rows),
        keys=("measure",),
        inside=("value",),
        unit=("value",),
        nonneg=("queries", "left out"),
    )
