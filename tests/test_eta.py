"""Tests of calibrank.eta: the wall-time estimate of `make report`, its progress lines and eta.json."""

from __future__ import annotations

import dataclasses
import math
import time
from types import SimpleNamespace

import pytest

from calibrank import eta, report
from calibrank.config import load_config
from calibrank.grid import grid_models
from test_report import write_executed_notebooks

RATES = eta.Rates(train=10.0, infer=100.0, dropout=50.0, solo_infer=150.0, threads=1, solo_threads=2,
                  backbone_load_s=2.0, device="cpu", bf16=False)


def _sizes(cfg, train=64, valid=24, test=24, pool=100) -> eta.Sizes:
    corpora = [c.value for c in cfg.data.corpora]
    return eta.Sizes(examples={c: {"train": train, "valid": valid, "test": test} for c in corpora},
                     pools={c: {"train": pool, "valid": pool, "test": pool} for c in corpora},
                     load_seconds={c: 1.0 for c in corpora})


@pytest.fixture(scope="module")
def smoke():
    return load_config("smoke")


def test_training_is_pairs_times_epochs_over_the_rate_plus_validation(smoke):
    est = eta.estimate(smoke, RATES, _sizes(smoke))
    steps = {s.name: s for s in est.steps}
    t = smoke.training
    train_pairs, valid_pairs = 64 * (1 + smoke.negatives.train_k), 24 * (1 + smoke.negatives.train_k)
    evaluations = t.epochs  # smoke validates at the end of each epoch only
    expected = train_pairs * t.epochs / RATES.train + evaluations * valid_pairs / RATES.infer
    assert math.isclose(steps["03_train-bert-chitchat"].training, expected)
    # mc_dropout, temperature and ensemble member 0 reuse bert's model: they train nothing
    for run in ("mc_dropout-chitchat", "temperature-chitchat", "ensemble-chitchat"):
        assert steps[f"03_train-{run}"].training == 0.0
        assert steps[f"03_train-{run}"].after == "03_train-bert-chitchat"
    # one trained model per grid model: bert, focal, the GP rankers and every further ensemble member
    assert sum(1 for s in est.steps if s.training > 0) == len(grid_models(smoke))
    member = steps["ensemble-chitchat-seed0-member1"]
    assert math.isclose(member.training, expected) and member.phase == "train"
    assert steps["03_train-pg_drr-chitchat"].training > steps["03_train-sngp-chitchat"].training


def test_inference_counts_conditions_passes_and_members(smoke):
    # the distinct pairs of each split, as counted from its query sets (by pair; MC Dropout's by query)
    shares = {("valid", False): 0.7, ("test", False): 0.6, ("valid", True): 0.8, ("test", True): 0.75}
    est = eta.estimate(smoke, RATES, dataclasses.replace(_sizes(smoke), distinct=shares))
    steps = {s.name: s for s in est.steps}
    k = smoke.negatives.eval_k
    n_cond = len(smoke.data.corpora) * len(smoke.negatives.eval)
    test_all, valid_all = n_cond * 24 * (1 + k), n_cond * 24 * (1 + k)
    test_pairs, valid_pairs = 0.6 * test_all, 0.7 * valid_all
    assert math.isclose(steps["03_train-bert-chitchat"].inference, test_pairs / RATES.infer)
    passes = smoke.rankers.mc_dropout.passes
    # per-query masks (the default): a pass is a deterministic pass plus its masks
    assert smoke.rankers.mc_dropout.masks.value == "per_query"
    mc_pairs = 0.8 * valid_all + 0.75 * test_all
    assert math.isclose(steps["03_train-mc_dropout-chitchat"].inference,
                        mc_pairs * passes * eta.PER_QUERY_MASK_OVERHEAD / RATES.infer)
    per_pair = dataclasses.replace(smoke, rankers=dataclasses.replace(
        smoke.rankers, mc_dropout=dataclasses.replace(smoke.rankers.mc_dropout, masks="per_pair")))
    pp = {s.name: s for s in eta.estimate(per_pair, RATES, dataclasses.replace(_sizes(smoke), distinct=shares)).steps}
    assert math.isclose(pp["03_train-mc_dropout-chitchat"].inference, mc_pairs * passes / RATES.dropout)
    members = smoke.rankers.ensemble.members  # member 0's test logits are bert's
    assert math.isclose(steps["03_train-ensemble-chitchat"].inference,
                        ((valid_pairs + test_pairs) * members - test_pairs) / RATES.infer)
    assert math.isclose(steps["03_train-sngp-chitchat"].inference, (valid_pairs + test_pairs) / RATES.infer)


