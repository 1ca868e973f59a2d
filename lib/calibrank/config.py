"""Profiles: ``params/<profile>.yaml`` read into typed, validated, frozen dataclasses.

A profile fixes everything a run depends on (corpora, sizes, samplers, seeds). Validation
is strict, because a mistyped key silently falling back to a default is how experiments go
wrong: an unknown key, a value of the wrong type, or a value out of range is a
:class:`ConfigError` naming the file, the dotted key and what was expected.

Reading is as strict. Plain scalars are read by YAML 1.2's core schema, and one that YAML 1.1 reads
otherwise (``010`` is 8 there, ``3:20`` is 200, ``yes`` is true) or an integer not written in decimal is
refused: write the number in decimal, or quote the text. A key given twice is refused. In a profile that
``extends:`` another, a section left empty (``training:`` with the lines below it commented out) is an
error, not a silent reset to the defaults: ``training: {}`` resets it, a missing key inherits it. Every error
names the file and line that gave the key (the parent's, for a key the profile inherits).

The sections are also the one source of every default and range: the choices are the enums of
:mod:`calibrank.choices`, a ranker built by keyword arguments builds its section with
:func:`build_section` (the same defaults, coercion and checks as a params file), and the layers
the sections configure check their arguments with the ``check_*`` functions here.

Notebooks take only the profile name (a papermill parameter) and call :func:`load_config`,
so papermill's own handling of unknown parameters (a warning) never decides anything.
"""

from __future__ import annotations

import dataclasses
import difflib
import enum
import math
import numbers
import os
import re
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .choices import (
    MATERN_NU,
    ContextStyle,
    Corpus,
    DropoutMasks,
    FocalGamma,
    GPKernel,
    GPMeanFunction,
    Pooling,
    Positions,
    Precision,
    RankerName,
    RFOutputInit,
    SamplerName,
    Schedule,
    Selection,
    SNGPLoss,
    SpectralNormPlacement,
)
from .choices import names as choice_names
from . import registry
from .runs import project_root

__all__ = [
    "ConfigError",
    "Corpus",
    "ContextStyle",
    "Positions",
    "SamplerName",
    "SplitConfig",
    "QueryCaps",
    "DataConfig",
    "BM25Config",
    "EmbeddingConfig",
    "MixedConfig",
    "NegativesConfig",
    "Precision",
    "RankerName",
    "Pooling",
    "Schedule",
    "Selection",
    "TrainingConfig",
    "HEAD_DROPOUT",
    "MCDropoutConfig",
    "DropoutMasks",
    "EnsembleConfig",
    "FocalConfig",
    "FocalGamma",
    "SpectralNormPlacement",
    "SNGPLoss",
    "GPKernel",
    "GPMeanFunction",
    "RFOutputInit",
    "RandomFeatureGPConfig",
    "SNGPConfig",
    "GPFBertConfig",
    "PGDRRConfig",
    "RankersConfig",
    "Config",
    "build_section",
    "check_choice",
    "check_count",
    "check_dropout",
    "check_focal_gamma",
    "check_gp_batch_size",
    "check_joint_layers",
    "BACKBONE_LAYERS",
    "check_matern_nu",
    "check_momentum",
    "check_non_negative",
    "check_positive",
    "check_random_features",
    "check_spectral_norm_placement",
    "load_config",
    "profile_path",
    "section_table",
    "train_runs",
    "training_seeds",
    "run_name",
    "parse_run_name",
]


