"""Tests of calibrank.methods.rerank (RA-BERT risk-aware ranking) on synthetic, seeded Predictions."""

from __future__ import annotations

import math

import numpy as np
import pytest

from calibrank.methods.rerank import DEFAULT_BS, choose_b, risk_aware_table, risk_scores, sweep_b
from calibrank.predictions import Predictions, PredictionsError, logit


def random_pred(seed: int, s: int = 6, q: int = 12, k: int = 5) -> Predictions:
    """Random samples with correlated candidates (a shared per-sample shift) and one relevant per query."""
    rng = np.random.default_rng(seed)
    base = rng.normal(size=(1, q, k))
    shared = rng.normal(scale=0.7, size=(s, q, 1))
    z = base + shared + rng.normal(scale=0.5, size=(s, q, k))
    samples = 1.0 / (1.0 + np.exp(-z))
    labels = np.zeros((q, k), dtype=int)
    labels[np.arange(q), rng.integers(0, k, size=q)] = 1
    return Predictions(qids=[f"q{i}" for i in range(q)], labels=labels, probs=samples.mean(axis=0), samples=samples)


def naive_scores(samples: np.ndarray, b: float) -> np.ndarray:
    """The formula candidate by candidate, with numpy's population covariance."""
    s, q, k = samples.shape
    out = np.empty((q, k))
    for qi in range(q):
        c = np.cov(samples[:, qi, :].T, bias=True).reshape(k, k)
        for r in range(k):
            others = sum(c[r, i] for i in range(k) if i != r)
            out[qi, r] = samples[:, qi, r].mean() - b * c[r, r] - 2 * b * others
    return out


def build(
    samples_per_query: list[np.ndarray], labels: list[list[int]], seed: int = 0, name: str = "built"
) -> Predictions:
    """Predictions from per-query [S, K] sample blocks, candidate positions shuffled (seeded)."""
    rng = np.random.default_rng(seed)
    blocks, labs = [], []
    for block, lab in zip(samples_per_query, labels):
        perm = rng.permutation(len(lab))
        blocks.append(np.asarray(block, dtype=float)[:, perm])
        labs.append(np.asarray(lab)[perm])
    samples = np.stack(blocks, axis=1)
    lab = np.stack(labs)
    return Predictions(
        qids=[f"{name}{i}" for i in range(len(labs))],
        labels=lab,
        probs=samples.mean(axis=0),
        samples=samples,
        meta={"name": name},
    )


def risk_case(n_a: int, n_b: int, seed: int) -> Predictions:
    """Type A: a negative with a higher mean than the relevant one but a huge variance (b > 0.178 helps).

    Type B: the relevant one has the higher mean and a large variance (b > 0.556 hurts).
    Means/variances (prob space) -- A: rel 0.6 (var 0), neg 0.625 (var 0.140625), neg 0.1;
    B: rel 0.65 (var 0.09), neg 0.6 (var 0), neg 0.1. All covariances are 0.
    So R@1 = 0.5 (n_a = n_b) at b = 0, 1.0 for b in 0.2..0.5, back to n_a/(n_a+n_b) for b >= 0.6.
    """
    a = np.array([[0.6, 0.25, 0.1], [0.6, 1.0, 0.1]])
    b = np.array([[0.35, 0.6, 0.1], [0.95, 0.6, 0.1]])
    blocks = [a] * n_a + [b] * n_b
    return build(blocks, [[1, 0, 0]] * (n_a + n_b), seed=seed, name=f"risk{seed}-")


