"""Rows of (qid, docid, score) as a reader found them, checked and assembled into a :class:`ScoredRun`.

Each reader hands over one :class:`Rows` per sample; :func:`assemble` checks them and lays them
out as padded ``[S, Q, K]`` arrays with the qrels joined, as trec_eval reads qrels: queries the
qrels never mention are left out (``meta["dropped_queries"]``), unjudged candidates count as
non-relevant, and ``n_relevant`` counts every relevant judgment. Checks are vectorised; a line
number is looked up only to word an error. Candidates match on (qid, docid) through arrow's hash
join and group-by (``pyarrow.Table.join``, ``Table.group_by``), which compare the strings themselves.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from calibrank.assess.options import check_option
from calibrank.assess.read.scored import AssessError, ScoredRun, ScoreKind

__all__ = [
    "Qrels",
    "Rows",
    "Locate",
    "assemble",
    "check_kind",
    "check_relevant_at",
    "factorize",
    "first_duplicate",
    "positive_grades",
    "to_str_array",
    "two_places",
]

Locate = Callable[[Sequence[int]], list[str]]

_SHOWN = 20  # dropped query ids kept in meta


def check_kind(kind: Any, name: str = "kind") -> ScoreKind:
    """``kind`` as a :class:`ScoreKind`, checked against the ``score`` option's declaration (``name``: the caller's
    name for it)."""
    return ScoreKind(check_option("score", kind, name))


def check_relevant_at(relevant_at: Any, name: str = "relevant_at") -> int:
    """``relevant_at`` checked against its declaration."""
    return int(check_option("relevant_at", relevant_at, name))


def factorize(arr: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, list[str]]:
    """``(codes [N], names)``: each string's index among the distinct strings, in order of first appearance.

    A run lists a query's candidates together, so the strings come in runs: the distinct ones
    are found among the run heads; scattered strings go through arrow's hash table.
    """
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    n = len(arr)
    if n == 0:
        return np.zeros(0, np.int64), []
    change = pc.not_equal(arr[1:], arr[:-1]).to_numpy(zero_copy_only=False)
    heads = np.flatnonzero(np.concatenate(([True], change)))
    if len(heads) > n // 8 + 1000:
        enc = pc.dictionary_encode(arr)
        return enc.indices.to_numpy(zero_copy_only=False).astype(np.int64), enc.dictionary.to_pylist()
    index: dict[str, int] = {}
    head_codes = np.fromiter(
        (index.setdefault(s, len(index)) for s in arr.take(pa.array(heads)).to_pylist()), np.int64, len(heads)
    )
    return np.repeat(head_codes, np.diff(np.append(heads, n))), list(index)


def _is_ascii(arr: pa.Array) -> bool:
    """Every byte of the strings' values is below 128 (read from arrow's value buffer, no per-string work)."""
    if not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)) or arr.buffers()[2] is None:
        return bool(pc.all(pc.string_is_ascii(arr)).as_py())
    offsets = np.frombuffer(arr.buffers()[1], np.int64 if pa.types.is_large_string(arr.type) else np.int32)
    lo, hi = int(offsets[arr.offset]), int(offsets[arr.offset + len(arr)])
    return hi <= lo or int(np.frombuffer(arr.buffers()[2], np.uint8)[lo:hi].max()) < 128


def to_str_array(arr: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """A numpy ``str`` array of an arrow string column (ASCII goes through fixed-width bytes, with no Python objects)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if len(arr) == 0:
        return np.zeros(0, "U2")
    width = max(1, pc.max(pc.binary_length(arr)).as_py() or 0)
    if _is_ascii(arr):
        fixed = pc.ascii_rpad(arr, width=width, padding="\x00").cast(pa.binary(width))
        raw = np.frombuffer(fixed.buffers()[1], np.uint8)[fixed.offset * width : (fixed.offset + len(fixed)) * width]
        return np.ascontiguousarray(raw.reshape(-1, width).astype(np.uint32)).view(f"<U{width}").ravel()
    return np.asarray(arr.to_numpy(zero_copy_only=False)).astype(str)


