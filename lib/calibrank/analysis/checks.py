"""Checks of the analysis tables notebooks 04-06 show: each returns the table's problems, empty when all is well.

Every function takes a table (and the :class:`~.load.Study` it was computed from) and returns
a ``list[str]``, one line per problem naming the table, the row (ranker, training corpus, test
corpus, sampler, ...) or column and what was expected against what was found, in the manner
of :func:`calibrank.querysets.query_set_problems`. A notebook cell asserts ``not problems``
and shows the first few.

- notebook 04: :func:`overview_problems`, :func:`metrics_problems`, :func:`table1_problems`,
  :func:`table2_problems`, :func:`figure2_problems`, :func:`reliability_problems`,
  :func:`paper2023_problems`, :func:`claims_problems`, :func:`export_problems`;
- notebook 05: :func:`sweep_problems`, :func:`table3_problems`;
- notebook 06: :func:`nota_problems`.

The expected sizes come from the constants that define them: the reliability buckets
(:data:`.calibration.RELIABILITY_BINS`), the b grid of the risk-aware sweep
(:data:`calibrank.risk.DEFAULT_BS`), the no-learning rules (:class:`calibrank.baselines.BaselineName`)
and the NOTA folds (:data:`.nota_tables.NOTA_FOLDS`). Written with the building blocks of
:mod:`calibrank.table_checks`; torch-free, like the rest of the layer.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import pandas as pd

from .. import registry
from ..table_checks import TOLERANCE, describe, fmt, in_range, missing_columns, not_nan, rows_expected, rows_failing
from . import uncertainty as unc
from .calibration import RELIABILITY_BINS
from .exports import load_exported_tables
from .load import BASELINE, GP_RANKERS, Study
from .nota_tables import NOTA_FOLDS

__all__ = [
    "CELL_KEYS",
    "MARKS",
    "MEAN_METRICS",
    "PAPERS_2023_PATTERN",
    "REPORT_TABLES",
    "claims_problems",
    "export_problems",
    "figure2_problems",
    "metrics_problems",
    "nota_problems",
    "overview_problems",
    "paper2023_problems",
    "reliability_problems",
    "sweep_problems",
    "table1_problems",
    "table2_problems",
    "table3_problems",
]

CELL_KEYS = ("ranker", "train_corpus", "corpus", "sampler")
"""The columns that name one cell: ranker x training corpus x test condition."""

MEAN_METRICS = ("R@1", "MAP", "MRR")
"""Metrics that are means of per-query values: their bootstrap interval contains the value (a
percentile interval of a biased statistic such as ECE need not)."""

MARKS = (unc.IMPROVED, unc.WORSE, "")
"""The marks a compared cell may carry (:func:`.uncertainty.mark_table`)."""

PAPERS_2023_PATTERN = "PG-DRR|GPF-BERT"
"""The 2023 papers: the only ones whose claims concern the Gaussian-process rankers."""

REPORT_TABLES = ("table1_bert", "table2_ece_change")
"""Notebook 04's tables that :func:`.papers.paper_comparison` reads back from the CSV files."""


# ------------------------------------------------------------------------------ helpers
def _marks(table: str, df: pd.DataFrame, keys: Sequence[str]) -> list[str]:
    return rows_failing(table, df, df["mark"].isin(MARKS), keys, f"one of the marks {', '.join(map(repr, MARKS))}",
                        ["mark"])


def _cells(study: Study, rankers: Iterable[str]) -> list[tuple[str, str, str, str]]:
    """``(ranker, train corpus, test corpus, sampler)`` of every test cell of these rankers."""
    return [(r, tc, c.corpus, c.sampler) for r in rankers for tc in study.train_corpora for c in study.test_conditions()]


def _conditions(study: Study) -> list[tuple[str, str, str]]:
    """``(train corpus, test corpus, sampler)`` of every test condition of every training corpus."""
    return [(tc, c.corpus, c.sampler) for tc in study.train_corpora for c in study.test_conditions()]


def _baseline_rankers() -> list[str]:
    from ..baselines import BaselineName

    return [f"baseline:{name.value}" for name in BaselineName]


