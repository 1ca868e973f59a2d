"""Figures of an assessment, drawn from its tables (:class:`calibrank.assess.engine.Assessment`; nothing computed here).

Each function takes the tables it draws and returns a matplotlib ``Figure`` made without pyplot,
so the command draws with no display and no global state; a notebook shows the figure as it is.
Colours: matplotlib's ``Dark2`` (the study's category palette), bands at the study's opacity.
"""

from __future__ import annotations

from typing import Any

import matplotlib as mpl
import numpy as np
import pandas as pd
from matplotlib import colormaps
from matplotlib.figure import Figure

from calibrank.assess.numbers import number, threshold

__all__ = ["plot_reliability", "plot_risk_coverage", "plot_thresholds"]

BAND_ALPHA = 0.18
FEW = 30
"""A reliability bucket with fewer candidates is drawn hollow, with its count."""
_RC: dict[Any, Any] = {
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.grid": True,
    "grid.color": "0.9",
    "axes.spines.top": False,
    "axes.spines.right": False,
    "legend.frameon": False,
}


def _colors(n: int) -> list:
    cmap = colormaps["Dark2"]
    return [cmap(i % 8) for i in range(n)]


def _figure(size: tuple[float, float], **grid) -> tuple[Figure, list]:
    with mpl.rc_context(_RC):
        fig = Figure(figsize=size, layout="constrained")
        axes: Any = fig.subplots(**grid) if grid else fig.subplots()  # one Axes, or an array of them
    return fig, list(np.atleast_1d(axes))


def plot_reliability(reliability: pd.DataFrame, calibration: pd.DataFrame) -> Figure:
    """Fraction of relevant candidates against the mean probability per bucket, as given (when the scores have a
    probability scale) and through the deployed map, with the diagonal (a bucket of fewer than :data:`FEW`
    candidates hollow, with its count); below, the candidates in each bucket."""
    fig, (ax, counts) = _figure((5.2, 5.0), nrows=2, sharex=True, gridspec_kw={"height_ratios": [3, 1]})
    ax.plot([0, 1], [0, 1], color="0.6", lw=1, ls=":", label="perfectly calibrated")
    table = calibration.set_index("view")
    deployed = str(calibration.loc[calibration["deployed"], "view"].iloc[0])
    views = [v for v in dict.fromkeys(("as given", deployed)) if v in table.index and np.isfinite(table.loc[v, "ECE"])]
    colors = dict(zip(views, _colors(len(views))))
    width = 0.08 / max(len(views), 1)
    for i, view in enumerate(views):
        g = reliability[reliability["view"] == view]
        shown = g[g["count"] > 0]
        label = f"{view}{' (deployed)' if view == deployed else ''}, ECE {number(table.loc[view, 'ECE'])}"
        ax.plot(shown["mean predicted"], shown["fraction relevant"], marker="o", ms=4, color=colors[view], label=label)
        few = shown[shown["count"] < FEW]
        ax.plot(
            few["mean predicted"], few["fraction relevant"], ls="none", marker="o", ms=7, mfc="white", mec=colors[view]
        )
        for _, r in few.iterrows():
            ax.annotate(
                f"n={int(r['count'])}",
                (r["mean predicted"], r["fraction relevant"]),
                textcoords="offset points",
                xytext=(4, -10),
                fontsize=7,
                color=colors[view],
            )
        centres = 0.5 * (g["lower"] + g["upper"]).to_numpy()
        counts.bar(centres + (i - (len(views) - 1) / 2) * width, g["count"], width=width, color=colors[view])
    ax.set(xlim=(0, 1), ylim=(0, 1.05), ylabel="fraction relevant", title="reliability on the test queries")
    ax.legend(loc="lower right")
    counts.set(xlabel="probability (bucket of width 0.1)", ylabel="candidates")
    return fig


def plot_thresholds(curve: pd.DataFrame, threshold: pd.DataFrame) -> Figure:
    """Precision and recall of "keep candidates whose raw score is at least c" against c with their 95% bands;
    the certified cutoff (or, when none is, the best certifiable one) and the target marked.

    Each measure is a step function of the cutoff, drawn as steps over the curve's real cutoffs: between two of
    them, ``c_i < c <= c_(i+1)``, keeping ``score >= c`` keeps what ``c_(i+1)`` keeps ("steps-pre"), so no straight
    line is drawn across a gap between cutoffs."""
    fig, (ax,) = _figure((5.6, 4.0))
    c = curve["cutoff"].to_numpy()
    colors = dict(zip(("precision", "recall"), _colors(2)))
    over = curve["recall over"].iloc[0] if "recall over" in curve.columns and len(curve) else None
    for col in ("precision", "recall"):
        label = f"{col} (test{', over the ' + over if col == 'recall' and over else ''})"
        ax.plot(c, curve[col], color=colors[col], drawstyle="steps-pre", label=label)
        ax.fill_between(
            c, curve[f"{col} lo"], curve[f"{col} hi"], step="pre", color=colors[col], alpha=BAND_ALPHA, lw=0
        )
    row = threshold.iloc[0]
    ax.axhline(row["target"], color="0.5", lw=0.8, ls=":", label=f"target {row['metric']} {row['target']:.0%}")
    if row["certified"]:
        ax.axvline(row["cutoff"], color="k", ls="--", lw=1, label=f"certified cutoff {row['cutoff']:.4g}")
    elif np.isfinite(row["best cutoff"]):
        ax.axvline(
            row["best cutoff"],
            color="0.4",
            ls="-.",
            lw=1,
            label=f"cutoff certified at {row['best level']:.1%} {row['metric']}",
        )
    ax.set(
        ylim=(0, 1.02),
        xlabel="cutoff on the raw score (keep score >= cutoff)",
        ylabel="share of candidates",
        title=f"keep or drop a candidate (map for probabilities: {row['map']})",
    )
    ax.legend(fontsize=8, loc="best")
    return fig


def plot_risk_coverage(curves: pd.DataFrame, scores: pd.DataFrame, rule: pd.DataFrame) -> Figure:
    """Selective risk (top answer wrong among the answered queries) against coverage, one line per confidence
    with its AURC; the deployed rule's point on the test queries marked."""
    fig, (ax,) = _figure((5.6, 4.0))
    aurc = scores.set_index("confidence")["AURC"]
    names = list(dict.fromkeys(curves["confidence"]))
    colors = dict(zip(names, _colors(len(names))))
    for name in names:
        g = curves[curves["confidence"] == name]
        ax.plot(g["coverage"], g["selective risk"], color=colors[name], label=f"{name} (AURC {number(aurc[name])})")
    r = rule.iloc[0]
    if np.isfinite(r["risk"]):
        ax.plot(
            [r["coverage"]],
            [r["risk"]],
            marker="o",
            ms=8,
            mfc="none",
            mec="k",
            ls="none",
            label=f"deployed: {r['confidence']} >= {threshold(r['cut'])}",
        )
    ax.set(
        xlim=(0, 1),
        ylim=(0, None),
        xlabel="coverage (share of queries answered)",
        ylabel="top-1 error among the answered",
        title="answer or abstain (test queries)",
    )
    ax.legend(fontsize=8)
    return fig
