"""Reader for MSDialog and MANtIS as distributed by Penha & Hauff (response ranking TSV files).

Format: UTF-8 text, no header, one candidate per line::

    label \\t utt_1 \\t ... \\t utt_n \\t candidate

``label`` is ``1`` for the true response to the context ``utt_1 .. utt_n`` (oldest first) and
``0`` for a pre-sampled negative. Each label-1 row is followed by its negatives (9 in MSDialog
and MANtIS), and successive label-1 rows of one conversation grow their context by the previous
turn: the context of turn k+1 is the context of turn k followed by its true response.

What we keep: only label-1 rows, as :class:`Example` (the study samples its own negatives), but
every row is validated. Blank lines are skipped (e.g. a trailing blank line), a trailing ``\\r``
is removed, and blank context utterances are dropped. Errors raise :class:`DataError` naming the
file and the 1-based line number: bytes that are not UTF-8 (with the column), fewer than 3
columns, a label other than ``0``/``1``, a label-0 row with another number of columns than the
row before it (a negative repeats the context of the row it follows), a last row without its
newline (the file was cut off: the row's last column may be a fragment), and, on a label-1
row, an all-blank context or a blank candidate.

``eid`` is ``f"{source}-{split}-L{line}"``. ``dialogue_id`` is the eid of the first row of a
chain of consecutive label-1 rows in which each row's context starts with the previous row's
context followed by the previous row's response. The file is read as a stream, line by line.
"""

from __future__ import annotations

import os
from pathlib import Path

from .schema import DataError, Example

__all__ = ["read_tsv"]

_LABELS = ("0", "1")


def read_tsv(
    path: str | os.PathLike,
    source: str,
    split: str = "",
    *,
    stats: dict[str, int] | None = None,
) -> list[Example]:
    """The label-1 rows of a response ranking TSV file as examples, in file order.

    ``stats``, if given, is filled with counts: ``rows`` (non-blank lines), ``positives``
    (examples returned), ``negatives`` (label-0 rows dropped) and ``blank_lines`` (skipped).
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file")
    counts = {"rows": 0, "positives": 0, "negatives": 0, "blank_lines": 0}
    examples: list[Example] = []
    prev: Example | None = None
    prev_row: tuple[int, int] | None = None  # (line, columns) of the last non-blank row
    with path.open("rb") as handle:
        for lineno, raw_bytes in enumerate(handle, start=1):
            try:
                raw = raw_bytes.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise DataError(f"{path}:{lineno}: not UTF-8 text at column {exc.start + 1} "
                                f"(byte 0x{raw_bytes[exc.start]:02x}); expected a UTF-8 encoded TSV file") from None
            line = raw.rstrip("\n").rstrip("\r")
            if not line.strip():
                counts["blank_lines"] += 1
                continue
            counts["rows"] += 1
            where = f"{path}:{lineno}"
            if not raw.endswith("\n"):
                raise DataError(f"{where}: the file ends without a newline after this row, so the row may be cut off "
                                f"(an interrupted download or copy?); expected every row to end with a newline")
            cols = line.split("\t")
            if len(cols) < 3:
                raise DataError(
                    f"{where}: expected at least 3 tab-separated columns "
                    f"(label, context utterance(s), candidate), got {len(cols)}"
                )
            label = cols[0]
            if label not in _LABELS:
                raise DataError(f"{where}: expected label '0' or '1' in the first column, got {label[:20]!r}")
            row, prev_row = prev_row, (lineno, len(cols))
            if label == "0":
                if row is not None and row[1] != len(cols):
                    raise DataError(f"{where}: expected {row[1]} tab-separated columns like line {row[0]} (a negative "
                                    f"repeats the context of the row before it), got {len(cols)}")
                counts["negatives"] += 1
                continue
            context = tuple(u for u in cols[1:-1] if u.strip())
            if not context:
                raise DataError(f"{where}: empty context; expected at least one non-blank utterance on a label-1 row")
            candidate = cols[-1]
            if not candidate.strip():
                raise DataError(f"{where}: empty candidate; expected the true response in the last column of a label-1 row")
            eid = f"{source}-{split}-L{lineno}"
            try:
                ex = Example(eid=eid, context=context, response=candidate)
            except DataError as exc:  # pragma: no cover - the checks above catch what Example rejects
                raise DataError(f"{where}: {exc}") from exc
            dialogue_id = eid
            if prev is not None and _continues(prev, ex):
                dialogue_id = prev.dialogue_id
            ex = Example(eid=eid, context=ex.context, response=ex.response, dialogue_id=dialogue_id)
            examples.append(ex)
            prev = ex
    counts["positives"] = len(examples)
    if stats is not None:
        stats.update(counts)
    return examples


def _continues(prev: Example, ex: Example) -> bool:
    """Whether ``ex`` is the next turn of ``prev``'s conversation: its context extends prev's by prev's response."""
    head = prev.context + (prev.response,)
    return len(ex.context) >= len(head) and ex.context[: len(head)] == head
