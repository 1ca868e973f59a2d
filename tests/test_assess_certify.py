"""The certified cutoff: its coverage on known-truth data with and without alike candidates within a query, a cutoff
for every target, what recall counts, and what it says when nothing can be certified."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from scipy import stats

from benchmarks import guarantee
from calibrank.assess.deploy import certify as cert_mod
from calibrank.assess.deploy.certify import Metric, certified_cutoff, certify, cutoff_grid, kept_by_cutoff, min_kept
from calibrank.assess.errors import OptionError
from calibrank.assess.options import Settings

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


def bi_encoder(rng, n_queries: int, k: int = 100, signal: float = 3.0, tau: float = 0.3):
    """Like a bi-encoder's run on chit-chat: 100 candidates a query, the true next turn relevant (and a second
    candidate for 30% of queries), a moderate signal and a small per-query offset of the scores."""
    y = np.zeros((n_queries, k), bool)
    y[:, 0] = True
    y[:, 1] = rng.random(n_queries) < 0.3
    return signal * y + rng.normal(0, tau, (n_queries, 1)) + rng.normal(0, 1, (n_queries, k)), y


def _true_precision(population, cutoff: float) -> float:
    s, y = population
    kept = s >= cutoff
    return float((y & kept).sum() / max(kept.sum(), 1))


def _binomial_cutoff(s, y, target: float, confidence: float) -> float:
    """Learn-then-Test with the candidate-level exact binomial test alone (every kept candidate an independent
    draw), fixed sequence from the strictest cutoff that could be certified: what the query-level test guards."""
    grid = cutoff_grid(s.ravel())
    kept, hits, _ = kept_by_cutoff(s, y, np.ones(s.shape, bool), grid)
    total, good = kept.sum(axis=0), hits.sum(axis=0)
    best = np.nan
    for i in np.flatnonzero(total >= min_kept(target, confidence))[::-1]:
        if stats.binom.cdf(total[i] - good[i], total[i], 1.0 - target) > 1.0 - confidence:
            break
        best = grid[i]
    return best


def _violations(draw, target: float, rng, how=certified_cutoff) -> tuple[int, int]:
    population = draw(np.random.default_rng(12345), 200_000)
    certified = bad = 0
    for _ in range(TRIALS):
        s, y = draw(rng, 300)
        c = how(s, y, target=target, confidence=1 - DELTA)
        if np.isfinite(c):
            certified += 1
            bad += _true_precision(population, c) < target
    return certified, bad


@pytest.mark.parametrize("draw,target", [(independent, 0.8), (clustered, 0.9)])
def test_the_guarantee_holds_at_its_confidence(draw, target):
    certified, bad = _violations(draw, target, np.random.default_rng(0))
    assert certified > TRIALS // 4  # it certifies something: a rule that never certifies would pass trivially
    assert bad / TRIALS <= LIMIT


def test_the_candidate_level_test_alone_fails_on_alike_candidates():
    """Why the test is over queries: with the binomial over candidates alone, the clustered data break the guarantee."""
    very_alike = lambda rng, n: clustered(rng, n, conc=0.3)  # noqa: E731
    certified, bad = _violations(very_alike, 0.9, np.random.default_rng(0))
    assert bad / TRIALS <= LIMIT and certified > TRIALS // 4  # over queries: the guarantee holds here
    binomial = lambda s, y, target, confidence: _binomial_cutoff(s, y, target, confidence)  # noqa: E731
    _, bad = _violations(very_alike, 0.9, np.random.default_rng(0), how=binomial)
    assert bad / TRIALS > LIMIT


def test_the_promise_holds_on_the_known_truth_grid_where_the_t_test_broke_it():
    """A small version of ``python -m benchmarks guarantee``: few queries whose candidates are alike (tau 1.5,
    100 queries, target 0.6), where the t-test over queries violated the promise, and 300 queries at tau 1. The
    upper end of the 95% Clopper-Pearson interval of the violation rate stays under 1 - confidence."""
    res = guarantee.bench_guarantee(
        150,
        taus=(1.5,),
        queries=(100,),
        confidences=(0.9,),
        targets={1.5: (0.6,)},
        procedures=("calibrank", "t-test"),
        seed=1,
    )
    rows = {r["procedure"]: r for r in res["rows"]}
    assert rows["calibrank"]["violations hi"] <= 0.1 and rows["calibrank"]["certified"] > 0
    assert rows["t-test"]["violations"] > 0.1  # the procedure before: more violations than promised
    res = guarantee.bench_guarantee(
        80,
        taus=(1.0,),
        queries=(300,),
        confidences=(0.9,),
        targets={1.0: (0.6,)},
        procedures=("calibrank", "t-test"),
        seed=1,
    )
    rows = {r["procedure"]: r for r in res["rows"]}
    assert rows["calibrank"]["violations hi"] <= 0.1
    # the price of finite-sample validity: at 300 queries the betting test certifies a little less often than the
    # t-test did (0.925 against 1.0 on these 80 draws; 95.2% against 99.4% over 500: docs/decisions.md)
    assert rows["calibrank"]["certified"] >= rows["t-test"]["certified"] - 0.10
    assert all(t["met"] for t in res["targets"])


def test_known_truth_precision_is_what_a_large_sample_counts():
    rng = np.random.default_rng(3)
    s, y, m = guarantee.draw(rng, 20_000, 1.0)
    keep = (s >= 3.0) & m
    precision, recall, share = guarantee.truth(3.0, 1.0)
    assert (keep & y).sum() / keep.sum() == pytest.approx(precision, abs=0.01)
    assert (keep & y).sum() / y.sum() == pytest.approx(recall, abs=0.01)
    assert keep.sum() / m.sum() == pytest.approx(share, abs=0.002)


def test_every_target_gets_its_own_cutoff_with_at_least_the_recall_of_the_quantile_grid():
    """The quantile grid of the procedure before kept 1, 112, 223 ... candidates at its strictest cutoffs, so
    neighbouring targets shared a cutoff; every distinct score near the top gives each target its own, and no
    less recall."""
    s, y = bi_encoder(np.random.default_rng(11), 300)
    population = bi_encoder(np.random.default_rng(99), 20_000)
    recall = lambda c: ((population[0] >= c) & population[1]).sum() / population[1].sum()  # noqa: E731
    ones = np.ones(s.shape, bool)
    new = [certified_cutoff(s, y, target=t) for t in (0.5, 0.55, 0.6)]
    before = [guarantee.certify_ttest(s, y, ones, t, 0.9) for t in (0.5, 0.55, 0.6)]
    assert np.isfinite(new).all() and len(set(new)) == 3 and new == sorted(new)
    assert len(set(before)) < 3  # the quantile grid gave two targets one cutoff
    for c_new, c_before in zip(new, before):
        assert recall(c_new) >= recall(c_before)


def test_the_grid_is_every_score_near_the_top_then_a_few_percent_of_the_kept_apart():
    s = np.random.default_rng(5).normal(size=40_000)
    grid = cutoff_grid(s)
    assert grid.size <= cert_mod.MAX_CUTOFFS and np.isin(grid, s).all() and (np.diff(grid) > 0).all()
    kept = (np.sort(s)[::-1][None] >= grid[::-1, None]).sum(axis=1)  # strictest first
    assert kept[:100].tolist() == list(range(1, 101))
    assert (np.diff(kept) <= np.maximum(1, np.ceil(cert_mod.STEP * kept[1:]))).all()
    assert kept[-1] == s.size
    assert cutoff_grid(s, 300).size <= 300  # the step widens to fit
    assert np.array_equal(cutoff_grid(s[:500]), np.sort(s[:500]))  # few scores: all of them


def test_recall_is_certified_from_the_loosest_cutoff_up():
    rng = np.random.default_rng(1)
    s, y = independent(rng, 400)
    c = certify(s, y, metric="recall", target=0.7, confidence=0.9)
    assert c.certified and c.metric is Metric.recall and c.valid_value >= 0.7 and c.recall_over == "retrieved"
    population = independent(np.random.default_rng(7), 100_000)
    kept = population[0] >= c.cutoff
    assert (population[1] & kept).sum() / population[1].sum() >= 0.7 - 0.02


def test_recall_over_the_qrels_counts_what_the_run_never_retrieved():
    rng = np.random.default_rng(1)
    s, y = independent(rng, 400)
    missing = rng.integers(0, 2, 400)  # relevant documents of the qrels below the run's depth
    qrels = y.sum(axis=1) + missing
    high = certify(s, y, metric="recall", target=0.9, relevant=qrels)
    assert high.recall_over == "qrels" and high.missed == missing.sum()
    assert high.max_value == pytest.approx(y.sum() / qrels.sum())  # keeping every candidate: the best attainable
    assert high.max_value < 0.9 and high.unreachable and not high.certified
    assert certify(s, y, metric="recall", target=0.9).certified  # over the retrieved ones, 90% is within reach
    over_qrels = certify(s, y, metric="recall", target=0.7, relevant=qrels)
    over_retrieved = certify(s, y, metric="recall", target=0.7)
    assert over_qrels.certified and not over_qrels.unreachable and over_retrieved.recall_over == "retrieved"
    assert over_qrels.cutoff < over_retrieved.cutoff  # the same share of more documents: a looser cutoff
    with pytest.raises(ValueError, match="relevant: expected one count per query"):
        certify(s, y, metric="recall", target=0.5, relevant=np.zeros(400))


def test_recall_over_is_a_declared_setting():
    assert Settings().recall_over == "qrels" and Settings(recall_over="retrieved").recall_over == "retrieved"
    with pytest.raises(OptionError, match=r"^recall_over: expected one of qrels, retrieved, got 'all'$"):
        Settings(recall_over="all")


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


def test_queries_needed_is_about_what_certifies():
    rng = np.random.default_rng(4)
    s, y = independent(rng, 120)
    c = certify(s, y, target=0.75, confidence=0.9)
    assert not c.certified and c.separation and c.queries_needed is not None
    more = independent(np.random.default_rng(5), 3 * c.queries_needed)
    assert certify(*more, target=0.75, confidence=0.9).certified


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
    assert 0.9**22 <= 0.1 < 0.9**21  # the binomial p-value of 22 hits in 22


def test_the_fallback_passes_a_rejected_level_on():
    p = np.array([0.01, 0.05, 0.04, 0.2, 0.01, 0.02])
    # two starts, 0.05 each: 0.01 <= 0.05 passes 0.05 on; 0.05 <= 0.05; 0.04 <= 0.05; 0.2 fails; the start at 4
    # begins with its own 0.05: 0.01 and 0.02 pass
    assert cert_mod._fallback(p, np.array([0, 4]), 0.1) == (5, 6)
    # with the second start at 2, the sequence holds 0.1 from there on
    assert cert_mod._fallback(np.array([0.01, 0.05, 0.09, 0.2, 0.01]), np.array([0, 2]), 0.1) == (2, 4)


def test_the_bet_is_a_valid_p_value_under_the_null():
    """Under H0 (mean 0, skewed, bounded below) the betting p-value is at most alpha with probability <= alpha."""
    rng = np.random.default_rng(6)
    k = rng.poisson(0.5, (300, 2000)) * (rng.random((300, 2000)) < 0.2) * 10  # a few queries keep many
    d = np.where(k > 0, rng.binomial(k, 0.6) - 0.6 * k, 0.0)  # precision 0.6, target 0.6
    p = cert_mod._bet_pvalues(d, 0.6 * np.maximum(k.max(axis=0), 1), 0.1, seed=0)
    assert (p <= 0.1).mean() <= 0.1
    assert np.median(cert_mod._bet_pvalues(d + 0.5, 0.6 * np.maximum(k.max(axis=0), 1), 0.1, seed=0)) < 1e-3


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


def test_same_seed_same_cutoff_and_the_certificate_is_frozen():
    s, y = independent(np.random.default_rng(8), 300)
    a, b = certify(s, y, target=0.7, seed=3), certify(s, y, target=0.7, seed=3)
    assert a.certified and a == b
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.cutoff = 0.0  # type: ignore[misc]


def test_the_figure_draws_steps_over_the_real_cutoffs():
    import pandas as pd

    from calibrank.assess.page.figures import plot_thresholds

    curve = pd.DataFrame(
        {
            "cutoff": [0.0, 1.0, 3.0],
            "probability": [0.2, 0.5, 0.9],
            "kept": [10, 4, 1],
            "precision": [0.2, 0.5, 1.0],
            "precision lo": [0.1, 0.3, 1.0],
            "precision hi": [0.3, 0.7, 1.0],
            "recall": [1.0, 1.0, 0.5],
            "recall lo": [1.0, 0.8, 0.3],
            "recall hi": [1.0, 1.0, 0.7],
            "recall over": "qrels",
        }
    )
    row = pd.DataFrame(
        [
            {
                "metric": "precision",
                "target": 0.5,
                "certified": True,
                "cutoff": 1.0,
                "best cutoff": 1.0,
                "best level": 0.6,
                "map": "platt",
            }
        ]
    )
    ax = plot_thresholds(curve, row).axes[0]
    lines = {ln.get_label(): ln for ln in ax.get_lines()}
    assert lines["precision (test)"].get_drawstyle() == "steps-pre"
    assert lines["recall (test, over the qrels)"].get_drawstyle() == "steps-pre"


def test_python_m_benchmarks_guarantee_writes_the_table(tmp_path):
    pytest.importorskip("mapie")
    from benchmarks.__main__ import main

    assert main(["guarantee", "--guarantee-draws", "2", "--out", str(tmp_path)]) == 0
    import json

    res = json.loads((tmp_path / "bench.json").read_text())
    sec = res["guarantee"]
    assert {r["procedure"] for r in sec["rows"]} == {"calibrank", "t-test", "MAPIE"}
    assert len(sec["table"]["rows"]) == len(guarantee.TAUS) * len(guarantee.QUERIES) * 2 * 2
    assert len(sec["targets"]) == len(sec["table"]["rows"])
    md = (tmp_path / "bench.md").read_text()
    assert "## guarantee" in md and "| calibrank violations [95% CI] |" in md.replace(" | ", " | ")
