"""``ensemble``: S-BERT^E of Penha & Hauff (2021, sec. 3.2), Deep Ensembles (Lakshminarayanan et al. 2017).

M cross-encoders that differ only in their seed (head initialisation, data order, dropout
masks), each trained by the same loop. Member i uses seed ``seed + i``, so member 0 is the
``bert`` ranker's model, and every member is cached on its own: adding a member trains only
the new one. Each member gives one sample; ``probs`` is the members' mean probability.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..data.schema import RankingQuery
from ..predictions import Predictions
from ..training import TrainResult
from .base import Ranker, TrainedModel, sigmoid

__all__ = ["EnsembleRanker"]


class EnsembleRanker(Ranker):
    name = "ensemble"

    def __init__(self, *, members: int = 5, **kw) -> None:
        super().__init__(**kw)
        if members < 2:
            raise ValueError(f"ensemble: members must be at least 2, got {members}")
        self.members = int(members)
        self.trained: list[TrainedModel] = []

    def member_seeds(self) -> list[int]:
        return [self.seed + i for i in range(self.members)]

    def fit(self, train: Sequence[RankingQuery], valid: Sequence[RankingQuery] = ()) -> "EnsembleRanker":
        self.trained = [self._train("bert", s, train, valid) for s in self.member_seeds()]
        self.fit_seconds = sum(t.result.seconds for t in self.trained)
        return self

    def predict(self, queries: Sequence[RankingQuery]) -> Predictions:
        if not self.trained:
            raise RuntimeError("ranker 'ensemble': call fit() before predict()")
        samples, seconds = [], 0.0
        for t in self.trained:
            logits, secs = self.timed(self._logits, t, queries)
            samples.append(sigmoid(logits[0]))
            seconds += secs
        samples = np.stack(samples)
        n_params = sum(sum(p.numel() for p in t.model.parameters()) for t in self.trained)
        return self._predictions(
            queries, samples.mean(axis=0), samples, seconds=seconds, n_parameters=n_params,
            extra={"members": self.members, "member_seeds": self.member_seeds()},
        )

    def training_results(self) -> list[TrainResult]:
        return [t.result for t in self.trained]
