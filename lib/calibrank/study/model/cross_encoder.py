"""The pointwise cross-encoder every ranker trains: an encoder, dropout and a head on the pooled feature.

:class:`CrossEncoder` is the BERT ranker of Penha & Hauff (2021, sec. 3.2), one relevance logit per
(context, response) pair; the GP rankers replace its head (:mod:`calibrank.study.model.rankers.sngp`,
:mod:`calibrank.study.model.rankers.pg_gp`). :func:`init_cosine_head` starts a head on ``segments``
features where a cosine of the two sides is; :func:`head_param_groups` gives an output layer that
starts from nothing a rate of its own.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from calibrank.study.model.backbone import Backbone, encode, encode_alone
from calibrank.study.settings.checks import ConfigError
from calibrank.study.settings.choices import Pooling
from calibrank.study.settings.schema import HEAD_DROPOUT, check_joint_layers

__all__ = [
    "CrossEncoder",
    "SEGMENT_COSINE_BIAS",
    "SEGMENT_COSINE_WEIGHT",
    "SIDE_KEYS",
    "head_param_groups",
    "init_cosine_head",
    "join_sides",
    "side_sums",
]

#: ``segments`` pooling: the head starts as ``SEGMENT_COSINE_WEIGHT * cos(u, v) + SEGMENT_COSINE_BIAS``.
#: Set so that on MiniLM the start is a logit of about 0 with a spread of about 1
#: (docs/decisions.md, "Start of the segments head").
SEGMENT_COSINE_WEIGHT = 10.0
SEGMENT_COSINE_BIAS = -7.7

#: The keys of a batch of sides (:func:`calibrank.study.model.encode_once.collate_sides`): the distinct context
#: and response sides (ids and padding mask) and, per pair, the row of its context and of its response.
SIDE_KEYS = ("ctx_ids", "ctx_mask", "resp_ids", "resp_mask", "ctx_of", "resp_of")


class CrossEncoder(nn.Module):
    """Encoder + dropout + linear head on the pooled [CLS] feature -> one relevance logit per pair.

    The encoder attends across context and response in its top ``backbone.joint_layers`` layers
    (all by default; :func:`calibrank.study.model.backbone.encode`). ``head``: the output layer on the
    pooled feature (a GP layer); None: a dense layer seeded by ``seed``, which starts at a scaled
    cosine of the two sides on ``segments`` features (:func:`init_cosine_head`).
    """

    def __init__(
        self,
        backbone: Backbone,
        *,
        head_dropout: float = HEAD_DROPOUT,
        seed: int = 0,
        pooling: Pooling | str = Pooling.pooler,
        head: nn.Module | None = None,
    ) -> None:
        super().__init__()
        self.encoder = backbone.encoder
        self.pooling = Pooling(pooling)
        try:
            self.joint_layers = check_joint_layers(backbone.joint_layers, pooling=self.pooling)
        except ConfigError as exc:
            raise ConfigError(f"training.{exc}") from None
        pooler = getattr(self.encoder, "pooler", None)
        if self.pooling is not Pooling.pooler and pooler is not None:
            # Not in the path: frozen, so that no optimizer (or DDP's gradient reduction) waits for its gradient.
            pooler.requires_grad_(False)
        self.dropout = nn.Dropout(head_dropout)
        if head is None:
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(seed)
                head = nn.Linear(backbone.hidden_size, 1)
            if self.pooling is Pooling.segments:
                init_cosine_head(head, backbone.hidden_size)
        self.head = head

    def features(self, input_ids=None, attention_mask=None, token_type_ids=None, **sides) -> torch.Tensor:
        """The pooled feature ``[B, d]`` of each pair: from a pair batch, or from a batch of sides (``SIDE_KEYS``),
        each distinct side encoded once, where no layer is joint."""
        if sides:
            return self.side_features(**sides)
        out = encode(self.encoder, input_ids, attention_mask, token_type_ids, joint_layers=self.joint_layers)
        # with separate lower layers the response has its own [CLS]: one more position per row
        h, attention_mask, token_type_ids = out.hidden, out.attention_mask, out.token_type_ids
        if self.pooling is Pooling.mean:
            h = h.float()
            mask = attention_mask.unsqueeze(-1).to(h.dtype)
            return (h * mask).sum(1) / mask.sum(1).clamp(min=1.0)
        if self.pooling is Pooling.segments:
            if token_type_ids is None:
                raise ValueError(
                    "segments pooling needs token_type_ids (0 = context, 1 = response), as "
                    "calibrank.study.model.training.collate makes them"
                )
            am = attention_mask.to(torch.float32)
            tt = token_type_ids.to(torch.float32)
            return join_sides(self.pooling, side_sums(h, (1 - tt) * am), side_sums(h, tt * am))
        return out.pooled if out.pooled is not None else h[:, 0]

    def side_features(self, **sides: torch.Tensor) -> torch.Tensor:
        """:meth:`features` of a batch of sides: each side run alone (:func:`calibrank.study.model.backbone.encode_alone`),
        its hidden states summed, and each pair's two sums joined as the pooling joins them (:func:`join_sides`).

        The same numbers as the pair rows when no layer is joint, up to the order of floating-point sums; in
        training, one dropout mask per side and step, shared by the pairs that hold the side.
        """
        if sorted(sides) != sorted(SIDE_KEYS):
            raise ValueError(f"a batch of sides has the keys {list(SIDE_KEYS)}, got {sorted(sides)}")
        if self.joint_layers != 0 or self.pooling not in (Pooling.segments, Pooling.mean):
            raise ValueError(
                f"sides are encoded alone only with joint_layers 0 and segments or mean pooling "
                f"(this model: joint_layers {self.joint_layers}, pooling {self.pooling.value}); collate pairs"
            )
        ctx = side_sums(encode_alone(self.encoder, sides["ctx_ids"], sides["ctx_mask"]), sides["ctx_mask"])
        resp = side_sums(encode_alone(self.encoder, sides["resp_ids"], sides["resp_mask"]), sides["resp_mask"])
        ci, ri = sides["ctx_of"], sides["resp_of"]
        return join_sides(self.pooling, (ctx[0][ci], ctx[1][ci]), (resp[0][ri], resp[1][ri]))

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, **sides) -> torch.Tensor:
        pooled = self.features(input_ids, attention_mask, token_type_ids, **sides)
        # The head runs in fp32 even under bf16 autocast: bf16 keeps 8 mantissa bits, which
        # ties the logits of similar candidates (and ties count against the relevant one).
        with torch.autocast(device_type=pooled.device.type, enabled=False):
            return self.head(self.dropout(pooled.float())).squeeze(-1)


def side_sums(hidden: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(sums [n, d] float32, counts [n])``: each side's hidden states summed over its positions."""
    h = hidden.float()
    return (h * mask.unsqueeze(-1).to(h.dtype)).sum(1), mask.sum(1).to(torch.float32)


