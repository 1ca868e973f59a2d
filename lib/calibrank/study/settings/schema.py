"""The schema of a profile: one frozen dataclass per section, each with its defaults and its check.

A section's ``check`` names the key it refuses (:class:`calibrank.study.settings.checks.ConfigError`); the
reader (:mod:`calibrank.study.settings.config`) prefixes the section's path and the file and line. The choices are the
enums of :mod:`calibrank.study.settings.choices`; the GP layers' defaults and ranges are read from the layers' own
settings (:mod:`calibrank.study.settings.gp`), so a default is written once.
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass, field
from typing import Any

from calibrank.study.settings.checks import (
    ConfigError,
    check_count,
    check_dropout,
    check_focal_gamma,
    check_matern_nu,
    check_positive,
    error,
    is_int,
    within,
)
from calibrank.study.settings.choices import (
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
from calibrank.study.settings.gp import (
    MAX_FEATURES,
    PolyaGammaSettings,
    RandomFeatureSettings,
    SpectralNormSettings,
    check_random_features,
)
from calibrank.study.settings.registry import RegisteredName

__all__ = [
    "BACKBONE_LAYERS",
    "BM25Config",
    "Config",
    "DataConfig",
    "EmbeddingConfig",
    "EnsembleConfig",
    "FocalConfig",
    "GPFBertConfig",
    "HEAD_DROPOUT",
    "MCDropoutConfig",
    "MixedConfig",
    "NegativesConfig",
    "PGDRRConfig",
    "QueryCaps",
    "RandomFeatureGPConfig",
    "RankersConfig",
    "SNGPConfig",
    "SplitConfig",
    "TrainingConfig",
    "check_gp_batch_size",
    "check_joint_layers",
    "check_spectral_norm_placement",
    "plain",
]

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


def _check_cap(key: str, value: int | None, minimum: int = 1, maximum: int = MAX_ITEMS) -> None:
    """An optional count: ``None`` (no cap) or an integer in ``minimum..maximum``."""
    if value is not None and value < minimum:
        raise error(
            key, f"expected null or {'a positive integer' if minimum == 1 else f'at least {minimum}'}, got {value}"
        )
    if value is not None and value > maximum:
        raise error(key, f"expected null or at most {maximum} (a bound no run of the study comes near), got {value}")


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
                raise error(name, f"expected a fraction in (0, 1), got {v}")
        total = self.train + self.valid + self.test
        if abs(total - 1.0) > 1e-6:
            raise error("train", f"train + valid + test must sum to 1, got {total:g}")


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
            raise error("corpora", "expected at least one corpus")
        if len(set(self.corpora)) != len(self.corpora):
            raise error("corpora", "a corpus is listed twice")
        if self.max_dialogues is not None and self.max_dialogues < 3:
            raise error("max_dialogues", f"expected null or at least 3 (one per split), got {self.max_dialogues}")
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
            raise error("k1", f"expected k1 >= 0, got {self.k1}")
        if not 0.0 <= self.b <= 1.0:
            raise error("b", f"expected b in [0, 1], got {self.b}")
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
            raise error("bm25_share", f"expected a probability in [0, 1], got {self.bm25_share}")


@dataclass(frozen=True)
class NegativesConfig:
    """Training queries get ``train_k`` negatives from ``train``; every eval sampler gets ``eval_k``.

    ``max_context_jaccard`` and ``exclude_own_dialogue`` apply to every sampler: no negative is
    a near-copy of a context turn (word-set Jaccard >= the threshold; null: only exact copies
    are excluded) or a turn of the example's own dialogue (:mod:`calibrank.study.data.negatives`).
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
            raise error("eval", "expected at least one evaluation sampler")
        if len(set(self.eval)) != len(self.eval):
            raise error("eval", "a sampler is listed twice")
        j = self.max_context_jaccard
        if j is not None and not 0.0 < j <= 1.0:
            raise error("max_context_jaccard", f"expected null or a similarity in (0, 1], got {j}")

    def params_for(self, sampler: SamplerName | str) -> dict[str, Any]:
        """Constructor parameters of one sampler, as :func:`calibrank.study.data.negatives.make_sampler` takes them."""
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
    """The one training loop's settings (:mod:`calibrank.study.model.training`), shared by every ranker.

    ``max_length`` bounds ``[CLS] context [SEP] response [SEP]`` in tokens, the context cut from the
    left; a response is cut at ``max_response_length`` (null: one that leaves no room for context is
    an error). ``eval_batch_size``: sequences per scoring batch; null follows the device
    (:func:`calibrank.hardware.scoring_batch_size`: 64 on a CPU, 1024 on a GPU). ``joint_layers``: the encoder's top layers that attend across context and response
    (:func:`calibrank.study.model.backbone.encode`); null, the papers' cross-encoder, is all of them.
    ``encode_once``: with no joint layer, a training step encodes each distinct context and response of its
    batch once, batches holding whole queries (:func:`calibrank.study.model.encode_once.query_batches`); false
    (the default) trains on pair rows. On ``laptop`` it is not faster (docs/decisions.md, "Training each context
    once"): a context is cut to the room its candidate leaves, so a query's two rows often hold two contexts.
    """

    backbone: str = "all-MiniLM-L6-v2"
    max_length: int = 128
    max_response_length: int | None = 64
    batch_size: int = 16
    eval_batch_size: int | None = None
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
    encode_once: bool = False
    precision: Precision = Precision.auto
    eval_every: int | None = None
    checkpoint_every: int = 100
    log_every: int = 10

    def check(self) -> None:
        for name in ("checkpoint_every", "log_every"):
            check_count(name, getattr(self, name))
        check_count("max_length", self.max_length, 8, "tokens", maximum=MAX_TOKENS)
        check_count("batch_size", self.batch_size, maximum=MAX_BATCH)
        if self.eval_batch_size is not None:
            check_count("eval_batch_size", self.eval_batch_size, maximum=MAX_BATCH)
        check_count("epochs", self.epochs, maximum=MAX_EPOCHS)
        if self.max_response_length is not None and not 1 <= self.max_response_length <= self.max_length - 4:
            raise error(
                "max_response_length",
                f"expected null or 1..max_length-4 (={self.max_length - 4}) so that context fits, got {self.max_response_length}",
            )
        if not self.lr > 0:  # also rejects NaN
            raise error("lr", f"expected a positive learning rate, got {self.lr}")
        if self.weight_decay < 0:
            raise error("weight_decay", f"expected >= 0, got {self.weight_decay}")
        if not 0.0 <= self.warmup_ratio < 1.0:
            raise error("warmup_ratio", f"expected a fraction in [0, 1), got {self.warmup_ratio}")
        if not self.grad_clip > 0:
            raise error("grad_clip", f"expected a positive norm, got {self.grad_clip}")
        if self.hidden_dropout is not None and not 0.0 <= self.hidden_dropout < 1.0:
            raise error("hidden_dropout", f"expected null or a probability in [0, 1), got {self.hidden_dropout}")
        if self.eval_every is not None and self.eval_every < 1:
            raise error("eval_every", f"expected null or a positive integer, got {self.eval_every}")
        check_joint_layers(
            self.joint_layers, pooling=self.pooling, n_layers=BACKBONE_LAYERS.get(self.backbone), backbone=self.backbone
        )