def test_before_the_query_sets_exist_the_measured_share_of_distinct_pairs_is_used(smoke):
    sizes = _sizes(smoke)
    assert len(smoke.negatives.eval) > 1
    assert sizes.share("test", False, 3) == eta.DISTINCT_SHARE[False] < sizes.share("test", True, 3) == eta.DISTINCT_SHARE[True] < 1
    assert sizes.share("test", False, 1) == 1.0  # one sampler: every pair is distinct
    est = {s.name: s for s in eta.estimate(smoke, RATES, sizes).steps}
    n_cond = len(smoke.data.corpora) * len(smoke.negatives.eval)
    assert math.isclose(est["03_train-bert-chitchat"].inference,
                        eta.DISTINCT_SHARE[False] * n_cond * 24 * (1 + smoke.negatives.eval_k) / RATES.infer)


def test_distinct_pairs_are_counted_from_the_query_sets(tmp_root):
    """Two samplers of one corpus that share their contexts, true responses and one negative of two."""
    from calibrank.data.io import write_queries
    from calibrank.choices import SamplerName
    from calibrank.data.schema import RankingQuery
    from calibrank.querysets import QuerySetSpec, query_set_path

    cfg = load_config("smoke", {"data.corpora": ["chitchat"], "rankers.train_corpora": ["chitchat"],
                                "negatives.eval": ["random", "bm25"], "negatives.eval_k": 2})
    assert eta.count_distinct(cfg) == {}  # not built yet
    for split in ("valid", "test"):
        for sampler, third in (("random", "r"), ("bm25", "b")):
            queries = [RankingQuery(f"q{i}", (f"context {i}",), (f"true {i}", f"shared {i}", f"{third} {i}"), (1, 0, 0))
                       for i in range(4)]
            write_queries(query_set_path(cfg, QuerySetSpec("chitchat", split, SamplerName(sampler), 2)), queries)
    # 24 pairs over the two sets of a split, 16 distinct (4 true + 4 shared + 4 + 4 own negatives)
    assert eta.count_distinct(cfg) == {(split, by_query): 16 / 24 for split in ("valid", "test") for by_query in (False, True)}


def test_timed_batches_time_the_steady_state_after_a_pass_over_the_same_batches():
    calls = []

    def run(index):
        calls.append(list(index))
        if len(calls) <= 3:  # the first call of each batch is slow (kernels built per shape)
            time.sleep(0.05)
        return len(index)

    batches = [[0, 1], [2, 3, 4], [5]]
    pairs, secs = eta._timed_batches(run, batches, 0.0, 1, cpu=False)
    assert calls == batches + batches  # one untimed pass, then one timed pass (budget spent)
    assert pairs == 6 and secs < 0.05


