"""Tests of calibrank.study.analysis.nota (none-of-the-above prediction) on synthetic, seeded Predictions."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from calibrank.predictions import Predictions, PredictionsError
from calibrank.study.analysis.nota import (
    NotaResult,
    compare_inputs,
    cross_validate_nota,
    make_nota_set,
    nota_features,
)


def synthetic(seed: int, q: int = 40, k: int = 6, s: int = 5, gap: float = 0.0, name: str = "syn") -> Predictions:
    """One relevant per query; the relevant's samples are shifted up by ``gap`` (logit units)."""
    rng = np.random.default_rng(seed)
    labels = np.zeros((q, k), dtype=int)
    labels[np.arange(q), rng.integers(0, k, size=q)] = 1
    z = rng.normal(-1.0, 1.0, size=(1, q, k)) + gap * labels + rng.normal(scale=0.3, size=(s, q, k))
    samples = 1.0 / (1.0 + np.exp(-z))
    return Predictions(
        qids=[f"{name}{i}" for i in range(q)],
        labels=labels,
        probs=samples.mean(axis=0),
        samples=samples,
        meta={"name": name},
    )


# ------------------------------------------------------------------------------- NOTA set
@pytest.mark.parametrize("q,fraction", [(40, 0.5), (41, 0.5), (30, 0.2), (10, 1.0), (10, 0.0)])
def test_fraction_candidates_and_labels(q, fraction):
    pred = synthetic(0, q=q)
    ns = make_nota_set(pred, seed=3, fraction=fraction)
    assert ns.y.sum() == math.floor(fraction * q + 0.5)
    assert ns.pred.labels.shape == (q, 5) and ns.pred.samples.shape == (5, q, 5) and ns.pred.probs.shape == (q, 5)
    assert ns.n_candidates == 5 and ns.n_queries == q
    np.testing.assert_array_equal(ns.pred.qids, pred.qids)
    # NOTA rows have no relevant candidate left, answerable rows keep exactly one
    np.testing.assert_array_equal(ns.pred.labels.sum(axis=1), 1 - ns.y)
    # the removed candidate is the relevant one exactly for NOTA rows
    np.testing.assert_array_equal(pred.labels[np.arange(q), ns.removed], ns.y)
    # the remaining candidates are the originals minus the removed one, in their order
    for i in range(q):
        keep = [j for j in range(6) if j != ns.removed[i]]
        np.testing.assert_array_equal(ns.pred.samples[:, i], pred.samples[:, i, keep])
        np.testing.assert_array_equal(ns.pred.probs[i], pred.probs[i, keep])
    assert ns.pred.meta["nota"]["seed"] == 3


def test_determinism_by_seed():
    pred = synthetic(1, q=60)
    a, b = make_nota_set(pred, seed=7), make_nota_set(pred, seed=7)
    np.testing.assert_array_equal(a.y, b.y)
    np.testing.assert_array_equal(a.removed, b.removed)
    np.testing.assert_array_equal(a.pred.samples, b.pred.samples)
    c = make_nota_set(pred, seed=8)
    assert not np.array_equal(a.y, c.y)
    # the removed negative is drawn at random too, not always the first negative
    answerable = a.y == 0
    first_neg = np.argmax(pred.labels == 0, axis=1)
    assert not np.array_equal(a.removed[answerable], first_neg[answerable])


def test_apply_removes_the_same_candidates_from_another_ranker():
    pred = synthetic(2)
    other = Predictions(pred.qids, pred.labels, pred.probs * 0.5, pred.samples * 0.5, meta={"name": "other"})
    ns = make_nota_set(pred, seed=0)
    ns2 = ns.apply(other)
    np.testing.assert_array_equal(ns2.removed, ns.removed)
    np.testing.assert_allclose(ns2.pred.samples, ns.pred.samples * 0.5)
    with pytest.raises(PredictionsError, match="qids"):
        ns.apply(synthetic(2, name="zzz"))
    with pytest.raises(PredictionsError, match="labels"):
        ns.apply(synthetic(3))


