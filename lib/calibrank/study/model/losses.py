"""Pointwise losses on relevance logits (one logit per (context, candidate) pair).

- :func:`binary_cross_entropy`: the first paper's loss. The paper's head outputs two logits
  with a softmax; one logit with a sigmoid is the same model (the softmax depends only on the
  difference of the two logits) with one redundant parameter fewer.
- :func:`focal`: focal loss ``-(1 - p_t)^gamma log p_t`` (GPF-BERT eq. 6; Lin et al. 2017)
  with ``p_t`` the probability of the true label; gamma = 0 gives the cross-entropy back.
  ``gamma`` is a number >= 0 or ``"adaptive"``: the sample-dependent gamma of Mukhoti et al.
  (2020, "FLSD-53"), :data:`ADAPTIVE_LOW` (5) where ``p_t <`` :data:`ADAPTIVE_THRESHOLD` (0.2)
  and :data:`ADAPTIVE_HIGH` (3) otherwise, chosen per pair from the current (detached) ``p_t``.
  ``gamma`` has no default here: GPF-BERT leaves it open, and the ranker that trains with the
  loss gives it (its section of the profile, :class:`calibrank.study.settings.config.FocalConfig`).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from calibrank.study.settings.checks import check_focal_gamma
from calibrank.study.settings.choices import FocalGamma

__all__ = ["binary_cross_entropy", "focal", "ADAPTIVE_THRESHOLD", "ADAPTIVE_LOW", "ADAPTIVE_HIGH"]

#: The adaptive gamma (Mukhoti et al. 2020): ``ADAPTIVE_LOW`` where ``p_t < ADAPTIVE_THRESHOLD``, else ``ADAPTIVE_HIGH``.
ADAPTIVE_THRESHOLD = 0.2
ADAPTIVE_LOW = 5.0
ADAPTIVE_HIGH = 3.0


def binary_cross_entropy(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Mean binary cross-entropy of ``sigmoid(logits)`` against 0/1 ``labels``."""
    return F.binary_cross_entropy_with_logits(logits.float(), labels.float())


def focal(logits: torch.Tensor, labels: torch.Tensor, gamma: float | str) -> torch.Tensor:
    """Mean focal loss ``-(1 - p_t)^gamma log p_t`` (GPF-BERT eq. 6) with a fixed ``gamma`` >= 0 or ``"adaptive"``.

    Raises:
        ConfigError (a ValueError): ``gamma`` is negative, not finite, or names no schedule.
    """
    gamma = check_focal_gamma("gamma", gamma)
    logits, labels = logits.float(), labels.float()
    log_pt = labels * F.logsigmoid(logits) + (1 - labels) * F.logsigmoid(-logits)
    pt = log_pt.exp()
    if gamma == FocalGamma.adaptive:
        gamma = torch.where(
            pt.detach() < ADAPTIVE_THRESHOLD, torch.full_like(pt, ADAPTIVE_LOW), torch.full_like(pt, ADAPTIVE_HIGH)
        )
    return (-((1 - pt) ** gamma) * log_pt).mean()
