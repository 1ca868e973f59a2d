"""What the benchmark sections share: logging, ratios and the target check rendered beside each ratio."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["log", "ratio", "target", "positive_int", "MARK", "emit", "run_child"]

#: The prefix of the one stdout line that carries a child's result (libraries may print other lines).
MARK = "CALIBRANK_BENCH_RESULT "
_ROOT = Path(__file__).resolve().parent.parent


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


def emit(result: dict[str, Any]) -> None:
    """Print a child's result as the marked line :func:`run_child` reads."""
    print(MARK + json.dumps(result), flush=True)


def run_child(
    module: str, args: Sequence[str], *, timeout_s: float, env: dict[str, str] | None = None, hint: str = ""
) -> dict[str, Any]:
    """``python -m benchmarks.<module> --child ARGS`` in a fresh process (from the repository root, so that
    ``benchmarks`` imports): its :func:`emit` result, or ``{"error": ...}`` when it failed or timed out."""
    cmd = [sys.executable, "-m", f"benchmarks.{module}", "--child", *args]
    try:
        proc = subprocess.run(
            cmd, capture_output=True, text=True, timeout=timeout_s, cwd=_ROOT, env=dict(os.environ, **(env or {}))
        )
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout_s:g} s{hint}"}
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(MARK):
            return json.loads(line[len(MARK) :])
    tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
    return {"error": f"exit status {proc.returncode}: {' | '.join(tail)}"}
