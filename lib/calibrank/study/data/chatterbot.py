"""Reader for the English part of ``chatterbot-corpus`` (YAML files, one per category).

Each file holds ``categories`` and ``conversations``, lists of scripted utterances, oldest
first; the category is the dialogue's domain. Malformed entries (``trivia.yml`` has one) are
skipped with a warning naming file and entry, or are errors with ``strict=True``. Values are
read as plain strings (YAML 1.1 would turn ``yes`` into ``True``).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import yaml

from calibrank.study.data.io import read_utf8
from calibrank.study.data.schema import DataError, Dialogue

__all__ = ["read_chatterbot", "default_dir"]

log = logging.getLogger(__name__)


def default_dir(language: str = "english") -> Path:
    try:
        import chatterbot_corpus
    except ImportError as exc:  # pragma: no cover - dependency of the package
        raise DataError(
            "the corpus 'chatterbot' needs the package chatterbot-corpus (pip install chatterbot-corpus==1.3.3)"
        ) from exc
    return Path(chatterbot_corpus.__file__).parent / "data" / language


def read_chatterbot(
    directory: str | os.PathLike | None = None, language: str = "english", strict: bool = False
) -> list[Dialogue]:
    """All dialogues of every ``*.yml`` file in ``directory`` (sorted by file name, then file order)."""
    directory = Path(directory) if directory is not None else default_dir(language)
    files = sorted(directory.glob("*.yml"))
    if not files:
        raise FileNotFoundError(f"{directory}: no chatterbot *.yml files found")
    dialogues = []
    for path in files:
        try:
            doc = yaml.load(read_utf8(path), Loader=yaml.BaseLoader)  # all scalars as str
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            line = f":{mark.line + 1}" if mark is not None else ""
            raise DataError(f"{path}{line}: not valid YAML ({exc})") from exc
        if not isinstance(doc, dict) or not isinstance(doc.get("conversations"), list):
            raise DataError(f"{path}: expected a mapping with a 'conversations' list")
        cats = doc.get("categories") or [path.stem]
        domain = str(cats[0]) if isinstance(cats, list) else str(cats)
        for i, conv in enumerate(doc["conversations"]):
            if not isinstance(conv, list) or not all(isinstance(u, str) for u in conv):
                msg = f"{path}: conversation {i} is not a list of strings"
                if strict:
                    raise DataError(msg)
                log.warning("skipped %s", msg)
                continue
            utts = [u for u in conv if u.strip()]
            if not utts:
                continue
            dialogues.append(
                Dialogue(
                    dialogue_id=f"chatterbot-{path.stem}-{i}",
                    utterances=tuple(utts),
                    speakers=tuple("AB"[j % 2] for j in range(len(utts))),
                    domain=domain,
                    source="chatterbot",
                )
            )
    return dialogues
