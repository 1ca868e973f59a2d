"""Tests of calibrank.study.pipeline.eta and .schedule: the work of each step counted by hand on the smoke profile, the rates the loop records
read back, eta.json and its errors, the progress lines."""

from __future__ import annotations

import dataclasses
import json
import os
import time

import pytest

from calibrank.predictions import Predictions
from calibrank.study.data.schema import RankingQuery
from calibrank.study.model.experiment import predict_split
from calibrank.study.model.rankers import make_ranker
from calibrank.study.pipeline import eta, grid, schedule
from calibrank.study.pipeline.grid import grid_models
from calibrank.study.settings.config import load_config
from rankfix import learnable_queries, tiny_run

SIZES = {c: {"train": 64, "valid": 24, "test": 24} for c in ("chitchat", "chatterbot")}


@pytest.fixture(scope="module")
def smoke():
    return load_config("smoke")


def test_the_smoke_profile_has_the_steps_of_its_workflow(smoke):
    names = [s.name for s in schedule.steps(smoke)]
    # 01 and 02; one training job per model (bert, focal and the three GP rankers x 2 corpora x 2 seeds, and one
    # further ensemble member per corpus and seed); 8 rankers x 2 training corpora x 2 seeds runs of 03; the four
    # analyses, 07 and the index after them
    assert len(names) == 2 + 24 + 32 + 4 + 1 + 1 == len(set(names))
    assert names[:3] == ["01_data", "02_negatives", "train-bert-chitchat-seed0"]
    assert names[-2:] == ["07_efficiency", "index"] and "03_train-pg_drr-chatterbot-seed1" in names
    assert "train-ensemble-chitchat-seed0-member1" in names
    trains = [m for s in schedule.steps(smoke) for m in s.trains]  # each model trained by exactly one step
    assert len(trains) == len(set(trains)) == 5 * 2 * 2 + 4
    assert set(trains) == {m.name for m in grid_models(smoke)}


def test_pairs_per_step_match_a_hand_count(smoke):
    pairs = schedule.work(smoke, SIZES)
    # training: 64 contexts x (1 true + train_k 1 negative) x 2 epochs; validated at each epoch's end (8 steps of 16
    # pairs per epoch, eval_every null): 2 x 24 contexts x 2 candidates
    train, validation = 64 * 2 * 2, 2 * 24 * 2
    # every test condition: 2 corpora x 4 samplers x 24 queries x (1 + eval_k 9) candidates; as much on validation
    test = 2 * 4 * 24 * 10
    assert pairs["train-bert-chitchat-seed0"] == {"train": train, "infer": validation}
    assert pairs["03_train-bert-chitchat"] == {"train": 0, "infer": test}
    assert pairs["03_train-mc_dropout-chitchat"] == {"train": 0, "infer": 3 * (test + test)}  # bert's model, T = 3
    assert pairs["03_train-temperature-chitchat"] == {"train": 0, "infer": 0}  # bert's test logits, already scored
    # member 0 is bert's model: its test pairs were scored by bert's run, its validation pairs were not; member 1
    # trains in its own job and is scored here on both splits
    assert pairs["03_train-ensemble-chitchat"] == {"train": 0, "infer": test + 2 * test}
    assert pairs["train-ensemble-chitchat-seed0-member1"] == {"train": train, "infer": validation}
    assert pairs["train-sngp-chitchat-seed0"] == {"train": train, "infer": validation}
    assert pairs["03_train-sngp-chitchat"] == {"train": 0, "infer": 2 * test}  # S > 1: valid too
    assert pairs["01_data"] == pairs["index"] == {"train": 0, "infer": 0}


