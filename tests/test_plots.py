"""The figures of notebooks 01-08 (calibrank.study.analysis.plots, calibrank.study.analysis.plots_practice) on small tables shaped as the notebooks
pass them (the columns of the study / practice functions that compute them): each returns its axes with the labels
and legend a reader needs, draws what the table holds, and does not raise on a NaN or empty bucket / bin / cell."""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
import seaborn as sns  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402

from calibrank.study.analysis import plots  # noqa: E402
from calibrank.study.analysis import plots_practice as pp

NAN = float("nan")
IN = "in distribution"


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _legend(ax) -> list[str]:
    leg = ax.get_legend()
    assert leg is not None, f"no legend on {ax.get_title()!r}"
    return [t.get_text() for t in leg.get_texts()]


def _ticks(ax, axis: str = "x") -> list[str]:
    return [t.get_text() for t in (ax.get_xticklabels() if axis == "x" else ax.get_yticklabels())]


def _cells(ax) -> dict[tuple[int, int], str]:
    """The annotated cells of a heatmap as {(row, column): text}, read from where each text sits."""
    return {(int(t.get_position()[1]), int(t.get_position()[0])): t.get_text() for t in ax.texts}


def _where(ranker: str, corpus: str = "chitchat", sampler: str = "bm25", shift: str = IN) -> dict:
    return {"ranker": ranker, "train_corpus": "chitchat", "corpus": corpus, "sampler": sampler, "shift": shift}


CONDS = [("chitchat", "bm25", IN), ("chatterbot", "bm25", "cross-domain")]


# ---------------------------------------------------------------------------------------------- notebook 01, 03
def test_length_histograms_label_each_corpus_with_its_median():
    lengths = pd.DataFrame(
        [("chitchat", "train", "context", w) for w in (4, 6, 10)]
        + [("chitchat", "train", "response", w) for w in (1, 3)]
        + [("chatterbot", "train", "context", w) for w in (200, 2)]
        + [("chatterbot", "train", "response", w) for w in (5,)],
        columns=["corpus", "split", "part", "words"],
    )
    axes = plots.plot_length_histograms(lengths, max_words=50)
    ctx, resp = axes
    assert ctx.get_xlabel() == "context length in words (clipped at 50)" and ctx.get_ylabel() == "density"
    assert resp.get_xlabel() == "response length in words (clipped at 50)"
    assert _legend(ctx) == ["chitchat (median 6)", "chatterbot (median 101)"]  # the median of the unclipped lengths
    assert _legend(resp) == ["chitchat (median 2)", "chatterbot (median 5)"]


def test_training_curves_one_line_per_model_and_a_validation_axis_in_0_1():
    history = pd.DataFrame(
        {"model": [0, 0, 0, 1, 1], "step": [1, 2, 3, 1, 2], "epoch": 0, "loss": [0.7, 0.5, NAN, 0.69, 0.6], "lr": 1e-3}
    )
    validation = pd.DataFrame({"model": [0, 1], "step": [3, 2], "metric": [0.4, NAN]})
    loss, val = plots.plot_training_curves(history, validation)
    assert (loss.get_xlabel(), loss.get_ylabel()) == ("optimizer step", "training loss")
    assert (val.get_xlabel(), val.get_ylabel()) == ("optimizer step", "validation R@1")
    assert _legend(loss) == ["model 0", "model 1"] and _legend(val) == ["model 0", "model 1"]
    assert val.get_ylim() == (0.0, 1.0)
    np.testing.assert_array_equal(loss.get_lines()[0].get_ydata(), [0.7, 0.5, NAN])
    # a model that logged nothing yet: no legend to draw, no error
    _, empty_val = plots.plot_training_curves(history, validation.iloc[:0], metric_name="validation MRR")
    assert empty_val.get_legend() is None and empty_val.get_ylabel() == "validation MRR"


# ---------------------------------------------------------------------------------------------- notebook 04
def _reliability(empty_bucket: bool) -> pd.DataFrame:
    """study.reliability_table: 5 buckets per ranker; bert's middle bucket has no pair when ``empty_bucket``."""
    rows = []
    for ranker, ece in (("bert", 0.12), ("mc_dropout", 0.05)):
        for b in range(5):
            count = 0 if (empty_bucket and ranker == "bert" and b == 2) else 10 * (b + 1)
            rows.append(
                {
                    "ranker": ranker,
                    "train_corpus": "chitchat",
                    "condition": "chitchat-bm25-test",
                    "bin": b,
                    "lower": b / 5,
                    "upper": (b + 1) / 5,
                    "mean_predicted": (b + 0.5) / 5 if count else NAN,
                    "fraction_positive": b / 5 if count else NAN,
                    "count": count,
                    "ECE": ece,
                }
            )
    return pd.DataFrame(rows)


@pytest.mark.parametrize("empty_bucket", [False, True])
def test_reliability_grid_one_panel_per_ranker_no_bar_for_an_empty_bucket(empty_bucket):
    panels = plots.plot_reliability_grid(_reliability(empty_bucket))
    assert len(panels) == 2 and all(isinstance(ax, Axes) for ax in panels)
    bert, mc = panels
    assert bert.get_title() == "bert (ECE 0.120)" and mc.get_title() == "mc_dropout (ECE 0.050)"
    assert bert.get_xlabel() == "predicted P(relevant)" and bert.get_ylabel() == "fraction relevant"
    counts = [10, 20, 40, 50] if empty_bucket else [10, 20, 30, 40, 50]
    assert len(bert.patches) == len(counts)  # one bar per non-empty bucket
    assert [t.get_text() for t in bert.texts] == [str(c) for c in counts]  # each bar's count above it
    assert len(mc.patches) == 5
    legend = [t.get_text() for t in bert.get_legend().get_texts()]
    assert sorted(legend) == ["fraction relevant", "mean predicted", "perfect calibration"] and mc.get_legend() is None


def _figure_legend(ax) -> list[str]:
    """The labels of the legend beside the panels (off every panel's lines)."""
    return [t.get_text() for t in ax.figure.legends[0].get_texts()]


