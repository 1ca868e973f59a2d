"""Splits by dialogue, examples cut from dialogues, and context strings.

:func:`split_dialogues` assigns whole dialogues to train / valid / test with a seed, so no
conversation leaks across splits. :func:`dialogue_examples` makes each utterance after the first
(``positions="all"``) or only the last a response to those before it. :func:`format_context`
joins a context, plainly or with Penha & Hauff's (2021) ``[UTTERANCE_SEP]`` / ``[TURN_SEP]``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from calibrank.study.data.schema import Dialogue, Example
from calibrank.study.settings.choices import ContextStyle, Positions
from calibrank.study.settings.schema import SplitConfig

__all__ = [
    "SPLITS",
    "UTTERANCE_SEP",
    "TURN_SEP",
    "split_dialogues",
    "dialogue_examples",
    "subsample",
    "format_context",
]

SPLITS = ("train", "valid", "test")
UTTERANCE_SEP = "[UTTERANCE_SEP]"
TURN_SEP = "[TURN_SEP]"


def split_dialogues(dialogues: Sequence[Dialogue], fractions: SplitConfig, seed: int) -> dict[str, list[Dialogue]]:
    """Assign whole dialogues to splits by a seeded permutation; each split keeps corpus order.

    Split sizes are ``round(n * fraction)`` for valid and test (at least one each) and the
    rest for train, so every split is non-empty whenever there are three dialogues or more.
    """
    n = len(dialogues)
    if n < 3:
        raise ValueError(f"cannot split {n} dialogues into train/valid/test: need at least 3")
    n_valid = max(1, round(n * fractions.valid))
    n_test = max(1, round(n * fractions.test))
    if n_valid + n_test >= n:
        raise ValueError(f"{n} dialogues leave no training dialogue with fractions {fractions}")
    order = np.random.default_rng(seed).permutation(n)
    assign = np.empty(n, dtype=np.int8)
    assign[order[:n_test]] = 2
    assign[order[n_test : n_test + n_valid]] = 1
    assign[order[n_test + n_valid :]] = 0
    return {name: [d for d, a in zip(dialogues, assign) if a == i] for i, name in enumerate(SPLITS)}


def dialogue_examples(
    dialogues: Sequence[Dialogue],
    positions: Positions | str = Positions.all,
    max_context_utterances: int | None = None,
) -> list[Example]:
    """(context, response) examples of each dialogue; context capped to its most recent utterances."""
    positions = Positions(positions)
    out = []
    for d in dialogues:
        n = len(d.utterances)
        if n < 2:
            continue
        ts = range(1, n) if positions is Positions.all else (n - 1,)
        for t in ts:
            start = 0 if max_context_utterances is None else max(0, t - max_context_utterances)
            out.append(
                Example(
                    eid=f"{d.dialogue_id}-t{t}",
                    context=d.utterances[start:t],
                    response=d.utterances[t],
                    dialogue_id=d.dialogue_id,
                    domain=d.domain,
                )
            )
    return out


def subsample(items: Sequence, cap: int | None, seed: int) -> list:
    """At most ``cap`` items, a seeded sample without replacement, in their original order."""
    if cap is None or len(items) <= cap:
        return list(items)
    keep = np.sort(np.random.default_rng(seed).choice(len(items), size=cap, replace=False))
    return [items[i] for i in keep]


def format_context(context: Sequence[str], style: ContextStyle | str = ContextStyle.plain) -> str:
    """One string from the context's utterances (oldest first), in the given style."""
    style = ContextStyle(style)
    if style is ContextStyle.plain:
        return " ".join(context)
    parts = []
    for i, utt in enumerate(context, start=1):
        parts.append(f"{utt} {UTTERANCE_SEP}")
        if style is ContextStyle.separators and i % 2 == 0:
            parts.append(TURN_SEP)
    return " ".join(parts)
