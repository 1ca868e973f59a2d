"""What a practitioner deploys: a ranker's raw score as a probability, a certified cutoff, when to abstain.

A :class:`Calibrator` is fitted on validation queries only (:func:`calibrank.assess.deploy.fit.fit_calibrator`) and holds
numbers, not code: the map from the raw score to a probability (:class:`~calibrank.assess.deploy.maps.ScoreMap`),
the cutoff in raw-score units certified by Learn-then-Test (:mod:`calibrank.assess.deploy.certify`) with
its guarantee, the abstain rule (a list confidence and its cut), the split-conformal quantile
of the shortlists, and what it was fitted on. :meth:`Calibrator.save` writes JSON (no pickle);
:meth:`Calibrator.load` and every method that applies it need numpy and scipy alone.

One score per candidate: where a ranker gave several samples, the calibrator reads their mean.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from scipy.special import expit

from calibrank.assess.deploy.maps import MapError, ScoreMap

__all__ = ["AbstainRule", "Calibrator", "CalibratorError", "Cutoff", "Shortlist", "CONFIDENCES", "list_confidence",
           "top_probabilities"]

FORMAT = "calibrank.calibrator"
SCHEMA = 1
CONFIDENCES = ("top score", "margin", "list")
"""List confidences of the abstain rule: the top raw score; the top probability minus the second;
a logistic regression on the list's sorted top probabilities (after Gisserot-Boukhlef et al. 2024)."""


class CalibratorError(ValueError):
    """A calibrator that cannot be built or read; the message names the file or the field."""


def _strict(name: str, d: Mapping[str, Any], required: set[str], optional: set[str] = frozenset()) -> None:
    if not isinstance(d, Mapping):
        raise CalibratorError(f"{name}: expected an object, got {type(d).__name__}")
    unknown = sorted(set(d) - required - optional)
    if unknown:
        raise CalibratorError(f"{name}: unknown key(s) {unknown}; expected {sorted(required | optional)}")
    missing = sorted(required - set(d))
    if missing:
        raise CalibratorError(f"{name}: missing key(s) {missing}")


def _level(name: str, v: Any, *, closed: bool = False) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not (0.0 <= v <= 1.0 if closed else 0.0 < v < 1.0):
        raise CalibratorError(f"{name}: expected a number {'in [0, 1]' if closed else 'strictly between 0 and 1'}, "
                              f"got {v!r}")
    return float(v)


def _number(name: str, v: Any, *, allow_none: bool = False) -> float | None:
    if v is None and allow_none:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise CalibratorError(f"{name}: expected a finite number, got {v!r}")
    return float(v)


@dataclasses.dataclass(frozen=True)
class Cutoff:
    """Keep a candidate when its raw score is at least ``raw`` (``probability``: the map's value there).

    ``metric`` (precision or recall) is at least ``target`` with probability ``confidence``
    (``procedure``); ``raw`` is None when no cutoff is certified, and ``best_level`` /
    ``best_raw`` then say what can be certified at that confidence.
    """

    metric: str
    target: float
    confidence: float
    raw: float | None
    probability: float | None
    best_level: float
    best_raw: float | None
    procedure: str

    def __post_init__(self) -> None:
        if self.metric not in ("precision", "recall"):
            raise CalibratorError(f"cutoff.metric: expected precision or recall, got {self.metric!r}")
        _level("cutoff.target", self.target)
        _level("cutoff.confidence", self.confidence)
        _number("cutoff.raw", self.raw, allow_none=True)
        if self.probability is not None:
            _level("cutoff.probability", self.probability, closed=True)
        _level("cutoff.best_level", self.best_level, closed=True)
        _number("cutoff.best_raw", self.best_raw, allow_none=True)

    @property
    def certified(self) -> bool:
        return self.raw is not None