def test_texts_the_negatives_step_encodes_match_a_hand_count(smoke):
    pools = {c: {"train": 500, "valid": 100, "test": 50} for c in SIZES}
    assert "encode" not in schedule.work(smoke, SIZES)["02_negatives"]  # counted only when the pools are known
    # the embedding sampler: each corpus's valid and test pools and their 24 contexts; the zero-shot baseline: the
    # 24 contexts of each corpus and split and its candidates, at most the pool (valid 100, test 50) or the true
    # response and 9 negatives of each of 4 samplers (24 x 37 = 888)
    sampler, baseline = 2 * (100 + 24 + 50 + 24), 2 * ((100 + 24) + (50 + 24))
    assert schedule.work(smoke, SIZES, pools=pools)["02_negatives"]["encode"] == sampler + baseline
    # no embedding sampler, a training sampler the evaluation does not use (the baseline also scores the validation
    # set the Platt map is fitted on), and pools larger than the candidates: 24 x (1 + 9 x 3) valid, 24 x 19 test
    other = load_config("smoke", {"negatives.eval": ["random", "bm25"]})
    large = {c: {"train": 5000, "valid": 1000, "test": 1000} for c in SIZES}
    assert schedule.work(other, SIZES, pools=large)["02_negatives"]["encode"] == 2 * (24 * 28 + 24 + 24 * 19 + 24)


def test_a_cached_model_costs_no_training_and_validations_follow_eval_every(smoke):
    cached = schedule.work(smoke, SIZES, trained={"bert-chitchat-seed0"})
    assert cached["train-bert-chitchat-seed0"] == {"train": 0, "infer": 0}
    assert cached["03_train-bert-chitchat"] == {"train": 0, "infer": 2 * 4 * 24 * 10}
    # every 3 steps over 2 epochs of 8 steps: steps 3, 6, 9, 12, 15 and the epoch ends 8, 16: 7 validations
    every3 = load_config("smoke", {"training.eval_every": 3})
    assert schedule.work(every3, SIZES)["train-bert-chitchat-seed0"]["infer"] == 7 * 24 * 2


def test_side_by_side_phases_take_their_longest_step_or_their_share_of_the_jobs():
    steps = (
        schedule.Step("01_data", "data", seconds=10),
        schedule.Step("02_negatives", "negatives", seconds=20),
        schedule.Step("a", "train", seconds=100),
        schedule.Step("b", "train", seconds=30),
        schedule.Step("c", "train", seconds=30),
        schedule.Step("done", "train", seconds=500, pending=False),
        schedule.Step("index", "index", seconds=5),
    )
    assert schedule.Estimate("p", 1, steps).seconds == 10 + 20 + 160 + 5
    assert schedule.Estimate("p", 2, steps).seconds == 10 + 20 + 100 + 5  # a alone outlasts (100 + 30 + 30) / 2
    assert schedule.Estimate("p", 4, steps[:2] + (schedule.Step("x", "train", seconds=90),) * 4).seconds == 30 + 90


def test_rates_the_loop_records_are_read_back(tmp_root):
    models = tmp_root / "runs" / "smoke" / "models" / "chitchat"
    ranker = make_ranker("bert", tiny_run(models, seed=3, epochs=1))
    ranker.fit(learnable_queries(32, 1, seed=0), learnable_queries(8, 3, seed=1))
    record = json.loads(next(models.glob("**/train.json")).read_text())
    assert record["threads"] >= 1 and 0 < record["validation_seconds"] < record["seconds"]
    assert record["train_pairs_per_second"] == pytest.approx(64 / (record["seconds"] - record["validation_seconds"]))
    assert schedule.recorded("smoke") == {"train": record["train_pairs_per_second"]}  # nothing scored yet
    queries = [
        RankingQuery(f"q{i}", ("hello", f"context {i}"), (f"yes {i}", f"no {i}", "no"), (1, 0, 0)) for i in range(8)
    ]
    sets = [queries, queries[:4]]  # the second set's 12 pairs are among the first's 24
    written = predict_split(ranker, sets)[1].save(tmp_root / "runs" / "smoke" / "predictions" / "bert" / "x.npz")
    info = Predictions.load(written).meta["shared_scoring"]
    assert (info["pairs"], info["distinct_pairs"], info["passes"]) == (36, 24, 1)
    assert info["seconds"] == pytest.approx(24 / info["pairs_per_second"], abs=6e-4)  # seconds kept to the ms
    assert schedule.recorded("smoke")["infer"] == pytest.approx(info["pairs_per_second"] * 36 / 24)


