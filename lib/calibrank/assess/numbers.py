"""Numbers as a person reads them, and as a CSV keeps them: one policy for the page, its box and its tables.

On the page (:func:`cell` picks by column):

- a measure (a probability, ECE, Brier, AURC, ...) to three significant digits, :func:`number`; a small
  value keeps its digits (``0.00031``, not ``0.000``), so an interval such as an ECE at a low base
  rate stays readable, a large one is a whole number (``12345``, never ``1.23e+04``), and one below
  :data:`FLOOR` is 0 (float noise: an ECE of 6.4e-18 is an ECE of 0 computed in float64);
- a p-value to two significant digits, :func:`pvalue` (it may be tiny and still mean something);
- a share (precision, coverage, a target) as a percentage to three significant digits, :func:`pct`;
- a threshold one deploys (a raw-score cutoff, the abstain rule's cut, the shortlists' ``qhat``) to six
  significant digits, :func:`threshold`: a rounded cutoff is another rule, so it is written the same
  wherever it stands (box, sentence, table, figure) and with the digits that decide;
- a count as a whole number, :func:`count`.

In the CSVs (:func:`csv_frame`) a count is an integer (``847``, not ``847.0``) and every other number keeps the
digits float64 holds, less arithmetic noise: a value within :data:`NOISE_ULPS` units in the last place of a
decimal of at most :data:`CSV_DIGITS` significant digits is written as that decimal (``0.239875``, not
``0.23987500000000003``). Nothing else moves, so a CSV read back gives the numbers the calibrator gives: a
ratio of counts ``n / d`` that is no such decimal lies at least ``1 / (d * 10**CSV_DIGITS)`` from one, relatively,
more than the noise allowed for any ``d`` below ``2**52 / (NOISE_ULPS * 10**CSV_DIGITS)`` (28,147). Noise that
sums have gathered beyond that (a Brier score of 0.08999999999999925) is kept, not guessed at.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

__all__ = [
    "COUNTS",
    "CSV_DIGITS",
    "FLOOR",
    "NOISE_ULPS",
    "PROPORTIONS",
    "THRESHOLDS",
    "THRESHOLD_DIGITS",
    "cell",
    "count",
    "csv_frame",
    "format_for",
    "interval",
    "number",
    "pct",
    "plain",
    "pvalue",
    "threshold",
]

THRESHOLD_DIGITS = 6
FLOOR = 1e-12
CSV_DIGITS = 10
NOISE_ULPS = 16
COUNTS = frozenset(
    {
        "queries",
        "left out",
        "count",
        "bin",
        "kept",
        "valid queries",
        "valid kept",
        "test kept",
        "queries needed",
        "test queries",
        "answered",
        "valid answered",
        "NOTA queries",
        "empty sets",
        "n",
        "S_test",
        "samples",
        "candidates",
        "shortest list",
        "longest list",
        "relevant candidates",
        "queries without a relevant candidate",
        "relevant_at",
        "beyond support",
        "beyond support low",
        "beyond support high",
    }
)
"""Columns that count something: whole numbers on the page and in the CSVs."""
PROPORTIONS = frozenset(
    {
        "precision",
        "recall",
        "coverage",
        "risk",
        "target",
        "confidence",
        "judged share",
        "false NOTA",
        "NOTA recall",
        "best level",
        "valid value",
        "valid best value",
        "risk if all answered",
        "valid coverage",
        "asked coverage",
        "valid tied at cut",
    }
)
"""Columns that are shares: percentages on the page."""
THRESHOLDS = frozenset({"cutoff", "best cutoff", "cut", "qhat"})
"""Columns that hold a threshold one deploys: :data:`THRESHOLD_DIGITS` significant digits on the page."""


def number(x: float, digits: int = 3) -> str:
    """``x`` to ``digits`` significant digits (``n/a`` for NaN or None); at or above ``10**digits`` a whole number,
    below :data:`FLOOR` in size 0.

    Examples
    --------
    >>> number(0.23987500000000003), number(0.00031234), number(12345.0), number(0.99951), number(6.4e-18)
    ('0.24', '0.000312', '12345', '0.99951', '0')
    """
    if x is None or not np.isfinite(x):
        return "n/a"
    x = float(x)
    if abs(x) < FLOOR:
        return "0"
    if abs(x) >= 10**digits:
        return f"{x:.0f}"
    text = f"{x:.{digits}g}"
    if text in ("1", "-1") and abs(x) != 1:  # 0.9995 is not 1
        text = f"{x:.6f}".rstrip("0")
        return text + "0" if text.endswith(".") else text
    if "e" in text:  # below 1e-4: say it in decimals up to 1e-6, else as such
        return f"{x:.{digits - 1}e}" if abs(x) < 1e-6 else f"{x:.8f}".rstrip("0")
    return text


def threshold(x: float) -> str:
    """A threshold one deploys (raw-score cutoff, abstain cut, ``qhat``) to :data:`THRESHOLD_DIGITS` significant
    digits, wherever it is shown.

    Examples
    --------
    >>> threshold(25.891347214), threshold(0.0052655505124683255), threshold(120.0)
    ('25.8913', '0.00526555', '120')
    """
    return number(x, THRESHOLD_DIGITS)


def pvalue(x: float) -> str:
    """A p-value to two significant digits (``0.031``, ``2.4e-09``); ``n/a`` for NaN."""
    if x is None or not np.isfinite(x):
        return "n/a"
    return f"{float(x):.2g}"


def count(x: float) -> str:
    """A count as a whole number with thousands separated (``5,000``); ``n/a`` for NaN."""
    if x is None or not np.isfinite(x):
        return "n/a"
    return f"{int(round(float(x))):,}"


def pct(x: float | None) -> str:
    """``x`` as a percentage with three significant digits (``53.3%``, ``0.41%``, ``100%``)."""
    if x is None or not np.isfinite(x):
        return "n/a"
    text = number(100.0 * float(x))
    if text == "100" and x < 1:  # 99.95% is not 100%
        text = f"{100.0 * float(x):.6f}".rstrip("0")[:6]
    return f"{text}%"


def interval(value: float, lo: float, hi: float, fmt: Callable[[float], str] = number) -> str:
    """``value [lo, hi]`` in one format (the value alone when the interval does not exist)."""
    if lo is None or hi is None or not (np.isfinite(lo) and np.isfinite(hi)):
        return fmt(value)
    return f"{fmt(value)} [{fmt(lo)}, {fmt(hi)}]"


def format_for(column: str) -> Callable[[float], str]:
    """The format of a number in ``column`` on the page: :func:`count`, :func:`threshold`, :func:`pct` or
    :func:`number`."""
    if column in COUNTS:
        return count
    if column in THRESHOLDS:
        return threshold
    if column in PROPORTIONS or column.startswith("risk@"):
        return pct
    if column == "pvalue":
        return pvalue
    return number


def cell(column: str, value) -> str:
    """One table cell as text: ``yes`` / ``no``, a number in its column's format, empty for a missing number."""
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (int, np.integer)):
        return count(float(value)) if column not in THRESHOLDS else threshold(float(value))  # each formats float(x)
    if isinstance(value, (float, np.floating)):
        return format_for(column)(float(value)) if np.isfinite(value) else ""
    return "" if value is None or value is pd.NA else str(value)


