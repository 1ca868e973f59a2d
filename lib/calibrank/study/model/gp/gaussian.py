"""Cholesky factors with escalating jitter, and joint draws from Gaussians.

* :func:`jittered_cholesky`: the Cholesky factor of ``A + j mean(diag A) I`` for the first
  jitter ``j`` of a ladder that works (0 first): kernel matrices of near-duplicate points or of
  low rank are numerically singular, and the smallest jitter is the least change to ``A``.
* :func:`draw_joint`: joint draws ``mean + L z`` from a batch of Gaussians (one per query).

:data:`KERNEL_JITTERS` (1e-6 ... 1e-2) serve a GP's prior kernel, where the jitter is kept and
recorded (:func:`calibrank.study.model.gp.polya_gamma.gibbs_gp`); :data:`SAMPLE_JITTERS` (1e-9 ... 1e-3)
start lower because they only perturb draws. Everything runs in float64.
"""

from __future__ import annotations

import numpy as np
import torch

__all__ = ["KERNEL_JITTERS", "SAMPLE_JITTERS", "jittered_cholesky", "draw_joint"]

#: Relative jitters tried in turn for a GP's prior kernel matrix (times its mean diagonal).
KERNEL_JITTERS = (0.0, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2)
#: Relative jitters tried in turn for a covariance factorised to draw from it (times its mean diagonal).
SAMPLE_JITTERS = (0.0, 1e-9, 1e-7, 1e-5, 1e-3)


