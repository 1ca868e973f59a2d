"""The assessment as a page a person reads: findings first, then figures, then tables formatted for people.

Rendered from the package's Jinja2 template (``templates/page.html.j2``, read through
:mod:`importlib.resources`, so it works from any folder after a normal install) with the
figures inline as PNG; no notebook and no kernel. The page names files by their names only:
it holds no absolute path of the machine it was made on. Every measure it names says what it is
and which way is better (:data:`GLOSSARY`: a block on the page, and the hover title of the term in
a heading, a cell or a sentence); every number is written by :mod:`calibrank.assess.numbers`; the
code in "What to deploy" shows only the calls that work for this calibrator.
"""

from __future__ import annotations

import base64
import io
import re
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path

import jinja2
import numpy as np
import pandas as pd
from markupsafe import Markup, escape

from calibrank import __version__
from calibrank.assess.deploy.fit import TAIL
from calibrank.assess.engine import Assessment
from calibrank.assess.numbers import cell, count, format_for, interval, number, pct, threshold
from calibrank.assess.page import figures

__all__ = ["GLOSSARY", "define", "render"]

GLOSSARY = {
    "R@k": "Recall at k: the share of a query's relevant documents (in the qrels) that are in its top k, averaged "
    "over queries (0 to 1, higher is better).",
    "P@1": "Precision at 1: the share of queries whose top candidate is relevant (0 to 1, higher is better).",
    "MRR": "Mean reciprocal rank: 1 / the rank of a query's first relevant candidate, averaged over queries "
    "(0 to 1, higher is better).",
    "nDCG@k": "Normalised discounted cumulative gain at k: the grades of the top k, discounted by rank, as a share "
    "of the best order's (0 to 1, higher is better).",
    "MAP": "Mean average precision: the precision at the rank of each relevant candidate, averaged per query, "
    "then over queries (0 to 1, higher is better).",
    "ECE": "Expected calibration error: the gap between mean probability and share relevant in each of 10 "
    "probability buckets, weighted by the bucket's candidates (lower is better; alone it proves little: a "
    "constant at the base rate scores near 0).",
    "ECE equal-mass": "ECE with 10 buckets of equal candidate counts instead of equal width (lower is better).",
    "Brier": "Brier score: the mean squared gap between a candidate's probability and its 0/1 label (lower is "
    "better; the base-rate constant sets the bar to beat).",
    "NLL": "Negative log-likelihood: the mean of -log(probability given to what happened) (lower is better; a "
    "confident mistake costs most).",
    "base rate": "The share of relevant candidates among the validation candidates, used as one constant "
    "probability for every candidate: the baseline a map must beat.",
    "beyond support": f"Test candidates whose probability rests on fewer than {TAIL} validation candidates: past "
    f"the isotonic map's end blocks, or past the {TAIL}th lowest or highest validation score for "
    "a parametric map (fewer is better).",
    "list confidence": "How sure a list's top answer is, to decide whether to answer or abstain: top score, margin "
    "or list (higher means more likely right).",
    "top score": "A list confidence: the raw score of the list's top candidate.",
    "margin": "A list confidence: the list's highest probability minus its second (0 when the top two tie).",
    "list": "A list confidence: a logistic regression, fitted on validation, of 'the top candidate is relevant' on "
    "the list's highest probabilities.",
    "-top var": "A list confidence: minus the variance of the top candidate's probability across the samples.",
    "cut": "The abstain rule's threshold: a query is answered when its list confidence is at least the cut.",
    "coverage": "The share of queries answered (abstain), or the share of queries whose shortlist holds a relevant "
    "candidate (shortlists); higher is better at a given risk.",
    "risk": "The top-1 error among the answered queries: the share whose top candidate is not relevant (lower "
    "is better).",
    "risk@k%": "The top-1 error among the k% of queries with the highest list confidence (lower is better).",
    "AURC": "Area under the risk-coverage curve: the top-1 error among the answered, averaged over every share "
    "answered when queries are answered in order of confidence (lower is better).",
    "E-AURC": "Excess AURC: AURC minus the lowest AURC any order of these queries could reach (lower is better; "
    "0 is a perfect order).",
    "AUGRC": "Area under the generalised risk-coverage curve: the share of all queries answered wrongly, averaged "
    "over every share answered (lower is better; weighs the most confident few less than AURC does).",
    "qhat": "The split-conformal quantile fitted on validation: a candidate enters the shortlist when its share of "
    "its list (the softmax of the logits of the list's probabilities) is at least 1 - qhat (a threshold, "
    "neither better nor worse).",
    "NOTA": "None of the above: an empty shortlist, the answer that no candidate is relevant. NOTA recall: the "
    "share of queries without a relevant candidate that got one (higher is better); false NOTA: the share "
    "of the others that got one wrongly (lower is better).",
    "cutoff": "Keep a candidate when its raw score is at least the cutoff; certified means precision (or recall) "
    "reaches the target with the stated confidence on queries like the validation ones.",
}
"""Each term the page names, in one sentence: what it is and which way is better. Shown as a block on the page
and as the hover title of the term in a heading, a cell or a sentence."""