def _ece_by_negatives(nan: bool) -> pd.DataFrame:
    rows = []
    for corpus, sampler, shift in CONDS:
        for ranker, base in (("bert", 0.1), ("ensemble", 0.05)):
            for n in (1, 5, 9):
                ece = base * n
                lo, hi = (NAN, NAN) if (nan and n == 5) else (ece - 0.01, ece + 0.01)
                rows.append(
                    {
                        **_where(ranker, corpus, sampler, shift),
                        "n_nonrel": n,
                        "ECE": NAN if (nan and n == 9 and ranker == "bert") else ece,
                        "ECE lo": lo,
                        "ECE hi": hi,
                        "pairs": 12 * (n + 1),
                    }
                )
    return pd.DataFrame(rows)


@pytest.mark.parametrize("nan", [False, True])
def test_ece_by_negatives_one_panel_per_condition_one_line_per_ranker(nan):
    panels = plots.plot_ece_by_negatives(_ece_by_negatives(nan))
    assert [ax.get_title() for ax in panels] == ["chitchat → chitchat · bm25", "chitchat → chatterbot · bm25"]
    assert all(ax.get_xlabel() == "non-relevant candidates per query" for ax in panels)
    assert panels[0].get_ylabel() == "ECE" and _figure_legend(panels[0]) == ["bert", "ensemble"]
    assert [float(t) for t in panels[0].get_xticks()] == [1.0, 5.0, 9.0]
    np.testing.assert_allclose(panels[1].get_lines()[1].get_ydata(), [0.05, 0.25, 0.45])
    assert len(panels[0].collections) == 2  # an interval band per ranker


def test_ece_by_negatives_bands_the_debiased_ece_when_given():
    t = _ece_by_negatives(False)
    t["ECE debiased"] = t["ECE"] - 0.02
    t = t.rename(columns={"ECE lo": "ECE debiased lo", "ECE hi": "ECE debiased hi"})
    panels = plots.plot_ece_by_negatives(t)
    lines = panels[1].get_lines()
    assert len(lines) == 4 and _figure_legend(panels[0]) == [
        "bert",
        "ensemble",
    ]  # eq. 1 solid, debiased dashed, per ranker
    np.testing.assert_allclose(lines[3].get_ydata(), [0.03, 0.23, 0.43])
    assert lines[3].get_linestyle() == "--" and len(panels[0].collections) == 2
    band = panels[1].collections[1].get_paths()[0].vertices[:, 1]
    assert band.min() == pytest.approx(0.04) and band.max() == pytest.approx(0.46)  # the given lo / hi columns


# ---------------------------------------------------------------------------------------------- notebook 05
def _sweep(nan: bool) -> pd.DataFrame:
    rows = []
    for ranker in ("mc_dropout", "ensemble"):
        for corpus, sampler, shift in CONDS:
            for b in (0.0, 0.5, 1.0):
                rows.append(
                    {
                        **_where(ranker, corpus, sampler, shift),
                        "b": b,
                        "metric": "R@1",
                        "value": 0.5,
                        "rel_change": b / 10,
                        "n_queries": 12,
                        "rel_change_bert": NAN if (nan and b == 0.5) else b / 20,
                    }
                )
    return pd.DataFrame(rows)


@pytest.mark.parametrize("nan", [False, True])
def test_b_sweep_one_panel_per_ranker_one_line_per_condition_in_percent(nan):
    panels = plots.plot_b_sweep(_sweep(nan))
    assert [ax.get_title() for ax in panels] == ["mc_dropout (trained on chitchat)", "ensemble (trained on chitchat)"]
    assert all(ax.get_xlabel() == "risk aversion b" for ax in panels)
    assert panels[0].get_ylabel() == "R@1 change over bert (%)"
    assert _legend(panels[0]) == ["chitchat · bm25", "chatterbot · bm25"]
    expected = [0.0, NAN, 5.0] if nan else [0.0, 2.5, 5.0]
    np.testing.assert_allclose(panels[0].get_lines()[0].get_ydata(), expected)  # in percent
    own = plots.plot_b_sweep(_sweep(nan), y="rel_change")
    assert own[0].get_ylabel() == "R@1 change over b = 0 (%)"
    np.testing.assert_allclose(own[0].get_lines()[0].get_ydata(), [0.0, 5.0, 10.0])


# ---------------------------------------------------------------------------------------------- notebook 06
def _nota(nan: bool) -> pd.DataFrame:
    rows = []
    for table, (corpus, sampler, shift) in (
        ("Table 4 (cross-domain)", CONDS[1]),
        ("Table 5 (cross-NS)", ("chitchat", "random", "cross-NS")),
    ):
        for i, inp in enumerate(("E[R]", "+var[mc_dropout]", "+var[ensemble]")):
            mean = NAN if (nan and i == 2) else 0.5 + 0.1 * i
            rows.append(
                {
                    "table": table,
                    **_where("mc_dropout", corpus, sampler, shift),
                    "means_from": "mc_dropout",
                    "input": inp,
                    "f1_mean": mean,
                    "f1_sd": 0.05,
                    "f1_lo": mean - 0.1,
                    "f1_hi": mean + 0.1,
                    "folds": 5,
                }
            )
    return pd.DataFrame(rows).drop(columns="ranker")


@pytest.mark.parametrize("nan", [False, True])
def test_nota_bars_one_panel_per_table_one_bar_per_input(nan):
    panels = plots.plot_nota_bars(_nota(nan))
    assert [ax.get_title() for ax in panels] == ["Table 4 (cross-domain)", "Table 5 (cross-NS)"]
    assert panels[0].get_ylabel() == "NOTA macro-F1"
    assert _legend(panels[-1]) == ["E[R]", "+var[mc_dropout]", "+var[ensemble]"]
    assert _ticks(panels[0]) == ["chitchat → chatterbot · bm25"]
    heights = [p.get_height() for p in panels[0].patches]
    np.testing.assert_allclose(heights, [0.5, 0.6, NAN if nan else 0.7])
    # a table without intervals (older exports): the sd over folds gives the error bars
    assert len(plots.plot_nota_bars(_nota(nan).drop(columns=["f1_lo", "f1_hi"]))) == 2


