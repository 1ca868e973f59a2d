"""What query-level uncertainty is good for besides calibration: flagging shift, predicting performance.

For the signals of :data:`calibrank.study.analysis.practice.listwise.SIGNALS`: :func:`shift_detection`,
the AUROC (Hanley & McNeil 1982) of a signal for "shifted query" with a bootstrap interval
(:func:`auroc_interval`), and :func:`performance_prediction`, Kendall's tau-b between a signal
and the query's RR or R@1 (Carmel & Yom-Tov 2010). Protocol: docs/decisions.md, "Shift and
performance signals".
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np
import pandas as pd
from scipy import stats
from sklearn.metrics import roc_auc_score

from calibrank.methods import intervals
from calibrank.methods.listwise import SIGNALS, VARIANCE_SIGNALS, query_signals
from calibrank.study.analysis.calibration import default_condition
from calibrank.study.analysis.practice.cells import CELL, rows_problems
from calibrank.table_checks import in_range, raise_problems, rows_failing

__all__ = ["auroc_interval", "performance_prediction", "shift_detection"]


def _signals_of(pred) -> list[str]:
    return [s for s in SIGNALS if pred.n_samples > 1 or s not in VARIANCE_SIGNALS]


def auroc_interval(
    negative: np.ndarray, positive: np.ndarray, *, paired: bool, seed: int, n_resamples: int = intervals.N_RESAMPLES
) -> tuple[float, float]:
    """95% bootstrap interval of the AUROC over queries; ``paired``: row ``i`` of both is the same query.

    Each resample's AUROC comes from its query counts in sorted order: the rank AUROC of the resampled arrays
    (tests/oracles.py checks it), without ranking each resample.
    """
    neg = np.asarray(negative, dtype=np.float64).reshape(-1)
    pos = np.asarray(positive, dtype=np.float64).reshape(-1)
    n0, n1 = neg.size, pos.size
    by_value = np.argsort(neg, kind="stable")
    below = np.searchsorted(neg[by_value], pos, side="left")  # negatives < positive_j
    upto = np.searchsorted(neg[by_value], pos, side="right")  # negatives <= positive_j

    def counts(idx, n):
        idx = np.asarray(idx).astype(np.int64).reshape(-1, n)
        rows = idx.shape[0]
        return np.bincount((idx + n * np.arange(rows)[:, None]).ravel(), minlength=rows * n).reshape(rows, n)

    def auc(c0, c1):
        cum = np.zeros((c0.shape[0], n0 + 1))
        np.cumsum(c0[:, by_value], axis=1, out=cum[:, 1:])
        return (c1 * (cum[:, below] + 0.5 * (cum[:, upto] - cum[:, below]))).sum(axis=1) / (n0 * n1)

    statistic: Callable[..., np.ndarray]
    data: tuple[np.ndarray, ...]
    if paired:
        if n0 != n1:
            raise ValueError(f"paired samples must have one value per query each; got {n0} and {n1}")

        def one_sample(idx, axis=-1):
            c = counts(np.moveaxis(idx, axis, -1), n0)
            return auc(c, c)

        statistic, data = one_sample, (np.arange(n0),)
    else:

        def two_samples(i0, i1, axis=-1):
            return auc(counts(np.moveaxis(i0, axis, -1), n0), counts(np.moveaxis(i1, axis, -1), n1))

        statistic, data = two_samples, (np.arange(n0), np.arange(n1))
    lo, hi = intervals.bootstrap_interval(data, statistic, paired=False, seed=seed, n_resamples=n_resamples)
    return float(lo), float(hi)


def _aligned(sig_in: pd.DataFrame, sig_out: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, bool]:
    """Both tables in the same query order and ``True`` when they hold the same query ids, else unchanged and ``False``."""
    if len(sig_in) == len(sig_out) and set(sig_in["qid"]) == set(sig_out["qid"]) and sig_in["qid"].is_unique:
        return sig_in.sort_values("qid", kind="stable"), sig_out.sort_values("qid", kind="stable"), True
    return sig_in, sig_out, False


def shift_detection(
    study, rankers: Iterable[str] | None = None, *, n_resamples: int = intervals.N_RESAMPLES
) -> pd.DataFrame:
    """AUROC of each signal for "this test query is from a shifted condition", per ranker x shifted condition.

    Columns ``AUROC`` with ``AUROC lo`` / ``hi`` (bootstrap over queries), ``paired``, the query
    counts and mean signal of both sides (main training seed). Raises
    :class:`~calibrank.table_checks.TableError` naming a row that breaks :func:`_shift_problems`.
    """
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
                a_in, a_out, paired = _aligned(sig_in, sig_out)
                y = np.r_[np.zeros(len(sig_in)), np.ones(len(sig_out))]
                for s in _signals_of(base):
                    x = np.r_[sig_in[s].to_numpy(), sig_out[s].to_numpy()]
                    auc = roc_auc_score(y, x) if np.ptp(x) > 0 else 0.5
                    lo, hi = auroc_interval(
                        a_in[s].to_numpy(),
                        a_out[s].to_numpy(),
                        paired=paired,
                        seed=study.cfg.seed,
                        n_resamples=n_resamples,
                    )
                    rows.append(
                        {
                            "ranker": ranker,
                            "train_corpus": tc,
                            "corpus": cond.corpus,
                            "sampler": cond.sampler,
                            "shift": study.shift(cond, tc),
                            "signal": s,
                            "AUROC": float(auc),
                            "AUROC lo": lo,
                            "AUROC hi": hi,
                            "paired": paired,
                            "in-distribution queries": len(sig_in),
                            "shifted queries": len(sig_out),
                            "mean signal in distribution": float(sig_in[s].mean()),
                            "mean signal shifted": float(sig_out[s].mean()),
                        }
                    )
    table = pd.DataFrame(rows)
    raise_problems(_shift_problems(study, table, rankers))
    return table


def performance_prediction(study, rankers: Iterable[str] | None = None) -> pd.DataFrame:
    """Kendall's tau-b between each signal and each query's ``RR`` and ``R@1``, per ranker x test condition.

    Columns ``tau RR``, ``p RR``, ``tau R@1``, ``p R@1``; tau is NaN on a constant signal or target.
    Raises :class:`~calibrank.table_checks.TableError` naming a row that breaks :func:`_performance_problems`.
    """
    rows = []
    for ranker, tc, cond in study.cells("test", rankers):
        pred = study.get(ranker, tc, cond)
        sig = query_signals(pred)
        for s in _signals_of(pred):
            row = {
                "ranker": ranker,
                "train_corpus": tc,
                "corpus": cond.corpus,
                "sampler": cond.sampler,
                "shift": study.shift(cond, tc),
                "signal": s,
                "queries": len(sig),
            }
            for target in ("RR", "R@1"):
                x, y = sig[s].to_numpy(), sig[target].to_numpy()
                if np.ptp(x) == 0 or np.ptp(y) == 0:
                    tau, p = np.nan, np.nan
                else:
                    res = stats.kendalltau(x, y)
                    tau, p = float(res.statistic), float(res.pvalue)
                row[f"tau {target}"], row[f"p {target}"] = tau, p
            rows.append(row)
    table = pd.DataFrame(rows)
    raise_problems(_performance_problems(study, table, rankers))
    return table


def _expected_signals(study, rankers: Iterable[str] | None, shifted_only: bool) -> list[tuple]:
    """The rows of :data:`CELL` and ``signal`` the study implies: the variance signals for its rankers with S > 1
    only; with ``shifted_only``, the test conditions other than each training corpus's in-distribution one."""
    stochastic = set(study.stochastic_rankers())
    home = {tc: default_condition(study, tc).name for tc in study.train_corpora}
    return [
        (r, tc, c.corpus, c.sampler, s)
        for r, tc, c in study.cells("test", rankers)
        if not (shifted_only and c.name == home[tc])
        for s in SIGNALS
        if r in stochastic or s not in VARIANCE_SIGNALS
    ]


