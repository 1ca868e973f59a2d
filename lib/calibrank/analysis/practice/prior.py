"""Prior shift: the rankers are trained on balanced pairs and tested on lists of 1 + n candidates.

Bayes' rule moves a posterior from the training prior to the test prior ``1 / (1 + n)``:
``p' = r p / (r p + 1 - p)`` with ``r`` the prior odds ratio (Saerens, Latinne & Decaestecker
2002, eq. 2.4; Elkan 2001, Theorem 2); no label is used. :func:`prior_ece_by_negatives` repeats
Penha & Hauff's Figure 2 before and after it, :func:`prior_summary` says how much ECE it removes.
Derivation: docs/decisions.md, "Prior correction".
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

from ...metrics.calibration import ece
from ...metrics.resample import compare, features
from ...predictions import Predictions
from ...table_checks import in_range, raise_problems, rows_failing
from .. import uncertainty as unc
from ..subsets import subset_negatives
from .cells import CELL, debiased_ece, debiased_problems, rows_problems, study_cells

__all__ = ["correct_predictions", "prior_correct", "prior_ece_by_negatives", "prior_odds_ratio", "prior_summary",
           "train_prior"]


def _check_prior(value: float, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating)) or not 0.0 < float(value) < 1.0:
        raise ValueError(f"{name} must be a probability strictly between 0 and 1 (a class prior); got {value!r}")
    return float(value)


def prior_odds_ratio(pi_train: float, pi_test: float) -> float:
    """``r = [pi_test / (1 - pi_test)] / [pi_train / (1 - pi_train)]`` (Saerens et al. 2002, eq. 2.4)."""
    a = _check_prior(pi_train, "pi_train")
    b = _check_prior(pi_test, "pi_test")
    return (b / (1.0 - b)) / (a / (1.0 - a))


def prior_correct(probs: np.ndarray, pi_train: float, pi_test: float) -> np.ndarray:
    """Bayes' rule for a new class prior: ``p' = r p / (r p + 1 - p)`` with ``r`` of :func:`prior_odds_ratio`.

    ``probs``: probabilities of relevance under the training prior (any shape). 0 and 1 map to
    themselves exactly (no clipping). An error names the values that are not probabilities.
    """
    r = prior_odds_ratio(pi_train, pi_test)
    p = np.asarray(probs, dtype=np.float64)
    bad = ~np.isfinite(p) | (p < 0) | (p > 1)
    if bad.any():
        raise ValueError(f"probs must be probabilities in [0, 1]; {int(bad.sum())} value(s) are not "
                         f"(first: {float(p[bad].flat[0])!r})")
    return r * p / (r * p + (1.0 - p))


def train_prior(train_k: int) -> float:
    """The training prior of relevance with ``train_k`` negatives per positive: ``1 / (1 + train_k)``."""
    if isinstance(train_k, bool) or not isinstance(train_k, (int, np.integer)) or train_k < 1:
        raise ValueError(f"train_k (negatives per positive in training) must be a positive integer; got {train_k!r}")
    return 1.0 / (1.0 + int(train_k))


def correct_predictions(pred: Predictions, pi_train: float, pi_test: float | None = None) -> Predictions:
    """``pred`` with ``probs`` and every sample prior-corrected; ``pi_test`` defaults to ``1 / K``
    (one relevant candidate per query, the protocol's prior; the labels are not read)."""
    k = pred.labels.shape[1]
    pi_test = 1.0 / k if pi_test is None else pi_test
    return Predictions(pred.qids, pred.labels, prior_correct(pred.probs, pi_train, pi_test),
                       prior_correct(pred.samples, pi_train, pi_test),
                       meta={**pred.meta, "prior_correction": {"pi_train": pi_train, "pi_test": pi_test}},
                       mask=pred.mask, docids=pred.docids)


def prior_ece_by_negatives(study, rankers: Iterable[str] | None = None, *, seed: int | None = None,
                           n_resamples: int = 1000) -> pd.DataFrame:
    """ECE per number of non-relevant candidates n = 1..k, before and after the prior correction.

    One row per ranker x training corpus x test condition x n (main training seed): ``ECE raw`` /
    ``ECE corrected`` (eq. 1), each with its debiased ECE, 95% interval and bias
    (:func:`~calibrank.analysis.practice.cells.debiased_ece`), ``pi_train``, ``pi_test = 1 / (n + 1)`` and ``removed``.
    Subsets nested in n, drawn with ``seed`` (default the profile seed); checked as built
    (:func:`_by_negatives_problems`).
    """
    seed = study.cfg.seed if seed is None else seed
    pi_train = train_prior(study.cfg.negatives.train_k)
    rows = []
    for ranker, tc, cond in study.cells("test", rankers):
        pred = study.get(ranker, tc, cond)
        k = pred.labels.shape[1] - 1
        for n in range(1, k + 1):
            sub = subset_negatives(pred, n, seed=seed)
            pi_test = 1.0 / (n + 1)
            fixed = correct_predictions(sub, pi_train, pi_test)
            row = {"ranker": ranker, "train_corpus": tc, "corpus": cond.corpus, "sampler": cond.sampler,
                   "shift": study.shift(cond, tc), "n_nonrel": n, "pi_train": pi_train, "pi_test": pi_test}
            for name, p in (("raw", sub), ("corrected", fixed)):
                row[f"ECE {name}"] = ece(p.probs, p.labels)
                row.update(debiased_ece(p, f"ECE {name}", n_resamples=n_resamples, seed=seed))
            row["removed"] = 1.0 - row["ECE corrected"] / row["ECE raw"] if row["ECE raw"] > 0 else np.nan
            row["queries"] = int(pred.labels.shape[0])
            rows.append(row)
    table = pd.DataFrame(rows)
    raise_problems(_by_negatives_problems(study, table, rankers))
    return table


def prior_summary(study, rankers: Iterable[str] | None = None, *, n_resamples: int = unc.N_RESAMPLES) -> pd.DataFrame:
    """How much of the ECE on all 1 + k candidates the prior correction removes, per ranker and condition.

    ``removed = 1 - ECE corrected / ECE raw`` with ``removed lo`` / ``hi`` and the one-sided paired
    permutation ``pvalue`` of :func:`calibrank.metrics.resample.compare` (main training seed);
    checked as built (:func:`_summary_problems`).
    """
    pi_train = train_prior(study.cfg.negatives.train_k)
    rows = []
    for ranker, tc, cond in study.cells("test", rankers):
        pred = study.get(ranker, tc, cond)
        fixed = correct_predictions(pred, pi_train)
        c = compare(features(fixed, "ECE"), features(pred, "ECE"), alternative="less", relative=True,
                    level=unc.LEVEL, n_resamples=n_resamples, seed=study.cfg.seed)
        rows.append({"ranker": ranker, "train_corpus": tc, "corpus": cond.corpus, "sampler": cond.sampler,
                     "shift": study.shift(cond, tc), "K": pred.labels.shape[1], "pi_train": pi_train,
                     "pi_test": 1.0 / pred.labels.shape[1], "ECE raw": c.b, "ECE corrected": c.a,
                     "removed": -c.value, "removed lo": -c.high, "removed hi": -c.low, "pvalue": c.pvalue,
                     "queries": c.n_queries, "note": c.note})
    table = pd.DataFrame(rows)
    raise_problems(_summary_problems(study, table, rankers))
    return table


def _by_negatives_problems(study, table: pd.DataFrame, rankers: Iterable[str] | None) -> list[str]:
    """One row per cell and n = 1..k; ECEs in [0, 1], each debiased ECE inside its interval; nothing corrected where
    ``pi_test = pi_train`` (Bayes' rule with ``r = 1`` is the identity)."""
    name, keys = "prior ECE by negatives", (*CELL, "n_nonrel")
    cells = study_cells(study, rankers)
    problems = rows_problems(name, table, keys, [(*c, n) for c in cells for n in range(1, study.k + 1)],
                             what=f"{len(cells)} cells x n = 1..{study.k}")
    if table.empty:
        return problems
    for col in ("ECE raw", "ECE corrected"):
        problems += in_range(name, table, col, keys, 0, 1) + debiased_problems(name, table, col, keys)
    same = table[np.isclose(table["pi_test"], table["pi_train"])]
    problems += rows_failing(name, same, np.isclose(same["ECE corrected"], same["ECE raw"]), keys,
                             "ECE corrected = ECE raw where pi_test = pi_train (nothing to correct)",
                             ["ECE corrected", "ECE raw"])
    return problems


def _summary_problems(study, table: pd.DataFrame, rankers: Iterable[str] | None) -> list[str]:
    """One row per cell, ECEs in [0, 1]; where the raw ECE is positive (else the share is undefined),
    ``removed = 1 - corrected / raw`` with an ordered interval and a p-value in [0, 1]."""
    name = "prior summary"
    problems = rows_problems(name, table, CELL, study_cells(study, rankers), what="one per ranker x test condition")
    if table.empty:
        return problems
    for col in ("ECE raw", "ECE corrected"):
        problems += in_range(name, table, col, CELL, 0, 1)
    pos = table[table["ECE raw"] > 0]
    problems += rows_failing(name, pos, np.isclose(pos["removed"], 1 - pos["ECE corrected"] / pos["ECE raw"]), CELL,
                             "removed = 1 - ECE corrected / ECE raw", ["removed", "ECE corrected", "ECE raw"])
    problems += rows_failing(name, pos, pos["removed lo"] <= pos["removed hi"], CELL, "removed lo <= removed hi",
                             ["removed lo", "removed hi"])
    problems += in_range(name, pos, "pvalue", CELL, 0, 1)
    return problems
