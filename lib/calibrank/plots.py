"""Figures, drawn from tables and arrays computed elsewhere (no computation of results here)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

__all__ = ["plot_length_histograms"]


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
