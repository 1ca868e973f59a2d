"""PG-DRR's predictive from an inducing set: the chains' posteriors given ``w`` and the moment-matched joint.

Prediction conditions on a seeded inducing set of training pairs (``M`` GP inputs with labels) and
the Pólya-Gamma draws ``w`` of ``C`` Gibbs chains (:func:`calibrank.study.model.gp.polya_gamma.gibbs_gp`).
Each chain gives a Gaussian (eq. 14, :class:`calibrank.study.model.gp.polya_gamma.PGPosterior`); the
predictive of a query's candidates is their mixture, moment-matched: the mean over chains, and the
covariance ``K** - k*^T Q k* + Cov_chains(mean)`` with ``Q`` the chains' mean of
``(K + W_c^-1)^-1``. The moment matching departs from the paper, which does not say how chains
are combined: docs/decisions.md, "Pólya-Gamma GP layer".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from calibrank.study.model.gp.polya_gamma import PGPosterior

__all__ = ["InducingPosterior", "inducing_posterior", "predictive_mean", "predictive_moments"]

Kernel = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
PriorMean = Callable[[torch.Tensor], torch.Tensor]


@dataclass
class InducingPosterior:
    """What prediction needs: the inducing pairs (index, features, labels), the chains' ``w`` and derived factors."""

    index: np.ndarray  # [M] indices of the training pairs (query-major order of the training queries)
    features: torch.Tensor  # [M, d] float32 GP input features z of the inducing pairs
    labels: torch.Tensor  # [M] float64 0/1
    w: torch.Tensor  # [C, M] float64 Pólya-Gamma draws of the last Gibbs step
    jitter: float  # diagonal jitter Gibbs added to K
    posterior: PGPosterior
    q_bar: torch.Tensor  # [M, M] mean over chains of (K + W_c^-1)^-1

    def tensors(self) -> dict[str, torch.Tensor]:
        """The stored part (the rest is derived by :func:`inducing_posterior`)."""
        return {
            "index": torch.as_tensor(self.index, dtype=torch.int64),
            "features": self.features.detach().cpu().contiguous(),
            "labels": self.labels.detach().cpu().contiguous(),
            "w": self.w.detach().cpu().contiguous(),
            "jitter": torch.tensor(float(self.jitter), dtype=torch.float64),
        }


def inducing_posterior(
    kernel: Kernel,
    prior_mean: PriorMean,
    index: np.ndarray,
    features: torch.Tensor,
    labels: torch.Tensor,
    w: torch.Tensor,
    jitter: float,
) -> InducingPosterior:
    """The chains' posteriors given ``w`` on the inducing ``features`` and their mean ``Q``."""
    device = features.device
    post = PGPosterior.from_w(
        kernel(features, features), w.to(device), labels.to(device), prior_mean(features).detach(), jitter=jitter
    )
    b_inv = torch.cholesky_inverse(post.chol_b)  # [C, M, M]
    s = post.sqrt_w
    q_bar = (s.unsqueeze(-1) * b_inv * s.unsqueeze(-2)).mean(0)
    return InducingPosterior(
        index=np.asarray(index),
        features=features,
        labels=labels.to(device),
        w=w.to(device),
        jitter=float(jitter),
        posterior=post,
        q_bar=0.5 * (q_bar + q_bar.t()),
    )


def predictive_mean(
    state: InducingPosterior, kernel: Kernel, prior_mean: PriorMean, x: torch.Tensor, chunk: int = 8192
) -> torch.Tensor:
    """The predictive mean ``[N]`` (float64) of GP inputs ``x`` ``[N, d]``: the chains' mean of eq. 14."""
    out = []
    for start in range(0, x.shape[0], chunk):
        part = x[start : start + chunk]
        out.append(prior_mean(part).detach() + (state.posterior.alpha @ kernel(state.features, part)).mean(0))
    return torch.cat(out)


def predictive_moments(
    state: InducingPosterior, kernel: Kernel, prior_mean: PriorMean, x: torch.Tensor, k: int, rows: int = 4096
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(mean [Q, k], cov [Q, k, k])`` (float64): the moment-matched joint predictive of each query's ``k``
    candidates from their GP inputs ``x`` ``[Q*k, d]`` in query order; ``rows`` bounds a chunk's memory."""
    alpha, q_bar = state.posterior.alpha, state.q_bar
    m = state.features.shape[0]
    means, covs = [], []
    per_chunk = max(1, rows // k)
    for start in range(0, x.shape[0] // k, per_chunk):
        part = x[start * k : (start + per_chunk) * k]
        nq = part.shape[0] // k
        kc = kernel(state.features, part)  # [M, nq*k]
        chain_means = prior_mean(part).detach() + alpha @ kc  # [C, nq*k]
        reduction = kc.reshape(m, nq, k).permute(1, 2, 0) @ (q_bar @ kc).reshape(m, nq, k).permute(1, 0, 2)
        k_test = torch.stack([kernel(part[i * k : (i + 1) * k], part[i * k : (i + 1) * k]) for i in range(nq)])
        cm = chain_means.reshape(-1, nq, k)
        centred = cm - cm.mean(0, keepdim=True)
        between = torch.einsum("cqi,cqj->qij", centred, centred) / cm.shape[0]
        cov = k_test - reduction + between
        means.append(cm.mean(0))
        covs.append(0.5 * (cov + cov.transpose(1, 2)))
    return torch.cat(means), torch.cat(covs)
