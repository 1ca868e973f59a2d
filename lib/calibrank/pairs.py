"""Tokenised (query, candidate) pairs and their relevance logits from a torch model (MC Dropout when asked).

Used by the study's training and by ``calibrank assess --checkpoint``; it needs torch (the ``checkpoint`` extra),
so nothing that ``import calibrank`` or the command loads imports this module.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from calibrank.hardware import Precision, use_bf16

__all__ = ["Pairs", "collate", "length_batches", "score_pairs"]


@dataclass
class Pairs:
    """Tokenised (context, candidate) pairs of a query set, flattened in query order."""

    input_ids: list[list[int]]
    token_type_ids: list[list[int]]
    labels: np.ndarray  # [N] 0/1
    query_index: np.ndarray  # [N] index of the pair's query
    qids: list[str]  # [Q]
    n_candidates: int  # K (every query has K candidates)
    truncated_responses: int = 0

    @property
    def lengths(self) -> np.ndarray:
        return np.fromiter((len(x) for x in self.input_ids), dtype=np.int64, count=len(self.input_ids))

    def __len__(self) -> int:
        return len(self.input_ids)


def length_batches(
    lengths: np.ndarray, batch_size: int, *, seed: int | None = None, epoch: int = 0, bucket: int = 50
) -> list[np.ndarray]:
    """Index batches of similar lengths: shuffled by (seed, epoch) in training, longest first in inference."""
    n = len(lengths)
    if seed is None:
        order = np.argsort(-lengths, kind="stable")
        return [order[i : i + batch_size] for i in range(0, n, batch_size)]
    rng = np.random.default_rng([seed, epoch])
    perm = rng.permutation(n)
    batches: list[np.ndarray] = []
    span = batch_size * bucket
    for start in range(0, n, span):
        chunk = perm[start : start + span]
        chunk = chunk[np.argsort(lengths[chunk], kind="stable")]
        batches.extend(chunk[i : i + batch_size] for i in range(0, len(chunk), batch_size))
    return [batches[i] for i in rng.permutation(len(batches))]


def collate(pairs: Pairs, index: np.ndarray, pad_id: int = 0) -> dict[str, torch.Tensor]:
    width = max(len(pairs.input_ids[i]) for i in index)
    ids = torch.full((len(index), width), pad_id, dtype=torch.long)
    types = torch.zeros((len(index), width), dtype=torch.long)
    mask = torch.zeros((len(index), width), dtype=torch.long)
    for row, i in enumerate(index):
        n = len(pairs.input_ids[i])
        ids[row, :n] = torch.tensor(pairs.input_ids[i])
        types[row, :n] = torch.tensor(pairs.token_type_ids[i])
        mask[row, :n] = 1
    return {"input_ids": ids, "token_type_ids": types, "attention_mask": mask}


def _autocast(device: torch.device, enabled: bool):
    return torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=enabled)


@torch.no_grad()
def score_pairs(
    model: nn.Module,
    pairs: Pairs,
    *,
    batch_size: int = 64,
    passes: int = 1,
    dropout: bool = False,
    seed: int = 0,
    precision: Precision | str = Precision.auto,
    forward: Callable[[nn.Module, dict[str, torch.Tensor]], torch.Tensor] | None = None,
    device: torch.device | None = None,
) -> np.ndarray:
    """Relevance logits ``[passes, N]`` of every pair.

    ``dropout=True`` keeps dropout on (MC dropout), masks from a torch RNG seeded with ``seed``;
    ``forward(model, batch)`` overrides ``model(**batch)``.
    """
    device = device or next(model.parameters()).device
    bf16 = use_bf16(precision, device)
    model.eval()
    if dropout:
        # Every stochastic layer as in training: nn.Dropout modules and the attention-probability
        # dropout that BERT's self-attention applies when its own module is in training mode.
        # Modules that would update state in training mode (spectral-norm power iteration)
        # stay in eval mode.
        model.train()
        for m in model.modules():
            if getattr(m, "updates_in_training", False):
                m.eval()
    out = np.empty((passes, len(pairs)), dtype=np.float64)
    with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
        torch.manual_seed(seed)
        for index in length_batches(pairs.lengths, batch_size):
            batch = {k: v.to(device) for k, v in collate(pairs, index).items()}
            for t in range(passes):
                with _autocast(device, bf16):
                    logits = forward(model, batch) if forward else model(**batch)
                out[t, index] = logits.float().cpu().numpy()
    model.eval()
    return out
