"""Tests of calibrank.study.analysis.efficiency: interleaved timing on two clocks, and the cost claims decided on CPU time."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from calibrank.study.analysis import efficiency, verdicts
from calibrank.study.model.rankers import make_ranker
from calibrank.study.settings.config import load_config
from rankfix import learnable_queries, tiny_run


class _Clock:
    """Stands in for the ``time`` module inside efficiency: work moves both clocks, load only the wall clock.

    How the CPU clock behaves on a busy machine is measured by ``make bench`` (``benchmarks.clock``), not here.
    """

    def __init__(self) -> None:
        self.cpu = self.wall = 0.0

    def process_time(self) -> float:
        return self.cpu

    def perf_counter(self) -> float:
        return self.wall

    def work(self, seconds: float, load: float = 0.0) -> None:
        self.cpu += seconds
        self.wall += seconds + load


@pytest.fixture
def clock(monkeypatch):
    fake = _Clock()
    monkeypatch.setattr(efficiency, "time", fake)
    return fake


# ------------------------------------------------------------------------------ the order of the timed calls
def test_interleaved_order_is_rounds_of_seeded_permutations():
    names = ["bert", "mc_dropout", "ensemble", "sngp"]
    order = efficiency.interleaved_order(names, 6, seed=3)
    assert len(order) == 6 and all(sorted(r) == sorted(names) for r in order)
    assert order == efficiency.interleaved_order(names, 6, seed=3)  # same seed, same order
    assert order != efficiency.interleaved_order(names, 6, seed=4)
    assert len(set(order)) > 1  # drawn anew each round
    rng = np.random.default_rng(3)
    assert order == [tuple(names[i] for i in rng.permutation(4)) for _ in range(6)]
    with pytest.raises(ValueError, match="distinct"):
        efficiency.interleaved_order(["bert", "bert"], 2, seed=0)
    with pytest.raises(ValueError, match="repeats must be a positive integer"):
        efficiency.interleaved_order(names, 0, seed=0)


def test_calls_run_round_by_round_in_the_drawn_order():
    log: list[str] = []
    calls = {name: (lambda name=name: log.append(name) or len(log)) for name in ("a", "b", "c")}
    timings, last = efficiency.time_interleaved(calls, repeats=4, seed=11)
    assert log == [name for round_ in timings.order for name in round_]  # round r entirely before round r + 1
    assert timings.order == tuple(efficiency.interleaved_order(["a", "b", "c"], 4, seed=11))
    assert all(timings.cpu[n].shape == timings.wall[n].shape == (4,) for n in "abc")
    assert timings.position("a") == [r.index("a") for r in timings.order]
    assert last["a"] == len(log) - log[::-1].index("a")  # the result of a's last call
    with pytest.raises(ValueError, match="every round must time each ranker once"):
        efficiency.Timings(order=(("a", "b"), ("a",)), cpu={}, wall={})


# ------------------------------------------------------------------------------ the two clocks
def test_each_call_is_timed_on_both_clocks(clock):
    bert_load, triple_load = iter([0.0, 0.5, 0.0]), iter([0.0, 0.0, 2.0])  # bursts of load on the wall clock only
    calls = {"bert": lambda: clock.work(1.0, next(bert_load)), "triple": lambda: clock.work(3.0, next(triple_load))}
    timings, _ = efficiency.time_interleaved(calls, repeats=3, seed=0)
    np.testing.assert_allclose(timings.cpu["bert"], [1.0, 1.0, 1.0])
    np.testing.assert_allclose(timings.cpu["triple"], [3.0, 3.0, 3.0])
    np.testing.assert_allclose(timings.wall["bert"], [1.0, 1.5, 1.0])
    np.testing.assert_allclose(timings.wall["triple"], [3.0, 3.0, 5.0])


def _fake_ranker(clock: _Clock, rng, units: int, parameters: int, samples: int = 1, load: float = 0.0):
    def predict(queries):  # 10 ms of CPU a query and unit, +-2%; up to ``load`` s of waiting on the wall clock
        clock.work(0.01 * units * len(queries) * rng.uniform(0.98, 1.02), rng.uniform(0, load))
        return SimpleNamespace(meta={"n_parameters": parameters}, n_samples=samples)

    return SimpleNamespace(predict=predict, device="cpu", reuse_logits=True)


def test_measure_efficiency_rows_and_claims_on_fake_rankers(monkeypatch, clock):
    cfg = load_config("smoke")
    rng = np.random.default_rng(0)
    fakes = {
        "bert": _fake_ranker(clock, rng, 1, 100, load=0.2),
        "mc_dropout": _fake_ranker(clock, rng, 3, 100, samples=3),
        "sngp": _fake_ranker(clock, rng, 1, 110),
    }
    queries = [SimpleNamespace(qid=f"q{i}") for i in range(10)]
    monkeypatch.setattr(
        efficiency,
        "efficiency_queries",
        lambda _cfg, n, **kw: (
            queries[:n],
            {"corpus": "chitchat", "sampler": "mixed", "queries": n, "candidates": 10, "seed": kw["seed"]},
        ),
    )
    measured = efficiency.measure_efficiency(
        cfg, fakes, n_queries=10, repeats=4, warmup_queries=2, seed=5, train_corpus="chitchat", threads=None
    )
    assert all(f.reuse_logits for f in fakes.values())  # restored after timing
    m = measured.set_index("ranker")
    assert (m["clock"] == "cpu").all() and (m["ms/query"] == m["cpu ms/query"]).all()
    order = efficiency.interleaved_order(list(fakes), 4, seed=5)
    assert m.loc["sngp", "position per repeat"] == " ".join(str(r.index("sngp")) for r in order)
    cpu = np.array(m.loc["mc_dropout", "cpu ms/query per repeat"].split(), dtype=float)
    assert m.loc["mc_dropout", "cpu ms/query"] == pytest.approx(np.median(cpu), rel=1e-5)
    assert m.loc["mc_dropout", "cpu ms/query (fastest)"] == pytest.approx(cpu.min(), rel=1e-5)
    assert m.loc["mc_dropout", "samples"] == 3 and m.loc["sngp", "parameters"] == 110

    table = efficiency.efficiency_table(measured).set_index("ranker")
    assert table.loc["mc_dropout", "ratio_to_bert"] == pytest.approx(3.0, rel=0.05)  # 3x the work on the CPU clock
    assert m.loc["bert", "cpu ms/query"] == pytest.approx(10.0, rel=0.03) and m.loc["bert", "wall ms/query"] > 10.3
    assert table.loc["mc_dropout", "ratio_to_bert"] == table.loc["mc_dropout", "cpu ratio"]
    assert {"wall ms/query", "wall ratio", "wall ratio lo", "wall ratio hi"} <= set(table.columns)
    claims = verdicts.summary(verdicts.efficiency_claims(table.reset_index())).set_index("method")
    assert claims.loc["mc_dropout", "verdict"] == "replicates"
    assert claims.loc["sngp", "verdict"] == "replicates"  # 1x against MC Dropout's 3x
    assert claims.loc["mc_dropout", "test"].endswith("4 timing repeats of process CPU time")
    assert claims.loc["mc_dropout", "note"].startswith("wall-time ratio ")


#: MC Dropout at 5x bert on CPU time every repeat; the wall clock caught a burst of load on bert's second repeat.
NOISY_WALL = pd.DataFrame(
    {
        "ranker": ["bert", "mc_dropout"],
        "parameters": [100, 100],
        "clock": ["cpu", "cpu"],
        "ms/query": [2.0, 10.0],
        "ms/query per repeat": ["2 2.02 1.98", "10 10.2 9.8"],
        "cpu ms/query": [2.0, 10.0],
        "cpu ms/query per repeat": ["2 2.02 1.98", "10 10.2 9.8"],
        "wall ms/query": [2.1, 10.6],
        "wall ms/query per repeat": ["2.1 30 2.0", "10.5 10.6 60"],
    }
)


def test_claims_follow_the_cpu_clock_when_the_wall_clock_is_noisy():
    table = efficiency.efficiency_table(NOISY_WALL).set_index("ranker")
    wall = np.array([10.5 / 2.1, 10.6 / 30, 60 / 2.0])
    assert table.loc["mc_dropout", "wall ratio lo"] < 1 < table.loc["mc_dropout", "wall ratio hi"]  # wall: undecided
    assert table.loc["mc_dropout", "wall ratio"] == pytest.approx(10.6 / 2.1)
    assert np.isclose(table.loc["mc_dropout", ["wall ratio lo", "wall ratio hi"]].mean(), wall.mean())
    assert 4.5 < table.loc["mc_dropout", "ratio lo"] <= table.loc["mc_dropout", "ratio hi"] < 5.5
    claims = verdicts.summary(verdicts.efficiency_claims(table.reset_index())).set_index("method")
    assert claims.loc["mc_dropout", "verdict"] == "replicates"
    assert claims.loc["mc_dropout", "ours"] == pytest.approx(4.0, abs=0.01)
    assert claims.loc["mc_dropout", "note"] == f"wall-time ratio {10.6 / 2.1:.2f}"
    view = efficiency.clock_view(table.reset_index(), "wall").set_index("ranker")
    assert view.loc["mc_dropout", "ratio_to_bert"] == table.loc["mc_dropout", "wall ratio"]
    assert view.loc["mc_dropout", "ms/query"] == 10.6
    with pytest.raises(ValueError, match="clock must be one of"):
        efficiency.clock_view(table, "gpu")
    with pytest.raises(ValueError, match="no wall columns"):
        efficiency.clock_view(table.drop(columns=["wall ratio"]), "wall")


def test_deciding_clock():
    assert efficiency.deciding_clock(["cpu", "cpu"]) == "cpu"
    assert efficiency.deciding_clock(["cpu", "cuda:0"]) == "wall"


# ------------------------------------------------------------------------------ temperature scaling is bert's work
@pytest.fixture(scope="module")
def bert_and_temperature(tmp_path_factory):
    models = tmp_path_factory.mktemp("models")
    train, valid = learnable_queries(32, 3, seed=1), learnable_queries(16, 3, seed=2)
    run = tiny_run(models, epochs=1)
    bert = make_ranker("bert", run).fit(train, valid)
    temp = make_ranker("temperature", run).fit(train, valid)
    return bert, temp


def test_temperature_scores_once_like_bert_and_divides_its_logits(bert_and_temperature):
    import calibrank.study.model.rankers.scoring as base

    bert, temp = bert_and_temperature
    queries = learnable_queries(20, 9, seed=5)
    real, calls = base.score_pairs, []

    def counting(model, pairs, **kw):
        calls.append((id(model), len(pairs)))
        return real(model, pairs, **kw)

    base.score_pairs = counting
    try:
        timings, last = efficiency.time_rankers({"bert": bert, "temperature": temp}, queries, repeats=2, seed=0)
    finally:
        base.score_pairs = real
    # warm-up and two repeats each: every call scores all pairs once, with the same model weights
    assert len(calls) == 6 and {n for _, n in calls} == {40, 200}
    assert bert.reuse_logits and temp.reuse_logits  # restored
    z = np.log(last["bert"].probs) - np.log1p(-last["bert"].probs)
    np.testing.assert_allclose(last["temperature"].probs, 1 / (1 + np.exp(-z / temp.temperature)), rtol=1e-6)
