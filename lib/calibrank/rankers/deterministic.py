"""``bert``: the deterministic pointwise BERT ranker of Penha & Hauff (2021, sec. 3.2).

One fine-tuned cross-encoder; the probability of relevance is the sigmoid of its logit. As a
point estimate it has one sample (S = 1) and zero variance.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..data.schema import RankingQuery
from ..predictions import Predictions
from ..training import TrainResult
from .base import Ranker, sigmoid

__all__ = ["DeterministicRanker"]


class DeterministicRanker(Ranker):
    name = "bert"
    kind = "bert"  # the trained-model cache key: rankers sharing it share the trained model

    def fit(self, train: Sequence[RankingQuery], valid: Sequence[RankingQuery] = ()) -> "DeterministicRanker":
        self.trained = self._train(self.kind, self.seed, train, valid)
        self.fit_seconds = self.trained.result.seconds
        return self

    def predict(self, queries: Sequence[RankingQuery]) -> Predictions:
        trained = self._require_fit()
        logits, seconds = self._timed_logits(trained, queries)
        probs = sigmoid(logits[0])
        return self._predictions(queries, probs, probs[None], seconds=seconds, n_parameters=self.n_parameters)

    @property
    def n_parameters(self) -> int:
        return sum(p.numel() for p in self._require_fit().model.parameters())

    def training_results(self) -> list[TrainResult]:
        return [self._require_fit().result]

    def logits(self, queries: Sequence[RankingQuery]) -> np.ndarray:
        """Logits ``[Q, K]`` of the trained model (eval mode)."""
        return self._logits(self._require_fit(), queries)[0]
