"""Figures of an assessment, drawn from its tables (:class:`calibrank.assess.engine.Assessment`; nothing computed here).

Each function takes the tables it draws and an optional matplotlib ``ax`` and returns the axes; each draws in
the project's one look (:func:`calibrank.analysis.plots.style`), a category in its :func:`calibrank.analysis.plots.category_colors`
colour.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ..analysis.plots import band, category_colors, styled

__all__ = ["best_view", "plot_reliability", "plot_risk_coverage", "plot_thresholds"]


def _ax(ax, size=(5.0, 4.0)):
    if ax is None:
        _, ax = plt.subplots(figsize=size)
    return ax


def best_view(calibration: pd.DataFrame) -> str | None:
    """The fitted map with the lowest test ECE (None when no map was fitted)."""
    fitted = calibration[(calibration["fitted_on"] != "") & (calibration["view"] != "base rate")].dropna(subset=["ECE"])
    return None if fitted.empty else str(fitted.loc[fitted["ECE"].idxmin(), "view"])


@styled
def plot_reliability(reliability: pd.DataFrame, calibration: pd.DataFrame, *, ax=None):
    """Fraction of relevant candidates against the mean probability per bucket: as given (when the scores have a
    probability scale) and the best fitted map, with the diagonal of perfect calibration."""
    ax = _ax(ax)
    ax.plot([0, 1], [0, 1], color="0.6", lw=1, ls=":", label="perfectly calibrated")
    ece = calibration.set_index("view")["ECE"]
    views = [v for v in ("as given", best_view(calibration)) if v is not None]
    colors = category_colors(["as given", "fitted"])
    for view in views:
        g = reliability[(reliability["view"] == view) & (reliability["count"] > 0)]
        if g.empty:
            continue
        label = f"{view} (ECE {ece[view]:.3f})" if view == "as given" else f"{view}, fitted on valid (ECE {ece[view]:.3f})"
        ax.plot(g["mean predicted"], g["fraction relevant"], marker="o", ms=4,
                color=colors["as given" if view == "as given" else "fitted"], label=label)
    ax.set(xlim=(0, 1), ylim=(0, 1), xlabel="mean probability in bucket", ylabel="fraction relevant in bucket",
           title="reliability on the test queries")
    ax.legend(loc="upper left")
    return ax


@styled
def plot_thresholds(thresholds: pd.DataFrame, threshold: pd.DataFrame, *, ax=None):
    """Precision and recall of "keep candidates with p >= t" against t with their 95% bands; the Learn-then-Test
    threshold chosen on the validation queries as a vertical line (when one is certified)."""
    ax = _ax(ax)
    t = thresholds["threshold"]
    colors = category_colors(["precision", "recall"])
    for col in ("precision", "recall"):
        ax.plot(t, thresholds[col], color=colors[col], label=col)
        band(ax, t, thresholds[f"{col} lo"], thresholds[f"{col} hi"], colors[col])
    row = threshold.iloc[0]
    if row["certified"] and np.isfinite(row["threshold"]):
        ax.axvline(row["threshold"], color="k", ls="--", lw=1,
                   label=f"LTT threshold {row['threshold']:.2f} (precision >= {row['target precision']:.0%})")
    ax.set(xlim=(0, 1), ylim=(0, 1.02), xlabel=f"threshold t on the probability ({row['probabilities']})",
           ylabel="share of candidates", title="keep candidates with p >= t (test)")
    ax.legend()
    return ax


@styled
def plot_risk_coverage(curves: pd.DataFrame, scores: pd.DataFrame, *, ax=None):
    """Selective risk (top-1 wrong among the answered queries) against coverage, one line per confidence,
    labelled with its AURC."""
    ax = _ax(ax)
    aurc = scores.set_index("confidence")["AURC"]
    colors = category_colors(curves["confidence"])
    for name, g in curves.groupby("confidence", sort=False):
        ax.plot(g["coverage"], g["selective risk"], color=colors[name], label=f"{name} (AURC {aurc[name]:.3f})")
    ax.set(xlim=(0, 1), ylim=(0, None), xlabel="coverage (share of queries answered)",
           ylabel="selective risk (top answer wrong)", title="answer or abstain (test)")
    ax.legend()
    return ax
