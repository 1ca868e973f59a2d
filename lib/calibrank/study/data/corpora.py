"""Corpora by name: read, cap, split by dialogue and cut into examples, per the profile.

The offline corpora (``chitchat``, ``chatterbot``) ship as dialogues inside PyPI packages and
are split here by dialogue with the profile seed. The research corpora (``msdialog``,
``mantis``, ``udc_dstc8``) ship already split into (context, response) rows; their published
splits are kept (see :mod:`calibrank.study.data.published`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from calibrank.study.data.chatterbot import read_chatterbot
from calibrank.study.data.chitchat import read_chitchat
from calibrank.study.data.published import expected_files, load_published
from calibrank.study.data.schema import DataError, Dialogue, Example
from calibrank.study.data.splits import SPLITS, dialogue_examples, split_dialogues, subsample
from calibrank.study.settings.choices import Corpus
from calibrank.study.settings.schema import DataConfig

__all__ = ["CorpusSplits", "load_dialogues", "load_corpus", "corpus_names"]

OFFLINE = (Corpus.chitchat, Corpus.chatterbot)


def corpus_names() -> list[str]:
    return [c.value for c in Corpus]


def _corpus(name: str | Corpus) -> Corpus:
    try:
        return Corpus(name)
    except ValueError:
        raise DataError(f"unknown corpus {name!r}; known corpora: {', '.join(corpus_names())}") from None


def load_dialogues(name: str | Corpus) -> list[Dialogue]:
    """All dialogues of an offline corpus, in corpus order."""
    corpus = _corpus(name)
    if corpus is Corpus.chitchat:
        return read_chitchat()
    if corpus is Corpus.chatterbot:
        return read_chatterbot()
    raise DataError(f"corpus {corpus.value!r} ships (context, response) rows, not dialogues: use load_corpus")


@dataclass(frozen=True)
class CorpusSplits:
    """Examples of one corpus per split. ``pools`` holds each split's responses before capping,
    the pool its negatives are drawn from (a split never borrows another split's responses)."""

    corpus: str
    examples: dict[str, list[Example]]
    pools: dict[str, list[str]]
    n_dialogues: dict[str, int]
    #: the dialogue id of each pool response (aligned with ``pools``)
    pool_dialogues: dict[str, list[str]] = dataclasses.field(default_factory=dict)


def _seed_for(seed: int, corpus: Corpus, purpose: str) -> int:
    """An independent, reproducible seed per (corpus, purpose) derived from the profile seed."""
    tag = sum((i + 1) * ord(ch) for i, ch in enumerate(f"{corpus.value}/{purpose}"))
    return int(np.random.SeedSequence([seed, tag]).generate_state(1)[0])


def load_corpus(name: str | Corpus, data: DataConfig, seed: int) -> CorpusSplits:
    """Train / valid / test examples of a corpus as the profile's data section asks."""
    corpus = _corpus(name)
    caps = {s: getattr(data.max_examples, s) for s in SPLITS}
    if corpus in OFFLINE:
        dialogues = [d for d in load_dialogues(corpus) if len(d.utterances) >= 2]
        dialogues = subsample(dialogues, data.max_dialogues, _seed_for(seed, corpus, "dialogues"))
        by_split = split_dialogues(dialogues, data.split, _seed_for(seed, corpus, "split"))
        full = {s: dialogue_examples(ds, data.positions, data.max_context_utterances) for s, ds in by_split.items()}
        n_dialogues = {s: len(ds) for s, ds in by_split.items()}
    else:
        full = load_published(corpus.value)
        if data.max_context_utterances is not None:
            m = data.max_context_utterances
            full = {
                s: [Example(e.eid, e.context[-m:], e.response, e.dialogue_id, e.domain) for e in exs]
                for s, exs in full.items()
            }
        n_dialogues = {s: len({e.dialogue_id for e in exs}) for s, exs in full.items()}
    pools = {s: [e.response for e in exs] for s, exs in full.items()}
    pool_dialogues = {s: [e.dialogue_id for e in exs] for s, exs in full.items()}
    examples = {s: subsample(full[s], caps[s], _seed_for(seed, corpus, f"cap-{s}")) for s in SPLITS}
    for s in SPLITS:
        if not examples[s]:
            raise DataError(_empty_split(corpus, s, caps[s]))
    return CorpusSplits(
        corpus=corpus.value, examples=examples, pools=pools, n_dialogues=n_dialogues, pool_dialogues=pool_dialogues
    )


def _empty_split(corpus: Corpus, split: str, cap: int | None) -> str:
    """Why a split came out empty, and the profile key (or file) that changes it."""
    where = f"corpus {corpus.value!r}: split {split!r} has no examples"
    if cap == 0:
        return f"{where}; data.max_examples.{split} is 0"
    if corpus in OFFLINE:
        return f"{where}; raise data.max_dialogues or data.split.{split}"

    files = ", ".join(str(p) for p in expected_files(corpus.value).values())
    return (
        f"{where}: its published files ({files}) hold no example with a true response for it; "
        f"check the files (`make data DATASET={corpus.value}` fetches them again)"
    )