def test_nota_set_errors():
    pred = synthetic(4, q=5)
    labels = pred.labels.copy()
    labels[2] = 0
    no_rel = Predictions(pred.qids, labels, pred.probs, pred.samples, meta={"name": "norel"})
    with pytest.raises(PredictionsError, match="norel: 1 query.*no relevant candidate.*'syn2'"):
        make_nota_set(no_rel, seed=0)
    labels = pred.labels.copy()
    labels[1] = 1
    with pytest.raises(PredictionsError, match="more than one relevant"):
        make_nota_set(Predictions(pred.qids, labels, pred.probs, pred.samples), seed=0)
    one = Predictions(["a"], [[1]], [[0.5]], np.full((2, 1, 1), 0.5))
    with pytest.raises(PredictionsError, match="at least 2 candidates"):
        make_nota_set(one, seed=0)
    for bad in (-0.1, 1.5, float("nan"), "0.5"):
        with pytest.raises(ValueError, match="fraction"):
            make_nota_set(pred, seed=0, fraction=bad)
    for bad in (-1, 1.5, None, True):
        with pytest.raises(ValueError, match="seed"):
            make_nota_set(pred, seed=bad)
    with pytest.raises(TypeError):
        make_nota_set(pred.samples, seed=0)


# ------------------------------------------------------------------------------- features
def test_no_leak_of_the_removed_relevant_candidate():
    """The relevant candidate carries a unique marker (mean 0.49, variance 0.2401): NOTA rows must not show it."""
    rng = np.random.default_rng(5)
    q, k, s = 50, 5, 4
    samples = rng.uniform(0.01, 0.3, size=(1, q, k)) + rng.uniform(0, 1e-3, size=(s, q, k))
    labels = np.zeros((q, k), dtype=int)
    rel = rng.integers(0, k, size=q)
    labels[np.arange(q), rel] = 1
    samples[:, np.arange(q), rel] = np.array([0.0, 0.98, 0.0, 0.98])[:, None]  # mean 0.49, var 0.2401
    pred = Predictions([f"q{i}" for i in range(q)], labels, samples.mean(axis=0), samples)
    ns = make_nota_set(pred, seed=1)
    x = nota_features(ns, "mean+var")
    nota, answ = ns.y == 1, ns.y == 0
    marker_mean = np.isclose(x[:, :4], 0.49, atol=1e-9)
    marker_var = np.isclose(x[:, 4:], 0.2401, atol=1e-9)
    assert not marker_mean[nota].any() and not marker_var[nota].any()
    assert (x[nota, 4:] < 1e-3).all()  # only the negatives' small variances remain
    # sanity check of the test itself: answerable rows do carry the marker, first (highest mean)
    assert marker_mean[answ, 0].all() and marker_var[answ, 0].all()


def test_features_sorted_and_variances_aligned():
    pred = synthetic(6, q=30, k=7, s=6)
    ns = make_nota_set(pred, seed=2)
    xm = nota_features(ns, "mean")
    x = nota_features(ns, "mean+var")
    assert xm.shape == (30, 6) and x.shape == (30, 12)
    np.testing.assert_array_equal(x[:, :6], xm)
    assert (np.diff(xm, axis=1) <= 0).all()
    mean, var = ns.pred.mean, ns.pred.var
    for i in range(30):
        for j in range(6):
            c = int(np.flatnonzero(mean[i] == xm[i, j])[0])  # the candidate in column j
            assert x[i, 6 + j] == var[i, c]


