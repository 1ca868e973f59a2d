"""MC Dropout's per-query masks: one dropout mask per query and pass, shared by its candidates.

:func:`score_pairs_per_query` scores pairs with the masks of (seed, pass, query id, site)
(:func:`mask_seeds`), so each pass is one sub-network scoring a whole list and a pair's logits do not
depend on the pairs batched with it; attention dropout acts on value vectors, dropping key j for
every position at once. With no joint layer, :func:`score_sides_per_query` gives the same logits
from each (query, context side) encoded once per pass, a response side taking its query's mask
rows where it stood in the pair row. Used by :mod:`calibrank.study.model.rankers.mc_dropout`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import torch
from torch import nn

from calibrank.hardware import use_bf16
from calibrank.pairs import Pairs, collate, length_batches
from calibrank.study.model import encode_once

__all__ = ["mask_seeds", "score_pairs_per_query", "score_sides_per_query"]


def _key_number(key: str) -> int:
    return int.from_bytes(hashlib.blake2b(key.encode("utf-8"), digest_size=8).digest(), "little")


def mask_seeds(seed: int, pass_index: int, key: str, n_sites: int) -> list[int]:
    """The torch seeds of a query's dropout masks in one pass, one per dropout site: a function of
    (seed, pass, query id) only (:class:`numpy.random.SeedSequence`)."""
    words = [int(seed) % (1 << 64), int(pass_index), _key_number(key)]
    return [int(x >> 1) for x in np.random.SeedSequence(words).generate_state(n_sites, np.uint64)]


class _PerQueryMasks:
    """Forward hooks that multiply per-query dropout masks into an eval-mode cross-encoder.

    Sites, in module order: every ``nn.Dropout`` with p > 0 but attention-probability dropout, and the
    value projection of every self-attention module (with its attention dropout's p).
    """

    def __init__(self, model: nn.Module, *, max_length: int, seed: int) -> None:
        self.max_length = int(max_length)
        self.seed = int(seed)
        self.sites: list[tuple[nn.Module, str, float, int]] = []  # (module hooked, kind, p, heads)
        attention_dropouts = set()
        for module in model.modules():
            if all(isinstance(getattr(module, a, None), nn.Linear) for a in ("query", "key", "value")) and isinstance(
                getattr(module, "dropout", None), nn.Dropout
            ):
                attention_dropouts.add(id(module.dropout))
        for module in model.modules():
            if id(module) in attention_dropouts:
                continue
            if isinstance(module, nn.Dropout) and module.p > 0:
                self.sites.append((module, "hidden", float(module.p), 0))
            elif (
                all(isinstance(getattr(module, a, None), nn.Linear) for a in ("query", "key", "value"))
                and isinstance(getattr(module, "dropout", None), nn.Dropout)
                and module.dropout.p > 0
            ):
                heads = int(getattr(module, "num_attention_heads", 0) or getattr(module, "num_heads", 0))
                if heads <= 0:
                    raise ValueError(
                        f"mc_dropout: attention module {type(module).__name__} does not say its number of heads"
                    )
                self.sites.append((module.value, "attention", float(module.dropout.p), heads))
        if not self.sites:
            raise ValueError("mc_dropout: the model has no dropout with p > 0 to sample")
        self.pass_index = 0
        self.keys: list[str] = []
        self.rows = torch.zeros(0, dtype=torch.long)
        self.slices: list[tuple[int, int, int]] | None = None
        self._seeds: dict[tuple[int, str], list[int]] = {}
        self._generator = torch.Generator()

    def set_batch(self, keys: list[str], rows: np.ndarray) -> None:
        """The batch's distinct query ids and each row's index among them."""
        self.keys, self._seeds = keys, {}
        self.rows = torch.as_tensor(rows, dtype=torch.long)
        starts = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]])
        ends = np.r_[starts[1:], len(rows)]
        self.slices = [(int(a), int(b), int(rows[a])) for a, b in zip(starts, ends)]
        if len(self.slices) != len(keys):  # a query's rows are not contiguous
            self.slices = None

    def _apply(self, output: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        """``output[i] *= keep[u(i)]`` in place, ``keep`` ``[U, ...]`` broadcast over each query's rows."""
        if self.slices is None:
            return output.mul_(keep[self.rows.to(keep.device)])
        for a, b, u in self.slices:
            output[a:b].mul_(keep[u])
        return output

    def _masks(
        self, site: int, p: float, shape: tuple[int, ...], dtype: torch.dtype, device: torch.device
    ) -> torch.Tensor:
        """Scaled keep-masks ``[U, *shape]`` of the batch's queries at ``site`` in this pass.

        A ``[width, d]`` site takes the first ``width`` rows of the query's ``[max_length, d]`` mask, so a
        mask does not depend on the batch.
        """
        uniform = self._uniform(site, shape)
        scale = torch.tensor(1.0 / (1.0 - p), dtype=dtype)
        return torch.where(uniform >= p, scale, torch.zeros((), dtype=dtype)).to(device)

    def _uniform(self, site: int, shape: tuple[int, ...]) -> torch.Tensor:
        """Uniform draws ``[U, *shape]`` for the current queries at ``site`` in this pass, each from its own seed
        (:func:`mask_seeds`): a query's first n values do not depend on the shape drawn."""
        g = self._generator
        uniform = torch.empty((len(self.keys), *shape), dtype=torch.float32)
        for u, key in enumerate(self.keys):
            seeds = self._seeds.get((self.pass_index, key))
            if seeds is None:
                seeds = self._seeds[(self.pass_index, key)] = mask_seeds(
                    self.seed, self.pass_index, key, len(self.sites)
                )
            g.manual_seed(seeds[site])
            uniform[u].uniform_(generator=g)
        return uniform

    def _hook(self, site: int, kind: str, p: float, heads: int):
        def hook(module: nn.Module, inputs: Any, output: torch.Tensor) -> torch.Tensor:
            if output.dim() == 3:
                b, width, d = output.shape
                if width > self.max_length:
                    raise ValueError(f"mc_dropout: a batch of width {width} exceeds max_length {self.max_length}")
                if kind == "attention":  # [U, W, H] -> one factor per value vector of a head
                    keep = self._masks(site, p, (width, heads), output.dtype, output.device)
                    return self._apply(output.view(b, width, heads, d // heads), keep.unsqueeze(-1)).view(b, width, d)
                return self._apply(output, self._masks(site, p, (width, d), output.dtype, output.device))
            if output.dim() == 2 and kind == "hidden":
                return self._apply(output, self._masks(site, p, (output.shape[1],), output.dtype, output.device))
            raise ValueError(
                f"mc_dropout: per-query masks expect [B, L, d] or [B, d] activations, got {list(output.shape)}"
            )

        return hook

    @contextmanager
    def active(self):
        handles = [
            module.register_forward_hook(self._hook(i, kind, p, heads))
            for i, (module, kind, p, heads) in enumerate(self.sites)
        ]
        try:
            yield self
        finally:
            for h in handles:
                h.remove()


@torch.no_grad()
def score_pairs_per_query(
    model: nn.Module,
    pairs: Pairs,
    keys: Sequence[str],
    *,
    passes: int,
    seed: int,
    max_length: int,
    batch_size: int = 64,
    precision: Any = "auto",
) -> np.ndarray:
    """Logits ``[passes, N]`` of every pair with one dropout mask per key (query id) and pass.

    Masks depend on (seed, pass, key) only, so a pair's logits do not depend on the pairs scored with
    it (up to the floating-point order of a batched product).
    """
    if len(keys) != len(pairs):
        raise ValueError(f"score_pairs_per_query: {len(keys)} keys for {len(pairs)} pairs")
    device = next(model.parameters()).device
    bf16 = use_bf16(precision, device)
    model.eval()
    masks = _PerQueryMasks(model, max_length=max_length, seed=seed)
    uniq, key_index = np.unique(np.asarray(keys, dtype=object).astype(str), return_inverse=True)
    out = np.empty((passes, len(pairs)), dtype=np.float64)
    with masks.active(), torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=bf16):
        for index in length_batches(pairs.lengths, batch_size):  # the batches of score_pairs
            index = index[np.argsort(key_index[index], kind="stable")]  # a query's rows together: one slice each
            batch = {k: v.to(device) for k, v in collate(pairs, index).items()}
            batch_keys, rows = np.unique(key_index[index], return_inverse=True)
            masks.set_batch([str(uniq[k]) for k in batch_keys], rows)
            for t in range(passes):
                masks.pass_index = t
                out[t, index] = model(**batch).float().cpu().numpy()
    model.eval()
    return out


class _QueryMasks(_PerQueryMasks):
    """Per-query masks for sides encoded alone, drawn once per query, site and pass for a chunk of queries
    (:meth:`start`) and read by row: row ``i`` of a batch takes its query's mask rows from ``offset[i]``
    on, the rows its positions held in the pair row (0 for a context side, the context side's length for
    a response side), so that each position is dropped as on the pair path. A mask's first n rows do not
    depend on n (``test_rankers``): the rows drawn are the pair path's."""

    def __init__(self, model: nn.Module, *, max_length: int, seed: int) -> None:
        super().__init__(model, max_length=max_length, seed=seed)
        self.offsets: torch.Tensor | None = None
        self._flags: dict[tuple[int, int], torch.Tensor] = {}  # (site, rows drawn) -> keep flags

    def start(self, keys: list[str]) -> None:
        """The queries whose masks this pass's next batches read (each site's drawn at its first use)."""
        self.keys, self._seeds, self._flags = keys, {}, {}

    def set_rows(self, rows: np.ndarray, offsets: np.ndarray | None = None) -> None:
        """Each batch row's query (its index in :meth:`start`'s keys) and its first mask row (None: 0)."""
        self.rows = torch.as_tensor(rows, dtype=torch.long)
        self.offsets = None if offsets is None else torch.as_tensor(offsets, dtype=torch.long)

    def _keep(self, site: int, p: float, rows: int, width: int) -> torch.Tensor:
        """Keep flags ``[C, rows, width]`` of the chunk's queries at ``site`` in this pass."""
        keep = self._flags.get((site, rows))
        if keep is None:
            keep = self._flags[(site, rows)] = self._uniform(site, (rows, width)) >= p
        return keep

    def _masks(
        self, site: int, p: float, shape: tuple[int, ...], dtype: torch.dtype, device: torch.device
    ) -> torch.Tensor:
        """Scaled keep-masks ``[B, *shape]``, one per batch row."""
        if len(shape) == 1:  # a pooled feature [B, d]: the first row of the query's mask
            keep = self._keep(site, p, 1, shape[0])[self.rows, 0]
        else:
            at = torch.arange(shape[0]) if self.offsets is None else self.offsets.unsqueeze(1) + torch.arange(shape[0])
            at = at.clamp(max=self.max_length - 1)  # rows past a side are padding
            keep = self._keep(site, p, self.max_length, shape[1])[self.rows.unsqueeze(1), at]  # [B, width, ...]
        scale = torch.tensor(1.0 / (1.0 - p), dtype=dtype)
        return torch.where(keep, scale, torch.zeros((), dtype=dtype)).to(device)

    def _apply(self, output: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        return output.mul_(keep)


@torch.no_grad()
def score_sides_per_query(
    model: nn.Module,
    pairs: Pairs,
    keys: Sequence[str],
    *,
    passes: int,
    seed: int,
    max_length: int,
    batch_size: int = 64,
    precision: Any = "auto",
    chunk: int = 256,
) -> np.ndarray:
    """:func:`score_pairs_per_query`'s logits ``[passes, N]`` on a model with no joint layer
    (:func:`calibrank.study.model.encode_once.applies`): in each pass each distinct (query, context side) is
    encoded once and each response side where it stood in its pair row, with the same masks.

    A response side's masks depend on its query and its offset, so responses are encoded per pair; the
    saving is the context, encoded once per query and truncation instead of once per candidate. The
    queries go ``chunk`` at a time: each one's masks are drawn once per pass and site, and its sides are
    batched by length with any other query's (a pair batch's worth of tokens, little padding).
    """
    if len(keys) != len(pairs):
        raise ValueError(f"score_sides_per_query: {len(keys)} keys for {len(pairs)} pairs")
    if not encode_once.applies(model):
        raise ValueError("score_sides_per_query: the model has joint layers; use score_pairs_per_query")
    device = next(model.parameters()).device
    bf16 = use_bf16(precision, device)
    model.eval()
    masks = _QueryMasks(model, max_length=max_length, seed=seed)
    uniq, key_index = np.unique(np.asarray(keys, dtype=object).astype(str), return_inverse=True)
    sides = encode_once.split_sides(pairs, key_index)
    width = int(pairs.lengths.max()) + 1  # the pair path's widest row
    out = np.empty((passes, len(pairs)), dtype=np.float64)
    chunks = [np.arange(q, min(q + chunk, len(uniq))) for q in range(0, len(uniq), chunk)]
    with masks.active():
        for t in range(passes):
            masks.pass_index = t
            for members in chunks:
                local = np.full(len(uniq), -1, dtype=np.int64)
                local[members] = np.arange(len(members))
                masks.start([str(uniq[k]) for k in members])
                ctx_ix = np.flatnonzero(local[sides.ctx_key] >= 0)
                resp_ix = np.flatnonzero(local[sides.resp_key] >= 0)
                ctx = encode_once.encode_sides(
                    model.encoder,
                    [sides.ctx[i] for i in ctx_ix],
                    batch_size=batch_size,
                    bf16=bf16,
                    device=device,
                    width=width,
                    before=lambda index: masks.set_rows(local[sides.ctx_key[ctx_ix[index]]]),
                )
                resp = encode_once.encode_sides(
                    model.encoder,
                    [sides.resp[i] for i in resp_ix],
                    batch_size=batch_size,
                    bf16=bf16,
                    device=device,
                    width=width,
                    before=lambda index: masks.set_rows(
                        local[sides.resp_key[resp_ix[index]]], sides.resp_side_offset[resp_ix[index]]
                    ),
                )
                # the chunk's pairs, with their sides' rows among the chunk's sides
                pair_ix = np.flatnonzero(local[key_index] >= 0)
                ctx_at = np.full(len(sides.ctx), -1, dtype=np.int64)
                ctx_at[ctx_ix] = np.arange(len(ctx_ix))
                resp_at = np.full(len(sides.resp), -1, dtype=np.int64)
                resp_at[resp_ix] = np.arange(len(resp_ix))
                for start in range(0, len(pair_ix), batch_size):
                    index = pair_ix[start : start + batch_size]
                    masks.set_rows(local[key_index[index]])
                    ci = torch.as_tensor(ctx_at[sides.ctx_of[index]], device=device)
                    ri = torch.as_tensor(resp_at[sides.resp_of[index]], device=device)
                    pooled = encode_once.join_sides(model.pooling, (ctx[0][ci], ctx[1][ci]), (resp[0][ri], resp[1][ri]))
                    out[t, index] = encode_once.dense_head(model, pooled).cpu().numpy()
    model.eval()
    return out