def join_sides(
    pooling: Pooling, ctx: tuple[torch.Tensor, torch.Tensor], resp: tuple[torch.Tensor, torch.Tensor]
) -> torch.Tensor:
    """The pooled features ``[N, d]`` of :meth:`CrossEncoder.features` from each pair's side sums and counts
    (rows already gathered per pair): ``mean`` over both sides' positions, or ``segments``' scaled product of
    the two sides' normalised means."""
    (cs, cn), (rs, rn) = ctx, resp
    if Pooling(pooling) is Pooling.mean:
        return (cs + rs) / (cn + rn).clamp(min=1.0).unsqueeze(-1)
    u = torch.nn.functional.normalize(cs / cn.clamp(min=1.0).unsqueeze(-1), dim=-1)
    v = torch.nn.functional.normalize(rs / rn.clamp(min=1.0).unsqueeze(-1), dim=-1)
    return u * v * math.sqrt(u.shape[-1])


def init_cosine_head(linear: nn.Linear, hidden_size: int) -> None:
    """Set a linear layer on ``segments`` features to ``SEGMENT_COSINE_WEIGHT * cos(u, v) + SEGMENT_COSINE_BIAS``.

    The features are ``sqrt(d) * u * v``, so a weight ``w / sqrt(d)`` on every coordinate sums to ``w * cos(u, v)``.
    """
    with torch.no_grad():
        linear.weight.fill_(SEGMENT_COSINE_WEIGHT / math.sqrt(hidden_size))
        if linear.bias is not None:
            linear.bias.fill_(SEGMENT_COSINE_BIAS)


def head_param_groups(model: nn.Module, head_lr: float, name: str = "head") -> list[dict]:
    """Optimizer groups: the encoder at ``training.lr``, the output layer ``model.head`` at ``head_lr``.

    For output layers that start from nothing (a GP layer), which would barely move at the
    encoder's small rate.
    """
    head = [p for p in model.head.parameters() if p.requires_grad]
    head_ids = {id(p) for p in head}
    rest = [p for p in model.parameters() if p.requires_grad and id(p) not in head_ids]
    groups: list[dict] = [{"params": rest, "name": "encoder"}]
    if head:
        groups.append({"params": head, "lr": float(head_lr), "name": name})
    return groups
