"""Checks of the pipeline notebooks' tables: data summary, negatives, a training run's summary, the efficiency table.

Each check takes a table a notebook shows (and what it needs to know what to expect) and
returns a list of problems, one sentence each naming the table, the row and what was expected
against what was found; an empty list when all is well. The notebooks assert that it is empty
(as :func:`calibrank.querysets.query_set_problems` for the query sets):

- :func:`corpus_table_problems` (``01_data``): the corpus statistics and the split by dialogue;
- :func:`overlap_problems` (``02_negatives``): BM25 negatives overlap their context more than random ones;
- :func:`run_summary_problems` (``03_train``): one row per condition, metrics in range, S as the profile says;
- :func:`measured_efficiency_problems` and :func:`efficiency_table_problems` (``07_efficiency``).

Written with the building blocks of :mod:`calibrank.table_checks`. Nothing here imports torch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from .table_checks import TOLERANCE, fmt, in_range, missing_columns, not_nan, rows_expected, rows_failing

__all__ = [
    "corpus_table_problems",
    "efficiency_table_problems",
    "measured_efficiency_problems",
    "overlap_problems",
    "run_summary_problems",
]


# ------------------------------------------------------------------------------ 01 data
def corpus_table_problems(table: pd.DataFrame, examples: Mapping[str, Mapping[str, Sequence]]) -> list[str]:
    """:func:`calibrank.data.stats.corpus_table` against the ``examples`` it summarises (notebook 01).

    One row per corpus x split of ``examples``, each with examples (> 0) and a response pool at
    least as large as its examples; no dialogue in two splits of one corpus
    (:func:`calibrank.querysets.split_leaks`).
    """
    from .querysets import split_leaks

    name = "corpus table"
    keys = ("corpus", "split")
    problems = missing_columns(name, table, [*keys, "examples", "response pool"])
    if problems:
        return problems
    problems += rows_expected(name, table, keys, [(c, s) for c, splits in examples.items() for s in splits])
    problems += rows_failing(name, table, table["examples"] > 0, keys, "examples > 0", ["examples"])
    problems += rows_failing(name, table, table["response pool"] >= table["examples"], keys,
                             "a response pool at least as large as the examples", ["response pool", "examples"])
    problems += [f"examples: split by dialogue expected, found {leak}" for leak in split_leaks(examples)]
    return problems


# ------------------------------------------------------------------------------ 02 negatives
def overlap_problems(cfg, overlap: pd.DataFrame) -> list[str]:
    """:func:`calibrank.data.stats.overlap_table` (notebook 02): on every corpus whose test split has both
    a random and a BM25 query set, the BM25 negatives overlap their context more than the random ones."""
    from .config import SamplerName
    from .querysets import QuerySetSpec

    name = "overlap table"
    problems = missing_columns(name, overlap, ["query set", "overlap negatives"])
    if problems:
        return problems
    for corpus in cfg.data.corpora:
        rand, bm25 = (QuerySetSpec(corpus.value, "test", s, cfg.negatives.eval_k).name
                      for s in (SamplerName.random, SamplerName.bm25))
        rows = {qs: overlap[overlap["query set"] == qs] for qs in (rand, bm25)}
        if any(r.empty for r in rows.values()):
            continue  # the profile has no such pair of query sets
        dup = [qs for qs, r in rows.items() if len(r) > 1]
        if dup:
            problems += [f"{name}: {len(rows[qs])} rows for {qs}, expected 1" for qs in dup]
            continue
        b, r = float(rows[bm25]["overlap negatives"].iloc[0]), float(rows[rand]["overlap negatives"].iloc[0])
        if not b > r:
            problems.append(f"{name}: {corpus.value}: expected the BM25 negatives ({bm25}) to overlap their context "
                            f"more than the random ones ({rand}), found overlap negatives {fmt(b)} vs {fmt(r)}")
    return problems


# ------------------------------------------------------------------------------ 03 train
def run_summary_problems(cfg, ranker: str, summary: pd.DataFrame) -> list[str]:
    """:func:`calibrank.experiment.predict_conditions`' summary of one trained ranker (notebook 03).

    One row per condition of :func:`~calibrank.experiment.ranker_conditions`; ``R<k+1>@1`` and
    ``ECE`` in [0, 1]; ``samples`` = S of the ranker under the profile
    (:func:`~calibrank.experiment.expected_samples`); ``mean var`` > 0 when S > 1, else 0.
    """
    from .experiment import expected_samples, ranker_conditions

    ranker = str(getattr(ranker, "value", ranker))
    name = f"run summary of {ranker}"
    keys = ("corpus", "split", "sampler")
    recall = f"R{cfg.negatives.eval_k + 1}@1"
    problems = missing_columns(name, summary, [*keys, recall, "ECE", "samples", "mean var"])
    if problems:
        return problems
    conditions = ranker_conditions(cfg, ranker)
    problems += rows_expected(name, summary, keys, [(c.corpus, c.split, c.sampler) for c in conditions],
                              what="one per condition the ranker is predicted on")
    for col in (recall, "ECE"):
        problems += in_range(name, summary, col, keys, 0, 1)
    s = expected_samples(cfg, ranker)
    problems += rows_failing(name, summary, summary["samples"] == s, keys,
                             f"samples {s} (S of {ranker} under profile {cfg.profile!r})", ["samples"])
    if s > 1:
        ok, expected = summary["mean var"] > 0, f"mean var > 0 (S = {s} samples)"
    else:
        ok, expected = summary["mean var"] == 0, "mean var 0 (a deterministic ranker, S = 1)"
    problems += rows_failing(name, summary, ok, keys, expected, ["mean var"])
    return problems


# ------------------------------------------------------------------------------ 07 efficiency
def _one_value(name: str, table: pd.DataFrame, column: str, why: str) -> list[str]:
    values = table[column].dropna().unique().tolist()
    return [] if table[column].nunique() == 1 else [
        f"{name}: expected one value of {column} ({why}), found {len(values)}: {sorted(map(str, values))}"]


def measured_efficiency_problems(cfg, measured: pd.DataFrame) -> list[str]:
    """:func:`calibrank.efficiency.measure_efficiency` (notebook 07): one row per ranker of the profile,
    parameters > 0, a positive median time no faster than the fastest round, every ranker timed on the
    same queries of one corpus."""
    name = "measured efficiency"
    keys = ("ranker",)
    cols = ["ranker", "parameters", "ms/query", "ms/query (fastest)", "queries", "corpus"]
    problems = missing_columns(name, measured, cols)
    if problems:
        return problems
    rankers = [r.value for r in cfg.rankers.names]
    problems += rows_expected(name, measured, keys, [(r,) for r in rankers],
                              what=f"one per ranker of profile {cfg.profile!r}")
    problems += rows_failing(name, measured, measured["parameters"] > 0, keys, "parameters > 0", ["parameters"])
    problems += rows_failing(name, measured, measured["ms/query"] > 0, keys, "ms/query > 0", ["ms/query"])
    problems += rows_failing(name, measured, measured["ms/query (fastest)"] <= measured["ms/query"], keys,
                             "ms/query (fastest) <= ms/query (the median)", ["ms/query (fastest)", "ms/query"])
    problems += _one_value(name, measured, "queries", "every ranker timed on the same queries")
    problems += _one_value(name, measured, "corpus", "every ranker timed on one corpus")
    return problems


def efficiency_table_problems(table: pd.DataFrame, repeats: int, baseline: str | None = None) -> list[str]:
    """:func:`calibrank.efficiency.efficiency_table` of ``repeats`` timed rounds (notebook 07).

    No NaN in ``params (M)``, ``ms/query``, ``ratio_to_bert``; the ``baseline`` row (default
    :data:`calibrank.analysis.load.BASELINE`) has ratio 1; every row has ``repeats`` repeats;
    with enough repeats for an interval (:data:`calibrank.metrics.stats.MIN_CI_VALUES`),
    ``ratio lo`` <= ``ratio hi``.
    """
    from .analysis.load import BASELINE
    from .metrics.stats import MIN_CI_VALUES

    baseline = BASELINE if baseline is None else baseline
    name = "efficiency table"
    keys = ("ranker",)
    values = ["params (M)", "ms/query", "ratio_to_bert"]
    problems = missing_columns(name, table, [*keys, *values, "repeats", "ratio lo", "ratio hi"])
    if problems:
        return problems
    problems += not_nan(name, table, values, keys)
    base = table[table["ranker"] == baseline]
    if base.empty:
        problems.append(f"{name}: no {baseline} row, expected one (the ratios are to it)")
    problems += rows_failing(name, base, (base["ratio_to_bert"] - 1).abs() < TOLERANCE, keys,
                             f"ratio_to_bert 1 (within {TOLERANCE:g}) for {baseline} itself", ["ratio_to_bert"])
    problems += rows_failing(name, table, table["repeats"] == repeats, keys, f"repeats {repeats}", ["repeats"])
    if repeats >= MIN_CI_VALUES:
        problems += rows_failing(name, table, table["ratio lo"] <= table["ratio hi"], keys,
                                 f"ratio lo <= ratio hi ({repeats} repeats give an interval)", ["ratio lo", "ratio hi"])
    return problems
