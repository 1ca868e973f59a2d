"""Rows of (qid, docid, score) as a reader found them, checked and assembled into a :class:`ScoredRun`.

Each reader hands over one :class:`Rows` per sample; :func:`assemble` checks them and lays them
out as padded ``[S, Q, K]`` arrays with the qrels joined, as trec_eval reads qrels: queries the
qrels never mention are left out (``meta["dropped_queries"]``), unjudged candidates count as
non-relevant, and ``n_relevant`` counts every relevant judgment. Checks are vectorised; a line
number is looked up only to word an error. Candidates match through 64-bit hashes, each match
then compared string for string, so a hash never decides an answer.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .scored import AssessError, ScoredRun, ScoreKind

__all__ = ["Qrels", "Rows", "Locate", "assemble", "check_kind", "check_relevant_at", "factorize", "first_duplicate", "to_str_array", "two_places"]

Locate = Callable[[Sequence[int]], list[str]]

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_SALTS = 4
_SHOWN = 20  # dropped query ids kept in meta


def check_kind(kind: Any, name: str = "kind") -> ScoreKind:
    """``kind`` as a :class:`ScoreKind`; an :class:`AssessError` naming the parameter otherwise."""
    try:
        return ScoreKind(kind)
    except ValueError:
        raise AssessError(f"{name}: expected one of {', '.join(k.value for k in ScoreKind)}, got {kind!r}") from None


def check_relevant_at(relevant_at: Any, name: str = "relevant_at") -> int:
    if isinstance(relevant_at, bool) or not isinstance(relevant_at, (int, np.integer)) or relevant_at < 1:
        raise AssessError(f"{name}: expected an integer >= 1 (the lowest grade that counts as relevant), got {relevant_at!r}")
    return int(relevant_at)


# --------------------------------------------------------------------------- strings


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
    head_codes = np.fromiter((index.setdefault(s, len(index)) for s in arr.take(pa.array(heads)).to_pylist()),
                             np.int64, len(heads))
    return np.repeat(head_codes, np.diff(np.append(heads, n))), list(index)


def _is_ascii(arr: pa.Array) -> bool:
    """Every byte of the strings' values is below 128 (read from arrow's value buffer, no per-string work)."""
    if not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)) or arr.buffers()[2] is None:
        return bool(pc.all(pc.string_is_ascii(arr)).as_py())
    offsets = np.frombuffer(arr.buffers()[1], np.int64 if pa.types.is_large_string(arr.type) else np.int32)
    lo, hi = int(offsets[arr.offset]), int(offsets[arr.offset + len(arr)])
    return hi <= lo or int(np.frombuffer(arr.buffers()[2], np.uint8)[lo:hi].max()) < 128


def to_str_array(arr: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """A numpy ``str`` array of an arrow string column (ASCII goes through fixed-width bytes, with no Python objects).

    Its width is even (a trailing NUL is no character to numpy), so that its keys read it as 64-bit words.
    """
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if len(arr) == 0:
        return np.zeros(0, "U2")
    width = max(1, pc.max(pc.binary_length(arr)).as_py() or 0)
    width += width % 2
    if _is_ascii(arr):
        fixed = pc.ascii_rpad(arr, width=width, padding="\x00").cast(pa.binary(width))
        raw = np.frombuffer(fixed.buffers()[1], np.uint8)[fixed.offset * width:(fixed.offset + len(fixed)) * width]
        return np.ascontiguousarray(raw.reshape(-1, width).astype(np.uint32)).view(f"<U{width}").ravel()
    return np.asarray(arr.to_numpy(zero_copy_only=False)).astype(str)


def _mix(h: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser, in place."""
    h ^= h >> np.uint64(30)
    h *= _M1
    h ^= h >> np.uint64(27)
    h *= _M2
    h ^= h >> np.uint64(31)
    return h


def _keys(qcode: np.ndarray, docid: np.ndarray, n_words: int, salt: int) -> np.ndarray:
    """A 64-bit hash of each (query code, docid), over ``n_words`` 64-bit words of the docid (two characters each).

    The same pair gives the same key whatever the width of the str array that holds it.
    """
    docid = np.ascontiguousarray(docid)
    width = docid.dtype.itemsize // 4
    u32 = docid.view(np.uint32).reshape(len(docid), width)
    words = u32.view(np.uint64) if width % 2 == 0 else None
    h = qcode.astype(np.uint64)
    h += np.uint64(salt + 1)
    h *= _GOLDEN
    for j in range(n_words):
        h *= _M1
        if words is not None and j < words.shape[1]:
            h += words[:, j]
        elif words is None and 2 * j < width:
            h += u32[:, 2 * j]
            if 2 * j + 1 < width:
                h += u32[:, 2 * j + 1].astype(np.uint64) << np.uint64(32)
    return _mix(h)