def two_places(first: str, second: str) -> str:
    """ "f, line 3" and "f, line 9" as "f, lines 3 and 9"; places in two inputs stay whole."""
    (fa, _, na), (fb, _, nb) = first.rpartition(", line "), second.rpartition(", line ")
    return f"{fa}, lines {na} and {nb}" if fa and fa == fb else f"{first} and {second}"


# --------------------------------------------------------------------------- qrels


def _strings(docid: pa.Array | pa.ChunkedArray | np.ndarray) -> pa.Array | pa.ChunkedArray:
    """Docids as arrow ``string``, one type on both sides of every join whichever reader made them (pandas hands
    over ``large_string``, which arrow's group-by hashes some ten times slower)."""
    arr = docid if isinstance(docid, (pa.Array, pa.ChunkedArray)) else pa.array(np.asarray(docid).astype(str))
    if arr.type == pa.string():
        return arr
    try:
        return pc.cast(arr, pa.string())
    except pa.ArrowInvalid:  # over 2 GiB of docids: string's 32-bit offsets cannot hold them
        return pc.cast(arr, pa.large_string())


def _pairs(qcode: np.ndarray, docid: pa.Array | pa.ChunkedArray | np.ndarray, row: str) -> pa.Table:
    """The (query code, docid) pairs as an arrow table, with their row numbers in column ``row``."""
    return pa.table({"q": np.asarray(qcode, dtype=np.int64), "d": _strings(docid), row: np.arange(len(qcode))})


def first_duplicate(qcode: np.ndarray, docid: pa.Array | pa.ChunkedArray | np.ndarray) -> tuple[int, int] | None:
    """``(i, j)``, i < j, the rows of the first repeated (query code, docid) in row order; None when all differ.

    Arrow counts the rows of each pair (a group-by on both columns); only when a count exceeds one
    are the repeated pairs' rows looked at, to find the first repeat.
    """
    return _first_duplicate(_pairs(qcode, docid, "row"), "row")


def _first_duplicate(table: pa.Table, row: str) -> tuple[int, int] | None:
    """:func:`first_duplicate` of the pairs ``table`` (columns q, d and the row numbers ``row``)."""
    table = table.rename_columns(["q", "d", "row"]) if row != "row" else table
    counts = table.group_by(["q", "d"], use_threads=False).aggregate([("row", "count")])
    if counts.num_rows == table.num_rows:
        return None
    repeated = counts.filter(pc.greater(counts["row_count"], 1)).select(["q", "d"])
    rows = table.join(repeated, keys=["q", "d"], join_type="inner")
    groups: dict[tuple[int, str], list[int]] = {}
    for q, d, r in zip(rows["q"].to_pylist(), rows["d"].to_pylist(), rows["row"].to_pylist()):
        groups.setdefault((q, d), []).append(r)
    i, j = min((sorted(v)[:2] for v in groups.values()), key=lambda pair: pair[1])
    return int(i), int(j)


