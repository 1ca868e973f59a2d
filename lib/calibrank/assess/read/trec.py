"""TREC run files (``qid Q0 docid rank score tag``) and qrels (``qid iter docid relevance``).

What ir_measures' ``read_trec_run`` / ``read_trec_qrels`` accept (any blanks between fields,
``.gz`` through gzip), and stricter: scores finite, each (qid, docid) once. Several run files are
samples of one ranker and must hold the same pairs. Scores order, not the rank column (ranks
that disagree warn). Arrow's CSV reader parses the bytes; a bad file is read again line by line
only to name its first bad line.
"""

from __future__ import annotations

import gzip
import io
import os
import re
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv

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
from calibrank.assess.read.scored import AssessError, ScoredRun

__all__ = ["read_qrels", "read_runs", "read_unjudged_runs"]

PathLike = str | os.PathLike

RUN_COLUMNS = ("qid", "Q0", "docid", "rank", "score", "tag")
QRELS_COLUMNS = ("qid", "iter", "docid", "relevance")
_BLANKS = bytes.maketrans(b"\t\r\v\f", b"    ")
_RUNS_OF_SPACES = re.compile(rb" {2,}")


def _read_bytes(path: Path, what: str) -> bytes:
    try:
        data = path.read_bytes()
        return gzip.decompress(data) if path.suffix == ".gz" else data
    except (OSError, EOFError) as exc:
        raise AssessError(
            f"{path}: cannot be read ({getattr(exc, 'strerror', None) or exc}); expected a {what} file"
        ) from None


def _normalised(data: bytes) -> bytes:
    """Blanks as single spaces and no space at either end of a line (line breaks untouched, so line numbers hold)."""
    data = _RUNS_OF_SPACES.sub(b" ", data.translate(_BLANKS))
    return data.replace(b" \n", b"\n").replace(b"\n ", b"\n").strip(b" ")


def _parse(data: bytes, columns: Sequence[str], types: dict[str, pa.DataType]) -> pa.Table | None:
    """The space-separated table (the columns in ``types`` converted), or None if unreadable or a field is empty."""
    if b"  " in data or b" \n" in data or data.endswith(b" "):
        return None
    try:
        table = pcsv.read_csv(
            pa.BufferReader(data),
            read_options=pcsv.ReadOptions(column_names=list(columns), block_size=1 << 24),
            parse_options=pcsv.ParseOptions(delimiter=" ", quote_char=False, double_quote=False),
            convert_options=pcsv.ConvertOptions(
                column_types=types, include_columns=list(types), null_values=[""], strings_can_be_null=True
            ),
        )
    except pa.ArrowInvalid:
        return None
    return None if any(table[c].null_count for c in types) else table


def _first_bad_line(path: Path, data: bytes, columns: Sequence[str], numeric: dict[str, type]) -> str | None:
    """Where and how the first malformed line is wrong (a slow pass, run only after arrow refused the file)."""
    positions = {c: i for i, c in enumerate(columns)}
    for n, line in enumerate(io.BytesIO(data), 1):
        fields = line.split()
        if not fields:
            continue
        if len(fields) != len(columns):
            return (
                f"{path}, line {n}: {len(fields)} whitespace-separated columns; expected {len(columns)} "
                f"({' '.join(columns)})"
            )
        for name, cast in numeric.items():
            text = fields[positions[name]].decode("utf-8", "replace")
            try:
                cast(text)
            except ValueError:
                expected = "an integer grade" if cast is int else "a number"
                return f"{path}, line {n}: {name} {text!r} is not {expected}; expected {expected}"
    return None


def _read_whitespace_table(
    path: Path, what: str, columns: Sequence[str], types: dict[str, pa.DataType], numeric: dict[str, type]
) -> pa.Table:
    data = _read_bytes(path, what)
    if not data or data.isspace():
        raise AssessError(f"{path}: the file is empty; expected lines '{' '.join(columns)}'")
    fast = data.translate(_BLANKS) if any(c in data for c in (b"\t", b"\r", b"\v", b"\f")) else data
    table = _parse(fast, columns, types)
    if table is None:
        table = _parse(_normalised(data), columns, types)
    if table is None:
        why = _first_bad_line(path, data, columns, numeric)
        raise AssessError(why or f"{path}: arrow could not read it as {' '.join(columns)} columns")
    if table.num_rows == 0:
        raise AssessError(f"{path}: no entries; expected lines '{' '.join(columns)}'")
    return table


