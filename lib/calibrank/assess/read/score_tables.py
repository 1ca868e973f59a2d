"""Score tables (CSV, TSV, Parquet, JSONL), DataFrames and ranx objects: one row per (qid, docid) with its score.

Columns: ``qid``, ``docid``, ``score``; ``label`` (integer grade, empty = unjudged) unless qrels
judge the rows; optional ``sample``, one value per sample, each holding the same pairs. Any other
column is an error. ir_measures' names are read as ours (``query_id``, ``doc_id``, ``relevance``;
ranx's ``q_id`` too), so ``pd.DataFrame(ir_measures.read_trec_run(...))`` is a run and a frame
with ``relevance`` judges itself. Ids are strings (``007`` stays). The format follows the suffix;
arrow reads each, and a problem is looked up row by row only to name its line. ranx's ``Run`` and
``Qrels`` are read through their ``to_dataframe`` (ranx itself is never imported here).
"""

from __future__ import annotations

import csv
import json
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv
import pyarrow.json as pj
import pyarrow.parquet as pq

from calibrank.assess.read.rows import (
    Locate,
    Qrels,
    Rows,
    assemble,
    check_kind,
    check_relevant_at,
    factorize,
    first_duplicate,
    to_str_array,
    two_places,
)
from calibrank.assess.read.scored import AssessError, ScoredRun, plain
from calibrank.assess.read.trec import line_locator, read_qrels

__all__ = [
    "read_table",
    "from_arrays",
    "from_dataframe",
    "from_ir_measures",
    "from_ranx",
    "as_qrels",
    "is_frame",
    "is_ranx",
    "qrels_from_dataframe",
    "TABLE_COLUMNS",
    "TABLE_FORMATS",
]

TABLE_COLUMNS = ("qid", "docid", "score", "label", "sample")
# ir_measures' names (and ranx's q_id) for ours: a run or qrels DataFrame of either library reads as is
ALIASES = {"query_id": "qid", "q_id": "qid", "doc_id": "docid", "relevance": "label"}
QRELS_COLUMNS = ("qid", "docid", "relevance")
_QRELS_IGNORED = ("iteration", "iter")  # ir_measures' Qrel tuples carry the qrels file's second column
TABLE_FORMATS = {
    ".csv": "csv",
    ".tsv": "tsv",
    ".tab": "tsv",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
}
_IDS = {"qid": pa.string(), "docid": pa.string()}


def _csv_locator(path: Path, delimiter: str) -> Locate:
    """``locate(rows)``: "path, line N" of data rows (the header is line 1; blank lines hold no row)."""

    def locate(rows):
        want, found = {int(r) for r in rows}, {}
        with open(path, newline="", encoding="utf-8", errors="replace") as f:
            reader = csv.reader(f, delimiter=delimiter)
            next(reader, None)
            row = -1
            start = reader.line_num + 1
            for record in reader:
                if record:
                    row += 1
                    if row in want:
                        found[row] = start
                        if len(found) == len(want):
                            break
                start = reader.line_num + 1
        return [f"{path}, line {found[r]}" if r in found else f"{path}, row {r}" for r in map(int, rows)]

    return locate


def _csv_first_bad_line(path: Path, delimiter: str) -> str | None:
    with open(path, newline="", encoding="utf-8", errors="replace") as f:
        reader = csv.reader(f, delimiter=delimiter)
        header = next(reader, None)
        if not header:
            return f"{path}: empty; expected a header line naming the columns ({', '.join(TABLE_COLUMNS[:3])}, ...)"
        start = reader.line_num + 1
        for record in reader:
            if record and len(record) != len(header):
                return (
                    f"{path}, line {start}: {len(record)} fields; expected {len(header)} "
                    f"(the header names {', '.join(header)})"
                )
            start = reader.line_num + 1
    return None


def _jsonl_rows(path: Path) -> list[dict[str, Any]]:
    """The records of a JSONL file, read line by line (after arrow refused it): an error names the first bad line."""
    records = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                raise AssessError(
                    f"{path}, line {n}: not JSON ({exc.msg}); expected one JSON object per line"
                ) from None
            if not isinstance(rec, dict):
                raise AssessError(
                    f"{path}, line {n}: a JSON {type(rec).__name__}; expected an object with "
                    f"{', '.join(TABLE_COLUMNS[:3])}, ..."
                )
            records.append({k: (str(v) if k in _IDS and v is not None else v) for k, v in rec.items()})
    return records


