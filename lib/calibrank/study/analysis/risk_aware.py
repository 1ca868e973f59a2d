"""Notebook 05's numbers: Figure 3 (R@1 against risk aversion b) and Table 3 (b chosen on validation), Penha & Hauff sec. 3.2.4."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

from calibrank.methods import rerank as risk
from calibrank.metrics.ranking import recall_at_k
from calibrank.metrics.stats import relative_change
from calibrank.study.analysis import uncertainty as unc
from calibrank.study.analysis.calibration import _marked
from calibrank.study.analysis.load import BASELINE, CELL_KEYS, Study, with_keys
from calibrank.study.data.conditions import Condition
from calibrank.table_checks import in_range, raise_problems, rows_expected, rows_failing


# ------------------------------------------------------------------------------ risk (05)
def _risk():
    return risk


def risk_sweep(
    study: Study, bs: Iterable[float] | None = None, *, split: str = "test", space: str = "logit"
) -> pd.DataFrame:
    """Figure 3: R@1 of the risk-aware ranker per b, for every stochastic ranker and test condition.

    One row per ranker x training corpus x condition x b: ``value`` (R@1), ``rel_change`` over b = 0,
    ``n_queries`` and ``rel_change_bert`` over ``bert`` (the paper's Figure 3 plots gains over BERT;
    NaN without ``bert``).
    """
    risk = _risk()
    grid = risk.DEFAULT_BS if bs is None else bs
    frames = []
    for ranker, tc, cond in study.cells(split, study.stochastic_rankers()):
        df = risk.sweep_b(study.get(ranker, tc, cond), grid, "R@1", space=space).drop(columns="per_query")
        if BASELINE in study.rankers:
            bert = study.get(BASELINE, tc, cond)
            study.get(ranker, tc, cond).check_aligned(bert)  # the same queries and data, or an error naming both files
            bert_r1 = float(np.nanmean(recall_at_k(bert.probs, bert.labels, 1)))
            df["rel_change_bert"] = relative_change(df["value"].to_numpy(), bert_r1)
        else:
            df["rel_change_bert"] = np.nan
        frames.append(with_keys(df, ranker=ranker, **study.cell_keys(tc, cond)))
    out = (
        pd.concat(frames, ignore_index=True)
        if frames
        else pd.DataFrame(
            columns=[
                "ranker",
                "train_corpus",
                "corpus",
                "sampler",
                "shift",
                "b",
                "metric",
                "value",
                "rel_change",
                "n_queries",
                "rel_change_bert",
            ]
        )
    )
    _check_sweep(
        out, [(*cell, float(b)) for cell in study.expected_cells(split, study.stochastic_rankers()) for b in grid]
    )
    return out


def _check_sweep(table: pd.DataFrame, rows: list[tuple]) -> None:
    """Every stochastic ranker's cell at each b of the grid (``rows``); b and R@1 in [0, 1]; no change at b = 0."""
    name, keys = "sweep", (*CELL_KEYS, "b")
    at0 = (table["b"] == 0) & table["rel_change"].notna() & (table["rel_change"] != 0)
    raise_problems(
        rows_expected(name, table, keys, rows)
        + in_range(name, table, "b", keys, 0, 1)
        + in_range(name, table, "value", keys, 0, 1)
        + rows_failing(name, table, ~at0, keys, "rel_change 0 at b = 0 (or NaN where R@1 is 0)", ["rel_change"])
    )


B_FROM = ("training", "target")
"""Where Table 3 chooses b: the validation split of the *training* condition (default: no
labelled data of the shifted target is needed, so the choice is deployable), or of the test
condition itself (``"target"``: labelled target data, the upper bound a reader may want)."""


def _b_condition(study: Study, train_corpus: str, cond: Condition, b_from: str) -> Condition:
    if b_from not in B_FROM:
        raise ValueError(f"b_from must be one of {B_FROM}; got {b_from!r}")
    if b_from == "training":
        return study.condition(train_corpus, study.train_sampler, "valid")
    return study.condition(cond.corpus, cond.sampler, "valid")


def risk_aware_scores(
    study: Study,
    ranker: str,
    train_corpus: str,
    cond: Condition,
    bs: Iterable[float] | None = None,
    *,
    space: str = "logit",
    b_from: str = "training",
):
    """``(runs, risk-aware scores, mean-ranker scores, b per seed)`` of one stochastic ranker on one test condition.

    Each seed's b maximises R@1 on the validation split chosen by ``b_from`` (:data:`B_FROM`).
    """
    risk = _risk()
    grid = risk.DEFAULT_BS if bs is None else bs
    valid_cond = _b_condition(study, train_corpus, cond, b_from)
    runs = study.runs(ranker, train_corpus, cond)
    seeds = study.seeds(ranker, train_corpus, cond)
    b_by_seed = [risk.choose_b(study.get(ranker, train_corpus, valid_cond, s), grid, "R@1", space=space) for s in seeds]
    risk_s = [risk.risk_scores(p, b, space=space) for p, b in zip(runs, b_by_seed)]
    mean_s = [risk.risk_scores(p, 0.0, space=space) for p in runs]
    return runs, risk_s, mean_s, b_by_seed


