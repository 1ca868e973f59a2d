"""Building blocks of the notebooks' table checks: each returns problem sentences naming the table,
the row and what was expected against what was found (an empty list when all is well).

The checks of the notebooks (:mod:`calibrank.checks` for 01-03 and 07, :mod:`calibrank.analysis.checks`
for 04-06, :mod:`calibrank.practice.checks` for 08) are written with these, and the notebooks assert
that the list is empty (as :func:`calibrank.querysets.query_set_problems` does for the query sets).

A row is named by its values of some key columns, either bare (:func:`describe`, ``bert · chitchat``)
or with the column names (:func:`named`, ``ranker=bert, corpus=chitchat``); every helper takes the
one its caller uses as ``label``. A NaN fails every comparison, as it does in pandas. Torch-free.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

__all__ = [
    "TOLERANCE",
    "count_problems",
    "describe",
    "fmt",
    "in_range",
    "missing_columns",
    "named",
    "not_nan",
    "row_problems",
    "rows_expected",
    "rows_failing",
]

TOLERANCE = 1e-12
"""Rounding slack of a comparison that holds exactly in exact arithmetic."""

Label = Callable[[Mapping, Sequence[str]], str]


def fmt(value: Any) -> str:
    """A value in a problem sentence: numbers to 6 significant digits, long texts cut."""
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        return f"{float(value):.6g}"
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def describe(row: Mapping | pd.Series, keys: Sequence[str]) -> str:
    """The row's name: its values of ``keys`` joined by `` · `` (those it has)."""
    return " · ".join(str(row[k]) for k in keys if k in row)


def named(row: Mapping | pd.Series, keys: Sequence[str]) -> str:
    """The row's name with its columns: ``key=value`` for each of ``keys`` it has."""
    return ", ".join(f"{k}={row[k] if isinstance(row[k], str) else fmt(row[k])}" for k in keys if k in row)


def missing_columns(name: str, table: pd.DataFrame, columns: Iterable[str]) -> list[str]:
    """One problem when ``table`` lacks some of ``columns`` (the other checks need them)."""
    columns = list(dict.fromkeys(columns))
    missing = [c for c in columns if c not in table.columns]
    return [f"{name}: no column {', '.join(map(repr, missing))}; expected the columns {columns}"] if missing else []


def count_problems(name: str, table: pd.DataFrame, expected: int, what: str) -> list[str]:
    """One problem when ``table`` does not have ``expected`` rows (``what``: why that many)."""
    return [] if len(table) == expected else [f"{name}: {len(table)} rows, expected {expected} ({what})"]


def rows_expected(name: str, table: pd.DataFrame, keys: Sequence[str], expected: Iterable[tuple], *, each: int = 1,
                  label: Label = describe) -> list[str]:
    """Every key of ``expected`` (values of the columns ``keys``) has exactly ``each`` rows; no row has another key."""
    want = Counter({tuple(key): each for key in expected})
    found = Counter(table[list(keys)].itertuples(index=False, name=None))
    problems = [f"{name}: {found.get(key, 0)} row(s) for {label(dict(zip(keys, key)), keys)}, expected {n}"
                for key, n in want.items() if found.get(key, 0) != n]
    problems += [f"{name}: {n} unexpected row(s) for {label(dict(zip(keys, key)), keys)}, expected none"
                 for key, n in found.items() if key not in want]
    return problems


def row_problems(name: str, table: pd.DataFrame, bad: Any, keys: Sequence[str], what: Callable[[pd.Series], str], *,
                 label: Label = describe) -> list[str]:
    """One problem per row where ``bad`` (aligned by position) holds: the row by ``keys`` and ``what(row)``."""
    flags = np.asarray(bad, dtype=bool).reshape(-1)
    if flags.size != len(table):
        raise ValueError(f"{name}: {flags.size} flags for {len(table)} rows")
    return [f"{name}: {label(row, keys)}: {what(row)}" for _, row in table[flags].iterrows()]


def rows_failing(name: str, table: pd.DataFrame, ok: Any, keys: Sequence[str], expected: str,
                 columns: Sequence[str], *, label: Label = describe) -> list[str]:
    """One problem per row where ``ok`` (aligned by position) is not True (NaN and NA are not): the row,
    what was ``expected`` and the row's values of ``columns``."""
    flags = np.asarray(ok, dtype=object).reshape(-1)
    if flags.size != len(table):
        raise ValueError(f"{name}: {flags.size} flags for {len(table)} rows")
    good = np.array([isinstance(v, (bool, np.bool_)) and bool(v) for v in flags], dtype=bool)
    return row_problems(name, table, ~good, keys, label=label,
                        what=lambda row: f"expected {expected}, found " + ", ".join(f"{c} {fmt(row[c])}" for c in columns))


def in_range(name: str, table: pd.DataFrame, column: str, keys: Sequence[str], low: float, high: float, *,
             hi_open: bool = False, allow_nan: bool = False, label: Label = describe) -> list[str]:
    """Rows whose ``column`` is outside [low, high] (or [low, high)), or NaN unless ``allow_nan``."""
    v = pd.to_numeric(table[column], errors="coerce")
    inside = (v >= low) & ((v < high) if hi_open else (v <= high))
    bad = ~inside & ~(v.isna() if allow_nan else pd.Series(False, index=v.index))
    interval = f"[{fmt(low)}, {fmt(high)}{')' if hi_open else ']'}"
    return row_problems(name, table, bad, keys, label=label,
                        what=lambda row: f"{column} = {fmt(row[column])}, expected a number in {interval}")


def not_nan(name: str, table: pd.DataFrame, columns: Iterable[str], keys: Sequence[str], *,
            label: Label = describe) -> list[str]:
    """One problem per row and column of ``columns`` that is NaN."""
    problems = []
    for c in columns:
        problems += row_problems(name, table, table[c].isna(), keys, label=label,
                                 what=lambda row, c=c: f"{c} is NaN, expected a value")
    return problems
