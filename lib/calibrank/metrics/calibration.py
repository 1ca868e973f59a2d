"""Calibration metrics of predicted probabilities of relevance, pointwise over (query, candidate) pairs.

ECE (eq. 1 of Penha & Hauff, EACL 2021; 10 buckets, not their code's 50), debiased ECE (Kumar,
Liang & Ma 2019, sec. 5, in closed form), MCE (Naeini et al. 2015), Brier and NLL. Buckets are
``"uniform"`` (as ``sklearn.calibration.calibration_curve``) or ``"quantile"``. Details:
docs/decisions.md, "Calibration metrics".
"""

from __future__ import annotations

import dataclasses
import numbers

import numpy as np
from scipy import special as _special

__all__ = [
    "EPS",
    "ReliabilityCurve",
    "brier",
    "calibration_metrics",
    "ece",
    "debiased_gap_sum",
    "ece_debiased",
    "folded_normal_mean",
    "mce",
    "nll",
    "reliability_curve",
]

EPS = 1e-7
"""Probabilities are clipped to ``[EPS, 1 - EPS]`` in :func:`nll`."""

_STRATEGIES = ("uniform", "quantile")


@dataclasses.dataclass(frozen=True, eq=False)
class ReliabilityCurve:
    """Per-bucket statistics of a reliability diagram (``B`` buckets; arrays are read-only).

    ``bin_edges`` [B+1]; ``mean_predicted`` [B] (``avg(B_i)``), ``fraction_positive`` [B]
    (``rel(B_i)/|B_i|``), both NaN for an empty bucket; ``counts`` [B] (``|B_i|``, int).
    """

    bin_edges: np.ndarray
    mean_predicted: np.ndarray
    fraction_positive: np.ndarray
    counts: np.ndarray

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            value = np.array(getattr(self, field.name))  # a private copy, then made read-only
            value.setflags(write=False)
            object.__setattr__(self, field.name, value)

    @property
    def gaps(self) -> np.ndarray:
        """``|mean_predicted - fraction_positive|`` per bucket (NaN for an empty bucket)."""
        return np.abs(self.mean_predicted - self.fraction_positive)

    @property
    def ece(self) -> float:
        """Expected calibration error (eq. 1 of Penha & Hauff) of these buckets."""
        nonempty = self.counts > 0
        weights = self.counts[nonempty] / self.counts.sum()
        return float((weights * self.gaps[nonempty]).sum())

    @property
    def mce(self) -> float:
        """Maximum calibration error: the largest gap over the non-empty buckets."""
        return float(np.max(self.gaps[self.counts > 0]))


