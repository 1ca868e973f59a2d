"""What a profile's ``training.precision`` means on this machine.

Torch is imported by the function that asks the hardware, so the data layer (the embedding sampler
asks too) stays importable without it.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from .settings.choices import Precision

if TYPE_CHECKING:
    import torch

__all__ = ["use_bf16"]

log = logging.getLogger(__name__)


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
