"""One sentence per section of an assessment, written from the numbers of its tables (never typed in).

:func:`findings` returns one row per section: ``section``, ``finding`` (the sentence),
``value`` / ``lo`` / ``hi`` (the number the sentence is about and its 95% interval, NaN where
there is none).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["SECTIONS", "findings"]

RANKING, CALIBRATION, THRESHOLDS, ABSTAIN, CONFORMAL, RISK = (
    "ranking", "calibration", "thresholds", "answer or abstain", "conformal shortlists", "risk-aware ranking")
SECTIONS = (RANKING, CALIBRATION, THRESHOLDS, ABSTAIN, CONFORMAL, RISK)


def _pct(x: float) -> str:
    return f"{x:.0%}" if np.isfinite(x) else "n/a"


def _num(x: float) -> str:
    return f"{x:.3f}" if np.isfinite(x) else "n/a"


def _row(section: str, text: str, value: float = np.nan, lo: float = np.nan, hi: float = np.nan) -> dict:
    return {"section": section, "finding": text, "value": float(value), "lo": float(lo), "hi": float(hi)}


def _ranking(t: pd.DataFrame) -> dict:
    r = t.set_index("measure")
    r1, nd = r.loc["R@1"], r.loc[[m for m in r.index if m.startswith("nDCG")][0]]
    left = int(r1["left out"])
    tail = f" ({left} without a relevant document in the qrels left out)" if left else ""
    return _row(RANKING, f"On {int(r1['queries'])} test queries{tail}, R@1 was {_num(r1['value'])} "
                f"[{_num(r1['value lo'])}, {_num(r1['value hi'])}] and {nd.name} {_num(nd['value'])} "
                f"[{_num(nd['value lo'])}, {_num(nd['value hi'])}].", r1["value"], r1["value lo"], r1["value hi"])


def best_rate(base: pd.Series) -> str:
    """The base rate as a percentage, from the view's ``params`` (``p=...``)."""
    return f"{100 * float(str(base['params']).removeprefix('p=')):.2g}%"


def _calibration(t: pd.DataFrame) -> dict:
    fitted = t[(t["fitted_on"] != "") & (t["view"] != "base rate")].dropna(subset=["ECE"])
    best = fitted.loc[fitted["ECE"].idxmin()]
    given = t[t["view"] == "as given"].iloc[0]
    base = t[t["view"] == "base rate"].iloc[0]
    fit = (f"{best['view']} fitted on the validation queries gives ECE {_num(best['ECE'])} "
           f"[{_num(best['ECE lo'])}, {_num(best['ECE hi'])}] and Brier {_num(best['Brier'])} on the test queries, "
           f"where a constant at the validation base rate ({best_rate(base)}) gives ECE {_num(base['ECE'])} and Brier "
           f"{_num(base['Brier'])}")
    if not np.isfinite(given["ECE"]):
        return _row(CALIBRATION, f"The scores have no probability scale; {fit}.", best["ECE"], best["ECE lo"],
                    best["ECE hi"])
    return _row(CALIBRATION, f"As given, the probabilities have ECE {_num(given['ECE'])} [{_num(given['ECE lo'])}, "
                f"{_num(given['ECE hi'])}]; {fit}.", best["ECE"], best["ECE lo"], best["ECE hi"])


def _thresholds(ltt: pd.DataFrame) -> dict:
    r = ltt.iloc[0]
    if not r["certified"]:
        return _row(THRESHOLDS, f"No threshold is certified for precision >= {_pct(r['target precision'])}: "
                    f"{r['note']}.")
    scored = "scored" if r["probabilities"] == "as given" else f"given a {r['probabilities']} probability"
    return _row(THRESHOLDS, f"Candidates {scored} above {r['threshold']:.2f} (chosen on the validation queries for "
                f"precision >= {_pct(r['target precision'])} at {_pct(1 - r['delta'])} confidence) were relevant "
                f"{_pct(r['precision'])} [{_pct(r['precision lo'])}, {_pct(r['precision hi'])}] of the time on your "
                f"test queries, and kept {_pct(r['recall'])} of the relevant candidates.",
                r["precision"], r["precision lo"], r["precision hi"])


def _abstain(t: pd.DataFrame) -> dict:
    done = t.dropna(subset=["AURC"])
    risk_col = [c for c in t.columns if c.startswith("risk@") and not c.endswith((" lo", " hi"))][0]
    best = done.loc[done["AURC"].idxmin()]
    return _row(ABSTAIN, f"Answering only the {risk_col[5:]} most confident queries by {best['confidence']} gives "
                f"a top-1 error of {_pct(best[risk_col])} [{_pct(best[f'{risk_col} lo'])}, "
                f"{_pct(best[f'{risk_col} hi'])}] against {_pct(best['risk'])} when answering all; its AURC is "
                f"{_num(best['AURC'])} [{_num(best['AURC lo'])}, {_num(best['AURC hi'])}], the lowest of "
                f"{len(done)} confidences.", best["AURC"], best["AURC lo"], best["AURC hi"])


def _conformal(t: pd.DataFrame, alpha: float) -> dict:
    r = t.loc[(t["alpha"] - alpha).abs().idxmin()]
    if not np.isfinite(r["qhat"]):
        return _row(CONFORMAL, f"Shortlists for {_pct(1 - alpha)} coverage: {r['note']}.")
    nota = ""
    if r["NOTA queries"]:
        nota = (f"; an empty list said 'none of the above' on {_pct(r['NOTA recall'])} of the {int(r['NOTA queries'])} "
                f"queries without a relevant candidate and wrongly on {_pct(r['false NOTA'])} of the others")
    return _row(CONFORMAL, f"Shortlists calibrated on the validation queries for {_pct(1 - alpha)} coverage held a "
                f"relevant candidate for {_pct(r['coverage'])} [{_pct(r['coverage lo'])}, {_pct(r['coverage hi'])}] "
                f"of test queries with {r['mean set size']:.1f} candidates on average{nota}.",
                r["coverage"], r["coverage lo"], r["coverage hi"])


def _risk(t: pd.DataFrame) -> dict:
    if t.empty:
        return _row(RISK, "One score per candidate (no samples): no variance to re-rank with.")
    r = t.iloc[0]
    test = f"paired t-test p = {r['pvalue']:.3g}" if np.isfinite(r["pvalue"]) else r["note"].split(";")[0]
    return _row(RISK, f"Risk-aware re-ranking with b = {r['b']:g} (chosen on the validation queries) gives R@1 "
                f"{_num(r['risk_aware'])} against {_num(r['mean_ranker'])} for the mean ranker ({test}).",
                r["risk_aware"])


def findings(ranking: pd.DataFrame, calibration: pd.DataFrame, threshold: pd.DataFrame, abstain: pd.DataFrame,
             conformal: pd.DataFrame, risk_aware: pd.DataFrame, *, alpha: float) -> pd.DataFrame:
    """One sentence per section of :data:`SECTIONS`."""
    return pd.DataFrame([_ranking(ranking), _calibration(calibration), _thresholds(threshold), _abstain(abstain),
                         _conformal(conformal, alpha), _risk(risk_aware)])
