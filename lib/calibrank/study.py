"""The study's numbers: every table and figure of notebooks 04-06, computed from the profile's Predictions.

Compute only (DataFrames and arrays); :mod:`calibrank.plots` draws, the notebooks show, and
:mod:`calibrank.report` assembles the front page. Everything reads the Predictions files of
notebook 03 (:func:`load_study`); no model is run here, and importing it does not import torch.

This module is the notebooks' one import: the work is done in :mod:`calibrank.analysis`, one
module per question — :mod:`~calibrank.analysis.load` (the Study), :mod:`~calibrank.analysis.calibration`
(04), :mod:`~calibrank.analysis.risk_aware` (05), :mod:`~calibrank.analysis.nota_tables` (06),
:mod:`~calibrank.analysis.papers` (the papers' numbers), :mod:`~calibrank.analysis.verdicts`
(what replicates), :mod:`~calibrank.analysis.exports` (CSV and TREC files), with
:mod:`~calibrank.analysis.uncertainty` and :mod:`~calibrank.analysis.subsets` under them.

What is computed, and from which paper:

Uncertainty. Every number a table shows carries a 95% interval (:mod:`calibrank.analysis.uncertainty`,
resampling through :mod:`calibrank.metrics.resample`): a percentile bootstrap over test queries,
and over training seeds too when the profile has several (with one seed every table says "1
training seed: intervals cover test-query sampling only"). Comparisons of two rankers are
paired permutation tests over test queries, one-sided in the direction the paper claims, Holm-
corrected across the cells of one table; ``†`` marks a significant improvement, ``worse`` a
significant change the other way.

- :func:`metrics_table`: per ranker x training corpus x condition x seed, R@1, MAP, MRR, ECE
  on all ``1 + k`` candidates and on the balanced 1:1 set, Brier, NLL, mean variance (point
  values per run); :func:`interval_table` the same metrics per cell, seeds together, with
  intervals; :func:`baseline_interval_table` for the rules that learn nothing.
- :func:`table1` (Penha & Hauff 2021, Table 1): R10@1 and ECE of ``bert`` on every test
  condition (cross-domain x cross-negative-sampling). The paper computes this ECE on a
  balanced set (1 relevant : 1 non-relevant); we derive it from the k = 9 Predictions by
  keeping the relevant candidate and one negative drawn per query with a seed
  (:func:`subset_negatives`), and also give the ECE on all candidates.
- :func:`table2` (Table 2): relative change of the balanced ECE of every other ranker over
  ``bert``, per condition, with its interval and the one-sided test that ECE is lower. The
  paper's Student's t-tests are not described further; ECE is a sum over queries, so a test
  over queries is defined here (:mod:`calibrank.metrics.resample`).
- :func:`ece_by_negatives` (Figure 2): ECE as the number of non-relevant candidates per
  query grows from 1 to k, each query keeping its relevant candidate and the first n of
  its negatives in one seeded random order, so the subsets are nested: n = 1 is the
  balanced set of Table 1 and n = k is the full query; with a band per curve.
- :func:`reliability_table`: reliability-diagram buckets per ranker (10 equal-width buckets).
- :func:`risk_sweep` and :func:`table3` (Figure 3, Table 3) through :mod:`calibrank.risk`;
  Table 3 chooses b on the validation split of the training condition by default.
- :func:`nota_table` (Tables 4-5) through :mod:`calibrank.nota`.
- :func:`paper2023_tables`: the 2023 papers' layout (PG-DRR Tables 1 and 3, GPF-BERT Tables
  1-2): R10@1, MAP and ECE on all candidates with intervals, in-domain and under domain shift,
  and the protocol each side used. Those papers evaluated with 1 + 9 *random* negatives, so
  the random sampler is used when the profile has it.
- :func:`write_trec_runs` and :func:`export_tables`: TREC run files and CSV copies of every
  table under ``reports/<profile>/``, written atomically.
- :func:`paper_comparison`: the papers' own numbers (the constants below) beside ours;
  the replication verdicts are :mod:`calibrank.analysis.verdicts`.

Seeds. notebook 03 writes one Predictions file per ranker, training corpus and condition
(``<condition>.npz``) for the main training seed (the first of ``rankers.seeds``). The other
seeds of the profile sit beside it as ``<condition>-seed<N>.npz``; :func:`load_study` requires
every seed the profile lists (files of seeds it does not list are ignored) and tells seeds
apart by ``meta["seed"]``. Tables use every seed; analyses that need one prediction per
query (Figure 2, reliability, NOTA, TREC runs) use the main seed.

Ties. Ranking metrics count ties against the relevant candidate
(:mod:`calibrank.metrics.ranking`): a ranker that gives equal scores gets no credit.
"""

from __future__ import annotations

from .analysis.calibration import (
    PROTOCOL_2023,
    baseline_interval_table,
    baseline_metrics_table,
    default_condition,
    display_columns,
    ece_by_negatives,
    interval_table,
    metrics_table,
    paper2023_sampler,
    paper2023_tables,
    protocol_note,
    reliability_table,
    significance_text,
    table1,
    table1_reference,
    table1_wide,
    table2,
    table2_wide,
)
from .analysis.exports import export_tables, load_exported_tables, tables_dir, write_trec_runs
from .analysis.load import BASELINE, DISPLAY_NAMES, GP_RANKERS, Study, load_study, overview
from .analysis.nota_tables import nota_means_ranker, nota_table, nota_wide
from .analysis.papers import PAPERS_2023, PENHA_HAUFF, paper_comparison
from .analysis.risk_aware import B_FROM, risk_aware_scores, risk_sweep, table3, table3_wide
from .analysis.subsets import subset_negatives

__all__ = [
    "B_FROM",
    "BASELINE",
    "DISPLAY_NAMES",
    "GP_RANKERS",
    "PAPERS_2023",
    "PENHA_HAUFF",
    "PROTOCOL_2023",
    "Study",
    "baseline_interval_table",
    "baseline_metrics_table",
    "default_condition",
    "display_columns",
    "ece_by_negatives",
    "export_tables",
    "interval_table",
    "load_exported_tables",
    "load_study",
    "metrics_table",
    "nota_means_ranker",
    "nota_table",
    "nota_wide",
    "overview",
    "paper2023_sampler",
    "paper2023_tables",
    "paper_comparison",
    "protocol_note",
    "reliability_table",
    "risk_aware_scores",
    "risk_sweep",
    "significance_text",
    "subset_negatives",
    "table1",
    "table1_reference",
    "table1_wide",
    "table2",
    "table2_wide",
    "table3",
    "table3_wide",
    "tables_dir",
    "write_trec_runs",
]
