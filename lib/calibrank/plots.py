"""Figures, drawn from tables and arrays computed elsewhere (no computation of results here)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

__all__ = [
    "plot_b_sweep",
    "plot_ece_by_negatives",
    "plot_efficiency",
    "plot_length_histograms",
    "plot_nota_bars",
    "plot_reliability_grid",
    "plot_training_curves",
]


def plot_length_histograms(lengths: pd.DataFrame, *, max_words: int = 120, axes=None):
    """Histograms of context and response lengths (words) per corpus, from :func:`calibrank.data.stats.length_frame`."""
    parts = ["context", "response"]
    if axes is None:
        _, axes = plt.subplots(1, len(parts), figsize=(11, 3.6), constrained_layout=True)
    bins = np.arange(0, max_words + 2, 2)
    for ax, part in zip(np.atleast_1d(axes), parts):
        sub = lengths[lengths["part"] == part]
        for corpus, grp in sub.groupby("corpus", sort=False):
            words = grp["words"].clip(upper=max_words)
            ax.hist(words, bins=bins, alpha=0.55, density=True, label=f"{corpus} (median {int(grp['words'].median())})")
        ax.set_xlabel(f"{part} length in words (clipped at {max_words})")
        ax.set_ylabel("density")
        ax.set_title(f"{part.capitalize()} length")
        ax.legend(frameon=False)
    return axes


def plot_training_curves(history: pd.DataFrame, validation: pd.DataFrame, *, metric_name: str = "validation R@1", axes=None):
    """Training loss per logged step and the validation metric, one line per trained model.

    Takes the two tables of :func:`calibrank.experiment.training_frames`.
    """
    if axes is None:
        _, axes = plt.subplots(1, 2, figsize=(11, 3.4), constrained_layout=True)
    ax_loss, ax_val = np.atleast_1d(axes)
    for model, grp in history.groupby("model"):
        ax_loss.plot(grp["step"], grp["loss"], marker=".", lw=1, label=f"model {model}")
    ax_loss.set_xlabel("optimizer step")
    ax_loss.set_ylabel("training loss")
    ax_loss.set_title("Training loss")
    for model, grp in validation.groupby("model"):
        ax_val.plot(grp["step"], grp["metric"], marker="o", label=f"model {model}")
    ax_val.set_xlabel("optimizer step")
    ax_val.set_ylabel(metric_name)
    ax_val.set_ylim(0, 1)
    ax_val.set_title("Validation (early selection)")
    for ax in (ax_loss, ax_val):
        if ax.get_legend_handles_labels()[0]:
            ax.legend(frameon=False)
    return axes


def _grid(n: int, ncols: int, size: tuple[float, float], sharey: bool = True):
    ncols = max(1, min(ncols, n))
    nrows = int(np.ceil(n / ncols))
    fig, axes = plt.subplots(nrows, ncols, figsize=(size[0] * ncols, size[1] * nrows), squeeze=False,
                             sharey=sharey, constrained_layout=True)
    flat = list(axes.ravel())
    for ax in flat[n:]:
        ax.set_visible(False)
    return flat[:n]


def _panels(axes, n: int, ncols: int, size: tuple[float, float], sharey: bool = True):
    if n == 0:  # nothing to draw: one empty panel that says so
        ax = np.atleast_1d(axes).ravel()[0] if axes is not None else plt.subplots(figsize=size, constrained_layout=True)[1]
        ax.text(0.5, 0.5, "nothing to show in this profile", ha="center", va="center", transform=ax.transAxes)
        ax.set_axis_off()
        return [ax]
    if axes is None:
        return _grid(n, ncols, size, sharey)
    flat = list(np.atleast_1d(axes).ravel())
    if len(flat) < n:
        raise ValueError(f"need {n} axes, got {len(flat)}")
    return flat[:n]


def plot_reliability_grid(table: pd.DataFrame, *, ncols: int = 4, axes=None):
    """Reliability diagrams, one panel per ranker, from :func:`calibrank.study.reliability_table`.

    Bars: fraction of relevant pairs per bucket, drawn at the bucket's mean predicted
    probability on the bucket's width; the number above each bar is the bucket's count; the
    dashed diagonal is perfect calibration. Empty buckets have no bar.
    """
    if table.empty:
        return _panels(axes, 0, 1, (4.0, 2.0))
    rankers = list(dict.fromkeys(table["ranker"]))
    panels = _panels(axes, len(rankers), ncols, (3.0, 3.0))
    for ax, ranker in zip(panels, rankers):
        sub = table[table["ranker"] == ranker]
        full = sub[sub["count"] > 0]
        width = (full["upper"] - full["lower"]).to_numpy()
        ax.bar(full["lower"], full["fraction_positive"], width=width, align="edge", color="#4c78a8",
               edgecolor="white", alpha=0.85, label="fraction relevant")
        ax.plot(full["mean_predicted"], full["fraction_positive"], "o", color="#e45756", ms=3, label="mean predicted")
        for _, row in full.iterrows():
            ax.annotate(str(int(row["count"])), (row["lower"] + 0.5 * (row["upper"] - row["lower"]), row["fraction_positive"]),
                        xytext=(0, 2), textcoords="offset points", ha="center", va="bottom", fontsize=7, color="#333")
        ax.plot([0, 1], [0, 1], "--", color="grey", lw=1, label="perfect calibration")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1.08)
        ax.set_xlabel("predicted P(relevant)")
        ax.set_title(f"{ranker} (ECE {sub['ECE'].iloc[0]:.3f})", fontsize=10)
    panels[0].set_ylabel("fraction relevant")
    panels[0].legend(loc="upper left", fontsize=7, frameon=False)  # one legend: every panel draws the same marks
    return panels


def plot_ece_by_negatives(table: pd.DataFrame, *, ncols: int = 3, axes=None):
    """Figure 2 of Penha & Hauff: ECE against non-relevant candidates per query, one line per ranker.

    One panel per training corpus x test condition, from :func:`calibrank.study.ece_by_negatives`;
    with ``ECE debiased``, ``ECE debiased lo`` / ``hi`` columns each ranker's debiased ECE is a
    dashed line inside its 95% band (the interval belongs to the debiased ECE, not to eq. 1's);
    with ``ECE lo`` / ``ECE hi`` the band is around the line itself.
    """
    if table.empty:
        return _panels(axes, 0, 1, (4.0, 2.0))
    keys = ["train_corpus", "corpus", "sampler"]
    groups = list(table.groupby(keys, sort=False))
    panels = _panels(axes, len(groups), ncols, (3.6, 2.9))
    for ax, ((tc, corpus, sampler), grp) in zip(panels, groups):
        for ranker, sub in grp.groupby("ranker", sort=False):
            (line,) = ax.plot(sub["n_nonrel"], sub["ECE"], marker="o", ms=3, label=ranker)
            band = "ECE debiased" if {"ECE debiased", "ECE debiased lo", "ECE debiased hi"} <= set(sub.columns) else "ECE"
            if band != "ECE":
                ax.plot(sub["n_nonrel"], sub[band], ls="--", lw=0.9, color=line.get_color())
            if {f"{band} lo", f"{band} hi"} <= set(sub.columns):
                ax.fill_between(sub["n_nonrel"], sub[f"{band} lo"], sub[f"{band} hi"], color=line.get_color(), alpha=0.12,
                                lw=0)
        ax.set_title(f"{tc} → {corpus} · {sampler}", fontsize=10)
        ax.set_xlabel("non-relevant candidates per query")
        ax.set_xticks(sorted(grp["n_nonrel"].unique()))
    panels[0].set_ylabel("ECE")
    panels[0].legend(frameon=False, fontsize=8)
    return panels


def plot_b_sweep(table: pd.DataFrame, *, y: str = "rel_change_bert", ncols: int = 3, axes=None):
    """Figure 3 of Penha & Hauff: relative R@1 change of the risk-aware ranker per b.

    ``y="rel_change_bert"`` (default, as the paper): change over the deterministic bert;
    ``y="rel_change"``: change over the same ranker at b = 0. One panel per stochastic ranker x
    training corpus, one line per test condition, from :func:`calibrank.study.risk_sweep`.
    """
    if table.empty:
        return _panels(axes, 0, 1, (4.0, 2.0))
    groups = list(table.groupby(["ranker", "train_corpus"], sort=False))
    panels = _panels(axes, len(groups), ncols, (3.8, 3.0))
    for ax, ((ranker, tc), grp) in zip(panels, groups):
        for (corpus, sampler), sub in grp.groupby(["corpus", "sampler"], sort=False):
            ax.plot(sub["b"], 100 * sub[y], marker=".", label=f"{corpus} · {sampler}")
        ax.axhline(0, color="grey", lw=0.8)
        ax.set_title(f"{ranker} (trained on {tc})", fontsize=10)
        ax.set_xlabel("risk aversion b")
    if panels:
        panels[0].set_ylabel("R@1 change over " + ("bert" if y == "rel_change_bert" else "b = 0") + " (%)")
        panels[0].legend(frameon=False, fontsize=7)
    return panels


def plot_nota_bars(table: pd.DataFrame, *, axes=None):
    """Tables 4-5 as bars: NOTA macro-F1 per input space and condition, with its 95% interval over folds
    (``f1_lo`` / ``f1_hi``; the sd over folds for tables without them).

    From :func:`calibrank.study.nota_table`; one panel per table (cross-domain, cross-NS).
    """
    if table.empty:
        return _panels(axes, 0, 1, (4.0, 2.0))
    tables = list(dict.fromkeys(table["table"]))
    panels = _panels(axes, len(tables), 2, (5.2, 3.2))
    for ax, name in zip(panels, tables):
        sub = table[table["table"] == name]
        conds = list(dict.fromkeys(sub["train_corpus"] + " → " + sub["corpus"] + " · " + sub["sampler"]))
        inputs = list(dict.fromkeys(sub["input"]))
        width = 0.8 / len(inputs)
        x = np.arange(len(conds))
        label = sub["train_corpus"] + " → " + sub["corpus"] + " · " + sub["sampler"]
        for i, inp in enumerate(inputs):
            rows = sub[sub["input"] == inp].assign(cond=label).set_index("cond").reindex(conds)
            if {"f1_lo", "f1_hi"} <= set(rows.columns):
                err = np.vstack([(rows["f1_mean"] - rows["f1_lo"]).fillna(0), (rows["f1_hi"] - rows["f1_mean"]).fillna(0)])
            else:
                err = rows["f1_sd"].fillna(0)
            ax.bar(x + (i - (len(inputs) - 1) / 2) * width, rows["f1_mean"], width, yerr=err, capsize=2, label=inp)
        ax.set_xticks(x, conds, rotation=15, ha="right", fontsize=8)
        ax.set_ylim(0, 1)
        ax.set_title(name, fontsize=10)
    panels[0].set_ylabel("NOTA macro-F1")
    panels[-1].legend(frameon=False, fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))  # beside the bars, not on them
    return panels


def plot_efficiency(table: pd.DataFrame, *, ax=None):
    """Inference time per query relative to ``bert`` (bars, ours) with the papers' ratios (markers).

    From :func:`calibrank.efficiency.efficiency_table`; with ``ratio lo`` / ``ratio hi`` the bars
    carry the 95% interval over the timing repeats.
    """
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 0.5 + 0.45 * len(table)), constrained_layout=True)
    y = np.arange(len(table))
    err = None
    if {"ratio lo", "ratio hi"} <= set(table.columns):
        err = np.vstack([(table["ratio_to_bert"] - table["ratio lo"]).clip(lower=0).fillna(0),
                         (table["ratio hi"] - table["ratio_to_bert"]).clip(lower=0).fillna(0)])
    ax.barh(y, table["ratio_to_bert"], xerr=err, capsize=2, color="#4c78a8", label="ours (same queries, one run)")
    for col, marker, color in (("PG-DRR ratio", "D", "#e45756"), ("GPF-BERT ratio", "s", "#54a24b")):
        if col in table:
            ax.plot(table[col], y, marker, color=color, ls="none", label=f"{col.split()[0]} paper")
    ax.axvline(1, color="grey", lw=0.8)
    ax.set_yticks(y, table["ranker"])
    ax.invert_yaxis()
    ax.set_xlabel("inference time per query / bert's")
    ax.legend(frameon=False, fontsize=8, loc="lower right")
    return ax
