"""The certified cutoff: its coverage on synthetic data with a known precision, with and without alike candidates
within a query, and what it says when nothing can be certified."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from calibrank.assess.deploy import certify as cert_mod
from calibrank.assess.deploy.certify import Metric, certify, cutoff_grid, kept_by_cutoff, min_kept

TRIALS = 200
DELTA = 0.1
# a violation rate above this would happen with probability < 0.3% if the true rate were DELTA
LIMIT = DELTA + 3 * np.sqrt(DELTA * (1 - DELTA) / TRIALS)


def clustered(rng, n_queries: int, conc: float = 0.6, k: int = 20):
    """Queries whose candidates are alike: a query draws its share of relevant candidates p_q ~ Beta and every
    candidate's score moves with p_q (easy queries score high throughout), so a strict cutoff keeps whole
    queries and the kept candidates are far from independent."""
    p = rng.beta(0.6 * conc, 0.4 * conc, (n_queries, 1))
    y = rng.random((n_queries, k)) < p
    s = 6 * p + rng.normal(0, 0.5, (n_queries, 1)) + rng.normal(0, 0.1, (n_queries, k))
    return s, y


def independent(rng, n_queries: int, k: int = 15):
    y = rng.random((n_queries, k)) < 0.2
    return y * 1.5 + rng.normal(0, 1, (n_queries, k)), y


def _true_precision(population, cutoff: float) -> float:
    s, y = population
    kept = s >= cutoff
    return float((y & kept).sum() / max(kept.sum(), 1))


def _violations(draw, target: float, rng) -> tuple[int, int]:
    population = draw(np.random.default_rng(12345), 200_000)
    certified = bad = 0
    for _ in range(TRIALS):
        c = certify(*draw(rng, 300), target=target, confidence=1 - DELTA)
        if c.certified:
            certified += 1
            bad += _true_precision(population, c.cutoff) < target
    return certified, bad


@pytest.mark.parametrize("draw,target", [(independent, 0.8), (clustered, 0.9)])
def test_the_guarantee_holds_at_its_confidence(draw, target):
    certified, bad = _violations(draw, target, np.random.default_rng(0))
    assert certified > TRIALS // 4  # it certifies something: a rule that never certifies would pass trivially
    assert bad / TRIALS <= LIMIT


def test_the_candidate_level_test_alone_fails_on_alike_candidates(monkeypatch):
    """Why the query-level test is there: with the binomial p-value alone, the clustered data break the guarantee."""
    def binomial_only(kept, hits, rel, metric, target):
        total, good = kept.sum(axis=0), hits.sum(axis=0)
        return np.where(total > 0, stats.binom.cdf(total - good, np.maximum(total, 1), 1.0 - target), 1.0)

    very_alike = lambda rng, n: clustered(rng, n, conc=0.3)  # noqa: E731
    certified, bad = _violations(very_alike, 0.9, np.random.default_rng(0))
    assert bad / TRIALS <= LIMIT and certified > TRIALS // 4  # both tests: the guarantee holds here too
    monkeypatch.setattr(cert_mod, "_pvalues", binomial_only)
    _, bad = _violations(very_alike, 0.9, np.random.default_rng(0))
    assert bad / TRIALS > LIMIT


def test_recall_is_certified_from_the_loosest_cutoff_up():
    rng = np.random.default_rng(1)
    s, y = independent(rng, 400)
    c = certify(s, y, metric="recall", target=0.7, confidence=0.9)
    assert c.certified and c.metric is Metric.recall and c.valid_value >= 0.7
    population = independent(np.random.default_rng(7), 100_000)
    kept = population[0] >= c.cutoff
    assert (population[1] & kept).sum() / population[1].sum() >= 0.7 - 0.02


def test_an_uncertifiable_target_gives_the_highest_certifiable_level_and_how_many_queries_would_do():
    rng = np.random.default_rng(2)
    s, y = independent(rng, 60)
    c = certify(s, y, target=0.97, confidence=0.9)
    assert not c.certified and np.isnan(c.cutoff)
    assert 0 < c.best_level < 0.97
    again = certify(s, y, target=c.best_level, confidence=0.9)
    assert again.certified and again.cutoff == c.best_cutoff
    assert not certify(s, y, target=min(c.best_level + 0.01, 0.999), confidence=0.9).certified
    if c.separation:
        assert c.queries_needed is None or c.queries_needed > 60


def test_scores_that_do_not_separate_say_so():
    rng = np.random.default_rng(3)
    y = rng.random((300, 10)) < 0.2
    s = rng.normal(0, 1, y.shape)  # no information
    c = certify(s, y, target=0.9, confidence=0.9)
    assert not c.certified and not c.separation and c.queries_needed is None
    assert c.max_value < 0.9


def test_too_few_candidates_cannot_certify_precision_even_without_an_error():
    y = np.ones((3, 4), bool)
    c = certify(np.arange(12.0).reshape(3, 4), y, target=0.9, confidence=0.9)
    assert c.too_few and not c.certified and c.min_kept == min_kept(0.9, 0.9) == 22
    assert 0.9 ** 22 <= 0.1 < 0.9 ** 21  # the binomial p-value of 22 hits in 22


def test_the_grid_and_counts_agree_with_a_direct_count():
    rng = np.random.default_rng(4)
    s, y = rng.normal(size=(30, 8)), rng.random((30, 8)) < 0.3
    mask = np.arange(8)[None] < rng.integers(1, 9, 30)[:, None]
    grid = cutoff_grid(s[mask], 50)
    assert grid.size <= 50 and np.isin(grid, s[mask]).all() and (np.diff(grid) > 0).all()
    kept, hits, rel = kept_by_cutoff(s, y & mask, mask, grid)
    for t in (0, 7, grid.size - 1):
        k = (s >= grid[t]) & mask
        assert np.array_equal(kept[:, t], k.sum(axis=1)) and np.array_equal(hits[:, t], (k & y).sum(axis=1))
    assert np.array_equal(rel, (y & mask).sum(axis=1))