# ---------------------------------------------------------------------------------------------- notebook 07
def test_efficiency_bars_with_the_papers_ratios():
    table = pd.DataFrame(
        {
            "ranker": ["bert", "mc_dropout", "sngp"],
            "ms/query": [2.0, 10.0, 2.5],
            "ratio_to_bert": [1.0, 5.0, 1.25],
            "ratio lo": [1.0, 4.5, NAN],
            "ratio hi": [1.0, 5.5, NAN],
            "PG-DRR ratio": [1.0, 9.69, NAN],
            "GPF-BERT ratio": [1.0, 9.56, 1.07],
        }
    )
    ax = plots.plot_efficiency(table)
    assert isinstance(ax, Axes)
    assert ax.get_xlabel() == "inference time per query / bert's"
    assert sorted(_legend(ax)) == ["GPF-BERT paper", "PG-DRR paper", "ours (same queries, one run)"]
    assert _ticks(ax, "y") == ["bert", "mc_dropout", "sngp"]
    assert [p.get_width() for p in ax.patches] == [1.0, 5.0, 1.25]
    # measured without repeats: no interval columns, no paper columns
    ax = plots.plot_efficiency(table[["ranker", "ratio_to_bert"]])
    assert _legend(ax) == ["ours (same queries, one run)"]


def test_efficiency_on_both_clocks_in_the_common_style():
    from calibrank.study.analysis import efficiency
    from test_efficiency import NOISY_WALL

    table = efficiency.efficiency_table(NOISY_WALL)
    fig = plots.plot_efficiency_clocks(table)
    cpu, wall = fig.axes[:2]
    assert [cpu.get_title(), wall.get_title()] == ["process CPU time (decides)", "wall time"]
    assert [p.get_width() for p in wall.patches] == pytest.approx([1.0, 10.6 / 2.1])
    assert cpu.get_xgridlines()[0].get_visible()  # the theme's grid (matplotlib draws none by default)


@pytest.mark.parametrize(
    "fn",
    [
        plots.plot_reliability_grid,
        plots.plot_ece_by_negatives,
        plots.plot_b_sweep,
        plots.plot_nota_bars,
        pp.plot_recalibration,
        pp.plot_risk_coverage,
        pp.plot_conformal_coverage,
        pp.plot_shift_detection,
        pp.plot_performance_prediction,
        pp.plot_listwise_reliability,
        pp.plot_shift_auroc_intervals,
        pp.plot_nota_threshold,
        plots.plot_reliability_intervals,
        plots.plot_score_histograms,
        plots.plot_metric_intervals,
    ],
)
def test_an_empty_table_gives_one_panel_that_says_so(fn):
    panels = fn(pd.DataFrame(columns=["ranker", "shift", "F1"]))
    assert len(panels) == 1 and [t.get_text() for t in panels[0].texts] == ["nothing to show in this profile"]


# ---------------------------------------------------------------------------------------------- notebook 08
def _prior(nan: bool) -> pd.DataFrame:
    rows = []
    for ranker in ("bert", "mc_dropout"):
        for corpus, sampler, shift in CONDS:
            for n in (1, 9):
                raw, cor = 0.05 * n, 0.02
                rows.append(
                    {
                        **_where(ranker, corpus, sampler, shift),
                        "n_nonrel": n,
                        "pi_train": 0.5,
                        "pi_test": 1 / (n + 1),
                        "ECE raw": raw,
                        "ECE raw lo": raw - 0.01,
                        "ECE raw hi": raw + 0.01,
                        "ECE corrected": NAN if (nan and n == 9) else cor,
                        "ECE corrected lo": cor - 0.01,
                        "ECE corrected hi": NAN if nan else cor + 0.01,
                        "removed": 0,
                        "queries": 12,
                    }
                )
    return pd.DataFrame(rows)


@pytest.mark.parametrize("nan", [False, True])
def test_prior_ece_panels_of_the_chosen_shift(nan):
    panels = pp.plot_prior_ece(_prior(nan))
    assert [ax.get_title() for ax in panels] == ["bert", "mc_dropout"]
    assert (
        panels[0].get_ylabel() == "ECE (in distribution)"
        and panels[0].get_xlabel() == "non-relevant candidates per query"
    )
    assert _legend(panels[0]) == ["as trained", "prior-corrected"]
    np.testing.assert_allclose(panels[0].get_lines()[0].get_ydata(), [0.05, 0.45])  # in distribution only
    shifted = pp.plot_prior_ece(_prior(nan), shift="cross-domain")
    assert shifted[0].get_ylabel() == "ECE (cross-domain)"
    assert len(pp.plot_prior_ece(_prior(nan), shift="cross-NS")) == 1  # no such condition: the empty panel


def test_prior_ece_names_the_condition_when_a_shift_has_several():
    two = _prior(False)
    second = two[two["shift"] == IN].assign(sampler="mixed")
    panels = pp.plot_prior_ece(pd.concat([two, second], ignore_index=True))
    assert _legend(panels[0]) == [
        "chitchat · bm25: as trained",
        "chitchat · bm25: prior-corrected",
        "chitchat · mixed: as trained",
        "chitchat · mixed: prior-corrected",
    ]


def _debiased(table: pd.DataFrame, *columns: str) -> pd.DataFrame:
    """``table`` as notebook 08 builds it: each ECE of ``columns`` with its debiased value (0.01 below), interval
    and bias, and no interval of its own."""
    out = table.copy()
    for col in columns:
        d = f"{col} debiased"
        out[d], out[f"{col} bias"] = out[col] - 0.01, 0.01
        out[f"{d} lo"], out[f"{d} hi"] = out[f"{col} lo"] - 0.01, out[f"{col} hi"] - 0.01
        out = out.drop(columns=[f"{col} lo", f"{col} hi"])
    return out


def test_prior_ece_draws_the_debiased_ece_with_its_band():
    panels = pp.plot_prior_ece(_debiased(_prior(False), "ECE raw", "ECE corrected"))
    assert panels[0].get_ylabel() == "ECE debiased (in distribution)"
    np.testing.assert_allclose(panels[0].get_lines()[0].get_ydata(), [0.04, 0.44])  # the value the band is around


def test_recalibration_draws_the_debiased_ece_on_a_scale_that_holds_zero():
    panels = pp.plot_recalibration(_debiased(_recalibration(False), "ECE"))
    assert panels[0].get_yscale() == "symlog" and panels[0].get_ylabel() == "ECE debiased (log scale above 0.01)"