#: Encoder layers of the backbones the shipped profiles name, so that ``training.joint_layers`` is
#: checked with the profile, before any weights load; any other backbone is checked when its
#: encoder is loaded (:class:`calibrank.study.model.backbone.Backbone`).
BACKBONE_LAYERS = {
    "all-MiniLM-L6-v2": 6,
    "sentence-transformers/all-MiniLM-L6-v2": 6,
    "tiny-random": 2,
    "bert-base-cased": 12,
    "bert-base-uncased": 12,
}


def check_joint_layers(
    joint_layers: Any, *, pooling: Any = None, n_layers: int | None = None, backbone: str = ""
) -> int | None:
    """``joint_layers``: null (every layer joint) or 0..``n_layers`` (when the layer count is known).

    With no joint layer BERT's pooler reads the context's ``[CLS]`` alone, so a score on it could not
    depend on the response: ``joint_layers: 0`` needs ``pooling`` ``segments`` or ``mean`` (checked
    when ``pooling`` is given).
    """
    if joint_layers is None:
        return None
    if not (is_int(joint_layers) and joint_layers >= 0):
        raise error("joint_layers", f"expected null (every layer joint) or an integer >= 0, got {joint_layers!r}")
    if n_layers is not None and joint_layers > n_layers:
        raise error(
            "joint_layers",
            f"expected null or 0..{n_layers} ({backbone or 'the backbone'} has {n_layers} "
            f"encoder layers), got {joint_layers}",
        )
    if joint_layers == 0 and pooling is not None and Pooling(pooling) is Pooling.pooler:
        raise error(
            "joint_layers",
            "0 joint layers with pooling 'pooler': the pooler reads the context's [CLS] alone, "
            "so the score could not depend on the response; use pooling segments or mean, "
            "or at least 1 joint layer",
        )
    return int(joint_layers)


