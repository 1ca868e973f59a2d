r"""Reader for MSDialog and MANtIS as distributed by Penha & Hauff (response ranking TSV files).

UTF-8, no header, one candidate per line: ``label \t utt_1 \t ... \t utt_n \t candidate``, a
label-1 row (the true response) followed by its pre-sampled label-0 negatives. Only label-1 rows
become :class:`Example` records (the study samples its own negatives), but every row is checked:
errors are :class:`DataError` naming the file and 1-based line (bad UTF-8, too few columns, a
label not 0/1, a negative whose column count differs from the row before, a last row without
its newline, a blank context or candidate). ``eid`` is ``f"{source}-{split}-L{line}"``; a chain
of label-1 rows whose contexts grow by the previous turn shares one ``dialogue_id``.
"""

from __future__ import annotations

import os
from pathlib import Path

from calibrank.study.data.schema import DataError, Example

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
                raise DataError(
                    f"{path}:{lineno}: not UTF-8 text at column {exc.start + 1} "
                    f"(byte 0x{raw_bytes[exc.start]:02x}); expected a UTF-8 encoded TSV file"
                ) from None
            line = raw.rstrip("\n").rstrip("\r")
            if not line.strip():
                counts["blank_lines"] += 1
                continue
            counts["rows"] += 1
            where = f"{path}:{lineno}"
            if not raw.endswith("\n"):
                raise DataError(
                    f"{where}: the file ends without a newline after this row, so the row may be cut off "
                    f"(an interrupted download or copy?); expected every row to end with a newline"
                )
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
                    raise DataError(
                        f"{where}: expected {row[1]} tab-separated columns like line {row[0]} (a negative "
                        f"repeats the context of the row before it), got {len(cols)}"
                    )
                counts["negatives"] += 1
                continue
            context = tuple(u for u in cols[1:-1] if u.strip())
            if not context:
                raise DataError(f"{where}: empty context; expected at least one non-blank utterance on a label-1 row")
            candidate = cols[-1]
            if not candidate.strip():
                raise DataError(
                    f"{where}: empty candidate; expected the true response in the last column of a label-1 row"
                )
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
