"""Notebook 06's numbers: Penha & Hauff Tables 4-5 (NOTA macro-F1 per input space) with intervals and one-sided tests."""

from __future__ import annotations

import numpy as np
import pandas as pd

from calibrank.metrics.stats import holm
from calibrank.study.analysis import nota
from calibrank.study.analysis import uncertainty as unc
from calibrank.study.analysis.load import Study, with_keys
from calibrank.table_checks import describe, in_range, not_nan, raise_problems, rows_failing

# ------------------------------------------------------------------------------ NOTA (06)
NOTA_FOLDS = 5
"""Folds of the stratified cross-validation of Tables 4-5 (the paper's 5-fold cross-validation)."""


def nota_means_ranker(study: Study) -> str:
    """Whose means make the NOTA features: MC Dropout (the paper's E[R^D]) if present, else the first stochastic ranker, else bert."""
    stochastic = study.stochastic_rankers()
    if "mc_dropout" in stochastic:
        return "mc_dropout"
    return stochastic[0] if stochastic else study.rankers[0]


def nota_table(
    study: Study,
    *,
    split: str = "test",
    folds: int = NOTA_FOLDS,
    n_estimators: int = 100,
    seed: int | None = None,
    alpha: float = 0.05,
) -> pd.DataFrame:
    """Penha & Hauff Tables 4-5: NOTA macro-F1 per input space, per condition.

    Table 4 takes every test corpus with the training sampler, Table 5 the training corpus with
    every other sampler. Input spaces: ``E[R]`` (:func:`nota_means_ranker`) and ``+var[<ranker>]``
    for each stochastic ranker. One-sided paired t-tests over ``folds`` against ``E[R]``
    (:func:`calibrank.study.analysis.nota.compare_inputs`), Holm per table; ``F1 [95% CI]`` with its mark.
    Input spaces in full: docs/decisions.md, "Penha & Hauff Tables 4-5".
    """

    seed = study.cfg.seed if seed is None else seed
    means_from = nota_means_ranker(study)
    var_sources = study.stochastic_rankers()
    rows = []
    for tc in study.train_corpora:
        for cond in study.test_conditions(split):
            if cond.sampler == study.train_sampler:
                table = "Table 4 (cross-domain)"
            elif cond.corpus == tc:
                table = "Table 5 (cross-NS)"
            else:
                continue
            base_set = nota.make_nota_set(study.get(means_from, tc, cond), seed=seed)
            results = {
                "E[R]": nota.cross_validate_nota(
                    nota.nota_features(base_set, "mean"), base_set.y, seed=seed, folds=folds, n_estimators=n_estimators
                )
            }
            for r in var_sources:
                other = base_set if r == means_from else base_set.apply(study.get(r, tc, cond))
                x = nota.nota_features(base_set, "mean+var", var_from=other)
                results[f"+var[{r}]"] = nota.cross_validate_nota(
                    x, base_set.y, seed=seed, folds=folds, n_estimators=n_estimators
                )
            cmp = nota.compare_inputs(results, "E[R]", alpha=alpha)
            rows.append(with_keys(cmp, table=table, **study.cell_keys(tc, cond), means_from=means_from))
    if not rows:
        raise_problems([f"nota: no rows, expected at least one condition of split {split!r}"])
    out = pd.concat(rows, ignore_index=True)
    out = out.sort_values("table", kind="stable", ignore_index=True)
    # Holm across the compared cells of each table (Table 4, Table 5), not per condition
    for _, idx in out[out["input"] != "E[R]"].groupby("table", sort=False).groups.items():
        for col in ("pvalue", "pvalue_worse"):
            out.loc[idx, f"{col}_holm"] = holm(out.loc[idx, col].to_numpy(dtype=float))
    better = out["pvalue_holm"].fillna(1.0) < alpha
    worse = out["pvalue_worse_holm"].fillna(1.0) < alpha
    out["significant"] = better
    out["mark"] = np.where(better, unc.IMPROVED, np.where(worse, unc.WORSE, ""))
    out["F1 [95% CI]"] = [
        unc.format_interval(m, lo, hi) + (f" {mk}" if mk else "")
        for m, lo, hi, mk in zip(out["f1_mean"], out["f1_lo"], out["f1_hi"], out["mark"])
    ]
    _check_nota(out, 1 + len(var_sources), folds)
    return out


def _check_nota(table: pd.DataFrame, n_inputs: int, folds: int) -> None:
    """``n_inputs`` inputs (E[R] and one +var per stochastic ranker) on every condition, macro-F1 in [0, 1]
    with an sd over ``folds`` folds, p-values in [0, 1] for the compared inputs and none for E[R], ``†``
    only on a gain."""
    name, cond = "nota", ("table", "train_corpus", "corpus", "sampler")
    keys = (*cond, "input")
    problems = [
        f"{name}: {describe(dict(zip(cond, key)), cond)}: expected {n_inputs} inputs (E[R] and +var per "
        f"stochastic ranker), found {len(inputs)}: {', '.join(inputs)}"
        for key, inputs in table.groupby(list(cond), sort=False)["input"]
        if len(inputs) != n_inputs
    ]
    problems += in_range(name, table, "f1_mean", keys, 0, 1) + not_nan(name, table, ["f1_sd"], keys)
    problems += rows_failing(name, table, table["folds"] == folds, keys, f"folds {folds}", ["folds"])
    problems += in_range(name, table, "pvalue", keys, 0, 1, allow_nan=True)
    problems += rows_failing(
        name,
        table,
        ~((table["input"] == "E[R]") & table["pvalue"].notna()),
        keys,
        "no pvalue on the base input E[R] (nothing to compare)",
        ["pvalue"],
    )
    problems += rows_failing(
        name,
        table,
        ~((table["mark"] == unc.IMPROVED) & (table["rel_change"] <= 0)),
        keys,
        f"the mark {unc.IMPROVED} on a gain only (rel_change > 0)",
        ["mark", "rel_change"],
    )
    raise_problems(problems)


def nota_wide(nt: pd.DataFrame) -> pd.DataFrame:
    """Tables 4-5 in the paper's layout: ``F1 [lo, hi] mark`` per condition (rows) and input space (columns)."""
    t = nt.copy()
    t["test on"] = t["corpus"] + " · " + t["sampler"]
    wide = t.pivot(index=["table", "train_corpus", "test on"], columns="input", values="F1 [95% CI]")
    return wide.reindex(columns=list(dict.fromkeys(t["input"])))
