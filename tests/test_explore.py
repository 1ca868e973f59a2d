"""The explorer of notebooks 04, 08 and 09 (calibrank.study.analysis.explore) on the synthetic study of test_study.

Each view is checked against the table of the notebook it sits in (the same buckets as the reliability table, the
same intervals as the interval table, the same recalibrated Predictions as notebook 08's table) or by hand; the
widgets are built without a front-end and their callback is called as a control would call it.
"""

from __future__ import annotations

import doctest
import types

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from calibrank.predictions import Predictions  # noqa: E402
from calibrank.study.analysis import explore  # noqa: E402
from calibrank.study.analysis import study as st
from calibrank.study.analysis.calibration import default_condition  # noqa: E402
from test_study import K, Q, write_synthetic_study  # noqa: E402

pytest.importorskip("ipywidgets")


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


@pytest.fixture
def study(tmp_root):
    return st.load_study(write_synthetic_study(tmp_root, seeds=(0, 1), seed_shift=0.03))


def test_the_examples_in_the_docstrings_run():
    assert doctest.testmod(explore, optionflags=doctest.NORMALIZE_WHITESPACE).failed == 0


# ------------------------------------------------------------------------------ views
def test_reliability_view_has_notebook_04s_buckets_and_an_interval_per_bucket(study):
    cond = default_condition(study)
    table = st.reliability_table(study, cond, rankers=["mc_dropout"])
    view = explore.reliability_view(study, "mc_dropout", "chitchat", cond.name, n_resamples=200)
    assert list(view.columns[:4]) == ["ranker", "train_corpus", "condition", "seed"]
    assert (view["seed"] == study.main_seed).all() and (view["condition"] == cond.name).all()
    for c in ("lower", "upper", "mean_predicted", "fraction_positive", "count", "ECE"):
        np.testing.assert_array_equal(view[c], table[c], err_msg=c)
    filled = view["count"] > 0
    assert (view.loc[filled, "fraction_positive lo"] <= view.loc[filled, "fraction_positive hi"]).all()
    assert view.loc[~filled, ["fraction_positive lo", "fraction_positive hi"]].isna().all().all()
    # bert's buckets each hold one label: every resample gives the same fraction, the interval is a point
    bert = explore.reliability_view(study, "bert", "chitchat", cond, n_resamples=200)
    bert = bert[bert["count"] > 0]
    assert bert["count"].tolist() == [Q * (K - 1), Q]
    np.testing.assert_array_equal(bert["fraction_positive lo"], bert["fraction_positive"])
    np.testing.assert_array_equal(bert["fraction_positive hi"], bert["fraction_positive"])
    # another training seed is another Predictions file
    other = explore.reliability_view(study, "mc_dropout", "chitchat", cond, seed=1, n_resamples=200)
    assert (other["seed"] == 1).all() and not np.array_equal(
        other["mean_predicted"], view["mean_predicted"], equal_nan=True
    )


def test_a_buckets_interval_is_the_bootstrap_over_queries_of_its_fraction_relevant():
    """200 queries each put one candidate at 0.55, relevant in half of them: the bucket's fraction is 0.5 and,
    resampling queries, its 95% interval is the binomial one, 0.5 +- 1.96 * sqrt(0.25 / 200) = [0.43, 0.57]."""
    q = 200
    labels = np.zeros((q, 4), dtype=int)
    labels[np.arange(q), np.where(np.arange(q) % 2 == 0, 0, 1)] = 1  # even queries: the relevant one at 0.55
    probs = np.tile([0.55, 0.05, 0.05, 0.05], (q, 1))
    pred = Predictions(np.arange(q), labels, probs, probs[None])
    frame = explore.reliability_frame(pred, n_resamples=2000, seed=3)
    row = frame.set_index("bin").loc[5]
    assert row["count"] == q and row["fraction_positive"] == 0.5
    half = 1.96 * np.sqrt(0.25 / q)
    assert row["fraction_positive lo"] == pytest.approx(0.5 - half, abs=0.015)
    assert row["fraction_positive hi"] == pytest.approx(0.5 + half, abs=0.015)
    # seeded: the same seed, the same interval
    pd.testing.assert_frame_equal(frame, explore.reliability_frame(pred, n_resamples=2000, seed=3))
    # a padded slot is no pair: the same queries with a fifth, padded candidate give the same buckets
    padded = Predictions(
        np.arange(q),
        np.pad(labels, ((0, 0), (0, 1))),
        np.pad(probs, ((0, 0), (0, 1))),
        np.pad(probs, ((0, 0), (0, 1)))[None],
        mask=np.pad(np.ones_like(labels, bool), ((0, 0), (0, 1))),
    )
    pd.testing.assert_frame_equal(explore.reliability_frame(padded, n_resamples=2000, seed=3), frame)


