"""Tests of calibrank.study.analysis.practice (notebook 08) against independent computations, on tiny synthetic data."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import optimize, stats
from sklearn.metrics import roc_auc_score

import oracles
from calibrank.methods import conformal as m_conformal
from calibrank.methods import intervals
from calibrank.methods import listwise as m_listwise
from calibrank.methods import prior as m_prior
from calibrank.methods import proportions as m_proportions
from calibrank.methods import recalibrate as m_recalibrate
from calibrank.methods import selective as m_selective
from calibrank.predictions import Predictions
from calibrank.study.analysis import study as st
from calibrank.study.analysis.practice import (
    conformal,
    findings,
    fitdata,
    listwise,
    nota_sets,
    prior,
    recalibrate,
    selective,
    signals,
)
from test_study import Q, write_synthetic_study


def _sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


# ------------------------------------------------------------------------------ 1 prior shift
def test_prior_correction_is_bayes_rule_on_known_class_densities():
    """Scores with Gaussian class densities: the posterior at prior 0.1, computed from the densities,
    equals the prior-corrected posterior at prior 0.5."""
    x = np.linspace(-4, 4, 41)
    f1, f0 = stats.norm.pdf(x, 1.0, 1.0), stats.norm.pdf(x, -1.0, 1.0)

    def post(pi):
        return pi * f1 / (pi * f1 + (1 - pi) * f0)

    assert np.allclose(m_prior.prior_correct(post(0.5), 0.5, 0.1), post(0.1))
    assert np.allclose(m_prior.prior_correct(post(0.3), 0.3, 0.8), post(0.8))
    assert m_prior.prior_odds_ratio(0.5, 0.1) == pytest.approx(1 / 9)


def test_prior_correction_keeps_certain_predictions_and_rejects_bad_input():
    assert np.array_equal(
        m_prior.prior_correct(np.array([0.0, 1.0]), 0.5, 0.1), [0.0, 1.0]
    )  # fixed points, no clipping
    assert np.array_equal(m_prior.prior_correct(np.array([0.2, 0.7]), 0.5, 0.5), [0.2, 0.7])  # same prior: unchanged
    for bad in (0.0, 1.0, -0.1, True):
        with pytest.raises(ValueError, match="pi_test"):
            m_prior.prior_correct(np.array([0.5]), 0.5, bad)
    with pytest.raises(ValueError, match="probabilities in"):
        m_prior.prior_correct(np.array([1.2]), 0.5, 0.1)
    with pytest.raises(ValueError, match="train_k"):
        m_prior.train_prior(0)


def test_prior_correction_calibrates_a_balanced_model_on_one_in_ten():
    """A model calibrated on 1:1 pairs is calibrated on 1:9 lists after the correction (and not before)."""
    rng = np.random.default_rng(0)
    n = 4000
    y = np.zeros((n, 10), dtype=int)
    y[:, 0] = 1
    x = np.where(y == 1, rng.normal(1, 1, y.shape), rng.normal(-1, 1, y.shape))
    p_balanced = _sigmoid(2 * x)  # log-likelihood ratio of N(1,1) vs N(-1,1) is 2x: calibrated at prior 0.5
    from calibrank.metrics.calibration import ece

    assert ece(p_balanced, y) > 0.15
    assert ece(m_prior.prior_correct(p_balanced, 0.5, 0.1), y) < 0.02


# ------------------------------------------------------------------------------ 2 recalibrators
def _pairs(seed=0, n=3000):
    rng = np.random.default_rng(seed)
    s = rng.uniform(0.02, 0.98, n)
    true = _sigmoid(0.6 * np.log(s) + 1.4 * np.log1p(-s) * -1 - 1.0)  # a beta-calibration map with a, b > 0
    return s, (rng.uniform(size=n) < true).astype(int)


def _nll(q, y):
    q = np.clip(q, 1e-12, 1 - 1e-12)
    return -np.mean(y * np.log(q) + (1 - y) * np.log1p(-q))


def test_platt_and_temperature_match_a_direct_likelihood_fit():
    s, y = _pairs()
    z = np.log(s) - np.log1p(-s)
    ab = optimize.minimize(
        lambda v: _nll(_sigmoid(v[0] * z + v[1]), y),
        [1.0, 0.0],
        method="Nelder-Mead",
        options={"xatol": 1e-8, "fatol": 1e-12, "maxiter": 4000},
    ).x
    platt = m_recalibrate.fit_recalibrator("platt", s, y)
    assert platt.params["A"] == pytest.approx(ab[0], abs=1e-3) and platt.params["B"] == pytest.approx(ab[1], abs=1e-3)
    grid = np.exp(np.linspace(-2, 2, 4001))
    t_grid = grid[np.argmin([_nll(_sigmoid(z / t), y) for t in grid])]
    temp = m_recalibrate.fit_recalibrator("temperature", s, y)
    assert temp.params["T"] == pytest.approx(t_grid, rel=2e-3)
    assert np.allclose(temp(s), _sigmoid(z / temp.params["T"]))


def test_beta_calibration_matches_a_direct_likelihood_fit_and_stays_monotone():
    s, y = _pairs(1)
    f = np.stack([np.log(s), -np.log1p(-s)], axis=1)
    abc = optimize.minimize(
        lambda v: _nll(_sigmoid(f @ v[:2] + v[2]), y),
        [1.0, 1.0, 0.0],
        method="Nelder-Mead",
        options={"xatol": 1e-8, "fatol": 1e-12, "maxiter": 8000},
    ).x
    beta = m_recalibrate.fit_recalibrator("beta", s, y)
    assert abc[0] > 0 and abc[1] > 0
    assert [beta.params[k] for k in "abc"] == pytest.approx(list(abc), abs=5e-3)
    # a decreasing relation in ln p: the coefficient would be negative, so it is dropped (a = 0), map monotone
    rng = np.random.default_rng(2)
    s2 = rng.uniform(0.01, 0.99, 2000)
    y2 = (rng.uniform(size=s2.size) < np.where(s2 < 0.2, 0.5, s2)).astype(int)
    b2 = m_recalibrate.fit_recalibrator("beta", s2, y2)
    f2 = np.stack([np.log(s2), -np.log1p(-s2)], axis=1)
    full = optimize.minimize(
        lambda v: _nll(_sigmoid(f2 @ v[:2] + v[2]), y2),
        [1.0, 1.0, 0.0],
        method="Nelder-Mead",
        options={"xatol": 1e-8, "fatol": 1e-12, "maxiter": 8000},
    ).x
    assert full[0] < 0 < full[1]  # the unconstrained fit has a < 0 ...
    only_b = optimize.minimize(
        lambda v: _nll(_sigmoid(f2[:, 1] * v[0] + v[1]), y2),
        [1.0, 0.0],
        method="Nelder-Mead",
        options={"xatol": 1e-8, "fatol": 1e-12, "maxiter": 8000},
    ).x
    assert b2.params["a"] == 0.0  # ... so ln p is dropped and (b, c) are the fit on -ln(1 - p) alone
    assert [b2.params["b"], b2.params["c"]] == pytest.approx(list(only_b), abs=5e-3)
    grid = np.linspace(0, 1, 101)
    assert (np.diff(b2(grid)) >= -1e-12).all() and np.isfinite(b2(grid)).all()  # 0 and 1 clipped, not infinite


def test_isotonic_and_prior_recalibrators():
    s, y = _pairs(3, 500)
    iso = m_recalibrate.fit_recalibrator("isotonic", s, y)
    fitted = iso(np.sort(s))
    assert (np.diff(fitted) >= 0).all() and fitted.mean() == pytest.approx(y.mean())  # PAV keeps the mean
    pr = m_recalibrate.fit_recalibrator("prior", s, y, pi_train=0.5, k=10)
    assert np.allclose(pr(s), m_prior.prior_correct(s, 0.5, 0.1))
    assert np.array_equal(m_recalibrate.fit_recalibrator("none", s, y)(s), s)
    with pytest.raises(ValueError, match="one class"):
        m_recalibrate.fit_recalibrator("platt", s, np.zeros_like(y))
    with pytest.raises(ValueError, match="method must be one of"):
        m_recalibrate.fit_recalibrator("histogram", s, y)


# ------------------------------------------------------------------------------ 3 answer or abstain
def _direct_scores(conf, loss, coverage=0.8):
    """AURC, E-AURC, AUGRC, risk@coverage by explicit loops (no ties in ``conf``)."""
    n = len(conf)
    order = sorted(range(n), key=lambda i: -conf[i])
    aurc = sum(sum(loss[order[j]] for j in range(i)) / i for i in range(1, n + 1)) / n
    augrc = sum(sum(loss[order[j]] for j in range(i)) / n for i in range(1, n + 1)) / n
    best = sorted(loss)
    opt = sum(sum(best[:i]) / i for i in range(1, n + 1)) / n
    i = math.ceil(coverage * n)
    return aurc, aurc - opt, augrc, sum(loss[order[j]] for j in range(i)) / i


def test_selective_scores_match_direct_loops():
    rng = np.random.default_rng(4)
    for n in (1, 7, 40):
        conf = rng.permutation(n) + rng.uniform(0, 0.5, n)
        loss = (rng.uniform(size=n) < 0.4).astype(float)
        s = m_selective.selective_scores(conf, loss)
        assert (s.aurc, s.eaurc, s.augrc, s.risk_at_coverage) == pytest.approx(_direct_scores(conf, loss))
        assert s.risk == pytest.approx(loss.mean()) and s.eaurc >= -1e-12 and s.augrc <= s.aurc + 1e-12


def test_selective_scores_average_over_the_order_of_tied_confidences():
    conf = np.array([0.9, 0.5, 0.5, 0.5, 0.2, 0.2])
    loss = np.array([0.0, 1.0, 0.0, 0.0, 1.0, 0.0])
    got = m_selective.selective_scores(conf, loss)
    groups = [[0], [1, 2, 3], [4, 5]]
    runs = []
    for perm in itertools.product(*(itertools.permutations(g) for g in groups)):
        order = [i for g in perm for i in g]
        c = np.empty(6)
        c[order] = -np.arange(6)  # strict confidences in this tie-breaking order
        runs.append(_direct_scores(c, loss))
    assert (got.aurc, got.eaurc, got.augrc, got.risk_at_coverage) == pytest.approx(tuple(np.mean(runs, axis=0)))
    with pytest.raises(ValueError, match="coverage"):
        m_selective.selective_scores(conf, loss, coverage=0.0)
    with pytest.raises(ValueError, match="finite"):
        m_selective.selective_scores(np.array([np.nan, 1.0]), np.array([0.0, 1.0]))


def test_selective_batch_equals_selective_scores_row_by_row():
    rng = np.random.default_rng(14)
    conf = np.round(rng.uniform(size=(6, 30)), 1)  # many ties
    loss = (rng.uniform(size=(6, 30)) < 0.5).astype(float)
    got = oracles.selective_batch(conf, loss, coverage=0.7)
    for b in range(6):
        s = m_selective.selective_scores(conf[b], loss[b], coverage=0.7)
        assert got[:, b] == pytest.approx([s.aurc, s.eaurc, s.augrc, s.risk_at_coverage])


@pytest.mark.parametrize("n", [2, 9, 120])
def test_selective_intervals_equal_scipy_bootstrap_of_the_direct_computation(n):
    """The closed form on draw counts gives the interval scipy gives when it resamples the arrays
    themselves and recomputes every score (same seed and batches: the same draws)."""
    rng = np.random.default_rng(15 + n)
    conf = np.round(rng.uniform(size=n), 1)
    loss = np.where(rng.uniform(size=n) < 0.3, rng.uniform(size=n), (rng.uniform(size=n) < 0.5).astype(float))
    lo, hi = m_selective.selective_intervals(conf, loss, coverage=0.8, seed=3, n_resamples=400)
    ref = stats.bootstrap(
        (conf, loss),
        lambda a, b, axis=-1: oracles.selective_batch(a, b, coverage=0.8, axis=axis),
        paired=True,
        vectorized=True,
        n_resamples=400,
        batch=200,
        method="percentile",
        rng=np.random.default_rng(3),
    )
    want_lo = np.where(
        np.isnan(ref.confidence_interval.low),
        oracles.selective_batch(conf[None], loss[None])[:, 0],
        ref.confidence_interval.low,
    )
    assert lo == pytest.approx(want_lo) and (lo <= hi + 1e-12).all()


@pytest.mark.parametrize("paired", [True, False])
def test_auroc_interval_equals_scipy_bootstrap_of_the_rank_auroc(paired):
    rng = np.random.default_rng(16)
    neg = np.round(rng.normal(size=40), 1)
    pos = np.round(rng.normal(0.5, size=40 if paired else 25), 1)
    assert oracles.auroc_batch(neg, pos) == pytest.approx(
        roc_auc_score(np.r_[np.zeros(neg.size), np.ones(pos.size)], np.r_[neg, pos])
    )
    lo, hi = signals.auroc_interval(neg, pos, paired=paired, seed=5, n_resamples=300)
    ref = stats.bootstrap(
        (neg, pos),
        oracles.auroc_batch,
        paired=paired,
        vectorized=True,
        n_resamples=300,
        batch=200,
        method="percentile",
        rng=np.random.default_rng(5),
    )
    assert (lo, hi) == pytest.approx((ref.confidence_interval.low, ref.confidence_interval.high))


def test_bootstrap_interval_names_its_bad_parameters():
    x = np.arange(5.0)
    for kw, name in (({"n_resamples": 1}, "n_resamples"), ({"level": 1.0}, "level"), ({"seed": -1}, "seed")):
        with pytest.raises(ValueError, match=name):
            intervals.bootstrap_interval((x,), np.mean, paired=True, **{"seed": 0, **kw})
    with pytest.raises(ValueError, match="paired"):
        intervals.bootstrap_interval((x, x[:3]), lambda a, b, axis=-1: a.mean(axis), paired=True, seed=0)
    lo, hi = intervals.bootstrap_interval((np.ones(6),), np.mean, paired=True, seed=0)  # degenerate: [value, value]
    assert lo == hi == 1.0
    lo, hi = m_selective.selective_intervals(np.array([0.3]), np.array([1.0]), seed=0)  # one query: its own scores
    assert np.allclose(lo, [1.0, 0.0, 1.0, 1.0]) and np.allclose(hi, lo)


# ------------------------------------------------------------------------------ 4 conformal
def _brute_sets(pi_cal, y_cal, pi_test, alpha, score):
    """Conformal p-value of every test candidate, by loops: in the set iff (1 + #{s_i >= s}) / (n + 1) > alpha."""

    def s_of(p, j):
        if score == "LAC":
            return 1 - p[j]
        return sum(v for v in p if v > p[j]) + p[j]

    cal = [s_of(p, int(np.argmax(y))) for p, y in zip(pi_cal, y_cal)]
    n = len(cal)
    return np.array(
        [[(1 + sum(c >= s_of(p, j) - 1e-12 for c in cal)) / (n + 1) > alpha for j in range(len(p))] for p in pi_test]
    )


def _k_class(n, k, rng, temp=1.0):
    logits = rng.normal(size=(n, k)) * 2
    pi = np.exp(logits / temp)
    pi /= pi.sum(axis=1, keepdims=True)
    y = np.zeros((n, k), dtype=int)
    y[np.arange(n), [rng.choice(k, p=row) for row in np.exp(logits) / np.exp(logits).sum(1, keepdims=True)]] = 1
    return pi, y


@pytest.mark.parametrize("score", m_conformal.SCORES)
@pytest.mark.parametrize("alpha", conformal.ALPHAS)
def test_conformal_sets_match_brute_force(score, alpha):
    rng = np.random.default_rng(5)
    pi_cal, y_cal = _k_class(30, 6, rng, temp=1.7)
    pi_test, _ = _k_class(15, 6, rng, temp=1.7)
    qhat = m_conformal.conformal_quantile(m_conformal.true_scores(pi_cal, y_cal, score), alpha)
    sets = m_conformal.prediction_sets(pi_test, qhat, score)
    assert np.array_equal(sets, _brute_sets(pi_cal, y_cal, pi_test, alpha, score))


@pytest.mark.parametrize("score", m_conformal.SCORES)
def test_conformal_coverage_on_exchangeable_data_is_within_sampling_error(score):
    """Split conformal: E[coverage] in [1 - alpha, 1 - alpha + 1/(n+1)]; 200 repetitions of 100 + 100 queries."""
    rng = np.random.default_rng(6)
    alpha, n, reps = 0.2, 100, 200
    cover = []
    for _ in range(reps):
        pi, y = _k_class(2 * n, 10, rng, temp=1.5)  # miscalibrated class probabilities: the guarantee still holds
        qhat = m_conformal.conformal_quantile(m_conformal.true_scores(pi[:n], y[:n], score), alpha)
        cover.append(m_conformal.prediction_sets(pi[n:], qhat, score)[y[n:].astype(bool)].mean())
    se = np.std(cover) / np.sqrt(reps)
    assert 1 - alpha - 3 * se <= np.mean(cover) <= 1 - alpha + 1 / (n + 1) + 3 * se


def test_conformal_refuses_what_cannot_hold():
    for bad in (0, 1, -0.1, 1.5, True):
        with pytest.raises(ValueError, match="alpha"):
            m_conformal.conformal_quantile(np.arange(100.0), bad)
    with pytest.raises(ValueError, match="too few"):
        m_conformal.conformal_quantile(np.arange(8.0), 0.1)  # ceil(9 * 0.9) = 9 > 8
    assert m_conformal.conformal_quantile(np.arange(9.0), 0.1) == 8.0  # n = 9 = 1/alpha - 1: the largest score
    with pytest.raises(ValueError, match="exactly one relevant"):
        m_conformal.true_scores(np.full((2, 3), 1 / 3), np.zeros((2, 3)), "LAC")


# ------------------------------------------------------------------------------ 8 none of the above
def test_empty_pointwise_lac_set_is_a_threshold_on_the_top_probability():
    rng = np.random.default_rng(17)
    p = rng.uniform(size=(50, 9))
    y = np.zeros((50, 9), dtype=int)
    y[np.arange(25), rng.integers(0, 9, 25)] = 1  # 25 answerable, 25 NOTA rows (all zero)
    t = nota_sets.lac_threshold(p, y, 0.2, "pointwise")
    rel = p[:25][y[:25].astype(bool)]
    assert t == pytest.approx(np.sort(rel)[25 - math.ceil(26 * 0.8)])  # 1 - (ceil((n+1)(1-a))-th smallest 1 - p_y)
    sets, nota = nota_sets.empty_set_nota(p, t, "pointwise")
    assert np.array_equal(nota, p.max(axis=1) < t) and np.array_equal(sets, p >= t)
    _, nota_soft = nota_sets.empty_set_nota(p, 1 / 9 + 1e-9, "softmax")  # softmax sums to 1: max >= 1 / K'
    assert not nota_soft.any()
    with pytest.raises(ValueError, match="view"):
        nota_sets.lac_threshold(p, y, 0.2, "odds")
    with pytest.raises(ValueError, match="no calibration query has a relevant"):
        nota_sets.lac_threshold(p, np.zeros_like(y), 0.2, "pointwise")
    with pytest.raises(ValueError, match="alpha"):
        nota_sets.lac_threshold(p, y, 1.5, "pointwise")


def _nota_data(n, k, rng):
    """Half NOTA: K' = k candidates with Beta scores, the relevant one (answerable rows) scoring higher."""
    p = rng.beta(2, 5, size=(n, k))
    y = np.zeros((n, k), dtype=int)
    ans = rng.uniform(size=n) < 0.5
    j = rng.integers(0, k, n)
    y[ans, j[ans]] = 1
    p[ans, j[ans]] = rng.beta(5, 2, size=ans.sum())
    return p, y, ans


def test_empty_set_nota_keeps_coverage_and_bounds_false_nota_on_exchangeable_queries():
    """Split conformal on the answerable calibration queries: E[coverage | answerable] >= 1 - alpha, and an
    empty set misses the true response, so E[false NOTA] <= alpha; 300 repetitions."""
    rng = np.random.default_rng(18)
    alpha, reps = 0.1, 300
    cover, false_nota = [], []
    for _ in range(reps):
        p, y, ans = _nota_data(400, 9, rng)
        t = nota_sets.lac_threshold(p[:200], y[:200], alpha, "pointwise")
        sets, nota = nota_sets.empty_set_nota(p[200:], t, "pointwise")
        a = ans[200:]
        cover.append(sets[a][y[200:][a].astype(bool)].mean())
        false_nota.append(nota[a].mean())
    se = np.std(cover) / np.sqrt(reps)
    assert np.mean(cover) >= 1 - alpha - 3 * se and np.mean(false_nota) <= alpha
    assert all(fn <= 1 - c + 1e-12 for fn, c in zip(false_nota, cover))


def _brute_ltt(conf, wrong, answerable, risk, target, delta, grid, min_answered):
    """Learn then Test by loops: counts, Clopper-Pearson upper bound (beta quantile), fixed sequence."""
    conf, wrong, answerable = list(conf), list(wrong), list(answerable)
    lams = sorted(set(grid))
    if risk == "false NOTA":
        seq = lams
    else:
        seq = [lam for lam in sorted(lams, reverse=True) if sum(c >= lam for c in conf) >= min_answered]
    chosen = 0.0 if risk == "false NOTA" else math.inf
    for lam in seq:
        if risk == "false NOTA":
            n = sum(answerable)
            k = sum(a and c < lam for c, a in zip(conf, answerable))
        else:
            n = sum(c >= lam for c in conf)
            k = sum(c >= lam and w for c, w in zip(conf, wrong))
        ucb = 1.0 if k == n else stats.beta.ppf(1 - delta, k + 1, n - k)
        if ucb > target:
            break
        chosen = lam
    return chosen


@pytest.mark.parametrize("risk", list(nota_sets.RISKS))
def test_ltt_threshold_matches_brute_force(risk):
    rng = np.random.default_rng(19)
    grid = np.linspace(0.02, 0.98, 49)
    for rep in range(6):
        n = 150
        conf = np.round(rng.uniform(size=n), 2)
        answerable = rng.uniform(size=n) < 0.6
        wrong = ~answerable | (rng.uniform(size=n) > conf)
        target = (0.15, 0.3, 0.5)[rep % 3]
        got = nota_sets.ltt_threshold(
            conf, wrong, answerable, risk=risk, target=target, delta=0.1, grid=grid, min_answered=20
        )
        want = _brute_ltt(conf, wrong, answerable, risk, target, 0.1, grid, 20)
        assert got.threshold == want
        if got.certified and math.isfinite(got.threshold) and got.threshold > 0:
            assert got.ucb <= target + 1e-12  # the chosen threshold's upper bound is within the target
    assert m_proportions.binomial_pvalue(3, 20, 0.3) == pytest.approx(stats.binom.cdf(3, 20, 0.3))
    # p <= delta exactly when the Clopper-Pearson upper bound is <= target
    for k, n in ((0, 30), (4, 50), (10, 40)):
        ub = float(m_proportions.clopper_pearson_upper(k, n, 0.1))
        assert m_proportions.binomial_pvalue(k, n, ub + 1e-9) <= 0.1 < m_proportions.binomial_pvalue(k, n, ub - 1e-6)


def test_ltt_controls_the_risk_on_synthetic_data_with_a_known_risk():
    """conf ~ U(0, 1) and P(wrong | conf) = 1 - conf: R_wrong(lambda) = (1 - lambda) / 2; answerable conf ~ U(0, 1):
    R_falseNOTA(lambda) = lambda. Over 300 calibration draws, P(R(lambda_hat) > target) <= delta (+ MC error),
    and the threshold is not trivially conservative."""
    rng = np.random.default_rng(20)
    delta, reps, n = 0.1, 300, 300
    miss = {"wrong answer": 0, "false NOTA": 0}
    lam = {"wrong answer": [], "false NOTA": []}
    for _ in range(reps):
        conf = rng.uniform(size=n)
        wrong = rng.uniform(size=n) > conf
        t = nota_sets.ltt_threshold(conf, wrong, np.ones(n, bool), risk="wrong answer", target=0.2, delta=delta)
        miss["wrong answer"] += (1 - t.threshold) / 2 > 0.2
        lam["wrong answer"].append(t.threshold)
        t = nota_sets.ltt_threshold(conf, wrong, np.ones(n, bool), risk="false NOTA", target=0.1, delta=delta)
        miss["false NOTA"] += t.threshold > 0.1
        lam["false NOTA"].append(t.threshold)
    bound = delta + 3 * math.sqrt(delta * (1 - delta) / reps)
    assert miss["wrong answer"] / reps <= bound and miss["false NOTA"] / reps <= bound
    assert 0.6 < np.median(lam["wrong answer"]) < 0.85 and 0.05 < np.median(lam["false NOTA"]) <= 0.1


def test_ltt_threshold_edge_cases_and_bad_parameters():
    conf = np.linspace(0.1, 0.9, 40)
    wrong = np.ones(40, bool)  # every answer wrong: nothing can be certified, the rule never answers
    t = nota_sets.ltt_threshold(conf, wrong, np.ones(40, bool), risk="wrong answer", target=0.2)
    assert t.threshold == math.inf and not t.certified
    t = nota_sets.ltt_threshold(conf[:5], wrong[:5], np.ones(5, bool), risk="false NOTA", target=0.1)
    assert t.threshold == 0.0 and t.certified  # 5 answerable queries: never saying NOTA is the only safe rule
    for kw, name in (
        ({"target": 0.0}, "target"),
        ({"delta": 1.0}, "delta"),
        ({"min_answered": 0}, "min_answered"),
        ({"risk": "precision"}, "risk"),
    ):
        with pytest.raises(ValueError, match=name):
            nota_sets.ltt_threshold(conf, wrong, np.ones(40, bool), **{"risk": "false NOTA", "target": 0.1, **kw})
    with pytest.raises(ValueError, match="no calibration query is answerable"):
        nota_sets.ltt_threshold(conf, wrong, np.zeros(40, bool), risk="false NOTA", target=0.1)


# ------------------------------------------------------------------------------ 5-7 candidate distribution, signals
def test_candidate_distribution_is_the_exactly_one_relevant_posterior():
    rng = np.random.default_rng(7)
    p = rng.uniform(0.01, 0.99, size=(5, 4))
    brute = np.array([[p[q, j] * np.prod(np.delete(1 - p[q], j)) for j in range(4)] for q in range(5)])
    brute /= brute.sum(axis=1, keepdims=True)
    assert np.allclose(m_listwise.candidate_distribution(p), brute)
    assert np.allclose(m_listwise.candidate_distribution(m_prior.prior_correct(p, 0.5, 0.1)), brute)  # prior cancels


def _pred(probs, labels, samples=None, name="p"):
    probs = np.asarray(probs, dtype=float)
    samples = probs[None] if samples is None else samples
    return Predictions(np.arange(len(probs)).astype(str), labels, probs, samples, meta={"name": name})


def test_query_signals_against_direct_computations():
    rng = np.random.default_rng(8)
    samples = rng.uniform(0.05, 0.95, size=(4, 6, 5))
    labels = np.zeros((6, 5), dtype=int)
    labels[np.arange(6), rng.integers(0, 5, 6)] = 1
    pred = _pred(samples.mean(0), labels, samples)
    sig = m_listwise.query_signals(pred)
    pi = m_listwise.candidate_distribution(pred.probs)
    top = pred.probs.argmax(axis=1)
    assert np.allclose(sig["entropy"], stats.entropy(pi, axis=1))
    assert np.allclose(sig["top var"], samples.var(axis=0)[np.arange(6), top])
    assert np.allclose(sig["mean var"], samples.var(axis=0).mean(axis=1))
    assert np.allclose(sig["R@1"], labels[np.arange(6), top])
    assert m_listwise.query_signals(_pred(pred.probs, labels))[["mean var", "top var"]].isna().all().all()


# ------------------------------------------------------------------------------ study-level tables
@pytest.fixture
def study(tmp_root):
    return st.load_study(write_synthetic_study(tmp_root))


def test_fit_data_uses_validation_else_a_seeded_half_of_test(study):
    tc = study.train_corpora[0]
    assert fitdata.fit_data(study, "mc_dropout", tc).fitted_on == fitdata.VALIDATION
    half = fitdata.fit_data(study, "bert", tc)
    assert half.fitted_on == fitdata.TEST_HALF and len(half.exclude) == Q // 2
    assert fitdata.fit_data(study, "bert", tc).exclude == half.exclude  # seeded
    home = study.condition(tc, study.train_sampler, "test")
    assert half.exclude <= set(study.get("bert", tc, home).qids)


def test_practice_tables_on_a_synthetic_study(study):
    recal = recalibrate.recalibration_table(study, n_resamples=200)
    home = recal["shift"] == "in distribution"
    bert = recal[(recal["ranker"] == "bert") & home]
    assert (bert["queries"] == Q - Q // 2).all() and (bert["fitted_on"] == fitdata.TEST_HALF).all()
    assert (recal.loc[recal["ranker"] == "mc_dropout", "queries"] == Q).all()
    by_n = prior.prior_ece_by_negatives(study, ["bert"], n_resamples=200)
    assert by_n["n_nonrel"].max() == study.k and by_n[["ECE raw", "ECE corrected"]].notna().all().all()
    summary = prior.prior_summary(study, ["bert", "ensemble"], n_resamples=200)
    sel = selective.selective_table(study, n_resamples=200)
    assert set(sel.loc[sel["confidence"] == "-top var", "ranker"]) == set(study.stochastic_rankers())
    conf = conformal.conformal_table(study)
    small = conf[conf["fitted_on"] == fitdata.TEST_HALF]  # 6 calibration queries: too few for alpha = 0.1
    assert small.loc[small["alpha"] == 0.1, "note"].str.contains("too few").all()
    assert small.loc[small["alpha"] == 0.2, "coverage"].notna().all()  # 6 >= 1/0.2 - 1
    shift = signals.shift_detection(study, n_resamples=200)
    qpp = signals.performance_prediction(study)
    lw = listwise.listwise_calibration(study, n_resamples=200)
    tables = {
        "prior_summary": summary,
        "prior_by_negatives": by_n,
        "recalibration": recal,
        "selective": sel,
        "conformal": conf,
        "shift_detection": shift,
        "performance_prediction": qpp,
        "listwise": lw,
    }
    found = findings.findings_table(tables)
    assert found["section"].nunique() == 7 and found["finding"].str.len().gt(20).all()
    assert found["finding"].str.contains("intervals separate them").any()  # a comparison of two signals uses them
    nc, nt = nota_sets.nota_conformal_table(study, n_estimators=10), nota_sets.nota_threshold_table(study)
    more = findings.findings_table({**tables, "nota_conformal": nc, "nota_threshold": nt})
    assert more["section"].nunique() == 8 and more["section"].eq("8 none of the above").sum() >= 2
    with pytest.raises(KeyError, match="missing"):
        findings.findings_table({"prior_summary": summary})


def test_the_ece_intervals_of_notebook_08_are_the_debiased_ones_and_hold_their_estimate(study):
    """As notebook 04's: eq. 1 beside the debiased ECE, whose interval (centred on it) holds it in every row, and the
    bias between them; no percentile interval of eq. 1, which lies above its own estimate at a low ECE."""
    from calibrank.metrics.calibration import ece_debiased

    by_n = prior.prior_ece_by_negatives(study, ["bert", "ensemble"], n_resamples=200)
    recal = recalibrate.recalibration_table(study, ["bert"], n_resamples=200)
    lw = listwise.listwise_calibration(study, ["bert", "ensemble"], n_resamples=200)
    for table, cols in (
        (by_n, ("ECE raw", "ECE corrected")),
        (recal, ("ECE",)),
        (lw, ("pointwise ECE", "top-label ECE")),
    ):
        for col in cols:
            d = f"{col} debiased"
            assert f"{col} lo" not in table.columns and table[[d, f"{d} lo", f"{d} hi"]].notna().all().all()
            assert ((table[f"{d} lo"] <= table[d] + 1e-12) & (table[d] <= table[f"{d} hi"] + 1e-12)).all(), col
            np.testing.assert_allclose(table[col] - table[d], table[f"{col} bias"], atol=1e-12)
    # the debiased value is Kumar et al.'s estimator of the cell's pairs
    pred = study.get(
        "bert", study.train_corpora[0], study.condition(study.train_corpora[0], study.train_sampler, "test")
    )
    row = lw[(lw["ranker"] == "bert") & (lw["shift"] == "in distribution")].iloc[0]
    assert row["pointwise ECE debiased"] == pytest.approx(ece_debiased(pred.probs, pred.labels), abs=1e-12)


def test_a_calibrated_rankers_ece_interval_holds_its_estimate():
    """Calibrated probabilities (y ~ Bernoulli(p)): eq. 1 is small and biased upwards, and the percentile bootstrap
    of eq. 1 lies entirely above it; the debiased ECE's interval holds its estimate and eq. 1 sits above it by the bias."""
    from calibrank.metrics.calibration import ece
    from calibrank.metrics.resample import features, interval
    from calibrank.study.analysis.practice.cells import debiased_ece

    rng = np.random.default_rng(1)
    probs = rng.uniform(size=(100, 2))
    pred = _pred(probs, (rng.uniform(size=probs.shape) < probs).astype(int))
    plug_in = interval(features(pred, "ECE"), n_resamples=500, seed=0)
    assert plug_in.low > ece(pred.probs, pred.labels)  # the old interval leaves out its own estimate
    cols = debiased_ece(pred, "ECE", n_resamples=500, seed=0)
    assert cols["ECE debiased lo"] <= cols["ECE debiased"] <= cols["ECE debiased hi"]
    assert cols["ECE bias"] > 0 and cols["ECE debiased"] + cols["ECE bias"] == pytest.approx(
        ece(pred.probs, pred.labels)
    )


def test_interval_columns_of_the_selective_and_shift_tables(study):
    sel = selective.selective_table(study, ["bert", "mc_dropout"], n_resamples=200)
    for col in ("AURC", "E-AURC", "AUGRC", "risk@80%"):
        assert (sel[f"{col} lo"] <= sel[f"{col} hi"] + 1e-12).all()
        assert ((sel[f"{col} lo"] <= sel[col] + 1e-9) | (sel[f"{col} hi"] >= sel[col] - 1e-9)).all()
    assert (sel["AURC lo"] <= sel["AURC"] + 1e-9).mean() > 0.8 and (sel["AURC hi"] >= sel["AURC"] - 1e-9).mean() > 0.8
    shift = signals.shift_detection(study, ["mc_dropout"], n_resamples=200)
    assert ((shift["AUROC lo"] <= shift["AUROC"]) & (shift["AUROC"] <= shift["AUROC hi"])).all()  # around the estimate
    # the synthetic study names its queries per condition: no shifted condition shares the in-distribution queries
    assert not shift["paired"].any()


def test_nota_tables_on_a_synthetic_study(study, monkeypatch):
    tc = study.train_corpora[0]
    nc = nota_sets.nota_conformal_table(study, n_estimators=10)
    assert set(nc["view"]) == set(nota_sets.VIEWS) and (nc["NOTA queries"] > 0).all()  # half of every set is NOTA
    assert (nc["NOTA queries"] == (nc["queries"] / 2).round()).all()
    home = nc[(nc["shift"] == "in distribution") & (nc["ranker"] == "bert")]
    assert (home["queries"] == Q - Q // 2).all()  # S = 1: the fitting half is not evaluated
    small = nc[nc["n_cal"] < 1 / nc["alpha"] - 1]
    assert small["note"].str.contains("too few").all() and small["coverage"].isna().all()
    ok = nc[nc["note"] == ""]
    assert len(ok) and (ok["false NOTA"] <= 1 - ok["coverage"] + 1e-12).all()  # an empty set misses the true response
    # the forest column is notebook 06's E[R] F1 of the ranker whose means it uses, on the same NOTA set
    means = st.nota_means_ranker(study)
    monkeypatch.setattr(study, "stochastic_rankers", lambda: [means])  # notebook 06's table with one +var input: faster
    nt6 = st.nota_table(study, n_estimators=10)
    base = nt6[nt6["input"] == "E[R]"].set_index(["corpus", "sampler"])["f1_mean"]
    forest = nc[nc["F1 forest"].notna()]
    assert set(forest["ranker"]) == {means}
    for _, r in forest.iterrows():
        assert r["F1 forest"] == pytest.approx(base[(r["corpus"], r["sampler"])])
    assert len(forest.drop_duplicates(["corpus", "sampler"])) == len(nota_sets.nota_conditions(study, tc)) == len(base)
    th = nota_sets.nota_threshold_table(study)
    assert set(th["risk"]) == set(nota_sets.RISKS)
    # abstention is the share of all queries said NOTA: a mix of the answerable (false NOTA) and NOTA ones (recall)
    lo, hi = np.minimum(th["false NOTA"], th["NOTA recall"]), np.maximum(th["false NOTA"], th["NOTA recall"])
    assert ((lo - 1e-12 <= th["abstention"]) & (th["abstention"] <= hi + 1e-12)).all()
    always = th[th["threshold"] <= 0]  # every confidence is >= 0: every query answered
    assert len(always) and (always["abstention"] == 0).all() and (always["false NOTA"] == 0).all()
    never = th[th["threshold"] == math.inf]
    assert (never["abstention"] == 1).all() and never["achieved risk"].isna().all()
    fn = th[th["risk"] == "false NOTA"]
    assert fn["certified"].all() and np.allclose(fn["achieved risk"], fn["false NOTA"])


def test_shift_auroc_is_the_mann_whitney_statistic(study):
    shift = signals.shift_detection(study, ["mc_dropout"])
    tc = study.train_corpora[0]
    row = shift[(shift["signal"] == "entropy")].iloc[0]
    home = st.default_condition(study, tc)
    other = study.condition(row["corpus"], row["sampler"])
    a = m_listwise.query_signals(study.get("mc_dropout", tc, other))["entropy"]
    b = m_listwise.query_signals(study.get("mc_dropout", tc, home))["entropy"]
    u = stats.mannwhitneyu(a, b).statistic
    assert row["AUROC"] == pytest.approx(u / (len(a) * len(b)))


def test_the_practice_layer_does_not_import_torch():
    import subprocess
    import sys

    code = (
        "import sys, calibrank.study.analysis.practice.prior, calibrank.study.analysis.practice.recalibrate, calibrank.study.analysis.practice.selective, "
        "calibrank.study.analysis.practice.conformal, calibrank.study.analysis.practice.signals, calibrank.study.analysis.practice.findings, "
        "calibrank.study.analysis.practice.nota_sets, calibrank.methods.intervals, calibrank.study.analysis.practice.cells, "
        "calibrank.study.analysis.plots_practice; sys.exit('torch' in sys.modules)"
    )
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0