def test_var_from_another_ranker():
    pred = synthetic(7)
    ens = Predictions(pred.qids, pred.labels, pred.probs, pred.samples[::-1] ** 2, meta={"name": "ens"})
    ns = make_nota_set(pred, seed=0)
    ns_e = ns.apply(ens)
    x = nota_features(ns, "mean+var", var_from=ns_e)
    order = np.argsort(-ns.pred.mean, axis=1, kind="stable")
    np.testing.assert_array_equal(x[:, :5], np.take_along_axis(ns.pred.mean, order, axis=1))
    np.testing.assert_array_equal(x[:, 5:], np.take_along_axis(ns_e.pred.var, order, axis=1))
    with pytest.raises(ValueError, match="same NOTA set"):
        nota_features(ns, "mean+var", var_from=make_nota_set(pred, seed=1))
    with pytest.raises(ValueError, match="var_from"):
        nota_features(ns, "mean", var_from=ns_e)
    with pytest.raises(ValueError, match="space"):
        nota_features(ns, "var")
    with pytest.raises(TypeError):
        nota_features(pred, "mean")


# ------------------------------------------------------------------------------- classifier
def test_random_forest_learns_visible_signal_and_not_noise():
    # NOTA queries lose the relevant candidate, which has a visibly higher score: the max drops.
    ns = make_nota_set(synthetic(8, q=300, gap=4.0), seed=0)
    res = cross_validate_nota(nota_features(ns, "mean"), ns.y, seed=0, n_estimators=50)
    assert res.folds == 5 and res.mean > 0.85
    # pure-noise features with the same labels: chance level
    noise = np.random.default_rng(9).normal(size=(300, 5))
    res_noise = cross_validate_nota(noise, ns.y, seed=0, n_estimators=50)
    assert 0.38 < res_noise.mean < 0.62
    # deterministic by seed, and the same folds for every input space
    again = cross_validate_nota(nota_features(ns, "mean"), ns.y, seed=0, n_estimators=50)
    np.testing.assert_array_equal(again.fold_scores, res.fold_scores)
    assert res.labels_digest == res_noise.labels_digest and res.n == 300
    assert set(np.unique(res.oof_pred)) <= {0, 1}


def test_variance_features_help_when_uncertainty_marks_nota():
    """NOTA rows have about the same scores but a more uncertain top candidate: only +var can tell."""
    rng = np.random.default_rng(10)
    q, k, s = 300, 5, 8
    labels = np.zeros((q, k), dtype=int)
    labels[np.arange(q), rng.integers(0, k, size=q)] = 1
    mean = rng.uniform(0.25, 0.75, size=(q, k))
    spread = np.where(labels == 1, 0.01, 0.2)[None] * rng.choice([-1.0, 1.0], size=(s, q, k))
    pred = Predictions([f"q{i}" for i in range(q)], labels, mean, mean[None] + spread)
    ns = make_nota_set(pred, seed=0)
    r_mean = cross_validate_nota(nota_features(ns, "mean"), ns.y, seed=1, n_estimators=50)
    r_var = cross_validate_nota(nota_features(ns, "mean+var"), ns.y, seed=1, n_estimators=50)
    assert r_var.mean > 0.9 and r_mean.mean < 0.65
    df = compare_inputs({"E[R]": r_mean, "+var": r_var})
    assert df.loc[1, "significant"] and df.loc[1, "rel_change"] > 0.3


def test_cross_validate_errors():
    y = np.array([0, 1] * 10)
    x = np.zeros((20, 3))
    with pytest.raises(ValueError, match="at least folds=5"):
        cross_validate_nota(x[:8], y[:8], seed=0)
    with pytest.raises(ValueError, match="NaN"):
        cross_validate_nota(np.full((20, 3), np.nan), y, seed=0)
    with pytest.raises(ValueError, match="one label per row"):
        cross_validate_nota(x, y[:-1], seed=0)
    with pytest.raises(ValueError, match="only 0"):
        cross_validate_nota(x, y * 2, seed=0)
    with pytest.raises(ValueError, match="2-D"):
        cross_validate_nota(x[:, 0], y, seed=0)
    with pytest.raises(ValueError, match="folds"):
        cross_validate_nota(x, y, seed=0, folds=1)
    with pytest.raises(ValueError, match="seed"):
        cross_validate_nota(x, y, seed=-3)