def test_faster_rates_give_a_shorter_estimate_and_done_steps_count_zero(smoke):
    slow = eta.estimate(smoke, RATES, _sizes(smoke), jobs=2)
    fast = eta.estimate(smoke, eta.Rates(train=20.0, infer=200.0, dropout=100.0, solo_infer=300.0), _sizes(smoke), jobs=2)
    assert math.isclose(fast.work()["training"], slow.work()["training"] / 2)
    assert fast.seconds < slow.seconds
    only = eta.estimate(smoke, RATES, _sizes(smoke), jobs=2, pending={"04_calibration", "index"})
    assert [s.name for s in only.pending] == ["04_calibration", "index"]
    assert math.isclose(only.seconds, sum(s.seconds for s in only.pending))
    none = eta.estimate(smoke, RATES, _sizes(smoke), pending=set())
    assert none.seconds == 0.0 and "nothing to run" in eta.summary_line(none, RATES, 2)
    # a pending notebook this module does not know is still counted
    extra = eta.estimate(smoke, RATES, _sizes(smoke), pending={"09_new"})
    assert [s.name for s in extra.pending] == ["09_new"] and extra.seconds > 0


def test_models_already_in_the_cache_cost_no_training(smoke):
    full = {s.name: s for s in eta.estimate(smoke, RATES, _sizes(smoke)).steps}
    cached = {"bert-chitchat-seed0", "ensemble-chitchat-seed0-member1"}
    est = {s.name: s for s in eta.estimate(smoke, RATES, _sizes(smoke), trained=cached).steps}
    assert est["03_train-bert-chitchat"].training == 0.0 < full["03_train-bert-chitchat"].training
    assert est["03_train-bert-chitchat"].inference == full["03_train-bert-chitchat"].inference  # still predicts
    assert est["ensemble-chitchat-seed0-member1"].training == 0.0  # the step is there (make runs it), untrained
    assert est["03_train-focal-chitchat"].training == full["03_train-focal-chitchat"].training > 0


def test_bad_rates_are_refused(smoke):
    with pytest.raises(eta.EtaError, match="rates.train"):
        eta.estimate(smoke, eta.Rates(train=0.0, infer=1.0, dropout=1.0, solo_infer=1.0), _sizes(smoke))


def test_schedule_runs_phases_in_turn_and_jobs_side_by_side():
    S = eta.StepEstimate
    steps = [S("01_data", "data", other=10), S("a", "train", training=100), S("b", "train", training=100),
             S("c", "train", training=50, after="a"), S("04", "analyses", other=20), S("05", "analyses", other=20),
             S("07_efficiency", "efficiency", other=30)]
    assert eta.schedule(steps, 1) == 330
    # jobs=2: train phase = max(chain a->c = 150, 250 / 2); analyses = max(20, 40 / 2); solo phases add up
    assert eta.schedule(steps, 2) == 10 + 150 + 20 + 30
    assert eta.schedule(steps, 8) == 10 + 150 + 20 + 30


def test_summary_line_says_time_machine_and_parts(smoke):
    est = eta.estimate(smoke, RATES, _sizes(smoke), jobs=2)
    line = eta.summary_line(est, RATES, 2)
    assert line.startswith("estimate: ~") and "on this machine (2 cores, cpu, bf16: no) for profile smoke" in line
    assert "training" in line and "inference" in line and "other" in line and "2 jobs side by side" in line


MAKE_N = """\
.venv/bin/python -m calibrank.config check smoke >/dev/null
echo "== 02_negatives (smoke)"
.venv/bin/python -m calibrank.runs sweep --started 1 reports/smoke
echo "== 03_train bert-chitchat-seed1 (smoke)"
echo "== ensemble member chitchat-seed0-member1 (smoke)"
.venv/bin/jupyter nbconvert --log-level WARN --to html reports/smoke/02_negatives.ipynb --output "$tmp"; \\
.venv/bin/python -m calibrank.eta progress smoke 02_negatives --seconds 3 || true
echo "== 07_efficiency (smoke)"
start=$(date +%s); .venv/bin/python -m calibrank.report smoke; \\
"""


def test_pending_steps_are_read_from_make_n():
    assert eta.pending_from_make(MAKE_N) == {"02_negatives", "03_train-bert-chitchat-seed1",
                                             "ensemble-chitchat-seed0-member1", "07_efficiency", "index"}
    assert eta.pending_from_make("make: Nothing to be done for 'index'.\n") == set()


