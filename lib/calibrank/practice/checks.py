"""Checks of the beyond-the-papers tables (notebook 08): each returns its problems, empty when all is well.

One function per table of :mod:`calibrank.practice` (and the findings), taking the
:class:`~calibrank.analysis.load.Study` the table was computed from where it needs to know what
to expect. A problem is one sentence naming the table, the row (ranker, training corpus,
corpus, sampler and what else tells rows apart) and what was expected against what was found;
the notebook asserts that the list is empty (as :func:`calibrank.querysets.query_set_problems`).
A NaN fails every comparison, as it does in pandas. Written with the building blocks of
:mod:`calibrank.table_checks`; nothing here imports torch.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..table_checks import TOLERANCE, describe, in_range, missing_columns, rows_expected, rows_failing
from . import conformal, findings, fitdata, listwise, nota_sets, recalibrate, selective

__all__ = [
    "CELL",
    "INSIDE_SHARE",
    "INTERVAL_SLACK",
    "MIN_FINDING_CHARS",
    "conformal_problems",
    "findings_problems",
    "listwise_problems",
    "nota_conformal_problems",
    "nota_threshold_problems",
    "performance_prediction_problems",
    "prior_by_negatives_problems",
    "prior_summary_problems",
    "recalibration_best_problems",
    "recalibration_problems",
    "selective_interval_problems",
    "selective_problems",
    "shift_detection_problems",
    "shift_interval_problems",
]

CELL = ("ranker", "train_corpus", "corpus", "sampler")
"""The columns that name a ranker x test condition cell in every table of notebook 08."""
INTERVAL_SLACK = 1e-9
"""Rounding slack of a point estimate against its own bootstrap interval."""
INSIDE_SHARE = 0.9
"""A percentile bootstrap interval need not hold its point estimate (a skewed statistic), but more
than this share of the rows must."""
MIN_FINDING_CHARS = 20
"""A finding is a sentence: longer than this."""
TOO_FEW = "too few"
"""What the note of a conformal row without coverage says (:func:`calibrank.practice.conformal.conformal_quantile`)."""
VARIANCE_CONFIDENCE = "-top var"
"""The confidence of :data:`calibrank.practice.selective.CONFIDENCES` defined for rankers with S > 1 only."""
TOP_PROB = "top prob"
"""The confidence of :data:`calibrank.practice.selective.CONFIDENCES` that is the top candidate's probability."""
FOREST_INPUT = "E[R]"
"""Notebook 06's input whose random-forest F1 the NOTA conformal table repeats (``F1 forest``)."""


def _cells(study) -> list[tuple]:
    """Every ranker x test condition with Predictions, as values of :data:`CELL`."""
    return [(r, tc, c.corpus, c.sampler) for r, tc, c in study.cells("test")]


def _min_calibration(alpha: float) -> float:
    """:func:`calibrank.practice.conformal.min_calibration_queries`, NaN (failing every comparison) for a bad alpha."""
    try:
        return conformal.min_calibration_queries(alpha)
    except ValueError:
        return float("nan")


def _rankers_with(name: str, table: pd.DataFrame, mask: pd.Series, what: str, stochastic: set[str]) -> list[str]:
    got = set(table.loc[mask, "ranker"])
    if got == stochastic:
        return []
    return [f"{name}: expected {what} exactly for the rankers with S > 1 {sorted(stochastic)}, found them for {sorted(got)}"]


def _inside_share(name: str, table: pd.DataFrame, column: str, keys) -> list[str]:
    inside = ((table[f"{column} lo"] <= table[column] + INTERVAL_SLACK)
              & (table[column] <= table[f"{column} hi"] + INTERVAL_SLACK))
    share = inside.mean()
    if share > INSIDE_SHARE:
        return []
    outside = [describe(table.iloc[i], keys) for i in np.flatnonzero(~inside.to_numpy())[:5]]
    return [f"{name}: expected {column} inside its 95% interval in more than {INSIDE_SHARE:.0%} of the rows, "
            f"found {share:.0%} of {len(table)} (outside e.g. {'; '.join(outside)})"]