# ----------------------------------------------------------------------------- rankers
#
# A ranker built by keyword arguments builds its section (:func:`calibrank.study.settings.config.build_section`), so
# its arguments and its params section have one set of defaults and checks; the settings of the GP
# layers below them are the layers' own (:mod:`calibrank.study.settings.gp`), read here.

#: Dropout on the pooled feature before every ranker's output layer (the first paper's BERT head).
HEAD_DROPOUT = 0.1


def check_spectral_norm_placement(spectral_norm: Any, pooling: Any) -> None:
    """``spectral_norm: pooler`` needs ``pooling: pooler``: it normalises BERT's pooler, which the other poolings skip."""
    if SpectralNormPlacement(spectral_norm) is SpectralNormPlacement.pooler and Pooling(pooling) is not Pooling.pooler:
        raise error(
            "spectral_norm",
            f"'pooler' normalises BERT's pooler, which training.pooling {Pooling(pooling).value!r} "
            f"does not use: choose none or all (or pooling: pooler)",
        )


def check_gp_batch_size(batch_size: Any) -> None:
    """``pg_drr`` conditions its GP on each mini-batch of pairs (PG-DRR Algorithm 1, line 3): at least 2 pairs."""
    if not (is_int(batch_size) and batch_size >= 2):
        raise error(
            "training.batch_size",
            f"pg_drr conditions its GP on each mini-batch (a batch too small for the GP): "
            f"expected at least 2, got {batch_size}",
        )


@dataclass(frozen=True)
class MCDropoutConfig:
    """``mc_dropout``: T stochastic forward passes (S-BERT^D).

    ``masks``: ``per_query`` (one dropout mask per query and pass, shared by its candidates) or
    ``per_pair`` (a mask per pair, the first paper's implementation); see
    :mod:`calibrank.study.model.rankers.mc_dropout`.
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
    (:func:`calibrank.study.model.losses.focal`)."""

    gamma: float | FocalGamma = 2.0

    def check(self) -> None:
        check_focal_gamma("gamma", self.gamma)


