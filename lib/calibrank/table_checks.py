"""Building blocks of the tables' invariants: each returns problem sentences naming the table, the row
and what was expected (against what was found); an empty list when all is well.

A function that builds a table runs its invariants at its end and raises :class:`TableError` with
:func:`raise_problems`, so a notebook (and nbval) fails where a wrong table is built.

Every helper takes the table's name first, then the table. A row is named by its key columns with
their values (:func:`describe`: ``ranker=bert, corpus=chitchat``) and a problem reads
``<table>: <row>: expected <what>, found <column> <value>, ...``. A NaN fails every comparison, as
it does in pandas. Nothing here imports torch.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

__all__ = [
    "TOLERANCE",
    "TableError",
    "raise_problems",
    "count_problems",
    "describe",
    "fmt",
    "in_range",
    "not_nan",
    "rows_expected",
    "rows_failing",
]

TOLERANCE = 1e-12
"""Rounding slack of a comparison that holds exactly in exact arithmetic."""


class TableError(ValueError):
    """A table an analysis built breaks one of its invariants; the message names table, row and expectation."""


def raise_problems(problems: Sequence[str], limit: int = 5) -> None:
    """Raise :class:`TableError` listing the first ``limit`` problem sentences, if there are any."""
    if problems:
        more = f" (and {len(problems) - limit} more)" if len(problems) > limit else ""
        raise TableError("; ".join(problems[:limit]) + more)


def fmt(value: Any) -> str:
    """A value in a problem sentence: numbers to 6 significant digits, texts quoted (long ones cut)."""
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        return f"{float(value):.6g}"
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def describe(row: Mapping | pd.Series, keys: Sequence[str]) -> str:
    """The row's name: ``key=value`` for each of ``keys`` it has (texts bare, numbers as :func:`fmt`)."""
    return ", ".join(f"{k}={row[k] if isinstance(row[k], str) else fmt(row[k])}" for k in keys if k in row)


def _rows(n: int, kind: str = "") -> str:
    return f"{n} {kind}row" + ("" if n == 1 else "s")


def count_problems(name: str, table: pd.DataFrame, expected: int, what: str | None = None) -> list[str]:
    """One problem when ``table`` does not have ``expected`` rows (``what``: why that many)."""
    if len(table) == expected:
        return []
    return [f"{name}: {_rows(len(table))}, expected {expected}" + (f" ({what})" if what else "")]


def rows_expected(
    name: str,
    table: pd.DataFrame,
    keys: Sequence[str],
    expected: Iterable[tuple],
    *,
    each: int = 1,
    what: str | None = None,
) -> list[str]:
    """Every key of ``expected`` (values of the columns ``keys``) has exactly ``each`` rows and no row has
    another key; when not, the row count (:func:`count_problems`, ``what``: why that many) comes first."""
    want = Counter({tuple(key): each for key in expected})
    found = Counter(table[list(keys)].itertuples(index=False, name=None))
    problems = [
        f"{name}: {_rows(found.get(key, 0))} for {describe(dict(zip(keys, key)), keys)}, expected {n}"
        for key, n in want.items()
        if found.get(key, 0) != n
    ]
    problems += [
        f"{name}: {_rows(n, 'unexpected ')} for {describe(dict(zip(keys, key)), keys)}, expected none"
        for key, n in found.items()
        if key not in want
    ]
    return count_problems(name, table, sum(want.values()), what) + problems if problems else []


def rows_failing(
    name: str, table: pd.DataFrame, ok: Any, keys: Sequence[str], expected: str, columns: Sequence[str]
) -> list[str]:
    """One problem per row of ``table`` where ``ok`` (aligned by position) is not True (NaN and NA are not):
    the row by ``keys``, what was ``expected`` and the row's values of ``columns``."""
    flags = np.asarray(ok, dtype=object).reshape(-1)
    if flags.size != len(table):
        raise ValueError(f"{name}: {flags.size} flags for {len(table)} rows")
    good = np.array([isinstance(v, (bool, np.bool_)) and bool(v) for v in flags], dtype=bool)
    problems = []
    for i in np.flatnonzero(~good):
        row = table.iloc[int(i)]
        found = ", ".join(f"{c} {fmt(row[c])}" for c in columns)
        problems.append(f"{name}: {describe(row, keys)}: expected {expected}, found {found}")
    return problems


def in_range(
    name: str,
    table: pd.DataFrame,
    column: str,
    keys: Sequence[str],
    low: float,
    high: float,
    *,
    high_open: bool = False,
    allow_nan: bool = False,
) -> list[str]:
    """Rows whose ``column`` is not a number in [low, high] (or [low, high) when ``high_open``); a NaN
    fails unless ``allow_nan``."""
    v = pd.to_numeric(table[column], errors="coerce")
    ok = (v >= low) & ((v < high) if high_open else (v <= high))
    if allow_nan:
        ok |= v.isna()
    interval = f"[{fmt(low)}, {fmt(high)}{')' if high_open else ']'}"
    return rows_failing(name, table, ok, keys, f"{column} in {interval}" + (" or NaN" if allow_nan else ""), [column])


def not_nan(name: str, table: pd.DataFrame, columns: Iterable[str], keys: Sequence[str]) -> list[str]:
    """One problem per row and column of ``columns`` that is NaN."""
    problems = []
    for c in columns:
        problems += rows_failing(name, table, table[c].notna(), keys, f"a value of {c}", [c])
    return problems
