"""Reader for the Chit-Chat Challenge corpus shipped by the PyPI package ``chitchat-dataset``.

One JSON file maps a conversation id to its ``messages``, a list of turns, each a list of one
sender's messages; a turn's messages are joined with a space into one utterance. Empty messages
are dropped, and a turn left without text with them (adjacent turns of one sender then merge).
Single-speaker conversations are kept but yield no examples.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from calibrank.study.data.io import read_utf8
from calibrank.study.data.schema import DataError, Dialogue

__all__ = ["read_chitchat", "default_path"]


def default_path() -> Path:
    try:
        import chitchat_dataset
    except ImportError as exc:  # pragma: no cover - dependency of the package
        raise DataError(
            "the corpus 'chitchat' needs the package chitchat-dataset (pip install chitchat-dataset==0.9.0)"
        ) from exc
    return Path(chitchat_dataset.__file__).parent / "dataset.json"


def read_chitchat(path: str | os.PathLike | None = None) -> list[Dialogue]:
    """All conversations of the corpus, in file order, as :class:`Dialogue` (domain = its prompt)."""
    path = Path(path) if path is not None else default_path()
    if not path.exists():
        raise FileNotFoundError(f"{path}: chitchat corpus file not found (reinstall chitchat-dataset==0.9.0)")
    try:
        raw = json.loads(read_utf8(path))
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg})") from exc
    if not isinstance(raw, dict):
        raise DataError(f"{path}: expected a JSON object of conversations, got {type(raw).__name__}")
    dialogues = []
    for conv_id, conv in raw.items():
        where = f"{path}: conversation {conv_id!r}"
        if not isinstance(conv, dict) or not isinstance(conv.get("messages"), list):
            raise DataError(f"{where}: expected an object with a 'messages' list")
        utterances: list[str] = []
        speakers: list[str] = []
        for t, turn in enumerate(conv["messages"]):
            if not isinstance(turn, list):
                raise DataError(f"{where}: turn {t} is not a list of messages")
            texts = []
            for m in turn:
                if not isinstance(m, dict) or "text" not in m or "sender" not in m:
                    raise DataError(f"{where}: turn {t} has a message without 'sender' and 'text'")
                if str(m["text"]).strip():
                    texts.append(str(m["text"]).strip())
            if not texts:
                continue
            sender = str(turn[0]["sender"])
            if speakers and speakers[-1] == sender:
                utterances[-1] = f"{utterances[-1]} {' '.join(texts)}"
            else:
                utterances.append(" ".join(texts))
                speakers.append(sender)
        if not utterances:
            continue
        dialogues.append(
            Dialogue(
                dialogue_id=f"chitchat-{conv_id}",
                utterances=tuple(utterances),
                speakers=tuple(speakers),
                domain=str(conv.get("prompt", "")),
                source="chitchat",
            )
        )
    return dialogues
