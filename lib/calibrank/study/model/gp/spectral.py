"""Spectral normalisation of a linear layer with a bound (SNGP, GPF-BERT eq. 1).

The layer uses ``W_eff = c W / sigma_hat`` when ``sigma_hat > c`` and ``W`` otherwise, where
``sigma_hat = u^T W v`` estimates the largest singular value by power iteration and ``c`` is the
``bound`` (Liu et al. 2020). ``u`` and ``v`` are buffers, updated in training mode and only read
in eval mode; the gradient flows through ``sigma_hat`` with them held fixed (Miyato et al. 2018).
The power-iteration estimate replaces eq. 1's exact norm, and which layers to wrap is the
caller's choice: docs/decisions.md, "Spectral normalisation".
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from calibrank.study.settings.gp import SpectralNormSettings

__all__ = ["SpectralNormLinear"]

_EPS = 1e-12


def _normalize(x: torch.Tensor) -> torch.Tensor:
    return x / x.norm().clamp_min(_EPS)


class SpectralNormLinear(nn.Module):
    """A wrapped :class:`torch.nn.Linear` whose weight is spectrally normalised to ``bound``.

    Args:
        linear: the layer to wrap; its weight stays the trainable parameter, its bias unchanged.
        bound: ``c`` of GPF-BERT eq. 1; the weight is rescaled only above it.
        n_power_iterations: power-iteration steps per training-mode forward pass.
        seed: seed of the ``torch.Generator`` that draws the initial ``u`` and ``v``.
        n_init_iterations: power-iteration steps run once at construction.

    Defaults and checks (a :class:`calibrank.study.settings.checks.ConfigError` naming the argument):
    :class:`calibrank.study.settings.gp.SpectralNormSettings`.
    """

    u: torch.Tensor
    v: torch.Tensor

    #: Its power iteration runs in training mode: MC-dropout sampling keeps it in eval mode.
    updates_in_training = True

    def __init__(
        self,
        linear: nn.Linear,
        bound: float = SpectralNormSettings.bound,
        n_power_iterations: int = SpectralNormSettings.n_power_iterations,
        *,
        seed: int = 0,
        n_init_iterations: int = 15,
    ) -> None:
        super().__init__()
        if not isinstance(linear, nn.Linear):
            raise ValueError(f"linear must be a torch.nn.Linear, got {type(linear).__name__}")
        SpectralNormSettings(bound=bound, n_power_iterations=n_power_iterations)
        if int(n_init_iterations) != n_init_iterations or n_init_iterations < 0:
            raise ValueError(f"n_init_iterations must be an integer >= 0, got {n_init_iterations}")
        self.linear = linear
        self.bound = float(bound)
        self.n_power_iterations = int(n_power_iterations)
        weight = linear.weight
        gen = torch.Generator(device="cpu").manual_seed(int(seed))
        u = torch.randn(weight.shape[0], generator=gen, dtype=torch.float64)
        v = torch.randn(weight.shape[1], generator=gen, dtype=torch.float64)
        self.register_buffer("u", _normalize(u).to(device=weight.device, dtype=weight.dtype))
        self.register_buffer("v", _normalize(v).to(device=weight.device, dtype=weight.dtype))
        self.refresh(int(n_init_iterations))

    # ------------------------------------------------------------------ power iteration
    @torch.no_grad()
    def refresh(self, n_iterations: int = 15) -> None:
        """Run ``n_iterations`` power-iteration steps on the current weight in any mode (after loading weights)."""
        if int(n_iterations) != n_iterations or n_iterations < 0:
            raise ValueError(f"n_iterations must be an integer >= 0, got {n_iterations}")
        self._power_iterate(int(n_iterations))

    @torch.no_grad()
    def _power_iterate(self, n: int) -> None:
        w = self.linear.weight.detach()
        u, v = self.u, self.v
        for _ in range(n):
            v = _normalize(w.t() @ u)
            u = _normalize(w @ v)
        self.u.copy_(u)
        self.v.copy_(v)

    def sigma(self) -> torch.Tensor:
        """The current estimate ``sigma_hat = u^T W v`` (differentiable in ``W``; no update)."""
        # clones: the buffers may be updated in place by a later forward pass before this
        # graph is backpropagated (gradient accumulation, two calls per step).
        # autocast off: under bf16 autocast ``W @ v`` would come out in bf16 while ``u`` stays
        # float32, and ``torch.dot`` refuses mixed dtypes (the layer's own matmul still autocasts).
        w = self.linear.weight
        with torch.autocast(device_type=w.device.type, enabled=False):
            return torch.dot(self.u.clone().to(w.dtype), w @ self.v.clone().to(w.dtype))

    @property
    def weight(self) -> torch.Tensor:
        """The effective weight ``W_eff`` of GPF-BERT eq. 1 (no power-iteration update)."""
        sigma = self.sigma()
        # min(1, c / sigma_hat) without a host sync: exactly 1.0 (and no gradient through
        # sigma_hat) when sigma_hat <= c, so a layer below the bound is left bit-identical.
        scale = self.bound / torch.clamp_min(sigma, self.bound)
        return self.linear.weight * scale

    @property
    def bias(self) -> torch.Tensor | None:
        return self.linear.bias

    @property
    def in_features(self) -> int:
        return self.linear.in_features

    @property
    def out_features(self) -> int:
        return self.linear.out_features

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``x @ W_eff^T + b``; in training mode first advances the power iteration."""
        if self.training:
            self._power_iterate(self.n_power_iterations)
        return F.linear(x, self.weight, self.linear.bias)

    def extra_repr(self) -> str:
        return f"bound={self.bound}, n_power_iterations={self.n_power_iterations}"