@dataclass(frozen=True)
class RandomFeatureGPConfig:
    """Shared by ``sngp`` and ``gpf_bert`` (:mod:`calibrank.study.model.rankers.sngp`). ``momentum: null`` is the exact
    sum of eq. 4 over the last epoch; a number in (0, 1) is eq. 5's moving average."""

    spectral_norm: SpectralNormPlacement = SpectralNormPlacement.pooler
    sn_bound: float = SpectralNormSettings.bound
    sn_power_iterations: int = SpectralNormSettings.n_power_iterations
    n_features: int = RandomFeatureSettings.n_features
    length_scale: float = RandomFeatureSettings.length_scale
    feature_scale: float = RandomFeatureSettings.feature_scale
    ridge: float = RandomFeatureSettings.ridge
    momentum: float | None = RandomFeatureSettings.momentum
    mean_field_factor: float = RandomFeatureSettings.mean_field_factor
    samples: int = 30
    focal_gamma: float | FocalGamma = FocalConfig.gamma
    head_dropout: float = HEAD_DROPOUT
    #: null: the GP output layer trains at training.lr, one rate as in GPF-BERT; a number gives
    #: it a rate of its own, as PG-DRR does for its GP layer (3e-3, sec. 4.4).
    head_lr: float | None = None
    #: start of the output weights beta: dense (a dense layer's uniform start), prior (N(0, I)) or
    #: zero (no gradient reaches the encoder until beta moves: training stalls at log 2).
    output_init: RFOutputInit = RandomFeatureSettings.output_init

    def check(self) -> None:
        check_positive("sn_bound", self.sn_bound)
        check_count("sn_power_iterations", self.sn_power_iterations)
        check_random_features(
            n_features=self.n_features,
            length_scale=self.length_scale,
            feature_scale=self.feature_scale,
            ridge=self.ridge,
            momentum=self.momentum,
            mean_field_factor=self.mean_field_factor,
            output_init=self.output_init,
        )
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
    """``pg_drr`` (:mod:`calibrank.study.model.rankers.pg_gp`): kernel, Gibbs sampling, GP-layer learning rate, inducing set."""

    kernel: GPKernel = GPKernel.rbf
    length_scale: float = PolyaGammaSettings.length_scale
    output_scale: float = PolyaGammaSettings.output_scale
    nu: float = PolyaGammaSettings.nu
    gibbs_steps: int = PolyaGammaSettings.gibbs_steps
    gibbs_chains: int = PolyaGammaSettings.gibbs_chains
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
    quadrature_points: int = PolyaGammaSettings.quadrature_points
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

    #: Registered rankers (:mod:`calibrank.study.settings.registry`): the built-in ones are :class:`RankerName` members.
    names: tuple[RankerName, ...] = (
        RankerName.bert,
        RankerName.mc_dropout,
        RankerName.ensemble,
        RankerName.temperature,
    )
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
            raise error("names", "expected at least one ranker")
        if not self.train_corpora:
            raise error("train_corpora", "expected at least one training corpus")
        for name in ("names", "train_corpora", "seeds"):
            if len(set(getattr(self, name))) != len(getattr(self, name)):
                raise error(name, "an entry is listed twice")
        for i, seed in enumerate(self.seeds):
            if not 0 <= seed < 2**32:
                raise error(f"seeds[{i}]", f"expected an integer in 0..2**32-1, got {seed}")


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
            raise error("profile", f"expected a name of letters, digits, '-' or '_', got {self.profile!r}")
        if not 0 <= self.seed < 2**32:
            raise error("seed", f"expected an integer in 0..2**32-1, got {self.seed}")
        if RankerName.pg_drr in self.rankers.names:
            check_gp_batch_size(self.training.batch_size)
        for name in (RankerName.sngp, RankerName.gpf_bert):
            if name in self.rankers.names:
                try:
                    check_spectral_norm_placement(
                        getattr(self.rankers, name.value).spectral_norm, self.training.pooling
                    )
                except ConfigError as exc:
                    raise within(f"rankers.{name.value}", exc) from None
        for i, corpus in enumerate(self.rankers.train_corpora):
            if corpus not in self.data.corpora:
                raise error(f"rankers.train_corpora[{i}]", f"{corpus.value!r} is not among data.corpora")

    def to_dict(self) -> dict[str, Any]:
        """Plain data (enums as their names), e.g. for a JSON sidecar."""
        return plain(dataclasses.asdict(self))


def plain(obj: Any) -> Any:
    """``obj`` as plain data: enums and registered ranker names as their values, tuples as lists."""
    if isinstance(obj, (enum.Enum, RegisteredName)):
        return obj.value
    if isinstance(obj, dict):
        return {k: plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [plain(v) for v in obj]
    return obj
