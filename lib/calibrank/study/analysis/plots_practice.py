"""Figures of notebook 08 (:mod:`calibrank.study.analysis.practice`), drawn from its tables (no computation of results here).

In the look of :mod:`calibrank.study.analysis.plots`: every function draws under its :func:`~calibrank.study.analysis.plots.style`, a
ranker has its :func:`~calibrank.study.analysis.plots.ranker_colors` colour (and, when a table holds several training
corpora, one marker per corpus), any other category its :func:`~calibrank.study.analysis.plots.category_colors` colour.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from calibrank.study.analysis.plots import _panels, band, category_colors, ranker_colors, styled

__all__ = [
    "plot_aurc_intervals",
    "plot_conformal_coverage",
    "plot_listwise_reliability",
    "plot_nota_f1",
    "plot_nota_threshold",
    "plot_performance_prediction",
    "plot_prior_ece",
    "plot_recalibration",
    "plot_risk_coverage",
    "plot_shift_auroc_intervals",
    "plot_shift_detection",
]

IN = "in distribution"
CORPUS_MARKERS = ("o", "s", "^", "D", "v")
"""Markers of the training corpora, in the order a table lists them."""


def _empty(axes):
    return _panels(axes, 0, 1, (4.0, 2.0))


@styled
def plot_prior_ece(table: pd.DataFrame, *, shift: str = IN, ncols: int = 4, axes=None):
    """ECE against non-relevant candidates per query, before (dashed) and after (solid) the prior correction.

    One panel per ranker on the conditions of ``shift`` (default in distribution), from
    :func:`calibrank.study.analysis.practice.prior.prior_ece_by_negatives`: the debiased ECE with its 95% band
    when the table has one (as notebook 04's Figure 2 bands it), else eq. 1 with ``lo`` / ``hi``. With
    several conditions of that shift, each line's label names its condition.
    """
    sub = table[table["shift"] == shift]
    if sub.empty:
        return _empty(axes)
    rankers = list(dict.fromkeys(sub["ranker"]))
    conds = list(dict.fromkeys(zip(sub["corpus"], sub["sampler"])))
    lines = tuple(
        (_banded(sub, col), ls, label)
        for col, ls, label in (("ECE raw", "--", "as trained"), ("ECE corrected", "-", "prior-corrected"))
    )
    colors = category_colors((c, col) for c in conds for col, _, _ in lines)
    panels = _panels(axes, len(rankers), ncols, (3.0, 2.7))
    for ax, ranker in zip(panels, rankers):
        for (corpus, sampler), g in sub[sub["ranker"] == ranker].groupby(["corpus", "sampler"], sort=False):
            for col, ls, label in lines:
                label = f"{corpus} · {sampler}: {label}" if len(conds) > 1 else label
                color = colors[((corpus, sampler), col)]
                ax.plot(g["n_nonrel"], g[col], ls=ls, marker="o", ms=3, color=color, label=label)
                band(ax, g["n_nonrel"], g[f"{col} lo"], g[f"{col} hi"], color)
        ax.set_title(ranker)
        ax.set_xlabel("non-relevant candidates per query")
    panels[0].set_ylabel(f"ECE{' debiased' if lines[0][0].endswith(' debiased') else ''} ({shift})")
    panels[0].legend()
    return panels


def _banded(table: pd.DataFrame, column: str) -> str:
    """The column an ECE's interval belongs to: ``<column> debiased`` when the table has it and its ``lo`` / ``hi``."""
    d = f"{column} debiased"
    return d if {d, f"{d} lo", f"{d} hi"} <= set(table.columns) else column


def _with_model(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` with a ``model`` column: the ranker, and its training corpus when the table holds several."""
    if "train_corpus" in table and table["train_corpus"].nunique() > 1:
        return table.assign(model=table["ranker"] + " (" + table["train_corpus"].astype(str) + ")")
    return table.assign(model=table["ranker"])


def _model_look(table: pd.DataFrame) -> tuple[dict, dict]:
    """Colour and marker of each ``model`` of :func:`_with_model`: its ranker's colour, its training corpus's marker."""
    rows = table.drop_duplicates("model")
    colors = ranker_colors(rows["ranker"])
    corpora = list(dict.fromkeys(rows["train_corpus"])) if "train_corpus" in rows else []
    markers = {
        m: CORPUS_MARKERS[corpora.index(tc) % len(CORPUS_MARKERS)] if corpora else "o"
        for m, tc in zip(rows["model"], rows["train_corpus"] if corpora else rows["model"])
    }
    return {m: colors[r] for m, r in zip(rows["model"], rows["ranker"])}, markers


def _dots(
    ax,
    g: pd.DataFrame,
    x: str,
    hue: str,
    y: str,
    lo: str | None = None,
    hi: str | None = None,
    *,
    colors: dict,
    markers: dict | None = None,
    order: list | None = None,
    rotation: float = 30,
):
    """One marker per ``x`` value and ``hue`` value (dodged), with ``[lo, hi]`` bars when given, in the colour
    (and marker) of its ``hue`` value; returns the x labels."""
    xs = order if order is not None else list(dict.fromkeys(g[x]))
    hues = list(dict.fromkeys(g[hue]))
    pos = np.arange(len(xs))
    for i, h in enumerate(hues):
        r = g[g[hue] == h].drop_duplicates(x).set_index(x).reindex(xs)
        off = (i - (len(hues) - 1) / 2) * 0.7 / max(len(hues), 1)
        err = None
        if lo is not None and hi is not None:
            err = np.vstack([(r[y] - r[lo]).clip(lower=0), (r[hi] - r[y]).clip(lower=0)])
        ax.errorbar(
            pos + off,
            r[y],
            yerr=err,
            fmt=(markers or {}).get(h, "o"),
            ms=4,
            capsize=1.5,
            lw=0.9,
            color=colors[h],
            label=h,
        )
    ax.set_xticks(pos, xs, rotation=rotation, ha="right")
    ax.grid(False, axis="x")  # categories, not a scale
    return xs


@styled
def plot_recalibration(table: pd.DataFrame, *, ncols: int = 4, axes=None):
    """ECE after each recalibrator (markers, 95% interval bars) per ranker, one panel per test condition; log scale.

    From :func:`calibrank.study.analysis.practice.recalibrate.recalibration_table`: the debiased ECE and its interval
    when the table has them, on a log scale that turns linear below 0.01 (the debiased ECE can be 0 or below),
    else eq. 1 with ``lo`` / ``hi`` on a log scale.
    """
    if table.empty:
        return _empty(axes)
    groups = list(_with_model(table).groupby(["corpus", "sampler"], sort=False))
    panels = _panels(axes, len(groups), ncols, (3.6, 3.0))
    colors = category_colors(table["method"])
    y = _banded(table, "ECE")
    for ax, ((corpus, sampler), g) in zip(panels, groups):
        _dots(ax, g, "model", "method", y, f"{y} lo", f"{y} hi", colors=colors, rotation=45)
        if y == "ECE":
            ax.set_yscale("log")
        else:
            ax.set_yscale("symlog", linthresh=0.01)
        ax.set_title(f"{corpus} · {sampler} ({g['shift'].iloc[0]})")
    panels[0].set_ylabel("ECE (log scale)" if y == "ECE" else "ECE debiased (log scale above 0.01)")
    panels[-1].legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return panels


@styled
def plot_risk_coverage(curves: pd.DataFrame, *, ncols: int = 4, axes=None):
    """Risk-coverage curves (selective risk against coverage), one panel per ranker, one line per confidence.

    From :func:`calibrank.study.analysis.practice.selective.selective_curves`; the dotted line is the risk at full coverage
    (drawn where a curve reaches coverage 1).
    """
    if curves.empty:
        return _empty(axes)
    rankers = list(dict.fromkeys(curves["ranker"]))
    panels = _panels(axes, len(rankers), ncols, (3.0, 2.7))
    colors = category_colors(curves["confidence"])
    for ax, ranker in zip(panels, rankers):
        sub = curves[curves["ranker"] == ranker]
        for conf, g in sub.groupby("confidence", sort=False):
            ax.plot(g["coverage"], g["selective risk"], lw=1.4, color=colors[conf], label=conf)
        full = sub["selective risk"][np.isclose(sub["coverage"], 1.0)].dropna()
        if len(full):
            ax.axhline(full.iloc[0], ls=":", color="grey", lw=1)
        ax.set_ylim(0, 1)
        ax.set_title(ranker)
        ax.set_xlabel("coverage (share of queries answered)")
    panels[0].set_ylabel("risk (wrong top response)")
    fullest = max(panels, key=lambda ax: len(ax.get_legend_handles_labels()[0]))  # a panel with every confidence
    fullest.legend()
    return panels


@styled
def plot_conformal_coverage(table: pd.DataFrame, *, axes=None):
    """Empirical coverage of the conformal sets per test condition, one marker per ranker with its
    Clopper-Pearson interval; one panel per score x alpha; the dashed line is the target 1 - alpha.

    From :func:`calibrank.study.analysis.practice.conformal.conformal_table`.
    """
    if table.empty:
        return _empty(axes)
    t = _with_model(table)
    t = t.assign(condition=t["corpus"] + " · " + t["sampler"])
    colors, markers = _model_look(t)
    groups = list(t.groupby(["score", "alpha"], sort=False))
    panels = _panels(axes, len(groups), 2, (5.6, 3.0), sharey=False)
    for ax, ((score, alpha), g) in zip(panels, groups):
        _dots(
            ax,
            g,
            "condition",
            "model",
            "coverage",
            "coverage lo",
            "coverage hi",
            colors=colors,
            markers=markers,
            rotation=20,
        )
        ax.axhline(1 - alpha, ls="--", color="black", lw=1)
        ax.set_title(f"{score}, alpha = {alpha:g} (target {1 - alpha:.2f})")
        ax.set_ylabel("coverage of the true response")
    panels[-1].legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return panels


def _heatmap(ax, wide: pd.DataFrame, *, vmin: float, vmax: float, cmap: str, title: str):
    """``wide`` as annotated cells (two decimals; a NaN cell left blank) on a fixed colour scale; returns the mesh."""
    sns.heatmap(
        wide.astype(float),
        vmin=vmin,
        vmax=vmax,
        cmap=cmap,
        annot=True,
        fmt=".2f",
        annot_kws={"fontsize": 7},
        cbar=False,
        linewidths=0.5,
        xticklabels=True,
        yticklabels=True,
        ax=ax,
    )
    ax.set_xticks(ax.get_xticks(), wide.columns, rotation=30, ha="right")
    ax.set_yticks(ax.get_yticks(), wide.index, rotation=0)
    ax.set(xlabel="", ylabel="", title=title)
    ax.grid(False)
    return ax.collections[0]


@styled
def plot_shift_detection(table: pd.DataFrame, *, axes=None):
    """AUROC of each uncertainty signal for telling shifted from in-distribution queries, mean over the
    conditions of each shift kind: one heatmap per kind (rows rankers, columns signals; 0.5 = chance).

    From :func:`calibrank.study.analysis.practice.signals.shift_detection`.
    """
    if table.empty:
        return _empty(axes)
    kinds = list(dict.fromkeys(table["shift"]))
    panels = _panels(axes, len(kinds), 3, (3.8, 3.4), sharey=False)
    rankers = list(dict.fromkeys(table["ranker"]))
    for ax, kind in zip(panels, kinds):
        wide = table[table["shift"] == kind].pivot_table(
            index="ranker", columns="signal", values="AUROC", aggfunc="mean", dropna=False
        )  # a signal with no AUROC stays, as blank cells
        mesh = _heatmap(ax, wide.reindex(rankers), vmin=0.0, vmax=1.0, cmap="RdBu_r", title=f"{kind}: AUROC")
    plt.colorbar(mesh, ax=panels, shrink=0.8)
    return panels


@styled
def plot_performance_prediction(table: pd.DataFrame, *, target: str = "RR", axes=None):
    """Kendall's tau between each signal and the query's ``target`` (RR or R@1), mean over conditions,
    in distribution and under shift: heatmaps (rows rankers, columns signals; negative = useful).

    From :func:`calibrank.study.analysis.practice.signals.performance_prediction`.
    """
    if table.empty:
        return _empty(axes)
    t = table.assign(setting=np.where(table["shift"] == IN, IN, "under shift"))
    settings = list(dict.fromkeys(t["setting"]))
    panels = _panels(axes, len(settings), 2, (4.0, 3.4), sharey=False)
    rankers = list(dict.fromkeys(table["ranker"]))
    for ax, s in zip(panels, settings):
        wide = t[t["setting"] == s].pivot_table(
            index="ranker", columns="signal", values=f"tau {target}", aggfunc="mean"
        )
        mesh = _heatmap(ax, wide.reindex(rankers), vmin=-0.5, vmax=0.5, cmap="RdBu", title=f"{s}: tau with {target}")
    plt.colorbar(mesh, ax=panels, shrink=0.8)
    return panels


@styled
def plot_listwise_reliability(table: pd.DataFrame, *, ncols: int = 4, axes=None):
    """Reliability of the pointwise probabilities and of the top label of the candidate softmax, one panel
    per ranker (fraction relevant / correct against mean predicted, non-empty buckets; diagonal = calibrated).

    From :func:`calibrank.study.analysis.practice.listwise.listwise_reliability`.
    """
    if table.empty:
        return _empty(axes)
    rankers = list(dict.fromkeys(table["ranker"]))
    panels = _panels(axes, len(rankers), ncols, (3.0, 3.0))
    colors = category_colors(table["view"])
    for ax, ranker in zip(panels, rankers):
        sub = table[table["ranker"] == ranker]
        for view, g in sub.groupby("view", sort=False):
            ece = g["ECE"].iloc[0]  # one value per view; read before dropping empty buckets (there may be none left)
            g = g[g["count"] > 0]
            ax.plot(
                g["mean_predicted"],
                g["fraction_positive"],
                marker="o",
                ms=3,
                color=colors[view],
                label=f"{view} (ECE {ece:.3f})",
            )
        ax.plot([0, 1], [0, 1], "--", color="grey", lw=1)
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.set_title(ranker)
        ax.set_xlabel("mean predicted")
        ax.legend(fontsize=7)
    panels[0].set_ylabel("fraction relevant / correct")
    return panels


@styled
def plot_aurc_intervals(table: pd.DataFrame, *, shift: str = IN, axes=None):
    """AURC (markers) with its 95% bootstrap interval over queries (bars) per ranker, one marker per
    confidence score, on the conditions of ``shift`` (default in distribution; one panel per condition).

    From :func:`calibrank.study.analysis.practice.selective.selective_table`.
    """
    sub = table[table["shift"] == shift] if len(table) else table
    if sub.empty:
        return _empty(axes)
    groups = list(sub.groupby(["corpus", "sampler"], sort=False))
    panels = _panels(axes, len(groups), 3, (4.6, 3.0), sharey=False)
    colors = category_colors(table["confidence"])
    for ax, ((corpus, sampler), g) in zip(panels, groups):
        _dots(ax, g, "ranker", "confidence", "AURC", "AURC lo", "AURC hi", colors=colors)
        ax.set_title(f"{corpus} · {sampler} ({shift})")
        ax.set_ylabel("AURC (lower = better abstention)")
    panels[-1].legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return panels


@styled
def plot_shift_auroc_intervals(table: pd.DataFrame, *, ncols: int = 4, axes=None):
    """AUROC of each signal for flagging shifted queries (markers) with its 95% bootstrap interval
    (bars) per ranker, one panel per shifted test condition; the dashed line is chance (0.5).

    From :func:`calibrank.study.analysis.practice.signals.shift_detection`.
    """
    if table.empty:
        return _empty(axes)
    groups = list(table.groupby(["corpus", "sampler"], sort=False))
    panels = _panels(axes, len(groups), ncols, (3.6, 3.0))
    colors = category_colors(table["signal"])
    for ax, ((corpus, sampler), g) in zip(panels, groups):
        _dots(ax, g, "ranker", "signal", "AUROC", "AUROC lo", "AUROC hi", colors=colors)
        ax.axhline(0.5, ls="--", color="black", lw=1)
        ax.set_ylim(0, 1)
        ax.set_title(f"{corpus} · {sampler} ({g['shift'].iloc[0]})")
    panels[0].set_ylabel("AUROC (shifted vs in distribution)")
    panels[-1].legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return panels


@styled
def plot_nota_f1(table: pd.DataFrame, *, axes=None):
    """NOTA macro-F1 of the empty-conformal-set rule per NOTA condition, one marker per ranker, one
    panel per view x alpha; black crosses: notebook 06's random forest on the same NOTA set, where run.

    From :func:`calibrank.study.analysis.practice.nota_sets.nota_conformal_table`.
    """
    t = table[table["F1"].notna()] if len(table) else table
    if t.empty:
        return _empty(axes)
    t = t.assign(condition=t["corpus"] + " · " + t["sampler"])
    groups = list(t.groupby(["view", "alpha"], sort=False))
    panels = _panels(axes, len(groups), 2, (5.0, 3.0))
    colors = ranker_colors(t["ranker"])
    for ax, ((view, alpha), g) in zip(panels, groups):
        conds = _dots(ax, g, "condition", "ranker", "F1", colors=colors)
        forest = g[g["F1 forest"].notna()].drop_duplicates("condition").set_index("condition").reindex(conds)
        ax.plot(np.arange(len(conds)), forest["F1 forest"], "kx", ms=7, label="random forest (06, E[R])")
        ax.set_ylim(0, 1)
        ax.set_title(f"empty {view} LAC set, alpha = {alpha:g}")
    panels[0].set_ylabel("NOTA macro-F1")
    panels[-1].legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return panels


@styled
def plot_nota_threshold(table: pd.DataFrame, *, axes=None):
    """The Learn-then-Test threshold on test, from :func:`calibrank.study.analysis.practice.nota_sets.nota_threshold_table`.

    Achieved risk with its Clopper-Pearson interval (top; dashed: the target) and the share answered
    NOTA (bottom), per condition and ranker, one column per risk.
    """
    if table.empty:
        return _empty(axes)
    t = table.assign(condition=table["corpus"] + " · " + table["sampler"])
    risks = list(dict.fromkeys(t["risk"]))
    panels = _panels(axes, 2 * len(risks), len(risks), (4.6, 2.8), sharey=False)
    colors = ranker_colors(t["ranker"])
    for j, risk in enumerate(risks):
        g = t[t["risk"] == risk]
        top, bottom = panels[j], panels[len(risks) + j]
        _dots(top, g, "condition", "ranker", "achieved risk", "risk lo", "risk hi", colors=colors)
        top.axhline(g["target"].iloc[0], ls="--", color="black", lw=1)
        top.set_ylim(0, 1)
        top.set_title(f"{risk} <= {g['target'].iloc[0]:g} (delta = {g['delta'].iloc[0]:g})")
        top.set_ylabel(f"achieved {risk} rate")
        _dots(bottom, g, "condition", "ranker", "abstention", colors=colors)
        bottom.set_ylim(0, 1.02)
        bottom.set_ylabel("share answered NOTA")
    panels[len(risks) - 1].legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return panels