# ------------------------------------------------------------------------------ notebook 04
def overview_problems(study: Study, overview: pd.DataFrame) -> list[str]:
    """:func:`.load.overview`: one row per ranker of the profile, S >= 1, S > 1 for the stochastic family."""
    table = "rankers"
    problems = missing_columns(table, overview, ("ranker", "S"))
    if problems:
        return problems
    problems += rows_expected(table, overview, ("ranker",), [(r,) for r in study.rankers])
    samples = pd.to_numeric(overview["S"], errors="coerce")
    problems += rows_failing(table, overview, samples >= 1, ("ranker",), "S >= 1", ["S"])
    stochastic = overview["ranker"].isin(registry.of_family(registry.Family.stochastic))
    problems += rows_failing(table, overview, ~stochastic | (samples > 1), ("ranker",), "S > 1 for a stochastic ranker",
                             ["S"])
    return problems


def metrics_problems(study: Study, intervals: pd.DataFrame, metrics: pd.DataFrame) -> list[str]:
    """:func:`.calibration.interval_table` and :func:`.calibration.metrics_table`.

    Every cell (ranker x training corpus x test condition) once in ``intervals`` and in
    ``metrics`` (one row per seed there); each of :data:`.uncertainty.INTERVAL_METRICS` with a
    finite value and interval, ``lo <= hi``; the value inside its interval for
    :data:`MEAN_METRICS` and for every debiased ECE; no NaN metric in ``metrics``.
    """
    cells = _cells(study, study.rankers)
    iv_cols = [*unc.CELL_METRICS, *[c for m in unc.INTERVAL_METRICS for c in (m, f"{m} lo", f"{m} hi")]]
    point = [*unc.CELL_METRICS, "mean var"]
    problems = (missing_columns("intervals", intervals, [*CELL_KEYS, *iv_cols])
                + missing_columns("metrics", metrics, [*CELL_KEYS, *point]))
    if problems:
        return problems
    problems += rows_expected("intervals", intervals, CELL_KEYS, cells)
    distinct = metrics[list(CELL_KEYS)].drop_duplicates()
    problems += rows_expected("metrics (distinct cells)", distinct, CELL_KEYS, cells)
    for m in unc.INTERVAL_METRICS:
        lo, hi = f"{m} lo", f"{m} hi"
        finite = intervals[[m, lo, hi]].notna().all(axis=1)
        problems += rows_failing("intervals", intervals, finite, CELL_KEYS, f"no NaN in {m} and its interval",
                                 [m, lo, hi])
        problems += rows_failing("intervals", intervals, ~finite | (intervals[lo] <= intervals[hi]), CELL_KEYS,
                                 f"{lo} <= {hi}", [lo, hi])
    for m in (*MEAN_METRICS, *(f"{e} debiased" for e in unc.ECE_METRICS)):
        lo, hi = f"{m} lo", f"{m} hi"
        inside = (intervals[lo] <= intervals[m] + TOLERANCE) & (intervals[m] <= intervals[hi] + TOLERANCE)
        problems += rows_failing("intervals", intervals, inside, CELL_KEYS,
                                 f"{m} inside its interval, {lo} <= {m} <= {hi} (within {TOLERANCE:g})", [lo, m, hi])
    problems += not_nan("metrics", metrics, point, [*CELL_KEYS, "seed"])
    return problems


def table1_problems(study: Study, table1: pd.DataFrame, table1_rules: pd.DataFrame) -> list[str]:
    """:func:`.calibration.table1` and :func:`.calibration.table1_reference`.

    Table 1: one row per training corpus x test condition, no NaN, both ECEs in [0, 1), one
    in-distribution row per training corpus. The rules' rows: one per rule of
    :class:`calibrank.baselines.BaselineName` and row of Table 1, R@1 in [0, 1].
    """
    keys = ("train_corpus", "corpus", "sampler")
    rl, eces = study.recall_label, ("ECE 1:1", f"ECE 1:{study.k}")
    problems = (missing_columns("table1", table1, [*keys, "shift", *eces])
                + missing_columns("table1 rules", table1_rules, ["ranker", *keys, rl]))
    if problems:
        return problems
    conditions = _conditions(study)
    problems += rows_expected("table1", table1, keys, conditions)
    problems += not_nan("table1", table1, table1.columns, keys)
    for c in eces:
        problems += in_range("table1", table1, c, keys, 0, 1, high_open=True, allow_nan=True)  # NaN: reported above
    in_dist = table1[table1["shift"] == "in distribution"]["train_corpus"].value_counts()
    problems += [f"table1: train_corpus={tc}: expected 1 in-distribution row, found {int(in_dist.get(tc, 0))}"
                 for tc in study.train_corpora if in_dist.get(tc, 0) != 1]
    problems += [f"table1: train_corpus={tc}: expected no in-distribution row (not a training corpus), found {int(n)}"
                 for tc, n in in_dist.items() if tc not in study.train_corpora]
    problems += rows_expected("table1 rules", table1_rules, ("ranker", *keys),
                          [(r, *cond) for r in _baseline_rankers() for cond in conditions])
    problems += in_range("table1 rules", table1_rules, rl, ("ranker", *keys), 0, 1)
    return problems


