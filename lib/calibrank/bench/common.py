"""What the benchmark sections share: logging, ratios and the target check rendered beside each ratio."""

from __future__ import annotations

import math
import sys
from typing import Any

__all__ = ["log", "ratio", "target", "positive_int"]


def log(msg: str) -> None:
    print(f"[bench] {msg}", file=sys.stderr, flush=True)


def ratio(numerator: float, denominator: float) -> float:
    """``numerator / denominator``; NaN when the denominator is not positive (no figure rather than a fake one)."""
    if not denominator > 0:
        return float("nan")
    return float(numerator) / float(denominator)


def target(figure: str, value: float, op: str, bound: float, *, note: str = "") -> dict[str, Any]:
    """One ratio beside its target: ``{"figure", "value", "target", "met"}``; ``op`` is ``">="`` or ``"<="``.

    ``met`` is None when the value is not a number (the measurement could not be made).
    """
    if op not in (">=", "<="):
        raise ValueError(f"op must be '>=' or '<=', got {op!r}")
    value = float(value)
    met = None if math.isnan(value) else bool(value >= bound if op == ">=" else value <= bound)
    row = {"figure": figure, "value": value, "target": f"{op} {bound:g}", "met": met}
    if note:
        row["note"] = note
    return row


def positive_int(value: Any, name: str, *, minimum: int = 1) -> int:
    """``value`` as an int >= ``minimum``; a ValueError naming ``name`` otherwise."""
    if isinstance(value, bool) or int(value) != value or int(value) < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)
