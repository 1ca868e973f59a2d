"""Pointwise losses on relevance logits (one logit per (context, candidate) pair).

- :func:`binary_cross_entropy`: the first paper's loss. The paper's head outputs two logits
  with a softmax; one logit with a sigmoid is the same model (the softmax depends only on the
  difference of the two logits) with one redundant parameter fewer.
- :func:`focal`: focal loss -(1 - p_t)^gamma log p_t (Lin et al. 2017) as used by GPF-BERT,
  with p_t the probability of the true label; gamma = 0 gives the cross-entropy back.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

__all__ = ["binary_cross_entropy", "focal"]


def binary_cross_entropy(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    return F.binary_cross_entropy_with_logits(logits.float(), labels.float())


def focal(logits: torch.Tensor, labels: torch.Tensor, gamma: float = 2.0) -> torch.Tensor:
    if gamma < 0:
        raise ValueError(f"focal loss: gamma must be >= 0, got {gamma}")
    logits, labels = logits.float(), labels.float()
    log_p = F.logsigmoid(logits)
    log_not_p = F.logsigmoid(-logits)
    log_pt = labels * log_p + (1 - labels) * log_not_p
    pt = log_pt.exp()
    return (-((1 - pt) ** gamma) * log_pt).mean()
