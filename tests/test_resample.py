"""Query-level bootstrap intervals and paired permutation tests (calibrank.metrics.resample)."""

import numpy as np
import pytest
from scipy import stats

from calibrank.metrics import resample as R
from calibrank.metrics.calibration import brier, ece, nll
from calibrank.metrics.ranking import ranking_metrics
from calibrank.predictions import Predictions, PredictionsError


def _pred(signal: float, seed: int, *, q: int = 120, k: int = 10, name: str = "p", qids=None, no_rel: int = 0):
    rng = np.random.default_rng(seed)
    labels = np.zeros((q, k), dtype=int)
    labels[no_rel:, 0] = 1
    probs = 1.0 / (1.0 + np.exp(-(rng.normal(size=(q, k)) + signal * labels - 1.0)))
    qids = np.arange(q).astype(str) if qids is None else qids
    return Predictions(qids, labels, probs, probs[None], meta={"name": name, "seed": seed})


@pytest.mark.parametrize("no_rel", [0, 7])
def test_features_reproduce_the_metric_functions(no_rel):
    p = _pred(1.5, 3, no_rel=no_rel)
    rank = ranking_metrics(p.probs, p.labels, ks=(1, 5))
    expected = {
        "R@1": rank["R@1"],
        "R@5": rank["R@5"],
        "MAP": rank["MAP"],
        "MRR": rank["MRR"],
        "ECE": ece(p.probs, p.labels),
        "ECE equal-mass": ece(p.probs, p.labels, strategy="quantile"),
        "Brier": brier(p.probs, p.labels),
        "NLL": nll(p.probs, p.labels),
    }
    for metric, value in expected.items():
        assert R.features(p, metric).value == pytest.approx(value, rel=1e-12, abs=1e-12), metric


def test_interval_contains_the_value_and_narrows_with_more_queries():
    small = R.interval(R.features(_pred(1.0, 1, q=60), "R@1"), seed=0)
    large = R.interval(R.features(_pred(1.0, 1, q=960), "R@1"), seed=0)
    for est in (small, large):
        assert est.low <= est.value <= est.high
        assert est.note == R.ONE_SEED_NOTE
    assert (large.high - large.low) < 0.5 * (small.high - small.low)  # ~ 1/sqrt(16) = 0.25


def test_interval_is_seeded():
    f = R.features(_pred(1.0, 1), "ECE")
    assert R.interval(f, seed=5) == R.interval(f, seed=5)
    assert R.interval(f, seed=5) != R.interval(f, seed=6)


def test_interval_of_a_constant_metric_is_degenerate_not_nan():
    p = _pred(50.0, 1)  # the relevant candidate always first: R@1 = 1 on every resample
    est = R.interval(R.features(p, "R@1"))
    assert (est.value, est.low, est.high) == (1.0, 1.0, 1.0)
    assert "degenerate" in est.note


def test_undefined_resamples_are_counted():
    p = _pred(1.0, 1, q=6, no_rel=5)  # one query in six has a relevant candidate
    est = R.interval(R.features(p, "R@1"), n_resamples=500)
    assert "undefined in" in est.note
    assert np.isfinite(est.low) and np.isfinite(est.high)


def test_identical_rankers_difference_zero_p_one():
    f = R.features(_pred(1.0, 1), "ECE")
    c = R.compare(f, f, alternative="less")
    assert (c.value, c.low, c.high, c.pvalue) == (0.0, 0.0, 0.0, 1.0)
    assert "identical" in c.note


def test_exchangeable_rankers_give_uniform_pvalues():
    pvals = []
    for i in range(120):
        a = R.features(_pred(1.0, 1000 + i, q=40), "R@1")
        b = R.features(_pred(1.0, 5000 + i, q=40), "R@1")
        pvals.append(R.compare(a, b, alternative="greater", n_resamples=400, seed=i).pvalue)
    pvals = np.array(pvals)
    assert stats.kstest(pvals, "uniform").pvalue > 0.001
    assert 0.0 < (pvals < 0.1).mean() < 0.25


def test_better_on_every_query_gives_p_near_zero():
    worse = _pred(0.0, 2)
    better = Predictions(
        worse.qids,
        worse.labels,
        np.where(worse.labels == 1, 0.999, worse.probs * 0.5),
        np.where(worse.labels == 1, 0.999, worse.probs * 0.5)[None],
        meta={"name": "better"},
    )
    c = R.compare(R.features(better, "R@1"), R.features(worse, "R@1"), alternative="greater", n_resamples=999)
    assert c.pvalue <= 2 / 1000
    assert c.low > 0
    # the same comparison in the other direction is not significant
    assert (
        R.compare(R.features(better, "R@1"), R.features(worse, "R@1"), alternative="less", n_resamples=999).pvalue
        > 0.99
    )


