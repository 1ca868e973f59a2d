"""One ranker trained on one corpus and evaluated on every condition of the profile (notebook ``03_train``).

A condition is a corpus (the training one: in-domain; others: cross-domain shift) times an
evaluation sampler (the training one: in distribution; others: cross-negative-sampling shift),
on the validation or test split. Predictions go to
``runs/<profile>/predictions/<ranker>/<train corpus>/<corpus>-<split>-<sampler>-k<k>[-seed<N>].npz``
(:func:`load_predictions`). Validation conditions are predicted only for rankers with S > 1:
only risk-aware ranking reads them, to choose its b.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from . import registry
from .config import Config, Corpus, RankerName, run_name, training_seeds
from .metrics.calibration import ece
from .metrics.ranking import recall_at_k
from .predictions import Predictions
from .querysets import MissingStepError, load_query_set
from .runs import project_root, run_dir
from .table_checks import in_range, raise_problems, rows_expected, rows_failing

if TYPE_CHECKING:  # the rankers (and torch) load only when a model is trained or run
    from .rankers import Ranker

__all__ = [
    "Condition",
    "eval_conditions",
    "ranker_conditions",
    "models_dir",
    "predictions_path",
    "train_ranker",
    "training_queries",
    "predict_conditions",
    "predict_split",
    "predict_split_conditions",
    "load_predictions",
    "training_frames",
    "expected_samples",
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


def _seed(cfg: Config, seed: int | None) -> int:
    seeds = training_seeds(cfg)
    if seed is None:
        return seeds[0]
    if seed not in seeds:
        raise ValueError(f"seed {seed} is not among the training seeds of profile {cfg.profile!r} "
                         f"(rankers.seeds: {list(seeds)})")
    return int(seed)


def predictions_path(cfg: Config, ranker: str | RankerName, train_corpus: str | Corpus, condition: Condition,
                     seed: int | None = None) -> Path:
    """``<condition>.npz`` for the main seed, ``<condition>-seed<N>.npz`` for the others (a path only:
    the folder is made when the file is written)."""
    folder = project_root() / "runs" / cfg.profile / "predictions" / registry.info(ranker).name / Corpus(train_corpus).value
    seed = _seed(cfg, seed)
    suffix = "" if seed == training_seeds(cfg)[0] else f"-seed{seed}"
    return folder / f"{condition.name}{suffix}.npz"


def training_queries(cfg: Config, train_corpus: str | Corpus):
    """(train, valid) queries of a training corpus: the training sampler's, validation for early selection."""
    corpus = Corpus(train_corpus)
    if corpus not in cfg.rankers.train_corpora:
        raise ValueError(f"train_corpus {corpus.value!r} is not in rankers.train_corpora of profile {cfg.profile!r}")
    return (load_query_set(cfg, corpus.value, "train", cfg.negatives.train),
            load_query_set(cfg, corpus.value, "valid", cfg.negatives.train))


def train_ranker(cfg: Config, ranker: str | RankerName, train_corpus: str | Corpus, device=None,
                 seed: int | None = None) -> Ranker:
    """Fit ``ranker`` with a training ``seed`` of the profile (default: the main one) on ``train_corpus``."""
    train, valid = training_queries(cfg, train_corpus)
    from .rankers import ranker_from_config

    return ranker_from_config(cfg, ranker, models_dir(cfg, train_corpus), device=device,
                              seed=_seed(cfg, seed)).fit(train, valid)


def predict_conditions(cfg: Config, ranker: Ranker, train_corpus: str | Corpus) -> pd.DataFrame:
    """Predictions of a fitted ranker on every condition, written to disk; a summary table.

    The conditions of one split share contexts and responses, so they are predicted together
    (:func:`predict_split`): the same Predictions as one :meth:`Ranker.predict` per condition.
    The summary is checked (:func:`_check_run_summary`) before any file is written.
    """
    corpus = Corpus(train_corpus)
    rows = []
    predicted = predict_split_conditions(cfg, ranker)
    for cond, queries, pred in predicted:
        pred.meta.update(
            {"profile": cfg.profile, "train_corpus": corpus.value, "condition": cond.name,
             "in_domain": cond.corpus == corpus.value, "train_sampler": cfg.negatives.train.value,
             "name": f"{ranker.name}/{corpus.value}/{cond.name}"}
        )
        rows.append(
            {
                "corpus": cond.corpus,
                "split": cond.split,
                "sampler": cond.sampler,
                "shift": shift_kind(cond, corpus.value, cfg.negatives.train.value),
                "queries": len(queries),
                "samples": pred.n_samples,
                f"R{cond.k + 1}@1": float(np.nanmean(recall_at_k(pred.probs, pred.labels, 1))),
                "ECE": ece(pred.probs, pred.labels),
                "mean var": float(pred.var.mean()),
                "ms/query": pred.meta["inference_ms_per_query"],
            }
        )
    summary = pd.DataFrame(rows)
    _check_run_summary(cfg, ranker.name, summary)
    for cond, _, pred in predicted:
        pred.save(predictions_path(cfg, ranker.name, corpus, cond, ranker.seed))
    return summary