def test_histogram_view_counts_each_label_as_a_density(study):
    cond = default_condition(study)
    h = explore.histogram_view(study, "bert", "chitchat", cond, bins=8)
    assert len(h) == 2 * 8 and list(h["label"].unique()) == ["relevant", "not relevant"]
    rel, neg = h[h["label"] == "relevant"], h[h["label"] == "not relevant"]
    # bert: the relevant candidate at 0.9 (the bin [0.875, 1]), every negative at 0.35 (the bin [0.25, 0.375))
    assert rel.set_index("bin")["count"][7] == Q and rel["count"].sum() == Q
    assert neg.set_index("bin")["count"][2] == Q * (K - 1) and neg["count"].sum() == Q * (K - 1)
    for part in (rel, neg):
        assert (part["density"] * (part["upper"] - part["lower"])).sum() == pytest.approx(1.0)
    assert rel["mean"].iloc[0] == pytest.approx(0.9) and neg["candidates"].iloc[0] == Q * (K - 1)


def test_metrics_view_is_notebook_04s_interval_table_for_one_seed(tmp_root):
    data = st.load_study(write_synthetic_study(tmp_root))
    iv = st.interval_table(data, rankers=["mc_dropout"], n_resamples=200)
    cond = default_condition(data)
    row = iv[(iv["corpus"] == cond.corpus) & (iv["sampler"] == cond.sampler)].iloc[0]
    view = explore.metrics_view(data, "mc_dropout", "chitchat", cond, n_resamples=200).set_index("metric")
    assert list(view.index) == ["R10@1", "ECE", "ECE debiased", "Brier"]
    for metric, column in (("R10@1", "R@1"), ("ECE debiased", "ECE debiased"), ("Brier", "Brier")):
        assert [view.loc[metric, c] for c in ("value", "lo", "hi")] == [
            row[column],
            row[f"{column} lo"],
            row[f"{column} hi"],
        ]
    assert view.loc["ECE", "value"] == row["ECE"] and np.isnan(view.loc["ECE", "lo"])


def test_compare_view_gives_each_difference_with_its_interval_and_test(study):
    cond = default_condition(study)
    c = explore.compare_view(study, ("bert", "temperature"), "chitchat", cond, n_resamples=200).set_index("metric")
    assert (c["ranker"] == "bert").all() and (c["versus"] == "temperature").all()
    # bert ranks every relevant candidate first, temperature's ties put it last: R10@1 1 against 0 on every query
    assert c.loc["R10@1", ["a", "b", "change"]].tolist() == [1.0, 0.0, 1.0] and c.loc["R10@1", "pvalue"] < 0.01
    # ECE on all pairs: bert 0.325 (pure buckets, debiased = eq. 1); Brier (0.1**2 + 9 * 0.35**2) / 10 against 0.25
    assert c.loc["ECE debiased", "a"] == pytest.approx(0.325)
    assert c.loc["Brier", "change"] == pytest.approx((0.01 + 9 * 0.35**2) / 10 - 0.25)
    assert ((c["lo"] <= c["change"] + 1e-12) & (c["change"] <= c["hi"] + 1e-12)).all()
    with pytest.raises(ValueError, match=r"rankers: side by side compares two rankers; got 1"):
        explore.compare_view(study, ("bert",), "chitchat", cond)


