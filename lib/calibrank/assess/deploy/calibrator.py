"""What a practitioner deploys: a ranker's raw score as a probability, a certified cutoff, when to abstain.

A :class:`Calibrator` is fitted on validation queries only (:func:`calibrank.assess.deploy.fit.fit_calibrator`) and holds
numbers, not code: the map from the raw score to a probability (:class:`~calibrank.assess.deploy.maps.ScoreMap`),
the cutoff in raw-score units certified by Learn-then-Test (:mod:`calibrank.assess.deploy.certify`) with
its guarantee, the abstain rule (a list confidence and its cut), the split-conformal quantile
of the shortlists, what it was fitted on, and a :class:`~calibrank.assess.deploy.watch.Fingerprint` of the
validation scores with which :meth:`Calibrator.watch` tells whether new queries are like them.
:meth:`Calibrator.save` writes JSON (no pickle); :meth:`Calibrator.load` and every method that applies
it need numpy and scipy alone.

The file says when it was edited. It carries the SHA-256 of a canonical serialisation of the rest of
its content (keys sorted, no blanks; :func:`content_digest`), and :meth:`Calibrator.load` refuses a file
whose content no longer hashes to it, a key given twice in one object, a key it does not know at any
depth, and a number out of its range, each as one line naming the file and the field. An edited file
is read only on request (``allow_edited=True``), and the calibrator then says so in ``fitted_on["edited"]``.
The digest detects edits, not forgeries: whoever edits a file can hash it again.

One score per candidate: where a ranker gave several samples, the calibrator reads their mean.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import re
from collections.abc import Mapping, Set
from pathlib import Path
from typing import Any

import numpy as np
from scipy.special import expit

from calibrank.assess.deploy.maps import MAPS, MapError, ScoreMap
from calibrank.assess.deploy.watch import Fingerprint, FingerprintError, Watch, watch
from calibrank.assess.options import SCORE_KINDS, WatchSettings, settings_from

__all__ = [
    "AbstainRule",
    "Calibrator",
    "CalibratorError",
    "Cutoff",
    "Shortlist",
    "CONFIDENCES",
    "content_digest",
    "list_confidence",
    "top_probabilities",
]

FORMAT = "calibrank.calibrator"
SCHEMA = 2
"""Schema 2 adds the content digest (``sha256``) and the validation scores' ``fingerprint``; schema 1 files carry
neither and are read only with ``allow_edited=True``."""
CONFIDENCES = ("top score", "margin", "list")
"""List confidences of the abstain rule: the top raw score; the top probability minus the second;
a logistic regression on the list's sorted top probabilities (after Gisserot-Boukhlef et al. 2024)."""


class CalibratorError(ValueError):
    """A calibrator that cannot be built or read; the message names the file or the field."""


def _strict(name: str, d: Mapping[str, Any], required: Set[str], optional: Set[str] = frozenset()) -> None:
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
        raise CalibratorError(
            f"{name}: expected a number {'in [0, 1]' if closed else 'strictly between 0 and 1'}, got {v!r}"
        )
    return float(v)


def _number(name: str, v: Any, *, allow_none: bool = False) -> float | None:
    if v is None and allow_none:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise CalibratorError(f"{name}: expected a finite number, got {v!r}")
    return float(v)


def _count(name: str, v: Any, low: int = 0) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < low:
        raise CalibratorError(f"{name}: expected a whole number >= {low}, got {v!r}")
    return int(v)


def _text(name: str, v: Any) -> str:
    if not isinstance(v, str):
        raise CalibratorError(f"{name}: expected text, got {v!r}")
    return v


_HEX = re.compile(r"^[0-9a-f]{64}$")


def _sha256(name: str, v: Any, *, allow_none: bool = False) -> str | None:
    if v is None and allow_none:
        return None
    if not isinstance(v, str) or not _HEX.match(v):
        raise CalibratorError(f"{name}: expected a SHA-256 as 64 lowercase hex digits, got {v!r}")
    return v


