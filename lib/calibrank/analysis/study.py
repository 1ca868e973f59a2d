"""The study's numbers: every table and figure of notebooks 04-06, computed from the profile's Predictions.

The notebooks' one import; the work is in :mod:`calibrank.analysis`, one module per question.
Compute only: no model runs here and torch is not imported; :mod:`calibrank.analysis.plots` draws.
Every number carries a 95% bootstrap interval over test queries (and seeds, when several), and
comparisons are one-sided paired permutation tests, Holm-corrected within a table
(:mod:`calibrank.metrics.resample`).

- :func:`table1` (Penha & Hauff 2021, Table 1): R10@1 and ECE of ``bert`` under cross-domain and
  cross-negative-sampling shift; the paper's balanced ECE is computed on the relevant candidate
  and one seeded negative per query (:func:`subset_negatives`).
- :func:`table2` (Table 2): relative change of the balanced ECE of each ranker over ``bert``.
- :func:`ece_by_negatives` (Figure 2): ECE as negatives per query grow from 1 to k, nested subsets.
- :func:`risk_sweep`, :func:`table3` (Figure 3, Table 3, :mod:`calibrank.analysis.risk`);
  :func:`nota_table` (Tables 4-5, :mod:`calibrank.analysis.nota`).
- :func:`paper2023_tables`: PG-DRR Tables 1, 3 and GPF-BERT Tables 1-2 (random negatives).
- :func:`metrics_table`, :func:`interval_table`, :func:`reliability_table`,
  :func:`paper_comparison`, :func:`write_trec_runs`, :func:`export_tables`.

:func:`load_study` requires every training seed the profile lists; analyses that need one
prediction per query (Figure 2, reliability, NOTA, TREC runs) use the main seed.
"""

from __future__ import annotations

from .calibration import (
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
from .exports import export_tables, load_exported_tables, tables_dir, write_trec_runs
from .load import BASELINE, DISPLAY_NAMES, GP_RANKERS, Study, load_study, overview
from .nota_tables import nota_means_ranker, nota_table, nota_wide
from .papers import PAPERS_2023, PENHA_HAUFF, paper_comparison
from .risk_aware import B_FROM, risk_aware_scores, risk_sweep, table3, table3_wide
from .subsets import subset_negatives

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