def _recalibration(nan: bool) -> pd.DataFrame:
    rows = []
    for corpus, sampler, shift in CONDS:
        for ranker in ("bert", "mc_dropout"):
            for i, method in enumerate(("none", "platt", "isotonic")):
                ece = NAN if (nan and method == "isotonic" and ranker == "bert") else 0.1 / (i + 1)
                rows.append(
                    {
                        **_where(ranker, corpus, sampler, shift),
                        "method": method,
                        "fitted_on": "validation",
                        "fit_queries": 24,
                        "queries": 12,
                        "ECE": ece,
                        "ECE lo": ece / 2,
                        "ECE hi": ece * 1.5,
                        "params": "",
                    }
                )
    return pd.DataFrame(rows)


@pytest.mark.parametrize("nan", [False, True])
def test_recalibration_one_panel_per_condition_one_marker_per_method(nan):
    panels = pp.plot_recalibration(_recalibration(nan))
    assert [ax.get_title() for ax in panels] == [
        "chitchat · bm25 (in distribution)",
        "chatterbot · bm25 (cross-domain)",
    ]
    assert panels[0].get_ylabel() == "ECE (log scale)" and panels[0].get_yscale() == "log"
    assert _ticks(panels[0]) == ["bert", "mc_dropout"]
    assert _legend(panels[-1]) == ["none", "platt", "isotonic"]


def _curves(nan: bool) -> pd.DataFrame:
    rows = []
    for ranker in ("bert", "mc_dropout"):
        for conf in ("max prob",) if ranker == "bert" else ("max prob", "neg var"):
            for cov in (0.25, 0.5, 1.0):
                rows.append(
                    {
                        "coverage": cov,
                        "selective risk": NAN if (nan and cov == 0.5) else 0.4 * cov,
                        "generalized risk": 0.4 * cov * cov,
                        "ranker": ranker,
                        "confidence": conf,
                        "condition": "chitchat-bm25-test",
                    }
                )
    return pd.DataFrame(rows)


@pytest.mark.parametrize("nan", [False, True])
def test_risk_coverage_legend_on_the_panel_with_every_confidence(nan):
    panels = pp.plot_risk_coverage(_curves(nan))
    assert [ax.get_title() for ax in panels] == ["bert", "mc_dropout"]
    assert panels[0].get_xlabel() == "coverage (share of queries answered)"
    assert panels[0].get_ylabel() == "risk (wrong top response)"
    assert panels[0].get_legend() is None and _legend(panels[1]) == ["max prob", "neg var"]
    assert panels[1].get_lines()[-1].get_ydata()[0] == pytest.approx(0.4)  # dotted: the risk at full coverage


def test_risk_coverage_without_full_coverage_draws_the_curves_and_no_dotted_line():
    curves = _curves(False)
    panels = pp.plot_risk_coverage(curves[curves["coverage"] < 1.0])
    assert [len(ax.get_lines()) for ax in panels] == [1, 2]  # the curves only
    np.testing.assert_allclose(panels[1].get_lines()[0].get_xdata(), [0.25, 0.5])


def _conformal(nan: bool) -> pd.DataFrame:
    rows = []
    for score in ("LAC", "APS"):
        for alpha in (0.1, 0.2):
            for corpus, sampler, shift in CONDS:
                for ranker in ("bert", "mc_dropout"):
                    cov = NAN if (nan and ranker == "bert" and alpha == 0.2) else 1 - alpha
                    rows.append(
                        {
                            **_where(ranker, corpus, sampler, shift),
                            "score": score,
                            "alpha": alpha,
                            "target": 1 - alpha,
                            "coverage": cov,
                            "coverage lo": cov - 0.05,
                            "coverage hi": cov + 0.05,
                            "n_cal": 10,
                            "queries": 12,
                            "note": "too few" if np.isnan(cov) else "",
                        }
                    )
    return pd.DataFrame(rows)


@pytest.mark.parametrize("nan", [False, True])
def test_conformal_coverage_one_panel_per_score_and_alpha(nan):
    panels = pp.plot_conformal_coverage(_conformal(nan))
    assert [ax.get_title() for ax in panels] == [
        "LAC, alpha = 0.1 (target 0.90)",
        "LAC, alpha = 0.2 (target 0.80)",
        "APS, alpha = 0.1 (target 0.90)",
        "APS, alpha = 0.2 (target 0.80)",
    ]
    assert all(ax.get_ylabel() == "coverage of the true response" for ax in panels)
    assert _ticks(panels[0]) == ["chitchat · bm25", "chatterbot · bm25"]
    assert _legend(panels[-1]) == ["bert", "mc_dropout"]


def _shift(nan: bool) -> pd.DataFrame:
    rows = []
    for ranker in ("bert", "mc_dropout"):
        for corpus, sampler, shift in (CONDS[1], ("chitchat", "random", "cross-NS")):
            for signal in ("1 - max prob", "entropy") + (("mean var",) if ranker == "mc_dropout" else ()):
                auc = NAN if (nan and signal == "entropy" and ranker == "bert") else 0.6
                rows.append(
                    {
                        **_where(ranker, corpus, sampler, shift),
                        "signal": signal,
                        "AUROC": auc,
                        "AUROC lo": auc - 0.1,
                        "AUROC hi": auc + 0.1,
                        "paired": False,
                    }
                )
    return pd.DataFrame(rows)


@pytest.mark.parametrize("nan", [False, True])
def test_shift_detection_heatmap_per_shift_kind(nan):
    panels = pp.plot_shift_detection(_shift(nan))
    assert [ax.get_title() for ax in panels] == ["cross-domain: AUROC", "cross-NS: AUROC"]
    assert _ticks(panels[0], "y") == ["bert", "mc_dropout"]
    assert _ticks(panels[0]) == ["1 - max prob", "entropy", "mean var"]
    bert = {(0, 0): "0.60"} if nan else {(0, 0): "0.60", (0, 1): "0.60"}  # bert has no variance signal
    assert _cells(panels[0]) == {**bert, (1, 0): "0.60", (1, 1): "0.60", (1, 2): "0.60"}  # a NaN cell stays blank


def test_shift_detection_keeps_a_signal_with_no_auroc_as_blank_cells():
    table = _shift(False)
    table.loc[table["signal"] == "entropy", "AUROC"] = NAN
    panels = pp.plot_shift_detection(table)
    assert _ticks(panels[0]) == ["1 - max prob", "entropy", "mean var"]
    assert _cells(panels[0]) == {(0, 0): "0.60", (1, 0): "0.60", (1, 2): "0.60"}


