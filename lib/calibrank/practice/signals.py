"""What query-level uncertainty is good for besides calibration: flagging shift, predicting performance.

Signals: :data:`calibrank.practice.listwise.SIGNALS` (larger = more uncertain); the variance
signals exist for rankers with S > 1 only, and are skipped (no row) otherwise.

- :func:`shift_detection`: can a signal tell queries of a shifted test condition from
  in-distribution ones? The AUROC (sklearn ``roc_auc_score``; Hanley & McNeil 1982) of the
  signal for the label "shifted query", in-distribution queries = the training corpus with the
  training sampler. 0.5 = no better than chance; below 0.5 = the ranker is *more* confident
  on the shifted queries.
- :func:`performance_prediction`: uncertainty as query performance prediction (Carmel &
  Yom-Tov 2010). Kendall's tau-b (scipy ``kendalltau``; Kendall 1945, tau-b handles the ties
  of a 0/1 R@1) between the signal and the query's reciprocal rank or R@1; a useful signal has
  tau < 0 (more uncertain, worse ranked).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd
from scipy import stats
from sklearn.metrics import roc_auc_score

from .listwise import SIGNALS, VARIANCE_SIGNALS, query_signals

__all__ = ["performance_prediction", "shift_detection"]


def _signals_of(pred) -> list[str]:
    return [s for s in SIGNALS if pred.n_samples > 1 or s not in VARIANCE_SIGNALS]


def shift_detection(study, rankers: Iterable[str] | None = None) -> pd.DataFrame:
    """AUROC of each signal for "this test query is from a shifted condition", per ranker x shifted condition.

    One row per ranker x training corpus x shifted test condition x signal (main training seed),
    with ``AUROC``, ``in-distribution queries``, ``shifted queries`` and the mean signal on each side.
    """
    from ..study import default_condition

    rows = []
    for ranker in rankers if rankers is not None else study.rankers:
        for tc in study.train_corpora:
            home = default_condition(study, tc)
            base = study.get(ranker, tc, home)
            sig_in = query_signals(base)
            for cond in study.test_conditions("test"):
                if cond.name == home.name or (ranker, tc, cond.name) not in study.paths:
                    continue
                sig_out = query_signals(study.get(ranker, tc, cond))
                y = np.r_[np.zeros(len(sig_in)), np.ones(len(sig_out))]
                for s in _signals_of(base):
                    x = np.r_[sig_in[s].to_numpy(), sig_out[s].to_numpy()]
                    auc = roc_auc_score(y, x) if np.ptp(x) > 0 else 0.5
                    rows.append({"ranker": ranker, "train_corpus": tc, "corpus": cond.corpus, "sampler": cond.sampler,
                                 "shift": study.shift(cond, tc), "signal": s, "AUROC": float(auc),
                                 "in-distribution queries": len(sig_in), "shifted queries": len(sig_out),
                                 "mean signal in distribution": float(sig_in[s].mean()),
                                 "mean signal shifted": float(sig_out[s].mean())})
    return pd.DataFrame(rows)


def performance_prediction(study, rankers: Iterable[str] | None = None) -> pd.DataFrame:
    """Kendall's tau-b between each signal and each query's ``RR`` and ``R@1``, per ranker x test condition.

    Columns ``tau RR``, ``p RR``, ``tau R@1``, ``p R@1`` (two-sided p-values of scipy); tau is NaN
    when the signal or the target is constant on the condition.
    """
    rows = []
    for ranker, tc, cond in study.cells("test", rankers):
        pred = study.get(ranker, tc, cond)
        sig = query_signals(pred)
        for s in _signals_of(pred):
            row = {"ranker": ranker, "train_corpus": tc, "corpus": cond.corpus, "sampler": cond.sampler,
                   "shift": study.shift(cond, tc), "signal": s, "queries": len(sig)}
            for target in ("RR", "R@1"):
                x, y = sig[s].to_numpy(), sig[target].to_numpy()
                if np.ptp(x) == 0 or np.ptp(y) == 0:
                    tau, p = np.nan, np.nan
                else:
                    res = stats.kendalltau(x, y)
                    tau, p = float(res.statistic), float(res.pvalue)
                row[f"tau {target}"], row[f"p {target}"] = tau, p
            rows.append(row)
    return pd.DataFrame(rows)
