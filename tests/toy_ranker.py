"""``toy``: the ``bert`` cross-encoder trained with label smoothing, a ranker written from the contract alone.

Label smoothing (Szegedy et al. 2016; Müller et al. 2019) trains on the targets
``y (1 - smoothing) + smoothing / 2``, a known calibration aid. The whole ranker is its settings in
the signature and two hooks: the loss, and what sets its trained model apart in the cache key.
:mod:`test_toy_ranker` registers it with one line and runs it through notebooks 03 and 04.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from calibrank.study.model.rankers import RankerRun
from calibrank.study.model.rankers.deterministic import DeterministicRanker


class LabelSmoothingRanker(DeterministicRanker):
    """``bert`` trained on smoothed targets; ``smoothing`` in [0, 1) (0: plain ``bert`` training)."""

    name = "toy"
    kind = "toy"  # a model of its own in the cache

    def __init__(self, run: RankerRun, /, *, smoothing: float = 0.1) -> None:
        super().__init__(run)
        if not 0.0 <= smoothing < 1.0:
            raise ValueError(f"{self.name}: smoothing: expected a number in [0, 1), got {smoothing!r}")
        self.smoothing = float(smoothing)

    def loss(self, model: nn.Module, batch: dict, labels: torch.Tensor) -> torch.Tensor:
        targets = labels.float() * (1.0 - self.smoothing) + self.smoothing / 2
        return F.binary_cross_entropy_with_logits(model(**batch).float(), targets)

    def training_loss(self) -> None:
        return None  # the loss is the method above, which the model key's code reaches (calibrank.study.codekey)

    def model_key_extra(self) -> dict:
        return {"smoothing": self.smoothing}