class ConfigError(ValueError):
    """A setting is invalid (in a params file, an override, or the keyword arguments of what it configures);
    the message names the file and line where there is one, the key and what was expected. ``key`` is the
    dotted key the message starts with (``rankers.seeds[1]``), if any."""

    def __init__(self, message: str, *, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key


def _err(key: str, msg: str) -> ConfigError:
    return ConfigError(f"{key}: {msg}", key=key)


def _within(prefix: str, exc: ConfigError) -> ConfigError:
    """``exc`` raised inside the section ``prefix``: its message and key start with the section's."""
    return ConfigError(f"{prefix}.{exc}", key=f"{prefix}.{exc.key}" if exc.key else prefix)


def _choices(choice: type[enum.Enum]) -> list[str]:
    """The accepted values of an enum-typed option; for rankers, every registered ranker
    (:mod:`calibrank.registry`), so a ranker registered outside this package is a valid name."""
    return list(registry.RANKERS) if choice is RankerName else [m.value for m in choice]


def _hint(value: Any, choice: type[enum.Enum]) -> str:
    """`` (did you mean 'x'?)`` for the member of ``choice`` closest to ``value``, or nothing."""
    close = difflib.get_close_matches(str(value), _choices(choice), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


# Upper bounds of the values that size memory or time: far above any run of the study, so that a slip
# (``epochs: 1e30``, a million negatives) is an error at the profile check instead of an allocation later.
#: The profiles train 1 or 2 epochs; the schedule, the checkpoints and the estimate count epochs.
MAX_EPOCHS = 1000
#: Negatives per query: the papers use 1 to 9 for training and 9 for evaluation.
MAX_NEGATIVES = 1000
#: Dialogues or examples kept: more than any conversation corpus holds, and far inside numpy's int64.
MAX_ITEMS = 10**9
#: Turns kept per context (a query of BM25 or the embedding sampler, a context of a pair).
MAX_UTTERANCES = 1000
#: Word pieces per pair: BERT-style backbones take 512.
MAX_TOKENS = 8192
#: Pairs per batch: the profiles use 16 to 512.
MAX_BATCH = 65536
#: Stochastic passes of MC Dropout (the first paper: 10); samples, Gibbs steps and chains, quadrature points of a GP.
MAX_PASSES = 1000
#: Ensemble members, each a trained model (the first paper: 5).
MAX_MEMBERS = 100
#: Random features or inducing pairs of a GP layer: it holds a square matrix of this side (1 GiB in fp32).
MAX_FEATURES = 16384


def _check_cap(key: str, value: int | None, minimum: int = 1, maximum: int = MAX_ITEMS) -> None:
    """An optional count: ``None`` (no cap) or an integer in ``minimum..maximum``."""
    if value is not None and value < minimum:
        raise _err(key, f"expected null or {'a positive integer' if minimum == 1 else f'at least {minimum}'}, got {value}")
    if value is not None and value > maximum:
        raise _err(key, f"expected null or at most {maximum} (a bound no run of the study comes near), got {value}")


@dataclass(frozen=True)
class SplitConfig:
    """Fractions of *dialogues* per split (never of turns), drawn with the profile seed."""

    train: float = 0.8
    valid: float = 0.1
    test: float = 0.1

    def check(self) -> None:
        for name in ("train", "valid", "test"):
            v = getattr(self, name)
            if not 0.0 < v < 1.0:
                raise _err(name, f"expected a fraction in (0, 1), got {v}")
        total = self.train + self.valid + self.test
        if abs(total - 1.0) > 1e-6:
            raise _err("train", f"train + valid + test must sum to 1, got {total:g}")


@dataclass(frozen=True)
class QueryCaps:
    """At most this many examples per split (a seeded sample); null keeps all."""

    train: int | None = None
    valid: int | None = None
    test: int | None = None

    def check(self) -> None:
        for name in ("train", "valid", "test"):
            _check_cap(name, getattr(self, name))


@dataclass(frozen=True)
class DataConfig:
    corpora: tuple[Corpus, ...] = (Corpus.chitchat, Corpus.chatterbot)
    max_dialogues: int | None = None
    split: SplitConfig = field(default_factory=SplitConfig)
    positions: Positions = Positions.all
    max_context_utterances: int | None = None
    context_style: ContextStyle = ContextStyle.plain
    max_examples: QueryCaps = field(default_factory=QueryCaps)

    def check(self) -> None:
        if not self.corpora:
            raise _err("corpora", "expected at least one corpus")
        if len(set(self.corpora)) != len(self.corpora):
            raise _err("corpora", "a corpus is listed twice")
        if self.max_dialogues is not None and self.max_dialogues < 3:
            raise _err("max_dialogues", f"expected null or at least 3 (one per split), got {self.max_dialogues}")
        _check_cap("max_dialogues", self.max_dialogues)
        _check_cap("max_context_utterances", self.max_context_utterances, maximum=MAX_UTTERANCES)


@dataclass(frozen=True)
class BM25Config:
    k1: float = 1.5
    b: float = 0.75
    stopwords: str | None = None
    query_utterances: int | None = None

    def check(self) -> None:
        if self.k1 < 0:
            raise _err("k1", f"expected k1 >= 0, got {self.k1}")
        if not 0.0 <= self.b <= 1.0:
            raise _err("b", f"expected b in [0, 1], got {self.b}")
        _check_cap("query_utterances", self.query_utterances, maximum=MAX_UTTERANCES)


@dataclass(frozen=True)
class EmbeddingConfig:
    model: str = "all-MiniLM-L6-v2"
    batch_size: int = 128
    query_utterances: int | None = None
    #: auto: bf16 autocast where the hardware has bf16 arithmetic (the neighbours agree with
    #: fp32 within a tested tolerance), else fp32.
    precision: Precision = Precision.auto

    def check(self) -> None:
        check_count("batch_size", self.batch_size, maximum=MAX_BATCH)
        _check_cap("query_utterances", self.query_utterances, maximum=MAX_UTTERANCES)


@dataclass(frozen=True)
class MixedConfig:
    """The ``mixed`` sampler: each negative is a BM25 one with probability ``bm25_share``, else random."""

    bm25_share: float = 0.5

    def check(self) -> None:
        if not 0.0 <= self.bm25_share <= 1.0:
            raise _err("bm25_share", f"expected a probability in [0, 1], got {self.bm25_share}")


@dataclass(frozen=True)
class NegativesConfig:
    """Training queries get ``train_k`` negatives from ``train``; every eval sampler gets ``eval_k``.

    ``max_context_jaccard`` and ``exclude_own_dialogue`` apply to every sampler: no negative is
    a near-copy of a context turn (word-set Jaccard >= the threshold; null: only exact copies
    are excluded) or a turn of the example's own dialogue (:mod:`calibrank.negatives`).
    """

    train: SamplerName = SamplerName.bm25
    train_k: int = 1
    eval: tuple[SamplerName, ...] = (SamplerName.random, SamplerName.bm25, SamplerName.embedding)
    eval_k: int = 9
    max_context_jaccard: float | None = 0.5
    exclude_own_dialogue: bool = True
    bm25: BM25Config = field(default_factory=BM25Config)
    mixed: MixedConfig = field(default_factory=MixedConfig)
    embedding: EmbeddingConfig = field(default_factory=EmbeddingConfig)

    def check(self) -> None:
        for name in ("train_k", "eval_k"):
            check_count(name, getattr(self, name), maximum=MAX_NEGATIVES)
        if not self.eval:
            raise _err("eval", "expected at least one evaluation sampler")
        if len(set(self.eval)) != len(self.eval):
            raise _err("eval", "a sampler is listed twice")
        j = self.max_context_jaccard
        if j is not None and not 0.0 < j <= 1.0:
            raise _err("max_context_jaccard", f"expected null or a similarity in (0, 1], got {j}")

    def params_for(self, sampler: SamplerName | str) -> dict[str, Any]:
        """Constructor parameters of one sampler, as :func:`calibrank.negatives.make_sampler` takes them."""
        sampler = SamplerName(sampler)
        common = {"max_context_jaccard": self.max_context_jaccard, "exclude_own_dialogue": self.exclude_own_dialogue}
        if sampler is SamplerName.bm25:
            return {**dataclasses.asdict(self.bm25), **common}
        if sampler is SamplerName.mixed:
            return {**dataclasses.asdict(self.bm25), **dataclasses.asdict(self.mixed), **common}
        if sampler is SamplerName.embedding:
            return {**dataclasses.asdict(self.embedding), **common}
        return common


@dataclass(frozen=True)
class TrainingConfig:
    """The one training loop's settings (:mod:`calibrank.training`), shared by every ranker.

    ``max_length`` bounds ``[CLS] context [SEP] response [SEP]`` in tokens; the context is cut
    from the left (the most recent turns are kept). A response longer than
    ``max_response_length`` tokens is cut from the right; with ``max_response_length: null`` a
    response that leaves no room for context is an error.

    ``joint_layers``: how many of the encoder's top layers attend across context and response
    (:func:`calibrank.backbone.encode`); null, the papers' cross-encoder, is all of them.
    """

    backbone: str = "all-MiniLM-L6-v2"
    max_length: int = 128
    max_response_length: int | None = 64
    batch_size: int = 16
    eval_batch_size: int = 64
    epochs: int = 1
    lr: float = 5e-5
    weight_decay: float = 0.01
    warmup_ratio: float = 0.1
    schedule: Schedule = Schedule.linear
    selection: Selection = Selection.best
    grad_clip: float = 1.0
    hidden_dropout: float | None = None
    pooling: Pooling = Pooling.pooler
    joint_layers: int | None = None
    precision: Precision = Precision.auto
    eval_every: int | None = None
    checkpoint_every: int = 100
    log_every: int = 10

    def check(self) -> None:
        for name in ("checkpoint_every", "log_every"):
            check_count(name, getattr(self, name))
        check_count("max_length", self.max_length, 8, "tokens", maximum=MAX_TOKENS)
        check_count("batch_size", self.batch_size, maximum=MAX_BATCH)
        check_count("eval_batch_size", self.eval_batch_size, maximum=MAX_BATCH)
        check_count("epochs", self.epochs, maximum=MAX_EPOCHS)
        if self.max_response_length is not None and not 1 <= self.max_response_length <= self.max_length - 4:
            raise _err(
                "max_response_length",
                f"expected null or 1..max_length-4 (={self.max_length - 4}) so that context fits, got {self.max_response_length}",
            )
        if not self.lr > 0:  # also rejects NaN
            raise _err("lr", f"expected a positive learning rate, got {self.lr}")
        if self.weight_decay < 0:
            raise _err("weight_decay", f"expected >= 0, got {self.weight_decay}")
        if not 0.0 <= self.warmup_ratio < 1.0:
            raise _err("warmup_ratio", f"expected a fraction in [0, 1), got {self.warmup_ratio}")
        if not self.grad_clip > 0:
            raise _err("grad_clip", f"expected a positive norm, got {self.grad_clip}")
        if self.hidden_dropout is not None and not 0.0 <= self.hidden_dropout < 1.0:
            raise _err("hidden_dropout", f"expected null or a probability in [0, 1), got {self.hidden_dropout}")
        if self.eval_every is not None and self.eval_every < 1:
            raise _err("eval_every", f"expected null or a positive integer, got {self.eval_every}")
        check_joint_layers(self.joint_layers, pooling=self.pooling, n_layers=BACKBONE_LAYERS.get(self.backbone),
                           backbone=self.backbone)


#: Encoder layers of the backbones the shipped profiles name, so that ``training.joint_layers`` is
#: checked with the profile, before any weights load; any other backbone is checked when its
#: encoder is loaded (:class:`calibrank.backbone.Backbone`).
BACKBONE_LAYERS = {"all-MiniLM-L6-v2": 6, "sentence-transformers/all-MiniLM-L6-v2": 6, "tiny-random": 2,
                   "bert-base-cased": 12, "bert-base-uncased": 12}


def check_joint_layers(joint_layers: Any, *, pooling: Any = None, n_layers: int | None = None,
                       backbone: str = "") -> int | None:
    """``joint_layers``: null (every layer joint) or 0..``n_layers`` (when the layer count is known).

    With no joint layer BERT's pooler reads the context's ``[CLS]`` alone, so a score on it could not
    depend on the response: ``joint_layers: 0`` needs ``pooling`` ``segments`` or ``mean`` (checked
    when ``pooling`` is given).
    """
    if joint_layers is None:
        return None
    if not (_is_int(joint_layers) and joint_layers >= 0):
        raise _err("joint_layers", f"expected null (every layer joint) or an integer >= 0, got {joint_layers!r}")
    if n_layers is not None and joint_layers > n_layers:
        raise _err("joint_layers", f"expected null or 0..{n_layers} ({backbone or 'the backbone'} has {n_layers} "
                                   f"encoder layers), got {joint_layers}")
    if joint_layers == 0 and pooling is not None and Pooling(pooling) is Pooling.pooler:
        raise _err("joint_layers", "0 joint layers with pooling 'pooler': the pooler reads the context's [CLS] alone, "
                                   "so the score could not depend on the response; use pooling segments or mean, "
                                   "or at least 1 joint layer")
    return int(joint_layers)


# ----------------------------------------------------------------------------- rankers
#
# The ranker sections below are the one source of the rankers' defaults and ranges: a ranker
# built by keyword arguments builds its section from them (:func:`build_section`), and the
# layers the sections configure check their arguments with the same functions.

#: Dropout on the pooled feature before every ranker's output layer (the first paper's BERT head).
HEAD_DROPOUT = 0.1


def _is_number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)


def _is_int(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def check_positive(key: str, value: Any) -> float:
    """``value`` as a float if it is a finite number > 0, else a :class:`ConfigError` naming ``key``."""
    if not (_is_number(value) and value > 0):
        raise _err(key, f"expected a positive number, got {value}")
    return float(value)


def check_non_negative(key: str, value: Any) -> float:
    """``value`` as a float if it is a finite number >= 0, else a :class:`ConfigError` naming ``key``."""
    if not (_is_number(value) and value >= 0):
        raise _err(key, f"expected a number >= 0, got {value}")
    return float(value)


def check_count(key: str, value: Any, minimum: int = 1, what: str = "", maximum: int | None = None) -> int:
    """``value`` as an int if it is an integer in ``minimum..maximum`` (no upper bound when ``maximum`` is None);
    ``what`` names the unit counted in the message."""
    if not (_is_int(value) and value >= minimum):
        expected = "a positive integer" if minimum == 1 and not what else f"at least {minimum}{' ' + what if what else ''}"
        raise _err(key, f"expected {expected}, got {value}")
    if maximum is not None and value > maximum:
        raise _err(key, f"expected at most {maximum}{' ' + what if what else ''} (a bound no run of the study "
                        f"comes near), got {value}")
    return int(value)


def check_dropout(key: str, value: Any) -> float:
    """A dropout probability in [0, 1)."""
    if not (_is_number(value) and 0.0 <= value < 1.0):
        raise _err(key, f"expected a probability in [0, 1), got {value}")
    return float(value)


def check_momentum(key: str, value: Any) -> float | None:
    """``None`` (an exact sum) or a moving-average momentum in the open interval (0, 1) (GPF-BERT eq. 5)."""
    if value is None:
        return None
    if not (_is_number(value) and 0.0 < value < 1.0):
        raise _err(key, f"expected null (exact sum) or a number in (0, 1), got {value}")
    return float(value)


def check_choice(key: str, value: Any, choice: type[enum.Enum]) -> Any:
    """The member of the :mod:`calibrank.choices` enum ``choice`` that ``value`` names (a member or its value)."""
    try:
        return choice(value)
    except ValueError:
        raise _err(key, f"expected one of {choice_names(choice)}, got {value!r}{_hint(value, choice)}") from None


def check_focal_gamma(key: str, gamma: Any) -> float | str:
    """A focal-loss gamma (GPF-BERT eq. 6): a number >= 0 as a float, or a :class:`FocalGamma` name as a string."""
    if isinstance(gamma, str):
        try:
            return FocalGamma(gamma).value
        except ValueError:
            raise _err(key, f"expected a number >= 0 or one of {choice_names(FocalGamma)}, got {gamma!r}"
                            f"{_hint(gamma, FocalGamma)}") from None
    if not (_is_number(gamma) and gamma >= 0):
        raise _err(key, f"a focal-loss gamma must be >= 0 (or one of {choice_names(FocalGamma)}), got {gamma!r}")
    return float(gamma)


def check_matern_nu(key: str, nu: Any) -> float:
    """A Matérn smoothness with a closed form (:data:`calibrank.choices.MATERN_NU`)."""
    if nu not in MATERN_NU:
        raise _err(key, f"expected one of {', '.join(f'{v:g}' for v in MATERN_NU)} (Matérn smoothness), got {nu}")
    return float(nu)


def check_random_features(*, n_features: Any, length_scale: Any, feature_scale: Any, ridge: Any, momentum: Any,
                          mean_field_factor: Any, output_init: Any) -> RFOutputInit:
    """The ranges of the random-feature GP layer (GPF-BERT eqs. 2-5), for :class:`RandomFeatureGPConfig` and
    :class:`calibrank.gp.RandomFeatureGP` alike; returns ``output_init`` as its :class:`RFOutputInit` member."""
    check_count("n_features", n_features, maximum=MAX_FEATURES)
    check_positive("length_scale", length_scale)
    check_positive("feature_scale", feature_scale)
    check_positive("ridge", ridge)
    check_momentum("momentum", momentum)
    check_non_negative("mean_field_factor", mean_field_factor)
    return check_choice("output_init", output_init, RFOutputInit)


def check_spectral_norm_placement(spectral_norm: Any, pooling: Any) -> None:
    """``spectral_norm: pooler`` needs ``pooling: pooler``: it normalises BERT's pooler, which the other poolings skip."""
    if SpectralNormPlacement(spectral_norm) is SpectralNormPlacement.pooler and Pooling(pooling) is not Pooling.pooler:
        raise _err("spectral_norm", f"'pooler' normalises BERT's pooler, which training.pooling {Pooling(pooling).value!r} "
                                    f"does not use: choose none or all (or pooling: pooler)")


def check_gp_batch_size(batch_size: Any) -> None:
    """``pg_drr`` conditions its GP on each mini-batch of pairs (PG-DRR Algorithm 1, line 3): at least 2 pairs."""
    if not (_is_int(batch_size) and batch_size >= 2):
        raise _err("training.batch_size", f"pg_drr conditions its GP on each mini-batch (a batch too small for the GP): "
                                          f"expected at least 2, got {batch_size}")


@dataclass(frozen=True)
class MCDropoutConfig:
    """``mc_dropout``: T stochastic forward passes (S-BERT^D).

    ``masks``: ``per_query`` (one dropout mask per query and pass, shared by its candidates) or
    ``per_pair`` (a mask per pair, the first paper's implementation); see
    :mod:`calibrank.rankers.mc_dropout`.
    """

    passes: int = 10
    masks: DropoutMasks = DropoutMasks.per_query

    def check(self) -> None:
        check_count("passes", self.passes, 2, "stochastic passes", maximum=MAX_PASSES)


@dataclass(frozen=True)
class EnsembleConfig:
    """``ensemble``: M members differing only in their seed (S-BERT^E)."""

    members: int = 5

    def check(self) -> None:
        check_count("members", self.members, 2, "members", maximum=MAX_MEMBERS)


@dataclass(frozen=True)
class FocalConfig:
    """``focal``: the ``bert`` cross-encoder trained with focal loss; ``gamma`` a number >= 0 or ``adaptive``
    (:func:`calibrank.losses.focal`)."""

    gamma: float | FocalGamma = 2.0

    def check(self) -> None:
        check_focal_gamma("gamma", self.gamma)


@dataclass(frozen=True)
class RandomFeatureGPConfig:
    """Shared by ``sngp`` and ``gpf_bert`` (:mod:`calibrank.rankers.sngp`). ``momentum: null`` is the exact
    sum of eq. 4 over the last epoch; a number in (0, 1) is eq. 5's moving average."""

    spectral_norm: SpectralNormPlacement = SpectralNormPlacement.pooler
    sn_bound: float = 0.95
    sn_power_iterations: int = 1
    n_features: int = 1024
    length_scale: float = 1.0
    feature_scale: float = 1.0
    ridge: float = 1.0
    momentum: float | None = None
    mean_field_factor: float = math.pi / 8
    samples: int = 30
    focal_gamma: float | FocalGamma = FocalConfig.gamma
    head_dropout: float = HEAD_DROPOUT
    #: null: the GP output layer trains at training.lr, one rate as in GPF-BERT; a number gives
    #: it a rate of its own, as PG-DRR does for its GP layer (3e-3, sec. 4.4).
    head_lr: float | None = None
    #: start of the output weights beta: dense (a dense layer's uniform start), prior (N(0, I)) or
    #: zero (no gradient reaches the encoder until beta moves: training stalls at log 2).
    output_init: RFOutputInit = RFOutputInit.dense

    def check(self) -> None:
        check_positive("sn_bound", self.sn_bound)
        check_count("sn_power_iterations", self.sn_power_iterations)
        check_random_features(n_features=self.n_features, length_scale=self.length_scale,
                              feature_scale=self.feature_scale, ridge=self.ridge, momentum=self.momentum,
                              mean_field_factor=self.mean_field_factor, output_init=self.output_init)
        check_count("samples", self.samples, maximum=MAX_PASSES)
        check_focal_gamma("focal_gamma", self.focal_gamma)
        check_dropout("head_dropout", self.head_dropout)
        if self.head_lr is not None:
            check_positive("head_lr", self.head_lr)


@dataclass(frozen=True)
class SNGPConfig(RandomFeatureGPConfig):
    """``sngp``: the random-feature GP settings plus the loss (``focal`` uses ``focal_gamma``)."""

    loss: SNGPLoss = SNGPLoss.bce


@dataclass(frozen=True)
class GPFBertConfig(RandomFeatureGPConfig):
    """``gpf_bert``: SNGP always trained with focal loss (``focal_gamma``)."""


@dataclass(frozen=True)
class PGDRRConfig:
    """``pg_drr`` (:mod:`calibrank.rankers.pg_gp`): kernel, Gibbs sampling, GP-layer learning rate, inducing set."""

    kernel: GPKernel = GPKernel.rbf
    length_scale: float = 1.0
    output_scale: float = 8.0
    nu: float = 2.5
    gibbs_steps: int = 10
    gibbs_chains: int = 30
    gp_lr: float = 0.003
    projection: bool = True
    learn_mean: bool = True
    #: linear: prior mean m0 + v^T z (a route from the labels to the encoder besides the batch
    #: kernel); constant: m0 only.
    mean_function: GPMeanFunction = GPMeanFunction.linear
    #: null: the projection trains with the encoder at training.lr.
    projection_lr: float | None = None
    inducing: int = 512
    samples: int = 30
    quadrature_points: int = 20
    head_dropout: float = HEAD_DROPOUT

    def check(self) -> None:
        check_positive("length_scale", self.length_scale)
        check_positive("output_scale", self.output_scale)
        if self.kernel is GPKernel.matern:
            check_matern_nu("nu", self.nu)
        check_count("gibbs_steps", self.gibbs_steps, maximum=MAX_PASSES)
        check_count("gibbs_chains", self.gibbs_chains, maximum=MAX_PASSES)
        check_positive("gp_lr", self.gp_lr)
        if self.projection_lr is not None:
            check_positive("projection_lr", self.projection_lr)
        check_count("inducing", self.inducing, 2, "inducing pairs", maximum=MAX_FEATURES)
        check_count("samples", self.samples, maximum=MAX_PASSES)
        check_count("quadrature_points", self.quadrature_points, maximum=MAX_PASSES)
        check_dropout("head_dropout", self.head_dropout)


@dataclass(frozen=True)
class RankersConfig:
    """Which rankers the report trains, on which training corpora, and their own settings."""

    #: Registered rankers (:mod:`calibrank.registry`): the built-in ones are :class:`RankerName` members.
    names: tuple[RankerName, ...] = (RankerName.bert, RankerName.mc_dropout, RankerName.ensemble, RankerName.temperature)
    train_corpora: tuple[Corpus, ...] = (Corpus.chitchat,)
    #: Training seeds of every ranker (each a full rerun: model init, batch order, dropout masks).
    #: The first is the main run, the one every single-run analysis uses; empty = the profile seed.
    seeds: tuple[int, ...] = ()
    mc_dropout: MCDropoutConfig = field(default_factory=MCDropoutConfig)
    ensemble: EnsembleConfig = field(default_factory=EnsembleConfig)
    focal: FocalConfig = field(default_factory=FocalConfig)
    sngp: SNGPConfig = field(default_factory=SNGPConfig)
    gpf_bert: GPFBertConfig = field(default_factory=GPFBertConfig)
    pg_drr: PGDRRConfig = field(default_factory=PGDRRConfig)

    def check(self) -> None:
        if not self.names:
            raise _err("names", "expected at least one ranker")
        if not self.train_corpora:
            raise _err("train_corpora", "expected at least one training corpus")
        for name in ("names", "train_corpora", "seeds"):
            if len(set(getattr(self, name))) != len(getattr(self, name)):
                raise _err(name, "an entry is listed twice")
        for i, seed in enumerate(self.seeds):
            if not 0 <= seed < 2**32:
                raise _err(f"seeds[{i}]", f"expected an integer in 0..2**32-1, got {seed}")


@dataclass(frozen=True)
class Config:
    """One profile. ``seed`` is the root of every random choice of the run."""

    profile: str
    seed: int = 0
    description: str = ""
    data: DataConfig = field(default_factory=DataConfig)
    negatives: NegativesConfig = field(default_factory=NegativesConfig)
    training: TrainingConfig = field(default_factory=TrainingConfig)
    rankers: RankersConfig = field(default_factory=RankersConfig)
    source: str = field(default="", compare=False)

    def check(self) -> None:
        if not self.profile or not self.profile.replace("-", "").replace("_", "").isalnum():
            raise _err("profile", f"expected a name of letters, digits, '-' or '_', got {self.profile!r}")
        if not 0 <= self.seed < 2**32:
            raise _err("seed", f"expected an integer in 0..2**32-1, got {self.seed}")
        if RankerName.pg_drr in self.rankers.names:
            check_gp_batch_size(self.training.batch_size)
        for name in (RankerName.sngp, RankerName.gpf_bert):
            if name in self.rankers.names:
                try:
                    check_spectral_norm_placement(getattr(self.rankers, name.value).spectral_norm, self.training.pooling)
                except ConfigError as exc:
                    raise _within(f"rankers.{name.value}", exc) from None
        for i, corpus in enumerate(self.rankers.train_corpora):
            if corpus not in self.data.corpora:
                raise _err(f"rankers.train_corpora[{i}]", f"{corpus.value!r} is not among data.corpora")

    def to_dict(self) -> dict[str, Any]:
        """Plain data (enums as their names), e.g. for a JSON sidecar."""
        return _plain(dataclasses.asdict(self))


def _plain(obj: Any) -> Any:
    if isinstance(obj, (enum.Enum, registry.RegisteredName)):
        return obj.value
    if isinstance(obj, dict):
        return {k: _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    return obj


# ----------------------------------------------------------------------------- validation


def _describe(tp: Any) -> str:
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        return " or ".join("null" if a is type(None) else _describe(a) for a in typing.get_args(tp))
    if origin is tuple:
        return f"a list of {_describe(typing.get_args(tp)[0])}"
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return "one of " + ", ".join(repr(v) for v in _choices(tp))
    if dataclasses.is_dataclass(tp):
        return "a mapping"
    return {int: "an integer", float: "a number", str: "a string", bool: "true or false"}.get(tp, str(tp))


def _coerce(tp: Any, value: Any, key: str) -> Any:
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        if value is None and type(None) in args:
            return None
        for a in args:
            if a is type(None):
                continue
            try:
                return _coerce(a, value, key)
            except ConfigError:
                continue
        hints = [_hint(value, a) for a in args if isinstance(value, str) and isinstance(a, type) and issubclass(a, enum.Enum)]
        raise _err(key, f"expected {_describe(tp)}, got {value!r}{next((h for h in hints if h), '')}")
    if origin is tuple:
        (inner, _ellipsis) = typing.get_args(tp)
        if not isinstance(value, (list, tuple)):
            raise _err(key, f"expected {_describe(tp)}, got {value!r}")
        return tuple(_coerce(inner, v, f"{key}[{i}]") for i, v in enumerate(value))
    if dataclasses.is_dataclass(tp):
        return _build(tp, value, key)
    if tp is RankerName and isinstance(value, str) and value in registry.RANKERS:
        return registry.key(value)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        try:
            return tp(value)
        except ValueError:
            raise _err(key, f"expected {_describe(tp)}, got {value!r}{_hint(value, tp)}") from None
    if tp is bool:
        if isinstance(value, bool):
            return value
    elif tp is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif tp is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            if not math.isfinite(float(value)):
                raise _err(key, f"expected a finite number, got {value!r}")
            return float(value)
    elif tp is str:
        if isinstance(value, str):
            return value
    else:  # pragma: no cover - a field type this validator does not know is a programming error
        raise TypeError(f"config field {key} has unsupported type {tp}")
    raise _err(key, f"expected {_describe(tp)}, got {value!r}")


def _build(cls: type, raw: Any, prefix: str) -> Any:
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise _err(prefix or "<top level>", f"expected a mapping, got {raw!r}")
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.name != "source"}
    kwargs = {}
    for k, v in raw.items():
        key = f"{prefix}.{k}" if prefix else str(k)
        if k not in fields:
            close = difflib.get_close_matches(str(k), list(fields), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise _err(key, f"unknown key{hint}; known keys here: {', '.join(fields)}")
        kwargs[k] = _coerce(hints[k], v, key)
    obj = cls(**kwargs)
    check = getattr(obj, "check", None)
    if check is not None:
        try:
            check()
        except ConfigError as exc:
            raise (_within(prefix, exc) if prefix else exc) from None
    return obj


def build_section(cls: type, values: Mapping[str, Any], *, where: str = "") -> Any:
    """The config section ``cls`` from keyword ``values``, as a params file would give them.

    The section's defaults fill what ``values`` leaves out, and the values are coerced and
    checked as in :func:`load_config` (so a ranker's keyword arguments and its params section
    have one set of defaults and one set of checks). A :class:`ConfigError` starts with ``where``
    (e.g. the ranker's name) and names the key.
    """
    try:
        return _build(cls, dict(values), "")
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}" if where else str(exc), key=exc.key) from None


def _set_dotted(raw: dict, dotted: str, value: Any) -> None:
    parts = dotted.split(".")
    node = raw
    for p in parts[:-1]:
        node = node.setdefault(p, {})
        if not isinstance(node, dict):
            raise ConfigError(f"override {dotted!r}: {p!r} is not a section")
    node[parts[-1]] = value


def profile_path(profile: str | os.PathLike) -> Path:
    """``params/<profile>.yaml`` under the project root, or the given path if it names a YAML file."""
    text = str(profile)
    if text.endswith((".yaml", ".yml")) or os.sep in text:
        return Path(text).resolve()
    return project_root() / "params" / f"{text}.yaml"


# ----------------------------------------------------------------------------- reading params files

_TAG = "tag:yaml.org,2002:"
_INT, _FLOAT, _BOOL = _TAG + "int", _TAG + "float", _TAG + "bool"
_NUMBER_TAGS = (_INT, _FLOAT, _BOOL)
#: YAML 1.1's reading of a plain scalar (PyYAML's own resolver), the one another tool may give a profile.
_YAML_1_1 = yaml.resolver.Resolver()
_DECIMAL_INT = re.compile(r"[-+]?(?:0|[1-9][0-9]*)")

_Lines = dict[tuple, "tuple[Path, int] | None"]
"""Where each key and list item of a profile was given: (file, line) by its path of keys and indices
(``("rankers", "seeds", 1)``); None for an override."""


class _ProfileLoader(yaml.SafeLoader):
    """PyYAML's safe loader reading plain scalars by YAML 1.2's core schema: the booleans are ``true`` and
    ``false``, the integers ``[-+]?[0-9]+`` (and ``0o``/``0x`` forms), the floats ``1.5``, ``1e-3``, ``.inf``,
    ``.nan``; no dates. :func:`_scalar` refuses a scalar that YAML 1.1 reads otherwise (``010``, ``3:20``,
    ``yes``), so that a profile means the same to every reader."""

    yaml_implicit_resolvers = {
        first: [(tag, rx) for tag, rx in resolvers if tag not in (_INT, _FLOAT, _BOOL, _TAG + "timestamp", _TAG + "value")]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}


_ProfileLoader.add_implicit_resolver(_BOOL, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF"))
_ProfileLoader.add_implicit_resolver(_INT, re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$"), list("-+0123456789"))
_ProfileLoader.add_implicit_resolver(
    _FLOAT, re.compile(r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"),
    list("-+.0123456789"))


def _dotted(path: tuple) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" if i else str(p) for i, p in enumerate(path))


def _key_path(key: str) -> tuple:
    """The inverse of :func:`_dotted`: ``"rankers.seeds[1]"`` -> ``("rankers", "seeds", 1)``."""
    return tuple(int(p[1:-1]) if p.startswith("[") else p for p in re.findall(r"\[\d+\]|[^.\[]+", key))


def _show(value: Any) -> str:
    """A value as a profile writes it."""
    return ("true" if value else "false") if isinstance(value, bool) else repr(value)


def _scalar(loader: _ProfileLoader, node: yaml.ScalarNode, where: str) -> Any:
    """The value of a scalar by YAML 1.2; a plain scalar that YAML 1.1 reads as another number or boolean
    (``010``: octal 8; ``3:20``: 200 in base 60; ``1_000``; ``yes``), or an integer not written in decimal
    (``08``, ``0o10``, ``0x10``), is a :class:`ConfigError`: write the number in decimal, or quote the text."""
    text = node.value
    if node.style is not None:  # quoted or a block scalar: a string as written
        return loader.construct_object(node)
    if node.tag == _INT:  # the core schema's forms; PyYAML's constructor would read 010 as octal
        ours: Any = int(text, 10) if re.fullmatch(r"[-+]?[0-9]+", text) else int(text, 0)
    else:
        ours = loader.construct_object(node)
    tag11 = _YAML_1_1.resolve(yaml.ScalarNode, text, (True, False))
    theirs = loader.yaml_constructors[tag11](loader, yaml.ScalarNode(tag11, text)) if tag11 in _NUMBER_TAGS else text
    read_alike = tag11 == node.tag and repr(theirs) == repr(ours)
    not_decimal = node.tag == _INT and not _DECIMAL_INT.fullmatch(text)
    if not not_decimal and (read_alike or tag11 not in _NUMBER_TAGS):  # 1e-3: a string to YAML 1.1, never a number
        return ours
    why = "is not written in decimal" if read_alike else \
        f"is ambiguous (YAML 1.1 reads {_show(theirs)}, YAML 1.2 reads {_show(ours)})"
    number = theirs if isinstance(ours, str) else ours
    raise ConfigError(f"{where}: {text} {why}: write {_show(number)} or '{text}'")


def _value(loader: _ProfileLoader, node: yaml.Node, path: tuple, file: Path, lines: _Lines, open_nodes: tuple = ()) -> Any:
    """The value of ``node`` (at ``path`` in the profile), recording in ``lines`` the line of every key and list
    item below it. A key given twice in one mapping is an error naming both lines: YAML would keep the last, so
    a second ``training:`` block would silently drop the first one's keys."""
    line = node.start_mark.line + 1
    if id(node) in open_nodes:
        raise ConfigError(f"{file}:line {line}: {_dotted(path) or 'the profile'}: an alias that contains itself")
    open_nodes = (*open_nodes, id(node))
    if isinstance(node, yaml.ScalarNode):
        return _scalar(loader, node, f"{file}:line {line}: {_dotted(path) or 'the profile'}")
    if isinstance(node, yaml.SequenceNode):
        items = []
        for i, item in enumerate(node.value):
            lines[(*path, i)] = (file, item.start_mark.line + 1)
            items.append(_value(loader, item, (*path, i), file, lines, open_nodes))
        return items
    if not isinstance(node, yaml.MappingNode):  # pragma: no cover - the composer makes no other node
        raise TypeError(f"unexpected YAML node {node!r}")
    loader.flatten_mapping(node)  # `<<: *anchor` merge keys
    out: dict[Any, Any] = {}
    seen: dict[Any, int] = {}
    for key_node, value_node in node.value:
        key_line = key_node.start_mark.line + 1
        if not isinstance(key_node, yaml.ScalarNode):
            raise ConfigError(f"{file}:line {key_line}: a key must be a name, got a {key_node.id}")
        key = _scalar(loader, key_node, f"{file}:line {key_line}: {_dotted(path) or 'the profile'}")
        if key in seen:
            raise ConfigError(f"{file}:line {key_line}: duplicate key {key!r} (first given at line {seen[key]}); "
                              f"give each key once (YAML would silently keep the last)")
        seen[key] = key_line
        lines[(*path, key)] = (file, key_line)
        out[key] = _value(loader, value_node, (*path, key), file, lines, open_nodes)
    return out


def _read_profile(path: Path) -> tuple[dict[str, Any], _Lines]:
    """One params file as a mapping, strictly parsed (YAML 1.2 scalars, no key twice), and the line of each key;
    errors name the file and line."""
    if not path.exists():
        known = sorted(p.stem for p in (project_root() / "params").glob("*.yaml"))
        raise ConfigError(f"{path}: no such params file; known profiles: {', '.join(known) or 'none'}")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    loader = _ProfileLoader(text)
    lines: _Lines = {}
    try:
        node = loader.get_single_node()
        raw = {} if node is None else _value(loader, node, (), path, lines)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML ({exc})") from exc
    finally:
        loader.dispose()
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}:line {node.start_mark.line + 1}: expected a mapping of keys at the top level")
    return raw, lines


EXTENDS = "extends"
"""A profile may start from another one: ``extends: laptop`` takes every key of ``params/laptop.yaml`` and the
file's own keys replace them: a non-empty mapping merges key by key, ``{}`` resets a section to the defaults,
anything else is replaced whole. A section left empty (``training:`` with every line below it commented out,
or ``null``) is an error rather than a silent reset: say ``training: {}`` to reset, or remove the key to
inherit. A variant says only what differs."""


def _within_lines(lines: _Lines, path: tuple) -> list[tuple]:
    return [p for p in lines if p[:len(path)] == path]


def _merge(base: dict[str, Any], own: dict[str, Any], lines: _Lines, own_lines: _Lines, prefix: tuple = ()) -> dict[str, Any]:
    """``own`` over ``base`` (:data:`EXTENDS`); ``lines`` (``base``'s) then hold where each merged key was given."""
    out = dict(base)
    for key, value in own.items():
        path = (*prefix, key)
        if isinstance(value, dict) and value and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value, lines, own_lines, path)
            lines[path] = own_lines[path]
        else:
            out[key] = value
            for p in _within_lines(lines, path):
                del lines[p]
            lines.update((p, own_lines[p]) for p in _within_lines(own_lines, path))
    return out


def _check_no_empty_section(raw: dict[str, Any], cls: type, lines: _Lines, parent: str, prefix: tuple = ()) -> None:
    """In a profile that extends ``parent``, a section (a mapping of the schema) given empty is an error: it would
    silently replace the inherited section by the defaults (:data:`EXTENDS`)."""
    hints = typing.get_type_hints(cls)
    for key, value in raw.items():
        section = hints.get(key) if isinstance(key, str) else None
        if not dataclasses.is_dataclass(section):
            continue  # not a section, or an unknown key (reported with the schema's keys by _build)
        path = (*prefix, key)
        if value is None:
            file, line = lines[path]
            raise ConfigError(f"{file}:line {line}: {_dotted(path)}: `{key}:` is empty: say `{key}: {{}}` to reset it "
                              f"to the defaults, or remove the key to inherit it from {parent}", key=_dotted(path))
        if isinstance(value, dict):
            _check_no_empty_section(value, section, lines, parent, path)


def _locate(exc: ConfigError, lines: _Lines, profile: Path) -> ConfigError:
    """``exc`` prefixed with the file and line that gave its key (or the innermost section given around it)."""
    path = _key_path(exc.key) if exc.key else ()
    for n in range(len(path), 0, -1):
        if path[:n] in lines:
            where = lines[path[:n]]
            text = f"{profile}: override {exc}" if where is None else f"{where[0]}:line {where[1]}: {exc}"
            return ConfigError(text, key=exc.key)
    return ConfigError(f"{profile}: {exc}", key=exc.key)


def profile_sources(profile: str | os.PathLike) -> list[Path]:
    """The params files a profile reads, itself first, then what it extends (in order)."""
    chain: list[Path] = []
    path = profile_path(profile)
    while True:
        chain.append(path)
        raw, lines = _read_profile(path)
        parent = raw.get(EXTENDS)
        if parent is None:
            return chain
        where = f"{path}:line {lines[(EXTENDS,)][1]}: {EXTENDS}"
        if not isinstance(parent, str) or not re.fullmatch(r"[A-Za-z0-9_-]+", parent):
            raise ConfigError(f"{where}: expected the name of another profile (e.g. laptop); got {parent!r}")
        path = profile_path(parent)
        if path in chain:
            first = f"{chain[0]}:line {_read_profile(chain[0])[1][(EXTENDS,)][1]}: {EXTENDS}"
            raise ConfigError(f"{first}: the profiles extend each other in a circle "
                              f"({' -> '.join(p.stem for p in [*chain, path])})")
        if not path.exists():
            try:
                _read_profile(path)
            except ConfigError as exc:
                raise ConfigError(f"{where}: {exc}") from None


def load_config(profile: str | os.PathLike, overrides: dict[str, Any] | None = None) -> Config:
    """Read and validate a profile; ``overrides`` maps dotted keys (``"data.max_dialogues"``) to values.

    A profile with ``extends: <other>`` starts from the other profile's keys (:data:`EXTENDS`). Every error
    names the file and line of the key it is about (the parent's, for a key the profile inherits).
    """
    sources = profile_sources(profile)
    path = sources[0]
    raw: dict[str, Any] = {}
    lines: _Lines = {}
    for src in reversed(sources):
        own, own_lines = _read_profile(src)
        parent = own.pop(EXTENDS, None)
        if parent is not None:
            _check_no_empty_section(own, Config, own_lines, parent)
        if src != path:
            own.pop("profile", None)  # the name is not inherited
        raw = _merge(raw, own, lines, own_lines)
    for dotted, value in (overrides or {}).items():
        _set_dotted(raw, dotted, value)
        for p in _within_lines(lines, _key_path(dotted)):
            del lines[p]
        lines[_key_path(dotted)] = None
    if "profile" not in raw:
        raise ConfigError(f"{path}: profile: missing required key (the profile's name)")
    try:
        cfg = _build(Config, raw, "")
    except ConfigError as exc:
        raise _locate(exc, lines, path) from None
    if cfg.profile != path.stem:
        # runs/<profile>/ and reports/<profile>/ are named after it: a copied file that kept
        # another profile's name would overwrite that profile's results.
        raise _locate(_err("profile", f"{cfg.profile!r} must match the file name {path.stem!r}"), lines, path)
    return dataclasses.replace(cfg, source=str(path))


def training_seeds(cfg: Config) -> tuple[int, ...]:
    """The training seeds of the profile: ``rankers.seeds``, or the profile seed alone; the first is the main run."""
    return cfg.rankers.seeds or (cfg.seed,)


def run_name(ranker: str | RankerName, corpus: str | Corpus, seed: int, cfg: Config) -> str:
    """``<ranker>-<corpus>`` for the main seed, ``<ranker>-<corpus>-seed<N>`` for the others."""
    base = f"{registry.info(ranker).name}-{Corpus(corpus).value}"
    return base if seed == training_seeds(cfg)[0] else f"{base}-seed{seed}"


def parse_run_name(name: str, cfg: Config) -> tuple[RankerName | str, Corpus, int]:
    """The inverse of :func:`run_name`; a clear error for a run the profile does not list."""
    if name not in train_runs(cfg):
        raise ConfigError(f"{cfg.source or cfg.profile}: {name!r} is not a run of the profile (expected one of: "
                          f"{', '.join(train_runs(cfg))})")
    parts = name.split("-")
    seed = int(parts[2][len("seed"):]) if len(parts) == 3 else training_seeds(cfg)[0]
    return registry.key(parts[0]), Corpus(parts[1]), seed


def train_runs(cfg: Config) -> list[str]:
    """The runs of notebook 03 the profile asks for: ranker x training corpus x seed (names use no '-')."""
    return [run_name(r, c, s, cfg) for s in training_seeds(cfg) for c in cfg.rankers.train_corpora for r in cfg.rankers.names]


def main(argv: list[str] | None = None) -> int:
    """``python -m calibrank.config check PROFILE``: read and check a profile; a bad one is one line on
    stderr naming its file, line and key (``make report`` runs it before anything else)."""
    import sys

    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2 or args[0] != "check":
        print("usage: python -m calibrank.config check PROFILE", file=sys.stderr)
        return 2
    try:
        cfg = load_config(args[1])
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"{cfg.source}: ok")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


def section_table(section: Any):
    """A config section as a two-column table (dotted key, value), for notebooks."""
    import pandas as pd

    flat: dict[str, Any] = {}

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                walk(f"{prefix}.{k}" if prefix else k, v)
        else:
            flat[prefix] = ", ".join(map(str, value)) if isinstance(value, list) else value

    walk("", _plain(dataclasses.asdict(section)))
    return pd.DataFrame({"key": list(flat), "value": [str(v) for v in flat.values()]})
