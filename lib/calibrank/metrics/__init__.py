"""Evaluation metrics: ranking quality, calibration of probabilities, and statistics to compare runs.

- :mod:`.ranking`: per-query R@k, AP, RR, nDCG@k and their means (pessimistic ties).
- :mod:`.calibration`: ECE (eq. 1 of Penha & Hauff, 2021; equal-width or equal-mass buckets),
  MCE, Brier score, NLL and reliability-curve statistics.
- :mod:`.stats`: paired t-test, Holm-Bonferroni correction, Student-t intervals, relative change.
- :mod:`.resample`: every set-level metric as a function of per-query sums, so that bootstrap
  intervals over queries (and seeds) and paired permutation tests are matrix products.

Compute only: plots live in :mod:`calibrank.study.analysis.plots`.
"""

from __future__ import annotations

from calibrank.metrics.calibration import (
    EPS,
    ReliabilityCurve,
    brier,
    calibration_metrics,
    ece,
    mce,
    nll,
    reliability_curve,
)
from calibrank.metrics.ranking import (
    average_precision,
    ndcg_at_k,
    rank_of_relevant,
    ranking_metrics,
    recall_at_k,
    reciprocal_rank,
)
from calibrank.metrics.stats import TTestResult, holm, mean_ci, paired_ttest, relative_change

__all__ = [
    "EPS",
    "ReliabilityCurve",
    "TTestResult",
    "average_precision",
    "brier",
    "calibration_metrics",
    "ece",
    "holm",
    "mce",
    "mean_ci",
    "ndcg_at_k",
    "nll",
    "paired_ttest",
    "rank_of_relevant",
    "ranking_metrics",
    "recall_at_k",
    "reciprocal_rank",
    "reliability_curve",
    "relative_change",
]