_EXPECTED = {
    "csv": "a header line naming the columns (qid, docid, score, ...), then one line per (qid, docid)",
    "tsv": "a header line naming the columns (qid, docid, score, ...), then one line per (qid, docid)",
    "parquet": "a Parquet table with columns qid, docid, score, ...",
    "jsonl": "one JSON object per line with qid, docid, score, ...",
}


def _is_blank(path: Path) -> bool:
    """The file holds nothing but blanks (read until its first other byte)."""
    with open(path, "rb") as f:
        while chunk := f.read(1 << 16):
            if chunk.strip():
                return False
    return True


def _read(path: Path) -> tuple[pa.Table, Locate, str]:
    fmt = TABLE_FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise AssessError(f"{path}: unknown table format {path.suffix!r}; expected one of {', '.join(TABLE_FORMATS)}")
    if not path.is_file():
        raise AssessError(f"{path}: no such file; expected a {fmt} table")
    if _is_blank(path):
        raise AssessError(f"{path}: the file is empty; expected {_EXPECTED[fmt]}")
    if fmt in ("csv", "tsv"):
        delimiter = "," if fmt == "csv" else "\t"
        try:
            table = pcsv.read_csv(
                path,
                parse_options=pcsv.ParseOptions(delimiter=delimiter),
                convert_options=pcsv.ConvertOptions(column_types=_IDS, strings_can_be_null=False),
            )
        except pa.ArrowInvalid as exc:
            raise AssessError(_csv_first_bad_line(path, delimiter) or f"{path}: {exc}") from None
        return table, _csv_locator(path, delimiter), fmt
    if fmt == "parquet":
        try:
            table = pq.read_table(path)
        except (pa.ArrowInvalid, OSError) as exc:
            raise AssessError(f"{path}: not a Parquet table ({exc})") from None
        return table, lambda rows: [f"{path}, row {int(r)}" for r in rows], fmt
    try:
        table = pj.read_json(path)
    except pa.ArrowInvalid:
        records = _jsonl_rows(path)
        try:
            table = pa.Table.from_pylist(records)
        except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            raise AssessError(
                f"{path}: the lines do not form one table ({exc}); expected the same types on every line"
            ) from None
    return table, line_locator(path), fmt


def _numbers(table: pa.Table, column: str, locate: Locate, name: str, *, nulls_as_nan: bool) -> np.ndarray:
    """A numeric column as float64; an error at the first row that holds no number (or a null, unless allowed)."""
    col = table[column]
    if (
        pa.types.is_boolean(col.type)
        or pa.types.is_integer(col.type)
        or pa.types.is_floating(col.type)
        or pa.types.is_null(col.type)
    ):
        values = pc.cast(col, pa.float64())
    else:
        try:
            values = pc.cast(col, pa.float64())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            for i, v in enumerate(col.to_pylist()):
                try:
                    float(v)
                except (TypeError, ValueError):
                    if (v is None or v == "") and nulls_as_nan:
                        continue
                    raise AssessError(
                        f"{locate([i])[0]}: {column} {plain(v)!r} is not a number; expected a number"
                    ) from None
            raise AssessError(f"{name}: column {column} of type {col.type} is not numeric") from None
    if values.null_count and not nulls_as_nan:
        i = int(np.flatnonzero(values.is_null().to_numpy(zero_copy_only=False))[0])
        raise AssessError(f"{locate([i])[0]}: {column} is missing (empty, NaN or None); expected a number")
    return values.to_numpy(zero_copy_only=False).astype(np.float64)


def _ids(table: pa.Table, column: str, locate: Locate) -> pa.Array:
    col = table[column].combine_chunks() if isinstance(table[column], pa.ChunkedArray) else table[column]
    if not (pa.types.is_string(col.type) or pa.types.is_large_string(col.type)):
        if pa.types.is_floating(col.type):
            raise AssessError(f"{locate([0])[0]}: {column} is a float column; expected string (or integer) ids")
        try:
            col = pc.cast(col, pa.string())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            raise AssessError(f"{locate([0])[0]}: {column} of type {col.type}; expected string ids") from None
    if col.null_count:
        i = int(np.flatnonzero(col.is_null().to_numpy(zero_copy_only=False))[0])
        raise AssessError(f"{locate([i])[0]}: {column} is missing; expected an id")
    return col


