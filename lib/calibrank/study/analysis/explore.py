"""The explorer of notebooks 04, 08 and 09: one function per view of a cell's Predictions, and the widgets that pick it.

A reader picks the ranker(s), the training corpus, the test condition and the training seed (in notebook 08
also the recalibrator) and sees, recomputed from the Predictions:

- :func:`reliability_view`: the reliability diagram's buckets (Penha & Hauff 2021, eq. 1's ten equal-width
  buckets) with their counts and a 95% interval of each bucket's fraction relevant over test queries;
- :func:`histogram_view`: the predicted probabilities of relevant and of non-relevant candidates;
- :func:`metrics_view`: R10@1, ECE (eq. 1 and debiased) and Brier, each with its 95% interval, as notebook 04's
  tables compute them (:func:`calibrank.study.analysis.uncertainty.cell_estimates`);
- :func:`compare_view`: two rankers on the same queries: each metric's difference, its interval and a paired
  permutation test (:func:`calibrank.study.analysis.uncertainty.cell_comparison`, two-sided).

The ``*_frame`` functions compute the same tables for any Predictions (notebook 09's views of a user's run);
:mod:`calibrank.study.analysis.plots` draws them. :func:`figure` draws one selection, :func:`explorer` (and
:func:`assessment_explorer` for notebook 09) builds the widgets that redraw it: ipywidgets is a notebook
dependency, imported there. Shown in a notebook, an :class:`Explorer` is its widgets followed by the selection
it was built with as a plain figure, which is what an executed notebook turned to HTML, and the report, show.
"""

from __future__ import annotations

import base64
import io
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from calibrank.assess.sections.reliability import deployed_view, views
from calibrank.methods.prior import train_prior
from calibrank.methods.recalibrate import fit_recalibrator, recalibrate
from calibrank.metrics.calibration import reliability_curve
from calibrank.predictions import Predictions
from calibrank.study.analysis import plots
from calibrank.study.analysis import uncertainty as unc
from calibrank.study.analysis.calibration import RELIABILITY_BINS, default_condition
from calibrank.study.analysis.load import BASELINE, Study, with_keys
from calibrank.study.analysis.practice.fitdata import drop_queries, fit_data
from calibrank.study.data.conditions import Condition
from calibrank.table_checks import in_range, raise_problems, rows_failing

__all__ = [
    "HISTOGRAM_BINS",
    "LABELS",
    "N_RESAMPLES",
    "VIEWS",
    "Explorer",
    "assessment_explorer",
    "cell_predictions",
    "compare_frame",
    "compare_view",
    "default_rankers",
    "explorer",
    "figure",
    "histogram_frame",
    "histogram_view",
    "metrics_frame",
    "metrics_view",
    "reliability_frame",
    "reliability_view",
]

VIEWS = ("reliability", "histograms", "metrics", "side by side")
"""What the explorer draws for a selection: :func:`reliability_view`, :func:`histogram_view`,
:func:`metrics_view`, and two rankers' reliability with :func:`compare_view`."""

N_RESAMPLES = 1000
"""Bootstrap resamples of an interval the explorer draws: half of the tables' 2000
(:data:`calibrank.study.analysis.uncertainty.N_RESAMPLES`), so that a redraw stays interactive."""

HISTOGRAM_BINS = 20
"""Equal-width bins of the score histograms on [0, 1]."""

LABELS = {1: "relevant", 0: "not relevant"}
"""How the histograms name a candidate's label."""

_METRICS = ("R@1", "ECE", "Brier")
_BATCH = 250  # bootstrap resamples drawn at once: [batch, queries] counts


