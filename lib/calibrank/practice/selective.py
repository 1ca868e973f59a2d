"""Answer or abstain: risk-coverage analysis of "answer with the top-ranked response, or say nothing".

For each query the system answers with its top-ranked candidate; the loss is 1 when that
candidate is not the true response (``1 - R@1``, ties against the relevant candidate, as
:mod:`calibrank.metrics.ranking`). A confidence score orders the queries; answering the
``i`` most confident of ``n`` queries gives coverage ``i / n`` and

- selective risk ``r(i) = (1 / i) sum_{j <= i} loss_(j)`` (the risk-coverage curve, El-Yaniv &
  Wiener, JMLR 2010);
- generalized risk ``g(i) = (1 / n) sum_{j <= i} loss_(j)`` (the joint probability of answering
  and being wrong; Traub et al., NeurIPS 2024, eq. 3).

Areas, as the mean over the n coverage points ``i / n``:

- ``AURC = (1 / n) sum_i r(i)`` (Geifman, Uziel & El-Yaniv, ICLR 2019, eq. 3, the discrete
  form used by their code);
- ``E-AURC = AURC - AURC*`` (Geifman et al. 2019, Section 4), ``AURC*`` the AURC of an oracle
  confidence that puts every correct answer first; computed exactly on the n queries (their
  continuous approximation ``r + (1 - r) ln(1 - r)`` is what it tends to);
- ``AUGRC = (1 / n) sum_i g(i)`` (Traub et al. 2024, eq. 4).

``risk@cov``: the selective risk at coverage ``ceil(cov * n) / n`` (default 80%).

**Ties in the confidence** (a ranker whose top probabilities saturate gives several queries
the same confidence): the order among tied queries is not defined by the score, so each tied
query gets the *mean* loss of its tie group. Because ``r`` and ``g`` are linear in the
cumulative loss, this equals the expectation of every quantity above over a uniformly random
order of the tied queries, and makes the numbers independent of the input order.

Confidence scores (larger = more confident) per query: ``top prob`` (the top candidate's
probability), ``margin`` (top minus second probability), ``-top var`` (minus the predictive
variance of the top candidate; for rankers with S > 1 only, skipped otherwise).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable

import numpy as np
import pandas as pd

from .listwise import query_signals

__all__ = ["CONFIDENCES", "SelectiveScores", "confidences", "risk_coverage", "selective_scores", "selective_table",
           "selective_curves"]

CONFIDENCES = ("top prob", "margin", "-top var")


def _check(conf: np.ndarray, loss: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    c = np.asarray(conf, dtype=np.float64).reshape(-1)
    ell = np.asarray(loss, dtype=np.float64).reshape(-1)
    if c.shape != ell.shape or c.size == 0:
        raise ValueError(f"confidence and loss must be non-empty and of the same length; got {c.size} and {ell.size}")
    if not np.isfinite(c).all():
        raise ValueError("confidence must be finite (a ranker without samples has no variance confidence)")
    if not ((ell >= 0) & (ell <= 1)).all():
        raise ValueError("loss must be in [0, 1] (0 = the answer is right, 1 = wrong)")
    return c, ell


def _ordered_losses(conf: np.ndarray, loss: np.ndarray) -> np.ndarray:
    """Losses in decreasing confidence, each replaced by the mean loss of its tie group."""
    groups, inverse = np.unique(-conf, return_inverse=True)  # groups sorted by decreasing confidence
    mean = np.bincount(inverse, weights=loss, minlength=groups.size) / np.bincount(inverse, minlength=groups.size)
    return mean[np.sort(inverse)]


def risk_coverage(conf: np.ndarray, loss: np.ndarray) -> pd.DataFrame:
    """The curves: one row per coverage ``i / n``, ``selective risk`` ``r(i)`` and ``generalized risk`` ``g(i)``."""
    c, ell = _check(conf, loss)
    n = c.size
    cum = np.cumsum(_ordered_losses(c, ell))
    i = np.arange(1, n + 1)
    return pd.DataFrame({"coverage": i / n, "selective risk": cum / i, "generalized risk": cum / n})


@dataclasses.dataclass(frozen=True)
class SelectiveScores:
    aurc: float
    eaurc: float
    augrc: float
    risk_at_coverage: float
    coverage: float
    risk: float


def selective_scores(conf: np.ndarray, loss: np.ndarray, *, coverage: float = 0.8) -> SelectiveScores:
    """AURC, E-AURC, AUGRC and the risk at ``coverage`` (see the module docstring); ``risk`` is the full-coverage risk."""
    if isinstance(coverage, bool) or not 0.0 < float(coverage) <= 1.0:
        raise ValueError(f"coverage must be in (0, 1]; got {coverage!r}")
    c, ell = _check(conf, loss)
    n = c.size
    curve = risk_coverage(c, ell)
    oracle = np.cumsum(np.sort(ell)) / np.arange(1, n + 1)
    aurc = float(curve["selective risk"].mean())
    i = max(1, math.ceil(coverage * n - 1e-9))
    return SelectiveScores(aurc=aurc, eaurc=aurc - float(oracle.mean()), augrc=float(curve["generalized risk"].mean()),
                           risk_at_coverage=float(curve["selective risk"].iloc[i - 1]), coverage=i / n,
                           risk=float(ell.mean()))


def confidences(pred) -> tuple[pd.DataFrame, np.ndarray]:
    """``(confidence per query for each of :data:`CONFIDENCES` (NaN column where undefined), loss [Q])``."""
    sig = query_signals(pred)
    probs = np.sort(pred.probs, axis=1)
    margin = probs[:, -1] - probs[:, -2] if probs.shape[1] > 1 else np.full(probs.shape[0], np.nan)
    conf = pd.DataFrame({"top prob": sig["top prob"].to_numpy(), "margin": margin, "-top var": -sig["top var"].to_numpy()})
    return conf, 1.0 - sig["R@1"].to_numpy()


def selective_table(study, rankers: Iterable[str] | None = None, *, coverage: float = 0.8) -> pd.DataFrame:
    """One row per ranker x test condition x confidence score (main training seed): ``AURC``,
    ``E-AURC``, ``AUGRC``, ``risk@<coverage>`` and the full-coverage ``risk``; ``-top var``
    only for rankers with S > 1."""
    label = f"risk@{coverage:.0%}"
    rows = []
    for ranker, tc, cond in study.cells("test", rankers):
        pred = study.get(ranker, tc, cond)
        conf, loss = confidences(pred)
        for name in CONFIDENCES:
            if name == "-top var" and pred.n_samples < 2:
                continue
            s = selective_scores(conf[name].to_numpy(), loss, coverage=coverage)
            rows.append({"ranker": ranker, "train_corpus": tc, "corpus": cond.corpus, "sampler": cond.sampler,
                         "shift": study.shift(cond, tc), "confidence": name, "queries": int(loss.size),
                         "AURC": s.aurc, "E-AURC": s.eaurc, "AUGRC": s.augrc, label: s.risk_at_coverage,
                         "risk": s.risk})
    return pd.DataFrame(rows)


def selective_curves(study, condition=None, train_corpus: str | None = None,
                     rankers: Iterable[str] | None = None) -> pd.DataFrame:
    """Risk-coverage curves on one condition (default: in distribution): one row per ranker x confidence x coverage."""
    from ..study import default_condition

    tc = train_corpus or study.train_corpora[0]
    cond = condition or default_condition(study, tc)
    frames = []
    for ranker in rankers if rankers is not None else study.rankers:
        pred = study.get(ranker, tc, cond)
        conf, loss = confidences(pred)
        for name in CONFIDENCES:
            if name == "-top var" and pred.n_samples < 2:
                continue
            frames.append(risk_coverage(conf[name].to_numpy(), loss).assign(ranker=ranker, confidence=name,
                                                                              condition=cond.name))
    return pd.concat(frames, ignore_index=True)
