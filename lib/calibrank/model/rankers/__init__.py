"""Rankers by name. Every ranker is trained by :mod:`calibrank.model.training` and returns :class:`~calibrank.predictions.Predictions`.

======================  =========================================================
name                    method
======================  =========================================================
``bert``                deterministic pointwise cross-encoder (Penha & Hauff 2021)
``mc_dropout``          MC Dropout over the ``bert`` model, T passes (S-BERT^D)
``ensemble``            M ``bert`` models differing only in seed (S-BERT^E)
``temperature``         ``bert`` with post-hoc temperature scaling (Guo et al. 2017)
``focal``               ``bert`` trained with focal loss (GPF-BERT's ablation)
``sngp``                spectral-norm pooler + random-feature GP head, Laplace posterior
``gpf_bert``            ``sngp`` trained with focal loss (Ye et al., ICASSP 2023)
``pg_drr``              GP output layer, Pólya-Gamma Gibbs, Fisher-identity loss (AAAI 2023)
======================  =========================================================

A ranker's keyword arguments are the fields of its profile section (:mod:`calibrank.settings.config`).
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Any

from ...settings import registry
from ...settings.choices import RankerName
from ...settings.config import training_seeds
from ...settings.schema import Config
from .base import CrossEncoder, Ranker
from .deterministic import DeterministicRanker
from .ensemble import EnsembleRanker
from .focal import FocalRanker, GPFBertRanker
from .mc_dropout import MCDropoutRanker
from .pg_gp import PGDRRRanker
from .sngp import SNGPRanker
from .temperature import TemperatureRanker

__all__ = ["CrossEncoder", "Ranker", "RANKERS", "make_ranker", "ranker_from_config"]

RANKERS: dict[RankerName | str, type[Ranker]] = {
    RankerName.bert: DeterministicRanker,
    RankerName.mc_dropout: MCDropoutRanker,
    RankerName.ensemble: EnsembleRanker,
    RankerName.temperature: TemperatureRanker,
    RankerName.focal: FocalRanker,
    RankerName.sngp: SNGPRanker,
    RankerName.gpf_bert: GPFBertRanker,
    RankerName.pg_drr: PGDRRRanker,
}


def _section_params(section: Any) -> dict[str, Any]:
    """A ranker's config section as constructor keyword arguments (enums as their values)."""
    return {k: (v.value if isinstance(v, enum.Enum) else v) for k, v in dataclasses.asdict(section).items()}


def make_ranker(name: str | RankerName, **params: Any) -> Ranker:
    """A ranker by name; ``params`` are its constructor's keyword arguments (unknown ones are errors)."""
    try:
        key = registry.key(name)
    except KeyError as exc:
        raise ValueError(exc.args[0]) from None
    if key not in RANKERS:
        raise ValueError(f"ranker {name!r} is registered (calibrank.settings.registry) but has no class in "
                         f"calibrank.model.rankers.RANKERS")
    try:
        return RANKERS[key](**params)
    except TypeError as exc:
        raise TypeError(f"ranker {registry.info(key).name!r}: {exc}") from None


def ranker_from_config(cfg: Config, name: str | RankerName, models_dir, device=None, seed: int | None = None) -> Ranker:
    """The ranker ``name`` with the profile's training settings and its own section's parameters.

    ``seed`` is the training seed (default: the profile's main training seed).
    """
    key = registry.key(name)
    params: dict[str, Any] = {
        "training": cfg.training,
        "models_dir": models_dir,
        "seed": training_seeds(cfg)[0] if seed is None else int(seed),
        "context_style": cfg.data.context_style,
        "device": device,
    }
    if key is RankerName.mc_dropout:
        params.update(_section_params(cfg.rankers.mc_dropout))
    elif key is RankerName.ensemble:
        params["members"] = cfg.rankers.ensemble.members
    elif key is RankerName.focal:
        params["focal_gamma"] = cfg.rankers.focal.gamma
    elif key in (RankerName.sngp, RankerName.gpf_bert, RankerName.pg_drr):
        params.update(_section_params(getattr(cfg.rankers, key.value)))
    return make_ranker(key, **params)