#: ``fitted_on``'s keys, each optional, and the check of its value.
_FITTED_ON = {
    "source": _text,
    "queries": _count,
    "candidates": _count,
    "relevant": _count,
    "base_rate": lambda n, v: _level(n, v, closed=True),
    "score_kind": _text,
    "samples": lambda n, v: _count(n, v, 1),
    "relevant_at": lambda n, v: _count(n, v, 1),
    "map_brier": None,
    "confidence_aurc": None,
    "seed": _count,
    "calibrank": _text,
    "inputs": None,
    "edited": None,
}


def _scores_of(name: str, v: Any, names: tuple[str, ...]) -> None:
    """An object of names (among ``names``) to numbers in [0, 1] (a Brier score, an AURC)."""
    if not isinstance(v, Mapping):
        raise CalibratorError(f"{name}: expected an object, got {type(v).__name__}")
    unknown = sorted(set(v) - set(names))
    if unknown:
        raise CalibratorError(f"{name}: unknown key(s) {unknown}; expected some of {list(names)}")
    for k, x in v.items():
        _level(f"{name}.{k}", x, closed=True)


def _records(name: str, v: Any, keys: dict[str, Any]) -> None:
    """A list of objects with exactly ``keys`` (name -> check)."""
    if not isinstance(v, list):
        raise CalibratorError(f"{name}: expected a list, got {type(v).__name__}")
    for i, item in enumerate(v):
        _strict(f"{name}[{i}]", item, set(keys))
        for k, check in keys.items():
            check(f"{name}[{i}].{k}", item[k])


def _check_fitted_on(d: Any, kind: str) -> None:
    """Every key of ``fitted_on`` known and its value in range; the counts and the score kind agree."""
    if not isinstance(d, Mapping):
        raise CalibratorError(f"fitted_on: expected an object, got {type(d).__name__}")
    unknown = sorted(set(d) - set(_FITTED_ON))
    if unknown:
        raise CalibratorError(f"fitted_on: unknown key(s) {unknown}; expected some of {sorted(_FITTED_ON)}")
    for k, check in _FITTED_ON.items():
        if k in d and check is not None:
            check(f"fitted_on.{k}", d[k])
    if "map_brier" in d:
        _scores_of("fitted_on.map_brier", d["map_brier"], MAPS)
    if "confidence_aurc" in d:
        _scores_of("fitted_on.confidence_aurc", d["confidence_aurc"], CONFIDENCES)
    if "inputs" in d:
        _records("fitted_on.inputs", d["inputs"], {"file": _text, "sha256": _sha256})
    if "edited" in d:
        _records(
            "fitted_on.edited",
            d["edited"],
            {"content": _sha256, "recorded": lambda n, v: _sha256(n, v, allow_none=True)},
        )
    if d.get("score_kind", kind) != kind:
        raise CalibratorError(
            f"fitted_on.score_kind: {d['score_kind']!r} but the map reads a {kind}; expected the same"
        )
    if d.get("score_kind") not in (None, *SCORE_KINDS):
        raise CalibratorError(f"fitted_on.score_kind: expected one of {', '.join(SCORE_KINDS)}")
    queries, candidates, relevant = d.get("queries"), d.get("candidates"), d.get("relevant")
    if queries is not None and candidates is not None and queries > candidates:
        raise CalibratorError(f"fitted_on.candidates: {candidates} candidates cannot fill {queries} queries")
    if relevant is not None and candidates is not None:
        if relevant > candidates:
            raise CalibratorError(f"fitted_on.relevant: {relevant} relevant of {candidates} candidates")
        if "base_rate" in d and candidates and abs(d["base_rate"] - relevant / candidates) > 1e-9:
            raise CalibratorError(
                f"fitted_on.base_rate: {d['base_rate']!r} but {relevant} relevant of {candidates} "
                f"candidates is {relevant / candidates!r}; expected the same"
            )


