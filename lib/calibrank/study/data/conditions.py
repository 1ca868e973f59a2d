"""The conditions of a profile and where each ranker's Predictions on them live.

A condition is a corpus (the training one: in-domain; others: cross-domain shift) times an
evaluation sampler (the training one: in distribution; others: cross-negative-sampling shift),
on the validation or test split. Predictions go to
``runs/<profile>/predictions/<ranker>/<train corpus>/<corpus>-<split>-<sampler>-k<k>[-seed<N>].npz``
(:func:`load_predictions`). Validation conditions are predicted only for rankers with S > 1:
only risk-aware ranking reads them, to choose its b. Torch-free: the analyses read these.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from calibrank.predictions import Predictions
from calibrank.study.data.querysets import MissingStepError, load_query_set
from calibrank.study.paths import project_root, run_dir
from calibrank.study.settings import registry
from calibrank.study.settings.choices import Corpus, RankerName
from calibrank.study.settings.config import run_name, training_seeds
from calibrank.study.settings.schema import Config

__all__ = [
    "Condition",
    "eval_conditions",
    "expected_samples",
    "load_predictions",
    "models_dir",
    "predictions_path",
    "ranker_conditions",
    "shift_kind",
    "training_queries",
    "training_seed",
]


@dataclass(frozen=True)
class Condition:
    corpus: str
    split: str
    sampler: str
    k: int

    @property
    def name(self) -> str:
        return f"{self.corpus}-{self.split}-{self.sampler}-k{self.k}"


def eval_conditions(cfg: Config, splits: tuple[str, ...] = ("valid", "test")) -> list[Condition]:
    return [
        Condition(c.value, split, s.value, cfg.negatives.eval_k)
        for c in cfg.data.corpora
        for split in splits
        for s in cfg.negatives.eval
    ]


def ranker_conditions(cfg: Config, ranker: str | RankerName) -> list[Condition]:
    """The conditions a ranker is predicted on: every test condition, and the validation ones when S > 1."""
    splits = ("valid", "test") if expected_samples(cfg, ranker) > 1 else ("test",)
    return eval_conditions(cfg, splits)


def models_dir(cfg: Config, train_corpus: str | Corpus) -> Path:
    return run_dir(cfg.profile, "models", Corpus(train_corpus).value)


def training_seed(cfg: Config, seed: int | None) -> int:
    """``seed`` if it is one of the profile's training seeds; the main one for None."""
    seeds = training_seeds(cfg)
    if seed is None:
        return seeds[0]
    if seed not in seeds:
        raise ValueError(
            f"seed {seed} is not among the training seeds of profile {cfg.profile!r} (rankers.seeds: {list(seeds)})"
        )
    return int(seed)


def predictions_path(
    cfg: Config, ranker: str | RankerName, train_corpus: str | Corpus, condition: Condition, seed: int | None = None
) -> Path:
    """``<condition>.npz`` for the main seed, ``<condition>-seed<N>.npz`` for the others (a path only:
    the folder is made when the file is written)."""
    folder = (
        project_root() / "runs" / cfg.profile / "predictions" / registry.info(ranker).name / Corpus(train_corpus).value
    )
    seed = training_seed(cfg, seed)
    suffix = "" if seed == training_seeds(cfg)[0] else f"-seed{seed}"
    return folder / f"{condition.name}{suffix}.npz"


def training_queries(cfg: Config, train_corpus: str | Corpus):
    """(train, valid) queries of a training corpus: the training sampler's, validation for early selection."""
    corpus = Corpus(train_corpus)
    if corpus not in cfg.rankers.train_corpora:
        raise ValueError(f"train_corpus {corpus.value!r} is not in rankers.train_corpora of profile {cfg.profile!r}")
    return (
        load_query_set(cfg, corpus.value, "train", cfg.negatives.train),
        load_query_set(cfg, corpus.value, "valid", cfg.negatives.train),
    )


def shift_kind(cond: Condition, train_corpus: str, train_sampler: str) -> str:
    """``in distribution``, ``cross-domain``, ``cross-NS`` (another negative sampler) or
    ``cross-domain + cross-NS``: the one naming notebook 03 and the analyses use."""
    parts = []
    if cond.corpus != train_corpus:
        parts.append("cross-domain")
    if cond.sampler != train_sampler:
        parts.append("cross-NS")
    return " + ".join(parts) or "in distribution"


def load_predictions(
    cfg: Config, ranker: str | RankerName, train_corpus: str | Corpus, condition: Condition, seed: int | None = None
) -> Predictions:
    path = predictions_path(cfg, ranker, train_corpus, condition, seed)
    if not path.exists():
        run = run_name(ranker, train_corpus, training_seed(cfg, seed), cfg)
        raise MissingStepError(f"{path} does not exist: run `make nb-03_train-{run} PROFILE={cfg.profile}` first")
    return Predictions.load(path)


def expected_samples(cfg: Config, ranker: str | RankerName) -> int:
    """S of a ranker's Predictions under the profile: 1, T passes, M members or S posterior draws
    (:mod:`calibrank.study.settings.registry`)."""
    return int(registry.info(ranker).samples(cfg))
