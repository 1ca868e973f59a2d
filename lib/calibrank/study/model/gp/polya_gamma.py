"""Pólya-Gamma augmented GP output layer for binary relevance (PG-DRR, AAAI 2023).

The logits of ``n`` pairs are ``g ~ N(mu, K)`` with ``K_ij = k(h_i, h_j)`` on encoder features
(eq. 4) and ``y_i ~ Bernoulli(sigmoid(g_i))`` (eq. 5); Pólya-Gamma variables ``w`` make the
likelihood conjugate (eqs. 2-3, 8).

* :func:`sample_pg`: draws from ``PG(h, c)``.
* :func:`gibbs_gp`: Algorithm 1, lines 4-10 (eqs. 9-11), ``N`` chains at once.
* :func:`log_likelihood_given_w`, :func:`fisher_loss`: the training objective of eqs. 12-13
  (Fisher's identity); gradients flow through ``K`` and ``mu``, never ``w``.
* :class:`PGPosterior`: the predictive of
  eq. 14, moment-matched over chains or per chain.
* :func:`gauss_hermite_sigmoid`: ``E[sigmoid(f)]`` by quadrature (eq. 15).
* Kernels (eq. 4, sec. 5.3 ablation): :func:`rbf_kernel`, :func:`matern_kernel`,
  :func:`linear_kernel`; :func:`select_inducing` picks the set prediction conditions on.

``K^-1`` is never formed: everything goes through ``B = I + W^1/2 K W^1/2`` and its Cholesky
factor, in float64. Departures from the paper (a prior mean in eq. 14, "output scale" read as
``sigma^2``, training on the batch and predicting from an inducing set) and the numerical
form: docs/decisions.md, "Pólya-Gamma GP layer".
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal, TypeAlias

import numpy as np
import torch

from calibrank.study.model.gp.gaussian import jittered_cholesky
from calibrank.study.settings.checks import check_matern_nu
from calibrank.study.settings.gp import PolyaGammaSettings

__all__ = [
    "sample_pg",
    "rbf_kernel",
    "matern_kernel",
    "linear_kernel",
    "GibbsResult",
    "gibbs_gp",
    "log_likelihood_given_w",
    "fisher_loss",
    "PGPosterior",
    "gauss_hermite_sigmoid",
    "select_inducing",
]

Scale: TypeAlias = float | torch.Tensor
#: PG-DRR's settings (sec. 4.4) are the defaults of the functions below.
_PG = PolyaGammaSettings


# ====================================================================== Pólya-Gamma draws
def sample_pg(c: np.ndarray, rng: np.random.Generator, h: float = 1.0) -> np.ndarray:
    """Draws ``w ~ PG(h, c)`` elementwise (eq. 1; the exact samplers of the ``polyagamma`` package).

    ``c`` finite, any shape; ``h > 0`` (1 for the Bernoulli likelihood); float64 of ``c``'s shape.
    """
    from polyagamma import random_polyagamma  # local import: only this function needs it

    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    if not (math.isfinite(h) and h > 0):
        raise ValueError(f"h must be finite and > 0, got {h}")
    c = np.asarray(c, dtype=np.float64)
    if not np.all(np.isfinite(c)):
        raise ValueError("c must be finite (non-finite logits into the Pólya-Gamma sampler)")
    if c.size == 0:
        return np.zeros(c.shape, dtype=np.float64)
    out = random_polyagamma(h, z=c, random_state=rng)
    return np.asarray(out, dtype=np.float64).reshape(c.shape)


# ====================================================================== kernels
def _check_scale(value: Scale, name: str) -> None:
    if isinstance(value, torch.Tensor):
        ok = bool(torch.isfinite(value).all()) and bool((value > 0).all())
    else:
        ok = math.isfinite(value) and value > 0
    if not ok:
        raise ValueError(f"{name} must be finite and > 0, got {value}")


def _check_features(x1: torch.Tensor, x2: torch.Tensor) -> None:
    if x1.dim() != 2 or x2.dim() != 2 or x1.shape[1] != x2.shape[1]:
        raise ValueError(
            f"x1 and x2 must be [n, d] and [m, d] feature matrices, got {tuple(x1.shape)} and {tuple(x2.shape)}"
        )
    if not (bool(torch.isfinite(x1).all()) and bool(torch.isfinite(x2).all())):
        raise ValueError("non-finite features into the GP layer (x1 or x2 contains NaN or inf)")


def _scaled_sqdist(x1: torch.Tensor, x2: torch.Tensor, length_scale: Scale) -> torch.Tensor:
    """``||x1_i - x2_j||^2 / l^2`` by the expansion, centred for accuracy, clamped at 0."""
    same = x1 is x2
    center = x1.detach().mean(0, keepdim=True)
    a = (x1 - center) / length_scale
    b = a if same else (x2 - center) / length_scale
    d2 = (a * a).sum(-1, keepdim=True) + (b * b).sum(-1).unsqueeze(0) - 2.0 * (a @ b.t())
    d2 = d2.clamp_min(0.0)
    if same:  # exact zeros on the diagonal of K(x, x)
        d2 = d2 * (1.0 - torch.eye(d2.shape[0], dtype=d2.dtype, device=d2.device))
    return d2


def rbf_kernel(
    x1: torch.Tensor, x2: torch.Tensor, length_scale: Scale = _PG.length_scale, output_scale: Scale = _PG.output_scale
) -> torch.Tensor:
    """RBF kernel of eq. 4: ``output_scale * exp(-||x1 - x2||^2 / (2 l^2))``, shape ``[n, m]``.

    ``output_scale`` is the prior variance ``sigma^2`` (PG-DRR: 8). ``x2 = x1`` gives an exactly
    symmetric ``K``; scales may be learnable tensors.
    """
    _check_scale(length_scale, "length_scale")
    _check_scale(output_scale, "output_scale")
    _check_features(x1, x2)
    return output_scale * torch.exp(-0.5 * _scaled_sqdist(x1, x2, length_scale))


def matern_kernel(
    x1: torch.Tensor,
    x2: torch.Tensor,
    nu: float = _PG.nu,
    length_scale: Scale = _PG.length_scale,
    output_scale: Scale = _PG.output_scale,
) -> torch.Tensor:
    """Matérn kernel (PG-DRR sec. 5.3 ablation), ``nu`` in :data:`calibrank.study.settings.choices.MATERN_NU`; diagonal ``output_scale``.

    The square root is taken so that the gradient at ``r = 0`` is finite.
    """
    check_matern_nu("nu", nu)
    _check_scale(length_scale, "length_scale")
    _check_scale(output_scale, "output_scale")
    _check_features(x1, x2)
    d2 = _scaled_sqdist(x1, x2, length_scale)
    positive = d2 > 0
    r = torch.where(positive, torch.sqrt(torch.where(positive, d2, torch.ones_like(d2))), torch.zeros_like(d2))
    if nu == 0.5:
        k = torch.exp(-r)
    elif nu == 1.5:
        s = math.sqrt(3.0) * r
        k = (1.0 + s) * torch.exp(-s)
    else:
        s = math.sqrt(5.0) * r
        k = (1.0 + s + s * s / 3.0) * torch.exp(-s)
    return output_scale * k


def linear_kernel(
    x1: torch.Tensor, x2: torch.Tensor, length_scale: Scale = _PG.length_scale, output_scale: Scale = _PG.output_scale
) -> torch.Tensor:
    """Linear kernel (sec. 5.3 ablation): ``output_scale * (x1 / l) (x2 / l)^T``.

    Its diagonal is not constant: choose ``length_scale`` of the order of the feature norm. Rank <= d,
    so ``K`` is singular once n > d (see :func:`calibrank.study.model.gp.gaussian.jittered_cholesky`).
    """
    _check_scale(length_scale, "length_scale")
    _check_scale(output_scale, "output_scale")
    _check_features(x1, x2)
    a = x1 / length_scale
    b = a if x1 is x2 else x2 / length_scale
    return output_scale * (a @ b.t())


# ====================================================================== Gibbs sampling
@dataclass(frozen=True)
class GibbsResult:
    """Final state of the chains (Algorithm 1 after ``T`` steps).

    ``g``, ``w``: ``[chains, n]`` logit and Pólya-Gamma draws (``w`` for :func:`fisher_loss` and
    :class:`PGPosterior`, line 11); ``jitter``: the absolute diagonal jitter added to ``K``.
    """

    g: torch.Tensor
    w: torch.Tensor
    jitter: float


def _as_vector(x: torch.Tensor | float, n: int, name: str, like: torch.Tensor) -> torch.Tensor:
    t = torch.as_tensor(x, dtype=torch.float64, device=like.device)
    if t.dim() == 0:
        t = t.expand(n)
    if t.shape != (n,):
        raise ValueError(f"{name} must have shape [{n}] (one value per point), got {tuple(t.shape)}")
    if not bool(torch.isfinite(t).all()):
        raise ValueError(f"{name} contains NaN or inf")
    return t


def _check_batch(K: torch.Tensor, name: str = "K") -> int:
    if K.dim() != 2 or K.shape[0] != K.shape[1]:
        raise ValueError(f"{name} must be a square [n, n] kernel matrix, got shape {tuple(K.shape)}")
    n = K.shape[0]
    if n < 2:
        raise ValueError(f"a batch too small for the GP: {name} is {n} x {n}, need n >= 2 points")
    return n


def _labels(y: torch.Tensor | np.ndarray, n: int, like: torch.Tensor) -> torch.Tensor:
    t = torch.as_tensor(np.asarray(y) if not isinstance(y, torch.Tensor) else y)
    t = t.to(device=like.device, dtype=torch.float64).reshape(-1)
    if t.shape != (n,):
        raise ValueError(f"y must have shape [{n}], got {tuple(t.shape)}")
    if not bool(((t == 0) | (t == 1)).all()):
        raise ValueError("y must contain only 0 and 1 (binary relevance labels)")
    return t


def _chol_b(K64: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
    """Batched lower Cholesky factor of ``B = I + S K S``, ``s = sqrt(w)`` of shape ``[C, n]``."""
    n = K64.shape[0]
    b = s.unsqueeze(-1) * K64 * s.unsqueeze(-2) + torch.eye(n, dtype=K64.dtype, device=K64.device)
    chol, info = torch.linalg.cholesky_ex(b)
    if bool((info != 0).any()):
        raise ValueError("kernel matrix K is not positive semi-definite: I + W^1/2 K W^1/2 has no Cholesky factor")
    return chol


def gibbs_gp(
    K: torch.Tensor,
    y: torch.Tensor | np.ndarray,
    mu: torch.Tensor | float,
    n_steps: int = _PG.gibbs_steps,
    n_chains: int = _PG.gibbs_chains,
    *,
    rng: np.random.Generator,
    init: torch.Tensor | None = None,
) -> GibbsResult:
    """Gibbs sampler of Algorithm 1 (lines 4-10; eqs. 9-11), chains vectorised.

    Args:
        K: ``[n, n]`` prior covariance of the logits (n >= 2), e.g. :func:`rbf_kernel` of the
            batch features; used without gradient.
        y: ``[n]`` labels in {0, 1}.
        mu: ``[n]`` prior mean (or a scalar); used without gradient.
        n_steps: ``T`` >= 1 (paper: 10).
        n_chains: ``N`` >= 1 parallel chains (paper: 30).
        rng: ``numpy.random.Generator`` for all draws (PG and Gaussian).
        init: optional ``[n_chains, n]`` or ``[n]`` starting logits; default ``g^0 ~ N(mu, K)``.

    Returns:
        :class:`GibbsResult` with ``g`` and ``w`` of shape ``[n_chains, n]``.
    """
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    if int(n_steps) != n_steps or n_steps < 1:
        raise ValueError(f"n_steps must be an integer >= 1, got {n_steps}")
    if int(n_chains) != n_chains or n_chains < 1:
        raise ValueError(f"n_chains must be an integer >= 1, got {n_chains}")
    n = _check_batch(K)
    out_dtype, device = K.dtype, K.device
    with torch.no_grad():
        chol_k, jitter = jittered_cholesky(K.detach())
        K64 = K.detach().to(torch.float64)
        K64 = 0.5 * (K64 + K64.t())
        if jitter:
            K64 = K64 + jitter * torch.eye(n, dtype=K64.dtype, device=device)
        mu64 = _as_vector(mu.detach() if isinstance(mu, torch.Tensor) else mu, n, "mu", K64)
        kappa = _labels(y, n, K64) - 0.5
        a = mu64 + K64 @ kappa  # prior mean shifted by K kappa

        def normal(shape: tuple[int, ...]) -> torch.Tensor:
            return torch.from_numpy(rng.standard_normal(shape)).to(device)

        C = int(n_chains)
        if init is None:
            g = mu64 + normal((C, n)) @ chol_k.t()
        else:
            g = init.detach().to(device=device, dtype=torch.float64)
            if g.dim() == 1:
                g = g.expand(C, n)
            if g.shape != (C, n):
                raise ValueError(f"init must have shape [{C}, {n}] or [{n}], got {tuple(init.shape)}")
            if not bool(torch.isfinite(g).all()):
                raise ValueError("init contains NaN or inf")
            g = g.clone()
        w = g
        for _ in range(int(n_steps)):
            w = torch.from_numpy(sample_pg(g.cpu().numpy(), rng)).to(device)
            s = torch.sqrt(w)
            chol_b = _chol_b(K64, s)
            f = a + normal((C, n)) @ chol_k.t()  # f ~ N(mu + K kappa, K)
            rhs = (s * f + normal((C, n))).unsqueeze(-1)
            sol = torch.cholesky_solve(rhs, chol_b).squeeze(-1)
            g = f - (s * sol) @ K64  # K symmetric: (K (s*sol)^T)^T
        return GibbsResult(g=g.to(out_dtype), w=w.to(out_dtype), jitter=float(jitter))


# ====================================================================== training objective
def log_likelihood_given_w(
    K: torch.Tensor,
    mu: torch.Tensor | float,
    y: torch.Tensor | np.ndarray,
    w: torch.Tensor,
    *,
    jitter: float = 0.0,
) -> torch.Tensor:
    """``log p(y | x, w)`` for each chain's ``w`` (eqs. 8, 12, 13), shape ``[chains]``.

    Exact value of ``log ∫ prod_i 1/2 exp(kappa_i g_i - w_i g_i^2/2) N(g; mu, K) dg`` (derived in
    docs/decisions.md); differentiable in ``K`` and ``mu``; ``w`` is detached. ``jitter`` (e.g.
    ``GibbsResult.jitter``) is added to the diagonal of ``K``.
    """
    n = _check_batch(K)
    if w.dim() == 1:
        w = w.unsqueeze(0)
    if w.dim() != 2 or w.shape[1] != n:
        raise ValueError(f"w must have shape [chains, {n}], got {tuple(w.shape)}")
    w64 = w.detach().to(device=K.device, dtype=torch.float64)
    if not (bool(torch.isfinite(w64).all()) and bool((w64 > 0).all())):
        raise ValueError("w must be finite and > 0 (Pólya-Gamma draws)")
    K64 = K.to(torch.float64)
    if not bool(torch.isfinite(K64.detach()).all()):
        raise ValueError("kernel matrix K contains NaN or inf (non-finite features into the GP layer?)")
    K64 = 0.5 * (K64 + K64.transpose(0, 1))
    if jitter:
        K64 = K64 + jitter * torch.eye(n, dtype=K64.dtype, device=K64.device)
    if isinstance(mu, torch.Tensor):
        mu64 = mu.to(device=K.device, dtype=torch.float64)
        if mu64.dim() == 0:
            mu64 = mu64.expand(n)
        if mu64.shape != (n,):
            raise ValueError(f"mu must have shape [{n}], got {tuple(mu.shape)}")
        if not bool(torch.isfinite(mu64.detach()).all()):
            raise ValueError("mu contains NaN or inf")
    else:
        mu64 = _as_vector(mu, n, "mu", K64)
    kappa = _labels(y, n, K64) - 0.5
    s = torch.sqrt(w64)
    chol_b = _chol_b(K64, s)  # [C, n, n]
    v = kappa - w64 * mu64  # [C, n]
    kv = v @ K64  # [C, n] = (K v)^T
    t = torch.linalg.solve_triangular(chol_b, (s * kv).unsqueeze(-1), upper=False).squeeze(-1)
    quad = (v * kv).sum(-1) - (t * t).sum(-1)  # v^T Sigma v
    logdet_b = 2.0 * torch.log(torch.diagonal(chol_b, dim1=-2, dim2=-1)).sum(-1)
    value = (
        -n * math.log(2.0) + (kappa * mu64).sum(-1) - 0.5 * (w64 * mu64 * mu64).sum(-1) + 0.5 * quad - 0.5 * logdet_b
    )
    return value.to(K.dtype)


def fisher_loss(
    K: torch.Tensor,
    mu: torch.Tensor | float,
    y: torch.Tensor | np.ndarray,
    w: torch.Tensor,
    *,
    reduction: Literal["mean", "sum", "none"] = "mean",
    jitter: float = 0.0,
) -> torch.Tensor:
    """Negative Fisher-identity objective of eq. 13 / Algorithm 1, line 11.

    ``-(1/N) sum_n log p(y | x, w_n)`` over the chains, per point for ``reduction="mean"`` (a scale
    that does not depend on the batch size), summed for ``"sum"``, per chain for ``"none"``.
    Gradients reach ``K`` and ``mu``, not ``w``.
    """
    ll = log_likelihood_given_w(K, mu, y, w, jitter=jitter)
    if reduction == "none":
        return -ll
    if reduction == "sum":
        return -ll.mean()
    if reduction == "mean":
        return -ll.mean() / K.shape[0]
    raise ValueError(f"reduction must be 'mean', 'sum' or 'none', got {reduction!r}")


# ====================================================================== prediction (eq. 14)
@dataclass(frozen=True)
class PGPosterior:
    """Per-chain Gaussian posteriors given ``w`` on a conditioning set (the inducing set), eq. 14.

    Build with :meth:`from_w`; then :meth:`predictive` / :meth:`predictive_joint` for any test
    points. Tensors are float64; ``out_dtype`` is the dtype returned.
    """

    kappa: torch.Tensor  # [M]
    sqrt_w: torch.Tensor  # [C, M]
    chol_b: torch.Tensor  # [C, M, M]
    alpha: torch.Tensor  # [C, M] = (K + W^-1)^-1 (W^-1 kappa - mu)
    out_dtype: torch.dtype

    @classmethod
    def from_w(
        cls,
        K_train: torch.Tensor,
        w: torch.Tensor,
        y: torch.Tensor | np.ndarray,
        mu_train: torch.Tensor | float = 0.0,
        *,
        jitter: float = 0.0,
    ) -> PGPosterior:
        """Factorise ``B_c = I + W_c^1/2 K W_c^1/2`` for each chain ``c`` (no gradient)."""
        with torch.no_grad():
            m = _check_batch(K_train, "K_train")
            if w.dim() == 1:
                w = w.unsqueeze(0)
            if w.dim() != 2 or w.shape[1] != m:
                raise ValueError(f"w must have shape [chains, {m}], got {tuple(w.shape)}")
            K64 = K_train.detach().to(torch.float64)
            if not bool(torch.isfinite(K64).all()):
                raise ValueError("K_train contains NaN or inf (non-finite features into the GP layer?)")
            K64 = 0.5 * (K64 + K64.t())
            if jitter:
                K64 = K64 + jitter * torch.eye(m, dtype=K64.dtype, device=K64.device)
            w64 = w.detach().to(device=K64.device, dtype=torch.float64)
            if not (bool(torch.isfinite(w64).all()) and bool((w64 > 0).all())):
                raise ValueError("w must be finite and > 0 (Pólya-Gamma draws)")
            mu64 = _as_vector(mu_train.detach() if isinstance(mu_train, torch.Tensor) else mu_train, m, "mu_train", K64)
            kappa = _labels(y, m, K64) - 0.5
            s = torch.sqrt(w64)
            chol_b = _chol_b(K64, s)
            a = mu64 + K64 @ kappa
            sol = torch.cholesky_solve((s * a).unsqueeze(-1), chol_b).squeeze(-1)
            alpha = kappa - s * sol
            return cls(kappa=kappa, sqrt_w=s, chol_b=chol_b, alpha=alpha, out_dtype=K_train.dtype)

    @property
    def n_chains(self) -> int:
        return int(self.sqrt_w.shape[0])

    def _cross(self, K_cross: torch.Tensor) -> torch.Tensor:
        m = self.sqrt_w.shape[1]
        if K_cross.dim() != 2 or K_cross.shape[0] != m:
            raise ValueError(f"K_cross must have shape [{m}, N] (conditioning set x test), got {tuple(K_cross.shape)}")
        kc = K_cross.detach().to(device=self.alpha.device, dtype=torch.float64)
        if not bool(torch.isfinite(kc).all()):
            raise ValueError("K_cross contains NaN or inf (non-finite features into the GP layer?)")
        return kc

    def _per_chain(self, kc: torch.Tensor, mu_test: torch.Tensor | float) -> tuple[torch.Tensor, torch.Tensor]:
        n_test = kc.shape[1]
        mu_t = _as_vector(mu_test.detach() if isinstance(mu_test, torch.Tensor) else mu_test, n_test, "mu_test", kc)
        means = mu_t + self.alpha @ kc  # [C, N]
        v = torch.linalg.solve_triangular(self.chol_b, self.sqrt_w.unsqueeze(-1) * kc, upper=False)
        return means, v  # v: [C, M, N]

    @torch.no_grad()
    def predictive(
        self,
        K_cross: torch.Tensor,
        k_test_diag: torch.Tensor,
        mu_test: torch.Tensor | float = 0.0,
        *,
        per_chain: bool = False,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Marginal predictive of eq. 14 at ``N`` test points.

        Args:
            K_cross: ``[M, N]`` = ``k(Z, X*)`` (``K*``).
            k_test_diag: ``[N]`` = ``k(x*, x*)`` (diagonal of ``K**``).
            mu_test: prior mean at the test points (``[N]`` or scalar).
            per_chain: return ``[C, N]`` means and variances instead of the moment-matched
                ``[N]`` mixture mean and variance.
        """
        kc = self._cross(K_cross)
        kdiag = _as_vector(
            k_test_diag.detach() if isinstance(k_test_diag, torch.Tensor) else k_test_diag,
            kc.shape[1],
            "k_test_diag",
            kc,
        )
        means, v = self._per_chain(kc, mu_test)
        variances = (kdiag - (v * v).sum(-2)).clamp_min(0.0)
        if per_chain:
            return means.to(self.out_dtype), variances.to(self.out_dtype)
        mean = means.mean(0)
        var = variances.mean(0) + means.var(0, unbiased=False)
        return mean.to(self.out_dtype), var.to(self.out_dtype)

    @torch.no_grad()
    def predictive_joint(
        self, K_cross: torch.Tensor, K_test: torch.Tensor, mu_test: torch.Tensor | float = 0.0
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Moment-matched joint predictive ``(mean [N], cov [N, N])`` of eq. 14, for joint samples of a query."""
        kc = self._cross(K_cross)
        n_test = kc.shape[1]
        if K_test.shape != (n_test, n_test):
            raise ValueError(f"K_test must have shape [{n_test}, {n_test}], got {tuple(K_test.shape)}")
        kt = K_test.detach().to(device=kc.device, dtype=torch.float64)
        means, v = self._per_chain(kc, mu_test)
        cov_c = kt.unsqueeze(0) - v.transpose(-2, -1) @ v
        mean = means.mean(0)
        centred = means - mean
        cov = cov_c.mean(0) + centred.t() @ centred / means.shape[0]
        cov = 0.5 * (cov + cov.t())
        return mean.to(self.out_dtype), cov.to(self.out_dtype)


# ====================================================================== quadrature, inducing set
@lru_cache(maxsize=16)
def _hermgauss(n_points: int) -> tuple[np.ndarray, np.ndarray]:
    return np.polynomial.hermite.hermgauss(n_points)


def gauss_hermite_sigmoid(mean, var, n_points: int = _PG.quadrature_points):
    """``E[sigmoid(f)]``, ``f ~ N(mean, var)``, by ``n_points``-node Gauss-Hermite quadrature (eq. 15).

    ``mean`` and ``var`` broadcast; torch in, torch out, numpy in, numpy out (float64 inside);
    rounding errors of ``var`` down to -1e-10 are clamped.
    """
    if int(n_points) != n_points or n_points < 1:
        raise ValueError(f"n_points must be an integer >= 1, got {n_points}")
    as_numpy = not isinstance(mean, torch.Tensor) and not isinstance(var, torch.Tensor)
    ref = mean if isinstance(mean, torch.Tensor) else var if isinstance(var, torch.Tensor) else None
    device = ref.device if ref is not None else None
    m = torch.as_tensor(np.asarray(mean) if as_numpy else mean, dtype=torch.float64, device=device)
    v = torch.as_tensor(np.asarray(var) if as_numpy else var, dtype=torch.float64, device=device)
    if not (bool(torch.isfinite(m).all()) and bool(torch.isfinite(v).all())):
        raise ValueError("mean and var must be finite")
    if bool((v < -1e-10).any()):
        raise ValueError(f"var must be >= 0, got minimum {float(v.min()):.3g}")
    nodes, weights = _hermgauss(int(n_points))
    x = torch.as_tensor(nodes, dtype=torch.float64, device=m.device)
    wq = torch.as_tensor(weights, dtype=torch.float64, device=m.device)
    f = m.unsqueeze(-1) + torch.sqrt(2.0 * v.clamp_min(0.0)).unsqueeze(-1) * x
    p = (torch.sigmoid(f) * wq).sum(-1) / math.sqrt(math.pi)
    if as_numpy:
        return p.numpy()
    return p.to(ref.dtype if ref is not None and ref.is_floating_point() else torch.float64)


def select_inducing(labels: np.ndarray, size: int, rng: np.random.Generator, *, stratified: bool = True) -> np.ndarray:
    """Seeded sorted indices of an inducing set of ``size`` training pairs for prediction.

    ``stratified=True`` keeps each label's share (a 1:9 training set gives a 1:9 inducing set).
    """
    labels = np.asarray(labels).reshape(-1)
    n = labels.shape[0]
    if int(size) != size or not (2 <= size <= n):
        raise ValueError(f"size must be an integer in [2, {n}] (number of training pairs), got {size}")
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    if not stratified:
        return np.sort(rng.choice(n, size=int(size), replace=False))
    classes, counts = np.unique(labels, return_counts=True)
    quota = np.maximum(1, np.round(counts / n * size).astype(int))
    quota = np.minimum(quota, counts)
    while quota.sum() > size:  # rounding overshoot: trim the largest class
        quota[np.argmax(quota)] -= 1
    while quota.sum() < size:  # rounding undershoot: grow a class that has room
        room = counts - quota
        quota[np.argmax(room)] += 1
    picks = [rng.choice(np.flatnonzero(labels == c), size=q, replace=False) for c, q in zip(classes, quota)]
    return np.sort(np.concatenate(picks))