@dataclass(frozen=True)
class Qrels:
    """Graded relevance judgments, one per (qid, docid), as a qrels file holds them.

    What the readers join onto a run's candidates; negative grades are non-relevant. Built by
    :func:`calibrank.assess.read.trec.read_qrels`, :func:`calibrank.assess.read.score_tables.as_qrels` or directly.

    Parameters
    ----------
    qids : array-like of shape (N,)
        Query ids (read as strings).
    docids : array-like of shape (N,)
        Document ids (read as strings).
    relevance : array-like of int, shape (N,)
        Integer grades.
    source : str, default="qrels"
        Where they came from, for messages.

    Examples
    --------
    >>> qrels = Qrels(["q1", "q1", "q2"], ["d1", "d2", "d3"], [1, 0, 2])
    >>> len(qrels), qrels.to_dict()
    (3, {'q1': {'d1': 1, 'd2': 0}, 'q2': {'d3': 2}})
    """

    qids: np.ndarray
    docids: np.ndarray
    relevance: np.ndarray
    source: str = "qrels"

    def __post_init__(self) -> None:
        qids = np.asarray(self.qids).astype(str)
        docids = np.asarray(self.docids).astype(str)
        rel = np.asarray(self.relevance)
        if qids.ndim != 1 or docids.shape != qids.shape or rel.shape != qids.shape:
            raise AssessError(
                f"{self.source}: qids, docids and relevance must be 1-D of one length, "
                f"got {qids.shape}, {docids.shape}, {rel.shape}"
            )
        if len(qids) == 0:
            raise AssessError(f"{self.source}: no judgments; expected lines 'qid iter docid relevance'")
        if rel.dtype.kind == "f" and not (np.isfinite(rel).all() and (rel == np.round(rel)).all()):
            raise AssessError(f"{self.source}: relevance must be integer grades")
        if rel.dtype.kind not in "iuf":
            raise AssessError(f"{self.source}: relevance must be integer grades, got dtype {rel.dtype}")
        _, qcode = np.unique(qids, return_inverse=True)
        dup = first_duplicate(qcode.astype(np.int64), docids)
        if dup is not None:
            raise AssessError(
                f"{self.source}: (qid {str(qids[dup[0]])!r}, docid {str(docids[dup[0]])!r}) is judged twice "
                f"(entries {dup[0]} and {dup[1]}); expected one judgment per pair"
            )
        object.__setattr__(self, "qids", qids)
        object.__setattr__(self, "docids", docids)
        object.__setattr__(self, "relevance", rel.astype(np.int64))

    def __len__(self) -> int:
        return len(self.qids)

    def to_dict(self) -> dict[str, dict[str, int]]:
        """``{qid: {docid: grade}}``, the shape ir_measures and ranx take."""
        out: dict[str, dict[str, int]] = {}
        for q, d, r in zip(self.qids.tolist(), self.docids.tolist(), self.relevance.tolist()):
            out.setdefault(q, {})[d] = r
        return out


# --------------------------------------------------------------------------- rows


@dataclass
class Rows:
    """One sample's rows as a reader found them.

    ``qcode [N]`` indexes ``qnames``; ``docid [N]`` arrow strings (or a numpy str array); ``score [N]`` float64; ``rank [N]``
    (TREC runs) or None; ``label [N]`` float64 (NaN: unjudged) when the rows carry their own
    judgments, else None. ``locate(rows)`` says where rows are in the input ("run.txt line 12");
    it may be slow: it runs only to word an error.
    """

    name: str
    qcode: np.ndarray
    qnames: list[str]
    docid: pa.Array | np.ndarray
    score: np.ndarray
    locate: Locate
    rank: np.ndarray | None = None
    label: np.ndarray | None = None

    def where(self, row: int) -> str:
        return self.locate([int(row)])[0]


def _check_scores(rows: Rows, kind: ScoreKind) -> None:
    bad = ~np.isfinite(rows.score)
    if bad.any():
        i = int(np.argmax(bad))
        raise AssessError(
            f"{rows.where(i)}: score {float(rows.score[i])!r} is not a finite number; expected a finite score"
        )
    if kind is ScoreKind.probability:
        out = (rows.score < 0) | (rows.score > 1)
        if out.any():
            i = int(np.argmax(out))
            raise AssessError(
                f"{rows.where(i)}: score {float(rows.score[i])!r} lies outside [0, 1], which score kind "
                "'probability' expects; use score kind 'logit' (sigmoid of the score) or 'score' (any scale)"
            )


