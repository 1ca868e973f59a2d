"""Reading and writing examples and ranking queries as Parquet (atomic writes), and reading text files.

Every read error is a :class:`DataError` naming the file (for text, the line and column of the
first byte that is not UTF-8). Parquet files get their sha256 recorded beside them and are
checked against it when read (:func:`calibrank.atomic.atomic_recorded`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from calibrank.atomic import DigestMismatch, atomic_recorded, check_recorded, decode_error_position
from calibrank.study.data.schema import DataError, Example, RankingQuery

__all__ = ["write_queries", "read_queries", "write_examples", "read_examples", "read_table", "write_table", "read_utf8"]

_QUERY_SCHEMA = pa.schema(
    [
        ("qid", pa.string()),
        ("context", pa.list_(pa.string())),
        ("candidates", pa.list_(pa.string())),
        ("labels", pa.list_(pa.int8())),
    ]
)
_EXAMPLE_SCHEMA = pa.schema(
    [
        ("eid", pa.string()),
        ("context", pa.list_(pa.string())),
        ("response", pa.string()),
        ("dialogue_id", pa.string()),
        ("domain", pa.string()),
    ]
)


def read_table(path: str | os.PathLike) -> pa.Table:
    """The Parquet table in ``path``, read once: parsed, then checked against the sha256 recorded beside it.

    Raises ``FileNotFoundError`` when there is no file and :class:`DataError` naming it when it is
    not readable Parquet or its bytes are not the recorded ones.
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: no such file") from None
    try:
        table = pq.read_table(pa.BufferReader(data))
    except (pa.ArrowInvalid, OSError) as exc:
        raise DataError(f"{path}: not a readable Parquet file ({exc})") from exc
    try:
        check_recorded(path, data)
    except DigestMismatch as exc:
        raise DataError(str(exc)) from None
    return table


def write_table(path: str | os.PathLike, table: pa.Table) -> Path:
    """Write ``table`` to ``path`` (Parquet) atomically, with its sha256 recorded beside it."""
    with atomic_recorded(path) as tmp:
        pq.write_table(table, tmp)
    return Path(path)


def _read(path: str | os.PathLike, schema: pa.Schema) -> pa.Table:
    table = read_table(path)
    missing = [n for n in schema.names if n not in table.column_names]
    if missing:
        raise DataError(f"{path}: missing columns {missing}; expected {schema.names}")
    return table


def write_queries(path: str | os.PathLike, queries: Sequence[RankingQuery]) -> Path:
    """Write ranking queries to ``path`` (Parquet), atomically, with the sha256 record :func:`read_queries` checks."""
    table = pa.table(
        {
            "qid": [q.qid for q in queries],
            "context": [list(q.context) for q in queries],
            "candidates": [list(q.candidates) for q in queries],
            "labels": [list(q.labels) for q in queries],
        },
        schema=_QUERY_SCHEMA,
    )
    return write_table(path, table)


def read_queries(path: str | os.PathLike) -> list[RankingQuery]:
    cols = _read(path, _QUERY_SCHEMA).to_pydict()
    return [
        RankingQuery(qid=q, context=tuple(c), candidates=tuple(k), labels=tuple(lab))
        for q, c, k, lab in zip(cols["qid"], cols["context"], cols["candidates"], cols["labels"])
    ]


def write_examples(path: str | os.PathLike, examples: Sequence[Example]) -> Path:
    """Write (context, true response) examples to ``path`` (Parquet), atomically, with the sha256 record
    :func:`read_examples` checks."""
    table = pa.table(
        {
            "eid": [e.eid for e in examples],
            "context": [list(e.context) for e in examples],
            "response": [e.response for e in examples],
            "dialogue_id": [e.dialogue_id for e in examples],
            "domain": [e.domain for e in examples],
        },
        schema=_EXAMPLE_SCHEMA,
    )
    return write_table(path, table)


def read_examples(path: str | os.PathLike) -> list[Example]:
    cols = _read(path, _EXAMPLE_SCHEMA).to_pydict()
    return [
        Example(eid=i, context=tuple(c), response=r, dialogue_id=d, domain=dom)
        for i, c, r, d, dom in zip(cols["eid"], cols["context"], cols["response"], cols["dialogue_id"], cols["domain"])
    ]


def read_utf8(path: str | os.PathLike) -> str:
    """The text of a UTF-8 file; bytes that are not UTF-8 raise :class:`DataError` naming the file, line and column."""
    path = Path(path)
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: not UTF-8 text at {decode_error_position(data, exc)}") from None