def test_a_recalibrated_cell_is_the_one_notebook_08_evaluates(study):
    from calibrank.study.analysis.practice import recalibrate

    table = recalibrate.recalibration_table(
        study, rankers=["mc_dropout", "bert"], methods=("platt", "isotonic"), n_resamples=50
    )
    for _, row in table.iterrows():
        pred = explore.cell_predictions(
            study,
            row["ranker"],
            row["train_corpus"],
            study.condition(row["corpus"], row["sampler"]),
            method=row["method"],
        )
        view = explore.metrics_view(
            study,
            row["ranker"],
            row["train_corpus"],
            study.condition(row["corpus"], row["sampler"]),
            method=row["method"],
            n_resamples=50,
        ).set_index("metric")
        assert pred.labels.shape[0] == row["queries"] and view.loc["ECE", "value"] == pytest.approx(
            row["ECE"], abs=1e-12
        )
        assert (view["method"] == row["method"]).all()
    with pytest.raises(ValueError, match=r"seed: a recalibrated cell is the main training seed's \(0\)"):
        explore.cell_predictions(study, "bert", "chitchat", default_condition(study), 1, method="platt")
    with pytest.raises(KeyError, match=r"condition: no 'nowhere' in profile 'smoke'"):
        explore.cell_predictions(study, "bert", "chitchat", "nowhere")


# ------------------------------------------------------------------------------ figures and widgets
def test_figure_draws_each_view_of_the_default_selection(study):
    titles = {}
    for view in explore.VIEWS:
        fig, table = explore.figure(study, view, n_resamples=100)
        titles[view] = [ax.get_title() for ax in fig.axes if ax.get_visible()]
        assert fig._suptitle.get_text() == "trained on chitchat → tested on chitchat · bm25 (in distribution), seed 0"
        assert len(table) and set(table["ranker"]) <= {"bert", "mc_dropout"}
    ece = st.reliability_table(study, rankers=["mc_dropout"])["ECE"].iloc[0]  # notebook 04's, on the same pairs
    assert titles["reliability"] == ["bert (ECE 0.325)", f"mc_dropout (ECE {ece:.3f})"]
    assert titles["histograms"] == ["bert", "mc_dropout"]
    assert titles["metrics"] == ["R10@1", "ECE debiased", "Brier"]
    assert titles["side by side"] == ["bert (ECE 0.325)", f"mc_dropout (ECE {ece:.3f})", "bert − mc_dropout"]
    with pytest.raises(ValueError, match="view: expected one of reliability, histograms, metrics, side by side"):
        explore.figure(study, "heatmap")


def test_explorer_builds_its_widgets_and_redraws_when_a_control_changes(study):
    import ipywidgets

    ex = explore.explorer(study, n_resamples=100)
    assert isinstance(ex.widget, ipywidgets.VBox) and ex.output in ex.widget.children
    assert list(ex.controls) == ["view", "rankers", "train_corpus", "condition", "seed"]
    assert ex.selection() == {
        "view": "reliability",
        "rankers": ("bert", "mc_dropout"),
        "train_corpus": "chitchat",
        "condition": default_condition(study).name,
        "seed": 0,
    }
    assert ex.redraws == 1 and ex.static_png == ex.png and ex.output.outputs[0]["data"]["image/png"] == ex.png
    assert ex.controls["seed"].options == (0, 1)
    first = ex.png

    other = study.condition("chatterbot", "random")
    ex.controls["condition"].value = other.name  # the control calls redraw
    assert ex.redraws == 2 and set(ex.table["condition"]) == {other.name} and ex.png != first
    ex.controls["seed"].value = 1
    assert ex.redraws == 3 and set(ex.table["seed"]) == {1}
    ex.controls["view"].value = "metrics"
    assert ex.redraws == 4 and list(ex.table["metric"].unique()) == ["R10@1", "ECE", "ECE debiased", "Brier"]
    assert "<table" in ex.output.outputs[1]["data"]["text/html"]
    ex.redraw()  # the callback itself, as a front-end calls it
    assert ex.redraws == 5

    ex.controls["view"].value = "side by side"
    ex.controls["rankers"].value = ("bert",)  # side by side needs two: the output says so, nothing is drawn
    assert ex.message == "rankers: side by side compares two; pick two, not 1"
    assert ex.output.outputs[0]["data"] == {"text/plain": ex.message} and ex.redraws == 6
    ex.controls["rankers"].value = ("bert", "ensemble")
    assert ex.message == "" and ex.redraws == 7 and set(ex.table["versus"]) == {"ensemble"}
    assert ex.static_png == first  # what the notebook shows without a front-end stays the default selection


