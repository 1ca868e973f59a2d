"""``focal`` and ``gpf_bert``: focal-loss training (Lin et al. 2017) of the cross-encoder and of SNGP.

* ``focal``: the deterministic ``bert`` cross-encoder trained with focal loss instead of
  cross-entropy: the "Focal" model of GPF-BERT's ablation (Ye et al., ICASSP 2023, sec. 3.3,
  Fig. 2). A point estimate: S = 1, zero variance.
* ``gpf_bert``: GPF-BERT (Ye et al. 2023): the :mod:`.sngp` model trained with focal loss on
  the GP posterior-mean logits; everything else (spectral normalisation, random-feature GP,
  Laplace precision, mean-field probabilities, joint samples) as ``sngp``.

The loss (GPF-BERT eq. 6): ``-(1 - p_t)^gamma log p_t`` with ``p_t`` the probability of the
true label (:func:`calibrank.losses.focal`; gamma = 0 is the cross-entropy). ``focal_gamma``
is a number >= 0 or ``"adaptive"``: the sample-dependent gamma of Mukhoti et al. (2020,
"FLSD-53"), chosen per pair from the current (detached) ``p_t`` (:mod:`calibrank.losses`).

Default gamma (``gamma`` of :class:`calibrank.config.FocalConfig`, ``focal_gamma`` of the
``gpf_bert`` section): GPF-BERT states only ``gamma >= 1`` (sec. 2.2) and no value. It is
2, the value recommended by the focal-loss paper it cites for the loss (Lin et al. 2017);
Mukhoti et al.'s choices (3, or ``"adaptive"``) are one parameter away. The laptop profile
uses 1, the smallest value the paper allows: with MiniLM and 500 steps, gamma 2 made
``gpf_bert``'s ranking depend on the seed far more than ``bert``'s (in-domain test R10@1
0.58 / 0.48 / 0.425 with seeds 13 / 14 / 15; gamma 1: 0.575 / 0.545 / 0.52; bert: 0.585 /
0.58 / 0.56). Focal loss keeps the logits small by design (sec. 2.2: it raises the entropy),
and on the bounded random features of the GP layer the probabilities of seed 15 stayed
within 0.38-0.63 at gamma 2.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from ..config import FocalConfig, GPFBertConfig, check_focal_gamma
from ..losses import focal
from .base import checked
from .deterministic import DeterministicRanker
from .sngp import SNGPRanker

__all__ = ["FocalRanker", "GPFBertRanker"]


class FocalRanker(DeterministicRanker):
    """The ``bert`` cross-encoder trained with focal loss (``focal_gamma``: number >= 0 or ``"adaptive"``).

    ``focal_gamma`` is the ``gamma`` of the ``focal`` config section (:class:`calibrank.config.FocalConfig`):
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
    :class:`calibrank.config.GPFBertConfig` (SNGP's without ``loss``)."""

    name = "gpf_bert"
    section = GPFBertConfig

    def __init__(self, **kw: Any) -> None:
        if "loss" in kw:
            raise TypeError("gpf_bert always trains with focal loss; use the 'sngp' ranker with loss='bce' or 'focal'")
        super().__init__(**kw)
