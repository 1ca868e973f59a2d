"""Figures, drawn from tables and arrays computed elsewhere (no computation of results here).

Every figure of the project shares one look, set here: :func:`style` (seaborn's whitegrid theme at
paper scale) is applied by every plotting function, each ranker keeps one colour in every figure
(:func:`ranker_colors`) and any other category takes its colours from one second palette
(:func:`category_colors`). Lines, bands and interval bars are drawn from the tables' own values and
``lo`` / ``hi`` columns: nothing is estimated while drawing.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from calibrank.study.analysis.efficiency import CLOCKS, clock_view
from calibrank.study.settings.registry import RANKERS

__all__ = [
    "band",
    "category_colors",
    "plot_b_sweep",
    "plot_ece_by_negatives",
    "plot_efficiency",
    "plot_efficiency_clocks",
    "plot_length_histograms",
    "plot_nota_bars",
    "plot_metric_intervals",
    "plot_reliability_grid",
    "plot_reliability_intervals",
    "plot_score_histograms",
    "plot_side_by_side",
    "plot_training_curves",
    "ranker_colors",
    "style",
    "styled",
]

RANKER_PALETTE = "colorblind"
"""Seaborn palette of the rankers: the registered rankers take its colours in registration order."""
CATEGORY_PALETTE = "Dark2"
"""Seaborn palette of every other category a figure tells apart (conditions, inputs, methods, signals)."""
BAND_ALPHA = 0.18
"""Opacity of an interval band."""

F = TypeVar("F", bound=Callable[..., Any])


@contextmanager
def style(*, font_scale: float = 1.0) -> Iterator[None]:
    """The look of every figure: seaborn's ``whitegrid`` theme at ``paper`` scale, legends without a frame.

    A context (as :func:`seaborn.axes_style`), so the caller's own matplotlib settings are left as they were;
    axes made inside it keep the look when drawn later.
    """
    rc = {
        **sns.axes_style("whitegrid"),
        **sns.plotting_context("paper", font_scale=font_scale),
        "legend.frameon": False,
        "axes.titlesize": 10 * font_scale,
        "axes.prop_cycle": mpl.cycler(color=sns.color_palette(CATEGORY_PALETTE)),
    }
    # Only the keys it sets are restored: matplotlib's rc_context restores every key, and in a notebook the
    # inline backend then stops showing the figures made after it.
    before = {key: mpl.rcParams[key] for key in rc}
    mpl.rcParams.update(rc)
    try:
        yield
    finally:
        mpl.rcParams.update(before)


def styled(fn: F) -> F:
    """``fn`` drawn under :func:`style`: the decorator of every plotting function."""

    @functools.wraps(fn)
    def draw(*args, **kwargs):
        with style():
            return fn(*args, **kwargs)

    return draw  # type: ignore[return-value]


def ranker_colors(names: Iterable[str]) -> dict[str, tuple[float, float, float]]:
    """A colour per ranker, the same in every figure: a registered ranker (:mod:`calibrank.study.settings.registry`) has the
    palette colour of its registration index; other names take the colours after those, in the order given
    (past the palette's ten colours, they repeat)."""
    names = list(dict.fromkeys(str(n) for n in names))
    known = list(RANKERS)
    others = [n for n in names if n not in RANKERS]
    palette = sns.color_palette(RANKER_PALETTE, max(len(known) + len(others), 10))
    index = {**{n: i for i, n in enumerate(known)}, **{n: len(known) + i for i, n in enumerate(others)}}
    return {n: palette[index[n]] for n in names}


def category_colors(levels: Iterable[Any]) -> dict[Any, tuple[float, float, float]]:
    """A colour per category level (anything but rankers), in the order given: the same levels in the same
    order get the same colours in every figure (past the palette's eight colours, they repeat)."""
    levels = list(dict.fromkeys(levels))
    palette = sns.color_palette(CATEGORY_PALETTE, max(len(levels), 8))
    return dict(zip(levels, palette))


def band(ax, x, lo, hi, color) -> None:
    """The interval ``[lo, hi]`` around a line, from the table's own bounds (a gap where a bound is NaN)."""
    ax.fill_between(x, lo, hi, color=color, alpha=BAND_ALPHA, lw=0)


def _grid(n: int, ncols: int, size: tuple[float, float], sharey: bool = True):
    ncols = max(1, min(ncols, n))
    nrows = int(np.ceil(n / ncols))
    fig, axes = plt.subplots(
        nrows, ncols, figsize=(size[0] * ncols, size[1] * nrows), squeeze=False, sharey=sharey, constrained_layout=True
    )
    flat = list(axes.ravel())
    for ax in flat[n:]:
        ax.set_visible(False)
    return flat[:n]


def _panels(axes, n: int, ncols: int, size: tuple[float, float], sharey: bool = True):
    if n == 0:  # nothing to draw: one empty panel that says so
        ax = (
            np.atleast_1d(axes).ravel()[0]
            if axes is not None
            else plt.subplots(figsize=size, constrained_layout=True)[1]
        )
        ax.text(0.5, 0.5, "nothing to show in this profile", ha="center", va="center", transform=ax.transAxes)
        ax.set_axis_off()
        return [ax]
    if axes is None:
        return _grid(n, ncols, size, sharey)
    flat = list(np.atleast_1d(axes).ravel())
    if len(flat) < n:
        raise ValueError(f"need {n} axes, got {len(flat)}")
    return flat[:n]


@styled
def plot_length_histograms(lengths: pd.DataFrame, *, max_words: int = 120, axes=None):
    """Histograms of context and response lengths (words) per corpus, from :func:`calibrank.study.data.stats.length_frame`.

    Densities per corpus (each corpus integrates to 1), lengths above ``max_words`` in the last bin; one colour
    per corpus in both panels.
    """
    parts = ["context", "response"]
    if axes is None:
        _, axes = plt.subplots(1, len(parts), figsize=(11, 3.6), constrained_layout=True)
    bins = np.arange(0, max_words + 2, 2)
    colors = category_colors(lengths["corpus"])
    for ax, part in zip(np.atleast_1d(axes), parts):
        sub = lengths[lengths["part"] == part]
        if len(sub):
            label = {c: f"{c} (median {int(g['words'].median())})" for c, g in sub.groupby("corpus", sort=False)}
            shown = sub.assign(words=sub["words"].clip(upper=max_words), corpus=sub["corpus"].map(label))
            sns.histplot(
                shown,
                x="words",
                hue="corpus",
                bins=bins,
                stat="density",
                common_norm=False,
                element="step",
                alpha=0.3,
                palette={label[c]: colors[c] for c in label},
                ax=ax,
            )
        ax.set_xlabel(f"{part} length in words (clipped at {max_words})")
        ax.set_ylabel("density")
        ax.set_title(f"{part.capitalize()} length")
    return axes


@styled
def plot_training_curves(
    history: pd.DataFrame, validation: pd.DataFrame, *, metric_name: str = "validation R@1", axes=None
):
    """Training loss per logged step and the validation metric, one line (one colour) per trained model.

    Takes the two tables of :func:`calibrank.study.model.experiment.training_frames`.
    """
    if axes is None:
        _, axes = plt.subplots(1, 2, figsize=(11, 3.4), constrained_layout=True)
    ax_loss, ax_val = np.atleast_1d(axes)
    colors = category_colors(sorted(set(history["model"]) | set(validation["model"])))
    for model, grp in history.groupby("model"):
        ax_loss.plot(grp["step"], grp["loss"], marker=".", lw=1, color=colors[model], label=f"model {model}")
    ax_loss.set_xlabel("optimizer step")
    ax_loss.set_ylabel("training loss")
    ax_loss.set_title("Training loss")
    for model, grp in validation.groupby("model"):
        ax_val.plot(grp["step"], grp["metric"], marker="o", color=colors[model], label=f"model {model}")
    ax_val.set_xlabel("optimizer step")
    ax_val.set_ylabel(metric_name)
    ax_val.set_ylim(0, 1)
    ax_val.set_title("Validation (early selection)")
    for ax in (ax_loss, ax_val):
        if ax.get_legend_handles_labels()[0]:
            ax.legend()
    return axes


@styled
def plot_reliability_grid(table: pd.DataFrame, *, ncols: int = 4, axes=None):
    """Reliability diagrams, one panel per ranker, from :func:`calibrank.study.analysis.study.reliability_table`.

    Several conditions (or training corpora) give one row each. Bars: the fraction relevant per
    bucket at its mean probability, with its count; dashed: perfect calibration.
    """
    if table.empty:
        return _panels(axes, 0, 1, (4.0, 2.0))
    rankers = list(dict.fromkeys(table["ranker"]))
    where = list(dict.fromkeys(zip(table["train_corpus"], table["condition"])))
    several = len(where) > 1
    cells = [(w, r) for w in where for r in rankers]
    panels = _panels(axes, len(cells), len(rankers) if several else ncols, (3.0, 3.0))
    colors = ranker_colors(rankers)
    for ax, ((tc, condition), ranker) in zip(panels, cells):
        sub = table[(table["ranker"] == ranker) & (table["train_corpus"] == tc) & (table["condition"] == condition)]
        if sub.empty:  # this ranker has no predictions on this condition
            ax.set_visible(False)
            continue
        full = sub[sub["count"] > 0]
        width = (full["upper"] - full["lower"]).to_numpy()
        ax.bar(
            full["lower"],
            full["fraction_positive"],
            width=width,
            align="edge",
            color=colors[ranker],
            alpha=0.8,
            label="fraction relevant",
        )
        ax.plot(full["mean_predicted"], full["fraction_positive"], "o", color=".15", ms=3, label="mean predicted")
        for _, row in full.iterrows():
            ax.annotate(
                str(int(row["count"])),
                (row["lower"] + 0.5 * (row["upper"] - row["lower"]), row["fraction_positive"]),
                xytext=(0, 2),
                textcoords="offset points",
                ha="center",
                va="bottom",
                fontsize=7,
                color=".25",
            )
        ax.plot([0, 1], [0, 1], "--", color="grey", lw=1, label="perfect calibration")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1.08)
        ax.set_xlabel("predicted P(relevant)")
        where_line = f"{tc} → {condition}\n" if several else ""
        ax.set_title(f"{where_line}{ranker} (ECE {sub['ECE'].iloc[0]:.3f})")
    for ax in panels[:: len(rankers) if several else max(1, min(ncols, len(panels)))]:
        ax.set_ylabel("fraction relevant")
    panels[0].legend(loc="upper left", fontsize=7)  # one legend: every panel draws the same marks
    return panels


