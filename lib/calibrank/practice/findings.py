"""One sentence per finding of notebook 08, written from the numbers of its tables (never typed in).

:func:`findings_table` takes the tables of :mod:`calibrank.practice` and returns one row per
finding: ``section``, ``finding`` (the sentence), ``ranker`` (or ``all``), ``value``, ``lo`` /
``hi`` (its 95% interval for a single cell where the table has one; for a number that
summarises several cells, their range), ``reference`` (the number it is compared with, e.g.
the uncorrected ECE or the target coverage) and ``cells`` (how many ranker x condition cells
the number summarises).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

__all__ = ["REQUIRED", "findings_table"]

REQUIRED = ("prior_summary", "prior_by_negatives", "recalibration", "selective", "conformal", "shift_detection",
            "performance_prediction", "listwise")
IN = "in distribution"


def _pct(x: float) -> str:
    return f"{x:.0%}" if np.isfinite(x) else "n/a"


def _num(x: float) -> str:
    return f"{x:.3f}" if np.isfinite(x) else "n/a"


def _row(section: str, finding: str, ranker: str = "all", value: float = np.nan, lo: float = np.nan, hi: float = np.nan,
         reference: float = np.nan, cells: int = 1) -> dict:
    return {"section": section, "finding": finding, "ranker": ranker, "value": float(value), "lo": float(lo),
            "hi": float(hi), "reference": float(reference), "cells": int(cells)}


def _prior(summary: pd.DataFrame, by_n: pd.DataFrame) -> list[dict]:
    rows = []
    k = int(summary["K"].iloc[0]) - 1 if len(summary) else 0
    for _, r in summary[summary["shift"] == IN].iterrows():
        rows.append(_row("1 prior shift",
                         f"Prior correction removes {_pct(r['removed'])} [{_pct(r['removed lo'])}, {_pct(r['removed hi'])}] "
                         f"of {r['ranker']}'s ECE at 1:{k} in distribution ({_num(r['ECE raw'])} -> {_num(r['ECE corrected'])})",
                         r["ranker"], r["removed"], r["removed lo"], r["removed hi"], r["ECE raw"]))
    shifted = summary[summary["shift"] != IN]
    if len(shifted):
        rows.append(_row("1 prior shift",
                         f"Under shift it removes {_pct(shifted['removed'].median())} of the ECE at 1:{k} (median over "
                         f"{len(shifted)} ranker x condition cells; range {_pct(shifted['removed'].min())} to "
                         f"{_pct(shifted['removed'].max())})", "all", shifted["removed"].median(),
                         shifted["removed"].min(), shifted["removed"].max(), np.nan, len(shifted)))
    ind = by_n[by_n["shift"] == IN]
    if len(ind):
        g = ind.groupby("n_nonrel")[["ECE raw", "ECE corrected"]].mean()
        lo_n, hi_n = int(g.index.min()), int(g.index.max())
        rows.append(_row("1 prior shift",
                         f"In distribution the mean ECE over rankers grows from {_num(g.loc[lo_n, 'ECE raw'])} at 1:{lo_n} "
                         f"to {_num(g.loc[hi_n, 'ECE raw'])} at 1:{hi_n} uncorrected; corrected it stays between "
                         f"{_num(g['ECE corrected'].min())} and {_num(g['ECE corrected'].max())}: the growth is the prior",
                         "all", g.loc[hi_n, "ECE raw"], g["ECE corrected"].min(), g["ECE corrected"].max(),
                         g.loc[lo_n, "ECE raw"], ind["ranker"].nunique()))
    return rows


def _recalibration(table: pd.DataFrame) -> list[dict]:
    from .recalibrate import recalibration_best

    rows = []
    best = recalibration_best(table)
    for setting, grp in best.groupby("setting", sort=False):
        top = grp.sort_values("mean ECE").iloc[0]
        none = grp[grp["method"] == "none"]
        ref = float(none["mean ECE"].iloc[0]) if len(none) else np.nan
        most = grp.sort_values("cells won", ascending=False).iloc[0]
        rows.append(_row("2 recalibration",
                         f"{setting.capitalize()}, {top['method']} has the lowest mean ECE ({_num(top['mean ECE'])}, "
                         f"uncorrected {_num(ref)}); {most['method']} is best in the most cells "
                         f"({int(most['cells won'])} of {int(most['cells'])})", "all", top["mean ECE"],
                         reference=ref, cells=int(top["cells"])))
    temp = best[(best["method"] == "temperature") & (best["setting"] == IN)]
    none = best[(best["method"] == "none") & (best["setting"] == IN)]
    if len(temp) and len(none):
        rows.append(_row("2 recalibration",
                         f"Temperature scaling (no bias term) leaves the in-distribution ECE at {_num(temp['mean ECE'].iloc[0])} "
                         f"(uncorrected {_num(none['mean ECE'].iloc[0])}): a temperature cannot move probabilities "
                         "towards a new base rate", "all", temp["mean ECE"].iloc[0], reference=none["mean ECE"].iloc[0],
                         cells=int(temp["cells"].iloc[0])))
    return rows


def _selective(table: pd.DataFrame) -> list[dict]:
    rows = []
    if table.empty:
        return rows
    keys = ["ranker", "train_corpus", "corpus", "sampler"]
    win = table.loc[table.groupby(keys)["AURC"].idxmin(), "confidence"].value_counts()
    cells = table[keys].drop_duplicates().shape[0]
    mean = table.groupby("confidence")["AURC"].mean().sort_values()
    rows.append(_row("3 answer or abstain",
                     f"{win.index[0]} is the best confidence for abstaining (lowest AURC in {int(win.iloc[0])} of {cells} "
                     f"cells; mean AURC {_num(mean.get(win.index[0], np.nan))}, top prob {_num(mean.get('top prob', np.nan))})",
                     "all", mean.get(win.index[0], np.nan), reference=mean.get("top prob", np.nan), cells=cells))
    if "-top var" in mean.index:
        var = table[table["confidence"] == "-top var"].merge(
            table[table["confidence"] == "top prob"][keys + ["AURC"]], on=keys, suffixes=("", " top prob"))
        rows.append(_row("3 answer or abstain",
                         f"The predictive variance of the top candidate ranks queries worse than its probability: "
                         f"lower AURC in {int((var['AURC'] < var['AURC top prob']).sum())} of {len(var)} cells",
                         "all", var["AURC"].mean(), reference=var["AURC top prob"].mean(), cells=len(var)))
    risk = [c for c in table.columns if c.startswith("risk@")][0]
    ind = table[(table["shift"] == IN) & (table["confidence"] == "top prob")]
    for _, r in ind.iterrows():
        rows.append(_row("3 answer or abstain",
                         f"Answering only the {risk[5:]} most confident queries (top prob) changes {r['ranker']}'s error "
                         f"in distribution from {_num(r['risk'])} to {_num(r[risk])} (E-AURC {_num(r['E-AURC'])})",
                         r["ranker"], r[risk], reference=r["risk"]))
    return rows


def _conformal(table: pd.DataFrame) -> list[dict]:
    rows = []
    for (score, alpha), grp in table.groupby(["score", "alpha"], sort=False):
        ind = grp[grp["shift"] == IN]
        sh = grp[grp["shift"] != IN]
        rows.append(_row("4 conformal shortlists",
                         f"{score} at alpha={alpha:g}: in distribution coverage {_num(ind['coverage'].min())} to "
                         f"{_num(ind['coverage'].max())} over rankers (target {1 - alpha:.2f}), mean set size "
                         f"{ind['mean set size'].mean():.1f} of {int(grp['K'].iloc[0])} candidates",
                         "all", ind["coverage"].mean(), ind["coverage"].min(), ind["coverage"].max(), 1 - alpha, len(ind)))
        if len(sh):
            worst = sh.sort_values("coverage").iloc[0]
            rows.append(_row("4 conformal shortlists",
                             f"{score} at alpha={alpha:g}: under shift coverage is significantly below {1 - alpha:.2f} in "
                             f"{int(sh['below target'].sum())} of {len(sh)} cells (lowest {_num(worst['coverage'])}, "
                             f"{worst['ranker']} on {worst['corpus']} · {worst['sampler']}); the guarantee needs exchangeable queries",
                             "all", worst["coverage"], worst["coverage lo"], worst["coverage hi"], 1 - alpha, len(sh)))
    return rows


def _shift(table: pd.DataFrame) -> list[dict]:
    rows = []
    for shift, grp in table.groupby("shift", sort=False):
        m = grp.groupby("signal")["AUROC"].mean().sort_values(ascending=False)
        best = grp.sort_values("AUROC", ascending=False).iloc[0]
        rows.append(_row("5 flagging shift",
                         f"{shift}: {m.index[0]} flags shifted queries best on average (AUROC {_num(m.iloc[0])}; "
                         f"1 - max prob {_num(m.get('1 - max prob', np.nan))}); best single cell {best['ranker']} "
                         f"with {best['signal']} ({_num(best['AUROC'])})", "all", m.iloc[0],
                         reference=m.get("1 - max prob", np.nan), cells=len(grp)))
    return rows


def _qpp(table: pd.DataFrame) -> list[dict]:
    rows = []
    for signal, grp in table.groupby("signal", sort=False):
        tau = grp["tau RR"]
        sig = int(((grp["p RR"] < 0.05) & (tau < 0)).sum())
        rows.append(_row("6 performance prediction",
                         f"{signal}: mean Kendall tau with the reciprocal rank {_num(tau.mean())} (negative and p < 0.05 in "
                         f"{sig} of {len(grp)} cells)", "all", tau.mean(), tau.min(), tau.max(), cells=len(grp)))
    return rows


def _listwise(table: pd.DataFrame) -> list[dict]:
    rows = []
    for setting, grp in table.assign(s=np.where(table["shift"] == IN, IN, "under shift")).groupby("s", sort=False):
        over = int((grp["mean confidence"] > grp["R@1"]).sum())
        rows.append(_row("7 listwise calibration",
                         f"{setting.capitalize()}: top-label ECE of the candidate softmax {_num(grp['top-label ECE'].mean())} "
                         f"beside pointwise ECE {_num(grp['pointwise ECE'].mean())} (means over cells); over-confident "
                         f"(mean confidence > R@1) in {over} of {len(grp)} cells", "all", grp["top-label ECE"].mean(),
                         grp["top-label ECE"].min(), grp["top-label ECE"].max(), grp["pointwise ECE"].mean(), len(grp)))
    return rows


def findings_table(tables: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Every finding as one row (see the module docstring); ``tables`` holds each key of :data:`REQUIRED`."""
    missing = [k for k in REQUIRED if k not in tables]
    if missing:
        raise KeyError(f"findings_table needs the tables {list(REQUIRED)}; missing {missing}")
    rows = (_prior(tables["prior_summary"], tables["prior_by_negatives"]) + _recalibration(tables["recalibration"])
            + _selective(tables["selective"]) + _conformal(tables["conformal"]) + _shift(tables["shift_detection"])
            + _qpp(tables["performance_prediction"]) + _listwise(tables["listwise"]))
    return pd.DataFrame(rows, columns=["section", "finding", "ranker", "value", "lo", "hi", "reference", "cells"])