def content_digest(d: Mapping[str, Any]) -> str:
    """The SHA-256 of a calibrator's JSON values less its ``sha256``, serialised canonically (keys sorted, no blanks,
    ASCII, Python's shortest round-trip floats), so that a file's layout does not count and its content does.

    Examples
    --------
    >>> content_digest({"b": 1.5, "a": [1, 2]}) == content_digest({"a": [1, 2], "b": 1.5, "sha256": "x"})
    True
    """
    body = {k: v for k, v in d.items() if k != "sha256"}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


class _Duplicate(ValueError):
    pass


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise _Duplicate(k)
        out[k] = v
    return out


_ABOVE_ONE = float(np.nextafter(1.0, 2.0))
"""The cut above every confidence in [0, 1] (the fitting's "abstain always")."""


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
        if (self.raw is None) != (self.probability is None):
            raise CalibratorError("cutoff.probability: given exactly when a raw cutoff is")
        _level("cutoff.best_level", self.best_level, closed=True)
        _number("cutoff.best_raw", self.best_raw, allow_none=True)
        _text("cutoff.procedure", self.procedure)

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
            raise CalibratorError(
                f"abstain.confidence: expected one of {', '.join(CONFIDENCES)}, got {self.confidence!r}"
            )
        _number("abstain.cut", self.cut)
        if self.confidence != "top score" and not 0.0 <= self.cut <= _ABOVE_ONE:
            raise CalibratorError(
                f"abstain.cut: a {self.confidence} confidence lies in [0, 1], so expected a cut in "
                f"[0, 1] (or just above 1: abstain always), got {self.cut!r}"
            )
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
        if self.qhat is not None:
            _level("shortlist.qhat", self.qhat, closed=True)  # a quantile of 1 - a share of the list


def top_probabilities(probs: np.ndarray, mask: np.ndarray, m: int) -> np.ndarray:
    """``[Q, m]`` each list's ``m`` largest probabilities in decreasing order (0 past a short list's end)."""
    p = -np.sort(-np.where(mask, probs, 0.0), axis=1)
    out = np.zeros((p.shape[0], m))
    out[:, : min(m, p.shape[1])] = p[:, :m]
    return out


def list_confidence(
    name: str,
    scores: np.ndarray,
    probs: np.ndarray | None,
    mask: np.ndarray,
    list_model: tuple[Any, float] | None = None,
) -> np.ndarray:
    """``[Q]`` the confidence ``name`` (one of :data:`CONFIDENCES`) of each list: its top raw score, its top
    probability minus the second, or ``list_model``'s (coefficients, intercept) logistic regression on its
    largest probabilities. The one formula the fitting, the page and :meth:`Calibrator.confidence` share."""
    if name == "top score":
        return np.where(mask, scores, -np.inf).max(axis=1)
    assert probs is not None, "the margin and list confidences need probs"
    if name == "margin":
        top = top_probabilities(probs, mask, 2)
        return top[:, 0] - top[:, 1]
    assert list_model is not None, "the list confidence needs list_model"
    coef, intercept = list_model
    return expit(top_probabilities(probs, mask, len(coef)) @ np.asarray(coef) + intercept)


#: What watching a calibrator without a fingerprint says (the command and :meth:`Calibrator.watch`).
NO_FINGERPRINT = (
    "no fingerprint of the validation scores (a calibrator written before calibrank watched, or built "
    "without one); watching needs a refit: run calibrank assess again"
)