# ------------------------------------------------------------------------------- comparison
def test_compare_inputs_against_hand_computation():
    base = NotaResult([0.60, 0.62, 0.58, 0.61, 0.59])
    a = NotaResult([0.70, 0.69, 0.72, 0.66, 0.71])
    b = NotaResult([0.61, 0.60, 0.60, 0.63, 0.58])
    df = compare_inputs({"+var[R^D]": a, "E[R]": base, "+var[R^E]": b})
    assert len(df) == 3 and df.loc[2, "rel_change"] == pytest.approx((0.604 - 0.60) / 0.60)  # b's mean: 3.02 / 5
    assert list(df["input"]) == ["E[R]", "+var[R^D]", "+var[R^E]"]
    assert df.loc[0, "f1_mean"] == pytest.approx(0.60)
    assert df.loc[0, "f1_sd"] == pytest.approx(np.std([0.60, 0.62, 0.58, 0.61, 0.59], ddof=1))
    assert df.loc[1, "rel_change"] == pytest.approx((0.696 - 0.60) / 0.60)
    assert df.loc[0, "rel_change"] == 0.0 and math.isnan(df.loc[0, "pvalue"])
    # paired t by hand, one-sided in the paper's direction (the input raises F1), and the other tail
    raw = []
    for r, row in ((a, 1), (b, 2)):
        d = r.fold_scores - base.fold_scores
        t = d.mean() / (d.std(ddof=1) / math.sqrt(5))
        p = sps.t.sf(t, df=4)
        assert df.loc[row, "statistic"] == pytest.approx(t)
        assert df.loc[row, "pvalue"] == pytest.approx(p)
        assert df.loc[row, "pvalue_worse"] == pytest.approx(sps.t.cdf(t, df=4))
        raw.append(p)
    # the mean over folds with its Student-t interval
    half = sps.t.ppf(0.975, df=4) * np.std(a.fold_scores, ddof=1) / math.sqrt(5)
    assert (df.loc[1, "f1_lo"], df.loc[1, "f1_hi"]) == pytest.approx((0.696 - half, 0.696 + half))
    # Holm with m = 2: smaller p times 2, larger p times 1 (kept monotone), capped at 1
    lo, hi = sorted(raw)
    adj = {lo: min(1, 2 * lo), hi: min(1, max(2 * lo, hi))}
    assert df.loc[1, "pvalue_holm"] == pytest.approx(adj[raw[0]])
    assert df.loc[2, "pvalue_holm"] == pytest.approx(adj[raw[1]])
    assert df.loc[1, "significant"] and not df.loc[2, "significant"]


def test_compare_inputs_untestable_cases():
    base = NotaResult([0.6, 0.7, 0.5])
    same_shift = NotaResult([0.7, 0.8, 0.6])  # constant differences: zero variance
    df = compare_inputs({"E[R]": base, "+var": same_shift})
    assert math.isnan(df.loc[1, "pvalue"]) and "zero variance" in df.loc[1, "note"]
    assert math.isnan(df.loc[1, "pvalue_holm"]) and not df.loc[1, "significant"]
    one = compare_inputs({"E[R]": NotaResult([0.6]), "+var": NotaResult([0.7])})
    assert math.isnan(one.loc[1, "pvalue"]) and "at least 2 pairs" in one.loc[1, "note"]
    assert math.isnan(one.loc[1, "f1_sd"])
    with pytest.raises(ValueError, match="folds"):
        compare_inputs({"E[R]": base, "x": NotaResult([0.1, 0.2])})
    with pytest.raises(ValueError, match="seed"):
        compare_inputs({"E[R]": NotaResult([0.1, 0.2], seed=0), "x": NotaResult([0.1, 0.3], seed=1)})
    with pytest.raises(ValueError, match="base"):
        compare_inputs({"x": base})
    with pytest.raises(TypeError):
        compare_inputs({"E[R]": base, "x": [0.1, 0.2, 0.3]})
    with pytest.raises(ValueError, match="fold_scores"):
        NotaResult([0.1, float("nan")])