@dataclasses.dataclass(frozen=True)
class AbstainRule:
    """Answer a query with its top candidate when ``confidence`` reaches ``cut``, else abstain.

    ``coverage`` / ``risk``: what was asked for (the share answered, or the top-1 error among the
    answered); ``list_coef`` / ``list_intercept``: the ``list`` confidence's logistic regression on
    the ``len(list_coef)`` largest probabilities.
    """

    confidence: str
    cut: float
    coverage: float | None = None
    risk: float | None = None
    list_coef: tuple[float, ...] | None = None
    list_intercept: float | None = None

    def __post_init__(self) -> None:
        if self.confidence not in CONFIDENCES:
            raise CalibratorError(f"abstain.confidence: expected one of {', '.join(CONFIDENCES)}, got {self.confidence!r}")
        _number("abstain.cut", self.cut)
        if (self.coverage is None) == (self.risk is None):
            raise CalibratorError("abstain: expected exactly one of coverage and risk")
        if self.coverage is not None:
            _level("abstain.coverage", self.coverage, closed=True)
        if self.risk is not None:
            _level("abstain.risk", self.risk)
        if (self.confidence == "list") != (self.list_coef is not None):
            raise CalibratorError("abstain.list_coef: given exactly when the confidence is 'list'")
        if self.list_coef is not None:
            coef = tuple(_number("abstain.list_coef", c) for c in self.list_coef)
            if not coef:
                raise CalibratorError("abstain.list_coef: expected at least one coefficient")
            object.__setattr__(self, "list_coef", coef)
            _number("abstain.list_intercept", self.list_intercept)


@dataclasses.dataclass(frozen=True)
class Shortlist:
    """Split-conformal shortlist: keep the candidates whose share ``softmax(logit(p))`` of their list is at least
    ``1 - qhat``; it holds a relevant candidate with probability ``1 - alpha`` (None: too few validation queries)."""

    alpha: float
    qhat: float | None

    def __post_init__(self) -> None:
        _level("shortlist.alpha", self.alpha)
        _number("shortlist.qhat", self.qhat, allow_none=True)


def top_probabilities(probs: np.ndarray, mask: np.ndarray, m: int) -> np.ndarray:
    """``[Q, m]`` each list's ``m`` largest probabilities in decreasing order (0 past a short list's end)."""
    p = -np.sort(-np.where(mask, probs, 0.0), axis=1)
    out = np.zeros((p.shape[0], m))
    out[:, : min(m, p.shape[1])] = p[:, :m]
    return out


def list_confidence(name: str, scores: np.ndarray, probs: np.ndarray, mask: np.ndarray,
                    list_model: tuple[Any, float] | None = None) -> np.ndarray:
    """``[Q]`` the confidence ``name`` (one of :data:`CONFIDENCES`) of each list: its top raw score, its top
    probability minus the second, or ``list_model``'s (coefficients, intercept) logistic regression on its
    largest probabilities. The one formula the fitting, the page and :meth:`Calibrator.confidence` share."""
    if name == "top score":
        return np.where(mask, scores, -np.inf).max(axis=1)
    if name == "margin":
        top = top_probabilities(probs, mask, 2)
        return top[:, 0] - top[:, 1]
    coef, intercept = list_model
    return expit(top_probabilities(probs, mask, len(coef)) @ np.asarray(coef) + intercept)


def _field_dict(obj: Any) -> dict[str, Any]:
    out = dataclasses.asdict(obj)
    return {k: (list(v) if isinstance(v, tuple) else v) for k, v in out.items()}