_CERTAINTY = (
    "The certificate's confidence: the cutoff reaches the target with at least this probability over draws "
    "of validation queries like these."
)
_ABSTAIN_TITLES = {
    "confidence": GLOSSARY["list confidence"],
    "valid tied at cut": "The share of validation lists whose confidence equals the cut exactly: all of them are "
    "answered.",
    "valid coverage": "The share of validation queries the rule answers, counted (not the share asked for).",
}
_RISK_TITLES = {
    "b": "Risk aversion (Penha & Hauff 2021): a candidate's mean over the samples less b times its variance and "
    "covariances with the others (in logit space); 0 is the mean ranker; chosen on validation.",
    "valid_value": "The metric of the risk-aware ranking on the validation queries, at the chosen b.",
    "mean_ranker": "The metric on the test queries when candidates are ranked by their mean probability.",
    "risk_aware": "The metric on the test queries of the risk-aware ranking (higher is better).",
    "rel_change": "(risk_aware - mean_ranker) / mean_ranker (above 0: the risk-aware ranking is better).",
    "pvalue": "The paired test's p-value of risk_aware against mean_ranker over test queries.",
    "n": "Test queries the metric is averaged over.",
    "S_test": "Samples per test candidate.",
}
_TERMS = {
    "R@": "R@k",
    "nDCG@": "nDCG@k",
    "risk@": "risk@k%",
    "NOTA": "NOTA",
    "false NOTA": "NOTA",
    "NOTA recall": "NOTA",
    "NOTA queries": "NOTA",
    "valid AURC": "AURC",
    "cutoff": "cutoff",
    "best cutoff": "cutoff",
    "beyond support": "beyond support",
}
_IN_TEXT = re.compile(
    r"(?<![\w-])(R@\d+|P@1|MRR|nDCG@\d+|MAP|ECE|Brier|NLL|E-AURC|AURC|AUGRC|NOTA|qhat|margin"
    r"|list confidence|base rate|top score)(?![\w@-])"
)


def define(term: str) -> str | None:
    """The glossary sentence of ``term`` as it stands on the page (``R@5``, ``nDCG@10``, ``risk@80%``, a table
    column such as ``NOTA recall``), or None."""
    if term in GLOSSARY:
        return GLOSSARY[term]
    if term in _TERMS:
        return GLOSSARY[_TERMS[term]]
    for prefix in ("R@", "nDCG@", "risk@"):
        if term.startswith(prefix) and term[len(prefix) :].rstrip("%").isdigit():
            return GLOSSARY[_TERMS[prefix]]
    return None


