"""A local Hugging Face cross-encoder checkpoint scored on a user's queries.

Any offline ``AutoModelForSequenceClassification`` folder with one or two labels scores every
pair of a JSONL of queries (the logit, or ``logit_1 - logit_0``); ``passes=T`` keeps its dropout
on: MC Dropout (Penha & Hauff 2021, sec. 3.2.3) without training. Too long a pair loses the
oldest query tokens first. One query per line::

    {"qid": "q1", "query": "text" | "context": ["oldest turn", ..., "latest turn"],
     "candidates": [{"docid": "d1", "text": "...", "label": 1}, ...]}
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from transformers import AutoConfig, AutoModelForSequenceClassification, AutoTokenizer

from calibrank.assess.options import check_option
from calibrank.assess.read.scored import AssessError, ScoredRun, ScoreKind, plain
from calibrank.atomic import decode_error_position
from calibrank.pairs import Pairs, Precision, score_pairs, use_bf16

__all__ = ["Candidate", "TextQuery", "read_queries", "load_checkpoint", "score_checkpoint"]

_QUERY_KEYS = frozenset({"qid", "query", "context", "candidates"})
_CANDIDATE_KEYS = frozenset({"docid", "text", "label"})
_WEIGHT_FILES = (
    "model.safetensors",
    "model.safetensors.index.json",
    "pytorch_model.bin",
    "pytorch_model.bin.index.json",
)
# A tokenizer's vocabulary; without one, transformers builds an empty tokenizer that reads every word as [UNK].
_VOCABULARY_FILES = (
    "tokenizer.json",
    "vocab.txt",
    "vocab.json",
    "spiece.model",
    "sentencepiece.bpe.model",
    "tokenizer.model",
)


def _identifier(value: Any, what: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int)) or str(value).strip() == "":
        raise AssessError(f"{what}: expected a non-empty string (or an integer), got {plain(value)!r}")
    return str(value)


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise AssessError(f"{what}: expected a string, got {type(value).__name__}")
    if not value.strip():
        raise AssessError(f"{what}: expected text, got an empty string")
    return value


def _grade(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise AssessError(f"{what}: expected an integer relevance grade, got {plain(value)!r}")
    return int(value)


@dataclass(frozen=True)
class Candidate:
    """One candidate of a query: its id, its text and, when judged, its relevance grade."""

    docid: str
    text: str
    label: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "docid", _identifier(self.docid, "docid"))
        object.__setattr__(self, "text", _text(self.text, f"candidate {self.docid!r}: text"))
        if self.label is not None:
            object.__setattr__(self, "label", _grade(self.label, f"candidate {self.docid!r}: label"))


@dataclass(frozen=True)
class TextQuery:
    """A query as text (``query``) or as a conversation (``context``, oldest turn first) with its candidates."""

    qid: str
    candidates: tuple[Candidate, ...]
    query: str | None = None
    context: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        qid = _identifier(self.qid, "qid")
        where = f"query {qid!r}"
        if (self.query is None) == (not self.context):
            raise AssessError(f"{where}: expected exactly one of 'query' (a string) or 'context' (a list of turns)")
        if self.query is not None:
            _text(self.query, f"{where}: query")
        elif isinstance(self.context, str) or not isinstance(self.context, Sequence):
            raise AssessError(
                f"{where}: context: expected a list of turns (strings), got {type(self.context).__name__}"
            )
        context = tuple(_text(t, f"{where}: context turn {i}") for i, t in enumerate(self.context))
        if isinstance(self.candidates, (str, Mapping)) or not isinstance(self.candidates, Sequence):
            raise AssessError(f"{where}: candidates: expected a list, got {type(self.candidates).__name__}")
        if not self.candidates:
            raise AssessError(f"{where}: candidates: expected a non-empty list, got none")
        seen: set[str] = set()
        for c in self.candidates:
            if not isinstance(c, Candidate):
                raise AssessError(f"{where}: candidates: expected Candidate records, got {type(c).__name__}")
            if c.docid in seen:
                raise AssessError(f"{where}: docid {c.docid!r} appears twice among its candidates")
            seen.add(c.docid)
        object.__setattr__(self, "qid", qid)
        object.__setattr__(self, "context", context)
        object.__setattr__(self, "candidates", tuple(self.candidates))

    @property
    def text(self) -> str:
        """The query as one string: ``query``, or the context's turns joined as the study's rankers join them."""
        return self.query if self.query is not None else " ".join(self.context)


# ----------------------------------------------------------------------------- reading


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise AssessError(f"key {key!r} given twice")
        out[key] = value
    return out


def _check_object(
    value: Any, name: str, allowed: frozenset[str] | set[str], required: tuple[str, ...], what: str, *, where: str = ""
) -> None:
    """Raise unless ``value`` is a JSON object with every ``required`` key and no key outside ``allowed``."""
    if not isinstance(value, dict):
        raise AssessError(f"{where}expected {what}, got {type(value).__name__}")
    unknown = sorted(set(value) - set(allowed))
    if unknown:
        raise AssessError(f"{where}unknown key(s) {unknown}; a {name} has {sorted(allowed)}")
    for key in required:
        if key not in value:
            raise AssessError(f"{where}missing {key!r}; a {name} has {sorted(allowed)}")


def _query_from(record: Any) -> TextQuery:
    _check_object(
        record, "query", _QUERY_KEYS, ("qid", "candidates"), "a JSON object with qid, query or context, and candidates"
    )
    if "query" in record and "context" in record:
        raise AssessError("both 'query' and 'context' given; expected one")
    if "query" not in record and "context" not in record:
        raise AssessError("missing 'query' (a string) or 'context' (a list of turns)")
    qid = _identifier(record["qid"], "qid")
    cands = record["candidates"]
    if not isinstance(cands, list):
        raise AssessError(f"query {qid!r}: candidates: expected a list, got {type(cands).__name__}")
    candidates = []
    for i, c in enumerate(cands):
        _check_object(
            c,
            "candidate",
            _CANDIDATE_KEYS,
            ("docid", "text"),
            "an object with docid and text",
            where=f"query {qid!r}: candidate {i}: ",
        )
        try:
            candidates.append(Candidate(c["docid"], c["text"], c.get("label")))
        except AssessError as exc:
            raise AssessError(f"query {qid!r}: candidate {i}: {exc}") from None
    context = record.get("context", ())
    if "context" in record and not isinstance(context, list):
        raise AssessError(f"query {qid!r}: context: expected a list of turns (strings), got {type(context).__name__}")
    if "context" in record and not context:
        raise AssessError(f"query {qid!r}: context: expected at least one turn, got an empty list")
    return TextQuery(qid, tuple(candidates), record.get("query"), tuple(context))


def read_queries(path: str | os.PathLike) -> list[TextQuery]:
    """The queries of a JSONL file, one per line (blank lines skipped).

    Every error is an :class:`AssessError` naming the file, the line and what was expected.
    """
    path = Path(path)
    if not path.is_file():
        raise AssessError(f"{path}: no such file; expected a JSONL of queries")
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise AssessError(f"{path}: not UTF-8 text at {decode_error_position(data, exc)}") from None
    queries: list[TextQuery] = []
    first_line: dict[str, int] = {}
    for lineno, line in enumerate(text.split("\n"), start=1):  # not splitlines(): U+2028 may sit inside a JSON string
        if not line.strip():
            continue
        where = f"{path}, line {lineno}"
        try:
            record = json.loads(line, object_pairs_hook=_unique_keys)
        except json.JSONDecodeError as exc:
            raise AssessError(f"{where}: not valid JSON ({exc.msg} at column {exc.colno})") from None
        except AssessError as exc:
            raise AssessError(f"{where}: {exc}") from None
        try:
            query = _query_from(record)
        except AssessError as exc:
            raise AssessError(f"{where}: {exc}") from None
        if query.qid in first_line:
            raise AssessError(f"{where}: qid {query.qid!r} already given on line {first_line[query.qid]}")
        first_line[query.qid] = lineno
        queries.append(query)
    if not queries:
        raise AssessError(f"{path}: no queries; expected one JSON object per line")
    return queries


# ----------------------------------------------------------------------------- loading


def load_checkpoint(path: str | os.PathLike) -> tuple[torch.nn.Module, Any, int]:
    """``(model, tokenizer, n_labels)`` of a local sequence-classification checkpoint, in eval mode, fp32.

    Refused, naming the folder: missing config, weights or tokenizer; not ``*ForSequenceClassification``;
    more than two labels; weights that leave part of the model random; a tokenizer larger than the embeddings.
    """
    folder = Path(path)
    if not folder.is_dir():
        raise AssessError(
            f"{folder}: not a folder; expected a Hugging Face checkpoint folder (config.json, weights, tokenizer)"
        )
    if not (folder / "config.json").is_file():
        raise AssessError(f"{folder}: no config.json; expected a Hugging Face sequence-classification checkpoint")
    try:
        config = AutoConfig.from_pretrained(folder, local_files_only=True)
    except (OSError, ValueError, KeyError) as exc:
        raise AssessError(f"{folder}/config.json: not a readable model configuration ({exc})") from None
    architectures = list(getattr(config, "architectures", None) or [])
    if not architectures:
        raise AssessError(
            f"{folder}/config.json: names no architecture; expected one ending in ForSequenceClassification"
        )
    other = [a for a in architectures if not a.endswith("ForSequenceClassification")]
    if other:
        raise AssessError(
            f"{folder}/config.json: architecture {other[0]} is not a sequence classifier; "
            "expected an architecture ending in ForSequenceClassification (a cross-encoder)"
        )
    n_labels = int(config.num_labels)
    if n_labels > 2:
        raise AssessError(
            f"{folder}/config.json: {n_labels} labels; expected a relevance head of one label "
            "(a logit) or two (not relevant, relevant)"
        )
    if not any((folder / name).is_file() for name in _WEIGHT_FILES):
        raise AssessError(f"{folder}: no weights; expected one of {', '.join(_WEIGHT_FILES)}")
    try:
        model, info = AutoModelForSequenceClassification.from_pretrained(
            folder, config=config, local_files_only=True, dtype=torch.float32, output_loading_info=True
        )
    except (OSError, ValueError, RuntimeError) as exc:
        raise AssessError(f"{folder}: the weights cannot be loaded ({exc})") from None
    missing = sorted(info.get("missing_keys", ())) + sorted(k[0] for k in info.get("mismatched_keys", ()))
    if missing:
        raise AssessError(
            f"{folder}: the weights lack {len(missing)} tensor(s) of {architectures[0]} "
            f"(first: {missing[0]}); they would be random: expected a trained sequence-classification checkpoint"
        )
    if not any((folder / name).is_file() for name in _VOCABULARY_FILES):
        raise AssessError(
            f"{folder}: no tokenizer; expected the checkpoint's tokenizer files beside its weights "
            f"(one of {', '.join(_VOCABULARY_FILES)})"
        )
    try:
        tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise AssessError(
            f"{folder}: no usable tokenizer ({exc}); expected the checkpoint's tokenizer files beside its weights"
        ) from None
    embedded = model.get_input_embeddings().num_embeddings
    if len(tokenizer) > embedded:
        raise AssessError(
            f"{folder}: the tokenizer has {len(tokenizer)} tokens but the model embeds {embedded}: "
            "expected the tokenizer saved with these weights"
        )
    model.eval()
    return model, tokenizer, n_labels


# ----------------------------------------------------------------------------- tokenising


def _length_limit(tokenizer: Any, model: torch.nn.Module, max_length: int) -> int:
    """``max_length``, capped by the positions the checkpoint can embed."""
    limit = getattr(tokenizer, "model_max_length", None)
    if not isinstance(limit, int) or limit > 1_000_000:
        limit = getattr(model.config, "max_position_embeddings", None)
    return min(max_length, limit) if isinstance(limit, int) and limit > 0 else max_length


def _encode(
    tokenizer: Any,
    firsts: list[str],
    seconds: list[str],
    *,
    strategy: str,
    side: str | None,
    max_length: int,
    where: str,
) -> dict[str, list[list[int]]]:
    before = tokenizer.truncation_side
    try:
        if side is not None:
            tokenizer.truncation_side = side
        return tokenizer(firsts, seconds, truncation=strategy, max_length=max_length, padding=False)
    except Exception as exc:  # the Rust tokenizers raise a bare Exception
        raise AssessError(
            f"{where}: the tokenizer cannot encode the pairs within max_length={max_length} ({exc})"
        ) from None
    finally:
        tokenizer.truncation_side = before


def _pairs(
    tokenizer: Any, queries: Sequence[TextQuery], labels: np.ndarray, max_length: int, where: str
) -> tuple[Pairs, dict[str, int]]:
    """Every (query, candidate) pair tokenised, flattened in query order (candidates in list order)."""
    firsts, seconds, left, qindex = [], [], [], []
    for i, q in enumerate(queries):
        text = q.text
        for c in q.candidates:
            firsts.append(text)
            seconds.append(c.text)
            left.append(q.query is None)
            qindex.append(i)
    n = len(firsts)

    def lengths(texts: list[str]) -> np.ndarray:
        uniq = list(dict.fromkeys(texts))
        ids = tokenizer(uniq, add_special_tokens=False)["input_ids"]
        size = dict(zip(uniq, map(len, ids)))
        return np.fromiter((size[t] for t in texts), dtype=np.int64, count=len(texts))

    special = tokenizer.num_special_tokens_to_add(pair=True)
    first_len, second_len = lengths(firsts), lengths(seconds)
    too_long = first_len + second_len + special > max_length
    long_candidate = too_long & (second_len + special + 1 > max_length)
    is_left = np.asarray(left)
    ids: list[list[int]] = [[] for _ in range(n)]  # the three groups below cover every pair
    types: list[list[int]] = [[] for _ in range(n)]
    groups = (
        (~long_candidate & is_left, "only_first", "left"),
        (~long_candidate & ~is_left, "only_first", None),
        (long_candidate, "longest_first", None),
    )
    for rows, strategy, side in groups:
        rows = np.flatnonzero(rows)
        if not rows.size:
            continue
        enc = _encode(
            tokenizer,
            [firsts[r] for r in rows],
            [seconds[r] for r in rows],
            strategy=strategy,
            side=side,
            max_length=max_length,
            where=where,
        )
        tt = enc.get("token_type_ids")
        for j, r in enumerate(rows):
            ids[r] = list(enc["input_ids"][j])
            types[r] = list(tt[j]) if tt is not None else [0] * len(ids[r])
    qindex_arr = np.asarray(qindex, dtype=np.int64)
    pos = np.concatenate([np.arange(len(q.candidates)) for q in queries])
    pairs = Pairs(
        input_ids=ids,
        token_type_ids=types,
        labels=labels[qindex_arr, pos].astype(np.int64),
        query_index=qindex_arr,
        qids=[q.qid for q in queries],
        n_candidates=max(len(q.candidates) for q in queries),
        truncated_responses=int(long_candidate.sum()),
    )
    return pairs, {"truncated_pairs": int(too_long.sum()), "truncated_candidates": int(long_candidate.sum())}


def _relevance_logit(input_names: Sequence[str], n_labels: int):
    """``forward(model, batch)`` for :func:`score_pairs`: the one logit, or ``logit_1 - logit_0`` of two."""
    names = tuple(input_names)

    def forward(model: torch.nn.Module, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        logits = model(**{k: v for k, v in batch.items() if k in names}).logits.float()
        return logits[:, 0] if n_labels == 1 else logits[:, 1] - logits[:, 0]

    return forward


# ----------------------------------------------------------------------------- labels


def _judgements(
    queries: Sequence[TextQuery], qrels: Mapping[str, Mapping[str, int]] | None, relevant_at: int, k: int, where: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``relevance [Q, K]``, ``judged [Q, K]``, ``n_relevant [Q]`` and the positive ``grades [Q, M]`` of every judged
    document (nDCG's ideal ranking) from the candidates' labels or from ``qrels``."""
    q = len(queries)
    positive: list[list[int]] = []
    relevance = np.zeros((q, k), dtype=np.int64)
    judged = np.zeros((q, k), dtype=bool)
    n_relevant = np.zeros(q, dtype=np.int64)
    labelled = [c.docid for qq in queries for c in qq.candidates if c.label is not None]
    if qrels is None:
        if not labelled:
            raise AssessError(
                f"{where}: no labels: give each candidate a 'label' (its relevance grade) "
                "or pass qrels={qid: {docid: grade}}"
            )
        for i, qq in enumerate(queries):
            for j, c in enumerate(qq.candidates):
                if c.label is not None:
                    relevance[i, j] = c.label
                    judged[i, j] = True
            n_relevant[i] = int((relevance[i][judged[i]] >= relevant_at).sum())
            positive.append([int(g) for g in relevance[i][judged[i]] if g > 0])
        return relevance, judged, n_relevant, _padded(positive)
    if labelled:
        raise AssessError(
            f"qrels: given, but {where} also labels {len(labelled)} candidate(s) "
            f"(first: {labelled[0]!r}); give the labels one way"
        )
    if not isinstance(qrels, Mapping):
        raise AssessError(f"qrels: expected a mapping qid -> {{docid: grade}}, got {type(qrels).__name__}")
    qrels = {str(qid): grades for qid, grades in qrels.items()}
    if not any(qq.qid in qrels for qq in queries):
        raise AssessError(
            f"qrels: judge none of the {len(queries)} queries of {where} (their first qid: "
            f"{queries[0].qid!r}; the qrels' first: {next(iter(qrels), None)!r}); expected qrels of these queries"
        )
    for i, qq in enumerate(queries):
        grades = qrels.get(qq.qid, {})
        if not isinstance(grades, Mapping):
            raise AssessError(f"qrels[{qq.qid!r}]: expected a mapping docid -> grade, got {type(grades).__name__}")
        grades = {str(d): _grade(g, f"qrels[{qq.qid!r}][{d!r}]") for d, g in grades.items()}
        for j, c in enumerate(qq.candidates):
            if c.docid in grades:
                relevance[i, j] = grades[c.docid]
                judged[i, j] = True
        n_relevant[i] = sum(g >= relevant_at for g in grades.values())
        positive.append([g for g in grades.values() if g > 0])
    return relevance, judged, n_relevant, _padded(positive)