# ------------------------------------------------------------------------------ one Predictions
def _bucket_ids(probs: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """The bucket of each probability under :func:`calibrank.metrics.calibration.reliability_curve`'s rule
    (right-closed buckets: the first interior edge at or above it)."""
    return np.searchsorted(edges[1:-1], probs, side="left")


def reliability_frame(
    pred: Predictions,
    *,
    n_bins: int = RELIABILITY_BINS,
    level: float = unc.LEVEL,
    n_resamples: int = N_RESAMPLES,
    seed: int = 0,
) -> pd.DataFrame:
    """A reliability diagram's buckets with an interval of each bucket's fraction relevant.

    The buckets and their numbers are :func:`calibrank.metrics.calibration.reliability_curve`'s (equal width,
    right-closed, padded slots left out). The interval is the ``level`` percentile bootstrap over test queries
    (Efron & Tibshirani 1993, ch. 13): a resample draws queries with replacement and keeps each query's pairs
    together, as every interval of the study does, since a query's candidates share one relevant response. A
    bucket that a resample leaves empty has no fraction there: the interval is over the resamples that fill it.

    Parameters
    ----------
    pred : Predictions
        One ranker on one query set (``probs`` are read).
    n_bins : int, default=10
        Equal-width buckets on [0, 1].
    level : float, default=0.95
        Coverage of the intervals.
    n_resamples : int, default=1000
        Bootstrap resamples.
    seed : int, default=0
        Seeds the resamples: the same seed gives the same intervals.

    Returns
    -------
    pandas.DataFrame
        One row per bucket: ``bin``, ``lower``, ``upper``, ``mean_predicted``, ``fraction_positive`` with
        ``fraction_positive lo`` / ``hi`` (NaN for an empty bucket), ``count``, ``share`` (of all pairs) and
        the ``ECE`` (eq. 1) of these buckets.

    Examples
    --------
    >>> import numpy as np
    >>> from calibrank.predictions import Predictions
    >>> labels = np.eye(4, dtype=int)[[0, 1, 2, 3, 0, 1]]          # 6 queries, 4 candidates, one relevant each
    >>> probs = np.where(labels == 1, 0.75, 0.15)
    >>> frame = reliability_frame(Predictions(np.arange(6), labels, probs, probs[None]), n_bins=4, n_resamples=200)
    >>> frame[["bin", "count", "fraction_positive"]].to_dict("list")
    {'bin': [0, 1, 2, 3], 'count': [18, 0, 6, 0], 'fraction_positive': [0.0, nan, 1.0, nan]}
    >>> round(float(frame["ECE"].iloc[0]), 3)                      # (18 * 0.15 + 6 * 0.25) / 24
    0.175
    """
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, (int, np.integer)) or n_resamples < 2:
        raise ValueError(f"n_resamples must be an integer >= 2; got {n_resamples!r}")
    if not 0 < level < 1:
        raise ValueError(f"level must be strictly between 0 and 1; got {level!r}")
    valid = pred.valid
    curve = reliability_curve(pred.probs[valid], pred.labels[valid], n_bins=n_bins)
    q = pred.labels.shape[0]
    cell = (np.arange(q)[:, None] * n_bins + _bucket_ids(pred.probs, curve.bin_edges))[valid]
    count_q = np.bincount(cell, minlength=q * n_bins).reshape(q, n_bins).astype(np.float64)
    relevant_q = np.bincount(cell, weights=pred.labels[valid].astype(np.float64), minlength=q * n_bins).reshape(
        q, n_bins
    )
    if not np.array_equal(count_q.sum(axis=0), curve.counts):
        raise AssertionError(
            f"reliability buckets per query add up to {count_q.sum(axis=0).tolist()}, "
            f"expected the curve's counts {curve.counts.tolist()}"
        )
    rng = np.random.default_rng(seed)
    fractions = []
    for start in range(0, n_resamples, _BATCH):
        draws = rng.multinomial(q, np.full(q, 1.0 / q), size=min(_BATCH, n_resamples - start)).astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            fractions.append((draws @ relevant_q) / (draws @ count_q))
    tail = 100 * (1 - level) / 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an empty bucket: all NaN, its interval NaN
        lo, hi = np.nanpercentile(np.concatenate(fractions), [tail, 100 - tail], axis=0)
    empty = curve.counts == 0
    out = pd.DataFrame(
        {
            "bin": np.arange(n_bins),
            "lower": curve.bin_edges[:-1],
            "upper": curve.bin_edges[1:],
            "mean_predicted": curve.mean_predicted,
            "fraction_positive": curve.fraction_positive,
            "fraction_positive lo": np.where(empty, np.nan, lo),
            "fraction_positive hi": np.where(empty, np.nan, hi),
            "count": curve.counts.astype(int),
            "share": curve.counts / curve.counts.sum(),
            "ECE": curve.ece,
        }
    )
    _check_reliability(out)
    return out


