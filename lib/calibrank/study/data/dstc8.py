"""Reader for UDC_DSTC8: DSTC8 track 2 (NOESIS II), subtask 1, Ubuntu (``task-1.ubuntu.*.json``).

One JSON list of examples: ``example-id``, ``messages-so-far`` (the context, oldest first) and
``options-for-correct-answers`` (the true response; when empty the example is dropped and
counted). The study samples its own negatives, so ``options-for-next`` is not read. Speaker
names ``participant_N`` inside utterances are removed, as the first paper's preprocessing does.
The file is parsed one example at a time; errors are :class:`DataError` naming the file and the
example's line, index and id. Example ids must be present, unique and of one type (``7`` and
``"7"`` would give one id).
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

from calibrank.atomic import utf8_error_at
from calibrank.study.data.schema import DataError, Example

__all__ = ["read_dstc8", "strip_speakers"]

_log = logging.getLogger(__name__)
_SPEAKER = re.compile(r"\s*\bparticipant_\d+\b\s*[:,]?\s*")
_WS = re.compile(r"\s+")
_CHUNK = 1 << 20


def strip_speakers(text: str) -> str:
    """``text`` without ``participant_N`` names (and a following ':' or ','), whitespace collapsed."""
    return _WS.sub(" ", _SPEAKER.sub(" ", text)).strip()


def read_dstc8(
    path: str | os.PathLike,
    source: str = "udc_dstc8",
    *,
    split: str = "",
    stats: dict[str, int] | None = None,
) -> list[Example]:
    """The examples of a DSTC8 subtask-1 file that have a correct answer, in file order.

    ``eid`` is ``f"{source}-{split}-{example-id}"``; ``dialogue_id`` is the eid. ``stats``, if given,
    gets the counts ``examples``, ``kept``, ``no_correct_answer`` and ``empty_after_stripping``.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file")
    counts = {"examples": 0, "kept": 0, "no_correct_answer": 0, "empty_after_stripping": 0}
    prefix = f"{source}-{split}-" if split else f"{source}-"
    out: list[Example] = []
    seen: dict[Any, str] = {}  # example-id -> where it was first seen
    try:
        with path.open("r", encoding="utf-8") as handle:
            for index, (line, raw) in enumerate(_iter_json_list(handle, path)):
                counts["examples"] += 1
                _check_id(raw, path, line, index, seen)
                ex = _convert(raw, index, line, path, prefix, counts)
                if ex is not None:
                    out.append(ex)
    except UnicodeDecodeError:
        raise DataError(
            f"{path}: not UTF-8 text at {utf8_error_at(path)}; expected a UTF-8 encoded JSON file"
        ) from None
    counts["kept"] = len(out)
    if counts["no_correct_answer"] or counts["empty_after_stripping"]:
        _log.info(
            "%s: dropped %d examples without a correct answer and %d left empty by speaker stripping",
            path,
            counts["no_correct_answer"],
            counts["empty_after_stripping"],
        )
    if stats is not None:
        stats.update(counts)
    return out


def _check_id(raw: Any, path: Path, line: int, index: int, seen: dict[Any, str]) -> None:
    """Raise unless the example's ``example-id`` is present, a string or an integer like the others, and new."""
    where = f"{path}:{line}: example {index}"
    if not isinstance(raw, dict):
        raise DataError(f"{where}: expected a JSON object, got {type(raw).__name__}")
    if "example-id" not in raw:
        raise DataError(f"{where}: no 'example-id'; expected every example to carry its id")
    eid = raw["example-id"]
    if isinstance(eid, bool) or not isinstance(eid, (str, int)):
        raise DataError(f"{where}: 'example-id' is {eid!r} ({type(eid).__name__}); expected a string or an integer")
    if seen:
        first_id, first_where = next(iter(seen.items()))
        if type(first_id) is not type(eid):
            raise DataError(
                f"{where}: 'example-id' {eid!r} is {type(eid).__name__} but the first example's, "
                f"{first_id!r} ({first_where}), is {type(first_id).__name__}; expected one type throughout "
                f'(7 and "7" would make the same id)'
            )
    if eid in seen:
        raise DataError(f"{where}: duplicate 'example-id' {eid!r}, first seen at {seen[eid]}")
    seen[eid] = f"line {line}, example {index}"


