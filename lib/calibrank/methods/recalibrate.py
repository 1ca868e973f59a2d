"""Post-hoc recalibration maps of probabilities: prior correction, Platt, isotonic, beta (Kull et al. 2017) and temperature."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np
from scipy import optimize
from scipy.special import expit
from sklearn.isotonic import IsotonicRegression
from sklearn.linear_model import LogisticRegression

from calibrank.methods.prior import prior_correct
from calibrank.predictions import Predictions, logit

__all__ = ["METHODS", "Recalibrator", "fit_recalibrator", "recalibrate"]


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
    _apply: Callable[[np.ndarray], np.ndarray] = dataclasses.field(repr=False)

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
        raise ValueError(
            "a recalibrator needs relevant and non-relevant candidates among the fitting pairs; got one class"
        )
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


def fit_recalibrator(
    method: str, probs: np.ndarray, labels: np.ndarray, *, pi_train: float = 0.5, k: int = 10
) -> Recalibrator:
    """Fit ``method`` (one of :data:`METHODS`) on pairs ``(probs, labels)``.

    ``pi_train`` and ``k`` (candidates per test query) are used by ``prior`` only.
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}; got {method!r}")
    if method == "none":
        return Recalibrator(method, {}, lambda p: p)
    if method == "prior":
        return Recalibrator(
            method, {"pi_train": pi_train, "pi_test": 1.0 / k}, lambda p: prior_correct(p, pi_train, 1.0 / k)
        )
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
        return Recalibrator(method, {"a": a, "b": b, "c": c}, lambda q: expit(_beta_features(q) @ np.array([a, b]) + c))
    t = _fit_temperature(p, y)
    return Recalibrator(method, {"T": t}, lambda q: expit(logit(q) / t))


def recalibrate(pred: Predictions, recal: Recalibrator) -> Predictions:
    """``pred`` with ``probs`` and every sample passed through ``recal`` (a padded slot stays 0)."""
    probs, samples = np.clip(recal(pred.probs), 0.0, 1.0), np.clip(recal(pred.samples), 0.0, 1.0)
    if pred.mask is not None:
        probs, samples = np.where(pred.mask, probs, 0.0), np.where(pred.mask, samples, 0.0)
    return Predictions(
        pred.qids,
        pred.labels,
        probs,
        samples,
        meta={**pred.meta, "recalibrated": recal.method},
        mask=pred.mask,
        docids=pred.docids,
    )
