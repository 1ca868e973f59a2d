"""``temperature``: post-hoc temperature scaling (Guo et al. 2017) of the ``bert`` ranker.

A standard calibration baseline that none of the three papers ran: ``p = sigmoid(z / T)`` with
T fitted by the validation pairs' negative log-likelihood. Rankings are unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.optimize import minimize_scalar

from calibrank.study.data.schema import RankingQuery
from calibrank.study.model.rankers.deterministic import DeterministicRanker
from calibrank.study.model.rankers.scoring import sigmoid

__all__ = ["TemperatureRanker", "fit_temperature"]


def _nll(logits: np.ndarray, labels: np.ndarray, temperature: float) -> float:
    z = logits / temperature
    # -[y log s(z) + (1-y) log(1-s(z))] = softplus(z) - y z, computed stably
    return float(np.mean(np.logaddexp(0.0, z) - labels * z))


def fit_temperature(logits: np.ndarray, labels: np.ndarray, *, bounds: tuple[float, float] = (0.05, 20.0)) -> float:
    """The T in ``bounds`` minimising the NLL of ``sigmoid(logits / T)`` against ``labels``."""
    logits = np.asarray(logits, dtype=np.float64).ravel()
    labels = np.asarray(labels, dtype=np.float64).ravel()
    if logits.shape != labels.shape or logits.size == 0:
        raise ValueError(
            f"fit_temperature: logits {logits.shape} and labels {labels.shape} must be equal and non-empty"
        )
    if len(np.unique(labels)) < 2:
        raise ValueError("fit_temperature: validation labels must contain both 0 and 1")
    res = minimize_scalar(
        lambda lt: _nll(logits, labels, float(np.exp(lt))),
        bounds=np.log(bounds),
        method="bounded",
        options={"xatol": 1e-5},
    )
    return float(np.exp(res.x))


class TemperatureRanker(DeterministicRanker):
    """``bert``'s model with ``p = sigmoid(z / T)``, T fitted on the validation queries by :meth:`fit`."""

    name = "temperature"
    temperature: float = 1.0

    def fit(self, train: Sequence[RankingQuery], valid: Sequence[RankingQuery] = ()) -> TemperatureRanker:
        if not valid:
            raise ValueError("temperature: fitting T needs validation queries")
        super().fit(train, valid)
        labels = np.array([q.labels for q in valid], dtype=np.float64)
        self.temperature = fit_temperature(self.logits(valid), labels)
        return self

    def probabilities(self, logits: np.ndarray) -> tuple[np.ndarray, np.ndarray, dict]:
        probs = sigmoid(logits[0] / self.temperature)
        return probs, probs[None], {"temperature": self.temperature}

    @property
    def n_parameters(self) -> int:
        return super().n_parameters + 1  # T