def table3(
    study: Study,
    bs: Iterable[float] | None = None,
    *,
    space: str = "logit",
    b_from: str = "training",
    n_resamples: int = unc.N_RESAMPLES,
) -> pd.DataFrame:
    """Penha & Hauff Table 3: b chosen on validation, risk-aware R@1 vs the mean ranker on test.

    One row per stochastic ranker x training corpus x test condition; each seed's b maximises
    validation R@1 of the training (``b_from="training"``) or test condition (``"target"``).
    Columns ``b``, ``b (seeds)``, ``mean_ranker``, ``risk_aware``, ``prob_mean_ranker`` (the paper's
    S-BERT), and ``rel_change`` with its interval, tests and mark as in :func:`calibrank.study.analysis.calibration.table2`.
    """
    rows = []
    for ranker, tc, cond in study.cells("test", study.stochastic_rankers()):
        runs, risk_scores, mean_scores, b_by_seed = risk_aware_scores(
            study, ranker, tc, cond, bs, space=space, b_from=b_from
        )
        seeds = study.seeds(ranker, tc, cond)
        valid_cond = _b_condition(study, tc, cond, b_from)
        c = unc.cell_comparison(
            runs,
            runs,
            "R@1",
            seed=study.cfg.seed,
            alternative="greater",
            scores=(risk_scores, mean_scores),
            n_resamples=n_resamples,
        )
        notes = [str(c["note"])] if c["note"] else []
        if all(b == 0 for b in b_by_seed):
            notes.append("b = 0 chosen on validation: the risk-aware ranker is the mean ranker")
        prob = float(np.mean([np.nanmean(recall_at_k(p.mean, p.labels, 1)) for p in runs]))
        main_b = b_by_seed[seeds.index(study.main_seed)] if study.main_seed in seeds else b_by_seed[0]
        rows.append(
            {
                "ranker": ranker,
                "train_corpus": tc,
                "corpus": cond.corpus,
                "sampler": cond.sampler,
                "shift": study.shift(cond, tc),
                "b_from": f"{valid_cond.corpus} · {valid_cond.sampler} (valid)",
                "b": main_b,
                "b (seeds)": ", ".join(f"{b:g}" for b in b_by_seed),
                "seeds": len(runs),
                "mean_ranker": c["b"],
                "risk_aware": c["a"],
                "prob_mean_ranker": prob,
                "rel_change": c["rel_change"],
                "lo": c["lo"],
                "hi": c["hi"],
                "pvalue": c["pvalue"],
                "pvalue_worse": c["pvalue_worse"],
                "S": runs[0].n_samples,
                "space": space,
                "note": "; ".join(notes),
            }
        )
    out = _marked(rows)
    _check_table3(study, out)
    return out


def _check_table3(study: Study, table: pd.DataFrame) -> None:
    """Every stochastic ranker's test cell once, S > 1, b and the three R@1 values in [0, 1], p-values in
    [0, 1] where defined, known marks."""
    name = "table3"
    problems = rows_expected(name, table, CELL_KEYS, study.expected_cells(rankers=study.stochastic_rankers()))
    if not table.empty:
        problems += rows_failing(
            name, table, pd.to_numeric(table["S"], errors="coerce") > 1, CELL_KEYS, "S > 1 (a stochastic ranker)", ["S"]
        )
        for c in ("b", "mean_ranker", "risk_aware", "prob_mean_ranker"):
            problems += in_range(name, table, c, CELL_KEYS, 0, 1)
        problems += unc.compared_problems(name, table, CELL_KEYS)
    raise_problems(problems)


def table3_wide(t3: pd.DataFrame) -> pd.DataFrame:
    """Table 3 in the paper's layout: relative R@1 change ``+4.7% [+1.0%, +8.2%] † (b=0.3)`` per condition and ranker."""
    if t3.empty:
        return pd.DataFrame()
    t = t3.copy()
    t["test on"] = t["corpus"] + " · " + t["sampler"]
    t["cell"] = [
        unc.format_change(rc, lo, hi, m) + f" (b={b})"
        for rc, lo, hi, m, b in zip(t["rel_change"], t["lo"], t["hi"], t["mark"], t["b (seeds)"])
    ]
    wide = t.pivot(index=["train_corpus", "ranker"], columns="test on", values="cell")
    rows = pd.MultiIndex.from_frame(t[["train_corpus", "ranker"]].drop_duplicates())
    return wide.reindex(index=rows, columns=list(dict.fromkeys(t["test on"])))
