"""One sentence per finding of notebook 08, written from the numbers of its tables (never typed in).

:func:`findings_table` needs the tables of :data:`REQUIRED` and uses those of :data:`OPTIONAL`
when given. Its columns: docs/decisions.md, "Findings of notebook 08".
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from calibrank.study.analysis.practice.recalibrate import recalibration_best
from calibrank.table_checks import raise_problems, rows_failing

__all__ = ["OPTIONAL", "REQUIRED", "SECTIONS", "findings_table"]

REQUIRED = (
    "prior_summary",
    "prior_by_negatives",
    "recalibration",
    "selective",
    "conformal",
    "shift_detection",
    "performance_prediction",
    "listwise",
)
OPTIONAL = ("nota_conformal", "nota_threshold")
IN = "in distribution"

PRIOR_SHIFT = "1 prior shift"
RECALIBRATION = "2 recalibration"
ABSTAIN = "3 answer or abstain"
CONFORMAL = "4 conformal shortlists"
FLAGGING = "5 flagging shift"
PERFORMANCE = "6 performance prediction"
LISTWISE = "7 listwise calibration"
NOTA = "8 none of the above"
SECTIONS = (PRIOR_SHIFT, RECALIBRATION, ABSTAIN, CONFORMAL, FLAGGING, PERFORMANCE, LISTWISE, NOTA)
"""The sections of the findings table, in order; the last (none of the above) only when :data:`OPTIONAL` tables are given."""
_SOURCE = {
    PRIOR_SHIFT: "prior_summary",
    RECALIBRATION: "recalibration",
    ABSTAIN: "selective",
    CONFORMAL: "conformal",
    FLAGGING: "shift_detection",
    PERFORMANCE: "performance_prediction",
    LISTWISE: "listwise",
    NOTA: "nota_threshold",
}
"""The table whose rows always give a section at least one finding."""


def _pct(x: float) -> str:
    return f"{x:.0%}" if np.isfinite(x) else "n/a"


def _num(x: float) -> str:
    return f"{x:.3f}" if np.isfinite(x) else "n/a"


def _row(
    section: str,
    finding: str,
    ranker: str = "all",
    value: float = np.nan,
    lo: float = np.nan,
    hi: float = np.nan,
    reference: float = np.nan,
    cells: int = 1,
) -> dict:
    return {
        "section": section,
        "finding": finding,
        "ranker": ranker,
        "value": float(value),
        "lo": float(lo),
        "hi": float(hi),
        "reference": float(reference),
        "cells": int(cells),
    }


def _prior(summary: pd.DataFrame, by_n: pd.DataFrame) -> list[dict]:
    rows = []
    k = int(summary["K"].iloc[0]) - 1 if len(summary) else 0
    for _, r in summary[summary["shift"] == IN].iterrows():
        rows.append(
            _row(
                PRIOR_SHIFT,
                f"Prior correction removes {_pct(r['removed'])} [{_pct(r['removed lo'])}, {_pct(r['removed hi'])}] "
                f"of {r['ranker']}'s ECE at 1:{k} in distribution ({_num(r['ECE raw'])} -> {_num(r['ECE corrected'])})",
                r["ranker"],
                r["removed"],
                r["removed lo"],
                r["removed hi"],
                r["ECE raw"],
            )
        )
    shifted = summary[summary["shift"] != IN]
    if len(shifted):
        rows.append(
            _row(
                PRIOR_SHIFT,
                f"Under shift it removes {_pct(shifted['removed'].median())} of the ECE at 1:{k} (median over "
                f"{len(shifted)} ranker x condition cells; range {_pct(shifted['removed'].min())} to "
                f"{_pct(shifted['removed'].max())})",
                "all",
                shifted["removed"].median(),
                shifted["removed"].min(),
                shifted["removed"].max(),
                np.nan,
                len(shifted),
            )
        )
    ind = by_n[by_n["shift"] == IN]
    if len(ind):
        g = ind.groupby("n_nonrel")[["ECE raw", "ECE corrected"]].mean()
        lo_n, hi_n = int(g.index.min()), int(g.index.max())
        rows.append(
            _row(
                PRIOR_SHIFT,
                f"In distribution the mean ECE over rankers grows from {_num(g.loc[lo_n, 'ECE raw'])} at 1:{lo_n} "
                f"to {_num(g.loc[hi_n, 'ECE raw'])} at 1:{hi_n} uncorrected; corrected it stays between "
                f"{_num(g['ECE corrected'].min())} and {_num(g['ECE corrected'].max())}: the growth is the prior",
                "all",
                g.loc[hi_n, "ECE raw"],
                g["ECE corrected"].min(),
                g["ECE corrected"].max(),
                g.loc[lo_n, "ECE raw"],
                ind["ranker"].nunique(),
            )
        )
    return rows


def _recalibration(table: pd.DataFrame) -> list[dict]:
    rows = []
    best = recalibration_best(table)
    for setting, grp in best.groupby("setting", sort=False):
        top = grp.sort_values("mean ECE").iloc[0]
        none = grp[grp["method"] == "none"]
        ref = float(none["mean ECE"].iloc[0]) if len(none) else np.nan
        most = grp.sort_values("cells won", ascending=False).iloc[0]
        rows.append(
            _row(
                RECALIBRATION,
                f"{setting.capitalize()}, {top['method']} has the lowest mean ECE ({_num(top['mean ECE'])}, "
                f"uncorrected {_num(ref)}); {most['method']} is best in the most cells "
                f"({int(most['cells won'])} of {int(most['cells'])})",
                "all",
                top["mean ECE"],
                reference=ref,
                cells=int(top["cells"]),
            )
        )
    temp = best[(best["method"] == "temperature") & (best["setting"] == IN)]
    none = best[(best["method"] == "none") & (best["setting"] == IN)]
    if len(temp) and len(none):
        rows.append(
            _row(
                RECALIBRATION,
                f"Temperature scaling (no bias term) leaves the in-distribution ECE at {_num(temp['mean ECE'].iloc[0])} "
                f"(uncorrected {_num(none['mean ECE'].iloc[0])}): a temperature cannot move probabilities "
                "towards a new base rate",
                "all",
                temp["mean ECE"].iloc[0],
                reference=none["mean ECE"].iloc[0],
                cells=int(temp["cells"].iloc[0]),
            )
        )
    return rows


def _separated(a: pd.DataFrame, b: pd.DataFrame, keys: list[str], col: str) -> tuple[int, int, int]:
    """``(cells, a below b, a above b)``: cells of both and how often ``a``'s 95% interval of ``col`` lies entirely below / above ``b``'s."""
    if f"{col} lo" not in a.columns or f"{col} lo" not in b.columns:
        return len(a.merge(b[keys], on=keys)), 0, 0
    m = a.merge(b[keys + [col, f"{col} lo", f"{col} hi"]], on=keys, suffixes=("", " ref"))
    return len(m), int((m[f"{col} hi"] < m[f"{col} lo ref"]).sum()), int((m[f"{col} lo"] > m[f"{col} hi ref"]).sum())


def _selective(table: pd.DataFrame) -> list[dict]:
    rows: list[dict] = []
    if table.empty:
        return rows
    keys = ["ranker", "train_corpus", "corpus", "sampler"]
    win = table.loc[table.groupby(keys)["AURC"].idxmin(), "confidence"].value_counts()
    cells = table[keys].drop_duplicates().shape[0]
    mean = table.groupby("confidence")["AURC"].mean().sort_values()
    best = win.index[0]
    ref = "top prob" if best != "top prob" else next((c for c in mean.index if c != best), best)
    n, below, above = _separated(table[table["confidence"] == best], table[table["confidence"] == ref], keys, "AURC")
    rows.append(
        _row(
            ABSTAIN,
            f"{best} is the best confidence for abstaining (lowest AURC in {int(win.iloc[0])} of {cells} "
            f"cells; mean AURC {_num(mean.get(best, np.nan))}, {ref} {_num(mean.get(ref, np.nan))}); "
            f"its 95% interval lies below {ref}'s in {below} of {n} cells and above it in {above}",
            "all",
            mean.get(best, np.nan),
            reference=mean.get(ref, np.nan),
            cells=cells,
        )
    )
    if "-top var" in mean.index:
        var, top = table[table["confidence"] == "-top var"], table[table["confidence"] == "top prob"]
        m = var.merge(top[keys + ["AURC"]], on=keys, suffixes=("", " top prob"))
        n, below, above = _separated(var, top, keys, "AURC")
        rows.append(
            _row(
                ABSTAIN,
                f"Minus the predictive variance of the top candidate has a lower AURC than its probability in "
                f"{int((m['AURC'] < m['AURC top prob']).sum())} of {len(m)} cells (mean {_num(m['AURC'].mean())} "
                f"vs {_num(m['AURC top prob'].mean())}); the 95% intervals separate them in {below} cells "
                f"(variance better) and {above} (variance worse)",
                "all",
                m["AURC"].mean(),
                reference=m["AURC top prob"].mean(),
                cells=len(m),
            )
        )
    risk = [c for c in table.columns if c.startswith("risk@") and not c.endswith((" lo", " hi"))][0]
    ind = table[(table["shift"] == IN) & (table["confidence"] == "top prob")]
    for _, r in ind.iterrows():
        lo, hi = r.get(f"{risk} lo", np.nan), r.get(f"{risk} hi", np.nan)
        rows.append(
            _row(
                ABSTAIN,
                f"Answering only the {risk[5:]} most confident queries (top prob) changes {r['ranker']}'s error "
                f"in distribution from {_num(r['risk'])} to {_num(r[risk])} [{_num(lo)}, {_num(hi)}] "
                f"(E-AURC {_num(r['E-AURC'])})",
                r["ranker"],
                r[risk],
                lo,
                hi,
                reference=r["risk"],
            )
        )
    return rows


def _conformal(table: pd.DataFrame) -> list[dict]:
    rows = []
    for (score, alpha), grp in table.groupby(["score", "alpha"], sort=False):
        ind = grp[grp["shift"] == IN]
        sh = grp[grp["shift"] != IN]
        rows.append(
            _row(
                CONFORMAL,
                f"{score} at alpha={alpha:g}: in distribution coverage {_num(ind['coverage'].min())} to "
                f"{_num(ind['coverage'].max())} over rankers (target {1 - alpha:.2f}), mean set size "
                f"{ind['mean set size'].mean():.1f} of {int(grp['K'].iloc[0])} candidates",
                "all",
                ind["coverage"].mean(),
                ind["coverage"].min(),
                ind["coverage"].max(),
                1 - alpha,
                len(ind),
            )
        )
        if len(sh):
            worst = sh.sort_values("coverage").iloc[0]
            rows.append(
                _row(
                    CONFORMAL,
                    f"{score} at alpha={alpha:g}: under shift coverage is significantly below {1 - alpha:.2f} in "
                    f"{int(sh['below target'].sum())} of {len(sh)} cells (lowest {_num(worst['coverage'])}, "
                    f"{worst['ranker']} on {worst['corpus']} · {worst['sampler']}); the guarantee needs exchangeable queries",
                    "all",
                    worst["coverage"],
                    worst["coverage lo"],
                    worst["coverage hi"],
                    1 - alpha,
                    len(sh),
                )
            )
    return rows


def _shift(table: pd.DataFrame) -> list[dict]:
    rows = []
    keys = ["ranker", "train_corpus", "corpus", "sampler"]
    for shift, grp in table.groupby("shift", sort=False):
        m = grp.groupby("signal")["AUROC"].mean().sort_values(ascending=False)
        best = grp.sort_values("AUROC", ascending=False).iloc[0]
        top = m.index[0]
        ref = "1 - max prob" if top != "1 - max prob" else next((s for s in m.index if s != top), top)
        n, below, above = _separated(grp[grp["signal"] == top], grp[grp["signal"] == ref], keys, "AUROC")
        sig = grp[grp["signal"] == top]
        above_chance = int((sig["AUROC lo"] > 0.5).sum()) if "AUROC lo" in sig else 0
        blo, bhi = best.get("AUROC lo", np.nan), best.get("AUROC hi", np.nan)
        rows.append(
            _row(
                FLAGGING,
                f"{shift}: {top} flags shifted queries best on average (AUROC {_num(m.iloc[0])}; "
                f"{ref} {_num(m.get(ref, np.nan))}), its 95% interval above {ref}'s in {above} of {n} cells "
                f"and below in {below}, above chance (0.5) in {above_chance} of {len(sig)}; best single cell "
                f"{best['ranker']} with {best['signal']} ({_num(best['AUROC'])} [{_num(blo)}, {_num(bhi)}])",
                "all",
                m.iloc[0],
                reference=m.get(ref, np.nan),
                cells=len(grp),
            )
        )
    return rows


def _qpp(table: pd.DataFrame) -> list[dict]:
    rows = []
    for signal, grp in table.groupby("signal", sort=False):
        tau = grp["tau RR"]
        sig = int(((grp["p RR"] < 0.05) & (tau < 0)).sum())
        rows.append(
            _row(
                PERFORMANCE,
                f"{signal}: mean Kendall tau with the reciprocal rank {_num(tau.mean())} (negative and p < 0.05 in "
                f"{sig} of {len(grp)} cells)",
                "all",
                tau.mean(),
                tau.min(),
                tau.max(),
                cells=len(grp),
            )
        )
    return rows


def _listwise(table: pd.DataFrame) -> list[dict]:
    rows = []
    for setting, grp in table.assign(s=np.where(table["shift"] == IN, IN, "under shift")).groupby("s", sort=False):
        over = int((grp["mean confidence"] > grp["R@1"]).sum())
        rows.append(
            _row(
                LISTWISE,
                f"{setting.capitalize()}: top-label ECE of the candidate softmax {_num(grp['top-label ECE'].mean())} "
                f"beside pointwise ECE {_num(grp['pointwise ECE'].mean())} (means over cells); over-confident "
                f"(mean confidence > R@1) in {over} of {len(grp)} cells",
                "all",
                grp["top-label ECE"].mean(),
                grp["top-label ECE"].min(),
                grp["top-label ECE"].max(),
                grp["pointwise ECE"].mean(),
                len(grp),
            )
        )
    return rows


def _nota_conformal(table: pd.DataFrame) -> list[dict]:
    rows: list[dict] = []
    if table.empty:
        return rows
    for (view, alpha), grp in table.groupby(["view", "alpha"], sort=False):
        ind = grp[(grp["shift"] == IN) & grp["coverage"].notna()]
        if ind.empty:
            continue
        forest = grp[grp["F1 forest"].notna() & grp["F1"].notna()]
        vs = ""
        if len(forest):
            names = ", ".join(dict.fromkeys(forest["ranker"]))
            vs = (
                f"; on the {len(forest)} NOTA conditions where notebook 06's random forest was run ({names}) "
                f"macro-F1 {_num(forest['F1'].mean())} against the forest's {_num(forest['F1 forest'].mean())}, "
                f"higher in {int((forest['F1'] > forest['F1 forest']).sum())}"
            )
        rows.append(
            _row(
                NOTA,
                f"Empty LAC set as NOTA ({view} probabilities, alpha={alpha:g}): in distribution the true "
                f"response is in the set of {_num(ind['coverage'].min())} to {_num(ind['coverage'].max())} of "
                f"answerable queries over rankers (target {1 - alpha:.2f}), false NOTA at most "
                f"{_num(ind['false NOTA'].max())} (bound {alpha:g}), NOTA recall {_num(ind['NOTA recall'].mean())} "
                f"and macro-F1 {_num(ind['F1'].mean())} on average{vs}",
                "all",
                ind["F1"].mean(),
                ind["F1"].min(),
                ind["F1"].max(),
                forest["F1 forest"].mean() if len(forest) else np.nan,
                len(ind),
            )
        )
    return rows


def _nota_threshold(table: pd.DataFrame) -> list[dict]:
    rows: list[dict] = []
    if table.empty:
        return rows
    for risk, grp in table.groupby("risk", sort=False):
        target, delta = float(grp["target"].iloc[0]), float(grp["delta"].iloc[0])
        per_ranker = grp.groupby(["ranker", "train_corpus"])["certified"].first()
        ind, sh = grp[grp["shift"] == IN], grp[grp["shift"] != IN]
        head = (
            f"Learn then Test ({risk} <= {target:g} with probability >= {1 - delta:g}): a threshold is certified for "
            f"{int(per_ranker.sum())} of {len(per_ranker)} rankers"
        )
        if not ind["achieved risk"].notna().any():
            all_risk = ind["risk answering all"]
            rows.append(
                _row(
                    NOTA,
                    f"{head}; without one the rule abstains on every query (answering every in-distribution "
                    f"query is wrong on {_num(all_risk.min())} to {_num(all_risk.max())} of them)",
                    "all",
                    np.nan,
                    reference=target,
                    cells=len(ind),
                )
            )
            continue
        ok = ind[ind["achieved risk"].notna()]
        text = (
            f"{head}; in distribution the achieved {risk} rate is {_num(ok['achieved risk'].min())} to "
            f"{_num(ok['achieved risk'].max())} (its 95% interval above the target in {int(ok['above target'].sum())} "
            f"of {len(ok)} cells), abstaining on {_pct(ind['abstention'].mean())} of queries with NOTA macro-F1 "
            f"{_num(ind['F1'].mean())} on average"
        )
        shown = sh[sh["achieved risk"].notna()]
        if len(shown):
            worst = shown.sort_values("achieved risk", ascending=False).iloc[0]
            text += (
                f"; under shift the interval is above the target in {int(shown['above target'].sum())} of "
                f"{len(shown)} cells (highest {_num(worst['achieved risk'])}, {worst['ranker']} on "
                f"{worst['corpus']} · {worst['sampler']})"
            )
        rows.append(
            _row(
                NOTA,
                text,
                "all",
                ok["achieved risk"].mean(),
                ok["achieved risk"].min(),
                ok["achieved risk"].max(),
                target,
                len(ok),
            )
        )
    return rows


def findings_table(tables: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Every finding as one row (see the module docstring); ``tables`` holds each key of :data:`REQUIRED`
    and optionally those of :data:`OPTIONAL`. Raises :class:`~calibrank.table_checks.TableError` when a
    section whose table has rows has no finding, or a finding is not a sentence with a number about at
    least one cell."""
    missing = [k for k in REQUIRED if k not in tables]
    if missing:
        raise KeyError(f"findings_table needs the tables {list(REQUIRED)}; missing {missing}")
    unknown = [k for k in tables if k not in REQUIRED + OPTIONAL]
    if unknown:
        raise KeyError(f"findings_table takes the tables {list(REQUIRED + OPTIONAL)}; unknown {unknown}")
    rows = (
        _prior(tables["prior_summary"], tables["prior_by_negatives"])
        + _recalibration(tables["recalibration"])
        + _selective(tables["selective"])
        + _conformal(tables["conformal"])
        + _shift(tables["shift_detection"])
        + _qpp(tables["performance_prediction"])
        + _listwise(tables["listwise"])
    )
    if "nota_conformal" in tables:
        rows += _nota_conformal(tables["nota_conformal"])
    if "nota_threshold" in tables:
        rows += _nota_threshold(tables["nota_threshold"])
    found = pd.DataFrame(rows, columns=["section", "finding", "ranker", "value", "lo", "hi", "reference", "cells"])
    raise_problems(_problems(found, tables))
    return found


def _problems(found: pd.DataFrame, tables: Mapping[str, pd.DataFrame]) -> list[str]:
    """A finding for each section whose table (:data:`_SOURCE`) has rows; each a sentence (more than 20
    characters) with a number, about at least one cell."""
    name, keys = "findings", ("section", "ranker")
    have = set(found["section"])
    problems = [
        f"{name}: expected a finding of section {section!r} (its table {src!r} has {len(tables[src])} rows), found none"
        for section, src in _SOURCE.items()
        if src in tables and len(tables[src]) and section not in have
    ]
    text = found["finding"].astype("string")
    problems += rows_failing(
        name, found, text.str.len() > 20, keys, "a sentence (more than 20 characters)", ["finding"]
    )
    problems += rows_failing(name, found, text.str.contains(r"\d"), keys, "a finding with a number", ["finding"])
    problems += rows_failing(name, found, found["cells"] >= 1, keys, "cells >= 1", ["cells"])
    return problems
