"""Figures, drawn from tables and arrays computed elsewhere (no computation of results here)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

__all__ = ["plot_length_histograms", "plot_training_curves"]


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
