"""Numbers as a person reads them: three significant digits, percentages, intervals; never ``5.316e-01``.

A small value keeps its digits (``0.00031``, not ``0.000``), so an interval such as an ECE at a
low base rate stays readable.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

__all__ = ["interval", "number", "pct"]


def number(x: float, digits: int = 3) -> str:
    """``x`` to ``digits`` significant digits (``n/a`` for NaN or None)."""
    if x is None or not np.isfinite(x):
        return "n/a"
    if x == 0:
        return "0"
    text = f"{float(x):.{digits}g}"
    if text in ("1", "-1") and abs(x) != 1:  # 0.9995 is not 1
        text = f"{float(x):.6f}".rstrip("0")
        return text + "0" if text.endswith(".") else text
    if "e" in text:  # below 1e-4: say it in decimals up to 1e-6, else as such
        return f"{float(x):.{digits - 1}e}" if abs(x) < 1e-6 else f"{float(x):.8f}".rstrip("0")
    return text


def pct(x: float) -> str:
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
