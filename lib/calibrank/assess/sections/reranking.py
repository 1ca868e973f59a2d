"""With several samples per score (MC Dropout passes, ensemble members): risk-aware re-ranking.

``E[R] - b var[R] - 2b sum cov`` (Penha & Hauff 2021, sec. 3.2.4; :mod:`calibrank.methods.rerank`), ``b``
chosen on validation R@1 and compared on test with the mean ranker. Empty when S = 1.
"""

from __future__ import annotations

import pandas as pd

from calibrank.assess.sections.selfcheck import checked
from calibrank.methods.rerank import risk_aware_table
from calibrank.predictions import Predictions

__all__ = ["risk_aware"]


def risk_aware(valid: Predictions, test: Predictions) -> pd.DataFrame:
    """One row (:func:`calibrank.methods.rerank.risk_aware_table`; R@1 over the relevant candidates of each list), or none
    without samples."""
    if test.n_samples < 2 or valid.n_samples < 2:
        return pd.DataFrame(
            columns=["metric", "b", "valid_value", "mean_ranker", "risk_aware", "rel_change", "pvalue", "n", "note"]
        )
    row = risk_aware_table(valid, test, metric="R@1")
    return checked(
        "risk-aware", pd.DataFrame([row]), keys=("b",), unit=("mean_ranker", "risk_aware", "valid_value"), nonneg=("n",)
    )
