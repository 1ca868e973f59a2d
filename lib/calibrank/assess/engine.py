"""Judge any ranker's scores: :func:`assess` fits a :class:`Calibrator` on ``valid`` and runs every section on ``test``.

Each section calls the library's own functions on Predictions built from the run, so a study
ranker converted to a ScoredRun gets the study's numbers. Everything fitted (the map, the
certified cutoff, the abstain rule, the conformal quantile, ``b``) is fitted on ``valid`` and
reported on ``test``; the threshold, abstain and shortlist sections apply the calibrator itself,
so ``calibrator.json`` applied to the test run gives the page's numbers.
"""

from __future__ import annotations

import dataclasses
import numbers
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypedDict

import numpy as np
import pandas as pd

from calibrank.assess.deploy.calibrator import Calibrator
from calibrank.assess.deploy.fit import fit_parts
from calibrank.assess.numbers import csv_frame
from calibrank.assess.options import Settings, resolve
from calibrank.assess.read.scored import AssessError, ScoredRun
from calibrank.assess.sections import abstain, headlines, ranking, reliability, shortlists, thresholds
from calibrank.assess.sections import reranking as risk_aware
from calibrank.assess.sections.selfcheck import checked

__all__ = ["Assessment", "assess"]


@dataclasses.dataclass(frozen=True, eq=False)
class Assessment:
    """Every table of one assessment and the fitted :class:`Calibrator`.

    Each table is checked where it was built (:mod:`calibrank.assess.sections.selfcheck`); the page of
    ``calibrank assess`` shows them, :meth:`save` writes them as CSV and :meth:`finding` reads a
    section's sentence.

    Parameters
    ----------
    summary, ranking, calibration, reliability, thresholds, threshold : pandas.DataFrame
        One table per section, on the test queries (``summary``: both inputs).
    abstain, abstain_rule, risk_coverage, conformal, risk_aware, findings : pandas.DataFrame
        The same, for the later sections.
    calibrator : Calibrator
        What was fitted on the validation queries.

    Examples
    --------
    >>> import numpy as np
    >>> from calibrank.assess.options import Settings
    >>> from calibrank.assess.read.scored import ScoredRun
    >>> rng = np.random.default_rng(0)
    >>> y = (rng.random((80, 10)) < 0.2).astype(int)           # 80 queries, 10 candidates each
    >>> s = 3 * y + rng.normal(size=y.shape)                    # raw scores, any scale
    >>> run = ScoredRun(qids=np.arange(80), docids=np.tile(np.arange(10), (80, 1)), mask=np.ones(y.shape, bool),
    ...                 scores=s[None], relevance=y, judged=np.ones(y.shape, bool), n_relevant=y.sum(axis=1))
    >>> a = assess(run.subset(np.arange(40, 80)), run.subset(np.arange(40)), Settings(n_resamples=50))
    >>> list(a.ranking["measure"])
    ['R@1', 'R@5', 'R@10', 'P@1', 'MRR', 'nDCG@10', 'MAP']
    >>> a.finding("ranking").startswith("On ")
    True
    """

    summary: pd.DataFrame
    ranking: pd.DataFrame
    calibration: pd.DataFrame
    reliability: pd.DataFrame
    thresholds: pd.DataFrame
    threshold: pd.DataFrame
    abstain: pd.DataFrame
    abstain_rule: pd.DataFrame
    risk_coverage: pd.DataFrame
    conformal: pd.DataFrame
    risk_aware: pd.DataFrame
    findings: pd.DataFrame
    calibrator: Calibrator

    def __post_init__(self) -> None:
        for name in self.tables():
            if not isinstance(getattr(self, name), pd.DataFrame):
                raise TypeError(f"Assessment.{name} must be a DataFrame; got {type(getattr(self, name)).__name__}")
        if not isinstance(self.calibrator, Calibrator):
            raise TypeError(f"Assessment.calibrator must be a Calibrator; got {type(self.calibrator).__name__}")

    def tables(self) -> dict[str, pd.DataFrame]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "calibrator"}

    def finding(self, section: str) -> str:
        """The sentence of ``section`` (one of :data:`calibrank.assess.sections.headlines.SECTIONS`)."""
        rows = self.findings[self.findings["section"] == section]
        if rows.empty:
            raise KeyError(f"section must be one of {list(self.findings['section'])}; got {section!r}")
        return str(rows["finding"].iloc[0])

    def save(self, out_dir: str | os.PathLike) -> list[Path]:
        """Write every table to ``out_dir/<name>.csv`` (counts as integers, no float noise:
        :func:`calibrank.assess.numbers.csv_frame`); returns the paths."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        paths = []
        for name, df in self.tables().items():
            path = out / f"{name}.csv"
            csv_frame(df).to_csv(path, index=False)
            paths.append(path)
        return paths


class _Bootstrap(TypedDict):
    """The query bootstrap that every section's intervals share."""

    level: float
    n_resamples: int
    seed: int


def _check_k(k: Sequence[int]) -> tuple[int, ...]:
    ks = tuple(k)
    if not ks or any(isinstance(x, bool) or not isinstance(x, numbers.Integral) or x < 1 for x in ks):
        raise AssessError(f"k: expected positive integer cut-offs, got {k!r}")
    return ks