def _convert(raw: Any, index: int, line: int, path: Path, prefix: str, counts: dict[str, int]) -> Example | None:
    eid_raw = raw.get("example-id", "?") if isinstance(raw, dict) else "?"
    where = f"{path}:{line}: example {index} (example-id {eid_raw!r})"
    if not isinstance(raw, dict):
        raise DataError(f"{where}: expected a JSON object, got {type(raw).__name__}")
    messages = raw.get("messages-so-far")
    if not isinstance(messages, list):
        what = "missing" if messages is None else f"a {type(messages).__name__}, not a list"
        raise DataError(f"{where}: 'messages-so-far' is {what}; expected a list of {{speaker, utterance}}")
    answers = raw.get("options-for-correct-answers")
    if not isinstance(answers, list):
        what = "missing" if answers is None else f"a {type(answers).__name__}, not a list"
        raise DataError(f"{where}: 'options-for-correct-answers' is {what}; expected a (possibly empty) list")
    if not answers:
        counts["no_correct_answer"] += 1
        return None
    context = tuple(c for c in (strip_speakers(_utterance(m, where)) for m in messages) if c)
    response = strip_speakers(_utterance(answers[0], where))
    if not context or not response:
        counts["empty_after_stripping"] += 1
        return None
    try:
        return Example(eid=f"{prefix}{eid_raw}", context=context, response=response, dialogue_id=f"{prefix}{eid_raw}")
    except DataError as exc:  # pragma: no cover - emptiness is handled above
        raise DataError(f"{where}: {exc}") from exc


def _utterance(item: Any, where: str) -> str:
    if not isinstance(item, dict) or not isinstance(item.get("utterance"), str):
        raise DataError(f"{where}: expected an object with a string 'utterance', got {str(item)[:80]!r}")
    return item["utterance"]


class _Buffer:
    """A window on a text stream: ``text`` holds the unread part, ``line`` is the line of ``text[0]``."""

    def __init__(self, handle: TextIO, path: Path) -> None:
        self.handle, self.path = handle, path
        self.text, self.line, self.eof = "", 1, False
        self._mark = (0, 1)  # (position in text, its line): line_at counts on from the last position asked

    def more(self, keep_from: int) -> bool:
        """Drop ``text[:keep_from]`` and append a chunk; False at end of file (positions shift by -keep_from)."""
        chunk = self.handle.read(_CHUNK)
        self.line += self.text.count("\n", 0, keep_from)
        self.text = self.text[keep_from:] + chunk
        self.eof = not chunk
        self._mark = (0, self.line)
        return bool(chunk)

    def line_at(self, pos: int) -> int:
        """The line of ``text[pos]``; cheap for increasing positions (as the parser asks)."""
        mark, line = self._mark
        if pos < mark:
            mark, line = 0, self.line
        line += self.text.count("\n", mark, pos)
        self._mark = (pos, line)
        return line

    def skip_ws(self, pos: int) -> int:
        """Position of the next non-whitespace character (``len(text)`` at end of file)."""
        while True:
            while pos < len(self.text) and self.text[pos] in " \t\r\n":
                pos += 1
            if pos < len(self.text):
                return pos
            if not self.more(pos):
                return 0
            pos = 0

    def error(self, pos: int, msg: str) -> DataError:
        return DataError(f"{self.path}:{self.line + self.text.count(chr(10), 0, pos)}: not valid JSON ({msg})")


def _iter_json_list(handle: TextIO, path: Path) -> Iterator[tuple[int, Any]]:
    """Yield ``(line, element)`` for the elements of a top-level JSON list, one by one, reading ``handle`` in chunks."""
    decoder = json.JSONDecoder()
    buf = _Buffer(handle, path)
    pos = buf.skip_ws(0)
    if pos >= len(buf.text):
        raise buf.error(pos, "empty file; expected a JSON list of examples")
    if buf.text[pos] != "[":
        raise DataError(
            f"{path}: top level must be a JSON list of examples, found {buf.text[pos]!r} "
            f"at line {buf.line + buf.text.count(chr(10), 0, pos)}"
        )
    pos = buf.skip_ws(pos + 1)
    if pos < len(buf.text) and buf.text[pos] == "]":
        return
    while True:
        while True:
            try:
                start = pos
                item, pos = decoder.raw_decode(buf.text, pos)
                break
            except json.JSONDecodeError as exc:
                if buf.eof:
                    raise buf.error(exc.pos, exc.msg) from exc
                buf.more(pos)  # the element may run past the chunk read so far
                pos = 0
        yield buf.line_at(start), item
        pos = buf.skip_ws(pos)
        if pos >= len(buf.text):
            raise buf.error(pos, "unexpected end of file; expected ',' or ']'")
        if buf.text[pos] == "]":
            rest = buf.skip_ws(pos + 1)
            if rest < len(buf.text):
                raise buf.error(rest, "extra data after the closing ']'")
            return
        if buf.text[pos] != ",":
            raise buf.error(pos, f"expected ',' or ']' between examples, found {buf.text[pos]!r}")
        pos = buf.skip_ws(pos + 1)
