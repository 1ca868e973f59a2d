"""Reading and writing examples and ranking queries as Parquet (open format, atomic writes), and reading text files.

Every read error is a :class:`DataError` naming the file (and, for text, the line and column
of the first byte that is not UTF-8).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from ..runs import atomic_path, decode_error_position
from .schema import DataError, Example, RankingQuery

__all__ = ["write_queries", "read_queries", "write_examples", "read_examples", "read_utf8"]

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


def _read(path: str | os.PathLike, schema: pa.Schema) -> pa.Table:
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file")
    try:
        table = pq.read_table(path)
    except (pa.ArrowInvalid, OSError) as exc:
        raise DataError(f"{path}: not a readable Parquet file ({exc})") from exc
    missing = [n for n in schema.names if n not in table.column_names]
    if missing:
        raise DataError(f"{path}: missing columns {missing}; expected {schema.names}")
    return table


def write_queries(path: str | os.PathLike, queries: Sequence[RankingQuery]) -> Path:
    """Write ranking queries to ``path`` (Parquet), atomically."""
    table = pa.table(
        {
            "qid": [q.qid for q in queries],
            "context": [list(q.context) for q in queries],
            "candidates": [list(q.candidates) for q in queries],
            "labels": [list(q.labels) for q in queries],
        },
        schema=_QUERY_SCHEMA,
    )
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp)
    return Path(path)


def read_queries(path: str | os.PathLike) -> list[RankingQuery]:
    cols = _read(path, _QUERY_SCHEMA).to_pydict()
    return [
        RankingQuery(qid=q, context=tuple(c), candidates=tuple(k), labels=tuple(lab))
        for q, c, k, lab in zip(cols["qid"], cols["context"], cols["candidates"], cols["labels"])
    ]


def write_examples(path: str | os.PathLike, examples: Sequence[Example]) -> Path:
    """Write (context, true response) examples to ``path`` (Parquet), atomically."""
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
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp)
    return Path(path)


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
