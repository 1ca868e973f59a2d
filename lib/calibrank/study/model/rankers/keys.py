"""The cache keys of a trained model: everything that changes its selected weights, nothing that does not.

A model folder is named by :func:`model_key`: the ranker's kind and seed, the training settings
(less logging, checkpointing and the scoring batch), the context style, the precision, the code
that trains it (:func:`calibrank.study.codekey.code_hash`), the versions of :data:`MODEL_PACKAGES`, the
training and validation queries (:func:`queries_version`) and the ranker's own settings.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from calibrank.atomic import stable_hash
from calibrank.study.codekey import package_versions
from calibrank.study.data.schema import RankingQuery
from calibrank.study.settings.schema import TrainingConfig

__all__ = ["MODEL_PACKAGES", "logits_key", "model_key", "queries_version", "settings_record"]

#: The installed packages whose version is part of a trained model's key (the code of calibrank
#: itself enters as :func:`calibrank.study.codekey.code_hash`): they compute the forward and backward
#: passes, tokenise the text and draw the batch order.
MODEL_PACKAGES = ("torch", "transformers", "tokenizers", "numpy")
#: Training settings that do not change the weights a run selects.
NOT_IN_KEY = ("log_every", "checkpoint_every", "eval_batch_size")
#: Settings added after models were cached: at these values they stay out of the key, so old keys stay valid.
IN_KEY_UNLESS_DEFAULT = {"schedule": "linear", "selection": "best", "joint_layers": None}


def queries_version(queries: Sequence[RankingQuery]) -> str:
    """A hash of a query set's content: part of every cache key that depends on the data."""
    return stable_hash([[q.qid, list(q.context), list(q.candidates), list(q.labels)] for q in queries])


def settings_record(training: TrainingConfig) -> dict[str, Any]:
    """The training settings as plain values (enums as their values), as Predictions record them."""
    return {k: (v.value if hasattr(v, "value") else v) for k, v in dataclasses.asdict(training).items()}


def model_key(
    kind: str,
    seed: int,
    training: TrainingConfig,
    *,
    context_style: str,
    bf16: bool,
    code: str,
    train: Sequence[RankingQuery],
    valid: Sequence[RankingQuery] = (),
    extra: dict | None = None,
) -> str:
    """The name of a trained model's cache folder, ``<kind>-seed<seed>-<hash>``.

    In: the settings that change the selected weights, the precision, the training ``code`` and
    :data:`MODEL_PACKAGES` versions, the data and ``extra`` (the ranker's own settings); out:
    :data:`NOT_IN_KEY`.
    """
    settings = {k: v for k, v in settings_record(training).items() if k not in NOT_IN_KEY}
    for key, default in IN_KEY_UNLESS_DEFAULT.items():
        if settings.get(key) == default:
            settings.pop(key)
    parts = {
        "kind": kind,
        "seed": seed,
        "training": settings,
        "context": context_style,
        "bf16": bf16,
        "code": code,
        "packages": package_versions(MODEL_PACKAGES),
        "data": queries_version(train),
        "valid": queries_version(valid) if valid else None,
        "extra": extra or {},
    }
    return f"{kind}-seed{seed}-{stable_hash(parts, 12)}"


def logits_key(
    queries: Sequence[RankingQuery],
    scoring: dict[str, Any],
    training: TrainingConfig,
    *,
    device: str,
    context_style: str,
    code: str,
) -> str:
    """The stem of a trained model's logits cache file: the queries, how they are scored (``scoring``:
    passes, dropout, seed, masks), the precision, the scoring batch, the device, the context style and
    the scoring ``code``."""
    return stable_hash(
        {
            "queries": queries_version(queries),
            "scoring": scoring,
            "precision": getattr(training.precision, "value", training.precision),
            "eval_batch_size": training.eval_batch_size,
            "device": device,
            "context": context_style,
            "code": code,
        },
        16,
    )
