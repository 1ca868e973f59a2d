"""``bert``: the deterministic pointwise BERT ranker of Penha & Hauff (2021, sec. 3.2).

One fine-tuned cross-encoder; the probability of relevance is the sigmoid of its logit. As a
point estimate it has one sample (S = 1) and zero variance. ``temperature``, ``focal`` and
``mc_dropout`` change one part of it (:meth:`DeterministicRanker.probabilities`, the loss, the
scoring).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from calibrank.predictions import Predictions
from calibrank.study.data.schema import RankingQuery
from calibrank.study.model.rankers.base import Ranker
from calibrank.study.model.rankers.scoring import sigmoid

__all__ = ["DeterministicRanker"]


class DeterministicRanker(Ranker):
    """The ``bert`` cross-encoder: :class:`~calibrank.study.model.rankers.base.Ranker`'s settings and nothing more."""

    name = "bert"
    kind = "bert"  # the trained-model cache key: rankers sharing it share the trained model
    #: A pair's logit depends on the pair only: several query sets score their distinct pairs once.
    shares_pairs: ClassVar[bool] = True

    def fit(self, train: Sequence[RankingQuery], valid: Sequence[RankingQuery] = ()) -> DeterministicRanker:
        self.trained = self._train(self.seed, train, valid)
        self.fit_seconds = self.trained.result.seconds
        return self

    def scoring(self) -> dict[str, Any]:
        """How the model scores (keyword arguments of :meth:`_timed_logits`, part of the logits cache key)."""
        return {}

    def predict(self, queries: Sequence[RankingQuery]) -> Predictions:
        logits, seconds = self._timed_logits(self._require_fit(), queries, **self.scoring())
        return self._from_logits(queries, logits, seconds)

    def predict_many(self, query_sets: Sequence[Sequence[RankingQuery]]) -> list[Predictions]:
        """Predictions for each query set; with :attr:`shares_pairs`, every distinct pair scored once
        (:meth:`_shared_logits`) and each set assembled from those scores."""
        if not self.shares_pairs or len(query_sets) < 2:
            return [self.predict(queries) for queries in query_sets]
        shared = self._shared_logits(self._require_fit(), query_sets, **self.scoring())
        return [
            self._from_logits(queries, logits, seconds, extra)
            for queries, (logits, seconds, extra) in zip(query_sets, shared)
        ]

    def probabilities(self, logits: np.ndarray) -> tuple[np.ndarray, np.ndarray, dict]:
        """``(probs [Q, K], samples [S, Q, K], meta)`` from the logits ``[S, Q, K]``: the sigmoid of the one logit."""
        probs = sigmoid(logits[0])
        return probs, probs[None], {}

    def _from_logits(
        self, queries: Sequence[RankingQuery], logits: np.ndarray, seconds: float, extra: dict | None = None
    ) -> Predictions:
        probs, samples, meta = self.probabilities(logits)
        return self._predictions(
            queries, probs, samples, seconds=seconds, n_parameters=self.n_parameters, extra={**meta, **(extra or {})}
        )

    def logits(self, queries: Sequence[RankingQuery]) -> np.ndarray:
        """Logits ``[Q, K]`` of the trained model (eval mode)."""
        return self._timed_logits(self._require_fit(), queries)[0][0]