def _glossed(text: str) -> Markup:
    """``text`` escaped, each glossary term in it wrapped in ``<abbr title=...>``."""

    def wrap(m: re.Match) -> str:
        return f'<abbr title="{escape(define(m.group(0)))}">{m.group(0)}</abbr>'

    return Markup(_IN_TEXT.sub(wrap, str(escape(text))))


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _table(df: pd.DataFrame, columns: Sequence[str] | None = None, titles: Mapping[str, str] | None = None) -> dict:
    """Header and rows as text in :mod:`calibrank.assess.numbers`' formats: ``x lo`` / ``x hi`` folded into ``x`` as
    ``value [lo, hi]``; each header and each cell that is a glossary term carries its sentence as ``title``
    (``titles``: a header's own, where its name means something else elsewhere)."""
    titles = titles or {}
    cols = [c for c in (columns or df.columns) if c in df.columns]
    shown = [c for c in cols if not (c.endswith((" lo", " hi")) and c[:-3] in cols)]
    rows = []
    for _, r in df.iterrows():
        row = []
        for c in shown:
            if f"{c} lo" in df.columns and f"{c} hi" in df.columns and c in df.columns:
                text = interval(r[c], r[f"{c} lo"], r[f"{c} hi"], format_for(c)) if np.isfinite(r[c]) else ""
            else:
                text = cell(c, r[c])
            row.append({"text": text, "title": define(text) if isinstance(r[c], str) else None})
        rows.append(row)
    return {"header": [{"text": c, "title": titles.get(c, define(c))} for c in shown], "rows": rows}


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
    figs = {
        "reliability": _png(figures.plot_reliability(a.reliability, a.calibration)),
        "thresholds": _png(figures.plot_thresholds(a.thresholds, a.threshold)),
        "abstain": _png(figures.plot_risk_coverage(a.risk_coverage, a.abstain, a.abstain_rule)),
    }
    summary = a.summary.assign(source=[Path(s).name for s in a.summary["source"]]).drop(columns=["notes"])
    tables = {
        "summary": _table(summary),
        "ranking": _table(a.ranking),
        "calibration": _table(
            a.calibration,
            [
                "view",
                "deployed",
                "ECE",
                "ECE lo",
                "ECE hi",
                "Brier",
                "Brier lo",
                "Brier hi",
                "NLL",
                "NLL lo",
                "NLL hi",
                "beyond support",
                "flag",
                "note",
            ],
        ),
        "maps": _table(a.calibration[a.calibration["params"] != ""], ["view", "params", "fitted_on"]),
        "reliability": _table(
            a.reliability[a.reliability["view"] == deployed],
            ["lower", "upper", "count", "mean predicted", "fraction relevant"],
        ),
        "threshold": _table(
            a.threshold,
            [
                "metric",
                "target",
                "confidence",
                "certified",
                "cutoff",
                "probability",
                "valid kept",
                "valid value",
                "best level",
                "best cutoff",
                "queries needed",
                "test kept",
                "precision",
                "precision lo",
                "precision hi",
                "recall",
                "recall lo",
                "recall hi",
            ],
            {"confidence": _CERTAINTY},
        ),
        "abstain_rule": _table(
            a.abstain_rule,
            [
                "confidence",
                "cut",
                "asked",
                "valid answered",
                "valid coverage",
                "valid tied at cut",
                "test queries",
                "answered",
                "coverage",
                "risk",
                "risk lo",
                "risk hi",
                "risk if all answered",
            ],
            _ABSTAIN_TITLES,
        ),
        "abstain": _table(a.abstain, [c for c in a.abstain.columns if c != "queries"], _ABSTAIN_TITLES),
        "conformal": _table(
            a.conformal,
            [
                "alpha",
                "deployed",
                "target",
                "qhat",
                "coverage",
                "coverage lo",
                "coverage hi",
                "mean set size",
                "empty sets",
                "NOTA queries",
                "NOTA recall",
                "false NOTA",
                "note",
            ],
        ),
        "risk_aware": _table(
            a.risk_aware,
            [
                "metric",
                "b",
                "valid_value",
                "mean_ranker",
                "risk_aware",
                "rel_change",
                "pvalue",
                "n",
                "significant",
                "S_test",
                "note",
            ],
            _RISK_TITLES,
        )
        if not a.risk_aware.empty
        else None,
    }
    env = jinja2.Environment(
        loader=jinja2.FunctionLoader(
            lambda n: (
                resources.files("calibrank.assess.page").joinpath("templates", n).read_text("utf-8"),
                None,
                lambda: True,
            )
        ),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters.update(number=number, pct=pct, threshold=threshold, count=count, glossed=_glossed, define=define)
    css = resources.files("calibrank.assess.page").joinpath("templates", "page.css").read_text("utf-8")
    rule_row = a.abstain_rule.iloc[0]
    page = env.get_template("page.html.j2").render(
        name=name,
        version=__version__,
        css=css,
        findings=list(zip(a.findings["section"], a.findings["finding"])),
        notes=[_public(n, paths) for n in notes],
        figs=figs,
        tables=tables,
        deployed=deployed,
        map_text=cal.map.describe(),
        cutoff=cal.cutoff,
        threshold_note=str(a.threshold["note"].iloc[0]),
        rule=cal.abstain_rule,
        valid_coverage=float(rule_row.get("valid coverage", np.nan)),
        shortlist=cal.shortlist_rule,
        fitted_on=cal.fitted_on,
        glossary=GLOSSARY,
        tail=TAIL,
    )
    return page
