"""Keep the candidates whose raw score reaches a cutoff: precision and recall against the cutoff, and the certified one.

The curve: for cutoffs across the test scores (every distinct score near the top, then one each
time the kept count grows by a few percent: :func:`~calibrank.assess.deploy.certify.cutoff_grid`),
precision and recall over the test candidates with 95% bootstrap bands over queries (one matrix
product per band set). The row: the cutoff the calibrator certified on the validation queries
(:mod:`calibrank.assess.deploy.certify`), what it kept on validation, the highest level certifiable
at the same confidence, and what it keeps on the test queries, with query-bootstrap intervals.
Recall counts what ``recall_over`` says: every relevant document of the qrels, retrieved or not
(``"qrels"``, trec_eval's recall), or the relevant candidates the run retrieved (``"retrieved"``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from calibrank.assess.deploy.calibrator import Calibrator
from calibrank.assess.deploy.certify import Certificate, cutoff_grid, kept_by_cutoff
from calibrank.assess.deploy.fit import raw_scores
from calibrank.assess.numbers import pct
from calibrank.assess.read.scored import ScoredRun
from calibrank.assess.sections.selfcheck import checked
from calibrank.methods.intervals import bootstrap_interval

__all__ = ["CURVE_POINTS", "RECALL_OVER", "cutoff_row", "threshold_curve"]

CURVE_POINTS = 200
#: What recall counts, as said in the tables and on the page.
RECALL_OVER = {"qrels": "every relevant document of the qrels", "retrieved": "the relevant candidates retrieved"}


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def _bands(
    kept: np.ndarray, hits: np.ndarray, rel: np.ndarray, *, level: float, n_resamples: int, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """``(lo, hi)`` each ``[2, T]``: precision and recall bands over query resamples."""
    n_q, n_t = kept.shape

    def statistic(idx, axis=-1):
        idx = np.moveaxis(np.asarray(idx), axis, -1).astype(np.int64)
        b = idx.shape[0]
        counts = np.bincount((idx + n_q * np.arange(b)[:, None]).ravel(), minlength=b * n_q).reshape(b, n_q) * 1.0
        k, h, r = counts @ kept, counts @ hits, counts @ rel
        return np.concatenate([_ratio(h, k).T, _ratio(h, r[:, None]).T])

    lo, hi = bootstrap_interval(
        (np.arange(n_q),), statistic, paired=True, seed=seed, n_resamples=n_resamples, level=level
    )
    return lo.reshape(2, n_t), hi.reshape(2, n_t)


def _relevant(run: ScoredRun, rel: np.ndarray, recall_over: str) -> np.ndarray:
    """``[Q]`` recall's denominator per query: the qrels' relevant documents, or the relevant candidates ``rel``."""
    if recall_over not in RECALL_OVER:
        raise ValueError(f"recall_over: expected one of {', '.join(RECALL_OVER)}, got {recall_over!r}")
    return np.asarray(run.n_relevant, dtype=np.float64) if recall_over == "qrels" else rel


def threshold_curve(
    test: ScoredRun,
    calibrator: Calibrator,
    *,
    recall_over: str,
    points: int = CURVE_POINTS,
    level: float = 0.95,
    n_resamples: int = 1000,
    seed: int = 0,
) -> pd.DataFrame:
    """One row per raw-score cutoff across the test scores: its ``probability`` under the calibrator's map,
    ``kept`` candidates, ``precision`` and ``recall`` (over what ``recall_over`` names, said in ``recall over``)
    with their bands (NaN: none kept)."""
    s, y, m = raw_scores(test), test.labels, test.mask
    grid = cutoff_grid(s[m], points)
    kept, hits, rel = kept_by_cutoff(s, y, m, grid)
    rel = _relevant(test, rel, recall_over)
    lo, hi = _bands(kept, hits, rel, level=level, n_resamples=n_resamples, seed=seed)
    k, h, r = kept.sum(axis=0), hits.sum(axis=0), rel.sum()
    table = pd.DataFrame(
        {
            "cutoff": grid,
            "probability": calibrator.predict_proba(grid),
            "kept": k.astype(np.int64),
            "precision": _ratio(h, k),
            "precision lo": lo[0],
            "precision hi": hi[0],
            "recall": _ratio(h, np.full(grid.size, r)),
            "recall lo": lo[1],
            "recall hi": hi[1],
            "recall over": recall_over,
        }
    )
    return checked(
        "thresholds",
        table,
        keys=("cutoff",),
        inside=("precision", "recall"),
        unit=("precision", "recall", "probability"),
        nonneg=("kept",),
    )


def _note(cert: Certificate, calibrator: Calibrator) -> str:
    c = calibrator.cutoff
    over = f" (over {RECALL_OVER[cert.recall_over]})" if c.metric == "recall" else ""
    what = f"{c.metric}{over} >= {pct(c.target)} at confidence {pct(c.confidence)}"
    if c.certified:
        return f"certified on {cert.valid_queries} validation queries: {what}, for queries drawn like them"
    if cert.unreachable:
        return (
            f"{what} cannot be reached: the run never retrieved {cert.missed} of the relevant documents the "
            f"qrels hold for the {cert.valid_queries} validation queries, so keeping every candidate gives the "
            f"best attainable recall, {pct(cert.max_value)}; no cutoff is certified, and only a deeper run "
            f"would reach the target"
        )
    if cert.too_few:
        return (
            f"the validation set is too small for the guarantee: {what} needs at least {cert.min_kept} kept "
            f"candidates even with no error, and the {cert.valid_queries} validation queries hold "
            f"{cert.candidates}"
        )
    best = (
        f"the highest level certifiable at {pct(c.confidence)} confidence is {pct(c.best_level)}"
        if c.best_raw is not None
        else f"no level can be certified at {pct(c.confidence)} confidence"
    )
    if not cert.separation:
        enough = f" that keeps at least {cert.min_kept} candidates" if c.metric == "precision" else ""
        return (
            f"no clean separation: no cutoff{enough} reaches {c.metric}{over} {pct(c.target)} even on the "
            f"validation candidates (the best is {pct(cert.max_value)}), so more validation queries would not "
            f"help, only a better ranker; {best}"
        )
    more = (
        f"; about {cert.queries_needed} validation queries like these would certify it" if cert.queries_needed else ""
    )
    return f"{what} is not certified on {cert.valid_queries} validation queries: {best}{more}"


def cutoff_row(
    cert: Certificate,
    calibrator: Calibrator,
    test: ScoredRun,
    *,
    level: float = 0.95,
    n_resamples: int = 1000,
    seed: int = 0,
) -> pd.DataFrame:
    """One row: the certified cutoff and its guarantee, what it kept on validation, and on the test queries
    (``calibrator.keep`` of their raw scores) precision and recall (over what ``cert.recall_over`` names, as the
    certificate's, said in ``recall over``) with query-bootstrap intervals."""
    c = calibrator.cutoff
    row = {
        "metric": c.metric,
        "recall over": cert.recall_over,
        "target": c.target,
        "confidence": c.confidence,
        "certified": c.certified,
        "cutoff": np.nan if c.raw is None else c.raw,
        "probability": np.nan if c.probability is None else c.probability,
        "map": calibrator.map.method,
        "valid queries": cert.valid_queries,
        "valid kept": cert.valid_kept,
        "valid value": cert.valid_value,
        "best level": c.best_level,
        "best cutoff": np.nan if c.best_raw is None else c.best_raw,
        "queries needed": np.nan if cert.queries_needed is None else float(cert.queries_needed),
        "valid best value": cert.max_value,
        "separation": cert.separation,
    }
    s, y, m = raw_scores(test), test.labels.astype(bool), test.mask
    if c.certified:
        keep = calibrator.keep(s) & m
        kept, hits = keep.sum(axis=1) * 1.0, (keep & y).sum(axis=1) * 1.0
        rel = _relevant(test, (y & m).sum(axis=1) * 1.0, cert.recall_over)
        lo, hi = _bands(kept[:, None], hits[:, None], rel, level=level, n_resamples=n_resamples, seed=seed)
        row.update(
            {
                "test kept": int(kept.sum()),
                "precision": _ratio(hits.sum(), kept.sum()).item(),
                "precision lo": lo[0, 0],
                "precision hi": hi[0, 0],
                "recall": _ratio(hits.sum(), rel.sum()).item(),
                "recall lo": lo[1, 0],
                "recall hi": hi[1, 0],
            }
        )
    else:
        row.update(
            {
                "test kept": 0,
                **{
                    k: np.nan for k in ("precision", "precision lo", "precision hi", "recall", "recall lo", "recall hi")
                },
            }
        )
    row["note"] = _note(cert, calibrator)
    return checked(
        "threshold",
        pd.DataFrame([row]),
        keys=("cutoff",),
        inside=("precision", "recall"),
        unit=("precision", "recall", "valid value", "best level"),
        nonneg=("test kept", "valid kept"),
    )
