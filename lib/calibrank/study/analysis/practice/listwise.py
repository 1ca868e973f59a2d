"""A query's candidates as one K-class problem, and the query-level uncertainty signals built on it.

With one relevant candidate and independent pointwise probabilities, the probability that
candidate ``j`` is the relevant one is ``softmax(logit(p))_j``
(:func:`calibrank.methods.listwise.candidate_distribution`).
:func:`query_signals` gives the signals of :data:`SIGNALS` (larger = more uncertain; variances
need S > 1), :func:`listwise_calibration` the top-label ECE (Guo et al. 2017) of that
distribution beside eq. 1 of Penha & Hauff. Derivation: docs/decisions.md, "Candidate distribution".
"""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

from calibrank.methods.listwise import top_label
from calibrank.metrics.calibration import ece, reliability_curve
from calibrank.predictions import Predictions
from calibrank.study.analysis.calibration import default_condition
from calibrank.study.analysis.practice.cells import CELL, debiased_ece, debiased_problems, rows_problems, study_cells
from calibrank.table_checks import TOLERANCE, in_range, raise_problems

__all__ = ["listwise_calibration", "listwise_reliability"]


def _top_label_predictions(pred: Predictions) -> Predictions:
    conf, correct = top_label(pred)
    return Predictions(
        pred.qids,
        correct[:, None].astype(int),
        conf[:, None],
        conf[None, :, None],
        meta={"name": f"{pred.meta.get('name', 'predictions')} (top label)"},
    )


def listwise_calibration(study, rankers: Iterable[str] | None = None, *, n_resamples: int = 1000) -> pd.DataFrame:
    """Pointwise ECE (all candidates) and top-label ECE of the candidate distribution, per ranker x condition.

    Each (eq. 1) with its debiased ECE, 95% bootstrap interval and bias (main training seed;
    :func:`~calibrank.study.analysis.practice.cells.debiased_ece`), beside ``R@1`` and ``mean confidence``
    (confidence above R@1 = over-confident). Raises :class:`~calibrank.table_checks.TableError` when a
    cell has no row, a number leaves its range or a debiased ECE its interval.
    """
    rows = []
    for ranker, tc, cond in study.cells("test", rankers):
        pred = study.get(ranker, tc, cond)
        top = _top_label_predictions(pred)
        row = {
            "ranker": ranker,
            "train_corpus": tc,
            "corpus": cond.corpus,
            "sampler": cond.sampler,
            "shift": study.shift(cond, tc),
            "queries": int(pred.labels.shape[0]),
        }
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


def listwise_reliability(
    study, condition=None, train_corpus: str | None = None, *, n_bins: int = 10, rankers: Iterable[str] | None = None
) -> pd.DataFrame:
    """Reliability buckets of both views on one condition (default: in distribution), one row per
    ranker x view (``pointwise`` / ``top label``) x bucket, as :func:`calibrank.study.analysis.study.reliability_table`."""
    tc = train_corpus or study.train_corpora[0]
    cond = condition or default_condition(study, tc)
    rows = []
    for ranker in rankers if rankers is not None else study.rankers:
        pred = study.get(ranker, tc, cond)
        for view, p in (("pointwise", pred), ("top label", _top_label_predictions(pred))):
            curve = reliability_curve(p.probs, p.labels, n_bins=n_bins)
            for i in range(n_bins):
                rows.append(
                    {
                        "ranker": ranker,
                        "train_corpus": tc,
                        "condition": cond.name,
                        "view": view,
                        "bin": i,
                        "lower": float(curve.bin_edges[i]),
                        "upper": float(curve.bin_edges[i + 1]),
                        "mean_predicted": float(curve.mean_predicted[i]),
                        "fraction_positive": float(curve.fraction_positive[i]),
                        "count": int(curve.counts[i]),
                        "ECE": curve.ece,
                    }
                )
    return pd.DataFrame(rows)
