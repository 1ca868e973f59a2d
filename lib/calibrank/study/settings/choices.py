"""Every named choice a profile offers, one ``str`` enum per option.

A member compares equal to its name (``Pooling.mean == "mean"``); the config and the modules
that act on an option check against the same enum, so a choice is added in one place.
Standard library only, so command-line tools load it without torch.
"""

from __future__ import annotations

import enum

from calibrank.hardware import Precision

__all__ = [
    "Precision",
    "Corpus",
    "ContextStyle",
    "Positions",
    "SamplerName",
    "RankerName",
    "Pooling",
    "Schedule",
    "Selection",
    "SpectralNormPlacement",
    "SNGPLoss",
    "FocalGamma",
    "DropoutMasks",
    "RFOutputInit",
    "GPKernel",
    "GPMeanFunction",
    "MATERN_NU",
    "names",
]


def names(choice: type[enum.Enum]) -> str:
    """The values of an enum quoted and comma-separated, for error messages: ``'rbf', 'matern', 'linear'``."""
    return ", ".join(repr(m.value) for m in choice)


# ----------------------------------------------------------------------------- data


class Corpus(str, enum.Enum):
    """Corpora the data layer can read (see :mod:`calibrank.study.data.corpora`)."""

    chitchat = "chitchat"
    chatterbot = "chatterbot"
    msdialog = "msdialog"
    mantis = "mantis"
    udc_dstc8 = "udc_dstc8"


class ContextStyle(str, enum.Enum):
    """How context utterances are joined into one string (:func:`calibrank.study.data.format_context`).

    ``plain``: joined with a space. ``separators``: the first paper's ``[UTTERANCE_SEP]`` after
    every utterance and ``[TURN_SEP]`` after every second one. ``utterance_sep``: only
    ``[UTTERANCE_SEP]`` (what the first paper used for UDC).
    """

    plain = "plain"
    separators = "separators"
    utterance_sep = "utterance_sep"


class Positions(str, enum.Enum):
    """Which responses of a dialogue become examples: every turn after the first, or the last only."""

    all = "all"
    last = "last"


class SamplerName(str, enum.Enum):
    """Negative samplers (:mod:`calibrank.study.data.negatives`)."""

    random = "random"
    bm25 = "bm25"
    mixed = "mixed"
    embedding = "embedding"


# ----------------------------------------------------------------------------- training


class RankerName(str, enum.Enum):
    """Rankers selectable by name (:func:`calibrank.study.model.rankers.make_ranker`)."""

    bert = "bert"
    mc_dropout = "mc_dropout"
    ensemble = "ensemble"
    temperature = "temperature"
    focal = "focal"
    sngp = "sngp"
    gpf_bert = "gpf_bert"
    pg_drr = "pg_drr"


class Schedule(str, enum.Enum):
    """Learning rate over training: ``linear`` warm-up then linear decay to 0 (sentence-transformers'
    default), or ``constant`` after the warm-up (the first paper's public code: Adam at a fixed lr)."""

    linear = "linear"
    constant = "constant"


class Selection(str, enum.Enum):
    """Which weights a training run keeps: ``best`` on the validation metric (early selection), or
    ``last`` (the first paper's public code keeps the weights of its last step)."""

    best = "best"
    last = "last"


class Pooling(str, enum.Enum):
    """The feature the ranker's head reads (:class:`calibrank.study.model.cross_encoder.CrossEncoder`).

    ``pooler``: BERT's pooler (dense + tanh over ``[CLS]``), the first paper's head. ``mean``: the
    masked mean of the last hidden states, what sentence-transformers checkpoints were fine-tuned
    to produce. ``segments``: ``sqrt(d) * u * v`` with ``u`` / ``v`` the unit means over context /
    response tokens; the head starts as a scaled cosine of the two.
    """

    pooler = "pooler"
    mean = "mean"
    segments = "segments"


# ----------------------------------------------------------------------------- rankers


class SpectralNormPlacement(str, enum.Enum):
    """Where ``sngp`` / ``gpf_bert`` spectrally normalise the encoder (GPF-BERT eq. 1): the pooler's
    dense layer, every linear layer, or nowhere (:func:`calibrank.study.model.rankers.sngp.apply_spectral_norm_to`)."""

    pooler = "pooler"
    none = "none"
    all = "all"


class SNGPLoss(str, enum.Enum):
    """Training loss of ``sngp`` on the GP posterior-mean logits (:mod:`calibrank.study.model.losses`)."""

    bce = "bce"
    focal = "focal"


class DropoutMasks(str, enum.Enum):
    """How ``mc_dropout`` draws its dropout masks in a pass (:mod:`calibrank.study.model.rankers.mc_dropout`).

    ``per_query``: one mask per query and pass, shared by its candidates and drawn from (seed, pass,
    query id). ``per_pair``: a fresh mask per pair, as the first paper's implementation.
    """

    per_query = "per_query"
    per_pair = "per_pair"


class FocalGamma(str, enum.Enum):
    """Named focal-loss gammas; any other gamma is a number >= 0 (:func:`calibrank.study.model.losses.focal`).

    ``adaptive``: the sample-dependent gamma of Mukhoti et al. (2020, "FLSD-53").
    """

    adaptive = "adaptive"


class RFOutputInit(str, enum.Enum):
    """Start of the output weights of the random-feature GP layer (``sngp``, ``gpf_bert``;
    :class:`calibrank.study.model.gp.random_features.RandomFeatureGP`)."""

    dense = "dense"
    prior = "prior"
    zero = "zero"


class GPKernel(str, enum.Enum):
    """Kernel of the ``pg_drr`` GP layer (RBF in the paper, eq. 4; Matérn and linear in its ablation, sec. 5.3)."""

    rbf = "rbf"
    matern = "matern"
    linear = "linear"


class GPMeanFunction(str, enum.Enum):
    """Prior mean of the ``pg_drr`` GP layer: ``m0`` (constant) or ``m0 + v^T z`` (linear)."""

    constant = "constant"
    linear = "linear"


#: Smoothness values ``nu`` of the Matérn kernel with a closed form (:func:`calibrank.study.model.gp.polya_gamma.matern_kernel`).
MATERN_NU = (0.5, 1.5, 2.5)