# ------------------------------------------------------------------------------ 1 prior shift
def prior_by_negatives_problems(study, by_n: pd.DataFrame) -> list[str]:
    """:func:`calibrank.practice.prior.prior_ece_by_negatives`: one row per cell and n = 1..k, ECEs in
    [0, 1], nothing corrected where the test prior is the training prior, ``pi_test = 1 / (n + 1)``,
    ``ECE raw lo <= ECE raw hi``."""
    name = "prior ECE by negatives"
    keys = (*CELL, "n_nonrel")
    problems = missing_columns(name, by_n, [*keys, "pi_train", "pi_test", "ECE raw", "ECE corrected", "ECE raw lo",
                                            "ECE raw hi"])
    if problems:
        return problems
    cells = _cells(study)
    problems += rows_expected(name, by_n, keys, [(*c, n) for c in cells for n in range(1, study.k + 1)],
                              what=f"{len(cells)} cells x n = 1..{study.k}")
    for col in ("ECE raw", "ECE corrected"):
        problems += in_range(name, by_n, col, keys, 0, 1)
    same = by_n[np.isclose(by_n["pi_test"], by_n["pi_train"])]
    problems += rows_failing(name, same, np.isclose(same["ECE corrected"], same["ECE raw"]), keys,
                             "ECE corrected = ECE raw where pi_test = pi_train (nothing to correct)",
                             ["ECE corrected", "ECE raw"])
    problems += rows_failing(name, by_n, np.isclose(by_n["pi_test"], 1 / (by_n["n_nonrel"] + 1)), keys,
                             "pi_test = 1 / (n_nonrel + 1)", ["pi_test"])
    problems += rows_failing(name, by_n, by_n["ECE raw lo"] <= by_n["ECE raw hi"], keys, "ECE raw lo <= ECE raw hi",
                             ["ECE raw lo", "ECE raw hi"])
    return problems


def prior_summary_problems(study, prior_sum: pd.DataFrame, by_n: pd.DataFrame) -> list[str]:
    """:func:`calibrank.practice.prior.prior_summary`: one row per cell, ``removed = 1 - corrected / raw``,
    p-value in [0, 1], ``removed lo <= removed hi``, and the ECEs of :func:`prior_ece_by_negatives` at n = k."""
    name = "prior summary"
    problems = missing_columns(name, prior_sum, [*CELL, "ECE raw", "ECE corrected", "removed", "removed lo",
                                                 "removed hi", "pvalue"])
    problems += missing_columns("prior ECE by negatives", by_n, [*CELL, "n_nonrel", "ECE raw", "ECE corrected"])
    if problems:
        return problems
    cells = _cells(study)
    problems += rows_expected(name, prior_sum, CELL, cells, what="one per ranker x test condition")
    problems += rows_failing(name, prior_sum,
                             np.isclose(prior_sum["removed"], 1 - prior_sum["ECE corrected"] / prior_sum["ECE raw"]),
                             CELL, "removed = 1 - ECE corrected / ECE raw", ["removed", "ECE corrected", "ECE raw"])
    problems += in_range(name, prior_sum, "pvalue", CELL, 0, 1)
    problems += rows_failing(name, prior_sum, prior_sum["removed lo"] <= prior_sum["removed hi"], CELL,
                             "removed lo <= removed hi", ["removed lo", "removed hi"])
    full = by_n[by_n["n_nonrel"] == study.k].merge(prior_sum, on=list(CELL), suffixes=("", " full"))
    for col in ("ECE raw", "ECE corrected"):
        problems += rows_failing(name, full, np.isclose(full[col], full[f"{col} full"]), CELL,
                                 f"{col} on all candidates = prior ECE by negatives' at n = {study.k}",
                                 [f"{col} full", col])
    return problems


