"""``mc_dropout``: S-BERT^D of Penha & Hauff (2021, sec. 3.2), MC Dropout (Gal & Ghahramani 2016).

The fine-tuned ``bert`` model (the same trained weights, from the shared cache) with its
dropout layers left on at test time: T stochastic forward passes give T joint samples of the
probabilities of a query's candidates (the same dropout masks are not shared across pairs,
as in the paper's implementation, which ran the passes over whole batches). ``probs`` is the
mean of the T sampled probabilities; the variance across passes is the uncertainty.

Cost. Every dropout layer of the encoder is on, the attention-probability dropout included
(BERT was fine-tuned with it). On a CPU one stochastic pass costs about twice a deterministic
one (MiniLM, bf16, one thread: 1.2 s against 0.58 s for 64 pairs), so T passes cost about 2T
deterministic ones: attention dropout draws a random number for every attention weight, and
PyTorch's fused CPU attention kernel has no dropout, so its plain matrix path runs (switching
attention dropout off brings a pass to 1.1x; hidden-state dropout alone costs 0.1x). The
papers' GPU timings (GPF-BERT Table 3: 9.56x for T = 10) do not pay this.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..config import MCDropoutConfig, build_section
from ..data.schema import RankingQuery
from ..predictions import Predictions
from .base import sigmoid
from .deterministic import DeterministicRanker

__all__ = ["MCDropoutRanker"]


class MCDropoutRanker(DeterministicRanker):
    """``passes``: T, the default and check of :class:`calibrank.config.MCDropoutConfig`."""

    name = "mc_dropout"

    def __init__(self, *, passes: int = MCDropoutConfig.passes, **kw) -> None:
        super().__init__(**kw)
        self.passes = build_section(MCDropoutConfig, {"passes": passes}, where=self.name).passes

    def predict(self, queries: Sequence[RankingQuery]) -> Predictions:
        trained = self._require_fit()
        logits, seconds = self._timed_logits(trained, queries, passes=self.passes, dropout=True, seed=self.seed)
        samples = sigmoid(logits)
        return self._predictions(
            queries, samples.mean(axis=0), samples, seconds=seconds, n_parameters=self.n_parameters,
            extra={"passes": self.passes},
        )