def test_relative_change_matches_the_ratio():
    a, b = R.features(_pred(2.0, 1), "ECE"), R.features(_pred(0.5, 1), "ECE")
    c = R.compare(a, b, relative=True, alternative="less")
    assert c.value == pytest.approx((a.value - b.value) / b.value)
    assert c.low <= c.value <= c.high


def test_different_queries_are_refused_naming_both():
    a = _pred(1.0, 1, name="runs/x/bert.npz")
    b = _pred(1.0, 2, name="runs/x/sngp.npz", qids=np.arange(1, 121).astype(str))
    with pytest.raises(PredictionsError, match="bert.npz.*sngp.npz.*different queries"):
        R.compare(R.features(a, "ECE"), R.features(b, "ECE"))


def test_seeds_widen_the_interval_and_must_match():
    one = [_pred(1.0, 1)]
    spread = [_pred(s, 10 + i) for i, s in enumerate((0.2, 1.0, 1.8))]  # seeds that disagree a lot
    e1 = R.interval(R.features(one, "R@1"))
    e3 = R.interval(R.features(spread, "R@1"))
    assert e3.n_seeds == 3 and e3.note == ""
    assert (e3.high - e3.low) > (e1.high - e1.low)
    with pytest.raises(ValueError, match="same number of training seeds"):
        R.compare(R.features(one, "R@1"), R.features(spread, "R@1"))


def test_conditions_of_one_group_share_their_queries():
    a = [R.features(_pred(1.0, i), "R@1") for i in (1, 2)]
    b = [R.features(_pred(0.5, i + 10), "R@1") for i in (1, 2)]
    joint = R.compare(a, b, groups=["chitchat", "chitchat"], alternative="greater")
    apart = R.compare(a, b, groups=["chitchat", "chatterbot"], alternative="greater")
    assert joint.n_queries == 120 and apart.n_queries == 240
    assert joint.value == pytest.approx(apart.value)
    assert joint.n_conditions == 2


def test_bad_arguments_name_the_parameter():
    f = R.features(_pred(1.0, 1), "R@1")
    with pytest.raises(ValueError, match="metric must be"):
        R.features(_pred(1.0, 1), "AUC")
    with pytest.raises(ValueError, match="alternative"):
        R.compare(f, f, alternative="up")
    with pytest.raises(ValueError, match="level"):
        R.interval(f, level=95)


def test_opposite_tail_flags_a_significant_change_the_wrong_way():
    good, bad = _pred(3.0, 1), _pred(0.0, 2)
    c = R.compare(R.features(bad, "R@1"), R.features(good, "R@1"), alternative="greater")
    assert c.pvalue > 0.99 and c.pvalue_opposite < 0.01


def test_unpaired_comparison_of_two_test_sets():
    a = R.features(_pred(3.0, 1, q=100), "R@1")
    b = R.features(_pred(0.0, 2, q=80, qids=np.arange(500, 580).astype(str)), "R@1")
    with pytest.raises(PredictionsError):
        R.compare(a, b)
    c = R.compare(a, b, paired=False, groups=["x"], b_groups=["y"], alternative="greater")
    assert c.n_queries == 180 and c.pvalue < 0.01 and c.pvalue_opposite > 0.99
    assert "bootstrap" in c.note


# ------------------------------------------------------------------------------ debiased ECE, power
def _miscalibrated(rng, q: int, k: int, c: float) -> Predictions:
    """p ~ Beta(1, 3), y ~ Bernoulli(p + c p (1 - p)): the true bucket gaps follow from the integral below."""
    p = rng.beta(1.0, 3.0, size=(q, k))
    y = (rng.random((q, k)) < p + c * p * (1 - p)).astype(int)
    return Predictions(np.arange(q).astype(str), y, p, p[None], meta={"name": "synthetic"})


def _true_ece(c: float, n_bins: int = 10) -> float:
    """Population ECE of :func:`_miscalibrated` with equal-width buckets: sum_i |E[(p - f(p)) 1{p in B_i}]|."""
    from scipy import integrate

    return sum(
        abs(integrate.quad(lambda p: -c * p * (1 - p) * stats.beta.pdf(p, 1.0, 3.0), i / n_bins, (i + 1) / n_bins)[0])
        for i in range(n_bins)
    )