@styled
def plot_ece_by_negatives(table: pd.DataFrame, *, ncols: int = 3, axes=None):
    """Figure 2 of Penha & Hauff: ECE against non-relevant candidates per query, one line per ranker.

    One panel per training corpus x test condition, from :func:`calibrank.study.analysis.study.ece_by_negatives`;
    the band is the debiased ECE's 95% interval (dashed line) when the table has one, else ``ECE lo`` / ``hi``.
    """
    if table.empty:
        return _panels(axes, 0, 1, (4.0, 2.0))
    keys = ["train_corpus", "corpus", "sampler"]
    groups = list(table.groupby(keys, sort=False))
    panels = _panels(axes, len(groups), ncols, (3.6, 2.9))
    colors = ranker_colors(table["ranker"])
    banded = "ECE debiased" if {"ECE debiased", "ECE debiased lo", "ECE debiased hi"} <= set(table.columns) else "ECE"
    for ax, ((tc, corpus, sampler), grp) in zip(panels, groups):
        for ranker, sub in grp.groupby("ranker", sort=False):
            color = colors[ranker]
            ax.plot(sub["n_nonrel"], sub["ECE"], marker="o", ms=3, color=color, label=ranker)
            if banded != "ECE":
                ax.plot(sub["n_nonrel"], sub[banded], ls="--", lw=0.9, color=color)
            if {f"{banded} lo", f"{banded} hi"} <= set(sub.columns):
                band(ax, sub["n_nonrel"], sub[f"{banded} lo"], sub[f"{banded} hi"], color)
        ax.set_title(f"{tc} → {corpus} · {sampler}")
        ax.set_xlabel("non-relevant candidates per query")
        ax.set_xticks(sorted(grp["n_nonrel"].unique()))
    panels[0].set_ylabel("ECE")
    panels[0].figure.legend(*panels[0].get_legend_handles_labels(), loc="outside right upper")  # off the lines
    return panels


