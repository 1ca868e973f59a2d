"""None of the above (NOTA) from conformal sets and from a certified threshold, beside notebook 06's forest.

The NOTA task of Penha & Hauff (EACL 2021, Tables 4-5) on :func:`nota_conditions`, with two
rules fitted on calibration queries only: an empty split-conformal LAC set (Sadinle, Lei &
Wasserman 2019; :func:`nota_conformal_table`), which bounds false NOTA but not NOTA recall, and
a threshold on the top probability certified by Learn then Test (Angelopoulos et al. 2021,
section 4) for a risk of :data:`RISKS` (:func:`ltt_threshold`, :func:`nota_threshold_table`).
Calibration sets and guarantees: docs/decisions.md, "NOTA sets and thresholds".
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd
from scipy.special import expit
from sklearn.metrics import f1_score

from calibrank.methods.conformal import conformal_quantile
from calibrank.methods.listwise import _top, candidate_distribution
from calibrank.methods.proportions import binomial_pvalue, clopper_pearson, clopper_pearson_upper
from calibrank.study.analysis import nota as nota_task
from calibrank.study.analysis.nota_tables import nota_means_ranker
from calibrank.study.analysis.practice.cells import CELL, rows_problems
from calibrank.study.analysis.practice.conformal import ALPHAS
from calibrank.study.analysis.practice.fitdata import drop_queries, fit_data
from calibrank.table_checks import TOLERANCE, in_range, raise_problems, rows_failing

__all__ = [
    "DELTA",
    "GRID",
    "MIN_ANSWERED",
    "RISKS",
    "VIEWS",
    "Threshold",
    "class_probabilities",
    "empty_set_nota",
    "lac_threshold",
    "ltt_threshold",
    "nota_conditions",
    "nota_conformal_table",
    "nota_threshold_table",
    "risk_counts",
    "top_answer",
]

VIEWS = ("pointwise", "softmax")
RISKS: Mapping[str, float] = {"false NOTA": 0.1, "wrong answer": 0.3}
"""The risks :func:`ltt_threshold` controls and the target of each in the notebook's table."""
DELTA = 0.1
MIN_ANSWERED = 30
GRID = expit(np.linspace(-16.0, 16.0, 641))
"""Thresholds tested by :func:`ltt_threshold`: ``sigmoid(z)`` for ``z`` from -16 to 16 in steps of 0.05."""


# ------------------------------------------------------------------------------ conformal
def class_probabilities(probs: np.ndarray, view: str) -> np.ndarray:
    """``[Q, K']`` class probabilities of the candidates under ``view`` (``pointwise`` or ``softmax``)."""
    p = np.asarray(probs, dtype=np.float64)
    if p.ndim != 2:
        raise ValueError(f"probs must be [Q, K]; got shape {p.shape}")
    if view == "pointwise":
        return p
    if view == "softmax":
        return candidate_distribution(p)
    raise ValueError(f"view must be one of {VIEWS}; got {view!r}")


def lac_threshold(probs: np.ndarray, labels: np.ndarray, alpha: float, view: str) -> float:
    """``t = 1 - qhat``: the LAC quantile on the calibration queries that have a relevant candidate.

    ``qhat`` is :func:`~calibrank.study.analysis.practice.conformal.conformal_quantile` of ``1 - prob(true)``
    over the answerable queries; a candidate is in the set when its probability is ``>= t``.
    """
    y = np.asarray(labels)
    pi = class_probabilities(probs, view)
    if y.shape != pi.shape:
        raise ValueError(f"labels must have the shape of probs {pi.shape}; got {y.shape}")
    n_rel = y.sum(axis=1)
    if (n_rel > 1).any():
        raise ValueError("labels: a query has more than one relevant candidate (a NOTA set has at most one)")
    answerable = n_rel == 1
    if not answerable.any():
        raise ValueError("labels: no calibration query has a relevant candidate; the set cannot be calibrated")
    scores = 1.0 - pi[answerable][y[answerable].astype(bool)]
    return 1.0 - conformal_quantile(scores, alpha)


def empty_set_nota(probs: np.ndarray, threshold: float, view: str) -> tuple[np.ndarray, np.ndarray]:
    """``(sets [Q, K'], nota [Q])``: the LAC sets at ``threshold`` (:func:`lac_threshold`) and whether each is empty."""
    sets = class_probabilities(probs, view) >= threshold - 1e-12
    return sets, ~np.asarray(sets.any(axis=1))