def test_eta_json_that_is_not_an_estimate_is_an_error_naming_it(tmp_path):
    path = tmp_path / "eta.json"
    path.write_text("{not json")
    with pytest.raises(ValueError, match=str(path)):
        schedule.read_eta(path)
    good = {
        "profile": "smoke",
        "created": "",
        "started": 0.0,
        "jobs": 1,
        "cores": 2,
        "seconds": 1.0,
        "rates": {},
        "steps": [{"name": "01_data", "phase": "data", "trains": [], "ranker": None, "seconds": 1.0, "pending": True}],
    }
    path.write_text(json.dumps(good))
    assert schedule.read_eta(path)[0].seconds == 1.0
    for bad, why in (
        ({**good, "stesp": []}, "expected the keys"),
        ({**good, "steps": [{"name": "x", "trains": []}]}, "phase"),
        ({**good, "steps": [{**good["steps"][0], "sconds": 1}]}, "sconds"),
    ):
        path.write_text(json.dumps(bad))
        with pytest.raises(ValueError, match=why) as err:
            schedule.read_eta(path)
        assert str(path) in str(err.value)


def test_a_step_is_pending_until_its_outputs_are_newer_than_its_inputs(tmp_root, smoke):
    assert all(s.pending for s in schedule.steps(smoke))
    data = next(s for s in grid.steps(smoke) if s.name == "01_data")
    future = time.time() + 3600
    for out in data.outputs:
        path = tmp_root / out
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{}")
        os.utime(path, (future, future))
    pending = {s.name: s.pending for s in schedule.steps(smoke)}
    assert not pending["01_data"] and pending["02_negatives"] and pending["index"]
    os.utime(tmp_root / data.outputs[-1], (0, 0))  # one output older than the profile it was made from
    assert next(s for s in schedule.steps(smoke) if s.name == "01_data").pending


