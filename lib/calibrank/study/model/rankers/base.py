"""The Ranker contract: ``fit(train, valid)`` then ``predict(queries) -> Predictions``.

A ranker is built from what every ranker of a run shares, one :class:`~.run.RankerRun` (the training
settings, the model folder, the seed, the context style and the device), and states its own
settings in its signature with their defaults: ``SNGPRanker(run, *, n_features=..., ...)``.
:class:`Ranker` trains one cross-encoder per seed (:meth:`Ranker._train`), cached under
everything that determines it (:mod:`.keys`). A new ranker overrides the hooks it changes:
:meth:`Ranker.build_model` (the model on a loaded backbone), :meth:`Ranker.loss` and
:meth:`Ranker.training_loss`, :meth:`Ranker.model_key_extra` (its own settings), and gives
:meth:`Ranker.fit` and :meth:`Ranker.predict`. Scoring and its cache are :mod:`.scoring`.
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch
from torch import nn

from calibrank.hardware import precision_name, use_bf16
from calibrank.metrics.ranking import recall_at_k
from calibrank.pairs import Pairs, score_pairs
from calibrank.predictions import Predictions
from calibrank.study.codekey import code_hash
from calibrank.study.data.schema import RankingQuery
from calibrank.study.data.splits import TURN_SEP, UTTERANCE_SEP
from calibrank.study.model import losses
from calibrank.study.model.backbone import Backbone, load_backbone
from calibrank.study.model.cross_encoder import CrossEncoder
from calibrank.study.model.losses import binary_cross_entropy
from calibrank.study.model.rankers.keys import logits_key, model_key, queries_version, settings_record
from calibrank.study.model.rankers.run import RankerRun
from calibrank.study.model.rankers.scoring import model_logits, pair_logits, shared
from calibrank.study.model.training import TrainResult, encode_pairs, load_trained, train_model
from calibrank.study.settings.choices import ContextStyle
from calibrank.study.settings.schema import TrainingConfig

__all__ = ["Ranker", "RankerRun", "TrainedModel"]


@dataclasses.dataclass
class TrainedModel:
    """A trained (or cached) model, the backbone it was built on, its training record and its folder."""

    model: CrossEncoder
    backbone: Backbone
    result: TrainResult
    workdir: Path


class Ranker(ABC):
    """A ranker: trained by :meth:`fit` on training queries, then :meth:`predict` returns Predictions.

    Parameters
    ----------
    run : RankerRun
        What every ranker shares: the training settings, the model folder, the seed, the context style
        and the device (:class:`calibrank.study.model.rankers.run.RankerRun`). A ranker's own settings
        follow it as keyword arguments with their defaults.
    """

    #: The ranker's name (:mod:`calibrank.study.settings.registry`).
    name: ClassVar[str]
    #: The trained-model cache kind: rankers with the same kind (and settings) share the trained model.
    kind: ClassVar[str] = ""
    #: Whether :meth:`predict_many` scores the distinct pairs of several query sets once: true
    #: where a pair's score depends neither on the other candidates of its list nor on the pairs
    #: scored with it (beyond floating-point order).
    shares_pairs: ClassVar[bool] = False
    #: Whether a pair's score also depends on its query id (MC Dropout's per-query masks): then
    #: the distinct pairs are (query id, context, candidate), else (context, candidate).
    pair_key_has_query: ClassVar[bool] = False
    #: Reuse logits computed by the same trained model on the same queries with the same settings
    #: (``<model folder>/logits/``); timing measurements switch it off (:mod:`calibrank.study.analysis.efficiency`).
    reuse_logits: bool = True

    def __init__(self, run: RankerRun, /) -> None:
        if not isinstance(run, RankerRun):
            raise TypeError(
                f"{type(self).__name__}: expected a RankerRun (training, models_dir, seed, context_style, "
                f"device) as the first argument, got {type(run).__name__}"
            )
        self.run = run
        self.fit_seconds = 0.0
        self.trained: TrainedModel | None = None

    # -------------------------------------------------------------- the run's settings, read-only
    @property
    def training(self) -> TrainingConfig:
        """The training settings, the scoring batch set for the device (:attr:`RankerRun.training`)."""
        return self.run.training

    @property
    def eval_batch_size(self) -> int:
        """Sequences per scoring batch: the profile's, or the device's where it left it open (set by the run)."""
        size = self.run.training.eval_batch_size
        assert size is not None  # RankerRun sets it for the device
        return size

    @property
    def models_dir(self) -> Path:
        """Where trained models are cached."""
        return self.run.models_dir

    @property
    def seed(self) -> int:
        """The training seed."""
        return self.run.seed

    @property
    def context_style(self) -> ContextStyle:
        """How a context's turns are joined."""
        return self.run.context_style

    @property
    def device(self) -> torch.device:
        """Where the model trains and scores."""
        device = self.run.device
        assert device is not None  # RankerRun picks one when none is given
        return device

    # -------------------------------------------------------------- the interface
    @abstractmethod
    def fit(self, train: Sequence[RankingQuery], valid: Sequence[RankingQuery] = ()) -> Ranker:
        """Train on ``train`` (validation on ``valid`` for early selection); cached by content."""

    @abstractmethod
    def predict(self, queries: Sequence[RankingQuery]) -> Predictions:
        """Predictions for ``queries`` (every query must have the same number of candidates)."""

    def predict_many(self, query_sets: Sequence[Sequence[RankingQuery]]) -> list[Predictions]:
        """Predictions for each of ``query_sets``: :meth:`predict` on each unless the ranker shares pairs."""
        return [self.predict(queries) for queries in query_sets]

    def training_results(self) -> list[TrainResult]:
        """The training history of each model behind this ranker (one, or one per ensemble member)."""
        return [self._require_fit().result]

    @property
    def n_parameters(self) -> int:
        """The parameters of the trained model."""
        return sum(p.numel() for p in self._require_fit().model.parameters())

    # -------------------------------------------------------------- hooks a ranker overrides
    def build_model(self, backbone: Backbone, seed: int) -> CrossEncoder:
        """The model this ranker trains, on a freshly loaded ``backbone``: the dense-head cross-encoder."""
        return CrossEncoder(backbone, seed=seed, pooling=self.training.pooling)

    def loss(self, model: nn.Module, batch: dict, labels: torch.Tensor) -> torch.Tensor:
        """The training loss of a batch: binary cross-entropy on the model's logits."""
        return binary_cross_entropy(model(**batch), labels)

    def training_loss(self) -> Callable[..., torch.Tensor] | None:
        """The function of :mod:`calibrank.study.model.losses` that :meth:`loss` trains with (None: none)."""
        return losses.binary_cross_entropy

    def train_hooks(self) -> dict[str, Any]:
        """Keyword arguments of :func:`calibrank.study.model.training.train_model` beyond the loss (``param_groups``,
        ``on_epoch_start``): part of how this ranker trains, so part of :meth:`training_code`."""
        return {}

    def model_key_extra(self) -> dict | None:
        """What sets this ranker's trained model apart beyond the training settings, seed and data
        (its loss, its head's settings): part of the model-cache key."""
        return None

    def model_seeds(self) -> list[int]:
        """The seed of each model :meth:`fit` trains (one; an ensemble's members)."""
        return [self.seed]

    # -------------------------------------------------------------- training, shared
    def _require_fit(self) -> TrainedModel:
        if self.trained is None:
            raise RuntimeError(f"ranker {self.name!r}: call fit() before predict()")
        return self.trained

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
        """The untrained model of ``seed`` (:meth:`build_model`) and the backbone it was built on."""
        special = () if self.context_style is ContextStyle.plain else (UTTERANCE_SEP, TURN_SEP)
        t = self.training
        backbone = load_backbone(
            t.backbone, special_tokens=special, seed=seed, hidden_dropout=t.hidden_dropout, joint_layers=t.joint_layers
        )
        return self.build_model(backbone, seed), backbone

    def training_code(self) -> str:
        """A hash of the code that trains this ranker's models (:func:`calibrank.study.codekey.code_hash`).

        Roots: :meth:`_train` and :meth:`training_loss`'s function; rankers that train one model reach the same code.
        """
        loss = self.training_loss()
        return code_hash((type(self), "_train"), *([loss] if loss is not None else []), opaque=(losses,))

    def model_dirs(self, train: Sequence[RankingQuery], valid: Sequence[RankingQuery] = ()) -> list[Path]:
        """The model-cache folder of each model :meth:`fit` trains or loads, in order; nothing is built
        or trained (:mod:`calibrank.study.pipeline.eta` asks which of them hold a finished model already)."""
        return [self._model_dir(seed, train, valid) for seed in self.model_seeds()]

    def _model_dir(self, seed: int, train: Sequence[RankingQuery], valid: Sequence[RankingQuery]) -> Path:
        return self.models_dir / model_key(
            self.kind,
            seed,
            self.training,
            context_style=self.context_style.value,
            bf16=use_bf16(self.training.precision, self.device),
            code=self.training_code(),
            train=train,
            valid=valid,
            extra=self.model_key_extra(),
        )

    def _validator(self, tokenizer, valid: Sequence[RankingQuery]) -> Callable[[nn.Module], float]:
        """R@1 on ``valid`` of a model in training (early selection)."""
        pairs = self._encode(tokenizer, valid)

        def validate(model: nn.Module) -> float:
            logits = score_pairs(model, pairs, batch_size=self.eval_batch_size, precision=self.training.precision)
            scores = logits[0].reshape(len(pairs.qids), pairs.n_candidates)
            labels = pairs.labels.reshape(len(pairs.qids), pairs.n_candidates)
            return float(np.nanmean(recall_at_k(scores, labels, 1)))

        return validate

    def _train(self, seed: int, train: Sequence[RankingQuery], valid: Sequence[RankingQuery]) -> TrainedModel:
        """Train (or load from the cache) one model of this ranker's kind with ``seed``."""
        model, backbone = self._build(seed)
        workdir = self._model_dir(seed, train, valid)
        done = load_trained(model, workdir)
        if done is None:
            pairs = self._encode(backbone.tokenizer, train, training=True)
            done = train_model(
                model,
                self.loss,
                pairs,
                self.training,
                workdir,
                seed=seed,
                validate=self._validator(backbone.tokenizer, valid) if valid else None,
                device=self.device,
                **self.train_hooks(),
            )
        model.to(self.device)
        return TrainedModel(model=model, backbone=backbone, result=done, workdir=workdir)

    # -------------------------------------------------------------- scoring, shared
    def scores_sides(self) -> bool:
        """Whether this ranker scores from each distinct side encoded once (no joint layer), not pair by pair."""
        return self.training.joint_layers == 0

    def _timed_logits(
        self,
        trained: TrainedModel,
        queries: Sequence[RankingQuery],
        *,
        score: Callable[[TrainedModel, Pairs], np.ndarray] | None = None,
        **scoring: Any,
    ) -> tuple[np.ndarray, float]:
        """Logits ``[S, Q, K]`` of a trained model on ``queries`` and the seconds the scoring took.

        ``scoring``: how it scores (``passes``, ``dropout``, ``seed`` of
        :func:`calibrank.study.model.rankers.scoring.pair_logits`; ``score(trained, pairs) -> [S, N]`` in its place).
        With :attr:`reuse_logits` the logits come from the model folder's cache when the file there was made
        with the same queries, scoring, settings and scoring code (:func:`calibrank.study.model.rankers.keys.logits_key`).
        """
        settings = {"passes": 1, "dropout": False, "seed": 0, **scoring}
        t = self.training

        def compute(pairs: Pairs) -> np.ndarray:
            if score is not None:
                return score(trained, pairs)
            return pair_logits(
                trained.model,
                pairs,
                batch_size=self.eval_batch_size,
                precision=t.precision,
                passes=settings["passes"],
                dropout=settings["dropout"],
                seed=settings["seed"],
            )

        cache = None
        if self.reuse_logits:
            code = code_hash((type(self), "_timed_logits"), *([score] if score is not None else []), opaque=(losses,))
            key = logits_key(
                queries, settings, t, device=self.device.type, context_style=self.context_style.value, code=code
            )
            cache = trained.workdir / "logits" / f"{key}.npz"
        k = len(queries[0].candidates)
        # tokenised only when not read from the cache, and outside the timing
        logits, seconds = model_logits(
            len(queries) * k, lambda: self._encode(trained.backbone.tokenizer, queries), compute, cache
        )
        return logits.reshape(logits.shape[0], len(queries), k), seconds

    def _shared_logits(
        self, trained: TrainedModel, query_sets: Sequence[Sequence[RankingQuery]], **kw: Any
    ) -> list[tuple[np.ndarray, float, dict]]:
        """``(logits [S, Q, K], seconds, meta)`` of each query set, each distinct pair scored once."""

        def score(union: list[RankingQuery]) -> tuple[np.ndarray, float]:
            logits, seconds = self._timed_logits(trained, union, **kw)
            return logits[:, :, 0], seconds

        passes = int(kw.get("passes", 1))
        return shared(query_sets, score, lambda flat, ix: flat[:, ix], by_query=self.pair_key_has_query, passes=passes)

    def _predictions(
        self,
        queries: Sequence[RankingQuery],
        probs: np.ndarray,
        samples: np.ndarray,
        *,
        seconds: float,
        n_parameters: int,
        extra: dict | None = None,
    ) -> Predictions:
        """Predictions of ``queries`` with the record of how they were made (ranker, settings, data, timing, device)."""
        meta = {
            "ranker": self.name,
            "seed": self.seed,
            "training": settings_record(self.training),
            "data_hash": queries_version(queries),
            "train_seconds": round(self.fit_seconds, 3),
            "inference_seconds": round(seconds, 3),
            "inference_ms_per_query": round(1000 * seconds / max(1, len(queries)), 3),
            "n_parameters": int(n_parameters),
            "scoring": {
                "device": self.device.type,
                "precision": precision_name(self.training.precision, self.device),
                "batch_size": self.training.eval_batch_size,
                "encode_once": self.scores_sides(),
            },
            **(extra or {}),
        }
        return Predictions(
            qids=np.array([q.qid for q in queries]),
            labels=np.array([q.labels for q in queries], dtype=np.int8),
            probs=probs,
            samples=samples,
            meta=meta,
        )