def test_notebook_08s_explorer_picks_the_recalibrator(study):
    ex = explore.explorer(study, methods=("none", "platt"), n_resamples=100)
    assert "seed" not in ex.controls and ex.controls["method"].value == "none"
    ex.controls["method"].value = "platt"
    assert ex.redraws == 2 and set(ex.table["method"]) == {"platt"}
    assert ex.figure._suptitle.get_text().endswith("recalibrated: platt")


def test_notebook_09s_explorer_draws_the_views_of_a_users_scores():
    from calibrank.assess.engine import assess
    from calibrank.assess.options import Settings
    from calibrank.assess.read.scored import ScoredRun

    rng = np.random.default_rng(0)
    y = (rng.random((80, 10)) < 0.2).astype(int)
    s = 3 * y + rng.normal(size=y.shape)
    run = ScoredRun(
        qids=np.arange(80),
        docids=np.tile(np.arange(10), (80, 1)),
        mask=np.ones(y.shape, bool),
        scores=s[None],
        relevance=y,
        judged=np.ones(y.shape, bool),
        n_relevant=y.sum(axis=1),
        source="mine.trec",
    )
    test, valid = run.subset(np.arange(40, 80)), run.subset(np.arange(40))
    result = assess(test, valid, Settings(n_resamples=50))
    ex = explore.assessment_explorer(result, types.SimpleNamespace(test=test, valid=valid), n_resamples=100)
    views = list(ex.controls["scores"].options)
    assert views[-1] == "base rate" and "as given" not in views  # a raw score has no probability scale
    deployed = result.calibration.loc[result.calibration["deployed"], "view"].iloc[0]
    assert deployed in ex.selection()["scores"] and set(ex.table["scores"]) == set(ex.selection()["scores"])
    # the deployed map's buckets are the assessment's own reliability table
    mine = ex.table[ex.table["scores"] == deployed]
    theirs = result.reliability[result.reliability["view"] == deployed]
    np.testing.assert_array_equal(mine["count"], theirs["count"])
    ex.controls["scores"].value = (views[0], "base rate")
    ex.controls["view"].value = "side by side"
    assert ex.message == "" and ex.table["versus"].iloc[0] == "base rate"
    assert ex.figure._suptitle.get_text() == "mine.trec: test queries"


def test_a_notebook_shows_the_widgets_then_the_default_selection_as_a_plain_figure(tmp_root, tmp_path):
    """Executed by papermill (as make report and nbval run the notebooks), the cell's outputs are the widget and a
    plain image: nbconvert's HTML and the report, which have no widgets, show the image."""
    import subprocess
    import sys

    import nbformat

    write_synthetic_study(tmp_root)
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(
            "from test_study import synthetic_config\n"
            "from calibrank.study.analysis import explore, study as st\n"
            "data = st.load_study(synthetic_config())"
        ),
        nbformat.v4.new_code_cell("explore.explorer(data, n_resamples=50)"),
    ]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, tmp_path / "in.ipynb")
    tests = str(__import__("pathlib").Path(__file__).parent)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "papermill",
            str(tmp_path / "in.ipynb"),
            str(tmp_path / "out.ipynb"),
            "--cwd",
            tests,
            "--log-level",
            "ERROR",
            "--no-progress-bar",
        ],
        check=True,
        capture_output=True,
    )
    out = nbformat.read(tmp_path / "out.ipynb", as_version=4)
    shown = [sorted(o.get("data", {})) for o in out.cells[1].outputs]
    assert shown == [["application/vnd.jupyter.widget-view+json", "text/plain"], ["image/png", "text/plain"]]