def _n_words(docid: np.ndarray) -> int:
    return -(-max(1, docid.dtype.itemsize // 4) // 2)


def two_places(first: str, second: str) -> str:
    """"f, line 3" and "f, line 9" as "f, lines 3 and 9"; places in two inputs stay whole."""
    (fa, _, na), (fb, _, nb) = first.rpartition(", line "), second.rpartition(", line ")
    return f"{fa}, lines {na} and {nb}" if fa and fa == fb else f"{first} and {second}"


class _Collision(Exception):
    """Two different (qid, docid) pairs share a key: retry with another salt."""


# --------------------------------------------------------------------------- qrels


def first_duplicate(qcode: np.ndarray, docid: np.ndarray) -> tuple[int, int] | None:
    """``(i, j)``, i < j, the rows of the first repeated (query code, docid) in row order; None when all differ."""
    for salt in range(_SALTS):
        keys = _keys(qcode, docid, _n_words(docid), salt)
        order = np.argsort(keys, kind="stable")
        ordered = keys[order]
        same = np.flatnonzero(ordered[1:] == ordered[:-1])
        if len(same) == 0:
            return None
        a, b = order[same], order[same + 1]
        exact = np.flatnonzero((qcode[a] == qcode[b]) & (docid[a] == docid[b]))
        if len(exact):
            first = exact[int(np.argmin(b[exact]))]
            return int(a[first]), int(b[first])
    raise AssessError("could not separate (qid, docid) pairs by their hashes")  # pragma: no cover


@dataclass(frozen=True)
class Qrels:
    """Graded judgments: ``qids [N]``, ``docids [N]``, ``relevance [N]`` (integers; negative grades are non-relevant).

    Each (qid, docid) is judged once. ``source`` names where they came from, for messages.
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
            raise AssessError(f"{self.source}: qids, docids and relevance must be 1-D of one length, "
                              f"got {qids.shape}, {docids.shape}, {rel.shape}")
        if len(qids) == 0:
            raise AssessError(f"{self.source}: no judgments; expected lines 'qid iter docid relevance'")
        if rel.dtype.kind == "f" and not (np.isfinite(rel).all() and (rel == np.round(rel)).all()):
            raise AssessError(f"{self.source}: relevance must be integer grades")
        if rel.dtype.kind not in "iuf":
            raise AssessError(f"{self.source}: relevance must be integer grades, got dtype {rel.dtype}")
        _, qcode = np.unique(qids, return_inverse=True)
        dup = first_duplicate(qcode.astype(np.int64), docids)
        if dup is not None:
            raise AssessError(f"{self.source}: (qid {str(qids[dup[0]])!r}, docid {str(docids[dup[0]])!r}) is judged twice "
                              f"(entries {dup[0]} and {dup[1]}); expected one judgment per pair")
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

    ``qcode [N]`` indexes ``qnames``; ``docid [N]`` str; ``score [N]`` float64; ``rank [N]``
    (TREC runs) or None; ``label [N]`` float64 (NaN: unjudged) when the rows carry their own
    judgments, else None. ``locate(rows)`` says where rows are in the input ("run.txt line 12");
    it may be slow: it runs only to word an error.
    """

    name: str
    qcode: np.ndarray
    qnames: list[str]
    docid: np.ndarray
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
        raise AssessError(f"{rows.where(i)}: score {float(rows.score[i])!r} is not a finite number; expected a finite score")
    if kind is ScoreKind.probability:
        out = (rows.score < 0) | (rows.score > 1)
        if out.any():
            i = int(np.argmax(out))
            raise AssessError(f"{rows.where(i)}: score {float(rows.score[i])!r} lies outside [0, 1], which kind='probability' "
                              "expects; say kind='logit' (sigmoid of the score) or kind='score' (any scale)")


def _check_rank_order(rows: Rows) -> None:
    """Warn when the ranks order a query's candidates differently from their scores (the scores decide)."""
    if rows.rank is None or len(rows.score) < 2:
        return
    same_q = rows.qcode[1:] == rows.qcode[:-1]
    order = None
    if not ((rows.rank[1:] > rows.rank[:-1]) | ~same_q).all():
        order = np.lexsort((rows.rank, rows.qcode))
    q, r, s = (rows.qcode, rows.rank, rows.score) if order is None else (rows.qcode[order], rows.rank[order], rows.score[order])
    clash = (q[1:] == q[:-1]) & (r[1:] > r[:-1]) & (s[1:] > s[:-1])
    if clash.any():
        i = int(np.argmax(clash))
        a, b = (i, i + 1) if order is None else (int(order[i]), int(order[i + 1]))
        la, lb = rows.locate([a, b])
        n = int(clash.sum())
        warnings.warn(f"{rows.name}: ranks disagree with the scores' order in {n} place{'s' if n > 1 else ''} (first: {la}, "
                      f"rank {r[i]:g}, score {float(s[i])!r}; {lb}, rank {r[i + 1]:g}, score {float(s[i + 1])!r}); the "
                      "scores decide the order, as in trec_eval", UserWarning, stacklevel=3)


def _qrels_from_labels(base: Rows) -> Qrels:
    has = ~np.isnan(base.label)
    bad = has & (base.label != np.round(base.label))
    if bad.any():
        i = int(np.argmax(bad))
        raise AssessError(f"{base.where(i)}: label {float(base.label[i])!r} is not an integer grade; expected 0, 1, 2, ...")
    names = np.asarray(base.qnames, dtype=str)
    return Qrels(names[base.qcode[has]], base.docid[has], base.label[has].astype(np.int64), source=base.name)


# --------------------------------------------------------------------------- assembly


def assemble(samples: Sequence[Rows], qrels: Qrels | None, *, kind: Any, relevant_at: Any = 1, source: str,
             meta: dict[str, Any] | None = None) -> ScoredRun:
    """The samples (one :class:`Rows` each, the same (qid, docid) pairs) and their qrels as one :class:`ScoredRun`.

    ``qrels`` None: the rows' own labels judge them (they must agree across samples).
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
    if qrels is None and any(r.label is None for r in samples):
        raise AssessError(f"{source}: no qrels and no labels; give qrels or a label column")
    n_words = max([_n_words(r.docid) for r in samples] + ([] if qrels is None else [_n_words(qrels.docids)]))
    for salt in range(_SALTS):
        try:
            return _assemble(samples, qcodes, names, qrels, kind, relevant_at, source, dict(meta or {}), n_words, salt)
        except _Collision:
            continue
    raise AssessError(f"{source}: could not separate (qid, docid) pairs by their hashes")  # pragma: no cover


_PAD = np.uint64(2**64 - 1)  # the key of a padded slot: sorts after every candidate of its query


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


def _sorted_keys(rows: Rows, qcode: np.ndarray, grid: _Grid, n_words: int, salt: int,
                 need_order: bool) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
    """``(keys, order, sorted)`` per query (padded slots last; ``order`` only when asked for: an argsort costs
    more than a sort); a repeated (qid, docid) is an error naming both lines."""
    keys = _keys(qcode, rows.docid, n_words, salt)
    if (keys == _PAD).any():
        raise _Collision
    kg = grid(keys, fill=_PAD)
    order = np.argsort(kg, axis=1) if need_order else None
    ordered = np.take_along_axis(kg, order, axis=1) if need_order else np.sort(kg, axis=1)
    if ((ordered[:, 1:] == ordered[:, :-1]) & grid.mask[:, 1:]).any():
        dup = first_duplicate(qcode, rows.docid)
        if dup is None:
            raise _Collision
        i, j = dup
        raise AssessError(f"{two_places(*rows.locate([i, j]))}: (qid {rows.qnames[rows.qcode[i]]!r}, docid "
                          f"{str(rows.docid[i])!r}) appears twice; expected each candidate once per query")
    return kg, order, ordered


def _not_same_pairs(base: Rows, rows: Rows, qb: np.ndarray, qr: np.ndarray, names: list[str], n_words: int,
                    salt: int) -> AssessError:
    """The error for two samples with different (qid, docid) pairs, naming one pair only one of them holds."""
    kb, kr = _keys(qb, base.docid, n_words, salt), _keys(qr, rows.docid, n_words, salt)
    only_b = np.setdiff1d(kb, kr)
    one, other, q, keys = (base, rows, qb, kb) if len(only_b) else (rows, base, qr, kr)
    k = only_b[0] if len(only_b) else np.setdiff1d(kr, kb)[0]
    i = int(np.flatnonzero(keys == k)[0])
    return AssessError(f"{base.name} and {rows.name} are samples of one ranker but hold different (qid, docid) pairs: "
                       f"(qid {names[q[i]]!r}, docid {str(one.docid[i])!r}) is in {one.where(i)} but not in {other.name}; "
                       "expected the same candidates in every sample")


def _find_in_rows(kg: np.ndarray, rows: np.ndarray, keys: np.ndarray, chunk: int = 1 << 22) -> np.ndarray:
    """For each (row, key): the column of ``kg[row]`` that holds the key, or -1 (rows hold distinct keys)."""
    out = np.full(len(keys), -1, np.int64)
    step = max(1, chunk // max(1, kg.shape[1]))
    for start in range(0, len(keys), step):
        eq = kg[rows[start:start + step]] == keys[start:start + step, None]
        found = eq.any(axis=1)
        out[start:start + step][found] = eq.argmax(axis=1)[found]
    return out


def _assemble(samples: Sequence[Rows], qcodes: list[np.ndarray], names: list[str], qrels: Qrels | None, kind: ScoreKind,
              relevant_at: int, source: str, meta: dict[str, Any], n_words: int, salt: int) -> ScoredRun:
    nq = len(names)
    base, qb = samples[0], qcodes[0]
    grid = _Grid(qb, nq)
    kg, order_b, sorted_b = _sorted_keys(base, qb, grid, n_words, salt, need_order=len(samples) > 1)
    docid = grid(base.docid, fill="")
    scores = [grid(base.score)]
    labels = [None if base.label is None else grid(base.label, fill=np.nan)]
    for rows, qr in zip(samples[1:], qcodes[1:]):
        g = _Grid(qr, nq)
        if g.k != grid.k or not (g.counts == grid.counts).all():
            raise _not_same_pairs(base, rows, qb, qr, names, n_words, salt)
        _, order_r, sorted_r = _sorted_keys(rows, qr, g, n_words, salt, need_order=True)
        if not (sorted_r == sorted_b).all():
            raise _not_same_pairs(base, rows, qb, qr, names, n_words, salt)

        def aligned(a: np.ndarray, fill: Any = 0, g: _Grid = g, order_r: np.ndarray = order_r) -> np.ndarray:
            out = np.empty_like(docid, dtype=a.dtype)
            np.put_along_axis(out, order_b, np.take_along_axis(g(a, fill), order_r, axis=1), axis=1)
            return out
        if not (aligned(rows.docid, "") == docid).all():
            raise _Collision
        scores.append(aligned(rows.score))
        labels.append(None if rows.label is None else aligned(rows.label, np.nan))
        if labels[0] is not None and labels[-1] is not None:
            differ = grid.mask & ~((labels[-1] == labels[0]) | (np.isnan(labels[-1]) & np.isnan(labels[0])))
            if differ.any():
                r, c = np.argwhere(differ)[0]
                i = int(grid.rows()[r, c])
                raise AssessError(f"{base.where(i)}: label {float(labels[0][r, c])!r} differs from the label {float(labels[-1][r, c])!r} "
                                  f"that {rows.name} gives the same (qid, docid); expected one label per candidate")

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
        raise AssessError(f"{base.name} shares no qid with {qrels.source}: run qids look like {names[:3]}, qrels qids "
                          f"like {sorted(set(qrels.qids.tolist()))[:3]}; expected the same query ids")
    q_code, q_docid, q_rel = qq[inrun], qrels.docids[inrun], qrels.relevance[inrun]
    keys_q = _keys(q_code, q_docid, n_words, salt)
    if (keys_q == _PAD).any():
        raise _Collision
    at = _find_in_rows(kg, q_code, keys_q)
    hit = at >= 0
    r, c = q_code[hit], at[hit]
    if not (docid[r, c] == q_docid[hit]).all():
        raise _Collision
    relevance = np.zeros(docid.shape, np.int64)
    judged = np.zeros(docid.shape, bool)
    relevance[r, c] = q_rel[hit]
    judged[r, c] = True
    n_relevant = np.bincount(q_code, weights=(q_rel >= relevant_at), minlength=nq).astype(np.int64)

    # queries without any judgment are left out (trec_eval evaluates the queries both files hold)
    dropped = [names[i] for i in np.flatnonzero(~judged_q)]
    meta.update(files=[r_.name for r_ in samples], qrels=qrels.source, rows=len(qb), queries_in_run=nq,
                dropped_queries=len(dropped), dropped_qids=dropped[:_SHOWN],
                qrels_queries_not_in_run=int(np.unique(qrels.qids[~inrun]).size))
    stacked = scores[0][None] if len(scores) == 1 else np.stack(scores)
    keep = slice(None) if judged_q.all() else judged_q
    grades = positive_grades(q_code, q_rel, nq)
    return ScoredRun(np.asarray(names, dtype=str)[keep], docid[keep], grid.mask[keep], stacked[:, keep], relevance[keep],
                     judged[keep], n_relevant[keep], kind, relevant_at, source, meta, grades=grades[keep], ties="trec_eval")


def positive_grades(qcode: np.ndarray, grade: np.ndarray, nq: int) -> np.ndarray:
    """``[nq, M]`` each query's positive grades in decreasing order, 0-padded (nDCG's ideal ranking, as trec_eval's)."""
    pos = grade > 0
    q, g = qcode[pos], grade[pos]
    order = np.lexsort((-g, q))
    return _Grid(q[order], nq)(g[order].astype(np.int64), fill=0) if len(q) else np.zeros((nq, 0), np.int64)
