"""The rows of notebook 08's tables: each names a ranker x training corpus x test condition by :data:`CELL`.

Every builder of :mod:`calibrank.study.analysis.practice` checks its table where it builds it and raises
:class:`calibrank.table_checks.TableError` naming table, row and expectation; :func:`rows_problems`
is the check they share: the rows a study implies, each once. An ECE comes with the debiased ECE and
its interval, as in notebook 04's tables (:func:`debiased_ece`, :func:`debiased_problems`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pandas as pd

from calibrank.metrics.resample import features, interval
from calibrank.predictions import Predictions
from calibrank.study.analysis import uncertainty as unc
from calibrank.table_checks import TOLERANCE, rows_expected, rows_failing

__all__ = ["CELL", "debiased_ece", "debiased_problems", "rows_problems", "study_cells"]

CELL = ("ranker", "train_corpus", "corpus", "sampler")
"""The columns that name a ranker x test condition cell in every table of notebook 08."""


def study_cells(study, rankers: Iterable[str] | None = None) -> list[tuple[str, str, str, str]]:
    """Every ranker x training corpus x test condition with Predictions, as values of :data:`CELL`."""
    return [(r, tc, c.corpus, c.sampler) for r, tc, c in study.cells("test", rankers)]


def rows_problems(
    name: str, table: pd.DataFrame, keys: Sequence[str], expected: Iterable[tuple], what: str | None = None
) -> list[str]:
    """:func:`calibrank.table_checks.rows_expected`, also for a table built from no rows (and so without columns)."""
    return rows_expected(name, table.reindex(columns=list(keys)), keys, expected, what=what)


def debiased_ece(pred: Predictions, column: str, *, n_resamples: int, seed: int) -> dict[str, float]:
    """``<column> debiased`` (Kumar et al. 2019) with its 95% bootstrap interval over queries (``lo`` / ``hi``) and
    ``<column> bias`` (eq. 1 minus it), the columns notebook 04's tables give beside an ECE of eq. 1.

    The interval is centred on the debiased estimate (:func:`calibrank.metrics.resample.interval`): the
    percentile bootstrap of eq. 1 is biased upwards, and at a low ECE its interval leaves out its own estimate.
    """
    est = interval(features(pred, "ECE debiased"), level=unc.LEVEL, n_resamples=n_resamples, seed=seed)
    d = f"{column} debiased"
    return {d: est.value, f"{d} lo": est.low, f"{d} hi": est.high, f"{column} bias": est.bias}


def debiased_problems(name: str, table: pd.DataFrame, column: str, keys: Sequence[str]) -> list[str]:
    """Rows where ``<column> debiased`` of :func:`debiased_ece` is not inside its interval (a NaN is not)."""
    d = f"{column} debiased"
    lo, hi = f"{d} lo", f"{d} hi"
    inside = (table[lo] <= table[d] + TOLERANCE) & (table[d] <= table[hi] + TOLERANCE)
    return rows_failing(name, table, inside, keys, f"{d} inside its interval, {lo} <= {d} <= {hi}", [lo, d, hi])
