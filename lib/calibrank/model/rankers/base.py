"""What every ranker shares: the cross-encoder model, the model cache, and scoring into Predictions.

:class:`CrossEncoder` is the pointwise BERT ranker of Penha & Hauff (2021, sec. 3.2), one logit
on the pooled feature. :class:`Ranker` is the interface, ``fit(train, valid)`` then
``predict(queries) -> Predictions``. Trained weights are cached under everything that determines
them, code included (:mod:`calibrank.codekey`), so rankers that share a model train it once;
keyword arguments are the profile section's fields (:func:`ranker_settings`).
"""

from __future__ import annotations

import dataclasses
import math
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch
from scipy.special import expit
from torch import nn

from ...codekey import code_hash, package_versions
from ...data.schema import RankingQuery
from ...data.splits import TURN_SEP, UTTERANCE_SEP
from ...metrics.ranking import recall_at_k
from ...hardware import precision_name, scoring_batch_size, use_bf16
from ...predictions import Predictions
from ...atomic import stable_hash
from ...settings.checks import ConfigError
from ...settings.choices import ContextStyle, Pooling
from ...settings.config import build_section
from ...settings.schema import HEAD_DROPOUT, TrainingConfig, check_joint_layers
from .. import encode_once, losses
from ..backbone import Backbone, encode, load_backbone
from ..losses import binary_cross_entropy
from ..training import Pairs, TrainResult, collate, encode_pairs, length_batches, load_trained, score_pairs, train_model
from .logits_cache import read_logits, write_logits

__all__ = ["CrossEncoder", "Ranker", "TrainedModel", "distinct_pairs", "encode_features", "head_param_groups", "init_cosine_head",
           "queries_version", "checked", "ranker_settings", "sigmoid", "MODEL_PACKAGES"]

#: The installed packages whose version is part of a trained model's key (the code of calibrank
#: itself enters as :func:`calibrank.codekey.code_hash`): they compute the forward and backward
#: passes, tokenise the text and draw the batch order.
MODEL_PACKAGES = ("torch", "transformers", "tokenizers", "numpy")
_NOT_IN_KEY = ("log_every", "checkpoint_every", "eval_batch_size")
_IN_KEY_UNLESS_DEFAULT = {"schedule": "linear", "selection": "best", "joint_layers": None}
#: ``segments`` pooling: the head starts as ``SEGMENT_COSINE_WEIGHT * cos(u, v) + SEGMENT_COSINE_BIAS``.
#: Set so that on MiniLM the start is a logit of about 0 with a spread of about 1
#: (docs/decisions.md, "Start of the segments head").
SEGMENT_COSINE_WEIGHT = 10.0
SEGMENT_COSINE_BIAS = -7.7


def sigmoid(x: np.ndarray) -> np.ndarray:
    """The logistic function in float64 (:func:`scipy.special.expit`: no overflow for large negative logits)."""
    return expit(np.asarray(x, dtype=np.float64))


def queries_version(queries: Sequence[RankingQuery]) -> str:
    """A hash of a query set's content: part of every cache key that depends on the data."""
    return stable_hash([[q.qid, list(q.context), list(q.candidates), list(q.labels)] for q in queries])