def _renamed(table: pa.Table, name: str, aliases: Mapping[str, str | None]) -> pa.Table:
    """``table`` with ``aliases`` read as our column names (None: dropped); two columns for one name are an error."""
    given = list(table.column_names)
    ours = [aliases.get(c, c) for c in given]
    for c in set(o for o in ours if o is not None):
        both = [g for g, o in zip(given, ours) if o == c]
        if len(both) > 1:
            raise AssessError(f"{name}: columns {' and '.join(map(repr, both))} both name the {c}; expected one")
    keep = [i for i, o in enumerate(ours) if o is not None]
    return table.select(keep).rename_columns([ours[i] for i in keep])


def _from_arrow(
    table: pa.Table,
    locate: Locate,
    name: str,
    fmt: str,
    *,
    qrels: Any,
    kind: Any,
    relevant_at: Any,
    ranker: str | None = None,
) -> ScoredRun:
    kind = check_kind(kind)
    relevant_at = check_relevant_at(relevant_at)
    if len(set(table.column_names)) != len(table.column_names):
        raise AssessError(f"{name}: a column is named twice ({table.column_names})")
    table = _renamed(table, name, ALIASES)
    columns = list(table.column_names)
    unknown = [c for c in columns if c not in TABLE_COLUMNS]
    if unknown:
        raise AssessError(
            f"{name}: unknown column {unknown[0]!r}; expected qid, docid, score, and label (unless qrels are "
            "given) and optionally sample (or ir_measures' query_id, doc_id, score, relevance)"
        )
    missing = [c for c in ("qid", "docid", "score") if c not in columns]
    if missing:
        raise AssessError(
            f"{name}: no {missing[0]!r} column; expected qid, docid, score (or ir_measures' query_id, doc_id, score)"
        )
    if "label" in columns and qrels is not None:
        raise AssessError(f"{name}: has a label column and qrels were given too; expected one source of judgments")
    if "label" not in columns and qrels is None:
        raise AssessError(f"{name}: no label column and no qrels; expected one of them to judge the rows")
    if table.num_rows == 0:
        raise AssessError(f"{name}: no rows; expected at least one (qid, docid, score)")
    qrels = as_qrels(qrels)
    qid, docid = _ids(table, "qid", locate), _ids(table, "docid", locate)
    score = _numbers(table, "score", locate, name, nulls_as_nan=False)
    label = _numbers(table, "label", locate, name, nulls_as_nan=True) if "label" in columns else None
    groups: list[tuple[Any, np.ndarray | None]] = [(None, None)]
    if "sample" in columns:
        col = table["sample"]
        if col.null_count:
            i = int(np.flatnonzero(col.is_null().to_numpy(zero_copy_only=False))[0])
            raise AssessError(f"{locate([i])[0]}: sample is missing; expected a sample id on every row")
        values = col.to_numpy(zero_copy_only=False)
        distinct = sorted(set(values.tolist()))
        groups = [(v, np.flatnonzero(values == v)) for v in distinct]
    samples = []
    for value, idx in groups:
        sub_q, sub_d = (qid, docid) if idx is None else (qid.take(pa.array(idx)), docid.take(pa.array(idx)))
        qcode, qnames = factorize(sub_q)
        where = locate if idx is None else (lambda rows, idx=idx: locate([int(idx[r]) for r in rows]))
        label_s = None if label is None else (label if idx is None else label[idx])
        samples.append(
            Rows(
                name if value is None else f"{name} (sample {value})",
                qcode,
                qnames,
                sub_d,
                score if idx is None else score[idx],
                where,
                label=label_s,
            )
        )
    meta: dict[str, Any] = {"ranker": ranker or (Path(name).stem if fmt != "dataframe" else name), "format": fmt}
    if "sample" in columns:
        meta["samples"] = [v for v, _ in groups]
    return assemble(samples, qrels, kind=kind, relevant_at=relevant_at, source=name, meta=meta)


