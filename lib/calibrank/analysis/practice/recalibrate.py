"""Post-hoc recalibration of pointwise probabilities of relevance: fitted once, applied to every test condition.

Maps fitted on the queries of :func:`calibrank.analysis.practice.fitdata.fit_data`: Platt scaling
(Platt 1999), isotonic regression (Zadrozny & Elkan 2002), beta calibration (Kull et al. 2017,
eq. 5, with ``a, b >= 0`` as in ``betacal``), temperature scaling (Guo et al. 2017), the prior
correction of :mod:`calibrank.analysis.practice.prior`, or none. Fitting details:
docs/decisions.md, "Recalibration maps".
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd
from scipy import optimize
from scipy.special import expit
from sklearn.isotonic import IsotonicRegression
from sklearn.linear_model import LogisticRegression

from ...metrics.calibration import ece
from ...predictions import Predictions, logit
from ...table_checks import in_range, raise_problems
from .cells import CELL, debiased_ece, debiased_problems, rows_problems, study_cells
from .fitdata import drop_queries, fit_data
from .prior import prior_correct, train_prior

__all__ = ["METHODS", "Recalibrator", "fit_recalibrator", "recalibrate", "recalibration_best", "recalibration_table"]

METHODS = ("none", "prior", "platt", "isotonic", "beta", "temperature")
_EPS = 1e-7


def _clip(p: np.ndarray) -> np.ndarray:
    return np.clip(np.asarray(p, dtype=np.float64), _EPS, 1.0 - _EPS)


def _beta_features(p: np.ndarray) -> np.ndarray:
    q = _clip(p).reshape(-1)
    return np.stack([np.log(q), -np.log1p(-q)], axis=1)


@dataclasses.dataclass(frozen=True, eq=False)
class Recalibrator:
    """A fitted map from probabilities to probabilities; ``params`` holds what was fitted."""

    method: str
    params: dict
    _apply: object = dataclasses.field(repr=False)

    def __call__(self, probs: np.ndarray) -> np.ndarray:
        p = np.asarray(probs, dtype=np.float64)
        return np.asarray(self._apply(p.reshape(-1)), dtype=np.float64).reshape(p.shape)


def _check_fit_inputs(probs: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    p = np.asarray(probs, dtype=np.float64).reshape(-1)
    y = np.asarray(labels).reshape(-1)
    if p.shape != y.shape:
        raise ValueError(f"probs and labels must have the same number of values; got {p.size} and {y.size}")
    if p.size == 0 or not ((p >= 0) & (p <= 1)).all():
        raise ValueError("probs must be a non-empty array of probabilities in [0, 1]")
    if not np.isin(y, (0, 1)).all():
        raise ValueError("labels must be 0 or 1")
    if np.unique(y).size < 2:
        raise ValueError("a recalibrator needs relevant and non-relevant candidates among the fitting pairs; got one class")
    return p, y.astype(int)


def _fit_beta(p: np.ndarray, y: np.ndarray) -> tuple[float, float, float]:
    """(a, b, c) of beta calibration with a, b >= 0 (Kull et al. 2017; the betacal package's rule)."""
    x = _beta_features(p)
    lr = LogisticRegression(C=np.inf, max_iter=1000).fit(x, y)
    a, b = (float(v) for v in lr.coef_[0])
    c = float(lr.intercept_[0])
    if a < 0 or b < 0:
        keep = 1 if a < 0 else 0  # drop the feature whose coefficient is negative
        lr = LogisticRegression(C=np.inf, max_iter=1000).fit(x[:, [keep]], y)
        coef = max(float(lr.coef_[0][0]), 0.0)
        a, b = (0.0, coef) if keep == 1 else (coef, 0.0)
        c = float(lr.intercept_[0])
    return a, b, c


def _fit_temperature(p: np.ndarray, y: np.ndarray) -> float:
    z = logit(_clip(p))

    def nll(log_t: float) -> float:
        q = _clip(expit(z / np.exp(log_t)))
        return float(-np.mean(y * np.log(q) + (1 - y) * np.log1p(-q)))

    res = optimize.minimize_scalar(nll, bounds=(-6.0, 6.0), method="bounded", options={"xatol": 1e-6})
    return float(np.exp(res.x))


def fit_recalibrator(method: str, probs: np.ndarray, labels: np.ndarray, *, pi_train: float = 0.5, k: int = 10) -> Recalibrator:
    """Fit ``method`` (one of :data:`METHODS`) on pairs ``(probs, labels)``.

    ``pi_train`` and ``k`` (candidates per test query) are used by ``prior`` only.
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}; got {method!r}")
    if method == "none":
        return Recalibrator(method, {}, lambda p: p)
    if method == "prior":
        return Recalibrator(method, {"pi_train": pi_train, "pi_test": 1.0 / k},
                            lambda p: prior_correct(p, pi_train, 1.0 / k))
    p, y = _check_fit_inputs(probs, labels)
    if method == "platt":
        lr = LogisticRegression(C=np.inf, max_iter=1000).fit(logit(p)[:, None], y)
        a, b = float(lr.coef_[0][0]), float(lr.intercept_[0])
        return Recalibrator(method, {"A": a, "B": b}, lambda q: expit(a * logit(q) + b))
    if method == "isotonic":
        iso = IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip", increasing=True).fit(p, y)
        return Recalibrator(method, {"steps": int(len(iso.X_thresholds_))}, iso.predict)
    if method == "beta":
        a, b, c = _fit_beta(p, y)
        return Recalibrator(method, {"a": a, "b": b, "c": c},
                            lambda q: expit(_beta_features(q) @ np.array([a, b]) + c))
    t = _fit_temperature(p, y)
    return Recalibrator(method, {"T": t}, lambda q: expit(logit(q) / t))


def recalibrate(pred: Predictions, recal: Recalibrator) -> Predictions:
    """``pred`` with ``probs`` and every sample passed through ``recal`` (a padded slot stays 0)."""
    probs, samples = np.clip(recal(pred.probs), 0.0, 1.0), np.clip(recal(pred.samples), 0.0, 1.0)
    if pred.mask is not None:
        probs, samples = np.where(pred.mask, probs, 0.0), np.where(pred.mask, samples, 0.0)
    return Predictions(pred.qids, pred.labels, probs, samples, meta={**pred.meta, "recalibrated": recal.method},
                       mask=pred.mask, docids=pred.docids)


def _test_conditions(study, ranker: str, train_corpus: str):
    return [c for c in study.test_conditions("test") if (ranker, train_corpus, c.name) in study.paths]


def recalibration_table(study, rankers: Iterable[str] | None = None, methods: Sequence[str] = METHODS, *,
                        n_resamples: int = 1000) -> pd.DataFrame:
    """ECE after each recalibrator, per ranker x test condition, with the debiased ECE and its 95% interval.

    Fitted once per ranker and training corpus on :func:`~calibrank.analysis.practice.fitdata.fit_data`
    (``fitted_on`` says which rule) and applied to every test condition (main training seed);
    ``queries``: the queries evaluated. Columns ``ECE`` (eq. 1), ``ECE debiased`` with ``lo`` / ``hi``, ``ECE bias``
    (:func:`~calibrank.analysis.practice.cells.debiased_ece`), ``params``. Raises
    :class:`~calibrank.table_checks.TableError` when a row is missing, an ECE is not in [0, 1] or a debiased
    ECE not inside its interval.
    """
    pi_train = train_prior(study.cfg.negatives.train_k)
    rows = []
    for ranker in rankers if rankers is not None else study.rankers:
        for tc in study.train_corpora:
            fd = fit_data(study, ranker, tc)
            fitted = {m: fit_recalibrator(m, fd.pred.probs, fd.pred.labels, pi_train=pi_train, k=study.k + 1)
                      for m in methods}
            for cond in _test_conditions(study, ranker, tc):
                base = drop_queries(study.get(ranker, tc, cond), fd.exclude)
                for m, recal in fitted.items():
                    p = recalibrate(base, recal)
                    rows.append({"ranker": ranker, "train_corpus": tc, "corpus": cond.corpus, "sampler": cond.sampler,
                                 "shift": study.shift(cond, tc), "method": m, "fitted_on": fd.fitted_on,
                                 "fit_queries": int(fd.pred.labels.shape[0]), "queries": int(p.labels.shape[0]),
                                 "ECE": ece(p.probs, p.labels),
                                 **debiased_ece(p, "ECE", n_resamples=n_resamples, seed=study.cfg.seed),
                                 "params": ", ".join(f"{k}={v:.3g}" for k, v in recal.params.items())})
    table = pd.DataFrame(rows)
    name, keys = "recalibration", (*CELL, "method")
    cells = study_cells(study, rankers)
    problems = rows_problems(name, table, keys, [(*c, m) for c in cells for m in methods],
                             what=f"{len(cells)} cells x {len(methods)} methods")
    raise_problems(problems if table.empty else
                   problems + in_range(name, table, "ECE", keys, 0, 1) + debiased_problems(name, table, "ECE", keys))
    return table


def recalibration_best(table: pd.DataFrame) -> pd.DataFrame:
    """Which recalibrator is best: per method, mean ECE and the number of cells (ranker x condition) it wins,
    in distribution and under shift (every other condition). Raises :class:`~calibrank.table_checks.TableError`
    when the cells won in a setting do not add up to its cells (a cell of ``table`` twice, or not for every method)."""
    t = table.assign(setting=np.where(table["shift"] == "in distribution", "in distribution", "under shift"))
    keys = ["ranker", "train_corpus", "corpus", "sampler"]
    winner = t.loc[t.groupby(keys)["ECE"].idxmin(), keys + ["method"]].rename(columns={"method": "best"})
    t = t.merge(winner, on=keys)
    rows = []
    for (setting, m), grp in t.groupby(["setting", "method"], sort=False):
        cells = grp[keys].drop_duplicates()
        rows.append({"setting": setting, "method": m, "mean ECE": float(grp["ECE"].mean()),
                     "cells won": int((grp["best"] == m).sum()), "cells": len(cells)})
    out = pd.DataFrame(rows).sort_values(["setting", "mean ECE"]).reset_index(drop=True)
    out["rank"] = out.groupby("setting")["mean ECE"].rank(method="min").astype(int)
    won = out.groupby("setting", sort=False).agg(won=("cells won", "sum"), cells=("cells", "first"))
    raise_problems([f"best recalibrator: setting={setting}: expected the cells won to add up to the {r['cells']} "
                    f"cells (one winner per cell), found {r['won']}" for setting, r in won.iterrows()
                    if r["won"] != r["cells"]])
    return out