def _check_rank_order(rows: Rows) -> None:
    """Warn when the ranks order a query's candidates differently from their scores (the scores decide)."""
    if rows.rank is None or len(rows.score) < 2:
        return
    same_q = rows.qcode[1:] == rows.qcode[:-1]
    order = None
    if not ((rows.rank[1:] > rows.rank[:-1]) | ~same_q).all():
        order = np.lexsort((rows.rank, rows.qcode))
    q, r, s = (
        (rows.qcode, rows.rank, rows.score)
        if order is None
        else (rows.qcode[order], rows.rank[order], rows.score[order])
    )
    clash = (q[1:] == q[:-1]) & (r[1:] > r[:-1]) & (s[1:] > s[:-1])
    if clash.any():
        i = int(np.argmax(clash))
        a, b = (i, i + 1) if order is None else (int(order[i]), int(order[i + 1]))
        la, lb = rows.locate([a, b])
        n = int(clash.sum())
        warnings.warn(
            f"{rows.name}: ranks disagree with the scores' order in {n} place{'s' if n > 1 else ''} (first: {la}, "
            f"rank {r[i]:g}, score {float(s[i])!r}; {lb}, rank {r[i + 1]:g}, score {float(s[i + 1])!r}); the "
            "scores decide the order, as in trec_eval",
            UserWarning,
            stacklevel=3,
        )


def _qrels_from_labels(base: Rows) -> Qrels:
    label = base.label
    if label is None:  # assemble lets no sample without labels through when there are no qrels
        raise AssessError(f"{base.name}: no qrels and no labels; give qrels or a label column")
    has = ~np.isnan(label)
    bad = has & (label != np.round(label))
    if bad.any():
        i = int(np.argmax(bad))
        raise AssessError(f"{base.where(i)}: label {float(label[i])!r} is not an integer grade; expected 0, 1, 2, ...")
    names = np.asarray(base.qnames, dtype=str)
    docids = _strings(base.docid).filter(pa.array(has))
    return Qrels(names[base.qcode[has]], to_str_array(docids), label[has].astype(np.int64), source=base.name)


# --------------------------------------------------------------------------- assembly


def assemble(
    samples: Sequence[Rows],
    qrels: Qrels | None,
    *,
    kind: Any,
    relevant_at: Any = 1,
    source: str,
    meta: dict[str, Any] | None = None,
    judged: bool = True,
) -> ScoredRun:
    """The samples (one :class:`Rows` each, the same (qid, docid) pairs) and their qrels as one :class:`ScoredRun`.

    ``qrels`` None: the rows' own labels judge them (they must agree across samples). ``judged`` False: no
    judgments at all (new queries to watch): every query is kept and none has a relevant candidate.
    Candidates keep the order of the first sample; queries keep their order of first appearance.
    """
    kind = check_kind(kind)
    relevant_at = check_relevant_at(relevant_at)
    if not samples:
        raise AssessError(f"{source}: no rows")
    for rows in samples:
        if len(rows.score) == 0:
            raise AssessError(f"{rows.name}: no rows; expected at least one (qid, docid, score)")
        _check_scores(rows, kind)
        _check_rank_order(rows)
    base = samples[0]
    index = {q: i for i, q in enumerate(base.qnames)}
    qcodes = [base.qcode]
    for rows in samples[1:]:
        local = np.fromiter((index.setdefault(q, len(index)) for q in rows.qnames), np.int64, len(rows.qnames))
        qcodes.append(local[rows.qcode])
    names = list(index)
    if judged and qrels is None and any(r.label is None for r in samples):
        raise AssessError(f"{source}: no qrels and no labels; give qrels or a label column")
    return _assemble(samples, qcodes, names, qrels, kind, relevant_at, source, dict(meta or {}), judged)