# ------------------------------------------------------------------------------ 2 recalibration
def recalibration_problems(study, recal: pd.DataFrame, prior_sum: pd.DataFrame) -> list[str]:
    """:func:`calibrank.practice.recalibrate.recalibration_table`: one row per cell and method, ECE in
    [0, 1], fitted on one of the two rules of :mod:`~calibrank.practice.fitdata`; where fitted on
    validation, every test query evaluated and ``none`` / ``prior`` equal to the prior summary's ECEs."""
    name = "recalibration"
    keys = (*CELL, "method")
    problems = missing_columns(name, recal, [*keys, "ECE", "fitted_on", "queries"])
    problems += missing_columns("prior summary", prior_sum, [*CELL, "queries", "ECE raw", "ECE corrected"])
    if problems:
        return problems
    cells = _cells(study)
    problems += rows_expected(name, recal, keys, [(*c, m) for c in cells for m in recalibrate.METHODS],
                              what=f"{len(cells)} cells x {len(recalibrate.METHODS)} methods")
    problems += in_range(name, recal, "ECE", keys, 0, 1)
    rules = (fitdata.VALIDATION, fitdata.TEST_HALF)
    problems += rows_failing(name, recal, recal["fitted_on"].isin(rules), keys, f"fitted_on one of {list(rules)}",
                             ["fitted_on"])
    valid = recal[recal["fitted_on"] == fitdata.VALIDATION].merge(prior_sum, on=list(CELL), suffixes=("", " all"))
    problems += rows_failing(name, valid, valid["queries"] == valid["queries all"], keys,
                             "every test query evaluated when fitted on validation (queries = the prior summary's)",
                             ["queries", "queries all"])
    for method, col in (("none", "ECE raw"), ("prior", "ECE corrected")):
        rows = valid[valid["method"] == method]
        problems += rows_failing(name, rows, np.isclose(rows["ECE"], rows[col]), keys,
                                 f"ECE = the prior summary's {col}", ["ECE", col])
    return problems


def recalibration_best_problems(best: pd.DataFrame) -> list[str]:
    """:func:`calibrank.practice.recalibrate.recalibration_best`: per setting the cells won add up to the
    cells and some method ranks 1; every method of :data:`~calibrank.practice.recalibrate.METHODS` appears."""
    name = "best recalibrator"
    problems = missing_columns(name, best, ["setting", "method", "cells won", "cells", "rank"])
    if problems:
        return problems
    won = best.groupby("setting")[["cells won", "cells"]].agg({"cells won": "sum", "cells": "first"})
    for setting, r in won.iterrows():
        if not r["cells won"] == r["cells"]:
            problems.append(f"{name}: {setting}: expected the cells won to add up to the {r['cells']} cells, "
                            f"found {r['cells won']}")
    got = set(best["method"])
    if got != set(recalibrate.METHODS):
        problems.append(f"{name}: expected the methods {list(recalibrate.METHODS)}, found {sorted(map(str, got))}")
    for setting, top in best.groupby("setting")["rank"].min().items():
        if not top == 1:
            problems.append(f"{name}: {setting}: expected a method of rank 1, found the best rank {top}")
    return problems


# ------------------------------------------------------------------------------ 3 answer or abstain
def selective_problems(study, sel: pd.DataFrame) -> list[str]:
    """:func:`calibrank.practice.selective.selective_table`: one row per cell and confidence (``-top var``
    exactly for S > 1), ``E-AURC >= 0``, ``AUGRC <= AURC``, AURC and the risk at the coverage in [0, 1],
    one full-coverage risk per cell (the loss does not depend on the confidence)."""
    name = "selective"
    keys = (*CELL, "confidence")
    risk_at = selective.risk_column()
    problems = missing_columns(name, sel, [*keys, "AURC", "E-AURC", "AUGRC", risk_at, "risk"])
    if problems:
        return problems
    stochastic = set(study.stochastic_rankers())
    problems += _rankers_with(name, sel, sel["confidence"] == VARIANCE_CONFIDENCE,
                              f"{VARIANCE_CONFIDENCE!r} rows", stochastic)
    problems += rows_expected(name, sel, keys, [(*c, conf) for c in _cells(study) for conf in selective.CONFIDENCES
                                                if conf != VARIANCE_CONFIDENCE or c[0] in stochastic])
    problems += rows_failing(name, sel, sel["E-AURC"] >= -TOLERANCE, keys, f"E-AURC >= 0 (within {TOLERANCE:g})",
                             ["E-AURC"])
    problems += rows_failing(name, sel, sel["AUGRC"] <= sel["AURC"] + TOLERANCE, keys,
                             f"AUGRC <= AURC (within {TOLERANCE:g})", ["AUGRC", "AURC"])
    for col in ("AURC", risk_at):
        problems += in_range(name, sel, col, keys, 0, 1)
    for cell, n in sel.groupby(list(CELL))["risk"].nunique().items():
        if n != 1:
            problems.append(f"{name}: {describe(dict(zip(CELL, cell)), CELL)}: expected one risk for every confidence "
                            f"(the loss does not depend on it), found {n} values")
    return problems


