"""The Python entry points: :func:`fit` a :class:`Calibrator` and :func:`evaluate` a ranker into a :class:`Report`.

Both take what a user has, as scikit-learn and MAPIE users pass it: arrays or lists (``scores``,
``relevance``, ``query_ids``), a DataFrame, ranx's ``Run`` with its ``Qrels``, or ir_measures'
``ScoredDoc`` and ``Qrel`` tuples; the settings are keywords of :class:`~calibrank.assess.options.Settings`,
checked once where they are built. ``calibrank.fit`` and ``calibrank.evaluate`` are these functions.
"""

from __future__ import annotations

import dataclasses
import inspect
import os
from pathlib import Path
from typing import Any

import pandas as pd

from calibrank.assess.deploy.calibrator import Calibrator
from calibrank.assess.deploy.fit import fit_calibrator
from calibrank.assess.engine import Assessment, assess
from calibrank.assess.errors import AssessError
from calibrank.assess.options import Settings, check_out, settings_from
from calibrank.assess.page.publish import publish
from calibrank.assess.page.render import render
from calibrank.assess.read.load import load
from calibrank.assess.read.score_tables import (
    from_arrays,
    from_dataframe,
    from_ir_measures,
    from_ranx,
    is_frame,
    is_ir_measures,
    is_ranx,
)
from calibrank.assess.read.scored import ScoredRun

__all__ = ["Report", "evaluate", "fit"]


def _scored(scores: Any, relevance: Any, query_ids: Any, docids: Any, settings: Settings, name: str) -> ScoredRun:
    """What a user has as a :class:`ScoredRun`: arrays, a DataFrame or a ranx ``Run`` (judged by ``relevance``:
    its qrels, when it has no label column) or ir_measures tuples."""
    kind, relevant_at = settings.score, settings.relevant_at
    if isinstance(scores, ScoredRun):
        return scores
    if is_frame(scores) or is_ranx(scores, "Run"):
        if query_ids is not None or docids is not None:
            raise AssessError(
                f"query_ids: a {type(scores).__name__} carries its own query ids; expected none beside it"
            )
        read = from_dataframe if is_frame(scores) else from_ranx
        return read(scores, qrels=relevance, kind=kind, relevant_at=relevant_at, name=name)
    if is_ir_measures(scores, ("query_id", "doc_id", "score")):
        return from_ir_measures(scores, relevance, kind=kind, relevant_at=relevant_at, name=name)
    if relevance is None or query_ids is None:
        raise AssessError("relevance, query_ids: arrays of scores need the grade and the query of each candidate")
    return from_arrays(scores, relevance, query_ids, docids, kind=kind, relevant_at=relevant_at, name=name)


def _valid(valid: Any, settings: Settings) -> ScoredRun | None:
    if valid is None:
        return None
    if isinstance(valid, tuple) and not is_ir_measures(valid, ("query_id",)):
        if not 1 <= len(valid) <= 4:
            raise AssessError(
                "valid: expected (scores, relevance, query_ids[, docids]), a DataFrame, a ranx "
                f"(Run, Qrels) pair or a ScoredRun; got a tuple of {len(valid)}"
            )
        scores, relevance, query_ids, docids = list(valid) + [None] * (4 - len(valid))
        return _scored(scores, relevance, query_ids, docids, settings, "valid")
    return _scored(valid, None, None, None, settings, "valid")


def fit(
    scores: Any, relevance: Any = None, query_ids: Any = None, *, docids: Any = None, **settings: Any
) -> Calibrator:
    """Fit what to deploy on validation queries: a map to probabilities, a certified cutoff and an abstain rule.

    Everything is fitted on the queries given here (use other queries to judge it: :func:`evaluate`).

    Parameters
    ----------
    scores : array-like of shape (N,) or (S, N), DataFrame, ranx.Run or list of ir_measures ScoredDoc
        The ranker's raw scores, one per candidate (``S`` samples of each: MC Dropout passes, ensemble members).
    relevance : array-like of int of shape (N,), or the qrels of a DataFrame, ranx.Run or ScoredDoc list
        Grades; a candidate is relevant from ``relevant_at`` up.
    query_ids : array-like of shape (N,), default=None
        The query of each candidate (arrays only).
    docids : array-like of shape (N,), default=None
        Candidate ids, unique within a query (arrays only; default: the position in the query).
    **settings
        Any of :class:`~calibrank.assess.options.Settings`: ``precision`` or ``recall`` (the cutoff's target),
        ``confidence``, ``coverage`` or ``risk`` (the abstain rule), ``alpha``, ``map``, ``score``,
        ``relevant_at``, ``seed``. An unknown or bad one is refused before any work.

    Returns
    -------
    Calibrator

    Examples
    --------
    >>> import numpy as np
    >>> import calibrank
    >>> rng = np.random.default_rng(0)
    >>> qids = np.repeat(np.arange(200), 10)                          # 200 queries, 10 candidates each
    >>> rel = (rng.random(qids.size) < 0.2).astype(int)
    >>> scores = 3 * rel + rng.normal(size=qids.size)                  # raw scores, any scale
    >>> cal = calibrank.fit(scores, rel, qids, precision=0.8)
    >>> cal.cutoff.certified, cal.cutoff.target
    (True, 0.8)
    >>> kept = cal.keep(scores)                                        # the certified cutoff, in raw units
    >>> try:
    ...     calibrank.fit(scores, rel, qids, precison=0.8)            # a mistyped option, refused before any work
    ... except calibrank.OptionError as error:
    ...     print(str(error).split(";")[0])
    precison: not an option of calibrank.fit (did you mean precision?)
    """
    chosen = settings_from(settings, "calibrank.fit")
    return fit_calibrator(_scored(scores, relevance, query_ids, docids, chosen, "scores"), chosen)