def read_table(
    path: str | os.PathLike, *, qrels: Qrels | str | os.PathLike | None = None, kind: Any, relevant_at: int = 1
) -> ScoredRun:
    r"""Read a score table (CSV, TSV, Parquet or JSONL, by suffix) as a :class:`ScoredRun`.

    One row per (qid, docid): columns ``qid``, ``docid``, ``score``, ``label`` (an integer grade,
    empty = unjudged) unless ``qrels`` judge the rows, and optionally ``sample``. Ids stay
    strings (``007`` stays); a bad row is one :class:`AssessError` naming its line.

    Parameters
    ----------
    path : str or os.PathLike
        The table; its suffix says the format.
    qrels : Qrels, str or os.PathLike, default=None
        Judgments (or a TREC qrels file) for a table without a ``label`` column.
    kind : {"score", "logit", "probability"}
        What a score is.
    relevant_at : int, default=1
        The lowest grade that counts as relevant.

    Returns
    -------
    ScoredRun

    Examples
    --------
    >>> import pathlib, tempfile
    >>> tmp = tempfile.TemporaryDirectory()
    >>> path = pathlib.Path(tmp.name, "scores.csv")
    >>> _ = path.write_text("qid,docid,score,label\nq1,d1,0.9,1\nq1,d2,0.2,0\nq2,d3,0.4,0\nq2,d4,0.1,\n")
    >>> run = read_table(path, kind="probability")
    >>> run.labels.tolist(), run.judged.tolist()
    ([[1, 0], [0, 0]], [[True, True], [True, False]])
    >>> tmp.cleanup()
    """
    path = Path(path)
    table, locate, fmt = _read(path)
    return _from_arrow(table, locate, str(path), fmt, qrels=qrels, kind=kind, relevant_at=relevant_at)


def is_frame(obj: Any) -> bool:
    """``obj`` is a pandas DataFrame (pandas is imported only if the caller already did)."""
    pd = sys.modules.get("pandas")
    return pd is not None and isinstance(obj, pd.DataFrame)


def is_ranx(obj: Any, what: str) -> bool:
    """``obj`` is ranx's ``Run`` or ``Qrels`` (told by its class, so that ranx need not be importable)."""
    cls = type(obj)
    return cls.__module__.split(".")[0] == "ranx" and cls.__name__ == what and hasattr(obj, "to_dataframe")


def _frame_locator(name: str) -> Locate:
    label = "df" if name == "dataframe" else name
    return lambda rows: [f"{name} row {int(r)} ({label}.iloc[{int(r)}])" for r in rows]


def _arrow_of(df: Any, name: str) -> pa.Table:
    try:
        return pa.Table.from_pandas(df, preserve_index=False)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise AssessError(
            f"{name}: a column mixes types ({exc}); expected str ids and numeric scores and grades"
        ) from None


def from_dataframe(
    df: Any, *, kind: Any, relevant_at: int = 1, qrels: Any = None, name: str = "dataframe", ranker: str | None = None
) -> ScoredRun:
    """Read a pandas DataFrame of scores as a :class:`ScoredRun`.

    Columns ``qid``, ``docid``, ``score``, ``label`` (or ``qrels``) and optionally ``sample``;
    ir_measures' names (``query_id``, ``doc_id``, ``score``, ``relevance``) are read as ours, so
    ``pd.DataFrame(ir_measures.read_trec_run(...))`` is a run. Rows are named by position
    (``df.iloc[i]``) in messages, after ``name``; the index is ignored.

    Parameters
    ----------
    df : pandas.DataFrame
        One row per (qid, docid).
    kind : {"score", "logit", "probability"}
        What a score is.
    relevant_at : int, default=1
        The lowest grade that counts as relevant.
    qrels : Qrels, path, DataFrame, ranx Qrels or dict, default=None
        Judgments for a frame without a label column (:func:`as_qrels`).
    name : str, default="dataframe"
        How messages and the report name the frame.
    ranker : str, default=None
        The ranker's name (default: ``name``).

    Returns
    -------
    ScoredRun

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"query_id": ["q1", "q1", "q2"], "doc_id": ["d1", "d2", "d3"],
    ...                    "score": [2.1, -0.3, 0.8], "relevance": [1, 0, 2]})
    >>> run = from_dataframe(df, kind="logit")
    >>> run.qids.tolist(), run.relevance.tolist()
    (['q1', 'q2'], [[1, 0], [2, 0]])
    """
    return _from_arrow(
        _arrow_of(df, name),
        _frame_locator(name),
        name,
        "dataframe",
        qrels=qrels,
        kind=kind,
        relevant_at=relevant_at,
        ranker=ranker,
    )


