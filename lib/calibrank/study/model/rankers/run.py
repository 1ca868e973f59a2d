"""What every ranker of a run shares, as one object: the training settings, the model folder, the seed,
the context style and the device (:class:`RankerRun`).

A ranker's signature then holds its own settings only (``SNGPRanker(run, *, n_features=...)``); the
run is checked once, where it is built, and resolves what the profile leaves to the machine (the
device, and the scoring batch on it).
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import torch

from calibrank.hardware import scoring_batch_size
from calibrank.study.settings.checks import check_choice, error, is_int
from calibrank.study.settings.choices import ContextStyle
from calibrank.study.settings.schema import TrainingConfig

__all__ = ["RankerRun"]


@dataclasses.dataclass(frozen=True)
class RankerRun:
    """The settings every ranker shares; checked, and resolved for the machine, where built.

    Parameters
    ----------
    training : TrainingConfig
        The profile's training settings (backbone, lengths, optimiser, precision). A scoring batch the
        profile leaves open (``eval_batch_size: null``) is set to the device's
        (:func:`calibrank.hardware.scoring_batch_size`); no model key holds it.
    models_dir : str or Path
        Where trained models are cached, one folder per :func:`calibrank.study.model.rankers.keys.model_key`.
    seed : int
        The training seed, in 0..2**32-1 as the profile's ``rankers.seeds``.
    context_style : ContextStyle or str
        How a context's turns are joined (:class:`calibrank.study.settings.choices.ContextStyle`).
    device : str or torch.device, optional
        Where the model trains and scores; None: CUDA when torch sees it, else the CPU.

    Examples
    --------
    >>> from calibrank.study.settings.schema import TrainingConfig
    >>> run = RankerRun(TrainingConfig(), "models", seed=3, device="cpu")
    >>> str(run.models_dir), run.seed, run.context_style.value, run.device.type
    ('models', 3, 'plain', 'cpu')
    >>> run.training.eval_batch_size  # the profile leaves it open: the CPU's scoring batch
    64
    >>> RankerRun(TrainingConfig(), "models", seed=-1)
    Traceback (most recent call last):
    ...
    calibrank.study.settings.checks.ConfigError: seed: expected an integer in 0..2**32-1, got -1
    """

    # the types a built run holds; a str is taken for the folder, the context style and the device
    training: TrainingConfig
    models_dir: Path
    seed: int = 0
    context_style: ContextStyle = ContextStyle.plain
    device: torch.device | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.training, TrainingConfig):
            raise error("training", f"expected a TrainingConfig, got {type(self.training).__name__}")
        if not isinstance(self.models_dir, (str, os.PathLike)):
            raise error("models_dir", f"expected a folder path, got {type(self.models_dir).__name__}")
        if not (is_int(self.seed) and 0 <= self.seed < 2**32):
            raise error("seed", f"expected an integer in 0..2**32-1, got {self.seed!r}")
        try:
            device = (
                torch.device("cuda" if torch.cuda.is_available() else "cpu")
                if self.device is None
                else torch.device(self.device)
            )
        except (RuntimeError, TypeError):
            raise error("device", f"expected a torch device such as 'cpu' or 'cuda:0', got {self.device!r}") from None
        training = dataclasses.replace(
            self.training, eval_batch_size=scoring_batch_size(self.training.eval_batch_size, device)
        )
        for name, value in (
            ("training", training),
            ("models_dir", Path(self.models_dir)),
            ("seed", int(self.seed)),
            ("context_style", check_choice("context_style", self.context_style, ContextStyle)),
            ("device", device),
        ):
            object.__setattr__(self, name, value)
