"""Scoring a trained model: logits and features of pairs, each distinct pair once, cached and timed.

:func:`model_logits` scores pairs (or takes the logits cached in the model folder, :mod:`.logits_cache`)
and times the scoring; :func:`shared` scores the distinct pairs of several query sets once
(:func:`distinct_pairs`) and gives each set its part. :func:`encode_features` is the pair path's
feature pass, :mod:`calibrank.study.model.encode_once` its encode-once counterpart.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import torch
from scipy.special import expit
from torch import nn

from calibrank.hardware import use_bf16
from calibrank.pairs import Pairs, collate, length_batches, score_pairs
from calibrank.study.data.schema import RankingQuery
from calibrank.study.model import encode_once
from calibrank.study.model.rankers.logits_cache import read_logits, write_logits

__all__ = ["distinct_pairs", "encode_features", "model_logits", "pair_logits", "shared", "sigmoid", "timed"]

T = TypeVar("T")


def sigmoid(x: np.ndarray) -> np.ndarray:
    """The logistic function in float64 (:func:`scipy.special.expit`: no overflow for large negative logits)."""
    return expit(np.asarray(x, dtype=np.float64))


def timed(fn: Callable[..., T], *args: Any, **kw: Any) -> tuple[T, float]:
    """``fn(*args, **kw)`` and the wall seconds it took."""
    t0 = time.perf_counter()
    out = fn(*args, **kw)
    return out, time.perf_counter() - t0


def distinct_pairs(
    query_sets: Sequence[Sequence[RankingQuery]], *, by_query: bool = False
) -> tuple[list[RankingQuery], list[np.ndarray]]:
    """The distinct (context, candidate) pairs of several query sets, and where each set's pairs are.

    ``(union, index)``: one single-candidate query per distinct pair (also keyed by qid with
    ``by_query``), and per set the ``[Q_i, K_i]`` positions of its pairs in the union.
    """
    seen: dict[tuple, int] = {}
    union: list[RankingQuery] = []
    index = []
    for queries in query_sets:
        ix = np.empty((len(queries), len(queries[0].candidates) if queries else 0), dtype=np.int64)
        for i, q in enumerate(queries):
            for j, cand in enumerate(q.candidates):
                key = (q.qid, q.context, cand) if by_query else (q.context, cand)
                pos = seen.get(key)
                if pos is None:
                    pos = seen[key] = len(union)
                    union.append(RankingQuery(q.qid, q.context, (cand,), (0,)))
                ix[i, j] = pos
        index.append(ix)
    return union, index


def shared(
    query_sets: Sequence[Sequence[RankingQuery]],
    score: Callable[[list[RankingQuery]], tuple[Any, float]],
    take: Callable[[Any, np.ndarray], Any],
    *,
    by_query: bool = False,
    passes: int = 1,
) -> list[tuple[Any, float, dict]]:
    """``(values, seconds, meta)`` of each query set, each distinct pair scored once.

    ``score(union)`` gives the values of the distinct pairs and its seconds; ``take(values, ix)``
    a set's part, ``ix`` its ``[Q, K]`` positions in the union. Each set is charged its share of
    the seconds; ``meta`` records the sharing under ``shared_scoring``.
    """
    union, index = distinct_pairs(query_sets, by_query=by_query)
    values, seconds = score(union)
    total = sum(int(ix.size) for ix in index)
    meta = {
        "query_sets": len(query_sets),
        "pairs": total,
        "distinct_pairs": len(union),
        "seconds": round(seconds, 3),
        "passes": int(passes),
        "pairs_per_second": round(len(union) * passes / seconds, 2) if seconds > 0 else None,
    }
    return [(take(values, ix), seconds * ix.size / total, {"shared_scoring": meta}) for ix in index]


def model_logits(
    n_pairs: int, prepare: Callable[[], T], compute: Callable[[T], np.ndarray], cache: Path | None
) -> tuple[np.ndarray, float]:
    """The logits ``[S, n_pairs]`` by ``compute(prepare())`` and the seconds ``compute`` took.

    With a ``cache`` file they are read from it when it holds a sound copy of that shape
    (with the seconds its scoring took), else computed (``prepare``, the tokenising, untimed)
    and written there.
    """
    if cache is not None:
        cached = read_logits(cache, n_pairs)
        if cached is not None:
            return cached
    logits, seconds = timed(compute, prepare())
    if cache is not None:
        write_logits(cache, logits, seconds)
    return logits, seconds


def pair_logits(
    model: nn.Module, pairs: Pairs, *, batch_size: int, precision, passes: int = 1, dropout: bool = False, seed: int = 0
) -> np.ndarray:
    """Logits ``[passes, N]`` of ``pairs``: from each distinct side encoded once where that gives the model's
    logits (one deterministic pass of a dense-head cross-encoder with no joint layer,
    :func:`calibrank.study.model.encode_once.dense`), else pair by pair (:func:`calibrank.study.model.training.score_pairs`,
    with training-mode dropout in each pass when ``dropout``)."""
    if not dropout and passes == 1 and encode_once.dense(model):
        return encode_once.logits_once(model, pairs, batch_size=batch_size, precision=precision)
    return score_pairs(
        model, pairs, batch_size=batch_size, precision=precision, passes=passes, dropout=dropout, seed=seed
    )


@torch.no_grad()
def encode_features(
    model: nn.Module,
    pairs: Pairs,
    *,
    batch_size: int,
    precision,
    fn: Callable[[nn.Module, dict[str, torch.Tensor]], torch.Tensor] | None = None,
) -> torch.Tensor:
    """Feature vectors ``[N, d]`` (float32) of every pair in eval mode, batched as :func:`calibrank.study.model.training.score_pairs`."""
    device = next(model.parameters()).device
    bf16 = use_bf16(precision, device)
    model.eval()
    out: torch.Tensor | None = None
    for index in length_batches(pairs.lengths, batch_size):
        batch = {k: v.to(device) for k, v in collate(pairs, index).items()}
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=bf16):
            h = fn(model, batch) if fn is not None else model.features(**batch)
        h = h.float()
        if out is None:
            out = torch.empty((len(pairs), h.shape[1]), dtype=torch.float32, device=device)
        out[torch.as_tensor(index, device=device)] = h
    assert out is not None  # pairs are never empty (encode_pairs refuses)
    return out