def _plain(value: Any) -> Any:
    """A numpy scalar as its Python value (what JSON writes)."""
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"fitted_on: {type(value).__name__} is not a JSON value")


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
        input files with their SHA-256 (each key optional, none unknown; ``edited`` when it was
        read from an edited file).
    fingerprint : Fingerprint, default=None
        The validation scores' quantiles, which :meth:`watch` compares new queries with (None: it
        cannot watch).

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
    fingerprint: Fingerprint | None = None

    def __post_init__(self) -> None:
        for name, cls in (
            ("map", ScoreMap),
            ("cutoff", Cutoff),
            ("abstain_rule", AbstainRule),
            ("shortlist_rule", Shortlist),
        ):
            if not isinstance(getattr(self, name), cls):
                raise CalibratorError(f"{name}: expected a {cls.__name__}, got {type(getattr(self, name)).__name__}")
        if self.fingerprint is not None and not isinstance(self.fingerprint, Fingerprint):
            raise CalibratorError(f"fingerprint: expected a Fingerprint, got {type(self.fingerprint).__name__}")
        if not self.map.increasing and self.cutoff.raw is not None:
            raise CalibratorError("cutoff.raw: a raw cutoff needs a map that orders candidates as their scores do")
        if self.cutoff.raw is not None and self.cutoff.probability is not None:  # given together (Cutoff)
            p = float(self.map(np.float64(self.cutoff.raw)))
            if abs(p - self.cutoff.probability) > 1e-6:
                raise CalibratorError(
                    f"cutoff.probability: {self.cutoff.probability!r}, but the map gives the raw "
                    f"cutoff {self.cutoff.raw!r} the probability {p!r}; expected the map's value"
                )
        _check_fitted_on(self.fitted_on, self.map.kind)
        fp, fo = self.fingerprint, self.fitted_on
        if fp is not None and (fo.get("queries", fp.queries), fo.get("candidates", fp.candidates)) != (
            fp.queries,
            fp.candidates,
        ):
            raise CalibratorError(
                f"fingerprint: it summarises {fp.queries} queries and {fp.candidates} candidates, "
                f"fitted_on says {fo.get('queries')} and {fo.get('candidates')}; expected the same"
            )

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
        ...                  Cutoff("precision", 0.9, 0.9, 1.5, 0.817574, 0.93, 1.5, "Learn-then-Test"),
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
        ...                  Cutoff("precision", 0.9, 0.9, 1.5, 0.817574, 0.93, 1.5, "Learn-then-Test"),
        ...                  AbstainRule("margin", 0.3, coverage=0.8), Shortlist(0.1, 0.5), {})
        >>> cal.keep([2.0, 1.5, 0.0]).tolist()
        [True, True, False]
        """
        if self.cutoff.raw is None:
            raise CalibratorError(
                f"no cutoff is certified for {self.cutoff.metric} >= {self.cutoff.target:g} at "
                f"confidence {self.cutoff.confidence:g}; the highest certifiable level is "
                f"{self.cutoff.best_level:g} (cutoff {self.cutoff.best_raw})"
            )
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
        ...                  Cutoff("precision", 0.9, 0.9, 1.5, 0.817574, 0.93, 1.5, "Learn-then-Test"),
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
        model = None if rule.list_coef is None or rule.list_intercept is None else (rule.list_coef, rule.list_intercept)
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
        ...                  Cutoff("precision", 0.9, 0.9, 1.5, 0.817574, 0.93, 1.5, "Learn-then-Test"),
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
        ...                  Cutoff("precision", 0.9, 0.9, 1.5, 0.817574, 0.93, 1.5, "Learn-then-Test"),
        ...                  AbstainRule("margin", 0.3, coverage=0.8), Shortlist(0.1, 0.5), {})
        >>> cal.shortlist([2.0, 0.0, -2.0]).tolist()
        [True, False, False]
        """
        if self.shortlist_rule.qhat is None:
            raise CalibratorError(
                f"no conformal quantile: too few validation queries for alpha {self.shortlist_rule.alpha:g}"
            )
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

    def watch(self, scores: Any, mask: Any = None, **settings: Any) -> Watch:
        """Watch new, unjudged queries: are their scores like the validation ones, and how does the cutoff do there?

        The shift test compares each query summary (top score, margin, mean score, list length) with the
        calibrator's :class:`~calibrank.assess.deploy.watch.Fingerprint` by a two-sample Kolmogorov-Smirnov
        test (Bonferroni over the summaries), so queries drawn as the validation ones were are flagged at
        most about ``false_alarm`` of the time; a flagged run is one the guarantee was not made for. The
        cutoff's precision is estimated from the calibrated probabilities (expected hits: the sum of the
        kept candidates' probabilities; CBPE), with an interval from resampling queries and drawing
        their candidates' relevance (:mod:`calibrank.assess.deploy.watch`).

        Parameters
        ----------
        scores : array-like of float
            ``[Q, K]`` the new raw scores, one list per row (``[K]``: one list).
        mask : array-like of bool, default=None
            ``[Q, K]`` True where a row has a candidate (None: every slot).
        **settings
            ``false_alarm``, ``level``, ``n_resamples``, ``seed``
            (:class:`~calibrank.assess.options.WatchSettings`, which holds their defaults).

        Returns
        -------
        Watch
            ``flagged``, ``shift``, ``estimate``; ``lines()`` in words, ``to_dict()`` as JSON values.

        Examples
        --------
        >>> import numpy as np
        >>> from calibrank.assess.deploy.fit import fit_calibrator
        >>> from calibrank.assess.read.scored import ScoredRun
        >>> rng = np.random.default_rng(0)
        >>> y = (rng.random((300, 10)) < 0.2).astype(int)
        >>> s = 3 * y + rng.normal(size=y.shape)
        >>> valid = ScoredRun(qids=np.arange(300), docids=np.tile(np.arange(10), (300, 1)), mask=np.ones(y.shape, bool),
        ...                   scores=s[None], relevance=y, judged=np.ones(y.shape, bool), n_relevant=y.sum(axis=1))
        >>> cal = fit_calibrator(valid, precision=0.8)
        >>> y_new = rng.random((200, 10)) < 0.2                   # the same ranker on new queries, not judged
        >>> new = 3 * y_new + rng.normal(size=(200, 10))
        >>> w = cal.watch(new, n_resamples=200)
        >>> w.flagged, [round(v, 3) for v in w.estimate.precision]  # expected precision [95% interval]
        (False, [0.856, 0.816, 0.889])
        >>> round(float(y_new[new >= cal.cutoff.raw].mean()), 3)   # what judging them would measure
        0.874
        >>> cal.watch(10 * new, n_resamples=200).flagged         # another ranker's scale
        True
        """
        options = settings_from(settings, "Calibrator.watch", WatchSettings)
        if self.fingerprint is None:
            raise CalibratorError(NO_FINGERPRINT)
        try:
            return watch(self, scores, mask, **dataclasses.asdict(options))
        except FingerprintError as exc:
            raise CalibratorError(str(exc)) from None

    # ------------------------------------------------------------------ JSON
    def to_dict(self) -> dict[str, Any]:
        """The calibrator as plain JSON values (what :meth:`save` writes).

        Returns
        -------
        dict
            ``format``, ``schema``, ``map``, ``cutoff``, ``abstain``, ``shortlist``, ``fitted_on``,
            ``fingerprint`` (when there is one) and ``sha256``, the digest of all the others
            (:func:`content_digest`).

        Examples
        --------
        >>> from calibrank.assess.deploy.calibrator import AbstainRule, Calibrator, Cutoff, ScoreMap, Shortlist
        >>> cal = Calibrator(ScoreMap("logit", "platt", {"A": 1.0, "B": 0.0}),
        ...                  Cutoff("precision", 0.9, 0.9, 1.5, 0.817574, 0.93, 1.5, "Learn-then-Test"),
        ...                  AbstainRule("margin", 0.3, coverage=0.8), Shortlist(0.1, 0.5), {})
        >>> d = cal.to_dict()
        >>> d["format"], d["map"]["method"], d["cutoff"]["raw"]
        ('calibrank.calibrator', 'platt', 1.5)
        """
        d = {
            "format": FORMAT,
            "schema": SCHEMA,
            "map": self.map.to_dict(),
            "cutoff": _field_dict(self.cutoff),
            "abstain": _field_dict(self.abstain_rule),
            "shortlist": _field_dict(self.shortlist_rule),
            "fitted_on": json.loads(json.dumps(dict(self.fitted_on), allow_nan=False, default=_plain)),
        }
        if self.fingerprint is not None:
            d["fingerprint"] = self.fingerprint.to_dict()
        return {**d, "sha256": content_digest(d)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], *, allow_edited: bool = False) -> Calibrator:
        """A calibrator from :meth:`to_dict`'s values, every field checked, and then its digest.

        Parameters
        ----------
        d : mapping
            As :meth:`to_dict` returns it; an unknown or missing key at any depth, a number out of its
            range, a foreign format or another schema is one :class:`CalibratorError` naming the field,
            and so is content that no longer hashes to its ``sha256``.
        allow_edited : bool, default=False
            Read edited content (or a schema 1 file, which has no digest) all the same; the calibrator's
            ``fitted_on["edited"]`` then records the digest recorded and the one found.

        Returns
        -------
        Calibrator

        Examples
        --------
        >>> from calibrank.assess.deploy.calibrator import AbstainRule, Calibrator, Cutoff, ScoreMap, Shortlist
        >>> cal = Calibrator(ScoreMap("logit", "platt", {"A": 1.0, "B": 0.0}),
        ...                  Cutoff("precision", 0.9, 0.9, 1.5, 0.817574, 0.93, 1.5, "Learn-then-Test"),
        ...                  AbstainRule("margin", 0.3, coverage=0.8), Shortlist(0.1, 0.5), {})
        >>> Calibrator.from_dict(cal.to_dict()) == cal
        True
        >>> d = cal.to_dict()
        >>> d["cutoff"]["raw"], d["cutoff"]["probability"] = 1.2, float(cal.predict_proba(1.2))
        >>> Calibrator.from_dict(d)                                  # an edited cutoff
        Traceback (most recent call last):
        ...
        calibrank.assess.deploy.calibrator.CalibratorError: sha256: the content was edited after calibrank wrote it (it hashes to 6cb4d95eba68..., the file records a3ab66930748...); expected it as written: refit, or read it with allow_edited=True
        >>> edited = Calibrator.from_dict(d, allow_edited=True)
        >>> edited.fitted_on["edited"][0]["recorded"] == cal.to_dict()["sha256"], edited.cutoff.raw
        (True, 1.2)
        """
        if not isinstance(d, Mapping):
            raise CalibratorError(f"calibrator: expected an object, got {type(d).__name__}")
        if d.get("format") != FORMAT:
            raise CalibratorError(f"format: expected {FORMAT!r}, got {d.get('format')!r}")
        if d.get("schema") not in (1, SCHEMA) or isinstance(d.get("schema"), bool):
            raise CalibratorError(
                f"schema: this calibrank reads schema {SCHEMA} (and 1, unsealed), got {d.get('schema')!r}"
            )
        sealed = d["schema"] == SCHEMA
        _strict(
            "calibrator",
            d,
            {
                "format",
                "schema",
                "map",
                "cutoff",
                "abstain",
                "shortlist",
                "fitted_on",
                *(("sha256",) if sealed else ()),
            },
            {"fingerprint"} if sealed else set(),
        )
        _strict("cutoff", d["cutoff"], {f.name for f in dataclasses.fields(Cutoff)})
        _strict("abstain", d["abstain"], {"confidence", "cut"}, {"coverage", "risk", "list_coef", "list_intercept"})
        _strict("shortlist", d["shortlist"], {"alpha", "qhat"})
        abstain = dict(d["abstain"])
        if abstain.get("list_coef") is not None:
            if not isinstance(abstain["list_coef"], list):
                raise CalibratorError("abstain.list_coef: expected a list of numbers")
            abstain["list_coef"] = tuple(abstain["list_coef"])
        try:
            fingerprint = Fingerprint.from_dict(d["fingerprint"]) if "fingerprint" in d else None
        except FingerprintError as exc:
            raise CalibratorError(f"fingerprint: {exc}") from None
        try:
            score_map = ScoreMap.from_dict(d["map"]) if isinstance(d["map"], Mapping) else None
        except MapError as exc:
            raise CalibratorError(f"map: {exc}") from None
        if score_map is None:
            raise CalibratorError(f"map: expected an object, got {type(d['map']).__name__}")
        parts = (score_map, Cutoff(**d["cutoff"]), AbstainRule(**abstain), Shortlist(**d["shortlist"]))
        fitted_on = d["fitted_on"]
        cls(*parts, fitted_on, fingerprint)  # every field checked before the digest
        recorded = _sha256("sha256", d["sha256"]) if sealed else None
        found = content_digest(d)
        if recorded != found:
            if not allow_edited:
                if recorded is None:  # not sealed
                    raise CalibratorError(
                        "schema: schema 1 carries no digest, so an edit cannot be told; expected "
                        f"schema {SCHEMA}: refit with calibrank assess, or read it with "
                        "allow_edited=True"
                    )
                raise CalibratorError(
                    f"sha256: the content was edited after calibrank wrote it (it hashes to "
                    f"{found[:12]}..., the file records {recorded[:12]}...); expected it as written: "
                    "refit, or read it with allow_edited=True"
                )
            record = {"recorded": recorded, "content": found}
            fitted_on = {**fitted_on, "edited": [*fitted_on.get("edited", []), record]}
        return cls(*parts, dict(fitted_on), fingerprint)

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
        ...                  Cutoff("precision", 0.9, 0.9, 1.5, 0.817574, 0.93, 1.5, "Learn-then-Test"),
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
    def load(cls, path: str | os.PathLike, *, allow_edited: bool = False) -> Calibrator:
        """Read a calibrator written by :meth:`save`, refusing one edited since.

        Parameters
        ----------
        path : str or os.PathLike
            A ``calibrator.json``; a missing, damaged, edited or foreign file is one :class:`CalibratorError`
            naming the file (and the line or field): a key given twice in one object, a key unknown at any
            depth, a number out of its range, content that no longer hashes to its ``sha256``.
        allow_edited : bool, default=False
            Read an edited file all the same (:meth:`from_dict`); ``fitted_on["edited"]`` records it.

        Returns
        -------
        Calibrator

        Examples
        --------
        >>> import tempfile
        >>> from calibrank.assess.deploy.calibrator import AbstainRule, Calibrator, Cutoff, ScoreMap, Shortlist
        >>> cal = Calibrator(ScoreMap("logit", "platt", {"A": 1.0, "B": 0.0}),
        ...                  Cutoff("precision", 0.9, 0.9, 1.5, 0.817574, 0.93, 1.5, "Learn-then-Test"),
        ...                  AbstainRule("margin", 0.3, coverage=0.8), Shortlist(0.1, 0.5), {})
        >>> tmp = tempfile.TemporaryDirectory()
        >>> Calibrator.load(cal.save(f"{tmp.name}/calibrator.json")).keep([2.0, 0.0]).tolist()
        [True, False]
        >>> tmp.cleanup()
        """
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
            d = json.loads(text, object_pairs_hook=_no_duplicates)  # NaN is read, for its field to refuse
        except OSError as exc:
            raise CalibratorError(f"{path}: cannot be read ({exc.strerror or exc})") from None
        except UnicodeDecodeError as exc:
            raise CalibratorError(
                f"{path}: not UTF-8 text (byte {exc.start}); expected a calibrator written by calibrank"
            ) from None
        except json.JSONDecodeError as exc:
            raise CalibratorError(
                f"{path}, line {exc.lineno}: not JSON ({exc.msg}); expected a calibrator written by calibrank"
            ) from None
        except _Duplicate as exc:
            key = str(exc)
            lines = [
                i for i, line in enumerate(text.splitlines(), 1) if f"{json.dumps(key)}:" in line.replace('" :', '":')
            ]
            where = f", lines {lines[0]} and {lines[1]}" if len(lines) == 2 else ""
            raise CalibratorError(
                f"{path}{where}: key {key!r} is given twice in one object; expected each key once"
            ) from None
        try:
            return cls.from_dict(d, allow_edited=allow_edited)
        except CalibratorError as exc:
            raise CalibratorError(f"{path}: {exc}") from None
