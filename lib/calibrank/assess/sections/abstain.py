"""Answer with the top candidate or abstain, per query: risk against coverage, and the deployed rule on test.

A query's loss is 1 when its top candidate is not relevant
(:func:`calibrank.assess.deploy.fit.top_loss`). Each list confidence of the calibrator
(:data:`~calibrank.assess.deploy.calibrator.CONFIDENCES`; ``-top var`` too with samples) orders the test
queries, and :mod:`calibrank.study.analysis.practice.selective` gives the risk-coverage curve, AURC,
E-AURC, AUGRC and the risk at 80% coverage with 95% intervals. The rule itself (its confidence
chosen and its cut fitted on validation) is applied through :meth:`Calibrator.abstain` to the
validation queries, where the share it answers is measured rather than taken from what was asked
(lists tied at the cut are all answered, so the share can lie above the request; the share tied
there says why), and to the test queries: the share answered and the top-1 error among them
(Clopper-Pearson; queries are independent).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from calibrank.assess.deploy.calibrator import Calibrator, list_confidence
from calibrank.assess.deploy.fit import raw_scores, top_loss
from calibrank.assess.numbers import pct
from calibrank.assess.read.scored import ScoredRun
from calibrank.assess.sections.selfcheck import checked
from calibrank.methods.proportions import clopper_pearson
from calibrank.methods.selective import COVERAGE, risk_column, risk_coverage, selective_intervals, selective_scores

__all__ = ["abstain_tables", "test_confidences"]


def test_confidences(calibrator: Calibrator, test: ScoredRun) -> dict[str, np.ndarray]:
    """``[Q]`` each confidence on the test queries: the deployed one through :meth:`Calibrator.confidence`, the
    others by the same formula (:func:`~calibrank.assess.deploy.calibrator.list_confidence`; ``list`` only when it is the
    deployed one: its model is kept only then)."""
    s, m = raw_scores(test), test.mask
    p = np.where(m, calibrator.predict_proba(s), 0.0)
    out = {name: list_confidence(name, s, p, m) for name in ("top score", "margin")}
    rule = calibrator.abstain_rule
    out[rule.confidence] = calibrator.confidence(s, m)
    if test.n_samples > 1:
        samples = np.where(m[None], calibrator.predict_proba(test.scores), 0.0)
        first = np.argmax(np.where(m, p, -np.inf), axis=1)
        out["-top var"] = -samples[:, np.arange(len(first)), first].var(axis=0)
    return out


def _rule_row(calibrator: Calibrator, test: ScoredRun, loss: np.ndarray, valid: ScoredRun | None) -> dict:
    rule = calibrator.abstain_rule
    answered = ~np.asarray(calibrator.abstain(raw_scores(test), test.mask))  # an array: test holds many lists
    n, wrong = int(answered.sum()), int(loss[answered].sum())
    lo, hi = clopper_pearson(wrong, n)
    asked = (
        f"answer at least {pct(rule.coverage)} of validation queries"
        if rule.coverage is not None
        else f"top-1 error <= {pct(rule.risk)} among the answered, at confidence {pct(calibrator.cutoff.confidence)}"
    )
    row = {
        "confidence": rule.confidence,
        "cut": rule.cut,
        "asked": asked,
        "asked coverage": np.nan if rule.coverage is None else rule.coverage,
    }
    if valid is not None:
        s, m = raw_scores(valid), valid.mask
        took = ~np.asarray(calibrator.abstain(s, m))
        tied = np.asarray(calibrator.confidence(s, m)) == rule.cut
        row.update(
            {
                "valid queries": int(took.size),
                "valid answered": int(took.sum()),
                "valid coverage": float(took.mean()),
                "valid tied at cut": float(tied.mean()),
            }
        )
    else:
        row.update(
            {"valid queries": np.nan, "valid answered": np.nan, "valid coverage": np.nan, "valid tied at cut": np.nan}
        )
    return {
        **row,
        "test queries": int(loss.size),
        "answered": n,
        "coverage": n / loss.size,
        "risk": wrong / n if n else np.nan,
        "risk lo": lo,
        "risk hi": hi,
        "risk if all answered": float(loss.mean()),
    }


def abstain_tables(
    calibrator: Calibrator,
    test: ScoredRun,
    *,
    valid: ScoredRun | None = None,
    coverage: float = COVERAGE,
    n_resamples: int = 1000,
    seed: int = 0,
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """``(scores, rule, curves)``: per confidence its validation AURC (what chose the deployed one), and on
    test AURC, E-AURC, AUGRC and risk at ``coverage`` with 95% intervals; the deployed rule on ``valid`` (the
    share it answers there, and the share of lists tied at its cut; NaN without ``valid``) and on test; the
    risk-coverage curves (one row per confidence and coverage)."""
    s, m = raw_scores(test), test.mask
    loss = top_loss(s, test.labels, m)
    confs = test_confidences(calibrator, test)
    valid_aurc = calibrator.fitted_on.get("confidence_aurc", {})
    label = risk_column(coverage)
    rows, curves = [], []
    for name, c in confs.items():
        sc = selective_scores(c, loss, coverage=coverage)
        lo, hi = selective_intervals(c, loss, coverage=coverage, seed=seed, n_resamples=n_resamples)
        row = {
            "confidence": name,
            "deployed": name == calibrator.abstain_rule.confidence,
            "valid AURC": float(valid_aurc.get(name, np.nan)),
            "queries": int(loss.size),
        }
        for j, (col, value) in enumerate(
            (("AURC", sc.aurc), ("E-AURC", sc.eaurc), ("AUGRC", sc.augrc), (label, sc.risk_at_coverage))
        ):
            row.update({col: value, f"{col} lo": float(lo[j]), f"{col} hi": float(hi[j])})
        rows.append({**row, "risk": sc.risk})
        curves.append(risk_coverage(c, loss).assign(confidence=name))
    table = checked(
        "abstain", pd.DataFrame(rows), keys=("confidence",), unit=("AURC", "AUGRC", label, "risk"), nonneg=("queries",)
    )
    rule = checked(
        "abstain rule",
        pd.DataFrame([_rule_row(calibrator, test, loss, valid)]),
        keys=("confidence",),
        unit=("coverage", "risk", "valid coverage", "valid tied at cut", "asked coverage"),
        nonneg=("answered", "valid answered"),
    )
    return table, rule, pd.concat(curves, ignore_index=True)
