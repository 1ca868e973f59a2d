"""Score tables (CSV, TSV, Parquet, JSONL) and DataFrames: one row per (qid, docid) with its score.

Columns: ``qid``, ``docid``, ``score``; ``label`` (integer grade, empty = unjudged) unless qrels
judge the rows; optional ``sample``, one value per sample, each holding the same pairs. Any other
column is an error. Ids are strings (``007`` stays). The format follows the suffix; arrow reads
each, and a problem is looked up row by row only to name its line.
"""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv
import pyarrow.json as pj
import pyarrow.parquet as pq

from .inputs import Locate, Qrels, Rows, assemble, check_kind, check_relevant_at, factorize, to_str_array
from .scored import AssessError, ScoredRun
from .trec import line_locator, read_qrels

__all__ = ["read_table", "from_dataframe", "TABLE_COLUMNS", "TABLE_FORMATS"]

TABLE_COLUMNS = ("qid", "docid", "score", "label", "sample")
TABLE_FORMATS = {".csv": "csv", ".tsv": "tsv", ".tab": "tsv", ".parquet": "parquet", ".pq": "parquet",
                 ".jsonl": "jsonl", ".ndjson": "jsonl"}
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
                return (f"{path}, line {start}: {len(record)} fields; expected {len(header)} "
                        f"(the header names {', '.join(header)})")
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
                raise AssessError(f"{path}, line {n}: not JSON ({exc.msg}); expected one JSON object per line") from None
            if not isinstance(rec, dict):
                raise AssessError(f"{path}, line {n}: a JSON {type(rec).__name__}; expected an object with "
                                  f"{', '.join(TABLE_COLUMNS[:3])}, ...")
            records.append({k: (str(v) if k in _IDS and v is not None else v) for k, v in rec.items()})
    return records


def _read(path: Path) -> tuple[pa.Table, Locate, str]:
    fmt = TABLE_FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise AssessError(f"{path}: unknown table format {path.suffix!r}; expected one of {', '.join(TABLE_FORMATS)}")
    if not path.is_file():
        raise AssessError(f"{path}: no such file; expected a {fmt} table")
    if fmt in ("csv", "tsv"):
        delimiter = "," if fmt == "csv" else "\t"
        try:
            table = pcsv.read_csv(path, parse_options=pcsv.ParseOptions(delimiter=delimiter),
                                  convert_options=pcsv.ConvertOptions(column_types=_IDS, strings_can_be_null=False))
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
            raise AssessError(f"{path}: the lines do not form one table ({exc}); expected the same types on every line") from None
    return table, line_locator(path), fmt


def _numbers(table: pa.Table, column: str, locate: Locate, name: str, *, nulls_as_nan: bool) -> np.ndarray:
    """A numeric column as float64; an error at the first row that holds no number (or a null, unless allowed)."""
    col = table[column]
    if pa.types.is_boolean(col.type) or pa.types.is_integer(col.type) or pa.types.is_floating(col.type) or pa.types.is_null(col.type):
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
                    raise AssessError(f"{locate([i])[0]}: {column} {v!r} is not a number; expected a number") from None
            raise AssessError(f"{name}: column {column} of type {col.type} is not numeric") from None
    if values.null_count and not nulls_as_nan:
        i = int(np.flatnonzero(values.is_null().to_numpy(zero_copy_only=False))[0])
        raise AssessError(f"{locate([i])[0]}: {column} is missing; expected a number")
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


def _from_arrow(table: pa.Table, locate: Locate, name: str, fmt: str, *, qrels: Qrels | str | os.PathLike | None,
                kind: Any, relevant_at: Any) -> ScoredRun:
    kind = check_kind(kind)
    relevant_at = check_relevant_at(relevant_at)
    columns = list(table.column_names)
    unknown = [c for c in columns if c not in TABLE_COLUMNS]
    if unknown:
        raise AssessError(f"{name}: unknown column {unknown[0]!r}; expected qid, docid, score, and label (unless qrels are "
                          "given) and optionally sample")
    missing = [c for c in ("qid", "docid", "score") if c not in columns]
    if missing:
        raise AssessError(f"{name}: no {missing[0]!r} column; expected qid, docid, score")
    if len(set(columns)) != len(columns):
        raise AssessError(f"{name}: a column is named twice ({columns})")
    if "label" in columns and qrels is not None:
        raise AssessError(f"{name}: has a label column and qrels were given too; expected one source of judgments")
    if "label" not in columns and qrels is None:
        raise AssessError(f"{name}: no label column and no qrels; expected one of them to judge the rows")
    if table.num_rows == 0:
        raise AssessError(f"{name}: no rows; expected at least one (qid, docid, score)")
    if qrels is not None and not isinstance(qrels, Qrels):
        qrels = read_qrels(qrels)
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
        samples.append(Rows(name if value is None else f"{name} (sample {value})", qcode, qnames, to_str_array(sub_d),
                            score if idx is None else score[idx], where, label=label_s))
    meta = {"ranker": Path(name).stem if fmt != "dataframe" else "dataframe", "format": fmt}
    if "sample" in columns:
        meta["samples"] = [v for v, _ in groups]
    return assemble(samples, qrels, kind=kind, relevant_at=relevant_at, source=name, meta=meta)


def read_table(path: str | os.PathLike, *, qrels: Qrels | str | os.PathLike | None = None, kind: Any,
               relevant_at: int = 1) -> ScoredRun:
    """A score table (CSV, TSV, Parquet or JSONL, by suffix) as a :class:`ScoredRun`.

    ``qrels`` (a :class:`Qrels` or a TREC qrels file) judge the rows when the table has no
    label column; ``kind`` says what a score is (``probability``, ``logit``, ``score``).
    """
    path = Path(path)
    table, locate, fmt = _read(path)
    return _from_arrow(table, locate, str(path), fmt, qrels=qrels, kind=kind, relevant_at=relevant_at)


def from_dataframe(df: Any, *, kind: Any, relevant_at: int = 1, qrels: Qrels | str | os.PathLike | None = None) -> ScoredRun:
    """A pandas DataFrame with columns qid, docid, score, label (or ``qrels``) [, sample] as a :class:`ScoredRun`.

    Rows are named by position (``df.iloc[i]``) in messages; the index is ignored.
    """
    try:
        table = pa.Table.from_pandas(df, preserve_index=False)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise AssessError(f"dataframe: a column mixes types ({exc}); expected str ids and numeric score and label") from None
    return _from_arrow(table, lambda rows: [f"dataframe row {int(r)} (df.iloc[{int(r)}])" for r in rows], "dataframe",
                       "dataframe", qrels=qrels, kind=kind, relevant_at=relevant_at)
