"""Fit a :class:`~calibrank.assess.deploy.calibrator.Calibrator` on validation queries.

- The map: each map of :func:`calibrank.assess.deploy.maps.maps_for` scored by Brier on held-out folds
  of whole validation queries (``method="auto"``), then refitted on every validation pair. The isotonic
  map's end blocks are pooled until each holds at least :data:`TAIL` candidates (:func:`fit_map`).
- The cutoff: :func:`calibrank.assess.deploy.certify.certify` on the raw scores.
- The abstain rule: each list confidence of :data:`~calibrank.assess.deploy.calibrator.CONFIDENCES` scored
  by AURC on the validation queries (the ``list`` model cross-fitted over folds of queries), the
  lowest kept; its cut is the strictest one that answers at least the requested ``coverage`` of validation
  queries, ties included (:func:`_coverage_cut`), or is the loosest
  cut whose top-1 error is certified below ``risk`` (Learn-then-Test over queries, which are
  independent, with the exact binomial test).
- The shortlist: the split-conformal quantile of the LAC score at ``alpha``
  (:mod:`calibrank.assess.sections.shortlists`).
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats
from scipy.special import expit
from sklearn.isotonic import isotonic_regression
from sklearn.linear_model import LogisticRegression

from calibrank import __version__
from calibrank.assess.deploy.calibrator import (
    CONFIDENCES,
    AbstainRule,
    Calibrator,
    Cutoff,
    Shortlist,
    list_confidence,
    top_probabilities,
)
from calibrank.assess.deploy.certify import PROCEDURE, Certificate, Metric, certify, min_kept
from calibrank.assess.deploy.maps import ScoreMap, maps_for
from calibrank.assess.deploy.watch import Fingerprint
from calibrank.assess.errors import OptionError
from calibrank.assess.options import Settings, resolve
from calibrank.assess.read.scored import AssessError, ScoredRun
from calibrank.atomic import sha256_file
from calibrank.methods.conformal import candidate_scores, conformal_quantile
from calibrank.methods.listwise import candidate_distribution
from calibrank.methods.recalibrate import fit_recalibrator
from calibrank.methods.selective import selective_scores

__all__ = [
    "MAX_FIT_PAIRS",
    "TAIL",
    "choose_map",
    "fit_calibrator",
    "fit_map",
    "fit_parts",
    "raw_scores",
    "top_loss",
    "valid_confidences",
]

MAX_FIT_PAIRS = 250_000
"""A map is fitted on at most this many validation pairs (a seeded sample beyond)."""
FOLDS = 5
M_MAX = 10
TAIL = 30
"""The fewest validation candidates an end block of the isotonic map holds: with 30 candidates none relevant
the 95% upper bound of the rate is about 10% (3/30, the rule of three), so a probability of 0 or 1 at the ends
says "below 10%" or "above 90%" at the least, not what one or two candidates happened to be."""


def raw_scores(run: ScoredRun) -> np.ndarray:
    """``[Q, K]`` one raw score per candidate: the mean over the run's samples (0 where padded)."""
    return np.where(run.mask, run.scores.mean(axis=0), 0.0)


def _squash(scores: np.ndarray) -> tuple[float, float]:
    m, d = float(scores.mean()), float(scores.std())
    return m, (d if d > 0 else 1.0)


