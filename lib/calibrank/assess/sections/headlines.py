"""One sentence per section of an assessment, written from the numbers of its tables (never typed in).

:func:`findings` returns one row per section: ``section``, ``finding`` (the sentence),
``value`` / ``lo`` / ``hi`` (the number the sentence is about and its 95% interval, NaN where
there is none). Every sentence about probabilities names the map that made them; every number is
written as :mod:`calibrank.assess.numbers` writes it in the tables, and every sentence about the abstain
rule reports what the rule does on the validation and test queries, not what it was asked to do.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from calibrank.assess.deploy.fit import TAIL
from calibrank.assess.numbers import count, interval, number, pct, pvalue, threshold

__all__ = ["SECTIONS", "findings"]

RANKING, CALIBRATION, THRESHOLDS, ABSTAIN, CONFORMAL, RISK = (
    "ranking",
    "calibration",
    "thresholds",
    "answer or abstain",
    "conformal shortlists",
    "risk-aware ranking",
)
SECTIONS = (RANKING, CALIBRATION, THRESHOLDS, ABSTAIN, CONFORMAL, RISK)


def _row(section: str, text: str, value: float = np.nan, lo: float = np.nan, hi: float = np.nan) -> dict:
    return {"section": section, "finding": text, "value": float(value), "lo": float(lo), "hi": float(hi)}


def _ranking(t: pd.DataFrame) -> dict:
    r = t.set_index("measure")
    r1, nd = r.loc["R@1"], r.loc[[m for m in r.index if m.startswith("nDCG")][0]]
    left = int(r1["left out"])
    tail = f" ({left} without a relevant document in the qrels left out)" if left else ""
    return _row(
        RANKING,
        f"On {int(r1['queries'])} test queries{tail}, R@1 was "
        f"{interval(r1['value'], r1['value lo'], r1['value hi'])} and {nd.name} "
        f"{interval(nd['value'], nd['value lo'], nd['value hi'])}.",
        r1["value"],
        r1["value lo"],
        r1["value hi"],
    )


def _calibration(t: pd.DataFrame, map_given: bool) -> dict:
    v = t.set_index("view")
    dep = t[t["deployed"]].iloc[0]
    base = v.loc["base rate"]
    how = "the one asked for" if map_given else "chosen on the validation queries by held-out Brier"
    text = (
        f"The deployed map, {dep['view']} ({how}), gives ECE "
        f"{interval(dep['ECE'], dep['ECE lo'], dep['ECE hi'])} and Brier {number(dep['Brier'])} on the test "
        f"queries, where a constant at the validation base rate ({pct(float(str(base['params'])[2:]))}) gives "
        f"Brier {number(base['Brier'])}"
    )
    given = v.loc["as given"] if "as given" in v.index else None
    if given is not None and np.isfinite(given["ECE"]) and dep["view"] != "as given":
        text += f"; as given, ECE is {interval(given['ECE'], given['ECE lo'], given['ECE hi'])}"
    elif given is not None and not np.isfinite(given["ECE"]):
        text = "The scores have no probability scale. " + text
    text += "." + _tails(dep)
    flagged = [f"{r['view']} ({r['flag']})" for _, r in t.iterrows() if r["flag"]]
    if flagged:
        text += " Flagged: " + "; ".join(flagged) + "."
    return _row(CALIBRATION, text, dep["ECE"], dep["ECE lo"], dep["ECE hi"])


def _tails(dep: pd.Series) -> str:
    """The sentence on the deployed map's thin tails: the test candidates whose probability rests on fewer than
    :data:`TAIL` validation candidates ('' for a map fitted on nothing)."""
    n = dep.get("beyond support", np.nan)
    if not np.isfinite(n):
        return ""
    if n == 0:
        return f" Every test candidate's probability rests on at least {TAIL} validation candidates."
    split = f"{count(dep['beyond support low'])} low, {count(dep['beyond support high'])} high"
    if dep["view"] == "isotonic":
        return (
            f" {count(n)} test candidates ({split}) score past the isotonic map's end blocks, each pooled to at "
            f"least {TAIL} validation candidates: there the map holds the end block's probability, though no "
            "validation candidate was that extreme."
        )
    return (
        f" {count(n)} test candidates ({split}) score past the {TAIL}th lowest or highest validation score: "
        f"there the {dep['view']} curve is extrapolated from the candidates in between, with fewer than {TAIL} "
        "validation candidates as extreme."
    )


def _thresholds(row: pd.DataFrame) -> dict:
    r = row.iloc[0]
    metric, what = r["metric"], f"{r['metric']} >= {pct(r['target'])}"
    if not r["certified"]:
        return _row(THRESHOLDS, f"No cutoff is certified for {what} at {pct(r['confidence'])} confidence: {r['note']}.")
    other = "recall" if metric == "precision" else "precision"
    return _row(
        THRESHOLDS,
        f"Keep candidates whose raw score is at least {threshold(r['cutoff'])} (probability "
        f"{number(r['probability'])} under the {r['map']} map): certified on the validation queries for "
        f"{what} at {pct(r['confidence'])} confidence; on the test queries it kept {count(r['test kept'])} "
        f"candidates, {metric} {interval(r[metric], r[f'{metric} lo'], r[f'{metric} hi'], pct)} and "
        f"{other} {interval(r[other], r[f'{other} lo'], r[f'{other} hi'], pct)}.",
        r[metric],
        r[f"{metric} lo"],
        r[f"{metric} hi"],
    )


def _unit(confidence: str, map_name: str) -> str:
    """What a list confidence of :data:`~calibrank.assess.deploy.calibrator.CONFIDENCES` is, in a few words."""
    if confidence == "top score":
        return "the raw score of its top candidate"
    if confidence == "margin":
        return f"its top {map_name} probability minus its second"
    return "the list model's probability that its top candidate is relevant"


def _abstain(scores: pd.DataFrame, rule: pd.DataFrame, map_name: str) -> dict:
    r = rule.iloc[0]
    text = (
        f"Answer a query when its {r['confidence']} ({_unit(r['confidence'], map_name)}) is at least "
        f"{threshold(r['cut'])}"
    )
    purpose = f"to {r['asked']}" if np.isfinite(r["asked coverage"]) else f"for a {r['asked']}"
    if np.isfinite(r.get("valid coverage", np.nan)):
        asked = (
            f"fitted there to answer at least {pct(r['asked coverage'])}"
            if np.isfinite(r["asked coverage"])
            else f"fitted there for a {r['asked']}"
        )
        text += f": on the validation queries ({asked}) it answers {pct(r['valid coverage'])} of them"
        if r["valid answered"] == r["valid queries"]:
            text += " (it never abstains there)"
        tied = r["valid tied at cut"]
        if tied >= 0.01 and tied * r["valid queries"] >= 2:  # a share of lists, not one, sits on the cut
            text += (
                f", {pct(tied)} of them having a {r['confidence']} of exactly {threshold(r['cut'])}, so no cut "
                f"answers between {pct(r['valid coverage'] - tied)} and {pct(r['valid coverage'])}"
            )
        text += ";"
    else:
        text += f" (fitted on the validation queries {purpose});"
    text += (
        f" on the test queries it answers {pct(r['coverage'])} of them with a top-1 error of "
        f"{interval(r['risk'], r['risk lo'], r['risk hi'], pct)}, against {pct(r['risk if all answered'])} "
        "when answering all."
    )
    return _row(ABSTAIN, text, r["risk"], r["risk lo"], r["risk hi"])


def _conformal(t: pd.DataFrame, map_name: str) -> dict:
    r = t[t["deployed"]].iloc[0]
    alpha = r["alpha"]
    if not np.isfinite(r["qhat"]):
        return _row(CONFORMAL, f"Shortlists for {pct(1 - alpha)} coverage: {r['note']}.")
    nota = ""
    if r["NOTA queries"]:
        nota = (
            f"; an empty list said 'none of the above' on {pct(r['NOTA recall'])} of the {int(r['NOTA queries'])} "
            f"queries without a relevant candidate and wrongly on {pct(r['false NOTA'])} of the others"
        )
    return _row(
        CONFORMAL,
        f"Shortlists calibrated on the validation queries ({map_name} probabilities) for "
        f"{pct(1 - alpha)} coverage held a relevant candidate for "
        f"{interval(r['coverage'], r['coverage lo'], r['coverage hi'], pct)} of test queries with "
        f"{number(r['mean set size'])} candidates on average{nota}.",
        r["coverage"],
        r["coverage lo"],
        r["coverage hi"],
    )


def _risk(t: pd.DataFrame, map_name: str) -> dict:
    if t.empty:
        return _row(RISK, "One score per candidate (no samples): no variance to re-rank with.")
    r = t.iloc[0]
    test = f"paired t-test p = {pvalue(r['pvalue'])}" if np.isfinite(r["pvalue"]) else r["note"].split(";")[0]
    return _row(
        RISK,
        f"Risk-aware re-ranking of the {map_name} probabilities with b = {r['b']:g} (chosen on the "
        f"validation queries) gives R@1 {number(r['risk_aware'])} against {number(r['mean_ranker'])} for the "
        f"mean ranker ({test}).",
        r["risk_aware"],
    )


def findings(
    ranking: pd.DataFrame,
    calibration: pd.DataFrame,
    threshold: pd.DataFrame,
    abstain: pd.DataFrame,
    abstain_rule: pd.DataFrame,
    conformal: pd.DataFrame,
    risk_aware: pd.DataFrame,
    *,
    map_name: str,
    map_given: bool = False,
) -> pd.DataFrame:
    """One sentence per section of :data:`SECTIONS`; ``map_name``: the calibrator's map, ``map_given``: whether the
    user named it (else it was chosen by held-out Brier)."""
    return pd.DataFrame(
        [
            _ranking(ranking),
            _calibration(calibration, map_given),
            _thresholds(threshold),
            _abstain(abstain, abstain_rule, map_name),
            _conformal(conformal, map_name),
            _risk(risk_aware, map_name),
        ]
    )