@styled
def plot_b_sweep(table: pd.DataFrame, *, y: str = "rel_change_bert", ncols: int = 3, axes=None):
    """Figure 3 of Penha & Hauff: relative R@1 change of the risk-aware ranker per b.

    ``y="rel_change_bert"`` (the paper's) or ``"rel_change"`` (over b = 0); one panel per stochastic
    ranker x training corpus, one line per test condition, from :func:`calibrank.study.analysis.study.risk_sweep`.
    """
    if table.empty:
        return _panels(axes, 0, 1, (4.0, 2.0))
    groups = list(table.groupby(["ranker", "train_corpus"], sort=False))
    panels = _panels(axes, len(groups), ncols, (3.8, 3.0))
    colors = category_colors(zip(table["corpus"], table["sampler"]))
    banded = {f"{y} lo", f"{y} hi"} <= set(table.columns)
    for ax, ((ranker, tc), grp) in zip(panels, groups):
        for (corpus, sampler), sub in grp.groupby(["corpus", "sampler"], sort=False):
            color = colors[(corpus, sampler)]
            ax.plot(sub["b"], 100 * sub[y], marker=".", color=color, label=f"{corpus} · {sampler}")
            if banded:
                band(ax, sub["b"], 100 * sub[f"{y} lo"], 100 * sub[f"{y} hi"], color)
        ax.axhline(0, color="grey", lw=0.8)
        ax.set_title(f"{ranker} (trained on {tc})")
        ax.set_xlabel("risk aversion b")
    panels[0].set_ylabel("R@1 change over " + ("bert" if y == "rel_change_bert" else "b = 0") + " (%)")
    panels[0].legend(fontsize=7)
    return panels