def selective_interval_problems(sel: pd.DataFrame) -> list[str]:
    """The bootstrap intervals of :func:`calibrank.practice.selective.selective_table`: present and ordered
    for every score, and the AURC inside its interval in more than :data:`INSIDE_SHARE` of the rows."""
    name = "selective intervals"
    keys = (*CELL, "confidence")
    scores = ("AURC", "E-AURC", "AUGRC", selective.risk_column())
    problems = missing_columns(name, sel, [*keys, *(f"{s}{b}" for s in scores for b in ("", " lo", " hi"))])
    if problems:
        return problems
    for s in scores:
        lo, hi = sel[f"{s} lo"], sel[f"{s} hi"]
        problems += rows_failing(name, sel, lo.notna() & hi.notna() & (lo <= hi + TOLERANCE), keys,
                                 f"{s} lo and {s} hi present, lo <= hi (within {TOLERANCE:g})", [f"{s} lo", f"{s} hi"])
    problems += _inside_share(name, sel, "AURC", keys)
    return problems


# ------------------------------------------------------------------------------ 4 conformal
def conformal_problems(study, conf: pd.DataFrame) -> list[str]:
    """:func:`calibrank.practice.conformal.conformal_table`: one row per cell, score and alpha; a row
    without coverage says it had too few calibration queries; the others have coverage inside its
    interval, a mean set size in [0, K], enough calibration queries for alpha
    (:func:`~calibrank.practice.conformal.min_calibration_queries`), and the smallest alpha gives
    coverage and sets at least as large as the largest."""
    name = "conformal"
    keys = (*CELL, "score", "alpha")
    problems = missing_columns(name, conf, [*keys, "note", "coverage", "coverage lo", "coverage hi", "mean set size",
                                            "n_cal"])
    if problems:
        return problems
    cells = _cells(study)
    scores, alphas = conformal.SCORES, conformal.ALPHAS
    problems += rows_expected(name, conf, keys, [(*c, s, a) for c in cells for s in scores for a in alphas],
                              what=f"{len(cells)} cells x {len(scores)} scores x {len(alphas)} alphas")
    bare = conf[conf["coverage"].isna()]
    problems += rows_failing(name, bare, bare["note"].astype(str).str.contains(TOO_FEW, regex=False), keys,
                             f"a note saying why there is no coverage ({TOO_FEW} calibration queries)", ["note"])
    ok = conf[conf["note"] == ""]
    if ok.empty:
        return problems + [f"{name}: expected rows with a coverage, found none (every row has a note)"]
    problems += rows_failing(name, ok, (ok["coverage lo"] <= ok["coverage"]) & (ok["coverage"] <= ok["coverage hi"]),
                             keys, "coverage lo <= coverage <= coverage hi", ["coverage lo", "coverage", "coverage hi"])
    problems += in_range(name, ok, "mean set size", keys, 0, study.k + 1)
    problems += rows_failing(name, ok, ok["n_cal"] >= ok["alpha"].map(_min_calibration), keys,
                             "n_cal >= min_calibration_queries(alpha) (ceil(1 / alpha - 1))", ["n_cal", "alpha"])
    by_alpha = ok.pivot_table(index=[*CELL, "score"], columns="alpha", values=["coverage", "mean set size"])
    small, large = min(alphas), max(alphas)
    for col in ("coverage", "mean set size"):
        have = by_alpha[col].columns if col in by_alpha.columns.get_level_values(0) else []
        absent = [a for a in (small, large) if a not in have]
        if absent:
            problems.append(f"{name}: expected {col} at alpha {small:g} and {large:g} to compare, found none at "
                            f"{', '.join(f'{a:g}' for a in absent)}")
            continue
        a, b = by_alpha[col][small], by_alpha[col][large]
        for where in a.index[~(a >= b).to_numpy()]:
            problems.append(f"{name}: {describe(dict(zip(a.index.names, where)), a.index.names)}: expected {col} at "
                            f"alpha {small:g} >= at alpha {large:g}, found {a[where]:.6g} vs {b[where]:.6g}")
    return problems