def test_progress_line_says_elapsed_step_and_what_is_left():
    S = eta.StepEstimate
    est = eta.Estimate("smoke", 2, (S("01_data", "data", other=60), S("a", "train", training=600),
                                    S("b", "train", training=600), S("index", "index", other=60, pending=True),
                                    S("old", "analyses", other=999, pending=False)))
    line = eta.progress_line(est, "01_data", step_seconds=250, elapsed=723, finished={"01_data"})
    assert line == "[12:03 elapsed] 01_data done (4:10, estimate 1:00); ~11 min left (3 steps, 2 side by side)"
    last = eta.progress_line(est, "index", step_seconds=5, elapsed=4000, finished={"01_data", "a", "b"})
    assert last.endswith("index done (0:05, estimate 1:00); nothing left") and last.startswith("[1:06:40 elapsed]")


def test_eta_json_round_trip_and_progress_of_this_run(smoke, tmp_root, monkeypatch):
    est = eta.estimate(smoke, RATES, _sizes(smoke), jobs=2)
    started = time.time() - 100
    path = eta.write_eta(est, RATES, started=started, cores=2, measured_in=9.0)
    assert path == eta.eta_path("smoke") and path.exists()
    back, data = eta.read_eta(path)
    assert back.profile == "smoke" and back.jobs == 2 and [s.name for s in back.steps] == [s.name for s in est.steps]
    assert math.isclose(back.seconds, est.seconds, rel_tol=1e-3)
    assert data["rates"]["train"] == RATES.train and data["cores"] == 2
    # a finished step of this run (its notebook written after the start) is no longer left
    nb = tmp_root / "reports" / "smoke" / "01_data.ipynb"
    nb.write_text("{}", encoding="utf-8")
    monkeypatch.setenv("CALIBRANK_RUN_START", str(started))
    line = eta.progress("smoke", "01_data", 4.0)
    assert line.startswith("[1:4") and "01_data done (0:04, estimate" in line
    assert f"({len(est.pending) - 1} steps, 2 side by side)" in line
    # another run's estimate (or none) gives the plain line
    monkeypatch.setenv("CALIBRANK_RUN_START", str(started + 50))
    assert eta.progress("smoke", "01_data", 4.0) == "01_data done (0:04)"
    monkeypatch.delenv("CALIBRANK_RUN_START")
    assert eta.main(["progress", "smoke", "02_negatives", "--seconds", "61"]) == 0


def test_read_eta_refuses_other_json(tmp_path):
    bad = tmp_path / "eta.json"
    bad.write_text('{"profile": "smoke"}', encoding="utf-8")
    with pytest.raises(ValueError, match="not an estimate"):
        eta.read_eta(bad)


def test_report_shows_the_estimate_beside_the_wall_time(smoke, tmp_root):
    write_executed_notebooks(tmp_root)
    plain = report.build_index("smoke").read_text(encoding="utf-8")
    assert "<th>estimate</th>" not in plain
    est = eta.estimate(smoke, RATES, _sizes(smoke), jobs=2)
    eta.write_eta(est, RATES, started=time.time(), cores=2, measured_in=9.0)
    built = report.build_index("smoke").read_text(encoding="utf-8")
    assert "<th>estimate</th>" in built and "The estimate is the one <code>make report</code> printed" in built
    written = {s.name: s for s in eta.read_eta(eta.eta_path("smoke"))[0].steps}["03_train-bert-chitchat"]
    bert = {s.name: s for s in est.steps}["03_train-bert-chitchat"].seconds
    assert written.seconds == pytest.approx(bert, abs=0.15)  # eta.json keeps each part to 0.1 s
    assert f"<td>{report._seconds(written.seconds)}</td>" in built