def from_ranx(run: Any, *, kind: Any, relevant_at: int = 1, qrels: Any = None, name: str = "run") -> ScoredRun:
    """Read ranx's ``Run`` as a :class:`ScoredRun` judged by ``qrels``.

    Read through the run's ``to_dataframe`` (ranx itself is never imported here); the run's
    name becomes the ranker's.

    Parameters
    ----------
    run : ranx.Run
        The ranker's scores.
    kind : {"score", "logit", "probability"}
        What a score is.
    relevant_at : int, default=1
        The lowest grade that counts as relevant.
    qrels : ranx.Qrels, Qrels, path, DataFrame or dict, default=None
        The judgments (:func:`as_qrels`).
    name : str, default="run"
        How messages name the run.

    Returns
    -------
    ScoredRun

    Examples
    --------
    >>> from ranx import Qrels, Run
    >>> run = Run({"q1": {"d1": 2.1, "d2": -0.3}, "q2": {"d3": 0.8}}, name="bm25")
    >>> qrels = Qrels({"q1": {"d1": 1}, "q2": {"d3": 1}})
    >>> scored = from_ranx(run, kind="score", qrels=qrels)
    >>> scored.meta["ranker"], scored.labels.tolist()
    ('bm25', [[1, 0], [1, 0]])
    """
    if not is_ranx(run, "Run"):
        raise AssessError(f"{name}: expected a ranx Run, got {type(run).__name__}")
    frame = run.to_dataframe()
    return from_dataframe(
        frame, kind=kind, relevant_at=relevant_at, qrels=qrels, name=name, ranker=getattr(run, "name", None) or None
    )


def _array(values: Any, what: str) -> np.ndarray:
    try:
        arr = np.asarray(values)
    except (TypeError, ValueError) as exc:
        raise AssessError(f"{what}: expected an array or a list, got {type(values).__name__} ({exc})") from None
    if arr.dtype == object and arr.ndim == 1 and len(arr) and isinstance(arr[0], (list, tuple, np.ndarray)):
        raise AssessError(f"{what}: rows of unequal length; expected an array of shape (N,)")
    return arr


def from_arrays(
    scores: Any,
    relevance: Any,
    query_ids: Any,
    docids: Any = None,
    *,
    kind: Any,
    relevant_at: int = 1,
    name: str = "arrays",
) -> ScoredRun:
    """Read scores, grades and query ids (one entry per candidate) as a :class:`ScoredRun`.

    ``scores`` of shape ``(N,)``, or ``(S, N)`` for ``S`` samples of each score (MC Dropout passes, ensemble
    members); ``docids`` default to the candidate's position in its query. Entries are named ``scores[i]`` in
    messages.

    Parameters
    ----------
    scores : array-like of shape (N,) or (S, N)
        Raw scores.
    relevance : array-like of int, shape (N,)
        Grades (0 non-relevant; see ``relevant_at``).
    query_ids : array-like of shape (N,)
        The query of each candidate (read as strings).
    docids : array-like of shape (N,), default=None
        Candidate ids (read as strings), unique within a query.
    kind : {"score", "logit", "probability"}
        What a score is.
    relevant_at : int, default=1
        The lowest grade that counts as relevant.
    name : str, default="arrays"
        How messages and the report name the input.

    Returns
    -------
    ScoredRun

    Examples
    --------
    >>> run = from_arrays([2.1, -0.3, 0.8], [1, 0, 1], ["q1", "q1", "q2"], kind="logit")
    >>> run.qids.tolist(), run.labels.tolist()
    (['q1', 'q2'], [[1, 0], [1, 0]])
    """
    s = _array(scores, "scores")
    if s.ndim not in (1, 2):
        raise AssessError(f"scores: expected shape (N,) or (S, N), got {s.shape}")
    n = s.shape[-1]
    y, q = _array(relevance, "relevance"), _array(query_ids, "query_ids")
    for what, arr in (("relevance", y), ("query_ids", q)):
        if arr.shape != (n,):
            raise AssessError(f"{what}: expected shape ({n},), the candidates of scores, got {arr.shape}")
    if s.dtype.kind not in "iuf" or y.dtype.kind not in "iufb":
        bad = "scores" if s.dtype.kind not in "iuf" else "relevance"
        raise AssessError(f"{bad}: expected numbers, got dtype {(s if bad == 'scores' else y).dtype}")
    q = q.astype(str)
    if docids is None:
        _, first = np.unique(q, return_inverse=True)
        order = np.argsort(first, kind="stable")
        pos = np.empty(n, dtype=np.int64)
        counts = np.bincount(first)
        pos[order] = np.arange(n) - np.repeat(np.cumsum(counts) - counts, counts)
        d = pos.astype(str)
    else:
        d = _array(docids, "docids")
        if d.shape != (n,):
            raise AssessError(f"docids: expected shape ({n},), the candidates of scores, got {d.shape}")
        d = d.astype(str)
    samples = s[None] if s.ndim == 1 else s
    columns: dict[str, Any] = {
        "qid": np.tile(q, len(samples)),
        "docid": np.tile(d, len(samples)),
        "score": samples.reshape(-1).astype(np.float64),
        "label": np.tile(y.astype(np.float64), len(samples)),
    }
    if s.ndim == 2:
        columns["sample"] = np.repeat(np.arange(len(samples)), n)

    def locate(rows: Sequence[int]) -> list[str]:
        return [f"scores[{int(r) % n}]" if s.ndim == 1 else f"scores[{int(r) // n}, {int(r) % n}]" for r in rows]

    return _from_arrow(pa.table(columns), locate, name, "arrays", qrels=None, kind=kind, relevant_at=relevant_at)