def _shift_problems(study, table: pd.DataFrame, rankers: Iterable[str] | None) -> list[str]:
    """One row per ranker x training corpus x shifted condition x signal, each a shifted condition by
    :meth:`~calibrank.study.analysis.load.Study.shift`; AUROC in [0, 1] inside an ordered interval."""
    name, keys = "shift detection", (*CELL, "signal")
    problems = rows_problems(
        name,
        table,
        keys,
        _expected_signals(study, rankers, shifted_only=True),
        what="ranker x training corpus x shifted condition x its signals",
    )
    if table.empty:
        return problems
    problems += rows_failing(
        name, table, table["shift"] != "in distribution", keys, "a shifted condition (not 'in distribution')", ["shift"]
    )
    problems += in_range(name, table, "AUROC", keys, 0, 1)
    problems += rows_failing(
        name, table, table["AUROC lo"] <= table["AUROC hi"], keys, "AUROC lo <= AUROC hi", ["AUROC lo", "AUROC hi"]
    )
    return problems


def _performance_problems(study, table: pd.DataFrame, rankers: Iterable[str] | None) -> list[str]:
    """One row per cell and signal; tau in [-1, 1] and p-values in [0, 1], NaN where a signal is constant."""
    name, keys = "performance prediction", (*CELL, "signal")
    problems = rows_problems(
        name,
        table,
        keys,
        _expected_signals(study, rankers, shifted_only=False),
        what="ranker x test condition x its signals",
    )
    if table.empty:
        return problems
    for col, (low, high) in {"tau RR": (-1, 1), "tau R@1": (-1, 1), "p RR": (0, 1), "p R@1": (0, 1)}.items():
        problems += in_range(name, table, col, keys, low, high, allow_nan=True)
    return problems