@styled
def plot_nota_bars(table: pd.DataFrame, *, axes=None):
    """Tables 4-5 as bars: NOTA macro-F1 per input space and condition, with its 95% interval over folds
    (``f1_lo`` / ``f1_hi``; the sd over folds for tables without them).

    From :func:`calibrank.study.analysis.study.nota_table`; one panel per table (cross-domain, cross-NS), one colour per input.
    """
    if table.empty:
        return _panels(axes, 0, 1, (4.0, 2.0))
    tables = list(dict.fromkeys(table["table"]))
    panels = _panels(axes, len(tables), 2, (5.2, 3.2))
    colors = category_colors(table["input"])
    for ax, name in zip(panels, tables):
        sub = table[table["table"] == name]
        label = sub["train_corpus"] + " → " + sub["corpus"] + " · " + sub["sampler"]
        conds = list(dict.fromkeys(label))
        inputs = list(dict.fromkeys(sub["input"]))
        width = 0.8 / len(inputs)
        x = np.arange(len(conds))
        for i, inp in enumerate(inputs):
            rows = sub[sub["input"] == inp].assign(cond=label).set_index("cond").reindex(conds)
            if {"f1_lo", "f1_hi"} <= set(rows.columns):
                err = np.vstack(
                    [(rows["f1_mean"] - rows["f1_lo"]).fillna(0), (rows["f1_hi"] - rows["f1_mean"]).fillna(0)]
                )
            else:
                err = rows["f1_sd"].fillna(0)
            ax.bar(
                x + (i - (len(inputs) - 1) / 2) * width,
                rows["f1_mean"],
                width,
                yerr=err,
                capsize=2,
                color=colors[inp],
                error_kw={"ecolor": ".2", "lw": 1},
                label=inp,
            )
        ax.set_xticks(x, conds, rotation=15, ha="right")
        ax.set_ylim(0, 1)
        ax.set_title(name)
    panels[0].set_ylabel("NOTA macro-F1")
    panels[-1].legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))  # beside the bars, not on them
    return panels


@styled
def plot_efficiency(table: pd.DataFrame, *, ax=None):
    """Inference time per query relative to ``bert`` (bars, ours) with the papers' ratios (markers).

    From :func:`calibrank.study.analysis.efficiency.efficiency_table`; with ``ratio lo`` / ``ratio hi`` the bars
    carry the 95% interval over the timing repeats.
    """
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 0.5 + 0.45 * len(table)), constrained_layout=True)
    y = np.arange(len(table))
    err = None
    if {"ratio lo", "ratio hi"} <= set(table.columns):
        err = np.vstack(
            [
                (table["ratio_to_bert"] - table["ratio lo"]).clip(lower=0).fillna(0),
                (table["ratio hi"] - table["ratio_to_bert"]).clip(lower=0).fillna(0),
            ]
        )
    ax.barh(
        y,
        table["ratio_to_bert"],
        xerr=err,
        capsize=2,
        color=".65",
        error_kw={"ecolor": ".2", "lw": 1},
        label="ours (same queries, one run)",
    )
    papers = category_colors(["PG-DRR ratio", "GPF-BERT ratio"])
    for col, marker in (("PG-DRR ratio", "D"), ("GPF-BERT ratio", "s")):
        if col in table:
            ax.plot(table[col], y, marker, color=papers[col], ls="none", label=f"{col.split()[0]} paper")
    ax.axvline(1, color="grey", lw=0.8)
    ax.set_yticks(y, table["ranker"])
    ax.invert_yaxis()
    ax.set_xlabel("inference time per query / bert's")
    ax.legend(loc="lower right")
    return ax