def is_ir_measures(obj: Any, fields: tuple[str, ...]) -> bool:
    """``obj`` is a list of ir_measures' named tuples (``ScoredDoc`` or ``Qrel``), told by their fields."""
    first = obj[0] if isinstance(obj, (list, tuple)) and obj else None
    return first is not None and all(hasattr(first, f) for f in fields)


def from_ir_measures(run: Any, qrels: Any, *, kind: Any, relevant_at: int = 1, name: str = "run") -> ScoredRun:
    """Read ir_measures' ``ScoredDoc`` tuples judged by its ``Qrel`` tuples as a :class:`ScoredRun`.

    Parameters
    ----------
    run : list of ScoredDoc
        ``(query_id, doc_id, score)`` tuples (``list(ir_measures.read_trec_run(path))``).
    qrels : list of Qrel
        ``(query_id, doc_id, relevance, iteration)`` tuples.
    kind : {"score", "logit", "probability"}
        What a score is.
    relevant_at : int, default=1
        The lowest grade that counts as relevant.
    name : str, default="run"
        How messages name the run.

    Returns
    -------
    ScoredRun

    Examples
    --------
    >>> from collections import namedtuple
    >>> ScoredDoc = namedtuple("ScoredDoc", "query_id doc_id score")
    >>> Qrel = namedtuple("Qrel", "query_id doc_id relevance iteration")
    >>> run = [ScoredDoc("q1", "d1", 2.0), ScoredDoc("q1", "d2", 0.5), ScoredDoc("q2", "d3", 1.0)]
    >>> qrels = [Qrel("q1", "d1", 1, "0"), Qrel("q2", "d3", 2, "0")]
    >>> from_ir_measures(run, qrels, kind="score").labels.tolist()
    [[1, 0], [1, 0]]
    """
    if not is_ir_measures(run, ("query_id", "doc_id", "score")):
        raise AssessError(f"{name}: expected a non-empty list of ir_measures ScoredDoc (query_id, doc_id, score)")
    if not is_ir_measures(qrels, ("query_id", "doc_id", "relevance")):
        raise AssessError("qrels: expected a non-empty list of ir_measures Qrel (query_id, doc_id, relevance)")
    table = pa.table(
        {
            "qid": [str(r.query_id) for r in run],
            "docid": [str(r.doc_id) for r in run],
            "score": np.asarray([r.score for r in run], dtype=np.float64),
        }
    )
    judged = Qrels(
        np.asarray([str(r.query_id) for r in qrels]),
        np.asarray([str(r.doc_id) for r in qrels]),
        np.asarray([r.relevance for r in qrels]),
        source="qrels",
    )
    return _from_arrow(
        table,
        lambda rows: [f"{name}[{int(r)}]" for r in rows],
        name,
        "ir_measures",
        qrels=judged,
        kind=kind,
        relevant_at=relevant_at,
    )


