"""Conformal shortlists: a set of a query's candidates that holds the true response with probability >= 1 - alpha.

Split conformal prediction (Vovk, Gammerman & Shafer 2005; Angelopoulos & Bates 2023, section 1)
on the candidate distribution of :func:`calibrank.study.analysis.practice.listwise.candidate_distribution`,
with the LAC (Sadinle et al. 2019) or APS (Romano et al. 2020, eq. 5, not randomised) score.
Coverage holds under exchangeability only; :func:`conformal_table` reports it per condition with
a Clopper-Pearson interval. Details: docs/decisions.md, "Conformal shortlists".
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from calibrank.methods.conformal import (
    SCORES,
    conformal_quantile,
    min_calibration_queries,
    prediction_sets,
    true_scores,
)
from calibrank.methods.listwise import candidate_distribution
from calibrank.predictions import Predictions
from calibrank.study.analysis.practice.cells import CELL, rows_problems, study_cells
from calibrank.study.analysis.practice.fitdata import drop_queries, fit_data
from calibrank.study.data.conditions import Condition
from calibrank.table_checks import describe, in_range, raise_problems, rows_failing

__all__ = ["ALPHAS", "conformal_table"]

ALPHAS = (0.1, 0.2)


def _coverage_row(sets: np.ndarray, labels: np.ndarray, alpha: float) -> dict:
    covered = sets[labels.astype(bool)]
    k, n = int(covered.sum()), int(covered.size)
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
    return {
        "K": int(sets.shape[1]),
        "coverage": k / n,
        "coverage lo": float(ci.low),
        "coverage hi": float(ci.high),
        "mean set size": float(sets.sum(axis=1).mean()),
        "empty sets": int((sets.sum(axis=1) == 0).sum()),
        "below target": bool(ci.high < 1.0 - alpha),
    }


def conformal_table(
    study, rankers: Iterable[str] | None = None, alphas: Sequence[float] = ALPHAS, scores: Sequence[str] = SCORES
) -> pd.DataFrame:
    """Empirical coverage and mean set size per ranker x score x alpha x test condition (main training seed).

    Calibrated once per ranker and training corpus on :func:`~calibrank.study.analysis.practice.fitdata.fit_data`
    (``fitted_on``, ``n_cal``). ``coverage lo`` / ``hi``: Clopper-Pearson; ``below target``: the whole
    interval below ``1 - alpha``; too few calibration queries leave NaN and a ``note``. Raises
    :class:`~calibrank.table_checks.TableError` naming a row that breaks :func:`_table_problems`.
    """
    rows = []
    for ranker in rankers if rankers is not None else study.rankers:
        for tc in study.train_corpora:
            fd = fit_data(study, ranker, tc)
            pi_cal = candidate_distribution(fd.pred.probs)
            conds = [c for c in study.test_conditions("test") if (ranker, tc, c.name) in study.paths]
            tests: list[tuple[Condition, Predictions]] = [
                (c, drop_queries(study.get(ranker, tc, c), fd.exclude)) for c in conds
            ]
            for score in scores:
                cal = true_scores(pi_cal, fd.pred.labels, score)
                for alpha in alphas:
                    try:
                        qhat, note = conformal_quantile(cal, alpha), ""
                    except ValueError as exc:  # too few calibration queries: say so in the row, no set
                        qhat, note = np.nan, str(exc)
                    for cond, pred in tests:
                        row = {
                            "ranker": ranker,
                            "train_corpus": tc,
                            "corpus": cond.corpus,
                            "sampler": cond.sampler,
                            "shift": study.shift(cond, tc),
                            "score": score,
                            "alpha": alpha,
                            "target": 1.0 - alpha,
                            "fitted_on": fd.fitted_on,
                            "n_cal": int(cal.size),
                            "qhat": qhat,
                            "queries": int(pred.labels.shape[0]),
                        }
                        if note:
                            row.update(
                                {
                                    "K": int(pred.labels.shape[1]),
                                    "coverage": np.nan,
                                    "coverage lo": np.nan,
                                    "coverage hi": np.nan,
                                    "mean set size": np.nan,
                                    "empty sets": 0,
                                    "below target": False,
                                }
                            )
                        else:
                            sets = prediction_sets(candidate_distribution(pred.probs), qhat, score)
                            row.update(_coverage_row(sets, pred.labels, alpha))
                        rows.append({**row, "note": note})
    table = pd.DataFrame(rows)
    raise_problems(_table_problems(study, table, rankers, alphas, scores))
    return table


def _table_problems(
    study, table: pd.DataFrame, rankers: Iterable[str] | None, alphas: Sequence[float], scores: Sequence[str]
) -> list[str]:
    """One row per cell, score and alpha; a row without coverage says it had too few calibration queries;
    a row with one has enough for its alpha, the coverage inside its interval and a mean set size in
    [0, K]; a smaller alpha gives coverage and sets at least as large (its quantile is at least as large)."""
    name, keys = "conformal", (*CELL, "score", "alpha")
    cells = study_cells(study, rankers)
    problems = rows_problems(
        name,
        table,
        keys,
        [(*c, s, a) for c in cells for s in scores for a in alphas],
        what=f"{len(cells)} cells x {len(scores)} scores x {len(alphas)} alphas",
    )
    if table.empty:
        return problems
    bare = table[table["coverage"].isna()]
    problems += rows_failing(
        name,
        bare,
        bare["note"].str.contains("too few", regex=False),
        keys,
        "a note saying why there is no coverage (too few calibration queries)",
        ["note"],
    )
    ok = table[table["note"] == ""]
    problems += rows_failing(
        name,
        ok,
        (ok["coverage lo"] <= ok["coverage"]) & (ok["coverage"] <= ok["coverage hi"]),
        keys,
        "coverage lo <= coverage <= coverage hi",
        ["coverage lo", "coverage", "coverage hi"],
    )
    problems += in_range(name, ok, "mean set size", keys, 0, study.k + 1)
    problems += rows_failing(
        name,
        ok,
        ok["n_cal"] >= ok["alpha"].map(min_calibration_queries),
        keys,
        "n_cal >= min_calibration_queries(alpha) (ceil(1 / alpha - 1))",
        ["n_cal", "alpha"],
    )
    small, large = min(alphas), max(alphas)
    pair = ok[ok["alpha"] == small].merge(ok[ok["alpha"] == large], on=[*CELL, "score"], suffixes=("", " large"))
    for col in ("coverage", "mean set size"):
        for _, r in pair[pair[col] < pair[f"{col} large"]].iterrows():
            problems.append(
                f"{name}: {describe(r, (*CELL, 'score'))}: expected {col} at alpha {small:g} >= at alpha "
                f"{large:g}, found {r[col]:.6g} vs {r[f'{col} large']:.6g}"
            )
    return problems
