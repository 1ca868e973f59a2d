"""One ranker trained on one corpus and evaluated on every condition of the profile (notebook ``03_train``).

The conditions and the paths of their Predictions are :mod:`calibrank.study.data.conditions`.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

from calibrank.metrics.calibration import ece
from calibrank.metrics.ranking import recall_at_k
from calibrank.predictions import Predictions
from calibrank.study.data.conditions import (
    expected_samples,
    models_dir,
    predictions_path,
    ranker_conditions,
    shift_kind,
    training_queries,
    training_seed,
)
from calibrank.study.data.querysets import load_query_set
from calibrank.study.model.rankers import Ranker, ranker_from_config
from calibrank.study.settings import registry
from calibrank.study.settings.choices import Corpus, RankerName
from calibrank.study.settings.schema import Config
from calibrank.table_checks import in_range, raise_problems, rows_expected, rows_failing

__all__ = [
    "predict_conditions",
    "predict_split",
    "predict_split_conditions",
    "train_ranker",
    "trained_rankers",
    "training_frames",
]


def train_ranker(
    cfg: Config, ranker: str | RankerName, train_corpus: str | Corpus, device=None, seed: int | None = None
) -> Ranker:
    """Fit ``ranker`` with a training ``seed`` of the profile (default: the main one) on ``train_corpus``."""
    train, valid = training_queries(cfg, train_corpus)
    return ranker_from_config(
        cfg, ranker, models_dir(cfg, train_corpus), device=device, seed=training_seed(cfg, seed)
    ).fit(train, valid)


def trained_rankers(
    cfg: Config, names: Iterable[str | RankerName] | None = None, train_corpus: str | Corpus | None = None
) -> dict[str, Ranker]:
    """Every ranker of ``names`` (default: the profile's) fitted on ``train_corpus`` (default: the first
    training corpus) with the main seed: from the model cache when notebook 03 trained it."""
    corpus = Corpus(train_corpus or cfg.rankers.train_corpora[0])
    names = [registry.key(n).value for n in names] if names is not None else [r.value for r in cfg.rankers.names]
    return {name: train_ranker(cfg, name, corpus) for name in names}


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
            {
                "profile": cfg.profile,
                "train_corpus": corpus.value,
                "condition": cond.name,
                "in_domain": cond.corpus == corpus.value,
                "train_sampler": cfg.negatives.train.value,
                "name": f"{ranker.name}/{corpus.value}/{cond.name}",
            }
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
    problems = rows_expected(
        name,
        summary,
        keys,
        [(c.corpus, c.split, c.sampler) for c in ranker_conditions(cfg, ranker)],
        what="one per condition the ranker is predicted on",
    )
    for col in (f"R{cfg.negatives.eval_k + 1}@1", "ECE"):
        problems += in_range(name, summary, col, keys, 0, 1)
    problems += rows_failing(
        name,
        summary,
        summary["samples"] == s,
        keys,
        f"samples {s} (S of {ranker} under profile {cfg.profile!r})",
        ["samples"],
    )
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


def training_frames(ranker: Ranker) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(loss history, validation metric) of every model behind the ranker, with a ``model`` column."""
    hist, val = [], []
    for i, res in enumerate(ranker.training_results()):
        hist.extend({"model": i, **h} for h in res.history)
        val.extend({"model": i, **v} for v in res.validation)
    return pd.DataFrame(hist, columns=["model", "step", "epoch", "loss", "lr"]), pd.DataFrame(
        val, columns=["model", "step", "metric"]
    )