@dataclasses.dataclass(frozen=True, eq=False)
class Report:
    """One ranker judged: every table (pandas DataFrames), the :class:`Calibrator` and the sentences of the page.

    :meth:`save` writes the folder ``calibrank assess`` writes: ``index.html``, ``calibrator.json`` and
    ``tables/*.csv``, whole or not at all.

    Parameters
    ----------
    assessment : Assessment
        The tables and the calibrator.
    name : str
        The ranker's name on the page.
    notes : list of str
        How the inputs were read and split.
    paths : list of str
        The input files (shown by name only).

    Examples
    --------
    >>> import numpy as np
    >>> import calibrank
    >>> rng = np.random.default_rng(1)
    >>> qids = np.repeat(np.arange(160), 8)
    >>> rel = (rng.random(qids.size) < 0.25).astype(int)
    >>> report = calibrank.evaluate(2 * rel + rng.normal(size=qids.size), rel, qids, n_resamples=50)
    >>> sorted(report.tables)[:4]
    ['abstain', 'abstain_rule', 'calibration', 'conformal']
    >>> report.threshold["metric"].iloc[0], report.calibrator.cutoff.target
    ('precision', 0.9)
    """

    assessment: Assessment
    name: str
    notes: list[str]
    paths: list[str] = dataclasses.field(default_factory=list)

    @property
    def calibrator(self) -> Calibrator:
        return self.assessment.calibrator

    @property
    def tables(self) -> dict[str, pd.DataFrame]:
        """Every table by its name (``ranking``, ``calibration``, ``threshold``, ``abstain``, ...)."""
        return self.assessment.tables()

    def __getattr__(self, name: str) -> pd.DataFrame:
        tables = self.assessment.tables()
        if name in tables:
            return tables[name]
        raise AttributeError(f"Report has no table {name!r}; its tables: {', '.join(tables)}")

    def finding(self, section: str) -> str:
        """The page's sentence for ``section``."""
        return self.assessment.finding(section)

    def page(self) -> str:
        """The page's HTML."""
        return render(self.assessment, name=self.name, notes=self.notes, paths=self.paths)

    def save(self, folder: str | os.PathLike) -> Path:
        """Write ``index.html``, ``calibrator.json`` and ``tables/`` into ``folder`` (replaced whole); the page's path."""
        out = check_out(folder, "folder")
        page = self.page()

        def write(tmp: Path) -> None:
            self.assessment.save(tmp / "tables")
            self.calibrator.save(tmp / "calibrator.json")
            (tmp / "index.html").write_text(page, encoding="utf-8")

        return publish(out, write) / "index.html"


def evaluate(
    scores: Any,
    relevance: Any = None,
    query_ids: Any = None,
    *,
    docids: Any = None,
    valid: Any = None,
    name: str = "ranker",
    **settings: Any,
) -> Report:
    """Judge a ranker's scores: fit on validation queries, report every section on the test queries.

    Without ``valid``, a seeded half of the queries is fitted on and the other half judged.

    Parameters
    ----------
    scores, relevance, query_ids, docids
        The test queries, as :func:`fit` takes them.
    valid : tuple, DataFrame, ranx.Run or list of ScoredDoc, default=None
        The validation queries: ``(scores, relevance, query_ids[, docids])`` for arrays, or one object of
        the form of ``scores`` (a DataFrame with its labels, a ``(Run, Qrels)`` tuple for ranx).
    name : str, default="ranker"
        The ranker's name on the page.
    **settings
        Any of :class:`~calibrank.assess.options.Settings` (as :func:`fit`).

    Returns
    -------
    Report

    Examples
    --------
    >>> import numpy as np, tempfile
    >>> import calibrank
    >>> rng = np.random.default_rng(0)
    >>> qids = np.repeat(np.arange(200), 10)
    >>> rel = (rng.random(qids.size) < 0.2).astype(int)
    >>> scores = 3 * rel + rng.normal(size=qids.size)
    >>> report = calibrank.evaluate(scores, rel, qids, precision=0.8, n_resamples=50)
    >>> list(report.ranking["measure"])[:3]
    ['R@1', 'R@5', 'R@10']
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     sorted(p.name for p in report.save(tmp + "/bm25").parent.iterdir())
    ['calibrator.json', 'index.html', 'tables']
    """
    chosen = settings_from(settings, "calibrank.evaluate")
    if not isinstance(name, str) or not name:
        raise AssessError(f"name: expected the ranker's name, got {name!r}")
    inputs = load(
        run=_scored(scores, relevance, query_ids, docids, chosen, "scores"),
        valid_run=_valid(valid, chosen),
        settings=chosen,
    )
    return Report(assess(inputs.test, inputs.valid, chosen, notes=inputs.notes), name, inputs.notes)


def _signature(func: Any) -> inspect.Signature:
    """``func``'s signature with ``**settings`` spelt out as the keywords of :class:`Settings` and their defaults,
    so ``help()`` and an editor show the real options; the defaults stay written once, in :class:`Settings`."""
    sig = inspect.signature(func)
    params = [p for p in sig.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
    params += [
        inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=f.default)
        for f in dataclasses.fields(Settings)
    ]
    return sig.replace(parameters=params)


fit.__signature__ = _signature(fit)  # type: ignore[attr-defined]
evaluate.__signature__ = _signature(evaluate)  # type: ignore[attr-defined]
