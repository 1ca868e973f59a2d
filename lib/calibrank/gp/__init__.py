"""Gaussian-process output layers for pointwise cross-encoder rankers.

* :mod:`.spectral`: spectral normalisation with a bound (SNGP; GPF-BERT eq. 1).
* :mod:`.random_features`: random-Fourier-feature GP layer with a Laplace posterior
  (SNGP; GPF-BERT eqs. 2-5, mean-field logits).
* :mod:`.polya_gamma`: Pólya-Gamma augmented GP layer (PG-DRR, eqs. 4-15, Algorithm 1):
  Gibbs sampler, Fisher-identity loss, Gaussian predictive and Gauss-Hermite quadrature.
* :mod:`.gaussian`: what both GP layers need from a Gaussian: Cholesky factors with escalating
  jitter and joint draws (of a query's candidates, for every query).

The layers are standalone; wiring them into rankers and the training loop happens elsewhere.
Their defaults and ranges are those of the rankers' config sections (:mod:`calibrank.config`).
"""

from __future__ import annotations

from .gaussian import KERNEL_JITTERS, SAMPLE_JITTERS, draw_joint, jittered_cholesky
from .polya_gamma import (
    GibbsResult,
    PGPosterior,
    fisher_loss,
    gauss_hermite_sigmoid,
    gibbs_gp,
    gp_predictive,
    gp_predictive_joint,
    linear_kernel,
    log_likelihood_given_w,
    matern_kernel,
    pg_mean,
    rbf_kernel,
    sample_pg,
    select_inducing,
)
from .random_features import RandomFeatureGP
from .spectral import SpectralNormLinear, apply_spectral_norm

__all__ = [
    "SpectralNormLinear",
    "apply_spectral_norm",
    "RandomFeatureGP",
    "KERNEL_JITTERS",
    "SAMPLE_JITTERS",
    "draw_joint",
    "jittered_cholesky",
    "GibbsResult",
    "PGPosterior",
    "fisher_loss",
    "gauss_hermite_sigmoid",
    "gibbs_gp",
    "gp_predictive",
    "gp_predictive_joint",
    "linear_kernel",
    "log_likelihood_given_w",
    "matern_kernel",
    "pg_mean",
    "rbf_kernel",
    "sample_pg",
    "select_inducing",
]
