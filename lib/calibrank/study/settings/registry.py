"""What each ranker is, written once: every part of the project that needs to know reads it here.

One :class:`RankerInfo` per ranker (:class:`calibrank.study.settings.choices.RankerName`): its name in the
papers, family, the model it shares, whether data-parallel training is exact, its sample count
S under a profile, and whose claims it is tested against. Torch-free. A new ranker is a class
in a module of its own and one entry here, its ``impl`` naming the class
(:func:`calibrank.study.model.rankers.ranker_class` imports it).
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from calibrank.study.settings.choices import RankerName

__all__ = [
    "Family",
    "Papers",
    "RankerInfo",
    "RANKERS",
    "RegisteredName",
    "claimed_by",
    "info",
    "key",
    "of_family",
    "register",
    "trained_model",
]


class Family(str, enum.Enum):
    """``deterministic``: one score per pair (S = 1); ``stochastic``: S draws from dropout passes or
    ensemble members; ``gp``: a Gaussian-process output layer with posterior draws."""

    deterministic = "deterministic"
    stochastic = "stochastic"
    gp = "gp"


class Papers(str, enum.Enum):
    """Whose claims a ranker is tested against: Penha & Hauff (2021) made theirs for MC Dropout and
    the ensemble (and BERT); PG-DRR and GPF-BERT (2023) for their Gaussian-process rankers."""

    penha_hauff = "penha_hauff"
    gp_2023 = "gp_2023"


@dataclass(frozen=True)
class RankerInfo:
    """One ranker, described once.

    ``shares``: the ranker whose trained model this one loads (MC Dropout and temperature scaling
    reuse ``bert``'s of the same seed); ``first_member_shares``: for an ensemble, the ranker whose
    model is member 0; ``data_parallel``: training is a mean over pairs, so data-parallel training is
    exact; ``samples`` (S of its Predictions) and ``members`` (models per seed) take the profile, which
    this module does not import, so that the registry stays below the config that reads it;
    ``impl``: the ranker's class as ``"module:Class"``, imported only when a ranker is made (so the
    registry loads no torch).
    """

    name: str
    display: str
    family: Family
    samples: Callable[[Any], int]
    shares: str | None = None
    first_member_shares: str | None = None
    data_parallel: bool = False
    members: Callable[[Any], int] = lambda cfg: 1
    papers: tuple[Papers, ...] = ()
    impl: str = ""


def _one(cfg: Any) -> int:
    return 1


RANKERS: dict[str, RankerInfo] = {}


def register(entry: RankerInfo) -> RankerInfo:
    """Add (or replace) a ranker's description; returns it."""
    if entry.shares is not None and entry.shares == entry.name:
        raise ValueError(f"{entry.name}: shares must name another ranker")
    RANKERS[entry.name] = entry
    return entry


_RANKERS = "calibrank.study.model.rankers."
for _entry in (
    RankerInfo(
        RankerName.bert.value,
        "BERT",
        Family.deterministic,
        _one,
        data_parallel=True,
        impl=_RANKERS + "deterministic:DeterministicRanker",
    ),
    RankerInfo(
        RankerName.mc_dropout.value,
        "MC Dropout",
        Family.stochastic,
        lambda cfg: cfg.rankers.mc_dropout.passes,
        shares=RankerName.bert.value,
        data_parallel=True,
        papers=(Papers.penha_hauff,),
        impl=_RANKERS + "mc_dropout:MCDropoutRanker",
    ),
    RankerInfo(
        RankerName.ensemble.value,
        "Ensemble",
        Family.stochastic,
        lambda cfg: cfg.rankers.ensemble.members,
        first_member_shares=RankerName.bert.value,
        data_parallel=True,
        members=lambda cfg: cfg.rankers.ensemble.members,
        papers=(Papers.penha_hauff,),
        impl=_RANKERS + "ensemble:EnsembleRanker",
    ),
    RankerInfo(
        RankerName.temperature.value,
        "Temperature scaling",
        Family.deterministic,
        _one,
        shares=RankerName.bert.value,
        data_parallel=True,
        impl=_RANKERS + "temperature:TemperatureRanker",
    ),
    RankerInfo(
        RankerName.focal.value,
        "BERT + focal loss",
        Family.deterministic,
        _one,
        data_parallel=True,
        impl=_RANKERS + "focal:FocalRanker",
    ),
    RankerInfo(
        RankerName.sngp.value,
        "SNGP",
        Family.gp,
        lambda cfg: cfg.rankers.sngp.samples,
        papers=(Papers.gp_2023,),
        impl=_RANKERS + "sngp:SNGPRanker",
    ),
    RankerInfo(
        RankerName.gpf_bert.value,
        "GPF-BERT",
        Family.gp,
        lambda cfg: cfg.rankers.gpf_bert.samples,
        papers=(Papers.gp_2023,),
        impl=_RANKERS + "focal:GPFBertRanker",
    ),
    RankerInfo(
        RankerName.pg_drr.value,
        "PG-DRR",
        Family.gp,
        lambda cfg: cfg.rankers.pg_drr.samples,
        papers=(Papers.gp_2023,),
        impl=_RANKERS + "pg_gp:PGDRRRanker",
    ),
):
    register(_entry)


def info(name: str | RankerName) -> RankerInfo:
    """The description of ``name``; a clear error naming the known rankers otherwise."""
    name = name.value if isinstance(name, RankerName) else str(name)
    if name not in RANKERS:
        raise KeyError(f"ranker: unknown ranker {name!r}; known rankers: {', '.join(RANKERS)}")
    return RANKERS[name]


class RegisteredName(str):
    """The name of a ranker registered outside :class:`RankerName` (:func:`register`): a ``str``
    with the enum members' ``value``, so code that passes ranker names around treats both alike."""

    __slots__ = ()

    @property
    def value(self) -> str:
        return str(self)


def key(name: str | RankerName) -> RankerName | RegisteredName:
    """``name`` as the project passes a ranker around: the :class:`RankerName` member of a built-in
    ranker, a :class:`RegisteredName` for one registered elsewhere (:func:`register`); ``KeyError``
    naming the known rankers for a name nobody registered. Profiles (``rankers.names``), run names
    and the grid go through this, so a registered ranker needs no enum member."""
    entry = info(name)
    return RankerName(entry.name) if entry.name in RankerName.__members__ else RegisteredName(entry.name)


def of_family(*families: Family) -> tuple[str, ...]:
    """The registered rankers of these families, in registration order."""
    return tuple(r.name for r in RANKERS.values() if r.family in families)


def claimed_by(papers: Papers) -> tuple[str, ...]:
    """The rankers whose claims ``papers`` made, in registration order."""
    return tuple(r.name for r in RANKERS.values() if papers in r.papers)


def trained_model(name: str | RankerName, member: int | None = None) -> str:
    """The ranker whose model is trained for ``name`` (its own, or the one it shares)."""
    entry = info(name)
    if member == 0 and entry.first_member_shares:
        return entry.first_member_shares
    return entry.shares or entry.name