def _check_reliability(table: pd.DataFrame) -> None:
    """Fractions and their bounds in [0, 1] (NaN for an empty bucket only), ``lo <= hi``, shares adding up to 1."""
    name, keys = "reliability view", ("bin",)
    filled = table["count"] > 0
    problems = []
    for c in ("fraction_positive", "fraction_positive lo", "fraction_positive hi"):
        problems += in_range(name, table, c, keys, 0, 1, allow_nan=True)
        problems += rows_failing(
            name, table, table[c].notna() == filled, keys, f"{c} given exactly for a filled bucket", ["count", c]
        )
    problems += rows_failing(
        name,
        table,
        ~filled | (table["fraction_positive lo"] <= table["fraction_positive hi"]),
        keys,
        "fraction_positive lo <= hi",
        ["fraction_positive lo", "fraction_positive hi"],
    )
    if not np.isclose(table["share"].sum(), 1.0):
        problems.append(f"{name}: bucket shares add up to {table['share'].sum():.6g}, expected 1")
    raise_problems(problems)


def histogram_frame(pred: Predictions, *, bins: int = HISTOGRAM_BINS) -> pd.DataFrame:
    """The predicted probabilities of relevant and of non-relevant candidates, as histograms on [0, 1].

    Parameters
    ----------
    pred : Predictions
        One ranker on one query set (``probs`` of every candidate that is not padding).
    bins : int, default=20
        Equal-width bins on [0, 1]; a probability on an inner edge falls in the bin above it (``numpy.histogram``).

    Returns
    -------
    pandas.DataFrame
        One row per label (``relevant`` first, :data:`LABELS`) and bin: ``label``, ``bin``, ``lower``, ``upper``,
        ``count``, ``density`` (each label's histogram integrates to 1; NaN for a label without candidates),
        ``candidates`` and ``mean`` (the label's candidates and their mean probability).

    Examples
    --------
    >>> import numpy as np
    >>> from calibrank.predictions import Predictions
    >>> labels = np.array([[1, 0, 0], [0, 1, 0]])
    >>> probs = np.array([[0.9, 0.2, 0.1], [0.3, 0.6, 0.2]])
    >>> h = histogram_frame(Predictions(["a", "b"], labels, probs, probs[None]), bins=2)
    >>> h[["label", "bin", "count", "density"]].to_dict("list")
    {'label': ['relevant', 'relevant', 'not relevant', 'not relevant'], 'bin': [0, 1, 0, 1], 'count': [0, 2, 4, 0], 'density': [0.0, 2.0, 2.0, 0.0]}
    """
    if isinstance(bins, bool) or not isinstance(bins, (int, np.integer)) or bins < 1:
        raise ValueError(f"bins must be an integer >= 1; got {bins!r}")
    edges = np.linspace(0.0, 1.0, bins + 1)
    rows = []
    for label, name in LABELS.items():
        p = pred.probs[pred.valid & (pred.labels == label)]
        counts = np.histogram(p, edges)[0]
        density = counts / (counts.sum() * np.diff(edges)) if counts.sum() else np.full(bins, np.nan)
        rows.append(
            pd.DataFrame(
                {
                    "label": name,
                    "bin": np.arange(bins),
                    "lower": edges[:-1],
                    "upper": edges[1:],
                    "count": counts.astype(int),
                    "density": density,
                    "candidates": int(p.size),
                    "mean": float(p.mean()) if p.size else float("nan"),
                }
            )
        )
    return pd.concat(rows, ignore_index=True)