def _check_pair(test: ScoredRun, valid: ScoredRun) -> None:
    for name, run in (("test", test), ("valid", valid)):
        if not isinstance(run, ScoredRun):
            raise AssessError(f"{name}: expected a ScoredRun, got {type(run).__name__}")
    if test.kind is not valid.kind:
        raise AssessError(
            f"valid: its scores are {valid.kind.value} but test's are {test.kind.value}; both must be of one kind"
        )
    if test.relevant_at != valid.relevant_at:
        raise AssessError(f"valid: relevant_at {valid.relevant_at} differs from test's {test.relevant_at}")
    shared = np.intersect1d(test.qids, valid.qids)
    if shared.size:
        raise AssessError(
            f"valid: {shared.size} queries are also test queries (first: {shared[0]!r}); "
            "a number fitted on them would be shown as a test number"
        )
    if not valid.labels.any():
        raise AssessError(f"valid ({valid.source}): no candidate is relevant; nothing can be fitted on it")
    if valid.labels.all():
        raise AssessError(f"valid ({valid.source}): every candidate is relevant; nothing can be fitted on it")


def _summary(test: ScoredRun, valid: ScoredRun, notes: Sequence[str]) -> pd.DataFrame:
    rows = []
    for name, run in (("test", test), ("valid", valid)):
        lengths = run.mask.sum(axis=1)
        rows.append(
            {
                "split": name,
                "source": run.source,
                "kind": run.kind.value,
                "samples": run.n_samples,
                "queries": int(run.qids.size),
                "candidates": int(lengths.sum()),
                "shortest list": int(lengths.min()),
                "longest list": int(lengths.max()),
                "relevant candidates": int(run.labels.sum()),
                "queries without a relevant candidate": int((~run.answerable).sum()),
                "judged share": run.judged_fraction,
                "relevant_at": run.relevant_at,
                "notes": "\n".join(notes),
            }
        )
    return checked(
        "summary", pd.DataFrame(rows), keys=("split",), unit=("judged share",), nonneg=("queries", "candidates")
    )


def assess(
    test: ScoredRun,
    valid: ScoredRun,
    settings: Settings | None = None,
    *,
    k: Sequence[int] = (1, 5, 10),
    notes: Sequence[str] = (),
    inputs: Sequence[str | os.PathLike] = (),
    **given: Any,
) -> Assessment:
    """Judge a ranker's scores: every section on ``test``, with the calibrator fitted on ``valid``.

    Ranking quality, calibration before and after the map, the certified cutoff, abstention,
    conformal shortlists and risk-aware ranking, each with bootstrap intervals over test
    queries. What is fitted is fitted on ``valid`` only, so the test numbers are what a
    deployment would see.

    Parameters
    ----------
    test, valid : ScoredRun
        The queries to judge on and the queries to fit on (no query in both).
    settings : Settings, default=None
        What is fitted and how it is judged (:class:`~calibrank.assess.options.Settings`, checked where built;
        its defaults when None).
    **given
        The settings as keywords instead (``precision=0.8``), checked the same way.
    k : sequence of int, default=(1, 5, 10)
        Recall cut-offs.
    notes : sequence of str, default=()
        Sentences about the inputs, shown with the summary.
    inputs : sequence of paths, default=()
        The validation files, hashed into the calibrator's provenance.

    Returns
    -------
    Assessment

    Examples
    --------
    >>> import numpy as np
    >>> from calibrank.assess.options import Settings
    >>> from calibrank.assess.read.scored import ScoredRun
    >>> rng = np.random.default_rng(0)
    >>> y = (rng.random((80, 10)) < 0.2).astype(int)           # 80 queries, 10 candidates each
    >>> s = 3 * y + rng.normal(size=y.shape)                    # raw scores, any scale
    >>> run = ScoredRun(qids=np.arange(80), docids=np.tile(np.arange(10), (80, 1)), mask=np.ones(y.shape, bool),
    ...                 scores=s[None], relevance=y, judged=np.ones(y.shape, bool), n_relevant=y.sum(axis=1))
    >>> a = assess(run.subset(np.arange(40, 80)), run.subset(np.arange(40)), Settings(n_resamples=50), k=(1, 5))
    >>> a.summary[["split", "queries"]].values.tolist()
    [['test', 40], ['valid', 40]]
    >>> a.calibrator.fitted_on["queries"]
    40
    """
    settings = resolve(settings, given, "assess")
    ks = _check_k(k)
    _check_pair(test, valid)
    seed, n_resamples, alpha = settings.seed, settings.n_resamples, settings.alpha
    boot: _Bootstrap = {"level": settings.level, "n_resamples": n_resamples, "seed": seed}
    cal, cert = fit_parts(valid, settings, inputs=inputs)
    summary = _summary(test, valid, notes)
    rank = ranking.ranking_table(test, ks=ks, **boot)
    deployed = reliability.deployed_view(cal.map)
    calib, buckets = reliability.calibration_tables(
        reliability.views(test, valid, cal.map, seed=seed), test.kind, deployed=deployed, **boot
    )
    curve = thresholds.threshold_curve(test, cal, recall_over=settings.recall_over, **boot)
    cut = thresholds.cutoff_row(cert, cal, test, **boot)
    scores, rule, curves = abstain.abstain_tables(cal, test, valid=valid, n_resamples=n_resamples, seed=seed)
    valid_pred, test_pred = reliability.mapped(valid, cal.map, deployed), reliability.mapped(test, cal.map, deployed)
    alphas = sorted({0.05, 0.1, 0.2, float(alpha)})
    sets = shortlists.conformal_table(valid_pred, test_pred, alphas)
    sets.insert(1, "deployed", np.isclose(sets["alpha"], alpha))
    risk_table = risk_aware.risk_aware(valid_pred, test_pred)
    found = headlines.findings(
        rank, calib, cut, scores, rule, sets, risk_table, map_name=deployed, map_given=settings.map != "auto"
    )
    return Assessment(summary, rank, calib, buckets, curve, cut, scores, rule, curves, sets, risk_table, found, cal)