def test_measure_rates_on_the_tiny_backbone(smoke):
    """The measurement itself, on the smoke profile's tiny random BERT and synthetic pairs (a few seconds)."""
    from calibrank.data.schema import Example

    examples = [Example(f"e{i}", ("how are you doing today " * (1 + i % 4),), "fine, thanks " * (1 + i % 3), f"d{i}")
                for i in range(160)]
    loaded = {"chitchat": SimpleNamespace(examples={"train": examples})}
    rates = eta.measure_rates(smoke, threads=1, solo_threads=1, budget_s=0.3, loaded=loaded, device="cpu")
    assert rates.train > 0 and rates.infer > rates.train and rates.dropout > 0 and rates.solo_infer == rates.infer
    assert rates.threads == 1 and rates.device == "cpu" and rates.bf16 is False and rates.mean_tokens > 5


def test_the_grid_knows_which_models_the_cache_holds(tmp_root):
    """:func:`calibrank.grid.trained_models` names the folder the real training fills, and only once finished."""
    from calibrank import experiment, grid
    from calibrank.data.io import write_queries
    from calibrank.querysets import QuerySetSpec, query_set_path
    from rankfix import learnable_queries

    cfg = load_config("smoke", {"rankers.names": ["bert", "focal"], "rankers.seeds": [0], "training.epochs": 1,
                                "rankers.train_corpora": ["chitchat"]})
    assert grid.trained_models(cfg) == set()  # no query sets yet: nothing to key a model by
    for split, n, k in (("train", 16, cfg.negatives.train_k), ("valid", 4, cfg.negatives.eval_k)):
        write_queries(query_set_path(cfg, QuerySetSpec("chitchat", split, cfg.negatives.train, k)),
                      learnable_queries(n, k, seed=len(split)))
    assert grid.trained_models(cfg) == set()
    bert, focal = (grid.model_for(cfg, r, "chitchat") for r in ("bert", "focal"))
    half = grid.model_dir(cfg, focal)
    half.mkdir(parents=True)
    (half / "model.safetensors").write_bytes(b"")
    assert grid.trained_models(cfg) == set()  # train.json is renamed into place last: not finished
    trained = experiment.train_ranker(cfg, "bert", "chitchat").trained
    assert trained.workdir == grid.model_dir(cfg, bert)
    assert grid.trained_models(cfg) == {bert.name}
    assert experiment.train_ranker(cfg, "focal", "chitchat").trained.workdir == half
    assert grid.trained_models(cfg) == {bert.name, focal.name}


@pytest.mark.parametrize("n_pairs, batch_size, epochs, eval_every", [
    (100, 16, 3, None), (100, 16, 3, 4), (100, 16, 5, 7), (96, 16, 4, 6), (10, 32, 2, 1), (1000, 16, 7, 100),
    (1000, 16, 7, 63), (0, 16, 3, 2), (640, 64, 12, 25),
])
def test_evaluations_are_epoch_ends_and_every_eval_every_steps_counted_once(n_pairs, batch_size, epochs, eval_every):
    """Oracle: the training loop's own rule, step by step (validate when the step is a multiple of eval_every
    or ends an epoch)."""
    t = SimpleNamespace(batch_size=batch_size, epochs=epochs, eval_every=eval_every)
    per_epoch = max(1, math.ceil(n_pairs / batch_size))
    expected = sum(1 for step in range(1, per_epoch * epochs + 1)
                   if (eval_every and step % eval_every == 0) or step % per_epoch == 0)
    assert eta._evaluations(n_pairs, t) == expected


def test_evaluations_build_nothing_sized_by_epochs():
    # 63 steps an epoch; every 7th step validates and each epoch end (a multiple of 7) is one of them
    t = SimpleNamespace(batch_size=16, epochs=10**30, eval_every=7)
    assert eta._evaluations(1000, t) == 9 * 10**30
    assert eta._evaluations(1000, SimpleNamespace(batch_size=16, epochs=10**30, eval_every=None)) == 10**30