def metrics_frame(pred: Predictions, *, seed: int = 0, n_resamples: int = N_RESAMPLES) -> pd.DataFrame:
    """R@1, ECE and Brier of one Predictions, each with its 95% interval over test queries.

    The numbers of notebook 04's :func:`calibrank.study.analysis.calibration.interval_table`
    (:func:`calibrank.study.analysis.uncertainty.cell_estimates`): R@1 counts ties against the relevant candidate;
    ECE is eq. 1 of Penha & Hauff, and its interval belongs to the debiased ECE (Kumar, Liang & Ma 2019), the
    row after it.

    Returns
    -------
    pandas.DataFrame
        One row per metric, ``R@1``, ``ECE`` (eq. 1, no interval), ``ECE debiased`` and ``Brier``: ``metric``,
        ``value``, ``lo``, ``hi``.

    Examples
    --------
    >>> import numpy as np
    >>> from calibrank.predictions import Predictions
    >>> labels = np.eye(4, dtype=int)[[0, 1, 2, 3, 0, 1]]
    >>> probs = np.where(labels == 1, 0.75, 0.15)
    >>> m = metrics_frame(Predictions(np.arange(6), labels, probs, probs[None]), n_resamples=200)
    >>> m["metric"].tolist(), m["value"].round(4).tolist()     # Brier: (6 * 0.25**2 + 18 * 0.15**2) / 24
    (['R@1', 'ECE', 'ECE debiased', 'Brier'], [1.0, 0.175, 0.175, 0.0325])
    """
    est = unc.cell_estimates([pred], seed=seed, metrics=_METRICS, n_resamples=n_resamples)
    rows = [
        ("R@1", est["R@1"], est["R@1 lo"], est["R@1 hi"]),
        ("ECE", est["ECE"], np.nan, np.nan),
        ("ECE debiased", est["ECE debiased"], est["ECE debiased lo"], est["ECE debiased hi"]),
        ("Brier", est["Brier"], est["Brier lo"], est["Brier hi"]),
    ]
    return pd.DataFrame(rows, columns=["metric", "value", "lo", "hi"])


def compare_frame(a: Predictions, b: Predictions, *, seed: int = 0, n_resamples: int = N_RESAMPLES) -> pd.DataFrame:
    """A against B on the same queries: each metric's difference ``a - b`` with its 95% interval and a paired test.

    :func:`calibrank.study.analysis.uncertainty.cell_comparison` with a two-sided alternative: the percentile
    bootstrap over queries of the difference, and the paired permutation test that swaps A's and B's
    predictions of a query; an ECE is compared as the debiased ECE.

    Returns
    -------
    pandas.DataFrame
        One row per metric (``R@1``, ``ECE debiased``, ``Brier``): ``metric``, ``a``, ``b``, ``change``, ``lo``,
        ``hi``, ``pvalue`` (two-sided), ``note``.

    Examples
    --------
    >>> import numpy as np
    >>> from calibrank.predictions import Predictions
    >>> labels = np.eye(4, dtype=int)[[0, 1, 2, 3, 0, 1, 2, 3]]
    >>> sharp, flat = np.where(labels == 1, 0.75, 0.15), np.where(labels == 1, 0.45, 0.35)
    >>> c = compare_frame(Predictions(np.arange(8), labels, sharp, sharp[None]),
    ...                   Predictions(np.arange(8), labels, flat, flat[None]), n_resamples=200)
    >>> c.set_index("metric")["change"].round(3).to_dict()  # ECE 0.175 - (8 * 0.55 + 24 * 0.35) / 32; Brier 0.0325 - 0.1675
    {'R@1': 0.0, 'ECE debiased': -0.225, 'Brier': -0.135}
    """
    rows = []
    for metric in _METRICS:
        c = unc.cell_comparison(
            [a], [b], metric, seed=seed, alternative="two-sided", relative=False, n_resamples=n_resamples
        )
        rows.append(
            {
                "metric": "ECE debiased" if metric == "ECE" else metric,
                "a": c["a"],
                "b": c["b"],
                "change": c["change"],
                "lo": c["lo"],
                "hi": c["hi"],
                "pvalue": c["pvalue"],
                "note": c["note"],
            }
        )
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------------ the study's cells
def _condition(study: Study, condition: Condition | str) -> Condition:
    if isinstance(condition, Condition):
        return condition
    for c in study.conditions:
        if c.name == condition:
            return c
    raise KeyError(
        f"condition: no {condition!r} in profile {study.cfg.profile!r}; "
        f"expected one of {', '.join(c.name for c in study.conditions)}"
    )


