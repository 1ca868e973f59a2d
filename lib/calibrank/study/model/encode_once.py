"""Scoring and training with no joint layer: each distinct side of the pairs encoded once, the head joins them.

With ``joint_layers: 0`` (:func:`calibrank.study.model.backbone.encode`) no layer attends across
``[CLS] context [SEP]`` and ``[CLS] response [SEP]``: each side's hidden states are those of the
side encoded alone, and the ``segments`` (or ``mean``) head reads only their per-side sums. So a
context, cut to the room its candidate leaves, and a response are each encoded once per model
however many pairs hold them, and the pairs' logits come from the cached sums (the same numbers
as the pair path up to the floating-point order of batched products). MC Dropout's per-query
masks (:mod:`calibrank.study.model.dropout_masks`) are applied exactly as on the pair row: a
response side takes the rows of its query's mask where it stood in the pair, after its context.
Where layers attend across the pair the scorers here are not used (:func:`applies`).

Training (``training.encode_once``) batches whole queries (:func:`query_batches`) and hands the model each
batch's distinct sides (:func:`collate_sides`), so a context is encoded once per step for its positive and
its negatives, with one dropout mask shared by them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from calibrank.hardware import use_bf16
from calibrank.pairs import Pairs, length_batches
from calibrank.study.model.backbone import encode_alone
from calibrank.study.model.cross_encoder import CrossEncoder, join_sides, side_sums
from calibrank.study.settings.choices import Pooling

__all__ = [
    "Sides",
    "applies",
    "collate_sides",
    "dense",
    "dense_head",
    "encode_sides",
    "features_once",
    "join_sides",
    "logits_once",
    "pair_features",
    "query_batches",
    "split_sides",
]


def applies(model: nn.Module) -> bool:
    """Whether ``model`` scores a pair from its two sides encoded alone: a cross-encoder with no joint
    layer, pooling ``segments`` or ``mean`` (the only poolings 0 joint layers allow)."""
    return getattr(model, "joint_layers", None) == 0 and getattr(model, "pooling", None) in (
        Pooling.segments,
        Pooling.mean,
    )


def dense(model: nn.Module) -> bool:
    """Whether :func:`logits_once` gives ``model``'s logits: :func:`applies` and :class:`CrossEncoder`'s own
    dense head (a model with another output layer scores its features, :func:`features_once`)."""
    return applies(model) and type(model).forward is CrossEncoder.forward


@dataclass
class Sides:
    """The distinct context sides ``[CLS] c [SEP]`` and response sides ``[CLS] r [SEP]`` of some pairs.

    ``ctx_of`` / ``resp_of`` ``[N]``: each pair's sides; ``resp_offset`` ``[N]``: where the pair's response
    side starts in its pair row (the length of its context side). With keys, a side is distinct per key too
    (``ctx_key`` / ``resp_key``: each side's key index), and a response side per offset as well.
    """

    ctx: list[list[int]]
    resp: list[list[int]]
    ctx_of: np.ndarray
    resp_of: np.ndarray
    resp_offset: np.ndarray
    ctx_key: np.ndarray
    resp_key: np.ndarray
    resp_side_offset: np.ndarray

    @property
    def tokens(self) -> int:
        return sum(map(len, self.ctx)) + sum(map(len, self.resp))


def split_sides(pairs: Pairs, key_index: np.ndarray | None = None) -> Sides:
    """The distinct sides of ``pairs`` (``key_index`` ``[N]``: keep sides of different keys apart)."""
    keys = np.zeros(len(pairs), dtype=np.int64) if key_index is None else np.asarray(key_index, dtype=np.int64)
    ctx_seen: dict[tuple, int] = {}
    resp_seen: dict[tuple, int] = {}
    ctx: list[list[int]] = []
    resp: list[list[int]] = []
    ctx_key: list[int] = []
    resp_key: list[int] = []
    resp_side_offset: list[int] = []
    ctx_of = np.empty(len(pairs), dtype=np.int64)
    resp_of = np.empty(len(pairs), dtype=np.int64)
    offset = np.empty(len(pairs), dtype=np.int64)
    for i, (ids, types) in enumerate(zip(pairs.input_ids, pairs.token_type_ids)):
        n0 = len(types) - sum(types)  # [CLS] context [SEP]: segment 0
        c, r = tuple(ids[:n0]), (ids[0], *ids[n0:])
        k = int(keys[i])
        ckey = (k, c)
        pos = ctx_seen.get(ckey)
        if pos is None:
            pos = ctx_seen[ckey] = len(ctx)
            ctx.append(list(c))
            ctx_key.append(k)
        ctx_of[i] = pos
        # Under per-query masks a response side's masks depend on where it stood in the pair row.
        rkey = (k, r) if key_index is None else (k, r, n0)
        pos = resp_seen.get(rkey)
        if pos is None:
            pos = resp_seen[rkey] = len(resp)
            resp.append(list(r))
            resp_key.append(k)
            resp_side_offset.append(n0)
        resp_of[i] = pos
        offset[i] = n0
    return Sides(
        ctx,
        resp,
        ctx_of,
        resp_of,
        offset,
        np.asarray(ctx_key, dtype=np.int64),
        np.asarray(resp_key, dtype=np.int64),
        np.asarray(resp_side_offset, dtype=np.int64),
    )


def query_batches(pairs: Pairs, batch_size: int, *, seed: int, epoch: int) -> list[np.ndarray]:
    """Training batches of whole queries: each holds every pair of ``batch_size // K`` queries (one at least), so that
    a context is encoded once per step for its positive and its negatives (:func:`collate_sides`).

    Queries of similar length go together and the batches are shuffled by (seed, epoch), as
    :func:`calibrank.pairs.length_batches` does with pairs; with ``batch_size`` a multiple of ``K`` a step holds as
    many pairs as on the pair path, and an epoch as many steps.
    """
    k = int(pairs.n_candidates)
    if len(pairs) != k * len(pairs.qids) or not np.array_equal(
        pairs.query_index, np.repeat(np.arange(len(pairs.qids)), k)
    ):
        raise ValueError("query_batches: the pairs are not K per query in query order (as encode_pairs makes them)")
    longest = pairs.lengths.reshape(-1, k).max(1)
    return [
        (q[:, None] * k + np.arange(k)).ravel()
        for q in length_batches(longest, max(1, batch_size // k), seed=seed, epoch=epoch)
    ]


def collate_sides(sides: Sides, index: np.ndarray, pad_id: int = 0) -> dict[str, torch.Tensor]:
    """A batch of the pairs ``index`` as their distinct sides (:data:`calibrank.study.model.cross_encoder.SIDE_KEYS`),
    what :meth:`calibrank.study.model.cross_encoder.CrossEncoder.features` takes instead of pair rows.

    ``sides``: :func:`split_sides` of all the pairs, computed once; each side in ``index``'s pairs is one row,
    however many of the pairs hold it.
    """
    batch: dict[str, torch.Tensor] = {}
    for name, texts, of in (("ctx", sides.ctx, sides.ctx_of[index]), ("resp", sides.resp, sides.resp_of[index])):
        rows, inverse = np.unique(of, return_inverse=True)
        batch[f"{name}_ids"], batch[f"{name}_mask"] = _padded([texts[r] for r in rows], pad_id)
        batch[f"{name}_of"] = torch.as_tensor(inverse.reshape(-1), dtype=torch.long)
    return batch


def _padded(sides: Sequence[Sequence[int]], pad_id: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """``(ids, mask)`` ``[n, longest]``: the sides' token ids padded at the end with ``pad_id``, and 1 on their tokens."""
    width = max(map(len, sides))
    ids = torch.full((len(sides), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(sides), width), dtype=torch.long)
    for row, side in enumerate(sides):
        ids[row, : len(side)] = torch.as_tensor(side)
        mask[row, : len(side)] = 1
    return ids, mask


def _side_batches(lengths: np.ndarray, tokens: int) -> list[np.ndarray]:
    """Batches of sides of at most ``tokens`` padded positions (one side at least), longest first (as
    :func:`calibrank.study.model.training.length_batches` in inference). A budget in tokens rather than
    sequences keeps the matrix products of short sides (responses) as large as those of whole pairs."""
    order = np.argsort(-lengths, kind="stable")
    batches, start, width = [], 0, 0
    for i, j in enumerate(order):
        width = max(width, int(lengths[j]))
        if i > start and (i - start + 1) * width > tokens:
            batches.append(order[start:i])
            start, width = i, int(lengths[j])
    batches.append(order[start:])
    return batches


def encode_sides(
    encoder: nn.Module,
    sides: Sequence[Sequence[int]],
    *,
    batch_size: int,
    bf16: bool,
    device: torch.device,
    width: int | None = None,
    before: Callable[[np.ndarray], None] | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(sums [n, d] float32, counts [n])``: each side's last hidden states summed over its positions.

    Batches hold up to ``batch_size`` pairs' worth of tokens (``batch_size x width``; ``width``: the
    widest pair, default the longest side).

    Each side is run alone through BERT's layers as :func:`calibrank.study.model.backbone.encode` runs it
    below the joint layers (segment 0 embeddings, positions from 0, attending to its own tokens only).
    ``before(index)`` runs before each batch (MC Dropout sets its masks there).
    """
    lengths = np.fromiter(map(len, sides), dtype=np.int64, count=len(sides))
    sums: torch.Tensor | None = None
    counts = torch.as_tensor(lengths, dtype=torch.float32, device=device)
    budget = batch_size * (width or int(lengths.max()))
    for index in _side_batches(lengths, budget):
        ids, mask = _padded([sides[i] for i in index])
        ids, mask = ids.to(device), mask.to(device)
        if before is not None:
            before(index)
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=bf16):
            h = encode_alone(encoder, ids, mask)
        summed, _ = side_sums(h, mask)
        if sums is None:
            sums = torch.empty((len(sides), summed.shape[1]), dtype=torch.float32, device=device)
        sums[torch.as_tensor(index, device=device)] = summed
    assert sums is not None  # pairs are never empty (encode_pairs refuses)
    return sums, counts


def pair_features(
    model: nn.Module,
    sides: Sides,
    ctx: tuple[torch.Tensor, torch.Tensor],
    resp: tuple[torch.Tensor, torch.Tensor],
    index: np.ndarray | slice = slice(None),
) -> torch.Tensor:
    """The pooled features of pairs ``index`` from the sums and counts of :func:`encode_sides` on ``sides``."""
    device = ctx[0].device
    ci = torch.as_tensor(sides.ctx_of[index], device=device)
    ri = torch.as_tensor(sides.resp_of[index], device=device)
    return join_sides(model.pooling, (ctx[0][ci], ctx[1][ci]), (resp[0][ri], resp[1][ri]))


def dense_head(model: nn.Module, pooled: torch.Tensor) -> torch.Tensor:
    """:class:`calibrank.study.model.cross_encoder.CrossEncoder`'s head on pooled features, in fp32 as there."""
    with torch.autocast(device_type=pooled.device.type, enabled=False):
        return model.head(model.dropout(pooled.float())).squeeze(-1)


@torch.no_grad()
def features_once(
    model: nn.Module,
    pairs: Pairs,
    *,
    batch_size: int,
    precision,
    head: Callable[[nn.Module, torch.Tensor], torch.Tensor] | None = None,
    chunk: int = 65536,
) -> torch.Tensor:
    """Per pair ``[N, ...]`` (float32): the pooled features, or ``head(model, pooled)`` under the scoring's
    autocast, from each distinct side encoded once; what :func:`calibrank.study.model.rankers.scoring.encode_features`
    gives on a model that :func:`applies`."""
    if not applies(model):
        raise ValueError("features_once: the model has joint layers (or a pooling that reads one side); score pairs")
    device = next(model.parameters()).device
    bf16 = use_bf16(precision, device)
    model.eval()
    sides = split_sides(pairs)
    width = int(pairs.lengths.max()) + 1  # the pair path's widest row (the response's own [CLS])
    ctx = encode_sides(model.encoder, sides.ctx, batch_size=batch_size, bf16=bf16, device=device, width=width)
    resp = encode_sides(model.encoder, sides.resp, batch_size=batch_size, bf16=bf16, device=device, width=width)
    parts = []
    for start in range(0, len(pairs), chunk):
        pooled = pair_features(model, sides, ctx, resp, slice(start, start + chunk))
        if head is not None:
            with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=bf16):
                pooled = head(model, pooled)
        parts.append(pooled.float())
    return torch.cat(parts)


def logits_once(model: nn.Module, pairs: Pairs, *, batch_size: int, precision) -> np.ndarray:
    """Logits ``[1, N]`` of a cross-encoder with a dense head (eval mode), each distinct side encoded once:
    :func:`calibrank.study.model.training.score_pairs`'s numbers on a model that :func:`applies`."""
    logits = features_once(model, pairs, batch_size=batch_size, precision=precision, head=dense_head)
    return logits.cpu().numpy().astype(np.float64)[None]