def _isotonic_knots(q: np.ndarray, y: np.ndarray, tail: int) -> tuple[np.ndarray, np.ndarray]:
    """The knots of the isotonic fit of ``y`` on ``q`` with its end blocks pooled to at least ``tail`` candidates.

    The pool-adjacent-violators fit (Zadrozny & Elkan 2002; ties in ``q`` averaged first, as scikit-learn's
    ``IsotonicRegression`` does) cuts the sorted candidates into blocks, each predicting its share of relevant
    candidates. Where the lowest or highest block holds fewer than ``tail`` candidates it is pooled with its
    neighbour, and again, until it holds enough: the pooled share lies between the two it pools, so the map
    stays non-decreasing. Pooling rather than shrinking toward a prior keeps each end value what it is, the
    share of relevant candidates among those behind it, with no prior to choose; the middle, where blocks
    are bounded by their neighbours, is left as fitted. The knots are each block's first and last value of
    ``q`` with the block's share, as scikit-learn's ``X_thresholds_`` / ``y_thresholds_`` (linear between blocks).
    """
    ux, inv = np.unique(q, return_inverse=True)
    w = np.bincount(inv).astype(np.float64)
    hits = np.bincount(inv, weights=y.astype(np.float64))
    fitted = isotonic_regression(hits / w, sample_weight=w, y_min=0.0, y_max=1.0, increasing=True)
    starts = np.flatnonzero(np.r_[True, np.diff(fitted) != 0])
    ends = np.r_[starts[1:], ux.size] - 1
    blocks: list[list[Any]] = [
        [int(a), int(b), float(n), float(h), float(v)]
        for a, b, n, h, v in zip(
            starts, ends, np.add.reduceat(w, starts), np.add.reduceat(hits, starts), fitted[starts]
        )
    ]

    def pool(i: int) -> None:  # blocks i and i + 1 become one
        a, b = blocks[i], blocks.pop(i + 1)
        a[1], a[2], a[3] = b[1], a[2] + b[2], a[3] + b[3]
        a[4] = a[3] / a[2]

    while len(blocks) > 1 and blocks[0][2] < tail:
        pool(0)
    while len(blocks) > 1 and blocks[-1][2] < tail:
        pool(len(blocks) - 2)
    x, v = [], []
    for a, b, _, _, value in blocks:
        x += [ux[a]] if a == b else [ux[a], ux[b]]
        v += [value] * (1 if a == b else 2)
    return np.asarray(x), np.clip(np.asarray(v), 0.0, 1.0)


def fit_map(method: str, scores: np.ndarray, labels: np.ndarray, kind: str, *, tail: int = TAIL) -> ScoreMap:
    """Fit ``method`` on validation pairs (one raw score and one 0/1 label per candidate).

    Parameters
    ----------
    method : str
        One of :func:`~calibrank.assess.deploy.maps.maps_for` ``(kind)``.
    scores, labels : array-like
        One raw score and one 0/1 label per validation candidate.
    kind : str
        What the scores are: ``probability``, ``logit`` or ``score``.
    tail : int, default=TAIL
        The isotonic map's end blocks are pooled until each holds at least this many candidates
        (:func:`_isotonic_knots`; 1 leaves the fit as scikit-learn's). The other maps are parametric: their
        tails rest on the curve fitted to every candidate.

    Returns
    -------
    ScoreMap

    Examples
    --------
    >>> import numpy as np
    >>> s = np.r_[np.linspace(0.0, 1.0, 200), 5.0]                # one validation candidate far above the rest
    >>> y = np.r_[(np.random.default_rng(0).random(200) < np.linspace(0.05, 0.6, 200)).astype(int), 1]
    >>> raw = fit_map("isotonic", s, y, "logit", tail=1)
    >>> pooled = fit_map("isotonic", s, y, "logit")
    >>> float(raw(5.0)), round(float(pooled(5.0)), 3)             # one candidate no longer makes a 1.0
    (1.0, 0.552)
    """
    s = np.asarray(scores, dtype=np.float64).reshape(-1)
    y = np.asarray(labels).reshape(-1).astype(int)
    center, scale = _squash(s) if kind == "score" else (None, None)
    start = ScoreMap(
        kind, "identity" if kind != "score" else "platt", {} if kind != "score" else {"A": 1.0, "B": 0.0}, center, scale
    )
    q = start.base(s)
    if method == "identity":
        return ScoreMap(kind, method, {}, center, scale)
    if method == "isotonic":
        x, v = _isotonic_knots(q, y, tail)
        return ScoreMap(kind, method, {"x": x.tolist(), "y": v.tolist()}, center, scale)
    recal = fit_recalibrator(method, q, y)
    return ScoreMap(kind, method, dict(recal.params), center, scale)


