"""Every table of an assessment checks itself where it is built.

:func:`checked` raises :class:`~calibrank.assess.read.scored.AssessError` naming the table, row and
value of an impossible number: interval ends out of order, a proportion outside [0, 1], a
negative size, a value outside its interval for the columns in ``inside`` (non-additive
statistics such as ECE may sit outside theirs, :mod:`calibrank.metrics.resample`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from calibrank.assess.read.scored import AssessError

__all__ = ["checked"]

_TOL = 1e-9


def _row_name(df: pd.DataFrame, i: int, keys: Sequence[str]) -> str:
    parts = [f"{k}={df[k].iloc[i]}" for k in keys if k in df.columns]
    return f"row {i}" + (f" ({', '.join(parts)})" if parts else "")


def _fail(table: str, df: pd.DataFrame, i: int, keys: Sequence[str], what: str) -> None:
    raise AssessError(f"{table} table, {_row_name(df, i, keys)}: {what}")


def checked(
    table: str,
    df: pd.DataFrame,
    *,
    keys: Sequence[str] = (),
    inside: Sequence[str] = (),
    unit: Sequence[str] = (),
    nonneg: Sequence[str] = (),
) -> pd.DataFrame:
    """``df`` itself once every check passes; NaN (a number that does not exist) passes every check.

    ``inside``: columns whose value must lie in ``[<col> lo, <col> hi]``; ``unit``: columns
    (and their interval ends) that are proportions; ``nonneg``: counts and sizes. Every
    ``<col> lo`` / ``<col> hi`` pair must be ordered.
    """
    for col in df.columns:
        if isinstance(col, str) and col.endswith(" lo") and f"{col[:-3]} hi" in df.columns:
            lo = df[col].to_numpy(dtype=np.float64)
            hi = df[f"{col[:-3]} hi"].to_numpy(dtype=np.float64)
            bad = np.flatnonzero(lo > hi + _TOL)
            if bad.size:
                i = int(bad[0])
                _fail(table, df, i, keys, f"interval of {col[:-3]} is reversed: [{lo[i]:.6g}, {hi[i]:.6g}]")
    for col in inside:
        v = df[col].to_numpy(dtype=np.float64)
        lo = df[f"{col} lo"].to_numpy(dtype=np.float64)
        hi = df[f"{col} hi"].to_numpy(dtype=np.float64)
        bad = np.flatnonzero((v < lo - _TOL) | (v > hi + _TOL))
        if bad.size:
            i = int(bad[0])
            _fail(table, df, i, keys, f"{col} = {v[i]:.6g} lies outside its interval [{lo[i]:.6g}, {hi[i]:.6g}]")
    for col in unit:
        for c in (col, f"{col} lo", f"{col} hi"):
            if c not in df.columns:
                continue
            v = df[c].to_numpy(dtype=np.float64)
            bad = np.flatnonzero((v < -_TOL) | (v > 1 + _TOL))
            if bad.size:
                i = int(bad[0])
                _fail(table, df, i, keys, f"{c} = {v[i]:.6g} is a proportion and must lie in [0, 1]")
    for col in nonneg:
        v = df[col].to_numpy(dtype=np.float64)
        bad = np.flatnonzero(v < -_TOL)
        if bad.size:
            i = int(bad[0])
            _fail(table, df, i, keys, f"{col} = {v[i]:.6g} must not be negative")
    return df