# ------------------------------------------------------------------------------ 5-6 signals
def shift_detection_problems(study, shift: pd.DataFrame) -> list[str]:
    """:func:`calibrank.practice.signals.shift_detection`: AUROC in [0, 1], shifted conditions only, the
    variance signals exactly for S > 1, one row per ranker x training corpus x shifted condition x signal."""
    from ..study import default_condition

    name = "shift detection"
    keys = (*CELL, "signal")
    problems = missing_columns(name, shift, [*keys, "shift", "AUROC"])
    if problems:
        return problems
    stochastic = set(study.stochastic_rankers())
    signals = listwise.SIGNALS
    plain = [s for s in signals if s not in listwise.VARIANCE_SIGNALS]
    problems += in_range(name, shift, "AUROC", keys, 0, 1)
    problems += rows_failing(name, shift, shift["shift"] != findings.IN, keys,
                             f"a shifted condition (not {findings.IN!r})", ["shift"])
    problems += _rankers_with(name, shift, shift["signal"].isin(listwise.VARIANCE_SIGNALS),
                              f"the variance signals {list(listwise.VARIANCE_SIGNALS)}", stochastic)
    home = {tc: default_condition(study, tc).name for tc in study.train_corpora}
    problems += rows_expected(name, shift, keys, [(r, tc, c.corpus, c.sampler, s) for r, tc, c in study.cells("test")
                                                  if c.name != home[tc]
                                                  for s in (signals if r in stochastic else plain)],
                              what="ranker x training corpus x shifted condition x its signals")
    return problems


def shift_interval_problems(shift: pd.DataFrame) -> list[str]:
    """The bootstrap intervals of :func:`calibrank.practice.signals.shift_detection`: the AUROC inside its
    interval in more than :data:`INSIDE_SHARE` of the rows; paired exactly on the training corpus."""
    name = "shift detection intervals"
    keys = (*CELL, "signal")
    problems = missing_columns(name, shift, [*keys, "AUROC", "AUROC lo", "AUROC hi", "paired"])
    if problems:
        return problems
    problems += _inside_share(name, shift, "AUROC", keys)
    same = shift["corpus"] == shift["train_corpus"]
    problems += rows_failing(name, shift, shift["paired"].eq(same), keys,
                             "paired (sharing the in-distribution queries) exactly when corpus = train_corpus",
                             ["paired"])
    return problems


def performance_prediction_problems(study, qpp: pd.DataFrame) -> list[str]:
    """:func:`calibrank.practice.signals.performance_prediction`: tau in [-1, 1] and p-values in [0, 1]
    (NaN where a signal is constant), the variance signals exactly for S > 1."""
    name = "performance prediction"
    keys = (*CELL, "signal")
    cols = {"tau RR": (-1, 1), "tau R@1": (-1, 1), "p RR": (0, 1), "p R@1": (0, 1)}
    problems = missing_columns(name, qpp, [*keys, *cols])
    if problems:
        return problems
    for col, (low, high) in cols.items():
        problems += in_range(name, qpp, col, keys, low, high, allow_nan=True)  # NaN where a signal is constant
    problems += _rankers_with(name, qpp, qpp["signal"].isin(listwise.VARIANCE_SIGNALS),
                              f"the variance signals {list(listwise.VARIANCE_SIGNALS)}", set(study.stochastic_rankers()))
    return problems


