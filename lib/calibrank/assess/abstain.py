"""Answer with the top candidate or abstain, per query: risk against coverage for several confidences.

A query's loss is 1 when its top candidate is not relevant; each confidence orders the queries
and :mod:`calibrank.analysis.practice.selective` gives the risk-coverage curve, AURC, E-AURC, AUGRC and
the risk at 80% coverage with 95% intervals. Confidences: ``top prob``, ``margin``, ``-top var``
(S > 1), and ``list``, a logistic regression on the sorted top probabilities fitted on
validation queries (after Gisserot-Boukhlef et al. 2024).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.linear_model import LogisticRegression

from ..analysis.practice.selective import (
    COVERAGE,
    confidences,
    risk_column,
    risk_coverage,
    selective_intervals,
    selective_scores,
)
from ..predictions import Predictions
from .selfcheck import checked

__all__ = ["LIST", "M_MAX", "abstain_tables", "list_features"]

LIST = "list"
M_MAX = 10


def list_features(pred: Predictions, m: int) -> np.ndarray:
    """``[Q, m]`` each query's ``m`` largest probabilities, in decreasing order (padded slots hold 0 and come last)."""
    k = pred.probs.shape[1]
    part = -np.partition(-pred.probs, m - 1, axis=1)[:, :m] if m < k else pred.probs
    return -np.sort(-part, axis=1)[:, :m]


def _list_confidence(valid: Predictions, test: Predictions, valid_loss: np.ndarray) -> tuple[np.ndarray | None, str]:
    m = int(min(valid.lengths.min(), test.lengths.min(), M_MAX))
    y = (valid_loss == 0).astype(int)
    if np.unique(y).size < 2:
        return None, "list: every validation query is answered rightly (or every one wrongly); nothing to fit"
    lr = LogisticRegression(C=1e4, max_iter=1000).fit(list_features(valid, m), y)
    return lr.predict_proba(list_features(test, m))[:, 1], f"list: logistic regression on the top {m} probabilities"


def abstain_tables(valid: Predictions, test: Predictions, *, coverage: float = COVERAGE, n_resamples: int = 1000,
                   seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(scores, curves)``: per confidence, AURC, E-AURC, AUGRC and risk at ``coverage`` with intervals and the
    full-coverage ``risk``; the risk-coverage curves (one row per confidence and coverage). Intervals are
    95% (:data:`calibrank.analysis.practice.intervals.LEVEL`)."""
    conf, loss = confidences(test)
    _, valid_loss = confidences(valid)
    listed, note = _list_confidence(valid, test, valid_loss)
    named = {"top prob": conf["top prob"].to_numpy(), "margin": conf["margin"].to_numpy()}
    if listed is not None:
        named[LIST] = listed
    if test.n_samples > 1:
        named["-top var"] = conf["-top var"].to_numpy()
    label = risk_column(coverage)
    rows, curves = [], []
    for name, c in named.items():
        if not np.isfinite(c).all():  # a one-candidate list set has no margin
            continue
        s = selective_scores(c, loss, coverage=coverage)
        lo, hi = selective_intervals(c, loss, coverage=coverage, seed=seed, n_resamples=n_resamples)
        row = {"confidence": name, "queries": int(loss.size)}
        for j, (col, value) in enumerate((("AURC", s.aurc), ("E-AURC", s.eaurc), ("AUGRC", s.augrc),
                                          (label, s.risk_at_coverage))):
            row.update({col: value, f"{col} lo": float(lo[j]), f"{col} hi": float(hi[j])})
        rows.append({**row, "risk": s.risk, "note": note if name == LIST else ""})
        curves.append(risk_coverage(c, loss).assign(confidence=name))
    if listed is None:
        rows.append({"confidence": LIST, "queries": int(loss.size), "note": note})
    table = checked("abstain", pd.DataFrame(rows), keys=("confidence",),
                    unit=("AURC", "AUGRC", label, "risk"), nonneg=("queries",))
    return table, pd.concat(curves, ignore_index=True)