# ------------------------------------------------------------------------------- scores
@pytest.mark.parametrize("space", ["logit", "prob"])
def test_b_zero_is_the_mean(space):
    pred = random_pred(0)
    expected = logit(pred.samples).mean(axis=0) if space == "logit" else pred.mean
    np.testing.assert_allclose(risk_scores(pred, 0.0, space=space), expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize("space", ["logit", "prob"])
@pytest.mark.parametrize("covariance", [True, False])
def test_single_sample_is_the_mean_for_any_b(space, covariance):
    pred = random_pred(1, s=1)
    expected = logit(pred.samples[0]) if space == "logit" else pred.samples[0]
    for b in (0.0, 0.3, 1.0, -0.5, 7.0):
        np.testing.assert_allclose(
            risk_scores(pred, b, space=space, covariance=covariance), expected, rtol=0, atol=1e-12
        )


@pytest.mark.parametrize("b", [0.1, 0.5, 1.0, -0.3])
def test_matches_naive_loop(b):
    pred = random_pred(2, s=7, q=6, k=4)
    np.testing.assert_allclose(risk_scores(pred, b, space="prob"), naive_scores(pred.samples, b), atol=1e-12)
    np.testing.assert_allclose(risk_scores(pred, b), naive_scores(logit(pred.samples), b), atol=1e-10)


def test_matches_predictions_cov():
    pred = random_pred(3, s=5, q=4, k=6)
    cov = pred.cov
    var = np.diagonal(cov, axis1=1, axis2=2)
    off = cov.sum(axis=2) - var
    b = 0.4
    np.testing.assert_allclose(risk_scores(pred, b, space="prob"), pred.mean - b * var - 2 * b * off, atol=1e-12)
    np.testing.assert_allclose(risk_scores(pred, b, space="prob", covariance=False), pred.mean - b * var, atol=1e-12)


def test_covariance_term_sign_and_scale_by_hand():
    # Candidate A: samples 0.2, 0.6 -> mean 0.4, var 0.04. B: positively or negatively correlated, var 0.04.
    pos = Predictions(qids=["p"], labels=[[1, 0]], probs=[[0.4, 0.5]], samples=np.array([[[0.2, 0.3]], [[0.6, 0.7]]]))
    neg = Predictions(qids=["n"], labels=[[1, 0]], probs=[[0.4, 0.5]], samples=np.array([[[0.2, 0.7]], [[0.6, 0.3]]]))
    b = 0.5
    # cov(A, B) = +0.04: score_A = 0.4 - 0.5*0.04 - 2*0.5*0.04 = 0.34; score_B = 0.5 - 0.06 = 0.44
    np.testing.assert_allclose(risk_scores(pos, b, space="prob"), [[0.34, 0.44]], atol=1e-12)
    # cov(A, B) = -0.04: the covariance term rewards hedging: 0.4 - 0.02 + 0.04 = 0.42; 0.5 + 0.02 = 0.52
    np.testing.assert_allclose(risk_scores(neg, b, space="prob"), [[0.42, 0.52]], atol=1e-12)
    # without covariance both reduce to mean - b var
    np.testing.assert_allclose(risk_scores(pos, b, space="prob", covariance=False), [[0.38, 0.48]], atol=1e-12)
    # the logit space is used by default and differs
    assert not np.allclose(risk_scores(pos, b), risk_scores(pos, b, space="prob"))


# ------------------------------------------------------------------------------- sweep / choose
def test_sweep_shapes_and_values():
    pred = risk_case(10, 10, seed=0)
    df = sweep_b(pred, space="prob")
    np.testing.assert_allclose([v.mean() for v in df["per_query"]], df["value"])  # the value is the mean over queries
    assert list(df.columns) == ["b", "metric", "value", "rel_change", "n_queries", "per_query"]
    assert len(df) == len(DEFAULT_BS) == 11
    np.testing.assert_allclose(df["b"], np.round(np.arange(0, 1.01, 0.1), 2))
    assert all(v.shape == (20,) for v in df["per_query"])
    assert (df["n_queries"] == 20).all()
    expected = [0.5, 0.5] + [1.0] * 4 + [0.5] * 5
    np.testing.assert_allclose(df["value"], expected)
    np.testing.assert_allclose(df["rel_change"], [(v - 0.5) / 0.5 for v in expected])
    for v, row in zip(df["value"], df["per_query"]):
        assert row.mean() == pytest.approx(v)
    other = sweep_b(pred, bs=[0.3, 0.0], metric="MRR", space="prob")
    assert list(other["b"]) == [0.3, 0.0] and (other["metric"] == "MRR").all()
    np.testing.assert_allclose(other["value"], [1.0, 0.75])


def test_choose_b_picks_the_known_optimum():
    valid = risk_case(10, 10, seed=1)
    assert choose_b(valid, space="prob") == pytest.approx(0.2)  # 0.2..0.5 tie: the smallest wins
    # only type A queries: every b >= 0.2 is optimal, still 0.2
    assert choose_b(risk_case(8, 0, seed=2), space="prob") == pytest.approx(0.2)
    # only type B: penalising variance never helps, b = 0 (ties down to 0.5 broken toward 0)
    assert choose_b(risk_case(0, 8, seed=3), space="prob") == 0.0
    # ties with negative b go to the smallest |b|
    assert choose_b(risk_case(0, 8, seed=3), bs=[-0.1, 0.1, 0.0], space="prob") == 0.0
    assert choose_b(risk_case(0, 8, seed=3), bs=[0.1, -0.1], space="prob") == -0.1


def test_choose_b_in_logit_space_on_the_same_case():
    # Logit space: the high-variance negative of type A (0.25 / 1 - 1e-7) has a huge logit variance.
    assert choose_b(risk_case(10, 10, seed=4)) > 0.0


# ------------------------------------------------------------------------------- Table 3
def test_risk_aware_table_improvement_is_significant():
    valid = risk_case(10, 10, seed=5)
    test = risk_case(15, 25, seed=6)
    row = risk_aware_table(valid, test, space="prob")
    assert row["b"] == pytest.approx(0.2)
    assert row["mean_ranker"] == pytest.approx(25 / 40)
    assert row["risk_aware"] == pytest.approx(1.0)
    assert row["prob_mean_ranker"] == pytest.approx(row["mean_ranker"])
    assert row["rel_change"] == pytest.approx((1.0 - 25 / 40) / (25 / 40))
    assert row["n"] == 40 and row["significant"] and row["pvalue"] < 1e-4
    # hand computation: differences are 1 on 15 queries, 0 on 25
    d = np.r_[np.ones(15), np.zeros(25)]
    t = d.mean() / (d.std(ddof=1) / math.sqrt(40))
    assert row["statistic"] == pytest.approx(t)
    assert row["note"] == ""
    assert row["valid_value"] == pytest.approx(1.0)


def test_risk_aware_table_nan_with_note():
    # S = 1: no risk information
    single = random_pred(7, s=1)
    row = risk_aware_table(single, random_pred(8, s=1))
    assert math.isnan(row["pvalue"]) and "S = 1" in row["note"]
    assert row["risk_aware"] == row["mean_ranker"] and row["rel_change"] == 0.0
    assert not row["significant"]
    # b = 0 chosen on validation
    row = risk_aware_table(risk_case(0, 8, seed=9), risk_case(5, 5, seed=10), space="prob")
    assert row["b"] == 0.0 and math.isnan(row["pvalue"]) and "b = 0" in row["note"]
    # b > 0 chosen but no test query changes its top candidate
    row = risk_aware_table(risk_case(8, 0, seed=11), risk_case(0, 8, seed=12), bs=[0.0, 0.3], space="prob")
    assert row["b"] == 0.3 and math.isnan(row["pvalue"]) and "identical per-query values" in row["note"]


# ------------------------------------------------------------------------------- validation
def test_validation_errors():
    pred = random_pred(13)
    with pytest.raises(TypeError, match="Predictions"):
        risk_scores(pred.samples, 0.1)
    with pytest.raises(ValueError, match="space"):
        risk_scores(pred, 0.1, space="log")
    for bad in (float("nan"), float("inf"), "0.1", True, None):
        with pytest.raises(ValueError, match="b must be"):
            risk_scores(pred, bad)
    with pytest.raises(ValueError, match="non-empty"):
        sweep_b(pred, bs=[])
    with pytest.raises(ValueError, match="finite"):
        sweep_b(pred, bs=[0.0, float("nan")])
    with pytest.raises(ValueError, match="repeat"):
        choose_b(pred, bs=[0.1, 0.1])
    with pytest.raises(ValueError, match="metric"):
        sweep_b(pred, metric="P@1")
    with pytest.raises(ValueError, match="alpha"):
        risk_aware_table(pred, pred, alpha=1.5)
    with pytest.raises(TypeError, match="test_pred"):
        risk_aware_table(pred, {"samples": pred.samples})
    # Predictions itself refuses NaN samples and shape mismatches, with a clear message
    with pytest.raises(PredictionsError, match="samples"):
        Predictions(qids=["a"], labels=[[1, 0]], probs=[[0.5, 0.5]], samples=np.array([[[np.nan, 0.5]]]))
    with pytest.raises(PredictionsError, match="samples must be"):
        Predictions(qids=["a"], labels=[[1, 0]], probs=[[0.5, 0.5]], samples=np.zeros((2, 1, 3)))
    # no relevant candidate anywhere: the metric is undefined for every b
    none = Predictions(
        qids=["a", "b"], labels=np.zeros((2, 3), int), probs=np.full((2, 3), 0.5), samples=np.full((2, 2, 3), 0.5)
    )
    with pytest.raises(ValueError, match="no query has a relevant"):
        choose_b(none)
