"""Gaussian-process output layers for pointwise cross-encoder rankers.

* :mod:`.spectral`: spectral normalisation with a bound (SNGP; GPF-BERT eq. 1).
* :mod:`.random_features`: random-Fourier-feature GP layer with a Laplace posterior
  (SNGP; GPF-BERT eqs. 2-5, mean-field logits).
* :mod:`.polya_gamma`: Pólya-Gamma augmented GP layer (PG-DRR, eqs. 4-15, Algorithm 1):
  Gibbs sampler, Fisher-identity loss, Gaussian predictive and Gauss-Hermite quadrature.

The layers are standalone; wiring them into rankers and the training loop happens elsewhere.
"""

from __future__ import annotations

from .polya_gamma import (
    GibbsResult,
    PGPosterior,
    fisher_loss,
    gauss_hermite_sigmoid,
    gibbs_gp,
    gp_predictive,
    gp_predictive_joint,
    jittered_cholesky,
    linear_kernel,
    log_likelihood_given_w,
    matern_kernel,
    pg_mean,
    rbf_kernel,
    sample_joint,
    sample_pg,
    select_inducing,
)
from .random_features import RandomFeatureGP
from .spectral import SpectralNormLinear, apply_spectral_norm

__all__ = [
    "SpectralNormLinear",
    "apply_spectral_norm",
    "RandomFeatureGP",
    "GibbsResult",
    "PGPosterior",
    "fisher_loss",
    "gauss_hermite_sigmoid",
    "gibbs_gp",
    "gp_predictive",
    "gp_predictive_joint",
    "jittered_cholesky",
    "linear_kernel",
    "log_likelihood_given_w",
    "matern_kernel",
    "pg_mean",
    "rbf_kernel",
    "sample_joint",
    "sample_pg",
    "select_inducing",
]
