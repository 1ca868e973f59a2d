"""Judge any ranker's scores: :func:`assess` runs every analysis of the study on a :class:`ScoredRun`.

Each section calls the library's own functions on Predictions built from the run, so a study
ranker converted to a ScoredRun gets the study's numbers. Everything fitted (recalibration
maps, thresholds, conformal quantiles, ``b``) is fitted on ``valid`` and reported on ``test``.
Later sections read the working probabilities (:func:`calibrank.assess.calibration.working`).
"""

from __future__ import annotations

import dataclasses
import numbers
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from ..runs import atomic_path
from . import abstain, calibration, conformal, findings, ranking, thresholds, uncertainty
from .scored import AssessError, ScoredRun
from .selfcheck import checked

__all__ = ["Assessment", "assess"]


@dataclasses.dataclass(frozen=True, eq=False)
class Assessment:
    """Every table of one assessment (each checked where it was built); :meth:`save` writes them as CSV."""

    summary: pd.DataFrame
    ranking: pd.DataFrame
    calibration: pd.DataFrame
    reliability: pd.DataFrame
    thresholds: pd.DataFrame
    threshold: pd.DataFrame
    abstain: pd.DataFrame
    risk_coverage: pd.DataFrame
    conformal: pd.DataFrame
    risk_aware: pd.DataFrame
    findings: pd.DataFrame

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            if not isinstance(getattr(self, f.name), pd.DataFrame):
                raise TypeError(f"Assessment.{f.name} must be a DataFrame; got {type(getattr(self, f.name)).__name__}")

    def tables(self) -> dict[str, pd.DataFrame]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    def finding(self, section: str) -> str:
        """The sentence of ``section`` (one of :data:`calibrank.assess.findings.SECTIONS`)."""
        rows = self.findings[self.findings["section"] == section]
        if rows.empty:
            raise KeyError(f"section must be one of {list(self.findings['section'])}; got {section!r}")
        return str(rows["finding"].iloc[0])

    def save(self, out_dir: str | os.PathLike) -> list[Path]:
        """Write every table to ``out_dir/<name>.csv``, each atomically; returns the paths."""
        out = Path(out_dir)
        paths = []
        for name, df in self.tables().items():
            path = out / f"{name}.csv"
            with atomic_path(path) as tmp:
                df.to_csv(tmp, index=False)
            paths.append(path)
        return paths


def _check_args(seed, n_resamples, level, alpha, delta, k) -> tuple[int, ...]:
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise AssessError(f"seed: expected a non-negative integer, got {seed!r}")
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, numbers.Integral) or n_resamples < 2:
        raise AssessError(f"n_resamples: expected an integer >= 2, got {n_resamples!r}")
    for name, v in (("level", level), ("alpha", alpha), ("delta", delta)):
        if isinstance(v, bool) or not isinstance(v, numbers.Real) or not 0.0 < float(v) < 1.0:
            raise AssessError(f"{name}: expected a number strictly between 0 and 1, got {v!r}")
    ks = tuple(k)
    if not ks or any(isinstance(x, bool) or not isinstance(x, numbers.Integral) or x < 1 for x in ks):
        raise AssessError(f"k: expected positive integer cut-offs, got {k!r}")
    return ks


def _check_pair(test: ScoredRun, valid: ScoredRun) -> None:
    for name, run in (("test", test), ("valid", valid)):
        if not isinstance(run, ScoredRun):
            raise AssessError(f"{name}: expected a ScoredRun, got {type(run).__name__}")
    if test.kind is not valid.kind:
        raise AssessError(f"valid: its scores are {valid.kind.value} but test's are {test.kind.value}; "
                          "both must be of one kind")
    if test.relevant_at != valid.relevant_at:
        raise AssessError(f"valid: relevant_at {valid.relevant_at} differs from test's {test.relevant_at}")
    shared = np.intersect1d(test.qids, valid.qids)
    if shared.size:
        raise AssessError(f"valid: {shared.size} queries are also test queries (first: {shared[0]!r}); "
                          "a number fitted on them would be shown as a test number")
    if not valid.labels.any():
        raise AssessError(f"valid ({valid.source}): no candidate is relevant; nothing can be fitted on it")
    if valid.labels.all():
        raise AssessError(f"valid ({valid.source}): every candidate is relevant; nothing can be fitted on it")


def _summary(test: ScoredRun, valid: ScoredRun, notes: Sequence[str]) -> pd.DataFrame:
    rows = []
    for name, run in (("test", test), ("valid", valid)):
        lengths = run.mask.sum(axis=1)
        rows.append({"split": name, "source": run.source, "kind": run.kind.value, "samples": run.n_samples,
                     "queries": int(run.qids.size), "candidates": int(lengths.sum()),
                     "shortest list": int(lengths.min()), "longest list": int(lengths.max()),
                     "relevant candidates": int(run.labels.sum()), "queries without a relevant candidate":
                     int((~run.answerable).sum()), "judged share": run.judged_fraction,
                     "relevant_at": run.relevant_at, "notes": "\n".join(notes)})
    return checked("summary", pd.DataFrame(rows), keys=("split",), unit=("judged share",),
                   nonneg=("queries", "candidates"))


def assess(test: ScoredRun, valid: ScoredRun, *, seed: int = 0, n_resamples: int = 1000, level: float = 0.95,
           alpha: float = 0.1, delta: float = 0.1, k: Sequence[int] = (1, 5, 10), notes: Sequence[str] = ()) -> Assessment:
    """Every section on ``test``, with what is fitted fitted on ``valid``.

    ``level``: the bootstrap intervals' confidence; ``alpha``: the shortlists' miscoverage and
    ``1 -`` the certified precision, at confidence ``1 - delta``; ``k``: recall cut-offs; ``seed``
    seeds every resampling.
    """
    ks = _check_args(seed, n_resamples, level, alpha, delta, k)
    _check_pair(test, valid)
    boot = {"level": level, "n_resamples": int(n_resamples), "seed": int(seed)}
    summary = _summary(test, valid, notes)
    rank = ranking.ranking_table(test, ks=ks, **boot)
    work = calibration.working(test.kind)
    calib, reliability, kept = calibration.calibration_tables(
        calibration.views(test, valid, keep=(work,), seed=int(seed)), test.kind, keep=(work,), **boot)
    view = kept[work]
    curve = thresholds.threshold_curve(view.test, **boot)
    ltt = thresholds.ltt_row(view.valid, view.test, alpha=alpha, delta=delta, probabilities=work)
    scores, curves = abstain.abstain_tables(view.valid, view.test, n_resamples=int(n_resamples), seed=int(seed))
    alphas = sorted({0.05, 0.1, 0.2, float(alpha)})
    shortlists = conformal.conformal_table(view.valid, view.test, alphas)
    risk = uncertainty.risk_aware(view.valid, view.test)
    found = findings.findings(rank, calib, ltt, scores, shortlists, risk, alpha=alpha)
    return Assessment(summary, rank, calib, reliability, curve, ltt, scores, curves, shortlists, risk, found)