@pytest.mark.parametrize("nan", [False, True])
def test_shift_auroc_intervals_one_panel_per_shifted_condition(nan):
    panels = pp.plot_shift_auroc_intervals(_shift(nan))
    assert [ax.get_title() for ax in panels] == ["chatterbot · bm25 (cross-domain)", "chitchat · random (cross-NS)"]
    assert panels[0].get_ylabel() == "AUROC (shifted vs in distribution)"
    assert _ticks(panels[0]) == ["bert", "mc_dropout"]
    assert _legend(panels[-1]) == ["1 - max prob", "entropy", "mean var"]


def _qpp(nan: bool) -> pd.DataFrame:
    rows = []
    for ranker in ("bert", "mc_dropout"):
        for corpus, sampler, shift in CONDS:
            for signal in ("1 - max prob", "entropy"):
                rows.append(
                    {
                        **_where(ranker, corpus, sampler, shift),
                        "signal": signal,
                        "queries": 12,
                        "tau RR": NAN if (nan and ranker == "bert") else -0.2,
                        "p RR": 0.1,
                        "tau R@1": -0.1,
                        "p R@1": 0.2,
                    }
                )
    return pd.DataFrame(rows)


@pytest.mark.parametrize("nan", [False, True])
def test_performance_prediction_in_distribution_and_under_shift(nan):
    panels = pp.plot_performance_prediction(_qpp(nan))
    assert [ax.get_title() for ax in panels] == ["in distribution: tau with RR", "under shift: tau with RR"]
    assert _ticks(panels[0], "y") == ["bert", "mc_dropout"] and _ticks(panels[0]) == ["1 - max prob", "entropy"]
    r1 = pp.plot_performance_prediction(_qpp(nan), target="R@1")
    assert r1[0].get_title() == "in distribution: tau with R@1" and _cells(r1[0])[(0, 0)] == "-0.10"


def _listwise(empty_bucket: bool) -> pd.DataFrame:
    rows = []
    for ranker in ("bert", "mc_dropout"):
        for view, ece in (("pointwise", 0.1), ("listwise top label", 0.2)):
            for b in range(4):
                count = 0 if (empty_bucket and b == 1) else 5
                rows.append(
                    {
                        "ranker": ranker,
                        "train_corpus": "chitchat",
                        "condition": "chitchat-bm25-test",
                        "view": view,
                        "bin": b,
                        "lower": b / 4,
                        "upper": (b + 1) / 4,
                        "mean_predicted": (b + 0.5) / 4 if count else NAN,
                        "fraction_positive": b / 4 if count else NAN,
                        "count": count,
                        "ECE": ece,
                    }
                )
    return pd.DataFrame(rows)


@pytest.mark.parametrize("empty_bucket", [False, True])
def test_listwise_reliability_one_line_per_view_with_its_ece(empty_bucket):
    panels = pp.plot_listwise_reliability(_listwise(empty_bucket))
    assert [ax.get_title() for ax in panels] == ["bert", "mc_dropout"]
    assert panels[0].get_xlabel() == "mean predicted" and panels[0].get_ylabel() == "fraction relevant / correct"
    assert _legend(panels[1]) == ["pointwise (ECE 0.100)", "listwise top label (ECE 0.200)"]
    assert len(panels[0].get_lines()[0].get_xdata()) == (3 if empty_bucket else 4)  # non-empty buckets only


def test_listwise_reliability_a_view_with_no_filled_bucket_keeps_its_legend_entry():
    table = _listwise(False)
    table.loc[(table["ranker"] == "bert") & (table["view"] == "pointwise"), "count"] = 0
    panels = pp.plot_listwise_reliability(table)
    assert _legend(panels[0]) == ["pointwise (ECE 0.100)", "listwise top label (ECE 0.200)"]
    assert len(panels[0].get_lines()[0].get_xdata()) == 0


def _selective(nan: bool) -> pd.DataFrame:
    rows = []
    for corpus, sampler, shift in CONDS:
        for ranker in ("bert", "mc_dropout"):
            for conf in ("max prob", "neg var"):
                aurc = NAN if (nan and conf == "neg var" and ranker == "bert") else 0.3
                rows.append(
                    {
                        **_where(ranker, corpus, sampler, shift),
                        "confidence": conf,
                        "queries": 12,
                        "AURC": aurc,
                        "AURC lo": aurc - 0.05,
                        "AURC hi": aurc + 0.05,
                    }
                )
    return pd.DataFrame(rows)


@pytest.mark.parametrize("nan", [False, True])
def test_aurc_intervals_on_the_chosen_shift(nan):
    panels = pp.plot_aurc_intervals(_selective(nan))
    assert [ax.get_title() for ax in panels] == ["chitchat · bm25 (in distribution)"]
    assert panels[0].get_ylabel() == "AURC (lower = better abstention)"
    assert _ticks(panels[0]) == ["bert", "mc_dropout"] and _legend(panels[0]) == ["max prob", "neg var"]
    assert len(pp.plot_aurc_intervals(_selective(nan), shift="cross-NS")) == 1  # none: the empty panel
    assert len(pp.plot_aurc_intervals(_selective(nan).iloc[:0])) == 1


def _nota_conformal(nan: bool) -> pd.DataFrame:
    rows = []
    for view in ("pointwise", "softmax"):
        for alpha in (0.1,):
            for corpus, sampler, shift in CONDS:
                for ranker in ("bert", "mc_dropout"):
                    f1 = NAN if (nan and ranker == "bert" and corpus == "chitchat") else 0.6
                    rows.append(
                        {
                            **_where(ranker, corpus, sampler, shift),
                            "view": view,
                            "alpha": alpha,
                            "F1": f1,
                            "F1 forest": 0.7 if ranker == "mc_dropout" else NAN,
                            "note": "",
                        }
                    )
    return pd.DataFrame(rows)


