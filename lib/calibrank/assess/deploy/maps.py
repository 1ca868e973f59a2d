"""Maps from a ranker's raw score to a probability of relevance, fitted on validation pairs and stored as numbers.

A raw score first becomes a base probability: as given for ``probability``, ``expit(s)`` for
``logit``, ``expit((s - center) / scale)`` for a bare ``score`` (centre and scale of the
validation scores). A map then recalibrates it: ``identity``; ``platt`` (Platt 1999),
``expit(A * logit(q) + B)``; ``isotonic`` (Zadrozny & Elkan 2002), linear interpolation between
its knots (each block of the pool-adjacent-violators fit as its first and last ``q``, the end blocks
pooled to enough candidates, :func:`calibrank.assess.deploy.fit.fit_map`); ``beta`` (Kull et al. 2017, eq. 5, with
``a, b >= 0``); ``temperature`` (Guo et al. 2017), ``expit(logit(q) / T)``. Fitting is :func:`calibrank.assess.deploy.fit.fit_map`; applying needs numpy and
scipy alone, so a map saved as JSON is applied without the fitting stack. :func:`support` says over
which base probabilities a map's value rests on enough validation candidates.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy.special import expit

from calibrank.assess.options import MAPS
from calibrank.assess.options import SCORE_KINDS as KINDS

__all__ = ["MAPS", "ScoreMap", "MapError", "maps_for", "support"]

_PARAMS = {"identity": (), "platt": ("A", "B"), "isotonic": ("x", "y"), "beta": ("a", "b", "c"), "temperature": ("T",)}
_EPS = 1e-7


class MapError(ValueError):
    """A map that cannot be built from what it was given; the message names the field."""


def _logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(p, _EPS, 1.0 - _EPS)
    return np.log(p) - np.log1p(-p)


def maps_for(kind: str) -> tuple[str, ...]:
    """The maps that can be fitted to a kind of score (``identity`` only where the score is a probability)."""
    return (
        ("platt", "isotonic", "beta") if kind == "score" else ("identity", "platt", "isotonic", "beta", "temperature")
    )


def _finite(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise MapError(f"{name}: expected a finite number, got {value!r}")
    return float(value)


@dataclasses.dataclass(frozen=True)
class ScoreMap:
    """A raw score's probability: ``kind`` says how a score becomes a base probability (with ``center`` and
    ``scale`` for a bare score), ``method`` and ``params`` how it is then recalibrated."""

    kind: str
    method: str
    params: Mapping[str, Any]
    center: float | None = None
    scale: float | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise MapError(f"kind: expected one of {', '.join(KINDS)}, got {self.kind!r}")
        if self.method not in MAPS:
            raise MapError(f"method: expected one of {', '.join(MAPS)}, got {self.method!r}")
        if self.method not in maps_for(self.kind):
            raise MapError(
                f"method: {self.method} does not apply to a {self.kind}; expected one of "
                f"{', '.join(maps_for(self.kind))}"
            )
        if set(self.params) != set(_PARAMS[self.method]):
            raise MapError(f"params: {self.method} takes {list(_PARAMS[self.method])}, got {sorted(self.params)}")
        if (self.kind == "score") != (self.center is not None and self.scale is not None):
            raise MapError("center, scale: a bare score needs both (and only a bare score has them)")
        if self.kind == "score":
            _finite("center", self.center)
            if _finite("scale", self.scale) <= 0:
                raise MapError(f"scale: expected a positive number, got {self.scale!r}")
        params: dict[str, Any] = {}
        if self.method == "isotonic":
            x = np.asarray(self.params["x"], dtype=np.float64)
            y = np.asarray(self.params["y"], dtype=np.float64)
            if x.ndim != 1 or x.shape != y.shape or x.size < 1 or not (np.isfinite(x).all() and np.isfinite(y).all()):
                raise MapError("params: isotonic knots x and y must be finite lists of one length")
            if (np.diff(x) < 0).any() or (np.diff(y) < 0).any() or (y < 0).any() or (y > 1).any():
                raise MapError("params: isotonic knots must be non-decreasing, y in [0, 1]")
            params = {"x": x.tolist(), "y": y.tolist()}
        else:
            params = {k: _finite(k, self.params[k]) for k in _PARAMS[self.method]}
            if self.method == "temperature" and params["T"] <= 0:
                raise MapError(f"T: expected a positive temperature, got {params['T']!r}")
        object.__setattr__(self, "params", params)

    def base(self, scores: npt.ArrayLike) -> np.ndarray:
        """The base probability of raw ``scores`` (before the map)."""
        s = np.asarray(scores, dtype=np.float64)
        if self.kind == "probability":
            return np.clip(s, 0.0, 1.0)
        if self.kind == "logit":
            return expit(s)
        assert self.center is not None and self.scale is not None  # a bare score has both, checked where built
        return expit((s - self.center) / self.scale)

    def __call__(self, scores: npt.ArrayLike) -> np.ndarray:
        """The probability of relevance of raw ``scores`` (any shape)."""
        q = self.base(scores)
        p = self.params
        if self.method == "identity":
            out = q
        elif self.method == "platt":
            out = expit(p["A"] * _logit(q) + p["B"])
        elif self.method == "isotonic":
            out = np.interp(q, p["x"], p["y"])
        elif self.method == "beta":
            qc = np.clip(q, _EPS, 1.0 - _EPS)
            out = expit(p["a"] * np.log(qc) - p["b"] * np.log1p(-qc) + p["c"])
        else:
            out = expit(_logit(q) / p["T"])
        return np.clip(out, 0.0, 1.0)

    @property
    def increasing(self) -> bool:
        """The map orders candidates as their raw scores do (ties aside): what a raw cutoff needs."""
        p = self.params
        if self.method == "platt":
            return p["A"] > 0
        if self.method == "beta":
            return p["a"] + p["b"] > 0
        if self.method == "isotonic":
            return p["y"][-1] > p["y"][0]
        return True

    def degenerate(self) -> str:
        """Why the map carries (almost) no information, or '' (a flat map, a reversed one, a huge temperature)."""
        p = self.params
        if self.method == "platt" and p["A"] <= 0:
            return f"its slope A = {p['A']:.3g} is not positive: higher scores are not more likely relevant"
        if self.method == "temperature" and p["T"] > 20:
            return f"its temperature T = {p['T']:.3g} flattens every probability towards 0.5"
        if self.method == "isotonic" and len(set(p["y"])) < 3:
            return f"it has {len(set(p['y']))} distinct output value(s): it sorts candidates into at most two groups"
        if self.method == "beta" and p["a"] == 0 and p["b"] == 0:
            return "both beta coefficients are 0: it is a constant"
        return ""

    def describe(self) -> str:
        """The map in a few words, with its fitted numbers."""
        p = self.params
        if self.method == "identity":
            head = "as given"
        elif self.method == "platt":
            head = f"Platt: sigmoid({p['A']:.4g} * logit(q) {'-' if p['B'] < 0 else '+'} {abs(p['B']):.4g})"
        elif self.method == "isotonic":
            head = f"isotonic: {len(p['x'])} knots"
        elif self.method == "beta":
            head = f"beta: a={p['a']:.4g}, b={p['b']:.4g}, c={p['c']:.4g}"
        else:
            head = f"temperature: T={p['T']:.4g}"
        if self.kind == "score":
            assert self.center is not None and self.scale is not None  # as in base()
            shift = f"score {'+' if self.center < 0 else '-'} {abs(self.center):.6g}"
            head += f", on q = sigmoid(({shift}) / {self.scale:.6g})"
        elif self.kind == "logit" and self.method != "identity":
            head += ", on q = sigmoid(score)"
        return head

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "method": self.method, "params": dict(self.params)}
        if self.kind == "score":
            out.update(center=self.center, scale=self.scale)
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ScoreMap:
        allowed = {"kind", "method", "params", "center", "scale"}
        unknown = sorted(set(d) - allowed)
        if unknown:
            raise MapError(f"map: unknown key(s) {unknown}; expected {sorted(allowed)}")
        missing = sorted({"kind", "method", "params"} - set(d))
        if missing:
            raise MapError(f"map: missing key(s) {missing}")
        return cls(d["kind"], d["method"], d["params"], d.get("center"), d.get("scale"))


def support(score_map: ScoreMap, scores: np.ndarray, tail: int) -> tuple[float, float] | None:
    """``(lo, hi)``: the base probabilities (:meth:`ScoreMap.base`) over which ``score_map``'s value rests on at
    least ``tail`` of the validation candidates' raw ``scores``; None for ``identity`` (nothing fitted).

    An isotonic map's value is its block's share of relevant candidates (held flat past the ends): ``lo`` is where
    the lowest block of at least ``tail`` candidates begins, ``hi`` where the highest one ends. A parametric
    map (Platt, beta, temperature) has a value everywhere, but beyond the ``tail``-th lowest or highest
    validation score fewer than ``tail`` candidates are as extreme: there its curve is extrapolated from the
    fit to the candidates in between. No block or too few candidates: ``(inf, -inf)``, nothing is supported.

    Examples
    --------
    >>> m = ScoreMap("probability", "isotonic", {"x": [0.1, 0.4, 0.5, 0.9], "y": [0.0, 0.0, 0.7, 0.7]})
    >>> support(m, np.r_[np.full(40, 0.2), np.full(5, 0.8)], 30)      # the top block holds 5 candidates
    (0.1, 0.4)
    >>> support(ScoreMap("probability", "platt", {"A": 1.0, "B": 0.0}), np.arange(1, 100) / 100, 30)
    (0.3, 0.7)
    """
    q = np.sort(score_map.base(np.asarray(scores, dtype=np.float64).reshape(-1)))
    if score_map.method == "identity":
        return None
    if score_map.method != "isotonic":
        return (float(q[tail - 1]), float(q[-tail])) if 0 < tail <= q.size else (math.inf, -math.inf)
    x, y = np.asarray(score_map.params["x"]), np.asarray(score_map.params["y"])
    starts = np.flatnonzero(np.r_[True, np.diff(y) != 0])
    ends = np.r_[starts[1:], y.size] - 1
    held = np.searchsorted(q, x[ends], side="right") - np.searchsorted(q, x[starts], side="left")
    enough = np.flatnonzero(held >= tail)
    if not enough.size:
        return math.inf, -math.inf
    return float(x[starts[enough[0]]]), float(x[ends[enough[-1]]])
