"""The study's numbers: every table and figure of notebooks 04-06, computed from the profile's Predictions.

The notebooks' one import; the work is in :mod:`calibrank.study.analysis`, one module per question,
and :mod:`calibrank.study.analysis.plots` draws. Intervals and tests: :mod:`calibrank.metrics.resample`.
:func:`load_study` requires every training seed the profile lists; analyses that need one
prediction per query use the main seed. Which function makes which table: docs/decisions.md,
"The study's tables".
"""

from __future__ import annotations

from calibrank.study.analysis.calibration import (
    PROTOCOL_2023,
    SPREAD_RANKER,
    baseline_interval_table,
    baseline_metrics_table,
    default_condition,
    display_columns,
    ece_by_negatives,
    format_spread,
    interval_table,
    metrics_table,
    paper2023_sampler,
    paper2023_tables,
    protocol_note,
    reliability_table,
    seed_spread,
    significance_text,
    table1,
    table1_reference,
    table1_wide,
    table2,
    table2_wide,
)
from calibrank.study.analysis.exports import export_tables, load_exported_tables, tables_dir, write_trec_runs
from calibrank.study.analysis.load import BASELINE, DISPLAY_NAMES, GP_RANKERS, Study, load_study, overview
from calibrank.study.analysis.nota_tables import nota_means_ranker, nota_table, nota_wide
from calibrank.study.analysis.papers import PAPERS_2023, PENHA_HAUFF, paper_comparison
from calibrank.study.analysis.risk_aware import B_FROM, risk_aware_scores, risk_sweep, table3, table3_wide
from calibrank.study.analysis.subsets import subset_negatives

__all__ = [
    "B_FROM",
    "BASELINE",
    "DISPLAY_NAMES",
    "GP_RANKERS",
    "PAPERS_2023",
    "PENHA_HAUFF",
    "PROTOCOL_2023",
    "SPREAD_RANKER",
    "Study",
    "baseline_interval_table",
    "baseline_metrics_table",
    "default_condition",
    "display_columns",
    "ece_by_negatives",
    "export_tables",
    "format_spread",
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
    "seed_spread",
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