def _check_probs_labels(probs: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Validate and flatten: probabilities in [0, 1] (float64), labels 0/1 (float64), same shape."""
    p = np.asarray(probs)
    y = np.asarray(labels)
    if p.shape != y.shape:
        raise ValueError(f"labels must have the same shape as probs {p.shape}; got shape {y.shape}")
    if p.size == 0:
        raise ValueError("probs must contain at least one prediction; got an empty array")
    if not (np.issubdtype(p.dtype, np.number) or p.dtype == bool) or np.iscomplexobj(p):
        raise ValueError(f"probs must be real numbers; got dtype {p.dtype}")
    p = p.astype(np.float64).ravel()
    bad = ~((p >= 0.0) & (p <= 1.0))  # also catches NaN
    if bad.any():
        raise ValueError(
            f"probs must be probabilities in [0, 1]; found {int(bad.sum())} value(s) outside "
            f"[0, 1] or NaN, e.g. {p[bad][0].item()!r}"
        )
    if not (np.issubdtype(y.dtype, np.number) or y.dtype == bool) or np.iscomplexobj(y):
        raise ValueError(f"labels must be 0/1 numbers or booleans; got dtype {y.dtype}")
    y = y.ravel()
    bad = (y != 0) & (y != 1)
    if bad.any():
        raise ValueError(
            f"labels must contain only 0 and 1; found {int(bad.sum())} other value(s), e.g. {y[bad][0].item()!r}"
        )
    return p, y.astype(np.float64)


def _check_bins(n_bins: int, strategy: str) -> None:
    if isinstance(n_bins, bool) or not isinstance(n_bins, numbers.Integral) or n_bins < 1:
        raise ValueError(f"n_bins must be an integer >= 1; got {n_bins!r}")
    if strategy not in _STRATEGIES:
        raise ValueError(f"strategy must be one of {_STRATEGIES}; got {strategy!r}")


def _bin_edges(p: np.ndarray, n_bins: int, strategy: str) -> np.ndarray:
    """Bucket edges [n_bins + 1]: equal width on [0, 1], or quantiles of ``p``."""
    if strategy == "uniform":
        return np.linspace(0.0, 1.0, n_bins + 1)
    edges = np.percentile(p, np.linspace(0.0, 100.0, n_bins + 1))
    return np.maximum.accumulate(edges)  # guard against round-off making edges decrease


def _reliability(p: np.ndarray, y: np.ndarray, n_bins: int, strategy: str) -> ReliabilityCurve:
    """Bucket validated, flattened predictions; see the module docstring for the bucket rule."""
    edges = _bin_edges(p, n_bins, strategy)
    # Right-closed buckets: index of the first interior edge >= p (0 for p <= e_1, last for p > e_{c-1}).
    ids = np.searchsorted(edges[1:-1], p, side="left")
    counts = np.bincount(ids, minlength=n_bins)
    sum_p = np.bincount(ids, weights=p, minlength=n_bins)
    sum_y = np.bincount(ids, weights=y, minlength=n_bins)
    mean_predicted = np.full(n_bins, np.nan)
    fraction_positive = np.full(n_bins, np.nan)
    nonempty = counts > 0
    mean_predicted[nonempty] = sum_p[nonempty] / counts[nonempty]
    fraction_positive[nonempty] = sum_y[nonempty] / counts[nonempty]
    return ReliabilityCurve(edges, mean_predicted, fraction_positive, counts.astype(np.int64))


def reliability_curve(
    probs: np.ndarray, labels: np.ndarray, n_bins: int = 10, strategy: str = "uniform"
) -> ReliabilityCurve:
    """Per-bucket mean prediction, fraction of relevant pairs and count: a reliability diagram's numbers.

    Unlike ``sklearn.calibration.calibration_curve`` (same buckets), empty buckets are kept
    (NaN means, count 0), so every array has exactly ``n_bins`` entries; buckets are
    right-closed.

    Parameters
    ----------
    probs : array-like of float
        Predicted probabilities of relevance in [0, 1], any shape (flattened).
    labels : array-like of {0, 1}
        The true labels, shaped as ``probs``.
    n_bins : int, default=10
        Number of buckets.
    strategy : {"uniform", "quantile"}, default="uniform"
        Equal-width buckets on [0, 1] (as ``sklearn.calibration.calibration_curve``) or equal-mass.

    Returns
    -------
    ReliabilityCurve
        ``bin_edges``, ``mean_predicted``, ``fraction_positive``, ``counts``; its ``ece`` and
        ``mce`` are :func:`ece` and :func:`mce`.

    Examples
    --------
    >>> import numpy as np
    >>> p = np.array([0.9, 0.8, 0.3, 0.2, 0.6, 0.1])
    >>> y = np.array([1, 1, 0, 0, 0, 0])
    >>> curve = reliability_curve(p, y, n_bins=2)
    >>> curve.mean_predicted.round(3).tolist(), curve.fraction_positive.round(3).tolist(), curve.counts.tolist()
    ([0.2, 0.767], [0.0, 0.667], [3, 3])
    """
    _check_bins(n_bins, strategy)
    p, y = _check_probs_labels(probs, labels)
    return _reliability(p, y, n_bins, strategy)


def ece(probs: np.ndarray, labels: np.ndarray, n_bins: int = 10, strategy: str = "uniform") -> float:
    """Expected calibration error, eq. 1 of Penha & Hauff (2021): ``sum_i |B_i|/n |avg(B_i) - rel(B_i)/|B_i||``.

    The gap between the mean predicted probability and the share of relevant pairs in each
    bucket, weighted by the bucket's size: 0 for a calibrated ranker. Empty buckets contribute 0.

    Parameters
    ----------
    probs : array-like of float
        Predicted probabilities of relevance in [0, 1], any shape (flattened).
    labels : array-like of {0, 1}
        The true labels, shaped as ``probs``.
    n_bins : int, default=10
        Number of buckets.
    strategy : {"uniform", "quantile"}, default="uniform"
        Equal-width buckets on [0, 1] (as ``sklearn.calibration.calibration_curve``) or equal-mass.

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np
    >>> p = np.array([0.9, 0.8, 0.3, 0.2, 0.6, 0.1])
    >>> y = np.array([1, 1, 0, 0, 0, 0])
    >>> round(ece(p, y, n_bins=2), 3)        # (3 * |0.2 - 0| + 3 * |0.767 - 0.667|) / 6
    0.15
    """
    return reliability_curve(probs, labels, n_bins, strategy).ece


def folded_normal_mean(mu: np.ndarray, var: np.ndarray) -> np.ndarray:
    """``E|X|`` for ``X ~ N(mu, var)``, elementwise; ``|mu|`` where ``var`` is 0.

    ``sigma sqrt(2/pi) exp(-mu^2 / 2 sigma^2) + mu (1 - 2 Phi(-mu / sigma))``.
    """
    mu = np.asarray(mu, dtype=np.float64)
    var = np.asarray(var, dtype=np.float64)
    sd = np.sqrt(np.maximum(var, 0.0))
    pos = sd > 0
    safe = np.where(pos, sd, 1.0)
    z = mu / safe
    folded = safe * np.sqrt(2.0 / np.pi) * np.exp(-0.5 * z * z) + mu * (1.0 - 2.0 * _special.ndtr(-z))
    return np.where(pos, folded, np.abs(mu))


def debiased_gap_sum(sum_gap: np.ndarray, count: np.ndarray, sum_y: np.ndarray) -> np.ndarray:
    """``sum_i (2 |g_i| - E|g_i'|) |B_i|`` over the last axis from per-bucket sums (module docstring).

    ``sum_gap = sum_{B_i} (p - y)``, ``count = |B_i|``, ``sum_y = rel(B_i)``; shared by
    :func:`ece_debiased` and :mod:`calibrank.metrics.resample`.
    """
    with np.errstate(invalid="ignore", divide="ignore"):
        n = np.where(count > 0, count, 1.0)
        gap = sum_gap / n
        ybar = np.clip(sum_y / n, 0.0, 1.0)
        var = ybar * (1.0 - ybar) / n
    term = (2.0 * np.abs(gap) - folded_normal_mean(gap, var)) * count
    return np.where(count > 0, term, 0.0).sum(axis=-1)


def ece_debiased(probs: np.ndarray, labels: np.ndarray, n_bins: int = 10, strategy: str = "uniform") -> float:
    """ECE with the plug-in bias removed (Kumar, Liang & Ma 2019, sec. 5; closed-form expectation).

    The plug-in ECE of eq. 1 is biased upwards on few pairs per bucket; ``ece(...) -
    ece_debiased(...)`` is that estimated bias, which the bootstrap intervals of
    :mod:`calibrank.metrics.resample` correct for. Same buckets as :func:`ece`.

    Parameters
    ----------
    probs : array-like of float
        Predicted probabilities of relevance in [0, 1], any shape (flattened).
    labels : array-like of {0, 1}
        The true labels, shaped as ``probs``.
    n_bins : int, default=10
        Number of buckets.
    strategy : {"uniform", "quantile"}, default="uniform"
        Equal-width buckets on [0, 1] (as ``sklearn.calibration.calibration_curve``) or equal-mass.

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np
    >>> p = np.array([0.9, 0.8, 0.3, 0.2, 0.6, 0.1])
    >>> y = np.array([1, 1, 0, 0, 0, 0])
    >>> round(ece_debiased(p, y, n_bins=2), 3)
    0.084
    """
    _check_bins(n_bins, strategy)
    p, y = _check_probs_labels(probs, labels)
    edges = _bin_edges(p, n_bins, strategy)
    ids = np.searchsorted(edges[1:-1], p, side="left")
    count = np.bincount(ids, minlength=n_bins).astype(np.float64)
    sum_gap = np.bincount(ids, weights=p - y, minlength=n_bins)
    sum_y = np.bincount(ids, weights=y, minlength=n_bins)
    return float(debiased_gap_sum(sum_gap, count, sum_y) / p.size)


def mce(probs: np.ndarray, labels: np.ndarray, n_bins: int = 10, strategy: str = "uniform") -> float:
    """Maximum calibration error (Naeini et al. 2015): ``max_i |avg(B_i) - rel(B_i)/|B_i||`` over non-empty buckets.

    The worst bucket's gap, where :func:`ece` averages them.

    Parameters
    ----------
    probs : array-like of float
        Predicted probabilities of relevance in [0, 1], any shape (flattened).
    labels : array-like of {0, 1}
        The true labels, shaped as ``probs``.
    n_bins : int, default=10
        Number of buckets.
    strategy : {"uniform", "quantile"}, default="uniform"
        Equal-width buckets on [0, 1] (as ``sklearn.calibration.calibration_curve``) or equal-mass.

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np
    >>> p = np.array([0.9, 0.8, 0.3, 0.2, 0.6, 0.1])
    >>> y = np.array([1, 1, 0, 0, 0, 0])
    >>> round(mce(p, y, n_bins=2), 3)
    0.2
    """
    return reliability_curve(probs, labels, n_bins, strategy).mce


def _brier(p: np.ndarray, y: np.ndarray) -> float:
    return float(np.mean((p - y) ** 2))


def _nll(p: np.ndarray, y: np.ndarray) -> float:
    p = np.clip(p, EPS, 1.0 - EPS)
    return float(-np.mean(y * np.log(p) + (1.0 - y) * np.log1p(-p)))


def brier(probs: np.ndarray, labels: np.ndarray) -> float:
    """Brier score: the mean squared difference between probability and 0/1 label.

    A proper scoring rule: it rewards calibration and sharpness together, with no buckets.

    Parameters
    ----------
    probs : array-like of float
        Predicted probabilities of relevance in [0, 1], any shape (flattened).
    labels : array-like of {0, 1}
        The true labels, shaped as ``probs``.

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np
    >>> p = np.array([0.9, 0.8, 0.3, 0.2, 0.6, 0.1])
    >>> y = np.array([1, 1, 0, 0, 0, 0])
    >>> round(brier(p, y), 4)
    0.0917
    """
    return _brier(*_check_probs_labels(probs, labels))


def nll(probs: np.ndarray, labels: np.ndarray) -> float:
    """Negative log-likelihood: the mean binary log loss.

    Probabilities are clipped to ``[EPS, 1 - EPS]`` (``EPS = 1e-7``) so a confident mistake
    costs about 16 nats, not infinity.

    Parameters
    ----------
    probs : array-like of float
        Predicted probabilities of relevance in [0, 1], any shape (flattened).
    labels : array-like of {0, 1}
        The true labels, shaped as ``probs``.

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np
    >>> p = np.array([0.9, 0.8, 0.3, 0.2, 0.6, 0.1])
    >>> y = np.array([1, 1, 0, 0, 0, 0])
    >>> round(nll(p, y), 4)
    0.3217
    """
    return _nll(*_check_probs_labels(probs, labels))


def calibration_metrics(probs: np.ndarray, labels: np.ndarray, n_bins: int = 10) -> dict[str, float]:
    """Every calibration metric at once: ``{"ECE", "ECE (equal mass)", "MCE", "Brier", "NLL"}``.

    The inputs are checked once; the MCE uses equal-width buckets.

    Parameters
    ----------
    probs : array-like of float
        Predicted probabilities of relevance in [0, 1], any shape (flattened).
    labels : array-like of {0, 1}
        The true labels, shaped as ``probs``.
    n_bins : int, default=10
        Number of buckets of the ECEs and the MCE.

    Returns
    -------
    dict of str to float

    Examples
    --------
    >>> import numpy as np
    >>> p = np.array([0.9, 0.8, 0.3, 0.2, 0.6, 0.1])
    >>> y = np.array([1, 1, 0, 0, 0, 0])
    >>> {k: round(v, 3) for k, v in calibration_metrics(p, y, n_bins=2).items()}
    {'ECE': 0.15, 'ECE (equal mass)': 0.15, 'MCE': 0.2, 'Brier': 0.092, 'NLL': 0.322}
    """
    _check_bins(n_bins, "uniform")
    p, y = _check_probs_labels(probs, labels)
    uniform = _reliability(p, y, n_bins, "uniform")
    return {
        "ECE": uniform.ece,
        "ECE (equal mass)": _reliability(p, y, n_bins, "quantile").ece,
        "MCE": uniform.mce,
        "Brier": _brier(p, y),
        "NLL": _nll(p, y),
    }