# ------------------------------------------------------------------------------ 7 listwise
def listwise_problems(study, lw: pd.DataFrame, sel: pd.DataFrame, prior_sum: pd.DataFrame) -> list[str]:
    """:func:`calibrank.practice.listwise.listwise_calibration`: one row per cell, ECEs in [0, 1], mean
    confidence in [1/K, 1]; the selective risk of ``top prob`` is ``1 - R@1`` and the pointwise ECE the
    prior summary's raw ECE, cell by cell."""
    name = "listwise"
    problems = missing_columns(name, lw, [*CELL, "pointwise ECE", "top-label ECE", "mean confidence", "R@1"])
    problems += missing_columns("selective", sel, [*CELL, "confidence", "risk"])
    problems += missing_columns("prior summary", prior_sum, [*CELL, "ECE raw"])
    if problems:
        return problems
    cells = _cells(study)
    problems += rows_expected(name, lw, CELL, cells, what="one per ranker x test condition")
    for col in ("pointwise ECE", "top-label ECE"):
        problems += in_range(name, lw, col, CELL, 0, 1)
    problems += in_range(name, lw, "mean confidence", CELL, 1 / (study.k + 1), 1)
    top = sel.loc[sel["confidence"] == TOP_PROB, [*CELL, "risk"]].merge(lw, on=list(CELL))
    problems += rows_failing(name, top, np.isclose(top["risk"], 1 - top["R@1"]), CELL,
                             f"the selective risk of {TOP_PROB!r} = 1 - R@1", ["risk", "R@1"])
    raw = lw.merge(prior_sum[[*CELL, "ECE raw"]], on=list(CELL))
    problems += rows_failing(name, raw, np.isclose(raw["pointwise ECE"], raw["ECE raw"]), CELL,
                             "pointwise ECE = the prior summary's ECE raw", ["pointwise ECE", "ECE raw"])
    for other, merged in (("selective (top prob)", top), ("prior summary", raw)):
        if len(merged) != len(lw):
            problems.append(f"{name}: expected a {other} row for each of its {len(lw)} rows, found {len(merged)}")
    return problems


# ------------------------------------------------------------------------------ 8 none of the above
def _nota_cells(study) -> list[tuple]:
    return [(r, tc, c.corpus, c.sampler) for r in study.rankers for tc in study.train_corpora
            for c in nota_sets.nota_conditions(study, tc)]


def nota_conformal_problems(study, nota_conf: pd.DataFrame, forest_06: pd.DataFrame | None = None) -> list[str]:
    """:func:`calibrank.practice.nota_sets.nota_conformal_table`: one row per NOTA cell, view and alpha;
    rows with a coverage have NOTA queries, F1 in [0, 1] and ``false NOTA <= 1 - coverage``; the forest
    is run for the ranker whose means notebook 06 uses, and, given notebook 06's exported Tables 4-5
    (``forest_06``), its F1 is that table's ``E[R]`` number."""
    from ..study import nota_means_ranker

    name = "NOTA conformal"
    keys = (*CELL, "view", "alpha")
    problems = missing_columns(name, nota_conf, [*keys, "note", "NOTA queries", "F1", "false NOTA", "coverage",
                                                 "F1 forest"])
    if forest_06 is not None:
        problems += missing_columns("notebook 06 Tables 4-5", forest_06,
                                    ["input", "train_corpus", "corpus", "sampler", "f1_mean"])
    if problems:
        return problems
    cells = _nota_cells(study)
    views, alphas = nota_sets.VIEWS, conformal.ALPHAS
    problems += rows_expected(name, nota_conf, keys, [(*c, v, a) for c in cells for v in views for a in alphas],
                              what=f"{len(cells)} NOTA cells x {len(views)} views x {len(alphas)} alphas")
    ok = nota_conf[nota_conf["note"] == ""]
    if ok.empty:
        problems.append(f"{name}: expected rows with a coverage, found none (every row has a note)")
    problems += rows_failing(name, ok, ok["NOTA queries"] > 0, keys, "NOTA queries > 0", ["NOTA queries"])
    problems += in_range(name, ok, "F1", keys, 0, 1)
    problems += rows_failing(name, ok, ok["false NOTA"] <= 1 - ok["coverage"] + TOLERANCE, keys,
                             "false NOTA <= 1 - coverage (an empty set misses the true response)",
                             ["false NOTA", "coverage"])
    means = nota_means_ranker(study)
    forest = nota_conf[nota_conf["F1 forest"].notna()]
    problems += rows_failing(name, forest, forest["ranker"].eq(means), keys,
                             f"F1 forest only for {means} (whose means notebook 06 uses)", ["ranker"])
    if forest_06 is not None:
        where = ["train_corpus", "corpus", "sampler"]
        e_r = forest_06[forest_06["input"] == FOREST_INPUT].set_index(where)["f1_mean"]
        once = forest.drop_duplicates(where)
        once = once.assign(**{"notebook 06 F1": e_r.reindex(pd.MultiIndex.from_frame(once[where])).to_numpy()})
        problems += rows_failing(name, once, np.isclose(once["F1 forest"], once["notebook 06 F1"]), keys,
                                 f"F1 forest = notebook 06's {FOREST_INPUT} f1_mean", ["F1 forest", "notebook 06 F1"])
    return problems


