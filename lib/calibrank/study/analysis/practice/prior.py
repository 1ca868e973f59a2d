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

from calibrank.methods.prior import correct_predictions, train_prior
from calibrank.metrics.calibration import ece
from calibrank.metrics.resample import compare, features
from calibrank.study.analysis import uncertainty as unc
from calibrank.study.analysis.practice.cells import CELL, debiased_ece, debiased_problems, rows_problems, study_cells
from calibrank.study.analysis.subsets import subset_negatives
from calibrank.table_checks import in_range, raise_problems, rows_failing

__all__ = ["prior_ece_by_negatives", "prior_summary"]


def prior_ece_by_negatives(
    study, rankers: Iterable[str] | None = None, *, seed: int | None = None, n_resamples: int = 1000
) -> pd.DataFrame:
    """ECE per number of non-relevant candidates n = 1..k, before and after the prior correction.

    One row per ranker x training corpus x test condition x n (main training seed): ``ECE raw`` /
    ``ECE corrected`` (eq. 1), each with its debiased ECE, 95% interval and bias
    (:func:`~calibrank.study.analysis.practice.cells.debiased_ece`), ``pi_train``, ``pi_test = 1 / (n + 1)`` and ``removed``.
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
            row = {
                "ranker": ranker,
                "train_corpus": tc,
                "corpus": cond.corpus,
                "sampler": cond.sampler,
                "shift": study.shift(cond, tc),
                "n_nonrel": n,
                "pi_train": pi_train,
                "pi_test": pi_test,
            }
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
        c = compare(
            features(fixed, "ECE"),
            features(pred, "ECE"),
            alternative="less",
            relative=True,
            level=unc.LEVEL,
            n_resamples=n_resamples,
            seed=study.cfg.seed,
        )
        rows.append(
            {
                "ranker": ranker,
                "train_corpus": tc,
                "corpus": cond.corpus,
                "sampler": cond.sampler,
                "shift": study.shift(cond, tc),
                "K": pred.labels.shape[1],
                "pi_train": pi_train,
                "pi_test": 1.0 / pred.labels.shape[1],
                "ECE raw": c.b,
                "ECE corrected": c.a,
                "removed": -c.value,
                "removed lo": -c.high,
                "removed hi": -c.low,
                "pvalue": c.pvalue,
                "queries": c.n_queries,
                "note": c.note,
            }
        )
    table = pd.DataFrame(rows)
    raise_problems(_summary_problems(study, table, rankers))
    return table


def _by_negatives_problems(study, table: pd.DataFrame, rankers: Iterable[str] | None) -> list[str]:
    """One row per cell and n = 1..k; ECEs in [0, 1], each debiased ECE inside its interval; nothing corrected where
    ``pi_test = pi_train`` (Bayes' rule with ``r = 1`` is the identity)."""
    name, keys = "prior ECE by negatives", (*CELL, "n_nonrel")
    cells = study_cells(study, rankers)
    problems = rows_problems(
        name,
        table,
        keys,
        [(*c, n) for c in cells for n in range(1, study.k + 1)],
        what=f"{len(cells)} cells x n = 1..{study.k}",
    )
    if table.empty:
        return problems
    for col in ("ECE raw", "ECE corrected"):
        problems += in_range(name, table, col, keys, 0, 1) + debiased_problems(name, table, col, keys)
    same = table[np.isclose(table["pi_test"], table["pi_train"])]
    problems += rows_failing(
        name,
        same,
        np.isclose(same["ECE corrected"], same["ECE raw"]),
        keys,
        "ECE corrected = ECE raw where pi_test = pi_train (nothing to correct)",
        ["ECE corrected", "ECE raw"],
    )
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
    problems += rows_failing(
        name,
        pos,
        np.isclose(pos["removed"], 1 - pos["ECE corrected"] / pos["ECE raw"]),
        CELL,
        "removed = 1 - ECE corrected / ECE raw",
        ["removed", "ECE corrected", "ECE raw"],
    )
    problems += rows_failing(
        name,
        pos,
        pos["removed lo"] <= pos["removed hi"],
        CELL,
        "removed lo <= removed hi",
        ["removed lo", "removed hi"],
    )
    problems += in_range(name, pos, "pvalue", CELL, 0, 1)
    return problems