def plain(x: float) -> str:
    """``x`` as CSV text: every digit float64 holds, less arithmetic noise (see the module docstring); empty for NaN.

    Examples
    --------
    >>> plain(0.23987500000000003), plain(5 / 6), plain(float("nan"))
    ('0.239875', '0.8333333333333334', '')
    """
    x = float(x)
    if np.isnan(x):
        return ""
    if not np.isfinite(x) or x == 0:
        return repr(x)
    short = f"{x:.{CSV_DIGITS}g}"
    if abs(float(short) - x) <= NOISE_ULPS * np.spacing(abs(x)):
        return short
    return repr(x)


def csv_frame(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` as its CSV holds it: counts as (nullable) integers, other floats as :func:`plain` text.

    Examples
    --------
    >>> df = pd.DataFrame({"test kept": [847.0, np.nan], "precision": [0.23987500000000003, 0.5]})
    >>> print(csv_frame(df).to_csv(index=False).strip())
    test kept,precision
    847,0.239875
    ,0.5
    """
    out = df.copy()
    for c in out.columns:
        col = out[c]
        if not pd.api.types.is_float_dtype(col):
            continue
        values = col.to_numpy(dtype=np.float64)
        finite = values[np.isfinite(values)]
        if c in COUNTS and np.array_equal(finite, np.round(finite)):
            out[c] = pd.array([None if np.isnan(v) else int(v) for v in values], dtype="Int64")
        else:
            out[c] = [plain(v) for v in values]
    return out