@styled
def plot_efficiency_clocks(table: pd.DataFrame):
    """:func:`plot_efficiency` on each clock side by side, the deciding one (the table's ``clock``) marked."""
    fig, axes = plt.subplots(1, 2, figsize=(12, 0.6 + 0.45 * len(table)), sharey=True, constrained_layout=True)
    for ax, clock in zip(axes, CLOCKS):
        plot_efficiency(clock_view(table, clock), ax=ax)
        ax.set_title(
            f"{'process CPU' if clock == 'cpu' else 'wall'} time"
            + (" (decides)" if clock == table["clock"].iloc[0] else "")
        )
    return fig


# ------------------------------------------------------------------------------ the explorer (calibrank.study.analysis.explore)
def _colors_by(by: str, names: Iterable[str]) -> dict:
    """A ranker's own colour when the panels are rankers, else the category palette's."""
    return ranker_colors(names) if by == "ranker" else category_colors(names)


@styled
def plot_reliability_intervals(table: pd.DataFrame, *, by: str = "ranker", ncols: int = 4, axes=None):
    """Reliability diagrams with each bucket's interval and count, one panel per ``by`` value.

    From :func:`calibrank.study.analysis.explore.reliability_view` (or ``reliability_frame`` with a ``by``
    column). Points: the fraction relevant of each filled bucket at its mean predicted probability, joined by a
    line; bars: its 95% interval over queries (``fraction_positive lo`` / ``hi``); the bucket's count above the
    bar; dashed: perfect calibration. An empty bucket draws nothing.
    """
    if table.empty:
        return _panels(axes, 0, 1, (4.0, 2.0))
    names = list(dict.fromkeys(table[by]))
    panels = _panels(axes, len(names), ncols, (3.4, 3.2))
    colors = _colors_by(by, names)
    for ax, name in zip(panels, names):
        sub = table[(table[by] == name) & (table["count"] > 0)]
        x, y = sub["mean_predicted"].to_numpy(), sub["fraction_positive"].to_numpy()
        err = np.vstack(
            [(y - sub["fraction_positive lo"]).clip(lower=0), (sub["fraction_positive hi"] - y).clip(lower=0)]
        )
        ax.errorbar(
            x,
            y,
            yerr=err,
            fmt="o-",
            ms=4,
            lw=1.2,
            capsize=2,
            color=colors[name],
            label="fraction relevant, 95% interval",
        )
        for xi, top, n in zip(x, sub["fraction_positive hi"].fillna(sub["fraction_positive"]), sub["count"]):
            ax.annotate(
                str(int(n)),
                (xi, top),
                xytext=(0, 3),
                textcoords="offset points",
                ha="center",
                va="bottom",
                fontsize=7,
                color=".3",
            )
        ax.plot([0, 1], [0, 1], "--", color="grey", lw=1, label="perfect calibration")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1.12)
        ax.set_xlabel("predicted P(relevant)")
        ece = table.loc[table[by] == name, "ECE"]
        ax.set_title(f"{name}" + (f" (ECE {ece.iloc[0]:.3f})" if len(ece) and np.isfinite(ece.iloc[0]) else ""))
    panels[0].set_ylabel("fraction relevant (count above)")
    panels[0].legend(loc="upper left", fontsize=7)
    return panels


@styled
def plot_score_histograms(table: pd.DataFrame, *, by: str = "ranker", ncols: int = 4, axes=None):
    """The predicted probabilities of relevant and non-relevant candidates, one panel per ``by`` value.

    From :func:`calibrank.study.analysis.explore.histogram_view`: one step outline per label, each a density
    (its area is 1), with the label's candidates and mean probability in the legend.
    """
    if table.empty:
        return _panels(axes, 0, 1, (4.0, 2.0))
    names = list(dict.fromkeys(table[by]))
    panels = _panels(axes, len(names), ncols, (3.4, 3.0), sharey=False)
    colors = category_colors(dict.fromkeys(table["label"]))
    for ax, name in zip(panels, names):
        for label, sub in table[table[by] == name].groupby("label", sort=False):
            edges = np.append(sub["lower"].to_numpy(), sub["upper"].iloc[-1])
            first = sub.iloc[0]
            text = (
                f"{label} ({int(first['candidates'])}, mean {first['mean']:.2f})"
                if first["candidates"]
                else f"{label} (none)"
            )
            ax.stairs(sub["density"].fillna(0).to_numpy(), edges, fill=True, alpha=0.25, color=colors[label])
            ax.stairs(sub["density"].fillna(0).to_numpy(), edges, color=colors[label], lw=1.2, label=text)
        ax.set_xlim(0, 1)
        ax.set_xlabel("predicted P(relevant)")
        ax.set_title(str(name))
        ax.legend(loc="upper center", fontsize=7)
    panels[0].set_ylabel("density")
    return panels