class _Grid:
    """Where each of N rows goes in a ``[nq, K]`` grid: its query's row, in the order the rows came."""

    def __init__(self, qcode: np.ndarray, nq: int) -> None:
        self.order = None
        if len(qcode) > 1 and not (qcode[1:] >= qcode[:-1]).all():
            self.order = np.argsort(qcode, kind="stable")
            qcode = qcode[self.order]
        self.counts = np.bincount(qcode, minlength=nq)
        self.k = int(self.counts.max())
        self.flat = None
        if not (self.counts == self.k).all():
            self.flat = qcode * self.k + (np.arange(len(qcode)) - (np.cumsum(self.counts) - self.counts)[qcode])
        self.mask = np.arange(self.k)[None, :] < self.counts[:, None]

    def __call__(self, a: np.ndarray, fill: Any = 0) -> np.ndarray:
        if self.order is not None:
            a = a[self.order]
        if self.flat is None:
            return a.reshape(len(self.counts), self.k)
        out = np.full(len(self.counts) * self.k, fill, a.dtype)
        out[self.flat] = a
        return out.reshape(len(self.counts), self.k)

    def rows(self) -> np.ndarray:
        """[nq, K] the input row behind each slot (-1 where padded)."""
        return self(np.arange(len(self.order) if self.order is not None else int(self.counts.sum())), fill=-1)


def _check_unique(rows: Rows, pairs: pa.Table, row: str) -> None:
    """A repeated (qid, docid) among the rows' ``pairs`` is an error naming both lines."""
    dup = _first_duplicate(pairs, row)
    if dup is not None:
        i, j = dup
        raise AssessError(
            f"{two_places(*rows.locate([i, j]))}: (qid {rows.qnames[rows.qcode[i]]!r}, docid "
            f"{_docid(rows, i)!r}) appears twice; expected each candidate once per query"
        )


def _docid(rows: Rows, i: int) -> str:
    return str(
        rows.docid[int(i)].as_py() if isinstance(rows.docid, (pa.Array, pa.ChunkedArray)) else rows.docid[int(i)]
    )


def _aligned_rows(
    base: Rows, rows: Rows, qb: np.ndarray, qr: np.ndarray, names: list[str], base_pairs: pa.Table, pairs: pa.Table
) -> np.ndarray:
    """``[N]`` the row of ``rows`` that holds each row's (qid, docid) of ``base`` (an arrow full outer join of their
    ``pairs``); two samples with different pairs are an error naming one pair only one of them holds."""
    joined = base_pairs.join(pairs, keys=["q", "d"], join_type="full outer")
    b, r = joined["b"], joined["r"]
    if not b.null_count and not r.null_count:
        at = np.empty(len(qb), np.int64)
        at[b.to_numpy()] = r.to_numpy()
        return at
    if r.null_count:  # a pair of base that rows lack
        one, other, q, i = base, rows, qb, pc.min(b.filter(r.is_null())).as_py()
    else:
        one, other, q, i = rows, base, qr, pc.min(r.filter(b.is_null())).as_py()
    raise AssessError(
        f"{base.name} and {rows.name} are samples of one ranker but hold different (qid, docid) pairs: "
        f"(qid {names[q[i]]!r}, docid {_docid(one, i)!r}) is in {one.where(i)} but not in {other.name}; "
        "expected the same candidates in every sample"
    )