def nota_threshold_problems(study, nota_thr: pd.DataFrame) -> list[str]:
    """:func:`calibrank.practice.nota_sets.nota_threshold_table`: one row per NOTA cell and risk of
    :data:`~calibrank.practice.nota_sets.RISKS`; without a threshold the rule always abstains and has no
    achieved risk; a threshold is certified on calibration (``cal UCB <= target``); the false-NOTA
    threshold is always certified and its achieved risk is its false-NOTA rate; abstention and F1 in [0, 1]."""
    name = "NOTA threshold"
    keys = (*CELL, "risk")
    problems = missing_columns(name, nota_thr, [*keys, "threshold", "abstention", "achieved risk", "cal UCB", "target",
                                                "certified", "false NOTA", "F1"])
    if problems:
        return problems
    cells = _nota_cells(study)
    risks = list(nota_sets.RISKS)
    got = set(nota_thr["risk"])
    if got != set(risks):
        problems.append(f"{name}: expected the risks {risks}, found {sorted(map(str, got))}")
    problems += rows_expected(name, nota_thr, keys, [(*c, r) for c in cells for r in risks],
                              what=f"{len(cells)} NOTA cells x {len(risks)} risks")
    never = np.isinf(nota_thr["threshold"].to_numpy(dtype=float))
    no, yes = nota_thr[never], nota_thr[~never]
    problems += rows_failing(name, no, no["abstention"] == 1, keys, "abstention 1 without a threshold (inf)",
                             ["abstention"])
    problems += rows_failing(name, no, no["achieved risk"].isna(), keys, "no achieved risk without a threshold (inf)",
                             ["achieved risk"])
    problems += rows_failing(name, yes, yes["cal UCB"] <= yes["target"] + TOLERANCE, keys,
                             "cal UCB <= target (certified on calibration)", ["cal UCB", "target", "threshold"])
    fn = nota_thr[nota_thr["risk"] == "false NOTA"]
    problems += rows_failing(name, fn, fn["certified"].eq(True), keys, "a certified false-NOTA threshold",
                             ["certified"])
    problems += rows_failing(name, fn, np.isclose(fn["achieved risk"], fn["false NOTA"]), keys,
                             "achieved risk = false NOTA", ["achieved risk", "false NOTA"])
    for col in ("abstention", "F1"):
        problems += in_range(name, nota_thr, col, keys, 0, 1)
    return problems


# ------------------------------------------------------------------------------ findings
def findings_problems(study, found: pd.DataFrame) -> list[str]:
    """:func:`calibrank.practice.findings.findings_table` given every table: each section of
    :data:`~calibrank.practice.findings.SECTIONS`, sentences with a number, ``cells >= 1``, and at
    least one prior-shift finding per ranker and training corpus."""
    name = "findings"
    keys = ("section", "ranker")
    problems = missing_columns(name, found, [*keys, "finding", "cells"])
    if problems:
        return problems
    sections = findings.SECTIONS
    got = set(found["section"])
    if found["section"].nunique() != len(sections) or got != set(sections):
        problems.append(f"{name}: expected the {len(sections)} sections {list(sections)}, found "
                        f"{found['section'].nunique()}: missing {[s for s in sections if s not in got]}, "
                        f"unknown {sorted(map(str, got - set(sections)))}")
    text = found["finding"].astype("string")
    problems += rows_failing(name, found, text.str.len() > MIN_FINDING_CHARS, keys,
                             f"a sentence longer than {MIN_FINDING_CHARS} characters", ["finding"])
    problems += rows_failing(name, found, text.str.contains(r"\d"), keys, "a finding with a number", ["finding"])
    problems += rows_failing(name, found, found["cells"] >= 1, keys, "cells >= 1", ["cells"])
    prior = int((found["section"] == findings.PRIOR_SHIFT).sum())
    need = len(study.rankers) * len(study.train_corpora)
    if not prior >= need:
        problems.append(f"{name}: expected at least {need} {findings.PRIOR_SHIFT!r} findings (one per ranker and "
                        f"training corpus), found {prior}")
    return problems