def _compared(table: str, df: pd.DataFrame, keys: Sequence[str]) -> list[str]:
    """p-values in [0, 1] where defined and a known mark on every row."""
    return in_range(table, df, "pvalue", keys, 0, 1, allow_nan=True) + _marks(table, df, keys)


def table2_problems(study: Study, table2: pd.DataFrame) -> list[str]:
    """:func:`.calibration.table2`: every ranker but ``bert`` on every cell; a change of the
    debiased ECE everywhere, inside its interval, p-values in [0, 1], ``†`` only on a decrease
    and ``worse`` only on a rise."""
    table = "table2"
    problems = missing_columns(table, table2, [*CELL_KEYS, "rel_change", "change", "lo", "hi", "pvalue", "mark"])
    if problems:
        return problems
    problems += rows_expected(table, table2, CELL_KEYS, _cells(study, [r for r in study.rankers if r != BASELINE]))
    problems += not_nan(table, table2, ["change"], CELL_KEYS)
    problems += _compared(table, table2, CELL_KEYS)
    mark, change = table2["mark"], table2["change"]
    inside = (table2["lo"] <= change + TOLERANCE) & (change <= table2["hi"] + TOLERANCE)
    problems += rows_failing(table, table2, inside | table2["lo"].isna(), CELL_KEYS, "change inside [lo, hi]",
                             ["lo", "change", "hi"])
    problems += rows_failing(table, table2, ~((mark == unc.IMPROVED) & (change >= 0)), CELL_KEYS,
                             f"the mark {unc.IMPROVED} on a decrease only (change < 0)", ["mark", "change"])
    problems += rows_failing(table, table2, ~((mark == unc.WORSE) & (change <= 0)), CELL_KEYS,
                             f"the mark {unc.WORSE!r} on a rise only (change > 0)", ["mark", "change"])
    return problems


def figure2_problems(study: Study, figure2: pd.DataFrame, metrics: pd.DataFrame) -> list[str]:
    """:func:`.calibration.ece_by_negatives`: every cell at n = 1..k non-relevant candidates,
    ECE in [0, 1]; ``bert``'s ends equal its main seed's balanced (n = 1) and full (n = k) ECE
    of :func:`.calibration.metrics_table` (within 1e-12)."""
    table, k = "figure2", study.k
    keys = (*CELL_KEYS, "n_nonrel")
    problems = (missing_columns(table, figure2, [*keys, "ECE"])
                + missing_columns("metrics", metrics, [*CELL_KEYS, "seed", "ECE 1:1", "ECE"]))
    if problems:
        return problems
    problems += rows_expected(table, figure2, keys,
                              [(*cell, n) for cell in _cells(study, study.rankers) for n in range(1, k + 1)])
    problems += in_range(table, figure2, "ECE", keys, 0, 1)
    if BASELINE not in study.rankers:
        return problems
    main = metrics[(metrics["ranker"] == BASELINE) & (metrics["seed"] == study.main_seed)]
    by_cell = {tuple(r[c] for c in CELL_KEYS): r for _, r in main.iterrows()}
    bert = figure2[(figure2["ranker"] == BASELINE) & figure2["n_nonrel"].isin([1, k])]
    for _, row in bert.iterrows():
        cell = tuple(row[c] for c in CELL_KEYS)
        column = "ECE 1:1" if row["n_nonrel"] == 1 else "ECE"
        if cell not in by_cell:
            problems.append(f"{table}: {describe(row, keys)}: expected a metrics row of seed {study.main_seed} to "
                            "compare with, found none")
            continue
        want = by_cell[cell][column]
        if not abs(row["ECE"] - want) <= TOLERANCE:
            problems.append(f"{table}: {describe(row, keys)}: expected metrics' {column} of seed {study.main_seed} "
                            f"({fmt(want)}, within {TOLERANCE:g}), found ECE {fmt(row['ECE'])}")
    return problems