def test_debiased_ece_features_reproduce_the_function_and_the_plugin():
    from calibrank.metrics.calibration import ece_debiased

    p = _pred(1.0, 4)
    f = R.features(p, "ECE debiased")
    assert f.value == pytest.approx(ece_debiased(p.probs, p.labels), rel=1e-12)
    assert f.plugin_value == pytest.approx(ece(p.probs, p.labels), rel=1e-12)
    est = R.interval(f, seed=0)
    assert est.bias == pytest.approx(ece(p.probs, p.labels) - ece_debiased(p.probs, p.labels), rel=1e-9)
    assert est.bias > 0
    assert R.interval(R.features(p, "R@1"), seed=0).bias == 0.0


@pytest.mark.parametrize(("q", "k", "c", "low"), [(200, 10, 0.3, 0.88), (100, 10, 0.1, 0.88)])
def test_debiased_ece_interval_covers_the_true_ece_at_about_its_nominal_rate(q, k, c, low):
    """200 data sets with a known true ECE: the 95% interval covers it 88-99% of the time
    (the second setting, small ECE, is where the plug-in percentile interval fails)."""
    truth = _true_ece(c)
    rng = np.random.default_rng(11)
    hits = plugin_hits = 0
    for r in range(200):
        pred = _miscalibrated(rng, q, k, c)
        est = R.interval(R.features(pred, "ECE debiased"), n_resamples=500, seed=r)
        hits += est.low <= truth <= est.high
        plain = R.interval(R.features(pred, "ECE"), n_resamples=500, seed=r)
        plugin_hits += plain.low <= truth <= plain.high
    assert low <= hits / 200 <= 0.99 + (c < 0.2) * 0.01
    if c < 0.2:
        assert plugin_hits / 200 < 0.5  # the uncorrected interval sits above the truth


def test_no_debiased_ece_interval_excludes_its_own_estimate():
    rng = np.random.default_rng(3)
    for r in range(60):
        q, k = int(rng.integers(30, 300)), int(rng.choice([2, 10]))
        pred = _miscalibrated(rng, q, k, float(rng.choice([0.0, 0.05, 0.3, 1.0])))
        est = R.interval(R.features(pred, "ECE debiased"), n_resamples=400, seed=r)
        assert est.low <= est.value <= est.high, (q, k, est)
    a, b = _pred(0.5, 1), _pred(2.0, 2)
    for rel in (False, True):
        c = R.compare(
            R.features(a, "ECE debiased"),
            R.features(b, "ECE debiased"),
            relative=rel,
            alternative="less",
            n_resamples=400,
        )
        assert c.low <= c.value <= c.high


def test_detectable_effect_known_answers_and_errors():
    z = stats.norm.ppf(0.95) + stats.norm.ppf(0.8)  # 2.486
    assert R.detectable_effect(0.01) == pytest.approx(z * 0.01)
    assert R.detectable_effect(0.01, n_tests=10) == pytest.approx((stats.norm.ppf(0.995) + stats.norm.ppf(0.8)) * 0.01)
    assert R.detectable_effect(1.0, df=4) == pytest.approx(stats.t.ppf(0.95, 4) + stats.t.ppf(0.8, 4))
    assert np.isnan(R.detectable_effect(float("nan")))
    assert np.isnan(R.detectable_effect(1.0, df=0))
    for bad in ({"alpha": 0.0}, {"power": 1.0}, {"n_tests": 0}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            R.detectable_effect(0.1, **bad)


def test_detectable_effect_has_the_power_it_claims():
    """Simulated paired R@1 differences of the detectable size are found (one-sided p < 0.05) ~80% of the time."""
    rng = np.random.default_rng(2)
    base = _pred(1.0, 5, q=300)
    se = R.compare(R.features(base, "R@1"), R.features(_pred(1.0, 6, q=300), "R@1"), n_resamples=500).se
    mde = R.detectable_effect(se)
    hits = 0
    n = 60
    for r in range(n):
        # B: a ranker with R@1 = 0.45 on every query; A: each query's hit moved up by mde on average
        b_hit = rng.random(300) < 0.45
        a_hit = rng.random(300) < 0.45 + mde
        labels = np.zeros((300, 2), dtype=int)
        labels[:, 0] = 1
        pa = np.where(a_hit[:, None], [[0.9, 0.1]], [[0.1, 0.9]])
        pb = np.where(b_hit[:, None], [[0.9, 0.1]], [[0.1, 0.9]])
        qid = np.arange(300).astype(str)
        fa = R.features(Predictions(qid, labels, pa, pa[None], meta={"name": "a"}), "R@1")
        fb = R.features(Predictions(qid, labels, pb, pb[None], meta={"name": "b"}), "R@1")
        hits += R.compare(fa, fb, alternative="greater", n_resamples=300, seed=r).pvalue < 0.05
    assert 0.6 <= hits / n <= 0.97
