"""What a profile's ``training.precision`` and ``training.eval_batch_size`` mean on this machine.

Torch is imported by the function that asks the hardware, so the data layer (the embedding sampler
asks too) stays importable without it.
"""

from __future__ import annotations

import enum
import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

__all__ = ["SCORING_BATCH", "Precision", "precision_name", "scoring_batch_size", "use_bf16"]

log = logging.getLogger(__name__)


class Precision(str, enum.Enum):
    """Arithmetic of forward passes: ``auto`` is bf16 autocast where the CPU or GPU supports it, else fp32."""

    auto = "auto"
    bf16 = "bf16"
    fp32 = "fp32"


def use_bf16(precision: Precision | str, device: torch.device) -> bool:
    """Whether ``precision`` (fp32 / bf16 / auto) runs bf16 autocast on ``device``: ``auto`` where the
    hardware supports it (AVX512-BF16 on a CPU), ``bf16`` with a warning where it does not."""
    import torch

    precision = Precision(precision)
    if precision is Precision.fp32:
        return False
    if device.type == "cuda":
        supported = torch.cuda.is_bf16_supported()
    else:
        probe = getattr(torch.cpu, "_is_avx512_bf16_supported", None)
        supported = bool(probe()) if probe is not None else False
    if precision is Precision.bf16 and not supported:
        log.warning("bf16 asked for but not supported on %s: using fp32", device)
    return supported


#: Sequences per scoring batch when ``training.eval_batch_size`` is null, by device type: a CPU gains
#: nothing from larger batches (and pads more); a GPU needs large ones to fill it (1024 pairs of
#: MiniLM reach 1.3-1.5 M tokens/s in bf16 on an H200, docs/decisions.md).
SCORING_BATCH = {"cpu": 64, "cuda": 1024}


def scoring_batch_size(eval_batch_size: int | None, device: torch.device) -> int:
    """The scoring batch on ``device``: ``eval_batch_size`` when set, else :data:`SCORING_BATCH` of its type."""
    if eval_batch_size is not None:
        return int(eval_batch_size)
    return SCORING_BATCH.get(device.type, SCORING_BATCH["cpu"])


def precision_name(precision: Precision | str, device: torch.device) -> str:
    """``"bf16"`` (autocast) or ``"fp32"``: what ``precision`` runs as on ``device`` (:func:`use_bf16`)."""
    return "bf16" if use_bf16(precision, device) else "fp32"