def cell_predictions(
    study: Study,
    ranker: str,
    train_corpus: str,
    condition: Condition | str,
    seed: int | None = None,
    *,
    method: str | None = None,
) -> Predictions:
    """A cell's Predictions: one training seed's (the main seed by default), or recalibrated by ``method``.

    With ``method`` (one of :data:`calibrank.methods.recalibrate.METHODS`) the Predictions are those notebook 08's
    :func:`calibrank.study.analysis.practice.recalibrate.recalibration_table` evaluates: the map fitted on
    :func:`~calibrank.study.analysis.practice.fitdata.fit_data` of the main seed, applied to the cell without the
    queries it was fitted on.
    """
    cond = _condition(study, condition)
    if method is None:
        return study.get(ranker, train_corpus, cond, seed)
    if seed is not None and seed != study.main_seed:
        raise ValueError(
            f"seed: a recalibrated cell is the main training seed's ({study.main_seed}), as in notebook 08; got {seed}"
        )
    fd = fit_data(study, ranker, train_corpus)
    recal = fit_recalibrator(
        method, fd.pred.probs, fd.pred.labels, pi_train=train_prior(study.cfg.negatives.train_k), k=study.k + 1
    )
    return recalibrate(drop_queries(study.get(ranker, train_corpus, cond), fd.exclude), recal)


def _keys(
    study: Study, ranker: str, train_corpus: str, condition: Condition | str, seed: int | None, method: str | None
) -> dict[str, Any]:
    cond = _condition(study, condition)
    keys = {
        "ranker": ranker,
        "train_corpus": train_corpus,
        "condition": cond.name,
        "seed": study.main_seed if seed is None else int(seed),
    }
    return {**keys, "method": method} if method is not None else keys


def reliability_view(
    study: Study,
    ranker: str,
    train_corpus: str,
    condition: Condition | str,
    seed: int | None = None,
    *,
    method: str | None = None,
    n_bins: int = RELIABILITY_BINS,
    n_resamples: int = N_RESAMPLES,
) -> pd.DataFrame:
    """:func:`reliability_frame` of one cell (:func:`cell_predictions`), its keys first; intervals seeded by the profile seed.

    The buckets are those of notebook 04's :func:`calibrank.study.analysis.calibration.reliability_table`.
    """
    pred = cell_predictions(study, ranker, train_corpus, condition, seed, method=method)
    frame = reliability_frame(pred, n_bins=n_bins, n_resamples=n_resamples, seed=study.cfg.seed)
    return with_keys(frame, **_keys(study, ranker, train_corpus, condition, seed, method))


def histogram_view(
    study: Study,
    ranker: str,
    train_corpus: str,
    condition: Condition | str,
    seed: int | None = None,
    *,
    method: str | None = None,
    bins: int = HISTOGRAM_BINS,
) -> pd.DataFrame:
    """:func:`histogram_frame` of one cell (:func:`cell_predictions`), its keys first."""
    pred = cell_predictions(study, ranker, train_corpus, condition, seed, method=method)
    return with_keys(histogram_frame(pred, bins=bins), **_keys(study, ranker, train_corpus, condition, seed, method))


def metrics_view(
    study: Study,
    ranker: str,
    train_corpus: str,
    condition: Condition | str,
    seed: int | None = None,
    *,
    method: str | None = None,
    n_resamples: int = N_RESAMPLES,
) -> pd.DataFrame:
    """:func:`metrics_frame` of one cell (:func:`cell_predictions`), its keys first; R@1 named as the profile names
    it (``R10@1``); intervals seeded by the profile seed, as notebook 04's tables."""
    pred = cell_predictions(study, ranker, train_corpus, condition, seed, method=method)
    frame = metrics_frame(pred, seed=study.cfg.seed, n_resamples=n_resamples)
    frame["metric"] = frame["metric"].replace({"R@1": study.recall_label})
    return with_keys(frame, **_keys(study, ranker, train_corpus, condition, seed, method))


