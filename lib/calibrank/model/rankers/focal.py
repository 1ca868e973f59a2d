"""``focal`` and ``gpf_bert``: focal-loss training (Lin et al. 2017) of the cross-encoder and of SNGP.

``focal`` is the ``bert`` cross-encoder trained with focal loss (the "Focal" model of GPF-BERT's
ablation, sec. 3.3); ``gpf_bert`` is GPF-BERT, :mod:`.sngp` trained with focal loss. The loss is
GPF-BERT eq. 6 (:func:`calibrank.model.losses.focal`); GPF-BERT states only ``gamma >= 1``: the
default is Lin et al.'s 2, laptop uses 1 (docs/decisions.md, "Settings of the GP and focal
rankers on laptop").
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from ...settings.checks import check_focal_gamma
from ...settings.schema import FocalConfig, GPFBertConfig
from ..losses import focal
from .base import checked
from .deterministic import DeterministicRanker
from .sngp import SNGPRanker

__all__ = ["FocalRanker", "GPFBertRanker"]


class FocalRanker(DeterministicRanker):
    """The ``bert`` cross-encoder trained with focal loss (``focal_gamma``: number >= 0 or ``"adaptive"``).

    ``focal_gamma`` is the ``gamma`` of the ``focal`` config section (:class:`calibrank.settings.config.FocalConfig`):
    its default and its check.
    """

    name = "focal"
    kind = "focal"

    def __init__(self, *, focal_gamma: float | str = FocalConfig.gamma, **kw: Any) -> None:
        super().__init__(**kw)
        self.focal_gamma = checked(self.name, check_focal_gamma, "focal_gamma", focal_gamma)

    def _loss(self, model: nn.Module, batch: dict, labels: torch.Tensor) -> torch.Tensor:
        return focal(model(**batch), labels, self.focal_gamma)

    def _model_key_extra(self) -> dict:
        return {"loss": "focal", "focal_gamma": self.focal_gamma}

    def training_loss(self):
        return focal

    def _from_logits(self, queries, logits, seconds, extra=None):
        return super()._from_logits(queries, logits, seconds, {"focal_gamma": self.focal_gamma, **(extra or {})})


class GPFBertRanker(SNGPRanker):
    """GPF-BERT: :class:`SNGPRanker` always trained with focal loss; its keyword arguments are the fields of
    :class:`calibrank.settings.config.GPFBertConfig` (SNGP's without ``loss``)."""

    name = "gpf_bert"
    section = GPFBertConfig

    def __init__(self, **kw: Any) -> None:
        if "loss" in kw:
            raise TypeError("gpf_bert always trains with focal loss; use the 'sngp' ranker with loss='bce' or 'focal'")
        super().__init__(**kw)
