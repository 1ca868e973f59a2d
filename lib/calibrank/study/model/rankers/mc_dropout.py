"""``mc_dropout``: S-BERT^D of Penha & Hauff (2021, sec. 3.2), MC Dropout (Gal & Ghahramani 2016).

The ``bert`` model's weights with dropout on at test time: T stochastic passes give T joint
samples of a query's candidate probabilities; ``probs`` is their mean. ``masks``
(:class:`calibrank.study.settings.choices.DropoutMasks`): ``per_query`` (default) shares one mask per
query and pass among its candidates (:mod:`calibrank.study.model.dropout_masks`); ``per_pair`` (the
first paper's code) draws a fresh mask for each pair. Cost: docs/decisions.md, "Cost of MC
Dropout's masks". With no joint layer, per-query masks score from each (query, context) encoded
once per pass, the same masks on the same positions as on the pair row.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from calibrank.pairs import Pairs
from calibrank.study.model import encode_once
from calibrank.study.model.dropout_masks import score_pairs_per_query, score_sides_per_query
from calibrank.study.model.rankers.deterministic import DeterministicRanker
from calibrank.study.model.rankers.run import RankerRun
from calibrank.study.model.rankers.scoring import sigmoid
from calibrank.study.settings.choices import DropoutMasks
from calibrank.study.settings.config import build_section
from calibrank.study.settings.schema import MCDropoutConfig

__all__ = ["MCDropoutRanker"]


class MCDropoutRanker(DeterministicRanker):
    """``bert``'s model scored with dropout on, T passes.

    Parameters (after the :class:`~calibrank.study.model.rankers.run.RankerRun`), the fields, defaults and
    checks of :class:`calibrank.study.settings.schema.MCDropoutConfig`
    ----------
    passes : int
        T, the stochastic passes (samples of the Predictions).
    masks : DropoutMasks
        ``per_query`` (one mask per query and pass) or ``per_pair`` (a fresh mask per pair).
    """

    name = "mc_dropout"
    #: Per-query masks depend on (seed, pass, query id): a pair is keyed by its query too.
    pair_key_has_query = True

    def __init__(
        self,
        run: RankerRun,
        /,
        *,
        passes: int = MCDropoutConfig.passes,
        masks: DropoutMasks | str = MCDropoutConfig.masks,
    ) -> None:
        super().__init__(run)
        settings = build_section(MCDropoutConfig, {"passes": passes, "masks": masks}, where=self.name)
        self.passes = settings.passes
        self.masks = DropoutMasks(settings.masks)

    @property
    def shares_pairs(self) -> bool:  # type: ignore[override]
        """Per-query masks do not depend on the pairs batched together; per-pair masks are fresh draws."""
        return self.masks is DropoutMasks.per_query

    def _score(self, trained, pairs: Pairs) -> np.ndarray:
        """Logits ``[T, N]`` with per-query masks (:mod:`calibrank.study.model.dropout_masks`)."""
        keys = [pairs.qids[i] for i in pairs.query_index]
        # + 1: below its joint layers the encoder gives the response a [CLS] of its own (calibrank.study.model.backbone.encode)
        width = self.training.max_length + (self.training.joint_layers is not None)
        score = score_sides_per_query if encode_once.applies(trained.model) else score_pairs_per_query
        return score(
            trained.model,
            pairs,
            keys,
            passes=self.passes,
            seed=self.seed,
            max_length=width,
            batch_size=self.eval_batch_size,
            precision=self.training.precision,
        )

    def scoring(self) -> dict[str, Any]:
        if self.masks is DropoutMasks.per_pair:
            return {"passes": self.passes, "dropout": True, "seed": self.seed}
        return {
            "passes": self.passes,
            "dropout": True,
            "seed": self.seed,
            "masks": self.masks.value,
            "score": self._score,
        }

    def scores_sides(self) -> bool:
        """Per-pair masks (training-mode dropout, one draw per pair) keep the pair path."""
        return super().scores_sides() and self.masks is DropoutMasks.per_query

    def probabilities(self, logits: np.ndarray) -> tuple[np.ndarray, np.ndarray, dict]:
        """The mean of the T passes' sigmoids, and the passes as samples."""
        samples = sigmoid(logits)
        return samples.mean(axis=0), samples, {"passes": self.passes, "masks": self.masks.value}
