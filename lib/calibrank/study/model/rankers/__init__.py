"""Rankers by name. Every ranker is trained by :mod:`calibrank.study.model.training` and returns :class:`~calibrank.predictions.Predictions`.

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

The contract is :class:`~calibrank.study.model.rankers.base.Ranker`: a ranker is built from one
:class:`~calibrank.study.model.rankers.run.RankerRun` (what every ranker shares) and states its own settings in
its signature. A new ranker is a module with its class and one :class:`calibrank.study.settings.registry.RankerInfo`
naming it (``impl``); a profile section of the ranker's name (``rankers.<name>``) gives its settings.
"""

from __future__ import annotations

import dataclasses
import enum
import importlib
from pathlib import Path
from typing import Any

import torch

from calibrank.study.model.rankers.base import Ranker
from calibrank.study.model.rankers.run import RankerRun
from calibrank.study.settings import registry
from calibrank.study.settings.choices import RankerName
from calibrank.study.settings.config import training_seeds
from calibrank.study.settings.schema import Config

__all__ = ["Ranker", "RankerRun", "make_ranker", "ranker_class", "ranker_from_config"]


def ranker_class(name: str | RankerName) -> type[Ranker]:
    """The class of the registered ranker ``name`` (its :attr:`calibrank.study.settings.registry.RankerInfo.impl`)."""
    try:
        entry = registry.info(name)
    except KeyError as exc:
        raise ValueError(exc.args[0]) from None
    module, _, attr = entry.impl.partition(":")
    if not module or not attr:
        raise ValueError(
            f"ranker {entry.name!r}: its registry entry names no class (impl 'module:Class', got {entry.impl!r})"
        )
    cls = getattr(importlib.import_module(module), attr, None)
    if not (isinstance(cls, type) and issubclass(cls, Ranker)):
        raise ValueError(f"ranker {entry.name!r}: {entry.impl} is not a Ranker class")
    return cls


def make_ranker(name: str | RankerName, run: RankerRun, /, **settings: Any) -> Ranker:
    """The ranker ``name`` for ``run``; ``settings`` are its own keyword arguments (unknown ones are errors)."""
    cls = ranker_class(name)
    try:
        return cls(run, **settings)
    except TypeError as exc:
        raise TypeError(f"ranker {registry.info(name).name!r}: {exc}") from None


def _section_params(section: Any) -> dict[str, Any]:
    """A ranker's config section as constructor keyword arguments (enums as their values)."""
    return {k: (v.value if isinstance(v, enum.Enum) else v) for k, v in dataclasses.asdict(section).items()}


def ranker_from_config(
    cfg: Config,
    name: str | RankerName,
    models_dir: str | Path,
    device: str | torch.device | None = None,
    seed: int | None = None,
) -> Ranker:
    """The ranker ``name`` with the profile's training settings and its own section's parameters
    (``rankers.<name>``, when the profile has one).

    ``seed`` is the training seed (default: the profile's main training seed).
    """
    key = registry.key(name)
    section = getattr(cfg.rankers, key.value, None)
    params = _section_params(section) if dataclasses.is_dataclass(section) else {}
    run = RankerRun(
        cfg.training,
        Path(models_dir),
        seed=training_seeds(cfg)[0] if seed is None else seed,
        context_style=cfg.data.context_style,
        device=device,
    )  # type: ignore[arg-type]  # RankerRun takes a str device and holds a torch.device
    return make_ranker(key, run, **params)
