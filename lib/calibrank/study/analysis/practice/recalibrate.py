"""Post-hoc recalibration of pointwise probabilities of relevance: fitted once, applied to every test condition.

Maps fitted on the queries of :func:`calibrank.study.analysis.practice.fitdata.fit_data`: Platt scaling
(Platt 1999), isotonic regression (Zadrozny & Elkan 2002), beta calibration (Kull et al. 2017,
eq. 5, with ``a, b >= 0`` as in ``betacal``), temperature scaling (Guo et al. 2017), the prior
correction of :mod:`calibrank.study.analysis.practice.prior`, or none. Fitting details:
docs/decisions.md, "Recalibration maps".
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

from calibrank.methods.prior import train_prior
from calibrank.methods.recalibrate import METHODS, fit_recalibrator, recalibrate
from calibrank.metrics.calibration import ece
from calibrank.study.analysis.practice.cells import CELL, debiased_ece, debiased_problems, rows_problems, study_cells
from calibrank.study.analysis.practice.fitdata import drop_queries, fit_data
from calibrank.table_checks import in_range, raise_problems

__all__ = ["recalibration_best", "recalibration_table"]


def _test_conditions(study, ranker: str, train_corpus: str):
    return [c for c in study.test_conditions("test") if (ranker, train_corpus, c.name) in study.paths]


def recalibration_table(
    study, rankers: Iterable[str] | None = None, methods: Sequence[str] = METHODS, *, n_resamples: int = 1000
) -> pd.DataFrame:
    """ECE after each recalibrator, per ranker x test condition, with the debiased ECE and its 95% interval.

    Fitted once per ranker and training corpus on :func:`~calibrank.study.analysis.practice.fitdata.fit_data`
    (``fitted_on`` says which rule) and applied to every test condition (main training seed);
    ``queries``: the queries evaluated. Columns ``ECE`` (eq. 1), ``ECE debiased`` with ``lo`` / ``hi``, ``ECE bias``
    (:func:`~calibrank.study.analysis.practice.cells.debiased_ece`), ``params``. Raises
    :class:`~calibrank.table_checks.TableError` when a row is missing, an ECE is not in [0, 1] or a debiased
    ECE not inside its interval.
    """
    pi_train = train_prior(study.cfg.negatives.train_k)
    rows = []
    for ranker in rankers if rankers is not None else study.rankers:
        for tc in study.train_corpora:
            fd = fit_data(study, ranker, tc)
            fitted = {
                m: fit_recalibrator(m, fd.pred.probs, fd.pred.labels, pi_train=pi_train, k=study.k + 1) for m in methods
            }
            for cond in _test_conditions(study, ranker, tc):
                base = drop_queries(study.get(ranker, tc, cond), fd.exclude)
                for m, recal in fitted.items():
                    p = recalibrate(base, recal)
                    rows.append(
                        {
                            "ranker": ranker,
                            "train_corpus": tc,
                            "corpus": cond.corpus,
                            "sampler": cond.sampler,
                            "shift": study.shift(cond, tc),
                            "method": m,
                            "fitted_on": fd.fitted_on,
                            "fit_queries": int(fd.pred.labels.shape[0]),
                            "queries": int(p.labels.shape[0]),
                            "ECE": ece(p.probs, p.labels),
                            **debiased_ece(p, "ECE", n_resamples=n_resamples, seed=study.cfg.seed),
                            "params": ", ".join(f"{k}={v:.3g}" for k, v in recal.params.items()),
                        }
                    )
    table = pd.DataFrame(rows)
    name, keys = "recalibration", (*CELL, "method")
    cells = study_cells(study, rankers)
    problems = rows_problems(
        name,
        table,
        keys,
        [(*c, m) for c in cells for m in methods],
        what=f"{len(cells)} cells x {len(methods)} methods",
    )
    raise_problems(
        problems
        if table.empty
        else problems + in_range(name, table, "ECE", keys, 0, 1) + debiased_problems(name, table, "ECE", keys)
    )
    return table


def recalibration_best(table: pd.DataFrame) -> pd.DataFrame:
    """Which recalibrator is best: per method, mean ECE and the number of cells (ranker x condition) it wins,
    in distribution and under shift (every other condition). Raises :class:`~calibrank.table_checks.TableError`
    when the cells won in a setting do not add up to its cells (a cell of ``table`` twice, or not for every method)."""
    t = table.assign(setting=np.where(table["shift"] == "in distribution", "in distribution", "under shift"))
    keys = ["ranker", "train_corpus", "corpus", "sampler"]
    winner = t.loc[t.groupby(keys)["ECE"].idxmin(), keys + ["method"]].rename(columns={"method": "best"})
    t = t.merge(winner, on=keys)
    rows = []
    for (setting, m), grp in t.groupby(["setting", "method"], sort=False):
        cells = grp[keys].drop_duplicates()
        rows.append(
            {
                "setting": setting,
                "method": m,
                "mean ECE": float(grp["ECE"].mean()),
                "cells won": int((grp["best"] == m).sum()),
                "cells": len(cells),
            }
        )
    out = pd.DataFrame(rows).sort_values(["setting", "mean ECE"]).reset_index(drop=True)
    out["rank"] = out.groupby("setting")["mean ECE"].rank(method="min").astype(int)
    won = out.groupby("setting", sort=False).agg(won=("cells won", "sum"), cells=("cells", "first"))
    raise_problems(
        [
            f"best recalibrator: setting={setting}: expected the cells won to add up to the {r['cells']} "
            f"cells (one winner per cell), found {r['won']}"
            for setting, r in won.iterrows()
            if r["won"] != r["cells"]
        ]
    )
    return out