@styled
def plot_metric_intervals(table: pd.DataFrame, *, by: str = "ranker", axes=None):
    """Each metric with its 95% interval, one panel per metric and one row per ``by`` value.

    From :func:`calibrank.study.analysis.explore.metrics_view`: a point and bar per metric that has an interval;
    the ``ECE`` row (eq. 1, no interval) is an open marker in the debiased ECE's panel, the interval's own.
    """
    if table.empty:
        return _panels(axes, 0, 1, (4.0, 2.0))
    metrics = [m for m in dict.fromkeys(table["metric"]) if m != "ECE"]
    names = list(dict.fromkeys(table[by]))
    panels = _panels(axes, len(metrics), len(metrics), (3.2, 0.9 + 0.45 * len(names)), sharey=True)
    colors = _colors_by(by, names)
    y = np.arange(len(names))
    for ax, metric in zip(panels, metrics):
        for i, name in enumerate(names):
            row = table[(table[by] == name) & (table["metric"] == metric)]
            if row.empty:
                continue
            v, lo, hi = (float(row[c].iloc[0]) for c in ("value", "lo", "hi"))
            err = [[max(v - lo, 0)], [max(hi - v, 0)]] if np.isfinite(lo) and np.isfinite(hi) else None
            ax.errorbar([v], [i], xerr=err, fmt="o", capsize=3, color=colors[name])
            ax.annotate(f"{v:.3f}", (v, i), xytext=(0, 5), textcoords="offset points", ha="center", fontsize=7)
            plain = table[(table[by] == name) & (table["metric"] == "ECE")]
            if metric == "ECE debiased" and len(plain):
                ax.plot(
                    plain["value"].iloc[0],
                    i,
                    "o",
                    mfc="none",
                    color=colors[name],
                    label="ECE (eq. 1)" if i == 0 else None,
                )
        ax.set_title(metric)
        ax.set_ylim(-0.6, len(names) - 0.4)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(loc="lower right", fontsize=7)
    panels[0].set_yticks(y, names)
    panels[0].invert_yaxis()
    return panels


@styled
def plot_side_by_side(reliability: pd.DataFrame, comparison: pd.DataFrame, *, by: str = "ranker"):
    """Two rankers side by side: their reliability diagrams (:func:`plot_reliability_intervals`) and, in a third
    panel, each metric's difference with its 95% interval and two-sided p-value, from
    :func:`calibrank.study.analysis.explore.compare_view` (``by`` minus ``versus``)."""
    fig, axes = plt.subplots(
        1, 3, figsize=(11, 3.4), constrained_layout=True, gridspec_kw={"width_ratios": [1, 1, 1.1]}
    )
    plot_reliability_intervals(reliability, by=by, axes=axes[:2])
    ax = axes[2]
    y = np.arange(len(comparison))
    err = np.vstack(
        [
            (comparison["change"] - comparison["lo"]).clip(lower=0).fillna(0),
            (comparison["hi"] - comparison["change"]).clip(lower=0).fillna(0),
        ]
    )
    ax.errorbar(comparison["change"], y, xerr=err, fmt="o", capsize=3, color=".2")
    for yi, (_, row) in zip(y, comparison.iterrows()):
        if not np.isfinite(row["change"]):  # no difference to show: the row keeps its tick, empty
            continue
        p = f"p = {row['pvalue']:.3g}" if np.isfinite(row["pvalue"]) else "no test"
        ax.annotate(
            f"{row['change']:+.3f} ({p})",
            (row["change"], yi),
            xytext=(0, 6),
            textcoords="offset points",
            ha="center",
            fontsize=7,
        )
    ax.axvline(0, color="grey", lw=0.8)
    ax.set_yticks(y, comparison["metric"])
    ax.set_ylim(-0.6, len(comparison) - 0.4)
    ax.invert_yaxis()
    if len(comparison):
        ax.set_title(f"{comparison[by].iloc[0]} − {comparison['versus'].iloc[0]}")
    ax.set_xlabel("difference, 95% interval over queries")
    return [*axes[:2], ax]