def _padded(rows: list[list[int]]) -> np.ndarray:
    out = np.zeros((len(rows), max(map(len, rows), default=0)), np.int64)
    for i, row in enumerate(rows):
        out[i, : len(row)] = sorted(row, reverse=True)
    return out


# ----------------------------------------------------------------------------- scoring


def score_checkpoint(
    path: str | os.PathLike,
    queries: str | os.PathLike | Sequence[TextQuery],
    *,
    qrels: Mapping[str, Mapping[str, int]] | None = None,
    passes: int = 0,
    seed: int = 0,
    batch_size: int = 32,
    max_length: int = 512,
    precision: Precision | str = Precision.auto,
    relevant_at: int = 1,
) -> ScoredRun:
    """The checkpoint at ``path`` scored on ``queries`` (a JSONL path or :class:`TextQuery` records).

    ``passes=0``: one deterministic logit per candidate (S = 1); ``passes=T``: T MC Dropout samples
    drawn from ``seed``. Labels come from the candidates' ``label`` fields or from ``qrels``, never both.
    """
    passes, relevant_at, seed = (
        check_option(name, value) for name, value in (("passes", passes), ("relevant_at", relevant_at), ("seed", seed))
    )
    for name, value, low in (("batch_size", batch_size, 1), ("max_length", max_length, 4)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
            raise AssessError(f"{name}: expected a whole number >= {low}, got {plain(value)!r}")
    try:
        precision = Precision(precision)
    except ValueError:
        raise AssessError(
            f"precision: expected one of {[p.value for p in Precision]}, got {plain(precision)!r}"
        ) from None
    if isinstance(queries, (str, os.PathLike)):
        where = str(queries)
        queries = read_queries(queries)
    else:
        where = "queries"
        queries = list(queries)
        if not queries:
            raise AssessError("queries: expected at least one query, got none")
        bad = next((q for q in queries if not isinstance(q, TextQuery)), None)
        if bad is not None:
            raise AssessError(f"queries: expected TextQuery records (or a JSONL path), got {type(bad).__name__}")
        qids = [q.qid for q in queries]
        if len(set(qids)) != len(qids):
            dup = next(x for i, x in enumerate(qids) if x in qids[:i])
            raise AssessError(f"queries: qid {dup!r} given twice")
    k = max(len(q.candidates) for q in queries)
    relevance, judged, n_relevant, grades = _judgements(queries, qrels, int(relevant_at), k, where)

    model, tokenizer, n_labels = load_checkpoint(path)
    length = _length_limit(tokenizer, model, int(max_length))
    labels = (relevance >= relevant_at).astype(np.int64)
    pairs, truncation = _pairs(tokenizer, queries, labels, length, where)
    bf16 = use_bf16(precision, next(model.parameters()).device)
    logits = score_pairs(
        model,
        pairs,
        batch_size=int(batch_size),
        passes=max(int(passes), 1),
        dropout=passes > 0,
        seed=int(seed),
        precision=Precision.bf16 if bf16 else Precision.fp32,
        forward=_relevance_logit(tokenizer.model_input_names, n_labels),
    )
    if passes > 1 and np.all(logits == logits[:1]):
        raise AssessError(
            f"{path}: passes={passes} gave {passes} identical passes: the checkpoint has no active dropout, "
            "so MC Dropout has nothing to sample; use passes=0"
        )

    q = len(queries)
    mask = np.zeros((q, k), dtype=bool)
    docids = np.full((q, k), "", dtype=object)
    for i, qq in enumerate(queries):
        mask[i, : len(qq.candidates)] = True
        docids[i, : len(qq.candidates)] = [c.docid for c in qq.candidates]
    pos = np.concatenate([np.arange(len(qq.candidates)) for qq in queries])
    scores = np.zeros((logits.shape[0], q, k), dtype=np.float64)
    scores[:, pairs.query_index, pos] = logits
    meta = {
        "ranker": Path(path).name,
        "checkpoint": str(path),
        "queries": where,
        "n_labels": n_labels,
        "passes": int(passes),
        "seed": int(seed),
        "max_length": length,
        "bf16": bf16,
        "n_parameters": int(sum(p.numel() for p in model.parameters())),
        **truncation,
    }
    return ScoredRun(
        np.array([qq.qid for qq in queries]),
        docids.astype(str),
        mask,
        scores,
        relevance,
        judged,
        n_relevant,
        kind=ScoreKind.logit,
        relevant_at=int(relevant_at),
        source=str(path),
        meta=meta,
        grades=grades,
        ties="trec_eval",
    )