@pytest.mark.parametrize("nan", [False, True])
def test_nota_f1_markers_and_the_forest(nan):
    panels = pp.plot_nota_f1(_nota_conformal(nan))
    assert [ax.get_title() for ax in panels] == [
        "empty pointwise LAC set, alpha = 0.1",
        "empty softmax LAC set, alpha = 0.1",
    ]
    assert panels[0].get_ylabel() == "NOTA macro-F1"
    assert sorted(_legend(panels[-1])) == ["bert", "mc_dropout", "random forest (06, E[R])"]
    assert _ticks(panels[0]) == ["chitchat · bm25", "chatterbot · bm25"]
    no_f1 = _nota_conformal(nan).assign(F1=NAN)  # every set "too few": nothing to draw
    assert [t.get_text() for t in pp.plot_nota_f1(no_f1)[0].texts] == ["nothing to show in this profile"]


def _nota_threshold(nan: bool) -> pd.DataFrame:
    rows = []
    for risk, target in (("false NOTA", 0.1), ("wrong answer", 0.2)):
        for corpus, sampler, shift in CONDS:
            for ranker in ("bert", "mc_dropout"):
                never = nan and risk == "wrong answer" and ranker == "bert"  # no certified threshold: never answers
                rows.append(
                    {
                        **_where(ranker, corpus, sampler, shift),
                        "risk": risk,
                        "target": target,
                        "delta": 0.1,
                        "threshold": math.inf if never else 0.5,
                        "certified": not never,
                        "achieved risk": NAN if never else 0.05,
                        "risk lo": 0.0 if never else 0.01,
                        "risk hi": 1.0 if never else 0.2,
                        "abstention": 1.0 if never else 0.3,
                    }
                )
    return pd.DataFrame(rows)


@pytest.mark.parametrize("nan", [False, True])
def test_nota_threshold_risk_row_and_abstention_row(nan):
    panels = pp.plot_nota_threshold(_nota_threshold(nan))
    assert len(panels) == 4
    top, bottom = panels[:2], panels[2:]
    assert [ax.get_title() for ax in top] == ["false NOTA <= 0.1 (delta = 0.1)", "wrong answer <= 0.2 (delta = 0.1)"]
    assert [ax.get_ylabel() for ax in top] == ["achieved false NOTA rate", "achieved wrong answer rate"]
    assert all(ax.get_ylabel() == "share answered NOTA" for ax in bottom)
    assert _legend(top[-1]) == ["bert", "mc_dropout"]
    assert _ticks(bottom[0]) == ["chitchat · bm25", "chatterbot · bm25"]


def _two_training_corpora(table: pd.DataFrame) -> pd.DataFrame:
    """The same rows once per training corpus, as a profile that trains on both corpora writes them."""
    return pd.concat([table.assign(train_corpus=c) for c in ("chitchat", "chatterbot")], ignore_index=True)


def test_practice_figures_name_the_training_corpus_when_there_are_several():
    panels = pp.plot_recalibration(_two_training_corpora(_recalibration(False)))
    assert _ticks(panels[0]) == [
        "bert (chitchat)",
        "mc_dropout (chitchat)",
        "bert (chatterbot)",
        "mc_dropout (chatterbot)",
    ]
    panels = pp.plot_conformal_coverage(_two_training_corpora(_conformal(False)))
    assert _legend(panels[-1]) == [
        "bert (chitchat)",
        "mc_dropout (chitchat)",
        "bert (chatterbot)",
        "mc_dropout (chatterbot)",
    ]


# ---------------------------------------------------------------------------------------------- one look
FIGURES = [
    (plots.plot_reliability_grid, lambda: _reliability(False)),
    (plots.plot_ece_by_negatives, lambda: _ece_by_negatives(False)),
    (plots.plot_b_sweep, lambda: _sweep(False)),
    (plots.plot_nota_bars, lambda: _nota(False)),
    (pp.plot_prior_ece, lambda: _prior(False)),
    (pp.plot_recalibration, lambda: _recalibration(False)),
    (pp.plot_risk_coverage, lambda: _curves(False)),
    (pp.plot_conformal_coverage, lambda: _conformal(False)),
    (pp.plot_shift_detection, lambda: _shift(False)),
    (pp.plot_performance_prediction, lambda: _qpp(False)),
    (pp.plot_listwise_reliability, lambda: _listwise(False)),
    (pp.plot_aurc_intervals, lambda: _selective(False)),
    (pp.plot_shift_auroc_intervals, lambda: _shift(False)),
    (pp.plot_nota_f1, lambda: _nota_conformal(False)),
    (pp.plot_nota_threshold, lambda: _nota_threshold(False)),
]


@pytest.mark.parametrize("fn, table", FIGURES, ids=[fn.__name__ for fn, _ in FIGURES])
def test_every_figure_is_drawn_in_the_one_style_and_leaves_the_callers_settings_alone(fn, table):
    before = dict(matplotlib.rcParams)
    panels = fn(table())
    with plots.style():
        looks = {k: matplotlib.rcParams[k] for k in ("axes.edgecolor", "axes.titlesize", "legend.frameon")}
    ax = panels[0]
    assert matplotlib.colors.same_color(ax.spines["left"].get_edgecolor(), looks["axes.edgecolor"])
    assert ax.title.get_fontsize() == pytest.approx(looks["axes.titlesize"])
    legends = [a.get_legend() for a in panels if a.get_legend() is not None]
    assert all(not leg.get_frame_on() for leg in legends) and looks["legend.frameon"] is False
    assert dict(matplotlib.rcParams) == before  # the style is a context, not a global setting


def test_the_style_is_seaborns_whitegrid_theme():
    with plots.style():
        _, ax = plt.subplots()
        assert matplotlib.rcParams["axes.grid"] and matplotlib.rcParams["axes.facecolor"] == "white"
        assert matplotlib.rcParams["font.size"] == pytest.approx(9.6)  # seaborn's paper scale
    assert ax.yaxis.get_gridlines()[0].get_visible()


def test_a_ranker_has_one_colour_whatever_else_a_figure_shows():
    from calibrank.study.settings.registry import RANKERS

    palette = sns.color_palette(plots.RANKER_PALETTE, len(RANKERS) + 2)
    alone, among = plots.ranker_colors(["mc_dropout"]), plots.ranker_colors(["sngp", "bert", "mc_dropout"])
    assert alone["mc_dropout"] == among["mc_dropout"] == palette[list(RANKERS).index("mc_dropout")]
    every = plots.ranker_colors(["theirs", *RANKERS, "mine"])  # names nobody registered follow the registered
    assert list(every.values()) == [palette[len(RANKERS)], *palette[: len(RANKERS)], palette[len(RANKERS) + 1]]
    assert len(set(every.values())) == min(len(RANKERS) + 2, 10)  # ten distinct colours before they repeat


