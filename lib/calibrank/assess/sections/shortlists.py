"""Conformal shortlists: a set of each query's candidates that holds a relevant one with probability >= 1 - alpha.

Split conformal with the LAC score (:mod:`calibrank.study.analysis.practice.conformal`) on each query's
``softmax(logit(p))`` over its own list; a query's calibration score is the smallest among its
relevant candidates, so the set holds at least one. Calibrated on validation queries with a
relevant candidate, reported on test: coverage (95% Clopper-Pearson), set size, empty sets, and
where some test queries have no relevant candidate, an empty set read as "none of the above".
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from calibrank.assess.sections.selfcheck import checked
from calibrank.methods.conformal import candidate_scores, conformal_quantile, prediction_sets
from calibrank.methods.listwise import candidate_distribution
from calibrank.methods.proportions import clopper_pearson
from calibrank.predictions import Predictions

__all__ = ["calibration_scores", "conformal_table"]


def calibration_scores(pred: Predictions) -> np.ndarray:
    """``[n]`` the smallest LAC score of a relevant candidate, for each query that has one."""
    scores = candidate_scores(candidate_distribution(pred.probs, pred.mask), "LAC")
    y = pred.labels.astype(bool)
    return np.where(y, scores, np.inf).min(axis=1)[y.any(axis=1)]


def _share(mask: np.ndarray) -> float:
    return float(mask.mean()) if mask.size else float("nan")


def conformal_table(valid: Predictions, test: Predictions, alphas: Sequence[float]) -> pd.DataFrame:
    """One row per ``alpha``: ``qhat`` from ``valid``, coverage, set size and the empty set as NOTA on ``test``."""
    cal = calibration_scores(valid)
    pi = candidate_distribution(test.probs, test.mask)
    y = test.labels.astype(bool)
    answerable = y.any(axis=1)
    rows = []
    for alpha in alphas:
        row = {
            "alpha": alpha,
            "target": 1.0 - alpha,
            "valid queries": int(cal.size),
            "test queries": int(y.shape[0]),
            "NOTA queries": int((~answerable).sum()),
        }
        try:
            qhat = conformal_quantile(cal, alpha)
        except ValueError as exc:  # too few calibration queries for this alpha
            rows.append({**row, "qhat": np.nan, "note": f"{exc}: the guarantee cannot hold"})
            continue
        sets = prediction_sets(pi, qhat, "LAC", test.mask)
        size = sets.sum(axis=1)
        hit = (sets & y).any(axis=1)[answerable]
        lo, hi = clopper_pearson(int(hit.sum()), int(hit.size))
        rows.append(
            {
                **row,
                "qhat": qhat,
                "coverage": _share(hit),
                "coverage lo": lo,
                "coverage hi": hi,
                "mean set size": float(size.mean()),
                "empty sets": int((size == 0).sum()),
                "false NOTA": _share(size[answerable] == 0),
                "NOTA recall": _share(size[~answerable] == 0),
                "note": "",
            }
        )
    return checked(
        "conformal",
        pd.DataFrame(rows),
        keys=("alpha",),
        inside=("coverage",),
        unit=("coverage", "false NOTA", "NOTA recall"),
        nonneg=("mean set size", "empty sets"),
    )