def line_locator(path: Path, data_rows_from: int = 0) -> Locate:
    """``locate(rows)``: "path, line N" of data rows (non-blank lines, after ``data_rows_from`` header lines)."""

    def locate(rows: Sequence[int]) -> list[str]:
        want = {int(r) + data_rows_from for r in rows}
        found: dict[int, int] = {}
        row = -1
        with gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb") as f:
            for n, line in enumerate(f, 1):
                if line.strip():
                    row += 1
                    if row in want:
                        found[row] = n
                        if len(found) == len(want):
                            break
        return [
            f"{path}, line {found[r + data_rows_from]}" if r + data_rows_from in found else f"{path}, row {r}"
            for r in map(int, rows)
        ]

    return locate


def read_qrels(path: PathLike) -> Qrels:
    r"""Read the graded judgments of a TREC qrels file.

    Lines ``qid iter docid relevance`` (``iter`` is ignored), as trec_eval reads them; each
    (qid, docid) may be judged once, and a bad line is one :class:`AssessError` naming it.

    Parameters
    ----------
    path : str or os.PathLike
        The qrels file (``.gz`` read through gzip).

    Returns
    -------
    Qrels

    Examples
    --------
    >>> import pathlib, tempfile
    >>> tmp = tempfile.TemporaryDirectory()
    >>> run, qrels = pathlib.Path(tmp.name, "bm25.trec"), pathlib.Path(tmp.name, "qrels.txt")
    >>> _ = run.write_text("q1 Q0 d1 1 12.5 bm25\nq1 Q0 d2 2 9.1 bm25\nq2 Q0 d3 1 7.0 bm25\n")
    >>> _ = qrels.write_text("q1 0 d1 1\nq2 0 d3 0\nq2 0 d4 2\n")
    >>> read_qrels(qrels).to_dict()
    {'q1': {'d1': 1}, 'q2': {'d3': 0, 'd4': 2}}
    >>> tmp.cleanup()
    """
    path = Path(path)
    table = _read_whitespace_table(
        path,
        "TREC qrels",
        QRELS_COLUMNS,
        {"qid": pa.string(), "docid": pa.string(), "relevance": pa.int64()},
        {"relevance": int},
    )
    qcode, _ = factorize(table["qid"])
    docids = to_str_array(table["docid"])
    dup = first_duplicate(qcode, table["docid"])
    if dup is not None:
        raise AssessError(
            f"{two_places(*line_locator(path)(dup))}: (qid {table['qid'][dup[0]].as_py()!r}, docid {str(docids[dup[0]])!r}) is judged "
            "twice; expected one judgment per (qid, docid)"
        )
    return Qrels(to_str_array(table["qid"]), docids, table["relevance"].to_numpy(), source=str(path))


def _run_rows(path: Path) -> Rows:
    table = _read_whitespace_table(
        path,
        "TREC run",
        RUN_COLUMNS,
        {"qid": pa.string(), "docid": pa.string(), "rank": pa.string(), "score": pa.float64()},
        {"score": float},
    )
    qcode, qnames = factorize(table["qid"])
    try:
        rank = pc.cast(table["rank"], pa.float64()).to_numpy()
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        warnings.warn(
            f"{path}: the rank column is not numeric; ranks are ignored (the scores decide the order)",
            UserWarning,
            stacklevel=3,
        )
        rank = None
    return Rows(
        str(path),
        qcode,
        qnames,
        table["docid"].combine_chunks(),
        table["score"].to_numpy(),
        line_locator(path),
        rank=rank,
    )


