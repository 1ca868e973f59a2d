"""The prior shift between training and test and its correction by Bayes' rule (Saerens, Latinne & Decaestecker 2002, eq. 2.4)."""

from __future__ import annotations

import numpy as np

from calibrank.predictions import Predictions

__all__ = ["prior_odds_ratio", "prior_correct", "train_prior", "correct_predictions"]


def _check_prior(value: float, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating)) or not 0.0 < float(value) < 1.0:
        raise ValueError(f"{name} must be a probability strictly between 0 and 1 (a class prior); got {value!r}")
    return float(value)


def prior_odds_ratio(pi_train: float, pi_test: float) -> float:
    """``r = [pi_test / (1 - pi_test)] / [pi_train / (1 - pi_train)]`` (Saerens et al. 2002, eq. 2.4)."""
    a = _check_prior(pi_train, "pi_train")
    b = _check_prior(pi_test, "pi_test")
    return (b / (1.0 - b)) / (a / (1.0 - a))


def prior_correct(probs: np.ndarray, pi_train: float, pi_test: float) -> np.ndarray:
    """Bayes' rule for a new class prior: ``p' = r p / (r p + 1 - p)`` with ``r`` of :func:`prior_odds_ratio`.

    ``probs``: probabilities of relevance under the training prior (any shape). 0 and 1 map to
    themselves exactly (no clipping). An error names the values that are not probabilities.
    """
    r = prior_odds_ratio(pi_train, pi_test)
    p = np.asarray(probs, dtype=np.float64)
    bad = ~np.isfinite(p) | (p < 0) | (p > 1)
    if bad.any():
        raise ValueError(
            f"probs must be probabilities in [0, 1]; {int(bad.sum())} value(s) are not "
            f"(first: {float(p[bad].flat[0])!r})"
        )
    return r * p / (r * p + (1.0 - p))


def train_prior(train_k: int) -> float:
    """The training prior of relevance with ``train_k`` negatives per positive: ``1 / (1 + train_k)``."""
    if isinstance(train_k, bool) or not isinstance(train_k, (int, np.integer)) or train_k < 1:
        raise ValueError(f"train_k (negatives per positive in training) must be a positive integer; got {train_k!r}")
    return 1.0 / (1.0 + int(train_k))


def correct_predictions(pred: Predictions, pi_train: float, pi_test: float | None = None) -> Predictions:
    """``pred`` with ``probs`` and every sample prior-corrected; ``pi_test`` defaults to ``1 / K``
    (one relevant candidate per query, the protocol's prior; the labels are not read)."""
    k = pred.labels.shape[1]
    pi_test = 1.0 / k if pi_test is None else pi_test
    return Predictions(
        pred.qids,
        pred.labels,
        prior_correct(pred.probs, pi_train, pi_test),
        prior_correct(pred.samples, pi_train, pi_test),
        meta={**pred.meta, "prior_correction": {"pi_train": pi_train, "pi_test": pi_test}},
        mask=pred.mask,
        docids=pred.docids,
    )