def test_a_first_run_measures_the_loop_writes_eta_json_and_prints_progress(tmp_root, capsys, monkeypatch):
    started = time.time()
    line = eta.run("smoke", jobs=2, cores=2, started=started)
    assert line.startswith("estimate: ~") and "64 of 64 steps to run" in line and "rates measured" in line
    est, data = schedule.read_eta(schedule.eta_path("smoke"))
    assert data["rates"]["source"] == "measured" and data["rates"]["train"] > 0 and data["rates"]["infer"] > 0
    assert est.jobs == 2 and len(est.pending) == 64 and est.seconds == pytest.approx(data["seconds"], abs=0.1)
    assert data["rates"]["encode"] > 0 and data["rates"]["startup"] > 0 and data["rates"]["startup_from"] == "papermill"
    seconds = {s.name: s.seconds for s in est.steps}
    assert (
        seconds["02_negatives"] > seconds["04_calibration"] == data["rates"]["startup"]
    )  # an analysis: its start alone
    monkeypatch.setenv("CALIBRANK_RUN_START", str(started))
    (tmp_root / "reports" / "smoke" / "01_data.ipynb").write_text("{}")  # finished in this run
    assert schedule.main(["smoke", "02_negatives", "--seconds", "65"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("[") and "02_negatives done (1:05, estimate " in out and "left (62 steps, at " in out
    assert schedule.progress("smoke", "02_negatives", 65, started - 100) == "02_negatives done (1:05)"  # another run's
    monkeypatch.delenv("CALIBRANK_RUN_START")  # a step made on its own, outside make report
    assert schedule.main(["smoke", "02_negatives", "--seconds", "5"]) == 0
    assert capsys.readouterr().out == "02_negatives done (0:05)\n"
    schedule.eta_path("smoke").write_text("[]")
    monkeypatch.setenv("CALIBRANK_RUN_START", str(started))
    assert schedule.main(["smoke", "02_negatives"]) == 0  # a broken estimate never fails the step
    assert "02_negatives done (progress unavailable:" in capsys.readouterr().out
    assert eta.main(["no-such-profile"]) == 1 and "estimate: unavailable" in capsys.readouterr().err
    assert os.path.exists(schedule.eta_path("smoke"))
    # a later run takes each notebook's time from the last run's papermill record
    nb = tmp_root / "reports" / "smoke" / "04_calibration.ipynb"
    nb.write_text(json.dumps({"metadata": {"papermill": {"duration": 42.0}}}))
    eta.run("smoke", jobs=2, cores=2, started=started)
    again = {s.name: s.seconds for s in schedule.read_eta(schedule.eta_path("smoke"))[0].steps}
    assert again["04_calibration"] == 42.0 and again["05_risk_aware"] == 42.0  # the start: the fastest notebook
    assert schedule.read_eta(schedule.eta_path("smoke"))[1]["rates"]["startup_from"] == "last run"


def test_the_time_left_follows_the_pace_of_the_steps_done(tmp_root, capsys, monkeypatch):
    """The estimate said 1:35 for five steps, two side by side; the run goes five times slower (a machine busier than
    when it was measured): the time left is the rest of the estimate at that pace, not the estimate alone. Until
    `jobs` steps are done, the pace is the done steps' wall time over their estimate; then the wall time since the
    estimate was written over the estimate's wall time of what is done, waiting and HTML pages included."""
    started = 1_700_000_000.0
    created = started + 21  # the estimate took 21 s; snakemake starts then
    steps = [
        schedule.Step("01_data", "data", "reports/smoke/01_data.ipynb", seconds=10),
        schedule.Step("02_negatives", "negatives", "reports/smoke/02_negatives.ipynb", seconds=20),
        schedule.Step("train-a", "train", "runs/smoke/grid/a.json", trains=("a",), seconds=60),
        schedule.Step("train-b", "train", "runs/smoke/grid/b.json", trains=("b",), seconds=60),
        schedule.Step("index", "index", "reports/smoke/index.json", seconds=5),
    ]
    est = schedule.Estimate("smoke", 2, tuple(steps))
    assert est.seconds == 10 + 20 + 60 + 5  # the two trainings side by side
    path = schedule.eta_path("smoke")
    path.parent.mkdir(parents=True)
    path.write_text(
        json.dumps(
            {
                "profile": "smoke",
                "created": time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(created)),
                "started": started,
                "jobs": 2,
                "cores": 2,
                "seconds": est.seconds,
                "rates": {},
                "steps": [dataclasses.asdict(s) for s in steps],
            }
        )
    )
    monkeypatch.setenv("CALIBRANK_RUN_START", str(started))
    for step, seconds, now in (("01_data", 50, created + 50), ("02_negatives", 100, created + 150)):
        (tmp_root / "reports" / "smoke" / f"{step}.ipynb").write_text("{}")  # made in this run
        monkeypatch.setattr(schedule.time, "time", lambda now=now: now)
        assert schedule.main(["smoke", step, "--seconds", str(seconds)]) == 0
    lines = capsys.readouterr().out.splitlines()
    # one step done: its 50 s over its estimate of 10; (20 + 60 + 5) s of estimate left at 5x
    assert lines[0] == "[1:11 elapsed] 01_data done (0:50, estimate 0:10); ~7 min left (4 steps, at 5.0x the estimate)"
    # two done: 150 s since the estimate was written over its 30 s for them; (60 + 5) s left at 5x: 325 s, where the
    # estimate alone said a minute
    assert (
        lines[1]
        == "[2:51 elapsed] 02_negatives done (1:40, estimate 0:20); ~5 min left (3 steps, at 5.0x the estimate)"
    )
    # each finished step is recorded with the run it belongs to; another run's times do not count
    assert schedule.run_times("smoke", started) == {"01_data": 50.0, "02_negatives": 100.0}
    assert schedule.run_times("smoke", started + 100) == {}
    assert schedule.pace({"a": 10.0, "b": 0.0}, {"a": 20.0, "b": 7.0}) == 2.0 and schedule.pace({"a": 1.0}, {}) is None


def test_the_progress_line_and_the_report_page_load_no_torch():
    import subprocess
    import sys

    code = "import sys, calibrank.study.pipeline.schedule, calibrank.study.pipeline.report; sys.exit('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0
