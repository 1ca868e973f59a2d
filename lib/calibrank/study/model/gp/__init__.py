"""Gaussian-process output layers for pointwise cross-encoder rankers.

* :mod:`.spectral`: spectral normalisation with a bound (SNGP; GPF-BERT eq. 1).
* :mod:`.random_features`: random-Fourier-feature GP layer with a Laplace posterior
  (SNGP; GPF-BERT eqs. 2-5, mean-field logits).
* :mod:`.polya_gamma`: Pólya-Gamma augmented GP layer (PG-DRR, eqs. 4-15, Algorithm 1):
  Gibbs sampler, Fisher-identity loss, Gaussian predictive and Gauss-Hermite quadrature.
* :mod:`.inducing`: PG-DRR's predictive from an inducing set, its chains moment-matched into one
  joint Gaussian of a query's candidates.
* :mod:`.gaussian`: what both GP layers need from a Gaussian: Cholesky factors with escalating
  jitter and joint draws (of a query's candidates, for every query).

The layers are standalone; wiring them into rankers and the training loop happens elsewhere.
The package itself imports nothing: import a
layer from its module (``from calibrank.study.model.gp.random_features import RandomFeatureGP``).
"""