def ranker_settings(section: type, where: str, kw: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """Split a ranker's keyword arguments into its config section and the rest (:class:`Ranker`'s own).

    Fields of ``section`` build it with :func:`calibrank.settings.config.build_section` (its defaults and
    checks, errors naming ``where``); other arguments go to :class:`Ranker`, which refuses unknown ones.
    """
    fields = {f.name for f in dataclasses.fields(section)}
    values = {k: v for k, v in kw.items() if k in fields}
    rest = {k: v for k, v in kw.items() if k not in fields}
    return build_section(section, values, where=where), rest


def checked(where: str, check: Callable[..., Any], *args: Any) -> Any:
    """``check(*args)`` (a :mod:`calibrank.settings.config` rule) with ``where`` (the ranker's name) before its message."""
    try:
        return check(*args)
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None


class CrossEncoder(nn.Module):
    """Encoder + dropout + linear head on the pooled [CLS] feature -> one relevance logit per pair.

    The encoder attends across context and response in its top ``backbone.joint_layers`` layers
    (all by default; :func:`calibrank.model.backbone.encode`).
    """

    def __init__(self, backbone: Backbone, *, head_dropout: float = HEAD_DROPOUT, seed: int = 0,
                 pooling: Pooling | str = Pooling.pooler) -> None:
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
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            self.head = nn.Linear(backbone.hidden_size, 1)
        if self.pooling is Pooling.segments:
            init_cosine_head(self.head, backbone.hidden_size)

    def features(self, input_ids, attention_mask, token_type_ids=None) -> torch.Tensor:
        out = encode(self.encoder, input_ids, attention_mask, token_type_ids, joint_layers=self.joint_layers)
        # with separate lower layers the response has its own [CLS]: one more position per row
        h, attention_mask, token_type_ids = out.hidden, out.attention_mask, out.token_type_ids
        if self.pooling is Pooling.mean:
            h = h.float()
            mask = attention_mask.unsqueeze(-1).to(h.dtype)
            return (h * mask).sum(1) / mask.sum(1).clamp(min=1.0)
        if self.pooling is Pooling.segments:
            if token_type_ids is None:
                raise ValueError("segments pooling needs token_type_ids (0 = context, 1 = response), as "
                                 "calibrank.model.training.collate makes them")
            am = attention_mask.to(torch.float32)
            tt = token_type_ids.to(torch.float32)
            h = h.float()
            u = (h * ((1 - tt) * am).unsqueeze(-1)).sum(1) / ((1 - tt) * am).sum(1, keepdim=True).clamp(min=1.0)
            v = (h * (tt * am).unsqueeze(-1)).sum(1) / (tt * am).sum(1, keepdim=True).clamp(min=1.0)
            u = torch.nn.functional.normalize(u, dim=-1)
            v = torch.nn.functional.normalize(v, dim=-1)
            return u * v * math.sqrt(u.shape[-1])
        return out.pooled if out.pooled is not None else h[:, 0]

    def forward(self, input_ids, attention_mask, token_type_ids=None) -> torch.Tensor:
        pooled = self.features(input_ids, attention_mask, token_type_ids)
        # The head runs in fp32 even under bf16 autocast: bf16 keeps 8 mantissa bits, which
        # ties the logits of similar candidates (and ties count against the relevant one).
        with torch.autocast(device_type=pooled.device.type, enabled=False):
            return self.head(self.dropout(pooled.float())).squeeze(-1)


def _rate(pairs: int, passes: int, seconds: float) -> dict:
    """A scoring's passes and its pairs/s (pairs x passes over its seconds; None when too fast to time)."""
    return {"passes": int(passes), "pairs_per_second": round(pairs * passes / seconds, 2) if seconds > 0 else None}


def distinct_pairs(query_sets: Sequence[Sequence[RankingQuery]], *, by_query: bool = False
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


def init_cosine_head(linear: nn.Linear, hidden_size: int) -> None:
    """Set a linear layer on ``segments`` features to ``SEGMENT_COSINE_WEIGHT * cos(u, v) + SEGMENT_COSINE_BIAS``.

    The features are ``sqrt(d) * u * v``, so a weight ``w / sqrt(d)`` on every coordinate sums to ``w * cos(u, v)``.
    """
    with torch.no_grad():
        linear.weight.fill_(SEGMENT_COSINE_WEIGHT / math.sqrt(hidden_size))
        if linear.bias is not None:
            linear.bias.fill_(SEGMENT_COSINE_BIAS)


@torch.no_grad()
def encode_features(
    model: nn.Module,
    pairs: Pairs,
    *,
    batch_size: int,
    precision,
    fn: Callable[[nn.Module, dict[str, torch.Tensor]], torch.Tensor] | None = None,
) -> torch.Tensor:
    """Feature vectors ``[N, d]`` (float32) of every pair in eval mode, batched as :func:`calibrank.model.training.score_pairs`."""
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


@dataclasses.dataclass
class TrainedModel:
    model: CrossEncoder
    backbone: Backbone
    result: TrainResult
    workdir: Path


class Ranker(ABC):
    """A ranker: trained by :meth:`fit` on training queries, then :meth:`predict` returns Predictions."""

    name: ClassVar[str]
    trained: TrainedModel | None = None

    def __init__(
        self,
        *,
        training: TrainingConfig,
        models_dir: str | Path,
        seed: int = 0,
        context_style: ContextStyle | str = ContextStyle.plain,
        device: str | torch.device | None = None,
    ) -> None:
        self.training = training
        self.models_dir = Path(models_dir)
        self.seed = int(seed)
        self.context_style = ContextStyle(context_style)
        self.device = torch.device(device) if device is not None else torch.device("cuda" if torch.cuda.is_available() else "cpu")
        # A scoring batch the profile leaves open follows the device (no model key holds it).
        self.training = dataclasses.replace(training, eval_batch_size=scoring_batch_size(training.eval_batch_size, self.device))
        self.fit_seconds = 0.0

    # -------------------------------------------------------------- shared machinery
    def _require_fit(self) -> TrainedModel:
        if self.trained is None:
            raise RuntimeError(f"ranker {self.name!r}: call fit() before predict()")
        return self.trained

    def _special_tokens(self) -> tuple[str, ...]:
        return () if self.context_style is ContextStyle.plain else (UTTERANCE_SEP, TURN_SEP)

    def _encode(self, tokenizer, queries: Sequence[RankingQuery], *, training: bool = False) -> Pairs:
        t = self.training
        return encode_pairs(
            tokenizer,
            queries,
            max_length=t.max_length,
            max_response_length=t.max_response_length,
            context_style=self.context_style,
            require_relevant=training,
        )

    def _build(self, seed: int) -> tuple[CrossEncoder, Backbone]:
        backbone = load_backbone(
            self.training.backbone, special_tokens=self._special_tokens(), seed=seed, hidden_dropout=self.training.hidden_dropout,
            joint_layers=self.training.joint_layers,
        )
        return CrossEncoder(backbone, seed=seed, pooling=self.training.pooling), backbone

    def _loss(self, model: nn.Module, batch: dict, labels: torch.Tensor) -> torch.Tensor:
        return binary_cross_entropy(model(**batch), labels)

    def _model_key(self, kind: str, seed: int, train: Sequence[RankingQuery], valid: Sequence[RankingQuery] = (),
                   extra: dict | None = None) -> str:
        """The trained-model cache folder: everything that changes the selected weights, nothing that does not.

        In: the validation set, the precision, :meth:`training_code` and :data:`MODEL_PACKAGES` versions;
        out: logging, checkpointing, evaluation batch size.
        """
        settings = dataclasses.asdict(self.training)
        settings = {k: (v.value if hasattr(v, "value") else v) for k, v in settings.items() if k not in _NOT_IN_KEY}
        for key, default in _IN_KEY_UNLESS_DEFAULT.items():  # settings added later: old keys stay valid
            if settings.get(key) == default:
                settings.pop(key)
        parts = {"kind": kind, "seed": seed, "training": settings, "context": self.context_style.value,
                 "bf16": use_bf16(self.training.precision, self.device), "code": self.training_code(),
                 "packages": package_versions(MODEL_PACKAGES),
                 "data": queries_version(train), "valid": queries_version(valid) if valid else None, "extra": extra or {}}
        return f"{kind}-seed{seed}-{stable_hash(parts, 12)}"

    def training_loss(self) -> Callable[..., torch.Tensor] | None:
        """The function of :mod:`calibrank.model.losses` that :meth:`_loss` trains with (None: none)."""
        return losses.binary_cross_entropy

    def training_code(self) -> str:
        """A hash of the code that trains this ranker's models (:func:`calibrank.codekey.code_hash`).

        Roots: :meth:`_train` and :meth:`training_loss`'s function; rankers that train one model reach the same code.
        """
        loss = self.training_loss()
        return code_hash((type(self), "_train"), *([loss] if loss is not None else []), opaque=(losses,))

    def _train_hooks(self) -> dict[str, Any]:
        """Keyword arguments of :func:`calibrank.model.training.train_model` beyond the loss (``param_groups``,
        ``on_epoch_start``): part of how this ranker trains, so part of :meth:`training_code`."""
        return {}

    def _validator(self, tokenizer, valid: Sequence[RankingQuery]):
        pairs = self._encode(tokenizer, valid)

        def validate(model: nn.Module) -> float:
            logits = score_pairs(model, pairs, batch_size=self.training.eval_batch_size, precision=self.training.precision)
            scores = logits[0].reshape(len(pairs.qids), pairs.n_candidates)
            labels = pairs.labels.reshape(len(pairs.qids), pairs.n_candidates)
            return float(np.nanmean(recall_at_k(scores, labels, 1)))

        return validate

    #: The trained-model cache kind: rankers with the same kind (and settings) share the trained model.
    kind: str = ""

    def _model_key_extra(self) -> dict | None:
        """What sets this ranker's trained model apart beyond the training settings, seed and data
        (its loss, its head's settings): part of the model-cache key."""
        return None

    def model_seeds(self) -> list[int]:
        """The seed of each model :meth:`fit` trains (one; an ensemble's members)."""
        return [self.seed]

    def model_dirs(self, train: Sequence[RankingQuery], valid: Sequence[RankingQuery] = ()) -> list[Path]:
        """The model-cache folder of each model :meth:`fit` trains or loads, in order; nothing is built
        or trained (:mod:`calibrank.pipeline.eta` asks which of them hold a finished model already)."""
        return [self.models_dir / self._model_key(self.kind, seed, train, valid, self._model_key_extra())
                for seed in self.model_seeds()]

    def _train(self, seed: int, train: Sequence[RankingQuery], valid: Sequence[RankingQuery]) -> TrainedModel:
        """Train (or load from the cache) one model of this ranker's kind with ``seed``."""
        model, backbone = self._build(seed)
        workdir = self.models_dir / self._model_key(self.kind, seed, train, valid, self._model_key_extra())
        done = load_trained(model, workdir)
        if done is None:
            pairs = self._encode(backbone.tokenizer, train, training=True)
            done = train_model(
                model,
                self._loss,
                pairs,
                self.training,
                workdir,
                seed=seed,
                validate=self._validator(backbone.tokenizer, valid) if valid else None,
                device=self.device,
                **self._train_hooks(),
            )
        model.to(self.device)
        return TrainedModel(model=model, backbone=backbone, result=done, workdir=workdir)

    #: Reuse logits already computed by the same trained model on the same queries with the
    #: same settings (``<model folder>/logits/``): bert, temperature and ensemble member 0 share
    #: one model, so each condition is scored once; a rerun of a notebook scores nothing again.
    #: Timing measurements switch it off (:mod:`calibrank.analysis.efficiency`).
    reuse_logits: bool = True

    def _timed_logits(self, trained: TrainedModel, queries: Sequence[RankingQuery], **kw: Any) -> tuple[np.ndarray, float]:
        """Logits ``[S, Q, K]`` of a trained model on ``queries`` and the seconds the scoring took.

        With :attr:`reuse_logits` they come from the model folder's cache when model, queries, settings
        and scoring code match and the file matches its record.
        """
        pairs = self._encode(trained.backbone.tokenizer, queries)
        score = kw.pop("score", None)  # score(trained, pairs) -> [S, N] in place of score_pairs (keyed by kw and its code)
        settings = {"passes": 1, "dropout": False, "seed": 0, **kw}
        path = None
        if self.reuse_logits and "forward" not in kw:
            code = code_hash((type(self), "_timed_logits"), *([score] if score is not None else []), opaque=(losses,))
            key = stable_hash({"queries": queries_version(queries), "scoring": settings, "precision": self.training.precision.value
                               if hasattr(self.training.precision, "value") else self.training.precision,
                               "eval_batch_size": self.training.eval_batch_size, "device": self.device.type,
                               "context": self.context_style.value, "code": code}, 16)
            path = trained.workdir / "logits" / f"{key}.npz"
            cached = read_logits(path, len(pairs))
            if cached is not None:
                logits, seconds = cached
                return logits.reshape(logits.shape[0], len(queries), pairs.n_candidates), seconds
        t0 = time.perf_counter()
        if score is not None:
            logits = score(trained, pairs)
        elif not settings["dropout"] and settings["passes"] == 1 and "forward" not in kw and self.encodes_once(trained.model):
            logits = encode_once.logits_once(trained.model, pairs, batch_size=self.training.eval_batch_size,
                                             precision=self.training.precision)
        else:
            logits = score_pairs(trained.model, pairs, batch_size=self.training.eval_batch_size,
                                 precision=self.training.precision, **kw)
        seconds = time.perf_counter() - t0
        if path is not None:
            write_logits(path, logits, seconds)
        return logits.reshape(logits.shape[0], len(queries), pairs.n_candidates), seconds

    def scores_sides(self) -> bool:
        """Whether this ranker scores from each distinct side encoded once (no joint layer), not pair by pair."""
        return self.training.joint_layers == 0

    @staticmethod
    def encodes_once(model: nn.Module) -> bool:
        """Whether ``model`` scores from each distinct side encoded once (:mod:`calibrank.model.encode_once`):
        no joint layer and :class:`CrossEncoder`'s own dense head; else every pair goes through the encoder."""
        return encode_once.applies(model) and type(model).forward is CrossEncoder.forward

    def _shared_logits(self, trained: TrainedModel, query_sets: Sequence[Sequence[RankingQuery]],
                       **kw: Any) -> list[tuple[np.ndarray, float, dict]]:
        """``(logits [S, Q, K], seconds, meta)`` of each query set, each distinct pair scored once."""
        union, index = distinct_pairs(query_sets, by_query=self.pair_key_has_query)
        logits, seconds = self._timed_logits(trained, union, **kw)
        flat = logits[:, :, 0]
        total = sum(int(ix.size) for ix in index)
        shared = {"query_sets": len(query_sets), "pairs": total, "distinct_pairs": len(union),
                  "seconds": round(seconds, 3), **_rate(len(union), logits.shape[0], seconds)}
        return [(flat[:, ix], seconds * ix.size / total, {"shared_scoring": shared}) for ix in index]

    def _shared_features(self, query_sets: Sequence[Sequence[RankingQuery]],
                         features: Callable[[Sequence[RankingQuery]], torch.Tensor]) -> list[tuple[torch.Tensor, float, dict]]:
        """``(features [Q*K, d], seconds, meta)`` of each query set, each distinct pair encoded once."""
        union, index = distinct_pairs(query_sets)
        feats, seconds = self.timed(features, union)
        total = sum(int(ix.size) for ix in index)
        shared = {"query_sets": len(query_sets), "pairs": total, "distinct_pairs": len(union),
                  "seconds": round(seconds, 3), **_rate(len(union), 1, seconds)}
        return [(feats[torch.as_tensor(ix.reshape(-1), device=feats.device)], seconds * ix.size / total,
                 {"shared_scoring": shared}) for ix in index]

    def _posterior_predictions(self, query_sets: Sequence[Sequence[RankingQuery]],
                               meta: Callable[[], dict]) -> list[Predictions]:
        """Predictions of a GP ranker on each of ``query_sets``, each set's joint Gaussian drawn with its own
        seeds; several sets share each distinct pair's input (:meth:`_shared_features`).
        """
        shared = self._shared_features(query_sets, self._features) if len(query_sets) > 1 else [None] * len(query_sets)
        out = []
        for queries, share in zip(query_sets, shared):
            feats, shared_seconds, extra = share if share is not None else (None, 0.0, {})
            (probs, samples), seconds = self.timed(self._predict_arrays, queries, *(() if feats is None else (feats,)))
            out.append(self._predictions(queries, probs, samples, seconds=seconds + shared_seconds,
                                         n_parameters=self.n_parameters, extra={**meta(), **extra}))
        return out

    def _logits(self, trained: TrainedModel, queries: Sequence[RankingQuery], **kw: Any) -> np.ndarray:
        """Logits ``[S, Q, K]`` of a trained model on ``queries``."""
        return self._timed_logits(trained, queries, **kw)[0]

    def _predictions(self, queries: Sequence[RankingQuery], probs: np.ndarray, samples: np.ndarray, *, seconds: float,
                     n_parameters: int, extra: dict | None = None) -> Predictions:
        meta = {
            "ranker": self.name,
            "seed": self.seed,
            "training": {k: (v.value if hasattr(v, "value") else v) for k, v in dataclasses.asdict(self.training).items()},
            "data_hash": queries_version(queries),
            "train_seconds": round(self.fit_seconds, 3),
            "inference_seconds": round(seconds, 3),
            "inference_ms_per_query": round(1000 * seconds / max(1, len(queries)), 3),
            "n_parameters": int(n_parameters),
            "scoring": {"device": self.device.type, "precision": precision_name(self.training.precision, self.device),
                        "batch_size": self.training.eval_batch_size, "encode_once": self.scores_sides()},
            **(extra or {}),
        }
        return Predictions(
            qids=np.array([q.qid for q in queries]),
            labels=np.array([q.labels for q in queries], dtype=np.int8),
            probs=probs,
            samples=samples,
            meta=meta,
        )

    # -------------------------------------------------------------- the interface
    @abstractmethod
    def fit(self, train: Sequence[RankingQuery], valid: Sequence[RankingQuery] = ()) -> "Ranker":
        """Train on ``train`` (validation on ``valid`` for early selection); cached by content."""

    @abstractmethod
    def predict(self, queries: Sequence[RankingQuery]) -> Predictions:
        """Predictions for ``queries`` (every query must have the same number of candidates)."""

    #: Whether :meth:`predict_many` scores the distinct pairs of several query sets once: true
    #: where a pair's score does not depend on the other candidates of its list nor on the
    #: other pairs scored with it (beyond floating-point order), so that assembling each set's
    #: Predictions from shared scores gives the numbers of :meth:`predict`.
    shares_pairs: bool = False
    #: Whether a pair's score also depends on its query id (MC Dropout's per-query masks): then
    #: the distinct pairs are (query id, context, candidate), else (context, candidate).
    pair_key_has_query: bool = False

    def predict_many(self, query_sets: Sequence[Sequence[RankingQuery]]) -> list[Predictions]:
        """Predictions for each of ``query_sets``: :meth:`predict` on each unless the ranker shares pairs."""
        return [self.predict(queries) for queries in query_sets]

    def training_results(self) -> list[TrainResult]:
        """The training history of each model behind this ranker (one, or one per ensemble member)."""
        return []

    @staticmethod
    def timed(fn, *args, **kw):
        t0 = time.perf_counter()
        out = fn(*args, **kw)
        return out, time.perf_counter() - t0