def qrels_from_dataframe(df: Any, *, name: str = "qrels") -> Qrels:
    """Judgments from a DataFrame with columns query_id, doc_id, relevance (ir_measures' names; or qid, docid).

    The same checks as a qrels file: ids present, integer grades, each (qid, docid) judged once.
    """
    locate = _frame_locator(name)
    table = _arrow_of(df, name)
    if len(set(table.column_names)) != len(table.column_names):
        raise AssessError(f"{name}: a column is named twice ({table.column_names})")
    table = _renamed(
        table, name, {**ALIASES, "relevance": "relevance", "label": "relevance", **{c: None for c in _QRELS_IGNORED}}
    )
    unknown = [c for c in table.column_names if c not in QRELS_COLUMNS]
    if unknown:
        raise AssessError(
            f"{name}: unknown column {unknown[0]!r}; expected query_id, doc_id, relevance (or qid, docid, relevance)"
        )
    missing = [c for c in QRELS_COLUMNS if c not in table.column_names]
    if missing:
        raise AssessError(
            f"{name}: no {missing[0]!r} column; expected query_id, doc_id, relevance (or qid, docid, relevance)"
        )
    if table.num_rows == 0:
        raise AssessError(f"{name}: no rows; expected judgments (query_id, doc_id, relevance)")
    qid, docid = _ids(table, "qid", locate), _ids(table, "docid", locate)
    grade = _numbers(table, "relevance", locate, name, nulls_as_nan=False)
    bad = ~np.isfinite(grade) | (grade != np.round(grade))
    if bad.any():
        i = int(np.argmax(bad))
        raise AssessError(
            f"{locate([i])[0]}: relevance {float(grade[i])} is not an integer grade; expected 0, 1, 2, ..."
        )
    qcode, _ = factorize(qid)
    docids = to_str_array(docid)
    dup = first_duplicate(qcode, docids)
    if dup is not None:
        raise AssessError(
            f"{two_places(*locate(dup))}: (qid {qid[dup[0]].as_py()!r}, docid {str(docids[dup[0]])!r}) "
            "is judged twice; expected one judgment per (qid, docid)"
        )
    return Qrels(to_str_array(qid), docids, grade.astype(np.int64), source=name)


def as_qrels(qrels: Any, name: str = "qrels") -> Qrels | None:
    """Judgments as a :class:`Qrels` from whatever holds them: a ``Qrels``, a TREC qrels file, a DataFrame
    (:func:`qrels_from_dataframe`), ranx's ``Qrels``, or a mapping ``{qid: {docid: grade}}``; None stays None."""
    if qrels is None or isinstance(qrels, Qrels):
        return qrels
    if isinstance(qrels, (str, os.PathLike)):
        return read_qrels(qrels)
    if is_frame(qrels):
        return qrels_from_dataframe(qrels, name=name)
    if is_ranx(qrels, "Qrels"):
        return qrels_from_dataframe(qrels.to_dataframe().rename(columns={"score": "relevance"}), name=name)
    if isinstance(qrels, dict) or hasattr(qrels, "items"):
        rows = [(str(q), str(d), g) for q, docs in qrels.items() for d, g in dict(docs).items()]
        if not rows:
            raise AssessError(f"{name}: no judgments; expected {{qid: {{docid: grade}}}}")
        qids, docids, grades = zip(*rows)
        if any(isinstance(g, bool) or not isinstance(g, (int, np.integer)) for g in grades):
            q, d, g = next(r for r in rows if isinstance(r[2], bool) or not isinstance(r[2], (int, np.integer)))
            raise AssessError(f"{name}[{q!r}][{d!r}]: grade {plain(g)!r}; expected an integer grade")
        return Qrels(np.asarray(qids), np.asarray(docids), np.asarray(grades, dtype=np.int64), source=name)
    raise AssessError(
        f"{name}: expected a qrels file, a DataFrame (query_id, doc_id, relevance), ranx Qrels or "
        f"{{qid: {{docid: grade}}}}, got {type(qrels).__name__}"
    )