@dataclasses.dataclass(frozen=True)
class Calibrator:
    """A ranker's raw score as a probability, a certified cutoff, an abstain rule and a shortlist, as numbers.

    What ``calibrank assess`` writes as ``calibrator.json``: everything is fitted on validation
    queries by :func:`calibrank.assess.deploy.fit.fit_calibrator`, and applying it needs numpy and scipy
    alone, so a service can load it without the fitting stack.

    Parameters
    ----------
    map : ScoreMap
        Raw score to probability of relevance.
    cutoff : Cutoff
        The certified raw-score cutoff and its guarantee.
    abstain : AbstainRule
        When to answer a query with its top candidate.
    shortlist : Shortlist
        The conformal quantile of the shortlists.
    fitted_on : dict
        Provenance: queries, candidates, base rate, score kind, samples, the calibrank version,
        input files with their SHA-256.

    Examples
    --------
    >>> import numpy as np
    >>> from calibrank.assess.deploy.fit import fit_calibrator
    >>> from calibrank.assess.read.scored import ScoredRun
    >>> rng = np.random.default_rng(0)
    >>> y = (rng.random((80, 10)) < 0.2).astype(int)           # 80 queries, 10 candidates each
    >>> s = 3 * y + rng.normal(size=y.shape)                    # raw scores, any scale
    >>> valid = ScoredRun(qids=np.arange(80), docids=np.tile(np.arange(10), (80, 1)), mask=np.ones(y.shape, bool),
    ...                   scores=s[None], relevance=y, judged=np.ones(y.shape, bool), n_relevant=y.sum(axis=1))
    >>> cal = fit_calibrator(valid, precision=0.75)
    >>> cal.cutoff.certified, cal.predict_proba([3.0, 0.0]).round(2).tolist()
    (True, [0.98, 0.0])
    """

    map: ScoreMap
    cutoff: Cutoff
    abstain_rule: AbstainRule
    shortlist_rule: Shortlist
    fitted_on: Mapping[str, Any]

    def __post_init__(self) -> None:
        for name, cls in (("map", ScoreMap), ("cutoff", Cutoff), ("abstain_rule", AbstainRule),
                          ("shortlist_rule", Shortlist)):
            if not isinstance(getattr(self, name), cls):
                raise CalibratorError(f"{name}: expected a {cls.__name__}, got {type(getattr(self, name)).__name__}")
        if not self.map.increasing and self.cutoff.raw is not None:
            raise CalibratorError("cutoff.raw: a raw cutoff needs a map that orders candidates as their scores do")

    # ------------------------------------------------------------------ applying
    def predict_proba(self, scores: Any) -> np.ndarray:
        """The probability of relevance of each raw score (any shape).

        Parameters
        ----------
        scores : array-like of float
            The ranker's raw scores, in the units it was fitted on.

        Returns
        -------
        ndarray of float
            The probabilities, shaped as ``scores``.

        Examples
        --------
        >>> from calibrank.assess.deploy.calibrator import AbstainRule, Calibrator, Cutoff, ScoreMap, Shortlist
        >>> cal = Calibrator(ScoreMap("logit", "platt", {"A": 1.0, "B": 0.0}),
        ...                  Cutoff("precision", 0.9, 0.9, 1.5, 0.82, 0.93, 1.5, "Learn-then-Test"),
        ...                  AbstainRule("margin", 0.3, coverage=0.8), Shortlist(0.1, 0.5), {})
        >>> cal.predict_proba([2.0, 0.0, -2.0]).round(3).tolist()
        [0.881, 0.5, 0.119]
        """
        return self.map(np.asarray(scores, dtype=np.float64))

    def keep(self, scores: Any) -> np.ndarray:
        """True for each raw score at or above the certified cutoff.

        The cutoff is in the ranker's own units, so the guarantee (precision or recall at least
        ``cutoff.target`` with probability ``cutoff.confidence``) holds without any map in between.

        Parameters
        ----------
        scores : array-like of float
            Raw scores, any shape.

        Returns
        -------
        ndarray of bool
            Shaped as ``scores``; raises :class:`CalibratorError` when no cutoff was certified.

        Examples
        --------
        >>> from calibrank.assess.deploy.calibrator import AbstainRule, Calibrator, Cutoff, ScoreMap, Shortlist
        >>> cal = Calibrator(ScoreMap("logit", "platt", {"A": 1.0, "B": 0.0}),
        ...                  Cutoff("precision", 0.9, 0.9, 1.5, 0.82, 0.93, 1.5, "Learn-then-Test"),
        ...                  AbstainRule("margin", 0.3, coverage=0.8), Shortlist(0.1, 0.5), {})
        >>> cal.keep([2.0, 1.5, 0.0]).tolist()
        [True, True, False]
        """
        if self.cutoff.raw is None:
            raise CalibratorError(f"no cutoff is certified for {self.cutoff.metric} >= {self.cutoff.target:g} at "
                                  f"confidence {self.cutoff.confidence:g}; the highest certifiable level is "
                                  f"{self.cutoff.best_level:g} (cutoff {self.cutoff.best_raw})")
        return np.asarray(scores, dtype=np.float64) >= self.cutoff.raw

    def confidence(self, scores: Any, mask: Any = None) -> np.ndarray:
        """The abstain rule's confidence of each list of candidates.

        One of :data:`CONFIDENCES`: the top raw score, the top probability minus the second
        (``margin``), or a logistic regression on the list's largest probabilities (``list``).

        Parameters
        ----------
        scores : array-like of float
            ``[K]`` one list, or ``[Q, K]`` one list per row.
        mask : array-like of bool, default=None
            ``[Q, K]`` True where a row has a candidate (None: every slot).

        Returns
        -------
        float or ndarray of float
            One confidence per list (a scalar for one list).

        Examples
        --------
        >>> from calibrank.assess.deploy.calibrator import AbstainRule, Calibrator, Cutoff, ScoreMap, Shortlist
        >>> cal = Calibrator(ScoreMap("logit", "platt", {"A": 1.0, "B": 0.0}),
        ...                  Cutoff("precision", 0.9, 0.9, 1.5, 0.82, 0.93, 1.5, "Learn-then-Test"),
        ...                  AbstainRule("margin", 0.3, coverage=0.8), Shortlist(0.1, 0.5), {})
        >>> round(float(cal.confidence([2.0, 0.0, -2.0])), 3)   # 0.881 - 0.5
        0.381
        """
        s = np.asarray(scores, dtype=np.float64)
        one = s.ndim == 1
        s = s[None] if one else s
        m = np.ones(s.shape, bool) if mask is None else np.asarray(mask, dtype=bool).reshape(s.shape)
        if not m.any(axis=1).all():
            raise CalibratorError("scores: every list needs at least one candidate")
        rule = self.abstain_rule
        model = None if rule.list_coef is None else (rule.list_coef, rule.list_intercept)
        probs = None if rule.confidence == "top score" else self.predict_proba(s)
        out = list_confidence(rule.confidence, s, probs, m, model)
        return out[0] if one else out

    def abstain(self, scores: Any, mask: Any = None) -> np.ndarray | bool:
        """True where a list's confidence is below the rule's cut: abstain rather than answer with its top candidate.

        The cut was fitted to answer a share of validation queries (``coverage``) or to keep the
        top-1 error among the answered below ``risk`` (selective prediction).

        Parameters
        ----------
        scores, mask : array-like
            As :meth:`confidence`.

        Returns
        -------
        bool or ndarray of bool
            One decision per list (a bool for one list).

        Examples
        --------
        >>> from calibrank.assess.deploy.calibrator import AbstainRule, Calibrator, Cutoff, ScoreMap, Shortlist
        >>> cal = Calibrator(ScoreMap("logit", "platt", {"A": 1.0, "B": 0.0}),
        ...                  Cutoff("precision", 0.9, 0.9, 1.5, 0.82, 0.93, 1.5, "Learn-then-Test"),
        ...                  AbstainRule("margin", 0.3, coverage=0.8), Shortlist(0.1, 0.5), {})
        >>> cal.abstain([[2.0, 0.0], [0.2, 0.1]]).tolist()
        [False, True]
        """
        c = self.confidence(scores, mask)
        out = np.asarray(c) < self.abstain_rule.cut
        return bool(out) if np.ndim(c) == 0 else out

    def shortlist(self, scores: Any, mask: Any = None) -> np.ndarray:
        """The split-conformal shortlist of each list: True for the candidates in it.

        A candidate is kept when its share ``softmax(logit(p))`` of the list is at least
        ``1 - qhat`` (the LAC score); the shortlist holds a relevant candidate with probability
        ``1 - alpha``.

        Parameters
        ----------
        scores, mask : array-like
            As :meth:`confidence`.

        Returns
        -------
        ndarray of bool
            Shaped as ``scores``; raises :class:`CalibratorError` when no quantile was fitted.

        Examples
        --------
        >>> from calibrank.assess.deploy.calibrator import AbstainRule, Calibrator, Cutoff, ScoreMap, Shortlist
        >>> cal = Calibrator(ScoreMap("logit", "platt", {"A": 1.0, "B": 0.0}),
        ...                  Cutoff("precision", 0.9, 0.9, 1.5, 0.82, 0.93, 1.5, "Learn-then-Test"),
        ...                  AbstainRule("margin", 0.3, coverage=0.8), Shortlist(0.1, 0.5), {})
        >>> cal.shortlist([2.0, 0.0, -2.0]).tolist()
        [True, False, False]
        """
        if self.shortlist_rule.qhat is None:
            raise CalibratorError(f"no conformal quantile: too few validation queries for alpha "
                                  f"{self.shortlist_rule.alpha:g}")
        s = np.asarray(scores, dtype=np.float64)
        one = s.ndim == 1
        s = s[None] if one else s
        m = np.ones(s.shape, bool) if mask is None else np.asarray(mask, dtype=bool).reshape(s.shape)
        p = np.clip(self.predict_proba(s), 1e-7, 1 - 1e-7)
        z = np.where(m, np.log(p) - np.log1p(-p), -np.inf)
        z = z - z.max(axis=1, keepdims=True)
        pi = np.exp(z)
        pi = pi / pi.sum(axis=1, keepdims=True)
        out = (1.0 - pi <= self.shortlist_rule.qhat + 1e-12) & m
        return out[0] if one else out

    # ------------------------------------------------------------------ JSON
    def to_dict(self) -> dict[str, Any]:
        """The calibrator as plain JSON values (what :meth:`save` writes).

        Returns
        -------
        dict
            ``format``, ``schema``, ``map``, ``cutoff``, ``abstain``, ``shortlist`` and ``fitted_on``.

        Examples
        --------
        >>> from calibrank.assess.deploy.calibrator import AbstainRule, Calibrator, Cutoff, ScoreMap, Shortlist
        >>> cal = Calibrator(ScoreMap("logit", "platt", {"A": 1.0, "B": 0.0}),
        ...                  Cutoff("precision", 0.9, 0.9, 1.5, 0.82, 0.93, 1.5, "Learn-then-Test"),
        ...                  AbstainRule("margin", 0.3, coverage=0.8), Shortlist(0.1, 0.5), {})
        >>> d = cal.to_dict()
        >>> d["format"], d["map"]["method"], d["cutoff"]["raw"]
        ('calibrank.calibrator', 'platt', 1.5)
        """
        return {"format": FORMAT, "schema": SCHEMA, "map": self.map.to_dict(), "cutoff": _field_dict(self.cutoff),
                "abstain": _field_dict(self.abstain_rule), "shortlist": _field_dict(self.shortlist_rule),
                "fitted_on": dict(self.fitted_on)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Calibrator":
        """A calibrator from :meth:`to_dict`'s values, every field checked.

        Parameters
        ----------
        d : mapping
            As :meth:`to_dict` returns it; an unknown or missing key, a foreign format or another
            schema is one :class:`CalibratorError` naming the field.

        Returns
        -------
        Calibrator

        Examples
        --------
        >>> from calibrank.assess.deploy.calibrator import AbstainRule, Calibrator, Cutoff, ScoreMap, Shortlist
        >>> cal = Calibrator(ScoreMap("logit", "platt", {"A": 1.0, "B": 0.0}),
        ...                  Cutoff("precision", 0.9, 0.9, 1.5, 0.82, 0.93, 1.5, "Learn-then-Test"),
        ...                  AbstainRule("margin", 0.3, coverage=0.8), Shortlist(0.1, 0.5), {})
        >>> Calibrator.from_dict(cal.to_dict()) == cal
        True
        """
        _strict("calibrator", d, {"format", "schema", "map", "cutoff", "abstain", "shortlist", "fitted_on"})
        if d["format"] != FORMAT:
            raise CalibratorError(f"format: expected {FORMAT!r}, got {d['format']!r}")
        if d["schema"] != SCHEMA:
            raise CalibratorError(f"schema: this calibrank reads schema {SCHEMA}, got {d['schema']!r}")
        _strict("cutoff", d["cutoff"], {f.name for f in dataclasses.fields(Cutoff)})
        _strict("abstain", d["abstain"], {"confidence", "cut"}, {"coverage", "risk", "list_coef", "list_intercept"})
        _strict("shortlist", d["shortlist"], {"alpha", "qhat"})
        if not isinstance(d["fitted_on"], Mapping):
            raise CalibratorError("fitted_on: expected an object")
        abstain = dict(d["abstain"])
        if abstain.get("list_coef") is not None:
            abstain["list_coef"] = tuple(abstain["list_coef"])
        try:
            return cls(ScoreMap.from_dict(d["map"]), Cutoff(**d["cutoff"]), AbstainRule(**abstain),
                       Shortlist(**d["shortlist"]), dict(d["fitted_on"]))
        except MapError as exc:
            raise CalibratorError(f"map: {exc}") from None

    def save(self, path: str | os.PathLike) -> Path:
        """Write the calibrator as JSON at ``path``, atomically (a reader never sees half a file).

        JSON rather than pickle: the file holds numbers only, so loading it runs no code.

        Parameters
        ----------
        path : str or os.PathLike
            The file to write (replaced if it exists).

        Returns
        -------
        Path
            ``path``.

        Examples
        --------
        >>> import tempfile
        >>> from calibrank.assess.deploy.calibrator import AbstainRule, Calibrator, Cutoff, ScoreMap, Shortlist
        >>> cal = Calibrator(ScoreMap("logit", "platt", {"A": 1.0, "B": 0.0}),
        ...                  Cutoff("precision", 0.9, 0.9, 1.5, 0.82, 0.93, 1.5, "Learn-then-Test"),
        ...                  AbstainRule("margin", 0.3, coverage=0.8), Shortlist(0.1, 0.5), {})
        >>> tmp = tempfile.TemporaryDirectory()
        >>> path = cal.save(f"{tmp.name}/calibrator.json")
        >>> Calibrator.load(path) == cal
        True
        >>> tmp.cleanup()
        """
        path = Path(path)
        tmp = path.with_name(f".tmp-{path.name}.{os.getpid()}")
        try:
            tmp.write_text(json.dumps(self.to_dict(), indent=2, allow_nan=False) + "\n", encoding="utf-8")
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)
        return path

    @classmethod
    def load(cls, path: str | os.PathLike) -> "Calibrator":
        """Read a calibrator written by :meth:`save`.

        Parameters
        ----------
        path : str or os.PathLike
            A ``calibrator.json``; a missing, damaged or foreign file is one :class:`CalibratorError`
            naming the file (and the line or field).

        Returns
        -------
        Calibrator

        Examples
        --------
        >>> import tempfile
        >>> from calibrank.assess.deploy.calibrator import AbstainRule, Calibrator, Cutoff, ScoreMap, Shortlist
        >>> cal = Calibrator(ScoreMap("logit", "platt", {"A": 1.0, "B": 0.0}),
        ...                  Cutoff("precision", 0.9, 0.9, 1.5, 0.82, 0.93, 1.5, "Learn-then-Test"),
        ...                  AbstainRule("margin", 0.3, coverage=0.8), Shortlist(0.1, 0.5), {})
        >>> tmp = tempfile.TemporaryDirectory()
        >>> Calibrator.load(cal.save(f"{tmp.name}/calibrator.json")).keep([2.0, 0.0]).tolist()
        [True, False]
        >>> tmp.cleanup()
        """
        path = Path(path)
        try:
            d = json.loads(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise CalibratorError(f"{path}: cannot be read ({exc.strerror or exc})") from None
        except json.JSONDecodeError as exc:
            raise CalibratorError(f"{path}, line {exc.lineno}: not JSON ({exc.msg}); expected a calibrator "
                                  "written by calibrank") from None
        try:
            return cls.from_dict(d)
        except CalibratorError as exc:
            raise CalibratorError(f"{path}: {exc}") from None
