"""The rows of notebook 08's tables: each names a ranker x training corpus x test condition by :data:`CELL`.

Every builder of :mod:`calibrank.analysis.practice` checks its table where it builds it and raises
:class:`calibrank.table_checks.TableError` naming table, row and expectation; :func:`rows_problems`
is the check they share: the rows a study implies, each once.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pandas as pd

from ...table_checks import rows_expected

__all__ = ["CELL", "rows_problems", "study_cells"]

CELL = ("ranker", "train_corpus", "corpus", "sampler")
"""The columns that name a ranker x test condition cell in every table of notebook 08."""


def study_cells(study, rankers: Iterable[str] | None = None) -> list[tuple[str, str, str, str]]:
    """Every ranker x training corpus x test condition with Predictions, as values of :data:`CELL`."""
    return [(r, tc, c.corpus, c.sampler) for r, tc, c in study.cells("test", rankers)]


def rows_problems(name: str, table: pd.DataFrame, keys: Sequence[str], expected: Iterable[tuple],
                  what: str | None = None) -> list[str]:
    """:func:`calibrank.table_checks.rows_expected`, also for a table built from no rows (and so without columns)."""
    return rows_expected(name, table.reindex(columns=list(keys)), keys, expected, what=what)