def reliability_problems(study: Study, reliability: pd.DataFrame) -> list[str]:
    """:func:`.calibration.reliability_table`: :data:`.calibration.RELIABILITY_BINS` buckets per
    ranker, the same number of pairs for every ranker, fractions of relevant pairs in [0, 1]."""
    table = "reliability"
    problems = missing_columns(table, reliability, ("ranker", "bin", "count", "fraction_positive"))
    if problems:
        return problems
    problems += rows_expected(table, reliability, ("ranker", "bin"),
                          [(r, b) for r in study.rankers for b in range(RELIABILITY_BINS)])
    totals = reliability.groupby("ranker", sort=False)["count"].sum()
    if totals.nunique() != 1:
        problems.append(f"{table}: bucket counts sum to {', '.join(f'{r}: {n}' for r, n in totals.items())}, "
                        "expected one total (the same pairs) for every ranker")
    problems += in_range(table, reliability, "fraction_positive", ("ranker", "bin"), 0, 1, allow_nan=True)
    return problems


def paper2023_problems(study: Study, layout2023: Mapping[str, pd.DataFrame]) -> list[str]:
    """:func:`.calibration.paper2023_tables`: its in-domain table has one row per ranker and rule
    (:class:`calibrank.baselines.BaselineName`) and training corpus, with R@1, MAP and ECE."""
    table = "paper2023 in-domain"
    if "in-domain" not in layout2023:
        return [f"{table}: missing (tables: {', '.join(layout2023)})"]
    df, keys, values = layout2023["in-domain"], ("ranker", "train on"), ("R@1 mean", "MAP mean", "ECE mean")
    problems = missing_columns(table, df, [*keys, *values])
    if problems:
        return problems
    problems += rows_expected(table, df, keys,
                              [(r, tc) for r in [*study.rankers, *_baseline_rankers()] for tc in study.train_corpora])
    problems += not_nan(table, df, values, keys)
    return problems


def claims_problems(claims: pd.DataFrame) -> list[str]:
    """:func:`.verdicts.calibration_claims` (or any claims table): at least one claim, every
    verdict of :data:`.verdicts.VERDICTS` (with its power where it is not significant), Gaussian-process rankers in the 2023 papers' claims
    only and those papers' claims about them only."""
    from . import verdicts

    table = "claims"
    problems = missing_columns(table, claims, ("paper", "claim", "method"))
    if problems:
        return problems
    if len(claims) < 1:
        return [f"{table}: no rows, expected at least one claim"]
    keys = ("paper", "claim", "method")
    summary = verdicts.summary(claims)
    problems += rows_failing(table, summary, summary["verdict"].isin(verdicts.VERDICTS), keys,
                             f"one of the verdicts {', '.join(verdicts.VERDICTS)}", ["verdict"])
    undecided = summary["verdict"].isin(verdicts.VERDICTS[1:3])
    problems += rows_failing(table, summary, ~undecided | (summary["power"].str.len() > 0), keys,
                             "a row that is not significant to say what it could have detected", ["verdict", "power"])
    gp = claims["method"].isin(GP_RANKERS)
    of_2023 = claims["paper"].str.contains(PAPERS_2023_PATTERN)
    problems += rows_failing(table, claims, ~gp | of_2023, keys,
                             "a Gaussian-process ranker in a 2023 paper only (PG-DRR or GPF-BERT)", ["paper"])
    problems += rows_failing(table, claims, gp | ~of_2023, keys,
                             f"a Gaussian-process ranker ({', '.join(GP_RANKERS)}) in a 2023 paper's claim", ["method"])
    return problems


def export_problems(study: Study, tables: Mapping[str, pd.DataFrame], exported: Mapping[str, Path],
                    trec: pd.DataFrame, required: Iterable[str] = REPORT_TABLES) -> list[str]:
    """:func:`.exports.export_tables` and :func:`.exports.write_trec_runs`: a CSV file for each of
    ``tables`` and no other, the ``required`` ones readable back, a TREC run file per cell."""
    problems = [f"exported tables: {name!r} was not written, expected a CSV file" for name in tables if name not in exported]
    problems += [f"exported tables: {name!r} written but not asked for" for name in exported if name not in tables]
    problems += [f"exported tables: {name!r} -> {path} does not exist" for name, path in exported.items()
                 if not Path(path).is_file()]
    back = load_exported_tables(study.cfg.profile)
    problems += [f"exported tables: {name}.csv cannot be read back from reports/{study.cfg.profile}/tables, "
                 f"expected it (found {len(back)} tables)" for name in required if name not in back]
    problems += missing_columns("trec", trec, ("kind", "run", "condition"))
    if problems:
        return problems
    runs = trec[trec["kind"] == "run"]
    problems += rows_expected("trec runs", runs, ("run", "condition"),
                          [(f"{r}-{tc}", c.name) for r in study.rankers for tc in study.train_corpora
                           for c in study.test_conditions()])
    return problems