def _escalate(
    a: torch.Tensor, scale: torch.Tensor, jitters: tuple[float, ...]
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Cholesky factors of a batch ``a`` ``[B, n, n]`` (float64, symmetric), each with its own first working jitter.

    ``scale`` ``[B]``: the jitters' unit per matrix. Returns ``(L [B, n, n], absolute jitter [B], ok [B])``;
    ``L`` is zero where no jitter of the ladder worked (``ok`` false).
    """
    b, n = a.shape[0], a.shape[-1]
    chol = torch.zeros_like(a).mT.contiguous().mT  # column-major factors, the layout LAPACK returns them in
    used = torch.zeros(b, dtype=a.dtype, device=a.device)
    todo = torch.ones(b, dtype=torch.bool, device=a.device)
    eye = torch.eye(n, dtype=a.dtype, device=a.device)
    for jitter in jitters:
        idx = todo.nonzero().squeeze(-1)
        if idx.numel() == 0:
            break
        absolute = jitter * scale[idx]
        factor, info = torch.linalg.cholesky_ex(a[idx] + absolute[:, None, None] * eye if jitter else a[idx])
        ok = info == 0
        chol[idx[ok]] = factor[ok]
        used[idx[ok]] = absolute[ok]
        todo[idx[ok]] = False
    return chol, used, ~todo


def jittered_cholesky(
    a: torch.Tensor, *, name: str = "kernel matrix K", jitters: tuple[float, ...] = KERNEL_JITTERS
) -> tuple[torch.Tensor, float]:
    """Lower Cholesky factor of ``a + j * mean(diag a) * I`` for the first ``j`` in ``jitters`` that works.

    Returns ``(L, absolute_jitter)``. ``ValueError`` naming ``name`` for a matrix that is not square,
    symmetric and finite, or not positive definite even with the largest jitter (with its smallest
    eigenvalue).
    """
    if a.dim() != 2 or a.shape[0] != a.shape[1]:
        raise ValueError(f"{name} must be a square matrix, got shape {tuple(a.shape)}")
    # rounding in a lower-precision matmul leaves A slightly asymmetric: tolerate that
    rel_tol = 1e-10 if a.dtype == torch.float64 else 1e3 * torch.finfo(a.dtype).eps
    a = a.to(torch.float64)
    if not bool(torch.isfinite(a).all()):
        raise ValueError(f"{name} contains NaN or inf (non-finite features into the GP layer?)")
    scale = float(a.diagonal().mean())
    asym = float((a - a.t()).abs().max()) if a.numel() else 0.0
    if asym > rel_tol * float(a.abs().max()):
        raise ValueError(f"{name} is not symmetric (max |A - A^T| = {asym:.3g})")
    if not scale > 0:
        raise ValueError(f"{name} is not positive definite: mean diagonal {scale:.3g} <= 0")
    a = 0.5 * (a + a.t())
    chol, used, ok = _escalate(a.unsqueeze(0), torch.tensor([scale], dtype=a.dtype, device=a.device), jitters)
    if bool(ok[0]):
        return chol[0], float(used[0])
    lam = float(torch.linalg.eigvalsh(a)[0])
    raise ValueError(
        f"{name} is not positive semi-definite: smallest eigenvalue {lam:.4g} "
        f"({lam / scale:.3g} of the mean diagonal); Cholesky failed even with jitter "
        f"{max(jitters):g} x mean diagonal"
    )


def draw_joint(
    mean: torch.Tensor, cov: torch.Tensor, n_samples: int, rng: np.random.Generator | torch.Generator
) -> torch.Tensor:
    """``n_samples`` joint draws ``[S, ..., K]`` from ``N(mean, cov)`` of each Gaussian of a batch.

    ``mean`` ``[..., K]``, ``cov`` ``[..., K, K]`` (one Gaussian per query over its candidates);
    returned in ``mean``'s dtype. Each covariance is factorised with the :data:`SAMPLE_JITTERS`
    ladder times its mean variance. ``rng``: a numpy ``Generator`` (normals drawn on the CPU) or a
    ``torch.Generator`` (on its device). ``ValueError`` for bad shapes or sizes, a non-finite
    covariance, or one not positive semi-definite even with jitter.
    """
    if int(n_samples) != n_samples or n_samples < 1:
        raise ValueError(f"n_samples must be an integer >= 1, got {n_samples}")
    if not isinstance(rng, (np.random.Generator, torch.Generator)):
        raise ValueError(f"rng must be a numpy.random.Generator or a torch.Generator, got {type(rng).__name__}")
    if mean.dim() < 1:
        raise ValueError(f"mean must have a last dimension (the K points of a Gaussian), got shape {list(mean.shape)}")
    batch, k = tuple(mean.shape[:-1]), mean.shape[-1]
    if tuple(cov.shape) != (*batch, k, k):
        raise ValueError(
            f"cov must have shape {[*batch, k, k]} for mean of shape {list(mean.shape)}, got {list(cov.shape)}"
        )
    mean64 = mean.detach().to(torch.float64).reshape(-1, k)
    cov64 = cov.detach().to(torch.float64).reshape(-1, k, k)
    if not bool(torch.isfinite(cov64).all()):
        raise ValueError("predictive covariance contains NaN or inf")
    cov64 = 0.5 * (cov64 + cov64.transpose(-1, -2))
    if k == 1:
        chol = cov64.clamp_min(0.0).sqrt()
    else:
        scale = cov64.diagonal(dim1=-2, dim2=-1).mean(-1).clamp_min(1e-30)
        chol, _, ok = _escalate(cov64, scale, SAMPLE_JITTERS)
        if not bool(ok.all()):
            raise ValueError(
                f"predictive covariance of {int((~ok).sum())} of {ok.numel()} Gaussians is not "
                f"positive semi-definite even with jitter {max(SAMPLE_JITTERS):g} x mean variance"
            )
    shape = (int(n_samples), *batch, k)
    if isinstance(rng, np.random.Generator):
        z = torch.from_numpy(rng.standard_normal(shape)).to(cov64.device)
    else:
        z = torch.randn(shape, generator=rng, dtype=torch.float64, device=rng.device).to(cov64.device)
    # The factors' memory layout decides how the product rounds. It is fixed per case, so that seeded
    # draws reproduce bit for bit: row-major for a batch, LAPACK's column-major for one Gaussian.
    factors = chol.contiguous() if batch else chol
    draws = mean64.unsqueeze(0) + torch.einsum("qij,sqj->sqi", factors, z.reshape(int(n_samples), -1, k))
    out_dtype = mean.dtype if mean.is_floating_point() else torch.float64
    return draws.reshape(shape).to(out_dtype)
