"""The assessment as a page a person reads: findings first, then figures, then tables formatted for people.

Rendered from the package's Jinja2 template (``templates/page.html.j2``, read through
:mod:`importlib.resources`, so it works from any folder after a normal install) with the
figures inline as PNG; no notebook and no kernel. The page names files by their names only:
it holds no absolute path of the machine it was made on.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Sequence
from importlib import resources
from pathlib import Path

import jinja2
import numpy as np
import pandas as pd

from calibrank import __version__
from calibrank.assess.page import figures
from calibrank.assess.engine import Assessment
from calibrank.assess.numbers import interval, number, pct

__all__ = ["render"]

_PROPORTIONS = {"precision", "recall", "coverage", "risk", "target", "confidence", "judged share", "false NOTA",
                "NOTA recall", "best level", "valid value", "valid best value", "risk if all answered"}


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _cell(col: str, v) -> str:
    if isinstance(v, (bool, np.bool_)):
        return "yes" if v else "no"
    if isinstance(v, (int, np.integer)):
        return f"{int(v):,}"
    if isinstance(v, (float, np.floating)):
        if not np.isfinite(v):
            return ""
        return pct(v) if col in _PROPORTIONS else number(v)
    return "" if v is None else str(v)


def _table(df: pd.DataFrame, columns: Sequence[str] | None = None) -> dict:
    """Header and rows as text: ``x lo`` / ``x hi`` folded into ``x`` as ``value [lo, hi]``."""
    cols = [c for c in (columns or df.columns) if c in df.columns]
    shown = [c for c in cols if not (c.endswith((" lo", " hi")) and c[:-3] in cols)]
    rows = []
    for _, r in df.iterrows():
        row = []
        for c in shown:
            if f"{c} lo" in df.columns and f"{c} hi" in df.columns and c in df.columns:
                fmt = pct if c in _PROPORTIONS else number
                row.append(interval(r[c], r[f"{c} lo"], r[f"{c} hi"], fmt) if np.isfinite(r[c]) else "")
            else:
                row.append(_cell(c, r[c]))
        rows.append(row)
    return {"header": shown, "rows": rows}


def _public(text: str, paths: Sequence[str]) -> str:
    """``text`` with each input path replaced by its file name."""
    for p in sorted({str(p) for p in paths}, key=len, reverse=True):
        text = text.replace(p, Path(p).name)
        text = text.replace(str(Path(p).resolve()), Path(p).name)
    return text


def render(assessment: Assessment, *, name: str, notes: Sequence[str] = (), paths: Sequence[str] = ()) -> str:
    """The page of ``assessment`` (``name``: the ranker's; ``paths``: input files, shown by name only)."""
    a, cal = assessment, assessment.calibrator
    deployed = str(a.calibration.loc[a.calibration["deployed"], "view"].iloc[0])
    figs = {"reliability": _png(figures.plot_reliability(a.reliability, a.calibration)),
            "thresholds": _png(figures.plot_thresholds(a.thresholds, a.threshold)),
            "abstain": _png(figures.plot_risk_coverage(a.risk_coverage, a.abstain, a.abstain_rule))}
    summary = a.summary.assign(source=[Path(s).name for s in a.summary["source"]]).drop(columns=["notes"])
    tables = {
        "summary": _table(summary),
        "ranking": _table(a.ranking),
        "calibration": _table(a.calibration, ["view", "deployed", "ECE", "ECE lo", "ECE hi", "Brier", "Brier lo",
                                              "Brier hi", "NLL", "NLL lo", "NLL hi", "flag", "note"]),
        "maps": _table(a.calibration[a.calibration["params"] != ""], ["view", "params", "fitted_on"]),
        "reliability": _table(a.reliability[a.reliability["view"] == deployed],
                              ["lower", "upper", "count", "mean predicted", "fraction relevant"]),
        "threshold": _table(a.threshold, ["metric", "target", "confidence", "certified", "cutoff", "probability",
                                          "valid kept", "valid value", "best level", "best cutoff", "queries needed",
                                          "test kept", "precision", "precision lo", "precision hi", "recall",
                                          "recall lo", "recall hi"]),
        "abstain_rule": _table(a.abstain_rule),
        "abstain": _table(a.abstain, [c for c in a.abstain.columns if c != "queries"]),
        "conformal": _table(a.conformal, ["alpha", "deployed", "target", "qhat", "coverage", "coverage lo",
                                          "coverage hi", "mean set size", "empty sets", "NOTA queries", "NOTA recall",
                                          "false NOTA", "note"]),
        "risk_aware": _table(a.risk_aware) if not a.risk_aware.empty else None,
    }
    env = jinja2.Environment(loader=jinja2.FunctionLoader(
        lambda n: (resources.files("calibrank.assess.page").joinpath("templates", n).read_text("utf-8"), None,
                   lambda: True)), autoescape=True, undefined=jinja2.StrictUndefined)
    css = resources.files("calibrank.assess.page").joinpath("templates", "page.css").read_text("utf-8")
    cut = cal.cutoff
    page = env.get_template("page.html.j2").render(
        name=name, version=__version__, css=css, findings=list(zip(a.findings["section"], a.findings["finding"])),
        notes=[_public(n, paths) for n in notes], figs=figs, tables=tables, deployed=deployed,
        map_text=cal.map.describe(), cutoff=cut, threshold_note=str(a.threshold["note"].iloc[0]),
        rule=cal.abstain_rule, shortlist=cal.shortlist_rule, fitted_on=cal.fitted_on,
        raw_cutoff=None if cut.raw is None else f"{cut.raw:.6g}")
    return page
