"""``ensemble``: S-BERT^E of Penha & Hauff (2021, sec. 3.2), Deep Ensembles (Lakshminarayanan et al. 2017).

M cross-encoders that differ only in their seed, each trained by the same loop and cached on
its own. Member 0 is the ``bert`` model; member i > 0 uses a seed spawned from (seed, i). Each
member gives one sample; ``probs`` is their mean.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from calibrank.predictions import Predictions
from calibrank.study.data.schema import RankingQuery
from calibrank.study.model.rankers.base import Ranker, TrainedModel
from calibrank.study.model.rankers.run import RankerRun
from calibrank.study.model.rankers.scoring import sigmoid
from calibrank.study.model.training import TrainResult
from calibrank.study.settings.config import build_section
from calibrank.study.settings.schema import EnsembleConfig

__all__ = ["EnsembleRanker"]


class EnsembleRanker(Ranker):
    """M ``bert`` models differing only in their seed.

    Parameters (after the :class:`~calibrank.study.model.rankers.run.RankerRun`)
    ----------
    members : int
        M, the default and check of :class:`calibrank.study.settings.schema.EnsembleConfig`.
    """

    name = "ensemble"
    kind = "bert"  # every member is a bert model (member 0 is the bert model of the seed)
    #: Each member's logit of a pair depends on the pair only: query sets share their distinct pairs.
    shares_pairs: ClassVar[bool] = True

    def __init__(self, run: RankerRun, /, *, members: int = EnsembleConfig.members) -> None:
        super().__init__(run)
        self.members = build_section(EnsembleConfig, {"members": members}, where=self.name).members
        self.trained: list[TrainedModel] = []  # type: ignore[assignment]

    def model_seeds(self) -> list[int]:
        return self.member_seeds()

    def member_seeds(self) -> list[int]:
        """Member 0 trains with the ranker's seed (sharing that seed's ``bert``); member i > 0 with a seed
        spawned from (seed, i) by :class:`numpy.random.SeedSequence`, so that no member coincides with
        another training seed's model (``seed + i`` would).
        """
        spawned = [
            int(np.random.SeedSequence([self.seed, i]).generate_state(1)[0] & 0x7FFFFFFF)
            for i in range(1, self.members)
        ]
        return [self.seed, *spawned]

    def fit_member(self, index: int, train: Sequence[RankingQuery], valid: Sequence[RankingQuery] = ()):
        """Train (or load from the cache) member ``index`` alone: one job of a grid of runs."""
        if not 0 <= index < self.members:
            raise ValueError(f"ensemble: member index must be in [0, {self.members}), got {index}")
        return self._train(self.member_seeds()[index], train, valid)

    def fit(self, train: Sequence[RankingQuery], valid: Sequence[RankingQuery] = ()) -> EnsembleRanker:
        self.trained = [self.fit_member(i, train, valid) for i in range(self.members)]
        self.fit_seconds = sum(t.result.seconds for t in self.trained)
        return self

    def _require_members(self) -> list[TrainedModel]:
        if not self.trained:
            raise RuntimeError("ranker 'ensemble': call fit() before predict()")
        return self.trained

    def predict(self, queries: Sequence[RankingQuery]) -> Predictions:
        member_logits = [self._timed_logits(t, queries) for t in self._require_members()]
        return self._from_members(queries, [logits for logits, _ in member_logits], sum(s for _, s in member_logits))

    def predict_many(self, query_sets: Sequence[Sequence[RankingQuery]]) -> list[Predictions]:
        """Each member scores the distinct pairs of all ``query_sets`` once; each set is assembled from those scores."""
        if len(query_sets) < 2:
            return [self.predict(queries) for queries in query_sets]
        per_member = [self._shared_logits(t, query_sets) for t in self._require_members()]
        out = []
        for i, queries in enumerate(query_sets):
            parts = [member[i] for member in per_member]
            shared = [p[2]["shared_scoring"] for p in parts]
            extra = {"shared_scoring": {**shared[0], "seconds": round(sum(s["seconds"] for s in shared), 3)}}
            out.append(self._from_members(queries, [p[0] for p in parts], sum(p[1] for p in parts), extra))
        return out

    def _from_members(
        self,
        queries: Sequence[RankingQuery],
        member_logits: list[np.ndarray],
        seconds: float,
        extra: dict | None = None,
    ) -> Predictions:
        samples = np.stack([sigmoid(logits[0]) for logits in member_logits])
        return self._predictions(
            queries,
            samples.mean(axis=0),
            samples,
            seconds=seconds,
            n_parameters=self.n_parameters,
            extra={"members": self.members, "member_seeds": self.member_seeds(), **(extra or {})},
        )

    def training_results(self) -> list[TrainResult]:
        return [t.result for t in self._require_members()]

    @property
    def n_parameters(self) -> int:
        return sum(sum(p.numel() for p in t.model.parameters()) for t in self._require_members())