def _fit_pairs(s: np.ndarray, y: np.ndarray, max_pairs: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    if s.size <= max_pairs:
        return s, y
    rows = np.sort(np.random.default_rng(seed).choice(s.size, max_pairs, replace=False))
    return s[rows], y[rows]


def _folds(n: int, seed: int, folds: int = FOLDS) -> np.ndarray:
    """``[n]`` the fold of each query: a seeded permutation cut in ``folds`` parts."""
    out = np.empty(n, np.int64)
    out[np.random.default_rng(seed).permutation(n)] = np.arange(n) % folds
    return out


def choose_map(run: ScoredRun, *, seed: int = 0, max_pairs: int = MAX_FIT_PAIRS) -> tuple[str, dict[str, float]]:
    """``(method, brier)``: the map with the lowest held-out Brier over folds of whole queries, and each map's Brier.

    With fewer than ``2 * FOLDS`` validation queries no fold is held out: Platt's map, the one with the
    fewest parameters that orders as the scores do.
    """
    s, y, m = raw_scores(run), run.labels, run.mask
    methods = maps_for(run.kind.value)
    if s.shape[0] < 2 * FOLDS:
        return "platt", {}
    fold = np.broadcast_to(_folds(s.shape[0], seed)[:, None], s.shape)[m]
    sv, yv = s[m], y[m].astype(int)
    brier = {}
    for method in methods:
        err, n = 0.0, 0
        for f in range(FOLDS):
            train, held = fold != f, fold == f
            if np.unique(yv[train]).size < 2:
                continue
            fs, fy = _fit_pairs(sv[train], yv[train], max_pairs, seed)
            if np.unique(fy).size < 2:
                continue
            p = fit_map(method, fs, fy, run.kind.value)(sv[held])
            err += float(((p - yv[held]) ** 2).sum())
            n += int(held.sum())
        brier[method] = err / n if n else math.inf
    best = min(brier, key=lambda k: (brier[k], methods.index(k)))
    return best, brier


def top_loss(scores: np.ndarray, labels: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """``[Q]`` 1 when the query's top candidate by score is not relevant; tied top candidates count against the
    relevant one (the study's convention), a query without a relevant candidate is always wrong."""
    s = np.where(mask, scores, -np.inf)
    top = s == s.max(axis=1, keepdims=True)
    wrong = (top & mask & ~labels.astype(bool)).any(axis=1)
    return wrong.astype(np.float64)


def _list_model(x: np.ndarray, ok: np.ndarray) -> tuple[np.ndarray, float] | None:
    if np.unique(ok).size < 2:
        return None
    lr = LogisticRegression(C=1e4, max_iter=1000).fit(x, ok)
    return lr.coef_[0].copy(), float(lr.intercept_[0])


def valid_confidences(
    score_map: ScoreMap, run: ScoredRun, *, seed: int = 0
) -> tuple[dict[str, np.ndarray], np.ndarray, tuple[np.ndarray, float] | None]:
    """``(confidences, loss, list model)`` on the validation queries: each confidence of
    :data:`CONFIDENCES` (``list`` cross-fitted over folds of queries, so its AURC is not read on the
    queries it was fitted on), the top-1 loss, and the ``list`` model fitted on every query (None when
    every query is answered rightly, or every one wrongly)."""
    s, m = raw_scores(run), run.mask
    loss = top_loss(s, run.labels, m)
    p = np.where(m, score_map(s), 0.0)
    conf = {name: list_confidence(name, s, p, m) for name in ("top score", "margin")}
    k = int(min(M_MAX, m.sum(axis=1).min()))
    x, ok = top_probabilities(p, m, k), (loss == 0).astype(int)
    model = _list_model(x, ok)
    if model is not None and s.shape[0] >= 2 * FOLDS:
        fold, cross = _folds(s.shape[0], seed), np.empty(s.shape[0])
        for f in range(FOLDS):
            fitted = _list_model(x[fold != f], ok[fold != f])
            coef, b = fitted if fitted is not None else model
            cross[fold == f] = expit(x[fold == f] @ coef + b)
        conf["list"] = cross
    return conf, loss, model


def _answered(conf: np.ndarray, cuts: np.ndarray) -> np.ndarray:
    """``[len(cuts)]`` how many of ``conf`` are at or above each cut (the queries a cut answers, ties included)."""
    return conf.size - np.searchsorted(np.sort(conf), cuts, side="left")


#: How far above the asked coverage a confidence's tie-aware cut may answer and still be chosen by its AURC.
TIE_SLACK = 0.05


def _coverage_cut(conf: np.ndarray, coverage: float) -> float:
    """The strictest cut that answers at least ``coverage`` of the validation queries (confidence >= cut).

    The cut is one of the distinct confidences: the largest whose share of queries at or above it is not below
    ``coverage``, so the share it answers is the closest to ``coverage`` from above that any cut reaches.
    Where many lists share one confidence (an isotonic map's flat blocks make many margins exactly 0) that
    share can lie well above ``coverage``: every list at the cut is answered, none is dropped at random,
    and the page states the share answered as measured, not as asked.

    Examples
    --------
    >>> conf = np.r_[np.zeros(45), np.arange(1, 56) / 100]     # 45 of 100 lists share the confidence 0
    >>> _coverage_cut(conf, 0.8), _coverage_cut(conf, 0.5)       # 0.01 answers 55: only 0 reaches 80%
    (0.0, 0.06)
    >>> _coverage_cut(np.arange(10.0), 0.8)                       # 8 of 10 answered, not 9
    2.0
    """
    if coverage <= 0:
        return float(np.nextafter(conf.max(), np.inf))
    cuts = np.unique(conf)[::-1]
    share = _answered(conf, cuts) / conf.size
    return float(cuts[np.flatnonzero(share >= coverage)[0]])


def _risk_cut(conf: np.ndarray, loss: np.ndarray, risk: float, confidence: float) -> float:
    """The loosest cut whose selective top-1 error is certified below ``risk`` at ``confidence`` (Learn-then-Test,
    fixed sequence from the strictest cut with enough answered queries down; exact binomial over queries).
    Above every validation confidence when none is."""
    cuts = np.unique(conf)[::-1]
    l_sorted = loss[np.argsort(-conf, kind="stable")]
    answered = _answered(conf, cuts)  # queries with conf >= cut, ties included
    wrong = np.concatenate([[0.0], np.cumsum(l_sorted)])[answered]
    start = answered >= min_kept(1.0 - risk, confidence)
    best = None
    for i in np.flatnonzero(start):
        if stats.binom.cdf(wrong[i], answered[i], risk) > 1.0 - confidence:
            break
        best = float(cuts[i])
    return best if best is not None else float(np.nextafter(conf.max(), np.inf))


def fit_calibrator(
    valid: ScoredRun, settings: Settings | None = None, *, inputs: Sequence[str | os.PathLike] = (), **given: Any
) -> Calibrator:
    """Fit every part of a :class:`Calibrator` on validation queries.

    The map is chosen by held-out Brier over folds of whole queries, the cutoff certified by
    Learn-then-Test (:func:`calibrank.assess.deploy.certify.certify`), the abstain rule's confidence
    chosen by AURC and the shortlist's quantile by split conformal prediction (see the module
    docstring). Nothing is read from test queries, so the test numbers stay honest.

    Parameters
    ----------
    valid : ScoredRun
        The validation queries (the only data anything is fitted on).
    settings : Settings, default=None
        The map, the cutoff's target and confidence, the abstain rule's coverage or risk, the shortlists'
        miscoverage and the seed (:class:`~calibrank.assess.options.Settings`; its defaults when None).
    **given
        The settings as keywords instead (``precision=0.8``), checked the same way.
    inputs : sequence of paths, default=()
        The files ``valid`` was read from, hashed into ``fitted_on``.

    Returns
    -------
    Calibrator

    Examples
    --------
    >>> import numpy as np
    >>> from calibrank.assess.options import Settings, resolve
    >>> from calibrank.assess.read.scored import ScoredRun
    >>> rng = np.random.default_rng(0)
    >>> y = (rng.random((80, 10)) < 0.2).astype(int)           # 80 queries, 10 candidates each
    >>> s = 3 * y + rng.normal(size=y.shape)                    # raw scores, any scale
    >>> run = ScoredRun(qids=np.arange(80), docids=np.tile(np.arange(10), (80, 1)), mask=np.ones(y.shape, bool),
    ...                 scores=s[None], relevance=y, judged=np.ones(y.shape, bool), n_relevant=y.sum(axis=1))
    >>> cal = fit_calibrator(run, Settings(precision=0.75, coverage=0.8))
    >>> cal.cutoff.certified, cal.abstain_rule.coverage, cal.fitted_on["queries"]
    (True, 0.8, 80)
    """
    return fit_parts(valid, resolve(settings, given, "fit_calibrator"), inputs=inputs)[0]


def fit_parts(
    valid: ScoredRun, settings: Settings | None = None, *, inputs: Sequence[str | os.PathLike] = ()
) -> tuple[Calibrator, Certificate]:
    """:func:`fit_calibrator` with the :class:`~calibrank.assess.deploy.certify.Certificate` behind its cutoff."""
    if not isinstance(valid, ScoredRun):
        raise AssessError(
            f"valid: expected a ScoredRun (calibrank.assess.read.load(...).valid), got {type(valid).__name__}"
        )
    settings = resolve(settings, {}, "fit_parts")
    method, confidence, coverage, risk, alpha, seed = (
        settings.map,
        settings.confidence,
        settings.coverage,
        settings.risk,
        settings.alpha,
        settings.seed,
    )
    metric, target = (
        (Metric.recall, settings.recall)
        if settings.recall is not None
        else (Metric.precision, 0.9 if settings.precision is None else settings.precision)
    )
    if not valid.labels.any() or valid.labels[valid.mask].all():
        raise AssessError(
            f"{valid.source}: the validation candidates are all relevant or all non-relevant; "
            "nothing can be fitted on them"
        )
    s, y, m = raw_scores(valid), valid.labels, valid.mask
    brier: dict[str, float] = {}
    if method == "auto":
        method, brier = choose_map(valid, seed=seed)
    elif method not in maps_for(valid.kind.value):
        raise OptionError(
            "map",
            f"expected auto or one of {', '.join(maps_for(valid.kind.value))} for a {valid.kind.value}, got {method!r}",
        )
    fs, fy = _fit_pairs(s[m], y[m].astype(int), MAX_FIT_PAIRS, seed)
    score_map = fit_map(method, fs, fy, valid.kind.value)

    cert = certify(
        s,
        y,
        m,
        metric=metric,
        target=target,
        confidence=confidence,
        seed=seed,
        relevant=valid.n_relevant if settings.recall_over == "qrels" else None,
    )
    raw = cert.cutoff if cert.certified and score_map.increasing else None
    best_raw = cert.best_cutoff if math.isfinite(cert.best_cutoff) and score_map.increasing else None
    counts = {
        "qrels": "; recall over every relevant document of the qrels, retrieved or not",
        "retrieved": "; recall over the relevant candidates the run retrieved",
    }
    cutoff = Cutoff(
        metric.value,
        float(target),
        float(confidence),
        raw,
        float(score_map(raw)) if raw is not None else None,
        cert.best_level if best_raw is not None else 0.0,
        best_raw,
        PROCEDURE + (counts[cert.recall_over] if metric is Metric.recall else ""),
    )

    conf, loss, model = valid_confidences(score_map, valid, seed=seed)
    aurc = {name: selective_scores(c, loss).aurc for name, c in conf.items()}

    def deployed(name: str) -> np.ndarray:  # the list model's deployed cut reads the model fitted on every query
        return list_confidence("list", s, np.where(m, score_map(s), 0.0), m, model) if name == "list" else conf[name]

    candidates = list(aurc)
    if risk is None:
        coverage = 0.8 if coverage is None else coverage
        # AURC scores a confidence as if its ties were broken at random, which no fixed cut can do: a confidence
        # whose cut answers far more than the asked share (many lists tied at the cut) is chosen only when none
        # reaches the asked share within TIE_SLACK.
        realised = {n: float((deployed(n) >= _coverage_cut(deployed(n), coverage)).mean()) for n in candidates}
        near = [n for n in candidates if realised[n] <= coverage + TIE_SLACK]
        candidates = near or [min(candidates, key=lambda n: (realised[n], aurc[n]))]
    chosen = min(candidates, key=lambda k: (aurc[k], CONFIDENCES.index(k)))
    c = deployed(chosen)
    if risk is None:
        assert coverage is not None  # set above when no risk is asked
        cut = _coverage_cut(c, coverage)
    else:
        cut = _risk_cut(c, loss, risk, confidence)
    rule = AbstainRule(
        chosen,
        cut,
        coverage=coverage,
        risk=risk,
        list_coef=tuple(float(v) for v in model[0]) if chosen == "list" and model is not None else None,
        list_intercept=model[1] if chosen == "list" and model is not None else None,
    )

    pi = candidate_distribution(np.where(m, score_map(s), 0.0), m)
    lac = np.where(y.astype(bool), candidate_scores(pi, "LAC"), np.inf).min(axis=1)[y.any(axis=1)]
    try:
        qhat = conformal_quantile(lac, alpha)
    except ValueError:
        qhat = None
    fitted_on = {
        "source": Path(valid.source).name if valid.source else "",
        "queries": int(s.shape[0]),
        "candidates": int(m.sum()),
        "relevant": int(y.sum()),
        "base_rate": float(y[m].mean()),
        "score_kind": valid.kind.value,
        "samples": valid.n_samples,
        "relevant_at": valid.relevant_at,
        "map_brier": {k: v for k, v in brier.items() if math.isfinite(v)},
        "confidence_aurc": aurc,
        "seed": int(seed),
        "calibrank": __version__,
        "inputs": [{"file": Path(p).name, "sha256": sha256_file(p)} for p in inputs],
    }
    return Calibrator(score_map, cutoff, rule, Shortlist(float(alpha), qhat), fitted_on, Fingerprint.of(s, m)), cert