def compare_view(
    study: Study,
    rankers: Sequence[str],
    train_corpus: str,
    condition: Condition | str,
    seed: int | None = None,
    *,
    method: str | None = None,
    n_resamples: int = N_RESAMPLES,
) -> pd.DataFrame:
    """:func:`compare_frame` of two rankers on one cell: ``ranker`` minus ``versus``, their keys first."""
    if len(rankers) != 2:
        raise ValueError(f"rankers: side by side compares two rankers; got {len(rankers)} ({', '.join(rankers)})")
    a, b = (cell_predictions(study, r, train_corpus, condition, seed, method=method) for r in rankers)
    frame = compare_frame(a, b, seed=study.cfg.seed, n_resamples=n_resamples)
    frame["metric"] = frame["metric"].replace({"R@1": study.recall_label})
    keys = _keys(study, rankers[0], train_corpus, condition, seed, method)
    return with_keys(
        frame, **{"ranker": rankers[0], "versus": rankers[1], **{k: v for k, v in keys.items() if k != "ranker"}}
    )


# ------------------------------------------------------------------------------ figures
def _draw(
    view: str, frames: Callable[[str], pd.DataFrame], names: Sequence[str], compare: Callable[[], pd.DataFrame], by: str
):
    """The figure and table of ``view`` for ``names``: ``frames(kind)`` gives the long table of one kind."""
    if view not in VIEWS:
        raise ValueError(f"view: expected one of {', '.join(VIEWS)}; got {view!r}")
    if not names:
        raise ValueError("rankers: pick at least one")
    if view == "reliability":
        table = frames("reliability")
        panels = plots.plot_reliability_intervals(table, by=by)
    elif view == "histograms":
        table = frames("histograms")
        panels = plots.plot_score_histograms(table, by=by)
    elif view == "metrics":
        table = frames("metrics")
        panels = plots.plot_metric_intervals(table, by=by)
    else:
        if len(names) != 2:
            raise ValueError(f"rankers: side by side compares two; pick two, not {len(names)}")
        table = compare()
        panels = plots.plot_side_by_side(frames("reliability"), table, by=by)
    return panels[0].figure, table


def figure(
    study: Study,
    view: str = "reliability",
    rankers: Sequence[str] | None = None,
    train_corpus: str | None = None,
    condition: Condition | str | None = None,
    seed: int | None = None,
    *,
    method: str | None = None,
    n_resamples: int = N_RESAMPLES,
):
    """One selection of the explorer, drawn: ``(matplotlib Figure, the table it shows)``.

    ``view`` is one of :data:`VIEWS`; ``rankers`` default to :func:`default_rankers`, the training corpus to the
    profile's first, the condition to its in-distribution test condition
    (:func:`calibrank.study.analysis.calibration.default_condition`), the seed to the main training seed.
    """
    rankers = tuple(rankers) if rankers is not None else default_rankers(study)
    tc = train_corpus or study.train_corpora[0]
    cond = _condition(study, condition) if condition is not None else default_condition(study, tc)
    view_of = {"reliability": reliability_view, "histograms": histogram_view, "metrics": metrics_view}

    def frames(kind: str) -> pd.DataFrame:
        extra = {"n_resamples": n_resamples} if kind != "histograms" else {}
        return pd.concat(
            [view_of[kind](study, r, tc, cond, seed, method=method, **extra) for r in rankers], ignore_index=True
        )

    fig, table = _draw(
        view,
        frames,
        rankers,
        lambda: compare_view(study, rankers, tc, cond, seed, method=method, n_resamples=n_resamples),
        by="ranker",
    )
    shown_seed = study.main_seed if seed is None else seed
    fig.suptitle(
        f"trained on {tc} → tested on {cond.corpus} · {cond.sampler} ({study.shift(cond, tc)}), "
        f"seed {shown_seed}" + (f", recalibrated: {method}" if method is not None else ""),
        fontsize=10,
    )
    return fig, table