# ------------------------------------------------------------------------------ notebook 05
def sweep_problems(study: Study, sweep: pd.DataFrame) -> list[str]:
    """:func:`.risk_aware.risk_sweep`: every stochastic ranker's cell at each b of
    :data:`calibrank.risk.DEFAULT_BS`; b and R@1 in [0, 1]; no relative change at b = 0."""
    from ..risk import DEFAULT_BS

    table = "sweep"
    keys = (*CELL_KEYS, "b")
    problems = missing_columns(table, sweep, [*keys, "value", "rel_change"])
    if problems:
        return problems
    cells = _cells(study, study.stochastic_rankers())
    problems += rows_expected(table, sweep, keys, [(*cell, float(b)) for cell in cells for b in DEFAULT_BS])
    problems += in_range(table, sweep, "b", keys, 0, 1)
    problems += in_range(table, sweep, "value", keys, 0, 1)
    at0 = (sweep["b"] == 0) & sweep["rel_change"].notna() & (sweep["rel_change"] != 0)
    problems += rows_failing(table, sweep, ~at0, keys, "rel_change 0 at b = 0 (or NaN where R@1 is 0)", ["rel_change"])
    return problems


def table3_problems(study: Study, table3: pd.DataFrame) -> list[str]:
    """:func:`.risk_aware.table3`: every stochastic ranker's cell once, S > 1, b in [0, 1], the
    three R@1 values in [0, 1], p-values in [0, 1] where defined, known marks."""
    table = "table3"
    r_at_1 = ("mean_ranker", "risk_aware", "prob_mean_ranker")
    problems = missing_columns(table, table3, [*CELL_KEYS, "S", "b", *r_at_1, "pvalue", "mark"])
    if problems:
        return problems
    problems += rows_expected(table, table3, CELL_KEYS, _cells(study, study.stochastic_rankers()))
    problems += rows_failing(table, table3, pd.to_numeric(table3["S"], errors="coerce") > 1, CELL_KEYS,
                             "S > 1 (a stochastic ranker)", ["S"])
    problems += in_range(table, table3, "b", CELL_KEYS, 0, 1)
    for c in r_at_1:
        problems += in_range(table, table3, c, CELL_KEYS, 0, 1)
    problems += _compared(table, table3, CELL_KEYS)
    return problems


# ------------------------------------------------------------------------------ notebook 06
def nota_problems(study: Study, nota: pd.DataFrame) -> list[str]:
    """:func:`.nota_tables.nota_table`: E[R] and one ``+var`` input per stochastic ranker on every
    condition, macro-F1 in [0, 1] with an sd over :data:`.nota_tables.NOTA_FOLDS` folds,
    p-values in [0, 1] for the compared inputs and none for E[R], ``†`` only on a gain."""
    table = "nota"
    cond = ("table", "train_corpus", "corpus", "sampler")
    keys = (*cond, "input")
    problems = missing_columns(table, nota, [*keys, "f1_mean", "f1_sd", "folds", "pvalue", "rel_change", "mark"])
    if problems:
        return [f"{table}: no rows, expected at least one condition"] if nota.empty else problems
    n_inputs = 1 + len(study.stochastic_rankers())
    groups = nota.groupby(list(cond), sort=False)["input"]
    if groups.ngroups == 0:
        problems.append(f"{table}: no rows, expected at least one condition")
    for key, inputs in groups:
        if len(inputs) != n_inputs:
            problems.append(f"{table}: {describe(dict(zip(cond, key)), cond)}: expected {n_inputs} inputs (E[R] and "
                            f"+var per stochastic ranker), found {len(inputs)}: {', '.join(inputs)}")
    problems += in_range(table, nota, "f1_mean", keys, 0, 1)
    problems += not_nan(table, nota, ["f1_sd"], keys)
    problems += rows_failing(table, nota, nota["folds"] == NOTA_FOLDS, keys, f"folds {NOTA_FOLDS}", ["folds"])
    problems += in_range(table, nota, "pvalue", keys, 0, 1, allow_nan=True)
    problems += rows_failing(table, nota, ~((nota["input"] == "E[R]") & nota["pvalue"].notna()), keys,
                             "no pvalue on the base input E[R] (nothing to compare)", ["pvalue"])
    problems += rows_failing(table, nota, ~((nota["mark"] == unc.IMPROVED) & (nota["rel_change"] <= 0)), keys,
                             f"the mark {unc.IMPROVED} on a gain only (rel_change > 0)", ["mark", "rel_change"])
    return problems