def read_runs(
    paths: PathLike | Sequence[PathLike], qrels: Qrels | PathLike, *, kind: Any = "score", relevant_at: int = 1
) -> ScoredRun:
    r"""Read one ranker's TREC run file(s), judged by ``qrels``, as a :class:`ScoredRun`.

    Lines ``qid Q0 docid rank score tag``; the scores order the candidates (not the rank
    column). Several files are samples of one ranker (MC Dropout passes, seeds) and must hold
    the same pairs. Queries the qrels do not mention are left out, as trec_eval does
    (``meta["dropped_queries"]``); unjudged candidates count as non-relevant.

    Parameters
    ----------
    paths : str, os.PathLike or sequence of them
        One run file, or several: ``S = len(paths)`` samples.
    qrels : Qrels, str or os.PathLike
        The judgments, or a TREC qrels file.
    kind : {"score", "logit", "probability"}, default="score"
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
    >>> run, qrels = pathlib.Path(tmp.name, "bm25.trec"), pathlib.Path(tmp.name, "qrels.txt")
    >>> _ = run.write_text("q1 Q0 d1 1 12.5 bm25\nq1 Q0 d2 2 9.1 bm25\nq2 Q0 d3 1 7.0 bm25\n")
    >>> _ = qrels.write_text("q1 0 d1 1\nq2 0 d3 0\nq2 0 d4 2\n")
    >>> scored = read_runs(run, qrels)
    >>> scored.scores.shape, scored.labels.tolist(), scored.n_relevant.tolist()
    ((1, 2, 2), [[1, 0], [0, 0]], [1, 1])
    >>> tmp.cleanup()
    """
    kind = check_kind(kind)
    relevant_at = check_relevant_at(relevant_at)
    paths = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    if not paths:
        raise AssessError("paths: expected one run file or a list of run files, got an empty list")
    files = [Path(p) for p in paths]
    if not isinstance(qrels, Qrels):
        qrels = read_qrels(qrels)
    samples = [_run_rows(p) for p in files]
    source = str(files[0]) if len(files) == 1 else f"{files[0]} (+{len(files) - 1} more samples)"
    name = files[0].name.removesuffix(".gz")
    meta = {"ranker": name.rsplit(".", 1)[0] if "." in name else name, "format": "trec"}
    return assemble(samples, qrels, kind=kind, relevant_at=relevant_at, source=source, meta=meta)


def read_unjudged_runs(paths: PathLike | Sequence[PathLike], *, kind: Any = "score") -> ScoredRun:
    r"""Read one ranker's TREC run file(s) on queries nobody has judged, as a :class:`ScoredRun` with no relevance.

    What ``calibrank watch`` reads: the lines and checks of :func:`read_runs`, every query kept,
    ``judged`` all False (so ``labels`` are all 0 and mean nothing).

    Parameters
    ----------
    paths : str, os.PathLike or sequence of them
        One run file, or several: samples of one ranker, with the same pairs.
    kind : {"score", "logit", "probability"}, default="score"
        What a score is.

    Returns
    -------
    ScoredRun

    Examples
    --------
    >>> import pathlib, tempfile
    >>> tmp = tempfile.TemporaryDirectory()
    >>> run = pathlib.Path(tmp.name, "new.trec")
    >>> _ = run.write_text("q1 Q0 d1 1 12.5 bm25\nq1 Q0 d2 2 9.1 bm25\nq2 Q0 d3 1 7.0 bm25\n")
    >>> new = read_unjudged_runs(run)
    >>> new.qids.tolist(), new.mask.tolist(), bool(new.judged.any())
    (['q1', 'q2'], [[True, True], [True, False]], False)
    >>> tmp.cleanup()
    """
    kind = check_kind(kind)
    paths = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    if not paths:
        raise AssessError("paths: expected one run file or a list of run files, got an empty list")
    files = [Path(p) for p in paths]
    samples = [_run_rows(p) for p in files]
    source = str(files[0]) if len(files) == 1 else f"{files[0]} (+{len(files) - 1} more samples)"
    name = files[0].name.removesuffix(".gz")
    meta = {"ranker": name.rsplit(".", 1)[0] if "." in name else name, "format": "trec", "unjudged": True}
    return assemble(samples, None, kind=kind, source=source, meta=meta, judged=False)