def _assemble(
    samples: Sequence[Rows],
    qcodes: list[np.ndarray],
    names: list[str],
    qrels: Qrels | None,
    kind: ScoreKind,
    relevant_at: int,
    source: str,
    meta: dict[str, Any],
    judged_run: bool = True,
) -> ScoredRun:
    nq = len(names)
    base, qb = samples[0], qcodes[0]
    base_pairs = _pairs(qb, base.docid, "b")
    _check_unique(base, base_pairs, "b")
    grid = _Grid(qb, nq)
    docid = grid(to_str_array(base_pairs["d"]), fill="")
    scores = [grid(base.score)]
    labels = [None if base.label is None else grid(base.label, fill=np.nan)]
    for rows, qr in zip(samples[1:], qcodes[1:]):
        pairs = _pairs(qr, rows.docid, "r")
        _check_unique(rows, pairs, "r")
        at = _aligned_rows(base, rows, qb, qr, names, base_pairs, pairs)
        scores.append(grid(rows.score[at]))
        labels.append(None if rows.label is None else grid(rows.label[at], fill=np.nan))
        if labels[0] is not None and labels[-1] is not None:
            differ = grid.mask & ~((labels[-1] == labels[0]) | (np.isnan(labels[-1]) & np.isnan(labels[0])))
            if differ.any():
                r, c = np.argwhere(differ)[0]
                i = int(grid.rows()[r, c])
                raise AssessError(
                    f"{base.where(i)}: label {float(labels[0][r, c])} differs from the label {float(labels[-1][r, c])} "
                    f"that {rows.name} gives the same (qid, docid); expected one label per candidate"
                )

    if not judged_run:
        meta.update(files=[r_.name for r_ in samples], qrels=None, rows=len(qb), queries_in_run=nq, dropped_queries=0)
        none = np.zeros(grid.mask.shape, np.int64)
        return ScoredRun(
            np.asarray(names, dtype=str),
            docid,
            grid.mask,
            np.stack(scores),
            none,
            none.astype(bool),
            np.zeros(nq, np.int64),
            kind,
            relevant_at,
            source,
            meta,
            ties="trec_eval",
        )

    # the qrels (or the rows' own labels), joined on (qid, docid)
    if qrels is None:
        qrels = _qrels_from_labels(base)
    index = {q: i for i, q in enumerate(names)}
    distinct, inverse = np.unique(qrels.qids, return_inverse=True)
    qq = np.fromiter((index.get(q, -1) for q in distinct.tolist()), np.int64, len(distinct))[inverse]
    inrun = qq >= 0
    judged_q = np.zeros(nq, bool)
    judged_q[qq[inrun]] = True
    if not judged_q.any():
        raise AssessError(
            f"{base.name} shares no qid with {qrels.source}: run qids look like {names[:3]}, qrels qids "
            f"like {sorted(set(qrels.qids.tolist()))[:3]}; expected the same query ids"
        )
    q_code, q_rel = qq[inrun], qrels.relevance[inrun]
    judgments = pa.table({"q": q_code, "d": _strings(qrels.docids[inrun]), "g": q_rel})
    hit = base_pairs.join(judgments, keys=["q", "d"], join_type="inner")
    b = hit["b"].to_numpy()
    flat_rel = np.zeros(len(qb), np.int64)
    flat_judged = np.zeros(len(qb), bool)
    flat_rel[b] = hit["g"].to_numpy()
    flat_judged[b] = True
    relevance, judged = grid(flat_rel), grid(flat_judged, fill=False)
    n_relevant = np.bincount(q_code, weights=(q_rel >= relevant_at), minlength=nq).astype(np.int64)

    # queries without any judgment are left out (trec_eval evaluates the queries both files hold)
    dropped = [names[i] for i in np.flatnonzero(~judged_q)]
    meta.update(
        files=[r_.name for r_ in samples],
        qrels=qrels.source,
        rows=len(qb),
        queries_in_run=nq,
        dropped_queries=len(dropped),
        dropped_qids=dropped[:_SHOWN],
        qrels_queries_not_in_run=int(np.unique(qrels.qids[~inrun]).size),
    )
    stacked = scores[0][None] if len(scores) == 1 else np.stack(scores)
    keep = slice(None) if judged_q.all() else judged_q
    grades = positive_grades(q_code, q_rel, nq)
    return ScoredRun(
        np.asarray(names, dtype=str)[keep],
        docid[keep],
        grid.mask[keep],
        stacked[:, keep],
        relevance[keep],
        judged[keep],
        n_relevant[keep],
        kind,
        relevant_at,
        source,
        meta,
        grades=grades[keep],
        ties="trec_eval",
    )


def positive_grades(qcode: np.ndarray, grade: np.ndarray, nq: int) -> np.ndarray:
    """``[nq, M]`` each query's positive grades in decreasing order, 0-padded (nDCG's ideal ranking, as trec_eval's)."""
    pos = grade > 0
    q, g = qcode[pos], grade[pos]
    order = np.lexsort((-g, q))
    return _Grid(q[order], nq)(g[order].astype(np.int64), fill=0) if len(q) else np.zeros((nq, 0), np.int64)