# ------------------------------------------------------------------------------ Learn then Test
def _check_level(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0.0 < float(value) < 1.0:
        raise ValueError(f"{name} must be strictly between 0 and 1; got {value!r}")
    return float(value)


def top_answer(probs: np.ndarray, labels: np.ndarray, mask: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(confidence [Q], wrong [Q])``: the top candidate's probability and whether it is not relevant
    (ties broken against the relevant one; on a NOTA query every answer is wrong; a padded slot of
    ``mask`` is never the answer)."""
    p, y = np.asarray(probs, dtype=np.float64), np.asarray(labels)
    top = _top(p, y, mask)
    rows = np.arange(p.shape[0])
    return p[rows, top], (y[rows, top] == 0)


def risk_counts(
    conf: np.ndarray, wrong: np.ndarray, answerable: np.ndarray, lambdas: np.ndarray, risk: str
) -> tuple[np.ndarray, np.ndarray]:
    """``(k, n)`` per threshold of ``lambdas`` (answer when ``conf >= lambda``): losses and the queries the risk is about."""
    c = np.asarray(conf, dtype=np.float64)
    w, a = np.asarray(wrong, dtype=bool), np.asarray(answerable, dtype=bool)
    lam = np.asarray(lambdas, dtype=np.float64)
    if not (c.shape == w.shape == a.shape) or c.ndim != 1:
        raise ValueError(f"conf, wrong and answerable must be 1-D of one length; got {c.shape}, {w.shape}, {a.shape}")
    if risk == "false NOTA":
        ca = np.sort(c[a])
        k = np.searchsorted(ca, lam, side="left")  # answerable queries with conf < lambda
        return k, np.full(lam.shape, ca.size)
    if risk == "wrong answer":
        c_all, c_wrong = np.sort(c), np.sort(c[w])
        n = c_all.size - np.searchsorted(c_all, lam, side="left")  # conf >= lambda
        k = c_wrong.size - np.searchsorted(c_wrong, lam, side="left")
        return k, n
    raise ValueError(f"risk must be one of {tuple(RISKS)}; got {risk!r}")


@dataclasses.dataclass(frozen=True)
class Threshold:
    """The threshold chosen by :func:`ltt_threshold` (answer when the top probability is ``>= threshold``).

    ``certified``: some grid threshold was rejected (for ``false NOTA`` the trivial ``0`` is
    certified without a test); ``n`` / ``k`` / ``ucb``: calibration queries, losses and the
    ``1 - delta`` Clopper-Pearson upper bound at the chosen threshold; ``tested``: hypotheses tested.
    """

    risk: str
    target: float
    delta: float
    threshold: float
    certified: bool
    n: int
    k: int
    ucb: float
    tested: int


def ltt_threshold(
    conf: np.ndarray,
    wrong: np.ndarray,
    answerable: np.ndarray,
    *,
    risk: str,
    target: float,
    delta: float = DELTA,
    grid: np.ndarray = GRID,
    min_answered: int = MIN_ANSWERED,
) -> Threshold:
    """The Learn-then-Test threshold of the module docstring (fixed-sequence testing on ``grid``)."""
    target, delta = _check_level("target", target), _check_level("delta", delta)
    if isinstance(min_answered, bool) or not isinstance(min_answered, numbers.Integral) or min_answered < 1:
        raise ValueError(f"min_answered must be an integer >= 1; got {min_answered!r}")
    lam = np.unique(np.asarray(grid, dtype=np.float64))
    if lam.size == 0 or not np.isfinite(lam).all():
        raise ValueError("grid must hold finite thresholds")
    k, n = risk_counts(conf, wrong, answerable, lam, risk)
    if risk == "false NOTA":
        if n[0] == 0:
            raise ValueError("answerable: no calibration query is answerable; the false-NOTA rate cannot be estimated")
        order = np.arange(lam.size)  # from the smallest threshold up
        fallback = (0.0, True, int(n[0]), 0)
    else:
        order = np.flatnonzero(n >= min_answered)[::-1]  # from the largest threshold enough queries pass, down
        fallback = (math.inf, False, 0, 0)
    p = binomial_pvalue(k[order], n[order], target)
    fails = np.flatnonzero(p > delta)
    passed = order[: fails[0] if fails.size else order.size]
    tested = int(min(order.size, passed.size + 1))
    if passed.size == 0:
        thr, certified, n_at, k_at = fallback
        ucb = 0.0 if risk == "false NOTA" else float("nan")
        return Threshold(risk, target, delta, float(thr), bool(certified), n_at, k_at, ucb, tested)
    j = passed[-1]
    return Threshold(
        risk,
        target,
        delta,
        float(lam[j]),
        True,
        int(n[j]),
        int(k[j]),
        float(clopper_pearson_upper(k[j], n[j], delta)),
        tested,
    )


# ------------------------------------------------------------------------------ study tables
def nota_conditions(study, train_corpus: str) -> list:
    """The test conditions of notebook 06's Tables 4-5 for ``train_corpus``: every corpus with the training
    sampler (Table 4) and the training corpus with every other sampler (Table 5)."""
    return [c for c in study.test_conditions("test") if c.sampler == study.train_sampler or c.corpus == train_corpus]


def _share(mask: np.ndarray) -> float:
    """Mean of a boolean array; NaN when it is empty (e.g. no NOTA query among those evaluated)."""
    return float(mask.mean()) if mask.size else float("nan")


def _macro_f1(y: np.ndarray, said_nota: np.ndarray) -> float:
    return float(f1_score(y, said_nota.astype(int), average="macro", labels=[0, 1], zero_division=0.0))


_cp = clopper_pearson


def _cells(study, rankers: Iterable[str] | None, seed: int):
    """Per ranker x training corpus: fitting rule, calibration NOTA set, and per NOTA condition the test NOTA set.

    The test set is drawn on the queries left after :func:`~calibrank.study.analysis.practice.fitdata.drop_queries`:
    notebook 06's set for S > 1, half NOTA on the remaining half for S = 1.
    """
    for ranker in rankers if rankers is not None else study.rankers:
        for tc in study.train_corpora:
            fd = fit_data(study, ranker, tc)
            cal = nota_task.make_nota_set(fd.pred, seed=seed)
            tests = [
                (c, nota_task.make_nota_set(drop_queries(study.get(ranker, tc, c), fd.exclude), seed=seed))
                for c in nota_conditions(study, tc)
                if (ranker, tc, c.name) in study.paths
            ]
            yield ranker, tc, fd, cal, tests


def _where(study, ranker, tc, cond) -> dict:
    return {
        "ranker": ranker,
        "train_corpus": tc,
        "corpus": cond.corpus,
        "sampler": cond.sampler,
        "shift": study.shift(cond, tc),
    }


def nota_conformal_table(
    study,
    rankers: Iterable[str] | None = None,
    *,
    alphas: Sequence[float] = ALPHAS,
    views: Sequence[str] = VIEWS,
    forest_rankers: Iterable[str] | None = None,
    folds: int = 5,
    n_estimators: int = 100,
) -> pd.DataFrame:
    """NOTA from empty LAC sets, per ranker x view x alpha x NOTA condition (main training seed).

    Columns: ``fitted_on``, ``n_cal``, ``threshold`` (``1 - qhat``), ``queries`` / ``NOTA queries``,
    ``coverage`` with its Clopper-Pearson interval, ``false NOTA`` (bounded by ``alpha``), ``NOTA
    recall`` (no guarantee), ``mean set size``, ``F1`` and ``F1 forest`` (notebook 06's forest on
    ``E[R]``, for ``forest_rankers`` only). Raises :class:`~calibrank.table_checks.TableError`
    naming a row that breaks an invariant of :func:`_conformal_problems`.
    """
    for v in views:
        if v not in VIEWS:
            raise ValueError(f"views: each must be one of {VIEWS}; got {v!r}")
    seed = study.cfg.seed
    forest = set(forest_rankers) if forest_rankers is not None else {nota_means_ranker(study)}
    rows = []
    for ranker, tc, fd, cal, tests in _cells(study, rankers, seed):
        forest_f1 = {}
        for cond, ns in tests:
            if ranker in forest:
                res = nota_task.cross_validate_nota(
                    nota_task.nota_features(ns, "mean"), ns.y, seed=seed, folds=folds, n_estimators=n_estimators
                )
                forest_f1[cond.name] = res.mean
        for view in views:
            for alpha in alphas:
                try:
                    thr, note = lac_threshold(cal.pred.probs, cal.pred.labels, alpha, view), ""
                except ValueError as exc:  # too few answerable calibration queries for alpha
                    thr, note = np.nan, str(exc)
                for cond, ns in tests:
                    probs, labels, y = ns.pred.probs, ns.pred.labels, ns.y.astype(int)
                    row = {
                        **_where(study, ranker, tc, cond),
                        "view": view,
                        "alpha": alpha,
                        "target": 1.0 - alpha,
                        "fitted_on": fd.fitted_on,
                        "n_cal": int((cal.y == 0).sum()),
                        "threshold": thr,
                        "queries": int(y.size),
                        "NOTA queries": int(y.sum()),
                    }
                    if note:
                        row.update(
                            {
                                "coverage": np.nan,
                                "coverage lo": np.nan,
                                "coverage hi": np.nan,
                                "false NOTA": np.nan,
                                "NOTA recall": np.nan,
                                "mean set size": np.nan,
                                "F1": np.nan,
                            }
                        )
                    else:
                        sets, said = empty_set_nota(probs, thr, view)
                        ans = y == 0
                        hit = sets[ans][labels[ans].astype(bool)]
                        lo, hi = _cp(int(hit.sum()), int(hit.size))
                        row.update(
                            {
                                "coverage": float(hit.mean()),
                                "coverage lo": lo,
                                "coverage hi": hi,
                                "false NOTA": _share(said[ans]),
                                "NOTA recall": _share(said[~ans]),
                                "mean set size": float(sets.sum(axis=1).mean()),
                                "F1": _macro_f1(y, said),
                            }
                        )
                    row["F1 forest"] = forest_f1.get(cond.name, np.nan)
                    rows.append({**row, "note": note})
    table = pd.DataFrame(rows)
    raise_problems(_conformal_problems(study, table, rankers, views, alphas))
    return table


def nota_threshold_table(
    study,
    rankers: Iterable[str] | None = None,
    *,
    risks: Mapping[str, float] = RISKS,
    delta: float = DELTA,
    min_answered: int = MIN_ANSWERED,
) -> pd.DataFrame:
    """The Learn-then-Test threshold per ranker x risk, applied to every NOTA condition (main training seed).

    Columns: ``target``, ``delta``, ``fitted_on``, ``n_cal``, ``threshold`` (inf: never answer),
    ``certified``, ``cal n`` / ``cal UCB``, ``queries``, ``achieved risk`` with ``risk lo`` / ``risk
    hi``, ``above target``, ``risk answering all``, ``abstention``, ``false NOTA``, ``NOTA recall``
    and ``F1``. Raises :class:`~calibrank.table_checks.TableError` naming a row that breaks an
    invariant of :func:`_threshold_problems`. Columns in full: docs/decisions.md, "NOTA threshold table".
    """
    seed = study.cfg.seed
    rows = []
    for ranker, tc, fd, cal, tests in _cells(study, rankers, seed):
        c_conf, c_wrong = top_answer(cal.pred.probs, cal.pred.labels)
        for risk, target in risks.items():
            t = ltt_threshold(
                c_conf, c_wrong, cal.y == 0, risk=risk, target=target, delta=delta, min_answered=min_answered
            )
            for cond, ns in tests:
                probs, labels, y = ns.pred.probs, ns.pred.labels, ns.y.astype(int)
                conf, wrong = top_answer(probs, labels)
                answered = conf >= t.threshold
                ans = y == 0
                if risk == "false NOTA":
                    k, n = int((~answered & ans).sum()), int(ans.sum())
                else:
                    k, n = int((answered & wrong).sum()), int(answered.sum())
                lo, hi = _cp(k, n)
                rows.append(
                    {
                        **_where(study, ranker, tc, cond),
                        "risk": risk,
                        "target": target,
                        "delta": delta,
                        "fitted_on": fd.fitted_on,
                        "n_cal": int(cal.n_queries),
                        "threshold": t.threshold,
                        "certified": t.certified,
                        "cal n": t.n,
                        "cal UCB": t.ucb,
                        "queries": int(y.size),
                        "achieved risk": k / n if n else np.nan,
                        "risk lo": lo,
                        "risk hi": hi,
                        "above target": bool(n and lo > target),
                        "risk answering all": _share(wrong if risk == "wrong answer" else np.zeros(0, bool)),
                        "abstention": _share(~answered),
                        "false NOTA": _share((~answered)[ans]),
                        "NOTA recall": _share((~answered)[~ans]),
                        "F1": _macro_f1(y, ~answered),
                    }
                )
    table = pd.DataFrame(rows)
    raise_problems(_threshold_problems(study, table, rankers, risks))
    return table


def _nota_cells(study, rankers: Iterable[str] | None) -> list[tuple]:
    """Every ranker x training corpus x NOTA condition (:func:`nota_conditions`), as values of :data:`CELL`."""
    return [
        (r, tc, c.corpus, c.sampler)
        for r in (rankers if rankers is not None else study.rankers)
        for tc in study.train_corpora
        for c in nota_conditions(study, tc)
    ]


def _conformal_problems(
    study, table: pd.DataFrame, rankers: Iterable[str] | None, views: Sequence[str], alphas: Sequence[float]
) -> list[str]:
    """One row per NOTA cell, view and alpha; a row with a coverage has NOTA queries (half of the set), a macro-F1
    in [0, 1] and ``false NOTA <= 1 - coverage`` (an empty set misses the true response)."""
    name, keys = "NOTA conformal", (*CELL, "view", "alpha")
    cells = _nota_cells(study, rankers)
    problems = rows_problems(
        name,
        table,
        keys,
        [(*c, v, a) for c in cells for v in views for a in alphas],
        what=f"{len(cells)} NOTA cells x {len(views)} views x {len(alphas)} alphas",
    )
    if table.empty:
        return problems
    ok = table[table["note"] == ""]
    problems += rows_failing(name, ok, ok["NOTA queries"] > 0, keys, "NOTA queries > 0", ["NOTA queries"])
    problems += in_range(name, ok, "F1", keys, 0, 1)
    problems += rows_failing(
        name,
        ok,
        ok["false NOTA"] <= 1 - ok["coverage"] + TOLERANCE,
        keys,
        "false NOTA <= 1 - coverage (an empty set misses the true response)",
        ["false NOTA", "coverage"],
    )
    return problems


def _threshold_problems(
    study, table: pd.DataFrame, rankers: Iterable[str] | None, risks: Mapping[str, float]
) -> list[str]:
    """One row per NOTA cell and risk; without a threshold (inf) the rule always abstains and has no achieved
    risk; a threshold is certified on calibration (``cal UCB <= target``); the false-NOTA threshold is always
    certified (0 is safe) and its achieved risk is its false-NOTA rate; abstention and macro-F1 in [0, 1]."""
    name, keys = "NOTA threshold", (*CELL, "risk")
    cells = _nota_cells(study, rankers)
    problems = rows_problems(
        name, table, keys, [(*c, r) for c in cells for r in risks], what=f"{len(cells)} NOTA cells x {len(risks)} risks"
    )
    if table.empty:
        return problems
    never = np.isinf(table["threshold"].to_numpy(dtype=float))
    no, yes = table[never], table[~never]
    problems += rows_failing(
        name, no, no["abstention"] == 1, keys, "abstention 1 without a threshold (inf)", ["abstention"]
    )
    problems += rows_failing(
        name, no, no["achieved risk"].isna(), keys, "no achieved risk without a threshold (inf)", ["achieved risk"]
    )
    problems += rows_failing(
        name,
        yes,
        yes["cal UCB"] <= yes["target"] + TOLERANCE,
        keys,
        "cal UCB <= target (certified on calibration)",
        ["cal UCB", "target", "threshold"],
    )
    fn = table[table["risk"] == "false NOTA"]
    problems += rows_failing(
        name, fn, fn["certified"].eq(True), keys, "a certified false-NOTA threshold", ["certified"]
    )
    problems += rows_failing(
        name,
        fn,
        np.isclose(fn["achieved risk"], fn["false NOTA"]),
        keys,
        "achieved risk = false NOTA",
        ["achieved risk", "false NOTA"],
    )
    for col in ("abstention", "F1"):
        problems += in_range(name, table, col, keys, 0, 1)
    return problems