def _check_run_summary(cfg: Config, ranker: str, summary: pd.DataFrame) -> None:
    """One row per condition of :func:`ranker_conditions`; ``R<k+1>@1`` and ``ECE`` in [0, 1]; ``samples`` =
    S of the ranker under the profile (:func:`expected_samples`); ``mean var`` > 0 when S > 1, else 0."""
    name, keys = f"run summary of {ranker}", ("corpus", "split", "sampler")
    s = expected_samples(cfg, ranker)
    problems = rows_expected(name, summary, keys, [(c.corpus, c.split, c.sampler) for c in ranker_conditions(cfg, ranker)],
                             what="one per condition the ranker is predicted on")
    for col in (f"R{cfg.negatives.eval_k + 1}@1", "ECE"):
        problems += in_range(name, summary, col, keys, 0, 1)
    problems += rows_failing(name, summary, summary["samples"] == s, keys,
                             f"samples {s} (S of {ranker} under profile {cfg.profile!r})", ["samples"])
    if s > 1:
        ok, expected = summary["mean var"] > 0, f"mean var > 0 (S = {s} samples)"
    else:
        ok, expected = summary["mean var"] == 0, "mean var 0 (a deterministic ranker, S = 1)"
    raise_problems(problems + rows_failing(name, summary, ok, keys, expected, ["mean var"]))


def predict_split_conditions(cfg: Config, ranker: Ranker):
    """``(condition, queries, Predictions)`` for every condition of :func:`ranker_conditions`, in that
    order, predicted one split at a time (all corpora and samplers of it) with :func:`predict_split`."""
    conditions = ranker_conditions(cfg, ranker.name)
    done = {}
    for split in dict.fromkeys(c.split for c in conditions):
        group = [c for c in conditions if c.split == split]
        query_sets = [load_query_set(cfg, c.corpus, c.split, c.sampler, c.k) for c in group]
        done.update({c: (c, q, p) for c, q, p in zip(group, query_sets, predict_split(ranker, query_sets))})
    return [done[c] for c in conditions]


def predict_split(ranker: Ranker, query_sets: list) -> list[Predictions]:
    """Predictions of ``ranker`` on each query set of one split: :meth:`Ranker.predict_many`.

    Rankers whose pair scores do not depend on the rest of the list score each distinct pair once;
    ``mc_dropout`` with per-pair masks predicts each set on its own.
    """
    return ranker.predict_many(query_sets)


def shift_kind(cond: Condition, train_corpus: str, train_sampler: str) -> str:
    """``in distribution``, ``cross-domain``, ``cross-NS`` (another negative sampler) or
    ``cross-domain + cross-NS``: the one naming notebook 03 and the analyses use."""
    parts = []
    if cond.corpus != train_corpus:
        parts.append("cross-domain")
    if cond.sampler != train_sampler:
        parts.append("cross-NS")
    return " + ".join(parts) or "in distribution"


def load_predictions(cfg: Config, ranker: str | RankerName, train_corpus: str | Corpus, condition: Condition,
                     seed: int | None = None) -> Predictions:
    path = predictions_path(cfg, ranker, train_corpus, condition, seed)
    if not path.exists():
        run = run_name(ranker, train_corpus, _seed(cfg, seed), cfg)
        raise MissingStepError(f"{path} does not exist: run `make nb-03_train-{run} PROFILE={cfg.profile}` first")
    return Predictions.load(path)


def training_frames(ranker: Ranker) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(loss history, validation metric) of every model behind the ranker, with a ``model`` column."""
    hist, val = [], []
    for i, res in enumerate(ranker.training_results()):
        hist.extend({"model": i, **h} for h in res.history)
        val.extend({"model": i, **v} for v in res.validation)
    return pd.DataFrame(hist, columns=["model", "step", "epoch", "loss", "lr"]), pd.DataFrame(val, columns=["model", "step", "metric"])


def expected_samples(cfg: Config, ranker: str | RankerName) -> int:
    """S of a ranker's Predictions under the profile: 1, T passes, M members or S posterior draws
    (:mod:`calibrank.registry`)."""
    from . import registry

    return int(registry.info(ranker).samples(cfg))
