"""Random-Fourier-feature GP output layer with a Laplace posterior (SNGP; GPF-BERT eqs. 2-5).

For an encoder feature ``h`` and ``L = n_features``:

* random features (eq. 2; Rahimi & Recht 2007): ``Phi(h) = s sqrt(2/L) cos(W h / l + b)``
  with fixed seeded buffers ``W ~ N(0, 1)`` and ``b ~ U(0, 2 pi)``, so ``Phi(x) . Phi(y)``
  approximates the RBF kernel with output scale ``s^2``;
* the GP output layer (eq. 3): logit ``Phi(h)^T beta``, prior ``beta ~ N(0, I)``;
* the Laplace precision of ``beta`` (eq. 4), ``P = ridge I + sum_i p_i (1 - p_i) Phi_i Phi_i^T``,
  summed over an epoch or as the moving average of eq. 5;
* the predictive: mean ``Phi^T beta``, covariance ``Phi P^-1 Phi^T``, the mean-field logit
  ``m / sqrt(1 + lambda var)`` (Lu et al. 2020) and joint samples of a query's candidates.

Only :meth:`RandomFeatureGP.update_precision` writes ``P``, and it raises in eval mode, so
evaluation never changes it. Departures from the paper (the ridge kept outside eq. 5's average,
a length scale, the initial ``beta``, jitter in sampling): docs/decisions.md, "Random-feature GP
layer". Defaults and ranges: :class:`calibrank.study.settings.gp.RandomFeatureSettings`.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from calibrank.study.model.gp.gaussian import draw_joint
from calibrank.study.settings.checks import check_count
from calibrank.study.settings.choices import RFOutputInit
from calibrank.study.settings.gp import RandomFeatureSettings, check_random_features

__all__ = ["RandomFeatureGP"]

_D = RandomFeatureSettings  # the defaults


class RandomFeatureGP(nn.Module):
    """SNGP / GPF-BERT output layer: random Fourier features + linear head + Laplace precision.

    Args:
        in_features: dimension ``d`` of the encoder feature.
        n_features: number of random features ``L``.
        length_scale: RBF length scale ``l``; ``Phi`` uses ``W h / l``.
        feature_scale: multiplier ``s`` of ``Phi``; the prior kernel's output scale is ``s^2``.
        ridge: prior precision of ``beta``; ``P`` starts as ``ridge * I``.
        momentum: ``None`` for the exact sum over an epoch, or ``m`` in (0, 1) for eq. 5.
        mean_field_factor: ``lambda`` of the mean-field logit, pi/8 in the paper.
        seed: seed of the generator that draws ``W``, ``b`` and the initial ``beta``.
        bias: whether the output layer has a (point-estimated) bias.
        linear_mean: a learnable linear prior mean added to the posterior-mean logits.
        output_init: ``"dense"``, ``"prior"`` or ``"zero"`` (:class:`calibrank.study.settings.choices.RFOutputInit`).

    Defaults and ranges, checked here (a ConfigError naming the argument):
    :class:`calibrank.study.settings.gp.RandomFeatureSettings`.
    """

    projection: torch.Tensor
    offset: torch.Tensor
    precision: torch.Tensor
    n_seen: torch.Tensor

    def __init__(
        self,
        in_features: int,
        n_features: int = _D.n_features,
        length_scale: float = _D.length_scale,
        feature_scale: float = _D.feature_scale,
        ridge: float = _D.ridge,
        momentum: float | None = _D.momentum,
        mean_field_factor: float = _D.mean_field_factor,
        seed: int = 0,
        *,
        bias: bool = False,
        output_init: RFOutputInit | str = _D.output_init,
        linear_mean: bool = False,
    ) -> None:
        super().__init__()
        check_count("in_features", in_features)
        output_init = check_random_features(
            n_features=n_features,
            length_scale=length_scale,
            feature_scale=feature_scale,
            ridge=ridge,
            momentum=momentum,
            mean_field_factor=mean_field_factor,
            output_init=output_init,
        ).value
        self.in_features = int(in_features)
        self.n_features = int(n_features)
        self.length_scale = float(length_scale)
        self.feature_scale = float(feature_scale)
        self.ridge = float(ridge)
        self.momentum = None if momentum is None else float(momentum)
        self.mean_field_factor = float(mean_field_factor)
        self.check_finite = True

        gen = torch.Generator(device="cpu").manual_seed(int(seed))
        self.register_buffer("projection", torch.randn(self.n_features, self.in_features, generator=gen))
        self.register_buffer("offset", torch.rand(self.n_features, generator=gen) * (2.0 * math.pi))
        self.output_init = output_init
        self.output = nn.Linear(self.n_features, 1, bias=bias)
        with torch.no_grad():
            if output_init == "prior":
                draw = torch.randn(1, self.n_features, generator=gen) / math.sqrt(self.ridge)
                self.output.weight.copy_(draw)
            elif output_init == "dense":  # nn.Linear's default: U(-1/sqrt(L), 1/sqrt(L)), seeded
                bound = 1.0 / math.sqrt(self.n_features)
                self.output.weight.copy_((2.0 * torch.rand(1, self.n_features, generator=gen) - 1.0) * bound)
            else:
                self.output.weight.zero_()
            if self.output.bias is not None:
                self.output.bias.zero_()
        # Optional linear prior mean m(h) = w^T h + b of the GP (the mean function of PG-DRR's
        # sec. 3.2 in the random-feature GP): the posterior mean becomes m(h) + Phi^T beta and the
        # variance is unchanged. Off by default (SNGP's zero-mean GP).
        self.prior_mean: nn.Linear | None = nn.Linear(self.in_features, 1) if linear_mean else None
        if self.prior_mean is not None:
            with torch.no_grad():
                self.prior_mean.weight.zero_()
                self.prior_mean.bias.zero_()
        self.register_buffer("precision", self.ridge * torch.eye(self.n_features, dtype=torch.float64))
        self.register_buffer("n_seen", torch.zeros((), dtype=torch.float64))
        self._covariance: torch.Tensor | None = None

    # ---------------------------------------------------------------- cache bookkeeping
    def _invalidate(self) -> None:
        self._covariance = None

    def _apply(self, fn, *args, **kwargs):
        self._invalidate()  # device/dtype moves replace the buffers
        return super()._apply(fn, *args, **kwargs)

    def _load_from_state_dict(self, *args, **kwargs):
        self._invalidate()  # a loaded checkpoint brings its own precision matrix
        return super()._load_from_state_dict(*args, **kwargs)

    # ---------------------------------------------------------------- features / mean
    def _check_input(self, h: torch.Tensor) -> None:
        if h.dim() != 2 or h.shape[1] != self.in_features:
            raise ValueError(f"h must have shape [N, {self.in_features}] (in_features), got {tuple(h.shape)}")
        if self.check_finite and not bool(torch.isfinite(h).all()):
            raise ValueError("non-finite features into the GP layer (h contains NaN or inf)")

    def features(self, h: torch.Tensor) -> torch.Tensor:
        """``Phi(h)`` of eq. 2, ``[N, L]``, autocast off (``cos`` of a half-precision projection loses its digits)."""
        self._check_input(h)
        with torch.autocast(device_type=h.device.type, enabled=False):
            proj = (h.to(self.projection.dtype) @ self.projection.t()) / self.length_scale + self.offset
            return torch.cos(proj) * (self.feature_scale * math.sqrt(2.0 / self.n_features))

    def forward(self, h: torch.Tensor, return_features: bool = False):
        """Posterior-mean logits ``Phi(h)^T beta`` (eq. 3), shape ``[N]``; never changes ``P``.

        ``return_features=True`` also returns ``Phi`` for :meth:`update_precision`.
        """
        phi = self.features(h)
        with torch.autocast(device_type=phi.device.type, enabled=False):  # fp32 logits (bf16 would tie them)
            logits = self.output(phi.float()).squeeze(-1)
            if self.prior_mean is not None:
                logits = logits + self.prior_mean(h.float()).squeeze(-1)
        return (logits, phi) if return_features else logits

    # ---------------------------------------------------------------- precision (eqs. 4-5)
    @torch.no_grad()
    def update_precision(self, phi: torch.Tensor, logits: torch.Tensor) -> None:
        """Add one mini-batch's ``sum_i p_i (1 - p_i) Phi_i Phi_i^T`` to ``P`` (eqs. 4-5).

        ``phi`` ``[N, L]`` from :meth:`features` and ``logits`` ``[N]``, both detached. Exact sum when
        ``momentum`` is ``None``, else the moving average with the ridge kept (docs/decisions.md).
        Raises ``RuntimeError`` in eval mode: evaluation never updates the precision.
        """
        if not self.training:
            raise RuntimeError(
                "update_precision called in eval mode: the Laplace precision is updated only "
                "during training (call model.train() first)"
            )
        if phi.dim() != 2 or phi.shape[1] != self.n_features:
            raise ValueError(f"phi must have shape [N, {self.n_features}] (n_features), got {tuple(phi.shape)}")
        logits = logits.reshape(-1)
        if logits.shape[0] != phi.shape[0]:
            raise ValueError(f"logits must have shape [{phi.shape[0]}] to match phi, got {tuple(logits.shape)}")
        phi64 = phi.detach().to(torch.float64)
        p = torch.sigmoid(logits.detach().to(torch.float64))
        if not (bool(torch.isfinite(phi64).all()) and bool(torch.isfinite(p).all())):
            raise ValueError("non-finite features into the GP layer (phi or logits in update_precision)")
        batch = (phi64 * (p * (1.0 - p)).unsqueeze(1)).t() @ phi64
        batch = 0.5 * (batch + batch.t())
        prec = self.precision
        batch = batch.to(device=prec.device, dtype=prec.dtype)
        if self.momentum is None:
            prec.add_(batch)
        else:
            eye = torch.eye(self.n_features, dtype=prec.dtype, device=prec.device)
            ridge_eye = self.ridge * eye
            prec.sub_(ridge_eye).mul_(self.momentum).add_(batch, alpha=1.0 - self.momentum).add_(ridge_eye)
        self.n_seen.add_(phi.shape[0])
        self._invalidate()

    @torch.no_grad()
    def reset_precision(self) -> None:
        """``P <- ridge * I`` (the trainer calls this at the start of each epoch)."""
        self.precision.copy_(
            self.ridge * torch.eye(self.n_features, dtype=self.precision.dtype, device=self.precision.device)
        )
        self.n_seen.zero_()
        self._invalidate()

    @torch.no_grad()
    def covariance(self) -> torch.Tensor:
        """``Sigma = P^{-1}`` (float64, ``[L, L]``) by Cholesky; cached until ``P`` changes."""
        if self._covariance is None:
            prec = self.precision.to(torch.float64)
            chol, info = torch.linalg.cholesky_ex(0.5 * (prec + prec.t()))
            if int(info) != 0:
                raise ValueError(
                    "precision matrix is not positive definite (non-finite updates?); call reset_precision()"
                )
            self._covariance = torch.cholesky_inverse(chol)
        return self._covariance

    # ---------------------------------------------------------------- predictive
    def predictive(self, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(mean [N], var [N])``: ``Phi^T beta`` and ``Phi^T Sigma Phi`` (GPF-BERT sec. 2.1).

        The mean is differentiable (in ``h`` and ``beta``); the variance carries no gradient.
        """
        mean, phi = self.forward(h, return_features=True)
        phi64 = phi.detach().to(torch.float64)
        cov = self.covariance().to(phi64.device)
        var = ((phi64 @ cov) * phi64).sum(-1).clamp_min(0.0)
        return mean, var.to(mean.dtype)

    def predictive_joint(self, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(mean [N], cov [N, N])`` with ``cov = Phi Sigma Phi^T`` (e.g. one query's candidates)."""
        mean, phi = self.forward(h, return_features=True)
        phi64 = phi.detach().to(torch.float64)
        cov = phi64 @ self.covariance().to(phi64.device) @ phi64.t()
        cov = 0.5 * (cov + cov.t())
        return mean, cov.to(mean.dtype)

    @torch.no_grad()
    def query_moments(self, h: torch.Tensor, k: int, *, rows: int = 4096) -> tuple[torch.Tensor, torch.Tensor]:
        """``(mean [Q, k], cov [Q, k, k])`` (float64): the joint posterior of each query's ``k`` candidate
        logits from their features ``h`` ``[Q*k, d]`` in query order; ``rows`` bounds the memory of a chunk."""
        sigma = self.covariance()
        per_chunk = max(1, rows // k)
        means, covs = [], []
        for start in range(0, h.shape[0] // k, per_chunk):
            logits, phi = self.forward(h[start * k : (start + per_chunk) * k], return_features=True)
            phi64 = phi.to(torch.float64).reshape(-1, k, self.n_features)
            cov = phi64 @ sigma.to(phi64.device) @ phi64.transpose(1, 2)
            means.append(logits.to(torch.float64).reshape(-1, k))
            covs.append(0.5 * (cov + cov.transpose(1, 2)))
        return torch.cat(means), torch.cat(covs)

    def mean_field_logits(self, h: torch.Tensor) -> torch.Tensor:
        """Mean-field logits ``m / sqrt(1 + lambda * var)`` (Lu et al. 2020; lambda = pi/8)."""
        mean, var = self.predictive(h)
        return mean / torch.sqrt(1.0 + self.mean_field_factor * var)

    @torch.no_grad()
    def sample_logits(self, h: torch.Tensor, n_samples: int, *, generator: torch.Generator) -> torch.Tensor:
        """Joint draws ``[n_samples, N]`` from ``N(mean, Phi Sigma Phi^T)``
        (:func:`calibrank.study.model.gp.gaussian.draw_joint`).
        """
        mean, cov = self.predictive_joint(h)
        return draw_joint(mean, cov, n_samples, generator)
