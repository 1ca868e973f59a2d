"""Tests of calibrank.metrics against naive reference loops, scipy/sklearn, and invariants."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps
from sklearn.calibration import calibration_curve
from sklearn.metrics import brier_score_loss, log_loss

from calibrank.metrics import (
    EPS,
    average_precision,
    brier,
    calibration_metrics,
    ece,
    holm,
    mce,
    mean_ci,
    ndcg_at_k,
    nll,
    paired_ttest,
    rank_of_relevant,
    ranking_metrics,
    recall_at_k,
    reciprocal_rank,
    relative_change,
    reliability_curve,
)

# --------------------------------------------------------------------------------------------
# Ranking: naive references
# --------------------------------------------------------------------------------------------


def naive_relevant_ranks(scores: list[float], labels: list[int]) -> list[int]:
    """Pessimistic 1-based ranks of the relevant candidates, counted one by one.

    A relevant candidate's rank = 1 + (#candidates with a strictly higher score)
    + (#non-relevant candidates with an equal score) + (#relevant candidates with an equal
    score seen before it): ties go against the relevant candidate.
    """
    ranks = []
    for j, (sj, yj) in enumerate(zip(scores, labels)):
        if not yj:
            continue
        higher = sum(1 for s in scores if s > sj)
        tied_neg = sum(1 for s, y in zip(scores, labels) if s == sj and not y)
        tied_rel_before = sum(1 for i in range(j) if scores[i] == sj and labels[i])
        ranks.append(1 + higher + tied_neg + tied_rel_before)
    return sorted(ranks)


def naive_metrics(scores: np.ndarray, labels: np.ndarray, k: int) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {"recall": [], "ap": [], "rr": [], "ndcg": [], "rank": []}
    for s_row, y_row in zip(scores.tolist(), labels.tolist()):
        ranks = naive_relevant_ranks(s_row, y_row)
        n_rel = len(ranks)
        if n_rel == 0:
            for key in out:
                out[key].append(math.nan)
            continue
        out["recall"].append(sum(1 for r in ranks if r <= k) / n_rel)
        out["ap"].append(sum((i + 1) / r for i, r in enumerate(ranks)) / n_rel)
        out["rr"].append(1.0 / ranks[0])
        out["rank"].append(float(ranks[0]))
        dcg = sum(1.0 / math.log2(r + 1) for r in ranks if r <= k)
        idcg = sum(1.0 / math.log2(i + 1) for i in range(1, min(n_rel, k) + 1))
        out["ndcg"].append(dcg / idcg)
    return out


def random_ranking(rng: np.random.Generator, q: int, k: int, ties: bool, max_rel: int = 3):
    """Scores [q, k] (integers in 0..3 when ``ties``) and labels with 0..max_rel relevant per query."""
    scores = rng.integers(0, 4, size=(q, k)).astype(float) if ties else rng.normal(size=(q, k))
    labels = np.zeros((q, k), dtype=int)
    for i in range(q):
        n_rel = rng.integers(0, max_rel + 1)
        labels[i, rng.choice(k, size=n_rel, replace=False)] = 1
    return scores, labels


def permute_within_queries(rng: np.random.Generator, *arrays: np.ndarray) -> list[np.ndarray]:
    order = np.argsort(rng.random(arrays[0].shape), axis=1)
    return [np.take_along_axis(a, order, axis=1) for a in arrays]


@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("k", [1, 2, 5, 10, 20])
def test_ranking_matches_naive_loops(ties: bool, k: int) -> None:
    rng = np.random.default_rng(1 + k + 100 * ties)
    scores, labels = random_ranking(rng, q=300, k=10, ties=ties)
    ref = naive_metrics(scores, labels, k)
    np.testing.assert_allclose(recall_at_k(scores, labels, k), ref["recall"], equal_nan=True)
    np.testing.assert_allclose(ndcg_at_k(scores, labels, k), ref["ndcg"], equal_nan=True)
    np.testing.assert_allclose(average_precision(scores, labels), ref["ap"], equal_nan=True)
    np.testing.assert_allclose(reciprocal_rank(scores, labels), ref["rr"], equal_nan=True)
    np.testing.assert_allclose(rank_of_relevant(scores, labels), ref["rank"], equal_nan=True)


def test_ranking_metrics_are_means_over_queries_with_a_relevant() -> None:
    rng = np.random.default_rng(7)
    scores, labels = random_ranking(rng, q=200, k=10, ties=True)
    labels[:5] = 0  # make sure some queries have no relevant candidate
    has_rel = labels.any(axis=1)
    out = ranking_metrics(scores, labels, ks=(1, 2, 5))
    assert set(out) == {"R@1", "R@2", "R@5", "MAP", "MRR", "nDCG@10", "queries"}
    assert out["queries"] == int(has_rel.sum())
    for k in (1, 2, 5):
        assert out[f"R@{k}"] == pytest.approx(np.mean(naive_metrics(scores, labels, k)["recall"], where=has_rel))
    ref = naive_metrics(scores, labels, 10)
    assert out["MAP"] == pytest.approx(np.mean(np.array(ref["ap"])[has_rel]))
    assert out["MRR"] == pytest.approx(np.mean(np.array(ref["rr"])[has_rel]))
    assert out["nDCG@10"] == pytest.approx(np.mean(np.array(ref["ndcg"])[has_rel]))
    assert np.isnan(recall_at_k(scores, labels, 1)[:5]).all()
    assert "nDCG@3" in ranking_metrics(scores, labels, ks=(), ndcg_k=3)


def test_ranking_metrics_without_any_relevant_is_nan() -> None:
    out = ranking_metrics(np.zeros((3, 4)), np.zeros((3, 4)))
    assert out["queries"] == 0
    assert all(np.isnan(v) for key, v in out.items() if key != "queries")


def test_hand_computed_ties_with_several_relevant() -> None:
    scores = np.array([[1.0, 1.0, 1.0, 1.0], [2.0, 1.0, 1.0, 0.0]])
    labels = np.array([[1, 0, 1, 0], [0, 1, 0, 1]])
    # Query 0: relevant at ranks 3 and 4. Query 1: 2.0 (neg), 1.0 tie -> neg then rel, 0.0 rel: ranks 3, 4.
    np.testing.assert_allclose(rank_of_relevant(scores, labels), [3, 3])
    np.testing.assert_allclose(average_precision(scores, labels), [(1 / 3 + 2 / 4) / 2] * 2)
    np.testing.assert_allclose(recall_at_k(scores, labels, 3), [0.5, 0.5])
    idcg = 1 + 1 / math.log2(3)
    np.testing.assert_allclose(ndcg_at_k(scores, labels, 10), [(1 / 2 + 1 / math.log2(5)) / idcg] * 2)


@pytest.mark.parametrize("ties", [False, True])
def test_ranking_invariant_to_permutations(ties: bool) -> None:
    rng = np.random.default_rng(11 + ties)
    scores, labels = random_ranking(rng, q=250, k=10, ties=ties)
    per_query = {
        "R@1": lambda s, y: recall_at_k(s, y, 1),
        "R@5": lambda s, y: recall_at_k(s, y, 5),
        "AP": average_precision,
        "RR": reciprocal_rank,
        "nDCG": ndcg_at_k,
        "rank": rank_of_relevant,
    }
    query_order = rng.permutation(len(scores))
    s_perm, y_perm = permute_within_queries(rng, scores, labels)
    for name, fn in per_query.items():
        base = fn(scores, labels)
        np.testing.assert_array_equal(fn(scores[query_order], labels[query_order]), base[query_order], err_msg=name)
        np.testing.assert_array_equal(fn(s_perm, y_perm), base, err_msg=name)
    assert ranking_metrics(s_perm, y_perm) == ranking_metrics(scores, labels)


def test_ties_never_favour_the_relevant_candidate() -> None:
    rng = np.random.default_rng(3)
    q, k = 50, 10
    labels = np.zeros((q, k), dtype=int)
    labels[np.arange(q), rng.integers(0, k, size=q)] = 1
    tied = np.zeros((q, k))
    out = ranking_metrics(tied, labels, ks=(1, 2, 5, 10))
    assert out["R@1"] == 0.0 and out["R@2"] == 0.0 and out["R@5"] == 0.0 and out["R@10"] == 1.0
    assert out["MRR"] == pytest.approx(1 / k)
    assert out["MAP"] == pytest.approx(1 / k)
    assert out["nDCG@10"] == pytest.approx(1 / math.log2(k + 1))
    # Relevant placed first in the input: still last.
    first = np.zeros((q, k), dtype=int)
    first[:, 0] = 1
    assert ranking_metrics(tied, first)["R@1"] == 0.0


def test_perfect_ranker_scores_one_everywhere() -> None:
    rng = np.random.default_rng(4)
    _, labels = random_ranking(rng, q=100, k=10, ties=False)
    labels[:, 0] = 1  # every query has at least one relevant
    scores = labels + rng.uniform(0, 0.5, size=labels.shape)
    out = ranking_metrics(scores, labels, ks=(5, 10))
    assert out == {"R@5": 1.0, "R@10": 1.0, "MAP": 1.0, "MRR": 1.0, "nDCG@10": 1.0, "queries": 100}
    # With one relevant, R@1 = 1 too; a perfect ranker with bool labels and integer scores.
    one = np.zeros((5, 10), dtype=bool)
    one[:, 3] = True
    assert ranking_metrics(one.astype(int), one)["R@1"] == 1.0


@pytest.mark.parametrize(
    ("scores", "labels", "kwargs", "match"),
    [
        (np.zeros(10), np.zeros(10), {}, "scores must be a 2-D array"),
        (np.zeros((2, 3)), np.zeros((2, 4)), {}, "labels must have the same shape"),
        (np.zeros((2, 0)), np.zeros((2, 0)), {}, "at least one candidate"),
        (np.array([[0.1, np.nan]]), np.array([[1, 0]]), {}, "scores must be finite; found 1"),
        (np.array([[np.inf, 0.0]]), np.array([[1, 0]]), {}, "scores must be finite"),
        (np.array([["a", "b"]]), np.array([[1, 0]]), {}, "scores must be real numbers"),
        (np.zeros((1, 2)), np.array([[2, 0]]), {}, "labels must contain only 0 and 1; found 1"),
        (np.zeros((1, 2)), np.array([[0.5, -1]]), {}, "found 2 other value"),
        (np.zeros((1, 2)), np.array([["x", "y"]]), {}, "labels must be 0/1"),
        (np.zeros((1, 2)), np.zeros((1, 2)), {"ks": (0,)}, "ks entries must be a positive integer"),
        (np.zeros((1, 2)), np.zeros((1, 2)), {"ks": (1.5,)}, "ks entries must be a positive integer"),
        (np.zeros((1, 2)), np.zeros((1, 2)), {"ndcg_k": 0}, "ndcg_k must be a positive integer"),
    ],
)
def test_ranking_validation(scores, labels, kwargs, match) -> None:
    with pytest.raises(ValueError, match=match):
        ranking_metrics(scores, labels, **kwargs)


@pytest.mark.parametrize("k", [0, -1, 2.0, True, None])
def test_ranking_bad_k(k) -> None:
    with pytest.raises(ValueError, match="k must be a positive integer"):
        recall_at_k(np.zeros((1, 2)), np.zeros((1, 2)), k)
    with pytest.raises(ValueError, match="k must be a positive integer"):
        ndcg_at_k(np.zeros((1, 2)), np.zeros((1, 2)), k)


def test_every_ranking_function_validates() -> None:
    for fn in (average_precision, reciprocal_rank, rank_of_relevant, ndcg_at_k):
        with pytest.raises(ValueError, match="labels must contain only 0 and 1"):
            fn(np.zeros((1, 2)), np.array([[3, 0]]))


# --------------------------------------------------------------------------------------------
# Calibration
# --------------------------------------------------------------------------------------------


def naive_bins(probs: np.ndarray, edges: np.ndarray) -> list[list[int]]:
    """Indices per bucket, right-closed: [e0, e1], (e1, e2], ..., (e_{c-1}, e_c]."""
    buckets: list[list[int]] = [[] for _ in range(len(edges) - 1)]
    for idx, p in enumerate(probs.tolist()):
        for b in range(len(edges) - 1):
            lo_ok = p >= edges[b] if b == 0 else p > edges[b]
            if lo_ok and (p <= edges[b + 1] or b == len(edges) - 2):
                buckets[b].append(idx)
                break
    return buckets


def naive_ece(probs: np.ndarray, labels: np.ndarray, edges: np.ndarray) -> tuple[float, float]:
    """(ECE, MCE) by eq. 1 of Penha & Hauff, one bucket at a time."""
    n = len(probs)
    total, worst = 0.0, 0.0
    for bucket in naive_bins(probs, edges):
        if not bucket:
            continue
        avg = sum(probs[i] for i in bucket) / len(bucket)
        rel = sum(labels[i] for i in bucket)
        gap = abs(avg - rel / len(bucket))
        total += len(bucket) / n * gap
        worst = max(worst, gap)
    return total, worst


def quantile_edges(probs: np.ndarray, n_bins: int) -> np.ndarray:
    return np.percentile(probs, np.linspace(0, 100, n_bins + 1))


@pytest.mark.parametrize("n_bins", [1, 3, 10, 15])
def test_ece_matches_naive_loop(n_bins: int) -> None:
    rng = np.random.default_rng(20 + n_bins)
    probs = rng.beta(0.5, 2.0, size=800)
    probs[:6] = [0.0, 1.0, 0.1, 0.5, 0.2, 0.9]  # edges and the ends
    labels = (rng.random(800) < probs**0.7).astype(int)
    u_ece, u_mce = naive_ece(probs, labels, np.linspace(0, 1, n_bins + 1))
    q_ece, q_mce = naive_ece(probs, labels, quantile_edges(probs, n_bins))
    assert ece(probs, labels, n_bins) == pytest.approx(u_ece, abs=1e-12)
    assert mce(probs, labels, n_bins) == pytest.approx(u_mce, abs=1e-12)
    assert ece(probs, labels, n_bins, strategy="quantile") == pytest.approx(q_ece, abs=1e-12)
    assert mce(probs, labels, n_bins, strategy="quantile") == pytest.approx(q_mce, abs=1e-12)


def test_ece_hand_computed() -> None:
    probs = np.array([0.1, 0.2, 0.3, 0.4])
    labels = np.array([0, 0, 1, 1])
    # Equal width, 2 buckets: all in [0, 0.5]: |0.25 - 0.5| = 0.25.
    assert ece(probs, labels, n_bins=2) == pytest.approx(0.25)
    # Equal mass, edges 0.1, 0.25, 0.4: {0.1, 0.2} -> 0.15, {0.3, 0.4} -> 0.65; 0.5 * 0.15 + 0.5 * 0.65.
    assert ece(probs, labels, n_bins=2, strategy="quantile") == pytest.approx(0.4)
    assert mce(probs, labels, n_bins=2, strategy="quantile") == pytest.approx(0.65)
    # Extremes: 0.0 in the first bucket, 1.0 in the last, both perfectly calibrated.
    assert ece(np.array([0.0, 1.0]), np.array([0, 1]), n_bins=10) == 0.0
    curve = reliability_curve(np.array([0.0, 1.0, 0.1]), np.array([0, 1, 0]), n_bins=10)
    assert curve.counts[0] == 2 and curve.counts[-1] == 1  # 0.1 is in the right-closed [0, 0.1]


def test_ece_of_calibrated_sample_is_near_zero() -> None:
    rng = np.random.default_rng(5)
    probs = rng.random(200_000)
    labels = rng.random(200_000) < probs
    assert ece(probs, labels) < 0.01
    assert ece(probs, labels, strategy="quantile") < 0.01
    assert ece(probs, labels, n_bins=50) < 0.01


def test_equal_width_and_equal_mass_differ() -> None:
    """Over-confident among low predictions (true rate twice the prediction) and under-confident
    among the few high ones: most mass is in the first equal-width bucket, where the gaps partly
    cancel; equal-mass buckets resolve them."""
    rng = np.random.default_rng(6)
    low = rng.uniform(0.0, 0.1, size=9000)
    high = rng.uniform(0.6, 1.0, size=1000)
    probs = np.concatenate([low, high])
    true_rate = np.concatenate([np.where(low < 0.05, 0.0, 2 * low), high**2])
    labels = (rng.random(probs.size) < true_rate).astype(int)
    width = ece(probs, labels, n_bins=10)
    mass = ece(probs, labels, n_bins=10, strategy="quantile")
    assert mass - width > 0.01
    assert width == pytest.approx(naive_ece(probs, labels, np.linspace(0, 1, 11))[0], abs=1e-12)
    assert mass == pytest.approx(naive_ece(probs, labels, quantile_edges(probs, 10))[0], abs=1e-12)


def test_quantile_buckets_never_split_ties() -> None:
    rng = np.random.default_rng(8)
    probs = np.round(rng.beta(0.3, 3.0, size=2000), 2)  # heavy ties, many at 0.0
    labels = (rng.random(2000) < probs).astype(int)
    base = ece(probs, labels, n_bins=10, strategy="quantile")
    order = rng.permutation(probs.size)
    assert ece(probs[order], labels[order], n_bins=10, strategy="quantile") == pytest.approx(base, abs=1e-15)
    curve = reliability_curve(probs, labels, n_bins=10, strategy="quantile")
    assert curve.counts.sum() == probs.size
    for value in np.unique(probs):  # every distinct prediction lies in exactly one bucket
        ids = np.searchsorted(curve.bin_edges[1:-1], probs[probs == value], side="left")
        assert np.unique(ids).size == 1
    constant = reliability_curve(np.full(7, 0.3), np.array([1, 0, 0, 0, 0, 0, 0]), n_bins=4, strategy="quantile")
    assert constant.counts.tolist() == [7, 0, 0, 0]
    assert constant.ece == pytest.approx(abs(0.3 - 1 / 7))


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
def test_reliability_curve_matches_sklearn(strategy: str) -> None:
    rng = np.random.default_rng(9)
    probs = np.concatenate([rng.uniform(0.0, 0.35, 500), rng.uniform(0.8, 1.0, 100), [0.0, 0.1, 0.2, 1.0]])
    probs = np.round(probs, 2)  # ties and exact edge values
    labels = (rng.random(probs.size) < probs).astype(int)
    curve = reliability_curve(probs, labels, n_bins=10, strategy=strategy)
    assert curve.bin_edges.shape == (11,) and curve.counts.shape == (10,)
    assert curve.counts.sum() == probs.size  # every probability in exactly one bucket, 0.0 and 1.0 included
    prob_true, prob_pred = calibration_curve(labels, probs, n_bins=10, strategy=strategy)
    nonempty = curve.counts > 0  # sklearn drops empty buckets
    if strategy == "uniform":
        assert not nonempty.all()
    np.testing.assert_allclose(curve.fraction_positive[nonempty], prob_true, rtol=1e-12)
    np.testing.assert_allclose(curve.mean_predicted[nonempty], prob_pred, rtol=1e-12)
    assert np.isnan(curve.mean_predicted[~nonempty]).all() and np.isnan(curve.fraction_positive[~nonempty]).all()
    assert curve.counts.sum() == probs.size
    assert curve.ece == pytest.approx(ece(probs, labels, 10, strategy))
    with pytest.raises(ValueError):
        curve.counts[0] = 5  # read-only
    with pytest.raises(AttributeError):
        curve.counts = np.zeros(10)  # frozen


def test_brier_and_nll_match_sklearn() -> None:
    rng = np.random.default_rng(10)
    probs = rng.uniform(0.001, 0.999, size=(300, 10))  # any shape is flattened
    labels = (rng.random((300, 10)) < probs).astype(int)
    assert brier(probs, labels) == pytest.approx(brier_score_loss(labels.ravel(), probs.ravel()), rel=1e-12)
    assert nll(probs, labels) == pytest.approx(log_loss(labels.ravel(), probs.ravel()), rel=1e-10)
    # Clipping at eps = 1e-7: a confident mistake costs -log(1e-7), a confident hit ~0.
    assert nll(np.array([0.0, 1.0]), np.array([1, 0])) == pytest.approx(-math.log(EPS))
    assert nll(np.array([0.0, 1.0]), np.array([0, 1])) == pytest.approx(-math.log1p(-EPS))
    assert brier(np.array([0.0, 1.0]), np.array([True, True])) == pytest.approx(0.5)


def test_calibration_metrics_keys_and_values() -> None:
    rng = np.random.default_rng(12)
    probs = rng.random(1000)
    labels = (rng.random(1000) < probs**2).astype(int)
    out = calibration_metrics(probs, labels, n_bins=15)
    assert list(out) == ["ECE", "ECE (equal mass)", "MCE", "Brier", "NLL"]
    assert out["ECE"] == ece(probs, labels, 15)
    assert out["ECE (equal mass)"] == ece(probs, labels, 15, strategy="quantile")
    assert out["MCE"] == mce(probs, labels, 15)
    assert out["Brier"] == brier(probs, labels)
    assert out["NLL"] == nll(probs, labels)
    # a hand-computed case: 0.2 for a negative and 0.8 for a positive, each off by 0.2
    tiny = calibration_metrics(np.array([0.2, 0.8]), np.array([0, 1]), n_bins=15)
    assert tiny["ECE"] == pytest.approx(0.2) and tiny["MCE"] == pytest.approx(0.2)
    assert tiny["Brier"] == pytest.approx(0.04) and tiny["NLL"] == pytest.approx(-math.log(0.8))


@pytest.mark.parametrize(
    ("probs", "labels", "kwargs", "match"),
    [
        (np.array([0.2, 1.5, -0.1]), np.array([0, 1, 0]), {}, r"found 2 value\(s\) outside \[0, 1\] or NaN, e.g. 1.5"),
        (np.array([0.2, np.nan]), np.array([0, 1]), {}, r"found 1 value\(s\).*e.g. nan"),
        (np.array([0.2, np.inf]), np.array([0, 1]), {}, "outside"),
        (np.array([0.2, 0.3]), np.array([0, 1, 1]), {}, "labels must have the same shape as probs"),
        (np.zeros((2, 3)), np.zeros(6), {}, "labels must have the same shape as probs"),
        (np.array([]), np.array([]), {}, "at least one prediction"),
        (np.array([0.2, 0.3]), np.array([0, 2]), {}, "labels must contain only 0 and 1; found 1"),
        (np.array(["0.2"]), np.array([0]), {}, "probs must be real numbers"),
        (np.array([0.2]), np.array([0]), {"n_bins": 0}, "n_bins must be an integer >= 1"),
        (np.array([0.2]), np.array([0]), {"n_bins": 2.5}, "n_bins must be an integer >= 1"),
        (np.array([0.2]), np.array([0]), {"strategy": "kmeans"}, "strategy must be one of"),
    ],
)
def test_calibration_validation(probs, labels, kwargs, match) -> None:
    with pytest.raises(ValueError, match=match):
        reliability_curve(probs, labels, **kwargs)
    if not kwargs:
        for fn in (ece, mce, brier, nll, calibration_metrics):
            with pytest.raises(ValueError, match=match):
                fn(probs, labels)
    elif "n_bins" in kwargs:
        with pytest.raises(ValueError, match=match):
            calibration_metrics(probs, labels, **kwargs)


# --------------------------------------------------------------------------------------------
# Statistics
# --------------------------------------------------------------------------------------------


def test_holm_hand_computed() -> None:
    # Sorted: 0.005*4 = 0.02, 0.01*3 = 0.03, 0.03*2 = 0.06, 0.04*1 = 0.04 -> max so far 0.06.
    np.testing.assert_allclose(holm([0.01, 0.04, 0.03, 0.005]), [0.03, 0.06, 0.06, 0.02])
    np.testing.assert_allclose(
        holm([0.01, np.nan, 0.04, 0.03, 0.005, np.nan]), [0.03, np.nan, 0.06, 0.06, 0.02, np.nan]
    )
    np.testing.assert_allclose(holm([0.5, 0.6]), [1.0, 1.0])  # capped at 1
    np.testing.assert_allclose(holm([0.02, 0.02, 0.5]), [0.06, 0.06, 0.5])  # ties share a value
    np.testing.assert_allclose(holm(np.array([[0.01, 0.04], [0.03, 0.005]])), [[0.03, 0.06], [0.06, 0.02]])
    assert holm([]).shape == (0,)
    assert np.isnan(holm([np.nan, np.nan])).all()


def test_holm_is_monotone_and_bounded() -> None:
    rng = np.random.default_rng(13)
    p = rng.random(40) ** 3
    adj = holm(p)
    order = np.argsort(p)
    assert np.all(np.diff(adj[order]) >= 0)
    assert np.all(adj >= p)
    assert adj[order[0]] == pytest.approx(min(1.0, p.size * p[order[0]]))  # the smallest p: times m (Bonferroni)
    assert adj[order[-1]] == pytest.approx(max(p[order[-1]], adj[order[-2]]))  # the largest: itself, kept monotone
    assert np.all(adj <= np.minimum(1, p * p.size) + 1e-15)  # never worse than Bonferroni


def test_holm_validation() -> None:
    with pytest.raises(ValueError, match=r"pvalues must be in \[0, 1\].*found 2 value\(s\)"):
        holm([0.1, 1.2, -0.1])
    with pytest.raises(ValueError, match="pvalues must be real numbers"):
        holm(["a"])


def test_paired_ttest_matches_scipy() -> None:
    rng = np.random.default_rng(14)
    a = rng.normal(0.5, 0.1, size=60)
    b = a + rng.normal(0.02, 0.05, size=60)
    p = {}
    for alternative in ("two-sided", "less", "greater"):
        ours = paired_ttest(a, b, alternative=alternative)
        ref = sps.ttest_rel(a, b, alternative=alternative)
        p[alternative] = ours.pvalue
        assert ours.statistic == pytest.approx(ref.statistic, rel=1e-12)
        assert ours.pvalue == pytest.approx(ref.pvalue, rel=1e-12)
        assert ours.n == 60 and ours.note == ""
    # b is a plus 0.02 on average: "a is less" is the small tail, the two tails add up to 1, two-sided = twice the smaller
    assert p["less"] < 0.01 and p["less"] + p["greater"] == pytest.approx(1.0)
    assert p["two-sided"] == pytest.approx(2 * p["less"])


def test_paired_ttest_undefined_cases_give_nan_with_note() -> None:
    for a, b, n, reason in [
        ([0.5], [0.4], 1, "at least 2 pairs, got 1"),
        ([], [], 0, "at least 2 pairs, got 0"),
        ([0.1, 0.2, 0.3], [0.1, 0.2, 0.3], 3, "zero variance"),
        ([0.6, 0.7, 0.9], [0.5, 0.6, 0.8], 3, "zero variance"),  # constant shift, up to round-off
        ([np.nan, 0.3, 0.4], [0.2, np.nan, 0.1], 1, "at least 2 pairs, got 1"),
    ]:
        res = paired_ttest(np.array(a, dtype=float), np.array(b, dtype=float))
        assert math.isnan(res.statistic) and math.isnan(res.pvalue)
        assert res.n == n and reason in res.note


def test_paired_ttest_drops_nan_pairs() -> None:
    rng = np.random.default_rng(15)
    a, b = rng.random(30), rng.random(30)
    a[3], b[7] = np.nan, np.nan
    res = paired_ttest(a, b)
    keep = ~(np.isnan(a) | np.isnan(b))
    assert res.n == 28 and "dropped 2 pair(s) with NaN" in res.note
    assert res.pvalue == pytest.approx(sps.ttest_rel(a[keep], b[keep]).pvalue)
    with pytest.raises(ValueError, match="a contains 1 NaN value"):
        paired_ttest(a, b, nan_policy="raise")


@pytest.mark.parametrize(
    ("a", "b", "kwargs", "match"),
    [
        (np.zeros((2, 2)), np.zeros((2, 2)), {}, "a must be a 1-D array"),
        (np.zeros(3), np.zeros(4), {}, "b must have the same shape as a"),
        (np.array([1.0, np.inf]), np.zeros(2), {}, "a must not contain infinite values"),
        (np.zeros(3), np.array(["x", "y", "z"]), {}, "b must be real numbers"),
        (np.zeros(3), np.zeros(3), {"alternative": "two"}, "alternative must be one of"),
        (np.zeros(3), np.zeros(3), {"nan_policy": "propagate"}, "nan_policy must be one of"),
    ],
)
def test_paired_ttest_validation(a, b, kwargs, match) -> None:
    with pytest.raises(ValueError, match=match):
        paired_ttest(a, b, **kwargs)


def test_mean_ci_matches_student_t_and_covers() -> None:
    rng = np.random.default_rng(16)
    x = rng.normal(3.0, 2.0, size=25)
    mean, low, high = mean_ci(x, level=0.9)
    ref = sps.t.interval(0.9, df=24, loc=x.mean(), scale=sps.sem(x))
    assert mean == pytest.approx(x.mean()) and (low, high) == pytest.approx(ref)
    covered = 0
    for _ in range(500):
        _, low, high = mean_ci(rng.normal(3.0, 2.0, size=20))
        covered += low <= 3.0 <= high
    assert 0.9 <= covered / 500 <= 0.99


def test_mean_ci_small_and_nan() -> None:
    mean, low, high = mean_ci([2.5])
    assert mean == 2.5 and math.isnan(low) and math.isnan(high)
    assert all(math.isnan(v) for v in mean_ci([]))
    assert mean_ci([1.0, np.nan, 3.0])[0] == 2.0
    assert mean_ci([4.0, 4.0, 4.0]) == (4.0, 4.0, 4.0)
    with pytest.raises(ValueError, match="values contains 1 NaN"):
        mean_ci([1.0, np.nan, 3.0], nan_policy="raise")
    for level in (0, 1, 1.5, -0.2, "0.95", True):
        with pytest.raises(ValueError, match="level must be a number strictly between 0 and 1"):
            mean_ci([1.0, 2.0], level=level)
    with pytest.raises(ValueError, match="values must be a 1-D array"):
        mean_ci(np.zeros((2, 2)))
    with pytest.raises(ValueError, match="values must not contain infinite"):
        mean_ci([1.0, -np.inf])


def test_relative_change() -> None:
    assert relative_change(0.6, 0.5) == pytest.approx(0.2)
    assert isinstance(relative_change(0.6, 0.5), float)
    assert math.isnan(relative_change(1.0, 0.0))
    np.testing.assert_allclose(relative_change([1.0, 3.0, 2.0], [2.0, 0.0, -1.0]), [-0.5, np.nan, -3.0])
    np.testing.assert_allclose(
        relative_change(np.array([[2.0], [4.0]]), np.array([1.0, 2.0])), [[1.0, 0.0], [3.0, 1.0]]
    )


# ------------------------------------------------------------------------------ debiased ECE
def test_folded_normal_mean_matches_scipy_foldnorm():
    from calibrank.metrics.calibration import folded_normal_mean

    mu = np.array([-0.3, -0.01, 0.0, 0.02, 0.5])
    sd = np.array([0.1, 0.05, 0.2, 0.01, 0.3])
    want = [sps.foldnorm(abs(m) / s, scale=s).mean() for m, s in zip(mu, sd)]
    assert np.allclose(folded_normal_mean(mu, sd**2), want, rtol=1e-10)
    assert np.allclose(folded_normal_mean(mu, np.zeros(5)), np.abs(mu))  # no noise: |mu|


def test_ece_debiased_removes_a_bias_that_is_never_negative_and_is_closer_to_the_truth():
    from calibrank.metrics.calibration import ece_debiased

    rng = np.random.default_rng(5)
    # perfectly calibrated: the true ECE is 0; plug-in eq. 1 is biased up, the debiased estimate much less
    plain, debiased = [], []
    for _ in range(200):
        p = rng.uniform(size=400)
        y = (rng.random(400) < p).astype(int)
        plain.append(ece(p, y))
        debiased.append(ece_debiased(p, y))
    plain, debiased = np.array(plain), np.array(debiased)
    assert (plain - debiased >= -1e-15).all()  # the estimated bias E|g'| - |g| >= 0 in every bucket
    assert 0 <= debiased.mean() < 0.7 * plain.mean()  # closer to the truth 0, not past it
    # all predictions in one bucket with the same label: no sampling noise, nothing to remove
    p = np.full(50, 0.95)
    assert ece_debiased(p, np.ones(50)) == pytest.approx(ece(p, np.ones(50)))


def test_ece_debiased_by_hand_on_one_bucket():
    from calibrank.metrics.calibration import ece_debiased

    p = np.full(4, 0.45)  # one bucket, gap 0.45 - 0.5 = -0.05, variance 0.25 / 4
    y = np.array([1, 0, 1, 0])
    sd = 0.25
    z = 0.05 / sd
    folded = sd * np.sqrt(2 / np.pi) * np.exp(-z * z / 2) + 0.05 * (1 - 2 * sps.norm.cdf(-z))
    assert ece_debiased(p, y) == pytest.approx(2 * 0.05 - folded)
    with pytest.raises(ValueError, match="n_bins"):
        ece_debiased(p, y, n_bins=0)