def default_rankers(study: Study) -> tuple[str, ...]:
    """``bert`` and the ranker after it in the profile (the first comparison a reader makes), else the first ranker."""
    others = [r for r in study.rankers if r != BASELINE]
    if BASELINE in study.rankers:
        return (BASELINE, *others[:1])
    return tuple(study.rankers[:1])


# ------------------------------------------------------------------------------ widgets
def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    return base64.b64encode(buf.getvalue()).decode("ascii")


class Explorer:
    """Widgets that pick a selection and redraw it: built by :func:`explorer` and :func:`assessment_explorer`.

    ``controls`` maps each selection argument of ``draw`` to its widget; every control calls :meth:`redraw`
    when its value changes, which draws ``draw(**selection)`` into ``output``. ``widget`` holds the controls
    above the output; ``figure`` and ``table`` are the current selection's, ``png`` its figure (base64), and
    ``redraws`` counts the draws. A selection that cannot be drawn (two rankers needed, one given) shows its
    reason instead. Displayed in a notebook, it shows ``widget`` and then the selection it was built with as
    a plain figure: a front-end without widgets (nbconvert's HTML, the report) shows that one.
    """

    def __init__(self, controls: Mapping[str, Any], draw: Callable[..., tuple[Any, pd.DataFrame]], widgets: Any):
        self.controls = dict(controls)
        self._draw = draw
        self.output = widgets.Output()
        # the view's buttons on a row of their own; the list to pick from beside the other choices; the drawing below
        buttons = [c for c in self.controls.values() if isinstance(c, widgets.ToggleButtons)]
        picks = [c for c in self.controls.values() if c not in buttons]
        self.widget = widgets.VBox([*buttons, widgets.HBox([picks[0], widgets.VBox(picks[1:])]), self.output])
        self.figure, self.table, self.png, self.message, self.redraws = None, None, "", "", 0
        self.redraw()
        if self.message:  # the selection it was built with must draw
            raise ValueError(self.message)
        self.static_png = self.png
        for control in self.controls.values():
            control.observe(self.redraw, names="value")

    def selection(self) -> dict[str, Any]:
        """Each control's value, by the argument of ``draw`` it sets."""
        return {name: control.value for name, control in self.controls.items()}

    def redraw(self, change: Any = None) -> None:
        """Draw the current selection into ``output`` (the callback of every control)."""
        try:
            fig, table = self._draw(**self.selection())
        except (ValueError, KeyError) as exc:
            self.message = str(exc).strip("'\"")
            self.output.outputs = (
                {"output_type": "display_data", "metadata": {}, "data": {"text/plain": self.message}},
            )
            return
        self.message = ""
        self.figure, self.table, self.png = fig, table, _png(fig)
        plt.close(fig)  # shown through the output, not again by the notebook's backend
        self.redraws += 1
        self.output.outputs = (
            {
                "output_type": "display_data",
                "metadata": {},
                "data": {
                    "image/png": self.png,
                    "text/plain": f"<figure: {fig.texts[0].get_text() if fig.texts else ''}>",
                },
            },
            {
                "output_type": "display_data",
                "metadata": {},
                "data": {
                    "text/html": table.to_html(index=False, float_format=lambda v: f"{v:.3f}", na_rep=""),
                    "text/plain": table.to_string(index=False),
                },
            },
        )

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.widget)
        display(
            {
                "image/png": self.static_png,
                "text/plain": "the selection the explorer was built with, as a plain figure",
            },
            raw=True,
        )

    def __repr__(self) -> str:
        return f"Explorer({', '.join(f'{k}={v!r}' for k, v in self.selection().items())})"


def _ipywidgets():
    try:
        import ipywidgets
    except ImportError:
        raise ImportError(
            "the explorer needs ipywidgets (a notebook dependency of the study: pip install ipywidgets)"
        ) from None
    return ipywidgets


