"""``focal`` and ``gpf_bert``: focal-loss training (Lin et al. 2017) of the cross-encoder and of SNGP.

``focal`` is the ``bert`` cross-encoder trained with focal loss (the "Focal" model of GPF-BERT's
ablation, sec. 3.3); ``gpf_bert`` is GPF-BERT, :mod:`.sngp` trained with focal loss. The loss is
GPF-BERT eq. 6 (:func:`calibrank.study.model.losses.focal`); GPF-BERT states only ``gamma >= 1``: the
default is Lin et al.'s 2, laptop uses 1 (docs/decisions.md, "Settings of the GP and focal
rankers on laptop").
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from calibrank.study.model.losses import focal
from calibrank.study.model.rankers.deterministic import DeterministicRanker
from calibrank.study.model.rankers.run import RankerRun
from calibrank.study.model.rankers.sngp import SNGPRanker
from calibrank.study.settings.choices import FocalGamma, RFOutputInit, SNGPLoss, SpectralNormPlacement
from calibrank.study.settings.config import build_section
from calibrank.study.settings.schema import FocalConfig, GPFBertConfig

__all__ = ["FocalRanker", "GPFBertRanker"]

_D = GPFBertConfig  # the defaults of gpf_bert


class FocalRanker(DeterministicRanker):
    """The ``bert`` cross-encoder trained with focal loss.

    Parameters (after the :class:`~calibrank.study.model.rankers.run.RankerRun`)
    ----------
    gamma : float or FocalGamma
        A number >= 0 or ``"adaptive"``: the ``gamma`` of the ``focal`` section
        (:class:`calibrank.study.settings.schema.FocalConfig`), its default and its check.
    """

    name = "focal"
    kind = "focal"

    def __init__(self, run: RankerRun, /, *, gamma: float | FocalGamma | str = FocalConfig.gamma) -> None:
        super().__init__(run)
        gamma = build_section(FocalConfig, {"gamma": gamma}, where=self.name).gamma
        self.gamma = gamma.value if isinstance(gamma, FocalGamma) else gamma

    def loss(self, model: nn.Module, batch: dict, labels: torch.Tensor) -> torch.Tensor:
        return focal(model(**batch), labels, self.gamma)

    def model_key_extra(self) -> dict:
        return {"loss": "focal", "focal_gamma": self.gamma}

    def training_loss(self):
        return focal

    def probabilities(self, logits: np.ndarray) -> tuple[np.ndarray, np.ndarray, dict]:
        probs, samples, meta = super().probabilities(logits)
        return probs, samples, {"focal_gamma": self.gamma, **meta}


class GPFBertRanker(SNGPRanker):
    """GPF-BERT: :class:`SNGPRanker` always trained with focal loss; its parameters are SNGP's but ``loss``
    (the fields of :class:`calibrank.study.settings.schema.GPFBertConfig`).

    The list restates SNGP's less ``loss``: a Python subclass cannot drop one keyword of its parent's
    signature without restating the others, and the ways around it (``**kw``, a generated or partial
    signature) would hide the settings or accept a ``loss`` that gpf_bert's profile section does not
    have. ``tests/test_toy_ranker.py`` holds the two lists and the section's defaults together.
    """

    name = "gpf_bert"
    section = GPFBertConfig

    def __init__(
        self,
        run: RankerRun,
        /,
        *,
        spectral_norm: SpectralNormPlacement | str = _D.spectral_norm,
        sn_bound: float = _D.sn_bound,
        sn_power_iterations: int = _D.sn_power_iterations,
        n_features: int = _D.n_features,
        length_scale: float = _D.length_scale,
        feature_scale: float = _D.feature_scale,
        ridge: float = _D.ridge,
        momentum: float | None = _D.momentum,
        mean_field_factor: float = _D.mean_field_factor,
        samples: int = _D.samples,
        focal_gamma: float | FocalGamma | str = _D.focal_gamma,
        head_dropout: float = _D.head_dropout,
        head_lr: float | None = _D.head_lr,
        output_init: RFOutputInit | str = _D.output_init,
    ) -> None:
        super().__init__(
            run,
            spectral_norm=spectral_norm,
            sn_bound=sn_bound,
            sn_power_iterations=sn_power_iterations,
            n_features=n_features,
            length_scale=length_scale,
            feature_scale=feature_scale,
            ridge=ridge,
            momentum=momentum,
            mean_field_factor=mean_field_factor,
            samples=samples,
            loss=SNGPLoss.focal,
            focal_gamma=focal_gamma,
            head_dropout=head_dropout,
            head_lr=head_lr,
            output_init=output_init,
        )
