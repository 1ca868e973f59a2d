"""What the Gaussian-process rankers share: a joint Gaussian of each query's candidate logits.

``sngp`` / ``gpf_bert`` (a random-feature GP, :mod:`.sngp`) and ``pg_drr`` (an inducing-set GP,
:mod:`.pg_gp`) differ in the GP inputs (:meth:`GPRanker.gp_input`), the joint posterior
(:meth:`GPRanker.joint_logits`) and the point probability (:meth:`GPRanker.probabilities`: the
mean-field sigmoid, or Gauss-Hermite quadrature); here the same ``probs``, seeded joint draws for
``samples``, and each distinct pair encoded once when several query sets are predicted together.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from typing import ClassVar

import numpy as np
import torch
from torch import nn

from calibrank.predictions import Predictions
from calibrank.study.data.schema import RankingQuery
from calibrank.study.model import encode_once
from calibrank.study.model.gp.gaussian import draw_joint
from calibrank.study.model.rankers.base import Ranker
from calibrank.study.model.rankers.scoring import encode_features, shared, sigmoid, timed

__all__ = ["GPRanker"]


class GPRanker(Ranker):
    """A ranker whose output layer gives a joint Gaussian of each query's logits; ``samples`` joint draws each."""

    #: A pair's GP input depends on the pair only; the joint draws are made per query set.
    shares_pairs: ClassVar[bool] = True
    #: The second word of the draws' seed ``[seed, draw_stream]``.
    draw_stream: ClassVar[int]
    #: Joint draws per query (S of the Predictions).
    samples: int

    def gp_input(self, model: nn.Module, pooled: torch.Tensor) -> torch.Tensor:
        """What the GP reads of a pair's pooled feature: the feature itself (a ranker with a projection maps it)."""
        return pooled

    @torch.no_grad()
    def features(self, queries: Sequence[RankingQuery]) -> torch.Tensor:
        """The GP inputs ``[Q*K, d]`` (:meth:`gp_input` of each pooled feature), one row per pair in query order:
        from each distinct side encoded once where no layer is joint, else pair by pair."""
        trained = self._require_fit()
        pairs = self._encode(trained.backbone.tokenizer, queries)
        t = self.training
        if encode_once.applies(trained.model):
            return encode_once.features_once(
                trained.model, pairs, batch_size=self.eval_batch_size, precision=t.precision, head=self.gp_input
            )
        return encode_features(
            trained.model,
            pairs,
            batch_size=self.eval_batch_size,
            precision=t.precision,
            fn=lambda m, b: self.gp_input(m, m.features(**b)),
        )

    @abstractmethod
    def joint_logits(
        self, queries: Sequence[RankingQuery], features: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``(mean [Q, K], cov [Q, K, K])`` (float64) of each query's candidate logits; ``features``: the
        queries' :meth:`features` when already computed."""

    @abstractmethod
    def probabilities(self, mean: torch.Tensor, var: torch.Tensor) -> np.ndarray:
        """The point probability ``[Q, K]`` of each candidate from its logit's mean and variance."""

    def meta(self) -> dict:
        """What the Predictions record of this ranker's settings."""
        return {}

    def logit_moments(self, queries: Sequence[RankingQuery]) -> tuple[np.ndarray, np.ndarray]:
        """Posterior mean and variance ``[Q, K]`` of each candidate's logit."""
        mean, cov = self.joint_logits(queries)
        return mean.cpu().numpy(), cov.diagonal(dim1=-2, dim2=-1).clamp_min(0.0).cpu().numpy()

    def _predict_arrays(
        self, queries: Sequence[RankingQuery], features: torch.Tensor | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(probs [Q, K], samples [S, Q, K])``: :meth:`probabilities` and sigmoids of seeded joint draws."""
        mean, cov = self.joint_logits(queries, features)
        var = cov.diagonal(dim1=-2, dim2=-1).clamp_min(0.0)
        draws = draw_joint(mean, cov, self.samples, np.random.default_rng([self.seed, self.draw_stream]))
        return self.probabilities(mean, var), sigmoid(draws.cpu().numpy())

    def predict(self, queries: Sequence[RankingQuery]) -> Predictions:
        return self.predict_many([queries])[0]

    def predict_many(self, query_sets: Sequence[Sequence[RankingQuery]]) -> list[Predictions]:
        """Each set's joint Gaussian and seeded draws as :meth:`predict`; several sets share each distinct
        pair's GP input (:func:`calibrank.study.model.rankers.scoring.shared`)."""
        if len(query_sets) > 1:
            parts = shared(
                query_sets,
                lambda union: timed(self.features, union),
                lambda feats, ix: feats[torch.as_tensor(ix.reshape(-1), device=feats.device)],
            )
        else:
            parts = [(None, 0.0, {})]
        out = []
        for queries, (feats, shared_seconds, extra) in zip(query_sets, parts):
            (probs, samples), seconds = timed(self._predict_arrays, queries, *(() if feats is None else (feats,)))
            out.append(
                self._predictions(
                    queries,
                    probs,
                    samples,
                    seconds=seconds + shared_seconds,
                    n_parameters=self.n_parameters,
                    extra={**self.meta(), **extra},
                )
            )
        return out