def _colour(artist) -> tuple:
    return matplotlib.colors.to_rgb(artist.get_color() if hasattr(artist, "get_color") else artist.get_facecolor())


def test_the_same_ranker_is_drawn_in_the_same_colour_in_different_figures():
    bert = plots.ranker_colors(["bert"])["bert"]
    reliability = plots.plot_reliability_grid(_reliability(False))[0]  # bert's panel: bars in bert's colour
    assert all(np.allclose(matplotlib.colors.to_rgb(p.get_facecolor()), bert) for p in reliability.patches)
    figure2 = plots.plot_ece_by_negatives(_ece_by_negatives(False))[0]
    assert np.allclose(_colour(figure2.get_lines()[0]), bert)  # bert's line
    assert np.allclose(figure2.collections[0].get_facecolor()[0][:3], bert)  # and its band
    threshold = pp.plot_nota_threshold(_nota_threshold(False))[0]
    handles, labels = threshold.get_legend_handles_labels()
    assert np.allclose(matplotlib.colors.to_rgb(handles[labels.index("bert")][0].get_color()), bert)
    # several training corpora: the ranker keeps its colour, the corpus changes the marker
    conformal = pp.plot_conformal_coverage(_two_training_corpora(_conformal(False)))[0]
    handles, labels = conformal.get_legend_handles_labels()
    first, second = handles[labels.index("bert (chitchat)")][0], handles[labels.index("bert (chatterbot)")][0]
    assert np.allclose(_colour(first), bert) and np.allclose(_colour(second), bert)
    assert first.get_marker() != second.get_marker()


def test_a_condition_has_one_colour_in_every_panel_of_the_b_sweep():
    panels = plots.plot_b_sweep(_sweep(False))
    assert [_colour(line) for line in panels[0].get_lines()[:2]] == [
        _colour(line) for line in panels[1].get_lines()[:2]
    ]
    assert _colour(panels[0].get_lines()[0]) != _colour(panels[0].get_lines()[1])


def test_b_sweep_bands_each_line_when_the_table_gives_its_interval():
    t = _sweep(False).assign(
        **{
            "rel_change_bert lo": lambda d: d["rel_change_bert"] - 0.01,
            "rel_change_bert hi": lambda d: d["rel_change_bert"] + 0.02,
        }
    )
    panels = plots.plot_b_sweep(t)
    assert len(panels[0].collections) == 2  # one band per condition
    band = panels[0].collections[0].get_paths()[0].vertices[:, 1]
    assert band.min() == pytest.approx(-1.0) and band.max() == pytest.approx(7.0)  # in percent, the given bounds
    assert len(plots.plot_b_sweep(_sweep(False))[0].collections) == 0  # no interval columns: no band


def test_reliability_grid_facets_a_table_of_several_conditions_by_condition_and_ranker():
    two = pd.concat(
        [_reliability(False), _reliability(True).assign(condition="chatterbot-bm25-test")], ignore_index=True
    )
    panels = plots.plot_reliability_grid(two)
    assert [ax.get_title() for ax in panels] == [
        "chitchat → chitchat-bm25-test\nbert (ECE 0.120)",
        "chitchat → chitchat-bm25-test\nmc_dropout (ECE 0.050)",
        "chitchat → chatterbot-bm25-test\nbert (ECE 0.120)",
        "chitchat → chatterbot-bm25-test\nmc_dropout (ECE 0.050)",
    ]
    assert [len(ax.patches) for ax in panels] == [5, 5, 4, 5]  # each panel its own condition's buckets
    assert [ax.get_ylabel() for ax in panels] == ["fraction relevant", "", "fraction relevant", ""]  # one per row
    # a ranker missing on one condition: its panel there is hidden, the others keep their place
    panels = plots.plot_reliability_grid(
        two[~((two["ranker"] == "bert") & (two["condition"] == "chatterbot-bm25-test"))]
    )
    assert [ax.get_visible() for ax in panels] == [True, True, False, True]


def test_the_plotting_functions_keep_their_signatures():
    import inspect

    sig = inspect.signature(plots.plot_b_sweep)
    assert list(sig.parameters) == ["table", "y", "ncols", "axes"] and sig.parameters["y"].default == "rel_change_bert"
    assert list(inspect.signature(pp.plot_prior_ece).parameters) == ["table", "shift", "ncols", "axes"]


def test_a_notebook_shows_every_figure_after_a_styled_one(tmp_path):
    """Drawing in the style leaves the inline backend as it was: a notebook shows the figures made after it."""
    import subprocess
    import sys

    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("import matplotlib.pyplot as plt\nfrom calibrank.study.analysis import plots"),
        nbformat.v4.new_code_cell("with plots.style():\n    plt.subplots()[1].plot([1, 2])"),
        nbformat.v4.new_code_cell("plt.subplots()[1].plot([2, 1])"),
    ]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, tmp_path / "in.ipynb")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "papermill",
            str(tmp_path / "in.ipynb"),
            str(tmp_path / "out.ipynb"),
            "--log-level",
            "ERROR",
            "--no-progress-bar",
        ],
        check=True,
        capture_output=True,
    )
    out = nbformat.read(tmp_path / "out.ipynb", as_version=4)
    shown = [sum("image/png" in o.get("data", {}) for o in cell.outputs) for cell in out.cells]
    assert shown == [0, 1, 1]


# ---------------------------------------------------------------------------------------------- the explorer
def _buckets(empty_bucket: bool, by: str = "ranker") -> pd.DataFrame:
    """explore.reliability_view: 4 buckets per ranker with an interval; bert's bucket 2 is empty when ``empty_bucket``."""
    rows = []
    for ranker, ece in (("bert", 0.12), ("ensemble", 0.05)):
        for b in range(4):
            count = 0 if (empty_bucket and ranker == "bert" and b == 2) else 10 * (b + 1)
            frac = b / 4 if count else NAN
            rows.append(
                {
                    by: ranker,
                    "bin": b,
                    "lower": b / 4,
                    "upper": (b + 1) / 4,
                    "mean_predicted": (b + 0.5) / 4 if count else NAN,
                    "fraction_positive": frac,
                    "fraction_positive lo": max(frac - 0.1, 0) if count else NAN,
                    "fraction_positive hi": min(frac + 0.2, 1) if count else NAN,
                    "count": count,
                    "ECE": ece,
                }
            )
    return pd.DataFrame(rows)


