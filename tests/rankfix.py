"""Tiny ranking fixtures for training tests: a signal a 2-layer random BERT learns in seconds."""

from __future__ import annotations

import numpy as np

from calibrank.study.data.schema import RankingQuery
from calibrank.study.settings.schema import TrainingConfig

WORDS = ["apple", "banana", "cherry", "grape", "lemon", "mango", "peach", "plum", "melon", "orange", "kiwi", "lime"]


def learnable_queries(n: int, k: int, seed: int) -> list[RankingQuery]:
    """Relevant responses agree ("yes i love X too"), negatives deflect: learnable from the candidate alone."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        w = WORDS[rng.integers(len(WORDS))]
        cands = [f"yes i love {w} too"] + [
            f"no idea about {WORDS[rng.integers(len(WORDS))]} at all {j}" for j in range(k)
        ]
        labels = [1] + [0] * k
        perm = rng.permutation(k + 1)
        out.append(
            RankingQuery(
                f"q{seed}-{i}",
                ("hello there friend", f"do you like {w}?"),
                tuple(cands[j] for j in perm),
                tuple(labels[j] for j in perm),
            )
        )
    return out


def tiny_training(**overrides) -> TrainingConfig:
    settings = dict(
        backbone="tiny-random",
        max_length=40,
        max_response_length=16,
        batch_size=16,
        eval_batch_size=64,
        epochs=3,
        lr=2e-3,
        warmup_ratio=0.1,
        precision="fp32",
        log_every=1,
        checkpoint_every=1000,
        hidden_dropout=0.1,
    )
    settings.update(overrides)
    return TrainingConfig(**settings)


def tiny_run(models_dir, *, seed: int = 0, device=None, **training):
    """The :class:`RankerRun` of the tiny model (``training``: overrides of :func:`tiny_training`)."""
    from calibrank.study.model.rankers import RankerRun  # torch: only for the tests that train

    return RankerRun(tiny_training(**training), models_dir, seed=seed, device=device)