def explorer(study: Study, *, methods: Sequence[str] | None = None, n_resamples: int = N_RESAMPLES) -> Explorer:
    """The explorer of a study's Predictions (notebook 04; with ``methods``, notebook 08's recalibrators).

    Controls: the view (:data:`VIEWS`), the rankers, the training corpus, the test condition and the training
    seed; with ``methods`` (of :data:`calibrank.methods.recalibrate.METHODS`) the recalibrator instead of the seed
    (notebook 08 recalibrates the main seed). Each redraw is :func:`figure`. Built with :func:`default_rankers`
    on the in-distribution condition of the first training corpus, the main seed, the first method.
    """
    widgets = _ipywidgets()
    tc = study.train_corpora[0]
    cond = default_condition(study, tc)
    layout, style = {"width": "auto"}, {"description_width": "initial"}
    controls: dict[str, Any] = {
        "view": widgets.ToggleButtons(options=list(VIEWS), value=VIEWS[0], description="view"),
        "rankers": widgets.SelectMultiple(
            options=list(study.rankers),
            value=default_rankers(study),
            rows=min(len(study.rankers), 8),
            description="rankers",
        ),
        "train_corpus": widgets.Dropdown(
            options=list(study.train_corpora), value=tc, description="trained on", layout=layout, style=style
        ),
        "condition": widgets.Dropdown(
            options=[(f"{c.corpus} · {c.sampler}", c.name) for c in study.test_conditions()],
            value=cond.name,
            description="tested on",
            layout=layout,
            style=style,
        ),
    }
    if methods is None:
        seeds = study.seeds(controls["rankers"].value[0], tc, cond)
        controls["seed"] = widgets.Dropdown(
            options=seeds, value=study.main_seed, description="seed", layout=layout, style=style
        )
    else:
        controls["method"] = widgets.Dropdown(
            options=list(methods), value=methods[0], description="recalibrated", layout=layout, style=style
        )
    return Explorer(controls, lambda **sel: figure(study, **sel, n_resamples=n_resamples), widgets)


def assessment_explorer(result: Any, inputs: Any, *, seed: int = 0, n_resamples: int = N_RESAMPLES) -> Explorer:
    """The explorer of notebook 09: the views of a user's test queries (as given, each map fitted on the validation
    queries, the base rate) of :func:`calibrank.assess.sections.reliability.views`, the calibrator's map as deployed.

    ``result``, ``inputs``: what :func:`calibrank.assess.command.run` returns; ``seed``: the assessment's (the
    sample the maps are fitted on, and the resamples). Controls: the view of :data:`VIEWS` and the views of the
    scores to draw; built with ``as given`` (when the scores are probabilities) and the deployed map.
    """
    widgets = _ipywidgets()
    preds = {v.name: v.test for v in views(inputs.test, inputs.valid, result.calibrator.map, seed=seed)}
    deployed = deployed_view(result.calibrator.map)
    chosen = tuple(dict.fromkeys(n for n in (next(iter(preds)), deployed) if n in preds))

    def draw(view: str, scores: Sequence[str]):
        def frames(kind: str) -> pd.DataFrame:
            make = {
                "reliability": lambda p: reliability_frame(p, n_resamples=n_resamples, seed=seed),
                "histograms": histogram_frame,
                "metrics": lambda p: metrics_frame(p, seed=seed, n_resamples=n_resamples),
            }[kind]
            return pd.concat([with_keys(make(preds[n]), scores=n) for n in scores], ignore_index=True)

        fig, table = _draw(
            view,
            frames,
            scores,
            lambda: with_keys(
                compare_frame(preds[scores[0]], preds[scores[1]], seed=seed, n_resamples=n_resamples),
                scores=scores[0],
                versus=scores[1],
            ),
            by="scores",
        )
        fig.suptitle(f"{inputs.test.source}: test queries", fontsize=10)
        return fig, table

    controls = {
        "view": widgets.ToggleButtons(options=list(VIEWS), value=VIEWS[0], description="view"),
        "scores": widgets.SelectMultiple(
            options=list(preds), value=chosen, rows=min(len(preds), 8), description="scores"
        ),
    }
    return Explorer(controls, draw, widgets)
