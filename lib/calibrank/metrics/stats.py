"""Significance tests, multiple-comparison correction and confidence intervals for comparing rankers.

Paired t-test (``scipy.stats.ttest_rel``), Holm-Bonferroni correction (Holm 1979), Student-t
intervals of a mean and relative change. An undefined test gives NaN with a ``note``; NaN
per-query values are dropped or rejected (``nan_policy``), infinite ones are an error.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from scipy import stats as _sps

__all__ = ["MIN_CI_VALUES", "TTestResult", "holm", "mean_ci", "paired_ttest", "relative_change"]

MIN_CI_VALUES = 2
"""The fewest values :func:`mean_ci` gives an interval for (one degree of freedom); with fewer it is NaN."""

_NAN_POLICIES = ("omit", "raise")
_ALTERNATIVES = ("two-sided", "less", "greater")
_ZERO_VARIANCE_RTOL = 1e-12


@dataclasses.dataclass(frozen=True)
class TTestResult:
    """Result of :func:`paired_ttest`: t statistic, p-value, number of pairs used, and a note.

    ``note`` is empty when the test ran normally; otherwise it says why the statistic and
    p-value are NaN, or how many pairs were dropped for NaN.
    """

    statistic: float
    pvalue: float
    n: int
    note: str = ""


def _as_1d_float(values: np.ndarray, name: str) -> np.ndarray:
    """``values`` as a 1-D float64 array; ValueError if not 1-D, not numeric, or infinite."""
    v = np.asarray(values)
    if v.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array; got shape {v.shape}")
    if not (np.issubdtype(v.dtype, np.number) or v.dtype == bool) or np.iscomplexobj(v):
        raise ValueError(f"{name} must be real numbers; got dtype {v.dtype}")
    v = v.astype(np.float64)
    inf = np.isinf(v)
    if inf.any():
        raise ValueError(f"{name} must not contain infinite values; found {int(inf.sum())}, e.g. {v[inf][0].item()!r}")
    return v


def _check_nan_policy(nan_policy: str) -> None:
    if nan_policy not in _NAN_POLICIES:
        raise ValueError(f"nan_policy must be one of {_NAN_POLICIES}; got {nan_policy!r}")


def _raise_on_nan(v: np.ndarray, name: str) -> None:
    n_nan = int(np.isnan(v).sum())
    if n_nan:
        raise ValueError(f"{name} contains {n_nan} NaN value(s) and nan_policy='raise'")


def paired_ttest(a: np.ndarray, b: np.ndarray, alternative: str = "two-sided", nan_policy: str = "omit") -> TTestResult:
    """Paired t-test of ``a`` against ``b`` (same queries, same order) with ``scipy.stats.ttest_rel``.

    NaN statistic and p-value, with a ``note``, for fewer than 2 pairs or differences of zero
    variance (up to a relative ``1e-12``). Pairs with a NaN are dropped (``"omit"``) or rejected.
    """
    _check_nan_policy(nan_policy)
    if alternative not in _ALTERNATIVES:
        raise ValueError(f"alternative must be one of {_ALTERNATIVES}; got {alternative!r}")
    x = _as_1d_float(a, "a")
    y = _as_1d_float(b, "b")
    if x.shape != y.shape:
        raise ValueError(f"b must have the same shape as a {x.shape}; got shape {y.shape}")
    if nan_policy == "raise":
        _raise_on_nan(x, "a")
        _raise_on_nan(y, "b")
    keep = ~(np.isnan(x) | np.isnan(y))
    x, y = x[keep], y[keep]
    n = int(x.size)
    notes = [f"dropped {int((~keep).sum())} pair(s) with NaN"] if not keep.all() else []
    if n < 2:
        notes.append(f"undefined: a paired t-test needs at least 2 pairs, got {n}")
        return TTestResult(float("nan"), float("nan"), n, "; ".join(notes))
    d = x - y
    scale = max(float(np.max(np.abs(x))), float(np.max(np.abs(y))))
    if np.ptp(d) <= _ZERO_VARIANCE_RTOL * scale:
        notes.append(f"undefined: the {n} differences have zero variance (all equal to {float(d[0]):.6g})")
        return TTestResult(float("nan"), float("nan"), n, "; ".join(notes))
    res = _sps.ttest_rel(x, y, alternative=alternative)
    return TTestResult(float(res.statistic), float(res.pvalue), n, "; ".join(notes))


def holm(pvalues: np.ndarray) -> np.ndarray:
    """Holm-Bonferroni adjusted p-values, same shape as ``pvalues``.

    ``p~_(i) = min(1, max_{j <= i} (m - j + 1) p_(j))`` over the sorted p-values; NaN entries stay
    NaN and do not count in ``m``.
    """
    p = np.asarray(pvalues)
    if not (np.issubdtype(p.dtype, np.number) or p.dtype == bool) or np.iscomplexobj(p):
        raise ValueError(f"pvalues must be real numbers; got dtype {p.dtype}")
    p = p.astype(np.float64)
    flat = p.ravel()
    valid = ~np.isnan(flat)
    bad = valid & ~((flat >= 0.0) & (flat <= 1.0))
    if bad.any():
        raise ValueError(
            f"pvalues must be in [0, 1] (or NaN); found {int(bad.sum())} value(s) outside, e.g. {flat[bad][0].item()!r}"
        )
    out = np.full(flat.shape, np.nan)
    v = flat[valid]
    m = v.size
    if m:
        order = np.argsort(v, kind="stable")
        multipliers = m - np.arange(m)  # m, m-1, ..., 1
        adjusted = np.minimum(1.0, np.maximum.accumulate(multipliers * v[order]))
        result = np.empty(m)
        result[order] = adjusted
        out[valid] = result
    return out.reshape(p.shape)


def mean_ci(values: np.ndarray, level: float = 0.95, nan_policy: str = "omit") -> tuple[float, float, float]:
    """``(mean, low, high)``: the mean and its Student-t confidence interval at ``level``.

    With fewer than 2 values the interval is ``(nan, nan)`` (and the mean NaN with none).
    NaN values are dropped (``nan_policy="omit"``) or rejected (``"raise"``).
    """
    _check_nan_policy(nan_policy)
    if isinstance(level, bool) or not isinstance(level, (int, float, np.floating)) or not 0.0 < level < 1.0:
        raise ValueError(f"level must be a number strictly between 0 and 1; got {level!r}")
    v = _as_1d_float(values, "values")
    if nan_policy == "raise":
        _raise_on_nan(v, "values")
    v = v[~np.isnan(v)]
    n = v.size
    mean = float(v.mean()) if n else float("nan")
    if n < MIN_CI_VALUES:
        return mean, float("nan"), float("nan")
    half = float(_sps.t.ppf(0.5 + level / 2.0, df=n - 1)) * float(v.std(ddof=1)) / float(np.sqrt(n))
    return mean, mean - half, mean + half


def relative_change(new: np.ndarray | float, base: np.ndarray | float) -> np.ndarray | float:
    """``(new - base) / base`` elementwise (broadcasting), NaN where ``base == 0``.

    Returns a float for scalar inputs, otherwise an array. The sign follows the formula, so
    with a negative ``base`` an increase gives a negative change.
    """
    n = np.asarray(new, dtype=np.float64)
    b = np.asarray(base, dtype=np.float64)
    shape = np.broadcast_shapes(n.shape, b.shape)
    out = np.full(shape, np.nan)
    np.divide(n - b, b, out=out, where=b != 0)
    return float(out) if out.ndim == 0 else out
