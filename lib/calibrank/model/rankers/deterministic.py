"""``bert``: the deterministic pointwise BERT ranker of Penha & Hauff (2021, sec. 3.2).

One fine-tuned cross-encoder; the probability of relevance is the sigmoid of its logit. As a
point estimate it has one sample (S = 1) and zero variance.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ...data.schema import RankingQuery
from ...predictions import Predictions
from ..training import TrainResult
from .base import Ranker, sigmoid

__all__ = ["DeterministicRanker"]


class DeterministicRanker(Ranker):
    name = "bert"
    kind = "bert"  # the trained-model cache key: rankers sharing it share the trained model

    def fit(self, train: Sequence[RankingQuery], valid: Sequence[RankingQuery] = ()) -> "DeterministicRanker":
        self.trained = self._train(self.seed, train, valid)
        self.fit_seconds = self.trained.result.seconds
        return self

    #: A pair's logit depends on the pair only: several query sets score their distinct pairs once.
    shares_pairs = True

    def _scoring(self) -> dict[str, Any]:
        """Keyword arguments of :meth:`_timed_logits` (how the model scores; part of the logits cache key)."""
        return {}

    def predict(self, queries: Sequence[RankingQuery]) -> Predictions:
        trained = self._require_fit()
        logits, seconds = self._timed_logits(trained, queries, **self._scoring())
        return self._from_logits(queries, logits, seconds)

    def predict_many(self, query_sets: Sequence[Sequence[RankingQuery]]) -> list[Predictions]:
        """Predictions for each query set; with :attr:`shares_pairs`, every distinct pair scored once
        (:meth:`_shared_logits`) and each set assembled from those scores."""
        if not self.shares_pairs or len(query_sets) < 2:
            return [self.predict(queries) for queries in query_sets]
        shared = self._shared_logits(self._require_fit(), query_sets, **self._scoring())
        return [self._from_logits(queries, logits, seconds, extra)
                for queries, (logits, seconds, extra) in zip(query_sets, shared)]

    def _from_logits(self, queries: Sequence[RankingQuery], logits: np.ndarray, seconds: float,
                     extra: dict | None = None) -> Predictions:
        """Predictions from the logits ``[S, Q, K]`` of the trained model on ``queries``."""
        probs = sigmoid(logits[0])
        return self._predictions(queries, probs, probs[None], seconds=seconds, n_parameters=self.n_parameters,
                                 extra=extra)

    @property
    def n_parameters(self) -> int:
        return sum(p.numel() for p in self._require_fit().model.parameters())

    def training_results(self) -> list[TrainResult]:
        return [self._require_fit().result]

    def logits(self, queries: Sequence[RankingQuery]) -> np.ndarray:
        """Logits ``[Q, K]`` of the trained model (eval mode)."""
        return self._logits(self._require_fit(), queries)[0]
