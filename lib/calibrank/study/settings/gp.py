"""The GP output layers' settings: their defaults and ranges, written once and without torch.

The layers take these defaults in their signatures and check their arguments with these
dataclasses; the profile's ranker sections (:mod:`calibrank.study.settings.config`) read the same defaults and
rules, which is why this module imports no torch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from calibrank.study.settings.checks import (
    check_choice,
    check_count,
    check_matern_nu,
    check_momentum,
    check_non_negative,
    check_positive,
)
from calibrank.study.settings.choices import RFOutputInit

__all__ = [
    "MAX_FEATURES",
    "PolyaGammaSettings",
    "RandomFeatureSettings",
    "SpectralNormSettings",
    "check_random_features",
]

#: Random features or inducing pairs of a GP layer: it holds a square matrix of this side (1 GiB in fp32).
MAX_FEATURES = 16384


@dataclass(frozen=True)
class SpectralNormSettings:
    """Spectral normalisation (GPF-BERT eq. 1): the bound ``c`` on the weight's spectral norm and the
    power-iteration steps per training-mode forward pass."""

    bound: float = 0.95
    n_power_iterations: int = 1

    def __post_init__(self) -> None:
        check_positive("bound", self.bound)
        check_count("n_power_iterations", self.n_power_iterations)


def check_random_features(
    *,
    n_features: Any,
    length_scale: Any,
    feature_scale: Any,
    ridge: Any,
    momentum: Any,
    mean_field_factor: Any,
    output_init: Any,
) -> RFOutputInit:
    """The ranges of the random-feature GP layer (GPF-BERT eqs. 2-5); returns ``output_init`` as its
    :class:`RFOutputInit` member."""
    check_count("n_features", n_features, maximum=MAX_FEATURES)
    check_positive("length_scale", length_scale)
    check_positive("feature_scale", feature_scale)
    check_positive("ridge", ridge)
    check_momentum("momentum", momentum)
    check_non_negative("mean_field_factor", mean_field_factor)
    return check_choice("output_init", output_init, RFOutputInit)


@dataclass(frozen=True)
class RandomFeatureSettings:
    """The random-feature GP layer (GPF-BERT eqs. 2-5): ``L = n_features`` features of length scale ``l`` and
    scale ``s``, prior precision ``ridge``, ``momentum`` None for eq. 4's exact sum or m in (0, 1) for eq. 5,
    the mean-field factor lambda (pi / 8, Lu et al. 2020) and the start of the output weights."""

    n_features: int = 1024
    length_scale: float = 1.0
    feature_scale: float = 1.0
    ridge: float = 1.0
    momentum: float | None = None
    mean_field_factor: float = math.pi / 8
    output_init: RFOutputInit = RFOutputInit.dense

    def __post_init__(self) -> None:
        output_init = check_random_features(
            n_features=self.n_features,
            length_scale=self.length_scale,
            feature_scale=self.feature_scale,
            ridge=self.ridge,
            momentum=self.momentum,
            mean_field_factor=self.mean_field_factor,
            output_init=self.output_init,
        )
        object.__setattr__(self, "output_init", output_init)


@dataclass(frozen=True)
class PolyaGammaSettings:
    """The Pólya-Gamma GP layer as PG-DRR sets it (sec. 4.4): an RBF kernel of length scale 1 and output
    scale (prior variance) 8, 10 Gibbs steps of 30 chains; ``nu``: the Matérn smoothness of its ablation
    (sec. 5.3); ``quadrature_points``: Gauss-Hermite points of eq. 15."""

    length_scale: float = 1.0
    output_scale: float = 8.0
    nu: float = 2.5
    gibbs_steps: int = 10
    gibbs_chains: int = 30
    quadrature_points: int = 20

    def __post_init__(self) -> None:
        check_positive("length_scale", self.length_scale)
        check_positive("output_scale", self.output_scale)
        check_matern_nu("nu", self.nu)
        for key in ("gibbs_steps", "gibbs_chains", "quadrature_points"):
            check_count(key, getattr(self, key))