@pytest.mark.parametrize("empty_bucket", [False, True])
def test_reliability_intervals_draw_each_filled_bucket_with_its_interval_and_count(empty_bucket):
    bert, ens = plots.plot_reliability_intervals(_buckets(empty_bucket))
    assert bert.get_title() == "bert (ECE 0.120)" and ens.get_title() == "ensemble (ECE 0.050)"
    assert bert.get_xlabel() == "predicted P(relevant)" and bert.get_ylabel() == "fraction relevant (count above)"
    counts = [10, 20, 40] if empty_bucket else [10, 20, 30, 40]
    assert [t.get_text() for t in bert.texts] == [str(c) for c in counts]  # a count above each filled bucket
    points = bert.get_lines()[0]
    np.testing.assert_allclose(points.get_ydata(), [b / 4 for b in (0, 1, 3)] if empty_bucket else [0, 0.25, 0.5, 0.75])
    # the bars span the table's own bounds: bucket 1 from 0.15 to 0.45
    segments = bert.collections[0].get_segments()
    np.testing.assert_allclose(segments[1][:, 1], [0.15, 0.45])
    assert np.allclose(_colour(points), sns.color_palette("colorblind")[0])  # bert's colour in every figure
    assert (
        sorted(_legend(bert)) == ["fraction relevant, 95% interval", "perfect calibration"] and ens.get_legend() is None
    )


def test_reliability_intervals_panel_by_any_column():
    panels = plots.plot_reliability_intervals(_buckets(False, by="scores"), by="scores")
    assert [ax.get_title() for ax in panels] == ["bert (ECE 0.120)", "ensemble (ECE 0.050)"]


def _histograms() -> pd.DataFrame:
    """explore.histogram_view: two labels x 4 bins for one ranker; no relevant candidate in the second ranker."""
    rows = []
    for ranker, n_rel in (("bert", 4), ("temperature", 0)):
        for label, counts in (("relevant", [0, 0, 1, 3] if n_rel else [0, 0, 0, 0]), ("not relevant", [6, 2, 0, 0])):
            total = sum(counts)
            for b, c in enumerate(counts):
                rows.append(
                    {
                        "ranker": ranker,
                        "label": label,
                        "bin": b,
                        "lower": b / 4,
                        "upper": (b + 1) / 4,
                        "count": c,
                        "density": c / (total * 0.25) if total else NAN,
                        "candidates": total,
                        "mean": 0.8 if label == "relevant" else 0.2,
                    }
                )
    return pd.DataFrame(rows)


def test_score_histograms_one_density_per_label_with_its_candidates_in_the_legend():
    bert, temp = plots.plot_score_histograms(_histograms())
    assert (
        bert.get_title() == "bert" and bert.get_ylabel() == "density" and bert.get_xlabel() == "predicted P(relevant)"
    )
    assert _legend(bert) == ["relevant (4, mean 0.80)", "not relevant (8, mean 0.20)"]
    assert _legend(temp) == [
        "relevant (none)",
        "not relevant (8, mean 0.20)",
    ]  # no relevant candidate: an empty outline
    outline = [p for p in bert.patches if not p.get_fill()][0]
    assert outline.get_data().values.tolist() == [0.0, 0.0, 1.0, 3.0]  # relevant: 1 and 3 of 4 in bins of width 1/4


def _metrics() -> pd.DataFrame:
    """explore.metrics_view for two rankers: R10@1, ECE (no interval), ECE debiased, Brier."""
    rows = []
    for ranker, shift in (("bert", 0.0), ("mc_dropout", 0.1)):
        for metric, v, lo, hi in (
            ("R10@1", 0.6, 0.5, 0.7),
            ("ECE", 0.2, NAN, NAN),
            ("ECE debiased", 0.18, 0.15, 0.22),
            ("Brier", 0.1, 0.09, 0.12),
        ):
            rows.append({"ranker": ranker, "metric": metric, "value": v + shift, "lo": lo + shift, "hi": hi + shift})
    return pd.DataFrame(rows)


def test_metric_intervals_one_panel_per_metric_with_eq1_in_the_debiased_panel():
    recall, ece, brier = plots.plot_metric_intervals(_metrics())
    assert [ax.get_title() for ax in (recall, ece, brier)] == ["R10@1", "ECE debiased", "Brier"]
    assert _ticks(recall, "y") == ["bert", "mc_dropout"]
    bars = [c for c in recall.collections if c.get_segments()]
    np.testing.assert_allclose(bars[0].get_segments()[0][:, 0], [0.5, 0.7])  # bert's interval, from lo to hi
    assert _legend(ece) == ["ECE (eq. 1)"] and recall.get_legend() is None
    hollow = [ln for ln in ece.get_lines() if ln.get_markerfacecolor() == "none"]
    assert [ln.get_xdata()[0] for ln in hollow] == [0.2, pytest.approx(0.3)]


def test_side_by_side_two_reliability_panels_and_the_differences():
    comparison = pd.DataFrame(
        {
            "ranker": "bert",
            "versus": "ensemble",
            "metric": ["R10@1", "ECE debiased", "Brier"],
            "change": [0.05, -0.02, NAN],
            "lo": [0.01, -0.03, NAN],
            "hi": [0.09, 0.0, NAN],
            "pvalue": [0.01, 0.2, NAN],
        }
    )
    bert, ens, diff = plots.plot_side_by_side(_buckets(True), comparison)
    assert (bert.get_title(), ens.get_title(), diff.get_title()) == (
        "bert (ECE 0.120)",
        "ensemble (ECE 0.050)",
        "bert − ensemble",
    )
    assert _ticks(diff, "y") == ["R10@1", "ECE debiased", "Brier"]
    assert [t.get_text() for t in diff.texts] == ["+0.050 (p = 0.01)", "-0.020 (p = 0.2)"]  # none for a NaN
    assert diff.get_xlabel() == "difference, 95% interval over queries"
