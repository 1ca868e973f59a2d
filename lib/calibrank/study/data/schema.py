"""The typed shapes of the data layer, from raw to rankable.

- :class:`Dialogue`: one conversation, a list of utterances (one per turn), oldest first.
- :class:`Example`: one (context, true response) pair, cut from a dialogue or read as is.
- :class:`RankingQuery`: an example with negatives: ``qid``, ``context``, ``candidates`` and
  ``labels`` (1 for the true response), aligned by position.

Every constructor validates its input, so a record that exists is well formed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["DataError", "Dialogue", "Example", "RankingQuery", "normalise_text"]


class DataError(ValueError):
    """Raised for malformed input data; the message names the file/record and what was expected."""


_WS = re.compile(r"\s+")
_NON_WORD = re.compile(r"[^\w\s]+")


def normalise_text(text: str) -> str:
    """Canonical form used to decide that two responses are the same.

    Case-folded, punctuation dropped, whitespace collapsed ("Yes, I do!" == "yes i do"); a text of
    punctuation alone (":)") keeps it, so it stays a response of its own.
    """
    folded = _WS.sub(" ", text).strip().casefold()
    words = _WS.sub(" ", _NON_WORD.sub(" ", folded)).strip()
    return words or folded


def _clean(text: object, what: str, where: str) -> str:
    if not isinstance(text, str):
        raise DataError(f"{where}: {what} must be a string, got {type(text).__name__}")
    cleaned = _WS.sub(" ", text).strip()
    if not cleaned:
        raise DataError(f"{where}: empty {what}; every utterance and response must contain text")
    return cleaned


@dataclass(frozen=True)
class Dialogue:
    """A conversation: ``utterances`` oldest first, one per turn, with the speaker of each."""

    dialogue_id: str
    utterances: tuple[str, ...]
    speakers: tuple[str, ...] = ()
    domain: str = ""
    source: str = ""

    def __post_init__(self) -> None:
        where = f"dialogue {self.dialogue_id!r} ({self.source or 'unknown source'})"
        utts = tuple(_clean(u, f"utterance {i}", where) for i, u in enumerate(self.utterances))
        object.__setattr__(self, "utterances", utts)
        object.__setattr__(self, "speakers", tuple(self.speakers))
        if self.speakers and len(self.speakers) != len(utts):
            raise DataError(f"{where}: {len(self.speakers)} speakers for {len(utts)} utterances")


@dataclass(frozen=True)
class Example:
    """One context with its true response. ``dialogue_id`` ties examples of one dialogue together."""

    eid: str
    context: tuple[str, ...]
    response: str
    dialogue_id: str = ""
    domain: str = ""

    def __post_init__(self) -> None:
        where = f"example {self.eid!r}"
        ctx = tuple(self.context)
        if not ctx:
            raise DataError(f"{where}: empty context; a ranking query needs at least one utterance")
        object.__setattr__(
            self, "context", tuple(_clean(u, f"context utterance {i}", where) for i, u in enumerate(ctx))
        )
        object.__setattr__(self, "response", _clean(self.response, "response", where))


@dataclass(frozen=True)
class RankingQuery:
    """A context with candidate responses and their 0/1 relevance labels (contract 1)."""

    qid: str
    context: tuple[str, ...]
    candidates: tuple[str, ...]
    labels: tuple[int, ...]
    meta: dict = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        where = f"query {self.qid!r}"
        ctx = tuple(self.context)
        if not ctx:
            raise DataError(f"{where}: empty context")
        object.__setattr__(
            self, "context", tuple(_clean(u, f"context utterance {i}", where) for i, u in enumerate(ctx))
        )
        cands = tuple(_clean(c, f"candidate {i}", where) for i, c in enumerate(self.candidates))
        labels = tuple(int(x) for x in self.labels)
        if len(cands) != len(labels):
            raise DataError(f"{where}: {len(cands)} candidates but {len(labels)} labels")
        if not cands:
            raise DataError(f"{where}: no candidates")
        bad = [x for x in labels if x not in (0, 1)]
        if bad:
            raise DataError(f"{where}: labels must be 0 or 1, got {bad[0]!r}")
        object.__setattr__(self, "candidates", cands)
        object.__setattr__(self, "labels", labels)

    @property
    def n_relevant(self) -> int:
        return sum(self.labels)
